#!/usr/bin/env python3
"""Measures the dashboard's first paint and live-sample latency (run by tests/bench/web.sh)."""
import argparse
import http.server
import statistics
import sys
import threading
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from dashboard import browser, wait  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402


def summary(name, xs, target):
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(len(xs) * 0.95))]
    verdict = "ok" if p95 <= target else "OVER TARGET"
    print(f"{name}: n={len(xs)} median={statistics.median(xs):.1f} ms p95={p95:.1f} ms "
          f"max={xs[-1]:.1f} ms (target <= {target} ms: {verdict})")


class OneLine(http.server.BaseHTTPRequestHandler):
    """The baseline page: one line of HTML from Python's own server on loopback."""
    def do_GET(self):
        body = b"<!doctype html><title>x</title><h1>covo</h1>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--loads", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=15)
    a = ap.parse_args()
    base_srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OneLine)
    threading.Thread(target=base_srv.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{base_srv.server_address[1]}/"
    d = browser()
    try:
        d.get(a.url + "/")
        d.find_element(By.ID, "token").send_keys(a.token)
        d.find_element(By.ID, "login-button").click()
        wait(d, "the dashboard", EC.text_to_be_present_in_element((By.ID, "live"), "live"))
        paints, fcps, dcls = [], [], []
        parts = {"responseEnd": [], "domInteractive": []}
        # The baseline, interleaved with the dashboard's loads in the same browser: a one-line
        # page from another server on loopback, Chrome's own floor on this machine then.
        base = []
        for _ in range(a.loads):
            d.get("about:blank")
            d.get(base_url)
            wait(d, "the baseline's paint", lambda d: d.execute_script(
                "return performance.getEntriesByType('paint').length >= 1"))
            base.append(d.execute_script("return performance.getEntriesByType('paint')[0].startTime"))
            # From a blank tab, as when the dashboard is opened: the last page's unload and
            # its live stream's close are not part of this navigation.
            d.get("about:blank")
            d.get(a.url + "/")
            wait(d, "the paint entries", lambda d: d.execute_script(
                "return performance.getEntriesByType('paint').length >= 2"))
            fp, fcp, dcl, re, di = d.execute_script("""
                const p = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
                const n = performance.getEntriesByType('navigation')[0];
                return [p['first-paint'], p['first-contentful-paint'], n.domContentLoadedEventEnd,
                        n.responseEnd, n.domInteractive];""")
            paints.append(fp)
            fcps.append(fcp)
            dcls.append(dcl)
            parts["responseEnd"].append(re)
            parts["domInteractive"].append(di)
        summary("first paint", paints, 100)
        summary("  (baseline: first paint of a one-line page from Python's http.server)", base, 100)
        summary("first contentful paint", fcps, 100)
        summary("DOMContentLoaded", dcls, 100)
        for k, v in parts.items():
            summary(f"  ({k})", v, 100)
        # Live samples: arrival on the page against the sampler's timestamp.
        d.get(a.url + "/")
        wait(d, "the live stream", EC.text_to_be_present_in_element((By.ID, "live"), "live"))
        d.execute_script("window.covoSamples.length = 0")
        time.sleep(a.seconds)
        samples = d.execute_script("return window.covoSamples")
        lat = [s["received"] - d.execute_script("return Date.parse(arguments[0])", s["at"]) for s in samples]
        if not lat:
            sys.exit("no sample reached the page")
        summary("sample -> page", lat, 100)
    finally:
        d.quit()


if __name__ == "__main__":
    main()
