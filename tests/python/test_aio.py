"""tenure.aio: async calls give the sync API's results and errors, cancelled
claims leave no orphaned lease, keepers stop on exit, edits, the worker loop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar, Union

import pytest

import tenure
from conftest import LONG
from tenure import aio

T = TypeVar("T")
SHORT = timedelta(seconds=2)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def wrap(auth: tenure.Authority) -> aio.Authority:
    return aio.Authority(auth, max_workers=8)


async def until(pred: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        await asyncio.sleep(0.005)


def drain(auth: tenure.Authority, prod: str,
          handler: Callable[[aio.Job], Awaitable[Any]]) -> aio.WorkerStats:
    """Run an until-idle worker of two slots over ``prod``."""
    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            return await aio.Worker(a, prod, "aw", handler, concurrency=2, ttl=LONG,
                                    until_idle=True).run()
    return run(main())


# -- the same results and errors as the synchronous API ------------------------


def test_results_match_the_sync_api(auth: tenure.Authority, prod: str) -> None:
    async def main() -> None:
        async with wrap(auth) as a:
            assert await a.create_production("p2") is True
            assert await a.create_production("p2") is False
            assert await a.submit(prod, "j1", b"one", priority=3) == "created"
            assert await a.submit(prod, "j1", b"one", priority=3) == "existing"
            assert await a.submit_many(prod, (tenure.JobSpec(f"m{i}") for i in range(3))) == [
                "created"] * 3
            lease = await a.claim_next(prod, "w", LONG)
            assert isinstance(lease, aio.Lease) and isinstance(lease.native, tenure.Lease)
            assert (lease.job, lease.holder, lease.status) == ("j1", "w", "active")
            assert lease.expires_at == lease.native.expires_at
            before = lease.expires_us
            await lease.renew(2 * LONG)
            assert lease.expires_us > before
            assert await a.job(prod, "j1") == auth.job(prod, "j1")
            assert await a.payload(prod, "j1") == b"one" == auth.payload(prod, "j1")
            await lease.complete({"k": "v"})
            assert lease.status == "closed"
            assert await a.facts(prod, "j1") == auth.facts(prod, "j1")
            assert await a.production_facts(prod) == auth.production_facts(prod)
            named = await a.claim(prod, "m1", "w", LONG)
            assert await named.fail("boom") == "requested"
            again = await a.claim(prod, "m1", "w", LONG)
            assert await again.release() == "requested"
            assert await a.cancel(prod, "m2") == "cancelled"
            assert await a.jobs(prod) == auth.jobs(prod)
            assert await a.jobs(prod, state="requested", limit=1) == auth.jobs(
                prod, state="requested", limit=1)
            assert await a.events() == auth.events()
            assert await a.events(after=2, limit=3) == auth.events(after=2, limit=3)
            assert await a.production_events(prod) == auth.production_events(prod)
            assert await a.productions() == auth.productions()
            assert await a.cancel_production("p2") == 0
            assert (await a.check()).ok
            assert (await a.clock()).mark_us <= auth.clock().now_us
            token_lease = await a.claim(prod, "m0", "w", LONG)
            imported = await a.import_lease(token_lease.export_token())
            assert imported.claim_id == token_lease.claim_id
            await imported.complete()
            assert a.path == auth.path and "aio.Authority" in repr(a)
            assert "aio.Lease(" in repr(imported) and "tenure-lease" not in repr(imported)

    run(main())


def sync_and_async_errors(auth: tenure.Authority, prod: str) -> list[
        tuple[Callable[[], object], Callable[[aio.Authority], Awaitable[object]]]]:
    auth.submit(prod, "x", b"a")
    closed = auth.claim(prod, "x", "w", LONG)
    closed.release()
    return [
        (lambda: auth.claim_next("nope", "w", LONG), lambda a: a.claim_next("nope", "w", LONG)),
        (lambda: auth.job(prod, "missing"), lambda a: a.job(prod, "missing")),
        (lambda: auth.submit(prod, "x", b"b"), lambda a: a.submit(prod, "x", b"b")),
        (lambda: auth.claim(prod, "x", "w", 30),  # type: ignore[arg-type]
         lambda a: a.claim(prod, "x", "w", 30)),  # type: ignore[arg-type]
        (lambda: auth.claim(prod, "x", "w", timedelta(0)),
         lambda a: a.claim(prod, "x", "w", timedelta(0))),
        (lambda: auth.import_lease("garbage"), lambda a: a.import_lease("garbage")),
        (lambda: closed.renew(LONG), lambda a: a.lease(closed).renew(LONG)),
        (lambda: closed.complete(), lambda a: a.lease(closed).complete()),
        (lambda: auth.submit(prod, "bad id\n"), lambda a: a.submit(prod, "bad id\n")),
    ]


def test_errors_match_the_sync_api(auth: tenure.Authority, prod: str) -> None:
    cases = sync_and_async_errors(auth, prod)

    async def main() -> None:
        async with wrap(auth) as a:
            for sync, asynchronous in cases:
                with pytest.raises(Exception) as expected:
                    sync()
                with pytest.raises(Exception) as got:
                    await asynchronous(a)
                assert type(got.value) is type(expected.value), (expected.value, got.value)
                assert str(got.value) == str(expected.value)
                if isinstance(expected.value, tenure.TenureError):
                    assert isinstance(got.value, tenure.TenureError)
                    assert got.value.code == expected.value.code

    run(main())


# -- cancellation never leaves an orphaned claim ------------------------------


def test_cancelled_claim_that_commits_is_handed_back(store: Union[Path, str],
                                                     auth: tenure.Authority, prod: str) -> None:
    """The claim runs in its thread (waiting for the lock another handle's
    edit holds: the writer lock on SQLite, the job's row on PostgreSQL) when
    its task is cancelled; it commits afterwards and is released, so the job
    is requested again."""
    auth.submit(prod, "j")
    other = tenure.Authority(store, busy_timeout=timedelta(seconds=60))
    blocker = other.edit()
    blocker.claim(prod, "j", "blocker", LONG)  # aborted below: never committed

    async def main() -> None:
        async with wrap(auth) as a:
            task = asyncio.ensure_future(a.claim(prod, "j", "w", LONG))
            await asyncio.sleep(0.3)  # the claim is now waiting inside the native call
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert auth.job(prod, "j").state == "requested"  # not committed yet
            threading.Timer(0.2, blocker.abort).start()
            await until(lambda: a.handed_back == 1, "the hand-back")
            assert await a.settle() == 1
        view = auth.job(prod, "j")
        assert view.state == "requested" and view.attempts == 1
        kinds = [e.kind for e in auth.production_events(prod) if e.job == "j"]
        assert kinds == ["submitted", "claimed", "released"]

    run(main())


def test_cancelled_claim_that_never_started_never_runs(store: Union[Path, str],
                                                      auth: tenure.Authority,
                                                      prod: str) -> None:
    auth.submit(prod, "j")
    auth.submit(prod, "k")
    other = tenure.Authority(store, busy_timeout=timedelta(seconds=60))
    blocker = other.edit()
    blocker.claim(prod, "j", "blocker", LONG)  # aborted below: never committed

    async def main() -> None:
        async with aio.Authority(auth, max_workers=1) as a:
            first = asyncio.ensure_future(a.claim(prod, "j", "w", LONG))
            await asyncio.sleep(0.3)
            queued = asyncio.ensure_future(a.claim(prod, "k", "w", LONG))
            await asyncio.sleep(0.05)
            queued.cancel()
            first.cancel()
            for t in (first, queued):
                with pytest.raises(asyncio.CancelledError):
                    await t
            blocker.abort()
            assert await a.settle() == 1
        assert [e.kind for e in auth.production_events(prod) if e.job == "k"] == ["submitted"]
        assert auth.job(prod, "j").state == "requested"

    run(main())


def test_a_claim_whose_result_arrives_with_the_cancellation_is_handed_back(
        auth: tenure.Authority, prod: str) -> None:
    """Cancelled after the claim finished but before the task resumed."""
    auth.submit(prod, "j")

    async def main() -> None:
        async with wrap(auth) as a:
            task = asyncio.ensure_future(a.claim_next(prod, "w", LONG))
            await until(lambda: auth.job(prod, "j").state == "claimed", "the claim")
            task.cancel()
            try:
                lease = await task
            except asyncio.CancelledError:
                await a.settle()
                assert auth.job(prod, "j").state == "requested"
            else:  # the task had already resumed with the lease: the caller holds it
                assert lease.status == "active"
                await lease.release()

    run(main())


# -- keepers ------------------------------------------------------------------


def test_keeper_renews_and_stops_on_exit(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")

    async def main() -> None:
        async with wrap(auth) as a:
            lease = await a.claim(prod, "j", "w", SHORT)
            first = lease.expires_us
            async with lease.keep_alive(SHORT, every=timedelta(milliseconds=40)) as keeper:
                await until(lambda: keeper.renewals >= 3, "three renewals")
                assert keeper.running
            assert not keeper.running and keeper.error is None
            assert lease.expires_us > first
            renewals, expires = keeper.renewals, lease.expires_us
            seen = len(auth.events())
            await asyncio.sleep(0.3)
            assert keeper.renewals == renewals and lease.expires_us == expires
            assert len(auth.events()) == seen  # nothing renewed after the stop
            assert auth.job(prod, "j").state == "claimed"  # a keeper never releases
            await lease.complete()

    run(main())


def test_keeper_exit_waits_for_a_renewal_in_flight(store: Union[Path, str],
                                                   auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    other = tenure.Authority(store, busy_timeout=timedelta(seconds=60))

    async def main() -> None:
        async with wrap(auth) as a:
            lease = await a.claim(prod, "j", "w", timedelta(seconds=30))
            keeper = lease.keep_alive(timedelta(seconds=30), every=timedelta(milliseconds=50))
            async with keeper:
                # The next renewal waits for the lock this edit holds (the
                # writer lock on SQLite, the job's row on PostgreSQL).
                blocker = other.edit()
                blocker.cancel(prod, "j")  # aborted below: never committed
                await asyncio.sleep(0.3)
                threading.Timer(0.3, blocker.abort).start()
            # The exit waited for the renewal that was in flight, then stopped.
            assert keeper.renewals == 1
            seen = [e.kind for e in auth.production_events(prod)]
            await asyncio.sleep(0.3)
            assert [e.kind for e in auth.production_events(prod)] == seen
            assert seen.count("renewed") == 1
            await lease.release()

    run(main())


def test_keeper_stops_on_a_refused_renewal_and_raises_it(auth: tenure.Authority,
                                                         prod: str) -> None:
    auth.submit(prod, "j")

    async def main() -> None:
        async with wrap(auth) as a:
            lease = await a.claim(prod, "j", "w", LONG)
            with pytest.raises(tenure.Cancelled) as err:
                async with lease.keep_alive(LONG, every=timedelta(milliseconds=30)) as keeper:
                    await a.cancel(prod, "j")
                    await until(lambda: keeper.error is not None, "the refusal")
                    assert not keeper.running
            assert err.value.code == tenure.Cancelled.code
            assert err.value is keeper.error

            # An exception from the block itself takes precedence.
            await a.submit(prod, "k")
            other = await a.claim(prod, "k", "w", LONG)
            with pytest.raises(KeyError):
                async with other.keep_alive(LONG, every=timedelta(milliseconds=30)) as k2:
                    await a.cancel(prod, "k")
                    await until(lambda: k2.error is not None, "the refusal")
                    raise KeyError("mine")
            assert isinstance(k2.error, tenure.Cancelled)

    run(main())


def test_keeper_arguments(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = aio.Authority(auth).lease(auth.claim(prod, "j", "w", LONG))
    with pytest.raises(TypeError, match="ttl must be a datetime.timedelta"):
        lease.keep_alive(30)  # type: ignore[arg-type]
    with pytest.raises(tenure.InvalidDuration):
        lease.keep_alive(LONG, every=LONG)
    with pytest.raises(tenure.InvalidDuration):
        lease.keep_alive(LONG, every=timedelta(0))
    lease.native.release()


# -- edits ---------------------------------------------------------------------


def test_async_edit_commits_and_aborts(store: Union[Path, str], auth: tenure.Authority,
                                       prod: str) -> None:
    async def main() -> None:
        async with wrap(auth) as a:
            async with a.edit() as e:
                assert e.open
                assert await e.submit(prod, "j", b"x") == "created"
                await e.submit(prod, "k")
                lease = await e.claim_next(prod, "w", LONG)
                assert lease.status == "pending"
                await e.complete(lease, [("r", "ok")])
                other = await e.claim(prod, "k", "w", LONG)
                await e.renew(other, 2 * LONG)
            assert not e.open
            assert lease.status == "closed" and other.status == "active"
            assert auth.job(prod, "j").state == "completed"
            assert {f.key: f.value for f in auth.facts(prod, "j")}["r"] == "ok"

            with pytest.raises(RuntimeError, match="boom"):
                async with a.edit() as e:
                    await e.release(other)
                    await e.submit(prod, "never")
                    raise RuntimeError("boom")
            with pytest.raises(tenure.NotFound):
                auth.job(prod, "never")
            assert auth.job(prod, "k").state == "claimed"

            async with a.edit() as e:
                assert await e.fail(other, "bad", permanent=True) == "failed"
                await e.commit()
                assert not e.open
                with pytest.raises(tenure.InvalidArgument):
                    await e.submit(prod, "late")
            assert auth.job(prod, "k").state == "failed"

            # The edit holds its locks until it ends (the writer lock on
            # SQLite, the new ID on PostgreSQL): another handle's write waits.
            quick = tenure.Authority(store, busy_timeout=timedelta(milliseconds=50))
            async with a.edit() as e:
                await e.create_production("p3")
                await e.submit(prod, "z")
                with pytest.raises(tenure.Busy):
                    quick.submit(prod, "z")
                assert await e.cancel_production("p3") == 0
            assert quick.submit(prod, "z") == "existing"
            assert [p.name for p in auth.productions()].count("p3") == 1

            # Errors inside an edit carry the sync classes.
            with pytest.raises(tenure.NoJobAvailable):
                async with a.edit() as e:
                    await e.create_production("empty")
                    await e.claim_next("empty", "w", LONG)
            assert "empty" not in [p.name for p in auth.productions()]  # aborted

    run(main())


def test_cancelled_call_inside_an_edit_aborts_it(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")

    async def main() -> None:
        async with wrap(auth) as a:
            with pytest.raises(aio.EditInterrupted):
                async with a.edit() as e:
                    t = asyncio.ensure_future(e.claim_next(prod, "w", LONG))
                    await asyncio.sleep(0)  # the call is submitted to the edit's thread
                    time.sleep(0.3)  # (the loop is blocked on purpose) the claim finishes
                    t.cancel()  # before the task could resume
                    with pytest.raises(asyncio.CancelledError):
                        await t  # swallowed on purpose: the edit must not commit
            assert auth.job(prod, "j").state == "requested"

    run(main())


# -- the worker loop ---------------------------------------------------------


def test_worker_completes_and_fails(auth: tenure.Authority, prod: str) -> None:
    auth.submit_many(prod, [tenure.JobSpec(f"j{i:03}", str(i).encode(), max_attempts=2)
                            for i in range(40)])
    active = 0
    peak = 0

    async def handler(job: aio.Job) -> dict[str, str]:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            await asyncio.sleep(0.01)
            n = int(job.payload)
            if n == 7:
                raise aio.JobFailed("seven", permanent=True)
            if n == 8:
                raise ValueError("eight")
            return {"double": str(2 * n), "job": job.id}
        finally:
            active -= 1

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            w = aio.Worker(a, prod, "aw", handler, concurrency=4, ttl=LONG, until_idle=True)
            return await w.run()

    stats = run(main())
    assert peak == 4
    assert (stats.completed, stats.failed, stats.lost) == (38, 3, 0)  # 8 fails twice
    assert stats.claimed == 41
    assert auth.job(prod, "j007").state == "failed" and auth.job(prod, "j007").attempts == 1
    eight = auth.job(prod, "j008")
    assert eight.state == "failed" and eight.attempts == 2
    assert eight.last_error == "ValueError: eight"
    assert {f.key: f.value for f in auth.facts(prod, "j012")}["double"] == "24"
    assert len(auth.jobs(prod, state="completed", limit=100)) == 38


def test_worker_graceful_stop_releases_what_runs_past_grace(auth: tenure.Authority,
                                                            prod: str) -> None:
    auth.submit_many(prod, [tenure.JobSpec(f"j{i}") for i in range(6)])
    started = 0

    async def handler(job: aio.Job) -> None:
        nonlocal started
        started += 1
        if job.id in ("j0", "j1"):
            await asyncio.sleep(0.05)  # finishes within the grace period
            return None
        await asyncio.Event().wait()  # never finishes on its own

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            stop = asyncio.Event()
            w = aio.Worker(a, prod, "aw", handler, concurrency=6, ttl=LONG,
                           grace=timedelta(milliseconds=300))
            task = asyncio.ensure_future(w.run(stop))
            await until(lambda: started == 6, "six handlers")
            stop.set()
            return await task

    stats = run(main())
    assert (stats.claimed, stats.completed, stats.released) == (6, 2, 4)
    states = {v.job: v.state for v in auth.jobs(prod)}
    assert states == {"j0": "completed", "j1": "completed", "j2": "requested",
                      "j3": "requested", "j4": "requested", "j5": "requested"}


def test_worker_task_cancellation_is_graceful(auth: tenure.Authority, prod: str) -> None:
    auth.submit_many(prod, [tenure.JobSpec(f"j{i}") for i in range(3)])
    started = 0
    finished = 0

    async def handler(job: aio.Job) -> None:
        nonlocal started, finished
        started += 1
        await asyncio.sleep(0.2 if job.id == "j0" else 60)
        finished += 1

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            w = aio.Worker(a, prod, "aw", handler, concurrency=3, ttl=LONG,
                           grace=timedelta(seconds=1))
            task = asyncio.ensure_future(w.run())
            await until(lambda: started == 3, "three handlers")
            # New work submitted now is not taken: the worker is stopping.
            task.cancel()
            await a.submit(prod, "late")
            with pytest.raises(asyncio.CancelledError):
                await task
            return w.stats

    stats = run(main())
    assert finished == 1 and (stats.completed, stats.released) == (1, 2)
    assert auth.job(prod, "j0").state == "completed"
    assert auth.job(prod, "late").state == "requested"
    assert [v.job for v in auth.jobs(prod, state="requested")] == ["j1", "j2", "late"]


def test_worker_waits_for_new_work_until_stopped(auth: tenure.Authority, prod: str) -> None:
    done: list[str] = []

    async def handler(job: aio.Job) -> None:
        done.append(job.id)

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            stop = asyncio.Event()
            w = aio.Worker(a, prod, "aw", handler, concurrency=2, ttl=LONG)
            task = asyncio.ensure_future(w.run(stop))
            await asyncio.sleep(0.2)
            await a.submit(prod, "later")
            await until(lambda: done == ["later"], "the later job")
            stop.set()
            return await task

    stats = run(main())
    assert stats.completed == 1 and auth.job(prod, "later").state == "completed"


def test_worker_reports_a_store_error(auth: tenure.Authority) -> None:
    async def handler(job: aio.Job) -> None:
        return None

    async def main() -> None:
        async with wrap(auth) as a:
            with pytest.raises(tenure.NotFound):
                await aio.Worker(a, "no-such-production", "aw", handler).run()

    run(main())


def test_open_off_the_loop(store: Union[Path, str]) -> None:
    async def main() -> None:
        async with await aio.open(store, synchronous="normal",
                                  busy_timeout=timedelta(seconds=1)) as a:
            await a.create_production("p")
            assert isinstance(a.native, tenure.Authority)
            assert (await a.check()).ok
        with pytest.raises(tenure.InvalidArgument):
            await aio.open(store, synchronous="sometimes")  # type: ignore[arg-type]

    run(main())


def test_worker_counts_a_lease_lost_to_a_coordinator_cancel(auth: tenure.Authority,
                                                            prod: str) -> None:
    auth.submit(prod, "j")

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            async def handler(job: aio.Job) -> dict[str, str]:
                await a.cancel(prod, job.id)  # a coordinator cancels it mid-way
                await asyncio.sleep(0.3)  # the keeper's next renewal is refused
                return {"never": "published"}

            w = aio.Worker(a, prod, "aw", handler, concurrency=1, ttl=LONG,
                           renew_every=timedelta(milliseconds=20), until_idle=True)
            return await w.run()

    stats = run(main())
    assert (stats.claimed, stats.completed, stats.lost) == (1, 0, 1)
    assert auth.job(prod, "j").state == "cancelled" and auth.facts(prod, "j") == []


# -- waiting for work ----------------------------------------------------------


def test_an_async_wait_wakes_on_a_submit_without_blocking_the_loop(auth: tenure.Authority,
                                                                    prod: str) -> None:
    async def main() -> None:
        async with wrap(auth) as a:
            task = asyncio.ensure_future(a.claim_next_wait(prod, "w", LONG, LONG))
            ticks = 0
            while ticks < 20:  # the loop keeps running while the task waits
                await asyncio.sleep(0.01)
                ticks += 1
            assert not task.done()
            await a.submit(prod, "j")
            lease = await task
            assert lease.job == "j" and lease.status == "active"
            await lease.complete()
            with pytest.raises(tenure.NoJobAvailable):
                await a.claim_next_wait(prod, "w", LONG, timedelta(milliseconds=20))

    run(main())


def test_a_cancelled_waiting_task_leaves_no_orphaned_claim(auth: tenure.Authority,
                                                           prod: str) -> None:
    """Cancelling the task cancels the native wait at once; a claim that
    committed while the task was being cancelled is handed back."""
    async def main() -> None:
        async with wrap(auth) as a:
            task = asyncio.ensure_future(a.claim_next_wait(prod, "w", LONG, LONG))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The native wait returned (its 10-minute timeout is far off): nothing claimed.
            assert await asyncio.wait_for(a.settle(), 30) == 0
            # Racing a submission with the cancellation, many times: whichever
            # wins, no claim is left that its caller does not hold.
            held = []
            for i in range(20):
                task = asyncio.ensure_future(a.claim_next_wait(prod, "w", LONG, LONG))
                await asyncio.sleep(0.01 * (i % 3))
                await a.submit(prod, f"r{i}")
                task.cancel()
                try:
                    held.append(await task)
                except asyncio.CancelledError:
                    pass
            handed = await a.settle()
            claimed = {v.job for v in auth.jobs(prod, state="claimed", limit=100)}
            assert claimed == {lease.job for lease in held}
            released = [e for e in auth.production_events(prod) if e.kind == "released"]
            assert len(released) == handed
            for lease in held:
                await lease.release()

    run(main())


def test_aclose_ends_the_waits_in_progress(store: Union[Path, str]) -> None:
    async def main() -> None:
        a = await aio.open(store)
        await a.create_production("p")
        cancel = tenure.WaitCancel()
        tasks = [asyncio.ensure_future(a.claim_next_wait("p", "w", LONG, LONG, c))
                 for c in (None, cancel)]
        await asyncio.sleep(0.2)
        await a.aclose()
        for t in tasks:
            with pytest.raises(tenure.NoJobAvailable, match="cancelled"):
                await t
        assert not cancel.is_cancelled  # the caller's handle is untouched
        with pytest.raises(tenure.InvalidArgument, match="closed"):
            a.native.job("p", "j")  # aio.open opened it, aclose closed it

    run(main())


def test_worker_cancelled_mid_drain_settles_each_handled_job_once(auth: tenure.Authority,
                                                                  prod: str) -> None:
    """Each task settles a handled job in the same off-loop call that waits
    for its next one; cancelling the run while those calls are in flight
    leaves no job claimed, and the stats count exactly what the store shows."""
    auth.submit_many(prod, [tenure.JobSpec(f"j{i:03}", b"x") for i in range(300)])
    handled: list[str] = []

    async def handler(job: aio.Job) -> dict[str, str]:
        handled.append(job.id)
        return {"by": job.lease.claim_id}

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            # No grace: the tasks are cancelled while their calls are in flight.
            w = aio.Worker(a, prod, "aw", handler, concurrency=8, ttl=LONG,
                           grace=timedelta(0))
            task = asyncio.ensure_future(w.run())
            await until(lambda: len(handled) >= 60, "sixty handled jobs")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await a.settle()
            return w.stats

    stats = run(main())
    states = {v.job: v.state for v in auth.jobs(prod, limit=1000)}
    completed = {j for j, s in states.items() if s == "completed"}
    assert set(states.values()) <= {"completed", "requested"}  # nothing left claimed
    assert completed <= set(handled) and len(handled) == len(set(handled))
    assert 60 <= len(completed) < 300
    assert stats.completed == len(completed)
    assert stats.claimed == len(handled)
    # Handled but not completed: released (a claim landing at the stop is
    # released too, without being counted as claimed).
    assert len(handled) - stats.completed <= stats.released
    assert (stats.failed, stats.lost) == (0, 0)
    for j in completed:  # completed under the claim its handler ran with
        facts = {f.key: f.value for f in auth.facts(prod, j)}
        assert facts["by"] == facts["tenure.claim_id"]


def test_worker_run_cancelled_after_a_claim_landed_hands_the_unstarted_job_back(
        auth: tenure.Authority, prod: str) -> None:
    """The run is cancelled after a claim landed and its handler task was
    made, before that task's first step: the job is handed back (requested
    again), counted released and not claimed, and the handler never ran."""
    auth.submit_many(prod, [tenure.JobSpec(f"j{i}", b"x") for i in range(3)])
    handled: list[str] = []

    async def handler(job: aio.Job) -> dict[str, str]:
        handled.append(job.id)
        return {}

    async def main() -> aio.WorkerStats:
        loop = asyncio.get_running_loop()
        gate = asyncio.Event()  # never set: the handler tasks' first steps wait here
        run_task: list[asyncio.Task[aio.WorkerStats]] = []

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> Any:
            if getattr(coro, "__name__", "") != "_call":
                return asyncio.Task(coro, loop=loop, **kw)

            async def gated() -> Any:
                await gate.wait()
                return await coro
            run_task[0].cancel()  # the stop arrives before the handler starts
            task = asyncio.Task(gated(), loop=loop, **kw)
            task.add_done_callback(lambda _: coro.close())  # it never began
            return task

        async with wrap(auth) as a:
            w = aio.Worker(a, prod, "aw", handler, concurrency=1, ttl=LONG,
                           grace=timedelta(0))
            loop.set_task_factory(factory)
            try:
                run_task.append(asyncio.ensure_future(w.run()))
                with pytest.raises(asyncio.CancelledError):
                    await run_task[0]
            finally:
                loop.set_task_factory(None)
            await a.settle()
            return w.stats

    stats = run(main())
    assert handled == []
    assert (stats.claimed, stats.completed, stats.failed, stats.lost) == (0, 0, 0, 0)
    assert stats.released == 1
    assert {v.state for v in auth.jobs(prod)} == {"requested"}


def test_worker_handler_task_cancelled_before_its_first_step_is_not_counted(
        auth: tenure.Authority, prod: str) -> None:
    """A handler task cancelled before its first step (the worker still
    running) hands its job back uncounted; the job is claimed again and
    completed, so each job is counted claimed once, by the run that
    handled it."""
    auth.submit_many(prod, [tenure.JobSpec(f"j{i}", b"x") for i in range(5)])
    handled: list[str] = []

    async def handler(job: aio.Job) -> dict[str, str]:
        handled.append(job.id)
        return {}

    async def main() -> aio.WorkerStats:
        loop = asyncio.get_running_loop()
        cancelled: list[bool] = []

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> Any:
            task = asyncio.Task(coro, loop=loop, **kw)
            if getattr(coro, "__name__", "") == "_call" and not cancelled:
                cancelled.append(True)
                task.cancel()  # before its first step
            return task

        async with wrap(auth) as a:
            loop.set_task_factory(factory)
            try:
                return await aio.Worker(a, prod, "aw", handler, concurrency=1, ttl=LONG,
                                        until_idle=True).run()
            finally:
                loop.set_task_factory(None)

    stats = run(main())
    assert sorted(handled) == [f"j{i}" for i in range(5)]
    assert (stats.claimed, stats.completed, stats.released, stats.lost) == (5, 5, 1, 0)
    assert {v.state for v in auth.jobs(prod)} == {"completed"}


def test_worker_gives_each_handler_its_own_payload(auth: tenure.Authority,
                                                   prod: str) -> None:
    """The payload read in the claiming call is the claimed job's; each
    job completes with its handler's facts."""
    auth.submit_many(prod, [tenure.JobSpec(f"j{i:03}", str(i).encode()) for i in range(50)])

    async def handler(job: aio.Job) -> dict[str, str]:
        return {"n": job.payload.decode()}

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            return await aio.Worker(a, prod, "aw", handler, concurrency=16, ttl=LONG,
                                    until_idle=True).run()

    stats = run(main())
    assert (stats.claimed, stats.completed, stats.released, stats.lost) == (50, 50, 0, 0)
    for i in range(50):
        assert {f.key: f.value for f in auth.facts(prod, f"j{i:03}")}["n"] == str(i)


