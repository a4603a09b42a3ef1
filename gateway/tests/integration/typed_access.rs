//! What the policy judged is what reached the bus (issue 23, item 2). Arguments are parsed once
//! into each tool's typed value (`covo::spec::ToolArgs`); the policy judges that value's
//! `Access` list and the executor receives the same value. This property test drives every
//! hardware tool through the pipeline on the register-level sim with generated arguments
//! (valid, boundary and hostile), records the `Access` list the policy passed (a hook that runs
//! after the policy), and compares it with everything the sim saw: the I2C and SPI transfer
//! logs, GPIO output writes, the PWM channel, bytes written to the serial port and requests to
//! the microcontroller. A refused call must leave all of them as they were; a passed call may
//! touch only what it declared, exactly as declared.

use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::hardware::{Access, Board};
use covo::hooks::{Hook, HookCx};
use covo::policy::ToolInvocation;
use covo::runtime::{AutoApprove, Runtime, Via};
use covo::store::Store;
use covo_board::board::{BoardDef, I2cWriteAllow, SpiDef};
use covo_hal_tools::bus::Pwm;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::sim::{SimBoard, SpiTransfer, Transfer, LOOPBACK_PATH};
use proptest::prelude::*;
use proptest::test_runner::{Config as PropConfig, TestCaseError, TestRunner};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Cases per run: the issue asks for at least 10,000. `COVO_TYPED_CASES` overrides it.
const CASES: u32 = 10_000;

/// Records the accesses of every call that passed the policy (it runs after `PolicyHook`).
#[derive(Default)]
struct Judged(Mutex<Option<Vec<Access>>>);

struct Recorder(Arc<Judged>);

impl Hook for Recorder {
    fn name(&self) -> &'static str {
        "test.recorder"
    }
    fn before_tool_call(&self, _: &HookCx<'_>, call: &ToolInvocation<'_>) -> Result<(), ToolError> {
        *self.0 .0.lock().unwrap() = Some(call.access.to_vec());
        Ok(())
    }
}

/// The sim board plus a loopback SPI device at 0.0, with a policy chosen per board.
fn def(kind: usize) -> BoardDef {
    let mut d = BoardDef::sim();
    d.spi.push(SpiDef {
        bus: 0,
        cs: 0,
        path: Some(LOOPBACK_PATH.into()),
        max_speed_hz: None,
    });
    match kind {
        // Permissive: writes to 0x50 too, GPIO4 an output.
        0 => {
            d.policy.i2c_write_allow.push(I2cWriteAllow {
                bus: 1,
                addresses: vec![0x50],
            });
            d.policy.outputs.push(4);
        }
        // Restrictive: 16-byte transfers, the fan at most half on.
        1 => {
            d.policy.max_transfer = Some(16);
            d.policy.pwm[0].max_duty = 0.5;
        }
        // Read-only.
        _ => d.policy.read_only = true,
    }
    d
}

struct World {
    rt: Runtime,
    sim: SimBoard,
    judged: Arc<Judged>,
}

fn world(kind: usize) -> World {
    let sim = SimBoard::new();
    let hw = Hardware::sim_with(def(kind), sim.clone());
    hw.skip_driver_delays(true);
    let judged = Arc::new(Judged::default());
    let mut config = covo::config::Config::default();
    config.swarm.expose = Some(vec!["*".into()]);
    let mut opts = covo::tools::options(config);
    opts.board = Some(Arc::new(Board::with_hardware(hw)));
    opts.approver = Box::new(AutoApprove);
    opts.hooks.push(Box::new(Recorder(judged.clone())));
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    World { rt, sim, judged }
}

/// Everything the sim lets us see of what reached its buses.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    i2c: Vec<Transfer>,
    i2c_count: u64,
    spi: Vec<SpiTransfer>,
    /// GPIO writes per line since the call began: (pin, level) in order.
    gpio: Vec<(u32, bool)>,
    pwm: (f64, f64),
    serial: u64,
    mcu_requests: u64,
}

