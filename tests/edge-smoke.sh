#!/usr/bin/env bash
# Checks an edge build of covo (README, "Building for a board"): it is one static executable
# with no program interpreter, it reads the sim board's BME280 through the dispatch pipeline,
# and its bundled SQLite stores and finds a memory across two processes.
set -euo pipefail
bin=$(realpath "${1:?usage: edge-smoke.sh path/to/covo}")
fail() { echo "edge-smoke: $*" >&2; exit 1; }

grep -q INTERP <<<"$(readelf -lW "$bin")" && fail "$bin asks for a program interpreter (it is not static)"
grep -q NEEDED <<<"$(readelf -dW "$bin")" && fail "$bin needs shared libraries: $(readelf -dW "$bin" | grep NEEDED)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
: >covo.toml
covo() { COVO_HOME="$work/home" COVO_CONFIG= "$bin" --config covo.toml "$@"; }

out=$(covo tools call sensor_read '{"sensor":"climate"}') || fail "sensor_read failed: $out"
grep -q '"quantity":"temperature"' <<<"$out" || fail "sensor_read gave no temperature: $out"
out=$(covo tools call memory_store '{"text":"the greenhouse fan is on GPIO 18","tags":["edge-smoke"]}') \
  || fail "memory_store failed: $out"
out=$(covo tools call memory_recall '{"query":"greenhouse fan"}') || fail "memory_recall failed: $out"
grep -q 'GPIO 18' <<<"$out" || fail "memory_recall did not find the stored memory: $out"
echo "edge-smoke: $bin is static ($(stat -c %s "$bin") bytes), reads the sim BME280 and keeps memories in SQLite"
