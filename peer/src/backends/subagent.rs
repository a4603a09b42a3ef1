//! `subagent_spawn`, `subagent_status`, `subagent_result`: the peer runs its own agent loop
//! (`Agent::turn`) on a background thread per spawn, with the peer's model and a toolset named
//! by the request, and keeps its state in the peer's SQLite store (`store::subagents`).
//!
//! A sub-agent's runtime is a normal [`Runtime`] (one pipeline: validate → policy → approval →
//! execute → audit) built from the peer's config with:
//! - a profile that owns only the requested toolsets' tools, minus what a peer cannot serve:
//!   the `hardware` and `voice` toolsets, `camera_snapshot` (the board stays with the gateway)
//!   and the `subagent_*` tools (sub-agents do not nest);
//! - its `runs = "peer"` tools executed in this process by the peer's own backends
//!   ([`RuntimeOptions::local_peer`]), never forwarded back over MQTT, and no broker at all;
//! - nobody to approve: destructive tools are declined; no user channel to message or ask;
//! - a step budget and a wall-clock limit.
//!
//! A sub-agent still `running` when the peer died is marked `interrupted` at the next start; it
//! is never re-run.

use covo_core::catalog;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::model::PeerModel;
use super::SubAgentsConfig;
use covo::agent::{Agent, Observer, Outcome, ToolResult};
use covo::config::{Config, ProfileConfig};
use covo::hooks::{Hook, HookCx, ModelReply};
use covo::llm::ToolCall;
use covo::plan::Selection;
use covo::runtime::{Approver, LocalPeer, Runtime, UserIo};
use covo::spec::ToolSpec;
use covo::store::{Store, StoreError, SubAgent, SubAgentCall, SubAgentState};
use covo::toolset::{ToolsetError, Toolsets};
use covo_core::error::ToolError;
use covo_wire::host::ToolHost;

pub(super) const SPAWN: &str = catalog::delegation::SUBAGENT_SPAWN.name;
pub(super) const STATUS: &str = catalog::delegation::SUBAGENT_STATUS.name;
pub(super) const RESULT: &str = catalog::delegation::SUBAGENT_RESULT.name;

/// Model calls a sub-agent may make unless configured.
pub const DEFAULT_MAX_STEPS: usize = 12;
/// A sub-agent's wall-clock limit unless configured, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
/// Sub-agents running at once unless configured.
pub const DEFAULT_MAX_CONCURRENT: usize = 4;
/// The toolsets of a sub-agent whose request names none: the web and the code sandbox.
pub const DEFAULT_TOOLSETS: &[&str] = &[catalog::web::TOOLSET, catalog::code_exec::TOOLSET];

/// The profile name the sub-agent runtimes are built under.
const PROFILE: &str = "covo-subagent";
/// Toolsets a sub-agent never reaches: the board and its speaker stay with the gateway.
const EXCLUDED_TOOLSETS: &[&str] = &[covo_core::toolset::HARDWARE, catalog::voice::TOOLSET];
/// Single tools a sub-agent never reaches.
const EXCLUDED_TOOLS: &[&str] = &[catalog::media::CAMERA_SNAPSHOT.name, SPAWN, STATUS, RESULT];
/// Tool calls shown by `subagent_status`.
const LAST_CALLS: usize = 5;

const SYSTEM_PROMPT: &str = "You are a covo sub-agent running on a cloud peer on behalf of a \
gateway's assistant. Work on the task alone with the tools you are given: nobody can answer \
questions or approve destructive actions. A tool error comes back as JSON with a kind and a \
message: fix the call and retry, or work around it. When you are done, reply with the final \
answer only: complete and concise, with the facts and numbers your tools gave you. If you cannot \
finish, say what you found and what is missing.";

/// A sub-agent runs with no human: destructive calls are declined and there is nobody to talk to.
struct NobodyHere;

impl Approver for NobodyHere {
    fn approve(&self, _: &ToolSpec, _: &Value) -> Result<(), String> {
        Err("a sub-agent on the peer has nobody to approve destructive tools, so it cannot run them".into())
    }
}

