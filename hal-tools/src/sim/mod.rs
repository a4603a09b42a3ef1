//! The simulated board: the devices of `boards/sim.toml`, modelled at register level behind the
//! same traits as the Linux backends, so crates.io drivers run on it unchanged. It is also the
//! mock HAL for hardware-in-the-loop tests: faults, edges and the room are scriptable.
//!
//! | device | where | model |
//! |---|---|---|
//! | climate | I2C bus 1, 0x76 | BME280 registers, calibration, forced and normal mode |
//! | light | I2C bus 1, 0x23 | BH1750 opcodes, resolutions, MTreg, conversion time |
//! | oled | I2C bus 1, 0x3C | SSD1306 commands and its 128×64 GDDRAM |
//! | relay | GPIO17 | output with a write history |
//! | button | GPIO27 | input, pulled up; `press` pulls it low and releases it |
//! | fan | PWM channel 0 | frequency and duty |
//! | echo | serial | echoes; answers `AT` with `OK` |
//! | (declared with `path = "sim:loopback"`) | SPI | loopback, with a transfer log |

mod bh1750;
mod bme280;
mod env;
mod gpio;
mod i2c;
mod pwm;
mod serial;
mod spi;
mod ssd1306;

pub use bh1750::Bh1750Model;
pub use bme280::{Bme280Model, Calibration};
pub use env::Environment;
pub use gpio::SimLine;
pub use i2c::{Fault, SimI2c, Transfer, TRANSFER_LOG_LEN};
pub use pwm::SimPwm;
pub use serial::SimSerial;
pub use spi::{SimSpi, SpiTransfer, LOOPBACK_PATH};
pub use ssd1306::{OledStatus, Ssd1306Model};

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The simulated board; clones share every device.
#[derive(Debug, Clone)]
pub struct SimBoard {
    i2c: SimI2c,
    gpio: Arc<gpio::Gpio>,
    fan: SimPwm,
    echo: Arc<serial::Shared>,
    spi: spi::SpiLog,
}

impl SimBoard {
    /// The only I2C bus.
    pub const I2C_BUS: u8 = 1;
    /// The BME280's address.
    pub const BME280_ADDRESS: u8 = 0x76;
    /// The BH1750's address.
    pub const BH1750_ADDRESS: u8 = 0x23;
    /// The SSD1306's address.
    pub const SSD1306_ADDRESS: u8 = 0x3C;
    /// The relay output.
    pub const RELAY_PIN: u32 = 17;
    /// The button input (pulled up, pressed is low).
    pub const BUTTON_PIN: u32 = 27;
    /// The fan's PWM channel.
    pub const FAN_CHANNEL: u32 = 0;
    /// The serial port's name.
    pub const SERIAL_ECHO: &'static str = "echo";

    /// The standard sim devices, in a drifting room, with no faults.
    pub fn new() -> SimBoard {
        let gpio = Arc::new(gpio::Gpio::default());
        gpio.declare_input(Self::BUTTON_PIN, true);
        SimBoard {
            i2c: SimI2c {
                state: Arc::new(Mutex::new(i2c::BusState::new())),
            },
            gpio,
            fan: SimPwm::new(Self::FAN_CHANNEL),
            echo: serial::Shared::new(),
            spi: spi::SpiLog::default(),
        }
    }

    /// A handle on I2C bus `bus` (only bus 1 exists).
    pub fn i2c(&self, bus: u8) -> Option<SimI2c> {
        (bus == Self::I2C_BUS).then(|| self.i2c.clone())
    }

    /// A handle on GPIO `pin` (2..=27); it sees edges from now on.
    pub fn line(&self, pin: u32) -> Option<SimLine> {
        gpio::PINS
            .contains(&pin)
            .then(|| SimLine::new(pin, self.gpio.clone()))
    }

    /// PWM channel `channel` (only 0, the fan).
    pub fn pwm(&self, channel: u32) -> Option<SimPwm> {
        (channel == Self::FAN_CHANNEL).then(|| self.fan.clone())
    }

