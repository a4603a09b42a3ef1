//! A small blocking HTTP helper shared by the API-backed tools (`web_search`, the
//! OpenAI-compatible media tools, embeddings).
//!
//! Like `web_fetch`, each request runs on its own thread with its own current-thread tokio
//! runtime (the caller may or may not be inside a runtime) and the ring TLS provider. Redirects
//! are followed by hand and checked like `web_fetch`'s (`guard`): the configured endpoint's own
//! host is trusted, any other must not be internal, and the key headers stay behind. Bodies
//! are capped: a response larger than `max_bytes` is an error, never silently cut.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::guard::{self, Allow};
use covo::secrets::{http_error, redact_url};
use covo_core::error::ToolError;

/// One request, as plain data so it can move to the request thread. Its `Debug` shows the URL
/// redacted and the value of no header that may carry a key.
#[derive(Clone)]
pub(super) struct Request {
    pub method: reqwest::Method,
    pub url: reqwest::Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// Responses larger than this are refused.
    pub max_bytes: usize,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let secret = SECRET_HEADERS.iter().any(|s| k.eq_ignore_ascii_case(s));
                (
                    k.as_str(),
                    if secret {
                        covo::secrets::MASK
                    } else {
                        v.as_str()
                    },
                )
            })
            .collect();
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("url", &redact_url(self.url.as_str()))
            .field("headers", &headers)
            .field("body_bytes", &self.body.as_ref().map(Vec::len))
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl Request {
    pub(super) fn get(url: reqwest::Url) -> Request {
        Request {
            method: reqwest::Method::GET,
            url,
            headers: Vec::new(),
            body: None,
            max_bytes: 4 * 1024 * 1024,
        }
    }

    /// A POST with a JSON body.
    pub(super) fn post_json(url: reqwest::Url, body: &Value) -> Request {
        Request {
            method: reqwest::Method::POST,
            url,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(body.to_string().into_bytes()),
            max_bytes: 4 * 1024 * 1024,
        }
    }

    pub(super) fn header(mut self, name: &str, value: impl Into<String>) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// `Authorization: Bearer …` when a key is set (local servers often need none).
    pub(super) fn bearer(self, key: Option<&str>) -> Request {
        match key {
            Some(k) if !k.is_empty() => self.header("Authorization", format!("Bearer {k}")),
            _ => self,
        }
    }

    pub(super) fn max_bytes(mut self, n: usize) -> Request {
        self.max_bytes = n;
        self
    }
}

/// What came back.
#[derive(Debug)]
pub(super) struct Response {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// `base` joined with `path` (`base` may or may not end in `/`).
pub(super) fn endpoint(tool: &str, base: &str, path: &str) -> Result<reqwest::Url, ToolError> {
    let joined = format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    reqwest::Url::parse(&joined).map_err(|e| ToolError::Failed {
        tool: tool.into(),
        message: format!(
            "the configured endpoint {} is not a URL: {e}",
            redact_url(&joined)
        ),
        hint: Some("fix the base URL in [peer.backends]".into()),
    })
}

/// Sends `req`, giving up at `deadline`.
pub(super) fn send(
    tool: &'static str,
    req: Request,
    deadline: Instant,
) -> Result<Response, ToolError> {
    let timeout = deadline.saturating_duration_since(Instant::now());
    if timeout.is_zero() {
        return Err(ToolError::failed(
            tool,
            "the deadline passed before the request",
        ));
    }
    std::thread::spawn(move || -> Result<Response, ToolError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ToolError::failed(tool, format!("no async runtime: {e}")))?;
        rt.block_on(send_async(tool, req, timeout))
    })
    .join()
    .map_err(|_| ToolError::failed(tool, "the request thread panicked"))?
}

