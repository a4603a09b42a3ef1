//! The MQTT peer link against a real mosquitto: births make peer tools available and the Will
//! takes them away, calls go through the same pipeline (validation, policy) before they are
//! published, the peer runs a redelivered request once, and timeouts are clean errors.
//!
//! The peer runs in-process (`PeerServer`) with a test-only `ToolHost`, so these tests do not
//! depend on the real backends.

use covo::config::{Config, MqttConfig};
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_peer::server::{PeerServer, ServerOptions};
use covo_tests::broker::{Mosquitto, Setup};
use covo_wire::host::ToolHost;
use covo_wire::protocol::{Request, Response, Topics};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Serves `plot_series` (read) and `code_run` (write); records every execution.
struct TestHost {
    calls: Mutex<Vec<(String, Value)>>,
    delay: Duration,
}

impl TestHost {
    fn new(delay: Duration) -> Arc<TestHost> {
        Arc::new(TestHost {
            calls: Mutex::new(Vec::new()),
            delay,
        })
    }

    fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

impl ToolHost for TestHost {
    fn tools(&self) -> Vec<String> {
        vec!["plot_series".into(), "code_run".into()]
    }

    fn call(&self, tool: &str, args: Value, _deadline: Instant) -> Result<Value, ToolError> {
        self.calls.lock().unwrap().push((tool.into(), args.clone()));
        std::thread::sleep(self.delay);
        if args["code"] == "big" {
            // Larger than one MQTT packet: the answer must travel in chunks.
            let big: String = (0..3_000_000u32)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            return Ok(json!({"tool": tool, "big": big}));
        }
        Ok(json!({"tool": tool, "echo": args}))
    }
}

fn mqtt(broker: &Mosquitto, timeout_ms: Option<u64>) -> MqttConfig {
    MqttConfig {
        url: Some(broker.url()),
        gateway_id: Some("gw1".into()),
        prefix: None,
        call_timeout_ms: timeout_ms,
        ..Default::default()
    }
}

fn runtime(config: Config) -> Runtime {
    Runtime::new(covo::tools::options(config))
        .unwrap()
        .with_store(Store::in_memory().unwrap())
}

fn peer(broker: &Mosquitto, id: &str, host: Arc<TestHost>) -> PeerServer {
    let opts = ServerOptions {
        url: broker.url(),
        id: id.into(),
        prefix: "covo".into(),
        auth: Default::default(),
    };
    PeerServer::start(&opts, host).unwrap()
}

fn available(rt: &Runtime, tool: &str) -> (bool, Option<String>) {
    let av = rt.availability(rt.lookup(tool).unwrap());
    (av.available, av.reason)
}

fn session() -> Session {
    Session::new("peer-test", "cli")
}

fn plot_args() -> Value {
    json!({"series": [{"label": "t", "points": [[0, 1.5], [1, 2.5]]}], "title": "x"})
}

#[test]
fn without_mqtt_config_peer_tools_are_unavailable_and_nothing_connects() {
    let rt = runtime(Config::default());
    assert_eq!(
        available(&rt, "plot_series"),
        (false, Some("no MQTT broker configured".into()))
    );
    assert!(rt.peer_link().is_none());
    match rt.call(&session(), Via::Direct, "plot_series", plot_args()) {
        Err(CallError::Respond(ToolError::Unavailable { reason, .. })) => {
            assert_eq!(reason, "no MQTT broker configured")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn with_no_peer_online_a_peer_tool_is_unavailable_and_its_call_is_refused() {
    let broker = Mosquitto::start();
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, None)),
        ..Config::default()
    });
    assert_eq!(
        available(&rt, "plot_series"),
        (false, Some("no peer online".into()))
    );
    match rt.call(&session(), Via::Direct, "plot_series", plot_args()) {
        Err(CallError::Respond(e @ ToolError::Unavailable { .. })) => {
            assert_eq!(e.to_json()["error"]["kind"], "unavailable")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_live_peer_makes_its_tools_available_a_call_round_trips_and_the_will_takes_them_away() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::ZERO);
    let server = peer(&broker, "p1", host.clone());
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, None)),
        ..Config::default()
    });
    let link = rt.peer_link().expect("configured");
    assert!(link.wait_for("plot_series", true, Duration::from_secs(5)));
    assert_eq!(available(&rt, "plot_series"), (true, None));
    assert_eq!(available(&rt, "code_run"), (true, None));
    // Not advertised by this peer: still unavailable, with a reason naming it.
    let (ok, reason) = available(&rt, "web_fetch");
    assert!(!ok);
    assert!(reason.unwrap().contains("web_fetch"));
    // And the model sees it: the plan includes an available peer tool.
    let plan = rt
        .plan(&covo::plan::Selection::Toolsets(vec!["media".into()]))
        .unwrap();
    assert!(plan.visible.iter().any(|t| t.name == "plot_series"));

    let v = rt
        .call(&session(), Via::Direct, "plot_series", plot_args())
        .unwrap();
    assert_eq!(v, json!({"tool": "plot_series", "echo": plot_args()}));
    assert_eq!(host.count(), 1);

    // Validation runs before publishing: a bad call never reaches the peer.
    match rt.call(&session(), Via::Direct, "plot_series", json!({"title": 1})) {
        Err(CallError::Respond(ToolError::InvalidArguments { .. })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(host.count(), 1);

    // The peer dies without saying goodbye: the broker publishes its Will.
    server.crash();
    assert!(!link.wait_for("plot_series", false, Duration::from_secs(5)));
    assert_eq!(
        available(&rt, "plot_series"),
        (false, Some("no peer online".into()))
    );
    // A new peer brings the tools back.
    let _again = peer(&broker, "p2", host.clone());
    assert!(link.wait_for("plot_series", true, Duration::from_secs(5)));
}

#[test]
fn the_read_only_policy_refuses_a_write_peer_tool_before_it_is_published() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::ZERO);
    let _server = peer(&broker, "p1", host.clone());
    let mut config = Config {
        mqtt: Some(mqtt(&broker, None)),
        ..Config::default()
    };
    config.policy.read_only = true;
    let rt = runtime(config);
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("code_run", true, Duration::from_secs(5)));
    match rt.call(
        &session(),
        Via::Direct,
        "code_run",
        json!({"language": "python", "code": "print(1)"}),
    ) {
        Err(CallError::Respond(ToolError::PolicyRefused { rule, .. })) => {
            assert_eq!(rule, "read_only")
        }
        other => panic!("{other:?}"),
    }
    // A read tool still goes through.
    rt.call(&session(), Via::Direct, "plot_series", plot_args())
        .unwrap();
    assert_eq!(host.count(), 1, "only the read call reached the peer");
}

