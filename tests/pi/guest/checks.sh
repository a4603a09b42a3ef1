#!/bin/sh
# The emulated Raspberry Pi 3's checks, run by /init in the guest (tests/pi/README.md). Each
# compares what covo says with an independent view: busybox i2c-tools on the same controller,
# the pinctrl driver's debugfs view of the BCM2835 GPIO registers, /proc/tty's UART counters,
# the device tree. The host runner adds what only QEMU sees (the EEPROM's backing file, the
# temperature it gave the TMP105). Lines: "CHECK <subsystem> <name> ok|FAIL ...", "FIGURE ...",
# then "RESULT pass=N fail=M". `sh /checks.sh GROUP` runs one group.
only=$1
COVO=/bin/covo
LIB=/lib/covo
export COVO_HOME=/tmp/covo-home
RUN=/etc/covo/run
pass=0
fail=0
. "$LIB/lib.sh"
# The TMP105's temperature that the host set through QMP before the guest started, in m°C.
TMP_MILLI=$(sed -n 's/.*covo_tmp105=\([-0-9]*\).*/\1/p' /proc/cmdline)
# pin N: the pinctrl driver's line for BCM pin N, e.g. "function gpio_out in hi".
pin() { grep "^pin $1 (gpio$1)" /sys/kernel/debug/pinctrl/*/pins | sed 's/.*) [0-9]*:[^ ]* //; s/;.*//'; }
# eeprom OFFSET COUNT: bytes of the EEPROM through i2ctransfer, "0xNN 0xNN ...".
eeprom() { i2ctransfer -y 1 w2@0x50 0x00 "$1" r"$2"; }

# ---- the device tree, and the hardware covo reports ----
g_dt() {
  m=$(tr -d '\0' </proc/device-tree/model)
  call pi3 system_info '{}'
  [ "$m" = "Raspberry Pi 3 Model B" ] && has "\"board_model\":\"$m\"" && has '"arch":"aarch64"'
  res dt system_info_reports_the_device_tree_model $? "dt=$m out=$out"
  c=$(tr -d '\0' </proc/device-tree/soc/i2c@7e804000/compatible)
  d=$(basename "$(readlink /sys/bus/i2c/devices/i2c-1/device/driver)")
  [ "$c" = brcm,bcm2835-i2c ] && [ "$d" = i2c-bcm2835 ]
  res dt i2c_1_is_the_bcm2835_controller $? "compatible=$c driver=$d"
}

# ---- I2C on the BCM2835 controller (QEMU's hw/i2c/bcm2835_i2c.c) ----
g_i2c() {
  call pi3 i2c_scan '{"bus":1}'
  c=$(printf '%s' "$out" | grep -o '"address":"0x[0-9a-f]*"' | sed 's/.*0x//; s/"//' | sort | tr '\n' ' ')
  d=$(i2cdetect -y -r 1 | sed 1d | cut -c5- | tr ' ' '\n' | grep -v -e '^--$' -e '^$' | sort | tr '\n' ' ')
  [ "$c" = "$d" ] && [ "$d" = "48 50 " ]
  res i2c scan_matches_i2cdetect $? "covo=[$c] i2cdetect=[$d] out=$out"

  # The TMP105's temperature register: covo's read, i2ctransfer's, and QEMU's model (the m°C
  # the host set, in the register's 9-bit two's complement: 1/256 °C steps, low 7 bits 0).
  call pi3 i2c_read_register '{"bus":1,"address":"0x48","register":"0x00","width":16}'
  t=$(i2ctransfer -y 1 w1@0x48 0x00 r2 | sed 's/0x//g; s/ //')
  want=$(awk -v m="$TMP_MILLI" 'BEGIN { v = int(m * 256 / 1000); v = v - v % 128; if (v < 0) v += 65536; printf "%04x", v }')
  has "\"hex\":\"0x$want\"" && [ "$t" = "$want" ] && [ -n "$TMP_MILLI" ]
  res i2c tmp105_temperature_matches_qemus_model $? "covo=$out i2ctransfer=$t qemu=${TMP_MILLI}m°C=0x$want"

  # An allowlisted write lands in the EEPROM; covo reads it back; so does i2ctransfer.
  call pi3 i2c_write '{"bus":1,"address":"0x50","data":"00 20 c0 ff ee"}'
  w=$rc wo=$out
  call pi3 i2c_write_read '{"bus":1,"address":"0x50","data":"00 20","count":3}'
  e=$(eeprom 0x20 3)
  [ "$w" = 0 ] && has '"hex":"c0 ff ee"' && [ "$e" = "0xc0 0xff 0xee" ]
  res i2c eeprom_write_then_read_back $? "write=$wo read=$out i2ctransfer=$e"

  # A write to an address the policy does not list is refused before the bus: the TMP105's
  # configuration register keeps its value.
  cfg=$(i2cget -y 1 0x48 0x01)
  call pi3 i2c_write '{"bus":1,"address":"0x48","data":"01 60"}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(i2cget -y 1 0x48 0x01)" = "$cfg" ]
  res policy write_outside_the_allowlist_is_refused $? "rc=$rc out=$out config $cfg->$(i2cget -y 1 0x48 0x01)"

  # read_only: every write is refused and the EEPROM keeps its bytes; reads still work.
  e=$(eeprom 0x30 2)
  call pi3-ro i2c_write '{"bus":1,"address":"0x50","data":"00 30 de ad"}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(eeprom 0x30 2)" = "$e" ]
  res policy read_only_refuses_an_eeprom_write $? "rc=$rc out=$out bytes $e->$(eeprom 0x30 2)"
  call pi3-ro i2c_write_read '{"bus":1,"address":"0x50","data":"00 30 be ef","count":1}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(eeprom 0x30 2)" = "$e" ]
  res policy read_only_refuses_write_read_with_a_payload $? "rc=$rc out=$out bytes $e->$(eeprom 0x30 2)"
  # A 16-bit word address is two written bytes, which read_only cannot tell from data: a read
  # under read_only starts where the pointer is (set here by i2ctransfer) and writes nothing.
  i2ctransfer -y 1 w2@0x50 0x00 0x30
  call pi3-ro i2c_read '{"bus":1,"address":"0x50","count":2}'
  g=$(printf '%s' "$e" | sed 's/0x//g')
  [ $rc = 0 ] && has "\"hex\":\"$g\"" && [ "$(eeprom 0x30 2)" = "$e" ]
  res policy read_only_reads_the_eeprom_at_its_pointer $? "rc=$rc out=$out i2ctransfer=$e"
  # The host compares the EEPROM's backing file with what was written: only 0x20-0x22 changed.
}

# ---- GPIO through the BCM2835's own gpiochip (pinctrl-bcm2835), held by one covo chat ----
g_gpio() {
  serve_model chat "$RUN/pi3.toml" || { res gpio scripted_model_serves 1 "httpd did not start"; return; }
  snap() { echo "echo \"\$(grep '^pin $1 (gpio$1)' /sys/kernel/debug/pinctrl/*/pins | sed 's/.*) [0-9]*:[^ ]* //; s/;.*//') | \$(grep 'GPIO$1 ' /sys/kernel/debug/gpio)\""; }
  b27=$(pin 27)
  reply_call 1 gpio_write '{"pin":"relay","level":1}'
  snap 17 >/tmp/llm/hook.2
  reply_call 2 gpio_write '{"pin":27,"level":1}'
  snap 27 >/tmp/llm/hook.3
  reply_call 3 gpio_write '{"pin":"relay","level":0}'
  snap 17 >/tmp/llm/hook.4
  reply_call 4 gpio_write '{"pin":4,"level":1}'
  reply_text 5 "done"
  b4=$(pin 4)
  $COVO --config "$RUN/chat.cfg" chat --yes --profile full -m "switch the relay" >/tmp/chat.out 2>/tmp/chat.err
  crc=$?
  [ $crc = 0 ] && [ "$(cat /tmp/llm/count)" = 5 ]
  res gpio one_process_runs_the_script $? "rc=$crc requests=$(cat /tmp/llm/count 2>/dev/null) $(head -c 300 /tmp/chat.err)"
  r=$(result 1) s=$(cat /tmp/llm/snap.2 2>/dev/null)
  case "$r|$s" in *'"level":1'*'|function gpio_out in hi'*covo*) true ;; *) false ;; esac
  res gpio relay_high_is_gpio17_driven_high $? "result=$r kernel: $s"
  r=$(result 2) s=$(cat /tmp/llm/snap.3 2>/dev/null)
  case "$r|$s" in *'"level":1'*'|function gpio_out in hi'*covo*) true ;; *) false ;; esac
  res gpio allowed_output_27_driven_high $? "result=$r kernel: $s before: $b27"
  r=$(result 3) s=$(cat /tmp/llm/snap.4 2>/dev/null)
  case "$r|$s" in *'"level":0'*'|function gpio_out in lo'*covo*) true ;; *) false ;; esac
  res gpio relay_low_is_gpio17_driven_low $? "result=$r kernel: $s"
  r=$(result 4)
  case "$r" in *'"error"'*'GPIO4 is not available on this board'*) true ;; *) false ;; esac && [ "$(pin 4)" = "$b4" ]
  res policy pin_outside_the_board_is_refused $? "result=$r pin4 $b4->$(pin 4)"
  kill "$(pidof httpd)" 2>/dev/null
}

