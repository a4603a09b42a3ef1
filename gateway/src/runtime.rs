//! The tool runtime: the owned tools, the toolsets, and the one dispatch pipeline every call goes
//! through, whoever makes it (the model directly, `tool_call`, the CLI, MQTT, a remote peer):
//!
//! lookup → parse → validate against the schema → policy → approval (destructive) → execute → audit.

use crate::config::Config;
use crate::error::{CallError, ToolError};
pub use crate::exec::{Args, Summarizer, UserIo};
use crate::exec::{Cx, Services, Session};
use crate::hardware::Board;
use crate::hooks::{
    ApprovalHook, Hook, HookCx, ModelCall, ModelReply, PlanModeHook, PolicyHook, ToolInvocation,
    ToolsetFilter,
};
use crate::policy::BoardPolicyCheck;
pub use crate::policy::{
    Approver, AutoApprove, MqttPublishAllow, NoApprover, Policy, ReadOnly, Refusal, SamplerBounds,
    SwarmExpose, Via, SWARM_DEFAULT_TOOLSETS,
};
use crate::spec::{AvailCx, Availability, Effect, Exec, ToolDef, ToolSpec};
use crate::store::{AuditEntry, Store, StoreError};
use covo_core::catalog;
use covo_core::discovery::SearchIndex;
use covo_core::plan::{self, Plan, Selection};
use covo_core::profile::{self, Owned, ProfileError};
use covo_core::toolset::{ToolsetError, Toolsets};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Everything the runtime is built from.
pub struct RuntimeOptions {
    /// The loaded configuration.
    pub config: Config,
    /// The tools it can run: the catalog's specs with their executors (`tools::all()`; the
    /// runtime sits below the tools and never names them).
    pub tools: Vec<&'static ToolDef>,
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
    pub host: Arc<dyn covo_wire::host::ToolHost>,
    /// Each call's deadline, from when it starts.
    pub timeout: std::time::Duration,
}