impl UserIo for NobodyHere {
    fn send(&self, _channel: &str, _text: &str) -> Result<(), String> {
        Err("a sub-agent has no user channel; put what you want to say in your final answer".into())
    }

    fn ask(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }

    fn channels(&self) -> Vec<(String, bool)> {
        Vec::new()
    }
}

/// Counts the sub-agent's model calls into its row.
struct Steps {
    store: Arc<Store>,
    handle: String,
    count: Mutex<u32>,
}

impl Hook for Steps {
    fn name(&self) -> &'static str {
        "subagent_steps"
    }

    fn after_model_call(&self, _cx: &HookCx<'_>, _reply: &ModelReply<'_>) {
        let mut n = self.count.lock().unwrap_or_else(|p| p.into_inner());
        *n += 1;
        if let Err(e) = self.store.subagent_steps(&self.handle, *n) {
            tracing::warn!(handle = self.handle, error = %e, "cannot record sub-agent steps");
        }
    }
}

/// Records the sub-agent's tool calls into its row as they start and finish.
struct Progress {
    store: Arc<Store>,
    handle: String,
    calls: Vec<SubAgentCall>,
    ids: Vec<String>,
}

impl Progress {
    fn save(&self) {
        if let Err(e) = self.store.subagent_tool_calls(&self.handle, &self.calls) {
            tracing::warn!(handle = self.handle, error = %e, "cannot record sub-agent tool calls");
        }
    }
}

impl Observer for Progress {
    fn on_tool_call(&mut self, call: &ToolCall) {
        self.calls.push(SubAgentCall {
            tool: call.name.clone(),
            ok: None,
        });
        self.ids.push(call.id.clone());
        self.save();
    }

    fn on_tool_result(&mut self, call: &ToolCall, result: &ToolResult) {
        if let Some(i) = self.ids.iter().rposition(|id| *id == call.id) {
            self.calls[i].ok = Some(!result.is_error);
        }
        self.save();
    }
}

struct Running {
    cancel: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

struct Inner {
    config: Config,
    home: PathBuf,
    model: Arc<PeerModel>,
    local: Arc<dyn ToolHost>,
    store: Arc<Store>,
    max_steps: usize,
    timeout: Duration,
    max_concurrent: usize,
    default_toolsets: Vec<String>,
    base_profile: String,
    running: Mutex<HashMap<String, Running>>,
}

/// The peer's sub-agents.
pub(super) struct SubAgents {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SubAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgents")
            .field("home", &self.inner.home)
            .field("max_concurrent", &self.inner.max_concurrent)
            .finish()
    }
}

fn store_failed(tool: &str, e: StoreError) -> ToolError {
    ToolError::failed(tool, format!("the peer's store failed: {e}"))
}

