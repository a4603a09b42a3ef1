//! Secrets in URLs stay secret: a failed webhook delivery names its endpoint by scheme, host and
//! port alone (its token may be the userinfo, a path segment or a query value), in the tool
//! result, the audit log, the database, the next request to the model and the logs at every
//! level.

use covo::agent::{Agent, Outcome};
use covo::config::{Config, NotifyConfig};
use covo::exec::Session;
use covo::llm::{ChatModel, HttpModel, Provider, ProviderKind};
use covo::runtime::Runtime;
use covo::store::Store;
use covo_tests::llm_server::{Reply, ScriptedLlm};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const USER_TOKEN: &str = "tok-userinfo-5f3a";
const QUERY_TOKEN: &str = "tok-query-9c1e";
/// Where Slack and Discord put a webhook's secret: a path segment.
const PATH_TOKEN: &str = "XyZpath7token";

/// A webhook URL with a token in its userinfo, one in its path (as Slack's and Discord's are) and
/// one in its query, on a port nobody listens on.
fn closed_webhook() -> (String, u16) {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    (
        format!(
            "http://bot:{USER_TOKEN}@127.0.0.1:{port}/services/T01/B02/{PATH_TOKEN}?key={QUERY_TOKEN}&room=ops"
        ),
        port,
    )
}

/// Every byte of every file under `dir` (the database, its WAL and journal).
fn all_bytes_under(dir: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(all_bytes_under(&p));
        } else {
            out.extend(std::fs::read(&p).unwrap_or_default());
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn assert_no_token(what: &str, text: &[u8]) {
    for t in [USER_TOKEN, QUERY_TOKEN, PATH_TOKEN, "T01/B02"] {
        assert!(
            !contains(text, t),
            "{what} carries {t}: {}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn a_failed_webhook_keeps_its_tokens_out_of_the_result_the_audit_log_and_the_next_request() {
    let (webhook, port) = closed_webhook();
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        notify: NotifyConfig {
            webhook: Some(webhook),
        },
        ..Default::default()
    };
    let mut opts = covo::tools::options(config);
    opts.profile = Some("full".into());
    let rt = Arc::new(
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::open_in(dir.path()).unwrap()),
    );
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("notify", r#"{"message":"frost tonight"}"#)]),
        Reply::text("The notification could not be sent."),
    ]);
    let model: Arc<dyn ChatModel> = Arc::new(
        HttpModel::new(Provider {
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
        })
        .unwrap(),
    );
    let mut a = Agent::new(rt.clone(), Some(model), Session::new("t", "cli"));
    let r = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(a.turn(
            "warn me about frost",
            &CancellationToken::new(),
            &mut covo::agent::Silent,
        ));
    assert_eq!(
        r.outcome,
        Outcome::Answer("The notification could not be sent.".into())
    );
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    let sent_back = &reqs[1].raw_body;
    assert_no_token("the next request to the model", sent_back.as_bytes());
    // The model still learns which endpoint failed, by its host alone.
    let shown = format!("http://127.0.0.1:{port}/…");
    assert!(sent_back.contains(&shown), "{sent_back}");
    let audit: Vec<String> = {
        let store = rt.store().unwrap();
        let conn = store.conn();
        let mut st = conn
            .prepare("SELECT args || ' ' || outcome || ' ' || COALESCE(detail, '') FROM audit")
            .unwrap();
        let rows = st.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert!(!audit.is_empty());
    assert_no_token("the audit log", audit.join("\n").as_bytes());
    drop(a);
    drop(rt);
    assert_no_token("covo.db", &all_bytes_under(dir.path()));
}

#[test]
fn a_failed_webhook_through_the_binary_prints_no_token_even_in_trace_logs() {
    let (webhook, port) = closed_webhook();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("covo.toml"),
        format!("[notify]\nwebhook = \"{webhook}\"\n"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_covo"))
        .current_dir(dir.path())
        .env("COVO_HOME", dir.path().join("home"))
        .env("COVO_LOG", "trace")
        .env_remove("COVO_CONFIG")
        .args(["tools", "call", "notify", r#"{"message":"frost tonight"}"#])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("http://127.0.0.1:{port}/…")),
        "the failure names the endpoint: {stdout}"
    );
    assert_no_token("stdout", &out.stdout);
    assert_no_token("stderr", &out.stderr);
    assert_no_token("covo.db", &all_bytes_under(&dir.path().join("home")));
}
