//! The MCP `ServerHandler`: tools (the plan's visible tools plus discovery), tool calls through
//! the pipeline as `Via::Mcp`, resources (the board definition, each declared sensor's latest
//! reading and its history as CSV) with subscriptions, and the MCP client's user as the
//! approver of destructive calls.

use super::{
    ELICIT_WAIT, INLINE_BELOW, MAX_CALLS, MAX_SUBSCRIPTIONS, MAX_WAITING, POLL, WAITING_PER_SESSION,
};
use crate::error::CallError;
use crate::exec::{Session, UserIo};
use crate::policy::{is, Approver, Via};
use crate::runtime::Runtime;
use base64::Engine as _;
use covo_core::catalog;
use covo_core::plan::Selection;
use covo_core::spec::{Effect, Runs, ToolSpec};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, InitializeResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ResourceUpdatedNotificationParam, ServerCapabilities, SubscribeRequestParams, Tool,
    ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Tools whose repeated call with the same arguments leaves the world as one call did
/// (`idempotentHint`); read tools are idempotent anyway and say `readOnlyHint`.
const IDEMPOTENT: &[&ToolSpec] = &[
    &catalog::gpio::PWM_SET,
    &catalog::mcu::MCU_PWM_SET,
    &catalog::display::DISPLAY_TEXT,
    &catalog::display::DISPLAY_CLEAR,
    &catalog::core::TODO_WRITE,
];

/// Tools of covo's own agent loop, never listed to MCP clients: they steer a turn of covo's
/// model (its plan, its to-dos, its final answer, its questions and messages to the user on
/// covo's channels), and an MCP client runs its own loop. They stay findable and callable
/// through the discovery tools like any owned tool.
const AGENT_LOOP: &[&ToolSpec] = &[
    &catalog::core::SEND_MESSAGE,
    &catalog::core::TODO_WRITE,
    &catalog::core::PLAN_UPDATE,
    &catalog::core::EXIT_PLAN_MODE,
    &catalog::core::ASK_CLARIFICATION,
    &catalog::core::STRUCTURED_OUTPUT,
];

/// At most this many images go out with one tool result.
const MAX_IMAGES: usize = 4;
/// Rows of a sensor's history CSV resource (the newest are kept).
const MAX_CSV_ROWS: usize = 10_000;

/// What every MCP session of one server shares: the runtime, what is listed, who may run
/// destructively without asking, and the bound on running calls.
pub struct Shared {
    rt: Arc<Runtime>,
    selection: Selection,
    approve: Vec<String>,
    calls: Arc<Semaphore>,
    /// Calls waiting for confirmation, over all sessions ([`MAX_WAITING`]).
    waiting: Arc<Semaphore>,
    pace: Pace,
}

