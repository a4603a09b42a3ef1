//! The `gpio` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "gpio";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "gpio_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read the level of a GPIO line (by BCM number or declared name).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "gpio_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Drive a GPIO output high or low (only lines the board policy marks as outputs), optionally as a timed pulse.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "gpio_wait_edge",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Wait for a rising/falling edge on a GPIO input, with a timeout (e.g. a button or motion sensor).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "pwm_set",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Set frequency and duty cycle on a PWM channel (fan, dimmer, servo), within policy limits.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
