//! The `core` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "core";

/// `conversation_search`.
pub static CONVERSATION_SEARCH: ToolSpec = ToolSpec {
    name: "conversation_search",
    toolset: TOOLSET,
    profiles: Profiles::MINIMAL
        .or(Profiles::CODING)
        .or(Profiles::MESSAGING)
        .or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Full-text search of past conversation turns, best match first.",
    params: r#"{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":50},"conversation_id":{"type":"string"}},"required":["query"],"additionalProperties":false}"#,
    keywords:
        "history find past chat earlier said previously transcript recall discussed look back talk talked conversations chats old before",
};

/// `send_message`.
pub static SEND_MESSAGE: ToolSpec = ToolSpec {
    name: "send_message",
    toolset: TOOLSET,
    profiles: Profiles::MINIMAL.or(Profiles::MESSAGING).or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Send the user a message, on the current channel unless one is given.",
    params: r#"{"type":"object","properties":{"text":{"type":"string"},"channel":{"type":"string"}},"required":["text"],"additionalProperties":false}"#,
    keywords: "notify tell user reply notification alert message chat say inform update quick note shoot report back status heads up dm respond answer ping text sms email telegram send let know announce write",
};

/// `todo_write`.
pub static TODO_WRITE: ToolSpec = ToolSpec {
    name: "todo_write",
    toolset: TOOLSET,
    profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Replace your to-do list. At most one item may be in_progress.",
    params: r#"{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"enum":["pending","in_progress","done"]}},"required":["content","status"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false}"#,
    keywords: "task list checklist todos track progress tasks check off tick mark done complete add new item items update todo to-do append cross finished backlog chores shopping groceries",
};

/// `plan_update`.
pub static PLAN_UPDATE: ToolSpec = ToolSpec {
        name: "plan_update",
        toolset: TOOLSET,
        profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Record or revise your step-by-step plan; enters plan mode unless an accepted plan is executing.",
        params: r#"{"type":"object","properties":{"steps":{"type":"array","items":{"type":"string"},"minItems":1},"active":{"type":"integer","minimum":0,"description":"0-based current step"},"note":{"type":"string"}},"required":["steps"],"additionalProperties":false}"#,
        keywords: "plan steps outline approach strategy planning mode revise change step make write roadmap first think through down break down",
};

/// `exit_plan_mode`.
pub static EXIT_PLAN_MODE: ToolSpec = ToolSpec {
    name: "exit_plan_mode",
    toolset: TOOLSET,
    profiles: Profiles::MINIMAL.or(Profiles::CODING).or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Ask the user to accept your plan; once accepted, carry it out.",
    params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
    keywords: "approve plan accept start executing done planning looks good proceed lgtm approved execute go carry out confirmed yes do it",
};

/// `ask_clarification`.
pub static ASK_CLARIFICATION: ToolSpec = ToolSpec {
    name: "ask_clarification",
    toolset: TOOLSET,
    profiles: Profiles::MINIMAL
        .or(Profiles::CODING)
        .or(Profiles::MESSAGING)
        .or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Ask the user a question and wait for the answer.",
    params: r#"{"type":"object","properties":{"question":{"type":"string"},"choices":{"type":"array","items":{"type":"string"}}},"required":["question"],"additionalProperties":false}"#,
    keywords: "ask user question clarify confirm choose prompt input more info details unclear ambiguous which one need before continuing check with",
};

/// `structured_output`.
pub static STRUCTURED_OUTPUT: ToolSpec = ToolSpec {
    name: "structured_output",
    toolset: TOOLSET,
    profiles: Profiles::MINIMAL
        .or(Profiles::CODING)
        .or(Profiles::MESSAGING)
        .or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Give your final answer as JSON output that must match schema (a JSON Schema).",
    params: r#"{"type":"object","properties":{"schema":{"type":"object"},"output":{}},"required":["schema","output"],"additionalProperties":false}"#,
    keywords:
        "json schema validate format final answer structured result machine-readable output object",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &CONVERSATION_SEARCH,
    &SEND_MESSAGE,
    &TODO_WRITE,
    &PLAN_UPDATE,
    &EXIT_PLAN_MODE,
    &ASK_CLARIFICATION,
    &STRUCTURED_OUTPUT,
];
