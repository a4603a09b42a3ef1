//! `covo run`: the gateway daemon. One loop on one thread serves chat over MQTT, runs the
//! schedules and samples the sensors (running their watches) on a ticker, and publishes sensor
//! telemetry. Turns of one chat session run one at a time, at most [`TURNS_PER_SESSION`] queued
//! per session and [`MAX_TURNS`] in all (more are answered busy); blocking work runs on a pool
//! sized for every long job's budget plus a reserve ([`BLOCKING_THREADS`]).
//!
//! Topics (`P` = `[mqtt] prefix`, `G` = gateway id):
//! - `P/G/chat/in`: `{"text", "session"?}` or plain text (session `mqtt`).
//! - `P/G/chat/out`: `{"session", "text", "usage"}` (`text` is the error when the turn failed,
//!   with `"error": true`).
//! - `P/G/chat/events`: `{"session","tool","args"}` before a call,
//!   `{"session","tool","ok","result"|"error"}` after it.
//! - `P/G/sensors/<name>`: retained `{"<quantity>": {"value","unit"}, "at"}` on every sample.
//! - `homeassistant/…/config`: discovery (see [`crate::ha`]), on connect and whenever
//!   `homeassistant/status` says `online`.
//! - `P/G/ha/<device>/set` (`ON`/`OFF`) → `gpio_write` through the pipeline.
//! - `P/G/ha/<device>/state` (retained `ON`/`OFF`): every `gpio_out` device's level, read from
//!   the board, at start, on every announce, after every Home Assistant command and within
//!   [`SWITCH_CHECK`] of a GPIO write from any other path (chat, schedule, watch, swarm).
//! - `P/G/ha/<device>/error`: `{"device","command","error":{"kind","message",…}}` when a
//!   command is refused or fails (also logged in plain words).
//!
//! Blocking work (tool calls, SQLite, schedule runs) runs off this loop, on the runtime's
//! bounded blocking pool, so a slow tool never holds up telemetry or Home Assistant. Chat
//! sessions are bounded (`[run] max_sessions`) and evicted when idle (`[run]
//! session_idle_secs`).
//!
//! Destructive tools asked for over MQTT are declined (nobody is there to approve them) unless
//! `[run] approve = true`.

use crate::agent::{self, scheduler, Agent, Observer, Outcome, ToolResult};
use crate::link::{Message, PeerLink};
use crate::llm::{ChatModel, ToolCall};
use crate::runtime::Runtime;
use covo_board::driver::Driver;
use covo_wire::mqtt::QoS;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The topics of one gateway.
#[derive(Debug, Clone)]
pub struct RunTopics {
    /// `P/G`.
    pub base: String,
}

impl RunTopics {
    /// For `[mqtt] prefix` and the gateway id.
    pub fn new(prefix: &str, gateway: &str) -> Self {
        RunTopics {
            base: format!("{prefix}/{gateway}"),
        }
    }
    /// Chat input.
    pub fn chat_in(&self) -> String {
        format!("{}/chat/in", self.base)
    }
    /// Chat answers.
    pub fn chat_out(&self) -> String {
        format!("{}/chat/out", self.base)
    }
    /// Tool events.
    pub fn chat_events(&self) -> String {
        format!("{}/chat/events", self.base)
    }
    /// A sensor's telemetry.
    pub fn sensor(&self, name: &str) -> String {
        format!("{}/sensors/{name}", self.base)
    }
}

/// The telemetry payload for one `sensor_read`-shaped sample.
pub fn telemetry(sample: &Value) -> Value {
    let mut m = Map::new();
    for r in sample["readings"].as_array().into_iter().flatten() {
        if let Some(q) = r["quantity"].as_str() {
            m.insert(q.into(), json!({"value": r["value"], "unit": r["unit"]}));
        }
    }
    m.insert("at".into(), sample["at"].clone());
    Value::Object(m)
}

fn publish_json(link: &PeerLink, topic: &str, v: &Value, retain: bool) {
    if let Err(e) = link.publish(topic, v.to_string().into_bytes(), QoS::AtLeastOnce, retain) {
        tracing::warn!(topic, error = %e, "publish failed");
    }
}

