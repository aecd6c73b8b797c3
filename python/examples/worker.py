"""A typed tenure worker: the worker loop over one production.

Usage: ``python worker.py STORE PRODUCTION HOLDER [SLOTS]``

Runs ``tenure.Worker``, the core's worker loop, with ``SLOTS`` (default 4)
jobs at a time: it waits for work, keeps each job's lease alive while the
handler hashes the payload, and completes the job with the hash as facts
(a payload ``fail`` fails it for good). Prints one line per completed job
(``completed <job> <claim_id>``). Stops on SIGTERM or SIGINT (running
handlers get 10 s to finish, then their leases are released), or once the
production has nothing left to run; exits 0. Type-checked with
``mypy --strict`` and run as real processes by the test suite.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from datetime import timedelta
from typing import Union

import tenure

TTL = timedelta(minutes=10)
GRACE = timedelta(seconds=10)
LOOK = timedelta(milliseconds=100)


def handle(job: tenure.Job) -> Union[tenure.Complete, tenure.Fail]:
    """The job itself: hash the payload. The worker settles the job with
    the result (an exception would be a retryable failure)."""
    if job.payload == b"fail":
        return tenure.Fail("refused by the example")
    return tenure.Complete({
        "sha256": hashlib.sha256(job.payload).hexdigest(),
        "size": str(len(job.payload)),
        "worker": job.holder,
    })


def nothing_left(auth: tenure.Authority, production: str) -> bool:
    """No job requested, claimed or expired: every job is settled."""
    return not any(auth.jobs(production, state=s, limit=1)
                   for s in ("requested", "claimed", "expired"))


def main(argv: list[str]) -> int:
    store, production, holder = argv[:3]
    slots = int(argv[3]) if len(argv) > 3 else 4
    auth = tenure.Authority(store, busy_timeout=timedelta(minutes=2))
    out = threading.Lock()

    def report(r: tenure.Report) -> None:
        """Called on a worker thread after each job is settled."""
        with out:
            if r.result == "completed":
                sys.stdout.write(f"completed {r.job} {r.claim_id}\n")
                sys.stdout.flush()
            elif r.error is not None:
                sys.stderr.write(f"lost {r.job}: {type(r.error).__name__} (code {r.error.code})\n")

    worker = tenure.Worker(auth, production, holder, handle, ttl=TTL, slots=slots,
                           grace=GRACE, report=report)
    worker.stop_on_signals()
    while not worker.join(LOOK):
        if not worker.stopped and nothing_left(auth, production):
            worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
