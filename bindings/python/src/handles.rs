//! `Authority`, `Lease` and `Edit`: thin handles over the core types.
//!
//! Every store call releases the GIL. `Authority` and `Lease` are immutable
//! from Python's side and `Send + Sync` in Rust, so threads may share them;
//! an `Edit` sits behind a mutex (one operation at a time, from any thread).
//! Each handle refuses use from a process other than the one that created it
//! (see [`ProcessBound`]).

use crate::convert::{self, unlocked, ProcessBound};
use crate::errors::to_py;
use crate::values::{
    job_spec, q, CheckReport, ClockReading, DeletedCounts, Event, JobSpec, JobView, ProductionView,
    PruneReport, PublishedFact, Retention,
};
use crate::work::{self, CancelNode, Keeper, WaitCancel};
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tenure::{Applied, Delay, Error, JobState, ListQuery, Options, Synchronous, Ttl};

fn submitted(s: tenure::Submitted) -> &'static str {
    match s {
        tenure::Submitted::Created => "created",
        tenure::Submitted::Existing => "existing",
    }
}

fn cancelled(c: tenure::CancelOutcome) -> &'static str {
    match c {
        tenure::CancelOutcome::Cancelled => "cancelled",
        tenure::CancelOutcome::AlreadyCancelled => "already_cancelled",
    }
}

fn specs(jobs: &Bound<'_, PyAny>) -> PyResult<Vec<tenure::JobSpec>> {
    let mut out = Vec::new();
    for item in jobs.try_iter()? {
        let item = item?;
        let spec = item.cast::<JobSpec>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("jobs must be an iterable of tenure.JobSpec")
        })?;
        out.push(spec.get().to_core());
    }
    Ok(out)
}

/// The items of a batch: `one` converts each element of the iterable
/// `items`; `None` from it (or `items` not iterable) is the `TypeError`
/// `expected`.
fn batch_items<'py, T>(
    items: &Bound<'py, PyAny>,
    expected: &'static str,
    mut one: impl FnMut(Bound<'py, PyAny>) -> PyResult<Option<T>>,
) -> PyResult<Vec<T>> {
    let bad = || pyo3::exceptions::PyTypeError::new_err(expected);
    let mut out = Vec::new();
    for item in items.try_iter().map_err(|_| bad())? {
        out.push(one(item?)?.ok_or_else(bad)?);
    }
    Ok(out)
}

/// The leases of a batch: a Python iterable of ``tenure.Lease``, kept alive
/// while the core borrows them.
fn batch_leases<'py>(leases: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, Lease>>> {
    batch_items(leases, "leases must be an iterable of tenure.Lease", |x| {
        Ok(x.cast_into::<Lease>().ok())
    })
}

/// The core leases of a batch (each checked to be used in its own process).
fn core_leases<'a>(leases: &'a [Bound<'_, Lease>]) -> PyResult<Vec<&'a tenure::Lease>> {
    leases.iter().map(|l| l.get().get()).collect()
}

/// Items of `fail_many`: ``(lease, reason)`` or ``(lease, reason, permanent)``.
fn fail_items<'py>(items: &Bound<'py, PyAny>) -> PyResult<Vec<(Bound<'py, Lease>, String, bool)>> {
    let expected =
        "items must be an iterable of (Lease, reason) or (Lease, reason, permanent) tuples";
    batch_items(items, expected, |x| {
        let item = match x.extract::<(Bound<'py, PyAny>, String)>() {
            Ok((l, r)) => Some((l, r, false)),
            Err(_) => x.extract::<(Bound<'py, PyAny>, String, bool)>().ok(),
        };
        Ok(item.and_then(|(l, r, p)| Some((l.cast_into::<Lease>().ok()?, r, p))))
    })
}

/// Run `run` on the core leases of the batch `leases` (a Python iterable of
/// ``tenure.Lease``, each checked to be used in its own process).
fn with_leases<T>(
    leases: &Bound<'_, PyAny>,
    run: impl FnOnce(&[&tenure::Lease]) -> PyResult<T>,
) -> PyResult<T> {
    let held = batch_leases(leases)?;
    run(&core_leases(&held)?)
}

/// Run `run` on the core items of a `fail_many` batch (see [`fail_items`]).
fn with_fail_items<T>(
    items: &Bound<'_, PyAny>,
    run: impl FnOnce(&[(&tenure::Lease, &str, bool)]) -> PyResult<T>,
) -> PyResult<T> {
    let held = fail_items(items)?;
    let ls = held
        .iter()
        .map(|(l, r, p)| Ok((l.get().get()?, r.as_str(), *p)))
        .collect::<PyResult<Vec<_>>>()?;
    run(&ls)
}

/// Run `run` on the core items of a `complete_many` batch (see
/// [`complete_items`]).
fn with_complete_items<T>(
    items: &Bound<'_, PyAny>,
    run: impl FnOnce(&[(&tenure::Lease, &[tenure::Fact])]) -> PyResult<T>,
) -> PyResult<T> {
    let held = complete_items(items)?;
    let ls = held
        .iter()
        .map(|(l, f)| Ok((l.get().get()?, f.as_slice())))
        .collect::<PyResult<Vec<_>>>()?;
    run(&ls)
}

/// Items of `complete_many`: a ``Lease`` (no facts) or ``(lease, facts)``
/// with facts as ``Lease.complete`` takes them.
fn complete_items<'py>(
    items: &Bound<'py, PyAny>,
) -> PyResult<Vec<(Bound<'py, Lease>, Vec<tenure::Fact>)>> {
    let expected = "items must be an iterable of Lease or (Lease, facts) tuples";
    batch_items(items, expected, |x| {
        if let Ok(l) = x.cast::<Lease>() {
            return Ok(Some((l.clone(), Vec::new())));
        }
        let Ok((l, f)) = x.extract::<(Bound<'py, PyAny>, Bound<'py, PyAny>)>() else {
            return Ok(None);
        };
        let Ok(l) = l.cast_into::<Lease>() else {
            return Ok(None);
        };
        Ok(Some((l, convert::facts(Some(&f))?)))
    })
}

/// One Python value per batch outcome: `ok(value)` for an accepted lease,
/// the exception object (not raised) for a refused one.
fn outcomes<T>(
    py: Python<'_>,
    done: Vec<tenure::Result<T>>,
    ok: impl Fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
) -> PyResult<Vec<Py<PyAny>>> {
    done.into_iter()
        .map(|r| match r {
            Ok(v) => ok(py, v),
            Err(e) => Ok(to_py(e).into_value(py).into_any()),
        })
        .collect()
}

fn state_value(py: Python<'_>, s: tenure::JobState) -> PyResult<Py<PyAny>> {
    Ok(pyo3::types::PyString::new(py, s.as_str())
        .into_any()
        .unbind())
}

