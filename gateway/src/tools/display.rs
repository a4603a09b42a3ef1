//! The `display` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "display";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "display_text",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Show lines of text on the attached OLED display.",
            params: r#"{"type":"object","properties":{"lines":{"type":"array","items":{"type":"string"}},"clear":{"type":"boolean"}},"required":["lines"],"additionalProperties":false}"#,
            keywords:
                "display show text write print message oled lcd screen ssd1306 sh1106 status panel",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "display_clear",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Clear the attached display.",
            params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
            keywords: "display clear blank erase wipe off oled lcd screen ssd1306",
        },
        exec: Exec::Missing,
    },
];
