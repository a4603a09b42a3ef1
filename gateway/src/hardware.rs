//! The board, as the gateway sees it: its definition (loaded at start-up, cheap), its policy,
//! and the hardware itself (opened on first use).
//!
//! A hardware call is judged by what it touches, not by its tool's name: each hardware tool
//! has an access function beside its executor (`tools/`) that says which [`Access`]es a call
//! makes, and [`Board::check`] judges each against the board's allowlists and limits (the
//! pipeline's `policy::BoardPolicyCheck`).
//!
//! The definition, the policy and [`Access`] need no HAL (`covo-board`). Opening the hardware
//! does (`covo-hal-tools`, cargo feature `hal`); a build without it has a [`Hardware`] type
//! that no value inhabits, so [`Board::hardware`] always answers [`NO_HARDWARE`] and the code
//! that reads the board back (the dashboard, the switch states, `device_list`) compiles
//! unchanged and never runs.

use crate::error::ToolError;
use covo_board::board::{BoardDef, BoardError};
use covo_board::driver::Driver;
use covo_board::policy::{BoardPolicy, Refusal};
use std::path::Path;
use std::sync::{Arc, OnceLock};

#[cfg(feature = "hal")]
pub use covo_hal_tools::hw::Hardware;

#[cfg(not(feature = "hal"))]
pub use no_hal::Hardware;

/// Why a build without the `hal` feature opens nothing: what its hardware tools and
/// [`Board::hardware`] answer.
pub const NO_HARDWARE: &str =
    "this build of covo has no hardware support (it was built without the `hal` feature)";

/// A board definition with its policy, and its hardware once opened.
pub struct Board {
    def: BoardDef,
    policy: BoardPolicy,
    hw: OnceLock<Result<Arc<Hardware>, String>>,
}

impl Board {
    /// The board named in config: a path to a TOML file, or `sim` (the default).
    pub fn load(spec: Option<&str>) -> Result<Board, BoardError> {
        let def = match spec {
            None | Some("sim") => BoardDef::sim(),
            Some(path) => BoardDef::load(Path::new(path))?,
        };
        Ok(Self::from_def(def))
    }

    /// A board from a parsed definition.
    pub fn from_def(def: BoardDef) -> Board {
        Board {
            policy: BoardPolicy::new(&def),
            def,
            hw: OnceLock::new(),
        }
    }

    /// A board whose hardware is already open (tests that script the sim).
    pub fn with_hardware(hw: Hardware) -> Board {
        let b = Self::from_def(hw.def().clone());
        let _ = b.hw.set(Ok(Arc::new(hw)));
        b
    }

    /// The definition.
    pub fn def(&self) -> &BoardDef {
        &self.def
    }

    /// The policy.
    pub fn policy(&self) -> &BoardPolicy {
        &self.policy
    }

    /// The hardware, opened on first use. An open failure is remembered and reported each time.
    pub fn hardware(&self) -> Result<Arc<Hardware>, String> {
        self.hw.get_or_init(|| open(&self.def)).clone()
    }

    /// The hardware if it has been opened (and opened well); never opens it.
    pub fn opened(&self) -> Option<Arc<Hardware>> {
        self.hw.get().and_then(|r| r.as_ref().ok()).cloned()
    }

