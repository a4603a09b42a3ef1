//! The fleet page (`[peer] fleet_bind`): the gateways on the broker, live, with their last
//! readings, from the peer's [`Fleet`](crate::fleet::Fleet) (built from retained births, Wills and readings; no
//! gateway is polled). A small HTTP/1 server on hyper:
//! - `GET /`: one self-contained HTML page (inline CSS and script, no external assets) that
//!   fetches `/api/fleet` every 2 s and draws the table. It holds no fleet data, so it is
//!   served without the token: a browser cannot send a bearer header when it opens a page.
//!   The script reads the token from the address's fragment (`/#token=...`, which the browser
//!   never sends to the server) and sends it as `Authorization: Bearer` to the API.
//! - `GET /api/fleet`: the fleet as JSON ([`Fleet::to_json`](crate::fleet::Fleet::to_json)).
//! - anything else: 404.
//!
//! With a token (`[peer] fleet_token`, `$COVO_PEER_FLEET_TOKEN` wins), every path but `/`
//! needs `Authorization: Bearer TOKEN` (401 otherwise, compared in constant time; a wrong token
//! waits [`WRONG_TOKEN_DELAY`], at most [`WRONG_TOKENS_AT_ONCE`] at once). A token in the query
//! string is not accepted: URLs end up in logs and histories. Without a token the page must
//! bind a loopback address ([`check_bind`]), and a request whose `Host` is not a loopback name
//! is refused, so that a web site cannot read the API through DNS rebinding.
//!
//! Bounded: at most [`MAX_CONNECTIONS`] connections at once (the next waits to be accepted),
//! request headers must arrive within [`HEADER_READ_TIMEOUT`], and a connection lasts at
//! most [`CONNECTION_LIFETIME`] (then it is closed between requests, or [`SHUTDOWN_GRACE`]
//! later). Request bodies are never read. The API's body is built at most once a second
//! ([`BODY_TTL`]) and shared by the requests in that second, so concurrent requests do not each
//! copy the fleet.

use crate::fleet::SharedFleet;
use bytes::Bytes;
use covo::secrets::{short_token, MIN_TOKEN_CHARS, WRONG_TOKENS_AT_ONCE, WRONG_TOKEN_DELAY};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, Semaphore};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a request's headers may take to arrive.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one connection may stay open, whatever it does.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);
/// How long a connection past [`CONNECTION_LIFETIME`] may take to finish its request.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long one built `/api/fleet` body is reused.
pub const BODY_TTL: Duration = Duration::from_secs(1);

/// The environment variable whose token wins over `[peer] fleet_token`.
pub const TOKEN_ENV: &str = "COVO_PEER_FLEET_TOKEN";

/// Why the fleet page cannot start.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// `[peer] fleet_bind` is not an address and port.
    #[error("[peer] fleet_bind = {0:?} is not an address:port (e.g. \"127.0.0.1:8090\")")]
    Bind(String),
    /// A non-loopback address without a token.
    #[error(
        "[peer] fleet_bind = {0:?} is not a loopback address, so the fleet page needs a token: \
         set [peer] fleet_token (or ${TOKEN_ENV}), or bind 127.0.0.1"
    )]
    NoToken(String),
    /// A token too short to resist guessing.
    #[error(
        "[peer] fleet_token (or ${TOKEN_ENV}) has {0} characters; use at least {MIN_TOKEN_CHARS} \
         (e.g. `openssl rand -hex 16`)"
    )]
    ShortToken(usize),
    /// The socket could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Listen(String, std::io::Error),
}

/// The token: `$COVO_PEER_FLEET_TOKEN` when set and not empty, else `[peer] fleet_token`.
pub fn token(configured: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env(TOKEN_ENV)
        .filter(|t| !t.is_empty())
        .or_else(|| configured.filter(|t| !t.is_empty()).map(str::to_string))
}

/// Checks `[peer] fleet_bind` and the token rule: anything but loopback needs a token, and a
/// token has at least [`MIN_TOKEN_CHARS`] characters.
pub fn check_bind(bind: &str, token: Option<&str>) -> Result<SocketAddr, PageError> {
    let addr: SocketAddr = bind.parse().map_err(|_| PageError::Bind(bind.into()))?;
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(PageError::NoToken(bind.into()));
    }
    if let Some(n) = short_token(token) {
        return Err(PageError::ShortToken(n));
    }
    Ok(addr)
}

