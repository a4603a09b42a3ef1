//! Sensor watches, persisted with their rule state so they survive a restart.

use super::{now_rfc3339, Store, StoreError};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Row};
use serde_json::{json, Value};

/// Migration 9.
pub(super) const MIGRATION: &str = "CREATE TABLE watches (
    id INTEGER PRIMARY KEY,
    sensor TEXT NOT NULL,
    quantity TEXT NOT NULL,
    op TEXT NOT NULL,
    threshold REAL NOT NULL,
    for_secs INTEGER NOT NULL,
    hysteresis REAL NOT NULL,
    message TEXT,
    tool TEXT,
    arguments TEXT,
    session TEXT NOT NULL,
    channel TEXT NOT NULL,
    state TEXT NOT NULL,
    since TEXT,
    last_fired TEXT,
    fired_count INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);";

/// Where a watch's rule stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchState {
    /// Waiting for the condition.
    Armed,
    /// The condition has held since this time.
    Pending(DateTime<Utc>),
    /// It fired; waits for the value to come back past the hysteresis.
    Fired,
}

/// A stored watch.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    /// Its id.
    pub id: i64,
    /// The declared sensor.
    pub sensor: String,
    /// The quantity.
    pub quantity: String,
    /// `>`, `>=`, `<`, `<=`.
    pub op: String,
    /// The threshold.
    pub threshold: f64,
    /// Seconds the condition must hold.
    pub for_secs: i64,
    /// Re-arm margin.
    pub hysteresis: f64,
    /// Notification text.
    pub message: Option<String>,
    /// Tool to run instead of notifying.
    pub tool: Option<String>,
    /// Its arguments.
    pub arguments: Option<Value>,
    /// The session that made it.
    pub session: String,
    /// The channel it reports on.
    pub channel: String,
    /// Rule state.
    pub state: WatchState,
    /// When it last fired.
    pub last_fired: Option<String>,
    /// How often it fired.
    pub fired_count: i64,
}

/// What a new watch is.
#[derive(Debug, Clone)]
pub struct NewWatch<'a> {
    /// Sensor.
    pub sensor: &'a str,
    /// Quantity.
    pub quantity: &'a str,
    /// The rule.
    pub rule: Rule,
    /// Notification text.
    pub message: Option<&'a str>,
    /// Tool to run.
    pub tool: Option<&'a str>,
    /// Its arguments.
    pub arguments: Option<&'a Value>,
    /// Session.
    pub session: &'a str,
    /// Channel.
    pub channel: &'a str,
}

impl Watch {
    /// The rule.
    pub fn rule(&self) -> Rule {
        Rule {
            op: Op::parse(&self.op).unwrap_or(Op::Gt),
            threshold: self.threshold,
            for_secs: self.for_secs,
            hysteresis: self.hysteresis,
        }
    }

    /// As tools show it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id.to_string(),
            "sensor": self.sensor,
            "quantity": self.quantity,
            "rule": format!("{} {} {}{}", self.quantity, self.op, self.threshold,
                if self.for_secs > 0 { format!(" for {}s", self.for_secs) } else { String::new() }),
            "hysteresis": self.hysteresis,
            "action": if self.tool.is_some() { "tool" } else { "notify" },
            "tool": self.tool,
            "message": self.message,
            "state": match self.state { WatchState::Armed => "armed", WatchState::Pending(_) => "pending", WatchState::Fired => "fired" },
            "last_fired": self.last_fired,
            "fired_count": self.fired_count,
        })
    }
}

const COLUMNS: &str = "id, sensor, quantity, op, threshold, for_secs, hysteresis, message, tool, arguments, session, channel, state, since, last_fired, fired_count";

fn row(r: &Row<'_>) -> rusqlite::Result<Watch> {
    let state: String = r.get(12)?;
    let since: Option<String> = r.get(13)?;
    let since = since
        .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
        .map(|t| t.with_timezone(&Utc));
    let args: Option<String> = r.get(9)?;
    Ok(Watch {
        id: r.get(0)?,
        sensor: r.get(1)?,
        quantity: r.get(2)?,
        op: r.get(3)?,
        threshold: r.get(4)?,
        for_secs: r.get(5)?,
        hysteresis: r.get(6)?,
        message: r.get(7)?,
        tool: r.get(8)?,
        arguments: args.and_then(|a| serde_json::from_str(&a).ok()),
        session: r.get(10)?,
        channel: r.get(11)?,
        state: match (state.as_str(), since) {
            ("pending", Some(t)) => WatchState::Pending(t),
            ("fired", _) => WatchState::Fired,
            _ => WatchState::Armed,
        },
        last_fired: r.get(14)?,
        fired_count: r.get(15)?,
    })
}

impl Store {
    /// Stores a new, armed watch.
    pub fn create_watch(&self, w: &NewWatch<'_>) -> Result<Watch, StoreError> {
        let id = {
            let conn = self.conn();
            conn.execute(
                "INSERT INTO watches (sensor, quantity, op, threshold, for_secs, hysteresis, message, tool, arguments, session, channel, state, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'armed', ?12)",
                params![
                    w.sensor, w.quantity, w.rule.op.as_str(), w.rule.threshold, w.rule.for_secs, w.rule.hysteresis,
                    w.message, w.tool, w.arguments.map(|a| a.to_string()), w.session, w.channel, now_rfc3339()
                ],
            )?;
            conn.last_insert_rowid()
        };
        self.watch(id)?
            .ok_or_else(|| StoreError::Data(format!("watch {id} vanished after insert")))
    }

