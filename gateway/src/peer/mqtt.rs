//! The MQTT transport: rumqttc's v5 client (no TLS yet: built with `default-features = false`),
//! TCP_NODELAY, a 1 MiB packet limit, a bounded request queue, and an event loop driven on its
//! own thread with its own small tokio runtime. rumqttc neither backs off nor resubscribes, so
//! the driver here does both: exponential backoff with jitter between failed connection
//! attempts, and every `ConnAck` resubscribes and republishes the birth. Nothing ever
//! `.await`s a publish on the task that polls the event loop (that deadlocks once the queue is
//! full): the poll task only uses `try_*`, other threads may block.
//!
//! [`PeerLink`] is the gateway side: it tracks the retained peer births (which tools are served
//! right now) and forwards calls.

use super::protocol::{self, Request, Response, Status, Topics};
use crate::config::MqttConfig;
use crate::error::ToolError;
use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{LastWill, Packet, Publish, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use rumqttc::NetworkOptions;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The largest packet either side sends or accepts (rumqttc's default is 10 KiB).
pub const MAX_PACKET: u32 = 1024 * 1024;
/// How many requests may wait in the client's queue before a call is refused.
pub const QUEUE: usize = 64;
/// The default time a peer call waits for its answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `mqtt://HOST:PORT` (or `tcp://`, or bare `HOST:PORT`) → host and port (default 1883).
pub fn parse_url(url: &str) -> Result<(String, u16), String> {
    let rest = url
        .strip_prefix("mqtt://")
        .or_else(|| url.strip_prefix("tcp://"))
        .unwrap_or(url);
    if url.starts_with("mqtts://") || url.starts_with("ssl://") {
        return Err(format!("{url}: TLS is not supported yet; use mqtt://"));
    }
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("{url}: bad port '{p}'"))?,
        ),
        None => (rest, 1883),
    };
    if host.is_empty() {
        return Err(format!("{url}: no host"));
    }
    Ok((host.to_string(), port))
}

/// Client options shared by both sides: NODELAY, packet size, queue, Will.
pub(crate) fn options(url: &str, client_id: &str, will: LastWill) -> Result<MqttOptions, String> {
    let (host, port) = parse_url(url)?;
    let mut o = MqttOptions::new(client_id, host, port);
    o.set_keep_alive(Duration::from_secs(15))
        .set_clean_start(true)
        .set_max_packet_size(Some(MAX_PACKET))
        .set_request_channel_capacity(QUEUE)
        .set_connection_timeout(5)
        .set_last_will(will);
    let mut net = NetworkOptions::new();
    net.set_tcp_nodelay(true);
    net.set_connection_timeout(5);
    o.set_network_options(net);
    Ok(o)
}

/// A retained status message, QoS 1.
pub(crate) fn status_will(topic: &str) -> LastWill {
    let body = serde_json::to_vec(&Status::offline()).unwrap_or_default();
    LastWill::new(topic, body, QoS::AtLeastOnce, true, None)
}

/// What the driver tells its owner. Called on the poll task: never block, only `try_*`.
pub(crate) trait Handler: Send + 'static {
    /// A `ConnAck`: (re)subscribe and publish the birth.
    fn connected(&mut self, client: &AsyncClient);
    /// A `SubAck`.
    fn subscribed(&mut self, _client: &AsyncClient) {}
    /// An incoming publish.
    fn publish(&mut self, client: &AsyncClient, p: Publish);
    /// The connection dropped (or failed to come up).
    fn disconnected(&mut self) {}
}

/// How the driver thread should end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Publish `offline` on the status topic, then DISCONNECT.
    Graceful,
    /// Drop the socket without DISCONNECT, as a crash would: the broker publishes the Will.
    Crash,
}

/// The exponential backoff with full-range jitter after `failures` failed attempts:
/// 100 ms, 200 ms, … capped at 10 s, each scaled by a random factor in [0.5, 1].
pub fn backoff(failures: u32) -> Duration {
    let base = 100u64.saturating_mul(1 << failures.saturating_sub(1).min(7));
    let capped = base.min(10_000);
    let jittered = capped / 2 + fastrand::u64(0..=capped / 2);
    Duration::from_millis(jittered)
}

