//! `tool_search` latency over the 116 tools of profile `full`.
//!
//! Criterion measures the mean; the percentile pass before it prints p50/p99 over every query of
//! the eight phrasing sets (dev, extra, issue 18's fresh tuning, validation and held-out sets, and
//! the second round's tuning and aside sets: a realistic mix of short, long, typo'd, quoted and
//! path-bearing queries; target: p99 ≤ 100 µs), against a baseline measured in the same run (an
//! empty query through the same index), because absolute times on a shared 2-core machine are
//! noisy.

use covo_core::discovery::SearchIndex;
use criterion::{criterion_group, Criterion};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

const SETS: [&str; 8] = [
    include_str!("../../tests/fixtures/toolsearch-dev.tsv"),
    include_str!("../../tests/fixtures/toolsearch-extra.tsv"),
    include_str!("../../tests/fixtures/toolsearch-fresh-tune.tsv"),
    include_str!("../../tests/fixtures/toolsearch-fresh-validation.tsv"),
    include_str!("../../tests/fixtures/toolsearch-fresh-heldout.tsv"),
    include_str!("../../tests/fixtures/toolsearch-h18r-tune.tsv"),
    include_str!("../../tests/fixtures/toolsearch-h18r-aside.tsv"),
    include_str!("../../tests/fixtures/toolsearch-h18r-aside2.tsv"),
];

fn queries() -> Vec<&'static str> {
    SETS.iter()
        .flat_map(|s| s.lines())
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').next())
        .collect()
}

fn index() -> SearchIndex {
    let catalog: Vec<_> = covo_core::catalog::all().collect();
    let owned = covo_core::profile::resolve(&catalog, "full", &BTreeMap::new()).unwrap();
    SearchIndex::build(&owned.tools)
}

fn percentiles(index: &SearchIndex, qs: &[&str], rounds: usize) -> (f64, f64, f64) {
    let mut samples = Vec::with_capacity(qs.len() * rounds);
    for _ in 0..rounds {
        for q in qs {
            let t = Instant::now();
            black_box(index.search(black_box(q), 5));
            samples.push(t.elapsed().as_nanos() as f64 / 1000.0);
        }
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize];
    (at(0.5), at(0.99), at(1.0))
}

fn bench(c: &mut Criterion) {
    let index = index();
    let qs = queries();
    c.bench_function("tool_search/full/phrasing-set query", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % qs.len();
            black_box(index.search(black_box(qs[i]), 5))
        })
    });
    c.bench_function("tool_search/index build (116 tools)", |b| {
        b.iter(|| black_box(self::index()))
    });
}

criterion_group!(benches, bench);

fn main() {
    let index = index();
    let qs = queries();
    let _ = percentiles(&index, &qs, 50); // warm up
    let (p50, p99, max) = percentiles(&index, &qs, 500);
    let (b50, b99, _) = percentiles(&index, &[""], 20_000);
    println!(
        "tool_search over 116 tools, {} queries x 500: p50 {p50:.1} µs, p99 {p99:.1} µs, max {max:.1} µs \
         (empty-query baseline p50 {b50:.2} µs, p99 {b99:.2} µs); target p99 <= 100 µs: {}",
        qs.len(),
        if p99 <= 100.0 { "met" } else { "MISSED" }
    );
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
