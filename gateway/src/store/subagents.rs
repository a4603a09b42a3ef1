//! The sub-agents `covo peer` runs (`subagent_spawn`): their task, toolsets, state and progress,
//! kept in SQLite so `subagent_status` and `subagent_result` answer across a peer restart.

use super::{now_rfc3339, Store, StoreError};
use rusqlite::{params, OptionalExtension};

/// Migration 10: one row per spawned sub-agent.
pub(super) const MIGRATION: &str = "CREATE TABLE subagents (
    handle TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    toolsets TEXT NOT NULL,
    state TEXT NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    answer TEXT,
    error TEXT,
    conversation_id TEXT
);
CREATE INDEX subagents_by_state ON subagents(state);";

/// Where a sub-agent is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubAgentState {
    /// Its loop is running.
    Running,
    /// It gave a final answer.
    Done,
    /// It ended without an answer: the model failed, the step budget or the time limit ran out.
    Failed,
    /// The peer stopped it while shutting down.
    Cancelled,
    /// It was running when the peer died; found so at the next start, never re-run.
    Interrupted,
}

impl SubAgentState {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            SubAgentState::Running => "running",
            SubAgentState::Done => "done",
            SubAgentState::Failed => "failed",
            SubAgentState::Cancelled => "cancelled",
            SubAgentState::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> Result<SubAgentState, StoreError> {
        Ok(match s {
            "running" => SubAgentState::Running,
            "done" => SubAgentState::Done,
            "failed" => SubAgentState::Failed,
            "cancelled" => SubAgentState::Cancelled,
            "interrupted" => SubAgentState::Interrupted,
            other => return Err(StoreError::Data(format!("bad sub-agent state '{other}'"))),
        })
    }
}

/// One tool call a sub-agent made.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SubAgentCall {
    /// The tool's name as the model wrote it.
    pub tool: String,
    /// Whether it succeeded; `None` while it runs.
    pub ok: Option<bool>,
}

/// A sub-agent as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAgent {
    /// Its handle (random id).
    pub handle: String,
    /// The task it was given.
    pub task: String,
    /// The toolsets it runs with.
    pub toolsets: Vec<String>,
    /// Its state.
    pub state: SubAgentState,
    /// Model calls made.
    pub steps: u32,
    /// Tool calls made, in order.
    pub tool_calls: Vec<SubAgentCall>,
    /// When it was spawned (RFC 3339).
    pub created_at: String,
    /// When its row last changed (RFC 3339).
    pub updated_at: String,
    /// The final answer, when done.
    pub answer: Option<String>,
    /// Why it ended without an answer.
    pub error: Option<String>,
    /// The conversation holding its transcript.
    pub conversation_id: Option<String>,
}

fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::Data(e.to_string())
}

impl Store {
    /// Records a new sub-agent in state `running`.
    pub fn subagent_insert(
        &self,
        handle: &str,
        task: &str,
        toolsets: &[String],
    ) -> Result<(), StoreError> {
        let now = now_rfc3339();
        let sets = serde_json::to_string(toolsets).map_err(json_err)?;
        self.conn().execute(
            "INSERT INTO subagents (handle, task, toolsets, state, created_at, updated_at)
             VALUES (?1, ?2, ?3, 'running', ?4, ?4)",
            params![handle, task, sets, now],
        )?;
        Ok(())
    }

