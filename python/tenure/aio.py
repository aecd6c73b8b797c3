"""asyncio API over the same native objects as :mod:`tenure`.

Every store call here is a coroutine that runs the native call on a worker
thread, never on the event loop (the native calls release the GIL, so the
loop keeps running while they wait for the writer lock or the disk). Results
and exceptions are exactly the synchronous API's: the same value classes
(``JobView``, ``Event``, ...) and the same :class:`tenure.TenureError`
subclasses with the same ``code``. Standard library only.

Quick reference::

    from datetime import timedelta
    from tenure import aio

    async def main() -> None:
        async with await aio.open("jobs.db") as auth:
            await auth.create_production("nightly")
            await auth.submit("nightly", "build-1", b"make all")
            lease = await auth.claim_next("nightly", "worker-7", timedelta(seconds=30))
            async with lease.keep_alive(timedelta(seconds=30)):
                ...  # the work; renewed every 10 s on the loop, renewals off-loop
            await lease.complete({"artifact": "build-1.tar"})

Threads
    An :class:`Authority` owns a ``ThreadPoolExecutor`` (``max_workers``
    threads, 32 unless given); its calls and its leases' calls run there.
    :meth:`Authority.aclose` (or leaving ``async with``) cancels its waits
    for work, waits for hand-backs and shuts the pool down; an authority
    opened by :func:`open` is then closed (:meth:`tenure.Authority.close`),
    one wrapped with ``Authority(native)`` stays open for its owner.

Edits
    An edit holds the store's writer lock from its start to its commit or
    abort, and its transaction lives on one connection: every call of an
    :class:`Edit` - the ``edit()`` that begins it, each operation, the commit
    or abort - runs in order on one dedicated thread that the edit starts
    and ends. ``async with auth.edit() as e:`` commits when the block ends
    normally and aborts when it raises (the exception propagates).

Cancellation
    A cancelled ``await`` does not stop a native call that already started
    on its thread; it still commits. So every call that mints a lease is
    cancellation-safe: if ``claim`` / ``claim_next`` / ``claim_next_many`` /
    ``claim_next_wait``, or a claim under a request ID (``claim_idempotent`` /
    ``claim_next_idempotent`` / ``claim_next_many_idempotent``, its answer fresh or a
    replay), is cancelled and the claim then commits (or had committed while
    the task was being woken), every lease it returned is released on the
    authority's pool, since the caller never received it (a later retry of
    the same request then gets ``LeaseClosed``, never a second claim); if
    the call had not started yet it never runs. If the
    release itself is refused the lease is already closed or expired;
    ``Busy`` is retried three times, after which the lease is left to expire
    (never renewed by anyone). A cancelled ``claim_next_wait`` also cancels
    its native wait (through its own :class:`tenure.WaitCancel`), so the
    thread it waits on returns at once. :meth:`Authority.settle` waits for pending
    hand-backs. ``import_lease`` is not released on cancellation: the caller
    still holds the token. Inside an edit, a cancelled call leaves the edit
    in an unknown state: the block should let ``CancelledError`` propagate
    (the edit then aborts, and any lease the call minted stays pending and
    closes); if the block swallows it, the edit aborts at the end of the block
    anyway and :class:`EditInterrupted` is raised. Other calls (renew,
    release, fail, complete, submit, ...) that are cancelled after they
    started finish on their thread; their outcome shows in the store and in
    :attr:`Lease.status`.

Waiting for work
    ``await auth.claim_next_wait(production, holder, ttl, timeout,
    cancel=None)`` is :meth:`tenure.Authority.claim_next_wait` run on a thread
    of its own (not the pool, so waiting tasks never starve other calls):
    the event loop never blocks, and the wait wakes through the same doorbell
    as the synchronous wait. It ends at a claim, at ``timeout``
    (``NoJobAvailable``), when ``cancel`` (a :class:`tenure.WaitCancel`) is
    cancelled, when its task is cancelled, or at :meth:`Authority.aclose`.

Keepers
    ``async with lease.keep_alive(ttl, every=...)`` starts the native keeper
    (:meth:`tenure.Lease.keep_alive`) off the loop (one whose start went on
    after the entry was cancelled is stopped): a native thread, not a task on the
    event loop, renews the lease to now + ``ttl`` every ``every`` (``ttl / 3``
    unless given), so a busy loop never delays a renewal. Leaving the block
    stops it off the loop: no renewal happens after that, and one in flight
    is waited for. It stops on the first refused renewal (``Busy`` and
    ``StoreError`` are retried within 100 ms); the error is in
    :attr:`Keeper.error` and raised, with its own class and code, when
    the block exits normally (an exception from the block itself takes
    precedence). A keeper never releases: dropping the lease or leaving the
    block writes nothing.

Workers
    :class:`Worker` runs ``concurrency`` native slot threads that each claim
    a job, read its payload and start its keeper, never taking the GIL,
    then hand the job to the event loop through a native queue and a socket
    the loop watches (the async handler runs as a task there) and complete
    it (the handler's facts) or fail it (:class:`JobFailed` chooses retryable or permanent;
    any other exception is a retryable failure) once the task is done. It
    stops on a stop ``asyncio.Event`` or when its task is cancelled: no new
    claims (the waits for work are cancelled at once), running handlers get
    ``grace`` to finish, then are cancelled and their leases released.

Times
    The value classes carry aware UTC ``datetime`` attributes beside the
    integer microseconds (``expires_at`` beside ``expires_us``, ...), as in
    the synchronous API; :attr:`Lease.expires_at` too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from tenure import _native

if TYPE_CHECKING:
    from typing_extensions import Concatenate, Literal, ParamSpec, Self, TypeAlias

    from tenure._native import (
        _CancelOutcome,
        _CompleteItem,
        _Done,
        _EventKind,
        _Facts,
        _FailItem,
        _JobState,
        _LeaseStatus,
        _RenewedOrError,
        _ReplayedOrError,
        _StateOrError,
        _StateReplayedOrError,
        _Submitted,
    )

    _StorePath: TypeAlias = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
    _AnyLease: TypeAlias = Union["Lease", _native.Lease]
    _AioFailItem: TypeAlias = Union[tuple[_AnyLease, str], tuple[_AnyLease, str, bool]]
    _AioCompleteItem: TypeAlias = Union[_AnyLease, tuple[_AnyLease, _Facts]]

__all__ = [
    "DEFAULT_MAX_WORKERS",
    "Authority",
    "Edit",
    "EditInterrupted",
    "Job",
    "JobFailed",
    "Keeper",
    "Lease",
    "Worker",
    "WorkerStats",
    "open",
]

T = TypeVar("T")
if TYPE_CHECKING:
    _P = ParamSpec("_P")
M = TypeVar("M", _native.Lease, list[_native.Lease], tuple[_native.Lease, bool],
            tuple[list[Union[_native.Lease, _native.TenureError]], bool])

DEFAULT_MAX_WORKERS = 32
"""Threads of an :class:`Authority`'s pool unless ``max_workers`` is given."""

