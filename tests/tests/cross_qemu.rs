//! A cross-built `covo` (a Raspberry Pi build from `tests/cross/build.sh`) proven under
//! qemu-user: it lists its tools, reads the sim board, chats with the scripted LLM server over
//! HTTP and, as `covo run`, announces itself to Home Assistant and sends telemetry through a
//! real mosquitto on the host.
//!
//! `tests/cross/check.sh` runs these tests once per build, with
//! - `COVO_CROSS_BIN`: the binary to check;
//! - `COVO_CROSS_RUNNER`: the emulator command line that runs it, words split on spaces
//!   (`qemu-aarch64-static -cpu cortex-a53`, `qemu-arm-static -cpu cortex-a7 -L /usr/arm-linux-gnueabihf`).
//!
//! The ordinary `cargo test`, which builds no cross binary, does not build this target at all
//! (`test = false` in `tests/Cargo.toml`); `cargo test --test cross_qemu` runs it, and without
//! the two variables every test fails, naming what is missing.

use covo_tests::broker::{raw, Mosquitto};
use covo_tests::llm_server::{Reply, ScriptedLlm};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The emulator and the binary, from the environment; a missing one is a failure, not a skip.
fn target() -> (Vec<String>, PathBuf) {
    let bin = std::env::var_os("COVO_CROSS_BIN")
        .map(PathBuf::from)
        .expect("COVO_CROSS_BIN is not set: run tests/cross/check.sh");
    assert!(bin.is_file(), "COVO_CROSS_BIN={} is missing", bin.display());
    let runner: Vec<String> = std::env::var("COVO_CROSS_RUNNER")
        .expect("COVO_CROSS_RUNNER is not set: run tests/cross/check.sh")
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(!runner.is_empty(), "COVO_CROSS_RUNNER is empty");
    (runner, bin)
}

/// A fresh folder with a `covo.toml`, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str, cfg: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("covo-cross-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("covo.toml"), cfg).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `covo --config covo.toml ARGS…` under the emulator, in `dir`, with a clean environment.
fn covo(dir: &Path, args: &[&str]) -> Command {
    let (runner, bin) = target();
    let mut c = Command::new(&runner[0]);
    c.args(&runner[1..])
        .arg(bin)
        .arg("--config")
        .arg(dir.join("covo.toml"))
        .args(args)
        .current_dir(dir)
        .env("COVO_HOME", dir.join("home"));
    for v in [
        "COVO_CONFIG",
        "COVO_MQTT_URL",
        "COVO_LLM_PROVIDER",
        "COVO_LLM_BASE_URL",
        "COVO_LLM_MODEL",
        "COVO_LLM_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ] {
        c.env_remove(v);
    }
    c
}

