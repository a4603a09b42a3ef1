#!/usr/bin/env bash
# What the chat channels cost an idle `covo run` (issue 17: <= 1 MiB of RSS): the edge build
# with every default feature, `[telegram]` and `[web]` on and idle, against an edge build
# without the `telegram` and `web` features (`--no-default-features --features hal,mcp`), in the
# same run, both on the sim board with the broker up. Telegram long-polls a stand-in Bot API on
# 127.0.0.1 (a Python server that holds each getUpdates for its timeout and answers nothing
# new), so the bot is polling, as it is on a quiet day; the dashboard listens, with no page open.
# Also prints both binaries' sizes, the cost in bytes of the two features.
#
#   tests/bench/channels-rss.sh
#   ON_BIN=path OFF_BIN=path tests/bench/channels-rss.sh   # measure given builds, build nothing
#
# Needs mosquitto, musl-tools and the rustup target $(uname -m)-unknown-linux-musl.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "channels-rss: $*" >&2; exit 1; }
musl=$(uname -m)-unknown-linux-musl
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
if [ -z "${ON_BIN:-}" ]; then
  cargo build --profile edge -p covo-gateway --bin covo --target "$musl" >&2 || fail "the edge build failed"
  ON_BIN=$target_dir/$musl/edge/covo
fi
if [ -z "${OFF_BIN:-}" ]; then
  # Its own target dir: other features, other artifacts.
  cargo build --profile edge -p covo-gateway --bin covo --target "$musl" --no-default-features \
    --features hal,mcp --target-dir "$target_dir/no-channels" >&2 || fail "the edge build without telegram and web failed"
  OFF_BIN=$target_dir/no-channels/$musl/edge/covo
fi
ON_BIN=$(realpath "$ON_BIN"); OFF_BIN=$(realpath "$OFF_BIN")
grep -q telegram <<<"$("$OFF_BIN" --version)" && fail "$OFF_BIN has the telegram feature"
settle=${SETTLE:-8}

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
# A mosquitto and the stand-in Bot API (getUpdates waits for its timeout, no update).
. tests/bench/channels.sh
start_channels

mkdir -p "$work/on" "$work/off"
web_port=$(free_port)
channels_toml ch-on "$web_port" >"$work/on/covo.toml"
printf '[mqtt]\nurl = "mqtt://127.0.0.1:%s"\ngateway_id = "ch-off"\n' "$port" >"$work/off/covo.toml"
for mode in on off; do
  b=$ON_BIN; [ "$mode" = off ] && b=$OFF_BIN
  (cd "$work/$mode" && COVO_HOME="$work/$mode/home" COVO_CONFIG= COVO_TELEGRAM_TOKEN=123:bench \
      exec "$b" --config covo.toml run >/dev/null 2>"$work/$mode/stderr") &
  pids+=($!)
done
on_pid=${pids[-2]}; off_pid=${pids[-1]}
sleep "$settle"
for mode in on off; do
  grep -q "MQTT on" "$work/$mode/stderr" || { cat "$work/$mode/stderr" >&2; fail "covo run ($mode) did not connect"; }
done
curl -sf "http://127.0.0.1:$web_port/" >/dev/null || { cat "$work/on/stderr" >&2; fail "the dashboard does not answer"; }

# Median of 5 samples a second apart, VmRSS and RssAnon in KiB.
sample() { # pid -> "rss anon"
  for _ in 1 2 3 4 5; do
    awk '/^(VmRSS|RssAnon):/ {v[$1]=$2} END {print v["VmRSS:"], v["RssAnon:"]}' "/proc/$1/status"
    sleep 1
  done | sort -n | sed -n 3p
}
read -r on_rss on_anon < <(sample "$on_pid")
read -r off_rss off_anon < <(sample "$off_pid")
mib() { echo "scale=2; $1/1024" | bc; }
echo "covo run idle, edge build, broker up: with [telegram] and [web] on $(mib "$on_rss") MiB (anon $(mib "$on_anon")); build without them $(mib "$off_rss") MiB (anon $(mib "$off_anon"))"
echo "the two channels cost $(mib $((on_rss - off_rss))) MiB of RSS (target <= 1 MiB), $(mib $((on_anon - off_anon))) MiB of it anonymous"
echo "binary: $(stat -c %s "$ON_BIN") bytes with them, $(stat -c %s "$OFF_BIN") without: $(( $(stat -c %s "$ON_BIN") - $(stat -c %s "$OFF_BIN") )) bytes for telegram + web"