_HANDBACK_BUSY_TRIES = 3


def _quiet(fut: asyncio.Future[Any]) -> None:
    """Mark an abandoned future's outcome as retrieved (no "never retrieved" log)."""
    if not fut.cancelled():
        fut.exception()


def _outcome(fut: concurrent.futures.Future[T]) -> asyncio.Future[T]:
    """A loop future that gets ``fut``'s outcome once it is done. Unlike
    ``asyncio.wrap_future``, cancelling it (the awaiting task was
    cancelled) leaves ``fut`` alone: the call started or queued goes on, as
    under ``asyncio.shield``, and its outcome is dropped here."""
    loop = asyncio.get_running_loop()
    out: asyncio.Future[T] = loop.create_future()

    def copy(done: concurrent.futures.Future[T]) -> None:
        if out.cancelled():
            return
        if done.cancelled():
            out.cancel()
        elif (e := done.exception()) is not None:
            out.set_exception(e)
        else:
            out.set_result(done.result())

    def on_done(done: concurrent.futures.Future[T]) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(copy, done)

    fut.add_done_callback(on_done)
    return out


def _on_own_thread(call: Callable[[], T]) -> concurrent.futures.Future[T]:
    """Run ``call`` on a new daemon thread; like ``pool.submit``, cancelling
    the future before the call starts means it never runs."""
    fut: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(call())
        except BaseException as e:  # handed to the awaiting task
            fut.set_exception(e)

    threading.Thread(target=run, name="tenure-aio-wait", daemon=True).start()
    return fut


_Claimed: TypeAlias = Union[_native.Lease, list[_native.Lease], tuple[_native.Lease, bool],
                            tuple[list[Union[_native.Lease, _native.TenureError]], bool]]
_Minted: TypeAlias = _Claimed


def _claimed_leases(claimed: _Claimed) -> list[_native.Lease]:
    """The leases a claim minted: the lease, every lease of a batch, the
    lease (or batch) of a claim under a request (``(value, replayed)``;
    the errors of a batch's replay hold no lease)."""
    value = claimed[0] if isinstance(claimed, tuple) else claimed
    if isinstance(value, list):
        return [x for x in value if isinstance(x, _native.Lease)]
    return [value]


def _minted_count(minted: _Minted) -> int:
    """How many leases a hand-back of ``minted`` returns to the store."""
    return len(_claimed_leases(minted))


def _release_all_quietly(minted: _Minted) -> None:
    """Hand back the lease (or every lease of a batch) nobody received."""
    for lease in _claimed_leases(minted):
        _release_quietly(lease)


def _release_quietly(lease: _native.Lease) -> None:
    """Hand a lease nobody received back to the store (see the module docs)."""
    for _ in range(_HANDBACK_BUSY_TRIES):
        try:
            lease.release()
            return
        except _native.Busy:
            continue
        except _native.TenureError:
            return  # already closed, stale or expired: nothing is held


async def open(  # noqa: A001 - the module's entry point, like io.open
    path: _StorePath,
    *,
    synchronous: Literal["full", "normal"] = "full",
    busy_timeout: Optional[timedelta] = None,
    group_commit: bool = True,
    retention: Optional[_native.Retention] = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
) -> Authority:
    """Open (or create) a store off the event loop; the arguments are
    :class:`tenure.Authority`'s, plus the pool size."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="tenure-aio")
    loop = asyncio.get_running_loop()
    try:
        native = await loop.run_in_executor(
            pool, lambda: _native.Authority(path, synchronous=synchronous,
                                            busy_timeout=busy_timeout,
                                            group_commit=group_commit,
                                            retention=retention))
    except BaseException:
        pool.shutdown(wait=False)
        raise
    return Authority(native, _pool=pool, _owned=True)


# -- coroutines made from the native methods ---------------------------------
#
# A native method whose arguments and result need no aio wrapping (no lease
# passes in or out) has its coroutine made from the method itself: the same
# name, parameters, types and docstring (the stubs' and the wheel's), run on
# the pool. Those that take or mint leases are written out below.


def _named(call: Callable[..., Any], method: Callable[..., Any]) -> None:
    """Give the coroutine ``call`` the native ``method``'s name, docstring
    and, where the wheel declares one, signature."""
    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    try:
        call.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass


def _on_authority(method: Callable[Concatenate[_native.Authority, _P], T]
                  ) -> Callable[Concatenate[Authority, _P], Coroutine[Any, Any, T]]:
    """The coroutine of a native ``Authority`` method, run on the pool."""
    async def call(self: Authority, /, *args: _P.args, **kwargs: _P.kwargs) -> T:
        return await self._run(lambda: method(self._native, *args, **kwargs))
    _named(call, method)
    return call


def _on_writer(method: Callable[Concatenate[_native.Authority, _P], T]
               ) -> Callable[Concatenate[_Writes, _P], Coroutine[Any, Any, T]]:
    """The coroutine of an operation ``Authority`` and ``Edit`` share (typed
    from ``tenure.Authority``'s, the same as ``tenure.Edit``'s), run where
    the aio handle runs its calls, on its own native handle."""
    name = method.__name__

    async def call(self: _Writes, /, *args: _P.args, **kwargs: _P.kwargs) -> T:
        def run() -> T:
            native: Callable[_P, T] = getattr(self._target(), name)
            return native(*args, **kwargs)
        return await self._run(run)
    _named(call, method)
    return call


def _on_lease(method: Callable[Concatenate[_native.Lease, _P], T]
              ) -> Callable[Concatenate[Lease, _P], Coroutine[Any, Any, T]]:
    """The coroutine of a native ``Lease`` method, run on its authority's pool."""
    async def call(self: Lease, /, *args: _P.args, **kwargs: _P.kwargs) -> T:
        return await self._auth._run(lambda: method(self._native, *args, **kwargs))
    _named(call, method)
    return call


