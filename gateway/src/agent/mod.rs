//! The agent loop: a user message → model call → tool calls → results → model … → final answer.
//!
//! `core::Turn` decides what happens next and never touches a socket; `Agent::turn` is the I/O
//! loop that drives it: it runs the hooks, calls the model (streaming text to an `Observer`), runs
//! tools through the one dispatch pipeline, persists the conversation, and honours cancellation.

pub mod core;
pub mod scheduler;
pub mod textcalls;

use crate::error::{CallError, ToolError};
use crate::exec::Session;
use crate::hooks::ModelReply;
use crate::llm::{ChatModel, ChatRequest, Message, ToolCall, Usage};
use crate::runtime::{Runtime, Via};
pub use core::{Action, Outcome, ToolResult, Turn};
use covo_core::spec::Effect;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The built-in system prompt.
pub const SYSTEM_PROMPT: &str = "You are covo, an assistant running on a Linux board that acts as a \
gateway to sensors, pins, buses and attached devices. Use the tools you are given. If you need a tool \
you were not shown, find it with tool_search and run it with tool_call. A tool error comes back as JSON \
with a kind and a message: fix the call and retry, or explain the problem. Answer briefly, with units.";

/// Tool results longer than this are cut, with a note, to protect the context window.
pub const MAX_RESULT_BYTES: usize = 16 * 1024;

/// Model calls per user turn unless configured.
pub const DEFAULT_MAX_STEPS: usize = 16;

/// The history's budget in estimated tokens unless `[agent] history_tokens` says otherwise.
pub const DEFAULT_HISTORY_TOKENS: usize = 12_000;

/// A message's size in estimated tokens: about four bytes a token, plus a few for its framing.
pub fn estimate_tokens(m: &Message) -> usize {
    let bytes = match m {
        Message::User(t) => t.len(),
        Message::Assistant { text, tool_calls } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len() + c.id.len())
                    .sum::<usize>()
        }
        Message::ToolResult { content, name, .. } => content.len() + name.len(),
    };
    bytes.div_ceil(4) + 4
}

/// Drops the oldest whole exchanges (a user message and everything after it up to the next
/// user message, so a tool call never loses its result) until the history plus `incoming`
/// estimated tokens fit `budget`. Returns how many messages went.
pub fn trim_history(history: &mut Vec<Message>, budget: usize, incoming: usize) -> usize {
    let mut total: usize = history.iter().map(estimate_tokens).sum::<usize>() + incoming;
    let mut cut = 0;
    while total > budget && cut < history.len() {
        // One exchange: the message at `cut` and everything up to the next user message.
        let mut end = cut + 1;
        while end < history.len() && !matches!(history[end], Message::User(_)) {
            end += 1;
        }
        total -= history[cut..end].iter().map(estimate_tokens).sum::<usize>();
        cut = end;
    }
    history.drain(..cut);
    cut
}

/// What the driver reports as the turn runs. Every method has a do-nothing default.
pub trait Observer: Send {
    /// Streamed answer text.
    fn on_text(&mut self, _delta: &str) {}
    /// A tool call is about to run.
    fn on_tool_call(&mut self, _call: &ToolCall) {}
    /// A tool call finished.
    fn on_tool_result(&mut self, _call: &ToolCall, _result: &ToolResult) {}
    /// Hooks noted something (e.g. the filter failed closed).
    fn on_note(&mut self, _note: &str) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// How one turn went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnReport {
    /// How it ended.
    pub outcome: Outcome,
    /// Tokens used over all its model calls.
    pub usage: Usage,
    /// Model calls made.
    pub steps: usize,
    /// Tool calls run.
    pub tool_calls: usize,
}

/// A conversation with the model, on one session.
pub struct Agent {
    rt: Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    session: Session,
    history: Vec<Message>,
    system: String,
    max_steps: usize,
    persist: bool,
    history_tokens: usize,
    max_repairs: usize,
    dropped: usize,
    via: Via,
}

impl Agent {
    /// An agent on `session`. Without a model, turns fail with a message that says how to set one.
    pub fn new(rt: Arc<Runtime>, model: Option<Arc<dyn ChatModel>>, session: Session) -> Agent {
        let cfg = &rt.config().agent;
        let system = cfg
            .system_prompt
            .clone()
            .unwrap_or_else(|| SYSTEM_PROMPT.to_string());
        let max_steps = cfg.max_steps.unwrap_or(DEFAULT_MAX_STEPS);
        let history_tokens = cfg.history_tokens.unwrap_or(DEFAULT_HISTORY_TOKENS);
        let max_repairs = cfg.max_repairs.unwrap_or(core::DEFAULT_MAX_REPAIRS);
        Agent {
            rt,
            model,
            session,
            history: Vec::new(),
            system,
            max_steps,
            persist: true,
            history_tokens,
            max_repairs,
            dropped: 0,
            via: Via::Direct,
        }
    }

