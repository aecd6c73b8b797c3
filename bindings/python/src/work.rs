//! Waiting for work, keep-alive and the worker loop: `WaitCancel`,
//! `Keeper`, `Worker` (with `Job`, `Complete`, `Retry`, `Fail`, `Report`).
//!
//! The loop, the waits and the keepers are the core's
//! (`tenure::worker`, `tenure::wait`, `tenure::keeper`); this module converts
//! types, calls the Python handler with the GIL, and keeps Python's signal
//! handlers running while the main thread blocks:
//! - a blocking call made on the main thread (a wait, a join) runs on a
//!   helper thread while the caller wakes at least every [`SIGNAL_SLICE`] to
//!   run `PyErr_CheckSignals`; a handler that raises (`KeyboardInterrupt`)
//!   interrupts the call (see [`interruptible`]);
//! - `threading.Event` is not accepted as a cancel handle: a
//!   `tenure.WaitCancel` is the event (call `cancel()` where the event would
//!   be set), so a cancel wakes a wait at once instead of being polled.

use crate::convert::{self, ProcessBound};
use crate::errors::to_py;
use crate::handles::Authority;
use crate::values::q;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCFunction, PyDict, PyTuple, PyType};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use tenure::worker::{JobContext, JobResult, Outcome, StopHandle, WorkerConfig};
use tenure::{Delay, Error, KeeperStatus, Ttl};

/// How often a blocked main thread runs Python's signal handlers.
const SIGNAL_SLICE: Duration = Duration::from_millis(100);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A core error as a Python exception object (its class and code), not raised.
pub(crate) fn exception(py: Python<'_>, e: Error) -> Py<PyAny> {
    to_py(e).into_value(py).into_any()
}

/// The keep-alive period when none is given: a third of the TTL.
pub fn default_period(ttl: Ttl) -> Duration {
    Duration::from_micros((ttl.as_micros() / 3).max(1) as u64)
}

fn on_main_thread(py: Python<'_>) -> bool {
    let check = || -> PyResult<bool> {
        let threading = py.import("threading")?;
        let main = threading.call_method0("main_thread")?;
        let current = threading.call_method0("current_thread")?;
        Ok(main.is(&current))
    };
    check().unwrap_or(false)
}

/// Run the blocking `f` with the GIL released. Off the main thread it runs
/// in place. On the main thread it runs on a helper thread while the caller
/// runs Python's signal handlers at least every [`SIGNAL_SLICE`]; the first
/// handler that raises calls `interrupt` (which must make `f` return soon)
/// and is returned beside `f`'s result, which is always awaited.
pub fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    f: impl FnOnce() -> T + Send + 'static,
    interrupt: impl Fn(),
) -> (T, Option<PyErr>) {
    if !on_main_thread(py) {
        return (py.detach(f), None);
    }
    let (tx, rx) = mpsc::channel();
    let f = Arc::new(Mutex::new(Some(f)));
    let run = f.clone();
    let spawned = std::thread::Builder::new()
        .name("tenure-py-wait".into())
        .spawn(move || {
            if let Some(f) = lock(&run).take() {
                let _ = tx.send(f());
            }
        });
    if spawned.is_err() {
        let f = lock(&f).take().expect("the call has not run");
        return (py.detach(f), None);
    }
    let rx = Mutex::new(rx); // shared with the GIL-free closure below
    let mut raised = None;
    loop {
        match py.detach(|| lock(&rx).recv_timeout(SIGNAL_SLICE)) {
            Ok(v) => return (v, raised),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                unreachable!("the helper thread sends before it ends")
            }
        }
        if raised.is_none() {
            if let Err(e) = py.check_signals() {
                interrupt();
                raised = Some(e);
            }
        }
    }
}

/// One cancellation node: a core cancel handle plus the nodes that are
/// cancelled with it. Waits get a node of their own, a child of the
/// caller's `WaitCancel` (if any) and of their authority's closer, so a
/// signal can end one wait without cancelling the caller's handle.
pub struct CancelNode {
    core: tenure::WaitCancel,
    children: Mutex<Vec<Weak<CancelNode>>>,
}

impl CancelNode {
    pub fn new() -> Arc<CancelNode> {
        Arc::new(CancelNode {
            core: tenure::WaitCancel::new(),
            children: Mutex::new(Vec::new()),
        })
    }

