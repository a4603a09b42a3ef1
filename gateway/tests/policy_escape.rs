//! Policy escapes, judged by what reaches the simulated bus.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::hardware::Board;
use covo::runtime::{AutoApprove, Runtime, Via};
use covo::store::Store;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::sim::{Environment, SimBoard, Transfer};
use serde_json::{json, Value};
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

/// A runtime on `def` that lets other gateways call every tool, so that `Via::Remote` meets
/// the board policy rather than `[swarm] expose`.
fn runtime(def: BoardDef) -> (Runtime, SimBoard) {
    let mut config = Config::default();
    config.swarm.expose = Some(vec!["*".into()]);
    runtime_with(def, config)
}

fn session() -> Session {
    Session::new("escape", "cli")
}

fn refusal(r: &Result<Value, CallError>) -> Option<&str> {
    match r {
        Err(CallError::Respond(ToolError::PolicyRefused { rule, .. })) => Some(rule),
        _ => None,
    }
}

// The defects that started this suite, one test each.

#[test]
fn i2c_write_read_with_a_longer_write_must_pass_the_i2c_write_allowlist() {
    let (rt, sim) = runtime(BoardDef::sim());
    let before = sim.i2c_transfers();
    let r = rt.call(
        &session(),
        Via::Direct,
        "i2c_write_read",
        json!({"address": "0x50", "data": "00 ff", "count": 1}),
    );
    assert_eq!(refusal(&r), Some("i2c.write_allow"), "{r:?}");
    assert_eq!(sim.i2c_transfers(), before, "nothing reached the bus");
}

#[test]
fn read_only_refuses_a_write_read_that_writes_a_register_but_not_a_register_pointer() {
    let mut def = BoardDef::sim();
    def.policy.read_only = true;
    let (rt, sim) = runtime(def);
    let s = session();
    for data in ["f5 e0", "e0 b6"] {
        let r = rt.call(
            &s,
            Via::Direct,
            "i2c_write_read",
            json!({"address": "0x76", "data": data, "count": 1}),
        );
        assert_eq!(refusal(&r), Some("board.read_only"), "{data}: {r:?}");
    }
    assert!(sim.i2c_transfers().is_empty(), "{:?}", sim.i2c_transfers());
    let v = rt
        .call(
            &s,
            Via::Direct,
            "i2c_write_read",
            json!({"address": "0x76", "data": "d0", "count": 1}),
        )
        .unwrap();
    assert_eq!(v["read"]["hex"], "60");
    assert_eq!(
        sim.i2c_transfers(),
        [Transfer {
            address: 0x76,
            written: vec![0xd0],
            read: 1
        }]
    );
}

#[test]
fn i2c_read_register_counts_bytes_and_sends_a_one_byte_pointer() {
    let (rt, sim) = runtime(BoardDef::sim());
    let s = session();
    // 3000 16-bit registers are 6000 bytes: more than the sim's 4096 in one transfer.
    let r = rt.call(
        &s,
        Via::Direct,
        "i2c_read_register",
        json!({"address": "0x76", "register": 0, "width": 16, "count": 3000}),
    );
    assert_eq!(refusal(&r), Some("transfer.max"), "{r:?}");
    assert!(sim.i2c_transfers().is_empty());
    // 16-bit values behind an 8-bit register address: the pointer is one byte.
    let v = rt
        .call(
            &s,
            Via::Direct,
            "i2c_read_register",
            json!({"address": "0x76", "register": "0x88", "width": 16, "count": 2}),
        )
        .unwrap();
    assert_eq!(
        sim.i2c_transfers(),
        [Transfer {
            address: 0x76,
            written: vec![0x88],
            read: 4
        }]
    );
    let regs = v["registers"].as_array().unwrap();
    assert_eq!(regs.len(), 2, "{v}");
    assert_eq!(
        regs[0]["register"], "0x88",
        "an 8-bit register address: {v}"
    );
    assert_eq!(
        regs[0]["hex"].as_str().unwrap().len(),
        6,
        "a 16-bit value: {v}"
    );
}

#[test]
fn a_sixteen_bit_register_address_is_a_two_byte_write() {
    let mut def = BoardDef::sim();
    def.policy.read_only = true;
    let (rt, sim) = runtime(def);
    let r = rt.call(
        &session(),
        Via::Direct,
        "i2c_read_register",
        json!({"address": "0x76", "register": "0x00d0", "register_width": 16}),
    );
    assert_eq!(refusal(&r), Some("board.read_only"), "{r:?}");
    assert!(sim.i2c_transfers().is_empty());
    let (rt, sim) = runtime(BoardDef::sim());
    let r = rt.call(
        &session(),
        Via::Direct,
        "i2c_read_register",
        json!({"address": "0x50", "register": "0x0100", "register_width": 16}),
    );
    assert_eq!(refusal(&r), Some("i2c.write_allow"), "{r:?}");
    assert!(sim.i2c_transfers().is_empty());
}

/// The gateway-wide `[policy] read_only` and `[swarm] expose` judge a call by what it writes
/// too, not only by its tool's effect.
#[test]
fn gateway_read_only_and_swarm_expose_see_the_write_in_a_write_read() {
    let mut config = Config::default();
    config.policy.read_only = true;
    let (rt, sim) = runtime_with(BoardDef::sim(), config);
    let s = session();
    let r = rt.call(
        &s,
        Via::Direct,
        "i2c_write_read",
        json!({"address": "0x76", "data": "f5 e0", "count": 1}),
    );
    assert_eq!(refusal(&r), Some("read_only"), "{r:?}");
    assert!(sim.i2c_transfers().is_empty());
    rt.call(
        &s,
        Via::Direct,
        "i2c_write_read",
        json!({"address": "0x76", "data": "d0", "count": 1}),
    )
    .unwrap();
    // Default `[swarm] expose`: other gateways may call read tools, and a write is not one.
    let (rt, sim) = runtime_with(BoardDef::sim(), Config::default());
    let r = rt.call(
        &s,
        Via::Remote,
        "i2c_write_read",
        json!({"address": "0x76", "data": "f5 e0", "count": 1}),
    );
    assert_eq!(refusal(&r), Some("swarm.expose"), "{r:?}");
    assert!(sim.i2c_transfers().is_empty());
    rt.call(
        &s,
        Via::Remote,
        "i2c_read_register",
        json!({"address": "0x76", "register": "0xd0"}),
    )
    .unwrap();
}

/// A watch that fires a write-read runs it through the board policy like any other call.
#[test]
fn a_watch_firing_a_write_read_cannot_write_past_the_allowlist() {
    let (rt, sim) = runtime(BoardDef::sim());
    let s = session();
    sim.set_environment(Environment {
        temperature_c: 31.0,
        ..sim.environment()
    });
    rt.call(
        &s,
        Via::Direct,
        "watch_create",
        json!({"sensor": "climate", "quantity": "temperature", "op": ">", "threshold": 30,
               "action": "tool", "tool": "i2c_write_read",
               "arguments": {"address": "0x50", "data": "00 ff", "count": 1}}),
    )
    .unwrap();
    let r = rt
        .call(&s, Via::Direct, "sensor_read", json!({"sensor": "climate"}))
        .unwrap();
    let fired = r["watches_fired"][0].as_str().unwrap_or_default();
    assert!(fired.contains("i2c.write_allow"), "{r}");
    assert!(
        sim.i2c_transfers().iter().all(|t| t.address != 0x50),
        "{:?}",
        sim.i2c_transfers()
    );
}
