//! The `mcu` toolset.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::{self, opt, req};
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use covo_hal_tools::mcu::McuError;
use covo_hal_tools::values;
use covo_mcu_protocol::{DeviceInfo, PinMode, RequestBody, ResponseBody, MAX_I2C};
use serde_json::{json, Value};
use std::time::Duration;

const TOOLSET: &str = "mcu";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "mcu_list",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List attached microcontrollers with port, firmware version and link health.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached board list which connected boards firmware version link health online usb serial",
        },
        exec: Exec::Local(mcu_list),
    },
    ToolDef {
        spec: ToolSpec {
            name: "mcu_info",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Show a microcontroller's firmware, capabilities and uptime.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"}},"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached board info details identity firmware version capabilities features what can it do pins adc channels buses uptime",
        },
        exec: Exec::Local(mcu_info),
    },
    ToolDef {
        spec: ToolSpec {
            name: "mcu_gpio_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read a pin (0 or 1) on an attached microcontroller.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"pin":{"type":"integer"}},"required":["pin"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached board pin gpio read input digital level state digitalread",
        },
        exec: Exec::Local(mcu_gpio_read),
    },
    ToolDef {
        spec: ToolSpec {
            name: "mcu_gpio_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Drive a pin on an attached microcontroller high (1) or low (0).",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"pin":{"type":"integer"},"level":{"enum":[0,1]}},"required":["pin","level"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached board pin gpio write output drive toggle high low on off digitalwrite",
        },
        exec: Exec::Local(mcu_gpio_write),
    },
    ToolDef {
        spec: ToolSpec {
            name: "mcu_adc_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read an ADC channel on an attached microcontroller; returns raw and mV.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"channel":{"type":"integer"}},"required":["channel"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached board adc analog input voltage volts millivolts mv potentiometer analogread battery level raw counts a0",
        },
        exec: Exec::Local(mcu_adc_read),
    },
    ToolDef {
        spec: ToolSpec {
            name: "mcu_pwm_set",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Set PWM frequency and duty cycle on a microcontroller pin.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"pin":{"type":"integer"},"frequency_hz":{"type":"number"},"duty":{"type":"number","minimum":0,"maximum":1}},"required":["pin","duty"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached board pwm duty cycle frequency analogwrite servo motor fan led dim brightness",
        },
        exec: Exec::Local(mcu_pwm_set),
    },
    ToolDef {
        spec: ToolSpec {
            name: "mcu_i2c_transfer",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Write and/or read bytes on a microcontroller's own I2C bus.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""},"count":{"type":"integer"}},"required":["address"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached board i2c transfer write read scan transaction bus sensor wire twi",
        },
        exec: Exec::Local(mcu_i2c_transfer),
    },
];

/// Deadline of one MCU request.
const DEADLINE: Duration = Duration::from_millis(1000);

fn info_json(i: &DeviceInfo) -> Value {
    json!({
        "firmware": i.firmware.as_str(),
        "board": i.board.as_str(),
        "uptime_ms": i.uptime_ms,
        "pins": i.pins.iter().map(|p| p.pin).collect::<Vec<_>>(),
        "adc": {"channels": i.adc_channels, "bits": i.adc_bits, "vref_mv": i.adc_vref_mv},
        "pwm": i.pwm,
        "i2c": i.i2c,
    })
}

fn device(args: &Value) -> Option<&str> {
    args.get("device").and_then(Value::as_str)
}

/// Runs one request on the named (or only) MCU; `idempotent` requests may be retried.
fn request(
    cx: &Cx<'_>,
    args: &Value,
    body: RequestBody,
    idempotent: bool,
) -> Result<(String, ResponseBody), CallError> {
    let hw = hardware::hw(cx)?;
    let name = hw
        .mcu_name(device(args))
        .map_err(|e| hardware::fail(cx, e))?;
    let r = hw
        .with_mcu(&name, |link| link.call(body, idempotent, DEADLINE))
        .map_err(|e| hardware::fail(cx, e))?;
    r.map(|b| (name, b)).map_err(|e| mcu_error(cx, e))
}

fn mcu_error(cx: &Cx<'_>, e: McuError) -> CallError {
    let hint = match &e {
        McuError::Timeout(_) => {
            "the link will be retried for reads; check the cable and that the firmware runs"
        }
        McuError::Device(_) => {
            "mcu_info lists the pins, ADC channels and buses this microcontroller has"
        }
        McuError::Mismatch(_) => "flash the firmware that matches this gateway version",
        McuError::Link(_) => "the port may have been unplugged; it is reopened on the next call",
    };
    ToolError::Failed {
        tool: cx.tool.name.into(),
        message: e.to_string(),
        hint: Some(hint.into()),
    }
    .into()
}

