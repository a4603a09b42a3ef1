//! `covo doctor`: checks what makers get wrong when they set up a board, each as one line that
//! is `ok`, `warn` or `FAIL` with the fix. The checks read the file system under a root
//! (`/` on the board, a fixture folder in tests): the Raspberry Pi model from the device tree,
//! I2C and SPI in the boot `config.txt`, the board file's device nodes (present and openable by
//! this user), the user's groups, each declared I2C device answering at its address (a one-byte
//! read, never a write: doctor writes nothing to any bus), the clock, the state directory's free
//! space, the broker and the model (one tiny request offering one tool).

use crate::config::Config;
use crate::llm::{ChatModel, ChatRequest, Message};
use covo_board::board::BoardDef;
use std::fmt;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(feature = "hal")]
mod probes;
#[cfg(feature = "hal")]
pub use probes::probe_check;

/// The hardware checks of a build without the HAL: nothing is probed, and the report says so.
#[cfg(not(feature = "hal"))]
mod probes {
    use super::{Check, Doctor};
    use covo_board::board::BoardDef;

    impl Doctor<'_> {
        pub(super) fn i2c_probes(&self, b: &BoardDef, _sim: bool) -> Vec<Check> {
            if b.device.iter().all(|d| d.address.is_none()) {
                return Vec::new();
            }
            vec![Check::warn(
                "i2c probe",
                format!("not probed: {}", crate::hardware::NO_HARDWARE),
                "build covo with its default features (`hal`) to probe the board's devices",
            )]
        }

        pub(super) fn usb_serial(&self, _b: &BoardDef) -> Vec<Check> {
            Vec::new()
        }
    }
}

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

#[cfg(feature = "web")]
use crate::web::{
    DEFAULT_MAX_STREAMS as DEFAULT_WEB_STREAMS, EXTRA_CONNECTIONS as WEB_EXTRA_CONNECTIONS,
};
#[cfg(not(feature = "web"))]
const DEFAULT_WEB_STREAMS: usize = 0;
#[cfg(not(feature = "web"))]
const WEB_EXTRA_CONNECTIONS: usize = 0;
#[cfg(feature = "mcp")]
use crate::mcp::http::MAX_CONNECTIONS as MCP_CONNECTIONS;
#[cfg(not(feature = "mcp"))]
const MCP_CONNECTIONS: usize = 0;

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
                "use the board file for this model (boards/rpi3.toml, rpi4.toml, rpi5.toml, rpi-zero2w.toml)",
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
        out.push(self.open_files());
        out
    }

    /// The file-descriptor budget `covo run` will have, and the connections its listeners may
    /// hold of it.
    fn open_files(&self) -> Check {
        let mut held = Vec::new();
        if self.config.web.bind.is_some() {
            let streams = self
                .config
                .web
                .max_streams
                .unwrap_or(DEFAULT_WEB_STREAMS)
                .max(1);
            held.push(("dashboard", streams + WEB_EXTRA_CONNECTIONS));
        }
        if self.config.mcp.bind.is_some() {
            held.push(("MCP", MCP_CONNECTIONS));
        }
        let msg = crate::fds::describe(&held);
        let wanted: usize = held.iter().map(|(_, n)| n).sum();
        let (_, hard) = crate::fds::budget();
        if wanted > crate::fds::connection_budget(hard) {
            Check::warn(
                "open files",
                msg,
                format!(
                    "raise the limit (LimitNOFILE= in the systemd unit, or `ulimit -n`) to at \
                     least {}, or lower [web] max_streams",
                    wanted * 2 + crate::fds::RESERVE as usize
                ),
            )
        } else {
            Check::ok("open files", msg)
        }
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
        let fix = "start the broker (`sudo systemctl status mosquitto`) or correct [mqtt] url";
        let urls = m.url();
        let results: Vec<Result<String, String>> = covo_wire::mqtt::split_urls(&urls)
            .into_iter()
            .map(broker_answers)
            .collect();
        let up = results.iter().filter(|r| r.is_ok()).count();
        let said: Vec<String> = results
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| e))
            .collect();
        match (up, said.len()) {
            (0, _) => Check::fail("broker", said.join("; "), fix),
            (u, n) if u == n => Check::ok("broker", said.join("; ")),
            _ => Check::warn(
                "broker",
                format!("{up} of {} brokers answer: {}", said.len(), said.join("; ")),
                fix,
            ),
        }
    }
}

/// Whether one broker URL accepts TCP connections: what to say either way.
fn broker_answers(url: &str) -> Result<String, String> {
    let shown = crate::secrets::redact_url(url);
    let (tls, rest) = match url.split_once("://") {
        Some(("mqtts", r)) => (true, r),
        Some((_, r)) => (false, r),
        None => (false, url),
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
    let addrs: Vec<_> = match hostport.to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(format!("{shown} accepts connections")),
            Err(e) => last = Some(e),
        }
    }
    Err(format!(
        "{shown} does not answer: {}",
        last.map_or("no address".into(), |e| e.to_string())
    ))
}

/// One tiny request offering `sensor_read`: the model answers, and calls the tool.
/// With none configured, the model servers found on this machine are named (`local_addrs`,
/// see `llm::local`).
pub async fn model_check(model: Option<&dyn ChatModel>, local_addrs: &str) -> Check {
    let Some(model) = model else {
        let found = crate::llm::local::discover(local_addrs).await;
        return match found.iter().find(|f| !f.models.is_empty()) {
            Some(f) => Check::warn(
                "model",
                format!("no model configured; found {f}: `covo chat` uses it"),
                format!("to keep it, set {} (or [llm] in covo.toml)", f.settings()),
            ),
            None => Check::warn(
                "model",
                "no model configured, and no Ollama or llama.cpp server answers here: `covo chat` cannot talk",
                "set [llm] model and base_url in covo.toml, or COVO_LLM_MODEL (docs/config.md)",
            ),
        };
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
    let answer = model.chat(req, &mut ignore).await;
    // Asked after the call: the call is what teaches `auto` how this server takes tools.
    let how = match model.tool_wire() {
        Some((wire, Some(why))) => format!("; tool calls: {} ({why})", wire.name()),
        Some((wire, None)) => format!("; tool calls: {}", wire.name()),
        None => String::new(),
    };
    match answer {
        Ok(r) => {
            let calls = if r.tool_calls.is_empty() {
                crate::agent::textcalls::extract(&r.text, 0).1
            } else {
                r.tool_calls
            };
            if calls
                .iter()
                .any(|c| c.name == covo_core::catalog::sensors::SENSOR_READ.name)
            {
                Check::ok(
                    "model",
                    format!("{} answers and calls tools{how}", model.describe()),
                )
            } else {
                Check::warn(
                    "model",
                    format!(
                        "{} answers but did not call the tool it was offered{how}",
                        model.describe()
                    ),
                    "use a model with tool calling (e.g. qwen2.5 or llama3.1 on Ollama), or set [llm] tool_calls = \"constrained\"",
                )
            }
        }
        Err(e) => Check::fail(
            "model",
            e.to_string(),
            "check [llm] base_url, model and the API key (docs/config.md)",
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
