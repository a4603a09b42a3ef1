//! `covo doctor` against fixture root file systems (`tests/fixtures/doctor/`: a Pi 5 set up
//! right, a Pi 4 with I2C off and its user outside the `i2c` group, a machine that is no Pi), and
//! its network checks against a real listener and the scripted LLM server.

use covo::config::{Config, LlmConfig, MqttConfig};
use covo::doctor::{model_check, Check, Doctor, Status};
use covo::llm::{HttpModel, Provider};
use covo_tests::llm_server::{Reply, ScriptedLlm};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/doctor")
        .join(name)
}

fn board(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../boards")
        .join(name)
        .display()
        .to_string()
}

/// `covo doctor --offline --root ROOT` with `board` in a fresh covo.toml.
fn doctor(root: &str, board: &str) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("covo.toml");
    std::fs::write(&cfg, format!("board = \"{board}\"\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "doctor",
            "--offline",
            "--root",
        ])
        .arg(fixture(root))
        .env("COVO_HOME", dir.path().join("home"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

/// The line after `start`'s line (its fix).
fn fix_of<'a>(text: &'a str, start: &str) -> &'a str {
    let mut it = text.lines().skip_while(|l| !l.starts_with(start));
    it.next();
    it.next().unwrap_or("").trim()
}

#[test]
fn a_pi5_set_up_right_passes_every_check() {
    let (out, text) = doctor("pi5-ok", &board("rpi5.toml"));
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.lines()
            .all(|l| !l.starts_with("FAIL") && !l.starts_with("warn")),
        "{text}"
    );
    line(&text, "ok   hardware: Raspberry Pi 5 Model B Rev 1.0");
    line(&text, "ok   i2c: enabled in /boot/firmware/config.txt");
    line(&text, "ok   spi: enabled in /boot/firmware/config.txt");
    for node in [
        "/dev/i2c-1",
        "/dev/spidev0.0",
        "/dev/spidev0.1",
        "/dev/ttyAMA0",
        "/dev/gpiochip0",
    ] {
        line(&text, &format!("ok   device: {node} opens read-write"));
    }
    line(&text, "ok   groups: pi is in i2c, spi, gpio, dialout");
    assert!(
        line(&text, "ok   clock: ").ends_with("synchronized by NTP"),
        "{text}"
    );
    line(&text, "ok   storage: ");
    assert!(text.trim_end().ends_with("0 failed, 0 warnings"), "{text}");
}

#[test]
fn a_pi4_with_i2c_off_fails_with_the_fixes() {
    let (out, text) = doctor("pi4-i2c-off", &board("rpi4.toml"));
    assert_eq!(out.status.code(), Some(1), "{text}");
    line(&text, "ok   hardware: Raspberry Pi 4 Model B Rev 1.4");
    line(
        &text,
        "FAIL i2c: off in /boot/config.txt, and the board file uses i2c",
    );
    assert_eq!(
        fix_of(&text, "FAIL i2c"),
        "fix: add `dtparam=i2c_arm=on` to /boot/config.txt (or `sudo raspi-config nonint do_i2c 0`) and reboot"
    );
    line(&text, "ok   spi: enabled in /boot/config.txt");
    line(&text, "FAIL device: /dev/i2c-1 is missing");
    line(&text, "ok   device: /dev/serial0 opens read-write");
    line(&text, "FAIL groups: pi is not in i2c");
    assert_eq!(
        fix_of(&text, "FAIL groups"),
        "fix: sudo usermod -aG i2c pi, then log in again"
    );
    // No NTP marker in this root: a warning, not a failure.
    line(&text, "warn clock: ");
    assert!(text.trim_end().ends_with("3 failed, 1 warnings"), "{text}");
}

#[test]
fn a_machine_that_is_no_pi_passes_with_the_sim_board_and_fails_with_a_pi_board() {
    let (out, text) = doctor("non-pi", "sim");
    assert_eq!(out.status.code(), Some(0), "{text}");
    line(
        &text,
        "ok   hardware: not a Raspberry Pi; the sim board needs no hardware",
    );
    assert!(
        !text.contains(" i2c: ") && !text.contains("device:"),
        "{text}"
    );
    // The sim board's devices answer on the simulated bus.
    line(
        &text,
        "ok   i2c probe: climate (bme280) answers at 0x76 on sim bus 1",
    );
    line(
        &text,
        "ok   i2c probe: light (bh1750) answers at 0x23 on sim bus 1",
    );
    line(
        &text,
        "ok   i2c probe: oled (ssd1306) answers at 0x3c on sim bus 1",
    );

    let (out, text) = doctor("non-pi", &board("rpi4.toml"));
    assert_eq!(out.status.code(), Some(1), "{text}");
    line(
        &text,
        "warn hardware: not a Raspberry Pi (no device-tree model)",
    );
    line(&text, "FAIL device: /dev/i2c-1 is missing");
    // Its /etc/group has none of the Pi's device groups.
    line(
        &text,
        "warn groups: no group i2c, spi, gpio, dialout on this system",
    );
}

