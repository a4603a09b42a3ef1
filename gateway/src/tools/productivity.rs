//! The `productivity` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "productivity";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "todo_read",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read the session's to-do list.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "goal_create",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Create a long-lived goal with a success criterion and optional deadline.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "goal_list",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List or query goals by status or text.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "goal_update",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Update a goal's status, progress note or deadline.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "schedule_create",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description:
                "Schedule a prompt or a tool call to run at a time or on a cron expression.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "schedule_list",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List scheduled jobs with their next run time.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "schedule_cancel",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Cancel a scheduled job.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "kanban_add",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Add a card to a kanban board column.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "kanban_move",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Move a kanban card to another column.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "kanban_list",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Show a kanban board with its columns and cards.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
