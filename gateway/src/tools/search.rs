//! The `search` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "search";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[ToolDef {
    spec: ToolSpec {
        name: "file_search",
        toolset: TOOLSET,
        profiles: Profiles::CODING,
        runs: Runs::Gateway,
        effect: Effect::Read,
        description:
            "Unified file search: glob on names and regex on contents, honouring .gitignore.",
        params: r#"{"type":"object","properties":{}}"#,
        keywords: "",
    },
    exec: Exec::Missing,
}];