    /// Why a tool that needs `part` cannot work on this board, if it cannot: the board declares
    /// nothing of its kind, or (on a Linux board, whose hardware this opens) none of it opened,
    /// with the open error as the reason.
    pub fn missing(&self, part: Part) -> Option<String> {
        if cfg!(not(feature = "hal")) {
            return Some(NO_HARDWARE.into());
        }
        let d = &self.def;
        let has_driver = |f: &dyn Fn(Driver) -> bool| d.device.iter().any(|x| f(x.driver));
        let declared = match part {
            Part::I2c if d.i2c.is_empty() => Some("this board declares no I2C bus".into()),
            Part::Spi if d.spi.is_empty() => Some("this board declares no SPI bus".into()),
            Part::Serial if d.serial.is_empty() => {
                Some("this board declares no serial port".into())
            }
            Part::Display if !has_driver(&|x| part.drives(x)) => {
                Some("this board declares no display".into())
            }
            Part::Sensors if !has_driver(&|x| part.drives(x)) => {
                Some("this board declares no sensor".into())
            }
            _ => None,
        };
        if declared.is_some() || d.board.backend == "sim" {
            return declared;
        }
        let kind = part.opens()?;
        let hw = match self.hardware() {
            Ok(hw) => hw,
            Err(e) => return Some(format!("the board did not open: {e}")),
        };
        if matches!(part, Part::Sensors | Part::Display) {
            // These need a device on a bus that opened.
            let reachable = d.device.iter().filter(|x| part.drives(x.driver)).any(|x| {
                x.bus
                    .or_else(|| d.default_i2c_bus())
                    .is_some_and(|b| hw.has_i2c_bus(b))
            });
            if reachable {
                return None;
            }
            let why = hw.unavailable(kind).unwrap_or("its I2C bus did not open");
            return Some(format!("no {} device's I2C bus opened: {why}", part.noun()));
        }
        hw.unavailable(kind).map(|why| why.to_string())
    }
}

/// A part of the board a hardware tool needs (`spec::Need::Board`): what [`Board::missing`]
/// checks the board declares and, on a Linux board, opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// An I2C bus.
    I2c,
    /// An SPI device.
    Spi,
    /// A serial port (declared; ports open per call).
    Serial,
    /// The GPIO chip.
    Gpio,
    /// A PWM channel.
    Pwm,
    /// A declared display (an SSD1306) on an I2C bus that opened.
    Display,
    /// A declared sensor on an I2C bus that opened.
    Sensors,
}

impl Part {
    /// The kind of hardware whose open errors `Hardware::unavailable` reports for this part,
    /// when the part needs anything opened.
    fn opens(self) -> Option<&'static str> {
        match self {
            Part::I2c | Part::Sensors | Part::Display => Some("i2c"),
            Part::Spi => Some("spi"),
            Part::Gpio => Some("gpio"),
            Part::Pwm => Some("pwm"),
            Part::Serial => None,
        }
    }

    /// Whether a declared device with this driver is one of this part's devices.
    fn drives(self, driver: Driver) -> bool {
        match self {
            Part::Display => driver == Driver::Ssd1306,
            Part::Sensors => driver.is_sensor(),
            _ => false,
        }
    }

    /// What a device of this part is called in a reason.
    fn noun(self) -> &'static str {
        match self {
            Part::Display => covo_core::catalog::display::TOOLSET,
            Part::Sensors => covo_core::catalog::sensors::TOOLSET,
            _ => "",
        }
    }
}

/// The board's hardware, opened from its definition.
#[cfg(feature = "hal")]
fn open(def: &BoardDef) -> Result<Arc<Hardware>, String> {
    let hw = Hardware::open(def.clone()).map_err(|e| e.to_string())?;
    // Benchmarks of a whole `covo` process (tests/bench/mcp.sh) measure dispatch without
    // device time, as the in-process benches do: the sim's devices convert at once, so its
    // drivers may skip their waits. Never on real hardware.
    if def.board.backend == "sim"
        && std::env::var_os("COVO_SIM_NO_DELAYS").is_some_and(|v| v == "1")
    {
        hw.skip_driver_delays(true);
    }
    Ok(Arc::new(hw))
}

/// A build without the HAL opens nothing.
#[cfg(not(feature = "hal"))]
fn open(_def: &BoardDef) -> Result<Arc<Hardware>, String> {
    Err(NO_HARDWARE.into())
}

/// A name the board does not have (a device, pin, bus or port a call gives), as the error the
/// model sees: what the board declares instead, and where to look.
pub fn not_found(tool: &str, message: String) -> ToolError {
    ToolError::Failed {
        tool: tool.into(),
        message,
        hint: Some("board_info and device_list show what this board has".into()),
    }
}

