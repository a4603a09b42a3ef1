//! The `search` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::search as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[ToolDef::missing(&c::FILE_SEARCH)];
