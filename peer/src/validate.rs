//! The peer's own argument check: every request's `args` against its tool's JSON Schema from
//! the catalog, before the tool runs. A covo gateway validated them already, but any client on
//! the broker can publish a request, so the peer never relies on it.

use covo_core::catalog;
use covo_core::error::{ArgProblem, ToolError};
use covo_core::spec::ToolSpec;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Compiled parameter schemas, by tool name (each compiled on first use).
#[derive(Default)]
pub struct Validators {
    cache: Mutex<HashMap<&'static str, Arc<jsonschema::Validator>>>,
}

impl Validators {
    /// Checks `args` against `tool`'s schema, naming every problem. A tool outside the catalog
    /// is `unknown_tool`: there is no schema to check it against.
    pub fn check(&self, tool: &str, args: &Value) -> Result<(), ToolError> {
        let spec = catalog::find(tool).ok_or_else(|| ToolError::UnknownTool {
            tool: tool.into(),
            did_you_mean: Vec::new(),
        })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_problem_is_named_and_valid_arguments_pass() {
        let v = Validators::default();
        v.check("web_fetch", &json!({"url": "https://example.org"}))
            .unwrap();
        match v.check("web_fetch", &json!({"max_chars": 0, "extra": true})) {
            Err(ToolError::InvalidArguments { tool, problems }) => {
                assert_eq!(tool, "web_fetch");
                assert_eq!(problems.len(), 3, "{problems:?}");
                assert!(problems.iter().any(|p| p.path == "/max_chars"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            v.check("no_such_tool", &json!({})),
            Err(ToolError::UnknownTool { .. })
        ));
    }
}
