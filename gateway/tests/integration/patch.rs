//! `fs_edit`, `apply_patch` and `diff_view` through the CLI and the whole pipeline, inside the
//! fs workspace (`$COVO_HOME/workspace` here).

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let e = Env {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(e.ws()).unwrap();
        e
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("home/workspace")
    }

    fn put(&self, rel: &str, text: &str) {
        let p = self.ws().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn get(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap()
    }

    fn call(&self, tool: &str, args: Value) -> (i32, Value) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_covo"));
        cmd.args(["tools", "call", "--yes", tool, &args.to_string()])
            .current_dir(self.dir.path())
            .env("COVO_HOME", self.dir.path().join("home"))
            .env_remove("COVO_CONFIG");
        covo_tests::bins::json(&mut cmd)
    }
}

fn message(v: &Value) -> String {
    v["error"]["message"]
        .as_str()
        .or(v["error"]["detail"].as_str())
        .unwrap_or_else(|| panic!("an error: {v}"))
        .to_string()
}

#[test]
fn fs_edit_replaces_a_unique_match_and_names_zero_or_several() {
    let env = Env::new();
    env.put("cfg.toml", "a = 1\nb = 1\nc = 2\n");
    let (code, v) = env.call(
        "fs_edit",
        json!({"path": "cfg.toml", "old": "c = 2", "new": "c = 3"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["replaced"], 1);
    assert_eq!(v["lines"], json!([3]));
    assert_eq!(env.get("cfg.toml"), "a = 1\nb = 1\nc = 3\n");

    let (code, v) = env.call(
        "fs_edit",
        json!({"path": "cfg.toml", "old": "= 1", "new": "= 9"}),
    );
    assert_ne!(code, 0);
    let m = message(&v);
    assert!(
        m.contains("occurs 2 times") && m.contains("lines 1, 2"),
        "{m}"
    );
    assert_eq!(
        env.get("cfg.toml"),
        "a = 1\nb = 1\nc = 3\n",
        "nothing changed"
    );

    let (_, v) = env.call(
        "fs_edit",
        json!({"path": "cfg.toml", "old": "d = 4", "new": "x"}),
    );
    assert!(message(&v).contains("occurs 0 times"), "{v}");
    let (_, v) = env.call(
        "fs_edit",
        json!({"path": "cfg.toml", "old": "c = 3 \n", "new": "x"}),
    );
    assert!(message(&v).contains("whitespace"), "{v}");

    let (code, v) = env.call(
        "fs_edit",
        json!({"path": "cfg.toml", "old": "= 1", "new": "= 9", "all": true}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["replaced"], 2);
    assert_eq!(env.get("cfg.toml"), "a = 9\nb = 9\nc = 3\n");
}

#[test]
fn apply_patch_changes_creates_and_deletes_files_all_or_nothing() {
    let env = Env::new();
    env.put("src/a.txt", "one\ntwo\nthree\n");
    env.put("src/b.txt", "alpha\nbeta\n");
    env.put("old.txt", "bye\n");
    let good = "diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n\
--- a/src/b.txt\n+++ b/src/b.txt\n@@ -1,2 +1,3 @@\n alpha\n beta\n+gamma\n\
--- /dev/null\n+++ b/src/new.txt\n@@ -0,0 +1,2 @@\n+fresh\n+file\n\
--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    // First a patch whose last hunk does not apply: no file may change.
    let bad = good.replace(" beta\n+gamma", " BETA?\n+gamma");
    let (code, v) = env.call("apply_patch", json!({"patch": bad}));
    assert_ne!(code, 0, "{v}");
    let m = message(&v);
    assert!(
        m.contains("src/b.txt") && m.contains("no file was changed"),
        "{m}"
    );
    assert_eq!(env.get("src/a.txt"), "one\ntwo\nthree\n");
    assert!(!env.ws().join("src/new.txt").exists());
    assert!(env.ws().join("old.txt").exists());

    let (code, v) = env.call("apply_patch", json!({"patch": good}));
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["files"].as_array().unwrap().len(), 4);
    assert_eq!(env.get("src/a.txt"), "one\nTWO\nthree\n");
    assert_eq!(env.get("src/b.txt"), "alpha\nbeta\ngamma\n");
    assert_eq!(env.get("src/new.txt"), "fresh\nfile\n");
    assert!(!env.ws().join("old.txt").exists());

    // Applying it again: the hunks no longer match, and creating an existing file is refused.
    let (code, v) = env.call("apply_patch", json!({"patch": good}));
    assert_ne!(code, 0, "{v}");
    let (code, v) = env.call("apply_patch", json!({"patch": "just words"}));
    assert_ne!(code, 0);
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{v}");
}

#[test]
fn patch_tools_never_reach_outside_the_workspace() {
    let env = Env::new();
    let outside = env.dir.path().join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    std::os::unix::fs::symlink(env.dir.path(), env.ws().join("up")).unwrap();
    let attempts = [
        (
            "fs_edit",
            json!({"path": "../../outside.txt", "old": "secret", "new": "x"}),
        ),
        (
            "fs_edit",
            json!({"path": outside.display().to_string(), "old": "secret", "new": "x"}),
        ),
        (
            "fs_edit",
            json!({"path": "up/outside.txt", "old": "secret", "new": "x"}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/../../outside.txt\n+++ b/../../outside.txt\n@@ -1 +1 @@\n-secret\n+x\n"}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/up/outside.txt\n+++ b/up/outside.txt\n@@ -1 +1 @@\n-secret\n+x\n"}),
        ),
        (
            "diff_view",
            json!({"path": "up/outside.txt", "content": "x"}),
        ),
    ];
    for (tool, args) in attempts {
        let (code, v) = env.call(tool, args.clone());
        assert_ne!(code, 0, "{tool} {args}: {v}");
        assert!(
            !v.to_string().contains("secret"),
            "{tool}: nothing leaks: {v}"
        );
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
}

#[test]
fn diff_view_shows_changes_between_files_or_against_proposed_text() {
    let env = Env::new();
    env.put("x.py", "a = 1\nb = 2\n");
    env.put("y.py", "a = 1\nb = 3\nc = 4\n");
    let (code, v) = env.call("diff_view", json!({"path": "x.py", "other": "y.py"}));
    assert_eq!(code, 0, "{v}");
    let d = v["diff"].as_str().unwrap();
    assert!(d.contains("--- x.py") && d.contains("+++ y.py"), "{d}");
    assert!(
        d.contains("-b = 2") && d.contains("+b = 3") && d.contains("+c = 4"),
        "{d}"
    );
    assert_eq!(
        (v["added"].as_u64(), v["removed"].as_u64()),
        (Some(2), Some(1))
    );
    let (_, v) = env.call(
        "diff_view",
        json!({"path": "x.py", "content": "a = 1\nb = 2\n"}),
    );
    assert_eq!(v["identical"], true);
    let (code, v) = env.call("diff_view", json!({"path": "x.py"}));
    assert_ne!(code, 0);
    assert!(v.to_string().contains("exactly one of"), "{v}");
    // The diff it shows applies with apply_patch.
    let (_, v) = env.call("diff_view", json!({"path": "x.py", "other": "y.py"}));
    let patch = format!("{}\n", v["diff"].as_str().unwrap()).replace("+++ y.py", "+++ x.py");
    let (code, v) = env.call("apply_patch", json!({"patch": patch}));
    assert_eq!(code, 0, "{v}");
    assert_eq!(env.get("x.py"), env.get("y.py"));
}
