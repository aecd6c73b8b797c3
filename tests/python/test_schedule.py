"""Scheduling, retry back-off and hold limits through the wheel
(docs/design.md, "Scheduling and hold limits"; invariants 19 and 20).

Real stores (a SQLite file, or a fresh PostgreSQL database when
``TENURE_TEST_BACKEND=postgres``). Delays that must not pass during a test
are an hour; delays that must pass are a few hundred milliseconds, waited
for with ``claim_next_wait`` (its timed wake), and every claim of a delayed
job is checked against the due time on the authority's clock (the claim's
time is its ``claimed`` event's ``at_us``), never against a local timer.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

import tenure
from conftest import LONG, wait_until
from tenure import aio

HOUR = timedelta(hours=1)
HOUR_US = 3_600_000_000
SHORT = timedelta(milliseconds=300)
WAIT = timedelta(seconds=60)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def events_of(auth: tenure.Authority, prod: str, job: str, kind: str) -> list[tenure.Event]:
    return [e for e in auth.production_events(prod, 0, 10_000) if e.job == job and e.kind == kind]


def claimed_at_us(auth: tenure.Authority, lease: tenure.Lease) -> int:
    """The claim's time on the authority's clock (its ``claimed`` event)."""
    (ev,) = [e for e in events_of(auth, lease.production, lease.job, "claimed")
             if e.claim_id == lease.claim_id]
    return ev.at_us


def test_a_delayed_job_is_not_claimable_until_due(auth: tenure.Authority, prod: str) -> None:
    # "now" is the oldest: claim-next takes it first even if "soon" is due by then.
    assert auth.submit(prod, "now", b"n", not_before=timedelta(0)) == "created"
    assert auth.submit(prod, "far", b"f", not_before=HOUR) == "created"
    assert auth.submit(prod, "soon", b"s", not_before=SHORT) == "created"
    far, soon, now = (auth.job(prod, j) for j in ("far", "soon", "now"))
    # Due after the delay, counted from the recorded submission.
    assert far.state == "requested" and far.due_us == far.created_us + HOUR_US
    assert far.due_at == EPOCH + timedelta(microseconds=far.due_us)
    assert soon.due_us == soon.created_us + 300_000
    assert now.due_us is None and now.due_at is None  # zero: due at once
    assert "due at" in events_of(auth, prod, "far", "submitted")[0].detail
    assert auth.next_due_us(prod) == soon.due_us  # the earliest parked job

    with pytest.raises(tenure.NotClaimable, match="due"):
        auth.claim(prod, "far", "w", LONG)
    assert auth.claim_next(prod, "w", LONG).job == "now"  # the only due job
    # The wait wakes at the due time (nobody writes) and claims "soon", never "far".
    lease = auth.claim_next_wait(prod, "w", LONG, WAIT)
    assert lease.job == "soon"
    assert claimed_at_us(auth, lease) >= soon.due_us
    assert auth.job(prod, "soon").due_us is None  # a claim clears it
    with pytest.raises(tenure.NoJobAvailable):
        auth.claim_next(prod, "w", LONG)
    assert auth.job(prod, "far").due_us == far.due_us
    lease.complete()


def test_not_before_is_not_content_but_hold_and_backoff_are(auth: tenure.Authority,
                                                             prod: str) -> None:
    policy = tenure.Backoff(timedelta(seconds=1), timedelta(seconds=8))
    auth.submit(prod, "j", b"x", not_before=HOUR, max_hold=HOUR, backoff=policy)
    due = auth.job(prod, "j").due_us
    # Another delay (or none) is the same job: existing, the due time stays.
    assert auth.submit(prod, "j", b"x", max_hold=HOUR, backoff=policy) == "existing"
    assert auth.submit(prod, "j", b"x", not_before=SHORT, max_hold=HOUR,
                       backoff=policy) == "existing"
    assert auth.job(prod, "j").due_us == due
    with pytest.raises(tenure.Conflict):
        auth.submit(prod, "j", b"x", not_before=HOUR, backoff=policy)
    with pytest.raises(tenure.Conflict):
        auth.submit(prod, "j", b"x", max_hold=HOUR,
                    backoff=tenure.Backoff(timedelta(seconds=2), timedelta(seconds=8)))
    view = auth.job(prod, "j")
    assert view.max_hold == HOUR and view.backoff == policy
    plain = auth.submit(prod, "plain")
    assert plain == "created"
    p = auth.job(prod, "plain")
    assert p.max_hold is None and p.backoff is None and p.due_us is None


def test_submit_many_and_edits_carry_the_schedule(auth: tenure.Authority, prod: str) -> None:
    policy = tenure.Backoff(timedelta(milliseconds=250), timedelta(seconds=1))
    spec = tenure.JobSpec("a", b"1", priority=2, not_before=HOUR, max_hold=timedelta(minutes=5),
                          backoff=policy)
    assert spec.not_before == HOUR and spec.max_hold == timedelta(minutes=5)
    assert spec.backoff == policy and spec.payload == b"1" and spec.priority == 2
    assert spec == tenure.JobSpec("a", b"1", priority=2, not_before=HOUR,
                                  max_hold=timedelta(minutes=5), backoff=policy)
    assert spec != tenure.JobSpec("a", b"1", priority=2)
    assert "not_before=datetime.timedelta(seconds=3600)" in repr(spec)
    assert "backoff=Backoff(base=datetime.timedelta(microseconds=250000)" in repr(spec)
    assert tenure.JobSpec("b").not_before is None
    assert auth.submit_many(prod, [spec, tenure.JobSpec("b")]) == ["created", "created"]
    a = auth.job(prod, "a")
    assert a.due_us == a.created_us + HOUR_US and a.max_hold == timedelta(minutes=5)
    assert a.backoff == policy
    assert auth.claim_next(prod, "w", LONG).job == "b"  # "a" is not due

    with auth.edit() as e:
        e.submit(prod, "c", not_before=HOUR, max_hold=timedelta(seconds=30))
        e.set_production_backoff(prod, policy)
    c = auth.job(prod, "c")
    assert c.due_us == c.created_us + HOUR_US and c.max_hold == timedelta(seconds=30)
    assert [p.backoff for p in auth.productions()] == [policy]
    with auth.edit() as e:
        e.set_production_backoff(prod, None)
        e.abort()
    assert [p.backoff for p in auth.productions()] == [policy]  # aborted: unchanged


def test_fail_with_retry_after_parks_the_job(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", max_attempts=3)
    lease = auth.claim(prod, "j", "w", LONG)
    assert lease.fail("later", retry_after=HOUR) == "requested"
    view = auth.job(prod, "j")
    assert view.due_us == view.updated_us + HOUR_US and view.last_error == "later"
    assert events_of(auth, prod, "j", "failed")[0].detail.endswith(
        f"(retry due at {view.due_us} µs)")
    with pytest.raises(tenure.NotClaimable):
        auth.claim(prod, "j", "w", LONG)
    with pytest.raises(tenure.NoJobAvailable):
        auth.claim_next(prod, "w", LONG)

    # A short retry delay: the waiter claims it once due, not before.
    auth.submit(prod, "k", max_attempts=3)
    lease = auth.claim(prod, "k", "w", LONG)
    lease.fail("soon", retry_after=SHORT)
    due = auth.job(prod, "k").due_us
    assert due is not None
    again = auth.claim_next_wait(prod, "w", LONG, WAIT)
    assert again.job == "k" and again.attempt == 2 and claimed_at_us(auth, again) >= due
    # Zero: due at once, whatever back-off applies.
    auth.set_production_backoff(prod, tenure.Backoff(HOUR, HOUR))
    assert again.fail("now", retry_after=timedelta(0)) == "requested"
    assert auth.job(prod, "k").due_us is None
    # The last attempt fails for good: no due time.
    third = auth.claim(prod, "k", "w", LONG)
    assert third.fail("last", retry_after=HOUR) == "failed"
    assert auth.job(prod, "k").due_us is None

    # In an edit: parked once the edit commits.
    auth.submit(prod, "e", max_attempts=2)
    with auth.edit() as ed:
        held = ed.claim(prod, "e", "w", LONG)
        assert ed.fail(held, "edit", retry_after=HOUR) == "requested"
    e = auth.job(prod, "e")
    assert e.due_us == e.updated_us + HOUR_US


def test_a_permanent_failure_takes_no_retry_delay(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", LONG)
    before = len(auth.events(0, 10_000))
    with pytest.raises(tenure.InvalidArgument, match="retry_after"):
        lease.fail("no", permanent=True, retry_after=HOUR)
    with auth.edit() as e:
        with pytest.raises(tenure.InvalidArgument):
            e.fail(lease, "no", permanent=True, retry_after=HOUR)
    assert lease.status == "active" and len(auth.events(0, 10_000)) == before
    assert lease.fail("for good", permanent=True) == "failed"


def test_backoff_of_the_job_then_the_production(auth: tenure.Authority, prod: str) -> None:
    # The job's own back-off: base, then doubled, capped.
    own = tenure.Backoff(timedelta(milliseconds=200), timedelta(milliseconds=300))
    auth.submit(prod, "own", max_attempts=4, backoff=own)
    lease = auth.claim(prod, "own", "w", LONG)
    lease.fail("1")
    v = auth.job(prod, "own")
    assert v.due_us == v.updated_us + 200_000
    lease = auth.claim_next_wait(prod, "w", LONG, WAIT)
    assert lease.attempt == 2 and claimed_at_us(auth, lease) >= v.due_us
    lease.fail("2")
    v = auth.job(prod, "own")
    assert v.due_us == v.updated_us + 300_000  # min(cap, 2 × base)
    lease = auth.claim_next_wait(prod, "w", LONG, WAIT)
    lease.complete()

    # The production's back-off applies to jobs without their own.
    slow = tenure.Backoff(HOUR, 2 * HOUR)
    auth.set_production_backoff(prod, slow)
    (view,) = auth.productions()
    assert view.backoff == slow and "backoff=Backoff(base=" in repr(view)
    auth.submit(prod, "plain", max_attempts=3)
    auth.submit(prod, "mine", max_attempts=3, backoff=own)
    auth.claim(prod, "plain", "w", LONG).fail("x")
    p = auth.job(prod, "plain")
    assert p.due_us == p.updated_us + HOUR_US
    auth.claim(prod, "mine", "w", LONG).fail("x")
    m = auth.job(prod, "mine")
    assert m.due_us == m.updated_us + 200_000  # its own back-off wins
    # fail_many names no delay: the back-off applies.
    auth.submit(prod, "batch", max_attempts=3)
    (out,) = auth.fail_many([(auth.claim(prod, "batch", "w", LONG), "b")])
    assert out == "requested"
    b = auth.job(prod, "batch")
    assert b.due_us == b.updated_us + HOUR_US
    # Release and a permanent failure never delay.
    auth.submit(prod, "rel", max_attempts=3)
    assert auth.claim(prod, "rel", "w", LONG).release() == "requested"
    assert auth.job(prod, "rel").due_us is None
    # Cleared: due at once again; jobs already waiting keep their due time.
    auth.set_production_backoff(prod, None)
    assert auth.productions()[0].backoff is None
    assert auth.job(prod, "plain").due_us == p.due_us
    auth.claim(prod, "rel", "w", LONG).fail("x")
    assert auth.job(prod, "rel").due_us is None
    with pytest.raises(tenure.NotFound):
        auth.set_production_backoff("missing", slow)


def test_the_hold_limit_caps_claims_and_renewals(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "h", max_hold=timedelta(minutes=5))
    lease = auth.claim(prod, "h", "w", LONG)
    at = claimed_at_us(auth, lease)
    assert lease.expires_us == at + 300_000_000  # min(now + TTL, now + limit)
    assert "hold limit at" in events_of(auth, prod, "h", "claimed")[0].detail
    before = len(auth.events(0, 10_000))
    with pytest.raises(tenure.HoldLimit) as info:
        lease.renew(LONG)
    assert info.value.code == 22 and info.value.code_name == "hold_limit"
    with auth.edit() as e:
        with pytest.raises(tenure.HoldLimit):
            e.renew(lease, LONG)
    (out,) = auth.renew_many([lease], LONG)
    assert isinstance(out, tenure.HoldLimit)
    # Refused: nothing changed.
    assert lease.expires_us == at + 300_000_000 and lease.status == "active"
    assert auth.job(prod, "h").expires_us == lease.expires_us
    assert len(auth.events(0, 10_000)) == before
    lease.complete()

    # A renewal the limit only shortens succeeds with the capped expiry.
    auth.submit(prod, "s", max_hold=timedelta(minutes=5))
    short = auth.claim(prod, "s", "w", timedelta(seconds=30))
    at = claimed_at_us(auth, short)
    short.renew(LONG)
    assert short.expires_us == at + 300_000_000
    assert auth.job(prod, "s").expires_us == short.expires_us
    assert "capped by the hold limit" in events_of(auth, prod, "s", "renewed")[0].detail
    short.release()

    # After the limit the lease expires like any other. (On a loaded machine
    # a claim can reach a very short limit before it commits, which the core
    # refuses: then try a longer one.)
    for ms in (300, 1_000, 5_000, 20_000):
        auth.submit(prod, f"t{ms}", max_hold=timedelta(milliseconds=ms))
        try:
            brief = auth.claim(prod, f"t{ms}", "w", LONG)
        except tenure.LeaseExpired:
            continue
        assert brief.expires_us == claimed_at_us(auth, brief) + ms * 1_000
        wait_until(lambda: auth.job(prod, brief.job).state == "expired",
                   "the held lease to expire")
        with pytest.raises(tenure.LeaseExpired):
            brief.complete()
        break
    else:
        raise AssertionError("could not claim with a 20 s hold limit")


def test_the_worker_applies_a_retry_delay(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "later", b"later", max_attempts=3)
    auth.submit(prod, "soon", b"soon", max_attempts=3)
    reports: list[tenure.Report] = []

    def handle(job: tenure.Job) -> tenure.Retry | tenure.Complete:
        if job.payload == b"later":
            return tenure.Retry("in an hour", delay=HOUR)
        if job.attempt == 1:
            return tenure.Retry("shortly", delay=SHORT)
        return tenure.Complete()

    with tenure.Worker(auth, prod, "w", handle, ttl=LONG, slots=2,
                       report=reports.append) as w:
        wait_until(lambda: len(reports) == 3, "three reports")
        w.stop()
        assert w.join()
    later = auth.job(prod, "later")
    assert later.state == "requested" and later.attempts == 1
    assert later.due_us == later.updated_us + HOUR_US and later.last_error == "in an hour"
    soon = auth.job(prod, "soon")
    assert soon.state == "completed" and soon.attempts == 2
    failed_at = events_of(auth, prod, "soon", "failed")[0].at_us
    second = [e for e in events_of(auth, prod, "soon", "claimed") if e.attempt == 2]
    assert second[0].at_us >= failed_at + 300_000
    # A delay outside 0 ..= 366 days is refused when the result is made.
    for bad in (timedelta(days=367), timedelta(microseconds=-1)):
        with pytest.raises(tenure.InvalidDuration):
            tenure.Retry("x", delay=bad)
    assert tenure.Retry("x", delay=timedelta(days=366)).delay == timedelta(days=366)


def test_backoff_values() -> None:
    b = tenure.Backoff(timedelta(seconds=1), timedelta(minutes=1))
    assert b.base == timedelta(seconds=1) and b.cap == timedelta(minutes=1)
    assert b == tenure.Backoff(timedelta(seconds=1), timedelta(seconds=60))
    assert b != tenure.Backoff(timedelta(seconds=1), timedelta(seconds=61))
    assert len({b, tenure.Backoff(timedelta(seconds=1), timedelta(seconds=60))}) == 1
    assert repr(b) == ("Backoff(base=datetime.timedelta(seconds=1), "
                       "cap=datetime.timedelta(seconds=60))")
    assert tenure.Backoff(timedelta(seconds=5), timedelta(seconds=5)).cap == timedelta(seconds=5)
    with pytest.raises(AttributeError):
        b.base = timedelta(seconds=2)  # type: ignore[misc]
    for base, cap in ((timedelta(0), timedelta(seconds=1)),
                      (timedelta(seconds=2), timedelta(seconds=1)),
                      (timedelta(seconds=-1), timedelta(seconds=1)),
                      (timedelta(seconds=1), timedelta(days=367))):
        with pytest.raises(tenure.InvalidDuration):
            tenure.Backoff(base, cap)


def test_aio_schedule_calls(auth: tenure.Authority, prod: str) -> None:
    async def main() -> None:
        a = aio.Authority(auth)
        policy = tenure.Backoff(HOUR, HOUR)
        assert await a.submit(prod, "far", not_before=HOUR, max_hold=timedelta(minutes=5),
                              backoff=policy) == "created"
        far = await a.job(prod, "far")
        assert far.due_us == far.created_us + HOUR_US and far.backoff == policy
        assert await a.next_due_us(prod) == far.due_us
        await a.submit(prod, "j", max_attempts=3)
        lease = await a.claim(prod, "j", "w", LONG)
        assert await lease.fail("later", retry_after=HOUR) == "requested"
        j = await a.job(prod, "j")
        assert j.due_us == j.updated_us + HOUR_US
        await a.set_production_backoff(prod, policy)
        assert [p.backoff for p in await a.productions()] == [policy]
        async with a.edit() as e:
            await e.submit(prod, "k", not_before=timedelta(0), max_hold=timedelta(minutes=5))
            await e.set_production_backoff(prod, None)
        assert [p.backoff for p in await a.productions()] == [None]
        k = await a.claim(prod, "k", "w", LONG)
        with pytest.raises(tenure.HoldLimit):
            await k.renew(LONG)
        async with a.edit() as e:
            assert await e.fail(k, "edit", retry_after=HOUR) == "requested"
        kv = await a.job(prod, "k")
        assert kv.due_us == kv.updated_us + HOUR_US
        await a.aclose()

    asyncio.run(main())


def test_aio_worker_job_failed_retry_after(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "later", b"later", max_attempts=3)
    auth.submit(prod, "bad", b"bad", max_attempts=3)

    async def handle(job: aio.Job) -> None:
        if job.payload == b"later":
            raise aio.JobFailed("in an hour", retry_after=HOUR)
        if job.lease.attempt == 1:
            # A delay the store refuses: a retryable failure naming why.
            raise aio.JobFailed("too late", retry_after=timedelta(days=400))
        return None

    async def main() -> aio.WorkerStats:
        async with aio.Authority(auth) as a:
            return await aio.Worker(a, prod, "w", handle, concurrency=2, ttl=LONG,
                                    until_idle=True).run()

    stats = asyncio.run(main())
    assert (stats.failed, stats.completed, stats.lost) == (2, 1, 0)
    later = auth.job(prod, "later")
    assert later.state == "requested" and later.due_us == later.updated_us + HOUR_US
    assert later.last_error == "in an hour"
    bad = auth.job(prod, "bad")
    assert bad.state == "completed" and bad.attempts == 2  # retried at once
    (failed,) = events_of(auth, prod, "bad", "failed")
    assert failed.detail.startswith("InvalidDuration: ") and "retry due" not in failed.detail
