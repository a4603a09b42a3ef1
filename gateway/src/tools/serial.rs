//! The `serial` toolset.

use super::hwargs;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Parse, Part, ToolArgs, ToolDef, Typed};
use covo_board::values;
use covo_core::catalog::serial as c;
use covo_hal_tools::backend;
use covo_hal_tools::hw::read_until;
use serde_json::{json, Value};
use std::io::Write as _;
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::typed(&c::SERIAL_LIST, &Typed { run: serial_list }).needs(Need::Board(Part::Serial)),
    ToolDef::typed(&c::SERIAL_WRITE, &Typed { run: serial_write }).needs(Need::Board(Part::Serial)),
    ToolDef::typed(&c::SERIAL_READ, &Typed { run: serial_read }).needs(Need::Board(Part::Serial)),
    ToolDef::typed(
        &c::SERIAL_REQUEST,
        &Typed {
            run: serial_request,
        },
    )
    .needs(Need::Board(Part::Serial)),
];

/// The most bytes one read returns.
const MAX_READ: u64 = 4096;
/// The longest one read or request waits.
const MAX_WAIT_MS: u64 = 60_000;

/// A port, by the name or path a call gives, and the baud rate it asks for.
struct Port {
    /// The declared name when the call names a declared port (by name or path), which is what
    /// the policy's serial allowlist names; else the call's text, which the allowlist refuses
    /// and which no executor can open ("not declared").
    name: String,
    baud: Option<u32>,
}

impl Port {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let named = p.str("port")?.ok_or_else(|| p.missing("port"))?;
        let name = match p.board.resolve_serial(&named) {
            Ok(def) => def.name.clone(),
            Err(_) => named,
        };
        Ok(Port {
            name,
            baud: p.int("baud", u32::MAX as u64)?.map(|b| b as u32),
        })
    }
}

fn timeout(p: &Parse<'_>, default: u64) -> Result<Duration, ToolError> {
    Ok(Duration::from_millis(
        p.int("timeout_ms", MAX_WAIT_MS)?.unwrap_or(default),
    ))
}

/// `\n`, `\r` and `\t` written as escapes by a model become the bytes.
fn unescape(s: &str) -> Vec<u8> {
    s.replace("\\r", "\r")
        .replace("\\n", "\n")
        .replace("\\t", "\t")
        .into_bytes()
}

/// `serial_write`: text or hex bytes to a port.
pub struct Write {
    port: Port,
    data: Vec<u8>,
}

impl ToolArgs for Write {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let port = Port::parse(p)?;
        let data = match (p.str("text")?, p.opt("hex", values::bytes)?) {
            (Some(t), None) => t.into_bytes(),
            (None, Some(h)) => h,
            _ => {
                return Err(ToolError::invalid(
                    p.tool,
                    "",
                    "give exactly one of text or hex",
                ))
            }
        };
        Ok(Write { port, data })
    }

    fn access(&self) -> Vec<Access> {
        vec![Access::SerialWrite {
            port: self.port.name.clone(),
            bytes: self.data.len(),
        }]
    }
}

/// `serial_read`: up to `max` bytes, until a delimiter or the timeout.
pub struct Read {
    port: Port,
    max: usize,
    wait: Duration,
    delimiter: Option<Vec<u8>>,
}

impl ToolArgs for Read {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(Read {
            port: Port::parse(p)?,
            max: p.int("max_bytes", MAX_READ)?.unwrap_or(256) as usize,
            wait: timeout(p, 1000)?,
            delimiter: p.str("delimiter")?.as_deref().map(unescape),
        })
    }
}

/// `serial_request`: a line out (CR LF added unless it ends in a newline), a reply back.
pub struct Request {
    port: Port,
    line: String,
    delimiter: Vec<u8>,
    wait: Duration,
}

