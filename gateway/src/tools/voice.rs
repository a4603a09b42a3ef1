//! The `voice` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "voice";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "voice_say",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Speak a short text aloud on the gateway's speaker.",
            params: r#"{"type":"object","properties":{"text":{"type":"string","maxLength":500},"voice":{"type":"string"}},"required":["text"],"additionalProperties":false}"#,
            keywords: "voice say speak aloud talk announce tts speaker audio out loud",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "voice_record",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Record from the gateway's microphone. Returns an audio artifact id.",
            params: r#"{"type":"object","properties":{"seconds":{"type":"number","minimum":1,"maximum":30,"default":5}},"additionalProperties":false}"#,
            keywords: "voice record microphone mic listen audio capture sound hear",
        },
        exec: Exec::Missing,
    },
];
