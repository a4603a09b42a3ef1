#!/usr/bin/env bash
# Runs every covo test suite. This is the README's test command and what .ci/run runs.
# On a fresh machine it installs what the suites need first; a missing part fails loudly.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
need cargo || { echo "run-all: cargo is missing: install Rust with rustup" >&2; exit 1; }

# rustfmt and clippy come with the default rustup profile; add them if this toolchain lacks them.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi

echo "== fmt";    cargo fmt --all -- --check
echo "== clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== tests";  cargo test --workspace
