//! External MCP servers as covo tools (`[mcp.servers.NAME]`), against real third-party servers
//! over stdio: `mcp-server-time` (PyPI, in the venv `tests/run-all.sh` makes) and
//! `@modelcontextprotocol/server-everything` (npm, `npm ci` in `tests/mcp`). A missing part
//! fails the test with the command that installs it.

use covo::agent::{Agent, Observer, ToolResult};
use covo::config::{Config, McpServerConfig};
use covo::exec::Session;
use covo::llm::{ChatModel, HttpModel, Provider, ProviderKind};
use covo::plan::Selection;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use covo_tests::llm_server::{Reply, ScriptedLlm};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A program of the tests' venv (`covo_tests::venv`).
fn venv_bin(name: &str) -> PathBuf {
    covo_tests::venv::bin(name, "tests/mcp/requirements.txt")
}

/// `mcp-server-time` (PyPI) from the tests' venv.
fn time_server() -> McpServerConfig {
    McpServerConfig {
        command: Some(venv_bin("mcp-server-time").display().to_string()),
        args: vec!["--local-timezone".into(), "UTC".into()],
        ..Default::default()
    }
}

/// `tests/mcp/changing_server.py` on the official Python SDK: a tool list that changes at run
/// time and a destructive tool.
fn changing_server() -> McpServerConfig {
    McpServerConfig {
        command: Some(venv_bin("python").display().to_string()),
        args: vec![workspace()
            .join("tests/mcp/changing_server.py")
            .display()
            .to_string()],
        ..Default::default()
    }
}

/// `@modelcontextprotocol/server-everything` from `tests/mcp/node_modules`.
fn everything_server() -> McpServerConfig {
    let js = workspace()
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        js.is_file(),
        "{} is missing: run tests/run-all.sh, or npm ci --prefix tests/mcp",
        js.display()
    );
    assert!(
        std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "node is missing: install Node.js (apt-get install nodejs)"
    );
    McpServerConfig {
        command: Some("node".into()),
        args: vec![js.display().to_string(), "stdio".into()],
        ..Default::default()
    }
}

struct Fixture {
    home: tempfile::TempDir,
    config: Config,
}

impl Fixture {
    fn new(servers: Vec<(&str, McpServerConfig)>) -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.mcp.servers = servers
            .into_iter()
            .map(|(n, s)| (n.to_string(), s))
            .collect::<BTreeMap<_, _>>();
        Fixture { home, config }
    }

    fn runtime(&self, profile: &str) -> Arc<Runtime> {
        let mut opts = covo::tools::options(self.config.clone());
        opts.profile = Some(profile.into());
        opts.home = Some(self.home.path().to_path_buf());
        Arc::new(
            Runtime::new(opts)
                .unwrap()
                .with_store(Store::in_memory().unwrap()),
        )
    }
}

fn session() -> Session {
    Session::new("mcp-test", "cli")
}

