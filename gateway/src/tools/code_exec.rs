//! The `code_exec` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::code_exec as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::peer(&c::CODE_RUN),
    ToolDef::peer(&c::CODE_GRAPH),
    ToolDef::peer(&c::TEST_GENERATE),
];