fn none_value(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

fn expiry_value(py: Python<'_>, us: i64) -> PyResult<Py<PyAny>> {
    Ok(us.into_pyobject(py)?.into_any().unbind())
}

fn lease_value(py: Python<'_>, l: tenure::Lease) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, Lease::wrap(l))?.into_any())
}

/// The outcome of an idempotent batch item: ``(value, replayed)``, the
/// shape the single ``*_idempotent`` calls return.
fn replayed_value<T>(
    value: impl Fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
) -> impl Fn(Python<'_>, Applied<T>) -> PyResult<Py<PyAny>> {
    move |py, a| {
        let v = value(py, a.value)?;
        Ok((v, a.replayed).into_pyobject(py)?.into_any().unbind())
    }
}

/// The outcome of an idempotent completion in a batch: whether it was a
/// replay, as ``Lease.complete_idempotent`` returns it.
fn replayed_flag(py: Python<'_>, a: Applied<()>) -> PyResult<Py<PyAny>> {
    Ok(pyo3::types::PyBool::new(py, a.replayed)
        .to_owned()
        .into_any()
        .unbind())
}

/// An applied claim as Python gets it: ``(lease, replayed)``.
fn applied_lease(a: Applied<tenure::Lease>) -> PyResult<(Lease, bool)> {
    Ok((Lease::wrap(a.value), a.replayed))
}

/// An applied job state as Python gets it: ``(state, replayed)``.
fn applied_state(a: Applied<JobState>) -> (&'static str, bool) {
    (a.value.as_str(), a.replayed)
}

/// The retry delay of a `fail(..., permanent=, retry_after=)` call: a
/// permanent failure is never retried, so it takes no delay
/// (`InvalidArgument`, nothing changes).
pub(crate) fn retry_delay(permanent: bool, retry_after: Option<Delay>) -> PyResult<Option<Delay>> {
    if permanent && retry_after.is_some() {
        return Err(to_py(Error::InvalidArgument(
            "retry_after applies to a retryable failure; a permanent one is never retried".into(),
        )));
    }
    Ok(retry_after)
}

/// The core handle a shared operation runs on: the authority itself, or an
/// open edit (inside its transaction).
enum Target<'a> {
    Authority(&'a tenure::Authority),
    Edit(&'a mut tenure::Edit),
}

/// Call the core method `$m` on whichever handle `$t` holds (both core types
/// have it with the same arguments).
macro_rules! on_target {
    ($t:expr, $m:ident($($arg:expr),* $(,)?)) => {
        match $t {
            Target::Authority(a) => a.$m($($arg),*),
            Target::Edit(e) => e.$m($($arg),*),
        }
    };
}

/// A Python handle on which the operations `Authority` and `Edit` share run:
/// it says only how a core call reaches its core handle (GIL released).
/// The shared Python methods are written once, in
/// [`pymethods_with_shared_ops`].
trait Ops {
    fn run_on<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(Target<'_>) -> tenure::Result<T> + Send,
    ) -> PyResult<T>;

    /// The one body of every claim: convert ``ttl``, run the lease-minting
    /// core call `claim` on the handle, turn what it minted into its
    /// Python value with `wrap`.
    fn claim_on<T: Send, R>(
        &self,
        py: Python<'_>,
        ttl: &Bound<'_, PyAny>,
        claim: impl FnOnce(Target<'_>, Ttl) -> tenure::Result<T> + Send,
        wrap: impl FnOnce(T) -> PyResult<R>,
    ) -> PyResult<R> {
        let ttl = convert::ttl(ttl, "ttl")?;
        self.run_on(py, |t| claim(t, ttl)).and_then(wrap)
    }
}

/// `#[pymethods] impl $ty { ... }` with the Python methods `Authority` and
/// `Edit` share declared once, here: argument conversion, the core call
/// (through [`Ops::run_on`]) and the result mapping. On an `Edit` they run
/// inside its transaction, and the leases they mint are pending until the
/// commit.
macro_rules! pymethods_with_shared_ops {
    (impl $ty:ident { $($items:tt)* }) => {
        #[pymethods]
        impl $ty {
            /// Create a production; False if it already existed.
            fn create_production(&self, py: Python<'_>, production: &str) -> PyResult<bool> {
                self.run_on(py, |t| on_target!(t, create_production(production)))
            }

            /// Cancel every non-terminal job of a production and refuse new
            /// submissions to it; returns how many jobs were cancelled.
            fn cancel_production(&self, py: Python<'_>, production: &str) -> PyResult<u64> {
                self.run_on(py, |t| on_target!(t, cancel_production(production)))
            }

            /// Submit a job: ``"created"``, or ``"existing"`` when the same ID
            /// with the same content already exists (different content is
            /// ``Conflict``). ``not_before`` (a ``datetime.timedelta``, 0 ..=
            /// 366 days) makes it due that long after the submission is
            /// recorded; ``max_hold`` (positive, up to 366 days) caps every
            /// claim's ownership at claim time + the limit; ``backoff`` (a
            /// ``tenure.Backoff``) delays its retries. ``max_hold`` and
            /// ``backoff`` are content, ``not_before`` is not.
            #[pyo3(signature = (production, job, payload = b"".as_slice(), *, priority = 0, max_attempts = tenure::DEFAULT_MAX_ATTEMPTS, not_before = None, max_hold = None, backoff = None))]
            #[allow(clippy::too_many_arguments)]
            fn submit(
                &self,
                py: Python<'_>,
                production: &str,
                job: &str,
                payload: &[u8],
                #[pyo3(from_py_with = convert::priority)] priority: i32,
                #[pyo3(from_py_with = convert::max_attempts)] max_attempts: u32,
                #[pyo3(from_py_with = convert::not_before)] not_before: Option<Delay>,
                #[pyo3(from_py_with = convert::max_hold)] max_hold: Option<Delay>,
                #[pyo3(from_py_with = convert::backoff)] backoff: Option<tenure::Backoff>,
            ) -> PyResult<&'static str> {
                let spec = job_spec(job, payload, priority, max_attempts, not_before, max_hold, backoff);
                self.run_on(py, |t| on_target!(t, submit(production, &spec)))
                    .map(submitted)
            }

            /// Set (a ``tenure.Backoff``) or clear (``None``) a production's
            /// default retry back-off: a retryable failure that names no
            /// delay, of a job without its own back-off, makes the job due
            /// after the policy's step. Not an event; jobs already waiting
            /// keep their due time.
            fn set_production_backoff(
                &self,
                py: Python<'_>,
                production: &str,
                #[pyo3(from_py_with = convert::backoff)] backoff: Option<tenure::Backoff>,
            ) -> PyResult<()> {
                self.run_on(py, |t| on_target!(t, set_production_backoff(production, backoff)))
            }

            /// Pause a production: until it is resumed no claim of it
            /// succeeds (claim-next finds nothing, a named claim is
            /// ``ProductionPaused``); submissions and held leases keep
            /// working. False if it was already paused.
            fn pause_production(&self, py: Python<'_>, production: &str) -> PyResult<bool> {
                self.run_on(py, |t| on_target!(t, pause_production(production)))
            }

            /// Resume a paused production; its waiters wake. False if it
            /// was not paused.
            fn resume_production(&self, py: Python<'_>, production: &str) -> PyResult<bool> {
                self.run_on(py, |t| on_target!(t, resume_production(production)))
            }

            /// Set a production's concurrency limit (1 ..= 1 000 000): at
            /// most ``limit`` of its leases live at once; a named claim
            /// beyond it is ``ConcurrencyLimit``. Lowering it revokes no
            /// lease.
            fn set_concurrency_limit(
                &self,
                py: Python<'_>,
                production: &str,
                #[pyo3(from_py_with = convert::gate_limit)] limit: u32,
            ) -> PyResult<()> {
                self.run_on(py, |t| on_target!(t, set_concurrency_limit(production, Some(limit))))
            }

            /// Clear a production's concurrency limit.
            fn clear_concurrency_limit(&self, py: Python<'_>, production: &str) -> PyResult<()> {
                self.run_on(py, |t| on_target!(t, set_concurrency_limit(production, None)))
            }

            /// Set a production's rate limit: at most ``claims`` claims per
            /// ``interval`` (a ``datetime.timedelta``, whole µs, at most
            /// 24 h and at least 1 µs per claim, else ``InvalidDuration``),
            /// at most ``burst`` at once (``claims``, ``burst`` 1 ..=
            /// 1 000 000). A named claim beyond it is ``RateLimited``.
            fn set_rate_limit(
                &self,
                py: Python<'_>,
                production: &str,
                #[pyo3(from_py_with = convert::rate_claims)] claims: u32,
                #[pyo3(from_py_with = convert::rate_interval)] interval: std::time::Duration,
                #[pyo3(from_py_with = convert::rate_burst)] burst: u32,
            ) -> PyResult<()> {
                let rate = tenure::RateLimit { claims, interval, burst };
                self.run_on(py, |t| on_target!(t, set_rate_limit(production, Some(rate))))
            }

            /// Clear a production's rate limit.
            fn clear_rate_limit(&self, py: Python<'_>, production: &str) -> PyResult<()> {
                self.run_on(py, |t| on_target!(t, set_rate_limit(production, None)))
            }

            /// Coordinator cancel of one job: ``"cancelled"`` or
            /// ``"already_cancelled"``; a completed or failed job is
            /// ``JobTerminal``.
            fn cancel(&self, py: Python<'_>, production: &str, job: &str) -> PyResult<&'static str> {
                self.run_on(py, |t| on_target!(t, cancel(production, job)))
                    .map(cancelled)
            }

            /// Claim a named job for ``ttl`` (a ``datetime.timedelta``).
            fn claim(
                &self,
                py: Python<'_>,
                production: &str,
                job: &str,
                holder: &str,
                ttl: &Bound<'_, PyAny>,
            ) -> PyResult<Lease> {
                self.claim_on(py, ttl, |t, ttl| on_target!(t, claim(production, job, holder, ttl)),
                              |l| Ok(Lease::wrap(l)))
            }

            /// Claim a named job under ``request`` (a ``ClaimRequest``):
            /// returns ``(lease, replayed)``. A retry with the same request
            /// returns the same lease (``replayed`` true) while it is
            /// current, else that claim's own error; the same ID with
            /// another secret or other arguments is ``Conflict``.
            fn claim_idempotent(
                &self,
                py: Python<'_>,
                production: &str,
                job: &str,
                holder: &str,
                ttl: &Bound<'_, PyAny>,
                request: &ClaimRequest,
            ) -> PyResult<(Lease, bool)> {
                let r = &request.inner;
                self.claim_on(py, ttl, |t, ttl| on_target!(t, claim_idempotent(production, job, holder, ttl, r)),
                              applied_lease)
            }

            /// Claim the next claimable job under ``request`` (as
            /// ``claim_idempotent``): returns ``(lease, replayed)``.
            fn claim_next_idempotent(
                &self,
                py: Python<'_>,
                production: &str,
                holder: &str,
                ttl: &Bound<'_, PyAny>,
                request: &ClaimRequest,
            ) -> PyResult<(Lease, bool)> {
                let r = &request.inner;
                self.claim_on(py, ttl, |t, ttl| on_target!(t, claim_next_idempotent(production, holder, ttl, r)),
                              applied_lease)
            }

            /// Claim the next claimable job (highest priority, then oldest);
            /// ``NoJobAvailable`` when there is none.
            fn claim_next(
                &self,
                py: Python<'_>,
                production: &str,
                holder: &str,
                ttl: &Bound<'_, PyAny>,
            ) -> PyResult<Lease> {
                self.claim_on(py, ttl, |t, ttl| on_target!(t, claim_next(production, holder, ttl)),
                              |l| Ok(Lease::wrap(l)))
            }

            /// Claim up to ``n`` (1 ..= 1000) jobs in one operation, in
            /// claim-next order, each with its own claim; fewer (possibly
            /// none: an empty list) when fewer are claimable.
            fn claim_next_many(
                &self,
                py: Python<'_>,
                production: &str,
                holder: &str,
                ttl: &Bound<'_, PyAny>,
                n: usize,
            ) -> PyResult<Vec<Lease>> {
                self.claim_on(py, ttl, |t, ttl| on_target!(t, claim_next_many(production, holder, ttl, n)),
                              |v| Ok(v.into_iter().map(Lease::wrap).collect()))
            }

            /// ``claim_next_many`` under ``request`` (a ``ClaimRequest``):
            /// returns ``(claims, replayed)``. A fresh call's ``claims`` are
            /// all leases (possibly none: an empty list, and the request ID
            /// stays unused). A retry with the same request answers each
            /// member on its own, in order: the same lease while its claim
            /// is current, else that claim's error as an exception object
            /// (not raised). The same ID with another secret, other
            /// arguments (holder, TTL, ``n``) or used by another kind of
            /// claim is ``Conflict``.
            fn claim_next_many_idempotent(
                &self,
                py: Python<'_>,
                production: &str,
                holder: &str,
                ttl: &Bound<'_, PyAny>,
                n: usize,
                request: &ClaimRequest,
            ) -> PyResult<(Vec<Py<PyAny>>, bool)> {
                let r = &request.inner;
                self.claim_on(py, ttl, |t, ttl| on_target!(t, claim_next_many_idempotent(production, holder, ttl, n, r)),
                              |a| Ok((outcomes(py, a.value, lease_value)?, a.replayed)))
            }

            /// Renew many leases to now + ``ttl`` in one operation. One
            /// outcome per lease, in order: ``None``, or the lease's error
            /// as an exception object (not raised; the lease changed
            /// nothing). A raised error means the whole call failed and
            /// nothing changed. In an ``Edit`` all or nothing: the first
            /// refusal is raised.
            fn renew_many(
                &self,
                py: Python<'_>,
                leases: &Bound<'_, PyAny>,
                ttl: &Bound<'_, PyAny>,
            ) -> PyResult<Vec<Py<PyAny>>> {
                let ttl = convert::ttl(ttl, "ttl")?;
                with_leases(leases, |ls| {
                    outcomes(py, self.run_on(py, |t| on_target!(t, renew_many(ls, ttl)))?, none_value)
                })
            }

            /// Release many leases in one operation; outcomes as
            /// ``renew_many``, with the job's new state (``str``) for each
            /// accepted lease.
            fn release_many(&self, py: Python<'_>, leases: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
                with_leases(leases, |ls| {
                    outcomes(py, self.run_on(py, |t| on_target!(t, release_many(ls)))?, state_value)
                })
            }

            /// Fail many leases in one operation: ``items`` are
            /// ``(lease, reason)`` or ``(lease, reason, permanent)``
            /// tuples; outcomes as ``release_many``.
            fn fail_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
                with_fail_items(items, |ls| {
                    outcomes(py, self.run_on(py, |t| on_target!(t, fail_many(ls)))?, state_value)
                })
            }

            /// Complete many leases in one operation: ``items`` are leases
            /// or ``(lease, facts)`` tuples (facts as ``Lease.complete``
            /// takes them); the accepted completions commit together.
            /// Outcomes as ``renew_many``.
            fn complete_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
                with_complete_items(items, |ls| {
                    outcomes(py, self.run_on(py, |t| on_target!(t, complete_many(ls)))?, none_value)
                })
            }

            $($items)*
        }
    };
}

/// A job lease authority over one SQLite store file.
///
/// ``Authority(path, *, synchronous="full", busy_timeout=timedelta(seconds=5),
/// group_commit=True)`` opens (or creates) the store. ``synchronous`` is
/// ``"full"`` (fsync every commit, the default) or ``"normal"``;
/// ``busy_timeout`` (a ``datetime.timedelta``, 0 ..= 1 h; omitted or None
/// means 5 s) is how long a write waits for the writer lock before
/// ``tenure.Busy``; ``group_commit`` (a ``bool``) lets concurrent calls of
/// this handle's threads share one transaction and one fsync on SQLite
/// (``False``: one transaction per call; see docs/design.md, Group commit).
///
/// ``path`` is ``str``, ``bytes`` or ``os.PathLike``, converted with
/// ``os.fsencode``: a name that is not valid UTF-8 is opened as its exact
/// bytes and round-trips through the ``path`` attribute; a NUL byte raises
/// ``tenure.InvalidArgument``.
///
/// Thread-safe: share one ``Authority`` between threads; every store call
/// releases the GIL. Not fork-safe by design: a handle used in a process
/// other than the one that opened it (the child after ``os.fork()``) raises
/// ``tenure.InvalidArgument``; open a new ``Authority`` in the child instead.
///
/// ``close()`` (or leaving ``with tenure.Authority(...) as auth:``) ends
/// every ``claim_next_wait`` in progress on it and makes the handle
/// unusable (``InvalidArgument``); leases it gave keep working, and the
/// store closes once the last of them is gone too.
#[pyclass(frozen, module = "tenure")]
pub struct Authority {
    /// The core handle; `None` once closed.
    inner: ProcessBound<Mutex<Option<tenure::Authority>>>,
    path: PathBuf,
    migrated_from: u32,
    /// Cancelled by `close()`: every wait of this handle is its child.
    closer: Arc<CancelNode>,
}

impl Authority {
    /// The core handle (a cheap clone of it), unless closed.
    pub(crate) fn get(&self) -> PyResult<tenure::Authority> {
        let m = self.inner.get("Authority")?;
        let g = m.lock().unwrap_or_else(|p| p.into_inner());
        g.clone().ok_or_else(|| {
            to_py(Error::InvalidArgument(
                "this tenure.Authority was closed".into(),
            ))
        })
    }

    /// Run a core call on the handle with the GIL released.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&tenure::Authority) -> tenure::Result<T> + Send,
    ) -> PyResult<T> {
        let a = self.get()?;
        unlocked(py, || f(&a))
    }

    /// A cancel node for waits of this handle: a child of `cancel` (if
    /// any) and of this handle's closer.
    pub(crate) fn wait_node(&self, cancel: Option<&Arc<CancelNode>>) -> Arc<CancelNode> {
        let own = CancelNode::new();
        if let Some(c) = cancel {
            c.adopt(&own);
        }
        self.closer.adopt(&own);
        own
    }
}

