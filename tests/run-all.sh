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
# The edge build (README, "Building for a board") is a static musl executable.
edge_target="$(uname -m)-unknown-linux-musl"
rustup target add thumbv7m-none-eabi thumbv6m-none-eabi "$edge_target"

# Debian packages the suites run for real: a command and the package that has it.
# qemu-system-arm runs the firmware; mosquitto (Debian puts it in /usr/sbin) is the broker of
# the MQTT tests, mosquitto_passwd makes its password files; openssl makes the TLS test's
# certificates; espeak-ng is the peer's local speech backend; musl-gcc builds the C parts
# (SQLite, ring) of the edge build; python3 runs code_run's Python snippets in the peer's tests,
# bwrap (bubblewrap) is code_run's sandbox; git, tmux and arecord (alsa-utils) back the git,
# tmux and voice tools' tests.
have() { need "$1" || [ -x "/usr/sbin/$1" ]; }
missing=()
for pair in qemu-system-arm:qemu-system-arm mosquitto:mosquitto mosquitto_passwd:mosquitto \
            openssl:openssl espeak-ng:espeak-ng musl-gcc:musl-tools python3:python3 \
            bwrap:bubblewrap git:git tmux:tmux arecord:alsa-utils; do
  have "${pair%%:*}" || missing+=("${pair#*:}")
done
# The kernel suite (tests/kernel) boots Debian's 6.1 kernel in qemu-system-x86 with busybox-static,
# builds its modules against linux-headers-amd64 and gpio-sim from linux-source-6.1 (gcc, make),
# and gives covo's HTTP client a CA bundle (ca-certificates). These are packages, not commands.
for pkg in qemu-system-x86 busybox-static linux-source-6.1 linux-headers-amd64 ca-certificates gcc make; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi
for cmd in qemu-system-arm mosquitto mosquitto_passwd openssl espeak-ng musl-gcc python3 bwrap git tmux arecord \
           qemu-system-x86_64 busybox make gcc; do
  have "$cmd" || { echo "run-all: $cmd is missing and could not be installed" >&2; exit 1; }
done
# paho-mqtt (PyPI) runs the example peer of docs/peer-protocol.md in the gateway's tests.
if ! python3 -c 'import paho.mqtt.client, paho.mqtt.reasoncodes' 2>/dev/null; then
  python3 -m pip install --quiet 'paho-mqtt>=2,<3' \
    || python3 -m pip install --quiet --break-system-packages 'paho-mqtt>=2,<3'
fi
python3 -c 'import paho.mqtt.client' \
  || { echo "run-all: paho-mqtt (python3) is missing and could not be installed" >&2; exit 1; }

echo "== fmt";      cargo fmt --all -- --check
echo "== clippy";   cargo clippy --workspace --all-targets -- -D warnings
echo "== clippy (covo-peer without default features: no code graph)"
cargo clippy -p covo-peer --no-default-features --all-targets -- -D warnings
echo "== firmware"
(cd firmware/qemu-lm3s6965 && cargo fmt -- --check && cargo build --release)
(cd firmware/rp2040 && cargo fmt -- --check && cargo build --release)
echo "== tests";    cargo test --workspace
echo "== edge build ($edge_target): static, and it runs"
cargo build --profile edge -p covo-gateway --bin covo --target "$edge_target"
bash tests/edge-smoke.sh "${CARGO_TARGET_DIR:-target}/$edge_target/edge/covo"
# It also runs the firmware image built above in qemu-system-arm, on the guest's second UART.
echo "== kernel suite: the Linux backends against Debian's 6.1 kernel in QEMU (tests/kernel)"
bash tests/kernel/run.sh "${CARGO_TARGET_DIR:-target}/$edge_target/edge/covo"