fn seen(w: &World, since: Instant) -> Seen {
    let hw = w.rt.board().hardware().unwrap();
    Seen {
        i2c: w.sim.i2c_transfers(),
        i2c_count: w.sim.i2c(1).unwrap().transaction_count(),
        spi: w.sim.spi_transfers(),
        gpio: (2..=27)
            .flat_map(|p| {
                w.sim
                    .output_log(p)
                    .into_iter()
                    .filter(move |(t, _)| *t >= since)
                    .map(move |(_, l)| (p, l))
            })
            .collect(),
        pwm: w.sim.pwm(0).unwrap().get(),
        serial: w.sim.serial("echo").unwrap().bytes_written(),
        mcu_requests: hw.mcu_status("pico").map_or(0, |(_, s)| s.requests),
    }
}

/// The fan at a setting no tool call can give it (1 Hz is below every limit).
fn reset(w: &World) {
    w.sim.pwm(0).unwrap().set(1.0, 0.0).unwrap();
    w.sim.clear_spi_transfers();
    *w.judged.0.lock().unwrap() = None;
}

/// Whether the channel shows `f` Hz at duty `d` as sysfs PWM stores them: the period and the
/// duty in whole nanoseconds.
fn pwm_matches((got_f, got_d): (f64, f64), f: f64, d: f64) -> bool {
    let period_ns = (1e9 / f).round().max(1.0);
    let want_f = 1e9 / period_ns;
    let want_d = (d * period_ns).round() / period_ns;
    (got_f - want_f).abs() <= 1e-9 * want_f && (got_d - want_d).abs() <= 1e-9
}

/// Compares what the sim saw during one call with what the policy passed (`None`: refused,
/// or stopped before the policy). Returns what does not match.
fn compare(
    tool: &str,
    judged: Option<&[Access]>,
    ok: bool,
    before: &Seen,
    after: &Seen,
) -> Result<(), String> {
    let new_i2c: Vec<&Transfer> = {
        let n = (after.i2c_count - before.i2c_count) as usize;
        after.i2c.iter().rev().take(n).rev().collect()
    };
    let Some(access) = judged else {
        // Refused (or invalid): nothing may have moved.
        if before.i2c_count != after.i2c_count
            || after.spi != before.spi
            || !after.gpio.is_empty()
            || after.pwm != before.pwm
            || after.serial != before.serial
            || after.mcu_requests != before.mcu_requests
        {
            return Err(format!(
                "{tool}: refused, yet the bus changed: {before:?} -> {after:?}"
            ));
        }
        return Ok(());
    };
    // I2C: each transaction on the wire is one the call declared, with the declared sizes.
    let declared_i2c: Vec<&Access> = access
        .iter()
        .filter(|a| matches!(a, Access::I2c { .. } | Access::SensorMeasure { .. }))
        .collect();
    for t in &new_i2c {
        let covered = declared_i2c.iter().any(|a| match a {
            Access::I2c {
                address,
                written,
                read,
                ..
            } if tool.starts_with("display_") => {
                // The display's framebuffer goes out in many transfers of at most `written`.
                t.address == *address && t.written.len() <= *written && t.read <= *read
            }
            Access::I2c {
                address,
                written,
                read,
                ..
            } => t.address == *address && t.written.len() == *written && t.read == *read,
            Access::SensorMeasure { address, bytes, .. } => {
                Some(t.address) == *address && t.written.len().max(t.read) <= *bytes
            }
            _ => false,
        });
        // Reading tools that declare nothing (a scan, say) may read but never write.
        let undeclared_read = declared_i2c.is_empty() && t.written.is_empty();
        if !covered && !undeclared_read {
            return Err(format!(
                "{tool}: {t:?} reached the I2C bus, but the policy judged {access:?}"
            ));
        }
    }
    let raw_i2c = access
        .iter()
        .filter(|a| matches!(a, Access::I2c { .. }))
        .count();
    if ok && raw_i2c > 0 && !tool.starts_with("display_") && new_i2c.len() != raw_i2c {
        return Err(format!(
            "{tool}: succeeded with {} I2C transactions, but declared {access:?}",
            new_i2c.len()
        ));
    }
    // SPI: exactly the declared transfers.
    let new_spi: Vec<&SpiTransfer> = after.spi.iter().skip(before.spi.len()).collect();
    let declared_spi: Vec<(u8, u8, usize)> = access
        .iter()
        .filter_map(|a| match a {
            Access::Spi { bus, cs, bytes } => Some((*bus, *cs, *bytes)),
            _ => None,
        })
        .collect();
    let wire_spi: Vec<(u8, u8, usize)> = new_spi
        .iter()
        .map(|t| (t.bus, t.cs, t.written.len()))
        .collect();
    if !(wire_spi == declared_spi || (!ok && wire_spi.is_empty())) {
        return Err(format!(
            "{tool}: SPI saw {wire_spi:?}, the policy judged {declared_spi:?}"
        ));
    }
    // GPIO: only declared outputs are driven.
    for (pin, _) in &after.gpio {
        if !access
            .iter()
            .any(|a| matches!(a, Access::GpioOutput { pin: p } if p == pin))
        {
            return Err(format!(
                "{tool}: GPIO{pin} was driven, but the policy judged {access:?}"
            ));
        }
    }
    if ok {
        for a in access {
            if let Access::GpioOutput { pin } = a {
                if !after.gpio.iter().any(|(p, _)| p == pin) {
                    return Err(format!("{tool}: succeeded, yet GPIO{pin} was not written"));
                }
            }
        }
    }
    // PWM: the channel changes only when declared, and then to the declared setting.
    let pwm = access.iter().find_map(|a| match a {
        Access::Pwm {
            channel: 0,
            frequency_hz,
            duty,
        } => Some((*frequency_hz, *duty)),
        _ => None,
    });
    match pwm {
        None if after.pwm != before.pwm => {
            return Err(format!(
                "{tool}: the fan changed to {:?}, but the policy judged {access:?}",
                after.pwm
            ))
        }
        Some((f, d)) if ok && !pwm_matches(after.pwm, f, d) => {
            return Err(format!(
                "{tool}: the fan is at {:?}, but the policy judged {f} Hz duty {d}",
                after.pwm
            ))
        }
        _ => {}
    }
    // Serial: bytes go to the echo port only when declared, as many as declared.
    let serial: Option<usize> = access.iter().find_map(|a| match a {
        Access::SerialWrite { port, bytes } if port == "echo" => Some(*bytes),
        _ => None,
    });
    let wrote = after.serial - before.serial;
    match serial {
        None if wrote != 0 => {
            return Err(format!(
                "{tool}: {wrote} bytes went to the serial port, but the policy judged {access:?}"
            ))
        }
        Some(n) if ok && wrote != n as u64 => {
            return Err(format!(
                "{tool}: {wrote} bytes went to the serial port, the policy judged {n}"
            ))
        }
        _ => {}
    }
    // The microcontroller: a tool that reaches it is an MCU tool.
    if after.mcu_requests != before.mcu_requests && !tool.starts_with("mcu_") {
        return Err(format!("{tool}: the microcontroller was sent a request"));
    }
    Ok(())
}