#[test]
fn each_declared_i2c_device_is_probed_and_one_that_does_not_answer_fails_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("board.toml");
    std::fs::write(
        &file,
        "[board]\nname = \"sim\"\nmodel = \"sim with a second BME280\"\nbackend = \"sim\"\n\
         [[i2c]]\nbus = 1\n[pins]\navailable = [17]\n\
         [[device]]\nname = \"climate\"\ndriver = \"bme280\"\nbus = 1\naddress = 0x76\n\
         [[device]]\nname = \"outside\"\ndriver = \"bme280\"\nbus = 1\naddress = 0x77\n\
         [[device]]\nname = \"relay\"\ndriver = \"gpio_out\"\npin = 17\n",
    )
    .unwrap();
    let (out, text) = doctor("non-pi", file.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{text}");
    line(
        &text,
        "ok   i2c probe: climate (bme280) answers at 0x76 on sim bus 1",
    );
    line(
        &text,
        "FAIL i2c probe: outside (bme280): no answer at 0x77 on sim bus 1",
    );
    let fix = fix_of(&text, "FAIL i2c probe: outside");
    assert!(fix.contains("models a bme280 at 0x76"), "{text}");
    // A GPIO device is no I2C device: no probe line for it.
    assert!(!text.contains("relay"), "{text}");
    assert!(text.contains("checks: 1 failed,"), "{text}");
}

#[test]
fn a_device_on_a_missing_bus_is_reported_not_probed_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("board.toml");
    std::fs::write(
        &file,
        "[board]\nname = \"pc\"\nmodel = \"a PC\"\nbackend = \"linux\"\n\
         [[i2c]]\nbus = 1\n\
         [[device]]\nname = \"climate\"\ndriver = \"bme280\"\nbus = 1\naddress = 0x76\n",
    )
    .unwrap();
    let (out, text) = doctor("non-pi", file.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{text}");
    line(
        &text,
        "FAIL i2c probe: climate (bme280) at 0x76 not probed: /dev/i2c-1 is missing",
    );
    assert!(
        fix_of(&text, "FAIL i2c probe: climate").contains("dtparam=i2c_arm=on"),
        "{text}"
    );
}

#[test]
fn a_serial_port_found_by_usb_ids_is_checked_in_sysfs() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    // A Pico's CDC port as the kernel lays it out: class/tty/ttyACM0 -> the interface's tty
    // folder, whose `device` is the interface; the USB device with its ids is the parent.
    let usb = root.path().join("sys/devices/pci0000:00/usb1/1-1");
    std::fs::create_dir_all(&usb).unwrap();
    std::fs::write(usb.join("idVendor"), "2e8a\n").unwrap();
    std::fs::write(usb.join("idProduct"), "000a\n").unwrap();
    let iface = usb.join("1-1:1.0");
    let tty = iface.join("tty/ttyACM0");
    std::fs::create_dir_all(&tty).unwrap();
    symlink(&iface, tty.join("device")).unwrap();
    std::fs::create_dir_all(root.path().join("sys/class/tty")).unwrap();
    symlink(&tty, root.path().join("sys/class/tty/ttyACM0")).unwrap();
    let file = root.path().join("board.toml");
    std::fs::write(
        &file,
        "[board]\nname = \"usb\"\nmodel = \"a PC with a Pico\"\nbackend = \"linux\"\n\
         [[serial]]\nname = \"pico\"\nusb = { vid = \"2e8a\", pid = \"000a\" }\n\
         [[serial]]\nname = \"gps\"\nusb = { vid = \"1a86\", pid = \"7523\" }\n",
    )
    .unwrap();
    let (out, text) = doctor(root.path().to_str().unwrap(), file.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{text}");
    line(
        &text,
        "ok   device: serial port pico: USB 2e8a:000a is /dev/ttyACM0",
    );
    let l = line(&text, "FAIL device: serial port gps: ");
    assert!(l.contains("no USB serial port matches 1a86:7523"), "{text}");
    assert!(l.contains("2e8a:000a"), "what is plugged in: {text}");
    assert!(
        fix_of(&text, "FAIL device: serial port gps").contains("lsusb"),
        "{text}"
    );
}

