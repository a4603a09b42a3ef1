//! The git tools through the CLI and the whole pipeline, against real repositories in the fs
//! workspace.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let e = Env {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(e.repo()).unwrap();
        sh(&e.repo(), &["init", "-q", "-b", "main"]);
        e
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("home/workspace/proj")
    }

    fn call(&self, tool: &str, args: Value) -> (i32, Value) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_covo"));
        cmd.args(["tools", "call", "--yes", tool, &args.to_string()])
            .current_dir(self.dir.path())
            .env("COVO_HOME", self.dir.path().join("home"))
            .env_remove("COVO_CONFIG")
            // No identity from the environment: the tool must cope.
            .env("HOME", self.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1");
        covo_tests::bins::json(&mut cmd)
    }
}

fn sh(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn status_commit_log_and_diff_round_trip_on_a_real_repository() {
    let env = Env::new();
    std::fs::write(env.repo().join("main.py"), "print('hi')\n").unwrap();
    std::fs::write(env.repo().join("notes.txt"), "todo\n").unwrap();
    let (code, v) = env.call("git_status", json!({"repo": "proj"}));
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["branch"], "main");
    assert_eq!(v["untracked"], json!(["main.py", "notes.txt"]));
    assert_eq!(v["clean"], false);

    let (code, v) = env.call(
        "git_commit",
        json!({"repo": "proj", "paths": ["main.py"], "message": "Add the script"}),
    );
    assert_eq!(code, 0, "{v}");
    let hash = v["hash"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 40);
    assert_eq!(sh(&env.repo(), &["rev-parse", "HEAD"]).trim(), hash);
    assert_eq!(
        sh(&env.repo(), &["log", "-1", "--format=%an %s"]).trim(),
        "covo Add the script"
    );

    std::fs::write(env.repo().join("main.py"), "print('hello')\n").unwrap();
    let (_, v) = env.call("git_status", json!({"repo": "proj"}));
    assert_eq!(
        v["modified"],
        json!([{"path": "main.py", "change": "modified"}])
    );
    assert_eq!(v["untracked"], json!(["notes.txt"]));
    let (_, v) = env.call("git_diff", json!({"repo": "proj"}));
    let d = v["diff"].as_str().unwrap();
    assert!(
        d.contains("-print('hi')") && d.contains("+print('hello')"),
        "{d}"
    );
    assert_eq!(v["files"], 1);
    let (_, v) = env.call("git_diff", json!({"repo": "proj", "staged": true}));
    assert_eq!(v["files"], 0);

    env.call(
        "git_commit",
        json!({"repo": "proj", "paths": ["main.py", "notes.txt"], "message": "Say hello"}),
    );
    let (_, v) = env.call("git_log", json!({"repo": "proj", "limit": 5}));
    let subjects: Vec<&str> = v["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["Say hello", "Add the script"]);
    let (_, v) = env.call("git_log", json!({"repo": "proj", "path": "notes.txt"}));
    assert_eq!(v["commits"].as_array().unwrap().len(), 1);
    let (_, v) = env.call(
        "git_diff",
        json!({"repo": "proj", "from": "HEAD~1", "to": "HEAD"}),
    );
    assert!(v["diff"].as_str().unwrap().contains("+todo"), "{v}");
}

#[test]
fn a_repository_cannot_make_covo_run_its_hooks_or_escape_the_workspace() {
    let env = Env::new();
    let marker = env.dir.path().join("hook-ran");
    let hook = env.repo().join(".git/hooks/pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&hook)
        .status()
        .unwrap();
    // A config-defined fsmonitor would run a command on status.
    sh(
        &env.repo(),
        &[
            "config",
            "core.fsmonitor",
            &format!("touch {}", marker.display()),
        ],
    );
    std::fs::write(env.repo().join("a.txt"), "a\n").unwrap();
    let (code, v) = env.call("git_status", json!({"repo": "proj"}));
    assert_eq!(code, 0, "{v}");
    let (code, v) = env.call(
        "git_commit",
        json!({"repo": "proj", "paths": ["a.txt"], "message": "a"}),
    );
    assert_eq!(code, 0, "{v}");
    assert!(!marker.exists(), "no hook or fsmonitor ran");

    // Options smuggled in as revisions, and repositories outside the workspace.
    let (code, v) = env.call(
        "git_diff",
        json!({"repo": "proj", "from": "--output=/tmp/covo-pwned"}),
    );
    assert_ne!(code, 0);
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{v}");
    assert!(!Path::new("/tmp/covo-pwned").exists());
    let outside = tempfile::tempdir().unwrap();
    sh(outside.path(), &["init", "-q"]);
    for repo in [outside.path().display().to_string(), "../..".into()] {
        let (code, v) = env.call("git_status", json!({"repo": repo}));
        assert_ne!(code, 0, "{repo}: {v}");
    }
    // Not a repository: git's own words.
    std::fs::create_dir_all(env.dir.path().join("home/workspace/plain")).unwrap();
    let (_, v) = env.call("git_log", json!({"repo": "plain"}));
    assert!(
        v["error"].to_string().contains("not a git repository"),
        "{v}"
    );
}
