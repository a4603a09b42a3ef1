"""A 3-node clustered MQTT 5 broker on 127.0.0.1 for the fleet tests: tests/fleet/broker
(rmqtt with raft clustering, `$share` and retained messages), built by its setup.sh.

Each node has its own MQTT port; the nodes talk gRPC to each other and keep the cluster's
routes in raft. Node 1 starts alone and leads; the others start once it listens and join it. A
node killed with SIGKILL can be started again on its ports and rejoins the leader it finds."""

import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from mosquitto import free_port  # noqa: E402  (tests/bench/mosquitto.py)

HERE = os.path.dirname(os.path.abspath(__file__))


def broker_bin():
    """The broker binary: $COVO_FLEET_BROKER, or what tests/fleet/broker/setup.sh builds."""
    if os.environ.get("COVO_FLEET_BROKER"):
        return os.environ["COVO_FLEET_BROKER"]
    out = subprocess.run(["bash", os.path.join(HERE, "broker", "setup.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def wait(pred, limit=10.0, step=0.05):
    """Polls `pred` every `step` seconds until it holds or `limit` seconds have passed; whether
    it held. The fleet scripts' one way of waiting for something."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return bool(pred())


def _listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


class Cluster:
    """`n` nodes; `ports[i]` is node i+1's MQTT port; logs in `work`/node-<id>.log. With `acl`
    (an rmqtt-acl rule file, packaging/rmqtt/covo-acl.toml with credentials), every node
    enforces it; without, every client may do anything."""

    def __init__(self, work, n=3, binary=None, acl=None):
        self.binary = binary or broker_bin()
        self.acl = ["--acl", acl] if acl else []
        self.work = work
        self.ids = list(range(1, n + 1))
        self.ports = [free_port() for _ in self.ids]
        grpc = [free_port() for _ in self.ids]
        raft = [free_port() for _ in self.ids]
        self.grpc = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(self.ids, grpc))
        self.raft = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(self.ids, raft))
        self.procs = {}
        for i in self.ids:
            self.start(i)
        # Until the raft routes reach every node, a publish on one node may miss a subscriber
        # on another: wait for the followers to report the leader.
        self.wait_joined()

    def url(self, i):
        return f"mqtt://127.0.0.1:{self.ports[i - 1]}"

    def urls(self, first):
        """Every node's URL, node `first` first: a client's list in `[mqtt] url`."""
        order = self.ids[first - 1:] + self.ids[:first - 1]
        return ",".join(self.url(i) for i in order)

    def log(self, i):
        return os.path.join(self.work, f"node-{i}.log")

    def start(self, i, timeout=60):
        """Starts node `i` and waits until it accepts MQTT connections (its ports may take a
        moment to be free again after a kill)."""
        end = time.time() + timeout
        while True:
            with open(self.log(i), "ab") as out:
                self.procs[i] = subprocess.Popen(
                    [self.binary, "--id", str(i), "--mqtt", f"127.0.0.1:{self.ports[i - 1]}",
                     "--grpc", self.grpc, "--raft", self.raft, *self.acl],
                    stdout=out, stderr=out, stdin=subprocess.DEVNULL)
            while time.time() < end:
                if _listening(self.ports[i - 1]):
                    return
                if self.procs[i].poll() is not None:
                    break
                time.sleep(0.1)
            if self.procs[i].poll() is None:
                self.procs[i].kill()
                self.procs[i].wait()
            if time.time() > end:
                raise SystemExit(f"cluster node {i} did not start: see {self.log(i)}")
            time.sleep(0.5)

    def _count(self, i, match):
        """How many lines of node `i`'s log `match` (0 before it has one)."""
        try:
            with open(self.log(i), errors="replace") as f:
                return sum(1 for line in f if match(line))
        except OSError:
            return 0

    def joins(self, i):
        """How many times node `i` has joined a leader (its log says so each time)."""
        return self._count(i, lambda line: "running in follower mode" in line)

    def wait_joined(self, timeout=60, nodes=None, before=None):
        """Waits until each of `nodes` (default: all but node 1) has joined a leader once more
        than `before[i]` times (default 0)."""
        end = time.monotonic() + timeout
        for i in nodes or self.ids[1:]:
            if not wait(lambda: self.joins(i) > (before or {}).get(i, 0), end - time.monotonic(), 0.1):
                raise SystemExit(f"cluster node {i} did not join the leader: see {self.log(i)}")
        time.sleep(1.0)

    def synced(self, i):
        """How many times node `i` has finished copying another node's retained messages."""
        return self._count(i, lambda line: "sync_retains_from_peers from" in line
                           and line.rstrip().endswith("completed"))

    def restart(self, i, timeout=60):
        """Starts node `i` again after a kill and waits until it has rejoined the cluster and
        copied the retained messages of the other nodes. It accepts clients a few seconds
        before that copy is done, and a client that subscribes there in between is given no
        retained messages (rmqtt 0.24): the harness waits, a real client may not."""
        before = {i: self.joins(i)}
        synced = self.synced(i)
        self.start(i)
        self.wait_joined(nodes=[i], before=before)
        if not wait(lambda: self.synced(i) >= synced + len(self.ids) - 1, timeout, 0.1):
            raise SystemExit(f"cluster node {i} did not copy the retained messages: see {self.log(i)}")

    def kill9(self, i):
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def rss_kib(self):
        total = 0
        for p in self.procs.values():
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    total += next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            except (OSError, StopIteration):
                pass
        return total

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
