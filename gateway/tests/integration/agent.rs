//! The agent loop against the scripted LLM server over real HTTP on 127.0.0.1: full turns,
//! bad tool calls, the tools payload per request, the step budget, cancellation, retries,
//! streaming, and no-model mode — for both wire formats where the format matters.

use covo::agent::{Agent, Observer, Outcome, ToolResult, NO_MODEL};
use covo::config::Config;
use covo::exec::Session;
use covo::llm::{ChatModel, HttpModel, LlmError, Provider, ProviderKind, ToolCall};
use covo::plan::{render, Format};
use covo::runtime::Runtime;
use covo::store::Store;
use covo_tests::llm_server::{Reply, ScriptedLlm};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn runtime(profile: &str, config: Config) -> Arc<Runtime> {
    let mut opts = covo::tools::options(config);
    opts.profile = Some(profile.into());
    Arc::new(
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    )
}

fn provider(srv: &ScriptedLlm, kind: ProviderKind) -> Provider {
    Provider {
        kind,
        base_url: match kind {
            ProviderKind::Openai => srv.openai_base_url(),
            ProviderKind::Anthropic => srv.anthropic_base_url(),
        },
        model: "scripted".into(),
        api_key: Some("test-key".into()),
        timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries: 3,
        retry_base: Duration::from_millis(1),
        max_tokens: 1024,
        tool_calls: covo::llm::ToolCallMode::Native,
    }
}

fn agent(rt: &Arc<Runtime>, srv: &ScriptedLlm, kind: ProviderKind) -> Agent {
    let model: Arc<dyn ChatModel> = Arc::new(HttpModel::new(provider(srv, kind)).unwrap());
    Agent::new(rt.clone(), Some(model), Session::new("t", "cli"))
}

#[derive(Default)]
struct Record {
    text: String,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
}

impl Observer for Record {
    fn on_text(&mut self, d: &str) {
        self.text.push_str(d);
    }
    fn on_tool_call(&mut self, c: &ToolCall) {
        self.calls.push(c.clone());
    }
    fn on_tool_result(&mut self, _: &ToolCall, r: &ToolResult) {
        self.results.push(r.clone());
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn turn(a: &mut Agent, msg: &str) -> (covo::agent::TurnReport, Record) {
    let mut rec = Record::default();
    let r = block_on(a.turn(msg, &CancellationToken::new(), &mut rec));
    (r, rec)
}

/// The tool names a recorded request carried, in either format.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .or(t["name"].as_str())
                        .unwrap()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results the request carried back to the model, as JSON.
fn tool_results(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        if m["role"] == "tool" {
            out.push(serde_json::from_str(m["content"].as_str().unwrap()).unwrap());
        }
        if let Some(blocks) = m["content"].as_array() {
            for b in blocks {
                if b["type"] == "tool_result" {
                    out.push(serde_json::from_str(b["content"].as_str().unwrap()).unwrap());
                }
            }
        }
    }
    out
}

#[test]
fn a_full_turn_with_two_tool_calls_ends_in_a_final_answer_in_both_formats() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let srv = ScriptedLlm::start(vec![
            Reply::tool_calls(vec![
                (
                    "todo_write",
                    r#"{"items":[{"content":"check the vent","status":"in_progress"}]}"#,
                ),
                ("conversation_search", r#"{"query":"vent"}"#),
            ]),
            Reply::text("Your to-do list has one item: check the vent."),
        ]);
        let rt = runtime("full", Config::default());
        let mut a = agent(&rt, &srv, kind);
        let (r, rec) = turn(&mut a, "what should I do about the vent?");
        assert_eq!(
            r.outcome,
            Outcome::Answer("Your to-do list has one item: check the vent.".into()),
            "{kind:?}"
        );
        assert_eq!(r.steps, 2);
        assert_eq!(r.tool_calls, 2);
        assert!(rec.results.iter().all(|x| !x.is_error), "{:?}", rec.results);
        // The to-do list really was written.
        assert_eq!(rt.store().unwrap().todos("t").unwrap().len(), 1);
        // The second request carried both results back.
        let reqs = srv.requests();
        assert_eq!(reqs.len(), 2);
        let results = tool_results(&reqs[1].body);
        assert_eq!(results.len(), 2, "{kind:?}");
        assert_eq!(results[0]["counts"]["in_progress"], 1, "{}", results[0]);
        // Usage is the sum the server reported.
        let served = srv.usage_total();
        assert_eq!(r.usage.input_tokens, served.input_tokens);
        assert_eq!(r.usage.output_tokens, served.output_tokens);
        // The conversation is persisted, so conversation_search finds it.
        let turns = rt.store().unwrap().turns("t").unwrap();
        assert!(turns
            .iter()
            .any(|t| t.role == "user" && t.content.contains("vent")));
        assert!(turns
            .iter()
            .any(|t| t.role == "assistant" && t.content.contains("one item")));
        assert_eq!(rt.store().unwrap().usage("t").unwrap().len(), 1);
    }
}