#[test]
fn a_timeout_is_a_clean_error_reads_are_retried_once_and_writes_never() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::from_millis(1500));
    let _server = peer(&broker, "slow", host.clone());
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, Some(300))),
        ..Config::default()
    });
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("plot_series", true, Duration::from_secs(5)));

    let t = Instant::now();
    match rt.call(&session(), Via::Direct, "plot_series", plot_args()) {
        Err(CallError::Respond(ToolError::Timeout { message, hint, .. })) => {
            assert!(
                message.contains("no answer from a peer within 300 ms"),
                "{message}"
            );
            assert!(message.contains("tried twice"), "{message}");
            assert!(hint.is_some());
        }
        other => panic!("{other:?}"),
    }
    assert!(
        t.elapsed() >= Duration::from_millis(600),
        "read retried once"
    );
    // The retry reused the call id, so the peer ran the tool once.
    assert_eq!(host.count(), 1);

    let t = Instant::now();
    match rt.call(
        &session(),
        Via::Direct,
        "code_run",
        json!({"language": "shell", "code": "true"}),
    ) {
        Err(CallError::Respond(ToolError::Timeout { message, .. })) => {
            assert!(!message.contains("tried twice"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(
        t.elapsed() < Duration::from_millis(1200),
        "a write is not retried"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(host.count(), 2);
}

/// Request properties as another gateway would set them.
fn props(
    response_topic: &str,
    call_id: &str,
) -> covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties {
    covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties {
        response_topic: Some(response_topic.into()),
        correlation_data: Some(bytes::Bytes::from(call_id.as_bytes().to_vec())),
        message_expiry_interval: Some(30),
        ..Default::default()
    }
}

#[test]
fn a_redelivered_request_runs_the_tool_once_and_both_get_the_answer() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::from_millis(50));
    let _server = peer(&broker, "p1", host.clone());
    let topics = Topics::new("covo");
    // Wait for the birth so the peer's subscription is in place.
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, None)),
        ..Config::default()
    });
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("plot_series", true, Duration::from_secs(5)));

    let res = topics.response("gwraw");
    let raw = covo_tests::broker::raw(broker.port(), &res);
    let req = Request {
        call_id: "dup-1".into(),
        tool: "plot_series".into(),
        args: plot_args(),
        gateway: "gwraw".into(),
        deadline_ms: 5000,
    };
    let body = serde_json::to_vec(&req).unwrap();
    for _ in 0..2 {
        raw.client
            .publish_with_properties(
                topics.request("gwraw"),
                covo_tests::rumqttc::v5::mqttbytes::QoS::AtLeastOnce,
                false,
                body.clone(),
                props(&res, "dup-1"),
            )
            .unwrap();
    }
    // The first answer comes when the tool finishes; the second request arrived while it ran
    // and is dropped. A third, after it finished, gets the cached answer.
    let first = raw.rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(first.correlation.as_deref(), Some(&b"dup-1"[..]));
    let r: Response = serde_json::from_slice(&first.payload).unwrap();
    assert!(r.ok);
    raw.client
        .publish_with_properties(
            topics.request("gwraw"),
            covo_tests::rumqttc::v5::mqttbytes::QoS::AtLeastOnce,
            false,
            body,
            props(&res, "dup-1"),
        )
        .unwrap();
    let again = raw.rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        serde_json::from_slice::<Response>(&again.payload).unwrap(),
        r
    );
    assert!(raw.rx.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(host.count(), 1, "the tool ran once for three deliveries");
}

