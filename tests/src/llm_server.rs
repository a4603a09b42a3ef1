//! A scripted LLM server for end-to-end tests.
//!
//! [`ScriptedLlm::start`] binds a real HTTP/1.1 server on `127.0.0.1` (ephemeral port, one
//! background thread, no async runtime needed by the caller) that speaks two wire formats:
//!
//! * OpenAI Chat Completions on `POST /v1/chat/completions` (base URL
//!   [`ScriptedLlm::openai_base_url`], `http://127.0.0.1:PORT/v1`);
//! * Anthropic Messages on `POST /v1/messages` (base URL [`ScriptedLlm::anthropic_base_url`],
//!   `http://127.0.0.1:PORT`).
//!
//! Each request to either endpoint consumes the next [`Reply`] of the script, in arrival order,
//! and the reply is rendered in the format of the endpoint it is served on. A request body with
//! `"stream": true` gets Server-Sent Events (`content-type: text/event-stream`, chunked transfer
//! encoding, one event per chunk with a 1 ms pause between chunks); any other body gets a single
//! JSON document. Every request, including those to unknown paths, is recorded *before* it is
//! answered, so a test can inspect it even while its reply hangs.
//!
//! # Wire details
//!
//! * Ids: messages are `chatcmpl-N` / `msg_N` where `N` counts message replies rendered (1-based);
//!   tool calls are `call_N` (OpenAI) / `toolu_N` (Anthropic), `N` counting every tool call the
//!   server has rendered, so ids are unique across the server's life. `created` is always
//!   [`CREATED`]. `model` echoes the request's `model` (or `scripted-model`).
//! * Chunking: text and tool-call arguments are split into pieces of [`PIECE_CHARS`] characters.
//!   OpenAI: a role chunk (`{"role":"assistant","content":""}`, `content: null` when the reply has
//!   no text), one chunk per text piece, then per call a first chunk with `index`, `id`, `type`,
//!   `function.name` and empty `arguments`, then one chunk per argument piece carrying only
//!   `index` and `function.arguments`; a final chunk with an empty delta and `finish_reason`
//!   `stop` or `tool_calls`; then `data: [DONE]`. Anthropic: `message_start`, per block
//!   `content_block_start` / `content_block_delta`s / `content_block_stop` (text first, then one
//!   `tool_use` block per call), one `ping` right after the first `content_block_start` (or after
//!   `message_start` when there is no block), `message_delta`, `message_stop`.
//! * Usage (see [`Usage`]): `input_tokens = request body bytes / 4`, `output_tokens = (text bytes +
//!   for each call name bytes + arguments bytes) / 4 + 1`. OpenAI non-stream: `usage`; OpenAI
//!   stream: when the request sets `stream_options.include_usage`, every chunk has `"usage": null`
//!   and a last chunk with `"choices": []` carries it (as OpenAI does); otherwise the
//!   `finish_reason` chunk carries it, so usage is always sent at least once. Anthropic stream:
//!   `message_start.message.usage` has `input_tokens` and `output_tokens: 1`, and
//!   `message_delta.usage.output_tokens` has the final (cumulative) output count.
//! * Tool-call arguments are raw text and are never validated, so malformed JSON can be scripted.
//!   OpenAI carries the text verbatim in `function.arguments` (both modes). Anthropic streaming
//!   sends it verbatim as `input_json_delta.partial_json` pieces (a single `""` piece when the
//!   text is empty). Anthropic non-stream `tool_use.input` is the parsed JSON when the text
//!   parses, `{}` when it is empty, and otherwise the raw text as a JSON *string* (the real API
//!   would always send an object; a client should treat a non-object input as malformed).
//! * Errors: [`Reply::status`] bodies are sent verbatim as `application/json` with the given
//!   status and extra headers, in stream mode too. An exhausted script answers 500 with an error
//!   in the endpoint's style whose message starts with `script exhausted`. An unknown path answers
//!   404 (`/apply-template` too, unless [`ScriptedLlm::serve_template`] set what it answers)
//!   and a non-POST on a known path answers 405; neither consumes a reply.
//! * Bad output: [`Reply::raw`] sends any status, `content-type` and body verbatim (an empty
//!   200, JSON of the wrong shape, a hand-written event stream); [`Reply::truncated`] serves a
//!   message stream that stops before its finishing events.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::{json, Value};

