//! The `web` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "web";

/// `web_fetch`.
pub static WEB_FETCH: ToolSpec = ToolSpec {
    name: "web_fetch",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::MESSAGING),
    runs: Runs::Peer,
    effect: Effect::Read,
    description:
        "Fetch a URL on the peer and return its readable text (HTML reduced to text), size-capped.",
    params: r#"{"type":"object","properties":{"url":{"type":"string"},"max_chars":{"type":"integer","minimum":1,"default":20000}},"required":["url"],"additionalProperties":false}"#,
    keywords: "web fetch url http https page download website read article open link get",
};

/// `web_search`.
pub static WEB_SEARCH: ToolSpec = ToolSpec {
    name: "web_search",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::MESSAGING),
    runs: Runs::Peer,
    effect: Effect::Read,
    description: "Search the web. Returns titles, URLs and snippets.",
    params: r#"{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":20,"default":5}},"required":["query"],"additionalProperties":false}"#,
    keywords: "web search internet google bing duckduckgo look up online find news",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&WEB_FETCH, &WEB_SEARCH];
