//! `covo run`: the daemon against a real mosquitto and the scripted LLM server.

use covo_tests::broker::Mosquitto;
use covo_tests::llm_server::{Reply, ScriptedLlm};
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{Client, Event, MqttOptions};
use serde_json::{json, Value};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A plain MQTT client: every message on `filter` as (topic, payload, retain).
struct Raw {
    client: Client,
    rx: mpsc::Receiver<(String, Vec<u8>, bool)>,
}

fn raw(port: u16, filter: &str) -> Raw {
    let o = MqttOptions::new(format!("raw-{}", fastrand::u32(..)), "127.0.0.1", port);
    let (client, mut conn) = Client::new(o, 16);
    client.subscribe(filter, QoS::AtLeastOnce).unwrap();
    let (tx, rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for ev in conn.iter() {
            match ev {
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    let _ = ready_tx.send(());
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let t = String::from_utf8_lossy(&p.topic).into_owned();
                    if tx.send((t, p.payload.to_vec(), p.retain)).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("suback");
    Raw { client, rx }
}

impl Raw {
    /// The first message on `topic` (JSON) before `max`.
    fn next_on(&self, topic: &str, max: Duration) -> Option<(Value, bool)> {
        let end = Instant::now() + max;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let (t, p, r) = self.rx.recv_timeout(left).ok()?;
            if t == topic {
                return Some((serde_json::from_slice(&p).unwrap_or(Value::Null), r));
            }
        }
    }
}

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
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("COVO_LLM_BASE_URL")
        .env_remove("COVO_LLM_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY");
    c
}

/// Sends SIGTERM and waits: the daemon must exit 0 on its own.
fn terminate(mut child: Child) -> (Option<i32>, String) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status.code(), err)
}

#[test]
fn chat_over_mqtt_answers_with_tool_events_and_telemetry_is_retained() {
    let broker = Mosquitto::start();
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![(
            "memory_store",
            r#"{"text":"the basil is on the left shelf"}"#,
        )]),
        Reply::text("Noted: basil on the left shelf."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let obs = raw(broker.port(), "covo/gw1/#");
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n[run]\ntelemetry_secs = 1\n",
        broker.url()
    );
    let child = covo(dir.path(), &cfg)
        .args(["run", "--profile", "full"])
        .env("COVO_LLM_BASE_URL", srv.openai_base_url())
        .env("COVO_LLM_MODEL", "scripted")
        .env("OPENAI_API_KEY", "sk-test")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (birth, _) = status
        .next_on("covo/gateways/gw1/status", Duration::from_secs(10))
        .expect("birth");
    assert_eq!(birth["status"], "online", "{birth}");

    // Telemetry for the sim's climate sensor, retained.
    let (t, retained) = obs
        .next_on("covo/gw1/sensors/climate", Duration::from_secs(10))
        .expect("telemetry");
    assert!(!retained, "live delivery");
    assert!(t["temperature"]["value"].is_number(), "{t}");
    assert!(t["temperature"]["unit"].is_string(), "{t}");
    assert!(t["at"].is_string(), "{t}");
    let late = raw(broker.port(), "covo/gw1/sensors/climate");
    let (t2, retained) = late
        .next_on("covo/gw1/sensors/climate", Duration::from_secs(5))
        .expect("retained telemetry");
    assert!(retained, "a late subscriber gets the retained value");
    assert!(t2["temperature"]["value"].is_number());

    // Chat: wait until the daemon has subscribed (its birth is out), then ask.
    std::thread::sleep(Duration::from_millis(300));
    obs.client
        .publish(
            "covo/gw1/chat/in",
            QoS::AtLeastOnce,
            false,
            json!({"text": "remember: basil on the left shelf", "session": "s1"}).to_string(),
        )
        .unwrap();
    let (call, _) = obs
        .next_on("covo/gw1/chat/events", Duration::from_secs(10))
        .expect("tool call event");
    assert_eq!(call["session"], "s1");
    assert_eq!(call["tool"], "memory_store");
    assert_eq!(call["args"]["text"], "the basil is on the left shelf");
    let (done, _) = obs
        .next_on("covo/gw1/chat/events", Duration::from_secs(10))
        .expect("tool result event");
    assert_eq!(done["tool"], "memory_store");
    assert_eq!(done["ok"], true, "{done}");
    assert!(done.get("result").is_some());
    let (out, _) = obs
        .next_on("covo/gw1/chat/out", Duration::from_secs(10))
        .expect("answer");
    assert_eq!(out["session"], "s1");
    assert_eq!(out["text"], "Noted: basil on the left shelf.");
    assert!(out["usage"].is_object(), "{out}");
    assert_eq!(srv.requests().len(), 2);

    // A clean stop publishes `offline` itself.
    let (code, err) = terminate(child);
    assert_eq!(code, Some(0), "stderr: {err}");
    let (gone, _) = status
        .next_on("covo/gateways/gw1/status", Duration::from_secs(5))
        .expect("offline");
    assert_eq!(gone["status"], "offline", "{gone}");
}

#[test]
fn without_mqtt_it_says_so_and_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let child = covo(dir.path(), "")
        .arg("run")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let mut child = child;
    assert!(
        child.try_wait().unwrap().is_none(),
        "still running without a broker"
    );
    let (code, err) = terminate(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("MQTT is off"), "{err}");
}
