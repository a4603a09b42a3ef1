//! `fleet-load`: a native load generator for the fleet benchmark (tests/fleet/bench.py). It
//! makes swarm calls to real `covo run` gateways the way another gateway (or `covo fleet call`)
//! does, with as many calls in flight as asked, for a while, and prints one JSON line: calls
//! sent, answered ok, answered with an error, unanswered, calls answered ok per second, and the
//! round trip's p50 and p99.
//!
//! With `--peer` it makes peer calls instead, the way a gateway does: each caller is a gateway
//! id of its own, its requests go to `P/<caller>/peer/req` (the peers' shared group takes each
//! once) and their answers come back on `P/<caller>/peer/res`; `--gateways` is not needed.
//!
//! ```text
//! fleet-load --url mqtt://127.0.0.1:1883,mqtt://127.0.0.1:1884 --gateways gw-0001,gw-0002 \
//!     --tool board_info --args '{}' --secs 10 --in-flight 256 --clients 6
//! ```
//!
//! Each of `--clients` MQTT 5 connections (spread over the URLs in turn) is a caller of its own,
//! `load-<run>-<i>`: its calls go to `P/<gateway>/swarm/req/<caller>` with the response topic
//! `P/<caller>/swarm/res/<gateway>` and the call id as correlation data, to gateways picked at
//! random. Each answer sends the next call until `--secs` are over; then it waits up to
//! `--drain-secs` for the calls still out. A Python client with a thread per call tops out far
//! below what the gateways and the broker can do; this one sends from the thread that reads
//! the answers, so the figure is the fleet's.

use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{Client, Event, MqttOptions};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Args {
    urls: Vec<(String, u16)>,
    gateways: Vec<String>,
    tool: String,
    args: Value,
    secs: f64,
    drain_secs: f64,
    in_flight: usize,
    clients: usize,
    prefix: String,
    /// Peer calls (`P/<caller>/peer/req`) instead of swarm calls.
    peer: bool,
}

fn usage(e: &str) -> ! {
    eprintln!("fleet-load: {e}\nusage: fleet-load --url mqtt://H:P[,…] --gateways ID[,…] [--tool T] [--args JSON] [--secs S] [--drain-secs S] [--in-flight N] [--clients N] [--prefix P] [--peer]");
    std::process::exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        urls: Vec::new(),
        gateways: Vec::new(),
        tool: "board_info".into(),
        args: json!({}),
        secs: 10.0,
        drain_secs: 15.0,
        in_flight: 256,
        clients: 6,
        prefix: "covo".into(),
        peer: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--peer" {
            a.peer = true;
            continue;
        }
        let v = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--url" => {
                for u in v.split(',') {
                    let hp = u.trim().trim_start_matches("mqtt://");
                    let (h, p) = hp
                        .rsplit_once(':')
                        .unwrap_or_else(|| usage(&format!("{u}: expected mqtt://HOST:PORT")));
                    let p = p.parse().unwrap_or_else(|_| usage(&format!("{u}: port")));
                    a.urls.push((h.to_string(), p));
                }
            }
            "--gateways" => {
                a.gateways = v
                    .split(',')
                    .filter(|g| !g.is_empty())
                    .map(String::from)
                    .collect()
            }
            "--tool" => a.tool = v,
            "--args" => {
                a.args = serde_json::from_str(&v).unwrap_or_else(|e| usage(&format!("--args: {e}")))
            }
            "--secs" => a.secs = v.parse().unwrap_or_else(|_| usage("--secs")),
            "--drain-secs" => a.drain_secs = v.parse().unwrap_or_else(|_| usage("--drain-secs")),
            "--in-flight" => a.in_flight = v.parse().unwrap_or_else(|_| usage("--in-flight")),
            "--clients" => a.clients = v.parse().unwrap_or_else(|_| usage("--clients")),
            "--prefix" => a.prefix = v,
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    if a.urls.is_empty() || (a.gateways.is_empty() && !a.peer) {
        usage("--url, and --gateways unless --peer, are required");
    }
    if a.clients == 0 || a.in_flight < a.clients {
        usage("--clients must be at least 1 and at most --in-flight");
    }
    a
}

/// What all callers count.
#[derive(Default)]
struct Totals {
    sent: u64,
    ok: u64,
    /// Answered ok before the sending stopped: the rate's numerator.
    ok_in_window: u64,
    errors: u64,
    /// Round trips of the calls answered ok, in microseconds.
    rtts: Vec<u64>,
    /// Error kinds seen, with how many of each.
    kinds: HashMap<String, u64>,
}

/// One caller: its connection, its calls out (call id → gateway and when it was sent).
struct Caller {
    client: Client,
    id: String,
    out: HashMap<String, Instant>,
    n: u64,
}

impl Caller {
    fn send(&mut self, a: &Args, totals: &Mutex<Totals>) {
        self.n += 1;
        let call_id = format!("{}-{}", self.id, self.n);
        let body = json!({"call_id": call_id, "tool": a.tool, "args": a.args,
                          "gateway": self.id, "deadline_ms": 10_000});
        let (topic, response) = if a.peer {
            let base = format!("{}/{}/peer", a.prefix, self.id);
            (format!("{base}/req"), format!("{base}/res"))
        } else {
            let gw = &a.gateways[fastrand::usize(..a.gateways.len())];
            (
                format!("{}/{gw}/swarm/req/{}", a.prefix, self.id),
                format!("{}/{}/swarm/res/{gw}", a.prefix, self.id),
            )
        };
        let props = PublishProperties {
            response_topic: Some(response),
            correlation_data: Some(call_id.clone().into_bytes().into()),
            ..Default::default()
        };
        if self
            .client
            .try_publish_with_properties(topic, QoS::AtLeastOnce, false, body.to_string(), props)
            .is_ok()
        {
            self.out.insert(call_id, Instant::now());
            totals.lock().unwrap().sent += 1;
        }
    }
}

