//! A small client of the Telegram Bot API (<https://core.telegram.org/bots/api>): JSON methods,
//! one multipart upload (`sendPhoto`) and file downloads, over the reqwest client the model
//! clients use (rustls on ring, HTTP/1.1).
//!
//! The token is part of every URL (`{base}/bot{TOKEN}/{method}`), so no URL is ever shown:
//! errors name the method, reqwest errors go through [`secrets::http_error`] (which drops the
//! URL), and any text from the far side passes [`Api::redact`] before it is shown.
//!
//! One retry policy for every method ([`Api::call`], [`Api::upload`]): a 429 waits its
//! `retry_after`, a network error backs off ([`backoff`]: doubling from 1 s, with jitter), and
//! each call has a deadline; a wait that would end after it returns the error instead. The two
//! callers with a policy of their own use [`Api::call_once`]: the `getUpdates` loop (which
//! waits the same way between polls) and a streamed answer's edits (which skip a turn instead
//! of waiting; its final text goes through the retrying path).

use crate::secrets;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// The largest answer read from a Bot API method.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;
/// The largest file downloaded (Telegram's own limit for bots is 20 MB).
pub const MAX_DOWNLOAD_BYTES: usize = 20 << 20;
/// How long an ordinary method call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Used when a 429 carries no `retry_after`.
const DEFAULT_RETRY_AFTER: u64 = 5;
/// The longest wait between network retries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The wait after `failures` network errors in a row: doubling from 1 s up to [`MAX_BACKOFF`],
/// each with up to half of it taken off at random (so many bots do not retry in step).
pub fn backoff(failures: u32) -> Duration {
    let full = Duration::from_secs(1u64 << failures.clamp(1, 7).saturating_sub(1)).min(MAX_BACKOFF);
    full.mul_f64(0.5 + fastrand::f64() * 0.5)
}

/// A failed Bot API call.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ApiError {
    /// 401: the token is wrong or revoked.
    #[error(
        "Telegram refused the bot token (401 Unauthorized): check $COVO_TELEGRAM_TOKEN (from @BotFather)"
    )]
    Unauthorized,
    /// 429: flood control; wait this many seconds.
    #[error("Telegram asks to wait {0} s before the next request (429 Too Many Requests)")]
    RetryAfter(u64),
    /// Any other refusal (`"ok": false`).
    #[error("Telegram refused {method}: {code} {description}")]
    Refused {
        /// The method.
        method: String,
        /// `error_code` (or the HTTP status).
        code: i64,
        /// `description`, redacted.
        description: String,
    },
    /// No answer: connection refused, reset, timed out.
    #[error("cannot reach Telegram ({method}): {detail}")]
    Transport {
        /// The method.
        method: String,
        /// What failed, without the URL.
        detail: String,
    },
    /// An answer that is not the Bot API's shape, or too large.
    #[error("Telegram's answer to {method} was not understood: {detail}")]
    Malformed {
        /// The method.
        method: String,
        /// Why.
        detail: String,
    },
}

