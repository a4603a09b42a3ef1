//! The MQTT transport both sides share: rumqttc's v5 client, TCP_NODELAY, optional
//! username/password and TLS (`mqtts://`, rustls on ring, the system roots or a CA file, optional
//! client certificate), a 1 MiB packet limit, a bounded request queue, and an event loop driven
//! on its own thread with its own small tokio runtime. rumqttc neither backs off nor resubscribes,
//! so the driver here does both: exponential backoff with jitter between failed connection
//! attempts, and every `ConnAck` calls the handler, which resubscribes and republishes its birth.
//! Nothing ever `.await`s a publish on the task that polls the event loop (that deadlocks once
//! the queue is full): the poll task only uses `try_*`, other threads may block.
//!
//! Responses larger than [`CHUNK`] cross as numbered chunks ([`publish_response`], [`Partial`]).
//!
//! rumqttc is named only in this module: the gateway and the peer drive it through the small
//! types here ([`Client`], [`Connection`], [`Options`], [`Will`], [`QoS`], [`Properties`],
//! [`Incoming`], [`ClientError`]), so neither depends on rumqttc itself
//! (`tests/tests/integration/crate_graph.rs`).

use crate::protocol::Status;
use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{Filter, LastWill, Packet, Publish, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use rumqttc::NetworkOptions;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The largest packet either side sends or accepts (rumqttc's default is 10 KiB).
pub const MAX_PACKET: u32 = 1024 * 1024;
/// How many requests may wait in the client's queue before a call is refused.
pub const QUEUE: usize = 64;
/// Responses longer than this travel as several messages (see [`publish_response`]).
pub const CHUNK: usize = 512 * 1024;
/// The most chunks one response may have (64 MiB at [`CHUNK`] bytes each).
pub const MAX_CHUNKS: usize = 128;
/// The user property that marks a chunk: `"i/n"`, 1-based.
pub const CHUNK_PROPERTY: &str = "covo-chunk";

/// The delivery guarantee of a publish or a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QoS {
    /// At most once (0): fire and forget.
    AtMostOnce,
    /// At least once (1): acknowledged, may arrive twice.
    AtLeastOnce,
    /// Exactly once (2).
    ExactlyOnce,
}

impl QoS {
    fn raw(self) -> rumqttc::v5::mqttbytes::QoS {
        use rumqttc::v5::mqttbytes::QoS as R;
        match self {
            QoS::AtMostOnce => R::AtMostOnce,
            QoS::AtLeastOnce => R::AtLeastOnce,
            QoS::ExactlyOnce => R::ExactlyOnce,
        }
    }

    fn from_raw(q: rumqttc::v5::mqttbytes::QoS) -> QoS {
        use rumqttc::v5::mqttbytes::QoS as R;
        match q {
            R::AtMostOnce => QoS::AtMostOnce,
            R::AtLeastOnce => QoS::AtLeastOnce,
            R::ExactlyOnce => QoS::ExactlyOnce,
        }
    }
}

/// The MQTT 5 properties of a publish that covo sends or reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    /// Where the answer to a request goes.
    pub response_topic: Option<String>,
    /// Ties an answer to its request (covo: the call id).
    pub correlation_data: Option<Bytes>,
    /// The payload's MIME type.
    pub content_type: Option<String>,
    /// Seconds after which the broker drops an undelivered message.
    pub message_expiry_interval: Option<u32>,
    /// User properties, in order (covo: [`CHUNK_PROPERTY`]).
    pub user_properties: Vec<(String, String)>,
}

impl Properties {
    fn raw(self) -> PublishProperties {
        PublishProperties {
            response_topic: self.response_topic,
            correlation_data: self.correlation_data,
            content_type: self.content_type,
            message_expiry_interval: self.message_expiry_interval,
            user_properties: self.user_properties,
            ..Default::default()
        }
    }

    fn from_raw(p: PublishProperties) -> Properties {
        Properties {
            response_topic: p.response_topic,
            correlation_data: p.correlation_data,
            content_type: p.content_type,
            message_expiry_interval: p.message_expiry_interval,
            user_properties: p.user_properties,
        }
    }
}

/// A message that arrived on a subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// Its topic (lossily decoded, as MQTT topics are UTF-8).
    pub topic: String,
    /// Its payload.
    pub payload: Bytes,
    /// Whether the broker delivered it as retained.
    pub retain: bool,
    /// The QoS it was delivered with.
    pub qos: QoS,
    /// Its properties (all empty when it carried none).
    pub properties: Properties,
}

