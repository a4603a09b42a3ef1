//! `voice_say`, `voice_record` and `camera_snapshot` through the CLI and the whole pipeline,
//! with real programs: espeak-ng, ALSA's arecord on its `null` device, and a capture command
//! that draws a real PNG (colour bars, like a camera's test pattern).

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Writes a PNG of colour bars of the given size: a stand-in for a camera's test source.
const BARS: &str = r#"
import struct, sys, zlib
out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bars = [(255,255,255),(255,255,0),(0,255,255),(0,255,0),(255,0,255),(255,0,0),(0,0,255),(0,0,0)]
row = b"".join(bytes(bars[x * 8 // w]) for x in range(w))
raw = b"".join(b"\x00" + row for _ in range(h))
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(out, "wb").write(png)
"#;

fn covo(home: &Path, config: &str, args: &[&str]) -> (i32, Value) {
    let cfg = home.join("covo.toml");
    std::fs::write(&cfg, config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_covo"));
    cmd.arg("--config")
        .arg(&cfg)
        .args(args)
        .env("COVO_HOME", home.join("home"))
        .env_remove("COVO_CONFIG");
    covo_tests::bins::json(&mut cmd)
}

fn artifact(home: &Path, id: &str) -> Vec<u8> {
    let dir = home.join("home/artifacts");
    let f = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(id))
        .unwrap_or_else(|| panic!("{id} in {}", dir.display()));
    std::fs::read(f.path()).unwrap()
}

/// (sample rate, channels, bits, data bytes) of a PCM WAV, from its header.
fn wav(b: &[u8]) -> (u32, u16, u16, usize) {
    assert_eq!(&b[0..4], b"RIFF");
    assert_eq!(&b[8..12], b"WAVE");
    let (mut at, mut fmt, mut data) = (12, None, None);
    while at + 8 <= b.len() {
        let size = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
        match &b[at..at + 4] {
            b"fmt " => {
                let f = &b[at + 8..];
                fmt = Some((
                    u32::from_le_bytes(f[4..8].try_into().unwrap()),
                    u16::from_le_bytes(f[2..4].try_into().unwrap()),
                    u16::from_le_bytes(f[14..16].try_into().unwrap()),
                ));
            }
            b"data" => data = Some(size.min(b.len() - at - 8)),
            _ => {}
        }
        at += 8 + size + (size & 1);
    }
    let (r, c, bits) = fmt.unwrap();
    (r, c, bits, data.unwrap())
}

const VOICE: &str = "[voice]\ndevice = \"null\"\nsay_to = \"artifact\"\n";

#[test]
fn voice_record_from_alsas_null_device_gives_a_wav_of_the_asked_length() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = covo(
        dir.path(),
        VOICE,
        &["tools", "call", "voice_record", r#"{"seconds":2}"#],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["seconds"], 2.0);
    let b = artifact(dir.path(), v["artifact"].as_str().unwrap());
    assert_eq!(wav(&b), (16000, 1, 16, 2 * 16000 * 2));
}

#[test]
fn voice_say_speaks_into_a_wav_artifact_that_is_long_enough_for_its_words() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = covo(
        dir.path(),
        VOICE,
        &[
            "tools",
            "call",
            "--yes",
            "voice_say",
            r#"{"text":"The greenhouse is twenty one degrees and the pump is off."}"#,
        ],
    );
    assert_eq!(code, 0, "{v}");
    let b = artifact(dir.path(), v["artifact"].as_str().unwrap());
    let (rate, ch, bits, data) = wav(&b);
    assert_eq!((ch, bits), (1, 16));
    let secs = data as f64 / (rate as f64 * 2.0);
    assert!((1.5..10.0).contains(&secs), "{secs} s of speech");
    // Audible, not silence.
    let loud = b[44..]
        .chunks(2)
        .filter(|s| i16::from_le_bytes([s[0], s[1]]).unsigned_abs() > 1000)
        .count();
    assert!(loud > 1000, "{loud} loud samples");
    // A text that looks like options is spoken, not obeyed.
    let (code, v) = covo(
        dir.path(),
        VOICE,
        &[
            "tools",
            "call",
            "--yes",
            "voice_say",
            r#"{"text":"--help -w /etc/passwd"}"#,
        ],
    );
    assert_eq!(code, 0, "{v}");
    let (code, v) = covo(
        dir.path(),
        VOICE,
        &[
            "tools",
            "call",
            "--yes",
            "voice_say",
            r#"{"text":"hi","voice":"-w /tmp/x"}"#,
        ],
    );
    assert_ne!(code, 0);
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{v}");
}

#[test]
fn camera_snapshot_stores_the_image_the_capture_command_made() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[camera]\ncommand = [\"python3\", \"-c\", {:?}, \"{{output}}\", \"{{width}}\", \"{{height}}\"]\n",
        BARS
    );
    let (code, v) = covo(
        dir.path(),
        &cfg,
        &[
            "tools",
            "call",
            "camera_snapshot",
            r#"{"width":320,"height":240}"#,
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["content_type"], "image/png");
    let b = artifact(dir.path(), v["artifact"].as_str().unwrap());
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&b[12..16], b"IHDR");
    let w = u32::from_be_bytes(b[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(b[20..24].try_into().unwrap());
    assert_eq!((w, h), (320, 240));

    // A command that writes no image is an error, not an empty artifact.
    let (code, v) = covo(
        dir.path(),
        "[camera]\ncommand = [\"true\"]\n",
        &["tools", "call", "camera_snapshot", "{}"],
    );
    assert_ne!(code, 0);
    assert!(v["error"].to_string().contains("wrote no image"), "{v}");
}

#[test]
fn without_a_sound_card_or_camera_the_tools_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let (_, list) = covo(dir.path(), "", &["tools", "list", "--json"]);
    let row = |n: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .unwrap()
            .clone()
    };
    let cards = std::fs::read_to_string("/proc/asound/cards").unwrap_or_default();
    if cards.trim().is_empty() || cards.contains("no soundcards") {
        for t in ["voice_say", "voice_record"] {
            assert_eq!(row(t)["available"], false, "{}", row(t));
            assert!(row(t)["reason"].as_str().unwrap().contains("no sound card"));
        }
    } else {
        assert_eq!(row("voice_record")["available"], true);
    }
    let video = std::fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("video"));
    if !video && which("rpicam-still").is_none() {
        let r = row("camera_snapshot");
        assert_eq!(r["available"], false, "{r}");
        assert!(r["reason"].as_str().unwrap().contains("no camera"), "{r}");
    }
}

fn which(p: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(p))
        .find(|p| p.is_file())
}
