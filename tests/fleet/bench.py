#!/usr/bin/env python3
"""Fleet benchmark (issue 25): many real `covo run` processes on one real mosquitto, or on a
real 3-node clustered MQTT 5 broker with peers scaled out.

  python3 tests/fleet/bench.py                 # 1,000 gateways (FLEET_GATEWAYS) on mosquitto
  FLEET_GATEWAYS=100 python3 tests/fleet/bench.py
  FLEET_BROKER=cluster python3 tests/fleet/bench.py          # on the cluster, with 3 peers
  python3 tests/fleet/bench.py --write docs/benchmarks.md   # also its "Fleets" section there

Each gateway is the edge build (x86_64 musl, `--profile edge`; COVO_BIN picks another) on the
sim board, with its own COVO_HOME (SQLite on disk) and gateway id, serving `board_info`,
`gpio_write` and `plot_series` to the swarm. The broker is mosquitto on 127.0.0.1, or with
FLEET_BROKER=cluster the 3 nodes of tests/fleet/cluster.py (rmqtt, raft): gateway i lists every
node in `[mqtt] url`, node i mod 3 first, so a third of the fleet is on each node and moves to the
next node in its list when its own dies. With the cluster, FLEET_PEERS (3) `covo-peer` replicas
(COVO_PEER_BIN, default the release build) serve `plot_series` in one `$share` group, replica k
on node k; a gateway's `plot_series` is a remote call to them, so a swarm call of `plot_series`
goes bench -> gateway -> peer -> gateway -> bench. A client of the benchmark's own (paho-mqtt, id
`bench`, on node 1) sees
the births and makes swarm calls the way a gateway does: a request on
`covo/G/swarm/req/bench` with `covo/bench/swarm/res/G` as response topic and the call id as
correlation data.

It prints, measured in the same run:
- the memory the gateways take (sum and median of their RSS) and the broker's RSS;
- how long after the last gateway started all of them were online (target <= 10 s);
- swarm round-trip p50/p95 with FLEET_BASELINE (10) gateways up, then with all of them, and
  the ratio (target <= 1.5);
- swarm calls/s across the fleet with FLEET_IN_FLIGHT (256) calls in flight from
  FLEET_LOAD_CLIENTS (6) native callers (tests/src/bin/fleet-load.rs) spread over the nodes
  (remote calls: FLEET_REMOTE_IN_FLIGHT, 12), and with peers, peer calls/s (`code_graph` on a
  one-file tree, made by fleet-load --peer the way gateways make them) across the 3 replicas;
- mosquitto killed with SIGKILL and started again on the same port (with the cluster: node 2
  killed with SIGKILL and started again once the fleet is back): how long until every
  gateway is online again (target <= 30 s); across the kill, `covo fleet call` (covo's own
  fan-out, as a field engineer runs it) of one `gpio_write` on each of up to 200 gateways, the
  kill coming as its first request goes out: every gateway must get its answer or a clear
  error, and by each gateway's audit log nothing ran twice, every ok ran once and nothing that
  was not sent ran (a timeout's outcome is unknown to the caller: how many of them ran is
  printed); with the cluster also a fresh birth from every gateway that lost its node, and
  every retained birth `online` on another node afterwards;
- with peers: remote-call (`plot_series`) p50 at FLEET_BASELINE and at all gateways and the
  ratio (target <= 1.5), remote calls/s, and one peer replica killed with SIGKILL under remote
  load and started again: every call answered ok or with a clear error.
Exit status 1 when a target is missed.
"""

