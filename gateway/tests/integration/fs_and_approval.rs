//! The file tools against a real temporary workspace, and approval of destructive tools on
//! every call path.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{Approver, AutoApprove, Runtime, Via};
use covo::spec::ToolSpec;
use covo::store::Store;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Records every approval request and answers with a fixed decision.
#[derive(Clone)]
struct Recorder {
    asked: Arc<Mutex<Vec<String>>>,
    approve: bool,
}

impl Approver for Recorder {
    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("{} {args}", spec.name));
        if self.approve {
            Ok(())
        } else {
            Err("declined by the user".into())
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    rt: Runtime,
}

fn fixture(approver: Box<dyn Approver>, read_only: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let mut config = Config::default();
    config.fs.roots = vec![root.clone()];
    config.policy.read_only = read_only;
    let mut opts = covo::tools::options(config);
    opts.profile = Some("coding".into());
    opts.approver = approver;
    opts.home = Some(dir.path().to_path_buf());
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    Fixture {
        root: root.canonicalize().unwrap(),
        _dir: dir,
        rt,
    }
}

fn s() -> Session {
    Session::new("fs", "cli")
}

fn err(r: Result<Value, CallError>) -> ToolError {
    match r {
        Err(CallError::Respond(e)) => e,
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[test]
fn write_read_list_stat_and_move_work_inside_the_workspace() {
    let f = fixture(Box::new(AutoApprove), false);
    let rt = &f.rt;
    let w = rt
        .call(
            &s(),
            Via::Direct,
            "fs_write",
            json!({"path": "notes/a.txt", "content": "one\ntwo\nthree\n"}),
        )
        .unwrap();
    assert_eq!(w["created"], true);
    assert_eq!(
        std::fs::read_to_string(f.root.join("notes/a.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    let r = rt
        .call(
            &s(),
            Via::Direct,
            "fs_read",
            json!({"path": "notes/a.txt", "start_line": 2, "end_line": 3}),
        )
        .unwrap();
    assert_eq!(r["content"], "two\nthree\n");
    assert_eq!(r["total_lines"], 3);
    let l = rt
        .call(&s(), Via::Direct, "fs_list", json!({"recursive": true}))
        .unwrap();
    let paths: Vec<&str> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"notes") && paths.contains(&"notes/a.txt"),
        "{paths:?}"
    );
    let st = rt
        .call(&s(), Via::Direct, "fs_stat", json!({"path": "notes/a.txt"}))
        .unwrap();
    assert_eq!(st["size"], 14);
    assert_eq!(st["type"], "file");
    rt.call(
        &s(),
        Via::Direct,
        "fs_move",
        json!({"from": "notes/a.txt", "to": "b.txt"}),
    )
    .unwrap();
    assert!(f.root.join("b.txt").exists() && !f.root.join("notes/a.txt").exists());
}

#[test]
fn paths_outside_the_roots_are_refused_even_through_symlinks() {
    let f = fixture(Box::new(AutoApprove), false);
    let outside = f.root.parent().unwrap().join("secret.txt");
    std::fs::write(&outside, "s3cret").unwrap();
    for path in ["../secret.txt", outside.to_str().unwrap()] {
        let e = err(f
            .rt
            .call(&s(), Via::Direct, "fs_read", json!({"path": path})));
        assert!(
            matches!(&e, ToolError::PolicyRefused { rule, .. } if rule == "fs.roots"),
            "{path}: {e:?}"
        );
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, f.root.join("link")).unwrap();
        let e = err(f
            .rt
            .call(&s(), Via::Direct, "fs_read", json!({"path": "link"})));
        assert!(matches!(e, ToolError::PolicyRefused { .. }), "{e:?}");
    }
    let e = err(f.rt.call(
        &s(),
        Via::Direct,
        "fs_write",
        json!({"path": "../../evil", "content": "x"}),
    ));
    assert!(
        matches!(
            e,
            ToolError::InvalidArguments { .. } | ToolError::PolicyRefused { .. }
        ),
        "{e:?}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "s3cret");
}

#[test]
fn a_missing_file_is_not_found() {
    let f = fixture(Box::new(AutoApprove), false);
    let e = err(f
        .rt
        .call(&s(), Via::Direct, "fs_read", json!({"path": "nope.txt"})));
    assert!(matches!(e, ToolError::NotFound { .. }), "{e:?}");
}

#[test]
fn tool_call_asks_for_approval_on_a_destructive_tool_and_a_no_keeps_the_file() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let f = fixture(
        Box::new(Recorder {
            asked: asked.clone(),
            approve: false,
        }),
        false,
    );
    std::fs::write(f.root.join("keep.txt"), "data").unwrap();
    let e = err(f.rt.call(
        &s(),
        Via::Direct,
        "tool_call",
        json!({"name": "fs_delete", "arguments": {"path": "keep.txt"}}),
    ));
    assert!(
        matches!(&e, ToolError::ApprovalDenied { tool, .. } if tool == "fs_delete"),
        "{e:?}"
    );
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "the approver was asked exactly once"
    );
    assert!(asked.lock().unwrap()[0].starts_with("fs_delete"));
    assert!(
        f.root.join("keep.txt").exists(),
        "a declined delete deletes nothing"
    );
}

#[test]
fn an_approved_destructive_call_runs_once() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let f = fixture(
        Box::new(Recorder {
            asked: asked.clone(),
            approve: true,
        }),
        false,
    );
    std::fs::write(f.root.join("gone.txt"), "data").unwrap();
    let v =
        f.rt.call(
            &s(),
            Via::Direct,
            "tool_call",
            json!({"name": "fs_delete", "arguments": {"path": "gone.txt"}}),
        )
        .unwrap();
    assert_eq!(v["type"], "file");
    assert!(!f.root.join("gone.txt").exists());
    assert_eq!(asked.lock().unwrap().len(), 1);
}

