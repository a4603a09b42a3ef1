#!/usr/bin/env bash
# The kernel-level hardware-in-the-loop suite (tests/kernel/README.md): boots Debian's 6.1
# kernel in QEMU with the suite's modules and a static covo, runs the checks in the guest and
# reads their result lines. Exits non-zero on a failed check, a missing RESULT line, or a part
# that cannot be built.
#
#   tests/kernel/run.sh [--check GROUP] [--shell] [COVO_BIN]
#
# COVO_BIN (or $COVO_BIN) is a static musl covo, e.g. target/x86_64-unknown-linux-musl/edge/covo.
# The MCU firmware image (firmware/qemu-lm3s6965, `cargo build --release` there) runs in a second
# QEMU joined to the guest's ttyS1; $COVO_FW_IMAGE overrides where it is looked for.
# --check GROUP runs one group of checks (i2c smbus gpio gpio_chat noirq spi pwm policy avail mcu doctor).
# --shell sets the guest up, then gives a shell on the terminal instead of running the checks
#   (`sh /checks.sh GROUP` there runs a group; `reboot -f` leaves).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check="" shell=0 bin=${COVO_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=${2:?--check needs a group}; shift 2 ;;
    --shell) shell=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) bin=$1; shift ;;
  esac
done
die() { echo "kernel-suite: $*" >&2; exit 1; }
[ -n "$bin" ] || die "no covo binary: pass its path or set COVO_BIN"
[ -x "$bin" ] || die "$bin is not an executable"
grep -q INTERP <<<"$(readelf -lW "$bin")" && die "$bin is not static (the guest has no libc): use the musl edge build"
repo=$(cd "$here/../.." && pwd)
fw=${COVO_FW_IMAGE:-${CARGO_TARGET_DIR:-$repo/firmware/qemu-lm3s6965/target}/thumbv7m-none-eabi/release/covo-fw-qemu}
[ -f "$fw" ] || die "the MCU firmware image is missing at $fw: build it with (cd firmware/qemu-lm3s6965 && cargo build --release) (tests/run-all.sh does)"
for cmd in qemu-system-x86_64 qemu-system-arm busybox python3 gcc make; do
  command -v "$cmd" >/dev/null || die "$cmd is missing (tests/run-all.sh installs the suite's packages)"
done
grep -qx httpd <<<"$(busybox --list)" || die "busybox has no httpd applet: install busybox-static"
bb=$(readlink -f "$(command -v busybox)")
grep -q INTERP <<<"$(readelf -lW "$bb")" && die "$bb is not static: install busybox-static"
grep -q 'X86-64' <<<"$(readelf -hW "$bin")" || die "$bin is not an x86-64 executable (the guest is amd64)"

built=$(bash "$here/build.sh") || die "building the guest's parts failed"
read -r abi out ours <<<"$(tail -1 <<<"$built")"
[ -f "$out/vmlinux" ] || die "build.sh made no vmlinux"

# The initramfs: busybox, the modules, covo, the gpioline helper, board files and the scripts.
stage=$(mktemp -d "${TMPDIR:-/tmp}/covo-kernel.XXXXXX")
mcu_pid=""
trap '[ -z "$mcu_pid" ] || kill "$mcu_pid" 2>/dev/null; rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,etc/covo,lib/covo}
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list); do
  [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
done
cp "$bin" "$root/bin/covo"
cp "$out"/kmod/*.ko "$ours"/*.ko "$ours/gpioline" "$root/lib/covo/"
cp "$here/guest/init" "$root/init"
cp "$here/guest/checks.sh" "$root/checks.sh"
cp "$here/guest/llm.cgi" "$here/guest/lib.sh" "$root/lib/covo/"
chmod +x "$root/init" "$root/checks.sh"
cp "$here"/boards/*.toml "$root/etc/covo/"
# covo's HTTP client (reqwest with the system's roots) refuses to start without any CA
# certificate, even for a plain-http model on loopback; the guest's scripted model needs one.
mkdir -p "$root/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" \
  || die "/etc/ssl/certs/ca-certificates.crt is missing (apt-get install ca-certificates)"
python3 "$here/bme280_expected.py" >"$root/etc/covo/expected-bme280"
(cd "$root" && find . | "$bb" cpio -o -H newc 2>/dev/null | gzip -1) >"$stage/initramfs.cpio.gz"

# The microcontroller: the firmware in QEMU, its UART0 a socket the guest's ttyS1 connects to.
mcu_sock=$stage/mcu.sock
. "$here/mcu.sh"
start_mcu "$fw" "$mcu_sock" "$stage/mcu.log"

append="console=ttyS0 rdinit=/init quiet panic=-1"
[ -n "$check" ] && append="$append COVO_CHECK=$check"
qemu=(qemu-system-x86_64 -accel tcg -cpu max -m 768M -smp 1 -kernel "$out/vmlinux"
      -initrd "$stage/initramfs.cpio.gz" -no-reboot -display none -nodefaults)
mcu_serial=(-serial "unix:$mcu_sock")
if [ "$shell" = 1 ]; then
  # The guest's /init runs the checks unless COVO_CHECK=shell: then it opens a shell.
  "${qemu[@]}" -append "$append COVO_CHECK=shell" -serial stdio "${mcu_serial[@]}"
  exit 0
fi
log=$stage/console.log
start=$(date +%s.%N)
timeout 900 "${qemu[@]}" -append "$append" -serial "file:$log" "${mcu_serial[@]}" || true
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
# Keep the console log next to the cache for a look after a failure.
cp "$log" "$(dirname "$out")/last-console.log"

grep -E '^(SETUP|CHECK|RESULT)' "$log" | tr -d '\r' >"$stage/lines" || true
cat "$stage/lines"
if ! grep -q '^RESULT ' "$stage/lines"; then
  tail -40 "$log" >&2
  die "no RESULT line from the guest after ${secs} s (console: $(dirname "$out")/last-console.log)"
fi
echo "== kernel suite: Linux $abi in QEMU (TCG), VM wall time ${secs} s"
awk '$1 == "CHECK" { n[$2]++; if ($4 == "ok") ok[$2]++; else bad[$2]++ }
     END { for (s in n) printf "   %-14s %2d checks, %2d ok, %2d failed\n", s, n[s], ok[s], bad[s] }' \
  "$stage/lines" | sort
if grep -q '^CHECK .* FAIL' "$stage/lines"; then
  echo "== failed checks ([defectN]: the correct behaviour for issue 12's defect N):"
  grep '^CHECK .* FAIL' "$stage/lines" | awk '{ print "   " $2 " " $3 }'
  awk '$1 == "CHECK" && $4 == "FAIL" {
         if (match($3, /\[defect[0-9]+\]$/)) d[substr($3, RSTART + 1, RLENGTH - 2)]++; else other++
       }
       END { for (k in d) printf "   %s: %d failed check(s)\n", k, d[k]
             printf "   without a defect tag: %d failed check(s)\n", other + 0 }' "$stage/lines" | sort
fi
result=$(grep '^RESULT ' "$stage/lines" | tail -1)
pass=$(sed -n 's/.*pass=\([0-9]*\).*/\1/p' <<<"$result")
fail=$(sed -n 's/.*fail=\([0-9]*\).*/\1/p' <<<"$result")
echo "== $result"
[ "${fail:-1}" = 0 ] && [ "${pass:-0}" -gt 0 ] || exit 1
