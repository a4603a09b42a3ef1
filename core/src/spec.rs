//! Tool specifications: the static, data-only description of every built-in tool.
//!
//! Each tool's name is written once, in its spec under `catalog/`; the gateway pairs each spec
//! with an executor (`covo::spec::ToolDef`), and profiles, toolsets, search and dispatch refer to
//! the spec.

use serde::Serialize;
use serde_json::Value;

/// What calling a tool does to the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Only reads state.
    Read,
    /// Changes stored state (database, files, broker).
    Write,
    /// Changes the physical world (pins, buses, relays); bounded by the board policy.
    Actuate,
    /// Cannot be undone; asks for approval before it runs.
    Destructive,
}

impl Effect {
    /// The lowercase name used in catalogs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Actuate => "actuate",
            Effect::Destructive => "destructive",
        }
    }
}

/// Where a tool executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Runs {
    /// On the gateway itself.
    Gateway,
    /// Forwarded over MQTT to the cloud peer.
    Peer,
}

impl Runs {
    /// The lowercase name used in catalogs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Runs::Gateway => "gateway",
            Runs::Peer => "peer",
        }
    }
}

/// A set of the built-in restricted profiles that allow a tool. `full` allows every tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profiles(u8);

impl Profiles {
    /// Allowed under `minimal`.
    pub const MINIMAL: Profiles = Profiles(1);
    /// Allowed under `coding`.
    pub const CODING: Profiles = Profiles(2);
    /// Allowed under `messaging`.
    pub const MESSAGING: Profiles = Profiles(4);
    /// Allowed under `edge`.
    pub const EDGE: Profiles = Profiles(8);
    /// Allowed only under `full`.
    pub const FULL_ONLY: Profiles = Profiles(0);

    /// The union of two sets (usable in `const` tables).
    pub const fn or(self, other: Profiles) -> Profiles {
        Profiles(self.0 | other.0)
    }

    /// Whether every profile in `other` is in `self`.
    pub const fn contains(self, other: Profiles) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// The names of the restricted profiles in this set, in a fixed order.
    pub fn names(self) -> Vec<&'static str> {
        [
            (Self::MINIMAL, "minimal"),
            (Self::CODING, "coding"),
            (Self::MESSAGING, "messaging"),
            (Self::EDGE, "edge"),
        ]
        .into_iter()
        .filter(|(p, _)| self.contains(*p))
        .map(|(_, n)| n)
        .collect()
    }
}

/// The static description of one tool.
#[derive(Debug)]
pub struct ToolSpec {
    /// The tool's name, as the model calls it.
    pub name: &'static str,
    /// The one basic toolset the tool belongs to.
    pub toolset: &'static str,
    /// The restricted profiles that allow the tool.
    pub profiles: Profiles,
    /// Where it executes.
    pub runs: Runs,
    /// What it does to the world.
    pub effect: Effect,
    /// The model-facing description: short, imperative, unambiguous.
    pub description: &'static str,
    /// JSON Schema (an object schema) of the arguments, as compact JSON text.
    pub params: &'static str,
    /// Search-only words (synonyms, maker vocabulary); never sent to the model.
    pub keywords: &'static str,
}

impl ToolSpec {
    /// The first sentence of the description, for search results and listings.
    pub fn summary(&self) -> &'static str {
        let d = self.description;
        let mut from = 0;
        while let Some(i) = d[from..].find(". ").map(|i| i + from) {
            // "e.g. " and "i.e. " do not end a sentence.
            if !(d[..i].ends_with("e.g") || d[..i].ends_with("i.e")) {
                return &d[..i + 1];
            }
            from = i + 2;
        }
        d
    }

    /// The parameter schema parsed to JSON. The conformance test proves every table entry parses.
    /// Parsed once per process and cached: payloads are rendered before every model call.
    pub fn params_json(&self) -> Value {
        static CACHE: std::sync::OnceLock<
            std::sync::Mutex<std::collections::HashMap<&'static str, Value>>,
        > = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(self.params)
            .or_insert_with(|| {
                serde_json::from_str(self.params)
                    .unwrap_or_else(|e| panic!("schema of {} is not JSON: {e}", self.name))
            })
            .clone()
    }
}

/// Whether a tool can be called now, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Availability {
    /// True when the tool can be called.
    pub available: bool,
    /// Why it cannot, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Availability {
    /// The tool can be called.
    pub fn yes() -> Self {
        Availability {
            available: true,
            reason: None,
        }
    }

    /// The tool cannot be called, for this reason.
    pub fn no(reason: impl Into<String>) -> Self {
        Availability {
            available: false,
            reason: Some(reason.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(description: &'static str) -> ToolSpec {
        ToolSpec {
            name: "t",
            toolset: "core",
            profiles: Profiles::FULL_ONLY,
            runs: Runs::Gateway,
            effect: Effect::Read,
            description,
            params: "{}",
            keywords: "",
        }
    }

    #[test]
    fn the_summary_is_the_first_sentence_and_abbreviations_do_not_end_it() {
        assert_eq!(spec("Read it. Then more.").summary(), "Read it.");
        assert_eq!(
            spec("Watch a value, e.g. temperature. More.").summary(),
            "Watch a value, e.g. temperature."
        );
        assert_eq!(spec("One sentence only").summary(), "One sentence only");
    }
}
