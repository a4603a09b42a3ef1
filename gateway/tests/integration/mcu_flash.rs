//! `mcu_flash` against the simulated Pico: the real firmware core behind a real pty, whose
//! BOOTSEL drive is a real directory taking UF2 files as the RP2040 boot ROM does. What the
//! device runs afterwards is what it says in a fresh handshake, not what the tool assumed.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::hardware::Board;
use covo::policy::{Approver, NoApprover};
use covo::runtime::{AutoApprove, Runtime, Via};
use covo::store::Store;
use covo_board::board::BoardDef;
use covo_hal_tools::hw::Hardware;
use covo_hal_tools::sim::SimBoard;
use covo_mcu_protocol::{stamp, STAMP_LEN};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

const RP2040: u32 = 0xe48b_ff56;

/// A UF2 of `image` at the start of flash, in 256-byte blocks of `family` (as elf2uf2 writes).
fn uf2(image: &[u8], family: u32) -> Vec<u8> {
    let chunks: Vec<&[u8]> = image.chunks(256).collect();
    let blocks: Vec<uftwo::Block> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut data = [0u8; 256];
            data[..c.len()].copy_from_slice(c);
            let mut b = uftwo::Block::new(i, chunks.len(), &data, 0x1000_0000 + i * 256);
            b.flags |= uftwo::Flags::FamilyId;
            b.board_family_id_or_file_size = family;
            b
        })
        .collect();
    uftwo::Uf2File::from_blocks(&blocks).to_bytes()
}

/// A 2 KiB firmware image stamped `name`.
fn image(name: &str) -> Vec<u8> {
    let mut i = vec![0x5au8; 2048];
    i[1000..1000 + STAMP_LEN].copy_from_slice(&stamp(name));
    i
}

fn put(home: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(home.join("firmware")).unwrap();
    std::fs::write(home.join("firmware").join(name), bytes).unwrap();
}

fn runtime(home: &Path, def: BoardDef, approver: Box<dyn Approver>) -> Runtime {
    let hw = Hardware::sim_with(def, SimBoard::new());
    let mut opts = covo::tools::options(Config::default());
    opts.board = Some(Arc::new(Board::with_hardware(hw)));
    opts.approver = approver;
    opts.home = Some(home.to_path_buf());
    Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap())
}

fn err(r: Result<Value, CallError>) -> ToolError {
    match r {
        Err(CallError::Respond(e)) => e,
        other => panic!("expected a tool error, got {other:?}"),
    }
}

fn firmware(rt: &Runtime, s: &Session) -> String {
    let info = rt.call(s, Via::Direct, "mcu_info", json!({})).unwrap();
    info["info"]["firmware"].as_str().unwrap().to_string()
}

#[test]
fn a_stamped_uf2_is_flashed_through_bootsel_and_the_device_then_reports_its_version() {
    let _pty = crate::hardware::PTY
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let home = tempfile::tempdir().unwrap();
    put(home.path(), "new.uf2", &uf2(&image("covo 7.7.7"), RP2040));
    let rt = runtime(home.path(), BoardDef::sim(), Box::new(AutoApprove));
    let s = Session::new("flash", "cli");
    assert!(firmware(&rt, &s).starts_with("covo-sim "));

    let r = rt
        .call(&s, Via::Direct, "mcu_flash", json!({"image": "new.uf2"}))
        .unwrap();
    assert_eq!(r["device"], "pico");
    assert_eq!(r["method"], "uf2");
    assert_eq!(r["firmware"], "covo 7.7.7", "{r}");
    assert_eq!(r["running_expected"], true);
    assert_eq!(r["uf2_blocks"], 8);
    assert!(r["firmware_before"]
        .as_str()
        .unwrap()
        .starts_with("covo-sim "));
    // A fresh request sees the new firmware: the link was re-established, not reused.
    assert_eq!(firmware(&rt, &s), "covo 7.7.7");
    // And the tools still drive it.
    let w = rt.call(
        &s,
        Via::Direct,
        "mcu_gpio_write",
        json!({"pin": 25, "level": 1}),
    );
    assert!(w.is_ok(), "{w:?}");

    // Flashing again through discovery's tool_call takes the same path to the same result.
    put(home.path(), "next.uf2", &uf2(&image("covo 7.7.8"), RP2040));
    let r = rt
        .call(
            &s,
            Via::Direct,
            "tool_call",
            json!({"name": "mcu_flash", "arguments": {"image": "next.uf2", "device": "pico"}}),
        )
        .unwrap();
    let r = r.get("result").unwrap_or(&r);
    assert_eq!(r["firmware"], "covo 7.7.8", "{r}");
    assert_eq!(firmware(&rt, &s), "covo 7.7.8");
}

