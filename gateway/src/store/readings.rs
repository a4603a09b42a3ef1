//! Sensor readings: every `sensor_read` and every sample is logged, for `sensor_history`,
//! `sensor_export_csv` and watches.

use super::{Store, StoreError};
use rusqlite::params;

/// Migration 8: one row per quantity per reading.
pub(super) const MIGRATION: &str = "CREATE TABLE readings (
    id INTEGER PRIMARY KEY,
    sensor TEXT NOT NULL,
    quantity TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX readings_by_sensor ON readings(sensor, quantity, at);";

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
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO readings (sensor, quantity, value, unit, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (q, v, u) in quantities {
                st.execute(params![sensor, q, v, u, at])?;
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
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT sensor, quantity, value, unit, at FROM readings
             WHERE sensor = ?1 AND (?2 IS NULL OR quantity = ?2) AND at >= ?3 AND at <= ?4
             ORDER BY at, id",
        )?;
        let rows = st.query_map(params![sensor, quantity, since, until], |r| {
            Ok(Reading {
                sensor: r.get(0)?,
                quantity: r.get(1)?,
                value: r.get(2)?,
                unit: r.get(3)?,
                at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
