"""A typed asyncio tenure worker: drain a production with concurrent tasks.

Usage: ``python aio_worker.py STORE PRODUCTION HOLDER [CONCURRENCY]``

Runs ``CONCURRENCY`` (default 16) handler tasks on one event loop; each
waits for a job with the native wait for work (``claim_next_wait`` on a
thread, so the loop never blocks), hashes its payload under a keeper and
completes it with the hash as facts. Prints one line per job its handler
finished (``handled <job>``; the completion commits right after) and exits 0
once no job became claimable within half a second; SIGTERM or SIGINT stop it
gracefully (no new jobs, running handlers finish within 10 s, the rest are
released). Type-checked with ``mypy --strict`` and run as a real process by
the test suite.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
import sys
from datetime import timedelta

import tenure
from tenure import aio

TTL = timedelta(minutes=10)
IDLE = timedelta(milliseconds=500)


async def handle(job: aio.Job) -> dict[str, str]:
    """The job itself: hash the payload (a payload ``fail`` fails it for good)."""
    if job.payload == b"fail":
        raise aio.JobFailed("refused by the example", permanent=True)
    await asyncio.sleep(0)  # an await point, as real handlers have
    print(f"handled {job.id}", flush=True)
    return {"sha256": hashlib.sha256(job.payload).hexdigest(), "size": str(len(job.payload))}


async def main(argv: list[str]) -> int:
    store, production, holder = argv[:3]
    concurrency = int(argv[3]) if len(argv) > 3 else 16
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with await aio.open(store, busy_timeout=timedelta(minutes=2)) as auth:
        worker = aio.Worker(auth, production, holder, handle, concurrency=concurrency,
                            ttl=TTL, until_idle=True, wait_timeout=IDLE,
                            grace=timedelta(seconds=10))
        try:
            stats = await worker.run(stop)
        except tenure.TenureError as e:
            print(f"stopped: {type(e).__name__} (code {e.code})", file=sys.stderr)
            return 1
    print(f"done claimed={stats.claimed} completed={stats.completed} failed={stats.failed} "
          f"released={stats.released} lost={stats.lost}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
