//! A tool's name is written once, in `covo_core::catalog` (ARCHITECTURE.md, "Invariants"), and
//! so is a toolset's. This test reads the shipped sources of the gateway (`gateway/src/**/*.rs`,
//! without comments and without the trailing `#[cfg(test)] mod`), of the peer
//! (`peer/src/**/*.rs`) and the dashboard's assets (`gateway/src/web/assets/*`) and fails on any
//! quoted string literal that is a catalog tool's name or a toolset's name: code refers to
//! `catalog::sensors::SENSOR_READ.name`, `catalog::i2c::TOOLSET`, a `Part` or a `Need`, never
//! to a retyped `"sensor_read"`.
//!
//! Not counted: a literal inside an attribute (`#[cfg(feature = "web")]` names a cargo
//! feature) and a literal used as a field name (`"sensors": …`, `m["voice"]`, `.get("display")`),
//! which names a key of some JSON, not a tool. Some toolset names are also ordinary words (`web`,
//! `mqtt`, `system`, `shell`): where such a word is data of another kind, [`EXEMPT`] says so,
//! file by file, with the reason. An exemption that no longer matches anything fails too, so
//! the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Literals that spell a toolset's name but mean something else, and where.
const EXEMPT: &[(&str, &[&str], &str)] = &[
    (
        "mqtt",
        &[
            "gateway/src/daemon.rs",
            "gateway/src/policy.rs",
            "gateway/src/tools/core.rs",
            "gateway/src/tools/messaging.rs",
        ],
        "the MQTT channel's and `Via::Mqtt`'s name (sessions, audit log, message channels)",
    ),
    (
        "web",
        &["gateway/src/web/mod.rs", "gateway/src/policy.rs"],
        "the dashboard's channel and `Via::Web`'s name (sessions, audit log)",
    ),
    (
        "full",
        &["gateway/src/runtime.rs", "peer/src/backends/subagent.rs"],
        "the default profile's name (profiles are not toolsets)",
    ),
    (
        "edge",
        &[
            "gateway/src/mcp/mod.rs",
            "gateway/src/cli/mod.rs",
            "gateway/src/tools/gpio.rs",
        ],
        "the `edge` profile ([mcp] profile's default), the `edge` cargo profile (the build name) and `gpio_wait_edge`'s `edge` argument",
    ),
    (
        "hardware",
        &["gateway/src/doctor.rs"],
        "the name of one of `covo doctor`'s checks",
    ),
    (
        "spi",
        &["gateway/src/doctor.rs"],
        "the `spi` Unix group, device node kind and boot `dtparam` that `covo doctor` checks",
    ),
    (
        "i2c",
        &["gateway/src/doctor.rs"],
        "the `i2c` Unix group, device node kind and boot `dtparam` that `covo doctor` checks",
    ),
    (
        "gpio",
        &["gateway/src/doctor.rs"],
        "the `gpio` Unix group and device node kind that `covo doctor` checks",
    ),
    (
        "i2c",
        &["gateway/src/hardware.rs"],
        "the kind `Hardware::unavailable` keys the I2C buses' open errors by (`Part::opens`)",
    ),
    (
        "spi",
        &["gateway/src/hardware.rs"],
        "the kind `Hardware::unavailable` keys the SPI devices' open errors by (`Part::opens`)",
    ),
    (
        "gpio",
        &["gateway/src/hardware.rs"],
        "the kind `Hardware::unavailable` keys the GPIO chip's open errors by (`Part::opens`)",
    ),
    (
        "system",
        &["gateway/src/llm/openai.rs", "gateway/src/tools/system.rs"],
        "the chat role `system`, and `reboot`'s `target: \"system\"` (its schema's enum)",
    ),
    (
        "git",
        &["gateway/src/tools/git.rs"],
        "the `git` program the git tools run",
    ),
    (
        "patch",
        &["gateway/src/tools/patch.rs"],
        "the word naming the `patch` argument in path errors",
    ),
    (
        "skills",
        &["gateway/src/tools/skills.rs"],
        "the `$COVO_HOME/skills` folder",
    ),
    (
        "docs",
        &["gateway/src/tools/docs.rs"],
        "the `$COVO_HOME/docs` folder",
    ),
    (
        "memory",
        &["gateway/src/tools/memory.rs"],
        "the kind of thing not found (`ToolError::NotFound { what: \"memory\" }`)",
    ),
    (
        "search",
        &["gateway/src/cli/chat.rs", "peer/src/backends/search.rs"],
        "`covo chat`'s `/search` command, and the search API's endpoint path",
    ),
    (
        "shell",
        &["peer/src/backends/testgen.rs", "peer/src/backends/code.rs"],
        "the `shell` language of `code_run` and `test_generate`",
    ),
    (
        "board",
        &[
            "gateway/src/web/mod.rs",
            "gateway/src/web/assets/app.js",
            "gateway/src/web/assets/index.html",
            "gateway/src/mcp/server.rs",
        ],
        "the dashboard's `board` event and element, and the `covo://board` MCP resource's name",
    ),
    (
        "sensors",
        &[
            "gateway/src/web/assets/app.js",
            "gateway/src/web/assets/index.html",
        ],
        "the dashboard's `sensors` element id and class",
    ),
    (
        "sensors",
        &["peer/src/fleet.rs"],
        "the `P/G/sensors/<device>` level of a gateway's telemetry topics, which the fleet page reads",
    ),
    (
        "notify",
        &["gateway/src/store/watches.rs", "gateway/src/tools/automation.rs"],
        "`watch_create`'s `action: \"notify\"` (its schema's enum), not the `notify` tool",
    ),
    (
        "reboot",
        &["gateway/src/tools/system.rs"],
        "`systemctl reboot`'s argument",
    ),
];

