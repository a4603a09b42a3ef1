//! A tool as the gateway runs it: its spec from the catalog (`covo_core::catalog`) and its
//! executor, side by side in each family's `TOOLS` table under `tools/`.
//!
//! A tool's arguments are read once: the pipeline validates the model's JSON against the
//! spec's schema, then [`ToolArgs::parse`] turns it into the tool's typed value (resolving the
//! names the board declares), the board policy judges [`ToolArgs::access`] of that value, and
//! the executor receives that same value. No executor reads raw JSON, and nothing on the
//! policy path parses leniently.
//!
//! The spec types themselves live in `covo_core::spec` and are re-exported here.

use crate::config::Config;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
pub use crate::hardware::Part;
use crate::hardware::{not_found, Access, Board};
use covo_board::board::BoardDef;
use covo_board::resolve::ResolveError;
use covo_board::values::{self, ValueError};
pub use covo_core::spec::{Availability, Effect, Profiles, Runs, ToolSpec};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A call's arguments as the tool's own type, read once from its validated JSON.
pub trait ToolArgs: Sized + Send + 'static {
    /// Reads the arguments (already valid against the tool's schema). Names the board declares
    /// (a device's pin, a PWM device's channel, the default bus, a port's name) are resolved
    /// here, so the policy and the executor see the same numbers.
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError>;

    /// What this call touches on the board: the board policy judges these (nothing for tools
    /// that touch no hardware).
    fn access(&self) -> Vec<Access> {
        Vec::new()
    }
}

/// Tools without arguments.
impl ToolArgs for () {
    fn parse(_: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(())
    }
}

/// What [`ToolArgs::parse`] reads: the tool, the board's definition and the validated JSON.
pub struct Parse<'a> {
    /// The tool's name, for errors.
    pub tool: &'static str,
    /// The board's definition (the hardware is not opened to parse).
    pub board: &'a BoardDef,
    /// The arguments, valid against the tool's schema.
    pub args: &'a Value,
}

impl Parse<'_> {
    /// Argument `key` read with `f`, if present.
    pub fn opt<T>(
        &self,
        key: &str,
        f: impl Fn(&str, &Value) -> Result<T, ValueError>,
    ) -> Result<Option<T>, ToolError> {
        self.args
            .get(key)
            .filter(|v| !v.is_null())
            .map(|v| f(key, v))
            .transpose()
            .map_err(|e| ToolError::invalid(self.tool, &e.field, e.problem))
    }

    /// Required argument `key` read with `f`.
    pub fn req<T>(
        &self,
        key: &str,
        f: impl Fn(&str, &Value) -> Result<T, ValueError>,
    ) -> Result<T, ToolError> {
        self.opt(key, f)?.ok_or_else(|| self.missing(key))
    }

    /// An optional integer of at most `max`.
    pub fn int(&self, key: &str, max: u64) -> Result<Option<u64>, ToolError> {
        self.opt(key, |k, v| values::bounded(k, v, max))
    }

    /// An optional number.
    pub fn number(&self, key: &str) -> Result<Option<f64>, ToolError> {
        self.opt(key, |k, v| {
            v.as_f64().ok_or_else(|| ValueError {
                field: format!("/{k}"),
                problem: "must be a number".into(),
            })
        })
    }

    /// An optional string.
    pub fn str(&self, key: &str) -> Result<Option<String>, ToolError> {
        self.opt(key, |k, v| {
            v.as_str().map(str::to_string).ok_or_else(|| ValueError {
                field: format!("/{k}"),
                problem: "must be a string".into(),
            })
        })
    }

    /// The error for a missing required argument.
    pub fn missing(&self, key: &str) -> ToolError {
        ToolError::invalid(self.tool, &format!("/{key}"), "is required")
    }

    /// An invalid-argument error at `/key`.
    pub fn invalid(&self, key: &str, problem: impl Into<String>) -> ToolError {
        ToolError::invalid(self.tool, &format!("/{key}"), problem)
    }

    /// A name the board does not resolve, as the error the model sees.
    pub fn hw(&self, e: ResolveError) -> ToolError {
        match e {
            ResolveError::NotFound(m) => not_found(self.tool, m),
        }
    }

    /// The whole arguments object as a serde type (for tools whose arguments are plain data);
    /// the error points at the offending field.
    pub fn serde<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        serde_path_to_error::deserialize(self.args).map_err(|e| {
            let path = e.path().to_string();
            let pointer = if path == "." {
                String::new()
            } else {
                format!("/{}", path.replace('.', "/"))
            };
            ToolError::invalid(self.tool, &pointer, e.into_inner().to_string())
        })
    }
}

