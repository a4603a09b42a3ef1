//! The `productivity` toolset.

use crate::error::{ArgProblem, CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use crate::store::{fmt_time, next_cron_run, GoalStatus, ScheduleAction, ScheduleTrigger};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use covo_core::catalog::productivity as c;
use serde::Deserialize;
use serde_json::{json, Value};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::TODO_READ, todo_read),
    ToolDef::local(&c::GOAL_CREATE, goal_create),
    ToolDef::local(&c::GOAL_LIST, goal_list),
    ToolDef::local(&c::GOAL_UPDATE, goal_update),
    ToolDef::local(&c::SCHEDULE_CREATE, schedule_create),
    ToolDef::local(&c::SCHEDULE_LIST, schedule_list),
    ToolDef::local(&c::SCHEDULE_CANCEL, schedule_cancel),
    ToolDef::local(&c::KANBAN_ADD, kanban_add),
    ToolDef::local(&c::KANBAN_MOVE, kanban_move),
    ToolDef::local(&c::KANBAN_LIST, kanban_list),
];

fn todo_read(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let items = cx.store()?.todos(&cx.session.id)?;
    Ok(super::core::todo_json(&items))
}

/// A deadline as stored: an RFC 3339 time normalised to UTC, or a `YYYY-MM-DD` date.
fn parse_deadline(s: &str) -> Result<String, String> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(fmt_time(t.with_timezone(&Utc)));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map(|d| d.format("%Y-%m-%d").to_string())
        .map_err(|_| format!("'{s}' is not an RFC 3339 time or a YYYY-MM-DD date"))
}

#[derive(Deserialize)]
struct GoalCreateArgs {
    title: String,
    success_criterion: String,
    deadline: Option<String>,
}

fn goal_create(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: GoalCreateArgs = cx.args(args)?;
    let deadline = a
        .deadline
        .as_deref()
        .map(parse_deadline)
        .transpose()
        .map_err(|p| ToolError::invalid(cx.tool.name, "/deadline", p))?;
    let goal = cx
        .store()?
        .create_goal(&a.title, &a.success_criterion, deadline.as_deref())?;
    Ok(json!(goal))
}

#[derive(Deserialize)]
struct GoalListArgs {
    status: Option<GoalStatus>,
    text: Option<String>,
}

fn goal_list(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: GoalListArgs = cx.args(args)?;
    let goals = cx.store()?.goals(a.status, a.text.as_deref())?;
    Ok(json!({ "count": goals.len(), "goals": goals }))
}

#[derive(Deserialize)]
struct GoalUpdateArgs {
    id: i64,
    status: Option<GoalStatus>,
    note: Option<String>,
    deadline: Option<String>,
}

fn goal_update(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: GoalUpdateArgs = cx.args(args)?;
    if a.status.is_none() && a.note.is_none() && a.deadline.is_none() {
        return Err(ToolError::invalid(
            cx.tool.name,
            "",
            "nothing to update: give status, note or deadline",
        )
        .into());
    }
    let deadline = a
        .deadline
        .as_deref()
        .map(parse_deadline)
        .transpose()
        .map_err(|p| ToolError::invalid(cx.tool.name, "/deadline", p))?;
    match cx
        .store()?
        .update_goal(a.id, a.status, a.note.as_deref(), deadline.as_deref())?
    {
        Some(goal) => Ok(json!(goal)),
        None => Err(ToolError::NotFound {
            what: "goal".into(),
            id: a.id.to_string(),
        }
        .into()),
    }
}

/// Parses `at`: an RFC 3339 time, or `in <n><unit>` with unit s, m, h, d (or their words).
fn parse_at(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let bad = || {
        format!(
            "'{s}' is neither an RFC 3339 time nor a relative time like 'in 10m', 'in 2h', 'in 3d'"
        )
    };
    let rest = s
        .strip_prefix("in ")
        .or_else(|| s.strip_prefix("IN "))
        .ok_or_else(bad)?
        .trim();
    let split = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let n: i64 = rest[..split].parse().map_err(|_| bad())?;
    let unit = rest[split..].trim().to_lowercase();
    let d = match unit.as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => Duration::try_seconds(n),
        "m" | "min" | "mins" | "minute" | "minutes" => Duration::try_minutes(n),
        "h" | "hr" | "hrs" | "hour" | "hours" => Duration::try_hours(n),
        "d" | "day" | "days" => Duration::try_days(n),
        _ => None,
    }
    .ok_or_else(bad)?;
    if n == 0 {
        return Err(format!("'{s}' is not in the future"));
    }
    now.checked_add_signed(d).ok_or_else(bad)
}

