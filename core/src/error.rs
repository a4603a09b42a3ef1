//! Errors of a tool call, split the codex way: what goes back to the model, and what ends the turn.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One problem with a call's arguments: where it is and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgProblem {
    /// JSON pointer to the offending value (`""` for the arguments object itself).
    pub path: String,
    /// What is wrong, in words the model can act on.
    pub problem: String,
}

/// A tool-call error the model sees and can act on (retry with other arguments, pick another
/// tool). Never ends the turn.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolError {
    /// No tool has this name at all.
    #[error("unknown tool '{tool}'")]
    UnknownTool {
        /// The name that was asked for.
        tool: String,
        /// Owned tools with similar names or purposes.
        did_you_mean: Vec<String>,
    },
    /// The tool exists in the catalog but the active profile prunes it.
    #[error("tool '{tool}' is not available under profile '{profile}'")]
    NotInProfile {
        /// The pruned tool.
        tool: String,
        /// The active profile.
        profile: String,
    },
    /// The tool is owned but cannot run now.
    #[error("tool '{tool}' is unavailable: {reason}")]
    Unavailable {
        /// The tool.
        tool: String,
        /// Why, e.g. `not implemented` or `peer not connected`.
        reason: String,
    },
    /// The arguments were not valid JSON.
    #[error("arguments for '{tool}' are not valid JSON: {detail}")]
    MalformedJson {
        /// The tool.
        tool: String,
        /// The parser's message, with line and column.
        detail: String,
    },
    /// The arguments do not match the tool's parameter schema.
    #[error("invalid arguments for '{tool}': {}", summarize(problems))]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Every problem found, with its location.
        problems: Vec<ArgProblem>,
    },
    /// The policy refused the call.
    #[error("refused by policy rule '{rule}': {detail}")]
    PolicyRefused {
        /// The tool.
        tool: String,
        /// The rule that refused, e.g. `read_only` or `i2c.write_allow`.
        rule: String,
        /// What the rule says about this call.
        detail: String,
    },
    /// A destructive call was not approved.
    #[error("'{tool}' is destructive and was not approved: {detail}")]
    ApprovalDenied {
        /// The tool.
        tool: String,
        /// Who declined, or why nobody could be asked.
        detail: String,
    },
    /// Something the call names does not exist (a goal id, a memory, a schedule).
    #[error("{what} not found: {id}")]
    NotFound {
        /// The kind of thing.
        what: String,
        /// The id or name that was asked for.
        id: String,
    },
    /// No answer came in time (a peer or swarm call's deadline passed).
    #[error("'{tool}' timed out: {message}")]
    Timeout {
        /// The tool.
        tool: String,
        /// What was waited for, and how long.
        message: String,
        /// What to try instead, when there is something.
        #[serde(skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
    /// The tool ran and failed in a way the model can react to.
    #[error("'{tool}' failed: {message}")]
    Failed {
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
        /// What to try instead, when there is something.
        #[serde(skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
}

fn summarize(problems: &[ArgProblem]) -> String {
    problems
        .iter()
        .map(|p| {
            if p.path.is_empty() {
                p.problem.clone()
            } else {
                format!("{}: {}", p.path, p.problem)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl ToolError {
    /// A failure of `tool` with a message and no hint.
    pub fn failed(tool: &str, message: impl Into<String>) -> Self {
        ToolError::Failed {
            tool: tool.to_string(),
            message: message.into(),
            hint: None,
        }
    }

    /// A single argument problem at `path` (a JSON pointer such as `/limit`).
    pub fn invalid(tool: &str, path: &str, problem: impl Into<String>) -> Self {
        ToolError::InvalidArguments {
            tool: tool.to_string(),
            problems: vec![ArgProblem {
                path: path.to_string(),
                problem: problem.into(),
            }],
        }
    }

    /// The error as the JSON object the model and the CLI see: `{"error": {"kind": .., "message": .., ..}}`.
    pub fn to_json(&self) -> Value {
        let mut body = serde_json::to_value(self).unwrap_or_else(|_| json!({}));
        if let Value::Object(map) = &mut body {
            map.insert("message".into(), Value::String(self.to_string()));
        }
        json!({ "error": body })
    }
}
