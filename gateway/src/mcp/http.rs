//! MCP over streamable HTTP (`[mcp] bind`, served by `covo run`): rmcp's tower service at
//! `/mcp` inside an axum router that checks the bearer token and bounds the sessions.

use super::server::{CovoMcp, Shared};
use super::{MAX_REQUEST_BYTES, MAX_SESSIONS, SESSION_IDLE};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Connections the endpoint holds at once; a newcomer beyond them closes the one idle the
/// longest (`crate::listen`).
pub const MAX_CONNECTIONS: usize = 64;

/// Why the HTTP endpoint cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// `[mcp] bind` is not an address and port.
    #[error("[mcp] bind = {0:?} is not an address:port (e.g. \"127.0.0.1:8765\")")]
    Bind(String),
    /// A non-loopback address without a token.
    #[error(
        "[mcp] bind = {0:?} is not a loopback address, so MCP clients must authenticate: set \
         [mcp] token (or $COVO_MCP_TOKEN), or bind 127.0.0.1"
    )]
    NoToken(String),
    /// A token too short to resist guessing.
    #[error(
        "[mcp] token (or $COVO_MCP_TOKEN) has {0} characters; use at least {min} (e.g. \
         `openssl rand -hex 16`)",
        min = crate::secrets::MIN_TOKEN_CHARS
    )]
    ShortToken(usize),
    /// An `[mcp] allowed_origins` entry that is not an origin.
    #[error(
        "[mcp] allowed_origins: {0:?} is not an origin; write scheme, host and port, as a \
         browser sends them (\"https://app.example.com:443\", \"http://localhost:*\")"
    )]
    Origin(String),
    /// The socket could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Listen(String, std::io::Error),
}

/// Checks `[mcp] bind` and the token rule: anything but loopback needs a token.
pub fn check_bind(bind: &str, token: Option<&str>) -> Result<SocketAddr, HttpError> {
    let addr: SocketAddr = bind.parse().map_err(|_| HttpError::Bind(bind.into()))?;
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(HttpError::NoToken(bind.into()));
    }
    if let Some(n) = crate::secrets::short_token(token) {
        return Err(HttpError::ShortToken(n));
    }
    Ok(addr)
}

/// Checks `[mcp] allowed_origins`: each entry is `scheme://host[:port|:*]` (or `null`), with
/// nothing after the authority, so that no entry silently matches nothing.
pub fn check_origins(origins: &[String]) -> Result<Vec<String>, HttpError> {
    for o in origins {
        let ok = o == "null"
            || o.split_once("://").is_some_and(|(scheme, rest)| {
                matches!(scheme, "http" | "https")
                    && !rest.is_empty()
                    && !rest.contains(['/', '?', '#', '@', ' '])
            });
        if !ok {
            return Err(HttpError::Origin(o.clone()));
        }
    }
    Ok(origins.to_vec())
}

struct Gate {
    token: Option<String>,
    sessions: Arc<LocalSessionManager>,
    /// Permits for answering wrong tokens (`secrets::WRONG_TOKENS_AT_ONCE`).
    failed: crate::listen::Guesses,
}

/// A refusal answered before the request's body is read. It says `Connection: close`: hyper
/// does not reuse a connection whose request body is left unread, and a client that was not
/// told would send its next request into a connection being closed and see it dropped with no
/// answer (a keep-alive client retrying with the right token, or another wrong one).
fn refuse(status: StatusCode, message: String) -> Response {
    let body = json!({"error": {"kind": "http", "message": message}});
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CONNECTION, "close"),
        ],
        body.to_string(),
    )
        .into_response()
}

