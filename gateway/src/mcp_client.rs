//! External MCP servers as covo tools (`[mcp.servers.NAME]`, issue 16's client half).
//!
//! Each configured server's tools become owned tools named `NAME__tool` in the basic toolset
//! `mcp_NAME`, with `Exec::Mcp`: the runtime calls them here after its whole pipeline
//! (validation against the server's `inputSchema`, policy, approval, audit).
//!
//! - **Specs.** A `ToolSpec` is `&'static`; a server's tools are turned into specs once per
//!   distinct content and leaked, through a process-wide intern table capped at
//!   [`MAX_LEAKED_TOOLS`], so rebuilding runtimes never leaks twice. Per server at most
//!   [`MAX_TOOLS_PER_SERVER`] tools, descriptions cut to [`MAX_DESCRIPTION_BYTES`], schemas over
//!   [`MAX_SCHEMA_BYTES`] refused. Effect from the annotations: `readOnlyHint` → read,
//!   `destructiveHint` → destructive (approval), neither → write.
//! - **Cache.** Each server's last accepted `tools/list` is kept in
//!   `$COVO_HOME/mcp/NAME.json` with a hash of its command or URL, so building a runtime does not
//!   start servers; only a server without a (matching) cache is started then, to list its tools.
//! - **Lifecycle.** A server starts on its first call (or for that first listing). A server that
//!   exits is down: its tools are unavailable with the reason, and the next call after an
//!   exponential backoff (1 s doubling to 60 s) starts it again. Each call has the server's
//!   deadline and output cap. `notifications/tools/list_changed` relists the tools and rewrites
//!   the cache (a runtime owns the tools it was built with; a tool the server dropped becomes
//!   unavailable at once, a new one appears in the next runtime). A stdio server runs in its
//!   own process group, killed when the clients are dropped (when covo exits).
//! - All I/O runs on one current-thread tokio runtime on its own thread; callers (blocking
//!   threads of the pipeline) wait on a channel with a deadline, never inside an async context.

use crate::config::McpServerConfig;
use crate::error::{CallError, ToolError};
use crate::spec::{Availability, Effect, Profiles, Runs, ToolDef, ToolSpec};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The most tools one server contributes; the rest are dropped with a warning.
pub const MAX_TOOLS_PER_SERVER: usize = 128;
/// The longest tool description kept, in bytes (cut at a character boundary).
pub const MAX_DESCRIPTION_BYTES: usize = 2048;
/// The largest input schema accepted, in bytes of JSON; a tool with a larger one is dropped.
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// The most distinct MCP tool specs one process ever leaks.
pub const MAX_LEAKED_TOOLS: usize = 2048;
/// The largest cache file read back.
pub const MAX_CACHE_BYTES: u64 = 4 * 1024 * 1024;
/// The first restart delay after a failure; it doubles per consecutive failure.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest restart delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// The least time a server is given to start and list its tools (a first `npx` may download).
pub const STARTUP_MIN: Duration = Duration::from_secs(30);

/// How long a server may take to start: its call deadline, and at least [`STARTUP_MIN`].
fn startup(cfg: &McpServerConfig) -> Duration {
    cfg.timeout().max(STARTUP_MIN)
}

/// The most stderr kept from a server for error messages, in bytes.
const STDERR_TAIL: usize = 512;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The external MCP servers of one runtime.
pub struct McpClients {
    servers: Vec<Arc<Server>>,
    /// Spec name → (server index, the server's own tool name).
    routes: HashMap<&'static str, (usize, String)>,
    defs: Vec<&'static ToolDef>,
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Server {
    name: String,
    cfg: McpServerConfig,
    cache: PathBuf,
    fingerprint: String,
    /// Serializes starts, so one call starts the server and the others wait for it.
    starting: Mutex<()>,
    state: Mutex<State>,
    /// The tool names of the latest `tools/list` (updated by `list_changed`).
    live: Arc<Mutex<Option<Vec<String>>>>,
    /// The last lines the server wrote to stderr.
    stderr: Arc<Mutex<String>>,
    /// The tools of the last listing at start-up.
    listed: Mutex<Vec<Tool>>,
}

#[derive(Default)]
struct State {
    conn: Option<Conn>,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
}

struct Conn {
    service: RunningService<RoleClient, Handler>,
    /// The process group of a stdio server (its leader's pid).
    pgid: Option<u32>,
}

impl Conn {
    /// Whether the session has ended (the server exited, or its transport closed).
    fn closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }
}

