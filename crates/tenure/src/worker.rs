//! A worker loop: `slots` threads that each wait for a job
//! ([`Authority::claim_next_wait`]), keep its lease alive ([`Lease::keep_alive`]),
//! run the caller's handler and settle the job with the handler's
//! [`Outcome`], reporting each job's [`Report`].
//!
//! Stopping ([`StopHandle::stop`], or SIGTERM/SIGINT after
//! [`stop_on_signals`]): the slots take no new job (waits are cancelled at
//! once), running handlers may finish within the grace period
//! ([`WorkerConfig::grace`]; [`JobContext::stopping`] tells them to hurry);
//! when it has passed, [`Worker::join`] releases every lease still held
//! (reported as [`JobResult::Released`]) and returns; dropping a worker
//! stops it and does the same. A handler still
//! running then keeps its thread until it returns; its outcome is not
//! applied (the lease is closed).
//!
//! A store server that goes away (a restart, a crash, killed backends, no
//! free connection slot) stops nothing: the slots back off
//! ([`crate::SlotsOutage`]) and report it ([`WorkerConfig::on_outage`],
//! [`Worker::outages`]), the keepers retry renewals within each lease's
//! remaining time, and completions, failures and releases are the
//! idempotent forms, retried until they land or their lease expires; the
//! worker stops only when asked, or after [`WorkerConfig::outage_limit`].
//!
//! The worker adds no rule: claims, renewals, completion, failure and
//! release are the ordinary lease operations. A worker process that dies
//! (SIGKILL) loses nothing: its leases expire and the jobs are claimable
//! again.

use crate::authority::Authority;
use crate::error::{Error, Result};
use crate::keeper::Keeper;
use crate::lease::Lease;
use crate::model::{Execution, Fact, JobState};
use crate::retry::{SlotsOutage, SlotsStep};
use crate::ttl::{self, Delay, Ttl};
use crate::wait::WaitCancel;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Most slots one worker runs.
pub const MAX_SLOTS: usize = 1024;

/// How a [`Worker`] runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// One production, or several claimed across
    /// ([`Authority::claim_next_wait_across`]).
    productions: Vec<String>,
    holder: String,
    slots: usize,
    ttl: Ttl,
    renew_every: Duration,
    wait_timeout: Duration,
    grace: Duration,
    outage_limit: Option<Duration>,
    on_outage: Option<OutageHook>,
    schedules: bool,
}

/// What a worker reports about a store server that went away (see
/// [`WorkerConfig::on_outage`]).
#[derive(Debug, Clone)]
pub enum OutageEvent {
    /// A wait failed because the server is away (a lost or refused
    /// connection, no free connection slot): the slots back off and keep
    /// trying. The error of the first failed wait.
    Began(Error),
    /// A wait succeeded again after an outage this long.
    Ended(Duration),
    /// The server stayed away longer than [`WorkerConfig::outage_limit`]:
    /// the worker stops (as [`StopHandle::stop`]).
    GaveUp(Duration),
}

/// The outage callback of a [`WorkerConfig`].
#[derive(Clone)]
struct OutageHook(Arc<dyn Fn(OutageEvent) + Send + Sync>);

impl std::fmt::Debug for OutageHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutageHook")
    }
}

