"""Authority.stats() (sync and tenure.aio): after random operation
sequences, with leases left to expire on the real clock, the statistics
equal what a full scan of the same store gives (every job's view, every
event joined with what the test saw of each claim: counts, expiries, wait
and run percentiles, and the claim gates); after clock jumps (a process
under libfaketime two hours back, where reads classify at the high-water
mark, and two hours ahead, where every lease has expired) they still equal
the scan; no payload or token appears in them; bad queries are typed
errors."""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Optional

import pytest

import tenure
from conftest import PY, on_postgres, python_env
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


def nearest_rank(us: list[int]) -> list[Optional[int]]:
    """Nearest-rank p50, p95, p99 of `us` (negative values count as 0)."""
    if not us:
        return [None, None, None]
    us = sorted(us)
    return [max(us[max(1, math.ceil(p * len(us) / 100)) - 1], 0) for p in (50, 95, 99)]


def gates(g: tenure.Gates) -> dict[str, object]:
    return {"paused_us": g.paused_us, "concurrency_limit": g.concurrency_limit,
            "rate": (g.rate_claims, g.rate_interval_us, g.rate_burst)}


def scanned(auth: tenure.Authority, name: str, now: int, seen: dict[str, int],
            window_us: int = 3_600_000_000) -> dict[str, object]:
    """The figures of production `name` from a full scan at `now`; `seen`
    maps each claim ID to the due moment its job waited from."""
    vs = views(auth, name)

    def count(s: str) -> int:
        return sum(1 for v in vs if v.state == s)

    waiting = [v for v in vs if v.state == "requested"]
    later = [v.due_us for v in waiting if v.due_us is not None and v.due_us > now]
    due = [v.due_us if v.due_us is not None else v.updated_us for v in waiting
           if v.due_us is None or v.due_us <= now]
    live = [v for v in vs if v.state == "claimed"]
    every = [e for e in events(auth) if e.production == name]
    start = now - window_us
    evs = [e for e in every if start <= e.at_us <= now]
    kinds = [e.kind for e in evs]
    claimed_at = {e.claim_id: e.at_us for e in every if e.kind == "claimed"}
    wait = [e.at_us - min(seen[e.claim_id], e.at_us) for e in evs if e.kind == "claimed"]
    run = [e.at_us - claimed_at[e.claim_id] for e in evs
           if e.kind in ("completed", "failed", "released")]
    # A lease lapsed if nothing closed it before its last expiry.
    expiry: dict[str, int] = {}
    closed: set[str] = set()
    for e in every:
        if e.claim_id is None:
            continue
        if e.kind in ("claimed", "renewed"):
            assert e.expires_us is not None
            expiry[e.claim_id] = e.expires_us
        elif e.kind in ("completed", "failed", "released"):
            closed.add(e.claim_id)
        elif e.kind == "cancelled" and e.at_us < expiry[e.claim_id]:
            closed.add(e.claim_id)
    expiries = sum(1 for c, x in expiry.items() if c not in closed and start <= x <= now)
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
        "expiries": expiries,
        "wait": [len(wait), *nearest_rank(wait)],
        "run": [len(run), *nearest_rank(run)],
        "gates": gates(auth.production_gates(name)),
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
        "expiries": f.expiries,
        "wait": [f.wait.count, f.wait.p50_us, f.wait.p95_us, f.wait.p99_us],
        "run": [f.run.count, f.run.p50_us, f.run.p95_us, f.run.p99_us],
        "gates": gates(p.gates),
    }


def timeless(p: tenure.ProductionStats) -> dict[str, object]:
    """The figures of two reads at different clock readings compare equal
    but for the age of the oldest due job."""
    f = figures(p)
    del f["oldest_due_age_us"]
    return f


