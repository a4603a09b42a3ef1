//! The MQTT contract that covo gateways and peers both speak (`docs/peer-protocol.md`), in one
//! place that both depend on:
//! - `protocol`: topics and JSON payloads (pure);
//! - `mqtt`: the rumqttc transport both sides drive (options, TLS, the event-loop driver with
//!   backoff, births and Wills, response chunking and reassembly);
//! - `dedup`: admission by call id, so a QoS 1 redelivery never runs a tool twice;
//! - `host`: [`host::ToolHost`], what runs peer tools.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dedup;
pub mod host;
pub mod mqtt;
pub mod protocol;
