//! The `git` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "git";

/// `git_status`.
pub static GIT_STATUS: ToolSpec = ToolSpec {
        name: "git_status",
        toolset: TOOLSET,
        profiles: Profiles::CODING,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Show the working-tree status of a git repository: branch, staged, modified and untracked files.",
 params: r#"{"type":"object","properties":{"repo":{"type":"string","description":"repository path, default: current workspace"}},"additionalProperties":false}"#,
 keywords: "git status changes uncommitted dirty clean pending modified staged untracked branch working tree repository which files modify changed edited touched",
};

/// `git_diff`.
pub static GIT_DIFF: ToolSpec = ToolSpec {
    name: "git_diff",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Show a git diff of the working tree, the index (staged), or between revisions.",
    params: r#"{"type":"object","properties":{"repo":{"type":"string","description":"repository path, default: current workspace"},"staged":{"type":"boolean","default":false},"from":{"type":"string","description":"revision"},"to":{"type":"string","description":"revision"},"paths":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}"#,
    keywords: "git diff changes compare revisions commits staged index patch what changed since commit uncommitted",
};

/// `git_log`.
pub static GIT_LOG: ToolSpec = ToolSpec {
    name: "git_log",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "List recent commits, optionally only those touching a path.",
    params: r#"{"type":"object","properties":{"repo":{"type":"string","description":"repository path, default: current workspace"},"path":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":200,"default":20}},"additionalProperties":false}"#,
    keywords: "git log history commits recent changes who when author blame last latest",
};

/// `git_commit`.
pub static GIT_COMMIT: ToolSpec = ToolSpec {
    name: "git_commit",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Stage the given paths and commit them with a message. Returns the commit hash.",
    params: r#"{"type":"object","properties":{"repo":{"type":"string","description":"repository path, default: current workspace"},"paths":{"type":"array","items":{"type":"string"}},"message":{"type":"string"}},"required":["paths","message"],"additionalProperties":false}"#,
    keywords: "git commit save changes stage add record version control message",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&GIT_STATUS, &GIT_DIFF, &GIT_LOG, &GIT_COMMIT];
