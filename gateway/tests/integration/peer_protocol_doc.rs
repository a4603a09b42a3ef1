//! `docs/peer-protocol.md` is enough to write a peer: its example peer, taken verbatim from the
//! page, runs under python3 (paho-mqtt ≥ 2) against a real mosquitto, and the real `covo`
//! calls a tool through it — a small answer, and one larger than the broker's packet limit,
//! which must arrive in chunks. The page's list of peer tools is the catalog's.

use covo_tests::broker::{raw, Mosquitto, Setup};
use covo_tests::http_fake;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const DOC: &str = include_str!("../../../docs/peer-protocol.md");

/// The first ```python block after the "Example peer" heading.
fn example() -> String {
    let from = DOC
        .find("## Example peer")
        .expect("the page has an example peer");
    let rest = &DOC[from..];
    let start = rest.find("```python\n").expect("a python block") + "```python\n".len();
    let len = rest[start..].find("\n```").expect("the block ends");
    rest[start..start + len + 1].to_string()
}

struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn python_has_paho() {
    let ok = Command::new("python3")
        .args(["-c", "import paho.mqtt.client, paho.mqtt.reasoncodes"])
        .status()
        .unwrap_or_else(|e| panic!("python3 is missing ({e}); tests/run-all.sh installs it"));
    assert!(
        ok.success(),
        "paho-mqtt is missing: `python3 -m pip install 'paho-mqtt>=2,<3'` (tests/run-all.sh does this)"
    );
}

#[test]
fn the_example_peer_from_the_doc_serves_a_tool_to_covo_with_chunked_answers() {
    python_has_paho();
    // A broker whose packets are smaller than the big answer: the peer must chunk to fit.
    let broker = Mosquitto::start_with(&Setup {
        max_packet_size: Some(200 * 1024),
        ..Default::default()
    });
    let big: String = "lorem ipsum dolor sit amet ".repeat(30_000); // ~810 KB
    let big_page = format!("<html><body><p>{big}</p></body></html>").into_bytes();
    let (web, _seen) = http_fake::serve(move |s| {
        if s.path() == "/big" {
            (200, "text/html", big_page.clone())
        } else {
            (
                200,
                "text/html",
                b"<html><body><h1>Hello</h1><p>from the doc's peer</p></body></html>".to_vec(),
            )
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("peer.py");
    std::fs::write(&script, example()).unwrap();
    let status = raw(broker.port(), "covo/peers/py-peer/status");
    let mut peer = Peer(
        Command::new("python3")
            .arg(&script)
            .env("MQTT_HOST", "127.0.0.1")
            .env("MQTT_PORT", broker.port().to_string())
            .env("NO_PROXY", "*")
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("all_proxy")
            .env_remove("ALL_PROXY")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (birth, retained) = status
        .next_on("covo/peers/py-peer/status", Duration::from_secs(15))
        .expect("the example peer's birth");
    assert!(!retained);
    assert_eq!(
        birth,
        serde_json::json!({"status": "online", "version": 1, "tools": ["web_fetch"]})
    );

    let cfg = dir.path().join("covo.toml");
    std::fs::write(
        &cfg,
        format!("[mqtt]\nurl = \"{}\"\ngateway_id = \"doc\"\n", broker.url()),
    )
    .unwrap();
    let call = |args: serde_json::Value| {
        let out = Command::new(env!("CARGO_BIN_EXE_covo"))
            .arg("--config")
            .arg(&cfg)
            .args(["tools", "call", "web_fetch"])
            .arg(args.to_string())
            .env("COVO_HOME", dir.path().join("home"))
            .env_remove("COVO_CONFIG")
            .env_remove("COVO_MQTT_URL")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "covo: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v = call(serde_json::json!({"url": format!("{web}/hello")}));
    assert_eq!(v["text"], "Hello from the doc's peer", "{v}");

    // About 810 KB of text: over the broker's 200 KiB packets, so it comes in chunks.
    let v = call(serde_json::json!({"url": format!("{web}/big"), "max_chars": 1_000_000}));
    let text = v["text"].as_str().unwrap();
    assert_eq!(text, big.trim_end(), "the big answer arrived whole");

    // SIGTERM: it leaves with its Will, so the gateway sees it go.
    let _ = Command::new("kill")
        .args(["-TERM", &peer.0.id().to_string()])
        .status();
    let (gone, _) = status
        .next_on("covo/peers/py-peer/status", Duration::from_secs(10))
        .expect("offline");
    assert_eq!(gone, serde_json::json!({"status": "offline"}));
    let end = std::time::Instant::now() + Duration::from_secs(5);
    while peer.0.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < end,
            "the example peer did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut err = String::new();
    use std::io::Read;
    let _ = peer.0.stderr.take().unwrap().read_to_string(&mut err);
    assert!(err.is_empty(), "the example peer wrote errors: {err}");
}

#[test]
fn the_docs_list_of_peer_tools_is_the_catalogs() {
    let from = DOC.find("today:").expect("the list of peer tools");
    let to = from + DOC[from..].find(')').unwrap();
    let mut listed: Vec<&str> = DOC[from..to].split('`').skip(1).step_by(2).collect();
    listed.sort();
    let mut peer: Vec<&str> = covo_core::catalog::all()
        .filter(|t| t.runs == covo_core::spec::Runs::Peer)
        .map(|t| t.name)
        .collect();
    peer.sort();
    assert_eq!(listed, peer);
}
