//! The `docs` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "docs";

/// `docs_search`.
pub static DOCS_SEARCH: ToolSpec = ToolSpec {
        name: "docs_search",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Search bundled and user documentation: sensor datasheet notes, register maps, board pinouts. Returns page ids and snippets.",
 params: r#"{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":20,"default":5}},"required":["query"],"additionalProperties":false}"#,
 keywords: "documentation docs datasheet manual reference register map pinout wiring wire connect hookup notes how to spec sheet help look find search hook up",
};

/// `docs_read`.
pub static DOCS_READ: ToolSpec = ToolSpec {
    name: "docs_read",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::EDGE),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Read one documentation page, or one section of it.",
    params: r#"{"type":"object","properties":{"page":{"type":"string","description":"page id from docs_search"},"section":{"type":"string"}},"required":["page"],"additionalProperties":false}"#,
    keywords: "documentation docs read open page section datasheet manual",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&DOCS_SEARCH, &DOCS_READ];
