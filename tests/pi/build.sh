#!/usr/bin/env bash
# Fetches and caches what the emulated Raspberry Pi 3 needs (tests/pi/README.md):
#   $CACHE/qemu-$VER/usr/bin/qemu-system-aarch64  QEMU >= 9 from bookworm-backports, unpacked
#                                                 (not installed: the other suites keep 7.2)
#   $CACHE/$ABI/Image                             Debian's arm64 kernel
#   $CACHE/$ABI/kmod/*.ko                         its modules the guest loads
#   $CACHE/$ABI/bcm2837-rpi-3-b.dtb               Debian's Pi 3 device tree, as the Pi's
#                                                 firmware would hand it over with the suite's
#                                                 config.txt (dtoverlay=disable-bt, dtparam=spi=on)
#   $CACHE/busybox                                busybox-static for arm64
# CACHE is $COVO_PI_CACHE, else ${CARGO_TARGET_DIR:-target}/pi-hil. Prints "ABI DIR QEMU BUSYBOX"
# on its last line. Anything missing is an error, never a skip. Needs root the first time: it
# adds the arm64 architecture and the bookworm-backports suite to apt (downloads only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${COVO_PI_CACHE:-${CARGO_TARGET_DIR:-$repo/target}/pi-hil}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
die() { echo "pi-build: $*" >&2; exit 1; }
for cmd in apt-get apt-cache dpkg-deb fdtput fdtget; do
  command -v "$cmd" >/dev/null || die "$cmd is missing (tests/run-all.sh installs device-tree-compiler)"
done

# apt: arm64 packages (the kernel, busybox) and bookworm-backports (QEMU 10) are downloaded only.
changed=0
if ! grep -qx arm64 <<<"$(dpkg --print-foreign-architectures)"; then
  dpkg --add-architecture arm64 || die "cannot add the arm64 architecture to dpkg (run as root)"
  changed=1
fi
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    >/etc/apt/sources.list.d/covo-backports.sources || die "cannot add bookworm-backports to apt (run as root)"
  changed=1
fi
if [ $changed = 1 ] || ! apt-cache show linux-image-arm64:arm64 >/dev/null 2>&1; then
  apt-get update -q >/dev/null || die "apt-get update failed"
fi
fetch() { # DIR PACKAGE...: downloads the packages into DIR
  (cd "$1" && shift && apt-get download -q "$@" >/dev/null 2>&1) \
    || (cd "$1" && shift && apt-get download "$@") || die "apt-get download $* failed"
}

# QEMU from bookworm-backports: the newest qemu-system-arm there (it carries qemu-system-aarch64).
qver=$(apt-cache madison qemu-system-arm | awk -F'|' '/bookworm-backports/ { gsub(/ /, "", $2); print $2; exit }')
[ -n "$qver" ] || die "bookworm-backports has no qemu-system-arm"
qdir=$cache/qemu-${qver//[:~+]/_}
if [ ! -f "$qdir/.done" ]; then
  echo "pi-build: fetching qemu-system-arm $qver" >&2
  rm -rf "$qdir"; mkdir -p "$qdir/deb"
  fetch "$qdir/deb" "qemu-system-arm=$qver"
  dpkg-deb -x "$qdir"/deb/qemu-system-arm_*.deb "$qdir"
  rm -rf "$qdir/deb"
  touch "$qdir/.done"
fi
qemu=$qdir/usr/bin/qemu-system-aarch64
[ -x "$qemu" ] || die "$qemu is missing from qemu-system-arm $qver"
"$qemu" --version >/dev/null 2>&1 || die "$qemu does not run: $("$qemu" --version 2>&1 | head -3)"
major=$("$qemu" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p' | head -1)
[ "${major:-0}" -ge 9 ] || die "$qemu is QEMU $major: the BCM2835 I2C controller needs 9 or later"

# The kernel: the ABI Debian's linux-image-arm64 points at.
abi=${COVO_PI_KERNEL_ABI:-$(apt-cache depends linux-image-arm64:arm64 2>/dev/null \
  | sed -n 's/.*Depends: linux-image-\([0-9.]*-[0-9]*-arm64\).*/\1/p' | head -1)}
[ -n "$abi" ] || die "cannot tell which kernel linux-image-arm64 points at"
out=$cache/$abi
mods="drivers/i2c/i2c-dev.ko drivers/i2c/busses/i2c-bcm2835.ko drivers/spi/spi-bcm2835.ko
      drivers/watchdog/bcm2835_wdt.ko"
if [ ! -f "$out/.done" ]; then
  echo "pi-build: fetching linux-image-$abi (arm64)" >&2
  rm -rf "$out"; mkdir -p "$out/kmod" "$out/deb"
  fetch "$out/deb" "linux-image-$abi:arm64"
  dpkg-deb -x "$out"/deb/linux-image-*.deb "$out/root"
  cp "$out/root/boot/vmlinuz-$abi" "$out/Image"
  for m in $mods; do
    f=$out/root/lib/modules/$abi/kernel/$m
    [ -f "$f" ] || die "linux-image-$abi has no $m"
    cp "$f" "$out/kmod/"
  done
  dtb=$out/root/usr/lib/linux-image-$abi/broadcom/bcm2837-rpi-3-b.dtb
  [ -f "$dtb" ] || die "linux-image-$abi has no broadcom/bcm2837-rpi-3-b.dtb"
  cp "$dtb" "$out/bcm2837-rpi-3-b.dtb.orig"
  rm -rf "$out/root" "$out/deb"
  touch "$out/.done"
fi
# What the Pi's firmware does with the suite's config.txt, done to the device tree by hand:
#   dtoverlay=disable-bt  the PL011 (ttyAMA0) leaves Bluetooth for the header's UART, where the
#                         microcontroller is; without it the kernel gives the port to the
#                         Bluetooth driver (serdev) and no ttyAMA0 exists
#   dtparam=spi=on        SPI0 enabled with spidev on chip select 0 (/dev/spidev0.0)
dtb=$out/bcm2837-rpi-3-b.dtb
cp "$out/bcm2837-rpi-3-b.dtb.orig" "$dtb"
spi=/soc/spi@7e204000
fdtput -r "$dtb" /soc/serial@7e201000/bluetooth || die "the Pi 3 device tree has no Bluetooth node on the PL011"
fdtput -t s "$dtb" "$spi" status okay || die "the Pi 3 device tree has no $spi"
fdtput -c "$dtb" "$spi/spidev@0"
fdtput -t s "$dtb" "$spi/spidev@0" compatible rohm,dh2228fv
fdtput -t i "$dtb" "$spi/spidev@0" reg 0
fdtput -t i "$dtb" "$spi/spidev@0" spi-max-frequency 1000000
[ "$(fdtget "$dtb" / model)" = "Raspberry Pi 3 Model B" ] || die "unexpected model in $dtb: $(fdtget "$dtb" / model)"

# busybox for arm64 (static).
bb=$cache/busybox
if [ ! -x "$bb" ]; then
  echo "pi-build: fetching busybox-static (arm64)" >&2
  rm -rf "$cache/bb"; mkdir -p "$cache/bb/deb"
  fetch "$cache/bb/deb" busybox-static:arm64
  dpkg-deb -x "$cache"/bb/deb/busybox-static_*.deb "$cache/bb/root"
  cp "$cache/bb/root/bin/busybox" "$bb.tmp" && mv "$bb.tmp" "$bb"
  rm -rf "$cache/bb"
fi
echo "$abi $out $qemu $bb"
