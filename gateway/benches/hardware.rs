//! `sensor_read` dispatch overhead on the sim board (target ≤ 10 µs median, excluding device
//! time), and how long an `i2c_scan` of a full bus takes on the sim.
//!
//! Three layers are measured in the same run and subtracted: the driver on the sim device alone
//! (`Hardware::sensor_read`), the tool body (driver + logging + watches), and the whole pipeline
//! call (lookup, validation, hooks incl. policy and plan mode, audit).
//!
//! Each is measured twice: with an in-memory store, and with the real store, SQLite on disk
//! (WAL, `synchronous = NORMAL`) in a temporary folder, so the audit and readings writes cost
//! what they cost on a board.

use covo::config::Config;
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    for (label, store) in [
        ("in-memory store", Store::in_memory().unwrap()),
        ("SQLite on disk", Store::open_in(dir.path()).unwrap()),
    ] {
        let rt = Runtime::new(covo::tools::options(Config::default()))
            .unwrap()
            .with_store(store);
        let hw = rt.board().hardware().unwrap();
        // The sim's devices convert at once; skipping the drivers' waits leaves only software time.
        hw.skip_driver_delays(true);
        let s = Session::new("bench", "cli");
        let args = json!({"sensor": "climate"});
        let mut g = c.benchmark_group(format!("sensor_read (sim BME280, {label})"));
        g.bench_function("driver on the sim device", |b| {
            b.iter(|| black_box(hw.sensor_read("climate").unwrap()))
        });
        let cx = covo::exec::Cx::new(
            &rt,
            &s,
            &covo_core::catalog::sensors::SENSOR_READ,
            Via::Direct,
            0,
        );
        g.bench_function("tool body: driver + log + watches", |b| {
            b.iter(|| black_box(covo::tools::sensors::read_and_log(&cx, "climate").unwrap()))
        });
        g.bench_function("full pipeline call", |b| {
            b.iter(|| {
                black_box(
                    rt.call(&s, Via::Direct, "sensor_read", args.clone())
                        .unwrap(),
                )
            })
        });
        g.finish();
    }
    let rt = Runtime::new(covo::tools::options(Config::default()))
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    let hw = rt.board().hardware().unwrap();
    let mut g = c.benchmark_group("i2c");
    g.bench_function("i2c_scan of a full bus (0x08-0x77) on the sim", |b| {
        b.iter(|| black_box(hw.i2c_scan(1).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
