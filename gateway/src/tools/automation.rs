//! The `automation` toolset.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use crate::store::NewWatch;
use crate::watch::{Op, Rule};
use serde_json::{json, Value};

const TOOLSET: &str = "automation";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "watch_create",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Watch a sensor quantity and fire when a threshold rule holds for a duration, then notify or run a tool. Returns the watch id.",
 params: r#"{"type":"object","properties":{"sensor":{"type":"string","description":"declared name, e.g. climate"},"quantity":{"type":"string","description":"e.g. temperature"},"op":{"enum":[">","<",">=","<="]},"threshold":{"type":"number"},"for":{"type":"string","description":"how long the rule must hold, e.g. 5m"},"hysteresis":{"type":"number","description":"re-arm margin, in the quantity's unit"},"action":{"enum":["notify","tool"],"default":"notify"},"message":{"type":"string","description":"notification text"},"tool":{"type":"string","description":"tool to run when action is tool"},"arguments":{"type":"object"}},"required":["sensor","quantity","op","threshold"],"additionalProperties":false}"#,
 keywords: "watch monitor alert alarm threshold trigger rule condition when if whenever above below exceeds crosses drops rises goes gets becomes higher lower greater less than warmer colder degrees too hot too cold limit temperature humidity co2 level reading notify ping me let me know automation if then automatically react run action warn",
        },
        exec: Exec::Local(watch_create),
    },
    ToolDef {
        spec: ToolSpec {
            name: "watch_list",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List active sensor watches with their rules and when each last fired.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "watches list active rules alerts alarms monitors thresholds triggers automations show fired",
        },
        exec: Exec::Local(watch_list),
    },
    ToolDef {
        spec: ToolSpec {
            name: "watch_delete",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Remove a sensor watch by id.",
 params: r#"{"type":"object","properties":{"id":{"type":"string","description":"watch id"}},"required":["id"],"additionalProperties":false}"#,
 keywords: "watch delete remove cancel stop disable alert alarm rule monitor threshold trigger automation",
        },
        exec: Exec::Local(watch_delete),
    },
];

fn watch_create(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let rt = cx.runtime();
    let invalid = |path: &str, msg: String| -> CallError {
        ToolError::invalid(cx.tool.name, path, msg).into()
    };
    let sensor = args["sensor"].as_str().unwrap_or_default();
    let quantity = args["quantity"].as_str().unwrap_or_default();
    let def = rt.board().def();
    let driver = def
        .device(sensor)
        .map(|d| d.driver.clone())
        .filter(|d| !covo_hal_tools::sensors::quantities(d).is_empty())
        .ok_or_else(|| {
            invalid(
                "/sensor",
                format!("'{sensor}' is not a declared sensor (sensor_list shows them)"),
            )
        })?;
    let known = covo_hal_tools::sensors::quantities(&driver);
    if !known.iter().any(|(q, _)| *q == quantity) {
        let names: Vec<&str> = known.iter().map(|(q, _)| *q).collect();
        return Err(invalid(
            "/quantity",
            format!("'{sensor}' measures {}", names.join(", ")),
        ));
    }
    let op = Op::parse(args["op"].as_str().unwrap_or_default())
        .ok_or_else(|| invalid("/op", "expected one of > >= < <=".into()))?;
    let threshold = args["threshold"].as_f64().unwrap_or_default();
    let for_secs = match args.get("for").and_then(Value::as_str) {
        None => 0,
        Some(f) => super::sensors::window(f)
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
        let target = rt.lookup(name).map_err(CallError::from)?;
        let targs = args.get("arguments").cloned().unwrap_or_else(|| json!({}));
        rt.validate(&target.spec, &targs).map_err(|e| match e {
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
