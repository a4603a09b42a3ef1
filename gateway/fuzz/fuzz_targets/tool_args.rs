//! The tool-argument parser: arbitrary bytes as a model's JSON arguments for any built-in tool.
//! The first two bytes pick the tool, the rest is the arguments. Each parse goes through what
//! turns arguments into a call the policy can judge: JSON decoding, the tool's JSON Schema
//! (`schema::Validators`), its access function (`ToolDef::access`, which parses addresses, byte
//! strings, pins and channels) judged by `Board::check` on a permissive and a read-only board,
//! and the shared argument parsers (`tools::hwargs`, `covo_hal_tools::values`). Nothing may
//! panic, whatever the arguments.
#![no_main]

use covo::hardware::Board;
use covo::schema::Validators;
use covo::spec::ToolDef;
use covo::tools::hwargs;
use covo_hal_tools::board::BoardDef;
use covo_hal_tools::values;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::LazyLock;

struct World {
    tools: Vec<&'static ToolDef>,
    validators: Validators,
    boards: [Board; 2],
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let mut ro = BoardDef::sim();
    ro.policy.read_only = true;
    World {
        tools: covo::tools::all().collect(),
        validators: Validators::default(),
        boards: [Board::from_def(BoardDef::sim()), Board::from_def(ro)],
    }
});

fuzz_target!(|data: &[u8]| {
    let w = &*WORLD;
    if data.len() < 2 {
        return;
    }
    let tool = w.tools[usize::from(u16::from_le_bytes([data[0], data[1]])) % w.tools.len()];
    let Ok(args) = serde_json::from_slice::<Value>(&data[2..]) else {
        return;
    };
    let _ = w.validators.check(tool.spec, &args);
    // Access functions run after validation in the pipeline; they must not panic on anything.
    for board in &w.boards {
        for access in tool.access(board.def(), &args) {
            let _ = access.writes();
            let _ = board.check(&access);
        }
        let def = board.def();
        let _ = hwargs::bus_of(def, &args);
        let _ = hwargs::address_of(&args);
        let _ = hwargs::pin_of(def, args.get("pin"));
        let _ = hwargs::channel_of(def, args.get("channel"));
        let _ = hwargs::mcu_device_of(def, &args);
        let _ = hwargs::len_of(&args, "data");
        let _ = hwargs::count_of(&args);
    }
    if let Value::Object(map) = &args {
        for (k, v) in map {
            let _ = values::number(k, v);
            let _ = values::address(k, v);
            let _ = values::bytes(k, v);
            let _ = values::pin(k, v);
            let _ = values::bounded(k, v, 255);
        }
    }
});
