//! The `shell` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "shell";

/// `shell_exec`.
pub static SHELL_EXEC: ToolSpec = ToolSpec {
        name: "shell_exec",
        toolset: TOOLSET,
        profiles: Profiles::CODING,
        runs: Runs::Gateway,
        effect: Effect::Destructive,
        description: "Run a shell command with a timeout and output cap (asks for approval). Returns exit code, stdout and stderr.",
 params: r#"{"type":"object","properties":{"command":{"type":"string"},"cwd":{"type":"string","description":"working directory"},"timeout_s":{"type":"integer","minimum":1,"maximum":600,"default":60}},"required":["command"],"additionalProperties":false}"#,
 keywords: "shell command run execute bash sh terminal cli script program make cargo npm pip pytest uname docker apt curl wget gcc cmake exit code ls cat ps top df du",
};

/// `process_start`.
pub static PROCESS_START: ToolSpec = ToolSpec {
    name: "process_start",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Destructive,
    description: "Start a long-running background process (asks for approval). Returns its handle.",
    params: r#"{"type":"object","properties":{"command":{"type":"string"},"cwd":{"type":"string","description":"working directory"}},"required":["command"],"additionalProperties":false}"#,
    keywords: "background process start launch spawn daemon server long running watch mode run",
};

/// `process_list`.
pub static PROCESS_LIST: ToolSpec = ToolSpec {
    name: "process_list",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "List the background processes this agent started, with status.",
    params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
    keywords: "background processes list running status handles ps jobs still server job",
};

/// `process_output`.
pub static PROCESS_OUTPUT: ToolSpec = ToolSpec {
    name: "process_output",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Read new output of a background process since the last read.",
    params: r#"{"type":"object","properties":{"handle":{"type":"string"},"max_bytes":{"type":"integer","minimum":1}},"required":["handle"],"additionalProperties":false}"#,
    keywords: "background process output logs stdout stderr tail read progress print printed prints log compile script job launched started",
};

/// `process_kill`.
pub static PROCESS_KILL: ToolSpec = ToolSpec {
    name: "process_kill",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Stop a background process this agent started.",
    params: r#"{"type":"object","properties":{"handle":{"type":"string"},"signal":{"enum":["TERM","KILL","INT"],"default":"TERM"}},"required":["handle"],"additionalProperties":false}"#,
    keywords: "background process task kill stop terminate end signal cancel server",
};

/// `tmux_send_keys`.
pub static TMUX_SEND_KEYS: ToolSpec = ToolSpec {
    name: "tmux_send_keys",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Destructive,
    description: "Type keys into a tmux pane, creating the session if needed (asks for approval).",
    params: r#"{"type":"object","properties":{"session":{"type":"string"},"pane":{"type":"string","description":"pane target, e.g. 0.0"},"keys":{"type":"string"},"enter":{"type":"boolean","default":true}},"required":["session","keys"],"additionalProperties":false}"#,
    keywords: "tmux terminal type keys keystrokes interactive session pane repl input send",
};

/// `tmux_capture`.
pub static TMUX_CAPTURE: ToolSpec = ToolSpec {
    name: "tmux_capture",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Capture the visible text of a tmux pane.",
    params: r#"{"type":"object","properties":{"session":{"type":"string"},"pane":{"type":"string","description":"pane target, e.g. 0.0"},"lines":{"type":"integer","description":"scrollback lines to include","minimum":0}},"required":["session"],"additionalProperties":false}"#,
    keywords: "tmux terminal screen capture pane visible output screenshot text window see read",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &SHELL_EXEC,
    &PROCESS_START,
    &PROCESS_LIST,
    &PROCESS_OUTPUT,
    &PROCESS_KILL,
    &TMUX_SEND_KEYS,
    &TMUX_CAPTURE,
];
