//! The hal-tools crate's integration tests, one binary: each file below was its own test
//! binary, and each linked every dependency again (about 60 MB apiece in a debug build).
//! Run one group with `cargo test -p <crate> --test integration <file>::`.

mod architecture;
mod mcu_events;
mod sim_board;
