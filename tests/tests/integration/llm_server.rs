//! The scripted LLM server speaks OpenAI Chat Completions and Anthropic Messages, streamed and
//! not, and records what it was sent. The client here is a raw `TcpStream` so the tests see the
//! bytes and the transfer chunks exactly as a real client would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use covo_tests::llm_server::{Api, Reply, ScriptedLlm, Usage};
use serde_json::{json, Value};

const CHAT: &str = "/v1/chat/completions";
const MESSAGES: &str = "/v1/messages";

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// The transfer chunks of a chunked body, in order.
    chunks: Vec<String>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// SSE events as (event name, data) pairs.
    fn events(&self) -> Vec<(Option<String>, String)> {
        self.body
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|event| {
                let mut name = None;
                let mut data = String::new();
                for line in event.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        name = Some(v.to_string());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    } else {
                        panic!("unexpected SSE line {line:?}");
                    }
                }
                (name, data)
            })
            .collect()
    }
}

fn send(
    srv: &ScriptedLlm,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut headers = headers.to_vec();
    headers.push(("Connection", "close"));
    exchange(&mut connect(srv), method, path, &headers, body)
}

fn connect(srv: &ScriptedLlm) -> BufReader<TcpStream> {
    let stream = TcpStream::connect(srv.addr()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    BufReader::new(stream)
}

/// Send one request on `conn` and read one response, delimited by its framing (not by EOF).
fn exchange(
    conn: &mut BufReader<TcpStream>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let stream = conn.get_mut();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();

    let mut line = String::new();
    conn.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut response_headers = Vec::new();
    loop {
        line.clear();
        conn.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':').expect("header line");
        response_headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut response = Response {
        status,
        headers: response_headers,
        body: String::new(),
        chunks: Vec::new(),
    };
    if response.header("transfer-encoding") == Some("chunked") {
        loop {
            line.clear();
            conn.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim(), 16).expect("chunk size");
            let mut chunk = vec![0; size + 2];
            conn.read_exact(&mut chunk).unwrap();
            assert_eq!(&chunk[size..], b"\r\n");
            if size == 0 {
                break;
            }
            response
                .chunks
                .push(String::from_utf8(chunk[..size].to_vec()).unwrap());
        }
        response.body = response.chunks.concat();
    } else if let Some(len) = response.header("content-length") {
        let mut body = vec![0; len.parse().unwrap()];
        conn.read_exact(&mut body).unwrap();
        response.body = String::from_utf8(body).unwrap();
    } else {
        conn.read_to_string(&mut response.body).unwrap();
    }
    response
}

fn post(srv: &ScriptedLlm, path: &str, body: &Value) -> Response {
    send(srv, "POST", path, &[], &body.to_string())
}

fn openai_request(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "How warm is it?"}],
        "tools": [{"type": "function", "function": {"name": "sensor_read", "parameters": {"type": "object"}}}],
        "stream": stream,
    })
}

fn anthropic_request(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Read pin 17"}],
        "stream": stream,
    })
}

/// The parsed `data:` payloads of an OpenAI stream, without the closing `[DONE]`.
fn openai_chunks(response: &Response) -> Vec<Value> {
    let events = response.events();
    let (last, rest) = events.split_last().expect("events");
    assert_eq!(last, &(None, "[DONE]".to_string()));
    rest.iter()
        .map(|(name, data)| {
            assert!(name.is_none(), "OpenAI chunks carry no event name");
            serde_json::from_str(data).unwrap()
        })
        .collect()
}

#[test]
fn openai_non_streaming_text_reply_has_content_stop_and_usage() {
    let srv = ScriptedLlm::start(vec![Reply::text("It is 21.5 °C.")]);
    let request = openai_request(false);
    let response = post(&srv, CHAT, &request);

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let body = response.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["id"], "chatcmpl-1");
    assert_eq!(body["model"], "gpt-test");
    let choice = &body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "It is 21.5 °C.");
    assert!(choice["message"].get("tool_calls").is_none());
    assert_eq!(choice["finish_reason"], "stop");

    let input = request.to_string().len() as u64 / 4;
    let output = "It is 21.5 °C.".len() as u64 / 4 + 1;
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
    );
    assert_eq!(srv.remaining(), 0);
}

