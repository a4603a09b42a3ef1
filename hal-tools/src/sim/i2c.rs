//! The simulated I2C bus: routes each transaction by address to a register-level model, and
//! applies scripted faults first.

use super::bh1750::Bh1750Model;
use super::bme280::{Bme280Model, Calibration};
use super::env::{EnvSource, Environment};
use super::ssd1306::Ssd1306Model;
use crate::bus::BusError;
use embedded_hal::i2c::{ErrorType, I2c, Operation};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// What a model sees of the world during one transaction.
pub(crate) struct Ctx {
    /// When the transaction began.
    pub now: Instant,
    /// The room at that moment.
    pub env: Environment,
}

/// A device on the bus, driven byte by byte as the wire would drive it.
pub(crate) trait I2cModel: Send {
    /// A start or repeated start addressed this device, for reading or for writing.
    fn start(&mut self, read: bool, ctx: &Ctx);
    /// One byte from the master.
    fn write(&mut self, byte: u8, ctx: &Ctx);
    /// One byte to the master.
    fn read(&mut self, ctx: &Ctx) -> u8;
}

/// A scripted fault. `times` counts transactions affected; after that, calls work again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The device at `address` does not acknowledge.
    Nack {
        /// The 7-bit address.
        address: u8,
        /// Transactions to that address affected.
        times: u32,
    },
    /// Every transaction on the bus times out.
    Timeout {
        /// Transactions affected.
        times: u32,
    },
    /// SDA is held low until `clear_faults`.
    StuckLine,
    /// Reads from `address` return 0xFF garbage (the transaction itself happens).
    CorruptReading {
        /// The 7-bit address.
        address: u8,
        /// Transactions to that address affected.
        times: u32,
    },
}

/// One transaction as it reached the simulated bus: the address the master put on it, every
/// byte it wrote and how many it read. Faulted transactions are recorded too (the master
/// started them); a device that is absent NACKs, but the bytes were still offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    /// The 7-bit address.
    pub address: u8,
    /// The bytes the master wrote, in order, across the transaction's write segments.
    pub written: Vec<u8>,
    /// How many bytes the master read.
    pub read: usize,
}

/// How many transactions the transfer log keeps; older ones are dropped first.
pub const TRANSFER_LOG_LEN: usize = 1024;

/// The standard devices: addresses as the sim board declares them.
pub(crate) struct Devices {
    pub bme280: Bme280Model,
    pub bh1750: Bh1750Model,
    pub ssd1306: Ssd1306Model,
}

impl Devices {
    /// BME280 with SDO low.
    pub const BME280: u8 = 0x76;
    /// BH1750 with ADDR low.
    pub const BH1750: u8 = 0x23;
    /// SSD1306 with SA0 low.
    pub const SSD1306: u8 = 0x3C;

    fn at(&mut self, address: u8) -> Option<&mut dyn I2cModel> {
        match address {
            Self::BME280 => Some(&mut self.bme280),
            Self::BH1750 => Some(&mut self.bh1750),
            Self::SSD1306 => Some(&mut self.ssd1306),
            _ => None,
        }
    }
}

pub(crate) struct BusState {
    pub devices: Devices,
    pub env: EnvSource,
    faults: Vec<Fault>,
    transactions: u64,
    log: VecDeque<Transfer>,
}

impl BusState {
    pub(crate) fn new() -> BusState {
        BusState {
            devices: Devices {
                bme280: Bme280Model::new(Calibration::DATASHEET),
                bh1750: Bh1750Model::new(),
                ssd1306: Ssd1306Model::new(),
            },
            env: EnvSource::new(),
            faults: Vec::new(),
            transactions: 0,
            log: VecDeque::new(),
        }
    }

    pub(crate) fn inject(&mut self, fault: Fault) {
        self.faults.push(fault);
    }

    pub(crate) fn clear_faults(&mut self) {
        self.faults.clear();
    }

    /// The fault this transaction meets, if any; counts it down. A corrupt reading is returned
    /// as `Ok(true)`: the transaction runs, then its reads are overwritten.
    fn take_fault(&mut self, address: u8) -> Result<bool, BusError> {
        let mut outcome = Ok(false);
        for fault in &mut self.faults {
            match fault {
                Fault::StuckLine => {
                    return Err(BusError::Stuck("SDA is held low (injected)".into()));
                }
                Fault::Timeout { times } if *times > 0 => {
                    *times -= 1;
                    outcome = Err(BusError::Timeout);
                    break;
                }
                Fault::Nack { address: a, times } if *a == address && *times > 0 => {
                    *times -= 1;
                    outcome = Err(BusError::Nack(address));
                    break;
                }
                Fault::CorruptReading { address: a, times } if *a == address && *times > 0 => {
                    *times -= 1;
                    outcome = Ok(true);
                    break;
                }
                _ => {}
            }
        }
        self.faults.retain(|f| match f {
            Fault::StuckLine => true,
            Fault::Timeout { times }
            | Fault::Nack { times, .. }
            | Fault::CorruptReading { times, .. } => *times > 0,
        });
        outcome
    }

