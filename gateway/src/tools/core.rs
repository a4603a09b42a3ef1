//! The `core` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "core";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "conversation_search",
            toolset: TOOLSET,
            profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::MESSAGING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Full-text search over past conversation turns stored in the gateway's database.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "send_message",
            toolset: TOOLSET,
            profiles: Profiles::MINIMAL.or(Profiles::MESSAGING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Send a message to the user on a channel (the current one by default: cli, mqtt, web...).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "todo_write",
            toolset: TOOLSET,
            profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Replace the session's to-do list (items with status pending/in_progress/done).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "plan_update",
            toolset: TOOLSET,
            profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Record or revise the current step-by-step plan and which step is active.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "exit_plan_mode",
            toolset: TOOLSET,
            profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Leave planning mode: present the plan and switch the session to executing it.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "ask_clarification",
            toolset: TOOLSET,
            profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::MESSAGING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Ask the user a question (optionally with choices) and wait for the answer.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "structured_output",
            toolset: TOOLSET,
            profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::MESSAGING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Return the final answer as JSON validated against a caller-supplied JSON Schema.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
