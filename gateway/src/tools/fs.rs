//! The `fs` toolset: files inside the allowed workspace roots (`[fs] roots` in `covo.toml`,
//! default `$COVO_HOME/workspace`). Every file operation goes through a directory handle of its
//! root (cap-std's `Dir`), which resolves a path beneath that handle one component at a time and
//! refuses `..` or a symlink that leaves it. So nothing outside a root is ever read, written or
//! deleted, not even when a directory inside a root is swapped for a symlink while a tool runs.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use cap_std::fs::{Dir, Metadata, OpenOptions};
use covo_core::catalog::fs as c;
use serde::Deserialize;
use serde_json::{json, Value};
use std::ffi::OsString;
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

/// One workspace root: its path as configured, its real path and a handle to it.
struct Root {
    configured: PathBuf,
    real: PathBuf,
    dir: Dir,
}

/// The workspace roots, created on first use and opened for this call.
pub(crate) struct Workspace {
    roots: Vec<Root>,
}

impl Workspace {
    pub(crate) fn open(cx: &Cx<'_>) -> Result<Self, CallError> {
        let configured = cx.config().fs.roots.clone();
        let configured = if configured.is_empty() {
            vec![cx.home().join("workspace")]
        } else {
            configured
        };
        let mut roots = Vec::with_capacity(configured.len());
        for r in configured {
            std::fs::create_dir_all(&r)?;
            let real = r.canonicalize()?;
            let dir = Dir::open_ambient_dir(&real, cap_std::ambient_authority())?;
            roots.push(Root {
                configured: r,
                real,
                dir,
            });
        }
        Ok(Workspace { roots })
    }

    /// The refusal for `path`, which lies (or leads) outside every root.
    fn outside(&self, cx: &Cx<'_>, path: &str) -> CallError {
        ToolError::PolicyRefused {
            tool: cx.tool.name.into(),
            rule: "fs.roots".into(),
            detail: format!(
                "{path} is outside the workspace roots ({})",
                self.roots
                    .iter()
                    .map(|r| r.real.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
        .into()
    }

    /// The root `path` lies under and the rest of the path, not yet resolved: an absolute path
    /// selects the root it starts with, a relative path the first root.
    fn locate<'w>(&'w self, path: &Path) -> Option<(&'w Root, PathBuf)> {
        if !path.is_absolute() {
            return Some((&self.roots[0], path.to_path_buf()));
        }
        let under = |p: &Path| {
            self.roots.iter().find_map(|r| {
                p.strip_prefix(&r.real)
                    .or_else(|_| p.strip_prefix(&r.configured))
                    .ok()
                    .map(|rest| (r, rest.to_path_buf()))
            })
        };
        // The path may name a root through a symlink above it (`/tmp` for `/private/tmp`):
        // try again with the real path of its longest existing prefix.
        under(path).or_else(|| under(&real_prefix(path)?))
    }
}

/// `path` with its longest existing prefix replaced by its real path; used only to choose a
/// root, never to open anything.
fn real_prefix(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(mut real) = existing.canonicalize() {
            real.extend(rest.iter().rev());
            return Some(real);
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

/// A path inside one root: `rel` is relative to the root's handle, with symlinks resolved and
/// no `.` or `..` (empty for the root itself).
pub(crate) struct Target<'w> {
    root: &'w Root,
    rel: PathBuf,
}

impl Target<'_> {
    /// What the handle is given: `.` for the root itself.
    fn arg(&self) -> &Path {
        if self.is_root() {
            Path::new(".")
        } else {
            &self.rel
        }
    }

    fn is_root(&self) -> bool {
        self.rel.as_os_str().is_empty()
    }

    /// The full path, for results.
    pub(crate) fn shown(&self) -> String {
        if self.is_root() {
            self.root.real.display().to_string()
        } else {
            self.root.real.join(&self.rel).display().to_string()
        }
    }

    /// Writes `bytes` beside the target and renames them over it, both through the folder's
    /// handle: a crash leaves the old file or the new one, and a swapped folder cannot redirect
    /// either step. A new file is private to its owner (0600).
    pub(crate) fn write_atomic(&self, bytes: &[u8]) -> std::io::Result<()> {
        let name = self
            .rel
            .file_name()
            .ok_or_else(|| std::io::Error::other("not a file name"))?;
        let dir = self.parent_dir()?;
        let tmp = format!(".{}.{:016x}.tmp", name.to_string_lossy(), fastrand::u64(..));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        cap_std::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = dir.open_with(&tmp, &options).and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|()| dir.rename(&tmp, &dir, name)) {
            let _ = dir.remove_file(&tmp);
            return Err(e);
        }
        Ok(())
    }

    /// The file's text, through the root's handle.
    pub(crate) fn read_to_string(&self) -> std::io::Result<String> {
        self.root.dir.read_to_string(self.arg())
    }

    /// Removes the file, through the root's handle.
    pub(crate) fn remove(&self) -> std::io::Result<()> {
        self.root.dir.remove_file(self.arg())
    }

    /// Whether this is the root or names a folder.
    pub(crate) fn is_dir(&self) -> bool {
        self.is_root() || self.root.dir.metadata(self.arg()).is_ok_and(|m| m.is_dir())
    }

    /// The handle of the folder that holds this path, with the folders created if needed.
    fn parent_dir(&self) -> std::io::Result<Dir> {
        match self.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => {
                self.root.dir.create_dir_all(p)?;
                self.root.dir.open_dir(p)
            }
            None => self.root.dir.try_clone(),
        }
    }
}

