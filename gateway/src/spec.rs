//! A tool as the gateway runs it: its spec from the catalog (`covo_core::catalog`) and its
//! executor, side by side in each family's `TOOLS` table under `tools/`.
//!
//! The spec types themselves live in `covo_core::spec` and are re-exported here.

use crate::config::Config;
use crate::error::CallError;
use crate::exec::Cx;
pub use crate::hardware::Part;
use crate::hardware::{Access, Board};
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
    /// For local tools that need something (the broker, a part of the board, a program):
    /// what, declared on the tool's line of its family's `TOOLS` table (`.needs`, `.when`).
    pub requires: Option<Requires>,
}

/// What a tool needs to be available, beyond its executor.
#[derive(Debug, Clone, Copy)]
pub enum Requires {
    /// One of the needs the runtime knows how to judge.
    Need(Need),
    /// The tool's own check (a program on the `PATH`, a device).
    When(fn(&AvailCx<'_>) -> Availability),
}

/// A need the runtime judges the same way for every tool that declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// An MQTT broker (`[mqtt]`): the `mqtt` toolset and the swarm tools.
    Broker,
    /// A part of the board, declared and (on a Linux board) opened: `Board::missing`.
    Board(Part),
}

impl Need {
    /// Whether the need is met here, with the reason when it is not.
    pub fn check(self, cx: &AvailCx<'_>) -> Availability {
        match self {
            Need::Broker if !cx.mqtt_configured() => Availability::no("no MQTT broker configured"),
            Need::Broker => Availability::yes(),
            Need::Board(part) => match cx.board.missing(part) {
                Some(reason) => Availability::no(reason),
                None => Availability::yes(),
            },
        }
    }
}

/// What a tool's availability is judged against: the configuration and the board.
#[derive(Clone, Copy)]
pub struct AvailCx<'a> {
    /// The loaded configuration.
    pub config: &'a Config,
    /// The board (its hardware opened only when a need asks about a Linux board's parts).
    pub board: &'a Board,
}

impl AvailCx<'_> {
    /// Whether an MQTT broker is configured (`[mqtt]`).
    pub fn mqtt_configured(&self) -> bool {
        self.config.mqtt.is_some()
    }
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
    pub const fn when(self, requires: fn(&AvailCx<'_>) -> Availability) -> ToolDef {
        assert!(self.requires.is_none(), "a tool declares one requirement");
        ToolDef {
            requires: Some(Requires::When(requires)),
            ..self
        }
    }

    /// The same tool, available only when `need` is met (the broker, a part of the board).
    pub const fn needs(self, need: Need) -> ToolDef {
        assert!(self.requires.is_none(), "a tool declares one requirement");
        ToolDef {
            requires: Some(Requires::Need(need)),
            ..self
        }
    }

    /// What this call touches on the board (nothing for tools that are not hardware tools).
    pub fn access(&self, board: &BoardDef, args: &Value) -> Vec<Access> {
        self.access.map_or_else(Vec::new, |f| f(board, args))
    }

    /// The built-in availability of a tool: whether it has an executor and what it declares it
    /// needs is there. Peer tools need a runtime with a live peer (`Runtime::availability`); on
    /// their own they are unavailable.
    pub fn availability(&self, cx: &AvailCx<'_>) -> Availability {
        match self.exec {
            Exec::Local(_) => match self.requires {
                None => Availability::yes(),
                Some(Requires::Need(need)) => need.check(cx),
                Some(Requires::When(f)) => f(cx),
            },
            Exec::Peer => Availability::no("no MQTT broker configured"),
            Exec::Missing => Availability::no("not implemented"),
            Exec::Mcp => Availability::no("no MCP client in this runtime"),
        }
    }
}
