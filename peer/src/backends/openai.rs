//! The media tools through an OpenAI-compatible API (`[peer.backends.openai]`), and
//! `tts_synthesize` through a local `espeak-ng` (`[peer.backends.tts] engine = "espeak-ng"`).
//!
//! - `image_generate`: `POST {base}/images/generations` with `response_format: b64_json`.
//! - `image_describe`: `POST {base}/chat/completions` with an `image_url` content part.
//! - `tts_synthesize`: `espeak-ng --stdout` (WAV) or `POST {base}/audio/speech`.
//! - `transcribe_audio`: `POST {base}/audio/transcriptions` as `multipart/form-data`
//!   (`covo::multipart::form`).
//!
//! Artifacts travel as base64 inside the result, capped at [`MAX_ARTIFACT_BYTES`]; a response
//! over 512 KiB is sent in chunks (`peer::mqtt::publish_response`), and the gateway stores each
//! artifact as a file and gives the model its id (`crate::artifacts`). Input artifacts
//! (`image`, `audio`) are accepted as a `data:` URL or bare base64 (and, for `image`, an
//! http(s) URL the vision model fetches itself); the gateway turns its own artifact ids into
//! `data:` URLs before it forwards a call, so an id reaching the peer is unknown here and fails
//! with a hint.

use covo_core::catalog;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use super::http::{self, Request};
use super::{OpenAiConfig, TtsConfig};
use covo_core::error::ToolError;

pub(super) const IMAGE_GENERATE: &str = catalog::media::IMAGE_GENERATE.name;
pub(super) const IMAGE_DESCRIBE: &str = catalog::media::IMAGE_DESCRIBE.name;
pub(super) const TTS: &str = catalog::media::TTS_SYNTHESIZE.name;
pub(super) const TRANSCRIBE: &str = catalog::media::TRANSCRIBE_AUDIO.name;

/// Largest artifact carried inline, in decoded bytes (base64 adds a third on the wire).
pub(super) const MAX_ARTIFACT_BYTES: usize = 8 * 1024 * 1024;
/// Room for base64 and JSON around an inline artifact in an API answer.
const MAX_ANSWER_BYTES: usize = MAX_ARTIFACT_BYTES / 3 * 4 + 64 * 1024;

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// How speech is made.
#[derive(Debug)]
enum Speech {
    Espeak(PathBuf),
    Api(String),
}

#[derive(Debug)]
pub(super) struct Media {
    base_url: Option<String>,
    api_key: Option<String>,
    image_model: Option<String>,
    vision_model: Option<String>,
    transcription_model: Option<String>,
    speech: Option<Speech>,
}

impl Media {
    pub(super) fn new(cfg: &OpenAiConfig, tts: &TtsConfig) -> Media {
        let base_url = cfg.base_url.clone().filter(|u| !u.is_empty());
        let with_base =
            |m: &Option<String>| base_url.as_ref().and(m.clone().filter(|m| !m.is_empty()));
        let speech = match tts.engine.as_deref() {
            Some("espeak-ng") => find_espeak(tts.espeak_path.clone()).map(Speech::Espeak),
            _ => with_base(&cfg.speech_model).map(Speech::Api),
        };
        Media {
            base_url: base_url.clone(),
            api_key: cfg.api_key.clone(),
            image_model: with_base(&cfg.image_model),
            vision_model: with_base(&cfg.vision_model),
            transcription_model: with_base(&cfg.transcription_model),
            speech,
        }
    }

