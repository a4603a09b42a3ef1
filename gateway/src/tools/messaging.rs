//! The `messaging` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "messaging";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "channel_list",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description:
                "List the channels this gateway can message on and whether each is connected.",
            params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
            keywords: "channels list messaging connected cli mqtt web telegram webhook chat",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "notify",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description:
                "Push an alert to the configured notification channels (MQTT topic, webhook).",
            params: r#"{"type":"object","properties":{"message":{"type":"string"},"priority":{"enum":["low","normal","high","urgent"],"default":"normal"},"title":{"type":"string"}},"required":["message"],"additionalProperties":false}"#,
            keywords:
                "notify notification alert alarm push warn phone message urgent priority ping page",
        },
        exec: Exec::Missing,
    },
];
