"""Type stubs for ``tenure._native``, the compiled core of the ``tenure`` package."""

import datetime
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, Optional, Union, final

from typing_extensions import Self, TypeAlias

__all__ = [
    "ABI_VERSION",
    "Complete",
    "Fail",
    "Job",
    "Keeper",
    "Report",
    "Retry",
    "WaitCancel",
    "Worker",
    "Authority",
    "Backoff",
    "Busy",
    "Cancelled",
    "CheckReport",
    "ClaimRequest",
    "ClockReading",
    "Flow",
    "Percentiles",
    "ProductionStats",
    "Stats",
    "ClockRollback",
    "ConcurrencyLimit",
    "Conflict",
    "DEFAULT_MAX_ATTEMPTS",
    "DeletedCounts",
    "Edit",
    "Event",
    "Gates",
    "HistoryPruned",
    "HoldLimit",
    "InternalError",
    "InvalidArgument",
    "InvalidDuration",
    "JobLive",
    "JobSpec",
    "JobTerminal",
    "JobView",
    "Lease",
    "LeaseClosed",
    "LeaseExpired",
    "LeasePending",
    "MAX_TOKEN_LEN",
    "MAX_TTL_US",
    "NoJobAvailable",
    "NotClaimable",
    "NotExtended",
    "NotFound",
    "ProductionLive",
    "ProductionPaused",
    "ProductionView",
    "PruneReport",
    "PublishedFact",
    "RateLimited",
    "Retention",
    "SCHEMA_VERSION",
    "SchemaTooNew",
    "StaleLease",
    "StoreError",
    "TenureError",
    "TokenMalformed",
    "TokenTooLarge",
    "TokenUnsupportedVersion",
    "__version__",
    "error_class",
]
__version__: str
ABI_VERSION: tuple[int, int]
SCHEMA_VERSION: int
MAX_TTL_US: int
MAX_TOKEN_LEN: int
DEFAULT_MAX_ATTEMPTS: int

_JobState: TypeAlias = Literal["requested", "claimed", "expired", "completed", "failed", "cancelled"]
_LeaseStatus: TypeAlias = Literal["pending", "active", "closed"]
_EventKind: TypeAlias = Literal[
    "production_created",
    "production_cancelled",
    "submitted",
    "claimed",
    "renewed",
    "released",
    "failed",
    "completed",
    "cancelled",
    "exhausted",
    "migrated",
]
_Submitted: TypeAlias = Literal["created", "existing"]
_CancelOutcome: TypeAlias = Literal["cancelled", "already_cancelled"]
_Facts: TypeAlias = Union[Mapping[str, str], Iterable[Union[tuple[str, str], "PublishedFact"]], None]
_KeeperStatus: TypeAlias = Literal["running", "stopped", "lease_closed", "refused"]
_JobResult: TypeAlias = Literal["completed", "failed", "released", "lost"]
_Outcome: TypeAlias = Union["Complete", "Retry", "Fail", _Facts]
# Batched calls: one outcome per lease, the refused ones as exception objects (never raised).
_Done: TypeAlias = Optional["TenureError"]
_StateOrError: TypeAlias = Union[_JobState, "TenureError"]
_FailItem: TypeAlias = Union[tuple["Lease", str], tuple["Lease", str, bool]]
_CompleteItem: TypeAlias = Union["Lease", tuple["Lease", _Facts]]
# Idempotent batched calls: per lease what the single ``*_idempotent`` call returns, or its error.
_RenewedOrError: TypeAlias = Union[tuple[int, bool], "TenureError"]
_StateReplayedOrError: TypeAlias = Union[tuple[_JobState, bool], "TenureError"]
_ReplayedOrError: TypeAlias = Union[bool, "TenureError"]
_LeaseOrError: TypeAlias = Union["Lease", "TenureError"]

class TenureError(Exception):
    """Base class of every tenure error; ``code`` is the stable error number."""

    code: int
    code_name: str

class InvalidArgument(TenureError, ValueError):
    """A malformed ID, holder, payload, reason, fact or number."""

class InvalidDuration(TenureError, ValueError):
    """A duration outside its range (a lease 1 microsecond ..= 24 hours, a delay 0 ..= 366 days) or an invalid back-off."""

class NotFound(TenureError):
    """The production or job does not exist."""

