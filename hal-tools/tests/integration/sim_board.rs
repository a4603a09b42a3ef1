//! The sim board with the real crates.io drivers on it, and its scripting for
//! hardware-in-the-loop tests.

use covo_hal_tools::bus::{BusError, Edge, Line, Pwm};
use covo_hal_tools::driver::Driver;
use covo_hal_tools::sensors::{self, SensorError};
use covo_hal_tools::sim::{Environment, Fault, SimBoard};
use covo_hal_tools::{display, sim};
use embedded_hal::i2c::I2c;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn value(q: &[sensors::Quantity], name: &str) -> f64 {
    q.iter().find(|q| q.name == name).unwrap().value
}

fn room(t: f64, rh: f64, hpa: f64, lux: f64) -> Environment {
    Environment {
        temperature_c: t,
        humidity_pct: rh,
        pressure_hpa: hpa,
        illuminance_lux: lux,
    }
}

#[test]
fn the_real_bme280_driver_reads_a_plausible_room_from_the_sim() {
    let board = SimBoard::new();
    let q = sensors::read(Driver::Bme280, board.i2c(1).unwrap(), 0x76).unwrap();
    let (t, rh, p) = (
        value(&q, "temperature"),
        value(&q, "humidity"),
        value(&q, "pressure"),
    );
    assert!((10.0..=35.0).contains(&t), "{t}");
    assert!((0.0..=100.0).contains(&rh), "{rh}");
    assert!((900.0..=1100.0).contains(&p), "{p}");
    let env = board.environment();
    assert!((t - env.temperature_c).abs() < 0.1, "{t} vs {env:?}");
}

#[test]
fn a_fixed_environment_is_what_the_bme280_driver_reports() {
    let board = SimBoard::new();
    board.set_environment(room(30.5, 71.0, 987.6, 10.0));
    let q = sensors::read(Driver::Bme280, board.i2c(1).unwrap(), 0x76).unwrap();
    assert!((value(&q, "temperature") - 30.5).abs() < 0.02, "{q:?}");
    assert!((value(&q, "humidity") - 71.0).abs() < 0.1, "{q:?}");
    assert!((value(&q, "pressure") - 987.6).abs() < 0.05, "{q:?}");
    board.release_environment();
}

#[test]
fn the_bmp280_driver_reads_temperature_and_pressure_only() {
    let board = SimBoard::new();
    board.set_environment(room(18.0, 50.0, 1020.0, 0.0));
    let q = sensors::read(Driver::Bmp280, board.i2c(1).unwrap(), 0x76).unwrap();
    let names: Vec<_> = q.iter().map(|q| q.name).collect();
    assert_eq!(names, ["temperature", "pressure"]);
    assert!((value(&q, "pressure") - 1020.0).abs() < 0.05);
}

#[test]
fn the_bme280_model_also_converts_in_normal_mode() {
    let board = SimBoard::new();
    board.set_environment(room(22.0, 40.0, 1000.0, 0.0));
    let mut i2c = board.i2c(1).unwrap();
    // osrs_h 1x; then osrs_t 1x, osrs_p 1x, normal mode; no filter: 16-bit results
    i2c.write(0x76, &[0xF2, 0b001]).unwrap();
    i2c.write(0x76, &[0xF4, (0b001 << 5) | (0b001 << 2) | 0b11])
        .unwrap();
    let mut mode = [0u8];
    i2c.write_read(0x76, &[0xF4], &mut mode).unwrap();
    assert_eq!(mode[0] & 0b11, 0b11, "normal mode stays set");
    let mut data = [0u8; 8];
    i2c.write_read(0x76, &[0xF7], &mut data).unwrap();
    assert_ne!(data[0..3], [0x80, 0, 0], "a pressure conversion happened");
    assert_eq!(data[2], 0, "at 16 bits the xlsb is empty");
}

#[test]
fn the_real_bh1750_driver_reads_the_sim_light_level() {
    let board = SimBoard::new();
    let q = sensors::read(Driver::Bh1750, board.i2c(1).unwrap(), 0x23).unwrap();
    let lux = value(&q, "illuminance");
    assert!((200.0..=450.0).contains(&lux), "{lux}");
    board.set_environment(room(20.0, 50.0, 1013.0, 1234.0));
    let q = sensors::read(Driver::Bh1750, board.i2c(1).unwrap(), 0x23).unwrap();
    assert!((value(&q, "illuminance") - 1234.0).abs() < 1.0, "{q:?}");
}

