//! Goals (with timestamped progress notes) and kanban boards.
//!
//! A board's columns are kept in the order they were first used.

use super::{fmt_time, Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

pub(super) const MIGRATION: &str = "
CREATE TABLE goals (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    success_criterion TEXT NOT NULL,
    deadline TEXT,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'done', 'abandoned')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE goal_notes (
    id INTEGER PRIMARY KEY,
    goal_id INTEGER NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    note TEXT NOT NULL
);
CREATE TABLE kanban_columns (
    id INTEGER PRIMARY KEY,
    board TEXT NOT NULL,
    name TEXT NOT NULL,
    UNIQUE (board, name)
);
CREATE TABLE kanban_cards (
    id INTEGER PRIMARY KEY,
    board TEXT NOT NULL,
    column_name TEXT NOT NULL,
    title TEXT NOT NULL,
    note TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);";

/// The state of a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    /// Being pursued.
    Active,
    /// Reached.
    Done,
    /// Given up.
    Abandoned,
}

impl GoalStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Done => "done",
            GoalStatus::Abandoned => "abandoned",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "active" => Ok(GoalStatus::Active),
            "done" => Ok(GoalStatus::Done),
            "abandoned" => Ok(GoalStatus::Abandoned),
            other => Err(StoreError::Data(format!("bad goal status '{other}'"))),
        }
    }
}

/// A timestamped progress note on a goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoalNote {
    /// When it was written.
    pub at: String,
    /// The note.
    pub note: String,
}

/// A long-lived goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Goal {
    /// Its id.
    pub id: i64,
    /// What the goal is.
    pub title: String,
    /// How to tell it is reached.
    pub success_criterion: String,
    /// RFC 3339 time or `YYYY-MM-DD` date.
    pub deadline: Option<String>,
    /// Its state.
    pub status: GoalStatus,
    /// When it was created.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
    /// Progress notes, oldest first.
    pub notes: Vec<GoalNote>,
}

/// A kanban card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Card {
    /// Its id.
    pub id: i64,
    /// The board it is on.
    pub board: String,
    /// The column it is in.
    pub column: String,
    /// Its title.
    pub title: String,
    /// An optional note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When it last changed.
    pub updated_at: String,
}

/// A column of a board with its cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KanbanColumn {
    /// The column name.
    pub name: String,
    /// Its cards, oldest first.
    pub cards: Vec<Card>,
}

type GoalRow = (i64, String, String, Option<String>, String, String, String);

/// Reads one `SELECT id, title, success_criterion, deadline, status, created_at, updated_at` row.
fn goal_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GoalRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

impl Store {
    /// Creates an active goal.
    pub fn create_goal(
        &self,
        title: &str,
        success_criterion: &str,
        deadline: Option<&str>,
    ) -> Result<Goal, StoreError> {
        let now = fmt_time(chrono::Utc::now());
        let id = {
            let conn = self.conn();
            conn.execute(
                "INSERT INTO goals (title, success_criterion, deadline, status, created_at, updated_at)
                 VALUES (?1, ?2, ?3, 'active', ?4, ?4)",
                params![title, success_criterion, deadline, now],
            )?;
            conn.last_insert_rowid()
        };
        self.goal(id)?
            .ok_or_else(|| StoreError::Data(format!("goal {id} vanished after insert")))
    }