/// Resolves `path` to a place inside a root: the longest existing prefix is resolved beneath the
/// root's handle (symlinks followed, but never out of the root); the rest must be plain names.
pub(crate) fn resolve<'w>(
    cx: &Cx<'_>,
    ws: &'w Workspace,
    field: &str,
    path: &str,
) -> Result<Target<'w>, CallError> {
    let (root, rest) = ws
        .locate(Path::new(path))
        .ok_or_else(|| ws.outside(cx, path))?;
    let dotdot = || -> CallError {
        ToolError::invalid(
            cx.tool.name,
            &format!("/{field}"),
            "'..' is not allowed in a path that does not exist yet",
        )
        .into()
    };
    let mut existing = rest.clone();
    let mut missing: Vec<OsString> = Vec::new();
    let mut rel = loop {
        if existing.as_os_str().is_empty() {
            break PathBuf::new();
        }
        match root.dir.canonicalize(&existing) {
            Ok(real) => break real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_fail(cx, ws, path, e)),
        }
        match existing.components().next_back() {
            Some(Component::Normal(name)) => missing.push(name.to_os_string()),
            Some(Component::CurDir) => {}
            Some(Component::ParentDir) => return Err(dotdot()),
            // `rest` is relative: no root or prefix component.
            _ => return Err(ws.outside(cx, path)),
        }
        existing.pop();
    };
    if rest.components().any(|c| matches!(c, Component::ParentDir)) && !missing.is_empty() {
        return Err(dotdot());
    }
    if rel == Path::new(".") {
        rel = PathBuf::new();
    }
    rel.extend(missing.iter().rev());
    Ok(Target { root, rel })
}

fn not_found(path: &str) -> CallError {
    ToolError::NotFound {
        what: "path".into(),
        id: path.into(),
    }
    .into()
}