    /// The path its tool calls take in the pipeline and the audit log (default
    /// `Via::Direct`; a Telegram chat's agent calls as `Via::Telegram`).
    pub fn with_via(mut self, via: Via) -> Self {
        self.via = via;
        self
    }

    /// Turns off writing turns to the store (benchmarks of the loop itself).
    pub fn without_persistence(mut self) -> Self {
        self.persist = false;
        self
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// The model, if one is configured.
    pub fn model(&self) -> Option<&Arc<dyn ChatModel>> {
        self.model.as_ref()
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Starts a new conversation on a new session id.
    pub fn reset(&mut self, session: Session) {
        self.session = session;
        self.history.clear();
        self.dropped = 0;
    }

    /// Messages dropped from the history so far to keep it within its token budget.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// Stores one turn, on the blocking pool: SQLite may wait for another process's lock, and
    /// this future must not hold up the runtime's thread meanwhile.
    async fn persist(&self, role: &str, content: &str) {
        if !self.persist || content.is_empty() {
            return;
        }
        let (rt, id, role, content) = (
            self.rt.clone(),
            self.session.id.clone(),
            role.to_string(),
            content.to_string(),
        );
        let r = tokio::task::spawn_blocking(move || {
            rt.store().and_then(|s| s.append_turn(&id, &role, &content))
        })
        .await;
        match r {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "could not store the turn"),
            Err(e) => tracing::warn!(error = %e, "storing the turn crashed"),
        }
    }

    /// Runs one user turn to its end: an answer, the step budget, cancellation or a failure.
    pub async fn turn(
        &mut self,
        user: &str,
        cancel: &CancellationToken,
        obs: &mut dyn Observer,
    ) -> TurnReport {
        let mut usage = Usage::default();
        let mut tool_calls = 0;
        let mut turn = Turn::new(self.max_steps).with_max_repairs(self.max_repairs);
        self.persist("user", user).await;
        let incoming = estimate_tokens(&Message::User(user.to_string()));
        // Room is kept for the note about dropped messages (below), about 30 tokens.
        let dropped = trim_history(&mut self.history, self.history_tokens, incoming + 32);
        if dropped > 0 {
            self.dropped += dropped;
            tracing::info!(
                session = %self.session.id,
                dropped,
                "older messages dropped to keep the history within its token budget"
            );
        }
        // The system prompt never changes within a conversation, so with the tools after it
        // it is a byte-stable prefix that a server's prompt cache keeps from turn to turn. The
        // note about dropped messages rides on the oldest message that remains instead.
        let system = self.system.clone();
        let mut first = user.to_string();
        if dropped > 0 {
            let note = format!(
                "({} earlier messages of this conversation were dropped to fit the context; \
                 the whole conversation is in the store.)\n\n",
                self.dropped
            );
            match self.history.first_mut() {
                Some(Message::User(t)) => t.insert_str(0, &note),
                _ => first.insert_str(0, &note),
            }
        }
        let Some(model) = self.model.clone() else {
            self.history.push(Message::User(user.to_string()));
            return TurnReport {
                outcome: Outcome::Failed(NO_MODEL.into()),
                usage,
                steps: 0,
                tool_calls,
            };
        };
        let mut action = turn.start(&mut self.history, &first);
        loop {
            action = match action {
                Action::CallModel => {
                    let call = self.rt.model_call(&self.session);
                    for n in &call.notes {
                        obs.on_note(n);
                    }
                    let result = {
                        let req = ChatRequest {
                            system: &system,
                            messages: &self.history,
                            tools: &call.tools,
                        };
                        let mut on_text = |t: &str| obs.on_text(t);
                        tokio::select! {
                            r = model.chat(req, &mut on_text) => Some(r),
                            _ = cancel.cancelled() => None,
                        }
                    };
                    match result {
                        None => turn.cancel(&mut self.history),
                        Some(Err(e)) => turn.on_model_error(e.to_string()),
                        Some(Ok(resp)) => {
                            usage += resp.usage;
                            let names: Vec<String> =
                                resp.tool_calls.iter().map(|c| c.name.clone()).collect();
                            self.rt.after_model_call(
                                &self.session,
                                &ModelReply {
                                    text: &resp.text,
                                    tool_calls: &names,
                                },
                            );
                            let next = turn.on_model_response(&mut self.history, resp);
                            if let Some(Message::Assistant { text, tool_calls }) =
                                self.history.last()
                            {
                                let record = assistant_record(text, tool_calls);
                                self.persist("assistant", &record).await;
                            }
                            next
                        }
                    }
                }
                Action::RunTools(calls) => {
                    tool_calls += calls.len();
                    for c in &calls {
                        obs.on_tool_call(c);
                    }
                    let ran = tokio::select! {
                        r = self.run_tools(&calls) => Some(r),
                        _ = cancel.cancelled() => None,
                    };
                    match ran {
                        None => turn.cancel(&mut self.history),
                        Some((results, fatal)) => {
                            for (c, r) in calls.iter().zip(&results) {
                                obs.on_tool_result(c, r);
                                self.persist("tool", &format!("{}: {}", c.name, r.content))
                                    .await;
                            }
                            match fatal {
                                Some(msg) => turn.on_fatal(&mut self.history, results, msg),
                                None => turn.on_tool_results(&mut self.history, results),
                            }
                        }
                    }
                }
                Action::Finish(outcome) => {
                    let steps = turn.steps();
                    if self.persist {
                        let (rt, id, model_name) =
                            (self.rt.clone(), self.session.id.clone(), model.describe());
                        let r = tokio::task::spawn_blocking(move || {
                            rt.store()
                                .and_then(|s| s.record_usage(&id, &model_name, steps, usage))
                        })
                        .await;
                        if let Ok(Err(e)) = r {
                            tracing::warn!(error = %e, "could not record usage");
                        }
                    }
                    return TurnReport {
                        outcome,
                        usage,
                        steps,
                        tool_calls,
                    };
                }
            };
        }
    }

    /// Runs the calls of one model response: consecutive `read` calls concurrently, everything
    /// else one at a time in order. Results come back in call order; a fatal error stops the rest.
    async fn run_tools(&self, calls: &[ToolCall]) -> (Vec<ToolResult>, Option<String>) {
        let mut results = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let read = |c: &ToolCall| {
                self.rt
                    .owned()
                    .get(&c.name)
                    .is_some_and(|d| d.effect == Effect::Read)
            };
            let end = if read(&calls[i]) {
                i + calls[i..].iter().take_while(|c| read(c)).count()
            } else {
                i + 1
            };
            let batch: Vec<_> = calls[i..end]
                .iter()
                .map(|c| {
                    let rt = self.rt.clone();
                    let session = self.session.clone();
                    let c = c.clone();
                    let via = self.via;
                    tokio::task::spawn_blocking(move || {
                        let out = dispatch(&rt, &session, via, &c);
                        (c.id, out)
                    })
                })
                .collect();
            for joined in futures_util::future::join_all(batch).await {
                let (id, out) = match joined {
                    Ok(x) => x,
                    Err(e) => return (results, Some(format!("a tool task failed: {e}"))),
                };
                match out {
                    Ok(content) => results.push(ToolResult {
                        call_id: id,
                        content: cap(content),
                        is_error: false,
                    }),
                    Err(CallError::Respond(e)) => results.push(ToolResult {
                        call_id: id,
                        content: e.to_json().to_string(),
                        is_error: true,
                    }),
                    Err(CallError::Fatal(e)) => return (results, Some(e.to_string())),
                }
            }
            i = end;
        }
        (results, None)
    }
}

