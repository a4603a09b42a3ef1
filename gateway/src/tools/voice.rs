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
            description: "Speak a short text on the gateway's speaker.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
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
            description: "Record a few seconds from the gateway's microphone as an audio artifact.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