/// Binds the page's socket (before any runtime runs, so that an error is a startup error).
pub fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, PageError> {
    let l =
        std::net::TcpListener::bind(addr).map_err(|e| PageError::Listen(addr.to_string(), e))?;
    l.set_nonblocking(true)
        .map_err(|e| PageError::Listen(addr.to_string(), e))?;
    Ok(l)
}

/// What every connection shares.
struct Page {
    fleet: SharedFleet,
    token: Option<String>,
    /// Permits for answering wrong tokens.
    wrong: Semaphore,
    /// The last `/api/fleet` body and when it was built.
    body: Mutex<Option<(Instant, Bytes)>>,
}

/// Serves the page on `listener` until the task is dropped. Call inside a tokio runtime.
pub async fn serve(listener: std::net::TcpListener, fleet: SharedFleet, token: Option<String>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "fleet page: cannot use its socket");
            return;
        }
    };
    let page = Arc::new(Page {
        fleet,
        token,
        wrong: Semaphore::new(WRONG_TOKENS_AT_ONCE),
        body: Mutex::new(None),
    });
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of descriptors, most often: wait rather than spin.
                tracing::warn!(error = %e, "fleet page: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let page = page.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let svc = hyper::service::service_fn(move |req| {
                let page = page.clone();
                async move { Ok::<_, std::convert::Infallible>(page.answer(req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), svc);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = tokio::time::sleep(CONNECTION_LIFETIME) => {
                    // Closed between requests, so a keep-alive client sees a clean close; a
                    // request still being answered gets a little longer.
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
                }
            }
        });
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    r
}

fn error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let body = serde_json::json!({"error": {"kind": "http", "message": message}});
    respond(status, "application/json", Bytes::from(body.to_string()))
}

impl Page {
    async fn answer(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path();
        if self.token.is_none() {
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            if !covo::secrets::loopback_host(host) {
                return error(
                    StatusCode::FORBIDDEN,
                    "without [peer] fleet_token the fleet page answers only requests to a \
                     loopback host (localhost, 127.0.0.1, [::1])",
                );
            }
        }
        if req.method() != Method::GET {
            return error(StatusCode::NOT_FOUND, "not found");
        }
        if path == "/" {
            let mut r = respond(
                StatusCode::OK,
                "text/html; charset=utf-8",
                Bytes::from_static(PAGE.as_bytes()),
            );
            r.headers_mut().insert(
                "content-security-policy",
                HeaderValue::from_static(
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                     connect-src 'self'; frame-ancestors 'none'; base-uri 'none'",
                ),
            );
            return r;
        }
        if let Some(token) = &self.token {
            let sent = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(covo::secrets::bearer);
            if !sent.is_some_and(|s| covo::secrets::same_token(s.as_bytes(), token.as_bytes())) {
                if sent.is_some() {
                    tracing::warn!("fleet page: request with a wrong token");
                    if let Ok(_p) = self.wrong.acquire().await {
                        tokio::time::sleep(WRONG_TOKEN_DELAY).await;
                    }
                }
                let mut r = error(
                    StatusCode::UNAUTHORIZED,
                    "a bearer token is required: Authorization: Bearer <[peer] fleet_token>",
                );
                r.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return r;
            }
        }
        match path {
            "/api/fleet" => respond(StatusCode::OK, "application/json", self.fleet_body().await),
            _ => error(StatusCode::NOT_FOUND, "not found"),
        }
    }

    /// The `/api/fleet` body, built again when the kept one is older than [`BODY_TTL`].
    async fn fleet_body(&self) -> Bytes {
        let mut kept = self.body.lock().await;
        if let Some((at, body)) = kept.as_ref() {
            if at.elapsed() < BODY_TTL {
                return body.clone();
            }
        }
        let body = Bytes::from(
            self.fleet
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .to_json(),
        );
        *kept = Some((Instant::now(), body.clone()));
        body
    }
}

