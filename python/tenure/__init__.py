"""tenure: an embedded job lease authority.

Coordinators put jobs into productions; workers claim a job and receive an
owning, production-bound :class:`Lease`; only that lease can renew, release,
fail or complete the job until it expires. The authority is one SQLite file
shared by processes and threads, so ownership survives crashes and restarts.

Quick reference::

    from datetime import timedelta
    import tenure

    auth = tenure.Authority("jobs.db")
    auth.create_production("nightly")
    auth.submit("nightly", "build-1", b"make all")
    lease = auth.claim_next("nightly", "worker-7@host-3", timedelta(seconds=30))
    lease.renew(timedelta(minutes=1))
    lease.complete({"artifact": "build-1.tar"})

Conventions of this package:

* Durations are ``datetime.timedelta`` only (``int``, ``float``, ``None`` raise
  ``TypeError`` naming the parameter). Lease durations must be positive and at
  most 24 hours (``InvalidDuration``, also a ``ValueError``); the conversion is
  exact, whole microseconds, never rounded.
* Store paths are ``str``, ``bytes`` or ``os.PathLike``, converted with
  ``os.fsencode`` like every Python file API: a name that is not valid UTF-8
  is opened as its exact bytes and ``Authority.path`` gives it back
  (``os.fsencode(auth.path)`` is the bytes opened); a NUL byte raises
  ``InvalidArgument``, as in the C ABI.
* An integer argument outside its type (``priority`` is 32-bit signed,
  ``max_attempts`` 32-bit unsigned) raises ``InvalidArgument`` naming the
  parameter, not ``OverflowError``; the core then checks the allowed range.
* Every error is a :class:`TenureError` subclass carrying ``code``, the same
  stable number as the C ABI's status (see :func:`error_class`).
* States, statuses and event kinds are lower-case strings; times are integer
  microseconds since the Unix epoch (``*_us`` attributes), each with an aware
  UTC ``datetime`` beside it (``*_at``: ``expires_at``, ``created_at``,
  ``updated_at``, ``cancelled_at``, ``Event.at``, ``ClockReading.now_at`` /
  ``mark_at``), exact to the microsecond (built with integer ``timedelta``
  arithmetic, never a float). ``datetime`` covers years 1..9999; a time
  outside that (never a real clock reading) raises ``OverflowError`` from the
  ``*_at`` attribute while ``*_us`` still holds it.
* Waiting for work: :meth:`Authority.claim_next_wait` blocks (GIL released,
  signal handlers still run on the main thread) until a job is claimable, its
  timeout passes, its :class:`WaitCancel` is cancelled or the authority is
  closed. :meth:`Lease.keep_alive` starts a native :class:`Keeper` (a context
  manager; it never releases). :class:`Worker` is the core's worker loop
  running a Python handler that returns :class:`Complete`, :class:`Retry` or
  :class:`Fail`.
* :mod:`tenure.aio` is the asyncio API over the same objects.
* Store calls release the GIL; ``Authority`` and ``Lease`` are safe to share
  between threads. They are not usable in a child process after
  ``os.fork()``: they raise ``InvalidArgument`` there (never touching the
  parent's SQLite connections); open a new ``Authority`` in the child and hand
  leases over with :meth:`Lease.export_token` / :meth:`Authority.import_lease`.
* ``repr()`` shows attribution and expiry, never a secret;
  :meth:`Lease.export_token` is the only way to obtain the credential.
* Retention: :class:`Retention` (ages as whole-second ``timedelta``) for
  :meth:`Authority.prune` or automatic pruning (``Authority(...,
  retention=...)``, off by default); :meth:`Authority.delete_production`,
  :meth:`Authority.export_production` (JSON lines, as the CLI writes them),
  :meth:`Authority.history_horizon`; a reader behind the horizon gets
  :class:`HistoryPruned` with ``.horizon``.
* Scheduling: ``submit(..., not_before=, max_hold=, backoff=)`` (also
  :class:`JobSpec`) delays a job, caps each claim's ownership (a renewal
  past it raises :class:`HoldLimit`) and sets its retry :class:`Backoff`;
  ``Lease.fail(reason, retry_after=...)`` names when to retry;
  :meth:`Authority.set_production_backoff` sets a production's default.
  Delays are ``timedelta`` of 0 ..= 366 days (``InvalidDuration``);
  :class:`JobView` shows ``due_us`` / ``due_at``, ``max_hold`` and
  ``backoff``.
* The clock policy is the core's: a conservative local-clock policy with a
  durable high-water mark (``ClockRollback``), not a trusted-time guarantee.
"""

from tenure._native import (
    Worker,
    WaitCancel,
    Retry,
    Report,
    Keeper,
    Job,
    Fail,
    Complete,
    ABI_VERSION,
    DEFAULT_MAX_ATTEMPTS,
    MAX_TOKEN_LEN,
    MAX_TTL_US,
    SCHEMA_VERSION,
    Authority,
    Backoff,
    Busy,
    Cancelled,
    CheckReport,
    ClockReading,
    ClockRollback,
    ConcurrencyLimit,
    Conflict,
    DeletedCounts,
    ClaimRequest,
    Edit,
    Event,
    HistoryPruned,
    HoldLimit,
    InternalError,
    InvalidArgument,
    InvalidDuration,
    JobLive,
    JobSpec,
    JobTerminal,
    JobView,
    Lease,
    LeaseClosed,
    LeaseExpired,
    LeasePending,
    NoJobAvailable,
    NotClaimable,
    NotExtended,
    NotFound,
    ProductionLive,
    Flow,
    Percentiles,
    ProductionStats,
    ProductionPaused,
    ProductionView,
    Gates,
    PruneReport,
    PublishedFact,
    RateLimited,
    Retention,
    SchemaTooNew,
    StaleLease,
    Stats,
    StoreError,
    TenureError,
    TokenMalformed,
    TokenTooLarge,
    TokenUnsupportedVersion,
    __version__,
    error_class,
)

__all__ = [
    "Worker",
    "WaitCancel",
    "Retry",
    "Report",
    "Keeper",
    "Job",
    "Fail",
    "Complete",
    "ABI_VERSION",
    "DEFAULT_MAX_ATTEMPTS",
    "MAX_TOKEN_LEN",
    "MAX_TTL_US",
    "SCHEMA_VERSION",
    "Authority",
    "Backoff",
    "Busy",
    "Cancelled",
    "CheckReport",
    "ClockReading",
    "Flow",
    "Percentiles",
    "ProductionStats",
    "Stats",
    "ClockRollback",
    "ConcurrencyLimit",
    "Conflict",
    "DeletedCounts",
    "Edit",
    "Event",
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
    "ClaimRequest",
    "LeaseClosed",
    "LeaseExpired",
    "LeasePending",
    "NoJobAvailable",
    "NotClaimable",
    "NotExtended",
    "NotFound",
    "ProductionLive",
    "ProductionPaused",
    "ProductionView",
    "Gates",
    "PruneReport",
    "PublishedFact",
    "RateLimited",
    "Retention",
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
