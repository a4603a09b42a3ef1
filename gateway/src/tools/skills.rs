//! The `skills` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "skills";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "skill_list",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description:
                "List installed skills (folders of instructions and scripts) with their purpose.",
            params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
            keywords: "skills list installed playbooks recipes instructions how to",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "skill_load",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Load a skill's instructions into the conversation.",
            params: r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}"#,
            keywords: "skill load use open playbook recipe instructions",
        },
        exec: Exec::Missing,
    },
];
