//! Shared helpers for covo end-to-end tests (the scripted LLM server and broker harness land with the agent and MQTT issues).
