//! The `patch` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::patch as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::missing(&c::FS_EDIT),
    ToolDef::missing(&c::APPLY_PATCH),
    ToolDef::missing(&c::DIFF_VIEW),
];
