//! The tests crate's integration tests, one binary: each file below was its own test
//! binary, and each linked every dependency again (about 60 MB apiece in a debug build).
//! Run one group with `cargo test -p <crate> --test integration <file>::`.

mod catalog_conformance;
mod crate_graph;
mod llm_server;
mod prompt_budget;
mod search_recall;
mod shell_scripts;
