"""Batched calls: claim_next_many and the many-lease transitions, on an
Authority (one outcome per lease: a value, or the lease's error as an
exception object, never raised), in an Edit (all or nothing) and through
tenure.aio. Runs on both backends."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path
from typing import Union

import pytest

import tenure
from conftest import LONG, on_postgres
from tenure import aio


def events(auth: tenure.Authority) -> int:
    return len(auth.events(0, 10000))


def stale_lease(auth: tenure.Authority, prod: str, job: str) -> tuple[tenure.Lease, tenure.Lease]:
    """A lease that is no longer its job's claim (still locally active), and
    the job's current lease."""
    old = auth.claim(prod, job, "w", LONG)
    auth.import_lease(old.export_token()).release()
    return old, auth.claim(prod, job, "w", LONG)


def mixed(auth: tenure.Authority, other: tenure.Authority,
          prod: str) -> tuple[list[tenure.Lease], tenure.Lease]:
    """Leases: [good, stale, expired, cancelled, closed, foreign, good again,
    good2], and the stale job's current lease."""
    for j in ("good", "stale", "expired", "cancelled", "closed", "foreign", "good2"):
        auth.submit(prod, j)
    expired = auth.claim(prod, "expired", "w", timedelta(seconds=1))
    good = auth.claim(prod, "good", "w", LONG)
    stale, current = stale_lease(auth, prod, "stale")
    cancelled = auth.claim(prod, "cancelled", "w", LONG)
    auth.cancel(prod, "cancelled")
    closed = auth.claim(prod, "closed", "w", LONG)
    closed.complete()
    foreign = other.claim(prod, "foreign", "w", LONG)
    good2 = auth.claim(prod, "good2", "w", LONG)
    time.sleep(1.5)  # past `expired`'s expiry
    return [good, stale, expired, cancelled, closed, foreign, good, good2], current


WANT = [None, tenure.StaleLease, tenure.LeaseExpired, tenure.Cancelled, tenure.LeaseClosed,
        tenure.InvalidArgument, tenure.InvalidArgument, None]
REFUSED_JOBS = ("stale", "expired", "cancelled", "closed", "foreign")


def check_outcomes(out: list[object], ok: object) -> None:
    assert len(out) == len(WANT)
    for got, want in zip(out, WANT):
        if want is None:
            assert got == ok
        else:
            assert type(got) is want, got
            assert isinstance(got, tenure.TenureError) and got.code == want.code  # type: ignore[attr-defined]


@pytest.fixture
def other(store: Union[Path, str]) -> tenure.Authority:
    return tenure.Authority(store)


def test_claim_next_many_takes_up_to_n_in_order(auth: tenure.Authority, prod: str) -> None:
    assert auth.claim_next_many(prod, "w", LONG, 4) == []  # none is not an error
    for i in range(5):
        auth.submit(prod, f"j{i}", priority=1 if i == 3 else 0)
    first = auth.claim_next_many(prod, "w", LONG, 3)
    assert [x.job for x in first] == ["j3", "j0", "j1"]
    assert len({x.claim_id for x in first}) == 3
    assert all(x.status == "active" and x.attempt == 1 for x in first)
    rest = auth.claim_next_many(prod, "w", LONG, 10)
    assert [x.job for x in rest] == ["j2", "j4"]
    for n in (0, 1001):
        with pytest.raises(tenure.InvalidArgument):
            auth.claim_next_many(prod, "w", LONG, n)
    with pytest.raises(TypeError):
        auth.claim_next_many(prod, "w", 30, 1)  # type: ignore[arg-type]
    out = auth.complete_many([(first[0], {"artifact": "a"}), first[1], (first[2], None),
                              *rest])
    assert out == [None] * 5
    assert {f.key: f.value for f in auth.facts(prod, "j3")}["artifact"] == "a"
    assert all(v.state == "completed" for v in auth.jobs(prod))


def test_mixed_complete_many_gives_per_lease_errors(auth: tenure.Authority,
                                                    other: tenure.Authority, prod: str) -> None:
    leases, current = mixed(auth, other, prod)
    before = {j: auth.job(prod, j).state for j in REFUSED_JOBS}
    n = events(auth)
    out = auth.complete_many([(x, {"k": x.job}) for x in leases])
    check_outcomes(out, None)
    assert events(auth) == n + 2
    assert {j: auth.job(prod, j).state for j in REFUSED_JOBS} == before
    assert auth.job(prod, "good").state == "completed"
    assert [f.value for f in auth.facts(prod, "good") if f.key == "k"] == ["good"]
    assert auth.facts(prod, "stale") == [] and auth.facts(prod, "cancelled") == []
    assert leases[1].status == "active" and leases[5].status == "active"
    current.complete()


