//! `SimBoard`: an in-memory RP2040-like board, the host simulation of a covo firmware.
//!
//! - GPIO 0..=28, every pin Input/InputPullUp/InputPullDown/Output/Pwm, 26..=28 also Analog.
//!   Outputs loop back to reads; inputs read what [`SimBoard::set_input`] drove, else their pull.
//!   GPIO 25 is the LED ([`SimBoard::led`]).
//! - ADC 0..=3 (GPIO 26..=29 on an RP2040): deterministic values drifting slowly with uptime;
//!   channel 4 is the internal temperature sensor (about 27 °C by the RP2040's formula).
//! - PWM on any pin in Pwm mode, 8 Hz ..= 1 MHz.
//! - I2C: one device at [`SIM_I2C_ADDRESS`] with 256 registers behind an auto-incrementing
//!   pointer (the first byte written sets it); every other address NACKs.

use std::time::Instant;

use covo_mcu_protocol::{heapless::String, DeviceError, DeviceInfo, PinCaps, PinMode, NAME_LEN};

use crate::Board;

/// Number of GPIOs (0..=28).
pub const SIM_PINS: u8 = 29;
/// The LED pin, as on a Pico.
pub const LED_PIN: u8 = 25;
/// Address of the simulated I2C device.
pub const SIM_I2C_ADDRESS: u8 = 0x48;
/// Channel of the internal temperature sensor.
pub const TEMP_CHANNEL: u8 = 4;
/// ADC channels, including the temperature sensor.
pub const ADC_CHANNELS: u8 = 5;

#[derive(Clone, Copy, Debug, Default)]
struct Pin {
    mode: Option<PinMode>,
    output: bool,
    external: Option<bool>,
    pwm: Option<(u32, u16)>,
}

/// Where uptime comes from.
#[derive(Clone, Copy, Debug)]
enum Clock {
    Real(Instant),
    Manual(u32),
}

/// An in-memory board; see the module docs for what it simulates.
#[derive(Clone, Debug)]
pub struct SimBoard {
    pins: [Pin; SIM_PINS as usize],
    clock: Clock,
    i2c: crate::RegisterFile,
    firmware: String<NAME_LEN>,
    bootloader: bool,
}

/// The name a fresh [`SimBoard`] reports: `covo-sim` and this crate's version.
pub const SIM_FIRMWARE: &str = concat!("covo-sim ", env!("CARGO_PKG_VERSION"));

impl Default for SimBoard {
    fn default() -> Self {
        Self::new()
    }
}

impl SimBoard {
    /// A board whose uptime is wall-clock time since creation.
    pub fn new() -> Self {
        let mut i2c_regs = [0u8; 256];
        for (i, r) in i2c_regs.iter_mut().enumerate() {
            *r = i as u8;
        }
        // Registers 0..2 read as a TMP102-style temperature: 25.0 °C.
        i2c_regs[0] = 0x19;
        i2c_regs[1] = 0x00;
        SimBoard {
            pins: [Pin::default(); SIM_PINS as usize],
            clock: Clock::Real(Instant::now()),
            i2c: crate::RegisterFile::new(i2c_regs),
            firmware: String::try_from(SIM_FIRMWARE).unwrap_or_default(),
            bootloader: false,
        }
    }

    /// Reports `name` as its firmware from now on (cut to [`NAME_LEN`] bytes), as a board
    /// flashed with another image would.
    pub fn set_firmware(&mut self, name: &str) {
        let mut end = name.len().min(NAME_LEN);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        self.firmware = String::try_from(&name[..end]).unwrap_or_default();
    }

    /// Whether [`crate::Device`] accepts a bootloader request (the pty simulation with a
    /// BOOTSEL drive sets it).
    pub fn set_bootloader(&mut self, bootloader: bool) {
        self.bootloader = bootloader;
    }

    /// A board whose uptime only moves with [`SimBoard::advance_ms`], for deterministic tests.
    pub fn with_manual_clock() -> Self {
        SimBoard {
            clock: Clock::Manual(0),
            ..Self::new()
        }
    }

    /// Moves a manual clock forward (no effect on a real one).
    pub fn advance_ms(&mut self, ms: u32) {
        if let Clock::Manual(t) = &mut self.clock {
            *t = t.wrapping_add(ms);
        }
    }

    /// Drives an input from outside, as a button or sensor would; `None` leaves it to its pull.
    pub fn set_input(&mut self, pin: u8, level: Option<bool>) {
        if let Some(p) = self.pins.get_mut(pin as usize) {
            p.external = level;
        }
    }

    /// Whether the LED (GPIO 25) is lit.
    pub fn led(&self) -> bool {
        let p = self.pins[LED_PIN as usize];
        p.mode == Some(PinMode::Output) && p.output
    }

    /// The PWM setting of a pin, if it has one.
    pub fn pwm(&self, pin: u8) -> Option<(u32, u16)> {
        self.pins.get(pin as usize).and_then(|p| p.pwm)
    }

