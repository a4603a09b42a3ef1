//! The OpenAI Chat Completions wire format: request bodies, whole responses, and the assembly of
//! streamed chunks. Pure functions over JSON; no I/O.

use super::{Body, ChatRequest, ChatResponse, Message, StopReason, ToolCall, Unusable, Usage};
use covo_core::plan::{render_raw, Format};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The request body for `POST {base}/chat/completions`.
pub fn request_body(model: &str, req: &ChatRequest<'_>, stream: bool) -> Body {
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
    let mut json = json!({"model": model, "messages": messages});
    if stream {
        json["stream"] = json!(true);
        json["stream_options"] = json!({"include_usage": true});
    }
    Body {
        json,
        tools: (!req.tools.is_empty()).then(|| render_raw(req.tools, Format::Openai)),
    }
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

/// Parses a whole (non-streamed) response. Anything but a non-empty `choices` list whose first
/// entry has a `message` object with text (or null) `content` and well-formed `tool_calls` is an
/// error: a malformed answer is never taken for an empty one.
pub fn parse_response(v: &Value) -> Result<ChatResponse, String> {
    let choice = match v.get("choices") {
        Some(Value::Array(choices)) => choices
            .first()
            .ok_or_else(|| format!("`choices` is empty in {}", short(v)))?,
        Some(other) => return Err(format!("`choices` is not a list: {}", short(other))),
        None => return Err(format!("no `choices` in {}", short(v))),
    };
    let msg = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| {
            format!(
                "the first choice has no `message` object: {}",
                short(choice)
            )
        })?;
    let text = match msg.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "`content` is neither text nor null: {}",
                short(other)
            ))
        }
    };
    let tool_calls = match msg.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| whole_call(c, i))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`tool_calls` is not a list: {}", short(other))),
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: usage(&v["usage"]),
        stop: stop_reason(choice["finish_reason"].as_str()),
    })
}

