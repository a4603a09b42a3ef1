#!/usr/bin/env bash
# Regenerates docs/benchmarks.md: every figure comes from a command this script runs, and the
# page shows that command and when it ran. Nothing in the page is typed by hand.
#
#   tests/bench/report.sh             # criterion at its default measurement times
#   QUICK=1 tests/bench/report.sh     # criterion with short warm-up and measurement times
#   OUT=/tmp/b.md tests/bench/report.sh
#
# What it runs (each figure's row names the command):
# - prompt tokens per platform and tool_search recall: the covo-tests integration tests
#   prompt_budget:: and search_recall:: with --nocapture (they print the figures);
# - tool_search latency, dispatch overhead, agent overhead per turn, MCU link vs wire time: the
#   criterion benches (core/benches/tool_search.rs, gateway/benches/{hardware,agent_turn}.rs,
#   hal-tools/benches/mcu_link.rs); medians read from criterion's estimates.json;
# - MQTT round trip vs raw MQTT: peer/benches/peer.rs against a real mosquitto on loopback;
# - binary sizes, idle RSS, cold start: tests/bench/footprint.sh on the host edge build (and the
#   aarch64 build if tests/cross/build.sh made one; this script does not cross-build);
# - firmware sizes: llvm-size on the release images of firmware/qemu-lm3s6965 and firmware/rp2040;
# - the dashboard's first paint and sample-to-page latency: tests/bench/web.sh (headless
#   chromium with selenium from the test venv) on the host edge build.
# Needs mosquitto, musl-tools, llvm (llvm-size), the thumbv6m/thumbv7m targets. Builds what it
# measures first; the measuring itself took 6 minutes on 2 shared cores (QUICK=1 shortens the
# criterion part).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
fail() { echo "report: $*" >&2; exit 1; }
target_dir=${CARGO_TARGET_DIR:-$repo/target}
export CARGO_TARGET_DIR=$target_dir
out=${OUT:-$repo/docs/benchmarks.md}
musl=$(uname -m)-unknown-linux-musl
for cmd in cargo python3 llvm-size bc; do
  command -v "$cmd" >/dev/null || fail "$cmd is missing"
done
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || fail "mosquitto is missing (apt-get install -y mosquitto)"
command -v musl-gcc >/dev/null || fail "musl-gcc is missing (apt-get install -y musl-tools)"
if [ "${QUICK:-0}" = 1 ]; then
  crit=(-- --warm-up-time 0.5 --measurement-time 1)
else
  crit=()
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=$work/rows        # summary rows: figure | value | target | command | when
raw=$work/raw          # the commands' relevant output
: >"$rows"; : >"$raw"
now() { date -u '+%Y-%m-%d %H:%M UTC'; }

# measure NAME FILTER CMD...: runs CMD (stdout and stderr to $work/NAME.log), notes when, and
# appends the lines matching the extended regex FILTER to the raw section under the command.
measure() {
  local name=$1 filter=$2
  shift 2
  local when
  when=$(now)
  echo "report: $name: $*" >&2
  if ! "$@" >"$work/$name.log" 2>&1; then
    tail -30 "$work/$name.log" >&2
    fail "$name failed: $*"
  fi
  printf '%s' "$when" >"$work/$name.when"
  printf '%s' "$*" >"$work/$name.cmd"
  {
    printf '\n### %s\n\n`%s` (%s)\n\n```\n' "$name" "$(sed "s|$repo/||g" <<<"$*")" "$when"
    grep -E "$filter" "$work/$name.log" | sed "s/[[:space:]]*\$//; s|$repo/||g" || true
    printf '```\n'
  } >>"$raw"
}
# row NAME FIGURE VALUE TARGET: one summary row, with NAME's command and time.
row() {
  printf '| %s | %s | %s | `%s` | %s |\n' "$2" "$3" "$4" "$(sed "s|$repo/||g" "$work/$1.cmd")" "$(cat "$work/$1.when")" >>"$rows"
}
# pick NAME REGEX: NAME's output from the first match of REGEX to the end of its line, or fail
# (libtest may print "test NAME ... " before a test's own output on the same line).
pick() {
  grep -oE -m1 "$2.*" "$work/$1.log" || fail "$1: no line matching /$2/ in its output ($work/$1.log)"
}
# crit_median FULL_ID: criterion's median in microseconds for a benchmark measured in this run.
crit_median() {
  python3 - "$target_dir/criterion" "$work/start" "$1" <<'PY'
import json, os, sys
root, start, want = sys.argv[1], os.path.getmtime(sys.argv[2]), sys.argv[3]
for d, _, files in os.walk(root):
    if os.path.basename(d) == "new" and "benchmark.json" in files:
        b = json.load(open(os.path.join(d, "benchmark.json")))
        est = os.path.join(d, "estimates.json")
        if b["full_id"] == want and os.path.getmtime(est) >= start:
            print(f'{json.load(open(est))["median"]["point_estimate"] / 1000:.2f}')
            sys.exit(0)
sys.exit(f"report: no criterion result for {want!r} from this run under {root}")
PY
}
us() { printf '%s µs' "$1"; }
minus() { echo "scale=2; $1 - $2" | bc | sed 's/^\./0./; s/^-\./-0./'; }

