//! The workspace's binaries, for tests in a package that does not build them: the peer's
//! end-to-end tests run the gateway's `covo` next to their own `covo-peer`.
//!
//! `cargo test --workspace` builds every binary before it runs any test. A test run of one
//! package (`cargo test -p covo-peer`) does not build the others: then this fails loudly with
//! the command that does, never running a stale or missing binary silently.

use std::path::PathBuf;

/// The path of workspace binary `name` in the same target profile as the running test.
pub fn path(name: &str) -> PathBuf {
    // A test runs as target/<profile>/deps/<test>-<hash>; binaries sit in target/<profile>.
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let bin = profile_dir.join(name);
    assert!(
        bin.is_file(),
        "{} is missing: build it first with `cargo build --bin {name}` \
         (`cargo test --workspace` builds every binary)",
        bin.display()
    );
    bin
}

/// The gateway binary, `covo`.
pub fn covo() -> PathBuf {
    path("covo")
}

/// Runs a command that prints one JSON document (`covo tools call`, `covo tools list --json`):
/// its exit code (-1 when killed by a signal) and the document. Panics, showing the command and
/// both outputs, when stdout is not JSON.
pub fn json(cmd: &mut std::process::Command) -> (i32, serde_json::Value) {
    let out = cmd.output().expect("the command starts");
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{cmd:?}: not JSON: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// Stops a daemon the way a service manager does: SIGTERM, then up to 10 s for it to exit on
/// its own (SIGKILL after that). Its exit code (`None` when a signal ended it) and its stderr,
/// when that was piped.
pub fn terminate(mut child: std::process::Child) -> (Option<i32>, String) {
    use std::io::Read;
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().expect("the child's status") {
            break s;
        }
        if std::time::Instant::now() > end {
            let _ = child.kill();
            break child.wait().expect("the killed child's status");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status.code(), err)
}
