//! The `shell` toolset: one-off commands, background processes covo started, and tmux panes.
//!
//! - Commands run through `/bin/sh -c` in a folder inside the fs workspace, in a process group
//!   of their own (so a timeout or a kill ends everything they started), with an environment
//!   of only `PATH`, `HOME`, `LANG`, `TERM` and `USER`: none of covo's secrets (`$COVO_*`, API
//!   keys, broker passwords) reach them.
//! - Background processes live in a table of at most [`MAX_PROCESSES`], each with a ring buffer
//!   of its last [`RING_BYTES`] of output; [`end_all`] ends every one of them when covo exits
//!   (the binary calls it on every way out).
//! - tmux goes through the `tmux` program and its default server.

use super::command::{find_program, Cmd};
use super::fs::{resolve, Workspace};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::{AvailCx, ToolDef};
use covo_core::catalog::shell as c;
use covo_core::spec::Availability;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::SHELL_EXEC, shell_exec),
    ToolDef::local(&c::PROCESS_START, process_start),
    ToolDef::local(&c::PROCESS_LIST, process_list),
    ToolDef::local(&c::PROCESS_OUTPUT, process_output),
    ToolDef::local(&c::PROCESS_KILL, process_kill),
    ToolDef::local(&c::TMUX_SEND_KEYS, tmux_send_keys).when(needs_tmux),
    ToolDef::local(&c::TMUX_CAPTURE, tmux_capture).when(needs_tmux),
];

/// The most output `shell_exec` keeps of each stream (the end of it).
pub const EXEC_OUTPUT: usize = 64 * 1024;
/// The most background processes held at once (running or finished and not yet collected).
pub const MAX_PROCESSES: usize = 16;
/// The output a background process keeps: its last bytes.
pub const RING_BYTES: usize = 64 * 1024;
/// The longest command text.
const MAX_COMMAND: usize = 16 * 1024;

/// The environment commands get: nothing of covo's.
const KEEP_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME"];

fn command(cx: &Cx<'_>, text: &str, cwd: Option<&str>) -> Result<Command, CallError> {
    if text.trim().is_empty() || text.len() > MAX_COMMAND {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/command",
            format!("a command of 1 to {MAX_COMMAND} bytes"),
        )
        .into());
    }
    let ws = Workspace::open(cx)?;
    let dir = resolve(cx, &ws, "cwd", cwd.unwrap_or("."))?;
    if !dir.is_dir() {
        return Err(cx.fail(format!("{} is not a folder", cwd.unwrap_or("."))));
    }
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(text)
        .current_dir(dir.shown())
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for k in KEEP_ENV {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    Ok(cmd)
}

/// Signals a process group; an already gone group is not an error.
fn signal_group(pid: u32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(p, sig);
    }
}