class _Writes:
    """The coroutines :class:`Authority` and :class:`Edit` share: the
    operations ``tenure.Authority`` and ``tenure.Edit`` share (the stubs'
    ``_Writer``), once. Each subclass says where its native calls run
    (:meth:`_run`), how a lease-minting call runs (:meth:`_minting`: on an
    authority cancellation-safe, see the module docs; in an edit like any
    other call, its leases pending until the commit), and on which native
    handle (:meth:`_target`)."""

    async def _run(self, call: Callable[[], T]) -> T:
        raise NotImplementedError

    async def _minting(self, call: Callable[[], M]) -> M:
        raise NotImplementedError

    def _target(self) -> _native._Writer:
        raise NotImplementedError

    def _authority(self) -> Authority:
        """The authority whose pool the leases minted here use."""
        raise NotImplementedError

    create_production = _on_writer(_native.Authority.create_production)
    cancel_production = _on_writer(_native.Authority.cancel_production)
    submit = _on_writer(_native.Authority.submit)
    set_production_backoff = _on_writer(_native.Authority.set_production_backoff)
    pause_production = _on_writer(_native.Authority.pause_production)
    resume_production = _on_writer(_native.Authority.resume_production)
    set_concurrency_limit = _on_writer(_native.Authority.set_concurrency_limit)
    clear_concurrency_limit = _on_writer(_native.Authority.clear_concurrency_limit)
    set_rate_limit = _on_writer(_native.Authority.set_rate_limit)
    clear_rate_limit = _on_writer(_native.Authority.clear_rate_limit)
    cancel = _on_writer(_native.Authority.cancel)

    # -- leases -------------------------------------------------------------

    async def claim(self, production: str, job: str, holder: str, ttl: timedelta) -> Lease:
        """Claim a named job (on an :class:`Authority` cancellation-safe, see
        the module docs)."""
        native = await self._minting(lambda: self._target().claim(production, job, holder, ttl))
        return Lease(native, self._authority())

    async def claim_next(self, production: str, holder: str, ttl: timedelta) -> Lease:
        """Claim the next claimable job (on an :class:`Authority`
        cancellation-safe, see the module docs); ``NoJobAvailable`` when there
        is none."""
        native = await self._minting(
            lambda: self._target().claim_next(production, holder, ttl))
        return Lease(native, self._authority())

    async def claim_idempotent(self, production: str, job: str, holder: str, ttl: timedelta,
                               request: _native.ClaimRequest) -> tuple[Lease, bool]:
        """Claim a named job under ``request``: ``(lease, replayed)`` (see
        :meth:`tenure.Authority.claim_idempotent`). On an :class:`Authority`
        cancellation-safe like :meth:`claim`: a lease the cancelled call
        returns, new or replayed, is handed back (a later retry of the request
        gets ``LeaseClosed``)."""
        native, replayed = await self._minting(
            lambda: self._target().claim_idempotent(production, job, holder, ttl, request))
        return Lease(native, self._authority()), replayed

    async def claim_next_idempotent(self, production: str, holder: str, ttl: timedelta,
                                    request: _native.ClaimRequest) -> tuple[Lease, bool]:
        """Claim the next claimable job under ``request``: ``(lease,
        replayed)``; cancellation-safe as :meth:`claim_idempotent`."""
        native, replayed = await self._minting(
            lambda: self._target().claim_next_idempotent(production, holder, ttl, request))
        return Lease(native, self._authority()), replayed

    # Batched calls: the synchronous API's outcomes (one per lease; a refused
    # lease's error is an exception object in the list, never raised).

    async def claim_next_many(self, production: str, holder: str, ttl: timedelta,
                              n: int) -> list[Lease]:
        """Claim up to ``n`` jobs in one operation (on an :class:`Authority`
        cancellation-safe: every lease of a cancelled call that commits anyway
        is handed back)."""
        natives = await self._minting(
            lambda: self._target().claim_next_many(production, holder, ttl, n))
        return [Lease(x, self._authority()) for x in natives]

    async def claim_next_many_idempotent(self, production: str, holder: str, ttl: timedelta,
                                         n: int, request: _native.ClaimRequest
                                         ) -> tuple[list[Union[Lease, _native.TenureError]], bool]:
        """:meth:`claim_next_many` under ``request``: ``(claims, replayed)``
        (see :meth:`tenure.Authority.claim_next_many_idempotent`);
        cancellation-safe as :meth:`claim_idempotent` (every lease the
        cancelled call returns is handed back)."""
        natives, replayed = await self._minting(
            lambda: self._target().claim_next_many_idempotent(production, holder, ttl, n,
                                                              request))
        return _wrap_claims(natives, self._authority()), replayed

    async def renew_many(self, leases: Iterable[Union[Lease, _native.Lease]],
                         ttl: timedelta) -> list[_Done]:
        ns = [_native_lease(x) for x in leases]
        return await self._run(lambda: self._target().renew_many(ns, ttl))

    async def release_many(self, leases: Iterable[Union[Lease, _native.Lease]]
                           ) -> list[_StateOrError]:
        ns = [_native_lease(x) for x in leases]
        return await self._run(lambda: self._target().release_many(ns))

    async def fail_many(self, items: Iterable[_AioFailItem]) -> list[_StateOrError]:
        ns = _native_fail_items(items)
        return await self._run(lambda: self._target().fail_many(ns))

    async def complete_many(self, items: Iterable[_AioCompleteItem]) -> list[_Done]:
        ns = _native_complete_items(items)
        return await self._run(lambda: self._target().complete_many(ns))


