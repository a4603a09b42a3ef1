//! Running a system program for a tool (`systemctl`, `journalctl`, `git`): found on `$PATH`,
//! never through a shell, with a deadline, bounded output, stdin closed, and the rest of the
//! output drained so the program never blocks on a full pipe.

use crate::error::CallError;
use crate::exec::Cx;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most stdout kept from one run.
pub const MAX_STDOUT: usize = 256 * 1024;
/// The most stderr kept from one run.
const MAX_STDERR: usize = 4096;

/// A program on `$PATH`, as a shell would find it.
pub fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        // A path (a board file's flash command may name a script).
        return Some(PathBuf::from(name)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// One run of a program.
pub struct Cmd {
    program: String,
    timeout: Duration,
    env: Vec<(&'static str, String)>,
}

/// What a program printed, and whether it succeeded.
pub struct Output {
    /// Its stdout (at most [`MAX_STDOUT`] bytes, lossily decoded).
    pub stdout: String,
    /// Its stderr (the first 4 KiB).
    pub stderr: String,
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its exit code, when it exited.
    pub code: Option<i32>,
}

impl Cmd {
    /// `program`, stopped after `timeout`.
    pub fn new(program: impl Into<String>, timeout: Duration) -> Cmd {
        Cmd {
            program: program.into(),
            timeout,
            env: Vec::new(),
        }
    }

    /// Sets an environment variable for the run.
    pub fn env(mut self, key: &'static str, value: impl Into<String>) -> Cmd {
        self.env.push((key, value.into()));
        self
    }

    /// Runs with `args`; a non-zero exit is an error naming the program and its first stderr
    /// line.
    pub fn run(self, cx: &Cx<'_>, args: &[&str]) -> Result<String, CallError> {
        let program = self.program.clone();
        let out = self.output(cx, args)?;
        if !out.success {
            return Err(cx.fail(format!(
                "{program} failed (exit {}): {}",
                out.code.map_or("by a signal".into(), |c| c.to_string()),
                out.stderr.trim().lines().next().unwrap_or("")
            )));
        }
        Ok(out.stdout)
    }

    /// Runs with `args` and returns what happened, whatever the exit status.
    pub fn output(self, cx: &Cx<'_>, args: &[&str]) -> Result<Output, CallError> {
        let program = self.program.as_str();
        let path =
            find_program(program).ok_or_else(|| cx.fail(format!("{program} is not installed")))?;
        let mut cmd = Command::new(path);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| cx.fail(format!("cannot run {program}: {e}")))?;
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let out = std::thread::spawn(move || read_capped(out, MAX_STDOUT));
        let err = std::thread::spawn(move || read_capped(err, MAX_STDERR));
        let deadline = Instant::now() + self.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(cx.fail(format!(
                        "{program} did not finish within {} s",
                        self.timeout.as_secs()
                    )));
                }
            }
        };
        let (stdout, _) = out.join().unwrap_or_default();
        let (stderr, _) = err.join().unwrap_or_default();
        Ok(Output {
            stdout,
            stderr,
            success: status.success(),
            code: status.code(),
        })
    }
}

/// Reads at most `cap` bytes, then drains the rest; returns the text and whether it was cut.
fn read_capped(mut r: impl Read, cap: usize) -> (String, bool) {
    let mut buf = Vec::new();
    let _ = (&mut r).take(cap as u64).read_to_end(&mut buf);
    let rest = std::io::copy(&mut r, &mut std::io::sink()).unwrap_or(0);
    (String::from_utf8_lossy(&buf).into_owned(), rest > 0)
}
