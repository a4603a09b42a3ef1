//! What the store keeps of a call's arguments in the audit log, and how forgotten text leaves
//! the database.
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
//!
//! # Forgetting
//!
//! When a memory is forgotten, [`scrub`] replaces its text with [`FORGOTTEN`] everywhere covo
//! stored it: in conversation turns (so the turns, their numbering and forks stay; the
//! full-text index follows through its triggers), in the outbox, in the audit log's
//! arguments and details, and in every other column that can hold a user's or the model's
//! words: conversation titles, to-dos and plans, goals and their notes, kanban cards,
//! scheduled jobs' names, prompts and arguments, watches' messages and arguments, sub-agents'
//! tasks, tool calls, answers and errors (`OTHER_TEXT`, which also says what is left out and
//! why). Both the text itself and its JSON-escaped form (as it appears inside
//! a recorded tool call or result) are replaced, and only where they stand as whole words: the
//! characters around an occurrence must not be letters or digits. Only exact occurrences are
//! found: a paraphrase of the text is not. An audit argument already summarised by its hash
//! keeps that hash, which does not reveal the text.
//!
//! Nor does the text stay in the file: deleted content is zeroed (`PRAGMA secure_delete`), the
//! full-text indexes drop a deleted row's terms at once (FTS5 `secure-delete`, migration 11),
//! and after the forget [`truncate_wal`] empties the WAL's older page images when no other
//! connection is using it.

use rusqlite::{params, Transaction};
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
/// What forgotten text is replaced with.
pub const FORGOTTEN: &str = "[forgotten]";

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