impl SubAgents {
    /// Opens the store under the peer's data folder and marks what was running `interrupted`.
    pub(super) fn open(
        config: &Config,
        cfg: &SubAgentsConfig,
        model: Arc<PeerModel>,
        local: Arc<dyn ToolHost>,
    ) -> Result<SubAgents, StoreError> {
        let home = config.home_dir();
        let store = Store::open_in(&home)?;
        let n = store.subagent_interrupt_running(
            "the peer stopped while it ran; it was not restarted (spawn it again if needed)",
        )?;
        if n > 0 {
            tracing::warn!(
                count = n,
                "sub-agents that were running are now 'interrupted'"
            );
        }
        Ok(SubAgents {
            inner: Arc::new(Inner {
                config: config.clone(),
                home,
                model,
                local,
                store: Arc::new(store),
                max_steps: cfg.max_steps.unwrap_or(DEFAULT_MAX_STEPS).max(1),
                timeout: Duration::from_secs(
                    cfg.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1),
                ),
                max_concurrent: cfg.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT),
                default_toolsets: cfg
                    .default_toolsets
                    .clone()
                    .unwrap_or_else(|| DEFAULT_TOOLSETS.iter().map(|s| s.to_string()).collect()),
                base_profile: cfg.profile.clone().unwrap_or_else(|| "full".into()),
                running: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// How many sub-agents are running now.
    pub(super) fn running(&self) -> usize {
        self.inner.lock_running().len()
    }

    pub(super) fn run(&self, tool: &str, args: &Value) -> Result<Value, ToolError> {
        match tool {
            SPAWN => self.spawn(args),
            STATUS => self.status(handle_arg(STATUS, args)?),
            RESULT => self.result(handle_arg(RESULT, args)?),
            _ => unreachable!("only the subagent_* tools are routed here"),
        }
    }

    fn spawn(&self, args: &Value) -> Result<Value, ToolError> {
        let inner = &self.inner;
        let task = args
            .get("task")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ToolError::invalid(SPAWN, "/task", "is empty: say what to do"))?
            .to_string();
        let mut toolsets: Vec<String> = Vec::new();
        match args.get("toolsets").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => {
                for t in list.iter().filter_map(Value::as_str) {
                    if !toolsets.iter().any(|x| x == t) {
                        toolsets.push(t.to_string());
                    }
                }
            }
            _ => toolsets = inner.default_toolsets.clone(),
        }
        let handle = format!("sa-{:016x}", fastrand::u64(..));
        let rt = inner.runtime(&toolsets, &handle)?;
        let mut running = inner.lock_running();
        if running.len() >= inner.max_concurrent {
            return Err(ToolError::failed(
                SPAWN,
                format!(
                    "{} sub-agents are already running on this peer, the most it runs at once; wait for one to finish (poll subagent_status) and spawn again",
                    running.len()
                ),
            ));
        }
        inner
            .store
            .subagent_insert(&handle, &task, &toolsets)
            .map_err(|e| store_failed(SPAWN, e))?;
        let cancel = CancellationToken::new();
        let thread = {
            let inner = self.inner.clone();
            let handle = handle.clone();
            let cancel = cancel.clone();
            std::thread::Builder::new()
                .name(format!("covo-{handle}"))
                .spawn(move || inner.drive(rt, handle, task, cancel))
        };
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                let msg = format!("cannot start a thread: {e}");
                let _ = inner.store.subagent_finish(
                    &handle,
                    SubAgentState::Failed,
                    None,
                    Some(&msg),
                    0,
                );
                return Err(ToolError::failed(SPAWN, msg));
            }
        };
        running.insert(
            handle.clone(),
            Running {
                cancel,
                thread: Some(thread),
            },
        );
        tracing::info!(handle, ?toolsets, "sub-agent spawned");
        Ok(json!({
            "handle": handle,
            "state": "running",
            "toolsets": toolsets,
            "max_steps": inner.max_steps,
            "timeout_s": inner.timeout.as_secs(),
        }))
    }

    fn get(&self, tool: &str, handle: &str) -> Result<SubAgent, ToolError> {
        self.inner
            .store
            .subagent(handle)
            .map_err(|e| store_failed(tool, e))?
            .ok_or_else(|| ToolError::NotFound {
                what: "sub-agent (no such handle on this peer; use the handle subagent_spawn returned)".into(),
                id: handle.to_string(),
            })
    }

    fn status(&self, handle: &str) -> Result<Value, ToolError> {
        let a = self.get(STATUS, handle)?;
        let last: Vec<&SubAgentCall> = a
            .tool_calls
            .iter()
            .skip(a.tool_calls.len().saturating_sub(LAST_CALLS))
            .collect();
        let mut out = json!({
            "handle": a.handle,
            "state": a.state.as_str(),
            "task": a.task,
            "toolsets": a.toolsets,
            "steps": a.steps,
            "max_steps": self.inner.max_steps,
            "tool_calls": a.tool_calls.len(),
            "last_tool_calls": last,
            "elapsed_s": elapsed_s(&a),
        });
        if let Some(e) = &a.error {
            out["error"] = json!(e);
        }
        out["next"] = json!(match a.state {
            SubAgentState::Running => "still working: check subagent_status again later",
            SubAgentState::Done => "finished: subagent_result has the answer",
            _ => "ended without an answer (see error)",
        });
        Ok(out)
    }

    fn result(&self, handle: &str) -> Result<Value, ToolError> {
        let a = self.get(RESULT, handle)?;
        match a.state {
            SubAgentState::Done => Ok(json!({
                "handle": a.handle,
                "state": "done",
                "answer": a.answer.unwrap_or_default(),
                "steps": a.steps,
                "tool_calls": a.tool_calls.iter().map(|c| c.tool.as_str()).collect::<Vec<_>>(),
                "elapsed_s": elapsed_s_of(&a.created_at, &a.updated_at),
            })),
            SubAgentState::Running => Err(ToolError::failed(
                RESULT,
                format!(
                    "sub-agent '{}' is still running ({} model calls, {} tool calls so far), so there is no answer yet: wait, poll subagent_status until its state is 'done', then call subagent_result again",
                    a.handle,
                    a.steps,
                    a.tool_calls.len()
                ),
            )),
            other => Err(ToolError::failed(
                RESULT,
                format!(
                    "sub-agent '{}' ended without an answer (state '{}'): {}",
                    a.handle,
                    other.as_str(),
                    a.error.as_deref().unwrap_or("no reason recorded")
                ),
            )),
        }
    }
}

