//! The tool-argument parser: arbitrary bytes as a model's JSON arguments for any built-in tool.
//! The first two bytes pick the tool, the rest is the arguments. Each parse goes through what
//! turns arguments into a call the policy can judge: JSON decoding, the tool's JSON Schema
//! (`schema::Validators`), its typed arguments (`ToolDef::prepare`, which parses addresses, byte
//! strings, pins and channels once and resolves them against the board) whose accesses are
//! judged by `Board::check` on a permissive and a read-only board, and the value parsers
//! (`covo_board::values`). Nothing may panic, whatever the arguments.
#![no_main]

use covo::hardware::Board;
use covo::schema::Validators;
use covo::spec::ToolDef;
use covo_board::board::BoardDef;
use covo_board::values;
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
    // Typed arguments are parsed after validation in the pipeline; even unvalidated ones must
    // not panic.
    for board in &w.boards {
        if let Ok(Some(call)) = tool.prepare(board.def(), &args) {
            for access in &call.access {
                let _ = access.writes();
                let _ = board.check(access);
            }
        }
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