/// Keeps the last `cap` bytes read.
fn tail(mut r: impl Read, cap: usize) -> (Vec<u8>, usize) {
    let mut keep: VecDeque<u8> = VecDeque::new();
    let mut dropped = 0;
    let mut buf = [0u8; 8192];
    while let Ok(n) = r.read(&mut buf) {
        if n == 0 {
            break;
        }
        keep.extend(&buf[..n]);
        if keep.len() > cap {
            let extra = keep.len() - cap;
            keep.drain(..extra);
            dropped += extra;
        }
    }
    (keep.into(), dropped)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecArgs {
    command: String,
    cwd: Option<String>,
    #[serde(default = "sixty")]
    timeout_s: u64,
}

fn sixty() -> u64 {
    60
}

fn shell_exec(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ExecArgs = cx.args(args)?;
    let timeout = Duration::from_secs(a.timeout_s.clamp(1, 600));
    let mut child = command(cx, &a.command, a.cwd.as_deref())?
        .spawn()
        .map_err(|e| cx.fail(format!("cannot start /bin/sh: {e}")))?;
    let pid = child.id();
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || tail(out, EXEC_OUTPUT));
    let err = std::thread::spawn(move || tail(err, EXEC_OUTPUT));
    let started = Instant::now();
    let deadline = started + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                timed_out = true;
                signal_group(pid, rustix::process::Signal::KILL);
                break child.wait().ok();
            }
        }
    };
    // Whatever the command left running in its group ends with it.
    signal_group(pid, rustix::process::Signal::KILL);
    let (stdout, out_dropped) = out.join().unwrap_or_default();
    let (stderr, err_dropped) = err.join().unwrap_or_default();
    let mut v = json!({
        "exit_code": status.and_then(|s| s.code()),
        "stdout": String::from_utf8_lossy(&stdout),
        "stderr": String::from_utf8_lossy(&stderr),
        "timed_out": timed_out,
        "ms": started.elapsed().as_millis() as u64,
    });
    if timed_out {
        v["note"] = json!(format!(
            "stopped after {} s (timeout_s), with everything it started",
            timeout.as_secs()
        ));
    }
    if out_dropped + err_dropped > 0 {
        v["truncated"] = json!(format!(
            "only the last {} KiB of each stream are kept ({} bytes dropped)",
            EXEC_OUTPUT / 1024,
            out_dropped + err_dropped
        ));
    }
    Ok(v)
}

// ---- background processes -----------------------------------------------------------------

/// The last bytes of a process's output and how many were ever written.
#[derive(Default)]
struct Ring {
    bytes: VecDeque<u8>,
    /// Bytes ever written: a reader's cursor is a position in this stream.
    written: u64,
}

impl Ring {
    fn push(&mut self, data: &[u8]) {
        self.bytes.extend(data);
        self.written += data.len() as u64;
        if self.bytes.len() > RING_BYTES {
            let extra = self.bytes.len() - RING_BYTES;
            self.bytes.drain(..extra);
        }
    }

    /// What follows `cursor`, at most `max` bytes, and how many were lost before it.
    fn since(&self, cursor: u64, max: usize) -> (Vec<u8>, u64, u64) {
        let first = self.written - self.bytes.len() as u64;
        let from = cursor.max(first);
        let lost = from - cursor;
        let skip = (from - first) as usize;
        let data: Vec<u8> = self.bytes.iter().skip(skip).take(max).copied().collect();
        let next = from + data.len() as u64;
        (data, next, lost)
    }
}

struct Proc {
    command: String,
    child: Child,
    started: SystemTime,
    output: Arc<Mutex<Ring>>,
    cursor: u64,
    exit: Option<i32>,
}