class Authority(_Writes):
    """Async handle over a :class:`tenure.Authority` (see the module docs).

    ``Authority(native, max_workers=32)`` wraps an authority opened with the
    synchronous API; :func:`open` opens one off the loop. An async context
    manager: leaving it calls :meth:`aclose`.
    """

    def __init__(self, native: _native.Authority, *, max_workers: int = DEFAULT_MAX_WORKERS,
                 _pool: Optional[concurrent.futures.ThreadPoolExecutor] = None,
                 _owned: bool = False) -> None:
        if not isinstance(native, _native.Authority):
            raise TypeError(f"native must be a tenure.Authority, not {type(native).__name__}")
        self._native = native
        self._pool = _pool or concurrent.futures.ThreadPoolExecutor(
            max_workers, thread_name_prefix="tenure-aio")
        # Cancelled claims still running, and the releases handing them back.
        self._handbacks: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()
        self._handed_back = 0
        self._owned = _owned
        # The cancel handles of the waits for work in progress.
        self._waits: set[_native.WaitCancel] = set()

    @property
    def native(self) -> _native.Authority:
        """The synchronous authority underneath (shared, thread-safe)."""
        return self._native

    @property
    def path(self) -> str:
        """The store's path as opened (see :attr:`tenure.Authority.path`)."""
        return self._native.path

    @property
    def migrated_from(self) -> int:
        """The schema version found when the store was opened."""
        return self._native.migrated_from

    @property
    def handed_back(self) -> int:
        """How many leases of cancelled claims were handed back so far."""
        with self._lock:
            return self._handed_back

    def __repr__(self) -> str:
        return f"aio.{self._native!r}"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc_value: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Cancel the waits for work in progress, wait for pending
        hand-backs, then shut the pool down (waiting for calls in flight)
        and close an authority :func:`open` opened. Calls made afterwards
        raise ``RuntimeError`` (or ``InvalidArgument`` once closed)."""
        with self._lock:
            waits = list(self._waits)
        for w in waits:
            w.cancel()
        await self.settle()
        await asyncio.get_running_loop().run_in_executor(None, self._pool.shutdown)
        if self._owned:
            self._native.close()

    async def settle(self) -> int:
        """Wait until every cancelled claim still running has finished and
        every hand-back (see the module docs) is done; returns how many
        leases were handed back in total."""
        while True:
            with self._lock:
                pending = list(self._handbacks)
            if not pending:
                return self.handed_back
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: concurrent.futures.wait(pending))

    # -- running native calls --------------------------------------------

    async def _run(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def _target(self) -> _native.Authority:
        return self._native

    def _authority(self) -> Authority:
        return self

    async def _mint(self, call: Callable[[], _native.Lease],
                    wait: Optional[_native.WaitCancel] = None) -> Lease:
        """Run a lease-minting call; hand its lease back if the awaiting task
        is cancelled and the call commits anyway."""
        return Lease(await self._minting(call, wait), self)

    async def _minting(self, call: Callable[[], M],
                       wait: Optional[_native.WaitCancel] = None) -> M:
        """Run a call minting a lease, a list of leases or a claim under a
        request (``(lease or slots, replayed)``) (on the pool, or for a wait
        for work, whose cancel handle is ``wait``, on a thread of its own);
        on cancellation every lease it minted is handed back."""
        fut = self._pool.submit(call) if wait is None else _on_own_thread(call)
        try:
            native = await _outcome(fut)
        except asyncio.CancelledError:
            if wait is not None:
                wait.cancel()  # the native wait returns at once
            if not fut.cancel():  # running or done: it may have committed
                with self._lock:
                    self._handbacks.add(fut)
                fut.add_done_callback(self._hand_back)
            raise
        return native

    def _hand_back(self, fut: concurrent.futures.Future[Any]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            with self._lock:
                self._handbacks.discard(fut)
            return
        lease = fut.result()
        count = _minted_count(lease)
        try:
            done = self._pool.submit(_release_all_quietly, lease)
        except RuntimeError:  # the pool is shut down: release here
            _release_all_quietly(lease)
            with self._lock:
                self._handbacks.discard(fut)
                self._handed_back += count
            return
        with self._lock:
            self._handbacks.add(done)
            self._handbacks.discard(fut)
        done.add_done_callback(lambda f: self._handed(f, count))

    def _handed(self, fut: concurrent.futures.Future[Any], count: int) -> None:
        with self._lock:
            self._handbacks.discard(fut)
            self._handed_back += count

    # -- productions and submissions ---------------------------------------

    def edit(self) -> Edit:
        """An edit: ``async with auth.edit() as e:`` (see :class:`Edit`)."""
        return Edit(self)

    productions = _on_authority(_native.Authority.productions)

    async def submit_many(self, production: str,
                          jobs: Iterable[_native.JobSpec]) -> list[_Submitted]:
        specs = list(jobs)
        return await self._run(lambda: self._native.submit_many(production, specs))

    # -- leases -------------------------------------------------------------

    async def claim_next_wait(self, production: str, holder: str, ttl: timedelta,
                              timeout: timedelta,
                              cancel: Optional[_native.WaitCancel] = None) -> Lease:
        """Wait up to ``timeout`` for a claimable job and claim it (see the
        module docs); ``NoJobAvailable`` at the timeout or when cancelled by
        ``cancel``, :meth:`aclose` or :meth:`tenure.Authority.close`. A
        cancelled task cancels the native wait; a claim that committed
        anyway is handed back."""
        own = _native.WaitCancel(cancel)
        with self._lock:
            self._waits.add(own)
        try:
            return await self._mint(
                lambda: self._native.claim_next_wait(production, holder, ttl, timeout, own),
                wait=own)
        finally:
            with self._lock:
                self._waits.discard(own)

    # Idempotent batched calls: per lease what the single ``*_idempotent``
    # call returns, or the lease's error as an exception object.

    async def renew_many_idempotent(self, leases: Iterable[Union[Lease, _native.Lease]],
                                    ttl: timedelta) -> list[_RenewedOrError]:
        ns = [_native_lease(x) for x in leases]
        return await self._run(lambda: self._native.renew_many_idempotent(ns, ttl))

    async def release_many_idempotent(self, leases: Iterable[Union[Lease, _native.Lease]]
                                      ) -> list[_StateReplayedOrError]:
        ns = [_native_lease(x) for x in leases]
        return await self._run(lambda: self._native.release_many_idempotent(ns))

    async def fail_many_idempotent(self, items: Iterable[_AioFailItem]
                                   ) -> list[_StateReplayedOrError]:
        ns = _native_fail_items(items)
        return await self._run(lambda: self._native.fail_many_idempotent(ns))

    async def complete_many_idempotent(self, items: Iterable[_AioCompleteItem]
                                       ) -> list[_ReplayedOrError]:
        ns = _native_complete_items(items)
        return await self._run(lambda: self._native.complete_many_idempotent(ns))

    async def import_lease(self, token: str) -> Lease:
        """Import a token from another process (not released on cancellation:
        the caller still holds the token)."""
        native = await self._run(lambda: self._native.import_lease(token))
        return Lease(native, self)

    def lease(self, native: _native.Lease) -> Lease:
        """Wrap a lease obtained from the synchronous API."""
        if not isinstance(native, _native.Lease):
            raise TypeError(f"native must be a tenure.Lease, not {type(native).__name__}")
        return Lease(native, self)

    async def claim_next_across(self, productions: Sequence[str], holder: str,
                                ttl: timedelta) -> Lease:
        """Claim across productions, rotating (see
        :meth:`tenure.Authority.claim_next_across`)."""
        names = list(productions)
        return await self._mint(
            lambda: self._native.claim_next_across(names, holder, ttl))

    async def claim_next_many_across(self, productions: Sequence[str], holder: str,
                                     ttl: timedelta, n: int) -> list[Lease]:
        """Claim up to ``n`` across productions (see
        :meth:`tenure.Authority.claim_next_many_across`); leases minted by
        a cancelled task are handed back."""
        names = list(productions)
        native = await self._minting(
            lambda: self._native.claim_next_many_across(names, holder, ttl, n))
        return [Lease(x, self) for x in native]

    async def claim_next_wait_across(self, productions: Sequence[str], holder: str,
                                     ttl: timedelta, timeout: timedelta,
                                     cancel: Optional[_native.WaitCancel] = None) -> Lease:
        """:meth:`claim_next_wait` across productions (see
        :meth:`tenure.Authority.claim_next_wait_across`)."""
        names = list(productions)
        own = _native.WaitCancel(cancel)
        with self._lock:
            self._waits.add(own)
        try:
            return await self._mint(
                lambda: self._native.claim_next_wait_across(names, holder, ttl, timeout, own),
                wait=own)
        finally:
            with self._lock:
                self._waits.discard(own)

    requeue = _on_authority(_native.Authority.requeue)
    requeue_all = _on_authority(_native.Authority.requeue_all)

    # -- observations -------------------------------------------------------

    job = _on_authority(_native.Authority.job)
    production_gates = _on_authority(_native.Authority.production_gates)
    payload = _on_authority(_native.Authority.payload)
    next_due_us = _on_authority(_native.Authority.next_due_us)
    jobs = _on_authority(_native.Authority.jobs)
    facts = _on_authority(_native.Authority.facts)
    production_facts = _on_authority(_native.Authority.production_facts)
    events = _on_authority(_native.Authority.events)
    production_events = _on_authority(_native.Authority.production_events)
    clock = _on_authority(_native.Authority.clock)
    stats = _on_authority(_native.Authority.stats)
    check = _on_authority(_native.Authority.check)

    # -- retention ------------------------------------------------------------

    history_horizon = _on_authority(_native.Authority.history_horizon)
    prune = _on_authority(_native.Authority.prune)
    delete_production = _on_authority(_native.Authority.delete_production)

    async def export_production(self, production: str) -> list[str]:
        """The export's JSON lines (see :meth:`tenure.Authority.export_production`),
        read off the loop, as a list."""
        return await self._run(lambda: list(self._native.export_production(production)))

    vacuum = _on_authority(_native.Authority.vacuum)

    # -- schedules (docs/schedules.md) -----------------------------------------

    create_schedule = _on_authority(_native.Authority.create_schedule)
    update_schedule = _on_authority(_native.Authority.update_schedule)
    pause_schedule = _on_authority(_native.Authority.pause_schedule)
    resume_schedule = _on_authority(_native.Authority.resume_schedule)
    delete_schedule = _on_authority(_native.Authority.delete_schedule)
    schedules = _on_authority(_native.Authority.schedules)
    run_schedules = _on_authority(_native.Authority.run_schedules)


def _native_lease(lease: Union[Lease, _native.Lease]) -> _native.Lease:
    return lease.native if isinstance(lease, Lease) else lease


def _wrap_claims(claims: list[Union[_native.Lease, _native.TenureError]],
                 auth: Authority) -> list[Union[Lease, _native.TenureError]]:
    """A batch claim's slots with each lease wrapped (errors stay as they are)."""
    return [Lease(x, auth) if isinstance(x, _native.Lease) else x for x in claims]