    /// Notes the conversation that holds the sub-agent's transcript.
    pub fn subagent_set_conversation(
        &self,
        handle: &str,
        conversation_id: &str,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE subagents SET conversation_id = ?2 WHERE handle = ?1",
            params![handle, conversation_id],
        )?;
        Ok(())
    }

    /// Sets the number of model calls made so far.
    pub fn subagent_steps(&self, handle: &str, steps: u32) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE subagents SET steps = ?2, updated_at = ?3 WHERE handle = ?1",
            params![handle, steps, now_rfc3339()],
        )?;
        Ok(())
    }

    /// Replaces the list of tool calls made so far.
    pub fn subagent_tool_calls(
        &self,
        handle: &str,
        calls: &[SubAgentCall],
    ) -> Result<(), StoreError> {
        let calls = serde_json::to_string(calls).map_err(json_err)?;
        self.conn().execute(
            "UPDATE subagents SET tool_calls = ?2, updated_at = ?3 WHERE handle = ?1",
            params![handle, calls, now_rfc3339()],
        )?;
        Ok(())
    }

    /// Ends a running sub-agent: its final state, answer or error, and step count. A row that
    /// is no longer `running` is left alone.
    pub fn subagent_finish(
        &self,
        handle: &str,
        state: SubAgentState,
        answer: Option<&str>,
        error: Option<&str>,
        steps: u32,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE subagents SET state = ?2, answer = ?3, error = ?4, steps = ?5, updated_at = ?6
             WHERE handle = ?1 AND state = 'running'",
            params![handle, state.as_str(), answer, error, steps, now_rfc3339()],
        )?;
        Ok(())
    }

    /// Marks every `running` sub-agent `interrupted` (at start: whatever ran died with the last
    /// process). Returns how many were.
    pub fn subagent_interrupt_running(&self, why: &str) -> Result<usize, StoreError> {
        Ok(self.conn().execute(
            "UPDATE subagents SET state = 'interrupted', error = ?1, updated_at = ?2
             WHERE state = 'running'",
            params![why, now_rfc3339()],
        )?)
    }

    /// The sub-agent with this handle.
    pub fn subagent(&self, handle: &str) -> Result<Option<SubAgent>, StoreError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT handle, task, toolsets, state, steps, tool_calls, created_at, updated_at,
                        answer, error, conversation_id
                 FROM subagents WHERE handle = ?1",
                params![handle],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, String>(7)?,
                        r.get::<_, Option<String>>(8)?,
                        r.get::<_, Option<String>>(9)?,
                        r.get::<_, Option<String>>(10)?,
                    ))
                },
            )
            .optional()?;
        let Some((handle, task, sets, state, steps, calls, created, updated, answer, error, conv)) =
            row
        else {
            return Ok(None);
        };
        let toolsets: Vec<String> = serde_json::from_str(&sets).map_err(json_err)?;
        let tool_calls: Vec<SubAgentCall> = serde_json::from_str(&calls).map_err(json_err)?;
        Ok(Some(SubAgent {
            handle,
            task,
            toolsets,
            state: SubAgentState::parse(&state)?,
            steps: steps.max(0) as u32,
            tool_calls,
            created_at: created,
            updated_at: updated,
            answer,
            error,
            conversation_id: conv,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sub_agent_is_recorded_progresses_and_finishes_once() {
        let s = Store::in_memory().unwrap();
        s.subagent_insert("h1", "count", &["web".into()]).unwrap();
        let a = s.subagent("h1").unwrap().unwrap();
        assert_eq!(a.state, SubAgentState::Running);
        assert_eq!(a.toolsets, vec!["web"]);
        s.subagent_steps("h1", 2).unwrap();
        let calls = vec![SubAgentCall {
            tool: "code_run".into(),
            ok: Some(true),
        }];
        s.subagent_tool_calls("h1", &calls).unwrap();
        s.subagent_finish("h1", SubAgentState::Done, Some("42"), None, 3)
            .unwrap();
        // A finished sub-agent is not finished again.
        s.subagent_finish("h1", SubAgentState::Failed, None, Some("x"), 9)
            .unwrap();
        let a = s.subagent("h1").unwrap().unwrap();
        assert_eq!(a.state, SubAgentState::Done);
        assert_eq!(a.answer.as_deref(), Some("42"));
        assert_eq!(a.steps, 3);
        assert_eq!(a.tool_calls, calls);
        assert!(s.subagent("nope").unwrap().is_none());
    }

    #[test]
    fn running_sub_agents_are_marked_interrupted() {
        let s = Store::in_memory().unwrap();
        s.subagent_insert("a", "t", &[]).unwrap();
        s.subagent_insert("b", "t", &[]).unwrap();
        s.subagent_finish("b", SubAgentState::Done, Some("ok"), None, 1)
            .unwrap();
        assert_eq!(s.subagent_interrupt_running("peer died").unwrap(), 1);
        let a = s.subagent("a").unwrap().unwrap();
        assert_eq!(a.state, SubAgentState::Interrupted);
        assert_eq!(a.error.as_deref(), Some("peer died"));
        assert_eq!(s.subagent("b").unwrap().unwrap().state, SubAgentState::Done);
    }
}
