//! The `git` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "git";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "git_status",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Working-tree status of a git repository.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "git_diff",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Diff of the working tree, the index, or between revisions.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "git_log",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Recent commits, optionally for a path.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "git_commit",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Stage the given paths and commit with a message.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
