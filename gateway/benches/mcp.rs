//! `covo mcp` over stdio against the in-process pipeline, side by side in one run (issue 16's
//! targets: a `sensor_read` round trip's p50 ≤ 1 ms and ≤ 1.5× the same call through the
//! pipeline in process), the size of `tools/list`, and `covo mcp`'s idle RSS.
//!
//! Both sides read the sim BME280 with its conversion waits skipped (the in-process side through
//! `Hardware::skip_driver_delays`, `covo mcp` through `COVO_SIM_NO_DELAYS=1`) and write their
//! readings and audit rows to SQLite on disk in their own temporary folders. Calls alternate
//! one by one, so both see the same machine. Run by `tests/bench/mcp.sh`.

use covo::config::Config;
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn p(sorted: &[Duration], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a call count.
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    let covo = std::env::var("COVO_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_covo").into());

    // In process: the edge profile, like `covo mcp`, and the MCP session's via.
    let local_home = tempfile::tempdir().unwrap();
    let mut opts = covo::tools::options(Config::default());
    opts.profile = Some("edge".into());
    opts.home = Some(local_home.path().to_path_buf());
    let rt = Runtime::new(opts).unwrap();
    rt.board().hardware().unwrap().skip_driver_delays(true);
    let session = Session::new("bench", "mcp");
    let args = json!({"sensor": "climate"});

    // Over stdio: a `covo mcp` process, spoken to in raw JSON-RPC lines.
    let mcp_home = tempfile::tempdir().unwrap();
    let mut child = Command::new(&covo)
        .arg("mcp")
        .env("COVO_HOME", mcp_home.path())
        .env("COVO_SIM_NO_DELAYS", "1")
        .env_remove("COVO_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{covo}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut rpc = |msg: Value, answer: bool| -> (Duration, Value) {
        // One write per message, as MCP clients send them (the SDKs write a serialized line
        // at once). `writeln!(stdin, "{msg}")` would write every JSON token of `msg` with a
        // syscall of its own, about 50 per request, and wake the server for each part.
        let started = Instant::now();
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(b'\n');
        stdin.write_all(&bytes).unwrap();
        if !answer {
            return (started.elapsed(), Value::Null);
        }
        loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "covo mcp exited");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == msg["id"] {
                return (started.elapsed(), v);
            }
        }
    };
    rpc(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}),
        true,
    );
    rpc(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    // Idle: connected, nothing asked yet.
    std::thread::sleep(Duration::from_secs(2));
    let idle = rss_kib(child.id());
    let (_, list) = rpc(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        true,
    );
    let listed = list["result"]["tools"].as_array().map_or(0, Vec::len);
    let list_bytes = list["result"].to_string().len();

    let call = |id: usize| {
        json!({"jsonrpc": "2.0", "id": id + 10, "method": "tools/call",
               "params": {"name": "sensor_read", "arguments": {"sensor": "climate"}}})
    };
    // Warm both up (the first call opens the board and the database).
    for i in 0..20 {
        rt.call(&session, Via::Mcp, "sensor_read", args.clone())
            .unwrap();
        let (_, v) = rpc(call(i), true);
        assert_eq!(v["result"]["isError"], false, "{v}");
    }
    let (mut local, mut stdio) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let t = Instant::now();
        std::hint::black_box(
            rt.call(&session, Via::Mcp, "sensor_read", args.clone())
                .unwrap(),
        );
        local.push(t.elapsed());
        let (d, v) = rpc(call(100 + i), true);
        debug_assert_eq!(v["result"]["isError"], false);
        stdio.push(d);
    }
    let busy = rss_kib(child.id());
    drop(stdin);
    let _ = child.wait();
    local.sort();
    stdio.sort();
    let (l50, s50) = (p(&local, 0.5), p(&stdio, 0.5));
    println!("covo mcp over stdio vs the in-process pipeline: sensor_read (sim BME280, no device waits, SQLite on disk), {n} calls each, alternating");
    println!(
        "  in process (Runtime::call, Via::Mcp): p50 {l50:>8.1} us   p90 {:>8.1} us   p99 {:>8.1} us",
        p(&local, 0.9),
        p(&local, 0.99)
    );
    println!(
        "  covo mcp, stdio round trip:           p50 {s50:>8.1} us   p90 {:>8.1} us   p99 {:>8.1} us",
        p(&stdio, 0.9),
        p(&stdio, 0.99)
    );
    println!(
        "  ratio p50 {:.2}x (target <= 1.5x); stdio p50 {} 1 ms",
        s50 / l50,
        if s50 <= 1000.0 { "<=" } else { ">" }
    );
    println!("tools/list: {listed} tools, {list_bytes} bytes of JSON (o200k tokens: prompt_budget::the_default_mcp_tools_list_fits_in_3000_tokens)");
    println!(
        "covo mcp RSS: {:.2} MiB idle after initialize, {:.2} MiB after the calls",
        idle as f64 / 1024.0,
        busy as f64 / 1024.0
    );
}