/// The Bot API of one bot.
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    /// A client for `base` (`https://api.telegram.org`) and the bot's token.
    pub fn new(base: &str, token: String) -> Result<Api, ApiError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ApiError::Transport {
                method: "client".into(),
                detail: secrets::http_error(e),
            })?;
        Ok(Api {
            http,
            base: base.trim_end_matches('/').to_string(),
            token,
        })
    }

    /// `text` with the token masked, for anything that came from the far side.
    pub fn redact(&self, text: &str) -> String {
        if self.token.is_empty() {
            return text.to_string();
        }
        secrets::redact_urls_in(&text.replace(&self.token, secrets::MASK))
    }

    fn url(&self, method: &str) -> String {
        format!("{}/bot{}/{method}", self.base, self.token)
    }

    /// Calls `method` with a JSON body; the `result` on success. Retries a 429 after its
    /// `retry_after` and a network error after a backoff, until `timeout` has passed.
    pub async fn call(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        self.call_by(method, body, Instant::now() + timeout).await
    }

    /// [`Api::call`] with a deadline instead of a timeout.
    pub async fn call_by(
        &self,
        method: &str,
        body: &Value,
        deadline: Instant,
    ) -> Result<Value, ApiError> {
        let body = bytes::Bytes::from(body.to_string());
        self.retrying(
            deadline,
            |left| self.json_request(method, &body, left),
            method,
        )
        .await
    }

    /// One attempt at `method`, for callers with a retry policy of their own.
    pub async fn call_once(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        let body = bytes::Bytes::from(body.to_string());
        self.finish(method, self.json_request(method, &body, timeout))
            .await
    }

    /// A POST of `body` (JSON) to `method`, given `timeout`.
    fn json_request(
        &self,
        method: &str,
        body: &bytes::Bytes,
        timeout: Duration,
    ) -> reqwest::RequestBuilder {
        self.http
            .post(self.url(method))
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body.clone())
    }

    /// Sends what `request` builds (given the time left for the attempt) until it succeeds, a
    /// refusal that waiting cannot change comes back, or the next wait would pass `deadline`.
    async fn retrying(
        &self,
        deadline: Instant,
        request: impl Fn(Duration) -> reqwest::RequestBuilder,
        method: &str,
    ) -> Result<Value, ApiError> {
        let mut failures = 0u32;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ApiError::Transport {
                    method: method.into(),
                    detail: "no answer before the call's deadline".into(),
                });
            }
            let (pause, e) = match self.finish(method, request(left)).await {
                Err(ApiError::RetryAfter(s)) => (Duration::from_secs(s), ApiError::RetryAfter(s)),
                Err(e @ ApiError::Transport { .. }) => {
                    failures = failures.saturating_add(1);
                    (backoff(failures), e)
                }
                done => return done,
            };
            if Instant::now() + pause >= deadline {
                return Err(e);
            }
            tracing::debug!(method, error = %e, wait_ms = pause.as_millis() as u64, "Telegram call failed; trying again");
            tokio::time::sleep(pause).await;
        }
    }

    /// Uploads one file as `multipart/form-data` with text `fields` (`sendPhoto`), retrying
    /// as [`Api::call`] does for up to two minutes.
    pub async fn upload(
        &self,
        method: &str,
        fields: &[(&str, String)],
        file: (&str, &str, &str, &[u8]),
    ) -> Result<Value, ApiError> {
        let (boundary, body) = crate::multipart::form(fields, file);
        let body = bytes::Bytes::from(body);
        self.retrying(
            Instant::now() + Duration::from_secs(120),
            |left| {
                self.http
                    .post(self.url(method))
                    .timeout(left)
                    .header(
                        "content-type",
                        format!("multipart/form-data; boundary={boundary}"),
                    )
                    .body(body.clone())
            },
            method,
        )
        .await
    }

    /// Downloads a file by the `file_path` `getFile` gave, at most `max` bytes.
    pub async fn download(&self, file_path: &str, max: usize) -> Result<Vec<u8>, ApiError> {
        let method = "file download";
        let url = format!("{}/file/bot{}/{}", self.base, self.token, file_path);
        let resp = self
            .http
            .get(url)
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .map_err(|e| self.transport(method, e))?;
        let status = resp.status().as_u16();
        let bytes = self.read(method, resp, max).await?;
        if status != 200 {
            return Err(ApiError::Refused {
                method: method.into(),
                code: status as i64,
                description: self.redact(&String::from_utf8_lossy(&bytes)),
            });
        }
        Ok(bytes)
    }

    fn transport(&self, method: &str, e: reqwest::Error) -> ApiError {
        ApiError::Transport {
            method: method.into(),
            detail: self.redact(&secrets::http_error(e)),
        }
    }

    async fn read(
        &self,
        method: &str,
        mut resp: reqwest::Response,
        max: usize,
    ) -> Result<Vec<u8>, ApiError> {
        let mut out = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(method, e))? {
            if out.len() + chunk.len() > max {
                return Err(ApiError::Malformed {
                    method: method.into(),
                    detail: format!("the answer is larger than {max} bytes"),
                });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    async fn finish(&self, method: &str, req: reqwest::RequestBuilder) -> Result<Value, ApiError> {
        let resp = req.send().await.map_err(|e| self.transport(method, e))?;
        let status = resp.status().as_u16();
        let bytes = self.read(method, resp, MAX_RESPONSE_BYTES).await?;
        parse(method, status, &bytes).map_err(|e| match e {
            ApiError::Refused {
                method,
                code,
                description,
            } => ApiError::Refused {
                method,
                code,
                description: self.redact(&description),
            },
            ApiError::Malformed { method, detail } => ApiError::Malformed {
                method,
                detail: self.redact(&detail),
            },
            e => e,
        })
    }
}

/// Reads a Bot API answer: `{"ok": true, "result": …}` or `{"ok": false, "error_code",
/// "description", "parameters": {"retry_after"}}`.
pub fn parse(method: &str, status: u16, bytes: &[u8]) -> Result<Value, ApiError> {
    let v: Option<Value> = serde_json::from_slice(bytes).ok();
    let code = v
        .as_ref()
        .and_then(|v| v["error_code"].as_i64())
        .unwrap_or(status as i64);
    if status == 401 || code == 401 {
        return Err(ApiError::Unauthorized);
    }
    if status == 429 || code == 429 {
        let wait = v
            .as_ref()
            .and_then(|v| v["parameters"]["retry_after"].as_u64())
            .unwrap_or(DEFAULT_RETRY_AFTER);
        return Err(ApiError::RetryAfter(wait));
    }
    let Some(v) = v else {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
        return Err(if status == 200 {
            ApiError::Malformed {
                method: method.into(),
                detail: format!("not JSON: {text}"),
            }
        } else {
            ApiError::Refused {
                method: method.into(),
                code,
                description: text,
            }
        });
    };
    match v["ok"].as_bool() {
        Some(true) => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
        Some(false) => Err(ApiError::Refused {
            method: method.into(),
            code,
            description: v["description"].as_str().unwrap_or("").to_string(),
        }),
        None => Err(ApiError::Malformed {
            method: method.into(),
            detail: "no \"ok\" field".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_with_their_errors() {
        assert_eq!(
            parse("m", 200, br#"{"ok":true,"result":[1]}"#).unwrap(),
            json!([1])
        );
        assert_eq!(
            parse(
                "m",
                429,
                br#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}"#
            ),
            Err(ApiError::RetryAfter(7))
        );
        assert_eq!(
            parse(
                "m",
                401,
                br#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#
            ),
            Err(ApiError::Unauthorized)
        );
        assert!(matches!(
            parse(
                "sendMessage",
                400,
                br#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#
            ),
            Err(ApiError::Refused { code: 400, .. })
        ));
        assert!(matches!(
            parse("m", 200, b"<html>"),
            Err(ApiError::Malformed { .. })
        ));
        assert!(matches!(
            parse("m", 502, b"Bad Gateway"),
            Err(ApiError::Refused { code: 502, .. })
        ));
    }

    #[test]
    fn the_token_never_shows() {
        let api = Api::new("http://127.0.0.1:9", "123:SECRET".into()).unwrap();
        let shown =
            api.redact("error sending request for url (http://127.0.0.1:9/bot123:SECRET/getMe)");
        assert!(!shown.contains("SECRET"), "{shown}");
    }
}
