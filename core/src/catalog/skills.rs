//! The `skills` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "skills";

/// `skill_list`.
pub static SKILL_LIST: ToolSpec = ToolSpec {
    name: "skill_list",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "List installed skills (folders of instructions and scripts) with their purpose.",
    params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
    keywords: "skills list installed playbooks recipes instructions how to available can do",
};

/// `skill_load`.
pub static SKILL_LOAD: ToolSpec = ToolSpec {
    name: "skill_load",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Load a skill's instructions into the conversation.",
    params: r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}"#,
    keywords: "skill load use open playbook recipe instructions",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&SKILL_LIST, &SKILL_LOAD];
