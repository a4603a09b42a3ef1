//! `covo-peer`: the cloud side. It announces itself with a retained birth (the tools its backends
//! serve) and a retained `offline` Will, joins the shared request group so each request reaches
//! one peer, runs each tool on a blocking thread with the request's deadline, and answers on the
//! request's response topic with its correlation data.
//!
//! Any client on the broker can publish a request, so the peer trusts none: a request is
//! answered only on its gateway's own response topic (`P/G/peer/res` for a request on
//! `P/G/peer/req`; any other is refused and logged, with no publish), and its arguments are
//! checked against the tool's schema from the catalog before the tool runs (`invalid_arguments`
//! naming every problem).
//!
//! QoS 1 may deliver a request twice: requests are admitted through `covo_wire::dedup`, so a
//! duplicate of a finished call gets the kept response again, a duplicate of a running call is
//! dropped (its answer is on the way), and a tool never runs twice.

use crate::backends::Backends;
use crate::fleet::SharedFleet;
use crate::validate::Validators;
use covo_core::error::ToolError;
use covo_wire::dedup::{Admit, Dedup};
pub use covo_wire::host::ToolHost;
use covo_wire::mqtt::{
    chunk_plan, options, spawn_driver, status_will, BrokerAuth, Client, DriverOptions, Handler,
    Incoming, PacketLimit, QoS, Stop,
};
use covo_wire::protocol::{self, ReplyRefused, Response, Status, Topics};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

impl ToolHost for Backends {
    fn tools(&self) -> Vec<String> {
        Backends::tools(self)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    fn call(&self, tool: &str, args: Value, deadline: Instant) -> Result<Value, ToolError> {
        Backends::call(self, tool, args, deadline)
    }
}

/// Where and as whom a peer connects.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Broker URL.
    pub url: String,
    /// Peer id (topic level).
    pub id: String,
    /// Topic prefix.
    pub prefix: String,
    /// Credentials and TLS files.
    pub auth: BrokerAuth,
}

impl ServerOptions {
    /// From `[mqtt]` (url, prefix) and `[peer]` (id).
    pub fn from_config(cfg: &covo::config::Config, peer: &crate::config::PeerConfig) -> Self {
        let mqtt = cfg.mqtt.clone().unwrap_or_default();
        ServerOptions {
            url: mqtt.url(),
            id: peer
                .id
                .clone()
                .unwrap_or_else(|| format!("peer-{}", covo::config::host_name())),
            prefix: mqtt.prefix(),
            auth: mqtt.auth(),
        }
    }
}

struct PeerHandler {
    host: Arc<dyn ToolHost>,
    topics: Topics,
    id: String,
    dedup: Arc<Mutex<Dedup>>,
    validators: Arc<Validators>,
    executed: Arc<std::sync::atomic::AtomicU64>,
    limit: PacketLimit,
    /// The birth waits for the SUBACK of this connection's subscription.
    birth_due: bool,
    /// The fleet the fleet page shows, fed from the gateways' retained statuses and readings.
    fleet: Option<SharedFleet>,
}

/// Answers on `topic` with `body` (a serialized response to `call_id`). On the poll task
/// (`may_wait` false) a full queue drops the answer; on a worker thread it waits for room, so
/// a large chunked answer goes out whole. Chunks fit the broker's packet limit `limit`.
fn reply(
    client: &Client,
    topic: String,
    correlation: Option<bytes::Bytes>,
    call_id: &str,
    body: &[u8],
    may_wait: bool,
    limit: u32,
) {
    if let Err(e) =
        covo_wire::mqtt::publish_response(client, &topic, correlation, body, may_wait, limit)
    {
        tracing::warn!(error = %e, call_id, "cannot send a peer response");
    }
}