/// How long each tool's calls took lately, for `covo mcp`'s choice between running a call on
/// its own thread and handing it to the blocking pool ([`CovoMcp::runs_inline`]): a decaying
/// maximum in microseconds, the call's own time or 7/8 of the figure before when that is more.
/// One slow call keeps its tool on the pool for a while: a 5 s serial timeout for 64 calls, a
/// 2 ms read for 6. One entry per owned tool called, so it holds at most the profile's tools
/// (a list: a few dozen, searched in the time a hash would take).
#[derive(Default)]
struct Pace(Mutex<Vec<(&'static str, u64)>>);

impl Pace {
    fn record(&self, tool: &'static str, took: std::time::Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let mut recent = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match recent.iter_mut().find(|(t, _)| *t == tool) {
            Some((_, slowest)) => *slowest = us.max(*slowest - *slowest / 8),
            None => recent.push((tool, us)),
        }
    }

    /// Whether the tool's recent calls all took less than [`INLINE_BELOW`] (never called: no).
    fn quick(&self, tool: &str) -> bool {
        let recent = self.0.lock().unwrap_or_else(|p| p.into_inner());
        recent
            .iter()
            .find(|(t, _)| *t == tool)
            .is_some_and(|&(_, us)| u128::from(us) < INLINE_BELOW.as_micros())
    }
}

impl Shared {
    /// A server over `rt` listing `selection`'s visible tools plus discovery; destructive tools
    /// matching `approve` run without elicitation.
    pub fn new(rt: Arc<Runtime>, selection: Selection, approve: Vec<String>) -> Arc<Shared> {
        Arc::new(Shared {
            rt,
            selection,
            approve,
            calls: Arc::new(Semaphore::new(MAX_CALLS)),
            waiting: Arc::new(Semaphore::new(MAX_WAITING)),
            pace: Pace::default(),
        })
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// The specs `tools/list` shows: the plan's visible tools but those of covo's own agent
    /// loop, then the discovery tools that the profile owns and the plan did not show.
    pub fn listed(&self) -> Vec<&'static ToolSpec> {
        let mut specs = match self.rt.plan(&self.selection) {
            Ok(p) => p.visible,
            Err(e) => {
                tracing::warn!(error = %e, "MCP toolset selection failed; core tools only");
                self.rt.core_plan().visible
            }
        };
        specs.retain(|s| !AGENT_LOOP.iter().any(|a| is(s, a)));
        for d in [
            &catalog::discovery::TOOL_SEARCH,
            &catalog::discovery::TOOL_DESCRIBE,
            &catalog::discovery::TOOL_CALL,
        ] {
            if !specs.iter().any(|s| is(s, d)) {
                if let Some(s) = self.rt.owned().get(d.name) {
                    if self.rt.availability(s).available {
                        specs.push(s);
                    }
                }
            }
        }
        specs
    }

    /// The MCP tool definitions of [`Shared::listed`].
    pub fn tools(&self) -> Vec<Tool> {
        self.listed().into_iter().map(tool).collect()
    }

    fn approved(&self, name: &str) -> bool {
        self.approve
            .iter()
            .any(|g| wildmatch::WildMatch::new(g).matches(name))
    }
}

/// A human title from a tool's name: `sensor_read` → `Sensor read`.
fn title(name: &str) -> String {
    let words = name.replace('_', " ");
    let mut c = words.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// One catalog spec as an MCP tool: its schema, title and the hints its effect implies.
pub fn tool(spec: &'static ToolSpec) -> Tool {
    let schema = match spec.params_json() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut hints = ToolAnnotations::new();
    hints = match spec.effect {
        Effect::Read => hints.read_only(true),
        Effect::Write | Effect::Actuate => hints.read_only(false).destructive(false),
        Effect::Destructive => hints.read_only(false).destructive(true),
    };
    if IDEMPOTENT.iter().any(|t| is(spec, t)) {
        hints = hints.idempotent(true);
    }
    Tool::new(spec.name, spec.description, Arc::new(schema))
        .with_title(title(spec.name))
        .with_annotations(hints)
}

/// The MCP client's user approves destructive calls: through `[mcp] approve`, else by
/// elicitation when the client can ask, else nobody and the call is refused.
struct ClientApprover {
    shared: Arc<Shared>,
    peer: Peer<RoleServer>,
    handle: tokio::runtime::Handle,
    can_ask: bool,
    /// The call's running slot ([`MAX_CALLS`]), given back while its user is asked.
    slot: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
    /// The session's waiting slots ([`WAITING_PER_SESSION`]).
    waiting: Arc<Semaphore>,
}

/// Whether an accepted elicitation confirmed the call: only `confirm: true` runs it. No
/// content, no `confirm`, or any other value (`"yes"`, `1`, `false`) is a refusal that says
/// what was sent, so a client that accepts without filling in the form runs nothing.
fn confirmed(content: Option<&Value>) -> Result<(), String> {
    match content.and_then(|c| c.get("confirm")) {
        Some(Value::Bool(true)) => Ok(()),
        Some(Value::Bool(false)) => Err("the MCP client's user did not confirm it".into()),
        None => Err(
            "the MCP client accepted without confirming it (the answer had no 'confirm'); \
             only confirm: true runs the call"
                .into(),
        ),
        Some(other) => {
            let mut shown = other.to_string();
            if shown.len() > 40 {
                let mut cut = 40;
                while !shown.is_char_boundary(cut) {
                    cut -= 1;
                }
                shown.truncate(cut);
                shown.push('…');
            }
            Err(format!(
                "the MCP client answered confirm: {shown}, not true; only confirm: true runs the \
                 call"
            ))
        }
    }
}

impl Approver for ClientApprover {
    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        if self.shared.approved(spec.name) {
            return Ok(());
        }
        if !self.can_ask {
            return Err(format!(
                "'{name}' is destructive and this MCP client cannot confirm it (it declared no \
                 elicitation capability); to let MCP clients run it without asking, add it to \
                 covo.toml: [mcp] approve = [\"{name}\"]",
                name = spec.name
            ));
        }
        let schema = ElicitationSchema::builder()
            .required_bool_property("confirm", |b| b.title("Run it"))
            .build_unchecked();
        let mut shown = args.to_string();
        if shown.len() > 400 {
            let mut cut = 400;
            while !shown.is_char_boundary(cut) {
                cut -= 1;
            }
            shown.truncate(cut);
            shown.push('…');
        }
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "covo: '{}' is destructive ({}). Run it with {shown}?",
                spec.name,
                spec.summary()
            ),
            requested_schema: schema,
        };
        // While its user is asked, the call holds one of its session's waiting slots and one
        // of the gateway's, not a running slot: a client that never answers blocks only itself.
        let Ok(_mine) = self.waiting.clone().try_acquire_owned() else {
            return Err(format!(
                "busy: this MCP session already has {WAITING_PER_SESSION} calls waiting for \
                 confirmation (the most one session may); answer them first"
            ));
        };
        let Ok(_all) = self.shared.waiting.clone().try_acquire_owned() else {
            return Err(format!(
                "busy: {MAX_WAITING} MCP calls are waiting for confirmation on this gateway (the \
                 most it holds); retry later"
            ));
        };
        drop(self.slot.lock().unwrap_or_else(|p| p.into_inner()).take());
        let answer = self.ask(params);
        if answer.is_ok() {
            // Confirmed: run in a running slot again, waiting for one as long as for the user.
            let calls = self.shared.calls.clone();
            let got = self
                .handle
                .block_on(async { tokio::time::timeout(ELICIT_WAIT, calls.acquire_owned()).await });
            match got {
                Ok(Ok(p)) => *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(p),
                _ => {
                    return Err(format!(
                        "busy: confirmed, but {MAX_CALLS} MCP tool calls kept running for {} s; \
                         retry",
                        ELICIT_WAIT.as_secs()
                    ))
                }
            }
        }
        answer
    }
}