#[test]
fn invalid_arguments_are_rejected_before_anyone_is_asked() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let f = fixture(
        Box::new(Recorder {
            asked: asked.clone(),
            approve: true,
        }),
        false,
    );
    let e = err(f
        .rt
        .call(&s(), Via::Direct, "fs_delete", json!({"path": 7})));
    assert!(matches!(e, ToolError::InvalidArguments { .. }));
    assert!(asked.lock().unwrap().is_empty());
}

#[test]
fn read_only_mode_refuses_writes_on_every_path_but_allows_reads() {
    let f = fixture(Box::new(AutoApprove), true);
    std::fs::write(f.root.join("x.txt"), "x").unwrap();
    for (via, name, args) in [
        (
            "direct",
            "fs_write",
            json!({"path": "y.txt", "content": "y"}),
        ),
        (
            "tool_call",
            "tool_call",
            json!({"name": "fs_write", "arguments": {"path": "y.txt", "content": "y"}}),
        ),
        (
            "tool_call",
            "tool_call",
            json!({"name": "fs_delete", "arguments": {"path": "x.txt"}}),
        ),
    ] {
        let e = err(f.rt.call(&s(), Via::Direct, name, args));
        assert!(
            matches!(&e, ToolError::PolicyRefused { rule, .. } if rule == "read_only"),
            "{via}: {e:?}"
        );
    }
    assert!(!f.root.join("y.txt").exists() && f.root.join("x.txt").exists());
    f.rt.call(&s(), Via::Direct, "fs_read", json!({"path": "x.txt"}))
        .unwrap();
}

#[test]
fn deleting_a_directory_needs_recursive_and_a_root_cannot_be_deleted() {
    let f = fixture(Box::new(AutoApprove), false);
    std::fs::create_dir_all(f.root.join("d/e")).unwrap();
    let e = err(f
        .rt
        .call(&s(), Via::Direct, "fs_delete", json!({"path": "d"})));
    assert!(e.to_string().contains("directory"), "{e}");
    f.rt.call(
        &s(),
        Via::Direct,
        "fs_delete",
        json!({"path": "d", "recursive": true}),
    )
    .unwrap();
    assert!(!f.root.join("d").exists());
    let e = err(f.rt.call(
        &s(),
        Via::Direct,
        "fs_delete",
        json!({"path": ".", "recursive": true}),
    ));
    assert!(matches!(e, ToolError::PolicyRefused { .. }), "{e:?}");
}

#[test]
fn a_file_in_the_way_of_a_parent_folder_is_a_tool_error_not_a_fatal_one() {
    // Found by the adversarial suite: creating the parent folders of `blocker/…` failed with
    // "Not a directory", which ended the turn instead of going back to the model.
    let f = fixture(Box::new(AutoApprove), false);
    std::fs::write(f.root.join("blocker"), "x").unwrap();
    std::fs::write(f.root.join("src.txt"), "y").unwrap();
    for (tool, args) in [
        (
            "fs_write",
            json!({"path": "blocker/a/b.txt", "content": "z"}),
        ),
        (
            "fs_move",
            json!({"from": "src.txt", "to": "blocker/a/b.txt"}),
        ),
    ] {
        for via in [Via::Direct, Via::Mqtt] {
            match f.rt.call(&s(), via, tool, args.clone()) {
                Err(CallError::Respond(ToolError::Failed { message, .. })) => {
                    assert!(message.contains("blocker/a/b.txt"), "{tool}: {message}")
                }
                other => panic!("{tool} via {via:?}: expected failed, got {other:?}"),
            }
        }
    }
    assert_eq!(
        std::fs::read_to_string(f.root.join("src.txt")).unwrap(),
        "y"
    );
}

#[test]
fn a_sessions_own_approver_is_asked_instead_of_the_runtimes_even_through_tool_call() {
    // The runtime would approve everything; the session's user (an MCP client, a Telegram
    // chat, the dashboard) says no, and theirs is the answer that counts.
    let runtime_asked = Arc::new(Mutex::new(Vec::new()));
    let f = fixture(
        Box::new(Recorder {
            asked: runtime_asked.clone(),
            approve: true,
        }),
        false,
    );
    let session_asked = Arc::new(Mutex::new(Vec::new()));
    let session = s().with_approver(Arc::new(Recorder {
        asked: session_asked.clone(),
        approve: false,
    }));
    std::fs::write(f.root.join("keep.txt"), "data").unwrap();
    for (via, name, args) in [
        (Via::Direct, "fs_delete", json!({"path": "keep.txt"})),
        (
            Via::Mcp,
            "tool_call",
            json!({"name": "fs_delete", "arguments": {"path": "keep.txt"}}),
        ),
    ] {
        let e = err(f.rt.call(&session, via, name, args));
        assert!(
            matches!(&e, ToolError::ApprovalDenied { tool, .. } if tool == "fs_delete"),
            "{e:?}"
        );
    }
    assert_eq!(session_asked.lock().unwrap().len(), 2);
    assert!(
        runtime_asked.lock().unwrap().is_empty(),
        "the runtime's approver is not asked for a session that has its own"
    );
    assert!(f.root.join("keep.txt").exists());
    // Without its own approver the same session falls back to the runtime's.
    f.rt.call(&s(), Via::Direct, "fs_delete", json!({"path": "keep.txt"}))
        .unwrap();
    assert_eq!(runtime_asked.lock().unwrap().len(), 1);
    assert!(!f.root.join("keep.txt").exists());
}
