//! Board definitions: `boards/*.toml` describe a board's buses (with device paths), its pins, the
//! devices a maker declared, and the policy. The loader gives errors with the file, the line and
//! what was expected.

use crate::driver::{Driver, Key};
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
    /// The TOML is malformed or does not fit the schema (or the file is not UTF-8).
    #[error("{path}: line {line}, column {column}: {message}")]
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
    /// The TOML parses but does not make sense (a device on an undeclared bus, a duplicate name,
    /// an unknown driver, a policy entry for something not declared); the message names the key.
    #[error("{path}: line {line}: {message}")]
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
    /// The driver (`driver = "bme280"`); [`Driver::ALL`] lists them.
    pub driver: Driver,
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
    /// How `mcu_flash` writes a new firmware to it (`mcu` devices only).
    pub flash: Option<FlashDef>,
}

/// `flash = { method = "uf2" }` on an `mcu` device: how `mcu_flash` writes a new firmware.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlashDef {
    /// The method.
    pub method: FlashMethod,
    /// `uf2`: where the BOOTSEL drive is mounted (default: the first `RPI-RP2` under `/media/*`
    /// or `/run/media/*`; on the sim board, the simulation's own drive).
    pub drive: Option<PathBuf>,
    /// `probe-rs`: the target chip, as `probe-rs chip list` names it (`STM32F411CEUx`).
    pub chip: Option<String>,
    /// `command`: the program and its arguments; `{image}` becomes the image's path and
    /// `{port}` the device's serial port path.
    pub command: Option<Vec<String>>,
}

/// How an image reaches a microcontroller's flash.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FlashMethod {
    /// Reboot into the RP2040's USB bootloader over the covo link and copy a UF2 file onto its
    /// `RPI-RP2` drive; no probe or button needed.
    Uf2,
    /// `probe-rs download` through an SWD/JTAG probe (STM32, nRF, RP2040 with a debug probe).
    ProbeRs,
    /// A program of the maker's choice (`espflash`, `avrdude`, `openocd`, a script).
    Command,
}

