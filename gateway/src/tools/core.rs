//! The `core` toolset.

use crate::error::{ArgProblem, CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use crate::store::{PlanMode, Todo, TodoStatus};
use covo_core::catalog::core as c;
use serde::Deserialize;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::CONVERSATION_SEARCH, conversation_search),
    ToolDef::local(&c::SEND_MESSAGE, send_message),
    ToolDef::local(&c::TODO_WRITE, todo_write),
    ToolDef::local(&c::PLAN_UPDATE, plan_update),
    ToolDef::local(&c::EXIT_PLAN_MODE, exit_plan_mode),
    ToolDef::local(&c::ASK_CLARIFICATION, ask_clarification),
    ToolDef::local(&c::STRUCTURED_OUTPUT, structured_output),
];

/// Default number of `conversation_search` hits.
const SEARCH_DEFAULT: usize = 10;
/// Most `conversation_search` hits.
const SEARCH_MAX: usize = 50;

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
    conversation_id: Option<String>,
}

fn conversation_search(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SearchArgs = cx.args(args)?;
    let limit = a.limit.unwrap_or(SEARCH_DEFAULT).clamp(1, SEARCH_MAX);
    let hits = cx
        .store()?
        .search_turns(&a.query, a.conversation_id.as_deref(), limit)
        .map_err(|e| CallError::from_query(cx.tool.name, "/query", e))?;
    Ok(json!({ "count": hits.len(), "hits": hits }))
}

#[derive(Deserialize)]
struct SendArgs {
    text: String,
    channel: Option<String>,
}

fn send_message(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SendArgs = cx.args(args)?;
    let channel = a.channel.unwrap_or_else(|| cx.session.channel.clone());
    let io = cx.user_io();
    let channels = io.channels();
    let connected: Vec<&str> = channels
        .iter()
        .filter(|(_, up)| *up)
        .map(|(n, _)| n.as_str())
        .collect();
    let outcome = if connected.contains(&channel.as_str()) {
        io.send(&channel, &a.text)
    } else if channels.iter().any(|(n, _)| *n == channel) {
        Err(format!("channel '{channel}' is not connected"))
    } else {
        Err(format!("unknown channel '{channel}'"))
    };
    let store = cx.store()?;
    match outcome {
        Ok(()) => {
            let id = store.record_outbox(&cx.session.id, &channel, &a.text, true, None)?;
            Ok(json!({ "delivered": true, "channel": channel, "message_id": id }))
        }
        Err(why) => {
            store.record_outbox(&cx.session.id, &channel, &a.text, false, Some(&why))?;
            Err(ToolError::Failed {
                tool: cx.tool.name.into(),
                message: format!("{why}; connected channels: {}", connected_list(&connected)),
                hint: connected
                    .first()
                    .map(|c| format!("send on a connected channel, e.g. '{c}'")),
            }
            .into())
        }
    }
}

fn connected_list(connected: &[&str]) -> String {
    if connected.is_empty() {
        "none".into()
    } else {
        connected.join(", ")
    }
}

/// The to-do list as tools return it: the items and how many are in each state.
pub(crate) fn todo_json(items: &[Todo]) -> Value {
    let count = |s: TodoStatus| items.iter().filter(|t| t.status == s).count();
    json!({
        "items": items,
        "counts": {
            "pending": count(TodoStatus::Pending),
            "in_progress": count(TodoStatus::InProgress),
            "done": count(TodoStatus::Done),
            "total": items.len(),
        }
    })
}

#[derive(Deserialize)]
struct TodoArgs {
    items: Vec<Todo>,
}

fn todo_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: TodoArgs = cx.args(args)?;
    let in_progress: Vec<usize> = a
        .items
        .iter()
        .enumerate()
        .filter(|(_, t)| t.status == TodoStatus::InProgress)
        .map(|(i, _)| i)
        .collect();
    if in_progress.len() > 1 {
        return Err(ToolError::InvalidArguments {
            tool: cx.tool.name.into(),
            problems: in_progress
                .iter()
                .map(|i| ArgProblem {
                    path: format!("/items/{i}/status"),
                    problem: format!(
                        "at most one item may be in_progress, but {} are; mark the others pending or done",
                        in_progress.len()
                    ),
                })
                .collect(),
        }
        .into());
    }
    let stored = cx.store()?.replace_todos(&cx.session.id, &a.items)?;
    Ok(todo_json(&stored))
}

