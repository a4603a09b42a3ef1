//! The `system` toolset: the gateway's own health, network, services and logs, and a reboot.
//!
//! Everything but the service tools reads the kernel's files (`/proc`, `/sys`, the device tree),
//! through functions that take the root they read under, so tests run them against a real Pi's
//! files copied into `gateway/tests/fixtures/`. The service tools and `reboot` run `systemctl`
//! and `journalctl`; without them those tools are unavailable with that reason.

use super::command::{find_program, Cmd};
use crate::error::CallError;
use crate::exec::Cx;
use crate::spec::{AvailCx, ToolDef};
use covo_core::catalog::system as c;
use covo_core::spec::Availability;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::SYSTEM_INFO, system_info),
    ToolDef::local(&c::NETWORK_INFO, network_info),
    ToolDef::local(&c::SERVICE_STATUS, service_status).when(needs_systemd),
    ToolDef::local(&c::LOG_TAIL, log_tail),
    ToolDef::local(&c::REBOOT, reboot).when(needs_systemd),
];

/// The unit covo runs as (the packaged service).
pub const COVO_UNIT: &str = "covo.service";

/// The most bytes `log_tail` reads from the end of a file.
const TAIL_BYTES: u64 = 256 * 1024;
/// How long a `systemctl` or `journalctl` call may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether systemd runs this system: `/run/systemd/system` exists (what `sd_booted()` checks)
/// and `systemctl` is installed.
fn needs_systemd(_: &AvailCx<'_>) -> Availability {
    if !Path::new("/run/systemd/system").is_dir() {
        return Availability::no("systemd is not running on this system");
    }
    match find_program("systemctl") {
        Some(_) => Availability::yes(),
        None => Availability::no("systemctl is not installed"),
    }
}

// ---- system_info --------------------------------------------------------------------------

fn system_info(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let mut v = read_system(Path::new("/"));
    let disks = [
        ("root", PathBuf::from("/")),
        ("covo_home", cx.home().to_path_buf()),
    ];
    v["disk"] = disks
        .iter()
        .filter_map(|(what, p)| disk(p).map(|d| (what.to_string(), d)))
        .collect::<Map<_, _>>()
        .into();
    Ok(v)
}

fn read(root: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(root.join(file.trim_start_matches('/'))).ok()
}

/// Everything `system_info` reports that lives in files under `root`.
pub fn read_system(root: &Path) -> Value {
    let mut v = json!({});
    let temps = thermal_zones(root);
    if let Some(cpu) = temps
        .iter()
        .find(|(t, _)| t.contains("cpu") || t.contains("soc") || t == "x86_pkg_temp")
        .or(temps.first())
    {
        v["cpu_temperature_c"] = json!(cpu.1);
    }
    if !temps.is_empty() {
        v["thermal_zones"] = temps
            .iter()
            .map(|(t, c)| json!({"type": t, "celsius": c}))
            .collect::<Vec<_>>()
            .into();
    }
    // The Pi's firmware reports throttling through the raspberrypi-hwmon/firmware driver.
    let throttled = read(root, "sys/devices/platform/soc/soc:firmware/get_throttled")
        .and_then(|s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok());
    if let Some(bits) = throttled {
        v["throttling"] = throttling(bits);
    }
    if let Some(l) = read(root, "proc/loadavg") {
        let f: Vec<f64> = l
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        if f.len() == 3 {
            v["load"] = json!({"1m": f[0], "5m": f[1], "15m": f[2]});
        }
    }
    let cpus = read(root, "proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .filter(|n| *n > 0);
    if let Some(n) = cpus {
        v["cpus"] = json!(n);
    }
    if let Some(m) = read(root, "proc/meminfo") {
        let kib = |key: &str| {
            m.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        };
        if let (Some(total), Some(avail)) = (kib("MemTotal"), kib("MemAvailable")) {
            v["memory"] = json!({
                "total_mib": total / 1024,
                "available_mib": avail / 1024,
                "used_percent": percent(total - avail.min(total), total),
            });
        }
        if let (Some(total), Some(free)) = (kib("SwapTotal"), kib("SwapFree")) {
            v["swap"] =
                json!({"total_mib": total / 1024, "used_mib": (total - free.min(total)) / 1024});
        }
    }
    if let Some(u) = read(root, "proc/uptime") {
        if let Some(secs) = u
            .split_whitespace()
            .next()
            .and_then(|s| s.parse::<f64>().ok())
        {
            v["uptime"] = json!({"seconds": secs as u64, "text": human_duration(secs as u64)});
        }
    }
    let os = read(root, "etc/os-release").and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|x| x.trim_matches('"').to_string())
    });
    if let Some(os) = os {
        v["os"] = json!(os);
    }
    if let Some(k) = read(root, "proc/sys/kernel/osrelease") {
        v["kernel"] = json!(k.trim());
    }
    if let Some(a) =
        read(root, "proc/sys/kernel/arch").or_else(|| Some(std::env::consts::ARCH.into()))
    {
        v["arch"] = json!(a.trim());
    }
    // The device tree's model string ends in a NUL.
    if let Some(m) = read(root, "proc/device-tree/model") {
        let m = m.trim_end_matches('\0').trim();
        if !m.is_empty() {
            v["board_model"] = json!(m);
        }
    }
    v
}