def _native_fail_items(items: Iterable[_AioFailItem]) -> list[_FailItem]:
    out: list[_FailItem] = []
    for item in items:
        if not isinstance(item, tuple):
            raise TypeError("items must be (lease, reason) or (lease, reason, permanent) tuples")
        lease = _native_lease(item[0])
        if len(item) == 2:
            out.append((lease, item[1]))
        else:
            out.append((lease, item[1], item[2]))
    return out


def _native_complete_items(items: Iterable[_AioCompleteItem]) -> list[_CompleteItem]:
    out: list[_CompleteItem] = []
    for item in items:
        if isinstance(item, tuple):
            out.append((_native_lease(item[0]), item[1]))
        else:
            out.append(_native_lease(item))
    return out


class Lease:
    """Async handle over a :class:`tenure.Lease`: the same attributes (read
    locally, no I/O) and coroutine forms of its store calls, run on the
    authority's pool. Dropping it writes nothing."""

    __slots__ = ("_native", "_auth")

    def __init__(self, native: _native.Lease, auth: Authority) -> None:
        self._native = native
        self._auth = auth

    @property
    def native(self) -> _native.Lease:
        """The synchronous lease underneath."""
        return self._native

    @property
    def production(self) -> str:
        return self._native.production

    @property
    def job(self) -> str:
        return self._native.job

    @property
    def claim_id(self) -> str:
        return self._native.claim_id

    @property
    def attempt(self) -> int:
        return self._native.attempt

    @property
    def holder(self) -> str:
        return self._native.holder

    @property
    def expires_us(self) -> int:
        return self._native.expires_us

    @property
    def expires_at(self) -> datetime:
        return self._native.expires_at

    @property
    def status(self) -> _LeaseStatus:
        return self._native.status

    def __repr__(self) -> str:
        return f"aio.{self._native!r}"

    renew = _on_lease(_native.Lease.renew)
    checkpoint = _on_lease(_native.Lease.checkpoint)
    renew_checkpoint = _on_lease(_native.Lease.renew_checkpoint)
    progress = _on_lease(_native.Lease.progress)
    release = _on_lease(_native.Lease.release)
    fail = _on_lease(_native.Lease.fail)
    complete = _on_lease(_native.Lease.complete)
    renew_idempotent = _on_lease(_native.Lease.renew_idempotent)
    release_idempotent = _on_lease(_native.Lease.release_idempotent)
    fail_idempotent = _on_lease(_native.Lease.fail_idempotent)
    complete_idempotent = _on_lease(_native.Lease.complete_idempotent)

    def export_token(self) -> str:
        """The credential as text (no I/O; treat it like a password)."""
        return self._native.export_token()

    def keep_alive(self, ttl: timedelta, every: Optional[timedelta] = None) -> Keeper:
        """A keeper: ``async with lease.keep_alive(ttl, every=...)`` (see :class:`Keeper`)."""
        return Keeper(self, ttl, every)


