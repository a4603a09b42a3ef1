//! The `voice` toolset and `camera_snapshot`: the board's speaker, microphone and camera,
//! through the programs a Pi image has: `espeak-ng` and ALSA's `aplay`/`arecord` (`[voice]`),
//! `rpicam-still` or `ffmpeg` from V4L2, or a configured capture command (`[camera]`). What they
//! produce comes back as an artifact (WAV, PNG or JPEG). On a board without a sound card or a
//! camera these tools are unavailable, with the reason.

use super::command::{find_program, Cmd};
use crate::config::Config;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::{AvailCx, ToolDef};
use covo_core::catalog::{media, voice as c};
use covo_core::spec::Availability;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::VOICE_SAY, voice_say).when(can_say),
    ToolDef::local(&c::VOICE_RECORD, voice_record).when(can_record),
];

/// `camera_snapshot`, listed with the media toolset.
pub(crate) const CAMERA: ToolDef =
    ToolDef::local(&media::CAMERA_SNAPSHOT, camera_snapshot).when(has_camera);

/// How long speaking, recording or capturing may take.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The largest image a capture may produce.
const MAX_IMAGE: u64 = 16 * 1024 * 1024;

fn device(config: &Config) -> &str {
    config.voice.device.as_deref().unwrap_or("default")
}

/// Whether ALSA has a sound card: `/proc/asound/cards` lists one. A device other than
/// `default` (such as `null`, or a named plugin) is taken as the user's word.
fn sound(config: &Config) -> Result<(), String> {
    if device(config) != "default" {
        return Ok(());
    }
    let cards = std::fs::read_to_string("/proc/asound/cards").unwrap_or_default();
    if cards.trim().is_empty() || cards.contains("no soundcards") {
        return Err(
            "this board has no sound card (/proc/asound/cards lists none); set [voice] \
                    device, or say_to = \"artifact\" for voice_say"
                .into(),
        );
    }
    Ok(())
}

fn needs(programs: &[&str]) -> Result<(), String> {
    match programs.iter().find(|p| find_program(p).is_none()) {
        Some(p) => Err(format!(
            "{p} is not installed ({})",
            match *p {
                "espeak-ng" => "apt install espeak-ng",
                _ => "apt install alsa-utils",
            }
        )),
        None => Ok(()),
    }
}

fn to_artifact(config: &Config) -> bool {
    config.voice.say_to.as_deref() == Some("artifact")
}

fn can_say(cx: &AvailCx<'_>) -> Availability {
    let config = cx.config;
    let r = if to_artifact(config) {
        needs(&["espeak-ng"])
    } else {
        needs(&["espeak-ng", "aplay"]).and_then(|()| sound(config))
    };
    r.map_or_else(Availability::no, |()| Availability::yes())
}

fn can_record(cx: &AvailCx<'_>) -> Availability {
    needs(&["arecord"])
        .and_then(|()| sound(cx.config))
        .map_or_else(Availability::no, |()| Availability::yes())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SayArgs {
    text: String,
    voice: Option<String>,
}

fn voice_say(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SayArgs = cx.args(args)?;
    let voice = a.voice.as_deref().unwrap_or("en");
    if voice.is_empty()
        || voice.len() > 40
        || !voice
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+".contains(c))
    {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/voice",
            "an espeak-ng voice such as en, en-us or de (espeak-ng --voices lists them)",
        )
        .into());
    }
    let dir = tempfile::tempdir().map_err(|e| cx.fail(format!("no temporary folder: {e}")))?;
    let text_file = dir.path().join("text.txt");
    let wav = dir.path().join("say.wav");
    std::fs::write(&text_file, &a.text).map_err(|e| cx.fail(e.to_string()))?;
    // The text goes in a file: never read as an option, whatever it says.
    Cmd::new("espeak-ng", TIMEOUT).run(
        cx,
        &[
            "-v",
            voice,
            "-w",
            &wav.display().to_string(),
            "-f",
            &text_file.display().to_string(),
        ],
    )?;
    let bytes = std::fs::read(&wav).map_err(|e| cx.fail(e.to_string()))?;
    let seconds = wav_seconds(&bytes);
    if to_artifact(cx.config()) {
        let (id, _) = crate::artifacts::save(cx.home(), &bytes, "audio/wav")
            .map_err(|e| cx.fail(format!("cannot store the recording: {e}")))?;
        return Ok(json!({"artifact": id, "content_type": "audio/wav", "seconds": seconds}));
    }
    let dev = device(cx.config()).to_string();
    Cmd::new("aplay", TIMEOUT).run(cx, &["-q", "-D", &dev, &wav.display().to_string()])?;
    Ok(json!({"spoken": true, "device": dev, "seconds": seconds}))
}

