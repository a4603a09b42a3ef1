//! What an executor gets: the call's session, the tool being run, and narrow accessors to the
//! services it may need (store, board, peer link, the user's channels). Executors never see
//! the runtime itself: [`Cx`] reaches it through [`Services`], which `runtime::Runtime`
//! implements, so this module and everything that uses it sit below the runtime.

use crate::config::Config;
use crate::error::{CallError, ToolError};
use crate::hardware::{Board, Hardware};
use crate::link::PeerLink;
use crate::policy::{Approver, Via};
use crate::store::{Store, StoreError};
use covo_core::discovery::SearchIndex;
use covo_core::plan::{Plan, Selection};
use covo_core::profile::Owned;
use covo_core::spec::{Availability, ToolSpec};
use covo_core::toolset::ToolsetError;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The conversation a call belongs to and the channel its user is on.
#[derive(Clone)]
pub struct Session {
    /// Conversation id; also keys per-session state such as the to-do list and plan.
    pub id: String,
    /// The channel the user talks on (`cli`, `mqtt`, `web`, `telegram`, `mcp`).
    pub channel: String,
    /// Who approves this session's destructive calls, when it is not the runtime's approver:
    /// the user on the channel the session talks on (an MCP client through elicitation, a
    /// Telegram chat through buttons, the dashboard's pending approvals). The approval hook
    /// asks this one instead of `RuntimeOptions::approver`.
    pub approver: Option<Arc<dyn Approver>>,
}

impl Session {
    /// A session on `channel` with this id, approved by the runtime's approver.
    pub fn new(id: impl Into<String>, channel: impl Into<String>) -> Self {
        Session {
            id: id.into(),
            channel: channel.into(),
            approver: None,
        }
    }

    /// The same session, its destructive calls approved by `approver`.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }
}

impl PartialEq for Session {
    /// Two sessions are the same conversation on the same channel; who approves is not part
    /// of what a session is.
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.channel == other.channel
    }
}

impl Eq for Session {}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("channel", &self.channel)
            .field("approver", &self.approver.as_ref().map(|_| "session"))
            .finish()
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

/// Arguments as received: JSON text from a model, or an already parsed value.
pub enum Args<'a> {
    /// JSON text, parsed inside the pipeline (a parse error is the model's to fix).
    Raw(&'a str),
    /// An already parsed value.
    Json(Value),
}

/// What the pipeline offers to executors (through [`Cx`]) and to hooks. Implemented by
/// `runtime::Runtime`; the trait keeps the modules below the runtime from naming it.
pub trait Services: Send + Sync {
    /// The configuration.
    fn config(&self) -> &Config;
    /// The data folder (`$COVO_HOME`).
    fn home(&self) -> &Path;
    /// The database, opened on first use.
    fn store(&self) -> Result<&Store, StoreError>;
    /// The board.
    fn board(&self) -> &Arc<Board>;
    /// The MQTT link, started on first use; `None` without `[mqtt]`.
    fn peer_link(&self) -> Option<&PeerLink>;
    /// The user's channels.
    fn user_io(&self) -> &dyn UserIo;
    /// The model summarizer, when a model is configured.
    fn summarizer(&self) -> Option<&dyn Summarizer>;
    /// The owned tools.
    fn owned(&self) -> &Owned;
    /// Whether an owned tool can run now.
    fn availability(&self, spec: &ToolSpec) -> Availability;
    /// The owned tool called `name`, or the error that explains why there is none.
    fn lookup(&self, name: &str) -> Result<&'static ToolSpec, ToolError>;
    /// Validates arguments against a tool's schema.
    fn validate(&self, spec: &'static ToolSpec, args: &Value) -> Result<(), ToolError>;
    /// The BM25 index over the owned tools.
    fn search_index(&self) -> &SearchIndex;
    /// The visibility plan for a selection.
    fn plan(&self, selection: &Selection) -> Result<Plan, ToolsetError>;
    /// The fail-closed plan: owned, available core tools.
    fn core_plan(&self) -> Plan;
    /// Runs a call through the whole pipeline, audited (`tool_call`, a watch's action).
    fn dispatch(
        &self,
        session: &Session,
        via: Via,
        name: &str,
        args: Args<'_>,
        depth: u8,
    ) -> Result<Value, CallError>;
}

/// The deepest nesting of `tool_call` inside `tool_call`.
const TOOL_CALL_DEPTH: u8 = 1;

/// The deepest re-entry of the pipeline from inside a call, however it re-enters (`tool_call`'s
/// inner call, the action of a watch a reading fired, and that action's own readings): a call
/// at a greater depth is refused by the pipeline before it runs.
pub const MAX_DEPTH: u8 = 3;

/// The context of one executing call.
pub struct Cx<'a> {
    svc: &'a dyn Services,
    /// The session the call belongs to.
    pub session: &'a Session,
    /// The tool being run.
    pub tool: &'static ToolSpec,
    via: Via,
    depth: u8,
}

impl<'a> Cx<'a> {
    /// The context of one call (built by the pipeline).
    pub fn new(
        svc: &'a dyn Services,
        session: &'a Session,
        tool: &'static ToolSpec,
        via: Via,
        depth: u8,
    ) -> Self {
        Cx {
            svc,
            session,
            tool,
            via,
            depth,
        }
    }

