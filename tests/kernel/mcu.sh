# Sourced by the guests' runners (tests/kernel/run.sh, tests/pi/run.sh): the microcontroller, the
# firmware image in qemu-system-arm (lm3s6965evb), its UART0 a Unix socket a guest's serial port
# connects to.
#   start_mcu FIRMWARE SOCKET LOG   sets mcu_pid; returns once SOCKET exists, or calls die
start_mcu() {
  qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -display none -monitor none \
    -semihosting-config enable=on,target=native -serial "unix:$2,server=on,wait=off" \
    -kernel "$1" </dev/null >"$3" 2>&1 &
  mcu_pid=$!
  for _ in $(seq 100); do [ -S "$2" ] && break; sleep 0.1; done
  [ -S "$2" ] || die "the MCU's QEMU did not open $2: $(cat "$3")"
}
