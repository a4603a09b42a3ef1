//! Errors of a tool call, split the codex way: what goes back to the model, and what ends the turn.

pub use covo_core::error::{ArgProblem, ToolError};

/// An error that ends the turn: the gateway itself is broken (database, disk, configuration).
#[derive(Debug, thiserror::Error)]
pub enum Fatal {
    /// The SQLite store failed.
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
    /// A filesystem or process operation failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// The outcome of a failed call: respond to the model, or stop.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Goes back to the model as a structured error.
    #[error(transparent)]
    Respond(#[from] ToolError),
    /// Ends the turn.
    #[error(transparent)]
    Fatal(#[from] Fatal),
}

impl From<crate::store::StoreError> for CallError {
    fn from(e: crate::store::StoreError) -> Self {
        CallError::Fatal(Fatal::Store(e))
    }
}

impl CallError {
    /// A store error in a tool whose argument at `path` (a JSON pointer) holds a full-text
    /// query: a refused query goes back to the model as an invalid argument, anything else
    /// ends the turn.
    pub fn from_query(tool: &str, path: &str, e: crate::store::StoreError) -> CallError {
        match e {
            crate::store::StoreError::Query(q) => {
                ToolError::invalid(tool, path, q.to_string()).into()
            }
            e => e.into(),
        }
    }
}

impl From<std::io::Error> for CallError {
    fn from(e: std::io::Error) -> Self {
        CallError::Fatal(Fatal::Io(e))
    }
}
