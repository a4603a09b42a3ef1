//! The `covo tools` / `covo toolsets` command-line contract, on the real binary.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn covo(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_covo"))
            .args(args)
            .current_dir(self.dir.path())
            .env("COVO_HOME", self.dir.path().join("home"))
            .env_remove("COVO_CONFIG")
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.covo(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn write_config(&self, text: &str) -> String {
        let p = self.dir.path().join("cfg.toml");
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn tools_list_json_lists_every_tool_the_default_full_profile_owns() {
    let env = Env::new();
    let v = env.json(&["tools", "list", "--json"]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 116);
    for r in rows {
        for key in [
            "name",
            "description",
            "toolset",
            "runs",
            "effect",
            "available",
        ] {
            assert!(!r[key].is_null(), "{key} missing in {r}");
        }
    }
    // Every tool of the catalog is implemented.
    assert!(
        rows.iter().all(|r| r["reason"] != "not implemented"),
        "{:?}",
        rows.iter()
            .filter(|r| r["reason"] == "not implemented")
            .map(|r| &r["name"])
            .collect::<Vec<_>>()
    );
    // A peer tool without `[mqtt]`: unavailable, and the reason says why.
    let peer = rows.iter().find(|r| r["name"] == "web_fetch").unwrap();
    assert_eq!(peer["available"], false);
    assert_eq!(peer["reason"], "no MQTT broker configured");
}

#[test]
fn tools_list_respects_profile_and_platform() {
    let env = Env::new();
    assert_eq!(
        env.json(&["tools", "list", "--profile", "minimal", "--json"])
            .as_array()
            .unwrap()
            .len(),
        7
    );
    let gateway = names(&env.json(&["tools", "list", "--platform", "gateway", "--json"]));
    let prompt = names(
        &env.json(&["tools", "prompt", "--platform", "gateway"])
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"].clone())
            .collect::<Value>(),
    );
    assert_eq!(
        gateway, prompt,
        "list --platform shows what the prompt carries"
    );
    assert!(gateway.contains(&"tool_search".to_string()));
    let toolset = names(&env.json(&["tools", "list", "--toolset", "discovery", "--json"]));
    assert_eq!(toolset, ["tool_search", "tool_describe", "tool_call"]);
}

#[test]
fn tools_prompt_renders_openai_and_anthropic_and_is_byte_stable() {
    let env = Env::new();
    let a = env.covo(&["tools", "prompt", "--platform", "gateway"]);
    let b = env.covo(&["tools", "prompt", "--platform", "gateway"]);
    assert_eq!(a.stdout, b.stdout);
    let anthropic = env.json(&[
        "tools",
        "prompt",
        "--platform",
        "gateway",
        "--format",
        "anthropic",
    ]);
    assert!(anthropic[0]["input_schema"].is_object());
    assert!(anthropic[0].get("type").is_none());
}

#[test]
fn tools_search_json_ranks_owned_tools() {
    let env = Env::new();
    let v = env.json(&[
        "tools",
        "search",
        "scan the i2c bus",
        "--json",
        "--limit",
        "3",
    ]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["name"], "i2c_scan");
    assert!(rows[0]["score"].as_f64().unwrap() >= rows[1]["score"].as_f64().unwrap());
    assert!(rows[0]["available"].is_boolean());
    let pruned = env.json(&[
        "tools",
        "search",
        "run a shell command",
        "--profile",
        "edge",
        "--json",
        "--limit",
        "20",
    ]);
    assert!(!names(&pruned).contains(&"shell_exec".to_string()));
}

#[test]
fn tools_describe_prints_the_definition_or_a_structured_error() {
    let env = Env::new();
    let v = env.json(&["tools", "describe", "tool_search", "--json"]);
    assert_eq!(v["parameters"]["required"][0], "query");
    let out = env.covo(&[
        "tools",
        "describe",
        "shell_exec",
        "--profile",
        "edge",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["error"]["kind"], "not_in_profile");
}

#[test]
fn tools_call_prints_json_and_exits_0_or_1_with_a_structured_error() {
    let env = Env::new();
    let ok = env.covo(&["tools", "call", "tool_search", r#"{"query":"gpio"}"#]);
    assert_eq!(ok.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert!(v["results"].is_array());
    for (args, kind) in [
        (vec!["tools", "call", "nope"], "unknown_tool"),
        (
            vec!["tools", "call", "tool_search", "{bad"],
            "malformed_json",
        ),
        (
            vec!["tools", "call", "tool_search", r#"{"query":1}"#],
            "invalid_arguments",
        ),
        (
            vec![
                "tools",
                "call",
                "tool_search",
                r#"{"query":"x"}"#,
                "--profile",
                "minimal",
            ],
            "not_in_profile",
        ),
        (
            vec![
                "tools",
                "call",
                "web_fetch",
                r#"{"url":"https://example.com"}"#,
            ],
            "unavailable",
        ),
    ] {
        let out = env.covo(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let e: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{args:?}: not JSON"));
        assert_eq!(e["error"]["kind"], kind, "{args:?}");
    }
}

#[test]
fn a_destructive_call_without_a_terminal_or_yes_is_declined_and_with_yes_runs() {
    let env = Env::new();
    let ws = env.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("f.txt"), "x").unwrap();
    let cfg = env.write_config(&format!("[fs]\nroots = [{:?}]\n", ws.display().to_string()));
    let out = env.covo(&[
        "tools",
        "call",
        "fs_delete",
        r#"{"path":"f.txt"}"#,
        "--config",
        &cfg,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["error"]["kind"], "approval_denied");
    assert!(ws.join("f.txt").exists());
    let out = env.covo(&[
        "tools",
        "call",
        "fs_delete",
        r#"{"path":"f.txt"}"#,
        "--config",
        &cfg,
        "--yes",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!ws.join("f.txt").exists());
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    assert_eq!(env.covo(&["tools", "frobnicate"]).status.code(), Some(2));
    assert_eq!(
        env.covo(&[
            "tools",
            "list",
            "--platform",
            "gateway",
            "--toolset",
            "core"
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        env.covo(&["tools", "list", "--profile", "nope"])
            .status
            .code(),
        Some(2)
    );
    let cfg = env.write_config("profle = 1\n");
    let out = env.covo(&["tools", "list", "--config", &cfg]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("profle"));
}

#[test]
fn toolsets_lists_and_resolves_and_a_cycle_exits_2_naming_the_path() {
    let env = Env::new();
    let all = env.json(&["toolsets", "--json"]);
    let edge = all
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "edge")
        .unwrap();
    assert_eq!(edge["kind"], "composite");
    assert_eq!(edge["tools"].as_array().unwrap().len(), 41);
    let hw = env.json(&["toolsets", "hardware", "--json"]);
    assert_eq!(hw.as_array().unwrap().len(), 31);
    let cfg =
        env.write_config("[toolsets.a]\nincludes = [\"b\"]\n[toolsets.b]\nincludes = [\"a\"]\n");
    let out = env.covo(&["toolsets", "--config", &cfg]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("toolset cycle: a -> b -> a"));
    let out = env.covo(&["toolsets", "a", "--config", &cfg]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn config_is_found_through_covo_config_then_the_working_directory() {
    let env = Env::new();
    std::fs::write(env.path().join("covo.toml"), "profile = \"minimal\"\n").unwrap();
    assert_eq!(
        env.json(&["tools", "list", "--json"])
            .as_array()
            .unwrap()
            .len(),
        7
    );
    let cfg = env.write_config("profile = \"edge\"\n");
    let out = Command::new(env!("CARGO_BIN_EXE_covo"))
        .args(["tools", "list", "--json"])
        .current_dir(env.path())
        .env("COVO_HOME", env.path().join("home"))
        .env("COVO_CONFIG", &cfg)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v.as_array().unwrap().len(),
        76,
        "the edge profile owns 76 tools"
    );
}

#[test]
fn covo_peer_points_to_its_own_binary_and_exits_as_a_usage_error() {
    let env = Env::new();
    let out = env.covo(&["peer", "--config", "peer.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("covo-peer --config"), "{err}");
    // The peer's binary is not linked into the gateway: its help lists no peer command.
    let help = env.covo(&["--help"]);
    assert!(!String::from_utf8_lossy(&help.stdout).contains("peer"));
}

/// Broken configuration and board files: `covo --config FILE tools list` exits 2 with an error
/// that names the file, the line and the key (issue 13, item 17).
#[test]
fn broken_config_and_board_files_exit_2_naming_the_file_the_line_and_the_key() {
    let env = Env::new();
    const BOARD: &str = "[board]\nname = \"t\"\nmodel = \"test\"\n\n[[serial]]\nname = \"gps\"\npath = \"/dev/ttyAMA0\"\n\n[pins]\navailable = [4, 17]\n\n[[device]]\nname = \"relay\"\ndriver = \"gpio_out\"\npin = 17\n\n[[device]]\nname = \"pico\"\ndriver = \"mcu\"\nport = \"gps\"\n\n[policy]\npwm = [{ channel = 0, min_hz = 10.0, max_hz = 100.0 }]\nserial_allow = [\"gps\"]\n\n[[policy.mcu]]\ndevice = \"pico\"\n";
    // (what is written where, the board or the config, its line, the key the error names)
    let board_cases: &[(&str, &str, usize, &str)] = &[
        ("driver = \"gpio_out\"", "driver = \"dht22\"", 14, "driver"),
        ("pin = 17", "pin = 12", 15, "pin"),
        ("min_hz = 10.0", "min_hz = 1000.0", 23, "min_hz"),
        ("device = \"pico\"", "device = \"pico2\"", 27, "device"),
        (
            "serial_allow = [\"gps\"]",
            "serial_allow = [\"gsp\"]",
            24,
            "serial_allow",
        ),
    ];
    let check = |cfg: &str, file: &str, line: usize, key: &str| {
        let out = env.covo(&["--config", cfg, "tools", "list"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(file), "names {file}: {err}");
        assert!(err.contains(&format!("line {line}")), "line {line}: {err}");
        assert!(err.contains(key), "names `{key}`: {err}");
    };
    let board = env.path().join("board.toml");
    std::fs::write(&board, BOARD).unwrap();
    let cfg = env.write_config(&format!("board = {:?}\n", board.display().to_string()));
    assert_eq!(
        env.covo(&["--config", &cfg, "tools", "list"]).status.code(),
        Some(0),
        "the unbroken board loads"
    );
    for (from, to, line, key) in board_cases {
        std::fs::write(&board, BOARD.replace(from, to)).unwrap();
        check(&cfg, &board.display().to_string(), *line, key);
    }
    let mut bad = BOARD.as_bytes().to_vec();
    bad[BOARD.find("relay").unwrap()] = 0xff;
    std::fs::write(&board, &bad).unwrap();
    check(&cfg, &board.display().to_string(), 13, "UTF-8");

    let config_cases: &[(&str, usize, &str)] = &[
        (
            "profile = \"edge\"\nplatform = \"nonexistent\"\n",
            2,
            "platform",
        ),
        ("\nprofile = \"nope\"\n", 2, "profile"),
        (
            "[toolsets.a]\nincludes = [\"b\"]\n[toolsets.b]\nincludes = [\"a\"]\n",
            2,
            "toolsets.a.includes",
        ),
        (
            "profile = \"x\"\n[profiles.x]\nbase = \"y\"\n[profiles.y]\nbase = \"x\"\n",
            3,
            "profiles.x.base",
        ),
    ];
    for (text, line, key) in config_cases {
        let cfg = env.write_config(text);
        check(&cfg, &cfg, *line, key);
    }
    let cfg = env.path().join("cfg.toml");
    std::fs::write(&cfg, b"profile = \"ed\xffe\"\n").unwrap();
    let cfg = cfg.display().to_string();
    check(&cfg, &cfg, 1, "UTF-8");
}

/// A Linux board whose bus, GPIO chip, SPI device and PWM chip do not open: their tools are
/// listed as unavailable, each with the open error as the reason, so the model is not offered
/// tools that cannot work; the tools the board can still run stay available.
#[test]
fn hardware_that_fails_to_open_makes_its_tools_unavailable_with_the_open_error() {
    let env = Env::new();
    let board = env.path().join("board.toml");
    std::fs::write(
        &board,
        r#"[board]
name = "gone"
model = "a board whose parts are missing"
backend = "linux"

[[i2c]]
bus = 7
path = "/dev/i2c-97"

[[spi]]
bus = 0
cs = 0
path = "/dev/spidev9.9"

[pins]
chip = "/dev/gpiochip97"
available = [17]

[[pwm]]
channel = 0
chip = "/sys/class/pwm/pwmchip97"
pin = 18

[[device]]
name = "climate"
driver = "bme280"
bus = 7
address = 0x76
"#,
    )
    .unwrap();
    let cfg = env.write_config(&format!("board = {:?}\n", board.display().to_string()));
    let v = env.json(&["--config", &cfg, "tools", "list", "--json"]);
    let row = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed"))
            .clone()
    };
    let reason = |name: &str| {
        let r = row(name);
        assert_eq!(r["available"], false, "{name}: {r}");
        r["reason"].as_str().unwrap().to_string()
    };
    for t in [
        "i2c_scan",
        "i2c_read",
        "i2c_write_read",
        "i2c_read_register",
    ] {
        assert!(reason(t).contains("/dev/i2c-97"), "{t}: {}", reason(t));
    }
    assert!(
        reason("sensor_read").contains("/dev/i2c-97"),
        "{}",
        reason("sensor_read")
    );
    for t in ["gpio_read", "gpio_write", "gpio_wait_edge"] {
        let r = reason(t);
        assert!(
            r.contains("/dev/gpiochip97") && r.contains("does not exist"),
            "{t}: {r}"
        );
    }
    assert!(
        reason("spi_transfer").contains("/dev/spidev9.9"),
        "{}",
        reason("spi_transfer")
    );
    assert!(
        reason("pwm_set").contains("pwmchip97"),
        "{}",
        reason("pwm_set")
    );
    // What does not need the missing parts stays available.
    assert_eq!(row("board_info")["available"], true);
    assert_eq!(row("todo_write")["available"], true);
}

#[test]
fn version_names_the_commit_target_build_and_features() {
    let e = Env::new();
    let out = e.covo(&["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!("covo {}", env!("CARGO_PKG_VERSION")),
        "{text}"
    );
    // The commit this binary was built from, as git describes it now (the test and the binary
    // are built from the same tree).
    let describe = Command::new("git")
        .args(["describe", "--always", "--tags", "--dirty"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let describe = String::from_utf8_lossy(&describe.stdout).trim().to_string();
    let git = lines[1].strip_prefix("git: ").expect(&text);
    // The build script ran at or before this tree's state: same commit, dirty or not.
    assert_eq!(
        git.trim_end_matches("-dirty"),
        describe.trim_end_matches("-dirty"),
        "{text}"
    );
    let target = lines[2].strip_prefix("target: ").expect(&text);
    assert!(
        target.starts_with(std::env::consts::ARCH) && target.contains(std::env::consts::OS),
        "{text}"
    );
    assert!(lines[3].starts_with("build: debug ("), "{text}");
    assert!(lines[3].ends_with(", panic=unwind)"), "{text}");
    // The cargo features it was built with: the default ones (`mcp`, …).
    let features: Vec<&str> = lines[4]
        .strip_prefix("features: ")
        .expect(&text)
        .split(',')
        .collect();
    assert!(features.contains(&"mcp"), "{text}");
    if cfg!(feature = "telegram") {
        assert!(features.contains(&"telegram"), "{text}");
    }
    if cfg!(feature = "hal") {
        assert!(features.contains(&"hal"), "{text}");
    }
    // -V is the one-line form.
    let short = e.covo(&["-V"]);
    assert_eq!(
        String::from_utf8_lossy(&short.stdout).trim(),
        format!("covo {} ({git})", env!("CARGO_PKG_VERSION"))
    );
}