/// One generated call.
#[derive(Debug, Clone)]
struct Call {
    board: usize,
    via: usize,
    tool: &'static str,
    args: Value,
}

fn address() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop_oneof![Just(0x76), Just(0x23), Just(0x3c), Just(0x50), Just(0x48)].prop_map(Value::from),
        2 => (0u64..=0x7f).prop_map(Value::from),
        1 => (0u64..=0x7f).prop_map(|a| json!(format!("0x{a:02x}"))),
        1 => prop_oneof![
            Just(json!(128)), Just(json!(-1)), Just(json!(1.5)), Just(json!("0x")),
            Just(json!("zz")), Just(json!(" 0x76 ")), Just(json!("0X76")), Just(json!(u64::MAX)),
            Just(json!([0x76])), Just(Value::Null), Just(json!("0x1ff")),
        ],
    ]
}

fn data() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::vec(0u64..=255, 0..20).prop_map(Value::from),
        2 => prop::collection::vec(0u8..=255, 0..20).prop_map(|b| {
            json!(b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" "))
        }),
        1 => prop_oneof![
            Just(json!([256])), Just(json!([-1])), Just(json!("gg")), Just(json!("0")),
            Just(json!([[1]])), Just(json!("")), Just(json!([])), Just(json!(vec![0u8; 4097])),
            Just(json!({"a": 1})),
        ],
    ]
}