#[test]
fn covo_tools_list_shows_peer_tools_available_while_a_peer_is_online() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::ZERO);
    let _server = peer(&broker, "p1", host);
    // Wait until the retained birth is at the broker.
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, None)),
        ..Config::default()
    });
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("plot_series", true, Duration::from_secs(5)));

    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("covo.toml");
    std::fs::write(
        &cfg,
        format!("[mqtt]\nurl = \"{}\"\ngateway_id = \"cli\"\n", broker.url()),
    )
    .unwrap();
    let out = std::process::Command::new(covo_tests::bins::covo())
        .args(["tools", "list", "--json", "--config"])
        .arg(&cfg)
        .env("COVO_HOME", dir.path().join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap().clone();
    assert_eq!(row("plot_series")["available"], true);
    assert_eq!(row("plot_series")["runs"], "peer");
    assert_eq!(row("web_search")["available"], false);
}

#[test]
fn qos1_round_trip_through_mosquitto_with_tcp_nodelay() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::ZERO);
    let _server = peer(&broker, "p1", host);
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, None)),
        ..Config::default()
    });
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("plot_series", true, Duration::from_secs(5)));
    let mut times = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        link.call("plot_series", json!({"series": []}), true)
            .unwrap();
        times.push(t.elapsed());
    }
    times.sort();
    // Printed, not asserted: shared CI machines vary.
    eprintln!(
        "peer call over mosquitto (QoS 1 request + QoS 1 response, TCP_NODELAY): p50 {:?}, p90 {:?}, max {:?} over {} calls",
        times[times.len() / 2],
        times[times.len() * 9 / 10],
        times[times.len() - 1],
        times.len()
    );
}

