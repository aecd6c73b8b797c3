"""A Python worker process of the PostgreSQL server campaign
(``postgres_campaign`` in ``crates/tenure/tests/pg_outage.rs``).

    pg_campaign_worker.py thread|aio URL PRODUCTION HOLDER RECORD

``thread`` runs ``tenure.Worker`` (4 native slots), ``aio`` runs
``tenure.aio.Worker`` (concurrency 4), both with 60 s leases, keepers and
waits of 500 ms. Each handler run appends ``R <job> <claim> <µs>`` when it
begins and ``E <job> <claim> <µs>`` when it returns (jobs take 20 ms) to
RECORD; the threaded worker's reports append ``C <job> <claim>`` (completed)
or ``O <job> <claim> <result>``; the asyncio worker, which reports counts,
appends ``N <completed>`` every 50 ms. SIGTERM stops the worker; the last
line is ``S <completed> <failed> <released> <lost> <outages>`` (the threaded
worker counts its reports). Exit 0 when stopped by SIGTERM, 3 when the worker
stopped by itself, 1 when it raised.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from datetime import timedelta

import tenure
from tenure import aio

TTL = timedelta(seconds=60)
WAIT = timedelta(milliseconds=500)


def main() -> int:
    kind, url, production, holder, record = sys.argv[1:6]
    fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def line(text: str) -> None:
        os.write(fd, (text + "\n").encode())

    def now_us() -> int:
        return time.time_ns() // 1000

    native = tenure.Authority(url, busy_timeout=timedelta(seconds=2))
    if kind == "thread":
        counts = {"completed": 0, "failed": 0, "released": 0, "lost": 0}
        lock = threading.Lock()

        def handle(job: tenure.Job) -> None:
            line(f"R {job.id} {job.claim_id} {now_us()}")
            time.sleep(0.02)
            line(f"E {job.id} {job.claim_id} {now_us()}")

        def report(r: tenure.Report) -> None:
            with lock:
                counts[r.result] = counts.get(r.result, 0) + 1
            if r.result == "completed":
                line(f"C {r.job} {r.claim_id}")
            else:
                line(f"O {r.job} {r.claim_id} {r.result}")

        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with tenure.Worker(native, production, holder, handle, ttl=TTL, slots=4,
                           wait_timeout=WAIT, report=report) as w:
            while not stop.wait(0.1):
                if w.stopped:
                    print(f"{holder}: the worker stopped by itself", file=sys.stderr)
                    return 3
            outages = w.outages
        line(f"S {counts['completed']} {counts['failed']} {counts['released']} "
             f"{counts['lost']} {outages}")
        return 0

    async def handle_async(job: aio.Job) -> None:
        claim = job.lease.claim_id
        line(f"R {job.id} {claim} {now_us()}")
        await asyncio.sleep(0.02)
        line(f"E {job.id} {claim} {now_us()}")

    async def run() -> int:
        a = aio.Authority(native)
        w = aio.Worker(a, production, holder, handle_async, concurrency=4, ttl=TTL,
                       wait_timeout=WAIT)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        task = asyncio.create_task(w.run(stop))
        last = -1
        while not task.done():
            done = w.stats.completed
            if done != last:
                line(f"N {done}")
                last = done
            await asyncio.wait({task}, timeout=0.05)
        stats = task.result()  # raises what run raised
        line(f"N {stats.completed}")
        line(f"S {stats.completed} {stats.failed} {stats.released} {stats.lost} {w.outages}")
        if not stop.is_set():
            print(f"{holder}: the worker stopped by itself", file=sys.stderr)
            return 3
        return 0

    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
