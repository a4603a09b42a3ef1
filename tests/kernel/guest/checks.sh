#!/bin/sh
# The kernel suite's checks, run by /init in the guest (tests/kernel/README.md). Each check
# compares what covo says with an independent view of the kernel: busybox i2c-tools, the
# modules' debugfs state, gpio-sim's sysfs, the GPIO uAPI's line info (gpioline), the PWM
# sysfs attributes. One line per check:
#   CHECK <subsystem> <name> ok
#   CHECK <subsystem> <name> FAIL <what was seen>
# then "RESULT pass=N fail=M". A name ending in [defectN] is the correct behaviour for defect N
# of issue 12. Checks come in groups (one function each, self-contained); `sh /checks.sh GROUP`
# runs one group.
only=$1
COVO=/bin/covo
LIB=/lib/covo
export COVO_HOME=/tmp/covo-home
RUN=/etc/covo/run
REGS_BUS=${REGS_DEV#/dev/i2c-}
STUB_BUS=${STUB_DEV#/dev/i2c-}
D=/sys/kernel/debug/covo_i2c_regs
SPI_D=/sys/kernel/debug/covo_spi_loop
PWM_D=/sys/kernel/debug/covo_pwm
pass=0
fail=0

# ---- helpers (one, res, call, has, near, num, line, the scripted model: lib.sh) ----
. "$LIB/lib.sh"
# reg ADDR REG: one register of a covo_i2c_regs chip, from debugfs, as two hex digits.
reg() { od -An -tx1 -j "$(($2))" -N 1 "$D/0x$1/regs" | tr -d ' \n'; }
dw() { cat "$D/0x$1/data_writes"; }
simval() { cat "$SIM_SYS/sim_gpio$1/value"; }
pull() { echo "pull-$2" >"$SIM_SYS/sim_gpio$1/pull"; }
info() { "$LIB/gpioline" info "${2:-$SIM_CHIP}" "$1"; }
# until_line OFFSET PATTERN [CHIP]: waits up to 5 s until the line's info matches *PATTERN*.
until_line() {
  _i=0
  while [ $_i -lt 50 ]; do
    case "$(info "$1" "$3")" in *$2*) return 0 ;; esac
    sleep 0.1
    _i=$((_i + 1))
  done
  return 1
}
hint_is_not_i2c() { ! has 'the bus may recover'; }

# ---- I2C on a full I2C adapter (covo_i2c_regs) ----
g_i2c() {
  call kernel i2c_scan "{\"bus\":1}"
  c=$(printf '%s' "$out" | grep -o '"address":"0x[0-9a-f]*"' | sed 's/.*0x//; s/"//' | sort | tr '\n' ' ')
  d=$(i2cdetect -y -r "$REGS_BUS" | sed 1d | cut -c5- | tr ' ' '\n' | grep -v -e '^--$' -e '^$' | sort | tr '\n' ' ')
  [ "$c" = "$d" ] && [ "$d" = "40 48 76 " ]
  res i2c scan_matches_i2cdetect $? "covo=[$c] i2cdetect=[$d] out=$out"

  call kernel i2c_read_register '{"bus":1,"address":"0x76","register":"0xd0"}'
  g=$(i2cget -y "$REGS_BUS" 0x76 0xd0)
  has '"hex":"0x60"' && [ "$g" = 0x60 ]
  res i2c register_read_matches_i2cget $? "covo=$out i2cget=$g"

  w=$(dw 40)
  call kernel i2c_write '{"bus":1,"address":"0x40","data":"10 aa bb"}'
  [ $rc = 0 ] && [ "$(reg 40 0x10)$(reg 40 0x11)" = aabb ] && [ "$(dw 40)" = $((w + 2)) ]
  res i2c write_lands_in_the_chip $? "rc=$rc out=$out regs=$(reg 40 0x10)$(reg 40 0x11) data_writes $w->$(dw 40)"

  w=$(dw 40)
  call kernel i2c_write_read '{"bus":1,"address":"0x40","data":"10","count":2}'
  t=$(i2ctransfer -y "$REGS_BUS" w1@0x40 0x10 r2)
  has '"hex":"aa bb"' && [ "$t" = "0xaa 0xbb" ] && [ "$(dw 40)" = "$w" ]
  res i2c write_read_matches_i2ctransfer $? "covo=$out i2ctransfer=$t data_writes $w->$(dw 40)"

  i2ctransfer -y "$REGS_BUS" w1@0x40 0x11
  call kernel i2c_read '{"bus":1,"address":"0x40","count":1}'
  has '"hex":"bb"'
  res i2c read_starts_at_the_pointer $? "$out"

  call kernel i2c_read '{"bus":1,"address":"0x41","count":1}'
  i2cget -y "$REGS_BUS" 0x41 0x00 >/dev/null 2>&1
  g=$?
  [ $rc != 0 ] && has 'no device acknowledged address 0x41' && [ $g != 0 ]
  res i2c absent_address_is_a_nack $? "rc=$rc out=$out i2cget_rc=$g"

  i2ctransfer -y "$REGS_BUS" w3@0x40 0x20 0x12 0x34
  w=$(dw 40) r0=$(reg 40 0)$(reg 40 1)
  call kernel i2c_read_register '{"bus":1,"address":"0x40","register":"0x20","width":16}'
  has '"hex":"0x1234"' && [ "$(dw 40)" = "$w" ] && [ "$(reg 40 0)$(reg 40 1)" = "$r0" ]
  res i2c read_register_width16_writes_only_the_pointer[defect1] $? \
    "out=$out data_writes $w->$(dw 40) regs00-01 $r0->$(reg 40 0)$(reg 40 1)"

  call kernel sensor_read '{"sensor":"climate"}'
  set -- $(cat /etc/covo/expected-bme280)
  t=$(printf '%s' "$out" | sed -n 's/.*"temperature","value":\([-0-9.]*\).*/\1/p')
  h=$(printf '%s' "$out" | sed -n 's/.*"humidity","value":\([-0-9.]*\).*/\1/p')
  p=$(printf '%s' "$out" | sed -n 's/.*"pressure","value":\([-0-9.]*\).*/\1/p')
  near "${t:-999}" "$1" 0.01 && near "${h:-999}" "$2" 0.02 && near "${p:-999}" "$3" 0.02
  res i2c sensor_read_bme280_matches_the_datasheet $? "covo t=$t h=$h p=$p expected $* out=$out"
  # The driver really ran against the chip: humidity oversampling and forced mode are set.
  [ "$(reg 76 0xf2)" = 01 ] && [ $((0x$(reg 76 0xf4) & 3)) = 1 ]
  res i2c sensor_read_configured_the_chip $? "ctrl_hum=$(reg 76 0xf2) ctrl_meas=$(reg 76 0xf4)"
}

# ---- I2C on an SMBus-only adapter (i2c-stub) ----
g_smbus() {
  i2cset -y "$STUB_BUS" 0x50 0x10 0x5a
  i2cset -y "$STUB_BUS" 0x50 0x11 0xc3
  call kernel i2c_scan '{"bus":2}'
  d=$(i2cdetect -y "$STUB_BUS" | sed 1d | cut -c5- | tr ' ' '\n' | grep -v -e '^--$' -e '^$' | tr '\n' ' ')
  has '"address":"0x50"' && [ "$d" = "50 " ]
  res smbus scan_finds_the_chip[defect6] $? "covo=$out i2cdetect=[$d]"

  call kernel i2c_read_register '{"bus":2,"address":"0x50","register":"0x10","count":2}'
  g="$(i2cget -y "$STUB_BUS" 0x50 0x10) $(i2cget -y "$STUB_BUS" 0x50 0x11)"
  has '"hex":"0x5a"' && has '"hex":"0xc3"' && [ "$g" = "0x5a 0xc3" ]
  res smbus read_register_via_smbus[defect6] $? "covo=$out i2cget=$g"

  call kernel i2c_write '{"bus":2,"address":"0x50","data":"12 77"}'
  g=$(i2cget -y "$STUB_BUS" 0x50 0x12)
  [ $rc = 0 ] && [ "$g" = 0x77 ]
  res smbus write_via_smbus[defect6] $? "rc=$rc out=$out i2cget=$g"

  call kernel i2c_write_read '{"bus":2,"address":"0x50","data":"11","count":1}'
  has '"hex":"c3"'
  res smbus write_read_pointer_via_smbus[defect6] $? "$out"
}

# ---- GPIO on gpio-sim: one process per call ----
g_gpio() {
  [ "$("$LIB/gpioline" find "$SIM_CHIP" button)" = 1 ] && [ "$("$LIB/gpioline" find "$SIM_CHIP" relay)" = 0 ]
  res gpio named_lines_are_where_the_board_says $? "$(info 0) / $(info 1)"

  pull 1 up
  call kernel gpio_read '{"pin":"button"}'
  has '"level":1' && [ "$(simval 1)" = 1 ]
  res gpio read_high_by_name $? "out=$out sim=$(simval 1)"
  pull 1 down
  call kernel gpio_read '{"pin":"button"}'
  has '"level":0' && [ "$(simval 1)" = 0 ]
  res gpio read_low_by_name $? "out=$out sim=$(simval 1)"
  i=$(info 1)
  case "$i" in *dir=in*used=0*) true ;; *) false ;; esac
  res gpio read_leaves_an_input_released $? "$i"

  # A pulse: high while covo holds the line, then low.
  $COVO --config "$RUN/kernel.cfg" tools call --yes gpio_write '{"pin":2,"level":1,"pulse_ms":2000}' \
    >/tmp/pulse.out 2>/tmp/pulse.err &
  cp=$!
  until_line 2 consumer=covo
  sleep 0.2
  v=$(simval 2) i=$(info 2)
  wait $cp
  out=$(cat /tmp/pulse.out)
  case "$i" in *consumer=covo*dir=out*) true ;; *) false ;; esac
  [ $? = 0 ] && [ "$v" = 1 ] && has '"pulsed":1' && has '"level":0'
  res gpio pulse_drives_the_line $? "during: value=$v $i; out=$out"

  # The edge is made once covo holds the line (an edge before the wait is old news).
  pull 1 down
  (until_line 1 consumer=covo; sleep 0.3; pull 1 up) &
  call kernel gpio_wait_edge '{"pin":"button","edge":"rising","timeout_ms":5000}'
  wait
  a=$(num after_ms)
  has '"edge":"rising"' && [ "${a:-0}" -ge 200 ] && [ "${a:-0}" -le 4000 ]
  res gpio wait_edge_rising $? "$out"
  (until_line 1 consumer=covo; sleep 0.3; pull 1 down) &
  call kernel gpio_wait_edge '{"pin":"button","edge":"falling","timeout_ms":5000}'
  wait
  has '"edge":"falling"'
  res gpio wait_edge_falling $? "$out"
  call kernel gpio_wait_edge '{"pin":"button","timeout_ms":300}'
  has '"timed_out":true'
  res gpio wait_edge_times_out $? "$out"

  # Line 5 is hogged by the kernel (gpio-sim hog), line 6 held by another program.
  i=$(info 5)
  call kernel gpio_read '{"pin":5}'
  case "$i" in *consumer=kernel-hog*used=1*) true ;; *) false ;; esac
  [ $? = 0 ] && [ $rc != 0 ] && has 'in use'
  res gpio busy_line_held_by_the_kernel $? "line: $i; out=$out"
  hint_is_not_i2c
  res gpio busy_line_error_has_no_i2c_hint[defect7] $? "$out"
  "$LIB/gpioline" hold "$SIM_CHIP" 6 other-app 3 >/tmp/hold.out &
  hp=$!
  sleep 0.3
  call kernel gpio_read '{"pin":6}'
  i=$(info 6)
  kill $hp 2>/dev/null
  wait $hp 2>/dev/null
  case "$i" in *consumer=other-app*used=1*) true ;; *) false ;; esac
  [ $? = 0 ] && [ $rc != 0 ] && has 'in use'
  res gpio busy_line_held_by_another_program $? "line: $i; out=$out"

  # A declared output keeps its direction when read (defect 4), in fresh processes.
  call kernel gpio_write '{"pin":"relay","level":1}'
  i=$(info 0)
  case "$i" in *dir=out*) true ;; *) false ;; esac
  [ $? = 0 ] && [ $rc = 0 ]
  res gpio write_makes_the_relay_an_output $? "rc=$rc out=$out after: $i"
  call kernel gpio_read '{"pin":"relay"}'
  i=$(info 0)
  case "$i" in *dir=out*) true ;; *) false ;; esac
  [ $? = 0 ] && [ $rc = 0 ]
  res gpio read_keeps_the_relay_an_output[defect4] $? "rc=$rc out=$out after: $i"
  call kernel gpio_write '{"pin":"relay","level":1}'
  $COVO --config "$RUN/kernel.cfg" tools call --yes gpio_wait_edge '{"pin":"relay","timeout_ms":1500}' \
    >/tmp/wait.out 2>/tmp/wait.err &
  cp=$!
  until_line 0 consumer=covo
  sleep 0.2
  i=$(info 0)
  wait $cp
  ia=$(info 0)
  case "$i $ia" in *dir=out*dir=out*) true ;; *) false ;; esac
  res gpio wait_edge_keeps_the_relay_an_output[defect4] $? "during: $i; after: $ia; out=$(cat /tmp/wait.out)"
}

