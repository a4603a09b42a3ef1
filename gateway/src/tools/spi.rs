//! The `spi` toolset.

use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware::{self, opt, req};
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use covo_hal_tools::values;
use serde_json::{json, Value};

const TOOLSET: &str = "spi";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "spi_transfer",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Full-duplex SPI transfer on a bus and chip select; returns the bytes read.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"cs":{"type":"integer"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["data"],"additionalProperties":false}"#,
 keywords: "spi transfer exchange full duplex transaction xfer mosi miso sclk chip select cs ce0 ce1 spidev read write bytes adc mcp3008 flash",
        },
        exec: Exec::Local(spi_transfer),
    },
    ToolDef {
        spec: ToolSpec {
            name: "spi_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Write bytes on an SPI bus and chip select, ignoring what is read.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"cs":{"type":"integer"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["data"],"additionalProperties":false}"#,
 keywords: "spi write send bytes output only mosi chip select cs spidev command led strip shift register dac",
        },
        exec: Exec::Local(spi_write),
    },
];

fn small(cx: &Cx<'_>, args: &Value, key: &str) -> Result<Option<u8>, CallError> {
    Ok(opt(cx, args, key, |k, v| values::bounded(k, v, 255))?.map(|n| n as u8))
}

fn spi_transfer(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let data = req(cx, &args, "data", values::bytes)?;
    let read = hw
        .spi_transfer(small(cx, &args, "bus")?, small(cx, &args, "cs")?, &data)
        .map_err(|e| hardware::fail(cx, e))?;
    Ok(json!({"written": values::show_bytes(&data), "read": values::show_bytes(&read)}))
}

fn spi_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let data = req(cx, &args, "data", values::bytes)?;
    hw.spi_write(small(cx, &args, "bus")?, small(cx, &args, "cs")?, &data)
        .map_err(|e| hardware::fail(cx, e))?;
    Ok(json!({"written": values::show_bytes(&data)}))
}