impl Ops for Authority {
    fn run_on<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(Target<'_>) -> tenure::Result<T> + Send,
    ) -> PyResult<T> {
        self.run(py, |a| f(Target::Authority(a)))
    }
}

pymethods_with_shared_ops! {
impl Authority {
    #[new]
    #[pyo3(signature = (path, *, synchronous = "full", busy_timeout = None, group_commit = true, retention = None))]
    fn new(
        py: Python<'_>,
        #[pyo3(from_py_with = convert::store_path)] path: PathBuf,
        synchronous: &str,
        busy_timeout: Option<&Bound<'_, PyAny>>,
        group_commit: bool,
        retention: Option<PyRef<'_, Retention>>,
    ) -> PyResult<Authority> {
        let sync = match synchronous {
            "full" => Synchronous::Full,
            "normal" => Synchronous::Normal,
            other => {
                return Err(to_py(Error::InvalidArgument(format!(
                    "synchronous must be \"full\" or \"normal\", not {other:?}"
                ))))
            }
        };
        let mut opts = Options::new()
            .synchronous(sync)
            .group_commit(group_commit);
        if let Some(b) = busy_timeout.filter(|b| !b.is_none()) {
            opts = opts.busy_timeout(convert::busy_timeout(b, "busy_timeout")?);
        }
        if let Some(r) = retention {
            opts = opts.retention(r.inner);
        }
        let inner = unlocked(py, || tenure::Authority::open(&path, &opts))?;
        Ok(Authority {
            path: inner.path().to_path_buf(),
            migrated_from: inner.migrated_from(),
            inner: ProcessBound::new(Mutex::new(Some(inner))),
            closer: CancelNode::new(),
        })
    }

    /// Like ``claim_next``, but when nothing is claimable wait up to
    /// ``timeout`` (a ``datetime.timedelta``, 0 ..= 24 h; zero makes one
    /// attempt) for a job to become claimable, then ``NoJobAvailable``.
    ///
    /// The wait ends early, with ``NoJobAvailable`` saying so, when
    /// ``cancel`` (a ``tenure.WaitCancel``) is cancelled or this authority
    /// is closed. The GIL is released while waiting. On the main thread the
    /// wait runs on a helper thread while this one runs Python's signal
    /// handlers at least every 100 ms: if one raises (``KeyboardInterrupt``),
    /// the wait is cancelled, a claim that committed meanwhile is released,
    /// and the exception propagates.
    #[pyo3(signature = (production, holder, ttl, timeout, cancel = None))]
    fn claim_next_wait(
        &self,
        py: Python<'_>,
        production: &str,
        holder: &str,
        ttl: &Bound<'_, PyAny>,
        timeout: &Bound<'_, PyAny>,
        cancel: Option<&Bound<'_, WaitCancel>>,
    ) -> PyResult<Lease> {
        let ttl = convert::ttl(ttl, "ttl")?;
        let timeout = convert::wait(timeout, "timeout")?;
        let a = self.get()?;
        let own = self.wait_node(cancel.map(|c| c.get().node()));
        let (production, holder) = (production.to_owned(), holder.to_owned());
        let token = own.clone();
        let (r, interrupted) = work::interruptible(
            py,
            move || {
                convert::guarded(|| {
                    a.claim_next_wait(&production, &holder, ttl, timeout, Some(token.core()))
                })
            },
            || own.cancel(),
        );
        if let Some(e) = interrupted {
            if let Ok(lease) = r {
                // The caller never receives it: hand it back.
                let _ = py.detach(|| lease.release());
            }
            return Err(e);
        }
        r.map(Lease::wrap).map_err(to_py)
    }

    /// ``renew_many`` as idempotent calls (each lease as
    /// ``Lease.renew_idempotent`` alone): one outcome per lease, in order,
    /// ``(expires_us, replayed)`` or the lease's error as an exception
    /// object (not raised; the lease changed nothing). A raised error means
    /// the whole call failed and nothing changed.
    fn renew_many_idempotent(
        &self,
        py: Python<'_>,
        leases: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let ttl = convert::ttl(ttl, "ttl")?;
        with_leases(leases, |ls| {
            let done = self.run(py, |a| a.renew_many_idempotent(ls, ttl))?;
            outcomes(py, done, replayed_value(expiry_value))
        })
    }

    /// ``release_many`` as idempotent calls: outcomes as
    /// ``renew_many_idempotent``, ``(state, replayed)`` for each accepted
    /// lease.
    fn release_many_idempotent(
        &self,
        py: Python<'_>,
        leases: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        with_leases(leases, |ls| {
            let done = self.run(py, |a| a.release_many_idempotent(ls))?;
            outcomes(py, done, replayed_value(state_value))
        })
    }

    /// ``fail_many`` as idempotent calls (items as ``fail_many``'s; the
    /// same reason and permanence as the recorded failure is a replay,
    /// another is ``Conflict`` for that lease): outcomes as
    /// ``release_many_idempotent``.
    fn fail_many_idempotent(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        with_fail_items(items, |ls| {
            let done = self.run(py, |a| a.fail_many_idempotent(ls))?;
            outcomes(py, done, replayed_value(state_value))
        })
    }

    /// ``complete_many`` as idempotent calls (items as
    /// ``complete_many``'s; other facts are ``Conflict`` for that lease):
    /// one outcome per lease, whether it was a replay (``bool``, as
    /// ``Lease.complete_idempotent`` returns it) or its error.
    fn complete_many_idempotent(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        with_complete_items(items, |ls| {
            let done = self.run(py, |a| a.complete_many_idempotent(ls))?;
            outcomes(py, done, replayed_flag)
        })
    }

    /// End every ``claim_next_wait`` in progress on this authority at once
    /// (each raises ``NoJobAvailable`` saying it was cancelled); later
    /// waits are not affected.
    fn cancel_waits(&self) -> PyResult<()> {
        self.get()?.cancel_waits();
        Ok(())
    }

    /// Close this handle: end every wait in progress on it, then let go of
    /// the store (see the class docs). Idempotent.
    fn close(&self) -> PyResult<()> {
        let m = self.inner.get("Authority")?;
        self.closer.cancel();
        let a = m.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(a) = a {
            a.cancel_waits();
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Close; never suppresses the exception.
    #[pyo3(signature = (exc_type = None, exc_value = None, traceback = None))]
    fn __exit__(
        &self,
        exc_type: Option<&Bound<'_, PyType>>,
        exc_value: Option<&Bound<'_, PyAny>>,
        traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let _ = (exc_type, exc_value, traceback);
        self.close()?;
        Ok(false)
    }

    /// The store's path as opened, decoded like every Python file API
    /// (``os.fsdecode``), so a path that is not valid UTF-8 comes back
    /// exactly (a PostgreSQL URL comes back without its password).
    #[getter]
    fn path(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }

    /// The schema version found when this handle opened the store (0 for a new store).
    #[getter]
    fn migrated_from(&self) -> u32 {
        self.migrated_from
    }

    /// Begin an explicit edit: one write transaction holding the writer lock
    /// until it commits or aborts. Use it as a context manager.
    fn edit(&self, py: Python<'_>) -> PyResult<Edit> {
        let a = self.get()?;
        let e = unlocked(py, || a.edit())?;
        Ok(Edit::wrap(e, &a))
    }

    /// All productions, by name.
    fn productions(&self, py: Python<'_>) -> PyResult<Vec<ProductionView>> {
        let a = self.get()?;
        let v = unlocked(py, || a.productions())?;
        Ok(v.into_iter().map(ProductionView::from).collect())
    }

    /// Submit many ``JobSpec`` in one edit: all or nothing.
    fn submit_many(
        &self,
        py: Python<'_>,
        production: &str,
        jobs: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<&'static str>> {
        let a = self.get()?;
        let specs = specs(jobs)?;
        let v = unlocked(py, || a.submit_many(production, &specs))?;
        Ok(v.into_iter().map(submitted).collect())
    }

    /// Turn a token from ``Lease.export_token()`` back into an active lease
    /// after validating it against the store's current claim.
    fn import_lease(&self, py: Python<'_>, token: &str) -> PyResult<Lease> {
        let a = self.get()?;
        unlocked(py, || a.import_lease(token)).map(Lease::wrap)
    }

    /// Observe one job.
    fn job(&self, py: Python<'_>, production: &str, job: &str) -> PyResult<JobView> {
        let a = self.get()?;
        unlocked(py, || a.job(production, job)).map(JobView::from)
    }

    /// When claim-next on ``production`` may next find work that nobody
    /// writes: the earliest due time of a job waiting for it or the
    /// earliest expiry of a held lease, whichever comes first (µs since the
    /// epoch; None if neither exists; a time already past means now).
    fn next_due_us(&self, py: Python<'_>, production: &str) -> PyResult<Option<i64>> {
        let a = self.get()?;
        unlocked(py, || a.next_due_us(production))
    }

    /// A job's payload bytes.
    fn payload<'py>(
        &self,
        py: Python<'py>,
        production: &str,
        job: &str,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let a = self.get()?;
        let v = unlocked(py, || a.payload(production, job))?;
        Ok(pyo3::types::PyBytes::new(py, &v))
    }

    /// A page of a production's jobs by job ID, optionally in one observed
    /// state; pass the last job ID of a page as ``after`` for the next one.
    /// ``limit`` 0 means 100; at most 10 000.
    #[pyo3(signature = (production, *, state = None, after = None, limit = 0))]
    fn jobs(
        &self,
        py: Python<'_>,
        production: &str,
        state: Option<&str>,
        after: Option<String>,
        limit: usize,
    ) -> PyResult<Vec<JobView>> {
        let a = self.get()?;
        let q = ListQuery {
            state: state.map(convert::job_state).transpose()?,
            after,
            limit,
        };
        let v = unlocked(py, || a.jobs(production, &q))?;
        Ok(v.into_iter().map(JobView::from).collect())
    }

    /// Facts published by a job's completion, provenance (``tenure.*``) included.
    fn facts(&self, py: Python<'_>, production: &str, job: &str) -> PyResult<Vec<PublishedFact>> {
        let a = self.get()?;
        let v = unlocked(py, || a.facts(production, job))?;
        Ok(v.into_iter().map(PublishedFact::from).collect())
    }

    /// Every fact of a production, by job.
    fn production_facts(&self, py: Python<'_>, production: &str) -> PyResult<Vec<PublishedFact>> {
        let a = self.get()?;
        let v = unlocked(py, || a.production_facts(production))?;
        Ok(v.into_iter().map(PublishedFact::from).collect())
    }

    /// Events with sequence number greater than ``after``, oldest first, at
    /// most ``limit`` (0 means 100; at most 10 000).
    #[pyo3(signature = (after = 0, limit = 0))]
    fn events(&self, py: Python<'_>, after: u64, limit: usize) -> PyResult<Vec<Event>> {
        let a = self.get()?;
        let v = unlocked(py, || a.events(after, limit))?;
        Ok(v.into_iter().map(Event::from).collect())
    }

    /// Events of one production (see ``events``).
    #[pyo3(signature = (production, after = 0, limit = 0))]
    fn production_events(
        &self,
        py: Python<'_>,
        production: &str,
        after: u64,
        limit: usize,
    ) -> PyResult<Vec<Event>> {
        let a = self.get()?;
        let v = unlocked(py, || a.production_events(production, after, limit))?;
        Ok(v.into_iter().map(Event::from).collect())
    }

    /// The clock reading, the durable high-water mark, and whether guarded
    /// operations are refused.
    fn clock(&self, py: Python<'_>) -> PyResult<ClockReading> {
        let a = self.get()?;
        let c = unlocked(py, || a.clock())?;
        Ok(ClockReading {
            now_us: c.now_us,
            mark_us: c.mark_us,
            blocked: c.blocked,
        })
    }

    /// Queue statistics (see ``Stats``): per production (or only
    /// ``production``), jobs by observed state, the waiting and lease
    /// figures, and the flow over ``window``, read in one snapshot. Live
    /// leases expiring within ``horizon`` are counted. Both are
    /// ``datetime.timedelta`` (at most 30 days).
    #[pyo3(signature = (production = None, *, horizon = None, window = None))]
    fn stats(
        &self,
        py: Python<'_>,
        production: Option<String>,
        horizon: Option<&Bound<'_, PyAny>>,
        window: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::stats::Stats> {
        let a = self.get()?;
        let span = |d: Option<&Bound<'_, PyAny>>, name: &str, default: std::time::Duration| {
            d.map_or(Ok(default), |d| {
                let us = convert::timedelta_micros(d, name)?;
                u64::try_from(us).map(std::time::Duration::from_micros).map_err(|_| {
                    to_py(Error::InvalidDuration(format!("{name} must not be negative")))
                })
            })
        };
        let q = tenure::StatsQuery {
            production,
            horizon: span(horizon, "horizon", tenure::DEFAULT_STATS_HORIZON)?,
            window: span(window, "window", tenure::DEFAULT_STATS_WINDOW)?,
        };
        let s = unlocked(py, || a.stats(&q))?;
        Ok(s.into())
    }

    /// The offline invariant checker (see ``CheckReport``).
    fn check(&self, py: Python<'_>) -> PyResult<CheckReport> {
        let a = self.get()?;
        let r = unlocked(py, || a.check())?;
        Ok(CheckReport {
            schema_version: r.schema_version,
            jobs: r.jobs,
            events: r.events,
            violations: r.violations,
            history_horizon: r.history_horizon,
        })
    }

    /// The history horizon: every event with a sequence number up to it was
    /// pruned (0: none). ``events`` behind it raise ``HistoryPruned``; a
    /// tailer resumes after this number.
    fn history_horizon(&self, py: Python<'_>) -> PyResult<u64> {
        let a = self.get()?;
        unlocked(py, || a.history_horizon())
    }

    /// One bounded prune step under ``retention`` (at most 256 rows of each
    /// kind, one short transaction); call again while ``more``. Ages are
    /// measured on the authority's clock (``ClockRollback`` while it reads
    /// below the high-water mark); jobs that are not terminal are never
    /// touched.
    fn prune(&self, py: Python<'_>, retention: PyRef<'_, Retention>) -> PyResult<PruneReport> {
        let a = self.get()?;
        let policy = retention.inner;
        unlocked(py, || a.prune(&policy)).map(PruneReport::from)
    }

    /// A production's claim gates as set (see ``Gates``); ``NotFound``
    /// for an unknown production.
    fn production_gates(&self, py: Python<'_>, production: &str) -> PyResult<crate::values::Gates> {
        let a = self.get()?;
        unlocked(py, || a.production_gates(production)).map(crate::values::Gates::from)
    }

    /// Put a failed or cancelled job back to waiting, due after ``delay``
    /// (a ``datetime.timedelta``, 0 ..= 366 days; default at once), with
    /// ``extra_attempts`` attempts (1 ..= 1000, at most the job's
    /// ``max_attempts``; default a fresh budget of ``max_attempts``). Its
    /// events and progress checkpoint stay; a lease of an earlier claim is
    /// stale. ``JobLive`` for a job that is waiting, claimed or expired with
    /// attempts left, ``JobTerminal`` for a completed one, ``Cancelled`` in
    /// a cancelled production; nothing changes then.
    #[pyo3(signature = (production, job, *, extra_attempts = None, delay = None))]
    fn requeue(
        &self,
        py: Python<'_>,
        production: &str,
        job: &str,
        extra_attempts: Option<u32>,
        delay: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let d = delay.map(|d| convert::delay(d, "delay")).transpose()?.unwrap_or_default();
        let a = self.get()?;
        unlocked(py, || a.requeue(production, job, extra_attempts, d))
    }

    /// ``requeue`` of up to ``limit`` (1 ..= 1000) of the production's
    /// failed or cancelled jobs, by job ID: ``(requeued, more)``.
    #[pyo3(signature = (production, *, extra_attempts = None, delay = None, limit = 100))]
    fn requeue_all(
        &self,
        py: Python<'_>,
        production: &str,
        extra_attempts: Option<u32>,
        delay: Option<&Bound<'_, PyAny>>,
        limit: usize,
    ) -> PyResult<(u64, bool)> {
        let d = delay.map(|d| convert::delay(d, "delay")).transpose()?.unwrap_or_default();
        let a = self.get()?;
        unlocked(py, || a.requeue_all(production, extra_attempts, d, limit))
    }

    /// Claim the next claimable job across ``productions`` (1 ..= 64
    /// distinct IDs), rotating: this handle asks them in list order
    /// starting after the production that served its previous claim across
    /// the same list. ``NoJobAvailable`` when none has one.
    fn claim_next_across(
        &self,
        py: Python<'_>,
        productions: Vec<String>,
        holder: &str,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<Lease> {
        let ttl = convert::ttl(ttl, "ttl")?;
        let a = self.get()?;
        let list: Vec<&str> = productions.iter().map(String::as_str).collect();
        unlocked(py, || a.claim_next_across(&list, holder, ttl)).map(Lease::wrap)
    }

    /// Claim up to ``n`` (1 ..= 1000) jobs across ``productions``, shared
    /// out in rounds from this handle's rotation; fewer (possibly none)
    /// when fewer are claimable.
    fn claim_next_many_across(
        &self,
        py: Python<'_>,
        productions: Vec<String>,
        holder: &str,
        ttl: &Bound<'_, PyAny>,
        n: usize,
    ) -> PyResult<Vec<Lease>> {
        let ttl = convert::ttl(ttl, "ttl")?;
        let a = self.get()?;
        let list: Vec<&str> = productions.iter().map(String::as_str).collect();
        unlocked(py, || a.claim_next_many_across(&list, holder, ttl, n))
            .map(|v| v.into_iter().map(Lease::wrap).collect())
    }

    /// ``claim_next_wait`` across ``productions``: each attempt is a
    /// ``claim_next_across``; the wait wakes on a commit that may have made
    /// work claimable in any of them.
    #[pyo3(signature = (productions, holder, ttl, timeout, cancel = None))]
    fn claim_next_wait_across(
        &self,
        py: Python<'_>,
        productions: Vec<String>,
        holder: &str,
        ttl: &Bound<'_, PyAny>,
        timeout: &Bound<'_, PyAny>,
        cancel: Option<&Bound<'_, WaitCancel>>,
    ) -> PyResult<Lease> {
        let ttl = convert::ttl(ttl, "ttl")?;
        let timeout = convert::wait(timeout, "timeout")?;
        let a = self.get()?;
        let own = self.wait_node(cancel.map(|c| c.get().node()));
        let holder = holder.to_owned();
        let token = own.clone();
        let (r, interrupted) = work::interruptible(
            py,
            move || {
                convert::guarded(|| {
                    let list: Vec<&str> = productions.iter().map(String::as_str).collect();
                    a.claim_next_wait_across(&list, &holder, ttl, timeout, Some(token.core()))
                })
            },
            || own.cancel(),
        );
        if let Some(e) = interrupted {
            if let Ok(lease) = r {
                // The caller never receives it: hand it back.
                let _ = py.detach(|| lease.release());
            }
            return Err(e);
        }
        r.map(Lease::wrap).map_err(to_py)
    }

    /// Create a schedule (docs/schedules.md): ``True`` if created,
    /// ``False`` if the same definition exists (another one is
    /// ``Conflict``). Exactly one of ``every`` (a ``datetime.timedelta``,
    /// whole seconds, 1 s ..= 366 days; ``InvalidDuration``) and ``cron``
    /// (five fields; ``InvalidArgument`` if malformed), read in UTC or in
    /// the IANA time zone ``tz`` (``"Europe/Paris"``; an unknown zone is
    /// ``InvalidArgument``). ``catch_up``:
    /// 1 ..= 1000; ``overlap``: ``"enqueue"`` or ``"skip"``.
    #[pyo3(signature = (production, name, *, every = None, cron = None, tz = None, payload = b"".as_slice(), priority = 0, max_attempts = tenure::DEFAULT_MAX_ATTEMPTS, max_hold = None, backoff = None, catch_up = 1, overlap = "enqueue"))]
    #[allow(clippy::too_many_arguments)]
    fn create_schedule(
        &self,
        py: Python<'_>,
        production: &str,
        name: &str,
        every: Option<&Bound<'_, PyAny>>,
        cron: Option<&str>,
        tz: Option<&str>,
        payload: &[u8],
        #[pyo3(from_py_with = convert::priority)] priority: i32,
        #[pyo3(from_py_with = convert::max_attempts)] max_attempts: u32,
        #[pyo3(from_py_with = convert::max_hold)] max_hold: Option<Delay>,
        #[pyo3(from_py_with = convert::backoff)] backoff: Option<tenure::Backoff>,
        catch_up: u32,
        overlap: &str,
    ) -> PyResult<bool> {
        let s = crate::schedules::spec(
            name, every, cron, tz, payload, priority, max_attempts, max_hold, backoff, catch_up, overlap,
        )?;
        let a = self.get()?;
        unlocked(py, || a.create_schedule(production, &s))
    }

    /// Replace a schedule's definition (``NotFound`` if there is none);
    /// its slot record and pause state stay. Arguments as
    /// :meth:`create_schedule`.
    #[pyo3(signature = (production, name, *, every = None, cron = None, tz = None, payload = b"".as_slice(), priority = 0, max_attempts = tenure::DEFAULT_MAX_ATTEMPTS, max_hold = None, backoff = None, catch_up = 1, overlap = "enqueue"))]
    #[allow(clippy::too_many_arguments)]
    fn update_schedule(
        &self,
        py: Python<'_>,
        production: &str,
        name: &str,
        every: Option<&Bound<'_, PyAny>>,
        cron: Option<&str>,
        tz: Option<&str>,
        payload: &[u8],
        #[pyo3(from_py_with = convert::priority)] priority: i32,
        #[pyo3(from_py_with = convert::max_attempts)] max_attempts: u32,
        #[pyo3(from_py_with = convert::max_hold)] max_hold: Option<Delay>,
        #[pyo3(from_py_with = convert::backoff)] backoff: Option<tenure::Backoff>,
        catch_up: u32,
        overlap: &str,
    ) -> PyResult<()> {
        let s = crate::schedules::spec(
            name, every, cron, tz, payload, priority, max_attempts, max_hold, backoff, catch_up, overlap,
        )?;
        let a = self.get()?;
        unlocked(py, || a.update_schedule(production, &s))
    }

    /// Pause a schedule; ``False`` if it was paused already.
    fn pause_schedule(&self, py: Python<'_>, production: &str, name: &str) -> PyResult<bool> {
        let a = self.get()?;
        unlocked(py, || a.pause_schedule(production, name))
    }

    /// Resume a paused schedule (from its first slot after now); ``False``
    /// if it was not paused.
    fn resume_schedule(&self, py: Python<'_>, production: &str, name: &str) -> PyResult<bool> {
        let a = self.get()?;
        unlocked(py, || a.resume_schedule(production, name))
    }

    /// Delete a schedule and its slot record; ``False`` if there was none.
    fn delete_schedule(&self, py: Python<'_>, production: &str, name: &str) -> PyResult<bool> {
        let a = self.get()?;
        unlocked(py, || a.delete_schedule(production, name))
    }

    /// The schedules of ``production`` (all with ``None``), each a ``dict``.
    #[pyo3(signature = (production = None))]
    fn schedules<'py>(
        &self,
        py: Python<'py>,
        production: Option<&str>,
    ) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
        let a = self.get()?;
        let vs = unlocked(py, || a.schedules(production))?;
        vs.iter().map(|v| crate::schedules::view(py, v)).collect()
    }

    /// One scheduler step: a ``dict`` with ``enqueued`` (``(production,
    /// job)`` pairs), ``dropped``, ``now`` and ``next_slot``.
    fn run_schedules<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let a = self.get()?;
        let t = unlocked(py, || a.run_schedules())?;
        crate::schedules::step(py, &t)
    }

    /// Remove a finished production with its jobs, facts, events and
    /// tombstones. ``ProductionLive``, changing nothing, while any of its
    /// jobs is not terminal; calling again finishes an interrupted one.
    fn delete_production(&self, py: Python<'_>, production: &str) -> PyResult<DeletedCounts> {
        let a = self.get()?;
        unlocked(py, || a.delete_production(production)).map(DeletedCounts::from)
    }

    /// Export a production for archiving: an iterator of ``str``, one JSON
    /// line (no newline) per record: the production, its jobs with payloads
    /// (``payload_base64``), its facts, then its events, exactly the lines
    /// ``tenure production export`` writes (``json.loads`` each for a
    /// ``dict``; its ``record`` field names the kind). The whole export is
    /// read before the iterator is returned. No secret is exported.
    fn export_production<'py>(
        &self,
        py: Python<'py>,
        production: &str,
    ) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
        let a = self.get()?;
        let lines = unlocked(py, || {
            let mut lines = Vec::new();
            a.export_production(production, &mut |r| {
                lines.push(r.to_json_line());
                Ok(())
            })?;
            Ok(lines)
        })?;
        pyo3::types::PyList::new(py, lines)?.try_iter()
    }

    /// Rewrite a SQLite store so that pruning gives freed space back to the
    /// file system (a full ``VACUUM`` holding the writer lock: a quiet
    /// moment's job); nothing to do on PostgreSQL.
    fn vacuum(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.get()?;
        unlocked(py, || a.vacuum())
    }

    fn __repr__(&self) -> String {
        format!(
            "Authority(path={})",
            q(&self.path.to_string_lossy())
        )
    }
}
}