/// Publishes tool events for one chat turn.
struct Events<'a> {
    link: &'a PeerLink,
    topic: String,
    session: String,
}

impl Observer for Events<'_> {
    fn on_tool_call(&mut self, call: &ToolCall) {
        let args = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        publish_json(
            self.link,
            &self.topic,
            &json!({"session": self.session, "tool": call.name, "args": args}),
            false,
        );
    }

    fn on_tool_result(&mut self, call: &ToolCall, r: &ToolResult) {
        let v = agent::result_json(r);
        let body = if r.is_error {
            json!({"session": self.session, "tool": call.name, "ok": false, "error": v.get("error").cloned().unwrap_or(v)})
        } else {
            json!({"session": self.session, "tool": call.name, "ok": true, "result": v})
        };
        publish_json(self.link, &self.topic, &body, false);
    }
}

/// Parses a chat/in payload: JSON `{"text","session"?}` or plain text.
pub fn parse_chat_in(payload: &[u8]) -> Option<(String, String)> {
    let text = String::from_utf8_lossy(payload).trim().to_string();
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&text) {
        let t = m.get("text")?.as_str()?.to_string();
        let s = m
            .get("session")
            .and_then(Value::as_str)
            .unwrap_or("mqtt")
            .to_string();
        return Some((s, t));
    }
    (!text.is_empty()).then(|| ("mqtt".to_string(), text))
}

/// Messages from the broker waiting for `covo run`'s loop, all subscriptions together; more are
/// dropped (and logged). The queue allocates as it fills, in blocks of 32.
pub const LOOP_QUEUE: usize = 4 * crate::link::SUB_QUEUE;

/// How many swarm calls from other gateways run here at once; more are answered `busy`.
pub const SWARM_SLOTS: usize = 8;

/// Home Assistant `set` commands carried out at once; one arriving beyond them is dropped
/// with a warning (its state topic keeps the true state, so the switch in Home Assistant
/// flips back), so a storm of commands cannot queue blocking work without bound.
pub const HA_COMMANDS: usize = 2;

/// Chat turns one MQTT chat session may have queued or running; one more is answered busy.
pub const TURNS_PER_SESSION: usize = 4;

/// Chat turns queued or running over all MQTT sessions; one more is answered busy.
pub const MAX_TURNS: usize = 64;

/// What the blocking jobs that may wait a long time can hold of the pool at most, each under
/// its own permit taken before it is spawned: dashboard approvals (8,
/// `web::approvals::MAX_PENDING`), Telegram approvals (4, `telegram::approve::MAX_PENDING`),
/// MCP calls (4 running, `mcp::MAX_CALLS`, and 8 waiting for confirmation, `mcp::MAX_WAITING`),
/// swarm calls ([`SWARM_SLOTS`]) and Home Assistant commands ([`HA_COMMANDS`]).
pub const LONG_JOBS: usize = 8 + 4 + 4 + 8 + SWARM_SLOTS + HA_COMMANDS;

/// Threads kept beyond [`LONG_JOBS`] for sampling, the store, schedules and telemetry, so that
/// those never wait behind parked approvals or slow calls.
pub const RESERVE_THREADS: usize = 12;

/// Threads of `covo run`'s blocking pool (tool calls, SQLite, schedule runs, approvals): every
/// long job's budget plus [`RESERVE_THREADS`]. Threads are started on demand and leave after
/// 2 s idle, so an idle daemon holds none of them.
pub const BLOCKING_THREADS: usize = LONG_JOBS + RESERVE_THREADS;

/// How often the loop looks for GPIO writes made by other paths (and for reconnects).
pub const SWITCH_CHECK: Duration = Duration::from_millis(500);

/// Chat sessions kept at once unless `[run] max_sessions` says otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 32;
/// Seconds before an unused chat session is evicted unless `[run] session_idle_secs` says so.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 1800;
/// Batches of claimed schedules running at once; the loop claims no more until one ends, so
/// due jobs wait in the store rather than in memory.
pub const SCHEDULE_BATCHES: usize = 2;

/// The chat sessions in memory: one agent each, bounded, the idle ones evicted.
pub struct Sessions {
    slots: HashMap<String, Slot>,
    max: usize,
    idle: Duration,
}

