//! covo MCU firmware for QEMU's `lm3s6965evb`: the covo wire protocol on UART0, over a simulated
//! board (see `sim.rs`).
//!
//! The core sleeps in `wfi` between bytes: a received byte raises UART0's interrupt, and SysTick
//! ticks every millisecond for the uptime, so QEMU does not spin a host core while idle.
#![no_std]
#![no_main]

mod sim;
mod uart;

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::{syst::SystClkSource, NVIC};
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::hprintln;
use covo_mcu_core::Device;
use panic_semihosting as _;

use crate::uart::Uart;

/// QEMU runs the lm3s6965 from its reset clock: RCC's SYSDIV field gives 80 ns, so 12.5 MHz.
const SYSCLK_HZ: u32 = 12_500_000;

/// This image's stamp: the gateway reads it from the ELF before `mcu_flash` loads it, and the
/// device reports the name in it. (This board has no bootloader: it is flashed by restarting
/// QEMU on the new image, a `command` flash method.)
#[used]
pub static STAMP: [u8; covo_mcu_protocol::STAMP_LEN] =
    covo_mcu_protocol::stamp(concat!("covo ", env!("CARGO_PKG_VERSION")));

/// Milliseconds since boot, counted by SysTick.
static UPTIME_MS: AtomicU32 = AtomicU32::new(0);

/// Milliseconds since boot.
pub fn uptime_ms() -> u32 {
    UPTIME_MS.load(Ordering::Relaxed)
}

#[entry]
fn main() -> ! {
    let mut cp = cortex_m::Peripherals::take().unwrap();
    cp.SYST.set_clock_source(SystClkSource::Core);
    cp.SYST.set_reload(SYSCLK_HZ / 1000 - 1);
    cp.SYST.clear_current();
    cp.SYST.enable_interrupt();
    cp.SYST.enable_counter();

    // SAFETY: the only place UART0 is taken.
    let mut uart = unsafe { Uart::take() };
    // SAFETY: the UART0 interrupt only masks itself (`DefaultHandler`); no shared state.
    unsafe { NVIC::unmask(Irq(uart::IRQ as u16)) };

    let mut device = Device::new(sim::SimBoard::new());
    // The banner goes to QEMU's own console, never to the UART, so the wire stays pure frames.
    hprintln!(
        "covo-fw-qemu {}: UART0 speaks the covo protocol",
        env!("CARGO_PKG_VERSION")
    );

    loop {
        // The same loop body as the RP2040's: events are polled on every pass.
        if device.step(&mut uart) == 0 {
            // Interrupts masked, so a byte landing between the check and `wfi` still wakes it.
            // SysTick wakes it every millisecond for event polling.
            cortex_m::interrupt::free(|_| {
                uart.listen();
                if !uart.rx_ready() {
                    cortex_m::asm::wfi();
                }
            });
        }
    }
}

#[exception]
fn SysTick() {
    UPTIME_MS.fetch_add(1, Ordering::Relaxed);
}

#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    if irqn == uart::IRQ {
        Uart::mute_from_isr();
    }
}

/// An interrupt number for `NVIC::unmask` without a device crate.
#[derive(Clone, Copy)]
struct Irq(u16);

// SAFETY: `Irq` only ever holds UART0's interrupt number, which exists on the lm3s6965.
unsafe impl cortex_m::interrupt::InterruptNumber for Irq {
    fn number(self) -> u16 {
        self.0
    }
}
