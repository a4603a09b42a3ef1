//! The `sensors` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "sensors";

/// `sensor_list`.
pub static SENSOR_LIST: ToolSpec = ToolSpec {
        name: "sensor_list",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "List declared sensors with driver, quantities and units.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "sensors list available which sensors declared configured drivers quantities units measurements what can I measure",
};

/// `sensor_read`.
pub static SENSOR_READ: ToolSpec = ToolSpec {
        name: "sensor_read",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Read a declared sensor; returns each quantity with its unit.",
 params: r#"{"type":"object","properties":{"sensor":{"type":"string","description":"e.g. climate"}},"required":["sensor"],"additionalProperties":false}"#,
 keywords: "sensor read current now measure value reading temperature humidity pressure weather climate lux light level brightness co2 air quality gas soil moisture bme280 sht31 sht4x bh1750 aht20 scd40 dht22 ds18b20 thermometer hygrometer barometer how hot cold warm",
};

/// `sensor_history`.
pub static SENSOR_HISTORY: ToolSpec = ToolSpec {
        name: "sensor_history",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Get a sensor's stored readings over a window, with min/max/mean.",
 params: r#"{"type":"object","properties":{"sensor":{"type":"string","description":"e.g. climate"},"quantity":{"type":"string"},"window":{"type":"string","description":"e.g. 24h"},"since":{"type":"string"},"until":{"type":"string"}},"required":["sensor"],"additionalProperties":false}"#,
 keywords: "sensor history past stored logged recorded readings trend over time yesterday last hour day week overnight since min max mean average statistics series timeline",
};

/// `sensor_export_csv`.
pub static SENSOR_EXPORT_CSV: ToolSpec = ToolSpec {
    name: "sensor_export_csv",
    toolset: TOOLSET,
    profiles: Profiles::EDGE,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Export a sensor's stored readings as a CSV artifact.",
    params: r#"{"type":"object","properties":{"sensor":{"type":"string","description":"e.g. climate"},"quantity":{"type":"string"},"window":{"type":"string","description":"e.g. 24h"},"since":{"type":"string"},"until":{"type":"string"}},"required":["sensor"],"additionalProperties":false}"#,
    keywords:
        "export csv download save file spreadsheet excel dump data log readings history table",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &SENSOR_LIST,
    &SENSOR_READ,
    &SENSOR_HISTORY,
    &SENSOR_EXPORT_CSV,
];
