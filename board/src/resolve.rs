//! What a tool's arguments name, resolved against the board definition alone (no hardware is
//! opened): a declared device's pin, a PWM device's channel, the default I2C bus, a serial port
//! by name or path, the SPI device a bus and chip-select pick, the MCU a call means. The
//! gateway resolves a call's arguments once with these (`covo::spec::ToolArgs`), the board
//! policy judges the result, and the executor hands the same numbers to the hardware
//! (`covo_hal_tools::hw::Hardware`, which turns a [`ResolveError`] into its own `NotFound`).

use crate::board::{BoardDef, DeviceDef, SerialDef, SpiDef};
use crate::driver::Driver;
use crate::values::PinRef;

/// A name a call gives that the board definition does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The board declares no such bus, pin, channel, port, device or microcontroller; the
    /// message says what it does declare.
    #[error("{0}")]
    NotFound(String),
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

impl BoardDef {
    /// The declared device called `name`, or an error listing the declared ones.
    pub fn find_device(&self, name: &str) -> Result<&DeviceDef, ResolveError> {
        self.device(name).ok_or_else(|| {
            ResolveError::NotFound(format!(
                "no device '{name}' is declared (declared: {})",
                names(self.device.iter().map(|d| d.name.as_str()))
            ))
        })
    }

    /// A pin argument as a BCM number: numbers must be on the board, names must be declared
    /// devices with a pin.
    pub fn resolve_pin(&self, p: &PinRef) -> Result<u32, ResolveError> {
        match p {
            PinRef::Number(n) => {
                if self.pins.available.is_empty() || self.pins.available.contains(n) {
                    Ok(*n)
                } else {
                    Err(ResolveError::NotFound(format!(
                        "GPIO{n} is not available on this board"
                    )))
                }
            }
            PinRef::Name(name) => {
                let d = self.find_device(name)?;
                d.pin.ok_or_else(|| {
                    ResolveError::NotFound(format!("'{name}' ({}) is not a GPIO device", d.driver))
                })
            }
        }
    }

    /// A PWM channel argument: a number, or a declared `pwm` device's name.
    pub fn resolve_channel(&self, p: &PinRef) -> Result<u32, ResolveError> {
        match p {
            PinRef::Number(n) => Ok(*n),
            PinRef::Name(name) => {
                let d = self.find_device(name)?;
                d.channel.ok_or_else(|| {
                    ResolveError::NotFound(format!("'{name}' ({}) is not a PWM device", d.driver))
                })
            }
        }
    }

    /// The I2C bus a call names, else the board's first.
    pub fn resolve_i2c_bus(&self, bus: Option<u8>) -> Result<u8, ResolveError> {
        bus.or_else(|| self.default_i2c_bus())
            .ok_or_else(|| ResolveError::NotFound("this board declares no I2C bus".into()))
    }

    /// The SPI device a bus and chip-select pick (either may be left out when only one
    /// declared device matches the rest).
    pub fn resolve_spi(&self, bus: Option<u8>, cs: Option<u8>) -> Result<&SpiDef, ResolveError> {
        self.spi
            .iter()
            .find(|d| bus.is_none_or(|b| b == d.bus) && cs.is_none_or(|c| c == d.cs))
            .ok_or_else(|| {
                ResolveError::NotFound("no such SPI bus/chip-select on this board".into())
            })
    }

    /// The declared serial port with this name or path.
    pub fn resolve_serial(&self, port: &str) -> Result<&SerialDef, ResolveError> {
        self.serial
            .iter()
            .find(|s| s.name == port || s.path.as_deref() == Some(port))
            .ok_or_else(|| {
                ResolveError::NotFound(format!(
                    "serial port '{port}' is not declared on this board (declared: {})",
                    names(self.serial.iter().map(|s| s.name.as_str()))
                ))
            })
    }

    /// The declared microcontrollers.
    pub fn mcu_devices(&self) -> impl Iterator<Item = &DeviceDef> {
        self.device.iter().filter(|d| d.driver == Driver::Mcu)
    }

    /// The MCU device a call means: the named one, or the only one.
    pub fn resolve_mcu(&self, name: Option<&str>) -> Result<&DeviceDef, ResolveError> {
        match name {
            Some(n) => self.mcu_devices().find(|d| d.name == n).ok_or_else(|| {
                ResolveError::NotFound(format!("no microcontroller '{n}' is declared"))
            }),
            None => {
                let all: Vec<&DeviceDef> = self.mcu_devices().collect();
                match all.as_slice() {
                    [one] => Ok(one),
                    [] => Err(ResolveError::NotFound(
                        "this board declares no microcontroller".into(),
                    )),
                    many => Err(ResolveError::NotFound(format!(
                        "several microcontrollers are declared; name one of: {}",
                        names(many.iter().map(|d| d.name.as_str()))
                    ))),
                }
            }
        }
    }

    /// The display drawing goes to: the board's first SSD1306.
    pub fn default_display(&self) -> Result<&DeviceDef, ResolveError> {
        self.device
            .iter()
            .find(|d| d.driver == Driver::Ssd1306)
            .ok_or_else(|| ResolveError::NotFound("this board declares no display".into()))
    }
}
