//! The `memory` toolset.

use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::spec::ToolDef;
use crate::store::{ForkError, Turn};
use covo_core::catalog::memory as c;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::MEMORY_STORE, memory_store),
    ToolDef::local(&c::MEMORY_RECALL, memory_recall),
    ToolDef::local(&c::MEMORY_FORGET, memory_forget),
    ToolDef::peer(&c::SEMANTIC_MEMORY_STORE),
    ToolDef::peer(&c::SEMANTIC_MEMORY_SEARCH),
    ToolDef::local(&c::CONVERSATION_FORK, conversation_fork),
    ToolDef::local(&c::CONVERSATION_SUMMARY, conversation_summary),
];

/// Default number of recalled memories.
const RECALL_DEFAULT: usize = 5;
/// Most recalled memories.
const RECALL_MAX: usize = 50;

#[derive(Deserialize)]
struct StoreArgs {
    text: String,
    #[serde(default)]
    tags: Vec<String>,
}

fn memory_store(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: StoreArgs = cx.args(args)?;
    if a.text.trim().is_empty() {
        return Err(ToolError::invalid(cx.tool.name, "/text", "is empty").into());
    }
    let m = cx
        .store()?
        .store_memory(a.text.trim(), &a.tags, Some(&cx.session.id))?;
    Ok(json!({ "id": m.id, "stored_at": m.created_at, "tags": m.tags }))
}

#[derive(Deserialize)]
struct RecallArgs {
    query: String,
    limit: Option<usize>,
    tag: Option<String>,
}

fn memory_recall(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: RecallArgs = cx.args(args)?;
    let limit = a.limit.unwrap_or(RECALL_DEFAULT).clamp(1, RECALL_MAX);
    let hits = cx
        .store()?
        .recall(&a.query, a.tag.as_deref(), limit)
        .map_err(|e| CallError::from_query(cx.tool.name, "/query", e))?;
    Ok(json!({ "count": hits.len(), "memories": hits }))
}

#[derive(Deserialize)]
struct ForgetArgs {
    id: Option<i64>,
    query: Option<String>,
}

fn memory_forget(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ForgetArgs = cx.args(args)?;
    let store = cx.store()?;
    let deleted = match (a.id, a.query) {
        (Some(id), None) => match store.forget_memory(id)? {
            Some(m) => vec![m],
            None => {
                return Err(ToolError::NotFound {
                    what: "memory".into(),
                    id: id.to_string(),
                }
                .into())
            }
        },
        (None, Some(q)) => {
            let gone = store
                .forget_matching(&q)
                .map_err(|e| CallError::from_query(cx.tool.name, "/query", e))?;
            if gone.is_empty() {
                return Err(ToolError::NotFound {
                    what: "memory matching".into(),
                    id: q,
                }
                .into());
            }
            gone
        }
        _ => {
            return Err(
                ToolError::invalid(cx.tool.name, "", "give exactly one of id or query").into(),
            )
        }
    };
    // The texts stay out of the answer: it is stored as a turn, and the point was to forget them.
    let deleted: Vec<Value> = deleted
        .iter()
        .map(|m| json!({ "id": m.id, "tags": m.tags, "created_at": m.created_at }))
        .collect();
    Ok(json!({ "count": deleted.len(), "deleted": deleted }))
}

#[derive(Deserialize)]
struct ForkArgs {
    conversation_id: String,
    at_turn: u32,
}

fn conversation_fork(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ForkArgs = cx.args(args)?;
    match cx.store()?.fork_conversation(&a.conversation_id, a.at_turn) {
        Ok(f) => Ok(json!(f)),
        Err(ForkError::NotFound(id)) => Err(ToolError::NotFound {
            what: "conversation".into(),
            id,
        }
        .into()),
        Err(ForkError::OutOfRange { at, turns }) => {
            let problem = if turns == 0 {
                format!("conversation '{}' has no turns to fork", a.conversation_id)
            } else {
                format!(
                    "turn {at} is out of range: conversation '{}' has {turns} turns, so at_turn must be 1..={turns}",
                    a.conversation_id
                )
            };
            Err(ToolError::invalid(cx.tool.name, "/at_turn", problem).into())
        }
        Err(ForkError::Store(e)) => Err(e.into()),
    }
}

