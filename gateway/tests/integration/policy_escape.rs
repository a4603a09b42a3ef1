//! Policy escapes: every hardware tool that can write, on every path into the pipeline, under
//! a permissive board, a restrictive one and a read-only one, judged by what reaches the
//! simulated bus. A refused call must leave every bus as it was; an allowed one must reach it
//! with exactly the bytes the policy judged.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::hardware::Board;
use covo::runtime::{AutoApprove, Runtime, Via};
use covo::store::Store;
use covo_board::board::{BoardDef, I2cWriteAllow, SpiDef};
use covo_hal_tools::bus::Pwm;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::sim::{Environment, SimBoard, Transfer};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Pseudo-terminal creation (the sim's microcontroller) is not thread-safe: tests that may
/// connect to it take this lock.
static PTY: Mutex<()> = Mutex::new(());

/// The sim board with an SPI device declared (the sim models no SPI device, so SPI calls that
/// pass the policy fail in the executor; what the policy decides is still visible).
fn sim_def() -> BoardDef {
    let mut d = BoardDef::sim();
    d.spi.push(SpiDef {
        bus: 0,
        cs: 0,
        path: None,
        max_speed_hz: None,
    });
    d
}

/// Writes also to 0x50, GPIO4 is an output.
fn permissive() -> BoardDef {
    let mut d = sim_def();
    d.policy.i2c_write_allow.push(I2cWriteAllow {
        bus: 1,
        addresses: vec![0x50],
    });
    d.policy.outputs.push(4);
    d
}

/// The sim's allowlists, 16-byte transfers, the fan at most half on.
fn restrictive() -> BoardDef {
    let mut d = sim_def();
    d.policy.max_transfer = Some(16);
    d.policy.pwm[0].max_duty = 0.5;
    d
}

/// The sim's allowlists, read-only.
fn read_only() -> BoardDef {
    let mut d = sim_def();
    d.policy.read_only = true;
    d
}

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

/// Everything the sim lets us see of what reached its buses.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    i2c_count: u64,
    i2c: Vec<Transfer>,
    gpio: Vec<usize>,
    pwm: (f64, f64),
    serial: u64,
    mcu_requests: Option<u64>,
}

fn seen(rt: &Runtime, sim: &SimBoard) -> Seen {
    let hw = rt.board().hardware().unwrap();
    Seen {
        i2c_count: sim.i2c(1).unwrap().transaction_count(),
        i2c: sim.i2c_transfers(),
        gpio: (2..=27).map(|p| sim.output_log(p).len()).collect(),
        pwm: sim.pwm(0).unwrap().get(),
        serial: sim.serial("echo").unwrap().bytes_written(),
        mcu_requests: hw.mcu_status("pico").map(|(_, s)| s.requests),
    }
}

/// The fan at a setting no tool call can give it (1 Hz is below every limit).
fn reset_fan(sim: &SimBoard) {
    sim.pwm(0).unwrap().set(1.0, 0.0).unwrap();
}

/// The paths into the pipeline.
#[derive(Debug, Clone, Copy)]
enum Path {
    Direct,
    ToolCall,
    Schedule,
    Watch,
    Mqtt,
    Remote,
}

const PATHS: [Path; 6] = [
    Path::Direct,
    Path::ToolCall,
    Path::Schedule,
    Path::Watch,
    Path::Mqtt,
    Path::Remote,
];

fn call(rt: &Runtime, path: Path, tool: &str, args: &Value) -> Result<Value, CallError> {
    let s = session();
    let via = match path {
        Path::ToolCall => {
            return rt.call(
                &s,
                Via::Direct,
                "tool_call",
                json!({"name": tool, "arguments": args}),
            )
        }
        Path::Direct => Via::Direct,
        Path::Schedule => Via::Schedule,
        Path::Watch => Via::Watch,
        Path::Mqtt => Via::Mqtt,
        Path::Remote => Via::Remote,
    };
    rt.call(&s, via, tool, args.clone())
}

fn refusal(r: &Result<Value, CallError>) -> Option<&str> {
    match r {
        Err(CallError::Respond(ToolError::PolicyRefused { rule, .. })) => Some(rule),
        _ => None,
    }
}

