//! Tools for models whose server does not carry them: the `text` and `constrained` ways of
//! `[llm] tool_calls`. Pure functions; no I/O.
//!
//! Both put the tools into the system prompt, after the configured prompt and before the
//! conversation, in a byte-stable form (the same tools give the same bytes), so a server's prompt
//! cache keeps the whole prefix from turn to turn. The history is re-encoded without the API's
//! tool fields: a call the model made becomes text in its own message, a result becomes a user
//! message. `constrained` also holds the reply to an answer or one call to a tool sent this
//! turn, with arguments that match that tool's schema: llama.cpp gets covo's grammar
//! ([`super::gbnf`]), other servers the JSON schema here (Ollama turns it into its `format`).

use super::{ChatRequest, Message, ToolCall};
use covo_core::plan::{render, Format};
use covo_core::spec::ToolSpec;
use serde_json::{json, Map, Value};

/// The way tools travel on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// The API's `tools` field.
    Native,
    /// Tools in the prompt; calls read back from the text.
    Text,
    /// Tools in the prompt; the reply held to [`reply_schema`].
    Constrained,
}

impl Wire {
    /// The name used in `[llm] tool_calls`, the log and `covo doctor`.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Native => "native",
            Wire::Text => "text",
            Wire::Constrained => "constrained",
        }
    }
}

/// What the model is told about the tools and how to call one, appended to the system prompt.
pub fn tools_section(tools: &[&ToolSpec], wire: Wire) -> String {
    let mut s = String::from("\n\n# Tools\n\n");
    match wire {
        Wire::Constrained => s.push_str(
            "Reply with one JSON object and nothing else. To answer the user: \
             {\"answer\": \"your answer\"}. To call a tool: \
             {\"name\": \"tool_name\", \"arguments\": {…}}, with arguments that match the \
             tool's parameters. After a call you get its result and reply again.\n",
        ),
        _ => s.push_str(
            "To call a tool, reply with only this, one block per call:\n\
             <tool_call>\n{\"name\": \"tool_name\", \"arguments\": {…}}\n</tool_call>\n\
             with arguments that match the tool's parameters. You get each result in a \
             <tool_response> block; then reply again. To answer, write plain text.\n",
        ),
    }
    s.push_str("\nThe tools, one JSON object per line:\n");
    for f in render(tools, Format::Openai)
        .as_array()
        .into_iter()
        .flatten()
    {
        s.push_str(&f["function"].to_string());
        s.push('\n');
    }
    s
}

/// How a call the model made is written back into its own message.
fn call_text(c: &ToolCall, wire: Wire) -> String {
    let args: Value =
        serde_json::from_str(&c.arguments).unwrap_or_else(|_| Value::String(c.arguments.clone()));
    let body = json!({"name": c.name, "arguments": args}).to_string();
    match wire {
        Wire::Constrained => body,
        _ => format!("<tool_call>\n{body}\n</tool_call>"),
    }
}

/// The request re-encoded for `wire` (not [`Wire::Native`]): the system prompt with the tools
/// section, and a history with no tool fields. Consecutive results share one user message.
pub fn rewrite(req: &ChatRequest<'_>, wire: Wire) -> (String, Vec<Message>) {
    let system = format!("{}{}", req.system, tools_section(req.tools, wire));
    let mut out: Vec<Message> = Vec::with_capacity(req.messages.len());
    for m in req.messages {
        match m {
            Message::User(t) => out.push(Message::User(t.clone())),
            Message::Assistant { text, tool_calls } => {
                let mut parts: Vec<String> = Vec::new();
                if !text.is_empty() {
                    parts.push(text.clone());
                }
                parts.extend(tool_calls.iter().map(|c| call_text(c, wire)));
                out.push(Message::Assistant {
                    text: parts.join("\n"),
                    tool_calls: Vec::new(),
                });
            }
            Message::ToolResult { name, content, .. } => {
                let content: Value = serde_json::from_str(content)
                    .unwrap_or_else(|_| Value::String(content.clone()));
                let block = format!(
                    "<tool_response>\n{}\n</tool_response>",
                    json!({"name": name, "content": content})
                );
                match out.last_mut() {
                    Some(Message::User(prev)) if prev.ends_with("</tool_response>") => {
                        prev.push('\n');
                        prev.push_str(&block);
                    }
                    _ => out.push(Message::User(block)),
                }
            }
        }
    }
    (system, out)
}

/// The JSON schema of a constrained reply: `{"answer": text}`, or `{"name", "arguments"}` for
/// one of `tools` with that tool's own parameter schema.
pub fn reply_schema(tools: &[&ToolSpec]) -> Value {
    let mut any = vec![json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": false,
    })];
    for t in tools {
        any.push(json!({
            "type": "object",
            "properties": {
                "name": {"const": t.name},
                "arguments": t.params_json(),
            },
            "required": ["name", "arguments"],
            "additionalProperties": false,
        }));
    }
    json!({"anyOf": any})
}