impl FlashMethod {
    /// The name used in the board file.
    pub fn as_str(self) -> &'static str {
        match self {
            FlashMethod::Uf2 => "uf2",
            FlashMethod::ProbeRs => "probe-rs",
            FlashMethod::Command => "command",
        }
    }
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
            if let Some(invalid) = e.span().and_then(|s| unknown_driver(text, path, s)) {
                return invalid;
            }
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

    /// Reads and parses a file. A file that is not UTF-8 is a [`BoardError::Parse`] at the
    /// first bad byte.
    pub fn load(path: &Path) -> Result<BoardDef, BoardError> {
        let bytes = std::fs::read(path).map_err(|e| BoardError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let valid = String::from_utf8_lossy(&e.as_bytes()[..offset]);
            let (line, column) = line_col(&valid, offset);
            BoardError::Parse {
                path: path.to_path_buf(),
                line,
                column,
                message: format!("not valid UTF-8 (byte {offset}); board files must be UTF-8 text"),
            }
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

    /// Checks what the schema cannot: references between sections, duplicates, drivers, pins
    /// and limits. Each error points at the offending key (found through the TOML spans, not by
    /// searching the text, so two devices with similar names are told apart) and names it.
    fn validate(&self, text: &str) -> Result<(), BoardError> {
        use Seg::{Index as I, Key as K};
        let at = |path: &[Seg], message: String| BoardError::Invalid {
            path: self.source.clone(),
            line: key_line(text, path),
            message,
        };
        let invalid = |index: usize, key: &str, message: String| {
            at(&[K("device"), I(index), K(key)], message)
        };
        let available = &self.pins.available;
        let listed = |pins: &[u32]| {
            pins.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        self.validate_serial(text)?;
        for (i, d) in self.device.iter().enumerate() {
            if d.driver.requires(Key::Port) {
                let declared = || {
                    let names: Vec<&str> = self.serial.iter().map(|s| s.name.as_str()).collect();
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                };
                match &d.port {
                    None => {
                        return Err(invalid(
                            i,
                            "driver",
                            format!(
                                "device '{}' ({}) needs `port = \"NAME\"`, the name of a [[serial]] port (declared: {})",
                                d.name,
                                d.driver,
                                declared()
                            ),
                        ))
                    }
                    Some(port) if self.resolve_serial(port).is_err() => {
                        return Err(invalid(
                            i,
                            "port",
                            format!(
                                "device '{}' is on serial port '{port}', which no [[serial]] declares (declared: {})",
                                d.name,
                                declared()
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
            if let Some(first) = self.device[..i].iter().position(|o| o.name == d.name) {
                return Err(invalid(
                    i,
                    "name",
                    format!(
                        "device name '{}' is declared twice (first at line {}); names must be unique",
                        d.name,
                        key_line(text, &[K("device"), I(first), K("name")])
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
            // An empty `available` means every line may be used (as the hardware resolves pins).
            if let Some(pin) = d.pin.filter(|_| d.driver.requires(Key::Pin)) {
                if !available.is_empty() && !available.contains(&pin) {
                    return Err(invalid(
                        i,
                        "pin",
                        format!(
                            "device '{}': `pin = {pin}` is not in [pins] available ({})",
                            d.name,
                            listed(available)
                        ),
                    ));
                }
            }
        }
        let policy = &self.policy;
        if !available.is_empty() {
            if let Some(j) = policy.outputs.iter().position(|p| !available.contains(p)) {
                return Err(at(
                    &[K("policy"), K("outputs"), I(j)],
                    format!(
                        "`policy.outputs` lists GPIO{}, which is not in [pins] available ({})",
                        policy.outputs[j],
                        listed(available)
                    ),
                ));
            }
        }
        let check_pwm = |limits: &[PwmLimit], prefix: &[Seg], what: &dyn Fn(u32) -> String| {
            for (j, l) in limits.iter().enumerate() {
                if l.min_hz > l.max_hz {
                    let mut path = prefix.to_vec();
                    path.extend([I(j), K("min_hz")]);
                    return Err(at(
                        &path,
                        format!(
                            "{}: `min_hz = {}` is above `max_hz = {}`; no frequency could be set",
                            what(l.channel),
                            l.min_hz,
                            l.max_hz
                        ),
                    ));
                }
            }
            Ok(())
        };
        check_pwm(&policy.pwm, &[K("policy"), K("pwm")], &|c| {
            format!("`policy.pwm` channel {c}")
        })?;
        for (i, d) in self.device.iter().enumerate() {
            let Some(f) = &d.flash else { continue };
            if d.driver != Driver::Mcu {
                return Err(invalid(
                    i,
                    "flash",
                    format!(
                        "`flash` on device '{}': it is a '{}' device, and only mcu devices are flashed",
                        d.name, d.driver
                    ),
                ));
            }
            let needs = match f.method {
                FlashMethod::ProbeRs if f.chip.as_deref().is_none_or(str::is_empty) => {
                    Some("`method = \"probe-rs\"` needs `chip` (see `probe-rs chip list`)")
                }
                FlashMethod::Command if f.command.as_ref().is_none_or(|c| c.is_empty()) => {
                    Some("`method = \"command\"` needs `command = [\"program\", \"arg\", ...]`")
                }
                _ => None,
            };
            if let Some(needs) = needs {
                return Err(invalid(
                    i,
                    "flash",
                    format!("`flash` on device '{}': {needs}", d.name),
                ));
            }
        }
        let mcus: Vec<&str> = self
            .device
            .iter()
            .filter(|d| d.driver == Driver::Mcu)
            .map(|d| d.name.as_str())
            .collect();
        for (j, m) in policy.mcu.iter().enumerate() {
            if !mcus.contains(&m.device.as_str()) {
                let not = match self.device(&m.device) {
                    Some(d) => format!("is a '{}' device, not an mcu", d.driver),
                    None => "names no declared device".into(),
                };
                return Err(at(
                    &[K("policy"), K("mcu"), I(j), K("device")],
                    format!(
                        "[[policy.mcu]] `device = \"{}\"` {not} (declared mcu devices: {})",
                        m.device,
                        if mcus.is_empty() {
                            "none".into()
                        } else {
                            mcus.join(", ")
                        }
                    ),
                ));
            }
            check_pwm(&m.pwm, &[K("policy"), K("mcu"), I(j), K("pwm")], &|c| {
                format!("[[policy.mcu]] '{}' pin {c}", m.device)
            })?;
        }
        if let Some(allow) = &policy.serial_allow {
            if let Some(j) = allow
                .iter()
                .position(|a| !self.serial.iter().any(|s| &s.name == a))
            {
                let declared: Vec<&str> = self.serial.iter().map(|s| s.name.as_str()).collect();
                return Err(at(
                    &[K("policy"), K("serial_allow"), I(j)],
                    format!(
                        "`policy.serial_allow` lists '{}', which no [[serial]] declares (declared: {})",
                        allow[j],
                        if declared.is_empty() { "none".into() } else { declared.join(", ") }
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl BoardDef {
    /// Each `[[serial]]` port can exist: a unique name, and a device path (`/dev/…`), USB ids
    /// of hex digits, or on the sim board one of the sim's ports ([`SIM_SERIAL_PORTS`]).
    fn validate_serial(&self, text: &str) -> Result<(), BoardError> {
        use Seg::{Index as I, Key as K};
        let at = |i: usize, key: &str, message: String| BoardError::Invalid {
            path: self.source.clone(),
            line: key_line(text, &[K("serial"), I(i), K(key)]),
            message,
        };
        let sim = self.board.backend == "sim";
        for (i, s) in self.serial.iter().enumerate() {
            if let Some(first) = self.serial[..i].iter().position(|o| o.name == s.name) {
                return Err(at(
                    i,
                    "name",
                    format!(
                        "serial port name '{}' is declared twice (first at line {}); names must be unique",
                        s.name,
                        key_line(text, &[K("serial"), I(first), K("name")])
                    ),
                ));
            }
            if let Some(usb) = &s.usb {
                for (key, id) in [("vid", &usb.vid), ("pid", &usb.pid)] {
                    let hex = !id.is_empty()
                        && id.len() <= 4
                        && id.chars().all(|c| c.is_ascii_hexdigit());
                    if !hex {
                        return Err(BoardError::Invalid {
                            path: self.source.clone(),
                            line: key_line(text, &[K("serial"), I(i), K("usb"), K(key)]),
                            message: format!(
                                "serial port '{}': usb {key} '{id}' is not a USB id; expected up to 4 hex digits, as `lsusb` shows them (2e8a)",
                                s.name
                            ),
                        });
                    }
                }
            }
            match s.path.as_deref() {
                None if s.usb.is_none() => {
                    return Err(at(
                        i,
                        "name",
                        format!(
                            "serial port '{}' declares neither `path` (/dev/ttyUSB0) nor `usb` ids; covo could not find it",
                            s.name
                        ),
                    ))
                }
                None => {}
                Some(path) => {
                    if let Some(name) = path.strip_prefix("sim:") {
                        if !sim {
                            return Err(at(
                                i,
                                "path",
                                format!(
                                    "serial port '{}': `path = \"{path}\"` is a sim port, but this board's backend is '{}'; give the device path (/dev/ttyACM0) or usb ids",
                                    s.name, self.board.backend
                                ),
                            ));
                        }
                        if !SIM_SERIAL_PORTS.contains(&name) {
                            return Err(at(
                                i,
                                "path",
                                format!(
                                    "serial port '{}': `path = \"{path}\"`, but the sim has no serial port '{name}' (it has: {})",
                                    s.name,
                                    SIM_SERIAL_PORTS
                                        .iter()
                                        .map(|p| format!("sim:{p}"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            ));
                        }
                    } else if !path.starts_with('/') {
                        return Err(at(
                            i,
                            "path",
                            format!(
                                "serial port '{}': `path = \"{path}\"` is not a device path; expected an absolute path such as /dev/{}",
                                s.name,
                                path.trim_start_matches("./")
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The serial ports of the sim board (`path = "sim:NAME"`): a line echo and a microcontroller
/// running covo's firmware protocol. `covo_hal_tools::sim` serves exactly these.
pub const SIM_SERIAL_PORTS: &[&str] = &["echo", "mcu"];

/// The loader's error for an unknown driver, when the TOML error at `span` is one: the
/// [`Driver`] deserializer refuses a name it does not know, and this names the device and the
/// key as the other checks do. `None` for any other error.
fn unknown_driver(text: &str, path: &Path, span: std::ops::Range<usize>) -> Option<BoardError> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let root = root.get_ref();
    let (_, devices) = root.iter().find(|(k, _)| k.get_ref() == "device")?;
    let DeValue::Array(devices) = devices.get_ref() else {
        return None;
    };
    for (i, d) in devices.iter().enumerate() {
        let DeValue::Table(t) = d.get_ref() else {
            continue;
        };
        let field = |name: &str| t.iter().find(|(k, _)| k.get_ref() == name).map(|(_, v)| v);
        let Some(driver) = field("driver") else {
            continue;
        };
        let DeValue::String(name) = driver.get_ref() else {
            continue;
        };
        if driver.span() != span {
            continue;
        }
        let e = name.parse::<Driver>().err()?;
        let device = match field("name").map(|n| n.get_ref()) {
            Some(DeValue::String(n)) => n.to_string(),
            _ => format!("#{}", i + 1),
        };
        return Some(BoardError::Invalid {
            path: path.to_path_buf(),
            line: key_line(
                text,
                &[Seg::Key("device"), Seg::Index(i), Seg::Key("driver")],
            ),
            message: format!("device '{device}': {e}"),
        });
    }
    None
}

/// One step of a path into the TOML document.
#[derive(Debug, Clone, Copy)]
enum Seg<'a> {
    /// A key of a table.
    Key(&'a str),
    /// An element of an array (or of an array of tables).
    Index(usize),
}

/// The 1-based line of what `path` leads to: a key, or an array element. When the path stops
/// early (a key that is absent), the line of the deepest thing found; 0 when the text cannot be
/// located (it parsed once already, so rarely).
fn key_line(text: &str, path: &[Seg]) -> usize {
    use toml::de::{DeTable, DeValue};
    let Ok(root) = DeTable::parse(text) else {
        return 0;
    };
    let mut value: &DeValue = &DeValue::Table(root.get_ref().clone());
    let mut best: Option<usize> = None;
    for seg in path {
        match (seg, value) {
            (Seg::Key(key), DeValue::Table(t)) => {
                let Some((k, v)) = t.iter().find(|(k, _)| k.get_ref() == key) else {
                    break;
                };
                best = Some(k.span().start);
                value = v.get_ref();
            }
            (Seg::Index(i), DeValue::Array(a)) => {
                let Some(v) = a.get(*i) else {
                    break;
                };
                best = Some(v.span().start);
                value = v.get_ref();
            }
            _ => break,
        }
    }
    best.map_or(0, |at| line_col(text, at).0)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
