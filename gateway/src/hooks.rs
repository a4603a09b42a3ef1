//! Lifecycle hooks: an ordered list the runtime runs around every model call and every tool call.
//!
//! The built-in order is: `ToolsetFilter` (what the model sees), `PolicyHook` (gateway and board
//! policies), `PlanModeHook` (read-only until a plan is accepted), the user's hooks, and last
//! `ApprovalHook` (destructive tools). Because tool-call hooks run inside the one dispatch
//! pipeline, they hold for `tool_call`, MQTT and remote calls alike.
//!
//! Failure outcomes are fixed:
//! - a `before_model_call` error makes the call carry only the core tools (fail closed), and later
//!   hooks still run (they can only narrow further);
//! - a `before_tool_call` error refuses the call with that structured error;
//! - `after_*` hooks cannot fail: what happened has happened.

use crate::error::{CallError, ToolError};
use crate::exec::{Services, Session};
pub use crate::policy::ToolInvocation;
use crate::policy::{is, Approver, Policy};
use covo_core::catalog;
use covo_core::plan::{Plan, Selection};
use covo_core::spec::{Effect, ToolSpec};
use serde_json::Value;

/// What a hook sees of the call it runs around.
pub struct HookCx<'a> {
    /// The pipeline's services (store, owned tools, plans).
    pub rt: &'a dyn Services,
    /// The session the call belongs to.
    pub session: &'a Session,
}

/// What one model call will carry, as the hooks shape it.
#[derive(Debug, Clone, Default)]
pub struct ModelCall {
    /// The tools the model will be shown, in payload order.
    pub tools: Vec<&'static ToolSpec>,
    /// Problems hooks hit while shaping the call (already handled; for logs and `/tools`).
    pub notes: Vec<String>,
}

/// What the model answered, as `after_model_call` hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct ModelReply<'a> {
    /// The assistant's text.
    pub text: &'a str,
    /// Names of the tools it asked to call.
    pub tool_calls: &'a [String],
}

/// A `before_model_call` hook failed; the call falls back to the core tools.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{hook}: {message}")]
pub struct HookError {
    /// The hook's name.
    pub hook: &'static str,
    /// What went wrong.
    pub message: String,
}

/// A lifecycle hook. Every method has a do-nothing default.
pub trait Hook: Send + Sync {
    /// A short name for logs and errors.
    fn name(&self) -> &'static str;

    /// Runs before each model call; may change which tools it carries.
    fn before_model_call(&self, _cx: &HookCx<'_>, _call: &mut ModelCall) -> Result<(), HookError> {
        Ok(())
    }

    /// Runs after each model call.
    fn after_model_call(&self, _cx: &HookCx<'_>, _reply: &ModelReply<'_>) {}

    /// Runs before each tool call, after its arguments are validated; `Err` refuses the call.
    fn before_tool_call(
        &self,
        _cx: &HookCx<'_>,
        _call: &ToolInvocation<'_>,
    ) -> Result<(), ToolError> {
        Ok(())
    }

    /// Runs after each tool call that passed `before_tool_call`.
    fn after_tool_call(
        &self,
        _cx: &HookCx<'_>,
        _call: &ToolInvocation<'_>,
        _outcome: &Result<Value, CallError>,
    ) {
    }
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

    /// The selection this filter applies.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// The plan this filter applies, or the core-only plan with the reason it fell back.
    pub fn apply(&self, rt: &dyn Services) -> (Plan, Option<String>) {
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

    fn before_model_call(&self, cx: &HookCx<'_>, call: &mut ModelCall) -> Result<(), HookError> {
        let (plan, note) = self.apply(cx.rt);
        call.tools = plan.visible;
        call.notes.extend(note);
        Ok(())
    }
}

/// Runs the policies (gateway-wide and board) on every tool call.
pub struct PolicyHook {
    policies: Vec<Box<dyn Policy>>,
}

impl PolicyHook {
    /// A hook over these policies, checked in order.
    pub fn new(policies: Vec<Box<dyn Policy>>) -> Self {
        PolicyHook { policies }
    }
}

impl Hook for PolicyHook {
    fn name(&self) -> &'static str {
        "policy"
    }

    fn before_tool_call(
        &self,
        _cx: &HookCx<'_>,
        call: &ToolInvocation<'_>,
    ) -> Result<(), ToolError> {
        for p in &self.policies {
            p.check(call).map_err(|r| ToolError::PolicyRefused {
                tool: call.spec.name.into(),
                rule: r.rule,
                detail: r.detail,
            })?;
        }
        Ok(())
    }
}

/// Tools that stay usable in plan mode although their effect is not `read`: the ones that shape
/// and leave the plan, and `tool_call`, whose inner call is checked on its own.
const PLAN_MODE_ALLOWED: &[&ToolSpec] = &[
    &catalog::core::PLAN_UPDATE,
    &catalog::core::EXIT_PLAN_MODE,
    &catalog::core::TODO_WRITE,
    &catalog::discovery::TOOL_CALL,
];

