//! The `patch` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "patch";

/// `fs_edit`.
pub static FS_EDIT: ToolSpec = ToolSpec {
        name: "fs_edit",
        toolset: TOOLSET,
        profiles: Profiles::CODING,
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Replace an exact string in a file. The match must be unique unless all is true.",
 params: r#"{"type":"object","properties":{"path":{"type":"string","description":"relative to a workspace root"},"old":{"type":"string","description":"exact text to find"},"new":{"type":"string","description":"replacement text"},"all":{"type":"boolean","default":false}},"required":["path","old","new"],"additionalProperties":false}"#,
 keywords: "edit file replace string text word substitute change modify fix line rename variable replace all sed swap",
};

/// `apply_patch`.
pub static APPLY_PATCH: ToolSpec = ToolSpec {
    name: "apply_patch",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Apply a unified diff to one or more files, all or nothing.",
    params: r#"{"type":"object","properties":{"patch":{"type":"string","description":"unified diff text"}},"required":["patch"],"additionalProperties":false}"#,
    keywords: "patch apply diff unified multi file edit change hunk git apply",
};

/// `diff_view`.
pub static DIFF_VIEW: ToolSpec = ToolSpec {
    name: "diff_view",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Show the unified diff between two files, or between a file and proposed content.",
    params: r#"{"type":"object","properties":{"path":{"type":"string","description":"relative to a workspace root"},"other":{"type":"string","description":"second file path"},"content":{"type":"string","description":"proposed content instead of other"}},"required":["path"],"additionalProperties":false}"#,
    keywords:
        "diff compare difference changes preview two files proposed content differences between",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&FS_EDIT, &APPLY_PATCH, &DIFF_VIEW];
