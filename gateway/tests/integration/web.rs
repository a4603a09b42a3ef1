//! The web dashboard (`[web]`): a real `covo run` on the sim board with the scripted model,
//! its HTTP API driven with reqwest (authentication, bounds, refusals with their rule, the
//! board read back after a switch), and the page itself in a real headless Chromium driven by
//! selenium (`tests/web/dashboard.py`), which saves screenshots under
//! `target/test-artifacts/web/`.
//!
//! Needs Debian's `chromium` and `chromium-driver` and the test venv with selenium
//! (`target/venv-tests`, from `tests/web/requirements.txt`); `tests/run-all.sh` installs them.

use covo_tests::llm_server::{Reply, ScriptedLlm};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "t0ken-for-tests-0123";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The sim board with every sensor sampled each second and the fan's duty capped at 0.5.
fn board_file(dir: &Path) -> PathBuf {
    let sim = std::fs::read_to_string(workspace().join("boards/sim.toml")).unwrap();
    let fast = sim.replace("sample_interval_secs = 60", "sample_interval_secs = 1");
    let capped = fast.replace(
        "pwm = [{ channel = 0, min_hz = 10.0, max_hz = 40000.0, max_duty = 1.0 }]",
        "pwm = [{ channel = 0, min_hz = 10.0, max_hz = 40000.0, max_duty = 0.5 }]",
    );
    assert!(
        fast != sim && capped != fast,
        "boards/sim.toml changed shape"
    );
    let p = dir.join("board.toml");
    std::fs::write(&p, capped).unwrap();
    p
}

struct Daemon {
    child: Option<Child>,
    base: String,
    stderr: Arc<Mutex<String>>,
    /// Kept until the daemon is stopped.
    _dir: tempfile::TempDir,
}

