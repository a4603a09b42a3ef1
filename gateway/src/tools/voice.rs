//! The `voice` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::voice as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::missing(&c::VOICE_SAY),
    ToolDef::missing(&c::VOICE_RECORD),
];
