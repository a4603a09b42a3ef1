//! The `mcu` toolset.

use super::hwargs;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Parse, ToolArgs, ToolDef, Typed};
use covo_board::values;
use covo_core::catalog::mcu as c;
use covo_hal_tools::mcu::McuError;
use covo_mcu_protocol::{DeviceInfo, PinMode, RequestBody, ResponseBody, MAX_I2C};
use serde_json::{json, Value};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::typed(&c::MCU_LIST, &Typed { run: mcu_list }),
    ToolDef::typed(&c::MCU_INFO, &Typed { run: mcu_info }),
    ToolDef::typed(&c::MCU_GPIO_READ, &Typed { run: mcu_gpio_read }),
    ToolDef::typed(
        &c::MCU_GPIO_WRITE,
        &Typed {
            run: mcu_gpio_write,
        },
    ),
    ToolDef::typed(&c::MCU_ADC_READ, &Typed { run: mcu_adc_read }),
    ToolDef::typed(&c::MCU_PWM_SET, &Typed { run: mcu_pwm_set }),
    ToolDef::typed(
        &c::MCU_I2C_TRANSFER,
        &Typed {
            run: mcu_i2c_transfer,
        },
    ),
    ToolDef::typed(
        &c::MCU_FLASH,
        &Typed {
            run: super::mcu_flash::mcu_flash,
        },
    ),
];

/// The microcontroller a call means: the named one, or the board's only one.
pub(super) fn device(p: &Parse<'_>) -> Result<String, ToolError> {
    let named = p.str("device")?;
    p.board
        .resolve_mcu(named.as_deref())
        .map(|d| d.name.clone())
        .map_err(|e| p.hw(e))
}

/// A pin or channel number, as the protocol carries it (a byte).
fn byte(p: &Parse<'_>, key: &str) -> Result<u8, ToolError> {
    Ok(p.req(key, |k, v| values::bounded(k, v, 255))? as u8)
}

/// `mcu_info`: which microcontroller.
pub struct Device {
    device: String,
}

impl ToolArgs for Device {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(Device { device: device(p)? })
    }
}

/// `mcu_gpio_read` (a pin) and `mcu_adc_read` (a channel): one number on one MCU.
pub struct Pin {
    device: String,
    pin: u8,
}

impl Pin {
    fn parse(p: &Parse<'_>, key: &str) -> Result<Self, ToolError> {
        Ok(Pin {
            device: device(p)?,
            pin: byte(p, key)?,
        })
    }
}

/// `mcu_gpio_read`'s arguments.
pub struct GpioRead(Pin);
/// `mcu_adc_read`'s arguments.
pub struct AdcRead(Pin);

impl ToolArgs for GpioRead {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Pin::parse(p, "pin").map(GpioRead)
    }
}

impl ToolArgs for AdcRead {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Pin::parse(p, "channel").map(AdcRead)
    }
}

/// `mcu_gpio_write`: a level on an MCU pin.
pub struct GpioWrite {
    at: Pin,
    high: bool,
}

impl ToolArgs for GpioWrite {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(GpioWrite {
            at: Pin::parse(p, "pin")?,
            high: p.req("level", |k, v| values::bounded(k, v, 1))? == 1,
        })
    }

    /// It drives the MCU's pin as an output.
    fn access(&self) -> Vec<Access> {
        vec![Access::McuOutput {
            device: self.at.device.clone(),
            pin: self.at.pin,
        }]
    }
}

/// `mcu_pwm_set`: an MCU pin's frequency and duty.
pub struct PwmSet {
    at: Pin,
    frequency_hz: f64,
    duty: f64,
}

impl ToolArgs for PwmSet {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        Ok(PwmSet {
            at: Pin::parse(p, "pin")?,
            frequency_hz: p
                .number("frequency_hz")?
                .unwrap_or(super::gpio::DEFAULT_PWM_HZ),
            duty: p.number("duty")?.ok_or_else(|| p.missing("duty"))?,
        })
    }

    fn access(&self) -> Vec<Access> {
        vec![Access::McuPwm {
            device: self.at.device.clone(),
            pin: self.at.pin,
            frequency_hz: self.frequency_hz,
            duty: self.duty,
        }]
    }
}

/// `mcu_i2c_transfer`: bytes written, then `count` read, on the MCU's bus.
pub struct I2cTransfer {
    device: String,
    address: u8,
    data: Vec<u8>,
    count: u8,
}

