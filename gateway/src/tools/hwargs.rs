//! What the hardware tools share: the board's hardware for an executor, argument parsing that
//! turns hardware errors into errors the model can act on, and the helpers the tools' access
//! functions use to say what a call touches (`hardware::Access`).

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::tool_error;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::hw::{Hardware, HwError};
use covo_hal_tools::values::{self, PinRef};
use serde_json::Value;
use std::sync::Arc;

/// The board's hardware for an executor, or the error the model sees.
pub fn hw(cx: &Cx<'_>) -> Result<Arc<Hardware>, CallError> {
    cx.board()
        .hardware()
        .map_err(|e| cx.fail(format!("the board is unavailable: {e}")))
}

/// A hardware error as a call error for this executor.
pub fn fail(cx: &Cx<'_>, e: HwError) -> CallError {
    tool_error(cx.tool.name, e).into()
}

/// A value-parsing error as an invalid-arguments error for this executor.
pub fn invalid(cx: &Cx<'_>, e: values::ValueError) -> CallError {
    ToolError::invalid(cx.tool.name, &e.field, e.problem).into()
}

/// Argument `key` parsed with `f`, if present.
pub fn opt<T>(
    cx: &Cx<'_>,
    args: &Value,
    key: &str,
    f: impl Fn(&str, &Value) -> Result<T, values::ValueError>,
) -> Result<Option<T>, CallError> {
    args.get(key)
        .map(|v| f(key, v))
        .transpose()
        .map_err(|e| invalid(cx, e))
}

/// Required argument `key` parsed with `f`.
pub fn req<T>(
    cx: &Cx<'_>,
    args: &Value,
    key: &str,
    f: impl Fn(&str, &Value) -> Result<T, values::ValueError>,
) -> Result<T, CallError> {
    opt(cx, args, key, f)?
        .ok_or_else(|| ToolError::invalid(cx.tool.name, &format!("/{key}"), "is required").into())
}

/// The I2C bus a call names, else the board's default bus.
pub fn bus_of(def: &BoardDef, args: &Value) -> Option<u8> {
    match args.get("bus") {
        Some(v) => values::bounded("bus", v, 255).ok().map(|b| b as u8),
        None => def.default_i2c_bus(),
    }
}

/// The 7-bit address a call names.
pub fn address_of(args: &Value) -> Option<u8> {
    args.get("address")
        .and_then(|v| values::address("address", v).ok())
}

/// The BCM line a pin argument names: a number, or a declared device's pin.
pub fn pin_of(def: &BoardDef, v: Option<&Value>) -> Option<u32> {
    match values::pin("pin", v?).ok()? {
        PinRef::Number(n) => Some(n),
        PinRef::Name(name) => def.device(&name)?.pin,
    }
}

/// The PWM channel a channel argument names: a number, or a declared device's channel.
pub fn channel_of(def: &BoardDef, v: Option<&Value>) -> Option<u32> {
    match values::pin("channel", v?).ok()? {
        PinRef::Number(n) => Some(n),
        PinRef::Name(name) => def.device(&name)?.channel,
    }
}

/// The MCU a call names, or the board's only one.
pub fn mcu_device_of(def: &BoardDef, args: &Value) -> Option<String> {
    if let Some(d) = args.get("device").and_then(Value::as_str) {
        return Some(d.to_string());
    }
    let mut mcus = def
        .device
        .iter()
        .filter(|d| d.driver == covo_hal_tools::driver::Driver::Mcu);
    match (mcus.next(), mcus.next()) {
        (Some(one), None) => Some(one.name.clone()),
        _ => None,
    }
}

/// The length of byte-string argument `key` (0 when absent or unparsable).
pub fn len_of(args: &Value, key: &str) -> usize {
    args.get(key)
        .and_then(|v| values::bytes(key, v).ok())
        .map_or(0, |b| b.len())
}

/// Integer argument `count` (0 when absent).
pub fn count_of(args: &Value) -> usize {
    args.get("count").and_then(Value::as_u64).unwrap_or(0) as usize
}

/// A number argument, or `default` when absent.
pub fn f64_or(args: &Value, key: &str, default: f64) -> f64 {
    args.get(key).and_then(Value::as_f64).unwrap_or(default)
}
