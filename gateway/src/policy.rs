//! Policies: what may run, decided after a call's arguments are valid and before it runs.
//!
//! The gateway-wide ones ([`ReadOnly`], [`MqttPublishAllow`], [`SwarmExpose`]) and the board
//! policy ([`BoardPolicyCheck`]) are all [`Policy`]s that the runtime's `PolicyHook` runs inside
//! the one pipeline, so every path (direct, `tool_call`, schedules, watches, MQTT, remote calls)
//! passes them. A policy judges a call by its [`ToolInvocation`]: the spec, the validated
//! arguments, where the call came from and, for hardware tools, what it will touch on the board
//! ([`Access`], computed by the tool's own access function beside its executor).

use crate::hardware::{Access, Board};
use covo_core::catalog;
use covo_core::spec::{Effect, ToolSpec};
use serde_json::Value;
use std::sync::Arc;

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
    /// From an MCP client (`covo mcp`, or `covo run`'s MCP endpoint).
    Mcp,
    /// From a Telegram chat (`[telegram]`).
    Telegram,
    /// From the web dashboard (`[web]`).
    Web,
    /// From the background sampler (`covo run`, `covo chat`): a due sensor's `sensor_read`.
    Sampler,
}

impl Via {
    /// The name in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Direct => "direct",
            // Named after the tool it came through.
            Via::ToolCall => catalog::discovery::TOOL_CALL.name,
            Via::Mqtt => "mqtt",
            Via::Remote => "remote",
            Via::Schedule => "schedule",
            Via::Watch => "watch",
            Via::Mcp => "mcp",
            Via::Telegram => "telegram",
            Via::Web => "web",
            Via::Sampler => "sampler",
        }
    }
}

/// One tool call about to run (or that ran), as policies and hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct ToolInvocation<'a> {
    /// The tool.
    pub spec: &'static ToolSpec,
    /// Its validated arguments.
    pub args: &'a Value,
    /// How the call reached the pipeline.
    pub via: Via,
    /// What it will touch on the board (empty for tools that touch no hardware).
    pub access: &'a [Access],
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
    fn check(&self, call: &ToolInvocation<'_>) -> Result<(), Refusal>;
}

/// Whether `spec` is this catalog entry (specs are statics: one address per tool).
pub fn is(spec: &ToolSpec, entry: &'static ToolSpec) -> bool {
    std::ptr::eq(spec, entry) || spec.name == entry.name
}

/// Tools never served to other gateways: the swarm tools (no relaying through a member) and
/// `tool_call` (its inner call is checked on its own anyway).
const NEVER_SERVED: &[&ToolSpec] = &[
    &catalog::delegation::SWARM_MEMBERS,
    &catalog::delegation::SWARM_CALL,
    &catalog::delegation::SWARM_BROADCAST,
    &catalog::discovery::TOOL_CALL,
];

/// The toolsets whose `read` tools other gateways may call by default: the board's hardware,
/// never its files, memories or conversations.
pub const SWARM_DEFAULT_TOOLSETS: &[&str] = &[
    catalog::board::TOOLSET,
    catalog::sensors::TOOLSET,
    catalog::gpio::TOOLSET,
    catalog::i2c::TOOLSET,
    catalog::mcu::TOOLSET,
];

/// `[swarm] expose`: calls from other gateways (`Via::Remote`) may only run exposed tools.
/// Local calls are not affected.
pub struct SwarmExpose {
    /// Name globs; `None` exposes the `read` tools of [`SWARM_DEFAULT_TOOLSETS`].
    pub expose: Option<Vec<String>>,
}