async fn gate(State(g): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    if let Some(token) = &g.token {
        let sent = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(crate::secrets::bearer);
        if !sent.is_some_and(|s| crate::secrets::same_token(s.as_bytes(), token.as_bytes())) {
            if req.headers().contains_key(header::AUTHORIZATION) {
                // A guess costs what it costs on the dashboard: the delay, one at a time per
                // client address, at most WRONG_TOKENS_AT_ONCE at once across every client.
                let from = crate::listen::client_ip(req.extensions());
                tracing::warn!(?from, "MCP request with a wrong token");
                g.failed.wrong(from).await;
            }
            let mut r = refuse(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required: Authorization: Bearer <[mcp] token>".into(),
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("header"));
            return r;
        }
    }
    // A body announced larger than the bound is refused from its headers, before any of it is
    // read (rmcp's own check reads up to the bound first).
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_REQUEST_BYTES as u64) {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a request body is at most {MAX_REQUEST_BYTES} bytes"),
        );
    }
    // A POST without a session id opens a session.
    if req.method() == Method::POST && !req.headers().contains_key("mcp-session-id") {
        let open = g.sessions.sessions.read().await.len();
        if open >= MAX_SESSIONS {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{MAX_SESSIONS} MCP sessions are open, the most this gateway holds; close \
                     one (HTTP DELETE) or wait {} s for an idle one to expire",
                    SESSION_IDLE.as_secs()
                ),
            );
        }
    }
    let mut r = next.run(req).await;
    // rmcp's own refusals (a foreign Origin, an unknown session, a wrong Accept) may leave the
    // body unread too, and then hyper drops the connection after answering: say so, as
    // `refuse` does, or a keep-alive client loses its next request (CI saw it, under load,
    // right after a 403 for a foreign Origin).
    if r.status().is_client_error() && !r.headers().contains_key(header::CONNECTION) {
        r.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    r
}

/// Serves MCP at `http://ADDR/mcp` until `stop`. Returns once the listener is bound, with the
/// bound address (port 0 picks one) and the serving task.
pub async fn serve_http(
    shared: Arc<Shared>,
    addr: SocketAddr,
    token: Option<String>,
    origins: Vec<String>,
    stop: CancellationToken,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), HttpError> {
    let mut session = SessionConfig::default();
    session.keep_alive = Some(SESSION_IDLE);
    let mut manager = LocalSessionManager::default();
    manager.session_config = session;
    let sessions = Arc::new(manager);
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(MAX_REQUEST_BYTES)
        .with_cancellation_token(stop.child_token())
        // The transport requires servers to validate `Origin`: a browser page from anywhere
        // but `[mcp] allowed_origins` is refused with 403, even with an empty list.
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    if !addr.ip().is_loopback() {
        // The token guards it; Host names of a LAN address are not known in advance.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(CovoMcp::new(shared.clone())),
        sessions.clone(),
        config,
    );
    let gate_state = Arc::new(Gate {
        token,
        sessions,
        failed: crate::listen::Guesses::default(),
    });
    let app = axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate_state, gate))
        .layer(axum::middleware::from_fn(crate::listen::track))
        .into_make_service_with_connect_info::<crate::listen::Peer>();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| HttpError::Listen(addr.to_string(), e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| HttpError::Listen(addr.to_string(), e))?;
    let task = tokio::spawn(async move {
        let listener =
            crate::listen::Limited::new(listener, crate::listen::Limits::new(MAX_CONNECTIONS));
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the MCP HTTP endpoint stopped");
        }
    });
    Ok((bound, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_origins_are_origins() {
        let ok = [
            "https://app.example.com:443",
            "http://localhost:*",
            "null",
            "http://[::1]:80",
        ];
        let ok: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
        assert_eq!(check_origins(&ok).unwrap(), ok);
        for bad in [
            "app.example.com",
            "https://app.example.com/",
            "https://app.example.com/mcp",
            "ftp://app.example.com",
            "https://",
            "*",
            "https://u@app.example.com",
        ] {
            assert!(
                matches!(check_origins(&[bad.to_string()]), Err(HttpError::Origin(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn only_loopback_may_go_without_a_token() {
        assert!(check_bind("127.0.0.1:8765", None).is_ok());
        assert!(check_bind("[::1]:8765", None).is_ok());
        assert!(matches!(
            check_bind("0.0.0.0:8765", None),
            Err(HttpError::NoToken(_))
        ));
        assert!(check_bind("0.0.0.0:8765", Some("0123456789abcdef")).is_ok());
        // Short tokens are refused wherever they bind, by character count.
        for short in ["t", "s3cret", "0123456789abcde", "ééééééééééééééé"] {
            assert!(matches!(
                check_bind("127.0.0.1:8765", Some(short)),
                Err(HttpError::ShortToken(n)) if n == short.chars().count()
            ));
        }
        assert!(matches!(
            check_bind("localhost", None),
            Err(HttpError::Bind(_))
        ));
    }
}
