//! `covo run` as a systemd `Type=notify` service with a watchdog: the real binary sends
//! `READY=1` to `$NOTIFY_SOCKET`, then `WATCHDOG=1` at half of `$WATCHDOG_USEC`, and
//! `STOPPING=1` on SIGTERM.

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn covo_run_signals_ready_pings_the_watchdog_and_says_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    std::fs::write(dir.path().join("covo.toml"), "").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args(["--config", "covo.toml", "run"])
        .current_dir(dir.path())
        .env("COVO_HOME", dir.path().join("home"))
        .env("NOTIFY_SOCKET", &path)
        .env("WATCHDOG_USEC", "2000000")
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_LLM_MODEL")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 256];
    let mut next = || {
        let n = sock.recv(&mut buf).expect("a notification within 10 s");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    assert_eq!(next(), "READY=1\nSTATUS=serving");
    let ready = Instant::now();
    assert_eq!(next(), "WATCHDOG=1");
    assert_eq!(next(), "WATCHDOG=1");
    let took = ready.elapsed();
    // Two pings at half of 2 s each, checked on a one-second tick: about 2 s, never 4.
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_millis(3500),
        "{took:?}"
    );
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    loop {
        let m = next();
        if m != "WATCHDOG=1" {
            assert_eq!(m, "STOPPING=1");
            break;
        }
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
