//! Retention of the growing tables (`[store]`), on a real SQLite file: pruning in small
//! batches keeps each table within its limits, `covo store stats` reports it, and a year of
//! default sampling fits in 50 MB.

use covo::store::retention::{Limit, Limits};
use covo::store::{AuditEntry, Store};
use serde_json::Value;

fn limits(rows: (u64, u64, u64), days: u64) -> Limits {
    Limits {
        readings: Limit {
            days: Some(days),
            rows: Some(rows.0),
        },
        audit: Limit {
            days: Some(days),
            rows: Some(rows.1),
        },
        turns: Limit {
            days: Some(days),
            rows: Some(rows.2),
        },
    }
}

fn count(s: &Store, table: &str) -> u64 {
    s.conn()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap() as u64
}

fn ago(days: i64, minutes: i64) -> String {
    covo::store::fmt_time(
        chrono::Utc::now() - chrono::Duration::days(days) - chrono::Duration::minutes(minutes),
    )
}

/// `n` readings of three quantities, one a minute, the newest now.
fn fill_readings(s: &Store, n: i64, days_back: i64) {
    for i in 0..n {
        let at = ago(0, (n - i) * days_back * 1440 / n);
        s.log_reading(
            "climate",
            &at,
            &[
                ("temperature", 20.0 + i as f64 / 7.0, "degC"),
                ("humidity", 40.5, "%RH"),
                ("pressure", 1013.2, "hPa"),
            ],
        )
        .unwrap();
    }
}

#[test]
fn pruning_keeps_every_table_within_its_limits_in_small_batches() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open_in(dir.path()).unwrap();
    // 3,000 readings (9,000 rows) over 100 days; 2,000 audit rows and 1,500 turns, half of
    // them 60 days old.
    fill_readings(&s, 3_000, 100);
    for i in 0..2_000 {
        s.audit(&AuditEntry {
            session: "s",
            via: "direct",
            tool: "sensor_read",
            args: r#"{"sensor":"climate"}"#,
            outcome: "ok",
            detail: None,
            micros: i,
        })
        .unwrap();
    }
    let conv = s.create_conversation("retention").unwrap();
    for i in 0..1_500 {
        s.append_turn(&conv, "user", &format!("turn number {i}"))
            .unwrap();
    }
    {
        let c = s.conn();
        c.execute("UPDATE audit SET at = ?1 WHERE id <= 1000", [ago(60, 0)])
            .unwrap();
        c.execute("UPDATE turns SET at = ?1 WHERE id <= 750", [ago(60, 0)])
            .unwrap();
    }
    assert_eq!(count(&s, "samples"), 9_000);
    // Limits: 30 days; 2,400 reading rows, 600 audit rows, 500 turns.
    let lim = limits((2_400, 600, 500), 30);

    // One pass of at most 3 batches of 100 rows per table.
    let p = s.prune(&lim, 100, 3).unwrap();
    assert_eq!((p.readings, p.audit, p.turns), (300, 300, 300), "{p:?}");
    assert_eq!(p.batches, 9);
    assert_eq!(count(&s, "samples"), 8_700);

    // Passes until nothing is left to prune: every batch is at most 100 rows.
    let mut passes = 1;
    loop {
        let p = s.prune(&lim, 100, 3).unwrap();
        assert!(
            p.readings <= 300 && p.audit <= 300 && p.turns <= 300,
            "{p:?}"
        );
        passes += 1;
        if p.total() == 0 {
            break;
        }
        assert!(passes < 100);
    }
    assert!(passes > 10, "{passes}");
    // Within the row limits: the 30-day cut leaves about 2,700 reading rows, the row limit 2,400.
    let readings = count(&s, "samples");
    assert!((2_390..=2_400).contains(&readings), "{readings}");
    assert_eq!(count(&s, "audit"), 600, "the newest 600 of the young 1,000");
    assert_eq!(count(&s, "turns"), 500);
    // The oldest kept audit row is the 1,401st: rows go oldest first.
    let oldest: i64 = s
        .conn()
        .query_row("SELECT min(id) FROM audit", [], |r| r.get(0))
        .unwrap();
    assert_eq!(oldest, 1_401);
    // The full-text index follows the turns.
    let fts: i64 = s
        .conn()
        .query_row(
            "SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'number'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(fts, 500);
    // Readings outside the age limit are gone even below the row limit.
    let lim = limits((1_000_000, 1_000_000, 1_000_000), 5);
    // The cut is taken at prune time; compare against a clock read before it, not after.
    let before = chrono::Utc::now();
    s.prune_all(&lim, 100).unwrap();
    let stats = s.stats(&lim).unwrap();
    let oldest = covo::store::parse_time(stats.readings.oldest.as_deref().unwrap()).unwrap();
    // In whole seconds, as the cut and the keys are: a sub-second clock would make a row kept
    // at the cut's second look a fraction older than five days.
    assert!(
        before.timestamp() - oldest.timestamp() <= 5 * 86_400,
        "{oldest} kept at {before}"
    );
}