impl Drop for SubAgents {
    /// Stops every running sub-agent (state `cancelled`) and waits for its thread.
    fn drop(&mut self) {
        let all: Vec<Running> = self.inner.lock_running().drain().map(|(_, r)| r).collect();
        for r in &all {
            r.cancel.cancel();
        }
        for mut r in all {
            if let Some(t) = r.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn handle_arg<'a>(tool: &str, args: &'a Value) -> Result<&'a str, ToolError> {
    args.get("handle")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .ok_or_else(|| ToolError::invalid(tool, "/handle", "is empty"))
}

fn elapsed_s(a: &SubAgent) -> f64 {
    if a.state == SubAgentState::Running {
        elapsed_s_of(&a.created_at, &covo::store::now_rfc3339())
    } else {
        elapsed_s_of(&a.created_at, &a.updated_at)
    }
}

fn elapsed_s_of(from: &str, to: &str) -> f64 {
    match (covo::store::parse_time(from), covo::store::parse_time(to)) {
        (Ok(a), Ok(b)) => ((b - a).num_milliseconds().max(0) as f64 / 100.0).round() / 10.0,
        _ => 0.0,
    }
}

impl Inner {
    fn lock_running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The runtime of one sub-agent, after checking every requested toolset exists and gives
    /// it at least one tool it can run here.
    fn runtime(&self, toolsets: &[String], handle: &str) -> Result<Runtime, ToolError> {
        let specs: Vec<&'static covo::spec::ToolSpec> = catalog::all().collect();
        let sets = Toolsets::new(&specs, &self.config.toolsets).map_err(|e| {
            ToolError::failed(SPAWN, format!("the peer's toolsets do not load: {e}"))
        })?;
        let known = || {
            sets.iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut wanted: Vec<String> = Vec::new();
        for (i, name) in toolsets.iter().enumerate() {
            match sets.resolve(&[name]) {
                Ok(tools) => wanted.extend(tools),
                Err(ToolsetError::Unknown { name: bad, .. }) => {
                    return Err(ToolError::invalid(
                        SPAWN,
                        &format!("/toolsets/{i}"),
                        format!("unknown toolset '{bad}' (known: {})", known()),
                    ))
                }
                Err(e) => {
                    return Err(ToolError::invalid(
                        SPAWN,
                        &format!("/toolsets/{i}"),
                        e.to_string(),
                    ))
                }
            }
        }
        let mut excluded: Vec<String> = sets
            .resolve(EXCLUDED_TOOLSETS)
            .map_err(|e| ToolError::failed(SPAWN, e.to_string()))?;
        excluded.extend(EXCLUDED_TOOLS.iter().map(|s| s.to_string()));
        let deny: Vec<String> = specs
            .iter()
            .map(|t| t.name)
            .filter(|n| !wanted.iter().any(|w| w == n) || excluded.iter().any(|x| x == n))
            .map(str::to_string)
            .collect();
        let mut config = self.config.clone();
        // No broker: a sub-agent's peer tools run here, and it does not speak for the gateway.
        config.mqtt = None;
        // The board is the gateway's; its tools are excluded above.
        config.board = None;
        config.agent.max_steps = Some(self.max_steps);
        config.agent.system_prompt = Some(SYSTEM_PROMPT.into());
        config.profiles.insert(
            PROFILE.into(),
            ProfileConfig {
                base: Some(self.base_profile.clone()),
                allow: Vec::new(),
                deny,
            },
        );
        let mut opts = covo::tools::options(config);
        opts.profile = Some(PROFILE.into());
        opts.home = Some(self.home.clone());
        opts.selection = Some(Selection::Toolsets(toolsets.to_vec()));
        opts.approver = Box::new(NobodyHere);
        opts.user_io = Box::new(NobodyHere);
        opts.hooks.push(Box::new(Steps {
            store: self.store.clone(),
            handle: handle.to_string(),
            count: Mutex::new(0),
        }));
        opts.local_peer = Some(LocalPeer {
            host: self.local.clone(),
            timeout: self.timeout,
        });
        let rt = Runtime::new(opts).map_err(|e| {
            ToolError::failed(SPAWN, format!("cannot build the sub-agent's runtime: {e}"))
        })?;
        for (i, name) in toolsets.iter().enumerate() {
            let usable = rt
                .plan(&Selection::Toolsets(vec![name.clone()]))
                .map(|p| !p.visible.is_empty())
                .unwrap_or(false);
            if !usable {
                return Err(ToolError::invalid(
                    SPAWN,
                    &format!("/toolsets/{i}"),
                    format!(
                        "toolset '{name}' has no tool a sub-agent can run on this peer (hardware and voice tools stay on the gateway; peer tools need their backend configured)"
                    ),
                ));
            }
        }
        Ok(rt)
    }

    /// The sub-agent's thread: one agent turn on the task, then its final state.
    fn drive(
        self: Arc<Self>,
        rt: Runtime,
        handle: String,
        task: String,
        cancel: CancellationToken,
    ) {
        let rt = Arc::new(rt);
        let title: String = task.chars().take(60).collect();
        let session = covo::agent::new_session(&rt, "subagent", &format!("sub-agent: {title}"));
        if let Err(e) = self.store.subagent_set_conversation(&handle, &session.id) {
            tracing::warn!(handle, error = %e, "cannot link the sub-agent's conversation");
        }
        let mut agent = Agent::new(rt, Some(self.model.chat().clone()), session);
        let mut progress = Progress {
            store: self.store.clone(),
            handle: handle.clone(),
            calls: Vec::new(),
            ids: Vec::new(),
        };
        let limit = self.timeout;
        let (report, timed_out) = self.model.block_on(async {
            let turn = agent.turn(&task, &cancel, &mut progress);
            tokio::pin!(turn);
            tokio::select! {
                r = &mut turn => (r, false),
                _ = tokio::time::sleep(limit) => {
                    cancel.cancel();
                    (turn.await, true)
                }
            }
        });
        let steps = report.steps as u32;
        let (state, answer, error) = match report.outcome {
            Outcome::Answer(text) => (SubAgentState::Done, Some(text), None),
            Outcome::StepBudget { steps } => (
                SubAgentState::Failed,
                None,
                Some(format!(
                    "the step budget of {steps} model calls ran out before a final answer"
                )),
            ),
            Outcome::Cancelled if timed_out => (
                SubAgentState::Failed,
                None,
                Some(format!("the time limit of {} s ran out", limit.as_secs())),
            ),
            Outcome::Cancelled => (
                SubAgentState::Cancelled,
                None,
                Some("the peer shut down while it ran".to_string()),
            ),
            Outcome::Failed(msg) => (SubAgentState::Failed, None, Some(msg)),
        };
        if let Err(e) =
            self.store
                .subagent_finish(&handle, state, answer.as_deref(), error.as_deref(), steps)
        {
            tracing::warn!(handle, error = %e, "cannot record the sub-agent's end");
        }
        tracing::info!(handle, state = state.as_str(), steps, "sub-agent ended");
        self.lock_running().remove(&handle);
    }
}