/// Sends `req` and parses a JSON answer; a non-2xx status is an error carrying the API's own
/// message when it gives one.
pub(super) fn json(
    tool: &'static str,
    req: Request,
    deadline: Instant,
) -> Result<Value, ToolError> {
    let shown = redacted(&req.url);
    let resp = send(tool, req, deadline)?;
    if !(200..300).contains(&resp.status) {
        return Err(status_error(tool, &shown, &resp));
    }
    serde_json::from_slice(&resp.body).map_err(|e| ToolError::Failed {
        tool: tool.into(),
        message: format!("{shown}: the answer is not JSON: {e}"),
        hint: Some("check that the configured URL is the API endpoint".into()),
    })
}

/// The error for a non-2xx answer.
pub(super) fn status_error(tool: &str, shown: &str, resp: &Response) -> ToolError {
    let detail = serde_json::from_slice::<Value>(&resp.body)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            e.get("message")
                .and_then(Value::as_str)
                .or_else(|| e.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(&resp.body);
            text.chars().take(300).collect()
        });
    let hint = match resp.status {
        401 | 403 => "check the API key in [peer.backends]",
        404 => "check the base URL and the model name in [peer.backends]",
        413 => "the input is too large for this endpoint",
        429 => "rate limited; retry later",
        500..=599 => "the service failed; retry later",
        _ => "check the arguments and the [peer.backends] settings",
    };
    ToolError::Failed {
        tool: tool.into(),
        message: format!("{shown} answered {}: {}", resp.status, detail.trim()),
        hint: Some(hint.into()),
    }
}

/// An HTTP client builder for one backend call: the whole-request timeout, a bounded connect
/// timeout, rustls on ring. Callers set redirects (none: they follow by hand), proxies and
/// pinned addresses.
pub(super) fn builder(timeout: Duration, user_agent: String) -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .user_agent(user_agent)
}

/// A transport failure (timeout, refused connection, …) as the error the model sees.
pub(super) fn transport_error(
    tool: &str,
    shown: &str,
    timeout: Duration,
    e: reqwest::Error,
    connect_hint: &str,
    other_hint: &str,
) -> ToolError {
    let (message, hint) = if e.is_timeout() {
        (
            format!("{shown}: timed out after {:.1}s", timeout.as_secs_f64()),
            "retry later or with a longer deadline",
        )
    } else if e.is_connect() {
        (
            format!("{shown}: could not connect: {}", http_error(e)),
            connect_hint,
        )
    } else {
        (format!("{shown}: {}", http_error(e)), other_hint)
    };
    ToolError::Failed {
        tool: tool.into(),
        message,
        hint: Some(hint.into()),
    }
}

/// The URL for messages, with its userinfo and query values (which may carry a key) masked.
pub(super) fn redacted(url: &reqwest::Url) -> String {
    redact_url(url.as_str())
}

/// Headers that may carry a key: never sent on to another host by a redirect.
const SECRET_HEADERS: &[&str] = &["authorization", "x-api-key", "api-key", "cookie"];

/// `req` turned into the request a redirect with `status` to `next` asks for: 307 and 308
/// repeat it; the others make it a GET without a body. Headers that may carry a key are not
/// sent on to another origin.
fn redirect(req: &mut Request, status: u16, next: reqwest::Url) {
    if !matches!(status, 307 | 308) && req.method != reqwest::Method::HEAD {
        req.method = reqwest::Method::GET;
        req.body = None;
        req.headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
    }
    let same_origin = next.host_str() == req.url.host_str()
        && next.port_or_known_default() == req.url.port_or_known_default()
        && next.scheme() == req.url.scheme();
    if !same_origin {
        req.headers
            .retain(|(k, _)| !SECRET_HEADERS.iter().any(|s| k.eq_ignore_ascii_case(s)));
    }
    req.url = next;
}

