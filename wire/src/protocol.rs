//! The gateway ↔ peer wire protocol (see `docs/peer-protocol.md`): MQTT 5, JSON payloads.
//!
//! Pure data and topic names; no I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version peers and gateways announce in their births.
pub const VERSION: u32 = 1;

/// The shared-subscription group every peer joins, so each request goes to one peer.
pub const SHARE_GROUP: &str = "covo-peers";

/// Topic names under a prefix (default `covo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topics {
    /// The prefix, without a trailing slash.
    pub prefix: String,
}

impl Topics {
    /// Topics under `prefix`.
    pub fn new(prefix: &str) -> Self {
        Topics {
            prefix: prefix.trim_end_matches('/').to_string(),
        }
    }

    /// Where `gateway` publishes its requests: `{prefix}/{gateway}/peer/req`.
    pub fn request(&self, gateway: &str) -> String {
        format!("{}/{gateway}/peer/req", self.prefix)
    }

    /// Where `gateway` wants its responses (the MQTT 5 response topic): `{prefix}/{gateway}/peer/res`.
    pub fn response(&self, gateway: &str) -> String {
        format!("{}/{gateway}/peer/res", self.prefix)
    }

    /// What peers subscribe to: `$share/covo-peers/{prefix}/+/peer/req`.
    pub fn shared_requests(&self) -> String {
        format!("$share/{SHARE_GROUP}/{}/+/peer/req", self.prefix)
    }

    /// A peer's retained status: `{prefix}/peers/{peer}/status`.
    pub fn peer_status(&self, peer: &str) -> String {
        format!("{}/peers/{peer}/status", self.prefix)
    }

    /// Every peer's status: `{prefix}/peers/+/status`.
    pub fn all_peer_status(&self) -> String {
        format!("{}/peers/+/status", self.prefix)
    }

    /// A gateway's retained status: `{prefix}/gateways/{gateway}/status`.
    pub fn gateway_status(&self, gateway: &str) -> String {
        format!("{}/gateways/{gateway}/status", self.prefix)
    }

    /// Every gateway's status: `{prefix}/gateways/+/status`.
    pub fn all_gateway_status(&self) -> String {
        format!("{}/gateways/+/status", self.prefix)
    }

    /// Where other gateways send swarm calls for `gateway`: `{prefix}/{gateway}/swarm/req`.
    pub fn swarm_request(&self, gateway: &str) -> String {
        format!("{}/{gateway}/swarm/req", self.prefix)
    }

    /// Where `gateway` wants answers to its swarm calls: `{prefix}/{gateway}/swarm/res`.
    pub fn swarm_response(&self, gateway: &str) -> String {
        format!("{}/{gateway}/swarm/res", self.prefix)
    }

    /// The gateway id in a gateway status topic, if `topic` is one.
    pub fn gateway_of_status<'t>(&self, topic: &'t str) -> Option<&'t str> {
        let rest = topic
            .strip_prefix(&self.prefix)?
            .strip_prefix("/gateways/")?;
        let id = rest.strip_suffix("/status")?;
        (!id.is_empty() && !id.contains('/')).then_some(id)
    }

    /// The peer id in a peer status topic, if `topic` is one.
    pub fn peer_of_status<'t>(&self, topic: &'t str) -> Option<&'t str> {
        let rest = topic.strip_prefix(&self.prefix)?.strip_prefix("/peers/")?;
        let id = rest.strip_suffix("/status")?;
        (!id.is_empty() && !id.contains('/')).then_some(id)
    }

    /// The gateway id in a request topic, if `topic` is one.
    pub fn gateway_of_request<'t>(&self, topic: &'t str) -> Option<&'t str> {
        let rest = topic.strip_prefix(&self.prefix)?.strip_prefix('/')?;
        let id = rest.strip_suffix("/peer/req")?;
        (!id.is_empty() && !id.contains('/')).then_some(id)
    }
}

/// A birth (`online`, with the tools served) or a death (`offline`, the Will).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// `online` or `offline`.
    pub status: String,
    /// The protocol version (births only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The tools served: by a peer, or by a gateway to the swarm (births only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

impl Status {
    /// An `online` birth serving `tools`.
    pub fn online(tools: Vec<String>) -> Self {
        Status {
            status: "online".into(),
            version: Some(VERSION),
            tools,
        }
    }