    pub fn core(&self) -> &tenure::WaitCancel {
        &self.core
    }

    /// Cancel this node and every child (final).
    pub fn cancel(&self) {
        self.core.cancel();
        let children = std::mem::take(&mut *lock(&self.children));
        for c in children.iter().filter_map(Weak::upgrade) {
            c.cancel();
        }
    }

    /// Cancel `child` with this node (at once if this one is cancelled).
    /// Race-free with `cancel`: the flag is set before the list is taken,
    /// and read here under the list's lock.
    pub fn adopt(&self, child: &Arc<CancelNode>) {
        let mut children = lock(&self.children);
        if self.core.is_cancelled() {
            drop(children);
            child.cancel();
            return;
        }
        children.retain(|w| w.strong_count() > 0);
        children.push(Arc::downgrade(child));
    }
}

/// A cancel handle for ``Authority.claim_next_wait`` (and the async waits
/// of ``tenure.aio``): ``cancel()`` ends every wait given this handle (or a
/// handle made from it with ``WaitCancel(parent)``) at once, from any
/// thread; those waits raise ``NoJobAvailable`` saying they were cancelled.
/// Cancellation is final. It stands in for a ``threading.Event``: call
/// ``cancel()`` where you would set the event.
#[pyclass(frozen, module = "tenure")]
pub struct WaitCancel {
    node: Arc<CancelNode>,
}

impl WaitCancel {
    pub fn node(&self) -> &Arc<CancelNode> {
        &self.node
    }
}

#[pymethods]
impl WaitCancel {
    /// A handle that is not cancelled; with ``parent``, one that is also
    /// cancelled when ``parent`` is.
    #[new]
    #[pyo3(signature = (parent = None))]
    fn new(parent: Option<&Bound<'_, WaitCancel>>) -> WaitCancel {
        let node = CancelNode::new();
        if let Some(p) = parent {
            p.get().node.adopt(&node);
        }
        WaitCancel { node }
    }

    /// Cancel: every wait using this handle (now or later) ends at once.
    fn cancel(&self) {
        self.node.cancel();
    }

    /// Whether ``cancel()`` (of this handle or its parent) was called.
    #[getter]
    fn is_cancelled(&self) -> bool {
        self.node.core.is_cancelled()
    }

    fn __repr__(&self) -> String {
        format!(
            "WaitCancel(is_cancelled={})",
            if self.is_cancelled() { "True" } else { "False" }
        )
    }
}

/// The Python name of a keeper status.
fn keeper_status(s: KeeperStatus) -> &'static str {
    match s {
        KeeperStatus::Running => "running",
        KeeperStatus::Stopped => "stopped",
        KeeperStatus::LeaseClosed => "lease_closed",
        KeeperStatus::Refused(_) => "refused",
    }
}

/// Renews one lease on a native thread (``Lease.keep_alive``).
///
/// ``status`` is ``"running"``, ``"stopped"`` (by ``stop()``),
/// ``"lease_closed"`` (its owner released, failed or completed the lease)
/// or ``"refused"``: a renewal was refused and ``error`` is that error, a
/// ``TenureError`` subclass instance with its ``code`` (``Busy`` and
/// ``StoreError`` are retried within 100 ms instead). ``renewals`` counts
/// the renewals made. ``stop()`` returns once no renewal can happen any
/// more; a keeper never releases its lease. As a context manager leaving
/// the block stops it, and a refusal is raised when the block ended
/// normally (an exception from the block takes precedence).
#[pyclass(frozen, module = "tenure")]
pub struct Keeper {
    inner: ProcessBound<Mutex<tenure::Keeper>>,
    /// The refusal as one Python object (every read gives the same one).
    refusal: pyo3::sync::PyOnceLock<Py<PyAny>>,
    production: String,
    job: String,
    claim_id: String,
}

impl Keeper {
    pub fn start(lease: &tenure::Lease, ttl: Ttl, every: Duration) -> PyResult<Keeper> {
        let k = lease.keep_alive(ttl, every).map_err(to_py)?;
        Ok(Keeper {
            inner: ProcessBound::new(Mutex::new(k)),
            refusal: pyo3::sync::PyOnceLock::new(),
            production: lease.production().to_owned(),
            job: lease.job().to_owned(),
            claim_id: lease.claim_id().to_string(),
        })
    }