#[test]
fn covo_peer_as_a_process_announces_itself_and_its_will_fires_when_it_is_killed() {
    let broker = Mosquitto::start();
    let topics = Topics::new("covo");
    let status = topics.peer_status("proc1");
    let raw = covo_tests::broker::raw(broker.port(), &status);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("covo.toml");
    std::fs::write(
        &cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\n[peer]\nid = \"proc1\"\n",
            broker.url()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_covo-peer"))
        .arg("--config")
        .arg(&cfg)
        .env("COVO_HOME", dir.path().join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let next = |what: &str| -> Value {
        let m = raw
            .rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no {what} status"));
        serde_json::from_slice(&m.payload).unwrap()
    };
    let birth = next("birth");
    assert_eq!(birth["status"], "online");
    assert_eq!(birth["version"], 1);
    // SIGKILL: no DISCONNECT, so the broker publishes the Will.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(next("Will"), json!({"status": "offline"}));
}

/// A user hook that refuses one tool: stands for any `before_tool_call` check (plan mode,
/// approval) that must run on the gateway before a peer call is published.
struct RefuseCodeRun;

impl covo::hooks::Hook for RefuseCodeRun {
    fn name(&self) -> &'static str {
        "refuse_code_run"
    }

    fn before_tool_call(
        &self,
        _cx: &covo::hooks::HookCx<'_>,
        call: &covo::hooks::ToolInvocation<'_>,
    ) -> Result<(), ToolError> {
        if call.spec.name == "code_run" {
            Err(ToolError::ApprovalDenied {
                tool: "code_run".into(),
                detail: "declined by the test hook".into(),
            })
        } else {
            Ok(())
        }
    }
}

#[test]
fn before_tool_call_hooks_run_on_the_gateway_before_a_peer_call_is_published() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::ZERO);
    let _server = peer(&broker, "p1", host.clone());
    let mut opts = covo::tools::options(Config {
        mqtt: Some(mqtt(&broker, None)),
        ..Config::default()
    });
    opts.hooks.push(Box::new(RefuseCodeRun));
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("code_run", true, Duration::from_secs(5)));
    match rt.call(
        &session(),
        Via::Direct,
        "code_run",
        json!({"language": "python", "code": "print(1)"}),
    ) {
        Err(CallError::Respond(ToolError::ApprovalDenied { .. })) => {}
        other => panic!("{other:?}"),
    }
    // Through `tool_call` too.
    match rt.call(
        &session(),
        Via::Direct,
        "tool_call",
        json!({"name": "code_run", "arguments": {"language": "python", "code": "print(1)"}}),
    ) {
        Err(CallError::Respond(ToolError::ApprovalDenied { .. })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(host.count(), 0, "nothing reached the peer");
}

#[test]
fn after_a_broker_restart_both_sides_reconnect_resubscribe_and_calls_work_again() {
    let mut broker = Mosquitto::start();
    let host = TestHost::new(Duration::ZERO);
    let _server = peer(&broker, "p1", host.clone());
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, Some(5000))),
        ..Config::default()
    });
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("plot_series", true, Duration::from_secs(5)));
    broker.restart();
    // The connection drop clears the peers (the first reconnect waits at least 50 ms of
    // backoff); the reconnect resubscribes, the peer re-announces itself on its own ConnAck,
    // and the tool comes back.
    assert!(!link.wait_for("plot_series", false, Duration::from_secs(5)));
    let t = Instant::now();
    assert!(link.wait_for("plot_series", true, Duration::from_secs(20)));
    eprintln!("peer tools back {:?} after the broker restart", t.elapsed());
    let v = rt
        .call(&session(), Via::Direct, "plot_series", plot_args())
        .unwrap();
    assert_eq!(v["tool"], "plot_series");
}

