//! A ROHM BH1750FVI ambient light sensor modelled at opcode level.
//!
//! Writes are one-byte instructions; a read returns the 16-bit count, big-endian, where
//! count = lux × 1.2 × (MTreg / 69), doubled in H-resolution mode 2, in 4 lx steps in
//! L-resolution mode. A conversion takes its datasheet time (120 ms H, 16 ms L, scaled by
//! MTreg); a read before it finishes returns the previous count, as on the chip.

use super::i2c::{Ctx, I2cModel};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolution {
    High,
    High2,
    Low,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    PowerDown,
    PowerOn,
    Continuous(Resolution),
    OneTime(Resolution),
}

/// The opcode-level model.
#[derive(Debug, Clone)]
pub struct Bh1750Model {
    state: State,
    mtreg: u8,
    started: Instant,
    count: u16,
    read_index: usize,
}

impl Bh1750Model {
    /// No active state.
    pub const POWER_DOWN: u8 = 0b0000_0000;
    /// Waiting for a measurement command.
    pub const POWER_ON: u8 = 0b0000_0001;
    /// Clears the data register (only while powered on).
    pub const RESET: u8 = 0b0000_0111;
    /// Continuous, 1 lx resolution.
    pub const CONTINUOUS_H: u8 = 0b0001_0000;
    /// Continuous, 0.5 lx resolution.
    pub const CONTINUOUS_H2: u8 = 0b0001_0001;
    /// Continuous, 4 lx resolution.
    pub const CONTINUOUS_L: u8 = 0b0001_0011;
    /// One measurement at 1 lx resolution, then power down.
    pub const ONE_TIME_H: u8 = 0b0010_0000;
    /// One measurement at 0.5 lx resolution, then power down.
    pub const ONE_TIME_H2: u8 = 0b0010_0001;
    /// One measurement at 4 lx resolution, then power down.
    pub const ONE_TIME_L: u8 = 0b0010_0011;
    /// MTreg bits 7..5 in the low 3 bits.
    pub const CHANGE_MTREG_HIGH: u8 = 0b0100_0000;
    /// MTreg bits 4..0 in the low 5 bits.
    pub const CHANGE_MTREG_LOW: u8 = 0b0110_0000;

    const DEFAULT_MTREG: u8 = 69;

    /// A sensor just powered (in power-down state, count 0).
    pub fn new() -> Bh1750Model {
        Bh1750Model {
            state: State::PowerDown,
            mtreg: Self::DEFAULT_MTREG,
            started: Instant::now(),
            count: 0,
            read_index: 0,
        }
    }

    fn conversion_time(&self, res: Resolution) -> Duration {
        let typical_ms = match res {
            Resolution::High | Resolution::High2 => 120,
            Resolution::Low => 16,
        };
        Duration::from_millis(typical_ms * self.mtreg as u64 / Self::DEFAULT_MTREG as u64)
    }

    fn count_for(&self, lux: f64, res: Resolution) -> u16 {
        let count = lux * 1.2 * self.mtreg as f64 / Self::DEFAULT_MTREG as f64;
        let count = match res {
            Resolution::High => count,
            Resolution::High2 => count * 2.0,
            // L-resolution counts in 4 lx steps: 4 × 1.2 counts.
            Resolution::Low => (count / 4.8).floor() * 4.8,
        };
        count.round().clamp(0.0, u16::MAX as f64) as u16
    }

    /// Brings the data register up to date at `ctx.now`.
    fn settle(&mut self, ctx: &Ctx) {
        match self.state {
            State::OneTime(res) if ctx.now >= self.started + self.conversion_time(res) => {
                self.count = self.count_for(ctx.env.illuminance_lux, res);
                self.state = State::PowerDown;
            }
            State::Continuous(res) if ctx.now >= self.started + self.conversion_time(res) => {
                self.count = self.count_for(ctx.env.illuminance_lux, res);
            }
            _ => {}
        }
    }

