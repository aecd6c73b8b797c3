"""The harness adapter (``main.py``) driven through its contract: the
runner's environment and ``ENQUEUE <n>`` lines in, the JSONL descriptor and
wall-clock aligned samples out, SIGTERM ends it within 5 s.

The process test needs a PostgreSQL server: the one ``cargo xtask test``
starts (``TENURE_TEST_BACKEND=postgres``, ``TENURE_TEST_PG_URL``,
``TENURE_TEST_CREATEDB``, ``PGHOST`` / ``PGPORT`` / ``PGUSER``); without it
that test is skipped and says so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import tenure

HERE = Path(__file__).resolve().parent
MAIN = HERE / "main.py"
METRICS = {"claim_p50_ms", "claim_p95_ms", "claim_p99_ms", "enqueue_rate",
           "completion_rate", "queue_depth"}
JOBS = 300


def load_main() -> Any:
    spec = importlib.util.spec_from_file_location("tenure_harness_adapter", MAIN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_histogram_percentiles_have_three_significant_figures() -> None:
    """Exact below 2048 µs, within 0.1 % above; memory grows with the range
    of values, not their number."""
    m = load_main()
    h = m.Histogram()
    for v in range(1, 1001):
        h.record(v)
    assert h.percentiles([0.5, 0.95, 0.99]) == [500.0, 950.0, 990.0]
    big = m.Histogram()
    for _ in range(100_000):
        big.record(123_456_789)
    (p,) = big.percentiles([0.99])
    assert p is not None and abs(p - 123_456_789) / 123_456_789 < 0.001
    assert len(big.counts) == 1
    assert m.Histogram().percentiles([0.5]) == [None]


def database() -> str:
    """A new empty database on the test server; its URL."""
    if os.environ.get("TENURE_TEST_BACKEND") != "postgres":
        pytest.skip("the adapter runs on PostgreSQL: set by `cargo xtask test`")
    name = f"harness_{secrets.token_hex(4)}"
    subprocess.run([os.environ["TENURE_TEST_CREATEDB"], name], check=True)
    base = os.environ["TENURE_TEST_PG_URL"].rsplit("/", 1)[0]
    return f"{base}/{name}"


def reader(stream: Any, out: "queue.Queue[str | None]") -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def test_adapter_follows_the_runner_contract() -> None:
    url = database()
    every = 1
    env = {**os.environ, "DATABASE_URL": url, "SCENARIO": "long_horizon",
           "PRODUCER_MODE": "fixed", "PRODUCER_PACING": "harness",
           "PRODUCER_BATCH_MAX": "64", "WORKER_COUNT": "4", "JOB_PAYLOAD_BYTES": "64",
           "JOB_WORK_MS": "1", "SAMPLE_EVERY_S": str(every)}
    proc = subprocess.Popen([sys.executable, str(MAIN)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=reader, args=(proc.stdout, lines), daemon=True).start()
    try:
        first = lines.get(timeout=30)
        assert first is not None
        desc = json.loads(first)
        manifest = json.loads((HERE / "adapter.json").read_text())
        assert desc["kind"] == "descriptor" and desc["system"] == manifest["system"]
        assert set(desc["event_tables"]) >= set(manifest["event_tables"])
        assert set(desc["extensions"]) >= set(manifest["extensions"])
        assert desc["version"] == tenure.__version__
        assert desc["started_at"].endswith("Z")
        for key in ("schema_version", "db_name"):
            assert isinstance(desc[key], str) and desc[key]

        # The runner's pacer: tokens of at most PRODUCER_BATCH_MAX, 300 jobs.
        for n in [64, 64, 64, 64, 44]:
            proc.stdin.write(f"ENQUEUE {n}\n")
            proc.stdin.flush()
            time.sleep(0.05)

        ticks: dict[str, dict[str, dict[str, Any]]] = {}
        completed = enqueued = 0.0
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            assert line is not None, "the adapter exited early"
            rec = json.loads(line)
            assert (rec["kind"], rec["subject_kind"], rec["subject"], rec["system"]) == (
                "adapter", "adapter", "", "tenure")
            assert rec["metric"] in METRICS
            tick = ticks.setdefault(rec["t"], {})
            assert rec["metric"] not in tick  # one record per metric per tick
            tick[rec["metric"]] = rec
            if rec["metric"] == "enqueue_rate":
                enqueued += rec["value"] * rec["window_s"]
            if rec["metric"] == "completion_rate":
                completed += rec["value"] * rec["window_s"]
            # Drained, and at least two whole ticks seen (a fast drain fits
            # in the first: the adapter samples on, idle, every second).
            if (len(tick) == len(METRICS) and round(completed) == JOBS
                    and tick["queue_depth"]["value"] == 0 and len(ticks) >= 2):
                break
        else:
            raise AssertionError(f"not drained: {enqueued} enqueued, {completed} completed")

        # Every tick is whole: all six metrics, on a wall-clock boundary.
        assert len(ticks) >= 2
        for t, tick in ticks.items():
            assert set(tick) == METRICS, t
            assert t.endswith(".000Z") and int(t[17:19]) % every == 0, t
            for m in ("claim_p50_ms", "claim_p95_ms", "claim_p99_ms"):
                assert tick[m]["window_s"] == 30
            assert tick["enqueue_rate"]["window_s"] == tick["completion_rate"]["window_s"] == every
            assert tick["queue_depth"]["window_s"] == 0 and tick["queue_depth"]["value"] >= 0
            p = [tick[m]["value"] for m in ("claim_p50_ms", "claim_p95_ms", "claim_p99_ms")]
            if p[0] is not None:
                assert 0 <= p[0] <= p[1] <= p[2]
        assert sorted(ticks) == list(ticks)  # in time order
        # The rates add up: what was enqueued is what completed.
        assert round(enqueued) == round(completed) == JOBS

        # The store agrees: every job completed once, none left claimable.
        auth = tenure.Authority(url)
        views = auth.jobs("bench", limit=1000)
        assert len(views) == JOBS and {v.state for v in views} == {"completed"}
        auth.close()

        # SIGTERM with stdin still open: exit 0 within 5 s.
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=10)
        assert time.monotonic() - sent < 5.0
        assert rc == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
