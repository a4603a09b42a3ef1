//! The `serial` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "serial";

/// `serial_list`.
pub static SERIAL_LIST: ToolSpec = ToolSpec {
        name: "serial_list",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "List serial ports with USB IDs and declared device names.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "serial ports list enumerate find uart tty ttyusb0 ttyacm0 ttyama0 serial0 com port usb adapter ftdi ch340 cp2102 cp210x pl2303 vid pid vendor product which port is my arduino on device path plugged connected",
};

/// `serial_write`.
pub static SERIAL_WRITE: ToolSpec = ToolSpec {
        name: "serial_write",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Write text or hex bytes to a serial port.",
 params: r#"{"type":"object","properties":{"port":{"type":"string","description":"path or name"},"baud":{"type":"integer"},"text":{"type":"string"},"hex":{"type":"string"}},"required":["port"],"additionalProperties":false}"#,
 keywords: "serial write send transmit tx uart tty ttyusb0 ttyacm0 port text string bytes hex baud rate 9600 115200 console usb",
};

/// `serial_read`.
pub static SERIAL_READ: ToolSpec = ToolSpec {
        name: "serial_read",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Read from a serial port until delimiter, max_bytes or timeout_ms.",
 params: r#"{"type":"object","properties":{"port":{"type":"string","description":"path or name"},"baud":{"type":"integer"},"delimiter":{"type":"string"},"max_bytes":{"type":"integer"},"timeout_ms":{"type":"integer"}},"required":["port"],"additionalProperties":false}"#,
 keywords: "serial read receive rx listen uart tty ttyusb0 ttyacm0 port output incoming data line log gps nmea console monitor capture baud",
};

/// `serial_request`.
pub static SERIAL_REQUEST: ToolSpec = ToolSpec {
        name: "serial_request",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Send a command line to a serial device and return its reply (AT-style).",
 params: r#"{"type":"object","properties":{"port":{"type":"string","description":"path or name"},"baud":{"type":"integer"},"text":{"type":"string"},"delimiter":{"type":"string"},"timeout_ms":{"type":"integer"}},"required":["port","text"],"additionalProperties":false}"#,
 keywords: "serial command request response reply query ask send and receive at commands ati csq cgmi gmr hayes modem gsm lte sim800 lora module uart tty device talk to answer",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&SERIAL_LIST, &SERIAL_WRITE, &SERIAL_READ, &SERIAL_REQUEST];