class Conflict(TenureError):
    """The same ID already exists with different content."""

class NotClaimable(TenureError):
    """The job exists but cannot be claimed now (not yet due, held, exhausted, terminal)."""

class NoJobAvailable(TenureError):
    """claim_next found nothing claimable in the production."""

class StaleLease(TenureError):
    """The lease is no longer the job's current claim."""

class LeaseExpired(TenureError):
    """The lease is still the current claim but has expired."""

class LeaseClosed(TenureError):
    """The lease was already released, failed or completed, or its edit failed."""

class LeasePending(TenureError):
    """The lease belongs to an edit that has not committed yet."""

class NotExtended(TenureError):
    """A renewal would not move the expiry later."""

class Cancelled(TenureError):
    """The job or production was cancelled by a coordinator."""

class JobTerminal(TenureError):
    """The job is already completed or failed."""

class ClockRollback(TenureError):
    """The clock reads earlier than the store's durable high-water mark."""

class TokenMalformed(TenureError, ValueError):
    """The token text is not a well-formed lease token."""

class TokenTooLarge(TenureError, ValueError):
    """The token text is longer than the accepted bound."""

class TokenUnsupportedVersion(TenureError, ValueError):
    """The token names an unknown format version."""

class Busy(TenureError, TimeoutError):
    """The writer lock was not free within the busy timeout."""

class SchemaTooNew(TenureError):
    """The store was written by a newer tenure; it was not touched."""

class StoreError(TenureError):
    """The store failed: I/O error, corrupt or foreign file, read-only."""

class InternalError(TenureError):
    """A bug in tenure (an internal invariant broke or a panic was caught)."""

class HoldLimit(TenureError):
    """A renewal would extend a lease past its claim's hard ownership limit."""
class HistoryPruned(TenureError):
    """A reader asked for events before the pruned horizon; they are gone.

    ``horizon``: every event up to this sequence number was pruned (resume
    after it); ``after``: the position that was asked for.
    """

    horizon: int
    after: int

class ProductionLive(TenureError):
    """Deleting a production that still has a live job."""

class ProductionPaused(TenureError):
    """A claim of a named job in a paused production."""

class ConcurrencyLimit(TenureError):
    """A claim of a named job beyond its production's concurrency limit."""

class RateLimited(TenureError):
    """A claim of a named job beyond its production's rate limit."""

class JobLive(TenureError):
    """Requeueing a job that is not failed or cancelled."""

def error_class(code: int) -> type[TenureError]:
    """The exception class for a stable error number (``ValueError`` if unknown)."""