#[test]
fn a_year_of_default_sampling_fits_in_50_mb() {
    // The sim board samples climate (3 quantities) and light (1) every 60 s: 4 rows a minute.
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open_in(dir.path()).unwrap();
    let size = || {
        s.conn()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        std::fs::metadata(dir.path().join("covo.db")).unwrap().len() as f64
    };
    // The empty schema (every table and index of the store) is a fixed cost.
    let empty = size();
    let base = chrono::Utc::now() - chrono::Duration::days(30);
    let n = 15_000i64;
    for i in 0..n {
        let at = covo::store::fmt_time(base + chrono::Duration::seconds(60 * i));
        let x = i as f64;
        s.log_reading(
            "climate",
            &at,
            &[
                ("temperature", 21.0 + (x / 97.0).sin() * 3.1234567, "degC"),
                ("humidity", 45.0 + (x / 53.0).cos() * 10.987654, "%RH"),
                ("pressure", 1013.0 + (x / 211.0).sin() * 5.55555, "hPa"),
            ],
        )
        .unwrap();
        s.log_reading(
            "light",
            &at,
            &[("illuminance", 300.0 + (x / 13.0).sin() * 250.3, "lux")],
        )
        .unwrap();
    }
    let bytes = size();
    let per_row = (bytes - empty) / (4 * n) as f64;
    let year = empty + per_row * 4.0 * 525_600.0;
    eprintln!(
        "readings: {per_row:.1} bytes a row, {:.0} KB of empty schema; a year of 4 quantities a minute: {:.1} MB",
        empty / 1e3,
        year / 1e6
    );
    assert!(year < 50e6, "{:.1} MB a year", year / 1e6);
    // The default row limit holds a year at this rate.
    const { assert!(covo::store::retention::READINGS_ROWS >= 4 * 525_600) };
}

#[test]
fn old_readings_move_to_the_compact_tables() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = Store::open_in(dir.path()).unwrap();
        // Back to version 11, with readings in the old table (and without the tables of the
        // migrations after 12).
        s.conn()
            .execute_batch(
                "DROP TABLE samples; DROP TABLE series;
                 DROP TABLE telegram_state; DROP TABLE telegram_inbox;
                 DROP TABLE telegram_users; DROP TABLE telegram_pairing;
                 DROP TABLE telegram_approvals;
                 CREATE TABLE readings (id INTEGER PRIMARY KEY, sensor TEXT NOT NULL,
                     quantity TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, at TEXT NOT NULL);
                 INSERT INTO readings (sensor, quantity, value, unit, at) VALUES
                     ('climate', 'temperature', 21.5, 'degC', '2026-01-01T10:00:00.250Z'),
                     ('climate', 'humidity', 40.0, '%RH', '2026-01-01T10:00:00.250Z'),
                     ('light', 'illuminance', 300.0, 'lux', '2026-01-01T10:01:00.000Z');
                 PRAGMA user_version = 11;",
            )
            .unwrap();
    }
    let s = Store::open_in(dir.path()).unwrap();
    let r = s
        .readings(
            "climate",
            None,
            "2026-01-01T00:00:00.000Z",
            "2026-01-02T00:00:00.000Z",
        )
        .unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].quantity, "temperature");
    assert_eq!(r[0].value, 21.5);
    assert_eq!(r[0].unit, "degC");
    assert_eq!(r[0].at, "2026-01-01T10:00:00.000Z");
    assert_eq!(
        s.readings(
            "light",
            Some("illuminance"),
            "2026-01-01T00:00:00.000Z",
            "2026-01-02T00:00:00.000Z"
        )
        .unwrap()
        .len(),
        1
    );
}