/// Runs the event loop on a dedicated thread with a current-thread tokio runtime.
pub(crate) fn spawn_driver<H: Handler>(
    name: &str,
    client: AsyncClient,
    mut eventloop: EventLoop,
    mut handler: H,
    status_topic: String,
    stop_rx: tokio::sync::oneshot::Receiver<Stop>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "cannot start the MQTT runtime");
                    return;
                }
            };
            rt.block_on(async move {
                let mut stop_rx = stop_rx;
                let mut failures = 0u32;
                let how = loop {
                    tokio::select! {
                        s = &mut stop_rx => break s.unwrap_or(Stop::Graceful),
                        ev = eventloop.poll() => match ev {
                            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                                failures = 0;
                                handler.connected(&client);
                            }
                            Ok(Event::Incoming(Packet::SubAck(_))) => handler.subscribed(&client),
                            Ok(Event::Incoming(Packet::Publish(p))) => handler.publish(&client, p),
                            Ok(_) => {}
                            Err(e) => {
                                handler.disconnected();
                                failures = failures.saturating_add(1);
                                let wait = backoff(failures);
                                tracing::warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "MQTT connection lost");
                                tokio::select! {
                                    s = &mut stop_rx => break s.unwrap_or(Stop::Graceful),
                                    _ = tokio::time::sleep(wait) => {}
                                }
                            }
                        }
                    }
                };
                if how == Stop::Graceful {
                    let body = serde_json::to_vec(&Status::offline()).unwrap_or_default();
                    let _ = client.try_publish(status_topic, QoS::AtLeastOnce, true, body);
                    let _ = client.try_disconnect();
                    // Flush the two: poll until the DISCONNECT is out or a second passes.
                    let _ = tokio::time::timeout(Duration::from_secs(1), async {
                        loop {
                            match eventloop.poll().await {
                                Ok(Event::Outgoing(rumqttc::Outgoing::Disconnect)) | Err(_) => break,
                                Ok(_) => {}
                            }
                        }
                    })
                    .await;
                }
            });
        })
}

/// The gateway's shared state, written by the poll task and read by callers.
#[derive(Default)]
struct State {
    /// Online peers → the tools each serves.
    peers: HashMap<String, Vec<String>>,
    /// Calls waiting for an answer, by call id.
    pending: HashMap<String, mpsc::Sender<Response>>,
    /// Our own sync message came back: the retained births have been delivered.
    synced: bool,
    /// A CONNACK has been seen and no disconnect since.
    connected: bool,
    /// Local subscribers (`covo run`, the MQTT tools): id, filter, where to deliver.
    subs: Vec<(u64, String, mpsc::Sender<Message>)>,
    next_sub: u64,
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
}

impl Message {
    /// The payload as JSON when it parses, else as a string.
    pub fn payload_json(&self) -> Value {
        serde_json::from_slice(&self.payload)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.payload).into_owned()))
    }
}