/// What covo answers a server with; it listens for `tools/list_changed`.
#[derive(Clone)]
struct Handler {
    server: String,
    cache: PathBuf,
    fingerprint: String,
    live: Arc<Mutex<Option<Vec<String>>>>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        match list_tools(&context.peer).await {
            Ok(tools) => {
                let accepted = accept(&self.server, tools);
                *lock(&self.live) = Some(accepted.iter().map(|t| t.name.to_string()).collect());
                write_cache(&self.cache, &self.fingerprint, &accepted);
                tracing::info!(server = %self.server, tools = accepted.len(), "MCP tool list changed");
            }
            Err(e) => tracing::warn!(server = %self.server, error = %e, "MCP relisting failed"),
        }
    }
}

impl McpClients {
    /// The clients of these servers: tools from each server's cache, or, without one, from
    /// the server itself, started now (bounded by its deadline). A server that cannot be
    /// listed contributes no tools (warned), and its toolset stays empty.
    pub fn new(servers: &BTreeMap<String, McpServerConfig>, home: &Path) -> Option<McpClients> {
        if servers.is_empty() {
            return None;
        }
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                tracing::warn!(error = %e, "MCP clients not started");
                return None;
            }
        };
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("covo-mcp".into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = stopped.await;
                });
            })
            .ok()?;
        let mut clients = McpClients {
            servers: Vec::new(),
            routes: HashMap::new(),
            defs: Vec::new(),
            handle,
            stop: Some(stop),
            thread: Some(thread),
        };
        for (name, cfg) in servers {
            clients.servers.push(Arc::new(Server {
                name: name.clone(),
                cfg: cfg.clone(),
                cache: home.join("mcp").join(format!("{name}.json")),
                fingerprint: fingerprint(cfg),
                starting: Mutex::new(()),
                state: Mutex::new(State::default()),
                live: Arc::new(Mutex::new(None)),
                stderr: Arc::new(Mutex::new(String::new())),
                listed: Mutex::new(Vec::new()),
            }));
        }
        // Servers without a cached list are started to list their tools, all at once, so a
        // slow or broken one costs its own start-up deadline once, not once per server.
        let lists: Vec<Vec<Tool>> = std::thread::scope(|scope| {
            let jobs: Vec<_> = clients
                .servers
                .iter()
                .map(|server| {
                    let clients = &clients;
                    scope.spawn(move || {
                        if let Some(tools) = read_cache(&server.cache, &server.fingerprint) {
                            return tools;
                        }
                        let deadline = Instant::now() + startup(&server.cfg);
                        match clients.ensure(server, deadline) {
                            Ok(_) => lock(&server.listed).clone(),
                            Err(e) => {
                                tracing::warn!(server = %server.name, error = %e, "MCP server not listed: it has no tools until it is");
                                Vec::new()
                            }
                        }
                    })
                })
                .collect();
            jobs.into_iter()
                .map(|j| j.join().unwrap_or_default())
                .collect()
        });
        for (index, tools) in lists.into_iter().enumerate() {
            let name = clients.servers[index].name.clone();
            for tool in tools {
                if let Some(def) = intern(&name, &tool) {
                    clients
                        .routes
                        .insert(def.spec.name, (index, tool.name.to_string()));
                    clients.defs.push(def);
                }
            }
        }
        Some(clients)
    }

    /// The tool definitions of every server, to add to the runtime's catalog.
    pub fn defs(&self) -> &[&'static ToolDef] {
        &self.defs
    }

    /// The process id of a running stdio server (diagnostics and tests).
    pub fn server_pid(&self, server: &str) -> Option<u32> {
        let s = self.servers.iter().find(|s| s.name == server)?;
        let st = lock(&s.state);
        st.conn
            .as_ref()
            .filter(|c| !c.closed())
            .and_then(|c| c.pgid)
    }

    fn route(&self, spec: &ToolSpec) -> Option<(&Arc<Server>, &str)> {
        let (i, tool) = self.routes.get(spec.name)?;
        Some((&self.servers[*i], tool.as_str()))
    }

    /// Whether an MCP tool can be called now (never starts a server).
    pub fn availability(&self, spec: &ToolSpec) -> Availability {
        let Some((server, tool)) = self.route(spec) else {
            return Availability::no("not a tool of a configured MCP server");
        };
        let mut st = lock(&server.state);
        server.note_exit(&mut st);
        if let Some(at) = st.retry_at.filter(|at| *at > Instant::now()) {
            return Availability::no(format!(
                "MCP server '{}' is down ({}); next start in {} s",
                server.name,
                st.last_error.as_deref().unwrap_or("failed"),
                at.saturating_duration_since(Instant::now()).as_secs() + 1
            ));
        }
        drop(st);
        if let Some(live) = lock(&server.live).as_ref() {
            if !live.iter().any(|t| t == tool) {
                return Availability::no(format!(
                    "MCP server '{}' no longer offers '{tool}'",
                    server.name
                ));
            }
        }
        Availability::yes()
    }

    /// Calls an MCP tool with validated arguments: starts its server if needed, waits at most
    /// the server's deadline, caps the output.
    pub fn call(&self, spec: &ToolSpec, args: Value) -> Result<Value, CallError> {
        let Some((server, tool)) = self.route(spec) else {
            return Err(ToolError::Unavailable {
                tool: spec.name.into(),
                reason: "not a tool of a configured MCP server".into(),
            }
            .into());
        };
        let timeout = server.cfg.timeout();
        let peer = self
            .ensure(server, Instant::now() + startup(&server.cfg))
            .map_err(|reason| ToolError::Unavailable {
                tool: spec.name.into(),
                reason,
            })?;
        if let Some(live) = lock(&server.live).as_ref() {
            if !live.iter().any(|t| t == tool) {
                return Err(ToolError::Unavailable {
                    tool: spec.name.into(),
                    reason: format!("MCP server '{}' no longer offers '{tool}'", server.name),
                }
                .into());
            }
        }
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        // The call's own deadline, from when the server is ready.
        let left = timeout;
        let answer = self.run(
            async move { tokio::time::timeout(left, peer.call_tool(params)).await },
            left + Duration::from_millis(500),
        );
        let timed_out = || ToolError::Timeout {
            tool: spec.name.into(),
            message: format!(
                "MCP server '{}' did not answer within {} s",
                server.name,
                timeout.as_secs()
            ),
            hint: Some(format!(
                "raise [mcp.servers.{}] timeout_secs if the tool is slow",
                server.name
            )),
        };
        match answer {
            None | Some(Err(_)) => Err(timed_out().into()),
            Some(Ok(Err(e))) => {
                let mut st = lock(&server.state);
                server.note_exit(&mut st);
                if st.conn.is_none() {
                    let reason = format!(
                        "MCP server '{}' exited during the call ({}); it restarts on a later call",
                        server.name,
                        st.last_error.as_deref().unwrap_or("closed")
                    );
                    return Err(ToolError::Unavailable {
                        tool: spec.name.into(),
                        reason,
                    }
                    .into());
                }
                Err(ToolError::failed(spec.name, format!("MCP error: {e}")).into())
            }
            Some(Ok(Ok(result))) => {
                lock(&server.state).failures = 0;
                output(spec.name, result, server.cfg.max_output_bytes())
            }
        }
    }

    /// Runs `fut` on the clients' thread and waits at most `wait` for it.
    fn run<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
        wait: Duration,
    ) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv_timeout(wait).ok()
    }

    /// A live connection to `server`, started now if it has none and its backoff allows.
    fn ensure(
        &self,
        server: &Arc<Server>,
        deadline: Instant,
    ) -> Result<rmcp::Peer<RoleClient>, String> {
        let _one = lock(&server.starting);
        {
            let mut st = lock(&server.state);
            server.note_exit(&mut st);
            if let Some(conn) = &st.conn {
                return Ok(conn.service.peer().clone());
            }
            if let Some(at) = st.retry_at.filter(|at| *at > Instant::now()) {
                return Err(format!(
                    "MCP server '{}' is down ({}); next start in {} s",
                    server.name,
                    st.last_error.as_deref().unwrap_or("failed"),
                    at.saturating_duration_since(Instant::now()).as_secs() + 1
                ));
            }
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let s = server.clone();
        let started = self
            .run(
                async move { tokio::time::timeout(wait, s.connect()).await },
                wait + Duration::from_millis(500),
            )
            .and_then(Result::ok)
            .unwrap_or_else(|| {
                Err(format!(
                    "did not start within {} s",
                    startup(&server.cfg).as_secs()
                ))
            });
        let mut st = lock(&server.state);
        match started {
            Ok(conn) => {
                let peer = conn.service.peer().clone();
                st.conn = Some(conn);
                st.retry_at = None;
                Ok(peer)
            }
            Err(e) => {
                let e = server.with_stderr(e);
                server.fail(&mut st, e.clone());
                Err(format!("MCP server '{}' did not start: {e}", server.name))
            }
        }
    }
}

