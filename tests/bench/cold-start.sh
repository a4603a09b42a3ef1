#!/usr/bin/env bash
# Cold start of `covo tools list` (target: <= 10 ms), measured against a baseline process start
# (`/bin/true`) in the same run, so a noisy machine shows up in both numbers.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p covo-gateway --bin covo >/dev/null 2>&1
bin=target/release/covo
runs=${RUNS:-200}
home=$(mktemp -d); trap 'rm -rf "$home"' EXIT
export COVO_HOME=$home
time_loop() { # prints mean milliseconds per run of "$@"
  local start end
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do "$@" >/dev/null; done
  end=$(date +%s%N)
  echo "scale=3; ($end - $start) / 1000000 / $runs" | bc
}
"$bin" tools list >/dev/null # warm the page cache
base=$(time_loop /bin/true)
list=$(time_loop "$bin" tools list)
json=$(time_loop "$bin" tools list --json)
prompt=$(time_loop "$bin" tools prompt --platform gateway)
echo "cold start over $runs runs: /bin/true ${base} ms, covo tools list ${list} ms, --json ${json} ms, tools prompt --platform gateway ${prompt} ms"
echo "covo tools list minus process baseline: $(echo "scale=3; $list - $base" | bc) ms (target <= 10 ms)"
echo "binary size: $(stat -c %s "$bin") bytes"
