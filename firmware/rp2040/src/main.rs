//! covo MCU firmware for the RP2040 (Raspberry Pi Pico): the covo wire protocol over USB
//! CDC-ACM, on the board's real GPIO, ADC, PWM and I2C0 (see `board.rs`).
//!
//! The USB device enumerates as VID 0x2e8a / PID 0x000a, the Raspberry Pi Pico's own CDC pair
//! (the one the Pico SDK's stdio uses), so the gateway finds it like any Pico serial port. Its
//! serial number is the QSPI flash's 64-bit unique id in hex (what `picotool info` calls the
//! board id), so two Picos on one gateway differ in `usb.serial`.
#![no_std]
#![no_main]

mod board;

use panic_halt as _;
use rp2040_hal::{self as hal, clocks::init_clocks_and_plls, pac, usb::UsbBus, Clock, Watchdog};
use usb_device::{
    class_prelude::UsbBusAllocator,
    device::{StringDescriptors, UsbDevice, UsbDeviceBuilder, UsbVidPid},
    UsbError,
};
use usbd_serial::SerialPort;

use covo_mcu_core::{Device, Link};

/// The second-stage bootloader for the Pico's W25Q080 flash; the boot ROM runs it from the
/// first 256 bytes of flash.
#[link_section = ".boot2"]
#[used]
pub static BOOT2_FIRMWARE: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

/// This image's stamp: the gateway reads it from the UF2 before `mcu_flash` writes it, and the
/// device reports the name in it.
#[used]
pub static STAMP: [u8; covo_mcu_protocol::STAMP_LEN] =
    covo_mcu_protocol::stamp(concat!("covo ", env!("CARGO_PKG_VERSION")));

/// USB polls given to the answer of a bootloader request before the reboot, so the host reads
/// it (about 50 ms at the loop's pace).
const FLUSH_POLLS: u32 = 50_000;

/// The Pico's crystal.
const XOSC_HZ: u32 = 12_000_000;
/// Raspberry Pi's vendor id and the Pico's CDC product id.
const USB_VID_PID: UsbVidPid = UsbVidPid(0x2e8a, 0x000a);
/// How many USB polls a reply may wait for the host to drain the IN endpoint before it is
/// dropped, so a host that stopped reading cannot wedge the firmware.
const TX_PATIENCE: u32 = 200_000;

/// The flash's unique id as 16 hex digits, for the USB serial number.
///
/// The id is read with the flash's 0x4B command, which takes the flash out of XIP mode: the
/// read runs from RAM (`rp2040_flash`) with interrupts off, before anything else (core 1, DMA)
/// could touch flash, and restores XIP through a RAM copy of boot2.
fn serial_number() -> &'static str {
    let mut id = [0u8; 8];
    // SAFETY: core 1 is not started, no DMA is set up yet and interrupts are off for the call,
    // so nothing executes from or reads flash while XIP is down.
    cortex_m::interrupt::free(|_| unsafe {
        rp2040_flash::flash::flash_unique_id(&mut id, true);
    });
    let digits: &'static mut [u8; 16] =
        cortex_m::singleton!(: [u8; 16] = [0; 16]).unwrap_or_else(|| unreachable!());
    *digits = covo_mcu_core::serial_number(&id);
    // Hex digits are ASCII.
    core::str::from_utf8(digits).unwrap_or("0000000000000000")
}

/// The USB CDC-ACM port as the [`Link`] `Device::step` drives.
struct UsbLink<'a> {
    usb: UsbDevice<'a, UsbBus>,
    serial: SerialPort<'a, UsbBus>,
}

impl Link for UsbLink<'_> {
    fn poll(&mut self) -> bool {
        self.usb.poll(&mut [&mut self.serial])
    }

    fn read(&mut self, buf: &mut [u8]) -> usize {
        self.serial.read(buf).unwrap_or(0)
    }

    fn write(&mut self, mut bytes: &[u8]) {
        let mut patience = TX_PATIENCE;
        while !bytes.is_empty() && patience > 0 {
            match self.serial.write(bytes) {
                Ok(written) => bytes = &bytes[written..],
                Err(UsbError::WouldBlock) => {
                    self.usb.poll(&mut [&mut self.serial]);
                    patience -= 1;
                }
                Err(_) => return,
            }
        }
    }
}

#[hal::entry]
fn main() -> ! {
    let serial_number = serial_number();
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
    let serial = SerialPort::new(&usb_bus);
    let usb = UsbDeviceBuilder::new(&usb_bus, USB_VID_PID)
        .strings(&[StringDescriptors::default()
            .manufacturer("covo")
            .product("covo MCU (RP2040)")
            .serial_number(serial_number)])
        .unwrap()
        .device_class(usbd_serial::USB_CLASS_CDC)
        .build();
    let mut link = UsbLink { usb, serial };

    loop {
        // Events are polled on every pass, whether or not the host sent anything.
        device.step(&mut link);
        if device.take_bootloader_request() {
            // The `Done` has been queued: let the host read it, then reboot into the boot ROM's
            // USB mass-storage bootloader (the RPI-RP2 drive), where `mcu_flash` writes a UF2.
            for _ in 0..FLUSH_POLLS {
                link.poll();
            }
            hal::rom_data::reset_to_usb_boot(0, 0);
        }
    }
}