impl ToolArgs for Request {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let mut line = p.str("text")?.ok_or_else(|| p.missing("text"))?;
        if !line.ends_with('\n') {
            line.push_str("\r\n");
        }
        Ok(Request {
            port: Port::parse(p)?,
            line,
            delimiter: p
                .str("delimiter")?
                .as_deref()
                .map(unescape)
                .unwrap_or_else(|| b"\n".to_vec()),
            wait: timeout(p, 2000)?,
        })
    }

    fn access(&self) -> Vec<Access> {
        vec![Access::SerialWrite {
            port: self.port.name.clone(),
            bytes: self.line.len(),
        }]
    }
}

fn serial_list(cx: &Cx<'_>, _args: ()) -> Result<Value, CallError> {
    let board = cx.board().clone();
    let system = backend::list_ports();
    let declared: Vec<Value> = board
        .def()
        .serial
        .iter()
        .map(|d| {
            let found = match &d.usb {
                Some(u) => backend::match_port(u, &system).ok().map(|p| p.path.clone()),
                None => d.path.clone(),
            };
            json!({
                "name": d.name,
                "path": found,
                "usb": d.usb.as_ref().map(|u| json!({"vid": u.vid, "pid": u.pid, "serial": u.serial})),
                "baud": d.baud,
            })
        })
        .collect();
    let ports: Vec<Value> = system
        .iter()
        .map(|p| {
            let device = board.def().serial.iter().find(|d| {
                d.path.as_deref() == Some(p.path.as_str())
                    || d.usb
                        .as_ref()
                        .is_some_and(|u| backend::match_port(u, std::slice::from_ref(p)).is_ok())
            });
            json!({
                "path": p.path,
                "vid": p.vid.map(|v| format!("{v:04x}")),
                "pid": p.pid.map(|v| format!("{v:04x}")),
                "serial": p.serial,
                "product": p.product,
                "declared_as": device.map(|d| d.name.clone()),
            })
        })
        .collect();
    Ok(json!({"declared": declared, "system": ports}))
}

fn shown(bytes: &[u8]) -> Value {
    let mut v = values::show_bytes(bytes);
    v["text"] = json!(String::from_utf8_lossy(bytes));
    v
}

fn serial_write(cx: &Cx<'_>, w: Write) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let mut p = hw
        .open_serial(&w.port.name, w.port.baud, Duration::from_millis(500))
        .map_err(|e| hwargs::fail(cx, e))?;
    p.write_all(&w.data)
        .and_then(|_| p.flush())
        .map_err(|e| cx.fail(e.to_string()))?;
    Ok(json!({"port": w.port.name, "written": w.data.len()}))
}

fn serial_read(cx: &Cx<'_>, r: Read) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let mut p = hw
        .open_serial(&r.port.name, r.port.baud, Duration::from_millis(50))
        .map_err(|e| hwargs::fail(cx, e))?;
    let (data, stop) = read_until(p.as_mut(), r.delimiter.as_deref(), r.max, r.wait)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"port": r.port.name, "read": shown(&data), "stopped_by": stop}))
}

fn serial_request(cx: &Cx<'_>, r: Request) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let mut p = hw
        .open_serial(&r.port.name, r.port.baud, Duration::from_millis(50))
        .map_err(|e| hwargs::fail(cx, e))?;
    p.write_all(r.line.as_bytes())
        .and_then(|_| p.flush())
        .map_err(|e| cx.fail(e.to_string()))?;
    let (reply, stop) = read_until(p.as_mut(), Some(&r.delimiter), MAX_READ as usize, r.wait)
        .map_err(|e| hwargs::fail(cx, e))?;
    if reply.is_empty() {
        return Err(ToolError::Failed {
            tool: cx.tool.name.into(),
            message: format!("no reply within {} ms", r.wait.as_millis()),
            hint: Some("check the baud rate and the line ending the device expects".into()),
        }
        .into());
    }
    Ok(json!({"port": r.port.name, "sent": r.line, "reply": shown(&reply), "stopped_by": stop}))
}
