#!/usr/bin/env python3
"""covo against a real llama.cpp server: the seed's idea in seconds, and tool calls a small model
can make. Every figure is measured in this run, on this machine, against the same server.

    python3 tests/bench/llama.py [--covo target/debug/covo] [--prompts 102] [--model GGUF]

The server and the model default to what tests/llama/setup.sh built ($COVO_LLAMA_SERVER,
$COVO_LLAMA_MODEL, else it runs the script); any GGUF works.

It prints:
1. prompt processing speed (tokens/s) of this machine for the model, from the server's timings;
2. time to first token through covo (`covo chat -m` with max_tokens = 1: the turn is the prompt
   plus one token) for the gateway payload (platform `gateway`) and the full payload (every
   tool), cold (server just started) and warm (the same prefix, a new question), with ratios;
   where a payload does not fit the model's context, it says so;
3. over N prompts (a sensor reading, a relay switch, a search for a hidden tool), the fraction
   of replies that yield a schema-valid tool call, in native, constrained and text modes: a
   prompt counts when its one model call produced a call that passed the pipeline's validation
   (the audit log's outcome is not unknown_tool, malformed_json or invalid_arguments; a call the
   text reader could not read is never audited and counts as invalid).
"""
import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    def __init__(self, server, model, ctx):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="llama-", suffix=".log", delete=False)
        self.p = subprocess.Popen(
            [server, "-m", model, "--host", "127.0.0.1", "--port", str(self.port), "--jinja",
             "-np", "1", "-t", "2", "-c", str(ctx), "--no-webui"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        end = time.time() + 120
        while time.time() < end:
            try:
                if b"ok" in urllib.request.urlopen(self.url("/health"), timeout=2).read():
                    return
            except Exception:
                time.sleep(0.25)
        sys.exit(f"llama-server did not come up; see {self.log.name}")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def post(self, path, body):
        req = urllib.request.Request(self.url(path), json.dumps(body).encode(),
                                     {"content-type": "application/json"})
        try:
            return json.loads(urllib.request.urlopen(req, timeout=600).read())
        except urllib.error.HTTPError as e:
            return {"error": e.read().decode(errors="replace"), "status": e.code}

    def stop(self):
        self.p.kill()
        self.p.wait()


def covo_turn(covo, home, cfg, message, platform="gateway"):
    """One `covo chat -m` turn; returns (seconds, exit code, stderr)."""
    os.makedirs(home, exist_ok=True)
    path = os.path.join(home, "covo.toml")
    with open(path, "w") as f:
        f.write(cfg)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVO_")}
    env["COVO_HOME"] = home
    t = time.perf_counter()
    p = subprocess.run([covo, "--config", path, "chat", "--platform", platform, "--profile", "full",
                        "-m", message], env=env, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - t, p.returncode, p.stderr


def llm_cfg(srv, mode, max_tokens, steps=1):
    return (f'[llm]\nbase_url = "{srv.url("/v1")}"\nmodel = "bench"\nmax_tokens = {max_tokens}\n'
            f'tool_calls = "{mode}"\nidle_timeout_secs = 900\ntimeout_secs = 900\nmax_retries = 0\n'
            f'[agent]\nmax_steps = {steps}\n[platforms]\nall = ["full"]\n')


def audited(home):
    db = os.path.join(home, "covo.db")
    if not os.path.exists(db):
        return []
    with sqlite3.connect(db) as c:
        return c.execute("SELECT tool, outcome FROM audit ORDER BY id").fetchall()


PROMPTS = [
    "What is the temperature? Read the sensor called climate.",
    "How humid is it in the greenhouse? Use the climate sensor.",
    "Turn the relay on: write 1 to GPIO pin 17.",
    "Switch pin 17 off.",
    "Find a tool that can take a photo with the camera.",
    "Search your tools for one that plots a series of numbers.",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--covo", default=os.path.join(ROOT, "target/debug/covo"))
    ap.add_argument("--server", default=os.environ.get("COVO_LLAMA_SERVER"))
    ap.add_argument("--model", default=os.environ.get("COVO_LLAMA_MODEL"))
    ap.add_argument("--prompts", type=int, default=102)
    ap.add_argument("--ctx", type=int, default=8192)
    a = ap.parse_args()
    if not a.server or not a.model:
        cache = subprocess.run(["bash", os.path.join(ROOT, "tests/llama/setup.sh")],
                               capture_output=True, text=True, check=True).stdout.strip()
        a.server = a.server or os.path.join(cache, "bin/llama-server")
        a.model = a.model or os.path.join(cache, "model.gguf")
    work = tempfile.mkdtemp(prefix="covo-llama-bench-")
    print(f"model {os.path.basename(a.model)}, context {a.ctx}, {os.cpu_count()} CPUs, covo {a.covo}")

    # 1. Prompt processing speed, from the server's own timings on a long cold prompt.
    srv = Server(a.server, a.model, a.ctx)
    text = " ".join(f"Reading {i}: the greenhouse was {18 + i % 7} degrees." for i in range(300))
    r = srv.post("/v1/chat/completions", {"messages": [{"role": "user", "content": text}],
                                          "max_tokens": 1, "cache_prompt": False})
    t = r.get("timings", {})
    print(f"\n1. prompt processing: {t.get('prompt_n')} tokens at {t.get('prompt_per_second', 0):.0f} tokens/s; "
          f"generation {t.get('predicted_per_second', 0):.0f} tokens/s")

    # 2. Time to first token through covo: the prompt and one token.
    print("\n2. time to first token through covo (text mode: the tools in the system prompt)")
    rows = {}
    for name, platform in [("gateway", "gateway"), ("full", "all")]:
        srv.stop()
        srv = Server(a.server, a.model, a.ctx)  # cold: an empty prompt cache
        home = os.path.join(work, f"ttft-{name}")
        cold, code, err = covo_turn(a.covo, home, llm_cfg(srv, "text", 1), "What is the temperature?", platform)
        warm, _, _ = covo_turn(a.covo, home, llm_cfg(srv, "text", 1), "And the humidity?", platform)
        rows[name] = (cold, warm, code)
        last = err.strip().splitlines()[-1] if err.strip() else ""
        note = "" if code == 0 else f"  (exit {code}: {last[:300]})"
        print(f"   {name:8} cold {cold:6.2f} s   warm {warm:5.2f} s{note}")
    if rows["gateway"][2] == 0 and rows["full"][2] == 0:
        print(f"   full/gateway: cold {rows['full'][0] / rows['gateway'][0]:.2f}x, warm {rows['full'][1] / rows['gateway'][1]:.2f}x")
    print(f"   warm/cold (gateway): {rows['gateway'][1] / rows['gateway'][0]:.3f}")

    # 3. Valid tool calls over N prompts, per mode.
    print(f"\n3. replies that yield a schema-valid tool call, {a.prompts} prompts per mode")
    for mode in ["native", "constrained", "text"]:
        valid = called = 0
        t0 = time.perf_counter()
        for i in range(a.prompts):
            home = os.path.join(work, f"calls-{mode}-{i}")
            covo_turn(a.covo, home, llm_cfg(srv, mode, 96), PROMPTS[i % len(PROMPTS)])
            rows_ = audited(home)
            called += bool(rows_)
            if any(o not in ("unknown_tool", "malformed_json", "invalid_arguments") for _, o in rows_):
                valid += 1
        dt = time.perf_counter() - t0
        print(f"   {mode:11} {valid:4}/{a.prompts} valid ({100 * valid / a.prompts:5.1f}%), "
              f"{called} with any audited call, {dt / a.prompts:.2f} s a prompt")
    srv.stop()


if __name__ == "__main__":
    main()