def _duration(value: object, param: str) -> timedelta:
    if not isinstance(value, timedelta):
        raise TypeError(f"{param} must be a datetime.timedelta, not {type(value).__name__}")
    if value <= timedelta(0):
        raise _native.InvalidDuration(f"{param} must be positive")
    return value


def _period(ttl: timedelta, every: Optional[timedelta]) -> tuple[timedelta, timedelta]:
    """A keeper's ``(ttl, every)``: both positive timedeltas, ``every``
    (``ttl / 3`` unless given) shorter than ``ttl``."""
    ttl = _duration(ttl, "ttl")
    every = ttl / 3 if every is None else _duration(every, "every")
    if every >= ttl:
        raise _native.InvalidDuration("every must be shorter than ttl")
    return ttl, every


class Keeper:
    """Renews a lease on a native thread while its ``async with`` block runs.

    Entering starts :meth:`tenure.Lease.keep_alive` off the loop (if the
    entry is cancelled, a keeper that started anyway is stopped): every ``every``
    (``ttl / 3`` unless given; it must be shorter than ``ttl``) a native
    thread renews the lease to now + ``ttl``. Leaving the block stops it off
    the event loop; no renewal happens after that, and one in flight is
    waited for. The first refused renewal stops it (``Busy`` and
    ``StoreError`` are retried within 100 ms); the error is in
    :attr:`error` and raised when the block exits normally. It never
    releases the lease.
    """

    def __init__(self, lease: Lease, ttl: timedelta, every: Optional[timedelta] = None) -> None:
        self._lease = lease
        self._ttl, self._every = _period(ttl, every)
        self._keeper: Optional[_native.Keeper] = None
        self._entered = False

    @property
    def native(self) -> Optional[_native.Keeper]:
        """The native keeper underneath, once entered."""
        return self._keeper

    @property
    def renewals(self) -> int:
        """Renewals that committed."""
        return 0 if self._keeper is None else self._keeper.renewals

    @property
    def error(self) -> Optional[BaseException]:
        """The error that stopped the keeper, if one did."""
        return None if self._keeper is None else self._keeper.error

    @property
    def running(self) -> bool:
        """True while renewals may still happen."""
        return self._keeper is not None and self._keeper.status == "running"

    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError("an aio.Keeper runs once")
        self._entered = True
        # Started off the loop (it starts a thread); if this entry is
        # cancelled, a keeper that started anyway is stopped there.
        fut = self._lease._auth._pool.submit(self._lease.native.keep_alive,
                                             self._ttl, self._every)
        try:
            self._keeper = await _outcome(fut)
        except asyncio.CancelledError:
            if not fut.cancel():
                fut.add_done_callback(_stop_if_started)
            raise
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc_value: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        keeper = self._keeper
        assert keeper is not None
        # Off the loop (a renewal in flight is waited for) and shielded: even
        # if this exit is cancelled, the keeper stops.
        await _outcome(self._lease._auth._pool.submit(keeper.stop))
        if exc_type is None and keeper.error is not None:
            raise keeper.error


