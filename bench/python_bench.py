#!/usr/bin/env python3
"""Python benchmark workloads for ``cargo xtask bench`` (one JSON line each).

    python_bench.py tenure-lifecycle --sync full|normal --cycles N   # claim_next, renew, complete
    python_bench.py tenure-drain --cycles N --threads T [--sync S]   # claim_next, complete (FULL)
    python_bench.py litequeue --cycles N --threads T                 # pop, done
    python_bench.py persist-queue --cycles N --threads T             # get, ack
    python_bench.py localqueue --cycles N --threads T                # get, ack (DurabilityMode.DURABLE)

The drain workloads put a backlog of ``cycles`` items (10 000 in the full
run), then ``threads`` threads of this one process take and finish items
until the backlog is empty; the rate is items per second from a common
start until the last thread finds nothing left. Every delivery is recorded:
``duplicates`` counts deliveries of an item already delivered (by job ID;
for the peers, by the item's payload, which is unique), ``delivered`` the
distinct items.

Peers run with the same durability as tenure's default where their API
allows it: litequeue and persist-queue connections are switched to
``PRAGMA synchronous = FULL`` after they open (litequeue sets NORMAL itself);
localqueue uses its ``DURABLE`` mode. Threads share one queue object where
the peer supports that (persist-queue with ``multithreading=True``,
localqueue); litequeue keeps one connection per object, so each thread opens
its own on the same file, with a 60 s busy timeout, and a step that still
finds the database locked is retried (counted as ``busy_errors``; tenure's
``Busy``, the writer lock not taken within the busy timeout, is retried and
counted the same way). A peer that is not installed prints
``{"skipped": true}``. ``tenure-drain --sync normal`` gives the harness its
context rows: the same drain when no call waits for an fsync.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from typing import Callable, List


def _emit(workload: str, cycles: int, seconds: float, **extra: object) -> None:
    print(json.dumps({"workload": workload, "cycles": cycles, "seconds": seconds,
                      "cycles_per_s": cycles / seconds, **extra}))


def tenure_lifecycle(d: str, sync: str, cycles: int) -> float:
    import tenure

    a = tenure.Authority(os.path.join(d, "t.db"), synchronous=sync)
    a.create_production("bench")
    specs = [tenure.JobSpec(f"j{i:08}", b"payload", max_attempts=1000) for i in range(cycles)]
    for i in range(0, len(specs), 10_000):
        a.submit_many("bench", specs[i:i + 10_000])
    ttl = datetime.timedelta(seconds=30)
    ttl2 = datetime.timedelta(seconds=60)
    start = time.perf_counter()
    for _ in range(cycles):
        lease = a.claim_next("bench", "bench-worker", ttl)
        lease.renew(ttl2)
        lease.complete()
    return time.perf_counter() - start


def drain(threads: int, worker: Callable[[Callable[[str], None]], None]) -> tuple:
    """Run ``worker(record)`` on ``threads`` threads from a common start;
    returns (seconds, deliveries). ``worker`` returns when nothing is left."""
    got: List[List[str]] = [[] for _ in range(threads)]
    errors: List[BaseException] = []
    go = threading.Barrier(threads + 1)

    def run(i: int) -> None:
        go.wait()
        try:
            worker(got[i].append)
        except BaseException as e:  # reported after the join
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    go.wait()
    start = time.perf_counter()
    for t in ts:
        t.join()
    seconds = time.perf_counter() - start
    if errors:
        raise errors[0]
    return seconds, [x for g in got for x in g]


def tenure_drain(d: str, cycles: int, threads: int, sync: str = "full") -> tuple:
    import tenure

    a = tenure.Authority(os.path.join(d, "t.db"), synchronous=sync)
    a.create_production("bench")
    specs = [tenure.JobSpec(f"j{i:08}", b"payload", max_attempts=1000) for i in range(cycles)]
    for i in range(0, len(specs), 10_000):
        a.submit_many("bench", specs[i:i + 10_000])
    ttl = datetime.timedelta(seconds=30)

    busy = [0]
    lock = threading.Lock()

    def retried() -> None:
        with lock:
            busy[0] += 1

    def worker(record: Callable[[str], None]) -> None:
        while True:
            try:
                lease = a.claim_next("bench", "bench-worker", ttl)
            except tenure.NoJobAvailable:
                return
            except tenure.Busy:  # the writer lock not had in time: nothing changed
                retried()
                continue
            record(lease.job)
            while True:
                try:
                    lease.complete()
                    break
                except tenure.Busy:
                    retried()

    seconds, got = drain(threads, worker)
    return seconds, got, {"busy_errors": busy[0]}


def litequeue_drain(d: str, cycles: int, threads: int) -> tuple:
    from litequeue import LiteQueue

    path = os.path.join(d, "lq.db")
    q = LiteQueue(path)
    q.conn.execute("PRAGMA synchronous = FULL;")
    for i in range(cycles):
        q.put(f"payload {i}")
    lock = threading.Lock()

    busy = [0]

    def locked(e: sqlite3.OperationalError) -> bool:
        if "locked" not in str(e):
            return False
        with lock:
            busy[0] += 1
        return True

    def worker(record: Callable[[str], None]) -> None:
        with lock:
            mine = LiteQueue(path, timeout=60)
            mine.conn.execute("PRAGMA synchronous = FULL;")
        while True:
            try:
                m = mine.pop()
            except sqlite3.OperationalError as e:
                if locked(e):
                    continue
                raise
            if m is None:
                return
            record(m.data)
            while True:
                try:
                    mine.done(m.message_id)
                    break
                except sqlite3.OperationalError as e:
                    if not locked(e):
                        raise

    seconds, got = drain(threads, worker)
    return seconds, got, {"busy_errors": busy[0]}


def persist_queue_drain(d: str, cycles: int, threads: int) -> tuple:
    import persistqueue

    q = persistqueue.SQLiteAckQueue(os.path.join(d, "pq"), auto_commit=True,
                                    multithreading=threads > 1)
    for conn in {id(c): c for c in (q._getter, q._putter) if c is not None}.values():
        conn.execute("PRAGMA synchronous = FULL;")
    for i in range(cycles):
        q.put(f"payload {i}")

    def worker(record: Callable[[str], None]) -> None:
        while True:
            try:
                item = q.get(block=False)
            except persistqueue.Empty:
                return
            record(item)
            q.ack(item)

    return drain(threads, worker)


def localqueue_drain(d: str, cycles: int, threads: int) -> tuple:
    from localqueue import DurabilityMode, Empty, SimpleQueue

    q = SimpleQueue(os.path.join(d, "loq"), durability=DurabilityMode.DURABLE)
    for i in range(cycles):
        q.put(f"payload {i}")

    def worker(record: Callable[[str], None]) -> None:
        while True:
            try:
                job = q.get_nowait()
            except Empty:
                return
            record(job.data)
            q.ack(job)

    try:
        return drain(threads, worker)
    finally:
        q.close()


DRAINS = {
    "tenure-drain": ("tenure", tenure_drain, "FULL"),
    "litequeue": ("litequeue", litequeue_drain, "FULL"),
    "persist-queue": ("persistqueue", persist_queue_drain, "FULL"),
    "localqueue": ("localqueue", localqueue_drain, "DURABLE"),
}


def installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("workload")
    p.add_argument("--sync", default="full", choices=["full", "normal"])
    p.add_argument("--cycles", type=int, default=300)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    d = tempfile.mkdtemp(prefix="tenure-pybench-")
    try:
        if args.workload == "tenure-lifecycle":
            _emit("py-tenure-lifecycle", args.cycles, tenure_lifecycle(d, args.sync, args.cycles), sync=args.sync.upper())
        elif args.workload in DRAINS:
            module, run, durability = DRAINS[args.workload]
            name = f"py-{args.workload}"
            if not installed(module):
                print(json.dumps({"workload": name, "threads": args.threads, "skipped": True}))
                return
            if args.workload == "tenure-drain":
                durability = args.sync.upper()
                seconds, got, *extra = run(d, args.cycles, args.threads, args.sync)
            elif args.sync != "full":
                raise SystemExit(f"{args.workload} runs at its own durability only")
            else:
                seconds, got, *extra = run(d, args.cycles, args.threads)
            counts = Counter(got)
            _emit(name, len(got), seconds, sync=durability, threads=args.threads,
                  backlog=args.cycles, delivered=len(counts),
                  duplicates=len(got) - len(counts), **(extra[0] if extra else {}))
        else:
            raise SystemExit(f"unknown workload {args.workload}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