#[test]
fn the_real_covo_peer_runs_code_plots_and_graphs_code_for_a_gateway_over_the_broker() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let peer_cfg = dir.path().join("peer.toml");
    std::fs::write(
        &peer_cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\n[peer]\nid = \"real\"\n\
             [peer.backends.code_graph]\nroot = {:?}\n",
            broker.url(),
            dir.path().join("code")
        ),
    )
    .unwrap();
    // The tree `code_graph` reads: `f` calls `g` twice, once from Python and once from Rust.
    std::fs::create_dir_all(dir.path().join("code/app")).unwrap();
    std::fs::write(
        dir.path().join("code/app/main.py"),
        "def g():\n    return 1\n\n\ndef f():\n    return g() + 1\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("code/lib.rs"),
        "fn g() {}\nfn f() {\n    g();\n}\n",
    )
    .unwrap();
    let mut peer = std::process::Command::new(env!("CARGO_BIN_EXE_covo-peer"))
        .arg("--config")
        .arg(&peer_cfg)
        .env("COVO_HOME", dir.path().join("peer-home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let gw_cfg = dir.path().join("gw.toml");
    std::fs::write(
        &gw_cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw-e2e\"\n",
            broker.url()
        ),
    )
    .unwrap();
    let call = |tool: &str, args: &str| -> (i32, Value) {
        let out = std::process::Command::new(covo_tests::bins::covo())
            .args(["tools", "call", tool, args, "--config"])
            .arg(&gw_cfg)
            .env("COVO_HOME", dir.path().join("gw-home"))
            .env_remove("COVO_CONFIG")
            .env_remove("COVO_MQTT_URL")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        )
    };
    // The peer needs a moment to connect and publish its birth.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (code, ran) = loop {
        let r = call("code_run", r#"{"language":"shell","code":"echo $((6*7))"}"#);
        if r.0 == 0 || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(code, 0, "{ran}");
    assert_eq!(ran["stdout"].as_str().unwrap().trim(), "42", "{ran}");
    let (code, plot) = call(
        "plot_series",
        r#"{"title":"greenhouse","series":[{"label":"temperature","points":[[0,20.5],[1,21.0],[2,22.4]]}]}"#,
    );
    assert_eq!(code, 0, "{plot}");
    assert_eq!(plot["artifact"]["content_type"], "image/png");
    // The model gets a handle, not base64: the PNG is a file in the gateway's data folder.
    assert!(plot["artifact"].get("bytes_base64").is_none(), "{plot}");
    let id = plot["artifact"]["id"].as_str().unwrap();
    assert!(id.starts_with("art-"), "{plot}");
    let path = std::path::PathBuf::from(plot["artifact"]["path"].as_str().unwrap());
    assert!(
        path.starts_with(dir.path().join("gw-home").join("artifacts")),
        "{path:?}"
    );
    let png = std::fs::read(&path).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(plot["artifact"]["size_bytes"], png.len());
    let (code, graph) = call("code_graph", r#"{"symbol":"g","query":"callers"}"#);
    #[cfg(feature = "code-graph")]
    {
        assert_eq!(code, 0, "{graph}");
        let sites: Vec<(&str, u64, &str)> = graph["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["file"].as_str().unwrap(),
                    m["line"].as_u64().unwrap(),
                    m["caller"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            sites,
            [("app/main.py", 6, "f"), ("lib.rs", 3, "f")],
            "{graph}"
        );
        assert_eq!(graph["languages"], json!({"python": 1, "rust": 1}));
        // A path out of the root is refused on the peer as an argument error, which reaches
        // the gateway's caller whole: kind and JSON pointer.
        let (code, err) = call("code_graph", r#"{"symbol":"g","path":"../.."}"#);
        assert_eq!(code, 1, "{err}");
        assert_eq!(err["error"]["kind"], "invalid_arguments", "{err}");
        assert_eq!(err["error"]["problems"][0]["path"], "/path", "{err}");
    }
    // Without the feature the peer does not advertise it, so nobody serves it.
    #[cfg(not(feature = "code-graph"))]
    assert_eq!(code, 1, "{graph}");
    let _ = peer.kill();
    let _ = peer.wait();
}

/// A gateway and a peer on a broker with `setup`, each with its own credentials; the
/// gateway's `[mqtt]` gets `tweak` applied.
fn secured(
    broker: &Mosquitto,
    tweak: impl FnOnce(&mut MqttConfig),
) -> (Runtime, PeerServer, Arc<TestHost>) {
    let host = TestHost::new(Duration::ZERO);
    let opts = ServerOptions {
        url: broker.url(),
        id: "p-secure".into(),
        prefix: "covo".into(),
        auth: covo_wire::mqtt::BrokerAuth {
            username: Some("peer".into()),
            password: Some("peer-secret".into()),
            ca_file: broker.ca_file(),
            ..Default::default()
        },
    };
    let server = PeerServer::start(&opts, host.clone()).unwrap();
    let mut cfg = MqttConfig {
        username: Some("gw1".into()),
        password: Some("gw-secret".into()),
        ca_file: broker.ca_file(),
        ..mqtt(broker, Some(5000))
    };
    tweak(&mut cfg);
    let rt = runtime(Config {
        mqtt: Some(cfg),
        ..Config::default()
    });
    (rt, server, host)
}

fn users() -> Vec<(String, String)> {
    vec![
        ("gw1".into(), "gw-secret".into()),
        ("peer".into(), "peer-secret".into()),
    ]
}

#[test]
fn with_broker_passwords_the_right_credentials_connect_and_wrong_ones_say_why() {
    let broker = Mosquitto::start_with(&Setup {
        users: users(),
        tls: false,
        ..Default::default()
    });
    let (rt, _server, host) = secured(&broker, |_| {});
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("plot_series", true, Duration::from_secs(5)));
    let v = rt
        .call(&session(), Via::Direct, "plot_series", plot_args())
        .unwrap();
    assert_eq!(v["tool"], "plot_series");
    assert_eq!(host.count(), 1);

    let (bad, _server2, _) = secured(&broker, |c| c.password = Some("wrong".into()));
    let link = bad.peer_link().unwrap();
    assert!(!link.wait_for("plot_series", true, Duration::from_secs(1)));
    assert!(!link.is_connected());
    let (ok, reason) = available(&bad, "plot_series");
    assert!(!ok);
    let reason = reason.unwrap();
    assert!(reason.contains("user name or password"), "{reason}");

    let (anon, _server3, _) = secured(&broker, |c| {
        c.username = None;
        c.password = None;
    });
    let (ok, reason) = available(&anon, "plot_series");
    assert!(!ok, "anonymous clients are refused");
    assert!(reason.unwrap().contains("not connected"));
}

#[test]
fn over_tls_with_the_brokers_ca_calls_round_trip_and_an_untrusted_broker_is_refused() {
    let broker = Mosquitto::start_with(&Setup {
        users: users(),
        tls: true,
        ..Default::default()
    });
    assert!(broker.url().starts_with("mqtts://"));
    let (rt, _server, host) = secured(&broker, |_| {});
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("plot_series", true, Duration::from_secs(5)));
    let v = rt
        .call(
            &session(),
            Via::Direct,
            "code_run",
            json!({"language": "shell", "code": "true"}),
        )
        .unwrap();
    assert_eq!(v["tool"], "code_run");
    assert_eq!(host.count(), 1);

    // Without the test CA, the system roots do not trust the broker's certificate.
    let (untrusting, _server2, _) = secured(&broker, |c| c.ca_file = None);
    let link = untrusting.peer_link().unwrap();
    assert!(!link.wait_for("plot_series", true, Duration::from_secs(1)));
    let err = link.connection_error().unwrap_or_default();
    assert!(err.contains("TLS") || err.contains("certificate"), "{err}");
}

#[test]
fn an_answer_larger_than_an_mqtt_packet_arrives_whole_in_chunks() {
    let broker = Mosquitto::start();
    let host = TestHost::new(Duration::ZERO);
    let _server = peer(&broker, "p-big", host.clone());
    let rt = runtime(Config {
        mqtt: Some(mqtt(&broker, Some(20_000))),
        ..Config::default()
    });
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("code_run", true, Duration::from_secs(5)));
    let v = rt
        .call(
            &session(),
            Via::Direct,
            "code_run",
            json!({"language": "shell", "code": "big"}),
        )
        .unwrap();
    let big = v["big"].as_str().unwrap();
    assert_eq!(big.len(), 3_000_000);
    assert!(big
        .bytes()
        .enumerate()
        .all(|(i, b)| b == b'a' + (i % 26) as u8));
    assert_eq!(host.count(), 1);
    // Small answers still travel in one message, and the link keeps working.
    let v = rt
        .call(&session(), Via::Direct, "plot_series", plot_args())
        .unwrap();
    assert_eq!(v["tool"], "plot_series");
}