@pytest.mark.parametrize("call", ["release", "fail", "renew"])
def test_mixed_release_fail_renew_many(auth: tenure.Authority, other: tenure.Authority,
                                       prod: str, call: str) -> None:
    leases, _ = mixed(auth, other, prod)
    before = {j: auth.job(prod, j).state for j in REFUSED_JOBS}
    n = events(auth)
    if call == "release":
        check_outcomes(auth.release_many(leases), "requested")
    elif call == "fail":
        out = auth.fail_many([(x, "boom") for x in leases])
        check_outcomes(out, "requested")
        assert auth.job(prod, "good").last_error == "boom"
    else:
        old = leases[0].expires_us
        check_outcomes(auth.renew_many(leases, timedelta(minutes=20)), None)
        assert leases[0].expires_us > old
    assert events(auth) == n + 2
    assert {j: auth.job(prod, j).state for j in REFUSED_JOBS} == before


def test_fail_many_permanence_and_bad_items(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "a")
    auth.submit(prod, "b")
    a, b = auth.claim_next_many(prod, "w", LONG, 2)
    n = events(auth)
    with pytest.raises(TypeError):
        auth.fail_many([a])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        auth.release_many([a, "not a lease"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        auth.complete_many([(a, 5)])  # type: ignore[list-item]
    with pytest.raises(tenure.InvalidArgument):
        auth.release_many([])
    assert events(auth) == n
    out = auth.fail_many([(a, "x" * 1025), (b, "bad input", True)])
    assert isinstance(out[0], tenure.InvalidArgument)  # too long: only this lease
    assert out[1] == "failed"
    assert a.status == "active"


def test_in_an_edit_a_batch_is_all_or_nothing(auth: tenure.Authority, prod: str) -> None:
    for j in ("e0", "e1", "e2"):
        auth.submit(prod, j)
    with auth.edit() as e:
        ls = e.claim_next_many(prod, "w", LONG, 3)
        assert [x.status for x in ls] == ["pending"] * 3
    assert [x.status for x in ls] == ["active"] * 3
    n = events(auth)
    with auth.edit() as e:
        with pytest.raises(tenure.InvalidArgument):
            e.complete_many([ls[0], ls[1], ls[0]])
        with pytest.raises(tenure.InvalidArgument):
            e.release_many([ls[0], ls[0]])
        assert e.renew_many(ls, timedelta(minutes=20)) == [None] * 3
        assert e.release_many(ls[:2]) == ["requested", "requested"]
        assert ls[0].status == "active"  # until the commit
    assert ls[0].status == "closed"
    assert events(auth) == n + 5
    with auth.edit() as e:
        with pytest.raises(tenure.LeaseClosed):
            e.fail_many([(ls[2], "x"), (ls[0], "y")])
        assert e.complete_many([(ls[2], {"k": "v"})]) == [None]
    assert auth.job(prod, "e2").state == "completed"
    assert auth.job(prod, "e0").state == "requested"


def test_aio_batched_calls(auth: tenure.Authority, prod: str) -> None:
    for i in range(4):
        auth.submit(prod, f"j{i}")

    async def main() -> None:
        async with aio.Authority(auth) as a:
            ls = await a.claim_next_many(prod, "w", LONG, 4)
            assert [x.job for x in ls] == ["j0", "j1", "j2", "j3"]
            assert isinstance(ls[0], aio.Lease)
            assert await a.renew_many([ls[0], ls[1].native], timedelta(minutes=20)) == [None, None]
            assert await a.release_many([ls[0]]) == ["requested"]
            out = await a.fail_many([(ls[1], "x", True), (ls[0], "again")])
            assert out[0] == "failed" and isinstance(out[1], tenure.LeaseClosed)
            assert await a.complete_many([(ls[2], {"k": "v"}), ls[3]]) == [None, None]
            async with a.edit() as e:
                more = await e.claim_next_many(prod, "w", LONG, 5)
                assert [x.job for x in more] == ["j0"]
                assert await e.renew_many(more, timedelta(minutes=30)) == [None]
                with pytest.raises(tenure.InvalidArgument):
                    await e.complete_many([more[0], more[0]])
                with pytest.raises(tenure.InvalidArgument):
                    await e.release_many([])
                assert await e.fail_many([(more[0], "r")]) == ["requested"]

    asyncio.run(main())
    assert auth.job(prod, "j0").state == "requested"
    assert auth.job(prod, "j2").state == "completed"


def test_aio_cancelled_claim_next_many_hands_every_lease_back(store: Union[Path, str],
                                                              auth: tenure.Authority,
                                                              prod: str) -> None:
    """Cancelled while waiting for the writer lock another handle's edit
    holds; the batch then commits and every lease it claimed is released."""
    if on_postgres():
        pytest.skip("an open edit holds no lock that a claim-next scan waits for "
                    "on PostgreSQL (SKIP LOCKED)")
    auth.submit(prod, "a")
    auth.submit(prod, "b")
    holder = tenure.Authority(store, busy_timeout=timedelta(seconds=60))
    blocker = holder.edit()
    blocker.submit(prod, "c")  # holds the writer lock until aborted

    async def main() -> None:
        async with aio.Authority(auth, max_workers=2) as a:
            task = asyncio.ensure_future(a.claim_next_many(prod, "w", LONG, 2))
            await asyncio.sleep(0.3)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            blocker.abort()
            assert await a.settle() == 2  # both leases of the batch
        for j in ("a", "b"):
            v = auth.job(prod, j)
            assert v.state == "requested" and v.attempts == 1

    asyncio.run(main())
