//! The `system` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::system as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::missing(&c::SYSTEM_INFO),
    ToolDef::missing(&c::NETWORK_INFO),
    ToolDef::missing(&c::SERVICE_STATUS),
    ToolDef::missing(&c::LOG_TAIL),
    ToolDef::missing(&c::REBOOT),
];