#[test]
fn openai_non_streaming_tool_calls_carry_ids_names_and_verbatim_arguments() {
    let srv = ScriptedLlm::start(vec![Reply::tool_calls(vec![
        ("sensor_read", r#"{"sensor":"climate"}"#),
        ("gpio_read", r#"{"pin": 17"#),
    ])]);
    let body = post(&srv, CHAT, &openai_request(false)).json();

    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    assert_eq!(
        choice["message"]["tool_calls"],
        json!([
            {"id": "call_1", "type": "function", "function": {"name": "sensor_read", "arguments": "{\"sensor\":\"climate\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "gpio_read", "arguments": "{\"pin\": 17"}},
        ])
    );
}

#[test]
fn openai_streamed_text_reassembles_to_the_script_text_over_several_chunks() {
    let text = "It is 21.5 °C in the greenhouse.";
    let srv = ScriptedLlm::start(vec![Reply::text(text)]);
    let response = post(&srv, CHAT, &openai_request(true));

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(
        response.chunks.len(),
        response.events().len(),
        "one event per transfer chunk"
    );
    let chunks = openai_chunks(&response);
    assert!(
        chunks.len() > 5,
        "text is split into several deltas: {}",
        chunks.len()
    );
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == "chatcmpl-1"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");

    let assembled: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(assembled, text);

    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["choices"][0]["delta"], json!({}));
    let finishes = chunks
        .iter()
        .filter(|c| !c["choices"][0]["finish_reason"].is_null())
        .count();
    assert_eq!(finishes, 1);
}

#[test]
fn openai_streamed_tool_call_arguments_reassemble_by_index() {
    let srv = ScriptedLlm::start(vec![Reply::text_and_tools(
        "Checking.",
        vec![
            ("sensor_read", r#"{"sensor":"climate"}"#),
            ("gpio_read", r#"{"pin": 17"#),
        ],
    )]);
    let chunks = openai_chunks(&post(&srv, CHAT, &openai_request(true)));

    // (id, name, arguments, deltas) per index, assembled like a client would.
    let mut calls: Vec<(String, String, String, usize)> = Vec::new();
    let mut content = String::new();
    for chunk in &chunks {
        let delta = &chunk["choices"][0]["delta"];
        if let Some(text) = delta["content"].as_str() {
            content.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                assert_eq!(call["type"], "function");
                calls.push((
                    call["id"].as_str().expect("id on the first delta").into(),
                    call["function"]["name"]
                        .as_str()
                        .expect("name on the first delta")
                        .into(),
                    String::new(),
                    0,
                ));
            } else {
                assert!(
                    call.get("id").is_none() && call["function"].get("name").is_none(),
                    "id and name only on the first delta: {call}"
                );
            }
            let entry = &mut calls[index];
            entry
                .2
                .push_str(call["function"]["arguments"].as_str().unwrap());
            entry.3 += 1;
        }
    }
    assert_eq!(content, "Checking.");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (
            calls[0].0.as_str(),
            calls[0].1.as_str(),
            calls[0].2.as_str()
        ),
        ("call_1", "sensor_read", r#"{"sensor":"climate"}"#)
    );
    assert_eq!(
        (
            calls[1].0.as_str(),
            calls[1].1.as_str(),
            calls[1].2.as_str()
        ),
        ("call_2", "gpio_read", r#"{"pin": 17"#)
    );
    assert!(
        calls.iter().all(|c| c.3 >= 3),
        "arguments span several deltas"
    );
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[test]
fn openai_stream_reports_usage_once_on_the_finish_chunk_without_include_usage() {
    let srv = ScriptedLlm::start(vec![Reply::text("Hello there")]);
    let request = openai_request(true);
    let chunks = openai_chunks(&post(&srv, CHAT, &request));

    let with_usage: Vec<&Value> = chunks.iter().filter(|c| c.get("usage").is_some()).collect();
    assert_eq!(with_usage.len(), 1);
    assert_eq!(with_usage[0]["choices"][0]["finish_reason"], "stop");
    let expected = srv.requests()[0].usage.unwrap();
    assert_eq!(
        with_usage[0]["usage"]["prompt_tokens"],
        expected.input_tokens
    );
    assert_eq!(
        with_usage[0]["usage"]["completion_tokens"],
        expected.output_tokens
    );
}

#[test]
fn openai_stream_sends_a_usage_chunk_with_empty_choices_when_include_usage_is_set() {
    let srv = ScriptedLlm::start(vec![Reply::text("Hello there")]);
    let mut request = openai_request(true);
    request["stream_options"] = json!({"include_usage": true});
    let chunks = openai_chunks(&post(&srv, CHAT, &request));

    let (last, rest) = chunks.split_last().unwrap();
    assert_eq!(last["choices"], json!([]));
    let input = request.to_string().len() as u64 / 4;
    let output = "Hello there".len() as u64 / 4 + 1;
    assert_eq!(
        last["usage"],
        json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
    );
    assert!(rest.iter().all(|c| c["usage"].is_null()));
    assert_eq!(rest.last().unwrap()["choices"][0]["finish_reason"], "stop");
}

#[test]
fn anthropic_non_streaming_tool_use_has_object_input_and_tool_use_stop_reason() {
    let srv = ScriptedLlm::start(vec![Reply::text_and_tools(
        "Reading the pin.",
        vec![("gpio_read", r#"{"pin":17}"#)],
    )]);
    let request = anthropic_request(false);
    let response = post(&srv, MESSAGES, &request);

    assert_eq!(response.status, 200);
    let body = response.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["id"], "msg_1");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "claude-test");
    assert_eq!(
        body["content"],
        json!([
            {"type": "text", "text": "Reading the pin."},
            {"type": "tool_use", "id": "toolu_1", "name": "gpio_read", "input": {"pin": 17}},
        ])
    );
    assert_eq!(body["stop_reason"], "tool_use");
    let output =
        ("Reading the pin.".len() + "gpio_read".len() + r#"{"pin":17}"#.len()) as u64 / 4 + 1;
    assert_eq!(
        body["usage"],
        json!({"input_tokens": request.to_string().len() as u64 / 4, "output_tokens": output})
    );
}

#[test]
fn anthropic_non_streaming_malformed_arguments_become_a_string_input() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("gpio_read", r#"{"pin": 17"#), ("uptime", "")]),
        Reply::text("Done."),
    ]);
    let body = post(&srv, MESSAGES, &anthropic_request(false)).json();
    assert_eq!(body["content"][0]["input"], json!(r#"{"pin": 17"#));
    assert_eq!(body["content"][1]["input"], json!({}));

    let body = post(&srv, MESSAGES, &anthropic_request(false)).json();
    assert_eq!(body["content"], json!([{"type": "text", "text": "Done."}]));
    assert_eq!(body["stop_reason"], "end_turn");
}

#[test]
fn anthropic_stream_events_arrive_in_order_and_reassemble() {
    let srv = ScriptedLlm::start(vec![Reply::text_and_tools(
        "Checking.",
        vec![
            ("gpio_read", r#"{"pin":17}"#),
            ("gpio_write", r#"{"pin": 4"#),
        ],
    )]);
    let request = anthropic_request(true);
    let response = post(&srv, MESSAGES, &request);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events = response.events();
    assert_eq!(
        response.chunks.len(),
        events.len(),
        "one event per transfer chunk"
    );

    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    let mut expected = vec!["message_start", "content_block_start", "ping"];
    expected.extend(["content_block_delta"; 3]); // "Chec" "king" "."
    expected.extend(["content_block_stop", "content_block_start"]);
    expected.extend(["content_block_delta"; 3]); // {"pi n":1 7}
    expected.extend(["content_block_stop", "content_block_start"]);
    expected.extend(["content_block_delta"; 3]); // {"pi n": 4
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);

    let data: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    for ((name, _), d) in events.iter().zip(&data) {
        assert_eq!(d["type"], name.as_deref().unwrap());
    }
    let start = &data[0]["message"];
    assert_eq!(start["id"], "msg_1");
    assert_eq!(start["content"], json!([]));
    assert_eq!(
        start["usage"]["input_tokens"],
        request.to_string().len() as u64 / 4
    );

    // Assemble blocks by index like a client would.
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    for d in &data {
        match d["type"].as_str().unwrap() {
            "content_block_start" => {
                assert_eq!(d["index"], blocks.len());
                blocks.push(d["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let i = d["index"].as_u64().unwrap() as usize;
                match d["delta"]["type"].as_str().unwrap() {
                    "text_delta" => partial[i].push_str(d["delta"]["text"].as_str().unwrap()),
                    "input_json_delta" => {
                        partial[i].push_str(d["delta"]["partial_json"].as_str().unwrap())
                    }
                    other => panic!("unexpected delta {other}"),
                }
            }
            _ => {}
        }
    }
    assert_eq!(blocks[0], json!({"type": "text", "text": ""}));
    assert_eq!(partial[0], "Checking.");
    assert_eq!(
        blocks[1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "gpio_read", "input": {}})
    );
    assert_eq!(partial[1], r#"{"pin":17}"#);
    assert_eq!(blocks[2]["id"], "toolu_2");
    assert_eq!(
        partial[2], r#"{"pin": 4"#,
        "malformed arguments pass through verbatim"
    );

    let delta = &data[data.len() - 2];
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(
        delta["usage"]["output_tokens"],
        srv.requests()[0].usage.unwrap().output_tokens
    );
}

#[test]
fn status_replies_carry_code_body_and_extra_headers_even_when_streaming() {
    let rate_limited = r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#;
    let no_tools = r#"{"error":{"message":"model x does not support tools"}}"#;
    let srv = ScriptedLlm::start(vec![
        Reply::status_with_headers(429, rate_limited, &[("retry-after", "0")]),
        Reply::status(400, no_tools).with_header("x-request-id", "req_7"),
        Reply::status(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
    ]);

    let response = post(&srv, CHAT, &openai_request(true));
    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("0"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.body, rate_limited);

    let response = post(&srv, CHAT, &openai_request(false));
    assert_eq!(response.status, 400);
    assert_eq!(response.header("x-request-id"), Some("req_7"));
    assert_eq!(
        response.json()["error"]["message"],
        "model x does not support tools"
    );

    let response = post(&srv, MESSAGES, &anthropic_request(true));
    assert_eq!(response.status, 401);
    assert_eq!(response.json()["error"]["type"], "authentication_error");

    assert!(srv.requests().iter().all(|r| r.usage.is_none()));
    assert_eq!(srv.usage_total(), Usage::default());
}

#[test]
fn requests_are_recorded_with_method_path_lowercased_headers_and_body() {
    let srv = ScriptedLlm::start(vec![Reply::text("a"), Reply::text("b")]);
    let request = openai_request(false);
    send(
        &srv,
        "POST",
        "/v1/chat/completions?trace=1",
        &[("Authorization", "Bearer sk-test"), ("X-Covo-Run", "42")],
        &request.to_string(),
    );
    post(&srv, MESSAGES, &anthropic_request(true));

    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].api, Some(Api::OpenAi));
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(reqs[0].header("X-COVO-RUN"), Some("42"));
    assert!(reqs[0]
        .headers
        .iter()
        .all(|(n, _)| *n == n.to_ascii_lowercase()));
    assert!(reqs[0].headers.iter().any(|(n, _)| n == "x-covo-run"));
    assert_eq!(reqs[0].body, request);
    assert_eq!(reqs[0].raw_body, request.to_string());
    assert_eq!(reqs[0].body["tools"].as_array().unwrap().len(), 1);
    assert!(!reqs[0].is_stream());

    assert_eq!(reqs[1].path, MESSAGES);
    assert_eq!(reqs[1].api, Some(Api::Anthropic));
    assert!(reqs[1].is_stream());
}

#[test]
fn usage_totals_follow_the_documented_formula() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("gpio_read", r#"{"pin":17}"#)]),
        Reply::text("It is 21.5 °C."),
    ]);
    let first = openai_request(false);
    let second = anthropic_request(true);
    post(&srv, CHAT, &first);
    post(&srv, MESSAGES, &second);

    let a = Usage {
        input_tokens: first.to_string().len() as u64 / 4,
        output_tokens: ("gpio_read".len() + r#"{"pin":17}"#.len()) as u64 / 4 + 1,
    };
    let b = Usage {
        input_tokens: second.to_string().len() as u64 / 4,
        output_tokens: "It is 21.5 °C.".len() as u64 / 4 + 1,
    };
    let reqs = srv.requests();
    assert_eq!(reqs[0].usage, Some(a));
    assert_eq!(reqs[1].usage, Some(b));
    assert_eq!(
        srv.usage_total(),
        Usage {
            input_tokens: a.input_tokens + b.input_tokens,
            output_tokens: a.output_tokens + b.output_tokens,
        }
    );
    assert_eq!(
        Reply::text("It is 21.5 °C.").output_tokens(),
        Some(b.output_tokens)
    );
}

#[test]
fn tool_call_ids_are_unique_across_the_server_life() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("a", "{}"), ("b", "{}")]),
        Reply::tool_calls(vec![("c", "{}")]),
        Reply::tool_calls(vec![("d", "{}")]),
    ]);
    let first = post(&srv, CHAT, &openai_request(false)).json();
    let second = post(&srv, CHAT, &openai_request(false)).json();
    let third = post(&srv, MESSAGES, &anthropic_request(false)).json();

    let ids: Vec<&str> = first["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .chain(
            second["choices"][0]["message"]["tool_calls"]
                .as_array()
                .unwrap(),
        )
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"]);
    assert_eq!(third["content"][0]["id"], "toolu_4");
    assert_eq!(second["id"], "chatcmpl-2");
    assert_eq!(third["id"], "msg_3");
}

#[test]
fn unknown_paths_answer_404_and_are_recorded_without_consuming_a_reply() {
    let srv = ScriptedLlm::start(vec![Reply::text("kept")]);
    let response = send(&srv, "GET", "/v1/models", &[], "");
    assert_eq!(response.status, 404);
    assert!(response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1/models"));
    let response = send(&srv, "GET", CHAT, &[], "");
    assert_eq!(response.status, 405);

    let reqs = srv.all_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(reqs[0].api, None);
    assert_eq!(reqs[0].body, Value::Null);
    // `requests()` holds the model requests only: a client's probe of another path is not one.
    assert_eq!(srv.requests().len(), 1);
    assert_eq!(srv.requests()[0].path, CHAT);
    assert_eq!(srv.remaining(), 1);
}

#[test]
fn an_exhausted_script_answers_500_script_exhausted_and_records_the_request() {
    let srv = ScriptedLlm::start(vec![Reply::text("only one")]);
    assert_eq!(post(&srv, CHAT, &openai_request(false)).status, 200);

    let response = post(&srv, CHAT, &openai_request(true));
    assert_eq!(response.status, 500);
    assert!(response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("script exhausted"));

    let response = post(&srv, MESSAGES, &anthropic_request(false));
    assert_eq!(response.status, 500);
    assert_eq!(response.json()["type"], "error");
    assert!(response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("script exhausted"));

    assert_eq!(srv.requests().len(), 3);
    assert_eq!(srv.remaining(), 0);
}

#[test]
fn a_kept_alive_connection_serves_a_stream_then_a_json_reply() {
    let srv = ScriptedLlm::start(vec![Reply::text("first, streamed"), Reply::text("second")]);
    let mut conn = connect(&srv);
    let streamed = exchange(
        &mut conn,
        "POST",
        CHAT,
        &[],
        &openai_request(true).to_string(),
    );
    assert_eq!(streamed.status, 200);
    assert!(streamed.body.ends_with("data: [DONE]\n\n"));
    let plain = exchange(
        &mut conn,
        "POST",
        CHAT,
        &[],
        &openai_request(false).to_string(),
    );
    assert_eq!(plain.json()["choices"][0]["message"]["content"], "second");
    assert_eq!(srv.requests().len(), 2);
}

#[test]
fn pushed_replies_are_served_after_the_initial_script() {
    let srv = ScriptedLlm::start(vec![]);
    srv.push(Reply::text("late addition"));
    assert_eq!(srv.remaining(), 1);
    let body = post(&srv, CHAT, &openai_request(false)).json();
    assert_eq!(body["choices"][0]["message"]["content"], "late addition");
}

#[test]
fn a_delayed_reply_waits_before_answering() {
    let srv = ScriptedLlm::start(vec![Reply::delay(
        Duration::from_millis(150),
        Reply::text("late"),
    )]);
    let started = Instant::now();
    let response = post(&srv, CHAT, &openai_request(false));
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(response.json()["choices"][0]["message"]["content"], "late");
}

#[test]
fn a_hanging_request_is_recorded_and_dropping_the_server_does_not_wait_for_it() {
    let srv = ScriptedLlm::start(vec![
        Reply::hang(),
        Reply::delay(Duration::from_secs(3600), Reply::text("never")),
    ]);
    let addr = srv.addr();
    let clients: Vec<_> = [CHAT, MESSAGES]
        .into_iter()
        .map(|path| {
            let stream = TcpStream::connect(addr).unwrap();
            let body = anthropic_request(false).to_string();
            thread::spawn(move || {
                let mut stream = stream;
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let head = format!(
                    "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                stream.write_all(head.as_bytes()).unwrap();
                stream.write_all(body.as_bytes()).unwrap();
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                answer
            })
        })
        .collect();

    assert!(srv.wait_for_requests(2, Duration::from_secs(5)));
    assert_eq!(srv.remaining(), 0);
    let started = Instant::now();
    drop(srv);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "drop took {:?}",
        started.elapsed()
    );
    for client in clients {
        let answer = client.join().unwrap();
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 500"),
            "an abandoned request gets no reply: {answer}"
        );
    }
}

#[test]
fn raw_replies_are_sent_verbatim_with_their_content_type_even_when_streaming() {
    let srv = ScriptedLlm::start(vec![
        Reply::raw("application/json", ""),
        Reply::raw("text/event-stream", "data: {\"id\":1}\n\n"),
    ]);
    let r = post(&srv, CHAT, &openai_request(true));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body, "");
    let r = post(&srv, MESSAGES, &anthropic_request(false));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.body, "data: {\"id\":1}\n\n");
    assert!(srv.requests().iter().all(|q| q.usage.is_none()));
}