# ---- builds (not timed) ----
echo "report: building (edge binary, firmware, benches, tests)" >&2
cargo build --profile edge -p covo-gateway --bin covo --target "$musl" >&2
(cd firmware/qemu-lm3s6965 && cargo build --release >&2)
(cd firmware/rp2040 && cargo build --release >&2)
# One package per invocation, as measured below: cargo unifies features across the packages of
# one invocation, so building them together would build binaries the measuring does not run.
for b in covo-core:tool_search covo-gateway:hardware covo-gateway:agent_turn \
         covo-hal-tools:mcu_link covo-peer:peer; do
  cargo bench --no-run -q -p "${b%%:*}" --bench "${b#*:}" >&2
done
cargo test --no-run -p covo-tests --test integration >&2
touch "$work/start"
started=$(date +%s)

# ---- prompt tokens per platform ----
measure prompt '(platform|edge payload)' \
  cargo test -p covo-tests --test integration prompt_budget:: -- --nocapture --test-threads 1
while IFS= read -r l; do
  # platform gateway (edge): 40 tools, 2731 o200k tokens (openai), 2650 (anthropic), 9999 bytes
  p=$(sed -E 's/^platform (.*): ([0-9]+) tools, ([0-9]+) o200k tokens \(openai\), ([0-9]+) \(anthropic\), ([0-9]+) bytes$/\1|\2|\3|\4|\5/' <<<"$l")
  IFS='|' read -r name n t_o t_a bytes <<<"$p"
  target=""; case "$name" in gateway*) target="≤ 3000 tokens" ;; esac
  row prompt "prompt tokens, platform $name" "$t_o (OpenAI format), $t_a (Anthropic); $n tools, $bytes bytes" "$target"
done < <(grep -oE 'platform [^:]+: [0-9]+ tools, .* bytes' "$work/prompt.log")

# ---- tool_search recall ----
measure recall 'tool_search (dev|extra|fresh|first|second)' \
  cargo test -p covo-tests --test integration search_recall:: -- --nocapture --test-threads 1
for set in "dev set" "extra set" "fresh tuning set" "fresh validation set" \
           "first-round held-out set" "second-round tuning set" "second-round aside sets"; do
  l=$(pick recall "tool_search $set:")
  case $set in
    "dev set") target="recall@5 ≥ 0.95" ;;
    "extra set") target="recall@5 ≥ 0.85" ;;
    "second-round aside sets") target="recall@1 ≥ 0.85, recall@5 ≥ 0.98 (issue 18; never tuned on)" ;;
    *) target="" ;;
  esac
  row recall "tool_search recall, $set" "$(sed -E 's/^tool_search [^:]+: //' <<<"$l")" "$target"
done

# ---- tool_search latency ----
measure tool_search '^(tool_search|.*time:)' cargo bench -q -p covo-core --bench tool_search "${crit[@]}"
l=$(pick tool_search '^tool_search over')
row tool_search "tool_search latency, p50 / p99 over the phrasing-set queries" \
  "$(sed -E 's/.*: (p50 [0-9.]+ µs), (p99 [0-9.]+ µs).*\(empty-query baseline (p50 [0-9.]+ µs).*/\1, \2 (empty-query baseline \3)/' <<<"$l")" "p99 ≤ 100 µs"
row tool_search "tool_search latency, criterion median per query" \
  "$(us "$(crit_median 'tool_search/full/phrasing-set query')")" ""

# ---- dispatch overhead (sensor_read on the sim) ----
measure hardware '(time:|^sensor_read|^i2c)' cargo bench -q -p covo-gateway --bench hardware "${crit[@]}"
for store in "in-memory store" "SQLite on disk"; do
  g="sensor_read (sim BME280, $store)"
  drv=$(crit_median "$g/driver on the sim device")
  body=$(crit_median "$g/tool body: driver + log + watches")
  full=$(crit_median "$g/full pipeline call")
  row hardware "sensor_read dispatch overhead ($store): full pipeline call − tool body" \
    "$(us "$(minus "$full" "$body")") (pipeline $full µs, tool body $body µs)" "≤ 10 µs"
  row hardware "sensor_read tool body beyond the driver ($store): logging the reading + watches" \
    "$(us "$(minus "$body" "$drv")") (driver on the sim device $drv µs)" ""
