//! The `git` toolset, through the `git` program (no git library: the gateway's size budget is
//! tight and git is on every system that has repositories). A repository must lie inside the fs
//! workspace. Every run disables what a repository's own config could make git execute (hooks,
//! fsmonitor, pagers, credential prompts), passes paths after `--`, and refuses revisions that
//! look like options.

use super::command::{find_program, Cmd};
use super::fs::{resolve, Workspace};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::{AvailCx, ToolDef};
use covo_core::catalog::git as c;
use covo_core::spec::Availability;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::GIT_STATUS, git_status).when(needs_git),
    ToolDef::local(&c::GIT_DIFF, git_diff).when(needs_git),
    ToolDef::local(&c::GIT_LOG, git_log).when(needs_git),
    ToolDef::local(&c::GIT_COMMIT, git_commit).when(needs_git),
];

/// How long one git run may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most diff lines returned.
const MAX_DIFF_LINES: usize = 3000;
/// The most paths one call names.
const MAX_PATHS: usize = 200;

fn needs_git(_: &AvailCx<'_>) -> Availability {
    match find_program("git") {
        Some(_) => Availability::yes(),
        None => Availability::no("git is not installed"),
    }
}

/// A repository inside the workspace: its real path.
fn repo(cx: &Cx<'_>, repo: Option<&str>) -> Result<String, CallError> {
    let ws = Workspace::open(cx)?;
    let t = resolve(cx, &ws, "repo", repo.unwrap_or("."))?;
    if !t.is_dir() {
        return Err(cx.fail(format!(
            "{} is not a folder",
            repo.unwrap_or("the workspace")
        )));
    }
    Ok(t.shown())
}

/// `git -C REPO` with what a repository's config could make git run switched off.
fn git(cx: &Cx<'_>, repo: &str, args: &[&str]) -> Result<String, CallError> {
    let mut all: Vec<&str> = vec![
        "-C",
        repo,
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.pager=cat",
        "-c",
        "credential.helper=",
        "-c",
        "color.ui=false",
    ];
    all.extend_from_slice(args);
    let out = Cmd::new("git", GIT_TIMEOUT)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .output(cx, &all)?;
    if !out.success {
        let why = out.stderr.trim();
        let why = why
            .strip_prefix("fatal: ")
            .unwrap_or(why)
            .lines()
            .next()
            .unwrap_or("");
        return Err(cx.fail(format!("git {}: {why}", args.first().unwrap_or(&""))));
    }
    Ok(out.stdout)
}

/// A revision argument: refused when it could be read as an option.
fn revision<'a>(cx: &Cx<'_>, field: &str, r: &'a str) -> Result<&'a str, CallError> {
    if r.is_empty() || r.starts_with('-') || r.chars().any(char::is_whitespace) {
        return Err(ToolError::invalid(
            cx.tool.name,
            &format!("/{field}"),
            "a revision (a hash, branch, tag or HEAD~N), not an option",
        )
        .into());
    }
    Ok(r)
}

