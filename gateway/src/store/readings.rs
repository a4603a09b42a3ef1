//! Sensor readings: every `sensor_read` and every sample is logged, for `sensor_history`,
//! `sensor_export_csv` and watches.
//!
//! Compact, because a board samples for months on an SD card: each (sensor, quantity, unit) is a
//! row of `series`, and each value a row of `samples` whose integer key is the time in whole
//! Unix seconds shifted left by [`SERIES_BITS`] plus the series id. Keys grow with time, so
//! rows are appended (SQLite then fills its pages) and pruning by age deletes a key range:
//! about 21 bytes a value on disk, so a year of four quantities a minute (the sim board's
//! default sampling) is about 45 MB. A second reading of one quantity within the same second
//! replaces the first; at most 4,095 series exist.

use super::{fmt_time, parse_time, Store, StoreError};
use rusqlite::{params, OptionalExtension};

/// Migration 8: one row per quantity per reading (replaced by [`MIGRATION_COMPACT`]).
pub(super) const MIGRATION: &str = "CREATE TABLE readings (
    id INTEGER PRIMARY KEY,
    sensor TEXT NOT NULL,
    quantity TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX readings_by_sensor ON readings(sensor, quantity, at);";

/// Migration 12: readings move to `series` and `samples` (times in Unix seconds), which
/// hold the same data in about a fifth of the space.
pub(super) const MIGRATION_COMPACT: &str = "
CREATE TABLE series (
    id INTEGER PRIMARY KEY,
    sensor TEXT NOT NULL,
    quantity TEXT NOT NULL,
    unit TEXT NOT NULL,
    UNIQUE (sensor, quantity, unit)
);
CREATE TABLE samples (
    key INTEGER PRIMARY KEY,
    value REAL NOT NULL
);
INSERT OR IGNORE INTO series (sensor, quantity, unit)
    SELECT DISTINCT sensor, quantity, unit FROM readings;
INSERT OR REPLACE INTO samples (key, value)
    SELECT (CAST(strftime('%s', r.at) AS INTEGER) << 12) | s.id, r.value
    FROM readings r JOIN series s ON s.sensor = r.sensor AND s.quantity = r.quantity
        AND s.unit = r.unit
    ORDER BY r.id;
DROP TABLE readings;";

/// Bits of a sample's key that hold its series.
pub const SERIES_BITS: u32 = 12;
const SERIES_MASK: i64 = (1 << SERIES_BITS) - 1;

/// A sample's key: its time (Unix seconds) and series.
pub fn sample_key(at: i64, series: i64) -> i64 {
    (at << SERIES_BITS) | (series & SERIES_MASK)
}

/// The time (Unix seconds) of a sample's key.
pub fn key_time(key: i64) -> i64 {
    key >> SERIES_BITS
}

/// A window's bound as Unix seconds, clamped to the epoch (no reading is older): a bound
/// before year 1, which RFC 3339 cannot parse, is the epoch too.
fn secs(t: &str) -> Result<i64, StoreError> {
    if t.starts_with('-') {
        return Ok(0);
    }
    Ok(parse_time(t)?.timestamp().max(0))
}

/// One stored reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The declared sensor.
    pub sensor: String,
    /// The quantity (`temperature`).
    pub quantity: String,
    /// Its value.
    pub value: f64,
    /// Its unit (`degC`).
    pub unit: String,
    /// When (UTC, RFC 3339).
    pub at: String,
}

