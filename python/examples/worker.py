"""A typed tenure worker: claim jobs until the production is empty.

Usage: ``python worker.py STORE PRODUCTION HOLDER``

Prints one line per completed job (``completed <job> <claim_id>``) and exits
0 when nothing is claimable any more. It is type-checked with
``mypy --strict`` by the test suite and used as the worker process of the
multi-process contention test.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from datetime import timedelta

import tenure

TTL = timedelta(minutes=10)
HEARTBEAT = timedelta(minutes=1)


def work(payload: bytes) -> dict[str, str]:
    """The job itself: here, hash the payload."""
    return {"sha256": hashlib.sha256(payload).hexdigest(), "size": str(len(payload))}


def heartbeat(lease: tenure.Lease, stop: threading.Event) -> None:
    """Renew the lease until ``stop`` is set (a lease never renews itself)."""
    while not stop.wait(HEARTBEAT.total_seconds()):
        try:
            lease.renew(TTL)
        except tenure.TenureError:
            return  # lost it: the completion below will say how


def run_one(auth: tenure.Authority, production: str, holder: str) -> tenure.Lease | None:
    """Claim, work, complete one job; None when nothing is claimable."""
    try:
        lease = auth.claim_next(production, holder, TTL)
    except tenure.NoJobAvailable:
        return None
    stop = threading.Event()
    beat = threading.Thread(target=heartbeat, args=(lease, stop), daemon=True)
    beat.start()
    try:
        facts = work(auth.payload(lease.production, lease.job))
        facts["worker"] = holder
        lease.complete(facts)
    except (tenure.StaleLease, tenure.LeaseExpired, tenure.Cancelled) as e:
        print(f"lost {lease.job}: {type(e).__name__} (code {e.code})", file=sys.stderr)
    finally:
        stop.set()
        beat.join()
    return lease


def main(argv: list[str]) -> int:
    store, production, holder = argv
    auth = tenure.Authority(store, busy_timeout=timedelta(minutes=2))
    while True:
        lease = run_one(auth, production, holder)
        if lease is None:
            return 0
        if lease.status == "closed":
            print(f"completed {lease.job} {lease.claim_id}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