impl Server {
    /// Starts the server, initializes the session and lists its tools (cached).
    async fn connect(self: Arc<Self>) -> Result<Conn, String> {
        let handler = Handler {
            server: self.name.clone(),
            cache: self.cache.clone(),
            fingerprint: self.fingerprint.clone(),
            live: self.live.clone(),
        };
        let (service, pgid) = if let Some(command) = &self.cfg.command {
            use rmcp::transport::TokioChildProcess;
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&self.cfg.args).envs(&self.cfg.env);
            if let Some(dir) = &self.cfg.cwd {
                cmd.current_dir(dir);
            }
            let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
            wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
            let (transport, stderr) = TokioChildProcess::builder(wrap)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run '{command}': {e}"))?;
            let pgid = transport.id();
            lock(&self.stderr).clear();
            if let Some(stderr) = stderr {
                tokio::spawn(keep_stderr(self.name.clone(), stderr, self.stderr.clone()));
            }
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| format!("initialization failed: {e}"))?;
            (service, pgid)
        } else if let Some(url) = &self.cfg.url {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            use rmcp::transport::StreamableHttpClientTransport;
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
            for (k, v) in &self.cfg.headers {
                let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|e| format!("header '{k}': {e}"))?;
                let value = reqwest::header::HeaderValue::from_str(v)
                    .map_err(|e| format!("header '{k}': {e}"))?;
                config.custom_headers.insert(name, value);
            }
            // reqwest is built without a default crypto provider: the tree's rustls on ring.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let transport = StreamableHttpClientTransport::from_config(config);
            let service = handler.serve(transport).await.map_err(|e| {
                crate::secrets::redact_urls_in(&format!("initialization failed: {e}"))
            })?;
            (service, None)
        } else {
            return Err("neither `command` nor `url` is set".into());
        };
        let tools = list_tools(service.peer())
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let accepted = accept(&self.name, tools);
        *lock(&self.live) = Some(accepted.iter().map(|t| t.name.to_string()).collect());
        write_cache(&self.cache, &self.fingerprint, &accepted);
        tracing::info!(server = %self.name, tools = accepted.len(), "MCP server started");
        *lock(&self.listed) = accepted;
        Ok(Conn { service, pgid })
    }

    /// A connection whose server has gone becomes a failure with a backoff.
    fn note_exit(&self, st: &mut State) {
        if st.conn.as_ref().is_some_and(Conn::closed) {
            if let Some(conn) = st.conn.take() {
                kill(conn.pgid);
            }
            let e = self.with_stderr("exited".to_string());
            tracing::warn!(server = %self.name, error = %e, "MCP server exited");
            self.fail(st, e);
        }
    }

    fn fail(&self, st: &mut State, error: String) {
        st.failures = st.failures.saturating_add(1);
        st.retry_at = Some(Instant::now() + backoff(st.failures));
        st.last_error = Some(error);
    }

    fn with_stderr(&self, e: String) -> String {
        let tail = lock(&self.stderr);
        let tail = tail.trim();
        if tail.is_empty() {
            e
        } else {
            format!("{e}; stderr: {tail}")
        }
    }
}

