//! The `serial` toolset.

use super::hwargs::{self, opt};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Part, ToolDef};
use covo_core::catalog::serial as c;
use covo_hal_tools::backend;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::hw::read_until;
use covo_hal_tools::values;
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::SERIAL_LIST, serial_list).needs(Need::Board(Part::Serial)),
    ToolDef::local(&c::SERIAL_WRITE, serial_write)
        .with_access(write_access)
        .needs(Need::Board(Part::Serial)),
    ToolDef::local(&c::SERIAL_READ, serial_read).needs(Need::Board(Part::Serial)),
    ToolDef::local(&c::SERIAL_REQUEST, serial_request)
        .with_access(write_access)
        .needs(Need::Board(Part::Serial)),
];

/// `serial_write` and `serial_request` write to their port.
fn write_access(_: &BoardDef, args: &Value) -> Vec<Access> {
    args.get("port")
        .and_then(Value::as_str)
        .map(|port| Access::SerialWrite { port: port.into() })
        .into_iter()
        .collect()
}

/// The most bytes one read returns.
const MAX_READ: u64 = 4096;
/// The longest one read or request waits.
const MAX_WAIT_MS: u64 = 60_000;

fn serial_list(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
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

fn payload(cx: &Cx<'_>, args: &Value) -> Result<Vec<u8>, CallError> {
    match (args.get("text").and_then(Value::as_str), args.get("hex")) {
        (Some(t), None) => Ok(t.as_bytes().to_vec()),
        (None, Some(h)) => values::bytes("hex", h).map_err(|e| hwargs::invalid(cx, e)),
        _ => Err(ToolError::invalid(cx.tool.name, "", "give exactly one of text or hex").into()),
    }
}

fn port_arg(args: &Value) -> &str {
    args.get("port").and_then(Value::as_str).unwrap_or_default()
}

fn timeout(cx: &Cx<'_>, args: &Value, default: u64) -> Result<Duration, CallError> {
    Ok(Duration::from_millis(
        opt(cx, args, "timeout_ms", |k, v| {
            values::bounded(k, v, MAX_WAIT_MS)
        })?
        .unwrap_or(default),
    ))
}

fn baud(args: &Value) -> Option<u32> {
    args.get("baud").and_then(Value::as_u64).map(|b| b as u32)
}

fn shown(bytes: &[u8]) -> Value {
    let mut v = values::show_bytes(bytes);
    v["text"] = json!(String::from_utf8_lossy(bytes));
    v
}

fn serial_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let data = payload(cx, &args)?;
    let mut p = hw
        .open_serial(port_arg(&args), baud(&args), Duration::from_millis(500))
        .map_err(|e| hwargs::fail(cx, e))?;
    p.write_all(&data)
        .and_then(|_| p.flush())
        .map_err(|e| cx.fail(e.to_string()))?;
    Ok(json!({"port": port_arg(&args), "written": data.len()}))
}

fn serial_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let max = opt(cx, &args, "max_bytes", |k, v| {
        values::bounded(k, v, MAX_READ)
    })?
    .unwrap_or(256) as usize;
    let wait = timeout(cx, &args, 1000)?;
    let delimiter = args.get("delimiter").and_then(Value::as_str).map(unescape);
    let mut p = hw
        .open_serial(port_arg(&args), baud(&args), Duration::from_millis(50))
        .map_err(|e| hwargs::fail(cx, e))?;
    let (data, stop) =
        read_until(p.as_mut(), delimiter.as_deref(), max, wait).map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"port": port_arg(&args), "read": shown(&data), "stopped_by": stop}))
}

fn serial_request(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let mut line = args
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !line.ends_with('\n') {
        line.push_str("\r\n");
    }
    let delimiter = args
        .get("delimiter")
        .and_then(Value::as_str)
        .map(unescape)
        .unwrap_or_else(|| b"\n".to_vec());
    let wait = timeout(cx, &args, 2000)?;
    let mut p = hw
        .open_serial(port_arg(&args), baud(&args), Duration::from_millis(50))
        .map_err(|e| hwargs::fail(cx, e))?;
    p.write_all(line.as_bytes())
        .and_then(|_| p.flush())
        .map_err(|e| cx.fail(e.to_string()))?;
    let (reply, stop) = read_until(p.as_mut(), Some(&delimiter), MAX_READ as usize, wait)
        .map_err(|e| hwargs::fail(cx, e))?;
    if reply.is_empty() {
        return Err(ToolError::Failed {
            tool: cx.tool.name.into(),
            message: format!("no reply within {} ms", wait.as_millis()),
            hint: Some("check the baud rate and the line ending the device expects".into()),
        }
        .into());
    }
    Ok(json!({"port": port_arg(&args), "sent": line, "reply": shown(&reply), "stopped_by": stop}))
}

/// `\n`, `\r` and `\t` written as escapes by a model become the bytes.
fn unescape(s: &str) -> Vec<u8> {
    s.replace("\\r", "\r")
        .replace("\\n", "\n")
        .replace("\\t", "\t")
        .into_bytes()
}
