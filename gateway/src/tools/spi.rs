//! The `spi` toolset.

use super::hwargs;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Parse, Part, ToolArgs, ToolDef, Typed};
use covo_board::values;
use covo_core::catalog::spi as c;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::typed(&c::SPI_TRANSFER, &Typed { run: spi_transfer }).needs(Need::Board(Part::Spi)),
    ToolDef::typed(&c::SPI_WRITE, &Typed { run: spi_write }).needs(Need::Board(Part::Spi)),
];

/// Bytes for one declared SPI device: the bus and chip-select are resolved against the board
/// (either may be left out when one device matches the rest).
pub struct Transfer {
    bus: u8,
    cs: u8,
    data: Vec<u8>,
}

impl ToolArgs for Transfer {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let bus = p.int("bus", 255)?.map(|n| n as u8);
        let cs = p.int("cs", 255)?.map(|n| n as u8);
        let data = p.req("data", values::bytes)?;
        let dev = p.board.resolve_spi(bus, cs).map_err(|e| p.hw(e))?;
        Ok(Transfer {
            bus: dev.bus,
            cs: dev.cs,
            data,
        })
    }

    /// SPI clocks bytes out on every transfer: a write of `data`'s length.
    fn access(&self) -> Vec<Access> {
        vec![Access::Spi {
            bus: self.bus,
            cs: self.cs,
            bytes: self.data.len(),
        }]
    }
}

fn spi_transfer(cx: &Cx<'_>, t: Transfer) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let read = hw
        .spi_transfer(Some(t.bus), Some(t.cs), &t.data)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"written": values::show_bytes(&t.data), "read": values::show_bytes(&read)}))
}

fn spi_write(cx: &Cx<'_>, t: Transfer) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    hw.spi_write(Some(t.bus), Some(t.cs), &t.data)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"written": values::show_bytes(&t.data)}))
}
