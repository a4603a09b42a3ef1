//! The `system` toolset through the CLI and the whole pipeline, on this machine's real files.
//! (Parsing a Raspberry Pi's files is tested against fixtures in `tools/system.rs`.)

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn covo(home: &Path, args: &[&str]) -> (i32, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_covo"));
    cmd.args(args)
        .current_dir(home)
        .env("COVO_HOME", home.join("home"))
        .env_remove("COVO_CONFIG");
    covo_tests::bins::json(&mut cmd)
}

fn call(home: &Path, tool: &str, args: &str) -> (i32, Value) {
    covo(home, &["tools", "call", tool, args])
}

#[test]
fn system_info_reports_this_machines_load_memory_uptime_and_disks() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = call(dir.path(), "system_info", "{}");
    assert_eq!(code, 0, "{v}");
    assert!(v["load"]["1m"].as_f64().unwrap() >= 0.0, "{v}");
    let mem = &v["memory"];
    assert!(mem["total_mib"].as_u64().unwrap() > 0);
    assert!(mem["available_mib"].as_u64().unwrap() <= mem["total_mib"].as_u64().unwrap());
    assert!(v["uptime"]["seconds"].as_u64().unwrap() > 0);
    assert!(v["cpus"].as_u64().unwrap() >= 1);
    let root = &v["disk"]["root"];
    assert!(root["total_mib"].as_u64().unwrap() > 0, "{v}");
    assert!(root["available_mib"].as_u64().unwrap() <= root["total_mib"].as_u64().unwrap());
    // covo's home is where its database lives: its filesystem is reported too.
    assert!(v["disk"]["covo_home"]["path"]
        .as_str()
        .unwrap()
        .ends_with("home"));
    assert!(!v["kernel"].as_str().unwrap().is_empty());
}

#[test]
fn network_info_lists_the_loopback_interface_and_the_broker_state() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = call(dir.path(), "network_info", "{}");
    assert_eq!(code, 0, "{v}");
    let lo = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "lo")
        .unwrap_or_else(|| panic!("lo in {v}"));
    assert!(lo["ipv4"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "127.0.0.1"));
    assert_eq!(v["broker"]["configured"], false);
}

#[test]
fn log_tail_reads_logs_under_its_roots_and_refuses_every_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let log = home.join("sampler.log");
    let text: String = (1..=300)
        .map(|i| format!("{i} {}\n", if i % 3 == 0 { "WARN low" } else { "info" }))
        .collect();
    std::fs::write(&log, text).unwrap();
    let f = log.display().to_string();
    let (code, v) = call(
        dir.path(),
        "log_tail",
        &format!(r#"{{"file":"{f}","lines":2}}"#),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["lines"], serde_json::json!(["299 info", "300 WARN low"]));
    let (_, v) = call(
        dir.path(),
        "log_tail",
        &format!(r#"{{"file":"{f}","lines":3,"grep":"WARN"}}"#),
    );
    assert_eq!(
        v["lines"],
        serde_json::json!(["294 WARN low", "297 WARN low", "300 WARN low"])
    );
    let (_, v) = call(
        dir.path(),
        "log_tail",
        &format!(r#"{{"file":"{f}","grep":"("}}"#),
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a valid regex"),
        "{v}"
    );

    // Out of bounds: relative climbs, absolute paths elsewhere, and a symlink out of the home.
    std::os::unix::fs::symlink("/etc/passwd", home.join("passwd.log")).unwrap();
    let link = home.join("passwd.log").display().to_string();
    for bad in [
        "../../etc/passwd",
        "/etc/passwd",
        "/proc/self/environ",
        link.as_str(),
    ] {
        let (code, v) = call(dir.path(), "log_tail", &format!(r#"{{"file":"{bad}"}}"#));
        assert_ne!(code, 0, "{bad}: {v}");
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains("is not a log file covo may read"), "{bad}: {m}");
        assert!(
            !m.contains("root:"),
            "{bad}: nothing of the file leaks: {m}"
        );
    }
}

#[test]
fn service_tools_need_systemd_and_reboot_is_owned_only_where_the_profile_says() {
    let dir = tempfile::tempdir().unwrap();
    let (_, list) = covo(dir.path(), &["tools", "list", "--json"]);
    let row = |n: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .unwrap()
            .clone()
    };
    let systemd = Path::new("/run/systemd/system").is_dir();
    for t in ["service_status", "reboot"] {
        let r = row(t);
        if systemd {
            assert_eq!(r["available"], true, "{r}");
        } else {
            assert_eq!(r["available"], false, "{r}");
            assert_eq!(r["reason"], "systemd is not running on this system");
        }
    }
    assert_eq!(row("reboot")["effect"], "destructive");
    if !systemd {
        // Unavailable means nothing runs: the call is refused with the reason.
        let (code, v) = call(dir.path(), "reboot", r#"{"target":"service"}"#);
        assert_ne!(code, 0);
        assert!(
            v["error"].to_string().contains("systemd is not running"),
            "{v}"
        );
    }
    let (_, minimal) = covo(
        dir.path(),
        &["tools", "list", "--profile", "minimal", "--json"],
    );
    assert!(!minimal
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "reboot" || r["name"] == "system_info"));
}