@final
class PublishedFact:
    """A fact as read back (production, job, key, value); ``tenure.*`` keys are provenance."""

    @property
    def production(self) -> str: ...
    @property
    def job(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class JobView:
    """A read-only observation of one job (attribution and expiry, never a secret)."""

    @property
    def production(self) -> str: ...
    @property
    def job(self) -> str: ...
    @property
    def state(self) -> _JobState: ...
    @property
    def attempts(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def priority(self) -> int: ...
    @property
    def holder(self) -> Optional[str]: ...
    @property
    def claim_id(self) -> Optional[str]: ...
    @property
    def expires_us(self) -> Optional[int]: ...
    @property
    def expires_at(self) -> Optional[datetime.datetime]: ...
    @property
    def created_us(self) -> int: ...
    @property
    def created_at(self) -> datetime.datetime: ...
    @property
    def updated_us(self) -> int: ...
    @property
    def updated_at(self) -> datetime.datetime: ...
    @property
    def payload_len(self) -> int: ...
    @property
    def last_error(self) -> Optional[str]: ...
    @property
    def due_us(self) -> Optional[int]: ...
    @property
    def due_at(self) -> Optional[datetime.datetime]: ...
    @property
    def max_hold(self) -> Optional[datetime.timedelta]: ...
    @property
    def backoff(self) -> Optional[Backoff]: ...
    @property
    def progress(self) -> Optional[bytes]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Event:
    """One entry of the transition log (never a secret)."""

    @property
    def seq(self) -> int: ...
    @property
    def at_us(self) -> int: ...
    @property
    def at(self) -> datetime.datetime: ...
    @property
    def production(self) -> str: ...
    @property
    def job(self) -> Optional[str]: ...
    @property
    def kind(self) -> _EventKind: ...
    @property
    def state(self) -> Optional[_JobState]: ...
    @property
    def claim_id(self) -> Optional[str]: ...
    @property
    def holder(self) -> Optional[str]: ...
    @property
    def attempt(self) -> Optional[int]: ...
    @property
    def expires_us(self) -> Optional[int]: ...
    @property
    def expires_at(self) -> Optional[datetime.datetime]: ...
    @property
    def detail(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class ProductionView:
    """A production: name, creation time and, if cancelled, when."""

    @property
    def name(self) -> str: ...
    @property
    def created_us(self) -> int: ...
    @property
    def created_at(self) -> datetime.datetime: ...
    @property
    def cancelled_us(self) -> Optional[int]: ...
    @property
    def cancelled_at(self) -> Optional[datetime.datetime]: ...
    @property
    def backoff(self) -> Optional[Backoff]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Gates:
    """A production's claim gates as set: whether it is paused (since when),
    its concurrency limit and its rate limit, each None when not set."""

    @property
    def paused(self) -> bool: ...
    @property
    def paused_us(self) -> Optional[int]: ...
    @property
    def paused_at(self) -> Optional[datetime.datetime]: ...
    @property
    def concurrency_limit(self) -> Optional[int]: ...
    @property
    def rate_claims(self) -> Optional[int]: ...
    @property
    def rate_interval_us(self) -> Optional[int]: ...
    @property
    def rate_interval(self) -> Optional[datetime.timedelta]: ...
    @property
    def rate_burst(self) -> Optional[int]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class ClockReading:
    """The authority's clock reading, high-water mark and whether it is blocked."""

    @property
    def now_us(self) -> int: ...
    @property
    def now_at(self) -> datetime.datetime: ...
    @property
    def mark_us(self) -> int: ...
    @property
    def mark_at(self) -> datetime.datetime: ...
    @property
    def blocked(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Percentiles:
    """Exact nearest-rank percentiles of a set of durations (µs)."""

    @property
    def count(self) -> int: ...
    @property
    def p50_us(self) -> Optional[int]: ...
    @property
    def p95_us(self) -> Optional[int]: ...
    @property
    def p99_us(self) -> Optional[int]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Flow:
    """A production's flow over the window."""

    @property
    def window_us(self) -> int: ...
    @property
    def claims(self) -> int: ...
    @property
    def completions(self) -> int: ...
    @property
    def retryable_failures(self) -> int: ...
    @property
    def permanent_failures(self) -> int: ...
    @property
    def expiries(self) -> int: ...
    @property
    def wait(self) -> Percentiles: ...
    @property
    def run(self) -> Percentiles: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def covered_us(self) -> int: ...
    def per_second(self, n: int) -> float: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class ProductionStats:
    """One production's statistics: exact counts by observed state."""

    @property
    def name(self) -> str: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def waiting_due(self) -> int: ...
    @property
    def waiting_later(self) -> int: ...
    @property
    def claimed_live(self) -> int: ...
    @property
    def claimed_expired(self) -> int: ...
    @property
    def completed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def cancelled_jobs(self) -> int: ...
    @property
    def oldest_due_age_us(self) -> Optional[int]: ...
    @property
    def next_due_us(self) -> Optional[int]: ...
    @property
    def next_due_at(self) -> Optional[datetime.datetime]: ...
    @property
    def expiring_within(self) -> int: ...
    @property
    def max_live_attempts(self) -> int: ...
    @property
    def gates(self) -> Gates: ...
    @property
    def flow(self) -> Flow: ...
    @property
    def total(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Stats:
    """Queue statistics of a store, read in one snapshot."""

    @property
    def now_us(self) -> int: ...
    @property
    def now_at(self) -> datetime.datetime: ...
    @property
    def high_water_us(self) -> int: ...
    @property
    def horizon_us(self) -> int: ...
    @property
    def window_us(self) -> int: ...
    @property
    def productions(self) -> list[ProductionStats]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class CheckReport:
    """Result of the offline invariant check."""

    @property
    def schema_version(self) -> int: ...
    @property
    def jobs(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def violations(self) -> list[str]: ...
    @property
    def history_horizon(self) -> int: ...
    @property
    def ok(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Retention:
    """A retention policy: ages (whole-second ``timedelta``, 1 s ..= 3650 days) or ``None``."""

    def __new__(
        cls,
        event_age: Optional[datetime.timedelta] = None,
        terminal_job_age: Optional[datetime.timedelta] = None,
        tombstone_age: Optional[datetime.timedelta] = None,
    ) -> Self: ...
    @staticmethod
    def recommended() -> Retention: ...
    @property
    def event_age(self) -> Optional[datetime.timedelta]: ...
    @property
    def terminal_job_age(self) -> Optional[datetime.timedelta]: ...
    @property
    def tombstone_age(self) -> Optional[datetime.timedelta]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class PruneReport:
    """What one prune step removed."""

    @property
    def jobs(self) -> int: ...
    @property
    def tombstones(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def horizon(self) -> int: ...
    @property
    def more(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class DeletedCounts:
    """What ``Authority.delete_production`` removed."""

    @property
    def jobs(self) -> int: ...
    @property
    def facts(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def tombstones(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class Backoff:
    """A retry back-off: ``min(cap, base * 2 ** (n - 1))`` after the failure of attempt ``n``."""

    def __new__(cls, base: datetime.timedelta, cap: datetime.timedelta) -> Self: ...
    @property
    def base(self) -> datetime.timedelta: ...
    @property
    def cap(self) -> datetime.timedelta: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class JobSpec:
    """A job to submit with ``submit_many``."""

    def __new__(
        cls,
        job: str,
        payload: bytes = ...,
        *,
        priority: int = 0,
        max_attempts: int = ...,
        not_before: Optional[datetime.timedelta] = None,
        max_hold: Optional[datetime.timedelta] = None,
        backoff: Optional[Backoff] = None,
    ) -> Self: ...
    @property
    def job(self) -> str: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def priority(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def not_before(self) -> Optional[datetime.timedelta]: ...
    @property
    def max_hold(self) -> Optional[datetime.timedelta]: ...
    @property
    def backoff(self) -> Optional[Backoff]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...

@final
class ClaimRequest:
    """A claim's request ID with a secret made in this process; pass the same
    object to retry a claim whose answer was lost (``claim_idempotent``)."""

    def __new__(cls, request_id: str) -> Self: ...
    @property
    def request_id(self) -> str: ...

@final
class Lease:
    """An owning, production-bound lease on one job; the secret never shows."""

    @property
    def production(self) -> str: ...
    @property
    def job(self) -> str: ...
    @property
    def claim_id(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def holder(self) -> str: ...
    @property
    def expires_us(self) -> int: ...
    @property
    def expires_at(self) -> datetime.datetime: ...
    @property
    def status(self) -> _LeaseStatus: ...
    def renew(self, ttl: datetime.timedelta) -> None: ...
    def checkpoint(self, progress: bytes) -> None: ...
    def renew_checkpoint(self, ttl: datetime.timedelta, progress: bytes) -> None: ...
    def progress(self) -> Optional[bytes]: ...
    def release(self) -> _JobState: ...
    def fail(
        self,
        reason: str = "",
        *,
        permanent: bool = False,
        retry_after: Optional[datetime.timedelta] = None,
    ) -> _JobState: ...
    def complete(self, facts: _Facts = None) -> None: ...
    def renew_idempotent(self, ttl: datetime.timedelta) -> tuple[int, bool]: ...
    def release_idempotent(self) -> tuple[_JobState, bool]: ...
    def fail_idempotent(
        self,
        reason: str = "",
        *,
        permanent: bool = False,
        retry_after: Optional[datetime.timedelta] = None,
    ) -> tuple[_JobState, bool]: ...
    def complete_idempotent(self, facts: _Facts = None) -> bool: ...
    def keep_alive(
        self, ttl: datetime.timedelta, every: Optional[datetime.timedelta] = None
    ) -> Keeper: ...
    def export_token(self) -> str: ...

@final
class WaitCancel:
    """Cancels waits for work at once (final); stands in for a ``threading.Event``."""

    def __new__(cls, parent: Optional[WaitCancel] = None) -> Self: ...
    def cancel(self) -> None: ...
    @property
    def is_cancelled(self) -> bool: ...

@final
class Keeper:
    """Renews one lease on a native thread; a context manager that stops it (never releases)."""

    @property
    def status(self) -> _KeeperStatus: ...
    @property
    def error(self) -> Optional[TenureError]: ...
    @property
    def renewals(self) -> int: ...
    def stop(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]] = None,
        exc_value: Optional[BaseException] = None,
        traceback: object = None,
    ) -> bool: ...

@final
class Complete:
    """A handler's result: complete the job with these facts."""

    def __new__(cls, facts: _Facts = None) -> Self: ...
    @property
    def facts(self) -> list[tuple[str, str]]: ...

@final
class Retry:
    """A handler's result: fail retryably (``delay``: due again that long after the failure)."""

    def __new__(cls, reason: str = ..., *, delay: Optional[datetime.timedelta] = None) -> Self: ...
    @property
    def reason(self) -> str: ...
    @property
    def delay(self) -> Optional[datetime.timedelta]: ...

@final
class Fail:
    """A handler's result: fail permanently."""

    def __new__(cls, reason: str = ...) -> Self: ...
    @property
    def reason(self) -> str: ...

@final
class Job:
    """What a ``Worker`` handler receives (never the secret)."""

    @property
    def production(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def claim_id(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def holder(self) -> str: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def stopping(self) -> bool: ...
    @property
    def lease_lost(self) -> Optional[TenureError]: ...
    def progress(self) -> Optional[bytes]: ...
    def checkpoint(self, progress: bytes) -> None: ...

@final
class Report:
    """One job's outcome as a ``Worker`` reports it."""

    @property
    def production(self) -> str: ...
    @property
    def job(self) -> str: ...
    @property
    def claim_id(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def result(self) -> _JobResult: ...
    @property
    def state(self) -> Optional[_JobState]: ...
    @property
    def error(self) -> Optional[TenureError]: ...

@final
class Worker:
    """The core's worker loop running a Python handler on ``slots`` native threads."""

    def __new__(
        cls,
        authority: Authority,
        production: Union[str, Sequence[str]],
        holder: str,
        handler: Callable[[Job], _Outcome],
        *,
        ttl: datetime.timedelta,
        slots: int = 1,
        renew_every: Optional[datetime.timedelta] = None,
        wait_timeout: Optional[datetime.timedelta] = None,
        grace: Optional[datetime.timedelta] = None,
        report: Optional[Callable[[Report], object]] = None,
        outage_limit: Optional[datetime.timedelta] = None,
        schedules: bool = False,
    ) -> Self: ...
    def stop(self) -> None: ...
    @property
    def stopped(self) -> bool: ...
    @property
    def outages(self) -> int: ...
    def join(self, timeout: Optional[datetime.timedelta] = None) -> bool: ...
    def stop_on_signals(self, signals: Optional[Sequence[int]] = None) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]] = None,
        exc_value: Optional[BaseException] = None,
        traceback: object = None,
    ) -> bool: ...

@final
class _AioTicket:
    """One job an ``_AioWorker`` slot hands to the event loop (private to ``tenure.aio``)."""

    @property
    def lease(self) -> Lease: ...
    @property
    def payload(self) -> bytes: ...
    def begin(self) -> None: ...
    def done(self, task: object) -> None: ...
    def hand_back(self) -> None: ...

@final
class _AioWorker:
    """The native slots of ``tenure.aio.Worker`` (private to ``tenure.aio``)."""

    def __new__(
        cls,
        authority: Authority,
        production: Union[str, Sequence[str]],
        holder: str,
        *,
        ttl: datetime.timedelta,
        renew_every: datetime.timedelta,
        wait_timeout: datetime.timedelta,
        until_idle: bool,
        slots: int,
        cancel: WaitCancel,
        job_failed: type[BaseException],
        outage_limit: Optional[datetime.timedelta] = None,
        schedules: bool = False,
    ) -> Self: ...
    @property
    def fileno(self) -> int: ...
    @property
    def outages(self) -> int: ...
    def take(self) -> tuple[list[_AioTicket], bool, bool]: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
    @property
    def counts(self) -> tuple[int, int, int, int, int]: ...
    @property
    def error(self) -> Optional[TenureError]: ...

class _Writer:
    """The operations ``Authority`` and ``Edit`` share (a base of both in these
    stubs only): on an ``Edit`` they run inside its transaction, and the leases
    they mint are pending until the commit."""

    def create_production(self, production: str) -> bool: ...
    def cancel_production(self, production: str) -> int: ...
    def submit(
        self,
        production: str,
        job: str,
        payload: bytes = ...,
        *,
        priority: int = 0,
        max_attempts: int = ...,
        not_before: Optional[datetime.timedelta] = None,
        max_hold: Optional[datetime.timedelta] = None,
        backoff: Optional[Backoff] = None,
    ) -> _Submitted: ...
    def set_production_backoff(self, production: str, backoff: Optional[Backoff]) -> None: ...
    def pause_production(self, production: str) -> bool: ...
    def resume_production(self, production: str) -> bool: ...
    def set_concurrency_limit(self, production: str, limit: int) -> None: ...
    def clear_concurrency_limit(self, production: str) -> None: ...
    def set_rate_limit(
        self, production: str, claims: int, interval: datetime.timedelta, burst: int
    ) -> None: ...
    def clear_rate_limit(self, production: str) -> None: ...
    def cancel(self, production: str, job: str) -> _CancelOutcome: ...
    def claim(self, production: str, job: str, holder: str, ttl: datetime.timedelta) -> Lease: ...
    def claim_next(self, production: str, holder: str, ttl: datetime.timedelta) -> Lease: ...
    def claim_idempotent(
        self, production: str, job: str, holder: str, ttl: datetime.timedelta, request: ClaimRequest
    ) -> tuple[Lease, bool]: ...
    def claim_next_idempotent(
        self, production: str, holder: str, ttl: datetime.timedelta, request: ClaimRequest
    ) -> tuple[Lease, bool]: ...
    def claim_next_many(
        self, production: str, holder: str, ttl: datetime.timedelta, n: int
    ) -> list[Lease]: ...
    def claim_next_many_idempotent(
        self, production: str, holder: str, ttl: datetime.timedelta, n: int, request: ClaimRequest
    ) -> tuple[list[_LeaseOrError], bool]: ...
    def renew_many(self, leases: Iterable[Lease], ttl: datetime.timedelta) -> list[_Done]: ...
    def release_many(self, leases: Iterable[Lease]) -> list[_StateOrError]: ...
    def fail_many(self, items: Iterable[_FailItem]) -> list[_StateOrError]: ...
    def complete_many(self, items: Iterable[_CompleteItem]) -> list[_Done]: ...

@final
class Edit(_Writer):
    """One write transaction; a context manager (commit on success, abort on error)."""

    @property
    def open(self) -> bool: ...
    def renew(self, lease: Lease, ttl: datetime.timedelta) -> None: ...
    def release(self, lease: Lease) -> _JobState: ...
    def fail(
        self,
        lease: Lease,
        reason: str = "",
        *,
        permanent: bool = False,
        retry_after: Optional[datetime.timedelta] = None,
    ) -> _JobState: ...
    def complete(self, lease: Lease, facts: _Facts = None) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]] = None,
        exc_value: Optional[BaseException] = None,
        traceback: object = None,
    ) -> bool: ...

@final
class Authority(_Writer):
    """A job lease authority over one SQLite store file (thread-safe, not fork-safe).

    ``path`` is ``str``, ``bytes`` or an ``os.PathLike`` of either, converted with
    ``os.fsencode``: a name that is not valid UTF-8 is opened as its exact bytes
    and round-trips through ``Authority.path`` (``os.fsencode(auth.path)`` is
    the bytes opened); a NUL byte raises ``InvalidArgument``, as in the C ABI.
    ``max_attempts`` and ``priority`` outside their integer types
    (``u32``, ``i32``) raise ``InvalidArgument`` naming the parameter.
    """

    def __new__(
        cls,
        path: Union[str, bytes, os.PathLike[str], os.PathLike[bytes]],
        *,
        synchronous: Literal["full", "normal"] = "full",
        busy_timeout: Optional[datetime.timedelta] = None,
        group_commit: bool = True,
        retention: Optional[Retention] = None,
    ) -> Self: ...
    @property
    def path(self) -> str: ...
    @property
    def migrated_from(self) -> int: ...
    def edit(self) -> Edit: ...
    def productions(self) -> list[ProductionView]: ...
    def submit_many(self, production: str, jobs: Iterable[JobSpec]) -> list[_Submitted]: ...
    def claim_next_wait(
        self,
        production: str,
        holder: str,
        ttl: datetime.timedelta,
        timeout: datetime.timedelta,
        cancel: Optional[WaitCancel] = None,
    ) -> Lease: ...
    def claim_next_across(
        self, productions: Sequence[str], holder: str, ttl: datetime.timedelta
    ) -> Lease: ...
    def claim_next_many_across(
        self, productions: Sequence[str], holder: str, ttl: datetime.timedelta, n: int
    ) -> list[Lease]: ...
    def claim_next_wait_across(
        self,
        productions: Sequence[str],
        holder: str,
        ttl: datetime.timedelta,
        timeout: datetime.timedelta,
        cancel: Optional[WaitCancel] = None,
    ) -> Lease: ...
    def requeue(
        self,
        production: str,
        job: str,
        *,
        extra_attempts: Optional[int] = None,
        delay: Optional[datetime.timedelta] = None,
    ) -> None: ...
    def requeue_all(
        self,
        production: str,
        *,
        extra_attempts: Optional[int] = None,
        delay: Optional[datetime.timedelta] = None,
        limit: int = 100,
    ) -> tuple[int, bool]: ...
    def cancel_waits(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]] = None,
        exc_value: Optional[BaseException] = None,
        traceback: object = None,
    ) -> bool: ...
    def renew_many_idempotent(
        self, leases: Iterable[Lease], ttl: datetime.timedelta
    ) -> list[_RenewedOrError]: ...
    def release_many_idempotent(self, leases: Iterable[Lease]) -> list[_StateReplayedOrError]: ...
    def fail_many_idempotent(self, items: Iterable[_FailItem]) -> list[_StateReplayedOrError]: ...
    def complete_many_idempotent(self, items: Iterable[_CompleteItem]) -> list[_ReplayedOrError]: ...
    def import_lease(self, token: str) -> Lease: ...
    def job(self, production: str, job: str) -> JobView: ...
    def production_gates(self, production: str) -> Gates: ...
    def payload(self, production: str, job: str) -> bytes: ...
    def next_due_us(self, production: str) -> Optional[int]: ...
    def jobs(
        self,
        production: str,
        *,
        state: Optional[_JobState] = None,
        after: Optional[str] = None,
        limit: int = 0,
    ) -> list[JobView]: ...
    def facts(self, production: str, job: str) -> list[PublishedFact]: ...
    def production_facts(self, production: str) -> list[PublishedFact]: ...
    def events(self, after: int = 0, limit: int = 0) -> list[Event]: ...
    def production_events(self, production: str, after: int = 0, limit: int = 0) -> list[Event]: ...
    def clock(self) -> ClockReading: ...
    def stats(
        self,
        production: Optional[str] = None,
        *,
        horizon: Optional[datetime.timedelta] = None,
        window: Optional[datetime.timedelta] = None,
    ) -> Stats: ...
    def check(self) -> CheckReport: ...
    def history_horizon(self) -> int: ...
    def prune(self, retention: Retention) -> PruneReport: ...
    def delete_production(self, production: str) -> DeletedCounts: ...
    def export_production(self, production: str) -> Iterator[str]: ...
    def vacuum(self) -> None: ...
    def create_schedule(
        self,
        production: str,
        name: str,
        *,
        every: Optional[datetime.timedelta] = None,
        cron: Optional[str] = None,
        tz: Optional[str] = None,
        payload: bytes = ...,
        priority: int = 0,
        max_attempts: int = ...,
        max_hold: Optional[datetime.timedelta] = None,
        backoff: Optional[Backoff] = None,
        catch_up: int = 1,
        overlap: str = "enqueue",
    ) -> bool: ...
    def update_schedule(
        self,
        production: str,
        name: str,
        *,
        every: Optional[datetime.timedelta] = None,
        cron: Optional[str] = None,
        tz: Optional[str] = None,
        payload: bytes = ...,
        priority: int = 0,
        max_attempts: int = ...,
        max_hold: Optional[datetime.timedelta] = None,
        backoff: Optional[Backoff] = None,
        catch_up: int = 1,
        overlap: str = "enqueue",
    ) -> None: ...
    def pause_schedule(self, production: str, name: str) -> bool: ...
    def resume_schedule(self, production: str, name: str) -> bool: ...
    def delete_schedule(self, production: str, name: str) -> bool: ...
    def schedules(self, production: Optional[str] = None) -> list[dict[str, Any]]: ...
    def run_schedules(self) -> dict[str, Any]: ...
