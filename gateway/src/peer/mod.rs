//! The cloud peer (`covo peer`): the process that runs the heavy tools the gateway forwards.
//!
//! - `backends`: the code that actually runs each peer tool (`plot_series`, `web_fetch`, `code_run`).

pub mod backends;