impl ToolArgs for I2cTransfer {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let data = p.opt("data", values::bytes)?.unwrap_or_default();
        if data.len() > MAX_I2C {
            return Err(p.invalid("data", format!("at most {MAX_I2C} bytes per transfer")));
        }
        Ok(I2cTransfer {
            device: device(p)?,
            address: p.req("address", values::address)?,
            data,
            count: p.int("count", MAX_I2C as u64)?.unwrap_or(0) as u8,
        })
    }

    /// It writes when it sends bytes, and reads `count`.
    fn access(&self) -> Vec<Access> {
        vec![Access::McuI2c {
            device: self.device.clone(),
            address: self.address,
            written: self.data.len(),
            read: self.count as usize,
        }]
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

/// Runs one request on the resolved MCU; `idempotent` requests may be retried.
fn request(
    cx: &Cx<'_>,
    name: &str,
    body: RequestBody,
    idempotent: bool,
) -> Result<ResponseBody, CallError> {
    let hw = hwargs::hw(cx)?;
    let r = hw
        .with_mcu(name, |link| link.call(body, idempotent, DEADLINE))
        .map_err(|e| hwargs::fail(cx, e))?;
    r.map_err(|e| mcu_error(cx, e))
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

fn mcu_list(cx: &Cx<'_>, _args: ()) -> Result<Value, CallError> {
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

fn mcu_info(cx: &Cx<'_>, Device { device }: Device) -> Result<Value, CallError> {
    match request(cx, &device, RequestBody::Info, true)? {
        ResponseBody::Info(i) => Ok(json!({"device": device, "info": info_json(&i)})),
        other => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_gpio_read(cx: &Cx<'_>, GpioRead(Pin { device, pin }): GpioRead) -> Result<Value, CallError> {
    match request(cx, &device, RequestBody::GpioRead { pin }, true)? {
        ResponseBody::Level { high } => {
            Ok(json!({"device": device, "pin": pin, "level": high as u8}))
        }
        other => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_gpio_write(cx: &Cx<'_>, w: GpioWrite) -> Result<Value, CallError> {
    let Pin { device, pin } = w.at;
    // Setting the mode is idempotent; the write is sent exactly once.
    let mode = RequestBody::GpioMode {
        pin,
        mode: PinMode::Output,
    };
    request(cx, &device, mode, true)?;
    request(
        cx,
        &device,
        RequestBody::GpioWrite { pin, high: w.high },
        false,
    )?;
    Ok(json!({"device": device, "pin": pin, "level": w.high as u8}))
}

fn mcu_adc_read(cx: &Cx<'_>, AdcRead(Pin { device, pin }): AdcRead) -> Result<Value, CallError> {
    let channel = pin;
    match request(cx, &device, RequestBody::AdcRead { channel }, true)? {
        ResponseBody::Adc { raw, millivolts } => {
            Ok(json!({"device": device, "channel": channel, "raw": raw, "millivolts": millivolts}))
        }
        other => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_pwm_set(cx: &Cx<'_>, a: PwmSet) -> Result<Value, CallError> {
    let Pin { device, pin } = a.at;
    let mode = RequestBody::GpioMode {
        pin,
        mode: PinMode::Pwm,
    };
    request(cx, &device, mode, true)?;
    let body = RequestBody::PwmSet {
        pin,
        frequency_hz: a.frequency_hz.round() as u32,
        duty_permille: (a.duty * 1000.0).round() as u16,
    };
    match request(cx, &device, body, false)? {
        ResponseBody::Pwm {
            frequency_hz,
            duty_permille,
        } => Ok(json!({
            "device": device, "pin": pin, "frequency_hz": frequency_hz, "duty": duty_permille as f64 / 1000.0,
        })),
        other => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}

fn mcu_i2c_transfer(cx: &Cx<'_>, t: I2cTransfer) -> Result<Value, CallError> {
    let write = heapless::Vec::from_slice(&t.data).map_err(|_| cx.fail("data too long"))?;
    let body = RequestBody::I2cTransfer {
        address: t.address,
        write,
        read_len: t.count,
    };
    // A transfer that only reads is idempotent; one that writes is sent once.
    match request(cx, &t.device, body, t.data.is_empty())? {
        ResponseBody::I2c { read } => Ok(json!({
            "device": t.device,
            "address": values::show_address(t.address),
            "written": values::show_bytes(&t.data),
            "read": values::show_bytes(&read),
        })),
        other => Err(cx.fail(format!("unexpected answer: {other:?}"))),
    }
}
