//! Many `covo` processes on one `COVO_HOME` at once: the schema migration, writes, forgets and
//! reads all succeed, and no row is lost.

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::Barrier;

/// Processes running at once.
const PROCESSES: usize = 16;
/// Memories each worker stores; it forgets one of them.
const STORED: usize = 3;

fn covo(home: &Path, tool: &str, args: Value) -> Result<Value, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args(["tools", "call", tool, &args.to_string()])
        .current_dir(home.parent().unwrap())
        .env("COVO_HOME", home)
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A failed audit write is only logged: it must not happen either.
    if !out.status.success() || !stderr.trim().is_empty() {
        return Err(format!("{tool} {args}: {stdout} {stderr}"));
    }
    serde_json::from_str(&stdout).map_err(|e| format!("{tool}: {e}: {stdout}"))
}

/// One worker: stores `STORED` memories, reads, forgets its first memory by query and another
/// by id, reads again. Returns how many of its memories remain.
fn worker(home: &Path, run: &str, w: usize) -> Result<usize, String> {
    let mut ids = Vec::new();
    for k in 0..STORED {
        let text = format!("{run} worker{w} item{k} shared");
        let r = covo(home, "memory_store", serde_json::json!({ "text": text }))?;
        ids.push(r["id"].as_i64().ok_or("no id")?);
    }
    covo(
        home,
        "memory_recall",
        serde_json::json!({"query": "shared"}),
    )?;
    let q = format!("{run} worker{w} item0");
    let r = covo(home, "memory_forget", serde_json::json!({ "query": q }))?;
    if r["count"] != 1 {
        return Err(format!("forget by query: {r}"));
    }
    covo(home, "memory_forget", serde_json::json!({ "id": ids[1] }))?;
    covo(
        home,
        "conversation_search",
        serde_json::json!({"query": "worker"}),
    )?;
    Ok(STORED - 2)
}

fn run_all(home: &Path, run: &str) -> usize {
    let start = Barrier::new(PROCESSES);
    let results: Vec<Result<usize, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..PROCESSES)
            .map(|w| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    worker(home, run, w)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {PROCESSES} workers failed: {failures:#?}",
        failures.len()
    );
    results.into_iter().map(Result::unwrap).sum()
}

fn remaining(home: &Path, run: &str) -> Vec<String> {
    let store = covo::store::Store::open_in(home).unwrap();
    let conn = store.conn();
    let mut stmt = conn
        .prepare("SELECT text FROM memories WHERE text LIKE ?1 || ' %' ORDER BY id")
        .unwrap();
    let rows = stmt.query_map([run], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn audited(home: &Path) -> i64 {
    let store = covo::store::Store::open_in(home).unwrap();
    let n = store
        .conn()
        .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
        .unwrap();
    n
}

fn check(home: &Path, run: &str, expected: usize) {
    let mut texts = remaining(home, run);
    assert_eq!(texts.len(), expected, "{texts:#?}");
    texts.sort();
    let mut want: Vec<String> = (0..PROCESSES)
        .map(|w| format!("{run} worker{w} item2 shared"))
        .collect();
    want.sort();
    assert_eq!(texts, want);
}

/// Calls each worker makes.
const CALLS: i64 = STORED as i64 + 4;

#[test]
fn sixteen_processes_on_a_fresh_and_then_a_warm_store_all_succeed_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    // Fresh: every process races to create the schema.
    let kept = run_all(&home, "fresh");
    check(&home, "fresh", kept);
    assert_eq!(audited(&home), PROCESSES as i64 * CALLS);
    // Warm: the schema exists and holds the first run's rows.
    let kept = run_all(&home, "warm");
    check(&home, "warm", kept);
    check(&home, "fresh", kept);
    assert_eq!(audited(&home), 2 * PROCESSES as i64 * CALLS);
}
