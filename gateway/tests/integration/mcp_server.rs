//! covo as an MCP server, against real third-party clients: the official Python SDK (`mcp` on
//! PyPI, in the venv `tests/run-all.sh` makes: `$COVO_TEST_VENV`, default `target/venv-tests`)
//! over stdio (`covo mcp`) and streamable HTTP (`covo run` with `[mcp] bind`), and the MCP
//! Inspector's CLI (`tests/mcp/node_modules`, from `npm ci`). The Python checks are in
//! `tests/mcp/client.py`; each prints a JSON summary asserted here too.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn covo() -> &'static str {
    env!("CARGO_BIN_EXE_covo")
}

/// The venv's python with `mcp` installed, or a loud failure saying how to make it.
fn python() -> PathBuf {
    covo_tests::venv::python(&["mcp", "httpx2"], "tests/mcp/requirements.txt")
}

/// A 1×1 PNG, what the test camera "captures".
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// A work folder with the sim board plus 20 more light sensors (more subscribable readings
/// than one session may subscribe to), a camera that "captures" [`PNG`], a file workspace
/// with `victim.txt`, and a covo.toml whose `[mcp]` lists `edge` and `fs` under `full`.
fn setup(extra_mcp: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut board = std::fs::read_to_string(repo().join("boards/sim.toml")).unwrap();
    for i in 0..20 {
        board.push_str(&format!(
            "\n[[device]]\nname = \"lux{i}\"\ndriver = \"bh1750\"\nbus = 1\naddress = {}\n",
            0x40 + i
        ));
    }
    std::fs::write(d.join("board.toml"), board).unwrap();
    std::fs::write(d.join("fixture.png"), PNG).unwrap();
    std::fs::create_dir_all(d.join("ws")).unwrap();
    std::fs::write(d.join("ws/victim.txt"), "keep me unless approved").unwrap();
    let config = d.join("covo.toml");
    std::fs::write(
        &config,
        format!(
            r#"home = "{d}/home"
board = "{d}/board.toml"

[fs]
roots = ["{d}/ws"]

[camera]
command = ["cp", "{d}/fixture.png", "{{output}}"]

[mcp]
profile = "full"
toolset = ["edge", "fs"]
{extra_mcp}
"#,
            d = d.display()
        ),
    )
    .unwrap();
    (dir, config)
}

