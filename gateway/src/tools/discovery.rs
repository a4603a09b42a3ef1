//! The `discovery` toolset: find, describe and call owned tools the model was not shown.
//!
//! None of these can reach past the profile: search and describe only see owned tools, and
//! `tool_call` goes through the same dispatch pipeline (validation, policy, approval, audit).

use crate::error::CallError;
use crate::exec::Cx;
use crate::runtime::Args;
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};

const TOOLSET: &str = "discovery";

/// Default and maximum number of `tool_search` results.
pub const SEARCH_DEFAULT_LIMIT: usize = 5;
/// The most results one search returns.
pub const SEARCH_MAX_LIMIT: usize = 20;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "tool_search",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description:
                "Find tools you have but were not shown. Returns names, summaries, scores.",
            params: r#"{"type":"object","properties":{"query":{"type":"string","description":"What you want to do"},"limit":{"type":"integer","minimum":1,"maximum":20,"default":5}},"required":["query"],"additionalProperties":false}"#,
            keywords: "find discover look up which tool capability available functions",
        },
        exec: Exec::Local(tool_search),
    },
    ToolDef {
        spec: ToolSpec {
            name: "tool_describe",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Get a tool's full definition and parameter schema.",
            params: r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}"#,
            keywords: "parameters arguments schema usage help definition signature how to call",
        },
        exec: Exec::Local(tool_describe),
    },
    ToolDef {
        spec: ToolSpec {
            name: "tool_call",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING).or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Call a tool found with tool_search by name, with JSON arguments.",
            params: r#"{"type":"object","properties":{"name":{"type":"string"},"arguments":{"type":"object"}},"required":["name"],"additionalProperties":false}"#,
            keywords: "invoke run execute use hidden tool",
        },
        exec: Exec::Local(tool_call),
    },
];

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

fn tool_search(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SearchArgs = cx.args(args)?;
    let rt = cx.runtime();
    let limit = a
        .limit
        .unwrap_or(SEARCH_DEFAULT_LIMIT)
        .clamp(1, SEARCH_MAX_LIMIT);
    let results: Vec<Value> = rt
        .search_index()
        .search(&a.query, limit)
        .into_iter()
        .map(|h| {
            let av = rt.availability(h.tool);
            let mut r = json!({
                "name": h.tool.spec.name,
                "summary": h.tool.spec.summary(),
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
    let rt = cx.runtime();
    let def = rt.lookup(&a.name)?;
    Ok(describe(def, rt.availability(def)))
}

/// The full, model-facing definition of a tool, as `tool_describe` returns it.
pub fn describe(def: &ToolDef, av: crate::spec::Availability) -> Value {
    let s = &def.spec;
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
    cx.runtime().nested_call(cx, &a.name, Args::Json(inner))
}
