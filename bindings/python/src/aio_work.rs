//! The native half of `tenure.aio.Worker`: `_AioWorker` runs the worker's
//! claim/keep-alive/settle loop on `slots` native threads and hands only the
//! handler to the event loop, through `_AioTicket`.
//!
//! Per job a slot thread, without the GIL, waits for work
//! (`claim_next_wait`), reads the payload and starts the keeper; then, with
//! the GIL, makes one `loop.call_soon_threadsafe(start, ticket)` call (the
//! loop's `start` creates the handler task and gives it `ticket.done` as a
//! done-callback) and blocks, the GIL released, until the ticket has the
//! task's outcome; it then stops the keeper and settles the lease natively.
//! The event loop runs one small callback per job plus the handler; no
//! Python code runs on the slot threads.
//!
//! What the loop decides here is `tenure.aio.Worker`'s documented
//! behaviour (docs/python.md): until-idle, the `Busy` pause, a wait error
//! stopping the worker, a claim that lands after the stop being released,
//! a keeper refusal releasing instead of settling. Grace and the
//! cancellation of handler tasks are the loop's (asyncio), in `aio.py`.

use crate::convert::{self, guarded};
use crate::handles::{retry_delay, Authority, Lease};
use crate::work::{checked_facts, exception, lock, reason, CancelNode, WaitCancel};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tenure::{Delay, Error, Fact, Ttl};

/// How long a slot pauses after a wait for work ended with `Busy`.
const BUSY_PAUSE: Duration = Duration::from_millis(100);
/// How often a pausing slot looks at the stop.
const PAUSE_SLICE: Duration = Duration::from_millis(10);

/// What the handler's task decided about its job.
enum Settle {
    /// Complete with these facts.
    Complete(Vec<Fact>),
    /// Fail (checked arguments).
    Fail {
        reason: String,
        permanent: bool,
        delay: Option<Delay>,
    },
    /// Hand the lease back: the handler was cancelled or interrupted.
    Release,
    /// Hand the lease back: the handler never started (the worker was
    /// stopping when the job reached the loop); not counted as claimed.
    HandBack,
}

/// How a job ended, as `WorkerStats` counts it.
#[derive(Clone, Copy)]
enum Tally {
    Completed,
    Failed,
    Released,
    Lost,
}

#[derive(Default)]
struct State {
    claimed: u64,
    completed: u64,
    failed: u64,
    released: u64,
    lost: u64,
    /// The first wait error (it stopped the worker).
    error: Option<Error>,
    /// Slot threads still running.
    active: usize,
}

impl State {
    fn count(&mut self, t: Tally) {
        match t {
            Tally::Completed => self.completed += 1,
            Tally::Failed => self.failed += 1,
            Tally::Released => self.released += 1,
            Tally::Lost => self.lost += 1,
        }
    }
}

struct Shared {
    auth: tenure::Authority,
    production: String,
    holder: String,
    ttl: Ttl,
    every: Duration,
    wait_timeout: Duration,
    until_idle: bool,
    /// The stop: the slots' waits use it; a child of the caller's handle
    /// and of the authority's closer.
    node: Arc<CancelNode>,
    /// `loop.call_soon_threadsafe`.
    post: Py<PyAny>,
    /// `start(ticket)`, run on the loop once per job.
    start: Py<PyAny>,
    /// `stopped()`, run on the loop when a wait error stopped the worker.
    stopped: Py<PyAny>,
    /// `ended()`, run on the loop when the last slot ended.
    ended: Py<PyAny>,
    /// `tenure.aio.JobFailed`.
    job_failed: Py<PyAny>,
    state: Mutex<State>,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.node.core().is_cancelled()
    }

    fn count(&self, t: Tally) {
        lock(&self.state).count(t);
    }

    /// Run `callback(*args)` on the loop; false if the loop refused it
    /// (closed).
    fn post<'py>(&self, py: Python<'py>, args: impl pyo3::call::PyCallArgs<'py>) -> bool {
        self.post.bind(py).call1(args).is_ok()
    }

    /// A wait error other than `NoJobAvailable` and `Busy`: keep the first,
    /// stop every slot and tell the loop.
    fn fail(&self, e: Error) {
        lock(&self.state).error.get_or_insert(e);
        self.node.cancel();
        Python::attach(|py| {
            let _ = self.post(py, (self.stopped.clone_ref(py),));
        });
    }

    /// Pause `d` unless the worker stops first.
    fn pause(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.stopping() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(PAUSE_SLICE));
        }
    }
}

fn released(r: tenure::Result<tenure::JobState>) -> Tally {
    if r.is_ok() {
        Tally::Released
    } else {
        Tally::Lost
    }
}