/// Runs `tests/mcp/client.py ARGS`, fails with its output unless it succeeds, and returns the
/// summary it printed last.
fn client(args: &[&str]) -> Value {
    let out = Command::new(python())
        .arg(repo().join("tests/mcp/client.py"))
        .args(args)
        .env_remove("COVO_MCP_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client.py {args:?} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn python_sdk_over_stdio_lists_reads_is_refused_gets_images_and_subscribes() {
    let (dir, config) = setup("");
    let d = dir.path().display().to_string();
    let s = client(&["stdio", covo(), config.to_str().unwrap(), &d]);
    assert_eq!(s["protocol"], "2025-11-25");
    assert!(s["tools"].as_u64().unwrap() >= 30, "{s}");
    assert_eq!(s["policy_rule"], "i2c.write_allow");
    assert!(s["refusal"]
        .as_str()
        .unwrap()
        .contains("[mcp] approve = [\"fs_delete\"]"));
    assert_eq!(s["image_bytes"].as_u64(), Some(PNG.len() as u64));
    assert_eq!(s["busy"], 3);
    assert_eq!(s["notified"], "covo://sensors/light/latest");
    // 2 resources for each of 22 sensors, plus the board; 32 subscriptions fit: the light
    // reading's, then 31 more of the list (which holds that one again at index 2), so the
    // list's 33rd entry is refused.
    assert_eq!(s["resources"], 45);
    assert_eq!(s["subscriptions_refused_after"], 32);
    assert!(dir.path().join("ws/victim.txt").exists());
}

#[test]
fn elicitation_runs_a_destructive_tool_after_acceptance_and_not_after_decline() {
    let (dir, config) = setup("");
    let d = dir.path().display().to_string();
    let c = config.to_str().unwrap();
    let declined = client(&["elicit", "decline", covo(), c, &d]);
    assert_eq!(declined["error"], true);
    assert_eq!(declined["exists"], true);
    assert!(declined["asked"].as_str().unwrap().contains("fs_delete"));
    // Accepting the form without confirm: true runs nothing (no content, an empty form,
    // false, "no", 0, "true"); client.py checks each error names the confirmation.
    for hostile in [
        "accept-no-content",
        "accept-empty",
        "accept-false",
        "accept-no",
        "accept-zero",
        "accept-string-true",
    ] {
        let r = client(&["elicit", hostile, covo(), c, &d]);
        assert_eq!(r["error"], true, "{hostile}");
        assert_eq!(r["exists"], true, "{hostile}: the file was deleted");
    }
    let accepted = client(&["elicit", "accept", covo(), c, &d]);
    assert_eq!(accepted["error"], false);
    assert_eq!(accepted["exists"], false);
    // Both calls are in the audit log as MCP calls, the declined one as declined.
    let rows = audit(
        dir.path(),
        "SELECT outcome FROM audit WHERE via = 'mcp' AND tool = 'fs_delete' ORDER BY rowid",
    );
    assert_eq!(rows[..7], ["approval_denied"; 7]);
    assert_eq!(rows[7..], ["ok"]);
}

/// The audit log's rows for a one-column query.
fn audit(dir: &Path, sql: &str) -> Vec<String> {
    let store = covo::store::Store::open_in(&dir.join("home")).unwrap();
    let conn = store.conn();
    let mut st = conn.prepare(sql).unwrap();
    let rows = st
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows
}

/// A running `covo run`, killed on drop.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `covo run` and waits for the MCP endpoint's address on stderr.
fn start_run(config: &Path) -> (Daemon, String) {
    let mut child = Command::new(covo())
        .args(["--config", config.to_str().unwrap(), "run"])
        .env_remove("COVO_MCP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("covo run: MCP on ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("covo run did not announce its MCP endpoint");
    (Daemon(child), url)
}

#[test]
fn python_sdk_over_http_needs_the_token_and_hits_the_size_and_session_bounds() {
    let (dir, config) = setup(
        "bind = \"127.0.0.1:0\"\ntoken = \"s3cret-token-0123456\"\nallowed_origins = [\"http://dash.example:8080\"]",
    );
    let (_daemon, url) = start_run(&config);
    let s = client(&[
        "http",
        &url,
        "s3cret-token-0123456",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(s["without_token"], 401);
    assert_eq!(s["too_large"], 413);
    assert_eq!(s["foreign_origin"], 403);
    assert_eq!(s["allowed_origin"], 200);
    assert!(s["asked_over_http"].as_str().unwrap().contains("fs_delete"));
    assert!(s["tools"].as_u64().unwrap() >= 30);
    // The SDK's own session was closed when it left; 16 fit.
    assert_eq!(s["sessions_opened"], 16);
}

#[test]
fn a_non_loopback_bind_without_a_token_refuses_to_start() {
    let (_dir, config) = setup("bind = \"0.0.0.0:0\"");
    let out = Command::new(covo())
        .args(["--config", config.to_str().unwrap(), "run"])
        .env_remove("COVO_MCP_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("[mcp] token"),
        "{stderr}"
    );
}

/// Reads stdout lines until the JSON-RPC answer with this id.
fn answer(out: &mut impl BufRead, id: u64, deadline: Instant) -> Value {
    let mut line = String::new();
    while Instant::now() < deadline {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!("covo mcp closed stdout before answering {id}");
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    }
    panic!("no answer to {id}");
}

/// How a test hands `covo mcp` its stdin and stdout.
#[derive(Debug, Clone, Copy)]
enum Ends {
    /// Pipes, as Python's SDK and most clients start a server: polled by the runtime.
    Pipes,
    /// A Unix socket pair for each, as Node (libuv) starts a child: polled too.
    Sockets,
    /// stdin a pipe, stdout a regular file: served through tokio's blocking stdio, so stdin
    /// must be left blocking although it alone could have been polled.
    StdoutToFile,
}

/// Reads a file that is still being written, waiting for more at its end.
struct Tail(std::fs::File, Instant);

impl Read for Tail {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.0.read(buf)?;
            if n > 0 || Instant::now() > self.1 {
                return Ok(n);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `covo mcp` with its stdin and stdout as `ends` says; our ends of them.
fn mcp_over(config: &Path, ends: Ends, dir: &Path) -> (Child, Box<dyn Write>, Box<dyn BufRead>) {
    use std::os::unix::net::UnixStream;
    let mut cmd = Command::new(covo());
    cmd.args(["--config", config.to_str().unwrap(), "mcp"])
        .stderr(Stdio::piped());
    let deadline = Instant::now() + Duration::from_secs(60);
    match ends {
        Ends::Pipes => {
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let w = child.stdin.take().unwrap();
            let r = child.stdout.take().unwrap();
            (child, Box::new(w), Box::new(BufReader::new(r)))
        }
        Ends::Sockets => {
            let (ours_in, theirs_in) = UnixStream::pair().unwrap();
            let (ours_out, theirs_out) = UnixStream::pair().unwrap();
            let child = cmd
                .stdin(std::os::fd::OwnedFd::from(theirs_in))
                .stdout(std::os::fd::OwnedFd::from(theirs_out))
                .spawn()
                .unwrap();
            (child, Box::new(ours_in), Box::new(BufReader::new(ours_out)))
        }
        Ends::StdoutToFile => {
            let path = dir.join("mcp-stdout.jsonl");
            let out = std::fs::File::create(&path).unwrap();
            let mut child = cmd.stdin(Stdio::piped()).stdout(out).spawn().unwrap();
            let w = child.stdin.take().unwrap();
            let r = Tail(std::fs::File::open(&path).unwrap(), deadline);
            (child, Box::new(w), Box::new(BufReader::new(r)))
        }
    }
}

/// Whether the open file behind a process's fd has O_NONBLOCK (octal 04000 in `flags:` of
/// /proc/PID/fdinfo/FD).
fn nonblocking(pid: u32, fd: u32) -> bool {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
        .unwrap();
    flags & 0o4000 != 0
}

#[test]
fn stdio_drops_an_oversized_request_and_keeps_serving_over_pipes_sockets_and_files() {
    for ends in [Ends::Pipes, Ends::Sockets, Ends::StdoutToFile] {
        let (dir, config) = setup("");
        let (mut child, mut stdin, mut out) = mcp_over(&config, ends, dir.path());
        let deadline = Instant::now() + Duration::from_secs(60);
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw","version":"0"}}}}}}"#).unwrap();
        assert_eq!(
            answer(&mut out, 1, deadline)["result"]["serverInfo"]["name"],
            "covo",
            "{ends:?}"
        );
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        // Which way it is served, as the kernel sees covo's fds 0 and 1: polled ends are
        // O_NONBLOCK; with stdout a file, neither is (stdin alone could have been polled).
        let polled = matches!(ends, Ends::Pipes | Ends::Sockets);
        for fd in [0, 1] {
            assert_eq!(nonblocking(child.id(), fd), polled, "{ends:?}: fd {fd}");
        }
        // 2 MiB of arguments, over the 1 MiB bound: more than a pipe or socket buffer holds,
        // so the server reads it in many non-blocking reads.
        let big = "x".repeat(2 << 20);
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"sensor_read","arguments":{{"sensor":"{big}"}}}}}}"#).unwrap();
        // Calls and answers in a row, each answered whole, tools/list (12 KB) among them.
        for id in 3..23 {
            if id % 5 == 0 {
                writeln!(
                    stdin,
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
                )
                .unwrap();
                let v = answer(&mut out, id, deadline);
                assert!(
                    v["result"]["tools"].as_array().unwrap().len() > 20,
                    "{ends:?}"
                );
                continue;
            }
            writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"sensor_read","arguments":{{"sensor":"climate"}}}}}}"#).unwrap();
            let v = answer(&mut out, id, deadline);
            let text = v["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("\"sensor\":\"climate\""), "{ends:?}: {v}");
        }
        drop(stdin);
        let status = child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(status.success(), "{ends:?}: {err}");
        // The oversized request never ran: only the 16 good calls are in the audit log.
        let audited = audit(dir.path(), "SELECT tool || ' ' || via FROM audit");
        assert_eq!(audited, vec!["sensor_read mcp"; 16], "{ends:?}");
    }
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_tools() {
    let bin = repo().join("tests/mcp/node_modules/.bin/mcp-inspector");
    assert!(
        bin.exists(),
        "the MCP Inspector is missing: run `npm ci --prefix tests/mcp` (tests/run-all.sh does)"
    );
    let (_dir, config) = setup("");
    let run = |extra: &[&str]| -> Value {
        let out = Command::new(&bin)
            // The Inspector has a --config of its own: covo's comes from the environment.
            .args(["--cli", "-e", &format!("COVO_CONFIG={}", config.display())])
            .args([covo(), "mcp"])
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "inspector {extra:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    };
    let list = run(&["--method", "tools/list"]);
    let tools = list["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "sensor_read"));
    let read = tools.iter().find(|t| t["name"] == "sensor_read").unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    let call = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "sensor_read",
        "--tool-arg",
        "sensor=light",
    ]);
    let text = call["content"][0]["text"].as_str().unwrap();
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["sensor"], "light");
    assert_ne!(call["isError"], true);
}