    /// Read the keeper with the GIL released: `stop()` on another thread
    /// holds the lock while it joins the keeper's thread.
    fn read<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&tenure::Keeper) -> T + Send,
    ) -> PyResult<T> {
        let m = self.inner.get("Keeper")?;
        Ok(py.detach(|| f(&lock(m))))
    }

    /// The refusal, the same exception object each time.
    fn refusal(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if let Some(e) = self.refusal.get(py) {
            return Ok(Some(e.clone_ref(py)));
        }
        let Some(e) = self.read(py, |k| k.error())? else {
            return Ok(None);
        };
        Ok(Some(
            self.refusal
                .get_or_init(py, || exception(py, e))
                .clone_ref(py),
        ))
    }
}

#[pymethods]
impl Keeper {
    /// ``"running"``, ``"stopped"``, ``"lease_closed"`` or ``"refused"``.
    #[getter]
    fn status(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.read(py, |k| keeper_status(k.status()))
    }

    /// The refused renewal's error (a ``TenureError`` instance), or None.
    #[getter]
    fn error(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.refusal(py)
    }

    /// How many renewals this keeper has made.
    #[getter]
    fn renewals(&self, py: Python<'_>) -> PyResult<u64> {
        self.read(py, |k| k.renewals())
    }

    /// Stop renewing (GIL released while a renewal in flight finishes).
    /// No renewal happens after it returns; never releases. Idempotent.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.inner.get("Keeper")?;
        py.detach(|| lock(m).stop());
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Stop; raise the refusal if there was one and the block ended
    /// normally. Never suppresses the block's exception.
    #[pyo3(signature = (exc_type = None, exc_value = None, traceback = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        exc_value: Option<&Bound<'_, PyAny>>,
        traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let _ = (exc_value, traceback);
        self.stop(py)?;
        if exc_type.is_none() {
            if let Some(e) = self.refusal(py)? {
                return Err(PyErr::from_value(e.into_bound(py)));
            }
        }
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let (status, renewals) = self
            .read(py, |k| (keeper_status(k.status()), k.renewals()))
            .unwrap_or(("unusable", 0));
        format!(
            "Keeper(production={}, job={}, claim_id={}, status={}, renewals={})",
            q(&self.production),
            q(&self.job),
            q(&self.claim_id),
            q(status),
            renewals
        )
    }
}

/// Caller facts, checked by the core's rule now, so that a handler's bad
/// facts are its error (a retry naming it) instead of a refused completion.
pub(crate) fn checked_facts(facts: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<tenure::Fact>> {
    let facts = convert::facts(facts)?;
    let pairs: Vec<(&str, &str)> = facts
        .iter()
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .collect();
    tenure::validate::facts(&pairs).map_err(to_py)?;
    Ok(facts)
}

/// A handler's result: complete the job, publishing ``facts`` (a
/// ``dict[str, str]`` or an iterable of pairs, checked like
/// ``Lease.complete``'s: else ``InvalidArgument``). Returning the facts (or
/// None) from the handler means the same.
#[pyclass(frozen, module = "tenure")]
pub struct Complete {
    facts: Vec<tenure::Fact>,
}

#[pymethods]
impl Complete {
    #[new]
    #[pyo3(signature = (facts = None))]
    fn new(facts: Option<&Bound<'_, PyAny>>) -> PyResult<Complete> {
        Ok(Complete {
            facts: checked_facts(facts)?,
        })
    }

    /// The facts as ``(key, value)`` pairs.
    #[getter]
    fn facts(&self) -> Vec<(String, String)> {
        self.facts
            .iter()
            .map(|f| (f.key.clone(), f.value.clone()))
            .collect()
    }

    fn __repr__(&self) -> String {
        let facts: Vec<String> = self
            .facts
            .iter()
            .map(|f| format!("({}, {})", q(&f.key), q(&f.value)))
            .collect();
        format!("Complete(facts=[{}])", facts.join(", "))
    }
}

/// A handler's result: fail the job retryably (requested again while
/// attempts remain). ``delay`` (a ``datetime.timedelta``, 0 ..= 366 days,
/// else ``InvalidDuration``) makes the job due again that long after the
/// failure (``Lease.fail(retry_after=...)``; zero: at once); without it the
/// job's or its production's back-off applies, else it is due at once.
/// ``reason`` is checked like ``Lease.fail``'s (at most 1 KiB: else
/// ``InvalidArgument``). An exception from the handler is a ``Retry`` whose
/// reason is ``"Class: text"``.
#[pyclass(frozen, module = "tenure")]
pub struct Retry {
    /// Recorded as the job's last error.
    #[pyo3(get)]
    reason: String,
    delay: Option<Delay>,
}

#[pymethods]
impl Retry {
    #[new]
    #[pyo3(signature = (reason = String::new(), *, delay = None))]
    fn new(reason: String, delay: Option<&Bound<'_, PyAny>>) -> PyResult<Retry> {
        tenure::validate::reason(&reason).map_err(to_py)?;
        let delay = delay
            .filter(|d| !d.is_none())
            .map(|d| convert::delay(d, "delay"))
            .transpose()?;
        Ok(Retry { reason, delay })
    }

    /// The retry delay, or None.
    #[getter]
    fn delay<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        convert::opt_delay_timedelta(py, self.delay)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Retry(reason={}, delay={})",
            q(&self.reason),
            convert::delay_repr(py, self.delay)
        )
    }
}