/// Characters per streamed text or argument piece.
pub const PIECE_CHARS: usize = 4;
/// The fixed `created` timestamp of OpenAI responses.
pub const CREATED: u64 = 1_700_000_000;
/// Pause between two streamed chunks.
const CHUNK_PAUSE: Duration = Duration::from_millis(1);
/// How often the accept loop looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// One tool call of a scripted reply: a tool name and its arguments as raw (maybe malformed) JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: String,
}

/// One scripted reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A successful assistant message: text (none when empty), then tool calls.
    Message {
        text: String,
        tool_calls: Vec<ToolCall>,
        headers: Vec<(String, String)>,
    },
    /// An HTTP error: the status code, a body sent verbatim as `application/json`, extra headers.
    Status {
        code: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// Wait, then serve the inner reply; the wait ends early (with no answer) when the server is dropped.
    Delay(Duration, Box<Reply>),
    /// Never answer; the request is abandoned when the server is dropped.
    Hang,
    /// A raw answer: the status, the `content-type` and the body, sent verbatim (in stream mode
    /// too), e.g. an empty 200 or a JSON document of the wrong shape.
    Raw {
        code: u16,
        content_type: String,
        body: String,
    },
    /// The inner message cut short: streamed, it stops before its end (OpenAI: no chunk with a
    /// `finish_reason`, no usage chunk, no `[DONE]`; Anthropic: no `message_delta`, no
    /// `message_stop`), as when a connection drops cleanly mid-answer; as JSON, the body is cut in
    /// half. Tool calls in it are complete up to their last argument piece.
    Truncated(Box<Reply>),
}

impl Reply {
    /// Assistant text; finish reason `stop` / stop reason `end_turn`.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::text_and_tools(text, Vec::<(&str, &str)>::new())
    }

    /// One or more tool calls given as `(name, arguments_json_text)`; the arguments are passed through verbatim.
    pub fn tool_calls<N, A>(calls: Vec<(N, A)>) -> Reply
    where
        N: Into<String>,
        A: Into<String>,
    {
        Reply::text_and_tools("", calls)
    }

    /// Text followed by tool calls.
    pub fn text_and_tools<N, A>(text: impl Into<String>, calls: Vec<(N, A)>) -> Reply
    where
        N: Into<String>,
        A: Into<String>,
    {
        Reply::Message {
            text: text.into(),
            tool_calls: calls
                .into_iter()
                .map(|(name, arguments)| ToolCall {
                    name: name.into(),
                    arguments: arguments.into(),
                })
                .collect(),
            headers: Vec::new(),
        }
    }

    /// An HTTP error with `body` (JSON text) sent verbatim.
    pub fn status(code: u16, body: impl Into<String>) -> Reply {
        Reply::Status {
            code,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    /// An HTTP error with extra headers, e.g. `[("retry-after", "0")]`.
    pub fn status_with_headers(
        code: u16,
        body: impl Into<String>,
        headers: &[(&str, &str)],
    ) -> Reply {
        headers
            .iter()
            .fold(Reply::status(code, body), |reply, (name, value)| {
                reply.with_header(name, value)
            })
    }

    /// Wait `delay`, then serve `reply`.
    pub fn delay(delay: Duration, reply: Reply) -> Reply {
        Reply::Delay(delay, Box::new(reply))
    }

    /// Never answer (until the server is dropped).
    pub fn hang() -> Reply {
        Reply::Hang
    }

    /// A 200 with `content_type` and `body` sent verbatim.
    pub fn raw(content_type: impl Into<String>, body: impl Into<String>) -> Reply {
        Reply::Raw {
            code: 200,
            content_type: content_type.into(),
            body: body.into(),
        }
    }

    /// `reply` (a message) cut short before its end; see [`Reply::Truncated`].
    pub fn truncated(reply: Reply) -> Reply {
        Reply::Truncated(Box::new(reply))
    }

    /// Add a response header to a message or status reply (through any delay); a no-op on [`Reply::Hang`].
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        match &mut self {
            Reply::Message { headers, .. } | Reply::Status { headers, .. } => {
                headers.push((name.to_string(), value.to_string()))
            }
            Reply::Delay(_, inner) => {
                let taken = std::mem::replace(inner.as_mut(), Reply::Hang);
                **inner = taken.with_header(name, value);
            }
            Reply::Truncated(inner) => {
                let taken = std::mem::replace(inner.as_mut(), Reply::Hang);
                **inner = taken.with_header(name, value);
            }
            Reply::Hang | Reply::Raw { .. } => {}
        }
        self
    }

    /// The output tokens this reply reports when served, or `None` if it is not a message.
    pub fn output_tokens(&self) -> Option<u64> {
        match self {
            Reply::Message {
                text, tool_calls, ..
            } => {
                let bytes = text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>();
                Some(bytes as u64 / 4 + 1)
            }
            Reply::Delay(_, inner) => inner.output_tokens(),
            Reply::Status { .. } | Reply::Hang | Reply::Raw { .. } | Reply::Truncated(_) => None,
        }
    }
}

