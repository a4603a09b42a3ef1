#!/usr/bin/env bash
# Builds the Raspberry Pi binaries (tests/cross/build.sh) and proves each one works under
# qemu-user, emulating the oldest CPU it must run on:
# - aarch64 (static musl) under `qemu-aarch64-static -cpu cortex-a53` (Pi 3 and Zero 2 W);
# - armv7 (glibc) under `qemu-arm-static -cpu cortex-a7` (Pi 2), with Debian's armhf glibc
#   (libc6-armhf-cross) as its root: an instruction a Pi 2 lacks is "Illegal instruction" here;
#   the same binary must fail under `-cpu arm1176` (the check has teeth);
# - armv6 (static musl, the armhf package's) under `qemu-arm-static -cpu arm1176` (Pi Zero, Zero
#   W, Pi 1: the oldest 32-bit Pi), at most 8 MiB.
# For each: the ELF is checked (static; for armv7 the glibc symbol versions it needs are at most
# 2.31, bullseye's), then tests/tests/cross_qemu.rs runs `covo tools list`, `sensor_read` on the
# sim board, `covo chat -m` against the scripted LLM server and `covo run` against a mosquitto
# on the host (Home Assistant discovery configs and telemetry).
#
# peer-aarch64 builds covo-peer for arm64 (PEER_PROFILE, default release) and runs the `peer_`
# tests with it: its birth reaches the host's mosquitto and the aarch64 `covo` (built first if
# it is not) gets a `plot_series` chart from it through the broker.
#
#   tests/cross/check.sh [aarch64|armv7|armv6|peer-aarch64]…     (default: aarch64 armv7 armv6)
#   tests/cross/check.sh --prepare            (build the host side only)
#
# Needs what build.sh needs, plus: apt-get install -y qemu-user-static libc6-armhf-cross
# mosquitto mosquitto-clients (tests/run-all.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "cross/check: $*" >&2; exit 1; }

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(aarch64 armv7 armv6)
for cmd in qemu-aarch64-static qemu-arm-static readelf; do
  command -v "$cmd" >/dev/null || fail "$cmd is missing (apt-get install -y qemu-user-static binutils)"
done
[ -e /usr/arm-linux-gnueabihf/lib/ld-linux-armhf.so.3 ] \
  || fail "the armhf glibc is missing (apt-get install -y libc6-armhf-cross)"
[ -x "$(command -v mosquitto || echo /usr/sbin/mosquitto)" ] || fail "mosquitto is missing (apt-get install -y mosquitto)"

# The host side of the tests (scripted LLM server, broker harness) builds once, natively, and
# is copied next to the Pi builds, to run from there.
# `check.sh --prepare` only does that; with COVO_CROSS_TEST_READY=1 a later call uses the copy, so
# CI can free the debug build (target/debug) before the cross builds (COVO_PRUNE in run-all.sh).
test_bin=${CARGO_TARGET_DIR:-$PWD/target}/cross/cross_qemu
if [ "${targets[0]:-}" = --prepare ] || [ -z "${COVO_CROSS_TEST_READY:-}" ]; then
  # Not `tee /dev/stderr`: when stderr is a file, tee reopens it truncated (a CI log lost all
  # it held before this point).
  build_log=$(mktemp)
  cargo test -p covo-tests --test cross_qemu --no-run >"$build_log" 2>&1 \
    || { cat "$build_log" >&2; rm -f "$build_log"; fail "the cross_qemu test binary did not build"; }
  cat "$build_log" >&2
  built_test=$(sed -n 's/.*Executable .*(\(.*\))$/\1/p' "$build_log" | tail -n 1)
  rm -f "$build_log"
  [ -n "$built_test" ] && [ -x "$built_test" ] || fail "the cross_qemu test binary was not built"
  mkdir -p "$(dirname "$test_bin")"
  cp "$built_test" "$test_bin"
fi
[ "${targets[0]:-}" = --prepare ] && exit 0
[ -x "$test_bin" ] || fail "$test_bin is missing: run tests/cross/check.sh --prepare first"

