//! Durable memories: short texts with tags, under a full-text index ranked by bm25.

use super::fts::{FtsQuery, Match};
use super::{fmt_time, Store, StoreError};
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

pub(super) const MIGRATION: &str = "
CREATE TABLE memories (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    session TEXT,
    created_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, tags, content='memories', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags)
        VALUES ('delete', old.id, old.text, old.tags);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags)
        VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;";

/// A stored memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// Its id.
    pub id: i64,
    /// The remembered text.
    pub text: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// When it was stored.
    pub created_at: String,
}

/// A memory that matched a recall query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryHit {
    /// The memory.
    #[serde(flatten)]
    pub memory: Memory,
    /// Relevance (negated bm25): higher is better.
    pub score: f64,
}

fn memory_row(r: &Row<'_>) -> rusqlite::Result<(i64, String, String, String)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

fn to_memory(
    (id, text, tags, created_at): (i64, String, String, String),
) -> Result<Memory, StoreError> {
    let tags = serde_json::from_str(&tags)
        .map_err(|e| StoreError::Data(format!("bad tags of memory {id}: {e}")))?;
    Ok(Memory {
        id,
        text,
        tags,
        created_at,
    })
}

impl Store {
    /// Stores a memory and returns it with its id.
    pub fn store_memory(
        &self,
        text: &str,
        tags: &[String],
        session: Option<&str>,
    ) -> Result<Memory, StoreError> {
        let tags: Vec<String> = tags
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        let tags_json =
            serde_json::to_string(&tags).map_err(|e| StoreError::Data(e.to_string()))?;
        let created_at = fmt_time(chrono::Utc::now());
        let conn = self.conn();
        conn.execute(
            "INSERT INTO memories (text, tags, session, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![text, tags_json, session, created_at],
        )?;
        Ok(Memory {
            id: conn.last_insert_rowid(),
            text: text.to_string(),
            tags,
            created_at,
        })
    }

    /// The memory with this id.
    pub fn memory(&self, id: i64) -> Result<Option<Memory>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT id, text, tags, created_at FROM memories WHERE id = ?1",
                [id],
                memory_row,
            )
            .optional()?;
        row.map(to_memory).transpose()
    }

    /// Memories matching any word of `query`, best first (bm25), optionally only those tagged
    /// `tag` (case-insensitive). The query is normalised and capped by [`FtsQuery`]: at most
    /// [`super::fts::MAX_TERMS`] distinct words count; text without a word is an error.
    pub fn recall(
        &self,
        query: &str,
        tag: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryHit>, StoreError> {
        let q = FtsQuery::new(query, Match::Any)?.expression();
        let rows: Vec<((i64, String, String, String), f64)> = {
            let conn = self.conn();
            let mut stmt = conn.prepare(
                "SELECT m.id, m.text, m.tags, m.created_at, bm25(memories_fts)
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1
                   AND (?2 IS NULL OR EXISTS (
                        SELECT 1 FROM json_each(m.tags) j WHERE lower(j.value) = lower(?2)))
                 ORDER BY bm25(memories_fts), m.id DESC
                 LIMIT ?3",
            )?;
            let it = stmt.query_map(params![q, tag, limit as i64], |r| {
                Ok((memory_row(r)?, r.get::<_, f64>(4)?))
            })?;
            it.collect::<Result<_, _>>()?
        };
        rows.into_iter()
            .map(|(m, bm25)| {
                Ok(MemoryHit {
                    memory: to_memory(m)?,
                    score: -bm25,
                })
            })
            .collect()
    }

    /// Deletes the memory with this id, removes its text wherever else the store keeps it
    /// ([`super::redact::scrub`]) and returns it.
    pub fn forget_memory(&self, id: i64) -> Result<Option<Memory>, StoreError> {
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        let row = tx
            .query_row(
                "SELECT id, text, tags, created_at FROM memories WHERE id = ?1",
                [id],
                memory_row,
            )
            .optional()?;
        let Some(m) = row.map(to_memory).transpose()? else {
            return Ok(None);
        };
        forget(&tx, &m)?;
        tx.commit()?;
        super::redact::truncate_wal(&conn);
        Ok(Some(m))
    }

    /// Deletes every memory containing every word of `query`, removes their texts wherever
    /// else the store keeps them ([`super::redact::scrub`]) and returns them. More than
    /// [`super::fts::MAX_TERMS`] distinct words, or none, is an error ([`FtsQuery`]).
    pub fn forget_matching(&self, query: &str) -> Result<Vec<Memory>, StoreError> {
        let q = FtsQuery::new(query, Match::All)?.expression();
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        let rows: Vec<(i64, String, String, String)> = {
            let mut stmt = tx.prepare(
                "SELECT m.id, m.text, m.tags, m.created_at
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 ORDER BY m.id",
            )?;
            let it = stmt.query_map([q], memory_row)?;
            it.collect::<Result<_, _>>()?
        };
        let memories = rows
            .into_iter()
            .map(to_memory)
            .collect::<Result<Vec<_>, _>>()?;
        for m in &memories {
            forget(&tx, m)?;
        }
        tx.commit()?;
        if !memories.is_empty() {
            super::redact::truncate_wal(&conn);
        }
        Ok(memories)
    }
}