#[derive(Deserialize)]
struct SummaryArgs {
    conversation_id: Option<String>,
}

fn conversation_summary(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SummaryArgs = cx.args(args)?;
    let id = a.conversation_id.unwrap_or_else(|| cx.session.id.clone());
    let store = cx.store()?;
    if store.conversation(&id)?.is_none() {
        return Err(ToolError::NotFound {
            what: "conversation".into(),
            id,
        }
        .into());
    }
    let turns = store.turns(&id)?;
    let mut model_error = None;
    if let Some(model) = cx.summarizer() {
        let transcript: String = turns
            .iter()
            .map(|t| format!("{}: {}\n", t.role, t.content))
            .collect();
        match model.summarize(&transcript) {
            Ok(summary) => {
                return Ok(json!({
                    "conversation_id": id,
                    "method": "model",
                    "turns": turns.len(),
                    "summary": summary,
                }))
            }
            Err(e) => model_error = Some(e),
        }
    }
    let mut out = extractive(&id, &turns);
    out["note"] = json!(match model_error {
        Some(e) => format!("the model failed ({e}); this summary is extractive: sentences picked from the transcript"),
        None => "no model is configured; this summary is extractive: sentences picked from the transcript".into(),
    });
    Ok(out)
}

/// The longest excerpt of a turn kept in an extractive summary.
const EXCERPT_CHARS: usize = 300;
/// How many key sentences an extractive summary keeps.
const KEY_SENTENCES: usize = 3;

fn excerpt(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= EXCERPT_CHARS {
        s.to_string()
    } else {
        let cut: String = s.chars().take(EXCERPT_CHARS).collect();
        format!("{cut}…")
    }
}

fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 3)
        .map(str::to_lowercase)
}

/// A summary built from the transcript itself: the first request, the last answer, and the
/// sentences whose words recur most across the conversation.
fn extractive(id: &str, turns: &[Turn]) -> Value {
    let first_request = turns
        .iter()
        .find(|t| t.role == "user")
        .map(|t| excerpt(&t.content));
    let last_answer = turns
        .iter()
        .rev()
        .find(|t| t.role == "assistant")
        .map(|t| excerpt(&t.content));
    let mut freq: HashMap<String, usize> = HashMap::new();
    for t in turns {
        for w in words(&t.content) {
            *freq.entry(w).or_default() += 1;
        }
    }
    let sentences: Vec<&str> = turns
        .iter()
        .flat_map(|t| t.content.split(['.', '!', '?', '\n']))
        .map(str::trim)
        .filter(|s| s.split_whitespace().count() >= 3)
        .collect();
    let mut scored: Vec<(usize, f64)> = sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let ws: Vec<String> = words(s).collect();
            let total: usize = ws.iter().map(|w| freq.get(w).copied().unwrap_or(0)).sum();
            (i, total as f64 / (ws.len().max(1) as f64).sqrt())
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut picked: Vec<usize> = Vec::new();
    for (i, _) in scored {
        if picked.len() == KEY_SENTENCES {
            break;
        }
        if !picked.iter().any(|&j| sentences[j] == sentences[i]) {
            picked.push(i);
        }
    }
    picked.sort_unstable();
    let key: Vec<String> = picked.iter().map(|&i| excerpt(sentences[i])).collect();
    let mut summary = format!("{} turns.", turns.len());
    if let Some(f) = &first_request {
        summary.push_str(&format!(" The user first asked: \"{f}\"."));
    }
    if !key.is_empty() {
        summary.push_str(&format!(" Key points: {}.", key.join("; ")));
    }
    if let Some(l) = &last_answer {
        summary.push_str(&format!(" Last answer: \"{l}\"."));
    }
    json!({
        "conversation_id": id,
        "method": "extractive",
        "turns": turns.len(),
        "first_request": first_request,
        "last_answer": last_answer,
        "key_sentences": key,
        "summary": summary,
    })
}

