//! Concrete HALs: the Linux kernel interfaces. No concrete HAL type is named outside this module;
//! everything leaves it as a `bus` trait object ([`crate::bus::I2cBus`], [`crate::bus::Line`],
//! [`crate::bus::Pwm`]) or as the small traits defined here ([`SpiDev`], [`SerialIo`]).
//!
//! | what   | kernel interface                         | crate                               |
//! |--------|------------------------------------------|-------------------------------------|
//! | I2C    | i2c-dev, `I2C_RDWR` (`/dev/i2c-N`)       | `linux-embedded-hal` (i2cdev)       |
//! | SPI    | spidev (`/dev/spidevB.C`)                | `linux-embedded-hal` (spidev)       |
//! | GPIO   | GPIO character device, v2 uAPI           | `gpiocdev`                          |
//! | PWM    | sysfs (`/sys/class/pwm/pwmchipN`)        | none: [`SysfsPwm`] writes the files |
//! | serial | tty + termios; ports from `/sys/class/tty` | `serialport` (no libudev)         |
//!
//! # Timeouts
//! - Serial reads: the timeout given to [`open_serial`]; a read that gets nothing in time fails
//!   with `std::io::ErrorKind::TimedOut`.
//! - GPIO edges: [`crate::bus::Line::wait_edge`] takes its own timeout (a `poll` on the request).
//! - I2C: i2c-dev has no per-call timeout. Each transfer is bounded by the adapter's own timeout,
//!   which the I2C core sets to one second unless the driver chooses another; the `I2C_TIMEOUT`
//!   ioctl (units of 10 ms) changes it for the whole adapter. i2cdev 0.6 keeps that ioctl private
//!   and this crate forbids `unsafe`, so the kernel default stands. A timed-out transfer comes back
//!   as `ETIMEDOUT`, reported as [`BusError::Timeout`].
//! - SPI: spidev transfers are clocked by the master and cannot stall on the device.
//! - PWM: sysfs writes return at once; only [`SysfsPwm::open`] waits (up to a second) for udev to
//!   make a freshly exported channel writable.
//!
//! # Why not rppal
//! `rppal` is not a dependency, on purpose: it has been unmaintained since July 2025, it refuses
//! to start off a Raspberry Pi (`UnknownModel`), and it drives GPIO through `/dev/gpiomem`
//! register access that each new SoC (the Pi 5's RP1) has to be taught. The generic kernel
//! interfaces above cover I2C, SPI, GPIO and PWM on every Pi and on other Linux boards, and keep
//! working across kernel updates. The one thing rppal offered beyond them, knowing which board
//! this is, is [`board_model`]: the device tree's `model` string.

use crate::bus::BusError;
use std::io;
use std::path::Path;

mod sysfs;
pub use sysfs::{list_ports, list_ports_in, match_port, PortInfo, SysfsPwm};

#[cfg(all(target_os = "linux", feature = "linux"))]
mod linux;
#[cfg(all(target_os = "linux", feature = "linux"))]
pub use linux::{open_i2c, open_line, open_serial, open_spi, read_line_as_is};

/// An SPI device (one chip select) as the tools use it: embedded-hal's `SpiDevice` with
/// [`BusError`], so crates.io drivers run on it unchanged.
pub trait SpiDev: embedded_hal::spi::SpiDevice<Error = BusError> + Send {}
impl<T: embedded_hal::spi::SpiDevice<Error = BusError> + Send> SpiDev for T {}

/// An open serial port: bytes in and out. Reads time out as the port was opened to.
pub trait SerialIo: io::Read + io::Write + Send {}
impl<T: io::Read + io::Write + Send> SerialIo for T {}

/// Where the device tree states the board model.
pub const DEVICE_TREE_MODEL: &str = "/proc/device-tree/model";

/// The board model from the device tree (`Raspberry Pi 4 Model B Rev 1.4`), or `None` off a
/// device-tree system (a PC, a container without `/proc/device-tree`).
pub fn board_model() -> Option<String> {
    board_model_at(Path::new(DEVICE_TREE_MODEL))
}

/// [`board_model`] read from another file (tests, chroots).
pub fn board_model_at(path: &Path) -> Option<String> {
    let raw = std::fs::read(path).ok()?;
    // The property is a NUL-terminated string.
    let text = String::from_utf8_lossy(&raw);
    let model = text.trim_end_matches('\0').trim();
    (!model.is_empty()).then(|| model.to_string())
}

/// Linux errno values (the asm-generic numbers, the same on arm, arm64 and x86). Some are used
/// only by the `linux` feature.
#[allow(dead_code)]
pub(crate) mod errno {
    pub const ENOENT: i32 = 2;
    pub const EIO: i32 = 5;
    pub const ENXIO: i32 = 6;
    pub const EAGAIN: i32 = 11;
    pub const EACCES: i32 = 13;
    pub const EBUSY: i32 = 16;
    pub const ENODEV: i32 = 19;
    pub const EINVAL: i32 = 22;
    pub const ENOTTY: i32 = 25;
    pub const EOPNOTSUPP: i32 = 95;
    pub const ETIMEDOUT: i32 = 110;
    pub const EREMOTEIO: i32 = 121;
}

/// An error opening or using a kernel file (`what` says which: "I2C bus", "PWM channel"),
/// worded so the next step is clear.
pub(crate) fn file_error(what: &str, path: &Path, e: &io::Error) -> BusError {
    let p = path.display();
    match e.raw_os_error() {
        Some(errno::ENOENT) => BusError::Other(format!("{what} {p} does not exist")),
        Some(errno::EACCES) => BusError::Other(format!(
            "permission denied on {what} {p}: run as a user in the group that owns it"
        )),
        Some(errno::EBUSY) => BusError::Other(format!("{what} {p} is busy (in use elsewhere)")),
        Some(errno::ETIMEDOUT) => BusError::Timeout,
        _ if e.kind() == io::ErrorKind::TimedOut => BusError::Timeout,
        _ => BusError::Other(format!("{what} {p}: {e}")),
    }
}

/// The kernel's device path for SPI `bus`, chip select `cs`.
pub fn default_spi_path(bus: u8, cs: u8) -> String {
    format!("/dev/spidev{bus}.{cs}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_model_is_the_device_tree_string_without_its_nul() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("model");
        std::fs::write(&f, b"Raspberry Pi 4 Model B Rev 1.4\0").unwrap();
        assert_eq!(
            board_model_at(&f).as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.4")
        );
        std::fs::write(&f, b"\0").unwrap();
        assert_eq!(board_model_at(&f), None);
        assert_eq!(board_model_at(&dir.path().join("absent")), None);
    }

    #[test]
    fn file_errors_say_what_to_do() {
        let p = Path::new("/dev/i2c-1");
        let e = file_error("I2C bus", p, &io::Error::from_raw_os_error(errno::ENOENT));
        assert_eq!(e.to_string(), "I2C bus /dev/i2c-1 does not exist");
        let e = file_error("I2C bus", p, &io::Error::from_raw_os_error(errno::EACCES));
        assert!(e.to_string().contains("permission denied"), "{e}");
        let e = file_error(
            "I2C bus",
            p,
            &io::Error::from_raw_os_error(errno::ETIMEDOUT),
        );
        assert_eq!(e, BusError::Timeout);
    }
}
