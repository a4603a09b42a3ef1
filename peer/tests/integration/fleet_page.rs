//! The fleet page of the real `covo-peer` process against a real mosquitto: the gateways come
//! from retained births, Wills and readings (published by a raw client, and by a real `covo
//! run`), the API needs its bearer token, a Will turns a gateway offline and a cleared status
//! removes it; without `fleet_bind` nothing listens, and a non-loopback bind without a token
//! is a startup error.

use covo_tests::broker::{raw, Mosquitto, Raw};
use covo_tests::rumqttc::v5::mqttbytes::QoS;
use serde_json::{json, Value};
use std::io::{BufRead, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const TOKEN: &str = "fleet-token-0123456789";

/// Kills the process when the test ends, passed or not.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `covo-peer` with `[peer]` `extra`; its stderr lines arrive on the receiver (read on a thread
/// so that the pipe never fills).
fn covo_peer(
    broker: &Mosquitto,
    dir: &std::path::Path,
    extra: &str,
) -> (Proc, mpsc::Receiver<String>) {
    let cfg = dir.join("covo.toml");
    std::fs::write(
        &cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\n[peer]\nid = \"fleet-peer\"\n{extra}",
            broker.url()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_covo-peer"))
        .arg("--config")
        .arg(&cfg)
        .env("COVO_HOME", dir.join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .env_remove("COVO_PEER_FLEET_TOKEN")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            let _ = tx.send(line);
        }
    });
    (Proc(child), rx)
}

/// The address in `covo-peer: fleet page on http://ADDR/`.
fn page_addr(lines: &mpsc::Receiver<String>) -> String {
    let end = Instant::now() + Duration::from_secs(20);
    while let Ok(l) = lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
        if let Some(rest) = l.strip_prefix("covo-peer: fleet page on http://") {
            return rest.trim_end_matches('/').to_string();
        }
    }
    panic!("covo-peer never said where its fleet page is");
}

/// A GET of `path` with the bearer `token`: the status and the body.
fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {out}"));
    (status, body.to_string())
}

fn fleet(addr: &str) -> Value {
    let (status, body) = get(addr, "/api/fleet", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn member<'v>(fleet: &'v Value, id: &str) -> Option<&'v Value> {
    fleet["gateways"]
        .as_array()?
        .iter()
        .find(|g| g["gateway"] == id)
}

