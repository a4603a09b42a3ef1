//! The `git` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::git as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::missing(&c::GIT_STATUS),
    ToolDef::missing(&c::GIT_DIFF),
    ToolDef::missing(&c::GIT_LOG),
    ToolDef::missing(&c::GIT_COMMIT),
];
