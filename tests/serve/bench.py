"""`tenure serve` bench rows (run by `cargo xtask bench`): the page's first
complete render in headless Chromium, `/metrics` latency, and the server's
CPU while idle with the page open, on a store of N jobs.

Usage: bench.py TENURE_BIN N IDLE_SECONDS

Prints one JSON object: `jobs`, `render_s` (load to the first render with
every figure, median of 3) and `render_empty_s` (the same on an empty store,
measured in the same run), `metrics_p50_ms` and `clock_p50_ms` (`/api/clock`,
the baseline: a read that touches no job row), `idle_cpu_pct` (the server
process's user + system time over IDLE_SECONDS, as % of one core).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import tenure_run
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

BIN, N, IDLE = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
CHUNK = 50_000


def tenure(env, *args, stdin=b""):
    return tenure_run.tenure(BIN, env, *args, stdin=stdin)


def store(n):
    d = tempfile.mkdtemp(prefix="tenure-serve-bench-")
    env = dict(os.environ, TENURE_DB=os.path.join(d, "store.db"))
    tenure(env, "init")
    tenure(env, "production", "create", "bench")
    for start in range(0, n, CHUNK):
        lines = "".join(
            json.dumps({"job": f"job-{i:08}", "payload": "x" * 32}) + "\n"
            for i in range(start, min(n, start + CHUNK))
        )
        tenure(env, "job", "submit", "-p", "bench", "--jsonl", "-", stdin=lines.encode())
    # Mixed states: some claimed, completed and failed.
    for k in range(min(n, 20)):
        tok = os.path.join(d, f"t{k}")
        tenure(env, "claim", "-p", "bench", "--holder", "bench", "--ttl", "1h", "--token-out", tok)
        if k % 3 == 0:
            tenure(env, "complete", "--token-file", tok)
        elif k % 3 == 1:
            tenure(env, "fail", "--token-file", tok, "--permanent", "--reason", "bench")
    return env


def serve(env):
    return tenure_run.serve(BIN, env)


def p50_ms(url, n=30):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        urllib.request.urlopen(url, timeout=10).read()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def driver():
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]:
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def render_s(d, base):
    t = []
    for _ in range(3):
        d.get("about:blank")
        t0 = time.perf_counter()
        d.get(base + "/")
        while d.execute_script("return document.body.dataset.ready") != "1":
            if time.perf_counter() - t0 > 30:
                raise SystemExit("the page did not render within 30 s")
            time.sleep(0.005)
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    d = driver()
    try:
        empty_srv, empty = serve(store(0))
        try:
            render_empty = render_s(d, empty)
        finally:
            empty_srv.kill()
        env = store(N)
        srv, base = serve(env)
        try:
            metrics = p50_ms(base + "/metrics")
            clock = p50_ms(base + "/api/clock")
            render = render_s(d, base)
            c0, t0 = cpu_s(srv.pid), time.monotonic()
            time.sleep(IDLE)
            idle = (cpu_s(srv.pid) - c0) / (time.monotonic() - t0) * 100
        finally:
            srv.kill()
    finally:
        d.quit()
    print(json.dumps({
        "jobs": N, "render_s": render, "render_empty_s": render_empty,
        "metrics_p50_ms": metrics, "clock_p50_ms": clock, "idle_cpu_pct": idle,
    }))


if __name__ == "__main__":
    main()
