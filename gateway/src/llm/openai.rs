//! The OpenAI Chat Completions wire format: request bodies, whole responses, and the assembly of
//! streamed chunks. Pure functions over JSON; no I/O.

use super::{ChatRequest, ChatResponse, Message, StopReason, ToolCall, Usage};
use covo_core::plan::{render, Format};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The request body for `POST {base}/chat/completions`.
pub fn request_body(model: &str, req: &ChatRequest<'_>, stream: bool) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in req.messages {
        messages.push(match m {
            Message::User(t) => json!({"role": "user", "content": t}),
            Message::Assistant { text, tool_calls } => {
                let mut v = json!({
                    "role": "assistant",
                    "content": if text.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(text) },
                });
                if !tool_calls.is_empty() {
                    v["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                }
                v
            }
            Message::ToolResult {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({"model": model, "messages": messages});
    if !req.tools.is_empty() {
        body["tools"] = render(req.tools, Format::Openai);
    }
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("stop") => StopReason::EndTurn,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

fn usage(v: &Value) -> Usage {
    Usage {
        input_tokens: v["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: v["completion_tokens"].as_u64().unwrap_or(0),
    }
}

/// Gives calls without an id (some local servers omit it) a stable one.
fn call_id(id: Option<&str>, index: usize) -> String {
    match id {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => format!("call_{index}"),
    }
}

/// Parses a whole (non-streamed) response.
pub fn parse_response(v: &Value) -> Result<ChatResponse, String> {
    let choice = v["choices"]
        .get(0)
        .ok_or_else(|| format!("no choices in {}", short(v)))?;
    let msg = &choice["message"];
    let tool_calls = msg["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: call_id(c["id"].as_str(), i),
                    name: c["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    arguments: match &c["function"]["arguments"] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        text: msg["content"].as_str().unwrap_or_default().to_string(),
        tool_calls,
        usage: usage(&v["usage"]),
        stop: stop_reason(choice["finish_reason"].as_str()),
    })
}

fn short(v: &Value) -> String {
    v.to_string().chars().take(200).collect()
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Accumulates streamed chunks (`data:` payloads) into one response.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Usage,
    stop: Option<String>,
}

impl StreamAssembler {
    /// Adds one chunk; returns the text delta it carried, if any.
    pub fn push(&mut self, data: &str) -> Result<Option<String>, String> {
        let v: Value = serde_json::from_str(data).map_err(|e| format!("bad chunk: {e}"))?;
        if let Some(err) = v.get("error") {
            return Err(format!("stream error: {}", short(err)));
        }
        if v["usage"].is_object() {
            self.usage = usage(&v["usage"]);
        }
        let Some(choice) = v["choices"].get(0) else {
            return Ok(None);
        };
        if let Some(r) = choice["finish_reason"].as_str() {
            self.stop = Some(r.to_string());
        }
        let delta = &choice["delta"];
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (pos, c) in calls.iter().enumerate() {
                let index = c["index"].as_u64().unwrap_or(pos as u64);
                let slot = self.calls.entry(index).or_default();
                if let Some(id) = c["id"].as_str() {
                    slot.id = Some(id.to_string());
                }
                if let Some(n) = c["function"]["name"].as_str() {
                    slot.name.push_str(n);
                }
                if let Some(a) = c["function"]["arguments"].as_str() {
                    slot.arguments.push_str(a);
                }
            }
        }
        match delta["content"].as_str() {
            Some(t) if !t.is_empty() => {
                self.text.push_str(t);
                Ok(Some(t.to_string()))
            }
            _ => Ok(None),
        }
    }

    /// The assembled response.
    pub fn finish(self) -> ChatResponse {
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: call_id(c.id.as_deref(), i),
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        ChatResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop: stop_reason(self.stop.as_deref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_with_tool_calls_and_results_encodes_in_openai_shape() {
        let msgs = vec![
            Message::User("hi".into()),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "gpio_read".into(),
                    arguments: r#"{"pin":17}"#.into(),
                }],
            },
            Message::ToolResult {
                call_id: "call_1".into(),
                name: "gpio_read".into(),
                content: r#"{"level":1}"#.into(),
                is_error: false,
            },
        ];
        let req = ChatRequest {
            system: "sys",
            messages: &msgs,
            tools: &[],
        };
        let b = request_body("m", &req, true);
        assert_eq!(b["messages"][0]["role"], "system");
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"pin":17}"#
        );
        assert_eq!(b["messages"][3]["tool_call_id"], "call_1");
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert!(
            b.get("tools").is_none(),
            "no tools key when no tools are visible"
        );
    }

    #[test]
    fn streamed_chunks_assemble_text_and_split_tool_arguments() {
        let mut a = StreamAssembler::default();
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Chec"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"king"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"sensor_read","arguments":"{\"sen"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"sor\":\"climate\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"gpio_read","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}"#,
        ];
        let mut text = String::new();
        for c in chunks {
            if let Some(t) = a.push(c).unwrap() {
                text.push_str(&t);
            }
        }
        let r = a.finish();
        assert_eq!(text, "Checking");
        assert_eq!(r.text, "Checking");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, r#"{"sensor":"climate"}"#);
        assert_eq!(r.tool_calls[1].id, "call_b");
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 5
            }
        );
    }

    #[test]
    fn a_whole_response_parses_and_missing_ids_are_generated() {
        let v = json!({
            "choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"x","arguments":"{}"}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":3,"completion_tokens":2}
        });
        let r = parse_response(&v).unwrap();
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.text, "");
        assert!(parse_response(&json!({})).is_err());
    }
}
