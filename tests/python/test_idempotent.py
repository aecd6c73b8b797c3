"""Idempotent calls through the wheel (docs/design.md, "Idempotent calls";
invariant 21): a claim retried under its ``ClaimRequest`` returns the same
lease; another secret under the same ID or other arguments is ``Conflict``;
transitions retried by a copy of the lease that never heard the answer (an
imported token) are replays; other facts are ``Conflict``; bad request IDs
are ``InvalidArgument`` and claim nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import tenure

TTL = timedelta(seconds=60)


def copy_of(auth: tenure.Authority, lease: tenure.Lease) -> tenure.Lease:
    return auth.import_lease(lease.export_token())


def test_a_claim_retried_under_its_request_returns_the_same_lease(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j0")
    auth.submit(prod, "j1")
    req = tenure.ClaimRequest("req-1")
    assert req.request_id == "req-1" and "req-1" in repr(req)
    first, replayed = auth.claim_with(prod, "j0", "w", TTL, req)
    assert not replayed
    events = len(auth.events())
    again, replayed = auth.claim_with(prod, "j0", "w", TTL, req)
    assert replayed
    assert (again.claim_id, again.attempt, again.expires_us) == (first.claim_id, 1, first.expires_us)
    assert len(auth.events()) == events
    with pytest.raises(tenure.Conflict):
        auth.claim_with(prod, "j0", "w", TTL, tenure.ClaimRequest("req-1"))
    with pytest.raises(tenure.Conflict):
        auth.claim_with(prod, "j0", "w2", TTL, req)
    with pytest.raises(tenure.Conflict):
        auth.claim_next_with(prod, "w", TTL, req)
    assert len(auth.events()) == events
    nxt = tenure.ClaimRequest("req-2")
    n1, r1 = auth.claim_next_with(prod, "w", TTL, nxt)
    n2, r2 = auth.claim_next_with(prod, "w", TTL, nxt)
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