#[test]
fn wrong_bearer_tokens_are_slowed_and_the_right_one_is_not() {
    let (_dir, config) = setup("bind = \"127.0.0.1:0\"\ntoken = \"s3cret-token-long-enough\"");
    let (_daemon, url) = start_run(&config);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let post = |token: String| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {token}"))
            .body(init)
            .send()
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let guesses: usize = 12;
            let t0 = Instant::now();
            let attack = futures_util::future::join_all((0..guesses).map(|i| {
                let f = post(format!("guess-{i}"));
                async move {
                    assert_eq!(f.await.unwrap().status(), 401);
                    Instant::now()
                }
            }));
            let legit = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let r = post("s3cret-token-long-enough".into()).await.unwrap();
                assert_eq!(r.status(), 200);
                Instant::now()
            };
            let (ends, legit_end) = tokio::join!(attack, legit);
            let last = ends.into_iter().max().unwrap();
            let rounds = guesses.div_ceil(covo::secrets::WRONG_TOKENS_AT_ONCE) as u32;
            assert!(
                last - t0 >= covo::secrets::WRONG_TOKEN_DELAY * rounds - Duration::from_millis(50),
                "{guesses} guesses answered in {:?}",
                last - t0
            );
            assert!(legit_end < last, "the right token waited for the guesses");
        });
}