# ---- GPIO in one long-running process (covo chat with a scripted model) ----
g_gpio_chat() {
  serve_model chat "$RUN/kernel.toml" || { res gpio-chat scripted_model_serves 1 "httpd did not start"; return; }
  snap() { echo "echo value=\$(cat $SIM_SYS/sim_gpio$1/value) \$($LIB/gpioline info $SIM_CHIP $1)"; }
  pull 3 down
  pull 4 down
  pull 0 down
  reply_call 1 gpio_read '{"pin":3}'
  reply_call 2 gpio_write '{"pin":3,"level":1}'
  snap 3 >/tmp/llm/hook.3
  reply_call 3 gpio_read '{"pin":4}'
  echo "(sleep 1.5; echo pull-up >$SIM_SYS/sim_gpio4/pull) >/dev/null 2>&1 &" >/tmp/llm/hook.4
  reply_call 4 gpio_wait_edge '{"pin":4,"edge":"rising","timeout_ms":5000}'
  reply_call 5 gpio_write '{"pin":"relay","level":1}'
  snap 0 >/tmp/llm/hook.6
  reply_call 6 gpio_read '{"pin":"relay"}'
  snap 0 >/tmp/llm/hook.7
  echo "(sleep 0.7; $LIB/gpioline info $SIM_CHIP 0 >/tmp/llm/during.relay) >/dev/null 2>&1 &" >>/tmp/llm/hook.7
  reply_call 7 gpio_wait_edge '{"pin":"relay","timeout_ms":1500}'
  snap 0 >/tmp/llm/hook.8
  reply_text 8 "done"
  $COVO --config "$RUN/chat.cfg" chat --yes --profile full -m "exercise the GPIO lines" \
    >/tmp/chat.out 2>/tmp/chat.err
  crc=$?
  [ $crc = 0 ] && [ "$(cat /tmp/llm/count)" = 8 ]
  res gpio-chat one_process_runs_the_script $? "rc=$crc requests=$(cat /tmp/llm/count 2>/dev/null) $(head -c 300 /tmp/chat.err)"

  r=$(result 1)
  case "$r" in *'"level":0'*) true ;; *) false ;; esac
  res gpio-chat read $? "$r"
  r=$(result 2) s=$(cat /tmp/llm/snap.3 2>/dev/null)
  case "$r|$s" in *'"level":1'*'|value=1'*dir=out*) true ;; *) false ;; esac
  res gpio-chat read_then_write_same_line[defect2] $? "result=$r kernel: $s"
  r=$(result 4)
  case "$r" in *'"edge":"rising"'*) true ;; *) false ;; esac
  res gpio-chat read_then_wait_edge_same_line[defect3] $? "$r"
  r=$(result 6) s=$(cat /tmp/llm/snap.7 2>/dev/null)
  s6=$(cat /tmp/llm/snap.6 2>/dev/null)
  case "$r|$s6|$s" in *'"level":1'*'|value=1'*dir=out*'|value=1'*dir=out*) true ;; *) false ;; esac
  res gpio-chat read_keeps_the_relay_driven[defect4] $? "result=$r before: $s6 after: $s"
  for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s /tmp/llm/during.relay ] && break; sleep 0.2; done
  d=$(cat /tmp/llm/during.relay 2>/dev/null) s=$(cat /tmp/llm/snap.8 2>/dev/null)
  case "$d|$s" in *dir=out*'|value=1'*dir=out*) true ;; *) false ;; esac
  res gpio-chat wait_edge_keeps_the_relay_driven[defect4] $? "during: $d after: $s result=$(result 7)"
  kill "$(pidof httpd)" 2>/dev/null
}