fn forget(tx: &rusqlite::Transaction<'_>, m: &Memory) -> Result<(), StoreError> {
    tx.execute("DELETE FROM memories WHERE id = ?1", [m.id])?;
    let s = super::redact::scrub(tx, &m.text)?;
    tracing::info!(
        memory = m.id,
        turns = s.turns,
        outbox = s.outbox,
        audit = s.audit,
        other = s.other,
        "forgot a memory"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the database file or its WAL holds `needle` anywhere, in any page.
    fn on_disk(dir: &std::path::Path, needle: &str) -> bool {
        ["covo.db", "covo.db-wal"].iter().any(|f| {
            let bytes = std::fs::read(dir.join(f)).unwrap_or_default();
            bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
    }

    #[test]
    fn a_forgotten_text_leaves_no_trace_in_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_in(dir.path()).unwrap();
        let word = "zebracornish";
        let m = s
            .store_memory(&format!("the spare key is under the {word} pot"), &[], None)
            .unwrap();
        s.append_turn(
            "c1",
            "user",
            &format!("the spare key is under the {word} pot"),
        )
        .unwrap();
        s.append_turn("c1", "assistant", "noted").unwrap();
        assert!(on_disk(dir.path(), word));
        s.forget_memory(m.id).unwrap().unwrap();
        // While the store is open (its WAL too)...
        assert!(
            !on_disk(dir.path(), word),
            "the text is still in a free page, an FTS segment or the WAL"
        );
        assert_eq!(s.turns("c1").unwrap().len(), 2);
        // ...and after it is closed.
        drop(s);
        assert!(!on_disk(dir.path(), word));
    }

    /// Every table that can hold a user's or the model's words gets the forgotten text (as
    /// it is, and inside JSON); after the forget no column of any table holds it, and neither
    /// does the file.
    #[test]
    fn a_forgotten_text_leaves_every_table_that_can_hold_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_in(dir.path()).unwrap();
        let text = "the vault code is quokka 7731";
        let m = s.store_memory(text, &[], None).unwrap();
        let at = "2026-01-01T00:00:00Z";
        let said = format!("remember: {text}, thanks");
        let json = serde_json::json!({"message": text, "list": [said.clone()]}).to_string();
        {
            let c = s.conn();
            let p = rusqlite::params![said, json, at];
            for sql in [
                "INSERT INTO conversations (id, title, created_at) VALUES ('c1', ?1, ?3)",
                "INSERT INTO turns (conversation_id, seq, role, content, at) VALUES ('c1', 1, 'user', ?1, ?3)",
                "INSERT INTO outbox (at, session, channel, text, delivered, error) VALUES (?3, 's', 'cli', ?1, 0, ?1)",
                "INSERT INTO audit (at, session, via, tool, args, outcome, detail, micros) VALUES (?3, 's', 'direct', 'notify', ?2, 'failed', ?1, 1)",
                "INSERT INTO todos (session, position, content, status, updated_at) VALUES ('s', 0, ?1, 'pending', ?3)",
                "INSERT INTO plans (session, steps, note, mode, updated_at) VALUES ('s', ?2, ?1, 'planning', ?3)",
                "INSERT INTO goals (id, title, success_criterion, created_at, updated_at) VALUES (1, ?1, ?1, ?3, ?3)",
                "INSERT INTO goal_notes (goal_id, at, note) VALUES (1, ?3, ?1)",
                "INSERT INTO kanban_cards (board, column_name, title, note, created_at, updated_at) VALUES ('b', 'todo', ?1, ?1, ?3, ?3)",
                "INSERT INTO schedules (name, session, channel, at, prompt, created_at) VALUES (?1, 's', 'cli', ?3, ?1, ?3)",
                "INSERT INTO schedules (session, channel, at, tool, arguments, created_at) VALUES ('s', 'cli', ?3, 'notify', ?2, ?3)",
                "INSERT INTO watches (sensor, quantity, op, threshold, for_secs, hysteresis, message, tool, arguments, session, channel, state, created_at) VALUES ('climate', 'temperature', '>', 30, 0, 0, ?1, 'notify', ?2, 's', 'cli', 'armed', ?3)",
                "INSERT INTO subagents (handle, task, toolsets, state, tool_calls, created_at, updated_at, answer, error) VALUES ('h1', ?1, '[]', 'done', ?2, ?3, ?3, ?1, ?1)",
            ] {
                c.execute(sql, p).unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }
        let holding = |s: &Store| -> Vec<String> {
            let c = s.conn();
            let tables: Vec<String> = c
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let mut found = Vec::new();
            for t in tables {
                let cols: Vec<String> = c
                    .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
                    .unwrap()
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                for col in cols {
                    let n: i64 = c
                        .query_row(
                            &format!("SELECT COUNT(*) FROM \"{t}\" WHERE instr(CAST(\"{col}\" AS TEXT), ?1) > 0"),
                            ["quokka 7731"],
                            |r| r.get(0),
                        )
                        .unwrap();
                    if n > 0 {
                        found.push(format!("{t}.{col}"));
                    }
                }
            }
            found
        };
        assert!(holding(&s).len() >= 20, "{:?}", holding(&s));
        s.forget_memory(m.id).unwrap().unwrap();
        assert_eq!(holding(&s), Vec::<String>::new());
        assert!(!on_disk(dir.path(), "quokka 7731"));
        // The rows stay, with the text replaced.
        let title: String = s
            .conn()
            .query_row("SELECT title FROM conversations WHERE id = 'c1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(title, "remember: [forgotten], thanks");
    }
}