/// A claim's request ID with the secret the claim will carry, generated in
/// this process (docs/design.md, "Idempotent calls"). Pass the same object
/// to retry a claim whose answer was lost. The secret never shows.
#[pyclass(frozen, module = "tenure")]
pub struct ClaimRequest {
    inner: tenure::ClaimRequest,
}

#[pymethods]
impl ClaimRequest {
    /// A request with a fresh secret; ``request_id`` is validated like a
    /// job ID (``InvalidArgument``).
    #[new]
    fn new(request_id: &str) -> PyResult<ClaimRequest> {
        tenure::ClaimRequest::new(request_id)
            .map(|inner| ClaimRequest { inner })
            .map_err(to_py)
    }
    /// The request ID.
    #[getter]
    fn request_id(&self) -> &str {
        self.inner.request_id()
    }
    fn __repr__(&self) -> String {
        format!("ClaimRequest({:?})", self.inner.request_id())
    }
}

/// An owning, production-bound lease on one job.
///
/// Attribution (``production``, ``job``, ``claim_id``, ``attempt``,
/// ``holder``), the expiry confirmed by the store (``expires_us``, and as an
/// aware UTC ``datetime``, ``expires_at``) and the
/// local ``status`` (``"pending"``, ``"active"``, ``"closed"``) are readable;
/// the secret is not: ``export_token()`` is the only way to get the
/// credential, and ``repr()`` never shows it.
///
/// A lease is deliberately not a context manager: dropping or
/// garbage-collecting it never writes, renews or releases anything. End it
/// explicitly with ``release()``, ``fail()`` or ``complete()``, or let it
/// expire. Thread-safe (e.g. a heartbeat thread renewing it); not usable in
/// another process after ``fork()`` (hand it over with a token instead).
#[pyclass(frozen, module = "tenure")]
pub struct Lease {
    inner: ProcessBound<tenure::Lease>,
}

