//! The `spi` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "spi";

/// `spi_transfer`.
pub static SPI_TRANSFER: ToolSpec = ToolSpec {
        name: "spi_transfer",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Full-duplex SPI transfer on a bus and chip select; returns the bytes read.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"cs":{"type":"integer"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["data"],"additionalProperties":false}"#,
 keywords: "spi transfer exchange full duplex transaction xfer mosi miso sclk chip select cs ce0 ce1 spidev read write bytes adc mcp3008 flash back",
};

/// `spi_write`.
pub static SPI_WRITE: ToolSpec = ToolSpec {
        name: "spi_write",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Write bytes on an SPI bus and chip select, ignoring what is read.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"cs":{"type":"integer"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["data"],"additionalProperties":false}"#,
 keywords: "spi write send bytes output only mosi chip select cs spidev command led strip shift register dac",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&SPI_TRANSFER, &SPI_WRITE];
