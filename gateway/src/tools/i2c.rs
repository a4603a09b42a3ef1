//! The `i2c` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "i2c";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "i2c_scan",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Probe an I2C bus for responding 7-bit addresses, like i2cdetect.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read N bytes from an I2C device.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Write bytes to an I2C device (address must be allowed for writing by the board policy).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_write_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Write bytes then read N bytes in one repeated-start transaction.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "i2c_read_register",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read 8- or 16-bit registers starting at a register address (register-pointer convention).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
