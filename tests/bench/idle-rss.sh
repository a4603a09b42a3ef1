#!/usr/bin/env bash
# The idle footprint with every channel on (issue 27, item 4; target <= 5 MiB each), for one or
# more builds measured side by side in the same run:
# - `covo run` on the sim board with MQTT connected to a real mosquitto, `[telegram]`
#   long-polling a stand-in Bot API (tests/bench/bot-api.py) and `[web]` listening (its page
#   fetched once, to check that it answers), idle;
# - `covo mcp` (stdio) after `initialize` and `notifications/initialized`, idle.
# Each figure is the median of 5 samples a second apart of VmRSS (with RssAnon and RssFile).
#
#   tests/bench/idle-rss.sh BIN [BIN...]          # e.g. an old build and a new one
#   RSS_RECORD=FILE tests/bench/idle-rss.sh BIN   # also writes BIN's figures to FILE
#   RSS_GATE=FILE tests/bench/idle-rss.sh BIN     # fails when a figure is over FILE's by > 1 MiB
#
# gateway/link/x86_64-unknown-linux-musl.rss is recorded by tests/bench/link-order.sh right
# after it writes the link order; CI gates the x86_64 edge build on it (tests/run-all.sh), so a
# link order that has gone stale enough to cost more than 1 MiB fails the run.
# Needs mosquitto, curl and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "idle-rss: $*" >&2; exit 1; }
[ $# -gt 0 ] || fail "usage: tests/bench/idle-rss.sh BIN [BIN...]"
bins=()
for b in "$@"; do
  [ -x "$b" ] || fail "$b is not an executable"
  bins+=("$(realpath "$b")")
done
[ -z "${RSS_RECORD:-}${RSS_GATE:-}" ] || [ ${#bins[@]} = 1 ] || fail "RSS_RECORD and RSS_GATE take one build"
[ -z "${RSS_GATE:-}" ] || [ -f "$RSS_GATE" ] || fail "$RSS_GATE is missing (tests/bench/link-order.sh writes it)"
settle=${SETTLE:-8}

work=$(mktemp -d)
pids=() mcp_fds=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for fd in "${mcp_fds[@]}"; do exec {fd}>&-; done
  rm -rf "$work"
}
trap cleanup EXIT
. tests/bench/channels.sh
start_channels

run_pids=() mcp_pids=() mcp_fds=() web_ports=()
for i in "${!bins[@]}"; do
  d=$work/b$i
  mkdir -p "$d/run" "$d/mcp"
  web_ports+=("$(free_port)")
  channels_toml "idle-$i" "${web_ports[$i]}" >"$d/run/covo.toml"
  (cd "$d/run" && COVO_HOME="$d/run/home" COVO_CONFIG= COVO_TELEGRAM_TOKEN=123:bench \
      exec "${bins[$i]}" --config covo.toml run >/dev/null 2>"$d/run/stderr") &
  pids+=($!); run_pids+=($!)
  # covo mcp reads its requests from a FIFO that this script holds open, so it stays up, idle.
  mkfifo "$d/mcp/in"
  (cd "$d/mcp" && COVO_HOME="$d/mcp/home" COVO_CONFIG= exec "${bins[$i]}" mcp <"$d/mcp/in" >"$d/mcp/out" 2>"$d/mcp/stderr") &
  pids+=($!); mcp_pids+=($!)
  exec {fd}>"$d/mcp/in"
  printf '%s\n%s\n' \
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle-rss","version":"0"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&"$fd"
  mcp_fds+=("$fd")
done
sleep "$settle"
for i in "${!bins[@]}"; do
  d=$work/b$i
  grep -q "MQTT on" "$d/run/stderr" || { cat "$d/run/stderr" >&2; fail "covo run (${bins[$i]}) did not connect to the broker"; }
  curl -sf "http://127.0.0.1:${web_ports[$i]}/" >/dev/null || { cat "$d/run/stderr" >&2; fail "the dashboard of ${bins[$i]} does not answer"; }
  grep -q '"id":0' "$d/mcp/out" || { cat "$d/mcp/stderr" >&2; fail "covo mcp (${bins[$i]}) did not answer initialize"; }
done
sleep 2

sample() { # pid -> "rss anon file" in KiB: the median VmRSS of 5 samples a second apart
  for _ in 1 2 3 4 5; do
    awk '/^(VmRSS|RssAnon|RssFile):/ {v[$1]=$2} END {print v["VmRSS:"], v["RssAnon:"], v["RssFile:"]}' "/proc/$1/status"
    sleep 1
  done | sort -n | sed -n 3p
}
mib() { echo "scale=2; $1/1024" | bc; }
for i in "${!bins[@]}"; do
  read -r run_rss run_anon run_file < <(sample "${run_pids[$i]}")
  read -r mcp_rss mcp_anon mcp_file < <(sample "${mcp_pids[$i]}")
  echo "${bins[$i]} ($(stat -c %s "${bins[$i]}") bytes)"
  printf '  covo run idle, MQTT + telegram + web on: RSS %5.2f MiB (anon %5.2f, file %5.2f)  target <= 5 MiB\n' \
    "$(mib "$run_rss")" "$(mib "$run_anon")" "$(mib "$run_file")"
  printf '  covo mcp idle (stdio, initialized):     RSS %5.2f MiB (anon %5.2f, file %5.2f)  target <= 5 MiB\n' \
    "$(mib "$mcp_rss")" "$(mib "$mcp_anon")" "$(mib "$mcp_file")"
  if [ -n "${RSS_RECORD:-}" ]; then
    printf '# Idle RSS in KiB of this target'"'"'s edge build when its link order was recorded\n# (tests/bench/link-order.sh, measured by tests/bench/idle-rss.sh). CI fails above these + 1024.\nrun_kib=%s\nmcp_kib=%s\n' \
      "$run_rss" "$mcp_rss" >"$RSS_RECORD"
    echo "idle-rss: recorded in $RSS_RECORD"
  fi
  if [ -n "${RSS_GATE:-}" ]; then
    rec_run=$(sed -n 's/^run_kib=//p' "$RSS_GATE"); rec_mcp=$(sed -n 's/^mcp_kib=//p' "$RSS_GATE")
    [ -n "$rec_run" ] && [ -n "$rec_mcp" ] || fail "$RSS_GATE has no run_kib or mcp_kib"
    [ "$run_rss" -le $((rec_run + 1024)) ] \
      || fail "covo run idles at $run_rss KiB, over the $rec_run KiB recorded with the link order by more than 1 MiB: the link order is stale (bash tests/bench/link-order.sh)"
    [ "$mcp_rss" -le $((rec_mcp + 1024)) ] \
      || fail "covo mcp idles at $mcp_rss KiB, over the $rec_mcp KiB recorded with the link order by more than 1 MiB: the link order is stale (bash tests/bench/link-order.sh)"
    echo "idle-rss: within 1 MiB of $RSS_GATE (run $run_rss <= $((rec_run + 1024)) KiB, mcp $mcp_rss <= $((rec_mcp + 1024)) KiB)"
  fi
done
