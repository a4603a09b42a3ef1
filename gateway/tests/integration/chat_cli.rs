//! `covo chat` end to end: the real binary against the scripted LLM server on 127.0.0.1.

use covo_tests::llm_server::{Reply, ScriptedLlm};
use std::io::Write;
use std::process::{Command, Stdio};

fn covo(home: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_covo"));
    c.current_dir(home)
        .env("COVO_HOME", home.join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("COVO_LLM_BASE_URL")
        .env_remove("COVO_LLM_MODEL")
        .env_remove("COVO_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    c
}

#[test]
fn chat_m_prints_the_final_answer_and_exits_0() {
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![(
            "memory_store",
            r#"{"text":"the basil is on the left shelf"}"#,
        )]),
        Reply::text("I'll remember that the basil is on the left shelf."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = covo(dir.path())
        .args([
            "chat",
            "--profile",
            "full",
            "-m",
            "remember: basil on the left shelf",
        ])
        .env("COVO_LLM_BASE_URL", srv.openai_base_url())
        .env("COVO_LLM_MODEL", "scripted")
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        stdout,
        "I'll remember that the basil is on the left shelf.\n"
    );
    assert!(
        stderr.contains("memory_store"),
        "tool activity goes to stderr: {stderr}"
    );
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
    // The stored memory outlives the process: a second process finds it.
    let recall = covo(dir.path())
        .args(["tools", "call", "memory_recall", r#"{"query":"basil"}"#])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&recall.stdout).contains("left shelf"));
}

#[test]
fn chat_m_against_anthropic_works_too() {
    let srv = ScriptedLlm::start(vec![Reply::text("Hello from Claude.")]);
    let dir = tempfile::tempdir().unwrap();
    let out = covo(dir.path())
        .args(["chat", "-m", "hi"])
        .env("COVO_LLM_PROVIDER", "anthropic")
        .env("COVO_LLM_BASE_URL", srv.anthropic_base_url())
        .env("COVO_LLM_MODEL", "claude-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Hello from Claude.\n");
    assert_eq!(srv.requests()[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(srv.requests()[0].path, "/v1/messages");
}

#[test]
fn chat_m_reports_a_failing_model_and_exits_1() {
    let srv = ScriptedLlm::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"bad key"}}"#,
    )]);
    let dir = tempfile::tempdir().unwrap();
    let out = covo(dir.path())
        .args(["chat", "-m", "hi"])
        .env("COVO_LLM_BASE_URL", srv.openai_base_url())
        .env("COVO_LLM_MODEL", "scripted")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("API key was rejected"));
    assert!(out.stdout.is_empty());
}