def test_worker_handler_errors_of_every_kind_are_retryable_failures(auth: tenure.Authority,
                                                                    prod: str) -> None:
    """Facts that are not facts, a handler that raises before it returns an
    awaitable, and a JobFailed whose arguments Lease.fail refuses each fail
    the job retryably with a reason naming why; nothing is left claimed."""
    for name in ("facts", "sync", "both", "long"):
        auth.submit(prod, name, name.encode(), max_attempts=1)

    def handler(job: aio.Job) -> Awaitable[Any]:
        if job.payload == b"sync":
            raise KeyError("no coroutine")

        async def work() -> Any:
            if job.payload == b"facts":
                return {"k": 1}  # a value that is not a str
            if job.payload == b"both":
                raise aio.JobFailed("x", permanent=True, retry_after=timedelta(seconds=1))
            raise aio.JobFailed("é" * 600)  # 1200 bytes: over the bound
        return work()

    stats = drain(auth, prod, handler)
    assert (stats.claimed, stats.failed, stats.completed, stats.lost) == (4, 4, 0, 0)
    errors = {name: auth.job(prod, name).last_error or "" for name in
              ("facts", "sync", "both", "long")}
    assert all(auth.job(prod, n).state == "failed" for n in errors)
    assert errors["facts"].startswith("TypeError: ")
    assert errors["sync"] == "KeyError: 'no coroutine'"
    assert errors["both"].startswith("InvalidArgument: ")
    assert errors["long"].startswith("InvalidArgument: ")


