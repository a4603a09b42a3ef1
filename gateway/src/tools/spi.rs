//! The `spi` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "spi";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "spi_transfer",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Full-duplex SPI transfer on a bus and chip select; returns the bytes read.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"cs":{"type":"integer"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["data"],"additionalProperties":false}"#,
 keywords: "spi transfer exchange full duplex transaction xfer mosi miso sclk chip select cs ce0 ce1 spidev read write bytes adc mcp3008 flash",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "spi_write",
            toolset: TOOLSET,
            profiles: Profiles::EDGE,
            runs: Runs::Gateway,
            effect: Effect::Actuate,
            description: "Write bytes on an SPI bus and chip select, ignoring what is read.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"cs":{"type":"integer"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["data"],"additionalProperties":false}"#,
 keywords: "spi write send bytes output only mosi chip select cs spidev command led strip shift register dac",
        },
        exec: Exec::Missing,
    },
];