fn small() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (0u64..=20).prop_map(Value::from),
        1 => prop_oneof![
            Just(json!(4096)), Just(json!(4097)), Just(json!(-3)), Just(json!("2")),
            Just(json!(1e30)), Just(json!(0.5)),
        ],
    ]
}

fn bus() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(prop_oneof![
        4 => Just(json!(1)),
        1 => prop_oneof![Just(json!(0)), Just(json!(2)), Just(json!(255)), Just(json!(256)), Just(json!(-1)), Just(json!("1"))],
    ])
}

fn pin() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop_oneof![Just(17u64), Just(4), Just(27), Just(18)].prop_map(Value::from),
        2 => (0u64..=45).prop_map(Value::from),
        2 => prop_oneof![Just("relay"), Just("button"), Just("fan"), Just("climate"), Just("nope")].prop_map(Value::from),
        1 => prop_oneof![Just(json!(-1)), Just(json!(1.5)), Just(json!(u64::MAX)), Just(json!("17"))],
    ]
}

fn level() -> impl Strategy<Value = Value> {
    prop_oneof![4 => (0u64..=1).prop_map(Value::from), 1 => prop_oneof![Just(json!(2)), Just(json!("1")), Just(json!(true))]]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (0.0f64..1.0).prop_map(Value::from),
        2 => prop_oneof![Just(0.0), Just(0.5), Just(1.0), Just(-0.1), Just(1.5)].prop_map(Value::from),
        1 => prop_oneof![Just(json!("0.5")), Just(json!(1e308))],
    ]
}

fn freq() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(prop_oneof![
        Just(json!(1000)),
        Just(json!(25000)),
        Just(json!(5)),
        Just(json!(0)),
        Just(json!(-10)),
        Just(json!(40000.5)),
        Just(json!(1e12)),
        (10.0f64..50000.0).prop_map(Value::from),
    ])
}

fn port() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(json!("echo")),
        1 => prop_oneof![Just(json!("sim:echo")), Just(json!("pico")), Just(json!("sim:mcu")), Just(json!("/dev/ttyS0")), Just(json!(""))],
    ]
}

fn text() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("AT")),
        "[ -~]{0,12}".prop_map(Value::from),
        Just(json!("line\n"))
    ]
}

/// Inserts optional keys.
fn obj(pairs: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect(),
    )
}

