//! The `docs` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "docs";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "docs_search",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Search the bundled and user documentation (sensor datasheet notes, register maps, board pinouts).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "docs_read",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Read one documentation page or section.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
