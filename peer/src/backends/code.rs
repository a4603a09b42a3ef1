//! `code_run`: a Python or shell snippet in a subprocess, isolated as far as this host allows,
//! and every result says exactly what was applied (`"isolation"`).
//!
//! With bubblewrap (`bwrap`, Debian `bubblewrap`) seen working here: a new mount, PID, IPC, UTS
//! and (unless the call asks for network) network namespace; only the system directories
//! (`/usr`, `/bin`, `/lib`…, a few files of `/etc`) read-only, a private `/tmp` and the run's
//! fresh working directory, so nothing else of the host (covo's config, `COVO_HOME` and its
//! database, home directories) exists inside; any of covo's paths that lie under a bound
//! directory are covered over. The snippet runs as `nobody` in its namespace with no
//! capabilities. The PID namespace dies with the sandbox, so a `setsid` child cannot outlive the
//! run.
//!
//! Without bwrap (or when it cannot create namespaces here) the fallback is weaker and says so:
//! the host's filesystem as the peer's user sees it, a fresh temporary working directory, and no
//! network only when `unshare -rn` works.
//!
//! Either way: a time limit (wall clock, then everything is killed), capped output, an
//! address-space limit and a CPU-time limit per process (`ulimit -v`, `ulimit -t`), and, where a
//! pids cgroup (v1) is writable, a cgroup per run that caps the number of processes and through
//! which every process of the run is killed at the end, wherever it went.

use covo_core::catalog;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::CodeRunConfig;
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::code_exec::CODE_RUN.name;

const DEFAULT_MEMORY_MB: u64 = 512;
const DEFAULT_MAX_OUTPUT: usize = 64 * 1024;
const DEFAULT_MAX_PROCESSES: u64 = 64;
/// Joins the run's cgroup (`$3`, or `-` for none), sets the address-space (`$1`, KiB) and
/// CPU-time (`$2`, seconds) limits, then becomes the sandboxed command.
const WRAPPER: &str = r#"if [ "$3" != - ]; then echo $$ > "$3" || exit 125; fi
ulimit -v "$1" || exit 125; ulimit -t "$2" || exit 125; shift 3; exec "$@""#;

/// System directories the bwrap sandbox sees read-only (a symlink stays a symlink).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// The few files of `/etc` programs need (the loader's cache, time zone, names, certificates for
/// runs with network); the rest of `/etc` stays out.
const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
];

/// Distinct cgroup names within this process.
static RUNS: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
pub(super) struct CodeRun {
    /// `sh`: runs shell snippets and the limit wrapper; without it nothing runs.
    shell: Option<PathBuf>,
    /// The real Python interpreter (not a pyenv shim), when there is one.
    python: Option<PathBuf>,
    /// The interpreter's installation prefix (`sys.base_prefix`), bound into the sandbox when
    /// it is not under a system directory.
    python_prefix: Option<PathBuf>,
    /// `bwrap`, when a full sandbox was seen to start here.
    bwrap: Option<PathBuf>,
    /// `unshare`, when `unshare -rn` was seen to work here (the fallback's network isolation).
    unshare: Option<PathBuf>,
    /// The pids cgroup (v1) hierarchy, when a child cgroup could be made and limited there.
    cgroup_root: Option<PathBuf>,
    /// covo's own paths (config file, `COVO_HOME`) to cover in the sandbox.
    hide: Vec<PathBuf>,
    memory_mb: u64,
    max_processes: u64,
    max_output: usize,
}

/// How a run was isolated: what the result reports.
struct Applied {
    tool: &'static str,
    network: &'static str,
    filesystem: &'static str,
    pid_namespace: bool,
    cgroup: Option<PathBuf>,
}