/// A handler's result: fail the job permanently. ``reason`` is checked
/// like ``Lease.fail``'s (at most 1 KiB: else ``InvalidArgument``).
#[pyclass(frozen, module = "tenure")]
pub struct Fail {
    /// Recorded as the job's last error.
    #[pyo3(get)]
    reason: String,
}

#[pymethods]
impl Fail {
    #[new]
    #[pyo3(signature = (reason = String::new()))]
    fn new(reason: String) -> PyResult<Fail> {
        tenure::validate::reason(&reason).map_err(to_py)?;
        Ok(Fail { reason })
    }

    fn __repr__(&self) -> String {
        format!("Fail(reason={})", q(&self.reason))
    }
}

/// `JobContext` lives on its slot's stack for the handler call only; a
/// `Job` reaches it through this pointer, which `Job::end` clears (under
/// the same lock) before the call returns.
struct ContextPtr(*const JobContext<'static>);
// SAFETY: the pointer is dereferenced only under `Job::ctx`'s lock while it
// is `Some`, i.e. while the handler call that owns the context runs; a
// `JobContext` is `Sync` (shared references to thread-safe core state).
unsafe impl Send for ContextPtr {}

/// What a ``Worker`` handler receives: the job's attribution and payload,
/// and, while the handler runs, ``stopping``, ``lease_lost``, ``progress()``
/// and ``checkpoint()``. The lease itself stays with the worker (it settles
/// the job with the handler's result), so the secret never reaches the
/// handler.
#[pyclass(frozen, module = "tenure")]
pub struct Job {
    /// Production ID.
    #[pyo3(get)]
    production: String,
    /// The job's ID.
    #[pyo3(get)]
    id: String,
    /// The claim running it (UUID text).
    #[pyo3(get)]
    claim_id: String,
    /// Which attempt this is (1-based).
    #[pyo3(get)]
    attempt: u32,
    /// The worker's holder.
    #[pyo3(get)]
    holder: String,
    /// The job's payload.
    #[pyo3(get)]
    payload: Py<PyBytes>,
    ctx: Mutex<Option<ContextPtr>>,
}

impl Job {
    fn new(py: Python<'_>, ctx: &JobContext<'_>) -> Job {
        let lease = ctx.lease();
        Job {
            production: lease.production().to_owned(),
            id: lease.job().to_owned(),
            claim_id: lease.claim_id().to_string(),
            attempt: lease.attempt(),
            holder: lease.holder().to_owned(),
            payload: PyBytes::new(py, ctx.payload()).unbind(),
            ctx: Mutex::new(Some(ContextPtr(
                (ctx as *const JobContext<'_>).cast::<JobContext<'static>>(),
            ))),
        }
    }

    /// The handler returned: the context is gone.
    fn end(&self) {
        lock(&self.ctx).take();
    }

    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&JobContext<'_>) -> T + Send,
    ) -> PyResult<T> {
        let r = py.detach(|| {
            let g = lock(&self.ctx);
            // SAFETY: see `ContextPtr`: `Some` means the context is alive,
            // and `end` cannot clear it while we hold the lock.
            g.as_ref().map(|p| f(unsafe { &*p.0 }))
        });
        r.ok_or_else(|| {
            to_py(Error::InvalidArgument(
                "this job's handler has returned".into(),
            ))
        })
    }
}

#[pymethods]
impl Job {
    /// The worker is stopping: finish soon (within the grace period).
    #[getter]
    fn stopping(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |c| c.stopping())
    }

    /// The refusal that stopped the lease's renewals (a ``TenureError``
    /// instance), if any: the lease is lost and the result will not be
    /// accepted.
    #[getter]
    fn lease_lost(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        Ok(self.with(py, |c| c.lease_lost())?.map(|e| exception(py, e)))
    }

    /// The job's progress checkpoint as stored now (``bytes``): the one an
    /// earlier attempt wrote until this one writes its own, ``None`` if
    /// none was written (see ``Lease.progress``).
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let p = self.with(py, |c| c.lease().progress())?.map_err(to_py)?;
        Ok(p.map(|b| PyBytes::new(py, &b)))
    }

    /// Store ``progress`` (``bytes``, at most 4096) as the job's progress
    /// checkpoint with the worker's lease (see ``Lease.checkpoint``): the
    /// next attempt reads it after an expiry. A lease that is no longer
    /// current raises as for any transition (``StaleLease``,
    /// ``LeaseExpired``, ``LeaseClosed``) and writes nothing.
    fn checkpoint(&self, py: Python<'_>, progress: Vec<u8>) -> PyResult<()> {
        self.with(py, |c| c.lease().checkpoint(&progress))?
            .map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!(
            "Job(production={}, id={}, claim_id={}, attempt={}, holder={})",
            q(&self.production),
            q(&self.id),
            q(&self.claim_id),
            self.attempt,
            q(&self.holder)
        )
    }
}

