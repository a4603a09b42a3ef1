//! The `fs` toolset: files inside the allowed workspace roots (`[fs] roots` in `covo.toml`,
//! default `$COVO_HOME/workspace`). Every path is resolved (symlinks included) before use, so
//! nothing outside a root is ever read, written or deleted.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use covo_core::catalog::fs as c;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// The largest file `fs_read` returns whole, by default.
const READ_DEFAULT_MAX: usize = 256 * 1024;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::FS_READ, fs_read),
    ToolDef::local(&c::FS_WRITE, fs_write),
    ToolDef::local(&c::FS_LIST, fs_list),
    ToolDef::local(&c::FS_STAT, fs_stat),
    ToolDef::local(&c::FS_MOVE, fs_move),
    ToolDef::local(&c::FS_DELETE, fs_delete),
];

/// The workspace roots, canonicalized; created on first use.
fn roots(cx: &Cx<'_>) -> Result<Vec<PathBuf>, CallError> {
    let configured = cx.config().fs.roots.clone();
    let roots = if configured.is_empty() {
        vec![cx.home().join("workspace")]
    } else {
        configured
    };
    let mut out = Vec::with_capacity(roots.len());
    for r in roots {
        std::fs::create_dir_all(&r)?;
        out.push(r.canonicalize()?);
    }
    Ok(out)
}

/// Resolves `path` (relative paths against the first root) to a real path inside a root.
/// Symlinks are followed before the check, so a link cannot lead outside.
fn resolve(cx: &Cx<'_>, field: &str, path: &str) -> Result<PathBuf, CallError> {
    let roots = roots(cx)?;
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        roots[0].join(p)
    };
    // Canonicalize the longest existing prefix; the rest must be plain names.
    let mut existing = joined.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    if joined
        .components()
        .any(|c| matches!(c, Component::ParentDir))
        && !rest.is_empty()
    {
        return Err(ToolError::invalid(
            cx.tool.name,
            &format!("/{field}"),
            "'..' is not allowed in a path that does not exist yet",
        )
        .into());
    }
    let mut real = existing.canonicalize()?;
    for name in rest.iter().rev() {
        real.push(name);
    }
    if roots.iter().any(|r| real.starts_with(r)) {
        Ok(real)
    } else {
        Err(ToolError::PolicyRefused {
            tool: cx.tool.name.into(),
            rule: "fs.roots".into(),
            detail: format!(
                "{path} is outside the workspace roots ({})",
                roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
        .into())
    }
}

fn not_found(path: &str) -> CallError {
    ToolError::NotFound {
        what: "path".into(),
        id: path.into(),
    }
    .into()
}

fn io_fail(cx: &Cx<'_>, path: &str, e: std::io::Error) -> CallError {
    if e.kind() == std::io::ErrorKind::NotFound {
        return not_found(path);
    }
    cx.fail(format!("{path}: {e}"))
}

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    start_line: Option<usize>,
    end_line: Option<usize>,
    max_bytes: Option<usize>,
}

fn fs_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ReadArgs = cx.args(args)?;
    let p = resolve(cx, "path", &a.path)?;
    let bytes = std::fs::read(&p).map_err(|e| io_fail(cx, &a.path, e))?;
    let text =
        String::from_utf8(bytes).map_err(|_| cx.fail(format!("{} is not UTF-8 text", a.path)))?;
    let total = text.lines().count();
    let start = a.start_line.unwrap_or(1);
    let end = a.end_line.unwrap_or(total).min(total);
    if start > end.max(1) {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/start_line",
            format!("must be at most end_line and the file's {total} lines"),
        )
        .into());
    }
    let mut content: String = text
        .lines()
        .skip(start - 1)
        .take(end + 1 - start)
        .map(|l| format!("{l}\n"))
        .collect();
    let max = a.max_bytes.unwrap_or(READ_DEFAULT_MAX);
    let truncated = content.len() > max;
    if truncated {
        let mut cut = max;
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        content.truncate(cut);
    }
    Ok(json!({
        "path": p.display().to_string(),
        "start_line": start,
        "end_line": end,
        "total_lines": total,
        "truncated": truncated,
        "content": content,
    }))
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

fn fs_write(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: WriteArgs = cx.args(args)?;
    let p = resolve(cx, "path", &a.path)?;
    if p.is_dir() {
        return Err(cx.fail(format!("{} is a directory", a.path)));
    }
    let dir = p
        .parent()
        .ok_or_else(|| cx.fail("path has no parent folder"))?;
    std::fs::create_dir_all(dir).map_err(|e| io_fail(cx, &a.path, e))?;
    // Write beside the target and rename over it: a crash leaves the old file or the new one.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(a.content.as_bytes())?;
    tmp.as_file().sync_all()?;
    let existed = p.exists();
    tmp.persist(&p).map_err(|e| cx.fail(e.to_string()))?;
    Ok(json!({
        "path": p.display().to_string(),
        "bytes": a.content.len(),
        "created": !existed,
    }))
}