/// One thing a hardware call touches on the board, computed from the call's typed arguments
/// (`spec::ToolArgs::access`) after the names the board declares are resolved. The executor
/// receives the same typed value, so what the policy judges is what reaches the bus
/// (`gateway/tests/integration/typed_access.rs` compares these with the sim's transfer log).
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// One I2C transaction at `address`: `written` bytes, then (after a repeated start) `read`
    /// bytes. It is a read when it reads and writes at most a register pointer
    /// ([`POINTER_BYTES`]); anything else writes (a pure write, even of one command byte, or
    /// a zero-length transfer, which some devices take as a command).
    I2c {
        /// The bus number (`None` only when the board declares no I2C bus).
        bus: Option<u8>,
        /// The 7-bit address.
        address: u8,
        /// Bytes written.
        written: usize,
        /// Bytes read.
        read: usize,
    },
    /// Clocks bytes through an SPI device (SPI always writes).
    Spi {
        /// The bus.
        bus: u8,
        /// The chip-select.
        cs: u8,
        /// Bytes clocked out (and in).
        bytes: usize,
    },
    /// Drives a GPIO line as an output.
    GpioOutput {
        /// BCM line number.
        pin: u32,
    },
    /// Sets a PWM channel.
    Pwm {
        /// The channel.
        channel: u32,
        /// Frequency in Hz.
        frequency_hz: f64,
        /// Duty cycle, 0..=1 (negative when missing: refused by the limits).
        duty: f64,
    },
    /// Writes to a serial port.
    SerialWrite {
        /// The port's declared name (a call may name its path).
        port: String,
        /// Bytes written.
        bytes: usize,
    },
    /// Drives a microcontroller's GPIO pin.
    McuOutput {
        /// The MCU device.
        device: String,
        /// Its pin.
        pin: u8,
    },
    /// Sets a microcontroller's PWM pin.
    McuPwm {
        /// The MCU device.
        device: String,
        /// Its pin.
        pin: u8,
        /// Frequency in Hz.
        frequency_hz: f64,
        /// Duty cycle.
        duty: f64,
    },
    /// One reading of a declared I2C sensor: its driver writes commands to the chip to
    /// measure (`Driver::footprint`), so it is a write as far as `read_only`
    /// is concerned, though the bytes are the driver's, never the caller's.
    SensorMeasure {
        /// The declared sensor.
        sensor: String,
        /// Its driver.
        driver: Driver,
        /// The bus number.
        bus: Option<u8>,
        /// The 7-bit address.
        address: Option<u8>,
        /// Bytes in the largest single transfer (write or read).
        bytes: usize,
        /// What the driver writes to measure.
        writes: &'static str,
    },
    /// An I2C transaction through a microcontroller.
    McuI2c {
        /// The MCU device.
        device: String,
        /// The 7-bit address.
        address: u8,
        /// Bytes written.
        written: usize,
        /// Bytes read.
        read: usize,
    },
    /// Writes a new firmware image into a microcontroller's flash (after rebooting it into its
    /// bootloader): everything it runs changes.
    McuFlash {
        /// The MCU device.
        device: String,
    },
}

/// The most bytes a combined write-then-read may write and still be a read: one register
/// pointer byte, which selects what to read and changes nothing on the device. A longer write
/// part (a register address and a value, a command with arguments) is a write.
pub const POINTER_BYTES: usize = 1;

impl Access {
    /// Whether this access writes to the board or drives anything on it: everything but an
    /// I2C read (which may send a one-byte register pointer) and an MCU I2C transfer that only
    /// reads. Gateway-wide policies use it to judge a call by what it does, not by its tool's
    /// effect.
    pub fn writes(&self) -> bool {
        match self {
            Access::I2c { written, read, .. } => !(*read > 0 && *written <= POINTER_BYTES),
            Access::McuI2c { written, .. } => *written > 0,
            // A sensor driver writes commands to take a reading.
            Access::SensorMeasure { .. } => true,
            _ => true,
        }
    }
}