#[test]
fn bad_tool_calls_come_back_to_the_model_as_structured_errors() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![
            ("sensor_reed", r#"{"sensor":"climate"}"#),
            ("memory_recall", r#"{"query": "vent""#),
            ("memory_recall", r#"{"query": 42}"#),
            (
                "tool_call",
                r#"{"name":"shell_exec","arguments":{"command":"rm -rf /"}}"#,
            ),
        ]),
        Reply::text("Sorry, let me try again."),
    ]);
    let rt = runtime("edge", Config::default());
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let (r, rec) = turn(&mut a, "go");
    assert_eq!(
        r.outcome,
        Outcome::Answer("Sorry, let me try again.".into())
    );
    assert!(rec.results.iter().all(|x| x.is_error));
    let results = tool_results(&srv.requests()[1].body);
    let kinds: Vec<&str> = results
        .iter()
        .map(|v| v["error"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "unknown_tool",
            "malformed_json",
            "invalid_arguments",
            "not_in_profile"
        ]
    );
    assert!(results[0]["error"]["did_you_mean"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "sensor_read"));
    assert_eq!(results[2]["error"]["problems"][0]["path"], "/query");
}

#[test]
fn text_embedded_tool_calls_from_small_models_are_run() {
    let srv = ScriptedLlm::start(vec![
        Reply::text("<tool_call>{\"name\": \"memory_store\", \"arguments\": {\"text\": \"basil likes sun\"}}</tool_call>"),
        Reply::text("Noted."),
    ]);
    let rt = runtime("full", Config::default());
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let (r, _) = turn(&mut a, "remember basil likes sun");
    assert_eq!(r.outcome, Outcome::Answer("Noted.".into()));
    let hits = rt.store().unwrap().recall("basil", None, 5).unwrap();
    assert_eq!(hits.len(), 1);
}

#[test]
fn every_request_carries_exactly_the_visibility_plan_even_after_search_and_tool_call() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("tool_search", r#"{"query":"remember a fact"}"#)]),
        Reply::tool_calls(vec![(
            "tool_call",
            r#"{"name":"memory_store","arguments":{"text":"the relay is on GPIO17"}}"#,
        )]),
        Reply::text("Stored."),
    ]);
    let rt = runtime("full", Config::default());
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let (r, rec) = turn(&mut a, "remember that the relay is on GPIO17");
    assert_eq!(r.outcome, Outcome::Answer("Stored.".into()));
    let expected = rt.model_call(&Session::new("t", "cli")).tools;
    let expected_names: Vec<String> = expected.iter().map(|t| t.name.to_string()).collect();
    let expected_payload = render(&expected, Format::Openai);
    for (i, req) in srv.requests().iter().enumerate() {
        assert_eq!(tool_names(&req.body), expected_names, "request {i}");
        assert_eq!(
            req.body["tools"], expected_payload,
            "request {i} payload bytes"
        );
    }
    assert!(
        !expected_names.contains(&"memory_store".to_string()),
        "memory_store is not visible on gateway"
    );
    let found = &rec.results[0].content;
    assert!(found.contains("memory_store"), "{found}");
    assert_eq!(
        rt.store().unwrap().recall("relay", None, 5).unwrap().len(),
        1
    );
}

#[test]
fn the_step_budget_ends_a_turn_that_never_answers() {
    let mut config = Config::default();
    config.agent.max_steps = Some(3);
    let script = (0..5)
        .map(|_| Reply::tool_calls(vec![("todo_read", "{}")]))
        .collect();
    let srv = ScriptedLlm::start(script);
    let rt = runtime("full", config);
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let (r, _) = turn(&mut a, "loop forever");
    assert_eq!(r.outcome, Outcome::StepBudget { steps: 3 });
    assert_eq!(srv.requests().len(), 3);
    assert_eq!(srv.remaining(), 2);
}

#[test]
fn cancellation_stops_the_current_turn_and_the_next_turn_works() {
    let srv = ScriptedLlm::start(vec![Reply::hang(), Reply::text("fresh answer")]);
    let rt = runtime("full", Config::default());
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let token = CancellationToken::new();
    let t2 = token.clone();
    let started = Instant::now();
    let r = block_on(async {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            t2.cancel();
        });
        a.turn("wait", &token, &mut Record::default()).await
    });
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    let (r, _) = turn(&mut a, "again");
    assert_eq!(r.outcome, Outcome::Answer("fresh answer".into()));
}

