//! Conversations and their turns, the full-text index over turns, and the outbox of messages
//! sent to the user.
//!
//! A conversation's id is text: sessions key their conversation by the session id, and
//! [`Store::create_conversation`] mints `c<n>` ids for new ones. Turns are numbered from 1.

use super::fts::{FtsQuery, Match};
use super::{fmt_time, Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

pub(super) const MIGRATION: &str = "
CREATE TABLE conversations (
    num INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    parent_id TEXT,
    fork_at INTEGER
);
CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    at TEXT NOT NULL,
    UNIQUE (conversation_id, seq)
);
CREATE VIRTUAL TABLE turns_fts USING fts5(
    content, content='turns', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts(turns_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER turns_au AFTER UPDATE ON turns BEGIN
    INSERT INTO turns_fts(turns_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO turns_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    session TEXT NOT NULL,
    channel TEXT NOT NULL,
    text TEXT NOT NULL,
    delivered INTEGER NOT NULL,
    error TEXT
);";

/// A stored conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conversation {
    /// Its id.
    pub id: String,
    /// Its title (may be empty).
    pub title: String,
    /// When it was created.
    pub created_at: String,
    /// The conversation it was forked from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The parent's last turn copied into the fork.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork_at: Option<u32>,
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Turn {
    /// Position in the conversation, from 1.
    pub seq: u32,
    /// `user`, `assistant`, `tool`, `system`.
    pub role: String,
    /// The text of the turn.
    pub content: String,
    /// When it was stored.
    pub at: String,
}

/// A turn that matched a full-text search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The conversation of the turn.
    pub conversation_id: String,
    /// The turn's position.
    pub seq: u32,
    /// The turn's role.
    pub role: String,
    /// An excerpt around the matched terms, which are in `[brackets]`.
    pub snippet: String,
    /// When the turn was stored.
    pub at: String,
    /// Relevance (negated bm25): higher is better.
    pub score: f64,
}

/// The result of forking a conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fork {
    /// The new conversation's id.
    pub id: String,
    /// The conversation it was forked from.
    pub parent_id: String,
    /// The parent's last turn that was copied.
    pub fork_at: u32,
    /// How many turns were copied.
    pub turns_copied: u32,
}

/// Why a fork could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// There is no conversation with this id.
    #[error("conversation not found: {0}")]
    NotFound(String),
    /// The turn is outside `1..=turns`.
    #[error("turn {at} is out of range: the conversation has {turns} turns")]
    OutOfRange {
        /// The turn asked for.
        at: u32,
        /// How many turns there are.
        turns: u32,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for ForkError {
    fn from(e: rusqlite::Error) -> Self {
        ForkError::Store(e.into())
    }
}

/// One message sent (or not) to the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxEntry {
    /// Its id.
    pub id: i64,
    /// When it was sent.
    pub at: String,
    /// The session that sent it.
    pub session: String,
    /// The channel it was sent on.
    pub channel: String,
    /// The text.
    pub text: String,
    /// Whether the channel took it.
    pub delivered: bool,
    /// Why it was not delivered.
    pub error: Option<String>,
}

impl Store {
    /// Creates a new conversation with a fresh `c<n>` id and returns the id.
    pub fn create_conversation(&self, title: &str) -> Result<String, StoreError> {
        let conn = self.conn();
        let mut n: i64 = conn.query_row(
            "SELECT COALESCE(MAX(num), 0) + 1 FROM conversations",
            [],
            |r| r.get(0),
        )?;
        loop {
            let id = format!("c{n}");
            let inserted = conn.execute(
                "INSERT OR IGNORE INTO conversations (id, title, created_at) VALUES (?1, ?2, ?3)",
                params![id, title, fmt_time(chrono::Utc::now())],
            )?;
            if inserted == 1 {
                return Ok(id);
            }
            n += 1;
        }
    }

    /// Creates the conversation `id` if it does not exist; true when it was created.
    pub fn ensure_conversation(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        let n = self.conn().execute(
            "INSERT OR IGNORE INTO conversations (id, title, created_at) VALUES (?1, ?2, ?3)",
            params![id, title, fmt_time(chrono::Utc::now())],
        )?;
        Ok(n == 1)
    }

