//! The `gpio` toolset.

use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware::{self, opt, req};
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use covo_hal_tools::bus::Edge;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::values;
use serde_json::{json, Value};
use std::time::Duration;

const TOOLSET: &str = "gpio";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "gpio_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read a GPIO line's level (0 or 1).",
 params: r#"{"type":"object","properties":{"pin":{"type":["integer","string"],"description":"BCM or name"}},"required":["pin"],"additionalProperties":false}"#,
 keywords: "gpio read pin input level state high low digital button switch contact closed open reed sensor door pressed is on off check status",
        },
        exec: Exec::Local(gpio_read),
    },
    ToolDef {
        spec: ToolSpec {
            name: "gpio_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Set a GPIO output to level; with pulse_ms, revert after that many ms.",
 params: r#"{"type":"object","properties":{"pin":{"type":["integer","string"],"description":"BCM or name"},"level":{"enum":[0,1]},"pulse_ms":{"type":"integer"}},"required":["pin","level"],"additionalProperties":false}"#,
 keywords: "gpio write set pin output high low on off turn switch toggle relay led light lamp buzzer valve pump heater door lock strike power enable energize pulse momentary click timed trigger actuate",
        },
        exec: Exec::Local(gpio_write),
    },
    ToolDef {
        spec: ToolSpec {
            name: "gpio_wait_edge",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Wait for an edge on a GPIO input (button, motion sensor).",
 params: r#"{"type":"object","properties":{"pin":{"type":["integer","string"],"description":"BCM or name"},"edge":{"enum":["rising","falling","both"]},"timeout_ms":{"type":"integer"}},"required":["pin"],"additionalProperties":false}"#,
 keywords: "gpio wait edge interrupt event trigger press button pressed pir motion detect rising falling change block until input",
        },
        exec: Exec::Local(gpio_wait_edge),
    },
    ToolDef {
        spec: ToolSpec {
            name: "pwm_set",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Set a PWM channel's frequency and duty cycle (fan, dimmer, servo).",
 params: r#"{"type":"object","properties":{"channel":{"type":["integer","string"],"description":"e.g. 0 or fan"},"frequency_hz":{"type":"number"},"duty":{"type":"number","minimum":0,"maximum":1}},"required":["channel","duty"],"additionalProperties":false}"#,
 keywords: "pwm duty cycle frequency speed fan dimmer dim brightness led strip fade servo angle motor speed percent pulse width modulation",
        },
        exec: Exec::Local(pwm_set),
    },
];

/// The PWM frequency used when a call gives none (a common fan/dimmer frequency).
pub const DEFAULT_PWM_HZ: f64 = 1000.0;

/// The longest timed pulse `gpio_write` holds.
const MAX_PULSE_MS: u64 = 60_000;
/// The longest `gpio_wait_edge` waits.
const MAX_WAIT_MS: u64 = 300_000;

fn pin(cx: &Cx<'_>, args: &Value, hw: &Hardware) -> Result<u32, CallError> {
    let p = req(cx, args, "pin", values::pin)?;
    hw.resolve_pin(&p).map_err(|e| hardware::fail(cx, e))
}

fn gpio_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let pin = pin(cx, &args, &hw)?;
    let high = hw.gpio_read(pin).map_err(|e| hardware::fail(cx, e))?;
    Ok(json!({"pin": pin, "level": high as u8, "state": if high { "high" } else { "low" }}))
}

fn gpio_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let pin = pin(cx, &args, &hw)?;
    let level = args.get("level").and_then(Value::as_u64).unwrap_or(0) == 1;
    let pulse = opt(cx, &args, "pulse_ms", |k, v| {
        values::bounded(k, v, MAX_PULSE_MS)
    })?;
    hw.gpio_write(pin, level)
        .map_err(|e| hardware::fail(cx, e))?;
    if let Some(ms) = pulse {
        std::thread::sleep(Duration::from_millis(ms));
        hw.gpio_write(pin, !level)
            .map_err(|e| hardware::fail(cx, e))?;
        return Ok(
            json!({"pin": pin, "pulsed": level as u8, "for_ms": ms, "level": (!level) as u8}),
        );
    }
    Ok(json!({"pin": pin, "level": level as u8}))
}

fn gpio_wait_edge(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
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
        .map_err(|e| hardware::fail(cx, e))?
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
    let hw = hardware::hw(cx)?;
    let ch = req(cx, &args, "channel", values::pin)?;
    let channel = hw.resolve_channel(&ch).map_err(|e| hardware::fail(cx, e))?;
    let duty = args.get("duty").and_then(Value::as_f64).unwrap_or(0.0);
    let freq = args
        .get("frequency_hz")
        .and_then(Value::as_f64)
        .unwrap_or(DEFAULT_PWM_HZ);
    let (f, d) = hw
        .pwm_set(channel, freq, duty)
        .map_err(|e| hardware::fail(cx, e))?;
    Ok(
        json!({"channel": channel, "frequency_hz": f, "duty": d, "percent": (d * 1000.0).round() / 10.0}),
    )
}
