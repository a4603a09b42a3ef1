//! `covo fleet`: the gateways on this broker as their retained births and Wills describe them
//! (`P/gateways/G/status`; nothing is polled), and `covo fleet call`, one tool call fanned out
//! to them. Each call runs through the target's own pipeline (its schema check, `[swarm]
//! expose`, board policy, approver and audit), at most `--parallel` (64) at once, each
//! waiting until one shared deadline; a gateway whose turn comes too close to it is not asked
//! (`delegation::fan_out`). The list is bounded by the link (`MAX_MEMBERS`).
//!
//! The last readings come the same way: each gateway's retained `P/G/sensors/<device>`
//! messages, at most [`MAX_SENSORS`] devices per gateway and [`MAX_READING`] bytes each, for
//! the gateways the births list.

use crate::link::{Member, PeerLink};
use crate::tools::delegation::fan_out;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The most sensor devices whose last reading is kept per gateway.
pub const MAX_SENSORS: usize = 32;
/// The largest retained reading kept, in bytes.
pub const MAX_READING: usize = 4096;
/// How long the retained readings may keep arriving after the subscription: they stop when
/// none came for [`QUIET`], or at this bound.
const READINGS_WAIT: Duration = Duration::from_secs(3);
const QUIET: Duration = Duration::from_millis(300);

/// A gateway's last readings: device → the retained message (`{"temperature": {…}, "at": …}`).
pub type Readings = BTreeMap<String, BTreeMap<String, Value>>;

/// The retained readings of the listed gateways (`P/+/sensors/+`), bounded per gateway.
pub fn last_readings(link: &PeerLink, members: &[Member]) -> Readings {
    let mut out = Readings::new();
    let filter = format!("{}/+/sensors/+", link.prefix());
    let Ok((id, rx)) = link.subscribe(&filter) else {
        return out;
    };
    let start = Instant::now();
    let known: std::collections::BTreeSet<&str> = members.iter().map(|m| m.id.as_str()).collect();
    while start.elapsed() < READINGS_WAIT {
        let Ok(msg) = rx.recv_timeout(QUIET) else {
            break;
        };
        let Some(rest) = msg.topic.strip_prefix(link.prefix()) else {
            continue;
        };
        // `/G/sensors/<device>`: one level each side.
        let Some((gw, device)) = rest.trim_start_matches('/').split_once("/sensors/") else {
            continue;
        };
        if gw.contains('/') || device.contains('/') {
            continue;
        }
        if !known.contains(gw) || msg.payload.len() > MAX_READING {
            continue;
        }
        let Ok(reading) = serde_json::from_slice::<Value>(&msg.payload) else {
            continue;
        };
        let sensors = out.entry(gw.to_string()).or_default();
        if sensors.len() < MAX_SENSORS || sensors.contains_key(device) {
            sensors.insert(device.to_string(), reading);
        }
    }
    link.unsubscribe(id);
    out
}

/// The newest `at` of a gateway's readings.
fn newest(readings: Option<&BTreeMap<String, Value>>) -> Option<&str> {
    readings?.values().filter_map(|r| r["at"].as_str()).max()
}

/// The members, online first, then by id.
fn sorted(link: &PeerLink, online_only: bool) -> Vec<Member> {
    let mut m: Vec<Member> = link
        .members()
        .into_iter()
        .filter(|m| m.online || !online_only)
        .collect();
    m.sort_by(|a, b| b.online.cmp(&a.online).then_with(|| a.id.cmp(&b.id)));
    m
}