    fn instruction(&mut self, op: u8, ctx: &Ctx) {
        self.settle(ctx);
        let measure = |res| (res, ctx.now);
        let (state, started) = match op {
            Self::POWER_DOWN => (State::PowerDown, self.started),
            Self::POWER_ON => (State::PowerOn, self.started),
            Self::RESET => {
                if self.state != State::PowerDown {
                    self.count = 0;
                }
                (self.state, self.started)
            }
            Self::CONTINUOUS_H => measure(State::Continuous(Resolution::High)),
            Self::CONTINUOUS_H2 => measure(State::Continuous(Resolution::High2)),
            Self::CONTINUOUS_L => measure(State::Continuous(Resolution::Low)),
            Self::ONE_TIME_H => measure(State::OneTime(Resolution::High)),
            Self::ONE_TIME_H2 => measure(State::OneTime(Resolution::High2)),
            Self::ONE_TIME_L => measure(State::OneTime(Resolution::Low)),
            _ if op & 0b1111_1000 == Self::CHANGE_MTREG_HIGH => {
                self.mtreg = (self.mtreg & 0b0001_1111) | ((op & 0b111) << 5);
                (self.state, self.started)
            }
            _ if op & 0b1110_0000 == Self::CHANGE_MTREG_LOW => {
                self.mtreg = (self.mtreg & 0b1110_0000) | (op & 0b1_1111);
                (self.state, self.started)
            }
            // Undefined opcodes are ignored.
            _ => (self.state, self.started),
        };
        self.state = state;
        self.started = started;
    }
}

impl Default for Bh1750Model {
    fn default() -> Self {
        Self::new()
    }
}

impl I2cModel for Bh1750Model {
    fn start(&mut self, read: bool, ctx: &Ctx) {
        if read {
            self.settle(ctx);
            self.read_index = 0;
        }
    }

    fn write(&mut self, byte: u8, ctx: &Ctx) {
        self.instruction(byte, ctx);
    }

    fn read(&mut self, _ctx: &Ctx) -> u8 {
        let b = self.count.to_be_bytes()[self.read_index % 2];
        self.read_index += 1;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::env::Environment;

    fn ctx(now: Instant, lux: f64) -> Ctx {
        Ctx {
            now,
            env: Environment {
                illuminance_lux: lux,
                ..Environment::drifting(0.0)
            },
        }
    }

    fn read(m: &mut Bh1750Model, c: &Ctx) -> u16 {
        m.start(true, c);
        u16::from_be_bytes([m.read(c), m.read(c)])
    }

    #[test]
    fn a_one_time_measurement_appears_after_the_conversion_time_and_powers_down() {
        let mut m = Bh1750Model::new();
        let t0 = Instant::now();
        m.write(Bh1750Model::POWER_ON, &ctx(t0, 500.0));
        m.write(Bh1750Model::ONE_TIME_H, &ctx(t0, 500.0));
        assert_eq!(read(&mut m, &ctx(t0 + Duration::from_millis(50), 500.0)), 0);
        let later = ctx(t0 + Duration::from_millis(130), 500.0);
        assert_eq!(read(&mut m, &later), 600);
        assert_eq!(m.state, State::PowerDown);
    }

    #[test]
    fn h2_mode_doubles_the_count_and_mtreg_scales_it() {
        let mut m = Bh1750Model::new();
        let t0 = Instant::now();
        m.write(Bh1750Model::CHANGE_MTREG_HIGH | (138 >> 5), &ctx(t0, 100.0));
        m.write(
            Bh1750Model::CHANGE_MTREG_LOW | (138 & 0x1f),
            &ctx(t0, 100.0),
        );
        assert_eq!(m.mtreg, 138);
        m.write(Bh1750Model::CONTINUOUS_H2, &ctx(t0, 100.0));
        let later = ctx(t0 + Duration::from_millis(300), 100.0);
        assert_eq!(read(&mut m, &later), 480);
    }
}
