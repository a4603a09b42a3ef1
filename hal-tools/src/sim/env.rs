//! The simulated room: what the sensors measure, drifting slowly or fixed by a test.

use std::f64::consts::TAU;
use std::time::Instant;

/// What the room is like at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Environment {
    /// Air temperature in °C.
    pub temperature_c: f64,
    /// Relative humidity in %.
    pub humidity_pct: f64,
    /// Air pressure in hPa.
    pub pressure_hpa: f64,
    /// Illuminance in lux.
    pub illuminance_lux: f64,
}

impl Environment {
    /// The drifting room `secs` seconds after the board was built: 21 °C ± 2 over 10 minutes,
    /// 45 %RH ± 5 over 15, 1013 hPa ± 2 over 30, 320 lx ± 80 over 5. The periods differ so the
    /// readings do not move in lockstep.
    pub fn drifting(secs: f64) -> Environment {
        let wave = |period: f64, phase: f64| (TAU * secs / period + phase).sin();
        Environment {
            temperature_c: 21.0 + 2.0 * wave(600.0, 0.0),
            humidity_pct: 45.0 + 5.0 * wave(900.0, 1.0),
            pressure_hpa: 1013.0 + 2.0 * wave(1800.0, 2.0),
            illuminance_lux: 320.0 + 80.0 * wave(300.0, 0.5),
        }
    }
}

/// Where sensor models get the environment from.
#[derive(Debug, Clone)]
pub(crate) struct EnvSource {
    start: Instant,
    fixed: Option<Environment>,
}

impl EnvSource {
    pub(crate) fn new() -> EnvSource {
        EnvSource {
            start: Instant::now(),
            fixed: None,
        }
    }

    pub(crate) fn at(&self, now: Instant) -> Environment {
        self.fixed.unwrap_or_else(|| {
            Environment::drifting(now.saturating_duration_since(self.start).as_secs_f64())
        })
    }

    pub(crate) fn fix(&mut self, env: Option<Environment>) {
        self.fixed = env;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drifting_room_stays_within_its_bands_for_an_hour() {
        for s in 0..3600 {
            let e = Environment::drifting(s as f64);
            assert!((19.0..=23.0).contains(&e.temperature_c));
            assert!((40.0..=50.0).contains(&e.humidity_pct));
            assert!((1011.0..=1015.0).contains(&e.pressure_hpa));
            assert!((240.0..=400.0).contains(&e.illuminance_lux));
        }
        let a = Environment::drifting(0.0);
        let b = Environment::drifting(150.0);
        assert!((a.temperature_c - b.temperature_c).abs() > 0.5, "it drifts");
    }
}
