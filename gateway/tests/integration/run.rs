//! `covo run`: the daemon against a real mosquitto and the scripted LLM server.

use covo_tests::bins::terminate;
use covo_tests::broker::{raw, Mosquitto};
use covo_tests::llm_server::{Reply, ScriptedLlm};
use covo_tests::rumqttc::v5::mqttbytes::QoS;
use serde_json::{json, Value};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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

/// Whether no chat answer has been published yet (nothing on `chat/out` right now).
fn out_pending(obs: &covo_tests::broker::Raw) -> bool {
    obs.next_on("covo/gw1/chat/out", Duration::from_millis(10))
        .is_none()
}

#[test]
fn chat_over_mqtt_answers_with_tool_events_and_telemetry_is_retained() {
    let broker = Mosquitto::start();
    let srv = ScriptedLlm::start(vec![
        // A slow model: the daemon must go on with its other work meanwhile.
        Reply::delay(
            Duration::from_secs(4),
            Reply::tool_calls(vec![(
                "memory_store",
                r#"{"text":"the basil is on the left shelf"}"#,
            )]),
        ),
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
    // While the model thinks, the daemon goes on serving: a swarm call is answered at once.
    let other = raw(broker.port(), "covo/tester/swarm/res/gw1");
    std::thread::sleep(Duration::from_millis(300));
    let props = covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties {
        response_topic: Some("covo/tester/swarm/res/gw1".into()),
        correlation_data: Some("during-turn".into()),
        ..Default::default()
    };
    let t0 = Instant::now();
    other
        .client
        .publish_with_properties(
            "covo/gw1/swarm/req/tester",
            QoS::AtLeastOnce,
            false,
            json!({"call_id": "during-turn", "tool": "board_info", "args": {},
                   "gateway": "tester", "deadline_ms": 5000})
            .to_string(),
            props,
        )
        .unwrap();
    let (answer, _) = other
        .next_on("covo/tester/swarm/res/gw1", Duration::from_millis(2500))
        .expect("a swarm call answered while a chat turn waits for the model");
    assert_eq!(answer["ok"], true, "{answer}");
    assert!(t0.elapsed() < Duration::from_millis(2500));
    assert!(
        srv.requests().len() == 1 && out_pending(&obs),
        "the chat turn is still waiting for the model"
    );
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

    // The daemon (re-)announces itself with the tools it serves to the swarm.
    let mut latest = birth.clone();
    while latest["tools"].as_array().is_none_or(|t| t.is_empty()) {
        latest = status
            .next_on("covo/gateways/gw1/status", Duration::from_secs(5))
            .expect("a birth listing the served tools")
            .0;
        assert_eq!(latest["status"], "online", "{latest}");
    }
    assert!(
        latest["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "sensor_read"),
        "{latest}"
    );

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

mod tools {
    use super::*;
    use covo::config::{Config, MqttConfig};
    use covo::error::{CallError, ToolError};
    use covo::exec::Session;
    use covo::runtime::{Runtime, Via};
    use covo::store::Store;

    pub fn runtime(broker: &Mosquitto, allow: &[&str]) -> Runtime {
        let config = Config {
            mqtt: Some(MqttConfig {
                url: Some(broker.url()),
                gateway_id: Some("gw1".into()),
                publish_allow: allow.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let rt = Runtime::new(covo::tools::options(config))
            .unwrap()
            .with_store(Store::in_memory().unwrap());
        assert!(rt.peer_link().unwrap().wait_synced(Duration::from_secs(5)));
        rt
    }

    pub fn call(rt: &Runtime, tool: &str, args: Value) -> Result<Value, CallError> {
        rt.call(&Session::new("t", "test"), Via::Direct, tool, args)
    }

    pub fn refused_rule(r: Result<Value, CallError>) -> String {
        match r {
            Err(CallError::Respond(ToolError::PolicyRefused { rule, .. })) => rule,
            other => panic!("expected a policy refusal, got {other:?}"),
        }
    }

    #[test]
    fn mqtt_publish_stays_within_the_allowlist_on_every_path() {
        let broker = Mosquitto::start();
        let obs = raw(broker.port(), "#");
        let rt = runtime(&broker, &["greenhouse/#", "lab/+/cmd"]);
        let v = call(
            &rt,
            "mqtt_publish",
            json!({"topic": "greenhouse/vent", "payload": {"open": true}, "qos": 1}),
        )
        .unwrap();
        assert_eq!(v["queued"], true);
        let (got, _) = obs
            .next_on("greenhouse/vent", Duration::from_secs(5))
            .expect("published");
        assert_eq!(got, json!({"open": true}));
        call(
            &rt,
            "mqtt_publish",
            json!({"topic": "lab/x/cmd", "payload": "go"}),
        )
        .unwrap();
        assert!(obs.next_on("lab/x/cmd", Duration::from_secs(5)).is_some());

        for topic in ["garage/door", "lab/x/y/cmd", "greenhousex"] {
            let rule = refused_rule(call(
                &rt,
                "mqtt_publish",
                json!({"topic": topic, "payload": "open"}),
            ));
            assert_eq!(rule, "mqtt.publish_allow");
            let rule = refused_rule(call(
                &rt,
                "tool_call",
                json!({"name": "mqtt_publish", "arguments": {"topic": topic, "payload": "open"}}),
            ));
            assert_eq!(rule, "mqtt.publish_allow", "through tool_call");
        }
        assert!(
            obs.next_on("garage/door", Duration::from_millis(500))
                .is_none(),
            "nothing refused reached the broker"
        );
    }

    #[test]
    fn wait_message_and_retained_get_see_what_a_raw_client_publishes() {
        let broker = Mosquitto::start();
        let pubber = raw(broker.port(), "unused/none");
        let rt = runtime(&broker, &[]);

        // Nothing retained yet.
        let v = call(&rt, "mqtt_retained_get", json!({"topic": "lab/temp"})).unwrap();
        assert_eq!(v["retained"], false, "{v}");
        pubber
            .client
            .publish("lab/temp", QoS::AtLeastOnce, true, r#"{"c":21.5}"#)
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let v = call(&rt, "mqtt_retained_get", json!({"topic": "lab/temp"})).unwrap();
        assert_eq!(v["retained"], true, "{v}");
        assert_eq!(v["payload"], json!({"c": 21.5}));

        // An old retained message on the filter is not what a wait is for.
        pubber
            .client
            .publish("lab/door/0", QoS::AtLeastOnce, true, "stale")
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let c = pubber.client.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            c.publish("lab/door/1", QoS::AtLeastOnce, false, "opened")
                .unwrap();
            c.publish("lab/door/2", QoS::AtLeastOnce, false, "closed")
                .unwrap();
        });
        let v = call(
            &rt,
            "mqtt_wait_message",
            json!({"topic": "lab/door/+", "count": 2, "timeout_ms": 5000}),
        )
        .unwrap();
        t.join().unwrap();
        assert_eq!(v["timed_out"], false, "{v}");
        assert_eq!(v["messages"][0]["topic"], "lab/door/1");
        assert_eq!(v["messages"][0]["payload"], "opened");
        assert_eq!(v["messages"][1]["payload"], "closed");

        let v = call(
            &rt,
            "mqtt_wait_message",
            json!({"topic": "lab/quiet", "timeout_ms": 200}),
        )
        .unwrap();
        assert_eq!(v["timed_out"], true);
        assert_eq!(v["messages"], json!([]));
    }

    #[test]
    fn without_mqtt_the_mqtt_tools_are_unavailable() {
        let rt = Runtime::new(covo::tools::options(Config::default())).unwrap();
        for t in [
            "mqtt_publish",
            "mqtt_wait_message",
            "mqtt_retained_get",
            "ha_announce",
        ] {
            let av = rt.availability(rt.lookup(t).unwrap());
            assert!(!av.available, "{t}");
            assert_eq!(
                av.reason.as_deref(),
                Some("no MQTT broker configured"),
                "{t}"
            );
        }
    }
}

#[test]
fn notify_goes_to_the_mqtt_topic_and_the_webhook_and_channel_list_reports_them() {
    use covo::config::{Config, MqttConfig, NotifyConfig};
    use covo::runtime::Runtime;
    use std::io::Write;
    use std::net::TcpListener;
    let broker = Mosquitto::start();
    let obs = raw(broker.port(), "covo/gw1/notify");
    // A one-request HTTP server that records the body.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", l.local_addr().unwrap());
    let (btx, brx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let len = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if body.len() >= len {
                    let _ = btx.send((head.to_string(), body.to_string()));
                    break;
                }
            }
        }
        let _ = s.write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
    });
    let config = Config {
        mqtt: Some(MqttConfig {
            url: Some(broker.url()),
            gateway_id: Some("gw1".into()),
            ..Default::default()
        }),
        notify: NotifyConfig { webhook: Some(url) },
        ..Default::default()
    };
    let rt = Runtime::new(covo::tools::options(config))
        .unwrap()
        .with_store(covo::store::Store::in_memory().unwrap());
    let v = tools::call(
        &rt,
        "notify",
        json!({"message": "frost tonight", "priority": "high", "title": "greenhouse"}),
    )
    .unwrap();
    assert_eq!(v["sent"].as_array().unwrap().len(), 2, "{v}");
    let (n, _) = obs
        .next_on("covo/gw1/notify", Duration::from_secs(5))
        .expect("notify");
    assert_eq!(n["message"], "frost tonight");
    assert_eq!(n["priority"], "high");
    assert_eq!(n["title"], "greenhouse");
    let (head, body) = brx.recv_timeout(Duration::from_secs(5)).expect("webhook");
    assert!(head.starts_with("POST /hook"), "{head}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["priority"], "high");

    let v = tools::call(&rt, "channel_list", json!({})).unwrap();
    let chans = v["channels"].as_array().unwrap();
    let find = |c: &str| chans.iter().find(|x| x["channel"] == c).cloned().unwrap();
    assert_eq!(find("mqtt")["connected"], true, "{v}");
    assert_eq!(find("webhook")["configured"], true);
    assert!(find("cli").get("connected").is_some());

    let bare = Runtime::new(covo::tools::options(Config::default())).unwrap();
    let av = bare.availability(bare.lookup("notify").unwrap());
    assert_eq!(av.reason.as_deref(), Some("no MQTT broker configured"));
}

/// Checks a discovery payload against the documented MQTT discovery schema: required keys and
/// their types, and the shared device/origin/availability blocks.
#[cfg(feature = "hal")]
fn check_discovery(topic: &str, v: &Value) {
    let s = |k: &str| {
        assert!(v[k].is_string(), "{topic}: '{k}' must be a string: {v}");
        v[k].as_str().unwrap().to_string()
    };
    let parts: Vec<&str> = topic.split('/').collect();
    assert_eq!(parts.len(), 5, "{topic}");
    assert_eq!(parts[0], "homeassistant");
    assert_eq!(parts[4], "config");
    for id in [parts[2], parts[3]] {
        assert!(
            id.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{topic}: ids are [a-zA-Z0-9_-]"
        );
    }
    s("name");
    s("unique_id");
    assert_eq!(s("availability_topic"), "covo/gateways/gw1/status");
    assert_eq!(s("availability_template"), "{{ value_json.status }}");
    assert_eq!(s("payload_available"), "online");
    assert_eq!(s("payload_not_available"), "offline");
    let d = &v["device"];
    assert!(d.is_object(), "{topic}: device");
    assert!(
        d["identifiers"]
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string)),
        "{topic}: device.identifiers is a non-empty list of strings"
    );
    for k in ["name", "model", "manufacturer"] {
        assert!(d[k].is_string(), "{topic}: device.{k}");
    }
    assert_eq!(v["origin"]["name"], "covo");
    assert!(v["origin"]["sw_version"].is_string());
    match parts[1] {
        "sensor" => {
            assert!(s("state_topic").starts_with("covo/gw1/sensors/"));
            assert!(s("value_template").starts_with("{{ value_json."));
            s("unit_of_measurement");
            assert_eq!(s("state_class"), "measurement");
        }
        "switch" => {
            assert!(s("command_topic").ends_with("/set"));
            s("state_topic");
            assert_eq!(s("payload_on"), "ON");
            assert_eq!(s("payload_off"), "OFF");
        }
        other => panic!("unexpected component {other}"),
    }
}

#[cfg(feature = "hal")]
#[test]
fn home_assistant_discovery_reannounce_and_switch_commands_through_the_policy() {
    use covo::config::{Config, MqttConfig};
    use covo::hardware::Board;
    use covo::runtime::Runtime;
    use covo_board::board::BoardDef;
    use covo_hal_tools::hw::Hardware;
    use covo_hal_tools::sim::SimBoard;
    use std::collections::HashMap;
    use std::sync::Arc;

    let broker = Mosquitto::start();
    let ha = raw(broker.port(), "homeassistant/+/+/+/config");
    let states = raw(broker.port(), "covo/gw1/ha/#");
    let sim = SimBoard::new();
    let mut opts = covo::tools::options(Config {
        mqtt: Some(MqttConfig {
            url: Some(broker.url()),
            gateway_id: Some("gw1".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    opts.board = Some(Arc::new(Board::with_hardware(Hardware::sim_with(
        BoardDef::sim(),
        sim.clone(),
    ))));
    let rt = Arc::new(
        Runtime::new(opts)
            .unwrap()
            .with_store(covo::store::Store::in_memory().unwrap()),
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let (rt2, stop2) = (rt.clone(), stop.clone());
    let daemon = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(covo::daemon::serve(rt2, None, stop2))
            .unwrap();
    });

    // The discovery configs that arrive until `done` holds of them and then none more for
    // 2 s, or for at most 30 s (a loaded machine is slow, not wrong).
    let collect = |done: &dyn Fn(&HashMap<String, Value>) -> bool| {
        let mut got: HashMap<String, Value> = HashMap::new();
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let wait = if done(&got) {
                left.min(Duration::from_secs(2))
            } else {
                left
            };
            match ha.rx.recv_timeout(wait) {
                Ok(m) => {
                    got.insert(m.topic, serde_json::from_slice(&m.payload).unwrap());
                }
                Err(_) => return got,
            }
        }
    };
    let temp = "homeassistant/sensor/covo_gw1/climate_temperature/config";
    let relay = "homeassistant/switch/covo_gw1/relay/config";
    let hum_key = "homeassistant/sensor/covo_gw1/climate_humidity/config";
    let got =
        collect(&|g| g.contains_key(temp) && g.contains_key(relay) && g.contains_key(hum_key));
    assert!(got.contains_key(temp), "{:?}", got.keys());
    assert!(got.contains_key(relay), "{:?}", got.keys());
    for (t, v) in &got {
        check_discovery(t, v);
    }
    let tv = &got[temp];
    assert_eq!(tv["device_class"], "temperature");
    assert_eq!(tv["unit_of_measurement"], "°C");
    assert_eq!(tv["state_topic"], "covo/gw1/sensors/climate");
    assert_eq!(tv["value_template"], "{{ value_json.temperature.value }}");
    let hum = &got[hum_key];
    assert_eq!(hum["device_class"], "humidity");
    assert_eq!(hum["unit_of_measurement"], "%");
    assert_eq!(got[relay]["command_topic"], "covo/gw1/ha/relay/set");
    // Unique ids are unique.
    let mut ids: Vec<&str> = got
        .values()
        .map(|v| v["unique_id"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), got.len());

    // Home Assistant restarts: everything is announced again.
    states
        .client
        .publish("homeassistant/status", QoS::AtLeastOnce, false, "online")
        .unwrap();
    let again = collect(&|g| got.keys().all(|k| g.contains_key(k)));
    assert_eq!(
        again.keys().collect::<std::collections::BTreeSet<_>>(),
        got.keys().collect::<std::collections::BTreeSet<_>>(),
        "re-announced on homeassistant/status = online"
    );

    // At start every switch's state was published, retained, as read from the board.
    // Everything on covo/gw1/ha/# until `want` (with `payload`, when given) arrives.
    let drain_until = |want: &str, payload: Option<&[u8]>| -> Vec<(String, Vec<u8>)> {
        let mut seen = Vec::new();
        let end = Instant::now() + Duration::from_secs(30);
        while let Ok(m) = states
            .rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            let done = m.topic == want && payload.is_none_or(|p| p == m.payload.as_slice());
            seen.push((m.topic, m.payload));
            if done {
                break;
            }
        }
        seen
    };
    let drain = |want: &str| drain_until(want, None);
    let seen = drain("covo/gw1/ha/relay/state");
    assert_eq!(
        seen.last().map(|(t, p)| (t.as_str(), p.as_slice())),
        Some(("covo/gw1/ha/relay/state", &b"OFF"[..])),
        "{seen:?}"
    );

    // The relay switch drives the sim relay (GPIO17) through gpio_write.
    assert!(!sim.level(17));
    states
        .client
        .publish("covo/gw1/ha/relay/set", QoS::AtLeastOnce, false, "ON")
        .unwrap();
    let seen = drain_until("covo/gw1/ha/relay/state", Some(b"ON"));
    assert_eq!(
        seen.last().map(|(t, p)| (t.as_str(), p.as_slice())),
        Some(("covo/gw1/ha/relay/state", &b"ON"[..])),
        "{seen:?}"
    );
    assert!(sim.level(17), "the relay is on");

    // The button (GPIO27) is an input: the pipeline's gpio.outputs policy refuses the write,
    // and the refusal is published on the button's error topic.
    states
        .client
        .publish("covo/gw1/ha/button/set", QoS::AtLeastOnce, false, "ON")
        .unwrap();
    let seen = drain("covo/gw1/ha/button/error");
    let (topic, payload) = seen.last().unwrap();
    assert_eq!(topic, "covo/gw1/ha/button/error", "{seen:?}");
    let e: Value = serde_json::from_slice(payload).unwrap();
    assert_eq!(e["device"], "button");
    assert_eq!(e["command"], "ON");
    assert_eq!(e["error"]["kind"], "policy_refused", "{e}");
    assert_eq!(e["error"]["rule"], "gpio.outputs", "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("GPIO27"),
        "{e}"
    );
    assert!(
        !seen.iter().any(|(t, _)| t == "covo/gw1/ha/button/state"),
        "no state for a refused write: {seen:?}"
    );
    // A command that is neither ON nor OFF is refused the same way.
    states
        .client
        .publish("covo/gw1/ha/relay/set", QoS::AtLeastOnce, false, "TOGGLE")
        .unwrap();
    let seen = drain("covo/gw1/ha/relay/error");
    let (topic, payload) = seen.last().unwrap();
    assert_eq!(topic, "covo/gw1/ha/relay/error", "{seen:?}");
    let e: Value = serde_json::from_slice(payload).unwrap();
    assert_eq!(e["error"]["kind"], "invalid_arguments", "{e}");
    assert!(sim.level(17), "still on");
    // (GPIO27 reads high: the sim's button has a pull-up; it was never driven.)
    assert!(
        sim.output_log(27).is_empty(),
        "the refused pin was never driven"
    );
    assert_eq!(
        sim.output_log(17).len(),
        1,
        "only the allowed write reached a pin"
    );

    // The ha_announce tool publishes one device's configs.
    let v = rt
        .call(
            &covo::exec::Session::new("t", "test"),
            covo::runtime::Via::Direct,
            "ha_announce",
            json!({"device": "climate", "name": "Greenhouse"}),
        )
        .unwrap();
    assert_eq!(v["component"], "sensor");
    let announced = collect(&|g| g.contains_key(temp));
    assert!(announced.contains_key(temp), "{v}");
    assert_eq!(announced[temp]["name"], "Greenhouse temperature");
    check_discovery(temp, &announced[temp]);
    let e = rt.call(
        &covo::exec::Session::new("t", "test"),
        covo::runtime::Via::Direct,
        "ha_announce",
        json!({"device": "relay", "component": "sensor"}),
    );
    assert!(e.is_err(), "a relay is a switch");

    // The broker restarts and loses every retained config (no persistence): once the link is
    // back, the daemon announces again without waiting for Home Assistant.
    let mut broker = broker;
    broker.restart();
    let ha = raw(broker.port(), "homeassistant/+/+/+/config");
    let end = Instant::now() + Duration::from_secs(15);
    let mut back: HashMap<String, Value> = HashMap::new();
    while !back.contains_key(relay) && Instant::now() < end {
        if let Ok(m) = ha.rx.recv_timeout(Duration::from_millis(200)) {
            back.insert(m.topic, serde_json::from_slice(&m.payload).unwrap());
        }
    }
    assert!(
        back.contains_key(relay),
        "re-announced after the broker restart: {:?}",
        back.keys()
    );
    assert!(back.contains_key(temp), "{:?}", back.keys());

    stop.cancel();
    daemon.join().unwrap();
}

/// Polls `swarm_members` on `rt` until every id in `ids` is online with tools.
fn wait_for_members(rt: &covo::runtime::Runtime, s: &covo::exec::Session, ids: &[&str]) -> Value {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let v = rt
            .call(s, covo::runtime::Via::Direct, "swarm_members", json!({}))
            .unwrap();
        let ready = ids.iter().all(|id| {
            v["members"].as_array().unwrap().iter().any(|m| {
                m["gateway"] == *id
                    && m["online"] == true
                    && !m["tools"].as_array().unwrap().is_empty()
            })
        });
        if ready {
            return v;
        }
        assert!(Instant::now() < end, "members never came online: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn audit_count(home: &std::path::Path, via: &str, tool: &str) -> i64 {
    let store = covo::store::Store::open_in(home).unwrap();
    let conn = store.conn();
    conn.query_row(
        "SELECT count(*) FROM audit WHERE via = ?1 AND tool = ?2",
        [via, tool],
        |r| r.get(0),
    )
    .unwrap()
}

/// `covo run` as gateway `id` on the sim board, `extra` appended to its config.
fn run_gateway(broker: &Mosquitto, dir: &std::path::Path, id: &str, extra: &str) -> Child {
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"{id}\"\n[run]\ntelemetry_secs = 3600\n{extra}",
        broker.url()
    );
    covo(dir, &cfg)
        .args(["run", "--profile", "full"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn swarm_calls_run_through_the_target_gateways_pipeline_and_policy() {
    let broker = Mosquitto::start();
    // Two gateways run `covo run` on the sim board. gw-b exposes a write tool (gpio_write),
    // which its board policy still limits to the relay pin.
    let dir_b = tempfile::tempdir().unwrap();
    let dir_c = tempfile::tempdir().unwrap();
    let b = run_gateway(
        &broker,
        dir_b.path(),
        "gw-b",
        "[swarm]\nexpose = [\"sensor_read\", \"board_info\", \"gpio_write\"]\n",
    );
    let c = run_gateway(&broker, dir_c.path(), "gw-c", "");

    // The caller: an in-process gateway on the same broker.
    let mut config = covo::config::Config::default();
    config.mqtt = Some(covo::config::MqttConfig {
        url: Some(broker.url()),
        gateway_id: Some("gw-a".into()),
        ..Default::default()
    });
    let rt = covo::runtime::Runtime::new(covo::tools::options(config))
        .unwrap()
        .with_store(covo::store::Store::in_memory().unwrap());
    let s = covo::exec::Session::new("t", "test");
    let members = wait_for_members(&rt, &s, &["gw-b", "gw-c"]);
    assert_eq!(members["self"], "gw-a");
    let tools_of = |id: &str| -> Vec<String> {
        members["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["gateway"] == id)
            .unwrap()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        tools_of("gw-b"),
        ["board_info", "gpio_write", "sensor_read"]
    );
    // By default a gateway serves its read tools, and never the swarm tools or tool_call.
    let c_tools = tools_of("gw-c");
    assert!(c_tools.contains(&"sensor_read".to_string()), "{c_tools:?}");
    assert!(!c_tools.contains(&"gpio_write".to_string()));
    assert!(!c_tools
        .iter()
        .any(|t| t.starts_with("swarm_") || t == "tool_call"));
    // ...and by default only its hardware: not its files, memories or conversations.
    for private in ["fs_read", "memory_recall", "conversation_search"] {
        assert!(
            !c_tools.iter().any(|t| t == private),
            "{private} in {c_tools:?}"
        );
    }
    assert!(c_tools.iter().any(|t| t == "i2c_scan"), "{c_tools:?}");

    // A read on gw-b returns gw-b's sensor reading.
    let r = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_call",
            json!({"gateway": "gw-b", "tool": "sensor_read", "arguments": {"sensor": "climate"}}),
        )
        .unwrap();
    assert_eq!(r["gateway"], "gw-b");
    let readings = r["result"]["readings"].as_array().expect("readings");
    let t = readings
        .iter()
        .find(|q| q["quantity"] == "temperature")
        .unwrap();
    assert!((0.0..50.0).contains(&t["value"].as_f64().unwrap()), "{r}");

    // gw-b's board policy applies to calls from the swarm: GPIO5 is not an output there...
    let err = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_call",
            json!({"gateway": "gw-b", "tool": "gpio_write", "arguments": {"pin": 5, "level": 1}}),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("gpio.outputs"), "{err}");
    // ...and the relay (GPIO17) is.
    rt.call(
        &s,
        covo::runtime::Via::Direct,
        "swarm_call",
        json!({"gateway": "gw-b", "tool": "gpio_write", "arguments": {"pin": 17, "level": 1}}),
    )
    .unwrap();
    // gw-b's schema validation applies too.
    let err = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_call",
            json!({"gateway": "gw-b", "tool": "sensor_read", "arguments": {"sensor": 3}}),
        )
        .unwrap_err();
    // The target's structured error arrives whole: kind, tool and the argument's pointer.
    match err {
        covo::error::CallError::Respond(e) => {
            let j = e.to_json();
            assert_eq!(j["error"]["kind"], "invalid_arguments", "{j}");
            assert_eq!(j["error"]["tool"], "sensor_read", "{j}");
            assert_eq!(j["error"]["problems"][0]["path"], "/sensor", "{j}");
        }
        other => panic!("{other:?}"),
    }

    // The caller refuses tools a member does not serve, naming what it does serve...
    let err = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_call",
            json!({"gateway": "gw-c", "tool": "gpio_write", "arguments": {"pin": 17, "level": 0}}),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not serve"), "{err}");
    // ...and a caller that skips that check is refused by the target's own policy.
    let link = rt.peer_link().unwrap();
    let err = link
        .swarm_call(
            "gw-c",
            "gpio_write",
            json!({"pin": 17, "level": 0}),
            Duration::from_secs(5),
            false,
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("swarm.expose"), "{err}");
    let err = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_call",
            json!({"gateway": "gw-z", "tool": "board_info"}),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("gw-b") && err.contains("gw-c"),
        "lists the members: {err}"
    );

    // A broadcast gathers both answers before the deadline.
    let r = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_broadcast",
            json!({"tool": "board_info", "timeout_ms": 5000}),
        )
        .unwrap();
    assert_eq!(r["asked"], 2, "{r}");
    assert_eq!(r["answered"], 2, "{r}");
    assert_eq!(r["results"]["gw-b"]["ok"], true, "{r}");
    assert_eq!(r["results"]["gw-c"]["ok"], true, "{r}");
    let r = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_broadcast",
            json!({"tool": "gpio_write", "arguments": {"pin": 17, "level": 0}}),
        )
        .unwrap();
    assert_eq!(r["asked"], 1, "{r}");
    assert_eq!(r["not_serving"], json!(["gw-c"]), "{r}");

    // At most 8 swarm calls run at once on a gateway; more are answered `busy` at once.
    let answers: Vec<String> = std::thread::scope(|sc| {
        // Each waits on a line of its own: covo holds one request per line, so two waits on
        // one line would queue on it rather than run side by side.
        let hs: Vec<_> = (18..28u32)
            .map(|pin| {
                sc.spawn(move || {
                    match link.swarm_call(
                        "gw-c",
                        "gpio_wait_edge",
                        json!({"pin": pin, "edge": "rising", "timeout_ms": 1500}),
                        Duration::from_secs(10),
                        false,
                    ) {
                        Ok(_) => "ran".to_string(),
                        Err(e) => e.to_string(),
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let busy = answers.iter().filter(|a| a.contains("busy")).count();
    assert_eq!(busy, 2, "{answers:?}");
    assert_eq!(
        answers.iter().filter(|a| *a == "ran").count(),
        8,
        "{answers:?}"
    );

    // A QoS 1 redelivery (the same call id twice) runs once and is answered twice.
    let obs = raw(broker.port(), "covo/gw-x/swarm/res/gw-b");
    let req = json!({"call_id": "dup-1", "tool": "gpio_write", "args": {"pin": 17, "level": 1},
                     "gateway": "gw-x", "deadline_ms": 5000});
    let before = audit_count(&dir_b.path().join("home"), "remote", "gpio_write");
    for _ in 0..2 {
        let props = covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties {
            response_topic: Some("covo/gw-x/swarm/res/gw-b".into()),
            correlation_data: Some("dup-1".into()),
            ..Default::default()
        };
        obs.client
            .publish_with_properties(
                "covo/gw-b/swarm/req/gw-x",
                QoS::AtLeastOnce,
                false,
                req.to_string(),
                props,
            )
            .unwrap();
        let (resp, _) = obs
            .next_on("covo/gw-x/swarm/res/gw-b", Duration::from_secs(5))
            .expect("answer");
        assert_eq!(resp["call_id"], "dup-1");
        assert_eq!(resp["ok"], true, "{resp}");
    }
    let after = audit_count(&dir_b.path().join("home"), "remote", "gpio_write");
    assert_eq!(after - before, 1, "the redelivered call ran once");

    // gw-b goes away: its Will-less clean stop says offline, and the caller sees it.
    let (code, err) = terminate(b);
    assert_eq!(code, Some(0), "stderr: {err}");
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let v = rt
            .call(
                &s,
                covo::runtime::Via::Direct,
                "swarm_members",
                json!({"online_only": true}),
            )
            .unwrap();
        if v["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["gateway"] != "gw-b")
        {
            break;
        }
        assert!(Instant::now() < end, "gw-b still listed online: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let err = rt
        .call(
            &s,
            covo::runtime::Via::Direct,
            "swarm_call",
            json!({"gateway": "gw-b", "tool": "board_info"}),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("offline"), "{err}");
    let (code, err) = terminate(c);
    assert_eq!(code, Some(0), "stderr: {err}");
}

/// The daemon started from a terminal never prompts on its stdin: a destructive call asked for
/// over MQTT is declined with an error that says how to allow it, and the turn goes on.
#[test]
fn a_daemon_started_from_a_terminal_declines_destructive_calls_without_prompting() {
    use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
    let broker = Mosquitto::start();
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("fs_delete", r#"{"path":"notes.txt"}"#)]),
        Reply::text("I could not delete it."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("home/workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "keep me").unwrap();
    let obs = raw(broker.port(), "covo/gw1/#");
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    // A real terminal on stdin (a pseudo-terminal pair; nobody types into it).
    let (_master, slave) = serialport::TTYPort::pair().expect("a pty pair");
    // SAFETY: `into_raw_fd` hands over sole ownership of an open descriptor.
    let stdin = unsafe { OwnedFd::from_raw_fd(slave.into_raw_fd()) };
    let cfg = format!("[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n", broker.url());
    let mut child = KillOnDrop(Some(
        covo(dir.path(), &cfg)
            .args(["run", "--profile", "full"])
            .env("COVO_LLM_BASE_URL", srv.openai_base_url())
            .env("COVO_LLM_MODEL", "scripted")
            .env("OPENAI_API_KEY", "sk-test")
            .stdin(Stdio::from(stdin))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    status
        .next_on("covo/gateways/gw1/status", Duration::from_secs(10))
        .expect("birth");
    std::thread::sleep(Duration::from_millis(300));
    obs.client
        .publish(
            "covo/gw1/chat/in",
            QoS::AtLeastOnce,
            false,
            json!({"text": "delete notes.txt", "session": "s1"}).to_string(),
        )
        .unwrap();
    let (out, _) = obs
        .next_on("covo/gw1/chat/out", Duration::from_secs(15))
        .expect("an answer: the daemon must not wait for a terminal");
    assert_eq!(out["text"], "I could not delete it.");
    // The model got a structured refusal that says how to allow it.
    let second = &srv.requests()[1].raw_body;
    assert!(second.contains("approval_denied"), "{second}");
    assert!(second.contains("[run] approve"), "{second}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "keep me"
    );
    let (code, err) = terminate(child.0.take().unwrap());
    assert_eq!(code, Some(0), "stderr: {err}");
    assert!(!err.contains("[y/N]"), "the daemon prompted: {err}");
}

/// Kills the daemon if the test fails before stopping it (a daemon blocked on its stdin would
/// otherwise outlive the test and hold its pipes).
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_swarm_request_is_answered_only_on_its_callers_swarm_response_topic() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n[run]\ntelemetry_secs = 3600\n",
        broker.url()
    );
    let child = covo(dir.path(), &cfg)
        .args(["run", "--profile", "full"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    status
        .next_on("covo/gateways/gw1/status", Duration::from_secs(10))
        .expect("birth");
    let obs = raw(broker.port(), "#");
    // `sender` is the caller id in the request's topic (what a broker ACL vouches for),
    // `gateway` the one in its payload.
    let send = |call_id: &str,
                gateway: &str,
                sender: &str,
                response_topic: &str,
                payload: Option<&str>| {
        let props = covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties {
            response_topic: Some(response_topic.into()),
            correlation_data: Some(call_id.to_string().into()),
            ..Default::default()
        };
        let body = payload.map(str::to_string).unwrap_or_else(|| {
            json!({"call_id": call_id, "tool": "board_info", "args": {},
                   "gateway": gateway, "deadline_ms": 5000})
            .to_string()
        });
        let topic = match sender {
            "" => "covo/gw1/swarm/req".to_string(),
            s => format!("covo/gw1/swarm/req/{s}"),
        };
        obs.client
            .publish_with_properties(topic, QoS::AtLeastOnce, false, body, props)
            .unwrap();
    };
    let ours = "covo/tester/swarm/res/gw1";
    // The daemon's subscription is in place once a proper call is answered.
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        send("warm-up", "tester", "tester", ours, None);
        if let Some((a, _)) = obs.next_on(ours, Duration::from_millis(500)) {
            assert_eq!(a["ok"], true, "{a}");
            break;
        }
        assert!(Instant::now() < end, "no swarm answer");
    }
    while obs.rx.recv_timeout(Duration::from_millis(300)).is_ok() {}

    // Response topics that are not the calling gateway's swarm response topic for gw1:
    // another gateway's, another responder's, the caller's bare branch (the old layout), this
    // gateway's chat input, a peer branch, a topic outside the prefix, and one that a gateway
    // id with a slash would make.
    let foreign = [
        ("f1", "tester", "tester", "covo/other/swarm/res/gw1"),
        ("f1b", "tester", "tester", "covo/tester/swarm/res/gw2"),
        ("f1c", "tester", "tester", "covo/tester/swarm/res"),
        ("f2", "tester", "tester", "covo/gw1/chat/in"),
        ("f3", "tester", "tester", "covo/tester/peer/res"),
        ("f4", "tester", "tester", "elsewhere/relay/on"),
        ("f5", "a/b", "tester", "covo/a/b/swarm/res/gw1"),
        // Impostors: the payload names `other` on tester's topic, asking for other's answer
        // or for tester's; and a request on the old topic that names no sender at all.
        ("i1", "other", "tester", "covo/other/swarm/res/gw1"),
        ("i2", "other", "tester", "covo/tester/swarm/res/gw1"),
        ("i3", "other", "", "covo/other/swarm/res/gw1"),
    ];
    for (id, gw, sender, topic) in foreign {
        send(id, gw, sender, topic, None);
    }
    // A malformed request gets no `bad_request` on a foreign topic either.
    send("f6", "", "tester", "elsewhere/relay/on", Some("not json"));
    send("last", "tester", "tester", ours, None);
    let end = Instant::now() + Duration::from_secs(5);
    let mut answered = false;
    let refused = |m: &covo_tests::broker::Incoming| {
        foreign
            .iter()
            .any(|(_, _, _, t)| m.topic == *t && *t != ours)
    };
    while let Ok(m) = obs
        .rx
        .recv_timeout(end.saturating_duration_since(Instant::now()))
    {
        assert!(
            !refused(&m),
            "published on {}: {}",
            m.topic,
            String::from_utf8_lossy(&m.payload)
        );
        if m.topic == ours {
            let v: Value = serde_json::from_slice(&m.payload).unwrap();
            assert_eq!(v["call_id"], "last", "an impostor was answered: {v}");
            answered = true;
            // Anything refused was handled before `last`; give late publishes a moment.
            let late = Instant::now() + Duration::from_millis(500);
            while let Ok(m) = obs
                .rx
                .recv_timeout(late.saturating_duration_since(Instant::now()))
            {
                assert!(
                    !refused(&m) && m.topic != ours,
                    "late publish on {}",
                    m.topic
                );
            }
            break;
        }
    }
    assert!(answered, "the proper call was answered");
    let (code, err) = terminate(child);
    assert_eq!(code, Some(0), "stderr: {err}");
    assert!(
        err.contains("response topic") && err.contains("claims to come from 'other'"),
        "the refusals are logged: {err}"
    );
    assert_eq!(
        audit_count(&dir.path().join("home"), "remote", "board_info"),
        2,
        "only the two proper calls ran"
    );
}

#[test]
fn a_running_gateway_whose_status_is_overwritten_announces_itself_again() {
    // A Will of an earlier connection that fires late (a broker node that notices the old
    // socket only now), or one another client left on this topic (rmqtt does not check Wills
    // against its ACL), a cleared retained status, garbage: a gateway that is up says so again,
    // and a new subscriber is given "online".
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let topic = "covo/gateways/gw-w/status";
    let watch = raw(broker.port(), topic);
    let mut gw = KillOnDrop(Some(run_gateway(&broker, dir.path(), "gw-w", "")));
    let online_within = |secs: u64| {
        let end = Instant::now() + Duration::from_secs(secs);
        while let Some((v, _)) = watch.next_on(topic, end.saturating_duration_since(Instant::now()))
        {
            if v["status"] == "online" {
                return true;
            }
        }
        false
    };
    assert!(online_within(30), "gw-w never came online");
    // Its start-up births are over (2 s without one), so an "online" after the forged message
    // below is an answer to it.
    while watch.next_on(topic, Duration::from_secs(2)).is_some() {}
    for forged in [&br#"{"status":"offline"}"#[..], b"", b"not json"] {
        watch
            .client
            .publish(topic, QoS::AtLeastOnce, true, forged.to_vec())
            .unwrap();
        let (echo, _) = watch
            .next_on(topic, Duration::from_secs(5))
            .expect("the forged status itself");
        assert_ne!(echo["status"], "online", "{echo}");
        assert!(
            online_within(10),
            "after {:?} on its status topic, gw-w did not announce itself again",
            String::from_utf8_lossy(forged)
        );
        let fresh = raw(broker.port(), topic);
        let (v, retained) = fresh
            .next_on(topic, Duration::from_secs(5))
            .expect("a retained status");
        assert!(retained && v["status"] == "online", "{v}");
    }
    // Stopped, it stays offline: nothing announces it on the way out.
    let (code, err) = terminate(gw.0.take().unwrap());
    assert_eq!(code, Some(0), "{err}");
    std::thread::sleep(Duration::from_secs(1));
    let fresh = raw(broker.port(), topic);
    let (v, _) = fresh
        .next_on(topic, Duration::from_secs(5))
        .expect("a retained status");
    assert_eq!(v["status"], "offline", "{v}");
    assert!(
        err.contains("announcing again"),
        "the re-announcements are logged: {err}"
    );
}

/// `covo fleet --json` asked every 200 ms until `ready` holds of the view, at most `secs`
/// seconds (then the test fails with `what`); that view.
fn fleet_when(
    dir: &std::path::Path,
    cfg: &str,
    secs: u64,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let f = fleet_json(dir, cfg);
        if ready(&f) {
            return f;
        }
        assert!(Instant::now() < end, "{what}: {f}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `covo fleet --json` from a machine of its own on the broker.
fn fleet_json(dir: &std::path::Path, cfg: &str) -> Value {
    let out = covo(dir, cfg).args(["fleet", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn fleet_member<'v>(fleet: &'v Value, id: &str) -> Option<&'v Value> {
    fleet["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["gateway"] == id)
}

#[test]
fn the_fleet_view_lists_gateways_from_their_births_and_fans_calls_out_through_their_policy() {
    let broker = Mosquitto::start();
    let cfg = |id: &str, extra: &str| {
        format!(
            "[mqtt]\nurl = \"{}\"\ngateway_id = \"{id}\"\n[run]\ntelemetry_secs = 3600\n{extra}",
            broker.url()
        )
    };
    // A gateway that died long ago: only its Will is left, retained.
    let will = raw(broker.port(), "covo/gateways/gw-gone/status");
    will.client
        .publish(
            "covo/gateways/gw-gone/status",
            QoS::AtLeastOnce,
            true,
            r#"{"status":"offline"}"#,
        )
        .unwrap();
    assert!(will
        .next_on("covo/gateways/gw-gone/status", Duration::from_secs(5))
        .is_some());
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let dir_b = tempfile::tempdir().unwrap();
    let dir_c = tempfile::tempdir().unwrap();
    let b = run_gateway(
        &broker,
        dir_b.path(),
        "gw-b",
        "[swarm]\nexpose = [\"sensor_read\", \"gpio_write\"]\n",
    );
    let c = run_gateway(&broker, dir_c.path(), "gw-c", "");
    // A failed assertion must not leave the daemons running (they hold the test's output open).
    let mut b = KillOnDrop(Some(b));
    let mut c = KillOnDrop(Some(c));

    let ops = tempfile::tempdir().unwrap();
    let ops_cfg = cfg("ops", "");
    let fleet = fleet_when(
        ops.path(),
        &ops_cfg,
        30,
        "the gateways never came up",
        |f| {
            // Up: online, with its board named and its first readings retained.
            let up = |id| {
                fleet_member(f, id).is_some_and(|m| {
                    m["online"] == true && m["board"] == "sim" && m["last_reading_at"].is_string()
                })
            };
            up("gw-b") && up("gw-c")
        },
    );
    assert_eq!(fleet["count"], 3, "{fleet}");
    let b_m = fleet_member(&fleet, "gw-b").unwrap();
    assert!(
        b_m["software"].as_str().unwrap().starts_with("covo "),
        "{b_m}"
    );
    let since = b_m["online_since"].as_u64().unwrap();
    assert!(since + 5 >= started && since <= started + 60, "{b_m}");
    assert_eq!(b_m["tools"], json!(["gpio_write", "sensor_read"]));
    // Its last readings are the retained telemetry, as the gateway published it.
    let climate = &b_m["readings"]["climate"];
    let t = climate["temperature"]["value"].as_f64().unwrap();
    assert!((0.0..50.0).contains(&t), "{b_m}");
    let newest = b_m["readings"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|r| r["at"].as_str())
        .max()
        .unwrap();
    assert!(climate["at"].as_str().unwrap() <= newest);
    assert_eq!(b_m["last_reading_at"], newest, "{b_m}");
    let gone = fleet_member(&fleet, "gw-gone").unwrap();
    assert_eq!(gone["online"], false);
    assert_eq!(gone["last_reading_at"], Value::Null);
    // The table a person reads.
    let out = covo(ops.path(), &ops_cfg).arg("fleet").output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("GATEWAY"), "{table}");
    assert!(table.contains("3 gateway(s), 2 online"), "{table}");
    let line = table.lines().find(|l| l.starts_with("gw-b")).unwrap();
    assert!(line.contains("online") && line.contains("sim"), "{line}");
    let at = b_m["last_reading_at"].as_str().unwrap();
    assert!(
        table.lines().next().unwrap().ends_with("LAST READING"),
        "{table}"
    );
    assert!(
        line.contains(at) || fleet_json(ops.path(), &ops_cfg).to_string().contains(at),
        "{line}"
    );

    // A read fanned out: every online gateway serving it answers with its own reading.
    let out = covo(ops.path(), &ops_cfg)
        .args([
            "fleet",
            "call",
            "--json",
            "sensor_read",
            r#"{"sensor":"climate"}"#,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (l, id) in lines.iter().zip(["gw-b", "gw-c"]) {
        assert_eq!(l["gateway"], id);
        assert_eq!(l["ok"], true, "{l}");
        assert!(l["result"]["readings"].as_array().is_some(), "{l}");
    }
    // An actuation on named gateways: gw-b's own policy refuses the pin, an unknown id is
    // named, and nothing ran on gw-c (not selected).
    let out = covo(ops.path(), &ops_cfg)
        .args([
            "fleet",
            "call",
            "--json",
            "--gateway",
            "gw-b",
            "--gateway",
            "gw-x",
            "gpio_write",
            r#"{"pin":5,"level":1}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["gateway"], "gw-b");
    assert_eq!(lines[0]["ok"], false);
    assert!(
        lines[0]["error"].to_string().contains("gpio.outputs"),
        "{text}"
    );
    assert_eq!(lines[1]["error"]["kind"], "unknown_gateway", "{text}");
    // gw-b's pipeline judged it (one audit row, refused); gw-c saw no gpio_write at all.
    let audited =
        |dir: &tempfile::TempDir, tool| audit_count(&dir.path().join("home"), "remote", tool);
    assert_eq!(audited(&dir_b, "gpio_write"), 1);
    assert_eq!(audited(&dir_c, "gpio_write"), 0);
    // The read ran once on each.
    assert_eq!(audited(&dir_b, "sensor_read"), 1);
    assert_eq!(audited(&dir_c, "sensor_read"), 1);

    // A gateway that stops is offline in the next view.
    let (code, _) = terminate(c.0.take().unwrap());
    assert_eq!(code, Some(0));
    let f = fleet_when(ops.path(), &ops_cfg, 20, "gw-c still online", |f| {
        fleet_member(f, "gw-c").is_some_and(|m| m["online"] == false)
    });
    assert_eq!(fleet_member(&f, "gw-b").unwrap()["online"], true);
    terminate(b.0.take().unwrap());
}

/// `covo fleet call` against gateways that are online by their births but never answer (a
/// node that died with their requests, say): with 8 asked at once (`--parallel 8`), when the slow
/// ones have used the shared deadline up, the rest are not asked at all and are told so,
/// rather than sent a request with no time left, which would make an actuation's outcome
/// unknown. A read is tried twice, both attempts within the deadline.
#[test]
fn a_fleet_call_past_its_deadline_asks_no_more_gateways_and_says_so() {
    let broker = Mosquitto::start();
    // Ten silent members, gw-a0…gw-a9, sorted before the live one, so their calls come first.
    let births = raw(broker.port(), "covo/gateways/+/status");
    let silent: Vec<String> = (0..10).map(|i| format!("gw-a{i}")).collect();
    for id in &silent {
        births
            .client
            .publish(
                format!("covo/gateways/{id}/status"),
                QoS::AtLeastOnce,
                true,
                r#"{"status":"online","tools":["gpio_write","board_info"]}"#,
            )
            .unwrap();
    }
    // What was sent to them, and to the live one.
    let requests = raw(broker.port(), "covo/+/swarm/req/#");
    let dir = tempfile::tempdir().unwrap();
    let live = run_gateway(
        &broker,
        dir.path(),
        "gw-z",
        "[swarm]\nexpose = [\"gpio_write\", \"board_info\"]\n",
    );
    let mut live = KillOnDrop(Some(live));
    let ops = tempfile::tempdir().unwrap();
    let ops_cfg = format!("[mqtt]\nurl = \"{}\"\ngateway_id = \"ops\"\n", broker.url());
    fleet_when(ops.path(), &ops_cfg, 30, "the fleet never came up", |f| {
        let serves = |id: &str| {
            fleet_member(f, id).is_some_and(|m| {
                m["online"] == true && m["tools"].to_string().contains("gpio_write")
            })
        };
        serves("gw-z") && silent.iter().all(|id| serves(id))
    });
    while requests.rx.try_recv().is_ok() {}

    let fan_out = |tool: &str, args: &str| {
        let out = covo(ops.path(), &ops_cfg)
            .args([
                "fleet",
                "call",
                "--json",
                "--timeout-ms",
                "2000",
                "--parallel",
                "8",
            ])
            .args([tool, args])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 11, "{text}");
        lines
    };
    // More places at once than the link can wait for are refused before anything is sent.
    for bad in ["0", "129"] {
        let out = covo(ops.path(), &ops_cfg)
            .args(["fleet", "call", "--parallel", bad, "board_info"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--parallel {bad}");
    }
    // An actuation, 8 at once: the first 8 silent ones time out, each sent once and said to be unknown;
    // gw-a8, gw-a9 and the live gw-z come after the deadline was spent: not asked, not run.
    let lines = fan_out("gpio_write", r#"{"pin":17,"level":1}"#);
    for l in &lines[..8] {
        assert_eq!(l["error"]["kind"], "timeout", "{l}");
        assert!(
            l["error"]["hint"]
                .as_str()
                .unwrap()
                .contains("may have run"),
            "{l}"
        );
    }
    for (l, id) in lines[8..].iter().zip(["gw-a8", "gw-a9", "gw-z"]) {
        assert_eq!(l["gateway"], id);
        assert_eq!(l["error"]["kind"], "not_sent", "{l}");
        assert!(
            l["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nothing was sent"),
            "{l}"
        );
    }
    // The broker carried exactly the 8 requests, one each, and nothing to the rest.
    std::thread::sleep(Duration::from_millis(500));
    let sent: Vec<String> = requests.rx.try_iter().map(|m| m.topic).collect();
    let mut to: Vec<&str> = sent.iter().map(|t| t.split('/').nth(1).unwrap()).collect();
    to.sort();
    assert_eq!(
        to,
        silent[..8].iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(
        audit_count(&dir.path().join("home"), "remote", "gpio_write"),
        0
    );

    // A read: sent twice to each silent one it asks, both attempts within the 2 s.
    let lines = fan_out("board_info", "{}");
    for l in &lines[..8] {
        let message = l["error"]["message"].as_str().unwrap();
        assert!(message.contains("(tried twice)"), "{l}");
        let ms: u64 = message
            .split(" within ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(ms <= 1000, "each attempt within half the deadline: {l}");
    }
    assert!(
        lines[8..].iter().all(|l| l["error"]["kind"] == "not_sent"),
        "{lines:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(requests.rx.try_iter().count(), 16);
    terminate(live.0.take().unwrap());
}

/// `program` (mosquitto_pub or mosquitto_sub, from mosquitto-clients: clients that are not
/// covo) for `broker`, over MQTT 5 as `who` (client id `id`), with the certificate the
/// broker's CA issued to that name.
fn mosquitto_client(program: &str, broker: &Mosquitto, who: &str, id: &str) -> Command {
    let (cert, key) = broker.client_cert(who);
    let mut c = Command::new(program);
    c.args(["-h", "127.0.0.1", "-V", "5", "-q", "1", "-i", id])
        .arg("-p")
        .arg(broker.port().to_string())
        .arg("--cafile")
        .arg(broker.ca_file().unwrap())
        .arg("--cert")
        .arg(cert)
        .arg("--key")
        .arg(key);
    c
}

/// `mosquitto_pub` as `who`; returns what it printed.
fn mosquitto_pub(broker: &Mosquitto, who: &str, args: &[&str]) -> String {
    let out = mosquitto_client("mosquitto_pub", broker, who, &format!("{who}-forger"))
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("mosquitto_pub: {e} (tests/run-all.sh installs mosquitto-clients)")
        });
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn under_the_shipped_acl_a_gateways_certificate_publishes_only_as_itself() {
    // A TLS broker that takes each client's id from its certificate's CN and enforces the ACL
    // template shipped for fleets.
    let acl =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/mosquitto/covo.acl");
    let broker = Mosquitto::start_with(&covo_tests::broker::Setup {
        tls: true,
        client_certs: true,
        acl_file: Some(acl),
        ..Default::default()
    });
    let cfg = |id: &str, extra: &str| {
        let (cert, key) = broker.client_cert(id);
        format!(
            "[mqtt]\nurl = \"{}\"\ngateway_id = \"{id}\"\nca_file = \"{}\"\n\
             client_cert_file = \"{}\"\nclient_key_file = \"{}\"\n[run]\ntelemetry_secs = 3600\n{extra}",
            broker.url(),
            broker.ca_file().unwrap().display(),
            cert.display(),
            key.display()
        )
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let spawn = |dir: &std::path::Path, cfg: &str| {
        covo(dir, cfg)
            .args(["run", "--profile", "full"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let b_cfg = cfg(
        "gw-b",
        "[swarm]\nexpose = [\"board_info\", \"gpio_write\"]\n",
    );
    let mut b = KillOnDrop(Some(spawn(dir_b.path(), &b_cfg)));
    let _a = KillOnDrop(Some(spawn(dir_a.path(), &cfg("gw-a", ""))));

    // Both come up under the ACL: births, Wills and retained readings, seen by an operator.
    let ops = tempfile::tempdir().unwrap();
    let ops_cfg = cfg("covo-operator", "");
    let up = |f: &Value, id| {
        fleet_member(f, id).is_some_and(|m| m["online"] == true && m["last_reading_at"].is_string())
    };
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let f = fleet_json(ops.path(), &ops_cfg);
        if up(&f, "gw-a") && up(&f, "gw-b") {
            break;
        }
        assert!(
            Instant::now() < end,
            "the gateways never came up under the ACL: {f}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    // A watcher that may read everything (the operator), on the branches a forger aims at.
    let mut watch = mosquitto_client(
        "mosquitto_sub",
        &broker,
        "covo-operator",
        "covo-operator-watch",
    )
    .arg("-v")
    .args(["-t", "covo/gw-b/peer/res", "-t", "covo/gw-b/swarm/res/+"])
    .args([
        "-t",
        "covo/gw-c/swarm/res/+",
        "-t",
        "covo/gw-a/sensors/probe",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));

    // With gw-a's certificate: gw-b's birth (a retained "offline"), an answer on gw-b's peer
    // branch, an answer to gw-b in gw-c's name, and an actuation request in gw-c's name. The
    // broker refuses each one.
    let forged = [
        (
            "covo/gateways/gw-b/status",
            r#"{"status":"offline"}"#,
            &["-r"][..],
        ),
        (
            "covo/gw-b/peer/res",
            r#"{"call_id":"x","ok":true,"result":1}"#,
            &[][..],
        ),
        (
            "covo/gw-b/swarm/res/gw-c",
            r#"{"call_id":"x","ok":true,"result":1}"#,
            &[][..],
        ),
        (
            "covo/gw-b/swarm/req/gw-c",
            r#"{"call_id":"forged-1","tool":"gpio_write","args":{"pin":17,"level":1},"gateway":"gw-c","deadline_ms":5000}"#,
            &[
                "-D",
                "publish",
                "response-topic",
                "covo/gw-c/swarm/res/gw-b",
            ][..],
        ),
    ];
    for (topic, payload, extra) in forged {
        let out = mosquitto_pub(
            &broker,
            "gw-a",
            &[&["-t", topic, "-m", payload], extra].concat(),
        );
        assert!(
            out.contains("Not authorized"),
            "{topic}: the broker did not refuse it: {out}"
        );
    }
    // On its own topic, with the payload naming gw-c: the broker lets gw-a send it (it is
    // gw-a's call), and gw-b refuses it, because the topic says gw-a.
    let out = mosquitto_pub(
        &broker,
        "gw-a",
        &[
            "-t",
            "covo/gw-b/swarm/req/gw-a",
            "-D",
            "publish",
            "response-topic",
            "covo/gw-c/swarm/res/gw-b",
            "-D",
            "publish",
            "correlation-data",
            "forged-2",
            "-m",
            r#"{"call_id":"forged-2","tool":"gpio_write","args":{"pin":17,"level":1},"gateway":"gw-c","deadline_ms":5000}"#,
        ],
    );
    assert!(!out.contains("Not authorized"), "{out}");
    // What gw-a may publish gets through the same way, so the watcher would have seen the rest.
    let out = mosquitto_pub(
        &broker,
        "gw-a",
        &["-t", "covo/gw-a/sensors/probe", "-m", "{}"],
    );
    assert!(!out.contains("Not authorized"), "{out}");
    let mut seen = String::new();
    {
        use std::io::BufRead;
        let stdout = watch.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(l);
            }
        });
        let end = Instant::now() + Duration::from_secs(10);
        while let Ok(l) = rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
            seen.push_str(&l);
            seen.push('\n');
            if l.starts_with("covo/gw-a/sensors/probe") {
                // gw-b's refusal of forged-2 publishes nothing; give a late one a moment.
                while let Ok(l) = rx.recv_timeout(Duration::from_millis(1500)) {
                    seen.push_str(&l);
                    seen.push('\n');
                }
                break;
            }
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(
        seen.starts_with("covo/gw-a/sensors/probe"),
        "the watcher saw: {seen}"
    );
    assert_eq!(
        seen.lines().count(),
        1,
        "forged messages got through: {seen}"
    );

    // gw-b's retained birth is still its own, and no forged call ran on it.
    let f = fleet_json(ops.path(), &ops_cfg);
    assert!(up(&f, "gw-b"), "{f}");
    assert_eq!(
        audit_count(&dir_b.path().join("home"), "remote", "gpio_write"),
        0
    );

    // The proper calls go through under the same ACL: from gw-a (its own certificate) and from
    // the operator, each answered on its own branch and run once.
    let a_ops = tempfile::tempdir().unwrap();
    for (dir, cfg) in [
        (a_ops.path(), cfg("gw-a", "")),
        (ops.path(), ops_cfg.clone()),
    ] {
        let out = covo(dir, &cfg)
            .args(["fleet", "call", "--json", "--gateway", "gw-b", "gpio_write"])
            .arg(r#"{"pin":17,"level":1}"#)
            .output()
            .unwrap();
        let line: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(line["ok"], true, "{line}");
    }
    assert_eq!(
        audit_count(&dir_b.path().join("home"), "remote", "gpio_write"),
        2
    );
    let (code, err) = terminate(b.0.take().unwrap());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("claims to come from 'gw-c'"),
        "gw-b logs the impostor: {err}"
    );
}

/// A caller takes a swarm answer only from the branch of the gateway it called: a client that
/// sees the request and answers first, in another responder's name, is not believed.
#[test]
fn a_swarm_answer_counts_only_from_the_gateway_that_was_called() {
    let broker = Mosquitto::start();
    // gw-b exists only as a retained birth; the forger plays it, or tries to.
    let forger = raw(broker.port(), "covo/gw-b/swarm/req/+");
    forger
        .client
        .publish(
            "covo/gateways/gw-b/status",
            QoS::AtLeastOnce,
            true,
            r#"{"status":"online","version":1,"tools":["board_info"]}"#,
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let ops = tempfile::tempdir().unwrap();
    let cfg = format!("[mqtt]\nurl = \"{}\"\ngateway_id = \"ops\"\n", broker.url());
    for (responder, believed) in [("gw-x", false), ("gw-b", true)] {
        // A read is sent again after a timeout: the first call's second request is not this one.
        while forger.rx.try_recv().is_ok() {}
        let child = covo(ops.path(), &cfg)
            .args([
                "fleet",
                "call",
                "--json",
                "--timeout-ms",
                "3000",
                "--gateway",
                "gw-b",
            ])
            .arg("board_info")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let m = loop {
            let m = forger
                .rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the call's request");
            if m.topic == "covo/gw-b/swarm/req/ops" {
                break m;
            }
        };
        let req: Value = serde_json::from_slice(&m.payload).unwrap();
        let props = covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties {
            correlation_data: m.correlation.clone().map(Into::into),
            ..Default::default()
        };
        forger
            .client
            .publish_with_properties(
                format!("covo/ops/swarm/res/{responder}"),
                QoS::AtLeastOnce,
                false,
                json!({"call_id": req["call_id"], "ok": true, "result": {"forged": responder}})
                    .to_string(),
                props,
            )
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let line: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        if believed {
            // The control: the same answer on gw-b's own branch is taken.
            assert_eq!(line["ok"], true, "{line}");
            assert_eq!(line["result"]["forged"], "gw-b", "{line}");
        } else {
            assert_eq!(
                line["ok"], false,
                "an answer in gw-x's name was taken: {line}"
            );
            assert!(
                line.to_string().contains("timeout") || line.to_string().contains("no answer"),
                "{line}"
            );
        }
    }
}
