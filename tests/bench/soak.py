#!/usr/bin/env python3
"""Soak test of `covo run` (issue 14): chat over MQTT across many sessions, sensor sampling,
Home Assistant commands, peer calls with the peer killed and restarted, and broker restarts,
against a real mosquitto, a real `covo-peer`, a scripted OpenAI-style model over HTTP and
SQLite on disk. Scaled by environment variables; the full size of the issue is

  SOAK_TURNS=10000 SOAK_SESSIONS=200 SOAK_HA=1000 SOAK_BROKER_RESTARTS=5 \
  SOAK_PEER_CALLS=1000 SOAK_PEER_RESTARTS=10 SOAK_SAMPLES=100000 python3 tests/bench/soak.py

Defaults are a short version (500 turns, 50 sessions, 200 HA commands, 100 peer calls, 2 peer
and 2 broker restarts, 2,000 samples; well under 90 s). COVO_BIN and PEER_BIN pick the
binaries (default: target/release/covo and covo-peer, built if missing).

What runs:
- chat: SOAK_TURNS plain turns ("ok" answers) on `P/G/chat/in`, SOAK_SESSIONS sessions, at most
  SOAK_IN_FLIGHT unanswered at once;
- peer calls: SOAK_PEER_CALLS more chat turns, spread among the plain ones, whose scripted model
  asks for `code_run` (a `runs = "peer"` tool) with a shell snippet that appends the call's
  tag to a file: the side effect that shows how often the peer really ran it. The peer
  (`covo-peer`, code_run without bubblewrap so that the file is the host's) is killed with
  SIGKILL and started again SOAK_PEER_RESTARTS times, spread over the run, without waiting for
  the calls in flight;
- Home Assistant: SOAK_HA `ON`/`OFF` commands on `P/G/ha/relay/set`;
- sampling: the sim board plus SOAK_SENSORS more BME280 devices (names of their own, on the
  sim's one BME280), each sampled every SOAK_SAMPLE_SECS; the run goes on until SOAK_SAMPLES
  values (rows of `samples`) were stored. One I2C bus and the driver's 40 ms forced-mode wait
  cap this at about 70 values a second;
- the broker is restarted SOAK_BROKER_RESTARTS times (after the turns in flight are answered);
- retention: `[store]` limits set low (SOAK_READINGS_ROWS, SOAK_AUDIT_ROWS, SOAK_TURNS_ROWS),
  pruned every SOAK_PRUNE_SECS, so pruning runs all along.

A reader (read-only SQLite, once a second) copies every new audit row and every new sample key
before pruning removes them; audit ids are checked to be contiguous, so it missed none.

It reports, and checks against the targets:
- RSS after warm-up (the first tenth of the turns, then 20 s of quiet) and at the end (after
  20 s of quiet): growth <= 1 MiB;
- open file descriptors and threads in the second half of each quiet (the blocking pool's
  threads exit after 2 s idle; sampling and pruning never stop, so the fewest seen is
  compared): back to their count after warm-up (threads: at most one more, see the check).
  The HTTP client's pooled connections to the model (one per concurrent request, closed
  after 90 s idle) are counted apart;
- the database within its [store] limits: audit and turns rows at the end (nothing is added
  during the quiet); readings, which sampling keeps adding between passes: every row older
  than a pruning period (and 2 s) is within the limit at each reading of the quiet;
- every chat message answered exactly once; every HA command carried out exactly once (audit
  rows with via = mqtt); every peer call answered exactly once with success or a structured
  error (`unavailable` or `timeout`), audited once by the gateway, run at most once by the peer
  (its tag at most once in the side-effect file) and exactly once when it succeeded; at least
  half of them succeeded. A call whose peer was killed after running it is answered
  `unavailable` ("may have run there"): counted as `error_but_ran`, not as a failure.

SOAK_HOLD_SECS keeps `covo run` up that long after the figures (to look at it by hand); the
work directory is kept when a target is missed.
"""

