"""The official MCP Python SDK (`mcp` on PyPI) as a client of covo.

Run by gateway/tests/integration/mcp_server.rs:

    client.py stdio COVO CONFIG WORKDIR            # covo mcp, a client without elicitation
    client.py elicit accept|decline|accept-empty|accept-no|… COVO CONFIG WORKDIR
    client.py http URL TOKEN WORKDIR               # covo run's streamable HTTP endpoint
    client.py bench COVO CONFIG N                  # sensor_read round trips over stdio

Each check asserts; the last stdout line is a JSON summary the Rust test asserts on too.
"""

import asyncio
import base64
import json
import os
import sys
import time

import httpx2
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def params(covo, config):
    return StdioServerParameters(
        command=covo,
        args=["--config", config, "mcp"],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "COVO_LOG": "warn"},
    )


def error_of(result):
    assert result.is_error, f"expected a tool error, got {result}"
    return json.loads(result.content[0].text)["error"]


def ok_json(result):
    assert not result.is_error, f"tool failed: {result.content[0].text}"
    return json.loads(result.content[0].text)


async def check_tools(s, summary):
    tools = (await s.list_tools()).tools
    by = {t.name: t for t in tools}
    for name in ["sensor_read", "tool_search", "tool_describe", "tool_call"]:
        assert name in by, f"{name} is not listed: {sorted(by)}"
    assert by["sensor_read"].annotations.read_only_hint is True
    assert by["sensor_read"].title == "Sensor read"
    pwm = by["pwm_set"].annotations
    assert (pwm.read_only_hint, pwm.destructive_hint, pwm.idempotent_hint) == (False, False, True), pwm
    # A destructive tool of the toolsets the test lists.
    assert by["fs_delete"].annotations.destructive_hint is True
    assert by["sensor_read"].input_schema["required"] == ["sensor"]
    # covo's own agent-loop tools are not for MCP clients.
    assert "plan_update" not in by and "send_message" not in by, sorted(by)
    summary["tools"] = len(tools)
    summary["listed"] = sorted(by)


