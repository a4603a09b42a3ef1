//! `tool_search` quality over profile `full`, on the phrasing sets in `tests/fixtures/`: the
//! development set, the extra phrasings, and issue 18's fresh sets:
//! - `toolsearch-fresh-tune.tsv` (tuned on), `toolsearch-fresh-validation.tsv` and
//!   `toolsearch-fresh-heldout.tsv` (both once kept aside; after many looks they became tuning
//!   data in the second round);
//! - `toolsearch-h18r-tune.tsv`: the second round's own phrasings, written in four batches, each
//!   measured before it was tuned on (tuned on);
//! - `toolsearch-h18r-aside.tsv` and `toolsearch-h18r-aside2.tsv`: kept aside in the second
//!   round (never tuned on; only their totals were read).
//! - `toolsearch-blind.tsv`: 282 phrasings written apart, by someone who read the catalog but
//!   not the engine or its keywords, while the second round tuned; measured once, after it
//!   ended (0.872 / 0.979). It is in the repository now, so it is no longer blind: a next round
//!   writes its own.
//!
//! Prints recall@1 and recall@5 and every query whose first hit is wrong (`--nocapture`).
//!
//! A set outside the repository (a new held-out file) is measured without editing code:
//! `COVO_RECALL_SET=/path/set.tsv cargo test -p covo-tests --test integration
//! search_recall::recall_on_the_held_aside_sets -- --nocapture` checks it against issue 18's
//! target (recall@1 >= 0.85, recall@5 >= 0.98) instead of the two aside sets.

use covo::discovery::SearchIndex;
use std::collections::BTreeMap;

struct Recall {
    n: usize,
    at1: f64,
    at5: f64,
    misses: Vec<String>,
}