#[derive(Default)]
struct Table {
    next: u64,
    procs: BTreeMap<String, Proc>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn table() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ends every background process covo started (their whole process groups). The binary calls
/// it when it exits.
pub fn end_all() {
    let mut t = table();
    if let Some(t) = t.as_mut() {
        for p in t.procs.values_mut() {
            if p.exit.is_none() {
                signal_group(p.child.id(), rustix::process::Signal::TERM);
            }
        }
        let deadline = Instant::now() + Duration::from_millis(500);
        for p in t.procs.values_mut() {
            while p.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            signal_group(p.child.id(), rustix::process::Signal::KILL);
            let _ = p.child.wait();
        }
        t.procs.clear();
    }
}

fn refresh(p: &mut Proc) {
    if p.exit.is_none() {
        if let Ok(Some(s)) = p.child.try_wait() {
            p.exit = Some(s.code().unwrap_or(-1));
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartArgs {
    command: String,
    cwd: Option<String>,
}

fn process_start(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: StartArgs = cx.args(args)?;
    let mut cmd = command(cx, &a.command, a.cwd.as_deref())?;
    let mut guard = table();
    let t = guard.get_or_insert_with(Table::default);
    if t.procs.len() >= MAX_PROCESSES {
        // Finished processes whose output was read make room first.
        t.procs.retain(|_, p| {
            refresh(p);
            p.exit.is_none() || p.cursor < p.output.lock().map(|r| r.written).unwrap_or(0)
        });
    }
    if t.procs.len() >= MAX_PROCESSES {
        return Err(cx.fail(format!(
            "{MAX_PROCESSES} background processes are held already; process_kill one, or read \
             the output of finished ones so they can be dropped"
        )));
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| cx.fail(format!("cannot start /bin/sh: {e}")))?;
    let output = Arc::new(Mutex::new(Ring::default()));
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let ring = output.clone();
        std::thread::spawn(move || {
            let mut s = stream;
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                ring.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(&buf[..n]);
            }
        });
    }
    t.next += 1;
    let handle = format!("p{}", t.next);
    let pid = child.id();
    t.procs.insert(
        handle.clone(),
        Proc {
            command: a.command.clone(),
            child,
            started: SystemTime::now(),
            output,
            cursor: 0,
            exit: None,
        },
    );
    Ok(json!({"handle": handle, "pid": pid, "command": a.command}))
}

fn process_list(_cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let mut guard = table();
    let list: Vec<Value> = guard
        .as_mut()
        .map(|t| {
            t.procs
                .iter_mut()
                .map(|(h, p)| {
                    refresh(p);
                    let unread = p.output.lock().map(|r| r.written).unwrap_or(0) - p.cursor;
                    json!({
                        "handle": h,
                        "pid": p.child.id(),
                        "command": p.command,
                        "running": p.exit.is_none(),
                        "exit_code": p.exit,
                        "started": chrono::DateTime::<chrono::Utc>::from(p.started)
                            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        "unread_bytes": unread,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({"processes": list}))
}

fn unknown(cx: &Cx<'_>, handle: &str) -> CallError {
    let known: Vec<String> = table()
        .as_ref()
        .map(|t| t.procs.keys().cloned().collect())
        .unwrap_or_default();
    cx.fail(format!(
        "no background process '{handle}' (this covo holds: {}); process_list shows them",
        if known.is_empty() {
            "none".into()
        } else {
            known.join(", ")
        }
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    handle: String,
    max_bytes: Option<usize>,
}

fn process_output(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: OutputArgs = cx.args(args)?;
    let mut guard = table();
    let Some(p) = guard.as_mut().and_then(|t| t.procs.get_mut(&a.handle)) else {
        drop(guard);
        return Err(unknown(cx, &a.handle));
    };
    refresh(p);
    let max = a.max_bytes.unwrap_or(16 * 1024).clamp(1, RING_BYTES);
    let (data, next, lost) = p
        .output
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .since(p.cursor, max);
    p.cursor = next;
    let mut v = json!({
        "handle": a.handle,
        "output": String::from_utf8_lossy(&data),
        "running": p.exit.is_none(),
        "exit_code": p.exit,
    });
    if lost > 0 {
        v["lost_bytes"] = json!(lost);
        v["note"] = json!(format!(
            "{lost} bytes were overwritten before they were read (the buffer keeps the last {} KiB)",
            RING_BYTES / 1024
        ));
    }
    Ok(v)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArgs {
    handle: String,
    #[serde(default)]
    signal: Option<String>,
}

fn process_kill(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: KillArgs = cx.args(args)?;
    let sig = match a.signal.as_deref().unwrap_or("TERM") {
        "KILL" => rustix::process::Signal::KILL,
        "INT" => rustix::process::Signal::INT,
        _ => rustix::process::Signal::TERM,
    };
    let mut guard = table();
    let Some(p) = guard.as_mut().and_then(|t| t.procs.get_mut(&a.handle)) else {
        drop(guard);
        return Err(unknown(cx, &a.handle));
    };
    refresh(p);
    if p.exit.is_some() {
        return Ok(
            json!({"handle": a.handle, "running": false, "exit_code": p.exit, "note": "it had already ended"}),
        );
    }
    signal_group(p.child.id(), sig);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        refresh(p);
        if p.exit.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(json!({
        "handle": a.handle,
        "running": p.exit.is_none(),
        "exit_code": p.exit,
        "signal": a.signal.as_deref().unwrap_or("TERM"),
    }))
}

// ---- tmux ---------------------------------------------------------------------------------

fn needs_tmux(_: &AvailCx<'_>) -> Availability {
    match find_program("tmux") {
        Some(_) => Availability::yes(),
        None => Availability::no("tmux is not installed"),
    }
}

/// `SESSION` or `SESSION:PANE`, checked so nothing is read as an option or a format.
fn target(cx: &Cx<'_>, session: &str, pane: Option<&str>) -> Result<String, CallError> {
    let ok = |s: &str, extra: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c) || extra.contains(c))
    };
    if !ok(session, "") {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/session",
            "a session name of letters, digits, '-' and '_'",
        )
        .into());
    }
    match pane {
        None => Ok(session.to_string()),
        Some(p) if ok(p, ".") => Ok(format!("{session}:{p}")),
        Some(_) => Err(ToolError::invalid(cx.tool.name, "/pane", "a pane like 0 or 0.1").into()),
    }
}

fn tmux(cx: &Cx<'_>, args: &[&str]) -> Result<String, CallError> {
    Cmd::new("tmux", Duration::from_secs(10)).run(cx, args)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysArgs {
    session: String,
    pane: Option<String>,
    keys: String,
    #[serde(default = "yes")]
    enter: bool,
}

fn yes() -> bool {
    true
}

fn tmux_send_keys(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: KeysArgs = cx.args(args)?;
    let t = target(cx, &a.session, a.pane.as_deref())?;
    let exists = Cmd::new("tmux", Duration::from_secs(10))
        .output(cx, &["has-session", "-t", &a.session])?
        .success;
    if !exists {
        tmux(
            cx,
            &[
                "new-session",
                "-d",
                "-s",
                &a.session,
                "-x",
                "200",
                "-y",
                "50",
            ],
        )?;
    }
    // `-l`: the keys are typed literally, never read as key names.
    tmux(cx, &["send-keys", "-t", &t, "-l", "--", &a.keys])?;
    if a.enter {
        tmux(cx, &["send-keys", "-t", &t, "Enter"])?;
    }
    Ok(json!({"target": t, "created": !exists, "sent": a.keys.len()}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaptureArgs {
    session: String,
    pane: Option<String>,
    lines: Option<u32>,
}

fn tmux_capture(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: CaptureArgs = cx.args(args)?;
    let t = target(cx, &a.session, a.pane.as_deref())?;
    let start = a.lines.map(|n| format!("-{}", n.min(10_000)));
    let mut argv = vec!["capture-pane", "-p", "-J", "-t", &t];
    if let Some(s) = &start {
        argv.extend(["-S", s]);
    }
    let text = tmux(cx, &argv)?;
    Ok(json!({"target": t, "text": text.trim_end_matches('\n')}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_bytes_and_counts_what_a_reader_lost() {
        let mut r = Ring::default();
        r.push(b"hello ");
        let (d, next, lost) = r.since(0, 100);
        assert_eq!((d.as_slice(), next, lost), (&b"hello "[..], 6, 0));
        r.push(&vec![b'x'; RING_BYTES]);
        // A reader that had read everything lost nothing; one that had read nothing lost the
        // first six bytes.
        let (d, n, lost) = r.since(next, usize::MAX);
        assert_eq!((lost, d.len(), n), (0, RING_BYTES, r.written));
        let (d, next, lost) = r.since(0, usize::MAX);
        assert_eq!(lost, 6);
        assert_eq!(d.len(), RING_BYTES);
        assert_eq!(next, r.written);
        let (d, _, _) = r.since(next, 10);
        assert!(d.is_empty());
    }

    #[test]
    fn tail_keeps_the_end() {
        let (k, dropped) = tail(&b"0123456789"[..], 4);
        assert_eq!((k.as_slice(), dropped), (&b"6789"[..], 6));
    }
}
