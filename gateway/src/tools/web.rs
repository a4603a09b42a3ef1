//! The `web` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "web";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "web_fetch",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Fetch a URL on the peer and return readable text (HTML reduced to text), size-capped.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "web_search",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Search the web through the peer's configured search backend; returns titles, URLs, snippets.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