for t in "${targets[@]}"; do
  start=$(date +%s)
  bin=$(bash tests/cross/build.sh "$t" | tail -n 1)
  built=$(( $(date +%s) - start ))
  filter=(--skip peer_)
  peer_env=()
  case $t in
    aarch64|peer-aarch64)
      grep -q INTERP <<<"$(readelf -lW "$bin")" && fail "$bin asks for a program interpreter (it is not static)"
      grep -q NEEDED <<<"$(readelf -dW "$bin")" && fail "$bin needs shared libraries"
      grep -q 'AArch64' <<<"$(readelf -hW "$bin")" || fail "$bin is not an AArch64 executable"
      # Issue 15's footprint target for the gateway a 64-bit Pi runs: at most 8 MiB.
      if [ "$t" = aarch64 ] && [ "$(stat -c %s "$bin")" -gt $((8 << 20)) ]; then
        fail "$bin is $(stat -c %s "$bin") bytes, over the 8 MiB (8388608 bytes) the aarch64 gateway may weigh"
      fi
      runner="qemu-aarch64-static -cpu cortex-a53"
      if [ "$t" = peer-aarch64 ]; then
        peer_env=(COVO_CROSS_PEER_BIN="$bin")
        bin=$(bash tests/cross/build.sh aarch64 | tail -n 1)
        filter=(peer_)
      fi ;;
    armv7)
      grep -q 'ARM$' <<<"$(readelf -hW "$bin")" || fail "$bin is not a 32-bit ARM executable"
      grep -q 'ld-linux-armhf.so.3' <<<"$(readelf -lW "$bin")" || fail "$bin is not a hard-float glibc executable"
      newest=$(readelf -VW "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
      [ "$(printf '%s\n2.31\n' "$newest" | sort -V | tail -n 1)" = 2.31 ] \
        || fail "$bin needs glibc $newest; Raspberry Pi OS bullseye has 2.31"
      cpu=$(readelf -AW "$bin" | sed -n 's/.*Tag_CPU_name: "\(.*\)"/\1/p')
      echo "cross/check: armv7 needs glibc <= $newest, built for CPU ${cpu:-unnamed}" >&2
      # The emulated CPU has teeth: an ARMv6 core (Pi Zero/1, unsupported) must trap on it.
      if qemu-arm-static -cpu arm1176 -L /usr/arm-linux-gnueabihf "$bin" --version >/dev/null 2>&1; then
        fail "$bin ran on an emulated ARM1176: qemu does not enforce the CPU model, so cortex-a7 proves nothing"
      fi
      runner="qemu-arm-static -cpu cortex-a7 -L /usr/arm-linux-gnueabihf" ;;
    armv6)
      grep -q 'ARM$' <<<"$(readelf -hW "$bin")" || fail "$bin is not a 32-bit ARM executable"
      grep -q INTERP <<<"$(readelf -lW "$bin")" && fail "$bin asks for a program interpreter (it is not static)"
      grep -q NEEDED <<<"$(readelf -dW "$bin")" && fail "$bin needs shared libraries"
      arch=$(readelf -AW "$bin" | sed -n 's/.*Tag_CPU_arch: //p')
      [ "$arch" = v6KZ ] || [ "$arch" = v6 ] || fail "$bin is built for CPU architecture '$arch', not ARMv6"
      grep -q 'Tag_ABI_VFP_args: VFP registers' <<<"$(readelf -AW "$bin")" || fail "$bin is not hard-float"
      # 8 MiB, as for aarch64 (a Pi Zero's SD card and page cache); build.sh says what keeps
      # ARM-mode code (ARMv6 has no Thumb-2) under it.
      [ "$(stat -c %s "$bin")" -gt $((8 << 20)) ] \
        && fail "$bin is $(stat -c %s "$bin") bytes, over the 8 MiB (8388608 bytes) the ARMv6 gateway may weigh"
      runner="qemu-arm-static -cpu arm1176" ;;
  esac
  start=$(date +%s)
  log=$(mktemp)
  env "${peer_env[@]}" COVO_CROSS_BIN="$bin" COVO_CROSS_RUNNER="$runner" \
    "$test_bin" --test-threads 1 "${filter[@]}" >"$log" 2>&1 \
    || { cat "$log" >&2; rm -f "$log"; fail "$t: $bin does not work under $runner"; }
  cat "$log" >&2
  # A filter that matches nothing would pass with no test run.
  grep -q 'test result: ok\. [1-9]' "$log" || { rm -f "$log"; fail "$t: no test ran (${filter[*]})"; }
  rm -f "$log"
  echo "cross/check: $t ok under '$runner' ($(stat -c %s "$bin") bytes; build ${built} s, checks $(( $(date +%s) - start )) s)"
done