/// Token usage reported by one reply (or summed over several).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// `input_tokens + output_tokens`.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// Which wire format an endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The URL path without the query string, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, or `Value::Null` when it is empty or not JSON.
    pub body: Value,
    /// The body as received (lossy UTF-8).
    pub raw_body: String,
    /// The format of the endpoint, `None` for an unknown path.
    pub api: Option<Api>,
    /// The usage the scripted reply to this request carries, `None` for errors, hangs and unknown paths.
    pub usage: Option<Usage>,
}

impl Recorded {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body asked for a streamed answer.
    pub fn is_stream(&self) -> bool {
        self.body["stream"] == Value::Bool(true)
    }
}

struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    recorded: Condvar,
    stopped: Mutex<bool>,
    stop: Condvar,
    replies_served: AtomicU64,
    tool_calls_served: AtomicU64,
    /// What `POST /apply-template` answers, as llama.cpp's server does; `None`: a 404.
    template: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Wait up to `limit` (forever when `None`); true when the server was stopped meanwhile.
    fn wait_for_stop(&self, limit: Option<Duration>) -> bool {
        let guard = lock(&self.stopped);
        let guard = match limit {
            Some(d) => {
                self.stop
                    .wait_timeout_while(guard, d, |s| !*s)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => self
                .stop
                .wait_while(guard, |s| !*s)
                .unwrap_or_else(|e| e.into_inner()),
        };
        *guard
    }
}