#[test]
fn text_on_the_oled_lights_pixels_clear_blanks_them_and_the_png_is_128_by_64() {
    let board = SimBoard::new();
    let lines = vec![
        "covo".to_string(),
        "21.3 C  45 %RH".to_string(),
        "a line far longer than twenty-one characters".to_string(),
    ];
    display::show_text(board.i2c(1).unwrap(), 0x3C, &lines).unwrap();
    let text = board.framebuffer_text();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 64);
    assert!(rows.iter().all(|r| r.len() == 128));
    assert!(board.framebuffer_lit() > 100);
    assert!(
        rows[0..10].iter().any(|r| r.contains('#')),
        "line 1 at the top"
    );
    assert!(rows[30..].iter().all(|r| !r.contains('#')), "only 3 lines");
    assert!(board.oled_status().display_on);

    let png = board.framebuffer_png();
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (128, 64));
    let lit = buf[..info.buffer_size()].iter().filter(|p| **p > 0).count();
    assert_eq!(lit, board.framebuffer_lit());

    display::clear(board.i2c(1).unwrap(), 0x3C).unwrap();
    assert_eq!(board.framebuffer_lit(), 0);
}

#[test]
fn a_long_line_is_cut_to_twenty_one_characters() {
    let board = SimBoard::new();
    display::show_text(board.i2c(1).unwrap(), 0x3C, &["W".repeat(40)]).unwrap();
    let text = board.framebuffer_text();
    let lit_in = |x: usize| text.lines().any(|r| r.as_bytes()[x] == b'#');
    let last_lit = (0..128).rev().find(|x| lit_in(*x)).unwrap();
    assert!(last_lit < 126, "21 × 6 = 126 columns at most: {last_lit}");
    assert!(
        last_lit >= 120,
        "but the 21st character is there: {last_lit}"
    );
}

#[test]
fn scanning_every_address_with_a_one_byte_read_finds_exactly_the_three_declared_devices() {
    let board = SimBoard::new();
    let mut i2c = board.i2c(1).unwrap();
    let found: Vec<u8> = (0x08..=0x77u8)
        .filter(|a| i2c.read(*a, &mut [0u8]).is_ok())
        .collect();
    assert_eq!(found, [0x23, 0x3C, 0x76]);
    assert_eq!(i2c.write(0x50, &[]), Err(BusError::Nack(0x50)));
    assert_eq!(
        i2c.write(0x76, &[]),
        Ok(()),
        "a zero-length write probes too"
    );
}

#[test]
fn a_nack_fault_lasts_its_count_and_comes_out_of_the_driver_as_a_bus_nack() {
    let board = SimBoard::new();
    board.inject(Fault::Nack {
        address: 0x76,
        times: 2,
    });
    let i2c = board.i2c(1).unwrap();
    for _ in 0..2 {
        let e = sensors::read(Driver::Bme280, i2c.clone(), 0x76).unwrap_err();
        assert_eq!(e, SensorError::Bus(BusError::Nack(0x76)));
    }
    assert!(sensors::read(Driver::Bme280, i2c.clone(), 0x76).is_ok());
}

#[test]
fn a_timeout_fault_hits_every_address_then_the_bus_works_again() {
    let board = SimBoard::new();
    board.inject(Fault::Timeout { times: 2 });
    let mut i2c = board.i2c(1).unwrap();
    assert_eq!(i2c.read(0x23, &mut [0u8]), Err(BusError::Timeout));
    assert_eq!(i2c.read(0x50, &mut [0u8]), Err(BusError::Timeout));
    assert_eq!(i2c.read(0x23, &mut [0u8]), Ok(()));
}

#[test]
fn a_stuck_line_stays_stuck_until_the_faults_are_cleared() {
    let board = SimBoard::new();
    board.inject(Fault::StuckLine);
    let mut i2c = board.i2c(1).unwrap();
    for _ in 0..5 {
        assert!(matches!(
            i2c.read(0x76, &mut [0u8]),
            Err(BusError::Stuck(_))
        ));
    }
    let e = display::show_text(i2c.clone(), 0x3C, &["x".into()]).unwrap_err();
    assert!(matches!(e, display::DisplayError::Bus(BusError::Stuck(_))));
    board.clear_faults();
    assert_eq!(i2c.read(0x76, &mut [0u8]), Ok(()));
}

