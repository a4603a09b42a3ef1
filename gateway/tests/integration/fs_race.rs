//! The file tools never leave the workspace through a symlink: not a static one, and not one that
//! another thread swaps in while the tools run (a directory inside the workspace replaced by a
//! link to a directory outside it between the check and the use).

#![cfg(unix)]

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{AutoApprove, Runtime, Via};
use covo::store::Store;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    rt: Runtime,
}

/// A workspace `ws/` and, beside it, a directory `outside/` holding `secret.txt` and `victim`.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s3cret").unwrap();
    std::fs::write(outside.join("victim"), "keep me").unwrap();
    let mut config = Config::default();
    config.fs.roots = vec![root.clone()];
    let mut opts = covo::tools::options(config);
    opts.profile = Some("coding".into());
    opts.approver = Box::new(AutoApprove);
    opts.home = Some(base.clone());
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    Fixture {
        _dir: dir,
        root,
        outside,
        rt,
    }
}

fn s() -> Session {
    Session::new("fs-race", "cli")
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let v = std::fs::read_to_string(e.path()).unwrap_or_else(|_| "<not a file>".into());
        out.insert(e.file_name().to_string_lossy().into_owned(), v);
    }
    out
}

fn untouched(outside: &Path) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("secret.txt".to_string(), "s3cret".to_string()),
        ("victim".to_string(), "keep me".to_string()),
    ])
    .into_iter()
    .inspect(|_| assert!(outside.is_dir()))
    .collect()
}

/// A call either succeeds or fails with a structured tool error; never a fatal error.
fn structured(r: Result<Value, CallError>) -> Result<Value, ToolError> {
    match r {
        Ok(v) => Ok(v),
        Err(CallError::Respond(e)) => Err(e),
        Err(other) => panic!("expected a result or a tool error, got {other:?}"),
    }
}

/// Like `structured`, but counts fatal errors in `fatal` instead of panicking, so that a race
/// test can first report what reached the outside.
fn counted(r: Result<Value, CallError>, fatal: &mut Vec<String>) -> Result<Value, ()> {
    match r {
        Ok(v) => Ok(v),
        Err(CallError::Respond(_)) => Err(()),
        Err(other) => {
            fatal.push(format!("{other:?}"));
            Err(())
        }
    }
}

fn refused_by_roots(e: &ToolError) -> bool {
    matches!(e, ToolError::PolicyRefused { rule, .. } if rule == "fs.roots")
}

/// Keeps swapping `ws/sub` between a real directory (kept as `ws/real` when not in place) and a
/// symlink to `outside`, until `stop`.
fn swapper(root: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let sub = root.join("sub");
        let real = root.join("real");
        let mut junk = 0u64;
        let mut swaps = 0u64;
        // Moves whatever is at `sub` out of the way, without following a link.
        let clear = |junk: &mut u64| match std::fs::symlink_metadata(&sub) {
            Ok(m) if m.file_type().is_symlink() => {
                let _ = std::fs::remove_file(&sub);
            }
            Ok(_) => {
                *junk += 1;
                let _ = std::fs::rename(&sub, root.join(format!("junk-{junk}")));
            }
            Err(_) => {}
        };
        while !stop.load(Ordering::Relaxed) {
            if std::fs::symlink_metadata(&real).is_err() {
                let _ = std::fs::create_dir(&real);
            }
            let _ = std::fs::write(real.join("victim"), "inside");
            let _ = std::fs::write(real.join("secret.txt"), "inside");
            clear(&mut junk);
            let _ = std::fs::rename(&real, &sub);
            std::thread::sleep(Duration::from_micros(200));
            let _ = std::fs::rename(&sub, &real);
            clear(&mut junk);
            let _ = symlink(&outside, &sub);
            std::thread::sleep(Duration::from_micros(200));
            clear(&mut junk);
            swaps += 1;
        }
        swaps
    })
}

