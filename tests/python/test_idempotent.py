"""Idempotent calls through the wheel (docs/design.md, "Idempotent calls";
invariant 21): a claim retried under its ``ClaimRequest`` returns the same
lease; another secret under the same ID or other arguments is ``Conflict``;
transitions retried by a copy of the lease that never heard the answer (an
imported token) are replays; other facts are ``Conflict``; bad request IDs
are ``InvalidArgument`` and claim nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Union

import pytest

import tenure
from conftest import LONG, wait_until
from tenure import aio

TTL = timedelta(seconds=60)


def copy_of(auth: tenure.Authority, lease: tenure.Lease) -> tenure.Lease:
    return auth.import_lease(lease.export_token())


def test_a_claim_retried_under_its_request_returns_the_same_lease(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j0")
    auth.submit(prod, "j1")
    req = tenure.ClaimRequest("req-1")
    assert req.request_id == "req-1" and "req-1" in repr(req)
    first, replayed = auth.claim_idempotent(prod, "j0", "w", TTL, req)
    assert not replayed
    events = len(auth.events())
    again, replayed = auth.claim_idempotent(prod, "j0", "w", TTL, req)
    assert replayed
    assert (again.claim_id, again.attempt, again.expires_us) == (first.claim_id, 1, first.expires_us)
    assert len(auth.events()) == events
    with pytest.raises(tenure.Conflict):
        auth.claim_idempotent(prod, "j0", "w", TTL, tenure.ClaimRequest("req-1"))
    with pytest.raises(tenure.Conflict):
        auth.claim_idempotent(prod, "j0", "w2", TTL, req)
    with pytest.raises(tenure.Conflict):
        auth.claim_next_idempotent(prod, "w", TTL, req)
    assert len(auth.events()) == events
    nxt = tenure.ClaimRequest("req-2")
    n1, r1 = auth.claim_next_idempotent(prod, "w", TTL, nxt)
    n2, r2 = auth.claim_next_idempotent(prod, "w", TTL, nxt)
    assert (n1.job, r1, r2, n2.claim_id) == ("j1", False, True, n1.claim_id)
    first.release()
    n1.release()


@pytest.mark.parametrize("bad", ["", " r", "a/b", "r" * 129])
def test_bad_request_ids_are_invalid_argument(bad: str) -> None:
    with pytest.raises(tenure.InvalidArgument):
        tenure.ClaimRequest(bad)


def test_transitions_retried_after_they_committed_are_replays(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j0")
    auth.submit(prod, "j1", max_attempts=5)
    lease = auth.claim(prod, "j0", "w", TTL)
    retry, other = copy_of(auth, lease), copy_of(auth, lease)
    lease.complete({"out": "o1"})
    events = len(auth.events())
    with pytest.raises(tenure.Conflict):
        other.complete_idempotent({"out": "o2"})
    with pytest.raises(tenure.LeaseClosed):
        other.complete({"out": "o1"})
    assert retry.complete_idempotent({"out": "o1"}) is True
    assert len(auth.events()) == events

    lease = auth.claim(prod, "j1", "w", TTL)
    retry, other = copy_of(auth, lease), copy_of(auth, lease)
    lease.fail("boom")
    with pytest.raises(tenure.Conflict):
        other.fail_idempotent("boom", permanent=True)
    assert retry.fail_idempotent("boom") == ("requested", True)

    lease = auth.claim(prod, "j1", "w", TTL)
    retry = copy_of(auth, lease)
    lease.release()
    assert retry.release_idempotent() == ("requested", True)

    lease = auth.claim(prod, "j1", "w", TTL)
    expires, replayed = lease.renew_idempotent(timedelta(seconds=120))
    assert (expires, replayed) == (lease.expires_us, False)
    lease.release()


def test_a_failure_retried_with_its_retry_delay_is_a_replay(auth: tenure.Authority, prod: str) -> None:
    """``fail_idempotent(retry_after=)`` is the core's
    ``fail_retry_after_idempotent``: the same reason and delay is a replay,
    another delay (or none) is ``Conflict``; with ``permanent`` it is
    ``InvalidArgument``; none of these writes."""
    auth.submit(prod, "j", max_attempts=5)
    lease = auth.claim(prod, "j", "w", TTL)
    retry, other = copy_of(auth, lease), copy_of(auth, lease)
    delay = timedelta(seconds=30)
    assert lease.fail("mirror down", retry_after=delay) == "requested"
    view, events = auth.job(prod, "j"), len(auth.events())
    assert view.due_us is not None
    for reason, after in (("mirror down", timedelta(seconds=31)), ("mirror down", timedelta(0)),
                          ("other", delay)):
        with pytest.raises(tenure.Conflict):
            other.fail_idempotent(reason, retry_after=after)
    with pytest.raises(tenure.InvalidArgument):
        other.fail_idempotent("mirror down", permanent=True, retry_after=delay)
    with pytest.raises(TypeError, match="retry_after"):
        other.fail_idempotent("mirror down", retry_after=30)  # type: ignore[arg-type]
    assert retry.fail_idempotent("mirror down", retry_after=delay) == ("requested", True)
    assert retry.status == "closed"
    assert auth.job(prod, "j") == view and len(auth.events()) == events

    with pytest.raises(tenure.NotClaimable):  # the job waits for its retry delay
        auth.claim(prod, "j", "w", TTL)
    # A fresh idempotent failure with a delay applies it (not a replay).
    auth.submit(prod, "k")
    fresh = auth.claim(prod, "k", "w", TTL)
    assert fresh.fail_idempotent("again", retry_after=delay) == ("requested", False)
    assert auth.job(prod, "k").due_us is not None


def test_a_renewal_retried_up_to_the_hold_limit_is_a_replay(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", max_hold=timedelta(seconds=90))
    lease = auth.claim(prod, "j", "w", TTL)
    retry = copy_of(auth, lease)
    # Capped by the hold limit: a retry asks for the same capped expiry.
    capped, replayed = lease.renew_idempotent(timedelta(seconds=120))
    assert not replayed and capped == lease.expires_us
    events = len(auth.events())
    with pytest.raises(tenure.HoldLimit):
        retry.renew(timedelta(seconds=120))
    assert retry.renew_idempotent(timedelta(seconds=120)) == (capped, True)
    assert retry.expires_us == capped and len(auth.events()) == events
    with pytest.raises(tenure.NotExtended):
        retry.renew_idempotent(timedelta(seconds=1))
    lease.release()


def outcome_kinds(out: Sequence[object]) -> list[object]:
    """Each outcome of a batch: its value, or its error's class."""
    return [type(x) if isinstance(x, tenure.TenureError) else x for x in out]


