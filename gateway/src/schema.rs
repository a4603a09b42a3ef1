//! Tool arguments against their spec's JSON Schema: each schema compiled once, every problem
//! named with its JSON pointer. The gateway's pipeline and the peer (which never trusts that a
//! gateway checked) both validate through this.

use covo_core::error::{ArgProblem, ToolError};
use covo_core::spec::ToolSpec;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Compiled parameter schemas, by tool name (each compiled on first use; at most one per
/// catalog tool, so the cache is bounded by the catalog).
#[derive(Default)]
pub struct Validators {
    cache: Mutex<HashMap<&'static str, Arc<jsonschema::Validator>>>,
}

impl Validators {
    /// Checks `args` against `spec`'s schema, naming every problem.
    pub fn check(&self, spec: &'static ToolSpec, args: &Value) -> Result<(), ToolError> {
        let validator = self.validator(spec)?;
        let problems: Vec<ArgProblem> = validator
            .iter_errors(args)
            .map(|e| ArgProblem {
                path: e.instance_path().to_string(),
                problem: e.to_string(),
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::InvalidArguments {
                tool: spec.name.into(),
                problems,
            })
        }
    }

    fn validator(&self, spec: &'static ToolSpec) -> Result<Arc<jsonschema::Validator>, ToolError> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = cache.get(spec.name) {
            return Ok(v.clone());
        }
        // The catalog conformance test compiles every schema; this is only a safety net.
        let v = Arc::new(jsonschema::validator_for(&spec.params_json()).map_err(|e| {
            ToolError::failed(
                spec.name,
                format!("the tool's schema does not compile: {e}"),
            )
        })?);
        cache.insert(spec.name, v.clone());
        Ok(v)
    }
}
