//! The `docs` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::docs as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::missing(&c::DOCS_SEARCH),
    ToolDef::missing(&c::DOCS_READ),
];
