//! The sysfs parts: PWM channels under `/sys/class/pwm`, and serial ports listed from
//! `/sys/class/tty`. Plain file reads and writes, so the root is injectable and the tests run
//! against a fake tree.

use super::file_error;
use crate::board::UsbMatch;
use crate::bus::{BusError, Pwm};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long [`SysfsPwm::open`] waits for a freshly exported channel to appear and become writable
/// (udev changes its group after the kernel creates it).
const EXPORT_WAIT: Duration = Duration::from_secs(1);

/// One PWM channel through sysfs: `<chip>/pwmN/{period,duty_cycle,enable}`, in nanoseconds.
///
/// The channel is left running when this is dropped (a fan keeps turning while the gateway
/// restarts); it is not unexported.
#[derive(Debug)]
pub struct SysfsPwm {
    dir: PathBuf,
    period_ns: u64,
    duty_ns: u64,
}

impl SysfsPwm {
    /// Opens `channel` of the chip directory `chip` (`/sys/class/pwm/pwmchip0`), exporting it if
    /// needed.
    pub fn open(chip: &Path, channel: u32) -> Result<SysfsPwm, BusError> {
        Self::open_within(chip, channel, EXPORT_WAIT)
    }

    fn open_within(chip: &Path, channel: u32, wait: Duration) -> Result<SysfsPwm, BusError> {
        if !chip.is_dir() {
            return Err(BusError::Other(format!(
                "PWM chip {} does not exist: enable the PWM overlay (dtoverlay=pwm or pwm-2chan) \
                 and check `ls /sys/class/pwm`",
                chip.display()
            )));
        }
        if let Some(n) = read_u64(&chip.join("npwm")) {
            if u64::from(channel) >= n {
                return Err(BusError::Other(format!(
                    "PWM chip {} has {n} channel(s) (0-{}), not {channel}",
                    chip.display(),
                    n.saturating_sub(1)
                )));
            }
        }
        let dir = chip.join(format!("pwm{channel}"));
        if !dir.is_dir() {
            let export = chip.join("export");
            fs::write(&export, channel.to_string())
                .map_err(|e| file_error("PWM export", &export, &e))?;
            let start = Instant::now();
            while !dir.join("period").exists() {
                if start.elapsed() >= wait {
                    return Err(BusError::Other(format!(
                        "exported PWM channel {channel}, but {} did not appear within {wait:?}",
                        dir.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(SysfsPwm {
            period_ns: read_u64(&dir.join("period")).unwrap_or(0),
            duty_ns: read_u64(&dir.join("duty_cycle")).unwrap_or(0),
            dir,
        })
    }

    /// The channel's directory (`.../pwmchip0/pwm0`).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn write(&self, file: &str, value: u64) -> Result<(), BusError> {
        let path = self.dir.join(file);
        fs::write(&path, value.to_string()).map_err(|e| match e.raw_os_error() {
            Some(super::errno::EINVAL) => BusError::Unsupported(format!(
                "the PWM driver refused {file} = {value} ({})",
                path.display()
            )),
            _ => file_error("PWM file", &path, &e),
        })
    }
}

/// The period and duty in nanoseconds for a frequency and a duty fraction.
fn to_ns(frequency_hz: f64, duty: f64) -> Result<(u64, u64), BusError> {
    if !(frequency_hz.is_finite() && frequency_hz > 0.0) {
        return Err(BusError::Unsupported(format!(
            "frequency {frequency_hz} Hz: expected a positive number"
        )));
    }
    if !(0.0..=1.0).contains(&duty) {
        return Err(BusError::Unsupported(format!(
            "duty {duty}: expected 0.0-1.0"
        )));
    }
    let period = (1e9 / frequency_hz).round();
    if period < 1.0 || period > u32::MAX as f64 {
        return Err(BusError::Unsupported(format!(
            "{frequency_hz} Hz is outside what a nanosecond period can express (0.24 Hz-1 GHz)"
        )));
    }
    let period = period as u64;
    let duty_ns = ((period as f64) * duty).round() as u64;
    Ok((period, duty_ns.min(period)))
}

/// The order to write `period` and `duty_cycle` in so the kernel never sees a duty longer than the
/// period (it refuses that with EINVAL): shrinking below the current duty goes duty first.
fn write_order(current_duty_ns: u64, period_ns: u64, duty_ns: u64) -> [(&'static str, u64); 2] {
    if period_ns >= current_duty_ns {
        [("period", period_ns), ("duty_cycle", duty_ns)]
    } else {
        [("duty_cycle", duty_ns), ("period", period_ns)]
    }
}

impl Pwm for SysfsPwm {
    fn set(&mut self, frequency_hz: f64, duty: f64) -> Result<(f64, f64), BusError> {
        let (period, duty_ns) = to_ns(frequency_hz, duty)?;
        // What the kernel holds now (someone else may have changed it), else what we last set.
        let current = read_u64(&self.dir.join("duty_cycle")).unwrap_or(self.duty_ns);
        for (file, value) in write_order(current, period, duty_ns) {
            self.write(file, value)?;
        }
        self.write("enable", 1)?;
        self.period_ns = period;
        self.duty_ns = duty_ns;
        Ok(self.get())
    }

    fn get(&self) -> (f64, f64) {
        if self.period_ns == 0 {
            return (0.0, 0.0);
        }
        (
            1e9 / self.period_ns as f64,
            self.duty_ns as f64 / self.period_ns as f64,
        )
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn read_string(path: &Path) -> Option<String> {
    let s = fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// A serial port found in sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    /// The device path (`/dev/ttyACM0`).
    pub path: String,
    /// USB vendor id; `None` for on-board UARTs.
    pub vid: Option<u16>,
    /// USB product id.
    pub pid: Option<u16>,
    /// USB serial number, if the device has one.
    pub serial: Option<String>,
    /// USB product string.
    pub product: Option<String>,
}

impl PortInfo {
    fn describe(&self) -> String {
        match (self.vid, self.pid) {
            (Some(v), Some(p)) => format!(
                "{} ({v:04x}:{p:04x}{}{})",
                self.path,
                self.product
                    .as_ref()
                    .map_or(String::new(), |x| format!(" {x}")),
                self.serial
                    .as_ref()
                    .map_or(String::new(), |x| format!(", serial {x}"))
            ),
            _ => self.path.clone(),
        }
    }
}

/// The serial ports of this machine, from `/sys/class/tty`.
pub fn list_ports() -> Vec<PortInfo> {
    list_ports_in(Path::new("/sys"))
}

/// The serial ports under `sys_root` (normally `/sys`): every `class/tty/<name>` with a `device`
/// (virtual consoles and ptys have none), with the USB attributes of the USB device above it
/// when there is one. `ttyACM*` ports sit on a USB interface whose parent is the device;
/// `ttyUSB*` ports one level further down, so up to three levels are searched. Sorted by path.
/// Legacy `ttyS*` ports appear even when no UART is behind them (as on PCs).
pub fn list_ports_in(sys_root: &Path) -> Vec<PortInfo> {
    let Ok(entries) = fs::read_dir(sys_root.join("class/tty")) else {
        return Vec::new();
    };
    let mut ports: Vec<PortInfo> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let device = fs::canonicalize(entry.path().join("device")).ok()?;
            let usb = device
                .ancestors()
                .take(3)
                .find(|d| d.join("idVendor").is_file() && d.join("idProduct").is_file());
            let hex = |d: &Path, f: &str| {
                read_string(&d.join(f)).and_then(|s| u16::from_str_radix(&s, 16).ok())
            };
            Some(PortInfo {
                path: format!("/dev/{name}"),
                vid: usb.and_then(|d| hex(d, "idVendor")),
                pid: usb.and_then(|d| hex(d, "idProduct")),
                serial: usb.and_then(|d| read_string(&d.join("serial"))),
                product: usb.and_then(|d| read_string(&d.join("product"))),
            })
        })
        .collect();
    ports.sort_by(|a, b| a.path.cmp(&b.path));
    ports
}

fn parse_id(field: &str, s: &str) -> Result<u16, BusError> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_prefix("0x").unwrap_or(&t);
    if t.is_empty() || t.len() > 4 {
        return Err(BusError::Other(format!(
            "usb.{field} '{s}' is not a 4-digit hex id like 2e8a"
        )));
    }
    u16::from_str_radix(t, 16).map_err(|_| {
        BusError::Other(format!(
            "usb.{field} '{s}' is not a 4-digit hex id like 2e8a"
        ))
    })
}

/// The one port matching a board's USB match (vendor, product and, if given, serial number).
/// No match or several matches are errors that list what was seen, so the board file can be
/// fixed.
pub fn match_port<'a>(usb: &UsbMatch, ports: &'a [PortInfo]) -> Result<&'a PortInfo, BusError> {
    let vid = parse_id("vid", &usb.vid)?;
    let pid = parse_id("pid", &usb.pid)?;
    let found: Vec<&PortInfo> = ports
        .iter()
        .filter(|p| p.vid == Some(vid) && p.pid == Some(pid))
        .filter(|p| usb.serial.is_none() || p.serial == usb.serial)
        .collect();
    let wanted = format!(
        "{vid:04x}:{pid:04x}{}",
        usb.serial
            .as_ref()
            .map_or(String::new(), |s| format!(" with serial {s}"))
    );
    match found.as_slice() {
        [one] => Ok(one),
        [] => {
            let seen: Vec<String> = ports
                .iter()
                .filter(|p| p.vid.is_some())
                .map(PortInfo::describe)
                .collect();
            Err(BusError::Other(format!(
                "no USB serial port matches {wanted} (USB serial ports present: {}); is it plugged in?",
                if seen.is_empty() { "none".into() } else { seen.join(", ") }
            )))
        }
        many => Err(BusError::Other(format!(
            "{} USB serial ports match {wanted}: {}; add `serial` to the board's usb match",
            many.len(),
            many.iter()
                .map(|p| p.describe())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn fake_pwm_chip(root: &Path, npwm: u32) -> PathBuf {
        let chip = root.join("class/pwm/pwmchip0");
        fs::create_dir_all(&chip).unwrap();
        fs::write(chip.join("npwm"), npwm.to_string()).unwrap();
        fs::write(chip.join("export"), "").unwrap();
        chip
    }

    fn fake_channel(chip: &Path, channel: u32) -> PathBuf {
        let dir = chip.join(format!("pwm{channel}"));
        fs::create_dir_all(&dir).unwrap();
        for f in ["period", "duty_cycle", "enable"] {
            fs::write(dir.join(f), "0\n").unwrap();
        }
        dir
    }

    fn read(p: &Path) -> String {
        fs::read_to_string(p).unwrap()
    }

    #[test]
    fn pwm_writes_period_and_duty_in_nanoseconds_and_enables() {
        let root = tempfile::tempdir().unwrap();
        let chip = fake_pwm_chip(root.path(), 2);
        let dir = fake_channel(&chip, 0);
        let mut pwm = SysfsPwm::open(&chip, 0).unwrap();
        assert_eq!(pwm.get(), (0.0, 0.0));
        assert_eq!(read(&chip.join("export")), "", "already exported");

        let (f, d) = pwm.set(25_000.0, 0.5).unwrap();
        assert_eq!(read(&dir.join("period")), "40000");
        assert_eq!(read(&dir.join("duty_cycle")), "20000");
        assert_eq!(read(&dir.join("enable")), "1");
        assert_eq!((f, d), (25_000.0, 0.5));

        // 3 Hz is not a whole number of nanoseconds: the set value is what comes back.
        let (f, d) = pwm.set(3.0, 1.0 / 3.0).unwrap();
        assert_eq!(read(&dir.join("period")), "333333333");
        assert_eq!(read(&dir.join("duty_cycle")), "111111111");
        assert!((f - 3.0).abs() < 1e-6 && (d - 1.0 / 3.0).abs() < 1e-6);
        assert_eq!(pwm.get(), (f, d));

        // A reopened channel reads what is set.
        let again = SysfsPwm::open(&chip, 0).unwrap();
        assert_eq!(again.get(), (f, d));
    }

    #[test]
    fn pwm_never_lets_the_duty_exceed_the_period() {
        // Raising the frequency below the current duty: duty first.
        assert_eq!(
            write_order(20_000, 10_000, 5_000),
            [("duty_cycle", 5_000), ("period", 10_000)]
        );
        // Lowering the frequency: period first.
        assert_eq!(
            write_order(20_000, 1_000_000, 500_000),
            [("period", 1_000_000), ("duty_cycle", 500_000)]
        );
        // From a fresh channel (period 0, duty 0): period first.
        assert_eq!(write_order(0, 40_000, 40_000)[0], ("period", 40_000));
        // Full duty rounds to the period, never past it.
        assert_eq!(to_ns(3.0, 1.0).unwrap(), (333_333_333, 333_333_333));
    }

    #[test]
    fn pwm_refuses_what_it_cannot_express() {
        for (f, d) in [
            (0.0, 0.5),
            (-1.0, 0.5),
            (f64::NAN, 0.5),
            (3e9, 0.5),
            (0.1, 0.5),
            (1000.0, 1.5),
        ] {
            assert!(
                matches!(to_ns(f, d), Err(BusError::Unsupported(_))),
                "{f} {d}"
            );
        }
    }

    #[test]
    fn pwm_open_exports_checks_the_channel_count_and_explains_a_missing_chip() {
        let root = tempfile::tempdir().unwrap();
        let chip = fake_pwm_chip(root.path(), 2);
        let e = SysfsPwm::open(&chip, 2).unwrap_err();
        assert!(e.to_string().contains("has 2 channel(s) (0-1)"), "{e}");

        // Export writes the channel number, then waits for the directory (which never comes
        // here, as no kernel is behind the fake tree).
        let e = SysfsPwm::open_within(&chip, 1, Duration::from_millis(30)).unwrap_err();
        assert_eq!(read(&chip.join("export")), "1");
        assert!(e.to_string().contains("did not appear"), "{e}");

        // The kernel creating the directory a little later is waited for.
        let later = chip.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            fake_channel(&later, 1);
        });
        let pwm = SysfsPwm::open_within(&chip, 1, Duration::from_secs(5)).unwrap();
        t.join().unwrap();
        assert!(pwm.path().ends_with("pwmchip0/pwm1"));

        let e = SysfsPwm::open(&root.path().join("class/pwm/pwmchip9"), 0).unwrap_err();
        assert!(e.to_string().contains("dtoverlay=pwm"), "{e}");
    }

    /// A sysfs-like tree: `class/tty/<name>` links into `devices/...`, `device` links to the
    /// parent, as the kernel lays them out.
    fn fake_tty(root: &Path, name: &str, device: &str) {
        let class = root.join("class/tty");
        fs::create_dir_all(&class).unwrap();
        let dev_dir = root.join(device);
        let tty_dir = dev_dir.join("tty").join(name);
        fs::create_dir_all(&tty_dir).unwrap();
        symlink(&dev_dir, tty_dir.join("device")).unwrap();
        symlink(&tty_dir, class.join(name)).unwrap();
    }

    fn fake_usb_device(root: &Path, dir: &str, vid: &str, pid: &str, serial: Option<&str>) {
        let d = root.join(dir);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("idVendor"), format!("{vid}\n")).unwrap();
        fs::write(d.join("idProduct"), format!("{pid}\n")).unwrap();
        fs::write(d.join("product"), "Board\n").unwrap();
        if let Some(s) = serial {
            fs::write(d.join("serial"), format!("{s}\n")).unwrap();
        }
    }

    fn fake_sys() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let usb = "devices/platform/scb/fd500000.pcie/pci0000:00/usb1/1-1";
        // A Pico (CDC ACM): the tty's device is the interface, whose parent is the USB device.
        fake_usb_device(r, &format!("{usb}/1-1.2"), "2e8a", "000a", Some("E661A"));
        fake_tty(r, "ttyACM0", &format!("{usb}/1-1.2/1-1.2:1.0"));
        // A second Pico.
        fake_usb_device(r, &format!("{usb}/1-1.3"), "2e8a", "000a", Some("E661B"));
        fake_tty(r, "ttyACM1", &format!("{usb}/1-1.3/1-1.3:1.0"));
        // A CH340 adapter (usb-serial): one more level, the port under the interface.
        fake_usb_device(r, &format!("{usb}/1-1.4"), "1a86", "7523", None);
        fake_tty(r, "ttyUSB0", &format!("{usb}/1-1.4/1-1.4:1.0/ttyUSB0"));
        // The on-board PL011.
        fake_tty(r, "ttyAMA0", "devices/platform/soc/fe201000.serial");
        // A virtual console: no device link, not a port.
        fs::create_dir_all(r.join("class/tty/tty1")).unwrap();
        root
    }

    #[test]
    fn ports_are_listed_with_their_usb_attributes() {
        let sys = fake_sys();
        let ports = list_ports_in(sys.path());
        let paths: Vec<&str> = ports.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/dev/ttyACM0",
                "/dev/ttyACM1",
                "/dev/ttyAMA0",
                "/dev/ttyUSB0"
            ]
        );
        assert_eq!(
            ports[0],
            PortInfo {
                path: "/dev/ttyACM0".into(),
                vid: Some(0x2e8a),
                pid: Some(0x000a),
                serial: Some("E661A".into()),
                product: Some("Board".into()),
            }
        );
        assert_eq!((ports[2].vid, ports[2].serial.as_deref()), (None, None));
        assert_eq!((ports[3].vid, ports[3].pid), (Some(0x1a86), Some(0x7523)));
        assert_eq!(ports[3].serial, None);
        assert!(list_ports_in(&sys.path().join("nowhere")).is_empty());
    }

    #[test]
    fn a_usb_match_finds_one_port_or_says_why_not() {
        let sys = fake_sys();
        let ports = list_ports_in(sys.path());
        let m = |vid: &str, pid: &str, serial: Option<&str>| UsbMatch {
            vid: vid.into(),
            pid: pid.into(),
            serial: serial.map(Into::into),
        };
        assert_eq!(
            match_port(&m("1A86", "0x7523", None), &ports).unwrap().path,
            "/dev/ttyUSB0"
        );
        assert_eq!(
            match_port(&m("2e8a", "000a", Some("E661B")), &ports)
                .unwrap()
                .path,
            "/dev/ttyACM1"
        );
        let e = match_port(&m("2e8a", "000a", None), &ports).unwrap_err();
        assert!(
            e.to_string().contains("2 USB serial ports match 2e8a:000a")
                && e.to_string().contains("serial E661A"),
            "{e}"
        );
        let e = match_port(&m("0403", "6001", None), &ports).unwrap_err();
        assert!(
            e.to_string()
                .contains("no USB serial port matches 0403:6001")
                && e.to_string().contains("/dev/ttyUSB0 (1a86:7523 Board)"),
            "{e}"
        );
        let e = match_port(&m("pico", "000a", None), &ports).unwrap_err();
        assert!(e.to_string().contains("usb.vid 'pico'"), "{e}");
    }
}
