//! The `delegation` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "delegation";

/// `subagent_spawn`.
pub static SUBAGENT_SPAWN: ToolSpec = ToolSpec {
        name: "subagent_spawn",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::MESSAGING),
        runs: Runs::Peer,
        effect: Effect::Write,
        description: "Start a sub-agent on the peer with its own toolsets and a task; it works alone (no hardware, no questions). Returns a handle: poll subagent_status, then get subagent_result.",
 params: r#"{"type":"object","properties":{"task":{"type":"string","description":"what to do, with everything it needs to know"},"toolsets":{"type":"array","items":{"type":"string"},"description":"toolset names, default: web, code_exec"}},"required":["task"],"additionalProperties":false}"#,
 keywords: "sub agent subagent spawn delegate worker helper parallel task hand off assistant spin up start new kick sub-agent background",
};

/// `subagent_status`.
pub static SUBAGENT_STATUS: ToolSpec = ToolSpec {
        name: "subagent_status",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::MESSAGING),
        runs: Runs::Peer,
        effect: Effect::Read,
        description: "Get the progress of a spawned sub-agent: state (running, done, failed, cancelled, interrupted), steps, recent tool calls, elapsed time.",
 params: r#"{"type":"object","properties":{"handle":{"type":"string","description":"from subagent_spawn"}},"required":["handle"],"additionalProperties":false}"#,
 keywords: "sub agent subagent status progress how is it doing up to running done finished yet check",
};

/// `subagent_result`.
pub static SUBAGENT_RESULT: ToolSpec = ToolSpec {
        name: "subagent_result",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::MESSAGING),
        runs: Runs::Peer,
        effect: Effect::Read,
        description: "Get the final answer of a finished sub-agent. While it runs this is an error: poll subagent_status first.",
 params: r#"{"type":"object","properties":{"handle":{"type":"string","description":"from subagent_spawn"}},"required":["handle"],"additionalProperties":false}"#,
 keywords: "sub agent subagent result answer output finished",
};

/// `swarm_members`.
pub static SWARM_MEMBERS: ToolSpec = ToolSpec {
        name: "swarm_members",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "List the other gateways on the same broker: id, online or offline, and the tools each lets you call with swarm_call.",
 params: r#"{"type":"object","properties":{"online_only":{"type":"boolean","default":false}},"additionalProperties":false}"#,
 keywords: "swarm members gateways peers other boards nodes fleet online devices network",
};

/// `swarm_call`.
pub static SWARM_CALL: ToolSpec = ToolSpec {
        name: "swarm_call",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Call a tool on another gateway over MQTT (see swarm_members). It runs under that gateway's own policy; returns that tool's result.",
 params: r#"{"type":"object","properties":{"gateway":{"type":"string","description":"member id, e.g. greenhouse-2"},"tool":{"type":"string","description":"a tool that member serves"},"arguments":{"type":"object","default":{}},"timeout_ms":{"type":"integer","minimum":100,"maximum":300000,"default":10000}},"required":["gateway","tool"],"additionalProperties":false}"#,
 keywords: "swarm call remote another gateway other board node peer fleet run tool elsewhere greenhouse kitchen garage shed workshop office attic basement garden bedroom",
};

/// `swarm_broadcast`.
pub static SWARM_BROADCAST: ToolSpec = ToolSpec {
        name: "swarm_broadcast",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING,
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Send one tool call to every online gateway that serves the tool and gather their answers until the deadline.",
 params: r#"{"type":"object","properties":{"tool":{"type":"string"},"arguments":{"type":"object","default":{}},"timeout_ms":{"type":"integer","minimum":100,"maximum":300000,"default":5000}},"required":["tool"],"additionalProperties":false}"#,
 keywords: "swarm broadcast ask all gateways nodes boards everyone fleet fan out query gather collect answers",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &SUBAGENT_SPAWN,
    &SUBAGENT_STATUS,
    &SUBAGENT_RESULT,
    &SWARM_MEMBERS,
    &SWARM_CALL,
    &SWARM_BROADCAST,
];