impl Board {
    /// Judges one access against the board policy.
    pub fn check(&self, access: &Access) -> Result<(), Refusal> {
        let p = &self.policy;
        match access {
            Access::I2c {
                bus,
                address,
                written,
                read,
            } => {
                let judged = if !access.writes() {
                    p.check_address(*address)
                } else {
                    match bus {
                        Some(b) => p.check_i2c_write(*b, *address),
                        // The executor refuses a board without a bus; a read-only board
                        // refuses it first.
                        None => p.check_writable().and_then(|_| p.check_address(*address)),
                    }
                };
                judged.and_then(|_| p.check_transfer((*written).max(*read)))
            }
            Access::Spi { bytes, .. } => p.check_writable().and_then(|_| p.check_transfer(*bytes)),
            Access::GpioOutput { pin } => p.check_output(*pin),
            Access::Pwm {
                channel,
                frequency_hz,
                duty,
            } => p.check_pwm(*channel, *frequency_hz, *duty),
            // The port is its declared name: the call's path was resolved when it was parsed.
            Access::SerialWrite { port, bytes } => p
                .check_serial_write(port)
                .and_then(|_| p.check_transfer(*bytes)),
            Access::SensorMeasure {
                sensor,
                driver,
                bus,
                address,
                bytes,
                writes,
            } => {
                if self.def.policy.read_only {
                    return Err(Refusal {
                        rule: "board.read_only",
                        detail: format!(
                            "the board policy is read-only, and reading sensor '{sensor}' \
                             writes to it: the {driver} driver sends {writes} for every reading"
                        ),
                    });
                }
                match (bus, address) {
                    (Some(b), Some(a)) => p
                        .check_i2c_write(*b, *a)
                        .and_then(|_| p.check_transfer(*bytes)),
                    _ => p.check_writable(),
                }
            }
            Access::McuOutput { device, pin } => p.check_mcu_output(device, *pin),
            Access::McuPwm {
                device,
                pin,
                frequency_hz,
                duty,
            } => p.check_mcu_pwm(device, *pin, *frequency_hz, *duty),
            Access::McuI2c {
                device,
                address,
                written,
                read,
            } => p
                .check_mcu_i2c(device, *address, *written > 0)
                .and_then(|_| p.check_transfer((*written).max(*read))),
            // The device was resolved to a declared mcu when the call was parsed; approval is
            // the tool's effect (destructive), so what is left here is a read-only board.
            Access::McuFlash { device } => p.check_writable().map_err(|r| Refusal {
                detail: format!("{}: mcu_flash would rewrite '{device}'", r.detail),
                ..r
            }),
        }
    }
}

/// The hardware of a build without the HAL: a type with no values, so nothing is ever opened.
/// It has the few methods the HAL-free modules call on an opened board ([`Board`] itself, the
/// dashboard's and Home Assistant's states, `device_list`'s probe); each is unreachable.
#[cfg(not(feature = "hal"))]
mod no_hal {
    use covo_board::board::BoardDef;
    use std::convert::Infallible;

    /// No hardware: no value of this type exists.
    #[derive(Debug)]
    pub enum Hardware {}

    impl Hardware {
        /// Never called: there is no hardware.
        pub fn def(&self) -> &BoardDef {
            match *self {}
        }

        /// Never called: there is no hardware.
        pub fn has_i2c_bus(&self, _bus: u8) -> bool {
            match *self {}
        }

        /// Never called: there is no hardware.
        pub fn unavailable(&self, _kind: &str) -> Option<&str> {
            match *self {}
        }

        /// Never called: there is no hardware.
        pub fn i2c_read(&self, _bus: u8, _address: u8, _n: usize) -> Result<Vec<u8>, Infallible> {
            match *self {}
        }

        /// Never called: there is no hardware.
        pub fn gpio_read(&self, _pin: u32) -> Result<bool, Infallible> {
            match *self {}
        }

        /// Never called: there is no hardware.
        pub fn gpio_output_level(&self, _pin: u32) -> Result<bool, Infallible> {
            match *self {}
        }

        /// Never called: there is no hardware.
        pub fn gpio_write_count(&self) -> u64 {
            match *self {}
        }

        /// Never called: there is no hardware.
        pub fn pwm_get(&self, _channel: u32) -> Option<(f64, f64)> {
            match *self {}
        }
    }
}