    /// The tools this configuration can serve.
    pub(super) fn tools(&self) -> Vec<&'static str> {
        let mut t = Vec::new();
        if self.image_model.is_some() {
            t.push(IMAGE_GENERATE);
        }
        if self.vision_model.is_some() {
            t.push(IMAGE_DESCRIBE);
        }
        if self.speech.is_some() {
            t.push(TTS);
        }
        if self.transcription_model.is_some() {
            t.push(TRANSCRIBE);
        }
        t
    }

    pub(super) fn run(
        &self,
        tool: &str,
        args: &Value,
        deadline: Instant,
    ) -> Result<Value, ToolError> {
        match tool {
            IMAGE_GENERATE => self.image_generate(args, deadline),
            IMAGE_DESCRIBE => self.image_describe(args, deadline),
            TTS => self.tts(args, deadline),
            TRANSCRIBE => self.transcribe(args, deadline),
            _ => Err(ToolError::Unavailable {
                tool: tool.into(),
                reason: "not a media tool".into(),
            }),
        }
    }

    fn base(&self) -> &str {
        self.base_url.as_deref().unwrap_or("")
    }

    fn image_generate(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let model = self.image_model.as_deref().unwrap_or("");
        let prompt = str_arg(IMAGE_GENERATE, args, "prompt")?;
        let size = args
            .get("size")
            .and_then(Value::as_str)
            .unwrap_or("1024x1024");
        let body = json!({"model": model, "prompt": prompt, "n": 1, "size": size,
                          "response_format": "b64_json"});
        let url = http::endpoint(IMAGE_GENERATE, self.base(), "images/generations")?;
        let req = Request::post_json(url, &body)
            .bearer(self.api_key.as_deref())
            .max_bytes(MAX_ANSWER_BYTES);
        let v = http::json(IMAGE_GENERATE, req, deadline)?;
        let first = &v["data"][0];
        let encoded = first["b64_json"]
            .as_str()
            .ok_or_else(|| ToolError::Failed {
                tool: IMAGE_GENERATE.into(),
                message: "the answer has no data[0].b64_json".into(),
                hint: Some("the endpoint must support response_format b64_json".into()),
            })?;
        let bytes = b64().decode(encoded).map_err(|e| {
            ToolError::failed(
                IMAGE_GENERATE,
                format!("the image is not valid base64: {e}"),
            )
        })?;
        let mut out =
            json!({"artifact": artifact(IMAGE_GENERATE, &bytes, "image/png")?, "model": model});
        if let Some(r) = first["revised_prompt"].as_str() {
            out["revised_prompt"] = json!(r);
        }
        Ok(out)
    }

    fn image_describe(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let model = self.vision_model.as_deref().unwrap_or("");
        let image = str_arg(IMAGE_DESCRIBE, args, "image")?;
        let question = args
            .get("question")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
            .unwrap_or("Describe this image.");
        let image_url = if image.starts_with("http://") || image.starts_with("https://") {
            image.to_string()
        } else {
            let (mime, bytes) = input_bytes(IMAGE_DESCRIBE, "/image", image, "image/")?;
            format!("data:{mime};base64,{}", b64().encode(bytes))
        };
        let body = json!({
            "model": model,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": question},
                {"type": "image_url", "image_url": {"url": image_url}}
            ]}],
            "max_tokens": 1000
        });
        let url = http::endpoint(IMAGE_DESCRIBE, self.base(), "chat/completions")?;
        let req = Request::post_json(url, &body).bearer(self.api_key.as_deref());
        let v = http::json(IMAGE_DESCRIBE, req, deadline)?;
        let text = v["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| {
                ToolError::failed(
                    IMAGE_DESCRIBE,
                    "the answer has no choices[0].message.content",
                )
            })?;
        Ok(json!({"text": text, "model": model}))
    }

    fn tts(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let text = str_arg(TTS, args, "text")?;
        let voice = args.get("voice").and_then(Value::as_str);
        match &self.speech {
            Some(Speech::Espeak(bin)) => espeak(bin, text, voice, deadline),
            Some(Speech::Api(model)) => {
                let body = json!({"model": model, "input": text, "voice": voice.unwrap_or("alloy"),
                                  "response_format": "wav"});
                let url = http::endpoint(TTS, self.base(), "audio/speech")?;
                let shown = http::redacted(&url);
                let req = Request::post_json(url, &body)
                    .bearer(self.api_key.as_deref())
                    .max_bytes(MAX_ARTIFACT_BYTES);
                let resp = http::send(TTS, req, deadline)?;
                if !(200..300).contains(&resp.status) {
                    return Err(http::status_error(TTS, &shown, &resp));
                }
                let ct = resp.content_type.split(';').next().unwrap_or("").trim();
                let ct = if ct.starts_with("audio/") {
                    ct
                } else {
                    "audio/wav"
                };
                Ok(
                    json!({"artifact": artifact(TTS, &resp.body, ct)?, "engine": "api", "model": model}),
                )
            }
            None => Err(ToolError::Unavailable {
                tool: TTS.into(),
                reason: "no speech engine configured".into(),
            }),
        }
    }

    fn transcribe(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let model = self.transcription_model.as_deref().unwrap_or("");
        let audio = str_arg(TRANSCRIBE, args, "audio")?;
        let (mime, bytes) = input_bytes(TRANSCRIBE, "/audio", audio, "audio/")?;
        let mut fields = vec![
            ("model", model.to_string()),
            ("response_format", "json".to_string()),
        ];
        if let Some(lang) = args.get("language").and_then(Value::as_str) {
            fields.push(("language", lang.to_string()));
        }
        let ext = extension(&mime);
        let (boundary, body) =
            covo::multipart::form(&fields, ("file", &format!("audio.{ext}"), &mime, &bytes));
        let url = http::endpoint(TRANSCRIBE, self.base(), "audio/transcriptions")?;
        let req = Request {
            method: reqwest::Method::POST,
            url,
            headers: vec![(
                "Content-Type".into(),
                format!("multipart/form-data; boundary={boundary}"),
            )],
            body: Some(body),
            max_bytes: 4 * 1024 * 1024,
        }
        .bearer(self.api_key.as_deref());
        let v = http::json(TRANSCRIBE, req, deadline)?;
        let text = v["text"]
            .as_str()
            .ok_or_else(|| ToolError::failed(TRANSCRIBE, "the answer has no text"))?;
        let mut out = json!({"text": text, "model": model});
        if let Some(l) = v["language"].as_str() {
            out["language"] = json!(l);
        }
        Ok(out)
    }
}