#[test]
fn rate_limits_and_server_errors_are_retried_with_backoff() {
    let srv = ScriptedLlm::start(vec![
        Reply::status_with_headers(
            429,
            r#"{"error":{"message":"slow down"}}"#,
            &[("retry-after", "0")],
        ),
        Reply::status(500, r#"{"error":{"message":"boom"}}"#),
        Reply::text("made it"),
    ]);
    let rt = runtime("full", Config::default());
    let mut a = agent(&rt, &srv, ProviderKind::Anthropic);
    let (r, _) = turn(&mut a, "hi");
    assert_eq!(r.outcome, Outcome::Answer("made it".into()));
    assert_eq!(srv.requests().len(), 3);
}

#[test]
fn a_wrong_key_and_a_model_without_tools_are_explained_not_retried() {
    let srv = ScriptedLlm::start(vec![
        Reply::status(401, r#"{"error":{"message":"Incorrect API key provided"}}"#),
        Reply::status(
            400,
            r#"{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools"}}"#,
        ),
    ]);
    let rt = runtime("full", Config::default());
    let model = HttpModel::new(provider(&srv, ProviderKind::Openai)).unwrap();
    let msgs = [covo::llm::Message::User("hi".into())];
    let req = covo::llm::ChatRequest {
        system: "",
        messages: &msgs,
        tools: &[],
    };
    let e = block_on(model.chat(req, &mut |_| {})).unwrap_err();
    assert!(
        matches!(e, LlmError::Unauthorized { status: 401, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("COVO_LLM_API_KEY"));
    let e = block_on(model.chat(req, &mut |_| {})).unwrap_err();
    assert!(matches!(e, LlmError::ToolsUnsupported { .. }), "{e:?}");
    assert_eq!(srv.requests().len(), 2, "neither error is retried");
    assert_eq!(
        srv.requests()[0].header("authorization"),
        Some("Bearer test-key")
    );
    drop(rt);
}

#[test]
fn streamed_text_and_split_arguments_are_assembled() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let srv = ScriptedLlm::start(vec![
            Reply::text_and_tools(
                "Looking that up for you now.",
                vec![(
                    "memory_recall",
                    r#"{"query":"greenhouse vent position","limit":3}"#,
                )],
            ),
            Reply::text("The vent is half open, according to your notes."),
        ]);
        let rt = runtime("full", Config::default());
        let mut a = agent(&rt, &srv, kind);
        let (r, rec) = turn(&mut a, "where is the vent?");
        assert_eq!(
            rec.text, "Looking that up for you now.The vent is half open, according to your notes.",
            "{kind:?}"
        );
        assert_eq!(
            rec.calls[0].arguments,
            r#"{"query":"greenhouse vent position","limit":3}"#
        );
        assert_eq!(
            r.outcome,
            Outcome::Answer("The vent is half open, according to your notes.".into())
        );
        assert!(srv.requests().iter().all(|q| q.is_stream()));
    }
}

#[test]
fn without_a_model_a_turn_says_how_to_set_one_and_calls_nothing() {
    let rt = runtime("full", Config::default());
    let mut a = Agent::new(rt.clone(), None, Session::new("t", "cli"));
    let (r, rec) = turn(&mut a, "hello?");
    assert_eq!(r.outcome, Outcome::Failed(NO_MODEL.into()));
    assert!(NO_MODEL.contains("COVO_LLM_MODEL") && NO_MODEL.contains("11434"));
    assert!(rec.text.is_empty() && rec.calls.is_empty());
}

#[test]
fn due_schedules_run_once_a_tool_job_and_a_prompt_job() {
    use covo::agent::scheduler;
    use covo::runtime::Via;
    use serde_json::json;
    let srv = ScriptedLlm::start(vec![Reply::text("Morning report: all quiet.")]);
    let rt = runtime("full", Config::default());
    let s = Session::new("sched", "cli");
    rt.call(
        &s,
        Via::Direct,
        "schedule_create",
        json!({"at": "in 1s", "tool": "memory_store", "arguments": {"text": "scheduled note"}}),
    )
    .unwrap();
    rt.call(
        &s,
        Via::Direct,
        "schedule_create",
        json!({"cron": "* * * * *", "prompt": "give the morning report"}),
    )
    .unwrap();
    let later = chrono::Utc::now() + chrono::Duration::minutes(2);
    let due = scheduler::claim_due(&rt, later).unwrap();
    assert_eq!(due.len(), 2);
    // Claimed jobs are not due again at the same instant: at-most-once, even if a run crashes.
    assert!(scheduler::claim_due(&rt, later).unwrap().is_empty());
    let model: Arc<dyn ChatModel> =
        Arc::new(HttpModel::new(provider(&srv, ProviderKind::Openai)).unwrap());
    let reports: Vec<String> = block_on(async {
        let mut out = Vec::new();
        for job in &due {
            out.push(scheduler::run_job(&rt, Some(model.clone()), job).await);
        }
        out
    });
    assert!(
        reports.iter().any(|r| r.contains("memory_store")),
        "{reports:?}"
    );
    assert!(
        reports
            .iter()
            .any(|r| r.contains("Morning report: all quiet.")),
        "{reports:?}"
    );
    assert_eq!(
        rt.store()
            .unwrap()
            .recall("scheduled", None, 5)
            .unwrap()
            .len(),
        1
    );
    let audit: i64 = rt
        .store()
        .unwrap()
        .conn()
        .query_row(
            "SELECT COUNT(*) FROM audit WHERE via = 'schedule'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(audit, 1);
}

/// Lets `ask` return only once two asks are inside at the same time (or after a timeout), and
/// records whether each saw the other: proof of concurrency without timing assumptions.
#[derive(Default)]
struct Rendezvous {
    inside: std::sync::Mutex<usize>,
    cv: std::sync::Condvar,
    met: std::sync::Mutex<Vec<bool>>,
}

#[derive(Clone)]
struct SharedRendezvous(Arc<Rendezvous>);

impl covo::runtime::UserIo for SharedRendezvous {
    fn send(&self, _: &str, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn ask(&self, q: &str, _: &[String]) -> Option<String> {
        let me = &self.0;
        let mut n = me.inside.lock().unwrap();
        *n += 1;
        me.cv.notify_all();
        let (n, timeout) = me
            .cv
            .wait_timeout_while(n, Duration::from_secs(3), |n| *n < 2)
            .unwrap();
        me.met.lock().unwrap().push(!timeout.timed_out() && *n >= 2);
        Some(format!("answer to {q}"))
    }
    fn channels(&self) -> Vec<(String, bool)> {
        vec![("cli".into(), true)]
    }
}

#[test]
fn read_calls_of_one_response_run_concurrently_and_writes_run_in_order() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![
            ("ask_clarification", r#"{"question":"which shelf?"}"#),
            ("ask_clarification", r#"{"question":"which plant?"}"#),
            ("memory_store", r#"{"text":"first"}"#),
            ("memory_store", r#"{"text":"second"}"#),
        ]),
        Reply::text("ok"),
    ]);
    let meet = Arc::new(Rendezvous::default());
    let mut opts = covo::tools::options(Config::default());
    opts.user_io = Box::new(SharedRendezvous(meet.clone()));
    let rt = Arc::new(
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    );
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let (r, rec) = turn(&mut a, "go");
    assert_eq!(r.outcome, Outcome::Answer("ok".into()));
    assert_eq!(
        *meet.met.lock().unwrap(),
        [true, true],
        "both reads were in flight together"
    );
    // Results are reported in call order; the writes ran one after the other, in order.
    let ids: Vec<i64> = rec.results[2..]
        .iter()
        .map(|r| {
            serde_json::from_str::<Value>(&r.content).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, [1, 2]);
    let first = rt.store().unwrap().memory(1).unwrap().unwrap();
    assert_eq!(first.text, "first");
}

#[test]
fn two_gateways_on_one_home_claim_each_due_job_once() {
    use covo::agent::scheduler;
    use covo::store::{ScheduleAction, ScheduleTrigger};
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let mut opts = covo::tools::options(Config::default());
        opts.profile = Some("full".into());
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::open_in(dir.path()).unwrap())
    };
    let (a, b) = (open(), open());
    let store = Store::open_in(dir.path()).unwrap();
    let now = chrono::Utc::now();
    let jobs = 40;
    for i in 0..jobs {
        store
            .create_schedule(
                None,
                "sched",
                "cli",
                &ScheduleTrigger::At(now + chrono::Duration::seconds(1)),
                &ScheduleAction::Prompt(format!("job {i}")),
                now,
            )
            .unwrap();
    }
    let later = now + chrono::Duration::minutes(2);
    let start = std::sync::Barrier::new(2);
    let mut claimed: Vec<i64> = std::thread::scope(|s| {
        let handles = [&a, &b].map(|rt| {
            let start = &start;
            s.spawn(move || {
                start.wait();
                let mut ids = Vec::new();
                for _ in 0..10 {
                    ids.extend(
                        scheduler::claim_due(rt, later)
                            .unwrap()
                            .iter()
                            .map(|j| j.id),
                    );
                }
                ids
            })
        });
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    claimed.sort_unstable();
    let once: Vec<i64> = (1..=jobs).collect();
    assert_eq!(
        claimed, once,
        "every due job is claimed by exactly one gateway"
    );
}

#[test]
fn a_truncated_stream_ends_the_turn_with_a_provider_error_and_runs_no_tool() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        for reply in [
            Reply::tool_calls(vec![("memory_store", r#"{"text":"half sent"}"#)]),
            Reply::text_and_tools(
                "Storing it.",
                vec![("memory_store", r#"{"text":"half sent"}"#)],
            ),
            Reply::text("An answer cut in the middle"),
        ] {
            let srv = ScriptedLlm::start(vec![Reply::truncated(reply), Reply::text("late")]);
            let rt = runtime("full", Config::default());
            let mut a = agent(&rt, &srv, kind);
            let (r, rec) = turn(&mut a, "remember this");
            match &r.outcome {
                Outcome::Failed(e) => assert!(
                    e.contains("before the answer was complete"),
                    "{kind:?}: {e}"
                ),
                other => panic!("{kind:?}: {other:?}"),
            }
            assert!(rec.calls.is_empty(), "{kind:?}: {:?}", rec.calls);
            assert_eq!(r.tool_calls, 0);
            assert_eq!(srv.requests().len(), 1, "{kind:?}: no second model call");
            let store = rt.store().unwrap();
            assert!(store.recall("half", None, 5).unwrap().is_empty());
            let audited: i64 = store
                .conn()
                .query_row("SELECT COUNT(*) FROM audit", [], |r| r.get(0))
                .unwrap();
            assert_eq!(audited, 0, "{kind:?}: no tool call reached the pipeline");
        }
    }
}

#[test]
fn a_malformed_answer_ends_the_turn_with_a_provider_error() {
    for (kind, ct, body) in [
        (ProviderKind::Openai, "text/event-stream", ""),
        (
            ProviderKind::Openai,
            "application/json",
            r#"{"choices":[{}]}"#,
        ),
        (ProviderKind::Anthropic, "text/event-stream", ""),
        (
            ProviderKind::Anthropic,
            "application/json",
            r#"{"content":[7]}"#,
        ),
    ] {
        let srv = ScriptedLlm::start(vec![Reply::raw(ct, body)]);
        let rt = runtime("full", Config::default());
        let mut a = agent(&rt, &srv, kind);
        let (r, rec) = turn(&mut a, "hi");
        match &r.outcome {
            Outcome::Failed(e) => assert!(e.contains("malformed response"), "{kind:?} {body}: {e}"),
            other => panic!("{kind:?} {ct} {body:?}: {other:?}"),
        }
        assert!(rec.calls.is_empty());
    }
}

#[test]
fn a_long_conversation_is_trimmed_to_its_token_budget_whole_exchanges_first() {
    // 300 estimated tokens: each turn below is a 400-byte question (104 tokens) and a short
    // answer, with a tool call and its result in the second turn.
    let mut script = vec![Reply::text("one")];
    script.push(Reply::tool_calls(vec![("todo_read", "{}")]));
    script.push(Reply::text("two"));
    for i in 3..=8 {
        script.push(Reply::text(format!("answer {i}")));
    }
    let srv = ScriptedLlm::start(script);
    let mut cfg = Config::default();
    cfg.agent.history_tokens = Some(300);
    let rt = runtime("full", cfg);
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    for i in 1..=8 {
        let q = format!("question {i}: {}", "x".repeat(388));
        let (r, _) = turn(&mut a, &q);
        assert!(matches!(r.outcome, Outcome::Answer(_)), "{:?}", r.outcome);
        let held: usize = a.history().iter().map(covo::agent::estimate_tokens).sum();
        // After the turn the history holds at most the budget plus this turn's answer.
        assert!(held <= 300 + 20, "turn {i}: {held} tokens held");
    }
    let reqs = srv.requests();
    let last = &reqs.last().unwrap().body;
    let msgs = last["messages"].as_array().unwrap();
    let text = last.to_string();
    assert!(text.contains("question 8"), "the current question is sent");
    assert!(
        !text.contains("question 1:"),
        "the oldest exchanges are gone"
    );
    let users = msgs.iter().filter(|m| m["role"] == "user").count();
    assert_eq!(users, 2, "two 104-token questions fit 300 tokens: {msgs:?}");
    // Every tool call still has its result (whole exchanges only).
    for (i, m) in msgs.iter().enumerate() {
        if m["role"] == "tool" {
            assert!(
                msgs[..i].iter().any(|p| p["tool_calls"].is_array()),
                "{msgs:?}"
            );
        }
    }
    assert!(msgs.first().unwrap()["role"] == "system" || msgs.first().unwrap()["role"] == "user");
    assert!(
        text.contains("earlier messages of this conversation were dropped"),
        "the model is told"
    );
    // The system prompt and the tools are the same bytes in every request, trimmed or not, so
    // a server's prompt cache keeps that prefix: the note rides on the oldest message left.
    for r in &reqs {
        assert_eq!(r.body["messages"][0], reqs[0].body["messages"][0]);
        assert_eq!(r.body["tools"], reqs[0].body["tools"]);
    }
    assert_eq!(reqs[0].body["messages"][0]["role"], "system");
    assert!(a.dropped() >= 10, "{}", a.dropped());
    // The store still has the whole conversation.
    let n: i64 = rt
        .store()
        .unwrap()
        .conn()
        .query_row("SELECT count(*) FROM turns WHERE role = 'user'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 8);
}

#[test]
fn a_provider_error_that_quotes_the_api_key_never_shows_it() {
    // A misbehaving proxy echoes the request's headers back in its error; the raw key, the
    // bearer header and the Anthropic key header are all masked before anyone sees the error.
    const KEY: &str = "sk-canary-5e1f0a9b7c";
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        for (status, body) in [
            (
                400,
                format!(
                    r#"{{"error":{{"message":"proxy: rejected headers Authorization: Bearer {KEY}"}}}}"#
                ),
            ),
            (400, format!("tools not supported with x-api-key: {KEY}")),
            (404, format!("model scripted not found for key {KEY}")),
            (
                502,
                format!("upstream said: authorization=Bearer {KEY}; x-api-key:{KEY}"),
            ),
            (500, format!("{}{KEY}", "x".repeat(290))),
        ] {
            let srv = ScriptedLlm::start(vec![Reply::status(status, body.clone())]);
            let rt = runtime("full", Config::default());
            let mut p = provider(&srv, kind);
            p.api_key = Some(KEY.into());
            p.max_retries = 0;
            let model: Arc<dyn ChatModel> = Arc::new(HttpModel::new(p).unwrap());
            let mut a = Agent::new(rt.clone(), Some(model), Session::new("t", "cli"));
            let (r, rec) = turn(&mut a, "hello");
            let Outcome::Failed(e) = &r.outcome else {
                panic!("{kind:?} {status}: {:?}", r.outcome)
            };
            // The key reached the server (the proxy had it), and no part of it comes back.
            assert_eq!(srv.requests().len(), 1);
            assert!(
                !e.contains(KEY) && !e.contains("5e1f0a9b7c"),
                "{kind:?} {status}: {e}"
            );
            assert!(!rec.text.contains(KEY), "{kind:?} {status}");
            // The error still says where it came from.
            assert!(e.contains("127.0.0.1"), "{kind:?} {status}: {e}");
        }
    }
}

fn agent_with(rt: &Arc<Runtime>, p: Provider) -> (Agent, Arc<HttpModel>) {
    let m = Arc::new(HttpModel::new(p).unwrap());
    let model: Arc<dyn ChatModel> = m.clone();
    (
        Agent::new(rt.clone(), Some(model), Session::new("t", "cli")),
        m,
    )
}

/// A one-connection OpenAI-compatible server on 127.0.0.1 that streams `chunks` text chunks,
/// `every` apart, then either ends the stream or goes silent with the connection open.
fn trickling_server(chunks: usize, every: Duration, finish: bool) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 65536];
        let mut got = Vec::new();
        // Read the headers and the body (its length from content-length).
        loop {
            let n = s.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse().unwrap())
                    .unwrap_or(0);
                if got.len() >= end + 4 + len {
                    break;
                }
            }
        }
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        let send = |s: &mut std::net::TcpStream, data: &str| {
            let ev = format!("data: {data}\n\n");
            let _ = s.write_all(format!("{:x}\r\n{ev}\r\n", ev.len()).as_bytes());
            let _ = s.flush();
        };
        for _ in 0..chunks {
            send(
                &mut s,
                r#"{"choices":[{"index":0,"delta":{"content":"tok "}}]}"#,
            );
            std::thread::sleep(every);
        }
        if finish {
            send(
                &mut s,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            );
            send(&mut s, "[DONE]");
            let _ = s.write_all(b"0\r\n\r\n");
            std::thread::sleep(Duration::from_secs(1));
        } else {
            std::thread::sleep(Duration::from_secs(30));
        }
    });
    url
}

#[test]
fn a_slow_stream_that_keeps_coming_is_read_to_its_end_and_a_silent_one_times_out() {
    let srv = ScriptedLlm::start(vec![]);
    let rt = runtime("edge", Config::default());
    // Twelve chunks 250 ms apart: 3 s in all, each gap well inside a 1 s idle limit. Under the
    // old whole-request timeout of 2 s this answer was cut off while tokens were flowing.
    let mut p = provider(&srv, ProviderKind::Openai);
    p.base_url = trickling_server(12, Duration::from_millis(250), true);
    (p.idle_timeout, p.timeout) = (Duration::from_secs(1), Duration::from_secs(60));
    let (mut a, _) = agent_with(&rt, p.clone());
    let (r, rec) = turn(&mut a, "talk");
    assert_eq!(r.outcome, Outcome::Answer("tok ".repeat(12)));
    assert_eq!(rec.text, "tok ".repeat(12));
    // Two chunks, then silence with the connection open: the idle limit ends it.
    p.base_url = trickling_server(2, Duration::from_millis(10), false);
    let (mut a, _) = agent_with(&rt, p.clone());
    let t = Instant::now();
    let (r, _) = turn(&mut a, "talk");
    let Outcome::Failed(e) = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert!(e.contains("idle_timeout_secs"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // A stream that never stops is cut by the total limit, however lively it is.
    p.base_url = trickling_server(400, Duration::from_millis(50), true);
    (p.idle_timeout, p.timeout) = (Duration::from_secs(5), Duration::from_secs(2));
    let (mut a, _) = agent_with(&rt, p);
    let (r, _) = turn(&mut a, "talk");
    let Outcome::Failed(e) = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert!(
        e.contains("timeout_secs") && e.contains("2 s in all"),
        "{e}"
    );
}

#[test]
fn every_request_carries_the_output_limit() {
    let srv = ScriptedLlm::start(vec![Reply::text("hi"), Reply::text("hi")]);
    let rt = runtime("edge", Config::default());
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    turn(&mut a, "hello");
    let mut a = agent(&rt, &srv, ProviderKind::Anthropic);
    turn(&mut a, "hello");
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.body["max_tokens"], 1024, "{}", r.path);
    }
}

#[test]
fn a_server_that_drops_the_tools_is_caught_and_the_turn_goes_on_with_tools_in_the_prompt() {
    // What SmolLM2 on llama.cpp did: 39 prompt tokens for a request with 40 tools in it.
    let dropped = r#"{"choices":[{"message":{"role":"assistant","content":"I cannot store anything."},"finish_reason":"stop"}],"usage":{"prompt_tokens":39,"completion_tokens":6}}"#;
    let srv = ScriptedLlm::start(vec![
        Reply::raw("application/json", dropped),
        Reply::text("<tool_call>\n{\"name\": \"memory_store\", \"arguments\": {\"text\": \"basil likes sun\"}}\n</tool_call>"),
        Reply::text("Noted."),
        Reply::text("Done again."),
    ]);
    let rt = runtime("full", Config::default());
    let mut p = provider(&srv, ProviderKind::Openai);
    p.tool_calls = covo::llm::ToolCallMode::Auto;
    let (mut a, m) = agent_with(&rt, p);
    let (r, _) = turn(&mut a, "remember basil likes sun");
    assert_eq!(r.outcome, Outcome::Answer("Noted.".into()));
    assert_eq!(
        rt.store().unwrap().recall("basil", None, 5).unwrap().len(),
        1
    );
    let (wire, why) = m.tool_wire().unwrap();
    assert_eq!(wire, covo::llm::Wire::Text);
    assert!(why.unwrap().contains("39 prompt tokens"));
    let reqs: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|r| r.api.is_some())
        .collect();
    assert_eq!(reqs.len(), 3);
    let shown = tool_names(&reqs[0].body);
    assert!(shown.len() > 5, "{shown:?}");
    for r in &reqs[1..] {
        assert!(r.body.get("tools").is_none(), "{}", r.body);
        let system = r.body["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains("# Tools"));
        for n in &shown {
            assert!(system.contains(&format!("\"name\":\"{n}\"")), "{n}");
        }
    }
    // The call and its result went back as text, not as API tool fields.
    let last = &reqs[2].body["messages"];
    let text = last.to_string();
    assert!(
        text.contains("<tool_response>") && !text.contains("\"tool_calls\""),
        "{text}"
    );
    // The next turn starts in text mode, with the same system prompt bytes (a warm cache).
    turn(&mut a, "again");
    let reqs: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|r| r.api.is_some())
        .collect();
    assert_eq!(reqs[3].body["messages"][0], reqs[1].body["messages"][0]);

    // A server that has answered with a native call carries the tools, whatever usage it
    // reports afterwards (scripted servers report a token or two): no switch.
    let tiny = r#"{"choices":[{"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("todo_read", "{}")]),
        Reply::raw("application/json", tiny),
    ]);
    let mut p = provider(&srv, ProviderKind::Openai);
    p.tool_calls = covo::llm::ToolCallMode::Auto;
    let (mut a, m) = agent_with(&rt, p);
    let (r, _) = turn(&mut a, "go");
    assert_eq!(r.outcome, Outcome::Answer("done".into()));
    assert_eq!(m.tool_wire().unwrap().0, covo::llm::Wire::Native);
    assert_eq!(srv.requests().len(), 2);
}