    /// The `offline` Will.
    pub fn offline() -> Self {
        Status {
            status: "offline".into(),
            version: None,
            tools: Vec::new(),
        }
    }

    /// Whether this announces a live peer.
    pub fn is_online(&self) -> bool {
        self.status == "online"
    }
}

/// A tool call, gateway → peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Unique per call; also the MQTT 5 correlation data. A retry reuses it.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments, already validated against the tool's schema by the gateway (a covo peer
    /// checks them again: any client on the broker can publish a request).
    pub args: Value,
    /// The calling gateway's id.
    pub gateway: String,
    /// Milliseconds the gateway waits for the answer, from publication.
    pub deadline_ms: u64,
}

/// An error a peer reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    /// A snake_case kind, e.g. `failed`, `unknown_tool`, `timeout`.
    pub kind: String,
    /// What went wrong.
    pub message: String,
    /// The structured error, when the other side is covo: the JSON of its `ToolError`
    /// (`{"kind": …, …}`), which the caller hands on to its model unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

/// A tool result, peer → gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The request's call id.
    pub call_id: String,
    /// Whether the tool succeeded.
    pub ok: bool,
    /// The result, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
}

impl Response {
    /// A success.
    pub fn ok(call_id: &str, result: Value) -> Self {
        Response {
            call_id: call_id.into(),
            ok: true,
            result: Some(result),
            error: None,
        }
    }

    /// A failure.
    pub fn err(call_id: &str, kind: &str, message: impl Into<String>) -> Self {
        Response {
            call_id: call_id.into(),
            ok: false,
            result: None,
            error: Some(WireError {
                kind: kind.into(),
                message: message.into(),
                detail: None,
            }),
        }
    }

    /// A failure carrying a pipeline or tool error whole, so the caller keeps its structure
    /// (the argument paths, the policy rule, the hint).
    pub fn tool_error(call_id: &str, e: &covo_core::error::ToolError) -> Self {
        let detail = serde_json::to_value(e).ok();
        let kind = detail
            .as_ref()
            .and_then(|d| d.get("kind"))
            .and_then(Value::as_str)
            .unwrap_or("failed")
            .to_string();
        Response {
            call_id: call_id.into(),
            ok: false,
            result: None,
            error: Some(WireError {
                kind,
                message: e.to_string(),
                detail,
            }),
        }
    }
}

/// A fresh call id: 128 random bits as hex.
pub fn new_call_id() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_and_their_parsers_agree() {
        let t = Topics::new("covo/");
        assert_eq!(t.request("gw1"), "covo/gw1/peer/req");
        assert_eq!(t.response("gw1"), "covo/gw1/peer/res");
        assert_eq!(t.shared_requests(), "$share/covo-peers/covo/+/peer/req");
        assert_eq!(t.peer_of_status(&t.peer_status("p1")), Some("p1"));
        assert_eq!(t.peer_of_status("covo/peers/a/b/status"), None);
        assert_eq!(t.gateway_of_request(&t.request("gw1")), Some("gw1"));
        assert_eq!(t.swarm_request("gw2"), "covo/gw2/swarm/req");
        assert_eq!(t.swarm_response("gw1"), "covo/gw1/swarm/res");
        assert_eq!(t.gateway_of_status(&t.gateway_status("gw2")), Some("gw2"));
        assert_eq!(t.gateway_of_status(&t.peer_status("gw2")), None);
    }

    #[test]
    fn payloads_have_the_documented_shape() {
        let birth = serde_json::to_value(Status::online(vec!["plot_series".into()])).unwrap();
        assert_eq!(
            birth,
            serde_json::json!({"status":"online","version":1,"tools":["plot_series"]})
        );
        let will = serde_json::to_value(Status::offline()).unwrap();
        assert_eq!(will, serde_json::json!({"status":"offline"}));
        let e = serde_json::to_value(Response::err("c", "failed", "boom")).unwrap();
        assert_eq!(
            e,
            serde_json::json!({"call_id":"c","ok":false,"error":{"kind":"failed","message":"boom"}})
        );
        let ok: Response = serde_json::from_str(r#"{"call_id":"c","ok":true,"result":1}"#).unwrap();
        assert_eq!(ok, Response::ok("c", serde_json::json!(1)));
    }
}