def test_worker_second_cancellation_cancels_handlers_at_once(auth: tenure.Authority,
                                                             prod: str) -> None:
    """Cancelling run starts the grace period; cancelling it again while it
    waits cancels the handlers now and releases their leases."""
    auth.submit_many(prod, [tenure.JobSpec(f"j{i}") for i in range(2)])
    started = 0

    async def handler(job: aio.Job) -> None:
        nonlocal started
        started += 1
        await asyncio.Event().wait()

    async def main() -> tuple[aio.WorkerStats, float]:
        async with wrap(auth) as a:
            w = aio.Worker(a, prod, "aw", handler, concurrency=2, ttl=LONG,
                           grace=timedelta(minutes=10))
            task = asyncio.ensure_future(w.run())
            await until(lambda: started == 2, "two handlers")
            task.cancel()
            await asyncio.sleep(0.1)
            assert not task.done()  # in its grace period
            t0 = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return w.stats, time.monotonic() - t0

    stats, took = run(main())
    assert took < 30
    assert (stats.claimed, stats.released, stats.completed) == (2, 2, 0)
    assert {v.state for v in auth.jobs(prod)} == {"requested"}


def test_worker_runs_no_python_threads_and_counts_live(auth: tenure.Authority,
                                                       prod: str) -> None:
    """The slots are native threads: the worker adds no Python thread; each
    handler runs on the loop's thread; stats are counted while it runs."""
    auth.submit_many(prod, [tenure.JobSpec(f"j{i:02}") for i in range(20)])
    threads: set[int] = set()
    seen: list[int] = []

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            w: aio.Worker

            async def handler(job: aio.Job) -> None:
                threads.add(threading.get_ident())
                seen.append(w.stats.claimed)
                assert threading.active_count() <= before

            before = threading.active_count()
            w = aio.Worker(a, prod, "aw", handler, concurrency=16, ttl=LONG, until_idle=True)
            assert w.stats == aio.WorkerStats()
            return await w.run()

    stats = run(main())
    assert threads == {threading.get_ident()}
    assert stats.completed == 20 and max(seen) >= 1


