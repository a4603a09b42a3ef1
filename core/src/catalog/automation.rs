//! The `automation` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "automation";

/// `watch_create`.
pub static WATCH_CREATE: ToolSpec = ToolSpec {
        name: "watch_create",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Watch a sensor quantity and fire when a threshold rule holds for a duration, then notify or run a tool. Returns the watch id.",
 params: r#"{"type":"object","properties":{"sensor":{"type":"string","description":"declared sensor or microcontroller, e.g. climate"},"quantity":{"type":"string","description":"e.g. temperature; on a microcontroller pinN, adcN (mV) or adcN_raw"},"op":{"enum":[">","<",">=","<="]},"threshold":{"type":"number"},"for":{"type":"string","description":"how long the rule must hold, e.g. 5m"},"hysteresis":{"type":"number","description":"re-arm margin, in the quantity's unit"},"action":{"enum":["notify","tool"],"default":"notify"},"message":{"type":"string","description":"notification text"},"tool":{"type":"string","description":"tool to run when action is tool"},"arguments":{"type":"object"}},"required":["sensor","quantity","op","threshold"],"additionalProperties":false}"#,
 keywords: "watch monitor alert alarm threshold trigger rule condition when if whenever above below exceeds crosses drops rises goes gets becomes higher lower greater less than warmer colder degrees too hot too cold limit co2 level notify ping me let me know automation if then automatically react run action warn keep eye falls fall",
};

/// `watch_list`.
pub static WATCH_LIST: ToolSpec = ToolSpec {
        name: "watch_list",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "List active sensor watches with their rules and when each last fired.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "watches list active rules alerts alarms monitors thresholds triggers automations show fired set up watching monitoring",
};

/// `watch_delete`.
pub static WATCH_DELETE: ToolSpec = ToolSpec {
        name: "watch_delete",
        toolset: TOOLSET,
        profiles: Profiles::MESSAGING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Remove a sensor watch by id.",
 params: r#"{"type":"object","properties":{"id":{"type":"string","description":"watch id"}},"required":["id"],"additionalProperties":false}"#,
 keywords: "watch delete remove cancel stop disable alert alarm rule monitor threshold trigger automation watching no longer",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&WATCH_CREATE, &WATCH_LIST, &WATCH_DELETE];
