//! LLM providers: OpenAI-compatible Chat Completions (OpenAI, Ollama, llama.cpp, vLLM, LM Studio,
//! OpenRouter) and Anthropic Messages, both with tools and SSE streaming.
//!
//! The wire formats live in `openai.rs` and `anthropic.rs` as pure encode/assemble functions; this
//! module owns the HTTP client, retries with backoff, and error classification.

pub mod anthropic;
pub mod gbnf;
pub mod local;
pub mod openai;
pub mod prompted;

use crate::config::LlmConfig;
pub use crate::config::{ProviderKind, ToolCallMode};
use crate::secrets::{http_error, redact_url, redact_urls_in};
use covo_core::spec::ToolSpec;
use futures_util::StreamExt;
pub use prompted::Wire;
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

/// A tool call the model asked for. `arguments` is the raw JSON text, valid or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// The provider's id for the call (generated when the provider gave none).
    pub id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them.
    pub arguments: String,
}

/// One message of a conversation, provider-neutral.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// From the user.
    User(String),
    /// From the model: text and/or tool calls.
    Assistant {
        /// Its text.
        text: String,
        /// The tools it called.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result (JSON text), or the structured error.
        content: String,
        /// Whether `content` is an error.
        is_error: bool,
    },
}

/// Tokens used by one model call, or summed over a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It ran out of output tokens.
    MaxTokens,
    /// Anything else the provider said.
    Other,
}

/// What one model call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatResponse {
    /// The assistant's text.
    pub text: String,
    /// The tools it called.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
    /// Why it stopped.
    pub stop: StopReason,
}

/// One model request, provider-neutral.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools the model may call (already filtered by the hooks).
    pub tools: &'a [&'static ToolSpec],
}

/// A request body: its JSON fields, then the `tools` array, already rendered as JSON text
/// ([`covo_core::plan::render_raw`]) and written out as it is. Indexing reaches the fields.
#[derive(Debug, Clone)]
pub struct Body {
    /// Every field but `tools`: an object.
    pub json: serde_json::Value,
    /// The `tools` array as JSON text, when tools are sent.
    pub tools: Option<std::sync::Arc<str>>,
}

impl Body {
    /// The bytes sent: the fields' object with `"tools":[…]` as its last member.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = self.json.to_string().into_bytes();
        if let Some(t) = &self.tools {
            if out.last() == Some(&b'}') {
                out.pop();
                if out.len() > 1 {
                    out.push(b',');
                }
                out.extend_from_slice(b"\"tools\":");
                out.extend_from_slice(t.as_bytes());
                out.push(b'}');
            }
        }
        out
    }
}

impl std::ops::Index<&str> for Body {
    type Output = serde_json::Value;
    fn index(&self, key: &str) -> &serde_json::Value {
        &self.json[key]
    }
}

impl std::ops::IndexMut<&str> for Body {
    fn index_mut(&mut self, key: &str) -> &mut serde_json::Value {
        &mut self.json[key]
    }
}

/// Errors of a model call, phrased for the person at the terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// 401/403: the key is missing or wrong.
    #[error("the API key was rejected by {url} (HTTP {status}). Set COVO_LLM_API_KEY (or OPENAI_API_KEY / ANTHROPIC_API_KEY) to a valid key")]
    Unauthorized {
        /// The endpoint.
        url: String,
        /// 401 or 403.
        status: u16,
    },
    /// The server says this model cannot use tools.
    #[error("model '{model}' does not support tool calls on {url}; pick a model with tool support (for Ollama, e.g. qwen2.5 or llama3.1): {detail}")]
    ToolsUnsupported {
        /// The model.
        model: String,
        /// The endpoint.
        url: String,
        /// The server's words.
        detail: String,
    },
    /// 404 for the model.
    #[error("model '{model}' was not found at {url}: {detail}")]
    ModelNotFound {
        /// The model.
        model: String,
        /// The endpoint.
        url: String,
        /// The server's words.
        detail: String,
    },
    /// Any other HTTP error.
    #[error("HTTP {status} from {url}: {detail}")]
    Http {
        /// The status.
        status: u16,
        /// The endpoint.
        url: String,
        /// The body, shortened.
        detail: String,
    },
    /// The connection failed or broke.
    #[error("cannot reach {url}: {detail}")]
    Transport {
        /// The endpoint.
        url: String,
        /// The cause.
        detail: String,
    },
    /// The server went quiet for longer than `idle_timeout_secs`, or the whole call took longer
    /// than `timeout_secs`. Not retried: a slow local model would only be asked again.
    #[error("the model at {url} {detail}; nothing from this answer was used")]
    Timeout {
        /// The endpoint.
        url: String,
        /// Which limit, and how long.
        detail: String,
    },
    /// The provider answered 200 with something that is not a usable answer: an empty body,
    /// no or malformed `choices` (OpenAI), malformed `content` (Anthropic), a broken stream.
    #[error("the model provider at {url} sent a malformed response: {detail}")]
    Malformed {
        /// The endpoint.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The response stream ended before the model finished its answer; nothing from it is used,
    /// so no tool call from it runs.
    #[error("the model provider at {url} ended its response before the answer was complete ({detail}); nothing from it was used and no tool call from it ran")]
    Truncated {
        /// The endpoint.
        url: String,
        /// What was missing.
        detail: String,
    },
}

