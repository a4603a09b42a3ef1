//! The index behind `tool_search`: BM25 (the `bm25` crate: Snowball stemming, stop words) over
//! each owned tool's name, description, parameter docs and search-only keywords.
//!
//! The index only ever holds the tools the profile owns, so no query can surface a pruned tool.

use crate::spec::ToolSpec;
use bm25::{Embedder, EmbedderBuilder, Language, Scorer};
use serde_json::Value;

/// How many times each field is repeated in a tool's document: a cheap, transparent field boost.
const NAME_WEIGHT: usize = 3;
const KEYWORD_WEIGHT: usize = 2;

/// Query words that mean the same as words the tool documents use. Applied to queries only, so
/// the model-facing descriptions stay short.
const QUERY_SYNONYMS: &[(&str, &str)] = &[
    ("warm", "temperature"),
    ("hot", "temperature"),
    ("cold", "temperature"),
    ("temp", "temperature"),
    ("warmer", "temperature"),
    ("hotter", "temperature"),
    ("colder", "temperature"),
    ("cooler", "temperature"),
    ("degrees", "temperature"),
    ("damp", "humidity"),
    ("humid", "humidity"),
    ("bright", "light lux"),
    ("dark", "light lux"),
    ("lux", "light"),
    ("led", "gpio output"),
    ("lamp", "gpio relay"),
    ("switch", "gpio relay"),
    ("pin", "gpio"),
    ("pins", "gpio"),
    ("uart", "serial"),
    ("tty", "serial"),
    ("modem", "serial"),
    ("oled", "display"),
    ("lcd", "display"),
    ("screen", "display"),
    ("pico", "microcontroller mcu"),
    ("arduino", "microcontroller mcu"),
    ("esp32", "microcontroller mcu"),
    ("firmware", "microcontroller mcu"),
    ("adc", "analog"),
    ("analogue", "analog"),
    ("dimmer", "pwm"),
    ("servo", "pwm"),
    ("motor", "pwm"),
    ("photo", "camera snapshot image"),
    ("picture", "image camera"),
    ("chart", "plot"),
    ("graph", "plot chart"),
    ("remind", "schedule"),
    ("reminder", "schedule"),
    ("cron", "schedule"),
    ("alert", "notify watch"),
    ("alarm", "notify watch"),
    ("remember", "memory store"),
    ("forget", "memory delete"),
    ("command", "shell"),
    ("terminal", "shell"),
    ("directory", "folder"),
    ("grep", "search regex"),
    ("http", "web url"),
    ("online", "web internet"),
    ("internet", "web"),
    ("google", "web search"),
    ("talk", "conversation"),
    ("talked", "conversation"),
    ("chat", "conversation"),
    ("discussed", "conversation"),
    ("url", "web fetch"),
    ("website", "web"),
    ("speak", "voice speech"),
    ("say", "voice speech"),
    ("restart", "reboot"),
    ("ha", "home assistant"),
];

/// One search result.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    /// The tool.
    pub tool: &'static ToolSpec,
    /// Its BM25 score (higher is better).
    pub score: f32,
}

/// A BM25 index over a fixed set of text documents, with the query expansion `tool_search`
/// uses: the engine behind `tool_search`, and behind `docs_search` over documentation pages.
pub struct TextIndex {
    embedder: Embedder,
    scorer: Scorer<usize>,
}

impl TextIndex {
    /// Indexes `docs`; results name them by position.
    pub fn build(docs: &[String]) -> TextIndex {
        let corpus: Vec<&str> = docs.iter().map(String::as_str).collect();
        let embedder = EmbedderBuilder::with_fit_to_corpus(Language::English, &corpus)
            .b(0.5)
            .build();
        let mut scorer = Scorer::new();
        for (i, d) in docs.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(d));
        }
        TextIndex { embedder, scorer }
    }

    /// The best `limit` documents for `query` as (position, BM25 score), best first; ties keep
    /// document order, so the result is deterministic.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(usize, f32)> {
        let q = expand_query(query);
        let mut matches = self.scorer.matches(&self.embedder.embed(&q));
        matches.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        matches
            .into_iter()
            .take(limit)
            .map(|m| (m.id, m.score))
            .collect()
    }
}

/// A BM25 index over a fixed set of tools.
pub struct SearchIndex {
    text: TextIndex,
    tools: Vec<&'static ToolSpec>,
}

impl SearchIndex {
    /// Indexes `tools`.
    pub fn build(tools: &[&'static ToolSpec]) -> SearchIndex {
        let docs: Vec<String> = tools.iter().map(|t| document(t)).collect();
        SearchIndex {
            text: TextIndex::build(&docs),
            tools: tools.to_vec(),
        }
    }

    /// The best `limit` tools for `query`, best first; ties keep catalog order, so the result is
    /// deterministic.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        self.text
            .search(query, limit)
            .into_iter()
            .map(|(i, score)| Hit {
                tool: self.tools[i],
                score,
            })
            .collect()
    }
}

fn expand_query(query: &str) -> String {
    let mut q = query.replace(['_', '-', '/'], " ");
    let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
    for w in words {
        if let Some((_, more)) = QUERY_SYNONYMS.iter().find(|(k, _)| *k == w) {
            q.push(' ');
            q.push_str(more);
        }
    }
    q
}

/// The text indexed for one tool.
fn document(t: &ToolSpec) -> String {
    let s = t;
    let name = s.name.replace('_', " ");
    let mut doc = String::new();
    for _ in 0..NAME_WEIGHT {
        doc.push_str(&name);
        doc.push(' ');
    }
    for _ in 0..KEYWORD_WEIGHT {
        doc.push_str(s.keywords);
        doc.push(' ');
    }
    doc.push_str(s.description);
    doc.push(' ');
    doc.push_str(&s.toolset.replace('_', " "));
    if let Ok(schema) = serde_json::from_str::<Value>(s.params) {
        param_docs(&schema, &mut doc);
    }
    doc
}

fn param_docs(schema: &Value, out: &mut String) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            out.push(' ');
            out.push_str(&k.replace('_', " "));
            if let Some(d) = v.get("description").and_then(Value::as_str) {
                out.push(' ');
                out.push_str(d);
            }
            param_docs(v, out);
        }
    }
    if let Some(items) = schema.get("items") {
        param_docs(items, out);
    }
}