fn ok(out: Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what} failed: stdout {stdout}\nstderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn tools_list_names_the_catalog() {
    let d = Dir::new("list", "");
    let out = ok(
        covo(&d.0, &["tools", "list", "--json"]).output().unwrap(),
        "covo tools list",
    );
    let v: Value = serde_json::from_str(&out).expect("tools list --json is JSON");
    let names: Vec<&str> = v
        .as_array()
        .expect("an array of tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names.len(), covo_core_count(), "{names:?}");
    for want in ["sensor_read", "memory_store", "tool_search", "mqtt_publish"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
}

/// How many tools the host build lists (the same catalog must reach the Pi build).
fn covo_core_count() -> usize {
    covo_core::catalog::all().count()
}

#[test]
fn sensor_read_reads_the_sim_bme280() {
    let d = Dir::new("sensor", "");
    let out = ok(
        covo(
            &d.0,
            &["tools", "call", "sensor_read", r#"{"sensor":"climate"}"#],
        )
        .output()
        .unwrap(),
        "sensor_read",
    );
    let v: Value = serde_json::from_str(&out).expect("JSON result");
    let readings = v["readings"].as_array().expect("readings");
    let temp = readings
        .iter()
        .find(|r| r["quantity"] == "temperature")
        .unwrap_or_else(|| panic!("no temperature in {v}"));
    let c = temp["value"].as_f64().expect("a number");
    assert!((-40.0..=85.0).contains(&c), "BME280 range: {c}");
    // The floating point and the bundled SQLite work on the target: a memory round trip.
    ok(
        covo(
            &d.0,
            &[
                "tools",
                "call",
                "memory_store",
                r#"{"text":"the fan is on GPIO 18"}"#,
            ],
        )
        .output()
        .unwrap(),
        "memory_store",
    );
    let out = ok(
        covo(
            &d.0,
            &["tools", "call", "memory_recall", r#"{"query":"fan"}"#],
        )
        .output()
        .unwrap(),
        "memory_recall",
    );
    assert!(out.contains("GPIO 18"), "{out}");
}

#[test]
fn chat_m_calls_a_tool_over_http_and_prints_the_answer() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("sensor_read", r#"{"sensor":"climate"}"#)]),
        Reply::text("It is warm in the greenhouse."),
    ]);
    let d = Dir::new("chat", "");
    let out = covo(
        &d.0,
        &["chat", "--profile", "full", "-m", "how warm is it?"],
    )
    .env("COVO_LLM_BASE_URL", srv.openai_base_url())
    .env("COVO_LLM_MODEL", "scripted")
    .env("OPENAI_API_KEY", "sk-test")
    .output()
    .unwrap();
    let stdout = ok(out, "covo chat -m");
    assert_eq!(stdout, "It is warm in the greenhouse.\n");
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2, "one call for the tool, one for the answer");
    // The second request carries the tool's result: the sim's reading went back to the model.
    let body = &reqs[1].raw_body;
    assert!(
        body.contains("bme280") && body.contains("temperature"),
        "{body}"
    );
}

/// Sends SIGTERM to the emulator (qemu-user passes it on) and waits for the exit.
fn terminate(mut child: Child) -> Option<i32> {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if Instant::now() > end {
            let _ = child.kill();
            return child.wait().unwrap().code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn run_announces_to_home_assistant_and_sends_telemetry() {
    let broker = Mosquitto::start();
    let ha = raw(broker.port(), "homeassistant/#");
    let obs = raw(broker.port(), "covo/pi/#");
    let d = Dir::new(
        "run",
        &format!(
            "[mqtt]\nurl = \"{}\"\ngateway_id = \"pi\"\n[run]\ntelemetry_secs = 1\n",
            broker.url()
        ),
    );
    let child = covo(&d.0, &["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Discovery configs, retained, for the sim's declared devices.
    let mut configs: BTreeMap<String, (Value, bool)> = BTreeMap::new();
    let end = Instant::now() + Duration::from_secs(30);
    let want = [
        "homeassistant/sensor/covo_pi/climate_temperature/config",
        "homeassistant/switch/covo_pi/relay/config",
    ];
    while !want.iter().all(|t| configs.contains_key(*t)) {
        let Ok(m) = ha
            .rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        else {
            break;
        };
        if m.topic.ends_with("/config") {
            let v = serde_json::from_slice(&m.payload).unwrap_or(Value::Null);
            configs.insert(m.topic, (v, m.retain));
        }
    }
    for t in want {
        assert!(configs.contains_key(t), "no {t}; got {:?}", configs.keys());
    }
    let (temp, _) = &configs[want[0]];
    assert_eq!(temp["device_class"], "temperature", "{temp}");
    assert_eq!(temp["state_topic"], "covo/pi/sensors/climate", "{temp}");

    // Telemetry on the topic Home Assistant reads, with a number where its template looks.
    let (t, _) = obs
        .next_on("covo/pi/sensors/climate", Duration::from_secs(30))
        .expect("telemetry from covo run");
    assert!(t["temperature"]["value"].is_number(), "{t}");

    // The configs are retained: a late subscriber gets them from the broker.
    let late = raw(broker.port(), want[1]);
    let (relay, retained) = late
        .next_on(want[1], Duration::from_secs(5))
        .expect("retained switch config");
    assert!(retained, "discovery configs are retained");
    assert_eq!(relay["command_topic"], "covo/pi/ha/relay/set", "{relay}");

    assert_eq!(terminate(child), Some(0), "covo run exits 0 on SIGTERM");
}

/// `covo-peer` cross-built for the same board (`COVO_CROSS_PEER_BIN`), run under the same
/// emulator: `tests/cross/check.sh peer-aarch64` runs the `peer_` tests with it; the gateway
/// checks run with `--skip peer_`.
fn peer_target() -> PathBuf {
    let bin = std::env::var_os("COVO_CROSS_PEER_BIN")
        .map(PathBuf::from)
        .expect("COVO_CROSS_PEER_BIN is not set: run tests/cross/check.sh peer-aarch64");
    assert!(
        bin.is_file(),
        "COVO_CROSS_PEER_BIN={} is missing",
        bin.display()
    );
    bin
}

#[test]
fn peer_announces_itself_and_serves_the_gateways_plot_series_over_mqtt() {
    let broker = Mosquitto::start();
    let status = raw(broker.port(), "covo/peers/pi-peer/status");
    let d = Dir::new(
        "peer",
        &format!(
            "[mqtt]\nurl = \"{}\"\ngateway_id = \"pi\"\ncall_timeout_ms = 20000\n\
             [peer]\nid = \"pi-peer\"\n",
            broker.url()
        ),
    );
    let (runner, _) = target();
    let mut peer = Command::new(&runner[0]);
    peer.args(&runner[1..])
        .arg(peer_target())
        .arg("--config")
        .arg(d.0.join("covo.toml"))
        .current_dir(&d.0)
        .env("COVO_HOME", d.0.join("peer-home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let peer = peer.spawn().unwrap();

    // Its birth, retained, names the tools it serves.
    let (birth, _) = status
        .next_on("covo/peers/pi-peer/status", Duration::from_secs(60))
        .expect("the peer's birth");
    assert_eq!(birth["status"], "online", "{birth}");
    assert!(
        birth.to_string().contains("plot_series"),
        "the birth advertises plot_series: {birth}"
    );

    // The board's covo (also under the emulator) calls it through the broker: the PNG comes
    // back as an artifact file in the gateway's home.
    let out = ok(
        covo(
            &d.0,
            &[
                "tools",
                "call",
                "plot_series",
                r#"{"series":[{"label":"temperature","points":[[0,20.5],[60,21.0],[120,21.75]]}],"title":"cross"}"#,
            ],
        )
        .output()
        .unwrap(),
        "covo tools call plot_series",
    );
    let v: Value = serde_json::from_str(out.trim()).unwrap_or(Value::Null);
    let text = v.to_string();
    let artifacts = d.0.join("home/artifacts");
    let pngs: Vec<PathBuf> = std::fs::read_dir(&artifacts)
        .unwrap_or_else(|e| panic!("no artifacts folder after {text}: {e}"))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(pngs.len(), 1, "one artifact for {text}: {pngs:?}");
    let bytes = std::fs::read(&pngs[0]).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 1000,
        "a PNG chart, {} bytes",
        bytes.len()
    );
    let name = pngs[0].file_name().unwrap().to_string_lossy().into_owned();
    let id = name.split('.').next().unwrap();
    assert!(
        text.contains(id),
        "the result names the artifact {id}: {text}"
    );

    assert_eq!(terminate(peer), Some(0), "covo-peer exits 0 on SIGTERM");
}