/// Thermal zones as (type, °C), in zone order.
fn thermal_zones(root: &Path) -> Vec<(String, f64)> {
    let dir = root.join("sys/class/thermal");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut zones: Vec<(u32, String, f64)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: u32 = name.strip_prefix("thermal_zone")?.parse().ok()?;
            let milli: f64 = std::fs::read_to_string(e.path().join("temp"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            let kind = std::fs::read_to_string(e.path().join("type"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| name.clone());
            Some((n, kind, (milli / 100.0).round() / 10.0))
        })
        .collect();
    zones.sort_by_key(|z| z.0);
    zones.into_iter().map(|(_, t, c)| (t, c)).collect()
}

/// The Pi firmware's `get_throttled` bits, in words.
fn throttling(bits: u32) -> Value {
    const FLAGS: [(u32, &str); 4] = [
        (0, "under-voltage"),
        (1, "ARM frequency capped"),
        (2, "throttled"),
        (3, "soft temperature limit"),
    ];
    let now: Vec<&str> = FLAGS
        .iter()
        .filter(|(b, _)| bits & (1 << b) != 0)
        .map(|(_, s)| *s)
        .collect();
    let since_boot: Vec<&str> = FLAGS
        .iter()
        .filter(|(b, _)| bits & (1 << (b + 16)) != 0)
        .map(|(_, s)| *s)
        .collect();
    json!({"raw": format!("0x{bits:x}"), "now": now, "since_boot": since_boot})
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

fn human_duration(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    match (d, h) {
        (0, 0) => format!("{m} min"),
        (0, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h"),
    }
}

/// Size and free space of the filesystem holding `path`.
/// (A path not made yet is measured on its nearest existing parent's filesystem.)
fn disk(path: &Path) -> Option<Value> {
    let s = path.ancestors().find_map(|p| rustix::fs::statvfs(p).ok())?;
    let total = s.f_blocks * s.f_frsize;
    let avail = s.f_bavail * s.f_frsize;
    let free = s.f_bfree * s.f_frsize;
    Some(json!({
        "path": path.display().to_string(),
        "total_mib": total / (1 << 20),
        "available_mib": avail / (1 << 20),
        "used_percent": percent(total - free.min(total), total),
    }))
}

// ---- network_info -------------------------------------------------------------------------

fn network_info(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let mut v = read_network(Path::new("/"));
    v["broker"] = match &cx.config().mqtt {
        None => json!({"configured": false}),
        Some(m) => json!({
            "configured": true,
            "url": m.url_shown(),
            "gateway_id": m.gateway_id,
            "peer_connected": cx.peer_connected(),
        }),
    };
    Ok(v)
}

/// Interfaces from `/sys/class/net` with their IPv4 addresses (`/proc/net/fib_trie`), IPv6
/// addresses (`/proc/net/if_inet6`) and Wi-Fi signal (`/proc/net/wireless`), under `root`.
pub fn read_network(root: &Path) -> Value {
    let v4 = read(root, "proc/net/fib_trie")
        .map(|s| ipv4_by_interface(&s, read(root, "proc/net/route").as_deref().unwrap_or("")))
        .unwrap_or_default();
    let v6 = read(root, "proc/net/if_inet6")
        .map(|s| ipv6_by_interface(&s))
        .unwrap_or_default();
    let wifi = read(root, "proc/net/wireless")
        .map(|s| wireless(&s))
        .unwrap_or_default();
    let mut names: Vec<String> = std::fs::read_dir(root.join("sys/class/net"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let interfaces: Vec<Value> = names
        .iter()
        .map(|n| {
            let f = |x: &str| read(root, &format!("sys/class/net/{n}/{x}")).map(|s| s.trim().to_string());
            let mut i = json!({
                "name": n,
                "state": f("operstate").unwrap_or_else(|| "unknown".into()),
                "mac": f("address"),
                "ipv4": v4.iter().filter(|(i, _)| i == n).map(|(_, a)| a.clone()).collect::<Vec<_>>(),
                "ipv6": v6.iter().filter(|(i, _)| i == n).map(|(_, a)| a.clone()).collect::<Vec<_>>(),
            });
            if let Some((_, q, dbm)) = wifi.iter().find(|(i, _, _)| i == n) {
                i["wifi"] = json!({"link_quality": q, "signal_dbm": dbm, "signal": signal_words(*dbm)});
            }
            i
        })
        .collect();
    json!({"interfaces": interfaces})
}

/// IPv4 host addresses by interface. `fib_trie` lists each local address as a `/32 host LOCAL`
/// leaf; the interface is the one whose route (`/proc/net/route`, hex little-endian) covers it.
fn ipv4_by_interface(fib_trie: &str, route: &str) -> Vec<(String, String)> {
    let routes: Vec<(String, u32, u32)> = route
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dest = u32::from_str_radix(f.get(1)?, 16).ok()?.swap_bytes();
            let mask = u32::from_str_radix(f.get(7)?, 16).ok()?.swap_bytes();
            Some((f[0].to_string(), dest, mask))
        })
        .collect();
    let mut out: Vec<(String, String)> = Vec::new();
    let mut last: Option<&str> = None;
    for l in fib_trie.lines() {
        let t = l.trim_start();
        if let Some(a) = t.strip_prefix("|-- ") {
            last = Some(a.trim());
        } else if t.starts_with("/32 host LOCAL") {
            let Some(addr) = last else { continue };
            let Ok(ip) = addr.parse::<std::net::Ipv4Addr>() else {
                continue;
            };
            let n = u32::from(ip);
            let iface = if ip.is_loopback() {
                Some("lo".to_string())
            } else {
                routes
                    .iter()
                    .filter(|(_, d, m)| *m != 0 && n & m == *d)
                    .max_by_key(|(_, _, m)| m.count_ones())
                    .map(|(i, _, _)| i.clone())
            };
            if let Some(i) = iface {
                let e = (i, ip.to_string());
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
    }
    out
}

/// IPv6 addresses by interface from `/proc/net/if_inet6` (32 hex digits, index, prefix
/// length, scope, flags, name).
fn ipv6_by_interface(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let hex = f.first()?;
            let n = u128::from_str_radix(hex, 16).ok()?;
            let prefix = u8::from_str_radix(f.get(2)?, 16).ok()?;
            Some((
                f.get(5)?.to_string(),
                format!("{}/{prefix}", std::net::Ipv6Addr::from(n)),
            ))
        })
        .collect()
}

/// Wi-Fi links from `/proc/net/wireless`: (interface, link quality, signal level in dBm).
fn wireless(text: &str) -> Vec<(String, f64, f64)> {
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |s: &str| s.trim_end_matches('.').parse::<f64>().ok();
            Some((name.trim().to_string(), num(f.get(1)?)?, num(f.get(2)?)?))
        })
        .collect()
}

fn signal_words(dbm: f64) -> &'static str {
    match dbm {
        d if d >= -55.0 => "excellent",
        d if d >= -67.0 => "good",
        d if d >= -75.0 => "fair",
        _ => "weak",
    }
}

