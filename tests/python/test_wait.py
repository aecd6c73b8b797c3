"""Waiting for work: claim_next_wait wakes on a commit of another process,
ends at its timeout, on its cancel handle, on close(), and on a signal."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Union

import pytest

import tenure
from conftest import LONG, PY, python_env, wait_until

FOREVER = timedelta(minutes=10)

WAITER = """
import sys, tenure
from datetime import timedelta
auth = tenure.Authority(sys.argv[1])
print("waiting", flush=True)
lease = auth.claim_next_wait(sys.argv[2], "waiter", timedelta(minutes=10), timedelta(minutes=10))
print(lease.job, lease.claim_id, flush=True)
lease.complete({"by": "waiter"})
"""


def kinds(auth: tenure.Authority, prod: str) -> list[str]:
    return [e.kind for e in auth.production_events(prod)]


def test_a_waiter_in_another_process_wakes_on_a_submit(auth: tenure.Authority,
                                                       prod: str) -> None:
    p = subprocess.Popen([PY, "-c", WAITER, auth.path, prod], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=python_env())
    assert p.stdout is not None
    assert p.stdout.readline().split() == ["waiting"]
    time.sleep(0.3)  # let it reach the wait (if not, its first attempt claims the job)
    auth.submit(prod, "late")
    out, err = p.communicate(timeout=120)  # far below its 10-minute timeout
    assert p.returncode == 0, err
    job, claim = out.split()
    assert job == "late"
    assert auth.job(prod, "late").state == "completed"
    facts = {f.key: f.value for f in auth.facts(prod, "late")}
    assert facts["tenure.claim_id"] == claim and facts["by"] == "waiter"


def test_a_wait_wakes_on_a_release_in_this_process(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    held = auth.claim(prod, "j", "first", LONG)
    got: list[tenure.Lease] = []
    t = threading.Thread(target=lambda: got.append(
        auth.claim_next_wait(prod, "second", LONG, FOREVER)))
    t.start()
    time.sleep(0.2)
    assert not got
    held.release()
    t.join(120)
    assert not t.is_alive()
    assert got[0].job == "j" and got[0].attempt == 2 and got[0].holder == "second"
    got[0].complete()


def test_the_timeout_ends_a_wait_with_no_job_available_and_changes_nothing(
        auth: tenure.Authority, prod: str) -> None:
    before = kinds(auth, prod)
    with pytest.raises(tenure.NoJobAvailable) as e:
        auth.claim_next_wait(prod, "w", LONG, timedelta(milliseconds=50))
    assert e.value.code == tenure.NoJobAvailable.code and "within" in str(e.value)
    with pytest.raises(tenure.NoJobAvailable):
        auth.claim_next_wait(prod, "w", LONG, timedelta(0))  # zero: one attempt
    assert kinds(auth, prod) == before


def test_arguments_are_checked(auth: tenure.Authority, prod: str) -> None:
    with pytest.raises(TypeError, match="timeout"):
        auth.claim_next_wait(prod, "w", LONG, 5)  # type: ignore[arg-type]
    with pytest.raises(tenure.InvalidDuration):
        auth.claim_next_wait(prod, "w", LONG, timedelta(days=2))
    with pytest.raises(tenure.InvalidDuration):
        auth.claim_next_wait(prod, "w", LONG, -timedelta(seconds=1))
    with pytest.raises(TypeError):
        auth.claim_next_wait(prod, "w", LONG, LONG, cancel=threading.Event())  # type: ignore[arg-type]
    with pytest.raises(tenure.NotFound):
        auth.claim_next_wait("no-such-production", "w", LONG, FOREVER)


def wait_in_thread(auth: tenure.Authority, prod: str,
                   cancel: Union[tenure.WaitCancel, None] = None
                   ) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            auth.claim_next_wait(prod, "w", LONG, FOREVER, cancel=cancel)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.2)
    assert t.is_alive() and not errors
    return t, errors


def test_a_cancel_handle_ends_its_waits_at_once_and_changes_nothing(
        auth: tenure.Authority, prod: str) -> None:
    parent = tenure.WaitCancel()
    child = tenure.WaitCancel(parent)
    other = tenure.WaitCancel()
    before = kinds(auth, prod)
    waits = [wait_in_thread(auth, prod, c) for c in (parent, child, other)]
    parent.cancel()
    for t, errors in waits[:2]:
        t.join(120)
        assert not t.is_alive()
        assert isinstance(errors[0], tenure.NoJobAvailable) and "cancelled" in str(errors[0])
    assert parent.is_cancelled and child.is_cancelled and not other.is_cancelled
    assert waits[2][0].is_alive()  # an unrelated handle's wait goes on
    other.cancel()
    waits[2][0].join(120)
    assert repr(other) == "WaitCancel(is_cancelled=True)"
    # Cancellation is final: a later wait with the handle ends at once.
    with pytest.raises(tenure.NoJobAvailable, match="cancelled"):
        auth.claim_next_wait(prod, "w", LONG, FOREVER, cancel=child)
    auth.submit(prod, "j")
    with pytest.raises(tenure.NoJobAvailable, match="cancelled"):
        auth.claim_next_wait(prod, "w", LONG, FOREVER, cancel=tenure.WaitCancel(parent))
    assert kinds(auth, prod) == [*before, "submitted"]


def test_cancel_waits_and_close_end_the_waits_of_the_handle(store: Union[Path, str]) -> None:
    auth = tenure.Authority(store)
    auth.create_production("p")
    t, errors = wait_in_thread(auth, "p")
    auth.cancel_waits()
    t.join(120)
    assert isinstance(errors[0], tenure.NoJobAvailable) and "cancelled" in str(errors[0])

    auth.submit("p", "j")
    lease = auth.claim("p", "j", "w", LONG)
    waits = [wait_in_thread(auth, "p", c) for c in (None, tenure.WaitCancel())]
    auth.close()
    for t, errors in waits:
        t.join(120)
        assert not t.is_alive()
        assert isinstance(errors[0], tenure.NoJobAvailable) and "cancelled" in str(errors[0])
    for call in (lambda: auth.claim_next_wait("p", "w", LONG, FOREVER),
                 lambda: auth.job("p", "j"), auth.cancel_waits):
        with pytest.raises(tenure.InvalidArgument, match="closed"):
            call()
    auth.close()  # idempotent
    assert "Authority(path=" in repr(auth) and auth.path
    lease.complete()  # leases it gave keep working
    with tenure.Authority(store) as again:
        assert again.job("p", "j").state == "completed"
    with pytest.raises(tenure.InvalidArgument):
        again.job("p", "j")


# Python keeps SIGINT ignored when it starts with SIGINT ignored (as a
# background job of a shell without job control does): the script installs
# the handler that raises KeyboardInterrupt itself.
INTERRUPTED = """
import signal, sys, tenure
from datetime import timedelta
signal.signal(signal.SIGINT, signal.default_int_handler)
auth = tenure.Authority(sys.argv[1])
print("waiting", flush=True)
try:
    auth.claim_next_wait(sys.argv[2], "w", timedelta(minutes=10), timedelta(minutes=10))
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def signal_a_waiting_process(script: str, auth: tenure.Authority, prod: str,
                             sig: signal.Signals) -> list[str]:
    """Run ``script`` (which prints ``waiting`` and then waits for work on its
    main thread), send it ``sig`` while it waits, and return its output words."""
    before = kinds(auth, prod)
    p = subprocess.Popen([PY, "-c", script, auth.path, prod], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=python_env())
    assert p.stdout is not None
    assert p.stdout.readline().split() == ["waiting"]
    time.sleep(0.3)
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert kinds(auth, prod) == before  # the wait changed nothing
    return out.split()