import http.server
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as mqtt
from mosquitto import Broker  # tests/bench/mosquitto.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TURNS = int(os.environ.get("SOAK_TURNS", "500"))
SESSIONS = int(os.environ.get("SOAK_SESSIONS", "50"))
HA = int(os.environ.get("SOAK_HA", "200"))
RESTARTS = int(os.environ.get("SOAK_BROKER_RESTARTS", "2"))
PEER_CALLS = int(os.environ.get("SOAK_PEER_CALLS", "100"))
PEER_RESTARTS = int(os.environ.get("SOAK_PEER_RESTARTS", "2"))
SAMPLE_SECS = int(os.environ.get("SOAK_SAMPLE_SECS", "1"))
SENSORS = int(os.environ.get("SOAK_SENSORS", "30"))
SAMPLES = int(os.environ.get("SOAK_SAMPLES", "2000"))
SAMPLES_WAIT = int(os.environ.get("SOAK_SAMPLES_WAIT_SECS", "2400"))
READINGS_ROWS = int(os.environ.get("SOAK_READINGS_ROWS", "1000"))
AUDIT_ROWS = int(os.environ.get("SOAK_AUDIT_ROWS", "200"))
TURNS_ROWS = int(os.environ.get("SOAK_TURNS_ROWS", "1000"))
PRUNE_SECS = int(os.environ.get("SOAK_PRUNE_SECS", "2"))
IN_FLIGHT = int(os.environ.get("SOAK_IN_FLIGHT", "8"))
QUIET = 20
# Error kinds a peer call may end with while its peer is away: anything else is a failure.
PEER_ERRORS = {"unavailable", "timeout"}


class Model(http.server.BaseHTTPRequestHandler):
    """A scripted OpenAI Chat Completions server. A user message `peer N` gets a `code_run`
    call that appends `peer-N` to the side-effect file, then (with the tool's result in the
    request) an answer naming the tag and how the call ended; every other message gets "ok"."""

    protocol_version = "HTTP/1.1"
    served = 0
    fx = None
    # tag -> every tool result the model was given for it: [(ok, error kind or None)]
    results = {}
    lock = threading.Lock()

    def log_message(self, *a):
        pass

    @staticmethod
    def script(body):
        """The reply to one request: ("text", str) or ("call", tag, arguments)."""
        msgs = body.get("messages", [])
        last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=None)
        text = msgs[last_user].get("content") if last_user is not None else ""
        if not isinstance(text, str) or not text.startswith("peer "):
            return ("text", "ok")
        tag = "peer-" + text.split()[1]
        tools = [m for m in msgs[last_user + 1:] if m.get("role") == "tool"]
        if not tools:
            args = {"language": "shell", "code": f"echo {tag} >> {Model.fx}", "timeout_s": 20}
            return ("call", tag, args)
        try:
            v = json.loads(tools[-1].get("content") or "")
        except ValueError:
            v = {"error": {"kind": "not_json", "message": tools[-1].get("content")}}
        if isinstance(v, dict) and isinstance(v.get("error"), dict):
            ok, kind = False, v["error"].get("kind")
        elif isinstance(v, dict) and v.get("exit_code") == 0:
            ok, kind = True, None
        else:
            ok, kind = False, f"exit {v.get('exit_code') if isinstance(v, dict) else v!r}"
        with Model.lock:
            Model.results.setdefault(tag, []).append((ok, kind))
        return ("text", f"{tag} " + ("ok" if ok else f"error:{kind}"))

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        with Model.lock:
            Model.served += 1
        reply = Model.script(body)
        usage = {"prompt_tokens": 50, "completion_tokens": 3, "total_tokens": 53}
        if reply[0] == "text":
            message = {"role": "assistant", "content": reply[1]}
            delta = dict(message)
            finish = "stop"
        else:
            call = {"id": f"call_{reply[1]}", "type": "function",
                    "function": {"name": "code_run", "arguments": json.dumps(reply[2])}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            delta = {"role": "assistant", "tool_calls": [dict(call, index=0)]}
            finish = "tool_calls"
        if body.get("stream"):
            chunks = [
                {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "soak",
                 "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]},
                {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "soak",
                 "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}],
                 "usage": usage},
            ]
            out = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            data = out.encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
        else:
            data = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "soak",
                               "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                               "usage": usage}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Peer:
    """The real `covo-peer`, killed with SIGKILL and started again."""

    def __init__(self, binary, cfg, env, log, births):
        self.binary, self.cfg, self.env, self.log, self.births = binary, cfg, env, log, births
        self.proc = None
        self.kills = 0
        self.starts = 0

    def start(self, wait=30):
        seen = self.births.count()
        self.proc = subprocess.Popen([self.binary, "--config", self.cfg], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))
        self.starts += 1
        if not self.births.wait_for(seen + 1, wait):
            raise SystemExit(f"covo-peer published no birth within {wait} s (see {self.log})")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Births:
    """Online births of the peer that serve code_run, as the driver saw them."""

    def __init__(self):
        self.n = 0
        self.cv = threading.Condition()

    def saw(self, payload):
        try:
            v = json.loads(payload)
        except ValueError:
            return
        if v.get("status") == "online" and "code_run" in v.get("tools", []):
            with self.cv:
                self.n += 1
                self.cv.notify_all()

    def count(self):
        with self.cv:
            return self.n

    def wait_for(self, n, timeout):
        with self.cv:
            return self.cv.wait_for(lambda: self.n >= n, timeout=timeout)


class DbReader:
    """Copies every new audit row and every new sample key out of the database once a second
    (read-only), before retention prunes them, and counts each table's rows."""

    def __init__(self, path):
        self.path = path
        self.audit = {}  # id -> (via, tool, args, outcome)
        self.keys = set()
        self.last_key_time = 0
        self.counts = []  # (t, samples, audit, turns)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.db = None
        self.error = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def poll(self):
        if self.db is None:
            if not os.path.exists(self.path):
                return
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5,
                                      check_same_thread=False)
        last_id = max(self.audit, default=0)
        rows = self.db.execute("SELECT id, via, tool, args, outcome FROM audit WHERE id > ?",
                               (last_id,)).fetchall()
        keys = [k for (k,) in self.db.execute("SELECT key FROM samples WHERE key >= ?",
                                              ((self.last_key_time - 1) << 12,))]
        c = [self.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
             for t in ("samples", "audit", "turns")]
        with self.lock:
            for r in rows:
                self.audit[r[0]] = r[1:]
            self.keys.update(keys)
            if keys:
                self.last_key_time = max(self.last_key_time, max(keys) >> 12)
            self.counts.append((time.time(), *c))

    def run(self, every=1.0):
        while not self.stop.is_set():
            try:
                self.poll()
            except sqlite3.Error as e:
                # Opened before the daemon made the schema, or busy: open it again next time.
                self.error = str(e)
                if self.db is not None:
                    self.db.close()
                    self.db = None
            self.stop.wait(every)

    def samples(self):
        with self.lock:
            return len(self.keys)