/// Why an assembled stream cannot be used (see the assemblers' `finish`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// It has the wrong shape.
    Malformed(String),
    /// It ended before the model finished.
    Truncated(String),
}

impl LlmError {
    fn retryable(status: u16) -> bool {
        status == 429 || status == 408 || (500..600).contains(&status)
    }
}

/// Receives streamed text as it arrives.
pub type OnText<'a> = &'a mut (dyn FnMut(&str) + Send);

/// A boxed future, for the object-safe [`ChatModel`] trait.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Something that answers chat requests: an HTTP provider, or a scripted one in tests and benches.
pub trait ChatModel: Send + Sync {
    /// Sends one request; streamed text goes to `on_text` as it arrives.
    fn chat<'a>(
        &'a self,
        req: ChatRequest<'a>,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;

    /// A short description for the user: provider, model, endpoint.
    fn describe(&self) -> String;

    /// How tools travel to this model now, and why when it is not what was configured (for
    /// `covo doctor`). `None` for models that have no such choice.
    fn tool_wire(&self) -> Option<(Wire, Option<String>)> {
        None
    }
}

/// A fully resolved provider configuration. Its `Debug` shows the base URL redacted and never
/// the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Provider {
    /// The wire format.
    pub kind: ProviderKind,
    /// Base URL (`…/v1` for OpenAI-compatible servers, the host for Anthropic).
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The API key, if any (Ollama and llama.cpp need none).
    pub api_key: Option<String>,
    /// The most one call may take.
    pub timeout: Duration,
    /// The longest wait for the first byte or the next streamed chunk.
    pub idle_timeout: Duration,
    /// Retries after the first attempt on 429/5xx and connection errors.
    pub max_retries: u32,
    /// The first backoff; doubled per retry, with jitter, unless the server sends Retry-After.
    pub retry_base: Duration,
    /// Output token limit, sent on every provider.
    pub max_tokens: u32,
    /// How tools reach the model.
    pub tool_calls: ToolCallMode,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("kind", &self.kind)
            .field("base_url", &redact_url(&self.base_url))
            .field("model", &self.model)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|_| crate::secrets::MASK),
            )
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base", &self.retry_base)
            .field("max_tokens", &self.max_tokens)
            .field("tool_calls", &self.tool_calls)
            .finish()
    }
}

