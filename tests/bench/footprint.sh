#!/usr/bin/env bash
# The gateway's footprint, in one run, against the targets of issue 15:
# - stripped size of the host edge build (x86_64 musl, `--profile edge`) and of the aarch64
#   Pi build (tests/cross/build.sh; target <= 8 MiB);
# - `covo run` idle RSS of the host edge build, sim board, broker connected (target <= 5 MiB),
#   measured by tests/bench/run-rss.sh (sleep as the baseline);
# - cold start of `covo tools list` (target <= 5 ms) against `/bin/true`, both spawned
#   alternately RUNS times (default 300) from one Python process: median, p10 and p90, the
#   median minus `/bin/true`'s and the ratio.
#
#   tests/bench/footprint.sh
#   HOST_BIN=path AARCH64_BIN=path tests/bench/footprint.sh   # measure given builds, build nothing
#   AARCH64_BIN=skip ...                                        # leave the aarch64 build out
#
# Needs what run-rss.sh and tests/cross/build.sh need (musl-tools, mosquitto, zig).
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "footprint: $*" >&2; exit 1; }
mib() { echo "scale=2; $1/1048576" | bc; }
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
musl=$(uname -m)-unknown-linux-musl

if [ -z "${HOST_BIN:-}" ]; then
  command -v musl-gcc >/dev/null || fail "musl-gcc is missing (apt-get install -y musl-tools)"
  cargo build --profile edge -p covo-gateway --bin covo --target "$musl" >&2 \
    || fail "the host edge build failed"
  HOST_BIN=$target_dir/$musl/edge/covo
fi
if [ -z "${AARCH64_BIN:-}" ]; then
  AARCH64_BIN=$(bash tests/cross/build.sh aarch64 | tail -n 1)
fi
HOST_BIN=$(realpath "$HOST_BIN")
[ "$AARCH64_BIN" = skip ] || AARCH64_BIN=$(realpath "$AARCH64_BIN")

size_line() { # label binary target_mib
  local bytes symtab
  bytes=$(stat -c %s "$2")
  # The edge profile strips; a .symtab left in the file would make the size a lie.
  symtab=$(readelf -SW "$2" | grep -c '\.symtab' || true)
  [ "$symtab" = 0 ] || fail "$2 is not stripped"
  printf '%-28s %9d bytes = %5s MiB (stripped)%s\n' "$1" "$bytes" "$(mib "$bytes")" \
    "${3:+; target <= $3 MiB: $( [ "$(echo "$bytes <= $3*1048576" | bc)" = 1 ] && echo met || echo "NOT met, $(mib $((bytes - ${3%.*}*1048576))) MiB over")}"
}

echo "== footprint of covo $("$HOST_BIN" -V | cut -d' ' -f2-) on $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
size_line "host edge ($musl)" "$HOST_BIN"
if [ "$AARCH64_BIN" = skip ]; then
  printf '%-28s not built; run tests/cross/build.sh aarch64\n' "aarch64-unknown-linux-musl"
else
  size_line "aarch64-unknown-linux-musl" "$AARCH64_BIN" 8
fi

echo "== idle RSS (tests/bench/run-rss.sh, edge build; target <= 5 MiB)"
BIN=$HOST_BIN DEFAULT_BIN=skip bash tests/bench/run-rss.sh 2>&1 | grep -v '^binary size'

echo "== cold start (target <= 5 ms)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
: >"$work/covo.toml"
(cd "$work" && COVO_HOME=$work/home COVO_CONFIG= "$HOST_BIN" --config covo.toml tools list >/dev/null) \
  || fail "covo tools list failed"
cd "$work"
COVO_HOME=$work/home COVO_CONFIG= RUNS=${RUNS:-300} python3 - "$HOST_BIN" <<'PY'
import os, statistics, sys, time
runs = int(os.environ["RUNS"])
cmds = {"/bin/true": ["/bin/true"], "covo tools list": [sys.argv[1], "--config", "covo.toml", "tools", "list"]}
null = os.open(os.devnull, os.O_WRONLY)
acts = [(os.POSIX_SPAWN_DUP2, null, 1)]
times = {k: [] for k in cmds}
for _ in range(runs):            # alternate, so both see the same noise
    for name, argv in cmds.items():
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=acts)
        _, status = os.waitpid(pid, 0)
        t1 = time.perf_counter_ns()
        if status != 0:
            sys.exit(f"footprint: {name} exited with {status}")
        times[name].append((t1 - t0) / 1e6)
def q(v, p): return sorted(v)[min(len(v) - 1, int(p * len(v)))]
for name, v in times.items():
    print(f"{name:<18} median {statistics.median(v):6.3f} ms  p10 {q(v, .1):6.3f}  p90 {q(v, .9):6.3f}  ({runs} runs)")
base, covo = statistics.median(times["/bin/true"]), statistics.median(times["covo tools list"])
verdict = "met" if covo <= 5 else "NOT met"
print(f"covo tools list: {covo:.3f} ms absolute ({verdict}, target <= 5 ms), "
      f"{covo - base:.3f} ms over /bin/true, {covo / base:.1f}x /bin/true")
PY
