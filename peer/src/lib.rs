//! covo's cloud peer: the process that runs `runs = "peer"` tools for gateways over MQTT.
//!
//! # Layout
//! - `server`: births and Wills, the shared request group, dedup by call id (through
//!   `covo_wire`, the contract the gateway speaks too).
//! - `backends`: the peer-side tools (web, media, code, plots, semantic memory, the code graph,
//!   `test_generate` and sub-agents on the peer's own model).
//! - `config`: `[peer]` of `covo.toml`.
//! - `fleet`, `fleet_page`: the fleet page (`[peer] fleet_bind`): the gateways from their
//!   retained births, Wills and readings, bounded, served over HTTP.
//! - `validate`: every request's arguments against its tool's schema from the catalog.
//!
//! The gateway never depends on this crate: none of these backends is linked into the `covo`
//! binary that runs on a board.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backends;
pub mod config;
pub mod fleet;
pub mod fleet_page;
pub mod server;
pub mod validate;
