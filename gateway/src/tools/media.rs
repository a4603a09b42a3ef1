//! The `media` toolset.

use crate::spec::ToolDef;
use covo_core::catalog::media as c;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::peer(&c::IMAGE_GENERATE),
    ToolDef::peer(&c::IMAGE_DESCRIBE),
    ToolDef::peer(&c::TTS_SYNTHESIZE),
    ToolDef::peer(&c::TRANSCRIBE_AUDIO),
    ToolDef::peer(&c::PLOT_SERIES),
    super::voice::CAMERA,
];