impl Incoming {
    fn from_raw(p: Publish) -> Incoming {
        Incoming {
            topic: String::from_utf8_lossy(&p.topic).into_owned(),
            payload: p.payload,
            retain: p.retain,
            qos: QoS::from_raw(p.qos),
            properties: p.properties.map(Properties::from_raw).unwrap_or_default(),
        }
    }
}

/// Why the client did not take a request: its queue is full, or the driver is gone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(String);

impl From<rumqttc::v5::ClientError> for ClientError {
    fn from(e: rumqttc::v5::ClientError) -> Self {
        ClientError(e.to_string())
    }
}

/// The handle that queues requests for the connection (cheap to clone). Every call only
/// queues (`try_*`): it never blocks, and fails when the queue of [`QUEUE`] requests is full.
#[derive(Debug, Clone)]
pub struct Client(AsyncClient);

/// The connection a [`Client`] talks through, for [`spawn_driver`] to poll, with the options of
/// every broker it may use, in the order they are tried.
pub struct Connection(EventLoop, Vec<MqttOptions>);

/// Connection options made by [`options`]: one set per broker, tried in turn.
#[derive(Debug, Clone)]
pub struct Options(Vec<MqttOptions>);

impl Options {
    /// How many brokers these options name.
    pub fn brokers(&self) -> usize {
        self.0.len()
    }
}

/// The message the broker publishes when the connection is lost ([`status_will`]).
#[derive(Debug, Clone)]
pub struct Will(LastWill);

impl Client {
    /// A client with its connection, which does nothing until [`spawn_driver`] polls it.
    pub fn new(options: Options) -> (Client, Connection) {
        let all = options.0;
        let (c, e) = AsyncClient::new(all[0].clone(), QUEUE);
        (Client(c), Connection(e, all))
    }

    /// Queues a SUBSCRIBE to `filter`.
    pub fn try_subscribe(&self, filter: impl Into<String>, qos: QoS) -> Result<(), ClientError> {
        Ok(self.0.try_subscribe(filter, qos.raw())?)
    }

    /// Queues one SUBSCRIBE to all of `filters` (one SUBACK).
    pub fn try_subscribe_many(
        &self,
        filters: impl IntoIterator<Item = String>,
        qos: QoS,
    ) -> Result<(), ClientError> {
        let filters = filters.into_iter().map(|f| Filter::new(f, qos.raw()));
        Ok(self.0.try_subscribe_many(filters)?)
    }

    /// Queues an UNSUBSCRIBE from `filter`.
    pub fn try_unsubscribe(&self, filter: impl Into<String>) -> Result<(), ClientError> {
        Ok(self.0.try_unsubscribe(filter)?)
    }

    /// Queues a publish.
    pub fn try_publish(
        &self,
        topic: impl Into<String>,
        qos: QoS,
        retain: bool,
        payload: impl Into<Bytes>,
    ) -> Result<(), ClientError> {
        Ok(self.0.try_publish(topic, qos.raw(), retain, payload)?)
    }

    /// Queues a publish with MQTT 5 properties.
    pub fn try_publish_with_properties(
        &self,
        topic: impl Into<String>,
        qos: QoS,
        retain: bool,
        payload: impl Into<Bytes>,
        properties: Properties,
    ) -> Result<(), ClientError> {
        Ok(self.0.try_publish_with_properties(
            topic,
            qos.raw(),
            retain,
            payload,
            properties.raw(),
        )?)
    }
}

/// Why a response could not be queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The body needs more than [`MAX_CHUNKS`] packets of the broker's size.
    #[error("response too large: {bytes} bytes would need {chunks} chunks of {chunk} bytes (at most {max} chunks; the broker's packet limit is {limit} bytes)", max = MAX_CHUNKS)]
    TooLarge {
        /// The body's length.
        bytes: usize,
        /// How many chunks it would need.
        chunks: usize,
        /// The payload of one chunk.
        chunk: usize,
        /// The packet limit in force.
        limit: u32,
    },
    /// The broker's packet limit leaves no room for a payload after the topic and properties.
    #[error("the broker's packet limit ({limit} bytes) leaves no room for a response on {topic}")]
    NoRoom {
        /// The packet limit in force.
        limit: u32,
        /// The response topic.
        topic: String,
    },
    /// The client's request queue stayed full.
    #[error("cannot queue the response: {0}")]
    Queue(String),
}

