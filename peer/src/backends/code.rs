//! `code_run`: a Python or shell snippet in a subprocess with a time limit (the whole process
//! group is killed at the deadline), capped output, an address-space limit (`ulimit -v`), a
//! fresh temporary working directory, and no network when `unshare -rn` works on this host.

use covo_core::catalog;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::CodeRunConfig;
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::code_exec::CODE_RUN.name;

const DEFAULT_MEMORY_MB: u64 = 512;
const DEFAULT_MAX_OUTPUT: usize = 64 * 1024;
/// Sets the address-space limit, then becomes the sandboxed command (`$1` = limit in KiB).
const WRAPPER: &str = r#"ulimit -v "$1" || exit 125; shift; exec "$@""#;

#[derive(Debug)]
pub(super) struct CodeRun {
    /// `sh`: runs shell snippets and the limit wrapper; without it nothing runs.
    shell: Option<PathBuf>,
    /// The real Python interpreter (not a pyenv shim), when there is one.
    python: Option<PathBuf>,
    /// `unshare`, when `unshare -rn` was seen to work here.
    unshare: Option<PathBuf>,
    memory_mb: u64,
    max_output: usize,
}

impl CodeRun {
    pub(super) fn new(cfg: &CodeRunConfig) -> CodeRun {
        let shell = cfg
            .shell
            .clone()
            .or_else(|| which("sh"))
            .filter(|p| is_executable(p));
        let python = shell.as_ref().and_then(|_| {
            let candidate = cfg.python.clone().or_else(|| which("python3"))?;
            // Resolve shims to the interpreter itself: the sandbox gets a different $HOME.
            let out = Command::new(&candidate)
                .args(["-c", "import sys; print(sys.executable)"])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .ok()?;
            let exe = String::from_utf8(out.stdout).ok()?.trim().to_string();
            (out.status.success() && !exe.is_empty()).then(|| PathBuf::from(exe))
        });
        let unshare = match (&shell, cfg.isolate_network) {
            (Some(sh), None | Some(true)) => which("unshare").filter(|u| {
                Command::new(u)
                    .args(["-rn"])
                    .arg(sh)
                    .args(["-c", "exit 0"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            }),
            _ => None,
        };
        CodeRun {
            shell,
            python,
            unshare,
            memory_mb: cfg.memory_mb.unwrap_or(DEFAULT_MEMORY_MB).max(16),
            max_output: cfg.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT).max(1),
        }
    }

    /// Usable at all: the wrapper shell exists.
    pub(super) fn available(&self) -> bool {
        self.shell.is_some()
    }

    pub(super) fn run(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let shell = self
            .shell
            .as_ref()
            .ok_or_else(|| ToolError::failed(TOOL, "no sh on the peer"))?;
        let language = args.get("language").and_then(Value::as_str).unwrap_or("");
        let code = args
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::invalid(TOOL, "/code", "expected the snippet as a string"))?;
        let (interpreter, file) = match language {
            "python" => (
                self.python.as_ref().ok_or_else(|| ToolError::Failed {
                    tool: TOOL.into(),
                    message: "python3 is not installed on the peer".into(),
                    hint: Some("use language \"shell\"".into()),
                })?,
                "snippet.py",
            ),
            "shell" => (shell, "snippet.sh"),
            other => {
                return Err(ToolError::invalid(
                    TOOL,
                    "/language",
                    format!("unknown language '{other}'"),
                ))
            }
        };
        let timeout_s = args
            .get("timeout_s")
            .and_then(Value::as_u64)
            .unwrap_or(30)
            .clamp(1, 300);
        let want_network = args
            .get("network")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let (unshare, network) = match (want_network, &self.unshare) {
            (true, _) => (None, "allowed"),
            (false, Some(u)) => (Some(u), "isolated"),
            (false, None) => (None, "not isolated"),
        };

        let fail = |what: &str, e: std::io::Error| ToolError::failed(TOOL, format!("{what}: {e}"));
        let dir = tempfile::Builder::new()
            .prefix("covo-code-run-")
            .tempdir()
            .map_err(|e| fail("no temporary directory", e))?;
        let script = dir.path().join(file);
        std::fs::write(&script, code).map_err(|e| fail("could not write the snippet", e))?;

        let mut cmd = Command::new(shell);
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("covo-sandbox")
            .arg((self.memory_mb * 1024).to_string());
        if let Some(u) = unshare {
            cmd.arg(u).arg("-rn");
        }
        cmd.arg(interpreter)
            .arg(&script)
            .current_dir(dir.path())
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", dir.path())
            .env("TMPDIR", dir.path())
            .env("LANG", "C.UTF-8")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);

