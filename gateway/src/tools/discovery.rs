//! The `discovery` toolset: find, describe and call owned tools the model was not shown.
//!
//! None of these can reach past the profile: search and describe only see owned tools, and
//! `tool_call` goes through the same dispatch pipeline (validation, policy, approval, audit).

use crate::error::CallError;
use crate::exec::Args;
use crate::exec::Cx;
use crate::spec::{Availability, ToolDef, ToolSpec};
use covo_core::catalog::discovery as c;
use serde::Deserialize;
use serde_json::{json, Value};

/// Default and maximum number of `tool_search` results.
pub const SEARCH_DEFAULT_LIMIT: usize = 5;
/// The most results one search returns.
pub const SEARCH_MAX_LIMIT: usize = 20;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::TOOL_SEARCH, tool_search),
    ToolDef::local(&c::TOOL_DESCRIBE, tool_describe),
    ToolDef::local(&c::TOOL_CALL, tool_call),
];

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

fn tool_search(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SearchArgs = cx.args(args)?;
    let tools = cx.discovery();
    let limit = a
        .limit
        .unwrap_or(SEARCH_DEFAULT_LIMIT)
        .clamp(1, SEARCH_MAX_LIMIT);
    let results: Vec<Value> = tools
        .index()
        .search(&a.query, limit)
        .into_iter()
        .map(|h| {
            let av = tools.availability(h.tool);
            let mut r = json!({
                "name": h.tool.name,
                "summary": h.tool.summary(),
                "score": (h.score * 1000.0).round() / 1000.0,
                "available": av.available,
            });
            if let Some(reason) = av.reason {
                r["reason"] = json!(reason);
            }
            r
        })
        .collect();
    Ok(json!({ "results": results }))
}

#[derive(Deserialize)]
struct DescribeArgs {
    name: String,
}

fn tool_describe(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: DescribeArgs = cx.args(args)?;
    let spec = cx.lookup(&a.name)?;
    Ok(describe(spec, cx.discovery().availability(spec)))
}

/// The full, model-facing definition of a tool, as `tool_describe` returns it.
pub fn describe(s: &ToolSpec, av: Availability) -> Value {
    let mut v = json!({
        "name": s.name,
        "description": s.description,
        "toolset": s.toolset,
        "runs": s.runs,
        "effect": s.effect,
        "available": av.available,
        "parameters": s.params_json(),
    });
    if let Some(reason) = av.reason {
        v["reason"] = json!(reason);
    }
    v
}

#[derive(Deserialize)]
struct CallArgs {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

fn tool_call(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: CallArgs = cx.args(args)?;
    let inner = a.arguments.unwrap_or_else(|| json!({}));
    cx.nested_call(&a.name, Args::Json(inner))
}