# ---- GPIO on a chip without interrupts (covo_gpio_noirq) ----
g_noirq() {
  P=/sys/module/covo_gpio_noirq/parameters/levels
  echo 165 >$P # 0xA5: line 0 high, line 1 low
  call noirq gpio_read '{"pin":"expander_in"}'
  o1=$out
  call noirq gpio_read '{"pin":1}'
  case "$o1|$out" in *'"level":1'*'|'*'"level":0'*) true ;; *) false ;; esac
  res gpio-noirq read_without_irq[defect5] $? "levels=0xa5: line0 $o1 line1 $out"
  echo 90 >$P # 0x5A
  call noirq gpio_read '{"pin":0}'
  o1=$out
  call noirq gpio_read '{"pin":1}'
  case "$o1|$out" in *'"level":0'*'|'*'"level":1'*) true ;; *) false ;; esac
  res gpio-noirq read_follows_the_chip[defect5] $? "levels=0x5a: line0 $o1 line1 $out"
  call noirq gpio_wait_edge '{"pin":0,"timeout_ms":500}'
  [ $rc != 0 ] && case "$out" in *[Ii][Nn][Tt][Ee][Rr][Rr][Uu][Pp][Tt]*) true ;; *) false ;; esac
  res gpio-noirq wait_edge_says_no_interrupt[defect5] $? "$out"
  hint_is_not_i2c
  res gpio-noirq error_has_no_i2c_hint[defect7] $? "$out"
  call noirq gpio_write '{"pin":2,"level":1}'
  i=$(info 2 "$NOIRQ_CHIP") v=$("$LIB/gpioline" get "$NOIRQ_CHIP" 2)
  case "$i" in *dir=out*) true ;; *) false ;; esac
  [ $? = 0 ] && [ $rc = 0 ] && [ "$v" = 1 ]
  res gpio-noirq write_without_irq $? "rc=$rc out=$out after: $i level=$v"
}