    fn record(&mut self, address: u8, operations: &[Operation<'_>]) {
        let mut t = Transfer {
            address,
            written: Vec::new(),
            read: 0,
        };
        for op in operations {
            match op {
                Operation::Write(bytes) => t.written.extend_from_slice(bytes),
                Operation::Read(buf) => t.read += buf.len(),
            }
        }
        if self.log.len() == TRANSFER_LOG_LEN {
            self.log.pop_front();
        }
        self.log.push_back(t);
    }

    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), BusError> {
        self.transactions += 1;
        self.record(address, operations);
        let corrupt = self.take_fault(address)?;
        let now = Instant::now();
        let ctx = Ctx {
            now,
            env: self.env.at(now),
        };
        let device = self.devices.at(address).ok_or(BusError::Nack(address))?;
        // Adjacent operations of one kind are one segment on the wire (embedded-hal 1.0):
        // only a change of direction is a repeated start.
        let mut previous: Option<bool> = None;
        for op in operations.iter_mut() {
            let read = matches!(op, Operation::Read(_));
            if previous != Some(read) {
                device.start(read, &ctx);
                previous = Some(read);
            }
            match op {
                Operation::Write(bytes) => bytes.iter().for_each(|b| device.write(*b, &ctx)),
                Operation::Read(buf) => {
                    for b in buf.iter_mut() {
                        *b = device.read(&ctx);
                    }
                    if corrupt {
                        buf.fill(0xFF);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A handle on simulated I2C bus 1; clones share the bus.
#[derive(Clone)]
pub struct SimI2c {
    pub(crate) state: Arc<Mutex<BusState>>,
}

impl SimI2c {
    pub(crate) fn lock(&self) -> MutexGuard<'_, BusState> {
        // A test that panicked mid-transaction leaves plain data behind; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many transactions the bus has seen (faulted ones included).
    pub fn transaction_count(&self) -> u64 {
        self.lock().transactions
    }

    /// The last transactions (at most [`TRANSFER_LOG_LEN`]), oldest first: what reached the bus.
    pub fn transfers(&self) -> Vec<Transfer> {
        self.lock().log.iter().cloned().collect()
    }

    /// Empties the transfer log (the transaction count keeps counting).
    pub fn clear_transfers(&self) {
        self.lock().log.clear();
    }
}

impl std::fmt::Debug for SimI2c {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimI2c").finish_non_exhaustive()
    }
}

impl ErrorType for SimI2c {
    type Error = BusError;
}

impl I2c for SimI2c {
    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), BusError> {
        self.lock().transaction(address, operations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bus() -> SimI2c {
        SimI2c {
            state: Arc::new(Mutex::new(BusState::new())),
        }
    }

    #[test]
    fn every_transaction_is_logged_with_what_was_written_and_read() {
        let mut b = bus();
        let mut buf = [0u8; 2];
        b.write_read(0x76, &[0xd0], &mut buf[..1]).unwrap();
        assert_eq!(buf[0], 0x60, "BME280 chip id");
        // An absent device NACKs, but the master still put the bytes on the bus.
        assert!(b.write(0x50, &[0x00, 0xff]).is_err());
        b.read(0x23, &mut buf).unwrap();
        assert_eq!(
            b.transfers(),
            [
                Transfer {
                    address: 0x76,
                    written: vec![0xd0],
                    read: 1
                },
                Transfer {
                    address: 0x50,
                    written: vec![0x00, 0xff],
                    read: 0
                },
                Transfer {
                    address: 0x23,
                    written: vec![],
                    read: 2
                },
            ]
        );
        b.clear_transfers();
        assert!(b.transfers().is_empty());
        assert_eq!(b.transaction_count(), 3);
    }

    #[test]
    fn the_log_keeps_only_the_latest_transactions() {
        let mut b = bus();
        for i in 0..TRANSFER_LOG_LEN + 5 {
            let _ = b.write(0x50, &[(i % 256) as u8]);
        }
        let log = b.transfers();
        assert_eq!(log.len(), TRANSFER_LOG_LEN);
        assert_eq!(log[0].written, [5]);
        assert_eq!(b.transaction_count(), (TRANSFER_LOG_LEN + 5) as u64);
    }
}