/// Whether the MQTT topic filter `filter` (with `+` and `#`) matches `topic`.
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    let mut f = filter.split('/');
    let mut t = topic.split('/');
    // `$`-topics are not matched by filters starting with a wildcard.
    if topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#')) {
        return false;
    }
    loop {
        match (f.next(), t.next()) {
            (Some("#"), _) => return true,
            (Some("+"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
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
}

impl Handler for GatewayHandler {
    fn connected(&mut self, client: &AsyncClient) {
        let subs = [
            self.topics.all_peer_status(),
            self.topics.response(&self.gateway),
            self.sync_topic.clone(),
        ];
        let local: Vec<String> = {
            let mut st = self.shared.lock();
            st.connected = true;
            let mut fs: Vec<String> = st.subs.iter().map(|(_, f, _)| f.clone()).collect();
            fs.sort();
            fs.dedup();
            fs
        };
        self.shared.changed.notify_all();
        for t in subs.into_iter().chain(local) {
            if let Err(e) = client.try_subscribe(t, QoS::AtLeastOnce) {
                tracing::warn!(error = %e, "MQTT subscribe failed");
            }
        }
        let birth = serde_json::to_vec(&Status::online(Vec::new())).unwrap_or_default();
        let _ = client.try_publish(
            self.topics.gateway_status(&self.gateway),
            QoS::AtLeastOnce,
            true,
            birth,
        );
    }

    fn subscribed(&mut self, client: &AsyncClient) {
        // The broker sends retained messages right after each SUBACK; a message we publish to
        // ourselves after the last SUBACK comes back after them.
        let _ = client.try_publish(self.sync_topic.clone(), QoS::AtLeastOnce, false, "sync");
    }

    fn publish(&mut self, _client: &AsyncClient, p: Publish) {
        let topic = String::from_utf8_lossy(&p.topic).into_owned();
        if topic == self.sync_topic {
            self.shared.lock().synced = true;
            self.shared.changed.notify_all();
        } else if let Some(peer) = self.topics.peer_of_status(&topic) {
            let status: Option<Status> = serde_json::from_slice(&p.payload).ok();
            let mut st = self.shared.lock();
            match status {
                Some(s) if s.is_online() => {
                    tracing::info!(peer, tools = s.tools.len(), "peer online");
                    st.peers.insert(peer.to_string(), s.tools);
                }
                _ => {
                    if st.peers.remove(peer).is_some() {
                        tracing::info!(peer, "peer offline");
                    }
                }
            }
            drop(st);
            self.shared.changed.notify_all();
        } else if topic == self.topics.response(&self.gateway) {
            let Ok(resp) = serde_json::from_slice::<Response>(&p.payload) else {
                tracing::warn!("unparsable peer response dropped");
                return;
            };
            // A response counts only when its correlation data and its body name the same
            // pending call: a stray or forged message without both is dropped.
            let Some(id) = p
                .properties
                .as_ref()
                .and_then(|pr| pr.correlation_data.as_ref())
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .filter(|id| *id == resp.call_id)
            else {
                tracing::warn!(call_id = %resp.call_id, "peer response without matching correlation data dropped");
                return;
            };
            if let Some(tx) = self.shared.lock().pending.remove(&id) {
                let _ = tx.send(resp);
            }
        } else {
            let msg = Message {
                topic: topic.clone(),
                payload: p.payload.to_vec(),
                retain: p.retain,
            };
            let st = self.shared.lock();
            for (_, f, tx) in &st.subs {
                if topic_matches(f, &topic) {
                    let _ = tx.send(msg.clone());
                }
            }
        }
    }

    fn disconnected(&mut self) {
        // Unreachable peers serve nothing; the births come back with the next SUBACK.
        let mut st = self.shared.lock();
        st.peers.clear();
        st.synced = false;
        st.connected = false;
        drop(st);
        self.shared.changed.notify_all();
    }
}

/// The gateway's link to the cloud peers.
pub struct PeerLink {
    client: AsyncClient,
    shared: Arc<Shared>,
    topics: Topics,
    gateway: String,
    timeout: Duration,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<Stop>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl PeerLink {
    /// Connects (in the background) with the configuration's broker, id and prefix.
    pub fn start(cfg: &MqttConfig) -> Result<PeerLink, String> {
        let topics = Topics::new(&cfg.prefix());
        let gateway = cfg.gateway_id();
        let nonce = protocol::new_call_id();
        let client_id = format!("covo-gw-{gateway}-{}", &nonce[..8]);
        let status = topics.gateway_status(&gateway);
        let opts = options(&cfg.url(), &client_id, status_will(&status))?;
        let (client, eventloop) = AsyncClient::new(opts, QUEUE);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let handler = GatewayHandler {
            shared: shared.clone(),
            topics: topics.clone(),
            gateway: gateway.clone(),
            sync_topic: format!("{}/{gateway}/peer/sync/{nonce}", topics.prefix),
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let thread = spawn_driver(
            "covo-mqtt",
            client.clone(),
            eventloop,
            handler,
            status,
            stop_rx,
        )
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
        self.client
            .try_publish(topic, qos, retain, payload)
            .map_err(|e| format!("cannot queue the publish: {e}"))
    }

    /// Subscribes to `filter`: messages that match it arrive on the receiver until
    /// [`PeerLink::unsubscribe`] with the returned id. Resubscribed after every reconnect.
    pub fn subscribe(&self, filter: &str) -> Result<(u64, mpsc::Receiver<Message>), String> {
        let (tx, rx) = mpsc::channel();
        let id = {
            let mut st = self.shared.lock();
            st.next_sub += 1;
            let id = st.next_sub;
            st.subs.push((id, filter.to_string(), tx));
            id
        };
        if let Err(e) = self.client.try_subscribe(filter, QoS::AtLeastOnce) {
            self.unsubscribe(id);
            return Err(format!("cannot subscribe to {filter}: {e}"));
        }
        Ok((id, rx))
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

    /// Whether a live peer advertises `tool`; the reason when none does.
    pub fn availability(&self, tool: &str) -> Result<(), String> {
        let st = self.shared.lock();
        if serves(&st, tool) {
            Ok(())
        } else if st.peers.is_empty() {
            Err("no peer online".into())
        } else {
            Err(format!("no online peer serves '{tool}'"))
        }
    }

    /// Forwards a call and waits for the answer. `idempotent` calls (effect `read`) are sent a
    /// second time, with the same call id, after a timeout; others never are.
    pub fn call(&self, tool: &str, args: Value, idempotent: bool) -> Result<Value, ToolError> {
        let call_id = protocol::new_call_id();
        let attempts = if idempotent { 2 } else { 1 };
        let ms = self.timeout.as_millis() as u64;
        let req = Request {
            call_id: call_id.clone(),
            tool: tool.into(),
            args,
            gateway: self.gateway.clone(),
            deadline_ms: ms,
        };
        let body = serde_json::to_vec(&req).map_err(|e| ToolError::failed(tool, e.to_string()))?;
        for attempt in 1..=attempts {
            let (tx, rx) = mpsc::channel();
            self.shared.lock().pending.insert(call_id.clone(), tx);
            let props = PublishProperties {
                message_expiry_interval: Some(ms.div_ceil(1000).max(1) as u32),
                response_topic: Some(self.topics.response(&self.gateway)),
                correlation_data: Some(Bytes::from(call_id.clone().into_bytes())),
                content_type: Some("application/json".into()),
                ..Default::default()
            };
            if let Err(e) = self.client.try_publish_with_properties(
                self.topics.request(&self.gateway),
                QoS::AtLeastOnce,
                false,
                body.clone(),
                props,
            ) {
                self.shared.lock().pending.remove(&call_id);
                return Err(ToolError::Failed {
                    tool: tool.into(),
                    message: format!("cannot queue the request to the peer: {e}"),
                    hint: Some("too many peer calls are in flight; try again shortly".into()),
                });
            }
            match rx.recv_timeout(self.timeout) {
                Ok(resp) => return into_result(tool, resp),
                Err(_) => {
                    self.shared.lock().pending.remove(&call_id);
                    tracing::warn!(tool, attempt, "peer call timed out");
                }
            }
        }
        Err(ToolError::Failed {
            tool: tool.into(),
            message: format!(
                "no answer from a peer within {ms} ms{}",
                if attempts > 1 { " (tried twice)" } else { "" }
            ),
            hint: Some(if idempotent {
                "the peer may be busy, offline or slow for this input; try again later or with a smaller request".into()
            } else {
                // A write is never resent: it may have run even though its answer was lost.
                "it was sent once and may have run on the peer although no answer came back; check its effect before calling it again".into()
            }),
        })
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

fn into_result(tool: &str, resp: Response) -> Result<Value, ToolError> {
    if resp.ok {
        return Ok(resp.result.unwrap_or(Value::Null));
    }
    let e = resp.error.unwrap_or(protocol::WireError {
        kind: "failed".into(),
        message: "the peer reported an error without details".into(),
    });
    Err(ToolError::Failed {
        tool: tool.into(),
        message: format!("on the peer ({}): {}", e.kind, e.message),
        hint: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_tls_is_refused_for_now() {
        assert_eq!(
            parse_url("mqtt://127.0.0.1:1884").unwrap(),
            ("127.0.0.1".into(), 1884)
        );
        assert_eq!(parse_url("broker").unwrap(), ("broker".into(), 1883));
        assert!(parse_url("mqtts://x:8883").is_err());
        assert!(parse_url("mqtt://:1").is_err());
    }

    #[test]
    fn topic_filters_match_like_mqtt() {
        assert!(topic_matches("greenhouse/#", "greenhouse/a/b"));
        assert!(topic_matches("greenhouse/#", "greenhouse"));
        assert!(topic_matches("a/+/c", "a/b/c"));
        assert!(!topic_matches("a/+/c", "a/b/d"));
        assert!(!topic_matches("a/+", "a/b/c"));
        assert!(topic_matches("a/b", "a/b"));
        assert!(!topic_matches("#", "$SYS/x"));
        assert!(!topic_matches("greenhouse/#", "garage/x"));
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        for n in 1..40 {
            let d = backoff(n).as_millis() as u64;
            let base = (100u64 << (n - 1).min(7)).min(10_000);
            assert!(d >= base / 2 && d <= base, "{n}: {d}");
        }
    }
}