fn call() -> impl Strategy<Value = (&'static str, Value)> {
    let some = |s: BoxedStrategy<Value>| s.prop_map(Some);
    prop_oneof![
        1 => bus().prop_map(|b| ("i2c_scan", obj(vec![("bus", b)]))),
        1 => (bus(), address(), small()).prop_map(|(b, a, c)| (
            "i2c_read",
            obj(vec![("bus", b), ("address", Some(a)), ("count", Some(c))])
        )),
        3 => (bus(), address(), data()).prop_map(|(b, a, d)| (
            "i2c_write",
            obj(vec![("bus", b), ("address", Some(a)), ("data", Some(d))])
        )),
        3 => (bus(), address(), data(), small()).prop_map(|(b, a, d, c)| (
            "i2c_write_read",
            obj(vec![("bus", b), ("address", Some(a)), ("data", Some(d)), ("count", Some(c))])
        )),
        2 => (
            bus(),
            address(),
            prop_oneof![(0u64..=0x1ff).prop_map(Value::from), Just(json!("0xd0")), Just(json!(70000))],
            prop::option::of(small()),
            prop::option::of(prop_oneof![Just(json!(8)), Just(json!(16)), Just(json!(12))]),
            prop::option::of(prop_oneof![Just(json!(8)), Just(json!(16)), Just(json!(0))]),
        )
            .prop_map(|(b, a, r, c, w, rw)| (
                "i2c_read_register",
                obj(vec![("bus", b), ("address", Some(a)), ("register", Some(r)), ("count", c), ("width", w), ("register_width", rw)])
            )),
        2 => (
            prop::option::of(prop_oneof![Just(json!(0)), Just(json!(1)), Just(json!(300))]),
            prop::option::of(prop_oneof![Just(json!(0)), Just(json!(1))]),
            data(),
        )
            .prop_flat_map(|(b, cs, d)| prop_oneof![Just("spi_transfer"), Just("spi_write")]
                .prop_map(move |t| (t, obj(vec![("bus", b.clone()), ("cs", cs.clone()), ("data", Some(d.clone()))])))),
        1 => pin().prop_map(|p| ("gpio_read", json!({"pin": p}))),
        3 => (pin(), level(), prop::option::of(prop_oneof![Just(json!(0)), Just(json!(2)), Just(json!(-1)), Just(json!(60001))])).prop_map(|(p, l, ms)| (
            "gpio_write",
            obj(vec![("pin", Some(p)), ("level", Some(l)), ("pulse_ms", ms)])
        )),
        1 => (pin(), prop::option::of(prop_oneof![Just(json!("rising")), Just(json!("falling")), Just(json!("both"))]))
            .prop_map(|(p, e)| ("gpio_wait_edge", obj(vec![("pin", Some(p)), ("edge", e), ("timeout_ms", Some(json!(0)))]))),
        3 => (
            prop_oneof![Just(json!(0)), Just(json!("fan")), Just(json!(1)), Just(json!("relay")), Just(json!("nope"))],
            freq(),
            prop::option::of(number()),
        )
            .prop_map(|(c, f, d)| ("pwm_set", obj(vec![("channel", Some(c)), ("frequency_hz", f), ("duty", d)]))),
        1 => ("[a-z]{0,3}", prop::option::of(text()), prop::option::of(data()), port())
            .prop_map(|(_, t, h, p)| ("serial_write", obj(vec![("port", Some(p)), ("text", t), ("hex", h)]))),
        1 => (port(), text()).prop_map(|(p, t)| ("serial_request", json!({"port": p, "text": t, "timeout_ms": 5}))),
        1 => port().prop_map(|p| ("serial_read", json!({"port": p, "timeout_ms": 0}))),
        1 => prop_oneof![Just("climate"), Just("light"), Just("oled"), Just("relay"), Just("nope")]
            .prop_map(|s| ("sensor_read", json!({"sensor": s}))),
        1 => prop::collection::vec("[ -~]{0,10}", 0..4).prop_map(|l| ("display_text", json!({"lines": l}))),
        1 => Just(("display_clear", json!({}))),
        1 => some(prop_oneof![Just(json!("pico")), Just(json!("nope"))].boxed())
            .prop_map(|d| ("mcu_info", obj(vec![("device", d)]))),
        1 => (prop::option::of(prop_oneof![Just(json!("pico")), Just(json!("nope"))]), prop_oneof![Just(json!(25)), Just(json!(15)), Just(json!(3)), Just(json!(256))], level())
            .prop_map(|(d, p, l)| ("mcu_gpio_write", obj(vec![("device", d), ("pin", Some(p)), ("level", Some(l))]))),
        1 => (prop_oneof![Just(json!(15)), Just(json!(3))], freq(), number())
            .prop_map(|(p, f, d)| ("mcu_pwm_set", obj(vec![("pin", Some(p)), ("frequency_hz", f), ("duty", Some(d))]))),
        1 => (address(), prop::option::of(data()), prop::option::of(small()))
            .prop_map(|(a, d, c)| ("mcu_i2c_transfer", obj(vec![("address", Some(a)), ("data", d), ("count", c)]))),
    ]
}

fn calls() -> impl Strategy<Value = Call> {
    (0usize..3, 0usize..4, call()).prop_map(|(board, via, (tool, args))| Call {
        board,
        via,
        tool,
        args,
    })
}

fn run(w: &World, c: &Call) -> Result<Value, CallError> {
    let s = Session::new("typed", "cli");
    let via = [Via::Direct, Via::Mqtt, Via::Remote, Via::Schedule][c.via];
    w.rt.call(&s, via, c.tool, c.args.clone())
}

