//! The SQLite store under `$COVO_HOME`: conversations, memories, productivity data, schedules,
//! the peer's sub-agents and the audit log.
//!
//! One connection behind a mutex; WAL mode so a crash never leaves a half-written row. Schema
//! changes are numbered migrations applied in order and recorded in `PRAGMA user_version`.
//!
//! Several processes (`covo tools call`, `covo chat`, `covo run`) may use one database at once:
//! - every connection waits up to [`BUSY_TIMEOUT`] for another's lock;
//! - the migrations run in one `BEGIN IMMEDIATE` transaction that reads `user_version` again
//!   under the write lock, so exactly one process migrates and the others see its version;
//! - every transaction that reads and then writes is immediate too ([`write_tx`]).
//!
//! The audit log keeps small arguments and replaces large strings by their size and a short
//! hash; forgetting a memory removes its text from turns, the outbox and the audit log
//! ([`redact`] documents both).

use rusqlite::{params, Connection, Transaction, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

pub mod conversations;
pub mod fts;
pub mod memory;
pub mod productivity;
pub mod readings;
pub mod redact;
pub mod retention;
pub mod schedules;
pub mod session;
pub mod subagents;
pub mod telegram;
pub mod usage;
pub mod watches;

pub use conversations::{Conversation, Fork, ForkError, OutboxEntry, SearchHit, Turn};
pub use memory::{Memory, MemoryHit};
pub use productivity::{Card, Goal, GoalNote, GoalStatus, KanbanColumn};
pub use readings::Reading;
pub use schedules::{
    next_cron_run, BadSchedule, Claimed, Schedule, ScheduleAction, ScheduleTrigger,
};
pub use session::{Plan, PlanMode, Todo, TodoStatus};
pub use subagents::{SubAgent, SubAgentCall, SubAgentState};
pub use usage::TurnUsage;
pub use watches::{NewWatch, Op, Rule, Watch, WatchState};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database folder could not be created.
    #[error("cannot create {path}: {source}")]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A stored value could not be read back (bad JSON, bad time, bad cron).
    #[error("stored data is invalid: {0}")]
    Data(String),
    /// A full-text query was refused (see [`fts`]); the caller's text is at fault, not the store.
    #[error(transparent)]
    Query(#[from] fts::QueryError),
}

/// How long a statement waits for another connection's lock before failing.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The page cache of an on-disk store: SQLite's `cache_size`, where a negative value is KiB.
pub const CACHE_SIZE: i64 = -512;

/// Numbered schema migrations. Append only: never edit a migration that has shipped.
const MIGRATIONS: &[&str] = &[
    // 1: the audit log of every dispatched call.
    "CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        session TEXT NOT NULL,
        via TEXT NOT NULL,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        outcome TEXT NOT NULL,
        detail TEXT,
        micros INTEGER NOT NULL
    );",
    // 2: conversations, their turns (with a full-text index) and the outbox of sent messages.
    conversations::MIGRATION,
    // 3: per-session state: the to-do list and the plan.
    session::MIGRATION,
    // 4: memories with a full-text index.
    memory::MIGRATION,
    // 5: goals and kanban boards.
    productivity::MIGRATION,
    // 6: scheduled jobs.
    schedules::MIGRATION,
    // 7: token usage per turn.
    usage::MIGRATION,
    // 8: sensor readings.
    readings::MIGRATION,
    // 9: sensor watches.
    watches::MIGRATION,
    // 10: the sub-agents `covo peer` runs.
    subagents::MIGRATION,
    // 11: the full-text indexes drop a deleted row's terms at once instead of marking them
    // deleted until a merge, so a forgotten text leaves no trace in them (SQLite 3.44+).
    "INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
     INSERT INTO turns_fts(turns_fts, rank) VALUES ('secure-delete', 1);",
    // 12: compact sensor readings (a year of default sampling fits in about 45 MB).
    readings::MIGRATION_COMPACT,
    // 13: the Telegram bot's update offset and inbox, paired users and pairing codes.
    telegram::MIGRATION,
    // 14: the Telegram approval questions waiting for a press, closed after a restart.
    telegram::MIGRATION_APPROVALS,
];

