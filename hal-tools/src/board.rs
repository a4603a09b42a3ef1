//! Board definitions: `boards/*.toml` describe a board's buses (with device paths), its pins, the
//! devices a maker declared, and the policy. The loader gives errors with the file, the line and
//! what was expected.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Errors loading a board definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoardError {
    /// The file could not be read.
    #[error("{path}: cannot read: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The TOML is malformed or does not fit the schema.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was expected.
        message: String,
    },
    /// The TOML parses but does not make sense (a device on an undeclared bus, a duplicate name).
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending entry (0 when unknown).
        line: usize,
        /// What is wrong and what was expected.
        message: String,
    },
}

/// `[board]`: what the board is.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BoardInfo {
    /// Short name (`rpi4`, `sim`).
    pub name: String,
    /// Human-readable model.
    pub model: String,
    /// `sim` or `linux`.
    #[serde(default = "default_backend")]
    pub backend: String,
}

fn default_backend() -> String {
    "linux".into()
}

/// `[[i2c]]`: one I2C bus.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct I2cDef {
    /// Bus number (`1` for `/dev/i2c-1`).
    pub bus: u8,
    /// Device path (Linux); default `/dev/i2c-<bus>`.
    pub path: Option<String>,
    /// Clock in Hz, for documentation and timing estimates.
    pub speed_hz: Option<u32>,
}

/// `[[spi]]`: one SPI bus and chip select.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SpiDef {
    /// Bus number.
    pub bus: u8,
    /// Chip select.
    pub cs: u8,
    /// Device path (Linux); default `/dev/spidev<bus>.<cs>`.
    pub path: Option<String>,
    /// Maximum clock in Hz.
    pub max_speed_hz: Option<u32>,
}

/// `[[serial]]`: one serial port.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SerialDef {
    /// Name tools use (`gps`, `pico`).
    pub name: String,
    /// Path (`/dev/ttyAMA0`), or `sim:echo` on the sim board.
    pub path: Option<String>,
    /// USB match, because `/dev/ttyACM0` gets renumbered.
    pub usb: Option<UsbMatch>,
    /// Default baud rate.
    pub baud: Option<u32>,
}

/// Matches a USB serial adapter by vendor, product and (optionally) serial number.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UsbMatch {
    /// Vendor id, hex (`2e8a`).
    pub vid: String,
    /// Product id, hex (`000a`).
    pub pid: String,
    /// Serial number, if it must match too.
    pub serial: Option<String>,
}

/// `[pins]`: the GPIO lines the board exposes.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PinsDef {
    /// GPIO character device (Linux); default `/dev/gpiochip0`.
    pub chip: Option<String>,
    /// BCM numbers usable as GPIO.
    #[serde(default)]
    pub available: Vec<u32>,
}

/// `[[pwm]]`: one PWM channel.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PwmDef {
    /// Channel number.
    pub channel: u32,
    /// sysfs chip (Linux), default `/sys/class/pwm/pwmchip0`.
    pub chip: Option<String>,
    /// The BCM pin it drives, for documentation.
    pub pin: Option<u32>,
}

/// `[[device]]`: something a maker attached and named.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceDef {
    /// The name tools use (`climate`, `relay`).
    pub name: String,
    /// The driver: `bme280`, `bmp280`, `bh1750`, `sht4x`, `sht3x`, `aht20`, `scd4x`, `ads1115`,
    /// `ssd1306`, `gpio_out`, `gpio_in`, `pwm`, `serial`, `mcu`.
    pub driver: String,
    /// I2C/SPI bus.
    pub bus: Option<u8>,
    /// I2C address.
    pub address: Option<u8>,
    /// GPIO pin (BCM).
    pub pin: Option<u32>,
    /// PWM channel.
    pub channel: Option<u32>,
    /// Serial port name (from `[[serial]]`).
    pub port: Option<String>,
    /// Log a reading this often (sensors only).
    pub sample_interval_secs: Option<u64>,
    /// A note for people.
    pub note: Option<String>,
}

/// Limits of one PWM channel.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PwmLimit {
    /// The channel.
    pub channel: u32,
    /// Lowest frequency allowed.
    pub min_hz: f64,
    /// Highest frequency allowed.
    pub max_hz: f64,
    /// Highest duty allowed (0–1).
    #[serde(default = "one")]
    pub max_duty: f64,
}

fn one() -> f64 {
    1.0
}

/// Addresses one bus may be written to.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct I2cWriteAllow {
    /// The bus.
    pub bus: u8,
    /// The addresses.
    pub addresses: Vec<u8>,
}

/// What the tools may do on one attached microcontroller: its pins fall under the same kind of
/// policy as the board's own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McuPolicy {
    /// The declared `mcu` device.
    pub device: String,
    /// Pins that may be driven.
    #[serde(default)]
    pub outputs: Vec<u8>,
    /// PWM limits per pin (`channel` is the MCU pin).
    #[serde(default)]
    pub pwm: Vec<PwmLimit>,
    /// I2C addresses on the MCU's own bus that may be written.
    #[serde(default)]
    pub i2c_write_allow: Vec<u8>,
}

