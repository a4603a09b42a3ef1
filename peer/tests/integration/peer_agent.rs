//! The peer's model tools for real: `test_generate` and the `subagent_*` tools of `covo peer`'s
//! backends, against the scripted LLM server over HTTP on 127.0.0.1, with real peer-local tools
//! (`code_run` in its sandbox), the real SQLite store, and (for the last tests) a real mosquitto
//! with `covo peer` in process and as the real binary.

use covo::config::{Config, MqttConfig};
use covo::exec::Session;
use covo::llm::{ChatModel, HttpModel, Provider, ProviderKind};
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_peer::backends::{Backends, PeerModel};
use covo_peer::server::{PeerServer, ServerOptions};
use covo_tests::broker::Mosquitto;
use covo_tests::llm_server::{Reply, ScriptedLlm};
use covo_wire::protocol::{Request, Response, Topics};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The backends for a whole config, `[peer]` typed as `covo-peer` does.
fn for_peer(config: &Config, model: Option<std::sync::Arc<PeerModel>>) -> Backends {
    let peer = covo_peer::config::PeerConfig::from_config(config).unwrap();
    Backends::for_peer(config, &peer, model)
}

fn model(srv: &ScriptedLlm) -> Arc<PeerModel> {
    let provider = Provider {
        kind: ProviderKind::Openai,
        base_url: srv.openai_base_url(),
        model: "scripted".into(),
        api_key: None,
        timeout: Duration::from_secs(20),
        idle_timeout: Duration::from_secs(20),
        max_retries: 0,
        retry_base: Duration::from_millis(1),
        max_tokens: 1024,
        tool_calls: covo::llm::ToolCallMode::Native,
    };
    let chat: Arc<dyn ChatModel> = Arc::new(HttpModel::new(provider).unwrap());
    PeerModel::start(chat, "scripted").unwrap()
}

/// A peer config with its data folder in `home` and these extra TOML lines.
fn config(home: &Path, extra: &str) -> Config {
    let mut c = Config::parse(extra, Path::new("peer.toml")).unwrap();
    c.home = Some(home.to_path_buf());
    c
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(20)
}

fn call(b: &Backends, tool: &str, args: Value) -> Result<Value, covo::error::ToolError> {
    b.call(tool, args, soon())
}

