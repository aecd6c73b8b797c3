#!/usr/bin/env python3
"""Peer row of ``cargo xtask bench --backend postgres``: tenure's Python
binding against procrastinate, the same workload on the same PostgreSQL
server, each run in its own fresh database.

    pg_peer.py bench --url MAINTENANCE_URL --jobs N --workers 1,4 --runs R
    pg_peer.py enqueue --url MAINTENANCE_URL --jobs N --pairs P
    pg_peer.py js-peers --url MAINTENANCE_URL --node-dir DIR --pg-bin DIR ... (below)

``bench``, the drain, per run and per system:

1. Enqueue N no-op jobs (untimed here: the bulk submission is ``enqueue``'s
   measurement): tenure ``Authority.submit_many`` in chunks of 1000 (empty
   payload), procrastinate ``Task.batch_defer_async`` in chunks of 1000
   (empty task arguments ``{}``).
2. Start W worker processes; each opens its connection(s), then waits for a
   common start signal. The drain is timed from the signal until the last
   worker has found the queue empty; the rate is ``N / drain_s``.
   Each worker handles one job at a time:

   - tenure: ``claim_next(production, holder, ttl=60 s)`` (a lease with a
     secret, recorded with its event) then ``lease.complete()`` with no
     facts; a ``Busy`` answer is retried (and counted); ``NoJobAvailable``
     ends the worker.
   - tenure-batch (tenure's batched calls): ``claim_next_many(production,
     holder, ttl=60 s, 16)`` (16 leases, each with its own claim, secret and
     event, in one operation) then ``complete_many`` of those leases with
     no facts (one operation; every outcome must be ``None``); a ``Busy``
     claim is retried (and counted), a ``Busy`` completion retried; an
     empty claim ends the worker. Same seed and
     end-state check as tenure.
   - procrastinate: ``App.run_worker_async(concurrency=1, wait=False,
     listen_notify=False, delete_jobs="never")`` over an ``async def`` no-op
     task: per job it calls ``procrastinate_fetch_job`` (marks the job
     ``doing``, records an event), runs the task on the event loop, then
     ``procrastinate_finish_job`` (marks it ``succeeded``, records an event,
     keeps the row). The worker also registers itself in
     ``procrastinate_workers`` at start and unregisters at the end (inside
     the timed window, once per process); with ``wait=False`` it stops at
     the first empty fetch. ``listen_notify`` is off because a worker that
     never waits has no use for LISTEN.

3. Check the end state: every job completed (tenure also runs
   ``Authority.check()``), the worker counts add up to N.

Each run prints one ``BENCH {json}`` line (``"workload":"pg-peer"``); after
all runs one ``"workload":"pg-peer-summary"`` line per W gives the median
drain rates and the ratios tenure / procrastinate and tenure-batch /
procrastinate.

``enqueue``, the bulk submission: P pairs. A pair enqueues N no-op jobs
with each system, exactly as step 1 above, each into a fresh database of
its own (created, its schema applied and, for tenure, the production
created before any clock starts; both dropped after the pair), chunk by
chunk in turn: tenure's chunk then procrastinate's in even chunks, the
other way round in odd ones, each chunk's call timed alone, so both
systems see the machine's load of the same moments. A system's rate in
the pair is N / the sum of its chunks' times (building a chunk's
arguments is inside its time, as a caller pays it). Each pair prints a
``"workload":"pg-enqueue"`` line with both rates and their ratio; the
``"workload":"pg-enqueue-summary"`` line gives the median of the per-pair
ratios (the figure), their lowest and highest (the spread), and each
system's median rate.

``js-peers``, tenure beside graphile-worker and pg-boss (Node, ``bench/js-peers``;
``peers.mjs`` documents exactly what each of them does):

    pg_peer.py js-peers --url MAINTENANCE_URL --node-dir DIR --pg-bin DIR
        --jobs N --enqueue-jobs E --wake-samples S --rounds R

R rounds; a round runs every workload below once per system, each run in
a fresh database of its own (dropped after it), the systems in the order
tenure, graphile-worker, pg-boss (then the floor rows' two, below) in even
rounds and the other way round in odd ones, so a drifting machine affects
them all. tenure runs through this
Python (the release wheel), its workers C threads of one process sharing
one ``Authority``:

- ``drain`` with C = 1 and C = 4: N jobs enqueued (untimed, ``submit_many``
  in chunks of 1000), then each thread ``claim_next(ttl=60 s)`` +
  ``lease.complete()`` until ``NoJobAvailable`` (``Busy`` retried), timed
  from the common start until the last thread ends;
- ``batch``, C = 4: the same with ``claim_next_many(..., 16)`` +
  ``complete_many``;
- ``enqueue``: E jobs by ``submit_many`` in chunks of 1000, timed from the
  first chunk to the last;
- ``wake``: one thread waits in ``claim_next_wait`` (and completes what it
  gets); S times, after a 20 ms pause, the main thread submits one job; the
  latency runs from just before ``submit`` until ``claim_next_wait``
  returns the lease. pg-boss polls and has no wake-up, so it has no wake row.

The **floor** rows, in the same rounds (``drain`` with C = 1 and C = 4,
each in a fresh database): the same drain as statements run by ``pgbench``
(C clients, one job a transaction pair, no client library between them),
so the server's own cost per job shows beside the systems' rates:

- ``sql-tenure``: ``bench/pg_floor/tenure.sql`` over a store tenure created
  and seeded (``submit_many``): claim-next and complete as one function
  call each, writing exactly the rows tenure writes for a job (the job row,
  its two events, the four provenance facts, a mark log row per
  transaction, the count deltas of the schema's trigger) after the same
  locks, clock samples and lease checks, so ``tenure check`` passes on the
  store it leaves;
- ``sql-graphile``: graphile-worker's own two statements for one job
  (``bench/pg_floor/graphile.pgbench``) over jobs ``peers.mjs graphile
  seed`` enqueued.

Each seeds ``FLOOR_EXTRA`` jobs more than it drains (none is ever claimed
short), and checks the drained count afterwards.

Every run checks its end state and prints a ``"workload":"js-peer"`` line
(system, workload, workers, round; ``jobs_per_s``, or ``p50_ms`` and
``p95_ms`` for ``wake``; and for every run but ``wake``
``server_us_per_job``: the CPU time every process of the server used over
the timed window, connections and background processes alike, divided by
the jobs, read from ``/proc`` when the server runs on this machine, by
``_server_cpu_s`` here and the same reading in ``peers.mjs``); a last
``"workload":"js-peer-versions"`` line names tenure's version.
``crates/xtask/src/pg_peer.rs`` sums them up: each system's median figure
and the median of the per-round ratios tenure / peer.

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

PRODUCTION = "bench"
QUEUE = "bench"
CHUNK = 1000
BATCH = 16


def _db_url(maintenance_url: str, name: str) -> str:
    base, _, _ = maintenance_url.rpartition("/")
    return f"{base}/{name}"


def _fresh_database(maintenance_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(maintenance_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return _db_url(maintenance_url, name)


def _drop_database(maintenance_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(maintenance_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _postmaster(url: str) -> int | None:
    """The PID of the server process of ``url`` (the parent of a backend),
    when that server runs on this machine; else None."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
    if row is None:
        return None
    try:
        with open(f"/proc/{row[0]}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _server_cpu_s(postmaster: int | None) -> float | None:
    """The CPU time (user and system, seconds) the server ``postmaster``
    and all its processes have used so far: its own, that of its children
    it has reaped (ended connections), and that of those alive (or ended,
    not yet reaped). The difference over a timed window is the server's
    CPU for the window's work (background processes included, as they work
    for it too). A child reaped while its siblings are read would be
    counted twice or not at all: the read is taken again until the reaped
    time stayed the same across it."""
    if postmaster is None:
        return None

    def fields(pid: int | str) -> list[str]:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()

    tick = os.sysconf("SC_CLK_TCK")
    for _ in range(100):
        try:
            own = fields(postmaster)
        except OSError:
            return None
        children = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == postmaster:
                continue
            try:
                f = fields(entry)
            except OSError:
                continue  # not a child, or reaped: then the check below fails
            if int(f[1]) == postmaster:
                children += int(f[11]) + int(f[12])  # utime stime
        again = fields(postmaster)
        if again[13:15] == own[13:15]:  # cutime cstime
            return (sum(int(x) for x in again[11:15]) + children) / tick
    return None


def _per_job_us(before: float | None, after: float | None, jobs: int) -> dict[str, float]:
    """``server_us_per_job`` of a window whose server CPU went from
    ``before`` to ``after`` seconds (nothing when it was not read)."""
    if before is None or after is None or jobs <= 0:
        return {}
    return {"server_us_per_job": (after - before) * 1e6 / jobs}


# ---------------------------------------------------------------- tenure


def tenure_chunk(a, first: int, end: int) -> None:  # type: ignore[no-untyped-def]
    """Enqueue the jobs ``first`` to ``end`` (exclusive) in one call."""
    import tenure

    a.submit_many(PRODUCTION, [tenure.JobSpec(f"job-{j:08}") for j in range(first, end)])


def tenure_seed(url: str, jobs: int) -> None:
    """Enqueue ``jobs`` jobs in chunks of ``CHUNK``."""
    import tenure

    a = tenure.Authority(url)
    a.create_production(PRODUCTION)
    for i in range(0, jobs, CHUNK):
        tenure_chunk(a, i, min(i + CHUNK, jobs))


def _tenure_drain(url: str, step: Callable[..., int]) -> dict[str, object]:
    """A tenure worker: ``step(authority, holder, ttl)`` handles some jobs
    and returns how many (0: nothing claimable, the worker ends); ``Busy``
    from it is retried and counted."""
    import tenure

    a = tenure.Authority(url)
    holder = f"bench-{os.getpid()}"
    ttl = datetime.timedelta(seconds=60)
    _ready()
    start = time.monotonic()
    done = busy = 0
    while True:
        try:
            n = step(a, holder, ttl)
        except tenure.Busy:
            busy += 1
            continue
        if n == 0:
            break
        done += n
    return {"done": done, "busy": busy, "start": start, "end": time.monotonic()}


def tenure_work(url: str) -> dict[str, object]:
    import tenure

    def one(a: tenure.Authority, holder: str, ttl: datetime.timedelta) -> int:
        try:
            lease = a.claim_next(PRODUCTION, holder, ttl)
        except tenure.NoJobAvailable:
            return 0
        lease.complete()
        return 1

    return _tenure_drain(url, one)


def tenure_batch_work(url: str) -> dict[str, object]:
    import tenure

    def batch(a: tenure.Authority, holder: str, ttl: datetime.timedelta) -> int:
        leases = a.claim_next_many(PRODUCTION, holder, ttl, BATCH)
        if not leases:
            return 0
        while True:  # the leases are held: retry only the completion
            try:
                outcomes = a.complete_many(leases)
                break
            except tenure.Busy:
                continue
        refused = [o for o in outcomes if o is not None]
        if refused:
            raise SystemExit(f"tenure-batch: completions refused: {refused!r}")
        return len(leases)

    return _tenure_drain(url, batch)


def tenure_verify(url: str, jobs: int) -> None:
    import tenure

    a = tenure.Authority(url)
    queued = a.jobs(PRODUCTION, state="requested", limit=10)
    if queued:
        raise SystemExit(f"tenure: {len(queued)}+ jobs still requested")
    completed = 0
    after = None
    while True:
        page = a.jobs(PRODUCTION, state="completed", after=after, limit=1000)
        if not page:
            break
        completed += len(page)
        after = page[-1].job
    if completed != jobs:
        raise SystemExit(f"tenure: {completed} of {jobs} jobs completed")
    if not a.check().ok:
        raise SystemExit("tenure: check() failed")


# --------------------------------------------------------- procrastinate

_processed = 0


class _QuietMainModule(logging.Filter):
    """Drop procrastinate's warning that the app lives in ``__main__``: the
    task has an explicit name, so workers find it whatever the module."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "instantiated in the main Python module" not in record.getMessage()


def _procrastinate_app(url: str):  # type: ignore[no-untyped-def]
    import procrastinate

    logging.getLogger("procrastinate.blueprints").addFilter(_QuietMainModule())
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop", queue=QUEUE)
    async def noop() -> None:
        global _processed
        _processed += 1

    return app, noop


async def procrastinate_chunk(noop, first: int, end: int) -> None:  # type: ignore[no-untyped-def]
    """As ``tenure_chunk``."""
    await noop.batch_defer_async(*({} for _ in range(first, end)))


def procrastinate_seed(url: str, jobs: int) -> None:
    """As ``tenure_seed``."""
    app, noop = _procrastinate_app(url)

    async def go() -> None:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            for i in range(0, jobs, CHUNK):
                await procrastinate_chunk(noop, i, min(i + CHUNK, jobs))

    asyncio.run(go())


def procrastinate_work(url: str) -> dict[str, object]:
    app, _ = _procrastinate_app(url)
    result: dict[str, object] = {}

    async def go() -> None:
        async with app.open_async():
            # Open the pool's connection before the start signal, as tenure does.
            await app.check_connection_async()
            _ready()
            result["start"] = time.monotonic()
            await app.run_worker_async(
                queues=[QUEUE],
                concurrency=1,
                wait=False,
                listen_notify=False,
                delete_jobs="never",
                install_signal_handlers=False,
            )
            result["end"] = time.monotonic()

    asyncio.run(go())
    return {"done": _processed, "busy": 0, **result}


def procrastinate_verify(url: str, jobs: int) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = dict(
            conn.execute(
                "SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY status"
            ).fetchall()
        )
    if rows != {"succeeded": jobs}:
        raise SystemExit(f"procrastinate: job states {rows}, want {jobs} succeeded")


SYSTEMS = {
    "tenure": (tenure_seed, tenure_work, tenure_verify),
    "tenure-batch": (tenure_seed, tenure_batch_work, tenure_verify),
    "procrastinate": (procrastinate_seed, procrastinate_work, procrastinate_verify),
}


# ----------------------------------------------------------------- driver


def _ready() -> None:
    """Tell the driver this worker is connected, then wait for the start."""
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        raise SystemExit("worker: no start signal")


def one_run(system: str, maintenance_url: str, jobs: int, workers: int, run: int) -> dict:
    seed, _, verify = SYSTEMS[system]
    name = system.replace("-", "_")
    url = _fresh_database(maintenance_url, f"peer_{name}_w{workers}_r{run}")
    seed(url, jobs)
    kids = [
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "worker", system, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    for k in kids:
        assert k.stdout is not None
        line = k.stdout.readline().strip()
        if line != "READY":
            raise SystemExit(f"{system} worker did not start: {line!r}")
    for k in kids:
        assert k.stdin is not None
        k.stdin.write("GO\n")
        k.stdin.flush()
    results = []
    for k in kids:
        out, _ = k.communicate()
        if k.returncode != 0:
            raise SystemExit(f"{system} worker failed ({k.returncode})")
        line = next((x for x in out.splitlines() if x.startswith("DONE ")), None)
        if line is None:
            raise SystemExit(f"{system} worker printed no result")
        results.append(json.loads(line[5:]))
    done = sum(int(r["done"]) for r in results)
    if done != jobs:
        raise SystemExit(f"{system}: workers handled {done} of {jobs} jobs")
    verify(url, jobs)
    drain_s = max(r["end"] for r in results) - min(r["start"] for r in results)
    row = {
        "workload": "pg-peer",
        "system": system,
        "workers": workers,
        "run": run,
        "jobs": jobs,
        "per_worker": [int(r["done"]) for r in results],
        "busy": sum(int(r["busy"]) for r in results),
        "drain_s": round(drain_s, 3),
        "jobs_per_s": round(jobs / drain_s, 1),
    }
    print("BENCH " + json.dumps(row, separators=(",", ":")), flush=True)
    return row


def enqueue_pair(maintenance_url: str, jobs: int, pair: int) -> dict[str, float]:
    """One pair of the bulk submission (see the module docs): the seconds
    each system's chunks took."""
    import tenure

    names = {system: f"peer_enqueue_{system}_p{pair}" for system in ("tenure", "procrastinate")}
    urls = {system: _fresh_database(maintenance_url, name) for system, name in names.items()}
    a = tenure.Authority(urls["tenure"])
    a.create_production(PRODUCTION)
    app, noop = _procrastinate_app(urls["procrastinate"])
    took = {"tenure": 0.0, "procrastinate": 0.0}

    async def go() -> None:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            for c, i in enumerate(range(0, jobs, CHUNK)):
                end = min(i + CHUNK, jobs)
                for system in ("tenure", "procrastinate")[:: 1 if c % 2 == 0 else -1]:
                    t0 = time.perf_counter()
                    if system == "tenure":
                        tenure_chunk(a, i, end)
                    else:
                        await procrastinate_chunk(noop, i, end)
                    took[system] += time.perf_counter() - t0

    asyncio.run(go())
    del a
    for name in names.values():
        _drop_database(maintenance_url, name)
    return took


def enqueue_pairs(maintenance_url: str, jobs: int, pairs: int) -> None:
    """The bulk submission, tenure against procrastinate (see the module
    docs): ``pairs`` pairs, one line each, then the summary line."""
    ratios: list[float] = []
    rates: dict[str, list[float]] = {"tenure": [], "procrastinate": []}
    for pair in range(pairs):
        took = enqueue_pair(maintenance_url, jobs, pair)
        rate = {system: jobs / max(t, 1e-6) for system, t in took.items()}
        for system, r in rate.items():
            rates[system].append(r)
        ratios.append(rate["tenure"] / rate["procrastinate"])
        row = {
            "workload": "pg-enqueue",
            "pair": pair,
            "jobs": jobs,
            "chunk": CHUNK,
            "tenure_jobs_per_s": round(rate["tenure"], 1),
            "procrastinate_jobs_per_s": round(rate["procrastinate"], 1),
            "ratio": round(ratios[-1], 3),
        }
        print("BENCH " + json.dumps(row, separators=(",", ":")), flush=True)
    vers = _versions()
    summary = {
        "workload": "pg-enqueue-summary",
        "jobs": jobs,
        "chunk": CHUNK,
        "pairs": pairs,
        "ratio": round(statistics.median(ratios), 3),
        "ratio_min": round(min(ratios), 3),
        "ratio_max": round(max(ratios), 3),
        "tenure_jobs_per_s": round(statistics.median(rates["tenure"]), 1),
        "procrastinate_jobs_per_s": round(statistics.median(rates["procrastinate"]), 1),
        "tenure_version": vers["tenure"],
        "procrastinate_version": vers["procrastinate"],
        "psycopg_version": vers["psycopg"],
    }
    print("BENCH " + json.dumps(summary, separators=(",", ":")), flush=True)


# ------------------------------------------- graphile-worker and pg-boss

WAKE_PAUSE_S = 0.020
JS_SYSTEMS = ("tenure", "graphile", "pgboss")
#: The floor rows' systems (see the module docs): statements run by pgbench.
FLOOR_SYSTEMS = ("sql-tenure", "sql-graphile")
#: Every system of a round, in its order in even rounds.
ALL_SYSTEMS = JS_SYSTEMS + FLOOR_SYSTEMS
#: Jobs a floor run seeds beyond the ones it drains, so that no claim of
#: the last transactions finds the queue empty (pgbench ends a client whose
#: ``\gset`` gets no row).
FLOOR_EXTRA = 100
#: workload name, worker count, and the systems that run it.
JS_WORKLOADS = (
    ("drain", 1, ALL_SYSTEMS),
    ("drain", 4, ALL_SYSTEMS),
    ("batch", 4, JS_SYSTEMS),
    ("enqueue", 1, JS_SYSTEMS),
    ("wake", 1, ("tenure", "graphile")),
)


def _threads_drain(url: str, jobs: int, workers: int, batch: bool) -> dict[str, object]:
    """tenure's drain by ``workers`` threads of this process (see the
    module docs); returns the rate."""
    import threading

    import tenure

    tenure_seed(url, jobs)
    a = tenure.Authority(url)
    ttl = datetime.timedelta(seconds=60)
    go = threading.Barrier(workers + 1)
    done = [0] * workers
    ends = [0.0] * workers
    errors: list[BaseException] = []

    def one(i: int) -> None:
        holder = f"bench-{i}"
        go.wait()
        try:
            while True:
                try:
                    if batch:
                        leases = a.claim_next_many(PRODUCTION, holder, ttl, BATCH)
                        if not leases:
                            break
                        while True:
                            try:
                                outcomes = a.complete_many(leases)
                                break
                            except tenure.Busy:
                                continue
                        if any(o is not None for o in outcomes):
                            raise SystemExit(f"tenure: completions refused: {outcomes!r}")
                        done[i] += len(leases)
                    else:
                        try:
                            lease = a.claim_next(PRODUCTION, holder, ttl)
                        except tenure.NoJobAvailable:
                            break
                        lease.complete()
                        done[i] += 1
                except tenure.Busy:
                    continue
        except BaseException as e:  # reported by the main thread
            errors.append(e)
        ends[i] = time.monotonic()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    server = _postmaster(url)
    cpu0 = _server_cpu_s(server)
    go.wait()
    start = time.monotonic()
    for t in threads:
        t.join()
    cpu1 = _server_cpu_s(server)
    if errors:
        raise SystemExit(f"tenure worker failed: {errors[0]!r}")
    if sum(done) != jobs:
        raise SystemExit(f"tenure: threads handled {sum(done)} of {jobs} jobs")
    tenure_verify(url, jobs)
    s = max(ends) - start
    return {"jobs_per_s": jobs / s, "seconds": s, **_per_job_us(cpu0, cpu1, jobs)}


def _tenure_enqueue(url: str, jobs: int) -> dict[str, object]:
    import tenure

    a = tenure.Authority(url)
    a.create_production(PRODUCTION)
    server = _postmaster(url)
    cpu0 = _server_cpu_s(server)
    t0 = time.perf_counter()
    for i in range(0, jobs, CHUNK):
        tenure_chunk(a, i, min(i + CHUNK, jobs))
    s = time.perf_counter() - t0
    cpu1 = _server_cpu_s(server)
    if len(a.jobs(PRODUCTION, state="requested", limit=1)) != 1:
        raise SystemExit("tenure: no job requested after the enqueue")
    return {"jobs_per_s": jobs / s, "seconds": s, **_per_job_us(cpu0, cpu1, jobs)}


def _tenure_wake(url: str, samples: int) -> dict[str, object]:
    """Latency from ``submit`` to ``claim_next_wait`` returning, one idle
    waiting thread (see the module docs)."""
    import threading

    import tenure

    a = tenure.Authority(url)
    a.create_production(PRODUCTION)
    ttl = datetime.timedelta(seconds=60)
    timeout = datetime.timedelta(seconds=30)
    claimed: list[float] = []
    got = threading.Semaphore(0)
    errors: list[BaseException] = []

    def waiter() -> None:
        try:
            for _ in range(samples):
                lease = a.claim_next_wait(PRODUCTION, "bench-wake", ttl, timeout)
                claimed.append(time.perf_counter())
                got.release()
                lease.complete()
        except BaseException as e:  # reported by the main thread
            errors.append(e)
            got.release()

    t = threading.Thread(target=waiter)
    t.start()
    lat = []
    for i in range(samples):
        time.sleep(WAKE_PAUSE_S)
        t0 = time.perf_counter()
        a.submit(PRODUCTION, f"wake-{i:05}", b"")
        got.acquire()
        if errors:
            raise SystemExit(f"tenure waiter failed: {errors[0]!r}")
        lat.append((claimed[-1] - t0) * 1000.0)
    t.join()
    lat.sort()
    return {"p50_ms": _quantile(lat, 0.5), "p95_ms": _quantile(lat, 0.95), "samples": samples}


def _quantile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile of ascending ``sorted_values`` (nearest rank, as
    ``peers.mjs`` computes it)."""
    import math

    i = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[i]


def _floor_run(args: argparse.Namespace, system: str, url: str, jobs: int, workers: int) -> dict:
    """One floor run (see the module docs): seed, then pgbench drains
    ``jobs`` with ``workers`` clients; returns the rate and the version."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pg_floor")
    per = -(-jobs // workers)
    drained = per * workers
    if system == "sql-tenure":
        from importlib.metadata import version

        tenure_seed(url, drained + FLOOR_EXTRA)
        subprocess.run(
            [os.path.join(args.pg_bin, "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-X"]
            + ["-f", os.path.join(here, "tenure.sql"), url],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        script, define, ver = "tenure.pgbench", f"production={PRODUCTION}", version("tenure")
    else:
        seeded = _node_run(args.node_dir, "graphile", "seed", url, drained + FLOOR_EXTRA, 1)
        script, define = "graphile.pgbench", f"tasks={{{seeded['task_id']}}}"
        ver = str(seeded["version"])
    server = _postmaster(url)
    cpu0 = _server_cpu_s(server)
    out = subprocess.run(
        [os.path.join(args.pg_bin, "pgbench"), "-n", "-M", "prepared"]
        + ["-c", str(workers), "-j", str(workers), "-t", str(per)]
        + ["-D", define, "-f", os.path.join(here, script), url],
        capture_output=True,
        text=True,
        check=False,
    )
    cpu1 = _server_cpu_s(server)
    tps = next(
        (float(x.split()[2]) for x in out.stdout.splitlines() if x.startswith("tps = ")), None
    )
    if out.returncode != 0 or tps is None or "number of failed transactions: 0 " not in out.stdout:
        raise SystemExit(f"pgbench {script} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if system == "sql-tenure":
            q = "SELECT count(*) FROM tenure.jobs WHERE state = 'completed'"
            want = drained
        else:
            q = "SELECT count(*) FROM graphile_worker._private_jobs"
            want = FLOOR_EXTRA
        row = conn.execute(q).fetchone()
        if row is None or row[0] != want:
            raise SystemExit(f"{system}: {row} after the floor drain, expected {want}")
    return {"jobs_per_s": tps, "version": ver, **_per_job_us(cpu0, cpu1, drained)}


def _node_run(
    node_dir: str, system: str, workload: str, url: str, n: int, workers: int
) -> dict[str, object]:
    server = _postmaster(url)
    env = dict(os.environ)
    if server is not None:
        env["BENCH_PG_POSTMASTER"] = str(server)
    out = subprocess.run(
        ["node", os.path.join(node_dir, "peers.mjs"), system, workload, url, str(n), str(workers)],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        env=env,
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    if out.returncode != 0 or line is None:
        raise SystemExit(f"peers.mjs {system} {workload} failed ({out.returncode}):\n{out.stdout}")
    result: dict[str, object] = json.loads(line[len("RESULT ") :])
    window = result.pop("server_cpu_s", None)
    if isinstance(window, (int, float)) and n > 0:
        result["server_us_per_job"] = window * 1e6 / n
    return result


def js_run(
    args: argparse.Namespace, system: str, workload: str, workers: int, rnd: int
) -> dict[str, object]:
    """One run of one system on a fresh database; prints and returns its row."""
    n = {"enqueue": args.enqueue_jobs, "wake": args.wake_samples}.get(workload, args.jobs)
    name = f"js_{system}_{workload}_w{workers}_r{rnd}"
    url = _fresh_database(args.url, name)
    try:
        if system in FLOOR_SYSTEMS:
            r = _floor_run(args, system, url, n, workers)
        elif system == "tenure":
            if workload == "enqueue":
                r = _tenure_enqueue(url, n)
            elif workload == "wake":
                r = _tenure_wake(url, n)
            else:
                r = _threads_drain(url, n, workers, batch=workload == "batch")
        else:
            r = _node_run(args.node_dir, system, workload, url, n, workers)
    finally:
        _drop_database(args.url, name)
    row = {
        "workload": "js-peer",
        "system": system,
        "kind": workload,
        "workers": workers,
        "round": rnd,
        "jobs": n,
    }
    for k in ("jobs_per_s", "p50_ms", "p95_ms", "server_us_per_job"):
        if k in r:
            row[k] = round(float(str(r[k])), 3 if k.endswith("_ms") else 1)
    if "version" in r:
        row["version"] = r["version"]
    print("BENCH " + json.dumps(row, separators=(",", ":")), flush=True)
    return row


def js_peers(args: argparse.Namespace) -> None:
    for rnd in range(args.rounds):
        order = ALL_SYSTEMS if rnd % 2 == 0 else ALL_SYSTEMS[::-1]
        for workload, workers, systems in JS_WORKLOADS:
            for system in order:
                if system in systems:
                    js_run(args, system, workload, workers, rnd)
    from importlib.metadata import version

    row = {"workload": "js-peer-versions", "tenure": version("tenure")}
    print("BENCH " + json.dumps(row, separators=(",", ":")), flush=True)


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {p: version(p) for p in ("tenure", "procrastinate", "psycopg")}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "worker":
        _, _, system, url = sys.argv
        r = SYSTEMS[system][1](url)
        print("DONE " + json.dumps(r), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["bench", "enqueue", "js-peers"])
    p.add_argument("--url", required=True, help="maintenance URL of the server")
    p.add_argument("--jobs", type=int, default=5000)
    p.add_argument("--workers", default="1,4")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pairs", type=int, default=5, help="enqueue: pairs of samples")
    p.add_argument("--node-dir", help="js-peers: the folder of peers.mjs and its node_modules")
    p.add_argument("--enqueue-jobs", type=int, default=20000, help="js-peers: bulk enqueue size")
    p.add_argument("--wake-samples", type=int, default=200, help="js-peers: wake-ups measured")
    p.add_argument("--rounds", type=int, default=3, help="js-peers: rounds")
    p.add_argument("--pg-bin", help="js-peers: the folder of the server's pgbench and psql")
    args = p.parse_args()
    if args.mode == "js-peers":
        if not args.node_dir or not args.pg_bin:
            p.error("js-peers needs --node-dir and --pg-bin")
        js_peers(args)
        return
    if args.mode == "enqueue":
        enqueue_pairs(args.url, args.jobs, args.pairs)
        return
    ws = [int(w) for w in args.workers.split(",")]
    rates: dict[tuple[str, int], list[float]] = {}
    for run in range(args.runs):
        for w in ws:
            for system in ("tenure", "tenure-batch", "procrastinate"):
                row = one_run(system, args.url, args.jobs, w, run)
                rates.setdefault((system, w), []).append(row["jobs_per_s"])
    vers = _versions()
    for w in ws:
        t = statistics.median(rates[("tenure", w)])
        b = statistics.median(rates[("tenure-batch", w)])
        q = statistics.median(rates[("procrastinate", w)])
        summary = {
            "workload": "pg-peer-summary",
            "workers": w,
            "jobs": args.jobs,
            "runs": args.runs,
            "tenure_jobs_per_s": t,
            "procrastinate_jobs_per_s": q,
            "ratio": round(t / q, 2),
            "batch": BATCH,
            "tenure_batch_jobs_per_s": b,
            "batch_ratio": round(b / q, 2),
            "batch_vs_single": round(b / t, 2),
            "tenure_version": vers["tenure"],
            "procrastinate_version": vers["procrastinate"],
            "psycopg_version": vers["psycopg"],
        }
        print("BENCH " + json.dumps(summary, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
