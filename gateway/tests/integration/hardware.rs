//! Every hardware tool against the simulated board: through the CLI (as a maker would), and
//! in-process where faults are injected into the sim.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::hardware::Board;
use covo::runtime::{AutoApprove, Runtime, Via};
use covo::store::Store;
use covo_board::board::BoardDef;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::sim::{Fault, SimBoard};
use serde_json::{json, Value};
use serialport::SerialPort;
use std::process::Command;
use std::sync::Arc;

fn cli(home: &std::path::Path, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args(args)
        .current_dir(home)
        .env("COVO_HOME", home.join("home"))
        .env_remove("COVO_CONFIG")
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{args:?}: not JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn sensor_read_through_the_cli_gives_a_plausible_temperature_in_celsius() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = cli(
        dir.path(),
        &["tools", "call", "sensor_read", r#"{"sensor":"climate"}"#],
    );
    assert_eq!(code, 0, "{v}");
    let t = v["readings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["quantity"] == "temperature")
        .unwrap();
    assert_eq!(t["unit"], "degC");
    let c = t["value"].as_f64().unwrap();
    assert!((10.0..=35.0).contains(&c), "{c}");
    assert!(v["at"].as_str().unwrap().ends_with('Z'));
    // The reading was logged: history sees it from another process.
    let (code, h) = cli(
        dir.path(),
        &[
            "tools",
            "call",
            "sensor_history",
            r#"{"sensor":"climate","quantity":"temperature","window":"1h"}"#,
        ],
    );
    assert_eq!(code, 0, "{h}");
    assert_eq!(h["quantities"][0]["count"], 1);
    let (code, csv) = cli(
        dir.path(),
        &[
            "tools",
            "call",
            "sensor_export_csv",
            r#"{"sensor":"climate"}"#,
        ],
    );
    assert_eq!(code, 0, "{csv}");
    let text = std::fs::read_to_string(csv["artifact"].as_str().unwrap()).unwrap();
    assert!(
        text.starts_with("at,sensor,quantity,value,unit\n"),
        "{text}"
    );
    assert_eq!(
        text.lines().count(),
        1 + 3,
        "temperature, humidity, pressure"
    );
}

#[test]
fn i2c_scan_finds_the_three_sim_devices_and_prints_a_grid() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = cli(dir.path(), &["tools", "call", "i2c_scan", "{}"]);
    assert_eq!(code, 0, "{v}");
    let found: Vec<&str> = v["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["address"].as_str().unwrap())
        .collect();
    assert_eq!(found, ["0x23", "0x3c", "0x76"]);
    let grid = v["grid"].as_str().unwrap();
    assert!(grid.contains("70: -- -- -- -- -- -- 76 --"), "{grid}");
    assert!(grid.starts_with("     0  1  2"));
}

#[test]
fn raw_i2c_tools_accept_and_show_hex() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = cli(
        dir.path(),
        &[
            "tools",
            "call",
            "i2c_read_register",
            r#"{"address":"0x76","register":"0xD0"}"#,
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["registers"][0]["hex"], "0x60", "BME280 chip id");
    let (code, v) = cli(
        dir.path(),
        &[
            "tools",
            "call",
            "i2c_write_read",
            r#"{"address":118,"data":"d0","count":1}"#,
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["read"]["hex"], "60");
    let (code, v) = cli(
        dir.path(),
        &[
            "tools",
            "call",
            "i2c_write",
            r#"{"address":"0x76","data":"f4 27"}"#,
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["written"]["hex"], "f4 27");
}

#[test]
fn gpio_pwm_display_and_board_tools_work_on_the_sim() {
    let dir = tempfile::tempdir().unwrap();
    let ok = |args: &[&str]| {
        let (code, v) = cli(dir.path(), args);
        assert_eq!(code, 0, "{args:?}: {v}");
        v
    };
    assert_eq!(
        ok(&[
            "tools",
            "call",
            "gpio_write",
            r#"{"pin":"relay","level":1}"#
        ])["level"],
        1
    );
    assert_eq!(
        ok(&["tools", "call", "gpio_read", r#"{"pin":"button"}"#])["pin"],
        27
    );
    assert_eq!(
        ok(&[
            "tools",
            "call",
            "pwm_set",
            r#"{"channel":"fan","duty":0.5,"frequency_hz":25000}"#
        ])["duty"],
        0.5
    );
    assert_eq!(
        ok(&[
            "tools",
            "call",
            "display_text",
            r#"{"lines":["hello","world"]}"#
        ])["display"],
        "oled"
    );
    ok(&["tools", "call", "display_clear", "{}"]);
    let info = ok(&["tools", "call", "board_info", "{}"]);
    assert_eq!(info["name"], "sim");
    assert_eq!(info["policy"]["outputs"], json!([17]));
    let devices = ok(&["tools", "call", "device_list", "{}"]);
    let climate = devices["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "climate")
        .unwrap();
    assert_eq!(climate["status"], "present");
    let e = ok(&[
        "tools",
        "call",
        "gpio_wait_edge",
        r#"{"pin":"button","timeout_ms":50}"#,
    ]);
    assert_eq!(e["timed_out"], true);
}

#[test]
fn policy_refusals_name_their_rule_directly_and_through_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    for (tool, args, rule) in [
        (
            "i2c_write",
            r#"{"address":"0x50","data":"00"}"#,
            "i2c.write_allow",
        ),
        (
            "i2c_write",
            r#"{"address":"0x03","data":"00"}"#,
            "i2c.reserved",
        ),
        (
            "gpio_write",
            r#"{"pin":"button","level":1}"#,
            "gpio.outputs",
        ),
        ("gpio_write", r#"{"pin":4,"level":1}"#, "gpio.outputs"),
        (
            "pwm_set",
            r#"{"channel":"fan","duty":0.5,"frequency_hz":100000}"#,
            "pwm.limits",
        ),
    ] {
        let (code, v) = cli(dir.path(), &["tools", "call", tool, args]);
        assert_eq!(code, 1, "{tool} {args}: {v}");
        assert_eq!(v["error"]["kind"], "policy_refused", "{v}");
        assert_eq!(v["error"]["rule"], rule, "{v}");
        let wrapped = format!(r#"{{"name":"{tool}","arguments":{args}}}"#);
        let (code, v) = cli(dir.path(), &["tools", "call", "tool_call", &wrapped]);
        assert_eq!(code, 1);
        assert_eq!(v["error"]["rule"], rule, "through tool_call: {v}");
    }
}

/// Pseudo-terminal creation (`ptsname`) is not thread-safe: tests in this process that open
/// ptys take this lock.
pub(crate) static PTY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scripted() -> (Runtime, SimBoard) {
    let sim = SimBoard::new();
    let hw = Hardware::sim_with(BoardDef::sim(), sim.clone());
    let mut opts = covo::tools::options(Config::default());
    opts.board = Some(Arc::new(Board::with_hardware(hw)));
    opts.approver = Box::new(AutoApprove);
    (
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
        sim,
    )
}

fn err(r: Result<Value, CallError>) -> ToolError {
    match r {
        Err(CallError::Respond(e)) => e,
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[test]
fn injected_faults_become_structured_errors_and_later_calls_still_work() {
    let (rt, sim) = scripted();
    let s = Session::new("hw", "cli");
    let read = || rt.call(&s, Via::Direct, "sensor_read", json!({"sensor": "climate"}));
    sim.inject(Fault::Nack {
        address: 0x76,
        times: 1,
    });
    let e = err(read());
    assert!(e.to_string().contains("0x76"), "{e}");
    assert!(matches!(&e, ToolError::Failed { hint: Some(h), .. } if h.contains("i2c_scan")));
    read().unwrap();
    sim.inject(Fault::Timeout { times: 1 });
    assert!(err(rt.call(&s, Via::Direct, "i2c_scan", json!({})))
        .to_string()
        .contains("timed out"));
    rt.call(&s, Via::Direct, "i2c_scan", json!({})).unwrap();
    sim.inject(Fault::StuckLine);
    assert!(err(read()).to_string().contains("stuck"));
    sim.clear_faults();
    read().unwrap();
}

#[test]
fn a_timed_pulse_drives_the_relay_and_releases_it() {
    let (rt, sim) = scripted();
    let s = Session::new("hw", "cli");
    let v = rt
        .call(
            &s,
            Via::Direct,
            "gpio_write",
            json!({"pin": "relay", "level": 1, "pulse_ms": 30}),
        )
        .unwrap();
    assert_eq!(v["level"], 0);
    let log = sim.output_log(17);
    let levels: Vec<bool> = log.iter().map(|(_, l)| *l).collect();
    assert_eq!(levels, [true, false]);
    assert!(log[1].0 - log[0].0 >= std::time::Duration::from_millis(30));
}

#[test]
fn waiting_for_the_button_sees_an_injected_press() {
    let (rt, sim) = scripted();
    let s = Session::new("hw", "cli");
    let presser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        sim.press(27);
    });
    let v = rt
        .call(
            &s,
            Via::Direct,
            "gpio_wait_edge",
            json!({"pin": "button", "edge": "falling", "timeout_ms": 5000}),
        )
        .unwrap();
    presser.join().unwrap();
    assert_eq!(v["edge"], "falling", "{v}");
}

#[test]
fn display_text_lands_in_the_sim_framebuffer() {
    let (rt, sim) = scripted();
    let s = Session::new("hw", "cli");
    rt.call(
        &s,
        Via::Direct,
        "display_text",
        json!({"lines": ["21.4 C", "45 %RH"]}),
    )
    .unwrap();
    assert!(sim.framebuffer_text().contains('#'));
    rt.call(&s, Via::Direct, "display_clear", json!({}))
        .unwrap();
    assert!(!sim.framebuffer_text().contains('#'));
}

#[test]
fn hardware_tools_are_visible_on_the_gateway_platform_but_spi_is_not_on_the_sim() {
    let (rt, _) = scripted();
    let call = rt.model_call(&Session::new("hw", "cli"));
    let names: Vec<&str> = call.tools.iter().map(|t| t.name).collect();
    assert!(names.contains(&"sensor_read") && names.contains(&"i2c_scan"));
    assert!(
        !names.contains(&"spi_transfer"),
        "the sim declares no SPI bus"
    );
    let e = err(rt.call(
        &Session::new("hw", "cli"),
        Via::Direct,
        "spi_transfer",
        json!({"data": "00"}),
    ));
    assert!(e.to_string().contains("no SPI bus"), "{e}");
}

#[test]
fn serial_request_gets_an_at_reply_from_the_sim_echo_port() {
    let (rt, _) = scripted();
    let s = Session::new("hw", "cli");
    let v = rt
        .call(
            &s,
            Via::Direct,
            "serial_request",
            json!({"port": "echo", "text": "AT"}),
        )
        .unwrap();
    assert_eq!(v["reply"]["text"], "OK\r\n", "{v}");
    rt.call(
        &s,
        Via::Direct,
        "serial_write",
        json!({"port": "echo", "hex": "68 69 0a"}),
    )
    .unwrap();
    let v = rt
        .call(
            &s,
            Via::Direct,
            "serial_read",
            json!({"port": "echo", "delimiter": "\n", "timeout_ms": 500}),
        )
        .unwrap();
    assert_eq!(v["read"]["text"], "hi\n");
    assert_eq!(v["stopped_by"], "delimiter");
    // An undeclared port is refused by the policy before anything is opened.
    let e = err(rt.call(
        &s,
        Via::Direct,
        "serial_write",
        json!({"port": "/dev/ttyUSB9", "text": "x"}),
    ));
    assert!(
        matches!(&e, ToolError::PolicyRefused { rule, .. } if rule == "serial.allow"),
        "{e}"
    );
    let e = err(rt.call(
        &s,
        Via::Direct,
        "serial_read",
        json!({"port": "/dev/ttyUSB9"}),
    ));
    assert!(e.to_string().contains("not declared"), "{e}");
}

#[test]
fn watches_fire_once_after_their_duration_and_run_their_tool_through_the_policy() {
    use covo_hal_tools::sim::Environment;
    let (rt, sim) = scripted();
    let s = Session::new("hw", "cli");
    let hot = Environment {
        temperature_c: 31.0,
        ..sim.environment()
    };
    sim.set_environment(hot);
    let w = rt
        .call(
            &s,
            Via::Direct,
            "watch_create",
            json!({"sensor": "climate", "quantity": "temperature", "op": ">", "threshold": 30, "action": "tool",
                   "tool": "gpio_write", "arguments": {"pin": "relay", "level": 1}}),
        )
        .unwrap();
    assert_eq!(w["state"], "armed");
    let r = rt
        .call(&s, Via::Direct, "sensor_read", json!({"sensor": "climate"}))
        .unwrap();
    assert_eq!(r["watches_fired"].as_array().unwrap().len(), 1, "{r}");
    assert!(
        sim.level(17),
        "the relay was switched on through the pipeline"
    );
    let r = rt
        .call(&s, Via::Direct, "sensor_read", json!({"sensor": "climate"}))
        .unwrap();
    assert!(
        r["watches_fired"].as_array().unwrap().is_empty(),
        "fires once until re-armed"
    );
    let list = rt.call(&s, Via::Direct, "watch_list", json!({})).unwrap();
    assert_eq!(list["watches"][0]["fired_count"], 1);
    assert_eq!(list["watches"][0]["state"], "fired");
    // A watch whose tool the policy refuses still fires, and reports the refusal.
    rt.call(
        &s,
        Via::Direct,
        "watch_create",
        json!({"sensor": "climate", "quantity": "temperature", "op": ">", "threshold": 30, "action": "tool",
               "tool": "gpio_write", "arguments": {"pin": "button", "level": 1}}),
    )
    .unwrap();
    let r = rt
        .call(&s, Via::Direct, "sensor_read", json!({"sensor": "climate"}))
        .unwrap();
    let fired = r["watches_fired"][0].as_str().unwrap();
    assert!(fired.contains("gpio.outputs"), "{fired}");
    let audit: i64 = rt
        .store()
        .unwrap()
        .conn()
        .query_row("SELECT COUNT(*) FROM audit WHERE via = 'watch'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(audit, 2);
}

#[test]
fn a_watch_on_an_unknown_quantity_is_refused_with_what_the_sensor_measures() {
    let (rt, _) = scripted();
    let e = err(rt.call(
        &Session::new("hw", "cli"),
        Via::Direct,
        "watch_create",
        json!({"sensor": "climate", "quantity": "co2", "op": ">", "threshold": 1000}),
    ));
    assert!(e.to_string().contains("temperature"), "{e}");
}

#[test]
fn serial_tools_work_against_a_real_pseudo_terminal() {
    let _pty = PTY.lock().unwrap_or_else(|p| p.into_inner());
    use std::io::{Read, Write};
    let (mut master, slave) = serialport::TTYPort::pair().expect("a pty pair");
    let slave_path = slave.name().expect("the pty has a path");
    let toml = format!(
        "[board]\nname = \"pty\"\nmodel = \"test\"\nbackend = \"linux\"\n[[serial]]\nname = \"modem\"\npath = \"{slave_path}\"\nbaud = 9600\n"
    );
    let def = BoardDef::parse(&toml, std::path::Path::new("pty.toml")).unwrap();
    let mut opts = covo::tools::options(Config::default());
    opts.board = Some(Arc::new(Board::from_def(def)));
    let rt = Arc::new(
        Runtime::new(opts)
            .unwrap()
            .with_store(Store::in_memory().unwrap()),
    );
    // The device on the other end answers one AT command.
    master
        .set_timeout(std::time::Duration::from_secs(2))
        .unwrap();
    let modem = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut b = [0u8; 64];
        while !got.ends_with(b"\r\n") {
            let n = master.read(&mut b).unwrap();
            got.extend_from_slice(&b[..n]);
        }
        master.write_all(b"+CSQ: 17,0\r\n").unwrap();
        (String::from_utf8(got).unwrap(), master)
    });
    let v = rt
        .call(
            &Session::new("pty", "cli"),
            Via::Direct,
            "serial_request",
            json!({"port": "modem", "text": "AT+CSQ"}),
        )
        .unwrap();
    let (sent, _master) = modem.join().unwrap();
    assert_eq!(sent, "AT+CSQ\r\n");
    assert_eq!(v["reply"]["text"], "+CSQ: 17,0\r\n", "{v}");
    drop(slave);
}

#[test]
fn the_sim_board_includes_a_microcontroller_running_the_real_firmware_core_on_a_pty() {
    let dir = tempfile::tempdir().unwrap();
    let call = |tool: &str, args: &str| cli(dir.path(), &["tools", "call", tool, args]);
    let (code, info) = call("mcu_info", "{}");
    assert_eq!(code, 0, "{info}");
    assert_eq!(info["device"], "pico");
    assert_eq!(info["info"]["adc"]["bits"], 12);
    let (code, w) = call("mcu_gpio_write", r#"{"pin":25,"level":1}"#);
    assert_eq!(code, 0, "{w}");
    let (code, adc) = call("mcu_adc_read", r#"{"channel":0}"#);
    assert_eq!(code, 0, "{adc}");
    assert!(adc["millivolts"].as_u64().unwrap() <= 3300);
    let (code, pwm) = call(
        "mcu_pwm_set",
        r#"{"pin":15,"duty":0.25,"frequency_hz":1000}"#,
    );
    assert_eq!(code, 0, "{pwm}");
    assert_eq!(pwm["duty"], 0.25);
    let (code, i2c) = call(
        "mcu_i2c_transfer",
        r#"{"address":"0x48","data":"00","count":2}"#,
    );
    assert_eq!(code, 0, "{i2c}");
    assert_eq!(i2c["read"]["bytes"].as_array().unwrap().len(), 2);
    let (code, list) = call("mcu_list", "{}");
    assert_eq!(code, 0);
    assert_eq!(list["microcontrollers"][0]["connected"], true);
}

#[test]
fn microcontroller_pins_fall_under_the_board_policy_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    for (tool, args, rule) in [
        ("mcu_gpio_write", r#"{"pin":3,"level":1}"#, "mcu.outputs"),
        (
            "mcu_pwm_set",
            r#"{"pin":15,"duty":0.5,"frequency_hz":500000}"#,
            "mcu.pwm",
        ),
        (
            "mcu_i2c_transfer",
            r#"{"address":"0x50","data":"00"}"#,
            "mcu.i2c_write_allow",
        ),
        (
            "mcu_i2c_transfer",
            r#"{"address":"0x02","count":1}"#,
            "i2c.reserved",
        ),
    ] {
        let (code, v) = cli(dir.path(), &["tools", "call", tool, args]);
        assert_eq!(code, 1, "{tool}: {v}");
        assert_eq!(v["error"]["rule"], rule, "{v}");
        let wrapped = format!(r#"{{"name":"{tool}","arguments":{args}}}"#);
        let (_, v) = cli(dir.path(), &["tools", "call", "tool_call", &wrapped]);
        assert_eq!(v["error"]["rule"], rule, "through tool_call: {v}");
    }
}

#[test]
fn an_mcu_in_process_reads_back_what_it_drove_and_reports_device_errors() {
    let _pty = PTY.lock().unwrap_or_else(|p| p.into_inner());
    let (rt, _) = scripted();
    let s = Session::new("mcu", "cli");
    rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 25, "level": 1}),
    )
    .unwrap();
    let r = rt
        .call(&s, Via::Direct, "mcu_gpio_read", json!({"pin": 25}))
        .unwrap();
    assert_eq!(r["level"], 1);
    let e = err(rt.call(&s, Via::Direct, "mcu_adc_read", json!({"channel": 9})));
    assert!(e.to_string().contains("AdcChannel"), "{e}");
    // The link still works after a device error.
    rt.call(&s, Via::Direct, "mcu_info", json!({})).unwrap();
}

#[test]
fn sampling_logs_each_sensor_at_its_interval_and_not_more_often() {
    let (rt, _) = scripted();
    let hw = rt.board().hardware().unwrap();
    hw.skip_driver_delays(true);
    let mut last = std::collections::HashMap::new();
    let first = covo::tools::readings::sample_due(&rt, &mut last);
    assert_eq!(
        first.len(),
        2,
        "climate and light declare 60 s intervals: {first:?}"
    );
    assert!(
        covo::tools::readings::sample_due(&rt, &mut last).is_empty(),
        "not due again yet"
    );
    let since = "2000-01-01T00:00:00.000Z";
    let until = "2999-01-01T00:00:00.000Z";
    let rows = rt
        .store()
        .unwrap()
        .readings("climate", None, since, until)
        .unwrap();
    assert_eq!(rows.len(), 3, "temperature, humidity, pressure");
}

#[test]
fn a_watch_on_the_simulated_pico_subscribes_fires_on_an_event_and_unsubscribes_when_deleted() {
    let _pty = PTY.lock().unwrap_or_else(|p| p.into_inner());
    let (rt, _sim) = scripted();
    let s = Session::new("mcu-watch", "cli");
    let w = rt
        .call(
            &s,
            Via::Direct,
            "watch_create",
            json!({"sensor": "pico", "quantity": "pin25", "op": ">", "threshold": 0.5,
                   "message": "the LED is on"}),
        )
        .unwrap();
    // A pin reports only its changes; a rule with a duration still fires while it holds.
    let held = rt
        .call(
            &s,
            Via::Direct,
            "watch_create",
            json!({"sensor": "pico", "quantity": "pin25", "op": ">", "threshold": 0.5,
                   "for": "1s", "message": "the LED stayed on"}),
        )
        .unwrap();
    let mut watcher = covo::watch::McuWatcher::new();
    let first = watcher.pass(&rt, std::time::Duration::from_millis(50));
    assert_eq!(first.watched, 1, "{first:?}");
    let hw = rt.board().hardware().unwrap();
    let mask = hw.with_mcu("pico", |l| l.subscription()).unwrap();
    assert_eq!(mask.pin_change, 1 << 25);
    assert_eq!(mask.adc_channels, 0);
    std::thread::sleep(std::time::Duration::from_millis(20)); // the device's baseline

    // The LED is an output that reads back its own level: driving it is a pin change.
    rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 25, "level": 1}),
    )
    .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let fired = loop {
        let pass = watcher.pass(&rt, std::time::Duration::from_millis(50));
        if !pass.fired.is_empty() {
            break pass.fired;
        }
        assert!(std::time::Instant::now() < until, "the watch never fired");
    };
    assert!(fired[0].contains("the LED is on"), "{fired:?}");
    assert!(fired[0].contains("pico pin25 is 1.00"), "{fired:?}");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let fired = loop {
        let pass = watcher.pass(&rt, std::time::Duration::from_millis(50));
        assert_eq!(pass.events, 0, "the LED stays on: no more events");
        if !pass.fired.is_empty() {
            break pass.fired;
        }
        assert!(
            std::time::Instant::now() < until,
            "the held watch never fired"
        );
    };
    assert!(fired[0].contains("the LED stayed on"), "{fired:?}");
    rt.call(&s, Via::Direct, "watch_delete", json!({"id": held["id"]}))
        .unwrap();

    // Without watches the device streams nothing.
    rt.call(&s, Via::Direct, "watch_delete", json!({"id": w["id"]}))
        .unwrap();
    let last = watcher.pass(&rt, std::time::Duration::from_millis(50));
    assert_eq!(last.watched, 0, "{last:?}");
    let mask = hw.with_mcu("pico", |l| l.subscription()).unwrap();
    assert_eq!(mask, covo_mcu_protocol::EventMask::default());
}

#[test]
fn a_sample_due_a_few_milliseconds_after_the_tick_is_taken_on_that_tick() {
    // A 60 s interval checked by a ticker: the check comes 59.99 s after the last sample
    // (timer jitter). Whole seconds made that 59 < 60 and pushed the sample a whole tick later.
    let (rt, _) = scripted();
    rt.board().hardware().unwrap().skip_driver_delays(true);
    let now = std::time::Instant::now();
    let mut last = std::collections::HashMap::new();
    for name in ["climate", "light"] {
        last.insert(
            name.to_string(),
            now - std::time::Duration::from_millis(59_990),
        );
    }
    let due = covo::tools::readings::sample_due(&rt, &mut last);
    assert_eq!(due.len(), 2, "both 60 s sensors are due: {due:?}");
    // Well before the interval is up, nothing is.
    for name in ["climate", "light"] {
        last.insert(name.to_string(), now - std::time::Duration::from_secs(50));
    }
    assert!(covo::tools::readings::sample_due(&rt, &mut last).is_empty());
}