/// A refusal is answered before the body is read, so the server does not reuse that
/// connection; it must say so, or a keep-alive client sends its next request into a closing
/// connection and loses it with no answer (the Python SDK test saw "Server disconnected without
/// sending a response"). Here one pooled client alternates refused and accepted requests, each
/// with a body, more times than there are sessions: every one gets its answer.
#[test]
fn refused_requests_close_their_connection_so_a_keep_alive_client_loses_nothing() {
    let (_dir, config) = setup(
        "bind = \"127.0.0.1:0\"\ntoken = \"s3cret-token-long-enough\"\nallowed_origins = [\"http://dash.example:8080\"]",
    );
    let (_daemon, url) = start_run(&config);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    // Refusals of every kind: covo's own (no token, a wrong one) and rmcp's (a page from a
    // foreign Origin, a session that does not exist), each with its body unread.
    let post = |token: Option<&str>, extra: Option<(&'static str, &'static str)>| {
        let mut r = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init);
        if let Some(t) = token {
            r = r.header("authorization", format!("Bearer {t}"));
        }
        if let Some((k, v)) = extra {
            r = r.header(k, v);
        }
        r.send()
    };
    let right = Some("s3cret-token-long-enough");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            for round in 0..40 {
                let (token, extra, status) = match round % 4 {
                    0 => (None, None, 401),
                    1 => (right, Some(("origin", "http://evil.example")), 403),
                    2 => (right, Some(("mcp-session-id", "no-such-session")), 404),
                    _ => (Some("a-wrong-token-of-some-length"), None, 401),
                };
                let r = post(token, extra)
                    .await
                    .unwrap_or_else(|e| panic!("round {round}: refused request lost: {e}"));
                assert_eq!(r.status(), status, "round {round}");
                assert_eq!(
                    r.headers().get("connection").map(|v| v.as_bytes()),
                    Some(&b"close"[..]),
                    "round {round}: a refusal must close its connection"
                );
                let r = post(right, None)
                    .await
                    .unwrap_or_else(|e| panic!("round {round}: the next request was lost: {e}"));
                assert_eq!(r.status(), 200, "round {round}");
                let session = r.headers()["mcp-session-id"].clone();
                let _ = r.bytes().await;
                // Closed again, so that forty rounds stay inside the session bound.
                let r = http
                    .delete(&url)
                    .header("authorization", "Bearer s3cret-token-long-enough")
                    .header("mcp-session-id", session)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("round {round}: the DELETE was lost: {e}"));
                assert!(r.status().is_success(), "round {round}: {}", r.status());
            }
        });
}