def due_moment(v: tenure.JobView) -> int:
    """The moment the job of view `v`, read just before a claim that took
    it, became due. A job seen live was taken only once its lease lapsed
    (a 2 ms lease can lapse between the read and the claim), so it waited
    from its expiry, as a job seen expired did."""
    if v.state in ("expired", "claimed"):
        assert v.expires_us is not None
        return v.expires_us
    return v.due_us if v.due_us is not None else v.updated_us


def random_operations(auth: tenure.Authority, rng: random.Random, n: int) -> dict[str, int]:
    """Random operations on production "p"; each claim ID mapped to the
    due moment its job waited from (its view just before the claim)."""
    leases: list[tenure.Lease] = []
    seen: dict[str, int] = {}
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
                before = {v.job: v for v in views(auth, "p")}
                lease = auth.claim_next("p", "w", ttl)
                seen[lease.claim_id] = due_moment(before[lease.job])
                leases.append(lease)
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
    if rng.random() < 0.5:
        auth.pause_production("p")
        auth.set_concurrency_limit("p", rng.randint(1, 5))
    if rng.random() < 0.5:
        auth.set_rate_limit("p", 3, timedelta(seconds=3), 2)
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_stats_equal_a_full_scan(auth: tenure.Authority, seed: int) -> None:
    auth.create_production("p")
    auth.create_production("q")
    seen = random_operations(auth, random.Random(seed), 80)
    st = auth.stats(horizon=HORIZON, window=HOUR)
    assert st.horizon_us == 30_000_000 and st.window_us == 3_600_000_000
    assert st.high_water_us <= st.now_us
    assert [p.name for p in st.productions] == ["p", "q"]
    p = st.productions[0]
    assert figures(p) == scanned(auth, "p", st.now_us, seen)
    assert figures(st.productions[1]) == scanned(auth, "q", st.now_us, {})
    assert p.total == len(views(auth, "p"))
    assert st.productions[1].total == 0
    assert p.flow.wait.count == p.flow.claims
    one = auth.stats("p", horizon=HORIZON, window=HOUR)
    assert timeless(one.productions[0]) == timeless(p)


JUMP_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[3])
import tenure
from test_stats import figures, scanned
auth = tenure.Authority(sys.argv[1])
seen = json.loads(sys.argv[2])
window = 4 * 3_600_000_000
st = auth.stats(horizon=__import__("datetime").timedelta(seconds=30),
                window=__import__("datetime").timedelta(microseconds=window))
clock = auth.clock()
print(json.dumps({
    "blocked": clock.blocked,
    "now_us": st.now_us,
    "mark_us": clock.mark_us,
    "got": [figures(p) for p in st.productions],
    "want": [scanned(auth, p.name, st.now_us, seen if p.name == "p" else {}, window)
             for p in st.productions],
}))
"""


@pytest.mark.skipif(on_postgres(), reason="libfaketime moves the local clock of a SQLite store")
@pytest.mark.parametrize("seed", range(3))
def test_stats_equal_a_full_scan_after_clock_jumps(tmp_path: Path, seed: int) -> None:
    store = tmp_path / "jump.db"
    a = tenure.Authority(store)
    a.create_production("p")
    a.create_production("q")
    seen = random_operations(a, random.Random(100 + seed), 80)
    # Back first, so the mark is still the real clock's.
    for offset, blocked in (("-2h", True), ("+2h", False)):
        out = subprocess.run(
            ["faketime", "-f", offset, PY, "-c", JUMP_CHILD, str(store), json.dumps(seen),
             str(Path(__file__).parent)],
            capture_output=True, text=True, env=python_env(), timeout=120,
        )
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout)
        assert r["blocked"] is blocked, offset
        if blocked:
            # Reads classify at the high-water mark.
            assert r["now_us"] == r["mark_us"], offset
        got, want = r["got"], r["want"]
        assert [json.dumps(g, sort_keys=True) for g in got] == \
            [json.dumps(w, sort_keys=True) for w in want], offset
        if not blocked:
            assert got[0]["claimed_live"] == 0, "every lease has expired two hours ahead"


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
