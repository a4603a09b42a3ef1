//! The `system` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "system";

/// `system_info`.
pub static SYSTEM_INFO: ToolSpec = ToolSpec {
        name: "system_info",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Show the gateway's CPU temperature, load, memory, disk, uptime and OS.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "system info cpu soc load memory ram disk space storage uptime os kernel health raspberry pi overheating throttling usage busy hot",
};

/// `network_info`.
pub static NETWORK_INFO: ToolSpec = ToolSpec {
        name: "network_info",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Show network interfaces, addresses, Wi-Fi signal and broker connection state.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "network ip address wifi wi-fi wlan ethernet signal strength rssi ssid interfaces online connectivity broker connection connected internet",
};

/// `service_status`.
pub static SERVICE_STATUS: ToolSpec = ToolSpec {
    name: "service_status",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Show a systemd service's status: active state, since when, recent log lines.",
    params: r#"{"type":"object","properties":{"service":{"type":"string","description":"unit name, e.g. mosquitto"},"lines":{"type":"integer","minimum":0,"maximum":200,"default":20}},"required":["service"],"additionalProperties":false}"#,
    keywords: "systemd service status unit daemon running active failed systemctl journal up down mosquitto journalctl",
};

/// `log_tail`.
pub static LOG_TAIL: ToolSpec = ToolSpec {
    name: "log_tail",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Show the last lines of the gateway's own log or of a named log file.",
    params: r#"{"type":"object","properties":{"file":{"type":"string","description":"log file, default: the gateway log"},"lines":{"type":"integer","minimum":1,"maximum":1000,"default":50},"grep":{"type":"string","description":"only lines matching this regex"}},"additionalProperties":false}"#,
    keywords: "log logs tail last lines errors journal syslog output debug recent journalctl dmesg",
};

/// `reboot`.
pub static REBOOT: ToolSpec = ToolSpec {
    name: "reboot",
    toolset: TOOLSET,
    profiles: Profiles::EDGE,
    runs: Runs::Gateway,
    effect: Effect::Destructive,
    description: "Reboot the gateway, or only restart the gateway service (asks for approval).",
    params: r#"{"type":"object","properties":{"target":{"enum":["system","service"],"default":"system"}},"additionalProperties":false}"#,
    keywords: "reboot restart reset power cycle shutdown restart service",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &SYSTEM_INFO,
    &NETWORK_INFO,
    &SERVICE_STATUS,
    &LOG_TAIL,
    &REBOOT,
];