#[test]
fn a_corrupt_reading_returns_ff_bytes_for_its_count_then_real_data() {
    let board = SimBoard::new();
    let mut i2c = board.i2c(1).unwrap();
    board.inject(Fault::CorruptReading {
        address: 0x76,
        times: 1,
    });
    let mut id = [0u8];
    i2c.write_read(0x76, &[0xD0], &mut id).unwrap();
    assert_eq!(id, [0xFF]);
    i2c.write_read(0x76, &[0xD0], &mut id).unwrap();
    assert_eq!(id, [0x60]);
    // The driver sees garbage as a chip it does not know.
    board.inject(Fault::CorruptReading {
        address: 0x76,
        times: 1,
    });
    assert!(matches!(
        sensors::read(Driver::Bme280, i2c.clone(), 0x76),
        Err(SensorError::Driver(_))
    ));
}

#[test]
fn wait_edge_returns_an_edge_injected_from_another_thread() {
    let board = SimBoard::new();
    let mut button = board.line(27).unwrap();
    assert!(button.read().unwrap(), "pulled up");
    let presser = board.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        presser.press(27);
    });
    let begun = Instant::now();
    let ev = button
        .wait_edge(Edge::Falling, Duration::from_secs(5))
        .unwrap()
        .expect("the press wakes the waiter");
    assert!(!ev.rising);
    assert!(ev.after >= Duration::from_millis(40), "{:?}", ev.after);
    assert!(begun.elapsed() < Duration::from_secs(4));
    t.join().unwrap();
    // The press's release came before this wait began: old news, as on Linux, where a held
    // request's queued edges are dropped when a wait starts.
    assert_eq!(
        button
            .wait_edge(Edge::Rising, Duration::from_millis(50))
            .unwrap(),
        None
    );
    let releaser = board.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        releaser.set_input(27, false);
        releaser.set_input(27, true);
    });
    let release = button
        .wait_edge(Edge::Rising, Duration::from_secs(5))
        .unwrap()
        .expect("a release during the wait");
    assert!(release.rising);
    t.join().unwrap();
    assert!(button.read().unwrap());
}

#[test]
fn wait_edge_times_out_when_nothing_happens_and_skips_edges_of_the_other_kind() {
    let board = SimBoard::new();
    let mut line = board.line(22).unwrap();
    let begun = Instant::now();
    assert_eq!(
        line.wait_edge(Edge::Both, Duration::from_millis(60))
            .unwrap(),
        None
    );
    assert!(begun.elapsed() >= Duration::from_millis(60));
    let injector = board.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        injector.inject_edge(22, true);
    });
    assert_eq!(
        line.wait_edge(Edge::Falling, Duration::from_millis(60))
            .unwrap(),
        None,
        "a rising edge does not end a wait for a falling one"
    );
    t.join().unwrap();
    let injector = board.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        injector.set_input(22, false);
    });
    let ev = line
        .wait_edge(Edge::Both, Duration::from_secs(5))
        .unwrap()
        .unwrap();
    assert!(!ev.rising);
    t.join().unwrap();
}

#[test]
fn the_relay_records_a_timed_pulse_and_the_button_cannot_be_driven() {
    let board = SimBoard::new();
    let mut relay = board.line(17).unwrap();
    relay.write(true).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    relay.write(false).unwrap();
    let log = board.output_log(17);
    assert_eq!(
        log.iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        [true, false]
    );
    assert!(log[1].0 - log[0].0 >= Duration::from_millis(30));
    assert!(!board.level(17));
    let mut button = board.line(27).unwrap();
    assert!(matches!(button.write(false), Err(BusError::Unsupported(_))));
    assert!(board.line(1).is_none() && board.line(28).is_none());
}

#[test]
fn sim_lines_are_embedded_hal_pins() {
    use embedded_hal::digital::{InputPin, OutputPin};
    let board = SimBoard::new();
    let mut relay = board.line(17).unwrap();
    OutputPin::set_high(&mut relay).unwrap();
    assert!(InputPin::is_high(&mut relay).unwrap());
    OutputPin::set_low(&mut relay).unwrap();
    assert!(InputPin::is_low(&mut relay).unwrap());
}

#[test]
fn the_fan_stores_frequency_and_duty_rounded_to_whole_nanoseconds() {
    let board = SimBoard::new();
    let mut fan = board.pwm(0).unwrap();
    assert_eq!(fan.set(25_000.0, 0.4).unwrap(), (25_000.0, 0.4));
    assert_eq!(board.pwm(0).unwrap().get(), (25_000.0, 0.4));
    let (f, _) = fan.set(30_000.0, 0.5).unwrap();
    assert!((f - 1e9 / 33_333.0).abs() < 1e-6, "{f}");
    assert!(fan.set(25_000.0, 1.5).is_err());
    assert!(fan.set(0.0, 0.5).is_err());
    assert!(board.pwm(1).is_none());
}