#[derive(Deserialize)]
struct ScheduleArgs {
    name: Option<String>,
    cron: Option<String>,
    at: Option<String>,
    prompt: Option<String>,
    tool: Option<String>,
    arguments: Option<Value>,
}

fn schedule_create(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ScheduleArgs = cx.args(args)?;
    let now = Utc::now();
    let mut problems = Vec::new();
    let mut problem = |path: &str, p: String| {
        problems.push(ArgProblem {
            path: path.into(),
            problem: p,
        })
    };
    let trigger = match (a.cron, a.at) {
        (Some(c), None) => match next_cron_run(&c, now) {
            Ok(_) => Some(ScheduleTrigger::Cron(c)),
            Err(e) => {
                problem(
                    "/cron",
                    format!("invalid cron expression '{c}': {e}; use 5 fields 'minute hour day month weekday', e.g. '0 8 * * *'"),
                );
                None
            }
        },
        (None, Some(at)) => match parse_at(&at, now) {
            Ok(t) if t <= now => {
                problem("/at", format!("'{at}' is in the past"));
                None
            }
            Ok(t) => Some(ScheduleTrigger::At(t)),
            Err(e) => {
                problem("/at", e);
                None
            }
        },
        (Some(_), Some(_)) => {
            problem(
                "",
                "give either cron (repeating) or at (once), not both".into(),
            );
            None
        }
        (None, None) => {
            problem("", "give a trigger: cron (repeating) or at (once)".into());
            None
        }
    };
    let action = match (a.prompt, a.tool) {
        (Some(p), None) => {
            if a.arguments.is_some() {
                problem(
                    "/arguments",
                    "arguments go with tool, not with prompt".into(),
                );
            }
            Some(ScheduleAction::Prompt(p))
        }
        (None, Some(name)) => {
            let arguments = a.arguments.unwrap_or_else(|| json!({}));
            match cx.owned_tool(&name) {
                None => {
                    problem(
                        "/tool",
                        format!(
                            "no tool named '{name}' is available here; find one with tool_search"
                        ),
                    );
                    None
                }
                Some(def) => match cx.validate(def, &arguments) {
                    Ok(()) => Some(ScheduleAction::Tool { name, arguments }),
                    Err(ToolError::InvalidArguments { problems: ps, .. }) => {
                        for p in ps {
                            problem(&format!("/arguments{}", p.path), p.problem);
                        }
                        None
                    }
                    Err(e) => {
                        problem("/arguments", e.to_string());
                        None
                    }
                },
            }
        }
        (Some(_), Some(_)) => {
            problem("", "give either prompt or tool, not both".into());
            None
        }
        (None, None) => {
            problem("", "give an action: prompt, or tool with arguments".into());
            None
        }
    };
    let (Some(trigger), Some(action), true) = (trigger, action, problems.is_empty()) else {
        return Err(ToolError::InvalidArguments {
            tool: cx.tool.name.into(),
            problems,
        }
        .into());
    };
    let job = cx.store()?.create_schedule(
        a.name.as_deref(),
        &cx.session.id,
        &cx.session.channel,
        &trigger,
        &action,
        now,
    )?;
    Ok(job.to_json())
}

#[derive(Deserialize)]
struct ScheduleListArgs {
    #[serde(default)]
    all: bool,
}

fn schedule_list(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ScheduleListArgs = cx.args(args)?;
    let jobs: Vec<Value> = cx
        .store()?
        .schedules(a.all)?
        .iter()
        .map(|j| j.to_json())
        .collect();
    Ok(json!({ "count": jobs.len(), "schedules": jobs }))
}

#[derive(Deserialize)]
struct IdArgs {
    id: i64,
}

fn schedule_cancel(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: IdArgs = cx.args(args)?;
    let store = cx.store()?;
    match store.schedule(a.id)? {
        None => Err(ToolError::NotFound {
            what: "schedule".into(),
            id: a.id.to_string(),
        }
        .into()),
        Some(job) if job.status != "active" => {
            Err(cx.fail(format!("schedule {} is already {}", job.id, job.status)))
        }
        Some(_) => {
            store.cancel_schedule(a.id)?;
            let job = store.schedule(a.id)?.map(|j| j.to_json());
            Ok(json!({ "cancelled": job }))
        }
    }
}

/// The board used when none is named.
const DEFAULT_BOARD: &str = "main";

#[derive(Deserialize)]
struct KanbanAddArgs {
    board: Option<String>,
    column: String,
    title: String,
    note: Option<String>,
}

