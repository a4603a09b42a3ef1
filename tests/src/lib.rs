//! Shared helpers for covo end-to-end tests: the scripted LLM server, a real MQTT broker, a
//! fake HTTP server for the peer's web services and a fake Telegram Bot API.

pub mod bins;
pub mod bot_api;
pub mod broker;
pub mod http_fake;
pub mod llm_server;
pub mod venv;

/// The MQTT client of the raw test clients ([`broker::Raw`]), for tests of crates that do not
/// depend on it (only `covo-wire` names rumqttc in covo's own code).
pub use rumqttc;
