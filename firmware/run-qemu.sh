#!/usr/bin/env bash
# Builds the QEMU firmware (release) and boots it with UART0 on a pseudo-terminal.
#
#   firmware/run-qemu.sh            # prints "char device redirected to /dev/pts/N (label serial0)"
#   firmware/run-qemu.sh unix:/tmp/covo-mcu.sock,server=on,wait=on   # any other -serial backend
#
# QEMU prints the pty path on stdout; the firmware's boot banner (semihosting) follows it there.
# Quit with Ctrl-A X, or by killing the process.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
serial="${1:-pty}"
(cd "$here/qemu-lm3s6965" && cargo build --release --quiet)
exec qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -nographic \
    -semihosting-config enable=on,target=native \
    -serial "$serial" \
    -kernel "$here/qemu-lm3s6965/target/thumbv7m-none-eabi/release/covo-fw-qemu"