    /// The serial port called `name` (only `echo`).
    pub fn serial(&self, name: &str) -> Option<SimSerial> {
        (name == Self::SERIAL_ECHO).then(|| SimSerial::new(name, self.echo.clone()))
    }

    /// A loopback SPI device at `bus`.`cs` (any: the board file decides which exist, by
    /// declaring them with `path = "sim:loopback"`).
    pub fn spi(&self, bus: u8, cs: u8) -> SimSpi {
        SimSpi::new(bus, cs, self.spi.clone())
    }

    /// Every SPI transaction on the simulated devices, oldest first (the last
    /// [`TRANSFER_LOG_LEN`]).
    pub fn spi_transfers(&self) -> Vec<SpiTransfer> {
        self.spi.all()
    }

    /// Forgets the SPI log.
    pub fn clear_spi_transfers(&self) {
        self.spi.clear()
    }

    /// Adds a fault on the I2C bus.
    pub fn inject(&self, fault: Fault) {
        self.i2c.lock().inject(fault);
    }

    /// The I2C transfer log, oldest first (see [`SimI2c::transfers`]).
    pub fn i2c_transfers(&self) -> Vec<Transfer> {
        self.i2c.transfers()
    }

    /// Removes every fault, including a stuck line.
    pub fn clear_faults(&self) {
        self.i2c.lock().clear_faults();
    }

    /// Fixes the room (what the sensors measure) until `release_environment`.
    pub fn set_environment(&self, env: Environment) {
        self.i2c.lock().env.fix(Some(env));
    }

    /// Lets the room drift again.
    pub fn release_environment(&self) {
        self.i2c.lock().env.fix(None);
    }

    /// The room now.
    pub fn environment(&self) -> Environment {
        self.i2c.lock().env.at(Instant::now())
    }

    /// The OLED as text: 64 lines of 128 characters, `#` lit and `.` dark, each line ending in
    /// `\n`, top row first, as a viewer sees the module (GDDRAM through the segment remap and
    /// COM scan direction; display on/off and inversion are in `oled_status`).
    pub fn framebuffer_text(&self) -> String {
        self.i2c.lock().devices.ssd1306.text()
    }

    /// The OLED as an 8-bit grayscale 128×64 PNG, lit pixels white.
    pub fn framebuffer_png(&self) -> Vec<u8> {
        self.i2c.lock().devices.ssd1306.png()
    }

    /// How many OLED pixels are lit.
    pub fn framebuffer_lit(&self) -> usize {
        self.framebuffer_text()
            .chars()
            .filter(|c| *c == '#')
            .count()
    }

    /// Display on/off, contrast, inversion.
    pub fn oled_status(&self) -> OledStatus {
        self.i2c.lock().devices.ssd1306.status()
    }

    /// Drives an input from outside; an edge is recorded when the level changes.
    ///
    /// # Panics
    /// When `pin` is not 2..=27.
    pub fn set_input(&self, pin: u32, level: bool) {
        self.gpio.set_input(pin, level);
    }

    /// A button press: the line falls (pulled low), then rises (released).
    ///
    /// # Panics
    /// When `pin` is not 2..=27.
    pub fn press(&self, pin: u32) {
        self.gpio.press(pin);
    }

    /// One edge, whatever the level was; the level follows it.
    ///
    /// # Panics
    /// When `pin` is not 2..=27.
    pub fn inject_edge(&self, pin: u32, rising: bool) {
        self.gpio.inject_edge(pin, rising);
    }

    /// The level of `pin` now.
    ///
    /// # Panics
    /// When `pin` is not 2..=27.
    pub fn level(&self, pin: u32) -> bool {
        self.gpio.level(pin)
    }

    /// Every write to `pin` as an output, with when it happened.
    ///
    /// # Panics
    /// When `pin` is not 2..=27.
    pub fn output_log(&self, pin: u32) -> Vec<(Instant, bool)> {
        self.gpio.output_log(pin)
    }
}

impl Default for SimBoard {
    fn default() -> Self {
        Self::new()
    }
}
