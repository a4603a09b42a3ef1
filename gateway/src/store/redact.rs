//! What the store keeps of a call's arguments in the audit log.
//!
//! # Audit arguments
//!
//! The audit log records every call, but not every argument in full: a message, a file's
//! content or a memory's text has no place in a log that is never pruned. [`audit_args`]
//! rewrites the arguments before they are stored:
//!
//! - numbers, booleans, `null` and strings of at most [`AUDIT_STRING_CHARS`] characters are
//!   kept as they are (ids, limits, names, short queries: what makes the log useful);
//! - a longer string (or object key) becomes `"[N chars, sha256 H]"`: its length and the first
//!   12 hex digits of its SHA-256, enough to tell two values apart, not to read one;
//! - arrays keep their first [`AUDIT_ITEMS`] items, then `"[+N more items]"`; values nested
//!   deeper than [`AUDIT_DEPTH`] levels become `"[N bytes, sha256 H]"` of their JSON;
//! - if the result is still longer than [`AUDIT_ARGS_BYTES`], the whole of it becomes one
//!   `"[N bytes, sha256 H]"` string; arguments that are not JSON are kept up to
//!   [`AUDIT_STRING_CHARS`] characters and summarised the same way beyond.
//!
//! Error details are cut at [`AUDIT_DETAIL_CHARS`] characters.

use serde_json::{Map, Value};

/// The longest string argument kept in the audit log, in characters.
pub const AUDIT_STRING_CHARS: usize = 64;
/// The most items of an array argument kept in the audit log.
pub const AUDIT_ITEMS: usize = 16;
/// The deepest nesting of arguments kept in the audit log.
pub const AUDIT_DEPTH: usize = 4;
/// The longest arguments stored in the audit log, in bytes of JSON.
pub const AUDIT_ARGS_BYTES: usize = 2048;
/// The longest error detail stored in the audit log, in characters.
pub const AUDIT_DETAIL_CHARS: usize = 1024;

fn short_hash(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref()[..6].iter().map(|b| format!("{b:02x}")).collect()
}

fn summary(s: &str, unit: &str, len: usize) -> String {
    format!("[{len} {unit}, sha256 {}]", short_hash(s.as_bytes()))
}

fn redact_str(s: &str) -> String {
    let chars = s.chars().count();
    if chars <= AUDIT_STRING_CHARS {
        s.to_string()
    } else {
        summary(s, "chars", chars)
    }
}

fn redact(v: &Value, depth: usize) -> Value {
    match v {
        Value::String(s) => Value::String(redact_str(s)),
        Value::Array(_) | Value::Object(_) if depth >= AUDIT_DEPTH => {
            let text = v.to_string();
            Value::String(summary(&text, "bytes", text.len()))
        }
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(AUDIT_ITEMS)
                .map(|x| redact(x, depth + 1))
                .collect();
            if items.len() > AUDIT_ITEMS {
                out.push(Value::String(format!(
                    "[+{} more items]",
                    items.len() - AUDIT_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, x)| (redact_str(k), redact(x, depth + 1)))
                .collect::<Map<_, _>>(),
        ),
        scalar => scalar.clone(),
    }
}

/// The arguments of a call as the audit log keeps them (see the module documentation).
pub fn audit_args(args: &str) -> String {
    let kept = match serde_json::from_str::<Value>(args) {
        Ok(v) => redact(&v, 0).to_string(),
        Err(_) if args.chars().count() <= AUDIT_STRING_CHARS => return args.to_string(),
        Err(_) => return summary(args, "bytes", args.len()),
    };
    if kept.len() <= AUDIT_ARGS_BYTES {
        kept
    } else {
        Value::String(summary(args, "bytes", args.len())).to_string()
    }
}

/// An error detail as the audit log keeps it: at most [`AUDIT_DETAIL_CHARS`] characters.
pub fn audit_detail(detail: &str) -> String {
    match detail.char_indices().nth(AUDIT_DETAIL_CHARS) {
        None => detail.to_string(),
        Some((cut, _)) => format!("{}…", &detail[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_arguments_are_kept_and_large_strings_become_size_and_hash() {
        let args = json!({"id": 7, "ok": true, "none": null, "name": "relay", "x": 1.5});
        assert_eq!(audit_args(&args.to_string()), args.to_string());
        let long = "x".repeat(AUDIT_STRING_CHARS + 1);
        let v: Value =
            serde_json::from_str(&audit_args(&json!({"text": long, "n": 3}).to_string())).unwrap();
        let s = v["text"].as_str().unwrap();
        assert!(s.starts_with("[65 chars, sha256 "), "{s}");
        assert_eq!(s.len(), "[65 chars, sha256 ]".len() + 12);
        assert_eq!(v["n"], 3);
        // The same value gets the same summary; another value another.
        let again: Value =
            serde_json::from_str(&audit_args(&json!({"text": long}).to_string())).unwrap();
        assert_eq!(again["text"], v["text"]);
        let other: Value = serde_json::from_str(&audit_args(
            &json!({"text": "y".repeat(AUDIT_STRING_CHARS + 1)}).to_string(),
        ))
        .unwrap();
        assert_ne!(other["text"], v["text"]);
    }

    #[test]
    fn arrays_depth_and_total_size_are_capped() {
        let v: Value = serde_json::from_str(&audit_args(
            &json!({"xs": (0..100).collect::<Vec<_>>()}).to_string(),
        ))
        .unwrap();
        let xs = v["xs"].as_array().unwrap();
        assert_eq!(xs.len(), AUDIT_ITEMS + 1);
        assert_eq!(xs[AUDIT_ITEMS], "[+84 more items]");
        let deep = json!({"a": {"b": {"c": {"d": {"e": 1}}}}});
        let v: Value = serde_json::from_str(&audit_args(&deep.to_string())).unwrap();
        assert!(v["a"]["b"]["c"]["d"]
            .as_str()
            .unwrap()
            .contains("bytes, sha256"));
        let wide: Map<String, Value> = (0..500).map(|i| (format!("k{i}"), json!(i))).collect();
        let out = audit_args(&Value::Object(wide).to_string());
        assert!(out.len() < 64, "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(v.as_str().unwrap().contains("bytes, sha256"));
        // Not JSON: short is kept, long is summarised.
        assert_eq!(audit_args("{bad"), "{bad");
        assert!(audit_args(&"{".repeat(100)).starts_with("[100 bytes, sha256 "));
        assert_eq!(
            audit_detail(&"é".repeat(2000)).chars().count(),
            AUDIT_DETAIL_CHARS + 1
        );
    }
}
