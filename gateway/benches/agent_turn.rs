//! Agent overhead per turn, excluding the model and the tools (target ≤ 200 µs).
//!
//! The model is an in-process scripted provider that still encodes the OpenAI request body, as a
//! real provider must, and answers instantly. Two turns are measured: a direct answer (hooks,
//! request encoding, state machine), and one tool call then an answer. The tool's own cost is
//! measured in the same run by calling it directly through the pipeline, and subtracted.
//!
//! The first figures leave persistence off (the loop alone); the "persisted" ones write every
//! turn, the usage and the audit row to the real store, SQLite on disk in a temporary folder,
//! as `covo chat` and `covo run` do.

use covo::agent::{Agent, Silent};
use covo::config::Config;
use covo::exec::Session;
use covo::llm::{
    openai, BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, OnText, StopReason,
    ToolCall, Usage,
};
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Answers from a fixed cycle of responses, after encoding the request as a provider would.
struct Scripted {
    replies: Vec<ChatResponse>,
    next: AtomicUsize,
}

impl ChatModel for Scripted {
    fn chat<'a>(
        &'a self,
        req: ChatRequest<'a>,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = openai::request_body("bench", &req, true);
            black_box(body.to_vec());
            let i = self.next.fetch_add(1, Ordering::Relaxed) % self.replies.len();
            let r = self.replies[i].clone();
            if !r.text.is_empty() {
                on_text(&r.text);
            }
            Ok(r)
        })
    }
    fn describe(&self) -> String {
        "scripted".into()
    }
}

fn text(t: &str) -> ChatResponse {
    ChatResponse {
        text: t.into(),
        tool_calls: vec![],
        usage: Usage::default(),
        stop: StopReason::EndTurn,
    }
}

fn runtime() -> Arc<Runtime> {
    Arc::new(
        Runtime::new(covo::tools::options(Config::default()))
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    )
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rt = runtime();
    let answer_only: Arc<dyn ChatModel> = Arc::new(Scripted {
        replies: vec![text("It is 21.4 °C.")],
        next: AtomicUsize::new(0),
    });
    let with_tool: Arc<dyn ChatModel> = Arc::new(Scripted {
        replies: vec![
            ChatResponse {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "tool_describe".into(),
                    arguments: r#"{"name":"sensor_read"}"#.into(),
                }],
                usage: Usage::default(),
                stop: StopReason::ToolUse,
            },
            text("sensor_read takes a sensor name."),
        ],
        next: AtomicUsize::new(0),
    });
    let token = CancellationToken::new();
    let mut g = c.benchmark_group("agent turn");
    g.bench_function("direct answer", |b| {
        let mut agent = Agent::new(
            rt.clone(),
            Some(answer_only.clone()),
            Session::new("bench", "cli"),
        )
        .without_persistence();
        b.iter(|| {
            let r = tokio.block_on(agent.turn("how warm is it?", &token, &mut Silent));
            agent.reset(Session::new("bench", "cli"));
            black_box(r)
        })
    });
    g.bench_function("one tool call then answer", |b| {
        let mut agent = Agent::new(
            rt.clone(),
            Some(with_tool.clone()),
            Session::new("bench", "cli"),
        )
        .without_persistence();
        b.iter(|| {
            let r = tokio.block_on(agent.turn("what does sensor_read take?", &token, &mut Silent));
            agent.reset(Session::new("bench", "cli"));
            black_box(r)
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(
        Runtime::new(covo::tools::options(Config::default()))
            .unwrap()
            .with_store(Store::open_in(dir.path()).unwrap()),
    );
    g.bench_function("direct answer, persisted (SQLite on disk)", |b| {
        let mut agent = Agent::new(
            disk.clone(),
            Some(answer_only.clone()),
            Session::new("bench", "cli"),
        );
        b.iter(|| {
            let r = tokio.block_on(agent.turn("how warm is it?", &token, &mut Silent));
            agent.reset(Session::new("bench", "cli"));
            black_box(r)
        })
    });
    g.bench_function(
        "one tool call then answer, persisted (SQLite on disk)",
        |b| {
            let mut agent = Agent::new(
                disk.clone(),
                Some(with_tool.clone()),
                Session::new("bench", "cli"),
            );
            b.iter(|| {
                let r =
                    tokio.block_on(agent.turn("what does sensor_read take?", &token, &mut Silent));
                agent.reset(Session::new("bench", "cli"));
                black_box(r)
            })
        },
    );
    g.bench_function("the tool alone, SQLite on disk (subtract)", |b| {
        let s = Session::new("bench", "cli");
        b.iter(|| {
            black_box(
                disk.call(
                    &s,
                    Via::Direct,
                    "tool_describe",
                    json!({"name": "sensor_read"}),
                )
                .unwrap(),
            )
        })
    });
    g.bench_function("the tool alone (subtract)", |b| {
        let s = Session::new("bench", "cli");
        b.iter(|| {
            black_box(
                rt.call(
                    &s,
                    Via::Direct,
                    "tool_describe",
                    json!({"name": "sensor_read"}),
                )
                .unwrap(),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
