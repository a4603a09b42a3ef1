//! I2C, SPI, GPIO and serial through the Linux kernel's character devices.

use super::errno::*;
use super::{file_error, SerialIo, SpiDev};
use crate::bus::{BusError, Edge, EdgeEvent, I2cBus, Line};
use embedded_hal::i2c::{self, Operation};
use embedded_hal::spi;
use gpiocdev::line::{EdgeDetection, EdgeKind, Value};
use gpiocdev::Request;
use linux_embedded_hal::i2cdev::core::I2CDevice;
use linux_embedded_hal::i2cdev::linux::{LinuxI2CDevice, LinuxI2CError};
use linux_embedded_hal::spidev::{SpiModeFlags, SpidevOptions};
use linux_embedded_hal::{I2CError, I2cdev, SPIError, SpidevDevice};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// ---- I2C ----------------------------------------------------------------------------------------

/// Opens an I2C bus (`/dev/i2c-1`) through i2c-dev. Every transaction is one `I2C_RDWR` ioctl,
/// so a write followed by a read is joined by a repeated start, as register reads need.
///
/// An SMBus-only adapter (i801 and piix4 on PCs, `i2c-stub`: no `I2C_FUNC_I2C`) refuses
/// `I2C_RDWR` with `EOPNOTSUPP` before anything reaches the bus. The bus then switches to SMBus
/// commands for the transfers SMBus can express (see [`smbus_plan`]): register reads and writes
/// of up to 32 bytes, one-byte reads and writes, and the quick command.
pub fn open_i2c(path: impl AsRef<Path>) -> Result<Box<dyn I2cBus>, BusError> {
    let path = path.as_ref();
    let dev = I2cdev::new(path).map_err(|e| i2c_open_error(path, &e))?;
    Ok(Box::new(LinuxI2c {
        dev,
        path: path.to_path_buf(),
        smbus: None,
    }))
}

/// `I2cdev` with its errors mapped from the errno, which keeps what `bus::Erased` (going through
/// embedded-hal's `ErrorKind`) would lose: a timeout, and the `EREMOTEIO` the Pi's controller
/// (i2c-bcm2835) returns for a NACK.
struct LinuxI2c {
    dev: I2cdev,
    path: PathBuf,
    /// Set once the adapter refused a plain I2C transfer: SMBus commands from then on, through
    /// one device file whose target address follows the call.
    smbus: Option<(LinuxI2CDevice, u8)>,
}

impl i2c::ErrorType for LinuxI2c {
    type Error = BusError;
}

impl i2c::I2c for LinuxI2c {
    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), BusError> {
        if self.smbus.is_none() {
            match self.dev.transaction(address, operations) {
                Ok(()) => return Ok(()),
                Err(e) if linux_errno(e.inner()) == Some(EOPNOTSUPP) => {
                    tracing::info!(
                        bus = %self.path.display(),
                        "the I2C adapter is SMBus-only (no I2C_FUNC_I2C): using SMBus commands"
                    );
                    let dev = LinuxI2CDevice::new(&self.path, u16::from(address))
                        .map_err(|e| i2c_errno(linux_errno(&e), address, &e.to_string()))?;
                    self.smbus = Some((dev, address));
                }
                Err(e) => return Err(i2c_error(&e, address)),
            }
        }
        let (dev, current) = self.smbus.as_mut().expect("set above");
        smbus_transaction(dev, current, address, operations)
    }
}

/// One SMBus command, as [`smbus_plan`] maps a transaction onto them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Smbus {
    /// Quick command (the address and a write bit, no data).
    Quick,
    /// Receive one byte.
    ReceiveByte,
    /// Send one byte.
    SendByte(u8),
    /// Write one byte to a register.
    WriteByteData(u8, u8),
    /// Write bytes from a register on (I2C block write, at most 32).
    WriteBlock(u8, Vec<u8>),
    /// Read one byte from a register.
    ReadByteData(u8),
    /// Read `n` bytes from a register on (I2C block read, at most 32).
    ReadBlock(u8, u8),
}

/// The most data bytes one SMBus block command carries.
const SMBUS_BLOCK: usize = 32;

