//! The API-backed peer tools end to end: a gateway (`covo tools call`, one process per call)
//! calls each of them on the real `covo peer` process through a real mosquitto, and the peer
//! talks to web services faked by an HTTP server on 127.0.0.1 (a web page, SearXNG, an
//! OpenAI-compatible API) and to the scripted LLM server for its own model.

use base64::Engine as _;
use covo_tests::broker::Mosquitto;
use covo_tests::http_fake::{self, Seen};
use covo_tests::llm_server::{Reply, ScriptedLlm};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A 1×1 PNG, what the fake images endpoint "generates".
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A short mono 16-bit WAV (silence), what the fake speech endpoint "speaks".
fn wav() -> Vec<u8> {
    let samples = 800u32;
    let data_len = samples * 2;
    let mut w = Vec::new();
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + data_len).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&8000u32.to_le_bytes());
    w.extend_from_slice(&16000u32.to_le_bytes());
    w.extend_from_slice(&2u16.to_le_bytes());
    w.extend_from_slice(&16u16.to_le_bytes());
    w.extend_from_slice(b"data");
    w.extend_from_slice(&data_len.to_le_bytes());
    w.resize(w.len() + data_len as usize, 0);
    w
}

/// A bag-of-words embedding: texts that share words point the same way.
fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 32];
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        if !word.is_empty() {
            let h = word
                .bytes()
                .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
            v[(h % 32) as usize] += 1.0;
        }
    }
    v
}

/// The web services the peer's backends talk to, on 127.0.0.1; it records every request.
struct Cloud {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Cloud {
    fn start() -> Cloud {
        let (base, seen) = http_fake::serve(|req| {
            let json_in: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let json = |v: Value| (200, "application/json", v.to_string().into_bytes());
            match req.path() {
                "/greenhouse.html" => (
                    200,
                    "text/html; charset=utf-8",
                    b"<html><head><title>Greenhouse log</title><script>var x=1;</script></head>\
                      <body><h1>Greenhouse log</h1><p>The fan turns on at <b>28 &deg;C</b>.</p></body></html>"
                        .to_vec(),
                ),
                "/search" => json(json!({"query": "bme280", "results": [
                    {"title": "BME280 datasheet", "url": "https://example.org/bme280.pdf",
                     "content": "Combined humidity, pressure and temperature sensor."},
                    {"title": "BME280 on a Pi", "url": "https://example.org/pi",
                     "content": "Wire it to I2C bus 1 at 0x76."}]})),
                "/v1/images/generations" => json(json!({"created": 1, "data": [
                    {"b64_json": PNG_B64, "revised_prompt": "a small green dot"}]})),
                "/v1/chat/completions" => json(json!({"id": "c1", "object": "chat.completion",
                    "model": json_in["model"], "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "A single green pixel."}}]})),
                "/v1/audio/speech" => (200, "audio/wav", wav()),
                "/v1/audio/transcriptions" => {
                    json(json!({"text": "the fan is on", "language": "english"}))
                }
                "/v1/embeddings" => json(json!({"object": "list", "model": json_in["model"],
                    "data": [{"object": "embedding", "index": 0,
                              "embedding": embed(json_in["input"].as_str().unwrap_or(""))}]})),
                _ => (404, "text/plain", Vec::new()),
            }
        });
        Cloud { base, seen }
    }

    /// The requests to `path` so far.
    fn seen(&self, path: &str) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|s| s.path() == path).cloned().collect()
    }
}

fn covo(cfg: &Path, home: &Path) -> std::process::Command {
    command(covo_tests::bins::covo(), cfg, home)
}

fn covo_peer(cfg: &Path, home: &Path) -> std::process::Command {
    command(env!("CARGO_BIN_EXE_covo-peer").into(), cfg, home)
}

fn command(bin: std::path::PathBuf, cfg: &Path, home: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.arg("--config")
        .arg(cfg)
        .env("COVO_HOME", home)
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL");
    for var in [
        "COVO_LLM_PROVIDER",
        "COVO_LLM_BASE_URL",
        "COVO_LLM_MODEL",
        "COVO_LLM_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ] {
        c.env_remove(var);
    }
    c
}

/// Kills the peer process when the test ends, also when it fails.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_gateway_runs_every_api_backed_peer_tool_on_the_real_covo_peer_over_the_broker() {
    let broker = Mosquitto::start();
    let cloud = Cloud::start();
    let tests = "#[test]\nfn clamps_low() {\n    assert_eq!(clamp(-5, 0, 10), 0);\n}\n";
    let llm = ScriptedLlm::start(vec![Reply::text(format!(
        "```rust\n{tests}```\nOne test for the low edge."
    ))]);
    let dir = tempfile::tempdir().unwrap();
    let peer_cfg = dir.path().join("peer.toml");
    std::fs::write(
        &peer_cfg,
        format!(
            r#"[mqtt]
url = "{broker}"
[peer]
id = "cloud"
[llm]
base_url = "{llm}"
model = "scripted"
max_retries = 0
[peer.backends.web_fetch]
allow_hosts = ["127.0.0.1"]   # the fake cloud is on loopback, refused unless allowed
[peer.backends.web_search]
searxng_url = "{cloud}"
[peer.backends.openai]
base_url = "{cloud}/v1"
api_key = "sk-test"
image_model = "img-test"
vision_model = "vision-test"
speech_model = "speech-test"
transcription_model = "whisper-test"
embedding_model = "embed-test"
"#,
            broker = broker.url(),
            llm = llm.openai_base_url(),
            cloud = cloud.base,
        ),
    )
    .unwrap();
    let _peer = Killed(
        covo_peer(&peer_cfg, &dir.path().join("peer-home"))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let gw_cfg = dir.path().join("gw.toml");
    std::fs::write(
        &gw_cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw-api\"\n",
            broker.url()
        ),
    )
    .unwrap();
    let gw_home = dir.path().join("gw-home");
    let call = |tool: &str, args: Value| -> Value {
        let out = covo(&gw_cfg, &gw_home)
            .args(["tools", "call", tool, &args.to_string()])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        assert_eq!(out.status.code(), Some(0), "{tool}: {v}");
        v
    };
    let artifact_bytes = |v: &Value| -> Vec<u8> {
        let path = v["artifact"]["path"].as_str().unwrap();
        assert!(
            Path::new(path).starts_with(gw_home.join("artifacts")),
            "{v}"
        );
        std::fs::read(path).unwrap()
    };

