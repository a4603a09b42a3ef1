//! The `fs` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "fs";

/// `fs_read`.
pub static FS_READ: ToolSpec = ToolSpec {
    name: "fs_read",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description:
        "Read a text file inside the workspace, optionally only lines start..=end (1-based).",
    params: r#"{"type":"object","properties":{"path":{"type":"string"},"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":1},"max_bytes":{"type":"integer","minimum":1,"default":262144}},"required":["path"],"additionalProperties":false}"#,
    keywords: "file read open view show cat contents text source code config line range head print readme lines",
};

/// `fs_write`.
pub static FS_WRITE: ToolSpec = ToolSpec {
    name: "fs_write",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Write,
    description:
        "Create or overwrite a file inside the workspace atomically (parent folders are created).",
    params: r#"{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}"#,
    keywords: "file write create save new overwrite contents text put store as into mkdir",
};

/// `fs_list`.
pub static FS_LIST: ToolSpec = ToolSpec {
    name: "fs_list",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description:
        "List a directory inside the workspace, optionally recursively, with types and sizes.",
    params: r#"{"type":"object","properties":{"path":{"type":"string","default":"."},"recursive":{"type":"boolean","default":false},"max_entries":{"type":"integer","minimum":1,"maximum":5000,"default":500}},"additionalProperties":false}"#,
    keywords: "directory folder list ls dir tree contents files children browse in",
};

/// `fs_stat`.
pub static FS_STAT: ToolSpec = ToolSpec {
    name: "fs_stat",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "File metadata: type, size, permissions and modification time.",
    params: r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}"#,
    keywords: "file metadata stat info size type permissions mode owner modified mtime exists how large changed last time date owns old age executable",
};

/// `fs_move`.
pub static FS_MOVE: ToolSpec = ToolSpec {
    name: "fs_move",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Move or rename a file or directory inside the workspace.",
    params: r#"{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"},"overwrite":{"type":"boolean","default":false}},"required":["from","to"],"additionalProperties":false}"#,
    keywords: "file move rename mv relocate directory folder",
};

/// `fs_delete`.
pub static FS_DELETE: ToolSpec = ToolSpec {
    name: "fs_delete",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Destructive,
    description: "Delete a file, or a directory with recursive=true. Asks the user first.",
    params: r#"{"type":"object","properties":{"path":{"type":"string"},"recursive":{"type":"boolean","default":false}},"required":["path"],"additionalProperties":false}"#,
    keywords: "file delete remove rm erase unlink directory folder rmdir get trash",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &FS_READ, &FS_WRITE, &FS_LIST, &FS_STAT, &FS_MOVE, &FS_DELETE,
];