def thread_names(pid):
    names = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                n = f.read().strip()
        except OSError:
            continue
        names[n] = names.get(n, 0) + 1
    return names


MODEL_PORT = None  # the scripted model's port: its pooled connections are counted apart


def model_connections(pid):
    """The process's open TCP connections to the scripted model (reqwest keeps up to one per
    concurrent request in its pool, closed after 90 s idle)."""
    inodes = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    if int(parts[2].split(":")[1], 16) == MODEL_PORT:
                        inodes.add(parts[9])
        except OSError:
            pass
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            n += 1
    return n


def proc_stats(pid):
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    model = model_connections(pid)
    return {"rss_kib": rss, "fds": fds, "model_connections": model, "fds_but_model": fds - model,
            "threads": len(os.listdir(f"/proc/{pid}/task")), "thread_names": thread_names(pid)}


def quiet(pid, db_path, secs=QUIET):
    """`secs` with nothing sent (sampling and pruning go on), read four times a second: the
    process's figures at the end, with the fewest and most threads and fds seen in the second
    half (after the blocking pool's idle threads had their 2 s to exit), and every table's row
    count over the whole."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    seen, counts = [], []
    t_end = time.time() + secs
    while time.time() < t_end:
        # Samples older than a pruning period (and 2 s: keys are whole seconds, a pass takes
        # time) were all there at the last pass, which left at most the limit of them.
        old = int(time.time()) - PRUNE_SECS - 2
        counts.append([db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                       for t in ("samples", "audit", "turns")]
                      + [db.execute("SELECT count(*) FROM samples WHERE key < ?",
                                    (old << 12,)).fetchone()[0]])
        if time.time() > t_end - secs / 2:
            seen.append(proc_stats(pid))
        time.sleep(0.25)
    db.close()
    out = proc_stats(pid)
    for k in ("threads", "fds", "fds_but_model"):
        out[f"{k}_fewest"] = min(x[k] for x in seen)
        out[f"{k}_most"] = max(x[k] for x in seen)
    return out, counts


def account_peer_calls(sent, results, texts, audit_rows, effect_lines):
    """Accounts for peer calls `peer-0` … `peer-{sent-1}`: `results` is what the model was given
    for each tag, `texts` how often each chat answer came, `audit_rows` the gateway's audit rows
    (via, tool, args, outcome), `effect_lines` the side-effect file's lines."""
    effects = {}
    for line in effect_lines:
        effects[line.strip()] = effects.get(line.strip(), 0) + 1
    audited = {}
    for _via, tool, args, outcome in audit_rows:
        if tool == "code_run":
            try:
                tag = json.loads(args)["code"].split()[1]
            except (ValueError, KeyError, IndexError, AttributeError):
                tag = f"unreadable:{args}"
            audited.setdefault(tag, []).append(outcome)
    answers = {}
    for t, n in texts.items():
        if t and t.startswith("peer-"):
            answers[t.split()[0]] = answers.get(t.split()[0], 0) + n
    out = {"sent": sent, "ok": 0, "errors": {}, "lost": 0, "answered_twice": 0,
           "audited_not_once": 0, "run_twice": 0, "ok_not_run": 0, "error_but_ran": 0,
           "bad_errors": []}
    for i in range(sent):
        tag = f"peer-{i}"
        got = results.get(tag, [])
        answered = answers.get(tag, 0)
        if not got or not answered:
            out["lost"] += 1
            continue
        if len(got) > 1 or answered > 1:
            out["answered_twice"] += 1
        if len(audited.get(tag, [])) != 1:
            out["audited_not_once"] += 1
        ran = effects.get(tag, 0)
        if ran > 1:
            out["run_twice"] += 1
        ok, kind = got[0]
        if ok:
            out["ok"] += 1
            if ran != 1:
                out["ok_not_run"] += 1
        else:
            out["errors"][kind] = out["errors"].get(kind, 0) + 1
            if ran:
                out["error_but_ran"] += 1
            if kind not in PEER_ERRORS:
                out["bad_errors"].append((tag, kind))
    out["unknown_effects"] = sorted(set(effects) - {f"peer-{i}" for i in range(sent)})
    return out