    /// The simulated I2C device's registers.
    pub fn i2c_registers(&mut self) -> &mut [u8; 256] {
        &mut self.i2c.regs
    }

    fn pin(&mut self, pin: u8) -> Result<&mut Pin, DeviceError> {
        self.pins
            .get_mut(pin as usize)
            .ok_or(DeviceError::UnknownPin(pin))
    }

    fn modes(pin: u8) -> u8 {
        let digital = PinMode::Input.bit()
            | PinMode::InputPullUp.bit()
            | PinMode::InputPullDown.bit()
            | PinMode::Output.bit()
            | PinMode::Pwm.bit();
        if (26..=28).contains(&pin) {
            digital | PinMode::Analog.bit()
        } else {
            digital
        }
    }
}

impl Board for SimBoard {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            firmware: self.firmware.clone(),
            board: String::try_from("sim-rp2040").unwrap_or_default(),
            uptime_ms: self.uptime_ms(),
            pins: (0..SIM_PINS)
                .map(|pin| PinCaps {
                    pin,
                    modes: Self::modes(pin),
                })
                .collect(),
            adc_channels: ADC_CHANNELS,
            adc_bits: 12,
            adc_vref_mv: 3300,
            pwm: true,
            i2c: true,
        }
    }

    fn bootloader(&self) -> bool {
        self.bootloader
    }

    fn uptime_ms(&self) -> u32 {
        match self.clock {
            Clock::Real(start) => start.elapsed().as_millis() as u32,
            Clock::Manual(t) => t,
        }
    }

    fn gpio_mode(&mut self, pin: u8, mode: PinMode) -> Result<(), DeviceError> {
        if pin >= SIM_PINS {
            return Err(DeviceError::UnknownPin(pin));
        }
        if Self::modes(pin) & mode.bit() == 0 {
            return Err(DeviceError::UnsupportedMode);
        }
        let p = self.pin(pin)?;
        p.mode = Some(mode);
        if mode != PinMode::Pwm {
            p.pwm = None;
        }
        Ok(())
    }

    fn gpio_read(&mut self, pin: u8) -> Result<bool, DeviceError> {
        let p = *self.pin(pin)?;
        match p.mode {
            Some(PinMode::Output) => Ok(p.output),
            Some(PinMode::Pwm) => Ok(p.pwm.is_some_and(|(_, duty)| duty >= 500)),
            Some(PinMode::Analog) => Err(DeviceError::UnsupportedMode),
            Some(PinMode::InputPullUp) => Ok(p.external.unwrap_or(true)),
            // Unconfigured pins reset to inputs, as on the RP2040.
            Some(PinMode::Input) | Some(PinMode::InputPullDown) | None => {
                Ok(p.external.unwrap_or(false))
            }
        }
    }

    fn gpio_write(&mut self, pin: u8, high: bool) -> Result<(), DeviceError> {
        let p = self.pin(pin)?;
        if p.mode != Some(PinMode::Output) {
            return Err(DeviceError::UnsupportedMode);
        }
        p.output = high;
        Ok(())
    }

    fn adc_read(&mut self, channel: u8) -> Result<u16, DeviceError> {
        let t = self.uptime_ms();
        match channel {
            0..=3 => {
                // A triangle wave of period 20 s between 1000 and 3000, phase-shifted per
                // channel: slow enough to look like a sensor, deterministic for a given time.
                let phase = (t / 10).wrapping_add(channel as u32 * 500) % 2000;
                let tri = if phase < 1000 { phase } else { 2000 - phase };
                Ok(1000 + 2 * tri as u16)
            }
            TEMP_CHANNEL => {
                // RP2040: T = 27 - (V - 0.706) / 0.001721. 0.706 V at 3.3 V / 12 bit is 876;
                // ±2 counts of drift is about ±1 °C.
                let wobble = ((t / 1000) % 5) as u16;
                Ok(874 + wobble)
            }
            _ => Err(DeviceError::AdcChannel(channel)),
        }
    }

    fn pwm_set(
        &mut self,
        pin: u8,
        frequency_hz: u32,
        duty_permille: u16,
    ) -> Result<(u32, u16), DeviceError> {
        let p = self.pin(pin)?;
        if p.mode != Some(PinMode::Pwm) {
            return Err(DeviceError::UnsupportedMode);
        }
        if frequency_hz == 0 {
            p.pwm = None;
            return Ok((0, 0));
        }
        if !(8..=1_000_000).contains(&frequency_hz) || duty_permille > 1000 {
            return Err(DeviceError::PwmRange);
        }
        p.pwm = Some((frequency_hz, duty_permille));
        Ok((frequency_hz, duty_permille))
    }

    fn i2c_transfer(
        &mut self,
        address: u8,
        write: &[u8],
        read: &mut [u8],
    ) -> Result<(), DeviceError> {
        if address != SIM_I2C_ADDRESS {
            return Err(DeviceError::I2cNack(address));
        }
        self.i2c.transfer(write, read);
        Ok(())
    }
}