fn when(unix: Option<u64>) -> String {
    unix.and_then(|s| chrono::DateTime::from_timestamp(s as i64, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|| "-".into())
}

/// The JSON of one member and its last readings.
pub fn member_json(m: &Member, readings: Option<&BTreeMap<String, Value>>) -> Value {
    json!({
        "gateway": m.id,
        "online": m.online,
        "software": m.software,
        "board": m.board,
        "online_since": m.online_since,
        "status_seen": m.since_unix,
        "tools": m.tools,
        "last_reading_at": newest(readings),
        "readings": readings.cloned().unwrap_or_default(),
    })
}

/// `covo fleet`: prints the list (a table, or JSON).
pub fn list(link: &PeerLink, online_only: bool, as_json: bool) -> anyhow::Result<ExitCode> {
    let members = sorted(link, online_only);
    let readings = last_readings(link, &members);
    let mut out = std::io::stdout().lock();
    if as_json {
        let v = json!({
            "connected": link.is_connected(),
            "self": link.gateway_id(),
            "count": members.len(),
            "not_listed": link.members_dropped(),
            "gateways": members
                .iter()
                .map(|m| member_json(m, readings.get(&m.id)))
                .collect::<Vec<_>>(),
        });
        writeln!(out, "{v}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = members.iter().map(|m| m.id.len()).max().unwrap_or(7).max(7);
    writeln!(
        out,
        "{:width$}  {:7}  {:20}  {:18}  {:16}  {:5}  LAST READING",
        "GATEWAY", "STATUS", "SINCE", "SOFTWARE", "BOARD", "TOOLS"
    )?;
    for m in &members {
        // An offline gateway's Will carries no time: the time shown is when this link saw it.
        let since = if m.online {
            when(m.online_since)
        } else {
            when(Some(m.since_unix))
        };
        writeln!(
            out,
            "{:width$}  {:7}  {:20}  {:18}  {:16}  {:5}  {}",
            m.id,
            if m.online { "online" } else { "offline" },
            since,
            m.software.as_deref().unwrap_or("-"),
            m.board.as_deref().unwrap_or("-"),
            m.tools.len(),
            newest(readings.get(&m.id)).unwrap_or("-")
        )?;
    }
    let online = members.iter().filter(|m| m.online).count();
    writeln!(
        out,
        "{} gateway(s), {online} online{}",
        members.len(),
        if link.is_connected() {
            ""
        } else {
            " (not connected to the broker: this is what was known)"
        }
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `covo fleet call`: `tool` with `args` on each selected online gateway (all that serve it
/// when `select` is empty); one result per gateway. Exits 1 when any call failed.
pub fn call(
    link: &PeerLink,
    select: &[String],
    tool: &str,
    args: Value,
    timeout: Duration,
    parallel: usize,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let members = sorted(link, false);
    let mut results: Vec<(String, Value)> = Vec::new();
    let mut targets: Vec<Member> = Vec::new();
    if select.is_empty() {
        for m in members.into_iter().filter(|m| m.online) {
            if m.tools.iter().any(|t| t == tool) {
                targets.push(m);
            } else {
                results.push((m.id.clone(), json!({"ok": false, "error": {"kind": "not_served", "message": format!("{} does not serve {tool} to the swarm", m.id)}})));
            }
        }
    } else {
        for id in select {
            match members.iter().find(|m| &m.id == id) {
                Some(m) if m.online => targets.push(m.clone()),
                Some(_) => results.push((id.clone(), json!({"ok": false, "error": {"kind": "offline", "message": format!("{id} is offline")}}))),
                None => results.push((id.clone(), json!({"ok": false, "error": {"kind": "unknown_gateway", "message": format!("no gateway {id} on this broker")}}))),
            }
        }
    }
    let read_only =
        covo_core::catalog::find(tool).is_some_and(|s| s.effect == covo_core::spec::Effect::Read);
    // Only a read is resent after a timeout: an actuation runs at most once.
    results.extend(fan_out(
        link, &targets, tool, &args, timeout, read_only, parallel,
    ));
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let failed = results.iter().filter(|(_, v)| v["ok"] != true).count();
    let mut out = std::io::stdout().lock();
    for (id, v) in &results {
        if as_json {
            let mut line = json!({"gateway": id});
            if let (Some(o), Some(r)) = (line.as_object_mut(), v.as_object()) {
                o.extend(r.clone());
            }
            writeln!(out, "{line}")?;
        } else if v["ok"] == true {
            writeln!(out, "{id}: {}", v["result"])?;
        } else {
            writeln!(
                out,
                "{id}: error: {}",
                v["error"]["message"].as_str().unwrap_or("")
            )?;
        }
    }
    if !as_json {
        writeln!(
            out,
            "{} gateway(s), {} answered, {failed} failed",
            results.len(),
            results.len() - failed
        )?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