fn kanban_add(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: KanbanAddArgs = cx.args(args)?;
    let board = a.board.as_deref().unwrap_or(DEFAULT_BOARD);
    let card = cx
        .store()?
        .add_card(board, a.column.trim(), &a.title, a.note.as_deref())?;
    Ok(json!(card))
}

#[derive(Deserialize)]
struct KanbanMoveArgs {
    card_id: i64,
    column: String,
}

fn kanban_move(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: KanbanMoveArgs = cx.args(args)?;
    let store = cx.store()?;
    let Some(before) = store.card(a.card_id)? else {
        return Err(ToolError::NotFound {
            what: "kanban card".into(),
            id: a.card_id.to_string(),
        }
        .into());
    };
    let card = store.move_card(a.card_id, a.column.trim())?;
    Ok(json!({ "from": before.column, "card": card }))
}

#[derive(Deserialize)]
struct KanbanListArgs {
    board: Option<String>,
}

fn kanban_list(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: KanbanListArgs = cx.args(args)?;
    let board = a.board.as_deref().unwrap_or(DEFAULT_BOARD);
    let store = cx.store()?;
    let columns = store.board(board)?;
    let mut out = json!({ "board": board, "columns": columns });
    if columns.is_empty() {
        out["boards"] = json!(store.boards()?);
        out["note"] = json!(format!("board '{board}' has no cards yet"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::parse_time;
    use crate::tools::core::testkit::*;
    use chrono::Timelike;

    #[test]
    fn goals_are_created_listed_and_updated_with_timestamped_notes() {
        let (rt, _) = runtime(&[]);
        let g = ok(
            &rt,
            "goal_create",
            json!({"title": "Grow tomatoes", "success_criterion": "1 kg harvested", "deadline": "2030-08-31"}),
        );
        assert_eq!(g["status"], "active");
        assert_eq!(g["deadline"], "2030-08-31");
        ok(
            &rt,
            "goal_create",
            json!({"title": "Fix the fence", "success_criterion": "no gaps", "deadline": "2030-06-01T10:00:00+02:00"}),
        );
        let list = ok(&rt, "goal_list", json!({"text": "TOMATO"}));
        assert_eq!(list["count"], 1);
        let u = ok(
            &rt,
            "goal_update",
            json!({"id": g["id"], "status": "done", "note": "picked the last ones"}),
        );
        assert_eq!(u["status"], "done");
        assert_eq!(u["notes"][0]["note"], "picked the last ones");
        assert!(u["notes"][0]["at"].is_string());
        assert_eq!(
            ok(&rt, "goal_list", json!({"status": "active"}))["goals"][0]["deadline"],
            "2030-06-01T08:00:00.000Z"
        );
        let e = err(&rt, "goal_update", json!({"id": 99, "note": "x"}));
        assert!(matches!(e, ToolError::NotFound { .. }));
        let e = err(
            &rt,
            "goal_create",
            json!({"title": "t", "success_criterion": "c", "deadline": "next week"}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/deadline");
    }

    #[test]
    fn a_cron_schedule_gets_its_next_run_from_croner() {
        let (rt, _) = runtime(&[]);
        let before = Utc::now();
        let j = ok(
            &rt,
            "schedule_create",
            json!({"name": "water", "cron": "*/15 * * * *", "prompt": "water the plants"}),
        );
        let next = parse_time(j["next_run"].as_str().unwrap()).unwrap();
        assert_eq!(next.minute() % 15, 0);
        assert_eq!(next.second(), 0);
        assert!(next > before && next <= before + Duration::minutes(15));
        let list = ok(&rt, "schedule_list", json!({}));
        assert_eq!(list["schedules"][0]["cron"], "*/15 * * * *");
    }

    #[test]
    fn a_relative_at_schedules_once_from_now() {
        let (rt, _) = runtime(&[]);
        let before = Utc::now();
        let j = ok(
            &rt,
            "schedule_create",
            json!({"at": "in 2h", "tool": "todo_read"}),
        );
        let next = parse_time(j["next_run"].as_str().unwrap()).unwrap();
        // The store keeps milliseconds, so allow for the truncation.
        let low = before + Duration::hours(2) - Duration::milliseconds(1);
        assert!(next >= low && next <= Utc::now() + Duration::hours(2));
        assert_eq!(j["tool"], "todo_read");
        assert_eq!(
            parse_at("in 10m", before).unwrap(),
            before + Duration::minutes(10)
        );
        assert_eq!(
            parse_at("in 3d", before).unwrap(),
            before + Duration::days(3)
        );
        assert!(parse_at("tomorrow", before).is_err());
    }

    #[test]
    fn a_bad_cron_is_a_structured_error_naming_the_field() {
        let (rt, _) = runtime(&[]);
        let e = err(
            &rt,
            "schedule_create",
            json!({"cron": "61 * * * *", "prompt": "x"}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/cron");
        assert!(problems[0].problem.contains("invalid cron expression"));
        assert!(ok(&rt, "schedule_list", json!({}))["schedules"]
            .as_array()
            .unwrap()
            .is_empty());
    }

    #[test]
    fn schedule_create_needs_exactly_one_trigger_and_one_known_action() {
        let (rt, _) = runtime(&[]);
        let e = err(
            &rt,
            "schedule_create",
            json!({"cron": "0 8 * * *", "at": "in 1h", "prompt": "x"}),
        );
        assert!(e.to_string().contains("not both"), "{e}");
        let e = err(&rt, "schedule_create", json!({"prompt": "x"}));
        assert!(e.to_string().contains("give a trigger"), "{e}");
        let e = err(&rt, "schedule_create", json!({"at": "in 1h"}));
        assert!(e.to_string().contains("give an action"), "{e}");
        let e = err(
            &rt,
            "schedule_create",
            json!({"at": "in 1h", "tool": "launch_rocket"}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/tool");
        let e = err(
            &rt,
            "schedule_create",
            json!({"at": "in 1h", "tool": "memory_store", "arguments": {"tags": []}}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert!(problems[0].path.starts_with("/arguments"), "{problems:?}");
        let e = err(
            &rt,
            "schedule_create",
            json!({"at": "2001-01-01T00:00:00Z", "prompt": "x"}),
        );
        assert!(e.to_string().contains("in the past"), "{e}");
    }

    #[test]
    fn cancelled_schedules_are_no_longer_due() {
        let (rt, _) = runtime(&[]);
        let j = ok(
            &rt,
            "schedule_create",
            json!({"at": "in 1m", "prompt": "ping"}),
        );
        let store = rt.store().unwrap();
        assert_eq!(
            store
                .due_schedules(Utc::now() + Duration::minutes(2))
                .unwrap()
                .len(),
            1
        );
        let c = ok(&rt, "schedule_cancel", json!({"id": j["id"]}));
        assert_eq!(c["cancelled"]["status"], "cancelled");
        assert!(store
            .due_schedules(Utc::now() + Duration::minutes(2))
            .unwrap()
            .is_empty());
        assert!(err(&rt, "schedule_cancel", json!({"id": j["id"]}))
            .to_string()
            .contains("already cancelled"));
        assert!(matches!(
            err(&rt, "schedule_cancel", json!({"id": 42})),
            ToolError::NotFound { .. }
        ));
        assert_eq!(ok(&rt, "schedule_list", json!({"all": true}))["count"], 1);
        assert_eq!(ok(&rt, "schedule_list", json!({}))["count"], 0);
    }

    #[test]
    fn kanban_lists_columns_in_first_use_order_with_their_cards() {
        let (rt, _) = runtime(&[]);
        let a = ok(
            &rt,
            "kanban_add",
            json!({"column": "todo", "title": "solder header"}),
        );
        ok(
            &rt,
            "kanban_add",
            json!({"column": "doing", "title": "flash firmware"}),
        );
        ok(
            &rt,
            "kanban_add",
            json!({"board": "garden", "column": "later", "title": "compost"}),
        );
        let m = ok(
            &rt,
            "kanban_move",
            json!({"card_id": a["id"], "column": "done"}),
        );
        assert_eq!(m["from"], "todo");
        assert_eq!(m["card"]["column"], "done");
        let b = ok(&rt, "kanban_list", json!({}));
        let cols: Vec<&str> = b["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(cols, ["todo", "doing", "done"]);
        assert!(b["columns"][0]["cards"].as_array().unwrap().is_empty());
        assert_eq!(b["columns"][2]["cards"][0]["title"], "solder header");
        let g = ok(&rt, "kanban_list", json!({"board": "garden"}));
        assert_eq!(g["columns"][0]["cards"][0]["title"], "compost");
        let none = ok(&rt, "kanban_list", json!({"board": "attic"}));
        assert_eq!(none["boards"], json!(["main", "garden"]));
        assert!(matches!(
            err(&rt, "kanban_move", json!({"card_id": 99, "column": "x"})),
            ToolError::NotFound { .. }
        ));
    }
}
