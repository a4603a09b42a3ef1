//! `tool_search` quality on the development set (`tests/fixtures/toolsearch-dev.tsv`), over
//! profile `full`. Prints recall@1 and recall@5; recall@5 must be at least 0.95.

use covo::discovery::SearchIndex;
use std::collections::BTreeMap;

struct Recall {
    n: usize,
    at1: f64,
    at5: f64,
    misses: Vec<String>,
}

fn recall(set: &str) -> Recall {
    let reg: Vec<_> = covo_core::catalog::all().collect();
    let owned = covo::profile::resolve(&reg, "full", &BTreeMap::new()).unwrap();
    let index = SearchIndex::build(&owned.tools);
    let (mut n, mut at1, mut at5) = (0, 0, 0);
    let mut misses = Vec::new();
    for line in set.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (query, hits) = line.split_once('\t').expect("query<TAB>tools");
        let want: Vec<&str> = hits.split(',').map(str::trim).collect();
        let got: Vec<&str> = index.search(query, 5).iter().map(|h| h.tool.name).collect();
        n += 1;
        if got.first().is_some_and(|g| want.contains(g)) {
            at1 += 1;
        }
        if got.iter().any(|g| want.contains(g)) {
            at5 += 1;
        } else {
            misses.push(format!("{query:?}: want {want:?}, got {got:?}"));
        }
    }
    Recall {
        n,
        at1: at1 as f64 / n as f64,
        at5: at5 as f64 / n as f64,
        misses,
    }
}

fn report(name: &str, r: &Recall) {
    println!(
        "tool_search {name}: {} queries, recall@1 = {:.3}, recall@5 = {:.3}",
        r.n, r.at1, r.at5
    );
    for m in &r.misses {
        println!("miss: {m}");
    }
}

#[test]
fn recall_at_5_on_the_dev_set_is_at_least_095() {
    let r = recall(include_str!("../../fixtures/toolsearch-dev.tsv"));
    report("dev set", &r);
    assert!(
        r.at5 >= 0.95,
        "recall@5 {:.3}; misses:\n{}",
        r.at5,
        r.misses.join("\n")
    );
}

#[test]
fn recall_on_the_extra_phrasings_is_reported_and_stays_high() {
    let r = recall(include_str!("../../fixtures/toolsearch-extra.tsv"));
    report("extra set", &r);
    assert!(
        r.at5 >= 0.85,
        "recall@5 {:.3}; misses:\n{}",
        r.at5,
        r.misses.join("\n")
    );
}
