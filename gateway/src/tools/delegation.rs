//! The `delegation` toolset.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::link::{Member, PeerLink};
use crate::spec::{Need, ToolDef};
use covo_core::catalog::delegation as c;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::peer(&c::SUBAGENT_SPAWN),
    ToolDef::peer(&c::SUBAGENT_STATUS),
    ToolDef::peer(&c::SUBAGENT_RESULT),
    ToolDef::local(&c::SWARM_MEMBERS, swarm_members).needs(Need::Broker),
    ToolDef::local(&c::SWARM_CALL, swarm_call).needs(Need::Broker),
    ToolDef::local(&c::SWARM_BROADCAST, swarm_broadcast).needs(Need::Broker),
];

fn member_json(m: &Member) -> Value {
    json!({
        "gateway": m.id, "online": m.online, "tools": m.tools, "since_unix": m.since_unix,
        "software": m.software, "board": m.board, "online_since": m.online_since,
    })
}

#[derive(Deserialize)]
struct MembersArgs {
    #[serde(default)]
    online_only: bool,
}

fn swarm_members(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: MembersArgs = cx.args(args)?;
    let link = cx.peer_link()?;
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
    covo_core::catalog::find(tool).is_some_and(|s| s.effect == covo_core::spec::Effect::Read)
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
    let link = cx.peer_link()?;
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

/// Threads one `swarm_broadcast` uses at most, whatever the number of members.
pub const BROADCAST_THREADS: usize = 8;

/// One call of `tool` per gateway in `targets`, at most `threads` at once (each holds one of
/// the link's [`MAX_PENDING`](crate::link::MAX_PENDING) waiting calls), all within one
/// deadline `timeout` from now; `{"ok": true, "result": …}` or `{"ok": false,
/// "error": …}` per gateway, in `targets`' order. A gateway whose turn comes with less than
/// `min_left` of the deadline left is not asked at all (error kind `not_sent`): a request
/// sent with no time to answer would leave an actuation's outcome unknown. A read
/// (`idempotent`) is sent again once after a timeout, each attempt within half the time left.
pub fn fan_out(
    link: &PeerLink,
    targets: &[Member],
    tool: &str,
    args: &Value,
    timeout: Duration,
    idempotent: bool,
    threads: usize,
) -> Vec<(String, Value)> {
    let deadline = std::time::Instant::now() + timeout;
    let floor = min_left(timeout);
    bounded_map(targets, threads, |m| {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let v = if left < floor {
            json!({"ok": false, "error": {
                "kind": "not_sent",
                "message": format!(
                    "not asked: {} ms of the {} ms deadline were left when its turn came (at most {threads} gateways are asked at once, and slower ones came first); nothing was sent to it",
                    left.as_millis(), timeout.as_millis()
                ),
                "hint": "call it on its own, or fan out again with a longer timeout",
            }})
        } else {
            let each = if idempotent { left / 2 } else { left };
            match link.swarm_call(&m.id, tool, args.clone(), each, idempotent) {
                Ok(v) => json!({"ok": true, "result": v}),
                Err(e) => json!({"ok": false, "error": e.to_json()["error"].clone()}),
            }
        };
        (m.id.clone(), v)
    })
}

/// The least time left of a fan-out's deadline for which another gateway is still asked: a
/// quarter of the deadline, at most 1 s.
fn min_left(timeout: Duration) -> Duration {
    (timeout / 4).min(Duration::from_secs(1))
}

/// `f` over `items` on at most `threads` scoped threads (each takes the next item when it is
/// done), results in `items`' order.
pub fn bounded_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1).min(items.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(item) = items.get(i) else { return };
                let r = f(item);
                *out[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            });
        }
    });
    out.into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

fn swarm_broadcast(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: BroadcastArgs = cx.args(args)?;
    let link: &PeerLink = cx.peer_link()?;
    let args = a.arguments.unwrap_or_else(|| json!({}));
    let (targets, skipped): (Vec<Member>, Vec<Member>) = link
        .members()
        .into_iter()
        .filter(|m| m.online)
        .partition(|m| m.tools.contains(&a.tool));
    // One request per member (each on its own branch, so ACLs stay per gateway). No retries:
    // the deadline is the caller's.
    let answers = fan_out(
        link,
        &targets,
        &a.tool,
        &args,
        Duration::from_millis(a.timeout_ms),
        false,
        BROADCAST_THREADS,
    );
    let answered = answers.iter().filter(|(_, v)| v["ok"] == true).count();
    let results: Map<String, Value> = answers.into_iter().collect();
    Ok(json!({
        "tool": a.tool,
        "asked": targets.len(),
        "answered": answered,
        "results": results,
        "not_serving": skipped.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_broadcast_to_many_members_uses_at_most_its_thread_bound() {
        let (now, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let members: Vec<usize> = (0..40).collect();
        let out = bounded_map(&members, BROADCAST_THREADS, |i| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(15));
            now.fetch_sub(1, Ordering::SeqCst);
            i * 10
        });
        assert_eq!(out, (0..40).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), BROADCAST_THREADS);
        assert!(bounded_map(&[] as &[usize], 8, |i| *i).is_empty());
    }
}
