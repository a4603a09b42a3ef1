//! The `search` toolset: `file_search`, a name glob and/or a content regex over a folder of the
//! fs workspace, walked with ripgrep's walker (the `ignore` crate: `.gitignore`, `.ignore` and
//! hidden files honoured, symlinks not followed), bounded in files, bytes and results.

use super::fs::{resolve, Workspace};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use covo_core::catalog::search as c;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[ToolDef::local(&c::FILE_SEARCH, file_search)];

/// The most results one search returns.
pub const MAX_RESULTS: usize = 1000;
/// The most files one search looks at.
pub const MAX_FILES: usize = 20_000;
/// Files larger than this are not searched for content.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// A matching line is cut to this many characters.
const LINE_CHARS: usize = 300;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: Option<String>,
    glob: Option<String>,
    path: Option<String>,
    #[serde(default = "yes")]
    case_sensitive: bool,
    #[serde(default = "hundred")]
    max_results: usize,
}

fn yes() -> bool {
    true
}

fn hundred() -> usize {
    100
}

fn file_search(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: Args = cx.args(args)?;
    if a.pattern.is_none() && a.glob.is_none() {
        return Err(ToolError::invalid(
            cx.tool.name,
            "",
            "give a `pattern` (regex on contents), a `glob` (on names), or both",
        )
        .into());
    }
    let limit = a.max_results.clamp(1, MAX_RESULTS);
    let regex = a
        .pattern
        .as_deref()
        .map(|p| {
            regex::RegexBuilder::new(p)
                .case_insensitive(!a.case_sensitive)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    CallError::from(ToolError::invalid(
                        cx.tool.name,
                        "/pattern",
                        format!("not a valid regex: {e}"),
                    ))
                })
        })
        .transpose()?;
    let ws = Workspace::open(cx)?;
    let base = resolve(cx, &ws, "path", a.path.as_deref().unwrap_or("."))?;
    if !base.is_dir() {
        return Err(cx.fail(format!(
            "{} is not a folder",
            a.path.as_deref().unwrap_or(".")
        )));
    }
    let root = std::path::PathBuf::from(base.shown());
    let mut walk = ignore::WalkBuilder::new(&root);
    // .gitignore applies inside a git repository or not: a workspace is often not one.
    walk.require_git(false).follow_links(false);
    if let Some(g) = &a.glob {
        let mut o = ignore::overrides::OverrideBuilder::new(&root);
        o.case_insensitive(!a.case_sensitive).map_err(|e| {
            CallError::from(ToolError::invalid(cx.tool.name, "/glob", e.to_string()))
        })?;
        o.add(g).map_err(|e| {
            CallError::from(ToolError::invalid(
                cx.tool.name,
                "/glob",
                format!("not a valid glob: {e}"),
            ))
        })?;
        walk.overrides(o.build().map_err(|e| {
            CallError::from(ToolError::invalid(cx.tool.name, "/glob", e.to_string()))
        })?);
    }
    let mut results: Vec<Value> = Vec::new();
    let (mut files, mut matched_files, mut skipped_large) = (0usize, 0usize, 0usize);
    let mut complete = true;
    'walk: for entry in walk.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        files += 1;
        if files > MAX_FILES {
            complete = false;
            break;
        }
        let path = entry.path();
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let Some(re) = &regex else {
            results.push(json!({"path": rel}));
            if results.len() >= limit {
                complete = false;
                break;
            }
            continue;
        };
        if entry.metadata().map(|m| m.len()).unwrap_or(0) > MAX_FILE_BYTES {
            skipped_large += 1;
            continue;
        }
        let Ok(f) = std::fs::File::open(path) else {
            continue;
        };
        let mut reader = BufReader::new(f.take(MAX_FILE_BYTES));
        let mut line = Vec::new();
        let mut n = 0usize;
        let mut any = false;
        while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            n += 1;
            // A NUL byte: a binary file, not searched.
            if line.contains(&0) {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if re.is_match(text) {
                any = true;
                let shown: String = text.chars().take(LINE_CHARS).collect();
                results.push(json!({"path": rel, "line": n, "text": shown}));
                if results.len() >= limit {
                    matched_files += 1;
                    complete = false;
                    break 'walk;
                }
            }
            line.clear();
        }
        matched_files += usize::from(any);
    }
    let mut v = json!({
        "root": root.display().to_string(),
        "results": results,
        "files_searched": files.min(MAX_FILES),
        "complete": complete,
    });
    if regex.is_some() {
        v["files_matched"] = json!(matched_files);
    }
    if !complete {
        v["note"] = json!(format!(
            "stopped at {} results or {MAX_FILES} files; narrow it with path or glob",
            limit
        ));
    }
    if skipped_large > 0 {
        v["skipped_large_files"] = json!(skipped_large);
    }
    Ok(v)
}
