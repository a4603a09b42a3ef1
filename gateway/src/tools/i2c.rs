//! The `i2c` toolset.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::{self, opt, req};
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::values;
use serde_json::{json, Value};

const TOOLSET: &str = "i2c";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "i2c_scan",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Scan an I2C bus for responding addresses, like i2cdetect.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"}},"additionalProperties":false}"#,
 keywords: "i2c scan detect probe find discover devices addresses bus i2cdetect enumerate what is connected twi iic smbus sda scl ack nack search bus address 0x76 0x3c",
        },
        exec: Exec::Local(i2c_scan),
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read count bytes from an I2C device.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"count":{"type":"integer"}},"required":["address","count"],"additionalProperties":false}"#,
 keywords: "i2c read bytes raw data receive get fetch from device slave address i2cget twi iic smbus",
        },
        exec: Exec::Local(i2c_read),
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Write bytes to an I2C device.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["address","data"],"additionalProperties":false}"#,
 keywords: "i2c write send bytes byte command configure set register value to device i2cset i2ctransfer twi iic smbus poke",
        },
        exec: Exec::Local(i2c_write),
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_write_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Write bytes, then read count bytes, in one repeated-start transaction.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""},"count":{"type":"integer"}},"required":["address","data","count"],"additionalProperties":false}"#,
 keywords: "i2c write then read combined transaction repeated start restart command response query register pointer i2ctransfer twi iic smbus",
        },
        exec: Exec::Local(i2c_write_read),
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_read_register",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read count registers of 8 or 16 bits from an I2C device, starting at register.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"register":{"type":["integer","string"]},"count":{"type":"integer"},"width":{"enum":[8,16],"default":8}},"required":["address","register"],"additionalProperties":false}"#,
 keywords: "i2c register read reg chip id who am i whoami status config calibration dump peek i2cget i2cdump register map sensor register 0xd0 twi iic smbus",
        },
        exec: Exec::Local(i2c_read_register),
    },
];

fn bus(cx: &Cx<'_>, args: &Value, hw: &Hardware) -> Result<u8, CallError> {
    let b = opt(cx, args, "bus", |k, v| values::bounded(k, v, 255))?.map(|b| b as u8);
    hw.bus_or_default(b).map_err(|e| hardware::fail(cx, e))
}

fn count(cx: &Cx<'_>, args: &Value, default: Option<u64>) -> Result<usize, CallError> {
    let n = match opt(cx, args, "count", |k, v| values::bounded(k, v, 4096))? {
        Some(n) => n,
        None => default.ok_or_else(|| ToolError::invalid(cx.tool.name, "/count", "is required"))?,
    };
    if n == 0 {
        return Err(ToolError::invalid(cx.tool.name, "/count", "must be at least 1").into());
    }
    Ok(n as usize)
}

/// An `i2cdetect`-style grid of the found addresses.
pub fn grid(found: &[u8]) -> String {
    let mut g = String::from("     0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f\n");
    for row in 0..8u8 {
        g.push_str(&format!("{:02x}:", row * 16));
        for col in 0..16u8 {
            let a = row * 16 + col;
            let cell = if !(0x08..=0x77).contains(&a) {
                "   ".to_string()
            } else if found.contains(&a) {
                format!(" {a:02x}")
            } else {
                " --".to_string()
            };
            g.push_str(&cell);
        }
        g.push('\n');
    }
    g
}

fn i2c_scan(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let found = hw.i2c_scan(bus).map_err(|e| hardware::fail(cx, e))?;
    let named: Vec<Value> = found
        .iter()
        .map(|a| {
            let dev = hw
                .def()
                .device
                .iter()
                .find(|d| d.address == Some(*a) && d.bus.unwrap_or(bus) == bus);
            json!({"address": values::show_address(*a), "device": dev.map(|d| d.name.clone())})
        })
        .collect();
    Ok(json!({"bus": bus, "found": named, "grid": grid(&found)}))
}

fn i2c_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let n = count(cx, &args, None)?;
    let data = hw
        .i2c_read(bus, address, n)
        .map_err(|e| hardware::fail(cx, e))?;
    Ok(
        json!({"bus": bus, "address": values::show_address(address), "read": values::show_bytes(&data)}),
    )
}

fn i2c_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let data = req(cx, &args, "data", values::bytes)?;
    hw.i2c_write(bus, address, &data)
        .map_err(|e| hardware::fail(cx, e))?;
    Ok(
        json!({"bus": bus, "address": values::show_address(address), "written": values::show_bytes(&data)}),
    )
}

fn i2c_write_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let data = req(cx, &args, "data", values::bytes)?;
    let n = count(cx, &args, None)?;
    let read = hw
        .i2c_write_read(bus, address, &data, n)
        .map_err(|e| hardware::fail(cx, e))?;
    Ok(json!({
        "bus": bus,
        "address": values::show_address(address),
        "written": values::show_bytes(&data),
        "read": values::show_bytes(&read),
    }))
}

fn i2c_read_register(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let width = args.get("width").and_then(Value::as_u64).unwrap_or(8);
    let reg_max = if width == 16 { 0xffff } else { 0xff };
    let register = req(cx, &args, "register", |k, v| values::bounded(k, v, reg_max))?;
    let n = count(cx, &args, Some(1))?;
    let pointer: Vec<u8> = if width == 16 {
        vec![(register >> 8) as u8, register as u8]
    } else {
        vec![register as u8]
    };
    let bytes_per = if width == 16 { 2 } else { 1 };
    let raw = hw
        .i2c_write_read(bus, address, &pointer, n * bytes_per)
        .map_err(|e| hardware::fail(cx, e))?;
    let registers: Vec<Value> = raw
        .chunks(bytes_per)
        .enumerate()
        .map(|(i, c)| {
            let value = c.iter().fold(0u32, |acc, b| (acc << 8) | *b as u32);
            let reg = register as usize + i;
            if width == 16 {
                json!({"register": format!("0x{reg:04x}"), "value": value, "hex": format!("0x{value:04x}")})
            } else {
                json!({"register": format!("0x{reg:02x}"), "value": value, "hex": format!("0x{value:02x}")})
            }
        })
        .collect();
    Ok(
        json!({"bus": bus, "address": values::show_address(address), "width": width, "registers": registers}),
    )
}
