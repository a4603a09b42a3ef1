//! The `serial` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "serial";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "serial_list",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "List serial ports with USB vendor/product and which declared device each is.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "serial_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Write text or bytes to a serial port at a baud rate.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "serial_read",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read from a serial port until a delimiter, a byte count or a timeout.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "serial_request",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Write a command line to a serial device and return its reply (AT-style request/response).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