impl ClientApprover {
    /// Sends the elicitation and waits for its answer.
    fn ask(&self, params: ElicitRequestParams) -> Result<(), String> {
        // The executor runs on a blocking thread; the request goes out on the server's loop.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let peer = self.peer.clone();
        self.handle.spawn(async move {
            let _ = tx.send(peer.create_elicitation(params).await);
        });
        match rx.recv_timeout(ELICIT_WAIT) {
            Ok(Ok(r)) if r.action == ElicitationAction::Accept => confirmed(r.content.as_ref()),
            Ok(Ok(r)) => Err(format!(
                "the MCP client's user answered {}",
                match r.action {
                    ElicitationAction::Decline => "decline",
                    _ => "cancel",
                }
            )),
            Ok(Err(e)) => Err(format!("asking the MCP client failed: {e}")),
            Err(_) => Err(format!(
                "the MCP client's user did not answer within {} s",
                ELICIT_WAIT.as_secs()
            )),
        }
    }
}

/// The user's channels as MCP sees them: a client gets tool results, not messages, and
/// questions cannot be asked in the middle of a call (stdin is the protocol).
pub struct McpUserIo;

impl UserIo for McpUserIo {
    fn send(&self, channel: &str, _text: &str) -> Result<(), String> {
        Err(format!(
            "channel '{channel}' is not connected here: an MCP client reads tool results, so \
             return what the user should see"
        ))
    }

    fn ask(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }

    fn channels(&self) -> Vec<(String, bool)> {
        vec![("mcp".into(), false)]
    }
}

/// Subscribed URIs → the sensor and the fingerprint of its last seen reading.
type Subscriptions = Arc<Mutex<HashMap<String, (String, Option<String>)>>>;

/// One MCP session (one stdio connection, or one HTTP session).
pub struct CovoMcp {
    shared: Arc<Shared>,
    session: String,
    subs: Subscriptions,
    watching: Mutex<bool>,
    stop: CancellationToken,
    /// This session's calls waiting for confirmation ([`WAITING_PER_SESSION`]).
    waiting: Arc<Semaphore>,
    /// Quick calls may run on the server's own thread ([`CovoMcp::runs_inline`]).
    inline: bool,
}

