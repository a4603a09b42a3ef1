//! The peer crate's integration tests, one binary: each file below was its own test
//! binary, and each linked every dependency again (about 60 MB apiece in a debug build).
//! Run one group with `cargo test -p <crate> --test integration <file>::`.

mod fleet_page;
mod link_faults;
mod peer;
mod peer_agent;
mod peer_backends;
mod peer_load;
