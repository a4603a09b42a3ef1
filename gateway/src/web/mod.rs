//! The web dashboard (`[web] bind`, cargo feature `web`), served by `covo run` beside its
//! loop: chat with the agent (one agent session per browser, streamed over server-sent
//! events), live sensor values pushed as they are sampled and a history chart per quantity,
//! the board and its devices, relay switches and PWM sliders, pending approvals with Approve /
//! Deny, and the tool-call log from the audit table.
//!
//! Every tool call it makes (the controls, and the agent's calls in its chats) goes through
//! the one pipeline with `Via::Web`; a chat's destructive calls wait in the bounded
//! [`approvals::Pending`] table for the page's answer. Assets are embedded (`assets/`: plain
//! HTML, CSS and JavaScript, no build step).
//!
//! Authentication: with a token (`[web] token` or `$COVO_WEB_TOKEN`, required unless `bind`
//! is a loopback address) every page and API call needs it, as the `covo_token` cookie that
//! the login form sets (HttpOnly, SameSite=Strict) or as `Authorization: Bearer TOKEN`.
//!
//! Bounds: connections (live streams + [`EXTRA_CONNECTIONS`]), live event streams
//! ([`DEFAULT_MAX_STREAMS`]), request bodies ([`MAX_BODY`]), pending
//! approvals ([`approvals::MAX_PENDING`]), chat sessions ([`DEFAULT_MAX_SESSIONS`], one turn at a
//! time each), audit pages ([`MAX_AUDIT_PAGE`]), chart points (`store::readings::MAX_BUCKETS`),
//! and the event queue ([`EVENT_QUEUE`]; a page that falls behind skips events and reloads).

pub mod approvals;

use crate::agent::{self, Agent, Observer, Outcome, ToolResult};
use crate::config::WebConfig;
use crate::daemon::{SampleTap, Sessions};
use crate::error::CallError;
use crate::exec::Session;
use crate::listen::{Limited, Limits, Peer};
use crate::llm::{ChatModel, ToolCall};
use crate::runtime::{Runtime, Via};
use approvals::{Pending, WebApprover};
use axum::extract::rejection::{FormRejection, JsonRejection};
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Query, State};
use axum::http::{header, request::Parts, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use covo_board::driver::Kind;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, Semaphore};
use tokio_util::sync::CancellationToken;

/// Dashboard chat sessions held at once unless `[web] max_sessions` says otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 8;
/// Live event streams (open pages) at once unless `[web] max_streams` says otherwise.
pub const DEFAULT_MAX_STREAMS: usize = 16;
/// Seconds a destructive call waits for the page's answer unless `[web] approval_secs` says so.
pub const DEFAULT_APPROVAL_SECS: u64 = 120;
/// Connections open at once beyond one per live stream (a browser keeps up to 6 to a host);
/// a newcomer beyond them closes the connection idle the longest (`crate::listen`).
pub const EXTRA_CONNECTIONS: usize = 32;
/// The largest request body accepted, in bytes.
pub const MAX_BODY: usize = 16 * 1024;
/// Events queued for the live streams; a stream further behind skips the oldest.
pub const EVENT_QUEUE: usize = 256;
/// Samples queued between the sampler and the dashboard.
pub const SAMPLE_QUEUE: usize = 64;
/// The most audit rows one page of the log returns.
pub const MAX_AUDIT_PAGE: u32 = 200;
/// The longest chart window, in hours.
pub const MAX_HISTORY_HOURS: i64 = 24 * 31;
/// How long a wrong token waits before its answer, through the login form or as a bearer
/// token or cookie alike.
pub const FAILED_LOGIN_DELAY: Duration = crate::secrets::WRONG_TOKEN_DELAY;
/// Wrong tokens answered at once, across every client (`secrets::WRONG_TOKENS_AT_ONCE`).
pub const FAILED_AT_ONCE: usize = crate::secrets::WRONG_TOKENS_AT_ONCE;
/// Tool results shown in a chat are cut at this many bytes.
const SHOWN_RESULT_BYTES: usize = 2048;

/// The tools the board's controls call ([`actuate`]): after a chat's call of one, the page
/// reads the board back (the `changes_board` flag of a chat result).
static CONTROL_TOOLS: [&covo_core::spec::ToolSpec; 2] = [
    &covo_core::catalog::gpio::GPIO_WRITE,
    &covo_core::catalog::gpio::PWM_SET,
];

const TOKEN_COOKIE: &str = "covo_token";
const SID_COOKIE: &str = "covo_sid";

/// The embedded assets: name, content type, body.
pub const ASSETS: &[(&str, &str, &str)] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("assets/index.html"),
    ),
    (
        "login.html",
        "text/html; charset=utf-8",
        include_str!("assets/login.html"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    ),
];

fn asset(name: &str) -> (&'static str, &'static str) {
    ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, t, b)| (*t, *b))
        .unwrap_or(("text/plain", ""))
}

