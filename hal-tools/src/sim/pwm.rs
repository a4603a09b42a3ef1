//! A simulated PWM channel that stores what it is set to, rounded as Linux sysfs PWM rounds
//! (period and duty in whole nanoseconds).

use crate::bus::{BusError, Pwm};
use std::sync::{Arc, Mutex};

/// One simulated PWM channel; clones share it.
#[derive(Debug, Clone)]
pub struct SimPwm {
    channel: u32,
    state: Arc<Mutex<(f64, f64)>>,
}

impl SimPwm {
    pub(crate) fn new(channel: u32) -> SimPwm {
        SimPwm {
            channel,
            state: Arc::new(Mutex::new((0.0, 0.0))),
        }
    }

    /// The channel number.
    pub fn channel(&self) -> u32 {
        self.channel
    }
}

impl Pwm for SimPwm {
    fn set(&mut self, frequency_hz: f64, duty: f64) -> Result<(f64, f64), BusError> {
        if !(frequency_hz.is_finite() && frequency_hz > 0.0 && frequency_hz <= 1e9) {
            return Err(BusError::Other(format!(
                "frequency {frequency_hz} Hz is outside 0 < f <= 1 GHz"
            )));
        }
        if !(0.0..=1.0).contains(&duty) {
            return Err(BusError::Other(format!("duty {duty} is outside 0.0..=1.0")));
        }
        let period_ns = (1e9 / frequency_hz).round().max(1.0);
        let duty_ns = (duty * period_ns).round();
        let set = (1e9 / period_ns, duty_ns / period_ns);
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = set;
        Ok(set)
    }

    fn get(&self) -> (f64, f64) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
