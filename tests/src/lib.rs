//! Shared helpers for covo end-to-end tests: the scripted LLM server and a real MQTT broker.

pub mod broker;
pub mod llm_server;