struct Slot {
    agent: Arc<tokio::sync::Mutex<Agent>>,
    used: Instant,
}

impl Slot {
    /// A turn task holds a clone of the agent while it runs or waits.
    fn busy(&self) -> bool {
        Arc::strong_count(&self.agent) > 1
    }
}

impl Sessions {
    /// At most `max` sessions (at least 1); one unused for `idle` is evicted.
    pub fn new(max: usize, idle: Duration) -> Self {
        Sessions {
            slots: HashMap::new(),
            max: max.max(1),
            idle,
        }
    }

    /// How many sessions are in memory.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The agent of `session` when it is in memory; does not count as a use.
    pub fn get(&self, session: &str) -> Option<Arc<tokio::sync::Mutex<Agent>>> {
        self.slots.get(session).map(|s| s.agent.clone())
    }

    /// Drops every idle session unused for longer than the idle time; returns how many.
    pub fn evict_idle(&mut self, now: Instant) -> usize {
        let before = self.slots.len();
        let idle = self.idle;
        self.slots
            .retain(|_, s| s.busy() || now.duration_since(s.used) < idle);
        let n = before - self.slots.len();
        if n > 0 {
            tracing::info!(evicted = n, "chat sessions evicted after being idle");
        }
        n
    }

    /// The agent of `session`, made with `make` when new. `None` when the table is full of
    /// busy sessions; a new session otherwise evicts the least recently used idle one.
    pub fn get_or_make(
        &mut self,
        session: &str,
        now: Instant,
        make: impl FnOnce() -> Agent,
    ) -> Option<Arc<tokio::sync::Mutex<Agent>>> {
        if let Some(s) = self.slots.get_mut(session) {
            s.used = now;
            return Some(s.agent.clone());
        }
        self.evict_idle(now);
        if self.slots.len() >= self.max {
            let lru = self
                .slots
                .iter()
                .filter(|(_, s)| !s.busy())
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())?;
            tracing::info!(
                session = lru,
                "chat session evicted: the session table is full"
            );
            self.slots.remove(&lru);
        }
        let agent = Arc::new(tokio::sync::Mutex::new(make()));
        self.slots.insert(
            session.to_string(),
            Slot {
                agent: agent.clone(),
                used: now,
            },
        );
        Some(agent)
    }
}

/// Runs the daemon until `stop` is cancelled.
pub async fn serve(
    rt: Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    serve_with(rt, model, stop, None).await
}

/// Where `covo run` sends each sensor sample as it is taken (the `sensor_read` JSON, keyed by
/// sensor), besides its telemetry topic: the dashboard's live values. A bounded broadcast: a
/// listener that falls behind loses the oldest samples, never holds up sampling.
pub type SampleTap = tokio::sync::broadcast::Sender<(String, Value)>;

