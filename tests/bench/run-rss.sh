#!/usr/bin/env bash
# Idle memory of `covo run` on the sim board with the broker connected (target: RSS <= 8 MiB),
# next to `covo run` with MQTT off and `sleep` as a process baseline, all in the same run.
# Needs mosquitto (tests/run-all.sh installs it). Prints RSS split into anonymous (heap, stacks)
# and file-backed (the mapped binary and libraries) pages, from /proc/PID/status.
set -euo pipefail
cd "$(dirname "$0")/../.."
# BIN=path measures another build of covo (e.g. one with other profile settings).
if [ -z "${BIN:-}" ]; then
  cargo build --release -p covo-gateway --bin covo >/dev/null 2>&1
fi
bin=${BIN:-$PWD/target/release/covo}
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
    "$(echo "scale=2; $total/1024" | bc)" "$(echo "scale=2; $anon/1024" | bc)" "$(echo "scale=2; $file/1024" | bc)"
  echo "$total"
}

mkdir -p "$work/off" "$work/on"
printf '[mqtt]\nurl = "mqtt://127.0.0.1:%s"\ngateway_id = "rss"\n' "$port" >"$work/on/covo.toml"
: >"$work/off/covo.toml"
for mode in off on; do
  (cd "$work/$mode" && COVO_HOME="$work/$mode/home" COVO_CONFIG= exec "$bin" --config covo.toml run \
      >/dev/null 2>"$work/$mode/stderr") &
  pids+=($!)
done
sleep 1000 &
pids+=($!)
sleep "$settle"

base=$(report "baseline: sleep" "${pids[-1]}" | tee /dev/stderr | tail -1)
off=$(report "covo run, MQTT off" "${pids[1]}" | tee /dev/stderr | tail -1)
on=$(report "covo run, sim board, broker up" "${pids[2]}" | tee /dev/stderr | tail -1)
grep -q "MQTT on" "$work/on/stderr" || { echo "run-rss: covo run did not connect:" >&2; cat "$work/on/stderr" >&2; exit 1; }
echo "covo run with MQTT: $(echo "scale=2; $on/1024" | bc) MiB (target <= 8 MiB); MQTT costs $(echo "scale=2; ($on-$off)/1024" | bc) MiB; ratio to sleep $(echo "scale=1; $on/$base" | bc)x"
echo "binary size: $(stat -c %s "$bin") bytes"
