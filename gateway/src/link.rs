//! The gateway's MQTT client, [`PeerLink`]: it tracks the retained peer births (which tools are
//! served right now) and forwards `runs = "peer"` calls to them. It also tracks the other
//! gateways' births (the swarm) and sends them swarm calls the same way, and it serves local
//! subscriptions (`covo run`, the `mqtt` and `messaging` tools). The wire contract and the
//! transport are `covo_wire`'s.

use crate::config::MqttConfig;
use crate::error::ToolError;
use bytes::Bytes;
use covo_wire::mqtt::{
    options, publish_birth, publish_overhead, publish_response, spawn_driver, status_will,
    topic_matches, Client, DriverOptions, Handler, Incoming, PacketLimit, Partial, Properties, QoS,
    Stop, CHUNK_PROPERTY, DEFAULT_TIMEOUT, MAX_CHUNKS,
};
use covo_wire::protocol::{self, Request, Response, Status, Topics};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many messages one local subscription holds before the newest are dropped.
pub const SUB_QUEUE: usize = 256;
/// How many calls may wait for their answers at once; more are refused at once.
pub const MAX_PENDING: usize = 256;
/// The most other gateways remembered from their retained status. Beyond it an offline one
/// (the longest known) makes room; when all are online a newcomer is not listed, and counted.
pub const MAX_MEMBERS: usize = 16_384;
/// The most tool names kept from one member's birth, and the longest name, software or board
/// string kept: a birth cannot make a member large.
pub const MAX_MEMBER_TOOLS: usize = 512;
const MAX_MEMBER_TEXT: usize = 64;

/// Whether this process owns the gateway's presence (`P/gateways/G/status`: its birth, its
/// `offline`, its Will). Only `covo run` does; a CLI command beside it connects with its own
/// client id and publishes no status, so it never knocks the daemon offline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Publishes the birth, a clean `offline` and carries the Will (`covo run`).
    Owner,
    /// Publishes no status at all (CLI commands, tests, tools).
    None,
}

/// Where a call went: to the shared peer group, or to one gateway of the swarm.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sent {
    Peer,
    Gateway(String),
}

/// A call waiting for its answer.
struct Pending {
    tx: mpsc::SyncSender<Outcome>,
    tool: String,
    to: Sent,
    /// A [`Outcome::Resend`] is queued and not yet read: never queue a second one, so the
    /// terminal outcome always finds room.
    resend_signalled: bool,
}

/// What ends a wait for an answer.
#[derive(Debug)]
enum Outcome {
    /// The answer.
    Answer(Response),
    /// The peer or gateway that may be running it went offline and nobody else can: fail now.
    Gone(String),
    /// A peer that served the tool went offline but another live one serves it: send again.
    Resend(String),
    /// The answer cannot arrive whole (more chunks than allowed).
    TooLarge(String),
}

/// The gateway's shared state, written by the poll task and read by callers.
#[derive(Default)]
struct State {
    /// Online peers → the tools each serves.
    peers: HashMap<String, Vec<String>>,
    /// Calls waiting for an answer, by call id (at most [`MAX_PENDING`]).
    pending: HashMap<String, Pending>,
    /// Our own sync message came back: the retained births have been delivered.
    synced: bool,
    /// SUBSCRIBE packets sent and SUBACKs received on this connection: a birth that changed
    /// while some were unanswered (`birth_due`) goes out once all are, so that a gateway never
    /// announces a tool before the broker routes its requests (on a cluster, to every node).
    subs_sent: u64,
    subs_acked: u64,
    birth_due: bool,
    /// A CONNACK has been seen and no disconnect since.
    connected: bool,
    /// Local subscribers (`covo run`, the MQTT tools): id, filter, where to deliver.
    subs: Vec<(u64, String, Sink)>,
    next_sub: u64,
    /// The other gateways on the broker, from their retained status, by id.
    gateways: BTreeMap<String, Member>,
    /// The tools this gateway serves to the swarm (listed in its birth).
    served: Vec<String>,
    /// The board named in this gateway's birth.
    board: Option<String>,
    /// When the current connection came up (Unix seconds), for the birth's `since`.
    online_since: u64,
    /// Gateways not listed because [`MAX_MEMBERS`] were known and all online.
    members_dropped: u64,
    /// Why the last connection attempt failed or dropped.
    last_error: Option<String>,
    /// How many CONNACKs so far: a change means the link came back (perhaps to a restarted
    /// broker that lost every retained message).
    connects: u64,
}

/// Another gateway on the same broker, as its latest retained status describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    /// Its gateway id.
    pub id: String,
    /// Whether its latest status is `online` (a Will or a clean shutdown says `offline`).
    pub online: bool,
    /// The tools it serves to the swarm (empty while offline, or when it serves none).
    pub tools: Vec<String>,
    /// When this gateway learned that status, in Unix seconds.
    pub since_unix: u64,
    /// The software its birth names (`covo 0.1.0`).
    pub software: Option<String>,
    /// The board its birth names.
    pub board: Option<String>,
    /// When, by its birth, its connection came up (Unix seconds).
    pub online_since: Option<u64>,
}

/// Where a local subscription's messages go: a blocking receiver (the MQTT tools, the CLI) or
/// straight into an async loop's queue (`covo run`: no thread per subscription).
enum Sink {
    Blocking(mpsc::SyncSender<Message>),
    Async(tokio::sync::mpsc::Sender<Message>),
}

impl Sink {
    /// Delivers without waiting; `false` when the queue is full (or its receiver gone).
    fn offer(&self, m: Message) -> bool {
        match self {
            Sink::Blocking(tx) => tx.try_send(m).is_ok(),
            Sink::Async(tx) => tx.try_send(m).is_ok(),
        }
    }
}