import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties
from paho.mqtt.packettypes import PacketTypes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
from mosquitto import Broker  # noqa: E402  (tests/bench/mosquitto.py)
sys.path.insert(0, os.path.join(ROOT, "tests", "fleet"))
from cluster import Cluster, wait  # noqa: E402  (tests/fleet/cluster.py)
CLUSTER = os.environ.get("FLEET_BROKER", "mosquitto") == "cluster"
PEERS = int(os.environ.get("FLEET_PEERS", "3" if CLUSTER else "0"))
N = int(os.environ.get("FLEET_GATEWAYS", "1000"))
BASELINE = int(os.environ.get("FLEET_BASELINE", "10"))
CALLS = int(os.environ.get("FLEET_CALLS", "300"))
IN_FLIGHT = int(os.environ.get("FLEET_IN_FLIGHT", "256"))
LOAD_CLIENTS = int(os.environ.get("FLEET_LOAD_CLIENTS", "6"))
REMOTE_IN_FLIGHT = int(os.environ.get("FLEET_REMOTE_IN_FLIGHT", "12"))
THROUGHPUT_SECS = float(os.environ.get("FLEET_THROUGHPUT_SECS", "10"))
# FLEET_TIME_TARGETS=0 (CI's 50-gateway run on a loaded machine): the time targets are printed
# but not enforced; what must hold whatever the load (everyone online, every call answered once,
# no actuation twice) still fails the run.
TIME_TARGETS = os.environ.get("FLEET_TIME_TARGETS", "1") != "0"
OPS = "fleet-ops"  # the gateway id `covo fleet call` runs as
failures = []
printed = []
# Each broker has its own section of the page.
TAG = "fleet/bench.py cluster" if CLUSTER else "fleet/bench.py"
BEGIN, END = f"<!-- {TAG} begin -->", f"<!-- {TAG} end -->"


def say(*a):
    line = " ".join(str(x) for x in a)
    printed.append(line)
    print(line, flush=True)


def write_section(page, started):
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    if subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--", ".",
                       ":!docs/benchmarks.md"]).returncode != 0:
        rev += " with uncommitted changes"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
    text = "\n".join(printed).replace(ROOT + "/", "")
    where = ("a real 3-node rmqtt cluster (tests/fleet/broker) on 127.0.0.1, with "
             f"{PEERS} `covo-peer` replicas" if CLUSTER else "one real mosquitto on 127.0.0.1")
    env = "FLEET_BROKER=cluster " if CLUSTER else ""
    block = (f"{BEGIN}\n## Fleets{' on a clustered broker' if CLUSTER else ''}\n\n"
             f"Generated by `tests/fleet/bench.py` at commit {rev}, {started}, "
             f"on {cpu}, {os.cpu_count()} cores, {mem / 1048576:.0f} GiB: real `covo run` processes "
             f"(the edge build, sim board, SQLite on disk) on {where}.\n\n"
             f"`{env}FLEET_GATEWAYS={N} python3 tests/fleet/bench.py --write docs/benchmarks.md`\n\n"
             f"```\n{text}\n```\n{END}\n")
    old = open(page).read() if os.path.exists(page) else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + block
    open(page, "w").write(new)
    print(f"wrote the Fleets section of {page}")


def check(ok, what):
    say(("  ok   " if ok else "  MISS ") + what)
    if not ok:
        failures.append(what)


def timed(ok, what):
    """A time target: enforced unless FLEET_TIME_TARGETS=0."""
    if TIME_TARGETS:
        check(ok, what)
    else:
        say(("  ok   " if ok else "  slow ") + what + " (time target not enforced)")


