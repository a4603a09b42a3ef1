//! Peer link targets, measured in one run against a real mosquitto on loopback:
//! - a remote tool round trip vs a raw MQTT ping-pong between two clients on the same broker,
//!   both QoS 1 with TCP_NODELAY (target ratio ≤ 1.5);
//! - throughput with 64 calls in flight (target ≥ 5,000 calls/s).
//!
//! Run with `cargo bench -p covo-gateway --bench peer` (needs mosquitto).

use covo::config::{Config, MqttConfig};
use covo::error::ToolError;
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_peer::server::{PeerServer, ServerOptions};
use covo_tests::broker::{raw, Mosquitto, Raw};
use covo_tests::rumqttc::v5::mqttbytes::QoS;
use covo_wire::host::ToolHost;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Echo;

impl ToolHost for Echo {
    fn tools(&self) -> Vec<String> {
        vec!["plot_series".into()]
    }
    fn call(&self, _tool: &str, args: Value, _deadline: Instant) -> Result<Value, ToolError> {
        Ok(args)
    }
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let broker = Mosquitto::start();
    let n = 900;

    // Raw ping-pong: A publishes on ping, B echoes on pong.
    let Raw {
        client: a,
        rx: a_rx,
    } = raw(broker.port(), "bench/pong");
    let Raw {
        client: b,
        rx: b_rx,
    } = raw(broker.port(), "bench/ping");
    std::thread::spawn(move || {
        for msg in b_rx {
            let _ = b.publish("bench/pong", QoS::AtLeastOnce, false, msg.payload);
        }
    });
    let ping = |i: usize| {
        let t = Instant::now();
        a.publish("bench/ping", QoS::AtLeastOnce, false, format!("{i}"))
            .unwrap();
        a_rx.recv_timeout(Duration::from_secs(5)).expect("pong");
        t.elapsed().as_secs_f64() * 1e6
    };

    // The same through the peer link and the gateway's pipeline.
    let _peer = PeerServer::start(
        &ServerOptions {
            url: broker.url(),
            id: "bench-peer".into(),
            prefix: "covo".into(),
            auth: Default::default(),
        },
        Arc::new(Echo),
    )
    .unwrap();
    let config = Config {
        mqtt: Some(MqttConfig {
            url: Some(broker.url()),
            gateway_id: Some("bench".into()),
            prefix: None,
            call_timeout_ms: Some(10_000),
            ..Default::default()
        }),
        ..Config::default()
    };
    let rt = Arc::new(
        Runtime::new(covo::tools::options(config))
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    );
    assert!(rt
        .peer_link()
        .unwrap()
        .wait_for("plot_series", true, Duration::from_secs(5)));
    let args = json!({"series": [{"label": "t", "points": [[0, 1.0], [1, 2.0]]}]});
    let s = Session::new("bench", "cli");
    let link = rt.peer_link().unwrap();
    let bare = || {
        let t = Instant::now();
        link.call("plot_series", args.clone(), true).unwrap();
        t.elapsed().as_secs_f64() * 1e6
    };
    let call = || {
        let t = Instant::now();
        rt.call(&s, Via::Direct, "plot_series", args.clone())
            .unwrap();
        t.elapsed().as_secs_f64() * 1e6
    };
    // Warm both paths, then alternate them call by call, so that whatever the noisy machine
    // does at a given moment (another process, a thread moved to the other core) slows both
    // alike. The figure is the ratio of the p50s; the ratios of nine consecutive blocks show
    // how much it moves within the run.
    for i in 0..50 {
        ping(i);
        call();
        bare();
    }
    let rounds = 9;
    let (mut raw_all, mut remote_all, mut bare_all) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        raw_all.push(ping(i));
        remote_all.push(call());
        bare_all.push(bare());
    }
    let block = n / rounds;
    let ratios: Vec<f64> = (0..rounds)
        .map(|r| {
            let span = r * block..(r + 1) * block;
            p50(remote_all[span.clone()].to_vec()) / p50(raw_all[span].to_vec())
        })
        .collect();
    let (raw_p50, remote_p50) = (p50(raw_all), p50(remote_all));
    let ratio = remote_p50 / raw_p50;
    println!(
        "QoS 1 round trip p50: raw ping-pong {raw_p50:.0} µs, remote tool call {remote_p50:.0} µs: ratio {ratio:.2} (target ≤ 1.5); per-block ratios {:?}",
        ratios.iter().map(|r| (r * 100.0).round() / 100.0).collect::<Vec<_>>(),
    );
    println!(
        "of which the MQTT link alone (PeerLink::call, no pipeline): p50 {:.0} µs",
        p50(bare_all)
    );

    // Throughput with 64 calls in flight.
    let total = 10_000;
    let next = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let workers: Vec<_> = (0..64)
        .map(|_| {
            let (rt, next, args) = (rt.clone(), next.clone(), args.clone());
            std::thread::spawn(move || {
                let s = Session::new("bench", "cli");
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    rt.call(&s, Via::Direct, "plot_series", args.clone())
                        .unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "throughput with 64 in flight: {total} calls in {secs:.2} s = {:.0} calls/s (target ≥ 5,000)",
        total as f64 / secs
    );
}
