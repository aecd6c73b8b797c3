//! The native half of `tenure.aio.Worker`: `_AioWorker` runs the worker's
//! claim/keep-alive/settle loop on `slots` native threads and hands only the
//! handler to the event loop, through `_AioTicket`.
//!
//! Per job a slot thread, without the GIL, waits for work
//! (`claim_next_wait`), reads the payload and starts the keeper; then it
//! puts the job on a native queue and, if the queue was not already
//! signalled, writes one byte to a socket the event loop watches
//! (`loop.add_reader`). The loop's reader callback (`take()`) turns every
//! queued job into an `_AioTicket` and starts its handler task, with
//! `ticket.done` as the task's done-callback; the slot waits for that
//! outcome (no GIL) and then stops the keeper and settles the lease
//! natively. A slot thread never takes the GIL: the event loop is the only
//! thread running Python, one small callback per batch of ready jobs plus
//! the handlers.
//!
//! What the loop decides here is `tenure.aio.Worker`'s documented
//! behaviour (docs/python.md): until-idle, the `Busy` pause, the back-off
//! while the store server is away (`tenure::Outage`, until the optional
//! outage limit), any other wait error stopping the worker, a claim that lands after the stop being released,
//! a keeper refusal releasing instead of settling. Grace and the
//! cancellation of handler tasks are the loop's (asyncio), in `aio.py`.

