//! `covo run`: the gateway daemon. One loop on one thread serves chat over MQTT, runs the
//! schedules and samples the sensors (running their watches) on a ticker, and publishes sensor
//! telemetry. Chat turns run one at a time (so also one at a time per session); a turn holds the
//! loop, so schedules due during a turn run right after it.
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
//! - `P/G/ha/<device>/set` (`ON`/`OFF`) → `gpio_write` through the pipeline →
//!   `P/G/ha/<device>/state` (retained) when it was allowed and worked.
//!
//! Destructive tools asked for over MQTT are declined (nobody is there to approve them) unless
//! `[run] approve = true`.

use crate::agent::{self, scheduler, Agent, Observer, Outcome, ToolResult};
use crate::link::{Message, PeerLink};
use crate::llm::{ChatModel, ToolCall};
use crate::runtime::Runtime;
use rumqttc::v5::mqttbytes::QoS;
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

/// Forwards a link subscription into the loop's channel, on a thread of its own.
/// The thread blocks while the loop's queue is full, so the link's bounded subscription queue
/// takes the overflow.
fn forward(rx: std::sync::mpsc::Receiver<Message>, tx: mpsc::Sender<Message>) {
    std::thread::spawn(move || {
        while let Ok(m) = rx.recv() {
            if tx.blocking_send(m).is_err() {
                return;
            }
        }
    });
}

/// How many swarm calls from other gateways run here at once; more are answered `busy`.
pub const SWARM_SLOTS: usize = 8;

