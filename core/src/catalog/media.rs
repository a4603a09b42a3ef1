//! The `media` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "media";

/// `image_generate`.
pub static IMAGE_GENERATE: ToolSpec = ToolSpec {
    name: "image_generate",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING,
    runs: Runs::Peer,
    effect: Effect::Write,
    description:
        "Generate an image from a prompt with the peer's image model. Returns an artifact id.",
    params: r#"{"type":"object","properties":{"prompt":{"type":"string"},"size":{"enum":["512x512","1024x1024"],"default":"1024x1024"}},"required":["prompt"],"additionalProperties":false}"#,
    keywords: "image generate create make draw paint painting picture illustration art artwork logo dall-e stable diffusion",
};

/// `image_describe`.
pub static IMAGE_DESCRIBE: ToolSpec = ToolSpec {
        name: "image_describe",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING.or(Profiles::EDGE),
        runs: Runs::Peer,
        effect: Effect::Read,
        description: "Describe or answer a question about an image, such as a camera snapshot, with the peer's vision model.",
 params: r#"{"type":"object","properties":{"image":{"type":"string","description":"artifact id"},"question":{"type":"string","description":"default: describe the image"}},"required":["image"],"additionalProperties":false}"#,
 keywords: "image describe vision look at see photo picture camera snapshot what is in recognize analyse caption ocr identify",
};

/// `tts_synthesize`.
pub static TTS_SYNTHESIZE: ToolSpec = ToolSpec {
    name: "tts_synthesize",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING,
    runs: Runs::Peer,
    effect: Effect::Write,
    description: "Turn text into speech audio on the peer. Returns an audio artifact id.",
    params: r#"{"type":"object","properties":{"text":{"type":"string"},"voice":{"type":"string"}},"required":["text"],"additionalProperties":false}"#,
    keywords: "text to speech tts synthesize voice audio file spoken mp3 wav",
};

/// `transcribe_audio`.
pub static TRANSCRIBE_AUDIO: ToolSpec = ToolSpec {
    name: "transcribe_audio",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING,
    runs: Runs::Peer,
    effect: Effect::Read,
    description: "Transcribe an audio artifact to text on the peer.",
    params: r#"{"type":"object","properties":{"audio":{"type":"string","description":"artifact id"},"language":{"type":"string","description":"e.g. en"}},"required":["audio"],"additionalProperties":false}"#,
    keywords: "transcribe speech to text stt audio recording dictation whisper memo",
};

/// `plot_series`.
pub static PLOT_SERIES: ToolSpec = ToolSpec {
    name: "plot_series",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Peer,
    effect: Effect::Read,
    description: "Render one or more time series as a PNG chart. Returns an image artifact id.",
    params: r#"{"type":"object","properties":{"series":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"},"points":{"type":"array","items":{"type":"array","items":{},"minItems":2,"maxItems":2},"description":"[time, value] pairs"},"sensor":{"type":"string","description":"or a sensor name"},"quantity":{"type":"string"},"window":{"type":"string","description":"e.g. 24h"}}}},"title":{"type":"string"},"y_label":{"type":"string"}},"required":["series"],"additionalProperties":false}"#,
    keywords:
        "plot chart graph visualize visualise line chart trend png image draw readings time series over",
};

/// `camera_snapshot`.
pub static CAMERA_SNAPSHOT: ToolSpec = ToolSpec {
    name: "camera_snapshot",
    toolset: TOOLSET,
    profiles: Profiles::EDGE,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Capture a still image from the board's camera. Returns an image artifact id.",
    params: r#"{"type":"object","properties":{"camera":{"type":"string","description":"device, default: first camera"},"width":{"type":"integer"},"height":{"type":"integer"}},"additionalProperties":false}"#,
    keywords:
        "camera snapshot photo picture image capture still webcam picam libcamera v4l2 take look snap pic",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &IMAGE_GENERATE,
    &IMAGE_DESCRIBE,
    &TTS_SYNTHESIZE,
    &TRANSCRIBE_AUDIO,
    &PLOT_SERIES,
    &CAMERA_SNAPSHOT,
];
