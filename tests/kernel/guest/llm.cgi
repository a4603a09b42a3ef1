#!/bin/sh
# A scripted model for `covo chat` in the guest, served by busybox httpd as a CGI
# (base_url http://127.0.0.1:8080/cgi-bin/llm, so covo posts to /cgi-bin/llm/chat/completions).
# Request N is saved as $LLM/req.N.json and answered with $LLM/reply.N.json (OpenAI Chat
# Completions, non-streamed). If $LLM/hook.N exists it runs first, with its output in
# $LLM/snap.N: what the kernel shows while covo still holds its lines between two tool calls.
LLM=/tmp/llm
n=$(( $(cat $LLM/count 2>/dev/null || echo 0) + 1 ))
echo $n >$LLM/count
head -c "${CONTENT_LENGTH:-0}" >$LLM/req.$n.json
[ -f $LLM/hook.$n ] && sh $LLM/hook.$n >$LLM/snap.$n 2>&1 </dev/null
if [ -f $LLM/reply.$n.json ]; then
  printf 'Content-Type: application/json\r\n\r\n'
  cat $LLM/reply.$n.json
else
  printf 'Status: 500 Internal Server Error\r\nContent-Type: application/json\r\n\r\n'
  printf '{"error":{"message":"script exhausted at request %s"}}' "$n"
fi