#[test]
fn constrained_mode_holds_the_reply_to_the_tools_schemas_and_shows_only_the_answer() {
    let srv = ScriptedLlm::start(vec![
        Reply::text(r#"{"name": "memory_store", "arguments": {"text": "basil likes sun"}}"#),
        Reply::text(r#"{"answer": "Noted."}"#),
    ]);
    let rt = runtime("full", Config::default());
    let mut p = provider(&srv, ProviderKind::Openai);
    p.tool_calls = covo::llm::ToolCallMode::Constrained;
    let (mut a, _) = agent_with(&rt, p);
    let (r, rec) = turn(&mut a, "remember basil likes sun");
    assert_eq!(r.outcome, Outcome::Answer("Noted.".into()));
    assert_eq!(rec.text, "Noted.", "the user never sees the JSON");
    assert_eq!(rec.calls.len(), 1);
    assert_eq!(
        rt.store().unwrap().recall("basil", None, 5).unwrap().len(),
        1
    );
    let reqs = srv.requests();
    let first = &reqs[0].body;
    assert!(first.get("tools").is_none());
    let any = first["response_format"]["json_schema"]["schema"]["anyOf"]
        .as_array()
        .unwrap();
    let sent = first["messages"][0]["content"].as_str().unwrap();
    // One branch for the answer and one per tool in the prompt, each with the tool's schema.
    let names: Vec<&str> = any[1..]
        .iter()
        .map(|b| b["properties"]["name"]["const"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"tool_call") && names.len() > 5, "{names:?}");
    for n in &names {
        assert!(
            sent.contains(&format!("\"name\":\"{n}\"")),
            "{n} is in the prompt"
        );
    }
    let spec = rt.owned().get("tool_call").unwrap();
    let store = spec.params_json();
    let branch = any
        .iter()
        .find(|b| b["properties"]["name"]["const"] == "tool_call")
        .unwrap();
    assert_eq!(branch["properties"]["arguments"], store);

    // A server that answers llama.cpp's /apply-template is llama.cpp: the reply is held by
    // covo's grammar (numbers in range), not by a JSON schema, and reads the same way.
    let srv = ScriptedLlm::start(vec![
        Reply::text(r#"{"name": "memory_store", "arguments": {"text": "figs like shade"}}"#),
        Reply::text(r#"{"answer": "Noted."}"#),
    ]);
    srv.serve_template("<|im_start|>user\nhello<|im_end|>");
    let mut p = provider(&srv, ProviderKind::Openai);
    p.tool_calls = covo::llm::ToolCallMode::Constrained;
    let (mut a, _) = agent_with(&rt, p);
    let (r, rec) = turn(&mut a, "remember figs like shade");
    assert_eq!(r.outcome, Outcome::Answer("Noted.".into()));
    assert_eq!(rec.calls.len(), 1);
    let all = srv.all_requests();
    assert_eq!(all[0].path, "/apply-template", "asked once, first");
    assert_eq!(
        all.iter().filter(|r| r.path == "/apply-template").count(),
        1
    );
    let reqs = srv.requests();
    for req in &reqs {
        assert!(req.body.get("response_format").is_none());
        let g = req.body["grammar"].as_str().unwrap();
        assert!(
            g.starts_with("root ::= ") && g.contains("\"\\\"tool_call\\\"\""),
            "{g}"
        );
    }
    assert_eq!(
        reqs[0].body["grammar"], reqs[1].body["grammar"],
        "byte-stable"
    );

    // A reply cut by max_tokens in the middle of its JSON is reported as such, not shown raw.
    let cut = r#"{"choices":[{"message":{"role":"assistant","content":"{\"answer\": \"It is twen"},"finish_reason":"length"}],"usage":{"prompt_tokens":900,"completion_tokens":1024}}"#;
    let srv = ScriptedLlm::start(vec![Reply::raw("application/json", cut)]);
    let mut p = provider(&srv, ProviderKind::Openai);
    p.tool_calls = covo::llm::ToolCallMode::Constrained;
    let (mut a, _) = agent_with(&rt, p);
    let (r, rec) = turn(&mut a, "how warm?");
    let Outcome::Answer(text) = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert!(text.contains("cut off at max_tokens = 1024"), "{text}");
    assert_eq!(&rec.text, text);
}

#[test]
fn a_call_with_no_name_is_answered_and_the_fifteen_beside_it_run() {
    let mut calls: Vec<(&str, &str)> = vec![("todo_read", "{}"); 15];
    calls.insert(7, ("", r#"{"x":1}"#));
    let srv = ScriptedLlm::start(vec![Reply::tool_calls(calls), Reply::text("ok")]);
    let rt = runtime("full", Config::default());
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let (r, rec) = turn(&mut a, "go");
    assert_eq!(r.outcome, Outcome::Answer("ok".into()));
    assert_eq!(rec.results.len(), 16);
    assert_eq!(rec.results.iter().filter(|r| !r.is_error).count(), 15);
    let results = tool_results(&srv.requests()[1].body);
    assert_eq!(results[7]["error"]["kind"], "malformed_json");
    assert!(results[7]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("names no tool"));
}

#[test]
fn a_model_that_cannot_write_a_valid_call_is_stopped_after_max_repairs() {
    let bad = || Reply::tool_calls(vec![("memory_recall", r#"{"query": 42}"#)]);
    let srv = ScriptedLlm::start(vec![
        bad(),
        bad(),
        bad(),
        bad(),
        bad(),
        Reply::text("never"),
    ]);
    let mut cfg = Config::default();
    cfg.agent.max_repairs = Some(2);
    let rt = runtime("full", cfg);
    let mut a = agent(&rt, &srv, ProviderKind::Openai);
    let (r, rec) = turn(&mut a, "go");
    let Outcome::Failed(e) = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert!(e.contains("max_repairs"), "{e}");
    assert_eq!(
        rec.calls.len(),
        3,
        "two repairs, then the third bad call ends it"
    );
    assert_eq!(srv.requests().len(), 3);
}
