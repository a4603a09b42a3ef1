//! The `search` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "search";

/// `file_search`.
pub static FILE_SEARCH: ToolSpec = ToolSpec {
    name: "file_search",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Search files: glob on names and/or regex on contents, honouring .gitignore. Returns paths and matching lines.",
 params: r#"{"type":"object","properties":{"pattern":{"type":"string","description":"regex to match in file contents"},"glob":{"type":"string","description":"file name glob, e.g. **/*.rs"},"path":{"type":"string","description":"directory to search, default: workspace root"},"case_sensitive":{"type":"boolean","default":true},"max_results":{"type":"integer","minimum":1,"default":100}},"additionalProperties":false}"#,
 keywords: "search find files grep ripgrep rg regex pattern text in files code glob find by name locate where is defined usage occurrences all extension type named contain containing",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&FILE_SEARCH];