/// Every catalog tool's name and every toolset's (basic ones from the specs, the composites).
fn names() -> BTreeSet<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    for t in covo_core::catalog::all() {
        out.insert(t.name.to_string());
        out.insert(t.toolset.to_string());
    }
    for (name, _) in covo_core::toolset::COMPOSITES {
        out.insert(name.to_string());
    }
    out
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The file's code without its trailing test module (as `layers.rs` reads it).
fn shipped(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// One string literal: its text, line, and whether it is data by its position (an attribute's
/// argument, or a field name).
struct Lit {
    text: String,
    line: usize,
    key: bool,
}

/// Whether the literal at `start..end` of `code` is a field name: followed by `:` (not `::`),
/// or indexed (`["x"]`), or looked up (`.get("x")`).
fn is_key(code: &[u8], start: usize, end: usize) -> bool {
    let after = code[end..]
        .iter()
        .copied()
        .find(|c| !c.is_ascii_whitespace());
    let colon = after == Some(b':') && code.get(end..).is_some_and(|r| !r.starts_with(b"::"));
    // `m["x"]` is an index; `&["x"]` is an array of one literal.
    let mut back = code[..start]
        .iter()
        .rev()
        .copied()
        .filter(|c| !c.is_ascii_whitespace());
    let indexed = back.next() == Some(b'[')
        && after == Some(b']')
        && back
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b')' | b']'));
    let got = code[..start].ends_with(b".get(");
    colon || indexed || got
}

/// The string literals of Rust code, comments skipped.
fn rust_literals(code: &str) -> Vec<Lit> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line, mut attr_depth) = (0usize, 1usize, None::<usize>);
    let mut brackets = 0usize;
    let prev_ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"/*") {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(b[i] == b'\n');
                    i += 1;
                }
            }
            continue;
        }
        if b[i..].starts_with(b"#[") || b[i..].starts_with(b"#![") {
            attr_depth.get_or_insert(brackets);
        }
        match c {
            b'[' => brackets += 1,
            b']' => {
                brackets = brackets.saturating_sub(1);
                if attr_depth == Some(brackets) {
                    attr_depth = None;
                }
            }
            _ => {}
        }
        // Raw strings: r"…", r#"…"#, br"…".
        let raw_at = if c == b'r' && !prev_ident(i) {
            Some(i + 1)
        } else if b[i..].starts_with(b"br") && !prev_ident(i) {
            Some(i + 2)
        } else {
            None
        };
        if let Some(mut j) = raw_at {
            let hashes = b[j..].iter().take_while(|&&h| h == b'#').count();
            j += hashes;
            if b.get(j) == Some(&b'"') {
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let body = j + 1;
                let end = body
                    + b[body..]
                        .windows(close.len())
                        .position(|w| w == close.as_slice())
                        .expect("unterminated raw string");
                out.push(Lit {
                    text: code[body..end].to_string(),
                    line,
                    key: attr_depth.is_some() || is_key(b, i, end + close.len()),
                });
                line += code[i..end].matches('\n').count();
                i = end + close.len();
                continue;
            }
        }
        if c == b'"' {
            let mut j = i + 1;
            while b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let start = if i > 0 && b[i - 1] == b'b' { i - 1 } else { i };
            out.push(Lit {
                text: code[i + 1..j].to_string(),
                line,
                key: attr_depth.is_some() || is_key(b, start, j + 1),
            });
            line += code[i..j].matches('\n').count();
            i = j + 1;
            continue;
        }
        if c == b'\'' {
            // A char literal ('x', '\n', '\u{1F600}', '"'), else a lifetime or a label.
            let rest = &code[i + 1..];
            let end = if rest.starts_with('\\') {
                rest.find('\'').map(|e| e.max(2))
            } else {
                rest.chars()
                    .next()
                    .filter(|ch| rest[ch.len_utf8()..].starts_with('\''))
                    .map(|ch| ch.len_utf8())
            };
            match end {
                Some(e) => i += e + 2,
                None => i += 1,
            }
            continue;
        }
        line += usize::from(c == b'\n');
        i += 1;
    }
    out
}