impl Provider {
    /// Resolves the provider from config and the environment (`COVO_LLM_PROVIDER`,
    /// `COVO_LLM_BASE_URL`, `COVO_LLM_MODEL`, `COVO_LLM_API_KEY`, then `OPENAI_API_KEY` /
    /// `ANTHROPIC_API_KEY`, and `COVO_LLM_TOOL_CALLS`). `None` when no model is configured.
    pub fn resolve(cfg: &LlmConfig, env: &dyn Fn(&str) -> Option<String>) -> Option<Provider> {
        let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let kind = match get("COVO_LLM_PROVIDER").as_deref() {
            Some("anthropic") => ProviderKind::Anthropic,
            Some(_) => ProviderKind::Openai,
            None => cfg.provider.unwrap_or(ProviderKind::Openai),
        };
        let model = get("COVO_LLM_MODEL").or_else(|| cfg.model.clone())?;
        let base_url = get("COVO_LLM_BASE_URL")
            .or_else(|| cfg.base_url.clone())
            .unwrap_or_else(|| match kind {
                ProviderKind::Openai => "https://api.openai.com/v1".into(),
                ProviderKind::Anthropic => "https://api.anthropic.com".into(),
            });
        let fallback = match kind {
            ProviderKind::Openai => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        };
        let api_key = get("COVO_LLM_API_KEY")
            .or_else(|| cfg.api_key.clone())
            .or_else(|| get(fallback));
        Some(Provider {
            kind,
            base_url: base_url.trim_end_matches('/').to_string(),
            model,
            api_key,
            timeout: Duration::from_secs(cfg.timeout_secs.unwrap_or(600).max(1)),
            idle_timeout: Duration::from_secs(cfg.idle_timeout_secs.unwrap_or(180).max(1)),
            max_retries: cfg.max_retries.unwrap_or(3),
            retry_base: Duration::from_millis(cfg.retry_base_ms.unwrap_or(500)),
            max_tokens: cfg.max_tokens.unwrap_or(4096).max(1),
            tool_calls: match get("COVO_LLM_TOOL_CALLS").as_deref() {
                Some("native") => ToolCallMode::Native,
                Some("constrained") => ToolCallMode::Constrained,
                Some("text") => ToolCallMode::Text,
                Some(_) => ToolCallMode::Auto,
                None => cfg.tool_calls.unwrap_or_default(),
            },
        })
    }

    fn url(&self) -> String {
        match self.kind {
            ProviderKind::Openai => format!("{}/chat/completions", self.base_url),
            ProviderKind::Anthropic => format!("{}/v1/messages", self.base_url),
        }
    }

    /// The server's root: the base URL without its `/v1` (where llama.cpp serves `/props` and
    /// `/apply-template`). `None` for a base URL that does not end in `/v1`: its root is not
    /// known, and a guess could reach something that is no probe target (a proxy, a CGI).
    fn root(&self) -> Option<&str> {
        self.base_url.strip_suffix("/v1")
    }

    /// The field that carries the output limit: OpenAI's own API wants `max_completion_tokens`
    /// (its reasoning models refuse `max_tokens`); every other OpenAI-compatible server reads
    /// `max_tokens`.
    fn max_tokens_key(&self) -> &'static str {
        if self.base_url.contains("://api.openai.com") {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }
    }

    /// The way tools travel before anything is known about the server.
    fn initial_wire(&self) -> Wire {
        match (self.tool_calls, self.kind) {
            (ToolCallMode::Text, _) => Wire::Text,
            // Anthropic has no response schema: the tools go into the prompt as text.
            (ToolCallMode::Constrained, ProviderKind::Anthropic) => Wire::Text,
            (ToolCallMode::Constrained, ProviderKind::Openai) => Wire::Constrained,
            (ToolCallMode::Native | ToolCallMode::Auto, _) => Wire::Native,
        }
    }
}

/// What the client has learnt about how tools travel to its server.
#[derive(Debug)]
struct WireState {
    wire: Wire,
    /// Why `wire` is not what the configuration alone gives.
    reason: Option<String>,
    /// Whether the server has been asked (llama.cpp's `/apply-template`) yet.
    probed: bool,
    /// Whether the server is llama.cpp (its `/apply-template` answered): a constrained reply
    /// then travels as covo's own grammar ([`gbnf`]), which holds numbers to their ranges,
    /// rather than as a JSON schema.
    grammar: bool,
    /// Calls made in `constrained` mode, for their ids.
    calls: u64,
    /// Whether the server ever answered with a native tool call: then it carries the tools,
    /// whatever its usage figures say (scripted servers report a token or two).
    native_calls_seen: bool,
}

