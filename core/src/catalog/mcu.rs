//! The `mcu` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "mcu";

/// `mcu_list`.
pub static MCU_LIST: ToolSpec = ToolSpec {
        name: "mcu_list",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "List attached microcontrollers: port, firmware, link health.",
 params: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached list which connected boards firmware version link health online usb serial microcontrollers plugged",
};

/// `mcu_info`.
pub static MCU_INFO: ToolSpec = ToolSpec {
        name: "mcu_info",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Show a microcontroller's firmware, capabilities and uptime.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"}},"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached info details identity firmware version capabilities features what can it do pins adc channels buses uptime running",
};

/// `mcu_gpio_read`.
pub static MCU_GPIO_READ: ToolSpec = ToolSpec {
        name: "mcu_gpio_read",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Read a microcontroller pin (0 or 1).",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"pin":{"type":"integer"}},"required":["pin"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached pin gpio read input digital level state digitalread",
};

/// `mcu_gpio_write`.
pub static MCU_GPIO_WRITE: ToolSpec = ToolSpec {
        name: "mcu_gpio_write",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Drive a microcontroller pin high (1) or low (0).",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"pin":{"type":"integer"},"level":{"enum":[0,1]}},"required":["pin","level"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached pin gpio write output drive toggle high low on off digitalwrite",
};

/// `mcu_adc_read`.
pub static MCU_ADC_READ: ToolSpec = ToolSpec {
        name: "mcu_adc_read",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Read a microcontroller ADC channel; returns raw and mV.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"channel":{"type":"integer"}},"required":["channel"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached adc analog input voltage volts millivolts mv potentiometer analogread battery level raw counts a0 read",
};

/// `mcu_pwm_set`.
pub static MCU_PWM_SET: ToolSpec = ToolSpec {
        name: "mcu_pwm_set",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Set PWM frequency and duty cycle on a microcontroller pin.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"pin":{"type":"integer"},"frequency_hz":{"type":"number"},"duty":{"type":"number","minimum":0,"maximum":1}},"required":["pin","duty"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached pwm duty cycle frequency analogwrite servo motor fan led dim brightness",
};

/// `mcu_i2c_transfer`.
pub static MCU_I2C_TRANSFER: ToolSpec = ToolSpec {
        name: "mcu_i2c_transfer",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Actuate,
        description: "Write and/or read bytes on a microcontroller's own I2C bus.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"address":{"type":["integer","string"],"description":"e.g. 0x76"},"data":{"type":["array","string"],"description":"e.g. \"d0 01\""},"count":{"type":"integer"}},"required":["address"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 esp8266 stm32 nrf52 teensy attached i2c transfer write read scan transaction bus sensor wire twi",
};

/// `mcu_flash`.
pub static MCU_FLASH: ToolSpec = ToolSpec {
        name: "mcu_flash",
        toolset: TOOLSET,
        profiles: Profiles::EDGE,
        runs: Runs::Gateway,
        effect: Effect::Destructive,
        description: "Write a firmware file to a microcontroller; returns the version it then runs.",
 params: r#"{"type":"object","properties":{"device":{"type":"string"},"image":{"type":"string","description":"file in firmware/"}},"required":["image"],"additionalProperties":false}"#,
 keywords: "microcontroller mcu arduino pico rp2040 esp32 stm32 nrf52 attached flash firmware update upgrade reflash program reprogram install new image uf2 bootsel bootloader probe-rs swd jtag elf bin version",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &MCU_LIST,
    &MCU_INFO,
    &MCU_GPIO_READ,
    &MCU_GPIO_WRITE,
    &MCU_ADC_READ,
    &MCU_PWM_SET,
    &MCU_I2C_TRANSFER,
    &MCU_FLASH,
];