/// One job's outcome as a ``Worker`` reports it: ``result`` is
/// ``"completed"``, ``"failed"`` (the handler's ``Retry``/``Fail``, or an
/// exception; ``state`` is the job's new state, ``"requested"`` or
/// ``"failed"``), ``"released"`` (unfinished when the grace period ended;
/// ``state`` as for failed) or ``"lost"`` (the lease was refused; ``error``
/// is the ``TenureError`` instance).
#[pyclass(frozen, module = "tenure")]
pub struct Report {
    /// Production ID.
    #[pyo3(get)]
    production: String,
    /// Job ID.
    #[pyo3(get)]
    job: String,
    /// The claim that ran it (UUID text).
    #[pyo3(get)]
    claim_id: String,
    /// Which attempt it was (1-based).
    #[pyo3(get)]
    attempt: u32,
    /// ``"completed"``, ``"failed"``, ``"released"`` or ``"lost"``.
    #[pyo3(get)]
    result: &'static str,
    /// The job's new state after ``"failed"`` / ``"released"``, else None.
    #[pyo3(get)]
    state: Option<&'static str>,
    /// The refusal (a ``TenureError`` instance) after ``"lost"``, else None.
    #[pyo3(get)]
    error: Option<Py<PyAny>>,
}

impl Report {
    fn new(py: Python<'_>, r: tenure::worker::Report) -> Report {
        let (result, state, error) = match r.result {
            JobResult::Completed => ("completed", None, None),
            JobResult::Failed(s) => ("failed", Some(s.as_str()), None),
            JobResult::Released(s) => ("released", Some(s.as_str()), None),
            JobResult::Lost(e) => ("lost", None, Some(exception(py, e))),
        };
        Report {
            production: r.production,
            job: r.job,
            claim_id: r.claim_id.to_string(),
            attempt: r.attempt,
            result,
            state,
            error,
        }
    }
}

#[pymethods]
impl Report {
    fn __repr__(&self, py: Python<'_>) -> String {
        let error = self
            .error
            .as_ref()
            .and_then(|e| e.bind(py).repr().ok().map(|r| r.to_string()))
            .unwrap_or_else(|| "None".into());
        format!(
            "Report(production={}, job={}, claim_id={}, attempt={}, result={}, state={}, error={error})",
            q(&self.production),
            q(&self.job),
            q(&self.claim_id),
            self.attempt,
            q(self.result),
            self.state.map(q).unwrap_or_else(|| "None".into()),
        )
    }
}