impl Lease {
    pub(crate) fn wrap(l: tenure::Lease) -> Lease {
        Lease {
            inner: ProcessBound::new(l),
        }
    }
    pub(crate) fn get(&self) -> PyResult<&tenure::Lease> {
        self.inner.get("Lease")
    }

    /// Run a core call on this lease with the GIL released.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&tenure::Lease) -> tenure::Result<T> + Send,
    ) -> PyResult<T> {
        let l = self.get()?;
        unlocked(py, || f(l))
    }

    /// The one failure call behind ``fail`` and ``fail_idempotent``
    /// ([`fail_lease`] with the GIL released).
    fn failure(
        &self,
        py: Python<'_>,
        reason: &str,
        permanent: bool,
        retry_after: Option<Delay>,
        idempotent: bool,
    ) -> PyResult<Applied<JobState>> {
        let delay = retry_delay(permanent, retry_after)?;
        self.run(py, |l| fail_lease(l, reason, permanent, delay, idempotent))
    }
}

/// The core's failure call: a retry delay (if any) picks its
/// `fail_retry_after` form, `idempotent` its `_idempotent` twin (a plain
/// call is never a replay).
pub(crate) fn fail_lease(
    l: &tenure::Lease,
    reason: &str,
    permanent: bool,
    delay: Option<Delay>,
    idempotent: bool,
) -> tenure::Result<Applied<JobState>> {
    let fresh = |value| Applied {
        value,
        replayed: false,
    };
    match (delay, idempotent) {
        (Some(d), true) => l.fail_retry_after_idempotent(reason, d),
        (None, true) => l.fail_idempotent(reason, permanent),
        (Some(d), false) => l.fail_retry_after(reason, d).map(fresh),
        (None, false) => l.fail(reason, permanent).map(fresh),
    }
}