/// [`serve`], also sending every sample to `samples`. With a tap and no MQTT, sensors
/// without their own interval are sampled every `[run] telemetry_secs` too.
pub async fn serve_with(
    rt: Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    stop: CancellationToken,
    samples: Option<SampleTap>,
) -> anyhow::Result<()> {
    // Every subscription of the loop delivers here (`PeerLink::subscribe_into`): room for as
    // many messages as their queues and the loop's together held when each had its own thread.
    let (tx, mut rx) = mpsc::channel::<Message>(LOOP_QUEUE);
    let mut subs = Vec::new();
    let link = if rt.config().mqtt.is_some() {
        // The daemon owns the gateway's presence; CLI commands beside it publish none.
        match rt.presence_link() {
            Some(l) => Some(l),
            None => {
                eprintln!("covo run: the MQTT link did not start (see the log); MQTT is off");
                None
            }
        }
    } else {
        eprintln!("covo run: no [mqtt] section: MQTT is off; running schedules and watches only");
        None
    };
    let topics = link.map(|l| RunTopics::new(l.prefix(), l.gateway_id()));
    let swarm_topic = link
        .filter(|_| rt.config().swarm.serve.unwrap_or(true))
        .map(|l| covo_wire::protocol::Topics::new(l.prefix()).swarm_requests(l.gateway_id()));
    let swarm = Arc::new(crate::swarm::SwarmServer::new());
    let switches: Switches = Default::default();
    let swarm_slots = Arc::new(tokio::sync::Semaphore::new(SWARM_SLOTS));
    let swarm_session = Arc::new(match swarm_topic {
        Some(_) => agent::new_session(&rt, "swarm", "swarm calls"),
        None => crate::exec::Session::new("swarm", "swarm"),
    });
    if let (Some(l), Some(t)) = (link, &topics) {
        let ha = ha_topics(l);
        // Subscriptions first: the birth that lists the served tools waits for their SUBACKs.
        for f in [
            t.chat_in(),
            ha.set_filter(),
            crate::ha::HA_STATUS.to_string(),
        ]
        .into_iter()
        .chain(swarm_topic.clone())
        {
            // Into the loop's queue (LOOP_QUEUE messages for all of them; beyond, dropped).
            subs.push(
                l.subscribe_into(&f, tx.clone())
                    .map_err(anyhow::Error::msg)?,
            );
        }
        l.set_board(&rt.board().def().board.name);
        if swarm_topic.is_some() {
            let served = rt.swarm_served();
            eprintln!("covo run: serving {} tool(s) to the swarm", served.len());
            l.set_served(served);
        }
        announce(&rt, l, &switches);
        eprintln!(
            "covo run: MQTT on ({}), chat on {}",
            rt.config()
                .mqtt
                .as_ref()
                .map(|m| m.url_shown())
                .unwrap_or_default(),
            t.chat_in()
        );
    }
    if model.is_none() {
        eprintln!("covo run: {}", agent::NO_MODEL);
    }
    let poll = Duration::from_secs(rt.config().agent.schedule_poll_secs.unwrap_or(15).max(1));
    let telemetry_every = (link.is_some() || samples.is_some())
        .then(|| rt.config().run.telemetry_secs.unwrap_or(60).max(1));
    let tick = poll.min(Duration::from_secs(telemetry_every.unwrap_or(u64::MAX)));
    let mut ticker = tokio::time::interval(tick);
    // One agent per chat session, each behind its own lock: turns of one session run in order,
    // turns of different sessions side by side, and none holds up this loop.
    let run_cfg = &rt.config().run;
    let mut agents = Sessions::new(
        run_cfg.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS),
        Duration::from_secs(
            run_cfg
                .session_idle_secs
                .unwrap_or(DEFAULT_SESSION_IDLE_SECS),
        ),
    );
    let mut turns = tokio::task::JoinSet::new();
    let ha_slots = Arc::new(tokio::sync::Semaphore::new(HA_COMMANDS));
    let mut ha_dropped: u64 = 0;
    let mut jobs = tokio::task::JoinSet::new();
    // A reconnect may reach a restarted broker that lost the retained discovery configs and
    // state: announce again whenever the link's connection count moves.
    let mut connects = link.map_or(0, |l| l.connects());
    let mut link_check = tokio::time::interval(SWITCH_CHECK);
    let mut retention = tokio::time::interval(
        rt.config()
            .store
            .prune_every_secs
            .map(|s| Duration::from_secs(s.max(1)))
            .unwrap_or(crate::store::retention::EVERY),
    );
    // The code start-up ran, and then what each minute's work ran, stops counting (`trim`).
    let trim = crate::trim::every_minute();
    tokio::pin!(trim);
    let sampled: Arc<std::sync::Mutex<HashMap<String, Instant>>> = Default::default();
    let mut sampling: Option<tokio::task::JoinHandle<()>> = None;
    // Microcontroller events feed the watches on their own thread (stopped when this returns).
    let _mcu_events = crate::watch::McuWatcher::spawn(rt.clone());
    // systemd (Type=notify, WatchdogSec): ready now; the loop pings the watchdog every second.
    let mut notify = crate::sd_notify::Notifier::from_env();
    notify.ready();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            m = rx.recv() => {
                let (Some(m), Some(l), Some(t)) = (m, link, &topics) else { continue };
                let ha = ha_topics(l);
                if swarm_topic.as_ref().is_some_and(|f| covo_wire::mqtt::topic_matches(f, &m.topic)) {
                    if let crate::swarm::Admission::Run(req, reply) = swarm.admit(l, &m) {
                        match swarm_slots.clone().try_acquire_owned() {
                            Ok(slot) => {
                                let (rt2, swarm2, session) = (rt.clone(), swarm.clone(), swarm_session.clone());
                                // Runs beside the loop; a slow tool does not hold up chat or telemetry.
                                tokio::task::spawn_blocking(move || {
                                    let _slot = slot;
                                    if let Some(l) = rt2.peer_link() {
                                        swarm2.run(&rt2, l, &session, req, reply);
                                    }
                                });
                            }
                            Err(_) => swarm.refuse(l, &req, reply, "busy", format!(
                                "this gateway is already running {SWARM_SLOTS} swarm calls; try again shortly"
                            )),
                        }
                    }
                } else if m.topic == t.chat_in() {
                    start_chat(&rt, &model, l, t, &mut agents, &mut turns, &m, &stop);
                } else if m.topic == crate::ha::HA_STATUS {
                    if m.payload == b"online" {
                        announce(&rt, l, &switches);
                    }
                } else if let Some(device) = ha.device_of_set(&m.topic) {
                    // The write runs on the blocking pool under its permit; its state follows
                    // when it is done.
                    match ha_slots.clone().try_acquire_owned() {
                        Ok(slot) => {
                            let (rt2, sw, device, payload) =
                                (rt.clone(), switches.clone(), device.to_string(), m.payload.clone());
                            tokio::task::spawn_blocking(move || {
                                let _slot = slot;
                                if let Some(l) = rt2.peer_link() {
                                    switch(&rt2, l, &sw, &device, &payload);
                                }
                            });
                        }
                        Err(_) => {
                            ha_dropped += 1;
                            // One line per burst, not per command.
                            if ha_dropped.is_power_of_two() {
                                tracing::warn!(
                                    device,
                                    dropped = ha_dropped,
                                    "Home Assistant commands arrive faster than {HA_COMMANDS} at once; dropped"
                                );
                            }
                        }
                    }
                }
            }
            _ = link_check.tick() => {
                notify.watchdog();
                if let Some(l) = link.filter(|l| l.connects() != connects) {
                    connects = l.connects();
                    tracing::info!("MQTT reconnected: announcing to Home Assistant again");
                    announce(&rt, l, &switches);
                } else if link.is_some() && switches_changed(&rt, &switches) {
                    let (rt2, sw) = (rt.clone(), switches.clone());
                    tokio::task::spawn_blocking(move || {
                        if let Some(l) = rt2.peer_link() {
                            publish_switch_states(&rt2, l, &sw, false);
                        }
                    });
                }
                agents.evict_idle(Instant::now());
                while jobs.try_join_next().is_some() {}
            }
            () = &mut trim => {}
            _ = retention.tick() => {
                let rt2 = rt.clone();
                tokio::task::spawn_blocking(move || {
                    if let Ok(store) = rt2.store() {
                        let limits = crate::store::retention::Limits::from_config(&rt2.config().store);
                        match store.prune(&limits, crate::store::retention::BATCH, crate::store::retention::MAX_BATCHES) {
                            Ok(n) if n.total() > 0 => tracing::info!(pruned = ?n, "store retention pruned old rows"),
                            Ok(_) => {}
                            Err(e) => tracing::warn!(error = %e, "store retention failed"),
                        }
                    }
                });
            }
            _ = ticker.tick() => {
                // Claimed on the blocking pool and run as a task of their own: a slow job (a
                // tool that waits, a prompt the model takes long over) never holds this loop.
                // While SCHEDULE_BATCHES batches run, nothing more is claimed: due jobs stay
                // due in the store.
                while jobs.try_join_next().is_some() {}
                if jobs.len() < SCHEDULE_BATCHES {
                    let (rt2, model2) = (rt.clone(), model.clone());
                    jobs.spawn(async move {
                        let rt3 = rt2.clone();
                        let claimed = tokio::task::spawn_blocking(move || {
                            scheduler::claim_due(&rt3, chrono::Utc::now())
                        })
                        .await;
                        match claimed {
                            Ok(Ok(due)) => for job in due {
                                scheduler::run_job(&rt2, model2.clone(), &job).await;
                            },
                            Ok(Err(e)) => tracing::warn!(error = %e, "could not check schedules"),
                            Err(e) => tracing::warn!(error = %e, "the schedule check crashed"),
                        }
                    });
                }
                // Sampled and published on the blocking pool (a bus may be busy with a slow
                // call); one round at a time: a tick that finds the last one running skips.
                if sampling.as_ref().is_none_or(|h| h.is_finished()) {
                    let (rt2, last, topics2) = (rt.clone(), sampled.clone(), topics.clone());
                    let tap = samples.clone();
                    sampling = Some(tokio::task::spawn_blocking(move || {
                        let samples = {
                            let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
                            let mut out = Vec::new();
                            // Each sample reaches the tap as soon as it is taken, before the
                            // next sensor is read.
                            crate::tools::readings::sample_due_each(rt2.as_ref(), &mut last, telemetry_every, |name, r| {
                                if let (Some(tap), Ok(v)) = (&tap, &r) {
                                    // No listener is no error.
                                    let _ = tap.send((name.to_string(), v.clone()));
                                }
                                out.push((name.to_string(), r));
                            });
                            out
                        };
                        for (name, r) in samples {
                            match (r, &topics2) {
                                (Ok(v), Some(t)) => {
                                    if let Some(l) = rt2.peer_link() {
                                        publish_json(l, &t.sensor(&name), &telemetry(&v), true);
                                    }
                                }
                                (Ok(_), None) => {}
                                (Err(e), _) => tracing::warn!(sensor = name, error = e, "sampling failed"),
                            }
                        }
                    }));
                }
            }
        }
    }
    notify.stopping();
    // Turns in flight were cancelled with `stop`; let them publish their last answer.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while turns.join_next().await.is_some() {}
    })
    .await;
    jobs.abort_all();
    if let Some(l) = link {
        for id in subs {
            l.unsubscribe(id);
        }
        l.close();
    }
    Ok(())
}

