//! The `patch` toolset: exact edits, unified diffs applied all or nothing, and diffs to look at.
//! Every file goes through the `fs` toolset's workspace (a directory handle per root, so no
//! path leaves it) and is written atomically (a temporary file renamed over it). Diffs are read
//! and made with `diffy`.

use super::fs::{io_fail, resolve, Workspace};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use covo_core::catalog::patch as c;
use serde::Deserialize;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::FS_EDIT, fs_edit),
    ToolDef::local(&c::APPLY_PATCH, apply_patch),
    ToolDef::local(&c::DIFF_VIEW, diff_view),
];

/// The most files one patch may touch.
pub const MAX_PATCH_FILES: usize = 64;
/// The largest file these tools read.
const MAX_FILE: usize = 4 * 1024 * 1024;
/// The most lines of a diff `diff_view` returns.
const MAX_DIFF_LINES: usize = 2000;
/// The most match lines an ambiguous `fs_edit` error lists.
const MAX_LINES_LISTED: usize = 20;

fn read_text(cx: &Cx<'_>, ws: &Workspace, field: &str, path: &str) -> Result<String, CallError> {
    let t = resolve(cx, ws, field, path)?;
    if t.is_dir() {
        return Err(cx.fail(format!("{path} is a directory")));
    }
    let text = t.read_to_string().map_err(|e| io_fail(cx, ws, path, e))?;
    if text.len() > MAX_FILE {
        return Err(cx.fail(format!(
            "{path} is larger than {} MiB",
            MAX_FILE / (1024 * 1024)
        )));
    }
    Ok(text)
}

// ---- fs_edit ------------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old: String,
    new: String,
    #[serde(default)]
    all: bool,
}

/// The 1-based line numbers where each match of `needle` starts.
fn match_lines(text: &str, needle: &str) -> Vec<usize> {
    text.match_indices(needle)
        .map(|(at, _)| text[..at].matches('\n').count() + 1)
        .collect()
}

fn fs_edit(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: EditArgs = cx.args(args)?;
    if a.old.is_empty() {
        return Err(ToolError::invalid(cx.tool.name, "/old", "must not be empty").into());
    }
    let ws = Workspace::open(cx)?;
    let text = read_text(cx, &ws, "path", &a.path)?;
    let lines = match_lines(&text, &a.old);
    match (lines.len(), a.all) {
        (0, _) => {
            let hint = if text.contains(a.old.trim()) {
                " (it does match with different leading or trailing whitespace)"
            } else {
                ""
            };
            return Err(cx.fail(format!(
                "the text to replace occurs 0 times in {}{hint}; read the file and copy it exactly",
                a.path
            )));
        }
        (n, false) if n > 1 => {
            let shown: Vec<String> = lines
                .iter()
                .take(MAX_LINES_LISTED)
                .map(usize::to_string)
                .collect();
            return Err(cx.fail(format!(
                "the text to replace occurs {n} times in {} (lines {}); include more context to \
                 make it unique, or set all: true",
                a.path,
                shown.join(", ")
            )));
        }
        _ => {}
    }
    let edited = if a.all {
        text.replace(&a.old, &a.new)
    } else {
        text.replacen(&a.old, &a.new, 1)
    };
    let t = resolve(cx, &ws, "path", &a.path)?;
    t.write_atomic(edited.as_bytes())
        .map_err(|e| io_fail(cx, &ws, &a.path, e))?;
    Ok(json!({
        "path": t.shown(),
        "replaced": lines.len(),
        "lines": lines,
    }))
}

// ---- apply_patch --------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    patch: String,
}

/// One file's part of a multi-file unified diff.
struct FilePatch<'a> {
    /// The text `diffy` parses: from its `---` line to the next file's.
    text: &'a str,
    /// The file it changes (`b/` or `a/` prefixes removed), `None` for `/dev/null`.
    old: Option<String>,
    new: Option<String>,
}

fn strip_name(line: &str) -> Option<String> {
    // `--- a/src/x.rs\t2024-01-01 ...`: the name ends at a tab.
    let name = line.split('\t').next()?.trim();
    if name == "/dev/null" || name.is_empty() {
        return None;
    }
    let name = name
        .strip_prefix("a/")
        .or_else(|| name.strip_prefix("b/"))
        .unwrap_or(name);
    Some(name.to_string())
}

/// Splits a unified diff into its files at each `--- ` line followed by `+++ `; anything
/// before the first (a `diff --git` line, an index line, prose) is ignored.
fn split_patch(patch: &str) -> Result<Vec<FilePatch<'_>>, String> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    let lines: Vec<&str> = patch.split_inclusive('\n').collect();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ ")) {
            starts.push(offset);
        }
        offset += l.len();
    }
    if starts.is_empty() {
        return Err("no file headers: a unified diff has '--- old' and '+++ new' lines".into());
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(patch.len());
        // Cut trailing `diff --git` / `index` lines that belong to the next file.
        let mut text = &patch[s..end];
        if let Some(cut) = text.find("\ndiff --git ") {
            text = &text[..cut + 1];
        }
        let mut it = text.lines();
        let old = strip_name(it.next().unwrap_or("").trim_start_matches("--- "));
        let new = strip_name(it.next().unwrap_or("").trim_start_matches("+++ "));
        out.push(FilePatch { text, old, new });
    }
    Ok(out)
}

