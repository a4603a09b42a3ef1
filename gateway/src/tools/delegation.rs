//! The `delegation` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "delegation";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "subagent_spawn",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Write,
            description: "Start a sub-agent on the peer with its own toolsets and a task; it works alone (no hardware, no questions). Returns a handle: poll subagent_status, then get subagent_result.",
 params: r#"{"type":"object","properties":{"task":{"type":"string","description":"what to do, with everything it needs to know"},"toolsets":{"type":"array","items":{"type":"string"},"description":"toolset names, default: web, code_exec"}},"required":["task"],"additionalProperties":false}"#,
 keywords: "sub agent subagent spawn delegate worker helper parallel task hand off assistant",
        },
        exec: Exec::Peer,
    },
    ToolDef {
        spec: ToolSpec {
            name: "subagent_status",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Get the progress of a spawned sub-agent: state (running, done, failed, cancelled, interrupted), steps, recent tool calls, elapsed time.",
 params: r#"{"type":"object","properties":{"handle":{"type":"string","description":"from subagent_spawn"}},"required":["handle"],"additionalProperties":false}"#,
 keywords: "sub agent subagent status progress how is it doing running done finished yet check",
        },
        exec: Exec::Peer,
    },
    ToolDef {
        spec: ToolSpec {
            name: "subagent_result",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Get the final answer of a finished sub-agent. While it runs this is an error: poll subagent_status first.",
 params: r#"{"type":"object","properties":{"handle":{"type":"string","description":"from subagent_spawn"}},"required":["handle"],"additionalProperties":false}"#,
 keywords: "sub agent subagent result answer output finished",
        },
        exec: Exec::Peer,
    },
    ToolDef {
        spec: ToolSpec {
            name: "swarm_members",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List the other gateways on the same broker with their tools and liveness.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "swarm members gateways peers other boards nodes fleet online devices network",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "swarm_call",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Call a tool on another gateway over MQTT. Returns that tool's result.",
 params: r#"{"type":"object","properties":{"gateway":{"type":"string","description":"member name, e.g. greenhouse-2"},"tool":{"type":"string"},"arguments":{"type":"object"},"timeout_ms":{"type":"integer"}},"required":["gateway","tool"],"additionalProperties":false}"#,
 keywords: "swarm call remote another gateway other board node peer fleet run tool elsewhere greenhouse",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "swarm_broadcast",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Send one tool call to every gateway in the swarm and gather answers until a deadline.",
 params: r#"{"type":"object","properties":{"tool":{"type":"string"},"arguments":{"type":"object"},"timeout_ms":{"type":"integer"}},"required":["tool"],"additionalProperties":false}"#,
 keywords: "swarm broadcast ask all every gateways nodes boards everyone fleet fan out query gather collect answers",
        },
        exec: Exec::Missing,
    },
];
