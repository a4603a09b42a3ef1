//! I2C, SPI, GPIO and serial through the Linux kernel's character devices.

use super::errno::*;
use super::{file_error, SerialIo, SpiDev};
use crate::bus::{BusError, Edge, EdgeEvent, I2cBus, Line};
use embedded_hal::i2c::{self, Operation};
use embedded_hal::spi;
use gpiocdev::line::{EdgeDetection, EdgeKind, Value};
use gpiocdev::Request;
use linux_embedded_hal::i2cdev::linux::LinuxI2CError;
use linux_embedded_hal::spidev::{SpiModeFlags, SpidevOptions};
use linux_embedded_hal::{I2CError, I2cdev, SPIError, SpidevDevice};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// ---- I2C ----------------------------------------------------------------------------------------

/// Opens an I2C bus (`/dev/i2c-1`) through i2c-dev. Every transaction is one `I2C_RDWR` ioctl,
/// so a write followed by a read is joined by a repeated start, as register reads need.
pub fn open_i2c(path: impl AsRef<Path>) -> Result<Box<dyn I2cBus>, BusError> {
    let path = path.as_ref();
    let dev = I2cdev::new(path).map_err(|e| i2c_open_error(path, &e))?;
    Ok(Box::new(LinuxI2c(dev)))
}

/// `I2cdev` with its errors mapped from the errno, which keeps what `bus::Erased` (going through
/// embedded-hal's `ErrorKind`) would lose: a timeout, and the `EREMOTEIO` the Pi's controller
/// (i2c-bcm2835) returns for a NACK.
struct LinuxI2c(I2cdev);

impl i2c::ErrorType for LinuxI2c {
    type Error = BusError;
}

impl i2c::I2c for LinuxI2c {
    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), BusError> {
        self.0
            .transaction(address, operations)
            .map_err(|e| i2c_error(&e, address))
    }
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
/// v2 character-device uAPI. An output starts low. An input has edge detection on both edges,
/// so [`Line::wait_edge`] works. The line is released when the box is dropped.
pub fn open_line(
    chip: impl AsRef<Path>,
    offset: u32,
    output: bool,
) -> Result<Box<dyn Line>, BusError> {
    let chip = chip.as_ref();
    let mut builder = Request::builder();
    builder
        .on_chip(chip)
        .with_consumer("covo")
        .with_line(offset);
    if output {
        builder.as_output(Value::Inactive);
    } else {
        builder
            .as_input()
            .with_edge_detection(EdgeDetection::BothEdges);
    }
    let request = builder
        .request()
        .map_err(|e| gpio_error(chip, offset, &e))?;
    Ok(Box::new(GpioLine {
        request,
        chip: chip.to_path_buf(),
        offset,
        output,
    }))
}

/// Reads one line's value with its direction left as it is (uAPI v2 "as-is"), releasing it at
/// once: the level of an output another request drove, without reconfiguring it.
pub fn read_line_as_is(chip: impl AsRef<Path>, offset: u32) -> Result<bool, BusError> {
    let chip = chip.as_ref();
    let request = Request::builder()
        .on_chip(chip)
        .with_consumer("covo")
        .with_line(offset)
        .as_is()
        .request()
        .map_err(|e| gpio_error(chip, offset, &e))?;
    let v = request
        .value(offset)
        .map_err(|e| gpio_error(chip, offset, &e))?;
    Ok(v == Value::Active)
}

struct GpioLine {
    request: Request,
    chip: PathBuf,
    offset: u32,
    output: bool,
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
            "GPIO{offset} on {c} is in use (by a kernel driver such as I2C or SPI, or another program)"
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
        if !self.output {
            return Err(BusError::Unsupported(format!(
                "GPIO{} was opened as an input",
                self.offset
            )));
        }
        self.request
            .set_value(self.offset, Value::from(high))
            .map_err(|e| self.err(e))
    }

    fn wait_edge(&mut self, edge: Edge, timeout: Duration) -> Result<Option<EdgeEvent>, BusError> {
        if self.output {
            return Err(BusError::Unsupported(format!(
                "GPIO{} is an output: edges are watched on inputs",
                self.offset
            )));
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
        let e = open_line("/dev/gpiochip99", 17, true).err().unwrap();
        assert_eq!(e.to_string(), "GPIO chip /dev/gpiochip99 does not exist");
        let e = open_line("/dev/null", 17, false).err().unwrap();
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
