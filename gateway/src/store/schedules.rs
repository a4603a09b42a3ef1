//! Scheduled jobs: a prompt or a tool call, run once at a time or repeatedly on a cron
//! expression.
//!
//! Cron expressions are parsed and evaluated by `croner` (5 fields, or 6 with seconds), in the
//! gateway's local time zone; `next_run` is stored in UTC.
//!
//! # Missed runs
//!
//! [`Store::due_schedules`] returns every active job whose `next_run` is at or before `now`.
//! A job whose run (or several runs) was missed while the gateway was down is therefore due
//! **once** at the next check — there is no catch-up storm. [`Store::mark_schedule_ran`] then
//! computes the next run from the time it actually ran, so a cron job resumes its normal
//! cadence and a one-shot (`at`) job is marked done.

use super::{fmt_time, parse_time, Store, StoreError};
use chrono::{DateTime, Local, Utc};
use rusqlite::{params, OptionalExtension, Row};
use serde_json::{json, Value};
use std::str::FromStr;

pub(super) const MIGRATION: &str = "
CREATE TABLE schedules (
    id INTEGER PRIMARY KEY,
    name TEXT,
    session TEXT NOT NULL,
    channel TEXT NOT NULL,
    cron TEXT,
    at TEXT,
    prompt TEXT,
    tool TEXT,
    arguments TEXT,
    next_run TEXT,
    last_run TEXT,
    runs INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'done', 'cancelled')),
    created_at TEXT NOT NULL,
    CHECK ((cron IS NULL) <> (at IS NULL)),
    CHECK ((prompt IS NULL) <> (tool IS NULL))
);
CREATE INDEX schedules_due ON schedules (status, next_run);";

/// When a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleTrigger {
    /// Repeatedly, on a cron expression (local time).
    Cron(String),
    /// Once, at this time.
    At(DateTime<Utc>),
}

/// What a job does when it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ScheduleAction {
    /// Start an agent turn with this prompt.
    Prompt(String),
    /// Call a tool with these arguments.
    Tool {
        /// The tool's name.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
}

/// A scheduled job.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// Its id.
    pub id: i64,
    /// An optional name.
    pub name: Option<String>,
    /// The session that created it (and whose channel it reports to).
    pub session: String,
    /// The channel to report on.
    pub channel: String,
    /// When it runs.
    pub trigger: ScheduleTrigger,
    /// What it does.
    pub action: ScheduleAction,
    /// Its next run (UTC), or `None` once finished or cancelled.
    pub next_run: Option<String>,
    /// Its last run, if it has run.
    pub last_run: Option<String>,
    /// How many times it has run.
    pub runs: u32,
    /// `active`, `done` or `cancelled`.
    pub status: String,
    /// When it was created.
    pub created_at: String,
}

impl Schedule {
    /// The job as the JSON object tools return.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "status": self.status,
            "next_run": self.next_run,
            "runs": self.runs,
        });
        if let Some(n) = &self.name {
            v["name"] = json!(n);
        }
        match &self.trigger {
            ScheduleTrigger::Cron(c) => v["cron"] = json!(c),
            ScheduleTrigger::At(t) => v["at"] = json!(fmt_time(*t)),
        }
        match &self.action {
            ScheduleAction::Prompt(p) => v["prompt"] = json!(p),
            ScheduleAction::Tool { name, arguments } => {
                v["tool"] = json!(name);
                v["arguments"] = arguments.clone();
            }
        }
        if let Some(l) = &self.last_run {
            v["last_run"] = json!(l);
        }
        v
    }
}

/// What [`Store::claim_due_schedules`] claimed.
#[derive(Debug, Default)]
pub struct Claimed {
    /// The due jobs, each marked as run.
    pub jobs: Vec<Schedule>,
    /// Due rows that could not be read or rescheduled; each is now cancelled.
    pub bad: Vec<BadSchedule>,
}

/// A stored job that could not be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSchedule {
    /// Its id.
    pub id: i64,
    /// The channel it reports on (empty when unreadable).
    pub channel: String,
    /// Why it could not run.
    pub error: String,
}

/// The first time after `after` that matches the cron expression (evaluated in local time).
/// `Err` carries croner's explanation.
pub fn next_cron_run(cron: &str, after: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let c = croner::Cron::from_str(cron).map_err(|e| e.to_string())?;
    c.find_next_occurrence(&after.with_timezone(&Local), false)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| e.to_string())
}

const COLUMNS: &str = "id, name, session, channel, cron, at, prompt, tool, arguments, next_run,
    last_run, runs, status, created_at";