/// The largest packet this client may send now: [`MAX_PACKET`], or less when the broker's
/// CONNACK says so (MQTT 5 Maximum Packet Size). Shared by the driver, which sets it on every
/// CONNACK, and the threads that publish responses.
#[derive(Debug, Clone)]
pub struct PacketLimit(Arc<std::sync::atomic::AtomicU32>);

impl Default for PacketLimit {
    fn default() -> Self {
        PacketLimit(Arc::new(std::sync::atomic::AtomicU32::new(MAX_PACKET)))
    }
}

impl PacketLimit {
    /// The limit in force, in bytes (a whole packet: header, topic, properties and payload).
    pub fn get(&self) -> u32 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the limit from a CONNACK's Maximum Packet Size (`None`: [`MAX_PACKET`]).
    pub fn set_from_broker(&self, broker: Option<u32>) {
        let v = broker.map_or(MAX_PACKET, |b| b.min(MAX_PACKET));
        self.0.store(v, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Bytes a response PUBLISH spends besides its payload: fixed header, topic, packet id and the
/// properties (correlation data, content type, the chunk property), with some slack.
pub fn publish_overhead(topic: &str, correlation_len: usize) -> usize {
    // 5 fixed header + 2+topic + 2 packet id + 4 property length + 3+correlation
    // + 3+16 content type + 5+10+7 chunk property = 57; round up.
    64 + topic.len() + correlation_len
}

/// How a response body of `len` bytes travels under packet limit `limit`: the payload size of
/// each message (the whole body when it fits in one) and how many messages.
pub fn chunk_plan(
    topic: &str,
    correlation_len: usize,
    len: usize,
    limit: u32,
) -> Result<(usize, usize), SendError> {
    let room = (limit as usize).saturating_sub(publish_overhead(topic, correlation_len));
    let per = room.min(CHUNK);
    if per < 1024 {
        return Err(SendError::NoRoom {
            limit,
            topic: topic.to_string(),
        });
    }
    let n = len.div_ceil(per).max(1);
    if n > MAX_CHUNKS {
        return Err(SendError::TooLarge {
            bytes: len,
            chunks: n,
            chunk: per,
            limit,
        });
    }
    Ok((per, n))
}

/// Publishes a response body with its correlation data: in one message when the whole PUBLISH
/// fits the packet limit `limit` (and the body is at most [`CHUNK`] bytes), else as numbered
/// chunks (user property `covo-chunk: i/n`), byte slices of the body that the receiver joins
/// in order of `i`. The split is by size, always: every message fits `limit`. `may_wait`: when
/// the client's queue is full, wait for room (only off the poll task); otherwise give up at once.
pub fn publish_response(
    client: &Client,
    topic: &str,
    correlation: Option<Bytes>,
    body: &[u8],
    may_wait: bool,
    limit: u32,
) -> Result<(), SendError> {
    let corr_len = correlation.as_ref().map_or(0, |c| c.len());
    let (per, n) = chunk_plan(topic, corr_len, body.len(), limit)?;
    let chunks: Vec<&[u8]> = if n == 1 {
        vec![body]
    } else {
        body.chunks(per).collect()
    };
    for (i, c) in chunks.iter().enumerate() {
        let mut props = Properties {
            correlation_data: correlation.clone(),
            content_type: Some("application/json".into()),
            ..Default::default()
        };
        if n > 1 {
            props
                .user_properties
                .push((CHUNK_PROPERTY.into(), format!("{}/{n}", i + 1)));
        }
        let mut waited = Duration::ZERO;
        loop {
            match client.try_publish_with_properties(
                topic,
                QoS::AtLeastOnce,
                false,
                c.to_vec(),
                props.clone(),
            ) {
                Ok(()) => break,
                Err(_) if may_wait && waited < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(5));
                    waited += Duration::from_millis(5);
                }
                Err(e) => return Err(SendError::Queue(e.to_string())),
            }
        }
    }
    Ok(())
}

/// Chunks of responses still being received, by call id: (n, the chunks so far). Bounded: at
/// most [`MAX_PARTIAL`] calls at once; the oldest is dropped first.
#[derive(Default)]
pub struct Partial {
    calls: HashMap<String, (usize, Vec<Option<Bytes>>)>,
    /// Call ids in the order their first chunk arrived, for eviction.
    order: VecDeque<String>,
}

/// The most responses being reassembled at once: a peer that dies mid-response (or a stray
/// chunk) leaves at most this many partial bodies behind, never an ever-growing map.
pub const MAX_PARTIAL: usize = 16;

impl Partial {
    /// Adds chunk `spec` (`"i/n"`) of call `id`; the whole body once every chunk is in.
    pub fn add(&mut self, id: &str, spec: &str, data: Bytes) -> Option<Vec<u8>> {
        let (i, n) = spec.split_once('/')?;
        let (i, n) = (i.parse::<usize>().ok()?, n.parse::<usize>().ok()?);
        if n == 0 || n > MAX_CHUNKS || i == 0 || i > n {
            return None;
        }
        if !self.calls.contains_key(id) {
            while self.calls.len() >= MAX_PARTIAL {
                let Some(old) = self.order.pop_front() else {
                    break;
                };
                self.calls.remove(&old);
            }
            self.order.push_back(id.to_string());
        }
        let entry = self
            .calls
            .entry(id.to_string())
            .or_insert_with(|| (n, vec![None; n]));
        if entry.0 != n {
            self.forget(id);
            return None;
        }
        entry.1[i - 1] = Some(data);
        if entry.1.iter().any(Option::is_none) {
            return None;
        }
        let (_, parts) = self.calls.remove(id)?;
        self.order.retain(|o| o != id);
        Some(
            parts
                .into_iter()
                .flatten()
                .flat_map(|b| b.to_vec())
                .collect(),
        )
    }
}

impl Partial {
    fn forget(&mut self, id: &str) {
        self.calls.remove(id);
        self.order.retain(|o| o != id);
    }