done
row hardware "i2c_scan of a full bus on the sim" "$(us "$(crit_median 'i2c/i2c_scan of a full bus (0x08-0x77) on the sim')")" ""

# ---- agent overhead per turn ----
measure agent_turn '(time:|^agent turn)' cargo bench -q -p covo-gateway --bench agent_turn "${crit[@]}"
direct=$(crit_median "agent turn/direct answer")
tool=$(crit_median "agent turn/one tool call then answer")
alone=$(crit_median "agent turn/the tool alone (subtract)")
row agent_turn "agent overhead per turn, direct answer (no persistence)" "$(us "$direct")" "≤ 200 µs"
row agent_turn "agent overhead per turn, one tool call then answer (two model calls), minus the tool" \
  "$(us "$(minus "$tool" "$alone")") (turn $tool µs, tool alone $alone µs)" "≤ 200 µs"
pdirect=$(crit_median "agent turn/direct answer, persisted (SQLite on disk)")
ptool=$(crit_median "agent turn/one tool call then answer, persisted (SQLite on disk)")
palone=$(crit_median "agent turn/the tool alone, SQLite on disk (subtract)")
row agent_turn "agent overhead per turn, persisted to SQLite on disk: direct / tool call minus the tool" \
  "$(us "$pdirect") / $(us "$(minus "$ptool" "$palone")")" ""

# ---- MQTT round trip vs raw ----
measure peer '^(QoS|of which|throughput)' cargo bench -q -p covo-peer --bench peer
l=$(pick peer '^QoS 1 round trip p50')
row peer "MQTT remote tool call round trip ÷ raw MQTT ping-pong (QoS 1, p50)" \
  "$(sed -E 's/.*ratio ([0-9.]+).*/\1/' <<<"$l") ($(sed -E 's/^QoS 1 round trip p50: (.*): ratio.*/\1/' <<<"$l"))" "≤ 1.5"
l=$(pick peer '^throughput')
row peer "remote tool calls with 64 in flight" "$(sed -E 's/.* = ([0-9]+ calls\/s).*/\1/' <<<"$l")" "≥ 5,000 calls/s"

# ---- MCU link vs wire time ----
measure mcu_link '(^mcu|time:)' cargo bench -q -p covo-hal-tools --bench mcu_link "${crit[@]}"
l=$(pick mcu_link '^mcu GpioRead round trip')
row mcu_link "MCU link (GpioRead on the firmware's host sim over a pty) ÷ wire time at 115200 baud" \
  "$(sed -E 's/.*would take ≈ ([0-9.]+)× wire time.*/\1/' <<<"$l") (p50 $(sed -E 's/.*p50 ([0-9]+ µs) for ([0-9]+ bytes).*wire time at 115200 baud ([0-9]+ µs).*/\1 of software for \2, wire \3/' <<<"$l"))" "≤ 1.2"

# ---- binary sizes, RSS, cold start ----
host_bin=$target_dir/$musl/edge/covo
aarch64_bin=$target_dir/cross/aarch64-unknown-linux-musl/edge/covo
[ -x "$aarch64_bin" ] || aarch64_bin=skip
measure footprint '.' env HOST_BIN="$host_bin" AARCH64_BIN="$aarch64_bin" bash tests/bench/footprint.sh
l=$(pick footprint '^host edge')
row footprint "binary size, host edge build ($musl, stripped)" "$(sed -E 's/.* = +([0-9.]+ MiB).*/\1/' <<<"$l") ($(awk '{for(i=1;i<=NF;i++) if ($(i+1)=="bytes") print $i}' <<<"$l") bytes)" "≤ 10 MiB"
l=$(pick footprint '^aarch64-unknown-linux-musl')
case "$l" in
  *"not built"*) v="not built; run tests/cross/build.sh aarch64" ;;
  *) v="$(sed -E 's/.* = +([0-9.]+ MiB).*/\1/' <<<"$l")" ;;
esac
row footprint "binary size, aarch64-unknown-linux-musl (Pi, stripped)" "$v" "≤ 8 MiB"
l=$(pick footprint '^covo run \(edge build\) with MQTT')
row footprint "idle RSS of \`covo run\`, edge build, sim board, broker connected" \
  "$(sed -E 's/.*with MQTT: ([0-9.]+ MiB).*MQTT costs ([0-9.]+ MiB).*/\1 (MQTT costs \2)/; s/([ (])\./\10./g' <<<"$l")" "≤ 6.5 MiB now, then ≤ 5 MiB (issue 15)"