def peer_failures(r):
    """What [`account_peer_calls`] found wrong, in words."""
    errors = [f"peer calls: {k} = {r[k]}" for k in
              ("lost", "answered_twice", "audited_not_once", "run_twice", "ok_not_run") if r[k]]
    if r["bad_errors"]:
        errors.append(f"peer calls ended in unexpected errors: {r['bad_errors'][:5]}")
    if r["unknown_effects"]:
        errors.append(f"side effects of calls never sent: {r['unknown_effects'][:5]}")
    if r["sent"] and r["ok"] < r["sent"] // 2:
        errors.append(f"only {r['ok']} of {r['sent']} peer calls succeeded")
    return errors


def selftest():
    """The peer accounting on made-up runs: a clean one passes, and each kind of loss or
    duplicate is caught (`python3 tests/bench/soak.py --selftest`)."""
    def run(change=None):
        results = {"peer-0": [(True, None)], "peer-1": [(False, "unavailable")],
                   "peer-2": [(False, "unavailable")], "peer-3": [(True, None)]}
        texts = {"ok": 5, "peer-0 ok": 1, "peer-1 error:unavailable": 1,
                 "peer-2 error:unavailable": 1, "peer-3 ok": 1}
        audit = [("direct", "code_run", json.dumps({"code": f"echo peer-{i} >> /f"}), "ok")
                 for i in range(4)] + [("mqtt", "gpio_write", "{}", "ok")]
        fx = ["peer-0", "peer-2", "peer-3"]  # peer-2: killed after running it
        if change:
            change(results=results, texts=texts, audit=audit, fx=fx)
        return peer_failures(account_peer_calls(4, results, texts, audit, fx))

    assert run() == [], run()
    cases = {
        "run_twice": lambda fx, **_: fx.append("peer-3"),
        "ok_not_run": lambda fx, **_: fx.remove("peer-0"),
        "audited_not_once": lambda audit, **_: audit.append(audit[1]),
        "lost": lambda texts, **_: texts.pop("peer-1 error:unavailable"),
        "answered_twice": lambda results, **_: results["peer-3"].append((True, None)),
        "unexpected errors": lambda results, **_: results.update({"peer-1": [(False, "failed")]}),
        "never sent": lambda fx, **_: fx.append("peer-9"),
    }
    for name, f in cases.items():
        found = run(f)
        assert any(name in e for e in found), (name, found)
    print(f"soak selftest: a clean run passes, {len(cases)} kinds of loss or duplicate are caught")


