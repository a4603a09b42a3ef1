//! Recall of `tool_search` over profile `full` on phrasing sets (`query<TAB>tool[,tool…]` per
//! line, `#` comments): recall@1, recall@5 and, unless `--totals`, every query whose first hit
//! is wrong.
//!
//! ```text
//! cargo run -p covo-core --example toolsearch_recall -- tests/fixtures/toolsearch-dev.tsv …
//! COVO_RECALL_SET=path/to/set.tsv cargo run -p covo-core --example toolsearch_recall
//! ```
//!
//! The files are read at run time, so a set that is not in the repository can be measured
//! without editing code. The integration test `search_recall::` guards the sets in the repo.

use covo_core::discovery::SearchIndex;
use std::collections::BTreeMap;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut totals_only = false;
    let mut paths: Vec<String> = Vec::new();
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--totals" => totals_only = true,
            _ => paths.push(a),
        }
    }
    if paths.is_empty() {
        if let Ok(p) = std::env::var("COVO_RECALL_SET") {
            paths.extend(p.split(':').filter(|s| !s.is_empty()).map(str::to_owned));
        }
    }
    if paths.is_empty() {
        eprintln!("usage: toolsearch_recall [--totals] SET.tsv… (or COVO_RECALL_SET=SET.tsv[:…])");
        return ExitCode::from(2);
    }
    let catalog: Vec<_> = covo_core::catalog::all().collect();
    let owned = covo_core::profile::resolve(&catalog, "full", &BTreeMap::new())
        .expect("profile full resolves");
    let index = SearchIndex::build(&owned.tools);
    let names: std::collections::BTreeSet<&str> = catalog.iter().map(|t| t.name).collect();
    let mut failed = false;
    for path in &paths {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
                continue;
            }
        };
        let (mut n, mut at1, mut at5) = (0usize, 0usize, 0usize);
        let mut misses = Vec::new();
        for (lineno, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let Some((query, hits)) = line.split_once('\t') else {
                eprintln!("{path}:{}: not query<TAB>tools", lineno + 1);
                failed = true;
                continue;
            };
            let want: Vec<&str> = hits.split(',').map(str::trim).collect();
            if let Some(bad) = want.iter().find(|w| !names.contains(**w)) {
                eprintln!("{path}:{}: {bad:?} is not a tool", lineno + 1);
                failed = true;
            }
            let got: Vec<&str> = index.search(query, 5).iter().map(|h| h.tool.name).collect();
            n += 1;
            let first = got.first().is_some_and(|g| want.contains(g));
            at1 += usize::from(first);
            at5 += usize::from(got.iter().any(|g| want.contains(g)));
            if !first {
                misses.push(format!("{query:?}: want {want:?}, got {got:?}"));
            }
        }
        let ratio = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
        println!(
            "{path}: {n} queries, recall@1 = {:.3}, recall@5 = {:.3}",
            ratio(at1),
            ratio(at5)
        );
        if !totals_only {
            for m in &misses {
                println!("  miss: {m}");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
