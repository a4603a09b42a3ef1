//! Tool calls that local models write into their text instead of the API's `tool_calls` field,
//! and the near-JSON they write them in.
//!
//! Formats read: Hermes/Qwen `<tool_call>{…}</tool_call>` blocks; Mistral's
//! `[TOOL_CALLS][{…}, …]` and `[TOOL_CALLS]name[ARGS]{…}`; Llama 3's `<|python_tag|>{…}` (calls
//! separated by `;`); and a reply that is nothing but a call object or a list of them
//! (optionally in a ```json fence). A call is `{"name": …, "arguments"|"parameters": {…}}`.
//!
//! Near-JSON is repaired before it is read: single-quoted strings, unquoted keys, trailing
//! commas, and Python's `True`, `False` and `None`. A call that still cannot be read becomes a
//! call with no name and the raw text as its arguments, so the model gets an error it can act on
//! instead of silence.

use crate::llm::ToolCall;
use serde_json::Value;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const MISTRAL: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
const PYTHON_TAG: &str = "<|python_tag|>";

/// Splits `text` into the prose that remains and the tool calls embedded in it. Calls get ids
/// `text_call_<n>` counted from `first_id`. Text without embedded calls comes back unchanged.
pub fn extract(text: &str, first_id: usize) -> (String, Vec<ToolCall>) {
    let mut bodies: Vec<Body> = Vec::new();
    let rest = if text.contains(OPEN) {
        hermes(text, &mut bodies)
    } else if let Some(at) = text.find(MISTRAL) {
        mistral(&text[at + MISTRAL.len()..], &mut bodies);
        text[..at].to_string()
    } else if let Some(at) = text.find(PYTHON_TAG) {
        for part in split_top_level(&text[at + PYTHON_TAG.len()..], ';') {
            bodies.push(Body::Json(part.trim().to_string()));
        }
        text[..at].to_string()
    } else {
        let bare = strip_fence(text.trim());
        match read(bare) {
            Some(v) if is_call(&v) || is_call_list(&v) => {
                bodies.push(Body::Json(bare.to_string()));
                String::new()
            }
            _ => return (text.to_string(), Vec::new()),
        }
    };
    let mut calls = Vec::new();
    for b in bodies {
        calls_from(b, first_id, &mut calls);
    }
    (rest.trim().to_string(), calls)
}

/// One embedded call, as the model wrote it.
enum Body {
    /// A JSON (or near-JSON) call object, or a list of them.
    Json(String),
    /// Mistral's `name[ARGS]{…}`.
    Named(String, String),
}

fn hermes(text: &str, bodies: &mut Vec<Body>) -> String {
    let mut rest = String::new();
    let mut s = text;
    while let Some(start) = s.find(OPEN) {
        rest.push_str(&s[..start]);
        let after = &s[start + OPEN.len()..];
        let (body, tail) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len()..]),
            None => (after, ""),
        };
        bodies.push(Body::Json(body.trim().to_string()));
        s = tail;
    }
    rest.push_str(s);
    rest
}

fn mistral(s: &str, bodies: &mut Vec<Body>) {
    let s = s.trim();
    if s.starts_with('[') || s.starts_with('{') {
        bodies.push(Body::Json(s.to_string()));
        return;
    }
    // `name[ARGS]{…}`, possibly repeated, each after its own `[TOOL_CALLS]` or not.
    for part in s.split(MISTRAL).map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once(MISTRAL_ARGS) {
            Some((name, args)) => bodies.push(Body::Named(
                name.trim().to_string(),
                args.trim().to_string(),
            )),
            None => bodies.push(Body::Json(part.to_string())),
        }
    }
}

fn calls_from(body: Body, first_id: usize, out: &mut Vec<ToolCall>) {
    let mut push = |name: String, arguments: String| {
        let id = format!("text_call_{}", first_id + out.len());
        out.push(ToolCall {
            id,
            name,
            arguments,
        });
    };
    match body {
        Body::Named(name, args) => {
            let arguments = match read(&args) {
                Some(v) => v.to_string(),
                None => args,
            };
            push(name, arguments);
        }
        Body::Json(text) => match read(&text) {
            Some(Value::Array(items)) if !items.is_empty() => {
                for v in items {
                    let (name, arguments) = call_parts(&v, &text);
                    push(name, arguments);
                }
            }
            Some(v) => {
                let (name, arguments) = call_parts(&v, &text);
                push(name, arguments);
            }
            None => push(String::new(), text),
        },
    }
}

