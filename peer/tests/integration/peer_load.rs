//! The peer link under load against a real mosquitto: two peers in the `$share` group split the
//! work and one dies mid-load; a broker restart under 64 concurrent write calls; forged
//! responses are ignored. Every call completes or fails cleanly, and no call runs twice.

use covo::config::{Config, MqttConfig};
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_peer::server::{PeerServer, ServerOptions};
use covo_tests::broker::Mosquitto;
use covo_wire::host::ToolHost;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Serves `plot_series` (read) and `code_run` (write); records the `code` of every execution.
struct Host {
    runs: Mutex<Vec<String>>,
    delay: Duration,
}

impl ToolHost for Host {
    fn tools(&self) -> Vec<String> {
        vec!["plot_series".into(), "code_run".into()]
    }

    fn call(&self, tool: &str, args: Value, _deadline: Instant) -> Result<Value, ToolError> {
        let key = args["code"]
            .as_str()
            .or(args["title"].as_str())
            .unwrap_or_default()
            .to_string();
        self.runs.lock().unwrap().push(key.clone());
        std::thread::sleep(self.delay);
        Ok(json!({"tool": tool, "key": key}))
    }
}

fn host(delay_ms: u64) -> Arc<Host> {
    Arc::new(Host {
        runs: Mutex::new(Vec::new()),
        delay: Duration::from_millis(delay_ms),
    })
}

fn peer(broker: &Mosquitto, id: &str, h: Arc<Host>) -> PeerServer {
    let opts = ServerOptions {
        url: broker.url(),
        id: id.into(),
        prefix: "covo".into(),
        auth: Default::default(),
    };
    PeerServer::start(&opts, h).unwrap()
}

fn runtime(broker: &Mosquitto, timeout_ms: u64) -> Arc<Runtime> {
    let config = Config {
        mqtt: Some(MqttConfig {
            url: Some(broker.url()),
            gateway_id: Some("load".into()),
            prefix: None,
            call_timeout_ms: Some(timeout_ms),
            ..Default::default()
        }),
        ..Config::default()
    };
    Arc::new(
        Runtime::new(covo::tools::options(config))
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    )
}

/// Runs `n` calls on `threads` threads; returns (ok, clean errors).
fn hammer(
    rt: &Arc<Runtime>,
    tool: &'static str,
    tag: &'static str,
    n: usize,
    threads: usize,
) -> (usize, usize) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let results = Arc::new(Mutex::new((0usize, 0usize)));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (rt, next, results) = (rt.clone(), next.clone(), results.clone());
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= n {
                    return;
                }
                let args = if tool == "code_run" {
                    json!({"language": "shell", "code": format!("{tag}-{i}")})
                } else {
                    json!({"title": format!("{tag}-{i}"), "series": [{"label": "t", "points": [[0, 1.0], [1, 2.0]]}]})
                };
                match rt.call(&Session::new("load", "cli"), Via::Direct, tool, args) {
                    Ok(v) => {
                        assert_eq!(v["key"], format!("{tag}-{i}"), "an answer reached the wrong call");
                        results.lock().unwrap().0 += 1;
                    }
                    Err(CallError::Respond(
                        ToolError::Failed { .. }
                        | ToolError::Unavailable { .. }
                        | ToolError::Timeout { .. },
                    )) => {
                        results.lock().unwrap().1 += 1
                    }
                    Err(other) => panic!("not a clean error: {other:?}"),
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let r = *results.lock().unwrap();
    r
}

fn no_duplicates(runs: &[String]) {
    let unique: HashSet<&String> = runs.iter().collect();
    assert_eq!(unique.len(), runs.len(), "a call ran twice");
}