impl Daemon {
    /// `covo run` with `[web]` on 127.0.0.1 (an ephemeral port) and `web` as the rest of the
    /// `[web]` table.
    fn start(web: &str, llm: Option<&ScriptedLlm>) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let board = board_file(dir.path());
        let cfg = format!(
            "board = \"{}\"\n[run]\ntelemetry_secs = 1\n[web]\nbind = \"127.0.0.1:0\"\n{web}\n",
            board.display()
        );
        Self::start_with(dir, &cfg, llm, &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    fn start_with(
        dir: tempfile::TempDir,
        cfg: &str,
        llm: Option<&ScriptedLlm>,
        env: &[(&str, &str)],
    ) -> Result<Daemon, String> {
        let path = dir.path().join("covo.toml");
        std::fs::write(&path, cfg).unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_covo"));
        c.arg("--config")
            .arg(&path)
            .args(["run", "--profile", "full"])
            .current_dir(dir.path())
            .env("COVO_HOME", dir.path().join("home"))
            .env_remove("COVO_CONFIG")
            .env_remove("COVO_MQTT_URL")
            .env_remove("COVO_WEB_TOKEN")
            .env_remove("COVO_LLM_PROVIDER")
            .env_remove("COVO_LLM_BASE_URL")
            .env_remove("COVO_LLM_MODEL")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stderr(Stdio::piped())
            .stdout(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        if let Some(srv) = llm {
            c.env("COVO_LLM_BASE_URL", srv.openai_base_url())
                .env("COVO_LLM_MODEL", "scripted")
                .env("OPENAI_API_KEY", "sk-test");
        }
        let mut child = c.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let (err, pipe) = (stderr.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(url) = line
                    .split_once("dashboard on ")
                    .map(|(_, r)| r.split(' ').next().unwrap_or("").trim_end_matches('/'))
                {
                    let _ = tx.send(url.to_string());
                }
                let mut e = err.lock().unwrap_or_else(|p| p.into_inner());
                e.push_str(&line);
                e.push('\n');
            }
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(base) => Ok(Daemon {
                child: Some(child),
                base,
                stderr,
                _dir: dir,
            }),
            Err(_) => {
                let status = child.wait_timeout_or_kill(Duration::from_secs(5));
                std::thread::sleep(Duration::from_millis(200));
                Err(format!(
                    "no dashboard ({status:?}); stderr:\n{}",
                    stderr.lock().unwrap()
                ))
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

trait WaitKill {
    fn wait_timeout_or_kill(&mut self, t: Duration) -> Option<i32>;
}

impl WaitKill for Child {
    fn wait_timeout_or_kill(&mut self, t: Duration) -> Option<i32> {
        let end = Instant::now() + t;
        loop {
            if let Some(s) = self.try_wait().unwrap() {
                return s.code();
            }
            if Instant::now() > end {
                let _ = self.kill();
                return self.wait().ok().and_then(|s| s.code());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            c.wait_timeout_or_kill(Duration::from_secs(10));
        }
    }
}

/// JSON in and out (this reqwest is built without its `json` and `form` features).
trait JsonBody {
    fn json_body(self, v: &Value) -> Self;
    fn form_body(self, s: &str) -> Self;
}

impl JsonBody for reqwest::RequestBuilder {
    fn json_body(self, v: &Value) -> Self {
        self.header("content-type", "application/json")
            .body(v.to_string())
    }
    fn form_body(self, s: &str) -> Self {
        self.header("content-type", "application/x-www-form-urlencoded")
            .body(s.to_string())
    }
}

trait JsonValue {
    async fn json_value(self) -> Value;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Value {
        let status = self.status();
        let b = self.bytes().await.unwrap();
        serde_json::from_slice(&b)
            .unwrap_or_else(|_| panic!("{status}: not JSON: {}", String::from_utf8_lossy(&b)))
    }
}

fn rt() -> tokio::runtime::Runtime {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A client that connects from 127.0.0.`last`: another address on the same machine.
fn client_from(last: u8) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(std::net::IpAddr::from([127, 0, 0, last]))
        .build()
        .unwrap()
}

/// Reads a live event stream until an event named `name` whose data satisfies `want`.
async fn next_event(
    r: &mut reqwest::Response,
    buf: &mut String,
    name: &str,
    want: impl Fn(&Value) -> bool,
    within: Duration,
) -> Option<Value> {
    let end = tokio::time::Instant::now() + within;
    loop {
        while let Some(i) = buf.find("\n\n") {
            let block: String = buf.drain(..i + 2).collect();
            let mut ev = "message";
            let mut data = String::new();
            for l in block.lines() {
                if let Some(e) = l.strip_prefix("event:") {
                    ev = if e.trim() == name { name } else { "other" };
                } else if let Some(d) = l.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            if ev == name {
                let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                if want(&v) {
                    return Some(v);
                }
            }
        }
        let chunk = tokio::time::timeout_at(end, r.chunk()).await.ok()?.ok()??;
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[test]
fn api_needs_the_token_bounds_every_table_and_shows_refusal_rules() {
    let srv = ScriptedLlm::start(vec![Reply::delay(
        Duration::from_secs(3),
        Reply::text("a slow answer"),
    )]);
    let d = Daemon::start(
        &format!("token = \"{TOKEN}\"\nmax_streams = 2\nmax_sessions = 1\napproval_secs = 30"),
        Some(&srv),
    );
    let http = client();
    let bearer = format!("Bearer {TOKEN}");
    rt().block_on(async {
        // Without the token: the page is the login form, the API a structured 401.
        let r = http.get(d.url("/")).send().await.unwrap();
        assert_eq!(r.status(), 401);
        let page = r.text().await.unwrap();
        assert!(
            page.contains("action=\"/login\"") && !page.contains("chat-form"),
            "{page}"
        );
        for path in [
            "/api/board",
            "/api/sensors",
            "/api/audit",
            "/api/approvals",
            "/app.js",
            "/api/events",
        ] {
            let r = http.get(d.url(path)).send().await.unwrap();
            assert_eq!(r.status(), 401, "{path}");
            let v: Value = r.json_value().await;
            assert_eq!(v["error"]["kind"], "unauthorized", "{path}: {v}");
        }
        let r = http
            .get(d.url("/api/board"))
            .header("authorization", "Bearer wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        let r = http
            .post(d.url("/api/actuate"))
            .json_body(&json!({"device": "relay", "on": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "no control without the token");
        assert_eq!(
            r.headers().get("connection").map(|v| v.as_bytes()),
            Some(&b"close"[..]),
            "a refusal that left the body unread closes its connection"
        );
        let r = http
            .post(d.url("/login"))
            .form_body("token=wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        assert!(r.headers().get("set-cookie").is_none());

        // The login form sets an HttpOnly, SameSite=Strict cookie that then opens everything.
        let r = http
            .post(d.url("/login"))
            .form_body(&format!("token={TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        let cookies: Vec<String> = r
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect();
        let auth = cookies
            .iter()
            .find(|c| c.starts_with("covo_token="))
            .expect("token cookie");
        assert!(
            auth.contains("HttpOnly") && auth.contains("SameSite=Strict"),
            "{auth}"
        );
        let cookie = cookies
            .iter()
            .map(|c| c.split(';').next().unwrap().to_string())
            .collect::<Vec<_>>()
            .join("; ");
        let r = http
            .get(d.url("/"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.text().await.unwrap().contains("chat-form"));
        let r = http
            .get(d.url("/api/board"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);

        // A switch goes through the pipeline as `web`; the board reads the line back.
        let r = http
            .post(d.url("/api/actuate"))
            .header("authorization", &bearer)
            .json_body(&json!({"device": "relay", "on": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = r.json_value().await;
        assert_eq!(v["device"]["state"]["on"], true, "{v}");
        let b: Value = http
            .get(d.url("/api/board"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        let relay = b["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "relay")
            .unwrap();
        assert_eq!(relay["state"]["on"], true, "{b}");

        // A refusal carries its rule, in the answer and in the log.
        let r = http
            .post(d.url("/api/actuate"))
            .header("authorization", &bearer)
            .json_body(&json!({"device": "fan", "duty": 0.9}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422);
        let v: Value = r.json_value().await;
        assert_eq!(v["error"]["kind"], "policy_refused", "{v}");
        assert_eq!(v["error"]["rule"], "pwm.limits", "{v}");
        let log: Value = http
            .get(d.url("/api/audit?limit=10"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        let entries = log["entries"].as_array().unwrap();
        assert_eq!(entries[0]["tool"], "pwm_set", "{log}");
        assert_eq!(entries[0]["via"], "web");
        assert_eq!(entries[0]["rule"], "pwm.limits", "{log}");
        assert_eq!(entries[1]["tool"], "gpio_write");
        assert_eq!(entries[1]["outcome"], "ok");
        // Paged: one row a page, the next page starts below it.
        let p1: Value = http
            .get(d.url("/api/audit?limit=1"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        let next = p1["next_before"].as_i64().expect("a next page");
        let p2: Value = http
            .get(d.url(&format!("/api/audit?limit=1&before={next}")))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        assert_eq!(p2["entries"][0]["tool"], "gpio_write", "{p2}");
        let unknown = http
            .post(d.url("/api/actuate"))
            .header("authorization", &bearer)
            .json_body(&json!({"device": "climate", "on": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(unknown.status(), 400);

        // Request bodies are bounded; bad ones get a structured error.
        let big = "x".repeat(20 * 1024);
        let r = http
            .post(d.url("/api/chat"))
            .header("authorization", &bearer)
            .json_body(&json!({"text": big}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 413);
        let v: Value = r.json_value().await;
        assert_eq!(v["error"]["kind"], "too_large", "{v}");
        let r = http
            .post(d.url("/api/chat"))
            .header("authorization", &bearer)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        let v: Value = r.json_value().await;
        assert_eq!(v["error"]["kind"], "bad_request", "{v}");

        // Live streams are bounded (2 here); samples reach them as they are taken.
        let mut s1 = http
            .get(d.url("/api/events"))
            .header("authorization", &bearer)
            .header("cookie", "covo_sid=aaaa")
            .send()
            .await
            .unwrap();
        assert_eq!(s1.status(), 200);
        let mut b1 = String::new();
        // One address holds at most half the streams (here 1 of 2).
        let r = http
            .get(d.url("/api/events"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 429, "a second stream from one address is refused");
        let v: Value = r.json_value().await;
        assert_eq!(v["error"]["kind"], "busy");
        assert!(v["error"]["message"].as_str().unwrap().contains("this address"), "{v}");
        let mut s2 = client_from(2)
            .get(d.url("/api/events"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(s2.status(), 200);
        let r = client_from(3)
            .get(d.url("/api/events"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503, "a third stream is refused");
        let v: Value = r.json_value().await;
        assert_eq!(v["error"]["kind"], "busy");
        let sample = next_event(
            &mut s1,
            &mut b1,
            "sample",
            |v| v["sensor"] == "climate",
            Duration::from_secs(10),
        )
        .await
        .expect("a climate sample on the live stream");
        assert!(
            sample["readings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["quantity"] == "temperature"),
            "{sample}"
        );
        let sensors: Value = http
            .get(d.url("/api/sensors"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        assert!(
            sensors["readings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["quantity"] == "temperature"),
            "{sensors}"
        );
        let h: Value = http
            .get(d.url("/api/history?sensor=climate&quantity=temperature&hours=1"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        assert!(!h["points"].as_array().unwrap().is_empty(), "{h}");
        let r = http
            .get(d.url("/api/history?sensor=climate&quantity=temperature&hours=100000"))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        // A closed stream frees its place.
        drop(s2.chunk().await);
        drop(s2);
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let r = client_from(2)
                .get(d.url("/api/events"))
                .header("authorization", &bearer)
                .send()
                .await
                .unwrap();
            if r.status() == 200 {
                break;
            }
            assert!(
                Instant::now() < end,
                "the closed stream's place never came back"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // Chat sessions are bounded (1 here): while browser aaaa's turn runs, browser bbbb
        // is refused, and aaaa cannot start a second turn beside the first.
        let chat = |sid: &'static str, text: &'static str| {
            http.post(d.url("/api/chat"))
                .header("authorization", &bearer)
                .header("cookie", format!("covo_sid={sid}"))
                .json_body(&json!({"text": text}))
                .send()
        };
        let r = chat("aaaa", "hello?").await.unwrap();
        assert_eq!(r.status(), 202);
        let r = chat("bbbb", "me too").await.unwrap();
        assert_eq!(r.status(), 503);
        let v: Value = r.json_value().await;
        assert!(
            v["error"]["message"].as_str().unwrap().contains("busy"),
            "{v}"
        );
        let r = chat("aaaa", "again").await.unwrap();
        assert_eq!(r.status(), 409);
        let answer = next_event(
            &mut s1,
            &mut b1,
            "chat",
            |v| v["kind"] == "answer",
            Duration::from_secs(15),
        )
        .await
        .expect("the answer on aaaa's stream");
        assert_eq!(answer["text"], "a slow answer");
        assert_eq!(
            srv.requests().len(),
            1,
            "the refused messages never reached the model"
        );
        // The conversation so far, for a page opened again; another browser has none.
        let h = http.get(d.url("/api/chat")).header("authorization", &bearer).header("cookie", "covo_sid=aaaa").send().await.unwrap().json_value().await;
        assert_eq!(
            h["messages"],
            json!([{"role": "user", "text": "hello?"}, {"role": "assistant", "text": "a slow answer"}]),
            "{h}"
        );
        let h = http.get(d.url("/api/chat")).header("authorization", &bearer).header("cookie", "covo_sid=bbbb").send().await.unwrap().json_value().await;
        assert_eq!(h["messages"], json!([]), "{h}");
    });
    let err = d.stderr.lock().unwrap().clone();
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn covo_run_refuses_a_lan_dashboard_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let e = Daemon::start_with(dir, "[web]\nbind = \"0.0.0.0:0\"\n", None, &[])
        .err()
        .expect("covo run must refuse to start");
    assert!(
        e.contains("not a loopback address") && e.contains("COVO_WEB_TOKEN"),
        "{e}"
    );
    // The token from the environment is enough.
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start_with(
        dir,
        "[web]\nbind = \"0.0.0.0:0\"\n",
        None,
        &[("COVO_WEB_TOKEN", TOKEN)],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let port = d.base.rsplit(':').next().unwrap().to_string();
    let http = client();
    rt().block_on(async {
        let base = format!("http://127.0.0.1:{port}");
        let r = http.get(format!("{base}/api/board")).send().await.unwrap();
        assert_eq!(r.status(), 401);
        let r = http
            .get(format!("{base}/api/board"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    });
}

/// The test venv's Python (selenium), or a loud failure that says how to make it.
fn python() -> PathBuf {
    let p = covo_tests::venv::python(&["selenium"], "tests/web/requirements.txt");
    for (cmd, pkg) in [
        ("chromium", "chromium"),
        ("chromedriver", "chromium-driver"),
    ] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {cmd}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "{cmd} is missing: apt-get install {pkg} (tests/run-all.sh does)"
        );
    }
    p
}

/// A day of readings every five minutes, so the charts have a history to draw, ending near
/// the sim board's own values.
fn seed_history(home: &Path) {
    let store = covo::store::Store::open_in(home).unwrap();
    let now = chrono::Utc::now().timestamp();
    for i in (1..288).rev() {
        let t = now - i * 300;
        let x = std::f64::consts::TAU * i as f64 / 288.0;
        let at = covo::store::fmt_time(chrono::DateTime::from_timestamp(t, 0).unwrap());
        store
            .log_reading(
                "climate",
                &at,
                &[
                    ("temperature", 21.0 + 2.5 * x.sin(), "degC"),
                    ("humidity", 49.2 - 6.0 * x.sin(), "%RH"),
                    ("pressure", 1014.8 - 1.5 * (x / 2.0).sin(), "hPa"),
                ],
            )
            .unwrap();
        store
            .log_reading(
                "light",
                &at,
                &[("illuminance", (358.0 + 300.0 * x.sin()).max(5.0), "lux")],
            )
            .unwrap();
    }
}

#[test]
fn the_dashboard_in_a_real_browser() {
    let py = python();
    let srv = ScriptedLlm::start(vec![
        Reply::text("Hello from the scripted model. The greenhouse is at 21 °C."),
        Reply::tool_calls(vec![("fs_delete", r#"{"path":"old-notes.txt"}"#)]),
        Reply::text("Deleted old-notes.txt."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    seed_history(&home);
    std::fs::create_dir_all(home.join("workspace")).unwrap();
    let doomed = home.join("workspace/old-notes.txt");
    std::fs::write(&doomed, "old").unwrap();
    let board = board_file(dir.path());
    let cfg = format!(
        "board = \"{}\"\n[run]\ntelemetry_secs = 1\n[web]\nbind = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n",
        board.display()
    );
    let d = Daemon::start_with(dir, &cfg, Some(&srv), &[]).unwrap_or_else(|e| panic!("{e}"));
    let shots = workspace().join("target/test-artifacts/web");
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new(&py)
        .arg(workspace().join("tests/web/dashboard.py"))
        .args(["--url", &d.base, "--token", TOKEN, "--shots"])
        .arg(&shots)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "dashboard.py failed:\n{stdout}\n{stderr}\ncovo run:\n{}",
        d.stderr.lock().unwrap()
    );
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|_| panic!("no JSON report:\n{stdout}\n{stderr}"));
    assert!(report["chart_points"].as_u64().unwrap() > 50, "{report}");

    // What the page showed is what the board and the pipeline did: the relay line reads
    // back high, the approved delete ran, and the log has both, as `web`.
    rt().block_on(async {
        let http = client();
        let b: Value = http
            .get(d.url("/api/board"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        let relay = b["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "relay")
            .unwrap();
        assert_eq!(relay["state"]["on"], true, "{b}");
        let log: Value = http
            .get(d.url("/api/audit?limit=50"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        let entries = log["entries"].as_array().unwrap();
        let find = |tool: &str| entries.iter().find(|e| e["tool"] == tool).cloned();
        let w = find("gpio_write").expect("the switch's call");
        assert_eq!(
            (w["via"].as_str(), w["outcome"].as_str()),
            (Some("web"), Some("ok")),
            "{w}"
        );
        let del = find("fs_delete").expect("the approved call");
        assert_eq!(del["outcome"], "ok", "{del}");
    });
    assert!(!doomed.exists(), "the approved fs_delete removed the file");
    assert_eq!(srv.remaining(), 0, "every scripted reply was used");
    for f in ["login.png", "dashboard.png", "approval.png", "phone.png"] {
        let p = shots.join(f);
        assert!(
            p.is_file() && std::fs::metadata(&p).unwrap().len() > 5000,
            "{}",
            p.display()
        );
    }
}

/// Open descriptors of a process.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

#[test]
fn floods_of_idle_slowloris_and_streaming_connections_do_not_keep_a_client_out() {
    // Loopback without a token, so anyone on the machine may connect and open streams.
    let d = Daemon::start("", None);
    let pid = d.child.as_ref().unwrap().id();
    let addr: std::net::SocketAddr = d.base.trim_start_matches("http://").parse().unwrap();
    // The test holds thousands of sockets itself.
    let budget = covo::fds::raise().unwrap_or(u64::MAX);
    let idle_n = usize::try_from(budget.saturating_sub(1200))
        .unwrap_or(2000)
        .min(2000);
    assert!(
        idle_n >= 500,
        "the open-file limit is too low for this test: {budget}"
    );
    let max_conns = covo::web::DEFAULT_MAX_STREAMS + covo::web::EXTRA_CONNECTIONS;
    let per_client = covo::web::streams_per_client(covo::web::DEFAULT_MAX_STREAMS);
    let http = client();
    // A second client address on loopback: the legitimate page.
    let page = client_from(2);
    rt().block_on(async {
        let board = |c: reqwest::Client| {
            let url = d.url("/api/board");
            async move {
                let t = Instant::now();
                let r = tokio::time::timeout(Duration::from_secs(5), c.get(url).send())
                    .await
                    .expect("/api/board answered during the attack")
                    .unwrap();
                assert_eq!(r.status(), 200);
                t.elapsed()
            }
        };
        // 1. Idle sockets that never send a byte, far more than the listener holds.
        let mut idle = Vec::new();
        for _ in 0..idle_n {
            idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        let t_idle = board(http.clone()).await;
        // 2. Slowloris: 100 connections sending their headers a byte a second.
        let stop = tokio_util::sync::CancellationToken::new();
        let mut slow = Vec::new();
        for _ in 0..100 {
            let stop = stop.clone();
            slow.push(tokio::spawn(async move {
                let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
                    return;
                };
                for b in
                    b"GET /api/board HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaa"
                {
                    if s.write_all(&[*b]).await.is_err() {
                        return;
                    }
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t_slow = board(http.clone()).await;
        // 3. 500 event streams asked for and held open from one address: that address gets
        // its share of streams, the rest are refused and closed in time.
        let mut streams = Vec::new();
        for _ in 0..500 {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .await
                .unwrap();
            streams.push(s);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t_streams = board(http.clone()).await;
        // The page on another address still gets its live stream and the board.
        let mut ev = tokio::time::timeout(
            Duration::from_secs(5),
            page.get(d.url("/api/events")).send(),
        )
        .await
        .expect("a page's stream opened during the attack")
        .unwrap();
        assert_eq!(ev.status(), 200);
        let mut buf = String::new();
        assert!(
            next_event(&mut ev, &mut buf, "hello", |_| true, Duration::from_secs(5))
                .await
                .is_some(),
            "no hello on the page's stream"
        );
        let t_page = board(page.clone()).await;
        // Descriptors stay far from the budget: the held connections are bounded.
        let fds = open_fds(pid);
        assert!(
            fds < max_conns + 64,
            "covo holds {fds} descriptors under {} hostile sockets",
            idle_n + 600
        );
        // The streams the attacker's address holds.
        let mut held = 0;
        for s in &mut streams {
            let mut b = [0u8; 512];
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(20), s.read(&mut b)).await
            {
                if String::from_utf8_lossy(&b[..n]).starts_with("HTTP/1.1 200") {
                    held += 1;
                }
            }
        }
        assert!(held <= per_client, "one address holds {held} streams");
        stop.cancel();
        eprintln!(
            "/api/board answered in {t_idle:?} ({idle_n} idle sockets), {t_slow:?} (100 \
             slowloris), {t_streams:?} (500 streams), {t_page:?} (page's own); {fds} fds, \
             {held} streams held by the attacker"
        );
    });
}

#[test]
fn a_denied_or_unanswered_destructive_call_does_not_run() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("fs_delete", r#"{"path":"keep.txt"}"#)]),
        Reply::text("Not deleted."),
        Reply::tool_calls(vec![("fs_delete", r#"{"path":"keep.txt"}"#)]),
        Reply::text("Still not deleted."),
    ]);
    let d = Daemon::start("approval_secs = 2", Some(&srv));
    let http = client();
    rt().block_on(async {
        let mut s = http
            .get(d.url("/api/events"))
            .header("cookie", "covo_sid=cccc")
            .send()
            .await
            .unwrap();
        let mut buf = String::new();
        let chat = |text: &'static str| {
            http.post(d.url("/api/chat"))
                .header("cookie", "covo_sid=cccc")
                .json_body(&json!({"text": text}))
                .send()
        };
        // Denied on the page.
        assert_eq!(chat("delete keep.txt").await.unwrap().status(), 202);
        next_event(
            &mut s,
            &mut buf,
            "approvals",
            |_| true,
            Duration::from_secs(10),
        )
        .await
        .expect("the approval is announced");
        let list = http
            .get(d.url("/api/approvals"))
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        let p = &list["pending"][0];
        assert_eq!(p["tool"], "fs_delete", "{list}");
        assert_eq!(p["args"]["path"], "keep.txt");
        let id = p["id"].as_str().unwrap().to_string();
        let r = http
            .post(d.url(&format!("/api/approvals/{id}")))
            .json_body(&json!({"approve": false}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let again = http
            .post(d.url(&format!("/api/approvals/{id}")))
            .json_body(&json!({"approve": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            again.status(),
            404,
            "an answered request cannot be answered again"
        );
        let result = next_event(
            &mut s,
            &mut buf,
            "chat",
            |v| v["kind"] == "result",
            Duration::from_secs(10),
        )
        .await
        .expect("the call's result");
        assert_eq!(result["ok"], false, "{result}");
        assert_eq!(result["error"]["kind"], "approval_denied", "{result}");
        assert!(
            result["error"]["message"]
                .as_str()
                .unwrap()
                .contains("denied on the dashboard"),
            "{result}"
        );
        let answer = next_event(
            &mut s,
            &mut buf,
            "chat",
            |v| v["kind"] == "answer",
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(answer["text"], "Not deleted.");

        // Unanswered: declined when approval_secs (2 s) pass.
        let t = Instant::now();
        assert_eq!(chat("delete it anyway").await.unwrap().status(), 202);
        let result = next_event(
            &mut s,
            &mut buf,
            "chat",
            |v| v["kind"] == "result",
            Duration::from_secs(10),
        )
        .await
        .expect("the call's result");
        assert!(t.elapsed() >= Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(result["error"]["kind"], "approval_denied", "{result}");
        assert!(
            result["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nobody answered"),
            "{result}"
        );
        let list = http
            .get(d.url("/api/approvals"))
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        assert_eq!(
            list["pending"],
            json!([]),
            "the expired request left the table"
        );
        let log = http
            .get(d.url("/api/audit"))
            .send()
            .await
            .unwrap()
            .json_value()
            .await;
        let denied: Vec<_> = log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["tool"] == "fs_delete")
            .collect();
        assert_eq!(denied.len(), 2, "{log}");
        assert!(
            denied
                .iter()
                .all(|e| e["outcome"] == "approval_denied" && e["via"] == "web"),
            "{log}"
        );
    });
}

#[test]
fn without_a_token_only_requests_to_loopback_names_are_served() {
    // DNS rebinding: a page on another name that resolves to 127.0.0.1 sends that name.
    let d = Daemon::start("", None);
    let http = client();
    rt().block_on(async {
        let ok = http.get(d.url("/api/board")).send().await.unwrap();
        assert_eq!(ok.status(), 200);
        for path in ["/", "/api/board"] {
            let r = http
                .get(d.url(path))
                .header("host", "attacker.example:8080")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 403, "{path}");
            let v = r.json_value().await;
            assert_eq!(v["error"]["kind"], "forbidden", "{v}");
        }
        let r = http
            .get(d.url("/api/board"))
            .header("host", "localhost")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    });
}

#[test]
fn a_page_on_another_site_cannot_change_anything_even_on_loopback_without_a_token() {
    let srv = ScriptedLlm::start(vec![Reply::text("Hello from the board.")]);
    let d = Daemon::start("", Some(&srv));
    let http = client();
    let own = d.base.clone();
    rt().block_on(async {
        // The dashboard's own page starts a conversation (its Origin is the dashboard's).
        let r = http
            .post(d.url("/api/chat"))
            .header("origin", &own)
            .header("cookie", "covo_sid=abcd")
            .json_body(&json!({"text": "hi"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        let history = || async {
            http.get(d.url("/api/chat"))
                .header("cookie", "covo_sid=abcd")
                .send()
                .await
                .unwrap()
                .json_value()
                .await["messages"]
                .clone()
        };
        let end = Instant::now() + Duration::from_secs(20);
        while history().await.as_array().unwrap().len() < 2 {
            assert!(Instant::now() < end, "the turn never answered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let before = history().await;
        let relay = || async {
            let b = http
                .get(d.url("/api/board"))
                .send()
                .await
                .unwrap()
                .json_value()
                .await;
            b.to_string()
        };
        let board_before = relay().await;

        // Another site's page: the simple requests a browser sends without asking (text/plain,
        // a form, multipart), and what a fetch would send, with its Origin or only the
        // browser's Sec-Fetch-Site. None changes anything.
        // (path, content type, body, Origin, Sec-Fetch-Site)
        type Attack<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, Option<&'a str>);
        let attacks: Vec<Attack> = vec![
            (
                "/api/chat/new",
                "text/plain",
                "x",
                Some("http://evil.example"),
                None,
            ),
            (
                "/api/chat/new",
                "application/x-www-form-urlencoded",
                "a=1",
                Some("http://evil.example"),
                None,
            ),
            (
                "/api/chat/new",
                "multipart/form-data; boundary=b",
                "--b--\r\n",
                Some("null"),
                None,
            ),
            ("/api/chat/new", "text/plain", "x", None, Some("cross-site")),
            (
                "/api/chat",
                "application/json",
                r#"{"text":"wipe it"}"#,
                Some("http://evil.example"),
                None,
            ),
            (
                "/api/actuate",
                "application/json",
                r#"{"device":"relay","on":true}"#,
                Some("http://attacker.example:8080"),
                None,
            ),
            (
                "/logout",
                "application/x-www-form-urlencoded",
                "",
                Some("http://evil.example"),
                None,
            ),
        ];
        for (path, ct, body, origin, site) in attacks {
            let mut req = http
                .post(d.url(path))
                .header("cookie", "covo_sid=abcd")
                .header("content-type", ct)
                .body(body.to_string());
            if let Some(o) = origin {
                req = req.header("origin", o);
            }
            if let Some(s) = site {
                req = req.header("sec-fetch-site", s);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 403, "{path} {ct} {origin:?} {site:?}");
            let v = r.json_value().await;
            assert_eq!(v["error"]["kind"], "forbidden", "{v}");
        }
        assert_eq!(history().await, before, "the conversation is intact");
        assert_eq!(relay().await, board_before, "the board is unchanged");
        assert_eq!(
            srv.requests().len(),
            1,
            "no refused message reached the model"
        );

        // The page itself may start over.
        let r = http
            .post(d.url("/api/chat/new"))
            .header("origin", &own)
            .header("cookie", "covo_sid=abcd")
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        assert_eq!(history().await, json!([]));
    });
}

#[test]
fn wrong_tokens_are_slowed_alike_on_every_path_and_the_right_one_is_not() {
    let d = Daemon::start("token = \"a-long-enough-token-0123\"", None);
    let http = client();
    rt().block_on(async {
        let guesses: usize = 24;
        let t0 = Instant::now();
        let attack = futures_util::future::join_all((0..guesses).map(|i| {
            let r = if i % 2 == 0 {
                http.get(d.url("/api/board"))
                    .header("authorization", format!("Bearer guess-{i}"))
            } else {
                http.get(d.url("/api/board"))
                    .header("cookie", format!("covo_token={}", "ab".repeat(8)))
            };
            async move {
                let r = r.send().await.unwrap();
                assert_eq!(r.status(), 401);
                Instant::now()
            }
        }));
        let legit = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let r = http
                .get(d.url("/api/board"))
                .header("authorization", "Bearer a-long-enough-token-0123")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            Instant::now()
        };
        let (ends, legit_end) = tokio::join!(attack, legit);
        let last = ends.into_iter().max().unwrap();
        // At most FAILED_AT_ONCE wrong tokens are answered per FAILED_LOGIN_DELAY, whatever
        // the path: 24 guesses take at least 6 rounds of 250 ms.
        let rounds = guesses.div_ceil(covo::web::FAILED_AT_ONCE) as u32;
        assert!(
            last - t0 >= covo::web::FAILED_LOGIN_DELAY * rounds - Duration::from_millis(50),
            "{guesses} guesses answered in {:?}",
            last - t0
        );
        // The right token never queued behind them.
        assert!(legit_end < last, "the right token waited for the guesses");
        // A request with no token at all is not a guess: answered without the delay queue.
        let r = http.get(d.url("/api/board")).send().await.unwrap();
        assert_eq!(r.status(), 401);
    });
}

#[test]
fn one_address_guessing_does_not_slow_another_addresses_mistyped_token() {
    let d = Daemon::start("token = \"a-long-enough-token-0123\"", None);
    let http = client();
    let other = client_from(2);
    rt().block_on(async {
        // 16 guesses at once from 127.0.0.1, half as bearer tokens and half through the form.
        let guesses: u32 = 16;
        let t0 = Instant::now();
        let attack = futures_util::future::join_all((0..guesses).map(|i| {
            let r = if i % 2 == 0 {
                http.get(d.url("/api/board"))
                    .header("authorization", format!("Bearer guess-{i}"))
            } else {
                http.post(d.url("/login"))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(format!("token=guess-{i}"))
            };
            async move {
                let r = r.send().await.unwrap();
                assert_eq!(r.status(), 401);
                Instant::now()
            }
        }));
        // Meanwhile a user on another address mistypes, then types it right.
        let user = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let t = Instant::now();
            let r = other
                .get(d.url("/api/board"))
                .header("authorization", "Bearer a-long-enough-token-0124")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 401);
            let mistyped = t.elapsed();
            let r = other
                .get(d.url("/api/board"))
                .header("authorization", "Bearer a-long-enough-token-0123")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            (mistyped, Instant::now())
        };
        let (ends, (mistyped, user_end)) = tokio::join!(attack, user);
        let last = ends.into_iter().max().unwrap();
        // One address's guesses are answered one at a time: 16 take 16 delays.
        assert!(
            last - t0 >= covo::web::FAILED_LOGIN_DELAY * guesses - Duration::from_millis(50),
            "{guesses} guesses from one address answered in {:?}",
            last - t0
        );
        // The other address paid one delay, not the guesser's queue, and was done long before.
        assert!(mistyped >= covo::web::FAILED_LOGIN_DELAY - Duration::from_millis(20));
        assert!(
            user_end < last && mistyped < covo::web::FAILED_LOGIN_DELAY * (guesses / 2),
            "the mistyped token took {mistyped:?} behind the guesser"
        );
    });
}