fn str_arg<'a>(tool: &str, args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid(tool, &format!("/{key}"), "expected a string"))
}

/// An inline artifact, refused past the cap.
fn artifact(tool: &str, bytes: &[u8], fallback_type: &str) -> Result<Value, ToolError> {
    if bytes.len() > MAX_ARTIFACT_BYTES {
        return Err(ToolError::Failed {
            tool: tool.into(),
            message: format!(
                "the result is {} bytes, over the {MAX_ARTIFACT_BYTES}-byte inline artifact cap",
                bytes.len()
            ),
            hint: Some("ask for a smaller output".into()),
        });
    }
    let content_type = sniff(bytes).unwrap_or(fallback_type);
    Ok(
        json!({"content_type": content_type, "bytes_base64": b64().encode(bytes), "size_bytes": bytes.len()}),
    )
}

/// The media type from the first bytes, for the common image and audio formats.
fn sniff(b: &[u8]) -> Option<&'static str> {
    let riff = |kind: &[u8]| b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == kind;
    Some(match b {
        [0x89, b'P', b'N', b'G', ..] => "image/png",
        [0xFF, 0xD8, 0xFF, ..] => "image/jpeg",
        [b'G', b'I', b'F', b'8', ..] => "image/gif",
        _ if riff(b"WEBP") => "image/webp",
        _ if riff(b"WAVE") => "audio/wav",
        [b'I', b'D', b'3', ..] => "audio/mpeg",
        [0xFF, x, ..] if x & 0xE0 == 0xE0 => "audio/mpeg",
        [b'O', b'g', b'g', b'S', ..] => "audio/ogg",
        [b'f', b'L', b'a', b'C', ..] => "audio/flac",
        _ => return None,
    })
}