#[derive(Deserialize)]
struct ListArgs {
    path: Option<String>,
    #[serde(default)]
    recursive: bool,
    max_entries: Option<usize>,
}

fn fs_list(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ListArgs = cx.args(args)?;
    let shown = a.path.unwrap_or_else(|| ".".into());
    let base = resolve(cx, "path", &shown)?;
    let max = a.max_entries.unwrap_or(500);
    let mut entries = Vec::new();
    let mut stack = vec![base.clone()];
    let mut truncated = false;
    while let Some(dir) = stack.pop() {
        let mut items: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| io_fail(cx, &shown, e))?
            .filter_map(Result::ok)
            .collect();
        items.sort_by_key(|e| e.file_name());
        for item in items {
            if entries.len() >= max {
                truncated = true;
                break;
            }
            let meta = match item.metadata() {
                Ok(m) => m,
                Err(_) => continue,
            };
            let path = item.path();
            let rel = path.strip_prefix(&base).unwrap_or(&path);
            entries.push(json!({
                "path": rel.display().to_string(),
                "type": kind(&meta),
                "size": meta.len(),
            }));
            if a.recursive && meta.is_dir() {
                stack.push(path);
            }
        }
        if truncated {
            break;
        }
    }
    Ok(json!({ "path": base.display().to_string(), "entries": entries, "truncated": truncated }))
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    if meta.is_dir() {
        "dir"
    } else if meta.is_symlink() {
        "symlink"
    } else {
        "file"
    }
}

#[derive(Deserialize)]
struct PathArgs {
    path: String,
}

fn fs_stat(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: PathArgs = cx.args(args)?;
    let p = resolve(cx, "path", &a.path)?;
    let meta = std::fs::metadata(&p).map_err(|e| io_fail(cx, &a.path, e))?;
    let modified = meta
        .modified()
        .ok()
        .map(|t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339());
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        format!("{:o}", meta.permissions().mode() & 0o7777)
    };
    #[cfg(not(unix))]
    let mode = String::new();
    Ok(json!({
        "path": p.display().to_string(),
        "type": kind(&meta),
        "size": meta.len(),
        "mode": mode,
        "readonly": meta.permissions().readonly(),
        "modified": modified,
    }))
}

#[derive(Deserialize)]
struct MoveArgs {
    from: String,
    to: String,
    #[serde(default)]
    overwrite: bool,
}

fn fs_move(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: MoveArgs = cx.args(args)?;
    let from = resolve(cx, "from", &a.from)?;
    let to = resolve(cx, "to", &a.to)?;
    if !from.exists() {
        return Err(not_found(&a.from));
    }
    if to.exists() && !a.overwrite {
        return Err(ToolError::Failed {
            tool: cx.tool.name.into(),
            message: format!("{} already exists", a.to),
            hint: Some("pass overwrite=true to replace it".into()),
        }
        .into());
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_fail(cx, &a.to, e))?;
    }
    std::fs::rename(&from, &to).map_err(|e| io_fail(cx, &a.from, e))?;
    Ok(json!({ "from": from.display().to_string(), "to": to.display().to_string() }))
}

#[derive(Deserialize)]
struct DeleteArgs {
    path: String,
    #[serde(default)]
    recursive: bool,
}

fn fs_delete(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: DeleteArgs = cx.args(args)?;
    let p = resolve(cx, "path", &a.path)?;
    if roots(cx)?.contains(&p) {
        return Err(ToolError::PolicyRefused {
            tool: cx.tool.name.into(),
            rule: "fs.roots".into(),
            detail: "a workspace root itself cannot be deleted".into(),
        }
        .into());
    }
    let meta = std::fs::symlink_metadata(&p).map_err(|e| io_fail(cx, &a.path, e))?;
    if meta.is_dir() {
        if !a.recursive {
            return Err(ToolError::Failed {
                tool: cx.tool.name.into(),
                message: format!("{} is a directory", a.path),
                hint: Some("pass recursive=true to delete it and everything in it".into()),
            }
            .into());
        }
        std::fs::remove_dir_all(&p).map_err(|e| io_fail(cx, &a.path, e))?;
    } else {
        std::fs::remove_file(&p).map_err(|e| io_fail(cx, &a.path, e))?;
    }
    Ok(json!({ "deleted": p.display().to_string(), "type": kind(&meta) }))
}