impl Store {
    /// Logs the quantities of one reading, all at time `at`, in one transaction.
    pub fn log_reading(
        &self,
        sensor: &str,
        at: &str,
        quantities: &[(&str, f64, &str)],
    ) -> Result<(), StoreError> {
        let at = secs(at)?;
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        {
            // Looked up first: the series exists after a sensor's first reading, and an upsert
            // that returns its id writes the row again each time, with a statement journal
            // (SQLite's sub-journal, 64 KiB chunks from malloc) for every quantity after the
            // first. The write lock is held, so nobody adds the series in between.
            let mut known = tx.prepare_cached(
                "SELECT id FROM series WHERE sensor = ?1 AND quantity = ?2 AND unit = ?3",
            )?;
            let mut add = tx.prepare_cached(
                "INSERT INTO series (sensor, quantity, unit) VALUES (?1, ?2, ?3) RETURNING id",
            )?;
            let mut put =
                tx.prepare_cached("INSERT OR REPLACE INTO samples (key, value) VALUES (?1, ?2)")?;
            for (q, v, u) in quantities {
                let id = |r: &rusqlite::Row<'_>| r.get(0);
                let series: i64 = match known.query_row(params![sensor, q, u], id).optional()? {
                    Some(series) => series,
                    None => add.query_row(params![sensor, q, u], id)?,
                };
                if series > SERIES_MASK {
                    return Err(StoreError::Data(format!(
                        "too many sensor series (at most {SERIES_MASK}): cannot log {sensor} {q}"
                    )));
                }
                put.execute(params![sample_key(at, series), v])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Readings of a sensor (optionally one quantity) between two times, oldest first.
    pub fn readings(
        &self,
        sensor: &str,
        quantity: Option<&str>,
        since: &str,
        until: &str,
    ) -> Result<Vec<Reading>, StoreError> {
        let (since, until) = (secs(since)?, secs(until)?);
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT s.sensor, s.quantity, x.value, s.unit, x.key >> 12
             FROM samples x JOIN series s ON s.id = (x.key & 4095)
             WHERE s.sensor = ?1 AND (?2 IS NULL OR s.quantity = ?2)
                 AND x.key >= ?3 AND x.key <= ?4
             ORDER BY x.key",
        )?;
        let (lo, hi) = (sample_key(since, 0), sample_key(until, SERIES_MASK));
        let rows = st.query_map(params![sensor, quantity, lo, hi], reading_row)?;
        rows.map(|r| r?).collect()
    }
}

/// A reading from a row of (sensor, quantity, value, unit, Unix seconds).
fn reading_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Reading, StoreError>> {
    let at: i64 = r.get(4)?;
    let Some(t) = chrono::DateTime::from_timestamp(at, 0) else {
        return Ok(Err(StoreError::Data(format!("bad reading time {at}"))));
    };
    Ok(Ok(Reading {
        sensor: r.get(0)?,
        quantity: r.get(1)?,
        value: r.get(2)?,
        unit: r.get(3)?,
        at: fmt_time(t),
    }))
}

/// One point of a reading history averaged over a time bucket (the dashboard's charts).
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    /// The bucket's start, Unix seconds.
    pub at: i64,
    /// The mean value in it.
    pub value: f64,
}

/// The most points [`Store::reading_buckets`] returns.
pub const MAX_BUCKETS: i64 = 240;

impl Store {
    /// The latest reading of every series sampled since `since` (Unix seconds): one row per
    /// (sensor, quantity, unit), at most one per series (4,095).
    pub fn latest_readings(&self, since: i64) -> Result<Vec<Reading>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT s.sensor, s.quantity, x.value, s.unit, x.key >> 12
             FROM (SELECT max(key) AS k FROM samples WHERE key >= ?1 GROUP BY key & 4095) m
             JOIN samples x ON x.key = m.k
             JOIN series s ON s.id = (x.key & 4095)
             ORDER BY s.sensor, s.quantity",
        )?;
        let rows = st.query_map(params![sample_key(since.max(0), 0)], reading_row)?;
        rows.map(|r| r?).collect()
    }

    /// One quantity of a sensor between two times (Unix seconds), averaged over equal buckets
    /// so that at most [`MAX_BUCKETS`] points come back, oldest first.
    pub fn reading_buckets(
        &self,
        sensor: &str,
        quantity: &str,
        since: i64,
        until: i64,
    ) -> Result<Vec<Bucket>, StoreError> {
        let (since, until) = (since.max(0), until.max(0));
        let width = ((until - since + MAX_BUCKETS - 1) / MAX_BUCKETS).max(1);
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT ((x.key >> 12) / ?4) * ?4 AS t, avg(x.value)
             FROM samples x JOIN series s ON s.id = (x.key & 4095)
             WHERE s.sensor = ?1 AND s.quantity = ?2 AND x.key >= ?3 AND x.key <= ?5
             GROUP BY t ORDER BY t",
        )?;
        let rows = st.query_map(
            params![
                sensor,
                quantity,
                sample_key(since, 0),
                width,
                sample_key(until, SERIES_MASK)
            ],
            |r| {
                Ok(Bucket {
                    at: r.get(0)?,
                    value: r.get(1)?,
                })
            },
        )?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[cfg(test)]
