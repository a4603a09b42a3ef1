//! The `gpio` toolset.

use super::hwargs::{self, opt, req};
use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Part, ToolDef};
use covo_core::catalog::gpio as c;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::bus::Edge;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::values;
use serde_json::{json, Value};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::GPIO_READ, gpio_read).needs(Need::Board(Part::Gpio)),
    ToolDef::local(&c::GPIO_WRITE, gpio_write)
        .with_access(write_access)
        .needs(Need::Board(Part::Gpio)),
    ToolDef::local(&c::GPIO_WAIT_EDGE, gpio_wait_edge).needs(Need::Board(Part::Gpio)),
    ToolDef::local(&c::PWM_SET, pwm_set)
        .with_access(pwm_access)
        .needs(Need::Board(Part::Pwm)),
];

/// `gpio_write` drives its line as an output.
fn write_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    hwargs::pin_of(def, args.get("pin"))
        .map(|pin| Access::GpioOutput { pin })
        .into_iter()
        .collect()
}

/// `pwm_set` sets its channel's frequency and duty.
fn pwm_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    hwargs::channel_of(def, args.get("channel"))
        .map(|channel| Access::Pwm {
            channel,
            frequency_hz: hwargs::f64_or(args, "frequency_hz", DEFAULT_PWM_HZ),
            duty: hwargs::f64_or(args, "duty", -1.0),
        })
        .into_iter()
        .collect()
}

/// The PWM frequency used when a call gives none (a common fan/dimmer frequency).
pub const DEFAULT_PWM_HZ: f64 = 1000.0;

/// The longest timed pulse `gpio_write` holds.
const MAX_PULSE_MS: u64 = 60_000;
/// The longest `gpio_wait_edge` waits.
const MAX_WAIT_MS: u64 = 300_000;

fn pin(cx: &Cx<'_>, args: &Value, hw: &Hardware) -> Result<u32, CallError> {
    let p = req(cx, args, "pin", values::pin)?;
    hw.resolve_pin(&p).map_err(|e| hwargs::fail(cx, e))
}

fn gpio_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let pin = pin(cx, &args, &hw)?;
    let high = hw.gpio_read(pin).map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"pin": pin, "level": high as u8, "state": if high { "high" } else { "low" }}))
}

fn gpio_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let pin = pin(cx, &args, &hw)?;
    let level = args.get("level").and_then(Value::as_u64).unwrap_or(0) == 1;
    let pulse = opt(cx, &args, "pulse_ms", |k, v| {
        values::bounded(k, v, MAX_PULSE_MS)
    })?;
    hw.gpio_write(pin, level).map_err(|e| hwargs::fail(cx, e))?;
    if let Some(ms) = pulse {
        std::thread::sleep(Duration::from_millis(ms));
        hw.gpio_write(pin, !level)
            .map_err(|e| hwargs::fail(cx, e))?;
        return Ok(
            json!({"pin": pin, "pulsed": level as u8, "for_ms": ms, "level": (!level) as u8}),
        );
    }
    Ok(json!({"pin": pin, "level": level as u8}))
}

fn gpio_wait_edge(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let pin = pin(cx, &args, &hw)?;
    let edge = match args.get("edge").and_then(Value::as_str).unwrap_or("both") {
        "rising" => Edge::Rising,
        "falling" => Edge::Falling,
        _ => Edge::Both,
    };
    let timeout = opt(cx, &args, "timeout_ms", |k, v| {
        values::bounded(k, v, MAX_WAIT_MS)
    })?
    .unwrap_or(10_000);
    match hw
        .gpio_wait_edge(pin, edge, Duration::from_millis(timeout))
        .map_err(|e| hwargs::fail(cx, e))?
    {
        Some(ev) => Ok(json!({
            "pin": pin,
            "edge": if ev.rising { "rising" } else { "falling" },
            "after_ms": ev.after.as_millis() as u64,
        })),
        None => Ok(json!({"pin": pin, "edge": null, "timed_out": true, "waited_ms": timeout})),
    }
}

fn pwm_set(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let ch = req(cx, &args, "channel", values::pin)?;
    let channel = hw.resolve_channel(&ch).map_err(|e| hwargs::fail(cx, e))?;
    let duty = args.get("duty").and_then(Value::as_f64).unwrap_or(0.0);
    let freq = args
        .get("frequency_hz")
        .and_then(Value::as_f64)
        .unwrap_or(DEFAULT_PWM_HZ);
    let (f, d) = hw
        .pwm_set(channel, freq, duty)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(
        json!({"channel": channel, "frequency_hz": f, "duty": d, "percent": (d * 1000.0).round() / 10.0}),
    )
}