#[derive(Deserialize)]
struct PlanArgs {
    steps: Vec<String>,
    active: Option<usize>,
    note: Option<String>,
}

fn plan_update(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: PlanArgs = cx.args(args)?;
    if a.steps.is_empty() {
        return Err(ToolError::invalid(cx.tool.name, "/steps", "give at least one step").into());
    }
    if let Some(i) = a.active {
        if i >= a.steps.len() {
            return Err(ToolError::invalid(
                cx.tool.name,
                "/active",
                format!(
                    "step {i} does not exist: the plan has {} steps, so active must be 0..={}",
                    a.steps.len(),
                    a.steps.len() - 1
                ),
            )
            .into());
        }
    }
    let plan = cx
        .store()?
        .save_plan(&cx.session.id, &a.steps, a.active, a.note.as_deref())?;
    Ok(json!({ "mode": plan.mode, "plan": plan }))
}

fn exit_plan_mode(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let store = cx.store()?;
    let Some(plan) = store.plan(&cx.session.id)? else {
        return Err(ToolError::Failed {
            tool: cx.tool.name.into(),
            message: "there is no plan to present".into(),
            hint: Some("call plan_update with the steps first".into()),
        }
        .into());
    };
    let mut question = String::from("Execute this plan?");
    for (i, step) in plan.steps.iter().enumerate() {
        question.push_str(&format!("\n{}. {step}", i + 1));
    }
    if let Some(note) = &plan.note {
        question.push_str(&format!("\nNote: {note}"));
    }
    let choices = ["accept".to_string(), "revise".to_string()];
    let Some(answer) = cx.user_io().ask(&question, &choices) else {
        return Err(ToolError::Failed {
            tool: cx.tool.name.into(),
            message: format!(
                "no user answered on channel '{}', so no user could accept the plan",
                cx.session.channel
            ),
            hint: Some("keep planning, or send the plan with send_message and ask later".into()),
        }
        .into());
    };
    if answer.trim().eq_ignore_ascii_case("accept") {
        store.set_plan_mode(&cx.session.id, PlanMode::Executing)?;
        Ok(json!({ "accepted": true, "mode": PlanMode::Executing, "steps": plan.steps }))
    } else {
        store.set_plan_mode(&cx.session.id, PlanMode::Planning)?;
        Ok(json!({
            "accepted": false,
            "mode": PlanMode::Planning,
            "feedback": answer,
            "next": "revise the plan with plan_update, then call exit_plan_mode again"
        }))
    }
}

#[derive(Deserialize)]
struct AskArgs {
    question: String,
    #[serde(default)]
    choices: Vec<String>,
}

fn ask_clarification(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: AskArgs = cx.args(args)?;
    match cx.user_io().ask(&a.question, &a.choices) {
        Some(answer) => Ok(json!({ "answer": answer })),
        None => Err(ToolError::Failed {
            tool: cx.tool.name.into(),
            message: format!("no interactive user on channel '{}'", cx.session.channel),
            hint: Some("make a reasonable assumption and state it in your answer".into()),
        }
        .into()),
    }
}

#[derive(Deserialize)]
struct OutputArgs {
    schema: Value,
    output: Value,
}

fn structured_output(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: OutputArgs = cx.args(args)?;
    let validator = jsonschema::validator_for(&a.schema).map_err(|e| {
        ToolError::invalid(
            cx.tool.name,
            "/schema",
            format!("not a valid JSON Schema: {e}"),
        )
    })?;
    let problems: Vec<ArgProblem> = validator
        .iter_errors(&a.output)
        .map(|e| ArgProblem {
            path: format!("/output{}", e.instance_path()),
            problem: e.to_string(),
        })
        .collect();
    if !problems.is_empty() {
        return Err(ToolError::InvalidArguments {
            tool: cx.tool.name.into(),
            problems,
        }
        .into());
    }
    Ok(json!({ "valid": true, "output": a.output }))
}