/// `resp` as the body to send, or, when it cannot cross the broker in at most `MAX_CHUNKS`
/// packets, a small `failed` answer that says "response too large" (instead of silence that
/// the gateway would only see as a timeout).
fn sendable(
    resp: Response,
    tool: &str,
    topic: &str,
    correlation_len: usize,
    limit: u32,
) -> (Response, Vec<u8>) {
    let body = serde_json::to_vec(&resp).unwrap_or_default();
    match chunk_plan(topic, correlation_len, body.len(), limit) {
        Ok(_) => (resp, body),
        Err(e) => {
            tracing::warn!(error = %e, call_id = %resp.call_id, "peer response too large; answering with an error");
            let err = Response::tool_error(
                &resp.call_id,
                &ToolError::Failed {
                    tool: tool.to_string(),
                    message: e.to_string(),
                    hint: Some(
                        "ask for less: a narrower range, fewer items or a smaller output".into(),
                    ),
                },
            );
            let body = serde_json::to_vec(&err).unwrap_or_default();
            (err, body)
        }
    }
}

impl PeerHandler {
    fn publish_birth(&self, client: &Client) {
        let birth = Status {
            software: Some(concat!("covo-peer ", env!("CARGO_PKG_VERSION")).into()),
            since: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs()),
            ..Status::online(self.host.tools())
        };
        let birth = serde_json::to_vec(&birth).unwrap_or_default();
        let _ = client.try_publish(
            self.topics.peer_status(&self.id),
            QoS::AtLeastOnce,
            true,
            birth,
        );
    }
}

impl Handler for PeerHandler {
    /// Subscribes to the shared request group and, with a fleet page, to every gateway's status
    /// and readings, in one SUBSCRIBE (one SUBACK, which the birth waits for).
    fn connected(&mut self, client: &Client) {
        let mut filters = vec![self.topics.shared_requests()];
        if let Some(fleet) = &self.fleet {
            filters.extend(fleet.lock().unwrap_or_else(|p| p.into_inner()).filters());
        }
        match client.try_subscribe_many(filters, QoS::AtLeastOnce) {
            Ok(()) => self.birth_due = true,
            Err(e) => {
                tracing::warn!(error = %e, "peer subscribe failed");
                self.publish_birth(client);
            }
        }
    }

    /// The birth goes out once the broker has acknowledged the subscription to requests: a
    /// clustered broker spreads it to its other nodes before the SUBACK, and a gateway that
    /// sees the birth may send a request at once.
    fn subscribed(&mut self, client: &Client) {
        if std::mem::take(&mut self.birth_due) {
            self.publish_birth(client);
        }
    }

    fn publish(&mut self, client: &Client, p: Incoming) {
        if let Some(fleet) = &self.fleet {
            let mut fleet = fleet.lock().unwrap_or_else(|p| p.into_inner());
            if fleet.message(&p.topic, &p.payload) {
                return;
            }
        }
        let topic = p.topic.clone();
        let props = &p.properties;
        // Answers go only to the requesting gateway's own response topic: any client can
        // publish a request, and must not make the peer publish anywhere else.
        let res_topic = match self
            .topics
            .peer_reply_topic(&topic, props.response_topic.as_deref())
        {
            Ok(t) => t,
            Err(ReplyRefused::NotARequest { .. }) => return,
            Err(e) => {
                tracing::warn!(topic, error = %e, "peer request refused: its response topic is not its gateway's");
                return;
            }
        };
        let correlation = props.correlation_data.clone();
        let admit = self
            .dedup
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit_request(&p.payload, correlation.as_deref());
        let req = match admit {
            Admit::Run(req) => req,
            Admit::Answer(r) => {
                // A kept answer goes back with the call id as correlation data if none came.
                let correlation = correlation.or_else(|| {
                    (!r.call_id.is_empty()).then(|| bytes::Bytes::from(r.call_id.clone()))
                });
                let body = serde_json::to_vec(&r).unwrap_or_default();
                let limit = self.limit.get();
                return reply(
                    client,
                    res_topic,
                    correlation,
                    &r.call_id,
                    &body,
                    false,
                    limit,
                );
            }
            Admit::Drop => return,
        };
        let correlation =
            correlation.or_else(|| Some(bytes::Bytes::from(req.call_id.clone().into_bytes())));
        let host = self.host.clone();
        let dedup = self.dedup.clone();
        let validators = self.validators.clone();
        let executed = self.executed.clone();
        let limit = self.limit.clone();
        let client = client.clone();
        let ms = if req.deadline_ms == 0 {
            30_000
        } else {
            req.deadline_ms
        };
        let deadline = Instant::now() + Duration::from_millis(ms);
        tokio::task::spawn_blocking(move || {
            let resp = if !host.tools().contains(&req.tool) {
                Response::err(
                    &req.call_id,
                    "unknown_tool",
                    format!("this peer does not serve '{}'", req.tool),
                )
            } else if let Err(e) = validators.check(&req.tool, &req.args) {
                // The peer checks the arguments itself: the request may not come from a gateway
                // that validated them.
                Response::tool_error(&req.call_id, &e)
            } else {
                executed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                match host.call(&req.tool, req.args, deadline) {
                    Ok(v) => Response::ok(&req.call_id, v),
                    Err(e) => Response::tool_error(&req.call_id, &e),
                }
            };
            let corr_len = correlation.as_ref().map_or(0, |c| c.len());
            let (resp, body) = sendable(resp, &req.tool, &res_topic, corr_len, limit.get());
            dedup
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .finish(&req.call_id, &resp, body.len());
            reply(
                &client,
                res_topic,
                correlation,
                &req.call_id,
                &body,
                true,
                limit.get(),
            );
        });
    }
}

