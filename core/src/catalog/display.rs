//! The `display` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "display";

/// `display_text`.
pub static DISPLAY_TEXT: ToolSpec = ToolSpec {
    name: "display_text",
    toolset: TOOLSET,
    profiles: Profiles::EDGE,
    runs: Runs::Gateway,
    effect: Effect::Actuate,
    description: "Show lines of text on the attached OLED display.",
    params: r#"{"type":"object","properties":{"lines":{"type":"array","items":{"type":"string"}},"clear":{"type":"boolean"}},"required":["lines"],"additionalProperties":false}"#,
    keywords:
        "display show text write print message oled lcd screen ssd1306 sh1106 status panel put",
};

/// `display_clear`.
pub static DISPLAY_CLEAR: ToolSpec = ToolSpec {
    name: "display_clear",
    toolset: TOOLSET,
    profiles: Profiles::EDGE,
    runs: Runs::Gateway,
    effect: Effect::Actuate,
    description: "Clear the attached display.",
    params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
    keywords: "display clear blank erase wipe off oled lcd screen ssd1306",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&DISPLAY_TEXT, &DISPLAY_CLEAR];