#[test]
fn truncated_streams_stop_before_their_finishing_events() {
    let call = || Reply::tool_calls(vec![("sensor_read", r#"{"sensor":"climate"}"#)]);
    let srv = ScriptedLlm::start(vec![
        Reply::truncated(call()),
        Reply::truncated(call()),
        Reply::truncated(call()),
    ]);
    let r = post(&srv, CHAT, &openai_request(true));
    let events = r.events();
    assert!(events.iter().all(|(_, d)| d != "[DONE]"), "{}", r.body);
    assert!(
        !r.body.contains(r#""finish_reason":"tool_calls""#),
        "{}",
        r.body
    );
    assert!(
        r.body.contains("sensor_read") && r.body.contains("lima"),
        "the call and its argument pieces were sent: {}",
        r.body
    );
    let r = post(&srv, MESSAGES, &anthropic_request(true));
    let names: Vec<String> = r.events().into_iter().filter_map(|(n, _)| n).collect();
    assert_eq!(names.last().map(String::as_str), Some("content_block_stop"));
    assert!(!names
        .iter()
        .any(|n| n == "message_delta" || n == "message_stop"));
    let r = post(&srv, CHAT, &openai_request(false));
    assert!(
        serde_json::from_str::<Value>(&r.body).is_err(),
        "{}",
        r.body
    );
}