impl WorkerConfig {
    /// One slot, renewal every `ttl / 3`, waits of 60 s, grace 30 s.
    pub fn new(production: &str, holder: &str, ttl: Ttl) -> WorkerConfig {
        WorkerConfig {
            productions: vec![production.to_owned()],
            holder: holder.to_owned(),
            slots: 1,
            ttl,
            renew_every: Duration::from_micros((ttl.as_micros() / 3).max(1) as u64),
            wait_timeout: Duration::from_secs(60),
            grace: Duration::from_secs(30),
            outage_limit: None,
            on_outage: None,
            schedules: false,
        }
    }
    /// Stop once the store server has been away this long (`None`, the
    /// default: never). While it is away the slots back off (50 ms
    /// doubling to 2 s, jittered; [`crate::Outage`]), the keepers go on
    /// renewing within each lease's remaining time, and settlements are
    /// retried until their lease expires.
    pub fn outage_limit(mut self, limit: Option<Duration>) -> WorkerConfig {
        self.outage_limit = limit;
        self
    }
    /// Call `f` when the store server goes away, comes back, or stayed away
    /// past the [`WorkerConfig::outage_limit`] ([`OutageEvent`]), from the
    /// slot thread that noticed.
    pub fn on_outage(mut self, f: impl Fn(OutageEvent) + Send + Sync + 'static) -> WorkerConfig {
        self.on_outage = Some(OutageHook(Arc::new(f)));
        self
    }
    /// Serve these productions (1 ..=
    /// [`MAX_PRODUCTIONS`](crate::validate::MAX_PRODUCTIONS), distinct)
    /// instead of the one given to [`WorkerConfig::new`]: with more than
    /// one, each slot claims across them, rotating
    /// ([`Authority::claim_next_wait_across`]).
    pub fn productions(mut self, list: &[&str]) -> WorkerConfig {
        self.productions = list.iter().map(|p| (*p).to_owned()).collect();
        self
    }
    /// Also run the store's schedules while the worker runs: a scheduler
    /// loop ([`Authority::run_schedules_until`]) on a thread of its own,
    /// stopped with the worker. Off by default.
    pub fn schedules(mut self, on: bool) -> WorkerConfig {
        self.schedules = on;
        self
    }
    /// Concurrent jobs (1 ..= [`MAX_SLOTS`]).
    pub fn slots(mut self, n: usize) -> WorkerConfig {
        self.slots = n;
        self
    }
    /// The keep-alive period (shorter than the TTL).
    pub fn renew_every(mut self, d: Duration) -> WorkerConfig {
        self.renew_every = d;
        self
    }
    /// How long one wait lasts before the slot starts the next one (only
    /// bounds each wait; a stop ends waits at once).
    pub fn wait_timeout(mut self, d: Duration) -> WorkerConfig {
        self.wait_timeout = d;
        self
    }
    /// How long running handlers may go on after a stop before their leases
    /// are released.
    pub fn grace(mut self, d: Duration) -> WorkerConfig {
        self.grace = d;
        self
    }

    /// The checks [`Worker::start`] makes before it starts a slot: the
    /// production IDs and holder, 1 ..= [`MAX_SLOTS`] slots, a keep-alive
    /// period shorter than the TTL, a positive wait timeout of at most 24 h
    /// and a grace period of at most 24 h. Loops composed elsewhere (the C++
    /// `tenure::Worker`, through `tenure_worker_config_check`) make the same
    /// checks here.
    pub fn check(&self) -> Result<()> {
        let list: Vec<&str> = self.productions.iter().map(String::as_str).collect();
        crate::validate::production_list(&list)?;
        crate::validate::holder(&self.holder)?;
        if self.slots == 0 || self.slots > MAX_SLOTS {
            return Err(Error::invalid(format!(
                "a worker runs 1 ..= {MAX_SLOTS} slots, got {}",
                self.slots
            )));
        }
        ttl::bounded("a keep-alive period", self.renew_every, false)?;
        if self.renew_every >= self.ttl.as_duration() {
            return Err(Error::InvalidDuration(format!(
                "a keep-alive period ({:?}) must be shorter than the TTL ({:?})",
                self.renew_every, self.ttl
            )));
        }
        ttl::bounded("a wait timeout", self.wait_timeout, false)?;
        ttl::bounded("a grace period", self.grace, true)?;
        Ok(())
    }
}

/// What a handler decided about its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Complete the job, publishing these facts.
    Complete(Vec<Fact>),
    /// Complete the job as the reference executor
    /// ([`Lease::complete_execution`]): consumes the execution nonce and
    /// records the output's provenance.
    CompleteExecution(Execution),
    /// Fail retryably: the job is requested again while attempts remain.
    /// `delay` is the back-off before it may be claimed again (at most
    /// [`Delay::MAX_MICROS`]); `None` leaves it to the job's or production's
    /// back-off policy.
    Retry {
        /// Recorded as the job's last error.
        reason: String,
        /// Back-off before the next attempt.
        delay: Option<Duration>,
    },
    /// Fail permanently.
    Fail(String),
}