    /// The goal with this id, with its notes.
    pub fn goal(&self, id: i64) -> Result<Option<Goal>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT id, title, success_criterion, deadline, status, created_at, updated_at
                 FROM goals WHERE id = ?1",
                [id],
                goal_row,
            )
            .optional()?;
        row.map(|r| self.to_goal(r)).transpose()
    }

    fn to_goal(&self, r: GoalRow) -> Result<Goal, StoreError> {
        let (id, title, success_criterion, deadline, status, created_at, updated_at) = r;
        let notes = {
            let conn = self.conn();
            let mut stmt =
                conn.prepare("SELECT at, note FROM goal_notes WHERE goal_id = ?1 ORDER BY id")?;
            let it = stmt.query_map([id], |r| {
                Ok(GoalNote {
                    at: r.get(0)?,
                    note: r.get(1)?,
                })
            })?;
            it.collect::<Result<Vec<_>, _>>()?
        };
        Ok(Goal {
            id,
            title,
            success_criterion,
            deadline,
            status: GoalStatus::parse(&status)?,
            created_at,
            updated_at,
            notes,
        })
    }

    /// Goals, optionally only with this status and/or containing `text` in the title or
    /// criterion (case-insensitive), oldest first.
    pub fn goals(
        &self,
        status: Option<GoalStatus>,
        text: Option<&str>,
    ) -> Result<Vec<Goal>, StoreError> {
        let rows: Vec<GoalRow> = {
            let conn = self.conn();
            let mut stmt = conn.prepare(
                "SELECT id, title, success_criterion, deadline, status, created_at, updated_at
                 FROM goals
                 WHERE (?1 IS NULL OR status = ?1)
                   AND (?2 IS NULL OR instr(lower(title || ' ' || success_criterion), lower(?2)) > 0)
                 ORDER BY id",
            )?;
            let it = stmt.query_map(params![status.map(GoalStatus::as_str), text], goal_row)?;
            it.collect::<Result<_, _>>()?
        };
        rows.into_iter().map(|r| self.to_goal(r)).collect()
    }

    /// Updates a goal: a new status and/or deadline, and a progress note appended with the
    /// time. `None` when there is no such goal.
    pub fn update_goal(
        &self,
        id: i64,
        status: Option<GoalStatus>,
        note: Option<&str>,
        deadline: Option<&str>,
    ) -> Result<Option<Goal>, StoreError> {
        {
            let mut conn = self.conn();
            let tx = super::write_tx(&mut conn)?;
            let now = fmt_time(chrono::Utc::now());
            let n = tx.execute(
                "UPDATE goals SET status = COALESCE(?2, status), deadline = COALESCE(?3, deadline),
                     updated_at = ?4 WHERE id = ?1",
                params![id, status.map(GoalStatus::as_str), deadline, now],
            )?;
            if n == 0 {
                return Ok(None);
            }
            if let Some(note) = note {
                tx.execute(
                    "INSERT INTO goal_notes (goal_id, at, note) VALUES (?1, ?2, ?3)",
                    params![id, now, note],
                )?;
            }
            tx.commit()?;
        }
        self.goal(id)
    }

    /// Adds a card to a board column (the column is created on first use).
    pub fn add_card(
        &self,
        board: &str,
        column: &str,
        title: &str,
        note: Option<&str>,
    ) -> Result<Card, StoreError> {
        let id = {
            let mut conn = self.conn();
            let tx = super::write_tx(&mut conn)?;
            let now = fmt_time(chrono::Utc::now());
            tx.execute(
                "INSERT OR IGNORE INTO kanban_columns (board, name) VALUES (?1, ?2)",
                params![board, column],
            )?;
            tx.execute(
                "INSERT INTO kanban_cards (board, column_name, title, note, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![board, column, title, note, now],
            )?;
            let id = tx.last_insert_rowid();
            tx.commit()?;
            id
        };
        self.card(id)?
            .ok_or_else(|| StoreError::Data(format!("card {id} vanished after insert")))
    }

    /// The card with this id.
    pub fn card(&self, id: i64) -> Result<Option<Card>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, board, column_name, title, note, updated_at FROM kanban_cards
                 WHERE id = ?1",
                [id],
                |r| {
                    Ok(Card {
                        id: r.get(0)?,
                        board: r.get(1)?,
                        column: r.get(2)?,
                        title: r.get(3)?,
                        note: r.get(4)?,
                        updated_at: r.get(5)?,
                    })
                },
            )
            .optional()?)
    }

    /// Moves a card to a column of its board (created on first use). `None` when there is no
    /// such card.
    pub fn move_card(&self, id: i64, column: &str) -> Result<Option<Card>, StoreError> {
        let Some(card) = self.card(id)? else {
            return Ok(None);
        };
        {
            let mut conn = self.conn();
            let tx = super::write_tx(&mut conn)?;
            tx.execute(
                "INSERT OR IGNORE INTO kanban_columns (board, name) VALUES (?1, ?2)",
                params![card.board, column],
            )?;
            tx.execute(
                "UPDATE kanban_cards SET column_name = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, column, fmt_time(chrono::Utc::now())],
            )?;
            tx.commit()?;
        }
        self.card(id)
    }

    /// A board's columns in first-use order, each with its cards; empty for an unknown board.
    pub fn board(&self, board: &str) -> Result<Vec<KanbanColumn>, StoreError> {
        let conn = self.conn();
        let names: Vec<String> = {
            let mut stmt =
                conn.prepare("SELECT name FROM kanban_columns WHERE board = ?1 ORDER BY id")?;
            let it = stmt.query_map([board], |r| r.get(0))?;
            it.collect::<Result<_, _>>()?
        };
        let mut stmt = conn.prepare(
            "SELECT id, board, column_name, title, note, updated_at FROM kanban_cards
             WHERE board = ?1 AND column_name = ?2 ORDER BY id",
        )?;
        let mut out = Vec::new();
        for name in names {
            let cards = stmt
                .query_map(params![board, name], |r| {
                    Ok(Card {
                        id: r.get(0)?,
                        board: r.get(1)?,
                        column: r.get(2)?,
                        title: r.get(3)?,
                        note: r.get(4)?,
                        updated_at: r.get(5)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            out.push(KanbanColumn { name, cards });
        }
        Ok(out)
    }

    /// The names of every board.
    pub fn boards(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT board FROM kanban_columns GROUP BY board ORDER BY MIN(id)")?;
        let it = stmt.query_map([], |r| r.get(0))?;
        Ok(it.collect::<Result<_, _>>()?)
    }
}