/// Why the dashboard cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// `bind` is not `address:port`.
    #[error("[web] bind '{0}' is not an address and port (e.g. 127.0.0.1:8080)")]
    BadBind(String),
    /// A non-loopback bind without a token.
    #[error(
        "[web] bind {0} is not a loopback address, and no token is set: set [web] token or \
         $COVO_WEB_TOKEN (anyone on the network could otherwise drive the board)"
    )]
    TokenRequired(SocketAddr),
    /// The token is empty.
    #[error("[web] token (or $COVO_WEB_TOKEN) is empty")]
    EmptyToken,
    /// A token too short to resist guessing.
    #[error(
        "[web] token (or $COVO_WEB_TOKEN) has {0} characters; use at least {min} (e.g. \
         `openssl rand -hex 16`)",
        min = crate::secrets::MIN_TOKEN_CHARS
    )]
    ShortToken(usize),
    /// The socket could not be opened.
    #[error("[web] cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// The dashboard's settings, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The token, if any.
    pub token: Option<String>,
    /// Chat sessions at once.
    pub max_sessions: usize,
    /// Live streams at once.
    pub max_streams: usize,
    /// How long an approval waits.
    pub approval: Duration,
    /// Chat sessions unused this long are evicted (`[run] session_idle_secs`).
    pub session_idle: Duration,
}

impl Settings {
    /// `None` when `[web] bind` is unset; an error when it is wrong or needs a token it lacks.
    /// `env_token` is `$COVO_WEB_TOKEN`, used when `[web] token` is unset.
    pub fn from_config(
        cfg: &WebConfig,
        env_token: Option<String>,
        session_idle: Duration,
    ) -> Result<Option<Settings>, WebError> {
        let Some(bind) = &cfg.bind else {
            return Ok(None);
        };
        let addr: SocketAddr = bind
            .trim()
            .parse()
            .map_err(|_| WebError::BadBind(bind.clone()))?;
        let token = cfg.token.clone().or(env_token);
        if token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(WebError::EmptyToken);
        }
        if let Some(n) = crate::secrets::short_token(token.as_deref()) {
            return Err(WebError::ShortToken(n));
        }
        if token.is_none() && !addr.ip().is_loopback() {
            return Err(WebError::TokenRequired(addr));
        }
        Ok(Some(Settings {
            addr,
            token,
            max_sessions: cfg.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS).max(1),
            max_streams: cfg.max_streams.unwrap_or(DEFAULT_MAX_STREAMS).max(1),
            approval: Duration::from_secs(
                cfg.approval_secs.unwrap_or(DEFAULT_APPROVAL_SECS).max(1),
            ),
            session_idle,
        }))
    }
}

/// One event for the live streams: to every page, or to one browser session's.
struct Ev {
    name: &'static str,
    sid: Option<String>,
    data: String,
}

type Events = broadcast::Sender<Arc<Ev>>;

fn emit(events: &Events, name: &'static str, sid: Option<&str>, data: Value) {
    // No open page is no error.
    let _ = events.send(Arc::new(Ev {
        name,
        sid: sid.map(str::to_string),
        data: data.to_string(),
    }));
}

struct AppState {
    rt: Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    token: Option<Vec<u8>>,
    events: Events,
    streams: Arc<Semaphore>,
    max_streams: usize,
    /// Live streams per client address ([`streams_per_client`]).
    client_streams: Arc<Mutex<HashMap<IpAddr, usize>>>,
    sessions: Mutex<Sessions>,
    max_sessions: usize,
    pending: Arc<Pending>,
    stop: CancellationToken,
    /// What wrong tokens cost ([`FAILED_AT_ONCE`], per client address).
    failed: crate::listen::Guesses,
}

type St = Arc<AppState>;

/// A bound dashboard, ready to serve.
pub struct Dashboard {
    listener: tokio::net::TcpListener,
    max_connections: usize,
    state: St,
    samples: SampleTap,
}

impl Dashboard {
    /// Opens the socket. Call inside the Tokio runtime that will serve it.
    pub async fn bind(
        settings: Settings,
        rt: Arc<Runtime>,
        model: Option<Arc<dyn ChatModel>>,
        stop: CancellationToken,
    ) -> Result<Dashboard, WebError> {
        let listener = tokio::net::TcpListener::bind(settings.addr)
            .await
            .map_err(|source| WebError::Listen {
                addr: settings.addr,
                source,
            })?;
        let (events, _) = broadcast::channel(EVENT_QUEUE);
        let ev = events.clone();
        let pending = Arc::new(Pending::new(
            approvals::MAX_PENDING,
            settings.approval,
            move || emit(&ev, "approvals", None, json!({})),
        ));
        let (samples, _) = broadcast::channel(SAMPLE_QUEUE);
        let state = Arc::new(AppState {
            rt,
            model,
            token: settings.token.map(String::into_bytes),
            events,
            streams: Arc::new(Semaphore::new(settings.max_streams)),
            max_streams: settings.max_streams,
            client_streams: Arc::new(Mutex::new(HashMap::new())),
            sessions: Mutex::new(Sessions::new(settings.max_sessions, settings.session_idle)),
            max_sessions: settings.max_sessions,
            pending,
            stop,
            failed: crate::listen::Guesses::default(),
        });
        Ok(Dashboard {
            listener,
            max_connections: settings.max_streams + EXTRA_CONNECTIONS,
            state,
            samples,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Where the sampler sends each sample (see `daemon::serve_with`).
    pub fn samples(&self) -> SampleTap {
        self.samples.clone()
    }

    /// Serves until the stop token is cancelled.
    pub async fn serve(self) {
        let st = self.state;
        // Samples become events for every page.
        let mut rx = self.samples.subscribe();
        let (ev, stop) = (st.events.clone(), st.stop.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    s = rx.recv() => match s {
                        Ok((sensor, v)) => emit(&ev, "sample", None, json!({
                            "sensor": sensor, "at": v["at"], "readings": v["readings"],
                        })),
                        Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            }
        });
        let stop = st.stop.clone();
        let app = router(st);
        let listener = Limited::new(self.listener, Limits::new(self.max_connections));
        let app = app.into_make_service_with_connect_info::<Peer>();
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
        {
            tracing::warn!(error = %e, "the dashboard's server stopped");
        }
    }
}

fn router(st: St) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/app.js", get(static_asset))
        .route("/app.css", get(static_asset))
        .route("/login", post(login))
        .route("/logout", post(logout))
        .route("/api/events", get(events))
        .route("/api/chat", post(chat).get(chat_history))
        .route("/api/chat/new", post(chat_new))
        .route("/api/sensors", get(sensors))
        .route("/api/history", get(history))
        .route("/api/board", get(board))
        .route("/api/actuate", post(actuate))
        .route("/api/approvals", get(approvals_list))
        .route("/api/approvals/{id}", post(approvals_answer))
        .route("/api/audit", get(audit))
        .fallback(not_found)
        .layer(axum::middleware::from_fn(same_site_writes))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn(crate::listen::track))
        .with_state(st)
}

