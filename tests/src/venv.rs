//! The tests' Python venv: `tests/run-all.sh` makes it from every `tests/*/requirements.txt`
//! at `$COVO_TEST_VENV` (default `target/venv-tests`). A missing part is a loud failure that
//! says how to make it, never a skip.

use std::path::PathBuf;
use std::process::Command;

/// The venv's folder.
pub fn dir() -> PathBuf {
    std::env::var_os("COVO_TEST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/venv-tests"))
}

fn how(requirements: &str) -> String {
    format!(
        "run tests/run-all.sh, or `python3 -m venv target/venv-tests && \
         target/venv-tests/bin/pip install -r {requirements}` (or set COVO_TEST_VENV)"
    )
}

/// A program of the venv (`mcp-server-time`), installed from `requirements`.
pub fn bin(name: &str, requirements: &str) -> PathBuf {
    let bin = dir().join("bin").join(name);
    assert!(
        bin.is_file(),
        "{} is missing: {}",
        bin.display(),
        how(requirements)
    );
    bin
}

/// The venv's python, checked to import each of `modules` (installed from `requirements`).
pub fn python(modules: &[&str], requirements: &str) -> PathBuf {
    let py = dir().join("bin/python");
    let ok = Command::new(&py)
        .args(["-c", &format!("import {}", modules.join(", "))])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} cannot import {}: {}",
        py.display(),
        modules.join(", "),
        how(requirements)
    );
    py
}
