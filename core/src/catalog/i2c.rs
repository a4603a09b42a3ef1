//! The `i2c` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "i2c";

/// `i2c_scan`.
pub static I2C_SCAN: ToolSpec = ToolSpec {
        name: "i2c_scan",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Scan an I2C bus for responding addresses, like i2cdetect.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"}},"additionalProperties":false}"#,
 keywords: "i2c scan detect probe find discover devices addresses bus i2cdetect enumerate what is connected twi iic smbus sda scl ack nack search bus address 0x76 0x3c",
};

/// `i2c_read`.
pub static I2C_READ: ToolSpec = ToolSpec {
    name: "i2c_read",
    toolset: TOOLSET,
    profiles: Profiles::EDGE,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Read count bytes from an I2C device.",
    params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"count":{"type":"integer"}},"required":["address","count"],"additionalProperties":false}"#,
    keywords:
        "i2c read bytes raw data receive get fetch from device slave address i2cget twi iic smbus",
};

/// `i2c_write`.
pub static I2C_WRITE: ToolSpec = ToolSpec {
        name: "i2c_write",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Write bytes to an I2C device.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""}},"required":["address","data"],"additionalProperties":false}"#,
 keywords: "i2c write send bytes byte command configure set register value to device i2cset i2ctransfer twi iic smbus poke",
};

/// `i2c_write_read`.
pub static I2C_WRITE_READ: ToolSpec = ToolSpec {
        name: "i2c_write_read",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Write data, then read count bytes (repeated start). More than a 1-byte register pointer counts as a write.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""},"count":{"type":"integer"}},"required":["address","data","count"],"additionalProperties":false}"#,
 keywords: "i2c write then read combined transaction repeated start restart command response query register pointer i2ctransfer twi iic smbus",
};

/// `i2c_read_register`.
pub static I2C_READ_REGISTER: ToolSpec = ToolSpec {
        name: "i2c_read_register",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Read count big-endian values of width bits from an I2C device, from register on; register_width 16 counts as a write.",
 params: r#"{"type":"object","properties":{"bus":{"type":"integer"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"register":{"type":["integer","string"]},"count":{"type":"integer"},"width":{"enum":[8,16],"default":8},"register_width":{"enum":[8,16],"default":8}},"required":["address","register"],"additionalProperties":false}"#,
 keywords: "i2c register read reg chip id who am i whoami status config calibration dump peek i2cget i2cdump sensor register 0xd0 twi iic smbus",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &I2C_SCAN,
    &I2C_READ,
    &I2C_WRITE,
    &I2C_WRITE_READ,
    &I2C_READ_REGISTER,
];