def test_aclose_stops_a_running_worker(store: Union[Path, str]) -> None:
    async def main() -> aio.WorkerStats:
        a = await aio.open(store)
        await a.create_production("p")

        async def handler(job: aio.Job) -> None:
            return None

        task = asyncio.ensure_future(aio.Worker(a, "p", "aw", handler, concurrency=4,
                                                ttl=LONG).run())
        await asyncio.sleep(0.2)
        await a.aclose()  # ends the worker's waits: its slots end
        return await asyncio.wait_for(task, 30)

    assert run(main()) == aio.WorkerStats()


def test_worker_across_three_productions_serves_each(auth: tenure.Authority) -> None:
    prods = ["pa", "pb", "pc"]
    for p in prods:
        auth.create_production(p)
        auth.submit_many(p, [tenure.JobSpec(f"{p}-{i}") for i in range(5)])
    served: list[str] = []

    async def handler(job: aio.Job) -> None:
        served.append(job.production)

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            w = aio.Worker(a, prods, "aw", handler, concurrency=2, ttl=LONG, until_idle=True)
            return await w.run()

    stats = run(main())
    assert stats.completed == 15
    assert sorted(served) == sorted(p for p in prods for _ in range(5))
    for p in prods:
        assert len(auth.jobs(p, state="completed")) == 5


def test_worker_with_schedules_enqueues_and_runs_the_slots(auth: tenure.Authority,
                                                           prod: str) -> None:
    auth.create_schedule(prod, "sec", every=timedelta(seconds=1))
    ran: list[str] = []

    async def handler(job: aio.Job) -> None:
        ran.append(job.id)

    async def main() -> aio.WorkerStats:
        async with wrap(auth) as a:
            stop = asyncio.Event()
            w = aio.Worker(a, prod, "aw", handler, concurrency=1, ttl=LONG, schedules=True)
            task = asyncio.ensure_future(w.run(stop))
            await until(lambda: len(ran) >= 2, "two scheduled slots run")
            stop.set()
            return await task

    stats = run(main())
    assert stats.completed >= 2
    assert all(j.startswith("sec@") and j.endswith("Z") for j in ran)
    for j in ran:
        assert auth.job(prod, j).state == "completed"
