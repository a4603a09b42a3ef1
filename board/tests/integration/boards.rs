//! Every shipped board file loads, and broken ones are reported with file, line, column and what
//! was expected.

use covo_board::board::{BoardDef, BoardError};
use covo_board::policy::BoardPolicy;
use std::path::{Path, PathBuf};

fn boards_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../boards")
}

fn shipped() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(boards_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_board_file_loads() {
    let files = shipped();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "sim.toml",
        "rpi3.toml",
        "rpi4.toml",
        "rpi5.toml",
        "rpi-zero2w.toml",
        "example-maker.toml",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for f in &files {
        let def = BoardDef::load(f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(def.source, *f);
        // Every board has a bus to talk on and a conservative transfer limit.
        assert!(!def.i2c.is_empty(), "{}: no I2C bus", f.display());
        assert_eq!(def.policy.max_transfer, Some(4096), "{}", f.display());
        BoardPolicy::new(&def);
    }
}

#[test]
fn the_pi_board_files_state_the_real_paths_and_drive_nothing() {
    for (file, chip, pwm_chip, pwm) in [
        (
            "rpi4.toml",
            "/dev/gpiochip0",
            "/sys/class/pwm/pwmchip0",
            [(0, 18), (1, 19)],
        ),
        (
            "rpi3.toml",
            "/dev/gpiochip0",
            "/sys/class/pwm/pwmchip0",
            [(0, 18), (1, 19)],
        ),
        (
            "rpi-zero2w.toml",
            "/dev/gpiochip0",
            "/sys/class/pwm/pwmchip0",
            [(0, 18), (1, 19)],
        ),
        (
            "rpi5.toml",
            "/dev/gpiochip0",
            "/sys/class/pwm/pwmchip2",
            [(2, 18), (3, 19)],
        ),
    ] {
        let def = BoardDef::load(&boards_dir().join(file)).unwrap();
        assert_eq!(def.board.backend, "linux");
        assert_eq!(def.i2c.len(), 1);
        assert_eq!(def.i2c[0].bus, 1);
        assert_eq!(def.i2c[0].path.as_deref(), Some("/dev/i2c-1"));
        let spi: Vec<_> = def.spi.iter().map(|s| s.path.clone().unwrap()).collect();
        assert_eq!(spi, ["/dev/spidev0.0", "/dev/spidev0.1"], "{file}");
        assert_eq!(def.pins.chip.as_deref(), Some(chip), "{file}");
        assert!(def.pins.available.iter().all(|p| (2..=27).contains(p)));
        for busy in [2, 3, 7, 8, 9, 10, 11, 14, 15, 18, 19] {
            assert!(!def.pins.available.contains(&busy), "{file}: GPIO{busy}");
        }
        let got: Vec<(u32, u32)> = def
            .pwm
            .iter()
            .map(|p| (p.channel, p.pin.unwrap()))
            .collect();
        assert_eq!(got, pwm, "{file}");
        assert!(def.pwm.iter().all(|p| p.chip.as_deref() == Some(pwm_chip)));
        assert!(def.device.is_empty(), "{file}");
        let p = BoardPolicy::new(&def);
        assert_eq!(p.check_output(17).unwrap_err().rule, "gpio.outputs");
        assert_eq!(
            p.check_i2c_write(1, 0x76).unwrap_err().rule,
            "i2c.write_allow"
        );
        assert_eq!(
            p.check_pwm(pwm[0].0, 1000.0, 0.5).unwrap_err().rule,
            "pwm.limits"
        );
        assert!(!def.policy.read_only);
    }
}

#[test]
fn the_maker_example_declares_what_the_maker_wired() {
    let def = BoardDef::load(&boards_dir().join("example-maker.toml")).unwrap();
    let climate = def.device("climate").unwrap();
    assert_eq!(
        (climate.driver.as_str(), climate.bus, climate.address),
        ("bme280", Some(1), Some(0x76))
    );
    let oled = def.device("oled").unwrap();
    assert_eq!(
        (oled.driver.as_str(), oled.address),
        ("ssd1306", Some(0x3c))
    );
    assert_eq!(def.device("pump").unwrap().pin, Some(17));
    assert_eq!(def.device("fan").unwrap().channel, Some(0));
    assert_eq!(def.pwm[0].pin, Some(18));
    let usb = def.serial[0].usb.as_ref().unwrap();
    assert_eq!((usb.vid.as_str(), usb.pid.as_str()), ("2e8a", "000a"));
    assert_eq!(def.device("pico").unwrap().port.as_deref(), Some("pico"));

    let p = BoardPolicy::new(&def);
    p.check_i2c_write(1, 0x76).unwrap();
    p.check_i2c_write(1, 0x3c).unwrap();
    assert!(p.check_i2c_write(1, 0x77).is_err());
    p.check_output(17).unwrap();
    assert!(p.check_output(18).is_err());
    p.check_pwm(0, 25_000.0, 0.4).unwrap();
    assert!(p.check_pwm(0, 1_000.0, 0.4).is_err());
    p.check_serial_write("pico").unwrap();
}

const GOOD: &str = r#"[board]
name = "t"
model = "test"

[[i2c]]
bus = 1

[[device]]
name = "climate"
driver = "bme280"
bus = 1
address = 0x76

[[device]]
name = "climate2"
driver = "bme280"
bus = 1
address = 0x77
"#;

fn parse_err(text: &str) -> (usize, usize, String) {
    match BoardDef::parse(text, Path::new("boards/t.toml")).unwrap_err() {
        e @ BoardError::Parse { .. } => {
            let shown = e.to_string();
            assert!(shown.starts_with("boards/t.toml:"), "{shown}");
            let BoardError::Parse {
                line,
                column,
                message,
                ..
            } = e
            else {
                unreachable!()
            };
            (line, column, message)
        }
        e @ BoardError::Invalid { .. } => {
            let shown = e.to_string();
            assert!(shown.starts_with("boards/t.toml:"), "{shown}");
            let BoardError::Invalid { line, message, .. } = e else {
                unreachable!()
            };
            (line, 0, message)
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn the_good_text_parses() {
    BoardDef::parse(GOOD, Path::new("boards/t.toml")).unwrap();
}

#[test]
fn a_type_error_names_line_column_and_the_expected_type() {
    let text = GOOD.replace("address = 0x77", "address = \"seventy\"");
    let (line, column, message) = parse_err(&text);
    assert_eq!(line, 18);
    assert_eq!(column, 11, "the column of the value");
    assert!(
        message.contains("u8") || message.contains("integer"),
        "{message}"
    );
}

#[test]
fn an_unknown_key_names_the_key_and_the_keys_expected() {
    let text = GOOD.replace("address = 0x77", "adress = 0x77");
    let (line, column, message) = parse_err(&text);
    assert_eq!((line, column), (18, 1));
    assert!(message.contains("adress"), "{message}");
    assert!(
        message.contains("address"),
        "lists what was expected: {message}"
    );
}

#[test]
fn a_device_on_an_undeclared_bus_points_at_that_device() {
    let text = GOOD.replace("bus = 1\naddress = 0x77", "bus = 3\naddress = 0x77");
    let (line, _, message) = parse_err(&text);
    // The `bus` of climate2, though "climate" (line 9) is a prefix of its name.
    assert_eq!(line, 17);
    assert!(message.contains("bus 3"), "{message}");
    assert!(message.contains("climate2"), "{message}");
}

#[test]
fn a_duplicate_device_name_points_at_the_second_one() {
    let text = GOOD.replace("name = \"climate2\"", "name = \"climate\"");
    let (line, _, message) = parse_err(&text);
    assert_eq!(line, 15, "the second declaration");
    assert!(
        message.contains("'climate'") && message.contains("twice"),
        "{message}"
    );
    assert!(message.contains("line 9"), "names the first one: {message}");
}

#[test]
fn an_address_beyond_seven_bits_is_refused_where_it_is_written() {
    let text = GOOD.replace("address = 0x77", "address = 0x80");
    let (line, _, message) = parse_err(&text);
    assert_eq!(line, 18);
    assert!(
        message.contains("0x80") && message.contains("7-bit"),
        "{message}"
    );
    // Larger than a byte: the schema itself refuses it, at the value.
    let text = GOOD.replace("address = 0x77", "address = 0x176");
    let (line, column, _) = parse_err(&text);
    assert_eq!((line, column), (18, 11));
}

#[test]
fn a_syntax_error_and_a_missing_file_are_reported_with_the_path() {
    let (line, _, _) = parse_err("[board]\nname = \"t\nmodel = \"m\"\n");
    assert_eq!(line, 2);
    let e = BoardDef::load(Path::new("/nonexistent/board.toml")).unwrap_err();
    assert!(matches!(e, BoardError::Read { .. }));
    assert!(
        e.to_string()
            .starts_with("/nonexistent/board.toml: cannot read"),
        "{e}"
    );
}

/// A board with pins, PWM, a serial port, a microcontroller and a policy over them: each test
/// below breaks one thing in it.
const FULL: &str = r#"[board]
name = "t"
model = "test"

[[serial]]
name = "pico"
path = "/dev/ttyACM0"

[pins]
available = [4, 17, 27]

[[pwm]]
channel = 0
pin = 18

[[device]]
name = "relay"
driver = "gpio_out"
pin = 17

[[device]]
name = "pico"
driver = "mcu"
port = "pico"

[policy]
outputs = [4]
pwm = [{ channel = 0, min_hz = 10.0, max_hz = 40000.0 }]
serial_allow = ["pico"]

[[policy.mcu]]
device = "pico"
outputs = [25]
pwm = [{ channel = 15, min_hz = 10.0, max_hz = 1000.0 }]
"#;

/// The 1-based line of the only line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    let hits: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "{needle:?} in {text}");
    hits[0]
}

/// A definition that parses but is refused: the line, and the message as shown, which must
/// name the file, the line and `key`.
fn refused(text: &str, key: &str) -> (usize, String) {
    let e = BoardDef::parse(text, Path::new("boards/t.toml")).unwrap_err();
    let BoardError::Invalid { line, .. } = &e else {
        panic!("expected Invalid, got {e:?}")
    };
    let line = *line;
    let shown = e.to_string();
    assert!(shown.starts_with("boards/t.toml:"), "{shown}");
    assert!(shown.contains(&format!("line {line}")), "{shown}");
    assert!(shown.contains(key), "names `{key}`: {shown}");
    (line, shown)
}

#[test]
fn the_full_text_parses() {
    BoardDef::parse(FULL, Path::new("boards/t.toml")).unwrap();
}

#[test]
fn an_unknown_driver_is_refused_at_its_driver_key() {
    let text = FULL.replace("driver = \"gpio_out\"", "driver = \"dht22\"");
    let (line, shown) = refused(&text, "driver");
    assert_eq!(line, line_of(&text, "dht22"));
    assert!(
        shown.contains("'relay'") && shown.contains("dht22"),
        "{shown}"
    );
    assert!(shown.contains("bme280"), "lists the known drivers: {shown}");
    // Every driver covo reads or drives is known.
    for d in [
        "bme280", "bmp280", "bh1750", "sht4x", "sht3x", "aht20", "scd4x", "ads1115", "ssd1306",
        "gpio_out", "gpio_in", "pwm", "serial", "mcu",
    ] {
        let mut text = FULL.replace("driver = \"gpio_out\"", &format!("driver = \"{d}\""));
        if d == "serial" || d == "mcu" {
            text = text.replace("pin = 17", "port = \"pico\"");
        }
        BoardDef::parse(&text, Path::new("boards/t.toml")).unwrap_or_else(|e| panic!("{d}: {e}"));
    }
}

#[test]
fn a_gpio_out_pin_outside_the_available_pins_is_refused() {
    let text = FULL.replace("pin = 17", "pin = 12");
    let (line, shown) = refused(&text, "pin");
    assert_eq!(line, line_of(&text, "pin = 12"));
    assert!(shown.contains("'relay'") && shown.contains("12"), "{shown}");
    assert!(shown.contains("available"), "{shown}");
}

#[test]
fn a_policy_output_outside_the_available_pins_is_refused() {
    let text = FULL.replace("outputs = [4]", "outputs = [4,\n  22]");
    let (line, shown) = refused(&text, "outputs");
    assert_eq!(line, line_of(&text, "  22]"), "the line of the entry");
    assert!(
        shown.contains("22") && shown.contains("available"),
        "{shown}"
    );
}

#[test]
fn a_pwm_limit_with_min_above_max_is_refused() {
    let text = FULL.replace(
        "{ channel = 0, min_hz = 10.0, max_hz = 40000.0 }",
        "{ channel = 0, min_hz = 50000.0, max_hz = 40000.0 }",
    );
    let (line, shown) = refused(&text, "min_hz");
    assert_eq!(line, line_of(&text, "min_hz = 50000.0"));
    assert!(shown.contains("max_hz"), "{shown}");
    // The same on a microcontroller's pin.
    let text = FULL.replace(
        "{ channel = 15, min_hz = 10.0, max_hz = 1000.0 }",
        "{ channel = 15,\n  min_hz = 2000.0, max_hz = 1000.0 }",
    );
    let (line, shown) = refused(&text, "min_hz");
    assert_eq!(line, line_of(&text, "min_hz = 2000.0"));
    assert!(shown.contains("pico"), "{shown}");
}

#[test]
fn a_policy_for_an_undeclared_mcu_is_refused() {
    let text = FULL.replace("device = \"pico\"", "device = \"picoo\"");
    let (line, shown) = refused(&text, "device");
    assert_eq!(line, line_of(&text, "picoo"));
    assert!(shown.contains("picoo") && shown.contains("mcu"), "{shown}");
    // A declared device that is not a microcontroller is no better.
    let text = FULL.replace("device = \"pico\"", "device = \"relay\"");
    let (line, _) = refused(&text, "device");
    assert_eq!(line, line_of(&text, "device = \"relay\""));
}

#[test]
fn a_serial_allow_entry_for_an_undeclared_port_is_refused() {
    let text = FULL.replace(
        "serial_allow = [\"pico\"]",
        "serial_allow = [\"pico\", \"gps\"]",
    );
    let (line, shown) = refused(&text, "serial_allow");
    assert_eq!(line, line_of(&text, "serial_allow"));
    assert!(shown.contains("'gps'") && shown.contains("pico"), "{shown}");
}

#[test]
fn errors_say_line_n_like_the_config_errors_do() {
    let text = GOOD.replace("address = 0x77", "adress = 0x77");
    let shown = BoardDef::parse(&text, Path::new("boards/t.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        shown.starts_with("boards/t.toml: line 18, column 1: "),
        "{shown}"
    );
}

#[test]
fn a_board_file_that_is_not_utf8_names_the_line_and_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let mut bytes = FULL.as_bytes().to_vec();
    let at = FULL.find("\"relay\"").unwrap() + 1;
    bytes[at] = 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let e = BoardDef::load(&path).unwrap_err();
    let shown = e.to_string();
    assert!(shown.starts_with(&path.display().to_string()), "{shown}");
    let line = line_of(FULL, "\"relay\"");
    assert!(shown.contains(&format!("line {line}")), "{shown}");
    assert!(shown.contains(&format!("byte {at}")), "{shown}");
    assert!(shown.contains("UTF-8"), "{shown}");
}

#[test]
fn a_serial_device_on_a_port_that_cannot_exist_is_refused_where_it_is_written() {
    // A device on a port no [[serial]] declares.
    let text = FULL.replace("port = \"pico\"", "port = \"picoo\"");
    let (line, shown) = refused(&text, "port");
    assert_eq!(line, line_of(&text, "port = \"picoo\""));
    assert!(
        shown.contains("'picoo'") && shown.contains("pico"),
        "{shown}"
    );
    // A device path as the port is the same port.
    let text = FULL.replace("port = \"pico\"", "port = \"/dev/ttyACM0\"");
    BoardDef::parse(&text, Path::new("boards/t.toml")).unwrap();
    // A microcontroller with no port at all.
    let text = FULL.replace("port = \"pico\"\n", "");
    let (line, shown) = refused(&text, "port");
    assert_eq!(line, line_of(&text, "driver = \"mcu\""));
    assert!(shown.contains("'pico'"), "{shown}");
    // A port with neither a path nor USB ids.
    let text = FULL.replace("path = \"/dev/ttyACM0\"\n", "");
    let (line, shown) = refused(&text, "usb");
    assert_eq!(line, line_of(&text, "[[serial]]") + 1);
    assert!(
        shown.contains("'pico'") && shown.contains("path"),
        "{shown}"
    );
    // A path that is not a device path.
    let text = FULL.replace("path = \"/dev/ttyACM0\"", "path = \"ttyACM0\"");
    let (line, shown) = refused(&text, "path");
    assert_eq!(line, line_of(&text, "path = \"ttyACM0\""));
    assert!(
        shown.contains("/dev/ttyACM0"),
        "suggests the device path: {shown}"
    );
    // A sim port on a Linux board, and a sim port the sim does not have.
    let text = FULL.replace("path = \"/dev/ttyACM0\"", "path = \"sim:echo\"");
    let (line, shown) = refused(&text, "path");
    assert_eq!(line, line_of(&text, "sim:echo"));
    assert!(shown.contains("linux"), "{shown}");
    let sim = FULL.replace("model = \"test\"", "model = \"test\"\nbackend = \"sim\"");
    for port in covo_board::board::SIM_SERIAL_PORTS {
        let text = sim.replace("/dev/ttyACM0", &format!("sim:{port}"));
        BoardDef::parse(&text, Path::new("boards/t.toml")).unwrap_or_else(|e| panic!("{e}"));
    }
    let text = sim.replace("path = \"/dev/ttyACM0\"", "path = \"sim:gps\"");
    let (line, shown) = refused(&text, "path");
    assert_eq!(line, line_of(&text, "sim:gps"));
    assert!(
        shown.contains("sim:echo") && shown.contains("sim:mcu"),
        "{shown}"
    );
    // USB ids that are not hex.
    let text = FULL.replace(
        "path = \"/dev/ttyACM0\"",
        "usb = { vid = \"pico\", pid = \"000a\" }",
    );
    let (line, shown) = refused(&text, "vid");
    assert_eq!(line, line_of(&text, "usb = {"));
    assert!(shown.contains("'pico'") && shown.contains("hex"), "{shown}");
    let text = FULL.replace(
        "path = \"/dev/ttyACM0\"",
        "usb = { vid = \"2e8a\", pid = \"000a\" }",
    );
    BoardDef::parse(&text, Path::new("boards/t.toml")).unwrap();
    // Two ports with one name.
    let text = FULL.replace(
        "[pins]",
        "[[serial]]\nname = \"pico\"\npath = \"/dev/ttyUSB0\"\n\n[pins]",
    );
    let (line, shown) = refused(&text, "name");
    assert_eq!(line, line_of(&text, "ttyUSB0") - 1);
    assert!(shown.contains("twice"), "{shown}");
}

#[test]
fn a_flash_method_is_read_and_checked_where_it_is_written() {
    use covo_board::board::FlashMethod;
    let with =
        |flash: &str| FULL.replace("port = \"pico\"\n", &format!("port = \"pico\"\n{flash}\n"));
    let text = with(r#"flash = { method = "uf2", drive = "/media/pi/RPI-RP2" }"#);
    let def = BoardDef::parse(&text, Path::new("boards/t.toml")).unwrap();
    let f = def.device("pico").unwrap().flash.clone().unwrap();
    assert_eq!(f.method, FlashMethod::Uf2);
    assert_eq!(f.drive.as_deref(), Some(Path::new("/media/pi/RPI-RP2")));
    let text =
        with(r#"flash = { method = "command", command = ["espflash", "flash", "{image}"] }"#);
    let def = BoardDef::parse(&text, Path::new("boards/t.toml")).unwrap();
    assert_eq!(
        def.device("pico")
            .unwrap()
            .flash
            .as_ref()
            .unwrap()
            .command
            .as_ref()
            .unwrap()
            .len(),
        3
    );

    for (flash, says) in [
        (r#"flash = { method = "probe-rs" }"#, "needs `chip`"),
        (
            r#"flash = { method = "command", command = [] }"#,
            "needs `command",
        ),
        (r#"flash = { method = "command" }"#, "needs `command"),
    ] {
        let text = with(flash);
        let (line, shown) = refused(&text, "flash");
        assert_eq!(line, line_of(&text, flash), "{shown}");
        assert!(shown.contains(says), "{shown}");
    }
    // An unknown method is a parse error naming the ones there are.
    let (_, _, message) = parse_err(&with(r#"flash = { method = "dfu" }"#));
    assert!(message.contains("probe-rs"), "{message}");
    // Only a microcontroller is flashed.
    let text = GOOD.replace(
        "address = 0x77\n",
        "address = 0x77\nflash = { method = \"uf2\" }\n",
    );
    let (line, shown) = refused(&text, "flash");
    assert_eq!(line, line_of(&text, "flash ="));
    assert!(shown.contains("only mcu devices"), "{shown}");
}
