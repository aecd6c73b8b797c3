"""Durations: datetime.timedelta only, exact, range-checked by the core."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import tenure

MAX = timedelta(hours=24)
US = timedelta(microseconds=1)


class Td(timedelta):
    """A timedelta subclass (accepted: it is a timedelta)."""


class NanoTd(timedelta):
    """Like pandas.Timedelta: extra sub-microsecond precision."""

    nanoseconds = 500


@pytest.mark.parametrize(
    "value, outcome",
    [
        (US, "ok"),
        (timedelta(seconds=30), "ok"),
        (MAX, "ok"),
        (Td(minutes=5), "ok"),
        (timedelta(0), tenure.InvalidDuration),
        (-US, tenure.InvalidDuration),
        (timedelta(days=-1), tenure.InvalidDuration),
        (MAX + US, tenure.InvalidDuration),
        (timedelta(days=2), tenure.InvalidDuration),
        (timedelta.max, tenure.InvalidDuration),  # overflows i64 microseconds: checked
        (timedelta.min, tenure.InvalidDuration),
        (NanoTd(seconds=1), tenure.InvalidDuration),  # never rounded
        (0, TypeError),
        (30, TypeError),
        (True, TypeError),
        (30.0, TypeError),
        (0.5, TypeError),
        (None, TypeError),
        ("30s", TypeError),
        (b"30", TypeError),
        (object(), TypeError),
    ],
    ids=lambda v: repr(v) if not isinstance(v, type) else v.__name__,
)
def test_ttl_table(auth: tenure.Authority, prod: str, value: Any, outcome: Any) -> None:
    # A lease with a 1 µs TTL may be expired before its claim commits, which
    # the core refuses; the valid-range check is what is tested here, so the
    # valid values go through renew of a long lease whose expiry they extend
    # or through a claim.
    auth.submit(prod, "j")
    if outcome == "ok":
        if value == US:
            lease = auth.claim(prod, "j", "w", timedelta(hours=1))
            with pytest.raises(tenure.NotExtended):  # in range; the rule refuses it
                lease.renew(value)
        else:
            lease = auth.claim(prod, "j", "w", value)
            assert lease.expires_us - auth.job(prod, "j").updated_us <= int(value / US)
        return
    for call in (
        lambda: auth.claim(prod, "j", "w", value),
        lambda: auth.claim_next(prod, "w", value),
    ):
        with pytest.raises(outcome) as info:
            call()
        if outcome is TypeError:
            assert "ttl" in str(info.value) and "timedelta" in str(info.value)
        else:
            assert isinstance(info.value, ValueError)
            assert isinstance(info.value, tenure.TenureError)
            assert info.value.code == tenure.InvalidDuration.code == 2
    assert auth.job(prod, "j").state == "requested"  # nothing was claimed
    lease = auth.claim(prod, "j", "w", timedelta(minutes=1))
    with pytest.raises(outcome):
        lease.renew(value)
    with pytest.raises(outcome):
        with auth.edit() as e:
            e.renew(lease, value)
    assert lease.status == "active"


def test_exact_conversion(auth: tenure.Authority, prod: str) -> None:
    # 23 h 59 min 59.999999 s converts to exactly 86_399_999_999 µs.
    auth.submit(prod, "j")
    ttl = timedelta(hours=23, minutes=59, seconds=59, microseconds=999_999)
    lease = auth.claim(prod, "j", "w", ttl)
    claimed = [e for e in auth.events() if e.kind == "claimed"][-1]
    assert lease.expires_us - claimed.at_us == 86_399_999_999


def test_busy_timeout_is_a_timedelta_too(tmp_path: Any) -> None:
    for bad in (5, 5.0, "5s"):
        with pytest.raises(TypeError, match="busy_timeout"):
            tenure.Authority(tmp_path / "s.db", busy_timeout=bad)


DAY366 = timedelta(days=366)


@pytest.mark.parametrize(
    "value, outcome",
    [
        (timedelta(0), "ok"),
        (US, "ok"),
        (Td(minutes=5), "ok"),
        (timedelta(days=1, microseconds=7), "ok"),
        (DAY366, "ok"),
        (DAY366 + US, tenure.InvalidDuration),
        (-US, tenure.InvalidDuration),
        (timedelta(days=-400), tenure.InvalidDuration),
        (timedelta.max, tenure.InvalidDuration),
        (timedelta.min, tenure.InvalidDuration),
        (NanoTd(seconds=1), tenure.InvalidDuration),  # never rounded
        (0, TypeError),
        (1.5, TypeError),
        (True, TypeError),
        ("1h", TypeError),
        (object(), TypeError),
    ],
    ids=lambda v: repr(v) if not isinstance(v, type) else v.__name__,
)
def test_delay_table(auth: tenure.Authority, prod: str, value: Any, outcome: Any) -> None:
    """Delays (``not_before``, ``max_hold``, ``retry_after``, ``Retry.delay``,
    ``Backoff`` steps): a ``timedelta`` of 0 ..= 366 days, exact; a hold
    limit and a back-off base must also be positive (the core's rules)."""
    auth.submit(prod, "held", max_attempts=5)
    lease = auth.claim(prod, "held", "w", timedelta(hours=1))
    before = len(auth.events(0, 10_000))
    us = int(value / US) if outcome == "ok" else 0
    calls: list[tuple[str, Any, Any]] = [
        ("not_before", lambda: auth.submit(prod, "nb", not_before=value), outcome),
        ("not_before", lambda: tenure.JobSpec("nb", not_before=value), outcome),
        ("max_hold", lambda: auth.submit(prod, "mh", max_hold=value),
         tenure.InvalidDuration if outcome == "ok" and us == 0 else outcome),
        ("max_hold", lambda: auth.submit_many(prod, [tenure.JobSpec("mh", max_hold=value)]),
         tenure.InvalidDuration if outcome == "ok" and us == 0 else outcome),
        ("base", lambda: tenure.Backoff(value, DAY366),
         tenure.InvalidDuration if outcome == "ok" and us == 0 else outcome),
        ("cap", lambda: tenure.Backoff(US, value),
         tenure.InvalidDuration if outcome == "ok" and us == 0 else outcome),
        ("delay", lambda: tenure.Retry("r", delay=value), outcome),
    ]
    for param, call, expected in calls:
        if expected == "ok":
            call()
            continue
        with pytest.raises(expected) as info:
            call()
        if expected is TypeError:
            assert param in str(info.value) and "timedelta" in str(info.value)
        else:
            assert info.value.code == tenure.InvalidDuration.code == 2
    if outcome == "ok":
        nb = auth.job(prod, "nb")
        assert nb.due_us == (nb.created_us + us if us else None)
        if us:
            assert auth.job(prod, "mh").max_hold == value
        assert lease.fail("retry", retry_after=value) == "requested"
        held = auth.job(prod, "held")
        assert held.due_us == (held.updated_us + us if us else None)
        return
    with pytest.raises(outcome):
        lease.fail("retry", retry_after=value)
    with pytest.raises(outcome):
        with auth.edit() as e:
            e.fail(lease, "retry", retry_after=value)
    # Refused: nothing was written, the lease is untouched.
    assert len(auth.events(0, 10_000)) == before
    assert lease.status == "active" and auth.job(prod, "held").state == "claimed"
    assert [j.job for j in auth.jobs(prod)] == ["held"]
