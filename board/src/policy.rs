//! The board policy: pure checks, run by the gateway inside its one dispatch pipeline, so they
//! hold for direct calls, `tool_call`, MQTT and remote calls alike. A refusal names its rule.

use crate::board::BoardDef;

/// Why the policy refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule}: {detail}")]
pub struct Refusal {
    /// The rule, e.g. `i2c.write_allow`, `i2c.reserved`, `gpio.outputs`, `pwm.limits`.
    pub rule: &'static str,
    /// What the rule says about this call.
    pub detail: String,
}

fn refuse(rule: &'static str, detail: String) -> Result<(), Refusal> {
    Err(Refusal { rule, detail })
}

/// The default largest transfer: spidev's own buffer size.
pub const DEFAULT_MAX_TRANSFER: usize = 4096;

/// The policy of one board, with its declared devices folded in.
#[derive(Debug, Clone)]
pub struct BoardPolicy {
    read_only: bool,
    i2c_write: Vec<(u8, u8)>,
    outputs: Vec<u32>,
    pwm: Vec<crate::board::PwmLimit>,
    max_transfer: usize,
    serial_allow: Option<Vec<String>>,
    mcu: Vec<crate::board::McuPolicy>,
}

impl BoardPolicy {
    /// The policy a board definition states.
    pub fn new(def: &BoardDef) -> BoardPolicy {
        let p = &def.policy;
        let mut i2c_write: Vec<(u8, u8)> = p
            .i2c_write_allow
            .iter()
            .flat_map(|a| a.addresses.iter().map(move |x| (a.bus, *x)))
            .collect();
        let default_bus = def.default_i2c_bus().unwrap_or(1);
        for d in &def.device {
            if let Some(a) = d.address {
                i2c_write.push((d.bus.unwrap_or(default_bus), a));
            }
        }
        let mut outputs = p.outputs.clone();
        outputs.extend(
            def.device
                .iter()
                .filter(|d| d.driver == crate::driver::Driver::GpioOut)
                .filter_map(|d| d.pin),
        );
        BoardPolicy {
            read_only: p.read_only,
            i2c_write,
            outputs,
            pwm: p.pwm.clone(),
            max_transfer: p.max_transfer.unwrap_or(DEFAULT_MAX_TRANSFER),
            serial_allow: p.serial_allow.clone(),
            mcu: p.mcu.clone(),
        }
    }

    /// Refuses every write and actuation in read-only mode.
    pub fn check_writable(&self) -> Result<(), Refusal> {
        if self.read_only {
            return refuse("board.read_only", "the board policy is read-only".into());
        }
        Ok(())
    }

    /// Refuses the reserved addresses 0x00–0x07 and 0x78–0x7F for any transfer.
    pub fn check_address(&self, address: u8) -> Result<(), Refusal> {
        if address <= 0x07 || address >= 0x78 {
            return refuse(
                "i2c.reserved",
                format!("0x{address:02x} is a reserved I2C address (0x00–0x07 and 0x78–0x7f)"),
            );
        }
        Ok(())
    }

    /// Writes go only to declared devices and listed addresses.
    pub fn check_i2c_write(&self, bus: u8, address: u8) -> Result<(), Refusal> {
        self.check_writable()?;
        self.check_address(address)?;
        if !self.i2c_write.contains(&(bus, address)) {
            let allowed: Vec<String> = self
                .i2c_write
                .iter()
                .filter(|(b, _)| *b == bus)
                .map(|(_, a)| format!("0x{a:02x}"))
                .collect();
            return refuse(
                "i2c.write_allow",
                format!(
                    "writing to 0x{address:02x} on bus {bus} is not allowed (allowed: {})",
                    if allowed.is_empty() {
                        "none".into()
                    } else {
                        allowed.join(", ")
                    }
                ),
            );
        }
        Ok(())
    }

