//! The `board` toolset.

use crate::error::CallError;
use crate::exec::Cx;
use crate::spec::ToolDef;
use covo_board::driver::Driver;
use covo_board::values;
use covo_core::catalog::board as c;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::BOARD_INFO, board_info),
    ToolDef::local(&c::DEVICE_LIST, device_list),
];

fn board_info(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let board = cx.board().clone();
    let d = board.def();
    let pol = &d.policy;
    let hw = board.hardware();
    Ok(json!({
        "name": d.board.name,
        "model": d.board.model,
        "backend": d.board.backend,
        "status": match &hw { Ok(_) => "open".to_string(), Err(e) => format!("unavailable: {e}") },
        "i2c": d.i2c.iter().map(|b| json!({
            "bus": b.bus,
            "path": b.path.clone().unwrap_or_else(|| format!("/dev/i2c-{}", b.bus)),
            "speed_hz": b.speed_hz,
        })).collect::<Vec<_>>(),
        "spi": d.spi.iter().map(|s| json!({"bus": s.bus, "cs": s.cs, "path": s.path})).collect::<Vec<_>>(),
        "serial": d.serial.iter().map(|s| json!({"name": s.name, "path": s.path, "baud": s.baud})).collect::<Vec<_>>(),
        "gpio": {"chip": d.pins.chip, "available": d.pins.available},
        "pwm": d.pwm.iter().map(|p| json!({"channel": p.channel, "pin": p.pin})).collect::<Vec<_>>(),
        "policy": {
            "read_only": pol.read_only,
            "i2c_write_allow": "declared devices, plus the listed addresses",
            "extra_i2c_write": pol.i2c_write_allow.iter().map(|a| json!({
                "bus": a.bus,
                "addresses": a.addresses.iter().map(|x| values::show_address(*x)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "outputs": d.device.iter().filter(|x| x.driver == Driver::GpioOut).filter_map(|x| x.pin).chain(pol.outputs.iter().copied()).collect::<Vec<_>>(),
            "pwm": pol.pwm.iter().map(|l| json!({"channel": l.channel, "min_hz": l.min_hz, "max_hz": l.max_hz, "max_duty": l.max_duty})).collect::<Vec<_>>(),
            "max_transfer": pol.max_transfer.unwrap_or(covo_board::policy::DEFAULT_MAX_TRANSFER),
            "reserved_i2c": "0x00-0x07, 0x78-0x7f",
        },
    }))
}

fn device_list(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let board = cx.board().clone();
    let d = board.def();
    let hw = board.hardware().ok();
    let devices: Vec<Value> = d
        .device
        .iter()
        .map(|x| {
            let status = match &hw {
                None => "board unavailable".to_string(),
                Some(h) if x.address.is_some() => {
                    let bus = x.bus.or(d.default_i2c_bus()).unwrap_or(1);
                    // A one-byte read probe, as i2cdetect does: present or not.
                    match h.i2c_read(bus, x.address.unwrap_or(0), 1) {
                        Ok(_) => "present".into(),
                        Err(e) => format!("not responding: {e}"),
                    }
                }
                _ => "declared".into(),
            };
            json!({
                "name": x.name,
                "driver": x.driver,
                "bus": x.bus.or(if x.address.is_some() { d.default_i2c_bus() } else { None }),
                "address": x.address.map(values::show_address),
                "pin": x.pin,
                "channel": x.channel,
                "port": x.port,
                "status": status,
                "note": x.note,
            })
        })
        .collect();
    Ok(json!({ "devices": devices }))
}