impl CodeRun {
    pub(super) fn new(cfg: &CodeRunConfig) -> CodeRun {
        let shell = cfg
            .shell
            .clone()
            .or_else(|| which("sh"))
            .filter(|p| is_executable(p));
        let (python, python_prefix) = shell
            .as_ref()
            .and_then(|_| {
                let candidate = cfg.python.clone().or_else(|| which("python3"))?;
                // Resolve shims to the interpreter itself: the sandbox gets a different $HOME.
                let out = Command::new(&candidate)
                    .args([
                        "-c",
                        "import sys; print(sys.executable); print(sys.base_prefix)",
                    ])
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .output()
                    .ok()?;
                let text = String::from_utf8(out.stdout).ok()?;
                let mut lines = text.lines();
                let exe = lines.next().unwrap_or_default().trim().to_string();
                let prefix = lines.next().map(|l| PathBuf::from(l.trim()));
                (out.status.success() && !exe.is_empty())
                    .then(|| (Some(PathBuf::from(exe)), prefix))
            })
            .unwrap_or((None, None));
        let isolate_network = cfg.isolate_network != Some(false);
        let mut run = CodeRun {
            shell,
            python,
            python_prefix,
            bwrap: None,
            unshare: None,
            cgroup_root: None,
            hide: cfg.hide.clone(),
            memory_mb: cfg.memory_mb.unwrap_or(DEFAULT_MEMORY_MB).max(16),
            max_processes: cfg.max_processes.unwrap_or(DEFAULT_MAX_PROCESSES).max(4),
            max_output: cfg.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT).max(1),
        };
        let Some(sh) = run.shell.clone() else {
            return run;
        };
        let quiet = |c: &mut Command| {
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if cfg.sandbox != Some(false) {
            run.bwrap = cfg.bwrap.clone().or_else(|| which("bwrap")).filter(|b| {
                let probe = std::env::temp_dir();
                let mut c = Command::new(b);
                c.args(run.bwrap_args(&probe, false))
                    .arg(&sh)
                    .args(["-c", "exit 0"]);
                quiet(&mut c)
            });
        }
        if run.bwrap.is_none() && isolate_network {
            run.unshare = which("unshare").filter(|u| {
                quiet(
                    Command::new(u)
                        .args(["-rn"])
                        .arg(&sh)
                        .args(["-c", "exit 0"]),
                )
            });
        }
        run.cgroup_root = pids_cgroup_root();
        if run.bwrap.is_none() {
            tracing::warn!(
                "code_run: bubblewrap is missing or cannot create namespaces here; snippets \
                 run with the host's filesystem visible (install bubblewrap)"
            );
        }
        run
    }

    /// Usable at all: the wrapper shell exists.
    pub(super) fn available(&self) -> bool {
        self.shell.is_some()
    }