// ---- service_status -----------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceArgs {
    service: String,
    #[serde(default = "twenty")]
    lines: u32,
}

fn twenty() -> u32 {
    20
}

/// A unit name as `systemctl` takes it: letters, digits and `:-_.@\\`, at most 256 bytes, not
/// starting with `-` (so it is never read as an option).
fn unit_name(cx: &Cx<'_>, s: &str) -> Result<String, CallError> {
    let ok = !s.is_empty()
        && s.len() <= 256
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || ":-_.@\\".contains(c));
    if !ok {
        return Err(cx.fail(format!(
            "'{s}' is not a systemd unit name (letters, digits and :-_.@ only)"
        )));
    }
    Ok(if s.contains('.') {
        s.to_string()
    } else {
        format!("{s}.service")
    })
}

fn service_status(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ServiceArgs = cx.args(args)?;
    let unit = unit_name(cx, &a.service)?;
    let show = Cmd::new("systemctl", COMMAND_TIMEOUT).env("SYSTEMD_PAGER", "").env("SYSTEMD_COLORS", "0").run(
        cx,
        &[
            "show",
            "--no-pager",
            "--property=LoadState,ActiveState,SubState,UnitFileState,Description,ActiveEnterTimestamp,MainPID,NRestarts,Result",
            "--",
            &unit,
        ],
    )?;
    let mut v = parse_show(&show);
    v["unit"] = json!(unit);
    if v["load_state"] == "not-found" {
        return Err(cx.fail(format!("there is no unit {unit} on this system")));
    }
    if a.lines > 0 {
        let n = a.lines.min(200).to_string();
        v["log"] = match Cmd::new("journalctl", COMMAND_TIMEOUT)
            .env("SYSTEMD_PAGER", "")
            .env("SYSTEMD_COLORS", "0")
            .run(
                cx,
                &["--no-pager", "-o", "short-iso", "-n", &n, "-u", &unit],
            ) {
            Ok(out) => out.lines().map(str::to_string).collect::<Vec<_>>().into(),
            Err(e) => json!(format!("journal unavailable: {}", e)),
        };
    }
    Ok(v)
}

