//! The `spi` toolset.

use super::hwargs::{self, opt, req};
use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Part, ToolDef};
use covo_core::catalog::spi as c;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::values;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::SPI_TRANSFER, spi_transfer)
        .with_access(spi_access)
        .needs(Need::Board(Part::Spi)),
    ToolDef::local(&c::SPI_WRITE, spi_write)
        .with_access(spi_access)
        .needs(Need::Board(Part::Spi)),
];

/// SPI clocks bytes out on every transfer: a write of `data`'s length.
fn spi_access(_: &BoardDef, args: &Value) -> Vec<Access> {
    vec![Access::Spi {
        bytes: hwargs::len_of(args, "data"),
    }]
}

fn small(cx: &Cx<'_>, args: &Value, key: &str) -> Result<Option<u8>, CallError> {
    Ok(opt(cx, args, key, |k, v| values::bounded(k, v, 255))?.map(|n| n as u8))
}

fn spi_transfer(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let data = req(cx, &args, "data", values::bytes)?;
    let read = hw
        .spi_transfer(small(cx, &args, "bus")?, small(cx, &args, "cs")?, &data)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"written": values::show_bytes(&data), "read": values::show_bytes(&read)}))
}

fn spi_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let data = req(cx, &args, "data", values::bytes)?;
    hw.spi_write(small(cx, &args, "bus")?, small(cx, &args, "cs")?, &data)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"written": values::show_bytes(&data)}))
}