fn ha_topics(l: &PeerLink) -> crate::ha::HaTopics {
    crate::ha::HaTopics {
        prefix: l.prefix().to_string(),
        gateway: l.gateway_id().to_string(),
    }
}

/// Publishes the Home Assistant discovery configs (retained) for every declared device, then
/// (on the blocking pool: reading a line may wait for the board) every switch's state.
fn announce(rt: &Arc<Runtime>, l: &PeerLink, switches: &Switches) {
    for (topic, v) in crate::ha::all_configs(&ha_topics(l), rt.board().def()) {
        publish_json(l, &topic, &v, true);
    }
    let (rt, sw) = (rt.clone(), switches.clone());
    tokio::task::spawn_blocking(move || {
        if let Some(l) = rt.peer_link() {
            publish_switch_states(&rt, l, &sw, true);
        }
    });
}

/// What was last published of each switch, and the board's GPIO write count then.
#[derive(Default)]
struct SwitchStates {
    writes: Option<u64>,
    last: HashMap<String, bool>,
}

type Switches = Arc<std::sync::Mutex<SwitchStates>>;

/// Whether a GPIO write happened since the switches were last published: one atomic load, so
/// the loop checks it every [`SWITCH_CHECK`] and reads the lines (on the blocking pool) only
/// when something was written. An unopened board has had no writes.
fn switches_changed(rt: &Runtime, switches: &Switches) -> bool {
    let Some(hw) = rt.board().opened() else {
        return false;
    };
    let writes = hw.gpio_write_count();
    match switches.try_lock() {
        Ok(st) => st.writes != Some(writes),
        // A check is already reading the lines.
        Err(_) => false,
    }
}

