//! A simulated SPI device: a loopback (MISO wired to MOSI, as a jumper on a real header), with
//! a bounded log of what each transaction clocked out. Declared in a board file as
//! `[[spi]] path = "sim:loopback"`; a declared SPI device without that path is not modelled.

use crate::bus::BusError;
use embedded_hal::spi::{ErrorType, Operation, SpiDevice};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The path a board file gives an SPI device to get the sim's loopback.
pub const LOOPBACK_PATH: &str = "sim:loopback";

/// One SPI transaction on a simulated device: where, and the bytes clocked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpiTransfer {
    /// The bus.
    pub bus: u8,
    /// The chip-select.
    pub cs: u8,
    /// The bytes the master clocked out, in order, across the transaction's operations.
    pub written: Vec<u8>,
}

/// The shared log of every simulated SPI device (at most [`super::TRANSFER_LOG_LEN`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct SpiLog(Arc<Mutex<VecDeque<SpiTransfer>>>);

impl SpiLog {
    fn push(&self, t: SpiTransfer) {
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() == super::TRANSFER_LOG_LEN {
            log.pop_front();
        }
        log.push_back(t);
    }

    pub(crate) fn all(&self) -> Vec<SpiTransfer> {
        let log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        log.iter().cloned().collect()
    }

    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// One simulated SPI device at `bus`.`cs`: what it is sent comes back.
#[derive(Debug, Clone)]
pub struct SimSpi {
    bus: u8,
    cs: u8,
    log: SpiLog,
}

impl SimSpi {
    pub(crate) fn new(bus: u8, cs: u8, log: SpiLog) -> SimSpi {
        SimSpi { bus, cs, log }
    }
}

impl ErrorType for SimSpi {
    type Error = BusError;
}

impl SpiDevice for SimSpi {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), BusError> {
        let mut written = Vec::new();
        for op in operations.iter_mut() {
            match op {
                Operation::Write(w) => written.extend_from_slice(w),
                Operation::Read(r) => {
                    // Nothing is sent while reading: the master clocks out zeros.
                    written.extend(std::iter::repeat_n(0, r.len()));
                    r.fill(0);
                }
                Operation::Transfer(r, w) => {
                    written.extend_from_slice(w);
                    let n = r.len().min(w.len());
                    r[..n].copy_from_slice(&w[..n]);
                    r[n..].fill(0);
                }
                Operation::TransferInPlace(buf) => written.extend_from_slice(buf),
                Operation::DelayNs(_) => {}
            }
        }
        self.log.push(SpiTransfer {
            bus: self.bus,
            cs: self.cs,
            written,
        });
        Ok(())
    }
}