/// Shared helpers for tool tests: a runtime over an in-memory store and a scripted user.
#[cfg(test)]
pub(crate) mod testkit {
    use crate::config::Config;
    use crate::error::{CallError, ToolError};
    use crate::exec::Session;
    use crate::runtime::{Runtime, Summarizer, UserIo, Via};
    use crate::store::Store;
    use serde_json::Value;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    /// What the scripted user saw: messages sent and questions asked.
    #[derive(Default)]
    pub struct Log {
        pub sent: Vec<(String, String)>,
        pub asked: Vec<(String, Vec<String>)>,
    }

    /// A user who answers from a queue (`None` = nobody answered) on `cli` (and a
    /// disconnected `mqtt`).
    pub struct Scripted {
        answers: Mutex<VecDeque<Option<String>>>,
        log: Arc<Mutex<Log>>,
    }

    impl UserIo for Scripted {
        fn send(&self, channel: &str, text: &str) -> Result<(), String> {
            let mut log = self.log.lock().unwrap();
            log.sent.push((channel.into(), text.into()));
            Ok(())
        }
        fn ask(&self, question: &str, choices: &[String]) -> Option<String> {
            let mut log = self.log.lock().unwrap();
            log.asked.push((question.into(), choices.to_vec()));
            self.answers.lock().unwrap().pop_front().flatten()
        }
        fn channels(&self) -> Vec<(String, bool)> {
            vec![("cli".into(), true), ("mqtt".into(), false)]
        }
    }

    /// A summarizer that reports the transcript length.
    pub struct CountingModel;

    impl Summarizer for CountingModel {
        fn summarize(&self, transcript: &str) -> Result<String, String> {
            Ok(format!(
                "model summary of {} lines",
                transcript.lines().count()
            ))
        }
    }

    /// A runtime (profile `full`) whose user answers `answers` in order.
    pub fn runtime(answers: &[Option<&str>]) -> (Runtime, Arc<Mutex<Log>>) {
        runtime_with(answers, None)
    }

