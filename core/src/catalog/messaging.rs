//! The `messaging` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "messaging";

/// `channel_list`.
pub static CHANNEL_LIST: ToolSpec = ToolSpec {
    name: "channel_list",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "List the channels this gateway can message on and whether each is connected.",
    params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
    keywords:
        "channels list messaging connected cli mqtt web telegram webhook chat contact where chats",
};

/// `notify`.
pub static NOTIFY: ToolSpec = ToolSpec {
    name: "notify",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Push an alert to the configured notification channels (MQTT topic, webhook).",
    params: r#"{"type":"object","properties":{"message":{"type":"string"},"priority":{"enum":["low","normal","high","urgent"],"default":"normal"},"title":{"type":"string"}},"required":["message"],"additionalProperties":false}"#,
    keywords: "notify notification alert alarm push warn phone message urgent priority ping page broadcast webhook ntfy pushover everyone chat",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&CHANNEL_LIST, &NOTIFY];