/// What happened to one job a worker claimed.
#[derive(Debug, Clone)]
pub enum JobResult {
    /// Completed with the handler's facts.
    Completed,
    /// Failed (the handler's [`Outcome::Retry`] or [`Outcome::Fail`], or a
    /// panic, which is a retryable failure): the job's new state,
    /// `Requested` (it will run again) or `Failed`.
    Failed(JobState),
    /// Released unfinished: the stop's grace period ended first, or its
    /// payload could not be read.
    Released(JobState),
    /// The lease was lost (expired, cancelled, replaced, refused renewal)
    /// or the final transition failed: the error; the job is wherever the
    /// store says.
    Lost(Error),
}

/// One job's report.
#[derive(Debug, Clone)]
pub struct Report {
    /// Production ID.
    pub production: String,
    /// Job ID.
    pub job: String,
    /// The claim that ran it.
    pub claim_id: Uuid,
    /// Which attempt it was.
    pub attempt: u32,
    /// What happened.
    pub result: JobResult,
}

/// What a handler sees of its job.
pub struct JobContext<'a> {
    lease: &'a Lease,
    payload: &'a [u8],
    held: &'a Held,
    ctl: &'a Ctl,
}

impl JobContext<'_> {
    /// The job's lease (kept alive by the worker; the worker settles it).
    pub fn lease(&self) -> &Lease {
        self.lease
    }
    /// Production ID.
    pub fn production(&self) -> &str {
        self.lease.production()
    }
    /// Job ID.
    pub fn job(&self) -> &str {
        self.lease.job()
    }
    /// Which attempt this is (1-based).
    pub fn attempt(&self) -> u32 {
        self.lease.attempt()
    }
    /// The job's payload.
    pub fn payload(&self) -> &[u8] {
        self.payload
    }
    /// The worker is stopping: finish soon (within the grace period).
    pub fn stopping(&self) -> bool {
        self.ctl.cancel.is_cancelled()
    }
    /// The refusal that stopped the lease's renewals, if any: the lease is
    /// lost and the handler's work will not be accepted.
    pub fn lease_lost(&self) -> Option<Error> {
        let k = self.held.keeper.lock().unwrap_or_else(|p| p.into_inner());
        k.as_ref().and_then(Keeper::error)
    }
}

/// Stops a [`Worker`] (cloneable, usable from any thread).
#[derive(Clone)]
pub struct StopHandle {
    ctl: Arc<Ctl>,
}

impl StopHandle {
    /// Stop: take no new jobs; the grace period starts now. Idempotent.
    pub fn stop(&self) {
        self.ctl.stop();
    }
    /// Whether [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.ctl.cancel.is_cancelled()
    }
}

struct CtlState {
    stopped_at: Option<Instant>,
    /// Slots still running.
    active: usize,
    /// Jobs being run, by a local number.
    held: HashMap<u64, Arc<Held>>,
    next: u64,
    /// The slots' outage of the store server, counted once for the worker
    /// ([`Worker::outages`], [`Worker::gave_up`]).
    outage: SlotsOutage,
}

struct Ctl {
    state: Mutex<CtlState>,
    cv: Condvar,
    cancel: WaitCancel,
}

impl Ctl {
    fn lock(&self) -> MutexGuard<'_, CtlState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn stop(&self) {
        {
            let mut st = self.lock();
            if st.stopped_at.is_none() {
                st.stopped_at = Some(Instant::now());
            }
        }
        self.cancel.cancel();
        self.cv.notify_all();
    }
}

/// A job being run: whoever takes it first (its slot when the handler
/// returns, or the grace expiry) settles and reports it.
struct Held {
    lease: Lease,
    keeper: Mutex<Option<Keeper>>,
    taken: AtomicBool,
}

impl Held {
    fn take(&self) -> bool {
        if self.taken.swap(true, Ordering::AcqRel) {
            return false;
        }
        if let Some(mut k) = self.keeper.lock().unwrap_or_else(|p| p.into_inner()).take() {
            k.stop();
        }
        true
    }
}

