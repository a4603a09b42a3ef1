//! `file_search` through the CLI and the whole pipeline over a real folder tree in the fs
//! workspace: globs, regexes, .gitignore, binaries, bounds and escapes.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let e = Env {
            dir: tempfile::tempdir().unwrap(),
        };
        let put = |rel: &str, text: &[u8]| {
            let p = e.ws().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            "src/main.rs",
            b"fn main() {\n    let sensor = read_bme280();\n}\n",
        );
        put(
            "src/lib.rs",
            b"pub fn read_bme280() -> f32 { 21.5 }\n// TODO: humidity\n",
        );
        put("notes/plan.md", b"# Plan\nTODO: wire the BME280\n");
        put("target/debug/out.rs", b"read_bme280 generated\n");
        put(".gitignore", b"target/\n*.log\n");
        put("run.log", b"read_bme280 logged\n");
        put("blob.bin", b"read_bme280\0\x01\x02");
        put(".hidden/secret.rs", b"read_bme280 hidden\n");
        e
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("home/workspace")
    }

    fn call(&self, args: Value) -> (i32, Value) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_covo"));
        cmd.args(["tools", "call", "file_search", &args.to_string()])
            .env("COVO_HOME", self.dir.path().join("home"))
            .env_remove("COVO_CONFIG");
        covo_tests::bins::json(&mut cmd)
    }
}

fn paths(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| {
            format!(
                "{}{}",
                r["path"].as_str().unwrap(),
                r["line"]
                    .as_u64()
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn contents_and_names_are_found_with_line_numbers_and_ignores_honoured() {
    let env = Env::new();
    let (code, v) = env.call(json!({"pattern": "read_bme280"}));
    assert_eq!(code, 0, "{v}");
    let mut got = paths(&v);
    got.sort();
    // Not target/ or *.log (.gitignore), not the hidden folder, not the binary file.
    assert_eq!(got, ["src/lib.rs:1", "src/main.rs:2"]);
    assert_eq!(v["complete"], true);
    assert!(v["results"][0]["text"]
        .as_str()
        .unwrap()
        .contains("read_bme280"));

    let (_, v) = env.call(json!({"pattern": "todo", "case_sensitive": false, "glob": "*.md"}));
    assert_eq!(paths(&v), ["notes/plan.md:2"]);
    let (_, v) = env.call(json!({"glob": "**/*.rs"}));
    let mut got = paths(&v);
    got.sort();
    assert_eq!(got, ["src/lib.rs", "src/main.rs"]);
    let (_, v) = env.call(json!({"pattern": "TODO", "path": "src"}));
    assert_eq!(paths(&v), ["lib.rs:2"]);
}

#[test]
fn results_are_capped_and_bad_input_is_a_clear_error() {
    let env = Env::new();
    for i in 0..50 {
        std::fs::write(env.ws().join(format!("f{i}.txt")), "hit\nhit\n").unwrap();
    }
    let (_, v) = env.call(json!({"pattern": "hit", "max_results": 7}));
    assert_eq!(v["results"].as_array().unwrap().len(), 7);
    assert_eq!(v["complete"], false);
    assert!(v["note"].as_str().unwrap().contains("narrow it"), "{v}");
    let (code, v) = env.call(json!({"pattern": "("}));
    assert_ne!(code, 0);
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{v}");
    let (_, v) = env.call(json!({}));
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{v}");
    let (_, v) = env.call(json!({"glob": "a{"}));
    assert_eq!(v["error"]["kind"], "invalid_arguments", "{v}");
}

#[test]
fn a_search_never_leaves_the_workspace() {
    let env = Env::new();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "read_bme280 outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.ws().join("link")).unwrap();
    // The symlinked folder is not followed.
    let (_, v) = env.call(json!({"pattern": "outside"}));
    assert_eq!(paths(&v), Vec::<String>::new(), "{v}");
    for p in ["..", "/etc", "link"] {
        let (code, v) = env.call(json!({"pattern": "x", "path": p}));
        assert_ne!(code, 0, "{p}: {v}");
    }
}