#[test]
fn the_echo_port_answers_at_with_ok_and_echoes_everything_else() {
    let board = SimBoard::new();
    let mut port = board.serial("echo").unwrap();
    port.set_timeout(Duration::from_millis(50));
    port.write_all(b"AT\r\n").unwrap();
    let mut buf = [0u8; 16];
    let n = port.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"OK\r\n");
    port.write_all(b"ping\n").unwrap();
    let n = board.serial("echo").unwrap().read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"ping\n");
    assert_eq!(
        port.read(&mut buf).unwrap_err().kind(),
        std::io::ErrorKind::TimedOut
    );
    assert!(board.serial("gps").is_none());
}

#[test]
fn only_the_declared_bus_exists() {
    let board = SimBoard::new();
    assert!(board.i2c(0).is_none());
    let _: sim::SimI2c = board.i2c(1).unwrap();
}

#[test]
fn the_sim_bme280_trimming_registers_hold_the_datasheet_example_packed_by_hand() {
    // Declared again independently: little-endian words from BST-BME280-DS002 section 8.1,
    // then dig_H1..dig_H6 with H4/H5 split into 12-bit nibble pairs at 0xE4..0xE6.
    const CALIB_PT: [u8; 26] = [
        0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, 0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B, 0x27, 0x0B, 0x8C,
        0x00, 0xF9, 0xFF, 0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17, 0x00, 0x4B,
    ];
    const CALIB_H: [u8; 7] = [0x6A, 0x01, 0x00, 0x13, 0x29, 0x03, 0x1E];
    let board = SimBoard::new();
    let mut i2c = board.i2c(1).unwrap();
    let mut pt = [0u8; 26];
    i2c.write_read(0x76, &[0x88], &mut pt).unwrap();
    assert_eq!(pt, CALIB_PT);
    let mut h = [0u8; 7];
    i2c.write_read(0x76, &[0xE1], &mut h).unwrap();
    assert_eq!(h, CALIB_H);
    assert_eq!(sim::Bme280Model::CTRL_MEAS, 0xF4);
    assert_eq!(sim::Bme280Model::CTRL_HUM, 0xF2);
    assert_eq!(sim::Bme280Model::PRESS_MSB, 0xF7);
    assert_eq!(sim::Bh1750Model::ONE_TIME_H, 0x20);
    assert_eq!(sim::Ssd1306Model::SET_COLUMN_ADDRESS, 0x21);
}

#[test]
fn a_sim_board_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<SimBoard>();
    shareable::<sim::SimI2c>();
}

/// covo holds one request per line for the life of the process and reuses it: a line that was
/// read can be driven, waited on and read again, and a long edge wait on one line holds up no
/// other line, while a second call on the same line waits its turn and then says it was busy.
#[test]
fn hardware_keeps_one_line_per_pin_and_a_wait_holds_only_its_own() {
    use covo_hal_tools::hw::{Hardware, HwError};
    use std::sync::Arc;
    let hw = Arc::new(Hardware::sim());
    let sim = hw.sim_handle().unwrap().clone();
    // Read, then write, then read again: one line, no "opened as an input".
    assert!(!hw.gpio_read(17).unwrap());
    hw.gpio_write(17, true).unwrap();
    assert!(hw.gpio_read(17).unwrap());
    assert_eq!(sim.output_log(17).len(), 1, "reading never drives the line");
    // The relay is a declared output: waiting for its edges is refused, not switched to input.
    match hw.gpio_wait_edge(17, Edge::Both, Duration::from_millis(10)) {
        Err(HwError::Line(BusError::Unsupported(m))) => {
            assert!(m.contains("declared an output"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    // Read, then wait for an edge on the same input line.
    assert!(hw.gpio_read(27).unwrap());
    let waiter = {
        let hw = hw.clone();
        std::thread::spawn(move || hw.gpio_wait_edge(27, Edge::Falling, Duration::from_secs(10)))
    };
    std::thread::sleep(Duration::from_millis(50));
    // Another line is free during the wait.
    let begun = Instant::now();
    hw.gpio_write(17, false).unwrap();
    assert!(begun.elapsed() < Duration::from_millis(500));
    // The waited-on line is busy: after the lock timeout, a clear error, not a hang.
    let begun = Instant::now();
    match hw.gpio_read(27) {
        Err(HwError::Line(BusError::Other(m))) => assert!(m.contains("GPIO27 is busy"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(begun.elapsed() < Duration::from_secs(5));
    sim.set_input(27, false);
    let ev = waiter
        .join()
        .unwrap()
        .unwrap()
        .expect("the edge ends the wait");
    assert!(!ev.rising);
    assert!(!hw.gpio_read(27).unwrap());
}
