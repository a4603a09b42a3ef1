//! The shell tools in one process through the whole pipeline (approval included): commands with
//! timeouts, caps and a clean environment; background processes with bounded output, ended on
//! exit; tmux round trips on a private tmux server.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{Approver, Runtime, Via};
use covo::spec::ToolSpec;
use covo::store::Store;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Default)]
struct Asked(Arc<Mutex<Vec<String>>>);

impl Approver for Asked {
    fn approve(&self, spec: &ToolSpec, _args: &Value) -> Result<(), String> {
        self.0.lock().unwrap().push(spec.name.to_string());
        Ok(())
    }
}

struct Fx {
    dir: tempfile::TempDir,
    rt: Runtime,
    asked: Asked,
}

fn fx() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.fs.roots = vec![dir.path().join("ws")];
    let mut opts = covo::tools::options(config);
    opts.profile = Some("full".into());
    let asked = Asked::default();
    opts.approver = Box::new(asked.clone());
    opts.home = Some(dir.path().to_path_buf());
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    Fx { dir, rt, asked }
}

impl Fx {
    fn call(&self, tool: &str, args: Value) -> Result<Value, CallError> {
        self.rt
            .call(&Session::new("sh", "cli"), Via::Direct, tool, args)
    }
    fn ok(&self, tool: &str, args: Value) -> Value {
        self.call(tool, args.clone())
            .unwrap_or_else(|e| panic!("{tool} {args}: {e:?}"))
    }
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

#[test]
fn shell_exec_runs_in_the_workspace_without_covos_secrets_and_asks_first() {
    let f = fx();
    std::env::set_var("COVO_TEST_SECRET", "s3cret-token");
    std::fs::create_dir_all(f.dir.path().join("ws/sub")).unwrap();
    let v = f.ok(
        "shell_exec",
        json!({"command": "pwd; echo out; echo err >&2; env; exit 3", "cwd": "sub"}),
    );
    assert_eq!(v["exit_code"], 3);
    let out = v["stdout"].as_str().unwrap();
    assert!(out.starts_with(&format!(
        "{}\nout\n",
        f.dir
            .path()
            .join("ws/sub")
            .canonicalize()
            .unwrap()
            .display()
    )));
    assert!(
        !out.contains("s3cret-token") && !out.contains("COVO_"),
        "{out}"
    );
    assert_eq!(v["stderr"], "err\n");
    assert_eq!(f.asked.0.lock().unwrap().as_slice(), ["shell_exec"]);

    // Outside the workspace: refused before anything runs.
    let e = f.call("shell_exec", json!({"command": "true", "cwd": "/etc"}));
    assert!(
        matches!(e, Err(CallError::Respond(ToolError::PolicyRefused { .. }))),
        "{e:?}"
    );
}

#[test]
fn shell_exec_times_out_with_everything_it_started_and_caps_output() {
    let f = fx();
    let begun = Instant::now();
    let v = f.ok(
        "shell_exec",
        json!({"command": "sleep 300 & echo $! > bg.pid; sleep 300", "timeout_s": 1}),
    );
    assert_eq!(v["timed_out"], true);
    assert!(begun.elapsed() < Duration::from_secs(10));
    let bg: u64 = std::fs::read_to_string(f.dir.path().join("ws/bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !alive(bg),
        "the background sleep {bg} ended with the command"
    );

    let v = f.ok(
        "shell_exec",
        json!({"command": "head -c 200000 /dev/zero | tr '\\0' a; echo END"}),
    );
    let out = v["stdout"].as_str().unwrap();
    assert_eq!(out.len(), covo::tools::shell::EXEC_OUTPUT);
    assert!(out.ends_with("aEND\n"), "the end is kept");
    assert!(v["truncated"].as_str().unwrap().contains("dropped"), "{v}");
}

#[test]
fn background_processes_are_listed_read_killed_bounded_and_ended_with_covo() {
    let f = fx();
    let v = f.ok(
        "process_start",
        json!({"command": "for i in 1 2 3; do echo line$i; done; exec sleep 300"}),
    );
    let h = v["handle"].as_str().unwrap().to_string();
    let pid = v["pid"].as_u64().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let v = f.ok("process_output", json!({"handle": h}));
    assert_eq!(v["output"], "line1\nline2\nline3\n");
    assert_eq!(v["running"], true);
    let v = f.ok("process_output", json!({"handle": h}));
    assert_eq!(v["output"], "", "only new output");
    let list = f.ok("process_list", json!({}));
    assert!(list["processes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["handle"] == h.as_str() && p["running"] == true));

    // A flood keeps only the last bytes and says how much was lost.
    let v = f.ok(
        "process_start",
        json!({"command": "head -c 300000 /dev/zero | tr '\\0' b; echo TAIL"}),
    );
    let flood = v["handle"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(500));
    let v = f.ok(
        "process_output",
        json!({"handle": flood, "max_bytes": 100000}),
    );
    assert!(
        v["lost_bytes"].as_u64().unwrap() > 200_000,
        "{}",
        v["lost_bytes"]
    );
    assert!(v["output"].as_str().unwrap().ends_with("bTAIL\n"));

    let v = f.ok("process_kill", json!({"handle": h, "signal": "KILL"}));
    assert_eq!(v["running"], false);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!alive(pid));
    let e = f.call("process_output", json!({"handle": "p999"}));
    assert!(
        format!("{e:?}").contains("no background process 'p999'"),
        "{e:?}"
    );

    // The table is bounded: finished processes whose output was read make room, and once 16
    // are running the next is refused.
    let mut pids = Vec::new();
    let refused = loop {
        match f.call("process_start", json!({"command": "exec sleep 300"})) {
            Ok(v) => pids.push(v["pid"].as_u64().unwrap()),
            Err(e) => break e,
        }
        assert!(pids.len() <= covo::tools::shell::MAX_PROCESSES, "unbounded");
    };
    assert!(format!("{refused:?}").contains("background processes are held already"));
    assert_eq!(pids.len(), covo::tools::shell::MAX_PROCESSES);

    // covo exiting ends them all.
    covo::tools::shell::end_all();
    std::thread::sleep(Duration::from_millis(100));
    for p in pids {
        assert!(!alive(p), "{p} ended with covo");
    }
    assert_eq!(f.ok("process_list", json!({}))["processes"], json!([]));
}

#[test]
fn tmux_keys_go_in_and_the_pane_comes_back() {
    let f = fx();
    // A private tmux server for this test.
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var("TMUX_TMPDIR", tmp.path());
    let v = f.ok(
        "tmux_send_keys",
        json!({"session": "covo-test", "keys": "echo tmux-$((6*7))"}),
    );
    assert_eq!(v["created"], true);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = f.ok("tmux_capture", json!({"session": "covo-test"}));
        if v["text"].as_str().unwrap().contains("tmux-42") {
            break;
        }
        assert!(Instant::now() < deadline, "no echo in {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let e = f.call("tmux_send_keys", json!({"session": "-t evil", "keys": "x"}));
    assert!(
        matches!(
            e,
            Err(CallError::Respond(ToolError::InvalidArguments { .. }))
        ),
        "{e:?}"
    );
    let _ = std::process::Command::new("tmux")
        .args(["kill-server"])
        .env("TMUX_TMPDIR", tmp.path())
        .status();
}

#[test]
fn a_process_started_by_a_covo_command_ends_when_that_covo_exits() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_covo"))
        .args([
            "tools",
            "call",
            "--yes",
            "process_start",
            r#"{"command":"sleep 300 & exec sleep 301"}"#,
        ])
        .env("COVO_HOME", dir.path())
        .env_remove("COVO_CONFIG")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pid = v["pid"].as_u64().unwrap_or_else(|| panic!("{v}"));
    std::thread::sleep(Duration::from_millis(200));
    assert!(!alive(pid), "{pid} ended with covo");
    // Nothing of its group is left either.
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|s| !s.contains(") Z "))
        .filter(|s| s.split_whitespace().nth(4) == Some(&pid.to_string()))
        .count();
    assert_eq!(left, 0, "processes of group {pid} left");
}
