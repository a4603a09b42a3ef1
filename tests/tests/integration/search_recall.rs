//! `tool_search` quality over profile `full`, on four phrasing sets (`tests/fixtures/`): the
//! development set, the extra phrasings, and issue 18's fresh sets: `toolsearch-fresh-tune.tsv`
//! (ranking was tuned on it), `toolsearch-fresh-validation.tsv` (written later, used only as an
//! aggregate to choose between tuning states) and `toolsearch-fresh-heldout.tsv` (kept aside:
//! never tuned on).
//! Prints recall@1 and recall@5 and every query whose first hit is wrong (`--nocapture`).

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
        }
        if !got.first().is_some_and(|g| want.contains(g)) {
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

fn assert_recall(r: &Recall, at1: f64, at5: f64) {
    assert!(
        r.at1 >= at1 && r.at5 >= at5,
        "recall@1 {:.3} (floor {at1}), recall@5 {:.3} (floor {at5}); first-hit misses:\n{}",
        r.at1,
        r.at5,
        r.misses.join("\n")
    );
}

const DEV: &str = include_str!("../../fixtures/toolsearch-dev.tsv");
const EXTRA: &str = include_str!("../../fixtures/toolsearch-extra.tsv");
const FRESH_TUNE: &str = include_str!("../../fixtures/toolsearch-fresh-tune.tsv");
const FRESH_VALIDATION: &str = include_str!("../../fixtures/toolsearch-fresh-validation.tsv");
const FRESH_HELDOUT: &str = include_str!("../../fixtures/toolsearch-fresh-heldout.tsv");

#[test]
fn recall_on_the_dev_set_is_at_least_095_at_1_and_complete_at_5() {
    let r = recall(DEV);
    report("dev set", &r);
    assert_recall(&r, 0.95, 1.0);
}

#[test]
fn recall_on_the_extra_phrasings_is_at_least_085_at_1_and_complete_at_5() {
    let r = recall(EXTRA);
    report("extra set", &r);
    assert_recall(&r, 0.85, 1.0);
}

#[test]
fn recall_on_the_fresh_tuning_set_is_at_least_085_at_1_and_098_at_5() {
    let r = recall(FRESH_TUNE);
    report("fresh tuning set", &r);
    assert_recall(&r, 0.85, 0.98);
}

#[test]
fn recall_on_the_fresh_validation_set_is_at_least_075_at_1_and_092_at_5() {
    let r = recall(FRESH_VALIDATION);
    report("fresh validation set", &r);
    assert_recall(&r, 0.75, 0.92);
}

/// The held-out set guards what was reached (recall@1 0.762, recall@5 0.963 when this was
/// written) so that it cannot slip back; issue 18 asks for 0.85 and 0.98, not met yet (see the notes).
#[test]
fn recall_on_the_held_out_fresh_set_does_not_slip_below_what_was_reached() {
    let r = recall(FRESH_HELDOUT);
    report("fresh held-out set", &r);
    assert!(r.n >= 60, "{} held-out phrasings", r.n);
    assert_recall(&r, 0.75, 0.95);
}

fn phrasings(set: &str) -> Vec<(&str, Vec<&str>)> {
    set.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (q, t) = l.split_once('\t').expect("query<TAB>tools");
            (q, t.split(',').map(str::trim).collect())
        })
        .collect()
}

#[test]
fn the_fresh_sets_name_only_real_tools_cover_all_115_and_do_not_share_a_phrasing() {
    let names: std::collections::BTreeSet<&str> =
        covo_core::catalog::all().map(|t| t.name).collect();
    assert_eq!(names.len(), 115);
    let tune = phrasings(FRESH_TUNE);
    let held = phrasings(FRESH_HELDOUT);
    let validation = phrasings(FRESH_VALIDATION);
    let mut seen = std::collections::BTreeSet::new();
    for (q, tools) in tune.iter().chain(&held).chain(&validation) {
        for t in tools {
            assert!(names.contains(t), "{q:?} names {t:?}, not a tool");
            seen.insert(*t);
        }
    }
    let missing: Vec<_> = names.difference(&seen).collect();
    assert!(missing.is_empty(), "tools with no phrasing: {missing:?}");
    let tune_queries: std::collections::BTreeSet<String> =
        tune.iter().map(|(q, _)| q.to_lowercase()).collect();
    for (q, _) in &held {
        assert!(
            !tune_queries.contains(&q.to_lowercase()),
            "{q:?} is in both sets"
        );
    }
    assert!(tune.len() + held.len() >= 150);
}