fn extension(mime: &str) -> &'static str {
    match mime {
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/webm" => "webm",
        "audio/mp4" | "audio/m4a" => "m4a",
        _ => "wav",
    }
}

/// The bytes of an input artifact given as a `data:` URL or bare base64.
fn input_bytes(
    tool: &str,
    path: &str,
    s: &str,
    kind: &str,
) -> Result<(String, Vec<u8>), ToolError> {
    let (declared, encoded) = match s.strip_prefix("data:") {
        Some(rest) => {
            let (head, data) = rest
                .split_once(',')
                .ok_or_else(|| ToolError::invalid(tool, path, "a data: URL needs a comma"))?;
            let mime = head.split(';').next().unwrap_or("").to_string();
            if !head.ends_with(";base64") {
                return Err(ToolError::invalid(
                    tool,
                    path,
                    "only base64 data: URLs are accepted",
                ));
            }
            (Some(mime), data)
        }
        None => (None, s),
    };
    let cleaned: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = b64()
        .decode(cleaned.as_bytes())
        .map_err(|_| ToolError::Failed {
            tool: tool.into(),
            message: format!("{path}: not a data: URL or base64 bytes"),
            hint: Some(
                "gateway artifact ids cannot be resolved on the peer yet; pass the artifact as a \
             data: URL or base64"
                    .into(),
            ),
        })?;
    if bytes.is_empty() || bytes.len() > MAX_ARTIFACT_BYTES {
        return Err(ToolError::invalid(
            tool,
            path,
            format!(
                "expected 1..={MAX_ARTIFACT_BYTES} bytes, got {}",
                bytes.len()
            ),
        ));
    }
    let mime = declared
        .filter(|m| m.starts_with(kind))
        .or_else(|| {
            sniff(&bytes)
                .filter(|m| m.starts_with(kind))
                .map(str::to_string)
        })
        .ok_or_else(|| ToolError::invalid(tool, path, format!("not a recognised {kind}* file")))?;
    Ok((mime, bytes))
}