// ---- errors ----

/// A structured error answer: `{"error": {"kind", "message"}}` with its status.
struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": {"kind": self.kind, "message": self.message}})),
        )
            .into_response()
    }
}

fn api_error(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        kind,
        message: message.into(),
    }
}

fn error(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Response {
    api_error(status, kind, message).into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not_found", "no such page or API")
}

/// A JSON body, or the structured error for a bad one (413 when it is too large).
fn body<T>(r: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    r.map(|Json(v)| v).map_err(|e| {
        let status = e.status();
        let kind = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "too_large"
        } else {
            "bad_request"
        };
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the request body is larger than {MAX_BODY} bytes")
        } else {
            e.body_text()
        };
        api_error(status, kind, message)
    })
}

// ---- authentication ----

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Whether a request without a token may be served: its `Host` names this machine's loopback
/// (`localhost`, `127.0.0.1`, `[::1]`). A web page elsewhere whose name an attacker points at
/// 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
pub fn loopback_host(headers: &HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(crate::secrets::loopback_host)
}

/// What a wrong token costs, on every path: [`FAILED_LOGIN_DELAY`], one at a time per client
/// address, with at most [`FAILED_AT_ONCE`] answered at once (`listen::Guesses`).
async fn wrong_token(st: &AppState, from: Option<IpAddr>) {
    st.failed.wrong(from).await;
}

/// Whether the request carries a token at all (a bearer header or the token cookie): one that
/// carries none is not a guess and is answered at once.
fn presents_token(headers: &HeaderMap) -> bool {
    headers.contains_key(header::AUTHORIZATION) || cookie(headers, TOKEN_COOKIE).is_some()
}

fn authorized(st: &AppState, headers: &HeaderMap) -> bool {
    let Some(token) = &st.token else {
        // No token: only loopback binds get here (see `Settings`).
        return loopback_host(headers);
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::secrets::bearer)
        .map(|t| t.as_bytes().to_vec());
    let cookie = cookie(headers, TOKEN_COOKIE).and_then(unhex);
    bearer
        .into_iter()
        .chain(cookie)
        .any(|given| crate::secrets::same_token(&given, token))
}

/// Why a state-changing request (anything but GET, HEAD and OPTIONS) comes from a page on
/// another site, if it does: its `Origin` is not this dashboard's own (`http(s)://` + the
/// `Host` it was sent to), or, without an `Origin`, the browser says `Sec-Fetch-Site:
/// cross-site` or `same-site`. Clients that are not browsers send neither and pass; a cookie
/// alone never makes another site's form, `text/plain` or multipart POST count.
fn cross_site(method: &Method, headers: &HeaderMap) -> Option<String> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    let text = |name: header::HeaderName| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    if let Some(origin) = text(header::ORIGIN) {
        let own = text(header::HOST).is_some_and(|host| {
            ["http://", "https://"].iter().any(|scheme| {
                origin.len() == scheme.len() + host.len()
                    && origin[..scheme.len()].eq_ignore_ascii_case(scheme)
                    && origin[scheme.len()..].eq_ignore_ascii_case(host)
            })
        });
        return (!own).then(|| {
            let shown: String = origin.chars().take(80).collect();
            format!("its Origin {shown:?} is not this dashboard")
        });
    }
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        Some(site @ ("cross-site" | "same-site")) => {
            Some(format!("the browser says it comes from a {site} page"))
        }
        _ => None,
    }
}

/// Refuses a state-changing request from another site's page before any handler runs.
async fn same_site_writes(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if let Some(why) = cross_site(req.method(), req.headers()) {
        return error(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "refused: {why}; requests that change something must come from this \
                 dashboard's own page"
            ),
        );
    }
    next.run(req).await
}

fn not_loopback() -> Response {
    error(
        StatusCode::FORBIDDEN,
        "forbidden",
        "without a token this dashboard answers only requests to localhost, 127.0.0.1 or [::1]; \
         set [web] token to reach it by another name",
    )
}

/// An authenticated request; the rejection is a 401 with a structured error.
struct Authed;