/// The gateway's database.
pub struct Store {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
}

/// One row of the audit log, as written by the dispatch pipeline.
#[derive(Debug, Clone)]
pub struct AuditEntry<'a> {
    /// The session (conversation) the call belongs to.
    pub session: &'a str,
    /// The call path: `direct`, `tool_call`, `mqtt`, `remote`.
    pub via: &'a str,
    /// The tool name as asked.
    pub tool: &'a str,
    /// The arguments as received (JSON text); stored capped and redacted
    /// ([`redact::audit_args`]).
    pub args: &'a str,
    /// `ok`, or the error kind.
    pub outcome: &'a str,
    /// The error message, when there was one; stored cut at
    /// [`redact::AUDIT_DETAIL_CHARS`] characters.
    pub detail: Option<&'a str>,
    /// How long the call took, in microseconds.
    pub micros: u64,
}

impl Store {
    /// Opens (creating if needed) the database `covo.db` in `home`.
    pub fn open_in(home: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(home).map_err(|source| StoreError::CreateDir {
            path: home.to_path_buf(),
            source,
        })?;
        let path = home.join("covo.db");
        let conn = Connection::open(&path)?;
        // First, so that every statement after it waits for another process's lock instead of
        // failing with "database is locked".
        conn.busy_timeout(BUSY_TIMEOUT)?;
        enable_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // A 512 KiB page cache instead of SQLite's 2 MiB: the file is a few MB under its
        // retention limits, and a daemon's cache that fills with it is RSS that never returns
        // (the soak saw 1.3 MiB of growth over 10,000 turns).
        conn.pragma_update(None, "cache_size", CACHE_SIZE)?;
        Self::init(conn, Some(path))
    }

    /// An in-memory database, for tests and benches.
    pub fn in_memory() -> Result<Store, StoreError> {
        Self::init(Connection::open_in_memory()?, None)
    }

    fn init(mut conn: Connection, path: Option<PathBuf>) -> Result<Store, StoreError> {
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Deleted and rewritten content is overwritten with zeros, so a forgotten text does not
        // linger in free pages.
        conn.pragma_update(None, "secure_delete", "ON")?;
        migrate(&mut conn)?;
        Ok(Store {
            conn: Mutex::new(conn),
            path,
        })
    }

    /// The database file, if on disk.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The connection, locked. A poisoned lock is recovered: SQLite keeps its own consistency.
    pub fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one entry to the audit log, its arguments capped and redacted (see [`redact`]).
    pub fn audit(&self, e: &AuditEntry<'_>) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "INSERT INTO audit (at, session, via, tool, args, outcome, detail, micros)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                now_rfc3339(),
                e.session,
                e.via,
                e.tool,
                redact::audit_args(e.args),
                e.outcome,
                e.detail.map(redact::audit_detail),
                e.micros as i64
            ])?;
        Ok(())
    }
}

/// Switches the database to WAL. The mode is persistent, so this changes only a fresh
/// database. The switch needs an exclusive lock, and when other connections are opening the
/// same fresh file SQLite reports it busy at once, without the busy handler, so the switch is
/// retried (with a little jitter) until [`BUSY_TIMEOUT`].
fn enable_wal(conn: &Connection) -> Result<(), StoreError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                tracing::debug!("database busy while switching to WAL; retrying");
                std::thread::sleep(std::time::Duration::from_millis(2 + fastrand::u64(..8)));
            }
            r => return Ok(r?),
        }
    }
}

fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // Versions only grow, so a database already at the last one needs no write lock.
    if user_version(conn)? >= MIGRATIONS.len() {
        return Ok(());
    }
    // Read the version again under the write lock: another process may have migrated since.
    let tx = write_tx(conn)?;
    let current = user_version(&tx)?;
    if current >= MIGRATIONS.len() {
        return Ok(());
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        tracing::debug!(migration = i + 1, "migrating the store");
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()?;
    Ok(())
}