/// `"Class: text"` of a handler's exception, cut to the core's reason bound.
pub(crate) fn reason(py: Python<'_>, e: &PyErr) -> String {
    let class = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let text = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    let mut r = format!("{class}: {text}");
    let mut cut = r.len().min(tenure::validate::MAX_REASON_LEN);
    while !r.is_char_boundary(cut) {
        cut -= 1;
    }
    r.truncate(cut);
    r
}

/// The handler's return value as an outcome (see `Complete`).
fn outcome(v: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    if let Ok(c) = v.cast::<Complete>() {
        return Ok(Outcome::Complete(c.get().facts.clone()));
    }
    if let Ok(r) = v.cast::<Retry>() {
        let r = r.get();
        return Ok(Outcome::Retry {
            reason: r.reason.clone(),
            delay: r.delay.map(Delay::as_duration),
        });
    }
    if let Ok(f) = v.cast::<Fail>() {
        return Ok(Outcome::Fail(f.get().reason.clone()));
    }
    Ok(Outcome::Complete(checked_facts(Some(v))?))
}

fn run_handler(handler: &Py<PyAny>, ctx: &JobContext<'_>) -> Outcome {
    Python::attach(|py| {
        let r = Py::new(py, Job::new(py, ctx)).and_then(|job| {
            let r = handler.call1(py, (job.clone_ref(py),));
            job.get().end();
            outcome(r?.bind(py))
        });
        r.unwrap_or_else(|e| Outcome::Retry {
            reason: reason(py, &e),
            delay: None,
        })
    })
}

fn send_report(report: &Option<Py<PyAny>>, r: tenure::worker::Report) {
    let Some(cb) = report else { return };
    Python::attach(|py| {
        let rep = Report::new(py, r);
        if let Err(e) = cb.call1(py, (rep,)) {
            e.write_unraisable(py, Some(cb.bind(py)));
        }
    });
}

/// Set once the core worker's `join` returned.
#[derive(Default)]
struct Joined {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Joined {
    fn set(&self) {
        *lock(&self.done) = true;
        self.cv.notify_all();
    }
    /// Wait until done or `until`; whether done.
    fn wait_until(&self, until: Instant) -> bool {
        let g = lock(&self.done);
        let left = until.saturating_duration_since(Instant::now());
        let (g, _) = self
            .cv
            .wait_timeout_while(g, left, |d| !*d)
            .unwrap_or_else(|p| p.into_inner());
        *g
    }
}

/// A worker's ``production``: one production ID (a ``str``) or a sequence
/// of them (the core checks the list when the worker starts).
pub(crate) fn productions(v: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(one) = v.extract::<String>() {
        return Ok(vec![one]);
    }
    if v.is_instance_of::<PyBytes>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "production must be a str or a sequence of str",
        ));
    }
    let mut list = Vec::new();
    for p in v.try_iter().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("production must be a str or a sequence of str")
    })? {
        list.push(p?.extract::<String>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("production must be a str or a sequence of str")
        })?);
    }
    Ok(list)
}

