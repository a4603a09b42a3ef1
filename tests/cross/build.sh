#!/usr/bin/env bash
# Builds the covo gateway for a Raspberry Pi (README, "Building for a board"), with the
# workspace's size-optimised `edge` profile (release, fat LTO, opt-level "z", stripped by the linker,
# panic = abort), and prints the path of each binary.
#
#   tests/cross/build.sh                 # both targets
#   tests/cross/build.sh aarch64         # only the 64-bit build
#   tests/cross/build.sh armv7           # only the 32-bit ARMv7 build
#   tests/cross/build.sh armv6           # only the 32-bit ARMv6 build (every 32-bit Pi)
#   tests/cross/build.sh peer-aarch64    # the cloud peer, covo-peer, for an arm64 machine
#                                        # (profile release; PEER_PROFILE=pkg-check for CI's
#                                        # quick unoptimised one)
#
# Targets:
# - aarch64-unknown-linux-musl: a static executable for Pi 3, 4, 5 and Zero 2 W on a 64-bit OS.
#   The baseline armv8-a (with the mandatory NEON/FP) runs on every 64-bit Pi; nothing finer is
#   needed, and a Cortex-A72 (Pi 4) or A76 (Pi 5) tuning would break the Pi 3.
# - armv7-unknown-linux-gnueabihf, linked against glibc 2.31 by zig (`.2.31` suffix), so one
#   binary runs on Raspberry Pi OS bullseye (2.31) and bookworm (2.36) on a Pi 2, 3 or Zero 2 W.
#   `-C target-cpu=cortex-a7`: the Pi 2's core (BCM2836). The Pi 3 and Zero 2 W run
#   Cortex-A53s in AArch32, which execute every Cortex-A7 instruction, so this is the largest
#   feature set all three share: ARMv7-A with Thumb-2, NEON, VFPv4 with 32 double registers and
#   hardware integer division. Rust's armv7 default (+v7,+vfp3,-d32,-neon) is the common
#   denominator of all ARMv7 chips, including ones without NEON; cortex-a7 also schedules for
#   the in-order pipeline these Pis have. tests/cross/check.sh runs this binary under
#   `qemu-arm -cpu cortex-a7`, so an instruction a Pi 2 lacks fails there as "Illegal
#   instruction".
# - arm-unknown-linux-musleabihf, for ARMv6 (ARM1176JZF-S: Pi Zero, Zero W, Pi 1), a static
#   executable that runs on every 32-bit Raspberry Pi OS, so the armhf package carries it.
#   `-C target-cpu=arm1176jzf-s`, and the C parts (SQLite, ring) with zig's `-mcpu` to match.
#   ARMv6 has no Thumb-2, so every instruction is a 32-bit ARM one; what keeps it under 8 MiB
#   (9.71 MB without them, 8.36 MB with): LLVM's machine outliner, which LLVM runs by itself at
#   opt-level "z" on AArch64 but not on 32-bit ARM (repeated instruction sequences become calls
#   to one copy) and `-Z location-detail=none` (a panic prints its message without file and
#   line), -995 KB together; std built with `optimize_for_size` and without backtrace
#   symbolization (`backtrace-trace-only`: a stripped binary has no symbols to resolve), -170 KB;
#   the ARM unwind tables discarded at link time (gateway/build.rs), -185 KB.
#   Rust's distribution servers reachable here do not have this target's prebuilt std (rustup
#   answers 404), so std is compiled from the toolchain's own source (the rust-src component)
#   with `-Z build-std`, which the stable toolchain takes under RUSTC_BOOTSTRAP=1 for this
#   build only; the compiler and the source are the same stable release as every other build.
#
# Needs: `pip install ziglang cargo-zigbuild` (zig is the C cross compiler for SQLite and ring,
# and the linker), `rustup target add aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf`,
# `rustup component add rust-src` (armv6).
# Artifacts go to $CARGO_TARGET_DIR/cross (default target/cross), apart from the host builds:
# zig's compiler settings would otherwise invalidate the host build's C parts.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "cross/build: $*" >&2; exit 1; }

command -v cargo-zigbuild >/dev/null || fail "cargo-zigbuild is missing: pip install ziglang cargo-zigbuild"
python3 -c 'import ziglang' 2>/dev/null || command -v zig >/dev/null \
  || fail "zig is missing: pip install ziglang"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(aarch64 armv7)
out_dir=${CARGO_TARGET_DIR:-$PWD/target}/cross
installed=$(rustup target list --installed)

for t in "${targets[@]}"; do
  package=covo-gateway bin_name=covo profile=edge
  build_std=()
  case $t in
    aarch64) triple=aarch64-unknown-linux-musl; zig_triple=$triple ;;
    # The peer is static musl too; it unwinds panics (release, not edge: a panicking tool
    # fails its call and the peer lives on).
    peer-aarch64) triple=aarch64-unknown-linux-musl; zig_triple=$triple
             package=covo-peer bin_name=covo-peer profile=${PEER_PROFILE:-release} ;;
    armv7)   triple=armv7-unknown-linux-gnueabihf; zig_triple=$triple.2.31
             export CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_RUSTFLAGS="-C target-cpu=cortex-a7" ;;
    armv6)   triple=arm-unknown-linux-musleabihf; zig_triple=$triple
             build_std=(-Z build-std=std,panic_abort -Z build-std-features=optimize_for_size,backtrace,backtrace-trace-only)
             # Not self-contained: zig supplies musl's start files and libunwind (the ones rustup ships
             # come with the prebuilt std, which this build does not have).
             export CARGO_TARGET_ARM_UNKNOWN_LINUX_MUSLEABIHF_RUSTFLAGS="-C target-cpu=arm1176jzf-s -C link-self-contained=no -C llvm-args=-enable-machine-outliner=always -Z location-detail=none"
             export CFLAGS_arm_unknown_linux_musleabihf="-mcpu=arm1176jzf_s" ;;
    *) fail "unknown target $t (aarch64, armv7, armv6 or peer-aarch64)" ;;
  esac
  if [ ${#build_std[@]} -gt 0 ]; then
    [ -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library/std" ] \
      || fail "the Rust source is missing (std for $triple is built from it): rustup component add rust-src"
  else
    grep -qx "$triple" <<<"$installed" || fail "the Rust target $triple is missing: rustup target add $triple"
  fi
  start=$(date +%s)
  bootstrap=(); [ ${#build_std[@]} -gt 0 ] && bootstrap=(RUSTC_BOOTSTRAP=1)
  env "${bootstrap[@]}" cargo zigbuild "${build_std[@]}" --profile "$profile" -p "$package" --bin "$bin_name" \
    --target "$zig_triple" --target-dir "$out_dir" >&2 \
    || fail "cargo zigbuild --profile $profile -p $package --bin $bin_name --target $zig_triple failed"
  profile_dir=$profile; [ "$profile" = dev ] && profile_dir=debug
  bin=$out_dir/$triple/$profile_dir/$bin_name
  [ -x "$bin" ] || fail "$bin was not built"
  echo "cross/build: $triple built in $(( $(date +%s) - start )) s, $(stat -c %s "$bin") bytes" >&2
  echo "$bin"
done