/// A message delivered to a local subscriber.
#[derive(Debug, Clone)]
pub struct Message {
    /// The topic it was published on.
    pub topic: String,
    /// The payload bytes.
    pub payload: Vec<u8>,
    /// Whether the broker delivered it as a retained message.
    pub retain: bool,
    /// The MQTT 5 response topic, when the sender asked for an answer.
    pub response_topic: Option<String>,
    /// The MQTT 5 correlation data that goes back with the answer.
    pub correlation: Option<Vec<u8>>,
}

impl Message {
    /// The payload as JSON when it parses, else as a string.
    pub fn payload_json(&self) -> Value {
        serde_json::from_slice(&self.payload)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.payload).into_owned()))
    }
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct GatewayHandler {
    shared: Arc<Shared>,
    topics: Topics,
    gateway: String,
    sync_topic: String,
    /// Where answers to this gateway's calls arrive: peer responses, and the filter of swarm
    /// responses (`P/G/swarm/res/+`, the last level the responder's id).
    response_topics: [String; 2],
    partial: Partial,
    presence: Presence,
    /// The subscriptions of this connection are on their way: publish the one sync message
    /// when their SUBACK arrives.
    sync_due: bool,
}

impl GatewayHandler {
    /// Who answers on `topic`, when it is one of this gateway's response topics.
    fn answered_by(&self, topic: &str) -> Option<Sent> {
        if topic == self.response_topics[0] {
            return Some(Sent::Peer);
        }
        self.topics
            .responder_of_swarm_response(&self.gateway, topic)
            .map(|g| Sent::Gateway(g.to_string()))
    }
}

impl Handler for GatewayHandler {
    fn connected(&mut self, client: &Client) {
        let subs = [
            self.topics.all_peer_status(),
            self.topics.all_gateway_status(),
            self.response_topics[0].clone(),
            self.response_topics[1].clone(),
            self.sync_topic.clone(),
        ];
        let (local, served) = {
            let mut st = self.shared.lock();
            st.connected = true;
            st.connects += 1;
            // One SUBSCRIBE below carries every subscription; the birth follows its SUBACK.
            (st.subs_sent, st.subs_acked, st.birth_due) = (1, 0, false);
            st.online_since = unix_now();
            let mut fs: Vec<String> = st.subs.iter().map(|(_, f, _)| f.clone()).collect();
            fs.sort();
            fs.dedup();
            (fs, birth(&st))
        };
        self.shared.changed.notify_all();
        // One SUBSCRIBE for all of them: one SUBACK, after which one sync message follows the
        // retained births.
        let filters = subs.into_iter().chain(local);
        match client.try_subscribe_many(filters, QoS::AtLeastOnce) {
            Ok(()) => self.sync_due = true,
            Err(e) => {
                tracing::warn!(error = %e, "MQTT subscribe failed");
                if self.presence == Presence::Owner {
                    publish_birth(client, &self.topics.gateway_status(&self.gateway), &served);
                }
            }
        }
    }

    fn subscribed(&mut self, client: &Client) {
        // The birth says "online": only once the broker has acknowledged the subscriptions, so
        // whoever sees it can call at once. On one broker the order on the connection would
        // do; a clustered broker spreads a subscription to its other nodes before the SUBACK
        // (rmqtt through raft), while the birth could reach them ahead of it.
        // The broker sends retained messages right after a SUBACK; a message we publish to
        // ourselves after it comes back after them. Once per connection: later SUBACKs are
        // local subscriptions (`subscribe`), which need no sync.
        let first = std::mem::take(&mut self.sync_due);
        let due = {
            let mut st = self.shared.lock();
            st.subs_acked += 1;
            let all = st.subs_acked >= st.subs_sent;
            let due = first || (all && st.birth_due);
            if due && all {
                st.birth_due = false;
            }
            (due && self.presence == Presence::Owner).then(|| birth(&st))
        };
        if let Some(b) = due {
            publish_birth(client, &self.topics.gateway_status(&self.gateway), &b);
        }
        if first {
            let _ = client.try_publish(self.sync_topic.clone(), QoS::AtLeastOnce, false, "sync");
        }
    }