/// A running scripted LLM server; dropping it stops the server and joins its threads.
pub struct ScriptedLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedLlm {
    /// Bind `127.0.0.1:0` and serve `script` in order. Panics if the port cannot be bound.
    pub fn start(script: Vec<Reply>) -> ScriptedLlm {
        let server = tiny_http::Server::http("127.0.0.1:0").expect("bind scripted LLM server");
        let addr = server
            .server_addr()
            .to_ip()
            .expect("scripted LLM server has an IP address");
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
            recorded: Condvar::new(),
            stopped: Mutex::new(false),
            stop: Condvar::new(),
            replies_served: AtomicU64::new(0),
            tool_calls_served: AtomicU64::new(0),
            template: Mutex::new(None),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name(format!("scripted-llm-{}", addr.port()))
                .spawn(move || accept_loop(server, shared))
                .expect("spawn scripted LLM thread")
        };
        ScriptedLlm {
            addr,
            shared,
            thread: Some(thread),
        }
    }

    /// The bound address (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`; the client posts to `{base}/chat/completions`.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// `http://127.0.0.1:PORT`; the client posts to `{base}/v1/messages`.
    pub fn anthropic_base_url(&self) -> String {
        self.base_url()
    }

    /// Every model request (to a chat endpoint of either format) received so far, in arrival
    /// order. Requests to other paths (a client's probe of `/apply-template`, say) are in
    /// [`ScriptedLlm::all_requests`].
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.api.is_some())
            .cloned()
            .collect()
    }

    /// Answer `POST /apply-template` as llama.cpp's server does, with `{"prompt": prompt}`
    /// (no reply is consumed): a client then takes this server for llama.cpp.
    pub fn serve_template(&self, prompt: &str) {
        *lock(&self.shared.template) = Some(prompt.to_string());
    }

    /// Every request received so far, to any path, in arrival order.
    pub fn all_requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// Block until at least `n` model requests were recorded or `timeout` passed; true if
    /// they were.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let chats = |r: &Vec<Recorded>| r.iter().filter(|r| r.api.is_some()).count();
        let guard = lock(&self.shared.requests);
        let (guard, _) = self
            .shared
            .recorded
            .wait_timeout_while(guard, timeout, |r| chats(r) < n)
            .unwrap_or_else(|e| e.into_inner());
        chats(&guard) >= n
    }

    /// How many scripted replies are not consumed yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Append a reply to the script.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.script).push_back(reply);
    }

    /// The sum of the usage carried by every reply so far.
    pub fn usage_total(&self) -> Usage {
        lock(&self.shared.requests)
            .iter()
            .filter_map(|r| r.usage)
            .fold(Usage::default(), |acc, u| Usage {
                input_tokens: acc.input_tokens + u.input_tokens,
                output_tokens: acc.output_tokens + u.output_tokens,
            })
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        *lock(&self.shared.stopped) = true;
        self.shared.stop.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What a worker does with one request once it was recorded.
enum Plan {
    Json {
        code: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    Sse {
        events: Vec<String>,
        headers: Vec<(String, String)>,
    },
    Wait(Duration, Box<Plan>),
    Hang,
}

fn accept_loop(server: tiny_http::Server, shared: Arc<Shared>) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    while !*lock(&shared.stopped) {
        let request = match server.recv_timeout(POLL) {
            Ok(Some(request)) => request,
            Ok(None) => continue,
            Err(_) => break,
        };
        let (request, plan) = receive(request, &shared);
        let worker_shared = Arc::clone(&shared);
        workers.retain(|w| !w.is_finished());
        workers.push(thread::spawn(move || serve(request, plan, &worker_shared)));
    }
    for worker in workers {
        let _ = worker.join();
    }
}

/// Read and record a request, take its reply from the script and plan the answer.
fn receive(mut request: tiny_http::Request, shared: &Shared) -> (tiny_http::Request, Plan) {
    let method = request.method().to_string();
    let url = request.url().to_string();
    let path = url.split('?').next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.to_string().to_ascii_lowercase(),
                h.value.as_str().to_string(),
            )
        })
        .collect();
    let mut raw = Vec::new();
    let _ = request.as_reader().read_to_end(&mut raw);
    let raw_body = String::from_utf8_lossy(&raw).into_owned();
    let body: Value = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
    let api = match path.as_str() {
        "/v1/chat/completions" => Some(Api::OpenAi),
        "/v1/messages" => Some(Api::Anthropic),
        _ => None,
    };

    let template = lock(&shared.template).clone();
    let plan_and_usage = match api {
        None if path == "/apply-template" && method == "POST" && template.is_some() => (
            Plan::Json {
                code: 200,
                body: json!({"prompt": template.unwrap_or_default()}).to_string(),
                headers: Vec::new(),
            },
            None,
        ),
        None => (
            error_plan(
                404,
                json!({"error": {"message": format!("scripted LLM: no route for {method} {path}"), "type": "not_found"}}),
            ),
            None,
        ),
        Some(_) if method != "POST" => (
            error_plan(
                405,
                json!({"error": {"message": format!("scripted LLM: {path} takes POST, not {method}"), "type": "method_not_allowed"}}),
            ),
            None,
        ),
        Some(api) => {
            let reply = lock(&shared.script).pop_front();
            match reply {
                None => (exhausted_plan(api, lock(&shared.requests).len() + 1), None),
                Some(reply) => {
                    let input_tokens = raw.len() as u64 / 4;
                    let usage = reply.output_tokens().map(|output_tokens| Usage {
                        input_tokens,
                        output_tokens,
                    });
                    (plan(api, &reply, &body, input_tokens, shared), usage)
                }
            }
        }
    };
    let (plan, usage) = plan_and_usage;

    lock(&shared.requests).push(Recorded {
        method,
        path,
        headers,
        body,
        raw_body,
        api,
        usage,
    });
    shared.recorded.notify_all();
    (request, plan)
}