fn slot(s: &Shared) {
    while !s.stopping() {
        let lease = match guarded(|| {
            s.auth.claim_next_wait(
                &s.production,
                &s.holder,
                s.ttl,
                s.wait_timeout,
                Some(s.node.core()),
            )
        }) {
            Ok(l) => l,
            Err(Error::NoJobAvailable(_)) if s.until_idle => return,
            Err(Error::NoJobAvailable(_)) => continue, // a timeout, or the stop
            Err(Error::Busy(_)) => {
                s.pause(BUSY_PAUSE);
                continue;
            }
            Err(e) => return s.fail(e),
        };
        if s.stopping() {
            // The stop came while claiming: take no new job.
            s.count(released(lease.release()));
            return;
        }
        run_job(s, lease);
    }
}

fn run_job(s: &Shared, lease: tenure::Lease) {
    let taken = guarded(|| {
        let payload = s.auth.payload(lease.production(), lease.job())?;
        Ok((payload, lease.keep_alive(s.ttl, s.every)?))
    });
    let (payload, mut keeper) = match taken {
        Ok(t) => t,
        Err(_) => {
            // Payload or keeper refused: handed back at once.
            let t = released(lease.release());
            let mut st = lock(&s.state);
            st.claimed += 1;
            st.count(t);
            return;
        }
    };
    let ticket = Arc::new(Outcome::default());
    let posted = Python::attach(|py| -> PyResult<(Py<Lease>, bool)> {
        let lease = Py::new(py, Lease::wrap(lease))?;
        let t = AioTicket {
            lease: lease.clone_ref(py),
            payload: PyBytes::new(py, &payload).unbind(),
            outcome: ticket.clone(),
            job_failed: s.job_failed.clone_ref(py),
        };
        let t = Py::new(py, t)?;
        let ok = s.post(py, (s.start.clone_ref(py), t));
        Ok((lease, ok))
    });
    let Ok((lease, ok)) = posted else {
        keeper.stop();
        return s.count(Tally::Lost); // the lease could not be wrapped: it expires
    };
    let outcome = if ok {
        lock(&s.state).claimed += 1;
        ticket.wait()
    } else {
        Settle::HandBack // the loop is closed
    };
    let l = match lease.get().get() {
        Ok(l) => l,
        Err(_) => {
            keeper.stop();
            return s.count(Tally::Lost); // another process (after fork)
        }
    };
    keeper.stop();
    let tally = if keeper.error().is_some() {
        released(l.release()) // the lease is lost: hand it back
    } else {
        match outcome {
            Settle::Complete(facts) => match l.complete(&facts) {
                Ok(()) => Tally::Completed,
                Err(_) => Tally::Lost,
            },
            Settle::Fail {
                reason,
                permanent,
                delay,
            } => {
                let r = match delay {
                    Some(d) => l.fail_retry_after(&reason, d),
                    None => l.fail(&reason, permanent),
                };
                if r.is_ok() {
                    Tally::Failed
                } else {
                    Tally::Lost
                }
            }
            Settle::Release => released(l.release()),
            Settle::HandBack => {
                lock(&s.state).claimed -= 1;
                released(l.release())
            }
        }
    };
    s.count(tally);
}

/// A slot's wait for its job's outcome.
#[derive(Default)]
struct Outcome {
    settle: Mutex<Option<Settle>>,
    cv: Condvar,
}

impl Outcome {
    /// Set it (the first caller wins).
    fn set(&self, s: Settle) {
        let mut g = lock(&self.settle);
        if g.is_none() {
            *g = Some(s);
            self.cv.notify_all();
        }
    }