fn paths_ok(cx: &Cx<'_>, paths: &[String]) -> Result<(), CallError> {
    if paths.len() > MAX_PATHS {
        return Err(ToolError::invalid(
            cx.tool.name,
            "/paths",
            format!("at most {MAX_PATHS} paths"),
        )
        .into());
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoArgs {
    repo: Option<String>,
}

fn git_status(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: RepoArgs = cx.args(args)?;
    let r = repo(cx, a.repo.as_deref())?;
    let out = git(
        cx,
        &r,
        &[
            "status",
            "--porcelain=v1",
            "--branch",
            "--untracked-files=normal",
        ],
    )?;
    Ok(parse_status(&out, &r))
}

/// `git status --porcelain=v1 --branch` as fields.
fn parse_status(out: &str, repo: &str) -> Value {
    let (mut staged, mut modified, mut untracked, mut conflicted) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut branch = json!(null);
    let (mut ahead, mut behind) = (0u64, 0u64);
    for l in out.lines() {
        if let Some(b) = l.strip_prefix("## ") {
            let (head, track) = b.split_once(" [").unwrap_or((b, ""));
            let name = head.split("...").next().unwrap_or(head);
            let name = name.strip_prefix("No commits yet on ").unwrap_or(name);
            branch = json!(name);
            for part in track.trim_end_matches(']').split(", ") {
                if let Some(n) = part.strip_prefix("ahead ") {
                    ahead = n.parse().unwrap_or(0);
                }
                if let Some(n) = part.strip_prefix("behind ") {
                    behind = n.parse().unwrap_or(0);
                }
            }
            continue;
        }
        if l.len() < 4 {
            continue;
        }
        let (xy, path) = l.split_at(3);
        let (x, y) = (xy.as_bytes()[0], xy.as_bytes()[1]);
        let path = path.to_string();
        match (x, y) {
            (b'?', b'?') => untracked.push(path),
            (b'U', _) | (_, b'U') | (b'A', b'A') | (b'D', b'D') => conflicted.push(path),
            _ => {
                if x != b' ' {
                    staged.push(json!({"path": path, "change": change(x)}));
                }
                if y != b' ' {
                    modified.push(json!({"path": path, "change": change(y)}));
                }
            }
        }
    }
    json!({
        "repo": repo,
        "branch": branch,
        "ahead": ahead,
        "behind": behind,
        "clean": staged.is_empty() && modified.is_empty() && untracked.is_empty() && conflicted.is_empty(),
        "staged": staged,
        "modified": modified,
        "untracked": untracked,
        "conflicted": conflicted,
    })
}

fn change(c: u8) -> &'static str {
    match c {
        b'M' => "modified",
        b'A' => "added",
        b'D' => "deleted",
        b'R' => "renamed",
        b'C' => "copied",
        b'T' => "type changed",
        _ => "changed",
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffArgs {
    repo: Option<String>,
    #[serde(default)]
    staged: bool,
    from: Option<String>,
    to: Option<String>,
    #[serde(default)]
    paths: Vec<String>,
}

fn git_diff(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: DiffArgs = cx.args(args)?;
    paths_ok(cx, &a.paths)?;
    let r = repo(cx, a.repo.as_deref())?;
    let mut argv: Vec<&str> = vec!["diff", "--no-ext-diff", "--no-textconv"];
    if a.staged {
        argv.push("--cached");
    }
    if let Some(f) = &a.from {
        argv.push(revision(cx, "from", f)?);
    }
    if let Some(t) = &a.to {
        if a.from.is_none() {
            return Err(ToolError::invalid(cx.tool.name, "/to", "needs `from`").into());
        }
        argv.push(revision(cx, "to", t)?);
    }
    argv.push("--");
    argv.extend(a.paths.iter().map(String::as_str));
    let out = git(cx, &r, &argv)?;
    let total = out.lines().count();
    let files = out.lines().filter(|l| l.starts_with("diff --git ")).count();
    let mut v = json!({
        "files": files,
        "diff": out.lines().take(MAX_DIFF_LINES).collect::<Vec<_>>().join("\n"),
    });
    if total > MAX_DIFF_LINES {
        v["truncated"] = json!(format!(
            "showing {MAX_DIFF_LINES} of {total} lines; narrow it with paths"
        ));
    }
    Ok(v)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogArgs {
    repo: Option<String>,
    path: Option<String>,
    #[serde(default = "twenty")]
    limit: u32,
}

fn twenty() -> u32 {
    20
}

fn git_log(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: LogArgs = cx.args(args)?;
    let r = repo(cx, a.repo.as_deref())?;
    let n = format!("-n{}", a.limit.clamp(1, 200));
    let mut argv = vec![
        "log",
        n.as_str(),
        "--no-show-signature",
        "--format=%H%x1f%an%x1f%aI%x1f%s%x1e",
        "--",
    ];
    if let Some(p) = &a.path {
        argv.push(p);
    }
    let out = git(cx, &r, &argv)?;
    let commits: Vec<Value> = out
        .split('\x1e')
        .filter_map(|rec| {
            let f: Vec<&str> = rec.trim_start_matches('\n').split('\x1f').collect();
            (f.len() == 4)
                .then(|| json!({"hash": f[0], "author": f[1], "date": f[2], "subject": f[3]}))
        })
        .collect();
    Ok(json!({"commits": commits}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitArgs {
    repo: Option<String>,
    paths: Vec<String>,
    message: String,
}

fn git_commit(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: CommitArgs = cx.args(args)?;
    paths_ok(cx, &a.paths)?;
    if a.paths.is_empty() {
        return Err(ToolError::invalid(cx.tool.name, "/paths", "name the paths to commit").into());
    }
    if a.message.trim().is_empty() {
        return Err(ToolError::invalid(cx.tool.name, "/message", "must not be empty").into());
    }
    let r = repo(cx, a.repo.as_deref())?;
    let mut add = vec!["add", "--"];
    add.extend(a.paths.iter().map(String::as_str));
    git(cx, &r, &add)?;
    // A repository without an identity still commits, as covo.
    let named = git(cx, &r, &["config", "user.name"]).is_ok_and(|s| !s.trim().is_empty());
    let mut commit: Vec<&str> = Vec::new();
    if !named {
        commit.extend(["-c", "user.name=covo", "-c", "user.email=covo@localhost"]);
    }
    commit.extend(["commit", "--no-verify", "-q", "-m", &a.message, "--"]);
    commit.extend(a.paths.iter().map(String::as_str));
    git(cx, &r, &commit)?;
    let hash = git(cx, &r, &["rev-parse", "HEAD"])?;
    Ok(json!({"hash": hash.trim(), "paths": a.paths}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_status_becomes_fields() {
        let v = parse_status(
            "## main...origin/main [ahead 2, behind 1]\nM  staged.rs\n M work.rs\nMM both.rs\nA  new.rs\n?? notes.txt\nUU clash.rs\n",
            "/r",
        );
        assert_eq!(v["branch"], "main");
        assert_eq!(
            (v["ahead"].as_u64(), v["behind"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(v["staged"].as_array().unwrap().len(), 3);
        assert_eq!(v["modified"].as_array().unwrap().len(), 2);
        assert_eq!(v["untracked"], json!(["notes.txt"]));
        assert_eq!(v["conflicted"], json!(["clash.rs"]));
        assert_eq!(v["clean"], false);
        let v = parse_status("## No commits yet on main\n", "/r");
        assert_eq!(v["branch"], "main");
        assert_eq!(v["clean"], true);
    }
}