def covo_bin():
    if os.environ.get("COVO_BIN"):
        return os.path.abspath(os.environ["COVO_BIN"])
    target = "x86_64-unknown-linux-musl"
    tdir = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    subprocess.run(
        ["cargo", "build", "--profile", "edge", "-p", "covo-gateway", "--bin", "covo",
         "--target", target],
        cwd=ROOT, check=True, stdout=sys.stderr)
    return os.path.join(tdir, target, "edge", "covo")


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Bench:
    """The benchmark's own MQTT client: births, and swarm calls with their answers."""

    def __init__(self, port):
        self.online = {}  # gateway -> time its online birth arrived
        self.births = {}  # gateway -> time its latest online birth arrived
        self.serving = {}  # gateway -> the tools its latest birth lists
        self.waiting = {}  # call id -> [sent, event, answer]
        self.ops_requests = 0  # requests `covo fleet call` (id OPS) published
        self.lock = threading.Lock()
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bench",
                             protocol=mqtt.MQTTv5)
        self.c.max_inflight_messages_set(1000)
        self.c.max_queued_messages_set(0)
        self.c.on_connect = self.on_connect
        self.c.on_message = self.on_message
        self.c.connect("127.0.0.1", port, keepalive=60)
        self.c.loop_start()

    def on_connect(self, c, _u, _f, _rc, _p):
        # Without TCP_NODELAY, Nagle and delayed ACKs add ~40 ms to a round trip.
        sock = c.socket()
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.subscribe([("covo/gateways/+/status", 1), ("covo/bench/swarm/res/+", 1),
                     (f"covo/+/swarm/req/{OPS}", 1)])

    def on_message(self, _c, _u, m):
        now = time.monotonic()
        if m.topic.startswith("covo/gateways/"):
            gw = m.topic.split("/")[2]
            try:
                body = json.loads(m.payload or b"{}")
                st = body.get("status")
            except (ValueError, AttributeError):
                return
            with self.lock:
                if st == "online":
                    self.online.setdefault(gw, now)
                    self.births[gw] = now
                    self.serving[gw] = set(body.get("tools") or [])
                else:
                    self.online.pop(gw, None)
            return
        if m.topic.endswith(f"/swarm/req/{OPS}"):
            with self.lock:
                self.ops_requests += 1
            return
        props = getattr(m, "properties", None)
        cid = getattr(props, "CorrelationData", None)
        if cid is None:
            return
        cid = cid.decode()
        with self.lock:
            w = self.waiting.get(cid)
        if w and w[2] is None:
            w[2] = (now, m.topic.split("/")[-1], json.loads(m.payload))
            w[1].set()

    def send(self, gw, tool, args):
        cid = uuid.uuid4().hex[:16]
        body = json.dumps({"call_id": cid, "tool": tool, "args": args, "gateway": "bench",
                           "deadline_ms": 10000})
        p = Properties(PacketTypes.PUBLISH)
        p.ResponseTopic = f"covo/bench/swarm/res/{gw}"
        p.CorrelationData = cid.encode()
        w = [time.monotonic(), threading.Event(), None]
        with self.lock:
            self.waiting[cid] = w
        self.c.publish(f"covo/{gw}/swarm/req/bench", body, qos=1, properties=p)
        return cid, w

    def call(self, gw, tool="board_info", args=None, timeout=15):
        cid, w = self.send(gw, tool, args or {})
        ok = w[1].wait(timeout)
        with self.lock:
            self.waiting.pop(cid, None)
        if not ok:
            return None
        return (w[2][0] - w[0], w[2][2])

    def count_online(self, ids):
        with self.lock:
            return sum(1 for g in ids if g in self.online)


def gateway_config(home, url, gid):
    os.makedirs(home, exist_ok=True)
    path = os.path.join(home, "covo.toml")
    with open(path, "w") as f:
        f.write(f'[mqtt]\nurl = "{url}"\ngateway_id = "{gid}"\n'
                "[run]\ntelemetry_secs = 3600\n"
                '[swarm]\nexpose = ["board_info", "gpio_write", "plot_series"]\n')
    return path


def clean_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COVO_", "ANTHROPIC_", "OPENAI_"))}
    env["COVO_HOME"] = home
    return env


def start_gateway(binary, work, url, gid):
    home = os.path.join(work, gid)
    cfg = gateway_config(home, url, gid)
    with open(os.path.join(home, "stderr"), "wb") as err:
        return subprocess.Popen([binary, "--config", cfg, "run"], env=clean_env(home), cwd=home,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)


def peer_bin():
    if os.environ.get("COVO_PEER_BIN"):
        return os.path.abspath(os.environ["COVO_PEER_BIN"])
    tdir = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    subprocess.run(["cargo", "build", "--release", "-p", "covo-peer"], cwd=ROOT, check=True,
                   stdout=sys.stderr)
    return os.path.join(tdir, "release", "covo-peer")


# The source tree the peers' `code_graph` reads: one small Rust file, so a call costs the peer
# little and the peer-call throughput measures the path, not the tool.
GRAPH_SRC = "fn helper(x: u32) -> u32 {\n    x + 1\n}\n\nfn main() {\n    println!(\"{}\", helper(1));\n}\n"