    fn wait(&self) -> Settle {
        let mut g = lock(&self.settle);
        loop {
            if let Some(s) = g.take() {
                return s;
            }
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// One job handed to the event loop by an `_AioWorker` slot: its lease
/// and payload, and ``done(task)``, the handler task's done-callback that
/// hands the outcome back to the slot. A ticket collected without an
/// outcome (its task was destroyed) hands the lease back.
#[pyclass(frozen, module = "tenure", name = "_AioTicket")]
pub struct AioTicket {
    lease: Py<Lease>,
    payload: Py<PyBytes>,
    outcome: Arc<Outcome>,
    job_failed: Py<PyAny>,
}

impl AioTicket {
    /// `raise JobFailed(...)`: the failure's arguments, checked as
    /// `Lease.fail` checks them.
    fn job_failed(exc: &Bound<'_, PyAny>) -> PyResult<Settle> {
        let reason: String = exc.getattr("reason")?.extract()?;
        tenure::validate::reason(&reason).map_err(crate::errors::to_py)?;
        let permanent: bool = exc.getattr("permanent")?.extract()?;
        let retry_after = convert::retry_after(&exc.getattr("retry_after")?)?;
        let delay = retry_delay(permanent, retry_after)?;
        Ok(Settle::Fail {
            reason,
            permanent,
            delay,
        })
    }

    /// A retryable failure whose reason is `"Class: text"` of `e`.
    fn retry(py: Python<'_>, e: &PyErr) -> Settle {
        Settle::Fail {
            reason: reason(py, e),
            permanent: false,
            delay: None,
        }
    }

    fn settle(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<Settle> {
        if task.call_method0("cancelled")?.is_truthy()? {
            return Ok(Settle::Release);
        }
        let exc = task.call_method0("exception")?;
        if exc.is_none() {
            let facts = task.call_method0("result")?;
            return Ok(match checked_facts(Some(&facts)) {
                Ok(f) => Settle::Complete(f),
                Err(e) => Self::retry(py, &e), // bad facts are the handler's error
            });
        }
        if exc.is_instance(self.job_failed.bind(py))? {
            return Ok(Self::job_failed(&exc).unwrap_or_else(|e| Self::retry(py, &e)));
        }
        if exc.is_instance_of::<PyException>() {
            return Ok(Self::retry(py, &PyErr::from_value(exc)));
        }
        Ok(Settle::Release) // interrupted (KeyboardInterrupt, SystemExit)
    }
}

#[pymethods]
impl AioTicket {
    /// The job's lease (a ``tenure.Lease``).
    #[getter]
    fn lease(&self, py: Python<'_>) -> Py<Lease> {
        self.lease.clone_ref(py)
    }

    /// The job's payload.
    #[getter]
    fn payload(&self, py: Python<'_>) -> Py<PyBytes> {
        self.payload.clone_ref(py)
    }

    /// The handler task's done-callback: complete with its facts, fail as
    /// its exception says, or release when it was cancelled.
    fn done(&self, py: Python<'_>, task: &Bound<'_, PyAny>) {
        let s = self.settle(py, task).unwrap_or(Settle::Release);
        self.outcome.set(s);
    }

    /// The handler will not run (the worker is stopping): release the
    /// lease; the job is not counted as claimed.
    fn hand_back(&self) {
        self.outcome.set(Settle::HandBack);
    }
}

impl Drop for AioTicket {
    fn drop(&mut self) {
        self.outcome.set(Settle::Release);
    }
}

/// The native loop of ``tenure.aio.Worker`` (see the module docs of
/// ``aio_work.rs``); private to ``tenure.aio``.
#[pyclass(frozen, module = "tenure", name = "_AioWorker")]
pub struct AioWorker {
    shared: Arc<Shared>,
}

#[pymethods]
impl AioWorker {
    /// Start ``slots`` slot threads at once.
    #[new]
    #[pyo3(signature = (authority, production, holder, *, ttl, renew_every, wait_timeout, until_idle, slots, cancel, post, start, stopped, ended, job_failed))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        authority: &Bound<'_, Authority>,
        production: &str,
        holder: &str,
        ttl: &Bound<'_, PyAny>,
        renew_every: &Bound<'_, PyAny>,
        wait_timeout: &Bound<'_, PyAny>,
        until_idle: bool,
        #[pyo3(from_py_with = convert::slots)] slots: u32,
        cancel: &Bound<'_, WaitCancel>,
        post: Py<PyAny>,
        start: Py<PyAny>,
        stopped: Py<PyAny>,
        ended: Py<PyAny>,
        job_failed: Py<PyAny>,
    ) -> PyResult<AioWorker> {
        let auth = authority.get();
        let shared = Arc::new(Shared {
            auth: auth.get()?,
            production: production.to_owned(),
            holder: holder.to_owned(),
            ttl: convert::ttl(ttl, "ttl")?,
            every: convert::wait(renew_every, "renew_every")?,
            wait_timeout: convert::wait(wait_timeout, "wait_timeout")?,
            until_idle,
            node: auth.wait_node(Some(cancel.get().node())),
            post,
            start,
            stopped,
            ended,
            job_failed,
            state: Mutex::new(State {
                active: slots as usize,
                ..State::default()
            }),
        });
        for i in 0..slots {
            let s = shared.clone();
            let t = std::thread::Builder::new()
                .name(format!("tenure-aio-slot-{i}"))
                .spawn(move || {
                    slot(&s);
                    let last = {
                        let mut st = lock(&s.state);
                        st.active -= 1;
                        st.active == 0
                    };
                    if last {
                        Python::attach(|py| {
                            let _ = s.post(py, (s.ended.clone_ref(py),));
                        });
                    }
                });
            if let Err(e) = t {
                lock(&shared.state).active -= (slots - i) as usize;
                shared.node.cancel();
                return Err(crate::errors::to_py(Error::Internal(format!(
                    "cannot start a worker slot: {e}"
                ))));
            }
        }
        Ok(AioWorker { shared })
    }

    /// Take no new jobs: the waits end at once. Idempotent.
    fn stop(&self) {
        self.shared.node.cancel();
    }

    /// ``(claimed, completed, failed, released, lost)`` so far.
    #[getter]
    fn counts(&self) -> (u64, u64, u64, u64, u64) {
        let st = lock(&self.shared.state);
        (st.claimed, st.completed, st.failed, st.released, st.lost)
    }

    /// The wait error that stopped the worker (a ``TenureError``), or None.
    #[getter]
    fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        let e = lock(&self.shared.state).error.clone();
        e.map(|e| exception(py, e))
    }
}