    fn publish(&mut self, client: &Client, p: Incoming) {
        let topic = p.topic.clone();
        if topic == self.sync_topic {
            self.shared.lock().synced = true;
            self.shared.changed.notify_all();
        } else if let Some(peer) = self.topics.peer_of_status(&topic) {
            let status: Option<Status> = serde_json::from_slice(&p.payload).ok();
            let mut st = self.shared.lock();
            match status {
                Some(s) if s.is_online() && s.version == Some(protocol::VERSION) => {
                    tracing::info!(peer, tools = s.tools.len(), "peer online");
                    st.peers.insert(peer.to_string(), s.tools);
                }
                Some(s) if s.is_online() => {
                    // Another protocol (or none named): its tools are not used.
                    tracing::warn!(peer, version = ?s.version, want = protocol::VERSION, "peer birth with another protocol version ignored");
                    if let Some(tools) = st.peers.remove(peer) {
                        peer_gone(&mut st, peer, &tools);
                    }
                }
                _ => {
                    if let Some(tools) = st.peers.remove(peer) {
                        tracing::info!(peer, "peer offline");
                        peer_gone(&mut st, peer, &tools);
                    }
                }
            }
            drop(st);
            self.shared.changed.notify_all();
        } else if let Some(gw) = self.topics.gateway_of_status(&topic) {
            if gw == self.gateway {
                // Our own status says we are not online while we are: a Will of an earlier
                // connection that fired late, or one another client left there (rmqtt does not
                // check Wills against its ACL). Say it again.
                if self.presence == Presence::Owner
                    && !serde_json::from_slice::<Status>(&p.payload).is_ok_and(|s| s.is_online())
                {
                    let b = {
                        let st = self.shared.lock();
                        (st.connected && st.subs_acked >= st.subs_sent).then(|| birth(&st))
                    };
                    if let Some(b) = b {
                        tracing::warn!("our status topic said offline: announcing again");
                        publish_birth(client, &topic, &b);
                    }
                }
                return;
            }
            let status: Option<Status> = serde_json::from_slice(&p.payload).ok();
            let member = member(gw, status);
            let online = member.online;
            tracing::info!(gateway = gw, online, "swarm member status");
            let mut st = self.shared.lock();
            if !online {
                gateway_gone(&mut st, gw);
            }
            if p.payload.is_empty() {
                // A cleared retained status: the gateway is gone for good.
                st.gateways.remove(gw);
            } else {
                remember(&mut st, member);
            }
            drop(st);
            self.shared.changed.notify_all();
        } else if let Some(from) = self.answered_by(&topic) {
            let correlation = p
                .properties
                .correlation_data
                .as_ref()
                .map(|c| String::from_utf8_lossy(c).into_owned());
            let chunk = p
                .properties
                .user_properties
                .iter()
                .find(|(k, _)| k == CHUNK_PROPERTY)
                .map(|(_, v)| v.clone());
            let whole;
            let body: &[u8] = match (chunk, &correlation) {
                (None, _) => &p.payload,
                (Some(spec), Some(id)) => {
                    // Chunks are kept only for calls still waiting; the rest are dropped.
                    {
                        let mut st = self.shared.lock();
                        if !st.pending.contains_key(id) {
                            return;
                        }
                        self.partial.retain(|k| st.pending.contains_key(k));
                        let n = spec
                            .split_once('/')
                            .and_then(|(_, n)| n.parse::<usize>().ok());
                        if n.is_some_and(|n| n > MAX_CHUNKS) {
                            if let Some(p) = st.pending.remove(id) {
                                let _ = p.tx.try_send(Outcome::TooLarge(format!(
                                    "response too large: it comes in {} chunks, more than the {MAX_CHUNKS} allowed",
                                    n.unwrap_or(0)
                                )));
                            }
                            return;
                        }
                    }
                    match self.partial.add(id, &spec, p.payload.clone()) {
                        Some(b) => {
                            whole = b;
                            &whole
                        }
                        None => return,
                    }
                }
                (Some(_), None) => return,
            };
            let Ok(resp) = serde_json::from_slice::<Response>(body) else {
                tracing::warn!(topic, "unparsable response dropped");
                return;
            };
            // A response counts only when its correlation data and its body name the same
            // pending call: a stray or forged message without both is dropped.
            let Some(id) = correlation.filter(|id| *id == resp.call_id) else {
                tracing::warn!(call_id = %resp.call_id, "response without matching correlation data dropped");
                return;
            };
            // And only from where the call went: a swarm call's answer on the responder's
            // own branch (`P/G/swarm/res/R`, which an ACL lets only R write), a peer call's on
            // the peer branch.
            let mut st = self.shared.lock();
            if st.pending.get(&id).is_some_and(|p| p.to != from) {
                tracing::warn!(call_id = %id, topic, "response from another responder than the call's dropped");
                return;
            }
            if let Some(p) = st.pending.remove(&id) {
                let _ = p.tx.try_send(Outcome::Answer(resp));
            }
        } else {
            let props = &p.properties;
            let msg = Message {
                topic: topic.clone(),
                payload: p.payload.to_vec(),
                retain: p.retain,
                response_topic: props.response_topic.clone(),
                correlation: props.correlation_data.as_ref().map(|c| c.to_vec()),
            };
            let st = self.shared.lock();
            for (id, f, tx) in &st.subs {
                // The poll task never blocks: a subscriber that does not keep up loses the
                // newest messages beyond its queue, never memory.
                if topic_matches(f, &topic) && !tx.offer(msg.clone()) {
                    tracing::warn!(
                        subscription = id,
                        topic,
                        "subscriber queue full; message dropped"
                    );
                }
            }
        }
    }

    fn disconnected(&mut self, reason: &str) {
        // Unreachable peers serve nothing; the births come back with the next SUBACK.
        let mut st = self.shared.lock();
        st.last_error = Some(reason.to_string());
        st.peers.clear();
        st.gateways.clear();
        st.synced = false;
        st.connected = false;
        drop(st);
        self.shared.changed.notify_all();
    }
}