    /// bwrap's arguments for a run in `workdir` (without the command).
    fn bwrap_args(&self, workdir: &Path, network: bool) -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = Vec::new();
        let mut push =
            |parts: &[&std::ffi::OsStr]| a.extend(parts.iter().map(|p| p.to_os_string()));
        let mut bound: Vec<PathBuf> = Vec::new();
        for d in SYSTEM_DIRS {
            let p = Path::new(d);
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(t) = std::fs::read_link(p) {
                        push(&["--symlink".as_ref(), t.as_os_str(), p.as_os_str()]);
                    }
                }
                Ok(m) if m.is_dir() => {
                    push(&["--ro-bind".as_ref(), p.as_os_str(), p.as_os_str()]);
                    bound.push(p.to_path_buf());
                }
                _ => {}
            }
        }
        for f in ETC_FILES {
            push(&["--ro-bind-try".as_ref(), f.as_ref(), f.as_ref()]);
        }
        bound.push(PathBuf::from("/etc"));
        // An interpreter or shell outside the system directories (pyenv, a venv's base).
        let extra = [self.python_prefix.clone(), self.shell.clone()];
        for p in extra.into_iter().flatten() {
            if !bound.iter().any(|b| p.starts_with(b)) && p.exists() {
                push(&["--ro-bind".as_ref(), p.as_os_str(), p.as_os_str()]);
                bound.push(p);
            }
        }
        push(&[
            "--proc".as_ref(),
            "/proc".as_ref(),
            "--dev".as_ref(),
            "/dev".as_ref(),
            "--tmpfs".as_ref(),
            "/tmp".as_ref(),
        ]);
        // covo's own files, wherever they are under something bound: covered.
        for h in &self.hide {
            if bound.iter().any(|b| h.starts_with(b)) && h.exists() {
                if h.is_dir() {
                    push(&["--tmpfs".as_ref(), h.as_os_str()]);
                } else {
                    push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), h.as_os_str()]);
                }
            }
        }
        push(&[
            "--bind".as_ref(),
            workdir.as_os_str(),
            workdir.as_os_str(),
            "--chdir".as_ref(),
            workdir.as_os_str(),
            "--unshare-all".as_ref(),
        ]);
        if network {
            push(&["--share-net".as_ref()]);
        }
        push(&[
            "--uid".as_ref(),
            "65534".as_ref(),
            "--gid".as_ref(),
            "65534".as_ref(),
            "--cap-drop".as_ref(),
            "ALL".as_ref(),
            "--hostname".as_ref(),
            "covo-sandbox".as_ref(),
            "--die-with-parent".as_ref(),
            "--new-session".as_ref(),
            "--".as_ref(),
        ]);
        a
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

        let fail = |what: &str, e: std::io::Error| ToolError::failed(TOOL, format!("{what}: {e}"));
        let dir = tempfile::Builder::new()
            .prefix("covo-code-run-")
            .tempdir()
            .map_err(|e| fail("no temporary directory", e))?;
        let script = dir.path().join(file);
        std::fs::write(&script, code).map_err(|e| fail("could not write the snippet", e))?;
        // Inside the sandbox the snippet is `nobody`: the directory is its own.
        if self.bwrap.is_some() {
            let _ = std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777));
        }
        let cgroup = self.cgroup_root.as_ref().and_then(|root| {
            let n = RUNS.fetch_add(1, Ordering::Relaxed);
            let cg = root.join(format!("covo-code-run-{}-{n}", std::process::id()));
            std::fs::create_dir(&cg).ok()?;
            if std::fs::write(cg.join("pids.max"), self.max_processes.to_string()).is_err() {
                let _ = std::fs::remove_dir(&cg);
                return None;
            }
            Some(cg)
        });
        // The CPU-time limit per process: the run's time limit, plus one second.
        let cpu_secs = timeout_s + 1;

        let mut cmd = Command::new(shell);
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("covo-sandbox")
            .arg((self.memory_mb * 1024).to_string())
            .arg(cpu_secs.to_string())
            .arg(
                cgroup
                    .as_ref()
                    .map_or_else(|| "-".into(), |c| c.join("cgroup.procs").into_os_string()),
            );
        let applied = if let Some(b) = &self.bwrap {
            cmd.arg(b).args(self.bwrap_args(dir.path(), want_network));
            Applied {
                tool: "bwrap",
                network: if want_network {
                    "shared with the host (the call asked for network)"
                } else {
                    "none (a private network namespace)"
                },
                filesystem: "read-only system directories, a private /tmp and the working \
                             directory; nothing else of the host",
                pid_namespace: true,
                cgroup: cgroup.clone(),
            }
        } else {
            let network = match (want_network, &self.unshare) {
                (true, _) => "shared with the host (the call asked for network)",
                (false, Some(u)) => {
                    cmd.arg(u).arg("-rn");
                    "none (unshare -rn)"
                }
                (false, None) => "shared with the host (not isolated: no bwrap or unshare -rn)",
            };
            Applied {
                tool: "none (fallback: no working bwrap)",
                network,
                filesystem: "the host's filesystem as the peer's user sees it, including \
                             covo's files; only the working directory is fresh",
                pid_namespace: false,
                cgroup: cgroup.clone(),
            }
        };
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
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                remove_cgroup(shell, cgroup.as_deref());
                return Err(fail("could not start the snippet", e));
            }
        };
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
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if Instant::now() >= limit => {
                    timed_out = true;
                    // bwrap's death kills its PID namespace (--die-with-parent on its init).
                    let _ = child.kill();
                    kill_group(shell, pgid);
                    break child.wait();
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => break Err(e),
            }
        };
        // Whatever the snippet left behind dies with it (and releases the pipes): its process
        // group, and through the cgroup also what left the group (`setsid`).
        kill_group(shell, pgid);
        remove_cgroup(shell, cgroup.as_deref());
        let status = status.map_err(|e| fail("waiting for the snippet", e))?;
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
        let network = match (want_network, applied.network.starts_with("none")) {
            (true, _) => "allowed",
            (false, true) => "isolated",
            (false, false) => "not isolated",
        };
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
            "isolation": {
                "tool": applied.tool,
                "filesystem": applied.filesystem,
                "network": applied.network,
                "user": if applied.pid_namespace {
                    "nobody in a user namespace, no capabilities"
                } else {
                    "the peer's own user"
                },
                "processes": match (&applied.cgroup, applied.pid_namespace) {
                    (Some(_), true) => format!(
                        "a private PID namespace and at most {} processes (pids cgroup); all \
                         killed at the end", self.max_processes),
                    (Some(_), false) => format!(
                        "at most {} processes (pids cgroup); all killed at the end",
                        self.max_processes),
                    (None, true) => "a private PID namespace, all killed at the end; no \
                                     process count limit (no writable pids cgroup)".into(),
                    (None, false) => "the process group is killed at the end; a process that \
                                      leaves it (setsid) can survive, and there is no process \
                                      count limit".into(),
                },
                "max_processes": applied.cgroup.as_ref().map(|_| self.max_processes),
                "cpu_secs_per_process": cpu_secs,
                "memory_mb_per_process": self.memory_mb,
                "wall_time_s": timeout_s,
            },
        }))
    }
}

