//! The Anthropic Messages wire format: request bodies, whole responses, and the assembly of
//! streamed events. Pure functions over JSON; no I/O.

use super::{Body, ChatRequest, ChatResponse, Message, StopReason, ToolCall, Unusable, Usage};
use covo_core::plan::{render_raw, Format};
use serde_json::{json, Value};

/// Tool-use `input` must be an object: arguments that are not a JSON object are sent back as
/// `{"invalid_arguments": "<text>"}`, so the model sees what it wrote.
fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({ "invalid_arguments": arguments }),
    }
}

/// The request body for `POST {base}/v1/messages`.
pub fn request_body(model: &str, max_tokens: u32, req: &ChatRequest<'_>, stream: bool) -> Body {
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len());
    for m in req.messages {
        match m {
            Message::User(t) => messages.push(json!({"role": "user", "content": t})),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use", "id": c.id, "name": c.name, "input": input_object(&c.arguments),
                    }));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let block = json!({
                    "type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error,
                });
                // Results of one assistant turn travel together in one user message.
                match messages.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["content"][0]["type"] == "tool_result" =>
                    {
                        if let Some(a) = last["content"].as_array_mut() {
                            a.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    let mut json = json!({"model": model, "max_tokens": max_tokens, "messages": messages});
    if !req.system.is_empty() {
        json["system"] = json!(req.system);
    }
    if stream {
        json["stream"] = json!(true);
    }
    Body {
        json,
        tools: (!req.tools.is_empty()).then(|| render_raw(req.tools, Format::Anthropic)),
    }
}

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("end_turn") | Some("stop_sequence") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

fn short(v: &Value) -> String {
    v.to_string().chars().take(200).collect()
}

/// A tool call's `input` as argument text: an object as its JSON, text verbatim (the pipeline
/// reports it as malformed arguments), none as `{}`; anything else is a malformed response.
fn input_text(input: Option<&Value>) -> Result<String, String> {
    match input {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Ok("{}".into()),
        Some(v @ Value::Object(_)) => Ok(v.to_string()),
        Some(other) => Err(format!(
            "a tool_use input is not an object: {}",
            short(other)
        )),
    }
}

/// A block's tool name: a non-empty string.
fn tool_name(b: &Value) -> Result<String, String> {
    match b.get("name") {
        Some(Value::String(n)) if !n.is_empty() => Ok(n.clone()),
        _ => Err(format!("a tool_use block has no name: {}", short(b))),
    }
}

/// Parses a whole (non-streamed) response. `content` must be a list of blocks, each an object
/// with a `type`; a text block needs text, a tool_use block a name. Anything else is an error: a
/// malformed answer is never taken for an empty one.
pub fn parse_response(v: &Value) -> Result<ChatResponse, String> {
    let blocks = match v.get("content") {
        Some(Value::Array(blocks)) => blocks,
        Some(other) => return Err(format!("`content` is not a list: {}", short(other))),
        None => return Err(format!("no content in {}", short(v))),
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => match b.get("text") {
                Some(Value::String(t)) => text.push_str(t),
                _ => return Err(format!("a text block has no text: {}", short(b))),
            },
            Some("tool_use") => tool_calls.push(ToolCall {
                id: b["id"].as_str().unwrap_or_default().to_string(),
                name: tool_name(b)?,
                arguments: input_text(b.get("input"))?,
            }),
            Some(_) => {}
            None => return Err(format!("a content block has no type: {}", short(b))),
        }
    }
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0),
            output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0),
        },
        stop: stop_reason(v["stop_reason"].as_str()),
    })
}

#[derive(Debug)]
enum Block {
    Text,
    Tool(ToolCall),
    Other,
}

/// Accumulates streamed events into one response.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    text: String,
    blocks: Vec<Block>,
    calls: Vec<ToolCall>,
    usage: Usage,
    stop: Option<String>,
    done: bool,
}

