//! The `display` toolset.

use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware;
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use serde_json::{json, Value};

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
        exec: Exec::Local(display_text),
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
        exec: Exec::Local(display_clear),
    },
];

fn display_name(cx: &Cx<'_>, hw: &covo_hal_tools::hw::Hardware) -> Result<String, CallError> {
    hw.default_display()
        .map(str::to_string)
        .ok_or_else(|| cx.fail("this board declares no display"))
}

fn display_text(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let name = display_name(cx, &hw)?;
    let lines: Vec<String> = args
        .get("lines")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|l| l.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    hw.display_text(&name, &lines)
        .map_err(|e| hardware::fail(cx, e))?;
    Ok(json!({"display": name, "lines": lines}))
}

fn display_clear(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let name = display_name(cx, &hw)?;
    hw.display_clear(&name).map_err(|e| hardware::fail(cx, e))?;
    Ok(json!({"display": name, "cleared": true}))
}
