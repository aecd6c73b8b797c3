#!/usr/bin/env python3
"""asyncio worker vs threaded worker on the same kind of store (one JSON line).

    python_aio_bench.py --jobs 10000 --concurrency 16

Each side drains its own fresh store of ``jobs`` jobs (synchronous=FULL) with
the same handler work: read the payload, complete with one fact.

- ``worker``: the threaded worker class, ``tenure.Worker`` with ``concurrency``
  slots (the core's loop: wait for work, payload, a keeper per job, the
  Python handler, complete) over one ``tenure.Authority``.
- ``threads``: bare threads, ``concurrency`` of them calling ``claim_next``,
  ``payload`` and ``complete`` (no keeper, no wait for work): context.
- ``asyncio``: ``tenure.aio.Worker`` with ``concurrency`` tasks (wait for
  work, payload, a keeper per job, the async handler, complete) over one
  ``tenure.aio.Authority``. While it runs, a ticker task sleeps 1 ms at a
  time and records how late it wakes: the event loop's longest stall (and
  its 99th percentile); meanwhile the same ticker runs on an idle loop in
  another process (the machine's floor over the same window). Then the
  same ticker runs alone on an idle loop in this process for as long.

Output: ``worker_per_s``, ``threads_per_s``, ``asyncio_per_s``, ``ratio``
(asyncio / worker, the target), ``ratio_threads`` (asyncio / threads), the
process's CPU time per job of each side (``worker_cpu_us``,
``threads_cpu_us``, ``asyncio_cpu_us``: all threads, user + system, over
the timed part only; on a shared machine the fairer comparison of the
work each side does),
``max_stall_ms``, ``peer_stall_ms`` and ``idle_stall_ms`` (longest: during
the run, the other process's during the run, this process's after it) and
``stall_p99_ms``, ``peer_p99_ms``, ``idle_p99_ms``; ``max_stall_runq_ms`` and
``peer_stall_runq_ms``: how much of that longest stall the loop's thread
spent runnable but waiting for a CPU (Linux schedstat; the rest is the
loop's own work or a blocking wait); ``loop_preempted``: how often the
loop's thread was preempted during the asyncio run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import timedelta

import tenure
from tenure import aio

TTL = timedelta(seconds=30)


def fill(path: str, jobs: int) -> tenure.Authority:
    a = tenure.Authority(path, busy_timeout=timedelta(minutes=5))
    a.create_production("bench")
    specs = [tenure.JobSpec(f"j{i:08}", b"payload") for i in range(jobs)]
    for i in range(0, len(specs), 10_000):
        a.submit_many("bench", specs[i:i + 10_000])
    return a


def threads_run(d: str, jobs: int, concurrency: int) -> tuple[float, float]:
    a = fill(os.path.join(d, "threads.db"), jobs)
    done = [0] * concurrency

    def work(n: int) -> None:
        while True:
            try:
                lease = a.claim_next("bench", f"thread-{n}", TTL)
            except tenure.NoJobAvailable:
                return
            payload = a.payload(lease.production, lease.job)
            lease.complete({"size": str(len(payload))})
            done[n] += 1

    ts = [threading.Thread(target=work, args=(n,)) for n in range(concurrency)]
    start, cpu = time.perf_counter(), time.process_time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert sum(done) == jobs, done
    return seconds, cpu


def worker_run(d: str, jobs: int, concurrency: int) -> tuple[float, float]:
    a = fill(os.path.join(d, "worker.db"), jobs)
    lock = threading.Lock()
    done = 0
    all_done = threading.Event()

    def handle(job: tenure.Job) -> dict[str, str]:
        return {"size": str(len(job.payload))}

    def report(r: tenure.Report) -> None:
        nonlocal done
        assert r.result == "completed", r
        with lock:
            done += 1
            if done == jobs:
                all_done.set()

    start, cpu = time.perf_counter(), time.process_time()
    with tenure.Worker(a, "bench", "worker", handle, ttl=TTL, slots=concurrency, report=report):
        all_done.wait()
        seconds = time.perf_counter() - start
    return seconds, time.process_time() - cpu


def p99(lateness: list[float]) -> float:
    """The 99th percentile of the ticker's lateness samples."""
    s = sorted(lateness)
    return s[min(len(s) - 1, int(len(s) * 0.99))] if s else 0.0


class Ticks:
    """A ticker's samples: how late each 1 ms sleep woke, and how much of
    that tick the loop's thread spent runnable but waiting for a CPU (its
    run-queue wait, from /proc/thread-self/schedstat; 0 where that file
    does not exist)."""

    def __init__(self) -> None:
        self.lateness: list[float] = []
        self.runq: list[float] = []

    def longest(self) -> tuple[float, float]:
        """The longest stall and its run-queue wait (ms)."""
        if not self.lateness:
            return 0.0, 0.0
        i = max(range(len(self.lateness)), key=self.lateness.__getitem__)
        return self.lateness[i] * 1000.0, self.runq[i] * 1000.0


