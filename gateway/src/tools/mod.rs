//! Every built-in tool, one module per basic toolset.
//!
//! Each module holds a `TOOLS` table: the specs of its tools and their executors, side by side.

pub mod automation;
pub(crate) mod board;
pub(crate) mod code_exec;
pub(crate) mod command;
pub(crate) mod core;
pub(crate) mod delegation;
pub mod discovery;
pub(crate) mod display;
pub(crate) mod docs;
pub(crate) mod fs;
pub(crate) mod git;
pub mod gpio;
pub mod hwargs;
pub mod i2c;
pub(crate) mod mcu;
pub(crate) mod media;
pub(crate) mod memory;
pub(crate) mod messaging;
pub(crate) mod mqtt;
pub(crate) mod patch;
pub(crate) mod productivity;
pub(crate) mod search;
pub mod sensors;
pub(crate) mod serial;
pub mod shell;
pub(crate) mod skills;
pub(crate) mod spi;
pub(crate) mod system;
pub(crate) mod voice;
pub(crate) mod web;

use crate::spec::ToolDef;

/// The tables of every family, in catalog order.
static FAMILIES: &[&[ToolDef]] = &[
    core::TOOLS,
    discovery::TOOLS,
    memory::TOOLS,
    productivity::TOOLS,
    automation::TOOLS,
    fs::TOOLS,
    patch::TOOLS,
    search::TOOLS,
    shell::TOOLS,
    git::TOOLS,
    docs::TOOLS,
    code_exec::TOOLS,
    web::TOOLS,
    media::TOOLS,
    voice::TOOLS,
    messaging::TOOLS,
    delegation::TOOLS,
    skills::TOOLS,
    mqtt::TOOLS,
    system::TOOLS,
    board::TOOLS,
    i2c::TOOLS,
    spi::TOOLS,
    serial::TOOLS,
    gpio::TOOLS,
    sensors::TOOLS,
    mcu::TOOLS,
    display::TOOLS,
];

/// Every built-in tool, in catalog order.
pub fn all() -> impl Iterator<Item = &'static ToolDef> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// The built-in tool with this name.
pub fn find(name: &str) -> Option<&'static ToolDef> {
    all().find(|t| t.spec.name == name)
}

/// Runtime options with every built-in tool (see `RuntimeOptions::with_tools`): the defaults
/// for `config`, nobody to approve, no channels, no model.
pub fn options(config: crate::config::Config) -> crate::runtime::RuntimeOptions {
    crate::runtime::RuntimeOptions::with_tools(config, all().collect())
}
