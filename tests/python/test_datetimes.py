"""Every time the API returns has an aware UTC ``datetime`` beside its integer
microseconds, exact to the microsecond."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Optional

import tenure
from conftest import LONG

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
US = timedelta(microseconds=1)


def same(at: Optional[datetime], us: Optional[int]) -> None:
    """``at`` is the aware UTC datetime of exactly ``us`` microseconds."""
    if us is None:
        assert at is None
        return
    assert isinstance(at, datetime)
    assert at.tzinfo is timezone.utc and at.utcoffset() == timedelta(0)
    assert (at - EPOCH) // US == us
    assert at.microsecond == us % 1_000_000


def test_lease_and_job_views(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    view = auth.job(prod, "j")
    same(view.created_at, view.created_us)
    same(view.updated_at, view.updated_us)
    same(view.expires_at, view.expires_us)
    assert view.expires_at is None

    lease = auth.claim(prod, "j", "w", LONG)
    same(lease.expires_at, lease.expires_us)
    view = auth.job(prod, "j")
    same(view.expires_at, view.expires_us)
    assert view.expires_at == lease.expires_at
    assert view.expires_at is not None
    assert view.expires_at - view.updated_at == LONG
    now = datetime.now(timezone.utc)
    assert abs(view.updated_at - now) < timedelta(minutes=5)

    lease.renew(2 * LONG)
    same(lease.expires_at, lease.expires_us)
    assert auth.job(prod, "j").expires_at == lease.expires_at
    assert auth.jobs(prod)[0].expires_at == lease.expires_at


def test_events_productions_clock(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    auth.claim(prod, "j", "w", LONG).release()
    events = auth.events()
    assert events
    for e in events + auth.production_events(prod):
        same(e.at, e.at_us)
        same(e.expires_at, e.expires_us)
    assert any(e.expires_at is not None for e in events)
    assert [e.at for e in events] == sorted(e.at for e in events)

    auth.create_production("gone")
    auth.cancel_production("gone")
    for p in auth.productions():
        same(p.created_at, p.created_us)
        same(p.cancelled_at, p.cancelled_us)
    gone = next(p for p in auth.productions() if p.name == "gone")
    assert gone.cancelled_at is not None and gone.cancelled_at >= gone.created_at
    assert next(p for p in auth.productions() if p.name == prod).cancelled_at is None

    clock = auth.clock()
    same(clock.now_at, clock.now_us)
    same(clock.mark_at, clock.mark_us)
    assert clock.mark_at <= clock.now_at


def test_repr_shows_the_utc_time(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", LONG)
    assert f"expires_at='{lease.expires_at.isoformat()}'" in repr(lease)
    assert "+00:00'" in repr(auth.job(prod, "j"))
    auth.submit(prod, "k")
    assert "expires_us=None, expires_at=None" in repr(auth.job(prod, "k"))
    e = auth.events()[-1]
    assert f"at='{e.at.isoformat()}'" in repr(e)
    c = auth.clock()
    assert f"now_at='{c.now_at.isoformat()}'" in repr(c)
    p = auth.productions()[0]
    assert f"created_at='{p.created_at.isoformat()}'" in repr(p) and "cancelled_at=None" in repr(p)