        let started = Instant::now();
        let limit = deadline.min(started + Duration::from_secs(timeout_s));
        let mut child = cmd
            .spawn()
            .map_err(|e| fail("could not start the snippet", e))?;
        let pgid = child.id();
        // One message per pipe: stdout and stderr.
        let (tx, rx) = mpsc::sync_channel(2);
        for (name, pipe) in [
            (
                "stdout",
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
            ),
            (
                "stderr",
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
            ),
        ] {
            let (tx, cap) = (tx.clone(), self.max_output);
            if let Some(pipe) = pipe {
                std::thread::spawn(move || {
                    let _ = tx.send((name, read_capped(pipe, cap)));
                });
            }
        }
        drop(tx);

        let mut timed_out = false;
        let status = loop {
            match child
                .try_wait()
                .map_err(|e| fail("waiting for the snippet", e))?
            {
                Some(status) => break status,
                None if Instant::now() >= limit => {
                    timed_out = true;
                    kill_group(shell, pgid);
                    let _ = child.kill();
                    break child
                        .wait()
                        .map_err(|e| fail("waiting for the snippet", e))?;
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        // Background jobs the snippet left behind die with it (and release the pipes).
        kill_group(shell, pgid);
        let duration_ms = started.elapsed().as_millis() as u64;

        let (mut stdout, mut stderr) = ((String::new(), false), (String::new(), false));
        let drain_until = Instant::now() + Duration::from_secs(2);
        for _ in 0..2 {
            let Ok((name, (bytes, truncated))) =
                rx.recv_timeout(drain_until.saturating_duration_since(Instant::now()))
            else {
                break;
            };
            let text = (String::from_utf8_lossy(&bytes).into_owned(), truncated);
            if name == "stdout" {
                stdout = text;
            } else {
                stderr = text;
            }
        }
        Ok(json!({
            "language": language,
            "exit_code": status.code(),
            "signal": status.signal(),
            "stdout": stdout.0,
            "stderr": stderr.0,
            "stdout_truncated": stdout.1,
            "stderr_truncated": stderr.1,
            "max_output_bytes": self.max_output,
            "timed_out": timed_out,
            "duration_ms": duration_ms,
            "memory_limit_mb": self.memory_mb,
            "network": network,
        }))
    }
}

/// Reads up to `cap` bytes, then keeps draining (so the child never blocks on a full pipe).
fn read_capped(mut pipe: impl Read, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap - kept.len();
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, truncated)
}

/// SIGKILL to the whole process group, through the shell's `kill` (no `unsafe` here).
fn kill_group(shell: &Path, pgid: u32) {
    let _ = Command::new(shell)
        .args([
            "-c",
            "kill -KILL -- \"-$1\" 2>/dev/null",
            "kill",
            &pgid.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner() -> CodeRun {
        CodeRun::new(&CodeRunConfig::default())
    }

    /// The Python tests need python3: a machine without it fails them loudly (the README's test
    /// command installs it), never skips them.
    fn need_python(r: &CodeRun) {
        assert!(
            r.python.is_some(),
            "python3 is missing: the code_run tests need it (apt-get install -y python3; \
             bash tests/run-all.sh installs it)"
        );
    }

    fn run(r: &CodeRun, args: Value) -> Value {
        r.run(&args, Instant::now() + Duration::from_secs(30))
            .unwrap()
    }

    #[test]
    fn a_python_snippet_prints_and_exits_cleanly() {
        let r = runner();
        need_python(&r);
        let out = run(
            &r,
            json!({"language": "python", "code": "print(sum(range(10)))"}),
        );
        assert_eq!(out["stdout"], "45\n");
        assert_eq!(out["exit_code"], 0);
        assert_eq!(out["timed_out"], false);
    }

    #[test]
    fn a_shell_snippet_reports_stderr_and_its_exit_code() {
        let out = run(
            &runner(),
            json!({"language": "shell", "code": "echo out; echo oops >&2; exit 3"}),
        );
        assert_eq!(out["stdout"], "out\n");
        assert_eq!(out["stderr"], "oops\n");
        assert_eq!(out["exit_code"], 3);
    }

    #[test]
    fn an_endless_loop_is_killed_at_the_timeout() {
        let out = run(
            &runner(),
            json!({"language": "shell", "code": "echo started; while :; do :; done", "timeout_s": 1}),
        );
        assert_eq!(out["timed_out"], true);
        assert_eq!(out["signal"], 9);
        assert_eq!(out["stdout"], "started\n");
        let ms = out["duration_ms"].as_u64().unwrap();
        assert!((1000..3000).contains(&ms), "{ms} ms");
    }

    #[test]
    fn the_call_deadline_wins_over_a_longer_timeout_and_background_children_die_too() {
        let started = Instant::now();
        let out = runner()
            .run(
                &json!({"language": "shell", "code": "sleep 60 & sleep 60", "timeout_s": 300}),
                Instant::now() + Duration::from_millis(700),
            )
            .unwrap();
        assert_eq!(out["timed_out"], true);
        // Returning well before the sleeps' 60 s proves the background `sleep` no longer holds
        // the output pipes. (Generous: a loaded 2-core CI machine took 3.4 s here.)
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn output_beyond_the_cap_is_cut_and_flagged() {
        let out = run(
            &runner(),
            json!({"language": "shell", "code": "head -c 200000 /dev/zero | tr '\\0' x; echo done >&2"}),
        );
        assert_eq!(out["stdout"].as_str().unwrap().len(), 64 * 1024);
        assert_eq!(out["stdout_truncated"], true);
        assert_eq!(out["stderr"], "done\n");
        assert_eq!(out["stderr_truncated"], false);
        assert_eq!(out["exit_code"], 0);
    }

    #[test]
    fn each_run_gets_a_fresh_working_directory_that_is_removed_afterwards() {
        let r = runner();
        let a = run(
            &r,
            json!({"language": "shell", "code": "touch left-behind; pwd; ls"}),
        );
        let b = run(&r, json!({"language": "shell", "code": "pwd; ls"}));
        let (a_out, b_out) = (a["stdout"].as_str().unwrap(), b["stdout"].as_str().unwrap());
        let a_dir = a_out.lines().next().unwrap();
        assert_ne!(a_dir, b_out.lines().next().unwrap());
        assert!(!b_out.contains("left-behind"));
        assert!(!Path::new(a_dir).exists(), "{a_dir} still exists");
    }

    #[test]
    fn memory_beyond_the_limit_cannot_be_allocated() {
        let r = CodeRun::new(&CodeRunConfig {
            memory_mb: Some(128),
            ..Default::default()
        });
        need_python(&r);
        let out = run(
            &r,
            json!({"language": "python", "code": "b = bytearray(1 << 30)\nprint('allocated')"}),
        );
        assert_ne!(out["exit_code"], 0);
        assert!(
            out["stderr"].as_str().unwrap().contains("MemoryError"),
            "{out}"
        );
        assert_eq!(out["stdout"], "");
    }

    const CONNECT: &str = "import socket\ntry:\n    socket.create_connection(('127.0.0.1', PORT), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('refused', e)\n";

    fn connect_snippet(port: u16) -> String {
        CONNECT.replace("PORT", &port.to_string())
    }

    #[test]
    fn without_network_the_sandbox_cannot_reach_a_local_listener() {
        let r = runner();
        need_python(&r);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let out = run(
            &r,
            json!({"language": "python", "code": connect_snippet(port)}),
        );
        if r.unshare.is_some() {
            // Root, or unprivileged user namespaces, on this host: isolation is claimed, so check it.
            assert_eq!(out["network"], "isolated");
            assert!(
                out["stdout"].as_str().unwrap().starts_with("refused"),
                "{out}"
            );
            listener.set_nonblocking(true).unwrap();
            assert!(
                listener.accept().is_err(),
                "the sandbox reached the listener"
            );
        } else {
            assert_eq!(out["network"], "not isolated");
        }
    }

    #[test]
    fn asking_for_network_lets_the_snippet_connect() {
        let r = runner();
        need_python(&r);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let out = run(
            &r,
            json!({"language": "python", "code": connect_snippet(port), "network": true}),
        );
        assert_eq!(out["network"], "allowed");
        assert_eq!(out["stdout"], "connected\n", "{out}");
    }

    #[test]
    fn isolation_can_be_switched_off_and_is_then_reported_honestly() {
        let r = CodeRun::new(&CodeRunConfig {
            isolate_network: Some(false),
            ..Default::default()
        });
        let out = run(&r, json!({"language": "shell", "code": "true"}));
        assert_eq!(out["network"], "not isolated");
    }
}
