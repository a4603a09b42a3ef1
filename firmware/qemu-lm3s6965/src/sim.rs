//! A board simulated in RAM, so the gateway can exercise every request against QEMU.
//!
//! - Pins 0..=15. A pin in `Output` reads back its own level. A pin configured as an input reads
//!   its jumpered partner (0↔1, 2↔3, …) when that partner is an output, otherwise its pull
//!   (pull-up high, pull-down and floating low).
//! - ADC channels 0..=3, 10 bits, 3000 mV reference, computed from the uptime:
//!   0 a triangle of period 2048 ms, 1 a fixed 512 (mid-scale), 2 noise around 300 (±15),
//!   3 a ramp of one count per second.
//! - PWM on every pin, 1 Hz..=1 MHz, duty 0..=1000 ‰; setting it switches the pin to `Pwm`.
//! - I2C: one device at 0x48 holding 256 byte registers, with TMP102-like contents at reset
//!   (register 0 = 25.0 °C). A write sets the register pointer from its first byte and stores the
//!   rest from there; a read continues from the pointer. Every other address NACKs.

use covo_mcu_core::Board;
use covo_mcu_protocol::{DeviceError, DeviceInfo, PinCaps, PinMode};

const PINS: u8 = 16;
const ADC_CHANNELS: u8 = 4;
const ADC_BITS: u8 = 10;
const PWM_HZ: core::ops::RangeInclusive<u32> = 1..=1_000_000;
const I2C_ADDRESS: u8 = 0x48;

const fn bit(mode: PinMode) -> u8 {
    1 << mode as u8
}

const PIN_MODES: u8 = bit(PinMode::Input)
    | bit(PinMode::InputPullUp)
    | bit(PinMode::InputPullDown)
    | bit(PinMode::Output)
    | bit(PinMode::Pwm);

#[derive(Clone, Copy)]
struct Pin {
    mode: PinMode,
    level: bool,
}

/// The simulated board.
pub struct SimBoard {
    pins: [Pin; PINS as usize],
    pwm: [(u32, u16); PINS as usize],
    noise: u32,
    i2c: covo_mcu_core::RegisterFile,
}

impl SimBoard {
    /// Every pin a floating input, PWM off, the I2C device at its reset contents.
    pub fn new() -> Self {
        let mut i2c_regs = [0u8; 256];
        // TMP102 layout: temperature 25.0 °C, config 0x60A0, T_low 75 °C, T_high 80 °C.
        i2c_regs[..8].copy_from_slice(&[0x19, 0x00, 0x60, 0xA0, 0x4B, 0x00, 0x50, 0x00]);
        Self {
            pins: [Pin {
                mode: PinMode::Input,
                level: false,
            }; PINS as usize],
            pwm: [(0, 0); PINS as usize],
            noise: 0x1234_5678,
            i2c: covo_mcu_core::RegisterFile::new(i2c_regs),
        }
    }

    fn pin(&self, pin: u8) -> Result<&Pin, DeviceError> {
        self.pins
            .get(pin as usize)
            .ok_or(DeviceError::UnknownPin(pin))
    }
}

impl Board for SimBoard {
    fn info(&self) -> DeviceInfo {
        let mut info = DeviceInfo {
            firmware: Default::default(),
            board: Default::default(),
            uptime_ms: self.uptime_ms(),
            pins: Default::default(),
            adc_channels: ADC_CHANNELS,
            adc_bits: ADC_BITS,
            adc_vref_mv: 3000,
            pwm: true,
            i2c: true,
        };
        // Both fit in 16 bytes.
        // The name stored in the image's stamp, so what the device reports is what the gateway
        // read from the file before it flashed it.
        let _ = info
            .firmware
            .push_str(covo_mcu_protocol::stamped_name(&crate::STAMP));
        let _ = info.board.push_str("lm3s6965-qemu");
        for pin in 0..PINS {
            let _ = info.pins.push(PinCaps {
                pin,
                modes: PIN_MODES,
            });
        }
        info
    }

    fn uptime_ms(&self) -> u32 {
        crate::uptime_ms()
    }

    fn gpio_mode(&mut self, pin: u8, mode: PinMode) -> Result<(), DeviceError> {
        self.pin(pin)?;
        if PIN_MODES & bit(mode) == 0 {
            return Err(DeviceError::UnsupportedMode);
        }
        let p = &mut self.pins[pin as usize];
        p.mode = mode;
        if mode != PinMode::Output {
            p.level = false;
        }
        Ok(())
    }

    fn gpio_read(&mut self, pin: u8) -> Result<bool, DeviceError> {
        let p = *self.pin(pin)?;
        let partner = self.pins[(pin ^ 1) as usize];
        Ok(match p.mode {
            PinMode::Output => p.level,
            PinMode::Pwm => self.pwm[pin as usize].1 >= 500,
            _ if partner.mode == PinMode::Output => partner.level,
            PinMode::InputPullUp => true,
            _ => false,
        })
    }

    fn gpio_write(&mut self, pin: u8, high: bool) -> Result<(), DeviceError> {
        self.pin(pin)?;
        let p = &mut self.pins[pin as usize];
        if p.mode != PinMode::Output {
            return Err(DeviceError::UnsupportedMode);
        }
        p.level = high;
        Ok(())
    }

    fn adc_read(&mut self, channel: u8) -> Result<u16, DeviceError> {
        let t = self.uptime_ms();
        Ok(match channel {
            0 => {
                let phase = (t % 2048) as u16;
                if phase < 1024 {
                    phase
                } else {
                    2047 - phase
                }
            }
            1 => 512,
            2 => {
                // Numerical Recipes LCG: cheap, and good enough for jitter.
                self.noise = self
                    .noise
                    .wrapping_mul(1_664_525)
                    .wrapping_add(1_013_904_223);
                285 + (self.noise >> 16) as u16 % 31
            }
            3 => ((t / 1000) % 1024) as u16,
            _ => return Err(DeviceError::AdcChannel(channel)),
        })
    }

    fn pwm_set(
        &mut self,
        pin: u8,
        frequency_hz: u32,
        duty_permille: u16,
    ) -> Result<(u32, u16), DeviceError> {
        self.pin(pin)?;
        if !PWM_HZ.contains(&frequency_hz) || duty_permille > 1000 {
            return Err(DeviceError::PwmRange);
        }
        self.pins[pin as usize] = Pin {
            mode: PinMode::Pwm,
            level: false,
        };
        self.pwm[pin as usize] = (frequency_hz, duty_permille);
        Ok((frequency_hz, duty_permille))
    }

    fn i2c_transfer(
        &mut self,
        address: u8,
        write: &[u8],
        read: &mut [u8],
    ) -> Result<(), DeviceError> {
        if address != I2C_ADDRESS {
            return Err(DeviceError::I2cNack(address));
        }
        self.i2c.transfer(write, read);
        Ok(())
    }
}
