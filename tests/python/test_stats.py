"""Authority.stats() (sync and tenure.aio): after random operation
sequences, with leases left to expire on the real clock, the statistics
equal what a full scan of the same store gives (every job's view, every
event); no payload or token appears in them; bad queries are typed errors.
The clock-jump cases are the Rust suite's (an injected clock)."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import timedelta
from typing import Optional

import pytest

import tenure
from tenure import aio

HOUR = timedelta(hours=1)
HORIZON = timedelta(seconds=30)
SHORT = timedelta(milliseconds=2)


def views(auth: tenure.Authority, production: str) -> list[tenure.JobView]:
    out: list[tenure.JobView] = []
    after: Optional[str] = None
    while True:
        page = auth.jobs(production, after=after, limit=1000)
        out.extend(page)
        if len(page) < 1000:
            return out
        after = page[-1].job


def events(auth: tenure.Authority) -> list[tenure.Event]:
    out: list[tenure.Event] = []
    while True:
        page = auth.events(out[-1].seq if out else 0, 10_000)
        if not page:
            return out
        out.extend(page)


def scanned(auth: tenure.Authority, name: str, now: int) -> dict[str, object]:
    vs = views(auth, name)

    def count(s: str) -> int:
        return sum(1 for v in vs if v.state == s)

    waiting = [v for v in vs if v.state == "requested"]
    later = [v.due_us for v in waiting if v.due_us is not None and v.due_us > now]
    due = [v.due_us if v.due_us is not None else v.updated_us for v in waiting
           if v.due_us is None or v.due_us <= now]
    live = [v for v in vs if v.state == "claimed"]
    evs = [e for e in events(auth) if e.production == name]
    kinds = [e.kind for e in evs]
    return {
        "waiting_due": len(waiting) - len(later),
        "waiting_later": len(later),
        "claimed_live": len(live),
        "claimed_expired": count("expired"),
        "completed": count("completed"),
        "failed": count("failed"),
        "cancelled_jobs": count("cancelled"),
        "oldest_due_age_us": (now - min(due)) if due else None,
        "next_due_us": min(later) if later else None,
        "expiring_within": sum(1 for v in live
                               if v.expires_us is not None
                               and v.expires_us <= now + 30_000_000),
        "max_live_attempts": max((v.attempts for v in live), default=0),
        "claims": kinds.count("claimed"),
        "completions": kinds.count("completed"),
        "retryable_failures": sum(1 for e in evs if e.kind == "failed" and e.state == "requested"),
        "permanent_failures": sum(1 for e in evs if (e.kind == "failed" and e.state == "failed")
                                  or e.kind == "exhausted"),
        "closes": sum(1 for k in kinds if k in ("completed", "failed", "released")),
    }


def figures(p: tenure.ProductionStats) -> dict[str, object]:
    f = p.flow
    return {
        "waiting_due": p.waiting_due,
        "waiting_later": p.waiting_later,
        "claimed_live": p.claimed_live,
        "claimed_expired": p.claimed_expired,
        "completed": p.completed,
        "failed": p.failed,
        "cancelled_jobs": p.cancelled_jobs,
        "oldest_due_age_us": p.oldest_due_age_us,
        "next_due_us": p.next_due_us,
        "expiring_within": p.expiring_within,
        "max_live_attempts": p.max_live_attempts,
        "claims": f.claims,
        "completions": f.completions,
        "retryable_failures": f.retryable_failures,
        "permanent_failures": f.permanent_failures,
        "closes": f.run.count,
    }


def timeless(p: tenure.ProductionStats) -> dict[str, object]:
    """The figures of two reads at different clock readings compare equal
    but for the age of the oldest due job."""
    f = figures(p)
    del f["oldest_due_age_us"]
    return f


def random_operations(auth: tenure.Authority, rng: random.Random, n: int) -> None:
    leases: list[tenure.Lease] = []
    for i in range(n):
        op = rng.randrange(8)
        job = f"j{rng.randrange(12)}"
        try:
            if op <= 1:
                later = timedelta(hours=rng.randint(1, 3)) if rng.random() < 0.3 else None
                auth.submit("p", job, b"secret payload", max_attempts=rng.randint(1, 3),
                            not_before=later)
            elif op == 2:
                ttl = SHORT if rng.random() < 0.4 else HOUR
                leases.append(auth.claim_next("p", "w", ttl))
            elif op == 3 and leases:
                rng.choice(leases).complete([])
            elif op == 4 and leases:
                rng.choice(leases).fail("boom", permanent=rng.random() < 0.5)
            elif op == 5 and leases:
                rng.choice(leases).release()
            elif op == 6:
                auth.cancel("p", job)
            else:
                time.sleep(0.003)
        except tenure.TenureError:
            pass
    # Every short lease has expired before the statistics are read.
    time.sleep(0.01)


@pytest.mark.parametrize("seed", range(6))
def test_stats_equal_a_full_scan(auth: tenure.Authority, seed: int) -> None:
    auth.create_production("p")
    auth.create_production("q")
    random_operations(auth, random.Random(seed), 80)
    st = auth.stats(horizon=HORIZON, window=HOUR)
    assert st.horizon_us == 30_000_000 and st.window_us == 3_600_000_000
    assert st.high_water_us <= st.now_us
    assert [p.name for p in st.productions] == ["p", "q"]
    p = st.productions[0]
    assert figures(p) == scanned(auth, "p", st.now_us)
    assert p.total == len(views(auth, "p"))
    assert st.productions[1].total == 0
    assert p.flow.wait.count == p.flow.claims
    one = auth.stats("p", horizon=HORIZON, window=HOUR)
    assert timeless(one.productions[0]) == timeless(p)


def test_stats_carry_no_payload_or_token(auth: tenure.Authority) -> None:
    auth.create_production("p")
    auth.submit("p", "j", b"payload-bytes-xyz")
    lease = auth.claim_next("p", "w", HOUR)
    token = lease.export_token()
    st = auth.stats()
    text = repr(st)
    assert "payload-bytes-xyz" not in text
    assert token not in text
    assert st.productions[0].claimed_live == 1
    assert st.productions[0].flow.per_second(60) == pytest.approx(1.0)


def test_stats_bad_queries_are_typed_errors(auth: tenure.Authority) -> None:
    auth.create_production("p")
    with pytest.raises(tenure.NotFound):
        auth.stats("nope")
    with pytest.raises(tenure.InvalidArgument):
        auth.stats("bad id!")
    with pytest.raises(tenure.InvalidDuration):
        auth.stats(window=timedelta(days=31))
    with pytest.raises(tenure.InvalidDuration):
        auth.stats(horizon=timedelta(seconds=-1))
    with pytest.raises(TypeError):
        auth.stats(window=60)  # type: ignore[arg-type]


def test_aio_stats_equal_the_sync_ones(auth: tenure.Authority) -> None:
    auth.create_production("p")
    auth.submit("p", "j", b"x")

    async def main() -> tenure.Stats:
        a = aio.Authority(auth, max_workers=2)
        try:
            return await a.stats("p", window=HOUR)
        finally:
            await a.aclose()

    got = asyncio.run(main())
    want = auth.stats("p", window=HOUR)
    assert timeless(got.productions[0]) == timeless(want.productions[0])
    assert got.productions[0].waiting_due == 1
