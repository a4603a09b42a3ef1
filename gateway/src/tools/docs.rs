//! The `docs` toolset: documentation pages bundled in the binary (one per sensor driver and
//! board covo supports, plus bus basics, from `docs/hardware/`) and the user's own Markdown in
//! `$COVO_HOME/docs/`, searched with the engine behind `tool_search` (BM25 with the same query
//! expansion) and read whole or one `##` section at a time.

use crate::error::CallError;
use crate::exec::Cx;
use crate::spec::ToolDef;
use covo_core::catalog::docs as c;
use covo_core::discovery::TextIndex;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::DOCS_SEARCH, docs_search),
    ToolDef::local(&c::DOCS_READ, docs_read),
];

macro_rules! page {
    ($id:literal) => {
        (
            $id,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../docs/hardware/",
                $id,
                ".md"
            )),
        )
    };
}

/// The bundled pages that are not a driver's: boards and bus basics, by id.
static OTHER_PAGES: &[(&str, &str)] = &[
    page!("rpi4"),
    page!("rpi5"),
    page!("rpi-zero2w"),
    page!("sim"),
    page!("i2c-basics"),
    page!("spi-basics"),
];

/// The bundled pages, by id: each driver's page from its entry in the driver table
/// (`covo_board::driver::Driver::docs`), then the boards and bus basics.
pub fn bundled() -> Vec<(&'static str, &'static str)> {
    covo_board::driver::Driver::doc_pages()
        .into_iter()
        .map(|p| (p.id, p.text))
        .chain(OTHER_PAGES.iter().copied())
        .collect()
}

/// The most user pages read from `$COVO_HOME/docs`.
pub const MAX_USER_PAGES: usize = 200;
/// The most bytes of one user page.
pub const MAX_PAGE_BYTES: u64 = 256 * 1024;
/// The most characters `docs_read` returns at once.
const READ_CHARS: usize = 24_000;

/// One page: its id (`bme280`, or `user/NAME` for the user's own), title and text.
pub struct Page {
    /// What `docs_read` takes.
    pub id: String,
    /// The first `#` heading, else the id.
    pub title: String,
    /// The Markdown.
    pub text: String,
}

fn title_of(id: &str, text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(|t| t.trim().to_string())
        .unwrap_or_else(|| id.to_string())
}

/// Every page: the bundled ones, then the user's (`*.md` directly in `dir`, sorted, at most
/// [`MAX_USER_PAGES`], each at most [`MAX_PAGE_BYTES`]; larger or unreadable files are named in
/// the second list rather than skipped silently).
pub fn pages(dir: &Path) -> (Vec<Page>, Vec<String>) {
    let mut out: Vec<Page> = bundled()
        .iter()
        .map(|(id, text)| Page {
            id: id.to_string(),
            title: title_of(id, text),
            text: text.to_string(),
        })
        .collect();
    let mut problems = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    if files.len() > MAX_USER_PAGES {
        problems.push(format!(
            "{} pages in {}: only the first {MAX_USER_PAGES} are searched",
            files.len(),
            dir.display()
        ));
        files.truncate(MAX_USER_PAGES);
    }
    for f in files {
        let stem = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let size = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
        if size > MAX_PAGE_BYTES {
            problems.push(format!(
                "{} is larger than {} KiB: not searched",
                f.display(),
                MAX_PAGE_BYTES / 1024
            ));
            continue;
        }
        match std::fs::read_to_string(&f) {
            Ok(text) => {
                let id = format!("user/{stem}");
                out.push(Page {
                    title: title_of(&id, &text),
                    id,
                    text,
                })
            }
            Err(e) => problems.push(format!("{}: {e}", f.display())),
        }
    }
    (out, problems)
}

/// The `##` (and deeper) sections of a page: (heading, text including the heading).
fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        let heading = (!fence)
            .then(|| {
                line.strip_prefix("## ")
                    .or_else(|| line.strip_prefix("### "))
            })
            .flatten();
        match heading {
            Some(h) => out.push((h.trim().to_string(), format!("{line}\n"))),
            None => {
                if let Some(last) = out.last_mut() {
                    last.1.push_str(line);
                    last.1.push('\n');
                }
            }
        }
    }
    out
}