type Raw = (
    i64,
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    u32,
    String,
    String,
);

fn raw(r: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
        r.get(13)?,
    ))
}

fn to_schedule(r: Raw) -> Result<Schedule, StoreError> {
    let (
        id,
        name,
        session,
        channel,
        cron,
        at,
        prompt,
        tool,
        arguments,
        next_run,
        last_run,
        runs,
        status,
        created_at,
    ) = r;
    let trigger = match (cron, at) {
        (Some(c), None) => ScheduleTrigger::Cron(c),
        (None, Some(a)) => ScheduleTrigger::At(parse_time(&a)?),
        _ => {
            return Err(StoreError::Data(format!(
                "schedule {id} has no single trigger"
            )))
        }
    };
    let action = match (prompt, tool) {
        (Some(p), None) => ScheduleAction::Prompt(p),
        (None, Some(t)) => ScheduleAction::Tool {
            name: t,
            arguments: match arguments {
                Some(a) => serde_json::from_str(&a).map_err(|e| {
                    StoreError::Data(format!("bad arguments of schedule {id}: {e}"))
                })?,
                None => Value::Object(Default::default()),
            },
        },
        _ => {
            return Err(StoreError::Data(format!(
                "schedule {id} has no single action"
            )))
        }
    };
    Ok(Schedule {
        id,
        name,
        session,
        channel,
        trigger,
        action,
        next_run,
        last_run,
        runs,
        status,
        created_at,
    })
}

impl Store {
    /// Stores a new active job and computes its first run after `now`. A bad cron expression
    /// is `StoreError::Data`; callers validate it first with [`next_cron_run`].
    pub fn create_schedule(
        &self,
        name: Option<&str>,
        session: &str,
        channel: &str,
        trigger: &ScheduleTrigger,
        action: &ScheduleAction,
        now: DateTime<Utc>,
    ) -> Result<Schedule, StoreError> {
        let (cron, at, next) = match trigger {
            ScheduleTrigger::Cron(c) => {
                let next = next_cron_run(c, now).map_err(StoreError::Data)?;
                (Some(c.as_str()), None, next)
            }
            ScheduleTrigger::At(t) => (None, Some(fmt_time(*t)), *t),
        };
        let (prompt, tool, arguments) = match action {
            ScheduleAction::Prompt(p) => (Some(p.as_str()), None, None),
            ScheduleAction::Tool { name, arguments } => {
                (None, Some(name.as_str()), Some(arguments.to_string()))
            }
        };
        let id = {
            let conn = self.conn();
            conn.execute(
                "INSERT INTO schedules (name, session, channel, cron, at, prompt, tool, arguments,
                     next_run, status, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'active', ?10)",
                params![
                    name,
                    session,
                    channel,
                    cron,
                    at,
                    prompt,
                    tool,
                    arguments,
                    fmt_time(next),
                    fmt_time(now)
                ],
            )?;
            conn.last_insert_rowid()
        };
        self.schedule(id)?
            .ok_or_else(|| StoreError::Data(format!("schedule {id} vanished after insert")))
    }

    /// The job with this id.
    pub fn schedule(&self, id: i64) -> Result<Option<Schedule>, StoreError> {
        schedule_in(&self.conn(), id)
    }

    /// Jobs ordered by next run: only active ones, or all with `include_inactive`.
    pub fn schedules(&self, include_inactive: bool) -> Result<Vec<Schedule>, StoreError> {
        let rows: Vec<Raw> = {
            let conn = self.conn();
            let mut stmt = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM schedules WHERE ?1 OR status = 'active'
                 ORDER BY next_run IS NULL, next_run, id"
            ))?;
            let it = stmt.query_map([include_inactive], raw)?;
            it.collect::<Result<_, _>>()?
        };
        rows.into_iter().map(to_schedule).collect()
    }

    /// Active jobs due at `now` (next run at or before it), earliest first. A job that missed
    /// several runs is returned once (see the module's missed-run policy).
    pub fn due_schedules(&self, now: DateTime<Utc>) -> Result<Vec<Schedule>, StoreError> {
        let rows: Vec<Raw> = {
            let conn = self.conn();
            let mut stmt = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM schedules
                 WHERE status = 'active' AND next_run IS NOT NULL AND next_run <= ?1
                 ORDER BY next_run, id"
            ))?;
            let it = stmt.query_map([fmt_time(now)], raw)?;
            it.collect::<Result<_, _>>()?
        };
        rows.into_iter().map(to_schedule).collect()
    }

    /// Records that a job ran at `ran_at`: a cron job's next run becomes the first match after
    /// `ran_at` (skipping any missed ones); a one-shot job is done. `None` for an unknown job.
    pub fn mark_schedule_ran(
        &self,
        id: i64,
        ran_at: DateTime<Utc>,
    ) -> Result<Option<Schedule>, StoreError> {
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        let Some(job) = schedule_in(&tx, id)? else {
            return Ok(None);
        };
        mark_ran(&tx, &job, ran_at)?;
        let job = schedule_in(&tx, id)?;
        tx.commit()?;
        Ok(job)
    }

    /// Claims every job due at `now` ([`Store::due_schedules`]) and marks each as run at `now`
    /// ([`Store::mark_schedule_ran`]), in one write transaction: when several processes share
    /// the database, each due job is claimed by exactly one of them. Returns the jobs as they
    /// were when claimed.
    ///
    /// A row that cannot be read back or rescheduled (bad arguments, a bad time, a cron
    /// expression croner refuses) does not stop the others: it is cancelled (so it is reported
    /// once, not on every check) and returned in [`Claimed::bad`] with why; every good job is
    /// still claimed and marked.
    pub fn claim_due_schedules(&self, now: DateTime<Utc>) -> Result<Claimed, StoreError> {
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        let ids: Vec<(i64, String)> = {
            let mut stmt = tx.prepare(
                "SELECT id, channel FROM schedules
                 WHERE status = 'active' AND next_run IS NOT NULL AND next_run <= ?1
                 ORDER BY next_run, id",
            )?;
            let it = stmt.query_map([fmt_time(now)], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            })?;
            it.collect::<Result<_, _>>()?
        };
        let mut out = Claimed::default();
        for (id, channel) in ids {
            let job = schedule_in(&tx, id)
                .and_then(|j| j.ok_or_else(|| StoreError::Data(format!("schedule {id} vanished"))))
                .and_then(|job| mark_ran(&tx, &job, now).map(|()| job));
            match job {
                Ok(job) => out.jobs.push(job),
                Err(e) => {
                    tx.execute(
                        "UPDATE schedules SET status = 'cancelled', next_run = NULL WHERE id = ?1",
                        [id],
                    )?;
                    out.bad.push(BadSchedule {
                        id,
                        channel,
                        error: e.to_string(),
                    });
                }
            }
        }
        tx.commit()?;
        Ok(out)
    }

    /// Cancels a job; returns it as it was before, or `None` for an unknown job.
    pub fn cancel_schedule(&self, id: i64) -> Result<Option<Schedule>, StoreError> {
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        let Some(job) = schedule_in(&tx, id)? else {
            return Ok(None);
        };
        tx.execute(
            "UPDATE schedules SET status = 'cancelled', next_run = NULL WHERE id = ?1",
            [id],
        )?;
        tx.commit()?;
        Ok(Some(job))
    }
}