fn recall(set: &str) -> Recall {
    let names: std::collections::BTreeSet<&str> =
        covo_core::catalog::all().map(|t| t.name).collect();
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
        for w in &want {
            assert!(names.contains(w), "{query:?} names {w:?}, not a tool");
        }
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

/// Totals only: the misses of a set kept aside are not shown, so nobody tunes on them.
fn report_totals(name: &str, r: &Recall) {
    println!(
        "tool_search {name}: {} queries, recall@1 = {:.3}, recall@5 = {:.3}",
        r.n, r.at1, r.at5
    );
}

/// `assert_recall` without the misses in its message.
fn assert_recall_totals(r: &Recall, at1: f64, at5: f64) {
    assert!(
        r.at1 >= at1 && r.at5 >= at5,
        "recall@1 {:.3} (floor {at1}), recall@5 {:.3} (floor {at5})",
        r.at1,
        r.at5
    );
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
const H18R_TUNE: &str = include_str!("../../fixtures/toolsearch-h18r-tune.tsv");
const H18R_ASIDE: &str = include_str!("../../fixtures/toolsearch-h18r-aside.tsv");
const H18R_ASIDE2: &str = include_str!("../../fixtures/toolsearch-h18r-aside2.tsv");
const BLIND: &str = include_str!("../../fixtures/toolsearch-blind.tsv");

// The floors of the sets tuned on sit a little under what was reached (in the comments), so
// that a change elsewhere may cost a query or two but the ranking cannot slip back.

/// Reached: 1.000 / 1.000.
#[test]
fn recall_on_the_dev_set_is_at_least_095_at_1_and_complete_at_5() {
    let r = recall(DEV);
    report("dev set", &r);
    assert_recall(&r, 0.95, 1.0);
}

/// Reached: 0.975 / 1.000.
#[test]
fn recall_on_the_extra_phrasings_is_at_least_095_at_1_and_complete_at_5() {
    let r = recall(EXTRA);
    report("extra set", &r);
    assert_recall(&r, 0.95, 1.0);
}

/// Reached: 0.956 / 1.000.
#[test]
fn recall_on_the_fresh_tuning_set_is_at_least_093_at_1_and_099_at_5() {
    let r = recall(FRESH_TUNE);
    report("fresh tuning set", &r);
    assert_recall(&r, 0.93, 0.99);
}

/// Reached: 0.937 / 1.000.
#[test]
fn recall_on_the_fresh_validation_set_is_at_least_090_at_1_and_098_at_5() {
    let r = recall(FRESH_VALIDATION);
    report("fresh validation set", &r);
    assert_recall(&r, 0.90, 0.98);
}

/// The first round's held-out set (0.762 / 0.963 when the first round ended; tuning data in the
/// second round). Reached: 0.963 / 1.000.
#[test]
fn recall_on_the_first_held_out_set_is_at_least_093_at_1_and_098_at_5() {
    let r = recall(FRESH_HELDOUT);
    report("first-round held-out set", &r);
    assert!(r.n >= 60, "{} held-out phrasings", r.n);
    assert_recall(&r, 0.93, 0.98);
}

/// The second round's tuning phrasings (1,148 in fourteen batches). Reached: 0.938 / 0.993.
#[test]
fn recall_on_the_second_round_tuning_set_is_at_least_092_at_1_and_098_at_5() {
    let r = recall(H18R_TUNE);
    report("second-round tuning set", &r);
    assert!(r.n >= 1000, "{} phrasings", r.n);
    assert_recall(&r, 0.92, 0.98);
}

/// Issue 18's target on phrasings never tuned on: recall@1 >= 0.85 and recall@5 >= 0.98. By
/// default on the second round's two aside sets together (reached: 0.882 / 0.992, from 0.840 /
/// 0.975 before the round); with `COVO_RECALL_SET=path` on that file instead (a held-out set
/// outside the repository), read at run time.
#[test]
fn recall_on_the_held_aside_sets_meets_issue_18s_target() {
    match std::env::var("COVO_RECALL_SET") {
        Ok(path) => {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("COVO_RECALL_SET={path}: {e}"));
            let r = recall(&text);
            report(&path, &r);
            assert!(r.n >= 50, "{path}: only {} phrasings", r.n);
            assert_recall(&r, 0.85, 0.98);
        }
        Err(_) => {
            let r = recall(&format!("{H18R_ASIDE}\n{H18R_ASIDE2}"));
            // Totals only: the misses of the aside sets are not shown.
            report_totals("second-round aside sets", &r);
            assert!(r.n >= 100, "only {} aside phrasings", r.n);
            assert_recall_totals(&r, 0.85, 0.98);
        }
    }
}

/// The set written apart and measured once when the second round ended: 0.872 / 0.979 (issue
/// 18's target is 0.85 / 0.98: met at 1, one phrasing short at 5). Guarded where it stood.
#[test]
fn recall_on_the_blind_set_is_at_least_085_at_1_and_0975_at_5() {
    let r = recall(BLIND);
    report_totals("blind set", &r);
    assert!(r.n >= 280, "only {} blind phrasings", r.n);
    assert_recall_totals(&r, 0.85, 0.975);
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
fn the_fresh_sets_name_only_real_tools_cover_all_116_and_do_not_share_a_phrasing() {
    let names: std::collections::BTreeSet<&str> =
        covo_core::catalog::all().map(|t| t.name).collect();
    assert_eq!(names.len(), 116);
    let tune = phrasings(FRESH_TUNE);
    let held = phrasings(FRESH_HELDOUT);
    let validation = phrasings(FRESH_VALIDATION);
    let second = phrasings(H18R_TUNE);
    let aside = phrasings(H18R_ASIDE);
    let aside2 = phrasings(H18R_ASIDE2);
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

    // The second round's sets: every tool in its tuning set, and no phrasing in two sets (of
    // all the sets in the repository).
    let second_seen: std::collections::BTreeSet<&str> =
        second.iter().flat_map(|(_, t)| t.iter().copied()).collect();
    let missing: Vec<_> = names.difference(&second_seen).collect();
    assert!(
        missing.is_empty(),
        "second round: tools with no phrasing: {missing:?}"
    );
    let mut owner: std::collections::BTreeMap<String, &str> = std::collections::BTreeMap::new();
    for (set, lines) in [
        ("dev", phrasings(DEV)),
        ("extra", phrasings(EXTRA)),
        ("fresh-tune", tune.clone()),
        ("fresh-heldout", held.clone()),
        ("fresh-validation", validation.clone()),
        ("h18r-tune", second.clone()),
        ("h18r-aside", aside.clone()),
        ("h18r-aside2", aside2.clone()),
    ] {
        for (q, tools) in &lines {
            for t in tools {
                assert!(names.contains(t), "{set}: {q:?} names {t:?}, not a tool");
            }
            if set.starts_with("h18r") {
                if let Some(other) = owner.get(&q.to_lowercase()) {
                    panic!("{q:?} is in both {other} and {set}");
                }
            }
            owner.entry(q.to_lowercase()).or_insert(set);
        }
    }
    assert!(second.len() >= 100 && aside.len() + aside2.len() >= 100);
}
