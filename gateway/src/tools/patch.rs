//! The `patch` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "patch";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "fs_edit",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Replace an exact string in a file (unique match required, or all occurrences when asked).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "apply_patch",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Apply a unified diff to one or more files, all or nothing.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "diff_view",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Show the unified diff between two files or between a file and proposed content.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
