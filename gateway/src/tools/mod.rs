//! Every built-in tool, one module per basic toolset.
//!
//! Each module holds a `TOOLS` table: the specs of its tools and their executors, side by side.
//!
//! The families that open hardware (i2c, spi, serial, gpio, sensors, mcu, display) and what
//! their executors share (`hwargs`) need the HAL: they are built with the `hal` feature. Without
//! it, `nohal` gives the same families with every tool missing ("no hardware"), so the catalog,
//! profiles and toolsets are the same in every build.

pub mod automation;
pub(crate) mod board;
pub(crate) mod code_exec;
pub(crate) mod command;
pub(crate) mod core;
pub(crate) mod delegation;
pub mod discovery;
pub(crate) mod docs;
pub(crate) mod fs;
pub(crate) mod git;
pub(crate) mod media;
pub(crate) mod memory;
pub(crate) mod messaging;
pub(crate) mod mqtt;
pub(crate) mod patch;
pub(crate) mod productivity;
pub mod readings;
pub(crate) mod search;
pub mod shell;
pub(crate) mod skills;
pub(crate) mod system;
pub(crate) mod voice;
pub(crate) mod web;

#[cfg(feature = "hal")]
pub(crate) mod display;
#[cfg(feature = "hal")]
pub mod gpio;
#[cfg(feature = "hal")]
pub mod hwargs;
#[cfg(feature = "hal")]
pub mod i2c;
#[cfg(feature = "hal")]
pub(crate) mod mcu;
#[cfg(feature = "hal")]
pub(crate) mod mcu_flash;
#[cfg(feature = "hal")]
pub mod sensors;
#[cfg(feature = "hal")]
pub(crate) mod serial;
#[cfg(feature = "hal")]
pub(crate) mod spi;

#[cfg(not(feature = "hal"))]
mod nohal;
#[cfg(not(feature = "hal"))]
use nohal::{display, gpio, i2c, mcu, sensors, serial, spi};

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
