#!/usr/bin/env bash
# The emulated Raspberry Pi 3 suite (tests/pi/README.md): boots Debian's arm64 kernel on QEMU's
# raspi3b machine with the Pi 3 device tree and a static aarch64 covo, runs the checks in the
# guest against the Pi's own drivers (i2c-bcm2835, pinctrl-bcm2835's gpiochip, spi-bcm2835, the
# PL011), and compares what only QEMU knows (the EEPROM's backing file, the TMP105's
# temperature). Exits non-zero on a failed check, a missing RESULT line, or a part that cannot be
# fetched.
#
#   tests/pi/run.sh [--check GROUP] COVO_BIN
#
# COVO_BIN (or $COVO_BIN) is the static aarch64 build (tests/cross/build.sh aarch64). The MCU
# firmware image (firmware/qemu-lm3s6965) runs in qemu-system-arm on the Pi's PL011;
# $COVO_FW_IMAGE overrides where it is looked for.
# --check GROUP runs one group (dt i2c gpio spi mcu doctor rss).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
check="" bin=${COVO_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=${2:?--check needs a group}; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) bin=$1; shift ;;
  esac
done
die() { echo "pi-suite: $*" >&2; exit 1; }
[ -n "$bin" ] || die "no covo binary: pass the aarch64 build's path or set COVO_BIN"
[ -x "$bin" ] || die "$bin is not an executable"
grep -q INTERP <<<"$(readelf -lW "$bin")" && die "$bin is not static (the guest has no libc)"
grep -q 'AArch64' <<<"$(readelf -hW "$bin")" || die "$bin is not an aarch64 executable"
fw=${COVO_FW_IMAGE:-${CARGO_TARGET_DIR:-$repo/firmware/qemu-lm3s6965/target}/thumbv7m-none-eabi/release/covo-fw-qemu}
[ -f "$fw" ] || die "the MCU firmware image is missing at $fw: build it with (cd firmware/qemu-lm3s6965 && cargo build --release)"
for cmd in qemu-system-arm python3 busybox gzip; do
  command -v "$cmd" >/dev/null || die "$cmd is missing (tests/run-all.sh installs the suite's packages)"
done

built=$(bash "$here/build.sh") || die "fetching the emulated Pi's parts failed"
read -r abi out qemu bb <<<"$(tail -1 <<<"$built")"

