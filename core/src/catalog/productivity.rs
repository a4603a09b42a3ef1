//! The `productivity` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "productivity";

/// `todo_read`.
pub static TODO_READ: ToolSpec = ToolSpec {
    name: "todo_read",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Read the session's to-do list with counts per status.",
    params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
    keywords: "todos tasks checklist show list progress what is left remaining open items outstanding pending todo to-do view read my chores how many count counts status done shopping groceries",
};

/// `goal_create`.
pub static GOAL_CREATE: ToolSpec = ToolSpec {
    name: "goal_create",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Create a long-lived goal with a success criterion and optional deadline.",
    params: r#"{"type":"object","properties":{"title":{"type":"string","minLength":1},"success_criterion":{"type":"string","minLength":1,"description":"How to tell the goal is reached"},"deadline":{"type":"string","description":"RFC 3339 time or YYYY-MM-DD"}},"required":["title","success_criterion"],"additionalProperties":false}"#,
    keywords: "goal objective target aim milestone ambition resolution okr track long-term add new want achieve by deadline set create",
};

/// `goal_list`.
pub static GOAL_LIST: ToolSpec = ToolSpec {
    name: "goal_list",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "List goals, optionally by status or containing text.",
    params: r#"{"type":"object","properties":{"status":{"enum":["active","done","abandoned"]},"text":{"type":"string","description":"Case-insensitive text in the title or criterion"}},"additionalProperties":false}"#,
    keywords:
        "goals objectives targets show list find milestones progress open finished how doing status",
};

/// `goal_update`.
pub static GOAL_UPDATE: ToolSpec = ToolSpec {
        name: "goal_update",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Update a goal: set its status or deadline, or append a timestamped progress note.",
        params: r#"{"type":"object","properties":{"id":{"type":"integer"},"status":{"enum":["active","done","abandoned"]},"note":{"type":"string","minLength":1,"description":"Progress note to append"},"deadline":{"type":"string","description":"RFC 3339 time or YYYY-MM-DD"}},"required":["id"],"additionalProperties":false}"#,
        keywords: "goal progress complete finish achieved abandon give up reschedule postpone deadline note update mark done",
};

/// `schedule_create`.
pub static SCHEDULE_CREATE: ToolSpec = ToolSpec {
        name: "schedule_create",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description:
            "Schedule a prompt or a tool call to run once (at) or repeatedly (cron). Give exactly one of cron/at and exactly one of prompt/tool.",
        params: r#"{"type":"object","properties":{"name":{"type":"string"},"cron":{"type":"string","description":"Cron expression in local time, e.g. \"0 8 * * 1-5\""},"at":{"type":"string","description":"Run once: RFC 3339 time, or relative like \"in 10m\", \"in 2h\", \"in 3d\""},"prompt":{"type":"string","description":"Prompt to run as a new agent turn"},"tool":{"type":"string","description":"Tool to call"},"arguments":{"type":"object","description":"Arguments for tool"}},"additionalProperties":false}"#,
        keywords: "schedule remind me later reminder timer alarm cron recurring every day daily hourly weekly at time in minutes job periodic repeat automate morning evening tonight tomorrow am pm run wake",
};

/// `schedule_list`.
pub static SCHEDULE_LIST: ToolSpec = ToolSpec {
    name: "schedule_list",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "List scheduled jobs with their next run time (UTC).",
    params: r#"{"type":"object","properties":{"all":{"type":"boolean","description":"Include finished and cancelled jobs"}},"additionalProperties":false}"#,
    keywords: "scheduled jobs reminders timers cron list upcoming next run pending alarms planned tonight tomorrow this week calendar agenda queued queue",
};

/// `schedule_cancel`.
pub static SCHEDULE_CANCEL: ToolSpec = ToolSpec {
    name: "schedule_cancel",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Cancel a scheduled job by id.",
    params: r#"{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}"#,
    keywords:
        "cancel stop delete remove unschedule reminder timer alarm job disable daily hourly weekly",
};

/// `kanban_add`.
pub static KANBAN_ADD: ToolSpec = ToolSpec {
    name: "kanban_add",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING,
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Add a card to a kanban board column (board \"main\" by default).",
    params: r#"{"type":"object","properties":{"board":{"type":"string","default":"main"},"column":{"type":"string","description":"e.g. todo, doing, done"},"title":{"type":"string","minLength":1},"note":{"type":"string"}},"required":["column","title"],"additionalProperties":false}"#,
    keywords: "kanban card board column ticket backlog trello add create sticky doing",
};

/// `kanban_move`.
pub static KANBAN_MOVE: ToolSpec = ToolSpec {
    name: "kanban_move",
    toolset: TOOLSET,
    profiles: Profiles::MESSAGING,
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Move a kanban card to another column.",
    params: r#"{"type":"object","properties":{"card_id":{"type":"integer"},"column":{"type":"string"}},"required":["card_id","column"],"additionalProperties":false}"#,
    keywords: "kanban move card column progress doing done status drag advance ticket in lane to",
};

/// `kanban_list`.
pub static KANBAN_LIST: ToolSpec = ToolSpec {
        name: "kanban_list",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Show a kanban board: its columns in order, each with its cards.",
        params: r#"{"type":"object","properties":{"board":{"type":"string","default":"main"}},"additionalProperties":false}"#,
        keywords: "kanban board show view list cards columns board tickets backlog overview trello status lanes",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &TODO_READ,
    &GOAL_CREATE,
    &GOAL_LIST,
    &GOAL_UPDATE,
    &SCHEDULE_CREATE,
    &SCHEDULE_LIST,
    &SCHEDULE_CANCEL,
    &KANBAN_ADD,
    &KANBAN_MOVE,
    &KANBAN_LIST,
];