/// `systemctl show` output (`Key=value` lines) as the fields `service_status` reports.
fn parse_show(text: &str) -> Value {
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    json!({
        "description": get("Description"),
        "load_state": get("LoadState"),
        "active": get("ActiveState"),
        "sub_state": get("SubState"),
        "enabled": get("UnitFileState"),
        "since": get("ActiveEnterTimestamp"),
        "main_pid": get("MainPID").and_then(|p| p.parse::<u32>().ok()).filter(|p| *p != 0),
        "restarts": get("NRestarts").and_then(|p| p.parse::<u32>().ok()),
        "result": get("Result"),
    })
}

// ---- log_tail -----------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TailArgs {
    file: Option<String>,
    #[serde(default = "fifty")]
    lines: usize,
    grep: Option<String>,
}

fn fifty() -> usize {
    50
}

/// Where `log_tail` may read named files: the system's logs and covo's home.
fn log_roots(cx: &Cx<'_>) -> Vec<PathBuf> {
    vec![PathBuf::from("/var/log"), cx.home().to_path_buf()]
}

fn log_tail(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: TailArgs = cx.args(args)?;
    let lines = a.lines.clamp(1, 1000);
    let filter = a
        .grep
        .as_deref()
        .map(|g| {
            regex::RegexBuilder::new(g)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| cx.fail(format!("grep is not a valid regex: {e}")))
        })
        .transpose()?;
    let (source, text) = match a.file.as_deref() {
        None | Some("covo") | Some("gateway") => {
            // covo logs to stderr: under systemd that is the journal of its unit.
            if find_program("journalctl").is_none() {
                return Err(cx.fail(
                    "covo logs to stderr, and without systemd's journal there is no stored log \
                     to read here; name a file under /var/log or covo's home instead",
                ));
            }
            let n = if filter.is_some() { 5000 } else { lines }.to_string();
            let out = Cmd::new("journalctl", COMMAND_TIMEOUT)
                .env("SYSTEMD_PAGER", "")
                .env("SYSTEMD_COLORS", "0")
                .run(
                    cx,
                    &["--no-pager", "-o", "short-iso", "-n", &n, "-u", COVO_UNIT],
                )?;
            (format!("journal of {COVO_UNIT}"), out)
        }
        Some(f) => {
            let path = allowed_log(cx, f)?;
            (path.display().to_string(), tail_file(cx, &path)?)
        }
    };
    // Pairing codes never leave (whoever calls a tool must not pair themselves), and a grep
    // sees only the masked line, so it cannot confirm a guessed code either.
    let kept: Vec<String> = text
        .lines()
        .map(|l| crate::secrets::mask_pairing_codes(l).into_owned())
        .filter(|l| filter.as_ref().is_none_or(|r| r.is_match(l)))
        .collect();
    let from = kept.len().saturating_sub(lines);
    Ok(json!({
        "source": source,
        "lines": kept[from..],
        "shown": kept.len() - from,
    }))
}