def test_idempotent_batches_give_each_lease_its_own_outcome(auth: tenure.Authority, prod: str) -> None:
    """Mixed batches: a replay, a fresh call and a refusal in one call, each
    lease answered as alone; only the fresh one writes."""
    for i in range(4):
        auth.submit(prod, f"c{i}")
    ls = auth.claim_next_many(prod, "w", TTL, 4)
    copies = [copy_of(auth, x) for x in ls]
    twins = [copy_of(auth, x) for x in ls]  # copies that hear nothing below
    facts = {"k": "v"}
    ls[0].complete(facts)
    ls[1].release()
    events = len(auth.events())
    out = auth.complete_many_idempotent([(copies[0], facts), (copies[1], facts),
                                         (copies[2], facts), (copy_of(auth, ls[3]), {"k": "w"})])
    assert outcome_kinds(out) == [True, tenure.LeaseClosed, False, False]
    assert len(auth.events()) == events + 2  # the two fresh completions
    # The same completion again: now every accepted one is a replay, and
    # other facts are this lease's Conflict.
    out = auth.complete_many_idempotent([(twins[2], facts), (twins[3], {"k": "x"}), twins[0]])
    assert outcome_kinds(out) == [True, tenure.Conflict, tenure.Conflict]
    assert isinstance(out[1], tenure.Conflict) and out[1].code == tenure.Conflict("").code
    assert len(auth.events()) == events + 2
    released = auth.release_many_idempotent([copies[1], twins[2]])
    assert outcome_kinds(released) == [("requested", True), tenure.LeaseClosed]
    # The plain batched call keeps lease_closed for a copy that never heard.
    assert outcome_kinds(auth.complete_many([(ls[2], facts)])) == [tenure.LeaseClosed]

    for i in range(3):
        auth.submit(prod, f"f{i}", max_attempts=3)
    fs = [auth.claim(prod, f"f{i}", "w", TTL) for i in range(3)]
    retry, other = copy_of(auth, fs[0]), copy_of(auth, fs[0])
    fs[0].fail("boom")
    events = len(auth.events())
    failed = auth.fail_many_idempotent([(other, "boom", True), (fs[1], "gone", True)])
    assert outcome_kinds(failed) == [tenure.Conflict, ("failed", False)]
    failed = auth.fail_many_idempotent([(retry, "boom"), (fs[1], "gone", True)])
    assert outcome_kinds(failed) == [("requested", True), tenure.LeaseClosed]
    assert len(auth.events()) == events + 1
    assert auth.job(prod, "f1").state == "failed"

    renewed = fs[2]
    auth.submit(prod, "h", max_hold=timedelta(seconds=90))
    held = auth.claim(prod, "h", "w", TTL)
    held_retry = copy_of(auth, held)
    capped, _ = held.renew_idempotent(timedelta(seconds=120))
    events = len(auth.events())
    renewals = auth.renew_many_idempotent([held_retry, renewed, retry], timedelta(seconds=120))
    assert renewals[0] == (capped, True)
    assert renewals[1] == (renewed.expires_us, False)
    assert isinstance(renewals[2], tenure.LeaseClosed)  # its failure's replay closed it
    assert len(auth.events()) == events + 1
    held.release()
    renewed.release()


