//! The board crate's integration tests, one binary (as in the other crates). Run one group with
//! `cargo test -p covo-board --test integration <file>::`.

mod boards;