/// Runs `body(i)` up to `n` times (at most `limit` long) while `ws/sub` is being swapped.
fn under_race(f: &Fixture, n: usize, limit: Duration, mut body: impl FnMut(usize)) -> usize {
    let stop = Arc::new(AtomicBool::new(false));
    let t = swapper(f.root.clone(), f.outside.clone(), stop.clone());
    let started = Instant::now();
    let mut done = 0;
    while done < n && started.elapsed() < limit {
        body(done);
        done += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = t.join().unwrap();
    assert!(swaps > 0, "the swapper never ran");
    done
}

#[test]
fn writes_never_land_outside_while_a_directory_is_swapped_for_a_symlink() {
    let f = fixture();
    let mut ok = 0;
    let mut refused = 0;
    let mut fatal = Vec::new();
    let done = under_race(&f, 2000, Duration::from_secs(30), |i| {
        let r = counted(
            f.rt.call(
                &s(),
                Via::Direct,
                "fs_write",
                json!({"path": format!("sub/w{i}.txt"), "content": "x"}),
            ),
            &mut fatal,
        );
        match r {
            Ok(_) => ok += 1,
            Err(_) => refused += 1,
        }
    });
    let escaped: Vec<String> = snapshot(&f.outside)
        .into_keys()
        .filter(|k| k.starts_with('w') || k.starts_with('.'))
        .collect();
    assert!(
        escaped.is_empty(),
        "{} of {done} writes landed outside the workspace ({ok} ok, {refused} refused): {:?}",
        escaped.len(),
        &escaped[..escaped.len().min(5)]
    );
    assert_eq!(snapshot(&f.outside), untouched(&f.outside));
    assert!(
        fatal.is_empty(),
        "{} fatal errors: {:?}",
        fatal.len(),
        &fatal[..1]
    );
    eprintln!("{done} writes: {ok} inside, {refused} refused");
    assert!(ok > 0, "no write succeeded, so the race was not exercised");
}

#[test]
fn reads_deletes_and_moves_never_touch_the_outside_while_a_directory_is_swapped() {
    let f = fixture();
    let mut leaked = 0;
    let mut fatal = Vec::new();
    under_race(&f, 1500, Duration::from_secs(30), |i| {
        let r = counted(
            f.rt.call(
                &s(),
                Via::Direct,
                "fs_read",
                json!({"path": "sub/secret.txt"}),
            ),
            &mut fatal,
        );
        if let Ok(v) = r {
            if v["content"].as_str().unwrap_or("").contains("s3cret") {
                leaked += 1;
            }
        }
        let _ = counted(
            f.rt.call(
                &s(),
                Via::Direct,
                "fs_delete",
                json!({"path": "sub/victim"}),
            ),
            &mut fatal,
        );
        let _ = counted(
            f.rt.call(
                &s(),
                Via::Direct,
                "fs_move",
                json!({"from": "sub/secret.txt", "to": format!("moved-{i}")}),
            ),
            &mut fatal,
        );
        std::fs::write(f.root.join(format!("in-{i}")), "in").unwrap();
        let _ = counted(
            f.rt.call(
                &s(),
                Via::Direct,
                "fs_move",
                json!({"from": format!("in-{i}"), "to": format!("sub/in-{i}")}),
            ),
            &mut fatal,
        );
    });
    assert_eq!(leaked, 0, "fs_read returned the outside file's content");
    assert_eq!(
        snapshot(&f.outside),
        untouched(&f.outside),
        "the outside directory changed"
    );
    assert!(
        fatal.is_empty(),
        "{} fatal errors: {:?}",
        fatal.len(),
        &fatal[..1]
    );
}

#[test]
fn a_symlink_pointing_outside_is_refused_by_every_file_tool() {
    let f = fixture();
    symlink(&f.outside, f.root.join("out_dir")).unwrap();
    symlink(f.outside.join("secret.txt"), f.root.join("out_file")).unwrap();
    std::fs::write(f.root.join("mine.txt"), "mine").unwrap();
    let calls = [
        ("fs_read", json!({"path": "out_file"})),
        ("fs_read", json!({"path": "out_dir/secret.txt"})),
        ("fs_write", json!({"path": "out_file", "content": "x"})),
        (
            "fs_write",
            json!({"path": "out_dir/new.txt", "content": "x"}),
        ),
        (
            "fs_write",
            json!({"path": "out_dir/deeper/new.txt", "content": "x"}),
        ),
        ("fs_stat", json!({"path": "out_file"})),
        ("fs_stat", json!({"path": "out_dir/secret.txt"})),
        ("fs_list", json!({"path": "out_dir"})),
        (
            "fs_move",
            json!({"from": "out_dir/secret.txt", "to": "stolen.txt"}),
        ),
        ("fs_move", json!({"from": "out_file", "to": "stolen.txt"})),
        (
            "fs_move",
            json!({"from": "mine.txt", "to": "out_dir/mine.txt"}),
        ),
        (
            "fs_move",
            json!({"from": "mine.txt", "to": "out_dir/victim", "overwrite": true}),
        ),
        ("fs_delete", json!({"path": "out_dir/victim"})),
        ("fs_delete", json!({"path": "out_file"})),
        ("fs_delete", json!({"path": "out_dir/", "recursive": true})),
    ];
    for (tool, args) in calls {
        match structured(f.rt.call(&s(), Via::Direct, tool, args.clone())) {
            Err(e) => assert!(refused_by_roots(&e), "{tool} {args}: {e:?}"),
            Ok(v) => panic!("{tool} {args} was not refused: {v}"),
        }
    }
    assert_eq!(snapshot(&f.outside), untouched(&f.outside));
    assert_eq!(
        std::fs::read_to_string(f.root.join("mine.txt")).unwrap(),
        "mine"
    );
    assert!(!f.root.join("stolen.txt").exists());
}

#[test]
fn a_symlink_that_stays_inside_the_workspace_still_works() {
    let f = fixture();
    std::fs::create_dir_all(f.root.join("real")).unwrap();
    std::fs::write(f.root.join("real/a.txt"), "a").unwrap();
    symlink("real", f.root.join("alias")).unwrap();
    let r =
        f.rt.call(&s(), Via::Direct, "fs_read", json!({"path": "alias/a.txt"}))
            .unwrap();
    assert_eq!(r["content"], "a\n");
    f.rt.call(
        &s(),
        Via::Direct,
        "fs_write",
        json!({"path": "alias/b.txt", "content": "b"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.root.join("real/b.txt")).unwrap(),
        "b"
    );
}

#[test]
fn absolute_paths_select_their_root_and_relative_paths_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (one, two) = (base.join("one"), base.join("two"));
    let mut config = Config::default();
    config.fs.roots = vec![one.clone(), two.clone()];
    let mut opts = covo::tools::options(config);
    opts.profile = Some("coding".into());
    opts.approver = Box::new(AutoApprove);
    opts.home = Some(base.clone());
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    let call = |tool: &str, args: Value| structured(rt.call(&s(), Via::Direct, tool, args));
    call("fs_write", json!({"path": "r.txt", "content": "1"})).unwrap();
    let abs = two.join("d/a.txt");
    call("fs_write", json!({"path": abs, "content": "2"})).unwrap();
    assert_eq!(std::fs::read_to_string(one.join("r.txt")).unwrap(), "1");
    assert_eq!(std::fs::read_to_string(two.join("d/a.txt")).unwrap(), "2");
    let moved = two.join("moved.txt");
    call("fs_move", json!({"from": "r.txt", "to": moved})).unwrap();
    assert_eq!(std::fs::read_to_string(&moved).unwrap(), "1");
    let e = call("fs_read", json!({"path": base.join("elsewhere.txt")})).unwrap_err();
    assert!(refused_by_roots(&e), "{e:?}");
    let e = call("fs_delete", json!({"path": two, "recursive": true})).unwrap_err();
    assert!(refused_by_roots(&e), "{e:?}");
}
