//! Lifecycle hooks. The agent loop runs them in order around every model call; each sees the
//! request it may change. The `ToolsetFilter` is the `before_model_call` hook that decides which
//! tools the model sees this turn.

use crate::plan::{Plan, Selection};
use crate::runtime::Runtime;
use crate::spec::ToolDef;

/// What one model call will carry, as the hooks shape it.
#[derive(Debug, Clone, Default)]
pub struct ModelCall {
    /// The tools the model will be shown, in payload order.
    pub tools: Vec<&'static ToolDef>,
    /// Problems hooks hit while shaping the call (already handled; for logs and `/tools`).
    pub notes: Vec<String>,
}

/// A lifecycle hook. Every method has a do-nothing default.
pub trait Hook: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &'static str;
    /// Runs before each model call.
    fn before_model_call(&self, _rt: &Runtime, _call: &mut ModelCall) {}
}

/// Applies the visibility plan before every model call, and fails closed: if the plan cannot be
/// built, the model gets the core tools only, never everything.
#[derive(Debug, Clone)]
pub struct ToolsetFilter {
    selection: Selection,
}

impl ToolsetFilter {
    /// A filter for this platform or explicit toolsets.
    pub fn new(selection: Selection) -> Self {
        ToolsetFilter { selection }
    }

    /// The plan this filter applies, or the core-only plan with the reason it fell back.
    pub fn apply(&self, rt: &Runtime) -> (Plan, Option<String>) {
        match rt.plan(&self.selection) {
            Ok(p) => (p, None),
            Err(e) => {
                tracing::warn!(error = %e, "toolset filter failed; sending core tools only");
                (
                    rt.core_plan(),
                    Some(format!("toolset filter failed closed: {e}")),
                )
            }
        }
    }
}

impl Hook for ToolsetFilter {
    fn name(&self) -> &'static str {
        "toolset_filter"
    }

    fn before_model_call(&self, rt: &Runtime, call: &mut ModelCall) {
        let (plan, note) = self.apply(rt);
        call.tools = plan.visible;
        call.notes.extend(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::runtime::RuntimeOptions;

    fn runtime(config: Config) -> Runtime {
        Runtime::new(RuntimeOptions::new(config)).unwrap()
    }

    #[test]
    fn the_filter_applies_the_platform_plan() {
        let rt = runtime(Config::default());
        let mut call = ModelCall::default();
        ToolsetFilter::new(Selection::Platform("gateway".into())).before_model_call(&rt, &mut call);
        let expected = rt
            .plan(&Selection::Platform("gateway".into()))
            .unwrap()
            .visible;
        let got: Vec<_> = call.tools.iter().map(|t| t.spec.name).collect();
        assert_eq!(
            got,
            expected.iter().map(|t| t.spec.name).collect::<Vec<_>>()
        );
        assert!(call.notes.is_empty());
    }

    #[test]
    fn the_filter_fails_closed_to_core_tools_only() {
        let mut config = Config::default();
        config
            .platforms
            .insert("gateway".into(), vec!["no_such_toolset".into()]);
        let rt = runtime(config);
        let mut call = ModelCall::default();
        ToolsetFilter::new(Selection::Platform("gateway".into())).before_model_call(&rt, &mut call);
        assert!(!call.tools.is_empty());
        assert!(
            call.tools.iter().all(|t| t.spec.toolset == "core"),
            "fail closed, never open"
        );
        assert_eq!(call.notes.len(), 1);
        assert!(call.notes[0].contains("no_such_toolset"));
    }
}
