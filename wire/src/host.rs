//! What runs peer tools: the peer's backends, a sub-agent's in-process host, or a test's
//! stand-in. The peer server serves one over MQTT; the gateway's runtime can call one in process
//! (`RuntimeOptions::local_peer`).

use covo_core::error::ToolError;
use serde_json::Value;
use std::time::Instant;

/// What runs the tools: the backends, or a test's stand-in.
pub trait ToolHost: Send + Sync + 'static {
    /// The tools served (advertised in the birth).
    fn tools(&self) -> Vec<String>;
    /// Runs one tool; should finish by `deadline`.
    fn call(&self, tool: &str, args: Value, deadline: Instant) -> Result<Value, ToolError>;
}
