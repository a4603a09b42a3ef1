//! What an executor gets: the call's session, the tool being run, and narrow accessors to the
//! services it may need. Executors never see the rest of the runtime's state.

use crate::error::{CallError, ToolError};
use crate::runtime::{Runtime, Via};
use crate::spec::ToolSpec;
use crate::store::{Store, StoreError};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The conversation a call belongs to and the channel its user is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Conversation id; also keys per-session state such as the to-do list and plan.
    pub id: String,
    /// The channel the user talks on (`cli`, `mqtt`, `web`).
    pub channel: String,
}

impl Session {
    /// A session on `channel` with this id.
    pub fn new(id: impl Into<String>, channel: impl Into<String>) -> Self {
        Session {
            id: id.into(),
            channel: channel.into(),
        }
    }
}

/// The context of one executing call.
pub struct Cx<'a> {
    pub(crate) rt: &'a Runtime,
    /// The session the call belongs to.
    pub session: &'a Session,
    /// The tool being run.
    pub tool: &'static ToolSpec,
    pub(crate) via: Via,
    pub(crate) depth: u8,
}

impl<'a> Cx<'a> {
    /// The database, opened on first use.
    pub fn store(&self) -> Result<&'a Store, StoreError> {
        self.rt.store()
    }

    /// The runtime, for discovery tools that search, describe and call other tools.
    pub fn runtime(&self) -> &'a Runtime {
        self.rt
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