# ---- SPI through spidev on covo_spi_loop (MISO = ~MOSI) ----
g_spi() {
  drv=$(readlink -f /sys/bus/spi/devices/spi0.0/driver)
  [ "${drv##*/}" = spidev ]
  res spi spidev_bound_by_driver_override $? "driver=$drv"
  n=$(cat $SPI_D/tx_bytes)
  call kernel spi_transfer '{"data":"01 02 a5"}'
  l=$(od -An -tx1 $SPI_D/last_tx | tr -s ' ' | sed 's/^ //; s/ $//')
  has '"hex":"fe fd 5a"' && [ "$l" = "01 02 a5" ] && [ "$(cat $SPI_D/tx_bytes)" = $((n + 3)) ]
  res spi transfer_is_full_duplex $? "out=$out mosi=[$l] tx_bytes $n->$(cat $SPI_D/tx_bytes)"
  n=$(cat $SPI_D/tx_bytes)
  call kernel spi_write '{"data":"de ad be ef"}'
  l=$(od -An -tx1 $SPI_D/last_tx | tr -s ' ' | sed 's/^ //; s/ $//')
  [ $rc = 0 ] && [ "$l" = "de ad be ef" ] && [ "$(cat $SPI_D/tx_bytes)" = $((n + 4)) ]
  res spi write_clocks_the_bytes_out $? "rc=$rc out=$out mosi=[$l] tx_bytes $n->$(cat $SPI_D/tx_bytes)"
}