def start_peer(binary, work, url, pid):
    """A `covo-peer` replica with its own id and home, in the peers' `$share` group, serving
    `code_graph` over a one-file tree besides its default tools."""
    home = os.path.join(work, pid)
    src = os.path.join(work, "graph-src")
    os.makedirs(home, exist_ok=True)
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "main.rs"), "w") as f:
        f.write(GRAPH_SRC)
    cfg = os.path.join(home, "covo.toml")
    with open(cfg, "w") as f:
        f.write(f'[mqtt]\nurl = "{url}"\n[peer]\nid = "{pid}"\n'
                f'[peer.backends.code_graph]\nroot = "{src}"\n')
    with open(os.path.join(home, "stderr"), "ab") as err:
        return subprocess.Popen([binary, "--config", cfg], env=clean_env(home), cwd=home,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)


PLOT = {"series": [{"label": "t", "points": [[0, 1.5], [1, 2.5], [2, 2.0]]}], "title": "fleet"}


class Single:
    """One mosquitto: everyone on it; a kill takes every connection down."""

    def __init__(self, work):
        self.b = Broker(work, "max_connections -1\nmax_queued_messages 10000\n", log=True)
        self.bench_port = self.b.port
        self.name = "one mosquitto"

    def urls(self):
        return [self.url(0)]

    def url(self, _i):
        return f"mqtt://127.0.0.1:{self.b.port}"

    def kill(self):
        self.b.kill9()
        self.b.start()

    def after_kill(self):
        pass

    def rss(self):
        return f"mosquitto {rss_kib(self.b.proc.pid) / 1024:.1f} MiB"

    def stop(self):
        self.b.kill9()


class Clustered:
    """The 3 nodes of tests/fleet/cluster.py; the bench on node 1, gateway i on node i mod 3
    first; a kill takes node 2 down (a third of the fleet and one peer replica move)."""

    KILLED = 2

    def __init__(self, work):
        self.c = Cluster(work)
        self.bench_port = self.c.ports[0]
        self.name = f"a 3-node rmqtt cluster ({os.path.basename(self.c.binary)})"

    def node(self, i):
        return 1 + i % 3

    def urls(self):
        return [self.c.url(i) for i in self.c.ids]

    def url(self, i):
        return self.c.urls(self.node(i))

    def kill(self):
        self.c.kill9(self.KILLED)

    def after_kill(self):
        self.c.restart(self.KILLED)

    def rss(self):
        return f"the 3 broker nodes {self.c.rss_kib() / 1024:.1f} MiB"

    def stop(self):
        self.c.stop()


def connection_losses(work, ids):
    """How many times the gateways' MQTT connections dropped (their logs' warnings)."""
    n = 0
    for gid in ids:
        try:
            with open(os.path.join(work, gid, "stderr"), errors="replace") as f:
                n += sum(1 for line in f if "MQTT connection lost" in line)
        except OSError:
            pass
    return n


def wait_online(bench, ids, limit):
    return wait(lambda: bench.count_online(ids) == len(ids), limit)


def round_trips(bench, ids, n, tool="board_info", args=None):
    times, errors, in_a_row = [], 0, 0
    for i in range(n):
        gw = random.choice(ids)
        r = bench.call(gw, tool, args, timeout=15)
        if r is None or not r[1].get("ok"):
            if errors == 0:
                say(f"  first failed {tool} (to {gw}): {r[1] if r else 'no answer in 15 s'}")
            errors += 1
            in_a_row += 1
            if in_a_row >= 10:
                say(f"  (10 calls in a row failed; {n - i - 1} more not tried)")
                errors += n - i - 1
                break
        else:
            in_a_row = 0
            times.append(r[0] * 1000)
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))] if times else float("nan")
    return p(0.5), p(0.95), errors


def audit_count(home, tool):
    """Rows of `tool` called by another gateway (via = remote) in a gateway's audit log."""
    db = os.path.join(home, "covo.db")
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute("SELECT count(*) FROM audit WHERE via = 'remote' AND tool = ?",
                           (tool,)).fetchone()[0]
    finally:
        con.close()


