#!/usr/bin/env bash
# Builds and caches what the kernel suite's guest needs (tests/kernel/README.md):
#   $CACHE/$ABI/vmlinux          Debian's 6.1 kernel, uncompressed (QEMU boots it through PVH)
#   $CACHE/$ABI/kmod/*.ko        Debian's modules the guest loads (configfs, i2c-dev, i2c-stub)
#   $CACHE/$ABI/ours-$KEY/*.ko   the suite's modules and gpio-sim + irq_sim, built out of tree
#   $CACHE/$ABI/ours-$KEY/gpioline  the static line-info helper
# CACHE is $COVO_KERNEL_CACHE, else ${CARGO_TARGET_DIR:-target}/kernel-hil. Prints the directory
# holding vmlinux on its last line. Anything missing is an error, never a skip.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${COVO_KERNEL_CACHE:-${CARGO_TARGET_DIR:-$repo/target}/kernel-hil}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
die() { echo "kernel-build: $*" >&2; exit 1; }

# The kernel ABI: the one Debian's linux-headers-amd64 points at (run-all.sh installs it), unless
# COVO_KERNEL_ABI names another whose headers are installed.
abi=${COVO_KERNEL_ABI:-}
if [ -z "$abi" ]; then
  dep=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 2>/dev/null) \
    || die "linux-headers-amd64 is not installed (apt-get install linux-headers-amd64)"
  abi=$(sed -n 's/.*linux-headers-\([0-9.]*-[0-9]*\)-amd64.*/\1-amd64/p' <<<"$dep")
  [ -n "$abi" ] || die "cannot read the kernel ABI from linux-headers-amd64's Depends: $dep"
fi
headers=/usr/src/linux-headers-$abi
[ -f "$headers/Makefile" ] || die "$headers is missing (apt-get install linux-headers-$abi)"
src_tar=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -1)
[ -n "$src_tar" ] || die "/usr/src/linux-source-6.1.tar.* is missing (apt-get install linux-source-6.1)"
out=$cache/$abi
mkdir -p "$out"

# Files taken from the kernel source, extracted once (the tarball takes ~15 s to scan).
srcdir=$cache/src-$(basename "$src_tar")
if [ ! -f "$srcdir/.done" ]; then
  echo "kernel-build: extracting gpio-sim, irq_sim and extract-vmlinux from $src_tar" >&2
  rm -rf "$srcdir"; mkdir -p "$srcdir"
  tar -xf "$src_tar" -C "$srcdir" --strip-components=1 --wildcards \
    '*/drivers/gpio/gpio-sim.c' '*/drivers/gpio/gpiolib.h' '*/kernel/irq/irq_sim.c' \
    '*/scripts/extract-vmlinux'
  touch "$srcdir/.done"
fi

# The kernel image and Debian's modules, from the linux-image package (downloaded, not installed).
if [ ! -f "$out/vmlinux" ] || [ ! -f "$out/kmod/.done" ]; then
  echo "kernel-build: fetching linux-image-$abi" >&2
  tmp=$(mktemp -d "$cache/img.XXXXXX")
  (cd "$tmp" && apt-get download -q "linux-image-$abi" >/dev/null 2>&1) \
    || (cd "$tmp" && apt-get download "linux-image-$abi") \
    || die "apt-get download linux-image-$abi failed"
  dpkg-deb -x "$tmp"/linux-image-*.deb "$tmp/root"
  sh "$srcdir/scripts/extract-vmlinux" "$tmp/root/boot/vmlinuz-$abi" >"$tmp/vmlinux" \
    || die "extract-vmlinux failed on vmlinuz-$abi"
  mkdir -p "$out/kmod"
  for m in fs/configfs/configfs.ko drivers/i2c/i2c-dev.ko drivers/i2c/i2c-stub.ko; do
    f=$tmp/root/lib/modules/$abi/kernel/$m
    [ -f "$f" ] || die "linux-image-$abi has no $m"
    cp "$f" "$out/kmod/"
  done
  mv "$tmp/vmlinux" "$out/vmlinux"
  touch "$out/kmod/.done"
  rm -rf "$tmp"
fi

# The suite's modules, gpio-sim and irq_sim, and the gpioline helper: rebuilt when a source changes.
key=$(cat "$here"/modules/* "$here/guest/gpioline.c" "$srcdir/drivers/gpio/gpio-sim.c" \
        "$srcdir/kernel/irq/irq_sim.c" | sha256sum | cut -c1-16)
ours=$out/ours-$key
if [ ! -f "$ours/.done" ]; then
  echo "kernel-build: building modules against $headers" >&2
  rm -rf "$ours.build"; mkdir -p "$ours.build"
  cp "$here"/modules/* "$ours.build/"
  cp "$srcdir/drivers/gpio/gpio-sim.c" "$srcdir/drivers/gpio/gpiolib.h" "$ours.build/"
  # irq_sim calls handle_simple_irq(irq_to_desc(n)); irq_to_desc is not exported to modules.
  sed 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' \
    "$srcdir/kernel/irq/irq_sim.c" >"$ours.build/irq_sim.c"
  grep -q 'generic_handle_irq(irqnum);' "$ours.build/irq_sim.c" \
    || die "irq_sim.c changed upstream: the handle_simple_irq patch no longer applies"
  printf '\nMODULE_LICENSE("GPL");\n' >>"$ours.build/irq_sim.c"
  make -s -C "$headers" M="$ours.build" modules >"$ours.build/make.log" 2>&1 \
    || { cat "$ours.build/make.log" >&2; die "building the modules failed"; }
  grep -i 'warning' "$ours.build/make.log" >&2 || true
  gcc -static -O2 -Wall -o "$ours.build/gpioline" "$here/guest/gpioline.c" \
    || die "building gpioline (gcc -static) failed"
  rm -rf "$ours"; mkdir -p "$ours"
  cp "$ours.build"/*.ko "$ours.build/gpioline" "$ours/"
  touch "$ours/.done"
  rm -rf "$ours.build"
  # Builds of older sources are not used again.
  for old in "$out"/ours-*; do
    [ "$old" = "$ours" ] || rm -rf "$old"
  done
fi
for m in covo_i2c_regs covo_gpio_noirq covo_spi_loop covo_pwm irq_sim gpio-sim; do
  [ -f "$ours/$m.ko" ] || die "$m.ko was not built"
done
echo "$abi $out $ours"
