//! The `board` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "board";

/// `board_info`.
pub static BOARD_INFO: ToolSpec = ToolSpec {
        name: "board_info",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Show the board model, buses, pin map and policy limits.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "board hardware platform raspberry pi model revision pinout pin map header available pins gpio numbering bcm physical buses interfaces i2c spi uart policy safety limits allowed outputs capabilities what board overview running on",
};

/// `device_list`.
pub static DEVICE_LIST: ToolSpec = ToolSpec {
        name: "device_list",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "List declared devices with bus, address and status.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "devices peripherals attached connected declared configured inventory hardware sensors actuators relay fan button oled display mcu names addresses what is plugged in wired up config status online list",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&BOARD_INFO, &DEVICE_LIST];
