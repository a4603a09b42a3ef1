//! The `voice` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "voice";

/// `voice_say`.
pub static VOICE_SAY: ToolSpec = ToolSpec {
    name: "voice_say",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Actuate,
    description: "Speak a short text aloud on the gateway's speaker.",
    params: r#"{"type":"object","properties":{"text":{"type":"string","maxLength":500},"voice":{"type":"string"}},"required":["text"],"additionalProperties":false}"#,
    keywords: "voice say speak aloud talk announce tts speaker audio out loud read",
};

/// `voice_record`.
pub static VOICE_RECORD: ToolSpec = ToolSpec {
    name: "voice_record",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Record from the gateway's microphone. Returns an audio artifact id.",
    params: r#"{"type":"object","properties":{"seconds":{"type":"number","minimum":1,"maximum":30,"default":5}},"additionalProperties":false}"#,
    keywords: "voice record microphone mic listen audio capture sound hear seconds",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&VOICE_SAY, &VOICE_RECORD];
