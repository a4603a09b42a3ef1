//! Board definitions for covo, without the hardware: what the gateway's dispatch pipeline needs
//! to parse a hardware call, resolve the names it gives and judge it against the board policy,
//! before anything is opened. The HAL, the drivers, the simulated board and the Linux backends
//! are in `covo-hal-tools`, which re-exports these modules under its own name.
//!
//! # Layout
//! - `values`: how tool arguments name hardware: addresses (`0x76` or 118), byte strings
//!   (`"d0 01"` or `[208, "0x01"]`), pins (BCM numbers or declared names); hex output.
//! - `board`: board definitions in TOML (`boards/*.toml`) and their typed loader.
//! - `driver`: `Driver`, the drivers a device may name, each with its one table entry (kind,
//!   quantities and units, bus footprint, doctor probe, docs page, Home Assistant classes,
//!   required keys).
//! - `resolve`: a call's names (a device's pin, the default bus, a port) resolved against the
//!   board definition alone.
//! - `policy`: the board policy: allowlists, reserved addresses, PWM limits, transfer sizes,
//!   read-only mode. Pure checks; the gateway runs them inside its dispatch pipeline.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod board;
pub mod driver;
pub mod policy;
pub mod resolve;
pub mod values;
