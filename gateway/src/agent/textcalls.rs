//! Tool calls that small local models write into their text instead of the API's `tool_calls`
//! field: Hermes/Qwen `<tool_call>{…}</tool_call>` blocks, and a reply that is nothing but a
//! `{"name": …, "arguments"|"parameters": {…}}` object (optionally in a ```json fence).

use crate::llm::ToolCall;
use serde_json::Value;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// Splits `text` into the prose that remains and the tool calls embedded in it. Calls get ids
/// `text_call_<n>` counted from `first_id`. Text without embedded calls comes back unchanged.
pub fn extract(text: &str, first_id: usize) -> (String, Vec<ToolCall>) {
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut s = text;
    while let Some(start) = s.find(OPEN) {
        rest.push_str(&s[..start]);
        let after = &s[start + OPEN.len()..];
        let (body, tail) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len()..]),
            None => (after, ""),
        };
        calls.push(call_from(body.trim(), first_id + calls.len()));
        s = tail;
    }
    rest.push_str(s);
    if !calls.is_empty() {
        return (rest.trim().to_string(), calls);
    }
    let bare = strip_fence(text.trim());
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(bare) {
        let has_args = o.contains_key("arguments") || o.contains_key("parameters");
        if o.get("name").is_some_and(Value::is_string) && has_args && o.len() <= 3 {
            return (String::new(), vec![call_from(bare, first_id)]);
        }
    }
    (text.to_string(), Vec::new())
}

fn strip_fence(t: &str) -> &str {
    t.strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|x| x.strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(t)
}

/// A call from one embedded JSON body. A body that is not valid JSON still becomes a call (with
/// an empty name and the raw text as arguments), so the model gets a structured error back
/// instead of silence.
fn call_from(body: &str, n: usize) -> ToolCall {
    let id = format!("text_call_{n}");
    match serde_json::from_str::<Value>(body) {
        Ok(v) => {
            let args = v.get("arguments").or_else(|| v.get("parameters"));
            ToolCall {
                id,
                name: v["name"].as_str().unwrap_or_default().to_string(),
                arguments: match args {
                    Some(Value::String(s)) => s.clone(),
                    Some(a) => a.to_string(),
                    None => "{}".into(),
                },
            }
        }
        Err(_) => ToolCall {
            id,
            name: String::new(),
            arguments: body.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hermes_blocks_become_calls_and_the_prose_remains() {
        let (rest, calls) = extract(
            "Let me check.\n<tool_call>\n{\"name\": \"sensor_read\", \"arguments\": {\"sensor\": \"climate\"}}\n</tool_call>",
            0,
        );
        assert_eq!(rest, "Let me check.");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "sensor_read");
        assert_eq!(calls[0].arguments, r#"{"sensor":"climate"}"#);
        assert_eq!(calls[0].id, "text_call_0");
    }

    #[test]
    fn a_bare_json_call_with_parameters_is_recognised_even_in_a_fence() {
        let (rest, calls) = extract(
            "```json\n{\"name\": \"gpio_read\", \"parameters\": {\"pin\": 27}}\n```",
            3,
        );
        assert!(rest.is_empty());
        assert_eq!(calls[0].name, "gpio_read");
        assert_eq!(calls[0].id, "text_call_3");
    }

    #[test]
    fn ordinary_text_and_ordinary_json_answers_are_left_alone() {
        let (rest, calls) = extract("It is 21 °C.", 0);
        assert_eq!(rest, "It is 21 °C.");
        assert!(calls.is_empty());
        let (_, calls) = extract(r#"{"temperature": 21, "unit": "degC"}"#, 0);
        assert!(calls.is_empty());
    }

    #[test]
    fn a_broken_embedded_call_still_becomes_a_call_so_the_model_hears_about_it() {
        let (_, calls) = extract("<tool_call>{\"name\": \"gpio_read\", </tool_call>", 0);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "");
    }
}
