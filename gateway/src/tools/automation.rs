//! The `automation` toolset.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use crate::store::NewWatch;
use crate::watch::{Op, Rule};
use covo_board::driver::Driver;
use covo_core::catalog::automation as c;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::WATCH_CREATE, watch_create),
    ToolDef::local(&c::WATCH_LIST, watch_list),
    ToolDef::local(&c::WATCH_DELETE, watch_delete),
];

fn watch_create(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let invalid = |path: &str, msg: String| -> CallError {
        ToolError::invalid(cx.tool.name, path, msg).into()
    };
    let sensor = args["sensor"].as_str().unwrap_or_default();
    let quantity = args["quantity"].as_str().unwrap_or_default();
    let def = cx.board().def();
    let declared = def.device(sensor);
    if declared.is_some_and(|d| d.driver == Driver::Mcu) {
        // A microcontroller: its events feed the watch (`watch::McuWatcher`).
        if crate::watch::McuQuantity::parse(quantity).is_none() {
            return Err(invalid(
                "/quantity",
                format!(
                    "'{sensor}' is a microcontroller: watch pinN (its level, 0 or 1), adcN (millivolts) or adcN_raw (counts), e.g. pin3 or adc0"
                ),
            ));
        }
    } else {
        let driver = declared
            .map(|d| d.driver)
            .filter(|d| d.is_sensor())
            .ok_or_else(|| {
                invalid(
                    "/sensor",
                    format!("'{sensor}' is not a declared sensor or microcontroller (sensor_list and mcu_list show them)"),
                )
            })?;
        let known = driver.quantities();
        if !known.iter().any(|q| q.name == quantity) {
            let names: Vec<&str> = known.iter().map(|q| q.name).collect();
            return Err(invalid(
                "/quantity",
                format!("'{sensor}' measures {}", names.join(", ")),
            ));
        }
    }
    let op = Op::parse(args["op"].as_str().unwrap_or_default())
        .ok_or_else(|| invalid("/op", "expected one of > >= < <=".into()))?;
    let threshold = args["threshold"].as_f64().unwrap_or_default();
    let for_secs = match args.get("for").and_then(Value::as_str) {
        None => 0,
        Some(f) => super::readings::window(f)
            .ok_or_else(|| {
                invalid(
                    "/for",
                    format!("'{f}' is not a duration like 30s, 5m or 1h"),
                )
            })?
            .num_seconds(),
    };
    let hysteresis = args
        .get("hysteresis")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
        .abs();
    let action = args
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("notify");
    let tool = args.get("tool").and_then(Value::as_str);
    if action == "tool" {
        let name =
            tool.ok_or_else(|| invalid("/tool", "action 'tool' needs a tool name".into()))?;
        let target = cx.lookup(name).map_err(CallError::from)?;
        let targs = args.get("arguments").cloned().unwrap_or_else(|| json!({}));
        cx.validate(target, &targs).map_err(|e| match e {
            ToolError::InvalidArguments { problems, .. } => ToolError::InvalidArguments {
                tool: cx.tool.name.into(),
                problems: problems
                    .into_iter()
                    .map(|p| crate::error::ArgProblem {
                        path: format!("/arguments{}", p.path),
                        problem: p.problem,
                    })
                    .collect(),
            },
            other => other,
        })?;
    }
    let w = cx.store()?.create_watch(&NewWatch {
        sensor,
        quantity,
        rule: Rule {
            op,
            threshold,
            for_secs,
            hysteresis,
        },
        message: args.get("message").and_then(Value::as_str),
        tool: if action == "tool" { tool } else { None },
        arguments: if action == "tool" {
            args.get("arguments")
        } else {
            None
        },
        session: &cx.session.id,
        channel: &cx.session.channel,
    })?;
    Ok(w.to_json())
}

fn watch_list(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let ws: Vec<Value> = cx.store()?.watches()?.iter().map(|w| w.to_json()).collect();
    Ok(json!({ "watches": ws }))
}

fn watch_delete(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let raw = args["id"].as_str().unwrap_or_default();
    let id: i64 = raw.trim_start_matches(['w', '#']).parse().map_err(|_| {
        ToolError::invalid(
            cx.tool.name,
            "/id",
            format!("'{raw}' is not a watch id (watch_list shows them)"),
        )
    })?;
    match cx.store()?.delete_watch(id)? {
        Some(w) => Ok(json!({"deleted": w.to_json()})),
        None => Err(ToolError::NotFound {
            what: "watch".into(),
            id: raw.into(),
        }
        .into()),
    }
}
