//! The `memory` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "memory";

/// `memory_store`.
pub static MEMORY_STORE: ToolSpec = ToolSpec {
        name: "memory_store",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Remember a fact or note for later, with optional tags. Returns its id.",
        params: r#"{"type":"object","properties":{"text":{"type":"string","minLength":1},"tags":{"type":"array","items":{"type":"string"}}},"required":["text"],"additionalProperties":false}"#,
        keywords: "remember save note memorize keep in mind write down fact preference persist long-term memory jot store track",
};

/// `memory_recall`.
pub static MEMORY_RECALL: ToolSpec = ToolSpec {
        name: "memory_recall",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Read,
        description: "Search stored memories by words; best matches first, with a relevance score.",
        params: r#"{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":50,"default":5},"tag":{"type":"string","description":"Only memories with this tag"}},"required":["query"],"additionalProperties":false}"#,
        keywords: "recall remember what do you know look up notes facts retrieve memory search what did I tell you about told",
};

/// `memory_forget`.
pub static MEMORY_FORGET: ToolSpec = ToolSpec {
        name: "memory_forget",
        toolset: TOOLSET,
        profiles: Profiles::CODING.or(Profiles::EDGE),
        runs: Runs::Gateway,
        effect: Effect::Write,
        description: "Delete memories: one by id, or every memory containing all words of query. Returns the ids deleted; the text is also removed wherever else covo stored it (conversations, audit log, to-dos, plans, goals, schedules, watches, sub-agents).",
        params: r#"{"type":"object","properties":{"id":{"type":"integer"},"query":{"type":"string","minLength":1}},"additionalProperties":false}"#,
        keywords: "forget delete remove erase memory unlearn note wipe memories about",
};

/// `semantic_memory_store`.
pub static SEMANTIC_MEMORY_STORE: ToolSpec = ToolSpec {
    name: "semantic_memory_store",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Peer,
    effect: Effect::Write,
    description:
        "Embed a text with the peer's embedding model and keep it in the peer's vector store.",
    params: r#"{"type":"object","properties":{"text":{"type":"string","minLength":1},"metadata":{"type":"object","description":"Free-form fields stored with the text"}},"required":["text"],"additionalProperties":false}"#,
    keywords: "embedding vector store semantic index meaning embed remember similarity cloud save",
};

/// `semantic_memory_search`.
pub static SEMANTIC_MEMORY_SEARCH: ToolSpec = ToolSpec {
    name: "semantic_memory_search",
    toolset: TOOLSET,
    profiles: Profiles::CODING,
    runs: Runs::Peer,
    effect: Effect::Read,
    description: "Find texts in the peer's vector store nearest in meaning to a query.",
    params: r#"{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":50,"default":5}},"required":["query"],"additionalProperties":false}"#,
    keywords:
        "semantic search similar meaning nearest neighbour vector embedding related fuzzy like",
};

/// `conversation_fork`.
pub static CONVERSATION_FORK: ToolSpec = ToolSpec {
    name: "conversation_fork",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::MESSAGING),
    runs: Runs::Gateway,
    effect: Effect::Write,
    description: "Start a new conversation copying turns 1..at_turn of an existing one.",
    params: r#"{"type":"object","properties":{"conversation_id":{"type":"string"},"at_turn":{"type":"integer","minimum":1,"description":"Last turn to copy (turns count from 1)"}},"required":["conversation_id","at_turn"],"additionalProperties":false}"#,
    keywords:
        "branch fork copy conversation try again alternative rewind go back restart from turn new",
};

/// `conversation_summary`.
pub static CONVERSATION_SUMMARY: ToolSpec = ToolSpec {
    name: "conversation_summary",
    toolset: TOOLSET,
    profiles: Profiles::CODING.or(Profiles::MESSAGING),
    runs: Runs::Gateway,
    effect: Effect::Read,
    description: "Summarise a stored conversation (the current one by default).",
    params: r#"{"type":"object","properties":{"conversation_id":{"type":"string"}},"additionalProperties":false}"#,
    keywords:
        "summarize summary recap tl;dr digest what happened overview conversation chat history summarise gist up",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[
    &MEMORY_STORE,
    &MEMORY_RECALL,
    &MEMORY_FORGET,
    &SEMANTIC_MEMORY_STORE,
    &SEMANTIC_MEMORY_SEARCH,
    &CONVERSATION_FORK,
    &CONVERSATION_SUMMARY,
];
