//! covo against a real local inference server: llama.cpp's `llama-server` with a real GGUF model
//! on 127.0.0.1, built once per machine by `tests/llama/setup.sh` (`tests/run-all.sh` runs it and
//! sets `COVO_LLAMA_SERVER` and `COVO_LLAMA_MODEL`; any GGUF path works). The model (SmolLM2-135M
//! by default) does not choose tools wisely; what is checked is the real protocol: the server's
//! chat template drops the tools and covo notices, constrained replies are always valid calls
//! or answers, and `covo chat`, `covo run` over MQTT, `covo doctor` and a scheduled prompt all
//! finish against it.

use covo::agent::scheduler;
use covo::config::{Config, LlmConfig};
use covo::exec::Session;
use covo::llm::{ChatModel, HttpModel, Provider, ToolCallMode, Wire};
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_tests::broker::{raw, Mosquitto};
use covo_tests::rumqttc::v5::mqttbytes::QoS;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running `llama-server`, killed on drop.
struct Llama {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Llama {
    fn start(dir: &Path) -> Llama {
        let need = |k: &str| {
            std::env::var(k).unwrap_or_else(|_| {
                panic!("{k} is not set: run `bash tests/llama/setup.sh` (tests/run-all.sh does) and point {k} at what it built")
            })
        };
        let server = need("COVO_LLAMA_SERVER");
        let model = need("COVO_LLAMA_MODEL");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.join("llama.log");
        let child = Command::new(&server)
            .args([
                "-m",
                &model,
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            // One thread: llama.cpp's threads meet at a spinning barrier for every op, so two
            // servers (this suite runs two tests at once) or any other load on a 2-core machine
            // starve each other; a loaded CI run measured 2.5 s per token with `-t 2`. One
            // thread per server cannot wait on a descheduled partner: 27 ms per token here with
            // two busy loops beside it.
            .args(["--jinja", "-np", "1", "-t", "1", "-c", "8192", "--no-webui"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {server}: {e}"));
        let mut l = Llama { child, port, log };
        let end = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(s) = l.child.try_wait().unwrap() {
                panic!("llama-server exited ({s}): {}", l.log_text());
            }
            if let Ok(r) = ureq_get(&format!("{}/health", l.root())) {
                if r.contains("ok") {
                    break;
                }
            }
            assert!(
                Instant::now() < end,
                "llama-server not healthy in 120 s: {}",
                l.log_text()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        l
    }

    fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log_text(&self) -> String {
        let t = std::fs::read_to_string(&self.log).unwrap_or_default();
        t.chars()
            .rev()
            .take(3000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    }
}

/// A GET over plain HTTP/1.0 on loopback, for the health check (no client crate needed).
fn ureq_get(url: &str) -> std::io::Result<String> {
    http10(url, None, Duration::from_secs(5))
}

/// One HTTP/1.0 request on loopback: a GET, or a POST of a JSON `body`. The whole response.
fn http10(url: &str, body: Option<&str>, timeout: Duration) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(host)?;
    s.set_read_timeout(Some(timeout))?;
    match body {
        None => write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n")?,
        Some(b) => write!(
            s,
            "POST {path} HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
            b.len()
        )?,
    }
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

fn covo(dir: &Path, cfg: &str) -> Command {
    let path = dir.join("covo.toml");
    std::fs::write(&path, cfg).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_covo"));
    c.arg("--config")
        .arg(&path)
        .current_dir(dir)
        .env("COVO_HOME", dir.join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("COVO_LLM_BASE_URL")
        .env_remove("COVO_LLM_MODEL")
        .env_remove("COVO_LLM_TOOL_CALLS")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("COVO_LOG");
    c
}

/// The `[llm]` section for the server; `mode` is `tool_calls`.
fn llm_section(l: &Llama, mode: &str) -> String {
    format!(
        "[llm]\nbase_url = \"{}/v1\"\nmodel = \"smollm2\"\nmax_tokens = 96\ntool_calls = \"{mode}\"\nidle_timeout_secs = 300\ntimeout_secs = 600\n[agent]\nmax_steps = 3\n",
        l.root()
    )
}

/// One row of the audit log: how the call came, the tool, its outcome and its arguments.
#[derive(Debug)]
struct Audited {
    via: String,
    tool: String,
    outcome: String,
    args: String,
}

/// Every call the agent made, from the audit log, oldest first.
fn audited(home: &Path) -> Vec<Audited> {
    let store = Store::open_in(home).unwrap();
    let conn = store.conn();
    let mut st = conn
        .prepare("SELECT via, tool, outcome, args FROM audit ORDER BY id")
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok(Audited {
                via: r.get(0)?,
                tool: r.get(1)?,
                outcome: r.get(2)?,
                args: r.get(3)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows
}

/// What a constrained reply may never produce: a call to no tool, unreadable JSON, or arguments
/// outside the tool's schema. A grammar holds a reply to the schema only; what no schema can
/// state is answered like any other mistake and is not the grammar's failure: a rule such as
/// todo_write's "at most one item in progress" (`invalid_arguments`), or `tool_describe` /
/// `tool_call` naming a tool that does not exist (`unknown_tool` on a real tool's row). A
/// `tool_call`'s inner call has a row of its own (via `tool_call`, logged before the outer
/// one): naming no tool, it is the model's word passed on by `tool_call`, and it counts only
/// when the next row is that `tool_call`, with valid arguments that name it. Every other
/// refused row is checked against its tool's own schema here.
fn assert_no_bad_calls(calls: &[Audited]) {
    let valid = |tool: &str, args: &str| {
        let Some(spec) = covo_core::catalog::all().find(|t| t.name == tool) else {
            return false;
        };
        let schema = jsonschema::validator_for(&spec.params_json()).unwrap();
        let args: serde_json::Value = serde_json::from_str(args).unwrap_or_default();
        schema.is_valid(&args)
    };
    for (i, c) in calls.iter().enumerate() {
        let bad = match c.outcome.as_str() {
            "malformed_json" => true,
            "unknown_tool" | "invalid_arguments" if c.via == "tool_call" => {
                let outer = calls.get(i + 1).filter(|o| {
                    o.tool == "tool_call"
                        && o.via != "tool_call"
                        && valid("tool_call", &o.args)
                        && serde_json::from_str::<serde_json::Value>(&o.args)
                            .is_ok_and(|a| a["name"] == c.tool.as_str())
                });
                outer.is_none()
            }
            "unknown_tool" | "invalid_arguments" => !valid(&c.tool, &c.args),
            _ => false,
        };
        assert!(
            !bad,
            "a constrained call failed validation: {} → {} ({calls:#?})",
            c.tool, c.outcome
        );
    }
}

fn row(via: &str, tool: &str, outcome: &str, args: &str) -> Audited {
    Audited {
        via: via.into(),
        tool: tool.into(),
        outcome: outcome.into(),
        args: args.into(),
    }
}

/// The judge itself, on rows a real run produced (SmolLM2 called `tool_call` for a tool named
/// `tool_response`, from the tags its results came in) and on rows no constrained reply can
/// produce.
#[test]
fn the_judge_of_constrained_calls_passes_the_models_mistakes_and_fails_the_grammars() {
    let inner = r#"{"query":"True","description":"True"}"#;
    let outer = r#"{"name":"tool_response","arguments":{"query":"True","description":"True"}}"#;
    let run = vec![
        row("direct", "conversation_search", "ok", r#"{"query":"True"}"#),
        row("tool_call", "tool_response", "unknown_tool", inner),
        row("direct", "tool_call", "unknown_tool", outer),
        row(
            "direct",
            "tool_describe",
            "unknown_tool",
            r#"{"name":"nope"}"#,
        ),
    ];
    assert_no_bad_calls(&run);
    let bad = |rows: Vec<Audited>| std::panic::catch_unwind(|| assert_no_bad_calls(&rows)).is_err();
    // A direct call to no tool: the grammar names only the tools it was sent.
    assert!(bad(vec![row(
        "direct",
        "tool_response",
        "unknown_tool",
        inner
    )]));
    // An inner row whose outer `tool_call` is missing, or names another tool.
    assert!(bad(vec![row(
        "tool_call",
        "tool_response",
        "unknown_tool",
        inner
    )]));
    assert!(bad(vec![
        row("tool_call", "tool_response", "unknown_tool", inner),
        row(
            "direct",
            "tool_call",
            "unknown_tool",
            r#"{"name":"other","arguments":{}}"#
        ),
    ]));
    // Arguments outside a real tool's schema, and JSON that did not parse.
    assert!(bad(vec![row(
        "direct",
        "tool_describe",
        "invalid_arguments",
        "{}"
    )]));
    assert!(bad(vec![row(
        "direct",
        "sensor_read",
        "malformed_json",
        "{"
    )]));
}

#[test]
fn a_real_llama_cpp_server_drives_chat_run_doctor_and_a_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let l = Llama::start(dir.path());

    // 1. `auto` finds out that SmolLM2's chat template drops tools (llama.cpp's
    //    /apply-template) and holds replies to the tools' schemas instead; doctor says so.
    let out = covo(dir.path(), &llm_section(&l, "auto"))
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let model_line = text
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("model:"))
        .unwrap_or_else(|| panic!("no model line: {text}"));
    assert!(
        model_line.contains("tool calls: constrained")
            && model_line.contains("leaves the tools out"),
        "{model_line}"
    );
    // Held to the schema, the model either answers or calls the tool it was offered (it
    // samples, so which one varies from run to run); the check itself never fails.
    assert!(!model_line.starts_with("FAIL"), "{model_line}");

    // 2. No model configured: doctor finds the server and names its model.
    let out = covo(dir.path(), "")
        .env("COVO_LLM_LOCAL", format!("127.0.0.1:{}", l.port))
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("found llama.cpp at {}/v1 with", l.root())),
        "{text}"
    );

    // 3. `covo chat -m` in constrained mode: the turn ends in an answer or the step budget,
    //    never in an error; every call it made named a tool it was sent, with valid arguments.
    let home = dir.path().join("home");
    let out = covo(dir.path(), &llm_section(&l, "constrained"))
        .args([
            "chat",
            "-m",
            "How warm is it? Read the sensor called climate.",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() || stderr.contains("step budget"),
        "exit {:?}\nstdout: {stdout}\nstderr: {stderr}\nserver: {}",
        out.status,
        l.log_text()
    );
    assert_no_bad_calls(&audited(&home));

    // 4. `covo run` over a real broker: a chat message in, the model's answer out.
    let broker = Mosquitto::start();
    let out_topic = raw(broker.port(), "covo/gw1/chat/out");
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let cfg = format!(
        "{}[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n",
        llm_section(&l, "constrained"),
        broker.url()
    );
    let mut daemon = covo(dir.path(), &cfg)
        .args(["run", "--profile", "edge"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let (birth, _) = status
            .next_on(
                "covo/gateways/gw1/status",
                end.saturating_duration_since(Instant::now()),
            )
            .expect("the daemon's birth");
        if birth["status"] == "online" {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    out_topic
        .client
        .publish(
            "covo/gw1/chat/in",
            QoS::AtLeastOnce,
            false,
            json!({"text": "Say hello.", "session": "llama"}).to_string(),
        )
        .unwrap();
    // As long as the daemon's own `timeout_secs`: a loaded machine is slow, not wrong.
    let answer = out_topic.next_on("covo/gw1/chat/out", Duration::from_secs(600));
    let _ = daemon.kill();
    let _ = daemon.wait();
    let (answer, _) =
        answer.unwrap_or_else(|| panic!("no answer over MQTT; server: {}", l.log_text()));
    assert_eq!(answer["session"], "llama", "{answer}");
    let said = answer["text"].as_str().unwrap_or_default();
    assert!(
        answer["error"] != true || said.contains("step budget"),
        "{answer}"
    );

    // 5. A scheduled prompt, run by the scheduler with the real model.
    let mut cfg = Config {
        llm: LlmConfig {
            base_url: Some(format!("{}/v1", l.root())),
            model: Some("smollm2".into()),
            max_tokens: Some(64),
            tool_calls: Some(ToolCallMode::Auto),
            ..Default::default()
        },
        ..Default::default()
    };
    cfg.agent.max_steps = Some(2);
    let mut opts = covo::tools::options(cfg.clone());
    opts.profile = Some("edge".into());
    let rt = Arc::new(
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    );
    let s = Session::new("sched", "cli");
    rt.call(
        &s,
        Via::Direct,
        "schedule_create",
        json!({"at": "in 1s", "prompt": "give a one-line morning report"}),
    )
    .unwrap();
    let due = scheduler::claim_due(&rt, chrono::Utc::now() + chrono::Duration::minutes(1)).unwrap();
    assert_eq!(due.len(), 1);
    let m = Arc::new(HttpModel::new(Provider::resolve(&cfg.llm, &|_| None).unwrap()).unwrap());
    let model: Arc<dyn ChatModel> = m.clone();
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(scheduler::run_job(&rt, Some(model), &due[0]));
    assert!(!report.trim().is_empty());
    assert!(
        !report.contains("malformed") && !report.contains("timed out"),
        "{report}"
    );
    let (wire, why) = m.tool_wire().unwrap();
    assert_eq!(wire, Wire::Constrained, "{why:?}");
}

/// The grammar covo writes (`covo::llm::gbnf`) for the whole catalog, parsed and run by the real
/// server: sampled hot, with many seeds, every reply is an answer or a call to a catalog tool
/// whose arguments validate against its schema (numbers in range included, which llama.cpp's
/// own JSON-schema grammar does not hold). A reply cut by `max_tokens` is the one exception.
#[test]
fn covos_grammar_holds_a_real_model_to_every_tools_schema() {
    let dir = tempfile::tempdir().unwrap();
    let l = Llama::start(dir.path());
    let tools: Vec<&'static covo_core::spec::ToolSpec> = covo_core::catalog::all().collect();
    let grammar = covo::llm::gbnf::reply_grammar(&tools);
    let prompts = [
        "Set PWM channel 0 to a duty of 10.",
        "Read register 0x76 on I2C bus 1, 300 bytes.",
        "Blink GPIO pin 99 for -4 seconds.",
        "Turn the relay on.",
        "What's the temperature?",
        "Search for a tool that plays a sound.",
    ];
    let (mut calls, mut answers, mut cut) = (0, 0, 0);
    for (i, prompt) in prompts.iter().cycle().take(30).enumerate() {
        let body = json!({
            "messages": [
                {"role": "system", "content": "Reply with one JSON object: {\"answer\": …} or {\"name\": tool, \"arguments\": {…}}."},
                {"role": "user", "content": prompt},
            ],
            "grammar": grammar,
            "max_tokens": 160,
            "temperature": 1.5,
            "seed": i,
        });
        let text = ureq_post(
            &format!("{}/v1/chat/completions", l.root()),
            &body.to_string(),
        )
        .unwrap_or_else(|e| panic!("the server refused covo's grammar: {e}; {}", l.log_text()));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let choice = &v["choices"][0];
        let content = choice["message"]["content"].as_str().unwrap_or_default();
        if choice["finish_reason"] == "length" {
            cut += 1;
            continue;
        }
        let reply: serde_json::Value = serde_json::from_str(content)
            .unwrap_or_else(|e| panic!("not JSON under the grammar ({e}): {content}"));
        if reply.get("answer").is_some() {
            answers += 1;
            continue;
        }
        let name = reply["name"].as_str().unwrap();
        let spec = tools.iter().find(|t| t.name == name).unwrap();
        let schema = spec.params_json();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&reply["arguments"])
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{content}: {errors:?}");
        calls += 1;
    }
    eprintln!(
        "under covo's grammar: {calls} valid calls, {answers} answers, {cut} cut by max_tokens"
    );
    assert!(
        calls > 0,
        "the model made no call in 30 replies: {calls}/{answers}/{cut}"
    );
}

/// A POST whose answer must be 200: its body.
fn ureq_post(url: &str, body: &str) -> std::io::Result<String> {
    let out = http10(url, Some(body), Duration::from_secs(300))?;
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    if !head.contains(" 200 ") {
        return Err(std::io::Error::other(format!("{head}\n{body}")));
    }
    Ok(body.to_string())
}