/// The name and the arguments (JSON text) of one call object. Something that is not a call
/// object gives no name and the raw text, for the error.
fn call_parts(v: &Value, raw: &str) -> (String, String) {
    let Some(name) = v.get("name").and_then(Value::as_str) else {
        return (String::new(), raw.to_string());
    };
    let args = v.get("arguments").or_else(|| v.get("parameters"));
    let arguments = match args {
        Some(Value::String(s)) => match read(s) {
            Some(v) => v.to_string(),
            None => s.clone(),
        },
        Some(a) => a.to_string(),
        None => "{}".into(),
    };
    (name.to_string(), arguments)
}

fn is_call(v: &Value) -> bool {
    let Value::Object(o) = v else { return false };
    let has_args = o.contains_key("arguments") || o.contains_key("parameters");
    o.get("name").is_some_and(Value::is_string) && has_args && o.len() <= 3
}

fn is_call_list(v: &Value) -> bool {
    matches!(v, Value::Array(items) if !items.is_empty() && items.iter().all(is_call))
}

fn strip_fence(t: &str) -> &str {
    t.strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|x| x.strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(t)
}

/// JSON text, or near-JSON that [`repair`] can fix.
pub fn read(text: &str) -> Option<Value> {
    let text = text.trim();
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&repair(text)?).ok())
}

/// Parts of `s` split at `sep` where it is outside strings, brackets and braces.
fn split_top_level(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut escaped, mut start) = (0i32, None::<char>, false, 0);
    for (i, ch) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '"' | '\'' => quote = Some(ch),
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&s[start..i]);
                start = i + ch.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Rewrites near-JSON as JSON: single-quoted strings become double-quoted, bare keys are
