//! The `i2c` toolset.

use super::hwargs;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Parse, Part, ToolArgs, ToolDef, Typed};
use covo_board::values;
use covo_core::catalog::i2c as c;
use covo_hal_tools::hw::Hardware;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::typed(&c::I2C_SCAN, &Typed { run: i2c_scan }).needs(Need::Board(Part::I2c)),
    ToolDef::typed(&c::I2C_READ, &Typed { run: i2c_read }).needs(Need::Board(Part::I2c)),
    ToolDef::typed(&c::I2C_WRITE, &Typed { run: i2c_write }).needs(Need::Board(Part::I2c)),
    ToolDef::typed(
        &c::I2C_WRITE_READ,
        &Typed {
            run: i2c_write_read,
        },
    )
    .needs(Need::Board(Part::I2c)),
    ToolDef::typed(
        &c::I2C_READ_REGISTER,
        &Typed {
            run: i2c_read_register,
        },
    )
    .needs(Need::Board(Part::I2c)),
];

/// The largest `count` a call may ask for.
const MAX_COUNT: u64 = 4096;

/// The bus a call names, else the board's first: resolved once, judged and used.
fn bus(p: &Parse<'_>) -> Result<Option<u8>, ToolError> {
    let named = p.int("bus", 255)?.map(|b| b as u8);
    Ok(named.or(p.board.default_i2c_bus()))
}

/// The bus for an executor: the resolved one, or the board's error when it has none.
fn use_bus(cx: &Cx<'_>, hw: &Hardware, bus: Option<u8>) -> Result<u8, CallError> {
    hw.bus_or_default(bus).map_err(|e| hwargs::fail(cx, e))
}

/// `count`: required unless `default` is given, at least 1.
fn count(p: &Parse<'_>, default: Option<u64>) -> Result<usize, ToolError> {
    let n = match p.int("count", MAX_COUNT)? {
        Some(n) => n,
        None => default.ok_or_else(|| p.missing("count"))?,
    };
    if n == 0 {
        return Err(p.invalid("count", "must be at least 1"));
    }
    Ok(n as usize)
}

/// `i2c_scan`: which bus.
pub struct Scan {
    bus: Option<u8>,
}

impl ToolArgs for Scan {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(Scan { bus: bus(p)? })
    }
}

/// One combined I2C transaction: `write` bytes, then `read` bytes, at `address` on `bus`.
/// `i2c_read` writes nothing, `i2c_write` reads nothing, `i2c_write_read` does both.
pub struct Transaction {
    bus: Option<u8>,
    address: u8,
    write: Vec<u8>,
    read: usize,
}

impl Transaction {
    fn parse(p: &Parse<'_>, write: bool, read: bool) -> Result<Self, ToolError> {
        Ok(Transaction {
            bus: bus(p)?,
            address: p.req("address", values::address)?,
            write: if write {
                p.req("data", values::bytes)?
            } else {
                Vec::new()
            },
            read: if read { count(p, None)? } else { 0 },
        })
    }

    fn access(&self) -> Vec<Access> {
        vec![Access::I2c {
            bus: self.bus,
            address: self.address,
            written: self.write.len(),
            read: self.read,
        }]
    }
}

/// `i2c_read`'s arguments.
pub struct Read(Transaction);
/// `i2c_write`'s arguments.
pub struct Write(Transaction);
/// `i2c_write_read`'s arguments.
pub struct WriteRead(Transaction);

impl ToolArgs for Read {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Transaction::parse(p, false, true).map(Read)
    }
    fn access(&self) -> Vec<Access> {
        self.0.access()
    }
}

impl ToolArgs for Write {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Transaction::parse(p, true, false).map(Write)
    }
    fn access(&self) -> Vec<Access> {
        self.0.access()
    }
}

impl ToolArgs for WriteRead {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Transaction::parse(p, true, true).map(WriteRead)
    }
    fn access(&self) -> Vec<Access> {
        self.0.access()
    }
}