# ---- SPI0 (spi-bcm2835) ----
# QEMU 10's BCM2835 SPI controller moves the bytes but has nothing on MISO (it reads zeros), so
# the check is that the transfer went through spi-bcm2835 (the SPI core's own counters), whole.
spistat() { cat /sys/class/spi_master/spi0/statistics/bytes_"$1"; }
g_spi() {
  tx=$(spistat tx) rx=$(spistat rx)
  call pi3 spi_transfer '{"data":"01 02 a5"}'
  [ $rc = 0 ] && has '"written":{"hex":"01 02 a5"' && has '"read":{"hex":"00 00 00"' &&
    [ "$(spistat tx)" = $((tx + 3)) ] && [ "$(spistat rx)" = $((rx + 3)) ]
  res spi transfer_goes_through_spi_bcm2835 $? "rc=$rc out=$out bytes_tx $tx->$(spistat tx) bytes_rx $rx->$(spistat rx)"
  tx=$(spistat tx)
  call pi3-ro spi_write '{"data":"01"}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(spistat tx)" = "$tx" ]
  res policy read_only_refuses_spi $? "rc=$rc out=$out bytes_tx $tx->$(spistat tx)"
}

# ---- The microcontroller on the PL011 (ttyAMA0 through /dev/serial0) ----
ttyama() { sed -n 's/^0: .* tx:\([0-9]*\) rx:\([0-9]*\).*/\1 \2/p' /proc/tty/driver/ttyAMA; }
g_mcu() {
  set -- $(ttyama)
  tx=${1:-0} rx=${2:-0}
  call pi3 mcu_info '{"device":"lm3s"}'
  set -- $(ttyama)
  has '"board":"lm3s6965-qemu"' && has '"firmware":"covo ' && [ "${1:-0}" -gt "$tx" ] && [ "${2:-0}" -gt "$rx" ]
  res serial mcu_info_through_the_pl011 $? "out=$out ttyAMA0 tx $tx->${1:-?} rx $rx->${2:-?}"
  call pi3 mcu_gpio_write '{"pin":2,"level":1}'
  w=$out
  call pi3 mcu_gpio_read '{"pin":2}'
  case "$w|$out" in *'"level":1'*'|'*'"level":1'*) true ;; *) false ;; esac
  res serial mcu_gpio_write_then_read $? "write=$w read=$out"
}

