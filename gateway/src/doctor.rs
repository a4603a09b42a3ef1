//! `covo doctor`: checks what makers get wrong when they set up a board, each as one line that
//! is `ok`, `warn` or `FAIL` with the fix. The checks read the file system under a root
//! (`/` on the board, a fixture folder in tests): the Raspberry Pi model from the device tree,
//! I2C and SPI in the boot `config.txt`, the board file's device nodes (present and openable by
//! this user), the user's groups, each declared I2C device answering at its address (a one-byte
//! read, never a write: doctor writes nothing to any bus), the clock, the state directory's free
//! space, the broker and the model (one tiny request offering one tool).

use crate::config::Config;
use crate::llm::{ChatModel, ChatRequest, Message};
use covo_board::board::{BoardDef, DeviceDef};
use covo_board::driver::{Key, Probe};
use covo_hal_tools::bus::{BusError, I2cBus};
use std::collections::BTreeMap;
use std::fmt;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How one check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Fine.
    Ok,
    /// Works, but may bite later.
    Warn,
    /// Broken: `covo doctor` exits non-zero.
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// How it went.
    pub status: Status,
    /// What was checked (`i2c`, `clock`, …).
    pub topic: String,
    /// What was found.
    pub message: String,
    /// What to do about it (for `warn` and `FAIL`).
    pub fix: Option<String>,
}

impl Check {
    fn new(status: Status, topic: &str, message: impl Into<String>, fix: Option<String>) -> Check {
        Check {
            status,
            topic: topic.into(),
            message: message.into(),
            fix,
        }
    }
    fn ok(topic: &str, message: impl Into<String>) -> Check {
        Check::new(Status::Ok, topic, message, None)
    }
    fn warn(topic: &str, message: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(Status::Warn, topic, message, Some(fix.into()))
    }
    fn fail(topic: &str, message: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(Status::Fail, topic, message, Some(fix.into()))
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.status {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        write!(f, "{s} {}: {}", self.topic, self.message)?;
        if let Some(fix) = &self.fix {
            write!(f, "\n     fix: {fix}")?;
        }
        Ok(())
    }
}

/// The free space below which the state directory fails, and below which it warns.
pub const SPACE_FAIL: u64 = 64 << 20;
/// See [`SPACE_FAIL`].
pub const SPACE_WARN: u64 = 512 << 20;
/// A clock before this (2026-01-01T00:00Z) has not been set: a Pi has no RTC and starts from
/// 1970 or the last saved time until NTP syncs.
pub const SANE_AFTER: u64 = 1_767_225_600;
/// How long the broker check waits for a TCP connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// An I2C bus opened for probing, or why not and the fix.
type Opened = Result<Box<dyn I2cBus>, (String, String)>;

/// What the checks look at.
pub struct Doctor<'a> {
    /// The root of the file system to check (`/`).
    pub root: PathBuf,
    /// The configuration.
    pub config: &'a Config,
    /// The clock to judge.
    pub now: SystemTime,
}

