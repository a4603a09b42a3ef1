//! Per-session state: the to-do list and the plan (with its mode).
//!
//! A session with no plan is not planning. `plan_update` stores a plan and puts the session in
//! planning mode unless it is already executing an accepted plan (a revision while executing
//! keeps executing). `exit_plan_mode`, once the user accepts, switches it to executing.

use super::{fmt_time, Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

pub(super) const MIGRATION: &str = "
CREATE TABLE todos (
    session TEXT NOT NULL,
    position INTEGER NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'in_progress', 'done')),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (session, position)
);
CREATE TABLE plans (
    session TEXT PRIMARY KEY,
    steps TEXT NOT NULL,
    active INTEGER,
    note TEXT,
    mode TEXT NOT NULL CHECK (mode IN ('planning', 'executing')),
    updated_at TEXT NOT NULL
);";

/// The state of a to-do item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one per list).
    InProgress,
    /// Finished.
    Done,
}

impl TodoStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Done => "done",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "pending" => Ok(TodoStatus::Pending),
            "in_progress" => Ok(TodoStatus::InProgress),
            "done" => Ok(TodoStatus::Done),
            other => Err(StoreError::Data(format!("bad to-do status '{other}'"))),
        }
    }
}

/// One to-do item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Its state.
    pub status: TodoStatus,
}

/// Whether a session is planning or executing a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanMode {
    /// No plan is stored.
    None,
    /// A plan is being drafted; not yet accepted.
    Planning,
    /// The user accepted the plan and it is being carried out.
    Executing,
}

impl PlanMode {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanMode::None => "none",
            PlanMode::Planning => "planning",
            PlanMode::Executing => "executing",
        }
    }
}

/// A session's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The steps, in order.
    pub steps: Vec<String>,
    /// The 0-based index of the step being worked on.
    pub active: Option<usize>,
    /// A free note about the plan.
    pub note: Option<String>,
    /// Planning or executing.
    pub mode: PlanMode,
    /// When it last changed.
    pub updated_at: String,
}

impl Store {
    /// Replaces the session's to-do list and returns what was stored.
    pub fn replace_todos(&self, session: &str, items: &[Todo]) -> Result<Vec<Todo>, StoreError> {
        {
            let mut conn = self.conn();
            let tx = super::write_tx(&mut conn)?;
            tx.execute("DELETE FROM todos WHERE session = ?1", [session])?;
            let now = fmt_time(chrono::Utc::now());
            for (i, t) in items.iter().enumerate() {
                tx.execute(
                    "INSERT INTO todos (session, position, content, status, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![session, i as i64, t.content, t.status.as_str(), now],
                )?;
            }
            tx.commit()?;
        }
        self.todos(session)
    }

    /// The session's to-do list, in order.
    pub fn todos(&self, session: &str) -> Result<Vec<Todo>, StoreError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT content, status FROM todos WHERE session = ?1 ORDER BY position")?;
        let rows = stmt.query_map([session], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (content, status) = row?;
            out.push(Todo {
                content,
                status: TodoStatus::parse(&status)?,
            });
        }
        Ok(out)
    }

    /// The session's plan, if one is stored.
    pub fn plan(&self, session: &str) -> Result<Option<Plan>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT steps, active, note, mode, updated_at FROM plans WHERE session = ?1",
                [session],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<i64>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                },
            )
            .optional()?;
        let Some((steps, active, note, mode, updated_at)) = row else {
            return Ok(None);
        };
        let steps: Vec<String> = serde_json::from_str(&steps)
            .map_err(|e| StoreError::Data(format!("bad plan steps: {e}")))?;
        let mode = match mode.as_str() {
            "planning" => PlanMode::Planning,
            "executing" => PlanMode::Executing,
            other => return Err(StoreError::Data(format!("bad plan mode '{other}'"))),
        };
        Ok(Some(Plan {
            steps,
            active: active.and_then(|a| usize::try_from(a).ok()),
            note,
            mode,
            updated_at,
        }))
    }

    /// The session's plan mode.
    pub fn plan_mode(&self, session: &str) -> Result<PlanMode, StoreError> {
        // Asked before every model call and tool call: one cached statement, one column.
        let conn = self.conn();
        let mut st = conn.prepare_cached("SELECT mode FROM plans WHERE session = ?1")?;
        let mode: Option<String> = st.query_row([session], |r| r.get(0)).optional()?;
        match mode.as_deref() {
            None => Ok(PlanMode::None),
            Some("planning") => Ok(PlanMode::Planning),
            Some("executing") => Ok(PlanMode::Executing),
            Some(other) => Err(StoreError::Data(format!("bad plan mode '{other}'"))),
        }
    }

    /// Whether the session is drafting a plan that has not been accepted.
    pub fn in_plan_mode(&self, session: &str) -> Result<bool, StoreError> {
        Ok(self.plan_mode(session)? == PlanMode::Planning)
    }

    /// Whether the session is executing an accepted plan.
    pub fn executing_plan(&self, session: &str) -> Result<bool, StoreError> {
        Ok(self.plan_mode(session)? == PlanMode::Executing)
    }

    /// Stores or revises the session's plan. The session enters planning mode unless it is
    /// already executing, in which case the revision keeps it executing.
    pub fn save_plan(
        &self,
        session: &str,
        steps: &[String],
        active: Option<usize>,
        note: Option<&str>,
    ) -> Result<Plan, StoreError> {
        let mode = match self.plan_mode(session)? {
            PlanMode::Executing => PlanMode::Executing,
            _ => PlanMode::Planning,
        };
        let steps_json =
            serde_json::to_string(steps).map_err(|e| StoreError::Data(e.to_string()))?;
        self.conn().execute(
            "INSERT INTO plans (session, steps, active, note, mode, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (session) DO UPDATE SET steps = excluded.steps, active = excluded.active,
                 note = excluded.note, mode = excluded.mode, updated_at = excluded.updated_at",
            params![
                session,
                steps_json,
                active.map(|a| a as i64),
                note,
                mode.as_str(),
                fmt_time(chrono::Utc::now())
            ],
        )?;
        self.plan(session)?
            .ok_or_else(|| StoreError::Data("plan vanished after saving".into()))
    }

    /// Sets the mode of the session's plan; false when there is no plan. `PlanMode::None`
    /// removes the plan.
    pub fn set_plan_mode(&self, session: &str, mode: PlanMode) -> Result<bool, StoreError> {
        let n = match mode {
            PlanMode::None => self
                .conn()
                .execute("DELETE FROM plans WHERE session = ?1", [session])?,
            m => self.conn().execute(
                "UPDATE plans SET mode = ?2, updated_at = ?3 WHERE session = ?1",
                params![session, m.as_str(), fmt_time(chrono::Utc::now())],
            )?,
        };
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_while_executing_keeps_executing() {
        let s = Store::in_memory().unwrap();
        assert_eq!(s.plan_mode("s").unwrap(), PlanMode::None);
        s.save_plan("s", &["a".into()], None, None).unwrap();
        assert!(s.in_plan_mode("s").unwrap());
        assert!(s.set_plan_mode("s", PlanMode::Executing).unwrap());
        let p = s
            .save_plan("s", &["a".into(), "b".into()], Some(1), Some("more"))
            .unwrap();
        assert_eq!(p.mode, PlanMode::Executing);
        assert_eq!(p.active, Some(1));
        assert!(s.executing_plan("s").unwrap());
    }
}
