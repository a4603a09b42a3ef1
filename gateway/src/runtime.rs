//! The tool runtime: the owned tools, the toolsets, and the one dispatch pipeline every call goes
//! through, whoever makes it (the model directly, `tool_call`, the CLI, MQTT, a remote peer):
//!
//! lookup → parse → validate against the schema → policy → approval (destructive) → execute → audit.

use crate::config::Config;
use crate::discovery::SearchIndex;
use crate::error::{ArgProblem, CallError, ToolError};
use crate::exec::{Cx, Session};
use crate::hardware::{Board, BoardPolicyCheck};
use crate::hooks::{
    ApprovalHook, Hook, HookCx, ModelCall, ModelReply, PlanModeHook, PolicyHook, ToolInvocation,
    ToolsetFilter,
};
use crate::plan::{self, Plan, Selection};
use crate::profile::{self, Owned, ProfileError};
use crate::spec::{Availability, Effect, Exec, ToolDef, ToolSpec};
use crate::store::{AuditEntry, Store, StoreError};
use crate::toolset::{ToolsetError, Toolsets};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// How a call reached the pipeline; recorded in the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The model (or the CLI) named the tool directly.
    Direct,
    /// Through the `tool_call` discovery tool.
    ToolCall,
    /// From an MQTT request.
    Mqtt,
    /// From another gateway or the peer.
    Remote,
    /// From a scheduled job.
    Schedule,
    /// From a sensor watch's action.
    Watch,
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Via::Direct => "direct",
            Via::ToolCall => "tool_call",
            Via::Mqtt => "mqtt",
            Via::Remote => "remote",
            Via::Schedule => "schedule",
            Via::Watch => "watch",
        }
    }
}

/// Why a policy refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rule, e.g. `read_only` or `i2c.write_allow`.
    pub rule: String,
    /// What the rule says about this call.
    pub detail: String,
}

/// A policy that may refuse a call after its arguments are valid and before it runs.
pub trait Policy: Send + Sync {
    /// `Err` refuses the call.
    fn check(&self, spec: &ToolSpec, args: &Value) -> Result<(), Refusal>;

    /// Like [`Policy::check`], for a policy that also depends on where the call came from.
    fn check_from(&self, spec: &ToolSpec, args: &Value, _via: Via) -> Result<(), Refusal> {
        self.check(spec, args)
    }
}

/// Tools never served to other gateways: the swarm tools (no relaying through a member) and
/// `tool_call` (its inner call is checked on its own anyway).
const NEVER_SERVED: &[&str] = &[
    "swarm_members",
    "swarm_call",
    "swarm_broadcast",
    "tool_call",
];

/// The toolsets whose `read` tools other gateways may call by default: the board's hardware,
/// never its files, memories or conversations.
pub const SWARM_DEFAULT_TOOLSETS: &[&str] = &["board", "sensors", "gpio", "i2c", "mcu"];

/// `[swarm] expose`: calls from other gateways (`Via::Remote`) may only run exposed tools.
/// Local calls are not affected.
pub struct SwarmExpose {
    /// Name globs; `None` exposes the `read` tools of [`SWARM_DEFAULT_TOOLSETS`].
    pub expose: Option<Vec<String>>,
}

impl SwarmExpose {
    /// Whether another gateway may call `spec` here.
    pub fn exposes(&self, spec: &ToolSpec) -> bool {
        if NEVER_SERVED.contains(&spec.name) {
            return false;
        }
        match &self.expose {
            None => spec.effect == Effect::Read && SWARM_DEFAULT_TOOLSETS.contains(&spec.toolset),
            Some(globs) => globs
                .iter()
                .any(|g| wildmatch::WildMatch::new(g).matches(spec.name)),
        }
    }
}

impl Policy for SwarmExpose {
    fn check(&self, _spec: &ToolSpec, _args: &Value) -> Result<(), Refusal> {
        Ok(())
    }

    fn check_from(&self, spec: &ToolSpec, _args: &Value, via: Via) -> Result<(), Refusal> {
        if via != Via::Remote || self.exposes(spec) {
            return Ok(());
        }
        Err(Refusal {
            rule: "swarm.expose".into(),
            detail: match &self.expose {
                None => format!(
                    "other gateways may call only the read tools of the {} toolsets here, and \
                     '{}' is not one; [swarm] expose lists what they may call",
                    SWARM_DEFAULT_TOOLSETS.join(", "),
                    spec.name
                ),
                Some(globs) => format!(
                    "'{}' matches none of [swarm] expose ({})",
                    spec.name,
                    if globs.is_empty() {
                        "empty".into()
                    } else {
                        globs.join(", ")
                    }
                ),
            },
        })
    }
}