/// `hay` with every whole-word occurrence of `needle` replaced by `with`; `None` when there is
/// none. An occurrence is whole when the characters on either side of it are not letters or
/// digits (or the needle itself does not start, or end, with one).
pub fn replace_whole(hay: &str, needle: &str, with: &str) -> Option<String> {
    if needle.is_empty() {
        return None;
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let check_start = word(needle.chars().next());
    let check_end = word(needle.chars().next_back());
    let mut out = String::new();
    let mut rest = 0;
    let mut from = 0;
    let mut found = false;
    while let Some(i) = hay[from..].find(needle).map(|i| i + from) {
        let end = i + needle.len();
        let joined_before = check_start && word(hay[..i].chars().next_back());
        let joined_after = check_end && word(hay[end..].chars().next());
        let whole = !joined_before && !joined_after;
        if whole {
            out.push_str(&hay[rest..i]);
            out.push_str(with);
            rest = end;
            from = end;
            found = true;
        } else {
            // Step one character past the start of this occurrence.
            from = i + hay[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    if !found {
        return None;
    }
    out.push_str(&hay[rest..]);
    Some(out)
}

/// Replaces `text` in every string (and object key) of a JSON value; true if anything changed.
fn scrub_json(v: &mut Value, text: &str) -> bool {
    match v {
        Value::String(s) => match replace_whole(s, text, FORGOTTEN) {
            Some(r) => {
                *s = r;
                true
            }
            None => false,
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, x| scrub_json(x, text) | changed),
        Value::Object(map) => {
            let mut changed = false;
            let old = std::mem::take(map);
            for (k, mut x) in old {
                changed |= scrub_json(&mut x, text);
                let k = match replace_whole(&k, text, FORGOTTEN) {
                    Some(r) => {
                        changed = true;
                        r
                    }
                    None => k,
                };
                map.insert(k, x);
            }
            changed
        }
        _ => false,
    }
}

/// How many rows [`scrub`] rewrote, per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scrubbed {
    /// Conversation turns.
    pub turns: usize,
    /// Outbox messages.
    pub outbox: usize,
    /// Audit log rows (arguments or detail).
    pub audit: usize,
    /// Rows of the other tables that hold user or model text ([`OTHER_TEXT`]).
    pub other: usize,
}

/// How a column holds text: as it is, or as JSON (scrubbed string by string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Text,
    Json,
}

/// Beyond turns, outbox and audit: every column where a user's or the model's words can be
/// stored, as (table, column, form). Not here, on purpose: names, ids, times, numbers, enums
/// (states, statuses, roles, channels, cron), sensor and quantity names, model names, tool
/// names, board and column names of kanban boards (labels the user chose for structure), and
/// readings. Artifacts (generated images, plots, audio) are files, not text in the database.
const OTHER_TEXT: &[(&str, &str, Form)] = &[
    // A conversation's title is its first words.
    ("conversations", "title", Form::Text),
    ("todos", "content", Form::Text),
    ("plans", "steps", Form::Json),
    ("plans", "note", Form::Text),
    ("goals", "title", Form::Text),
    ("goals", "success_criterion", Form::Text),
    ("goal_notes", "note", Form::Text),
    ("kanban_cards", "title", Form::Text),
    ("kanban_cards", "note", Form::Text),
    ("schedules", "name", Form::Text),
    ("schedules", "prompt", Form::Text),
    ("schedules", "arguments", Form::Json),
    ("watches", "message", Form::Text),
    ("watches", "arguments", Form::Json),
    ("subagents", "task", Form::Text),
    ("subagents", "tool_calls", Form::Json),
    ("subagents", "answer", Form::Text),
    ("subagents", "error", Form::Text),
    ("outbox", "error", Form::Text),
];

/// Rewrites `col` of the rows of `table` containing one of `forms`; `f` gives the new value.
fn rewrite(
    tx: &Transaction<'_>,
    table: &str,
    col: &str,
    forms: [&str; 2],
    f: impl Fn(&str) -> Option<String>,
) -> rusqlite::Result<usize> {
    let candidates: Vec<(i64, String)> = {
        let sql = format!(
            "SELECT rowid, {col} FROM {table} WHERE instr({col}, ?1) > 0 OR instr({col}, ?2) > 0"
        );
        let mut stmt = tx.prepare(&sql)?;
        let rows = stmt.query_map(params![forms[0], forms[1]], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut n = 0;
    let sql = format!("UPDATE {table} SET {col} = ?2 WHERE rowid = ?1");
    for (id, old) in candidates {
        if let Some(new) = f(&old) {
            tx.execute(&sql, params![id, new])?;
            n += 1;
        }
    }
    Ok(n)
}

/// Replaces `text` with [`FORGOTTEN`] wherever the store keeps it (see the module
/// documentation), inside the caller's write transaction.
pub(crate) fn scrub(tx: &Transaction<'_>, text: &str) -> rusqlite::Result<Scrubbed> {
    if text.trim().is_empty() {
        return Ok(Scrubbed::default());
    }
    let quoted = Value::String(text.to_string()).to_string();
    let escaped = &quoted[1..quoted.len() - 1];
    let forms = [text, escaped];
    let in_text = |s: &str| {
        let once = replace_whole(s, text, FORGOTTEN);
        match replace_whole(once.as_deref().unwrap_or(s), escaped, FORGOTTEN) {
            Some(r) => Some(r),
            None => once,
        }
    };
    let in_json = |s: &str| match serde_json::from_str::<Value>(s) {
        Ok(mut v) => scrub_json(&mut v, text).then(|| v.to_string()),
        Err(_) => in_text(s),
    };
    let turns = rewrite(tx, "turns", "content", forms, in_text)?;
    let outbox = rewrite(tx, "outbox", "text", forms, in_text)?;
    let args = rewrite(tx, "audit", "args", forms, in_json)?;
    let detail = rewrite(tx, "audit", "detail", forms, in_text)?;
    let mut other = 0;
    for (table, col, form) in OTHER_TEXT {
        other += match form {
            Form::Text => rewrite(tx, table, col, forms, in_text)?,
            Form::Json => rewrite(tx, table, col, forms, in_json)?,
        };
    }
    Ok(Scrubbed {
        turns,
        outbox,
        audit: args + detail,
        other,
    })
}

/// How long [`truncate_wal`] waits for other connections.
const WAL_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// After a forget has committed: copies the WAL into the database and truncates it, so the
/// older page images in it that still hold the text go too. Best effort: while another
/// connection reads or writes, the WAL cannot be truncated after waiting [`WAL_WAIT`]; SQLite
/// then overwrites it from the start after a later checkpoint.
pub(crate) fn truncate_wal(conn: &rusqlite::Connection) {
    let r = conn.busy_timeout(WAL_WAIT).and_then(|()| {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        })
    });
    match r {
        Ok(0) => {}
        Ok(_) => tracing::debug!("the WAL is in use; not truncated after a forget"),
        Err(e) => tracing::debug!(error = %e, "WAL checkpoint after a forget failed"),
    }
    if let Err(e) = conn.busy_timeout(super::BUSY_TIMEOUT) {
        tracing::warn!(error = %e, "could not restore the busy timeout");
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

    #[test]
    fn only_whole_words_are_replaced() {
        assert_eq!(
            replace_whole("code 4711, not 47110 or a4711; 4711", "4711", "[f]").as_deref(),
            Some("code [f], not 47110 or a4711; [f]")
        );
        assert_eq!(replace_whole("47110", "4711", "[f]"), None);
        assert_eq!(replace_whole("x", "", "[f]"), None);
        assert_eq!(
            replace_whole("aé door é", "é door", "[f]").as_deref(),
            None,
            "a letter before the text"
        );
        assert_eq!(
            replace_whole("(\"a b\")", "\"a b\"", "[f]").as_deref(),
            Some("([f])")
        );
    }
}
