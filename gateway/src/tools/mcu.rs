//! The `mcu` toolset.

use super::hwargs::{self, opt, req};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::ToolDef;
use covo_core::catalog::mcu as c;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::mcu::McuError;
use covo_hal_tools::values;
use covo_mcu_protocol::{DeviceInfo, PinMode, RequestBody, ResponseBody, MAX_I2C};
use serde_json::{json, Value};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::MCU_LIST, mcu_list),
    ToolDef::local(&c::MCU_INFO, mcu_info),
    ToolDef::local(&c::MCU_GPIO_READ, mcu_gpio_read),
    ToolDef::local(&c::MCU_GPIO_WRITE, mcu_gpio_write).with_access(gpio_write_access),
    ToolDef::local(&c::MCU_ADC_READ, mcu_adc_read),
    ToolDef::local(&c::MCU_PWM_SET, mcu_pwm_set).with_access(pwm_access),
    ToolDef::local(&c::MCU_I2C_TRANSFER, mcu_i2c_transfer).with_access(i2c_access),
];

/// The MCU pin a call names (clamped to a byte, as the protocol carries it).
fn mcu_pin(args: &Value) -> Option<u8> {
    args.get("pin")
        .and_then(Value::as_u64)
        .map(|p| p.min(255) as u8)
}

/// `mcu_gpio_write` drives the MCU's pin as an output.
fn gpio_write_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    match (hwargs::mcu_device_of(def, args), mcu_pin(args)) {
        (Some(device), Some(pin)) => vec![Access::McuOutput { device, pin }],
        _ => Vec::new(),
    }
}

/// `mcu_pwm_set` sets the MCU pin's frequency and duty.
fn pwm_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    match (hwargs::mcu_device_of(def, args), mcu_pin(args)) {
        (Some(device), Some(pin)) => vec![Access::McuPwm {
            device,
            pin,
            frequency_hz: hwargs::f64_or(args, "frequency_hz", super::gpio::DEFAULT_PWM_HZ),
            duty: hwargs::f64_or(args, "duty", -1.0),
        }],
        _ => Vec::new(),
    }
}

/// `mcu_i2c_transfer` writes when it sends bytes, and reads `count`.
fn i2c_access(def: &BoardDef, args: &Value) -> Vec<Access> {
    let data = hwargs::len_of(args, "data");
    match (hwargs::mcu_device_of(def, args), hwargs::address_of(args)) {
        (Some(device), Some(address)) => vec![Access::McuI2c {
            device,
            address,
            writes: data > 0,
            bytes: hwargs::count_of(args).max(data),
        }],
        _ => Vec::new(),
    }
}

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
    let hw = hwargs::hw(cx)?;
    let name = hw.mcu_name(device(args)).map_err(|e| hwargs::fail(cx, e))?;
    let r = hw
        .with_mcu(&name, |link| link.call(body, idempotent, DEADLINE))
        .map_err(|e| hwargs::fail(cx, e))?;
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
    let hw = hwargs::hw(cx)?;
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
