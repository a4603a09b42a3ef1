//! The `web` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::web as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] =
    &[ToolDef::peer(&c::WEB_FETCH), ToolDef::peer(&c::WEB_SEARCH)];