/// quoted, commas before `}` or `]` go, and `True`/`False`/`None` become `true`/`false`/`null`.
/// Returns `None` for text it cannot make sense of (an unterminated string, a bare word where a
/// value belongs). What it returns may still not parse; the caller parses it.
pub fn repair(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                let (s, next) = string_at(&chars, i)?;
                out.push_str(&serde_json::to_string(&s).ok()?);
                i = next;
            }
            ',' => {
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                if !matches!(next, Some('}') | Some(']')) {
                    out.push(',');
                }
                i += 1;
            }
            c if c.is_alphabetic() || c == '_' || c == '$' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '$' | '-'))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let next = chars[i..].iter().find(|c| !c.is_whitespace());
                if next == Some(&':') {
                    out.push_str(&serde_json::to_string(&word).ok()?);
                } else {
                    out.push_str(match word.as_str() {
                        "true" | "True" => "true",
                        "false" | "False" => "false",
                        "null" | "None" => "null",
                        _ => return None,
                    });
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// The string that starts with the quote at `chars[at]`, unescaped, and the index after it.
fn string_at(chars: &[char], at: usize) -> Option<(String, usize)> {
    let q = chars[at];
    let mut s = String::new();
    let mut i = at + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let e = *chars.get(i + 1)?;
                match e {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    'r' => s.push('\r'),
                    'b' => s.push('\u{8}'),
                    'f' => s.push('\u{c}'),
                    'u' => {
                        let hex: String = chars.get(i + 2..i + 6)?.iter().collect();
                        s.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                        i += 4;
                    }
                    other => s.push(other),
                }
                i += 2;
            }
            c if c == q => return Some((s, i + 1)),
            c => {
                s.push(c);
                i += 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        let (rest, calls) = extract("I'd say it's 'warm', isn't it?", 0);
        assert_eq!(rest, "I'd say it's 'warm', isn't it?");
        assert!(calls.is_empty());
    }

    #[test]
    fn a_broken_embedded_call_still_becomes_a_call_so_the_model_hears_about_it() {
        let (_, calls) = extract("<tool_call>{\"name\": \"gpio_read\", </tool_call>", 0);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "");
    }

    #[test]
    fn mistral_tool_calls_in_both_of_its_forms() {
        let (rest, calls) = extract(
            r#"[TOOL_CALLS][{"name": "sensor_read", "arguments": {"sensor": "climate"}}, {"name": "gpio_read", "arguments": {"pin": 17}}]"#,
            0,
        );
        assert!(rest.is_empty());
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].name, "gpio_read");
        assert_eq!(calls[1].id, "text_call_1");
        let (_, calls) = extract(
            r#"[TOOL_CALLS]sensor_read[ARGS]{"sensor": "climate"}[TOOL_CALLS]gpio_write[ARGS]{'pin': 17, 'level': 1,}"#,
            0,
        );
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "sensor_read");
        assert_eq!(calls[1].arguments, r#"{"pin":17,"level":1}"#);
    }

    #[test]
    fn llama_python_tag_calls_separated_by_semicolons() {
        let (rest, calls) = extract(
            r#"Sure.<|python_tag|>{"name": "sensor_read", "parameters": {"sensor": "climate"}}; {"name": "gpio_read", "parameters": {"pin": 4}}"#,
            0,
        );
        assert_eq!(rest, "Sure.");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, r#"{"pin":4}"#);
    }

    #[test]
    fn near_json_is_repaired() {
        let (_, calls) = extract(
            "<tool_call>{'name': 'gpio_write', 'arguments': {pin: 17, level: 1, 'note': 'it\\'s on',},}</tool_call>",
            0,
        );
        assert_eq!(calls[0].name, "gpio_write");
        let v: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"pin": 17, "level": 1, "note": "it's on"})
        );
        let (_, calls) = extract(
            "{\"name\": \"relay_set\", \"arguments\": {\"on\": True, \"after\": None}}",
            0,
        );
        assert_eq!(calls[0].arguments, r#"{"on":true,"after":null}"#);
        // Arguments sent as a string of near-JSON are repaired too.
        let (_, calls) = extract(r#"[{"name": "gpio_read", "arguments": "{'pin': 5,}"}]"#, 0);
        assert_eq!(calls[0].arguments, r#"{"pin":5}"#);
    }

    #[test]
    fn a_bare_word_is_not_repaired_into_a_value() {
        assert_eq!(repair("{'pin': seventeen}"), None);
        assert_eq!(repair("{'pin': 'unterminated}"), None);
    }

    /// A call in one of the formats, written with some of the near-JSON faults.
    fn written(name: &str, args: &Value, form: u8, faults: u8) -> String {
        let mut body = serde_json::json!({"name": name, "arguments": args}).to_string();
        if faults & 1 != 0 {
            // Single quotes for every string that holds none.
            if !body.contains('\'') {
                body = body.replace('"', "'");
            }
        }
        if faults & 2 != 0 {
            body = body.replace('}', ",}");
        }
        if faults & 4 != 0 {
            body = body.replace("'name'", "name").replace("\"name\"", "name");
        }
        match form % 4 {
            0 => format!("<tool_call>\n{body}\n</tool_call>"),
            1 => format!("[TOOL_CALLS][{body}]"),
            2 => format!("<|python_tag|>{body}"),
            _ => format!("```json\n{body}\n```"),
        }
    }

    fn arg_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i32>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            "[a-z0-9 .°]{0,12}".prop_map(Value::from),
            Just(Value::Null),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever a model writes, reading it does not panic, and every call it yields has
        /// arguments that are JSON or is a nameless call the model is told about.
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let (_, calls) = extract(&s, 0);
            for c in calls {
                prop_assert!(c.name.is_empty() || serde_json::from_str::<Value>(&c.arguments).is_ok());
            }
            let _ = repair(&s);
        }

        /// A call written in any format with any of the faults reads back as the call that was
        /// meant: the same name and the same arguments, so it validates against its schema
        /// exactly when the intended call would.
        #[test]
        fn malformed_calls_repair_to_the_intended_call(
            name in "[a-z][a-z_]{2,14}",
            args in proptest::collection::btree_map("[a-z][a-z_]{0,8}", arg_value(), 0..5),
            form in 0u8..4,
            faults in 0u8..8,
        ) {
            let args = Value::Object(args.into_iter().collect());
            let text = written(&name, &args, form, faults);
            let (_, calls) = extract(&text, 0);
            prop_assert_eq!(calls.len(), 1, "{}", text);
            prop_assert_eq!(&calls[0].name, &name);
            let got: Value = serde_json::from_str(&calls[0].arguments).unwrap();
            prop_assert_eq!(got, args, "{}", text);
        }

        /// Cutting a call anywhere never yields a call with a name and unreadable arguments.
        #[test]
        fn truncated_calls_are_errors_not_guesses(cut in 0usize..80) {
            let text = "<tool_call>{\"name\": \"gpio_write\", \"arguments\": {\"pin\": 17, \"level\": 1}}</tool_call>";
            let cut = cut.min(text.len());
            let (_, calls) = extract(&text[..cut], 0);
            for c in calls {
                prop_assert!(c.name.is_empty() || serde_json::from_str::<Value>(&c.arguments).is_ok());
            }
        }
    }
}