/// What a call must do on one board.
#[derive(Debug, Clone)]
enum Want {
    /// Pass the policy and put exactly these I2C transactions on the bus (address, bytes
    /// written, bytes read); the device may NACK.
    Wire(Vec<(u8, Vec<u8>, usize)>),
    /// Pass the policy and change what some bus shows (GPIO, PWM, serial, the MCU link).
    Bus,
    /// Pass the policy; the sim has nothing to show (SPI), so the call fails in the executor.
    Passes,
    /// Be refused by this rule, with every bus left as it was.
    Refused(&'static str),
}

use Want::*;

const RO: Want = Refused("board.read_only");

fn wire(address: u8, written: &[u8], read: usize) -> Want {
    Wire(vec![(address, written.to_vec(), read)])
}

/// One call and what it must do on the permissive, restrictive and read-only boards.
struct Case {
    tool: &'static str,
    args: Value,
    want: [Want; 3],
}

fn case(tool: &'static str, args: Value, want: [Want; 3]) -> Case {
    Case { tool, args, want }
}

fn cases() -> Vec<Case> {
    let seventeen = vec![0u8; 17];
    vec![
        // i2c_write: the write allowlist, reserved addresses, transfer size, read-only.
        case(
            "i2c_write",
            json!({"address": "0x76", "data": "f4 27"}),
            [
                wire(0x76, &[0xf4, 0x27], 0),
                wire(0x76, &[0xf4, 0x27], 0),
                RO,
            ],
        ),
        case(
            "i2c_write",
            json!({"address": 118, "data": [0xf4, 0x27]}),
            [
                wire(0x76, &[0xf4, 0x27], 0),
                wire(0x76, &[0xf4, 0x27], 0),
                RO,
            ],
        ),
        case(
            "i2c_write",
            json!({"address": "0x50", "data": "00 ff"}),
            [wire(0x50, &[0x00, 0xff], 0), Refused("i2c.write_allow"), RO],
        ),
        case(
            "i2c_write",
            json!({"address": "0x03", "data": "00"}),
            [Refused("i2c.reserved"), Refused("i2c.reserved"), RO],
        ),
        case(
            "i2c_write",
            json!({"bus": 1, "address": "0x76", "data": seventeen}),
            [wire(0x76, &seventeen, 0), Refused("transfer.max"), RO],
        ),
        // i2c_write_read: a one-byte register pointer is a read; a longer write is a write.
        case(
            "i2c_write_read",
            json!({"address": "0x50", "data": "00 ff", "count": 1}),
            [wire(0x50, &[0x00, 0xff], 1), Refused("i2c.write_allow"), RO],
        ),
        case(
            "i2c_write_read",
            json!({"address": "0x76", "data": "f5 e0", "count": 1}),
            [
                wire(0x76, &[0xf5, 0xe0], 1),
                wire(0x76, &[0xf5, 0xe0], 1),
                RO,
            ],
        ),
        case(
            "i2c_write_read",
            json!({"address": 118, "data": [0xe0, 0xb6], "count": 1}),
            [
                wire(0x76, &[0xe0, 0xb6], 1),
                wire(0x76, &[0xe0, 0xb6], 1),
                RO,
            ],
        ),
        case(
            "i2c_write_read",
            json!({"address": "0x76", "data": "d0", "count": 1}),
            [
                wire(0x76, &[0xd0], 1),
                wire(0x76, &[0xd0], 1),
                wire(0x76, &[0xd0], 1),
            ],
        ),
        case(
            "i2c_write_read",
            json!({"address": "0x50", "data": "00", "count": 1}),
            [
                wire(0x50, &[0x00], 1),
                wire(0x50, &[0x00], 1),
                wire(0x50, &[0x00], 1),
            ],
        ),
        case(
            "i2c_write_read",
            json!({"address": "0x76", "data": "88", "count": 32}),
            [
                wire(0x76, &[0x88], 32),
                Refused("transfer.max"),
                wire(0x76, &[0x88], 32),
            ],
        ),
        case(
            "i2c_write_read",
            json!({"address": "0x76", "data": seventeen, "count": 1}),
            [wire(0x76, &seventeen, 1), Refused("transfer.max"), RO],
        ),
        case(
            "i2c_write_read",
            json!({"address": "0x03", "data": "d0", "count": 1}),
            [
                Refused("i2c.reserved"),
                Refused("i2c.reserved"),
                Refused("i2c.reserved"),
            ],
        ),
        // i2c_read_register: the transfer is counted in bytes; the pointer is one byte unless
        // the call asks for a 16-bit register address, which is a two-byte write.
        case(
            "i2c_read_register",
            json!({"address": "0x76", "register": "0xd0"}),
            [
                wire(0x76, &[0xd0], 1),
                wire(0x76, &[0xd0], 1),
                wire(0x76, &[0xd0], 1),
            ],
        ),
        case(
            "i2c_read_register",
            json!({"address": "0x76", "register": "0x88", "width": 16, "count": 4}),
            [
                wire(0x76, &[0x88], 8),
                wire(0x76, &[0x88], 8),
                wire(0x76, &[0x88], 8),
            ],
        ),
        case(
            "i2c_read_register",
            json!({"address": "0x76", "register": "0x88", "width": 16, "count": 10}),
            [
                wire(0x76, &[0x88], 20),
                Refused("transfer.max"),
                wire(0x76, &[0x88], 20),
            ],
        ),
        case(
            "i2c_read_register",
            json!({"address": "0x76", "register": 0, "width": 16, "count": 3000}),
            [
                Refused("transfer.max"),
                Refused("transfer.max"),
                Refused("transfer.max"),
            ],
        ),
        case(
            "i2c_read_register",
            json!({"address": "0x50", "register": "0x0100", "register_width": 16}),
            [wire(0x50, &[0x01, 0x00], 1), Refused("i2c.write_allow"), RO],
        ),
        // SPI always writes.
        case(
            "spi_transfer",
            json!({"data": "9f 00 00"}),
            [Passes, Passes, RO],
        ),
        case("spi_write", json!({"data": "06"}), [Passes, Passes, RO]),
        case(
            "spi_write",
            json!({"data": seventeen}),
            [Passes, Refused("transfer.max"), RO],
        ),
        // GPIO by declared name and by number.
        case(
            "gpio_write",
            json!({"pin": "relay", "level": 1}),
            [Bus, Bus, RO],
        ),
        case("gpio_write", json!({"pin": 17, "level": 0}), [Bus, Bus, RO]),
        case(
            "gpio_write",
            json!({"pin": 4, "level": 1}),
            [Bus, Refused("gpio.outputs"), RO],
        ),
        case(
            "gpio_write",
            json!({"pin": "button", "level": 1}),
            [Refused("gpio.outputs"), Refused("gpio.outputs"), RO],
        ),
        case(
            "gpio_write",
            json!({"pin": 27, "level": 1}),
            [Refused("gpio.outputs"), Refused("gpio.outputs"), RO],
        ),
        // PWM by declared name and by number.
        case(
            "pwm_set",
            json!({"channel": "fan", "duty": 0.3, "frequency_hz": 25000}),
            [Bus, Bus, RO],
        ),
        case(
            "pwm_set",
            json!({"channel": 0, "duty": 0.8, "frequency_hz": 25000}),
            [Bus, Refused("pwm.limits"), RO],
        ),
        case(
            "pwm_set",
            json!({"channel": "fan", "duty": 0.3, "frequency_hz": 100000}),
            [Refused("pwm.limits"), Refused("pwm.limits"), RO],
        ),
        // Serial by declared name and by path.
        case(
            "serial_write",
            json!({"port": "echo", "text": "hi\n"}),
            [Bus, Bus, RO],
        ),
        case(
            "serial_write",
            json!({"port": "sim:echo", "hex": "68 69 0a"}),
            [Bus, Bus, RO],
        ),
        case(
            "serial_write",
            json!({"port": "pico", "text": "x"}),
            [Refused("serial.allow"), Refused("serial.allow"), RO],
        ),
        case(
            "serial_write",
            json!({"port": "sim:mcu", "text": "x"}),
            [Refused("serial.allow"), Refused("serial.allow"), RO],
        ),
        case(
            "serial_request",
            json!({"port": "echo", "text": "AT"}),
            [Bus, Bus, RO],
        ),
        case(
            "serial_request",
            json!({"port": "sim:echo", "text": "AT"}),
            [Bus, Bus, RO],
        ),
        case(
            "serial_request",
            json!({"port": "pico", "text": "AT"}),
            [Refused("serial.allow"), Refused("serial.allow"), RO],
        ),
        // The display draws over I2C in 17-byte transfers (a control byte and 16 of GDDRAM):
        // more than the restrictive board's 16.
        case(
            "display_text",
            json!({"lines": ["escape"]}),
            [Bus, Refused("transfer.max"), RO],
        ),
        case(
            "display_clear",
            json!({}),
            [Bus, Refused("transfer.max"), RO],
        ),
        // A sensor reading writes the driver's commands (the BME280: a soft reset, its
        // settings and a forced conversion; the BH1750: power-on and a measurement command),
        // and the BME280 reads its calibration in one 26-byte transfer.
        case(
            "sensor_read",
            json!({"sensor": "climate"}),
            [Bus, Refused("transfer.max"), RO],
        ),
        case("sensor_read", json!({"sensor": "light"}), [Bus, Bus, RO]),
        // The microcontroller, by declared name and as the board's only one.
        case(
            "mcu_gpio_write",
            json!({"pin": 25, "level": 1}),
            [Bus, Bus, RO],
        ),
        case(
            "mcu_gpio_write",
            json!({"device": "pico", "pin": 25, "level": 0}),
            [Bus, Bus, RO],
        ),
        case(
            "mcu_gpio_write",
            json!({"device": "pico", "pin": 3, "level": 1}),
            [Refused("mcu.outputs"), Refused("mcu.outputs"), RO],
        ),
        case(
            "mcu_pwm_set",
            json!({"pin": 15, "duty": 0.25, "frequency_hz": 1000}),
            [Bus, Bus, RO],
        ),
        case(
            "mcu_pwm_set",
            json!({"device": "pico", "pin": 15, "duty": 0.5, "frequency_hz": 500000}),
            [Refused("mcu.pwm"), Refused("mcu.pwm"), RO],
        ),
        case(
            "mcu_i2c_transfer",
            json!({"address": "0x48", "data": "00", "count": 2}),
            [Bus, Bus, RO],
        ),
        case(
            "mcu_i2c_transfer",
            json!({"device": "pico", "address": "0x50", "data": "00"}),
            [
                Refused("mcu.i2c_write_allow"),
                Refused("mcu.i2c_write_allow"),
                RO,
            ],
        ),
        case(
            "mcu_i2c_transfer",
            json!({"address": "0x48", "count": 2}),
            [Bus, Bus, Bus],
        ),
    ]
}

/// Runs every case on every path on one board; `which` picks the case's expectation.
fn run_matrix(def: BoardDef, which: usize) {
    let _pty = PTY.lock().unwrap_or_else(|p| p.into_inner());
    let (rt, sim) = runtime(def);
    let mut failures = Vec::new();
    for path in PATHS {
        for c in cases() {
            reset_fan(&sim);
            let before = seen(&rt, &sim);
            let r = call(&rt, path, c.tool, &c.args);
            let after = seen(&rt, &sim);
            let what = format!("{path:?} {} {}", c.tool, c.args);
            match &c.want[which] {
                Refused(rule) => {
                    if refusal(&r) != Some(*rule) {
                        failures.push(format!("{what}: want refused by {rule}, got {r:?}"));
                    }
                    if after != before {
                        failures.push(format!(
                            "{what}: refused, yet the bus changed: {before:?} -> {after:?}"
                        ));
                    }
                }
                want => {
                    if let Some(rule) = refusal(&r) {
                        failures.push(format!("{what}: want {want:?}, refused by {rule}"));
                        continue;
                    }
                    match want {
                        Wire(expected) => {
                            let new = &after.i2c[before.i2c.len()..];
                            let got: Vec<(u8, Vec<u8>, usize)> = new
                                .iter()
                                .map(|t| (t.address, t.written.clone(), t.read))
                                .collect();
                            if &got != expected {
                                failures.push(format!(
                                    "{what}: want {expected:?} on the bus, got {got:?} ({r:?})"
                                ));
                            }
                        }
                        Bus if after == before => {
                            failures.push(format!("{what}: nothing reached a bus ({r:?})"));
                        }
                        Passes if after != before => {
                            failures.push(format!("{what}: a bus changed: {after:?}"));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} escapes:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_permissive_board_lets_through_only_what_it_allows_on_every_path() {
    run_matrix(permissive(), 0);
}

#[test]
fn a_restrictive_board_refuses_writes_and_transfers_beyond_its_lists_on_every_path() {
    run_matrix(restrictive(), 1);
}

#[test]
fn a_read_only_board_writes_nothing_beyond_a_register_pointer_on_every_path() {
    run_matrix(read_only(), 2);
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

/// A sensor reading on a read-only board is refused before its driver writes anything, and
/// the refusal names the sensor, its driver and what it would have written; the same holds for
/// the sampler, which calls no tool, and for the gateway-wide read-only switch.
#[test]
fn a_sensor_on_a_read_only_board_is_refused_naming_its_driver_and_nothing_is_written() {
    let (rt, sim) = runtime(read_only());
    for (sensor, driver, writes) in [
        ("climate", "bme280", "soft reset"),
        ("light", "bh1750", "power-on"),
    ] {
        let r = rt.call(
            &session(),
            Via::Direct,
            "sensor_read",
            json!({"sensor": sensor}),
        );
        match &r {
            Err(CallError::Respond(ToolError::PolicyRefused { rule, detail, .. })) => {
                assert_eq!(rule, "board.read_only");
                for part in [sensor, driver, writes] {
                    assert!(detail.contains(part), "{detail}");
                }
            }
            other => panic!("{sensor}: want a read-only refusal, got {other:?}"),
        }
    }
    // The sampler: every sensor due at once.
    let mut last = std::collections::HashMap::new();
    let sampled = covo::tools::readings::sample_due_readings(&rt, &mut last, Some(1));
    assert_eq!(sampled.len(), 2, "{sampled:?}");
    for (name, r) in &sampled {
        let e = r.as_ref().unwrap_err();
        assert!(e.contains("board.read_only"), "{name}: {e}");
    }
    assert!(sim.i2c_transfers().is_empty(), "{:?}", sim.i2c_transfers());
    assert_eq!(sim.i2c(1).unwrap().transaction_count(), 0);

    // The gateway-wide switch on a writable board: refused, and the sampler too.
    let mut config = Config::default();
    config.policy.read_only = true;
    let (rt, sim) = runtime_with(BoardDef::sim(), config);
    let r = rt.call(
        &session(),
        Via::Direct,
        "sensor_read",
        json!({"sensor": "climate"}),
    );
    match &r {
        Err(CallError::Respond(ToolError::PolicyRefused { rule, detail, .. })) => {
            assert_eq!(rule, "read_only");
            assert!(detail.contains("bme280"), "{detail}");
        }
        other => panic!("want a read-only refusal, got {other:?}"),
    }
    let sampled = covo::tools::readings::sample_due_readings(&rt, &mut last, Some(1));
    assert!(sampled.iter().all(|(_, r)| r.is_err()), "{sampled:?}");
    assert_eq!(sim.i2c(1).unwrap().transaction_count(), 0);
}

/// On a writable board the sampler and `sensor_read` read, and other gateways may still read
/// sensors under the default `[swarm] expose`: a driver's own measurement commands are not
/// bytes the caller chose.
#[test]
fn a_writable_board_reads_sensors_and_other_gateways_may_read_them_by_default() {
    let (rt, sim) = runtime_with(BoardDef::sim(), Config::default());
    let r = rt
        .call(
            &session(),
            Via::Remote,
            "sensor_read",
            json!({"sensor": "climate"}),
        )
        .unwrap();
    assert_eq!(r["driver"], "bme280");
    // The soft reset is among what reached the bus.
    assert!(
        sim.i2c_transfers()
            .iter()
            .any(|t| t.address == 0x76 && t.written == [0xe0, 0xb6]),
        "{:?}",
        sim.i2c_transfers()
    );
    let mut last = std::collections::HashMap::new();
    let sampled = covo::tools::readings::sample_due_readings(&rt, &mut last, Some(1));
    assert!(sampled.iter().all(|(_, r)| r.is_ok()), "{sampled:?}");
}
