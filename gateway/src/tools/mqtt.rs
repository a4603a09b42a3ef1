//! The `mqtt` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "mqtt";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "mqtt_publish",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Publish a message to a topic (QoS, retain) on the gateway's broker, within the topic allowlist.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "mqtt_wait_message",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Subscribe to a topic filter and return the first message(s) that arrive before a timeout.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "mqtt_retained_get",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read the retained message currently stored on a topic.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "ha_announce",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Publish Home Assistant MQTT discovery config for a board sensor or actuator so it appears in Home Assistant.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