/// An executor over typed arguments: `run` receives the value the policy judged.
pub struct Typed<A> {
    /// The executor.
    pub run: fn(&Cx<'_>, A) -> Result<Value, CallError>,
}

/// An executor bound to its parsed arguments, run once.
type BoundRun = Box<dyn FnOnce(&Cx<'_>) -> Result<Value, CallError> + Send>;

/// A call whose arguments are parsed: what it touches, and the executor holding the parsed
/// value, ready to run once the policy has judged `access`.
pub struct Prepared {
    /// What the call touches on the board (`ToolArgs::access` of the parsed value).
    pub access: Vec<Access>,
    run: BoundRun,
}

impl Prepared {
    /// Runs the executor on the parsed value.
    pub fn run(self, cx: &Cx<'_>) -> Result<Value, CallError> {
        (self.run)(cx)
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

/// Parses a call's arguments into the executor's type: what `Exec::Typed` holds, with the
/// argument type erased so one table holds every tool.
pub trait Prepare: Sync {
    /// Parses and binds the arguments; the result's `access` is what the policy judges.
    fn prepare(&self, p: &Parse<'_>) -> Result<Prepared, ToolError>;
}

impl<A: ToolArgs> Prepare for Typed<A> {
    fn prepare(&self, p: &Parse<'_>) -> Result<Prepared, ToolError> {
        let args = A::parse(p)?;
        let access = args.access();
        let run = self.run;
        Ok(Prepared {
            access,
            run: Box::new(move |cx| run(cx, args)),
        })
    }
}

/// An executor for a tool that runs on the gateway, over the raw JSON (tools not yet typed).
pub type ExecFn = fn(&Cx<'_>, Value) -> Result<Value, CallError>;

/// How a tool is executed.
#[derive(Clone, Copy)]
pub enum Exec {
    /// Runs here through this function.
    Local(ExecFn),
    /// Runs here on typed arguments: parsed once, judged, then run (`Prepare`).
    Typed(&'static dyn Prepare),
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
            Exec::Typed(_) => f.write_str("Typed"),
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
            requires: None,
        }
    }

    /// A tool that runs here on typed arguments (`Typed { run }`).
    pub const fn typed(spec: &'static ToolSpec, exec: &'static dyn Prepare) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Typed(exec),
            requires: None,
        }
    }

    /// A tool forwarded to a cloud peer.
    pub const fn peer(spec: &'static ToolSpec) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Peer,
            requires: None,
        }
    }

    /// A tool of an external MCP server (its spec built from the server's `tools/list`).
    pub const fn mcp(spec: &'static ToolSpec) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Mcp,
            requires: None,
        }
    }

    /// A tool with no executor (yet, or in this build): registered, listed as unavailable,
    /// never sent to the model. `.when(why)` on it says why it is missing (a build without the
    /// hardware, `tools/nohal.rs`); otherwise it is "not implemented".
    pub const fn missing(spec: &'static ToolSpec) -> ToolDef {
        ToolDef {
            spec,
            exec: Exec::Missing,
            requires: None,
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

    /// Parses a call's arguments for this tool: the typed value bound to its executor and
    /// what it touches (`None` for tools that run elsewhere or on raw JSON, which touch no
    /// board).
    pub fn prepare(&self, board: &BoardDef, args: &Value) -> Result<Option<Prepared>, ToolError> {
        match self.exec {
            Exec::Typed(t) => t
                .prepare(&Parse {
                    tool: self.spec.name,
                    board,
                    args,
                })
                .map(Some),
            _ => Ok(None),
        }
    }

    /// The built-in availability of a tool: whether it has an executor and what it declares it
    /// needs is there. Peer tools need a runtime with a live peer (`Runtime::availability`); on
    /// their own they are unavailable.
    pub fn availability(&self, cx: &AvailCx<'_>) -> Availability {
        match self.exec {
            Exec::Local(_) | Exec::Typed(_) => match self.requires {
                None => Availability::yes(),
                Some(Requires::Need(need)) => need.check(cx),
                Some(Requires::When(f)) => f(cx),
            },
            Exec::Peer => Availability::no("no MQTT broker configured"),
            Exec::Missing => match self.requires {
                Some(Requires::When(why)) => why(cx),
                _ => Availability::no("not implemented"),
            },
            Exec::Mcp => Availability::no("no MCP client in this runtime"),
        }
    }
}