#[pymethods]
impl Lease {
    /// Production ID.
    #[getter]
    fn production(&self) -> &str {
        self.inner.production()
    }
    /// Job ID.
    #[getter]
    fn job(&self) -> &str {
        self.inner.job()
    }
    /// The public fencing token of this claim (UUID text).
    #[getter]
    fn claim_id(&self) -> String {
        self.inner.claim_id().to_string()
    }
    /// Which attempt this claim is (1-based).
    #[getter]
    fn attempt(&self) -> u32 {
        self.inner.attempt()
    }
    /// The holder given at claim time.
    #[getter]
    fn holder(&self) -> &str {
        self.inner.holder()
    }
    /// Expiry as last confirmed by the store (µs since the epoch).
    #[getter]
    fn expires_us(&self) -> i64 {
        self.inner.expires_us()
    }
    /// ``expires_us`` as an aware UTC ``datetime``.
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::utc(py, self.inner.expires_us())
    }
    /// Local status: ``"pending"`` until its edit commits, ``"active"``,
    /// ``"closed"`` after a successful release/fail/complete or a failed edit.
    #[getter]
    fn status(&self) -> &'static str {
        self.inner.status().as_str()
    }

    /// Extend the lease to now + ``ttl`` (a ``datetime.timedelta``); the new
    /// expiry must be later (``NotExtended``) and the renewal must commit
    /// before the current expiry (``LeaseExpired``).
    fn renew(&self, py: Python<'_>, ttl: &Bound<'_, PyAny>) -> PyResult<()> {
        let ttl = convert::ttl(ttl, "ttl")?;
        self.run(py, |l| l.renew(ttl))
    }

    /// Store ``progress`` (``bytes``, at most 4096) as the job's progress
    /// checkpoint, which ``JobView.progress`` shows and the job's next
    /// attempt reads (``Lease.progress``). Only the current lease may: a
    /// stale, expired or closed lease raises as for any transition
    /// (``StaleLease``, ``LeaseExpired``, ``LeaseClosed``) and writes nothing.
    fn checkpoint(&self, py: Python<'_>, progress: Vec<u8>) -> PyResult<()> {
        self.run(py, |l| l.checkpoint(&progress))
    }

    /// ``renew`` and ``checkpoint`` in one transition: both or neither.
    fn renew_checkpoint(
        &self,
        py: Python<'_>,
        ttl: &Bound<'_, PyAny>,
        progress: Vec<u8>,
    ) -> PyResult<()> {
        let ttl = convert::ttl(ttl, "ttl")?;
        self.run(py, |l| l.renew_checkpoint(ttl, &progress))
    }

    /// The job's progress checkpoint as stored now (``bytes``; an earlier
    /// attempt's until this lease writes one), ``None`` if none was written.
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, pyo3::types::PyBytes>>> {
        let p = self.run(py, |l| l.progress())?;
        Ok(p.map(|b| pyo3::types::PyBytes::new(py, &b)))
    }

    /// Give the job back unfinished; returns the job's new state. Closes the lease.
    fn release(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.run(py, |l| l.release()).map(|s| s.as_str())
    }

    /// Report failure (``reason`` up to 1024 bytes): requested again unless
    /// ``permanent`` or out of attempts, else failed. Returns the job's new
    /// state. Closes the lease. A retryable failure is due again after
    /// ``retry_after`` (a ``datetime.timedelta``, 0 ..= 366 days; zero: at
    /// once) if given, else after the job's or its production's back-off,
    /// else at once; ``retry_after`` with ``permanent=True`` is
    /// ``InvalidArgument``.
    #[pyo3(signature = (reason = "", *, permanent = false, retry_after = None))]
    fn fail(
        &self,
        py: Python<'_>,
        reason: &str,
        permanent: bool,
        #[pyo3(from_py_with = convert::retry_after)] retry_after: Option<Delay>,
    ) -> PyResult<&'static str> {
        self.failure(py, reason, permanent, retry_after, false)
            .map(|a| a.value.as_str())
    }

    /// Complete the job, publishing ``facts`` (a ``dict[str, str]`` or an
    /// iterable of ``(key, value)`` pairs) with provenance in the same
    /// transaction. Closes the lease.
    #[pyo3(signature = (facts = None))]
    fn complete(&self, py: Python<'_>, facts: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let facts = convert::facts(facts)?;
        self.run(py, |l| l.complete(&facts))
    }

    /// ``renew`` as an idempotent call: returns ``(expires_us, replayed)``;
    /// a renewal this lease already made to the expiry this one asks for is
    /// a replay.
    fn renew_idempotent(&self, py: Python<'_>, ttl: &Bound<'_, PyAny>) -> PyResult<(i64, bool)> {
        let ttl = convert::ttl(ttl, "ttl")?;
        self.run(py, |l| l.renew_idempotent(ttl))
            .map(|a| (a.value, a.replayed))
    }

    /// ``release`` as an idempotent call: returns ``(state, replayed)``.
    fn release_idempotent(&self, py: Python<'_>) -> PyResult<(&'static str, bool)> {
        self.run(py, |l| l.release_idempotent()).map(applied_state)
    }

    /// ``fail`` as an idempotent call: returns ``(state, replayed)``; the
    /// same reason, permanence and ``retry_after`` as the recorded failure
    /// is a replay, another is ``Conflict``.
    #[pyo3(signature = (reason = "", *, permanent = false, retry_after = None))]
    fn fail_idempotent(
        &self,
        py: Python<'_>,
        reason: &str,
        permanent: bool,
        #[pyo3(from_py_with = convert::retry_after)] retry_after: Option<Delay>,
    ) -> PyResult<(&'static str, bool)> {
        self.failure(py, reason, permanent, retry_after, true)
            .map(applied_state)
    }

    /// ``complete`` as an idempotent call: returns whether it was a replay;
    /// other facts are ``Conflict``.
    #[pyo3(signature = (facts = None))]
    fn complete_idempotent(
        &self,
        py: Python<'_>,
        facts: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let facts = convert::facts(facts)?;
        self.run(py, |l| l.complete_idempotent(&facts))
            .map(|a| a.replayed)
    }

    /// Start a keeper: a native thread that renews this lease to now +
    /// ``ttl`` every ``every`` (``ttl / 3`` unless given; shorter than
    /// ``ttl``) until stopped or refused. Use it as a context manager:
    /// leaving the block stops it; it never releases the lease.
    #[pyo3(signature = (ttl, every = None))]
    fn keep_alive(
        &self,
        ttl: &Bound<'_, PyAny>,
        every: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Keeper> {
        let ttl = convert::ttl(ttl, "ttl")?;
        let every = match every {
            Some(e) => convert::wait(e, "every")?,
            None => work::default_period(ttl),
        };
        let l = self.get()?;
        Keeper::start(l, ttl, every)
    }

    /// The credential as text (``tenure-lease-v1.…``) for another process's
    /// ``Authority.import_lease``. Only an active lease can be exported.
    /// Treat it like a password: never log it or pass it on a command line.
    fn export_token(&self) -> PyResult<String> {
        let l = self.get()?;
        let t = l.export_token().map_err(to_py)?;
        Ok(t.expose().to_owned())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let l = &self.inner;
        format!(
            "Lease(production={}, job={}, claim_id={}, attempt={}, holder={}, expires_us={}, \
             expires_at={}, status={})",
            q(l.production()),
            q(l.job()),
            q(&l.claim_id().to_string()),
            l.attempt(),
            q(l.holder()),
            l.expires_us(),
            convert::utc_repr(py, Some(l.expires_us())),
            q(l.status().as_str())
        )
    }
}

