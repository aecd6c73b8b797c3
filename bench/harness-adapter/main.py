"""tenure's adapter for the long-horizon runner of the independent benchmark
``hardbyte/postgresql-job-queue-benchmarking`` (its ``CONTRIBUTING_ADAPTERS.md``).

One long-running process: stdout is the JSONL telemetry (a ``descriptor``
record, then one record per metric every ``SAMPLE_EVERY_S`` seconds on
wall-clock boundaries), stderr is logs. It reads the runner's environment
(``DATABASE_URL``, ``SCENARIO``, ``PRODUCER_MODE``, ``PRODUCER_RATE``,
``PRODUCER_BATCH_MAX``, ``PRODUCER_BATCH_MS``, ``PRODUCER_PACING``,
``TARGET_DEPTH``, ``WORKER_COUNT``, ``JOB_PAYLOAD_BYTES``, ``JOB_WORK_MS``,
``SAMPLE_EVERY_S``, ``BENCH_INSTANCE_ID``), produces jobs with
``submit_many`` (on ``ENQUEUE <n>`` lines from stdin when the runner paces,
``PRODUCER_PACING=harness``; else on its own wall-clock credited loop, or
toward ``TARGET_DEPTH``) and drains them with ``tenure.Worker``
(``WORKER_COUNT`` slots, the core's worker loop). SIGTERM (or SIGINT) stops
it: the worker stops claiming, running jobs get 2 s, the leases still held
are released, stdout is flushed and the process exits 0.

Metrics (the contract's names): ``claim_p50_ms`` / ``claim_p95_ms`` /
``claim_p99_ms`` (submit to handler start, rolling 30 s, from a bounded
log-linear histogram of 3 significant figures), ``enqueue_rate`` and
``completion_rate`` (jobs in the tick divided by ``SAMPLE_EVERY_S``: the
ticks are wall-clock aligned, so the rates of all ticks times the window add
up to the totals) and ``queue_depth`` (jobs submitted and not yet started by
a handler, plus those released back: the available jobs, counted by this
process).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import deque
from datetime import datetime, timedelta, timezone
from typing import Optional

import tenure

SYSTEM = "tenure"
PRODUCTION = "bench"
LATENCY_WINDOW_S = 30
# The tables and indexes the runner's metrics daemon polls (adapter.json).
EVENT_TABLES = ["tenure.jobs", "tenure.payloads", "tenure.events", "tenure.facts",
                "tenure.nonces"]
SUB_BUCKETS = 2048  # per power of two: 1 part in 1024, 3 significant figures


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.strip() else default


def log(msg: str) -> None:
    print(f"[tenure-bench] {msg}", file=sys.stderr, flush=True)


class Histogram:
    """Counts of integer values (µs) in log-linear buckets: exact below
    ``SUB_BUCKETS``, then ``SUB_BUCKETS / 2`` buckets per power of two (a
    relative error under 0.1 %). Memory is bounded by the range of values,
    never by how many were recorded."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    @staticmethod
    def key(v: int) -> int:
        if v < SUB_BUCKETS:
            return max(v, 0)
        shift = v.bit_length() - SUB_BUCKETS.bit_length() + 1
        return shift * SUB_BUCKETS + (v >> shift)

    @staticmethod
    def value(k: int) -> float:
        shift, sub = divmod(k, SUB_BUCKETS)
        if shift == 0:
            return float(sub)
        return float((sub << shift) + (1 << (shift - 1)))  # the bucket's middle

    def record(self, v: int) -> None:
        k = self.key(v)
        self.counts[k] = self.counts.get(k, 0) + 1

    def merge(self, other: "Histogram") -> None:
        for k, n in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + n

    def percentiles(self, qs: list[float]) -> list[Optional[float]]:
        total = sum(self.counts.values())
        if total == 0:
            return [None for _ in qs]
        out: list[Optional[float]] = []
        keys = sorted(self.counts)
        for q in qs:
            rank = max(1, int(q * total + 0.999999))
            seen = 0
            for k in keys:
                seen += self.counts[k]
                if seen >= rank:
                    out.append(self.value(k))
                    break
        return out