/// Runs the daemon until `stop` is cancelled.
pub async fn serve(
    rt: Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::channel::<Message>(crate::link::SUB_QUEUE);
    let mut subs = Vec::new();
    let link = if rt.config().mqtt.is_some() {
        match rt.peer_link() {
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
        .map(|l| covo_wire::protocol::Topics::new(l.prefix()).swarm_request(l.gateway_id()));
    let swarm = Arc::new(crate::swarm::SwarmServer::new());
    let swarm_slots = Arc::new(tokio::sync::Semaphore::new(SWARM_SLOTS));
    let swarm_session = Arc::new(match swarm_topic {
        Some(_) => agent::new_session(&rt, "swarm", "swarm calls"),
        None => crate::exec::Session::new("swarm", "swarm"),
    });
    if let (Some(l), Some(t)) = (link, &topics) {
        let ha = ha_topics(l);
        if swarm_topic.is_some() {
            let served = rt.swarm_served();
            eprintln!("covo run: serving {} tool(s) to the swarm", served.len());
            l.set_served(served);
        }
        for f in [
            t.chat_in(),
            ha.set_filter(),
            crate::ha::HA_STATUS.to_string(),
        ]
        .into_iter()
        .chain(swarm_topic.clone())
        {
            let (id, r) = l.subscribe(&f).map_err(anyhow::Error::msg)?;
            subs.push(id);
            forward(r, tx.clone());
        }
        announce(&rt, l);
        eprintln!(
            "covo run: MQTT on ({}), chat on {}",
            rt.config()
                .mqtt
                .as_ref()
                .map(|m| m.url())
                .unwrap_or_default(),
            t.chat_in()
        );
    }
    if model.is_none() {
        eprintln!("covo run: {}", agent::NO_MODEL);
    }
    let poll = Duration::from_secs(rt.config().agent.schedule_poll_secs.unwrap_or(15).max(1));
    let telemetry_every = link.map(|_| rt.config().run.telemetry_secs.unwrap_or(60).max(1));
    let tick = poll.min(Duration::from_secs(telemetry_every.unwrap_or(u64::MAX)));
    let mut ticker = tokio::time::interval(tick);
    // One agent per chat session, each behind its own lock: turns of one session run in order,
    // turns of different sessions side by side, and none holds up this loop.
    let mut agents: HashMap<String, Arc<tokio::sync::Mutex<Agent>>> = HashMap::new();
    let mut turns = tokio::task::JoinSet::new();
    // A reconnect may reach a restarted broker that lost the retained discovery configs and
    // state: announce again whenever the link's connection count moves.
    let mut connects = link.map_or(0, |l| l.connects());
    let mut link_check = tokio::time::interval(Duration::from_secs(1));
    let mut sampled: HashMap<String, Instant> = HashMap::new();
    // systemd (Type=notify, WatchdogSec): ready now; the loop pings the watchdog every second.
    let mut notify = crate::sd_notify::Notifier::from_env();
    notify.ready();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            m = rx.recv() => {
                let (Some(m), Some(l), Some(t)) = (m, link, &topics) else { continue };
                let ha = ha_topics(l);
                if Some(&m.topic) == swarm_topic.as_ref() {
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
                        announce(&rt, l);
                    }
                } else if let Some(device) = ha.device_of_set(&m.topic) {
                    switch(&rt, l, &ha, device, &m.payload);
                }
            }
            _ = link_check.tick() => {
                notify.watchdog();
                if let Some(l) = link.filter(|l| l.connects() != connects) {
                    connects = l.connects();
                    tracing::info!("MQTT reconnected: announcing to Home Assistant again");
                    announce(&rt, l);
                }
            }
            _ = ticker.tick() => {
                match scheduler::claim_due(&rt, chrono::Utc::now()) {
                    Ok(jobs) => for job in jobs {
                        scheduler::run_job(&rt, model.clone(), &job).await;
                    },
                    Err(e) => tracing::warn!(error = %e, "could not check schedules"),
                }
                let rt2 = rt.clone();
                let mut last = std::mem::take(&mut sampled);
                let (last, samples) = tokio::task::spawn_blocking(move || {
                    let s = crate::tools::sensors::sample_due_readings(rt2.as_ref(), &mut last, telemetry_every);
                    (last, s)
                })
                .await?;
                sampled = last;
                for (name, r) in samples {
                    match (r, link, &topics) {
                        (Ok(v), Some(l), Some(t)) => publish_json(l, &t.sensor(&name), &telemetry(&v), true),
                        (Ok(_), _, _) => {}
                        (Err(e), _, _) => tracing::warn!(sensor = name, error = e, "sampling failed"),
                    }
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

/// Publishes the Home Assistant discovery configs (retained) for every declared device.
fn announce(rt: &Runtime, l: &PeerLink) {
    for (topic, v) in crate::ha::all_configs(&ha_topics(l), rt.board().def()) {
        publish_json(l, &topic, &v, true);
    }
}

/// A Home Assistant switch command: `gpio_write` through the pipeline (policy applies), then
/// the new state, retained. A refused or failed write publishes nothing and is logged.
fn switch(rt: &Runtime, l: &PeerLink, ha: &crate::ha::HaTopics, device: &str, payload: &[u8]) {
    let level = match payload {
        b"ON" => 1,
        b"OFF" => 0,
        other => {
            tracing::warn!(device, payload = %String::from_utf8_lossy(other), "switch command is not ON or OFF");
            return;
        }
    };
    let session = crate::exec::Session::new("home-assistant", "mqtt");
    match rt.call(
        &session,
        crate::runtime::Via::Mqtt,
        covo_core::catalog::gpio::GPIO_WRITE.name,
        json!({"pin": device, "level": level}),
    ) {
        Ok(_) => {
            let state = if level == 1 { "ON" } else { "OFF" };
            if let Err(e) = l.publish(&ha.state(device), state.into(), QoS::AtLeastOnce, true) {
                tracing::warn!(device, error = %e, "cannot publish the switch state");
            }
        }
        Err(e) => eprintln!("covo run: switch {device} {level}: {e:?}"),
    }
}

/// Starts a chat turn as a task of `turns`; it waits for the session's previous turn.
#[allow(clippy::too_many_arguments)]
fn start_chat(
    rt: &Arc<Runtime>,
    model: &Option<Arc<dyn ChatModel>>,
    link: &PeerLink,
    t: &RunTopics,
    agents: &mut HashMap<String, Arc<tokio::sync::Mutex<Agent>>>,
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
    let agent = agents
        .entry(session.clone())
        .or_insert_with(|| {
            let s = agent::new_session(rt, "mqtt", &format!("mqtt chat {session}"));
            Arc::new(tokio::sync::Mutex::new(Agent::new(
                rt.clone(),
                model.clone(),
                s,
            )))
        })
        .clone();
    let (rt, t, token) = (rt.clone(), t.clone(), stop.child_token());
    turns.spawn(async move {
        let mut agent = agent.lock().await;
        if let Some(link) = rt.peer_link() {
            chat_turn(link, &t, &mut agent, session, &text, &token).await;
        }
    });
    // Finished turns are reaped here, so the set stays small.
    while turns.try_join_next().is_some() {}
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
