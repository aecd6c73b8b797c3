"""Requeue, progress checkpoints, claims across productions and claim gates
through the wheel (docs/design.md, "Requeue", "Progress checkpoints", "Claims
across productions", "Claim gates"), sync and asyncio; bad input raises a
typed error and changes nothing.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

import tenure
from conftest import LONG
from tenure import aio

SHORT = timedelta(milliseconds=300)
WAIT = timedelta(seconds=60)


def test_requeue_of_a_failed_job_and_its_refusals(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", b"1", max_attempts=2)
    auth.submit(prod, "live", b"1")
    old = auth.claim(prod, "j", "w", LONG)
    token = old.export_token()
    assert old.fail("bad input", permanent=True) == "failed"
    before = auth.production_events(prod, 0, 10_000)
    with pytest.raises(tenure.JobLive):
        auth.requeue(prod, "live")
    with pytest.raises(tenure.InvalidArgument):
        auth.requeue(prod, "j", extra_attempts=0)
    with pytest.raises(tenure.InvalidArgument):
        auth.requeue(prod, "j", extra_attempts=1001)
    with pytest.raises(tenure.NotFound):
        auth.requeue(prod, "nope")
    with pytest.raises(tenure.NotFound):
        auth.requeue("nope", "j")
    with pytest.raises(tenure.InvalidArgument):
        auth.requeue_all(prod, limit=0)
    assert auth.production_events(prod, 0, 10_000) == before
    auth.requeue(prod, "j", extra_attempts=1)
    events = auth.production_events(prod, 0, 10_000)
    assert events[: len(before)] == before
    assert [e.kind for e in events[len(before):]] == ["requeued"]
    v = auth.job(prod, "j")
    assert (v.state, v.attempts, v.max_attempts) == ("requested", 1, 2)
    new = auth.claim_next(prod, "w2", LONG)
    assert new.claim_id != old.claim_id
    with pytest.raises(tenure.StaleLease):
        auth.import_lease(token)
    new.fail("again", permanent=True)
    assert auth.requeue_all(prod, limit=10) == (1, False)


def test_checkpoint_carries_to_the_next_attempt(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", b"1")
    first = auth.claim(prod, "j", "w1", SHORT)
    assert first.progress() is None
    first.checkpoint(b"offset=10")
    first.renew_checkpoint(SHORT, b"offset=20")
    with pytest.raises(tenure.InvalidArgument):
        first.checkpoint(b"x" * 4097)
    assert auth.job(prod, "j").progress == b"offset=20"
    assert auth.jobs(prod)[0].progress is None
    second = auth.claim_next_wait(prod, "w2", LONG, WAIT)
    assert second.attempt == 2
    assert second.progress() == b"offset=20"
    with pytest.raises(tenure.StaleLease):
        first.checkpoint(b"offset=99")
    assert "offset" not in repr(auth.job(prod, "j"))
    second.complete()
    with pytest.raises(tenure.LeaseClosed):
        second.checkpoint(b"offset=99")
    assert auth.job(prod, "j").progress == b"offset=20"


def test_claims_across_productions_rotate(auth: tenure.Authority) -> None:
    for p, n in (("x", 2), ("y", 1)):
        auth.create_production(p)
        for i in range(n):
            auth.submit(p, f"{p}{i}")
    served = [auth.claim_next_across(["x", "y"], "w", LONG).production for _ in range(3)]
    assert served == ["x", "y", "x"]
    with pytest.raises(tenure.NoJobAvailable):
        auth.claim_next_across(["x", "y"], "w", LONG)
    with pytest.raises(tenure.NoJobAvailable):
        auth.claim_next_wait_across(["x", "y"], "w", LONG, timedelta(milliseconds=50))
    with pytest.raises(tenure.InvalidArgument):
        auth.claim_next_across([], "w", LONG)
    with pytest.raises(tenure.InvalidArgument):
        auth.claim_next_across(["x", "x"], "w", LONG)
    with pytest.raises(tenure.NotFound):
        auth.claim_next_many_across(["x", "nope"], "w", LONG, 2)


def test_gates_refuse_named_claims_and_read_back(auth: tenure.Authority, prod: str) -> None:
    for j in ("j1", "j2", "j3"):
        auth.submit(prod, j)
    g = auth.production_gates(prod)
    assert not g.paused and g.paused_us is None and g.paused_at is None
    assert g.concurrency_limit is None
    assert (g.rate_claims, g.rate_interval, g.rate_interval_us, g.rate_burst) == (None,) * 4
    assert g == auth.production_gates(prod)
    assert repr(g).startswith("Gates(paused_us=None")

    assert auth.pause_production(prod) is True
    assert auth.pause_production(prod) is False
    with pytest.raises(tenure.ProductionPaused):
        auth.claim(prod, "j1", "w", LONG)
    with pytest.raises(tenure.NoJobAvailable):
        auth.claim_next(prod, "w", LONG)
    g = auth.production_gates(prod)
    assert g.paused and g.paused_us is not None and g.paused_at is not None
    assert g.paused_at.tzinfo is not None
    assert auth.resume_production(prod) is True
    assert auth.resume_production(prod) is False

    auth.set_concurrency_limit(prod, 1)
    assert auth.production_gates(prod).concurrency_limit == 1
    held = auth.claim(prod, "j1", "w", LONG)
    with pytest.raises(tenure.ConcurrencyLimit):
        auth.claim(prod, "j2", "w", LONG)
    auth.clear_concurrency_limit(prod)
    assert auth.production_gates(prod).concurrency_limit is None

    auth.set_rate_limit(prod, 1, timedelta(hours=1), 1)
    g = auth.production_gates(prod)
    assert (g.rate_claims, g.rate_interval, g.rate_interval_us, g.rate_burst) == (
        1, timedelta(hours=1), 3_600_000_000, 1)
    assert "rate_claims=1" in repr(g)
    auth.claim(prod, "j2", "w", LONG)
    with pytest.raises(tenure.RateLimited):
        auth.claim(prod, "j3", "w", LONG)
    auth.clear_rate_limit(prod)
    assert auth.production_gates(prod).rate_claims is None
    held.complete()

    # The same calls inside an edit, gone with its rollback.
    with pytest.raises(RuntimeError):
        with auth.edit() as e:
            assert e.pause_production(prod) is True
            e.set_concurrency_limit(prod, 2)
            e.set_rate_limit(prod, 5, timedelta(seconds=1), 2)
            raise RuntimeError("roll back")
    g = auth.production_gates(prod)
    assert not g.paused and g.concurrency_limit is None and g.rate_claims is None
    with auth.edit() as e:
        e.set_concurrency_limit(prod, 3)
        e.clear_rate_limit(prod)
    assert auth.production_gates(prod).concurrency_limit == 3
    with auth.edit() as e:
        e.clear_concurrency_limit(prod)
        assert e.resume_production(prod) is False
    assert auth.production_gates(prod).concurrency_limit is None


@pytest.mark.parametrize("limit", [0, 1_000_001, 2**32 - 1, 2**32, -1, 2**70])
def test_bad_concurrency_limit_changes_nothing(auth: tenure.Authority, prod: str,
                                               limit: int) -> None:
    with pytest.raises(tenure.InvalidArgument):
        auth.set_concurrency_limit(prod, limit)
    assert auth.production_gates(prod).concurrency_limit is None


@pytest.mark.parametrize(("claims", "interval", "burst", "err"), [
    (0, timedelta(seconds=1), 1, tenure.InvalidArgument),
    (1, timedelta(seconds=1), 0, tenure.InvalidArgument),
    (1_000_001, timedelta(days=1), 1, tenure.InvalidArgument),
    (-1, timedelta(seconds=1), 1, tenure.InvalidArgument),
    (1, timedelta(seconds=1), 2**32, tenure.InvalidArgument),
    (1, timedelta(0), 1, tenure.InvalidDuration),
    (1, timedelta(microseconds=-1), 1, tenure.InvalidDuration),
    (1, timedelta(days=-1), 1, tenure.InvalidDuration),
    (1, timedelta(days=1, microseconds=1), 1, tenure.InvalidDuration),
    (1, timedelta.max, 1, tenure.InvalidDuration),
    (10, timedelta(microseconds=5), 1, tenure.InvalidDuration),
])
def test_bad_rate_limit_changes_nothing(auth: tenure.Authority, prod: str, claims: int,
                                        interval: timedelta, burst: int,
                                        err: type[tenure.TenureError]) -> None:
    with pytest.raises(err):
        auth.set_rate_limit(prod, claims, interval, burst)
    assert auth.production_gates(prod).rate_claims is None


def test_bad_gate_arguments(auth: tenure.Authority, prod: str) -> None:
    with pytest.raises(TypeError):
        auth.set_rate_limit(prod, 1, 1.5, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        auth.set_rate_limit(prod, 1, 1_000_000, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        auth.set_concurrency_limit(prod, "3")  # type: ignore[arg-type]
    for bad in ("", "has space", "bad/id", "x" * 1000, "p\0q"):
        for call in (auth.pause_production, auth.resume_production,
                     auth.clear_concurrency_limit, auth.clear_rate_limit,
                     auth.production_gates):
            with pytest.raises(tenure.InvalidArgument):
                call(bad)
        with pytest.raises(tenure.InvalidArgument):
            auth.set_concurrency_limit(bad, 1)
        with pytest.raises(tenure.InvalidArgument):
            auth.set_rate_limit(bad, 1, timedelta(seconds=1), 1)
    for call in (auth.pause_production, auth.resume_production,
                 auth.clear_concurrency_limit, auth.clear_rate_limit, auth.production_gates):
        with pytest.raises(tenure.NotFound):
            call("nope")
    with pytest.raises(tenure.NotFound):
        auth.set_concurrency_limit("nope", 1)
    with pytest.raises(tenure.NotFound):
        auth.set_rate_limit("nope", 1, timedelta(seconds=1), 1)
    g = auth.production_gates(prod)
    assert not g.paused and g.concurrency_limit is None and g.rate_claims is None


def test_aio_forms(auth: tenure.Authority) -> None:
    async def main() -> None:
        async with aio.Authority(auth) as a:
            await a.create_production("p")
            await a.submit("p", "j", b"1")
            lease = await a.claim_next_across(["p"], "w", LONG)
            await lease.checkpoint(b"half")
            assert await lease.progress() == b"half"
            await lease.fail("x", permanent=True)
            await a.requeue("p", "j")
            assert (await a.job("p", "j")).state == "requested"
            again = await a.claim_next_wait_across(["p"], "w", LONG, WAIT)
            assert await again.progress() == b"half"
            await again.complete()
            assert await a.requeue_all("p") == (0, False)
            await a.submit("p", "k")
            assert await a.pause_production("p") is True
            with pytest.raises(tenure.ProductionPaused):
                await a.claim("p", "k", "w", LONG)
            assert (await a.production_gates("p")).paused
            assert await a.resume_production("p") is True
            await a.set_concurrency_limit("p", 2)
            await a.set_rate_limit("p", 3, timedelta(seconds=1), 1)
            g = await a.production_gates("p")
            assert (g.concurrency_limit, g.rate_claims, g.rate_burst) == (2, 3, 1)
            with pytest.raises(tenure.InvalidArgument):
                await a.set_concurrency_limit("p", 0)
            with pytest.raises(tenure.InvalidDuration):
                await a.set_rate_limit("p", 1, timedelta(0), 1)
            with pytest.raises(tenure.NotFound):
                await a.production_gates("nope")
            async with a.edit() as e:
                await e.clear_concurrency_limit("p")
                await e.clear_rate_limit("p")
                assert await e.pause_production("p") is True
                assert await e.resume_production("p") is True
            g = await a.production_gates("p")
            assert g.concurrency_limit is None and g.rate_claims is None and not g.paused

    asyncio.run(main())
