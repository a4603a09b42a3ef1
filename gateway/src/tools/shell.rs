//! The `shell` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "shell";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "shell_exec",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Destructive,
            description: "Run a shell command with a timeout and output cap; returns exit code, stdout, stderr.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "process_start",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Destructive,
            description: "Start a long-running background process and return its handle.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "process_list",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List the background processes this agent started, with status.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "process_output",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read new output of a background process.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "process_kill",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Stop a background process this agent started.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "tmux_send_keys",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Destructive,
            description: "Type keys into a tmux pane (creating the session if needed).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "tmux_capture",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Capture the visible text of a tmux pane.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