class Meter:
    """The counters and latency histograms the sampler reads (one lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.enqueued = 0
        self.completed = 0
        self.started = 0
        self.released = 0
        self.failed = 0
        self.current = Histogram()  # latencies since the last tick

    def depth(self) -> int:
        with self.lock:
            return self.enqueued - self.started + self.released


def iso(t: float) -> str:
    d = datetime.fromtimestamp(t, tz=timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def emit(record: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class Adapter:
    def __init__(self) -> None:
        self.url = os.environ["DATABASE_URL"]
        self.scenario = os.environ.get("SCENARIO", "long_horizon")
        self.mode = os.environ.get("PRODUCER_MODE", "fixed")
        self.rate = env_int("PRODUCER_RATE", 800)
        self.batch_max = min(max(env_int("PRODUCER_BATCH_MAX", 128), 1), 1000)
        self.batch_ms = max(env_int("PRODUCER_BATCH_MS", 10), 1)
        self.pacing = os.environ.get("PRODUCER_PACING", "adapter")
        self.target_depth = env_int("TARGET_DEPTH", 1000)
        self.workers = max(env_int("WORKER_COUNT", 32), 1)
        self.payload_bytes = max(env_int("JOB_PAYLOAD_BYTES", 256), 0)
        self.work_s = env_int("JOB_WORK_MS", 1) / 1000.0
        self.every = max(env_int("SAMPLE_EVERY_S", 5), 1)
        self.instance = os.environ.get("BENCH_INSTANCE_ID", "0")
        self.meter = Meter()
        self.stop = threading.Event()
        # Job IDs unique across runs on one database: instance, start time, sequence.
        self.prefix = f"{self.instance}-{time.time_ns():x}-"
        self.seq = 0
        self.window: deque[Histogram] = deque(maxlen=max(LATENCY_WINDOW_S // self.every, 1))
        if self.scenario != "long_horizon":
            log(f"SCENARIO={self.scenario}: only long_horizon is implemented; running it")

    # -- producer -------------------------------------------------------------

    def payload(self) -> bytes:
        head = f"{time.time_ns()}:".encode()
        return head + b"x" * max(self.payload_bytes - len(head), 0)

    def submit(self, auth: tenure.Authority, n: int) -> None:
        """Submit ``n`` jobs in batches of at most ``batch_max``."""
        while n > 0 and not self.stop.is_set():
            k = min(n, self.batch_max)
            specs = []
            for _ in range(k):
                specs.append(tenure.JobSpec(f"{self.prefix}{self.seq}", self.payload()))
                self.seq += 1
            try:
                auth.submit_many(PRODUCTION, specs)
            except tenure.TenureError as e:
                log(f"submit_many refused ({e}); retrying in 100 ms")
                self.seq -= k  # the same IDs again: a replay is "existing"
                self.stop.wait(0.1)
                continue
            with self.meter.lock:
                self.meter.enqueued += k
            n -= k

    def produce_from_stdin(self, auth: tenure.Authority) -> None:
        """``ENQUEUE <n>`` lines from the runner's pacer; EOF ends production."""
        for line in sys.stdin:
            if self.stop.is_set():
                return
            line = line.strip()
            if not line.startswith("ENQUEUE "):
                if line:
                    log(f"ignored stdin line {line!r}")
                continue
            try:
                n = int(line.split()[1])
            except (IndexError, ValueError):
                log(f"ignored stdin line {line!r}")
                continue
            self.submit(auth, n)
        log("stdin closed: no more ENQUEUE tokens")

    def produce_fixed(self, auth: tenure.Authority) -> None:
        """Fixed rate credited on real elapsed time (the contract's pacing rule)."""
        period = self.batch_ms / 1000.0
        last = time.monotonic()
        credit = 0.0
        while not self.stop.is_set():
            self.stop.wait(max(period - (time.monotonic() - last), 0.0))
            now = time.monotonic()
            credit += self.rate * (now - last)
            last = now
            whole = int(credit)
            if whole >= 1:
                credit -= whole
                self.submit(auth, whole)

    def produce_depth(self, auth: tenure.Authority) -> None:
        """Keep the available jobs near ``TARGET_DEPTH``."""
        while not self.stop.is_set():
            short = self.target_depth - self.meter.depth()
            if short > 0:
                self.submit(auth, min(short, self.batch_max))
            else:
                self.stop.wait(self.batch_ms / 1000.0)

    def producer(self, auth: tenure.Authority) -> None:
        try:
            if self.mode == "depth-target":
                self.produce_depth(auth)
            elif self.pacing == "harness":
                self.produce_from_stdin(auth)
            else:
                self.produce_fixed(auth)
        except Exception as e:  # the producer ends; the workers drain on
            log(f"producer stopped: {e!r}")

    # -- consumer -------------------------------------------------------------

    def handle(self, job: tenure.Job) -> tenure.Complete:
        started = time.time_ns()
        head = job.payload.split(b":", 1)[0]
        latency_us = max((started - int(head)) // 1000, 0) if head.isdigit() else 0
        with self.meter.lock:
            self.meter.started += 1
            self.meter.current.record(latency_us)
        if self.work_s > 0:
            time.sleep(self.work_s)
        return tenure.Complete({})

    def report(self, r: tenure.Report) -> None:
        with self.meter.lock:
            if r.result == "completed":
                self.meter.completed += 1
            elif r.result == "released":
                self.meter.released += 1
            else:  # failed or lost: the job is back for another attempt
                self.meter.failed += 1
                if r.state == "requested":
                    self.meter.released += 1

    # -- sampler --------------------------------------------------------------

    def sample(self, t: float, prev: tuple[int, int]) -> tuple[int, int]:
        with self.meter.lock:
            enq, done = self.meter.enqueued, self.meter.completed
            hist, self.meter.current = self.meter.current, Histogram()
            depth = self.meter.enqueued - self.meter.started + self.meter.released
        self.window.append(hist)
        merged = Histogram()
        for h in self.window:
            merged.merge(h)
        p50, p95, p99 = merged.percentiles([0.50, 0.95, 0.99])
        stamp = iso(t)

        def rec(metric: str, value: Optional[float], window: int) -> None:
            emit({"t": stamp, "system": SYSTEM, "kind": "adapter",
                  "subject_kind": "adapter", "subject": "", "metric": metric,
                  "value": value, "window_s": window})

        for name, v in (("claim_p50_ms", p50), ("claim_p95_ms", p95), ("claim_p99_ms", p99)):
            rec(name, None if v is None else round(v / 1000.0, 3), LATENCY_WINDOW_S)
        rec("enqueue_rate", (enq - prev[0]) / self.every, self.every)
        rec("completion_rate", (done - prev[1]) / self.every, self.every)
        rec("queue_depth", float(depth), 0)
        return enq, done

    def sampler(self) -> None:
        """Ticks on wall-clock multiples of ``SAMPLE_EVERY_S``."""
        prev = (0, 0)
        while True:
            now = time.time()
            tick = (int(now) // self.every + 1) * self.every
            if self.stop.wait(tick - now):
                return
            prev = self.sample(float(tick), prev)

    # -- the process ----------------------------------------------------------

    def run(self) -> int:
        started_at = iso(time.time())
        auth = tenure.Authority(self.url)
        auth.create_production(PRODUCTION)
        emit({"kind": "descriptor", "system": SYSTEM, "event_tables": EVENT_TABLES,
              "extensions": [], "version": tenure.__version__,
              "schema_version": tenure.__version__,
              "db_name": self.url.rsplit("/", 1)[-1].split("?", 1)[0],
              "started_at": started_at})
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop.set())
        worker = tenure.Worker(auth, PRODUCTION, f"bench-{self.instance}", self.handle,
                               ttl=timedelta(seconds=30), slots=self.workers,
                               wait_timeout=timedelta(seconds=1),
                               grace=timedelta(seconds=2), report=self.report)
        threading.Thread(target=self.producer, args=(auth,), name="producer",
                         daemon=True).start()
        sampler = threading.Thread(target=self.sampler, name="sampler", daemon=True)
        sampler.start()
        log(f"running: {self.workers} slots, mode {self.mode}, pacing {self.pacing}")
        while not self.stop.wait(0.1):  # the main thread runs the signal handlers
            pass
        worker.stop()
        worker.join(timedelta(seconds=3))
        sampler.join(1.0)
        with self.meter.lock:
            m = self.meter
            log(f"stopped: enqueued {m.enqueued}, started {m.started}, "
                f"completed {m.completed}, released {m.released}, failed {m.failed}")
        sys.stdout.flush()
        return 0


if __name__ == "__main__":
    sys.exit(Adapter().run())