    /// How the call reached the pipeline.
    pub fn via(&self) -> Via {
        self.via
    }

    /// The database, opened on first use.
    pub fn store(&self) -> Result<&'a Store, StoreError> {
        self.svc.store()
    }

    /// The configuration.
    pub fn config(&self) -> &'a Config {
        self.svc.config()
    }

    /// The data folder (`$COVO_HOME`), where artifacts and the database live.
    pub fn home(&self) -> &'a Path {
        self.svc.home()
    }

    /// The board: its definition and policy; the hardware opens on first use.
    pub fn board(&self) -> &'a Arc<Board> {
        self.svc.board()
    }

    /// The board's hardware, or the error the model sees when it cannot open.
    pub fn hardware(&self) -> Result<Arc<Hardware>, CallError> {
        self.svc
            .board()
            .hardware()
            .map_err(|e| self.fail(format!("the board is unavailable: {e}")))
    }

    /// The MQTT link, or the error the model sees without one.
    pub fn peer_link(&self) -> Result<&'a PeerLink, CallError> {
        if self.svc.config().mqtt.is_none() {
            return Err(self.fail("no MQTT broker configured"));
        }
        self.svc
            .peer_link()
            .ok_or_else(|| self.fail("the MQTT link did not start (see the log)"))
    }

    /// Whether the MQTT link is up (false without `[mqtt]`); never starts it.
    pub fn peer_connected(&self) -> bool {
        self.svc.config().mqtt.is_some() && self.svc.peer_link().is_some_and(|l| l.is_connected())
    }

    /// The user's channels: messages and questions.
    pub fn user_io(&self) -> &'a dyn UserIo {
        self.svc.user_io()
    }

    /// The model, for summaries, when one is configured.
    pub fn summarizer(&self) -> Option<&'a dyn Summarizer> {
        self.svc.summarizer()
    }

    /// The owned tool called `name`, or the structured error that explains why there is none
    /// (not in the profile, or unknown, with suggestions).
    pub fn lookup(&self, name: &str) -> Result<&'static ToolSpec, ToolError> {
        self.svc.lookup(name)
    }

    /// An owned tool by name: for calls another tool will make later (a schedule's or a
    /// watch's action), checked when the job is made.
    pub fn owned_tool(&self, name: &str) -> Option<&'static ToolSpec> {
        self.svc.owned().get(name)
    }

    /// Validates arguments against an owned tool's schema, listing every problem.
    pub fn validate(&self, spec: &'static ToolSpec, args: &Value) -> Result<(), ToolError> {
        self.svc.validate(spec, args)
    }

    /// The owned tools and their search index: for the discovery tools only, which
    /// genuinely search, describe and call other tools.
    pub fn discovery(&self) -> Discovery<'a> {
        Discovery { svc: self.svc }
    }

    /// Runs `name` as a nested call from `tool_call`: the full pipeline, one level deep at most.
    pub fn nested_call(&self, name: &str, args: Args<'_>) -> Result<Value, CallError> {
        if self.depth >= TOOL_CALL_DEPTH {
            return Err(self.fail("tool_call cannot be nested inside another tool_call"));
        }
        let via = if self.via == Via::Direct {
            Via::ToolCall
        } else {
            self.via
        };
        self.svc
            .dispatch(self.session, via, name, args, self.depth + 1)
    }

    /// Runs `name` as the action of a watch this call's reading fired (`sensor_read`): the
    /// whole pipeline as `Via::Watch` in the watch's session, one level deeper than this call,
    /// so a watch whose action reads the sensor that fires it stops at [`MAX_DEPTH`].
    pub fn watch_action(
        &self,
        session: &Session,
        name: &str,
        args: Value,
    ) -> Result<Value, CallError> {
        self.svc
            .dispatch(session, Via::Watch, name, Args::Json(args), self.depth + 1)
    }

    /// How deep in the pipeline this call runs: 0 for a call from outside.
    pub fn depth(&self) -> u8 {
        self.depth
    }

    /// Deserializes the (already schema-validated) arguments into the executor's type.
    pub fn args<T: DeserializeOwned>(&self, args: Value) -> Result<T, CallError> {
        serde_json::from_value(args)
            .map_err(|e| CallError::Respond(ToolError::invalid(self.tool.name, "", e.to_string())))
    }

    /// A respond-to-model failure of this tool.
    pub fn fail(&self, message: impl Into<String>) -> CallError {
        CallError::Respond(ToolError::failed(self.tool.name, message))
    }
}

/// What the discovery tools see: the owned tools, searchable and describable.
pub struct Discovery<'a> {
    svc: &'a dyn Services,
}

impl<'a> Discovery<'a> {
    /// The owned tools.
    pub fn owned(&self) -> &'a Owned {
        self.svc.owned()
    }

    /// The BM25 index over the owned tools.
    pub fn index(&self) -> &'a SearchIndex {
        self.svc.search_index()
    }

    /// Whether an owned tool can run now.
    pub fn availability(&self, spec: &ToolSpec) -> Availability {
        self.svc.availability(spec)
    }
}