stage=$(mktemp -d "${TMPDIR:-/tmp}/covo-pi.XXXXXX")
mcu_pid="" pi_pid=""
trap '[ -z "$pi_pid" ] || kill "$pi_pid" 2>/dev/null; [ -z "$mcu_pid" ] || kill "$mcu_pid" 2>/dev/null; rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,etc/covo,lib/covo}
cp "$bb" "$root/bin/busybox"
for a in $(qemu-aarch64-static "$bb" --list 2>/dev/null || busybox --list); do
  [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"
done
cp "$bin" "$root/bin/covo"
cp "$out"/kmod/*.ko "$root/lib/covo/"
cp "$here/guest/init" "$root/init"
cp "$here/guest/checks.sh" "$root/checks.sh"
cp "$repo/tests/kernel/guest/lib.sh" "$repo/tests/kernel/guest/llm.cgi" "$root/lib/covo/"
chmod +x "$root/init" "$root/checks.sh"
cp "$here/boards/pi3.toml" "$repo/boards/rpi3.toml" "$repo/boards/rpi4.toml" "$root/etc/covo/"
mkdir -p "$root/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" \
  || die "/etc/ssl/certs/ca-certificates.crt is missing (apt-get install ca-certificates)"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$stage/initramfs.cpio.gz"

# What QEMU attaches to I2C bus 1: a TMP105 whose temperature the host sets through QMP before
# the guest runs, and a 24C32 EEPROM (4 KiB, 16-bit word addresses, what a Pi HAT's ID EEPROM is)
# backed by a file the host reads afterwards.
# Any of -10.0 .. 29.0 °C in 0.5 steps but 0 (a register QEMU never set reads 0).
tmp_milli=$(( (RANDOM % 79 - 20) * 500 )); [ "$tmp_milli" != 0 ] || tmp_milli=29500
python3 - "$stage/eeprom.bin" <<'PY'
import sys
open(sys.argv[1], "wb").write(bytes((i * 7 + 3) & 0xFF for i in range(4096)))
PY

# The microcontroller: the firmware in QEMU, its UART0 a socket joined to the Pi's PL011.
mcu_sock=$stage/mcu.sock
. "$repo/tests/kernel/mcu.sh"
start_mcu "$fw" "$mcu_sock" "$stage/mcu.log"

append="console=ttyS1,115200 rdinit=/init quiet panic=-1 covo_tmp105=$tmp_milli"
[ -n "$check" ] && append="$append COVO_CHECK=$check"
log=$stage/console.log qmp=$stage/qmp.sock
start=$(date +%s.%N)
# serial0 is the PL011 (the MCU's), serial1 the mini UART (the console, ttyS1). The guest ends
# with `reboot -f` through the BCM2835 watchdog, which -no-reboot turns into QEMU's exit.
# -S: the machine waits until the host has set the TMP105 over QMP.
QEMU_MODULE_DIR=$stage timeout 900 "$qemu" -M raspi3b -m 1G -kernel "$out/Image" \
  -dtb "$out/bcm2837-rpi-3-b.dtb" -initrd "$stage/initramfs.cpio.gz" -append "$append" \
  -display none -nodefaults -no-reboot -S -qmp "unix:$qmp,server=on,wait=off" \
  -serial "unix:$mcu_sock" -serial "file:$log" \
  -device tmp105,bus=i2c-bus.1,address=0x48,id=tmp0 \
  -drive if=none,id=eeprom,format=raw,file="$stage/eeprom.bin" \
  -device at24c-eeprom,bus=i2c-bus.1,address=0x50,rom-size=4096,drive=eeprom \
  </dev/null >"$stage/qemu.log" 2>&1 &
pi_pid=$!
python3 - "$qmp" "$tmp_milli" <<'PY' || { cat "$stage/qemu.log" >&2; die "setting the TMP105 over QMP failed"; }
import json, socket, sys, time
path, milli = sys.argv[1], int(sys.argv[2])
for _ in range(200):
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(path); break
    except OSError:
        time.sleep(0.05)
else:
    sys.exit("no QMP socket")
f = s.makefile("rw")
def cmd(name, **args):
    f.write(json.dumps({"execute": name, "arguments": args}) + "\n"); f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r: return r["return"]
        if "error" in r: sys.exit(f"{name}: {r['error']}")
json.loads(f.readline())  # greeting
cmd("qmp_capabilities")
cmd("qom-set", path="/machine/peripheral/tmp0", property="temperature", value=milli)
got = cmd("qom-get", path="/machine/peripheral/tmp0", property="temperature")
if got != milli: sys.exit(f"TMP105 reads back {got}, not {milli}")
cmd("cont")
PY
wait "$pi_pid" || true
pi_pid=""
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
cp "$log" "$(dirname "$out")/last-console.log"

grep -E '^(SETUP|CHECK|FIGURE|RESULT)' "$log" | tr -d '\r' >"$stage/lines" || true
# QEMU's side: the EEPROM's backing file changed exactly where the allowlisted write went.
if [ -z "$check" ] || [ "$check" = i2c ]; then
  python3 - "$stage/eeprom.bin" >>"$stage/lines" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
want = bytearray((i * 7 + 3) & 0xFF for i in range(4096))
want[0x20:0x23] = b"\xc0\xff\xee"
diff = [f"0x{i:02x}:{data[i]:02x}!={want[i]:02x}" for i in range(min(len(data), 4096)) if data[i] != want[i]]
ok = len(data) == 4096 and not diff
print(f"CHECK host eeprom_file_changed_only_where_allowed {'ok' if ok else 'FAIL ' + ' '.join(diff[:16])}")
PY
fi
cat "$stage/lines"
if ! grep -q '^RESULT ' "$stage/lines"; then
  tail -40 "$log" >&2
  die "no RESULT line from the guest after ${secs} s (console: $(dirname "$out")/last-console.log)"
fi
echo "== emulated Raspberry Pi 3: Linux $abi on QEMU $("$qemu" --version | sed -n '1s/.*version \([^ ]*\).*/\1/p') -M raspi3b (TCG), VM wall time ${secs} s"
awk '$1 == "CHECK" { n[$2]++; if ($4 == "ok") ok[$2]++; else bad[$2]++ }
     END { for (s in n) printf "   %-10s %2d checks, %2d ok, %2d failed\n", s, n[s], ok[s], bad[s] }' \
  "$stage/lines" | sort
pass=$(grep -c '^CHECK .* ok$' "$stage/lines" || true)
fail=$(grep -c '^CHECK .* FAIL' "$stage/lines" || true)
echo "== RESULT pass=$pass fail=$fail ($(grep '^RESULT ' "$stage/lines" | tail -1) in the guest)"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ] && ! grep -q '^SETUP FAIL' "$stage/lines"
