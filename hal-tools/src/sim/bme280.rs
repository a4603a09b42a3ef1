//! A Bosch BME280 (temperature, pressure, humidity) modelled at register level.
//!
//! Calibration constants are stored in the trimming registers exactly as the datasheet packs
//! them; the raw ADC values are found by inverting the datasheet's own compensation formulas
//! (binary search over the 20-bit and 16-bit ranges), so any driver that implements the
//! datasheet reads back the simulated environment.

use super::env::Environment;
use super::i2c::{Ctx, I2cModel};

/// The trimming parameters (datasheet table 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibration {
    /// dig_T1..dig_T3.
    pub t: (u16, i16, i16),
    /// dig_P1..dig_P9.
    pub p: (u16, i16, i16, i16, i16, i16, i16, i16, i16),
    /// dig_H1..dig_H6 (H4 and H5 are 12-bit signed).
    pub h: (u8, i16, u8, i16, i16, i8),
}

impl Calibration {
    /// Temperature and pressure from the datasheet's worked example (section 8.1 of
    /// BST-BME280-DS002); humidity from a real part, since the datasheet gives no example.
    pub const DATASHEET: Calibration = Calibration {
        t: (27504, 26435, -1000),
        p: (36477, -10685, 3024, 2855, 140, -7, 15500, -14600, 6000),
        h: (75, 362, 0, 313, 50, 30),
    };

    /// The 26 bytes at 0x88..=0xA1 and the 7 bytes at 0xE1..=0xE7.
    pub fn to_registers(&self) -> ([u8; 26], [u8; 7]) {
        let mut pt = [0u8; 26];
        let (t1, t2, t3) = self.t;
        let (p1, p2, p3, p4, p5, p6, p7, p8, p9) = self.p;
        let words: [u16; 12] = [
            t1, t2 as u16, t3 as u16, p1, p2 as u16, p3 as u16, p4 as u16, p5 as u16, p6 as u16,
            p7 as u16, p8 as u16, p9 as u16,
        ];
        for (i, w) in words.iter().enumerate() {
            pt[2 * i..2 * i + 2].copy_from_slice(&w.to_le_bytes());
        }
        // 0xA0 is reserved; 0xA1 is dig_H1.
        let (h1, h2, h3, h4, h5, h6) = self.h;
        pt[25] = h1;
        let [h2_lsb, h2_msb] = (h2 as u16).to_le_bytes();
        // dig_H4 is 0xE4[7:0] / 0xE5[3:0], dig_H5 is 0xE6[7:0] / 0xE5[7:4]: 12 bits each.
        let h4 = h4 as u16 & 0x0fff;
        let h5 = h5 as u16 & 0x0fff;
        let hum = [
            h2_lsb,
            h2_msb,
            h3,
            (h4 >> 4) as u8,
            ((h4 & 0x0f) as u8) | (((h5 & 0x0f) as u8) << 4),
            (h5 >> 4) as u8,
            h6 as u8,
        ];
        (pt, hum)
    }

    /// t_fine from a raw temperature (datasheet double-precision formula).
    pub fn t_fine(&self, adc_t: u32) -> i32 {
        let (t1, t2, t3) = (self.t.0 as f64, self.t.1 as f64, self.t.2 as f64);
        let adc = adc_t as f64;
        let var1 = (adc / 16384.0 - t1 / 1024.0) * t2;
        let d = adc / 131072.0 - t1 / 8192.0;
        let var2 = d * d * t3;
        (var1 + var2) as i32
    }

    /// °C from a raw temperature.
    pub fn temperature(&self, adc_t: u32) -> f64 {
        let (t1, t2, t3) = (self.t.0 as f64, self.t.1 as f64, self.t.2 as f64);
        let adc = adc_t as f64;
        let var1 = (adc / 16384.0 - t1 / 1024.0) * t2;
        let d = adc / 131072.0 - t1 / 8192.0;
        (var1 + d * d * t3) / 5120.0
    }

