//! The catalog: every built-in tool's spec, one module per basic toolset, in catalog order.
//!
//! A tool's name is written once, here. The gateway binds executors to these specs and the peer
//! finds the tools it serves through them; nothing else spells a tool name.

pub mod automation;
pub mod board;
pub mod code_exec;
pub mod core;
pub mod delegation;
pub mod discovery;
pub mod display;
pub mod docs;
pub mod fs;
pub mod git;
pub mod gpio;
pub mod i2c;
pub mod mcu;
pub mod media;
pub mod memory;
pub mod messaging;
pub mod mqtt;
pub mod patch;
pub mod productivity;
pub mod search;
pub mod sensors;
pub mod serial;
pub mod shell;
pub mod skills;
pub mod spi;
pub mod system;
pub mod voice;
pub mod web;

use crate::spec::ToolSpec;

/// The toolsets' spec tables, in catalog order.
static FAMILIES: &[&[&ToolSpec]] = &[
    core::SPECS,
    discovery::SPECS,
    memory::SPECS,
    productivity::SPECS,
    automation::SPECS,
    fs::SPECS,
    patch::SPECS,
    search::SPECS,
    shell::SPECS,
    git::SPECS,
    docs::SPECS,
    code_exec::SPECS,
    web::SPECS,
    media::SPECS,
    voice::SPECS,
    messaging::SPECS,
    delegation::SPECS,
    skills::SPECS,
    mqtt::SPECS,
    system::SPECS,
    board::SPECS,
    i2c::SPECS,
    spi::SPECS,
    serial::SPECS,
    gpio::SPECS,
    sensors::SPECS,
    mcu::SPECS,
    display::SPECS,
];

/// Every built-in tool's spec, in catalog order.
pub fn all() -> impl Iterator<Item = &'static ToolSpec> {
    FAMILIES.iter().flat_map(|f| f.iter().copied())
}

/// The built-in tool with this name.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    all().find(|t| t.name == name)
}
