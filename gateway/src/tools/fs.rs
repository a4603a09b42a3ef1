//! The `fs` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "fs";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "fs_read",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description:
                "Read a text file (optionally a line range) inside the allowed workspace roots.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "fs_write",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description:
                "Create or overwrite a file atomically inside the allowed workspace roots.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "fs_list",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List a directory (optionally recursive, with sizes).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "fs_stat",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "File metadata: size, type, permissions, modification time.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "fs_move",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Move or rename a file or directory.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "fs_delete",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Gateway,
            effect: Effect::Destructive,
            description: "Delete a file or directory.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
