//! covo: an LLM agent gateway for Linux boards.
//!
//! # Layout
//! - `artifacts`: images and audio from peer tools, stored as files and named by id.
//! - `agent`: the turn state machine (`agent::core`), its I/O driver, schedules.
//! - `llm`: OpenAI-compatible and Anthropic providers with streaming, retries and errors.
//! - `spec`: the data-only description of a tool (`ToolSpec`) and its executor (`ToolDef`).
//! - `tools`: every built-in tool, one module per basic toolset, spec and executor side by side.
//! - `profile`: profile pruning, done once: which tools the agent owns.
//! - `toolset`: basic and composite toolsets, recursive expansion, platform defaults.
//! - `plan`: the pure visibility plan and the `tools` payload renderers.
//! - `hooks`: lifecycle hooks; the `ToolsetFilter` runs before every model call.
//! - `runtime`: the one dispatch pipeline (validate → policy → approval → execute → audit).
//! - `discovery`: the BM25 index behind `tool_search`.
//! - `hardware`: the board (definition, policy as a pipeline `Policy`, hardware opened lazily;
//!   opened only in a build with the `hal` feature).
//! - `exec`: the narrow context an executor receives.
//! - `store`: the SQLite store under `$COVO_HOME`.
//! - `config`: `covo.toml` loading.
//! - `error`: respond-to-model errors and fatal errors.
//! - `multipart`: `multipart/form-data` bodies for uploads.
//! - `secrets`: URLs and HTTP errors shown with their secrets masked.
//! - `watch`: sensor watch rules (a pure state machine) and their evaluation on new readings.
//! - `peer`: the MQTT link to the cloud peer (protocol, gateway-side client, `covo peer`).
//! - `swarm`: answering other gateways' `swarm_call`s through this gateway's pipeline.
//! - `user_io`: the terminal as a channel.
//! - `mcp_client`: external MCP servers' tools as owned tools (`[mcp.servers.NAME]`).
//! - `telegram`: chat from Telegram inside `covo run` (cargo feature `telegram`).
//! - `web`: the LAN dashboard `covo run` serves (`[web]`, cargo feature `web`).
//! - `trim`: `covo run` unmapping the code it no longer runs (the crate's one `unsafe` block).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod artifacts;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod doctor;
pub mod error;
pub mod exec;
pub mod fds;
pub mod ha;
pub mod hardware;
pub mod hooks;
pub mod link;
#[cfg(any(feature = "web", feature = "mcp"))]
pub mod listen;
pub mod llm;
pub mod logging;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mcp")]
pub mod mcp_client;
pub mod multipart;
pub mod policy;
pub mod runtime;
pub mod schema;
pub mod sd_notify;
pub mod secrets;
pub mod spec;
pub mod store;
pub mod swarm;
#[cfg(feature = "telegram")]
pub mod telegram;
pub mod tools;
pub mod trim;
pub mod user_io;
pub mod watch;
#[cfg(feature = "web")]
pub mod web;

// The pure core, re-exported under the names the gateway has always used.
pub use covo_core::{discovery, plan, profile, toolset};