#[test]
fn idle_and_slowloris_floods_do_not_starve_the_endpoint_or_its_descriptors() {
    let (_dir, config) = setup("bind = \"127.0.0.1:0\"\ntoken = \"s3cret-token-long-enough\"");
    let (daemon, url) = start_run(&config);
    let pid = daemon.0.id();
    let addr: std::net::SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let budget = covo::fds::raise().unwrap_or(u64::MAX);
    // More sockets than the 1,024 descriptors a default soft limit gives covo.
    let idle_n = usize::try_from(budget.saturating_sub(400))
        .unwrap_or(1200)
        .min(1200);
    assert!(
        idle_n >= 500,
        "the open-file limit is too low for this test: {budget}"
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            use tokio::io::AsyncWriteExt;
            let mut held = Vec::new();
            for _ in 0..idle_n {
                held.push(tokio::net::TcpStream::connect(addr).await.unwrap());
            }
            // Slowloris: headers begun and never finished.
            for _ in 0..100 {
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: a")
                    .await
                    .unwrap();
                held.push(s);
            }
            let t = Instant::now();
            let r = tokio::time::timeout(
                Duration::from_secs(5),
                http.post(&url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .header("authorization", "Bearer s3cret-token-long-enough")
                    .body(init)
                    .send(),
            )
            .await
            .expect("an MCP client was answered during the flood")
            .unwrap();
            assert_eq!(r.status(), 200);
            let took = t.elapsed();
            let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .unwrap()
                .count();
            assert!(
                fds < covo::mcp::http::MAX_CONNECTIONS + 64,
                "covo holds {fds} descriptors under {} hostile sockets",
                held.len()
            );
            eprintln!(
                "initialize answered in {took:?} under {} hostile sockets; {fds} fds",
                held.len()
            );
        });
}

