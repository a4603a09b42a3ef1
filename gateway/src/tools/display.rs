//! The `display` toolset.

use super::hwargs;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Parse, Part, ToolArgs, ToolDef, Typed};
use covo_board::resolve::ResolveError;
use covo_core::catalog::display as c;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::typed(&c::DISPLAY_TEXT, &Typed { run: display_text })
        .needs(Need::Board(Part::Display)),
    ToolDef::typed(&c::DISPLAY_CLEAR, &Typed { run: display_clear })
        .needs(Need::Board(Part::Display)),
];

/// The display drawing goes to (the board's first), where it sits on the bus, and the lines.
pub struct Draw {
    display: String,
    bus: Option<u8>,
    address: u8,
    lines: Vec<String>,
}

impl Draw {
    fn parse(p: &Parse<'_>, lines: Vec<String>) -> Result<Self, ToolError> {
        let d = p.board.default_display().map_err(|e| p.hw(e))?;
        let address = d.address.ok_or_else(|| {
            p.hw(ResolveError::NotFound(format!(
                "display '{}' declares no I2C address",
                d.name
            )))
        })?;
        Ok(Draw {
            display: d.name.clone(),
            bus: d.bus.or(p.board.default_i2c_bus()),
            address,
            lines,
        })
    }
}

impl ToolArgs for Draw {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let lines = p.opt("lines", |k, v| {
            v.as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|l| l.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| covo_board::values::ValueError {
                    field: format!("/{k}"),
                    problem: "must be an array of strings".into(),
                })
        })?;
        Draw::parse(p, lines.unwrap_or_default())
    }

    /// Drawing writes the display's framebuffer over I2C in transfers of up to
    /// `display::MAX_TRANSFER` bytes (a control byte and 16 bytes of GDDRAM), which
    /// `max_transfer` judges.
    fn access(&self) -> Vec<Access> {
        vec![Access::I2c {
            bus: self.bus,
            address: self.address,
            written: covo_hal_tools::display::MAX_TRANSFER,
            read: 0,
        }]
    }
}

fn display_text(cx: &Cx<'_>, d: Draw) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    hw.display_text(&d.display, &d.lines)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"display": d.display, "lines": d.lines}))
}

fn display_clear(cx: &Cx<'_>, d: Draw) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    hw.display_clear(&d.display)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"display": d.display, "cleared": true}))
}
