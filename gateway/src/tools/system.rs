//! The `system` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "system";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "system_info",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "CPU temperature, load, memory, disk, uptime and OS of the gateway.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "network_info",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Network interfaces, addresses, Wi-Fi signal and broker connection state.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "service_status",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Status of a systemd service (active, since, recent log lines).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "log_tail",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Last lines of the gateway's own log or of a named log file.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "reboot",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Destructive,
            description: "Reboot the gateway (or restart the gateway service).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