/// One write transaction: several transitions that commit together.
///
/// It holds the store's writer lock until ``commit()`` or ``abort()``: keep
/// it short. As a context manager it commits on normal exit and aborts when
/// the block raises (the exception propagates). Leases claimed in it are
/// ``"pending"`` until the commit succeeds and can be used inside the same
/// edit (claim and complete atomically); if the commit fails they close.
/// An edit dropped without commit aborts. Operations are serialized by an
/// internal lock; using it after it finished raises ``InvalidArgument``.
#[pyclass(frozen, module = "tenure")]
pub struct Edit {
    inner: ProcessBound<Mutex<Option<tenure::Edit>>>,
    path: String,
}

fn lock(m: &Mutex<Option<tenure::Edit>>) -> MutexGuard<'_, Option<tenure::Edit>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn finished() -> Error {
    Error::InvalidArgument("the edit has already finished".into())
}

impl Edit {
    fn wrap(e: tenure::Edit, a: &tenure::Authority) -> Edit {
        Edit {
            inner: ProcessBound::new(Mutex::new(Some(e))),
            path: a.path().to_string_lossy().into_owned(),
        }
    }

    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut tenure::Edit) -> tenure::Result<T> + Send,
    ) -> PyResult<T> {
        let m = self.inner.get("Edit")?;
        unlocked(py, || match lock(m).as_mut() {
            Some(e) => f(e),
            None => Err(finished()),
        })
    }

    fn lease<'a>(lease: &'a Bound<'_, Lease>) -> PyResult<&'a tenure::Lease> {
        lease.get().get()
    }
}