# ---- PWM through sysfs on covo_pwm ----
pwmstate() { echo "sysfs $(cat "$PWM_CHIP/pwm0/period") $(cat "$PWM_CHIP/pwm0/duty_cycle") $(cat "$PWM_CHIP/pwm0/enable") chip $(cat $PWM_D/period0) $(cat $PWM_D/duty0) $(cat $PWM_D/enabled0)"; }
g_pwm() {
  call kernel pwm_set '{"channel":"fan","frequency_hz":25000,"duty":0.4}'
  s=$(pwmstate)
  [ $rc = 0 ] && [ "$s" = "sysfs 40000 16000 1 chip 40000 16000 1" ]
  res pwm set_25khz_40_percent $? "out=$out $s"
  call kernel pwm_set '{"channel":"fan","frequency_hz":50000,"duty":0.9}'
  s1=$(pwmstate)
  call kernel pwm_set '{"channel":"fan","frequency_hz":100000,"duty":0.5}'
  s=$(pwmstate)
  [ $rc = 0 ] && [ "$s1" = "sysfs 20000 18000 1 chip 20000 18000 1" ] && [ "$s" = "sysfs 10000 5000 1 chip 10000 5000 1" ]
  res pwm period_shrinks_below_the_old_duty $? "out=$out first: $s1 then: $s"
  a=$(cat $PWM_D/applies0)
  call kernel pwm_set '{"channel":"fan","frequency_hz":200000,"duty":0.5}'
  [ $rc != 0 ] && [ "$(cat $PWM_D/applies0)" = "$a" ] && [ "$(pwmstate)" = "$s" ]
  res pwm over_the_limit_is_refused $? "out=$out applies $a->$(cat $PWM_D/applies0) $(pwmstate)"
}

