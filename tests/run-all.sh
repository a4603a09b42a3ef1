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

# The firmware images build for their microcontrollers; the QEMU one runs in the tests.
rustup target add thumbv7m-none-eabi thumbv6m-none-eabi
if ! need qemu-system-arm; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq qemu-system-arm
fi
need qemu-system-arm || { echo "run-all: qemu-system-arm is missing and could not be installed" >&2; exit 1; }

# The MQTT peer tests run a real mosquitto on 127.0.0.1 (Debian puts it in /usr/sbin).
if ! need mosquitto && [ ! -x /usr/sbin/mosquitto ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq mosquitto
fi
need mosquitto || [ -x /usr/sbin/mosquitto ] || { echo "run-all: mosquitto is missing and could not be installed" >&2; exit 1; }

# The peer's local speech backend is tested for real.
if ! need espeak-ng; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq espeak-ng
fi
need espeak-ng || { echo "run-all: espeak-ng is missing and could not be installed" >&2; exit 1; }

echo "== fmt";      cargo fmt --all -- --check
echo "== clippy";   cargo clippy --workspace --all-targets -- -D warnings
echo "== clippy (covo-gateway without default features)"
cargo clippy -p covo-gateway --no-default-features --all-targets -- -D warnings
echo "== firmware"
(cd firmware/qemu-lm3s6965 && cargo fmt -- --check && cargo build --release)
(cd firmware/rp2040 && cargo fmt -- --check && cargo build --release)
echo "== tests";    cargo test --workspace