/// The core's worker loop (``tenure::worker``) running a Python handler.
///
/// ``Worker(authority, production, holder, handler, *, ttl, slots=1,
/// renew_every=None, wait_timeout=None, grace=None, report=None,
/// outage_limit=None, schedules=False)`` starts
/// ``slots`` native threads at once. Each waits for a job
/// (``claim_next_wait``, waits of ``wait_timeout``, 60 s unless given;
/// with ``production`` a sequence of production IDs, 1 ..= 64 distinct,
/// ``claim_next_wait_across`` them, rotating),
/// keeps its lease alive (every ``renew_every``, ``ttl / 3`` unless given),
/// and calls ``handler(job)`` (a ``tenure.Job``) holding the GIL. The
/// handler returns ``Complete(facts)`` (or just the facts, or None),
/// ``Retry(reason, delay=...)`` or ``Fail(reason)``; an exception is a
/// ``Retry`` with reason ``"Class: text"``. ``report`` (if given) is called
/// with a ``tenure.Report`` after each job is settled (its exceptions go to
/// ``sys.unraisablehook``).
///
/// A store server that goes away (a restart, killed backends, no free
/// connection slot) stops nothing: the slots back off (50 ms doubling to
/// 2 s, jittered), the keepers go on renewing within each lease's
/// remaining time, settlements are retried until their lease expires, and
/// ``outages`` counts the outages seen; with ``outage_limit`` (a
/// timedelta) the worker stops once the server has been away that long
/// (default: never).
///
/// With ``schedules=True`` the worker also runs the store's schedules: a
/// scheduler loop (the core's ``run_schedules_until``: an
/// ``Authority.run_schedules`` step at each due slot) on a native thread
/// of its own, stopped with the worker (a failed step is tried again a
/// second later).
///
/// ``stop()`` takes no new jobs (waits end at once); running handlers get
/// ``grace`` (30 s unless given) to finish; ``join()`` returns when all
/// have, or releases the leases still held once the grace period ends
/// (reported ``"released"``). ``stop_on_signals()`` makes SIGTERM and
/// SIGINT call ``stop()``. As a context manager, leaving the block stops
/// and joins. A worker that is collected while running is stopped and
/// joined in the background.
#[pyclass(frozen, module = "tenure")]
pub struct Worker {
    stop: StopHandle,
    core: ProcessBound<Mutex<Option<tenure::worker::Worker>>>,
    joined: Arc<Joined>,
    production: Vec<String>,
    holder: String,
    slots: u32,
    outages: Arc<std::sync::atomic::AtomicU64>,
}

