//! How the gateway's peer link copes with faults, against a real mosquitto: a peer killed
//! mid-call (the call fails at once, or goes to another live peer), error kinds from a peer
//! that sends no `detail`, the gateway's own timeout, and responses larger than the broker's
//! packet limit. Errors are checked by their wire `kind` (`to_json()`), as the model sees them.
//!
//! The peer-death test runs the real `covo-peer` and the gateway's `covo` must be built
//! (`cargo test --workspace` builds both).

use covo::config::{Config, MqttConfig};
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_peer::server::{PeerServer, ServerOptions};
use covo_tests::broker::{raw, Mosquitto, Raw, Setup};
use covo_tests::http_fake;
use covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties;
use covo_tests::rumqttc::v5::mqttbytes::QoS;
use covo_wire::host::ToolHost;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn runtime(broker: &Mosquitto, timeout_ms: Option<u64>) -> Runtime {
    let config = Config {
        mqtt: Some(MqttConfig {
            url: Some(broker.url()),
            gateway_id: Some("gw1".into()),
            call_timeout_ms: timeout_ms,
            ..Default::default()
        }),
        ..Config::default()
    };
    Runtime::new(covo::tools::options(config))
        .unwrap()
        .with_store(Store::in_memory().unwrap())
}

fn call(rt: &Runtime, tool: &str, args: Value) -> Result<Value, CallError> {
    rt.call(&Session::new("faults", "cli"), Via::Direct, tool, args)
}

