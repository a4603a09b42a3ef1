//! covo's pure core: what a tool is and which tools the model sees, with no I/O.
//!
//! # Layout
//! - `spec`: the data-only description of a tool (`ToolSpec`), its effect, where it runs.
//! - `catalog`: every built-in tool's spec, one module per basic toolset. A tool's name is
//!   written once, here.
//! - `profile`: profile pruning, done once: which tools the agent owns.
//! - `toolset`: basic and composite toolsets, recursive expansion, platform defaults.
//! - `plan`: the pure visibility plan and the `tools` payload renderers.
//! - `discovery`: the BM25 index behind `tool_search`.
//! - `error`: `ToolError`, the structured error the model gets back.
//!
//! This crate is the bottom layer of covo (ARCHITECTURE.md, "Layers"): it depends on no runtime,
//! store, MQTT client or hardware, so none of that can leak into these decisions.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod catalog;
pub mod discovery;
pub mod error;
pub mod plan;
pub mod profile;
pub mod spec;
pub mod toolset;