/// A peer with `TestHost` and a raw client watching everything under `covo/` and `elsewhere/`;
/// returns once the peer's subscription is in place.
fn raw_peer(broker: &Mosquitto) -> (PeerServer, Arc<TestHost>, covo_tests::broker::Raw) {
    let host = TestHost::new(Duration::ZERO);
    let server = peer(broker, "p-raw", host.clone());
    let births = covo_tests::broker::raw(broker.port(), &Topics::new("covo").peer_status("p-raw"));
    births
        .rx
        .recv_timeout(Duration::from_secs(10))
        .expect("birth");
    let raw = covo_tests::broker::raw(broker.port(), "#");
    (server, host, raw)
}

/// Publishes `req` on gateway `gw`'s request topic with `response_topic`.
fn send_raw(raw: &covo_tests::broker::Raw, gw: &str, req: &Request, response_topic: &str) {
    raw.client
        .publish_with_properties(
            Topics::new("covo").request(gw),
            covo_tests::rumqttc::v5::mqttbytes::QoS::AtLeastOnce,
            false,
            serde_json::to_vec(req).unwrap(),
            props(response_topic, &req.call_id),
        )
        .unwrap();
}

#[test]
fn the_peer_validates_arguments_itself_and_answers_every_problem_without_running() {
    let broker = Mosquitto::start();
    let (_server, host, raw) = raw_peer(&broker);
    let res = Topics::new("covo").response("gwraw");
    // A client that skips the gateway's pipeline: `series` missing, `title` not a string and an
    // unknown property.
    let req = Request {
        call_id: "bad-args".into(),
        tool: "plot_series".into(),
        args: json!({"title": 1, "colour": "red"}),
        gateway: "gwraw".into(),
        deadline_ms: 5000,
    };
    send_raw(&raw, "gwraw", &req, &res);
    let (answer, _) = raw
        .next_on(&res, Duration::from_secs(5))
        .expect("an answer");
    assert_eq!(answer["ok"], false, "{answer}");
    assert_eq!(answer["error"]["kind"], "invalid_arguments", "{answer}");
    let detail = &answer["error"]["detail"];
    assert_eq!(detail["kind"], "invalid_arguments", "{answer}");
    assert_eq!(detail["tool"], "plot_series", "{answer}");
    let problems = detail["problems"].as_array().unwrap();
    let paths: Vec<&str> = problems
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/title"), "{answer}");
    assert!(problems.len() >= 3, "every problem is named: {answer}");
    let text = answer.to_string();
    assert!(
        text.contains("series") && text.contains("colour"),
        "{answer}"
    );
    assert_eq!(host.count(), 0, "an invalid call never runs");

    // A valid call on the same link still runs.
    let ok = Request {
        call_id: "good-args".into(),
        args: plot_args(),
        ..req
    };
    send_raw(&raw, "gwraw", &ok, &res);
    let (answer, _) = raw
        .next_on(&res, Duration::from_secs(5))
        .expect("an answer");
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(host.count(), 1);
}

