# A stand-in Telegram Bot API on 127.0.0.1:PORT for the idle-footprint scripts
# (tests/bench/channels-rss.sh, tests/bench/link-order.sh): getUpdates holds each poll for its
# timeout (at most 30 s) and answers no update, as the real API does on a quiet day; getMe names
# a bot; every other method succeeds.
#
#   python3 tests/bench/bot-api.py PORT
import json, sys, time, urllib.parse
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
polls = 0
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        global polls
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        try:
            args = json.loads(body or b"{}")
        except ValueError:
            args = dict(urllib.parse.parse_qsl(body.decode()))
        url = urllib.parse.urlsplit(self.path)
        args.update(urllib.parse.parse_qsl(url.query))
        method = url.path.rsplit("/", 1)[-1]
        if method == "getUpdates":
            polls += 1
            time.sleep(min(float(args.get("timeout", 0)), 30))
            out = {"ok": True, "result": []}
        elif method == "getMe":
            out = {"ok": True, "result": {"id": 1, "is_bot": True, "first_name": "covo", "username": "covo_bot"}}
        else:
            out = {"ok": True, "result": True}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    do_GET = do_POST
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
