//! An adversarial suite of our own (issue 13): property tests over every tool's JSON Schema.
//!
//! For every tool in the catalog, arguments are generated from its schema — wrong types per
//! property, missing required fields, extra fields, boundary numbers (min-1, max+1, i64/u64
//! extremes, floats, NaN-like strings), huge strings (up to 64 KiB), deep nesting, unicode, a
//! non-object top level, and valid-looking arguments at the edges — and sent through
//! `Runtime::call` on every call path: `Via::Direct`, through the `tool_call` discovery tool,
//! `Via::Schedule`, `Via::Watch`, `Via::Mqtt` and `Via::Remote` (one test per path, so that the
//! paths run in parallel).
//!
//! The runtime is the default one: the simulated board, an in-memory store, the default
//! `NoApprover`, and a fresh temporary folder as the home (so the `fs_*` workspace, artifacts
//! and anything else under `$COVO_HOME` never touch the real home). Every call runs on its own
//! thread under a deadline ([`DEADLINE`]); it must come back, without panicking, as exactly one
//! result or one structured error (`CallError::Respond`; a `Fatal` fails the test).
//!
//! Case count: `COVO_ADVERSARIAL_CASES` is the total number of generated cases over all paths and
//! tools (default 20 000, spread evenly over the six paths; every tool gets at least one case
//! per path; the unreachable-broker variant of the direct path adds one path's share, so the
//! default run makes 7 × 116 × 29 = 23 548 cases). To run it
//! longer by hand:
//!
//! ```text
//! COVO_ADVERSARIAL_CASES=200000 cargo test -p covo-gateway --release --test adversarial
//! ```
//!
//! `PROPTEST_RNG_SEED` fixes the generator's seed to replay a run; `PROPTEST_CASES` (proptest's
//! own) is ignored here. `COVO_ADVERSARIAL_STATS=1` (with `--nocapture`) prints each path's
//! outcomes per tool from the audit log, to see how deep the generated calls get. The default
//! run takes about 25 s in debug on a 2-core machine; 100 000 cases about a minute.
//!
//! Exclusions and adjustments (no tool is left out):
//! - Tools that wait by design get their waits capped small through their arguments (see
//!   [`cap_waits`]): a valid `timeout_ms`/`pulse_ms` above 200 ms becomes 200 ms and a missing
//!   one is set to 200 ms for tools whose default wait is long (`gpio_wait_edge`, `serial_read`,
//!   `serial_request`, `mqtt_wait_message`, `swarm_call`, `swarm_broadcast`); a valid
//!   `timeout_s`/`seconds` becomes 1. Out-of-range and wrongly typed waits are kept: they must
//!   be refused.
//! - `ask_clarification` would read the terminal's stdin: the runtime's `UserIo` is a silent one
//!   where nobody answers (`None`, a structured outcome) and only `cli` is connected.
//! - Destructive tools stay in: the default `NoApprover` denies them, a structured error.
//! - Tools needing a broker or a peer stay in: without `[mqtt]` they are `unavailable`; the
//!   `direct_with_an_unreachable_broker` test configures `[mqtt]` with nothing listening, so the
//!   `mqtt`, `messaging` and swarm executors run too (peer tools stay `unavailable`: no peer).

use covo::config::Config;
use covo::error::CallError;
use covo::exec::{Session, UserIo};
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one call may take before the suite calls it a hang.
const DEADLINE: Duration = Duration::from_secs(10);

/// The default total number of cases over all paths and tools.
const DEFAULT_CASES: u32 = 20_000;

/// The call paths, one test each.
const PATHS: usize = 6;

/// Nobody answers questions; only `cli` is connected.
struct Silent;

impl UserIo for Silent {
    fn send(&self, channel: &str, _text: &str) -> Result<(), String> {
        if channel == "cli" {
            Ok(())
        } else {
            Err(format!("channel '{channel}' is not connected"))
        }
    }

    fn ask(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }

    fn channels(&self) -> Vec<(String, bool)> {
        vec![("cli".into(), true)]
    }
}

