#!/usr/bin/env python3
"""What covo needs of a clustered broker, checked across the nodes of tests/fleet/cluster.py
with paho-mqtt (MQTT 5) before any gateway runs on it:

- a request published on one node reaches a subscriber on another with its response topic,
  correlation data and user properties, and the answer comes back to a third node's client;
- a `$share` group with a member on each node gets each message exactly once, and members on
  other nodes than the publisher's get some;
- a retained message (a gateway's birth) is seen by a new subscriber on another node, and a
  replaced one is seen as the new one;
- a Will (a gateway's death notice) published when its client's socket dies reaches another
  node's subscriber;
- with a node killed, the other two still route and keep the retained messages published
  through the dead node; started again, it rejoins and routes both ways.

  python3 tests/fleet/cluster_check.py      # exit 1 when a check fails
"""

import collections
import os
import shutil
import socket
import sys
import tempfile
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, wait  # noqa: E402

failures = []
clients = []


def check(name, ok, detail=""):
    print(("  ok   " if ok else "  FAIL ") + name + (f" ({detail})" if detail else ""), flush=True)
    if not ok:
        failures.append(name)


def client(port, will=None):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="chk-" + uuid.uuid4().hex[:10],
                    protocol=mqtt.MQTTv5)
    c.inbox = collections.deque()
    c.on_message = lambda cl, _u, m: cl.inbox.append(m)
    if will:
        c.will_set(*will)
    c.connect("127.0.0.1", port, keepalive=10)
    c.loop_start()
    clients.append(c)
    return c


def subscribe(c, *topics):
    done = []
    c.on_subscribe = lambda *_a: done.append(1)
    for t in topics:
        c.subscribe(t, qos=1)
    wait(lambda: len(done) == len(topics))


def retained(port, topic_filter, n=1):
    """The retained messages a new subscriber on `port` is given for `topic_filter` (waiting
    up to 5 s for `n` of them)."""
    s = client(port)
    subscribe(s, topic_filter)
    wait(lambda: len(s.inbox) >= n, 5)
    return list(s.inbox)


def request_response(ports, a, b, c, tag):
    """A request on node a answered by a responder on node b, the answer read on node c."""
    responder = client(ports[b])

    def answer(cl, _u, m):
        p = Properties(PacketTypes.PUBLISH)
        p.CorrelationData = m.properties.CorrelationData
        p.UserProperty = [("echo", dict(m.properties.UserProperty).get("k", "?"))]
        cl.publish(m.properties.ResponseTopic, b"pong:" + m.payload, qos=1, properties=p)

    responder.on_message = answer
    subscribe(responder, f"chk/{tag}/req")
    caller = client(ports[c])
    subscribe(caller, f"chk/{tag}/res")
    time.sleep(0.5)  # the subscriptions' routes reach the other nodes through raft
    p = Properties(PacketTypes.PUBLISH)
    p.ResponseTopic = f"chk/{tag}/res"
    p.CorrelationData = b"\x00\x01call-" + tag.encode()
    p.UserProperty = [("k", tag)]
    client(ports[a]).publish(f"chk/{tag}/req", b"ping", qos=1, properties=p)
    if not wait(lambda: caller.inbox):
        return False, "no answer"
    m = caller.inbox[0]
    ok = (m.payload == b"pong:ping" and m.properties.CorrelationData == p.CorrelationData
          and ("echo", tag) in m.properties.UserProperty)
    return ok, f"{m.payload!r}, correlation {m.properties.CorrelationData!r}, {m.properties.UserProperty}"


def main():
    work = tempfile.mkdtemp(prefix="covo-cluster-")
    cl = Cluster(work)
    ports = cl.ports
    print(f"cluster check: 3 nodes on MQTT ports {ports} ({cl.binary}), logs in {work}")
    try:
        ok, detail = request_response(ports, 0, 1, 2, "a")
        check("request on node 1, responder on node 2, answer on node 3: response topic, "
              "correlation data and user property intact", ok, detail)

        members = [client(p) for p in ports]
        for m in members:
            subscribe(m, "$share/peers/chk/share/+")
        time.sleep(0.5)
        pub = client(ports[0])
        n = 300
        for i in range(n):
            pub.publish(f"chk/share/g{i}", str(i).encode(), qos=1)
        wait(lambda: sum(len(m.inbox) for m in members) >= n)
        time.sleep(1.0)
        got = [m.payload for x in members for m in x.inbox]
        counts = [len(x.inbox) for x in members]
        check("$share group across 3 nodes: each of 300 messages from node 1 delivered once",
              len(got) == n and len(set(got)) == n, f"{len(got)} delivered, per member {counts}")
        check("$share members on nodes 2 and 3 get messages published on node 1",
              counts[1] > 0 and counts[2] > 0, str(counts))

        client(ports[2]).publish("covo/gateways/chk/status", b'{"status":"online"}', qos=1,
                                 retain=True).wait_for_publish()
        time.sleep(0.5)
        got = [m.payload for m in retained(ports[0], "covo/gateways/+/status")]
        check("a birth retained through node 3 is seen by a new subscriber on node 1",
              got == [b'{"status":"online"}'], repr(got))
        client(ports[1]).publish("covo/gateways/chk/status", b'{"status":"offline"}', qos=1,
                                 retain=True).wait_for_publish()
        time.sleep(0.5)
        got = [m.payload for m in retained(ports[2], "covo/gateways/+/status")]
        check("replaced through node 2, node 3 gives the new one",
              got == [b'{"status":"offline"}'], repr(got))

        ws = client(ports[2])
        subscribe(ws, "covo/gateways/will/status")
        w = client(ports[1], will=("covo/gateways/will/status", b'{"status":"offline"}', 1, True))
        time.sleep(0.5)
        w.loop_stop()
        w.socket().shutdown(socket.SHUT_RDWR)
        w.socket().close()
        check("a Will from a client of node 2 whose socket died reaches node 3",
              wait(lambda: ws.inbox, 20), repr([m.payload for m in ws.inbox]))

        # Node 3 killed: retained messages published through it stay, nodes 1 and 2 route.
        client(ports[2]).publish("covo/gateways/n3/status", b'{"status":"online"}', qos=1,
                                 retain=True).wait_for_publish()
        time.sleep(0.5)
        cl.kill9(3)
        ok, detail = request_response(ports, 0, 1, 0, "b")
        check("node 3 killed: nodes 1 and 2 still route requests and answers", ok, detail)
        got = [m.payload for m in retained(ports[0], "covo/gateways/n3/status")]
        check("node 3 killed: the birth retained through it is still given by node 1",
              got == [b'{"status":"online"}'], repr(got))

        cl.restart(3)
        ok, detail = request_response(ports, 2, 0, 1, "c")
        check("node 3 restarted: it rejoins and routes to node 1 and from node 2", ok, detail)
        ok, detail = request_response(ports, 1, 2, 2, "d")
        check("node 3 restarted: requests reach its subscribers", ok, detail)
        topics = sorted(m.topic for m in retained(ports[2], "covo/gateways/+/status", 3))
        check("node 3 restarted: it gives the cluster's retained births",
              len(set(topics)) >= 3, repr(topics))
    finally:
        for c in clients:
            c.loop_stop()
        cl.stop()
    if failures:
        print(f"cluster check: {len(failures)} failed; logs kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print("cluster check: every check passed")


if __name__ == "__main__":
    main()
