//! The object-safe bus and line traits every backend (Linux, sim) provides, and one error type.
//!
//! I2C and SPI are embedded-hal 1.0's own traits with [`BusError`] as their error, so crates.io
//! drivers run unchanged on any backend. GPIO edges and PWM frequency have no embedded-hal trait,
//! so [`Line`] and [`Pwm`] add the little that is missing.

use embedded_hal::i2c::{self, ErrorKind, NoAcknowledgeSource, Operation};
use std::time::Duration;

/// What went wrong on a bus or line, in words a model can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BusError {
    /// No device acknowledged the address (nothing there, wrong address, or unpowered).
    #[error("no device acknowledged address 0x{0:02x}")]
    Nack(u8),
    /// The operation did not finish in time.
    #[error("the bus timed out")]
    Timeout,
    /// A line is held low (SDA or SCL stuck).
    #[error("a bus line is stuck: {0}")]
    Stuck(String),
    /// Another master won arbitration.
    #[error("bus arbitration was lost")]
    ArbitrationLoss,
    /// The backend cannot do this.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Anything else the backend reported.
    #[error("{0}")]
    Other(String),
}

impl BusError {
    /// Maps an embedded-hal error kind for `address` to a `BusError`.
    pub fn from_kind(kind: ErrorKind, address: u8) -> BusError {
        match kind {
            ErrorKind::NoAcknowledge(_) => BusError::Nack(address),
            ErrorKind::ArbitrationLoss => BusError::ArbitrationLoss,
            ErrorKind::Bus => BusError::Stuck("bus error".into()),
            ErrorKind::Overrun => BusError::Other("data overrun".into()),
            _ => BusError::Other(format!("{kind:?}")),
        }
    }
}

impl i2c::Error for BusError {
    fn kind(&self) -> ErrorKind {
        match self {
            BusError::Nack(_) => ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address),
            BusError::ArbitrationLoss => ErrorKind::ArbitrationLoss,
            BusError::Stuck(_) => ErrorKind::Bus,
            _ => ErrorKind::Other,
        }
    }
}

impl embedded_hal::digital::Error for BusError {
    fn kind(&self) -> embedded_hal::digital::ErrorKind {
        embedded_hal::digital::ErrorKind::Other
    }
}

impl embedded_hal::spi::Error for BusError {
    fn kind(&self) -> embedded_hal::spi::ErrorKind {
        embedded_hal::spi::ErrorKind::Other
    }
}

/// An I2C bus as the tools use it: embedded-hal's `I2c` with [`BusError`].
pub trait I2cBus: i2c::I2c<Error = BusError> + Send {}
impl<T: i2c::I2c<Error = BusError> + Send> I2cBus for T {}

/// Whether a device answers at `address`: a one-byte read, as `i2cdetect -r` probes (never a
/// write, never an SMBus quick write, which some chips take as a command). `Ok` when it
/// acknowledged; [`BusError::Nack`] when nothing did.
pub fn probe(bus: &mut dyn I2cBus, address: u8) -> Result<(), BusError> {
    let mut byte = [0u8; 1];
    bus.transaction(address, &mut [Operation::Read(&mut byte)])
}

/// Adapts any embedded-hal `I2c` (a Linux `I2cdev`, a mock) to [`BusError`].
pub struct Erased<T>(pub T);

impl<T: i2c::I2c> i2c::ErrorType for Erased<T> {
    type Error = BusError;
}

impl<T: i2c::I2c> i2c::I2c for Erased<T> {
    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), BusError> {
        use embedded_hal::i2c::Error as _;
        self.0
            .transaction(address, operations)
            .map_err(|e| BusError::from_kind(e.kind(), address))
    }
}

/// Which edge to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// Low to high.
    Rising,
    /// High to low.
    Falling,
    /// Either.
    Both,
}

/// An edge that happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeEvent {
    /// True for a rising edge.
    pub rising: bool,
    /// How long after the wait began it came.
    pub after: Duration,
}

/// One GPIO line. Reading and writing map onto embedded-hal's `InputPin` / `OutputPin` in the
/// backends; waiting for an edge is what embedded-hal 1.0 (blocking) lacks.
pub trait Line: Send {
    /// The level: true is high.
    fn read(&mut self) -> Result<bool, BusError>;
    /// Drives the line (it must be an output).
    fn write(&mut self, high: bool) -> Result<(), BusError>;
    /// Waits up to `timeout` for an edge; `None` when none came.
    fn wait_edge(&mut self, edge: Edge, timeout: Duration) -> Result<Option<EdgeEvent>, BusError>;
}

/// One PWM channel: frequency and duty (0.0–1.0).
pub trait Pwm: Send {
    /// Sets both; a backend rounds to what the hardware can do and returns what it set.
    fn set(&mut self, frequency_hz: f64, duty: f64) -> Result<(f64, f64), BusError>;
    /// What is set now.
    fn get(&self) -> (f64, f64);
}

/// A boxed bus of any backend, itself an embedded-hal `I2c`, so one `Mutex<DynI2c>` per bus can
/// be shared by drivers (through `embedded_hal_bus::i2c::MutexDevice`) and raw tools alike.
pub struct DynI2c(pub Box<dyn I2cBus>);

impl i2c::ErrorType for DynI2c {
    type Error = BusError;
}

impl i2c::I2c for DynI2c {
    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), BusError> {
        self.0.transaction(address, operations)
    }
}