    // The peer needs a moment to connect and advertise its tools.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let out = covo(&gw_cfg, &gw_home)
            .args(["tools", "describe", "semantic_memory_search"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if v["available"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "the peer never advertised: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }

    // web_fetch: the page as readable text, without the script.
    let page = call(
        "web_fetch",
        json!({"url": format!("{}/greenhouse.html", cloud.base)}),
    );
    let text = page.to_string();
    assert!(text.contains("The fan turns on at"), "{page}");
    assert!(text.contains("28 °C"), "{page}");
    assert!(!text.contains("var x"), "{page}");

    // web_search through SearXNG's JSON API.
    let found = call("web_search", json!({"query": "bme280 wiring", "limit": 2}));
    assert_eq!(found["engine"], "searxng", "{found}");
    assert_eq!(
        found["results"][1]["url"], "https://example.org/pi",
        "{found}"
    );
    assert_eq!(
        found["results"][1]["snippet"],
        "Wire it to I2C bus 1 at 0x76."
    );
    let q = &cloud.seen("/search")[0];
    assert!(
        q.url.contains("q=bme280+wiring") && q.url.contains("format=json"),
        "{q:?}"
    );

    // image_generate: the PNG lands in the gateway's artifacts; image_describe reads it back by id.
    let image = call(
        "image_generate",
        json!({"prompt": "a small green dot", "size": "512x512"}),
    );
    assert_eq!(image["artifact"]["content_type"], "image/png", "{image}");
    assert_eq!(image["revised_prompt"], "a small green dot");
    let png = base64::engine::general_purpose::STANDARD
        .decode(PNG_B64)
        .unwrap();
    assert_eq!(artifact_bytes(&image), png);
    let sent: Value = cloud.seen("/v1/images/generations")[0].json();
    assert_eq!(sent["model"], "img-test");
    assert_eq!(sent["size"], "512x512");
    let described = call(
        "image_describe",
        json!({"image": image["artifact"]["id"], "question": "What is in it?"}),
    );
    assert_eq!(described["text"], "A single green pixel.", "{described}");
    let asked: Value = cloud.seen("/v1/chat/completions")[0].json();
    assert_eq!(asked["model"], "vision-test");
    let parts = &asked["messages"][0]["content"];
    assert_eq!(parts[0]["text"], "What is in it?", "{asked}");
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!("data:image/png;base64,{PNG_B64}"),
        "the artifact went to the vision model as the same bytes"
    );

    // tts_synthesize makes a WAV artifact; transcribe_audio sends those bytes back by id.
    let speech = call(
        "tts_synthesize",
        json!({"text": "the fan is on", "voice": "nova"}),
    );
    assert_eq!(speech["artifact"]["content_type"], "audio/wav", "{speech}");
    assert_eq!(speech["engine"], "api");
    assert_eq!(artifact_bytes(&speech), wav());
    let spoken: Value = cloud.seen("/v1/audio/speech")[0].json();
    assert_eq!(
        (&spoken["model"], &spoken["input"], &spoken["voice"]),
        (
            &json!("speech-test"),
            &json!("the fan is on"),
            &json!("nova")
        )
    );
    let heard = call(
        "transcribe_audio",
        json!({"audio": speech["artifact"]["id"], "language": "en"}),
    );
    assert_eq!(heard["text"], "the fan is on", "{heard}");
    let upload = &cloud.seen("/v1/audio/transcriptions")[0];
    assert!(
        upload
            .header("Content-Type")
            .unwrap_or("")
            .starts_with("multipart/form-data; boundary="),
        "{upload:?}"
    );
    let wav_bytes = wav();
    assert!(
        upload.body.windows(wav_bytes.len()).any(|w| w == wav_bytes),
        "the upload carries the synthesized WAV"
    );
    assert!(String::from_utf8_lossy(&upload.body).contains("whisper-test"));

    // semantic_memory: stored on the peer, found by meaning (here: shared words) in a later call.
    for note in [
        "the greenhouse fan is wired to GPIO 18",
        "the BME280 sits on I2C bus 1 at address 0x76",
        "water the tomatoes every morning",
    ] {
        let stored = call(
            "semantic_memory_store",
            json!({"text": note, "metadata": {"src": "e2e"}}),
        );
        assert!(
            stored["id"].is_number() || stored["id"].is_string(),
            "{stored}"
        );
    }
    let recalled = call(
        "semantic_memory_search",
        json!({"query": "which GPIO is the fan wired to", "limit": 2}),
    );
    assert_eq!(
        recalled["results"][0]["text"], "the greenhouse fan is wired to GPIO 18",
        "{recalled}"
    );
    assert_eq!(recalled["results"][0]["metadata"]["src"], "e2e");
    assert_eq!(recalled["model"], "embed-test");
    assert_eq!(
        cloud.seen("/v1/embeddings").len(),
        4,
        "three stores and one query"
    );
    assert!(dir
        .path()
        .join("peer-home")
        .join("peer/vectors.db")
        .exists());

    // test_generate on the peer's own model.
    let generated = call(
        "test_generate",
        json!({"source": "pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 { x.max(lo).min(hi) }",
               "path": "src/lib.rs", "symbol": "clamp"}),
    );
    assert_eq!(generated["tests"], tests, "{generated}");
    assert_eq!(generated["language"], "rust");
    let user = llm.requests()[0].raw_body.clone();
    assert!(
        user.contains("pub fn clamp"),
        "the source went to the model"
    );

    // Every call reached its backend once: no retries, no duplicates.
    for (path, method) in [
        ("/greenhouse.html", "GET"),
        ("/search", "GET"),
        ("/v1/images/generations", "POST"),
        ("/v1/chat/completions", "POST"),
        ("/v1/audio/speech", "POST"),
        ("/v1/audio/transcriptions", "POST"),
    ] {
        let seen = cloud.seen(path);
        assert_eq!(seen.len(), 1, "{path}: {seen:?}");
        assert_eq!(seen[0].method, method, "{path}");
    }
    assert!(cloud.seen("/v1/images/generations")[0]
        .header("Content-Type")
        .unwrap_or("")
        .starts_with("application/json"));
}