#[cfg(test)]
mod tests {
    use crate::error::ToolError;
    use crate::tools::core::testkit::*;
    use serde_json::json;

    #[test]
    fn memory_recall_finds_stored_memories_best_first_and_filters_by_tag() {
        let (rt, _) = runtime(&[]);
        let a = ok(
            &rt,
            "memory_store",
            json!({"text": "The basil likes morning sun", "tags": ["garden"]}),
        );
        let b = ok(
            &rt,
            "memory_store",
            json!({"text": "Basil basil: water the basil daily", "tags": ["Garden", "chores"]}),
        );
        ok(
            &rt,
            "memory_store",
            json!({"text": "The router password is in the drawer"}),
        );
        assert!(a["id"].as_i64().unwrap() < b["id"].as_i64().unwrap());
        let r = ok(&rt, "memory_recall", json!({"query": "basil"}));
        assert_eq!(r["count"], 2);
        assert_eq!(r["memories"][0]["id"], b["id"]);
        assert!(
            r["memories"][0]["score"].as_f64().unwrap()
                >= r["memories"][1]["score"].as_f64().unwrap()
        );
        let tagged = ok(
            &rt,
            "memory_recall",
            json!({"query": "basil sun", "tag": "chores"}),
        );
        assert_eq!(tagged["count"], 1);
        assert_eq!(tagged["memories"][0]["tags"], json!(["Garden", "chores"]));
        assert_eq!(
            ok(&rt, "memory_recall", json!({"query": "zebra"}))["count"],
            0
        );
    }

    #[test]
    fn memory_forget_deletes_by_id_and_by_query() {
        let (rt, _) = runtime(&[]);
        let a = ok(
            &rt,
            "memory_store",
            json!({"text": "wifi password is hunter2"}),
        );
        let b = ok(
            &rt,
            "memory_store",
            json!({"text": "old wifi password was letmein"}),
        );
        ok(
            &rt,
            "memory_store",
            json!({"text": "the wifi channel is 6"}),
        );
        let r = ok(&rt, "memory_forget", json!({"id": a["id"]}));
        assert_eq!(r["deleted"][0]["id"], a["id"]);
        let e = err(&rt, "memory_forget", json!({"id": a["id"]}));
        assert!(matches!(e, ToolError::NotFound { .. }));
        // Every word must match: the channel memory stays.
        let r = ok(&rt, "memory_forget", json!({"query": "wifi password"}));
        assert_eq!(r["count"], 1);
        assert_eq!(r["deleted"][0]["id"], b["id"]);
        assert_eq!(
            ok(&rt, "memory_recall", json!({"query": "wifi"}))["count"],
            1
        );
        let e = err(&rt, "memory_forget", json!({"query": "password"}));
        assert!(matches!(e, ToolError::NotFound { .. }));
        let e = err(&rt, "memory_forget", json!({}));
        assert!(e.to_string().contains("exactly one of id or query"));
        let e = err(&rt, "memory_forget", json!({"id": 1, "query": "x"}));
        assert!(matches!(e, ToolError::InvalidArguments { .. }));
    }