    /// Like [`runtime`], with a model summarizer.
    pub fn runtime_with(
        answers: &[Option<&str>],
        summarizer: Option<Box<dyn Summarizer>>,
    ) -> (Runtime, Arc<Mutex<Log>>) {
        let log = Arc::new(Mutex::new(Log::default()));
        let mut opts = crate::tools::options(Config::default());
        opts.user_io = Box::new(Scripted {
            answers: Mutex::new(answers.iter().map(|a| a.map(String::from)).collect()),
            log: log.clone(),
        });
        opts.summarizer = summarizer;
        let rt = Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap());
        (rt, log)
    }

    /// Calls a tool directly in session `s1` on `cli`.
    pub fn call(rt: &Runtime, tool: &str, args: Value) -> Result<Value, CallError> {
        rt.call(&Session::new("s1", "cli"), Via::Direct, tool, args)
    }

    /// Calls a tool that must succeed.
    pub fn ok(rt: &Runtime, tool: &str, args: Value) -> Value {
        call(rt, tool, args).unwrap_or_else(|e| panic!("{tool} failed: {e}"))
    }

    /// Calls a tool that must fail with an error for the model.
    pub fn err(rt: &Runtime, tool: &str, args: Value) -> ToolError {
        match call(rt, tool, args) {
            Err(CallError::Respond(e)) => e,
            other => panic!("{tool}: expected a tool error, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use crate::error::ToolError;
    use crate::store::PlanMode;
    use serde_json::json;

    #[test]
    fn conversation_search_finds_stored_turns_best_first() {
        let (rt, _) = runtime(&[]);
        let store = rt.store().unwrap();
        let c = store.create_conversation("greenhouse").unwrap();
        store
            .append_turn(&c, "user", "the greenhouse fan is noisy")
            .unwrap();
        store
            .append_turn(
                &c,
                "assistant",
                "greenhouse fan: greenhouse fan bearings worn",
            )
            .unwrap();
        store.append_turn(&c, "user", "order new bearings").unwrap();
        store
            .append_turn("other", "user", "unrelated fan talk")
            .unwrap();
        let r = ok(
            &rt,
            "conversation_search",
            json!({"query": "greenhouse fan"}),
        );
        let hits = r["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0]["seq"], 2);
        assert_eq!(hits[0]["conversation_id"], c);
        assert!(hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("[greenhouse]"));
        assert!(hits[0]["at"].is_string());
        let only = ok(
            &rt,
            "conversation_search",
            json!({"query": "fan", "conversation_id": "other", "limit": 5}),
        );
        assert_eq!(only["count"], 1);
        assert_eq!(only["hits"][0]["conversation_id"], "other");
    }

    #[test]
    fn a_huge_conversation_search_query_is_capped_and_still_finds_the_turn() {
        let (rt, _) = runtime(&[]);
        let store = rt.store().unwrap();
        store
            .append_turn("s1", "user", "the greenhouse fan is noisy")
            .unwrap();
        let mut q = String::from("greenhouse");
        for i in 0..59_999 {
            q.push_str(&format!(" w{i}"));
        }
        let r = ok(&rt, "conversation_search", json!({"query": q}));
        assert_eq!(r["count"], 1);
        assert_eq!(r["hits"][0]["conversation_id"], "s1");
        let e = err(&rt, "conversation_search", json!({"query": "-- ** --"}));
        assert!(matches!(e, ToolError::InvalidArguments { .. }), "{e:?}");
    }

    #[test]
    fn send_message_delivers_and_records_it_in_the_outbox() {
        let (rt, log) = runtime(&[]);
        let r = ok(&rt, "send_message", json!({"text": "watering done"}));
        assert_eq!(r["delivered"], true);
        assert_eq!(r["channel"], "cli");
        assert_eq!(
            log.lock().unwrap().sent,
            vec![("cli".into(), "watering done".into())]
        );
        let out = rt.store().unwrap().outbox("s1").unwrap();
        assert_eq!(out.len(), 1);
        assert!(out[0].delivered);
    }

    #[test]
    fn send_message_to_a_disconnected_channel_fails_listing_the_connected_ones() {
        let (rt, log) = runtime(&[]);
        let e = err(
            &rt,
            "send_message",
            json!({"text": "hi", "channel": "mqtt"}),
        );
        let ToolError::Failed { message, .. } = e else {
            panic!("{e:?}")
        };
        assert!(message.contains("not connected"), "{message}");
        assert!(message.contains("connected channels: cli"), "{message}");
        assert!(log.lock().unwrap().sent.is_empty());
        let out = rt.store().unwrap().outbox("s1").unwrap();
        assert_eq!(out.len(), 1);
        assert!(!out[0].delivered);
        let e = err(&rt, "send_message", json!({"text": "hi", "channel": "fax"}));
        assert!(e.to_string().contains("unknown channel 'fax'"));
    }

    #[test]
    fn todo_write_replaces_the_whole_list_and_counts_states() {
        let (rt, _) = runtime(&[]);
        ok(
            &rt,
            "todo_write",
            json!({"items": [{"content": "a", "status": "pending"}, {"content": "b", "status": "pending"}]}),
        );
        let r = ok(
            &rt,
            "todo_write",
            json!({"items": [{"content": "c", "status": "in_progress"}, {"content": "d", "status": "done"}]}),
        );
        assert_eq!(r["items"].as_array().unwrap().len(), 2);
        assert_eq!(r["items"][0]["content"], "c");
        assert_eq!(
            r["counts"],
            json!({"pending": 0, "in_progress": 1, "done": 1, "total": 2})
        );
        let read = ok(&rt, "todo_read", json!({}));
        assert_eq!(read, r);
    }

    #[test]
    fn todo_write_rejects_two_items_in_progress_and_keeps_the_old_list() {
        let (rt, _) = runtime(&[]);
        ok(
            &rt,
            "todo_write",
            json!({"items": [{"content": "a", "status": "pending"}]}),
        );
        let e = err(
            &rt,
            "todo_write",
            json!({"items": [{"content": "x", "status": "in_progress"}, {"content": "y", "status": "in_progress"}]}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/items/0/status");
        assert_eq!(problems[1].path, "/items/1/status");
        assert_eq!(ok(&rt, "todo_read", json!({}))["items"][0]["content"], "a");
    }

    #[test]
    fn plan_update_enters_planning_and_accepting_switches_to_executing() {
        let (rt, log) = runtime(&[Some("accept")]);
        let store = rt.store().unwrap();
        let r = ok(
            &rt,
            "plan_update",
            json!({"steps": ["read sensor", "log it"], "active": 0}),
        );
        assert_eq!(r["mode"], "planning");
        assert!(store.in_plan_mode("s1").unwrap());
        let r = ok(&rt, "exit_plan_mode", json!({}));
        assert_eq!(r["accepted"], true);
        assert_eq!(store.plan_mode("s1").unwrap(), PlanMode::Executing);
        let asked = &log.lock().unwrap().asked;
        assert!(asked[0].0.starts_with("Execute this plan?"));
        assert!(asked[0].0.contains("2. log it"));
        assert_eq!(asked[0].1, vec!["accept", "revise"]);
        // A revision while executing keeps executing.
        let r = ok(
            &rt,
            "plan_update",
            json!({"steps": ["read sensor", "log it", "alert"], "active": 2}),
        );
        assert_eq!(r["mode"], "executing");
    }

    #[test]
    fn revising_at_exit_keeps_planning_and_returns_the_feedback() {
        let (rt, _) = runtime(&[Some("add a step to alert me")]);
        ok(&rt, "plan_update", json!({"steps": ["read sensor"]}));
        let r = ok(&rt, "exit_plan_mode", json!({}));
        assert_eq!(r["accepted"], false);
        assert_eq!(r["mode"], "planning");
        assert_eq!(r["feedback"], "add a step to alert me");
        assert!(rt.store().unwrap().in_plan_mode("s1").unwrap());
    }

    #[test]
    fn exit_plan_mode_without_a_plan_or_a_user_fails_with_a_reason() {
        let (rt, _) = runtime(&[None]);
        let e = err(&rt, "exit_plan_mode", json!({}));
        let ToolError::Failed { hint, .. } = e else {
            panic!("{e:?}")
        };
        assert!(hint.unwrap().contains("plan_update"));
        ok(&rt, "plan_update", json!({"steps": ["x"]}));
        let e = err(&rt, "exit_plan_mode", json!({}));
        assert!(e.to_string().contains("no user could accept"), "{e}");
        assert!(rt.store().unwrap().in_plan_mode("s1").unwrap());
    }

    #[test]
    fn plan_update_rejects_an_active_step_out_of_range() {
        let (rt, _) = runtime(&[]);
        let e = err(
            &rt,
            "plan_update",
            json!({"steps": ["a", "b"], "active": 2}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/active");
        assert!(problems[0].problem.contains("0..=1"));
        let e = err(&rt, "plan_update", json!({"steps": []}));
        assert!(matches!(e, ToolError::InvalidArguments { .. }));
    }

    #[test]
    fn ask_clarification_returns_the_answer_or_fails_without_a_user() {
        let (rt, log) = runtime(&[Some("blue"), None]);
        let r = ok(
            &rt,
            "ask_clarification",
            json!({"question": "Which LED?", "choices": ["red", "blue"]}),
        );
        assert_eq!(r, json!({"answer": "blue"}));
        assert_eq!(log.lock().unwrap().asked[0].1, vec!["red", "blue"]);
        let e = err(&rt, "ask_clarification", json!({"question": "Again?"}));
        assert!(e
            .to_string()
            .contains("no interactive user on channel 'cli'"));
    }

    #[test]
    fn structured_output_accepts_valid_output_and_locates_each_problem() {
        let (rt, _) = runtime(&[]);
        let schema = json!({"type": "object", "properties": {"temp": {"type": "number"}, "unit": {"enum": ["C", "F"]}}, "required": ["temp", "unit"]});
        let r = ok(
            &rt,
            "structured_output",
            json!({"schema": schema, "output": {"temp": 21.5, "unit": "C"}}),
        );
        assert_eq!(
            r,
            json!({"valid": true, "output": {"temp": 21.5, "unit": "C"}})
        );
        let e = err(
            &rt,
            "structured_output",
            json!({"schema": schema, "output": {"temp": "warm", "unit": "K"}}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert!(paths.contains(&"/output/temp"), "{paths:?}");
        assert!(paths.contains(&"/output/unit"), "{paths:?}");
    }

    #[test]
    fn structured_output_with_a_broken_schema_blames_the_schema() {
        let (rt, _) = runtime(&[]);
        let e = err(
            &rt,
            "structured_output",
            json!({"schema": {"type": "nonsense"}, "output": 1}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/schema");
    }
}