/// A running peer.
pub struct PeerServer {
    stop: Option<tokio::sync::oneshot::Sender<Stop>>,
    thread: Option<JoinHandle<()>>,
    executed: Arc<std::sync::atomic::AtomicU64>,
}

impl PeerServer {
    /// Connects and serves `host`'s tools in the background.
    pub fn start(opts: &ServerOptions, host: Arc<dyn ToolHost>) -> Result<PeerServer, String> {
        PeerServer::start_with_fleet(opts, host, None)
    }

    /// [`PeerServer::start`], also keeping `fleet` up to date from the gateways' retained
    /// statuses and readings (for the fleet page), when given.
    pub fn start_with_fleet(
        opts: &ServerOptions,
        host: Arc<dyn ToolHost>,
        fleet: Option<SharedFleet>,
    ) -> Result<PeerServer, String> {
        let topics = Topics::new(&opts.prefix);
        let status = topics.peer_status(&opts.id);
        let client_id = format!("covo-peer-{}-{}", opts.id, &protocol::new_call_id()[..8]);
        let o = options(
            &opts.url,
            &opts.auth,
            &client_id,
            Some(status_will(&status)),
        )?;
        let (client, connection) = Client::new(o);
        let executed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let limit = PacketLimit::default();
        let handler = PeerHandler {
            birth_due: false,
            host,
            topics,
            id: opts.id.clone(),
            dedup: Arc::new(Mutex::new(Dedup::default())),
            validators: Arc::new(Validators::default()),
            executed: executed.clone(),
            limit: limit.clone(),
            fleet,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let driver = DriverOptions {
            name: "covo-peer".into(),
            status_topic: Some(status),
            limit,
        };
        let thread =
            spawn_driver(driver, client, connection, handler, rx).map_err(|e| e.to_string())?;
        Ok(PeerServer {
            stop: Some(tx),
            thread: Some(thread),
            executed,
        })
    }

    /// How many tool executions this peer has started.
    pub fn executed(&self) -> u64 {
        self.executed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Blocks until the peer stops (it runs until the process ends).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Publishes `offline` and disconnects.
    pub fn shutdown(mut self) {
        self.end(Stop::Graceful);
    }

    /// Drops the connection without a DISCONNECT, as a crash would: the broker sends the Will.
    pub fn crash(mut self) {
        self.end(Stop::Crash);
    }

    fn end(&mut self, how: Stop) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(how);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        self.end(Stop::Graceful);
    }
}
