//! Shared helpers for covo end-to-end tests: the scripted LLM server, a real MQTT broker, a
//! fake HTTP server for the peer's web services and a fake Telegram Bot API.

pub mod bins;
pub mod bot_api;
pub mod broker;
pub mod http_fake;
pub mod llm_server;
pub mod venv;
