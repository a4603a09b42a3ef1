//! The `code_exec` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "code_exec";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "code_run",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Peer,
            effect: Effect::Write,
            description: "Run a Python or shell snippet in the peer's sandbox (time, memory and network limits) and return its output.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "code_graph",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Build a symbol/call graph of a source tree and answer who-calls/what-defines queries.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "test_generate",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Draft unit tests for a given function or file with the peer's larger model.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