mod dashboard_tests {
    use super::*;

    /// A reading of a known series writes its samples and nothing else (the series' row was
    /// written again by every reading, through an upsert and a statement journal).
    #[test]
    fn a_reading_of_known_series_writes_only_its_samples() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_in(dir.path()).unwrap();
        let climate = [
            ("temperature", 21.5, "degC"),
            ("humidity", 40.0, "%"),
            ("pressure", 1013.2, "hPa"),
        ];
        let changes = || s.conn().total_changes();
        let before = changes();
        s.log_reading("climate", "2026-12-08T00:00:00Z", &climate)
            .unwrap();
        assert_eq!(changes() - before, 6, "3 new series and 3 samples");
        let before = changes();
        s.log_reading("climate", "2026-12-08T00:00:01Z", &climate)
            .unwrap();
        assert_eq!(changes() - before, 3, "only the 3 samples");
        // A new unit is a new series; the old ones keep their ids.
        s.log_reading(
            "climate",
            "2026-12-08T00:00:02Z",
            &[("temperature", 70.7, "degF")],
        )
        .unwrap();
        let series: Vec<(i64, String)> = s
            .conn()
            .prepare("SELECT id, unit FROM series ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let series: Vec<(i64, &str)> = series.iter().map(|(i, u)| (*i, u.as_str())).collect();
        assert_eq!(series, [(1, "degC"), (2, "%"), (3, "hPa"), (4, "degF")]);
        let got = s
            .readings(
                "climate",
                Some("temperature"),
                "2026-12-08T00:00:00Z",
                "2026-12-08T00:00:09Z",
            )
            .unwrap();
        let values: Vec<(f64, &str)> = got.iter().map(|r| (r.value, r.unit.as_str())).collect();
        assert_eq!(values, [(21.5, "degC"), (21.5, "degC"), (70.7, "degF")]);
    }

    #[test]
    fn latest_and_buckets() {
        let s = Store::in_memory().unwrap();
        let t0 = 1_700_000_000i64;
        for i in 0..1000 {
            let at = fmt_time(chrono::DateTime::from_timestamp(t0 + i, 0).unwrap());
            s.log_reading(
                "climate",
                &at,
                &[("temperature", i as f64, "degC"), ("humidity", 50.0, "%")],
            )
            .unwrap();
        }
        let latest = s.latest_readings(t0).unwrap();
        assert_eq!(latest.len(), 2, "{latest:?}");
        let t = latest.iter().find(|r| r.quantity == "temperature").unwrap();
        assert_eq!(t.value, 999.0);
        let b = s
            .reading_buckets("climate", "temperature", t0, t0 + 1000)
            .unwrap();
        assert!(
            b.len() as i64 <= MAX_BUCKETS + 1 && b.len() > 100,
            "{}",
            b.len()
        );
        assert!(b.windows(2).all(|w| w[0].at < w[1].at));
        assert_eq!(b[0].value, 2.0, "the mean of 0..=4 (5-second buckets)");
        assert!(s.latest_readings(t0 + 5000).unwrap().is_empty());
    }
}