#[test]
fn a_request_whose_response_topic_is_not_its_gateways_is_refused_without_a_publish() {
    let broker = Mosquitto::start();
    let (_server, host, raw) = raw_peer(&broker);
    let topics = Topics::new("covo");
    let req = |id: &str| Request {
        call_id: id.into(),
        tool: "plot_series".into(),
        args: plot_args(),
        gateway: "gwraw".into(),
        deadline_ms: 5000,
    };
    // Another gateway's response topic, another branch of the tree, a chat topic, a topic
    // outside the prefix: the peer publishes to none of them. A malformed payload with a
    // foreign response topic gets no `bad_request` there either.
    let foreign = [
        topics.response("gw-victim"),
        "covo/gwraw/chat/in".to_string(),
        "covo/gwraw/peer/res/x".to_string(),
        "elsewhere/relay/on".to_string(),
    ];
    for (i, topic) in foreign.iter().enumerate() {
        send_raw(&raw, "gwraw", &req(&format!("foreign-{i}")), topic);
    }
    raw.client
        .publish_with_properties(
            topics.request("gwraw"),
            covo_tests::rumqttc::v5::mqttbytes::QoS::AtLeastOnce,
            false,
            b"not json".to_vec(),
            props("elsewhere/relay/on", "junk"),
        )
        .unwrap();
    // Then a proper one, answered on its own branch: everything before it was handled by now.
    send_raw(&raw, "gwraw", &req("proper"), &topics.response("gwraw"));
    let end = Instant::now() + Duration::from_secs(5);
    let mut answered = false;
    while let Ok(m) = raw
        .rx
        .recv_timeout(end.saturating_duration_since(Instant::now()))
    {
        if m.topic.ends_with("/peer/req") || m.topic.ends_with("/status") {
            continue;
        }
        assert_eq!(
            m.topic,
            topics.response("gwraw"),
            "published to a foreign topic: {}",
            String::from_utf8_lossy(&m.payload)
        );
        let r: Response = serde_json::from_slice(&m.payload).unwrap();
        assert_eq!(r.call_id, "proper");
        answered = true;
        break;
    }
    assert!(answered, "the proper request was answered");
    // Nothing else arrives late.
    while let Ok(m) = raw.rx.recv_timeout(Duration::from_millis(300)) {
        assert!(
            m.topic.ends_with("/peer/req") || m.topic.ends_with("/status"),
            "late publish on {}",
            m.topic
        );
    }
    assert_eq!(host.count(), 1, "only the proper request ran");
}

