//! What the hardware tools' executors share: the board's hardware, and hardware errors as
//! errors the model can act on. Arguments are parsed once, before the policy, by each tool's
//! `spec::ToolArgs` type; nothing here reads them.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::not_found;
use covo_hal_tools::bus::BusError;
use covo_hal_tools::hw::{Hardware, HwError};
use std::sync::Arc;

/// The board's hardware for an executor, or the error the model sees.
pub fn hw(cx: &Cx<'_>) -> Result<Arc<Hardware>, CallError> {
    cx.board()
        .hardware()
        .map_err(|e| cx.fail(format!("the board is unavailable: {e}")))
}

/// A hardware error as a call error for this executor.
pub fn fail(cx: &Cx<'_>, e: HwError) -> CallError {
    tool_error(cx.tool.name, e).into()
}

/// Maps a hardware error to what the model sees.
pub fn tool_error(tool: &str, e: HwError) -> ToolError {
    match e {
        HwError::NotFound(m) => not_found(tool, m),
        HwError::Line(b) => ToolError::Failed {
            tool: tool.into(),
            message: b.to_string(),
            hint: match b {
                BusError::Unsupported(_) => None,
                _ => Some(
                    "check the pin with board_info; a line held by a kernel driver or another \
                     program stays busy until it is released"
                        .into(),
                ),
            },
        },
        HwError::Bus(b) => ToolError::Failed {
            tool: tool.into(),
            message: b.to_string(),
            hint: Some(match b {
                BusError::Nack(_) => {
                    "check the address with i2c_scan, and the wiring and power".into()
                }
                _ => "the bus may recover; retry once, then check the wiring".into(),
            }),
        },
        other => ToolError::failed(tool, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(e: HwError) -> Option<String> {
        match tool_error("t", e) {
            ToolError::Failed { hint, .. } => hint,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gpio_errors_carry_gpio_advice_not_the_i2c_bus_hint() {
        let busy = hint(HwError::Line(BusError::Other(
            "GPIO5 on /dev/gpiochip0 is in use".into(),
        )));
        let busy = busy.unwrap();
        assert!(!busy.contains("bus may recover"), "{busy}");
        assert!(busy.contains("line"), "{busy}");
        // No interrupt on the line: the message says what to do; no misleading hint.
        assert_eq!(
            hint(HwError::Line(BusError::Unsupported("no interrupt".into()))),
            None
        );
        // Bus errors keep theirs.
        assert!(hint(HwError::Bus(BusError::Timeout))
            .unwrap()
            .contains("bus may recover"));
        assert!(hint(HwError::Bus(BusError::Nack(0x76)))
            .unwrap()
            .contains("i2c_scan"));
        // A name the board lacks points at what it has.
        assert!(hint(HwError::NotFound("no device 'x'".into()))
            .unwrap()
            .contains("board_info"));
    }
}