fn error_plan(code: u16, body: Value) -> Plan {
    Plan::Json {
        code,
        body: body.to_string(),
        headers: Vec::new(),
    }
}

fn exhausted_plan(api: Api, request_number: usize) -> Plan {
    let message = format!("script exhausted: no scripted reply left for request #{request_number}");
    let body = match api {
        Api::OpenAi => {
            json!({"error": {"message": message, "type": "server_error", "code": "script_exhausted"}})
        }
        Api::Anthropic => {
            json!({"type": "error", "error": {"type": "api_error", "message": message}})
        }
    };
    error_plan(500, body)
}

fn plan(api: Api, reply: &Reply, request: &Value, input_tokens: u64, shared: &Shared) -> Plan {
    match reply {
        Reply::Hang => Plan::Hang,
        Reply::Delay(d, inner) => Plan::Wait(
            *d,
            Box::new(plan(api, inner, request, input_tokens, shared)),
        ),
        Reply::Status {
            code,
            body,
            headers,
        } => Plan::Json {
            code: *code,
            body: body.clone(),
            headers: headers.clone(),
        },
        Reply::Raw {
            code,
            content_type,
            body,
        } => Plan::Json {
            code: *code,
            body: body.clone(),
            headers: vec![("content-type".to_string(), content_type.clone())],
        },
        Reply::Truncated(inner) => match plan(api, inner, request, input_tokens, shared) {
            Plan::Sse {
                mut events,
                headers,
            } => {
                let end = match api {
                    Api::OpenAi => events
                        .iter()
                        .position(|e| e.contains("\"finish_reason\":\"")),
                    Api::Anthropic => events
                        .iter()
                        .position(|e| e.starts_with("event: message_delta")),
                };
                events.truncate(end.unwrap_or(events.len()));
                Plan::Sse { events, headers }
            }
            Plan::Json {
                code,
                mut body,
                headers,
            } => {
                let mut half = body.len() / 2;
                while !body.is_char_boundary(half) {
                    half -= 1;
                }
                body.truncate(half);
                Plan::Json {
                    code,
                    body,
                    headers,
                }
            }
            other => other,
        },
        Reply::Message {
            text,
            tool_calls,
            headers,
        } => {
            let n = shared.replies_served.fetch_add(1, Ordering::SeqCst) + 1;
            let calls: Vec<(u64, &ToolCall)> = tool_calls
                .iter()
                .map(|c| {
                    (
                        shared.tool_calls_served.fetch_add(1, Ordering::SeqCst) + 1,
                        c,
                    )
                })
                .collect();
            let m = Rendered {
                n,
                model: request["model"]
                    .as_str()
                    .unwrap_or("scripted-model")
                    .to_string(),
                text,
                calls,
                usage: Usage {
                    input_tokens,
                    output_tokens: reply.output_tokens().unwrap_or(1),
                },
            };
            let stream = request["stream"] == Value::Bool(true);
            let include_usage = request["stream_options"]["include_usage"] == Value::Bool(true);
            let headers = headers.clone();
            match (api, stream) {
                (Api::OpenAi, false) => Plan::Json {
                    code: 200,
                    body: m.openai_json().to_string(),
                    headers,
                },
                (Api::OpenAi, true) => Plan::Sse {
                    events: m.openai_sse(include_usage),
                    headers,
                },
                (Api::Anthropic, false) => Plan::Json {
                    code: 200,
                    body: m.anthropic_json().to_string(),
                    headers,
                },
                (Api::Anthropic, true) => Plan::Sse {
                    events: m.anthropic_sse(),
                    headers,
                },
            }
        }
    }
}