/// The most `tools/list` pages read from one server.
pub const MAX_LIST_PAGES: usize = 16;

/// A server's tools, page by page, reading at most [`MAX_LIST_PAGES`] pages and stopping once
/// there are more than [`accept`] could take (rmcp's own `list_all_tools` follows cursors
/// without end).
async fn list_tools(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<Tool>, rmcp::ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let page = peer
            .list_tools(Some(
                rmcp::model::PaginatedRequestParams::default().with_cursor(cursor),
            ))
            .await?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() > 2 * MAX_TOOLS_PER_SERVER {
            break;
        }
    }
    Ok(tools)
}

/// The wait before the next start after `failures` consecutive failures (at least 1).
fn backoff(failures: u32) -> Duration {
    BACKOFF_FIRST
        .saturating_mul(1u32 << failures.saturating_sub(1).min(6))
        .min(BACKOFF_MAX)
}

/// Forwards a server's stderr to the log and keeps its last bytes for error messages.
async fn keep_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<String>>,
) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = line.chars().take(STDERR_TAIL).collect();
        tracing::debug!(server = %server, "{line}");
        let mut t = lock(&tail);
        t.push_str(&line);
        t.push('\n');
        if t.len() > STDERR_TAIL {
            let mut cut = t.len() - STDERR_TAIL;
            while !t.is_char_boundary(cut) {
                cut += 1;
            }
            t.replace_range(..cut, "");
        }
    }
}

