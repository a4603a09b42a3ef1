//! The checks of `covo doctor` that talk to the hardware: each declared I2C device probed at
//! its address (a one-byte read, never a write) and each serial port found by its USB ids.
//! They need the HAL (cargo feature `hal`); a build without it says it probed nothing.

use super::{Check, Doctor};
use covo_board::board::{BoardDef, DeviceDef};
use covo_board::driver::{Key, Probe};
use covo_hal_tools::bus::{BusError, I2cBus};
use std::collections::BTreeMap;

/// An I2C bus opened for probing, or why not and the fix.
type Opened = Result<Box<dyn I2cBus>, (String, String)>;

impl Doctor<'_> {
    /// Each I2C device of the board file: a one-byte read at its address on its bus
    /// ([`covo_hal_tools::bus::probe`]), never a write. On the sim board the probe reads the
    /// simulated bus, whose register-level models answer where `boards/sim.toml` puts them: a
    /// sim board file naming an address no model answers at fails here as its tools would.
    pub(super) fn i2c_probes(&self, b: &BoardDef, sim: bool) -> Vec<Check> {
        let sim_board = sim.then(covo_hal_tools::sim::SimBoard::new);
        let mut buses: BTreeMap<u8, Opened> = BTreeMap::new();
        let mut out = Vec::new();
        for d in &b.device {
            // The driver's entry says how it is probed and that it needs an address.
            let Some(address) = d.address else {
                if matches!(d.driver.probe(), Probe::I2cRead { .. })
                    && d.driver.requires(Key::Address)
                {
                    out.push(Check::fail(
                        "i2c probe",
                        format!("{} ({}) declares no address", d.name, d.driver),
                        format!("add `address = 0x..` to the [[device]] named {}", d.name),
                    ));
                }
                continue;
            };
            let Some(bus) = d.bus.or_else(|| b.default_i2c_bus()) else {
                continue;
            };
            let path = if sim {
                format!("sim bus {bus}")
            } else {
                b.i2c
                    .iter()
                    .find(|i| i.bus == bus)
                    .and_then(|i| i.path.clone())
                    .unwrap_or_else(|| format!("/dev/i2c-{bus}"))
            };
            let opened = buses.entry(bus).or_insert_with(|| match &sim_board {
                Some(s) => s
                    .i2c(bus)
                    .map(|h| Box::new(h) as Box<dyn I2cBus>)
                    .ok_or_else(|| {
                        (
                            format!("the simulated board has no I2C bus {bus}"),
                            "the sim models bus 1 only: put the device on bus 1".to_string(),
                        )
                    }),
                None => self.open_i2c(&path),
            });
            let result = match opened {
                Ok(h) => covo_hal_tools::bus::probe(h.as_mut(), address),
                Err((why, fix)) => {
                    out.push(Check::fail(
                        "i2c probe",
                        format!(
                            "{} ({}) at 0x{address:02x} not probed: {why}",
                            d.name, d.driver
                        ),
                        fix.clone(),
                    ));
                    continue;
                }
            };
            out.push(probe_check(d, address, &path, result));
        }
        out
    }

    /// Opens an I2C bus for probing, or says why not (with the fix).
    #[cfg(target_os = "linux")]
    fn open_i2c(&self, path: &str) -> Opened {
        let full = self.at(path);
        match std::fs::OpenOptions::new().read(true).write(true).open(&full) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err((
                    format!("{path} is missing"),
                    "enable I2C (`dtparam=i2c_arm=on`) and reboot; check the bus number with `ls /dev/i2c-*`".into(),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err((
                    format!("this user may not open {path} (permission denied)"),
                    "sudo usermod -aG i2c $USER, then log in again".into(),
                ))
            }
            Err(e) => {
                return Err((
                    format!("{path} cannot be opened: {e}"),
                    "check `dmesg` for the driver's errors".into(),
                ))
            }
        }
        covo_hal_tools::backend::open_i2c(&full).map_err(|e| {
            (
                e.to_string(),
                format!("check that {path} is an I2C bus (`ls -l /sys/class/i2c-dev/`)"),
            )
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn open_i2c(&self, path: &str) -> Opened {
        Err((
            format!("{path}: this build has no Linux I2C backend"),
            "run covo doctor on the board".into(),
        ))
    }

    /// Each serial port the board file finds by USB ids (`usb = { vid, pid }`, no `path`): one
    /// USB serial device under `/sys/class/tty` matches it.
    pub(super) fn usb_serial(&self, b: &BoardDef) -> Vec<Check> {
        let wanted: Vec<_> = b
            .serial
            .iter()
            .filter(|s| s.path.is_none())
            .filter_map(|s| Some((s, s.usb.as_ref()?)))
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let ports = covo_hal_tools::backend::list_ports_in(&self.at("sys"));
        wanted
            .into_iter()
            .map(
                |(s, usb)| match covo_hal_tools::backend::match_port(usb, &ports) {
                    Ok(p) => Check::ok(
                        "device",
                        format!(
                            "serial port {}: USB {}:{} is {}",
                            s.name, usb.vid, usb.pid, p.path
                        ),
                    ),
                    Err(e) => Check::fail(
                        "device",
                        format!("serial port {}: {e}", s.name),
                        format!(
                            "plug it in (`lsusb` lists {}:{}), or correct usb in its [[serial]]",
                            usb.vid, usb.pid
                        ),
                    ),
                },
            )
            .collect()
    }
}

/// The line for one I2C device's probe: `ok` when it answered; otherwise what the bus said,
/// with the fix for that failure (no answer: wiring, power, the address pins of its chip; a busy
/// or stuck bus: a device holding a line low).
pub fn probe_check(d: &DeviceDef, address: u8, path: &str, result: Result<(), BusError>) -> Check {
    let who = format!("{} ({})", d.name, d.driver);
    let at = format!("0x{address:02x} on {path}");
    let sim = path.starts_with("sim ");
    let scan = match path.strip_prefix("/dev/i2c-") {
        Some(n) => format!("`i2cdetect -y -r {n}` lists the addresses that answer"),
        None => format!("`i2cdetect -y -r BUS` (BUS of {path}) lists the addresses that answer"),
    };
    match result {
        Ok(()) => Check::ok("i2c probe", format!("{who} answers at {at}")),
        Err(BusError::Nack(_)) if sim => Check::fail(
            "i2c probe",
            format!("{who}: no answer at {at}"),
            "the simulated board models a bme280 at 0x76, a bh1750 at 0x23 and an ssd1306 at 0x3c on bus 1: use one of those, or a Linux board file for real hardware",
        ),
        Err(BusError::Nack(_)) => Check::fail(
            "i2c probe",
            format!("{who}: no answer at {at}"),
            format!(
                "check the wiring (SDA, SCL, GND), the power (3.3 V) and the address{}; {scan}",
                match d.driver.probe() {
                    Probe::I2cRead { hint } => hint,
                    Probe::None => "",
                }
            ),
        ),
        Err(e @ (BusError::Timeout | BusError::Stuck(_) | BusError::ArbitrationLoss)) => {
            Check::fail(
                "i2c probe",
                format!("{who}: the bus is busy at {at}: {e}"),
                "a device may be holding SDA or SCL low: power-cycle the devices on this bus, check the pull-ups, and that no other program or kernel driver is using it",
            )
        }
        Err(BusError::Unsupported(why)) => Check::warn(
            "i2c probe",
            format!("{who} at {at} cannot be probed with a one-byte read: {why}"),
            "try a reading (`covo tools call sensor_read`) to see that it answers",
        ),
        Err(e) => Check::fail(
            "i2c probe",
            format!("{who} at {at}: {e}"),
            format!("check `dmesg` for the I2C driver's errors; {scan}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;
    use covo_board::driver::Driver;

    fn dev(name: &str, driver: Driver) -> DeviceDef {
        DeviceDef {
            name: name.into(),
            driver,
            bus: Some(1),
            address: Some(0x76),
            pin: None,
            channel: None,
            port: None,
            sample_interval_secs: None,
            note: None,
            flash: None,
        }
    }

    #[test]
    fn probe_results_map_to_lines_with_their_fixes() {
        let d = dev("climate", Driver::Bme280);
        let ok = probe_check(&d, 0x76, "/dev/i2c-1", Ok(()));
        assert_eq!(
            ok.to_string(),
            "ok   i2c probe: climate (bme280) answers at 0x76 on /dev/i2c-1"
        );

        let nack = probe_check(&d, 0x76, "/dev/i2c-1", Err(BusError::Nack(0x76)));
        assert_eq!(nack.status, Status::Fail);
        assert_eq!(
            nack.message,
            "climate (bme280): no answer at 0x76 on /dev/i2c-1"
        );
        let fix = nack.fix.unwrap();
        assert!(fix.contains("wiring") && fix.contains("power"), "{fix}");
        assert!(fix.contains("SDO pin selects 0x76 or 0x77"), "{fix}");
        assert!(fix.contains("`i2cdetect -y -r 1`"), "{fix}");

        for busy in [
            BusError::Timeout,
            BusError::Stuck("SDA held low".into()),
            BusError::ArbitrationLoss,
        ] {
            let c = probe_check(&d, 0x76, "/dev/i2c-1", Err(busy));
            assert_eq!(c.status, Status::Fail, "{c}");
            assert!(c.message.contains("the bus is busy"), "{c}");
            assert!(c.fix.unwrap().contains("power-cycle"));
        }
        let c = probe_check(
            &d,
            0x76,
            "/dev/i2c-1",
            Err(BusError::Unsupported("x".into())),
        );
        assert_eq!(c.status, Status::Warn, "{c}");
        let c = probe_check(&d, 0x76, "/dev/i2c-1", Err(BusError::Other("EIO".into())));
        assert_eq!(c.status, Status::Fail, "{c}");
        assert!(c.fix.unwrap().contains("dmesg"));
        // Each chip's own address pins.
        let c = probe_check(
            &dev("adc", Driver::Ads1115),
            0x48,
            "/dev/i2c-3",
            Err(BusError::Nack(0x48)),
        );
        assert!(
            c.fix
                .as_deref()
                .unwrap()
                .contains("0x48, 0x49, 0x4a or 0x4b"),
            "{c}"
        );
        assert!(
            c.fix.as_deref().unwrap().contains("`i2cdetect -y -r 3`"),
            "{c}"
        );
    }
}
