//! The MQTT link to the cloud peer: tools with `runs = "peer"` are forwarded to a `covo peer`
//! process, which runs them through its backends. See `docs/peer-protocol.md`.
//!
//! - `protocol`: topics and JSON payloads (pure).
//! - `mqtt`: the gateway-side client ([`mqtt::PeerLink`]) and the event-loop driver both sides share.
//! - `server`: `covo peer` (births, the shared request group, dedup by call id).
//! - `backends`: the peer-side tool implementations.

pub mod backends;
pub mod mqtt;
pub mod protocol;
pub mod server;