type Handler = dyn Fn(&JobContext<'_>) -> Outcome + Send + Sync;
type Reporter = dyn Fn(Report) + Send + Sync;

/// A running worker (see the module documentation).
pub struct Worker {
    ctl: Arc<Ctl>,
    grace: Duration,
    threads: Vec<JoinHandle<()>>,
    report: Arc<Reporter>,
    joined: bool,
}

impl Worker {
    /// Start `config.slots` slot threads on `auth`, running `handler` for
    /// each job and `report` after each job's outcome is settled.
    pub fn start(
        auth: &Authority,
        config: WorkerConfig,
        handler: impl Fn(&JobContext<'_>) -> Outcome + Send + Sync + 'static,
        report: impl Fn(Report) + Send + Sync + 'static,
    ) -> Result<Worker> {
        config.check()?;
        let ctl = Arc::new(Ctl {
            state: Mutex::new(CtlState {
                stopped_at: None,
                active: config.slots,
                held: HashMap::new(),
                next: 0,
                outage: SlotsOutage::new(config.outage_limit, config.slots),
            }),
            cv: Condvar::new(),
            cancel: WaitCancel::new(),
        });
        let handler: Arc<Handler> = Arc::new(handler);
        let report: Arc<Reporter> = Arc::new(report);
        let config = Arc::new(config);
        let mut threads = Vec::with_capacity(config.slots);
        for i in 0..config.slots {
            let (a, c, h, r, cfg) = (
                auth.clone(),
                ctl.clone(),
                handler.clone(),
                report.clone(),
                config.clone(),
            );
            let t = std::thread::Builder::new()
                .name(format!("tenure-slot-{i}"))
                .spawn(move || {
                    // A panicking report callback ends this slot, never the count.
                    let _ = catch_unwind(AssertUnwindSafe(|| slot(i, &a, &cfg, &c, &*h, &*r)));
                    c.lock().active -= 1;
                    c.cv.notify_all();
                });
            match t {
                Ok(t) => threads.push(t),
                Err(e) => {
                    ctl.lock().active -= config.slots - i;
                    return Err(abandon(ctl, threads, report, "a worker slot", e));
                }
            }
        }
        if config.schedules {
            let (a, c) = (auth.clone(), ctl.clone());
            let t = std::thread::Builder::new()
                .name("tenure-scheduler".into())
                .spawn(move || {
                    // A failed step (a store error) is tried again a
                    // second later, until the worker stops.
                    while !c.cancel.is_cancelled() {
                        let r = catch_unwind(AssertUnwindSafe(|| {
                            a.run_schedules_until(&c.cancel, |_| {})
                        }));
                        if matches!(r, Ok(Ok(()))) {
                            break;
                        }
                        let g = c.lock();
                        let _ = c.cv.wait_timeout(g, Duration::from_secs(1));
                    }
                });
            match t {
                Ok(t) => threads.push(t),
                Err(e) => return Err(abandon(ctl, threads, report, "the scheduler", e)),
            }
        }
        Ok(Worker {
            ctl,
            grace: config.grace,
            threads,
            report,
            joined: false,
        })
    }

    /// How many times the store server went away while this worker ran
    /// (an outage counts once, however many slots noticed it).
    pub fn outages(&self) -> u64 {
        self.ctl.lock().outage.outages()
    }

    /// Whether the worker stopped because the store server stayed away
    /// longer than its [`WorkerConfig::outage_limit`].
    pub fn gave_up(&self) -> bool {
        self.ctl.lock().outage.gave_up()
    }

    /// A handle that stops this worker.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            ctl: self.ctl.clone(),
        }
    }

    /// Stop and wait as [`Worker::join`] does.
    pub fn stop(self) {
        self.stop_handle().stop();
        self.join();
    }

    /// Wait until the worker is stopped (by a [`StopHandle`] or a signal)
    /// and its slots have finished, or the grace period after the stop has
    /// passed; then release every lease still held and return.
    pub fn join(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if self.joined {
            return;
        }
        self.joined = true;
        let st = self.ctl.lock();
        let st = self
            .ctl
            .cv
            .wait_while(st, |st| st.stopped_at.is_none())
            .unwrap_or_else(|p| p.into_inner());
        let grace_end = st
            .stopped_at
            .map_or_else(Instant::now, |at| at + self.grace);
        let left = grace_end.saturating_duration_since(Instant::now());
        let (mut st, _) = self
            .ctl
            .cv
            .wait_timeout_while(st, left, |st| st.active > 0)
            .unwrap_or_else(|p| p.into_inner());
        let left: Vec<Arc<Held>> = st.held.drain().map(|(_, h)| h).collect();
        let finished = st.active == 0;
        drop(st);
        for h in left {
            if h.take() {
                let result = match h.lease.release() {
                    Ok(state) => JobResult::Released(state),
                    Err(e) => JobResult::Lost(e),
                };
                (self.report)(report(&h.lease, result));
            }
        }
        if finished {
            for t in self.threads.drain(..) {
                let _ = t.join();
            }
        }
        // Otherwise handlers still running keep their threads (detached).
    }
}