    #[test]
    fn conversation_fork_copies_turns_and_rejects_an_out_of_range_turn() {
        let (rt, _) = runtime(&[]);
        let store = rt.store().unwrap();
        let c = store.create_conversation("lights").unwrap();
        for (role, text) in [
            ("user", "dim the lights"),
            ("assistant", "dimmed to 30%"),
            ("user", "brighter"),
            ("assistant", "60%"),
        ] {
            store.append_turn(&c, role, text).unwrap();
        }
        let f = ok(
            &rt,
            "conversation_fork",
            json!({"conversation_id": c, "at_turn": 2}),
        );
        let id = f["id"].as_str().unwrap();
        assert_ne!(id, c);
        assert_eq!(f["turns_copied"], 2);
        let turns = store.turns(id).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[1].content, "dimmed to 30%");
        let conv = store.conversation(id).unwrap().unwrap();
        assert_eq!(conv.parent_id.as_deref(), Some(c.as_str()));
        assert_eq!(conv.fork_at, Some(2));
        // The fork continues on its own numbering.
        assert_eq!(store.append_turn(id, "user", "warmer").unwrap(), 3);
        assert_eq!(store.turns(&c).unwrap().len(), 4);
        let e = err(
            &rt,
            "conversation_fork",
            json!({"conversation_id": c, "at_turn": 5}),
        );
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/at_turn");
        assert!(
            problems[0].problem.contains("1..=4"),
            "{}",
            problems[0].problem
        );
        let e = err(
            &rt,
            "conversation_fork",
            json!({"conversation_id": "nope", "at_turn": 1}),
        );
        assert!(matches!(e, ToolError::NotFound { .. }));
    }

    #[test]
    fn conversation_summary_without_a_model_is_extractive_and_says_so() {
        let (rt, _) = runtime(&[]);
        let store = rt.store().unwrap();
        store
            .append_turn(
                "s1",
                "user",
                "Please check the greenhouse temperature sensor.",
            )
            .unwrap();
        store
            .append_turn(
                "s1",
                "assistant",
                "The greenhouse temperature sensor reads 31 degrees. That is warm.",
            )
            .unwrap();
        store
            .append_turn("s1", "user", "Open the greenhouse vent then.")
            .unwrap();
        store
            .append_turn("s1", "assistant", "The greenhouse vent is open now.")
            .unwrap();
        let r = ok(&rt, "conversation_summary", json!({}));
        assert_eq!(r["method"], "extractive");
        assert!(r["note"].as_str().unwrap().contains("no model"));
        assert_eq!(r["turns"], 4);
        assert_eq!(
            r["first_request"],
            "Please check the greenhouse temperature sensor."
        );
        assert_eq!(r["last_answer"], "The greenhouse vent is open now.");
        assert!(!r["key_sentences"].as_array().unwrap().is_empty());
        let e = err(
            &rt,
            "conversation_summary",
            json!({"conversation_id": "ghost"}),
        );
        assert!(matches!(e, ToolError::NotFound { .. }));
    }

    #[test]
    fn conversation_summary_uses_the_model_when_one_is_configured() {
        let (rt, _) = runtime_with(&[], Some(Box::new(CountingModel)));
        let store = rt.store().unwrap();
        store.append_turn("s1", "user", "hello").unwrap();
        store.append_turn("s1", "assistant", "hi").unwrap();
        let r = ok(
            &rt,
            "conversation_summary",
            json!({"conversation_id": "s1"}),
        );
        assert_eq!(r["method"], "model");
        assert_eq!(r["summary"], "model summary of 2 lines");
    }

    /// 60,000 words: the memory's word first, then 59,999 different words.
    fn huge_query(first: &str) -> String {
        let mut q = String::from(first);
        for i in 0..59_999 {
            q.push_str(&format!(" w{i}"));
        }
        q
    }

    #[test]
    fn a_huge_recall_query_is_capped_and_still_finds_the_memory() {
        let (rt, _) = runtime(&[]);
        let m = ok(
            &rt,
            "memory_store",
            json!({"text": "The basil likes morning sun"}),
        );
        let r = ok(&rt, "memory_recall", json!({"query": huge_query("basil")}));
        assert_eq!(r["count"], 1);
        assert_eq!(r["memories"][0]["id"], m["id"]);
        // Repeated words count once: 60,000 words of three distinct ones.
        let repeated = "sun morning basil ".repeat(20_000);
        let r = ok(&rt, "memory_recall", json!({"query": repeated}));
        assert_eq!(r["count"], 1);
    }

    #[test]
    fn a_huge_forget_query_of_few_words_forgets_and_of_many_words_is_refused() {
        let (rt, _) = runtime(&[]);
        ok(
            &rt,
            "memory_store",
            json!({"text": "The basil likes morning sun"}),
        );
        // Forgetting needs every word to match: dropping words would widen what is deleted.
        let e = err(&rt, "memory_forget", json!({"query": huge_query("basil")}));
        let ToolError::InvalidArguments { problems, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(problems[0].path, "/query");
        assert!(problems[0].problem.contains("at most 32"), "{problems:?}");
        let r = ok(
            &rt,
            "memory_forget",
            json!({"query": "basil sun ".repeat(30_000)}),
        );
        assert_eq!(r["count"], 1);
    }

    #[test]
    fn a_query_without_a_searchable_word_is_an_invalid_argument() {
        let (rt, _) = runtime(&[]);
        ok(
            &rt,
            "memory_store",
            json!({"text": "The basil likes morning sun"}),
        );
        for tool in ["memory_recall", "memory_forget"] {
            let e = err(&rt, tool, json!({"query": "!!! ... ???"}));
            let ToolError::InvalidArguments { problems, .. } = e else {
                panic!("{tool}: {e:?}")
            };
            assert_eq!(problems[0].path, "/query", "{tool}");
            assert!(
                problems[0].problem.contains("no searchable word"),
                "{tool}: {problems:?}"
            );
        }
    }

    fn audit_args(rt: &crate::runtime::Runtime) -> Vec<(String, String)> {
        let store = rt.store().unwrap();
        let conn = store.conn();
        let mut stmt = conn
            .prepare("SELECT tool, args FROM audit ORDER BY id")
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn the_audit_log_keeps_small_arguments_and_redacts_large_strings() {
        let (rt, _) = runtime(&[]);
        let long = "my bank PIN and the alarm code are written here in full ".repeat(4);
        ok(
            &rt,
            "memory_store",
            json!({"text": long, "tags": ["private"]}),
        );
        ok(
            &rt,
            "memory_recall",
            json!({"query": "alarm code", "limit": 3}),
        );
        let rows = audit_args(&rt);
        assert_eq!(rows.len(), 2);
        let stored: serde_json::Value = serde_json::from_str(&rows[0].1).unwrap();
        assert!(!rows[0].1.contains("alarm"), "{}", rows[0].1);
        let text = stored["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("{} chars", long.trim().len()))
                || text.contains(&format!("{} chars", long.len())),
            "{text}"
        );
        assert!(text.contains("sha256"), "{text}");
        assert_eq!(stored["tags"], json!(["private"]));
        let recalled: serde_json::Value = serde_json::from_str(&rows[1].1).unwrap();
        assert_eq!(recalled, json!({"query": "alarm code", "limit": 3}));
    }

    #[test]
    fn memory_forget_removes_the_text_from_turns_and_the_audit_log() {
        let (rt, _) = runtime(&[]);
        let store = rt.store().unwrap();
        let secret = "door code is 4711";
        let m = ok(&rt, "memory_store", json!({"text": secret}));
        store
            .append_turn("s1", "user", "remember: door code is 4711, thanks")
            .unwrap();
        store
            .append_turn(
                "s1",
                "assistant",
                &format!("[tool call] memory_store {}", json!({"text": secret})),
            )
            .unwrap();
        store
            .append_turn("s1", "tool", &format!("memory_store: {m}"))
            .unwrap();
        store
            .append_turn("s1", "user", "the door code is 47110 at the shed")
            .unwrap();
        let before = store.turns("s1").unwrap().len();
        assert_eq!(store.search_turns("4711", None, 10).unwrap().len(), 2);
        let r = ok(&rt, "memory_forget", json!({"id": m["id"]}));
        assert_eq!(r["count"], 1);
        assert!(!r.to_string().contains(secret), "{r}");
        let turns = store.turns("s1").unwrap();
        assert_eq!(turns.len(), before, "turns are redacted, not deleted");
        assert_eq!(turns[0].content, "remember: [forgotten], thanks");
        assert!(turns[1].content.contains("[forgotten]"));
        assert!(turns[1].content.starts_with("[tool call] memory_store"));
        // Only whole-word occurrences: another number is not this text.
        assert_eq!(turns[3].content, "the door code is 47110 at the shed");
        assert!(store.search_turns("4711", None, 10).unwrap().is_empty());
        for (tool, args) in audit_args(&rt) {
            assert!(!args.contains("4711"), "{tool}: {args}");
            let _: serde_json::Value = serde_json::from_str(&args).unwrap();
        }
    }
}