/// Runs `cases` generated calls and checks each with `check`.
fn property(
    cases: u32,
    check: impl Fn(&str, Option<&[Access]>, bool, &Seen, &Seen) -> Result<(), String>,
) -> Result<(), String> {
    let worlds = [world(0), world(1), world(2)];
    for w in &worlds {
        // Connect the microcontroller once, before timing anything.
        let _ = w.rt.call(
            &Session::new("typed", "cli"),
            Via::Direct,
            "mcu_info",
            json!({}),
        );
    }
    let mut runner = TestRunner::new(PropConfig {
        cases,
        failure_persistence: None,
        ..PropConfig::default()
    });
    let stats = std::cell::RefCell::new(Stats::default());
    runner
        .run(&calls(), |c| {
            let w = &worlds[c.board];
            reset(w);
            let since = Instant::now();
            let before = seen(w, since);
            let r = run(w, &c);
            let after = seen(w, since);
            let judged = w.judged.0.lock().unwrap().take();
            stats
                .borrow_mut()
                .count(&before, &after, judged.is_some(), r.is_ok());
            check(c.tool, judged.as_deref(), r.is_ok(), &before, &after).map_err(|e| {
                TestCaseError::fail(format!("{e}\n  call: {} {} -> {r:?}", c.tool, c.args))
            })
        })
        .map_err(|e| e.to_string())?;
    let st = stats.into_inner();
    eprintln!("typed_access: {st:?}");
    // The generator reaches every bus with calls that pass, and calls that are refused: a
    // property over calls that all fail to parse would prove nothing.
    let fraction = |n: u32| f64::from(n) / f64::from(st.calls.max(1));
    assert!(
        fraction(st.passed) > 0.2,
        "too few calls passed the policy: {st:?}"
    );
    assert!(
        fraction(st.refused) > 0.05,
        "too few calls were refused: {st:?}"
    );
    assert!(
        st.i2c_writes > 0 && st.spi > 0 && st.gpio > 0 && st.pwm > 0 && st.serial > 0 && st.mcu > 0,
        "some bus was never reached: {st:?}"
    );
    Ok(())
}

/// What the generated calls did, to show the property is not vacuous.
#[derive(Debug, Default)]
struct Stats {
    calls: u32,
    passed: u32,
    refused: u32,
    succeeded: u32,
    i2c_writes: u32,
    spi: u32,
    gpio: u32,
    pwm: u32,
    serial: u32,
    mcu: u32,
}

impl Stats {
    fn count(&mut self, before: &Seen, after: &Seen, passed: bool, ok: bool) {
        self.calls += 1;
        self.passed += u32::from(passed);
        self.refused += u32::from(!passed);
        self.succeeded += u32::from(ok);
        let new = (after.i2c_count - before.i2c_count) as usize;
        self.i2c_writes += u32::from(
            after
                .i2c
                .iter()
                .rev()
                .take(new)
                .any(|t| !t.written.is_empty()),
        );
        self.spi += u32::from(after.spi.len() > before.spi.len());
        self.gpio += u32::from(!after.gpio.is_empty());
        self.pwm += u32::from(after.pwm != before.pwm);
        self.serial += u32::from(after.serial != before.serial);
        self.mcu += u32::from(after.mcu_requests != before.mcu_requests);
    }
}

static PTY: Mutex<()> = Mutex::new(());

#[test]
fn what_the_policy_judged_is_what_reached_the_bus() {
    let _pty = PTY.lock().unwrap_or_else(|p| p.into_inner());
    let cases = std::env::var("COVO_TYPED_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES);
    property(cases, compare).unwrap();
}

/// The property has teeth: the same calls checked against accesses skewed the way a lenient
/// parse could skew them (one byte fewer written, another address) fail.
#[test]
fn a_skewed_access_is_caught() {
    let _pty = PTY.lock().unwrap_or_else(|p| p.into_inner());
    let skewed = |tool: &str, judged: Option<&[Access]>, ok: bool, b: &Seen, a: &Seen| {
        let skew: Option<Vec<Access>> = judged.map(|acc| {
            acc.iter()
                .map(|x| match x {
                    Access::I2c {
                        bus,
                        address,
                        written,
                        read,
                    } if *written > 1 => Access::I2c {
                        bus: *bus,
                        address: *address,
                        written: written - 1,
                        read: *read,
                    },
                    Access::Spi { bus, cs, bytes } => Access::Spi {
                        bus: *bus,
                        cs: *cs,
                        bytes: bytes + 1,
                    },
                    other => other.clone(),
                })
                .collect()
        });
        compare(tool, skew.as_deref(), ok, b, a)
    };
    let err = property(2_000, skewed).expect_err("a skewed access must be caught");
    assert!(
        err.contains("reached the I2C bus") || err.contains("SPI saw"),
        "{err}"
    );
}
