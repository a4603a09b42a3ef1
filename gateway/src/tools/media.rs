//! The `media` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "media";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "image_generate",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Peer,
            effect: Effect::Write,
            description: "Generate an image from a prompt through the peer's image endpoint; returns an artifact reference.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "image_describe",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Describe or answer questions about an image (e.g. a camera snapshot) with the peer's vision model.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "tts_synthesize",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Peer,
            effect: Effect::Write,
            description: "Turn text into speech audio on the peer; returns an audio artifact.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "transcribe_audio",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Transcribe an audio artifact to text on the peer.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "plot_series",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Render one or more time series (e.g. sensor history) as a PNG chart artifact.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "camera_snapshot",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Capture a still image from the board's camera (V4L2 or libcamera) as an artifact.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