impl RuntimeOptions {
    /// Defaults for `config` and these tools: nobody approves, no channels, no model.
    /// `covo::tools::options(config)` gives every built-in tool.
    pub fn with_tools(config: Config, tools: Vec<&'static ToolDef>) -> Self {
        RuntimeOptions {
            config,
            tools,
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
    Board(#[from] covo_board::board::BoardError),
}

/// The assembled tool runtime.
pub struct Runtime {
    config: Config,
    owned: Owned,
    /// The executors of the owned tools, by name.
    defs: HashMap<&'static str, &'static ToolDef>,
    toolsets: Toolsets,
    home: PathBuf,
    store: OnceLock<Store>,
    hooks: Vec<Box<dyn Hook>>,
    board: Arc<Board>,
    user_io: Box<dyn UserIo>,
    summarizer: Option<Box<dyn Summarizer>>,
    validators: crate::schema::Validators,
    search: OnceLock<SearchIndex>,
    peer: OnceLock<Option<crate::link::PeerLink>>,
    local_peer: Option<LocalPeer>,
    /// The external MCP servers (`[mcp.servers]`), when any is configured.
    #[cfg(feature = "mcp")]
    mcp: Option<crate::mcp_client::McpClients>,
    /// Every external MCP tool known, owned or not (to tell "not in profile" from "unknown").
    external: Vec<&'static ToolSpec>,
}

/// How long the first use of the peer link waits for the retained peer births.
const PEER_SYNC: std::time::Duration = std::time::Duration::from_secs(2);

impl Runtime {
    /// Builds a runtime: prunes the catalog to the profile and checks every toolset resolves.
    #[cfg_attr(not(feature = "mcp"), allow(unused_mut))]
    pub fn new(mut opts: RuntimeOptions) -> Result<Runtime, BuildError> {
        let home = opts.home.clone().unwrap_or_else(|| opts.config.home_dir());
        // External MCP servers' tools join the catalog (from each server's cached list).
        let servers: Vec<String> = opts.config.mcp.servers.keys().cloned().collect();
        #[cfg(feature = "mcp")]
        let mcp = crate::mcp_client::McpClients::new(&opts.config.mcp.servers, &home);
        #[cfg(feature = "mcp")]
        if let Some(m) = &mcp {
            opts.tools.extend(m.defs().iter().copied());
        }
        #[cfg(not(feature = "mcp"))]
        if !servers.is_empty() {
            tracing::warn!("[mcp.servers] ignored: this covo is built without the `mcp` feature");
        }
        let external: Vec<&'static ToolSpec> = opts
            .tools
            .iter()
            .filter(|d| matches!(d.exec, Exec::Mcp))
            .map(|d| d.spec)
            .collect();
        let catalog: Vec<&'static ToolSpec> = opts.tools.iter().map(|d| d.spec).collect();
        let profile = opts
            .profile
            .clone()
            .or_else(|| opts.config.profile.clone())
            .unwrap_or_else(|| "full".into());
        let owned = profile::resolve_with(&catalog, &profile, &opts.config.profiles, &servers)?;
        let toolsets = Toolsets::new_with(&catalog, &opts.config.toolsets, &servers)?;
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
        policies.push(Box::new(SamplerBounds));
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
        let defs = opts
            .tools
            .iter()
            .filter(|d| owned.owns(d.spec.name))
            .map(|d| (d.spec.name, *d))
            .collect();
        Ok(Runtime {
            config: opts.config,
            owned,
            defs,
            toolsets,
            home,
            store: OnceLock::new(),
            hooks,
            board,
            user_io: opts.user_io,
            summarizer: opts.summarizer,
            validators: crate::schema::Validators::default(),
            search: OnceLock::new(),
            peer: OnceLock::new(),
            local_peer: opts.local_peer,
            #[cfg(feature = "mcp")]
            mcp,
            external,
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
    /// first use, which waits up to 2 s for the retained peer births. It publishes no gateway
    /// status: only the daemon owns that ([`Runtime::presence_link`]).
    pub fn peer_link(&self) -> Option<&crate::link::PeerLink> {
        self.link_as(crate::link::Presence::None)
    }

    /// The MQTT link, started as the owner of this gateway's presence (its retained birth, its
    /// `offline` and its Will on `P/gateways/G/status`): for `covo run` only, and before any
    /// other use of the link.
    pub fn presence_link(&self) -> Option<&crate::link::PeerLink> {
        let link = self.link_as(crate::link::Presence::Owner);
        if let Some(l) = link.filter(|l| l.presence() != crate::link::Presence::Owner) {
            tracing::warn!(
                gateway = l.gateway_id(),
                "the MQTT link started before the daemon: this gateway publishes no status"
            );
        }
        link
    }

    fn link_as(&self, presence: crate::link::Presence) -> Option<&crate::link::PeerLink> {
        self.peer
            .get_or_init(|| {
                let cfg = self.config.mqtt.as_ref()?;
                match crate::link::PeerLink::start_as(cfg, presence) {
                    Ok(link) => {
                        if !link.wait_synced(PEER_SYNC) {
                            tracing::warn!(
                                url = %cfg.url_shown(),
                                "MQTT broker not reachable yet"
                            );
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

    /// The executor of an owned tool.
    fn def(&self, spec: &ToolSpec) -> Option<&'static ToolDef> {
        self.defs.get(spec.name).copied()
    }

    /// Whether an owned tool can run now.
    pub fn availability(&self, spec: &ToolSpec) -> Availability {
        let Some(def) = self.def(spec) else {
            return Availability::no(format!("not owned under profile '{}'", self.owned.profile));
        };
        if let Exec::Peer = def.exec {
            if let Some(local) = &self.local_peer {
                return if local.host.tools().iter().any(|t| t == spec.name) {
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
                Some(link) => match link.availability(spec.name) {
                    Ok(()) => Availability::yes(),
                    Err(reason) => Availability::no(reason),
                },
            };
        }
        if let Exec::Mcp = def.exec {
            #[cfg(feature = "mcp")]
            if let Some(mcp) = &self.mcp {
                return mcp.availability(spec);
            }
            return def.availability(&self.avail_cx());
        }
        // What the tool needs is declared on its def (`ToolDef::needs`, `ToolDef::when`).
        def.availability(&self.avail_cx())
    }

    /// What availability is judged against.
    fn avail_cx(&self) -> AvailCx<'_> {
        AvailCx {
            config: &self.config,
            board: &self.board,
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
            .filter(|s| {
                self.def(s)
                    .is_some_and(|d| matches!(d.exec, Exec::Local(_) | Exec::Typed(_)))
            })
            .filter(|s| expose.exposes(s))
            .filter(|s| self.availability(s).available)
            .map(|s| s.name.to_string())
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
                call.tools.retain(|t| core.iter().any(|c| c.name == t.name));
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

    fn dispatch(
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
        if depth > crate::exec::MAX_DEPTH {
            return Err(ToolError::Failed {
                tool: name.into(),
                message: format!(
                    "refused: the call is nested {depth} deep (a tool_call's inner call, a \
                     watch's action, that action's own watches…), beyond the limit of {}",
                    crate::exec::MAX_DEPTH
                ),
                hint: Some("a watch whose action fires the same watch again stops here".into()),
            }
            .into());
        }
        let spec = self.lookup(name)?;
        let def = self.def(spec).ok_or_else(|| ToolError::Unavailable {
            tool: name.into(),
            reason: "no executor is registered for it".into(),
        })?;
        let availability = self.availability(spec);
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
        // Parsed once: the policy judges what this typed value touches, and the executor gets
        // this same value.
        let prepared = def.prepare(self.board.def(), &args)?;
        let access = prepared
            .as_ref()
            .map_or_else(Vec::new, |p| p.access.clone());
        let invocation = ToolInvocation {
            spec,
            args: &args,
            via,
            access: &access,
        };
        for h in &self.hooks {
            h.before_tool_call(&hook_cx, &invocation)?;
        }
        let cx = Cx::new(self, session, spec, via, depth);
        let outcome = match (def.exec, prepared) {
            (Exec::Typed(_), Some(call)) => call.run(&cx),
            (Exec::Local(exec), _) => exec(&cx, args.clone()),
            (Exec::Peer, _) => self.call_peer(spec, args.clone()),
            (Exec::Mcp, _) => self.call_mcp(spec, args.clone()),
            (Exec::Typed(_), None) | (Exec::Missing, _) => unreachable!("refused above"),
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

    /// Runs an external MCP server's tool (`[mcp.servers]`).
    fn call_mcp(&self, spec: &'static ToolSpec, args: Value) -> Result<Value, CallError> {
        #[cfg(feature = "mcp")]
        if let Some(mcp) = &self.mcp {
            return mcp.call(spec, args);
        }
        let _ = args;
        Err(ToolError::Unavailable {
            tool: spec.name.into(),
            reason: "no MCP client in this runtime".into(),
        }
        .into())
    }

    /// The external MCP servers' clients, when any server is configured.
    #[cfg(feature = "mcp")]
    pub fn mcp_clients(&self) -> Option<&crate::mcp_client::McpClients> {
        self.mcp.as_ref()
    }

    /// The owned tool called `name`, or the structured error that explains why there is none.
    pub fn lookup(&self, name: &str) -> Result<&'static ToolSpec, ToolError> {
        if let Some(def) = self.owned.get(name) {
            return Ok(def);
        }
        if catalog::find(name).is_some() || self.external.iter().any(|t| t.name == name) {
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
            .map(|t| (strsim::jaro_winkler(name, t.name), t.name))
            .filter(|(score, _)| *score >= 0.85)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut did_you_mean: Vec<String> =
            scored.iter().take(3).map(|(_, n)| n.to_string()).collect();
        for h in self
            .search_index()
            .search(&name.replace(['_', '-'], " "), 3)
        {
            if did_you_mean.len() < 3 && !did_you_mean.iter().any(|n| n == h.tool.name) {
                did_you_mean.push(h.tool.name.to_string());
            }
        }
        Err(ToolError::UnknownTool {
            tool: name.into(),
            did_you_mean,
        })
    }

    /// Validates `args` against the tool's parameter schema, listing every problem.
    pub fn validate(&self, spec: &'static ToolSpec, args: &Value) -> Result<(), ToolError> {
        self.validators.check(spec, args)
    }
}

impl Services for Runtime {
    fn config(&self) -> &Config {
        &self.config
    }

    fn home(&self) -> &std::path::Path {
        &self.home
    }

    fn store(&self) -> Result<&Store, StoreError> {
        Runtime::store(self)
    }

    fn board(&self) -> &Arc<Board> {
        &self.board
    }

    fn peer_link(&self) -> Option<&crate::link::PeerLink> {
        Runtime::peer_link(self)
    }

    fn user_io(&self) -> &dyn UserIo {
        self.user_io.as_ref()
    }

    fn summarizer(&self) -> Option<&dyn Summarizer> {
        self.summarizer.as_deref()
    }

    fn owned(&self) -> &Owned {
        &self.owned
    }

    fn availability(&self, spec: &ToolSpec) -> Availability {
        Runtime::availability(self, spec)
    }

    fn lookup(&self, name: &str) -> Result<&'static ToolSpec, ToolError> {
        Runtime::lookup(self, name)
    }

    fn validate(&self, spec: &'static ToolSpec, args: &Value) -> Result<(), ToolError> {
        Runtime::validate(self, spec, args)
    }

    fn search_index(&self) -> &SearchIndex {
        Runtime::search_index(self)
    }

    fn plan(&self, selection: &Selection) -> Result<Plan, ToolsetError> {
        Runtime::plan(self, selection)
    }

    fn core_plan(&self) -> Plan {
        Runtime::core_plan(self)
    }

    fn dispatch(
        &self,
        session: &Session,
        via: Via,
        name: &str,
        args: Args<'_>,
        depth: u8,
    ) -> Result<Value, CallError> {
        Runtime::dispatch(self, session, via, name, args, depth)
    }
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