    /// Keeps only the partial responses whose call id `keep` accepts (calls still waiting).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.calls.retain(|k, _| keep(k));
        let calls = &self.calls;
        self.order.retain(|o| calls.contains_key(o));
    }

    /// How many responses are partly received.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether no response is partly received.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// At most this many QoS 1 publishes await their PUBACK. rumqttc's default is 65535, for which
/// it preallocates a slot table of ~14 MiB per client — more than the rest of `covo run`.
pub const MAX_INFLIGHT: u16 = 256;
/// The default time a peer call waits for its answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A broker address: host, port, and whether it speaks TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddr {
    /// Host name or IP.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// `mqtts://` (or `ssl://`).
    pub tls: bool,
}

/// `mqtt://HOST:PORT` (or `tcp://`, or bare `HOST:PORT`; default port 1883) or
/// `mqtts://HOST:PORT` (or `ssl://`; default port 8883).
pub fn parse_url(url: &str) -> Result<BrokerAddr, String> {
    let (rest, tls) = if let Some(r) = url
        .strip_prefix("mqtts://")
        .or_else(|| url.strip_prefix("ssl://"))
    {
        (r, true)
    } else {
        (
            url.strip_prefix("mqtt://")
                .or_else(|| url.strip_prefix("tcp://"))
                .unwrap_or(url),
            false,
        )
    };
    if rest.contains("://") {
        return Err(format!("{url}: unknown scheme; use mqtt:// or mqtts://"));
    }
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("{url}: bad port '{p}'"))?,
        ),
        None => (rest, if tls { 8883 } else { 1883 }),
    };
    if host.is_empty() {
        return Err(format!("{url}: no host"));
    }
    Ok(BrokerAddr {
        host: host.to_string(),
        port,
        tls,
    })
}

/// Credentials and TLS files for the broker (`[mqtt]` username, password, ca_file, …).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerAuth {
    /// User name (MQTT CONNECT).
    pub username: Option<String>,
    /// Password (MQTT CONNECT); needs `username`.
    pub password: Option<String>,
    /// PEM CA file that signed the broker's certificate (TLS); default: the system roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// PEM client certificate chain (TLS).
    pub client_cert_file: Option<std::path::PathBuf>,
    /// PEM private key of the client certificate (TLS).
    pub client_key_file: Option<std::path::PathBuf>,
}

