//! Artifacts (images, audio) that peer tools produce and consume, kept as files under
//! `$COVO_HOME/artifacts/` and named to the model by id (`art-…`), never as base64 text.
//!
//! A peer answers with `{"content_type": …, "bytes_base64": …}` objects; [`externalize`] writes
//! each to a file and leaves `{"id", "path", "content_type", "size_bytes", …}` in its place, so
//! the model sees a short handle. Going the other way, [`inline_inputs`] turns an artifact id in
//! a peer tool's `image` or `audio` argument into a `data:` URL before the call is published, so
//! `image_describe` can look at what `image_generate` or `camera_snapshot` made.

use crate::error::ToolError;
use base64::Engine as _;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Arguments that may name an artifact by id.
const INPUT_FIELDS: &[&str] = &["image", "audio"];

const TYPES: &[(&str, &str)] = &[
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
    ("audio/wav", "wav"),
    ("audio/mpeg", "mp3"),
    ("audio/ogg", "ogg"),
    ("audio/flac", "flac"),
    ("text/csv", "csv"),
];

fn dir(home: &Path) -> PathBuf {
    home.join("artifacts")
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// Whether `s` has the shape of an artifact id.
pub fn is_id(s: &str) -> bool {
    s.strip_prefix("art-")
        .is_some_and(|h| !h.is_empty() && h.len() <= 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Writes `bytes` as a new artifact; returns its id and path.
pub fn save(home: &Path, bytes: &[u8], content_type: &str) -> std::io::Result<(String, PathBuf)> {
    let d = dir(home);
    std::fs::create_dir_all(&d)?;
    let id = format!("art-{:016x}", fastrand::u64(..));
    let ext = TYPES
        .iter()
        .find(|(t, _)| *t == content_type)
        .map_or("bin", |(_, e)| e);
    let path = d.join(format!("{id}.{ext}"));
    // Written under a temporary name and renamed, so a crash never leaves half a file.
    let tmp = tempfile::NamedTempFile::new_in(&d)?;
    std::fs::write(tmp.path(), bytes)?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok((id, path))
}

/// The bytes and content type of artifact `id`, if it exists.
pub fn load(home: &Path, id: &str) -> Option<(Vec<u8>, &'static str)> {
    if !is_id(id) {
        return None;
    }
    let entries = std::fs::read_dir(dir(home)).ok()?;
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some((stem, ext)) = name.rsplit_once('.') else {
            continue;
        };
        if stem == id {
            let ct = TYPES
                .iter()
                .find(|(_, x)| *x == ext)
                .map_or("application/octet-stream", |(t, _)| t);
            return std::fs::read(e.path()).ok().map(|b| (b, ct));
        }
    }
    None
}

/// Replaces every inline artifact (`{"content_type", "bytes_base64", …}`) in a peer's result
/// with a stored artifact's handle.
pub fn externalize(home: &Path, tool: &str, v: Value) -> Result<Value, ToolError> {
    Ok(match v {
        Value::Object(m) if m.get("bytes_base64").is_some_and(Value::is_string) => {
            let ct = m
                .get("content_type")
                .and_then(Value::as_str)
                .unwrap_or("application/octet-stream")
                .to_string();
            let bytes = b64()
                .decode(m["bytes_base64"].as_str().unwrap_or_default())
                .map_err(|e| {
                    ToolError::failed(tool, format!("the peer sent a bad artifact: {e}"))
                })?;
            let (id, path) = save(home, &bytes, &ct)
                .map_err(|e| ToolError::failed(tool, format!("cannot store the artifact: {e}")))?;
            let mut out = Map::new();
            out.insert("id".into(), id.into());
            out.insert("path".into(), path.display().to_string().into());
            out.insert("content_type".into(), ct.into());
            out.insert("size_bytes".into(), bytes.len().into());
            for (k, v) in m {
                if !matches!(k.as_str(), "bytes_base64" | "content_type" | "size_bytes") {
                    out.insert(k, v);
                }
            }
            Value::Object(out)
        }
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| Ok((k, externalize(home, tool, v)?)))
                .collect::<Result<_, ToolError>>()?,
        ),
        Value::Array(a) => Value::Array(
            a.into_iter()
                .map(|v| externalize(home, tool, v))
                .collect::<Result<_, _>>()?,
        ),
        other => other,
    })
}

/// Turns artifact ids in `image` / `audio` arguments into `data:` URLs for the peer.
pub fn inline_inputs(home: &Path, tool: &str, mut args: Value) -> Result<Value, ToolError> {
    for field in INPUT_FIELDS {
        let Some(s) = args.get(*field).and_then(Value::as_str) else {
            continue;
        };
        if !is_id(s) {
            continue;
        }
        let (bytes, ct) = load(home, s).ok_or_else(|| {
            ToolError::invalid(
                tool,
                &format!("/{field}"),
                format!("no artifact '{s}' on this gateway (ids come from earlier tool results)"),
            )
        })?;
        args[*field] = format!("data:{ct};base64,{}", b64().encode(bytes)).into();
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inline_artifacts_become_files_and_ids_become_data_urls_again() {
        let home = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\nfake";
        let result = json!({"artifact": {"content_type": "image/png",
            "bytes_base64": b64().encode(png), "size_bytes": png.len(), "width": 800},
            "model": "m"});
        let out = externalize(home.path(), "plot_series", result).unwrap();
        let a = &out["artifact"];
        let id = a["id"].as_str().unwrap();
        assert!(is_id(id), "{id}");
        assert!(a.get("bytes_base64").is_none());
        assert_eq!(a["content_type"], "image/png");
        assert_eq!(a["size_bytes"], png.len());
        assert_eq!(a["width"], 800);
        assert_eq!(out["model"], "m");
        assert!(a["path"].as_str().unwrap().ends_with(".png"));
        assert_eq!(std::fs::read(a["path"].as_str().unwrap()).unwrap(), png);

        let args = inline_inputs(home.path(), "image_describe", json!({"image": id})).unwrap();
        let url = args["image"].as_str().unwrap();
        assert_eq!(url, format!("data:image/png;base64,{}", b64().encode(png)));
        // Not an id: passed through untouched.
        let args = json!({"image": "https://example.com/x.png"});
        assert_eq!(inline_inputs(home.path(), "t", args.clone()).unwrap(), args);
        // An id that does not exist: a structured error naming the field.
        let e = inline_inputs(home.path(), "t", json!({"audio": "art-0123"})).unwrap_err();
        assert!(e.to_string().contains("art-0123"), "{e}");
    }

    #[test]
    fn a_bad_artifact_is_an_error_and_ids_are_checked() {
        let home = tempfile::tempdir().unwrap();
        let bad = json!({"content_type": "image/png", "bytes_base64": "%%%"});
        assert!(externalize(home.path(), "t", bad).is_err());
        assert!(!is_id("art-"));
        assert!(!is_id("art-../../etc"));
        assert!(is_id("art-00ff"));
        assert!(load(home.path(), "art-../x").is_none());
    }
}