impl SwarmExpose {
    /// Whether another gateway may call `spec` here (by default only `read` tools, and
    /// [`Policy::check`] also refuses a default-exposed call that writes to the board).
    pub fn exposes(&self, spec: &ToolSpec) -> bool {
        if NEVER_SERVED.iter().any(|n| is(spec, n)) {
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
    fn check(&self, call: &ToolInvocation<'_>) -> Result<(), Refusal> {
        let spec = call.spec;
        if call.via != Via::Remote {
            return Ok(());
        }
        // By default other gateways may read, and a call that writes bytes of its caller's
        // choosing is not a read whatever its tool's effect. A sensor reading's driver
        // commands are the tool's own (`Access::SensorMeasure`): other gateways may read
        // sensors, unless the board or gateway is read-only. Tools exposed by name may write.
        if self.exposes(spec) && (self.expose.is_some() || !caller_writes(call)) {
            return Ok(());
        }
        Err(Refusal {
            rule: "swarm.expose".into(),
            detail: match &self.expose {
                None if self.exposes(spec) => format!(
                    "other gateways may only read here, and this '{}' call writes to the board; \
                     [swarm] expose lists what they may call",
                    spec.name
                ),
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

/// The gateway-wide read-only switch: refuses every tool whose effect is not `read`, and every
/// call that writes to the board whatever its tool's effect (an `i2c_write_read` whose write
/// part is more than a register pointer).
pub struct ReadOnly;

impl Policy for ReadOnly {
    fn check(&self, call: &ToolInvocation<'_>) -> Result<(), Refusal> {
        let spec = call.spec;
        // `tool_call` is a proxy: the call it makes passes through this policy on its own.
        if is(spec, &catalog::discovery::TOOL_CALL) {
            return Ok(());
        }
        let detail = if spec.effect != Effect::Read {
            format!(
                "the gateway is in read-only mode and '{}' has effect '{}'",
                spec.name,
                spec.effect.as_str()
            )
        } else if let Some(Access::SensorMeasure {
            sensor,
            driver,
            writes,
            ..
        }) = call
            .access
            .iter()
            .find(|a| matches!(a, Access::SensorMeasure { .. }))
        {
            format!(
                "the gateway is in read-only mode, and reading sensor '{sensor}' writes to it: \
                 the {driver} driver sends {writes} for every reading"
            )
        } else if writes(call) {
            format!(
                "the gateway is in read-only mode and this '{}' call writes to the board",
                spec.name
            )
        } else {
            return Ok(());
        };
        Err(Refusal {
            rule: "read_only".into(),
            detail,
        })
    }
}

/// The background sampler's bounds: it reads sensors and nothing else (`sensor_read`). Other
/// policies judge its calls like any other (board policy, `[policy] read_only`); `[swarm]
/// expose` concerns only other gateways, and a reading is a `read` tool, which needs no approval.
pub struct SamplerBounds;

impl Policy for SamplerBounds {
    fn check(&self, call: &ToolInvocation<'_>) -> Result<(), Refusal> {
        if call.via != Via::Sampler || is(call.spec, &catalog::sensors::SENSOR_READ) {
            return Ok(());
        }
        Err(Refusal {
            rule: "sampler".into(),
            detail: format!(
                "the sampler only reads sensors ({}), not '{}'",
                catalog::sensors::SENSOR_READ.name,
                call.spec.name
            ),
        })
    }
}

/// Whether a call writes to the board (judged by its accesses, not its tool's effect).
fn writes(call: &ToolInvocation<'_>) -> bool {
    call.access.iter().any(Access::writes)
}

/// Whether a call writes bytes its caller chose: every write but a sensor driver's own
/// measurement commands.
fn caller_writes(call: &ToolInvocation<'_>) -> bool {
    call.access
        .iter()
        .any(|a| a.writes() && !matches!(a, Access::SensorMeasure { .. }))
}

/// `mqtt_publish` may only publish to topics that match `[mqtt] publish_allow`.
pub struct MqttPublishAllow {
    /// The allowed topic filters.
    pub allow: Vec<String>,
}

impl Policy for MqttPublishAllow {
    fn check(&self, call: &ToolInvocation<'_>) -> Result<(), Refusal> {
        if !is(call.spec, &catalog::mqtt::MQTT_PUBLISH) {
            return Ok(());
        }
        let topic = call.args.get("topic").and_then(Value::as_str).unwrap_or("");
        if self
            .allow
            .iter()
            .any(|f| covo_wire::mqtt::topic_matches(f, topic))
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

/// The board policy as a pipeline `Policy`: every access a hardware call declares is checked
/// against the board's allowlists and limits, whichever path the call came by.
pub struct BoardPolicyCheck {
    /// The board.
    pub board: Arc<Board>,
}

impl Policy for BoardPolicyCheck {
    fn check(&self, call: &ToolInvocation<'_>) -> Result<(), Refusal> {
        for a in call.access {
            self.board.check(a).map_err(|r| Refusal {
                rule: r.rule.to_string(),
                detail: r.detail,
            })?;
        }
        Ok(())
    }
}

/// Decides whether a destructive call may run.
pub trait Approver: Send + Sync {
    /// `Err(detail)` declines.
    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String>;

    /// Whether calls of `spec` need this approver's answer: destructive tools by default; a
    /// channel's approver may ask about more (Telegram's `confirm_actuate`: every `actuate` call).
    fn asks(&self, spec: &ToolSpec) -> bool {
        spec.effect == Effect::Destructive
    }
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