/// The rustls client configuration for `mqtts://`: ring, the CA file or the system roots,
/// and the client certificate when both its files are given.
fn tls_config(auth: &BrokerAuth) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    match &auth.ca_file {
        Some(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect())
                .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "ca_file {}: no PEM certificate in it",
                    path.display()
                ));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for c in found.certs {
                let _ = roots.add(c);
            }
            if roots.is_empty() {
                return Err(
                    "no trusted root certificates on this system; set [mqtt] ca_file".into(),
                );
            }
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots);
    match (&auth.client_cert_file, &auth.client_key_file) {
        (Some(cert), Some(key)) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .and_then(|it| it.collect())
                .map_err(|e| format!("client_cert_file {}: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("client_key_file {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate: {e}"))
        }
        (None, None) => Ok(builder.with_no_client_auth()),
        _ => Err("client_cert_file and client_key_file go together".into()),
    }
}

/// Client options shared by both sides: NODELAY, credentials, TLS, packet size, queue, and the
/// Will of a process that owns a presence (`None` for one that publishes no status).
///
/// `urls` is one broker URL or several separated by commas (the nodes of a cluster, say): the
/// driver connects to the first and, each time a connection fails or is lost, tries the next
/// in turn, after the usual backoff with jitter.
pub fn options(
    urls: &str,
    auth: &BrokerAuth,
    client_id: &str,
    will: Option<Will>,
) -> Result<Options, String> {
    let all = split_urls(urls)
        .into_iter()
        .map(|u| broker_options(u, auth, client_id, will.clone()))
        .collect::<Result<Vec<_>, String>>()?;
    if all.is_empty() {
        return Err("no broker URL is given".into());
    }
    Ok(Options(all))
}

/// The URLs of a comma-separated list, trimmed, empty entries left out.
pub fn split_urls(urls: &str) -> Vec<&str> {
    urls.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect()
}

fn broker_options(
    url: &str,
    auth: &BrokerAuth,
    client_id: &str,
    will: Option<Will>,
) -> Result<MqttOptions, String> {
    let addr = parse_url(url)?;
    let mut o = MqttOptions::new(client_id, addr.host, addr.port);
    if addr.tls {
        o.set_transport(rumqttc::Transport::tls_with_config(
            rumqttc::TlsConfiguration::Rustls(Arc::new(tls_config(auth)?)),
        ));
    } else if auth.ca_file.is_some() || auth.client_cert_file.is_some() {
        return Err(format!(
            "{url}: TLS files are set but the URL is not mqtts://"
        ));
    }
    match (&auth.username, &auth.password) {
        (Some(u), p) => {
            o.set_credentials(u.clone(), p.clone().unwrap_or_default());
        }
        (None, Some(_)) => return Err("[mqtt] password is set without a username".into()),
        (None, None) => {}
    }
    o.set_keep_alive(KEEP_ALIVE)
        .set_clean_start(true)
        .set_max_packet_size(Some(MAX_PACKET))
        .set_request_channel_capacity(QUEUE)
        .set_outgoing_inflight_upper_limit(MAX_INFLIGHT)
        .set_connection_timeout(CONNECT_TIMEOUT_SECS);
    if let Some(will) = will {
        o.set_last_will(will.0);
    }
    let mut net = NetworkOptions::new();
    net.set_tcp_nodelay(true);
    net.set_connection_timeout(5);
    o.set_network_options(net);
    Ok(o)
}

/// A retained status message, QoS 1.
pub fn status_will(topic: &str) -> Will {
    let body = serde_json::to_vec(&Status::offline()).unwrap_or_default();
    Will(LastWill::new(
        topic,
        body,
        QoS::AtLeastOnce.raw(),
        true,
        None,
    ))
}

/// What the driver tells its owner. Called on the poll task: never block, only `try_*`.
pub trait Handler: Send + 'static {
    /// A `ConnAck`: (re)subscribe and publish the birth.
    fn connected(&mut self, client: &Client);
    /// A `SubAck`.
    fn subscribed(&mut self, _client: &Client) {}
    /// An incoming publish.
    fn publish(&mut self, client: &Client, p: Incoming);
    /// The connection dropped (or failed to come up), with rumqttc's reason.
    fn disconnected(&mut self, _reason: &str) {}
}

/// How the driver thread should end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Publish `offline` on the status topic (when the process owns one), drain, then
    /// DISCONNECT and wait for the broker to close: the Will is not sent.
    Graceful,
    /// Drop the socket without DISCONNECT, as a crash would: the broker publishes the Will.
    Crash,
}