/// Sends `req`, following redirects by hand (at most `guard::MAX_REDIRECTS`): the configured
/// endpoint's own host is trusted (it may well be a local service), any other host a redirect
/// names must pass `guard::check` (no loopback, private, link-local or other internal address,
/// checked after resolution and then pinned), and the key headers are not sent on to it.
async fn send_async(
    tool: &'static str,
    mut req: Request,
    timeout: Duration,
) -> Result<Response, ToolError> {
    let deadline = Instant::now() + timeout;
    let endpoint = Allow::host_of(&req.url);
    let mut hops = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let shown = redacted(&req.url);
        if left.is_zero() {
            return Err(ToolError::Failed {
                tool: tool.into(),
                message: format!("{shown}: timed out after {:.1}s", timeout.as_secs_f64()),
                hint: Some("retry later or with a longer deadline".into()),
            });
        }
        let pinned = guard::check(
            tool,
            &endpoint,
            &req.url,
            deadline,
            "[peer.backends] (as the tool's endpoint URL)",
        )
        .await?;
        let mut builder = builder(left, format!("covo-peer/{}", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none());
        if let Some((name, addrs)) = &pinned {
            // Checked addresses only, and no proxy that would reach them unchecked.
            builder = builder.no_proxy().resolve_to_addrs(name, addrs);
        }
        let client = builder
            .build()
            .map_err(|e| ToolError::failed(tool, format!("HTTP client: {}", http_error(e))))?;
        let transport = |e: reqwest::Error| {
            transport_error(
                tool,
                &shown,
                left,
                e,
                "check the URL in [peer.backends] and that the service is up",
                "check the URL in [peer.backends]",
            )
        };
        let mut builder = client.request(req.method.clone(), req.url.clone());
        for (k, v) in &req.headers {
            match reqwest::header::HeaderValue::from_str(v) {
                Ok(mut value) => {
                    // Keeps the key out of any `Debug` of the request (reqwest, hyper).
                    if SECRET_HEADERS.iter().any(|s| k.eq_ignore_ascii_case(s)) {
                        value.set_sensitive(true);
                    }
                    builder = builder.header(k.as_str(), value);
                }
                Err(_) => builder = builder.header(k.as_str(), v.as_str()),
            }
        }
        if let Some(body) = &req.body {
            builder = builder.body(body.clone());
        }
        let mut resp = builder.send().await.map_err(transport)?;
        let location = resp
            .status()
            .is_redirection()
            .then(|| resp.headers().get(reqwest::header::LOCATION))
            .flatten()
            .cloned();
        if let Some(location) = location {
            if hops == guard::MAX_REDIRECTS {
                return Err(ToolError::Failed {
                    tool: tool.into(),
                    message: format!("{shown}: more than {} redirects", guard::MAX_REDIRECTS),
                    hint: Some("check the URL in [peer.backends]".into()),
                });
            }
            let next = location
                .to_str()
                .ok()
                .and_then(|l| req.url.join(l).ok())
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| {
                    ToolError::failed(
                        tool,
                        format!("{shown}: redirects to an invalid or non-HTTP URL"),
                    )
                })?;
            redirect(&mut req, resp.status().as_u16(), next);
            hops += 1;
            continue;
        }
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > req.max_bytes {
                return Err(ToolError::Failed {
                    tool: tool.into(),
                    message: format!("{shown}: the answer is larger than {} bytes", req.max_bytes),
                    hint: Some("ask for a smaller result".into()),
                });
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Response {
            status,
            content_type,
            body,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_request_names_its_endpoint_without_secrets_and_debug_hides_the_key() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = reqwest::Url::parse(&format!(
            "http://u:pw-1234@127.0.0.1:{port}/v1/x?key=qk-5678"
        ))
        .unwrap();
        let req = Request::get(url).bearer(Some("sk-9999"));
        let debug = format!("{req:?}");
        for secret in ["pw-1234", "qk-5678", "sk-9999"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        let e = send("web_search", req, Instant::now() + Duration::from_secs(5)).unwrap_err();
        let text = e.to_json().to_string();
        for secret in ["pw-1234", "qk-5678", "sk-9999"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(
            text.contains(&format!("http://***@127.0.0.1:{port}/v1/x?key=***")),
            "{text}"
        );
    }

    /// The endpoint (a local service, trusted as configured) redirects elsewhere: to another
    /// internal host (`localhost`, the same machine under another name) and to the cloud
    /// metadata address. Neither is reached, the key goes nowhere, and a redirect within the
    /// endpoint's own host still works.
    #[test]
    fn a_redirect_from_the_endpoint_to_an_internal_address_is_refused() {
        let (inner, inner_seen) =
            covo_tests::http_fake::serve(|_| (200, "application/json", b"{}".to_vec()));
        let inner_port = inner.rsplit(':').next().unwrap().to_string();
        let (base, seen) = covo_tests::http_fake::serve_with_headers(move |req| {
            let to = |loc: String| (302, vec![("Location", loc)], Vec::new());
            match req.path() {
                "/to-localhost" => to(format!("http://localhost:{inner_port}/secret")),
                "/to-metadata" => to("http://169.254.169.254/latest/meta-data/".into()),
                "/to-same" => (307, vec![("Location", "/ok".to_string())], Vec::new()),
                _ => (
                    200,
                    vec![("Content-Type", "application/json".to_string())],
                    b"{\"ok\":true}".to_vec(),
                ),
            }
        });
        let soon = || Instant::now() + Duration::from_secs(10);
        for path in ["/to-localhost", "/to-metadata"] {
            let url = reqwest::Url::parse(&format!("{base}{path}")).unwrap();
            let req = Request::post_json(url, &serde_json::json!({"q": 1})).bearer(Some("sk-4242"));
            let e = json("web_search", req, soon()).unwrap_err();
            let text = e.to_json().to_string();
            assert!(text.contains("refused"), "{path}: {text}");
            assert!(
                text.contains("loopback") || text.contains("link-local"),
                "{path}: {text}"
            );
        }
        assert!(
            inner_seen.lock().unwrap().is_empty(),
            "the redirect reached the inner service"
        );
        // Within the endpoint's own host: followed, the POST repeated with its key (307).
        let url = reqwest::Url::parse(&format!("{base}/to-same")).unwrap();
        let req = Request::post_json(url, &serde_json::json!({"q": 2})).bearer(Some("sk-4242"));
        assert_eq!(
            json("web_search", req, soon()).unwrap(),
            serde_json::json!({"ok": true})
        );
        let seen = seen.lock().unwrap();
        let last = seen.last().unwrap();
        assert_eq!((last.method.as_str(), last.path()), ("POST", "/ok"));
        assert_eq!(last.header("Authorization"), Some("Bearer sk-4242"));
    }

    #[test]
    fn a_redirect_to_another_origin_sends_no_key_and_a_303_drops_the_body() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let post = || {
            Request::post_json(
                url("https://api.example/v1/x"),
                &serde_json::json!({"a": 1}),
            )
            .bearer(Some("sk-1"))
            .header("X-Api-Key", "k")
            .header("Accept", "application/json")
        };
        let names = |r: &Request| r.headers.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        // The same origin, 307: all of it again.
        let mut r = post();
        redirect(&mut r, 307, url("https://api.example/v2/x"));
        assert_eq!(r.method, reqwest::Method::POST);
        assert!(r.body.is_some());
        assert_eq!(
            names(&r),
            ["Content-Type", "Authorization", "X-Api-Key", "Accept"]
        );
        // Another host, a port or a scheme: no key.
        for other in [
            "https://cdn.example/v1/x",
            "https://api.example:8443/v1/x",
            "http://api.example/v1/x",
        ] {
            let mut r = post();
            redirect(&mut r, 308, url(other));
            assert_eq!(names(&r), ["Content-Type", "Accept"], "{other}");
            assert_eq!(r.url.as_str(), other);
        }
        // 303: a GET without the body or its type.
        let mut r = post();
        redirect(&mut r, 303, url("https://api.example/result"));
        assert_eq!(r.method, reqwest::Method::GET);
        assert!(r.body.is_none());
        assert_eq!(names(&r), ["Authorization", "X-Api-Key", "Accept"]);
    }
}