fn kill(pgid: Option<u32>) {
    let Some(pid) = pgid.and_then(|p| rustix::process::Pid::from_raw(p as i32)) else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

impl Drop for McpClients {
    fn drop(&mut self) {
        for s in &self.servers {
            if let Some(conn) = lock(&s.state).conn.take() {
                kill(conn.pgid);
                drop(conn);
            }
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A hash of what identifies a server's tool list (its command line or URL), so a cache
/// written for another configuration is not used. No secret is stored in clear.
fn fingerprint(cfg: &McpServerConfig) -> String {
    let text = json!([cfg.command, cfg.args, cfg.url]).to_string();
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn read_cache(path: &Path, fingerprint: &str) -> Option<Vec<Tool>> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > MAX_CACHE_BYTES {
        tracing::warn!(path = %path.display(), "MCP tool cache too large; ignored");
        return None;
    }
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    if v.get("fingerprint")?.as_str()? != fingerprint {
        return None;
    }
    let tools: Vec<Tool> = serde_json::from_value(v.get("tools")?.clone()).ok()?;
    Some(tools.into_iter().take(MAX_TOOLS_PER_SERVER).collect())
}

fn write_cache(path: &Path, fingerprint: &str, tools: &[Tool]) {
    let body = json!({ "fingerprint": fingerprint, "tools": tools }).to_string();
    let write = || -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::fs::write(tmp.path(), body.as_bytes())?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    if let Err(e) = write() {
        tracing::warn!(path = %path.display(), error = %e, "MCP tool cache not written");
    }
}

/// The tools covo takes from a list: valid names, bounded schemas, at most
/// [`MAX_TOOLS_PER_SERVER`], descriptions cut to [`MAX_DESCRIPTION_BYTES`].
fn accept(server: &str, tools: Vec<Tool>) -> Vec<Tool> {
    let total = tools.len();
    let mut out = Vec::new();
    for mut t in tools {
        if out.len() == MAX_TOOLS_PER_SERVER {
            tracing::warn!(
                server,
                total,
                "MCP server offers more than {MAX_TOOLS_PER_SERVER} tools; the rest are left out"
            );
            break;
        }
        let full = format!("{server}__{}", t.name);
        let name_ok = !t.name.is_empty()
            && full.len() <= 64
            && t.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            tracing::warn!(server, tool = %t.name, "MCP tool name unusable as a model tool name; left out");
            continue;
        }
        let schema_len = serde_json::to_string(&*t.input_schema).map_or(usize::MAX, |s| s.len());
        if schema_len > MAX_SCHEMA_BYTES {
            tracing::warn!(server, tool = %t.name, bytes = schema_len, "MCP tool schema too large; left out");
            continue;
        }
        // covo validates every call against it: a schema that does not compile is no tool.
        if let Err(e) = jsonschema::validator_for(&Value::Object((*t.input_schema).clone())) {
            tracing::warn!(server, tool = %t.name, error = %e, "MCP tool schema does not compile; left out");
            continue;
        }
        if let Some(d) = &t.description {
            if d.len() > MAX_DESCRIPTION_BYTES {
                t.description = Some(cut(d, MAX_DESCRIPTION_BYTES).to_string().into());
            }
        }
        out.push(t);
    }
    out
}

fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The effect covo gives a tool from its annotations.
fn effect(t: &Tool) -> Effect {
    match &t.annotations {
        Some(a) if a.read_only_hint == Some(true) => Effect::Read,
        Some(a) if a.destructive_hint == Some(true) => Effect::Destructive,
        _ => Effect::Write,
    }
}

/// The process-wide table of leaked MCP tool definitions, by content.
fn intern(server: &str, t: &Tool) -> Option<&'static ToolDef> {
    static TABLE: std::sync::OnceLock<Mutex<HashMap<String, &'static ToolDef>>> =
        std::sync::OnceLock::new();
    let mut schema = Value::Object((*t.input_schema).clone());
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    let params = schema.to_string();
    let description = t
        .description
        .as_deref()
        .or(t.title.as_deref())
        .unwrap_or("")
        .trim()
        .to_string();
    let description = if description.is_empty() {
        format!("Tool '{}' of the MCP server '{server}'.", t.name)
    } else {
        cut(&description, MAX_DESCRIPTION_BYTES).to_string()
    };
    let effect = effect(t);
    let keywords = format!(
        "mcp {server} {}",
        t.title
            .as_deref()
            .or(t.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or("")
    );
    let name = format!("{server}__{}", t.name);
    let key = json!([name, description, params, effect.as_str(), keywords]).to_string();
    let mut table = lock(TABLE.get_or_init(Default::default));
    if let Some(def) = table.get(&key) {
        return Some(def);
    }
    if table.len() >= MAX_LEAKED_TOOLS {
        tracing::warn!(tool = %name, "more than {MAX_LEAKED_TOOLS} distinct MCP tools in this process; left out");
        return None;
    }
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let spec: &'static ToolSpec = Box::leak(Box::new(ToolSpec {
        name: leak(name),
        toolset: leak(format!(
            "{}{server}",
            covo_core::toolset::MCP_TOOLSET_PREFIX
        )),
        // Owned under every built-in profile but `minimal` (configuring the server is the
        // opt-in); a user profile denies them by pattern (`SERVER__*`).
        profiles: Profiles::CODING.or(Profiles::MESSAGING).or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect,
        description: leak(description),
        params: leak(params),
        keywords: leak(keywords),
    }));
    let def: &'static ToolDef = Box::leak(Box::new(ToolDef::mcp(spec)));
    table.insert(key, def);
    Some(def)
}