impl Doctor<'_> {
    fn at(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.at(path)).ok()
    }

    /// Every check that needs no network and no model, in report order.
    pub fn local_checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let board = match self.config.board.as_deref() {
            None | Some("sim") => Ok(BoardDef::sim()),
            Some(p) => BoardDef::load(Path::new(p)).map_err(|e| e.to_string()),
        };
        let board = match board {
            Ok(b) => {
                out.push(Check::ok(
                    "board file",
                    format!(
                        "{} ({}): {} devices declared",
                        b.board.name,
                        b.board.model,
                        b.device.len()
                    ),
                ));
                Some(b)
            }
            Err(e) => {
                out.push(Check::fail(
                    "board file",
                    e,
                    "correct the board file named by `board` in covo.toml (see boards/example-maker.toml)",
                ));
                None
            }
        };
        let sim = board.as_ref().is_none_or(|b| b.board.backend == "sim");
        let pi = self.pi_model();
        match (&pi, &board) {
            (Some(m), Some(b)) if !sim && !same_pi(m, &b.board.model) => out.push(Check::warn(
                "hardware",
                format!("this is a {m}, the board file is for a {}", b.board.model),
                "use the board file for this model (boards/rpi4.toml, rpi5.toml, rpi-zero2w.toml)",
            )),
            (Some(m), _) => out.push(Check::ok("hardware", m.clone())),
            (None, _) if sim => out.push(Check::ok(
                "hardware",
                "not a Raspberry Pi; the sim board needs no hardware",
            )),
            (None, _) => out.push(Check::warn(
                "hardware",
                "not a Raspberry Pi (no device-tree model): the boot config checks are skipped",
                "on another Linux board, enable I2C/SPI the way its vendor documents",
            )),
        }
        if let (Some(_), Some(b)) = (&pi, &board) {
            out.extend(self.boot_config(b, sim));
        }
        if let (false, Some(b)) = (sim, &board) {
            out.extend(self.device_nodes(b));
            out.extend(self.usb_serial(b));
            out.push(self.groups(b));
        }
        if let Some(b) = &board {
            out.extend(self.i2c_probes(b, sim));
        }
        out.push(self.clock());
        out.push(self.space());
        out
    }

    /// The model string of a Raspberry Pi from the device tree, if this is one.
    fn pi_model(&self) -> Option<String> {
        let m = self
            .read("proc/device-tree/model")
            .or_else(|| self.read("sys/firmware/devicetree/base/model"))?;
        let m = m.trim_end_matches('\0').trim().to_string();
        m.starts_with("Raspberry Pi").then_some(m)
    }

    /// `dtparam=i2c_arm=on` and `dtparam=spi=on` in the boot config.
    fn boot_config(&self, b: &BoardDef, sim: bool) -> Vec<Check> {
        let Some((path, text)) = ["boot/firmware/config.txt", "boot/config.txt"]
            .iter()
            .find_map(|p| self.read(p).map(|t| (format!("/{p}"), t)))
        else {
            return vec![Check::warn(
                "boot config",
                "no /boot/firmware/config.txt or /boot/config.txt",
                "mount the boot partition, or enable I2C and SPI with `sudo raspi-config`",
            )];
        };
        let params = dtparams(&text);
        let mut out = Vec::new();
        for (topic, key, needed, raspi) in [
            ("i2c", "i2c_arm", !b.i2c.is_empty(), "do_i2c"),
            ("spi", "spi", !b.spi.is_empty(), "do_spi"),
        ] {
            let on = params
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .is_some_and(|(_, v)| v == "on");
            let fix = format!(
                "add `dtparam={key}=on` to {path} (or `sudo raspi-config nonint {raspi} 0`) and reboot"
            );
            out.push(match (on, needed && !sim) {
                (true, _) => Check::ok(topic, format!("enabled in {path}")),
                (false, true) => Check::fail(
                    topic,
                    format!("off in {path}, and the board file uses {topic}"),
                    fix,
                ),
                (false, false) => Check::warn(topic, format!("off in {path}"), fix),
            });
        }
        out
    }

    /// Each bus, serial port and GPIO chip of the board file: present, and openable read-write.
    fn device_nodes(&self, b: &BoardDef) -> Vec<Check> {
        let mut nodes: Vec<(String, &str)> = Vec::new();
        for i in &b.i2c {
            let p = i.path.clone().unwrap_or(format!("/dev/i2c-{}", i.bus));
            nodes.push((p, "i2c"));
        }
        for s in &b.spi {
            let p = s
                .path
                .clone()
                .unwrap_or(format!("/dev/spidev{}.{}", s.bus, s.cs));
            nodes.push((p, "spi"));
        }
        for s in &b.serial {
            if let Some(p) = &s.path {
                nodes.push((p.clone(), "dialout"));
            }
        }
        if !b.pins.available.is_empty() {
            let chip = b.pins.chip.clone().unwrap_or("/dev/gpiochip0".into());
            nodes.push((chip, "gpio"));
        }
        nodes
            .into_iter()
            .map(|(p, group)| {
                let full = self.at(&p);
                if !full.exists() {
                    let fix = match group {
                        "i2c" => "enable I2C (`dtparam=i2c_arm=on`) and reboot; check the bus number with `ls /dev/i2c-*`",
                        "spi" => "enable SPI (`dtparam=spi=on`) and reboot; check with `ls /dev/spidev*`",
                        "dialout" => "enable the UART (`dtparam=uart0=on`) or plug the adapter in; check with `ls /dev/tty*`",
                        _ => "check the chip with `gpiodetect` and set [pins] chip in the board file",
                    };
                    return Check::fail("device", format!("{p} is missing"), fix);
                }
                match std::fs::OpenOptions::new().read(true).write(true).open(&full) {
                    Ok(_) => Check::ok("device", format!("{p} opens read-write")),
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Check::fail(
                        "device",
                        format!("{p} exists but this user cannot open it"),
                        format!("sudo usermod -aG {group} $USER, then log in again"),
                    ),
                    Err(e) => Check::fail(
                        "device",
                        format!("{p} cannot be opened: {e}"),
                        "check `dmesg` for the driver's errors",
                    ),
                }
            })
            .collect()
    }

    /// Each I2C device of the board file: a one-byte read at its address on its bus
    /// ([`covo_hal_tools::bus::probe`]), never a write. On the sim board the probe reads the
    /// simulated bus, whose register-level models answer where `boards/sim.toml` puts them: a
    /// sim board file naming an address no model answers at fails here as its tools would.
    fn i2c_probes(&self, b: &BoardDef, sim: bool) -> Vec<Check> {
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
    fn usb_serial(&self, b: &BoardDef) -> Vec<Check> {
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

    /// The groups the board file's interfaces need (root needs none).
    fn groups(&self, b: &BoardDef) -> Check {
        let status = self.read("proc/self/status").unwrap_or_default();
        let field = |name: &str| -> Vec<u32> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| {
                    v.split_whitespace()
                        .filter_map(|n| n.parse().ok())
                        .collect()
                })
                .unwrap_or_default()
        };
        let uid = field("Uid:").first().copied();
        if uid == Some(0) {
            return Check::ok(
                "groups",
                "running as root: every device opens (the service runs as user covo)",
            );
        }
        let mine = field("Groups:");
        let user = uid
            .and_then(|u| {
                self.read("etc/passwd")?.lines().find_map(|l| {
                    let f: Vec<&str> = l.split(':').collect();
                    (f.len() > 2 && f[2].parse() == Ok(u)).then(|| f[0].to_string())
                })
            })
            .unwrap_or_else(|| "this user".into());
        let groups = self.read("etc/group").unwrap_or_default();
        let mut needed = Vec::new();
        if !b.i2c.is_empty() {
            needed.push("i2c");
        }
        if !b.spi.is_empty() {
            needed.push("spi");
        }
        if !b.pins.available.is_empty() {
            needed.push("gpio");
        }
        if !b.serial.is_empty() {
            needed.push("dialout");
        }
        let mut missing = Vec::new();
        let mut absent = Vec::new();
        for g in &needed {
            let entry = groups.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() > 3 && f[0] == *g).then(|| (f[2].parse::<u32>().ok(), f[3].to_string()))
            });
            match entry {
                None => absent.push(*g),
                Some((gid, members)) => {
                    let member = gid.is_some_and(|gid| mine.contains(&gid))
                        || members.split(',').any(|m| m == user);
                    if !member {
                        missing.push(*g);
                    }
                }
            }
        }
        if !missing.is_empty() {
            Check::fail(
                "groups",
                format!("{user} is not in {}", missing.join(", ")),
                format!(
                    "sudo usermod -aG {} {user}, then log in again",
                    missing.join(",")
                ),
            )
        } else if !absent.is_empty() {
            Check::warn(
                "groups",
                format!("no group {} on this system", absent.join(", ")),
                "Raspberry Pi OS has them; elsewhere give the device nodes to a group of yours (a udev rule)",
            )
        } else {
            Check::ok("groups", format!("{user} is in {}", needed.join(", ")))
        }
    }

    /// The clock is past [`SANE_AFTER`] and, where systemd-timesyncd says so, synchronized.
    fn clock(&self) -> Check {
        let secs = self
            .now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let shown = chrono::DateTime::from_timestamp(secs as i64, 0).map_or_else(
            || secs.to_string(),
            |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
        );
        if secs < SANE_AFTER {
            return Check::fail(
                "clock",
                format!("the clock says {shown}: it was never set (no RTC, NTP not synced yet)"),
                "connect the network and wait for NTP (`timedatectl`); TLS and schedules fail until then",
            );
        }
        if self.at("run/systemd/timesync/synchronized").exists() {
            Check::ok("clock", format!("{shown}, synchronized by NTP"))
        } else {
            Check::warn(
                "clock",
                format!("{shown}, not known to be NTP-synchronized"),
                "`sudo timedatectl set-ntp true`, or add an RTC",
            )
        }
    }

    /// Free space on the state directory's file system.
    fn space(&self) -> Check {
        let home = self.config.home_dir();
        let mut probe = home.as_path();
        while !probe.exists() {
            match probe.parent() {
                Some(p) => probe = p,
                None => break,
            }
        }
        match free_bytes(probe) {
            Err(e) => Check::warn(
                "storage",
                format!("cannot measure free space at {}: {e}", probe.display()),
                "check `df -h`",
            ),
            Ok(free) => {
                let msg = format!("{} MiB free for {}", free >> 20, home.display());
                if free < SPACE_FAIL {
                    Check::fail(
                        "storage",
                        msg,
                        "free space (`sudo apt clean`, old logs in /var/log)",
                    )
                } else if free < SPACE_WARN {
                    Check::warn(
                        "storage",
                        msg,
                        "free space before the store and the logs fill it",
                    )
                } else {
                    Check::ok("storage", msg)
                }
            }
        }
    }

    /// The broker's TCP port answers (TLS and credentials are left to `covo run`'s log).
    pub fn broker(&self) -> Check {
        let Some(m) = &self.config.mqtt else {
            return Check::warn(
                "broker",
                "no [mqtt] in the configuration: covo run works without Home Assistant or a peer",
                "add [mqtt] url = \"mqtt://HOST:1883\" (docs/config.md)",
            );
        };
        let url = m.url();
        let shown = crate::secrets::redact_url(&url);
        let (tls, rest) = match url.split_once("://") {
            Some(("mqtts", r)) => (true, r),
            Some((_, r)) => (false, r),
            None => (false, url.as_str()),
        };
        let hostport = rest.rsplit('@').next().unwrap_or(rest);
        let hostport = hostport.split('/').next().unwrap_or(hostport);
        let hostport = if hostport
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            hostport.to_string()
        } else {
            format!("{hostport}:{}", if tls { 8883 } else { 1883 })
        };
        let fix = "start the broker (`sudo systemctl status mosquitto`) or correct [mqtt] url";
        let addrs: Vec<_> = match hostport.to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) => return Check::fail("broker", format!("{shown}: {e}"), fix),
        };
        let mut last = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                Ok(_) => return Check::ok("broker", format!("{shown} accepts connections")),
                Err(e) => last = Some(e),
            }
        }
        Check::fail(
            "broker",
            format!(
                "{shown} does not answer: {}",
                last.map_or("no address".into(), |e| e.to_string())
            ),
            fix,
        )
    }
}