def load_bin():
    """tests/src/bin/fleet-load.rs: $COVO_FLEET_LOAD_BIN, or the release build (built here)."""
    if os.environ.get("COVO_FLEET_LOAD_BIN"):
        return os.path.abspath(os.environ["COVO_FLEET_LOAD_BIN"])
    tdir = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    subprocess.run(["cargo", "build", "--release", "-p", "covo-tests", "--bin", "fleet-load"],
                   cwd=ROOT, check=True, stdout=sys.stderr)
    return os.path.join(tdir, "release", "fleet-load")


def throughput(urls, ids, tool, args, label, in_flight=None, peer=False):
    """IN_FLIGHT calls at a time for THROUGHPUT_SECS from LOAD_CLIENTS native callers spread
    over `urls` (tests/src/bin/fleet-load.rs: the Python client, a thread per call, tops out
    far below the fleet); returns calls answered ok per second. Every call must be answered,
    ok or with a clear error."""
    cmd = [load_bin(), "--url", ",".join(urls), "--gateways", ",".join(ids), "--tool", tool,
           "--args", json.dumps(args), "--secs", str(THROUGHPUT_SECS),
           "--in-flight", str(in_flight or IN_FLIGHT), "--clients", str(LOAD_CLIENTS)]
    if peer:
        cmd.append("--peer")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=THROUGHPUT_SECS + 120)
    try:
        v = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check(False, f"fleet-load printed no result (exit {r.returncode}): {r.stderr.strip()[-500:]}")
        return 0.0
    say(f"  throughput: {v['calls_per_s']:.0f} {label}/s answered ok, {v['in_flight']} in flight from"
        f" {LOAD_CLIENTS} native callers over {len(urls)} broker URL(s) (p50 {v['p50_ms']:.1f} ms,"
        f" p99 {v['p99_ms']:.1f} ms; {v['ok']} ok, {v['errors']} errors {v['error_kinds']},"
        f" {v['unanswered']} unanswered of {v['sent']})")
    check(v["unanswered"] == 0, f"every {label.split(' ')[0]} call of the throughput run answered"
          f" ({v['unanswered']} of {v['sent']} unanswered)")
    return v["calls_per_s"]


def under_fault(bench, ids, tool, args, n, fault, timeout=40):
    """`n` calls, one thread each; `fault()` runs after the first half has started. Returns
    a function that waits for the calls and gives [(gateway, result or None)], and the time
    the fault happened."""
    out, lock, threads, when = [], threading.Lock(), [], [None]

    def one(gw, a):
        r = bench.call(gw, tool, a, timeout=timeout)
        with lock:
            out.append((gw, r))

    for i in range(n):
        a = dict(args, level=i % 2) if tool == "gpio_write" else args
        t = threading.Thread(target=one, args=(random.choice(ids), a), daemon=True)
        t.start()
        threads.append(t)
        if i == n // 2:
            fault()
            when[0] = time.monotonic()

    def join():
        for t in threads:
            t.join(timeout + 20)
        return out

    return join, when[0]


