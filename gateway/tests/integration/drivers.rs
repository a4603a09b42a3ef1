//! A driver's facts live in its entry of `covo_board::driver::Driver` (ARCHITECTURE.md,
//! "Invariants"). This test reads the gateway's, the board crate's and hal-tools' sources and
//! fails where code names a driver by its string instead: a comparison of a `driver` with a string literal,
//! `driver.as_str()` (what a string `match` on a driver needs), a driver's name as a string
//! literal (`"ssd1306"`, `"gpio_out"`), or "is a sensor" spelled as empty quantities.
//!
//! Left out: the table itself (`board/src/driver.rs`), comments, and test modules
//! (`#[cfg(test)] mod …`), which may spell board files and expected output.

use covo_board::driver::Driver;
use std::path::{Path, PathBuf};

/// Driver names that are also other things' names (the `pwm`, `serial` and `mcu` toolsets, the
/// `pwm` hardware kind): a literal of one is a violation only on a line about a driver.
const SHARED_NAMES: &[&str] = &["pwm", "serial", "mcu"];

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

/// The file's lines before its test module (a `#[cfg(test)]` whose item, within the next few
/// lines of attributes and comments, is a `mod`).
fn shipped(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .take(4)
                    .map(|l| l.trim())
                    .find(|l| !l.starts_with("#[") && !l.starts_with("//"))
                    .is_some_and(|l| {
                        l.starts_with("mod ")
                            || l.starts_with("pub mod ")
                            || l.starts_with("pub(crate) mod ")
                    })
        })
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

/// Why `line` names a driver by its string, if it does.
fn violation(line: &str) -> Option<String> {
    let code = line.trim();
    if code.starts_with("//") {
        return None;
    }
    let code = code.split(" // ").next().unwrap_or(code);
    let squeezed: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    for op in [
        "driver == \"",
        "driver != \"",
        "\" == d.driver",
        "\" != d.driver",
    ] {
        if squeezed.contains(op) {
            return Some(format!("compares a driver with a string (`{op}`)"));
        }
    }
    if squeezed.contains("driver.as_str()") {
        return Some("matches a driver by its string (`driver.as_str()`)".into());
    }
    if squeezed.contains("quantities(") && squeezed.contains(".is_empty()") {
        return Some("spells \"is a sensor\" as empty quantities: use `is_sensor()`".into());
    }
    for &d in Driver::ALL {
        let name = d.as_str();
        let literal = format!("\"{name}\"");
        if !code.contains(&literal) {
            continue;
        }
        if !SHARED_NAMES.contains(&name) || code.contains("driver") {
            return Some(format!(
                "names driver {literal} by its string: use `Driver::{d:?}` or its entry"
            ));
        }
    }
    None
}

fn violations(roots: &[PathBuf], table: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for r in roots {
        sources(r, &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        if f.ends_with(table) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in shipped(&text).iter().enumerate() {
            if let Some(why) = violation(line) {
                out.push(format!(
                    "{}:{}: {why}\n    {}",
                    f.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    out
}

#[test]
fn no_driver_is_named_by_its_string_outside_its_table_entry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let roots = [
        root.join("gateway/src"),
        root.join("board/src"),
        root.join("hal-tools/src"),
    ];
    let table = Path::new("board/src/driver.rs");
    assert!(root.join(table).is_file(), "the driver table moved");
    let found = violations(&roots, table);
    assert!(
        found.is_empty(),
        "drivers named by their strings outside their table entry (board/src/driver.rs): \
         compare `Driver` variants or ask the entry (`is_sensor()`, `kind()`, `quantities()`, \
         `footprint()`, `probe()`, `docs()`):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_catches_string_comparisons_and_passes_typed_ones() {
    for bad in [
        r#"    if d.driver == "gpio_out" {"#,
        r#".filter(|d| d.driver != "mcu")"#,
        r#"match d.driver.as_str() {"#,
        r#"        "ssd1306" => "display","#,
        r#"    "sensors" if !covo_hal_tools::sensors::quantities(&d.driver).is_empty() => {"#,
        r#"let mcus = devices(|driver| driver == "mcu");"#,
        r#"        ("bme280", Some(a)) => probe(a),"#,
    ] {
        assert!(violation(bad).is_some(), "not caught: {bad}");
    }
    for good in [
        r#"    if d.driver == Driver::GpioOut {"#,
        r#".filter(|d| d.driver.is_sensor())"#,
        r#"    "pwm" => hw.unavailable("pwm"),"#,
        r#"pub const SWARM_DEFAULT_TOOLSETS: &[&str] = &["board", "sensors", "mcu"];"#,
        r#"    // a comment may say d.driver == "mcu""#,
        r#"/// The declared microcontrollers (`driver = "mcu"`)."#,
    ] {
        assert_eq!(violation(good), None, "{good}");
    }
    let text =
        "fn a() {}\n#[cfg(test)]\n// why\n#[allow(x)]\npub(crate) mod tests {\n\"bme280\"\n}\n";
    assert_eq!(shipped(text), ["fn a() {}"]);
}
