//! The `mqtt` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "mqtt";

/// `mqtt_publish`.
pub static MQTT_PUBLISH: ToolSpec = ToolSpec {
    name: "mqtt_publish",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description:
        "Publish a message to an MQTT topic on the gateway's broker, within the topic allowlist.",
    params: r#"{"type":"object","properties":{"topic":{"type":"string"},"payload":{"type":["string","object","array","number","boolean"],"description":"non-strings are sent as JSON"},"qos":{"enum":[0,1,2],"default":0},"retain":{"type":"boolean","default":false}},"required":["topic","payload"],"additionalProperties":false}"#,
    keywords: "mqtt publish send message topic broker mosquitto pub iot retain qos",
};

/// `mqtt_wait_message`.
pub static MQTT_WAIT_MESSAGE: ToolSpec = ToolSpec {
    name: "mqtt_wait_message",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description:
        "Subscribe to a topic filter and return the first messages that arrive before the timeout.",
    params: r#"{"type":"object","properties":{"topic":{"type":"string","description":"filter, + and # allowed"},"count":{"type":"integer","minimum":1,"maximum":100,"default":1},"timeout_ms":{"type":"integer","minimum":0,"maximum":300000,"default":10000}},"required":["topic"],"additionalProperties":false}"#,
    keywords: "mqtt subscribe wait listen receive message topic broker incoming",
};

/// `mqtt_retained_get`.
pub static MQTT_RETAINED_GET: ToolSpec = ToolSpec {
    name: "mqtt_retained_get",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Read the retained message currently stored on an MQTT topic.",
    params: r#"{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"],"additionalProperties":false}"#,
    keywords: "mqtt retained message last value topic state get read broker",
};

/// `ha_announce`.
pub static HA_ANNOUNCE: ToolSpec = ToolSpec {
        name: "ha_announce",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Publish Home Assistant MQTT discovery config for a board sensor or actuator so it appears in Home Assistant.",
 params: r#"{"type":"object","properties":{"device":{"type":"string","description":"declared device name, e.g. climate"},"component":{"enum":["sensor","binary_sensor","switch","fan","light"]},"name":{"type":"string","description":"friendly name"}},"required":["device"],"additionalProperties":false}"#,
 keywords: "home assistant hass homeassistant discovery announce expose entity integrate dashboard mqtt auto discover show up appear add",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &MQTT_PUBLISH,
    &MQTT_WAIT_MESSAGE,
    &MQTT_RETAINED_GET,
    &HA_ANNOUNCE,
];
