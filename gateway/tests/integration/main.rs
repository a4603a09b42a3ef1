//! The gateway crate's integration tests, one binary: each file below was its own test
//! binary, and each linked every dependency again (about 60 MB apiece in a debug build).
//! Run one group with `cargo test -p <crate> --test integration <file>::`.

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
mod hardware;
mod layers;
mod link_bounds;
#[cfg(feature = "mcp")]
mod mcp_client;
#[cfg(feature = "mcp")]
mod mcp_server;
mod name_literals;
mod patch;
mod peer_protocol_doc;
mod pipeline;
mod policy_escape;
mod presence;
mod qemu;
mod retention;
mod run;
mod sampler;
mod sd_notify;
mod secrets;
mod shell;
mod store_concurrency;
mod system;
#[cfg(feature = "telegram")]
mod telegram;
mod typed_access;
mod voice_camera;
#[cfg(feature = "web")]
mod web;
