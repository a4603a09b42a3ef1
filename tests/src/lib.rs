//! Shared helpers for covo end-to-end tests: the scripted LLM server, a real MQTT broker and a
//! fake HTTP server for the peer's web services.

pub mod bins;
pub mod broker;
pub mod http_fake;
pub mod llm_server;
