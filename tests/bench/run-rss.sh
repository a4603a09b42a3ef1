#!/usr/bin/env bash
# Idle memory of `covo run` on the sim board with the broker connected (target: RSS <= 6.5 MiB,
# on the way to 5 MiB).
# It measures the edge build (README, "Building for a board": static musl, non-PIE) and, in the
# same run, `covo run` with MQTT off, the default glibc build, and `sleep` as a process baseline.
# Needs mosquitto, musl-gcc (apt-get install -y musl-tools) and the rustup target
# $(uname -m)-unknown-linux-musl. Prints RSS split into anonymous (heap, stacks) and file-backed
# (the mapped binary and libraries) pages, from /proc/PID/status.
set -euo pipefail
cd "$(dirname "$0")/../.."
# BIN=path measures another build of covo instead of the edge build; DEFAULT_BIN=path another
# build instead of the default one. BEFORE_BIN=path also measures an older edge build (a
# checkout of an earlier commit) in the same run, for a before/after comparison.
musl=$(uname -m)-unknown-linux-musl
if [ -z "${BIN:-}" ]; then
  command -v musl-gcc >/dev/null || { echo "run-rss: musl-gcc is missing (apt-get install -y musl-tools)" >&2; exit 1; }
  grep -qx "$musl" <<<"$(rustup target list --installed)" || rustup target add "$musl"
  cargo build --profile edge -p covo-gateway --bin covo --target "$musl" >/dev/null 2>&1 \
    || { echo "run-rss: the edge build failed: cargo build --profile edge -p covo-gateway --target $musl" >&2; exit 1; }
fi
skip_default=; [ "${DEFAULT_BIN:-}" = skip ] && { skip_default=1; DEFAULT_BIN=/bin/true; }
if [ -z "${DEFAULT_BIN:-}" ]; then
  cargo build --release -p covo-gateway --bin covo >/dev/null 2>&1
fi
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
bin=$(realpath "${BIN:-$target_dir/$musl/edge/covo}")
default_bin=$(realpath "${DEFAULT_BIN:-$target_dir/release/covo}")
[ -z "${BEFORE_BIN:-}" ] || BEFORE_BIN=$(realpath "$BEFORE_BIN")
mosq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
[ -x "$mosq" ] || { echo "run-rss: mosquitto is missing (apt-get install -y mosquitto)" >&2; exit 1; }
settle=${SETTLE:-5}

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n' "$port" >"$work/mosquitto.conf"
"$mosq" -c "$work/mosquitto.conf" 2>/dev/null &
pids+=($!)

rss() { # "VmRSS RssAnon RssFile" in KiB for a pid
  awk '/^(VmRSS|RssAnon|RssFile):/ {v[$1]=$2} END {print v["VmRSS:"], v["RssAnon:"], v["RssFile:"]}' "/proc/$1/status"
}
report() { # label pid
  read -r total anon file < <(rss "$2")
  printf '%-34s RSS %6.2f MiB  (anon %5.2f, file %5.2f)\n' "$1" \
    "$(echo "scale=2; $total/1024" | bc)" "$(echo "scale=2; $anon/1024" | bc)" "$(echo "scale=2; $file/1024" | bc)" >&2
  echo "$total"
}

mkdir -p "$work/off" "$work/on"
printf '[mqtt]\nurl = "mqtt://127.0.0.1:%s"\ngateway_id = "rss"\n' "$port" >"$work/on/covo.toml"
: >"$work/off/covo.toml"
mkdir -p "$work/default"
cp "$work/on/covo.toml" "$work/default/covo.toml"
sed -i 's/gateway_id = "rss"/gateway_id = "rss-default"/' "$work/default/covo.toml"
modes="off on default"; [ -n "$skip_default" ] && modes="off on"
if [ -n "${BEFORE_BIN:-}" ]; then
  modes="$modes before"
  mkdir -p "$work/before"
  sed 's/gateway_id = "rss"/gateway_id = "rss-before"/' "$work/on/covo.toml" >"$work/before/covo.toml"
fi
for mode in $modes; do
  b=$bin; [ "$mode" = default ] && b=$default_bin; [ "$mode" = before ] && b=$BEFORE_BIN
  (cd "$work/$mode" && COVO_HOME="$work/$mode/home" COVO_CONFIG= exec "$b" --config covo.toml run \
      >/dev/null 2>"$work/$mode/stderr") &
  pids+=($!)
done
sleep 1000 &
pids+=($!)
sleep "$settle"

base=$(report "baseline: sleep" "${pids[-1]}")
off=$(report "edge build, MQTT off" "${pids[1]}")
on=$(report "edge build, sim board, broker up" "${pids[2]}")
[ -n "$skip_default" ] || dflt=$(report "default build, sim board, broker up" "${pids[3]}")
if [ -n "${BEFORE_BIN:-}" ]; then
  before=$(report "before (BEFORE_BIN), broker up" "${pids[-2]}")
fi
for mode in on $([ -n "$skip_default" ] || echo default) ${BEFORE_BIN:+before}; do
  grep -q "MQTT on" "$work/$mode/stderr" || { echo "run-rss: covo run ($mode) did not connect:" >&2; cat "$work/$mode/stderr" >&2; exit 1; }
done
echo "covo run (edge build) with MQTT: $(echo "scale=2; $on/1024" | bc) MiB (target <= 6.5 MiB); MQTT costs $(echo "scale=2; ($on-$off)/1024" | bc) MiB; ratio to sleep $(echo "scale=1; $on/$base" | bc)x${skip_default:+; default build not measured}${dflt:+; the default build holds $(echo "scale=2; $dflt/$on" | bc)x as much}"
echo "binary size: edge $(stat -c %s "$bin") bytes${dflt:+, default $(stat -c %s "$default_bin") bytes}"
if [ -n "${BEFORE_BIN:-}" ]; then
  echo "before: $(echo "scale=2; $before/1024" | bc) MiB RSS, $(stat -c %s "$BEFORE_BIN") bytes; after/before: RSS $(echo "scale=2; $on/$before" | bc), size $(echo "scale=2; $(stat -c %s "$bin")/$(stat -c %s "$BEFORE_BIN")" | bc)"
fi