#[pymethods]
impl Worker {
    #[new]
    #[pyo3(signature = (authority, production, holder, handler, *, ttl, slots = 1, renew_every = None, wait_timeout = None, grace = None, report = None, outage_limit = None, schedules = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        authority: &Bound<'_, Authority>,
        #[pyo3(from_py_with = productions)] production: Vec<String>,
        holder: &str,
        handler: Py<PyAny>,
        ttl: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = convert::slots)] slots: u32,
        renew_every: Option<&Bound<'_, PyAny>>,
        wait_timeout: Option<&Bound<'_, PyAny>>,
        grace: Option<&Bound<'_, PyAny>>,
        report: Option<Py<PyAny>>,
        outage_limit: Option<&Bound<'_, PyAny>>,
        schedules: bool,
    ) -> PyResult<Worker> {
        let a = authority.get().get()?;
        let ttl = convert::ttl(ttl, "ttl")?;
        let list: Vec<&str> = production.iter().map(String::as_str).collect();
        let mut cfg = WorkerConfig::new(list.first().copied().unwrap_or(""), holder, ttl)
            .productions(&list)
            .schedules(schedules)
            .slots(slots as usize);
        if let Some(d) = renew_every.filter(|d| !d.is_none()) {
            cfg = cfg.renew_every(convert::wait(d, "renew_every")?);
        }
        if let Some(d) = wait_timeout.filter(|d| !d.is_none()) {
            cfg = cfg.wait_timeout(convert::wait(d, "wait_timeout")?);
        }
        if let Some(d) = grace.filter(|d| !d.is_none()) {
            cfg = cfg.grace(convert::wait(d, "grace")?);
        }
        if let Some(d) = outage_limit.filter(|d| !d.is_none()) {
            cfg = cfg.outage_limit(Some(convert::wait(d, "outage_limit")?));
        }
        let outages = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = outages.clone();
        cfg = cfg.on_outage(move |e| {
            if matches!(e, tenure::worker::OutageEvent::Began(_)) {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        if !handler.bind(authority.py()).is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "handler must be callable",
            ));
        }
        let report = report.filter(|r| !r.is_none(authority.py()));
        let w = tenure::worker::Worker::start(
            &a,
            cfg,
            move |ctx| run_handler(&handler, ctx),
            move |r| send_report(&report, r),
        )
        .map_err(to_py)?;
        Ok(Worker {
            stop: w.stop_handle(),
            core: ProcessBound::new(Mutex::new(Some(w))),
            joined: Arc::new(Joined::default()),
            production,
            holder: holder.to_owned(),
            slots,
            outages,
        })
    }

    /// How many times the store server went away while this worker ran.
    #[getter]
    fn outages(&self) -> u64 {
        self.outages.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stop taking jobs; the grace period starts now. Returns at once
    /// (safe in a signal handler). Idempotent.
    fn stop(&self) {
        self.stop.stop();
    }

    /// Whether ``stop()`` was called (or a signal stopped it).
    #[getter]
    fn stopped(&self) -> bool {
        self.stop.is_stopped()
    }

    /// Wait until the worker is stopped and finished (see the class docs),
    /// at most ``timeout`` (a ``datetime.timedelta``; None waits as long as
    /// it takes); True once finished. The GIL is released; on the main
    /// thread Python's signal handlers run at least every 100 ms, and one
    /// that raises (``KeyboardInterrupt``) stops the worker, waits for it to
    /// finish, and then propagates.
    #[pyo3(signature = (timeout = None))]
    fn join(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let limit = timeout
            .filter(|t| !t.is_none())
            .map(|t| convert::wait(t, "timeout"))
            .transpose()?;
        let deadline = limit.map(|d| Instant::now() + d);
        let m = self.core.get("Worker")?;
        if let Some(w) = lock(m).take() {
            let joined = self.joined.clone();
            let spawned = std::thread::Builder::new()
                .name("tenure-py-join".into())
                .spawn(move || {
                    w.join();
                    joined.set();
                });
            if let Err(e) = spawned {
                return Err(to_py(Error::Internal(format!(
                    "cannot start the join thread: {e}"
                ))));
            }
        }
        let main = on_main_thread(py);
        let mut raised: Option<PyErr> = None;
        loop {
            let slice = Instant::now() + SIGNAL_SLICE;
            let until = match deadline {
                Some(d) if raised.is_none() => d.min(slice),
                _ => slice,
            };
            let joined = &self.joined;
            if py.detach(|| joined.wait_until(until)) {
                return raised.map_or(Ok(true), Err);
            }
            if raised.is_none() {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(false);
                }
                if main {
                    if let Err(e) = py.check_signals() {
                        self.stop.stop();
                        raised = Some(e);
                    }
                }
            }
        }
    }

    /// Make SIGTERM and SIGINT (or ``signals``) call ``stop()``, through
    /// Python's ``signal`` module (so only from the main thread). The
    /// previous handlers are replaced.
    #[pyo3(signature = (signals = None))]
    fn stop_on_signals(
        &self,
        py: Python<'_>,
        signals: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<()> {
        let signal = py.import("signal")?;
        let signals = match signals {
            Some(s) => s,
            None => vec![signal.getattr("SIGTERM")?, signal.getattr("SIGINT")?],
        };
        let stop = self.stop.clone();
        let handler = PyCFunction::new_closure(
            py,
            Some(c"tenure_worker_stop"),
            Some(c"Stop the tenure worker (a signal handler)."),
            move |_args: &Bound<'_, PyTuple>, _kw: Option<&Bound<'_, PyDict>>| -> PyResult<()> {
                stop.stop();
                Ok(())
            },
        )?;
        for s in signals {
            signal.call_method1("signal", (s, &handler))?;
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Stop and join; never suppresses the block's exception.
    #[pyo3(signature = (exc_type = None, exc_value = None, traceback = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        exc_value: Option<&Bound<'_, PyAny>>,
        traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let _ = (exc_type, exc_value, traceback);
        self.stop.stop();
        self.join(py, None)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let production = match self.production.as_slice() {
            [one] => q(one),
            many => {
                let names: Vec<String> = many.iter().map(|p| q(p)).collect();
                format!("[{}]", names.join(", "))
            }
        };
        format!(
            "Worker(production={}, holder={}, slots={}, stopped={})",
            production,
            q(&self.holder),
            self.slots,
            if self.stopped() { "True" } else { "False" }
        )
    }
}

impl Drop for Worker {
    /// Collected while running: stop, and join off the collecting thread
    /// (the handlers may need the GIL it holds).
    fn drop(&mut self) {
        if !self.core.is_here() {
            return;
        }
        if let Some(w) = lock(&*self.core).take() {
            self.stop.stop();
            let _ = std::thread::Builder::new()
                .name("tenure-py-join".into())
                .spawn(move || w.join());
        }
    }
}