impl FromRequestParts<St> for Authed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, st: &St) -> Result<Self, Self::Rejection> {
        if authorized(st, &parts.headers) {
            Ok(Authed)
        } else if st.token.is_none() {
            Err(not_loopback())
        } else {
            if presents_token(&parts.headers) {
                let from = crate::listen::client_ip(&parts.extensions);
                tracing::warn!(?from, "dashboard request with a wrong token");
                wrong_token(st, from).await;
            }
            // Answered before any body is read, so the connection is not reused (see
            // `mcp::http::refuse`): the client is told to open a new one.
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this dashboard needs its token: log in at /, or send Authorization: Bearer TOKEN",
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(r)
        }
    }
}

/// The browser session: the `covo_sid` cookie, or `api` for clients without one.
fn sid(headers: &HeaderMap) -> String {
    cookie(headers, SID_COOKIE)
        .filter(|s| !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or("api")
        .to_string()
}

fn new_sid() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

fn html(status: StatusCode, body: &'static str) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The page with its stylesheet inlined: one request fewer before the first paint.
fn index_page() -> &'static str {
    static PAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        asset("index.html").1.replace(
            r#"<link rel="stylesheet" href="/app.css">"#,
            &format!("<style>{}</style>", asset("app.css").1),
        )
    })
}

async fn index(State(st): State<St>, headers: HeaderMap) -> Response {
    if !authorized(&st, &headers) {
        if st.token.is_none() {
            return not_loopback();
        }
        return html(StatusCode::UNAUTHORIZED, asset("login.html").1);
    }
    let mut r = html(StatusCode::OK, index_page());
    if cookie(&headers, SID_COOKIE).is_none() {
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{SID_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
            new_sid()
        )) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    r
}