fn runtime(home: &std::path::Path, broker: bool) -> Runtime {
    let mut config = Config {
        home: Some(home.to_path_buf()),
        ..Config::default()
    };
    if broker {
        // Configured, so the broker and peer tools run their executors, but nothing listens.
        config.mqtt = Some(covo::config::MqttConfig {
            url: Some("mqtt://127.0.0.1:9".into()),
            ..Default::default()
        });
    }
    let mut opts = covo::tools::options(config);
    opts.home = Some(home.to_path_buf());
    opts.user_io = Box::new(Silent);
    Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap())
}

/// Total cases per run, from `COVO_ADVERSARIAL_CASES`.
fn total_cases() -> u32 {
    std::env::var("COVO_ADVERSARIAL_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

// ---------------------------------------------------------------------------------------------
// Generators, derived from a schema.

/// A JSON number for an integer that may not fit `i64`.
fn int_value(n: i128) -> Value {
    if let Ok(i) = i64::try_from(n) {
        json!(i)
    } else if let Ok(u) = u64::try_from(n) {
        json!(u)
    } else {
        json!(n as f64)
    }
}

fn types_of(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

/// Strings that trip parsers: empty, whitespace, NaN-like, paths, control and bidi characters.
fn edge_string() -> BoxedStrategy<String> {
    let fixed: Vec<String> = [
        "",
        " ",
        "NaN",
        "nan",
        "Infinity",
        "-Infinity",
        "-0",
        "1e999",
        "-1",
        "0x10",
        "18446744073709551616",
        "null",
        "true",
        "../../../../etc/passwd",
        "/",
        ".",
        "..",
        "~",
        "\u{0}",
        "a\u{0}b",
        "\n\r\t",
        "😀",
        "\u{202e}evil",
        "ǅ̸̛̛͙",
        "+/#",
        "#",
        "a/+/b",
        "art-00000000",
        "GPIO17",
        "/dev/ttyUSB0",
        "3650d",
        "100000000d",
        "0s",
        "-1h",
        "* * * * *",
        "2026-13-45T99:99:99Z",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        // Names the simulated board and the catalog declare, so that calls get past lookups.
        "climate",
        "light",
        "oled",
        "relay",
        "button",
        "fan",
        "pico",
        "echo",
        "cli",
        "temperature",
        "humidity",
        "sensor_read",
        "memory_store",
        "todo",
        "doing",
        "done",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    prop_oneof![
        4 => proptest::sample::select(fixed),
        3 => "\\PC{0,24}",
        1 => any::<String>().prop_map(|s| s.chars().take(64).collect()),
        1 => (proptest::sample::select(vec!['x', 'é', '😀', '\u{0}', '/']),
              proptest::sample::select(vec![1024usize, 4096, 65_536 / 4, 65_536]))
            .prop_map(|(c, n)| {
                let mut s = String::new();
                while s.len() + c.len_utf8() <= n { s.push(c) }
                s
            }),
    ]
    .boxed()
}

fn any_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        edge_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("\\PC{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A value nested `depth` levels deep in arrays and objects.
fn deep() -> BoxedStrategy<Value> {
    (1usize..=120, any::<bool>())
        .prop_map(|(depth, objects)| {
            let mut v = json!(1);
            for _ in 0..depth {
                v = if objects {
                    json!({ "a": v })
                } else {
                    json!([v])
                };
            }
            v
        })
        .boxed()
}

/// Numbers at and around the edges of an integer or number schema.
fn edge_number(schema: &Value, integer: bool) -> BoxedStrategy<Value> {
    let mut fixed: Vec<Value> = vec![
        json!(0),
        json!(1),
        json!(-1),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(i32::MAX as i64 + 1),
        json!(u32::MAX as u64 + 1),
    ];
    let min = schema.get("minimum").and_then(Value::as_f64);
    let max = schema.get("maximum").and_then(Value::as_f64);
    for b in [min, max].into_iter().flatten() {
        let b = b as i128;
        fixed.extend([int_value(b - 1), int_value(b), int_value(b + 1)]);
    }
    if !integer {
        fixed.extend([
            json!(0.5),
            json!(-0.0),
            json!(1e308),
            json!(f64::MIN_POSITIVE),
        ]);
    }
    let lo = min.map(|m| m as i64).unwrap_or(-10);
    let hi = max
        .map(|m| m as i64)
        .unwrap_or(lo.saturating_add(100))
        .max(lo);
    let mut alts: Vec<(u32, BoxedStrategy<Value>)> = vec![
        (4, proptest::sample::select(fixed).boxed()),
        (3, (lo..=hi).prop_map(|n| json!(n)).boxed()),
        (1, any::<i64>().prop_map(|n| json!(n)).boxed()),
    ];
    if integer {
        // A float where an integer is expected.
        alts.push((1, Just(json!(1.5)).boxed()));
    } else {
        alts.push((2, any::<f64>().prop_map(|f| json!(f)).boxed()));
    }
    proptest::strategy::Union::new_weighted(alts).boxed()
}

/// Valid-looking values at the edges of `schema` (a property's schema).
fn edge_value(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        if !values.is_empty() {
            return prop_oneof![
                6 => proptest::sample::select(values.clone()),
                1 => edge_string().prop_map(Value::String),
            ]
            .boxed();
        }
    }
    let types = types_of(schema);
    if types.is_empty() {
        return any_json();
    }
    let alts: Vec<BoxedStrategy<Value>> = types
        .iter()
        .map(|t| match t.as_str() {
            "integer" => edge_number(schema, true),
            "number" => edge_number(schema, false),
            "string" => edge_string().prop_map(Value::String).boxed(),
            "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
            "null" => Just(Value::Null).boxed(),
            "array" => {
                let items = schema.get("items").cloned().unwrap_or(json!({}));
                if depth > 2 {
                    Just(json!([])).boxed()
                } else {
                    proptest::collection::vec(edge_value(&items, depth + 1), 0..5)
                        .prop_map(Value::Array)
                        .boxed()
                }
            }
            "object" => {
                if depth > 2 || schema.get("properties").is_none() {
                    prop_oneof![Just(json!({})), any_json()].boxed()
                } else {
                    edge_object(schema, depth + 1)
                }
            }
            _ => any_json(),
        })
        .collect();
    proptest::strategy::Union::new(alts).boxed()
}

/// Something of a type `schema` does not allow (when it can tell).
fn wrong_value(schema: &Value) -> BoxedStrategy<Value> {
    let types = types_of(schema);
    let allows = |v: &Value| -> bool {
        types.iter().any(|t| match t.as_str() {
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            _ => true,
        })
    };
    let candidates: Vec<Value> = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1.5),
        json!("1"),
        json!("NaN"),
        json!([]),
        json!({}),
        json!([1, "a", null]),
        json!({"a": {"b": []}}),
    ]
    .into_iter()
    .filter(|v| types.is_empty() || !allows(v))
    .collect();
    proptest::sample::select(candidates).boxed()
}

/// An object with every required property and some optional ones, each at its edges.
fn edge_object(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let props: Vec<(String, Value)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
        .into_iter()
        .map(|(k, s)| {
            let value = edge_value(&s, depth);
            if required.contains(&k) {
                value.prop_map(move |v| Some((k.clone(), v))).boxed()
            } else {
                proptest::option::of(value.prop_map(move |v| (k.clone(), v))).boxed()
            }
        })
        .collect();
    fields
        .prop_map(|fs| Value::Object(fs.into_iter().flatten().collect::<Map<_, _>>()))
        .boxed()
}

/// A property's name and schema, picked by index.
fn pick(props: &[(String, Value)], i: proptest::sample::Index) -> Option<&(String, Value)> {
    if props.is_empty() {
        None
    } else {
        Some(&props[i.index(props.len())])
    }
}

/// Arguments for a tool with this parameter schema: valid-looking edges and their mutations.
fn arguments(schema: &Value) -> BoxedStrategy<Value> {
    let base = edge_object(schema, 0);
    let props: Arc<Vec<(String, Value)>> = Arc::new(
        schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default(),
    );
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();

    let wrong_type = {
        let props = props.clone();
        let wrongs: Vec<BoxedStrategy<Value>> = props.iter().map(|(_, s)| wrong_value(s)).collect();
        (base.clone(), any::<proptest::sample::Index>(), wrongs).prop_map(move |(mut o, i, ws)| {
            if let (Some((k, _)), Value::Object(m)) = (pick(&props, i), &mut o) {
                m.insert(k.clone(), ws[i.index(ws.len())].clone());
            }
            o
        })
    };
    let missing = {
        let required = required.clone();
        (base.clone(), any::<proptest::sample::Index>()).prop_map(move |(mut o, i)| {
            if let (false, Value::Object(m)) = (required.is_empty(), &mut o) {
                m.remove(&required[i.index(required.len())]);
            }
            o
        })
    };
    let extra = (base.clone(), "\\PC{0,16}", any_json()).prop_map(|(mut o, k, v)| {
        if let Value::Object(m) = &mut o {
            m.insert(k, v);
        }
        o
    });
    let nested = {
        let props = props.clone();
        (base.clone(), any::<proptest::sample::Index>(), deep()).prop_map(move |(mut o, i, d)| {
            if let (Some((k, _)), Value::Object(m)) = (pick(&props, i), &mut o) {
                m.insert(k.clone(), d);
            }
            o
        })
    };
    let huge = {
        let props = props.clone();
        (
            base.clone(),
            any::<proptest::sample::Index>(),
            edge_string(),
        )
            .prop_map(move |(mut o, i, s)| {
                if let (Some((k, _)), Value::Object(m)) = (pick(&props, i), &mut o) {
                    m.insert(k.clone(), Value::String(s));
                }
                o
            })
    };
    let top = prop_oneof![
        Just(Value::Null),
        Just(json!([])),
        Just(json!("{}")),
        Just(json!(0)),
        deep(),
        any_json(),
    ];
    prop_oneof![
        5 => base,
        3 => wrong_type,
        2 => missing,
        2 => extra,
        1 => nested,
        2 => huge,
        1 => top,
    ]
    .boxed()
}

/// Caps the waits of tools that wait by design (see the module documentation).
fn cap_waits(tool: &str, args: &mut Value) {
    const LONG_DEFAULT: &[&str] = &[
        "gpio_wait_edge",
        "serial_read",
        "serial_request",
        "mqtt_wait_message",
        "swarm_call",
        "swarm_broadcast",
    ];
    let Value::Object(m) = args else { return };
    for key in ["timeout_ms", "pulse_ms"] {
        match m.get(key).and_then(Value::as_f64) {
            Some(ms) if ms > 200.0 && ms <= 1e7 => {
                m.insert(key.into(), json!(200));
            }
            None if key == "timeout_ms" && !m.contains_key(key) && LONG_DEFAULT.contains(&tool) => {
                m.insert(key.into(), json!(200));
            }
            _ => {}
        }
    }
    for key in ["timeout_s", "seconds"] {
        if let Some(s) = m.get(key).and_then(Value::as_f64) {
            if s > 1.0 && s <= 1e7 {
                m.insert(key.into(), json!(1));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The check.

fn next_session() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Calls `tool` on `path` on its own thread; the call must return in time, without a panic,
/// as a result or a structured error.
fn check(rt: &Arc<Runtime>, path: usize, tool: &str, args: Value) -> Result<(), TestCaseError> {
    let (via, name, args) = match path {
        0 => (Via::Direct, tool, args),
        1 => (
            Via::Direct,
            "tool_call",
            json!({"name": tool, "arguments": args}),
        ),
        2 => (Via::Schedule, tool, args),
        3 => (Via::Watch, tool, args),
        4 => (Via::Mqtt, tool, args),
        _ => (Via::Remote, tool, args),
    };
    let shown = {
        let s = args.to_string();
        if s.len() > 300 {
            format!(
                "{}… ({} bytes)",
                s.chars().take(300).collect::<String>(),
                s.len()
            )
        } else {
            s
        }
    };
    let (tx, rx) = mpsc::channel();
    let worker = {
        let rt = rt.clone();
        let name = name.to_string();
        std::thread::Builder::new()
            .name(format!("call-{name}"))
            .spawn(move || {
                // A fresh session per call: a generated `plan_update` must not leave the other
                // calls in plan mode.
                let session = Session::new(format!("adversarial-{}", next_session()), "cli");
                let r = rt.call(&session, via, &name, args);
                let _ = tx.send(r);
            })
            .expect("spawn")
    };
    let t0 = Instant::now();
    match rx.recv_timeout(DEADLINE) {
        Ok(Ok(_)) => {
            let _ = worker.join();
            Ok(())
        }
        Ok(Err(CallError::Respond(e))) => {
            let _ = worker.join();
            let j = e.to_json();
            if j["error"]["kind"].is_string() {
                Ok(())
            } else {
                Err(TestCaseError::fail(format!(
                    "{tool} via {via:?}/{name}: unstructured error {j} for {shown}"
                )))
            }
        }
        Ok(Err(CallError::Fatal(f))) => Err(TestCaseError::fail(format!(
            "{tool} via {via:?}/{name}: fatal {f} for {shown}"
        ))),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let panic = worker.join().err().map(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            });
            Err(TestCaseError::fail(format!(
                "{tool} via {via:?}/{name}: panicked ({panic:?}) for {shown}"
            )))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(TestCaseError::fail(format!(
            "{tool} via {via:?}/{name}: no answer after {:?} (hang) for {shown}",
            t0.elapsed()
        ))),
    }
}

/// Every tool, `cases` generated cases each, on one call path.
fn run_path(path: usize, broker: bool) {
    let home = tempfile::tempdir().unwrap();
    let rt = Arc::new(runtime(home.path(), broker));
    let tools: Vec<_> = covo_core::catalog::all().collect();
    let per_tool = total_cases().div_ceil((PATHS * tools.len()) as u32).max(1);
    let started = Instant::now();
    for spec in &tools {
        let schema: Value = serde_json::from_str(spec.params).unwrap();
        let strategy = arguments(&schema);
        let mut runner = TestRunner::new(RunnerConfig {
            cases: per_tool,
            failure_persistence: None,
            max_shrink_iters: 256,
            ..RunnerConfig::default()
        });
        let name = spec.name;
        let result = runner.run(&strategy, |mut args| {
            cap_waits(name, &mut args);
            check(&rt, path, name, args)
        });
        if let Err(e) = result {
            panic!("{name} on path {path}: {e}");
        }
    }
    eprintln!(
        "path {path}: {} tools x {per_tool} cases = {} cases in {:?}",
        tools.len(),
        tools.len() as u32 * per_tool,
        started.elapsed()
    );
    if std::env::var_os("COVO_ADVERSARIAL_STATS").is_some() {
        let conn = rt.store().unwrap().conn();
        let mut q = conn
            .prepare("SELECT tool, outcome || ' ' || substr(coalesce(max(detail), ''), 1, 160), count(*) FROM audit GROUP BY tool, outcome ORDER BY tool")
            .unwrap();
        let rows = q
            .query_map([], |r| {
                Ok(format!(
                    "{} {} {}",
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?
                ))
            })
            .unwrap();
        for row in rows {
            eprintln!("path {path}: {}", row.unwrap());
        }
    }
}

#[test]
fn direct() {
    run_path(0, false);
}

#[test]
fn through_tool_call() {
    run_path(1, false);
}

#[test]
fn schedule() {
    run_path(2, false);
}

#[test]
fn watch() {
    run_path(3, false);
}

#[test]
fn mqtt() {
    run_path(4, false);
}

#[test]
fn remote() {
    run_path(5, false);
}

/// The direct path again with `[mqtt]` configured and no broker listening: the broker and
/// swarm tools get past "unavailable" into their executors.
#[test]
fn direct_with_an_unreachable_broker() {
    run_path(0, true);
}
