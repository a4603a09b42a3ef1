//! The gateway ↔ peer wire protocol (see `docs/peer-protocol.md`): MQTT 5, JSON payloads.
//!
//! Pure data and topic names; no I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version peers and gateways announce in their births.
pub const VERSION: u32 = 1;

/// The shared-subscription group every peer joins, so each request goes to one peer.
pub const SHARE_GROUP: &str = "covo-peers";

/// Whether `id` may name a gateway or a peer in a topic: not empty, and none of `/ + # $`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && !id.contains(['/', '+', '#', '$'])
}

/// Why a request's answer may not go to the response topic it asked for: answers go only to
/// the caller's own response branch, so no client can make a peer or a gateway publish
/// elsewhere (where `[mqtt] publish_allow` or a broker ACL would refuse it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyRefused {
    /// The request did not come on a gateway's request topic.
    #[error("'{topic}' is not a request topic")]
    NotARequest {
        /// The topic it came on.
        topic: String,
    },
    /// The caller's id cannot name a topic level.
    #[error("the caller id '{id}' is not a valid topic level (empty, or has one of / + # $)")]
    BadId {
        /// The id the request gave.
        id: String,
    },
    /// The payload names another caller than the request's topic, which the broker vouches
    /// for.
    #[error("the request claims to come from '{claimed}' but was sent on '{sender}''s topic")]
    Impostor {
        /// The caller the payload names.
        claimed: String,
        /// The caller the topic names.
        sender: String,
    },
    /// The response topic is not the caller's own.
    #[error("response topic '{topic}' is not the caller's '{expected}'")]
    Foreign {
        /// The response topic the request asked for.
        topic: String,
        /// The only one it may ask for.
        expected: String,
    },
}

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

    /// Where gateway `caller` sends a swarm call for gateway `target`:
    /// `{prefix}/{target}/swarm/req/{caller}`. The caller's id is in the topic, where a broker
    /// ACL can vouch for it (`pattern write covo/+/swarm/req/%u`), not only in the payload.
    pub fn swarm_request(&self, target: &str, caller: &str) -> String {
        format!("{}/{target}/swarm/req/{caller}", self.prefix)
    }

    /// Every swarm call for `gateway`: `{prefix}/{gateway}/swarm/req/+`.
    pub fn swarm_requests(&self, gateway: &str) -> String {
        format!("{}/{gateway}/swarm/req/+", self.prefix)
    }

    /// Where gateway `responder` answers `caller`'s swarm calls:
    /// `{prefix}/{caller}/swarm/res/{responder}` (an ACL lets each gateway write only the
    /// answers that carry its own id: `pattern write covo/+/swarm/res/%u`).
    pub fn swarm_response(&self, caller: &str, responder: &str) -> String {
        format!("{}/{caller}/swarm/res/{responder}", self.prefix)
    }

    /// Every answer to `gateway`'s swarm calls: `{prefix}/{gateway}/swarm/res/+`.
    pub fn swarm_responses(&self, gateway: &str) -> String {
        format!("{}/{gateway}/swarm/res/+", self.prefix)
    }

    /// The last level of `topic` when it is `{prefix}/{gateway}/swarm/{kind}/{id}` with a
    /// valid id: the caller of a request (`kind` "req") or the responder of an answer ("res").
    fn swarm_party<'t>(&self, gateway: &str, kind: &str, topic: &'t str) -> Option<&'t str> {
        let id = topic
            .strip_prefix(&self.prefix)?
            .strip_prefix('/')?
            .strip_prefix(gateway)?
            .strip_prefix("/swarm/")?
            .strip_prefix(kind)?
            .strip_prefix('/')?;
        valid_id(id).then_some(id)
    }

    /// The caller's id in a swarm request for `gateway`, if `topic` is one.
    pub fn caller_of_swarm_request<'t>(&self, gateway: &str, topic: &'t str) -> Option<&'t str> {
        self.swarm_party(gateway, "req", topic)
    }

    /// The responder's id in an answer to `gateway`'s swarm call, if `topic` is one.
    pub fn responder_of_swarm_response<'t>(
        &self,
        gateway: &str,
        topic: &'t str,
    ) -> Option<&'t str> {
        self.swarm_party(gateway, "res", topic)
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

    /// Where a peer answers a request that came on `request_topic` (`P/G/peer/req`) asking for
    /// `response_topic`: only gateway `G`'s own `P/G/peer/res`, which is also the default when
    /// the request names none.
    pub fn peer_reply_topic(
        &self,
        request_topic: &str,
        response_topic: Option<&str>,
    ) -> Result<String, ReplyRefused> {
        let gateway = self
            .gateway_of_request(request_topic)
            .filter(|g| valid_id(g))
            .ok_or_else(|| ReplyRefused::NotARequest {
                topic: request_topic.into(),
            })?;
        let expected = self.response(gateway);
        match response_topic {
            None => Ok(expected),
            Some(t) if t == expected => Ok(expected),
            Some(t) => Err(ReplyRefused::Foreign {
                topic: t.into(),
                expected,
            }),
        }
    }

    /// Where `responder` may answer a swarm request that came on `request_topic`
    /// (`P/{responder}/swarm/req/C`), whose payload names `caller`, asking for
    /// `response_topic`: only on `P/C/swarm/res/{responder}`, and only when the payload's
    /// caller is the one in the topic. The topic is what a broker ACL vouches for; a payload
    /// that claims another caller is refused, never believed.
    pub fn swarm_reply_topic(
        &self,
        responder: &str,
        request_topic: &str,
        caller: &str,
        response_topic: &str,
    ) -> Result<String, ReplyRefused> {
        let Some(sender) = self.caller_of_swarm_request(responder, request_topic) else {
            return Err(ReplyRefused::NotARequest {
                topic: request_topic.into(),
            });
        };
        if !valid_id(caller) {
            return Err(ReplyRefused::BadId { id: caller.into() });
        }
        if sender != caller {
            return Err(ReplyRefused::Impostor {
                claimed: caller.into(),
                sender: sender.into(),
            });
        }
        let expected = self.swarm_response(caller, responder);
        if response_topic == expected {
            Ok(expected)
        } else {
            Err(ReplyRefused::Foreign {
                topic: response_topic.into(),
                expected,
            })
        }
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
    /// The software and its version, e.g. `covo 0.1.0` (births only; optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub software: Option<String>,
    /// A gateway's board, by the name in its board file (births only; optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
    /// When this connection came up, in Unix seconds (births only; optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}

impl Status {
    /// An `online` birth serving `tools`.
    pub fn online(tools: Vec<String>) -> Self {
        Status {
            status: "online".into(),
            version: Some(VERSION),
            tools,
            software: None,
            board: None,
            since: None,
        }
    }

    /// The `offline` Will.
    pub fn offline() -> Self {
        Status {
            status: "offline".into(),
            version: None,
            tools: Vec::new(),
            software: None,
            board: None,
            since: None,
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
        assert_eq!(t.swarm_request("gw2", "gw1"), "covo/gw2/swarm/req/gw1");
        assert_eq!(t.swarm_response("gw1", "gw2"), "covo/gw1/swarm/res/gw2");
        assert_eq!(t.swarm_requests("gw2"), "covo/gw2/swarm/req/+");
        assert_eq!(t.swarm_responses("gw1"), "covo/gw1/swarm/res/+");
        let req = t.swarm_request("gw2", "gw1");
        assert_eq!(t.caller_of_swarm_request("gw2", &req), Some("gw1"));
        assert_eq!(t.caller_of_swarm_request("gw3", &req), None);
        assert_eq!(t.caller_of_swarm_request("gw", &req), None);
        let res = t.swarm_response("gw1", "gw2");
        assert_eq!(t.responder_of_swarm_response("gw1", &res), Some("gw2"));
        assert_eq!(t.responder_of_swarm_response("gw2", &res), None);
        for bad in [
            "covo/gw2/swarm/req",
            "covo/gw2/swarm/req/",
            "covo/gw2/swarm/req/a/b",
            "covo/gw2/swarm/res/gw1",
            "other/gw2/swarm/req/gw1",
        ] {
            assert_eq!(t.caller_of_swarm_request("gw2", bad), None, "{bad}");
        }
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
        let full = Status {
            software: Some("covo 0.1.0".into()),
            board: Some("greenhouse".into()),
            since: Some(1_700_000_000),
            ..Status::online(vec![])
        };
        assert_eq!(
            serde_json::to_value(&full).unwrap(),
            serde_json::json!({"status":"online","version":1,"software":"covo 0.1.0","board":"greenhouse","since":1_700_000_000u64})
        );
        // A birth from before these fields still reads.
        let old: Status = serde_json::from_str(r#"{"status":"online","version":1}"#).unwrap();
        assert_eq!(old, Status::online(vec![]));
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

    #[test]
    fn answers_go_only_to_the_callers_own_response_topic() {
        let t = Topics::new("covo");
        // A peer request names its gateway in its topic; the answer goes to that gateway's
        // response topic, which is also the default.
        let req = t.request("gw1");
        assert_eq!(
            t.peer_reply_topic(&req, None),
            Ok("covo/gw1/peer/res".into())
        );
        assert_eq!(
            t.peer_reply_topic(&req, Some("covo/gw1/peer/res")),
            Ok("covo/gw1/peer/res".into())
        );
        for foreign in [
            "covo/gw2/peer/res",
            "covo/gw1/peer/res/x",
            "covo/gw1/chat/in",
            "covo/gw1/swarm/res",
            "elsewhere/relay/on",
            "",
        ] {
            assert_eq!(
                t.peer_reply_topic(&req, Some(foreign)),
                Err(ReplyRefused::Foreign {
                    topic: foreign.into(),
                    expected: "covo/gw1/peer/res".into()
                }),
                "{foreign}"
            );
        }
        assert!(matches!(
            t.peer_reply_topic("covo/a/b/peer/req", None),
            Err(ReplyRefused::NotARequest { .. })
        ));
        // A swarm request names its caller in its topic (which a broker ACL vouches for) and
        // in its payload; they must agree, and the answer goes only to the caller's response
        // branch for this responder.
        let req = t.swarm_request("gw1", "gw2");
        assert_eq!(
            t.swarm_reply_topic("gw1", &req, "gw2", "covo/gw2/swarm/res/gw1"),
            Ok("covo/gw2/swarm/res/gw1".into())
        );
        for foreign in [
            "covo/gw2/swarm/res",
            "covo/gw2/swarm/res/gw3",
            "covo/gw3/swarm/res/gw1",
            "covo/gw2/peer/res",
            "covo/gw2/chat/in",
        ] {
            assert!(
                matches!(
                    t.swarm_reply_topic("gw1", &req, "gw2", foreign),
                    Err(ReplyRefused::Foreign { .. })
                ),
                "{foreign}"
            );
        }
        // The payload claims gw3 on gw2's topic: an impostor, whatever topic it asks for.
        for asked in ["covo/gw3/swarm/res/gw1", "covo/gw2/swarm/res/gw1"] {
            assert_eq!(
                t.swarm_reply_topic("gw1", &req, "gw3", asked),
                Err(ReplyRefused::Impostor {
                    claimed: "gw3".into(),
                    sender: "gw2".into()
                })
            );
        }
        // Not a request for this responder, or no caller in the topic.
        for topic in [
            "covo/gw1/swarm/req",
            "covo/gw9/swarm/req/gw2",
            "covo/gw1/swarm/req/a/b",
        ] {
            assert!(matches!(
                t.swarm_reply_topic("gw1", topic, "gw2", "covo/gw2/swarm/res/gw1"),
                Err(ReplyRefused::NotARequest { .. })
            ));
        }
        for bad in ["", "+", "#", "$SYS", "gw+1"] {
            assert!(
                matches!(
                    t.swarm_reply_topic("gw1", &req, bad, "covo/gw2/swarm/res/gw1"),
                    Err(ReplyRefused::BadId { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(valid_id("greenhouse-1") && !valid_id("a/b") && !valid_id(""));
    }
}