async fn static_asset(_: Authed, uri: axum::http::Uri) -> Response {
    let (ctype, body) = asset(uri.path().trim_start_matches('/'));
    (
        [
            (header::CONTENT_TYPE, ctype),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(
    State(st): State<St>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<Peer>>>,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let given = form.map(|Form(f)| f.token).unwrap_or_default();
    let ok = match &st.token {
        Some(t) => crate::secrets::same_token(given.trim().as_bytes(), t),
        None => true,
    };
    if !ok {
        let from = peer.map(|p| p.0 .0.addr().ip());
        tracing::warn!(?from, "dashboard login with a wrong token");
        wrong_token(&st, from).await;
        return html(StatusCode::UNAUTHORIZED, asset("login.html").1);
    }
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    let cookies = [
        format!(
            "{TOKEN_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
            hex(given.trim().as_bytes())
        ),
        format!(
            "{SID_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
            new_sid()
        ),
    ];
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(&c) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    r
}

async fn logout() -> Response {
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    r.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static("covo_token=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    r
}

// ---- live events ----

/// The live streams one client address may hold: half of them, so that one client (or one
/// attacker) cannot take every page's stream.
pub fn streams_per_client(max_streams: usize) -> usize {
    max_streams.div_ceil(2).max(1)
}

/// A live stream counted against its client's address until dropped.
struct ClientStream {
    map: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl ClientStream {
    fn take(st: &AppState, ip: IpAddr) -> Option<ClientStream> {
        let mut m = st.client_streams.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(ip).or_insert(0);
        if *n >= streams_per_client(st.max_streams) {
            return None;
        }
        *n += 1;
        Some(ClientStream {
            map: st.client_streams.clone(),
            ip,
        })
    }
}

impl Drop for ClientStream {
    fn drop(&mut self) {
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

async fn events(
    State(st): State<St>,
    _: Authed,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<Peer>>>,
    headers: HeaderMap,
) -> Response {
    let client = match peer {
        Some(axum::Extension(axum::extract::ConnectInfo(p))) => {
            match ClientStream::take(&st, p.addr().ip()) {
                Some(c) => Some(c),
                None => {
                    return error(
                        StatusCode::TOO_MANY_REQUESTS,
                        "busy",
                        format!(
                            "this address already has {} dashboard pages open (the most one \
                             client may hold); close one",
                            streams_per_client(st.max_streams)
                        ),
                    )
                }
            }
        }
        None => None,
    };
    let Ok(permit) = st.streams.clone().try_acquire_owned() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!(
                "{} dashboard pages are already open (the most served at once); close one",
                st.max_streams
            ),
        );
    };
    let sid = sid(&headers);
    let rx = st.events.subscribe();
    let stop = st.stop.clone();
    let stream = futures_util::stream::unfold(
        (rx, (permit, client), sid, stop, true),
        |(mut rx, permit, sid, stop, first)| async move {
            if first {
                let hello = Event::default().event("hello").data("{}");
                return Some((
                    Ok::<_, std::convert::Infallible>(hello),
                    (rx, permit, sid, stop, false),
                ));
            }
            loop {
                let next = tokio::select! {
                    _ = stop.cancelled() => return None,
                    n = rx.recv() => n,
                };
                match next {
                    Ok(ev) if ev.sid.as_deref().is_none_or(|s| s == sid) => {
                        let e = Event::default().event(ev.name).data(ev.data.as_str());
                        return Some((Ok(e), (rx, permit, sid, stop, false)));
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        let e = Event::default()
                            .event("lagged")
                            .data(json!({"skipped": n}).to_string());
                        return Some((Ok(e), (rx, permit, sid, stop, false)));
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        },
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

// ---- chat ----

#[derive(Deserialize)]
struct ChatIn {
    text: String,
}

/// Sends a turn's progress to its browser session's pages.
struct ChatEvents {
    events: Events,
    sid: String,
}

impl Observer for ChatEvents {
    fn on_text(&mut self, delta: &str) {
        emit(
            &self.events,
            "chat",
            Some(&self.sid),
            json!({"kind": "delta", "text": delta}),
        );
    }

    fn on_tool_call(&mut self, call: &ToolCall) {
        let args = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        emit(
            &self.events,
            "chat",
            Some(&self.sid),
            json!({"kind": "tool", "tool": call.name, "args": args}),
        );
    }

    fn on_tool_result(&mut self, call: &ToolCall, r: &ToolResult) {
        let v = agent::result_json(r);
        let body = if r.is_error {
            json!({"kind": "result", "tool": call.name, "ok": false, "error": v.get("error").cloned().unwrap_or(v)})
        } else {
            let mut shown = v.to_string();
            if shown.len() > SHOWN_RESULT_BYTES {
                let mut cut = SHOWN_RESULT_BYTES;
                while !shown.is_char_boundary(cut) {
                    cut -= 1;
                }
                shown.truncate(cut);
                shown.push('…');
            }
            json!({"kind": "result", "tool": call.name, "ok": true, "result": shown})
        };
        // The page reads the board back after a call of a control's tool (`actuate`'s).
        let mut body = body;
        body["changes_board"] = json!(CONTROL_TOOLS.iter().any(|t| t.name == call.name));
        emit(&self.events, "chat", Some(&self.sid), body);
    }

    fn on_note(&mut self, note: &str) {
        emit(
            &self.events,
            "chat",
            Some(&self.sid),
            json!({"kind": "note", "text": note}),
        );
    }
}

async fn chat(
    State(st): State<St>,
    _: Authed,
    headers: HeaderMap,
    b: Result<Json<ChatIn>, JsonRejection>,
) -> Response {
    let text = match body(b) {
        Ok(c) => c.text,
        Err(r) => return r.into_response(),
    };
    if text.trim().is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "the message is empty",
        );
    }
    if st.model.is_none() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "no_model", agent::NO_MODEL);
    }
    let sid = sid(&headers);
    let made = {
        let mut sessions = st.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.get_or_make(&sid, Instant::now(), || {
            Agent::new(st.rt.clone(), st.model.clone(), Session::new("", "web")).with_via(Via::Web)
        })
    };
    let Some(agent) = made else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!(
                "every dashboard chat is busy ({} at most); try again when one has answered",
                st.max_sessions
            ),
        );
    };
    let Ok(mut agent) = agent.try_lock_owned() else {
        return error(
            StatusCode::CONFLICT,
            "busy",
            "this chat is still answering; wait for its answer",
        );
    };
    let (rt, pending, events, token) = (
        st.rt.clone(),
        st.pending.clone(),
        st.events.clone(),
        st.stop.child_token(),
    );
    let sid2 = sid.clone();
    tokio::spawn(async move {
        if agent.session().id.is_empty() {
            let rt2 = rt.clone();
            let s =
                tokio::task::spawn_blocking(move || agent::new_session(&rt2, "web", "web chat"))
                    .await
                    .unwrap_or_else(|_| Session::new(format!("transient-web-{sid2}"), "web"));
            agent.reset(s.with_approver(Arc::new(WebApprover {
                pending,
                session: sid2.clone(),
            })));
        }
        let mut obs = ChatEvents {
            events: events.clone(),
            sid: sid2.clone(),
        };
        let r = agent.turn(&text, &token, &mut obs).await;
        let usage =
            json!({"input_tokens": r.usage.input_tokens, "output_tokens": r.usage.output_tokens});
        let body = match r.outcome {
            Outcome::Answer(a) => json!({"kind": "answer", "text": a, "usage": usage}),
            Outcome::StepBudget { steps } => {
                json!({"kind": "error", "text": format!("stopped after {steps} model calls (the step budget)"), "usage": usage})
            }
            Outcome::Cancelled => json!({"kind": "error", "text": "cancelled", "usage": usage}),
            Outcome::Failed(e) => json!({"kind": "error", "text": e, "usage": usage}),
        };
        emit(&events, "chat", Some(&sid2), body);
    });
    (StatusCode::ACCEPTED, Json(json!({"accepted": true}))).into_response()
}

/// Messages of a chat shown when its page is opened again.
pub const SHOWN_HISTORY: usize = 100;

/// The browser session's conversation so far (its last [`SHOWN_HISTORY`] user messages,
/// answers and tool calls), so a reloaded page shows it; `busy` while a turn runs.
async fn chat_history(State(st): State<St>, _: Authed, headers: HeaderMap) -> Response {
    let agent = {
        let sessions = st.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.get(&sid(&headers))
    };
    let Some(agent) = agent else {
        return Json(json!({"messages": [], "busy": false})).into_response();
    };
    let Ok(agent) = agent.try_lock() else {
        return Json(json!({"messages": [], "busy": true})).into_response();
    };
    let mut shown = Vec::new();
    for m in agent.history() {
        match m {
            crate::llm::Message::User(t) => shown.push(json!({"role": "user", "text": t})),
            crate::llm::Message::Assistant { text, tool_calls } => {
                for c in tool_calls {
                    shown.push(json!({"role": "tool", "tool": c.name, "args": c.arguments}));
                }
                if !text.is_empty() {
                    shown.push(json!({"role": "assistant", "text": text}));
                }
            }
            crate::llm::Message::ToolResult { .. } => {}
        }
    }
    let from = shown.len().saturating_sub(SHOWN_HISTORY);
    Json(json!({"messages": shown.split_off(from), "busy": false})).into_response()
}

async fn chat_new(State(st): State<St>, _: Authed, headers: HeaderMap) -> Response {
    let sid = sid(&headers);
    let agent = {
        let mut sessions = st.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.get_or_make(&sid, Instant::now(), || {
            Agent::new(st.rt.clone(), st.model.clone(), Session::new("", "web")).with_via(Via::Web)
        })
    };
    match agent.map(|a| a.try_lock_owned()) {
        Some(Ok(mut a)) => {
            // The next message registers a new conversation.
            a.reset(Session::new("", "web"));
            Json(json!({"ok": true})).into_response()
        }
        _ => error(
            StatusCode::CONFLICT,
            "busy",
            "this chat is still answering; wait for its answer",
        ),
    }
}

// ---- sensors ----

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| api_error(StatusCode::INTERNAL_SERVER_ERROR, "failed", e.to_string()))
}

fn store_error(e: impl std::fmt::Display) -> ApiError {
    api_error(StatusCode::INTERNAL_SERVER_ERROR, "store", e.to_string())
}

async fn sensors(State(st): State<St>, _: Authed) -> Response {
    let rt = st.rt.clone();
    let r = blocking(move || {
        let since = chrono::Utc::now().timestamp() - 24 * 3600;
        rt.store()
            .map_err(store_error)
            .and_then(|s| s.latest_readings(since).map_err(store_error))
    })
    .await;
    match r {
        Ok(Ok(rows)) => Json(json!({
            "readings": rows.iter().map(|r| json!({
                "sensor": r.sensor, "quantity": r.quantity, "value": (r.value * 100.0).round() / 100.0,
                "unit": r.unit, "at": r.at,
            })).collect::<Vec<_>>()
        }))
        .into_response(),
        Ok(Err(r)) | Err(r) => r.into_response(),
    }
}

#[derive(Deserialize)]
struct HistoryQ {
    sensor: String,
    quantity: String,
    hours: Option<i64>,
}

async fn history(
    State(st): State<St>,
    _: Authed,
    q: Result<Query<HistoryQ>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return error(StatusCode::BAD_REQUEST, "bad_request", e.body_text()),
    };
    let hours = q.hours.unwrap_or(24);
    if !(1..=MAX_HISTORY_HOURS).contains(&hours) {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("hours must be 1 to {MAX_HISTORY_HOURS}"),
        );
    }
    let rt = st.rt.clone();
    let r = blocking(move || {
        let until = chrono::Utc::now().timestamp() + 1;
        let since = until - hours * 3600;
        rt.store().map_err(store_error).and_then(|s| {
            s.reading_buckets(&q.sensor, &q.quantity, since, until)
                .map_err(store_error)
        })
    })
    .await;
    match r {
        Ok(Ok(points)) => Json(json!({
            "points": points.iter().map(|b| json!([b.at, (b.value * 100.0).round() / 100.0])).collect::<Vec<_>>()
        }))
        .into_response(),
        Ok(Err(r)) | Err(r) => r.into_response(),
    }
}

