"""Keep-alive: Lease.keep_alive renews through the ordinary renewal, stops on
exit without releasing, and reports a refusal with its own error class."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

import tenure
from conftest import LONG, wait_until

TTL = timedelta(seconds=2)
EVERY = timedelta(milliseconds=100)


def test_a_keeper_keeps_a_short_lease_alive_and_never_releases(auth: tenure.Authority,
                                                                prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", TTL)
    first = lease.expires_us
    with lease.keep_alive(TTL, EVERY) as keeper:
        assert keeper.status == "running"
        # Past the first expiry: only the renewals keep the claim alive.
        wait_until(lambda: auth.clock().now_us > first + 500_000, "the first expiry to pass")
        view = auth.job(prod, "j")
        assert view.state == "claimed" and view.claim_id == lease.claim_id
        assert keeper.renewals > 0 and lease.expires_us > first
    assert keeper.status == "stopped" and keeper.error is None
    renewals, expires = keeper.renewals, lease.expires_us
    seen = [e.kind for e in auth.production_events(prod)]
    assert seen.count("renewed") == renewals
    assert "released" not in seen
    time.sleep(0.3)
    assert keeper.renewals == renewals and lease.expires_us == expires  # none after stop
    assert [e.kind for e in auth.production_events(prod)] == seen
    assert auth.job(prod, "j").state == "claimed"  # a keeper never releases
    assert "claim_id=" in repr(keeper) and "status='stopped'" in repr(keeper)
    assert lease.export_token() not in repr(keeper)
    # Stopped keepers stay stopped; the lease expires on its own.
    keeper.stop()
    wait_until(lambda: auth.job(prod, "j").state == "expired", "the expiry")


def test_dropping_a_keeper_stops_it_without_releasing(auth: tenure.Authority,
                                                      prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", TTL)
    keeper = lease.keep_alive(TTL, EVERY)
    wait_until(lambda: keeper.renewals >= 1, "a renewal")
    del keeper
    seen = [e.kind for e in auth.production_events(prod)]
    time.sleep(0.3)
    assert [e.kind for e in auth.production_events(prod)] == seen
    assert auth.job(prod, "j").state == "claimed"
    lease.complete()


@pytest.mark.parametrize("refusal", ["cancelled", "not_extended"])
def test_a_refused_renewal_stops_the_keeper_with_its_own_error(auth: tenure.Authority,
                                                               prod: str, refusal: str) -> None:
    auth.submit(prod, "j")
    if refusal == "cancelled":
        lease = auth.claim(prod, "j", "w", TTL)
        expected: type[tenure.TenureError] = tenure.Cancelled
    else:  # a renewal for less than the expiry already held
        lease = auth.claim(prod, "j", "w", LONG)
        expected = tenure.NotExtended
    with pytest.raises(expected) as raised:
        with lease.keep_alive(TTL, EVERY) as keeper:
            if refusal == "cancelled":
                auth.cancel(prod, "j")
            wait_until(lambda: keeper.status == "refused", "the refusal")
    err = keeper.error
    assert isinstance(err, expected) and err.code == expected.code
    assert err.code_name == refusal
    assert raised.value is err  # the same object every time
    if refusal == "not_extended":
        assert keeper.renewals == 0
    # An exception from the block itself takes precedence over the refusal.
    with pytest.raises(KeyError):
        with keeper:
            raise KeyError("mine")


def test_a_keeper_of_a_closed_lease_stops_quietly(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", TTL)
    with lease.keep_alive(TTL, EVERY) as keeper:
        lease.complete()
        wait_until(lambda: keeper.status == "lease_closed", "the keeper to notice")
    assert keeper.error is None
    with pytest.raises(tenure.LeaseClosed):
        lease.keep_alive(TTL, EVERY)


def test_keeper_arguments(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", TTL)
    with pytest.raises(TypeError, match="every"):
        lease.keep_alive(TTL, 1)  # type: ignore[arg-type]
    with pytest.raises(tenure.InvalidDuration):
        lease.keep_alive(TTL, TTL)  # not shorter than the TTL
    with pytest.raises(tenure.InvalidDuration):
        lease.keep_alive(timedelta(0))
    with lease.keep_alive(TTL) as keeper:  # every = ttl / 3
        assert keeper.status == "running"
    lease.release()
