"""Requeue, progress checkpoints and claims across productions through the
wheel (docs/design.md, "Requeue", "Progress checkpoints", "Claims across
productions"), sync and asyncio; bad input raises a typed error and changes
nothing.
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

    asyncio.run(main())
