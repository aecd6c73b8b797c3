#!/usr/bin/env python3
"""Python benchmark workloads for ``cargo xtask bench`` (one JSON line each).

    python_bench.py tenure-lifecycle --sync full|normal --cycles N   # claim_next, renew, complete
    python_bench.py tenure-cycle --cycles N                          # claim_next, complete (FULL)
    python_bench.py litequeue --cycles N                             # pop, done
    python_bench.py persist-queue --cycles N                         # get, ack
    python_bench.py localqueue --cycles N                            # get, ack (DurabilityMode.DURABLE)

Peers run with the same durability as tenure's default where their API
allows it: litequeue and persist-queue connections are switched to
``PRAGMA synchronous = FULL`` after they open (litequeue sets NORMAL itself);
localqueue uses its ``DURABLE`` mode. Each does its closest equivalent of
claim + complete over a backlog of ``cycles`` items (10 000 in the full run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import tempfile
import time


def _emit(workload: str, cycles: int, seconds: float, **extra: object) -> None:
    print(json.dumps({"workload": workload, "cycles": cycles, "seconds": seconds,
                      "cycles_per_s": cycles / seconds, **extra}))


def tenure_run(d: str, sync: str, cycles: int, renew: bool) -> float:
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
        if renew:
            lease.renew(ttl2)
        lease.complete()
    return time.perf_counter() - start


def litequeue_run(d: str, cycles: int) -> float:
    from litequeue import LiteQueue

    q = LiteQueue(os.path.join(d, "lq.db"))
    q.conn.execute("PRAGMA synchronous = FULL;")
    for i in range(cycles):
        q.put(f"payload {i}")
    start = time.perf_counter()
    for _ in range(cycles):
        m = q.pop()
        q.done(m.message_id)
    return time.perf_counter() - start


def persist_queue_run(d: str, cycles: int) -> float:
    import persistqueue

    q = persistqueue.SQLiteAckQueue(os.path.join(d, "pq"), auto_commit=True)
    for conn in {id(c): c for c in (q._getter, q._putter) if c is not None}.values():
        conn.execute("PRAGMA synchronous = FULL;")
    for i in range(cycles):
        q.put(f"payload {i}")
    start = time.perf_counter()
    for _ in range(cycles):
        item = q.get(block=False)
        q.ack(item)
    return time.perf_counter() - start


def localqueue_run(d: str, cycles: int) -> float:
    from localqueue import DurabilityMode, SimpleQueue

    q = SimpleQueue(os.path.join(d, "loq"), durability=DurabilityMode.DURABLE)
    for i in range(cycles):
        q.put(f"payload {i}")
    start = time.perf_counter()
    for _ in range(cycles):
        job = q.get_nowait()
        q.ack(job)
    q.close()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("workload")
    p.add_argument("--sync", default="full", choices=["full", "normal"])
    p.add_argument("--cycles", type=int, default=300)
    args = p.parse_args()
    d = tempfile.mkdtemp(prefix="tenure-pybench-")
    try:
        if args.workload == "tenure-lifecycle":
            _emit("py-tenure-lifecycle", args.cycles, tenure_run(d, args.sync, args.cycles, True), sync=args.sync.upper())
        elif args.workload == "tenure-cycle":
            _emit("py-tenure-cycle", args.cycles, tenure_run(d, "full", args.cycles, False), sync="FULL")
        elif args.workload == "litequeue":
            _emit("py-litequeue", args.cycles, litequeue_run(d, args.cycles), sync="FULL")
        elif args.workload == "persist-queue":
            _emit("py-persist-queue", args.cycles, persist_queue_run(d, args.cycles), sync="FULL")
        elif args.workload == "localqueue":
            _emit("py-localqueue", args.cycles, localqueue_run(d, args.cycles), sync="DURABLE")
        else:
            raise SystemExit(f"unknown workload {args.workload}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