/// The gateway's link to the cloud peers.
pub struct PeerLink {
    client: Client,
    shared: Arc<Shared>,
    topics: Topics,
    gateway: String,
    timeout: Duration,
    presence: Presence,
    limit: PacketLimit,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<Stop>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl PeerLink {
    /// Connects (in the background) with the configuration's broker, id and prefix, without
    /// the gateway's presence: it publishes no status and carries no Will (a CLI command).
    pub fn start(cfg: &MqttConfig) -> Result<PeerLink, String> {
        Self::start_as(cfg, Presence::None)
    }

    /// Connects like [`PeerLink::start`]; with [`Presence::Owner`] (only `covo run`) it also
    /// publishes the gateway's retained birth on every CONNACK, carries the `offline` Will and
    /// publishes `offline` when it closes.
    pub fn start_as(cfg: &MqttConfig, presence: Presence) -> Result<PeerLink, String> {
        let topics = Topics::new(&cfg.prefix());
        let gateway = cfg.gateway_id();
        let nonce = protocol::new_call_id();
        // Every process has a client id of its own: a second one never takes over the first's
        // session (a broker drops the older connection on a duplicate id).
        let role = match presence {
            Presence::Owner => "gw",
            Presence::None => "cli",
        };
        let client_id = format!("covo-{role}-{gateway}-{}", &nonce[..8]);
        let status = topics.gateway_status(&gateway);
        let will = (presence == Presence::Owner).then(|| status_will(&status));
        let opts = options(&cfg.url(), &cfg.auth(), &client_id, will)?;
        let (client, connection) = Client::new(opts);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let handler = GatewayHandler {
            shared: shared.clone(),
            topics: topics.clone(),
            gateway: gateway.clone(),
            sync_topic: format!("{}/{gateway}/peer/sync/{nonce}", topics.prefix),
            response_topics: [topics.response(&gateway), topics.swarm_responses(&gateway)],
            partial: Partial::default(),
            presence,
            sync_due: false,
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let limit = PacketLimit::default();
        let driver = DriverOptions {
            name: "covo-mqtt".into(),
            status_topic: (presence == Presence::Owner).then_some(status),
            limit: limit.clone(),
        };
        let thread = spawn_driver(driver, client.clone(), connection, handler, stop_rx)
            .map_err(|e| e.to_string())?;
        Ok(PeerLink {
            client,
            shared,
            topics,
            gateway,
            timeout: cfg
                .call_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_TIMEOUT),
            presence,
            limit,
            stop: Mutex::new(Some(stop_tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Waits until the retained births have arrived (or `max` passes); `true` when they have.
    pub fn wait_synced(&self, max: Duration) -> bool {
        let end = Instant::now() + max;
        let mut st = self.shared.lock();
        while !st.synced {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .shared
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// Waits until `pred(available)` holds for `tool` (or `max` passes); returns the last value.
    pub fn wait_for(&self, tool: &str, want: bool, max: Duration) -> bool {
        let end = Instant::now() + max;
        let mut st = self.shared.lock();
        loop {
            let now = serves(&st, tool);
            let left = end.saturating_duration_since(Instant::now());
            if now == want || left.is_zero() {
                return now;
            }
            st = self
                .shared
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Whether the broker connection is up.
    pub fn is_connected(&self) -> bool {
        self.shared.lock().connected
    }

    /// The topic prefix.
    pub fn prefix(&self) -> &str {
        &self.topics.prefix
    }

    /// Queues a publish on the shared client (never blocks).
    pub fn publish(
        &self,
        topic: &str,
        payload: Vec<u8>,
        qos: QoS,
        retain: bool,
    ) -> Result<(), String> {
        self.fits(topic, 0, payload.len())?;
        self.client
            .try_publish(topic, qos, retain, payload)
            .map_err(|e| format!("cannot queue the publish: {e}"))
    }

    /// Whether a publish of `len` payload bytes on `topic` fits the broker's packet limit
    /// (a larger one would make the client drop the whole connection).
    fn fits(&self, topic: &str, extra: usize, len: usize) -> Result<(), String> {
        let limit = self.limit.get() as usize;
        let size = len + publish_overhead(topic, extra);
        if size > limit {
            return Err(format!(
                "the message is too large: {size} bytes, over the broker's packet limit of {limit} bytes"
            ));
        }
        Ok(())
    }

    /// Whether this process owns the gateway's presence (`covo run`).
    pub fn presence(&self) -> Presence {
        self.presence
    }

    /// Subscribes to `filter`: messages that match it arrive on the receiver until
    /// [`PeerLink::unsubscribe`] with the returned id. Resubscribed after every reconnect.
    /// At most [`SUB_QUEUE`] messages wait for the receiver; more are dropped (and logged).
    pub fn subscribe(&self, filter: &str) -> Result<(u64, mpsc::Receiver<Message>), String> {
        let (tx, rx) = mpsc::sync_channel(SUB_QUEUE);
        Ok((self.add_sub(filter, Sink::Blocking(tx))?, rx))
    }

    /// [`PeerLink::subscribe`] delivering into `tx`, an async queue several subscriptions may
    /// share; a message that finds it full is dropped (and logged). The subscription's id.
    pub fn subscribe_into(
        &self,
        filter: &str,
        tx: tokio::sync::mpsc::Sender<Message>,
    ) -> Result<u64, String> {
        self.add_sub(filter, Sink::Async(tx))
    }

    fn add_sub(&self, filter: &str, sink: Sink) -> Result<u64, String> {
        let id = {
            let mut st = self.shared.lock();
            st.next_sub += 1;
            let id = st.next_sub;
            st.subs.push((id, filter.to_string(), sink));
            id
        };
        if let Err(e) = self.client.try_subscribe(filter, QoS::AtLeastOnce) {
            self.unsubscribe(id);
            return Err(format!("cannot subscribe to {filter}: {e}"));
        }
        self.shared.lock().subs_sent += 1;
        Ok(id)
    }

    /// Ends a local subscription; the broker subscription goes when no one else uses the filter.
    pub fn unsubscribe(&self, id: u64) {
        let mut st = self.shared.lock();
        let Some(pos) = st.subs.iter().position(|(i, _, _)| *i == id) else {
            return;
        };
        let (_, filter, _) = st.subs.remove(pos);
        if !st.subs.iter().any(|(_, f, _)| *f == filter) {
            let _ = self.client.try_unsubscribe(filter);
        }
    }

    /// This gateway's id.
    pub fn gateway_id(&self) -> &str {
        &self.gateway
    }

    /// The online peers and the tools each serves.
    pub fn peers(&self) -> HashMap<String, Vec<String>> {
        self.shared.lock().peers.clone()
    }

    /// How many times the link has connected (CONNACKs); it grows with every reconnect.
    pub fn connects(&self) -> u64 {
        self.shared.lock().connects
    }

    /// Why the broker connection is down, when it is and a reason is known.
    pub fn connection_error(&self) -> Option<String> {
        let st = self.shared.lock();
        (!st.connected).then(|| st.last_error.clone()).flatten()
    }

    /// Whether a live peer advertises `tool`; the reason when none does.
    pub fn availability(&self, tool: &str) -> Result<(), String> {
        let st = self.shared.lock();
        if serves(&st, tool) {
            Ok(())
        } else if let (false, Some(e)) = (st.connected, &st.last_error) {
            Err(format!("not connected to the MQTT broker: {e}"))
        } else if st.peers.is_empty() {
            Err("no peer online".into())
        } else {
            Err(format!("no online peer serves '{tool}'"))
        }
    }

    /// Forwards a call and waits for the answer. `idempotent` calls (effect `read`) are sent a
    /// second time, with the same call id, after a timeout; others never are.
    pub fn call(&self, tool: &str, args: Value, idempotent: bool) -> Result<Value, ToolError> {
        self.round_trip(
            Target::Peer,
            tool,
            args,
            self.timeout,
            if idempotent { 2 } else { 1 },
        )
    }

    /// The other gateways on this broker (this one excluded), by id.
    pub fn members(&self) -> Vec<Member> {
        self.shared.lock().gateways.values().cloned().collect()
    }

    /// Sets the tools this gateway serves to the swarm and republishes its birth with them.
    pub fn set_served(&self, tools: Vec<String>) {
        self.update_birth(|st| st.served = tools);
    }

    /// Names this gateway's board in its birth (for fleet views) and republishes it.
    pub fn set_board(&self, board: &str) {
        self.update_birth(|st| st.board = Some(board.to_string()));
    }

    /// How many gateways were not listed because [`MAX_MEMBERS`] online ones were known.
    pub fn members_dropped(&self) -> u64 {
        self.shared.lock().members_dropped
    }

    fn update_birth(&self, f: impl FnOnce(&mut State)) {
        let (connected, b) = {
            let mut st = self.shared.lock();
            f(&mut st);
            if st.subs_acked < st.subs_sent {
                // A subscription is on its way: the birth follows its SUBACK.
                st.birth_due = true;
                return;
            }
            (st.connected, birth(&st))
        };
        if connected && self.presence == Presence::Owner {
            publish_birth(&self.client, &self.topics.gateway_status(&self.gateway), &b);
        }
    }

    /// Runs `tool` on gateway `target` through its pipeline and waits up to `timeout` for the
    /// answer. `idempotent` calls are resent once, with the same call id, after a timeout.
    pub fn swarm_call(
        &self,
        target: &str,
        tool: &str,
        args: Value,
        timeout: Duration,
        idempotent: bool,
    ) -> Result<Value, ToolError> {
        self.round_trip(
            Target::Gateway(target),
            tool,
            args,
            timeout,
            if idempotent { 2 } else { 1 },
        )
    }

    /// Sends a serialized response to a request that arrived with `response_topic` and
    /// `correlation` (MQTT 5); large bodies go in chunks.
    pub fn respond(
        &self,
        response_topic: &str,
        correlation: Option<Vec<u8>>,
        body: &[u8],
    ) -> Result<(), String> {
        publish_response(
            &self.client,
            response_topic,
            correlation.map(Bytes::from),
            body,
            true,
            self.limit.get(),
        )
        .map_err(|e| e.to_string())
    }

    fn round_trip(
        &self,
        target: Target<'_>,
        tool: &str,
        args: Value,
        timeout: Duration,
        attempts: u32,
    ) -> Result<Value, ToolError> {
        let call_id = protocol::new_call_id();
        let ms = timeout.as_millis() as u64;
        let (topic, response_topic, who, to) = match target {
            Target::Peer => (
                self.topics.request(&self.gateway),
                self.topics.response(&self.gateway),
                "a peer".to_string(),
                Sent::Peer,
            ),
            Target::Gateway(g) => (
                self.topics.swarm_request(g, &self.gateway),
                self.topics.swarm_response(&self.gateway, g),
                format!("gateway '{g}'"),
                Sent::Gateway(g.to_string()),
            ),
        };
        let req = Request {
            call_id: call_id.clone(),
            tool: tool.into(),
            args,
            gateway: self.gateway.clone(),
            deadline_ms: ms,
        };
        let body = serde_json::to_vec(&req).map_err(|e| ToolError::failed(tool, e.to_string()))?;
        if let Err(e) = self.fits(&topic, call_id.len() + response_topic.len() + 8, body.len()) {
            return Err(ToolError::Failed {
                tool: tool.into(),
                message: format!("request to {who} not sent: {e}"),
                hint: Some("send less: a smaller input (requests are never chunked)".into()),
            });
        }
        // One terminal outcome (answer, gone, too large) and at most one resend signal.
        let (tx, rx) = mpsc::sync_channel(2);
        let waiting = Pending {
            tx,
            tool: tool.into(),
            to,
            resend_signalled: false,
        };
        if !register(&mut self.shared.lock(), &call_id, waiting) {
            return Err(ToolError::Failed {
                tool: tool.into(),
                message: format!(
                    "too many MQTT calls are waiting for answers (at most {MAX_PENDING})"
                ),
                hint: Some("try again shortly".into()),
            });
        }
        let result = self.wait_answer(
            &rx,
            &topic,
            &response_topic,
            &call_id,
            &body,
            timeout,
            attempts,
            tool,
            &who,
        );
        self.shared.lock().pending.remove(&call_id);
        result
    }

    /// Publishes the request (up to `attempts` times, with the same call id) and waits for how
    /// it ends. A resend happens after a timeout, or at once when a peer that served the tool
    /// went offline while another live one still serves it.
    #[allow(clippy::too_many_arguments)]
    fn wait_answer(
        &self,
        rx: &mpsc::Receiver<Outcome>,
        topic: &str,
        response_topic: &str,
        call_id: &str,
        body: &[u8],
        timeout: Duration,
        attempts: u32,
        tool: &str,
        who: &str,
    ) -> Result<Value, ToolError> {
        let ms = timeout.as_millis() as u64;
        let mut sent = 0;
        let mut deadline = Instant::now();
        let send = |sent: &mut u32, deadline: &mut Instant| -> Result<(), ToolError> {
            let props = Properties {
                message_expiry_interval: Some(ms.div_ceil(1000).max(1) as u32),
                response_topic: Some(response_topic.to_string()),
                correlation_data: Some(Bytes::from(call_id.as_bytes().to_vec())),
                content_type: Some("application/json".into()),
                ..Default::default()
            };
            self.client
                .try_publish_with_properties(
                    topic.to_string(),
                    QoS::AtLeastOnce,
                    false,
                    body.to_vec(),
                    props,
                )
                .map_err(|e| ToolError::Failed {
                    tool: tool.into(),
                    message: format!("cannot queue the request to {who}: {e}"),
                    hint: Some("too many MQTT calls are in flight; try again shortly".into()),
                })?;
            *sent += 1;
            *deadline = Instant::now() + timeout;
            Ok(())
        };
        send(&mut sent, &mut deadline)?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Outcome::Answer(resp)) => return into_result(tool, who, resp),
                Ok(Outcome::TooLarge(why)) => {
                    return Err(ToolError::Failed {
                        tool: tool.into(),
                        message: format!("from {who}: {why}"),
                        hint: Some(
                            "ask for less: a narrower range, fewer items or a smaller output"
                                .into(),
                        ),
                    })
                }
                Ok(Outcome::Gone(why)) => {
                    return Err(ToolError::Unavailable {
                        tool: tool.into(),
                        reason: if attempts > 1 {
                            why
                        } else {
                            format!("{why}; it was sent once and may have run there, so check its effect before calling it again")
                        },
                    })
                }
                Ok(Outcome::Resend(peer)) => {
                    if let Some(p) = self.shared.lock().pending.get_mut(call_id) {
                        p.resend_signalled = false;
                    }
                    if sent < attempts {
                        tracing::info!(
                            tool,
                            peer,
                            "peer went offline during a read; sending it again"
                        );
                        send(&mut sent, &mut deadline)?;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    tracing::warn!(tool, attempt = sent, to = %who, "MQTT call timed out");
                    if sent < attempts {
                        send(&mut sent, &mut deadline)?;
                        continue;
                    }
                    return Err(ToolError::Timeout {
                        tool: tool.into(),
                        message: format!(
                            "no answer from {who} within {ms} ms{}",
                            if sent > 1 { " (tried twice)" } else { "" }
                        ),
                        hint: Some(if attempts > 1 {
                            format!("{who} may be busy, offline or slow for this input; try again later or with a smaller request")
                        } else {
                            // A write is never resent: it may have run even though its answer was lost.
                            format!("it was sent once and may have run on {who} although no answer came back; check its effect before calling it again")
                        }),
                    });
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ToolError::failed(
                        tool,
                        "the MQTT link closed during the call",
                    ))
                }
            }
        }
    }

    /// Publishes `offline` on the status topic and disconnects (the Will is not sent).
    pub fn close(&self) {
        self.shutdown(Stop::Graceful);
    }

    fn shutdown(&self, how: Stop) {
        if let Some(tx) = self.stop.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(how);
        }
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl Drop for PeerLink {
    fn drop(&mut self) {
        self.shutdown(Stop::Graceful);
    }
}

fn serves(st: &State, tool: &str) -> bool {
    st.peers
        .values()
        .any(|tools| tools.iter().any(|t| t == tool))
}

/// Where a call goes.
enum Target<'a> {
    /// The shared peer group.
    Peer,
    /// One gateway of the swarm.
    Gateway(&'a str),
}

/// Registers a waiting call; `false` (and nothing kept) when [`MAX_PENDING`] already wait.
fn register(st: &mut State, id: &str, p: Pending) -> bool {
    if st.pending.len() >= MAX_PENDING {
        return false;
    }
    st.pending.insert(id.to_string(), p);
    true
}

/// A peer that served `tools` went offline. Each waiting peer call of one of them ends at once
/// when no live peer serves its tool any more; otherwise its caller is told to send it again
/// (reads are; a write keeps waiting, as the live peer may be running it).
fn peer_gone(st: &mut State, peer: &str, tools: &[String]) {
    let hit: Vec<(String, String)> = st
        .pending
        .iter()
        .filter(|(_, p)| p.to == Sent::Peer && tools.contains(&p.tool))
        .map(|(id, p)| (id.clone(), p.tool.clone()))
        .collect();
    for (id, tool) in hit {
        if serves(st, &tool) {
            if let Some(p) = st.pending.get_mut(&id) {
                if !p.resend_signalled && p.tx.try_send(Outcome::Resend(peer.into())).is_ok() {
                    p.resend_signalled = true;
                }
            }
        } else if let Some(p) = st.pending.remove(&id) {
            let _ = p.tx.try_send(Outcome::Gone(format!(
                "peer '{peer}' went offline during the call and no other live peer serves '{tool}'"
            )));
        }
    }
}

/// A member as its status describes it, every field bounded.
fn member(id: &str, status: Option<Status>) -> Member {
    let cut = |t: Option<String>| {
        t.map(|mut t| {
            let mut end = t.len().min(MAX_MEMBER_TEXT);
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            t.truncate(end);
            t
        })
    };
    let online = status.as_ref().is_some_and(Status::is_online);
    let status = status.filter(|_| online);
    let (mut tools, software, board, online_since) = match status {
        Some(s) => (s.tools, cut(s.software), cut(s.board), s.since),
        None => (Vec::new(), None, None, None),
    };
    tools.truncate(MAX_MEMBER_TOOLS);
    tools.retain(|t| t.len() <= MAX_MEMBER_TEXT);
    Member {
        id: id.to_string(),
        online,
        tools,
        since_unix: unix_now(),
        software,
        board,
        online_since,
    }
}

/// Keeps `m`, within [`MAX_MEMBERS`]: a new id beyond it replaces the offline member known
/// longest, or is not kept when every member is online.
fn remember(st: &mut State, m: Member) {
    if !st.gateways.contains_key(&m.id) && st.gateways.len() >= MAX_MEMBERS {
        let oldest_offline = st
            .gateways
            .values()
            .filter(|g| !g.online)
            .min_by_key(|g| g.since_unix)
            .map(|g| g.id.clone());
        match oldest_offline {
            Some(id) => {
                st.gateways.remove(&id);
            }
            None => {
                st.members_dropped += 1;
                tracing::warn!(
                    gateway = m.id,
                    max = MAX_MEMBERS,
                    "too many gateways on the broker: this one is not listed"
                );
                return;
            }
        }
    }
    st.gateways.insert(m.id.clone(), m);
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// This gateway's birth, from the link's state.
fn birth(st: &State) -> Status {
    Status {
        software: Some(concat!("covo ", env!("CARGO_PKG_VERSION")).into()),
        board: st.board.clone(),
        since: Some(st.online_since),
        ..Status::online(st.served.clone())
    }
}

/// Gateway `gw` went offline: its waiting swarm calls end at once.
fn gateway_gone(st: &mut State, gw: &str) {
    let hit: Vec<String> = st
        .pending
        .iter()
        .filter(|(_, p)| matches!(&p.to, Sent::Gateway(g) if g == gw))
        .map(|(id, _)| id.clone())
        .collect();
    for id in hit {
        if let Some(p) = st.pending.remove(&id) {
            let _ = p.tx.try_send(Outcome::Gone(format!(
                "gateway '{gw}' went offline during the call"
            )));
        }
    }
}

fn into_result(tool: &str, who: &str, resp: Response) -> Result<Value, ToolError> {
    if resp.ok {
        return Ok(resp.result.unwrap_or(Value::Null));
    }
    let e = resp.error.unwrap_or(protocol::WireError {
        kind: "failed".into(),
        message: "the other side reported an error without details".into(),
        detail: None,
    });
    // A covo peer or gateway sends its error whole: keep its structure for the model, and say
    // where a plain failure happened.
    match e
        .detail
        .and_then(|d| serde_json::from_value::<ToolError>(d).ok())
    {
        Some(ToolError::Failed {
            tool: t,
            message,
            hint,
        }) => {
            return Err(ToolError::Failed {
                tool: t,
                message: format!("on {who}: {message}"),
                hint,
            })
        }
        Some(structured) => return Err(structured),
        None => {}
    }
    // Another peer sends only a kind and a message: keep the kind.
    let message = format!("on {who}: {}", e.message);
    Err(match e.kind.as_str() {
        "invalid_arguments" => ToolError::InvalidArguments {
            tool: tool.into(),
            problems: vec![covo_core::error::ArgProblem {
                path: String::new(),
                problem: message,
            }],
        },
        "unknown_tool" => ToolError::UnknownTool {
            tool: tool.into(),
            did_you_mean: Vec::new(),
        },
        "unavailable" => ToolError::Unavailable {
            tool: tool.into(),
            reason: message,
        },
        "timeout" => ToolError::Timeout {
            tool: tool.into(),
            message,
            hint: None,
        },
        "policy_refused" => ToolError::PolicyRefused {
            tool: tool.into(),
            rule: "remote".into(),
            detail: message,
        },
        "approval_denied" => ToolError::ApprovalDenied {
            tool: tool.into(),
            detail: message,
        },
        "failed" => ToolError::Failed {
            tool: tool.into(),
            message,
            hint: None,
        },
        other => ToolError::Failed {
            tool: tool.into(),
            message: format!("on {who} ({other}): {}", e.message),
            hint: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(tool: &str, to: Sent) -> (Pending, mpsc::Receiver<Outcome>) {
        let (tx, rx) = mpsc::sync_channel(2);
        let p = Pending {
            tx,
            tool: tool.into(),
            to,
            resend_signalled: false,
        };
        (p, rx)
    }

    #[test]
    fn waiting_calls_are_bounded_and_a_dead_peer_ends_or_resends_each_once() {
        let mut st = State::default();
        let mut rxs = Vec::new();
        for i in 0..MAX_PENDING {
            let (p, rx) = waiting("web_fetch", Sent::Peer);
            assert!(register(&mut st, &format!("c{i}"), p));
            rxs.push(rx);
        }
        let (p, _rx) = waiting("web_fetch", Sent::Peer);
        assert!(!register(&mut st, "one-too-many", p), "the bound holds");
        assert_eq!(st.pending.len(), MAX_PENDING);

        // Another live peer serves the tool: each call is told to resend, once, however
        // many peers go; the channel keeps room for the answer.
        st.peers.insert("live".into(), vec!["web_fetch".into()]);
        for dead in ["d1", "d2", "d3"] {
            peer_gone(&mut st, dead, &["web_fetch".into()]);
        }
        assert_eq!(
            st.pending.len(),
            MAX_PENDING,
            "kept: the live peer may answer"
        );
        for rx in &rxs {
            assert!(matches!(rx.try_recv(), Ok(Outcome::Resend(p)) if p == "d1"));
            assert!(rx.try_recv().is_err(), "one resend signal only");
        }
        // The last peer goes: every call ends at once, with the reason.
        st.peers.clear();
        peer_gone(&mut st, "live", &["web_fetch".into()]);
        assert!(st.pending.is_empty());
        for rx in &rxs {
            match rx.try_recv() {
                Ok(Outcome::Gone(why)) => assert!(why.contains("'live' went offline"), "{why}"),
                other => panic!("{other:?}"),
            }
        }
        // A swarm call ends when its gateway's Will arrives; others stay.
        let (p, rx_b) = waiting("sensor_read", Sent::Gateway("b".into()));
        assert!(register(&mut st, "s1", p));
        let (p, _rx_c) = waiting("sensor_read", Sent::Gateway("c".into()));
        assert!(register(&mut st, "s2", p));
        gateway_gone(&mut st, "b");
        assert!(matches!(rx_b.try_recv(), Ok(Outcome::Gone(_))));
        assert_eq!(st.pending.len(), 1);
    }

    #[test]
    fn bare_error_kinds_keep_their_kind() {
        for (kind, want) in [
            ("invalid_arguments", "invalid_arguments"),
            ("unknown_tool", "unknown_tool"),
            ("unavailable", "unavailable"),
            ("timeout", "timeout"),
            ("policy_refused", "policy_refused"),
            ("failed", "failed"),
            ("odd", "failed"),
        ] {
            let e = into_result("t", "a peer", Response::err("c", kind, "why")).unwrap_err();
            assert_eq!(e.to_json()["error"]["kind"], want, "{kind}");
        }
    }

    #[test]
    fn a_remote_tool_error_reaches_the_caller_whole() {
        let refused = ToolError::PolicyRefused {
            tool: "gpio_write".into(),
            rule: "gpio.outputs".into(),
            detail: "GPIO5 is not an output".into(),
        };
        let wire: Response = serde_json::from_slice(
            &serde_json::to_vec(&Response::tool_error("c1", &refused)).unwrap(),
        )
        .unwrap();
        assert_eq!(wire.error.as_ref().unwrap().kind, "policy_refused");
        assert_eq!(into_result("swarm_call", "gateway 'b'", wire), Err(refused));
        // A plain failure says where it happened and keeps its hint.
        let failed = ToolError::Failed {
            tool: "web_fetch".into(),
            message: "HTTP 404".into(),
            hint: Some("check the URL".into()),
        };
        match into_result("web_fetch", "a peer", Response::tool_error("c2", &failed)) {
            Err(ToolError::Failed { message, hint, .. }) => {
                assert_eq!(message, "on a peer: HTTP 404");
                assert_eq!(hint.as_deref(), Some("check the URL"));
            }
            other => panic!("{other:?}"),
        }
        // A non-covo peer's bare error still becomes a Failed naming its kind.
        match into_result("t", "a peer", Response::err("c3", "boom", "it broke")) {
            Err(ToolError::Failed { message, .. }) => assert!(message.contains("(boom)")),
            other => panic!("{other:?}"),
        }
    }

    fn online(id: &str) -> Member {
        member(id, Some(Status::online(vec!["sensor_read".into()])))
    }

    #[test]
    fn the_member_list_is_bounded_and_makes_room_by_dropping_offline_gateways_first() {
        let mut st = State::default();
        for i in 0..MAX_MEMBERS {
            remember(&mut st, online(&format!("gw-{i}")));
        }
        remember(&mut st, member("gw-7", Some(Status::offline())));
        assert_eq!(st.gateways.len(), MAX_MEMBERS);
        // A newcomer takes the offline one's place.
        remember(&mut st, online("new-1"));
        assert_eq!(st.gateways.len(), MAX_MEMBERS);
        assert!(st.gateways.contains_key("new-1") && !st.gateways.contains_key("gw-7"));
        // With every member online a newcomer is counted, not kept; known ids still update.
        remember(&mut st, online("new-2"));
        assert_eq!(st.gateways.len(), MAX_MEMBERS);
        assert!(!st.gateways.contains_key("new-2"));
        assert_eq!(st.members_dropped, 1);
        remember(&mut st, member("gw-9", Some(Status::offline())));
        assert!(!st.gateways["gw-9"].online);
    }

    #[test]
    fn a_birth_cannot_make_a_member_large() {
        let huge = Status {
            software: Some("é".repeat(1000)),
            board: Some("b".repeat(1000)),
            since: Some(5),
            ..Status::online(
                (0..5000)
                    .map(|i| format!("tool_{i}"))
                    .chain(["x".repeat(500)])
                    .collect(),
            )
        };
        let m = member("gw", Some(huge));
        assert!(m.software.as_ref().unwrap().len() <= MAX_MEMBER_TEXT);
        assert_eq!(m.board.as_ref().unwrap().len(), MAX_MEMBER_TEXT);
        assert_eq!(m.tools.len(), MAX_MEMBER_TOOLS);
        assert_eq!(m.online_since, Some(5));
        // An offline status keeps nothing from a birth.
        let gone = member("gw", Some(Status::offline()));
        assert!(gone.tools.is_empty() && gone.software.is_none() && !gone.online);
    }
}
