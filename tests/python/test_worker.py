"""The worker loop (tenure.Worker, the core's loop with a Python handler):
every job settled once and reported, retries, permanent failures, graceful
stop with a grace period, and a SIGTERM'd worker process releasing what it
holds."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Union

import pytest

import tenure
from conftest import LONG, PY, ROOT, fresh_store, python_env, wait_until

WORKER = ROOT / "python" / "examples" / "worker.py"
NEVER = timedelta(minutes=10)


def test_slots_run_every_job_once_and_report_each(auth: tenure.Authority, prod: str) -> None:
    jobs = [f"j{i:03}" for i in range(40)]
    auth.submit_many(prod, [tenure.JobSpec(j, j.encode()) for j in jobs])
    reports: list[tenure.Report] = []
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def handle(job: tenure.Job) -> dict[str, str]:
        assert job.payload == job.id.encode() and job.production == prod
        assert not job.stopping and job.lease_lost is None
        with lock:
            seen[job.id] += 1
        return {"len": str(len(job.payload))}

    def report(r: tenure.Report) -> None:
        with lock:
            reports.append(r)

    with tenure.Worker(auth, prod, "w-1", handle, ttl=LONG, slots=4, report=report) as w:
        wait_until(lambda: len(reports) == len(jobs), "every report")
        assert not w.stopped
    assert w.stopped and w.join(timedelta(0))
    assert seen == Counter({j: 1 for j in jobs})
    assert sorted(r.job for r in reports) == jobs
    assert {(r.result, r.state, r.error, r.attempt) for r in reports} == {
        ("completed", None, None, 1)}
    for r in reports:
        facts = {f.key: f.value for f in auth.facts(prod, r.job)}
        assert facts["len"] == "4" and facts["tenure.claim_id"] == r.claim_id
        assert facts["tenure.holder"] == "w-1"
    assert "Worker(production='p1', holder='w-1', slots=4, stopped=True)" == repr(w)


def test_outcomes_retry_fail_and_exceptions(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "flaky", b"flaky", max_attempts=3)
    auth.submit(prod, "bad", b"bad")
    auth.submit(prod, "raises", b"raises", max_attempts=1)
    auth.submit(prod, "wrong", b"wrong", max_attempts=1)
    auth.submit(prod, "plain", b"plain")
    auth.submit(prod, "reserved", b"reserved", max_attempts=1)
    reports: list[tenure.Report] = []

    def handle(job: tenure.Job) -> object:
        if job.payload == b"flaky":
            if job.attempt < 3:
                return tenure.Retry(f"try {job.attempt}", delay=timedelta(seconds=1))
            return tenure.Complete([("attempts", str(job.attempt))])
        if job.payload == b"bad":
            return tenure.Fail("bad input")
        if job.payload == b"raises":
            raise ValueError("boom")
        if job.payload == b"wrong":
            return 42  # not a result: a retryable failure naming the TypeError
        if job.payload == b"reserved":
            return {"tenure.holder": "forged"}  # refused facts: a retry naming why
        return None  # complete without facts

    with tenure.Worker(auth, prod, "w", handle, ttl=LONG, slots=2,  # type: ignore[arg-type]
                       report=reports.append) as w:
        wait_until(lambda: len(reports) == 8, "eight reports")
        w.stop()
        assert w.join()
    by_job: dict[str, list[tuple[str, object]]] = {}
    for r in sorted(reports, key=lambda r: (r.job, r.attempt)):
        by_job.setdefault(r.job, []).append((r.result, r.state))
    assert by_job == {
        "flaky": [("failed", "requested"), ("failed", "requested"), ("completed", None)],
        "bad": [("failed", "failed")],
        "raises": [("failed", "failed")],
        "wrong": [("failed", "failed")],
        "reserved": [("failed", "failed")],
        "plain": [("completed", None)],
    }
    assert auth.job(prod, "flaky").state == "completed"
    assert {f.key: f.value for f in auth.facts(prod, "flaky")}["attempts"] == "3"
    bad = auth.job(prod, "bad")
    assert bad.state == "failed" and bad.attempts == 1 and bad.last_error == "bad input"
    assert auth.job(prod, "raises").last_error == "ValueError: boom"
    assert (auth.job(prod, "wrong").last_error or "").startswith("TypeError: ")
    assert (auth.job(prod, "reserved").last_error or "").startswith("InvalidArgument: ")


def test_result_values() -> None:
    r = tenure.Retry("later", delay=timedelta(milliseconds=1500))
    assert r.reason == "later" and r.delay == timedelta(milliseconds=1500)
    assert repr(r) == "Retry(reason='later', delay=datetime.timedelta(seconds=1, microseconds=500000))"
    assert tenure.Retry().delay is None and tenure.Retry().reason == ""
    assert tenure.Fail("x").reason == "x" and repr(tenure.Fail("x")) == "Fail(reason='x')"
    assert tenure.Complete({"k": "v"}).facts == [("k", "v")]
    assert tenure.Complete().facts == []
    with pytest.raises(TypeError):
        tenure.Retry("x", delay=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tenure.Complete({"k": 1})  # type: ignore[dict-item]
    # Checked by the core's rules when made, not at the completion.
    with pytest.raises(tenure.InvalidArgument):
        tenure.Complete({"tenure.mine": "reserved"})
    for make in (tenure.Fail, tenure.Retry):
        with pytest.raises(tenure.InvalidArgument):
            make("x" * 1025)


def test_worker_arguments(auth: tenure.Authority, prod: str) -> None:
    def handle(job: tenure.Job) -> None:
        return None

    for kwargs, err in [
        ({"slots": 0}, tenure.InvalidArgument),
        ({"slots": -1}, tenure.InvalidArgument),
        ({"slots": 2000}, tenure.InvalidArgument),
        ({"renew_every": LONG}, tenure.InvalidDuration),
        ({"grace": 3}, TypeError),
    ]:
        with pytest.raises(err):
            tenure.Worker(auth, prod, "w", handle, ttl=LONG, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        tenure.Worker(auth, prod, "w", "not callable", ttl=LONG)  # type: ignore[arg-type]
    with pytest.raises(tenure.InvalidArgument):
        tenure.Worker(auth, "bad production!", "w", handle, ttl=LONG)


def test_a_stop_lets_handlers_finish_within_grace_and_releases_the_rest(
        auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "quick", b"quick")
    auth.submit(prod, "stuck", b"stuck")
    auth.submit(prod, "queued", b"queued")
    started: list[str] = []
    stuck = threading.Event()
    reports: list[tenure.Report] = []
    jobs: list[tenure.Job] = []

    def handle(job: tenure.Job) -> tenure.Complete:
        started.append(job.id)
        jobs.append(job)
        if job.payload == b"quick":
            wait_until(lambda: job.stopping, "the stop")
            return tenure.Complete({"after": "stop"})
        stuck.wait(120)  # past the grace period
        return tenure.Complete()

    w = tenure.Worker(auth, prod, "w", handle, ttl=LONG, slots=2,
                      grace=timedelta(milliseconds=300), report=reports.append)
    wait_until(lambda: len(started) == 2, "two handlers")
    assert not w.join(timedelta(milliseconds=50))  # not stopped: still running
    w.stop()
    assert w.join()
    stuck.set()
    results = {r.job: (r.result, r.state) for r in reports}
    assert results == {"quick": ("completed", None), "stuck": ("released", "requested")}
    assert auth.job(prod, "queued").state == "requested"  # no new job after the stop
    view = auth.job(prod, "stuck")
    assert view.state == "requested" and view.attempts == 1
    assert {f.key: f.value for f in auth.facts(prod, "quick")}["after"] == "stop"
    # The handler's Job outlives its call only as attribution (the quick
    # handler's call has returned; the stuck one's may still be returning).
    quick = next(j for j in jobs if j.payload == b"quick")
    with pytest.raises(tenure.InvalidArgument, match="returned"):
        quick.stopping
    assert "secret" not in repr(quick) and quick.claim_id in repr(quick)


def test_a_lost_lease_is_reported_with_its_error(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    reports: list[tenure.Report] = []
    lost: list[object] = []

    def handle(job: tenure.Job) -> tenure.Complete:
        auth.cancel(prod, "j")
        wait_until(lambda: job.lease_lost is not None, "the keeper's refusal")
        lost.append(job.lease_lost)
        return tenure.Complete()

    with tenure.Worker(auth, prod, "w", handle, ttl=timedelta(seconds=3),
                       renew_every=timedelta(milliseconds=50), report=reports.append):
        wait_until(lambda: len(reports) == 1, "the report")
    assert isinstance(lost[0], tenure.Cancelled)
    r = reports[0]
    assert r.result == "lost" and isinstance(r.error, tenure.Cancelled)
    assert r.error.code == tenure.Cancelled.code
    assert auth.job(prod, "j").state == "cancelled"


def test_a_failing_report_callback_does_not_stop_the_worker(
        auth: tenure.Authority, prod: str, monkeypatch: pytest.MonkeyPatch) -> None:
    caught: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: caught.append(u.exc_value))
    auth.submit(prod, "a")
    auth.submit(prod, "b")
    calls: list[str] = []

    def report(r: tenure.Report) -> None:
        calls.append(r.job)
        raise RuntimeError("a broken callback")

    with tenure.Worker(auth, prod, "w", lambda job: None, ttl=LONG, report=report):
        wait_until(lambda: len(calls) == 2, "both reports")
    assert {v.state for v in auth.jobs(prod)} == {"completed"}
    assert [str(e) for e in caught] == ["a broken callback"] * 2


SLOW = """
import sys, threading, tenure
from datetime import timedelta
auth = tenure.Authority(sys.argv[1])
lock = threading.Lock()
def handle(job):
    with lock:
        print("started", job.id, flush=True)
    threading.Event().wait(3600)