# ---- The board policy on the real backend ----
g_policy() {
  w=$(dw 48)
  call kernel i2c_write '{"bus":1,"address":"0x48","data":"00 11"}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(dw 48)" = "$w" ]
  res policy write_outside_the_allowlist_is_refused $? "out=$out data_writes $w->$(dw 48)"

  w=$(dw 40) r=$(reg 40 0x10)
  call kernel-ro i2c_write '{"bus":1,"address":"0x40","data":"10 01"}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(dw 40)" = "$w" ] && [ "$(reg 40 0x10)" = "$r" ]
  res policy read_only_refuses_i2c_write $? "out=$out data_writes $w->$(dw 40)"

  call kernel-ro i2c_write_read '{"bus":1,"address":"0x40","data":"10 99","count":1}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(dw 40)" = "$w" ] && [ "$(reg 40 0x10)" = "$r" ]
  res policy read_only_refuses_write_read_with_a_payload $? "out=$out data_writes $w->$(dw 40)"

  call kernel-ro i2c_write_read '{"bus":1,"address":"0x40","data":"10","count":1}'
  [ $rc = 0 ] && has "\"hex\":\"$r\"" && [ "$(dw 40)" = "$w" ]
  res policy read_only_allows_a_pointer_read $? "out=$out data_writes $w->$(dw 40)"

  i2ctransfer -y "$REGS_BUS" w3@0x48 0x00 0x0b 0xcd
  w=$(dw 48) r0=$(reg 48 0)$(reg 48 1)
  call kernel-ro i2c_read_register '{"bus":1,"address":"0x48","register":0,"width":16}'
  pw=$(cat $D/0x48/pointer_writes)
  has '"hex":"0x0bcd"' && [ "$(dw 48)" = "$w" ] && [ "$(reg 48 0)$(reg 48 1)" = "$r0" ]
  res policy read_only_width16_read_writes_nothing[defect1] $? \
    "out=$out data_writes $w->$(dw 48) regs00-01 $r0->$(reg 48 0)$(reg 48 1)"

  call kernel-ro i2c_read_register '{"bus":1,"address":"0x48","register":"0x0000","register_width":16}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(dw 48)" = "$w" ] && [ "$(cat $D/0x48/pointer_writes)" = "$pw" ]
  res policy read_only_refuses_a_16bit_register_address $? "out=$out data_writes $w->$(dw 48)"

  i=$(info 2)
  call kernel-ro gpio_write '{"pin":2,"level":1}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(info 2)" = "$i" ]
  res policy read_only_refuses_gpio_write $? "out=$out line $i -> $(info 2)"

  n=$(cat $SPI_D/tx_bytes)
  call kernel-ro spi_write '{"data":"01"}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(cat $SPI_D/tx_bytes)" = "$n" ]
  res policy read_only_refuses_spi $? "out=$out tx_bytes $n->$(cat $SPI_D/tx_bytes)"

  a=$(cat $PWM_D/applies0)
  call kernel-ro pwm_set '{"channel":0,"frequency_hz":1000,"duty":0.5}'
  [ $rc != 0 ] && has 'policy_refused' && [ "$(cat $PWM_D/applies0)" = "$a" ]
  res policy read_only_refuses_pwm $? "out=$out applies $a->$(cat $PWM_D/applies0)"

  n=$(cat $SPI_D/tx_bytes)
  big=$(awk 'BEGIN { for (i = 0; i < 4097; i++) printf "00 " }')
  call kernel spi_transfer "{\"data\":\"$big\"}"
  [ $rc != 0 ] && [ "$(cat $SPI_D/tx_bytes)" = "$n" ]
  res policy transfer_over_max_transfer_is_refused $? "rc=$rc $(printf '%s' "$out" | cut -c1-200) tx_bytes $n->$(cat $SPI_D/tx_bytes)"
}