impl Ops for Edit {
    fn run_on<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(Target<'_>) -> tenure::Result<T> + Send,
    ) -> PyResult<T> {
        self.run(py, |e| f(Target::Edit(e)))
    }
}

pymethods_with_shared_ops! {
impl Edit {
    /// True until the edit commits or aborts.
    #[getter]
    fn open(&self, py: Python<'_>) -> bool {
        let m: &Mutex<Option<tenure::Edit>> = &self.inner;
        // Lock with the GIL released: another thread may hold the lock
        // while it waits for the store.
        self.inner.is_here() && py.detach(|| lock(m).is_some())
    }

    /// Renew a lease; its expiry moves when the edit commits.
    fn renew(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, Lease>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let ttl = convert::ttl(ttl, "ttl")?;
        let l = Edit::lease(lease)?;
        self.run(py, |e| e.renew(l, ttl))
    }

    /// Release a lease; it closes when the edit commits.
    fn release(&self, py: Python<'_>, lease: &Bound<'_, Lease>) -> PyResult<&'static str> {
        let l = Edit::lease(lease)?;
        self.run(py, |e| e.release(l)).map(|s| s.as_str())
    }

    /// Fail a lease (see ``Lease.fail``); it closes when the edit commits.
    #[pyo3(signature = (lease, reason = "", *, permanent = false, retry_after = None))]
    fn fail(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, Lease>,
        reason: &str,
        permanent: bool,
        #[pyo3(from_py_with = convert::retry_after)] retry_after: Option<Delay>,
    ) -> PyResult<&'static str> {
        let delay = retry_delay(permanent, retry_after)?;
        let l = Edit::lease(lease)?;
        self.run(py, |e| match delay {
            Some(d) => e.fail_retry_after(l, reason, d),
            None => e.fail(l, reason, permanent),
        })
        .map(|s| s.as_str())
    }

    /// Complete a lease with facts; it closes when the edit commits.
    #[pyo3(signature = (lease, facts = None))]
    fn complete(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, Lease>,
        facts: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let facts = convert::facts(facts)?;
        let l = Edit::lease(lease)?;
        self.run(py, |e| e.complete(l, &facts))
    }

    /// Commit: pending leases become active. On failure nothing is written
    /// and pending leases close. The edit is finished either way.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.inner.get("Edit")?;
        unlocked(py, || match lock(m).take() {
            Some(e) => e.commit(),
            None => Err(finished()),
        })
    }

    /// Roll everything back; pending leases close. A no-op once finished.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.inner.get("Edit")?;
        unlocked(py, || {
            if let Some(e) = lock(m).take() {
                e.abort();
            }
            Ok(())
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commit if the block finished normally (and the edit is still open),
    /// abort if it raised; never suppresses the exception.
    #[pyo3(signature = (exc_type = None, exc_value = None, traceback = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        exc_value: Option<&Bound<'_, PyAny>>,
        traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let _ = (exc_value, traceback);
        let m = self.inner.get("Edit")?;
        let ok = exc_type.is_none();
        unlocked(py, || match lock(m).take() {
            Some(e) if ok => e.commit(),
            Some(e) => {
                e.abort();
                Ok(())
            }
            // Finished inside the block (explicit commit/abort): nothing to do.
            None => Ok(()),
        })?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        // An operation in progress on another thread holds the lock: open.
        let open = match self.inner.try_lock() {
            Ok(g) => g.is_some() && self.inner.is_here(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().is_some(),
            Err(std::sync::TryLockError::WouldBlock) => true,
        };
        format!(
            "Edit(path={}, open={})",
            q(&self.path),
            if open { "True" } else { "False" }
        )
    }
}
}