/// The quoted words of a page, script or style sheet: `"x"`, `'x'` and `` `x` `` on one line,
/// outside comments.
fn asset_literals(text: &str) -> Vec<Lit> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (n, raw) in text.lines().enumerate() {
        if !in_block && raw.trim_start().starts_with("//") {
            continue;
        }
        let mut line = raw.to_string();
        // Block comments (`/* */`, `<!-- -->`) that open and close anywhere.
        loop {
            if in_block {
                let close = ["*/", "-->"]
                    .iter()
                    .filter_map(|c| line.find(c).map(|i| i + c.len()))
                    .min();
                match close {
                    Some(i) => {
                        line = line[i..].to_string();
                        in_block = false;
                    }
                    None => {
                        line.clear();
                        break;
                    }
                }
            }
            match ["/*", "<!--"].iter().filter_map(|o| line.find(o)).min() {
                Some(i) => {
                    let tail = line[i..].to_string();
                    line.truncate(i);
                    let close = ["*/", "-->"]
                        .iter()
                        .filter_map(|c| tail.find(c).map(|j| j + c.len()))
                        .min();
                    match close {
                        Some(j) => line.push_str(&tail[j..]),
                        None => {
                            in_block = true;
                            break;
                        }
                    }
                }
                None => break,
            }
        }
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let q = b[i];
            if matches!(q, b'"' | b'\'' | b'`') {
                if let Some(len) = line[i + 1..].find(q as char) {
                    let end = i + 1 + len;
                    out.push(Lit {
                        text: line[i + 1..end].to_string(),
                        line: n + 1,
                        key: is_key(b, i, end + 1),
                    });
                    i = end + 1;
                    continue;
                }
            }
            i += 1;
        }
    }
    out
}

#[test]
fn no_tool_or_toolset_name_is_spelled_outside_the_catalog() {
    let gateway = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = gateway.parent().unwrap();
    let names = names();
    let mut sources = Vec::new();
    files(&gateway.join("src"), &mut sources);
    files(&root.join("peer/src"), &mut sources);
    sources.sort();
    let assets = gateway.join("src/web/assets");
    let mut found: Vec<String> = Vec::new();
    let mut used: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut scanned = 0;
    for f in &sources {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let lits = if f.starts_with(&assets) {
            asset_literals(&std::fs::read_to_string(f).unwrap())
        } else if f.extension().is_some_and(|x| x == "rs") {
            rust_literals(shipped(&std::fs::read_to_string(f).unwrap()))
        } else {
            continue;
        };
        scanned += 1;
        for l in lits {
            if l.key || !names.contains(&l.text) {
                continue;
            }
            let exempt = EXEMPT
                .iter()
                .find(|(w, fs, _)| *w == l.text && fs.contains(&rel.as_str()));
            match exempt {
                Some((w, _, _)) => *used.entry((w, leak(&rel))).or_default() += 1,
                None => found.push(format!("{rel}:{}: \"{}\"", l.line, l.text)),
            }
        }
    }
    assert!(scanned > 100, "only {scanned} files read: wrong folder?");
    let stale: Vec<String> = EXEMPT
        .iter()
        .flat_map(|(w, fs, _)| fs.iter().map(move |f| (*w, *f)))
        .filter(|k| !used.contains_key(k))
        .map(|(w, f)| format!("\"{w}\" in {f}"))
        .collect();
    assert!(
        found.is_empty(),
        "{} tool or toolset names spelled as string literals outside covo_core::catalog (use \
         the catalog's statics, its TOOLSET constants, a Part or a Need; or, for data of \
         another kind, an EXEMPT entry with its reason):\n{}",
        found.len(),
        found.join("\n")
    );
    assert!(
        stale.is_empty(),
        "EXEMPT entries that match nothing any more (remove them):\n{}",
        stale.join("\n")
    );
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

#[test]
fn the_scanner_sees_literals_not_comments_keys_or_attributes() {
    let code = r####"
        // "sensor_read" in a comment
        /* "gpio_write" /* nested */ "i2c" */
        #[cfg(feature = "web")]
        let a = "pwm_set"; let b = json!({"sensors": 1}); let c = m["voice"];
        let d = r#"sensor_list"#; let e = '"'; let f: &'static str = "x";
        let g = v.get("display"); let h = &["reboot"];
    "####;
    let lits: Vec<(String, bool)> = rust_literals(code)
        .into_iter()
        .map(|l| (l.text, l.key))
        .collect();
    let flagged: Vec<&str> = lits
        .iter()
        .filter(|(_, k)| !k)
        .map(|(t, _)| t.as_str())
        .collect();
    assert_eq!(
        flagged,
        ["pwm_set", "sensor_list", "x", "reboot"],
        "{lits:?}"
    );
    let js = "// 'gpio_write' /api/*\nif (d.tool === \"gpio_write\" || d.tool === 'pwm_set') f(`x`, {\"a\": 1});\n<!-- \"board\" -->";
    let lits: Vec<String> = asset_literals(js)
        .into_iter()
        .filter(|l| !l.key)
        .map(|l| l.text)
        .collect();
    assert_eq!(lits, ["gpio_write", "pwm_set", "x"]);
}
