//! covo MCU firmware for the RP2040 (Raspberry Pi Pico): the covo wire protocol over USB
//! CDC-ACM, on the board's real GPIO, ADC, PWM and I2C0 (see `board.rs`).
//!
//! The USB device enumerates as VID 0x2e8a / PID 0x000a, the Raspberry Pi Pico's own CDC pair
//! (the one the Pico SDK's stdio uses), so the gateway finds it like any Pico serial port.
#![no_std]
#![no_main]

mod board;

use panic_halt as _;
use rp2040_hal::{self as hal, clocks::init_clocks_and_plls, pac, usb::UsbBus, Clock, Watchdog};
use usb_device::{
    class_prelude::UsbBusAllocator,
    device::{StringDescriptors, UsbDeviceBuilder, UsbVidPid},
    UsbError,
};
use usbd_serial::SerialPort;

use covo_mcu_core::Device;

/// The second-stage bootloader for the Pico's W25Q080 flash; the boot ROM runs it from the
/// first 256 bytes of flash.
#[link_section = ".boot2"]
#[used]
pub static BOOT2_FIRMWARE: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

/// The Pico's crystal.
const XOSC_HZ: u32 = 12_000_000;
/// Raspberry Pi's vendor id and the Pico's CDC product id.
const USB_VID_PID: UsbVidPid = UsbVidPid(0x2e8a, 0x000a);
/// How many USB polls a reply may wait for the host to drain the IN endpoint before it is
/// dropped, so a host that stopped reading cannot wedge the firmware.
const TX_PATIENCE: u32 = 200_000;

#[hal::entry]
fn main() -> ! {
    let mut pac = pac::Peripherals::take().unwrap();
    let mut watchdog = Watchdog::new(pac.WATCHDOG);
    let clocks = init_clocks_and_plls(
        XOSC_HZ,
        pac.XOSC,
        pac.CLOCKS,
        pac.PLL_SYS,
        pac.PLL_USB,
        &mut pac.RESETS,
        &mut watchdog,
    )
    .ok()
    .unwrap();

    let sio = hal::Sio::new(pac.SIO);
    let pins = hal::gpio::Pins::new(
        pac.IO_BANK0,
        pac.PADS_BANK0,
        sio.gpio_bank0,
        &mut pac.RESETS,
    );
    let timer = hal::Timer::new(pac.TIMER, &mut pac.RESETS, &clocks);
    let board = board::Pico::new(
        pins,
        pac.ADC,
        pac.PWM,
        pac.I2C0,
        timer,
        &mut pac.RESETS,
        clocks.system_clock.freq().to_Hz(),
    );
    let mut device = Device::new(board);

    let usb_bus = UsbBusAllocator::new(UsbBus::new(
        pac.USBCTRL_REGS,
        pac.USBCTRL_DPRAM,
        clocks.usb_clock,
        true,
        &mut pac.RESETS,
    ));
    let mut serial = SerialPort::new(&usb_bus);
    let mut usb = UsbDeviceBuilder::new(&usb_bus, USB_VID_PID)
        .strings(&[StringDescriptors::default()
            .manufacturer("covo")
            .product("covo MCU (RP2040)")
            .serial_number(env!("CARGO_PKG_VERSION"))])
        .unwrap()
        .device_class(usbd_serial::USB_CLASS_CDC)
        .build();

    let mut rx = [0u8; 64];
    loop {
        if !usb.poll(&mut [&mut serial]) {
            continue;
        }
        let n = match serial.read(&mut rx) {
            Ok(n) => n,
            Err(_) => 0,
        };
        let mut tx = |mut bytes: &[u8]| {
            let mut patience = TX_PATIENCE;
            while !bytes.is_empty() && patience > 0 {
                match serial.write(bytes) {
                    Ok(written) => bytes = &bytes[written..],
                    Err(UsbError::WouldBlock) => {
                        usb.poll(&mut [&mut serial]);
                        patience -= 1;
                    }
                    Err(_) => return,
                }
            }
        };
        if n > 0 {
            device.on_bytes(&rx[..n], &mut tx);
        }
        device.poll(&mut tx);
    }
}
