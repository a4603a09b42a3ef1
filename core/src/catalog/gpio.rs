//! The `gpio` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "gpio";

/// `gpio_read`.
pub static GPIO_READ: ToolSpec = ToolSpec {
        name: "gpio_read",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Read a GPIO line's level (0 or 1).",
 params: r#"{"type":"object","properties":{"pin":{"type":["integer","string"],"description":"BCM or name"}},"required":["pin"],"additionalProperties":false}"#,
 keywords: "gpio read pin input level state high low digital button switch contact closed open reed sensor door pressed is on off check status",
};

/// `gpio_write`.
pub static GPIO_WRITE: ToolSpec = ToolSpec {
        name: "gpio_write",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Set a GPIO output to level; with pulse_ms, revert after that many ms.",
 params: r#"{"type":"object","properties":{"pin":{"type":["integer","string"],"description":"BCM or name"},"level":{"enum":[0,1]},"pulse_ms":{"type":"integer"}},"required":["pin","level"],"additionalProperties":false}"#,
 keywords: "gpio write set drive pin output high low on off turn switch toggle relay led light lamp buzzer valve pump heater door lock strike power enable energize pulse momentary click timed trigger actuate",
};

/// `gpio_wait_edge`.
pub static GPIO_WAIT_EDGE: ToolSpec = ToolSpec {
        name: "gpio_wait_edge",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Wait for an edge on a GPIO input (button, motion sensor).",
 params: r#"{"type":"object","properties":{"pin":{"type":["integer","string"],"description":"BCM or name"},"edge":{"enum":["rising","falling","both"]},"timeout_ms":{"type":"integer"}},"required":["pin"],"additionalProperties":false}"#,
 keywords: "gpio wait edge interrupt event trigger press button pressed pir motion detect rising falling change block until input someone",
};

/// `pwm_set`.
pub static PWM_SET: ToolSpec = ToolSpec {
        name: "pwm_set",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Set a PWM channel's frequency and duty cycle (fan, dimmer, servo).",
 params: r#"{"type":"object","properties":{"channel":{"type":["integer","string"],"description":"e.g. 0 or fan"},"frequency_hz":{"type":"number"},"duty":{"type":"number","minimum":0,"maximum":1}},"required":["channel","duty"],"additionalProperties":false}"#,
 keywords: "pwm duty cycle frequency speed fan dimmer dim brightness led strip fade servo angle motor speed percent pulse width modulation",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&GPIO_READ, &GPIO_WRITE, &GPIO_WAIT_EDGE, &PWM_SET];