fn apply_patch(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: PatchArgs = cx.args(args)?;
    let files =
        split_patch(&a.patch).map_err(|why| ToolError::invalid(cx.tool.name, "/patch", &why))?;
    if files.len() > MAX_PATCH_FILES {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/patch",
            format!("touches {} files; at most {MAX_PATCH_FILES}", files.len()),
        )
        .into());
    }
    let ws = Workspace::open(cx)?;
    // First every file is patched in memory; only when every hunk of every file applies is
    // anything written.
    let mut results: Vec<(String, Option<String>)> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let n = i + 1;
        let parsed = diffy::Patch::from_str(f.text).map_err(|e| {
            ToolError::invalid(
                cx.tool.name,
                "/patch",
                format!("file {n} of the patch does not parse: {e}"),
            )
        })?;
        let (path, before) = match (&f.old, &f.new) {
            (None, None) => {
                return Err(ToolError::invalid(
                    cx.tool.name,
                    "/patch",
                    format!("file {n} of the patch names /dev/null on both sides"),
                )
                .into())
            }
            (None, Some(new)) => {
                let t = resolve(cx, &ws, "patch", new)?;
                if t.read_to_string().is_ok() {
                    return Err(cx.fail(format!(
                        "{new} already exists, but the patch creates it (--- /dev/null)"
                    )));
                }
                (new.clone(), String::new())
            }
            (Some(old), _) => (old.clone(), read_text(cx, &ws, "patch", old)?),
        };
        let after = diffy::apply(&before, &parsed).map_err(|e| {
            cx.fail(format!(
                "{path}: {e} of {}: the file does not contain the lines the hunk expects; \
                 no file was changed",
                parsed.hunks().len()
            ))
        })?;
        match &f.new {
            None => results.push((path, None)),
            Some(new) => results.push((new.clone(), Some(after))),
        }
        if let (Some(old), Some(new)) = (&f.old, &f.new) {
            if old != new {
                // A rename: the old name goes.
                results.push((old.clone(), None));
            }
        }
    }
    let mut changed = Vec::new();
    for (path, content) in &results {
        let t = resolve(cx, &ws, "patch", path)?;
        match content {
            Some(text) => t.write_atomic(text.as_bytes()),
            None => t.remove(),
        }
        .map_err(|e| io_fail(cx, &ws, path, e))?;
        changed.push(json!({
            "path": t.shown(),
            "change": if content.is_some() { "written" } else { "deleted" },
        }));
    }
    Ok(json!({"files": changed}))
}

// ---- diff_view ----------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffArgs {
    path: String,
    other: Option<String>,
    content: Option<String>,
}

fn diff_view(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: DiffArgs = cx.args(args)?;
    let ws = Workspace::open(cx)?;
    let before = read_text(cx, &ws, "path", &a.path)?;
    let (after, label) = match (&a.other, &a.content) {
        (Some(o), None) => (read_text(cx, &ws, "other", o)?, o.clone()),
        (None, Some(c)) => (c.clone(), format!("{} (proposed)", a.path)),
        _ => {
            return Err(ToolError::invalid(
                cx.tool.name,
                "",
                "give exactly one of `other` (a second file) or `content` (proposed text)",
            )
            .into())
        }
    };
    let mut options = diffy::DiffOptions::new();
    options.set_original_filename(a.path.clone());
    options.set_modified_filename(label.clone());
    let diff = options.create_patch(&before, &after).to_string();
    let total = diff.lines().count();
    let shown: Vec<&str> = diff.lines().take(MAX_DIFF_LINES).collect();
    let (added, removed) = diff.lines().fold((0, 0), |(a, r), l| {
        if l.starts_with('+') && !l.starts_with("+++") {
            (a + 1, r)
        } else if l.starts_with('-') && !l.starts_with("---") {
            (a, r + 1)
        } else {
            (a, r)
        }
    });
    let mut v = json!({
        "identical": before == after,
        "added": added,
        "removed": removed,
        "diff": shown.join("\n"),
    });
    if total > MAX_DIFF_LINES {
        v["truncated"] = json!(format!("showing {MAX_DIFF_LINES} of {total} lines"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_diff_splits_into_its_files() {
        let p = "diff --git a/x.txt b/x.txt\nindex 1..2 100644\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/new.txt b/new.txt\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n\n";
        let f = split_patch(p).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].old.as_deref(), Some("x.txt"));
        assert!(!f[0].text.contains("new.txt"), "{}", f[0].text);
        assert_eq!(f[1].old, None);
        assert_eq!(f[1].new.as_deref(), Some("new.txt"));
        assert!(split_patch("just prose").is_err());
    }

    #[test]
    fn match_lines_are_one_based() {
        assert_eq!(match_lines("a\nx\nb x\n", "x"), [2, 3]);
    }
}
