//! The gateway crate's integration tests, one binary: each file below was its own test
//! binary, and each linked every dependency again (about 60 MB apiece in a debug build).
//! Run one group with `cargo test -p <crate> --test integration <file>::`.
//!
//! The groups that script the simulated board's hardware (`covo_hal_tools`) need the `hal`
//! feature; without it they are left out. Others still call hardware tools on the sim board,
//! so `--no-default-features` builds this binary (clippy checks it) but is not a test run.

mod adversarial;
mod agent;
mod bad_input;
mod chat_cli;
mod cli;
mod config_doc;
mod daemon;
mod docs_skills;
mod doctor;
mod drivers;
mod file_search;
mod fs_and_approval;
mod fs_race;
mod git;
#[cfg(feature = "hal")]
mod hardware;
mod layers;
mod link_bounds;
mod llama;
#[cfg(feature = "mcp")]
mod mcp_client;
#[cfg(feature = "mcp")]
mod mcp_server;
#[cfg(feature = "hal")]
mod mcu_flash;
mod name_literals;
mod patch;
mod peer_protocol_doc;
mod pipeline;
#[cfg(feature = "hal")]
mod policy_escape;
mod presence;
#[cfg(feature = "hal")]
mod qemu;
mod retention;
mod run;
#[cfg(feature = "hal")]
mod sampler;
mod sd_notify;
mod secrets;
mod shell;
mod store_concurrency;
mod system;
#[cfg(feature = "telegram")]
mod telegram;
#[cfg(feature = "hal")]
mod typed_access;
mod voice_camera;
#[cfg(feature = "web")]
mod web;