/// An I/O error on `path` as the model sees it: a missing path, a path that led out of its
/// root (cap-std's refusal carries no OS error code, unlike a real permission error), or a
/// failure with the system's message.
pub(crate) fn io_fail(cx: &Cx<'_>, ws: &Workspace, path: &str, e: std::io::Error) -> CallError {
    match e.kind() {
        std::io::ErrorKind::NotFound => not_found(path),
        std::io::ErrorKind::PermissionDenied if e.raw_os_error().is_none() => ws.outside(cx, path),
        _ => cx.fail(format!("{path}: {e}")),
    }
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
    let ws = Workspace::open(cx)?;
    let p = resolve(cx, &ws, "path", &a.path)?;
    let bytes = p
        .root
        .dir
        .read(p.arg())
        .map_err(|e| io_fail(cx, &ws, &a.path, e))?;
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
        "path": p.shown(),
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
    let ws = Workspace::open(cx)?;
    let p = resolve(cx, &ws, "path", &a.path)?;
    let fail = |e| io_fail(cx, &ws, &a.path, e);
    let is_dir = || cx.fail(format!("{} is a directory", a.path));
    if p.is_root() || p.rel.file_name().is_none() {
        return Err(is_dir());
    }
    let existed = match p.root.dir.metadata(&p.rel) {
        Ok(m) if m.is_dir() => return Err(is_dir()),
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(fail(e)),
    };
    p.write_atomic(a.content.as_bytes()).map_err(fail)?;
    Ok(json!({
        "path": p.shown(),
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
    let ws = Workspace::open(cx)?;
    let base = resolve(cx, &ws, "path", &shown)?;
    let fail = |e| io_fail(cx, &ws, &shown, e);
    let top = base.root.dir.open_dir(base.arg()).map_err(fail)?;
    let max = a.max_entries.unwrap_or(500);
    let mut entries = Vec::new();
    // Folders still to list, relative to `top`, each opened through it.
    let mut stack = vec![PathBuf::new()];
    let mut truncated = false;
    while let Some(rel) = stack.pop() {
        let listed = if rel.as_os_str().is_empty() {
            top.entries()
        } else {
            top.read_dir(&rel)
        };
        let mut items: Vec<_> = match listed {
            Ok(items) => items.filter_map(Result::ok).collect(),
            Err(e) if rel.as_os_str().is_empty() => return Err(fail(e)),
            Err(_) => continue,
        };
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
            let path = rel.join(item.file_name());
            entries.push(json!({
                "path": path.display().to_string(),
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
    Ok(json!({ "path": base.shown(), "entries": entries, "truncated": truncated }))
}

fn kind(meta: &Metadata) -> &'static str {
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
    let ws = Workspace::open(cx)?;
    let p = resolve(cx, &ws, "path", &a.path)?;
    let meta = p
        .root
        .dir
        .metadata(p.arg())
        .map_err(|e| io_fail(cx, &ws, &a.path, e))?;
    let modified = meta
        .modified()
        .ok()
        .map(|t| chrono::DateTime::<chrono::Utc>::from(t.into_std()).to_rfc3339());
    #[cfg(unix)]
    let mode = {
        use cap_std::fs::PermissionsExt;
        format!("{:o}", meta.permissions().mode() & 0o7777)
    };
    #[cfg(not(unix))]
    let mode = String::new();
    Ok(json!({
        "path": p.shown(),
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
    let ws = Workspace::open(cx)?;
    let from = resolve(cx, &ws, "from", &a.from)?;
    let to = resolve(cx, &ws, "to", &a.to)?;
    if from.is_root() {
        return Err(ToolError::PolicyRefused {
            tool: cx.tool.name.into(),
            rule: "fs.roots".into(),
            detail: "a workspace root itself cannot be moved".into(),
        }
        .into());
    }
    from.root
        .dir
        .metadata(from.arg())
        .map_err(|e| io_fail(cx, &ws, &a.from, e))?;
    match to.root.dir.metadata(to.arg()) {
        Ok(_) if !a.overwrite => {
            return Err(ToolError::Failed {
                tool: cx.tool.name.into(),
                message: format!("{} already exists", a.to),
                hint: Some("pass overwrite=true to replace it".into()),
            }
            .into())
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_fail(cx, &ws, &a.to, e)),
    }
    if let Some(parent) = to.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        to.root
            .dir
            .create_dir_all(parent)
            .map_err(|e| io_fail(cx, &ws, &a.to, e))?;
    }
    from.root
        .dir
        .rename(from.arg(), &to.root.dir, to.arg())
        .map_err(|e| io_fail(cx, &ws, &a.from, e))?;
    Ok(json!({ "from": from.shown(), "to": to.shown() }))
}

#[derive(Deserialize)]
struct DeleteArgs {
    path: String,
    #[serde(default)]
    recursive: bool,
}

fn fs_delete(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: DeleteArgs = cx.args(args)?;
    let ws = Workspace::open(cx)?;
    let p = resolve(cx, &ws, "path", &a.path)?;
    if p.is_root() {
        return Err(ToolError::PolicyRefused {
            tool: cx.tool.name.into(),
            rule: "fs.roots".into(),
            detail: "a workspace root itself cannot be deleted".into(),
        }
        .into());
    }
    let fail = |e| io_fail(cx, &ws, &a.path, e);
    let meta = p.root.dir.symlink_metadata(&p.rel).map_err(fail)?;
    if meta.is_dir() {
        if !a.recursive {
            return Err(ToolError::Failed {
                tool: cx.tool.name.into(),
                message: format!("{} is a directory", a.path),
                hint: Some("pass recursive=true to delete it and everything in it".into()),
            }
            .into());
        }
        p.root.dir.remove_dir_all(&p.rel).map_err(fail)?;
    } else {
        p.root.dir.remove_file(&p.rel).map_err(fail)?;
    }
    Ok(json!({ "deleted": p.shown(), "type": kind(&meta) }))
}