// ---- board and controls ----

fn device_json(hw: Option<&crate::hardware::Hardware>, d: &covo_board::board::DeviceDef) -> Value {
    let kind = match d.driver.kind() {
        Kind::GpioOut => "switch",
        Kind::Pwm => "pwm",
        Kind::GpioIn => "input",
        Kind::Sensor => "sensor",
        Kind::Display | Kind::Serial | Kind::Mcu => "other",
    };
    let mut v = json!({
        "name": d.name, "driver": d.driver, "kind": kind, "bus": d.bus, "address": d.address,
        "pin": d.pin, "channel": d.channel, "port": d.port, "note": d.note,
        "sample_interval_secs": d.sample_interval_secs,
    });
    // The state as read back from the board.
    if let Some(hw) = hw {
        match (d.driver.kind(), d.pin, d.channel) {
            (Kind::GpioOut, Some(pin), _) => match hw.gpio_output_level(pin) {
                Ok(on) => v["state"] = json!({"on": on}),
                Err(e) => v["state_error"] = json!(e.to_string()),
            },
            (Kind::GpioIn, Some(pin), _) => match hw.gpio_read(pin) {
                Ok(on) => v["state"] = json!({"on": on}),
                Err(e) => v["state_error"] = json!(e.to_string()),
            },
            (Kind::Pwm, _, Some(ch)) => {
                v["state"] = match hw.pwm_get(ch) {
                    Some((f, duty)) => json!({"duty": duty, "frequency_hz": f}),
                    None => json!({"duty": 0.0}),
                }
            }
            _ => {}
        }
    }
    v
}

