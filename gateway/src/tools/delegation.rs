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
            description: "Start a sub-agent on the peer with its own toolset and a task; returns a handle.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "subagent_status",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Progress of a spawned sub-agent.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "subagent_result",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "The final answer of a finished sub-agent.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "swarm_members",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List the other gateways on the same broker (from their retained birth messages) with their tools and liveness.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
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
            description: "Call a tool on another gateway over MQTT (e.g. read the soil sensor on greenhouse-2).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
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
            description: "Send one request to every gateway in the swarm and gather their answers until a deadline.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