/// A message reply with its ids allocated, ready to render.
struct Rendered<'a> {
    n: u64,
    model: String,
    text: &'a str,
    calls: Vec<(u64, &'a ToolCall)>,
    usage: Usage,
}

/// `s` split into pieces of `PIECE_CHARS` characters (none for an empty string).
fn pieces(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in s.char_indices().enumerate() {
        if count > 0 && count % PIECE_CHARS == 0 {
            out.push(&s[start..i]);
            start = i;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

fn sse_data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

fn sse_event(name: &str, v: &Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

impl Rendered<'_> {
    fn openai_usage(&self) -> Value {
        json!({
            "prompt_tokens": self.usage.input_tokens,
            "completion_tokens": self.usage.output_tokens,
            "total_tokens": self.usage.total(),
        })
    }

    fn openai_finish_reason(&self) -> &'static str {
        if self.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    fn openai_json(&self) -> Value {
        let mut message = json!({
            "role": "assistant",
            "content": if self.text.is_empty() && !self.calls.is_empty() { Value::Null } else { json!(self.text) },
            "refusal": null,
        });
        if !self.calls.is_empty() {
            message["tool_calls"] = self
                .calls
                .iter()
                .map(|(id, c)| {
                    json!({
                        "id": format!("call_{id}"),
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    })
                })
                .collect();
        }
        json!({
            "id": format!("chatcmpl-{}", self.n),
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": self.openai_finish_reason(),
            }],
            "usage": self.openai_usage(),
        })
    }

    fn openai_sse(&self, include_usage: bool) -> Vec<String> {
        let chunk = |delta: Value, finish_reason: Value| {
            let mut c = json!({
                "id": format!("chatcmpl-{}", self.n),
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
            });
            if include_usage {
                c["usage"] = Value::Null;
            }
            c
        };
        let mut events = Vec::new();
        let content = if self.text.is_empty() {
            Value::Null
        } else {
            json!("")
        };
        events.push(chunk(
            json!({"role": "assistant", "content": content}),
            Value::Null,
        ));
        for piece in pieces(self.text) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
        for (index, (id, call)) in self.calls.iter().enumerate() {
            events.push(chunk(
                json!({"tool_calls": [{
                    "index": index,
                    "id": format!("call_{id}"),
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }]}),
                Value::Null,
            ));
            for piece in pieces(&call.arguments) {
                events.push(chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    Value::Null,
                ));
            }
        }
        let mut last = chunk(json!({}), json!(self.openai_finish_reason()));
        if include_usage {
            events.push(last);
            let mut usage_chunk = chunk(json!({}), Value::Null);
            usage_chunk["choices"] = json!([]);
            usage_chunk["usage"] = self.openai_usage();
            events.push(usage_chunk);
        } else {
            last["usage"] = self.openai_usage();
            events.push(last);
        }
        let mut out: Vec<String> = events.iter().map(sse_data).collect();
        out.push("data: [DONE]\n\n".to_string());
        out
    }

    fn anthropic_stop_reason(&self) -> &'static str {
        if self.calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
    }

    fn anthropic_json(&self) -> Value {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(json!({"type": "text", "text": self.text}));
        }
        for (id, call) in &self.calls {
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!(call.arguments))
            };
            content.push(json!({
                "type": "tool_use",
                "id": format!("toolu_{id}"),
                "name": call.name,
                "input": input,
            }));
        }
        json!({
            "id": format!("msg_{}", self.n),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": self.anthropic_stop_reason(),
            "stop_sequence": null,
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
            },
        })
    }

    fn anthropic_sse(&self) -> Vec<String> {
        let ping = sse_event("ping", &json!({"type": "ping"}));
        let mut out = vec![sse_event(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": format!("msg_{}", self.n),
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {"input_tokens": self.usage.input_tokens, "output_tokens": 1},
                },
            }),
        )];
        // (content_block, delta type, delta field, pieces)
        let mut blocks: Vec<(Value, &str, &str, Vec<&str>)> = Vec::new();
        if !self.text.is_empty() {
            blocks.push((
                json!({"type": "text", "text": ""}),
                "text_delta",
                "text",
                pieces(self.text),
            ));
        }
        for (id, call) in &self.calls {
            let mut parts = pieces(&call.arguments);
            if parts.is_empty() {
                parts.push("");
            }
            blocks.push((
                json!({"type": "tool_use", "id": format!("toolu_{id}"), "name": call.name, "input": {}}),
                "input_json_delta",
                "partial_json",
                parts,
            ));
        }
        if blocks.is_empty() {
            out.push(ping.clone());
        }
        for (index, (block, delta_type, field, parts)) in blocks.into_iter().enumerate() {
            out.push(sse_event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": block}),
            ));
            if index == 0 {
                out.push(ping.clone());
            }
            for part in parts {
                let mut delta = json!({"type": delta_type});
                delta[field] = json!(part);
                out.push(sse_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            out.push(sse_event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        out.push(sse_event(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": self.anthropic_stop_reason(), "stop_sequence": null},
                "usage": {"output_tokens": self.usage.output_tokens},
            }),
        ));
        out.push(sse_event("message_stop", &json!({"type": "message_stop"})));
        out
    }
}