def runq_wait(fd: int) -> float:
    """The calling thread's run-queue wait so far (s): schedstat's second
    field, in ns."""
    return int(os.pread(fd, 128, 0).split()[1]) / 1e9 if fd >= 0 else 0.0


def preempted() -> int:
    """How often the calling thread was preempted so far (its involuntary
    context switches)."""
    try:
        with open("/proc/thread-self/status") as f:
            for line in f:
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


async def ticking(done: Callable[[], bool]) -> Ticks:
    """The ticker: sleep 1 ms at a time until ``done()``, recording how
    late each sleep wakes and how long the loop waited for a CPU meanwhile."""
    ticks = Ticks()
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        fd = -1
    try:
        while not done():
            t0, q0 = time.perf_counter(), runq_wait(fd)
            await asyncio.sleep(0.001)
            ticks.lateness.append(time.perf_counter() - t0 - 0.001)
            ticks.runq.append(runq_wait(fd) - q0)
    finally:
        if fd >= 0:
            os.close(fd)
    return ticks


async def idle_stall(seconds: float) -> Ticks:
    """The same ticker on an idle loop for ``seconds``: how late each 1 ms
    sleep wakes with nothing else running (the machine's own floor)."""
    end = time.perf_counter() + seconds
    return await ticking(lambda: time.perf_counter() >= end)


def peer_ticker() -> None:
    """``--peer-ticker``: the ticker on an idle loop in this process until
    stdin closes; prints its longest and p99 lateness (ms) as JSON."""
    closed = threading.Event()

    def watch() -> None:
        sys.stdin.read()
        closed.set()

    threading.Thread(target=watch, daemon=True).start()
    print("ready", flush=True)
    ticks = asyncio.run(ticking(closed.is_set))
    longest, runq = ticks.longest()
    print(json.dumps({"max_ms": longest, "runq_ms": runq,
                      "p99_ms": p99(ticks.lateness) * 1000.0}))


async def asyncio_run(d: str, jobs: int, concurrency: int
                      ) -> tuple[float, float, Ticks, int, dict[str, float]]:
    """The asyncio side, its ticker's lateness, and that of an idle ticker
    in another process over the same window (the machine's floor then)."""
    native = fill(os.path.join(d, "asyncio.db"), jobs)
    running = True
    async def handle(job: aio.Job) -> dict[str, str]:
        return {"size": str(len(job.payload))}

    peer = subprocess.Popen([sys.executable, __file__, "--peer-ticker"], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert peer.stdout is not None and peer.stdout.readline() == "ready\n"
    async with aio.Authority(native, max_workers=2 * concurrency) as a:
        tick = asyncio.ensure_future(ticking(lambda: not running))
        worker = aio.Worker(a, "bench", "asyncio", handle, concurrency=concurrency, ttl=TTL,
                            until_idle=True)
        start, cpu, pre = time.perf_counter(), time.process_time(), preempted()
        stats = await worker.run()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        pre = preempted() - pre
        running = False
        ticks = await tick
    floor = json.loads(peer.communicate()[0])
    assert stats.completed == jobs, stats
    return seconds, cpu, ticks, pre, floor


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--peer-ticker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.peer_ticker:
        peer_ticker()
        return
    d = tempfile.mkdtemp(prefix="tenure-pyaio-bench-")
    try:
        w, w_cpu = worker_run(d, args.jobs, args.concurrency)
        t, t_cpu = threads_run(d, args.jobs, args.concurrency)
        s, s_cpu, busy, pre, peer = asyncio.run(asyncio_run(d, args.jobs, args.concurrency))
        idle = asyncio.run(idle_stall(s))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(json.dumps({
        "workload": "py-asyncio-vs-threads", "jobs": args.jobs,
        "concurrency": args.concurrency, "sync": "FULL",
        "worker_per_s": args.jobs / w, "threads_per_s": args.jobs / t,
        "asyncio_per_s": args.jobs / s, "ratio": w / s, "ratio_threads": t / s,
        "max_stall_ms": busy.longest()[0], "max_stall_runq_ms": busy.longest()[1],
        "loop_preempted": pre,
        "idle_stall_ms": idle.longest()[0],
        "stall_p99_ms": p99(busy.lateness) * 1000.0, "idle_p99_ms": p99(idle.lateness) * 1000.0,
        "peer_stall_ms": peer["max_ms"], "peer_stall_runq_ms": peer["runq_ms"],
        "peer_p99_ms": peer["p99_ms"],
        "worker_cpu_us": w_cpu / args.jobs * 1e6, "threads_cpu_us": t_cpu / args.jobs * 1e6,
        "asyncio_cpu_us": s_cpu / args.jobs * 1e6,
    }))


if __name__ == "__main__":
    main()
