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
            description: "Show the board model, buses, pin map and policy limits.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "board hardware platform raspberry pi model revision pinout pin map header available pins gpio numbering bcm physical buses interfaces i2c spi uart policy safety limits allowed outputs capabilities what board overview",
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
            description: "List declared devices with bus, address and status.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "devices peripherals attached connected declared configured inventory hardware sensors actuators relay fan button oled display mcu names addresses what is plugged in wired up config status online",
        },
        exec: Exec::Missing,
    },
];