/// The page: a table drawn from `/api/fleet` every 2 s. Text from the broker is set with
/// `textContent`, never parsed as HTML.
const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>covo fleet</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em;margin:0 0 .3em}
#sum{color:#555;margin-bottom:.8em}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #ddd;vertical-align:top}
th{background:#f4f4f4}
.online{color:#17803d;font-weight:600}.offline{color:#999}
#sum.err{color:#b00020}
td.r{font-family:ui-monospace,monospace;font-size:12px;max-width:40em;overflow-wrap:anywhere}
</style></head>
<body>
<h1>covo fleet</h1>
<div id="sum">loading…</div>
<table><thead><tr><th>Gateway</th><th>Status</th><th>Since</th><th>Software</th><th>Board</th>
<th>Tools</th><th>Last reading</th></tr></thead><tbody id="rows"></tbody></table>
<script>
"use strict";
const token = new URLSearchParams(location.hash.slice(1)).get("token");
function ago(s) {
  if (!s) return "-";
  let d = Math.max(0, Math.round(Date.now() / 1000 - s));
  if (d < 60) return d + " s ago";
  if (d < 3600) return Math.floor(d / 60) + " min ago";
  if (d < 86400) return Math.floor(d / 3600) + " h ago";
  return Math.floor(d / 86400) + " d ago";
}
function show(v) {
  if (v && typeof v === "object" && "value" in v) return v.value + (v.unit ? " " + v.unit : "");
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}
function lastReading(g) {
  let best = null;
  for (const [dev, r] of Object.entries(g.readings || {})) {
    if (!best || String(r.at || "") > String(best[1].at || "")) best = [dev, r];
  }
  if (!best) return "-";
  const vals = Object.entries(best[1]).filter(([k]) => k !== "at")
    .map(([k, v]) => k + " " + show(v)).join(", ");
  return best[0] + ": " + vals + (best[1].at ? " (" + best[1].at + ")" : "");
}
function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text == null ? "-" : String(text);
  if (cls) td.className = cls;
  tr.appendChild(td);
}
async function refresh() {
  const sum = document.getElementById("sum");
  try {
    const r = await fetch("/api/fleet", {cache: "no-store",
      headers: token ? {"Authorization": "Bearer " + token} : {}});
    if (r.status === 401) throw new Error("this page needs its token: open it as /#token=TOKEN");
    if (!r.ok) throw new Error("HTTP " + r.status);
    const f = await r.json();
    const rows = document.createElement("tbody");
    rows.id = "rows";
    for (const g of f.gateways) {
      const tr = document.createElement("tr");
      cell(tr, g.gateway);
      cell(tr, g.status, g.status);
      cell(tr, ago(g.online ? (g.since || g.last_change) : g.last_change));
      cell(tr, g.software);
      cell(tr, g.board);
      cell(tr, g.tools.length);
      cell(tr, lastReading(g), "r");
      rows.appendChild(tr);
    }
    document.getElementById("rows").replaceWith(rows);
    sum.className = "";
    sum.textContent = f.total + " gateway(s), " + f.online + " online" +
      (f.dropped ? ", " + f.dropped + " not listed (more than " + f.max + ")" : "") +
      " · updated " + new Date().toLocaleTimeString();
  } catch (e) {
    sum.className = "err";
    sum.textContent = String(e.message || e);
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body></html>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_loopback_bind_needs_a_token_of_sixteen_characters() {
        assert!(check_bind("127.0.0.1:8090", None).is_ok());
        assert!(check_bind("[::1]:0", None).is_ok());
        let e = check_bind("0.0.0.0:8090", None).unwrap_err();
        assert!(matches!(e, PageError::NoToken(_)), "{e}");
        assert!(e.to_string().contains("fleet_token"), "{e}");
        assert!(check_bind("0.0.0.0:8090", Some("0123456789abcdef")).is_ok());
        assert!(matches!(
            check_bind("0.0.0.0:8090", Some("short")),
            Err(PageError::ShortToken(5))
        ));
        assert!(matches!(
            check_bind("localhost:8090", None),
            Err(PageError::Bind(_))
        ));
    }

    #[test]
    fn the_environment_token_wins_and_an_empty_one_is_none() {
        let env = |v: Option<&str>| {
            let v = v.map(str::to_string);
            move |k: &str| (k == TOKEN_ENV).then(|| v.clone()).flatten()
        };
        assert_eq!(
            token(Some("from-config"), &env(Some("from-env"))).as_deref(),
            Some("from-env")
        );
        assert_eq!(
            token(Some("from-config"), &env(Some(""))).as_deref(),
            Some("from-config")
        );
        assert_eq!(token(Some(""), &env(None)), None);
    }
}
