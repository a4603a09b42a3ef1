//! Shared helpers for covo end-to-end tests: the scripted LLM server (the broker harness lands with the MQTT issue).

pub mod llm_server;
