//! Retention: the tables that grow with use (`samples`, the sensor readings; `audit`; `turns`)
//! are pruned by age and by row count, whichever bites first, oldest first, in small batches
//! (each its own short write transaction, so chat, sampling and other processes get the
//! database in between). `covo run` prunes every [`EVERY`], at most [`MAX_BATCHES`] batches of
//! [`BATCH`] rows per table at a time; `covo store prune` prunes until every table is within
//! its limits; `covo store stats` shows sizes, counts and limits.
//!
//! The defaults keep a year of readings at the sim board's default sampling (four quantities
//! a minute, about 2.1 million rows, about 45 MB) and bound the audit log and conversations.
//! Pruning by age walks from the oldest row and stops at the first young one (row ids and
//! reading times grow together), so a pass over tables within their limits is cheap.

use super::{Store, StoreError};
use crate::config::StoreConfig;
use serde::Serialize;
use std::time::Duration;

/// How often `covo run` prunes.
pub const EVERY: Duration = Duration::from_secs(600);
/// Rows deleted per transaction.
pub const BATCH: usize = 500;
/// Batches per table per pass of `covo run`.
pub const MAX_BATCHES: usize = 40;

/// Default days of readings kept.
pub const READINGS_DAYS: u64 = 400;
/// Default reading rows kept: a year of four quantities a minute, with room to spare.
pub const READINGS_ROWS: u64 = 2_200_000;
/// Default days of audit entries kept.
pub const AUDIT_DAYS: u64 = 90;
/// Default audit rows kept.
pub const AUDIT_ROWS: u64 = 200_000;
/// Default days of conversation turns kept.
pub const TURNS_DAYS: u64 = 180;
/// Default conversation turns kept.
pub const TURNS_ROWS: u64 = 50_000;

/// One table's limits; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limit {
    /// Rows older than this many days go.
    pub days: Option<u64>,
    /// Beyond this many rows the oldest go.
    pub rows: Option<u64>,
}

impl Limit {
    fn new(days: Option<u64>, rows: Option<u64>, dd: u64, dr: u64) -> Limit {
        let off = |v: u64| (v > 0).then_some(v);
        Limit {
            days: off(days.unwrap_or(dd)),
            rows: off(rows.unwrap_or(dr)),
        }
    }
}

/// The limits of every pruned table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Sensor readings (`samples`).
    pub readings: Limit,
    /// The audit log.
    pub audit: Limit,
    /// Conversation turns.
    pub turns: Limit,
}

impl Limits {
    /// From `[store]`, with the defaults above; `0` turns a limit off.
    pub fn from_config(c: &StoreConfig) -> Limits {
        Limits {
            readings: Limit::new(
                c.readings_days,
                c.readings_rows,
                READINGS_DAYS,
                READINGS_ROWS,
            ),
            audit: Limit::new(c.audit_days, c.audit_rows, AUDIT_DAYS, AUDIT_ROWS),
            turns: Limit::new(c.turns_days, c.turns_rows, TURNS_DAYS, TURNS_ROWS),
        }
    }
}

/// Rows deleted by one pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    /// Sensor readings.
    pub readings: u64,
    /// Audit entries.
    pub audit: u64,
    /// Conversation turns.
    pub turns: u64,
    /// Token usage rows (one per turn; kept under the turns' limits).
    pub usage: u64,
    /// Conversations with no turns left, older than every conversation that has some.
    pub conversations: u64,
    /// Transactions used.
    pub batches: u64,
}

impl Pruned {
    /// Rows deleted in all.
    pub fn total(&self) -> u64 {
        self.readings + self.audit + self.turns + self.usage + self.conversations
    }
}

/// One table in `covo store stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableStats {
    /// Rows.
    pub rows: u64,
    /// The oldest row's time, if any.
    pub oldest: Option<String>,
    /// The newest row's time, if any.
    pub newest: Option<String>,
    /// Its limits.
    pub limit: Limit,
}