/// How long a graceful stop waits for queued publishes to go out and be acknowledged.
pub const DRAIN: Duration = Duration::from_secs(2);

/// The MQTT keep-alive: the client pings after this long without traffic and gives the
/// connection up when a ping is not answered within another; the broker sends a silent client's
/// Will after 1.5 times it. 60 s, the common default: at 15 s, 1,000 gateways coming up at once
/// kept one mosquitto busy longer than a ping may wait, each lost connection brought a fleet's
/// retained births again, and the fleet never settled (tests/fleet/bench.py). A client that
/// ends (a crash, SIGKILL) closes its socket, and its Will goes out at once whatever this is.
pub const KEEP_ALIVE: Duration = Duration::from_secs(60);

/// How long a connection attempt may wait for the broker's CONNACK, in seconds.
const CONNECT_TIMEOUT_SECS: u64 = 10;

/// How long a connection must have held for the reconnect backoff to start over.
const STABLE: Duration = Duration::from_secs(60);

/// The exponential backoff with full-range jitter after `failures` failed attempts:
/// 100 ms, 200 ms, … capped at 10 s, each scaled by a random factor in [0.5, 1].
pub fn backoff(failures: u32) -> Duration {
    let base = 100u64.saturating_mul(1 << failures.saturating_sub(1).min(7));
    let capped = base.min(10_000);
    let jittered = capped / 2 + fastrand::u64(0..=capped / 2);
    Duration::from_millis(jittered)
}

/// What the driver needs besides the client: where the process's presence is published (`None`
/// when it owns none, like a CLI command beside `covo run`), and the packet limit it keeps up
/// to date from each CONNACK.
pub struct DriverOptions {
    /// The thread's name.
    pub name: String,
    /// The retained status topic this process owns, if any.
    pub status_topic: Option<String>,
    /// Updated from every CONNACK's Maximum Packet Size.
    pub limit: PacketLimit,
}

/// Runs the event loop on a dedicated thread with a current-thread tokio runtime.
pub fn spawn_driver<H: Handler>(
    opts: DriverOptions,
    client: Client,
    connection: Connection,
    mut handler: H,
    stop_rx: tokio::sync::oneshot::Receiver<Stop>,
) -> std::io::Result<JoinHandle<()>> {
    let DriverOptions {
        name,
        status_topic,
        limit,
    } = opts;
    let Connection(mut eventloop, brokers) = connection;
    let mut broker = 0usize;
    std::thread::Builder::new()
        .name(name)
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
                let mut up = false;
                let mut up_since = std::time::Instant::now();
                let how = loop {
                    tokio::select! {
                        s = &mut stop_rx => break s.unwrap_or(Stop::Graceful),
                        ev = eventloop.poll() => match ev {
                            Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                                up = true;
                                up_since = std::time::Instant::now();
                                limit.set_from_broker(
                                    ack.properties.as_ref().and_then(|p| p.max_packet_size),
                                );
                                handler.connected(&client);
                            }
                            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                                refused_subscriptions(&ack.return_codes);
                                handler.subscribed(&client)
                            }
                            Ok(Event::Incoming(Packet::PubAck(ack))) => refused_publish(&ack.reason),
                            Ok(Event::Incoming(Packet::Publish(p))) => {
                                handler.publish(&client, Incoming::from_raw(p))
                            }
                            Ok(_) => {}
                            Err(e) => {
                                // The backoff starts over only after a connection that held:
                                // one dropped soon after it came up (a broker too busy to
                                // answer pings, a flapping network) waits longer each time,
                                // so a fleet does not reconnect in lockstep.
                                if up && up_since.elapsed() >= STABLE {
                                    failures = 0;
                                }
                                up = false;
                                handler.disconnected(&describe(&e));
                                failures = failures.saturating_add(1);
                                let wait = backoff(failures);
                                if brokers.len() > 1 {
                                    // The next broker of the list, in turn.
                                    broker = (broker + 1) % brokers.len();
                                    eventloop.options = brokers[broker].clone();
                                }
                                let (host, port) = eventloop.options.broker_address();
                                tracing::warn!(error = %e, retry_in_ms = wait.as_millis() as u64, next = %format!("{host}:{port}"), "MQTT connection lost");
                                tokio::select! {
                                    s = &mut stop_rx => break s.unwrap_or(Stop::Graceful),
                                    _ = tokio::time::sleep(wait) => {}
                                }
                            }
                        }
                    }
                };
                if how == Stop::Graceful && up {
                    graceful_close(&client, &mut eventloop, status_topic.as_deref()).await;
                }
            });
        })
}