/// The length of a PCM WAV in seconds, from its header (`fmt ` byte rate, `data` size).
pub fn wav_seconds(b: &[u8]) -> Option<f64> {
    if b.len() < 12 || &b[0..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return None;
    }
    let (mut at, mut rate, mut data) = (12usize, None, None);
    while at + 8 <= b.len() {
        let id = &b[at..at + 4];
        let size = u32::from_le_bytes(b[at + 4..at + 8].try_into().ok()?) as usize;
        let body = at + 8;
        if id == b"fmt " && body + 12 <= b.len() {
            rate = Some(u32::from_le_bytes(b[body + 8..body + 12].try_into().ok()?));
        }
        if id == b"data" {
            // espeak-ng streaming to a file may leave the size at 0x7fffffff: use what is there.
            data = Some(size.min(b.len() - body));
        }
        at = body + size + (size & 1);
    }
    let (rate, data) = (rate?, data?);
    (rate > 0).then(|| (data as f64 / rate as f64 * 100.0).round() / 100.0)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordArgs {
    #[serde(default = "five")]
    seconds: f64,
}

fn five() -> f64 {
    5.0
}

fn voice_record(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: RecordArgs = cx.args(args)?;
    // arecord counts whole seconds.
    let secs = a.seconds.clamp(1.0, 30.0).ceil() as u32;
    let dir = tempfile::tempdir().map_err(|e| cx.fail(format!("no temporary folder: {e}")))?;
    let wav = dir.path().join("rec.wav");
    let dev = device(cx.config()).to_string();
    Cmd::new("arecord", Duration::from_secs(u64::from(secs) + 10)).run(
        cx,
        &[
            "-q",
            "-D",
            &dev,
            "-f",
            "S16_LE",
            "-r",
            "16000",
            "-c",
            "1",
            "-d",
            &secs.to_string(),
            &wav.display().to_string(),
        ],
    )?;
    let bytes = std::fs::read(&wav).map_err(|e| cx.fail(e.to_string()))?;
    let (id, _) = crate::artifacts::save(cx.home(), &bytes, "audio/wav")
        .map_err(|e| cx.fail(format!("cannot store the recording: {e}")))?;
    Ok(json!({
        "artifact": id,
        "content_type": "audio/wav",
        "seconds": wav_seconds(&bytes),
        "rate_hz": 16000,
        "device": dev,
    }))
}

// ---- camera -------------------------------------------------------------------------------

/// The capture command: configured, else `rpicam-still`, else `ffmpeg` from `/dev/video0`.
fn capture_command(config: &Config) -> Result<Vec<String>, String> {
    if let Some(cmd) = &config.camera.command {
        let prog = cmd.first().ok_or("[camera] command is empty")?;
        if find_program(prog).is_none() && !Path::new(prog).is_file() {
            return Err(format!("the camera command {prog} is not installed"));
        }
        return Ok(cmd.clone());
    }
    if find_program("rpicam-still").is_some() {
        return Ok([
            "rpicam-still",
            "-n",
            "-t",
            "1",
            "--width",
            "{width}",
            "--height",
            "{height}",
            "-e",
            "jpg",
            "-o",
            "{output}",
        ]
        .map(String::from)
        .to_vec());
    }
    let video = std::fs::read_dir("/dev")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("video"))
        })
        .unwrap_or(false);
    if !video {
        return Err(
            "no camera: rpicam-still is not installed and there is no /dev/video* \
                    device (set [camera] command for another capture program)"
                .into(),
        );
    }
    if find_program("ffmpeg").is_none() {
        return Err(
            "a V4L2 camera is present, but ffmpeg (which captures from it) is not \
                    installed"
                .into(),
        );
    }
    Ok([
        "ffmpeg",
        "-loglevel",
        "error",
        "-y",
        "-f",
        "v4l2",
        "-video_size",
        "{width}x{height}",
        "-i",
        "{device}",
        "-frames:v",
        "1",
        "{output}",
    ]
    .map(String::from)
    .to_vec())
}

fn has_camera(cx: &AvailCx<'_>) -> Availability {
    capture_command(cx.config).map_or_else(Availability::no, |_| Availability::yes())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapArgs {
    camera: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
}

fn image_type(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else {
        None
    }
}

fn camera_snapshot(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SnapArgs = cx.args(args)?;
    let (w, h) = (
        a.width.unwrap_or(1280).clamp(16, 4608),
        a.height.unwrap_or(720).clamp(16, 3456),
    );
    let device = a.camera.unwrap_or_else(|| "/dev/video0".into());
    if !device.starts_with("/dev/video") || device.contains("..") {
        return Err(ToolError::invalid(cx.tool.name, "/camera", "a /dev/videoN device").into());
    }
    let argv = capture_command(cx.config()).map_err(|e| cx.fail(e))?;
    let dir = tempfile::tempdir().map_err(|e| cx.fail(format!("no temporary folder: {e}")))?;
    let out = dir.path().join("snapshot.img");
    let fill = |s: &str| {
        s.replace("{output}", &out.display().to_string())
            .replace("{width}", &w.to_string())
            .replace("{height}", &h.to_string())
            .replace("{device}", &device)
    };
    let filled: Vec<String> = argv.iter().map(|s| fill(s)).collect();
    let args: Vec<&str> = filled[1..].iter().map(String::as_str).collect();
    Cmd::new(filled[0].clone(), TIMEOUT).run(cx, &args)?;
    let size = std::fs::metadata(&out)
        .map_err(|_| {
            cx.fail(format!(
                "the capture command ({}) wrote no image",
                filled[0]
            ))
        })?
        .len();
    if size > MAX_IMAGE {
        return Err(cx.fail(format!("the image is larger than {} MiB", MAX_IMAGE >> 20)));
    }
    let bytes = std::fs::read(&out).map_err(|e| cx.fail(e.to_string()))?;
    let kind = image_type(&bytes).ok_or_else(|| {
        cx.fail(format!(
            "the capture command ({}) wrote something that is not a PNG or JPEG",
            filled[0]
        ))
    })?;
    let (id, _) = crate::artifacts::save(cx.home(), &bytes, kind)
        .map_err(|e| cx.fail(format!("cannot store the image: {e}")))?;
    Ok(json!({
        "artifact": id,
        "content_type": kind,
        "bytes": bytes.len(),
        "requested": {"width": w, "height": h},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wav_length_comes_from_the_header() {
        let mut w =
            b"RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0\0\x7d\0\0\x02\0\x10\0data"
                .to_vec();
        w.extend_from_slice(&32000u32.to_le_bytes());
        w.extend(vec![0u8; 32000]);
        assert_eq!(wav_seconds(&w), Some(1.0));
        assert_eq!(wav_seconds(b"not a wav"), None);
    }
}