/// Resolves a named log file, refusing anything outside [`log_roots`] (after symlinks).
fn allowed_log(cx: &Cx<'_>, f: &str) -> Result<PathBuf, CallError> {
    let p = Path::new(f);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new("/var/log").join(p)
    };
    let real = p
        .canonicalize()
        .map_err(|e| cx.fail(format!("cannot open {}: {e}", p.display())))?;
    let roots: Vec<PathBuf> = log_roots(cx)
        .into_iter()
        .filter_map(|r| r.canonicalize().ok())
        .collect();
    if !roots.iter().any(|r| real.starts_with(r)) {
        return Err(cx.fail(format!(
            "{} is not a log file covo may read: log_tail reads files under {}",
            p.display(),
            log_roots(cx)
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        )));
    }
    if !real.is_file() {
        return Err(cx.fail(format!("{} is not a file", real.display())));
    }
    Ok(real)
}

/// The last [`TAIL_BYTES`] of a file, from its first whole line.
fn tail_file(cx: &Cx<'_>, path: &Path) -> Result<String, CallError> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| cx.fail(format!("cannot open {}: {e}", path.display())))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(start))
        .map_err(|e| cx.fail(format!("cannot read {}: {e}", path.display())))?;
    let mut buf = Vec::new();
    f.take(TAIL_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| cx.fail(format!("cannot read {}: {e}", path.display())))?;
    let text = String::from_utf8_lossy(&buf);
    Ok(if start > 0 {
        text.split_once('\n').map(|x| x.1).unwrap_or("").to_string()
    } else {
        text.into_owned()
    })
}

// ---- reboot -------------------------------------------------------------------------------