def _stop_if_started(fut: concurrent.futures.Future[_native.Keeper]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        fut.result().stop()


def _abort_if_begun(fut: concurrent.futures.Future[_native.Edit]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        fut.result().abort()


class EditInterrupted(RuntimeError):
    """A call inside an edit was cancelled after it started and the block went
    on: the edit was aborted at the end of the block instead of committed."""


class Edit(_Writes):
    """Async form of :class:`tenure.Edit`: ``async with auth.edit() as e:``.

    Entering begins the edit (waiting for the writer lock off the loop);
    every call runs in order on the edit's own thread; leaving commits (or
    aborts if the block raised). Leases claimed in it are ``"pending"`` until
    the commit. ``commit()`` / ``abort()`` inside the block finish it early.
    """

    def __init__(self, auth: Authority) -> None:
        self._auth = auth
        self._native: Optional[_native.Edit] = None
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._finished = False
        self._interrupted = False

    @property
    def open(self) -> bool:
        """True from entering until the edit commits or aborts."""
        return self._native is not None and not self._finished

    def __repr__(self) -> str:
        return f"aio.Edit(path={self._auth.path!r}, open={self.open})"

    async def __aenter__(self) -> Self:
        if self._pool is not None:
            raise RuntimeError("an aio.Edit is entered once")
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tenure-aio-edit")
        fut = self._pool.submit(self._auth.native.edit)
        try:
            self._native = await _outcome(fut)
        except BaseException:
            # Cancelled or refused: an edit that began anyway is aborted on its thread.
            fut.add_done_callback(_abort_if_begun)
            self._pool.shutdown(wait=False)
            self._finished = True
            raise
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc_value: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        if self._finished or self._native is None or self._pool is None:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
            return
        native = self._native
        commit = exc_type is None and not self._interrupted
        fut = self._pool.submit(native.commit if commit else native.abort)
        self._pool.shutdown(wait=False)
        self._finished = True
        await _outcome(fut)
        if exc_type is None and self._interrupted:
            raise EditInterrupted("a call inside the edit was cancelled after it started; "
                                  "the edit was aborted")

    async def _run(self, call: Callable[[], T]) -> T:
        if self._pool is None or self._native is None:
            raise RuntimeError("use an aio.Edit with `async with auth.edit() as e:`")
        if self._finished:
            raise _native.InvalidArgument("the edit has already finished")
        fut = self._pool.submit(call)
        try:
            return await _outcome(fut)
        except asyncio.CancelledError:
            if not fut.cancel():
                self._interrupted = True
            raise

    async def _minting(self, call: Callable[[], M]) -> M:
        return await self._run(call)

    def _target(self) -> _native.Edit:
        assert self._native is not None
        return self._native

    def _authority(self) -> Authority:
        return self._auth

    async def renew(self, lease: Union[Lease, _native.Lease], ttl: timedelta) -> None:
        n = _native_lease(lease)
        await self._run(lambda: self._target().renew(n, ttl))

    async def release(self, lease: Union[Lease, _native.Lease]) -> _JobState:
        n = _native_lease(lease)
        return await self._run(lambda: self._target().release(n))

    async def fail(self, lease: Union[Lease, _native.Lease], reason: str = "", *,
                   permanent: bool = False,
                   retry_after: Optional[timedelta] = None) -> _JobState:
        n = _native_lease(lease)
        return await self._run(lambda: self._target().fail(
            n, reason, permanent=permanent, retry_after=retry_after))

    async def complete(self, lease: Union[Lease, _native.Lease], facts: _Facts = None) -> None:
        n = _native_lease(lease)
        await self._run(lambda: self._target().complete(n, facts))

    async def commit(self) -> None:
        """Commit now (pending leases become active); the edit is finished."""
        await self._run(self._target().commit)
        self._finished = True

    async def abort(self) -> None:
        """Roll back now (pending leases close); the edit is finished."""
        await self._run(self._target().abort)
        self._finished = True


# -- the worker loop ---------------------------------------------------------


class JobFailed(Exception):
    """Raise from a handler to fail the job with ``reason``; ``permanent``
    fails it for good instead of requesting it again; ``retry_after`` (a
    ``timedelta``) makes a retryable failure due again that long after it
    (:meth:`tenure.Lease.fail`), else the job's or production's back-off
    applies."""

    def __init__(self, reason: str = "", *, permanent: bool = False,
                 retry_after: Optional[timedelta] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.retry_after = retry_after


@dataclass(frozen=True)
class Job:
    """What a handler receives: the lease (kept alive while the handler runs)
    and the job's payload."""

    lease: Lease
    payload: bytes

    @property
    def production(self) -> str:
        return self.lease.production

    @property
    def id(self) -> str:
        return self.lease.job

    async def progress(self) -> Optional[bytes]:
        """The job's progress checkpoint as stored now: an earlier attempt's
        until this one writes its own (:meth:`Lease.progress`)."""
        return await self.lease.progress()

    async def checkpoint(self, progress: bytes) -> None:
        """Store ``progress`` as the job's checkpoint with its lease
        (:meth:`Lease.checkpoint`)."""
        await self.lease.checkpoint(progress)


@dataclass
class WorkerStats:
    """What a :class:`Worker` did: jobs claimed, completed, failed (either
    kind), released (stop or cancellation), and lost (the lease was refused:
    expired, taken over or cancelled by a coordinator)."""

    claimed: int = 0
    completed: int = 0
    failed: int = 0
    released: int = 0
    lost: int = 0


_WAIT_TIMEOUT = timedelta(seconds=60)


async def _call(handler: Callable[[Job], Awaitable[_Facts]], job: Job,
                ticket: _native._AioTicket) -> _Facts:
    """The handler's task: a handler that raises before it returns an
    awaitable fails its job like one that raises while awaited. The first
    step tells the ticket the handler began (a task cancelled before it
    never calls the handler: its job is handed back, not counted)."""
    ticket.begin()
    return await handler(job)


class Worker:
    """An async worker loop over one production, or several, with bounded
    concurrency.

    ``production`` is a production ID or a sequence of them (1 ..= 64,
    distinct): with several, each slot claims across them, rotating
    (:meth:`tenure.Authority.claim_next_wait_across`). With
    ``schedules=True`` the worker also runs the store's schedules while
    :meth:`run` runs: the core's scheduler loop (``run_schedules_until``, a
    :meth:`tenure.Authority.run_schedules` step at each due slot) on a
    native thread of its own, stopped with the worker (a failed step is
    tried again a second later).

    ``concurrency`` slots each claim a job (``holder``, ``ttl``), fetch its
    payload, run ``handler(job)`` under a keeper (``renew_every``, ``ttl / 3``
    unless given) and then complete the job with the facts the handler
    returned, or fail it when the handler raised (:class:`JobFailed` says
    whether permanently and, with ``retry_after``, when to retry; any other
    exception, or facts that are not valid facts, is a retryable failure
    whose reason is the exception's class and text, at most 1024 bytes).

    The slots are native threads (``tenure._AioWorker``) that never take
    the GIL: each waits for work with :meth:`tenure.Authority.claim_next_wait`
    (waits of ``wait_timeout``, 60 s unless given; with ``until_idle``,
    zero: a single attempt), reads the payload, starts the keeper and then
    queues the job natively and wakes the event loop through a socket it
    watches (``loop.add_reader``, so the loop must support it: the default
    Unix loops do); the loop's reader callback starts the handler task of
    every ready job, and the slot waits for its task and settles the lease
    itself. The event loop runs one callback per batch of ready jobs and
    the handlers, nothing else.

    :meth:`run` returns when ``stop`` is set, when ``until_idle`` is true
    and every slot's wait found nothing claimable, or raises
    ``CancelledError`` when its task is cancelled. Stopping takes no new
    jobs (the waits are cancelled at once; a claim that lands after the
    stop is released), gives running handlers ``grace`` to finish, then
    cancels them and releases their leases (a second cancellation of
    :meth:`run` while it waits cancels them at once). A wait for work that
    ends because the store server is away (a lost or refused connection,
    ``57P01``/``57P03``, no free connection slot) backs that slot off,
    50 ms doubling to 2 s, jittered, and tries again: the keepers go on
    renewing within each lease's remaining time, completions and failures
    are retried until their lease expires, and :attr:`outages` counts the
    outages ridden out; with ``outage_limit`` set, a server away longer
    than that stops the worker and the error is raised from :meth:`run`
    (default: never). A wait that ends with any other ``Busy`` pauses that
    slot 100 ms; any other store error from it (not ``NoJobAvailable``)
    stops the worker the same way and is raised from :meth:`run`.
    """

    def __init__(self, auth: Authority, production: Union[str, Sequence[str]], holder: str,
                 handler: Callable[[Job], Awaitable[_Facts]], *,
                 concurrency: int = 16, ttl: timedelta = timedelta(seconds=30),
                 renew_every: Optional[timedelta] = None,
                 grace: timedelta = timedelta(seconds=10), until_idle: bool = False,
                 wait_timeout: Optional[timedelta] = None,
                 outage_limit: Optional[timedelta] = None,
                 schedules: bool = False) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._auth = auth
        self._production = production if isinstance(production, str) else list(production)
        self._schedules = bool(schedules)
        self._holder = holder
        self._handler = handler
        self._concurrency = concurrency
        self._ttl, self._every = _period(ttl, renew_every)
        if not isinstance(grace, timedelta) or grace < timedelta(0):
            raise TypeError("grace must be a non-negative datetime.timedelta")
        self._grace = grace
        self._until_idle = until_idle
        if wait_timeout is None:
            wait_timeout = timedelta(0) if until_idle else _WAIT_TIMEOUT
        elif wait_timeout != timedelta(0):
            wait_timeout = _duration(wait_timeout, "wait_timeout")
        self._wait_timeout = wait_timeout
        if outage_limit is not None:
            outage_limit = _duration(outage_limit, "outage_limit")
        self._outage_limit = outage_limit
        self._core: Optional[_native._AioWorker] = None

    @property
    def outages(self) -> int:
        """Outages of the store server the last (or current) :meth:`run`
        rode out so far."""
        return 0 if self._core is None else self._core.outages

    @property
    def stats(self) -> WorkerStats:
        """What the last (or current) :meth:`run` did so far: a snapshot."""
        if self._core is None:
            return WorkerStats()
        return WorkerStats(*self._core.counts)

    async def run(self, stop: Optional[asyncio.Event] = None) -> WorkerStats:
        """Work until stopped (see the class docs); returns :attr:`stats`."""
        loop = asyncio.get_running_loop()
        quit = asyncio.Event()
        ended: asyncio.Future[None] = loop.create_future()
        tasks: set[asyncio.Task[_Facts]] = set()
        auth, handler = self._auth, self._handler

        def start(ticket: _native._AioTicket) -> None:
            """Start one job's handler task."""
            if quit.is_set():  # stopping: the job is released, never run
                ticket.hand_back()
                return
            task = loop.create_task(_call(handler, Job(Lease(ticket.lease, auth),
                                                       ticket.payload), ticket))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            task.add_done_callback(ticket.done)

        def ready() -> None:
            """The slots' socket is readable: start the jobs they handed over."""
            tickets, stopped, done = core.take()
            for ticket in tickets:
                start(ticket)
            if stopped:  # a wait error stopped the worker
                quit.set()
            if done and not ended.done():
                ended.set_result(None)

        waits = _native.WaitCancel()  # cancelled by aclose, like every wait for work
        core = _native._AioWorker(
            auth.native, self._production, self._holder, ttl=self._ttl,
            renew_every=self._every, wait_timeout=self._wait_timeout,
            until_idle=self._until_idle, slots=self._concurrency, cancel=waits,
            job_failed=JobFailed, outage_limit=self._outage_limit,
            schedules=self._schedules)
        self._core = core
        loop.add_reader(core.fileno, ready)
        with auth._lock:
            auth._waits.add(waits)
        watcher = loop.create_task(_set_on(stop, quit)) if stop is not None else None
        cancelled = False
        try:
            try:
                await _first(ended, quit)
            except asyncio.CancelledError:
                cancelled = True
            quit.set()
            core.stop()
            try:
                await _drain(tasks, ended, self._grace.total_seconds())
            except asyncio.CancelledError:
                cancelled = True
                await _drain(tasks, ended, 0.0)
        finally:
            loop.remove_reader(core.fileno)
            core.close()  # a job nobody took any more is released
            with auth._lock:
                auth._waits.discard(waits)
            if watcher is not None:
                watcher.cancel()
        if cancelled:
            raise asyncio.CancelledError
        error = core.error
        if error is not None:
            raise error
        return self.stats


async def _set_on(stop: asyncio.Event, quit: asyncio.Event) -> None:
    await stop.wait()
    quit.set()


async def _first(ended: asyncio.Future[None], quit: asyncio.Event) -> None:
    """Until every slot ended or the stop came."""
    stopping: asyncio.Future[Any] = asyncio.ensure_future(quit.wait())
    waits: list[asyncio.Future[Any]] = [ended, stopping]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()


async def _drain(tasks: set[asyncio.Task[_Facts]], ended: asyncio.Future[None],
                 grace: float) -> None:
    """Give the running handlers ``grace`` seconds, cancel those still
    running (their slots release the leases), then wait (shielded) until
    every slot has settled its job and ended."""
    if grace > 0 and not ended.done():
        await asyncio.wait([ended], timeout=grace)
    for t in list(tasks):
        t.cancel()
    await asyncio.shield(ended)