fn search(rt: &Runtime, query: &str) -> Vec<String> {
    let v = rt
        .call(
            &session(),
            Via::Direct,
            "tool_search",
            json!({"query": query, "limit": 20}),
        )
        .unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

fn tool_call(rt: &Runtime, name: &str, arguments: Value) -> Result<Value, String> {
    rt.call(
        &session(),
        Via::Direct,
        "tool_call",
        json!({"name": name, "arguments": arguments}),
    )
    .map_err(|e| e.to_string())
}

#[test]
fn time_tools_are_searchable_deferred_and_called_through_tool_call_and_the_pipeline() {
    let f = Fixture::new(vec![("time", time_server())]);
    let rt = f.runtime("full");
    let found = search(&rt, "current time in a timezone");
    assert!(
        found.iter().any(|n| n == "time__get_current_time"),
        "{found:?}"
    );
    // Deferred: not in the gateway platform's payload, but in its own toolset's.
    let shown: Vec<&str> = rt
        .model_call(&session())
        .tools
        .iter()
        .map(|t| t.name)
        .collect();
    assert!(!shown.iter().any(|n| n.starts_with("time__")), "{shown:?}");
    let own = rt
        .plan(&Selection::Toolsets(vec!["mcp_time".into()]))
        .unwrap();
    let names: Vec<&str> = own.visible.iter().map(|t| t.name).collect();
    assert!(names.contains(&"time__convert_time"), "{names:?}");
    let spec = rt.lookup("time__get_current_time").unwrap();
    assert_eq!(spec.toolset, "mcp_time");
    assert_eq!(spec.effect, covo::spec::Effect::Read, "readOnlyHint");

    let out = tool_call(
        &rt,
        "time__get_current_time",
        json!({"timezone": "Europe/Paris"}),
    )
    .unwrap();
    let text = out["text"].as_str().unwrap();
    assert!(text.contains("Europe/Paris"), "{out}");
    let answer: Value = serde_json::from_str(text).unwrap();
    assert!(
        answer["datetime"].as_str().unwrap().starts_with("20"),
        "{answer}"
    );

    // The server's inputSchema is checked by covo's pipeline before the server sees the call.
    let err = tool_call(&rt, "time__get_current_time", json!({"timezone": 5})).unwrap_err();
    assert!(err.contains("invalid arguments"), "{err}");
    let err = tool_call(&rt, "time__get_current_time", json!({})).unwrap_err();
    assert!(err.contains("timezone"), "{err}");
    // A server-side failure comes back as a tool error, not a crash.
    let err = tool_call(
        &rt,
        "time__get_current_time",
        json!({"timezone": "Mars/Olympus"}),
    )
    .unwrap_err();
    assert!(err.contains("failed"), "{err}");

    // Audited as a tool_call, then as the inner call.
    let store = rt.store().unwrap();
    let rows: Vec<(String, String, String)> = {
        let conn = store.conn();
        let mut q = conn
            .prepare("SELECT tool, via, outcome FROM audit ORDER BY id")
            .unwrap();
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert!(
        rows.iter()
            .any(|(t, v, o)| t == "time__get_current_time" && v == "tool_call" && o == "ok"),
        "{rows:?}"
    );

    // The list is cached: a second runtime knows the tools without starting the server.
    assert!(f.home.path().join("mcp/time.json").is_file());
    let rt2 = f.runtime("full");
    assert!(rt2.lookup("time__convert_time").is_ok());
    assert_eq!(rt2.mcp_clients().unwrap().server_pid("time"), None);
    let out = tool_call(
        &rt2,
        "time__convert_time",
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    )
    .unwrap();
    assert!(
        out["text"].as_str().unwrap().contains("Asia/Tokyo"),
        "{out}"
    );
    assert!(rt2.mcp_clients().unwrap().server_pid("time").is_some());
}

#[test]
fn a_destructive_tool_needs_approval_and_list_changed_refreshes_the_cached_list() {
    let f = Fixture::new(vec![("chg", changing_server())]);
    let rt = f.runtime("full");
    let wipe = rt.lookup("chg__wipe_cache").unwrap();
    assert_eq!(
        wipe.effect,
        covo::spec::Effect::Destructive,
        "destructiveHint"
    );
    assert_eq!(
        rt.lookup("chg__grow").unwrap().effect,
        covo::spec::Effect::Write,
        "no hint: write"
    );
    // Nobody approves: refused before the server sees it.
    let err = tool_call(&rt, "chg__wipe_cache", json!({})).unwrap_err();
    assert!(err.contains("not approved"), "{err}");
    // The user on the session's channel approves it.
    let approved = session().with_approver(Arc::new(covo::runtime::AutoApprove));
    let out = rt
        .call(&approved, Via::Direct, "chg__wipe_cache", json!({}))
        .unwrap();
    assert!(
        out["text"].as_str().unwrap().contains("cache wiped"),
        "{out}"
    );

    // The server adds a tool and says so: covo relists and rewrites the cache.
    let out = tool_call(&rt, "chg__grow", json!({"name": "sprout"})).unwrap();
    assert!(
        out["text"].as_str().unwrap().contains("added sprout"),
        "{out}"
    );
    let cache = f.home.path().join("mcp/chg.json");
    let until = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&cache).unwrap().contains("sprout") {
        assert!(Instant::now() < until, "the cache was never refreshed");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The next runtime owns it and finds it; this one keeps the tools it was built with.
    assert!(rt.lookup("chg__sprout").is_err());
    let rt2 = f.runtime("full");
    assert!(rt2.lookup("chg__sprout").is_ok());
    let found: Vec<&str> = rt2
        .search_index()
        .search("grown tool sprout", 5)
        .iter()
        .map(|h| h.tool.name)
        .collect();
    assert!(found.contains(&"chg__sprout"), "{found:?}");
    // A fresh server process no longer has it: the call says so rather than failing obscurely.
    let err = tool_call(&rt2, "chg__sprout", json!({})).unwrap_err();
    assert!(err.contains("no longer offers 'sprout'"), "{err}");
    let av = rt2.availability(rt2.lookup("chg__sprout").unwrap());
    assert!(!av.available && av.reason.unwrap().contains("no longer offers"));
}

#[derive(Default)]
struct Record {
    results: Vec<ToolResult>,
}

impl Observer for Record {
    fn on_tool_result(&mut self, _: &covo::llm::ToolCall, r: &ToolResult) {
        self.results.push(r.clone());
    }
}

#[test]
fn the_agent_calls_an_mcp_tool_with_the_scripted_model() {
    let f = Fixture::new(vec![("everything", everything_server())]);
    let rt = f.runtime("full");
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("tool_search", r#"{"query":"echo a message back"}"#)]),
        Reply::tool_calls(vec![(
            "tool_call",
            r#"{"name":"everything__echo","arguments":{"message":"hello from the board"}}"#,
        )]),
        Reply::text("It echoed."),
    ]);
    let model: Arc<dyn ChatModel> = Arc::new(
        HttpModel::new(Provider {
            kind: ProviderKind::Openai,
            base_url: srv.openai_base_url(),
            model: "scripted".into(),
            api_key: Some("k".into()),
            timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            max_retries: 0,
            retry_base: Duration::from_millis(1),
            max_tokens: 256,
            tool_calls: covo::llm::ToolCallMode::Native,
        })
        .unwrap(),
    );
    let mut agent = Agent::new(rt.clone(), Some(model), session());
    let mut rec = Record::default();
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(agent.turn("echo something", &CancellationToken::new(), &mut rec));
    assert_eq!(
        report.outcome,
        covo::agent::Outcome::Answer("It echoed.".into())
    );
    assert!(
        rec.results[0].content.contains("everything__echo"),
        "search found it: {}",
        rec.results[0].content
    );
    assert!(!rec.results[1].is_error, "{}", rec.results[1].content);
    assert!(
        rec.results[1].content.contains("hello from the board"),
        "{}",
        rec.results[1].content
    );
    // What went back to the model is the tool's answer.
    let reqs = srv.requests();
    assert!(reqs[2].body.to_string().contains("hello from the board"));
}

fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn a_crashed_server_is_reported_and_restarted_with_backoff() {
    let f = Fixture::new(vec![("everything", everything_server())]);
    let rt = f.runtime("full");
    let out = tool_call(&rt, "everything__echo", json!({"message": "one"})).unwrap();
    assert!(out["text"].as_str().unwrap().contains("one"), "{out}");
    let clients = rt.mcp_clients().unwrap();
    let pid = clients.server_pid("everything").expect("running");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let spec = rt.lookup("everything__echo").unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let reason = loop {
        let av = rt.availability(spec);
        if !av.available {
            break av.reason.unwrap();
        }
        assert!(Instant::now() < until, "the crash was never noticed");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        reason.contains("'everything' is down") && reason.contains("exited"),
        "{reason}"
    );
    assert!(!process_alive(pid));
    // Within the backoff the call is refused with the reason, and nothing is started.
    let err = tool_call(&rt, "everything__echo", json!({"message": "two"})).unwrap_err();
    assert!(err.contains("unavailable") && err.contains("down"), "{err}");
    assert_eq!(clients.server_pid("everything"), None);
    // After it (1 s for a first failure), the next call starts the server again.
    std::thread::sleep(Duration::from_millis(1100));
    assert!(rt.availability(spec).available);
    let out = tool_call(&rt, "everything__echo", json!({"message": "three"})).unwrap();
    assert!(out["text"].as_str().unwrap().contains("three"), "{out}");
    let again = clients.server_pid("everything").expect("restarted");
    assert_ne!(again, pid);
}

#[test]
fn a_hanging_call_times_out_at_the_deadline_and_the_server_still_answers() {
    let mut server = everything_server();
    server.timeout_secs = Some(2);
    let f = Fixture::new(vec![("everything", server)]);
    let rt = f.runtime("full");
    // Start it first, so the deadline measured is the call's alone.
    tool_call(&rt, "everything__echo", json!({"message": "warm"})).unwrap();
    let started = Instant::now();
    let err = tool_call(
        &rt,
        "everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 1}),
    )
    .unwrap_err();
    let took = started.elapsed();
    assert!(err.contains("timed out") && err.contains("2 s"), "{err}");
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let out = tool_call(&rt, "everything__echo", json!({"message": "after"})).unwrap();
    assert!(out["text"].as_str().unwrap().contains("after"), "{out}");
}

#[test]
fn the_output_cap_cuts_a_large_answer() {
    let mut server = everything_server();
    server.max_output_bytes = Some(256);
    let f = Fixture::new(vec![("everything", server)]);
    let rt = f.runtime("full");
    let long = "x".repeat(5000);
    let out = tool_call(&rt, "everything__echo", json!({"message": long})).unwrap();
    assert_eq!(out["truncated"], true, "{out}");
    assert_eq!(out["text"].as_str().unwrap().len(), 256);
    assert!(out["total_bytes"].as_u64().unwrap() > 5000);
}

#[test]
fn a_pruning_profile_hides_them_from_search_and_calls() {
    let f = Fixture::new(vec![("everything", everything_server())]);
    // Fill the cache once, under `full`.
    assert!(f.runtime("full").lookup("everything__echo").is_ok());
    let mut f2 = Fixture {
        home: f.home,
        config: f.config.clone(),
    };
    f2.config.profiles.insert(
        "nomcp".into(),
        covo::config::ProfileConfig {
            base: Some("full".into()),
            allow: vec![],
            deny: vec!["everything__*".into()],
        },
    );
    for profile in ["minimal", "nomcp"] {
        let rt = f2.runtime(profile);
        let found: Vec<&str> = rt
            .search_index()
            .search("echo a message back", 20)
            .iter()
            .map(|h| h.tool.name)
            .collect();
        assert!(
            !found.iter().any(|n| n.starts_with("everything__")),
            "{profile}: {found:?}"
        );
        let err = rt
            .call(
                &session(),
                Via::Direct,
                "everything__echo",
                json!({"message": "x"}),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not available under profile"),
            "{profile}: {err}"
        );
        if profile == "nomcp" {
            let err = tool_call(&rt, "everything__echo", json!({"message": "x"})).unwrap_err();
            assert!(err.contains("not available under profile"), "{err}");
        }
        assert_eq!(rt.mcp_clients().unwrap().server_pid("everything"), None);
    }
    // `edge` owns them, like any configured server's tools.
    assert!(f2.runtime("edge").lookup("everything__echo").is_ok());
}

#[test]
fn a_server_that_cannot_start_leaves_an_empty_toolset_and_the_others_work() {
    let f = Fixture::new(vec![
        (
            "ghost",
            McpServerConfig {
                command: Some("/nonexistent/mcp-server".into()),
                timeout_secs: Some(5),
                ..Default::default()
            },
        ),
        ("time", time_server()),
    ]);
    let rt = f.runtime("full");
    assert!(rt.toolsets().get("mcp_ghost").unwrap().tools.is_empty());
    assert!(!search(&rt, "ghost")
        .iter()
        .any(|n| n.starts_with("ghost__")));
    assert!(!f.home.path().join("mcp/ghost.json").exists());
    // The other server was listed beside it and answers.
    assert_eq!(rt.toolsets().get("mcp_time").unwrap().tools.len(), 2);
    let out = tool_call(&rt, "time__get_current_time", json!({"timezone": "UTC"})).unwrap();
    assert!(out["text"].as_str().unwrap().contains("UTC"), "{out}");
}

#[test]
fn the_cli_kills_its_servers_when_it_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("COVO_MCP_TEST_MARK={}", std::process::id());
    let js = everything_server().args[0].clone();
    let cfg = dir.path().join("covo.toml");
    std::fs::write(
        &cfg,
        format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{js:?}, \"stdio\"]\n\
             env = {{ COVO_MCP_TEST_MARK = \"{}\" }}\n",
            std::process::id()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_covo"))
        .args(["--config", cfg.to_str().unwrap()])
        .args(["tools", "call", "everything__echo", r#"{"message":"cli"}"#])
        .env("COVO_HOME", dir.path().join("home"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("cli"));
    // No process carrying the mark survives covo.
    std::thread::sleep(Duration::from_millis(200));
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == mark.as_bytes()))
        })
        .filter(|e| process_alive(e.file_name().to_str().unwrap().parse().unwrap()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}

#[test]
fn a_tool_list_that_never_ends_is_read_to_its_page_limit() {
    let mut endless = changing_server();
    endless.args.push("--endless-pages".into());
    let f = Fixture::new(vec![("endless", endless)]);
    let started = Instant::now();
    let rt = f.runtime("full");
    let tools = &rt.toolsets().get("mcp_endless").unwrap().tools;
    // Two tools a page, 16 pages, then covo stops asking.
    assert_eq!(
        tools.len(),
        2 * covo::mcp_client::MAX_LIST_PAGES,
        "{tools:?}"
    );
    assert!(
        tools.contains(&"endless__p15_grow".to_string()),
        "{tools:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_streamable_http_server_is_reached_with_its_headers() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = changing_server().args[0].clone();
    let _server = Child(
        std::process::Command::new(venv_bin("python"))
            .args([&script, "--http", &port.to_string(), "--token", "s3cret"])
            .spawn()
            .unwrap(),
    );
    let until = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "the HTTP MCP server never listened");
        std::thread::sleep(Duration::from_millis(100));
    }
    let http = |token: &str| McpServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        headers: [("Authorization".to_string(), format!("Bearer {token}"))].into(),
        timeout_secs: Some(10),
        ..Default::default()
    };
    let f = Fixture::new(vec![("web", http("s3cret"))]);
    let rt = f.runtime("full");
    assert_eq!(
        rt.lookup("web__wipe_cache").unwrap().effect,
        covo::spec::Effect::Destructive
    );
    let out = tool_call(&rt, "web__grow", json!({"name": "leaf"})).unwrap();
    assert!(
        out["text"].as_str().unwrap().contains("added leaf"),
        "{out}"
    );
    // Without the right header the server refuses the session: no tools, nothing cached.
    let g = Fixture::new(vec![("web", http("wrong"))]);
    let rt = g.runtime("full");
    assert!(rt.toolsets().get("mcp_web").unwrap().tools.is_empty());
    assert!(!g.home.path().join("mcp/web.json").exists());
}
