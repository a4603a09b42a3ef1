//! The background sampler calls `sensor_read` through the pipeline as `Via::Sampler`: the board
//! policy, `[policy] read_only` and the audit log apply to it as to any call, once, in the
//! pipeline. Watches fired by a reading run their actions one level deeper than the call that
//! took it, so a watch whose action reads the sensor that fires it stops at the depth limit.

use covo::config::Config;
use covo::exec::Session;
use covo::hardware::Board;
use covo::runtime::{AutoApprove, Runtime, Via};
use covo::store::{NewWatch, Op, Rule, Store};
use covo_board::board::BoardDef;
use covo_core::catalog::sensors::SENSOR_READ;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::sim::SimBoard;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

fn runtime_with(def: BoardDef, config: Config) -> (Runtime, SimBoard) {
    let sim = SimBoard::new();
    let hw = Hardware::sim_with(def, sim.clone());
    hw.skip_driver_delays(true);
    let mut opts = covo::tools::options(config);
    opts.board = Some(Arc::new(Board::with_hardware(hw)));
    opts.approver = Box::new(AutoApprove);
    (
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
        sim,
    )
}

/// The audit log: (session, via, tool, outcome, detail), oldest first.
fn audit(rt: &Runtime) -> Vec<(String, String, String, String, Option<String>)> {
    let store = rt.store().unwrap();
    let conn = store.conn();
    let mut stmt = conn
        .prepare("SELECT session, via, tool, outcome, detail FROM audit ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn the_samplers_readings_are_audited_as_sampler_calls_of_sensor_read() {
    let (rt, sim) = runtime_with(BoardDef::sim(), Config::default());
    let mut last = HashMap::new();
    let sampled = covo::tools::readings::sample_due_readings(&rt, &mut last, Some(1));
    assert_eq!(sampled.len(), 2, "{sampled:?}");
    assert!(sampled.iter().all(|(_, r)| r.is_ok()), "{sampled:?}");
    assert!(!sim.i2c_transfers().is_empty());
    let log = audit(&rt);
    assert_eq!(log.len(), 2, "{log:?}");
    for ((session, via, tool, outcome, _), sensor) in log.iter().zip(["climate", "light"]) {
        assert_eq!(via, "sampler");
        assert_eq!(session, covo::tools::readings::SAMPLER_SESSION);
        assert_eq!(tool, SENSOR_READ.name);
        assert_eq!(outcome, "ok", "{sensor}");
    }
    // Stored like any reading.
    assert!(!rt
        .store()
        .unwrap()
        .readings(
            "climate",
            None,
            "2000-01-01T00:00:00Z",
            "2999-01-01T00:00:00Z"
        )
        .unwrap()
        .is_empty());
}

#[test]
fn on_a_read_only_board_the_pipeline_refuses_the_samplers_readings_and_nothing_reaches_the_bus() {
    let mut def = BoardDef::sim();
    def.policy.read_only = true;
    let (rt, sim) = runtime_with(def, Config::default());
    let mut last = HashMap::new();
    let sampled = covo::tools::readings::sample_due_readings(&rt, &mut last, Some(1));
    assert_eq!(sampled.len(), 2, "{sampled:?}");
    for (name, r) in &sampled {
        let e = r.as_ref().unwrap_err();
        assert!(e.contains("board.read_only"), "{name}: {e}");
    }
    assert!(sim.i2c_transfers().is_empty(), "{:?}", sim.i2c_transfers());
    assert_eq!(sim.i2c(1).unwrap().transaction_count(), 0);
    let log = audit(&rt);
    assert_eq!(log.len(), 2, "{log:?}");
    for (_, via, tool, outcome, detail) in &log {
        assert_eq!((via.as_str(), tool.as_str()), ("sampler", SENSOR_READ.name));
        assert_eq!(outcome, "policy_refused", "{detail:?}");
    }
}

#[test]
fn the_sampler_runs_nothing_but_sensor_read() {
    let (rt, sim) = runtime_with(BoardDef::sim(), Config::default());
    let s = Session::new("sampler", "sampler");
    let r = rt.call(
        &s,
        Via::Sampler,
        covo_core::catalog::gpio::GPIO_WRITE.name,
        json!({"pin": "relay", "level": 1}),
    );
    let e = r.unwrap_err().to_string();
    assert!(e.contains("sampler"), "{e}");
    assert!(
        sim.output_log(17).is_empty(),
        "the relay (GPIO17) was driven"
    );
}

/// Watches whose action is `sensor_read` of the sensor that fires them: each action's reading
/// fires the next one a level deeper, and the pipeline refuses the call beyond the limit.
#[test]
fn a_watch_whose_action_reads_its_own_sensor_stops_at_the_depth_limit() {
    let (rt, _sim) = runtime_with(BoardDef::sim(), Config::default());
    let store = rt.store().unwrap();
    let args = json!({"sensor": "climate"});
    let watches = usize::from(covo::exec::MAX_DEPTH) + 3;
    for _ in 0..watches {
        store
            .create_watch(&NewWatch {
                sensor: "climate",
                quantity: "temperature",
                rule: Rule {
                    op: Op::Gt,
                    threshold: -100.0,
                    for_secs: 0,
                    hysteresis: 0.0,
                },
                message: None,
                tool: Some(SENSOR_READ.name),
                arguments: Some(&args),
                session: "loop",
                channel: "cli",
            })
            .unwrap();
    }
    let s = Session::new("loop", "cli");
    let r = rt
        .call(&s, Via::Direct, SENSOR_READ.name, args.clone())
        .unwrap();
    assert!(!r["watches_fired"].as_array().unwrap().is_empty(), "{r}");
    let log = audit(&rt);
    let refused: Vec<_> = log
        .iter()
        .filter(|(_, _, _, outcome, _)| outcome != "ok")
        .collect();
    assert!(!refused.is_empty(), "no call was refused: {log:?}");
    for (_, via, tool, _, detail) in &refused {
        assert_eq!((via.as_str(), tool.as_str()), ("watch", SENSOR_READ.name));
        let detail = detail.as_deref().unwrap_or_default();
        assert!(
            detail.contains(&format!("nested {} deep", covo::exec::MAX_DEPTH + 1)),
            "{detail}"
        );
    }
    // Every reading that ran: the direct one, and watch actions at depths 1..=MAX_DEPTH.
    let ran = log
        .iter()
        .filter(|(_, via, _, outcome, _)| via == "watch" && outcome == "ok")
        .count();
    assert!(ran >= usize::from(covo::exec::MAX_DEPTH), "{log:?}");
}