impl StreamAssembler {
    /// Adds one event (`event:` name and `data:` payload); returns the text delta it carried.
    pub fn push(&mut self, event: &str, data: &str) -> Result<Option<String>, String> {
        if event == "ping" || data.trim().is_empty() {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| format!("bad event: {e}"))?;
        let kind = if event.is_empty() || event == "message" {
            v["type"].as_str().unwrap_or_default().to_string()
        } else {
            event.to_string()
        };
        match kind.as_str() {
            "message_start" => {
                let u = &v["message"]["usage"];
                self.usage.input_tokens = u["input_tokens"].as_u64().unwrap_or(0);
                self.usage.output_tokens = u["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => {
                let b = &v["content_block"];
                if !b.is_object() {
                    return Err(format!("a content_block_start has no block: {}", short(&v)));
                }
                let block = match b["type"].as_str() {
                    Some("text") => {
                        let t = b["text"].as_str().unwrap_or_default();
                        self.text.push_str(t);
                        Block::Text
                    }
                    Some("tool_use") => Block::Tool(ToolCall {
                        id: b["id"].as_str().unwrap_or_default().to_string(),
                        name: tool_name(b)?,
                        arguments: String::new(),
                    }),
                    Some(_) => Block::Other,
                    None => return Err(format!("a content block has no type: {}", short(b))),
                };
                self.blocks.push(block);
            }
            "content_block_delta" => {
                let d = &v["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => {
                        let t = d["text"]
                            .as_str()
                            .ok_or_else(|| format!("a text_delta has no text: {}", short(d)))?;
                        self.text.push_str(t);
                        return Ok((!t.is_empty()).then(|| t.to_string()));
                    }
                    Some("input_json_delta") => {
                        let part = d["partial_json"].as_str().ok_or_else(|| {
                            format!("an input_json_delta has no partial_json: {}", short(d))
                        })?;
                        if let Some(Block::Tool(c)) = self.blocks.last_mut() {
                            c.arguments.push_str(part);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(Block::Tool(mut c)) = self.blocks.pop() {
                    if c.arguments.trim().is_empty() {
                        c.arguments = "{}".into();
                    }
                    self.calls.push(c);
                }
                self.blocks.push(Block::Other);
            }
            "message_delta" => {
                if let Some(r) = v["delta"]["stop_reason"].as_str() {
                    self.stop = Some(r.to_string());
                }
                if let Some(o) = v["usage"]["output_tokens"].as_u64() {
                    self.usage.output_tokens = o;
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(format!("stream error: {}", v["error"])),
            _ => {}
        }
        Ok(None)
    }

    /// Whether `message_stop` arrived.
    pub fn finished(&self) -> bool {
        self.done
    }

    /// The assembled response, once the stream has ended. A stream that ended with neither
    /// `message_stop` nor a `stop_reason` was cut short: it is [`Unusable::Truncated`], and none
    /// of its tool calls may run. A tool_use block that was never closed is
    /// [`Unusable::Malformed`].
    pub fn finish(self) -> Result<ChatResponse, Unusable> {
        if !self.done && self.stop.is_none() {
            return Err(Unusable::Truncated(
                "the stream ended with no message_stop and no stop_reason".into(),
            ));
        }
        if self.blocks.iter().any(|b| matches!(b, Block::Tool(_))) {
            return Err(Unusable::Malformed(
                "a tool_use block was never closed".into(),
            ));
        }
        Ok(ChatResponse {
            text: self.text,
            tool_calls: self.calls,
            usage: self.usage,
            stop: stop_reason(self.stop.as_deref()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_of_one_turn_share_a_user_message_and_bad_input_is_wrapped() {
        let call = |id: &str, args: &str| ToolCall {
            id: id.into(),
            name: "gpio_read".into(),
            arguments: args.into(),
        };
        let result = |id: &str| Message::ToolResult {
            call_id: id.into(),
            name: "gpio_read".into(),
            content: "{}".into(),
            is_error: false,
        };
        let msgs = vec![
            Message::User("hi".into()),
            Message::Assistant {
                text: "Let me look.".into(),
                tool_calls: vec![call("t1", r#"{"pin":17}"#), call("t2", r#"{"pin": 2"#)],
            },
            result("t1"),
            result("t2"),
        ];
        let b = request_body(
            "claude",
            1024,
            &ChatRequest {
                system: "sys",
                messages: &msgs,
                tools: &[],
            },
            false,
        );
        assert_eq!(b["system"], "sys");
        assert_eq!(b["messages"].as_array().unwrap().len(), 3);
        assert_eq!(b["messages"][1]["content"][1]["input"]["pin"], 17);
        assert_eq!(
            b["messages"][1]["content"][2]["input"]["invalid_arguments"],
            r#"{"pin": 2"#
        );
        assert_eq!(b["messages"][2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(b["messages"][2]["content"][1]["tool_use_id"], "t2");
    }

    #[test]
    fn streamed_events_assemble_text_tools_and_usage() {
        let mut a = StreamAssembler::default();
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"usage":{"input_tokens":20,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Rea"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ding"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"sensor_read","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"sensor\":"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"climate\"}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        let mut text = String::new();
        for (e, d) in events {
            if let Some(t) = a.push(e, d).unwrap() {
                text.push_str(&t);
            }
        }
        assert!(a.finished());
        let r = a.finish().unwrap();
        assert_eq!(text, "Reading");
        assert_eq!(r.tool_calls[0].arguments, r#"{"sensor":"climate"}"#);
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 20,
                output_tokens: 9
            }
        );
    }

    #[test]
    fn a_stream_without_message_stop_or_stop_reason_is_truncated_and_yields_no_call() {
        let events = [
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"memory_store","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
        ];
        let mut a = StreamAssembler::default();
        for (e, d) in events {
            a.push(e, d).unwrap();
        }
        assert!(matches!(a.finish(), Err(Unusable::Truncated(_))));
        let mut a = StreamAssembler::default();
        for (e, d) in events {
            a.push(e, d).unwrap();
        }
        a.push("message_stop", r#"{"type":"message_stop"}"#)
            .unwrap();
        assert_eq!(a.finish().unwrap().tool_calls.len(), 1);
        assert!(parse_response(&json!({"content": [{"type": "text", "text": 5}]})).is_err());
        assert!(parse_response(&json!({"content": [7]})).is_err());
    }
}