impl Drop for CovoMcp {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl CovoMcp {
    /// A new session of `shared`.
    pub fn new(shared: Arc<Shared>) -> CovoMcp {
        CovoMcp {
            shared,
            session: format!("mcp-{:012x}", fastrand::u64(..) >> 16),
            subs: Arc::default(),
            watching: Mutex::new(false),
            stop: CancellationToken::new(),
            waiting: Arc::new(Semaphore::new(WAITING_PER_SESSION)),
            inline: false,
        }
    }

    /// The session of `covo mcp`, the one client of its own runtime: quick calls run on the
    /// runtime's thread ([`CovoMcp::runs_inline`]). Not for a session of `covo run`, whose
    /// loop also serves its channels.
    pub fn on_stdio(shared: Arc<Shared>) -> CovoMcp {
        let mut session = CovoMcp::new(shared);
        session.inline = true;
        session
    }

    /// Whether a call runs on the server's own thread instead of the blocking pool. The hop
    /// to the pool and back wakes two threads, which is a fifth of a quick call's round trip
    /// over stdio; but the thread is also the one that reads the client's next request and
    /// sends elicitation requests. So only a call of a stdio session ([`CovoMcp::on_stdio`])
    /// with no other call running, of a tool that runs on the gateway (not forwarded to the
    /// cloud peer), cannot ask for confirmation, and whose recent calls all took less
    /// than [`INLINE_BELOW`] ([`Pace`]); never `tool_call`, which runs whatever it names. A
    /// quick tool's call that turns out slow holds the client's next request for as long as it
    /// takes, and sends the tool's next calls to the pool. The session's approver is asked
    /// about the called tool alone (`ApprovalHook`; only `tool_call` calls another in the same
    /// session, and a watch that a reading fires runs in its own), so an inline call never
    /// asks: asking from this thread would wait for itself.
    fn runs_inline(&self, spec: Option<&'static ToolSpec>, approver: &dyn Approver) -> bool {
        self.inline
            && self.shared.calls.available_permits() == MAX_CALLS - 1
            && spec.is_some_and(|s| {
                !is(s, &catalog::discovery::TOOL_CALL)
                    && s.effect != Effect::Destructive
                    && !approver.asks(s)
                    && s.runs == Runs::Gateway
                    && self.shared.pace.quick(s.name)
            })
    }