async fn board(State(st): State<St>, _: Authed) -> Response {
    let rt = st.rt.clone();
    let r = blocking(move || {
        let def = rt.board().def();
        let hw = rt.board().hardware();
        json!({
            "board": {"name": def.board.name, "model": def.board.model},
            "opened": hw.as_ref().err(),
            "read_only": rt.config().policy.read_only,
            "devices": def.device.iter().map(|d| device_json(hw.as_deref().ok(), d)).collect::<Vec<_>>(),
        })
    })
    .await;
    match r {
        Ok(v) => Json(v).into_response(),
        Err(r) => r.into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActuateIn {
    device: String,
    on: Option<bool>,
    duty: Option<f64>,
}

async fn actuate(
    State(st): State<St>,
    _: Authed,
    headers: HeaderMap,
    b: Result<Json<ActuateIn>, JsonRejection>,
) -> Response {
    let a = match body(b) {
        Ok(a) => a,
        Err(r) => return r.into_response(),
    };
    let Some(d) = st
        .rt
        .board()
        .def()
        .device
        .iter()
        .find(|d| d.name == a.device)
        .cloned()
    else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no device '{}' on this board", a.device),
        );
    };
    let (tool, args) = match (d.driver.kind(), a.on, a.duty) {
        (Kind::GpioOut, Some(on), None) => (
            covo_core::catalog::gpio::GPIO_WRITE.name,
            json!({"pin": d.name, "level": u8::from(on)}),
        ),
        (Kind::Pwm, None, Some(duty)) => (
            covo_core::catalog::gpio::PWM_SET.name,
            json!({"channel": d.name, "duty": duty}),
        ),
        (Kind::GpioOut, ..) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!(
                    "'{}' is a switch: send {{\"device\", \"on\": true|false}}",
                    d.name
                ),
            )
        }
        (Kind::Pwm, ..) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!(
                    "'{}' is a PWM output: send {{\"device\", \"duty\": 0..1}}",
                    d.name
                ),
            )
        }
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("'{}' ({}) has no control here", d.name, d.driver),
            )
        }
    };
    let (rt, pending, sid) = (st.rt.clone(), st.pending.clone(), sid(&headers));
    let r = blocking(move || {
        let session = Session::new("dashboard", "web").with_approver(Arc::new(WebApprover {
            pending,
            session: sid,
        }));
        let r = rt.call(&session, Via::Web, tool, args);
        let hw = rt.board().hardware().ok();
        (r, device_json(hw.as_deref(), &d))
    })
    .await;
    emit(&st.events, "board", None, json!({}));
    match r {
        Ok((Ok(v), device)) => {
            Json(json!({"ok": true, "result": v, "device": device})).into_response()
        }
        Ok((Err(CallError::Respond(e)), device)) => {
            let mut j = e.to_json();
            j["device"] = device;
            (StatusCode::UNPROCESSABLE_ENTITY, Json(j)).into_response()
        }
        Ok((Err(CallError::Fatal(e)), _)) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, "fatal", e.to_string())
        }
        Err(r) => r.into_response(),
    }
}

// ---- approvals ----

async fn approvals_list(State(st): State<St>, _: Authed) -> Response {
    Json(json!({"pending": st.pending.list()})).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerIn {
    approve: bool,
}

async fn approvals_answer(
    State(st): State<St>,
    _: Authed,
    Path(id): Path<String>,
    b: Result<Json<AnswerIn>, JsonRejection>,
) -> Response {
    let a = match body(b) {
        Ok(a) => a,
        Err(r) => return r.into_response(),
    };
    match st.pending.answer(&id, a.approve) {
        Ok(()) => Json(json!({"ok": true})).into_response(),
        Err(_) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("approval {id} is not waiting (answered already, or its time ran out)"),
        ),
    }
}

// ---- the tool-call log ----

#[derive(Deserialize)]
struct AuditQ {
    before: Option<i64>,
    limit: Option<u32>,
}

/// The rule a policy refusal names in its message (`refused by policy rule 'RULE': …`).
pub fn refusal_rule(detail: &str) -> Option<&str> {
    let rest = detail.split_once("policy rule '")?.1;
    Some(&rest[..rest.find('\'')?])
}