fn reboot(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let target = args
        .get("target")
        .and_then(Value::as_str)
        .unwrap_or("system");
    // The pipeline asked for approval already (the tool is destructive).
    let argv: &[&str] = match target {
        "service" => &["restart", "--no-block", COVO_UNIT],
        _ => &["reboot"],
    };
    Cmd::new("systemctl", COMMAND_TIMEOUT).run(cx, argv)?;
    Ok(json!({
        "target": target,
        "done": if target == "service" {
            format!("{COVO_UNIT} is restarting")
        } else {
            "the system is rebooting".to_string()
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pi4() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi4-rootfs")
    }

    /// A Raspberry Pi 4's /proc, /sys and /etc files (in their real formats) under a root.
    #[test]
    fn system_info_reads_a_raspberry_pis_files() {
        let v = read_system(&pi4());
        assert_eq!(v["cpu_temperature_c"], 61.8);
        assert_eq!(v["thermal_zones"][0]["type"], "cpu-thermal");
        assert_eq!(
            v["throttling"]["now"],
            json!(["under-voltage", "throttled"])
        );
        assert_eq!(v["throttling"]["raw"], "0x50005");
        assert_eq!(v["load"]["1m"], 0.52);
        assert_eq!(v["load"]["15m"], 0.18);
        assert_eq!(v["cpus"], 4);
        assert_eq!(v["memory"]["total_mib"], 3794);
        assert_eq!(v["memory"]["available_mib"], 3323);
        assert_eq!(v["memory"]["used_percent"], 12.4);
        assert_eq!(v["swap"]["total_mib"], 99);
        assert_eq!(v["uptime"]["seconds"], 93784);
        assert_eq!(v["uptime"]["text"], "1 d 2 h");
        assert_eq!(v["os"], "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(v["kernel"], "6.6.51+rpt-rpi-v8");
        assert_eq!(v["arch"], "aarch64");
        assert_eq!(v["board_model"], "Raspberry Pi 4 Model B Rev 1.4");
    }

    #[test]
    fn network_info_reads_a_raspberry_pis_files() {
        let v = read_network(&pi4());
        let i = |n: &str| {
            v["interfaces"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["name"] == n)
                .unwrap_or_else(|| panic!("{n} in {v}"))
                .clone()
        };
        let wlan = i("wlan0");
        assert_eq!(wlan["state"], "up");
        assert_eq!(wlan["ipv4"], json!(["192.168.1.14"]));
        assert_eq!(wlan["ipv6"], json!(["fe80::dea6:32ff:fe01:204/64"]));
        assert_eq!(wlan["wifi"]["signal_dbm"], -54.0);
        assert_eq!(wlan["wifi"]["link_quality"], 56.0);
        assert_eq!(wlan["wifi"]["signal"], "excellent");
        assert_eq!(wlan["mac"], "dc:a6:32:01:02:04");
        let eth = i("eth0");
        assert_eq!(eth["state"], "down");
        assert_eq!(eth["ipv4"], json!([]));
        assert!(eth.get("wifi").is_none());
        assert_eq!(i("lo")["ipv4"], json!(["127.0.0.1"]));
        assert_eq!(i("lo")["ipv6"], json!(["::1/128"]));
    }

    #[test]
    fn a_missing_root_gives_an_empty_report_not_an_error() {
        let v = read_system(Path::new("/nonexistent-root"));
        assert!(v.get("cpu_temperature_c").is_none());
        assert_eq!(
            read_network(Path::new("/nonexistent-root"))["interfaces"],
            json!([])
        );
    }

    #[test]
    fn throttling_bits_read_as_words() {
        let v = throttling(0x50005);
        assert_eq!(v["now"], json!(["under-voltage", "throttled"]));
        assert_eq!(v["since_boot"], json!(["under-voltage", "throttled"]));
        assert_eq!(throttling(0)["now"], json!([]));
    }

    #[test]
    fn systemctl_show_output_becomes_fields() {
        let v = parse_show(
            "LoadState=loaded\nActiveState=failed\nSubState=failed\nUnitFileState=enabled\n\
             Description=Mosquitto MQTT Broker\nActiveEnterTimestamp=\nMainPID=0\nNRestarts=3\nResult=exit-code\n",
        );
        assert_eq!(v["active"], "failed");
        assert_eq!(v["enabled"], "enabled");
        assert_eq!(v["since"], Value::Null);
        assert_eq!(v["main_pid"], Value::Null);
        assert_eq!(v["restarts"], 3);
        assert_eq!(v["result"], "exit-code");
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(59), "0 min");
        assert_eq!(human_duration(3 * 3600 + 7 * 60), "3 h 7 min");
        assert_eq!(human_duration(2 * 86_400 + 5 * 3600), "2 d 5 h");
    }
}
