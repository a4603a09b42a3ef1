//! The `memory` toolset.

use crate::spec::{Effect, Exec, Profiles, Runs, ToolDef, ToolSpec};

const TOOLSET: &str = "memory";

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef {
        spec: ToolSpec {
            name: "memory_store",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Store a durable fact or note (with optional tags) in the gateway's memory database.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "memory_recall",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Retrieve stored memories relevant to a query (ranked full-text search).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "memory_forget",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::EDGE),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Delete stored memories by id or by query.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "semantic_memory_store",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Peer,
            effect: Effect::Write,
            description: "Embed a text with the peer's embedding model and keep it in the peer's vector store.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "semantic_memory_search",
            toolset: TOOLSET,
            profiles: Profiles::CODING,
            runs: Runs::Peer,
            effect: Effect::Read,
            description: "Nearest-neighbour search of the peer's vector store for a query.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "conversation_fork",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Gateway,
            effect: Effect::Write,
            description: "Derive a new conversation from an earlier one at a given turn.",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
    ToolDef {
        spec: ToolSpec {
            name: "conversation_summary",
            toolset: TOOLSET,
            profiles: Profiles::CODING.or(Profiles::MESSAGING),
            runs: Runs::Gateway,
            effect: Effect::Read,
            description: "Summarise a stored conversation (by id or the current one).",
            params: r#"{"type":"object","properties":{}}"#,
            keywords: "",
        },
        exec: Exec::Missing,
    },
];