/// The pids cgroup (v1) hierarchy, when this process may make a child there and limit it.
fn pids_cgroup_root() -> Option<PathBuf> {
    let root = PathBuf::from("/sys/fs/cgroup/pids");
    let probe = root.join(format!("covo-code-run-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).ok()?;
    let ok = std::fs::write(probe.join("pids.max"), "8").is_ok();
    let _ = std::fs::remove_dir(&probe);
    ok.then_some(root)
}

/// Kills every process left in the run's cgroup (wherever they went in the process tree), then
/// removes it.
fn remove_cgroup(shell: &Path, cgroup: Option<&Path>) {
    let Some(cg) = cgroup else { return };
    for _ in 0..50 {
        let pids = std::fs::read_to_string(cg.join("cgroup.procs")).unwrap_or_default();
        let pids: Vec<&str> = pids.split_whitespace().collect();
        if pids.is_empty() {
            break;
        }
        let _ = Command::new(shell)
            .args(["-c", "kill -KILL \"$@\" 2>/dev/null", "kill"])
            .args(&pids)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir(cg);
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

    /// The sandbox tests need bubblewrap that can create namespaces here: a machine without it
    /// fails them loudly (tests/run-all.sh installs it), never skips them.
    fn need_bwrap(r: &CodeRun) {
        assert!(
            r.bwrap.is_some(),
            "bwrap is missing or cannot create namespaces here: the code_run sandbox tests need \
             it (apt-get install -y bubblewrap; bash tests/run-all.sh installs it)"
        );
    }

    fn need_cgroup(r: &CodeRun) {
        assert!(
            r.cgroup_root.is_some(),
            "no writable pids cgroup (v1) at /sys/fs/cgroup/pids: the process-limit tests need one"
        );
    }

    #[test]
    fn without_network_the_sandbox_cannot_reach_a_local_listener() {
        let r = runner();
        need_python(&r);
        need_bwrap(&r);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let out = run(
            &r,
            json!({"language": "python", "code": connect_snippet(port)}),
        );
        assert_eq!(out["network"], "isolated");
        assert_eq!(
            out["isolation"]["network"],
            "none (a private network namespace)"
        );
        assert!(
            out["stdout"].as_str().unwrap().starts_with("refused"),
            "{out}"
        );
        listener.set_nonblocking(true).unwrap();
        assert!(
            listener.accept().is_err(),
            "the sandbox reached the listener"
        );
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
    fn the_fallback_without_a_sandbox_is_reported_as_such() {
        let r = CodeRun::new(&CodeRunConfig {
            isolate_network: Some(false),
            sandbox: Some(false),
            ..Default::default()
        });
        let out = run(&r, json!({"language": "shell", "code": "true"}));
        assert_eq!(out["network"], "not isolated");
        let iso = &out["isolation"];
        assert_eq!(iso["tool"], "none (fallback: no working bwrap)");
        assert!(
            iso["filesystem"]
                .as_str()
                .unwrap()
                .contains("including covo's files"),
            "{iso}"
        );
        assert_eq!(iso["user"], "the peer's own user");
    }

    /// covo's files: a config, a database and a `COVO_HOME` with a canary each, outside every
    /// directory the sandbox binds; and a canary in the host's /tmp.
    #[test]
    fn the_sandbox_cannot_read_covos_config_database_or_home() {
        const CANARY: &str = "covo-canary-5f1e2d";
        let base = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target")
            .join(format!("code-run-canary-{}", std::process::id()));
        let home = base.join("covo-home");
        std::fs::create_dir_all(&home).unwrap();
        let config = base.join("covo.toml");
        let db = home.join("covo.db");
        let secret = home.join("secret.txt");
        for f in [&config, &db, &secret] {
            std::fs::write(f, format!("{CANARY} {}", f.display())).unwrap();
        }
        let host_tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(host_tmp.path(), CANARY).unwrap();
        let r = CodeRun::new(&CodeRunConfig {
            hide: vec![home.clone(), config.clone()],
            ..Default::default()
        });
        need_python(&r);
        need_bwrap(&r);
        let paths: Vec<String> = [&config, &db, &secret, &home, &base]
            .iter()
            .map(|p| p.display().to_string())
            .chain([host_tmp.path().display().to_string()])
            .collect();
        let code = format!(
            "import os\nfor p in {paths:?}:\n    try:\n        if os.path.isdir(p):\n            print(p, 'listed', os.listdir(p))\n        else:\n            print(p, 'read', open(p).read())\n    except OSError as e:\n        print(p, 'refused', type(e).__name__)\n"
        );
        let out = run(&r, json!({"language": "python", "code": code}));
        let stdout = out["stdout"].as_str().unwrap();
        assert!(!stdout.contains(CANARY), "{out}");
        assert_eq!(stdout.matches("refused").count(), paths.len(), "{out}");
        // The same from the shell.
        let out = run(
            &r,
            json!({"language": "shell", "code": format!("cat {} {} 2>&1; ls {} 2>&1", config.display(), db.display(), home.display())}),
        );
        assert!(!out["stdout"].as_str().unwrap().contains(CANARY), "{out}");
        assert_eq!(out["isolation"]["tool"], "bwrap");
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// covo's paths that lie under a directory the sandbox must bind are covered: a file by
    /// the null device on a nodev mount (so it cannot be opened), a directory by an empty tmpfs.
    #[test]
    fn covos_paths_under_a_bound_directory_are_covered() {
        let r = CodeRun::new(&CodeRunConfig {
            hide: vec!["/etc/passwd".into(), "/usr/share".into()],
            ..Default::default()
        });
        need_bwrap(&r);
        assert!(Path::new("/usr/share").read_dir().unwrap().next().is_some());
        assert!(std::fs::read("/etc/passwd").is_ok_and(|b| !b.is_empty()));
        let out = run(
            &r,
            json!({"language": "shell", "code": "cat /etc/passwd > /dev/null 2>&1 && echo read || echo refused; ls -A /usr/share | wc -l; ls /usr/bin | wc -l"}),
        );
        let stdout = out["stdout"].as_str().unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(&lines[..2], ["refused", "0"], "{out}");
        let bins: u64 = lines[2].trim().parse().unwrap();
        assert!(bins > 10, "the system stays visible: {out}");
    }

    #[test]
    fn the_system_is_read_only_and_tmp_is_private() {
        let r = runner();
        need_bwrap(&r);
        let marker = format!("covo-private-tmp-{}", std::process::id());
        let out = run(
            &r,
            json!({"language": "shell", "code": format!("touch /usr/bin/covo-x 2>/dev/null && echo wrote-usr; touch /tmp/{marker} && echo wrote-tmp; id -u")}),
        );
        assert_eq!(out["stdout"], "wrote-tmp\n65534\n", "{out}");
        assert!(!std::env::temp_dir().join(&marker).exists());
        assert!(!Path::new("/tmp").join(&marker).exists());
    }

    /// Processes of `marker` still alive on this host.
    fn alive(marker: &str) -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.starts_with("sleep ") && c.contains(marker))
            .collect()
    }

    #[test]
    fn a_setsid_child_does_not_outlive_the_run_on_timeout_or_on_exit() {
        let r = runner();
        need_bwrap(&r);
        let pid = std::process::id();
        // Killed at the time limit.
        let marker = format!("1{pid}.25");
        let out = run(
            &r,
            json!({"language": "shell", "code": format!("setsid sleep {marker} & echo started; sleep 100"), "timeout_s": 1}),
        );
        assert_eq!(out["timed_out"], true, "{out}");
        assert_eq!(out["stdout"], "started\n", "{out}");
        assert!(alive(&marker).is_empty(), "{:?}", alive(&marker));
        // Left behind by a snippet that exits at once.
        let marker = format!("1{pid}.5");
        let out = run(
            &r,
            json!({"language": "shell", "code": format!("setsid sleep {marker} > /dev/null 2>&1 & sleep 0.2; exit 0")}),
        );
        assert_eq!(out["exit_code"], 0, "{out}");
        assert!(alive(&marker).is_empty(), "{:?}", alive(&marker));
        // Without the PID namespace the pids cgroup still finds it.
        let r = CodeRun::new(&CodeRunConfig {
            sandbox: Some(false),
            ..Default::default()
        });
        need_cgroup(&r);
        let marker = format!("1{pid}.75");
        let out = run(
            &r,
            json!({"language": "shell", "code": format!("setsid sleep {marker} > /dev/null 2>&1 & sleep 0.2; exit 0")}),
        );
        assert_eq!(out["exit_code"], 0, "{out}");
        assert!(alive(&marker).is_empty(), "{:?}", alive(&marker));
    }

    #[test]
    fn the_process_count_and_cpu_time_are_limited_and_reported() {
        let r = CodeRun::new(&CodeRunConfig {
            max_processes: Some(16),
            ..Default::default()
        });
        need_python(&r);
        need_bwrap(&r);
        need_cgroup(&r);
        let out = run(
            &r,
            json!({"language": "python", "code": "import os, time\nn = 0\nfor i in range(40):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(5)\n        os._exit(0)\n    n += 1\nprint(n)\n", "timeout_s": 3}),
        );
        let running: u64 = out["stdout"]
            .as_str()
            .unwrap()
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{out}"));
        // The sandbox's own processes (bwrap, its init, python) count too.
        assert!((1..16).contains(&running), "{out}");
        let out = run(
            &r,
            json!({"language": "python", "code": "import resource; print(resource.getrlimit(resource.RLIMIT_CPU))", "timeout_s": 7}),
        );
        assert_eq!(out["stdout"], "(8, 8)\n", "{out}");
        let iso = &out["isolation"];
        assert_eq!(iso["tool"], "bwrap");
        assert_eq!(iso["max_processes"], 16);
        assert_eq!(iso["cpu_secs_per_process"], 8);
        assert_eq!(iso["memory_mb_per_process"], 512);
        assert_eq!(iso["user"], "nobody in a user namespace, no capabilities");
        assert!(
            iso["processes"].as_str().unwrap().contains("PID namespace"),
            "{iso}"
        );
    }
}