def fleet_call_under_fault(binary, work, bench, url, targets, tool, args, fault, timeout_ms):
    """`covo fleet call --json` of `tool` on `targets`: covo's own fan-out (8 at once, one
    shared deadline), as a field engineer runs it. `fault()` runs as soon as the bench sees its
    first request on the broker (the fan-out takes only milliseconds while all is well, so only
    then does the fault land inside it). Returns {gateway: its result line} and the fault's
    time."""
    home = os.path.join(work, OPS)
    os.makedirs(home, exist_ok=True)
    cfg = os.path.join(home, "covo.toml")
    with open(cfg, "w") as f:
        f.write(f'[mqtt]\nurl = "{url}"\ngateway_id = "{OPS}"\n')
    cmd = [binary, "--config", cfg, "fleet", "call", "--json", "--timeout-ms", str(timeout_ms)]
    for g in targets:
        cmd += ["--gateway", g]
    with bench.lock:
        bench.ops_requests = 0
    p = subprocess.Popen(cmd + [tool, json.dumps(args)], env=clean_env(home), cwd=home,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = wait(lambda: bench.ops_requests >= 1, 60, step=0.001)
    fault()
    when = time.monotonic()
    out, err = p.communicate(timeout=timeout_ms / 1000 + 60)
    if not first:
        say("  covo fleet call sent no request within 60 s; the fault came anyway")
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    if p.returncode not in (0, 1) or not lines:
        say(f"  covo fleet call exited {p.returncode}: {err.strip()[-500:]}")
    return {line.get("gateway"): line for line in lines}, when


def main():
    page = sys.argv[sys.argv.index("--write") + 1] if "--write" in sys.argv else None
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    binary = covo_bin()
    pbin = peer_bin() if PEERS else None
    work = tempfile.mkdtemp(prefix="covo-fleet-")
    broker = Clustered(work) if CLUSTER else Single(work)
    say(f"fleet bench: {N} gateways ({binary}, {os.path.getsize(binary)} bytes) on {broker.name},"
        f" {PEERS} peer replicas, work {work}")
    bench = Bench(broker.bench_port)
    procs, ids, peers = {}, [], {}
    try:
        for k in range(PEERS):
            peers[k] = start_peer(pbin, work, broker.url(k), f"p{k + 1}")
        # Phase 1: the baseline, one gateway at a time, each called the moment a birth listing
        # the tool arrives: that birth must mean "ready to be called" (on a cluster too, where
        # the birth and the gateway's subscriptions reach the bench's node by different ways).
        at_once = []
        for i in range(BASELINE):
            gid = f"gw-{i:04d}"
            ids.append(gid)
            procs[gid] = start_gateway(binary, work, broker.url(i), gid)
            # Its first birth lists no tools yet; the one that lists them is the go-ahead.
            if wait(lambda: "board_info" in bench.serving.get(gid, ()), 30):
                r = bench.call(gid, timeout=15)
                at_once.append(r is not None and r[1].get("ok"))
                if not at_once[-1] and at_once.count(False) == 1:
                    say(f"  first call on a birth failed (to {gid}): {r[1] if r else 'no answer in 15 s'}")
        check(wait_online(bench, ids, 30), f"{BASELINE} gateways online")
        check(len(at_once) == BASELINE and all(at_once),
              f"a call made as soon as a gateway's birth listed the tool was answered ok"
              f" ({sum(1 for a in at_once if a)} of {BASELINE})")
        time.sleep(1)
        base50, base95, base_err = round_trips(bench, ids, CALLS)
        say(f"  swarm round trip at {BASELINE} gateways: p50 {base50:.2f} ms, p95 {base95:.2f} ms"
            f" ({base_err} errors in {CALLS})")
        if PEERS:
            rbase50, rbase95, rbase_err = round_trips(bench, ids, CALLS, "plot_series", PLOT)
            say(f"  remote call (plot_series on a peer) at {BASELINE} gateways: p50 {rbase50:.2f} ms,"
                f" p95 {rbase95:.2f} ms ({rbase_err} errors in {CALLS})")

        # Phase 2: the whole fleet.
        t0 = time.monotonic()
        for i in range(BASELINE, N):
            gid = f"gw-{i:04d}"
            ids.append(gid)
            procs[gid] = start_gateway(binary, work, broker.url(i), gid)
        last_started = time.monotonic()
        say(f"  started {N - BASELINE} more in {last_started - t0:.1f} s")
        all_up = wait_online(bench, ids, 120)
        up_after = time.monotonic() - last_started
        check(all_up, f"all {N} online ({bench.count_online(ids)} online)")
        timed(all_up and up_after <= 10,
              f"all {N} online {up_after:.1f} s after the last one started (target <= 10 s)")
        time.sleep(5)  # let start-up work (first telemetry, indexes) settle
        rss = sorted(rss_kib(p.pid) for p in procs.values())
        say(f"  memory: gateways {sum(rss) / 1024:.0f} MiB in all, median {statistics.median(rss) / 1024:.2f}"
            f" MiB, max {rss[-1] / 1024:.2f} MiB; {broker.rss()}"
            + (f"; peers {sum(rss_kib(p.pid) for p in peers.values()) / 1024:.1f} MiB" if PEERS else ""))
        lost = connection_losses(work, ids)
        check(lost == 0, f"no gateway lost its broker connection while the fleet came up ({lost} losses)")
        full50, full95, full_err = round_trips(bench, ids, CALLS)
        say(f"  swarm round trip at {N} gateways: p50 {full50:.2f} ms, p95 {full95:.2f} ms"
            f" ({full_err} errors in {CALLS})")
        ratio = full50 / base50
        timed(ratio <= 1.5, f"p50 at {N} / p50 at {BASELINE} = {ratio:.2f} (target <= 1.5)")
        check(base_err == 0 and full_err == 0, "every round trip answered ok")
        if PEERS:
            rfull50, rfull95, rfull_err = round_trips(bench, ids, CALLS, "plot_series", PLOT)
            say(f"  remote call at {N} gateways: p50 {rfull50:.2f} ms, p95 {rfull95:.2f} ms"
                f" ({rfull_err} errors in {CALLS})")
            timed(rfull50 / rbase50 <= 1.5, f"remote p50 at {N} / at {BASELINE} ="
                  f" {rfull50 / rbase50:.2f} (target <= 1.5)")
            check(rbase_err == 0 and rfull_err == 0, "every remote call answered ok")

        urls = broker.urls()
        throughput(urls, ids, "board_info", {}, "swarm calls")
        if PEERS:
            # Each remote call renders an 800x480 PNG on a peer: a few in flight per replica
            # keep the peers busy without queueing calls past the window.
            throughput(urls, ids, "plot_series", PLOT, "remote calls through the peers",
                       REMOTE_IN_FLIGHT)
            # The peers alone, called the way gateways call them, with a tool that costs them
            # little (`code_graph` on one file): what the cluster and the three replicas carry.
            throughput(urls, [], "code_graph", {"symbol": "helper"},
                       "peer calls (code_graph, as gateways make them)", peer=True)

        # The broker (or a node of it) killed under load: actuations in flight across the kill,
        # made by `covo fleet call` (covo's own caller: every gateway gets an answer or a
        # clear error), one gpio_write per gateway, on up to 200 of them.
        losses_before = connection_losses(work, ids)
        targets = random.sample(ids, min(200, len(ids)))

        def kill():
            broker.kill()
            if not CLUSTER:
                with bench.lock:
                    bench.online.clear()  # retained births were lost with the broker

        res, killed = fleet_call_under_fault(binary, work, bench, broker.url(0), targets,
                                             "gpio_write", {"pin": 17, "level": 1}, kill, 20000)
        if not CLUSTER:
            # When the last birth came (the fleet call's deadline may have passed since).
            back = wait_online(bench, ids, 120)
            with bench.lock:
                last = max(bench.online.get(g, 0) for g in ids)
            back_after = (last if back else time.monotonic()) - killed
        else:
            # The retained births outlive the node: "online again" is a fresh birth, published
            # on another node, from every gateway that was on the killed one.
            moved = [g for i, g in enumerate(ids) if broker.node(i) == broker.KILLED]
            back = wait(lambda: all(bench.births.get(g, 0) > killed for g in moved), 120)
            with bench.lock:
                reborn = [bench.births[g] for g in moved if bench.births.get(g, 0) > killed]
            back_after = (max(reborn) if back else time.monotonic()) - killed
            say(f"  {len(moved)} gateways were on node {broker.KILLED}: {len(reborn)} published a new"
                f" birth, the first {min(reborn, default=killed) - killed:.1f} s after the kill;"
                f" {connection_losses(work, ids) - losses_before} connection losses in the fleet's logs")
            back = back and wait_online(bench, ids, 10)
        check(back, f"all {N} online again after the broker{' node' if CLUSTER else ''} was killed"
                    f" ({bench.count_online(ids)} online)")
        timed(back and back_after <= 30,
              f"all {N} online again {back_after:.1f} s after the broker{' node' if CLUSTER else ''}"
              " was killed (target <= 30 s)")
        # Every gateway has its line: the answer, or an error that says what is known.
        missing = [g for g in targets if g not in res]
        kinds = {}
        for g in targets:
            line = res.get(g, {})
            kind = "ok" if line.get("ok") else (line.get("error") or {}).get("kind", "none")
            kinds.setdefault(kind, []).append(g)
        say(f"  across the kill, covo fleet call on {len(targets)} gateways: "
            + ", ".join(f"{len(v)} {k}" for k, v in sorted(kinds.items()))
            + f", {len(missing)} without a line")
        check(not missing, f"covo fleet call gave every gateway an answer or a clear error"
                           f" ({len(missing)} without)")
        # Effects, from each gateway's own audit log: nothing ran twice, every ok ran once,
        # nothing that was not sent ran; a timeout may have run or not (it says so).
        rows = {g: audit_count(os.path.join(work, g), "gpio_write") for g in targets}
        twice = [g for g in targets if rows[g] > 1]
        ok_not_run = [g for g in kinds.get("ok", []) if rows[g] != 1]
        unsent_ran = [g for g in kinds.get("not_sent", []) if rows[g] > 0]
        timed_out = kinds.get("timeout", [])
        say(f"  of the {len(timed_out)} timeouts (sent once, outcome unknown to the caller),"
            f" {sum(1 for g in timed_out if rows[g])} ran and {sum(1 for g in timed_out if not rows[g])} did not")
        check(not twice, f"no gpio_write ran twice ({len(twice)} did)")
        check(not ok_not_run, f"every ok answer has its one audit row ({len(ok_not_run)} not)")
        check(not unsent_ran, f"no gateway that was not asked ran it ({len(unsent_ran)} did)")
        broker.after_kill()
        if CLUSTER:
            check(retained_online(broker.c.ports[broker.KILLED - 1], ids),
                  f"node {broker.KILLED} restarted: it gives all {N} retained births as online")

        if PEERS:
            # A peer replica killed under remote load (plot_series is a read: the gateway
            # resends it once), then started again.
            def kill_peer():
                peers[0].send_signal(signal.SIGKILL)
                peers[0].wait()

            calls_done, _ = under_fault(bench, ids, "plot_series", PLOT, 200, kill_peer)
            calls = calls_done()
            peers[0] = start_peer(pbin, work, broker.url(0), "p1")
            okc = sum(1 for _, r in calls if r is not None and r[1].get("ok"))
            errs = [r[1] for _, r in calls if r is not None and not r[1].get("ok")]
            silent = sum(1 for _, r in calls if r is None)
            say(f"  across the peer kill: {len(calls)} plot_series calls, {okc} ok,"
                f" {len(errs)} clear errors{f' (first: {errs[0]})' if errs else ''}, {silent} unanswered")
            check(silent == 0, f"every remote call across the peer kill answered ({silent} not)")
            check(all(e.get("error") for e in errs), "every failed remote call says why")
            r50, _, rerr = round_trips(bench, ids, min(CALLS, 50), "plot_series", PLOT)
            check(rerr == 0, f"remote calls answered ok after the replica came back ({rerr} errors)")
    finally:
        for p in list(procs.values()) + list(peers.values()):
            p.send_signal(signal.SIGTERM)
        for p in list(procs.values()) + list(peers.values()):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        bench.c.loop_stop()
        broker.stop()
    if failures:
        say(f"fleet bench: {len(failures)} target(s) missed; work kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
        say("fleet bench: every target met")
    if page:
        write_section(page, started)
    if failures:
        sys.exit(1)


def retained_online(port, ids):
    """Whether a fresh client on `port` is given an `online` retained birth for every id."""
    seen, lock = {}, threading.Lock()
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bench-retained",
                    protocol=mqtt.MQTTv5)

    def on_message(_c, _u, m):
        try:
            st = json.loads(m.payload or b"{}").get("status")
        except ValueError:
            return
        with lock:
            seen[m.topic.split("/")[2]] = st

    c.on_message = on_message
    c.on_connect = lambda cl, *_a: cl.subscribe("covo/gateways/+/status", 1)
    c.connect("127.0.0.1", port, keepalive=60)
    c.loop_start()
    try:
        ok = wait(lambda: sum(1 for g in ids if seen.get(g) == "online") == len(ids), 20)
    finally:
        c.loop_stop()
        c.disconnect()
    if not ok:
        with lock:
            off = [g for g in ids if seen.get(g) != "online"]
        say(f"  not online there: {len(off)}, e.g. {off[:5]}")
    return ok


if __name__ == "__main__":
    main()