/// One tiny request offering `sensor_read`: the model answers, and calls the tool.
pub async fn model_check(model: Option<&dyn ChatModel>) -> Check {
    let Some(model) = model else {
        return Check::warn(
            "model",
            "no model configured: `covo chat` cannot talk",
            "set [llm] model and base_url in covo.toml, or COVO_LLM_MODEL (docs/config.md)",
        );
    };
    let messages = [Message::User(
        "How warm is it? Call the sensor_read tool for the sensor \"climate\".".into(),
    )];
    let tools = [&covo_core::catalog::sensors::SENSOR_READ];
    let req = ChatRequest {
        system: "You are a health check. Answer only with a tool call.",
        messages: &messages,
        tools: &tools,
    };
    let mut ignore = |_: &str| {};
    match model.chat(req, &mut ignore).await {
        Ok(r)
            if r.tool_calls
                .iter()
                .any(|c| c.name == covo_core::catalog::sensors::SENSOR_READ.name) =>
        {
            Check::ok(
                "model",
                format!("{} answers and calls tools", model.describe()),
            )
        }
        Ok(_) => Check::warn(
            "model",
            format!(
                "{} answers but did not call the tool it was offered",
                model.describe()
            ),
            "use a model with tool calling (e.g. qwen2.5 or llama3.1 on Ollama)",
        ),
        Err(e) => Check::fail(
            "model",
            e.to_string(),
            "check [llm] base_url, model and the API key (docs/config.md)",
        ),
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

/// Whether a device-tree model names the same Pi as a board file's model.
fn same_pi(found: &str, declared: &str) -> bool {
    // "Raspberry Pi 4 Model B Rev 1.4" against "Raspberry Pi 4 Model B"; "Raspberry Pi Zero 2 W".
    let key = |s: &str| {
        s.split_whitespace()
            .take_while(|w| *w != "Rev")
            .filter(|w| *w != "Model" && *w != "B" && *w != "Plus" && *w != "+")
            .collect::<Vec<_>>()
            .join(" ")
    };
    key(found).starts_with(&key(declared)) || key(declared).starts_with(&key(found))
}

/// `dtparam=` settings of a `config.txt`, in order: `dtparam=a=on,b=off` gives both.
fn dtparams(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(rest) = line.strip_prefix("dtparam=") else {
            continue;
        };
        for part in rest.split(',') {
            let (k, v) = part.split_once('=').unwrap_or((part, "on"));
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

fn free_bytes(path: &Path) -> std::io::Result<u64> {
    let s = rustix::fs::statvfs(path)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use covo_board::driver::Driver;

    #[test]
    fn dtparams_read_lists_comments_and_defaults() {
        let p = dtparams("#dtparam=spi=on\ndtparam=i2c_arm=on,spi=off # audio\ndtparam=audio\n");
        assert_eq!(
            p,
            vec![
                ("i2c_arm".into(), "on".into()),
                ("spi".into(), "off".into()),
                ("audio".into(), "on".into())
            ]
        );
    }

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

    #[test]
    fn pi_models_match_their_board_files() {
        assert!(same_pi(
            "Raspberry Pi 4 Model B Rev 1.4",
            "Raspberry Pi 4 Model B"
        ));
        assert!(same_pi("Raspberry Pi 5 Model B Rev 1.0", "Raspberry Pi 5"));
        assert!(!same_pi(
            "Raspberry Pi 5 Model B Rev 1.0",
            "Raspberry Pi 4 Model B"
        ));
        assert!(same_pi(
            "Raspberry Pi Zero 2 W Rev 1.0",
            "Raspberry Pi Zero 2 W"
        ));
    }
}
