//! The peer's own argument check: every request's `args` against its tool's JSON Schema from
//! the catalog, before the tool runs. A covo gateway validated them already, but any client on
//! the broker can publish a request, so the peer never relies on it.

use covo_core::catalog;
use covo_core::error::ToolError;
use serde_json::Value;

/// The peer's schema check: the catalog's spec for the requested tool, validated by the same
/// code as the gateway's pipeline (`covo::schema`).
#[derive(Default)]
pub struct Validators(covo::schema::Validators);

impl Validators {
    /// Checks `args` against `tool`'s schema, naming every problem. A tool outside the catalog
    /// is `unknown_tool`: there is no schema to check it against.
    pub fn check(&self, tool: &str, args: &Value) -> Result<(), ToolError> {
        let spec = catalog::find(tool).ok_or_else(|| ToolError::UnknownTool {
            tool: tool.into(),
            did_you_mean: Vec::new(),
        })?;
        self.0.check(spec, args)
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
