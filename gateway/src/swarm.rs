//! The swarm: gateways on one broker calling each other's tools.
//!
//! Each gateway's retained birth (`P/gateways/G/status`) lists the tools it serves to the swarm
//! (`Runtime::swarm_served`); `PeerLink` keeps the other gateways' latest status as
//! [`Member`](crate::link::Member)s. A call from gateway `C` to gateway `G` is a peer-protocol
//! request on `P/G/swarm/req/C` with `P/C/swarm/res/G` as its MQTT 5 response topic: each
//! party's id is in the topic it writes, where a broker ACL vouches for it
//! (`packaging/mosquitto/covo.acl`). `covo run` on `G` answers it here, through `G`'s own
//! pipeline (`Via::Remote`): schema, `[swarm] expose`, `G`'s board policy, `G`'s approver,
//! audit. A payload that names another caller than its topic, or a request asking for any other
//! response topic, is refused unanswered. A QoS 1 redelivery is answered from the dedup cache,
//! so a call never runs twice.

use crate::error::CallError;
use crate::exec::Session;
use crate::link::{Message, PeerLink};
use crate::runtime::{Runtime, Via};
use covo_wire::dedup::{parse_request, Admit, Dedup};
use covo_wire::protocol::{Request, Response, Topics};
use std::sync::Mutex;

/// What answers swarm calls on one gateway.
#[derive(Default)]
pub struct SwarmServer {
    dedup: Mutex<Dedup>,
}

/// What [`SwarmServer::admit`] decided about an incoming request.
pub enum Admission {
    /// A new call: run it, then [`SwarmServer::finish`].
    Run(Request, Reply),
    /// Already answered, already running, or refused (not a request, or a response topic
    /// that is not the caller's): nothing to run.
    Done,
}

/// Where the answer to one request goes.
pub struct Reply {
    topic: String,
    correlation: Option<Vec<u8>>,
}

impl SwarmServer {
    /// A server with an empty dedup cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `msg`; answers duplicates right away (never blocks). A request on
    /// `P/G/swarm/req/C` is answered only when its payload's `gateway` is `C`, and only on
    /// `P/C/swarm/res/G`: one that claims another caller, asks for another topic, or names no
    /// valid caller, is refused with no publish and logged, so no client can make this gateway
    /// publish where `[mqtt] publish_allow` would refuse, nor pass for another gateway.
    pub fn admit(&self, link: &PeerLink, msg: &Message) -> Admission {
        let Some(topic) = msg.response_topic.clone() else {
            tracing::warn!(
                topic = msg.topic,
                "swarm request without a response topic dropped"
            );
            return Admission::Done;
        };
        let req = match parse_request(&msg.payload, msg.correlation.as_deref()) {
            Ok(req) => req,
            Err(_) => {
                // Not a request: it names no caller, so there is no topic it may be answered on.
                tracing::warn!(
                    topic = msg.topic,
                    response_topic = topic,
                    "swarm request refused: not a request, so its caller is unknown"
                );
                return Admission::Done;
            }
        };
        let topics = Topics::new(link.prefix());
        if let Err(e) =
            topics.swarm_reply_topic(link.gateway_id(), &msg.topic, &req.gateway, &topic)
        {
            tracing::warn!(
                from = req.gateway,
                call_id = req.call_id,
                error = %e,
                "swarm request refused: its caller or its response topic is not the sender's"
            );
            return Admission::Done;
        }
        let reply = Reply {
            topic,
            correlation: msg.correlation.clone(),
        };
        let admit = self
            .dedup
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit_parsed(req);
        match admit {
            Admit::Run(req) => Admission::Run(req, reply),
            Admit::Answer(r) => {
                send(
                    link,
                    &reply,
                    &r,
                    &serde_json::to_vec(&r).unwrap_or_default(),
                );
                Admission::Done
            }
            // Running: its answer is on the way.
            Admit::Drop => Admission::Done,
        }
    }

    /// Runs an admitted request through this gateway's pipeline and answers it. Blocking.
    pub fn run(
        &self,
        rt: &Runtime,
        link: &PeerLink,
        session: &Session,
        req: Request,
        reply: Reply,
    ) {
        tracing::info!(from = req.gateway, tool = req.tool, "swarm call");
        let resp = match rt.call(session, Via::Remote, &req.tool, req.args) {
            Ok(v) => Response::ok(&req.call_id, v),
            Err(CallError::Respond(e)) => Response::tool_error(&req.call_id, &e),
            Err(CallError::Fatal(e)) => Response::err(&req.call_id, "failed", e.to_string()),
        };
        self.answer(link, &reply, &resp);
    }

    /// Keeps `resp` as the answer to its call (for redeliveries) and sends it.
    fn answer(&self, link: &PeerLink, reply: &Reply, resp: &Response) {
        let body = serde_json::to_vec(resp).unwrap_or_default();
        self.dedup.lock().unwrap_or_else(|p| p.into_inner()).finish(
            &resp.call_id,
            resp,
            body.len(),
        );
        send(link, reply, resp, &body);
    }

    /// Answers an admitted request with an error without running it (e.g. `busy`); a
    /// redelivery of it gets the same answer.
    pub fn refuse(
        &self,
        link: &PeerLink,
        req: &Request,
        reply: Reply,
        kind: &str,
        message: impl Into<String>,
    ) {
        self.answer(link, &reply, &Response::err(&req.call_id, kind, message));
    }
}

fn send(link: &PeerLink, reply: &Reply, resp: &Response, body: &[u8]) {
    let correlation = reply
        .correlation
        .clone()
        .or_else(|| Some(resp.call_id.clone().into_bytes()));
    if let Err(e) = link.respond(&reply.topic, correlation, body) {
        tracing::warn!(error = %e, call_id = resp.call_id, "cannot answer a swarm call");
    }
}