fn allowed_in_plan_mode(spec: &ToolSpec) -> bool {
    spec.effect == Effect::Read || PLAN_MODE_ALLOWED.iter().any(|a| is(spec, a))
}

/// Plan mode: between `plan_update` and an accepted `exit_plan_mode`, the model sees and may run
/// only read-only tools (plus the plan tools).
pub struct PlanModeHook;

impl PlanModeHook {
    fn planning(cx: &HookCx<'_>) -> Result<bool, String> {
        cx.rt
            .store()
            .and_then(|s| s.in_plan_mode(&cx.session.id))
            .map_err(|e| e.to_string())
    }
}

impl Hook for PlanModeHook {
    fn name(&self) -> &'static str {
        "plan_mode"
    }

    fn before_model_call(&self, cx: &HookCx<'_>, call: &mut ModelCall) -> Result<(), HookError> {
        let planning = Self::planning(cx).map_err(|message| HookError {
            hook: self.name(),
            message,
        })?;
        if planning {
            call.tools.retain(|t| allowed_in_plan_mode(t));
        }
        Ok(())
    }

    fn before_tool_call(
        &self,
        cx: &HookCx<'_>,
        call: &ToolInvocation<'_>,
    ) -> Result<(), ToolError> {
        if allowed_in_plan_mode(call.spec) {
            return Ok(());
        }
        let refuse = |detail: String| ToolError::PolicyRefused {
            tool: call.spec.name.into(),
            rule: "plan_mode".into(),
            detail,
        };
        match Self::planning(cx) {
            Ok(false) => Ok(()),
            Ok(true) => Err(refuse(
                "the session is in plan mode: only read-only tools run until the plan is accepted with exit_plan_mode".into(),
            )),
            Err(e) => Err(refuse(format!("plan state unreadable ({e}); refusing to be safe"))),
        }
    }
}

/// Asks the approver before a destructive tool runs. Last in the order, so nobody is asked about
/// a call that policy would refuse anyway.
pub struct ApprovalHook {
    approver: Box<dyn Approver>,
}

impl ApprovalHook {
    /// A hook that asks `approver`.
    pub fn new(approver: Box<dyn Approver>) -> Self {
        ApprovalHook { approver }
    }
}