#[test]
fn without_a_model_chat_says_so_and_slash_commands_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = covo(dir.path())
        .args(["chat", "-m", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no model is configured"));

    let mut child = covo(dir.path())
        .args(["chat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/tools\n/search scan the i2c bus\n/call memory_store {\"text\":\"fan is noisy\"}\nhow warm is it?\n/quit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no model is configured"), "{stderr}");
    assert!(
        stdout.contains("tools visible") && stdout.contains("tool_search"),
        "{stdout}"
    );
    assert!(stdout.contains("i2c_scan"), "{stdout}");
    assert!(stdout.contains("\"id\""), "{stdout}");
    assert!(
        !stdout.to_lowercase().contains("warm"),
        "never pretends to answer: {stdout}"
    );
}

#[test]
fn schedules_fire_while_chat_is_waiting_for_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("covo.toml"),
        "[agent]\nschedule_poll_secs = 1\n",
    )
    .unwrap();
    let out = covo(dir.path())
        .args([
            "tools",
            "call",
            "schedule_create",
            r#"{"at":"in 1s","tool":"memory_store","arguments":{"text":"fired while idle"}}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut child = covo(dir.path())
        .args(["chat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Idle at the prompt for a few poll intervals, then leave.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let probe = covo(dir.path())
            .args(["tools", "call", "memory_recall", r#"{"query":"fired"}"#])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&probe.stdout).contains("fired while idle")
            || std::time::Instant::now() > deadline
        {
            break;
        }
    }
    stdin.write_all(b"/quit\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("schedule #1"),
        "the job reports on the channel: {stderr}"
    );
    let probe = covo(dir.path())
        .args(["tools", "call", "memory_recall", r#"{"query":"fired"}"#])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&probe.stdout).contains("fired while idle"));
}

/// Runs `covo chat -m hi` against `srv` in the given format.
fn chat_once(dir: &std::path::Path, srv: &ScriptedLlm, anthropic: bool) -> std::process::Output {
    let mut c = covo(dir);
    c.args(["chat", "--profile", "full", "-m", "hi"])
        .env("COVO_LLM_MODEL", "scripted")
        .env("COVO_LLM_API_KEY", "sk-test");
    if anthropic {
        c.env("COVO_LLM_PROVIDER", "anthropic")
            .env("COVO_LLM_BASE_URL", srv.anthropic_base_url());
    } else {
        c.env("COVO_LLM_BASE_URL", srv.openai_base_url());
    }
    c.output().unwrap()
}

#[test]
fn chat_m_fails_with_a_provider_error_on_an_empty_or_malformed_answer() {
    let json = "application/json";
    let sse = "text/event-stream";
    // (anthropic?, content-type, body)
    let cases: &[(bool, &str, &str)] = &[
        (false, json, ""),
        (false, sse, ""),
        (false, json, "{}"),
        (false, json, r#"{"choices":[]}"#),
        (false, json, r#"{"choices":"none"}"#),
        (false, json, r#"{"choices":[42]}"#),
        (false, json, r#"{"choices":[{"index":0}]}"#),
        (
            false,
            json,
            r#"{"choices":[{"message":{"role":"assistant","content":7},"finish_reason":"stop"}]}"#,
        ),
        // (A call with no function name is not here: it is answered with an error and its
        // siblings run; see agent::a_call_with_no_name_is_answered_and_the_fifteen_beside_it_run.)
        (false, sse, "data: {\"id\":\"x\"}\n\ndata: [DONE]\n\n"),
        (
            false,
            sse,
            "data: {\"choices\":[7]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        ),
        (true, json, ""),
        (true, sse, ""),
        (true, json, "{}"),
        (true, json, r#"{"content":"hello","stop_reason":"end_turn"}"#),
        (true, json, r#"{"content":[42],"stop_reason":"end_turn"}"#),
        (
            true,
            json,
            r#"{"content":[{"type":"text","text":5}],"stop_reason":"end_turn"}"#,
        ),
        (
            true,
            json,
            r#"{"content":[{"type":"tool_use","id":"t1","input":{}}],"stop_reason":"tool_use"}"#,
        ),
    ];
    for (anthropic, ct, body) in cases {
        let srv = ScriptedLlm::start(vec![Reply::raw(*ct, *body)]);
        let dir = tempfile::tempdir().unwrap();
        let out = chat_once(dir.path(), &srv, *anthropic);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let case = format!("anthropic={anthropic} {ct} {body:?}");
        assert_eq!(out.status.code(), Some(1), "{case}: {stderr}");
        assert!(out.stdout.is_empty(), "{case}: no answer is printed");
        assert!(
            stderr.contains("the model provider at") && stderr.contains("malformed response"),
            "{case}: {stderr}"
        );
        assert_eq!(srv.requests().len(), 1, "{case}: not retried");
    }
}

#[test]
fn chat_m_fails_on_a_truncated_stream_and_runs_none_of_its_tool_calls() {
    for anthropic in [false, true] {
        let srv = ScriptedLlm::start(vec![
            Reply::truncated(Reply::tool_calls(vec![(
                "memory_store",
                r#"{"text":"the gate code is 4711"}"#,
            )])),
            Reply::text("Stored."),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let out = chat_once(dir.path(), &srv, anthropic);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "anthropic={anthropic}: {stderr}"
        );
        assert!(out.stdout.is_empty());
        assert!(
            stderr.contains("the model provider at")
                && stderr.contains("before the answer was complete"),
            "anthropic={anthropic}: {stderr}"
        );
        assert_eq!(srv.requests().len(), 1, "no second model call");
        let recall = covo(dir.path())
            .args(["tools", "call", "memory_recall", r#"{"query":"gate code"}"#])
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&recall.stdout).contains("4711"),
            "the truncated call did not run"
        );
    }
}