# ---- covo doctor on the real device tree ----
g_doctor() {
  out=$($COVO --config "$RUN/rpi3.cfg" doctor --offline 2>/tmp/covo.err)
  rc=$?
  l=$(line "ok   hardware: Raspberry Pi 3 Model B")
  [ -n "$l" ]
  res doctor names_the_pi_from_the_device_tree $? "rc=$rc out=$out"
  [ -n "$(line "ok   i2c: enabled in /boot/firmware/config.txt")" ] &&
    [ -n "$(line "ok   device: /dev/i2c-1 opens read-write")" ] &&
    [ -n "$(line "ok   device: /dev/gpiochip0 opens read-write")" ] &&
    [ -n "$(line "ok   device: /dev/serial0 opens read-write")" ]
  res doctor shipped_rpi3_board_finds_its_devices $? "$out"
  out=$($COVO --config "$RUN/rpi4.cfg" doctor --offline 2>/tmp/covo.err)
  [ -n "$(line "this is a Raspberry Pi 3 Model B, the board file is for a Raspberry Pi 4 Model B")" ]
  res doctor wrong_board_file_is_named $? "$out"
  # I2C switched off in config.txt while the board uses it: a failure with the fix.
  cp /boot/firmware/config.txt /tmp/config.txt
  sed -i 's/^dtparam=i2c_arm=on$/dtparam=i2c_arm=off/' /boot/firmware/config.txt
  out=$($COVO --config "$RUN/rpi3.cfg" doctor --offline 2>/tmp/covo.err)
  rc=$?
  cp /tmp/config.txt /boot/firmware/config.txt
  f=$(printf '%s\n' "$out" | grep -F -A1 "FAIL i2c: off in /boot/firmware/config.txt" | tail -1)
  [ $rc = 1 ] && case "$f" in *'dtparam=i2c_arm=on'*) true ;; *) false ;; esac
  res doctor i2c_off_in_config_txt_fails_with_the_fix $? "rc=$rc fix=$f out=$out"
}

# ---- What covo takes on the Pi: the aarch64 build's RSS, idle, paged by this kernel ----
g_rss() {
  serve_model idle "$RUN/pi3.toml" || { res rss scripted_model_serves 1 "httpd did not start"; return; }
  $COVO --config "$RUN/idle.cfg" run >/tmp/run.out 2>&1 &
  p=$!
  # At 4 s, start-up's code is still mapped; covo run unmaps it at 5 s (gateway/src/trim.rs),
  # so at 10 s what is mapped is what its idle runs.
  sleep 4
  s=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$p/status")
  sleep 6
  r=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$p/status")
  a=$(awk '$1 == "RssAnon:" { print $2 }' "/proc/$p/status")
  kill "$p"
  wait "$p" 2>/dev/null
  kill "$(pidof httpd)" 2>/dev/null
  echo "FIGURE rss_idle_kib=${r:-none} anon_kib=${a:-none} started_kib=${s:-none} (covo run, pi3 board, scripted model, no MQTT, 10 s after start; started: at 4 s, before it unmaps start-up's code; the binary is in the initramfs, so all of it that was touched counts)"
  [ -n "$r" ]
  res rss covo_run_stays_up_idle $? "$(head -c 300 /tmp/run.out)"
}

run_groups "$only" dt i2c gpio spi mcu doctor rss
