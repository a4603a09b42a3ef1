//! The hardware families in a build without the `hal` feature: the same tools, in the same
//! order, each registered as missing because there is no hardware to run it on. They stay in
//! the catalog (profiles, toolsets and `tool_search` see the same names) and are listed as
//! unavailable with [`NO_HARDWARE`] as the reason; the pipeline refuses a call before parsing
//! it. The real tables, with their executors, are in the modules of the same names.

use crate::hardware::NO_HARDWARE;
use crate::spec::{AvailCx, Availability};

/// Why every tool here is unavailable.
fn no_hardware(_: &AvailCx<'_>) -> Availability {
    Availability::no(NO_HARDWARE)
}

/// One family's table: every tool missing, for want of hardware.
macro_rules! family {
    ($family:ident: $($tool:ident),* $(,)?) => {
        pub(crate) mod $family {
            use super::no_hardware;
            use crate::spec::ToolDef;
            use covo_core::catalog::$family as c;

            /// The tools of this family, none of which this build can run.
            pub(crate) static TOOLS: &[ToolDef] = &[
                $(ToolDef::missing(&c::$tool).when(no_hardware),)*
            ];
        }
    };
}

family!(i2c: I2C_SCAN, I2C_READ, I2C_WRITE, I2C_WRITE_READ, I2C_READ_REGISTER);
family!(spi: SPI_TRANSFER, SPI_WRITE);
family!(serial: SERIAL_LIST, SERIAL_WRITE, SERIAL_READ, SERIAL_REQUEST);
family!(gpio: GPIO_READ, GPIO_WRITE, GPIO_WAIT_EDGE, PWM_SET);
family!(sensors: SENSOR_LIST, SENSOR_READ, SENSOR_HISTORY, SENSOR_EXPORT_CSV);
family!(mcu: MCU_LIST, MCU_INFO, MCU_GPIO_READ, MCU_GPIO_WRITE, MCU_ADC_READ, MCU_PWM_SET, MCU_I2C_TRANSFER, MCU_FLASH);
family!(display: DISPLAY_TEXT, DISPLAY_CLEAR);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ToolDef;

    #[test]
    fn every_hardware_tool_of_the_catalog_is_here_and_unavailable_for_want_of_hardware() {
        let tables: [&[ToolDef]; 7] = [
            i2c::TOOLS,
            spi::TOOLS,
            serial::TOOLS,
            gpio::TOOLS,
            sensors::TOOLS,
            mcu::TOOLS,
            display::TOOLS,
        ];
        let here: Vec<&str> = tables
            .iter()
            .flat_map(|t| t.iter())
            .map(|t| t.spec.name)
            .collect();
        let families = ["i2c", "spi", "serial", "gpio", "sensors", "mcu", "display"];
        let catalog: Vec<&str> = families
            .iter()
            .flat_map(|f| {
                covo_core::catalog::all()
                    .filter(move |s| s.toolset == *f)
                    .map(|s| s.name)
            })
            .collect();
        assert_eq!(here, catalog);
        let config = crate::config::Config::default();
        let board = crate::hardware::Board::load(None).unwrap();
        let cx = AvailCx {
            config: &config,
            board: &board,
        };
        for t in tables.iter().flat_map(|t| t.iter()) {
            let a = t.availability(&cx);
            assert!(!a.available, "{}", t.spec.name);
            assert_eq!(a.reason.as_deref(), Some(NO_HARDWARE), "{}", t.spec.name);
        }
    }
}
