//! The `skills` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::skills as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::missing(&c::SKILL_LIST),
    ToolDef::missing(&c::SKILL_LOAD),
];