# ---- A microcontroller over the kernel's serial driver (the firmware in a second QEMU) ----
# ttyS1's byte counters, from the 8250 driver: "TX RX".
ttys1() { sed -n 's/^1: .* tx:\([0-9]*\) rx:\([0-9]*\).*/\1 \2/p' /proc/tty/driver/serial; }
g_mcu() {
  set -- $(ttys1)
  tx=${1:-0} rx=${2:-0}
  call mcu mcu_info '{}'
  set -- $(ttys1)
  has '"board":"lm3s6965-qemu"' && [ "${1:-0}" -gt "$tx" ] && [ "${2:-0}" -gt "$rx" ]
  res serial mcu_info_through_ttyS1 $? "out=$out ttyS1 tx $tx->${1:-?} rx $rx->${2:-?}"
  call mcu mcu_gpio_write '{"pin":2,"level":1}'
  w=$out
  call mcu mcu_gpio_read '{"pin":2}'
  case "$w|$out" in *'"level":1'*'|'*'"level":1'*) true ;; *) false ;; esac
  res serial mcu_gpio_write_then_read_high $? "write=$w read=$out"
  call mcu mcu_gpio_write '{"pin":2,"level":0}'
  w=$out
  call mcu mcu_gpio_read '{"pin":2}'
  case "$w|$out" in *'"level":0'*'|'*'"level":0'*) true ;; *) false ;; esac
  res serial mcu_gpio_write_then_read_low $? "write=$w read=$out"
}