/// The gateway-wide read-only switch: refuses every tool whose effect is not `read`.
pub struct ReadOnly;

impl Policy for ReadOnly {
    fn check(&self, spec: &ToolSpec, _args: &Value) -> Result<(), Refusal> {
        // `tool_call` is a proxy: the call it makes passes through this policy on its own.
        if spec.effect == Effect::Read || spec.name == "tool_call" {
            Ok(())
        } else {
            Err(Refusal {
                rule: "read_only".into(),
                detail: format!(
                    "the gateway is in read-only mode and '{}' has effect '{}'",
                    spec.name,
                    spec.effect.as_str()
                ),
            })
        }
    }
}

/// `mqtt_publish` may only publish to topics that match `[mqtt] publish_allow`.
pub struct MqttPublishAllow {
    /// The allowed topic filters.
    pub allow: Vec<String>,
}

impl Policy for MqttPublishAllow {
    fn check(&self, spec: &ToolSpec, args: &Value) -> Result<(), Refusal> {
        if spec.name != "mqtt_publish" {
            return Ok(());
        }
        let topic = args.get("topic").and_then(Value::as_str).unwrap_or("");
        if self
            .allow
            .iter()
            .any(|f| crate::peer::mqtt::topic_matches(f, topic))
        {
            Ok(())
        } else {
            Err(Refusal {
                rule: "mqtt.publish_allow".into(),
                detail: format!(
                    "'{topic}' matches none of [mqtt] publish_allow ({})",
                    if self.allow.is_empty() {
                        "empty".to_string()
                    } else {
                        self.allow.join(", ")
                    }
                ),
            })
        }
    }
}

/// Decides whether a destructive call may run.
pub trait Approver: Send + Sync {
    /// `Err(detail)` declines.
    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String>;
}

/// Approves everything (`--yes`).
pub struct AutoApprove;

impl Approver for AutoApprove {
    fn approve(&self, _: &ToolSpec, _: &Value) -> Result<(), String> {
        Ok(())
    }
}

/// Declines everything: nobody is there to ask.
pub struct NoApprover;

impl Approver for NoApprover {
    fn approve(&self, _: &ToolSpec, _: &Value) -> Result<(), String> {
        Err("no one is available to approve it here; re-run with --yes to approve".into())
    }
}

/// Talks to the user on the session's channel: messages and questions.
pub trait UserIo: Send + Sync {
    /// Delivers a message on `channel`. `Err` says why it could not.
    fn send(&self, channel: &str, text: &str) -> Result<(), String>;
    /// Asks a question and waits for the answer; `None` when nobody answered.
    fn ask(&self, question: &str, choices: &[String]) -> Option<String>;
    /// The channels this runtime can message on, and whether each is connected.
    fn channels(&self) -> Vec<(String, bool)>;
}

/// Turns a conversation transcript into a summary with a model, when one is configured.
pub trait Summarizer: Send + Sync {
    /// The summary, or `Err` with why the model failed.
    fn summarize(&self, transcript: &str) -> Result<String, String>;
}

/// Everything the runtime is built from.
pub struct RuntimeOptions {
    /// The loaded configuration.
    pub config: Config,
    /// The profile to own tools under (overrides `config.profile`).
    pub profile: Option<String>,
    /// The data folder (default: from config and environment).
    pub home: Option<PathBuf>,
    /// Who approves destructive calls.
    pub approver: Box<dyn Approver>,
    /// The user's channels.
    pub user_io: Box<dyn UserIo>,
    /// The model, for tools that can use one.
    pub summarizer: Option<Box<dyn Summarizer>>,
    /// Which toolsets the model sees (default: the configured platform, else `gateway`).
    pub selection: Option<Selection>,
    /// Extra policies (the board policy), checked after the gateway-wide ones.
    pub policies: Vec<Box<dyn Policy>>,
    /// Extra hooks, run after the built-in ones and before approval.
    pub hooks: Vec<Box<dyn Hook>>,
    /// The board (default: `config.board`, else the simulated board).
    pub board: Option<Arc<Board>>,
    /// Runs `runs = "peer"` tools in this process instead of forwarding them over MQTT: set
    /// for a sub-agent on `covo peer`, whose peer tools are the peer's own backends.
    pub local_peer: Option<LocalPeer>,
}