fn header(name: &str, value: &str) -> Option<tiny_http::Header> {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

/// Answer one request according to its plan (runs on a worker thread).
fn serve(request: tiny_http::Request, plan: Plan, shared: &Shared) {
    match plan {
        Plan::Hang => {
            shared.wait_for_stop(None);
            // Dropping the request lets tiny_http close it with an empty 500.
        }
        Plan::Wait(d, inner) => {
            if !shared.wait_for_stop(Some(d)) {
                serve(request, *inner, shared);
            }
        }
        Plan::Json {
            code,
            body,
            headers,
        } => {
            let mut response =
                tiny_http::Response::from_data(body.into_bytes()).with_status_code(code);
            if !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            {
                response
                    .add_header(header("content-type", "application/json").expect("valid header"));
            }
            for (name, value) in &headers {
                if let Some(h) = header(name, value) {
                    response.add_header(h);
                }
            }
            let _ = request.respond(response);
        }
        Plan::Sse { events, headers } => {
            let _ = write_sse(request.into_writer(), &events, &headers);
        }
    }
}

/// Write a 200 `text/event-stream` response with chunked transfer encoding, one chunk per event,
/// flushing and pausing between chunks so the client sees them arrive separately.
fn write_sse(
    mut w: Box<dyn Write + Send>,
    events: &[String],
    headers: &[(String, String)],
) -> io::Result<()> {
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n",
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.flush()?;
    for event in events {
        write!(w, "{:x}\r\n", event.len())?;
        w.write_all(event.as_bytes())?;
        w.write_all(b"\r\n")?;
        w.flush()?;
        thread::sleep(CHUNK_PAUSE);
    }
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_on_char_boundaries() {
        assert_eq!(pieces("It is 21.5 °C."), vec!["It i", "s 21", ".5 °", "C."]);
        assert!(pieces("").is_empty());
        assert_eq!(pieces("abcd"), vec!["abcd"]);
    }
}