/// `[policy]`: what the tools may do on this board.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicyDef {
    /// Refuse every write and actuation.
    #[serde(default)]
    pub read_only: bool,
    /// Addresses allowed for writing, per bus. Declared I2C devices are always allowed.
    #[serde(default)]
    pub i2c_write_allow: Vec<I2cWriteAllow>,
    /// Pins that may be driven (BCM numbers); declared `gpio_out` devices are always allowed.
    #[serde(default)]
    pub outputs: Vec<u32>,
    /// PWM limits per channel; a channel without limits cannot be set.
    #[serde(default)]
    pub pwm: Vec<PwmLimit>,
    /// Largest SPI or I2C transfer in bytes (default 4096, spidev's own limit).
    pub max_transfer: Option<usize>,
    /// Serial port names allowed for writing (default: every declared port).
    pub serial_allow: Option<Vec<String>>,
    /// Attached microcontrollers.
    #[serde(default)]
    pub mcu: Vec<McuPolicy>,
}

/// A whole board definition.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BoardDef {
    /// What the board is.
    pub board: BoardInfo,
    /// I2C buses.
    #[serde(default)]
    pub i2c: Vec<I2cDef>,
    /// SPI buses.
    #[serde(default)]
    pub spi: Vec<SpiDef>,
    /// Serial ports.
    #[serde(default)]
    pub serial: Vec<SerialDef>,
    /// GPIO lines.
    #[serde(default)]
    pub pins: PinsDef,
    /// PWM channels.
    #[serde(default)]
    pub pwm: Vec<PwmDef>,
    /// Declared devices.
    #[serde(default)]
    pub device: Vec<DeviceDef>,
    /// The policy.
    #[serde(default)]
    pub policy: PolicyDef,
    /// Where it was loaded from.
    #[serde(skip)]
    pub source: PathBuf,
}

/// The sim board's definition, built in so `covo` runs with no board configured.
pub const SIM_TOML: &str = include_str!("../../boards/sim.toml");

impl BoardDef {
    /// Parses a definition; `path` is used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<BoardDef, BoardError> {
        let mut def: BoardDef = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            BoardError::Parse {
                path: path.to_path_buf(),
                line,
                column,
                message: e.message().to_string(),
            }
        })?;
        def.source = path.to_path_buf();
        def.validate(text)?;
        Ok(def)
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<BoardDef, BoardError> {
        let text = std::fs::read_to_string(path).map_err(|e| BoardError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&text, path)
    }

    /// The built-in simulated board.
    pub fn sim() -> BoardDef {
        Self::parse(SIM_TOML, Path::new("boards/sim.toml"))
            .unwrap_or_else(|e| panic!("the built-in sim board is invalid: {e}"))
    }

    /// The declared device with this name.
    pub fn device(&self, name: &str) -> Option<&DeviceDef> {
        self.device.iter().find(|d| d.name == name)
    }

    /// The first I2C bus, the default for tools that take `bus`.
    pub fn default_i2c_bus(&self) -> Option<u8> {
        self.i2c.first().map(|b| b.bus)
    }

    /// Checks what the schema cannot: references between sections and duplicates. Each error
    /// points at the offending key of the offending `[[device]]` (found through the TOML spans,
    /// not by searching the text, so two devices with similar names are told apart).
    fn validate(&self, text: &str) -> Result<(), BoardError> {
        let invalid = |index: usize, key: &str, message: String| BoardError::Invalid {
            path: self.source.clone(),
            line: device_key_line(text, index, key),
            message,
        };
        for (i, d) in self.device.iter().enumerate() {
            if let Some(first) = self.device[..i].iter().position(|o| o.name == d.name) {
                return Err(invalid(
                    i,
                    "name",
                    format!(
                        "device name '{}' is declared twice (first at line {}); names must be unique",
                        d.name,
                        device_key_line(text, first, "name")
                    ),
                ));
            }
            if let Some(bus) = d.bus {
                let known =
                    self.i2c.iter().any(|b| b.bus == bus) || self.spi.iter().any(|s| s.bus == bus);
                if !known {
                    let declared: Vec<String> = self
                        .i2c
                        .iter()
                        .map(|b| format!("i2c {}", b.bus))
                        .chain(self.spi.iter().map(|s| format!("spi {}.{}", s.bus, s.cs)))
                        .collect();
                    return Err(invalid(
                        i,
                        "bus",
                        format!(
                            "device '{}' is on bus {bus}, but no [[i2c]] or [[spi]] declares bus {bus} (declared: {})",
                            d.name,
                            if declared.is_empty() { "none".into() } else { declared.join(", ") }
                        ),
                    ));
                }
            }
            if let Some(a) = d.address {
                if a > 0x7f {
                    return Err(invalid(
                        i,
                        "address",
                        format!(
                            "device '{}': address 0x{a:02x} is not a 7-bit address; expected 0x00-0x7f (8-bit addresses include the R/W bit: shift right by one)",
                            d.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The 1-based line of `key` in the `index`th `[[device]]`, or of that device's table when the
/// key is absent; 0 when the text cannot be located (it parsed once already, so rarely).
fn device_key_line(text: &str, index: usize, key: &str) -> usize {
    use toml::de::{DeTable, DeValue};
    let Ok(root) = DeTable::parse(text) else {
        return 0;
    };
    let Some((_, devices)) = root.get_ref().iter().find(|(k, _)| k.get_ref() == "device") else {
        return 0;
    };
    let DeValue::Array(devices) = devices.get_ref() else {
        return 0;
    };
    let Some(device) = devices.get(index) else {
        return 0;
    };
    let at = match device.get_ref() {
        DeValue::Table(t) => t
            .iter()
            .find(|(k, _)| k.get_ref() == key)
            .map_or(device.span().start, |(k, _)| k.span().start),
        _ => device.span().start,
    };
    line_col(text, at).0
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
