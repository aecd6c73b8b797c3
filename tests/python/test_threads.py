"""Threads: one Authority shared by 8 threads; store calls release the GIL."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

import tenure
from conftest import LONG, fresh_store, on_postgres, wait_until


@pytest.mark.parametrize("group_commit", [True, False])
def test_eight_threads_share_one_authority(tmp_path: Path, group_commit: bool) -> None:
    auth = tenure.Authority(fresh_store(tmp_path, "threads.db"), busy_timeout=timedelta(minutes=2),
                            group_commit=group_commit)
    auth.create_production("p")
    jobs = [f"j{i:03}" for i in range(200)]
    auth.submit_many("p", [tenure.JobSpec(j) for j in jobs])
    done: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            while True:
                try:
                    lease = auth.claim_next("p", f"thread-{n}", LONG)
                except tenure.NoJobAvailable:
                    return
                # Share the lease with a second thread for the renewal.
                t = threading.Thread(target=lease.renew, args=(timedelta(minutes=20),))
                t.start()
                t.join()
                lease.complete({"thread": str(n)})
                with lock:
                    done.append((lease.job, lease.claim_id))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    counts = Counter(j for j, _ in done)
    assert sorted(counts) == jobs and set(counts.values()) == {1}
    assert {v.state for v in auth.jobs("p", limit=1000)} == {"completed"}
    assert auth.check().ok


def test_store_wait_releases_the_gil(tmp_path: Path) -> None:
    """One thread holds the writer lock (an open Edit); another blocks in a
    store call until it is free; a third, pure-Python thread keeps counting.

    A profile hook in the blocked thread records the moment the native call
    starts (the interpreter's ``c_call`` event) with a plain store, after
    which that thread runs no Python bytecode until the call returns, so it
    cannot hand the GIL over in between. This thread can only observe the
    mark once the native call has released the GIL; if it did not, nothing
    else could run until the call gave up with ``Busy`` after its timeout,
    and the assertions below would fail. No timing is measured.
    """
    store = fresh_store(tmp_path, "gil.db")
    holder = tenure.Authority(store)
    holder.create_production("p")
    waiter = tenure.Authority(store, busy_timeout=timedelta(minutes=5))

    edit = holder.edit()  # SQLite: takes the writer lock
    if on_postgres():
        # No store-wide writer lock on a server: the edit's own submission of
        # the same new ID holds that ID's lock until it commits.
        edit.submit("p", "from-blocked-thread")
    result: list[object] = []
    entered = [False]

    def hook(frame: object, event: str, arg: object) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") == "submit":
            entered[0] = True  # a store: no GIL hand-over after this line

    def blocked() -> None:
        sys.setprofile(hook)
        try:
            result.append(waiter.submit("p", "from-blocked-thread"))
        except BaseException as e:
            result.append(e)
        finally:
            sys.setprofile(None)

    progress = 0
    stop = threading.Event()

    def counter() -> None:
        nonlocal progress
        while not stop.is_set():
            progress += 1

    b = threading.Thread(target=blocked, daemon=True)
    c = threading.Thread(target=counter, daemon=True)
    b.start()
    c.start()
    try:
        wait_until(lambda: entered[0] or bool(result), "the other thread to enter the store call")
        early = f"the store call returned while the lock was held: {result!r}"
        assert not result, early
        seen_then = progress
        wait_until(lambda: progress >= seen_then + 10_000, "the Python thread to progress")
        assert not result, early
        assert b.is_alive()
        edit.commit()  # this thread runs Python and native code meanwhile, too
    finally:
        stop.set()
        edit.abort()
        b.join()
        c.join()
    assert result == (["existing"] if on_postgres() else ["created"])
    assert holder.job("p", "from-blocked-thread").state == "requested"


def test_edit_shared_between_threads(auth: tenure.Authority, prod: str) -> None:
    edit = auth.edit()
    errors: list[BaseException] = []

    def submit(n: int) -> None:
        try:
            for i in range(20):
                edit.submit(prod, f"t{n}-{i}")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert edit.open and "open=True" in repr(edit)
    edit.commit()
    assert len(auth.jobs(prod, limit=1000)) == 160


def test_group_commit_takes_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        tenure.Authority(tmp_path / "t.db", group_commit="no")  # type: ignore[arg-type]
    assert not (tmp_path / "t.db").exists()