async def check_calls(s, workdir, summary):
    r = ok_json(await s.call_tool("sensor_read", {"sensor": "climate"}))
    temps = [q["value"] for q in r["readings"] if q["quantity"] == "temperature"]
    assert temps and -40 < temps[0] < 85, r
    summary["temperature"] = temps[0]
    # The board policy: I2C writes go only to declared devices.
    e = error_of(await s.call_tool("i2c_write", {"address": "0x60", "data": "00"}))
    assert e["kind"] == "policy_refused" and e["rule"] == "i2c.write_allow", e
    summary["policy_rule"] = e["rule"]
    # A schema violation is a tool error too, with its pointer.
    e = error_of(await s.call_tool("sensor_read", {"sensor": 5}))
    assert e["kind"] == "invalid_arguments", e
    # Unknown tool: a structured error, not a protocol failure.
    e = error_of(await s.call_tool("sensor_raed", {}))
    assert e["kind"] == "unknown_tool" and "sensor_read" in e["did_you_mean"], e
    # Discovery: tool_call reaches an owned tool that is not listed.
    hits = ok_json(await s.call_tool("tool_search", {"query": "list files in a folder"}))
    assert any(h["name"] == "fs_list" for h in hits["results"]), hits
    # Images go out as image content.
    r = await s.call_tool("camera_snapshot", {"width": 16, "height": 16})
    snap = ok_json(r)
    images = [c for c in r.content if c.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png", r.content
    png = base64.b64decode(images[0].data)
    with open(os.path.join(workdir, "fixture.png"), "rb") as f:
        assert png == f.read(), "the image content is not the captured PNG"
    assert "bytes_base64" not in r.content[0].text and snap["artifact"].startswith("art-")
    summary["image_bytes"] = len(png)


async def check_destructive_refused(s, workdir, summary):
    victim = os.path.join(workdir, "ws", "victim.txt")
    e = error_of(await s.call_tool("fs_delete", {"path": "victim.txt"}))
    assert e["kind"] == "approval_denied", e
    assert "[mcp] approve" in e["message"], e
    assert os.path.exists(victim), "a refused fs_delete deleted the file"
    summary["refusal"] = e["message"]


async def check_resources(s, summary):
    res = (await s.list_resources()).resources
    uris = [str(r.uri) for r in res]
    assert "covo://board" in uris and "covo://sensors/climate/latest" in uris, uris
    board = (await s.read_resource("covo://board")).contents[0]
    assert 'name = "climate"' in board.text and board.mime_type == "application/toml"
    latest = json.loads((await s.read_resource("covo://sensors/climate/latest")).contents[0].text)
    assert "temperature" in latest["quantities"], latest
    csv = (await s.read_resource("covo://sensors/climate/history.csv")).contents[0]
    lines = csv.text.strip().splitlines()
    assert lines[0] == "at,sensor,quantity,value,unit" and len(lines) > 1, lines
    summary["csv_rows"] = len(lines) - 1
    summary["resources"] = len(uris)
    return uris


async def check_subscription(covo, config, summary):
    updated = asyncio.Queue()

    async def on_message(m):
        if isinstance(m, types.ResourceUpdatedNotification):
            await updated.put(str(m.params.uri))

    async with stdio_client(params(covo, config)) as (r, w):
        async with ClientSession(r, w, message_handler=on_message) as s:
            await s.initialize()
            uris = await check_resources(s, summary)
            await s.subscribe_resource("covo://sensors/light/latest")
            # covo's readings are keyed by the second: a new one a second later.
            await asyncio.sleep(1.1)
            ok_json(await s.call_tool("sensor_read", {"sensor": "light"}))
            got = await asyncio.wait_for(updated.get(), 10)
            assert got == "covo://sensors/light/latest", got
            summary["notified"] = got
            # The subscription bound: the test board declares more sensors than one session
            # may subscribe to.
            subscribable = [u for u in uris if u.startswith("covo://sensors/")]
            refused = None
            for n, u in enumerate(subscribable):
                try:
                    await s.subscribe_resource(u)
                except Exception as e:  # McpError
                    refused = (n, str(e))
                    break
            assert refused is not None, f"{len(subscribable)} subscriptions all accepted"
            assert "at most 32 subscriptions" in refused[1], refused
            summary["subscriptions_refused_after"] = refused[0]


async def check_concurrency(s, summary):
    # Four calls may run at once; the rest are refused as busy while they wait.
    calls = [
        s.call_tool("gpio_wait_edge", {"pin": "button", "timeout_ms": 1500}) for _ in range(7)
    ]
    results = await asyncio.gather(*calls)
    busy = [r for r in results if r.is_error and json.loads(r.content[0].text)["error"]["kind"] == "busy"]
    assert len(busy) == 3, [r.content[0].text for r in results]
    summary["busy"] = len(busy)


async def stdio(covo, config, workdir):
    summary = {}
    async with stdio_client(params(covo, config)) as (r, w):
        async with ClientSession(r, w) as s:
            init = await s.initialize()
            summary["protocol"] = init.protocol_version
            assert init.capabilities.resources.subscribe is True
            await check_tools(s, summary)
            await check_calls(s, workdir, summary)
            await check_destructive_refused(s, workdir, summary)
            await check_concurrency(s, summary)
    await check_subscription(covo, config, summary)
    print(json.dumps(summary))


# Answers that accept the form without confirming it: none of them may run the call.
HOSTILE_ACCEPTS = {
    "accept-no-content": None,
    "accept-empty": {},
    "accept-false": {"confirm": False},
    "accept-no": {"confirm": "no"},
    "accept-zero": {"confirm": 0},
    "accept-string-true": {"confirm": "true"},
}


async def elicit(answer, covo, config, workdir):
    asked = []

    async def on_elicit(context, p):
        asked.append(p.message)
        assert p.requested_schema["properties"]["confirm"]["type"] == "boolean", p
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        if answer in HOSTILE_ACCEPTS:
            return types.ElicitResult(action="accept", content=HOSTILE_ACCEPTS[answer])
        return types.ElicitResult(action="decline")

    victim = os.path.join(workdir, "ws", "victim.txt")
    async with stdio_client(params(covo, config)) as (r, w):
        async with ClientSession(r, w, elicitation_callback=on_elicit) as s:
            await s.initialize()
            r = await s.call_tool("fs_delete", {"path": "victim.txt"})
    assert len(asked) == 1 and "fs_delete" in asked[0], asked
    if answer == "accept":
        assert not r.is_error, r.content[0].text
        assert not os.path.exists(victim), "accepted but not deleted"
    elif answer in HOSTILE_ACCEPTS:
        e = error_of(r)
        assert e["kind"] == "approval_denied" and "confirm" in e["message"], e
        assert os.path.exists(victim), f"accepted with {HOSTILE_ACCEPTS[answer]} and deleted"
    else:
        e = error_of(r)
        assert e["kind"] == "approval_denied" and "decline" in e["message"], e
        assert os.path.exists(victim), "declined but deleted"
    print(json.dumps({"asked": asked[0], "error": r.is_error, "exists": os.path.exists(victim)}))


async def http(url, token, workdir):
    summary = {}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as c:
        r = await c.post(url, json=init, headers=accept)
        assert r.status_code == 401, r
        r = await c.post(url, json=init, headers={**accept, "Authorization": "Bearer wrong"})
        assert r.status_code == 401, r
        summary["without_token"] = 401
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=auth, timeout=30) as hc, streamable_http_client(
        url, http_client=hc
    ) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            assert any(t.name == "sensor_read" for t in tools)
            v = ok_json(await s.call_tool("sensor_read", {"sensor": "climate"}))
            assert v["sensor"] == "climate"
            e = error_of(await s.call_tool("i2c_write", {"address": "0x60", "data": "00"}))
            assert e["rule"] == "i2c.write_allow", e
            e = error_of(await s.call_tool("fs_delete", {"path": "victim.txt"}))
            assert "[mcp] approve" in e["message"], e
            summary["tools"] = len(tools)

    # Elicitation over HTTP: the request reaches the client on the call's SSE stream.
    async def decline(context, p):
        summary["asked_over_http"] = p.message
        return types.ElicitResult(action="decline")

    async with httpx2.AsyncClient(headers=auth, timeout=30) as hc, streamable_http_client(
        url, http_client=hc
    ) as (r, w):
        async with ClientSession(r, w, elicitation_callback=decline) as s:
            await s.initialize()
            e = error_of(await s.call_tool("fs_delete", {"path": "victim.txt"}))
            assert e["kind"] == "approval_denied" and "decline" in e["message"], e
    assert os.path.exists(os.path.join(workdir, "ws", "victim.txt"))
    async with httpx2.AsyncClient(timeout=10) as c:
        # The request size bound: a request announcing 2 MiB is answered 413 from its headers,
        # before its body is read. (Sending the whole body races the server closing the
        # connection after its answer: the client may see a reset instead of the 413.)
        u = httpx2.URL(url)
        reader, writer = await asyncio.open_connection(u.host, u.port)
        writer.write(
            (
                f"POST {u.raw_path.decode()} HTTP/1.1\r\nHost: {u.host}:{u.port}\r\n"
                f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                f"Accept: {accept['Accept']}\r\nContent-Length: {2 << 20}\r\n\r\n"
            ).encode()
            + b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"'
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
        assert status.split()[1:2] == [b"413"], status
        summary["too_large"] = 413
        # Origin (the transport requires servers to check it): a page from another site is
        # refused even with the token; the configured origin and requests without one pass.
        for origin in ["http://evil.example", "null", "http://dash.example:8081", "https://dash.example:8080"]:
            r = await c.post(url, json=init, headers={**accept, **auth, "Origin": origin})
            assert r.status_code == 403, (origin, r.status_code, r.text)
        summary["foreign_origin"] = 403
        r = await c.post(url, json=init, headers={**accept, **auth, "Origin": "http://dash.example:8080"})
        assert r.status_code == 200, (r.status_code, r.text)
        r = await c.delete(url, headers={**auth, "mcp-session-id": r.headers["mcp-session-id"]})
        assert r.status_code in (200, 202, 204), r
        summary["allowed_origin"] = 200
        # The session bound: open sessions until one is refused.
        opened, refused = [], None
        for n in range(40):
            r = await c.post(url, json=init, headers={**accept, **auth})
            if r.status_code == 503:
                refused = n
                assert "MCP sessions are open" in r.text, r.text
                break
            assert r.status_code == 200, (r.status_code, r.text)
            opened.append(r.headers["mcp-session-id"])
        assert refused is not None, "40 sessions accepted"
        summary["sessions_opened"] = len(opened)
        # Closing one makes room for another.
        r = await c.delete(url, headers={**auth, "mcp-session-id": opened[0]})
        assert r.status_code in (200, 202, 204), r
        r = await c.post(url, json=init, headers={**accept, **auth})
        assert r.status_code == 200, (r.status_code, r.text)
    print(json.dumps(summary))


async def bench(covo, config, n):
    async with stdio_client(params(covo, config)) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            times = []
            for _ in range(n):
                t = time.perf_counter()
                res = await s.call_tool("sensor_read", {"sensor": "climate"})
                times.append(time.perf_counter() - t)
                assert not res.is_error, res
            times.sort()
            print(json.dumps({"n": n, "p50_us": times[n // 2] * 1e6, "p90_us": times[n * 9 // 10] * 1e6}))


async def hog(url, token, workdir):
    """Session A asks for destructive calls and never answers their confirmations; session B's
    read-only calls must still run, and A's calls beyond its own waiting slots are busy."""
    auth = {"Authorization": f"Bearer {token}"}
    never = asyncio.Event()
    asked = []

    async def hold(context, p):
        asked.append(p.message)
        await never.wait()
        return types.ElicitResult(action="decline")

    summary = {}
    async with httpx2.AsyncClient(headers=auth, timeout=60) as ha, streamable_http_client(
        url, http_client=ha
    ) as (ra, wa), httpx2.AsyncClient(headers=auth, timeout=60) as hb, streamable_http_client(
        url, http_client=hb
    ) as (rb, wb):
        async with ClientSession(ra, wa, elicitation_callback=hold) as a, ClientSession(rb, wb) as b:
            await a.initialize()
            await b.initialize()
            held = [asyncio.create_task(a.call_tool("fs_delete", {"path": f"victim{i}.txt"})) for i in range(2)]
            for _ in range(200):
                if len(asked) == 2:
                    break
                await asyncio.sleep(0.05)
            assert len(asked) == 2, f"{len(asked)} confirmations asked"
            # A's third and fourth destructive calls: refused at once, naming the limit.
            over = [error_of(await a.call_tool("fs_delete", {"path": "victim9.txt"})) for _ in range(2)]
            for e in over:
                assert "busy" in e["message"] and "waiting for confirmation" in e["message"], e
            summary["over_limit"] = over[0]["message"]
            # B's reads all run, four at once, while A's two calls still wait.
            t = time.perf_counter()
            reads = await asyncio.gather(*[b.call_tool("sensor_read", {"sensor": "climate"}) for _ in range(4)])
            summary["b_reads_s"] = time.perf_counter() - t
            for r in reads:
                assert ok_json(r)["sensor"] == "climate"
            # A's own read-only calls run too.
            assert ok_json(await a.call_tool("sensor_read", {"sensor": "climate"}))["sensor"] == "climate"
            assert not any(h.done() for h in held), "a held call ended"
            for h in held:
                h.cancel()
    for i in range(2):
        assert os.path.exists(os.path.join(workdir, "ws", f"victim{i}.txt")), "a held call ran"
    summary["asked"] = len(asked)
    print(json.dumps(summary))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "stdio":
        asyncio.run(stdio(*args))
    elif mode == "elicit":
        asyncio.run(elicit(*args))
    elif mode == "http":
        asyncio.run(http(*args))
    elif mode == "hog":
        asyncio.run(hog(*args))
    elif mode == "bench":
        asyncio.run(bench(args[0], args[1], int(args[2])))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