/// Logs the filters of a SUBSCRIBE the broker refused (an ACL without a line for this client,
/// most often): without them this client silently receives nothing there.
fn refused_subscriptions(codes: &[rumqttc::v5::mqttbytes::v5::SubscribeReasonCode]) {
    use rumqttc::v5::mqttbytes::v5::SubscribeReasonCode as C;
    let refused: Vec<_> = codes
        .iter()
        .filter(|c| !matches!(c, C::Success(_)))
        .collect();
    if let Some(first) = refused.first() {
        tracing::error!(
            refused = refused.len(),
            of = codes.len(),
            reason = ?first,
            "the broker refused subscriptions, so nothing arrives on them: check its ACL for this client's user name (packaging/mosquitto/covo.acl)"
        );
    }
}

/// Logs a QoS 1 publish the broker refused (MQTT 5 PUBACK reason, e.g. not authorized).
fn refused_publish(reason: &rumqttc::v5::mqttbytes::v5::PubAckReason) {
    use rumqttc::v5::mqttbytes::v5::PubAckReason as R;
    if !matches!(reason, R::Success | R::NoMatchingSubscribers) {
        tracing::warn!(
            ?reason,
            "the broker refused a publish: check its ACL for this client's user name"
        );
    }
}

/// Ends a connection cleanly: publishes `offline` on the owned status topic, lets the queued
/// publishes go out and be acknowledged (at most [`DRAIN`]), sends DISCONNECT and reads until
/// the broker closes its side, so the socket ends with nothing unread (an unread byte makes the
/// kernel reset the connection, and the broker then treats it as lost and sends the Will).
async fn graceful_close(client: &Client, eventloop: &mut EventLoop, status: Option<&str>) {
    if let Some(topic) = status {
        let body = serde_json::to_vec(&Status::offline()).unwrap_or_default();
        let _ = client.try_publish(topic, QoS::AtLeastOnce, true, body);
    }
    // Drain: poll until nothing new has gone out for a moment and every QoS 1 publish is
    // acknowledged.
    let drained = tokio::time::timeout(DRAIN, async {
        loop {
            match tokio::time::timeout(Duration::from_millis(30), eventloop.poll()).await {
                Err(_) if eventloop.state.inflight() == 0 => return true,
                Err(_) | Ok(Ok(_)) => {}
                Ok(Err(_)) => return false,
            }
        }
    })
    .await;
    if matches!(drained, Ok(false)) {
        return; // the connection is gone already
    }
    if client.0.try_disconnect().is_err() {
        return;
    }
    // After our DISCONNECT the broker closes the connection: read until it does.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while eventloop.poll().await.is_ok() {}
    })
    .await;
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

/// rumqttc's connection error in words a user can act on.
fn describe(e: &rumqttc::v5::ConnectionError) -> String {
    use rumqttc::v5::mqttbytes::v5::ConnectReturnCode as Code;
    use rumqttc::v5::ConnectionError as E;
    match e {
        E::ConnectionRefused(Code::BadUserNamePassword) => {
            "the broker refused the user name or password ([mqtt] username, password or $COVO_MQTT_PASSWORD)".into()
        }
        // mosquitto answers a wrong password with this code too.
        E::ConnectionRefused(Code::NotAuthorized) => {
            "the broker refused this client: wrong or missing user name or password ([mqtt] username, password or $COVO_MQTT_PASSWORD), or not allowed".into()
        }
        E::ConnectionRefused(code) => format!("the broker refused the connection: {code:?}"),
        E::Tls(t) => format!("TLS failed: {t} (check the URL's host and [mqtt] ca_file)"),
        other => other.to_string(),
    }
}