    /// Only pins marked as outputs may be driven.
    pub fn check_output(&self, pin: u32) -> Result<(), Refusal> {
        self.check_writable()?;
        if !self.outputs.contains(&pin) {
            return refuse(
                "gpio.outputs",
                format!(
                    "GPIO{pin} is not an output on this board (outputs: {})",
                    self.outputs
                        .iter()
                        .map(|p| format!("GPIO{p}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        Ok(())
    }

    /// PWM frequency and duty within the channel's limits.
    pub fn check_pwm(&self, channel: u32, frequency_hz: f64, duty: f64) -> Result<(), Refusal> {
        self.check_writable()?;
        let Some(l) = self.pwm.iter().find(|l| l.channel == channel) else {
            return refuse(
                "pwm.limits",
                format!("PWM channel {channel} has no limits in the policy, so it cannot be set"),
            );
        };
        if !(l.min_hz..=l.max_hz).contains(&frequency_hz) {
            return refuse(
                "pwm.limits",
                format!(
                    "{frequency_hz} Hz is outside {}–{} Hz for channel {channel}",
                    l.min_hz, l.max_hz
                ),
            );
        }
        if !(0.0..=l.max_duty).contains(&duty) {
            return refuse(
                "pwm.limits",
                format!(
                    "duty {duty} is outside 0–{} for channel {channel}",
                    l.max_duty
                ),
            );
        }
        Ok(())
    }

    /// Transfers no larger than the limit.
    pub fn check_transfer(&self, len: usize) -> Result<(), Refusal> {
        if len > self.max_transfer {
            return refuse(
                "transfer.max",
                format!(
                    "{len} bytes is more than the {} allowed in one transfer",
                    self.max_transfer
                ),
            );
        }
        Ok(())
    }

    /// Writing to a serial port needs it allowed (by default every declared port is).
    pub fn check_serial_write(&self, port: &str) -> Result<(), Refusal> {
        self.check_writable()?;
        if let Some(allow) = &self.serial_allow {
            if !allow.iter().any(|a| a == port) {
                return refuse(
                    "serial.allow",
                    format!(
                        "writing to serial port '{port}' is not allowed (allowed: {})",
                        allow.join(", ")
                    ),
                );
            }
        }
        Ok(())
    }
}

impl BoardPolicy {
    fn mcu(&self, device: &str) -> Result<&crate::board::McuPolicy, Refusal> {
        self.mcu.iter().find(|m| m.device == device).ok_or_else(|| Refusal {
            rule: "mcu.policy",
            detail: format!("microcontroller '{device}' has no [[policy.mcu]] entry, so nothing on it may be driven"),
        })
    }

    /// Only the MCU's listed pins may be driven.
    pub fn check_mcu_output(&self, device: &str, pin: u8) -> Result<(), Refusal> {
        self.check_writable()?;
        let m = self.mcu(device)?;
        if !m.outputs.contains(&pin) {
            return refuse(
                "mcu.outputs",
                format!(
                    "pin {pin} on '{device}' is not an output (outputs: {:?})",
                    m.outputs
                ),
            );
        }
        Ok(())
    }

    /// MCU PWM within the pin's limits.
    pub fn check_mcu_pwm(
        &self,
        device: &str,
        pin: u8,
        frequency_hz: f64,
        duty: f64,
    ) -> Result<(), Refusal> {
        self.check_writable()?;
        let m = self.mcu(device)?;
        let Some(l) = m.pwm.iter().find(|l| l.channel == pin as u32) else {
            return refuse(
                "mcu.pwm",
                format!("pin {pin} on '{device}' has no PWM limits, so it cannot be set"),
            );
        };
        if !(l.min_hz..=l.max_hz).contains(&frequency_hz) || !(0.0..=l.max_duty).contains(&duty) {
            return refuse(
                "mcu.pwm",
                format!(
                    "{frequency_hz} Hz at duty {duty} is outside {}–{} Hz, duty 0–{} for pin {pin} on '{device}'",
                    l.min_hz, l.max_hz, l.max_duty
                ),
            );
        }
        Ok(())
    }

    /// Writes on the MCU's I2C bus go only to listed addresses; reserved addresses never.
    pub fn check_mcu_i2c(&self, device: &str, address: u8, writes: bool) -> Result<(), Refusal> {
        self.check_address(address)?;
        if writes {
            self.check_writable()?;
            let m = self.mcu(device)?;
            if !m.i2c_write_allow.contains(&address) {
                return refuse(
                    "mcu.i2c_write_allow",
                    format!("writing to 0x{address:02x} on '{device}' is not allowed"),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim() -> BoardPolicy {
        BoardPolicy::new(&BoardDef::sim())
    }

    #[test]
    fn the_sim_policy_allows_writes_only_to_declared_devices() {
        let p = sim();
        for a in [0x76, 0x23, 0x3c] {
            p.check_i2c_write(1, a).unwrap();
        }
        let r = p.check_i2c_write(1, 0x50).unwrap_err();
        assert_eq!(r.rule, "i2c.write_allow");
        assert!(r.detail.contains("0x76"), "{r}");
        assert_eq!(p.check_i2c_write(1, 0x03).unwrap_err().rule, "i2c.reserved");
        assert_eq!(p.check_address(0x78).unwrap_err().rule, "i2c.reserved");
        p.check_address(0x08).unwrap();
    }

    #[test]
    fn the_sim_policy_drives_only_the_relay_and_limits_the_fan() {
        let p = sim();
        p.check_output(17).unwrap();
        assert_eq!(p.check_output(27).unwrap_err().rule, "gpio.outputs");
        p.check_pwm(0, 25_000.0, 0.5).unwrap();
        assert_eq!(
            p.check_pwm(0, 100_000.0, 0.5).unwrap_err().rule,
            "pwm.limits"
        );
        assert_eq!(p.check_pwm(0, 1000.0, 1.5).unwrap_err().rule, "pwm.limits");
        assert_eq!(p.check_pwm(1, 1000.0, 0.5).unwrap_err().rule, "pwm.limits");
        p.check_transfer(4096).unwrap();
        assert_eq!(p.check_transfer(4097).unwrap_err().rule, "transfer.max");
    }

    #[test]
    fn read_only_refuses_every_write() {
        let mut def = BoardDef::sim();
        def.policy.read_only = true;
        let p = BoardPolicy::new(&def);
        assert_eq!(p.check_output(17).unwrap_err().rule, "board.read_only");
        assert_eq!(
            p.check_i2c_write(1, 0x76).unwrap_err().rule,
            "board.read_only"
        );
        assert_eq!(
            p.check_pwm(0, 1000.0, 0.5).unwrap_err().rule,
            "board.read_only"
        );
    }
}