/// `covo-peer` as `id` on `broker`, identified by a client certificate the broker's CA issued
/// to that name.
fn peer_with_cert(broker: &Mosquitto, id: &str, host: Arc<TestHost>) -> PeerServer {
    let (cert, key) = broker.client_cert(id);
    let opts = ServerOptions {
        url: broker.url(),
        id: id.into(),
        prefix: "covo".into(),
        auth: covo_wire::mqtt::BrokerAuth {
            ca_file: broker.ca_file(),
            client_cert_file: Some(cert),
            client_key_file: Some(key),
            ..Default::default()
        },
    };
    PeerServer::start(&opts, host).unwrap()
}

#[test]
fn under_the_shipped_acl_only_the_named_peer_replicas_serve_and_gateways_use_their_certificates() {
    // The fleet's ACL template on a TLS broker that takes each client's id from its
    // certificate: `covo-peer-1` has a block in it, `covo-peer-9` does not.
    let acl =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/mosquitto/covo.acl");
    let broker = Mosquitto::start_with(&Setup {
        tls: true,
        client_certs: true,
        acl_file: Some(acl),
        ..Default::default()
    });
    let named = TestHost::new(Duration::ZERO);
    let _p1 = peer_with_cert(&broker, "covo-peer-1", named.clone());
    // The replica the ACL does not name runs as its own process, so its log can be read.
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = broker.client_cert("covo-peer-9");
    let cfg = dir.path().join("covo-peer.toml");
    std::fs::write(
        &cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\nca_file = \"{}\"\nclient_cert_file = \"{}\"\n\
             client_key_file = \"{}\"\n[peer]\nid = \"covo-peer-9\"\n",
            broker.url(),
            broker.ca_file().unwrap().display(),
            cert.display(),
            key.display()
        ),
    )
    .unwrap();
    let log = dir.path().join("stderr");
    let mut rogue = std::process::Command::new(env!("CARGO_BIN_EXE_covo-peer"))
        .arg("--config")
        .arg(&cfg)
        .env("COVO_HOME", dir.path().join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let (cert, key) = broker.client_cert("gw1");
    let rt = runtime(Config {
        mqtt: Some(MqttConfig {
            ca_file: broker.ca_file(),
            client_cert_file: Some(cert),
            client_key_file: Some(key),
            ..mqtt(&broker, Some(5000))
        }),
        ..Config::default()
    });
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("plot_series", true, Duration::from_secs(5)));
    for _ in 0..6 {
        let v = rt
            .call(&session(), Via::Direct, "plot_series", plot_args())
            .unwrap();
        assert_eq!(v["tool"], "plot_series");
    }
    // Every call went to the named replica: the other one could neither take requests from
    // the shared group nor announce itself, and its log says so.
    assert_eq!(named.count(), 6);
    let peers = link.peers();
    assert!(
        peers.contains_key("covo-peer-1") && !peers.contains_key("covo-peer-9"),
        "{peers:?}"
    );
    let end = Instant::now() + Duration::from_secs(10);
    let err = loop {
        let err = std::fs::read_to_string(&log).unwrap();
        if err.contains("refused a publish") || Instant::now() > end {
            break err;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = rogue.kill();
    let _ = rogue.wait();
    // (mosquitto 2.0 grants the shared subscription and withholds each message at delivery,
    // so only the refused birth shows in the log.)
    assert!(
        err.contains("the broker refused a publish") && err.contains("NotAuthorized"),
        "{err}"
    );
}