/// Publishes a retained birth (never blocks).
pub fn publish_birth(client: &Client, topic: &str, birth: &Status) {
    let birth = serde_json::to_vec(birth).unwrap_or_default();
    let _ = client.try_publish(topic, QoS::AtLeastOnce, true, birth);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_their_default_ports() {
        let a = |h: &str, port, tls| BrokerAddr {
            host: h.into(),
            port,
            tls,
        };
        assert_eq!(
            parse_url("mqtt://127.0.0.1:1884").unwrap(),
            a("127.0.0.1", 1884, false)
        );
        assert_eq!(parse_url("broker").unwrap(), a("broker", 1883, false));
        assert_eq!(parse_url("mqtts://x").unwrap(), a("x", 8883, true));
        assert_eq!(parse_url("ssl://x:9000").unwrap(), a("x", 9000, true));
        assert!(parse_url("mqtt://:1").is_err());
        assert!(parse_url("ws://x:1").is_err());
    }

    #[test]
    fn auth_and_tls_settings_are_checked() {
        let will = || Some(status_will("t"));
        let none = BrokerAuth::default();
        assert!(options("mqtt://h", &none, "c", will()).is_ok());
        let pw_only = BrokerAuth {
            password: Some("x".into()),
            ..Default::default()
        };
        assert!(options("mqtt://h", &pw_only, "c", will())
            .unwrap_err()
            .contains("without a username"));
        let ca = BrokerAuth {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..Default::default()
        };
        assert!(options("mqtt://h", &ca, "c", will())
            .unwrap_err()
            .contains("not mqtts://"));
        assert!(options("mqtts://h", &ca, "c", will())
            .unwrap_err()
            .contains("/nonexistent/ca.pem"));
        let half = BrokerAuth {
            client_cert_file: Some("/x.pem".into()),
            ..Default::default()
        };
        assert!(options("mqtts://h", &half, "c", will())
            .unwrap_err()
            .contains("go together"));
    }

    #[test]
    fn a_list_of_brokers_is_tried_in_order_and_each_url_is_checked() {
        let none = BrokerAuth::default();
        let o = options(" mqtt://a:1883, mqtt://b:1884 ,,mqtt://c", &none, "c", None).unwrap();
        assert_eq!(o.brokers(), 3);
        let addrs: Vec<(String, u16)> = o.0.iter().map(|m| m.broker_address()).collect();
        assert_eq!(
            addrs,
            [("a".into(), 1883), ("b".into(), 1884), ("c".into(), 1883)]
        );
        let (_, conn) = Client::new(o);
        assert_eq!(
            conn.0.options.broker_address(),
            ("a".into(), 1883),
            "the first one first"
        );
        assert!(options("mqtt://a,ws://b", &none, "c", None).is_err());
        assert!(options(" , ", &none, "c", None)
            .unwrap_err()
            .contains("no broker"));
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
    fn chunks_join_in_index_order_and_bad_ones_are_refused() {
        let mut p = Partial::default();
        assert_eq!(p.add("c", "2/3", Bytes::from_static(b"bb")), None);
        assert_eq!(p.add("c", "3/3", Bytes::from_static(b"c")), None);
        assert_eq!(
            p.add("c", "1/3", Bytes::from_static(b"a")),
            Some(b"abbc".to_vec())
        );
        assert!(p.calls.is_empty());
        for bad in ["0/2", "3/2", "1/0", "x/2", "1", "1/999"] {
            assert_eq!(p.add("d", bad, Bytes::from_static(b"z")), None, "{bad}");
        }
        // A chunk that disagrees about the count drops what was gathered.
        assert_eq!(p.add("e", "1/2", Bytes::from_static(b"a")), None);
        assert_eq!(p.add("e", "2/3", Bytes::from_static(b"b")), None);
        assert!(!p.calls.contains_key("e"));
    }

    #[test]
    fn partial_responses_are_bounded_and_the_oldest_goes_first() {
        let mut p = Partial::default();
        for i in 0..(MAX_PARTIAL * 4) {
            assert_eq!(
                p.add(&format!("c{i}"), "1/2", Bytes::from_static(b"a")),
                None
            );
            assert!(p.len() <= MAX_PARTIAL, "{}", p.len());
        }
        assert_eq!(p.len(), MAX_PARTIAL);
        assert_eq!(p.order.len(), MAX_PARTIAL);
        // The newest are kept and complete; the oldest was dropped and starts over.
        let last = format!("c{}", MAX_PARTIAL * 4 - 1);
        assert_eq!(
            p.add(&last, "2/2", Bytes::from_static(b"b")),
            Some(b"ab".to_vec())
        );
        assert_eq!(p.add("c0", "2/2", Bytes::from_static(b"b")), None);
        assert_eq!(p.order.len(), p.len());
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