measure idle_rss 'covo (run|mcp) idle' bash tests/bench/idle-rss.sh "$host_bin"
rss_cell() { sed -E 's/.*RSS +([0-9.]+) MiB \(anon +([0-9.]+), file +([0-9.]+)\).*/\1 MiB (anon \2, file \3)/'; }
row idle_rss "idle RSS of \`covo run\`, edge build, MQTT, [telegram] and [web] on" \
  "$(pick idle_rss 'covo run idle' | rss_cell)" "≤ 5 MiB (issue 27)"
row idle_rss "idle RSS of \`covo mcp\` (stdio, initialized), edge build" \
  "$(pick idle_rss 'covo mcp idle' | rss_cell)" "≤ 5 MiB (issue 27)"
l=$(pick footprint '^covo tools list: ')
row footprint "cold start of \`covo tools list\` (median; edge build)" \
  "$(sed -E 's/^covo tools list: ([0-9.]+ ms) absolute \([^)]*\), ([0-9.]+ ms) over \/bin\/true, ([0-9.]+x) .*/\1 (\2 over \/bin\/true, \3 \/bin\/true)/' <<<"$l")" "≤ 5 ms"

# ---- the web dashboard ----
measure web 'paint|DOMContentLoaded|sample' env BIN="$host_bin" bash tests/bench/web.sh
sum() { sed -E 's/^[^:]+: n=([0-9]+) median=([0-9.]+ ms) p95=([0-9.]+ ms) max=([0-9.]+ ms).*/median \2, p95 \3, max \4 (n = \1)/'; }
row web "dashboard first paint on loopback (Chrome paint timing, from a blank tab)" \
  "$(pick web '^first paint:' | sum); a one-line page from another loopback server: $(pick web 'baseline: first paint' | sum)" "≤ 100 ms"
row web "dashboard: a sensor sample on the page after its timestamp" "$(pick web '^sample -> page:' | sum)" "≤ 100 ms"

# ---- firmware sizes ----
fw_q=$target_dir/thumbv7m-none-eabi/release/covo-fw-qemu
fw_p=$target_dir/thumbv6m-none-eabi/release/covo-fw-rp2040
measure firmware '.' llvm-size "$fw_q" "$fw_p"
while read -r text data bss _ _ file; do
  [ "$text" = text ] && continue
  row firmware "firmware $(basename "$file"): flash (text + data) / static RAM (data + bss)" \
    "$(( (text + data) )) B = $(echo "scale=1; ($text + $data) / 1024" | bc) KiB / $((data + bss)) B" "≤ 48 KiB flash, ≤ 16 KiB RAM"
done <"$work/firmware.log"

# The "Local models" section is written by tests/bench/llama.py (--write; about 25 minutes
# against a real llama.cpp server); a regeneration here keeps it as it is.
llama_section=$(sed -n '/<!-- llama.py begin -->/,/<!-- llama.py end -->/p' "$out" 2>/dev/null || true)
# Likewise the "Fleets" section, from tests/fleet/bench.py --write (1,000 gateways).
fleet_section=$(sed -n '/<!-- fleet\/bench.py begin -->/,/<!-- fleet\/bench.py end -->/p' "$out" 2>/dev/null || true)
# And its clustered-broker section (FLEET_BROKER=cluster).
cluster_section=$(sed -n '/<!-- fleet\/bench.py cluster begin -->/,/<!-- fleet\/bench.py cluster end -->/p' "$out" 2>/dev/null || true)
secs=$(( $(date +%s) - started ))
rev=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- . ':!docs/benchmarks.md' || rev="$rev with uncommitted changes"
{
  cat <<EOF
# Benchmarks

Generated by \`tests/bench/report.sh\`$([ "${QUICK:-0}" = 1 ] && echo ' with `QUICK=1` (criterion: 0.5 s warm-up, 1 s measurement)') at commit $rev,
on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) when it finished;
the measuring took ${secs} s. Every figure comes from the command in its row, run at the time shown; nothing on this
page is typed by hand: run \`tests/bench/report.sh\` to regenerate it (\`QUICK=1\` for short criterion runs).
Absolute times on a shared machine are noisy, which is why most figures are ratios or differences against a
baseline measured in the same run (\`/bin/true\`, \`sleep\`, a raw MQTT ping-pong, the wire time).

| figure | value | target | command | measured |
|---|---|---|---|---|
EOF
  cat "$rows"
  cat <<'EOF'

## What the commands printed

The lines of each command's output the figures above come from.
EOF
  cat "$raw"
  if [ -n "$llama_section" ]; then
    printf '\n%s\n' "$llama_section"
  fi
  if [ -n "$fleet_section" ]; then
    printf '\n%s\n' "$fleet_section"
  fi
  if [ -n "$cluster_section" ]; then
    printf '\n%s\n' "$cluster_section"
  fi
} >"$out"
echo "report: wrote $out (${secs} s of measuring)" >&2