#[test]
fn images_the_device_could_not_take_or_run_are_refused_before_it_is_touched() {
    let _pty = crate::hardware::PTY
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let home = tempfile::tempdir().unwrap();
    let good = image("covo 7.7.7");
    put(home.path(), "esp32.uf2", &uf2(&good, 0x1c5f_21b0));
    put(home.path(), "blink.uf2", &uf2(&[0x11; 1500], RP2040));
    let mut old = good.clone();
    old[1000 + 9] ^= 0x55; // another schema hash: an older firmware
    put(home.path(), "old.uf2", &uf2(&old, RP2040));
    let mut torn = uf2(&good, RP2040);
    torn.truncate(torn.len() - 100);
    put(home.path(), "torn.uf2", &torn);
    put(home.path(), "covo.elf", &good);
    std::fs::write(home.path().join("outside.uf2"), uf2(&good, RP2040)).unwrap();

    let rt = runtime(home.path(), BoardDef::sim(), Box::new(AutoApprove));
    let s = Session::new("flash", "cli");
    let before = firmware(&rt, &s);
    for (image, says) in [
        ("esp32.uf2", "family"),
        ("blink.uf2", "no covo firmware stamp"),
        ("old.uf2", "this gateway speaks"),
        ("torn.uf2", "not a UF2"),
        ("covo.elf", ".uf2 files"),
        ("missing.uf2", "no such file"),
        ("../outside.uf2", "no folders"),
        ("/etc/passwd", "no folders"),
    ] {
        let e = err(rt.call(&s, Via::Direct, "mcu_flash", json!({ "image": image })));
        let text = serde_json::to_string(&e.to_json()).unwrap();
        assert!(text.contains("invalid"), "{image}: {text}");
        assert!(text.contains(says), "{image}: wanted '{says}' in {text}");
        // The device never left its firmware: it answers at once with the same name.
        assert_eq!(firmware(&rt, &s), before, "after {image}");
    }
    let e = err(rt.call(
        &s,
        Via::Direct,
        "mcu_flash",
        json!({"image": "esp32.uf2", "device": "climate"}),
    ));
    assert!(e.to_string().contains("climate"), "{e}");
}

#[test]
fn without_approval_or_on_a_read_only_board_nothing_is_flashed() {
    let _pty = crate::hardware::PTY
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let home = tempfile::tempdir().unwrap();
    put(home.path(), "new.uf2", &uf2(&image("covo 7.7.7"), RP2040));
    let s = Session::new("flash", "cli");

    let rt = runtime(home.path(), BoardDef::sim(), Box::new(NoApprover));
    let before = firmware(&rt, &s);
    for (tool, args) in [
        ("mcu_flash", json!({"image": "new.uf2"})),
        (
            "tool_call",
            json!({"name": "mcu_flash", "arguments": {"image": "new.uf2"}}),
        ),
    ] {
        let e = err(rt.call(&s, Via::Direct, tool, args));
        assert!(e.to_string().contains("approve"), "{tool}: {e}");
        assert_eq!(firmware(&rt, &s), before);
    }

    let mut def = BoardDef::sim();
    def.policy.read_only = true;
    let rt = runtime(home.path(), def, Box::new(AutoApprove));
    let e = err(rt.call(&s, Via::Direct, "mcu_flash", json!({"image": "new.uf2"})));
    let text = serde_json::to_string(&e.to_json()).unwrap();
    assert!(text.contains("board.read_only"), "{text}");
    assert_eq!(firmware(&rt, &s), before);
}

#[test]
fn a_maker_flashes_the_simulated_pico_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    put(&home, "covo-9.0.0.uf2", &uf2(&image("covo 9.0.0"), RP2040));
    let out = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args([
            "tools",
            "call",
            "--yes",
            "mcu_flash",
            r#"{"image":"covo-9.0.0.uf2"}"#,
        ])
        .current_dir(dir.path())
        .env("COVO_HOME", &home)
        .env_remove("COVO_CONFIG")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(out.status.success(), "{v}");
    assert_eq!(v["firmware"], "covo 9.0.0", "{v}");
    assert_eq!(v["board"], "sim-rp2040");
}
