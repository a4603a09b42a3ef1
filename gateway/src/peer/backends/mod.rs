//! PLACEHOLDER so this branch compiles: the real peer-side tool backends are written in parallel
//! and replace this file at merge. Same API; serves no tools (never advertise a fake).

use crate::error::ToolError;
use serde::Deserialize;
use serde_json::Value;
use std::time::Instant;

/// The backends' configuration (`[peer.backends]`). Placeholder: no keys yet.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BackendsConfig {}

/// The configured tool backends. Placeholder: none.
#[derive(Debug, Default)]
pub struct Backends {}

impl Backends {
    /// Builds the backends the configuration enables.
    pub fn from_config(_cfg: &crate::config::PeerConfig) -> Backends {
        Backends {}
    }

    /// The tools whose backend is configured.
    pub fn tools(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Runs `tool`; must finish by `deadline`.
    pub fn call(&self, tool: &str, _args: Value, _deadline: Instant) -> Result<Value, ToolError> {
        Err(ToolError::Unavailable {
            tool: tool.into(),
            reason: "no backend configured on this peer".into(),
        })
    }
}
