//! Token usage per user turn, so `/usage` and later reports work on real numbers.

use super::{now_rfc3339, Store, StoreError};
use crate::llm::Usage;
use rusqlite::params;

/// Migration 7: one row per user turn.
pub(super) const MIGRATION: &str = "CREATE TABLE usage (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    at TEXT NOT NULL,
    model TEXT NOT NULL,
    steps INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL
);
CREATE INDEX usage_by_conversation ON usage(conversation_id, id);";

/// One turn's usage as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnUsage {
    /// The conversation.
    pub conversation_id: String,
    /// When the turn ended.
    pub at: String,
    /// The model that served it.
    pub model: String,
    /// Model calls in the turn.
    pub steps: u32,
    /// Tokens used.
    pub usage: Usage,
}

impl Store {
    /// Records one finished turn's token usage.
    pub fn record_usage(
        &self,
        conversation_id: &str,
        model: &str,
        steps: usize,
        u: Usage,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "INSERT INTO usage (conversation_id, at, model, steps, input_tokens, output_tokens)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                conversation_id,
                now_rfc3339(),
                model,
                steps as i64,
                u.input_tokens as i64,
                u.output_tokens as i64
            ],
        )?;
        Ok(())
    }

    /// The usage of every turn of a conversation, oldest first.
    pub fn usage(&self, conversation_id: &str) -> Result<Vec<TurnUsage>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare(
            "SELECT conversation_id, at, model, steps, input_tokens, output_tokens
             FROM usage WHERE conversation_id = ?1 ORDER BY id",
        )?;
        let rows = st.query_map([conversation_id], |r| {
            Ok(TurnUsage {
                conversation_id: r.get(0)?,
                at: r.get(1)?,
                model: r.get(2)?,
                steps: r.get::<_, i64>(3)? as u32,
                usage: Usage {
                    input_tokens: r.get::<_, i64>(4)? as u64,
                    output_tokens: r.get::<_, i64>(5)? as u64,
                },
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_recorded_per_turn_and_read_back_in_order() {
        let s = Store::in_memory().unwrap();
        s.record_usage(
            "c1",
            "m",
            2,
            Usage {
                input_tokens: 10,
                output_tokens: 3,
            },
        )
        .unwrap();
        s.record_usage(
            "c1",
            "m",
            1,
            Usage {
                input_tokens: 7,
                output_tokens: 2,
            },
        )
        .unwrap();
        s.record_usage(
            "c2",
            "m",
            1,
            Usage {
                input_tokens: 1,
                output_tokens: 1,
            },
        )
        .unwrap();
        let u = s.usage("c1").unwrap();
        assert_eq!(u.len(), 2);
        assert_eq!(u[0].usage.input_tokens, 10);
        assert_eq!(u[1].steps, 1);
    }
}