/// Maps an embedded-hal transaction onto SMBus commands that put the same bytes on the wire, or
/// says why SMBus cannot express it. A register read longer than a block is split into block
/// reads at successive registers, as register-file chips auto-increment.
fn smbus_plan(ops: &[Operation<'_>]) -> Result<Vec<Smbus>, String> {
    use Operation::{Read, Write};
    let plan = match ops {
        [Write(w)] => match w.len() {
            0 => vec![Smbus::Quick],
            1 => vec![Smbus::SendByte(w[0])],
            2 => vec![Smbus::WriteByteData(w[0], w[1])],
            n if n <= SMBUS_BLOCK + 1 => vec![Smbus::WriteBlock(w[0], w[1..].to_vec())],
            n => {
                return Err(format!(
                "a {n}-byte write: SMBus writes carry a register and at most {SMBUS_BLOCK} bytes"
            ))
            }
        },
        [Read(r)] if r.len() == 1 => vec![Smbus::ReceiveByte],
        [Read(r)] => {
            return Err(format!(
                "a plain {}-byte read: SMBus reads one byte, or bytes from a register",
                r.len()
            ))
        }
        [Write(w), Read(r)] if w.len() == 1 => {
            let reg = w[0];
            match r.len() {
                0 => vec![Smbus::SendByte(reg)],
                1 => vec![Smbus::ReadByteData(reg)],
                n if usize::from(reg) + n > 256 => {
                    return Err(format!(
                        "reading {n} bytes from register 0x{reg:02x} would run past register 0xff"
                    ))
                }
                n => (0..n)
                    .step_by(SMBUS_BLOCK)
                    .map(|at| {
                        let len = (n - at).min(SMBUS_BLOCK);
                        Smbus::ReadBlock(reg + at as u8, len as u8)
                    })
                    .collect(),
            }
        }
        [Write(w), Read(_)] => {
            return Err(format!(
                "a {}-byte register address: SMBus addresses registers with one byte",
                w.len()
            ))
        }
        _ => {
            return Err(
                "a transaction of this shape (SMBus has no general combined transfer)".into(),
            )
        }
    };
    Ok(plan)
}

fn smbus_transaction(
    dev: &mut LinuxI2CDevice,
    current: &mut u8,
    address: u8,
    operations: &mut [Operation<'_>],
) -> Result<(), BusError> {
    let plan = smbus_plan(operations).map_err(|why| {
        BusError::Unsupported(format!("the I2C adapter is SMBus-only and cannot do {why}"))
    })?;
    let fail = |e: LinuxI2CError| match linux_errno(&e) {
        Some(EOPNOTSUPP) => BusError::Unsupported(
            "the SMBus-only I2C adapter lacks the SMBus command this transfer needs".into(),
        ),
        n => i2c_errno(n, address, &e.to_string()),
    };
    if *current != address {
        dev.set_slave_address(u16::from(address)).map_err(fail)?;
        *current = address;
    }
    let mut read = Vec::new();
    for cmd in plan {
        match cmd {
            Smbus::Quick => dev.smbus_write_quick(false).map_err(fail)?,
            Smbus::ReceiveByte => read.push(dev.smbus_read_byte().map_err(fail)?),
            Smbus::SendByte(b) => dev.smbus_write_byte(b).map_err(fail)?,
            Smbus::WriteByteData(r, v) => dev.smbus_write_byte_data(r, v).map_err(fail)?,
            Smbus::WriteBlock(r, data) => dev.smbus_write_i2c_block_data(r, &data).map_err(fail)?,
            Smbus::ReadByteData(r) => read.push(dev.smbus_read_byte_data(r).map_err(fail)?),
            Smbus::ReadBlock(r, n) => {
                let got = match dev.smbus_read_i2c_block_data(r, n) {
                    // piix4 and other adapters without I2C block reads still read words: the
                    // same two bytes on the wire.
                    Err(e) if n == 2 && linux_errno(&e) == Some(EOPNOTSUPP) => dev
                        .smbus_read_word_data(r)
                        .map_err(fail)?
                        .to_le_bytes()
                        .to_vec(),
                    other => other.map_err(fail)?,
                };
                if got.len() != usize::from(n) {
                    return Err(BusError::Other(format!(
                        "an SMBus block read from 0x{address:02x} returned {} of {n} bytes",
                        got.len()
                    )));
                }
                read.extend_from_slice(&got);
            }
        }
    }
    if let Some(Operation::Read(buf)) = operations.last_mut() {
        if read.len() == buf.len() {
            buf.copy_from_slice(&read);
        }
    }
    Ok(())
}

fn linux_errno(e: &LinuxI2CError) -> Option<i32> {
    match e {
        LinuxI2CError::Errno(n) => Some(*n),
        LinuxI2CError::Io(e) => e.raw_os_error(),
    }
}

fn i2c_error(e: &I2CError, address: u8) -> BusError {
    i2c_errno(linux_errno(e.inner()), address, &e.to_string())
}

/// Maps an errno from an i2c-dev transfer (see the kernel's Documentation/i2c/fault-codes.rst).
fn i2c_errno(errno: Option<i32>, address: u8, text: &str) -> BusError {
    match errno {
        // ENXIO is the documented "no ACK to the address"; i2c-bcm2835 says EREMOTEIO.
        Some(ENXIO | EREMOTEIO | ENODEV) => BusError::Nack(address),
        Some(ETIMEDOUT) => BusError::Timeout,
        Some(EAGAIN) => BusError::ArbitrationLoss,
        Some(EBUSY) => BusError::Stuck(
            "the bus stayed busy: a device may be holding SDA or SCL low (power-cycle it)".into(),
        ),
        Some(EIO) => BusError::Other(format!(
            "I/O error talking to 0x{address:02x} (a clock-stretch timeout or a line held low)"
        )),
        Some(EOPNOTSUPP) => BusError::Unsupported("the I2C adapter cannot do this transfer".into()),
        Some(EINVAL) => BusError::Other(format!(
            "the I2C adapter refused the transfer to 0x{address:02x} as invalid (too long?)"
        )),
        _ => BusError::Other(text.to_string()),
    }
}

fn i2c_open_error(path: &Path, e: &LinuxI2CError) -> BusError {
    let p = path.display();
    match linux_errno(e) {
        Some(ENOENT) => BusError::Other(format!(
            "I2C bus {p} does not exist: enable I2C (dtparam=i2c_arm=on) and load i2c-dev"
        )),
        Some(ENOTTY) => BusError::Other(format!("{p} is not an I2C bus (i2c-dev) device")),
        Some(n) => file_error("I2C bus", path, &std::io::Error::from_raw_os_error(n)),
        None => BusError::Other(format!("I2C bus {p}: {e}")),
    }
}

// ---- SPI ----------------------------------------------------------------------------------------

/// Opens an SPI device (`/dev/spidev0.0`: bus 0, chip select 0) in mode 0, 8-bit words, clocked
/// at most at `max_speed_hz`. The kernel drives the chip select.
pub fn open_spi(path: impl AsRef<Path>, max_speed_hz: u32) -> Result<Box<dyn SpiDev>, BusError> {
    let path = path.as_ref();
    let mut dev = SpidevDevice::open(path).map_err(|e| spi_open_error(path, &e))?;
    dev.configure(&spi_options(max_speed_hz))
        .map_err(|e| match e.raw_os_error() {
            Some(ENOTTY) => BusError::Other(format!("{} is not a spidev device", path.display())),
            _ => file_error("SPI device", path, &e),
        })?;
    Ok(Box::new(LinuxSpi {
        dev,
        path: path.to_path_buf(),
    }))
}

fn spi_options(max_speed_hz: u32) -> SpidevOptions {
    SpidevOptions::new()
        .bits_per_word(8)
        .max_speed_hz(max_speed_hz)
        .mode(SpiModeFlags::SPI_MODE_0)
        .build()
}

fn spi_open_error(path: &Path, e: &SPIError) -> BusError {
    match e.inner().raw_os_error() {
        Some(ENOENT) => BusError::Other(format!(
            "SPI device {} does not exist: enable SPI (dtparam=spi=on)",
            path.display()
        )),
        _ => file_error("SPI device", path, e.inner()),
    }
}

struct LinuxSpi {
    dev: SpidevDevice,
    path: PathBuf,
}

impl spi::ErrorType for LinuxSpi {
    type Error = BusError;
}

impl spi::SpiDevice for LinuxSpi {
    fn transaction(&mut self, operations: &mut [spi::Operation<'_, u8>]) -> Result<(), BusError> {
        self.dev.transaction(operations).map_err(|e| match e.inner().raw_os_error() {
            Some(EMSGSIZE) => BusError::Other(format!(
                "the transfer is larger than spidev's buffer on {} (4096 bytes unless spidev.bufsiz is raised)",
                self.path.display()
            )),
            _ => file_error("SPI device", &self.path, e.inner()),
        })
    }
}

const EMSGSIZE: i32 = 90;

// ---- GPIO ---------------------------------------------------------------------------------------

/// Requests one line of a GPIO chip (`/dev/gpiochip0`, line = BCM number on a Pi) through the
/// v2 character-device uAPI, **as it is**: requesting it changes neither its direction nor its
/// level, so reading a relay's line leaves the relay driven. The one request is then
/// reconfigured as each use needs, so a line read, then written, then read again never meets
/// itself as "busy":
/// - [`Line::read`] reads the level in whatever direction the line has;
/// - [`Line::write`] makes it an output (with the new level in the same ioctl);
/// - [`Line::wait_edge`] makes an input line edge-detecting, and refuses on an output (watching
///   edges needs an input, and switching a driven line to input would drop what it drives) and
///   on a chip without interrupts, saying so.
///
/// The line is released when the box is dropped.
pub fn open_line(chip: impl AsRef<Path>, offset: u32) -> Result<Box<dyn Line>, BusError> {
    let chip = chip.as_ref();
    let request = Request::builder()
        .on_chip(chip)
        .with_consumer("covo")
        .with_line(offset)
        .as_is()
        .request()
        .map_err(|e| gpio_error(chip, offset, &e))?;
    Ok(Box::new(GpioLine {
        request,
        chip: chip.to_path_buf(),
        offset,
        mode: Mode::AsIs,
    }))
}

/// Checks that a GPIO chip opens, so a board whose chip is missing says so up front.
pub fn probe_gpio_chip(chip: impl AsRef<Path>) -> Result<(), BusError> {
    let chip = chip.as_ref();
    gpiocdev::Chip::from_path(chip)
        .and_then(|c| c.info().map(|_| ()))
        .map_err(|e| gpio_error(chip, 0, &e))
}

/// What covo last asked of a line it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Requested without changing its direction.
    AsIs,
    /// Driven by covo.
    Output,
    /// An input with edge detection on both edges.
    Edges,
}

struct GpioLine {
    request: Request,
    chip: PathBuf,
    offset: u32,
    mode: Mode,
}

/// The errno inside a gpiocdev error. gpiocdev's uAPI error type is not re-exported, so it is
/// read back from the message, which ends in std's "(os error N)".
fn gpio_errno(e: &gpiocdev::Error) -> Option<i32> {
    if let gpiocdev::Error::Os(n) = e {
        return Some(n.0);
    }
    let s = e.to_string();
    let tail = s.rsplit("(os error ").next()?;
    tail.strip_suffix(')')?.parse().ok()
}

fn gpio_error(chip: &Path, offset: u32, e: &gpiocdev::Error) -> BusError {
    let c = chip.display();
    if let gpiocdev::Error::GpioChip(..) = e {
        return BusError::Other(format!("{c} is not a GPIO chip ({e})"));
    }
    match gpio_errno(e) {
        Some(ENOENT) => BusError::Other(format!("GPIO chip {c} does not exist")),
        Some(EBUSY) => BusError::Other(format!(
            "GPIO{offset} on {c} is in use by a kernel driver (such as I2C or SPI) or another program"
        )),
        Some(EINVAL) => BusError::Other(format!(
            "{c} refused line {offset} (beyond the chip's lines, or an unsupported setting)"
        )),
        Some(n) => file_error("GPIO chip", chip, &std::io::Error::from_raw_os_error(n)),
        None => BusError::Other(format!("GPIO{offset} on {c}: {e}")),
    }
}

impl GpioLine {
    fn err(&self, e: gpiocdev::Error) -> BusError {
        gpio_error(&self.chip, self.offset, &e)
    }

    /// Whether the line is an output now: covo drives it, or it was one when covo took it.
    fn is_output(&self) -> Result<bool, BusError> {
        match self.mode {
            Mode::Output => Ok(true),
            Mode::Edges => Ok(false),
            Mode::AsIs => {
                let chip = gpiocdev::Chip::from_path(&self.chip).map_err(|e| self.err(e))?;
                let info = chip.line_info(self.offset).map_err(|e| self.err(e))?;
                Ok(info.direction == gpiocdev::line::Direction::Output)
            }
        }
    }

    /// Makes the line an edge-detecting input. A chip without interrupts refuses edge
    /// detection with ENXIO (or EOPNOTSUPP): that is said in words.
    fn watch_edges(&mut self) -> Result<(), BusError> {
        let mut cfg = self.request.config();
        cfg.with_line(self.offset)
            .as_input()
            .with_edge_detection(EdgeDetection::BothEdges);
        self.request
            .reconfigure(&cfg)
            .map_err(|e| match gpio_errno(&e) {
                Some(ENXIO | EOPNOTSUPP | ENOTSUPP) => BusError::Unsupported(format!(
                    "GPIO{} on {} has no interrupt, so its edges cannot be watched (on an I/O \
                     expander, wire its INT pin); poll it with gpio_read instead",
                    self.offset,
                    self.chip.display()
                )),
                _ => self.err(e),
            })?;
        self.mode = Mode::Edges;
        Ok(())
    }
}

fn wanted(edge: Edge, rising: bool) -> bool {
    match edge {
        Edge::Rising => rising,
        Edge::Falling => !rising,
        Edge::Both => true,
    }
}

impl Line for GpioLine {
    fn read(&mut self) -> Result<bool, BusError> {
        let v = self.request.value(self.offset).map_err(|e| self.err(e))?;
        Ok(v == Value::Active)
    }

    fn write(&mut self, high: bool) -> Result<(), BusError> {
        if self.mode == Mode::Output {
            return self
                .request
                .set_value(self.offset, Value::from(high))
                .map_err(|e| self.err(e));
        }
        // Direction and level in one ioctl: the line never glitches through the other level.
        // (`as_output` also drops edge detection; gpiocdev's `with_edge_detection`, even with
        // `None`, would make the line an input again.)
        let mut cfg = self.request.config();
        cfg.with_line(self.offset).as_output(Value::from(high));
        self.request.reconfigure(&cfg).map_err(|e| self.err(e))?;
        self.mode = Mode::Output;
        Ok(())
    }

    fn wait_edge(&mut self, edge: Edge, timeout: Duration) -> Result<Option<EdgeEvent>, BusError> {
        if self.is_output()? {
            return Err(BusError::Unsupported(format!(
                "GPIO{} is an output: edges are watched on inputs, and switching it to an input \
                 would drop what it drives",
                self.offset
            )));
        }
        if self.mode != Mode::Edges {
            self.watch_edges()?;
        }
        // Edges queued before this call are old news: drop them (bounded by the kernel queue).
        for _ in 0..1024 {
            if !self.request.has_edge_event().map_err(|e| self.err(e))? {
                break;
            }
            self.request.read_edge_event().map_err(|e| self.err(e))?;
        }
        let start = Instant::now();
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            if !self
                .request
                .wait_edge_event(left)
                .map_err(|e| self.err(e))?
            {
                return Ok(None);
            }
            let event = self.request.read_edge_event().map_err(|e| self.err(e))?;
            let rising = event.kind == EdgeKind::Rising;
            if wanted(edge, rising) {
                return Ok(Some(EdgeEvent {
                    rising,
                    after: start.elapsed(),
                }));
            }
            if left.is_zero() {
                return Ok(None);
            }
        }
    }
}

// ---- Serial -------------------------------------------------------------------------------------

/// Opens a serial port at `baud`, 8N1, no flow control, exclusively (a second opener gets an
/// error). Reads wait at most `timeout` and then fail with `io::ErrorKind::TimedOut`.
pub fn open_serial(
    path: impl AsRef<Path>,
    baud: u32,
    timeout: Duration,
) -> Result<Box<dyn SerialIo>, BusError> {
    let path = path.as_ref();
    let name = path.to_string_lossy();
    let port = serialport::new(name.as_ref(), baud)
        .timeout(timeout)
        .open_native()
        .map_err(|e| serial_error(path, &e))?;
    Ok(Box::new(port))
}

fn serial_error(path: &Path, e: &serialport::Error) -> BusError {
    let p = path.display();
    match &e.kind {
        serialport::ErrorKind::NoDevice => BusError::Other(format!(
            "serial port {p} is not there or is busy: {}",
            e.description
        )),
        serialport::ErrorKind::InvalidInput => {
            BusError::Other(format!("serial port {p}: {}", e.description))
        }
        serialport::ErrorKind::Io(kind) => file_error(
            "serial port",
            path,
            &std::io::Error::new(*kind, e.description.clone()),
        ),
        _ => BusError::Other(format!("serial port {p}: {}", e.description)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serialport::SerialPort;
    use std::io::{ErrorKind, Read, Write};

    #[test]
    fn i2c_errnos_map_to_what_a_model_can_act_on() {
        assert_eq!(i2c_errno(Some(ENXIO), 0x76, ""), BusError::Nack(0x76));
        assert_eq!(i2c_errno(Some(EREMOTEIO), 0x3c, ""), BusError::Nack(0x3c));
        assert_eq!(i2c_errno(Some(ETIMEDOUT), 0x76, ""), BusError::Timeout);
        assert_eq!(i2c_errno(Some(EAGAIN), 0x76, ""), BusError::ArbitrationLoss);
        assert!(matches!(
            i2c_errno(Some(EBUSY), 0x76, ""),
            BusError::Stuck(_)
        ));
        assert!(matches!(
            i2c_errno(Some(EOPNOTSUPP), 0x76, ""),
            BusError::Unsupported(_)
        ));
        assert_eq!(i2c_errno(None, 0x76, "odd"), BusError::Other("odd".into()));
        // Through the real error types, as a transfer would return them.
        let e = I2CError::from(LinuxI2CError::Errno(EREMOTEIO));
        assert_eq!(i2c_error(&e, 0x40), BusError::Nack(0x40));
        let e = I2CError::from(LinuxI2CError::Io(std::io::Error::from_raw_os_error(
            ETIMEDOUT,
        )));
        assert_eq!(i2c_error(&e, 0x40), BusError::Timeout);
    }

    #[test]
    fn smbus_plans_put_the_same_bytes_on_the_wire_or_say_why_not() {
        use Operation::{Read, Write};
        let plan = |ops: &mut [Operation<'_>]| smbus_plan(ops);
        // The scan's probe, and one-byte writes.
        assert_eq!(plan(&mut [Read(&mut [0])]), Ok(vec![Smbus::ReceiveByte]));
        assert_eq!(plan(&mut [Write(&[])]), Ok(vec![Smbus::Quick]));
        assert_eq!(plan(&mut [Write(&[0xf4])]), Ok(vec![Smbus::SendByte(0xf4)]));
        // A register write, and a longer one as an I2C block write.
        assert_eq!(
            plan(&mut [Write(&[0xf4, 0x27])]),
            Ok(vec![Smbus::WriteByteData(0xf4, 0x27)])
        );
        assert_eq!(
            plan(&mut [Write(&[0x40, 1, 2, 3])]),
            Ok(vec![Smbus::WriteBlock(0x40, vec![1, 2, 3])])
        );
        let big = [0u8; 33];
        assert_eq!(
            plan(&mut [Write(&big)]),
            Ok(vec![Smbus::WriteBlock(0, vec![0; 32])])
        );
        assert!(plan(&mut [Write(&[0u8; 34])])
            .unwrap_err()
            .contains("at most 32"));
        // Register reads: a byte, a block (a word where the adapter has no block reads), and
        // blocks at successive registers.
        assert_eq!(
            plan(&mut [Write(&[0xd0]), Read(&mut [0])]),
            Ok(vec![Smbus::ReadByteData(0xd0)])
        );
        assert_eq!(
            plan(&mut [Write(&[0x00]), Read(&mut [0; 2])]),
            Ok(vec![Smbus::ReadBlock(0x00, 2)])
        );
        assert_eq!(
            plan(&mut [Write(&[0x88]), Read(&mut [0; 26])]),
            Ok(vec![Smbus::ReadBlock(0x88, 26)])
        );
        assert_eq!(
            plan(&mut [Write(&[0x10]), Read(&mut [0; 70])]),
            Ok(vec![
                Smbus::ReadBlock(0x10, 32),
                Smbus::ReadBlock(0x30, 32),
                Smbus::ReadBlock(0x50, 6)
            ])
        );
        // What SMBus cannot say is refused before anything reaches the bus.
        assert!(plan(&mut [Write(&[0xf0]), Read(&mut [0; 32])])
            .unwrap_err()
            .contains("past register 0xff"));
        assert!(plan(&mut [Read(&mut [0; 4])])
            .unwrap_err()
            .contains("4-byte read"));
        assert!(plan(&mut [Write(&[0x01, 0x02]), Read(&mut [0; 2])])
            .unwrap_err()
            .contains("2-byte register address"));
        assert!(plan(&mut [Write(&[1]), Write(&[2])]).is_err());
    }

    #[test]
    fn opening_a_missing_or_wrong_i2c_bus_says_why() {
        let e = open_i2c("/dev/i2c-99").err().unwrap();
        assert!(e.to_string().contains("dtparam=i2c_arm=on"), "{e}");
        // /dev/null opens, but refuses the I2C_SLAVE ioctl.
        let e = open_i2c("/dev/null").err().unwrap();
        assert!(e.to_string().contains("not an I2C bus"), "{e}");
    }

    #[test]
    fn opening_spi_builds_mode_0_options_and_explains_failures() {
        let o = spi_options(1_000_000);
        assert_eq!(o.max_speed_hz, Some(1_000_000));
        assert_eq!(o.bits_per_word, Some(8));
        assert_eq!(o.spi_mode, Some(SpiModeFlags::SPI_MODE_0));
        let e = open_spi("/dev/spidev9.9", 1_000_000).err().unwrap();
        assert!(e.to_string().contains("dtparam=spi=on"), "{e}");
        let e = open_spi("/dev/null", 1_000_000).err().unwrap();
        assert!(e.to_string().contains("not a spidev device"), "{e}");
    }

    #[test]
    fn opening_a_gpio_line_on_a_missing_or_wrong_chip_says_why() {
        let e = open_line("/dev/gpiochip99", 17).err().unwrap();
        assert_eq!(e.to_string(), "GPIO chip /dev/gpiochip99 does not exist");
        let e = probe_gpio_chip("/dev/gpiochip99").unwrap_err();
        assert_eq!(e.to_string(), "GPIO chip /dev/gpiochip99 does not exist");
        let e = open_line("/dev/null", 17).err().unwrap();
        assert!(e.to_string().contains("is not a GPIO chip"), "{e}");
        let busy: gpiocdev::Error = std::io::Error::from_raw_os_error(EBUSY).into();
        let e = gpio_error(Path::new("/dev/gpiochip0"), 2, &busy);
        assert!(
            e.to_string().contains("GPIO2 on /dev/gpiochip0 is in use"),
            "{e}"
        );
    }

    #[test]
    fn edge_filters() {
        assert!(wanted(Edge::Rising, true) && !wanted(Edge::Rising, false));
        assert!(wanted(Edge::Falling, false) && !wanted(Edge::Falling, true));
        assert!(wanted(Edge::Both, true) && wanted(Edge::Both, false));
    }

    /// All pty work in one test: pseudo-terminal pairs are not safe to create concurrently.
    #[test]
    fn serial_round_trips_through_a_pseudo_terminal() {
        let (mut master, slave) = serialport::TTYPort::pair().unwrap();
        let slave_path = slave.name().unwrap();
        drop(slave);
        let mut port = open_serial(&slave_path, 115_200, Duration::from_millis(200)).unwrap();

        // Binary-clean both ways.
        let out: Vec<u8> = (0..=255u8).collect();
        port.write_all(&out).unwrap();
        port.flush().unwrap();
        let mut got = vec![0u8; out.len()];
        master.read_exact(&mut got).unwrap();
        assert_eq!(got, out);

        master.write_all(b"\x00hello\xff").unwrap();
        let mut back = [0u8; 7];
        port.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"\x00hello\xff");

        // Nothing more to read: the read times out instead of hanging.
        let start = Instant::now();
        let e = port.read(&mut back).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(2));

        // Opened exclusively: a second open of the same port fails with a clear error. (Root
        // bypasses TIOCEXCL, but not the flock serialport also takes.)
        let e = open_serial(&slave_path, 115_200, Duration::from_millis(10))
            .err()
            .unwrap();
        assert!(e.to_string().contains(&slave_path), "{e}");

        let e = open_serial("/dev/ttyNOPE", 9600, Duration::from_millis(10))
            .err()
            .unwrap();
        assert!(e.to_string().contains("/dev/ttyNOPE"), "{e}");
    }
}
