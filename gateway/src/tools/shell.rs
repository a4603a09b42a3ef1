//! The `shell` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::shell as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::missing(&c::SHELL_EXEC),
    ToolDef::missing(&c::PROCESS_START),
    ToolDef::missing(&c::PROCESS_LIST),
    ToolDef::missing(&c::PROCESS_OUTPUT),
    ToolDef::missing(&c::PROCESS_KILL),
    ToolDef::missing(&c::TMUX_SEND_KEYS),
    ToolDef::missing(&c::TMUX_CAPTURE),
];