/// What a turn says when no model is configured.
pub const NO_MODEL: &str = concat!(
    "no model is configured, so there is nobody to answer. Set one, for example:\n",
    "  Ollama:    COVO_LLM_BASE_URL=http://localhost:11434/v1 COVO_LLM_MODEL=qwen2.5:7b\n",
    "  OpenAI:    OPENAI_API_KEY=sk-... COVO_LLM_MODEL=gpt-4o-mini\n",
    "  Anthropic: COVO_LLM_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-... COVO_LLM_MODEL=claude-sonnet-4-5\n",
    "or put them under [llm] in covo.toml. Slash commands (/tools, /search, /describe, /call) work without a model."
);

fn dispatch(rt: &Runtime, session: &Session, via: Via, c: &ToolCall) -> Result<String, CallError> {
    if c.name.is_empty() {
        let shown: String = c.arguments.chars().take(200).collect();
        return Err(ToolError::MalformedJson {
            tool: String::new(),
            detail: format!(
                "this call names no tool (it carried: {shown:?}); call again with a tool's name and JSON arguments"
            ),
        }
        .into());
    }
    rt.call_raw(session, via, &c.name, &c.arguments)
        .map(|v| v.to_string())
}

fn cap(mut content: String) -> String {
    if content.len() <= MAX_RESULT_BYTES {
        return content;
    }
    let mut cut = MAX_RESULT_BYTES;
    while !content.is_char_boundary(cut) {
        cut -= 1;
    }
    let total = content.len();
    content.truncate(cut);
    format!("{content}… [truncated: {total} bytes in all; ask for less]")
}

fn assistant_record(text: &str, calls: &[ToolCall]) -> String {
    let mut s = text.to_string();
    for c in calls {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&format!("[tool call] {} {}", c.name, c.arguments));
    }
    s
}

/// A session id for a new conversation, registered in the store.
pub fn new_session(rt: &Runtime, channel: &str, title: &str) -> Session {
    match rt.store().and_then(|s| s.create_conversation(title)) {
        Ok(id) => Session::new(id, channel),
        Err(e) => {
            tracing::warn!(error = %e, "could not create a conversation; using a transient id");
            Session::new(format!("transient-{}", std::process::id()), channel)
        }
    }
}

/// The JSON a tool result carried, for display.
pub fn result_json(r: &ToolResult) -> Value {
    serde_json::from_str(&r.content).unwrap_or_else(|_| Value::String(r.content.clone()))
}
