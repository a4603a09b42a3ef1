#!/bin/sh
# Helpers shared by the guests' checks: the kernel suite's (tests/kernel/guest/checks.sh) and
# the emulated Pi's (tests/pi/guest/checks.sh). Each runner copies this file and llm.cgi to
# /lib/covo in its guest. The checks set COVO (the binary), RUN (the directory of NAME.cfg
# configs) and pass=0 fail=0 before sourcing it. One line per check:
#   CHECK <subsystem> <name> ok
#   CHECK <subsystem> <name> FAIL <what was seen>

one() { printf '%s' "$*" | tr '\n' ' ' | cut -c1-600; }
res() { # SUBSYSTEM NAME RC DETAIL...
  _s=$1 _n=$2 _r=$3
  shift 3
  if [ "$_r" = 0 ]; then
    echo "CHECK $_s $_n ok"
    pass=$((pass + 1))
  else
    echo "CHECK $_s $_n FAIL $(one "$*")"
    fail=$((fail + 1))
  fi
}
# call BOARD TOOL ARGS: runs one `covo tools call`; sets out (stdout) and rc.
call() {
  b=$1
  shift
  out=$($COVO --config "$RUN/$b.cfg" tools call --yes "$@" 2>/tmp/covo.err)
  rc=$?
}
has() { case "$out" in *"$1"*) return 0 ;; esac; return 1; }

near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# the value of "key":NUMBER in $out (first occurrence)
num() { printf '%s' "$out" | grep -o "\"$1\":[-0-9.e]*" | head -1 | cut -d: -f2; }

reply_call() { # N TOOL ARGS_JSON
  a=$(printf '%s' "$3" | sed 's/"/\\"/g')
  printf '{"id":"r%s","object":"chat.completion","created":0,"model":"scripted","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%s","type":"function","function":{"name":"%s","arguments":"%s"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}' \
    "$1" "$1" "$2" "$a" >"/tmp/llm/reply.$1.json"
}
reply_text() {
  printf '{"id":"r%s","object":"chat.completion","created":0,"model":"scripted","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}' \
    "$1" "$2" >"/tmp/llm/reply.$1.json"
}
# result K: the result of tool call K, as covo sent it back to the model (request K+1).
result() {
  grep -oE "\"tool_call_id\":\"call_$1\",\"content\":\"([^\"\\\\]|\\\\.)*\"" "/tmp/llm/req.$(($1 + 1)).json" 2>/dev/null |
    sed 's/\\"/"/g'
}

line() { printf '%s\n' "$out" | grep -F -- "$1" | head -n 1; }

# run_groups ONLY GROUP...: runs g_GROUP for each GROUP, or only ONLY when it is set (a name
# that is no group is a failed check), then prints the RESULT line.
run_groups() {
  _only=$1
  shift
  for _g in "$@"; do
    if [ -z "$_only" ] || [ "$_only" = "$_g" ]; then
      g_$_g
    fi
  done
  case " $* " in
    *" ${_only:-$1} "*) ;;
    *) echo "CHECK setup unknown_group FAIL no group '$_only' (groups: $*)"; fail=$((fail + 1)) ;;
  esac
  echo "RESULT pass=$pass fail=$fail"
}

# serve_model NAME BOARD_TOML: the scripted model (llm.cgi under busybox httpd on
# 127.0.0.1:8080) and $RUN/NAME.cfg, a config for `covo chat` against it with BOARD_TOML.
# Returns non-zero when httpd does not start. Script it with reply_call and reply_text.
serve_model() {
  rm -rf /tmp/llm /tmp/www
  mkdir -p /tmp/llm /tmp/www/cgi-bin
  cp /lib/covo/llm.cgi /tmp/www/cgi-bin/llm
  chmod +x /tmp/www/cgi-bin/llm
  httpd -p 127.0.0.1:8080 -h /tmp/www || return 1
  cat >"$RUN/$1.cfg" <<CFG
board = "$2"
[llm]
provider = "openai"
base_url = "http://127.0.0.1:8080/cgi-bin/llm"
model = "scripted"
timeout_secs = 30
max_retries = 0
[agent]
max_steps = 12
CFG
}
