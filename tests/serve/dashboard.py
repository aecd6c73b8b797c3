"""The `tenure serve` dashboard in a real browser, and `/metrics` checked by
promtool.

Usage: dashboard.py TENURE_BIN OUT_DIR [DB]

Makes a store (DB, or a SQLite file in a temporary folder), starts
`tenure serve` on it, checks `/metrics` with `promtool check metrics` and
against `tenure stats --json`, then drives headless Chromium (Selenium,
chromedriver) with every host but the server's unreachable: the page loads,
shows the store's numbers, follows a submit, claim, completion and failure
by other processes within 2 s each, lists a short lease claimed by another
process among the leases close to expiry and shows that job (its payload
and progress as size and digest) when its row is clicked, shows the clock,
the high-water mark and the wait percentiles, draws the depth chart, shows
a pause and a concurrency limit set by another process within 2 s (and
/metrics their gauges), and logs no console error. A screenshot is written to OUT_DIR/dashboard.png.
"""

import datetime
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

        # Columns: production, due, later, live, expired, completed, failed,
        # cancelled, oldest due, expiring, wait p50/p95/p99, run p50/p95/p99,
        # claims/s, gates.
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
        lease_table(d, env, prod, tmp)
        clock_and_percentiles(d, cells)
        chart(d)
        gates(d, env, prod, cells)
        check_gate_metrics(base, prod)
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


def text(d, element_id):
    return d.execute_script(f"return document.getElementById('{element_id}').textContent")


def lease_table(d, env, prod, tmp):
    """A short lease claimed by another process is listed among the leases
    close to expiry; a click on its row shows the job."""
    tenure(env, "job", "submit", "-p", prod, "--max-attempts", "1", "short", stdin=b"secret payload")
    tok = os.path.join(tmp, "t3")
    tenure(env, "claim", "-p", prod, "--job", "short", "--holder", "expiring-soon", "--ttl", "20s",
           "--token-out", tok)
    took = wait_for("a lease close to expiry", lambda: "expiring-soon" in text(d, "expiring"), UPDATE_WITHIN)
    print(f"lease close to expiry shown after {took:.2f}s")
    rows = d.execute_script(
        "return [...document.querySelectorAll('#expiring tbody tr')]"
        ".map(tr => [...tr.cells].map(td => td.textContent));"
    )
    row = next(r for r in rows if r[1] == "short")
    if row[0] != prod or row[2] != "expiring-soon" or row[3] == "-":
        raise SystemExit(f"dashboard: lease row {row}")
    # The page redraws its rows at every poll: click the row found now.
    d.execute_script(
        "[...document.querySelectorAll('#expiring tbody tr')]"
        ".find(tr => tr.cells[1].textContent === 'short').click();"
    )

    def detail():
        return d.execute_script(
            "const dl = document.getElementById('job-detail');"
            "if (document.getElementById('job').hidden) return {};"
            "return Object.fromEntries([...dl.querySelectorAll('dd')]"
            ".map(dd => [dd.dataset.field, dd.textContent]));"
        )

    wait_for("the clicked job", lambda: detail().get("job") == "short", UPDATE_WITHIN)
    job = detail()
    if job["state"] != "claimed" or job["holder"] != "expiring-soon":
        raise SystemExit(f"dashboard: job detail {job}")
    if not job["payload"].startswith("14 B sha256 ") or job["progress"] != "-":
        raise SystemExit(f"dashboard: job detail payload/progress {job}")
    print("dashboard: lease close to expiry listed, its job shown on click")


def clock_and_percentiles(d, cells):
    """The clock and the high-water mark are times; the wait percentiles of
    the claims made are shown."""
    for element_id in ("now", "mark"):
        t = text(d, element_id)
        try:
            datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
        except ValueError:
            raise SystemExit(f"dashboard: #{element_id} is {t!r}, not a time")
    wait_for("the wait percentiles", lambda: (lambda c: len(c) > 10 and c[10] != "-")(cells()), UPDATE_WITHIN)
    wait = cells()[10]
    if wait.count(" / ") != 2:
        raise SystemExit(f"dashboard: wait percentiles {wait!r}")
    print(f"dashboard: clock {text(d, 'now')}, high-water {text(d, 'mark')}, wait p50/p95/p99 {wait}")


def chart(d):
    """The depth chart has drawn a series: pixels of a series color."""
    colored = """
      const c = document.getElementById('depth');
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const colors = [[47,111,223],[217,72,15],[43,138,62],[134,46,156],[201,42,42],[92,124,250]];
      let n = 0;
      for (let i = 0; i < px.length; i += 4) {
        if (px[i + 3] < 200) continue;
        for (const [r, g, b] of colors) {
          if (Math.abs(px[i] - r) + Math.abs(px[i + 1] - g) + Math.abs(px[i + 2] - b) < 40) { n++; break; }
        }
      }
      return n;"""
    wait_for("the depth chart", lambda: d.execute_script(colored) > 50, 5)
    print(f"dashboard: depth chart draws {d.execute_script(colored)} series pixels")


def gates(d, env, prod, cells):
    """A pause and a concurrency limit set by another process are shown."""
    if cells()[13] != "-":
        raise SystemExit(f"dashboard: gates before any is set: {cells()[13]!r}")
    tenure(env, "production", "pause", prod)
    took = wait_for("a pause", lambda: "paused since " in cells()[13], UPDATE_WITHIN)
    print(f"pause shown after {took:.2f}s")
    tenure(env, "production", "limit", prod, "--concurrency", "2", "--rate", "5/1s")
    took = wait_for("a limit", lambda: "limit 2" in cells()[13] and "rate 5/s" in cells()[13], UPDATE_WITHIN)
    print(f"limits shown after {took:.2f}s: {cells()[13]}")
    badges = d.execute_script(
        "return [...document.querySelectorAll('#productions tbody tr')]"
        f".filter(tr => tr.cells[0].textContent === {json.dumps(prod)})"
        ".flatMap(tr => [...tr.querySelectorAll('td.gates .badge')].map(b => b.className));"
    )
    if sorted(badges) != ["badge limit", "badge paused", "badge rate"]:
        raise SystemExit(f"dashboard: gate badges {badges}")


def check_gate_metrics(base, prod):
    """The pause and the limits set are gauges of /metrics, which promtool
    still accepts."""
    body = urllib.request.urlopen(base + "/metrics", timeout=5).read()
    r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"promtool check metrics: {r.stdout.decode()}{r.stderr.decode()}")
    lines = body.decode().splitlines()
    for want in (
        f'tenure_production_paused{{production="{prod}"}} 1',
        f'tenure_production_concurrency_limit{{production="{prod}"}} 2',
        f'tenure_production_rate_limit_per_second{{production="{prod}"}} 5',
        f'tenure_production_rate_limit_burst{{production="{prod}"}} 5',
    ):
        if want not in lines:
            raise SystemExit(f"/metrics lacks {want}")
    print("metrics: the gates are gauges, promtool check passes")


if __name__ == "__main__":
    main()