/// One entry of a whole response's `tool_calls`. A call with no function name is kept with an
/// empty name: it is answered with an error the model can act on, and its siblings still run.
fn whole_call(c: &Value, i: usize) -> Result<ToolCall, String> {
    let f = &c["function"];
    let name = f["name"].as_str().unwrap_or_default().to_string();
    let arguments = match f.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(o @ Value::Object(_)) => o.to_string(),
        Some(other) => {
            return Err(format!(
                "tool call {i} has arguments that are neither text nor an object: {}",
                short(other)
            ))
        }
    };
    Ok(ToolCall {
        id: call_id(c["id"].as_str(), i),
        name,
        arguments,
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
    /// Whether any chunk carried a choice.
    saw_choice: bool,
    /// Whether `data: [DONE]` arrived.
    done: bool,
}

impl StreamAssembler {
    /// Adds one chunk (or the final `[DONE]`); returns the text delta it carried, if any. A chunk
    /// that is not JSON, or whose `choices`, `delta` or `tool_calls` have the wrong shape, is an
    /// error.
    pub fn push(&mut self, data: &str) -> Result<Option<String>, String> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| format!("bad chunk: {e}"))?;
        if let Some(err) = v.get("error") {
            return Err(format!("stream error: {}", short(err)));
        }
        if v["usage"].is_object() {
            self.usage = usage(&v["usage"]);
        }
        let choice = match v.get("choices") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Array(choices)) => match choices.first() {
                None => return Ok(None),
                Some(c) if c.is_object() => c,
                Some(c) => return Err(format!("a chunk's choice is not an object: {}", short(c))),
            },
            Some(other) => {
                return Err(format!(
                    "a chunk's `choices` is not a list: {}",
                    short(other)
                ))
            }
        };
        self.saw_choice = true;
        if let Some(r) = choice["finish_reason"].as_str() {
            self.stop = Some(r.to_string());
        }
        let delta = match choice.get("delta") {
            None | Some(Value::Null) => &Value::Null,
            Some(d @ Value::Object(_)) => d,
            Some(other) => {
                return Err(format!(
                    "a chunk's `delta` is not an object: {}",
                    short(other)
                ))
            }
        };
        match delta.get("tool_calls") {
            None | Some(Value::Null) | Some(Value::Array(_)) => {}
            Some(other) => {
                return Err(format!(
                    "a chunk's `tool_calls` is not a list: {}",
                    short(other)
                ))
            }
        }
        match delta.get("content") {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(format!(
                    "a chunk's `content` is neither text nor null: {}",
                    short(other)
                ))
            }
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (pos, c) in calls.iter().enumerate() {
                if !c.is_object() {
                    return Err(format!(
                        "a streamed tool call is not an object: {}",
                        short(c)
                    ));
                }
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

    /// Whether `data: [DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The assembled response, once the stream has ended. A stream that ended with neither a
    /// `finish_reason` nor `[DONE]` was cut short: it is [`Unusable::Truncated`], and none of its
    /// tool calls may run. A stream that never carried a choice is [`Unusable::Malformed`]. A
    /// call with no name stays in the list with an empty name: the agent answers it with an
    /// error, and the calls beside it run.
    pub fn finish(self) -> Result<ChatResponse, Unusable> {
        if self.stop.is_none() && !self.done {
            return Err(Unusable::Truncated(
                "the stream ended with no finish_reason and no [DONE]".into(),
            ));
        }
        if !self.saw_choice {
            return Err(Unusable::Malformed("the stream carried no choices".into()));
        }
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (i, c) in self.calls.into_values().enumerate() {
            tool_calls.push(ToolCall {
                id: call_id(c.id.as_deref(), i),
                name: c.name,
                arguments: c.arguments,
            });
        }
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop: stop_reason(self.stop.as_deref()),
        })
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
        assert!(b.tools.is_none(), "no tools key when no tools are visible");
        let sent: Value = serde_json::from_slice(&b.to_vec()).unwrap();
        assert!(sent.get("tools").is_none(), "{sent}");
        assert_eq!(sent, b.json);
    }

    #[test]
    fn the_sent_body_carries_the_rendered_tools_after_the_fields() {
        let tools: Vec<&'static covo_core::spec::ToolSpec> = covo_core::catalog::all()
            .filter(|t| t.toolset == "core" || t.toolset == "gpio")
            .collect();
        let msgs = vec![Message::User("hi".into())];
        let req = ChatRequest {
            system: "sys",
            messages: &msgs,
            tools: &tools,
        };
        for _ in 0..2 {
            let mut b = request_body("m", &req, true);
            b["max_completion_tokens"] = json!(100);
            let sent: Value = serde_json::from_slice(&b.to_vec()).unwrap();
            let empty = Body {
                json: json!({}),
                tools: b.tools.clone(),
            };
            let only: Value = serde_json::from_slice(&empty.to_vec()).unwrap();
            assert_eq!(only.as_object().unwrap().len(), 1);
            assert_eq!(only["tools"], sent["tools"]);
            assert_eq!(
                sent["tools"],
                covo_core::plan::render(&tools, Format::Openai)
            );
            assert_eq!(sent["max_completion_tokens"], 100);
            assert_eq!(sent["messages"][1]["content"], "hi");
            // One object, every key once, tools last.
            let keys: Vec<&String> = sent.as_object().unwrap().keys().collect();
            assert_eq!(
                keys,
                [
                    "model",
                    "messages",
                    "stream",
                    "stream_options",
                    "max_completion_tokens",
                    "tools"
                ]
            );
        }
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
        let r = a.finish().unwrap();
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
    fn a_call_with_no_name_does_not_sink_the_fifteen_beside_it() {
        let mut a = StreamAssembler::default();
        for i in 0..16 {
            let name = if i == 7 {
                String::new()
            } else {
                "\"name\":\"sensor_read\",".to_string()
            };
            a.push(&format!(
                r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{i},"id":"c{i}","function":{{{name}"arguments":"{{}}"}}}}]}}}}]}}"#
            ))
            .unwrap();
        }
        a.push(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#)
            .unwrap();
        let r = a.finish().unwrap();
        assert_eq!(r.tool_calls.len(), 16);
        assert_eq!(r.tool_calls[7].name, "");
        assert_eq!(
            r.tool_calls
                .iter()
                .filter(|c| c.name == "sensor_read")
                .count(),
            15
        );
        // The same in a whole response.
        let v = json!({"choices":[{"message":{"tool_calls":[
            {"id":"a","function":{"name":"sensor_read","arguments":"{}"}},
            {"id":"b","function":{"arguments":"{}"}}
        ]},"finish_reason":"tool_calls"}]});
        let r = parse_response(&v).unwrap();
        assert_eq!(
            (r.tool_calls[0].name.as_str(), r.tool_calls[1].name.as_str()),
            ("sensor_read", "")
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

    #[test]
    fn a_stream_without_finish_reason_or_done_is_truncated_and_yields_no_call() {
        let call = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"memory_store","arguments":"{}"}}]}}]}"#;
        let mut a = StreamAssembler::default();
        a.push(call).unwrap();
        assert!(matches!(a.finish(), Err(Unusable::Truncated(_))));
        // `[DONE]` alone ends a stream (some servers send no finish_reason).
        let mut a = StreamAssembler::default();
        a.push(call).unwrap();
        a.push("[DONE]").unwrap();
        assert!(a.is_done());
        assert_eq!(a.finish().unwrap().tool_calls.len(), 1);
        // A stream that never carried a choice, or a malformed chunk, is malformed.
        let mut a = StreamAssembler::default();
        a.push(r#"{"id":"x"}"#).unwrap();
        a.push("[DONE]").unwrap();
        assert!(matches!(a.finish(), Err(Unusable::Malformed(_))));
        assert!(StreamAssembler::default()
            .push(r#"{"choices":[{"delta":"text"}]}"#)
            .is_err());
    }
}
