//! The gateway's presence on the broker and how its connections end, against a real mosquitto:
//! only `covo run` publishes `P/gateways/G/status` (a CLI command beside it uses its own client
//! id and publishes nothing there, not even through a Will), and every covo connection ends
//! with a DISCONNECT the broker logs as a clean one. Also: logs to a pipe carry no colour codes.

use covo_tests::broker::{raw, Mosquitto};
use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn covo(dir: &std::path::Path, cfg: &str) -> Command {
    let path = dir.join("covo.toml");
    std::fs::write(&path, cfg).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_covo"));
    c.arg("--config")
        .arg(&path)
        .current_dir(dir)
        .env("COVO_HOME", dir.join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .env_remove("COVO_LOG")
        .env_remove("NO_COLOR")
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("COVO_LLM_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY");
    c
}

/// Everything that arrives on the raw client's subscription until it is quiet for `quiet`.
fn drain(obs: &covo_tests::broker::Raw, quiet: Duration) -> Vec<serde_json::Value> {
    let mut got = Vec::new();
    while let Ok(m) = obs.rx.recv_timeout(quiet) {
        got.push(serde_json::from_slice(&m.payload).unwrap_or(serde_json::Value::Null));
    }
    got
}

/// Kills the daemon if the test fails before it stops it (it must not outlive the test).
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Sends SIGTERM and waits for a clean exit.
fn terminate(child: Child) -> String {
    let (code, err) = covo_tests::bins::terminate(child);
    assert_eq!(code, Some(0), "covo run: {err}");
    err
}

/// Client ids mosquitto logged as connected, and those it logged as cleanly disconnected
/// (`Client X disconnected.`, which it writes only after a DISCONNECT).
fn clients(log: &str, prefix: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut up = BTreeSet::new();
    let mut clean = BTreeSet::new();
    for line in log.lines() {
        if let Some(rest) = line
            .split(" as ")
            .nth(1)
            .filter(|_| line.contains("New client"))
        {
            if let Some(id) = rest
                .split_whitespace()
                .next()
                .filter(|i| i.starts_with(prefix))
            {
                up.insert(id.to_string());
            }
        }
        if let Some(rest) = line.split("Client ").nth(1) {
            if let Some(id) = rest.strip_suffix(" disconnected.") {
                if id.starts_with(prefix) {
                    clean.insert(id.to_string());
                }
            }
        }
    }
    (up, clean)
}

#[test]
fn cli_commands_beside_covo_run_leave_its_presence_alone_and_every_disconnect_is_clean() {
    let broker = Mosquitto::start();
    let status = raw(broker.port(), "covo/gateways/field1/status");
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"field1\"\n[run]\ntelemetry_secs = 3600\n",
        broker.url()
    );
    let mut daemon = KillOnDrop(Some(
        covo(dir.path(), &cfg)
            .args(["run", "--profile", "full"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let (birth, _) = status
        .next_on("covo/gateways/field1/status", Duration::from_secs(10))
        .expect("the daemon's birth");
    assert_eq!(birth["status"], "online", "{birth}");
    // The daemon re-announces with its swarm tools; let that settle.
    for s in drain(&status, Duration::from_millis(1500)) {
        assert_eq!(s["status"], "online", "{s}");
    }

    // Eight CLI commands with the same configuration, one after another.
    for _ in 0..8 {
        let out = covo(dir.path(), &cfg)
            .args(["tools", "list", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Not one status message from them: no birth, no offline, no Will.
    let during = drain(&status, Duration::from_millis(1500));
    assert!(
        during.is_empty(),
        "CLI commands published on the daemon's status topic: {during:?}"
    );
    let log = broker.log();
    let (up, clean) = clients(&log, "covo-cli-field1-");
    assert_eq!(
        up.len(),
        8,
        "each CLI run has a client id of its own:\n{log}"
    );
    assert_eq!(clean, up, "every CLI run disconnects cleanly:\n{log}");

    // The daemon stops: exactly one `offline`, its own, and no Will after it.
    terminate(daemon.0.take().unwrap());
    let after = drain(&status, Duration::from_millis(1500));
    assert_eq!(
        after,
        vec![serde_json::json!({"status": "offline"})],
        "one offline from a clean stop"
    );
    let log = broker.log();
    let (up, clean) = clients(&log, "covo-gw-field1-");
    assert_eq!(up.len(), 1, "{log}");
    assert_eq!(clean, up, "the daemon disconnects cleanly:\n{log}");
    // (The harness's own readiness probe shows as `<unknown> closed its connection`.)
    let unclean: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("out of memory")
                || (l.contains("covo-") && l.contains("closed its connection"))
        })
        .collect();
    assert!(
        unclean.is_empty(),
        "covo connections ended without a clean DISCONNECT: {unclean:?}\n{log}"
    );
}

#[test]
fn logs_written_to_a_pipe_carry_no_colour_codes() {
    // A broker that is not there: the link logs warnings while the command runs.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!("[mqtt]\nurl = \"mqtt://127.0.0.1:{port}\"\ngateway_id = \"logs\"\n");
    let out = covo(dir.path(), &cfg)
        .args(["tools", "list", "--json"])
        .env("COVO_LOG", "debug")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("WARN") || err.contains("DEBUG"),
        "the command logged nothing to check: {err}"
    );
    assert!(
        !out.stderr.contains(&0x1b),
        "ANSI escape codes in logs written to a pipe: {err:?}"
    );
}