/// Polls `subagent_status` until the state is no longer `running`.
fn wait_done(b: &Backends, handle: &str) -> Value {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let s = call(b, "subagent_status", json!({ "handle": handle })).unwrap();
        if s["state"] != "running" || Instant::now() > until {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn without_a_model_the_model_tools_are_not_advertised() {
    let dir = tempfile::tempdir().unwrap();
    let b = for_peer(&config(dir.path(), ""), None);
    for t in [
        "test_generate",
        "subagent_spawn",
        "subagent_status",
        "subagent_result",
    ] {
        assert!(!b.tools().contains(&t), "{t} listed without a model");
        let err = call(&b, t, json!({"handle": "x"})).unwrap_err();
        assert!(
            matches!(err, covo::error::ToolError::Unavailable { .. }),
            "{err:?}"
        );
    }
    let srv = ScriptedLlm::start(vec![]);
    let b = for_peer(&config(dir.path(), ""), Some(model(&srv)));
    for t in [
        "test_generate",
        "subagent_spawn",
        "subagent_status",
        "subagent_result",
    ] {
        assert!(b.tools().contains(&t), "{t} missing with a model");
    }
}

#[test]
fn test_generate_returns_the_models_code_block_and_sends_the_source_and_symbol() {
    let tests = "def test_clamp_low():\n    assert clamp(-5, 0, 10) == 0\n";
    let srv = ScriptedLlm::start(vec![Reply::text(format!(
        "Here are the tests:\n```python\n{tests}```\nThey cover the low edge."
    ))]);
    let dir = tempfile::tempdir().unwrap();
    let b = for_peer(&config(dir.path(), ""), Some(model(&srv)));
    let source =
        "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n\ndef other():\n    pass\n";
    let out = call(
        &b,
        "test_generate",
        json!({"source": source, "path": "src/mathutil/clamp.py", "symbol": "clamp"}),
    )
    .unwrap();
    assert_eq!(out["tests"], tests, "{out}");
    assert_eq!(out["fenced"], true);
    assert_eq!(out["language"], "python");
    assert_eq!(out["framework"], "pytest");
    assert_eq!(out["model"], "scripted");
    assert!(out["usage"]["output_tokens"].as_u64().unwrap() > 0);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].body;
    assert!(
        body.get("tools").is_none() || body["tools"].as_array().unwrap().is_empty(),
        "no tools: {body}"
    );
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(user.contains("def clamp(x, lo, hi):"), "{user}");
    assert!(user.contains("`clamp`"), "{user}");
    assert!(user.contains("pytest"), "{user}");
    assert!(user.contains("mathutil.clamp"), "the import path: {user}");
}

#[test]
fn test_generate_flags_an_answer_without_code_and_refuses_oversized_source() {
    let srv = ScriptedLlm::start(vec![Reply::text("I cannot test this.")]);
    let dir = tempfile::tempdir().unwrap();
    let b = for_peer(&config(dir.path(), ""), Some(model(&srv)));
    let out = call(
        &b,
        "test_generate",
        json!({"source": "fn f() {}", "path": "src/lib.rs"}),
    )
    .unwrap();
    assert_eq!(out["fenced"], false);
    assert_eq!(out["tests"], "I cannot test this.");
    assert_eq!(out["framework"], "cargo test");
    assert!(out["note"]
        .as_str()
        .unwrap()
        .contains("without a fenced code block"));
    let big = "x".repeat(covo_peer::backends::MAX_SOURCE_BYTES + 1);
    let err = call(&b, "test_generate", json!({"source": big, "path": "a.py"})).unwrap_err();
    assert!(err.to_string().contains("64 KiB"), "{err}");
    let err = call(
        &b,
        "test_generate",
        json!({"source": "x", "path": "Makefile"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("framework"), "{err}");
    assert_eq!(srv.requests().len(), 1, "refused calls reach no model");
}

#[test]
fn a_sub_agent_runs_a_peer_local_tool_is_declined_a_destructive_one_and_answers() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![
            ("code_run", r#"{"language":"shell","code":"echo $((6*7))"}"#),
            ("fs_delete", r#"{"path":"notes.txt"}"#),
        ]),
        Reply::text("The shell says 42."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    // An [mqtt] section pointing nowhere: the sub-agent must not forward its peer tools there.
    let cfg = config(dir.path(), "[mqtt]\nurl = \"mqtt://127.0.0.1:1\"\n");
    let b = for_peer(&cfg, Some(model(&srv)));
    let spawned = call(
        &b,
        "subagent_spawn",
        json!({"task": "compute 6*7 in the sandbox", "toolsets": ["code_exec", "fs"]}),
    )
    .unwrap();
    assert_eq!(spawned["state"], "running");
    assert_eq!(spawned["toolsets"], json!(["code_exec", "fs"]));
    let handle = spawned["handle"].as_str().unwrap().to_string();
    let status = wait_done(&b, &handle);
    assert_eq!(status["state"], "done", "{status}");
    assert_eq!(status["steps"], 2);
    assert_eq!(status["tool_calls"], 2);
    assert_eq!(
        status["last_tool_calls"],
        json!([{"tool": "code_run", "ok": true}, {"tool": "fs_delete", "ok": false}])
    );
    let result = call(&b, "subagent_result", json!({ "handle": handle })).unwrap();
    assert_eq!(result["answer"], "The shell says 42.");
    assert_eq!(result["tool_calls"], json!(["code_run", "fs_delete"]));
    // The tool results the model got: code_run really ran here, fs_delete was declined.
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    let second = &reqs[1].raw_body;
    assert!(second.contains(r#"42\\n"#), "{second}");
    assert!(second.contains("approval_denied"), "{second}");
    // Only the requested toolsets were offered, without hardware.
    let offered: Vec<String> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(offered.contains(&"code_run".to_string()), "{offered:?}");
    assert!(offered.contains(&"fs_read".to_string()), "{offered:?}");
    assert!(!offered
        .iter()
        .any(|t| t.starts_with("gpio") || t.starts_with("subagent")));
    // The state is in the peer's SQLite store.
    let store = Store::open_in(dir.path()).unwrap();
    let row = store.subagent(&handle).unwrap().unwrap();
    assert_eq!(row.answer.as_deref(), Some("The shell says 42."));
    assert!(row.conversation_id.is_some());
}

#[test]
fn a_sub_agent_calls_test_generate_on_the_same_model_from_its_tool_thread() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![(
            "test_generate",
            r#"{"source":"def inc(x):\n    return x + 1\n","path":"inc.py"}"#,
        )]),
        Reply::text("```python\ndef test_inc():\n    assert inc(1) == 2\n```"),
        Reply::text("Drafted test_inc."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let b = for_peer(&config(dir.path(), ""), Some(model(&srv)));
    let spawned = call(
        &b,
        "subagent_spawn",
        json!({"task": "draft tests for inc", "toolsets": ["code_exec"]}),
    )
    .unwrap();
    let handle = spawned["handle"].as_str().unwrap();
    let status = wait_done(&b, handle);
    assert_eq!(status["state"], "done", "{status}");
    assert_eq!(
        status["last_tool_calls"],
        json!([{"tool": "test_generate", "ok": true}])
    );
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs[1].raw_body.contains("def inc(x)"),
        "test_generate's own call"
    );
    assert!(
        reqs[2].raw_body.contains("assert inc(1) == 2"),
        "its result reached the agent"
    );
}

#[test]
fn unknown_and_hardware_toolsets_are_structured_errors_naming_them() {
    let srv = ScriptedLlm::start(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let b = for_peer(&config(dir.path(), ""), Some(model(&srv)));
    let err = call(
        &b,
        "subagent_spawn",
        json!({"task": "t", "toolsets": ["web", "wbe"]}),
    )
    .unwrap_err();
    let j = err.to_json();
    assert_eq!(j["error"]["kind"], "invalid_arguments", "{j}");
    assert_eq!(j["error"]["problems"][0]["path"], "/toolsets/1");
    assert!(err.to_string().contains("unknown toolset 'wbe'"), "{err}");
    let err = call(
        &b,
        "subagent_spawn",
        json!({"task": "t", "toolsets": ["i2c"]}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("'i2c' has no tool"), "{err}");
    assert_eq!(b.subagents_running(), 0);
    assert!(srv.requests().is_empty());
    let err = call(&b, "subagent_status", json!({"handle": "sa-nope"})).unwrap_err();
    assert_eq!(err.to_json()["error"]["kind"], "not_found");
}

#[test]
fn result_while_running_is_an_error_and_the_concurrency_cap_holds() {
    let srv = ScriptedLlm::start(vec![Reply::hang()]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "[peer.backends.subagents]\nmax_concurrent = 1\n",
    );
    let b = for_peer(&cfg, Some(model(&srv)));
    let spawned = call(&b, "subagent_spawn", json!({"task": "wait"})).unwrap();
    assert_eq!(
        spawned["toolsets"],
        json!(["web", "code_exec"]),
        "the default"
    );
    let handle = spawned["handle"].as_str().unwrap().to_string();
    assert!(srv.wait_for_requests(1, Duration::from_secs(10)));
    let err = call(&b, "subagent_result", json!({ "handle": handle })).unwrap_err();
    assert!(err.to_string().contains("still running"), "{err}");
    assert!(err.to_string().contains("subagent_status"), "{err}");
    let status = call(&b, "subagent_status", json!({ "handle": handle })).unwrap();
    assert_eq!(status["state"], "running");
    assert_eq!(status["steps"], 0, "no model answer yet");
    let err = call(&b, "subagent_spawn", json!({"task": "another"})).unwrap_err();
    assert!(err.to_string().contains("already running"), "{err}");
    // Shutting the peer down cancels it.
    drop(b);
    let row = Store::open_in(dir.path())
        .unwrap()
        .subagent(&handle)
        .unwrap()
        .unwrap();
    assert_eq!(row.state.as_str(), "cancelled");
}

#[test]
fn a_sub_agent_running_when_the_peer_died_is_interrupted_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    // What a peer that died mid-run leaves behind: a `running` row.
    Store::open_in(dir.path())
        .unwrap()
        .subagent_insert("sa-dead", "long task", &["web".into()])
        .unwrap();
    let srv = ScriptedLlm::start(vec![]);
    let b = for_peer(&config(dir.path(), ""), Some(model(&srv)));
    let status = call(&b, "subagent_status", json!({"handle": "sa-dead"})).unwrap();
    assert_eq!(status["state"], "interrupted");
    assert!(status["error"].as_str().unwrap().contains("not restarted"));
    let err = call(&b, "subagent_result", json!({"handle": "sa-dead"})).unwrap_err();
    assert!(err.to_string().contains("interrupted"), "{err}");
    assert!(srv.requests().is_empty(), "never re-run");
}

// ---------------------------------------------------------------- through the broker

#[test]
fn a_redelivered_spawn_starts_one_sub_agent() {
    let broker = Mosquitto::start();
    let srv = ScriptedLlm::start(vec![Reply::delay(
        Duration::from_millis(300),
        Reply::text("done once"),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let backends = Arc::new(for_peer(&config(dir.path(), ""), Some(model(&srv))));
    let opts = ServerOptions {
        url: broker.url(),
        id: "p-dedup".into(),
        prefix: "covo".into(),
        auth: Default::default(),
    };
    let server = PeerServer::start(&opts, backends.clone()).unwrap();
    let topics = Topics::new("covo");
    // The birth is retained: once it is seen, the peer's subscription is in place.
    let births = covo_tests::broker::raw(broker.port(), &topics.peer_status("p-dedup"));
    births
        .rx
        .recv_timeout(Duration::from_secs(10))
        .expect("birth");
    let res = topics.response("gwraw");
    let covo_tests::broker::Raw {
        client,
        rx: answers,
    } = covo_tests::broker::raw(broker.port(), &res);
    let req = Request {
        call_id: "spawn-1".into(),
        tool: "subagent_spawn".into(),
        args: json!({"task": "say done"}),
        gateway: "gwraw".into(),
        deadline_ms: 5000,
    };
    let body = serde_json::to_vec(&req).unwrap();
    let props = || covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties {
        response_topic: Some(res.clone()),
        correlation_data: Some(bytes::Bytes::from_static(b"spawn-1")),
        ..Default::default()
    };
    for _ in 0..3 {
        client
            .publish_with_properties(
                topics.request("gwraw"),
                covo_tests::rumqttc::v5::mqttbytes::QoS::AtLeastOnce,
                false,
                body.clone(),
                props(),
            )
            .unwrap();
    }
    let mut handles = Vec::new();
    while let Ok(a) = answers.recv_timeout(Duration::from_secs(2)) {
        let r: Response = serde_json::from_slice(&a.payload).unwrap();
        assert!(r.ok, "{r:?}");
        handles.push(r.result.unwrap()["handle"].as_str().unwrap().to_string());
    }
    assert!(!handles.is_empty());
    assert!(handles.iter().all(|h| *h == handles[0]), "{handles:?}");
    assert_eq!(server.executed(), 1, "one execution for three deliveries");
    let done = wait_done(&backends, &handles[0]);
    assert_eq!(done["state"], "done", "{done}");
    let store = Store::open_in(dir.path()).unwrap();
    let rows: i64 = store
        .conn()
        .query_row("SELECT COUNT(*) FROM subagents", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1, "one sub-agent");
    assert_eq!(srv.requests().len(), 1, "one agent loop called the model");
    server.shutdown();
}

/// Starts the real `covo peer` binary with its model at `srv`.
fn covo_peer(cfg: &Path, home: &Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_covo-peer"))
        .arg("--config")
        .arg(cfg)
        .env("COVO_HOME", home)
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("COVO_LLM_BASE_URL")
        .env_remove("COVO_LLM_MODEL")
        .env_remove("COVO_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_gateway_spawns_polls_and_reads_a_sub_agent_on_the_real_covo_peer_over_the_broker() {
    let broker = Mosquitto::start();
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![(
            "code_run",
            r#"{"language":"shell","code":"echo sub-$((20+22))"}"#,
        )]),
        Reply::text("The sandbox printed sub-42."),
        // The second sub-agent's first model call never answers: the peer is killed meanwhile.
        Reply::hang(),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let peer_cfg = dir.path().join("peer.toml");
    std::fs::write(
        &peer_cfg,
        format!(
            "[mqtt]\nurl = \"{}\"\n[peer]\nid = \"agentpeer\"\n[llm]\nbase_url = \"{}\"\nmodel = \"scripted\"\nmax_retries = 0\n",
            broker.url(),
            srv.openai_base_url()
        ),
    )
    .unwrap();
    let peer_home = dir.path().join("peer-home");
    let mut peer = covo_peer(&peer_cfg, &peer_home);
    let rt = Runtime::new(covo::tools::options(Config {
        mqtt: Some(MqttConfig {
            url: Some(broker.url()),
            gateway_id: Some("gw-agent".into()),
            ..Default::default()
        }),
        home: Some(dir.path().join("gw-home")),
        ..Config::default()
    }))
    .unwrap()
    .with_store(Store::in_memory().unwrap());
    let link = rt.peer_link().unwrap();
    assert!(link.wait_for("subagent_spawn", true, Duration::from_secs(15)));
    assert!(link.wait_for("test_generate", true, Duration::from_secs(1)));
    let session = Session::new("gw", "cli");
    let gw = |tool: &str, args: Value| rt.call(&session, Via::Direct, tool, args);

    let spawned = gw(
        "subagent_spawn",
        json!({"task": "print sub-42 in the sandbox", "toolsets": ["code_exec"]}),
    )
    .unwrap();
    let handle = spawned["handle"].as_str().unwrap().to_string();
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let s = gw("subagent_status", json!({ "handle": handle })).unwrap();
        if s["state"] != "running" || Instant::now() > until {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status["state"], "done", "{status}");
    assert_eq!(
        status["last_tool_calls"],
        json!([{"tool": "code_run", "ok": true}])
    );
    let result = gw("subagent_result", json!({ "handle": handle })).unwrap();
    assert_eq!(result["answer"], "The sandbox printed sub-42.");
    assert!(
        srv.requests()[1].raw_body.contains("sub-42"),
        "code_run ran on the peer"
    );

    // A second sub-agent is running when the peer is killed; after a restart it is interrupted.
    let spawned = gw("subagent_spawn", json!({"task": "wait forever"})).unwrap();
    let stuck = spawned["handle"].as_str().unwrap().to_string();
    assert!(srv.wait_for_requests(3, Duration::from_secs(10)));
    let err = gw("subagent_result", json!({ "handle": stuck })).unwrap_err();
    assert!(err.to_string().contains("still running"), "{err}");
    peer.kill().unwrap();
    peer.wait().unwrap();
    // `wait_for` returns the last value: `false` once the Will took the tools away.
    assert!(!link.wait_for("subagent_status", false, Duration::from_secs(10)));
    let mut peer = covo_peer(&peer_cfg, &peer_home);
    assert!(link.wait_for("subagent_status", true, Duration::from_secs(15)));
    let status = gw("subagent_status", json!({ "handle": stuck })).unwrap();
    assert_eq!(status["state"], "interrupted", "{status}");
    // The finished one survived the restart too.
    let again = gw("subagent_result", json!({ "handle": handle })).unwrap();
    assert_eq!(again["answer"], "The sandbox printed sub-42.");
    assert_eq!(srv.requests().len(), 3, "nothing was re-run");
    let _ = peer.kill();
    let _ = peer.wait();
}