    /// The watch with this id.
    pub fn watch(&self, id: i64) -> Result<Option<Watch>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM watches WHERE id = ?1"),
                [id],
                row,
            )
            .optional()?)
    }

    /// Every watch, oldest first.
    pub fn watches(&self) -> Result<Vec<Watch>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare(&format!("SELECT {COLUMNS} FROM watches ORDER BY id"))?;
        let rows = st.query_map([], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The watches on one sensor.
    pub fn watches_for(&self, sensor: &str) -> Result<Vec<Watch>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM watches WHERE sensor = ?1 ORDER BY id"
        ))?;
        let rows = st.query_map([sensor], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Records a watch's new state, and the firing time when it fired.
    pub fn set_watch_state(
        &self,
        id: i64,
        state: WatchState,
        fired_at: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        let (s, since) = match state {
            WatchState::Armed => ("armed", None),
            WatchState::Pending(t) => ("pending", Some(t.to_rfc3339())),
            WatchState::Fired => ("fired", None),
        };
        let fired = fired_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        self.conn().execute(
            "UPDATE watches SET state = ?2, since = ?3,
                 last_fired = COALESCE(?4, last_fired),
                 fired_count = fired_count + (?4 IS NOT NULL)
             WHERE id = ?1",
            params![id, s, since, fired],
        )?;
        Ok(())
    }

    /// Deletes a watch; `None` when there was none.
    pub fn delete_watch(&self, id: i64) -> Result<Option<Watch>, StoreError> {
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        let w = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM watches WHERE id = ?1"),
                [id],
                row,
            )
            .optional()?;
        if w.is_some() {
            tx.execute("DELETE FROM watches WHERE id = ?1", [id])?;
        }
        tx.commit()?;
        Ok(w)
    }
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

impl Op {
    /// Parses `>`, `>=`, `<`, `<=`.
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            _ => return None,
        })
    }

    /// The symbol.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Op::Gt => v > t,
            Op::Ge => v >= t,
            Op::Lt => v < t,
            Op::Le => v <= t,
        }
    }

    /// Whether `v` is back on the safe side by at least `hysteresis`.
    fn rearmed(self, v: f64, t: f64, hysteresis: f64) -> bool {
        match self {
            Op::Gt | Op::Ge => v < t - hysteresis,
            Op::Lt | Op::Le => v > t + hysteresis,
        }
    }
}

/// A threshold rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The comparison.
    pub op: Op,
    /// The threshold.
    pub threshold: f64,
    /// How long the condition must hold, in seconds.
    pub for_secs: i64,
    /// The re-arm margin.
    pub hysteresis: f64,
}

impl Rule {
    /// The next state after a reading `v` at `now`, and whether the watch fires now.
    pub fn step(&self, state: WatchState, v: f64, now: DateTime<Utc>) -> (WatchState, bool) {
        let holds = self.op.holds(v, self.threshold);
        match state {
            WatchState::Armed if holds => {
                if self.for_secs <= 0 {
                    (WatchState::Fired, true)
                } else {
                    (WatchState::Pending(now), false)
                }
            }
            WatchState::Armed => (WatchState::Armed, false),
            WatchState::Pending(_) if !holds => (WatchState::Armed, false),
            WatchState::Pending(since) => {
                if (now - since).num_seconds() >= self.for_secs {
                    (WatchState::Fired, true)
                } else {
                    (WatchState::Pending(since), false)
                }
            }
            WatchState::Fired if self.op.rearmed(v, self.threshold, self.hysteresis) => {
                (WatchState::Armed, false)
            }
            WatchState::Fired => (WatchState::Fired, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    #[test]
    fn a_rule_fires_only_after_holding_for_its_duration_and_rearms_with_hysteresis() {
        let r = Rule {
            op: Op::Gt,
            threshold: 30.0,
            for_secs: 300,
            hysteresis: 1.0,
        };
        let (s, f) = r.step(WatchState::Armed, 31.0, t(0));
        assert!(!f);
        assert_eq!(s, WatchState::Pending(t(0)));
        let (s, f) = r.step(s, 31.5, t(200));
        assert!(!f && s == WatchState::Pending(t(0)));
        let (s, f) = r.step(s, 31.2, t(300));
        assert!(f && s == WatchState::Fired);
        // Still hot, or barely below: no second alarm.
        let (s, f) = r.step(s, 31.0, t(400));
        assert!(!f && s == WatchState::Fired);
        let (s, f) = r.step(s, 29.5, t(500));
        assert!(!f && s == WatchState::Fired, "within hysteresis");
        let (s, _) = r.step(s, 28.9, t(600));
        assert_eq!(s, WatchState::Armed);
    }

    #[test]
    fn a_dip_below_the_threshold_restarts_the_duration() {
        let r = Rule {
            op: Op::Gt,
            threshold: 30.0,
            for_secs: 300,
            hysteresis: 0.0,
        };
        let (s, _) = r.step(WatchState::Armed, 31.0, t(0));
        let (s, _) = r.step(s, 29.0, t(100));
        assert_eq!(s, WatchState::Armed);
        let (s, f) = r.step(s, 31.0, t(350));
        assert!(!f);
        assert_eq!(s, WatchState::Pending(t(350)));
    }

    #[test]
    fn a_zero_duration_rule_fires_at_once_and_less_than_works() {
        let r = Rule {
            op: Op::Lt,
            threshold: 5.0,
            for_secs: 0,
            hysteresis: 0.5,
        };
        let (s, f) = r.step(WatchState::Armed, 4.0, t(0));
        assert!(f && s == WatchState::Fired);
        let (s, _) = r.step(s, 5.4, t(10));
        assert_eq!(s, WatchState::Fired);
        let (s, _) = r.step(s, 5.6, t(20));
        assert_eq!(s, WatchState::Armed);
    }
}