/// What `covo store stats` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// The database file.
    pub path: Option<String>,
    /// Bytes of the database file.
    pub file_bytes: u64,
    /// Bytes of its write-ahead log.
    pub wal_bytes: u64,
    /// Bytes of pages in use (the file less its free pages).
    pub used_bytes: u64,
    /// Sensor readings.
    pub readings: TableStats,
    /// The audit log.
    pub audit: TableStats,
    /// Conversation turns.
    pub turns: TableStats,
    /// Conversations.
    pub conversations: u64,
}

fn cutoff_days(days: u64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() - chrono::Duration::days(days.min(100_000) as i64)
}

/// A rowid table (`audit`, `turns`) whose `at` grows with its id.
struct RowidTable {
    name: &'static str,
}

impl Store {
    /// One pass of pruning: for each table, at most `max_batches` transactions of at most
    /// `batch` rows, oldest first, of rows beyond its age or row limit.
    pub fn prune(
        &self,
        limits: &Limits,
        batch: usize,
        max_batches: usize,
    ) -> Result<Pruned, StoreError> {
        let batch = batch.max(1);
        let mut out = Pruned::default();
        // Readings: keyed by time, so both limits are a time cut.
        let mut cut: Option<i64> = limits
            .readings
            .days
            .map(|d| super::readings::sample_key(cutoff_days(d).timestamp(), 0));
        if let Some(rows) = limits.readings.rows {
            let at: Option<i64> = self
                .conn()
                .query_row(
                    "SELECT key FROM samples ORDER BY key DESC LIMIT 1 OFFSET ?1",
                    [rows as i64],
                    |r| r.get::<_, i64>(0),
                )
                .ok()
                .map(|k| k + 1);
            // The first row beyond the newest `rows` and everything older goes.
            if let Some(at) = at {
                cut = Some(cut.map_or(at, |c| c.max(at)));
            }
        }
        if let Some(cut) = cut {
            for _ in 0..max_batches {
                let n = self.conn().execute(
                    "DELETE FROM samples WHERE key IN
                     (SELECT key FROM samples WHERE key < ?1 ORDER BY key LIMIT ?2)",
                    rusqlite::params![cut, batch as i64],
                )? as u64;
                if n == 0 {
                    break;
                }
                out.readings += n;
                out.batches += 1;
            }
        }
        // Usage rows (one per model answer) live as long as the turns they account for.
        for (t, limit) in [
            (RowidTable { name: "audit" }, limits.audit),
            (RowidTable { name: "turns" }, limits.turns),
            (RowidTable { name: "usage" }, limits.turns),
        ] {
            let n = self.prune_rowid(&t, limit, batch, max_batches, &mut out.batches)?;
            match t.name {
                "audit" => out.audit = n,
                "usage" => out.usage = n,
                _ => out.turns = n,
            }
        }
        out.conversations = self.prune_conversations(batch, max_batches, &mut out.batches)?;
        Ok(out)
    }