impl Hook for ApprovalHook {
    fn name(&self) -> &'static str {
        "approval"
    }

    fn before_tool_call(
        &self,
        cx: &HookCx<'_>,
        call: &ToolInvocation<'_>,
    ) -> Result<(), ToolError> {
        // The session's own approver (the user on its channel) when it has one.
        let approver: &dyn Approver = match &cx.session.approver {
            Some(a) => a.as_ref(),
            None => self.approver.as_ref(),
        };
        // Destructive tools, and whatever else the approver asks about.
        if call.spec.effect != Effect::Destructive && !approver.asks(call.spec) {
            return Ok(());
        }
        approver
            .approve(call.spec, call.args)
            .map_err(|detail| ToolError::ApprovalDenied {
                tool: call.spec.name.into(),
                detail,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::runtime::Runtime;
    use crate::store::Store;

    fn runtime(config: Config) -> Runtime {
        Runtime::new(crate::tools::options(config))
            .unwrap()
            .with_store(Store::in_memory().unwrap())
    }

    fn session() -> Session {
        Session::new("h1", "cli")
    }

    #[test]
    fn the_filter_applies_the_platform_plan() {
        let rt = runtime(Config::default());
        let call = rt.model_call(&session());
        let expected = rt
            .plan(&Selection::Platform("gateway".into()))
            .unwrap()
            .visible;
        let got: Vec<_> = call.tools.iter().map(|t| t.name).collect();
        assert_eq!(got, expected.iter().map(|t| t.name).collect::<Vec<_>>());
        assert!(call.notes.is_empty());
    }

    #[test]
    fn the_filter_fails_closed_to_core_tools_only() {
        let mut config = Config::default();
        config
            .platforms
            .insert("gateway".into(), vec!["no_such_toolset".into()]);
        let rt = runtime(config);
        let call = rt.model_call(&session());
        assert!(!call.tools.is_empty());
        assert!(
            call.tools.iter().all(|t| t.toolset == "core"),
            "fail closed, never open"
        );
        assert_eq!(call.notes.len(), 1);
        assert!(call.notes[0].contains("no_such_toolset"));
    }

    #[test]
    fn plan_mode_narrows_the_model_call_to_read_only_and_plan_tools() {
        let rt = runtime(Config::default());
        let s = session();
        rt.store()
            .unwrap()
            .save_plan(&s.id, &["look".into()], None, None)
            .unwrap();
        let call = rt.model_call(&s);
        assert!(call.tools.iter().all(|t| allowed_in_plan_mode(t)));
        assert!(call.tools.iter().any(|t| t.name == "exit_plan_mode"));
        assert!(!call.tools.iter().any(|t| t.name == "send_message"));
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;
    use crate::config::Config;
    use crate::runtime::{Runtime, Via};
    use crate::store::Store;
    use std::sync::{Arc, Mutex};

    /// Logs every hook call into a shared list; optionally fails.
    struct Probe {
        log: Arc<Mutex<Vec<String>>>,
        fail_model: bool,
        refuse_tools: bool,
    }

    impl Hook for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }
        fn before_model_call(&self, _: &HookCx<'_>, call: &mut ModelCall) -> Result<(), HookError> {
            self.log
                .lock()
                .unwrap()
                .push(format!("before_model {}", call.tools.len()));
            if self.fail_model {
                return Err(HookError {
                    hook: "probe",
                    message: "broken".into(),
                });
            }
            Ok(())
        }
        fn before_tool_call(
            &self,
            _: &HookCx<'_>,
            call: &ToolInvocation<'_>,
        ) -> Result<(), ToolError> {
            self.log
                .lock()
                .unwrap()
                .push(format!("before_tool {}", call.spec.name));
            if self.refuse_tools {
                return Err(ToolError::PolicyRefused {
                    tool: call.spec.name.into(),
                    rule: "probe".into(),
                    detail: "no".into(),
                });
            }
            Ok(())
        }
        fn after_tool_call(
            &self,
            _: &HookCx<'_>,
            call: &ToolInvocation<'_>,
            outcome: &Result<Value, CallError>,
        ) {
            self.log.lock().unwrap().push(format!(
                "after_tool {} ok={}",
                call.spec.name,
                outcome.is_ok()
            ));
        }
    }

    struct CountingApprover(Arc<Mutex<Vec<String>>>);
    impl Approver for CountingApprover {
        fn approve(&self, spec: &ToolSpec, _: &Value) -> Result<(), String> {
            self.0
                .lock()
                .unwrap()
                .push(format!("approve {}", spec.name));
            Ok(())
        }
    }

    fn runtime(fail_model: bool, refuse_tools: bool) -> (Runtime, Arc<Mutex<Vec<String>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut opts = crate::tools::options(Config::default());
        opts.hooks.push(Box::new(Probe {
            log: log.clone(),
            fail_model,
            refuse_tools,
        }));
        opts.approver = Box::new(CountingApprover(log.clone()));
        opts.home =
            Some(std::env::temp_dir().join(format!("covo-hook-order-{}", std::process::id())));
        (
            Runtime::new(opts)
                .unwrap()
                .with_store(Store::in_memory().unwrap()),
            log,
        )
    }

    #[test]
    fn user_hooks_run_after_the_filter_and_see_its_result() {
        let (rt, log) = runtime(false, false);
        let call = rt.model_call(&Session::new("o", "cli"));
        assert_eq!(
            log.lock().unwrap()[0],
            format!("before_model {}", call.tools.len())
        );
        assert!(!call.tools.is_empty());
    }

    #[test]
    fn a_failing_model_hook_fails_closed_to_core_tools() {
        let (rt, _) = runtime(true, false);
        let call = rt.model_call(&Session::new("o", "cli"));
        assert!(call.tools.iter().all(|t| t.toolset == "core"));
        assert!(call.notes.iter().any(|n| n.contains("probe: broken")));
    }

    #[test]
    fn a_refusing_tool_hook_stops_the_call_before_approval_and_execution() {
        let (rt, log) = runtime(false, true);
        let s = Session::new("o", "cli");
        let e = rt
            .call(
                &s,
                Via::Direct,
                "fs_delete",
                serde_json::json!({"path": "x"}),
            )
            .unwrap_err();
        assert!(
            matches!(e, CallError::Respond(ToolError::PolicyRefused { ref rule, .. }) if rule == "probe")
        );
        let log = log.lock().unwrap();
        assert_eq!(
            *log,
            ["before_tool fs_delete"],
            "no approval asked, nothing ran"
        );
    }

    #[test]
    fn tool_hooks_run_in_order_around_the_call_and_approval_comes_last() {
        let (rt, log) = runtime(false, false);
        let s = Session::new("o", "cli");
        rt.call(&s, Via::Direct, "todo_read", serde_json::json!({}))
            .unwrap();
        let _ = rt.call(
            &s,
            Via::Direct,
            "fs_delete",
            serde_json::json!({"path": "missing.txt"}),
        );
        let log = log.lock().unwrap();
        assert_eq!(
            *log,
            [
                "before_tool todo_read",
                "after_tool todo_read ok=true",
                "before_tool fs_delete",
                "approve fs_delete",
                "after_tool fs_delete ok=false"
            ]
        );
    }
}