    /// Pa from a raw pressure and t_fine.
    pub fn pressure(&self, adc_p: u32, t_fine: i32) -> f64 {
        let (p1, p2, p3, p4, p5, p6, p7, p8, p9) = self.p;
        let (p1, p2, p3, p4, p5) = (p1 as f64, p2 as f64, p3 as f64, p4 as f64, p5 as f64);
        let (p6, p7, p8, p9) = (p6 as f64, p7 as f64, p8 as f64, p9 as f64);
        let mut var1 = t_fine as f64 / 2.0 - 64000.0;
        let mut var2 = var1 * var1 * p6 / 32768.0;
        var2 += var1 * p5 * 2.0;
        var2 = var2 / 4.0 + p4 * 65536.0;
        var1 = (p3 * var1 * var1 / 524288.0 + p2 * var1) / 524288.0;
        var1 = (1.0 + var1 / 32768.0) * p1;
        if var1 == 0.0 {
            return 0.0;
        }
        let mut p = 1048576.0 - adc_p as f64;
        p = (p - var2 / 4096.0) * 6250.0 / var1;
        let var1 = p9 * p * p / 2147483648.0;
        let var2 = p * p8 / 32768.0;
        p + (var1 + var2 + p7) / 16.0
    }

    /// %RH from a raw humidity and t_fine, clamped to 0..=100 as the datasheet does.
    pub fn humidity(&self, adc_h: u32, t_fine: i32) -> f64 {
        let (h1, h2, h3, h4, h5, h6) = self.h;
        let var = t_fine as f64 - 76800.0;
        let var = (adc_h as f64 - (h4 as f64 * 64.0 + h5 as f64 / 16384.0 * var))
            * (h2 as f64 / 65536.0
                * (1.0 + h6 as f64 / 67108864.0 * var * (1.0 + h3 as f64 / 67108864.0 * var)));
        let var = var * (1.0 - h1 as f64 * var / 524288.0);
        var.clamp(0.0, 100.0)
    }

    /// Raw values (adc_T, adc_P, adc_H) that compensate to `env`, on a grid of `bits` (16..=20)
    /// for temperature and pressure.
    pub fn raw_for(&self, env: &Environment, bits: (u32, u32)) -> (u32, u32, u32) {
        let adc_t = search(bits.0, |raw| self.temperature(raw), env.temperature_c);
        let t_fine = self.t_fine(adc_t);
        // Pressure falls as the raw value rises.
        let adc_p = search(
            bits.1,
            |raw| -self.pressure(raw, t_fine),
            -env.pressure_hpa * 100.0,
        );
        let adc_h = search_16(|raw| self.humidity(raw, t_fine), env.humidity_pct);
        (adc_t, adc_p, adc_h)
    }
}

/// The 20-bit raw value on a `bits` grid whose (increasing) `f` is nearest `target`.
fn search(bits: u32, f: impl Fn(u32) -> f64, target: f64) -> u32 {
    let step = 1u32 << (20 - bits);
    let n = nearest(1 << bits, |n| f(n * step), target);
    n * step
}

fn search_16(f: impl Fn(u32) -> f64, target: f64) -> u32 {
    nearest(1 << 16, f, target)
}