fn user_version(conn: &Connection) -> Result<usize, StoreError> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize)
}

/// Begins a transaction that takes the write lock at once (`BEGIN IMMEDIATE`). Every
/// transaction that reads and then writes uses it: a deferred one starts as a reader, and when
/// another connection has written in between, its upgrade to a writer fails with "database is
/// locked" at once, without waiting for the busy timeout.
pub(crate) fn write_tx(conn: &mut Connection) -> rusqlite::Result<Transaction<'_>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
}

/// The current UTC time as RFC 3339 with millisecond precision, the store's one time format.
pub fn now_rfc3339() -> String {
    fmt_time(chrono::Utc::now())
}

/// Formats a UTC time in the store's one time format (RFC 3339, milliseconds, `Z`), which
/// sorts lexically in time order.
pub fn fmt_time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Parses a time the store wrote.
pub fn parse_time(s: &str) -> Result<chrono::DateTime<chrono::Utc>, StoreError> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| StoreError::Data(format!("bad time '{s}': {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_once_and_record_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_in(dir.path()).unwrap();
        drop(s);
        let s = Store::open_in(dir.path()).unwrap();
        let v: i64 = s
            .conn()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v as usize, MIGRATIONS.len());
    }

    /// Runs `f(i)` on `n` threads that start together; returns the failures.
    fn at_once<T: Send>(
        n: usize,
        f: impl Fn(usize) -> Result<T, StoreError> + Sync,
    ) -> Vec<String> {
        let start = std::sync::Barrier::new(n);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let (start, f) = (&start, &f);
                    s.spawn(move || {
                        start.wait();
                        f(i).err().map(|e| e.to_string())
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().unwrap())
                .collect()
        })
    }

    #[test]
    fn many_connections_opening_a_fresh_database_at_once_all_succeed() {
        for _ in 0..24 {
            let dir = tempfile::tempdir().unwrap();
            let failures = at_once(12, |i| {
                let s = Store::open_in(dir.path())?;
                s.store_memory(&format!("opened by {i}"), &[], None)
            });
            assert!(failures.is_empty(), "{failures:?}");
            let s = Store::open_in(dir.path()).unwrap();
            let n: i64 = s
                .conn()
                .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 12);
        }
    }

    #[test]
    fn concurrent_writers_and_forgets_on_separate_connections_never_fail() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open_in(dir.path()).unwrap());
        let rounds = 25;
        let failures = at_once(8, |i| {
            let s = Store::open_in(dir.path())?;
            for k in 0..rounds {
                s.store_memory(&format!("keep t{i} r{k}"), &[], None)?;
                let gone = s.store_memory(&format!("drop t{i} r{k}"), &[], None)?;
                s.append_turn(&format!("t{i}"), "user", &format!("round {k}"))?;
                if k % 2 == 0 {
                    s.forget_memory(gone.id)?;
                } else {
                    let forgotten = s.forget_matching(&format!("drop t{i} r{k}"))?;
                    assert_eq!(forgotten.len(), 1);
                }
                s.recall(&format!("t{i}"), None, 5)?;
            }
            Ok(())
        });
        assert!(
            failures.is_empty(),
            "{} failures: {failures:?}",
            failures.len()
        );
        let s = Store::open_in(dir.path()).unwrap();
        let texts: Vec<String> = {
            let conn = s.conn();
            let mut stmt = conn.prepare("SELECT text FROM memories").unwrap();
            let rows = stmt.query_map([], |r| r.get(0)).unwrap();
            rows.collect::<Result<_, _>>().unwrap()
        };
        assert_eq!(texts.len(), 8 * rounds);
        assert!(texts.iter().all(|t| t.starts_with("keep ")));
    }
}