/// `i2c_read_register`: the register address is the write part (one byte, or two with
/// `register_width: 16`), and the read part is `count` values of `width` bits. Two different
/// widths: a 16-bit value behind an 8-bit register address is common; a 16-bit register
/// address is an EEPROM's or a large device's.
pub struct ReadRegister {
    bus: Option<u8>,
    address: u8,
    /// The register pointer as sent, most significant byte first.
    pointer: Vec<u8>,
    register: u64,
    /// Bytes per value read: 1 or 2.
    value_bytes: usize,
    count: usize,
}

impl ToolArgs for ReadRegister {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        // The schema allows only 8 and 16; 8 is the default.
        let bits = |key: &str| -> Result<usize, ToolError> {
            match p.int(key, 16)? {
                None | Some(8) => Ok(8),
                Some(16) => Ok(16),
                Some(_) => Err(p.invalid(key, "must be 8 or 16")),
            }
        };
        let (register_bits, value_bits) = (bits("register_width")?, bits("width")?);
        let reg_max = if register_bits == 16 { 0xffff } else { 0xff };
        let register = p.req("register", |k, v| values::bounded(k, v, reg_max))?;
        let pointer = if register_bits == 16 {
            vec![(register >> 8) as u8, register as u8]
        } else {
            vec![register as u8]
        };
        Ok(ReadRegister {
            bus: bus(p)?,
            address: p.req("address", values::address)?,
            pointer,
            register,
            value_bytes: value_bits / 8,
            count: count(p, Some(1))?,
        })
    }

    fn access(&self) -> Vec<Access> {
        vec![Access::I2c {
            bus: self.bus,
            address: self.address,
            written: self.pointer.len(),
            read: self.count.saturating_mul(self.value_bytes),
        }]
    }
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

fn i2c_scan(cx: &Cx<'_>, args: Scan) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = use_bus(cx, &hw, args.bus)?;
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

fn i2c_read(cx: &Cx<'_>, Read(t): Read) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = use_bus(cx, &hw, t.bus)?;
    let data = hw
        .i2c_read(bus, t.address, t.read)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(
        json!({"bus": bus, "address": values::show_address(t.address), "read": values::show_bytes(&data)}),
    )
}

fn i2c_write(cx: &Cx<'_>, Write(t): Write) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = use_bus(cx, &hw, t.bus)?;
    hw.i2c_write(bus, t.address, &t.write)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(
        json!({"bus": bus, "address": values::show_address(t.address), "written": values::show_bytes(&t.write)}),
    )
}

fn i2c_write_read(cx: &Cx<'_>, WriteRead(t): WriteRead) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = use_bus(cx, &hw, t.bus)?;
    let read = hw
        .i2c_write_read(bus, t.address, &t.write, t.read)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({
        "bus": bus,
        "address": values::show_address(t.address),
        "written": values::show_bytes(&t.write),
        "read": values::show_bytes(&read),
    }))
}

fn i2c_read_register(cx: &Cx<'_>, r: ReadRegister) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let bus = use_bus(cx, &hw, r.bus)?;
    // The pointer is the only thing written (two bytes for a 16-bit register address, judged
    // as a write); the values' width only changes how much is read.
    let raw = hw
        .i2c_write_read(bus, r.address, &r.pointer, r.count * r.value_bytes)
        .map_err(|e| hwargs::fail(cx, e))?;
    let wide_register = r.pointer.len() == 2;
    let registers: Vec<Value> = raw
        .chunks(r.value_bytes)
        .enumerate()
        .map(|(i, c)| {
            let value = c.iter().fold(0u32, |acc, b| (acc << 8) | *b as u32);
            let reg = r.register as usize + i;
            let reg = if wide_register {
                format!("0x{reg:04x}")
            } else {
                format!("0x{reg:02x}")
            };
            let hex = if r.value_bytes == 2 {
                format!("0x{value:04x}")
            } else {
                format!("0x{value:02x}")
            };
            json!({"register": reg, "value": value, "hex": hex})
        })
        .collect();
    Ok(json!({
        "bus": bus,
        "address": values::show_address(r.address),
        "width": r.value_bytes * 8,
        "register_width": r.pointer.len() * 8,
        "registers": registers,
    }))
}