    /// Starts the task that notifies this session's subscribers, once.
    fn watch(&self, peer: Peer<RoleServer>) {
        let mut started = self.watching.lock().unwrap_or_else(|p| p.into_inner());
        if *started {
            return;
        }
        *started = true;
        let (subs, shared, stop) = (self.subs.clone(), self.shared.clone(), self.stop.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(POLL) => {}
                }
                let watched: Vec<(String, String, Option<String>)> = subs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .iter()
                    .map(|(u, (s, f))| (u.clone(), s.clone(), f.clone()))
                    .collect();
                for (uri, sensor, seen) in watched {
                    let rt = shared.rt.clone();
                    let now = tokio::task::spawn_blocking(move || fingerprint(&rt, &sensor))
                        .await
                        .ok()
                        .flatten();
                    if now.is_none() || now == seen {
                        continue;
                    }
                    if let Some(e) = subs.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&uri) {
                        e.1 = now;
                    }
                    let note = ResourceUpdatedNotificationParam::new(uri);
                    if peer.notify_resource_updated(note).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
}

/// The result of a tool call as MCP content: the JSON as text, and any image artifacts it
/// names as image content.
fn success(rt: &Runtime, v: &Value) -> CallToolResult {
    let mut content = vec![ContentBlock::text(v.to_string())];
    let mut images = Vec::new();
    collect_images(v, &mut images);
    for (id, _) in images.into_iter().take(MAX_IMAGES) {
        if let Some((bytes, ct)) = crate::artifacts::load(rt.home(), &id) {
            if ct.starts_with("image/") {
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                content.push(ContentBlock::image(data, ct));
            }
        }
    }
    CallToolResult::success(content)
}

/// Artifact ids of images in a result: an object with an image `content_type` and the id in
/// `artifact` (gateway tools) or `id` (peer tools' stored artifacts).
fn collect_images(v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            let ct = m.get("content_type").and_then(Value::as_str).unwrap_or("");
            if ct.starts_with("image/") {
                for key in ["artifact", "id"] {
                    if let Some(id) = m.get(key).and_then(Value::as_str) {
                        if crate::artifacts::is_id(id) {
                            out.push((id.to_string(), ct.to_string()));
                            break;
                        }
                    }
                }
            }
            for x in m.values() {
                collect_images(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_images(x, out)),
        _ => {}
    }
}

/// A tool error as MCP wants it: an `isError` result carrying covo's structured error JSON.
fn failure(e: &CallError) -> CallToolResult {
    let body = match e {
        CallError::Respond(t) => t.to_json(),
        CallError::Fatal(f) => json!({"error": {"kind": "fatal", "message": f.to_string()}}),
    };
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

fn busy() -> CallToolResult {
    let body = json!({"error": {
        "kind": "busy",
        "message": format!(
            "{MAX_CALLS} MCP tool calls are already running on this gateway; retry when one \
             has finished"
        ),
    }});
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

/// What an MCP resource URI names.
enum Res {
    Board,
    Latest(String),
    History(String),
}

const BOARD_URI: &str = "covo://board";

fn latest_uri(sensor: &str) -> String {
    format!("covo://sensors/{sensor}/latest")
}

fn history_uri(sensor: &str) -> String {
    format!("covo://sensors/{sensor}/history.csv")
}

/// The declared sensors of the board.
fn sensors(rt: &Runtime) -> Vec<String> {
    rt.board()
        .def()
        .device
        .iter()
        .filter(|d| d.driver.is_sensor())
        .map(|d| d.name.clone())
        .collect()
}

fn parse_uri(rt: &Runtime, uri: &str) -> Option<Res> {
    if uri == BOARD_URI {
        return Some(Res::Board);
    }
    let rest = uri.strip_prefix("covo://sensors/")?;
    let (sensor, what) = rest.split_once('/')?;
    if !sensors(rt).iter().any(|s| s == sensor) {
        return None;
    }
    match what {
        "latest" => Some(Res::Latest(sensor.to_string())),
        "history.csv" => Some(Res::History(sensor.to_string())),
        _ => None,
    }
}

fn window(
    rt: &Runtime,
    sensor: &str,
    back: chrono::Duration,
) -> Result<Vec<crate::store::readings::Reading>, String> {
    let now = chrono::Utc::now();
    let since = (now - back).to_rfc3339();
    let until = (now + chrono::Duration::seconds(1)).to_rfc3339();
    rt.store()
        .map_err(|e| e.to_string())?
        .readings(sensor, None, &since, &until)
        .map_err(|e| e.to_string())
}

/// A sensor's latest stored reading: every quantity logged at the newest time.
fn latest(rt: &Runtime, sensor: &str, back: chrono::Duration) -> Result<Value, String> {
    let rows = window(rt, sensor, back)?;
    let Some(last) = rows.last() else {
        return Ok(json!({"sensor": sensor, "at": null, "quantities": {}}));
    };
    let mut q = Map::new();
    for r in rows.iter().filter(|r| r.at == last.at) {
        q.insert(
            r.quantity.clone(),
            json!({"value": r.value, "unit": r.unit}),
        );
    }
    Ok(json!({"sensor": sensor, "at": last.at, "quantities": q}))
}

/// What changes when a sensor's latest reading (of the last day) changes.
fn fingerprint(rt: &Runtime, sensor: &str) -> Option<String> {
    latest(rt, sensor, chrono::Duration::days(1))
        .ok()
        .map(|v| v.to_string())
}

fn read(rt: &Runtime, res: &Res, uri: &str) -> Result<ResourceContents, String> {
    Ok(match res {
        Res::Board => {
            let def = rt.board().def();
            let text = if def.source.as_os_str().is_empty() {
                covo_board::board::SIM_TOML.to_string()
            } else {
                std::fs::read_to_string(&def.source)
                    .map_err(|e| format!("cannot read {}: {e}", def.source.display()))?
            };
            ResourceContents::text(text, uri).with_mime_type("application/toml")
        }
        Res::Latest(s) => {
            let mut v = latest(rt, s, chrono::Duration::days(1))?;
            if v["at"].is_null() {
                // Nothing today: the newest reading the store still keeps.
                v = latest(
                    rt,
                    s,
                    chrono::Duration::days(crate::tools::readings::MAX_WINDOW_DAYS),
                )?;
            }
            ResourceContents::text(v.to_string(), uri).with_mime_type("application/json")
        }
        Res::History(s) => {
            let rows = window(rt, s, chrono::Duration::days(1))?;
            let skip = rows.len().saturating_sub(MAX_CSV_ROWS);
            let mut w = csv::Writer::from_writer(Vec::new());
            let header = w.write_record(["at", "sensor", "quantity", "value", "unit"]);
            header.map_err(|e| e.to_string())?;
            for r in &rows[skip..] {
                w.write_record([&r.at, &r.sensor, &r.quantity, &r.value.to_string(), &r.unit])
                    .map_err(|e| e.to_string())?;
            }
            let bytes = w.into_inner().map_err(|e| e.to_string())?;
            ResourceContents::text(String::from_utf8_lossy(&bytes), uri).with_mime_type("text/csv")
        }
    })
}

impl ServerHandler for CovoMcp {
    fn get_info(&self) -> InitializeResult {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        InitializeResult::new(caps)
            .with_server_info(Implementation::new("covo", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "covo: the tools of a Linux board (sensors, GPIO, I2C, SPI, serial, \
                 microcontrollers) behind its safety policy. The list is short on purpose: \
                 tool_search finds the other tools, tool_describe shows one, tool_call runs it.",
            )
    }

    /// Handshake-era versions only: covo asks for confirmation with server-to-client
    /// elicitation requests, which the stateless 2026-07-28 revision replaced.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.shared.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Ok(permit) = self.shared.calls.clone().try_acquire_owned() else {
            return Ok(busy().into());
        };
        let can_ask = context
            .peer
            .peer_info()
            .is_some_and(|i| i.capabilities.elicitation.is_some());
        let slot = Arc::new(Mutex::new(Some(permit)));
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let shared = self.shared.clone();
        let spec = shared.rt.owned().get(&name);
        let approver = ClientApprover {
            shared: shared.clone(),
            peer: context.peer.clone(),
            handle: tokio::runtime::Handle::current(),
            can_ask,
            slot: slot.clone(),
            waiting: self.waiting.clone(),
        };
        let inline = self.runs_inline(spec, &approver);
        let session = Session::new(self.session.clone(), "mcp").with_approver(Arc::new(approver));
        let call = move || {
            let _slot = slot;
            let started = std::time::Instant::now();
            let r = shared.rt.call(&session, Via::Mcp, &name, args);
            if let Some(s) = spec {
                shared.pace.record(s.name, started.elapsed());
            }
            (r, shared)
        };
        let (outcome, shared) = if inline {
            call()
        } else {
            tokio::task::spawn_blocking(call).await.map_err(|e| {
                McpError::internal_error(format!("the tool call panicked: {e}"), None)
            })?
        };
        let result = match &outcome {
            Ok(v) => success(&shared.rt, v),
            Err(e) => failure(e),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let rt = &self.shared.rt;
        let mut all = vec![Resource::new(BOARD_URI, "board")
            .with_title(format!(
                "Board definition ({})",
                rt.board().def().board.name
            ))
            .with_description("The board file: buses, pins, devices and the safety policy.")
            .with_mime_type("application/toml")];
        for s in sensors(rt) {
            all.push(
                Resource::new(latest_uri(&s), format!("{s}-latest"))
                    .with_title(format!("{s}: latest reading"))
                    .with_description(format!(
                        "The newest stored reading of sensor '{s}' (subscribe to hear of new ones)."
                    ))
                    .with_mime_type("application/json"),
            );
            all.push(
                Resource::new(history_uri(&s), format!("{s}-history"))
                    .with_title(format!("{s}: last 24 h as CSV"))
                    .with_description(format!(
                        "Sensor '{s}''s stored readings of the last 24 hours (at most {MAX_CSV_ROWS} rows)."
                    ))
                    .with_mime_type("text/csv"),
            );
        }
        Ok(ListResourcesResult::with_all_items(all))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.clone();
        let rt = self.shared.rt.clone();
        let Some(res) = parse_uri(&rt, &uri) else {
            return Err(McpError::resource_not_found(
                format!("no resource '{uri}': see resources/list"),
                None,
            ));
        };
        let contents = tokio::task::spawn_blocking(move || read(&rt, &res, &uri))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?
            .map_err(|e| McpError::internal_error(e, None))?;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let uri = request.uri;
        let sensor = match parse_uri(&self.shared.rt, &uri) {
            Some(Res::Latest(s) | Res::History(s)) => s,
            Some(Res::Board) => {
                return Err(McpError::invalid_params(
                    "the board definition does not change while covo runs; subscribe to a \
                     sensor's reading",
                    None,
                ))
            }
            None => {
                return Err(McpError::resource_not_found(
                    format!("no resource '{uri}': see resources/list"),
                    None,
                ))
            }
        };
        {
            let subs = self.subs.lock().unwrap_or_else(|p| p.into_inner());
            if subs.len() >= MAX_SUBSCRIPTIONS && !subs.contains_key(&uri) {
                return Err(McpError::invalid_request(
                    format!(
                        "at most {MAX_SUBSCRIPTIONS} subscriptions per session; unsubscribe \
                         from one first"
                    ),
                    None,
                ));
            }
        }
        let rt = self.shared.rt.clone();
        let s = sensor.clone();
        let seen = tokio::task::spawn_blocking(move || fingerprint(&rt, &s))
            .await
            .ok()
            .flatten();
        self.subs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uri, (sensor, seen));
        self.watch(context.peer.clone());
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&request.uri);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_tool_is_quick_once_its_slowest_recent_call_has_decayed_below_the_bound() {
        let pace = Pace::default();
        assert!(!pace.quick("gpio_read"), "a tool never called is not quick");
        pace.record("gpio_read", Duration::from_micros(999));
        assert!(pace.quick("gpio_read"));
        assert!(
            !pace.quick("sensor_read"),
            "one tool's pace is not another's"
        );
        // One 5 s call (a serial timeout): the next 64 calls are off the thread, the 65th is
        // on it again, as 5e6 x (7/8)^64 < 1e3 < 5e6 x (7/8)^63.
        pace.record("gpio_read", Duration::from_secs(5));
        for n in 1..=64 {
            assert!(!pace.quick("gpio_read"), "quick again after {n} calls");
            pace.record("gpio_read", Duration::from_micros(50));
        }
        assert!(pace.quick("gpio_read"));
        // Exactly the bound is not below it; a duration beyond u64 microseconds saturates.
        pace.record("sensor_read", INLINE_BELOW);
        assert!(!pace.quick("sensor_read"));
        pace.record("sensor_read", Duration::MAX);
        assert!(pace.0.lock().unwrap().contains(&("sensor_read", u64::MAX)));
        assert_eq!(pace.0.lock().unwrap().len(), 2, "one entry a tool");
    }

    #[test]
    fn only_confirm_true_confirms_an_accepted_elicitation() {
        assert_eq!(confirmed(Some(&json!({"confirm": true}))), Ok(()));
        for content in [
            None,
            Some(json!({})),
            Some(json!(null)),
            Some(json!({"confirm": false})),
            Some(json!({"confirm": "no"})),
            Some(json!({"confirm": "true"})),
            Some(json!({"confirm": 0})),
            Some(json!({"confirm": 1})),
            Some(json!({"confirm": null})),
            Some(json!({"confirm": [true]})),
            Some(json!({"Confirm": true})),
        ] {
            let e = confirmed(content.as_ref()).expect_err(&format!("{content:?} confirmed"));
            assert!(e.contains("confirm"), "{e}");
        }
        let long = json!({"confirm": "y".repeat(500)});
        assert!(confirmed(Some(&long)).unwrap_err().len() < 200);
    }

    #[test]
    fn hints_follow_the_effect() {
        let t = tool(&catalog::sensors::SENSOR_READ);
        let a = t.annotations.unwrap();
        assert_eq!(a.read_only_hint, Some(true));
        let t = tool(&catalog::gpio::PWM_SET);
        let a = t.annotations.unwrap();
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
            (Some(false), Some(false), Some(true))
        );
        let t = tool(&catalog::fs::FS_DELETE);
        assert_eq!(t.annotations.unwrap().destructive_hint, Some(true));
        assert_eq!(t.title.as_deref(), Some("Fs delete"));
    }

    #[test]
    fn images_are_found_by_content_type_and_artifact_id() {
        let mut out = Vec::new();
        collect_images(
            &json!({"a": {"artifact": "art-00ab", "content_type": "image/png"},
                    "b": [{"id": "art-11", "content_type": "image/jpeg"}],
                    "c": {"artifact": "/tmp/x.csv"},
                    "d": {"artifact": "art-22", "content_type": "audio/wav"}}),
            &mut out,
        );
        out.sort();
        assert_eq!(
            out,
            vec![
                ("art-00ab".to_string(), "image/png".to_string()),
                ("art-11".to_string(), "image/jpeg".to_string())
            ]
        );
    }
}
