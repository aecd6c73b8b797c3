"""The `tenure serve` dashboard in a real browser, and `/metrics` checked by
promtool.

Usage: dashboard.py TENURE_BIN OUT_DIR [DB]

Makes a store (DB, or a SQLite file in a temporary folder), starts
`tenure serve` on it, checks `/metrics` with `promtool check metrics` and
against `tenure stats --json`, then drives headless Chromium (Selenium,
chromedriver) with every host but the server's unreachable: the page loads,
shows the store's numbers, follows a submit, claim, completion and failure
by other processes within 2 s each, logs no console error. A screenshot is
written to OUT_DIR/dashboard.png.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

import tenure_run
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

BIN, OUT = sys.argv[1], sys.argv[2]
UPDATE_WITHIN = 2.0


def tenure(env, *args, stdin=b""):
    return tenure_run.tenure(BIN, env, *args, stdin=stdin)


def wait_for(what, cond, within):
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise SystemExit(f"dashboard: {what} not shown within {within}s")


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="tenure-serve-")
    db = sys.argv[3] if len(sys.argv) > 3 else os.path.join(tmp, "store.db")
    env = dict(os.environ, TENURE_DB=db)
    tenure(env, "init")
    prod = f"dash{os.getpid()}"
    tenure(env, "production", "create", prod)
    for i in range(3):
        tenure(env, "job", "submit", "-p", prod, "--max-attempts", "1", f"j{i}", stdin=b"secret payload")
    srv, base = tenure_run.serve(BIN, env)
    try:
        check_metrics(env, base, prod)
        browse(env, base, prod, tmp)
    finally:
        srv.kill()
        srv.wait()
    print("dashboard: ok")


def check_metrics(env, base, prod):
    body = urllib.request.urlopen(base + "/metrics", timeout=5).read()
    path = os.path.join(OUT, "metrics.txt")
    with open(path, "wb") as f:
        f.write(body)
    r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"promtool check metrics: {r.stdout.decode()}{r.stderr.decode()}")
    stats = json.loads(tenure(env, "--json", "stats", "-p", prod))["productions"][0]["jobs"]
    text = body.decode()
    for state, n in stats.items():
        want = f'tenure_jobs{{production="{prod}",state="{state}"}} {n}'
        if want not in text.splitlines():
            raise SystemExit(f"/metrics lacks {want}")
    print("metrics: promtool check passes, tenure_jobs match stats")


def browse(env, base, prod, tmp):
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        # Every host but the server's is unreachable.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=127.0.0.1",
    ]:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        d.set_page_load_timeout(10)
        t0 = time.monotonic()
        d.get(base + "/")
        wait_for("first render", lambda: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1", 5)
        print(f"dashboard: first complete render {time.monotonic() - t0:.2f}s")

        def cells():
            # Read in one script: the page replaces its rows at every poll.
            rows = d.execute_script(
                "return [...document.querySelectorAll('#productions tbody tr')]"
                ".map(tr => [...tr.cells].map(td => td.textContent));"
            )
            return next((r for r in rows if r and r[0] == prod), [])

        # Columns: production, due, later, live, expired, completed, failed, cancelled.
        def shows(col, n):
            return lambda: (lambda c: len(c) > col and c[col] == str(n))(cells())

        wait_for("the store's waiting jobs", shows(1, 3), UPDATE_WITHIN)
        tenure(env, "job", "submit", "-p", prod, "--max-attempts", "1", "j3", stdin=b"secret payload")
        print(f"submit shown after {wait_for('a submit', shows(1, 4), UPDATE_WITHIN):.2f}s")
        tok = os.path.join(tmp, "t1")
        tenure(env, "claim", "-p", prod, "--holder", "browser-test", "--ttl", "60s", "--token-out", tok)
        print(f"claim shown after {wait_for('a claim', shows(3, 1), UPDATE_WITHIN):.2f}s")
        tenure(env, "complete", "--token-file", tok)
        print(f"completion shown after {wait_for('a completion', shows(5, 1), UPDATE_WITHIN):.2f}s")
        tok2 = os.path.join(tmp, "t2")
        tenure(env, "claim", "-p", prod, "--holder", "browser-test", "--ttl", "60s", "--token-out", tok2)
        tenure(env, "fail", "--token-file", tok2, "--permanent", "--reason", "browser saw this")
        print(f"failure shown after {wait_for('a failure', shows(6, 1), UPDATE_WITHIN):.2f}s")
        wait_for(
            "the failure's last error",
            lambda: "browser saw this" in d.execute_script("return document.getElementById('failures').textContent"),
            UPDATE_WITHIN,
        )
        wait_for("events", lambda: "failed" in d.execute_script("return document.getElementById('events').textContent"), UPDATE_WITHIN)
        page = d.execute_script("return document.body.textContent")
        if "secret payload" in page:
            raise SystemExit("dashboard shows payload bytes")
        shot = os.path.join(OUT, "dashboard.png")
        d.save_screenshot(shot)
        print(f"dashboard: screenshot {shot}")
        errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
        if errors:
            raise SystemExit(f"dashboard: console errors: {errors}")
    finally:
        d.quit()


if __name__ == "__main__":
    main()
