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
            description: "Read a text file inside the workspace roots, optionally a line range. Returns numbered lines.",
 params: r#"{"type":"object","properties":{"path":{"type":"string","description":"relative to a workspace root"},"offset":{"type":"integer","description":"first line, 1-based","minimum":1},"limit":{"type":"integer","description":"number of lines","minimum":1}},"required":["path"],"additionalProperties":false}"#,
 keywords: "file read open view show cat contents text source code config line range head",
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
            description: "Create or overwrite a file atomically inside the workspace roots.",
 params: r#"{"type":"object","properties":{"path":{"type":"string","description":"relative to a workspace root"},"content":{"type":"string"},"create_dirs":{"type":"boolean","default":true}},"required":["path","content"],"additionalProperties":false}"#,
 keywords: "file write create save new overwrite contents text put",
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
            description: "List a directory; optionally recursive, with sizes.",
 params: r#"{"type":"object","properties":{"path":{"type":"string","description":"relative to a workspace root"},"recursive":{"type":"boolean","default":false},"sizes":{"type":"boolean","default":false}},"required":["path"],"additionalProperties":false}"#,
 keywords: "directory folder list ls dir tree contents files children browse",
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
            description: "Get a file's metadata: size, type, permissions and modification time.",
 params: r#"{"type":"object","properties":{"path":{"type":"string","description":"relative to a workspace root"}},"required":["path"],"additionalProperties":false}"#,
 keywords: "file metadata stat info size type permissions mode owner modified mtime exists",
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
            description: "Move or rename a file or directory inside the workspace roots.",
 params: r#"{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"},"overwrite":{"type":"boolean","default":false}},"required":["from","to"],"additionalProperties":false}"#,
 keywords: "file move rename mv relocate directory folder",
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
            description: "Delete a file or directory (asks for approval). Directories need recursive.",
 params: r#"{"type":"object","properties":{"path":{"type":"string","description":"relative to a workspace root"},"recursive":{"type":"boolean","default":false}},"required":["path"],"additionalProperties":false}"#,
 keywords: "file delete remove rm erase unlink directory folder rmdir",
        },
        exec: Exec::Missing,
    },
];
