//! UART0 of the lm3s6965 (a PL011), driven by polling its registers.
//!
//! No PAC: the four registers used here are named below, and QEMU models the PL011 faithfully.

use core::ptr::{read_volatile, write_volatile};

const RCGC1: *mut u32 = 0x400F_E104 as *mut u32;
const RCGC1_UART0: u32 = 1 << 0;

const BASE: usize = 0x4000_C000;
const DR: *mut u32 = BASE as *mut u32;
const FR: *const u32 = (BASE + 0x18) as *const u32;
const IBRD: *mut u32 = (BASE + 0x24) as *mut u32;
const FBRD: *mut u32 = (BASE + 0x28) as *mut u32;
const LCRH: *mut u32 = (BASE + 0x2C) as *mut u32;
const CR: *mut u32 = (BASE + 0x30) as *mut u32;
const IM: *mut u32 = (BASE + 0x38) as *mut u32;
const ICR: *mut u32 = (BASE + 0x44) as *mut u32;

const FR_RXFE: u32 = 1 << 4;
const FR_TXFF: u32 = 1 << 5;
/// 8 data bits, FIFOs on.
const LCRH_8N1_FIFO: u32 = 0b0111_0000;
/// UARTEN | TXE | RXE.
const CR_ENABLE: u32 = 0x301;
/// Receive and receive-timeout interrupts.
const IM_RX: u32 = (1 << 4) | (1 << 6);

/// NVIC interrupt number of UART0 on the lm3s6965.
pub const IRQ: i16 = 5;

/// The one UART0; only `Uart::take` makes it.
pub struct Uart(());

impl Uart {
    /// Clocks and enables UART0 at 115200 8N1 (for a 12.5 MHz system clock).
    ///
    /// # Safety
    /// Call once: it owns UART0's registers from then on.
    pub unsafe fn take() -> Self {
        write_volatile(RCGC1, read_volatile(RCGC1) | RCGC1_UART0);
        write_volatile(CR, 0);
        // 12.5 MHz / (16 * 115200) = 6.78: IBRD 6, FBRD round(0.78 * 64) = 50.
        write_volatile(IBRD, 6);
        write_volatile(FBRD, 50);
        write_volatile(LCRH, LCRH_8N1_FIFO);
        write_volatile(CR, CR_ENABLE);
        Uart(())
    }

    /// One received byte, if any is waiting.
    pub fn read(&mut self) -> Option<u8> {
        // SAFETY: FR and DR are UART0 registers, which `self` owns.
        unsafe {
            if read_volatile(FR) & FR_RXFE != 0 {
                None
            } else {
                Some(read_volatile(DR) as u8)
            }
        }
    }

    /// Whether a byte is waiting.
    pub fn rx_ready(&self) -> bool {
        // SAFETY: a read of UART0's flag register, which `self` owns.
        unsafe { read_volatile(FR) & FR_RXFE == 0 }
    }

    /// Blocks until every byte is in the transmit FIFO.
    pub fn write_all(&mut self, bytes: &[u8]) {
        for &b in bytes {
            // SAFETY: FR and DR are UART0 registers, which `self` owns.
            unsafe {
                while read_volatile(FR) & FR_TXFF != 0 {}
                write_volatile(DR, b as u32);
            }
        }
    }

    /// Lets received data raise the UART0 interrupt, which only wakes the core from `wfi`.
    pub fn listen(&mut self) {
        // SAFETY: IM belongs to UART0, which `self` owns.
        unsafe { write_volatile(IM, IM_RX) }
    }

    /// Masks and clears the receive interrupts; called from the interrupt itself, so it cannot
    /// go through `&mut self`. The RX level interrupt would otherwise fire until the FIFO drains.
    pub fn mute_from_isr() {
        // SAFETY: single-word writes that the main loop only ever rewrites whole (`listen`).
        unsafe {
            write_volatile(IM, 0);
            write_volatile(ICR, IM_RX);
        }
    }
}

impl covo_mcu_core::Link for Uart {
    fn poll(&mut self) -> bool {
        self.rx_ready()
    }

    fn read(&mut self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            match Uart::read(self) {
                Some(b) => {
                    buf[n] = b;
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    fn write(&mut self, frame: &[u8]) {
        self.write_all(frame);
    }
}
