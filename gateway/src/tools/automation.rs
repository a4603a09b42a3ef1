//! The `automation` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "automation";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "watch_create",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Watch a sensor quantity and fire when a threshold rule holds for a duration, then notify or run a tool. Returns the watch id.",
 params: r#"{"type":"object","properties":{"sensor":{"type":"string","description":"declared name, e.g. climate"},"quantity":{"type":"string","description":"e.g. temperature"},"op":{"enum":[">","<",">=","<="]},"threshold":{"type":"number"},"for":{"type":"string","description":"how long the rule must hold, e.g. 5m"},"hysteresis":{"type":"number","description":"re-arm margin, in the quantity's unit"},"action":{"enum":["notify","tool"],"default":"notify"},"message":{"type":"string","description":"notification text"},"tool":{"type":"string","description":"tool to run when action is tool"},"arguments":{"type":"object"}},"required":["sensor","quantity","op","threshold"],"additionalProperties":false}"#,
 keywords: "watch monitor alert alarm threshold trigger rule condition when if whenever above below exceeds crosses drops rises goes gets becomes higher lower greater less than warmer colder degrees too hot too cold limit temperature humidity co2 level reading notify ping me let me know automation if then automatically react run action warn",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "watch_list",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List active sensor watches with their rules and when each last fired.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "watches list active rules alerts alarms monitors thresholds triggers automations show fired",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "watch_delete",
            toolset: TOOLSET,
            profiles: Profiles::MESSAGING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Remove a sensor watch by id.",
 params: r#"{"type":"object","properties":{"id":{"type":"string","description":"watch id"}},"required":["id"],"additionalProperties":false}"#,
 keywords: "watch delete remove cancel stop disable alert alarm rule monitor threshold trigger automation",
        },
        exec: Exec::Missing,
    },
];
