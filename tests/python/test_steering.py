"""Requeue, progress checkpoints, claims across productions and claim gates
through the wheel (docs/design.md, "Requeue", "Progress checkpoints", "Claims
across productions", "Claim gates"), sync and asyncio; bad input raises a
typed error and changes nothing.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import tenure
from conftest import LONG, PY, fresh_store, python_env, wait_until
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


# A worker process whose handler checkpoints its attempt, then dies with
# SIGKILL while it holds the lease: the lease can only expire.
DOOMED = """
import os, signal, sys, time
from datetime import timedelta
import tenure

def handle(job):
    assert job.progress() is None
    job.checkpoint(b"offset=%d" % job.attempt)
    assert job.progress() == b"offset=1"
    print("checkpointed", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

w = tenure.Worker(tenure.Authority(sys.argv[1]), "p", "doomed", handle,
                  ttl=timedelta(seconds=1))
time.sleep(120)
"""


def test_a_worker_checkpoint_is_read_by_the_next_attempt_after_an_expiry(
        tmp_path: Path) -> None:
    store = fresh_store(tmp_path, "progress.db")
    auth = tenure.Authority(store)
    auth.create_production("p")
    auth.submit("p", "j", b"1", max_attempts=3)
    doomed = subprocess.run([PY, "-c", DOOMED, str(store)], capture_output=True, text=True,
                            env=python_env(), timeout=120)
    assert doomed.returncode < 0 and doomed.stdout == "checkpointed\n", doomed.stderr
    assert auth.job("p", "j").progress == b"offset=1"
    seen: list[tuple[int, bytes | None]] = []
    reports: list[tenure.Report] = []

    def handle(job: tenure.Job) -> None:
        seen.append((job.attempt, job.progress()))
        job.checkpoint(b"offset=%d" % job.attempt)
        assert job.progress() == b"offset=2"

    with tenure.Worker(auth, "p", "heir", handle, ttl=LONG, report=reports.append):
        wait_until(lambda: len(reports) == 1, "the second attempt's report")
    assert seen == [(2, b"offset=1")]
    assert reports[0].result == "completed"
    assert auth.job("p", "j").progress == b"offset=2"
    assert auth.check().ok


def test_a_worker_job_checkpoint_is_refused_once_the_lease_is_lost(
        auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", b"1")
    after: list[BaseException] = []
    kept: list[tenure.Job] = []
    reports: list[tenure.Report] = []
    gone = threading.Event()

    def handle(job: tenure.Job) -> None:
        with pytest.raises(tenure.InvalidArgument):
            job.checkpoint(b"x" * 4097)
        job.checkpoint(b"")
        kept.append(job)
        auth.cancel(prod, job.id)
        wait_until(lambda: job.lease_lost is not None, "the keeper's refusal")
        try:
            job.checkpoint(b"late")
        except tenure.TenureError as e:
            after.append(e)
        gone.set()

    with tenure.Worker(auth, prod, "w", handle, ttl=timedelta(seconds=3),
                       renew_every=timedelta(milliseconds=50), report=reports.append):
        wait_until(lambda: len(reports) == 1, "the report")
    assert gone.is_set() and len(after) == 1
    assert isinstance(after[0], (tenure.Cancelled, tenure.StaleLease, tenure.LeaseClosed))
    assert auth.job(prod, "j").progress == b""
    # After the handler returned the job's context is gone.
    with pytest.raises(tenure.InvalidArgument):
        kept[0].checkpoint(b"y")
    with pytest.raises(tenure.InvalidArgument):
        kept[0].progress()


def test_aio_worker_job_checkpoint_and_progress(auth: tenure.Authority) -> None:
    async def main() -> None:
        async with aio.Authority(auth) as a:
            await a.create_production("p")
            await a.submit("p", "j", b"1", max_attempts=3)
            first = await a.claim("p", "j", "w", timedelta(milliseconds=300))
            await first.checkpoint(b"offset=1")
            seen: list[bytes | None] = []

            async def handle(job: aio.Job) -> None:
                seen.append(await job.progress())
                await job.checkpoint(b"offset=2")

            await asyncio.sleep(0.6)  # the first lease expires
            stats = await aio.Worker(a, "p", "heir", handle, ttl=LONG, until_idle=True).run()
            assert (stats.claimed, stats.completed) == (1, 1)
            assert seen == [b"offset=1"]
            assert (await a.job("p", "j")).progress == b"offset=2"

    asyncio.run(main())


def test_requeue_with_a_delay_is_due_after_it(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", b"1")
    assert auth.claim(prod, "j", "w", LONG).fail("bad", permanent=True) == "failed"
    before = datetime.now(timezone.utc)
    auth.requeue(prod, "j", delay=timedelta(hours=1))
    after = datetime.now(timezone.utc)
    v = auth.job(prod, "j")
    assert v.state == "requested" and v.due_at is not None
    slack = timedelta(seconds=1)
    assert before + timedelta(hours=1) - slack <= v.due_at <= after + timedelta(hours=1) + slack
    with pytest.raises(tenure.NoJobAvailable):
        auth.claim_next(prod, "w", LONG)


def test_bad_steering_arguments_change_nothing(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", b"1")
    auth.submit(prod, "k", b"1")
    assert auth.claim(prod, "k", "w", LONG).fail("bad", permanent=True) == "failed"
    lease = auth.claim(prod, "j", "w", LONG)
    expires = lease.expires_us
    before = auth.production_events(prod, 0, 10_000)
    with pytest.raises(tenure.InvalidArgument):
        auth.requeue_all(prod, limit=1001)
    with pytest.raises(tenure.InvalidArgument):
        lease.renew_checkpoint(LONG + LONG, b"x" * 4097)
    assert lease.expires_us == expires and auth.job(prod, "j").progress is None
    many = [f"p{i}" for i in range(65)]
    with pytest.raises(tenure.InvalidArgument):
        auth.claim_next_across(many, "w", LONG)
    with pytest.raises(tenure.InvalidArgument):
        auth.claim_next_many_across(many, "w", LONG, 2)
    for bad_list in ([], [prod, prod], many):
        with pytest.raises(tenure.InvalidArgument):
            auth.claim_next_wait_across(bad_list, "w", LONG, WAIT)
    with pytest.raises(tenure.NotFound):
        auth.claim_next_wait_across([prod, "nope"], "w", LONG, WAIT)
    with pytest.raises(tenure.InvalidArgument):
        auth.claim_next_wait_across([prod], "", LONG, WAIT)
    with pytest.raises(tenure.InvalidDuration):
        auth.claim_next_wait_across([prod], "w", timedelta(0), WAIT)
    with pytest.raises(tenure.InvalidDuration):
        auth.claim_next_wait_across([prod], "w", LONG, timedelta(hours=25))
    with pytest.raises(tenure.InvalidDuration):  # negative, as in the C ABI
        auth.claim_next_wait_across([prod], "w", LONG, timedelta(seconds=-1))
    assert auth.production_events(prod, 0, 10_000) == before
    assert auth.job(prod, "k").state == "failed"