/// Publishes (retained) the level of every `gpio_out` device as read from the board: all of
/// them when `force`, otherwise only those that changed since the last publish. A level that
/// cannot be read is logged and left unpublished. Blocking: a line may be held by a slow
/// call (`gpio_wait_edge`), so this runs on the blocking pool, never on the loop.
fn publish_switch_states(rt: &Runtime, l: &PeerLink, switches: &Switches, force: bool) {
    let outputs: Vec<(&str, u32)> = rt
        .board()
        .def()
        .device
        .iter()
        .filter(|d| d.driver == Driver::GpioOut)
        .filter_map(|d| Some((d.name.as_str(), d.pin?)))
        .collect();
    if outputs.is_empty() {
        return;
    }
    let hw = match rt.board().hardware() {
        Ok(hw) => hw,
        Err(e) => {
            if force {
                tracing::warn!(error = %e, "cannot read the switches' states: the board did not open");
            }
            return;
        }
    };
    let mut st = switches.lock().unwrap_or_else(|p| p.into_inner());
    let writes = hw.gpio_write_count();
    if !force && st.writes == Some(writes) {
        return;
    }
    st.writes = Some(writes);
    let ha = ha_topics(l);
    for (name, pin) in outputs {
        match hw.gpio_output_level(pin) {
            Ok(level) => {
                if force || st.last.get(name) != Some(&level) {
                    let state = if level { "ON" } else { "OFF" };
                    match l.publish(&ha.state(name), state.into(), QoS::AtLeastOnce, true) {
                        Ok(()) => {
                            st.last.insert(name.to_string(), level);
                        }
                        Err(e) => {
                            tracing::warn!(device = name, error = %e, "cannot publish the switch state")
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(device = name, error = %e, "cannot read the switch state"),
        }
    }
}

/// A refused or failed Home Assistant command: logged in plain words and published on
/// `P/G/ha/<device>/error`.
fn refuse(l: &PeerLink, ha: &crate::ha::HaTopics, device: &str, command: &str, error: Value) {
    let message = error["message"].as_str().unwrap_or("failed").to_string();
    tracing::warn!("Home Assistant command {command} for {device} was not carried out: {message}");
    publish_json(
        l,
        &ha.error(device),
        &json!({"device": device, "command": command, "error": error}),
        false,
    );
}

/// A Home Assistant switch command: `gpio_write` through the pipeline (policy applies), then
/// the switch's state as read back, retained. A refused or failed write is reported on the
/// error topic and the current state is published again, so Home Assistant does not keep an
/// optimistic one.
fn switch(rt: &Runtime, l: &PeerLink, switches: &Switches, device: &str, payload: &[u8]) {
    let ha = &ha_topics(l);
    let command = String::from_utf8_lossy(payload).to_string();
    let level = match payload {
        b"ON" => 1,
        b"OFF" => 0,
        _ => {
            refuse(
                l,
                ha,
                device,
                &command,
                json!({"kind": "invalid_arguments", "message": format!("the command must be ON or OFF, not '{command}'")}),
            );
            return;
        }
    };
    let session = crate::exec::Session::new("home-assistant", "mqtt");
    let r = rt.call(
        &session,
        crate::runtime::Via::Mqtt,
        covo_core::catalog::gpio::GPIO_WRITE.name,
        json!({"pin": device, "level": level}),
    );
    if let Err(e) = r {
        let error = match e {
            crate::error::CallError::Respond(e) => e.to_json()["error"].clone(),
            crate::error::CallError::Fatal(e) => {
                json!({"kind": "failed", "message": e.to_string()})
            }
        };
        refuse(l, ha, device, &command, error);
    }
    publish_switch_states(rt, l, switches, true);
}

/// Starts a chat turn as a task of `turns`; it waits for the session's previous turn.
#[allow(clippy::too_many_arguments)]
fn start_chat(
    rt: &Arc<Runtime>,
    model: &Option<Arc<dyn ChatModel>>,
    link: &PeerLink,
    t: &RunTopics,
    agents: &mut Sessions,
    turns: &mut tokio::task::JoinSet<()>,
    m: &Message,
    stop: &CancellationToken,
) {
    let Some((session, text)) = parse_chat_in(&m.payload) else {
        return;
    };
    if model.is_none() {
        publish_json(
            link,
            &t.chat_out(),
            &json!({"session": session, "text": agent::NO_MODEL, "error": true}),
            false,
        );
        return;
    }
    // The conversation is registered in the store by the turn's task, off this loop.
    let Some(agent) = agents.get_or_make(&session, Instant::now(), || {
        Agent::new(
            rt.clone(),
            model.clone(),
            crate::exec::Session::new(String::new(), "mqtt"),
        )
    }) else {
        publish_json(
            link,
            &t.chat_out(),
            &json!({"session": session, "error": true, "text": format!(
                "too many chat sessions are busy ({} at most); try again when one has answered",
                agents.len()
            )}),
            false,
        );
        return;
    };
    // Finished turns are reaped here, so the set stays small and the counts below are of live
    // ones.
    while turns.try_join_next().is_some() {}
    // The session's table entry and `agent` here hold one reference each, every queued or
    // running turn another.
    let queued = Arc::strong_count(&agent).saturating_sub(2);
    if queued >= TURNS_PER_SESSION || turns.len() >= MAX_TURNS {
        let why = if queued >= TURNS_PER_SESSION {
            format!("this chat session already has {TURNS_PER_SESSION} messages waiting (the most one session queues)")
        } else {
            format!("{MAX_TURNS} chat messages are already waiting on this gateway (the most it queues)")
        };
        publish_json(
            link,
            &t.chat_out(),
            &json!({"session": session, "error": true, "text": format!("busy: {why}; try again when it has answered")}),
            false,
        );
        return;
    }
    let (rt, t, token) = (rt.clone(), t.clone(), stop.child_token());
    turns.spawn(async move {
        let mut agent = agent.lock().await;
        if agent.session().id.is_empty() {
            let (rt2, title) = (rt.clone(), format!("mqtt chat {session}"));
            match tokio::task::spawn_blocking(move || agent::new_session(&rt2, "mqtt", &title))
                .await
            {
                Ok(s) => agent.reset(s),
                Err(e) => {
                    tracing::warn!(error = %e, "could not register the chat session");
                    agent.reset(crate::exec::Session::new(
                        format!("transient-mqtt-{session}"),
                        "mqtt",
                    ));
                }
            }
        }
        if let Some(link) = rt.peer_link() {
            chat_turn(link, &t, &mut agent, session, &text, &token).await;
        }
    });
}

async fn chat_turn(
    link: &PeerLink,
    t: &RunTopics,
    agent: &mut Agent,
    session: String,
    text: &str,
    token: &CancellationToken,
) {
    let mut obs = Events {
        link,
        topic: t.chat_events(),
        session: session.clone(),
    };
    let r = agent.turn(text, token, &mut obs).await;
    let usage =
        json!({"input_tokens": r.usage.input_tokens, "output_tokens": r.usage.output_tokens});
    let body = match r.outcome {
        Outcome::Answer(a) => json!({"session": session, "text": a, "usage": usage}),
        Outcome::StepBudget { steps } => {
            json!({"session": session, "text": format!("stopped after {steps} model calls (the step budget)"), "usage": usage, "error": true})
        }
        Outcome::Cancelled => {
            json!({"session": session, "text": "cancelled", "usage": usage, "error": true})
        }
        Outcome::Failed(e) => {
            json!({"session": session, "text": e.to_string(), "usage": usage, "error": true})
        }
    };
    publish_json(link, &t.chat_out(), &body, false);
}

#[cfg(test)]
mod tests {
    #[cfg(all(feature = "web", feature = "telegram", feature = "mcp"))]
    #[test]
    fn the_blocking_pool_covers_every_long_job_budget_and_a_reserve() {
        assert_eq!(
            LONG_JOBS,
            crate::web::approvals::MAX_PENDING
                + crate::telegram::approve::MAX_PENDING
                + crate::mcp::MAX_CALLS
                + crate::mcp::MAX_WAITING
                + SWARM_SLOTS
                + HA_COMMANDS
        );
        assert_eq!(BLOCKING_THREADS, LONG_JOBS + RESERVE_THREADS);
    }

    use super::*;

    #[test]
    fn chat_input_is_json_or_plain_text() {
        assert_eq!(
            parse_chat_in(br#"{"text":"hi","session":"s1"}"#),
            Some(("s1".into(), "hi".into()))
        );
        assert_eq!(
            parse_chat_in(b"hello"),
            Some(("mqtt".into(), "hello".into()))
        );
        assert_eq!(parse_chat_in(b"  "), None);
    }

    #[test]
    fn telemetry_keys_quantities() {
        let v = telemetry(
            &json!({"at": "T", "readings": [{"quantity": "temperature", "value": 21.5, "unit": "°C"}]}),
        );
        assert_eq!(
            v,
            json!({"temperature": {"value": 21.5, "unit": "°C"}, "at": "T"})
        );
    }
}
