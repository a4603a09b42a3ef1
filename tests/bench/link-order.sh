#!/usr/bin/env bash
# Regenerates gateway/link/x86_64-unknown-linux-musl.order: the functions the static edge build
# runs when it starts and idles, which gateway/build.rs has rust-lld place first. Run it after
# changes that move much code (a new dependency, a new subsystem in `covo run`); a stale file is
# harmless but lets idle RSS creep back up (tests/bench/run-rss.sh shows it).
#
# What it records, under valgrind's callgrind (instruction-level, so nothing is sampled away):
# - `covo run` on the sim board with every channel on: start-up (MQTT connect to a real
#   mosquitto, Home Assistant discovery, `[telegram]` long-polling a stand-in Bot API
#   (tests/bench/bot-api.py), `[web]` serving its page once), then, recorded apart, IDLE_SECS
#   (default 70: a telemetry tick, schedule polls, long polls, keep-alives) of idle, then SIGINT;
# - `covo mcp` (stdio): initialize, tools/list, idle, then end of input;
# - the cold CLI paths: `covo tools list`, `covo tools call sensor_read`, `covo --version`.
# Then it measures the ordered build's idle RSS with every channel on and `covo mcp`'s
# (tests/bench/idle-rss.sh) into gateway/link/$musl.rss, the figures CI holds the build to.
# Callgrind names functions from the build's symbols: the edge build is relinked keeping them
# (COVO_LINK_KEEP_SYMBOLS=1; gateway/build.rs strips it at link time otherwise, so the symbol
# names are those of the shipped build), then relinked stripped and ordered at the end.
#
#   bash tests/bench/link-order.sh        (needs valgrind, mosquitto, musl-gcc, curl)
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "link-order: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is missing (apt-get install -y valgrind)"
musl=x86_64-unknown-linux-musl
[ "$(uname -m)" = x86_64 ] || fail "the order file is for $musl; run this on an x86_64 host"
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
bin=$target_dir/$musl/edge/covo
out=gateway/link/$musl.order
rss=gateway/link/$musl.rss
idle_secs=${IDLE_SECS:-70}

work=$(mktemp -d)
COVO_LINK_KEEP_SYMBOLS=1 COVO_LINK_ORDER=off \
  cargo build --profile edge -p covo-gateway --bin covo --target "$musl" >&2
nm "$bin" | grep -c ' main$' >/dev/null || fail "$bin has no symbols"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
. tests/bench/channels.sh
start_channels
web_port=$(free_port)
channels_toml link-order "$web_port" >"$work/covo.toml"
grind() { # name args...
  local name=$1; shift
  (cd "$work" && COVO_HOME="$work/home" COVO_CONFIG= COVO_TELEGRAM_TOKEN=123:link-order \
    valgrind --tool=callgrind --demangle=no \
    --callgrind-out-file="$work/$name.cg" "$bin" --config covo.toml "$@" >/dev/null 2>>"$work/$name.err")
}
grind run run &
run_pid=$!
sleep 20
curl -sf "http://127.0.0.1:$web_port/" >/dev/null || { cat "$work/run.err" >&2; fail "the dashboard does not answer"; }
sleep 3
# Start-up ends here: what callgrind counted so far goes to run.cg.1, and counting starts again
# for the idle, which goes to run.cg.2 (the shutdown after SIGINT to run.cg).
grind_pid=$(pgrep -f "callgrind-out-file=$work/run.cg" | head -1) && [ -n "$grind_pid" ] || fail "callgrind is not running covo run"
callgrind_control --dump=startup "$grind_pid" >/dev/null
sleep "$idle_secs"
callgrind_control --dump=idle "$grind_pid" >/dev/null
pkill -INT -f "callgrind-out-file=$work/run.cg" || true
wait "$run_pid" || true
grep -q "MQTT on" "$work/run.err" || { cat "$work/run.err" >&2; fail "covo run did not connect to the broker"; }
[ -s "$work/run.cg.1" ] && [ -s "$work/run.cg.2" ] || { ls "$work" >&2; fail "callgrind wrote no start-up or idle dump"; }
# covo mcp's idle: initialize, tools/list, then input held open a while and closed.
{ printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"link-order","version":"0"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
  sleep 15; } | grind mcp mcp
grind list tools list
grind call tools call sensor_read '{"sensor":"climate"}'
grind version --version

# Every function callgrind named, first seen first: `covo run`'s idle first, then its start-up
# and shutdown, then `covo mcp`, then the CLI. `covo run` unmaps its code every minute
# (gateway/src/trim.rs), so what stays mapped is the idle's code: packed together at the front,
# it fills a few 64 KiB windows instead of touching one in each of the hot region's.
# Callgrind names a function once per process, at its first mention (`fn=(12) name`), and by
# number after (`fn=(12)`), also in later dumps: names() resolves a process's files in the order
# they were written and lists every function each one mentions in FILE.names.
names() {
  awk '/^c?fn=\([0-9]+\)/ {
    id = $0; sub(/^c?fn=\(/, "", id); name = id; sub(/\).*$/, "", id); sub(/^[0-9]+\) ?/, "", name)
    if (name != "") n[id] = name
    if (n[id] != "") print n[id] > (FILENAME ".names")
  }' "$@"
}
names "$work/run.cg.1" "$work/run.cg.2" "$work/run.cg"
for f in mcp list call version; do names "$work/$f.cg"; done
mkdir -p "$(dirname "$out")"
cat "$work/run.cg.2.names" "$work/run.cg.1.names" "$work/run.cg.names" "$work/mcp.cg.names" \
    "$work/list.cg.names" "$work/call.cg.names" "$work/version.cg.names" \
  | grep -v '^0x' | grep -v '^(below main)$' | awk '!seen[$0]++' >"$out"
echo "link-order: $(sort -u "$work/run.cg.2.names" | wc -l) functions ran in the idle" >&2
echo "link-order: $(wc -l <"$out") functions in $out" >&2

# Back to the stripped, ordered build.
cargo build --profile edge -p covo-gateway --bin covo --target "$musl" >&2
echo "link-order: relinked $bin ($(stat -c %s "$bin") bytes)" >&2
RSS_RECORD=$rss bash tests/bench/idle-rss.sh "$bin"