/// `espeak-ng` from the config or `PATH`, if it runs.
fn find_espeak(configured: Option<PathBuf>) -> Option<PathBuf> {
    let bin = configured.unwrap_or_else(|| PathBuf::from("espeak-ng"));
    let ok = Command::new(&bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(bin)
}

/// `espeak-ng --stdout` with the text on stdin; killed at the deadline.
fn espeak(
    bin: &PathBuf,
    text: &str,
    voice: Option<&str>,
    deadline: Instant,
) -> Result<Value, ToolError> {
    let mut cmd = Command::new(bin);
    cmd.arg("--stdout").arg("--stdin");
    if let Some(v) = voice {
        if v.is_empty()
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_+".contains(c))
            || v.starts_with('-')
        {
            return Err(ToolError::invalid(
                TTS,
                "/voice",
                "an espeak-ng voice such as en-us or de",
            ));
        }
        cmd.arg("-v").arg(v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ToolError::failed(TTS, format!("could not start espeak-ng: {e}")))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = text.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout
            .take(MAX_ARTIFACT_BYTES as u64 + 1)
            .read_to_end(&mut buf);
        buf
    });
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(s) = child
            .try_wait()
            .map_err(|e| ToolError::failed(TTS, format!("espeak-ng: {e}")))?
        {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ToolError::Failed {
                tool: TTS.into(),
                message: "espeak-ng did not finish before the deadline".into(),
                hint: Some("synthesize a shorter text".into()),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    let wav = reader.join().unwrap_or_default();
    let errors = err_reader.join().unwrap_or_default();
    if !status.success() || wav.is_empty() {
        return Err(ToolError::Failed {
            tool: TTS.into(),
            message: format!("espeak-ng failed ({status}): {}", errors.trim()),
            hint: voice.map(|_| "check the voice name (espeak-ng --voices)".into()),
        });
    }
    Ok(json!({"artifact": artifact(TTS, &wav, "audio/wav")?, "engine": "espeak-ng"}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use covo_tests::http_fake as fake;

    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    fn media(base: &str) -> Media {
        Media::new(
            &OpenAiConfig {
                base_url: Some(format!("{base}/v1")),
                api_key: Some("sk-test".into()),
                image_model: Some("dall-e-3".into()),
                vision_model: Some("gpt-4o-mini".into()),
                speech_model: Some("tts-1".into()),
                transcription_model: Some("whisper-1".into()),
                ..Default::default()
            },
            &TtsConfig::default(),
        )
    }

    #[test]
    fn each_media_tool_is_listed_only_when_its_model_is_set() {
        let m = Media::new(
            &OpenAiConfig {
                base_url: Some("http://127.0.0.1:1/v1".into()),
                vision_model: Some("llava".into()),
                ..Default::default()
            },
            &TtsConfig::default(),
        );
        assert_eq!(m.tools(), vec![IMAGE_DESCRIBE]);
        let no_base = Media::new(
            &OpenAiConfig {
                image_model: Some("dall-e-3".into()),
                ..Default::default()
            },
            &TtsConfig::default(),
        );
        assert!(no_base.tools().is_empty());
    }

    #[test]
    fn image_generate_asks_for_b64_json_and_returns_a_png_artifact() {
        let (base, seen) = fake::serve(|_| {
            let body = json!({"created": 1, "data": [{"b64_json": b64().encode(PNG), "revised_prompt": "a red fox"}]});
            (200, "application/json", body.to_string().into_bytes())
        });
        let out = media(&base)
            .run(
                IMAGE_GENERATE,
                &json!({"prompt": "fox", "size": "512x512"}),
                soon(),
            )
            .unwrap();
        let req = seen.lock().unwrap()[0].clone();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path(), "/v1/images/generations");
        assert_eq!(req.header("Authorization"), Some("Bearer sk-test"));
        let sent = req.json();
        assert_eq!(sent["model"], "dall-e-3");
        assert_eq!(sent["prompt"], "fox");
        assert_eq!(sent["size"], "512x512");
        assert_eq!(sent["response_format"], "b64_json");
        assert_eq!(out["artifact"]["content_type"], "image/png");
        assert_eq!(
            b64()
                .decode(out["artifact"]["bytes_base64"].as_str().unwrap())
                .unwrap(),
            PNG
        );
        assert_eq!(out["revised_prompt"], "a red fox");
    }

    #[test]
    fn image_describe_sends_the_image_as_a_data_url_content_part_and_returns_the_text() {
        let (base, seen) = fake::serve(|_| {
            let body = json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0,
                "message": {"role": "assistant", "content": "A fox in snow."}, "finish_reason": "stop"}]});
            (200, "application/json", body.to_string().into_bytes())
        });
        let out = media(&base)
            .run(
                IMAGE_DESCRIBE,
                &json!({"image": b64().encode(PNG), "question": "What animal?"}),
                soon(),
            )
            .unwrap();
        assert_eq!(out["text"], "A fox in snow.");
        let req = seen.lock().unwrap()[0].clone();
        assert_eq!(req.path(), "/v1/chat/completions");
        let sent = req.json();
        assert_eq!(sent["model"], "gpt-4o-mini");
        let parts = &sent["messages"][0]["content"];
        assert_eq!(parts[0], json!({"type": "text", "text": "What animal?"}));
        assert_eq!(parts[1]["type"], "image_url");
        assert_eq!(
            parts[1]["image_url"]["url"],
            format!("data:image/png;base64,{}", b64().encode(PNG))
        );
    }

    #[test]
    fn an_unresolvable_artifact_id_fails_with_a_hint_instead_of_being_sent() {
        let (base, seen) = fake::serve(|_| (500, "text/plain", b"unexpected".to_vec()));
        let err = media(&base)
            .run(IMAGE_DESCRIBE, &json!({"image": "art-1234"}), soon())
            .unwrap_err();
        assert!(
            matches!(err, ToolError::Failed { hint: Some(ref h), .. } if h.contains("data: URL")),
            "{err:?}"
        );
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn tts_through_the_api_returns_the_audio_as_an_artifact() {
        let wav = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
        let answer = wav.clone();
        let (base, seen) = fake::serve(move |_| (200, "audio/wav", answer.clone()));
        let out = media(&base)
            .run(TTS, &json!({"text": "hello", "voice": "nova"}), soon())
            .unwrap();
        let req = seen.lock().unwrap()[0].clone();
        assert_eq!(req.path(), "/v1/audio/speech");
        let sent = req.json();
        assert_eq!(
            (
                sent["model"].as_str(),
                sent["input"].as_str(),
                sent["voice"].as_str()
            ),
            (Some("tts-1"), Some("hello"), Some("nova"))
        );
        assert_eq!(out["artifact"]["content_type"], "audio/wav");
        assert_eq!(
            b64()
                .decode(out["artifact"]["bytes_base64"].as_str().unwrap())
                .unwrap(),
            wav
        );
    }

    #[test]
    fn transcribe_posts_a_well_formed_multipart_body_and_returns_the_text() {
        let (base, seen) = fake::serve(|_| {
            (
                200,
                "application/json",
                br#"{"text":"hello world"}"#.to_vec(),
            )
        });
        let audio = b"RIFF\x24\x00\x00\x00WAVEfmt \x00\x01\x02".to_vec();
        let out = media(&base)
            .run(TRANSCRIBE, &json!({"audio": format!("data:audio/wav;base64,{}", b64().encode(&audio)), "language": "en"}), soon())
            .unwrap();
        assert_eq!(out["text"], "hello world");
        let req = seen.lock().unwrap()[0].clone();
        assert_eq!(req.path(), "/v1/audio/transcriptions");
        let ct = req.header("Content-Type").unwrap();
        let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
        let body = req.body.clone();
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
        assert!(
            text.contains("name=\"model\"\r\n\r\nwhisper-1\r\n"),
            "{text}"
        );
        assert!(text.contains("name=\"language\"\r\n\r\nen\r\n"), "{text}");
        assert!(text
            .contains("name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\n"));
        let at = body
            .windows(audio.len())
            .position(|w| w == audio.as_slice())
            .unwrap();
        assert_eq!(&body[at + audio.len()..at + audio.len() + 2], b"\r\n");
    }

    #[test]
    fn espeak_ng_speaks_locally_into_a_wav_artifact() {
        // Never skipped: tests/run-all.sh installs espeak-ng.
        let bin = find_espeak(None)
            .expect("espeak-ng must be installed for this test (apt-get install -y espeak-ng)");
        let m = Media::new(
            &OpenAiConfig::default(),
            &TtsConfig {
                engine: Some("espeak-ng".into()),
                espeak_path: Some(bin),
            },
        );
        assert_eq!(m.tools(), vec![TTS]);
        let out = m
            .run(TTS, &json!({"text": "-v hello from the peer"}), soon())
            .unwrap();
        assert_eq!(out["engine"], "espeak-ng");
        assert_eq!(out["artifact"]["content_type"], "audio/wav");
        assert!(out["artifact"]["size_bytes"].as_u64().unwrap() > 1000);
        let err = m
            .run(TTS, &json!({"text": "x", "voice": "--evil"}), soon())
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }));
    }

    #[test]
    fn espeak_ng_configured_but_missing_is_not_listed() {
        let m = Media::new(
            &OpenAiConfig::default(),
            &TtsConfig {
                engine: Some("espeak-ng".into()),
                espeak_path: Some("/nonexistent/espeak-ng".into()),
            },
        );
        assert!(m.tools().is_empty());
    }
}
