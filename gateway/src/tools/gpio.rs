//! The `gpio` toolset.

use super::hwargs;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Parse, Part, ToolArgs, ToolDef, Typed};
use covo_board::values;
use covo_core::catalog::gpio as c;
use covo_hal_tools::bus::Edge;
use serde_json::{json, Value};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::typed(&c::GPIO_READ, &Typed { run: gpio_read }).needs(Need::Board(Part::Gpio)),
    ToolDef::typed(&c::GPIO_WRITE, &Typed { run: gpio_write }).needs(Need::Board(Part::Gpio)),
    ToolDef::typed(
        &c::GPIO_WAIT_EDGE,
        &Typed {
            run: gpio_wait_edge,
        },
    )
    .needs(Need::Board(Part::Gpio)),
    ToolDef::typed(&c::PWM_SET, &Typed { run: pwm_set }).needs(Need::Board(Part::Pwm)),
];

/// The PWM frequency used when a call gives none (a common fan/dimmer frequency).
pub const DEFAULT_PWM_HZ: f64 = 1000.0;

/// The longest timed pulse `gpio_write` holds.
const MAX_PULSE_MS: u64 = 60_000;
/// The longest `gpio_wait_edge` waits.
const MAX_WAIT_MS: u64 = 300_000;

/// A `pin` argument (a BCM number or a declared device's name) as its BCM line.
fn pin(p: &Parse<'_>) -> Result<u32, ToolError> {
    let named = p.req("pin", values::pin)?;
    p.board.resolve_pin(&named).map_err(|e| p.hw(e))
}

/// `gpio_read`: one line.
pub struct Read {
    pin: u32,
}

impl ToolArgs for Read {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(Read { pin: pin(p)? })
    }
}

/// `gpio_write`: a level, held or pulsed.
pub struct Write {
    pin: u32,
    high: bool,
    pulse_ms: Option<u64>,
}

impl ToolArgs for Write {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(Write {
            pin: pin(p)?,
            high: p.req("level", |k, v| values::bounded(k, v, 1))? == 1,
            pulse_ms: p.int("pulse_ms", MAX_PULSE_MS)?,
        })
    }

    /// It drives its line as an output.
    fn access(&self) -> Vec<Access> {
        vec![Access::GpioOutput { pin: self.pin }]
    }
}

/// `gpio_wait_edge`: which edge, for how long.
pub struct WaitEdge {
    pin: u32,
    edge: Edge,
    timeout_ms: u64,
}

impl ToolArgs for WaitEdge {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let edge = match p.str("edge")?.as_deref() {
            None | Some("both") => Edge::Both,
            Some("rising") => Edge::Rising,
            Some("falling") => Edge::Falling,
            Some(other) => {
                return Err(p.invalid(
                    "edge",
                    format!("'{other}' is not one of rising, falling, both"),
                ))
            }
        };
        Ok(WaitEdge {
            pin: pin(p)?,
            edge,
            timeout_ms: p.int("timeout_ms", MAX_WAIT_MS)?.unwrap_or(10_000),
        })
    }
}

/// `pwm_set`: a channel's frequency and duty.
pub struct PwmSet {
    channel: u32,
    frequency_hz: f64,
    duty: f64,
}

impl ToolArgs for PwmSet {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let named = p.req("channel", values::pin)?;
        Ok(PwmSet {
            channel: p.board.resolve_channel(&named).map_err(|e| p.hw(e))?,
            frequency_hz: p.number("frequency_hz")?.unwrap_or(DEFAULT_PWM_HZ),
            duty: p.number("duty")?.ok_or_else(|| p.missing("duty"))?,
        })
    }

    /// It sets its channel's frequency and duty.
    fn access(&self) -> Vec<Access> {
        vec![Access::Pwm {
            channel: self.channel,
            frequency_hz: self.frequency_hz,
            duty: self.duty,
        }]
    }
}

fn gpio_read(cx: &Cx<'_>, Read { pin }: Read) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let high = hw.gpio_read(pin).map_err(|e| hwargs::fail(cx, e))?;
    Ok(json!({"pin": pin, "level": high as u8, "state": if high { "high" } else { "low" }}))
}

fn gpio_write(cx: &Cx<'_>, w: Write) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let (pin, level) = (w.pin, w.high);
    hw.gpio_write(pin, level).map_err(|e| hwargs::fail(cx, e))?;
    if let Some(ms) = w.pulse_ms {
        std::thread::sleep(Duration::from_millis(ms));
        hw.gpio_write(pin, !level)
            .map_err(|e| hwargs::fail(cx, e))?;
        return Ok(
            json!({"pin": pin, "pulsed": level as u8, "for_ms": ms, "level": (!level) as u8}),
        );
    }
    Ok(json!({"pin": pin, "level": level as u8}))
}

fn gpio_wait_edge(cx: &Cx<'_>, w: WaitEdge) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let (pin, timeout) = (w.pin, w.timeout_ms);
    match hw
        .gpio_wait_edge(pin, w.edge, Duration::from_millis(timeout))
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

fn pwm_set(cx: &Cx<'_>, a: PwmSet) -> Result<Value, CallError> {
    let hw = hwargs::hw(cx)?;
    let (f, d) = hw
        .pwm_set(a.channel, a.frequency_hz, a.duty)
        .map_err(|e| hwargs::fail(cx, e))?;
    Ok(
        json!({"channel": a.channel, "frequency_hz": f, "duty": d, "percent": (d * 1000.0).round() / 10.0}),
    )
}
