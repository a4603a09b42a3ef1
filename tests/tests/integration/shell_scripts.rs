//! The test scripts themselves (issue 24, item 7): `cmd | grep -q … || fail` under
//! `set -o pipefail` fails at random under load. `grep -q` exits at its first match, a writer
//! still writing dies of SIGPIPE, and the pipeline's status becomes 141. On a clean clone this
//! failed a whole `.ci/run` after 21 minutes ("busybox has no httpd applet"). Checks capture
//! first (`grep -q PAT <<<"$(cmd)"`), and this scan keeps it that way in every shell script.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn shell_scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(name.as_str(), "node_modules" | "target" | ".git") {
                shell_scripts(&p, out);
            }
        } else if name.ends_with(".sh")
            || (name == "run"
                && p.parent().and_then(Path::file_name) == Some(std::ffi::OsStr::new(".ci")))
        {
            out.push(p);
        }
    }
}

/// The lines of `text` (continuations joined) where a pipe feeds a `grep` that quits early.
fn early_exit_pipes(text: &str) -> Vec<String> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter(|l| {
            l.split('|').skip(1).any(|seg| {
                let mut words = seg.split_whitespace();
                words.next() == Some("grep")
                    && words.take_while(|w| w.starts_with('-')).any(|w| {
                        (!w.starts_with("--") && (w.contains('q') || w.starts_with("-m")))
                            || w == "--quiet"
                            || w == "--max-count"
                    })
            })
        })
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn the_scan_finds_the_pattern_that_flaked() {
    // The line that failed CI, and its shapes: a scan that misses them proves nothing.
    for bad in [
        "busybox --list | grep -qx httpd || die \"no httpd\"",
        "readelf -lW \"$bin\" | grep -q INTERP && die x",
        "a | tar -xO ./conffiles | grep -qx /etc/covo/covo.toml \\\n  || fail y",
        "x | grep -c -q y",
        "x | grep --quiet y",
        "x | grep -m1 y",
    ] {
        assert_eq!(early_exit_pipes(bad).len(), 1, "missed: {bad}");
    }
    for good in [
        "grep -qx httpd <<<\"$(busybox --list)\" || die x",
        "out=$(busybox --list)",
        "readelf -VW \"$bin\" | grep -o 'GLIBC_[0-9.]*' | sort -V",
        "# busybox --list | grep -q httpd",
        "a || b | grep foo",
    ] {
        assert!(early_exit_pipes(good).is_empty(), "flagged: {good}");
    }
}

#[test]
fn no_script_pipes_into_a_grep_that_quits_early() {
    let root = repo();
    let mut scripts = Vec::new();
    for d in ["tests", ".ci", "packaging", "boards", "firmware"] {
        shell_scripts(&root.join(d), &mut scripts);
    }
    assert!(
        scripts.len() >= 10,
        "found only {} scripts under {}",
        scripts.len(),
        root.display()
    );
    let mut found = Vec::new();
    for s in &scripts {
        let text = std::fs::read_to_string(s).expect("a script reads");
        for line in early_exit_pipes(&text) {
            found.push(format!(
                "{}: {line}",
                s.strip_prefix(&root).unwrap_or(s).display()
            ));
        }
    }
    assert!(
        found.is_empty(),
        "these pipe into a grep that exits at its first match, which kills the writer with \
         SIGPIPE and fails the check under pipefail; capture first (grep -q PAT <<<\"$(cmd)\"):\n{}",
        found.join("\n")
    );
}

/// The captured form is right under load where the piped one is not: a writer that writes
/// one line per `write` (as busybox `--list` does) and a match near its start, 200 times with
/// three busy loops on this 2-core machine. The captured check must pass every time.
#[test]
fn the_captured_check_holds_200_times_under_load() {
    let script = r#"
set -euo pipefail
writer() { for i in $(seq 1 3000); do echo "applet$i"; done; echo httpd; }
busy() { while :; do :; done; }
busy & b1=$!; busy & b2=$!; busy & b3=$!
trap 'kill $b1 $b2 $b3 2>/dev/null' EXIT
fails=0
for i in $(seq 1 200); do
  grep -qx applet1 <<<"$(writer)" || fails=$((fails + 1))
done
echo "captured_failures=$fails"
"#;
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("captured_failures=0"), "{stdout}");
}