/// Binary search over 0..len for the first n with f(n) >= target, then the closer neighbour.
fn nearest(len: u32, f: impl Fn(u32) -> f64, target: f64) -> u32 {
    let (mut lo, mut hi) = (0u32, len - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if f(mid) >= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if lo > 0 && (f(lo - 1) - target).abs() <= (f(lo) - target).abs() {
        lo - 1
    } else {
        lo
    }
}

/// The register-level model.
#[derive(Debug, Clone)]
pub struct Bme280Model {
    calibration: Calibration,
    pointer: u8,
    expect_register: bool,
    ctrl_hum: u8,
    ctrl_hum_latched: u8,
    ctrl_meas: u8,
    config: u8,
    data: [u8; 8],
}

impl Bme280Model {
    /// `id` (0xD0) reads as this.
    pub const CHIP_ID_VALUE: u8 = 0x60;
    /// Writing this to `reset` resets the chip.
    pub const SOFT_RESET_VALUE: u8 = 0xB6;
    /// Trimming parameters for temperature, pressure and dig_H1.
    pub const CALIB_00: u8 = 0x88;
    /// The chip id.
    pub const ID: u8 = 0xD0;
    /// Soft reset.
    pub const RESET: u8 = 0xE0;
    /// Trimming parameters dig_H2..dig_H6.
    pub const CALIB_26: u8 = 0xE1;
    /// Humidity oversampling (takes effect on the next ctrl_meas write).
    pub const CTRL_HUM: u8 = 0xF2;
    /// `measuring` (bit 3) and `im_update` (bit 0).
    pub const STATUS: u8 = 0xF3;
    /// Temperature and pressure oversampling, mode.
    pub const CTRL_MEAS: u8 = 0xF4;
    /// Standby time, IIR filter, SPI 3-wire.
    pub const CONFIG: u8 = 0xF5;
    /// press_msb; the burst runs to hum_lsb at 0xFE.
    pub const PRESS_MSB: u8 = 0xF7;

    const MODE_MASK: u8 = 0b0000_0011;
    const MODE_SLEEP: u8 = 0b00;
    const MODE_NORMAL: u8 = 0b11;
    /// Reset value of the data registers: 0x80000 (T, P) and 0x8000 (H), "skipped".
    const DATA_RESET: [u8; 8] = [0x80, 0x00, 0x00, 0x80, 0x00, 0x00, 0x80, 0x00];

    /// A chip with the given trimming parameters, just powered on.
    pub fn new(calibration: Calibration) -> Bme280Model {
        Bme280Model {
            calibration,
            pointer: 0,
            expect_register: true,
            ctrl_hum: 0,
            ctrl_hum_latched: 0,
            ctrl_meas: 0,
            config: 0,
            data: Self::DATA_RESET,
        }
    }

    fn reset(&mut self) {
        let calibration = self.calibration;
        *self = Bme280Model::new(calibration);
    }

    /// Bits of resolution for temperature and pressure: 20 with the IIR filter on, else
    /// 16 + (oversampling - 1) (datasheet 3.4.4 and 3.5).
    fn resolution(&self, osrs: u8) -> u32 {
        let filter_on = (self.config >> 2) & 0b111 != 0;
        if filter_on {
            20
        } else {
            (16 + osrs.saturating_sub(1) as u32).min(20)
        }
    }

    fn measure(&mut self, env: &Environment) {
        let osrs_t = self.ctrl_meas >> 5;
        let osrs_p = (self.ctrl_meas >> 2) & 0b111;
        let osrs_h = self.ctrl_hum_latched & 0b111;
        let (t, p, h) = self.calibration.raw_for(
            env,
            (
                self.resolution(osrs_t.max(1)),
                self.resolution(osrs_p.max(1)),
            ),
        );
        // A skipped measurement reads 0x80000 / 0x8000, as on the chip.
        let t = if osrs_t == 0 { 0x80000 } else { t };
        let p = if osrs_p == 0 || osrs_t == 0 {
            0x80000
        } else {
            p
        };
        let h = if osrs_h == 0 || osrs_t == 0 {
            0x8000
        } else {
            h
        };
        let b20 = |v: u32| [(v >> 12) as u8, (v >> 4) as u8, ((v & 0x0f) << 4) as u8];
        self.data[0..3].copy_from_slice(&b20(p));
        self.data[3..6].copy_from_slice(&b20(t));
        self.data[6..8].copy_from_slice(&(h as u16).to_be_bytes());
    }

    fn register(&self, reg: u8) -> u8 {
        let (pt, hum) = self.calibration.to_registers();
        match reg {
            0x88..=0xA1 => pt[(reg - Self::CALIB_00) as usize],
            Self::ID => Self::CHIP_ID_VALUE,
            0xE1..=0xE7 => hum[(reg - Self::CALIB_26) as usize],
            Self::CTRL_HUM => self.ctrl_hum,
            // Conversions finish instantly here, so `measuring` and `im_update` stay clear.
            Self::STATUS => 0,
            Self::CTRL_MEAS => self.ctrl_meas,
            Self::CONFIG => self.config,
            0xF7..=0xFE => self.data[(reg - Self::PRESS_MSB) as usize],
            _ => 0,
        }
    }

    fn write_register(&mut self, reg: u8, value: u8, env: &Environment) {
        match reg {
            Self::RESET if value == Self::SOFT_RESET_VALUE => self.reset(),
            Self::CTRL_HUM => self.ctrl_hum = value & 0b111,
            Self::CTRL_MEAS => {
                self.ctrl_hum_latched = self.ctrl_hum;
                self.ctrl_meas = value;
                match value & Self::MODE_MASK {
                    Self::MODE_SLEEP => {}
                    Self::MODE_NORMAL => self.measure(env),
                    _ => {
                        // Forced: one conversion, then back to sleep.
                        self.measure(env);
                        self.ctrl_meas &= !Self::MODE_MASK;
                    }
                }
            }
            Self::CONFIG => self.config = value,
            _ => {}
        }
    }
}

impl I2cModel for Bme280Model {
    fn start(&mut self, read: bool, ctx: &Ctx) {
        self.expect_register = !read;
        // In normal mode a read burst sees the latest conversion.
        if read && self.ctrl_meas & Self::MODE_MASK == Self::MODE_NORMAL {
            self.measure(&ctx.env);
        }
    }

    fn write(&mut self, byte: u8, ctx: &Ctx) {
        // Writes are (register, value) pairs; a lone register byte only sets the pointer.
        if self.expect_register {
            self.pointer = byte;
        } else {
            self.write_register(self.pointer, byte, &ctx.env);
        }
        self.expect_register = !self.expect_register;
    }

    fn read(&mut self, _ctx: &Ctx) -> u8 {
        let v = self.register(self.pointer);
        self.pointer = self.pointer.wrapping_add(1);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_datasheet_example_compensates_to_the_datasheet_results() {
        let c = Calibration::DATASHEET;
        assert_eq!(c.t_fine(519888), 128422);
        assert!((c.temperature(519888) - 25.08).abs() < 0.01);
        let p = c.pressure(415148, 128422);
        assert!((p - 100653.27).abs() < 0.5, "{p}");
    }

    #[test]
    fn humidity_trimming_is_packed_as_twelve_bit_nibble_pairs() {
        let c = Calibration {
            h: (75, 362, 0, 0x123, -0x2AB, -7),
            ..Calibration::DATASHEET
        };
        let (pt, hum) = c.to_registers();
        assert_eq!(pt[25], 75);
        assert_eq!(hum[0..3], [0x6A, 0x01, 0x00]);
        // 0xE4 = H4[11:4], 0xE5 = H5[3:0] << 4 | H4[3:0], 0xE6 = H5[11:4]
        let h5 = (-0x2ABi16) as u16 & 0x0fff; // 0xD55
        assert_eq!(hum[3], 0x12);
        assert_eq!(hum[4], ((h5 & 0xf) as u8) << 4 | 0x3);
        assert_eq!(hum[5], (h5 >> 4) as u8);
        assert_eq!(hum[6], (-7i8) as u8);
    }

    #[test]
    fn raw_values_compensate_back_to_the_requested_environment() {
        let c = Calibration::DATASHEET;
        for (t, rh, hpa) in [
            (21.0, 45.0, 1013.0),
            (-5.0, 90.0, 950.0),
            (35.5, 10.0, 1080.0),
        ] {
            let env = Environment {
                temperature_c: t,
                humidity_pct: rh,
                pressure_hpa: hpa,
                illuminance_lux: 0.0,
            };
            let (at, ap, ah) = c.raw_for(&env, (20, 20));
            assert!(at < 1 << 20 && ap < 1 << 20 && ah < 1 << 16);
            let tf = c.t_fine(at);
            assert!((c.temperature(at) - t).abs() < 0.01, "{t}");
            assert!((c.pressure(ap, tf) / 100.0 - hpa).abs() < 0.01, "{hpa}");
            assert!((c.humidity(ah, tf) - rh).abs() < 0.01, "{rh}");
        }
    }

    #[test]
    fn without_the_filter_one_times_oversampling_gives_sixteen_bit_values() {
        let mut m = Bme280Model::new(Calibration::DATASHEET);
        let env = Environment::drifting(0.0);
        m.write_register(Bme280Model::CTRL_HUM, 0b001, &env);
        // osrs_t = 1x, osrs_p = 1x, forced
        m.write_register(
            Bme280Model::CTRL_MEAS,
            (0b001 << 5) | (0b001 << 2) | 0b01,
            &env,
        );
        assert_eq!(m.data[2] & 0xf0, 0, "xlsb is empty at 16 bits");
        assert_eq!(m.data[5] & 0xf0, 0);
        assert_eq!(m.ctrl_meas & 0b11, 0, "forced mode returns to sleep");
        assert_ne!(m.data[0], 0x80);
    }
}
