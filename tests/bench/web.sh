#!/usr/bin/env bash
# The web dashboard's targets (issue 17): first paint on loopback <= 100 ms, and a sensor
# sample reaching the page <= 100 ms after it is taken. Starts `covo run` with [web] on the sim
# board (every sensor sampled each second) and measures in headless Chromium with selenium
# (tests/web/bench.py): Chrome's paint timing over repeated loads, and for each sample pushed
# to the page, its arrival time against the time the sampler stamped on it.
# BIN=path measures another build (default: the debug build, built if missing). Needs chromium,
# chromium-driver and the test venv (target/venv-tests, made by tests/run-all.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
if [ -z "${BIN:-}" ]; then
  cargo build -p covo-gateway --bin covo >/dev/null 2>&1
fi
bin=$(realpath "${BIN:-$target_dir/debug/covo}")
py=${COVO_TEST_PYTHON:-$target_dir/venv-tests/bin/python}
"$py" -c 'import selenium' 2>/dev/null || {
  echo "web.sh: $py with selenium is missing: python3 -m venv target/venv-tests && target/venv-tests/bin/pip install -r tests/web/requirements.txt" >&2; exit 1; }
dir=$(mktemp -d)
pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; [ -z "$pid" ] || wait "$pid" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
sed 's/sample_interval_secs = 60/sample_interval_secs = 1/' boards/sim.toml >"$dir/board.toml"
cat >"$dir/covo.toml" <<TOML
board = "$dir/board.toml"
[run]
telemetry_secs = 1
[web]
bind = "127.0.0.1:0"
token = "bench-token-0123456"
TOML
COVO_HOME=$dir/home "$bin" --config "$dir/covo.toml" run 2>"$dir/err.log" &
pid=$!
url=
for _ in $(seq 100); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*' "$dir/err.log" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "web.sh: the dashboard did not start:" >&2; cat "$dir/err.log" >&2; exit 1; }
echo "covo: $bin"
"$py" tests/web/bench.py --url "$url" --token bench-token-0123456 "$@"