#[test]
fn two_peers_share_the_load_and_calls_survive_one_dying_mid_load() {
    let broker = Mosquitto::start();
    let (h1, h2) = (host(5), host(5));
    let p1 = peer(&broker, "share-1", h1.clone());
    let _p2 = peer(&broker, "share-2", h2.clone());
    let rt = runtime(&broker, 3000);
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("code_run", true, Duration::from_secs(5)));
    let (ok, _) = hammer(&rt, "code_run", "warm", 100, 8);
    assert_eq!(ok, 100);
    let (a, b) = (h1.runs.lock().unwrap().len(), h2.runs.lock().unwrap().len());
    assert_eq!(a + b, 100);
    assert!(a > 0 && b > 0, "the shared group split the work: {a} / {b}");
    // One peer crashes while calls are in flight: every call still ends cleanly.
    let rt2 = rt.clone();
    let load = std::thread::spawn(move || hammer(&rt2, "code_run", "crash", 200, 8));
    std::thread::sleep(Duration::from_millis(100));
    p1.crash();
    let (ok, failed) = load.join().unwrap();
    assert_eq!(ok + failed, 200);
    assert!(
        ok > 100,
        "the surviving peer took over: {ok} ok, {failed} failed"
    );
    let mut all = h1.runs.lock().unwrap().clone();
    all.extend(h2.runs.lock().unwrap().iter().cloned());
    no_duplicates(&all);
}

#[test]
fn a_broker_restart_under_load_ends_every_call_cleanly_and_runs_none_twice() {
    let mut broker = Mosquitto::start();
    let h = host(20);
    let _p = peer(&broker, "restart-1", h.clone());
    let rt = runtime(&broker, 4000);
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("code_run", true, Duration::from_secs(5)));
    let rt2 = rt.clone();
    let load = std::thread::spawn(move || hammer(&rt2, "code_run", "restart", 64, 64));
    std::thread::sleep(Duration::from_millis(30));
    broker.restart();
    let (ok, failed) = load.join().unwrap();
    assert_eq!(ok + failed, 64);
    let runs = h.runs.lock().unwrap().clone();
    no_duplicates(&runs);
    assert!(runs.len() >= ok, "every answered call ran at the peer");
    eprintln!(
        "broker restart under 64 calls: {ok} completed, {failed} failed cleanly, {} ran",
        runs.len()
    );
}

#[test]
fn forged_responses_are_ignored() {
    use covo_tests::rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
    use covo_tests::rumqttc::v5::mqttbytes::QoS;
    use covo_tests::rumqttc::v5::{Client, Event, MqttOptions};
    let broker = Mosquitto::start();
    let h = host(300);
    let _p = peer(&broker, "real", h.clone());
    let rt = runtime(&broker, 5000);
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("code_run", true, Duration::from_secs(5)));
    // An intruder sees the request (as any client allowed to read it could) and answers first,
    // three ways: no correlation data, mismatched correlation data, and a made-up call.
    let mut o = MqttOptions::new("intruder", "127.0.0.1", broker.port());
    o.set_max_packet_size(Some(1 << 20));
    let (client, mut conn) = Client::new(o, 16);
    client
        .subscribe("covo/load/peer/req", QoS::AtLeastOnce)
        .unwrap();
    let forger = client.clone();
    std::thread::spawn(move || {
        for ev in conn.iter() {
            let Ok(Event::Incoming(Packet::Publish(p))) = ev else {
                continue;
            };
            let req: Value = serde_json::from_slice(&p.payload).unwrap();
            let id = req["call_id"].as_str().unwrap().to_string();
            let forged = |call_id: &str| {
                serde_json::to_vec(
                    &json!({"call_id": call_id, "ok": true, "result": {"key": "forged"}}),
                )
                .unwrap()
            };
            let with = |corr: Option<&str>| PublishProperties {
                correlation_data: corr.map(|c| bytes::Bytes::from(c.as_bytes().to_vec())),
                ..Default::default()
            };
            let topic = "covo/load/peer/res";
            let _ = forger.publish_with_properties(
                topic,
                QoS::AtLeastOnce,
                false,
                forged(&id),
                with(None),
            );
            let _ = forger.publish_with_properties(
                topic,
                QoS::AtLeastOnce,
                false,
                forged(&id),
                with(Some("not-the-id")),
            );
            let _ = forger.publish_with_properties(
                topic,
                QoS::AtLeastOnce,
                false,
                forged("made-up"),
                with(Some("made-up")),
            );
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let v = rt
        .call(
            &Session::new("load", "cli"),
            Via::Direct,
            "code_run",
            json!({"language": "shell", "code": "genuine"}),
        )
        .unwrap();
    assert_eq!(v["key"], "genuine", "the forged answers were ignored: {v}");
}
