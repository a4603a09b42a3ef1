//! What the hardware tools' executors share: the board's hardware, and hardware errors as
//! errors the model can act on. Arguments are parsed once, before the policy, by each tool's
//! `spec::ToolArgs` type; nothing here reads them.

use crate::error::CallError;
use crate::exec::Cx;
use crate::hardware::tool_error;
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
