//! LLM providers: OpenAI-compatible Chat Completions (OpenAI, Ollama, llama.cpp, vLLM, LM Studio,
//! OpenRouter) and Anthropic Messages, both with tools and SSE streaming.
//!
//! The wire formats live in `openai.rs` and `anthropic.rs` as pure encode/assemble functions; this
//! module owns the HTTP client, retries with backoff, and error classification.

pub mod anthropic;
pub mod openai;

use crate::config::LlmConfig;
pub use crate::config::ProviderKind;
use crate::secrets::{http_error, redact_url, redact_urls_in};
use covo_core::spec::ToolSpec;
use futures_util::StreamExt;
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;
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
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Retries after the first attempt on 429/5xx and connection errors.
    pub max_retries: u32,
    /// The first backoff; doubled per retry, with jitter, unless the server sends Retry-After.
    pub retry_base: Duration,
    /// Output token limit (Anthropic requires one).
    pub max_tokens: u32,
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
            .field("max_retries", &self.max_retries)
            .field("retry_base", &self.retry_base)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl Provider {
    /// Resolves the provider from config and the environment (`COVO_LLM_PROVIDER`,
    /// `COVO_LLM_BASE_URL`, `COVO_LLM_MODEL`, `COVO_LLM_API_KEY`, then `OPENAI_API_KEY` /
    /// `ANTHROPIC_API_KEY`). `None` when no model is configured.
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
            timeout: Duration::from_secs(cfg.timeout_secs.unwrap_or(120)),
            max_retries: cfg.max_retries.unwrap_or(3),
            retry_base: Duration::from_millis(cfg.retry_base_ms.unwrap_or(500)),
            max_tokens: cfg.max_tokens.unwrap_or(4096),
        })
    }

    fn url(&self) -> String {
        match self.kind {
            ProviderKind::Openai => format!("{}/chat/completions", self.base_url),
            ProviderKind::Anthropic => format!("{}/v1/messages", self.base_url),
        }
    }
}

/// An HTTP chat client for one provider.
pub struct HttpModel {
    http: reqwest::Client,
    provider: Provider,
}

impl HttpModel {
    /// A client with the provider's timeout. Installs the ring TLS provider once per process.
    pub fn new(provider: Provider) -> Result<HttpModel, LlmError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(provider.timeout)
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| LlmError::Transport {
                url: redact_url(&provider.base_url),
                detail: http_error(e),
            })?;
        Ok(HttpModel { http, provider })
    }

    /// The resolved provider.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    async fn send(&self, body: &serde_json::Value) -> Result<reqwest::Response, LlmError> {
        let p = &self.provider;
        let url = p.url();
        // What errors and logs show: the endpoint with any userinfo and query values masked.
        let shown = redact_url(&url);
        let bytes = serde_json::to_vec(body).map_err(|e| LlmError::Malformed {
            url: shown.clone(),
            detail: format!("the request could not be encoded: {e}"),
        })?;
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
            let (retry, err) = match req.send().await {
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

impl ChatModel for HttpModel {
    fn chat<'a>(
        &'a self,
        req: ChatRequest<'a>,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let p = &self.provider;
            let url = p.url();
            let body = match p.kind {
                ProviderKind::Openai => openai::request_body(&p.model, &req, true),
                ProviderKind::Anthropic => {
                    anthropic::request_body(&p.model, p.max_tokens, &req, true)
                }
            };
            let resp = self.send(&body).await?;
            let url = redact_url(&url);
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
                let text = resp.text().await.map_err(|e| LlmError::Transport {
                    url: url.clone(),
                    detail: http_error(e),
                })?;
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
            while let Some(ev) = events.next().await {
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
        })
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