#[test]
fn a_client_that_never_confirms_holds_only_its_own_waiting_slots() {
    let (dir, config) = setup("bind = \"127.0.0.1:0\"\ntoken = \"s3cret-token-long-enough\"");
    for i in [0, 1, 9] {
        std::fs::write(dir.path().join(format!("ws/victim{i}.txt")), "keep").unwrap();
    }
    let (_daemon, url) = start_run(&config);
    let s = client(&[
        "hog",
        &url,
        "s3cret-token-long-enough",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(s["asked"], 2, "{s}");
    let over = s["over_limit"].as_str().unwrap();
    assert!(
        over.contains(&covo::mcp::WAITING_PER_SESSION.to_string()),
        "{over}"
    );
    // Before, A's waiting calls held all MAX_CALLS running slots and B was told busy.
    assert!(s["b_reads_s"].as_f64().unwrap() < 30.0, "{s}");
    for i in [0, 1, 9] {
        assert!(dir.path().join(format!("ws/victim{i}.txt")).exists());
    }
}

/// Threads of a process (`/proc/PID/task`).
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// Sends one JSON-RPC message as one line.
fn send(stdin: &mut impl Write, msg: Value) {
    let mut line = msg.to_string();
    line.push('\n');
    stdin.write_all(line.as_bytes()).unwrap();
}

fn call(id: u64, name: &str, args: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": name, "arguments": args}})
}

/// `covo mcp` runs a quick call on its own thread: no blocking-pool thread is started for
/// 60 of them. A call sent while another runs goes to the pool and is answered first when the
/// other is slow; a destructive call through `tool_call`, after quick `tool_call`s, is still
/// confirmed by elicitation (asking from the server's own thread would deadlock); and a
/// read that turned slow sends its tool's next calls to the pool.
#[test]
fn quick_calls_run_on_the_server_thread_and_slow_or_confirmed_ones_do_not() {
    use serde_json::json;
    let (dir, config) = setup("");
    let mut child = Command::new(covo())
        .args(["--config", config.to_str().unwrap(), "mcp"])
        .env("COVO_SIM_NO_DELAYS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(180);
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    answer(&mut out, 1, deadline);
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let climate = json!({"sensor": "climate"});
    let ok = |v: &Value| {
        assert_eq!(v["result"]["isError"], false, "{v}");
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // The tool's first call (which opens the board and the database, about 20 ms) runs on the
    // pool, and so do the 25 or so after it, while 7/8 of that figure decays below 1 ms.
    for id in 10..45 {
        send(&mut stdin, call(id, "sensor_read", climate.clone()));
        ok(&answer(&mut out, id, deadline));
    }
    // A batch of 10 quick calls that started no thread. A call slowed past 1 ms (a busy
    // machine preempting it) sends the next few to the pool, whose thread then stays 2 s: up to
    // 15 batches are tried, each after that thread has gone.
    let mut id = 1000;
    let mut clean = None;
    for _ in 0..15 {
        std::thread::sleep(Duration::from_secs(3));
        let idle = threads(pid);
        let mut started = false;
        for _ in 0..10 {
            id += 1;
            send(&mut stdin, call(id, "sensor_read", climate.clone()));
            assert!(ok(&answer(&mut out, id, deadline)).contains("\"sensor\":\"climate\""));
            started |= threads(pid) > idle;
        }
        if !started {
            clean = Some(idle);
            break;
        }
    }
    let idle = clean.expect("every batch of 10 quick calls started a blocking-pool thread");

    // A slow call (a wait for an edge that never comes) and a quick one behind it: the quick
    // one is not held up by the slow one, which runs on the pool.
    send(
        &mut stdin,
        call(
            100,
            "gpio_wait_edge",
            json!({"pin": "button", "timeout_ms": 1500}),
        ),
    );
    send(&mut stdin, call(101, "sensor_read", climate.clone()));
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let first: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        first["id"], 101,
        "the quick call waited for the slow one: {first}"
    );
    assert!(threads(pid) > idle, "the slow call is not on the pool");
    answer(&mut out, 100, deadline);

    // A tool whose calls were quick (a wait with no time to wait) turns slow: that call may
    // run on the server's thread and hold the next request (the cost of running there), but
    // the tool's next call goes to the pool, and a quick call behind it is answered first.
    for id in 110..150 {
        send(
            &mut stdin,
            call(
                id,
                "gpio_wait_edge",
                json!({"pin": "button", "timeout_ms": 0}),
            ),
        );
        assert!(ok(&answer(&mut out, id, deadline)).contains("timed_out"));
    }
    for (slow, quick) in [(150, 151), (152, 153)] {
        send(
            &mut stdin,
            call(
                slow,
                "gpio_wait_edge",
                json!({"pin": "button", "timeout_ms": 1500}),
            ),
        );
        send(&mut stdin, call(quick, "sensor_read", climate.clone()));
        let (mut got, mut order) = (0, Vec::new());
        while got < 2 {
            line.clear();
            out.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == slow || v["id"] == quick {
                order.push(v["id"].as_u64().unwrap());
                got += 1;
            }
        }
        if slow == 152 {
            assert_eq!(
                order,
                [153, 152],
                "the slow tool's next call was not on the pool"
            );
        }
    }

    // Quick tool_calls, then a destructive one through tool_call: asked, confirmed, run.
    for id in 120..130 {
        send(
            &mut stdin,
            call(
                id,
                "tool_call",
                json!({"name": "sensor_read", "arguments": climate}),
            ),
        );
        ok(&answer(&mut out, id, deadline));
    }
    send(
        &mut stdin,
        call(
            130,
            "tool_call",
            json!({"name": "fs_delete", "arguments": {"path": "victim.txt"}}),
        ),
    );
    line.clear();
    out.read_line(&mut line).unwrap();
    let ask: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert!(ask["params"]["message"]
        .as_str()
        .unwrap()
        .contains("fs_delete"));
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
            "action": "accept", "content": {"confirm": true}}}),
    );
    ok(&answer(&mut out, 130, deadline));
    assert!(!dir.path().join("ws/victim.txt").exists());

    drop(stdin);
    assert!(child.wait().unwrap().success());
    let calls = audit(
        dir.path(),
        "SELECT tool FROM audit WHERE via = 'mcp' AND tool = 'sensor_read'",
    );
    assert_eq!(calls.len(), 35 + 1 + 2 + 10 + (id - 1000) as usize);
}