/// The wire error of a failed call: (kind, message).
fn kind(r: &Result<Value, CallError>) -> (String, String) {
    match r {
        Err(CallError::Respond(e)) => {
            let j = e.to_json();
            (
                j["error"]["kind"].as_str().unwrap_or_default().to_string(),
                j["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        }
        other => panic!("not a tool error: {other:?}"),
    }
}

/// Serves `web_fetch` in-process and answers at once with who it is.
struct Quick(&'static str);

impl ToolHost for Quick {
    fn tools(&self) -> Vec<String> {
        vec!["web_fetch".into()]
    }
    fn call(&self, _tool: &str, _args: Value, _deadline: Instant) -> Result<Value, ToolError> {
        Ok(json!({"from": self.0}))
    }
}

/// Serves `plot_series` (read) with a result of `bytes` bytes.
struct Big(usize);

impl ToolHost for Big {
    fn tools(&self) -> Vec<String> {
        vec!["plot_series".into()]
    }
    fn call(&self, _tool: &str, _args: Value, _deadline: Instant) -> Result<Value, ToolError> {
        let text: String = (0..self.0)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        Ok(json!({"text": text}))
    }
}

fn in_process_peer(broker: &Mosquitto, id: &str, host: Arc<dyn ToolHost>) -> PeerServer {
    let opts = ServerOptions {
        url: broker.url(),
        id: id.into(),
        prefix: "covo".into(),
        auth: Default::default(),
    };
    PeerServer::start(&opts, host).unwrap()
}

/// A child process killed when dropped (a failing test leaves none behind).
struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A real `covo-peer` process serving `web_fetch` (loopback allowed).
fn covo_peer(broker: &Mosquitto, dir: &std::path::Path, id: &str) -> Proc {
    let cfg = dir.join(format!("{id}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\n[peer]\nid = \"{id}\"\n\
             [peer.backends.web_fetch]\nallow_hosts = [\"127.0.0.1\"]\n",
            broker.url()
        ),
    )
    .unwrap();
    Proc(
        std::process::Command::new(env!("CARGO_BIN_EXE_covo-peer"))
            .arg("--config")
            .arg(&cfg)
            .env("COVO_HOME", dir.join(format!("home-{id}")))
            .env_remove("COVO_CONFIG")
            .env_remove("COVO_MQTT_URL")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// A web page that takes 25 s (the call is still running when its peer dies), and a flag
/// raised when its request arrives.
fn slow_page() -> (String, Arc<AtomicBool>) {
    let asked = Arc::new(AtomicBool::new(false));
    let flag = asked.clone();
    let (web, _seen) = http_fake::serve(move |_| {
        flag.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_secs(25));
        (200, "text/plain", b"late".to_vec())
    });
    (format!("{web}/slow"), asked)
}

/// Waits until the page was asked for: the peer is inside the call.
fn wait_asked(asked: &AtomicBool) {
    let end = Instant::now() + Duration::from_secs(15);
    while !asked.load(Ordering::SeqCst) {
        assert!(Instant::now() < end, "the peer never fetched the page");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_peer_killed_mid_call_fails_the_call_at_once_or_hands_it_to_another_live_peer() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    // The default timeout (30 s), so a read would wait 60 s without the fix.
    let rt = Arc::new(runtime(&broker, None));
    let link = rt.peer_link().unwrap();

    // One peer, killed mid-call: the call fails as soon as its Will arrives.
    let mut a = covo_peer(&broker, dir.path(), "pa");
    assert!(link.wait_for("web_fetch", true, Duration::from_secs(15)));
    let (url, asked) = slow_page();
    let rt2 = rt.clone();
    let caller = std::thread::spawn(move || {
        let r = call(&rt2, "web_fetch", json!({ "url": url }));
        (r, Instant::now())
    });
    wait_asked(&asked);
    let killed = Instant::now();
    a.0.kill().unwrap(); // SIGKILL: no goodbye, the broker sends the Will
    a.0.wait().unwrap();
    let (r, ended) = caller.join().unwrap();
    let took = ended.duration_since(killed);
    eprintln!(
        "a call failed {took:?} after its only peer was killed (timeout 30 s, read: 60 s before)"
    );
    let (k, message) = kind(&r);
    assert_eq!(k, "unavailable", "{message}");
    assert!(message.contains("'pa' went offline"), "{message}");
    assert!(took < Duration::from_secs(5), "took {took:?}");

    // Two peers: the one running the call dies, the live one answers the (read) call.
    let mut a = covo_peer(&broker, dir.path(), "pa2");
    assert!(link.wait_for("web_fetch", true, Duration::from_secs(15)));
    let (url, asked) = slow_page();
    let rt2 = rt.clone();
    let caller = std::thread::spawn(move || {
        let r = call(&rt2, "web_fetch", json!({ "url": url }));
        (r, Instant::now())
    });
    wait_asked(&asked);
    let _b = in_process_peer(&broker, "pb", Arc::new(Quick("pb")));
    let end = Instant::now() + Duration::from_secs(10);
    while !link.peers().contains_key("pb") {
        assert!(Instant::now() < end, "peer pb never came online");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Instant::now();
    a.0.kill().unwrap();
    a.0.wait().unwrap();
    let (r, ended) = caller.join().unwrap();
    let took = ended.duration_since(killed);
    eprintln!("a read was answered by the other live peer {took:?} after its peer was killed");
    assert_eq!(r.unwrap(), json!({"from": "pb"}));
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

/// A peer written from the protocol page alone: it answers with a kind and a message, no
/// `detail`.
fn bare_peer(broker: &Mosquitto, tools: &[&str]) -> Raw {
    let r = raw(broker.port(), "$share/covo-peers/covo/+/peer/req");
    r.client
        .publish(
            "covo/peers/bare/status",
            QoS::AtLeastOnce,
            true,
            json!({"status": "online", "version": 1, "tools": tools}).to_string(),
        )
        .unwrap();
    r
}

fn answer(peer: &Raw, body: Value, chunk: Option<&str>) -> String {
    let m = peer
        .rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a request");
    let req: Value = serde_json::from_slice(&m.payload).unwrap();
    let id = req["call_id"].as_str().unwrap().to_string();
    let mut body = body;
    body["call_id"] = json!(id);
    let mut props = PublishProperties {
        correlation_data: m.correlation.map(Into::into),
        ..Default::default()
    };
    if let Some(c) = chunk {
        props.user_properties.push(("covo-chunk".into(), c.into()));
    }
    peer.client
        .publish_with_properties(
            "covo/gw1/peer/res",
            QoS::AtLeastOnce,
            false,
            body.to_string(),
            props,
        )
        .unwrap();
    req["tool"].as_str().unwrap().to_string()
}

#[test]
fn error_kinds_without_detail_and_the_gateways_own_timeout_keep_their_kind() {
    let broker = Mosquitto::start();
    let peer = bare_peer(&broker, &["web_fetch", "plot_series"]);
    let rt = Arc::new(runtime(&broker, Some(800)));
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("web_fetch", true, Duration::from_secs(10)));
    for (wire, want) in [
        ("invalid_arguments", "invalid_arguments"),
        ("unknown_tool", "unknown_tool"),
        ("unavailable", "unavailable"),
        ("timeout", "timeout"),
        ("failed", "failed"),
    ] {
        let rt2 = rt.clone();
        let caller = std::thread::spawn(move || {
            call(&rt2, "web_fetch", json!({"url": "http://example.invalid/"}))
        });
        answer(
            &peer,
            json!({"ok": false, "error": {"kind": wire, "message": format!("said {wire}")}}),
            None,
        );
        let r = caller.join().unwrap();
        let (k, message) = kind(&r);
        assert_eq!(k, want, "{wire}: {message}");
        if want != "unknown_tool" {
            assert!(message.contains(&format!("said {wire}")), "{message}");
        }
    }
    // Nobody answers: the gateway's own timeout is a `timeout`, after the read's one resend.
    let t = Instant::now();
    let r = call(&rt, "web_fetch", json!({"url": "http://example.invalid/"}));
    let (k, message) = kind(&r);
    assert_eq!(k, "timeout", "{message}");
    assert!(message.contains("within 800 ms"), "{message}");
    assert!(
        t.elapsed() >= Duration::from_millis(1600),
        "read resent once"
    );
}

#[test]
fn responses_are_chunked_to_the_brokers_packet_limit_and_too_large_ones_say_so() {
    // A broker whose packets are much smaller than covo's 512 KiB chunks.
    let broker = Mosquitto::start_with(&Setup {
        max_packet_size: Some(64 * 1024),
        ..Default::default()
    });
    let rt = runtime(&broker, Some(5000));
    let link = rt.peer_link().unwrap();

    // 300 KB fits in a few chunks of the broker's size.
    let peer = in_process_peer(&broker, "big", Arc::new(Big(300_000)));
    assert!(link.wait_for("plot_series", true, Duration::from_secs(10)));
    let args = json!({"series": []});
    let t = Instant::now();
    let v = call(&rt, "plot_series", args.clone()).expect("a 300 KB answer arrives whole");
    assert_eq!(v["text"].as_str().unwrap().len(), 300_000);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    drop(peer);

    // 10 MB would need more than 128 chunks of 64 KiB: the peer says so at once.
    let _peer = in_process_peer(&broker, "huge", Arc::new(Big(10_000_000)));
    assert!(link.wait_for("plot_series", true, Duration::from_secs(10)));
    let t = Instant::now();
    let r = call(&rt, "plot_series", args);
    let (k, message) = kind(&r);
    assert_eq!(k, "failed", "{message}");
    assert!(message.contains("response too large"), "{message}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn a_response_announced_in_more_chunks_than_allowed_fails_the_call_at_once() {
    let broker = Mosquitto::start();
    let peer = bare_peer(&broker, &["web_fetch"]);
    let rt = Arc::new(runtime(&broker, Some(5000)));
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("web_fetch", true, Duration::from_secs(10)));
    let rt2 = rt.clone();
    let t = Instant::now();
    let caller = std::thread::spawn(move || {
        call(&rt2, "web_fetch", json!({"url": "http://example.invalid/"}))
    });
    answer(&peer, json!({"ok": true, "result": "x"}), Some("1/500"));
    let r = caller.join().unwrap();
    let (k, message) = kind(&r);
    assert_eq!(k, "failed", "{message}");
    assert!(message.contains("response too large"), "{message}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn a_peer_that_shuts_down_says_offline_once_and_disconnects_cleanly() {
    let broker = Mosquitto::start();
    let status = raw(broker.port(), "covo/peers/tidy/status");
    let peer = in_process_peer(&broker, "tidy", Arc::new(Quick("tidy")));
    let (birth, _) = status
        .next_on("covo/peers/tidy/status", Duration::from_secs(10))
        .expect("birth");
    assert_eq!(birth["status"], "online");
    peer.shutdown();
    let mut got = Vec::new();
    while let Ok(m) = status.rx.recv_timeout(Duration::from_millis(1500)) {
        got.push(serde_json::from_slice::<Value>(&m.payload).unwrap());
    }
    assert_eq!(got, vec![json!({"status": "offline"})], "no Will after it");
    let log = broker.log();
    let line = log
        .lines()
        .find(|l| l.contains("Client covo-peer-tidy-"))
        .unwrap_or_else(|| panic!("no disconnect logged:\n{log}"));
    assert!(line.ends_with(" disconnected."), "{line}\n{log}");
}

#[test]
fn a_birth_of_another_protocol_version_is_ignored_and_a_link_syncs_once_per_connection() {
    let broker = Mosquitto::start();
    let sync = raw(broker.port(), "covo/gw1/peer/sync/#");
    let other = raw(broker.port(), "unused/#");
    other
        .client
        .publish(
            "covo/peers/future/status",
            QoS::AtLeastOnce,
            true,
            json!({"status": "online", "version": 2, "tools": ["web_fetch"]}).to_string(),
        )
        .unwrap();
    other
        .client
        .publish(
            "covo/peers/unversioned/status",
            QoS::AtLeastOnce,
            true,
            json!({"status": "online", "tools": ["web_search"]}).to_string(),
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let rt = runtime(&broker, None);
    let link = rt.peer_link().unwrap();
    assert!(link.wait_synced(Duration::from_secs(10)));
    assert!(link.peers().is_empty(), "{:?}", link.peers());
    let (k, message) = kind(&call(&rt, "web_fetch", json!({"url": "http://x.invalid/"})));
    assert_eq!(k, "unavailable", "{message}");
    // More local subscriptions later: still the one sync message of this connection.
    let _subs: Vec<_> = (0..3)
        .map(|i| link.subscribe(&format!("extra/{i}")).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let n = sync.rx.try_iter().count();
    assert_eq!(n, 1, "sync publishes on one connection");
}

#[test]
fn covo_peer_stopped_with_sigterm_says_offline_once_and_disconnects_cleanly() {
    let broker = Mosquitto::start();
    let status = raw(broker.port(), "covo/peers/term/status");
    let dir = tempfile::tempdir().unwrap();
    let mut p = covo_peer(&broker, dir.path(), "term");
    let (birth, _) = status
        .next_on("covo/peers/term/status", Duration::from_secs(15))
        .expect("birth");
    assert_eq!(birth["status"], "online");
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &p.0.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(s) = p.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(Instant::now() < end, "covo-peer did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, Some(0));
    let mut got = Vec::new();
    while let Ok(m) = status.rx.recv_timeout(Duration::from_millis(1500)) {
        got.push(serde_json::from_slice::<Value>(&m.payload).unwrap());
    }
    assert_eq!(
        got,
        vec![json!({"status": "offline"})],
        "one offline, no Will"
    );
    let log = broker.log();
    let line = log
        .lines()
        .find(|l| l.contains("Client covo-peer-term-"))
        .unwrap_or_else(|| panic!("no disconnect logged:\n{log}"));
    assert!(line.ends_with(" disconnected."), "{line}\n{log}");
}