impl Drop for Worker {
    /// Dropping a worker stops it and waits as [`Worker::join`] does.
    fn drop(&mut self) {
        if !self.joined {
            self.stop_handle().stop();
            self.finish();
        }
    }
}

fn report(lease: &Lease, result: JobResult) -> Report {
    Report {
        production: lease.production().to_owned(),
        job: lease.job().to_owned(),
        claim_id: lease.claim_id(),
        attempt: lease.attempt(),
        result,
    }
}

/// Pause for `d` unless the worker stops first.
fn pause(ctl: &Ctl, d: Duration) {
    let st = ctl.lock();
    let _ = ctl
        .cv
        .wait_timeout_while(st, d, |st| st.stopped_at.is_none());
}

/// Slot number `i`'s loop.
fn slot(i: usize, a: &Authority, cfg: &WorkerConfig, ctl: &Ctl, handler: &Handler, rep: &Reporter) {
    while !ctl.cancel.is_cancelled() {
        let claimed = match cfg.productions.as_slice() {
            [one] => a.claim_next_wait(
                one,
                &cfg.holder,
                cfg.ttl,
                cfg.wait_timeout,
                Some(&ctl.cancel),
            ),
            many => {
                let list: Vec<&str> = many.iter().map(String::as_str).collect();
                a.claim_next_wait_across(
                    &list,
                    &cfg.holder,
                    cfg.ttl,
                    cfg.wait_timeout,
                    Some(&ctl.cancel),
                )
            }
        };
        let lease = match claimed {
            Ok(l) => {
                server_back(i, cfg, ctl);
                l
            }
            Err(Error::NoJobAvailable(_)) => {
                server_back(i, cfg, ctl);
                continue;
            }
            Err(e) => {
                if !ctl.cancel.is_cancelled() {
                    ride_out(i, cfg, ctl, e);
                }
                continue;
            }
        };
        run_job(a, cfg, ctl, handler, rep, lease);
    }
}

/// Slot `i`'s wait failed with `e`: back off as [`SlotsOutage`] says,
/// reporting the worker's outage once when it begins, and stop the worker
/// once it lasted past the outage limit (reported once).
fn ride_out(i: usize, cfg: &WorkerConfig, ctl: &Ctl, e: Error) {
    let step = ctl.lock().outage.failed(i, &e);
    let event = match step {
        Some(SlotsStep::GiveUp { away, first: true }) => Some(OutageEvent::GaveUp(away)),
        Some(SlotsStep::Pause { began: true, .. }) => Some(OutageEvent::Began(e)),
        _ => None,
    };
    if let (Some(ev), Some(hook)) = (event, cfg.on_outage.as_ref()) {
        (hook.0)(ev);
    }
    match step {
        Some(SlotsStep::GiveUp { .. }) => ctl.stop(),
        Some(SlotsStep::Pause { pause: d, .. }) => pause(ctl, d),
        None => {}
    }
}

/// Slot `i`'s wait answered: its outage (if any) is over; the worker's
/// ends with the last slot that saw it.
fn server_back(i: usize, cfg: &WorkerConfig, ctl: &Ctl) {
    let ended = ctl.lock().outage.ok(i);
    if let (Some(d), Some(hook)) = (ended, cfg.on_outage.as_ref()) {
        (hook.0)(OutageEvent::Ended(d));
    }
}

