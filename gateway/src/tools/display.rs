//! The `display` toolset.

use super::hwargs;
use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Part, ToolDef};
use covo_core::catalog::display as c;
use covo_hal_tools::board::BoardDef;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::DISPLAY_TEXT, display_text)
        .with_access(display_access)
        .needs(Need::Board(Part::Display)),
    ToolDef::local(&c::DISPLAY_CLEAR, display_clear)
        .with_access(display_access)
        .needs(Need::Board(Part::Display)),
];

/// Drawing writes the display's framebuffer over I2C: the named display, else the board's first,
/// in transfers of up to `display::MAX_TRANSFER` bytes (a control byte and 16 bytes of GDDRAM),
/// which `max_transfer` judges.
fn display_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    let name = args
        .get("display")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            def.device
                .iter()
                .find(|d| d.driver == "ssd1306")
                .map(|d| d.name.clone())
        });
    match name.and_then(|n| def.device(&n)) {
        Some(d) => vec![Access::I2cWrite {
            bus: d.bus.or(def.default_i2c_bus()),
            address: d.address,
            bytes: covo_hal_tools::display::MAX_TRANSFER,
        }],
        None => Vec::new(),
    }
}

fn display_name(cx: &Cx<'_>, hw: &covo_hal_tools::hw::Hardware) -> Result<String, CallError> {
    hw.default_display()
        .map(str::to_string)
        .ok_or_else(|| cx.fail("this board declares no display"))
}

fn display_text(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
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
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"display": name, "lines": lines}))
}

fn display_clear(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let name = display_name(cx, &hw)?;
    hw.display_clear(&name).map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"display": name, "cleared": true}))
}