# ---- Tool availability follows what opened ----
tool() { printf '%s' "$out" | sed 's/},{"name"/}\n{"name"/g' | grep "^\[*{\"name\":\"$1\","; }
g_avail() {
  out=$($COVO --config "$RUN/kernel.cfg" tools list --json 2>/tmp/covo.err)
  ok=0
  for t in i2c_read i2c_read_register gpio_read gpio_wait_edge spi_transfer pwm_set sensor_read; do
    case "$(tool $t)" in *'"available":true'*) ;; *) ok=1 ;; esac
  done
  res availability tools_of_working_devices_are_available $ok "$(tool i2c_read) $(tool gpio_read)"
  out=$($COVO --config "$RUN/broken.cfg" tools list --json 2>/tmp/covo.err)
  t=$(tool i2c_read)
  case "$t" in *'"available":false'*'/dev/i2c-9'*) true ;; *) false ;; esac
  res availability i2c_tools_unavailable_when_the_bus_fails_to_open[defect8] $? "$t"
  t=$(tool sensor_read)
  case "$t" in *'"available":false'*'/dev/i2c-9'*) true ;; *) false ;; esac
  res availability sensor_unavailable_when_its_bus_fails_to_open[defect8] $? "$t"
  t=$(tool gpio_read)
  case "$t" in *'"available":false'*'/dev/gpiochip9'*) true ;; *) false ;; esac
  res availability gpio_tools_unavailable_when_the_chip_fails_to_open[defect8] $? "$t"
}

# ---- covo doctor probes the board file's I2C devices, reading only ----
# line PREFIX: the first line of $out starting with PREFIX (empty when none).
g_doctor() {
  w=$(dw 76) p=$(cat $D/0x76/pointer_writes) r=$(cat $D/0x76/read_bytes)
  out=$($COVO --config "$RUN/doctor.cfg" doctor --offline 2>/tmp/covo.err)
  rc=$?
  [ $rc = 1 ]
  res doctor exits_1_when_a_device_does_not_answer $? "rc=$rc out=$out err=$(cat /tmp/covo.err)"
  l=$(line "ok   i2c probe: climate (bme280) answers at 0x76 on $REGS_DEV")
  [ -n "$l" ] && [ "$(cat $D/0x76/read_bytes)" -gt "$r" ]
  res doctor device_that_answers_is_ok $? "read_bytes $r->$(cat $D/0x76/read_bytes) out=$out"
  # The independent view: nothing answers at 0x77 for i2cget either.
  i2cget -y "$REGS_BUS" 0x77 0x00 >/dev/null 2>&1
  g=$?
  l=$(line "FAIL i2c probe: outside (bme280): no answer at 0x77 on $REGS_DEV")
  f=$(printf '%s\n' "$out" | grep -F -A1 "FAIL i2c probe: outside" | tail -1)
  [ -n "$l" ] && [ $g != 0 ] && case "$f" in *"fix: "*wiring*"SDO pin selects 0x76 or 0x77"*"i2cdetect -y -r $REGS_BUS"*) true ;; *) false ;; esac
  res doctor device_that_does_not_answer_fails_with_the_fix $? "i2cget_rc=$g fix=$f out=$out"
  l=$(line "ok   i2c probe: adc (ads1115) answers at 0x50 on $STUB_DEV")
  [ -n "$l" ]
  res doctor smbus_only_bus_is_probed_with_a_read $? "$out"
  # A probe reads: the chip saw no data byte and no register-pointer write.
  [ "$(dw 76)" = "$w" ] && [ "$(cat $D/0x76/pointer_writes)" = "$p" ]
  res doctor probes_write_nothing $? "data_writes $w->$(dw 76) pointer_writes $p->$(cat $D/0x76/pointer_writes)"
  case "$out" in *"1 failed,"*) true ;; *) false ;; esac
  res doctor only_the_silent_device_fails $? "$out"
}

run_groups "$only" i2c smbus gpio gpio_chat noirq spi pwm policy avail mcu doctor