/// Whether a prompt of `prompt_tokens` can have held `tools`: a server that dropped the tools
/// reports about the size of the conversation alone. Tool JSON runs at 3 to 5 bytes a token;
/// fewer than one token per 12 bytes of it means the tools were not in the prompt.
pub fn tools_dropped(prompt_tokens: u64, tools: &[&'static ToolSpec]) -> bool {
    if tools.is_empty() || prompt_tokens == 0 {
        return false;
    }
    let bytes = covo_core::plan::render(tools, covo_core::plan::Format::Openai)
        .to_string()
        .len() as u64;
    prompt_tokens * 12 < bytes
}

/// Installs rustls's ring provider for this process (once; later calls do nothing). Every
/// reqwest client in `llm/` is built after it.
pub(crate) fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// An HTTP chat client for one provider.
pub struct HttpModel {
    http: reqwest::Client,
    provider: Provider,
    wire: Mutex<WireState>,
}

impl HttpModel {
    /// A client for the provider. Installs the ring TLS provider once per process.
    pub fn new(provider: Provider) -> Result<HttpModel, LlmError> {
        tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| LlmError::Transport {
                url: redact_url(&provider.base_url),
                detail: http_error(e),
            })?;
        let wire = Mutex::new(WireState {
            wire: provider.initial_wire(),
            reason: None,
            probed: !matches!(
                provider.tool_calls,
                ToolCallMode::Auto | ToolCallMode::Constrained
            ) || provider.kind != ProviderKind::Openai,
            grammar: false,
            calls: 0,
            native_calls_seen: false,
        });
        Ok(HttpModel {
            http,
            provider,
            wire,
        })
    }

    fn wire_state(&self) -> std::sync::MutexGuard<'_, WireState> {
        self.wire.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes how tools travel (under `auto`), saying so in the log.
    fn switch_wire(&self, wire: Wire, reason: String) {
        let mut st = self.wire_state();
        if st.wire != wire {
            tracing::warn!(
                model = %self.provider.model,
                from = st.wire.name(),
                to = wire.name(),
                %reason,
                "tool calls switched"
            );
            st.wire = wire;
            st.reason = Some(reason);
        }
    }

    /// Under `auto` or `constrained`, once: asks a llama.cpp server to render a prompt with one
    /// tool (`/apply-template`). An answer with a prompt marks the server as llama.cpp, which
    /// takes covo's grammar. Under `auto`, a template that leaves the tool out, or a server that
    /// refuses tools (no `--jinja`), means the model would never see them: the tools go into the
    /// prompt with the reply held to their schemas (`constrained`). Any other answer (Ollama, a
    /// hosted API, a 404) leaves `native`, and the usage check after each call stays on guard.
    async fn probe(&self, tools: &[&'static ToolSpec]) {
        {
            let mut st = self.wire_state();
            if st.probed || tools.is_empty() {
                return;
            }
            st.probed = true;
        }
        let p = &self.provider;
        let Some(root) = p.root() else {
            return;
        };
        let tool = tools[0];
        let body = serde_json::json!({
            "messages": [{"role": "user", "content": "hello"}],
            "tools": covo_core::plan::render(&[tool], covo_core::plan::Format::Openai),
        });
        let mut req = self
            .http
            .post(format!("{root}/apply-template"))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(k) = &p.api_key {
            req = req.bearer_auth(k);
        }
        let Ok(Ok(resp)) = tokio::time::timeout(Duration::from_secs(10), req.send()).await else {
            return;
        };
        let status = resp.status().as_u16();
        let Ok(Ok(text)) = tokio::time::timeout(Duration::from_secs(10), resp.text()).await else {
            return;
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if status == 200 && v["prompt"].is_string() {
            self.wire_state().grammar = true;
        }
        if p.tool_calls != ToolCallMode::Auto {
            return;
        }
        let reason = match (status, v["prompt"].as_str()) {
            (200, Some(prompt)) if !prompt.contains(tool.name) => {
                "the server's chat template leaves the tools out (llama.cpp /apply-template)"
                    .to_string()
            }
            (400..=599, _) if text.contains("jinja") => format!(
                "the server refuses tools: {}",
                error_message(&text, p.api_key.as_deref())
            ),
            _ => return,
        };
        self.switch_wire(Wire::Constrained, reason);
    }

    /// The resolved provider.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    async fn send(&self, body: &Body) -> Result<reqwest::Response, LlmError> {
        let p = &self.provider;
        let url = p.url();
        // What errors and logs show: the endpoint with any userinfo and query values masked.
        let shown = redact_url(&url);
        let bytes = body.to_vec();
        let mut attempt = 0;
        loop {
            let mut req = self
                .http
                .post(&url)
                .header("content-type", "application/json")
                .body(bytes.clone());
            req = match p.kind {
                ProviderKind::Openai => match &p.api_key {
                    Some(k) => req.bearer_auth(k),
                    None => req,
                },
                ProviderKind::Anthropic => {
                    let req = req.header("anthropic-version", "2023-06-01");
                    match &p.api_key {
                        Some(k) => match reqwest::header::HeaderValue::from_str(k) {
                            Ok(mut v) => {
                                v.set_sensitive(true);
                                req.header("x-api-key", v)
                            }
                            Err(_) => req.header("x-api-key", k),
                        },
                        None => req,
                    }
                }
            };
            let sent = match tokio::time::timeout(p.idle_timeout, req.send()).await {
                Ok(sent) => sent,
                Err(_) => return Err(self.idle(&shown)),
            };
            let (retry, err) = match sent {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let after = retry_after(&resp);
                    let text = resp.text().await.unwrap_or_default();
                    let err = classify(p, &shown, status, &text);
                    (LlmError::retryable(status).then_some(after), err)
                }
                Err(e) => (
                    Some(None),
                    LlmError::Transport {
                        url: shown.clone(),
                        detail: http_error(e),
                    },
                ),
            };
            match retry {
                Some(after) if attempt < p.max_retries => {
                    let wait = after.unwrap_or_else(|| backoff(p.retry_base, attempt));
                    tracing::warn!(attempt, ?wait, error = %err, "model call failed; retrying");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                _ => return Err(err),
            }
        }
    }
}

/// Exponential backoff with full jitter in the upper half: base·2ⁿ·[0.5, 1).
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.min(10));
    exp.mul_f64(0.5 + fastrand::f64() / 2.0)
}

fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    let v = resp.headers().get("retry-after")?.to_str().ok()?;
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(60.0)))
}

/// The provider's error text, bounded, with URLs redacted and credentials masked (the key covo
/// sent, and anything a proxy quoted back after `Bearer ` or an api-key header): it reaches
/// chat users, the model and the logs.
fn error_message(body: &str, api_key: Option<&str>) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let msg = v["error"]["message"]
        .as_str()
        .or_else(|| v["error"].as_str())
        .or_else(|| v["message"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string());
    let known: Vec<&str> = api_key.into_iter().collect();
    // Masked before it is cut, so a key split by the cut is still found whole.
    let masked = crate::secrets::mask_credentials(&msg, &known);
    redact_urls_in(&masked.chars().take(300).collect::<String>())
}

fn classify(p: &Provider, url: &str, status: u16, body: &str) -> LlmError {
    let detail = error_message(body, p.api_key.as_deref());
    let lower = detail.to_lowercase();
    match status {
        401 | 403 => LlmError::Unauthorized {
            url: url.into(),
            status,
        },
        400 if lower.contains("tool")
            && (lower.contains("support") || lower.contains("not allowed")) =>
        {
            LlmError::ToolsUnsupported {
                model: p.model.clone(),
                url: url.into(),
                detail,
            }
        }
        404 if lower.contains("model") => LlmError::ModelNotFound {
            model: p.model.clone(),
            url: url.into(),
            detail,
        },
        _ => LlmError::Http {
            status,
            url: url.into(),
            detail,
        },
    }
}

impl HttpModel {
    fn idle(&self, url: &str) -> LlmError {
        LlmError::Timeout {
            url: url.to_string(),
            detail: format!(
                "sent nothing for {} s (idle_timeout_secs)",
                self.provider.idle_timeout.as_secs()
            ),
        }
    }

    /// One call, with the usage check: under `auto`, an answer whose prompt cannot have held
    /// the tools means the server dropped them. Tools then go into the prompt (`text`) and the
    /// call is made again; its answer is the one used.
    async fn chat_checked(
        &self,
        req: ChatRequest<'_>,
        on_text: OnText<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let p = &self.provider;
        self.probe(req.tools).await;
        let wire = self.wire_state().wire;
        let r = self.chat_as(wire, req, on_text).await?;
        if wire != Wire::Native {
            return Ok(r);
        }
        if !r.tool_calls.is_empty() {
            self.wire_state().native_calls_seen = true;
            return Ok(r);
        }
        if self.wire_state().native_calls_seen || !tools_dropped(r.usage.input_tokens, req.tools) {
            return Ok(r);
        }
        let reason = format!(
            "the server counted {} prompt tokens for a request carrying {} tools: it dropped them",
            r.usage.input_tokens,
            req.tools.len()
        );
        if p.tool_calls != ToolCallMode::Auto {
            tracing::warn!(model = %p.model, %reason, "set [llm] tool_calls = \"text\" or \"constrained\"");
            return Ok(r);
        }
        self.switch_wire(Wire::Text, reason);
        let mut again = self.chat_as(Wire::Text, req, on_text).await?;
        again.usage += r.usage;
        Ok(again)
    }

