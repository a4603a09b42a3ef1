//! A tool as the gateway runs it: its spec from the catalog (`covo_core::catalog`) and its
//! executor, side by side in each family's `TOOLS` table under `tools/`.
//!
//! The spec types themselves live in `covo_core::spec` and are re-exported here.

use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware::Access;
pub use covo_core::spec::{Availability, Effect, Profiles, Runs, ToolSpec};
use covo_hal_tools::board::BoardDef;
use serde_json::Value;

/// An executor for a tool that runs on the gateway.
pub type ExecFn = fn(&Cx<'_>, Value) -> Result<Value, CallError>;

/// What a call of a hardware tool touches on the board, from its validated arguments: the
/// policy judges these, not the tool's name (`policy::BoardPolicyCheck`).
pub type AccessFn = fn(&BoardDef, &Value) -> Vec<Access>;

/// How a tool is executed.
#[derive(Clone, Copy)]
pub enum Exec {
    /// Runs here through this function.
    Local(ExecFn),
    /// Forwarded over MQTT to a cloud peer (`link::PeerLink`); available only while a live
    /// peer advertises the tool.
    Peer,
    /// Not implemented yet: registered, listed as unavailable, never sent to the model.
    Missing,
    /// A tool of an external MCP server (`[mcp.servers.NAME]`, `mcp_client`): called on that
    /// server; available while the server runs or can be started.
    Mcp,
}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exec::Local(_) => f.write_str("Local"),
            Exec::Peer => f.write_str("Peer"),
            Exec::Missing => f.write_str("Missing"),
            Exec::Mcp => f.write_str("Mcp"),
        }
    }
}

/// A tool: its spec (from the catalog) and its executor.
#[derive(Debug)]
pub struct ToolDef {
    /// The static description, the catalog's entry.
    pub spec: &'static ToolSpec,
    /// How it runs.
    pub exec: Exec,
    /// For hardware tools: what a call touches on the board.
    pub access: Option<AccessFn>,
    /// For local tools that need something of the system (a program, a device): whether it is
    /// there, with the reason when it is not.
    pub requires: Option<fn(&crate::config::Config) -> Availability>,
}

impl ToolDef {
    /// A tool that runs here through `exec`.
    pub const fn local(spec: &'static ToolSpec, exec: ExecFn) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Local(exec),
            access: None,
            requires: None,
        }
    }

    /// A tool forwarded to a cloud peer.
    pub const fn peer(spec: &'static ToolSpec) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Peer,
            access: None,
            requires: None,
        }
    }

    /// A tool of an external MCP server (its spec built from the server's `tools/list`).
    pub const fn mcp(spec: &'static ToolSpec) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Mcp,
            access: None,
            requires: None,
        }
    }

    /// A tool with no executor yet.
    pub const fn missing(spec: &'static ToolSpec) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Missing,
            access: None,
            requires: None,
        }
    }

    /// The same tool, declaring what its calls touch on the board.
    pub const fn with_access(self, access: AccessFn) -> ToolDef {
        ToolDef {
            access: Some(access),
            ..self
        }
    }

    /// The same tool, available only when `requires` says so (checked each time availability
    /// is asked, so installing the program makes the tool appear).
    pub const fn when(self, requires: fn(&crate::config::Config) -> Availability) -> ToolDef {
        ToolDef {
            requires: Some(requires),
            ..self
        }
    }

    /// What this call touches on the board (nothing for tools that are not hardware tools).
    pub fn access(&self, board: &BoardDef, args: &Value) -> Vec<Access> {
        self.access.map_or_else(Vec::new, |f| f(board, args))
    }

    /// The built-in availability of a tool: whether it has an executor. Peer tools need a
    /// runtime with a live peer (`Runtime::availability`); on their own they are unavailable.
    pub fn availability(&self, config: &crate::config::Config) -> Availability {
        match self.exec {
            Exec::Local(_) => self.requires.map_or_else(Availability::yes, |f| f(config)),
            Exec::Peer => Availability::no("no MQTT broker configured"),
            Exec::Missing => Availability::no("not implemented"),
            Exec::Mcp => Availability::no("no MCP client in this runtime"),
        }
    }
}