#[test]
fn a_broken_board_file_or_config_is_a_failed_check_not_a_crash() {
    let (out, text) = doctor("non-pi", "/nonexistent/board.toml");
    assert_eq!(out.status.code(), Some(1), "{text}");
    line(&text, "FAIL board file: ");

    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("covo.toml");
    std::fs::write(&cfg, "[mqtt]\nulr = \"mqtt://x\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "doctor",
            "--offline",
            "--root",
        ])
        .arg(fixture("non-pi"))
        .env("COVO_HOME", dir.path().join("home"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    line(&text, "FAIL config: invalid config");
    assert!(text.contains("unknown field `ulr`"), "{text}");
    // The other checks still ran, on the defaults.
    line(&text, "ok   storage: ");
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn checks(root: &str, config: &Config, now: SystemTime) -> Vec<Check> {
    Doctor {
        root: fixture(root),
        config,
        now,
    }
    .local_checks()
}

#[test]
fn a_clock_that_was_never_set_fails() {
    let config = Config::default();
    let c = checks("pi5-ok", &config, at(86_400 * 3));
    let clock = c.iter().find(|c| c.topic == "clock").unwrap();
    assert_eq!(clock.status, Status::Fail, "{clock}");
    assert!(clock.message.contains("1970-01-04"), "{clock}");
    assert!(clock.fix.as_deref().unwrap().contains("NTP"), "{clock}");
    let c = checks("pi5-ok", &config, at(covo::doctor::SANE_AFTER + 1));
    assert_eq!(
        c.iter().find(|c| c.topic == "clock").unwrap().status,
        Status::Ok
    );
}

#[test]
fn the_broker_check_connects_for_real() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let with = |url: String| Config {
        mqtt: Some(MqttConfig {
            url: Some(url),
            ..Default::default()
        }),
        ..Default::default()
    };
    let config = with(format!("mqtt://127.0.0.1:{port}"));
    let d = Doctor {
        root: fixture("non-pi"),
        config: &config,
        now: SystemTime::now(),
    };
    assert_eq!(d.broker().status, Status::Ok, "{}", d.broker());
    // A list (the nodes of a cluster): each is checked; one down of two is a warning that
    // names it, with any password masked.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let two = with(format!(
        "mqtt://127.0.0.1:{port}, mqtt://u:hunter2@127.0.0.1:{dead}"
    ));
    let d2 = Doctor {
        root: fixture("non-pi"),
        config: &two,
        now: SystemTime::now(),
    };
    let b = d2.broker();
    assert_eq!(b.status, Status::Warn, "{b}");
    assert!(b.message.starts_with("1 of 2 brokers answer"), "{b}");
    assert!(
        b.message
            .contains(&format!("127.0.0.1:{dead} does not answer")),
        "{b}"
    );
    assert!(!b.message.contains("hunter2"), "{b}");
    drop(listener);
    let b = d.broker();
    assert_eq!(b.status, Status::Fail, "{b}");
    assert!(b.message.contains("does not answer"), "{b}");
    // No [mqtt]: a warning.
    let none = Config::default();
    let d = Doctor {
        root: fixture("non-pi"),
        config: &none,
        now: SystemTime::now(),
    };
    assert_eq!(d.broker().status, Status::Warn);
}

#[test]
fn the_model_check_sends_one_request_offering_sensor_read() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("sensor_read", r#"{"sensor":"climate"}"#)]),
        Reply::text("It is 21 degrees."),
        Reply::status(500, r#"{"error":{"message":"boom"}}"#),
    ]);
    let model = |retries: u32| {
        HttpModel::new(
            Provider::resolve(
                &LlmConfig {
                    base_url: Some(srv.openai_base_url()),
                    model: Some("scripted".into()),
                    max_retries: Some(retries),
                    ..Default::default()
                },
                &|_| None,
            )
            .unwrap(),
        )
        .unwrap()
    };
    let m = model(0);
    let ok = rt.block_on(model_check(Some(&m), ""));
    assert_eq!(ok.status, Status::Ok, "{ok}");
    assert!(ok.to_string().contains("tool calls: native"), "{ok}");
    let chats: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|r| r.api.is_some())
        .collect();
    let req = &chats[0];
    let tools = req.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "one tiny request");
    assert_eq!(tools[0]["function"]["name"], "sensor_read");
    let text_only = rt.block_on(model_check(Some(&m), ""));
    assert_eq!(text_only.status, Status::Warn, "{text_only}");
    let broken = rt.block_on(model_check(Some(&m), ""));
    assert_eq!(broken.status, Status::Fail, "{broken}");
    // No model and nothing local: a warning that says how to set one. (A found server is
    // covered against a real llama.cpp server in covo-tests' `llama` suite.)
    let none = rt.block_on(model_check(None, &srv.addr().to_string()));
    assert_eq!(none.status, Status::Warn);
    assert!(
        none.to_string()
            .contains("no Ollama or llama.cpp server answers"),
        "{none}"
    );
}