use crate::convert::{self, guarded};
use crate::errors::to_py;
use crate::handles::{fail_lease, retry_delay, Authority, Lease};
use crate::work::{checked_facts, exception, lock, reason, CancelNode, WaitCancel};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
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
    /// stopping when the job reached the loop, or its task was cancelled or
    /// collected before its first step); not counted as claimed.
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
    /// Outages of the store server the slots rode out (each counted once,
    /// however many slots noticed it: `outage`).
    outages: u64,
    /// The first wait error (it stopped the worker).
    error: Option<Error>,
    /// Slot threads still running.
    active: usize,
    /// Jobs waiting for the loop's `take()`.
    queue: VecDeque<Arc<Handoff>>,
    /// A byte was written since the last `take()`.
    signalled: bool,
    /// A wait error stopped the worker (not yet told to the loop).
    stopped: bool,
    /// `close()` was called: jobs are handed back instead of queued.
    closed: bool,
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
    /// One production, or several claimed across, rotating.
    productions: Vec<String>,
    holder: String,
    ttl: Ttl,
    every: Duration,
    wait_timeout: Duration,
    until_idle: bool,
    /// The stop: the slots' waits use it; a child of the caller's handle
    /// and of the authority's closer.
    node: Arc<CancelNode>,
    /// The end the slots write to; the loop watches `reader`.
    writer: UnixStream,
    reader: UnixStream,
    /// `tenure.aio.JobFailed`.
    job_failed: Py<PyAny>,
    state: Mutex<State>,
    /// The slots' outage together, as the Rust worker tracks it: an outage
    /// begins with the first slot that finds the server away and ends with
    /// the last one answered again.
    outage: Mutex<tenure::SlotsOutage>,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.node.core().is_cancelled()
    }

    fn count(&self, t: Tally) {
        lock(&self.state).count(t);
    }

    /// Wake the loop's reader (once until its next `take()`); under the
    /// state's lock.
    fn signal(&self, st: &mut State) {
        if !st.signalled {
            st.signalled = true;
            // A full socket already has the loop's attention.
            let _ = (&self.writer).write(&[1]);
        }
    }

    /// A wait error other than `NoJobAvailable` and `Busy`: keep the first,
    /// stop every slot and tell the loop.
    fn fail(&self, e: Error) {
        self.node.cancel();
        let mut st = lock(&self.state);
        st.error.get_or_insert(e);
        st.stopped = true;
        self.signal(&mut st);
    }

    /// Stop, and hand back every queued job and every later one.
    fn close(&self) {
        self.node.cancel();
        let jobs: Vec<Arc<Handoff>> = {
            let mut st = lock(&self.state);
            st.closed = true;
            st.queue.drain(..).collect()
        };
        for h in jobs {
            h.set(Settle::HandBack);
        }
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

fn slot(s: &Shared, i: usize) {
    while !s.stopping() {
        let lease = match guarded(|| match s.productions.as_slice() {
            [one] => {
                s.auth
                    .claim_next_wait(one, &s.holder, s.ttl, s.wait_timeout, Some(s.node.core()))
            }
            many => {
                let list: Vec<&str> = many.iter().map(String::as_str).collect();
                s.auth.claim_next_wait_across(
                    &list,
                    &s.holder,
                    s.ttl,
                    s.wait_timeout,
                    Some(s.node.core()),
                )
            }
        }) {
            Ok(l) => {
                lock(&s.outage).ok(i);
                l
            }
            Err(Error::NoJobAvailable(_)) if s.until_idle => return,
            Err(Error::NoJobAvailable(_)) => {
                lock(&s.outage).ok(i);
                continue; // a timeout, or the stop
            }
            // The store server is away: back off (jittered, bounded) and
            // keep trying, until the optional outage limit.
            Err(e) if tenure::Outage::is_server_away(&e) => {
                let step = lock(&s.outage).failed(i, &e);
                match step {
                    Some(tenure::SlotsStep::Pause { pause, began }) => {
                        if began {
                            lock(&s.state).outages += 1;
                        }
                        s.pause(pause);
                        continue;
                    }
                    _ => return s.fail(e),
                }
            }
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

/// The scheduler loop of a worker with ``schedules=True``: the core's
/// `run_schedules_until` until the worker stops; a failed step (a store
/// error) is tried again a second later.
fn scheduler(s: &Shared) {
    while !s.stopping() {
        let r = catch_unwind(AssertUnwindSafe(|| {
            s.auth.run_schedules_until(s.node.core(), |_| {})
        }));
        if matches!(r, Ok(Ok(()))) {
            return;
        }
        s.pause(Duration::from_secs(1));
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
    let h = Arc::new(Handoff::new(lease, payload));
    {
        let mut st = lock(&s.state);
        st.claimed += 1;
        if st.closed {
            h.set(Settle::HandBack); // nobody takes jobs any more
        } else {
            st.queue.push_back(h.clone());
            s.signal(&mut st);
        }
    }
    let (outcome, held) = h.wait();
    keeper.stop();
    let Some(l) = held.as_ref().and_then(Held::lease) else {
        return s.count(Tally::Lost); // not wrapped, or after fork: it expires
    };
    if matches!(outcome, Settle::HandBack) {
        // The handler never ran: whatever the keeper saw, the job was not
        // worked on, so it is not counted as claimed.
        lock(&s.state).claimed -= 1;
    }
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
                if fail_lease(l, &reason, permanent, delay, false).is_ok() {
                    Tally::Failed
                } else {
                    Tally::Lost
                }
            }
            Settle::Release | Settle::HandBack => released(l.release()),
        }
    };
    s.count(tally);
}

/// The lease a slot settles: its own until the loop took the job, then
/// the `tenure.Lease` the handler got.
enum Held {
    Own(tenure::Lease),
    Shared(Py<Lease>),
}

impl Held {
    fn lease(&self) -> Option<&tenure::Lease> {
        match self {
            Held::Own(l) => Some(l),
            Held::Shared(p) => p.get().get().ok(),
        }
    }
}

struct HandoffState {
    /// The claimed lease until the loop takes the job.
    lease: Option<tenure::Lease>,
    payload: Vec<u8>,
    /// The loop's `tenure.Lease` once it took the job.
    shared: Option<Py<Lease>>,
    settle: Option<Settle>,
    /// The handler task took its first step (`_AioTicket.begin`): from then
    /// on an unfinished handler means a release, never a hand-back.
    begun: bool,
}

/// One job between its slot and the event loop: the slot waits here for
/// the outcome.
struct Handoff {
    state: Mutex<HandoffState>,
    cv: Condvar,
}

impl Handoff {
    fn new(lease: tenure::Lease, payload: Vec<u8>) -> Handoff {
        Handoff {
            state: Mutex::new(HandoffState {
                lease: Some(lease),
                payload,
                shared: None,
                settle: None,
                begun: false,
            }),
            cv: Condvar::new(),
        }
    }

    /// Mark the handler as started (its task's first step).
    fn begin(&self) {
        lock(&self.state).begun = true;
    }

    /// `Release` once the handler started, else `HandBack`: a task that
    /// ends (cancelled) or is collected before its first step never called
    /// the handler. Decided under the same lock `begin` takes.
    fn set_unfinished(&self) {
        let mut g = lock(&self.state);
        if g.settle.is_some() {
            return;
        }
        g.settle = Some(if g.begun {
            Settle::Release
        } else {
            Settle::HandBack
        });
        drop(g);
        self.cv.notify_all();
    }

    /// Set the outcome (the first caller wins) and wake the slot, after
    /// letting go of the lock: a slot woken under it would block on the
    /// lock at once and need a second wake-up from the unlock; on the loop
    /// each wake-up is a point where the woken slot can preempt it.
    fn set(&self, s: Settle) {
        let mut g = lock(&self.state);
        if g.settle.is_some() {
            return;
        }
        g.settle = Some(s);
        drop(g);
        self.cv.notify_all();
    }

    /// The outcome and the lease to settle.
    fn wait(&self) -> (Settle, Option<Held>) {
        let mut g = lock(&self.state);
        loop {
            if let Some(s) = g.settle.take() {
                let held = match (g.shared.take(), g.lease.take()) {
                    (Some(p), _) => Some(Held::Shared(p)),
                    (None, l) => l.map(Held::Own), // None: it could not be wrapped
                };
                return (s, held);
            }
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The job as the loop's ticket (on the loop, with the GIL).
    fn ticket(
        self: &Arc<Self>,
        py: Python<'_>,
        job_failed: &Py<PyAny>,
    ) -> PyResult<Option<Py<AioTicket>>> {
        let (lease, payload) = {
            let mut g = lock(&self.state);
            if g.settle.is_some() {
                return Ok(None); // already handed back
            }
            let Some(l) = g.lease.take() else {
                return Ok(None);
            };
            let lease = Py::new(py, Lease::wrap(l))?;
            g.shared = Some(lease.clone_ref(py));
            (lease, std::mem::take(&mut g.payload))
        };
        let t = AioTicket {
            lease,
            payload: PyBytes::new(py, &payload).unbind(),
            handoff: self.clone(),
            job_failed: job_failed.clone_ref(py),
        };
        Py::new(py, t).map(Some)
    }
}

/// One job handed to the event loop by an `_AioWorker` slot: its lease
/// and payload, and ``done(task)``, the handler task's done-callback that
/// hands the outcome back to the slot. ``begin()`` is the task's first
/// step: a task cancelled, or a ticket collected, before it hands the job
/// back uncounted (the handler never ran); after it, releases the lease.
#[pyclass(frozen, module = "tenure", name = "_AioTicket")]
pub struct AioTicket {
    lease: Py<Lease>,
    payload: Py<PyBytes>,
    handoff: Arc<Handoff>,
    job_failed: Py<PyAny>,
}

impl AioTicket {
    /// `raise JobFailed(...)`: the failure's arguments, checked as
    /// `Lease.fail` checks them.
    fn job_failed(exc: &Bound<'_, PyAny>) -> PyResult<Settle> {
        let reason: String = exc.getattr("reason")?.extract()?;
        tenure::validate::reason(&reason).map_err(to_py)?;
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

    /// The outcome of a finished task; `None` for a cancelled one (a
    /// release or a hand-back, as `begin` decides).
    fn settle(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<Option<Settle>> {
        if task.call_method0("cancelled")?.is_truthy()? {
            return Ok(None);
        }
        self.outcome(py, task).map(Some)
    }

    fn outcome(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<Settle> {
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

    /// The handler task's first step, before it calls the handler.
    fn begin(&self) {
        self.handoff.begin();
    }

    /// The handler task's done-callback: complete with its facts, fail as
    /// its exception says; a cancelled task releases the lease, or hands
    /// the job back (not counted as claimed) when it never began.
    fn done(&self, py: Python<'_>, task: &Bound<'_, PyAny>) {
        match self.settle(py, task) {
            Ok(Some(s)) => self.handoff.set(s),
            Ok(None) | Err(_) => self.handoff.set_unfinished(),
        }
    }

    /// The handler will not run (the worker is stopping): release the
    /// lease; the job is not counted as claimed.
    fn hand_back(&self) {
        self.handoff.set(Settle::HandBack);
    }
}

impl Drop for AioTicket {
    fn drop(&mut self) {
        self.handoff.set_unfinished();
    }
}

/// The native loop of ``tenure.aio.Worker`` (see the module docs of
/// ``aio_work.rs``); private to ``tenure.aio``. The loop watches
/// ``fileno`` (``loop.add_reader``) and calls ``take()`` when it is
/// readable; ``close()`` hands back the jobs nobody will take.
#[pyclass(frozen, module = "tenure", name = "_AioWorker")]
pub struct AioWorker {
    shared: Arc<Shared>,
}

#[pymethods]
impl AioWorker {
    /// Start ``slots`` slot threads at once.
    #[new]
    #[pyo3(signature = (authority, production, holder, *, ttl, renew_every, wait_timeout, until_idle, slots, cancel, job_failed, outage_limit=None, schedules=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        authority: &Bound<'_, Authority>,
        #[pyo3(from_py_with = crate::work::productions)] production: Vec<String>,
        holder: &str,
        ttl: &Bound<'_, PyAny>,
        renew_every: &Bound<'_, PyAny>,
        wait_timeout: &Bound<'_, PyAny>,
        until_idle: bool,
        #[pyo3(from_py_with = convert::slots)] slots: u32,
        cancel: &Bound<'_, WaitCancel>,
        job_failed: Py<PyAny>,
        outage_limit: Option<&Bound<'_, PyAny>>,
        schedules: bool,
    ) -> PyResult<AioWorker> {
        let auth = authority.get();
        // The core's worker rules for what this loop shares with it.
        let list: Vec<&str> = production.iter().map(String::as_str).collect();
        tenure::validate::production_list(&list).map_err(to_py)?;
        tenure::validate::holder(holder).map_err(to_py)?;
        let internal = |e: std::io::Error| {
            to_py(Error::Internal(format!(
                "cannot make the worker's wake-up socket: {e}"
            )))
        };
        let (writer, reader) = UnixStream::pair().map_err(internal)?;
        writer.set_nonblocking(true).map_err(internal)?;
        reader.set_nonblocking(true).map_err(internal)?;
        let outage_limit = outage_limit
            .map(|d| convert::wait(d, "outage_limit"))
            .transpose()?;
        let shared = Arc::new(Shared {
            auth: auth.get()?,
            productions: production,
            holder: holder.to_owned(),
            ttl: convert::ttl(ttl, "ttl")?,
            every: convert::wait(renew_every, "renew_every")?,
            wait_timeout: convert::wait(wait_timeout, "wait_timeout")?,
            until_idle,
            node: auth.wait_node(Some(cancel.get().node())),
            writer,
            reader,
            job_failed,
            state: Mutex::new(State {
                active: slots as usize,
                ..State::default()
            }),
            outage: Mutex::new(tenure::SlotsOutage::new(outage_limit, slots as usize)),
        });
        for i in 0..slots {
            let s = shared.clone();
            let t = std::thread::Builder::new()
                .name(format!("tenure-aio-slot-{i}"))
                .spawn(move || {
                    // A panic ends this slot, never the count of slots.
                    let _ = catch_unwind(AssertUnwindSafe(|| slot(&s, i as usize)));
                    let mut st = lock(&s.state);
                    st.active -= 1;
                    if st.active == 0 {
                        s.signal(&mut st);
                    }
                });
            if let Err(e) = t {
                lock(&shared.state).active -= (slots - i) as usize;
                shared.node.cancel();
                return Err(to_py(Error::Internal(format!(
                    "cannot start a worker slot: {e}"
                ))));
            }
        }
        if schedules {
            let s = shared.clone();
            let t = std::thread::Builder::new()
                .name("tenure-aio-scheduler".into())
                .spawn(move || scheduler(&s));
            if let Err(e) = t {
                shared.node.cancel();
                return Err(to_py(Error::Internal(format!(
                    "cannot start the scheduler: {e}"
                ))));
            }
        }
        Ok(AioWorker { shared })
    }

    /// The socket to watch (``loop.add_reader``): readable when ``take()``
    /// has something.
    #[getter]
    fn fileno(&self) -> i32 {
        self.shared.reader.as_raw_fd()
    }

    /// On the loop: ``(tickets, stopped, ended)``: the jobs ready for a
    /// handler, whether a wait error stopped the worker since the last
    /// call, and whether every slot has ended.
    fn take(&self, py: Python<'_>) -> (Vec<Py<AioTicket>>, bool, bool) {
        let s = &self.shared;
        let (jobs, stopped, ended) = {
            let mut st = lock(&s.state);
            let mut buf = [0u8; 64];
            while matches!((&s.reader).read(&mut buf), Ok(n) if n > 0) {}
            st.signalled = false;
            let jobs: Vec<Arc<Handoff>> = st.queue.drain(..).collect();
            (jobs, std::mem::take(&mut st.stopped), st.active == 0)
        };
        let mut tickets = Vec::with_capacity(jobs.len());
        for h in jobs {
            match h.ticket(py, &s.job_failed) {
                Ok(Some(t)) => tickets.push(t),
                Ok(None) => {}
                Err(_) => h.set(Settle::HandBack),
            }
        }
        (tickets, stopped, ended)
    }

    /// Take no new jobs: the waits end at once. Idempotent.
    fn stop(&self) {
        self.shared.node.cancel();
    }

    /// Stop, and hand back every job the loop has not taken (now or
    /// later). Idempotent.
    fn close(&self) {
        self.shared.close();
    }

    /// How many outages of the store server the slots rode out so far.
    #[getter]
    fn outages(&self) -> u64 {
        lock(&self.shared.state).outages
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

impl Drop for AioWorker {
    fn drop(&mut self) {
        self.shared.close();
    }
}
