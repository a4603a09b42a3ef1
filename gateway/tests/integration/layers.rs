//! The gateway crate's modules form layers (ARCHITECTURE.md, "Layers"): a module may use only
//! modules below it. This test reads the sources and fails on any import that points up (or
//! sideways into a module ranked above), which also keeps the module graph acyclic.
//!
//! Test modules (`#[cfg(test)] mod …` at the end of a file) are not part of the shipped graph
//! and may build a whole runtime; they are left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every top-level module of the library and the binary, bottom to top. A module may use only
/// modules that come before it. The groups are the layers of the drawing in ARCHITECTURE.md.
const RANK: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "logging",
            "sd_notify",
            "fds",
            "trim",
            "secrets",
            "listen",
            "multipart",
            "schema",
            "config",
            "llm",
            "store",
            "error",
            "artifacts",
            "ha",
        ],
    ),
    ("board and link", &["hardware", "link"]),
    (
        "pipeline",
        &[
            "policy",
            "exec",
            "spec",
            "user_io",
            "mcp_client",
            "hooks",
            "runtime",
        ],
    ),
    ("tools", &["watch", "tools"]),
    (
        "agent and daemon",
        &[
            "agent", "swarm", "daemon", "mcp", "web", "telegram", "doctor",
        ],
    ),
    ("binary", &["cli", "main"]),
];

fn rank() -> BTreeMap<&'static str, (usize, &'static str)> {
    RANK.iter()
        .flat_map(|(layer, mods)| mods.iter().map(move |m| (*m, *layer)))
        .enumerate()
        .map(|(i, (m, layer))| (m, (i, layer)))
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without its trailing test module.
fn shipped(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// The top-level modules a file names through `crate::`.
fn used_modules(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        // `covo_crate::` or `some_crate::` are other names; only a bare `crate::` counts.
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn no_module_uses_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let ranks = rank();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut violations = Vec::new();
    for f in &files {
        let module = module_of(&src, f);
        if module == "lib" {
            continue;
        }
        let Some(&(mine, my_layer)) = ranks.get(module.as_str()) else {
            panic!("module '{module}' ({}) is in no layer: add it to RANK and to the drawing in ARCHITECTURE.md", f.display());
        };
        let text = std::fs::read_to_string(f).unwrap();
        for used in used_modules(shipped(&text)) {
            if used == module {
                continue;
            }
            let Some(&(theirs, their_layer)) = ranks.get(used.as_str()) else {
                violations.push(format!(
                    "{}: uses crate::{used}, which is in no layer",
                    f.display()
                ));
                continue;
            };
            if theirs > mine {
                violations.push(format!(
                    "{}: {module} ({my_layer}) uses {used} ({their_layer}), which is above it",
                    f.display()
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layer violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_library_module_is_placed_in_a_layer() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let ranks = rank();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert!(declared.len() >= 15, "{declared:?}");
    for m in declared {
        assert!(ranks.contains_key(m), "module '{m}' is in no layer");
    }
}

#[test]
fn the_checker_sees_plain_grouped_and_nested_uses() {
    let code = "use crate::store::Store;\nuse crate::{exec::Cx, hooks};\nlet x = crate::runtime::Via::Direct;\nuse covo_crate::x;";
    assert_eq!(used_modules(code), ["store", "exec", "hooks", "runtime"]);
    let file = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::z;\n}\n";
    assert_eq!(used_modules(shipped(file)), ["a"]);
}