#[test]
fn covo_store_stats_and_prune_report_sizes_rows_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    {
        let s = Store::open_in(&home).unwrap();
        fill_readings(&s, 600, 10);
    }
    let cfg = dir.path().join("covo.toml");
    std::fs::write(
        &cfg,
        "[store]\nreadings_rows = 900\nreadings_days = 0\naudit_days = 7\n",
    )
    .unwrap();
    let run = |cmd: &str| -> Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_covo"))
            .args(["--config", cfg.to_str().unwrap(), "store", cmd])
            .env("COVO_HOME", &home)
            .env_remove("COVO_CONFIG")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let v = run("stats");
    assert_eq!(v["readings"]["rows"], 1_800, "{v}");
    assert_eq!(v["readings"]["limit"]["rows"], 900);
    assert_eq!(
        v["readings"]["limit"]["days"],
        Value::Null,
        "0 turns the limit off"
    );
    assert_eq!(v["audit"]["limit"]["days"], 7);
    assert_eq!(v["audit"]["limit"]["rows"], 200_000, "the default");
    assert!(v["file_bytes"].as_u64().unwrap() > 0, "{v}");
    assert!(v["readings"]["oldest"].is_string());
    let v = run("prune");
    assert_eq!(v["pruned"]["readings"], 900, "{v}");
    assert_eq!(v["stats"]["readings"]["rows"], 900);
}

#[test]
fn usage_follows_the_turns_and_emptied_conversations_go_but_not_a_new_one() {
    // The soak's pattern: many short sessions, each its own conversation, one turn and one
    // usage row each; then a session that has started but not yet said anything.
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open_in(dir.path()).unwrap();
    let usage = covo::llm::Usage {
        input_tokens: 10,
        output_tokens: 2,
    };
    let mut convs = Vec::new();
    for i in 0..300 {
        let c = s.create_conversation(&format!("session {i}")).unwrap();
        s.append_turn(&c, "user", &format!("turn {i}")).unwrap();
        s.record_usage(&c, "scripted", 1, usage).unwrap();
        convs.push(c);
    }
    // A fork (which copies its parent's turn, under a new id) keeps its parent.
    let parent = &convs[10];
    let fork = s.fork_conversation(parent, 1).unwrap().id;
    let fresh = s.create_conversation("just started").unwrap();
    assert_eq!(count(&s, "conversations"), 302);
    // 100 turns kept (the last 99 sessions' and the fork's copy): usage follows, and the
    // emptied conversations go.
    let lim = limits((1_000_000, 1_000_000, 100), 3650);
    let p = s.prune_all(&lim, 50).unwrap();
    assert_eq!((p.turns, p.usage), (201, 200), "{p:?}");
    assert_eq!(count(&s, "usage"), 100);
    assert_eq!(count(&s, "turns"), 100);
    // 201 sessions lost their turns; the fork's parent stays (the fork refers to it), and so
    // does the just-started session, which is newer than every conversation with turns.
    assert_eq!(p.conversations, 200, "{p:?}");
    let left: Vec<String> = s
        .conn()
        .prepare("SELECT id FROM conversations ORDER BY num")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(left.len(), 102, "{left:?}");
    assert_eq!(&left[0], parent);
    assert_eq!(&left[1..100], &convs[201..300]);
    assert_eq!(left[100..], [fork, fresh.clone()]);
    // The new session can still talk; its turn pushes the oldest session's out, and that
    // conversation goes with it.
    s.append_turn(&fresh, "user", "hello").unwrap();
    let p = s.prune_all(&lim, 50).unwrap();
    assert_eq!((p.turns, p.conversations), (1, 1), "{p:?}");
    assert_eq!(s.prune_all(&lim, 50).unwrap().total(), 0);
}