fn schedule_in(conn: &rusqlite::Connection, id: i64) -> Result<Option<Schedule>, StoreError> {
    let row = conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM schedules WHERE id = ?1"),
            [id],
            raw,
        )
        .optional()?;
    row.map(to_schedule).transpose()
}

/// Records a run of `job` at `ran_at` (see [`Store::mark_schedule_ran`]).
fn mark_ran(
    conn: &rusqlite::Connection,
    job: &Schedule,
    ran_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let (next, status) = match &job.trigger {
        ScheduleTrigger::Cron(c) if job.status == "active" => (
            Some(fmt_time(
                next_cron_run(c, ran_at).map_err(StoreError::Data)?,
            )),
            "active",
        ),
        ScheduleTrigger::Cron(_) => (None, job.status.as_str()),
        ScheduleTrigger::At(_) => (
            None,
            if job.status == "active" {
                "done"
            } else {
                job.status.as_str()
            },
        ),
    };
    conn.execute(
        "UPDATE schedules SET last_run = ?2, runs = runs + 1, next_run = ?3, status = ?4
         WHERE id = ?1",
        params![job.id, fmt_time(ran_at), next, status],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone, Timelike};

    fn t(s: &str) -> DateTime<Utc> {
        parse_time(s).unwrap()
    }

    #[test]
    fn a_missed_cron_job_runs_once_then_resumes_its_cadence() {
        let s = Store::in_memory().unwrap();
        let created = t("2030-01-01T00:00:30Z");
        let job = s
            .create_schedule(
                Some("tick"),
                "s1",
                "cli",
                &ScheduleTrigger::Cron("*/5 * * * *".into()),
                &ScheduleAction::Prompt("check the plants".into()),
                created,
            )
            .unwrap();
        let first = t(job.next_run.as_deref().unwrap());
        assert_eq!(first.minute() % 5, 0);
        assert!(first > created && first <= created + Duration::minutes(5));
        // Not due before its time.
        assert!(s
            .due_schedules(first - Duration::seconds(1))
            .unwrap()
            .is_empty());
        // The gateway was down for an hour: twelve runs were missed, the job is due once.
        let back = first + Duration::minutes(60) + Duration::seconds(10);
        let due = s.due_schedules(back).unwrap();
        assert_eq!(due.len(), 1);
        let after = s.mark_schedule_ran(job.id, back).unwrap().unwrap();
        let next = t(after.next_run.as_deref().unwrap());
        assert!(next > back && next <= back + Duration::minutes(5));
        assert_eq!(next.minute() % 5, 0);
        assert_eq!(after.runs, 1);
        assert!(s.due_schedules(back).unwrap().is_empty());
    }

    #[test]
    fn a_one_shot_job_is_done_after_it_runs() {
        let s = Store::in_memory().unwrap();
        let now = Utc.with_ymd_and_hms(2030, 5, 1, 12, 0, 0).unwrap();
        let job = s
            .create_schedule(
                None,
                "s1",
                "cli",
                &ScheduleTrigger::At(now + Duration::minutes(10)),
                &ScheduleAction::Tool {
                    name: "todo_read".into(),
                    arguments: serde_json::json!({}),
                },
                now,
            )
            .unwrap();
        let at = now + Duration::minutes(11);
        assert_eq!(s.due_schedules(at).unwrap().len(), 1);
        let done = s.mark_schedule_ran(job.id, at).unwrap().unwrap();
        assert_eq!(done.status, "done");
        assert_eq!(done.next_run, None);
        assert!(s.due_schedules(at + Duration::days(1)).unwrap().is_empty());
    }

    #[test]
    fn a_bad_row_is_skipped_and_reported_and_the_other_jobs_are_claimed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_in(dir.path()).unwrap();
        let now = Utc.with_ymd_and_hms(2030, 5, 1, 12, 0, 0).unwrap();
        let mk = |name: &str| {
            s.create_schedule(
                Some(name),
                "s1",
                "cli",
                &ScheduleTrigger::Cron("*/5 * * * *".into()),
                &ScheduleAction::Tool {
                    name: "todo_read".into(),
                    arguments: serde_json::json!({}),
                },
                now,
            )
            .unwrap()
            .id
        };
        let (a, b, c, d) = (mk("a"), mk("b"), mk("c"), mk("d"));
        {
            let conn = s.conn();
            // Written by an older build or by hand: arguments that are not JSON, a cron
            // expression croner refuses.
            conn.execute("UPDATE schedules SET arguments = '{bad' WHERE id = ?1", [b])
                .unwrap();
            conn.execute(
                "UPDATE schedules SET cron = 'not a cron' WHERE id = ?1",
                [d],
            )
            .unwrap();
        }
        let at = now + Duration::minutes(6);
        let claimed = s.claim_due_schedules(at).unwrap();
        let ids: Vec<i64> = claimed.jobs.iter().map(|j| j.id).collect();
        assert_eq!(
            ids,
            vec![a, c],
            "the good jobs around the bad rows are claimed"
        );
        let bad: Vec<i64> = claimed.bad.iter().map(|j| j.id).collect();
        assert_eq!(bad, vec![b, d]);
        assert!(
            claimed.bad[0].error.contains("bad arguments"),
            "{:?}",
            claimed.bad
        );
        assert!(claimed.bad[1].error.contains("not a cron") || !claimed.bad[1].error.is_empty());
        assert_eq!(claimed.bad[0].channel, "cli");
        // The good jobs were marked (not due again at once), the bad ones cancelled.
        assert!(s.claim_due_schedules(at).unwrap().jobs.is_empty());
        assert!(
            s.claim_due_schedules(at).unwrap().bad.is_empty(),
            "reported once"
        );
        assert_eq!(s.schedule(a).unwrap().unwrap().runs, 1);
        let status: String = s
            .conn()
            .query_row("SELECT status FROM schedules WHERE id = ?1", [b], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(status, "cancelled");
        // The marks survive: a new connection sees them.
        drop(s);
        let s = Store::open_in(dir.path()).unwrap();
        assert_eq!(s.schedule(c).unwrap().unwrap().runs, 1);
    }
}
