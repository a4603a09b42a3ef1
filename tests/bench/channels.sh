# Sourced by the idle-footprint scripts (channels-rss.sh, idle-rss.sh, link-order.sh): what
# `covo run` talks to when every channel is on, on loopback. Each caller has `fail`, a `pids`
# array its cleanup kills and a `work` directory.
#
#   start_channels    starts a mosquitto (anonymous, no persistence) on $port and the stand-in
#                     Bot API (tests/bench/bot-api.py) on $bot_port
#   free_port         prints a free TCP port on 127.0.0.1
#   channels_toml ID WEB_PORT   prints a covo.toml with [mqtt], [web] and [telegram] (token:
#                     COVO_TELEGRAM_TOKEN, any value) pointed at them
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_channels() {
  local mosq
  mosq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
  [ -x "$mosq" ] || fail "mosquitto is missing (apt-get install -y mosquitto)"
  port=$(free_port)
  printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" >"$work/mosquitto.conf"
  "$mosq" -c "$work/mosquitto.conf" 2>/dev/null &
  pids+=($!)
  bot_port=$(free_port)
  python3 tests/bench/bot-api.py "$bot_port" &
  pids+=($!)
}
channels_toml() { # gateway_id web_port
  printf '[mqtt]\nurl = "mqtt://127.0.0.1:%s"\ngateway_id = "%s"\n[web]\nbind = "127.0.0.1:%s"\n[telegram]\napi_base = "http://127.0.0.1:%s"\nallow = [1]\npoll_timeout_secs = 25\n' \
    "$port" "$1" "$2" "$bot_port"
}