/// The in-process stand-in for the MQTT peer (see [`RuntimeOptions::local_peer`]). Peer tools
/// are available exactly when `host` serves them, and run through the same pipeline (validation,
/// policy, approval, audit) before `host` executes them.
pub struct LocalPeer {
    /// What runs the tools.
    pub host: Arc<dyn crate::peer::server::ToolHost>,
    /// Each call's deadline, from when it starts.
    pub timeout: std::time::Duration,
}

impl RuntimeOptions {
    /// Defaults for `config`: nobody approves, no channels, no model.
    pub fn new(config: Config) -> Self {
        RuntimeOptions {
            config,
            profile: None,
            home: None,
            approver: Box::new(NoApprover),
            user_io: Box::new(crate::user_io::Terminal),
            summarizer: None,
            selection: None,
            policies: Vec::new(),
            hooks: Vec::new(),
            board: None,
            local_peer: None,
        }
    }
}

/// Errors building a runtime from configuration.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The profile does not resolve.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A toolset does not resolve.
    #[error(transparent)]
    Toolset(#[from] ToolsetError),
    /// The board definition does not load.
    #[error(transparent)]
    Board(#[from] covo_hal_tools::board::BoardError),
}

/// The assembled tool runtime.
pub struct Runtime {
    config: Config,
    owned: Owned,
    toolsets: Toolsets,
    home: PathBuf,
    store: OnceLock<Store>,
    hooks: Vec<Box<dyn Hook>>,
    board: Arc<Board>,
    user_io: Box<dyn UserIo>,
    summarizer: Option<Box<dyn Summarizer>>,
    validators: Mutex<HashMap<&'static str, Arc<jsonschema::Validator>>>,
    search: OnceLock<SearchIndex>,
    peer: OnceLock<Option<crate::peer::mqtt::PeerLink>>,
    local_peer: Option<LocalPeer>,
}

/// How long the first use of the peer link waits for the retained peer births.
const PEER_SYNC: std::time::Duration = std::time::Duration::from_secs(2);

/// The deepest nesting of `tool_call` inside `tool_call`.
const MAX_DEPTH: u8 = 1;

impl Runtime {
    /// Builds a runtime: prunes the catalog to the profile and checks every toolset resolves.
    pub fn new(opts: RuntimeOptions) -> Result<Runtime, BuildError> {
        let catalog: Vec<&'static ToolDef> = crate::tools::all().collect();
        let profile = opts
            .profile
            .clone()
            .or_else(|| opts.config.profile.clone())
            .unwrap_or_else(|| "full".into());
        let owned = profile::resolve(&catalog, &profile, &opts.config.profiles)?;
        let toolsets = Toolsets::new(&catalog, &opts.config.toolsets)?;
        toolsets.validate()?;
        let mut policies: Vec<Box<dyn Policy>> = Vec::new();
        if opts.config.policy.read_only {
            policies.push(Box::new(ReadOnly));
        }
        let board = match opts.board {
            Some(b) => b,
            None => Arc::new(Board::load(opts.config.board.as_deref())?),
        };
        policies.push(Box::new(MqttPublishAllow {
            allow: opts
                .config
                .mqtt
                .as_ref()
                .map(|m| m.publish_allow.clone())
                .unwrap_or_default(),
        }));
        policies.push(Box::new(SwarmExpose {
            expose: opts.config.swarm.expose.clone(),
        }));
        policies.push(Box::new(BoardPolicyCheck {
            board: board.clone(),
        }));
        policies.extend(opts.policies);
        let selection = opts.selection.unwrap_or_else(|| {
            Selection::Platform(
                opts.config
                    .platform
                    .clone()
                    .unwrap_or_else(|| "gateway".into()),
            )
        });
        let mut hooks: Vec<Box<dyn Hook>> = vec![
            Box::new(ToolsetFilter::new(selection)),
            Box::new(PolicyHook::new(policies)),
            Box::new(PlanModeHook),
        ];
        hooks.extend(opts.hooks);
        hooks.push(Box::new(ApprovalHook::new(opts.approver)));
        let home = opts.home.clone().unwrap_or_else(|| opts.config.home_dir());
        Ok(Runtime {
            config: opts.config,
            owned,
            toolsets,
            home,
            store: OnceLock::new(),
            hooks,
            board,
            user_io: opts.user_io,
            summarizer: opts.summarizer,
            validators: Mutex::new(HashMap::new()),
            search: OnceLock::new(),
            peer: OnceLock::new(),
            local_peer: opts.local_peer,
        })
    }

    /// Uses this store instead of opening `$COVO_HOME/covo.db` (tests, benches).
    pub fn with_store(self, store: Store) -> Self {
        let _ = self.store.set(store);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The data folder (`$COVO_HOME`).
    pub fn home(&self) -> &std::path::Path {
        &self.home
    }

    /// The tools the profile owns.
    pub fn owned(&self) -> &Owned {
        &self.owned
    }

    /// Every toolset.
    pub fn toolsets(&self) -> &Toolsets {
        &self.toolsets
    }

    /// The user's channels.
    pub fn user_io(&self) -> &dyn UserIo {
        self.user_io.as_ref()
    }

    /// The model summarizer, when a model is configured.
    pub fn summarizer(&self) -> Option<&dyn Summarizer> {
        self.summarizer.as_deref()
    }

    /// The database, opened on first use under the data folder.
    pub fn store(&self) -> Result<&Store, StoreError> {
        if let Some(s) = self.store.get() {
            return Ok(s);
        }
        let s = Store::open_in(&self.home)?;
        Ok(self.store.get_or_init(|| s))
    }

    /// The MQTT link to the cloud peers: `None` without `[mqtt]` (or with a bad URL). Started on
    /// first use, which waits up to 2 s for the retained peer births.
    pub fn peer_link(&self) -> Option<&crate::peer::mqtt::PeerLink> {
        self.peer
            .get_or_init(|| {
                let cfg = self.config.mqtt.as_ref()?;
                match crate::peer::mqtt::PeerLink::start(cfg) {
                    Ok(link) => {
                        if !link.wait_synced(PEER_SYNC) {
                            tracing::warn!(url = cfg.url(), "MQTT broker not reachable yet");
                        }
                        Some(link)
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "MQTT link not started");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Whether a tool can run now.
    pub fn availability(&self, def: &ToolDef) -> Availability {
        if let Exec::Peer = def.exec {
            if let Some(local) = &self.local_peer {
                return if local.host.tools().iter().any(|t| t == def.spec.name) {
                    Availability::yes()
                } else {
                    Availability::no("this peer does not serve it")
                };
            }
            if self.config.mqtt.is_none() {
                return Availability::no("no MQTT broker configured");
            }
            return match self.peer_link() {
                None => Availability::no("MQTT link not started (see the log)"),
                Some(link) => match link.availability(def.spec.name) {
                    Ok(()) => Availability::yes(),
                    Err(reason) => Availability::no(reason),
                },
            };
        }
        let av = Availability::of(def);
        if !av.available {
            return av;
        }
        if (def.spec.toolset == "mqtt" || def.spec.name.starts_with("swarm_"))
            && self.config.mqtt.is_none()
        {
            return Availability::no("no MQTT broker configured");
        }
        if def.spec.name == "notify"
            && self.config.mqtt.is_none()
            && self.config.notify.webhook.is_none()
        {
            return Availability::no("no MQTT broker configured");
        }
        match self.board.missing(def.spec.toolset) {
            Some(reason) => Availability::no(reason),
            None => av,
        }
    }

    /// The tools other gateways may call here (`[swarm] expose`, owned, running locally and
    /// available now), in catalog order: what this gateway's birth advertises.
    pub fn swarm_served(&self) -> Vec<String> {
        let expose = SwarmExpose {
            expose: self.config.swarm.expose.clone(),
        };
        self.owned
            .tools
            .iter()
            .filter(|d| matches!(d.exec, Exec::Local(_)))
            .filter(|d| expose.exposes(&d.spec))
            .filter(|d| self.availability(d).available)
            .map(|d| d.spec.name.to_string())
            .collect()
    }

    /// The board.
    pub fn board(&self) -> &Arc<Board> {
        &self.board
    }

    /// The plan for a selection. Errors are the caller's to handle (the filter fails closed).
    pub fn plan(&self, selection: &Selection) -> Result<Plan, ToolsetError> {
        let active = selection.toolsets(&self.config.platforms);
        plan::plan(&self.owned, &self.toolsets, &active, &|t| {
            self.availability(t)
        })
    }

    /// The fail-closed plan: owned, available core tools.
    pub fn core_plan(&self) -> Plan {
        plan::core_only(&self.owned, &|t| self.availability(t))
    }

    /// Runs the `before_model_call` hooks in order and returns what the next model call carries.
    /// A failing hook resets the tools to the core plan (fail closed); later hooks still run.
    pub fn model_call(&self, session: &Session) -> ModelCall {
        let cx = HookCx { rt: self, session };
        let mut call = ModelCall::default();
        for h in &self.hooks {
            if let Err(e) = h.before_model_call(&cx, &mut call) {
                tracing::warn!(hook = h.name(), error = %e, "before_model_call failed; core tools only");
                let core = self.core_plan().visible;
                call.tools
                    .retain(|t| core.iter().any(|c| c.spec.name == t.spec.name));
                call.notes.push(format!("hook failed closed: {e}"));
            }
        }
        call
    }

    /// Runs the `after_model_call` hooks.
    pub fn after_model_call(&self, session: &Session, reply: &ModelReply<'_>) {
        let cx = HookCx { rt: self, session };
        for h in &self.hooks {
            h.after_model_call(&cx, reply);
        }
    }

    /// The search index over the owned tools, built on first use.
    pub fn search_index(&self) -> &SearchIndex {
        self.search
            .get_or_init(|| SearchIndex::build(&self.owned.tools))
    }

    /// Dispatches a call whose arguments are JSON text, as a model sends them.
    pub fn call_raw(
        &self,
        session: &Session,
        via: Via,
        name: &str,
        args: &str,
    ) -> Result<Value, CallError> {
        self.dispatch(session, via, name, Args::Raw(args), 0)
    }

    /// Dispatches a call whose arguments are already parsed.
    pub fn call(
        &self,
        session: &Session,
        via: Via,
        name: &str,
        args: Value,
    ) -> Result<Value, CallError> {
        self.dispatch(session, via, name, Args::Json(args), 0)
    }

    pub(crate) fn dispatch(
        &self,
        session: &Session,
        via: Via,
        name: &str,
        args: Args<'_>,
        depth: u8,
    ) -> Result<Value, CallError> {
        let started = Instant::now();
        let raw_text;
        let args_text = match &args {
            Args::Raw(s) => *s,
            Args::Json(v) => {
                raw_text = v.to_string();
                &raw_text
            }
        };
        let result = self.run_pipeline(session, via, name, args, depth);
        let (outcome, detail) = match &result {
            Ok(_) => ("ok".to_string(), None),
            Err(CallError::Respond(e)) => (error_kind(e), Some(e.to_string())),
            Err(CallError::Fatal(e)) => ("fatal".to_string(), Some(e.to_string())),
        };
        let entry = AuditEntry {
            session: &session.id,
            via: via.as_str(),
            tool: name,
            args: args_text,
            outcome: &outcome,
            detail: detail.as_deref(),
            micros: started.elapsed().as_micros() as u64,
        };
        match self.store() {
            Ok(store) => {
                if let Err(e) = store.audit(&entry) {
                    tracing::warn!(tool = name, error = %e, "audit log write failed");
                }
            }
            Err(e) => tracing::warn!(tool = name, error = %e, "audit log unavailable"),
        }
        tracing::debug!(tool = name, via = via.as_str(), outcome, "tool call");
        result
    }

    fn run_pipeline(
        &self,
        session: &Session,
        via: Via,
        name: &str,
        args: Args<'_>,
        depth: u8,
    ) -> Result<Value, CallError> {
        let def = self.lookup(name)?;
        let spec = &def.spec;
        let availability = self.availability(def);
        if let Exec::Missing = def.exec {
            return Err(ToolError::Unavailable {
                tool: name.into(),
                reason: availability
                    .reason
                    .unwrap_or_else(|| "not implemented".into()),
            }
            .into());
        }
        if !availability.available {
            return Err(ToolError::Unavailable {
                tool: name.into(),
                reason: availability.reason.unwrap_or_default(),
            }
            .into());
        }
        let args = match args {
            Args::Json(v) => v,
            Args::Raw(s) if s.trim().is_empty() => Value::Object(Default::default()),
            Args::Raw(s) => serde_json::from_str(s).map_err(|e| ToolError::MalformedJson {
                tool: name.into(),
                detail: e.to_string(),
            })?,
        };
        self.validate(spec, &args)?;
        let hook_cx = HookCx { rt: self, session };
        let invocation = ToolInvocation {
            spec,
            args: &args,
            via,
        };
        for h in &self.hooks {
            h.before_tool_call(&hook_cx, &invocation)?;
        }
        let cx = Cx {
            rt: self,
            session,
            tool: spec,
            via,
            depth,
        };
        let outcome = match def.exec {
            Exec::Local(exec) => exec(&cx, args.clone()),
            Exec::Peer => self.call_peer(spec, args.clone()),
            Exec::Missing => unreachable!("refused above"),
        };
        for h in &self.hooks {
            h.after_tool_call(&hook_cx, &invocation, &outcome);
        }
        outcome
    }

    /// Runs a `runs = "peer"` tool: artifact ids in its arguments go out as data, and
    /// artifacts in its result come back as files under the data folder, named by id.
    fn call_peer(&self, spec: &'static ToolSpec, args: Value) -> Result<Value, CallError> {
        let args = crate::artifacts::inline_inputs(&self.home, spec.name, args)?;
        let result = match &self.local_peer {
            // A sub-agent on the peer: the peer's own backends, in this process.
            Some(local) => local
                .host
                .call(spec.name, args, Instant::now() + local.timeout)?,
            None => match self.peer_link() {
                Some(link) => link.call(spec.name, args, spec.effect == Effect::Read)?,
                None => {
                    return Err(ToolError::Unavailable {
                        tool: spec.name.into(),
                        reason: "no MQTT broker configured".into(),
                    }
                    .into())
                }
            },
        };
        Ok(crate::artifacts::externalize(
            &self.home, spec.name, result,
        )?)
    }

    /// The owned tool called `name`, or the structured error that explains why there is none.
    pub fn lookup(&self, name: &str) -> Result<&'static ToolDef, ToolError> {
        if let Some(def) = self.owned.get(name) {
            return Ok(def);
        }
        if crate::tools::find(name).is_some() {
            return Err(ToolError::NotInProfile {
                tool: name.into(),
                profile: self.owned.profile.clone(),
            });
        }
        // Typos first (edit distance over owned names), then tools whose purpose matches.
        let mut scored: Vec<(f64, &str)> = self
            .owned
            .tools
            .iter()
            .map(|t| (strsim::jaro_winkler(name, t.spec.name), t.spec.name))
            .filter(|(score, _)| *score >= 0.85)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut did_you_mean: Vec<String> =
            scored.iter().take(3).map(|(_, n)| n.to_string()).collect();
        for h in self
            .search_index()
            .search(&name.replace(['_', '-'], " "), 3)
        {
            if did_you_mean.len() < 3 && !did_you_mean.iter().any(|n| n == h.tool.spec.name) {
                did_you_mean.push(h.tool.spec.name.to_string());
            }
        }
        Err(ToolError::UnknownTool {
            tool: name.into(),
            did_you_mean,
        })
    }

    /// Validates `args` against the tool's parameter schema, listing every problem.
    pub fn validate(&self, spec: &'static ToolSpec, args: &Value) -> Result<(), ToolError> {
        let validator = self.validator(spec);
        let problems: Vec<ArgProblem> = validator
            .iter_errors(args)
            .map(|e| ArgProblem {
                path: e.instance_path().to_string(),
                problem: e.to_string(),
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::InvalidArguments {
                tool: spec.name.into(),
                problems,
            })
        }
    }

    fn validator(&self, spec: &'static ToolSpec) -> Arc<jsonschema::Validator> {
        let mut cache = self.validators.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(spec.name)
            .or_insert_with(|| {
                // The conformance test compiles every schema, so this cannot fail at run time.
                Arc::new(
                    jsonschema::validator_for(&spec.params_json()).unwrap_or_else(|e| {
                        panic!("schema of {} does not compile: {e}", spec.name)
                    }),
                )
            })
            .clone()
    }

    /// Runs `name` as a nested call from `tool_call`: the full pipeline, one level deep at most.
    pub(crate) fn nested_call(
        &self,
        cx: &Cx<'_>,
        name: &str,
        args: Args<'_>,
    ) -> Result<Value, CallError> {
        if cx.depth >= MAX_DEPTH {
            return Err(cx.fail("tool_call cannot be nested inside another tool_call"));
        }
        let via = if cx.via == Via::Direct {
            Via::ToolCall
        } else {
            cx.via
        };
        self.dispatch(cx.session, via, name, args, cx.depth + 1)
    }
}

/// Arguments as received: JSON text from a model, or an already parsed value.
pub(crate) enum Args<'a> {
    Raw(&'a str),
    Json(Value),
}

fn error_kind(e: &ToolError) -> String {
    match serde_json::to_value(e) {
        Ok(Value::Object(m)) => m
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_string(),
        _ => "error".into(),
    }
}
