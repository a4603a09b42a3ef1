//! The `discovery` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "discovery";

/// `tool_search`.
pub static TOOL_SEARCH: ToolSpec = ToolSpec {
    name: "tool_search",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::MESSAGING).or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Find tools you have but were not shown. Returns names, summaries, scores.",
    params: r#"{"type":"object","properties":{"query":{"type":"string","description":"What you want to do"},"limit":{"type":"integer","minimum":1,"maximum":20,"default":5}},"required":["query"],"additionalProperties":false}"#,
    keywords: "find discover look up which tool capability available functions tools can able support function there any way",
};

/// `tool_describe`.
pub static TOOL_DESCRIBE: ToolSpec = ToolSpec {
    name: "tool_describe",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::MESSAGING).or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Get a tool's full definition and parameter schema.",
    params: r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}"#,
    keywords: "parameters arguments schema usage help definition signature how to call params take takes use",
};

/// `tool_call`.
pub static TOOL_CALL: ToolSpec = ToolSpec {
    name: "tool_call",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::MESSAGING).or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Call a tool found with tool_search by name, with JSON arguments.",
    params: r#"{"type":"object","properties":{"name":{"type":"string"},"arguments":{"type":"object"}},"required":["name"],"additionalProperties":false}"#,
    keywords: "invoke run execute use hidden tool call by name",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&TOOL_SEARCH, &TOOL_DESCRIBE, &TOOL_CALL];