def report(r):
    with lock:
        print(r.result, r.job, r.state, flush=True)
w = tenure.Worker(auth, "batch", "slow", handle, ttl=timedelta(minutes=10), slots=2,
                  grace=timedelta(milliseconds=200), report=report)
w.stop_on_signals()
while not w.join(timedelta(milliseconds=100)):
    pass
print("stopped", flush=True)
"""


def test_a_sigtermed_worker_process_releases_what_it_holds(tmp_path: Path) -> None:
    store = fresh_store(tmp_path, "stop.db")
    auth = tenure.Authority(store)
    auth.create_production("batch")
    for i in range(3):
        auth.submit("batch", f"j{i}")
    p = subprocess.Popen([PY, "-c", SLOW, str(store)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=python_env())
    assert p.stdout is not None
    started = sorted(p.stdout.readline().split()[1] for _ in range(2))
    wait_until(lambda: len(auth.jobs("batch", state="claimed")) == 2, "two claims")
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    lines = out.splitlines()
    assert lines[-1] == "stopped"
    assert sorted(lines[:-1]) == [f"released {j} requested" for j in started]
    for job in started:
        view = auth.job("batch", job)
        assert view.state == "requested" and view.attempts == 1
    assert len(auth.jobs("batch", state="requested")) == 3
    assert auth.check().ok


def test_the_example_worker_stops_on_sigterm(tmp_path: Path) -> None:
    """The example exits 0 on SIGTERM while waiting for work (its waits are
    cancelled at once), and once its production is drained."""
    store = fresh_store(tmp_path, "ex.db")
    auth = tenure.Authority(store)
    auth.create_production("p")
    auth.submit("p", "held")
    held = auth.claim("p", "held", "someone-else", LONG)  # keeps it from being idle
    p = subprocess.Popen([PY, str(WORKER), str(store), "p", "ex"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=python_env())
    auth.submit("p", "one", b"1")
    wait_until(lambda: auth.job("p", "one").state == "completed", "the job")
    time.sleep(0.2)  # its signal handlers are installed right after it started
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.split()[:2] == ["completed", "one"]
    held.complete()

    auth.submit("p", "two", b"fail")
    auth.submit("p", "three", b"3")
    ex = subprocess.run([PY, str(WORKER), str(store), "p", "ex2", "2"], capture_output=True,
                        text=True, env=python_env(), timeout=300)
    assert ex.returncode == 0, ex.stderr
    assert [line.split()[1] for line in ex.stdout.splitlines()] == ["three"]
    assert auth.job("p", "two").state == "failed"
    assert auth.job("p", "two").last_error == "refused by the example"


def test_collecting_a_running_worker_stops_it(store: Union[Path, str]) -> None:
    auth = tenure.Authority(store)
    auth.create_production("p")
    w = tenure.Worker(auth, "p", "w", lambda job: None, ttl=LONG, slots=3)
    del w
    auth.submit("p", "later")
    time.sleep(0.5)  # a running slot would have been woken and claimed it
    assert auth.job("p", "later").state == "requested"


def test_a_worker_across_three_productions_serves_each(auth: tenure.Authority) -> None:
    prods = ["pa", "pb", "pc"]
    for p in prods:
        auth.create_production(p)
        auth.submit_many(p, [tenure.JobSpec(f"{p}-{i}") for i in range(5)])
    reports: list[tenure.Report] = []
    lock = threading.Lock()

    def report(r: tenure.Report) -> None:
        with lock:
            reports.append(r)

    with tenure.Worker(auth, prods, "w-across", lambda job: None, ttl=LONG, slots=2,
                       report=report) as w:
        wait_until(lambda: len(reports) == 15, "every report")
        assert repr(w).startswith("Worker(production=['pa', 'pb', 'pc'],")
    assert Counter(r.production for r in reports) == Counter({p: 5 for p in prods})
    assert {r.result for r in reports} == {"completed"}
    for p in prods:
        assert len(auth.jobs(p, state="completed")) == 5


def test_a_worker_production_list_is_checked_by_the_core(auth: tenure.Authority,
                                                          prod: str) -> None:
    with pytest.raises(tenure.InvalidArgument):
        tenure.Worker(auth, [prod, prod], "w", lambda job: None, ttl=LONG)
    with pytest.raises(tenure.InvalidArgument):
        tenure.Worker(auth, [], "w", lambda job: None, ttl=LONG)
    with pytest.raises(TypeError):
        tenure.Worker(auth, [prod, 3], "w", lambda job: None, ttl=LONG)  # type: ignore[list-item]


def test_a_worker_with_schedules_enqueues_and_runs_the_slots(auth: tenure.Authority,
                                                              prod: str) -> None:
    auth.create_schedule(prod, "sec", every=timedelta(seconds=1))
    ran: list[str] = []
    lock = threading.Lock()

    def handle(job: tenure.Job) -> None:
        with lock:
            ran.append(job.id)

    with tenure.Worker(auth, prod, "w-sched", handle, ttl=LONG, schedules=True):
        wait_until(lambda: len(ran) >= 2, "two scheduled slots run")
    assert all(j.startswith("sec@") and j.endswith("Z") for j in ran)
    for j in ran:
        assert auth.job(prod, j).state == "completed"
    auth.delete_schedule(prod, "sec")