/// The text indexed for a page: the title three times (a field boost, as for tools' names), the
/// headings twice, then the body.
fn document(p: &Page) -> String {
    let heads: Vec<String> = sections(&p.text).into_iter().map(|s| s.0).collect();
    let id = p.id.replace(['_', '-', '/'], " ");
    format!(
        "{t} {t} {t} {id} {h} {h} {body}",
        t = p.title,
        h = heads.join(" "),
        body = p.text
    )
}

/// The line of `text` that shares most words with the query, trimmed, as a snippet.
fn snippet(text: &str, query: &str) -> String {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_lowercase)
        .collect();
    let best = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("```"))
        .max_by_key(|l| {
            let l = l.to_lowercase();
            words.iter().filter(|w| l.contains(w.as_str())).count()
        })
        .unwrap_or("");
    let s = best.trim().trim_start_matches(['#', '-', '*', ' ']);
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default = "five")]
    limit: usize,
}

fn five() -> usize {
    5
}

fn user_dir(cx: &Cx<'_>) -> std::path::PathBuf {
    cx.home().join("docs")
}

fn docs_search(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: SearchArgs = cx.args(args)?;
    let (pages, problems) = pages(&user_dir(cx));
    let docs: Vec<String> = pages.iter().map(document).collect();
    let hits = TextIndex::build(&docs).search(&a.query, a.limit.clamp(1, 20));
    let results: Vec<Value> = hits
        .into_iter()
        .map(|(i, score)| {
            let p = &pages[i];
            let section = sections(&p.text)
                .into_iter()
                .max_by_key(|(_, body)| {
                    let b = body.to_lowercase();
                    a.query
                        .split_whitespace()
                        .filter(|w| w.len() > 2 && b.contains(&w.to_lowercase()))
                        .count()
                })
                .map(|s| s.0);
            json!({
                "page": p.id,
                "title": p.title,
                "section": section,
                "score": (score * 100.0).round() / 100.0,
                "snippet": snippet(&p.text, &a.query),
            })
        })
        .collect();
    let mut v = json!({"results": results});
    if !problems.is_empty() {
        v["problems"] = json!(problems);
    }
    Ok(v)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    page: String,
    section: Option<String>,
}

fn docs_read(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: ReadArgs = cx.args(args)?;
    let (pages, _) = pages(&user_dir(cx));
    let Some(p) = pages.iter().find(|p| p.id == a.page) else {
        let ids: Vec<&str> = pages.iter().map(|p| p.id.as_str()).collect();
        return Err(cx.fail(format!(
            "no page '{}'; pages: {} (docs_search finds them by topic)",
            a.page,
            ids.join(", ")
        )));
    };
    let (text, section) = match a.section.as_deref() {
        None => (p.text.clone(), None),
        Some(want) => {
            let all = sections(&p.text);
            let w = want.trim().to_lowercase();
            let found = all
                .iter()
                .find(|(h, _)| h.to_lowercase() == w)
                .or_else(|| all.iter().find(|(h, _)| h.to_lowercase().contains(&w)));
            match found {
                Some((h, body)) => (body.clone(), Some(h.clone())),
                None => {
                    return Err(cx.fail(format!(
                        "page '{}' has no section '{want}'; its sections: {}",
                        p.id,
                        all.iter()
                            .map(|s| s.0.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            }
        }
    };
    let total = text.chars().count();
    let shown: String = text.chars().take(READ_CHARS).collect();
    let mut v = json!({
        "page": p.id,
        "title": p.title,
        "section": section,
        "text": shown,
    });
    if total > READ_CHARS {
        v["truncated"] = json!(format!(
            "showing {READ_CHARS} of {total} characters; read one section at a time"
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_page_has_a_title_and_sections() {
        let mut ids = Vec::new();
        for (id, text) in bundled() {
            assert!(text.starts_with("# "), "{id} starts with its title");
            assert!(sections(text).len() >= 2, "{id} has sections");
            assert!(!ids.contains(&id), "{id} is bundled once");
            ids.push(id);
        }
        // Every driver's page (from the driver table) and every board page.
        for id in [
            "bme280",
            "ssd1306",
            "gpio_out",
            "mcu",
            "serial-basics",
            "rpi4",
            "sim",
        ] {
            assert!(ids.contains(&id), "{id} in {ids:?}");
        }
    }

    #[test]
    fn sections_ignore_headings_inside_code_fences() {
        let s = sections("# T\nintro\n## A\na\n```toml\n## not a heading\n```\n## B\nb\n");
        let heads: Vec<&str> = s.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(heads, ["A", "B"]);
        assert!(s[0].1.contains("## not a heading"));
    }
}