def binary(var, name, package):
    path = os.environ.get(var)
    if path:
        return path
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    path = os.path.join(target, "release", name)
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "--release", "-p", package, "--bin", name],
                       cwd=ROOT, check=True)
    return path


def board_file(work):
    with open(os.path.join(ROOT, "boards", "sim.toml")) as f:
        sim = f.read().replace("sample_interval_secs = 60", f"sample_interval_secs = {SAMPLE_SECS}")
    # More BME280 devices: names of their own, on the sim's one BME280 (0x76 on bus 1).
    more = "".join(f'\n[[device]]\nname = "climate{i}"\ndriver = "bme280"\nbus = 1\naddress = 0x76\n'
                   f"sample_interval_secs = {SAMPLE_SECS}\n" for i in range(SENSORS))
    # Devices go before [policy] (a [[device]] after it would be read as part of it).
    sim = sim.replace("\n[policy]", more + "\n[policy]", 1)
    path = os.path.join(work, "board.toml")
    with open(path, "w") as f:
        f.write(sim)
    return path


def main():
    covo = binary("COVO_BIN", "covo", "covo-gateway")
    peer_bin = binary("PEER_BIN", "covo-peer", "covo-peer") if PEER_CALLS else None
    work = tempfile.mkdtemp(prefix="covo-soak-")
    fx = os.path.join(work, "fx")
    open(fx, "w").close()
    Model.fx = fx
    broker = Broker(work, "max_packet_size 2000000\n")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    global MODEL_PORT
    MODEL_PORT = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    board = board_file(work)
    cfg = os.path.join(work, "covo.toml")
    with open(cfg, "w") as f:
        f.write(f'board = "{board}"\n[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\n'
                f'gateway_id = "soak"\n[run]\ntelemetry_secs = {SAMPLE_SECS}\nmax_sessions = 32\n'
                f"[agent]\nschedule_poll_secs = {SAMPLE_SECS}\nhistory_tokens = 2000\n"
                f"[store]\nreadings_rows = {READINGS_ROWS}\naudit_rows = {AUDIT_ROWS}\n"
                f"turns_rows = {TURNS_ROWS}\nprune_every_secs = {PRUNE_SECS}\n")
    peer_cfg = os.path.join(work, "peer.toml")
    with open(peer_cfg, "w") as f:
        # Without bubblewrap the snippet's file is the host's: the side effect can be counted.
        f.write(f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\n[peer]\nid = "soakpeer"\n'
                "[peer.backends.code_run]\nsandbox = false\nisolate_network = false\n")
    env = dict(os.environ, COVO_HOME=os.path.join(work, "home"),
               COVO_LLM_BASE_URL=f"http://127.0.0.1:{srv.server_address[1]}/v1",
               COVO_LLM_MODEL="soak", OPENAI_API_KEY="sk-soak", COVO_LOG="error")
    env.pop("COVO_CONFIG", None)
    peer_env = dict(env, COVO_HOME=os.path.join(work, "peer-home"))
    for k in ("COVO_LLM_BASE_URL", "COVO_LLM_MODEL"):
        peer_env.pop(k)  # the peer has no model: it serves code_run, not sub-agents

    answers = {}
    answers_lock = threading.Lock()
    states = []
    telemetry = [0, 0]  # messages, values
    got_answer = threading.Condition(answers_lock)
    births = Births()

    def on_message(_c, _u, m):
        if m.topic == "covo/soak/chat/out":
            v = json.loads(m.payload)
            with got_answer:
                key = v.get("session"), v.get("text")
                answers[key] = answers.get(key, 0) + 1
                answers.setdefault("_all", [])
                answers["_all"].append(v)
                got_answer.notify_all()
        elif m.topic.startswith("covo/soak/sensors/"):
            if not m.retain:
                telemetry[0] += 1
                telemetry[1] += len(json.loads(m.payload)) - 1  # every key but "at"
        elif m.topic.startswith("covo/peers/"):
            births.saw(m.payload)
        elif m.topic.endswith("/state"):
            states.append(m.payload.decode())

    def on_connect(c, _u, _f, _rc, _p=None):
        c.subscribe([("covo/soak/chat/out", 1), ("covo/soak/ha/relay/state", 1),
                     ("covo/soak/sensors/#", 0), ("covo/peers/+/status", 1)])

    cli = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="soak-driver")
    cli.on_message = on_message
    cli.on_connect = on_connect
    cli.reconnect_delay_set(0.1, 1)
    cli.connect("127.0.0.1", broker.port)
    cli.loop_start()
    peer = None
    if PEER_CALLS:
        peer = Peer(peer_bin, peer_cfg, peer_env, os.path.join(work, "peer.log"), births)
        peer.start()
    daemon = subprocess.Popen([covo, "--config", cfg, "run"], env=env, cwd=work,
                              stderr=open(os.path.join(work, "covo.log"), "w"))
    reader = DbReader(os.path.join(work, "home", "covo.db"))
    time.sleep(3)
    idle = proc_stats(daemon.pid)

    sent = 0
    errors = []
    warm = None
    total = TURNS + PEER_CALLS
    restart_every = max(1, total // (RESTARTS + 1)) if RESTARTS else None
    restarts = 0
    ha_every = max(1, TURNS // HA) if HA else None
    ha_sent = 0
    plain_sent = 0
    peer_sent = 0
    peer_every = max(1, TURNS // PEER_CALLS) if PEER_CALLS else None
    kill_every = max(1, PEER_CALLS // (PEER_RESTARTS + 1)) if PEER_RESTARTS else None
    peer_thread = None
    peer_kill_at = []  # peer calls sent when each kill began

    def bounce_peer():
        # Killed mid-traffic: the calls in flight go with it. Started again after a second.
        peer.kill()
        time.sleep(1)
        peer.start()

    # The order of the turns: a peer call after every `peer_every` plain turns.
    plan, planned = [], 0
    for i in range(TURNS):
        plan.append(False)
        if peer_every and (i + 1) % peer_every == 0 and planned < PEER_CALLS:
            plan.append(True)
            planned += 1
    plan += [True] * (total - len(plan))
    t0 = time.time()
    shown = [0.0]

    def progress():
        if daemon.poll() is not None:
            # Nothing to measure any more: say so at once rather than wait for the timeouts.
            with open(os.path.join(work, "covo.log")) as f:
                log = f.read()[-2000:]
            raise SystemExit(f"SOAK FAILED: covo run exited ({daemon.returncode}) after "
                             f"{time.time() - t0:.0f} s; its log ends:\n{log}\n(files kept in {work})")
        if time.time() - shown[0] >= 10:
            shown[0] = time.time()
            print(f"soak: {time.time() - t0:.0f} s: {sent}/{total} turns sent, {answered()} answered, "
                  f"{peer_sent} peer calls, {reader.samples()} samples, db reader: {reader.error}, "
                  f"RSS {proc_stats(daemon.pid)['rss_kib']} KiB, db {db_size()} bytes",
                  file=sys.stderr, flush=True)

    def db_size():
        try:
            return os.path.getsize(reader.path)
        except OSError:
            return 0

    def answered():
        with answers_lock:
            return len(answers.get("_all", []))

    while sent < total:
        progress()
        # At most IN_FLIGHT unanswered turns: a client that waits, as a user would.
        with got_answer:
            got_answer.wait_for(lambda: sent - len(answers.get("_all", [])) < IN_FLIGHT, timeout=60)
        s = f"s{sent % SESSIONS}"
        is_peer = plan[sent]
        text = f"peer {peer_sent}" if is_peer else f"turn {plain_sent}"
        r = cli.publish("covo/soak/chat/in", json.dumps({"text": text, "session": s}), qos=1)
        if r.rc != mqtt.MQTT_ERR_SUCCESS:
            time.sleep(0.2)
            continue
        sent += 1
        if is_peer:
            peer_sent += 1
            if (kill_every and peer_sent % kill_every == 0 and peer.kills < PEER_RESTARTS
                    and (peer_thread is None or not peer_thread.is_alive())):
                peer_kill_at.append(peer_sent)
                peer_thread = threading.Thread(target=bounce_peer)
                peer_thread.start()
        else:
            plain_sent += 1
            if ha_every and plain_sent % ha_every == 0 and ha_sent < HA:
                cli.publish("covo/soak/ha/relay/set", "ON" if ha_sent % 2 == 0 else "OFF", qos=1)
                ha_sent += 1
        if warm is None and sent >= total // 10:
            # After warm-up, measured like the end: everything answered, then 12 s of quiet
            # (the blocking pool's idle threads exit after 2 s).
            with got_answer:
                got_answer.wait_for(lambda: len(answers.get("_all", [])) >= sent, timeout=60)
            warm, _ = quiet(daemon.pid, reader.path)
            warm["db_file_bytes"] = os.path.getsize(reader.path)
        if restart_every and sent % restart_every == 0 and restarts < RESTARTS:
            # Let what is in flight finish (and a peer restart end), then take the broker away.
            with got_answer:
                got_answer.wait_for(lambda: len(answers.get("_all", [])) >= sent, timeout=60)
            if peer_thread:
                peer_thread.join()
            broker.restart()
            restarts += 1
            time.sleep(3)
    with got_answer:
        got_answer.wait_for(lambda: len(answers.get("_all", [])) >= sent, timeout=120)
    if peer_thread:
        peer_thread.join()
    turns_done = time.time() - t0
    after_turns = proc_stats(daemon.pid)
    db_after_turns = os.path.getsize(reader.path)
    # Sampling goes on until SOAK_SAMPLES values were stored.
    deadline = time.time() + SAMPLES_WAIT
    while reader.samples() < SAMPLES and time.time() < deadline:
        progress()
        time.sleep(1)
    elapsed = time.time() - t0
    # Quiet: the blocking pool's idle threads exit after 2 s idle. Row counts are read four
    # times a second meanwhile (readings keep coming: sampling does not stop).
    end, quiet_counts = quiet(daemon.pid, reader.path)
    stats = json.loads(subprocess.run([covo, "--config", cfg, "store", "stats"], env=env, cwd=work,
                                      capture_output=True, text=True, check=True).stdout)
    reader.stop.set()
    reader.thread.join()
    reader.poll()
    # Tables pruned along with the turns (usage, conversations) and the outbox: what they hold.
    unpruned = {t: reader.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("conversations", "usage", "outbox")} if reader.db else {}
    hold = int(os.environ.get("SOAK_HOLD_SECS", "0"))
    if hold:
        print(f"soak: holding covo run (pid {daemon.pid}) for {hold} s", file=sys.stderr, flush=True)
        time.sleep(hold)
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(15)
    except subprocess.TimeoutExpired:
        daemon.kill()
        errors.append("covo run did not stop within 15 s of SIGTERM")
    if peer:
        peer.stop()
    cli.loop_stop()
    srv.shutdown()
    broker.stop()

    # Chat.
    all_answers = answers.get("_all", [])
    failed = [a for a in all_answers if a.get("error")]
    texts = {}
    for a in all_answers:
        texts[a.get("text")] = texts.get(a.get("text"), 0) + 1
    # The audit log, as the reader copied it.
    ids = sorted(reader.audit)
    audit_gaps = (ids[-1] - ids[0] + 1 - len(ids)) if ids else 0
    ha_audit = sum(1 for v in reader.audit.values() if v[0] == "mqtt" and v[1] == "gpio_write")
    # Peer calls: answers, the model's view of the result, the gateway's audit, the side effect.
    with open(fx) as f:
        peer_report = account_peer_calls(peer_sent, Model.results, texts, reader.audit.values(),
                                         f.read().splitlines())
    if peer:
        peer_report["kills"], peer_report["starts"] = peer.kills, peer.starts
        peer_report["killed_after_calls"] = peer_kill_at
    quiet_samples = [c[0] for c in quiet_counts]
    quiet_old = [c[3] for c in quiet_counts]
    report = {
        "turns_sent": sent, "plain_turns": plain_sent, "answers": len(all_answers),
        "failed_answers": len(failed), "model_requests": Model.served,
        "ha_commands": ha_sent, "ha_audited": ha_audit, "ha_states_seen": len(states),
        "peer_calls": peer_report, "broker_restarts": restarts,
        "samples_stored": reader.samples(), "sensor_devices": SENSORS + 2,
        "telemetry_messages": telemetry[0], "telemetry_values": telemetry[1],
        "audit_rows_seen": len(ids), "audit_id_gaps": audit_gaps,
        "seconds_turns": round(turns_done, 1), "seconds": round(elapsed, 1),
        "idle_at_start": idle, "warm": warm, "end": end,
        "rss_after_turns_kib": after_turns["rss_kib"], "db_file_bytes_after_turns": db_after_turns,
        "rss_growth_kib": end["rss_kib"] - warm["rss_kib"] if warm else None,
        "db": {k: stats[k] for k in ("file_bytes", "wal_bytes", "used_bytes")},
        "limits": {"readings": READINGS_ROWS, "audit": AUDIT_ROWS, "turns": TURNS_ROWS,
                   "prune_every_secs": PRUNE_SECS},
        "readings_rows": stats["readings"]["rows"], "audit_rows": stats["audit"]["rows"],
        "turns_rows": stats["turns"]["rows"],
        "rows_of_usage_conversations_outbox": unpruned,
        "readings_rows_in_quiet": [min(quiet_samples), max(quiet_samples)] if quiet_samples else None,
        "readings_rows_older_than_a_pass_in_quiet": max(quiet_old) if quiet_old else None,
        "max_rows_during_run": {t: max((c[i] for c in reader.counts), default=0)
                                for i, t in ((1, "samples"), (2, "audit"), (3, "turns"))},
    }
    print(json.dumps(report, indent=2))
    if len(all_answers) != sent:
        errors.append(f"{sent} turns sent, {len(all_answers)} answered")
    if failed:
        errors.append(f"{len(failed)} failed answers, e.g. {failed[0]}")
    dup = [t for t, n in texts.items() if n > 1 and t != "ok"]
    if dup:
        errors.append(f"{len(dup)} answers came twice, e.g. {dup[0]}")
    if ids and (ids[0] != 1 or audit_gaps):
        errors.append(f"the reader missed audit rows (first id {ids[0]}, {audit_gaps} gaps)")
    if ha_audit != ha_sent:
        errors.append(f"{ha_sent} HA commands sent, {ha_audit} carried out")
    errors += peer_failures(peer_report)
    if reader.samples() < SAMPLES:
        errors.append(f"{reader.samples()} samples stored, fewer than {SAMPLES}")
    if warm and end["rss_kib"] - warm["rss_kib"] > 1024:
        errors.append(f"RSS grew by {end['rss_kib'] - warm['rss_kib']} KiB after warm-up")
    for k, spare in (("fds_but_model", 0), ("threads", 1)):
        # The fewest in the quiet: sampling and pruning never stop, so a pool thread may be
        # busy at any one reading. The model's pooled connections are reported apart. One
        # more blocking-pool thread is let through: with a task every second or so, tokio
        # wakes its idle threads in turn, so one started in a burst may not reach its 2 s
        # idle exit within the quiet (it does later; the pool is bounded at 16).
        if warm and end[f"{k}_fewest"] > warm[f"{k}_fewest"] + spare:
            errors.append(f"{k}: fewest in the quiet {warm[k + '_fewest']} -> {end[k + '_fewest']}")
    for t, lim in (("audit", AUDIT_ROWS), ("turns", TURNS_ROWS)):
        if stats[t]["rows"] > lim:
            errors.append(f"{t}: {stats[t]['rows']} rows over the limit {lim}")
    # Usage rows follow the turns' limit; a conversation goes when its turns have, so at most
    # one per kept turn plus the sessions that have not spoken yet (the session cap, 32).
    for t, lim in (("usage", TURNS_ROWS), ("conversations", TURNS_ROWS + 32)):
        if unpruned.get(t, 0) > lim:
            errors.append(f"{t}: {unpruned[t]} rows, over {lim}")
    if quiet_old and max(quiet_old) > READINGS_ROWS:
        # Sampling adds rows between passes; those older than a pass are within the limit.
        errors.append(f"readings: {max(quiet_old)} rows older than a pruning pass, over the "
                      f"limit {READINGS_ROWS}")
    if errors:
        print(f"SOAK FAILED (files kept in {work}):\n  " + "\n  ".join(errors))
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print("soak: all targets met")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    else:
        main()