fn run_job(
    a: &Authority,
    cfg: &WorkerConfig,
    ctl: &Ctl,
    handler: &Handler,
    rep: &Reporter,
    lease: Lease,
) {
    let keeper = match lease.keep_alive(cfg.ttl, cfg.renew_every) {
        Ok(k) => k,
        Err(e) => {
            rep(report(&lease, JobResult::Lost(e)));
            return;
        }
    };
    let held = Arc::new(Held {
        lease: lease.twin(),
        keeper: Mutex::new(Some(keeper)),
        taken: AtomicBool::new(false),
    });
    let id = {
        let mut st = ctl.lock();
        let id = st.next;
        st.next += 1;
        st.held.insert(id, held.clone());
        id
    };
    let outcome = match a.payload(lease.production(), lease.job()) {
        Ok(payload) => {
            let ctx = JobContext {
                lease: &lease,
                payload: &payload,
                held: &held,
                ctl,
            };
            Some(catch_unwind(AssertUnwindSafe(|| handler(&ctx))))
        }
        Err(_) => None,
    };
    ctl.lock().held.remove(&id);
    if !held.take() {
        return; // the grace expiry released it and reported
    }
    let result = match outcome {
        None => match lease.release_idempotent() {
            Ok(s) => JobResult::Released(s.value),
            Err(e) => JobResult::Lost(e),
        },
        Some(Ok(Outcome::Complete(facts))) => {
            completed(lease.complete_idempotent(&facts).map(|a| a.value))
        }
        Some(Ok(Outcome::CompleteExecution(exec))) => completed(
            lease
                .complete_execution_idempotent(&exec, &[])
                .map(|a| a.value),
        ),
        Some(Ok(Outcome::Retry { reason, delay })) => settle(retry(&lease, &reason, delay)),
        Some(Ok(Outcome::Fail(reason))) => {
            settle(lease.fail_idempotent(&reason, true).map(|a| a.value))
        }
        Some(Err(_)) => settle(retry(&lease, "the handler panicked", None)),
    };
    rep(report(&lease, result));
}

fn completed(r: Result<()>) -> JobResult {
    match r {
        Ok(()) => JobResult::Completed,
        Err(e) => JobResult::Lost(e),
    }
}

fn settle(r: Result<JobState>) -> JobResult {
    match r {
        Ok(s) => JobResult::Failed(s),
        Err(e) => JobResult::Lost(e),
    }
}

/// A retryable failure: with a `delay`, the job is due again after it
/// ([`Lease::fail_retry_after`]; a delay that is not a valid [`Delay`] is
/// the error, and the lease stays held until it expires); without one, after
/// the job's or its production's back-off, else at once.
fn retry(lease: &Lease, reason: &str, delay: Option<Duration>) -> Result<JobState> {
    match delay {
        Some(d) => lease.fail_retry_after_idempotent(reason, Delay::try_from(d)?),
        None => lease.fail_idempotent(reason, false),
    }
    .map(|a| a.value)
}

/// A worker whose thread `what` could not be started: the threads that
/// did start are stopped and joined, and the error says which failed.
fn abandon(
    ctl: Arc<Ctl>,
    threads: Vec<std::thread::JoinHandle<()>>,
    report: Arc<Reporter>,
    what: &str,
    e: std::io::Error,
) -> Error {
    let w = Worker {
        ctl,
        grace: Duration::ZERO,
        threads,
        report,
        joined: false,
    };
    w.stop_handle().stop();
    w.join();
    Error::Internal(format!("cannot start {what}: {e}"))
}

/// Stop `handle`'s worker on SIGTERM or SIGINT (Unix): installs handlers
/// for both that write to a pipe, and a thread that stops the worker when
/// it reads from it (a signal handler itself may not take locks). Once per
/// process: a second call is [`Error::InvalidArgument`].
#[cfg(unix)]
pub fn stop_on_signals(handle: StopHandle) -> Result<()> {
    crate::sys::signals::on_stop_signals("stop_on_signals", move || handle.stop())
}

/// Cancel `cancel` on SIGTERM or SIGINT (Unix), as [`stop_on_signals`]
/// stops a worker: how a standalone scheduler loop
/// ([`Authority::run_schedules_until`]) is stopped. Once per process.
#[cfg(unix)]
pub fn cancel_on_signals(cancel: WaitCancel) -> Result<()> {
    crate::sys::signals::on_stop_signals("cancel_on_signals", move || cancel.cancel())
}