def test_sigint_interrupts_a_wait_on_the_main_thread(auth: tenure.Authority, prod: str) -> None:
    assert signal_a_waiting_process(INTERRUPTED, auth, prod, signal.SIGINT) == ["interrupted"]


TERMINATED = """
import signal, sys, tenure
from datetime import timedelta
cancel = tenure.WaitCancel()
signal.signal(signal.SIGTERM, lambda *_: cancel.cancel())
auth = tenure.Authority(sys.argv[1])
print("waiting", flush=True)
try:
    auth.claim_next_wait(sys.argv[2], "w", timedelta(minutes=10), timedelta(minutes=10), cancel)
except tenure.NoJobAvailable as e:
    print("cancelled" if cancel.is_cancelled else "timeout", flush=True)
"""


def test_a_python_signal_handler_can_cancel_a_wait(auth: tenure.Authority, prod: str) -> None:
    """A handler that cancels the wait's handle runs while the main thread waits."""
    assert signal_a_waiting_process(TERMINATED, auth, prod, signal.SIGTERM) == ["cancelled"]


class Interrupted(Exception):
    pass


def test_a_claim_that_lands_with_an_interrupt_is_released(auth: tenure.Authority,
                                                          prod: str) -> None:
    """A signal handler raising on the main thread ends the wait; when the
    wait had claimed a job by then, the claim is released (the caller never
    receives the lease) and the handler's exception propagates."""
    def handler(signum: int, frame: object) -> None:
        auth.submit(prod, "j")  # rings the doorbell: the wait claims it
        wait_until(lambda: auth.job(prod, "j").state == "claimed", "the claim")
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        threading.Timer(0.2, lambda: signal.raise_signal(signal.SIGUSR1)).start()
        with pytest.raises(Interrupted):
            auth.claim_next_wait(prod, "w", LONG, FOREVER)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert kinds(auth, prod)[-3:] == ["submitted", "claimed", "released"]
    view = auth.job(prod, "j")
    assert view.state == "requested" and view.attempts == 1
