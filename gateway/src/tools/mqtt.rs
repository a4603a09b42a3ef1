//! The `mqtt` toolset.

use crate::error::CallError;
use crate::exec::Cx;
use crate::spec::{Need, ToolDef};
use covo_board::driver::HaComponent;
use covo_core::catalog::mqtt as c;
use covo_wire::mqtt::QoS;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::MQTT_PUBLISH, mqtt_publish).needs(Need::Broker),
    ToolDef::local(&c::MQTT_WAIT_MESSAGE, mqtt_wait_message).needs(Need::Broker),
    ToolDef::local(&c::MQTT_RETAINED_GET, mqtt_retained_get).needs(Need::Broker),
    ToolDef::local(&c::HA_ANNOUNCE, ha_announce).needs(Need::Broker),
];

/// How long `mqtt_retained_get` waits for a retained message before reporting none.
pub const RETAINED_WAIT: Duration = Duration::from_millis(1000);

fn topic_arg<'a>(cx: &Cx<'_>, args: &'a Value) -> Result<&'a str, CallError> {
    args.get("topic")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| cx.fail("'topic' is required"))
}

fn mqtt_publish(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let link = cx.peer_link()?;
    let topic = topic_arg(cx, &args)?;
    if topic.contains(['+', '#']) {
        return Err(cx.fail("a publish topic cannot contain the wildcards + or #"));
    }
    let payload = match &args["payload"] {
        Value::String(s) => s.clone().into_bytes(),
        v => v.to_string().into_bytes(),
    };
    let qos = match args.get("qos").and_then(Value::as_u64).unwrap_or(0) {
        2 => QoS::ExactlyOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::AtMostOnce,
    };
    let retain = args.get("retain").and_then(Value::as_bool).unwrap_or(false);
    let bytes = payload.len();
    link.publish(topic, payload, qos, retain)
        .map_err(|e| cx.fail(e))?;
    Ok(json!({"topic": topic, "bytes": bytes, "qos": qos as u8, "retain": retain, "queued": true}))
}

fn message_json(m: &crate::link::Message) -> Value {
    json!({"topic": m.topic, "payload": m.payload_json(), "retained": m.retain})
}

/// The longest `mqtt_wait_message` waits (the schema's maximum), like the other wait tools.
pub const MAX_WAIT_MS: u64 = 300_000;
/// The most messages one `mqtt_wait_message` collects (the schema's maximum).
pub const MAX_MESSAGES: u64 = 100;

fn mqtt_wait_message(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let link = cx.peer_link()?;
    let filter = topic_arg(cx, &args)?;
    // The schema bounds both; the clamps keep the executor safe whoever calls it.
    let count = args
        .get("count")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .clamp(1, MAX_MESSAGES) as usize;
    let timeout = Duration::from_millis(
        args.get("timeout_ms")
            .and_then(Value::as_u64)
            .unwrap_or(10_000)
            .min(MAX_WAIT_MS),
    );
    let (id, rx) = link.subscribe(filter).map_err(|e| cx.fail(e))?;
    let end = Instant::now() + timeout;
    let mut messages = Vec::new();
    while messages.len() < count {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            // A stored retained message is old state (mqtt_retained_get reads those): wait for
            // messages published from now on.
            Ok(m) if m.retain => {}
            Ok(m) => messages.push(message_json(&m)),
            Err(_) => break,
        }
    }
    link.unsubscribe(id);
    let timed_out = messages.len() < count;
    Ok(json!({"topic": filter, "messages": messages, "timed_out": timed_out}))
}

fn mqtt_retained_get(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let link = cx.peer_link()?;
    let topic = topic_arg(cx, &args)?;
    if topic.contains(['+', '#']) {
        return Err(cx.fail("give one topic, without the wildcards + or #"));
    }
    let (id, rx) = link.subscribe(topic).map_err(|e| cx.fail(e))?;
    let end = Instant::now() + RETAINED_WAIT;
    let mut found = None;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(m) if m.retain && m.topic == topic => {
                found = Some(m);
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    link.unsubscribe(id);
    Ok(match found {
        Some(m) => json!({"topic": topic, "retained": true, "payload": m.payload_json()}),
        None => json!({"topic": topic, "retained": false, "payload": null}),
    })
}

fn ha_announce(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let link = cx.peer_link()?;
    let name = args["device"].as_str().unwrap_or_default();
    let board = cx.board().def();
    let Some(d) = board.device(name) else {
        let known: Vec<&str> = board.device.iter().map(|d| d.name.as_str()).collect();
        return Err(cx.fail(format!(
            "no declared device '{name}' (declared: {})",
            known.join(", ")
        )));
    };
    let t = crate::ha::HaTopics {
        prefix: link.prefix().to_string(),
        gateway: link.gateway_id().to_string(),
    };
    let configs = crate::ha::configs_for(&t, board, d, args["name"].as_str());
    let component = d
        .driver
        .info()
        .ha_component
        .unwrap_or(HaComponent::Sensor)
        .as_str();
    if let Some(want) = args["component"].as_str() {
        if want != component {
            return Err(cx.fail(format!(
                "'{name}' ({}) is announced as a {component}, not a {want}",
                d.driver
            )));
        }
    }
    if configs.is_empty() {
        return Err(cx.fail(format!(
            "'{name}' ({}) has nothing Home Assistant can show: only sensors and gpio_out devices are announced",
            d.driver
        )));
    }
    let mut topics = Vec::new();
    for (topic, v) in &configs {
        link.publish(topic, v.to_string().into_bytes(), QoS::AtLeastOnce, true)
            .map_err(|e| cx.fail(e))?;
        topics.push(topic.clone());
    }
    Ok(json!({"device": name, "component": component, "topics": topics}))
}