    /// One call with the tools sent as `wire` says.
    async fn chat_as(
        &self,
        wire: Wire,
        req: ChatRequest<'_>,
        on_text: OnText<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let p = &self.provider;
        let prompted = wire != Wire::Native && !req.tools.is_empty();
        let rewritten = prompted.then(|| prompted::rewrite(&req, wire));
        let sent = match &rewritten {
            Some((system, messages)) => ChatRequest {
                system,
                messages,
                tools: &[],
            },
            None => req,
        };
        let mut body = match p.kind {
            ProviderKind::Openai => {
                let mut b = openai::request_body(&p.model, &sent, true);
                b[p.max_tokens_key()] = serde_json::json!(p.max_tokens);
                b
            }
            ProviderKind::Anthropic => anthropic::request_body(&p.model, p.max_tokens, &sent, true),
        };
        let constrained = prompted && wire == Wire::Constrained;
        if !constrained {
            return self.exchange(&body, on_text).await;
        }
        if self.wire_state().grammar {
            body["grammar"] = gbnf::reply_grammar(req.tools).into();
        } else {
            body["response_format"] = prompted::response_format(req.tools);
        }
        // The reply is JSON: the user sees the answer inside it, not the JSON.
        let mut r = self.exchange(&body, &mut |_: &str| {}).await?;
        if r.tool_calls.is_empty() {
            let id = {
                let mut st = self.wire_state();
                st.calls += 1;
                format!("cc_{}", st.calls)
            };
            let (text, calls) = prompted::read_reply(&r.text, id);
            if !calls.is_empty() {
                r.stop = StopReason::ToolUse;
            }
            (r.text, r.tool_calls) = (text, calls);
            if r.stop == StopReason::MaxTokens && r.tool_calls.is_empty() && r.text.starts_with('{')
            {
                // Half a JSON reply means nothing to the user: say what happened instead.
                r.text = format!(
                    "(the model's reply was cut off at max_tokens = {} before it was complete; \
                     raise [llm] max_tokens)",
                    p.max_tokens
                );
            }
        }
        if !r.text.is_empty() {
            on_text(&r.text);
        }
        Ok(r)
    }

    /// Sends one request body and reads its answer, streamed or whole. Each wait for the server
    /// (its headers, the whole body, the next chunk) is bounded by the idle timeout.
    async fn exchange(&self, body: &Body, on_text: OnText<'_>) -> Result<ChatResponse, LlmError> {
        let p = &self.provider;
        let resp = self.send(body).await?;
        let url = redact_url(&p.url());
        let malformed = |detail: String| LlmError::Malformed {
            url: url.clone(),
            detail,
        };
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // Some servers ignore `stream: true`; accept a plain JSON answer too.
            let text = match tokio::time::timeout(p.idle_timeout, resp.text()).await {
                Err(_) => return Err(self.idle(&url)),
                Ok(t) => t.map_err(|e| LlmError::Transport {
                    url: url.clone(),
                    detail: http_error(e),
                })?,
            };
            if text.trim().is_empty() {
                return Err(malformed("the response body is empty".into()));
            }
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| malformed(format!("the body is not JSON: {e}")))?;
            let r = match p.kind {
                ProviderKind::Openai => openai::parse_response(&v),
                ProviderKind::Anthropic => anthropic::parse_response(&v),
            }
            .map_err(malformed)?;
            if !r.text.is_empty() {
                on_text(&r.text);
            }
            return Ok(r);
        }
        let mut events = eventsource_stream::Eventsource::eventsource(resp.bytes_stream());
        let mut oa = openai::StreamAssembler::default();
        let mut an = anthropic::StreamAssembler::default();
        let mut seen = 0usize;
        loop {
            let ev = match tokio::time::timeout(p.idle_timeout, events.next()).await {
                Err(_) => return Err(self.idle(&url)),
                Ok(None) => break,
                Ok(Some(ev)) => ev,
            };
            let ev = ev.map_err(|e| LlmError::Transport {
                url: url.clone(),
                detail: match e {
                    eventsource_stream::EventStreamError::Transport(e) => http_error(e),
                    other => redact_urls_in(&other.to_string()),
                },
            })?;
            seen += 1;
            let delta = match p.kind {
                ProviderKind::Openai => {
                    let d = oa.push(&ev.data).map_err(malformed)?;
                    if oa.is_done() {
                        break;
                    }
                    d
                }
                ProviderKind::Anthropic => {
                    let d = an.push(&ev.event, &ev.data).map_err(malformed)?;
                    if an.finished() {
                        if let Some(t) = d {
                            on_text(&t);
                        }
                        break;
                    }
                    d
                }
            };
            if let Some(t) = delta {
                on_text(&t);
            }
        }
        if seen == 0 {
            return Err(malformed("the response stream is empty".into()));
        }
        match p.kind {
            ProviderKind::Openai => oa.finish(),
            ProviderKind::Anthropic => an.finish(),
        }
        .map_err(|u| match u {
            Unusable::Malformed(detail) => malformed(detail),
            Unusable::Truncated(detail) => LlmError::Truncated {
                url: url.clone(),
                detail,
            },
        })
    }
}

