//! The `board` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "board";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "board_info",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "The board model, its buses (I2C, SPI, UART), pin map and the policy limits in force.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "device_list",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "The devices the board config declares (sensors, actuators, microcontrollers) with bus, address and status.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