fn pin_arg(cx: &Cx<'_>, args: &Value, key: &str) -> Result<u8, CallError> {
    Ok(req(cx, args, key, |k, v| values::bounded(k, v, 255))? as u8)
}

fn mcu_list(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let hw = hardware::hw(cx)?;
    let list: Vec<Value> = hw
        .mcu_devices()
        .iter()
        .map(|d| {
            // Connecting is cheap and tells the truth about link health.
            let connected = hw.with_mcu(&d.name, |_| ());
            let (info, stats) = hw.mcu_status(&d.name).unwrap_or_default();
            json!({
                "device": d.name,
                "port": d.port,
                "connected": connected.is_ok(),
                "error": connected.err().map(|e| e.to_string()),
                "firmware": info.as_ref().map(|i| i.firmware.as_str().to_string()),
                "link": stats,
            })
        })
        .collect();
    Ok(json!({ "microcontrollers": list }))
}

fn mcu_info(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    match request(cx, &args, RequestBody::Info, true)? {
        (name, ResponseBody::Info(i)) => Ok(json!({"device": name, "info": info_json(&i)})),
        (_, other) => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_gpio_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let pin = pin_arg(cx, &args, "pin")?;
    match request(cx, &args, RequestBody::GpioRead { pin }, true)? {
        (name, ResponseBody::Level { high }) => {
            Ok(json!({"device": name, "pin": pin, "level": high as u8}))
        }
        (_, other) => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_gpio_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let pin = pin_arg(cx, &args, "pin")?;
    let high = args.get("level").and_then(Value::as_u64) == Some(1);
    // Setting the mode is idempotent; the write is sent exactly once.
    request(
        cx,
        &args,
        RequestBody::GpioMode {
            pin,
            mode: PinMode::Output,
        },
        true,
    )?;
    let (name, _) = request(cx, &args, RequestBody::GpioWrite { pin, high }, false)?;
    Ok(json!({"device": name, "pin": pin, "level": high as u8}))
}

fn mcu_adc_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let channel = pin_arg(cx, &args, "channel")?;
    match request(cx, &args, RequestBody::AdcRead { channel }, true)? {
        (name, ResponseBody::Adc { raw, millivolts }) => {
            Ok(json!({"device": name, "channel": channel, "raw": raw, "millivolts": millivolts}))
        }
        (_, other) => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_pwm_set(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let pin = pin_arg(cx, &args, "pin")?;
    let duty = args.get("duty").and_then(Value::as_f64).unwrap_or(0.0);
    let freq = args
        .get("frequency_hz")
        .and_then(Value::as_f64)
        .unwrap_or(super::gpio::DEFAULT_PWM_HZ);
    request(
        cx,
        &args,
        RequestBody::GpioMode {
            pin,
            mode: PinMode::Pwm,
        },
        true,
    )?;
    let body = RequestBody::PwmSet {
        pin,
        frequency_hz: freq.round() as u32,
        duty_permille: (duty * 1000.0).round() as u16,
    };
    match request(cx, &args, body, false)? {
        (
            name,
            ResponseBody::Pwm {
                frequency_hz,
                duty_permille,
            },
        ) => Ok(json!({
            "device": name, "pin": pin, "frequency_hz": frequency_hz, "duty": duty_permille as f64 / 1000.0,
        })),
        (_, other) => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_i2c_transfer(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let address = req(cx, &args, "address", values::address)?;
    let data = opt(cx, &args, "data", values::bytes)?.unwrap_or_default();
    let count = opt(cx, &args, "count", |k, v| {
        values::bounded(k, v, MAX_I2C as u64)
    })?
    .unwrap_or(0) as u8;
    if data.len() > MAX_I2C {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/data",
            format!("at most {MAX_I2C} bytes per transfer"),
        )
        .into());
    }
    let write = heapless::Vec::from_slice(&data).map_err(|_| cx.fail("data too long"))?;
    let body = RequestBody::I2cTransfer {
        address,
        write,
        read_len: count,
    };
    // A transfer that only reads is idempotent; one that writes is sent once.
    match request(cx, &args, body, data.is_empty())? {
        (name, ResponseBody::I2c { read }) => Ok(json!({
            "device": name,
            "address": values::show_address(address),
            "written": values::show_bytes(&data),
            "read": values::show_bytes(&read),
        })),
        (_, other) => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}
