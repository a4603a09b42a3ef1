//! The `delegation` toolset.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::peer::mqtt::{Member, PeerLink};
use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::time::Duration;

const TOOLSET: &str = "delegation";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "subagent_spawn",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Write,
            description: "Start a sub-agent on the peer with its own toolsets and a task; it works alone (no hardware, no questions). Returns a handle: poll subagent_status, then get subagent_result.",
 params: r#"{"type":"object","properties":{"task":{"type":"string","description":"what to do, with everything it needs to know"},"toolsets":{"type":"array","items":{"type":"string"},"description":"toolset names, default: web, code_exec"}},"required":["task"],"additionalProperties":false}"#,
 keywords: "sub agent subagent spawn delegate worker helper parallel task hand off assistant",
        },
        exec: Exec::Peer,
    },
    ToolDef {
        spec: ToolSpec {
            name: "subagent_status",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Get the progress of a spawned sub-agent: state (running, done, failed, cancelled, interrupted), steps, recent tool calls, elapsed time.",
 params: r#"{"type":"object","properties":{"handle":{"type":"string","description":"from subagent_spawn"}},"required":["handle"],"additionalProperties":false}"#,
 keywords: "sub agent subagent status progress how is it doing running done finished yet check",
        },
        exec: Exec::Peer,
    },
    ToolDef {
        spec: ToolSpec {
            name: "subagent_result",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Get the final answer of a finished sub-agent. While it runs this is an error: poll subagent_status first.",
 params: r#"{"type":"object","properties":{"handle":{"type":"string","description":"from subagent_spawn"}},"required":["handle"],"additionalProperties":false}"#,
 keywords: "sub agent subagent result answer output finished",
        },
        exec: Exec::Peer,
    },
    ToolDef {
        spec: ToolSpec {
            name: "swarm_members",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List the other gateways on the same broker: id, online or offline, and the tools each lets you call with swarm_call.",
 params: r#"{"type":"object","properties":{"online_only":{"type":"boolean","default":false}},"additionalProperties":false}"#,
 keywords: "swarm members gateways peers other boards nodes fleet online devices network",
        },
        exec: Exec::Local(swarm_members),
    },
    ToolDef {
        spec: ToolSpec {
            name: "swarm_call",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Call a tool on another gateway over MQTT (see swarm_members). It runs under that gateway's own policy; returns that tool's result.",
 params: r#"{"type":"object","properties":{"gateway":{"type":"string","description":"member id, e.g. greenhouse-2"},"tool":{"type":"string","description":"a tool that member serves"},"arguments":{"type":"object","default":{}},"timeout_ms":{"type":"integer","minimum":100,"maximum":300000,"default":10000}},"required":["gateway","tool"],"additionalProperties":false}"#,
 keywords: "swarm call remote another gateway other board node peer fleet run tool elsewhere greenhouse",
        },
        exec: Exec::Local(swarm_call),
    },
    ToolDef {
        spec: ToolSpec {
            name: "swarm_broadcast",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Send one tool call to every online gateway that serves the tool and gather their answers until the deadline.",
 params: r#"{"type":"object","properties":{"tool":{"type":"string"},"arguments":{"type":"object","default":{}},"timeout_ms":{"type":"integer","minimum":100,"maximum":300000,"default":5000}},"required":["tool"],"additionalProperties":false}"#,
 keywords: "swarm broadcast ask all every gateways nodes boards everyone fleet fan out query gather collect answers",
        },
        exec: Exec::Local(swarm_broadcast),
    },
];

fn member_json(m: &Member) -> Value {
    json!({"gateway": m.id, "online": m.online, "tools": m.tools, "since_unix": m.since_unix})
}

#[derive(Deserialize)]
struct MembersArgs {
    #[serde(default)]
    online_only: bool,
}

fn swarm_members(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: MembersArgs = cx.args(args)?;
    let link = super::mqtt::link(cx)?;
    let members: Vec<Value> = link
        .members()
        .iter()
        .filter(|m| m.online || !a.online_only)
        .map(member_json)
        .collect();
    Ok(json!({
        "self": link.gateway_id(),
        "connected": link.is_connected(),
        "count": members.len(),
        "members": members,
    }))
}

/// Whether a retry after a timeout is safe: only for tools whose effect is `read`.
fn idempotent(tool: &str) -> bool {
    crate::tools::find(tool).is_some_and(|d| d.spec.effect == Effect::Read)
}

#[derive(Deserialize)]
struct CallArgs {
    gateway: String,
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default = "default_call_ms")]
    timeout_ms: u64,
}

fn default_call_ms() -> u64 {
    10_000
}

fn swarm_call(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: CallArgs = cx.args(args)?;
    let link = super::mqtt::link(cx)?;
    if a.gateway == link.gateway_id() {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/gateway",
            format!("'{}' is this gateway; call {} directly", a.gateway, a.tool),
        )
        .into());
    }
    let members = link.members();
    let Some(m) = members.iter().find(|m| m.id == a.gateway) else {
        let known: Vec<&str> = members.iter().map(|m| m.id.as_str()).collect();
        return Err(ToolError::invalid(
            cx.tool.name,
            "/gateway",
            format!(
                "no gateway '{}' on this broker; members: [{}] (see swarm_members)",
                a.gateway,
                known.join(", ")
            ),
        )
        .into());
    };
    if !m.online {
        return Err(ToolError::Unavailable {
            tool: cx.tool.name.into(),
            reason: format!("gateway '{}' is offline", m.id),
        }
        .into());
    }
    if !m.tools.contains(&a.tool) {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/tool",
            format!(
                "gateway '{}' does not serve '{}'; it serves: [{}]",
                m.id,
                a.tool,
                m.tools.join(", ")
            ),
        )
        .into());
    }
    let args = a.arguments.unwrap_or_else(|| json!({}));
    let result = link.swarm_call(
        &m.id,
        &a.tool,
        args,
        Duration::from_millis(a.timeout_ms),
        idempotent(&a.tool),
    )?;
    Ok(json!({"gateway": m.id, "tool": a.tool, "result": result}))
}

#[derive(Deserialize)]
struct BroadcastArgs {
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default = "default_broadcast_ms")]
    timeout_ms: u64,
}

fn default_broadcast_ms() -> u64 {
    5_000
}

fn swarm_broadcast(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: BroadcastArgs = cx.args(args)?;
    let link: &PeerLink = super::mqtt::link(cx)?;
    let args = a.arguments.unwrap_or_else(|| json!({}));
    let (targets, skipped): (Vec<Member>, Vec<Member>) = link
        .members()
        .into_iter()
        .filter(|m| m.online)
        .partition(|m| m.tools.contains(&a.tool));
    let timeout = Duration::from_millis(a.timeout_ms);
    // One request per member (each on its own branch, so ACLs stay per gateway), all in
    // flight at once; each waits at most until the shared deadline. No retries: the deadline
    // is the caller's.
    let answers: Vec<(String, Result<Value, ToolError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|m| {
                let args = args.clone();
                let tool = a.tool.as_str();
                s.spawn(move || {
                    (
                        m.id.clone(),
                        link.swarm_call(&m.id, tool, args, timeout, false),
                    )
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut results = Map::new();
    let mut answered = 0;
    for (id, r) in answers {
        let v = match r {
            Ok(v) => {
                answered += 1;
                json!({"ok": true, "result": v})
            }
            Err(e) => json!({"ok": false, "error": e.to_json()["error"].clone()}),
        };
        results.insert(id, v);
    }
    Ok(json!({
        "tool": a.tool,
        "asked": targets.len(),
        "answered": answered,
        "results": results,
        "not_serving": skipped.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
    }))
}