    /// Conversations left without turns by the turns' limits. Only those older (by number)
    /// than every conversation that still has turns go: a session that has just started and
    /// not yet said anything is newer than those, and keeps its conversation. A conversation
    /// that is some fork's parent stays, as do the forks' rows.
    fn prune_conversations(
        &self,
        batch: usize,
        max_batches: usize,
        batches: &mut u64,
    ) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for _ in 0..max_batches {
            let n = self.conn().execute(
                "DELETE FROM conversations WHERE num IN (
                     SELECT c.num FROM conversations c
                     WHERE c.num < (SELECT coalesce(min(k.num), 0) FROM conversations k
                                    WHERE EXISTS (SELECT 1 FROM turns t
                                                  WHERE t.conversation_id = k.id))
                       AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = c.id)
                       AND NOT EXISTS (SELECT 1 FROM conversations f WHERE f.parent_id = c.id)
                     ORDER BY c.num LIMIT ?1)",
                [batch as i64],
            )? as u64;
            if n == 0 {
                break;
            }
            deleted += n;
            *batches += 1;
        }
        Ok(deleted)
    }

    fn prune_rowid(
        &self,
        t: &RowidTable,
        limit: Limit,
        batch: usize,
        max_batches: usize,
        batches: &mut u64,
    ) -> Result<u64, StoreError> {
        let name = t.name;
        // The highest id beyond the row limit.
        let over: Option<i64> = match limit.rows {
            Some(rows) => self
                .conn()
                .query_row(
                    &format!("SELECT id FROM {name} ORDER BY id DESC LIMIT 1 OFFSET ?1"),
                    [rows as i64],
                    |r| r.get(0),
                )
                .ok(),
            None => None,
        };
        let cut = limit
            .days
            .map(|d| super::fmt_time(cutoff_days(d)))
            .unwrap_or_default();
        let mut deleted = 0;
        for _ in 0..max_batches {
            // Only the oldest `batch` rows are looked at: ids and times grow together, so
            // this stops at the first young row instead of scanning the table.
            let n = self.conn().execute(
                &format!(
                    "DELETE FROM {name} WHERE id IN (
                         SELECT id FROM (SELECT id, at FROM {name} ORDER BY id LIMIT ?1)
                         WHERE id <= ?2 OR at < ?3)"
                ),
                rusqlite::params![batch as i64, over.unwrap_or(0), cut],
            )? as u64;
            if n == 0 {
                break;
            }
            deleted += n;
            *batches += 1;
        }
        Ok(deleted)
    }

    /// Prunes until every table is within its limits (at most 100,000 batches); returns what
    /// went.
    pub fn prune_all(&self, limits: &Limits, batch: usize) -> Result<Pruned, StoreError> {
        let mut total = Pruned::default();
        for _ in 0..100_000 {
            let p = self.prune(limits, batch, 64)?;
            total.readings += p.readings;
            total.audit += p.audit;
            total.turns += p.turns;
            total.usage += p.usage;
            total.conversations += p.conversations;
            total.batches += p.batches;
            if p.total() == 0 {
                break;
            }
        }
        Ok(total)
    }

    /// Sizes, row counts, time spans and limits of the pruned tables.
    pub fn stats(&self, limits: &Limits) -> Result<Stats, StoreError> {
        let conn = self.conn();
        let q = |sql: &str| -> Result<i64, StoreError> {
            Ok(conn
                .query_row(sql, [], |r| r.get::<_, Option<i64>>(0))?
                .unwrap_or(0))
        };
        let page_size = q("PRAGMA page_size")? as u64;
        let pages = q("PRAGMA page_count")? as u64;
        let free = q("PRAGMA freelist_count")? as u64;
        let opt_s = |sql: &str| -> Result<Option<String>, StoreError> {
            use rusqlite::OptionalExtension;
            Ok(conn
                .query_row(sql, [], |r| r.get::<_, Option<String>>(0))
                .optional()?
                .flatten())
        };
        let opt_t = |sql: &str| -> Result<Option<String>, StoreError> {
            Ok(conn
                .query_row(sql, [], |r| r.get::<_, Option<i64>>(0))?
                .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
                .map(super::fmt_time))
        };
        let readings = TableStats {
            rows: q("SELECT count(*) FROM samples")? as u64,
            oldest: opt_t("SELECT min(key) >> 12 FROM samples")?,
            newest: opt_t("SELECT max(key) >> 12 FROM samples")?,
            limit: limits.readings,
        };
        let table = |name: &str, limit: Limit| -> Result<TableStats, StoreError> {
            Ok(TableStats {
                rows: q(&format!("SELECT count(*) FROM {name}"))? as u64,
                oldest: opt_s(&format!("SELECT at FROM {name} ORDER BY id LIMIT 1"))?,
                newest: opt_s(&format!("SELECT at FROM {name} ORDER BY id DESC LIMIT 1"))?,
                limit,
            })
        };
        let audit = table("audit", limits.audit)?;
        let turns = table("turns", limits.turns)?;
        let conversations = q("SELECT count(*) FROM conversations")? as u64;
        let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let (file_bytes, wal_bytes) = match &self.path {
            Some(p) => (size(p), size(&p.with_extension("db-wal"))),
            None => (page_size * pages, 0),
        };
        Ok(Stats {
            path: self.path.as_ref().map(|p| p.display().to_string()),
            file_bytes,
            wal_bytes,
            used_bytes: page_size * pages.saturating_sub(free),
            readings,
            audit,
            turns,
            conversations,
        })
    }
}