async fn audit(
    State(st): State<St>,
    _: Authed,
    q: Result<Query<AuditQ>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return error(StatusCode::BAD_REQUEST, "bad_request", e.body_text()),
    };
    let limit = q.limit.unwrap_or(50).clamp(1, MAX_AUDIT_PAGE);
    let before = q.before.unwrap_or(i64::MAX);
    let rt = st.rt.clone();
    let r = blocking(move || -> Result<Vec<Value>, ApiError> {
        let store = rt.store().map_err(store_error)?;
        let conn = store.conn();
        let mut s = conn
            .prepare_cached(
                "SELECT id, at, session, via, tool, args, outcome, detail, micros FROM audit
                 WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(store_error)?;
        let rows = s
            .query_map(rusqlite::params![before, limit], |r| {
                let detail: Option<String> = r.get(7)?;
                let rule = detail.as_deref().and_then(refusal_rule).map(str::to_string);
                Ok(json!({
                    "id": r.get::<_, i64>(0)?, "at": r.get::<_, String>(1)?,
                    "session": r.get::<_, String>(2)?, "via": r.get::<_, String>(3)?,
                    "tool": r.get::<_, String>(4)?, "args": r.get::<_, String>(5)?,
                    "outcome": r.get::<_, String>(6)?, "detail": detail, "rule": rule,
                    "micros": r.get::<_, i64>(8)?,
                }))
            })
            .map_err(store_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(store_error)
    })
    .await;
    match r {
        Ok(Ok(rows)) => {
            let next = (rows.len() as u32 == limit)
                .then(|| rows.last().and_then(|r| r["id"].as_i64()))
                .flatten();
            Json(json!({"entries": rows, "next_before": next})).into_response()
        }
        Ok(Err(r)) | Err(r) => r.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_dashboards_own_page_may_change_something() {
        let h = |pairs: &[(&'static str, &str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.insert(*k, HeaderValue::from_str(v).unwrap());
            }
            m
        };
        let host = ("host", "127.0.0.1:8080");
        // Reads are never refused here; scripts without Origin pass.
        assert!(cross_site(&Method::GET, &h(&[host, ("origin", "http://evil.example")])).is_none());
        assert!(cross_site(&Method::POST, &h(&[host])).is_none());
        assert!(cross_site(
            &Method::POST,
            &h(&[host, ("sec-fetch-site", "same-origin")])
        )
        .is_none());
        assert!(cross_site(&Method::POST, &h(&[host, ("sec-fetch-site", "none")])).is_none());
        // The page itself, over http or https, any case.
        for o in ["http://127.0.0.1:8080", "HTTPS://127.0.0.1:8080"] {
            assert!(
                cross_site(&Method::POST, &h(&[host, ("origin", o)])).is_none(),
                "{o}"
            );
        }
        // Anything else that changes something.
        for o in [
            "http://evil.example",
            "null",
            "http://127.0.0.1:8081",
            "http://127.0.0.1",
            "http://127.0.0.1:8080.evil.example",
            "http://localhost:8080",
        ] {
            for m in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
                assert!(
                    cross_site(&m, &h(&[host, ("origin", o)])).is_some(),
                    "{m} {o}"
                );
            }
        }
        assert!(cross_site(&Method::POST, &h(&[("origin", "http://127.0.0.1:8080")])).is_some());
        for site in ["cross-site", "same-site"] {
            assert!(cross_site(&Method::POST, &h(&[host, ("sec-fetch-site", site)])).is_some());
        }
    }

    #[test]
    fn the_assets_fit_the_budget() {
        let total: usize = ASSETS.iter().map(|(_, _, b)| b.len()).sum();
        assert!(
            total <= 150 * 1024,
            "assets are {total} bytes (at most 150 KB)"
        );
        assert!(ASSETS.iter().all(|(_, _, b)| !b.is_empty()));
    }

    #[test]
    fn a_token_is_required_off_loopback() {
        let idle = Duration::from_secs(60);
        let cfg = |bind: &str, token: Option<&str>| WebConfig {
            bind: Some(bind.into()),
            token: token.map(Into::into),
            ..Default::default()
        };
        assert!(Settings::from_config(&WebConfig::default(), None, idle)
            .unwrap()
            .is_none());
        assert!(Settings::from_config(&cfg("127.0.0.1:8080", None), None, idle).is_ok());
        assert!(Settings::from_config(&cfg("[::1]:8080", None), None, idle).is_ok());
        let e = Settings::from_config(&cfg("0.0.0.0:8080", None), None, idle).unwrap_err();
        assert!(matches!(e, WebError::TokenRequired(_)), "{e}");
        assert!(e.to_string().contains("COVO_WEB_TOKEN"));
        let long = "t0k-0123456789abcdef";
        let s = Settings::from_config(&cfg("0.0.0.0:8080", None), Some(long.into()), idle)
            .unwrap()
            .unwrap();
        assert_eq!(s.token.as_deref(), Some(long));
        assert!(Settings::from_config(&cfg("0.0.0.0:8080", Some(long)), None, idle).is_ok());
        for short in ["a", "t0k", "0123456789abcde"] {
            for (bind, env) in [("0.0.0.0:8080", None), ("127.0.0.1:8080", Some(short))] {
                let file = if env.is_some() { None } else { Some(short) };
                let e =
                    Settings::from_config(&cfg(bind, file), env.map(Into::into), idle).unwrap_err();
                assert!(
                    matches!(e, WebError::ShortToken(n) if n == short.len()),
                    "{e}"
                );
                assert!(e.to_string().contains("at least 16"), "{e}");
            }
        }
        assert!(matches!(
            Settings::from_config(&cfg("0.0.0.0:8080", Some(" ")), None, idle),
            Err(WebError::EmptyToken)
        ));
        assert!(matches!(
            Settings::from_config(&cfg("localhost", None), None, idle),
            Err(WebError::BadBind(_))
        ));
    }

    #[test]
    fn cookies_tokens_and_rules() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; covo_sid=abc123; covo_token=7430"),
        );
        assert_eq!(cookie(&h, "covo_sid"), Some("abc123"));
        assert_eq!(sid(&h), "abc123");
        assert_eq!(
            unhex(cookie(&h, "covo_token").unwrap()),
            Some(b"t0".to_vec())
        );
        assert_eq!(unhex(&hex(b"s3cret")), Some(b"s3cret".to_vec()));
        assert_eq!(unhex("zz"), None);
        assert_eq!(
            refusal_rule("refused by policy rule 'read_only': the gateway is in read-only mode"),
            Some("read_only")
        );
        assert_eq!(refusal_rule("fine"), None);
        let host = |h: &'static str| {
            let mut m = HeaderMap::new();
            m.insert(header::HOST, HeaderValue::from_static(h));
            loopback_host(&m)
        };
        assert!(host("127.0.0.1:8080") && host("localhost:8080") && host("[::1]:8080"));
        assert!(host("127.0.0.1") && host("LOCALHOST"));
        assert!(!host("evil.example:8080") && !host("192.168.1.10:8080") && !host("[fe80::1]:80"));
        assert!(!loopback_host(&HeaderMap::new()));
    }
}