def test_idempotent_batches_refuse_bad_input_whole(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", TTL)
    events = len(auth.events())
    for call in (lambda: auth.renew_many_idempotent([], TTL),
                 lambda: auth.release_many_idempotent([]),
                 lambda: auth.fail_many_idempotent([]),
                 lambda: auth.complete_many_idempotent([]),
                 lambda: auth.release_many_idempotent([lease] * 1001)):
        with pytest.raises(tenure.InvalidArgument):
            call()
    for call in (lambda: auth.renew_many_idempotent([lease], 5),  # type: ignore[arg-type]
                 lambda: auth.release_many_idempotent([lease, "x"]),  # type: ignore[list-item]
                 lambda: auth.fail_many_idempotent([lease]),  # type: ignore[list-item]
                 lambda: auth.complete_many_idempotent([(lease, 1)]),  # type: ignore[list-item]
                 lambda: auth.release_many_idempotent(None)):  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            call()
    assert len(auth.events()) == events and lease.status == "active"
    lease.release()


# -- tenure.aio: the same calls as coroutines ------------------------------------


def test_aio_idempotent_calls_answer_as_the_sync_ones(auth: tenure.Authority, prod: str) -> None:
    for j in ("j0", "j1", "j2", "j3"):
        auth.submit(prod, j, max_attempts=5)

    async def main() -> None:
        async with aio.Authority(auth, max_workers=4) as a:
            req = tenure.ClaimRequest("areq-1")
            first, replayed = await a.claim_idempotent(prod, "j0", "w", TTL, req)
            assert isinstance(first, aio.Lease) and not replayed
            again, replayed = await a.claim_idempotent(prod, "j0", "w", TTL, req)
            assert replayed and again.claim_id == first.claim_id
            with pytest.raises(tenure.Conflict):
                await a.claim_next_idempotent(prod, "w", TTL, req)
            nreq = tenure.ClaimRequest("areq-2")
            n1, r1 = await a.claim_next_idempotent(prod, "w", TTL, nreq)
            n2, r2 = await a.claim_next_idempotent(prod, "w", TTL, nreq)
            assert (n1.job, r1, r2, n2.claim_id) == ("j1", False, True, n1.claim_id)

            # Lease forms: a copy that never heard the answer replays.
            retry = a.lease(copy_of(auth, first.native))
            await first.complete({"k": "v"})
            assert await retry.complete_idempotent({"k": "v"}) is True
            retry = a.lease(copy_of(auth, n1.native))
            assert await n1.fail_idempotent("boom", retry_after=timedelta(0)) == ("requested", False)
            assert await retry.fail_idempotent("boom", retry_after=timedelta(0)) == ("requested", True)
            lease = await a.claim(prod, "j2", "w", TTL)
            retry = a.lease(copy_of(auth, lease.native))
            expires, replayed = await lease.renew_idempotent(2 * TTL)
            assert (expires, replayed) == (lease.expires_us, False)
            assert await lease.release_idempotent() == ("requested", False)
            assert await retry.release_idempotent() == ("requested", True)

            # Batched forms take aio or native leases.
            ls = [await a.claim(prod, j, "w", TTL) for j in ("j2", "j3")]
            copies = [a.lease(copy_of(auth, x.native)) for x in ls]
            assert outcome_kinds(await a.renew_many_idempotent(ls, 2 * TTL)) == [
                (ls[0].expires_us, False), (ls[1].expires_us, False)]
            await ls[0].release()
            assert await a.release_many_idempotent([copies[0].native, ls[1]]) == [
                ("requested", True), ("requested", False)]
            ls = [await a.claim(prod, j, "w", TTL) for j in ("j2", "j3")]
            copies = [a.lease(copy_of(auth, x.native)) for x in ls]
            assert await a.fail_many_idempotent([(ls[0], "x"), (ls[1], "y", True)]) == [
                ("requested", False), ("failed", False)]
            assert await a.fail_many_idempotent([(copies[0], "x")]) == [("requested", True)]
            lease = await a.claim(prod, "j2", "w", TTL)
            copy = a.lease(copy_of(auth, lease.native))
            assert await a.complete_many_idempotent([lease]) == [False]
            out = await a.complete_many_idempotent([(copy, {"k": "other"})])
            assert outcome_kinds(out) == [tenure.Conflict]

    asyncio.run(main())
    assert auth.job(prod, "j2").state == "completed"


def test_aio_edit_claims_under_a_request(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j0")
    auth.submit(prod, "j1")

    async def main() -> None:
        async with aio.Authority(auth, max_workers=2) as a:
            req, nreq = tenure.ClaimRequest("e-1"), tenure.ClaimRequest("e-2")
            async with a.edit() as e:
                lease, replayed = await e.claim_idempotent(prod, "j0", "w", TTL, req)
                assert (lease.status, replayed) == ("pending", False)
                again, replayed = await e.claim_idempotent(prod, "j0", "w", TTL, req)
                assert replayed and again.claim_id == lease.claim_id
                nxt, replayed = await e.claim_next_idempotent(prod, "w", TTL, nreq)
                assert (nxt.job, replayed) == ("j1", False)
            assert lease.status == "active"
            # After the commit a retry outside the edit is a replay too.
            again, replayed = await a.claim_idempotent(prod, "j0", "w", TTL, req)
            assert replayed and again.claim_id == lease.claim_id
            _, replayed = await a.claim_next_idempotent(prod, "w", TTL, nreq)
            assert replayed
            # An aborted edit records no request: the same ID claims afresh.
            await lease.release()
            with pytest.raises(RuntimeError):
                async with a.edit() as e:
                    aborted, _ = await e.claim_next_idempotent(prod, "w", TTL,
                                                         tenure.ClaimRequest("e-3"))
                    raise RuntimeError("abort")
            assert aborted.status == "closed"
            fresh, replayed = await a.claim_next_idempotent(prod, "w", TTL, tenure.ClaimRequest("e-3"))
            assert not replayed and fresh.job == "j0"
            await fresh.release()
            await nxt.release()

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["claim_idempotent", "claim_next_idempotent", "claim_next_many_idempotent"])
def test_aio_cancelled_claim_under_a_request_is_handed_back(auth: tenure.Authority, prod: str,
                                                            kind: str) -> None:
    """The task is cancelled after its claim committed and before it
    resumed (the event loop is held until the job is claimed): every lease
    the call returned is released, the jobs are requested again, and a
    retry of the request gets that claim's own error (``LeaseClosed``)
    instead of a new claim."""
    auth.submit(prod, "j")
    req = tenure.ClaimRequest("cancelled-1")

    async def claim(a: aio.Authority) -> list[Union[aio.Lease, tenure.TenureError]]:
        if kind == "claim_idempotent":
            return [(await a.claim_idempotent(prod, "j", "w", LONG, req))[0]]
        if kind == "claim_next_idempotent":
            return [(await a.claim_next_idempotent(prod, "w", LONG, req))[0]]
        claims, replayed = await a.claim_next_many_idempotent(prod, "w", LONG, 2, req)
        assert replayed
        return claims

    async def main() -> None:
        async with aio.Authority(auth, max_workers=2) as a:
            task = asyncio.ensure_future(claim(a))
            await asyncio.sleep(0)  # the task submits its call, then waits for it
            # Hold the loop until the claim committed: the task cannot resume.
            wait_until(lambda: auth.job(prod, "j").state == "claimed", "the claim")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await a.settle() == 1 and a.handed_back == 1
            assert auth.job(prod, "j").state == "requested"
            if kind == "claim_next_many_idempotent":
                assert outcome_kinds(await claim(a)) == [tenure.LeaseClosed]
            else:
                with pytest.raises(tenure.LeaseClosed):
                    await claim(a)
        view = auth.job(prod, "j")
        assert view.state == "requested" and view.attempts == 1
        kinds = [e.kind for e in auth.production_events(prod) if e.job == "j"]
        assert kinds == ["submitted", "claimed", "released"]

    asyncio.run(main())


def test_a_batch_claim_retried_under_its_request_returns_the_same_leases(
        auth: tenure.Authority, prod: str) -> None:
    req = tenure.ClaimRequest("batch-1")
    assert auth.claim_next_many_idempotent(prod, "w", TTL, 3, req) == ([], False)  # none: unused
    for j in ("j0", "j1"):
        auth.submit(prod, j)
    claims, replayed = auth.claim_next_many_idempotent(prod, "w", TTL, 3, req)
    assert not replayed and [c.job for c in claims if isinstance(c, tenure.Lease)] == ["j0", "j1"]
    first = [c for c in claims if isinstance(c, tenure.Lease)]
    events = len(auth.events())
    again, replayed = auth.claim_next_many_idempotent(prod, "w", TTL, 3, req)
    assert replayed
    assert [(c.claim_id, c.attempt, c.expires_us) for c in again
            if isinstance(c, tenure.Lease)] == [(c.claim_id, 1, c.expires_us) for c in first]
    assert len(again) == 2 and len(auth.events()) == events
    for call in (lambda: auth.claim_next_many_idempotent(prod, "w", TTL, 2, req),
                 lambda: auth.claim_next_many_idempotent(prod, "w2", TTL, 3, req),
                 lambda: auth.claim_next_many_idempotent(prod, "w", 2 * TTL, 3, req),
                 lambda: auth.claim_next_many_idempotent(prod, "w", TTL, 3,
                                                   tenure.ClaimRequest("batch-1")),
                 lambda: auth.claim_next_idempotent(prod, "w", TTL, req)):
        with pytest.raises(tenure.Conflict):
            call()
    with pytest.raises(tenure.InvalidArgument):
        auth.claim_next_many_idempotent(prod, "w", TTL, 0, tenure.ClaimRequest("batch-2"))
    assert len(auth.events()) == events
    # Each member is answered on its own: a completed one by its error.
    first[0].complete()
    claims, replayed = auth.claim_next_many_idempotent(prod, "w", TTL, 3, req)
    assert replayed and outcome_kinds(claims[:1]) == [tenure.LeaseClosed]
    assert isinstance(claims[1], tenure.Lease) and claims[1].claim_id == first[1].claim_id
    claims[1].release()
    assert len(auth.events()) == events + 2


def test_an_edit_claims_a_batch_under_a_request(auth: tenure.Authority, prod: str) -> None:
    for j in ("j0", "j1"):
        auth.submit(prod, j)
    req = tenure.ClaimRequest("edit-batch")
    with auth.edit() as e:
        claims, replayed = e.claim_next_many_idempotent(prod, "w", TTL, 2, req)
        assert not replayed
        assert [c.status for c in claims if isinstance(c, tenure.Lease)] == ["pending"] * 2
    assert [c.status for c in claims if isinstance(c, tenure.Lease)] == ["active"] * 2
    again, replayed = auth.claim_next_many_idempotent(prod, "w", TTL, 2, req)
    assert replayed and [c.claim_id for c in again if isinstance(c, tenure.Lease)] == [
        c.claim_id for c in claims if isinstance(c, tenure.Lease)]
    assert outcome_kinds(auth.release_many([c for c in claims if isinstance(c, tenure.Lease)])) == [
        "requested", "requested"]

    async def main() -> None:
        async with aio.Authority(auth, max_workers=2) as a:
            areq = tenure.ClaimRequest("aio-batch")
            async with a.edit() as e:
                got, replayed = await e.claim_next_many_idempotent(prod, "w", TTL, 5, areq)
                assert not replayed and all(isinstance(c, aio.Lease) for c in got)
            again, replayed = await a.claim_next_many_idempotent(prod, "w", TTL, 5, areq)
            assert replayed and len(again) == len(got) == 2
            for c in again:
                assert isinstance(c, aio.Lease)
                await c.release()

    asyncio.run(main())
