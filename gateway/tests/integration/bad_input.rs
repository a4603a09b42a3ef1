//! Bad input never panics or hangs: out-of-range windows and waits are structured errors the
//! model can act on, on every call path, and each call still leaves its audit row.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn runtime(config: Config) -> Runtime {
    Runtime::new(covo::tools::options(config))
        .unwrap()
        .with_store(Store::in_memory().unwrap())
}

/// `tool` called directly and through `tool_call`, each under a deadline: both must come back
/// as `invalid_arguments` pointing at `pointer`.
fn refused_everywhere(rt: &Runtime, tool: &str, args: Value, pointer: &str) {
    let s = Session::new("bad", "cli");
    for (via, name, a) in [
        (Via::Direct, tool, args.clone()),
        (Via::Schedule, tool, args.clone()),
        (
            Via::Direct,
            "tool_call",
            json!({"name": tool, "arguments": args.clone()}),
        ),
    ] {
        let t0 = Instant::now();
        match rt.call(&s, via, name, a) {
            Err(CallError::Respond(ToolError::InvalidArguments { problems, .. })) => {
                assert!(
                    problems.iter().any(|p| p.path.ends_with(pointer)),
                    "{tool} via {via:?}/{name}: {problems:?}"
                );
            }
            other => panic!("{tool} via {via:?}/{name}: expected invalid_arguments, got {other:?}"),
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{tool} took {:?}",
            t0.elapsed()
        );
    }
    let audited: i64 = rt
        .store()
        .unwrap()
        .conn()
        .query_row(
            "SELECT count(*) FROM audit WHERE tool = ?1 AND outcome = 'invalid_arguments'",
            [tool],
            |r| r.get(0),
        )
        .unwrap();
    assert!(audited >= 2, "{tool}: {audited} audit rows");
}

#[test]
fn an_absurd_history_window_is_an_argument_error_not_a_panic() {
    let rt = runtime(Config::default());
    for tool in ["sensor_history", "sensor_export_csv"] {
        for w in ["100000000d", "9999999999w", "3651d", "999999999999h"] {
            refused_everywhere(
                &rt,
                tool,
                json!({"sensor": "climate", "window": w}),
                "/window",
            );
        }
        // The longest window still works, even from the earliest time chrono represents well.
        let s = Session::new("ok", "cli");
        let r = rt
            .call(
                &s,
                Via::Direct,
                tool,
                json!({"sensor": "climate", "window": "3650d", "until": "0001-01-01T00:00:00Z"}),
            )
            .unwrap();
        assert!(r.is_object(), "{r}");
    }
}

#[test]
fn a_watch_duration_past_the_longest_window_is_refused() {
    let rt = runtime(Config::default());
    let s = Session::new("w", "cli");
    let r = rt.call(
        &s,
        Via::Direct,
        "watch_create",
        json!({"sensor": "climate", "quantity": "temperature", "op": ">", "threshold": 30,
               "for": "100000000d"}),
    );
    match r {
        Err(CallError::Respond(ToolError::InvalidArguments { problems, .. })) => {
            assert!(problems.iter().any(|p| p.path == "/for"), "{problems:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn mqtt_wait_message_has_an_upper_bound_on_its_wait_and_its_count() {
    // A broker is configured (so the tool is available) but none listens: the schema refuses
    // the call before anything connects or waits.
    let mut config = Config::default();
    config.mqtt = Some(covo::config::MqttConfig {
        url: Some("mqtt://127.0.0.1:9".into()),
        ..Default::default()
    });
    let rt = runtime(config);
    for ms in [2_147_483_648u64, 300_001, u64::MAX] {
        refused_everywhere(
            &rt,
            "mqtt_wait_message",
            json!({"topic": "a/b", "timeout_ms": ms}),
            "/timeout_ms",
        );
    }
    refused_everywhere(
        &rt,
        "mqtt_wait_message",
        json!({"topic": "a/b", "count": 1_000_000}),
        "/count",
    );
}