/// Polls `/api/fleet` until `pred` holds (at most `secs`); the last answer.
fn fleet_when(addr: &str, secs: u64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let f = fleet(addr);
        if pred(&f) {
            return f;
        }
        assert!(Instant::now() < end, "{what} within {secs} s: {f:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Publishes a retained message and waits until the broker has it (the raw client sees it).
fn retain(raw: &Raw, topic: &str, payload: &str) {
    raw.client
        .publish(topic, QoS::AtLeastOnce, true, payload.to_string())
        .unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while let Ok(m) = raw
        .rx
        .recv_timeout(end.saturating_duration_since(Instant::now()))
    {
        if m.topic == topic && m.payload == payload.as_bytes() {
            return;
        }
    }
    panic!("{topic} never came back from the broker");
}

#[test]
fn the_fleet_page_lists_births_wills_and_readings_live_behind_its_token() {
    let broker = Mosquitto::start();
    let raw = raw(broker.port(), "covo/#");
    // Before the peer starts: a birth, an old Will and a reading, all retained.
    retain(
        &raw,
        "covo/gateways/gw-1/status",
        r#"{"status":"online","version":1,"tools":["board_info","sensor_read"],"software":"covo 0.1.0","board":"pi-zero-2w","since":1765000000}"#,
    );
    retain(&raw, "covo/gateways/gw-2/status", r#"{"status":"offline"}"#);
    retain(
        &raw,
        "covo/gw-1/sensors/bme280",
        r#"{"temperature":{"value":21.5,"unit":"C"},"at":"2026-12-07T17:00:00Z"}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let (peer, lines) = covo_peer(
        &broker,
        dir.path(),
        &format!("fleet_bind = \"127.0.0.1:0\"\nfleet_token = \"{TOKEN}\"\n"),
    );
    let addr = page_addr(&lines);
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(listening_ports(peer.0.id()), vec![port]);

    let f = fleet_when(&addr, 10, "both gateways listed", |f| f["total"] == 2);
    assert_eq!(
        (f["online"].clone(), f["dropped"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(f["max"], 10_000);
    let g1 = &f["gateways"][0];
    assert_eq!(g1["gateway"], "gw-1", "online first: {f:#}");
    assert_eq!(g1["status"], "online");
    assert_eq!(g1["board"], "pi-zero-2w");
    assert_eq!(g1["software"], "covo 0.1.0");
    assert_eq!(g1["since"], 1_765_000_000u64);
    assert_eq!(g1["version"], 1);
    assert_eq!(g1["tools"], json!(["board_info", "sensor_read"]));
    assert_eq!(g1["last_reading_at"], "2026-12-07T17:00:00Z");
    assert_eq!(g1["readings"]["bme280"]["temperature"]["value"], 21.5);
    let g2 = &f["gateways"][1];
    assert_eq!(
        (g2["gateway"].clone(), g2["status"].clone()),
        (json!("gw-2"), json!("offline"))
    );
    assert_eq!(g2["tools"], json!([]));

    // The token: none, a wrong one and one in the query string are all refused.
    let (status, body) = get(&addr, "/api/fleet", None);
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("gw-1"), "{body}");
    assert_eq!(
        get(&addr, "/api/fleet", Some("fleet-token-0123456780")).0,
        401
    );
    assert_eq!(
        get(&addr, &format!("/api/fleet?token={TOKEN}"), None).0,
        401
    );
    assert_eq!(get(&addr, "/nothing-here", Some(TOKEN)).0, 404);
    assert_eq!(get(&addr, "/nothing-here", None).0, 401);
    // The page itself holds no data: it is served without the token, and reads the token from
    // the address's fragment for its own API calls.
    let (status, page) = get(&addr, "/", None);
    assert_eq!(status, 200);
    assert!(page.contains("/api/fleet") && page.contains("location.hash"));
    assert!(page.contains("Bearer") && !page.contains("gw-1"));
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "self-contained"
    );

    // Live: a new reading, gw-1's Will, and gw-2's status cleared.
    raw.client
        .publish(
            "covo/gw-1/sensors/bme280",
            QoS::AtLeastOnce,
            true,
            r#"{"temperature":{"value":22.0,"unit":"C"},"at":"2026-12-07T17:01:00Z"}"#,
        )
        .unwrap();
    fleet_when(&addr, 10, "the new reading", |f| {
        member(f, "gw-1").is_some_and(|g| g["last_reading_at"] == "2026-12-07T17:01:00Z")
    });
    raw.client
        .publish(
            "covo/gateways/gw-1/status",
            QoS::AtLeastOnce,
            true,
            r#"{"status":"offline"}"#,
        )
        .unwrap();
    let f = fleet_when(&addr, 10, "gw-1 offline", |f| {
        member(f, "gw-1").is_some_and(|g| g["status"] == "offline")
    });
    assert_eq!(f["online"], 0);
    let g1 = member(&f, "gw-1").unwrap();
    assert_eq!(
        g1["board"], "pi-zero-2w",
        "the last birth's board stays: {g1}"
    );
    assert_eq!(g1["tools"], json!([]));
    raw.client
        .publish("covo/gateways/gw-2/status", QoS::AtLeastOnce, true, "")
        .unwrap();
    let f = fleet_when(&addr, 10, "gw-2 removed", |f| f["total"] == 1);
    assert!(member(&f, "gw-2").is_none() && member(&f, "gw-1").is_some());
}

#[test]
fn a_real_covo_run_gateway_shows_up_online_with_its_board_and_readings() {
    let broker = Mosquitto::start();
    let peer_dir = tempfile::tempdir().unwrap();
    let (_peer, lines) = covo_peer(&broker, peer_dir.path(), "fleet_bind = \"127.0.0.1:0\"\n");
    let addr = page_addr(&lines);
    let gw_dir = tempfile::tempdir().unwrap();
    let cfg = gw_dir.path().join("covo.toml");
    std::fs::write(
        &cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw-real\"\n[run]\ntelemetry_secs = 3600\n",
            broker.url()
        ),
    )
    .unwrap();
    let gw = Command::new(covo_tests::bins::covo())
        .arg("--config")
        .arg(&cfg)
        .args(["run", "--profile", "full"])
        .current_dir(gw_dir.path())
        .env("COVO_HOME", gw_dir.path().join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("COVO_LLM_BASE_URL")
        .env_remove("COVO_LLM_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let gw = Proc(gw);
    // No token configured on a loopback bind: the API answers without one.
    let (status, body) = get(&addr, "/api/fleet", None);
    assert_eq!(status, 200, "{body}");
    let f = fleet_when(&addr, 30, "gw-real online with its readings", |f| {
        member(f, "gw-real").is_some_and(|g| {
            g["status"] == "online" && g["board"] == "sim" && g["last_reading_at"].is_string()
        })
    });
    let g = member(&f, "gw-real").unwrap();
    assert!(g["software"].as_str().unwrap().starts_with("covo "), "{g}");
    assert!(g["since"].is_u64(), "{g}");
    // Killed: its Will turns it offline on the page.
    drop(gw);
    fleet_when(&addr, 10, "gw-real offline after its Will", |f| {
        member(f, "gw-real").is_some_and(|g| g["status"] == "offline")
    });
}

/// The TCP ports process `pid` listens on (its sockets in the LISTEN state, from /proc).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for row in text.lines().skip(1) {
            let cols: Vec<&str> = row.split_whitespace().collect();
            if cols.len() > 9 && cols[3] == "0A" && inodes.iter().any(|i| i == cols[9]) {
                let port = cols[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}

#[test]
fn without_fleet_bind_nothing_listens() {
    let broker = Mosquitto::start();
    let status = raw(broker.port(), "covo/peers/fleet-peer/status");
    let dir = tempfile::tempdir().unwrap();
    let (peer, lines) = covo_peer(&broker, dir.path(), "");
    let (birth, _) = status
        .next_on("covo/peers/fleet-peer/status", Duration::from_secs(10))
        .expect("the peer's birth");
    assert_eq!(birth["status"], "online");
    assert_eq!(listening_ports(peer.0.id()), Vec::<u16>::new());
    let said: Vec<String> = lines.try_iter().collect();
    assert!(!said.iter().any(|l| l.contains("fleet page")), "{said:?}");
}

#[test]
fn a_non_loopback_fleet_bind_without_a_token_is_a_startup_error() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let (mut peer, lines) = covo_peer(&broker, dir.path(), "fleet_bind = \"0.0.0.0:0\"\n");
    let end = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(s) = peer.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(Instant::now() < end, "covo-peer kept running");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, Some(2));
    let said: Vec<String> = lines.iter().collect();
    let said = said.join("\n");
    assert!(
        said.contains("fleet_bind = \"0.0.0.0:0\" is not a loopback address")
            && said.contains("COVO_PEER_FLEET_TOKEN"),
        "{said}"
    );
    // And it never connected: no birth is retained.
    let status = raw(broker.port(), "covo/peers/fleet-peer/status");
    assert!(status
        .next_on("covo/peers/fleet-peer/status", Duration::from_millis(500))
        .is_none());
}

#[test]
fn a_request_whose_headers_never_finish_is_closed_and_the_page_still_answers() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let (_peer, lines) = covo_peer(&broker, dir.path(), "fleet_bind = \"127.0.0.1:0\"\n");
    let addr = page_addr(&lines);
    // A slowloris: the start of a request, then nothing.
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /api/fleet HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(40)))
        .unwrap();
    let started = Instant::now();
    // Meanwhile others are served.
    assert_eq!(get(&addr, "/api/fleet", None).0, 200);
    let mut buf = Vec::new();
    let _ = slow.read_to_end(&mut buf);
    let waited = started.elapsed();
    assert!(
        // Under the connection's 30 s lifetime with room for a loaded machine: it is the
        // header read timeout (10 s) that closed it.
        waited >= Duration::from_secs(9) && waited < Duration::from_secs(28),
        "closed after {waited:?}, not the header read timeout (10 s)"
    );
    assert!(
        !String::from_utf8_lossy(&buf).contains("200 OK"),
        "{}",
        String::from_utf8_lossy(&buf)
    );
}