/// A call's result as the model sees it: the text, capped at `cap` bytes (then `truncated`),
/// structured content when it fits, and non-text content described (never as base64).
fn output(tool: &str, result: CallToolResult, cap: usize) -> Result<Value, CallError> {
    let mut text = String::new();
    let mut other = Vec::new();
    for block in &result.content {
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        match v.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(v.get("text").and_then(Value::as_str).unwrap_or(""));
            }
            Some(kind @ ("image" | "audio")) => other.push(json!({
                "type": kind,
                "mime_type": v.get("mimeType"),
                "bytes": v.get("data").and_then(Value::as_str).map_or(0, |d| d.len() / 4 * 3),
            })),
            Some("resource") => {
                let r = v.get("resource").cloned().unwrap_or(Value::Null);
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t);
                    }
                    None => other.push(json!({"type": "resource", "uri": r.get("uri")})),
                }
            }
            Some(kind) => other.push(json!({
                "type": kind,
                "uri": v.get("uri"),
                "name": v.get("name"),
            })),
            None => {}
        }
    }
    let total = text.len();
    let truncated = total > cap;
    let shown = cut(&text, cap).to_string();
    if result.is_error == Some(true) {
        return Err(ToolError::failed(tool, cut(&shown, 4096).to_string()).into());
    }
    let mut out = json!({ "text": shown });
    if truncated {
        out["truncated"] = json!(true);
        out["total_bytes"] = json!(total);
    }
    if let Some(s) = result.structured_content {
        let len = s.to_string().len();
        if len <= cap.saturating_sub(total.min(cap)) {
            out["structured"] = s;
        } else {
            out["structured_omitted_bytes"] = json!(len);
        }
    }
    if !other.is_empty() {
        out["other_content"] = Value::Array(other);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(v: Value) -> Tool {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn annotations_give_the_effect() {
        let t = |a: Value| {
            effect(&tool(
                json!({"name": "x", "inputSchema": {"type": "object"}, "annotations": a}),
            ))
        };
        assert_eq!(t(json!({"readOnlyHint": true})), Effect::Read);
        assert_eq!(t(json!({"destructiveHint": true})), Effect::Destructive);
        assert_eq!(t(json!({})), Effect::Write);
        assert_eq!(
            effect(&tool(json!({"name": "x", "inputSchema": {}}))),
            Effect::Write
        );
    }

    #[test]
    fn lists_are_bounded_and_bad_names_and_huge_schemas_left_out() {
        let many: Vec<Tool> = (0..MAX_TOOLS_PER_SERVER + 10)
            .map(|i| tool(json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}})))
            .collect();
        assert_eq!(accept("s", many).len(), MAX_TOOLS_PER_SERVER);
        let big = "x".repeat(MAX_SCHEMA_BYTES);
        let long = "é".repeat(MAX_DESCRIPTION_BYTES);
        let got = accept(
            "s",
            vec![
                tool(json!({"name": "a.b", "inputSchema": {}})),
                tool(json!({"name": "big", "inputSchema": {"description": big}})),
                tool(json!({"name": "ok", "description": long, "inputSchema": {}})),
                tool(json!({"name": "bad", "inputSchema": {"type": 5}})),
            ],
        );
        assert_eq!(got.len(), 1);
        assert!(got[0].description.as_ref().unwrap().len() <= MAX_DESCRIPTION_BYTES);
    }

    #[test]
    fn the_cache_is_read_only_for_its_configuration_and_within_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp/s.json");
        let tools = vec![tool(json!({"name": "a", "inputSchema": {}}))];
        write_cache(&path, "fp", &tools);
        assert_eq!(read_cache(&path, "fp").unwrap().len(), 1);
        assert!(read_cache(&path, "other").is_none());
        std::fs::write(&path, vec![b' '; MAX_CACHE_BYTES as usize + 1]).unwrap();
        assert!(read_cache(&path, "fp").is_none());
    }

    #[test]
    fn the_restart_backoff_doubles_up_to_a_minute() {
        let secs: Vec<u64> = (1..=9).map(|f| backoff(f).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }

    #[test]
    fn interning_leaks_once_per_content() {
        let t = tool(json!({"name": "same", "description": "d", "inputSchema": {}}));
        let a = intern("srv", &t).unwrap();
        let b = intern("srv", &t).unwrap();
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.spec.name, "srv__same");
        assert_eq!(a.spec.toolset, "mcp_srv");
        assert_eq!(a.spec.params_json()["type"], "object");
    }

    #[test]
    fn output_is_capped_and_errors_are_tool_errors() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "abcdefgh"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]
        }))
        .unwrap();
        let v = output("t", r, 4).unwrap();
        assert_eq!(v["text"], "abcd");
        assert_eq!(v["truncated"], true);
        assert_eq!(v["total_bytes"], 8);
        assert_eq!(v["other_content"][0]["bytes"], 3);
        let e: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "boom"}], "isError": true
        }))
        .unwrap();
        let err = output("t", e, 100).unwrap_err();
        assert!(err.to_string().contains("boom"), "{err}");
    }
}