impl ChatModel for HttpModel {
    fn chat<'a>(
        &'a self,
        req: ChatRequest<'a>,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let total = self.provider.timeout;
            match tokio::time::timeout(total, self.chat_checked(req, on_text)).await {
                Ok(r) => r,
                Err(_) => Err(LlmError::Timeout {
                    url: redact_url(&self.provider.url()),
                    detail: format!(
                        "took longer than {} s in all (timeout_secs)",
                        total.as_secs()
                    ),
                }),
            }
        })
    }

    fn tool_wire(&self) -> Option<(Wire, Option<String>)> {
        let st = self.wire_state();
        Some((st.wire, st.reason.clone()))
    }

    fn describe(&self) -> String {
        let p = &self.provider;
        format!(
            "{} model '{}' at {}",
            match p.kind {
                ProviderKind::Openai => "OpenAI-compatible",
                ProviderKind::Anthropic => "Anthropic",
            },
            p.model,
            redact_url(&p.base_url)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn no_model_means_no_provider() {
        assert_eq!(Provider::resolve(&LlmConfig::default(), &env(&[])), None);
    }

    #[test]
    fn env_overrides_config_and_keys_fall_back_per_provider() {
        let cfg = LlmConfig {
            model: Some("from-config".into()),
            base_url: Some("http://config/v1".into()),
            ..Default::default()
        };
        let p = Provider::resolve(
            &cfg,
            &env(&[("COVO_LLM_MODEL", "qwen2.5:7b"), ("OPENAI_API_KEY", "sk-o")]),
        )
        .unwrap();
        assert_eq!(p.model, "qwen2.5:7b");
        assert_eq!(p.base_url, "http://config/v1");
        assert_eq!(p.api_key.as_deref(), Some("sk-o"));
        let p = Provider::resolve(
            &cfg,
            &env(&[
                ("COVO_LLM_PROVIDER", "anthropic"),
                ("ANTHROPIC_API_KEY", "sk-a"),
                ("OPENAI_API_KEY", "sk-o"),
                ("COVO_LLM_BASE_URL", "http://127.0.0.1:9/"),
            ]),
        )
        .unwrap();
        assert_eq!(p.kind, ProviderKind::Anthropic);
        assert_eq!(p.api_key.as_deref(), Some("sk-a"));
        assert_eq!(p.url(), "http://127.0.0.1:9/v1/messages");
        let p = Provider::resolve(
            &cfg,
            &env(&[("COVO_LLM_API_KEY", "sk-c"), ("OPENAI_API_KEY", "sk-o")]),
        )
        .unwrap();
        assert_eq!(p.api_key.as_deref(), Some("sk-c"));
    }

    #[test]
    fn http_errors_are_classified_for_the_user() {
        let p = Provider::resolve(
            &LlmConfig {
                model: Some("gemma:2b".into()),
                ..Default::default()
            },
            &env(&[]),
        )
        .unwrap();
        assert!(matches!(
            classify(&p, "u", 401, "{}"),
            LlmError::Unauthorized { .. }
        ));
        let e = classify(
            &p,
            "u",
            400,
            r#"{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools"}}"#,
        );
        assert!(matches!(e, LlmError::ToolsUnsupported { .. }), "{e:?}");
        assert!(e.to_string().contains("gemma:2b"));
        assert!(matches!(
            classify(
                &p,
                "u",
                404,
                r#"{"error":{"message":"model 'x' not found"}}"#
            ),
            LlmError::ModelNotFound { .. }
        ));
        assert!(matches!(
            classify(&p, "u", 500, "boom"),
            LlmError::Http { status: 500, .. }
        ));
    }

    #[test]
    fn backoff_doubles_with_jitter() {
        let b = Duration::from_millis(100);
        for attempt in 0..4 {
            let d = backoff(b, attempt);
            let full = b * (1 << attempt);
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
    }
}
