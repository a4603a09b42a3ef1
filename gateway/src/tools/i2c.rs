//! The `i2c` toolset.

use super::hwargs::{self, opt, req};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Part, ToolDef};
use covo_core::catalog::i2c as c;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::values;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::I2C_SCAN, i2c_scan).needs(Need::Board(Part::I2c)),
    ToolDef::local(&c::I2C_READ, i2c_read)
        .with_access(read_access)
        .needs(Need::Board(Part::I2c)),
    ToolDef::local(&c::I2C_WRITE, i2c_write)
        .with_access(write_access)
        .needs(Need::Board(Part::I2c)),
    ToolDef::local(&c::I2C_WRITE_READ, i2c_write_read)
        .with_access(write_read_access)
        .needs(Need::Board(Part::I2c)),
    ToolDef::local(&c::I2C_READ_REGISTER, i2c_read_register)
        .with_access(register_access)
        .needs(Need::Board(Part::I2c)),
];

/// The most bytes a combined write-then-read may write and still be a read: one register
/// pointer byte, which selects what to read and changes nothing on the device. A longer write
/// part (a register address and a value, a command with arguments) is a write.
pub const POINTER_BYTES: usize = 1;

/// `i2c_read`: the address, and the transfer (`count`).
fn read_access(_: &BoardDef, args: &Value) -> Vec<Access> {
    vec![Access::I2cRead {
        address: hwargs::address_of(args),
        bytes: hwargs::count_of(args),
    }]
}

/// `i2c_write`: the bus and address written, and how many bytes.
fn write_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    vec![Access::I2cWrite {
        bus: hwargs::bus_of(def, args),
        address: hwargs::address_of(args),
        bytes: hwargs::len_of(args, "data"),
    }]
}

/// A combined write-then-read that writes `written` bytes and reads `read`: a read when the
/// write part is at most a register pointer ([`POINTER_BYTES`]); otherwise the write part is
/// judged exactly as `i2c_write` is (writable board, not read-only, write allowlist, transfer
/// size), and the read part as a read.
fn transaction_access(def: &BoardDef, args: &Value, written: usize, read: usize) -> Vec<Access> {
    let address = hwargs::address_of(args);
    if written <= POINTER_BYTES {
        return vec![Access::I2cRead {
            address,
            bytes: read.max(written),
        }];
    }
    vec![
        Access::I2cWrite {
            bus: hwargs::bus_of(def, args),
            address,
            bytes: written,
        },
        Access::I2cRead {
            address,
            bytes: read,
        },
    ]
}

/// `i2c_read_register`: the register address is the write part (one byte, or two with
/// `register_width: 16`), and the read part is `count` values of `width` bits, in bytes.
fn register_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    let widths = RegisterWidths::of(args);
    let count = args.get("count").and_then(Value::as_u64).unwrap_or(1) as usize;
    transaction_access(
        def,
        args,
        widths.pointer_bytes(),
        count.saturating_mul(widths.value_bytes()),
    )
}

/// How `i2c_read_register` addresses a register and how wide its values are: two different
/// things (a 16-bit value behind an 8-bit register address is common; a 16-bit register
/// address is an EEPROM's or a large device's).
struct RegisterWidths {
    /// Bits in the register address sent first: 8 or 16.
    register: u64,
    /// Bits in each value read: 8 or 16.
    value: u64,
}

impl RegisterWidths {
    /// The widths a call asks for (the schema allows only 8 and 16; 8 is the default).
    fn of(args: &Value) -> RegisterWidths {
        let bits = |key: &str| match args.get(key).and_then(Value::as_u64) {
            Some(16) => 16,
            _ => 8,
        };
        RegisterWidths {
            register: bits("register_width"),
            value: bits("width"),
        }
    }

    /// The register pointer's length on the wire.
    fn pointer_bytes(&self) -> usize {
        (self.register / 8) as usize
    }

    /// Bytes per value read.
    fn value_bytes(&self) -> usize {
        (self.value / 8) as usize
    }
}

/// `i2c_write_read`: `data` is the write part, `count` the read part.
fn write_read_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    transaction_access(
        def,
        args,
        hwargs::len_of(args, "data"),
        hwargs::count_of(args),
    )
}

fn bus(cx: &Cx<'_>, args: &Value, hw: &Hardware) -> Result<u8, CallError> {
    let b = opt(cx, args, "bus", |k, v| values::bounded(k, v, 255))?.map(|b| b as u8);
    hw.bus_or_default(b).map_err(|e| hwargs::fail(cx, e))
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
    let hw = hwargs::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let found = hw.i2c_scan(bus).map_err(|e| hwargs::fail(cx, e))?;
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
    let hw = hwargs::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let n = count(cx, &args, None)?;
    let data = hw
        .i2c_read(bus, address, n)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(
        json!({"bus": bus, "address": values::show_address(address), "read": values::show_bytes(&data)}),
    )
}

fn i2c_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let data = req(cx, &args, "data", values::bytes)?;
    hw.i2c_write(bus, address, &data)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(
        json!({"bus": bus, "address": values::show_address(address), "written": values::show_bytes(&data)}),
    )
}

fn i2c_write_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let data = req(cx, &args, "data", values::bytes)?;
    let n = count(cx, &args, None)?;
    let read = hw
        .i2c_write_read(bus, address, &data, n)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({
        "bus": bus,
        "address": values::show_address(address),
        "written": values::show_bytes(&data),
        "read": values::show_bytes(&read),
    }))
}

fn i2c_read_register(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = bus(cx, &args, &hw)?;
    let address = req(cx, &args, "address", values::address)?;
    let widths = RegisterWidths::of(&args);
    let reg_max = if widths.register == 16 { 0xffff } else { 0xff };
    let register = req(cx, &args, "register", |k, v| values::bounded(k, v, reg_max))?;
    let n = count(cx, &args, Some(1))?;
    // The pointer is the only thing written (two bytes for a 16-bit register address, judged
    // as a write by the access function); the values' width only changes how much is read.
    let pointer: Vec<u8> = if widths.register == 16 {
        vec![(register >> 8) as u8, register as u8]
    } else {
        vec![register as u8]
    };
    let bytes_per = widths.value_bytes();
    let raw = hw
        .i2c_write_read(bus, address, &pointer, n * bytes_per)
        .map_err(|e| hwargs::fail(cx, e))?;
    let registers: Vec<Value> = raw
        .chunks(bytes_per)
        .enumerate()
        .map(|(i, c)| {
            let value = c.iter().fold(0u32, |acc, b| (acc << 8) | *b as u32);
            let reg = register as usize + i;
            let reg = if widths.register == 16 {
                format!("0x{reg:04x}")
            } else {
                format!("0x{reg:02x}")
            };
            let hex = if widths.value == 16 {
                format!("0x{value:04x}")
            } else {
                format!("0x{value:02x}")
            };
            json!({"register": reg, "value": value, "hex": hex})
        })
        .collect();
    Ok(json!({
        "bus": bus,
        "address": values::show_address(address),
        "width": widths.value,
        "register_width": widths.register,
        "registers": registers,
    }))
}