    /// The conversation with this id.
    pub fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, title, created_at, parent_id, fork_at FROM conversations WHERE id = ?1",
                [id],
                |r| {
                    Ok(Conversation {
                        id: r.get(0)?,
                        title: r.get(1)?,
                        created_at: r.get(2)?,
                        parent_id: r.get(3)?,
                        fork_at: r.get(4)?,
                    })
                },
            )
            .optional()?)
    }

    /// Appends a turn (creating the conversation if needed) and returns its number, from 1.
    pub fn append_turn(
        &self,
        conversation_id: &str,
        role: &str,
        content: &str,
    ) -> Result<u32, StoreError> {
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        let now = fmt_time(chrono::Utc::now());
        tx.execute(
            "INSERT OR IGNORE INTO conversations (id, title, created_at) VALUES (?1, '', ?2)",
            params![conversation_id, now],
        )?;
        let seq: u32 = tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE conversation_id = ?1",
            [conversation_id],
            |r| r.get(0),
        )?;
        tx.execute(
            "INSERT INTO turns (conversation_id, seq, role, content, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![conversation_id, seq, role, content, now],
        )?;
        tx.commit()?;
        Ok(seq)
    }

    /// Every turn of a conversation, in order (empty for an unknown conversation).
    pub fn turns(&self, conversation_id: &str) -> Result<Vec<Turn>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT seq, role, content, at FROM turns WHERE conversation_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([conversation_id], |r| {
            Ok(Turn {
                seq: r.get(0)?,
                role: r.get(1)?,
                content: r.get(2)?,
                at: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Full-text search over turns, best match first (bm25), optionally in one conversation.
    /// The query is normalised and capped by [`FtsQuery`] (any word matches; at most
    /// [`super::fts::MAX_TERMS`] distinct words count; text without a word is an error).
    pub fn search_turns(
        &self,
        query: &str,
        conversation_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let q = FtsQuery::new(query, Match::Any)?.expression();
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT t.conversation_id, t.seq, t.role,
                    snippet(turns_fts, 0, '[', ']', '…', 16), t.at, bm25(turns_fts)
             FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid
             WHERE turns_fts MATCH ?1 AND (?2 IS NULL OR t.conversation_id = ?2)
             ORDER BY bm25(turns_fts), t.id DESC
             LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![q, conversation_id, limit as i64], |r| {
            Ok(SearchHit {
                conversation_id: r.get(0)?,
                seq: r.get(1)?,
                role: r.get(2)?,
                snippet: r.get(3)?,
                at: r.get(4)?,
                score: -r.get::<_, f64>(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Makes a new conversation holding copies of turns `1..=at_turn` of `conversation_id`,
    /// recording the parent and the fork point.
    pub fn fork_conversation(
        &self,
        conversation_id: &str,
        at_turn: u32,
    ) -> Result<Fork, ForkError> {
        let parent = self
            .conversation(conversation_id)?
            .ok_or_else(|| ForkError::NotFound(conversation_id.to_string()))?;
        let turns = self.turns(conversation_id)?.len() as u32;
        if at_turn < 1 || at_turn > turns {
            return Err(ForkError::OutOfRange { at: at_turn, turns });
        }
        let title = if parent.title.is_empty() {
            format!("fork of {conversation_id} at turn {at_turn}")
        } else {
            format!("{} (fork at turn {at_turn})", parent.title)
        };
        let id = self.create_conversation(&title)?;
        let mut conn = self.conn();
        let tx = super::write_tx(&mut conn)?;
        tx.execute(
            "UPDATE conversations SET parent_id = ?2, fork_at = ?3 WHERE id = ?1",
            params![id, conversation_id, at_turn],
        )?;
        let copied = tx.execute(
            "INSERT INTO turns (conversation_id, seq, role, content, at)
             SELECT ?1, seq, role, content, at FROM turns
             WHERE conversation_id = ?2 AND seq <= ?3 ORDER BY seq",
            params![id, conversation_id, at_turn],
        )?;
        tx.commit()?;
        Ok(Fork {
            id,
            parent_id: conversation_id.to_string(),
            fork_at: at_turn,
            turns_copied: copied as u32,
        })
    }

    /// Records a message in the outbox and returns its id.
    pub fn record_outbox(
        &self,
        session: &str,
        channel: &str,
        text: &str,
        delivered: bool,
        error: Option<&str>,
    ) -> Result<i64, StoreError> {
        let conn = self.conn();
        conn.execute(
            "INSERT INTO outbox (at, session, channel, text, delivered, error)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                fmt_time(chrono::Utc::now()),
                session,
                channel,
                text,
                delivered,
                error
            ],
        )?;
        Ok(conn.last_insert_rowid())
    }

    /// The outbox of a session, oldest first.
    pub fn outbox(&self, session: &str) -> Result<Vec<OutboxEntry>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT id, at, session, channel, text, delivered, error FROM outbox
             WHERE session = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([session], |r| {
            Ok(OutboxEntry {
                id: r.get(0)?,
                at: r.get(1)?,
                session: r.get(2)?,
                channel: r.get(3)?,
                text: r.get(4)?,
                delivered: r.get(5)?,
                error: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_sqlite_has_fts5_and_search_ranks_the_better_match_first() {
        let s = Store::in_memory().unwrap();
        let c = s.create_conversation("garden").unwrap();
        s.append_turn(&c, "user", "water the tomatoes every morning")
            .unwrap();
        s.append_turn(
            &c,
            "assistant",
            "tomatoes tomatoes: watering tomatoes daily",
        )
        .unwrap();
        s.append_turn(&c, "user", "what about the basil?").unwrap();
        let hits = s.search_turns("tomatoes", None, 10).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].seq, 2);
        assert!(hits[0].score >= hits[1].score);
        assert!(hits[0].snippet.contains("[tomatoes]"));
    }

    #[test]
    fn turns_are_numbered_from_one_per_conversation() {
        let s = Store::in_memory().unwrap();
        let a = s.create_conversation("a").unwrap();
        let b = s.create_conversation("b").unwrap();
        assert_ne!(a, b);
        assert_eq!(s.append_turn(&a, "user", "x").unwrap(), 1);
        assert_eq!(s.append_turn(&a, "assistant", "y").unwrap(), 2);
        assert_eq!(s.append_turn(&b, "user", "z").unwrap(), 1);
        assert_eq!(s.turns(&a).unwrap().len(), 2);
    }
}