/// The OpenAI-style `response_format` that carries [`reply_schema`] (llama.cpp's server and
/// Ollama's OpenAI endpoint both read it).
pub fn response_format(tools: &[&ToolSpec]) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {"name": "reply", "strict": true, "schema": reply_schema(tools)},
    })
}

/// Reads a constrained reply: the answer's text, or the call. A reply that is not the schema's
/// JSON (a server that ignored the schema, an answer cut by `max_tokens`) is read as `text`
/// mode would read it, so a call in it still runs and anything else is shown as it came.
pub fn read_reply(text: &str, id: String) -> (String, Vec<ToolCall>) {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text.trim()) {
        if let Some(Value::String(a)) = o.get("answer") {
            return (a.clone(), Vec::new());
        }
        if let Some(Value::String(name)) = o.get("name") {
            let arguments = match o.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => Value::Object(Map::new()).to_string(),
            };
            return (
                String::new(),
                vec![ToolCall {
                    id,
                    name: name.clone(),
                    arguments,
                }],
            );
        }
    }
    (text.to_string(), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<&'static ToolSpec> {
        ["sensor_read", "gpio_write"]
            .iter()
            .map(|n| covo_core::catalog::all().find(|t| t.name == *n).unwrap())
            .collect()
    }

    #[test]
    fn the_tools_section_is_byte_stable_and_names_every_tool() {
        let t = tools();
        let a = tools_section(&t, Wire::Text);
        assert_eq!(a, tools_section(&t, Wire::Text));
        assert!(a.contains("\"name\":\"sensor_read\"") && a.contains("\"name\":\"gpio_write\""));
        assert!(a.contains("<tool_call>"));
        assert!(tools_section(&t, Wire::Constrained).contains("{\"answer\""));
    }

    #[test]
    fn a_history_with_calls_is_rewritten_without_tool_fields() {
        let t = tools();
        let msgs = vec![
            Message::User("temp?".into()),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "a".into(),
                        name: "sensor_read".into(),
                        arguments: r#"{"sensor":"climate"}"#.into(),
                    },
                    ToolCall {
                        id: "b".into(),
                        name: "sensor_read".into(),
                        arguments: r#"{"sensor":"soil"}"#.into(),
                    },
                ],
            },
            Message::ToolResult {
                call_id: "a".into(),
                name: "sensor_read".into(),
                content: r#"{"t":21}"#.into(),
                is_error: false,
            },
            Message::ToolResult {
                call_id: "b".into(),
                name: "sensor_read".into(),
                content: "not json".into(),
                is_error: true,
            },
        ];
        let req = ChatRequest {
            system: "sys",
            messages: &msgs,
            tools: &t,
        };
        let (system, out) = rewrite(&req, Wire::Text);
        assert!(system.starts_with("sys\n\n# Tools"));
        assert_eq!(out.len(), 3, "{out:?}");
        let Message::Assistant { text, tool_calls } = &out[1] else {
            panic!()
        };
        assert!(tool_calls.is_empty());
        assert_eq!(text.matches("<tool_call>").count(), 2);
        let Message::User(results) = &out[2] else {
            panic!()
        };
        assert_eq!(results.matches("<tool_response>").count(), 2);
        assert!(results.contains(r#""content":{"t":21}"#));
        assert!(results.contains(r#""content":"not json""#));
        // The calls written back read as calls again.
        let (_, calls) = crate::agent::textcalls::extract(text, 0);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, r#"{"sensor":"soil"}"#);
    }

    #[test]
    fn the_reply_schema_offers_an_answer_or_one_call_per_tool() {
        let t = tools();
        let s = reply_schema(&t);
        let any = s["anyOf"].as_array().unwrap();
        assert_eq!(any.len(), 3);
        assert_eq!(any[1]["properties"]["name"]["const"], "sensor_read");
        assert_eq!(any[1]["properties"]["arguments"], t[0].params_json());
        assert_eq!(response_format(&t)["json_schema"]["schema"], s);
    }

    #[test]
    fn constrained_replies_read_as_answers_or_calls() {
        assert_eq!(
            read_reply(r#"{"answer": "21 °C"}"#, "x".into()),
            ("21 °C".to_string(), vec![])
        );
        let (text, calls) = read_reply(
            r#" {"name": "sensor_read", "arguments": {"sensor": "climate"}} "#,
            "cc_1".into(),
        );
        assert!(text.is_empty());
        assert_eq!(calls[0].id, "cc_1");
        assert_eq!(calls[0].arguments, r#"{"sensor":"climate"}"#);
        // Not the schema's JSON: left for the text reader.
        let (text, calls) = read_reply(r#"{"answer": "cut sho"#, "x".into());
        assert_eq!(text, r#"{"answer": "cut sho"#);
        assert!(calls.is_empty());
    }
}