fn main() {
    let a = Arc::new(parse());
    let run = format!("{:x}", fastrand::u32(..));
    let totals = Arc::new(Mutex::new(Totals::default()));
    let (ready_tx, ready) = std::sync::mpsc::channel::<()>();
    let deadline = Arc::new(Mutex::new(None::<Instant>));
    let mut threads = Vec::new();
    for i in 0..a.clients {
        let (a, totals, ready_tx, deadline) = (
            a.clone(),
            totals.clone(),
            ready_tx.clone(),
            deadline.clone(),
        );
        let run = run.clone();
        threads.push(std::thread::spawn(move || {
            let id = format!("load-{run}-{i}");
            let (host, port) = a.urls[i % a.urls.len()].clone();
            let mut o = MqttOptions::new(id.clone(), host, port);
            o.set_max_packet_size(Some(1 << 20));
            o.set_keep_alive(Duration::from_secs(5));
            o.set_outgoing_inflight_upper_limit(u16::MAX);
            let mut net = rumqttc::NetworkOptions::new();
            net.set_tcp_nodelay(true);
            o.set_network_options(net);
            let window = a.in_flight / a.clients + usize::from(i < a.in_flight % a.clients);
            let (client, mut conn) = Client::new(o, window * 2 + 16);
            client
                .subscribe(
                    if a.peer {
                        format!("{}/{id}/peer/res", a.prefix)
                    } else {
                        format!("{}/{id}/swarm/res/+", a.prefix)
                    },
                    QoS::AtLeastOnce,
                )
                .expect("subscribe");
            let mut caller = Caller {
                client,
                id,
                out: HashMap::new(),
                n: 0,
            };
            let mut started = false;
            loop {
                // Blocking: a poll cut short by a timeout while connecting starts the handshake
                // again with the same client id, which a clustered broker refuses while the
                // first is in progress. The keep-alive's pings wake this up during the drain.
                let Ok(ev) = conn.recv() else { return };
                match ev {
                    Ok(Event::Incoming(Packet::SubAck(_))) if !started => {
                        started = true;
                        // Every caller starts together, once every subscription is in place.
                        let _ = ready_tx.send(());
                        while deadline.lock().unwrap().is_none() {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        for _ in 0..window {
                            caller.send(&a, &totals);
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let Some(cid) = p
                            .properties
                            .as_ref()
                            .and_then(|pr| pr.correlation_data.as_ref())
                            .map(|c| String::from_utf8_lossy(c).into_owned())
                        else {
                            continue;
                        };
                        let Some(sent) = caller.out.remove(&cid) else {
                            continue;
                        };
                        let v: Value = serde_json::from_slice(&p.payload).unwrap_or(Value::Null);
                        let end = *deadline.lock().unwrap();
                        let in_window = end.is_some_and(|e| Instant::now() < e);
                        {
                            let mut t = totals.lock().unwrap();
                            if v["ok"] == true {
                                t.ok += 1;
                                t.ok_in_window += u64::from(in_window);
                                t.rtts.push(sent.elapsed().as_micros() as u64);
                            } else {
                                t.errors += 1;
                                let kind = v["error"]["kind"].as_str().unwrap_or("?").to_string();
                                *t.kinds.entry(kind).or_default() += 1;
                            }
                        }
                        if in_window {
                            caller.send(&a, &totals);
                        } else if caller.out.is_empty() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("fleet-load: {}: {e}", caller.id);
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
                let end = *deadline.lock().unwrap();
                let drain = Duration::from_secs_f64(a.drain_secs);
                if end.is_some_and(|e| Instant::now() > e + drain) {
                    return;
                }
            }
        }));
    }
    // Every caller's subscription acknowledged (on a cluster, its route is then on every node).
    drop(ready_tx);
    for _ in 0..a.clients {
        if ready.recv_timeout(Duration::from_secs(60)).is_err() {
            eprintln!("fleet-load: not every caller could connect and subscribe within 60 s");
            std::process::exit(1);
        }
    }
    let t0 = Instant::now();
    *deadline.lock().unwrap() = Some(t0 + Duration::from_secs_f64(a.secs));
    for t in threads {
        let _ = t.join();
    }
    let t = totals.lock().unwrap();
    let mut rtts = t.rtts.clone();
    rtts.sort_unstable();
    let q = |p: f64| {
        rtts.get(((rtts.len().max(1) - 1) as f64 * p) as usize)
            .map_or(0.0, |us| *us as f64 / 1000.0)
    };
    let out = json!({
        "tool": a.tool,
        "gateways": a.gateways.len(),
        "peer_calls": a.peer,
        "clients": a.clients,
        "in_flight": a.in_flight,
        "secs": a.secs,
        "sent": t.sent,
        "ok": t.ok,
        "errors": t.errors,
        "error_kinds": t.kinds,
        "unanswered": t.sent - t.ok - t.errors,
        "calls_per_s": t.ok_in_window as f64 / a.secs,
        "p50_ms": q(0.5),
        "p99_ms": q(0.99),
    });
    println!("{out}");
}
