//! Group commit: one-step calls that threads of one process issue at the
//! same time share one write transaction and one COMMIT (one fsync at
//! `synchronous = FULL`).
//!
//! Every convenience call of an [`crate::Authority`] or [`crate::Lease`] on a
//! SQLite store goes through its store's [`Combiner`] (unless grouping is
//! turned off, see [`crate::Options::group_commit`]). A caller queues its
//! operation and either waits for a leader to carry it or becomes the leader
//! itself. The leader:
//!
//! 0. if its previous group had more members than are queued, waits up to
//!    [`GATHER`] for them to queue again (no lock held; only when commits
//!    are synced, see [`Combiner::gather`]);
//! 1. begins the write transaction (its turn at the fair writer queue, then
//!    `BEGIN IMMEDIATE`), while more operations queue up behind it;
//! 2. takes up to [`MAX_MEMBERS`] queued operations in arrival order, and
//!    stops taking more once [`MAX_WORK`] of work has run (after at least
//!    [`MIN_MEMBERS`]), so one process's
//!    turn stays short and the writer lock stays fair between processes;
//!    having taken them, it passes the lead on to the first caller still
//!    queued, which gathers and waits for the writer lock while this group
//!    runs and commits (so a handoff costs no wake-up after the COMMIT);
//! 3. runs each member in its own savepoint, inside one group savepoint:
//!    each member makes its own checks under the writer lock and takes its
//!    own clock sample, exactly as alone; a member that fails rolls back to
//!    its savepoint and leaves no trace, and the others go on;
//! 4. takes one pre-commit sample for the whole group and checks it against
//!    every guarded member that succeeded (the running mark after it, its
//!    earliest deadline). If some member fails that check, the group rolls
//!    back to the group savepoint (the transaction and the writer lock stay),
//!    those members are refused with the error a call alone gets
//!    (`clock_rollback`, `lease_expired`), and the others run again from the
//!    time observed so far, at most [`MAX_ROUNDS`] times; what is still
//!    unsettled then waits for the next group;
//! 5. writes the high-water mark (every observed time, the refused members'
//!    included) and COMMITs; then every member's outcome is published and
//!    one ring of the combiner's bell wakes their callers. Nothing is
//!    acknowledged before that COMMIT returned, and a failed COMMIT is
//!    every successful member's error.
//!
//! Each member's outcome is the one it would have had alone, run in the
//! group's order: the members before it have committed in that serial order
//! and the members refused at pre-commit ran (and failed) first. A group of
//! one runs exactly like a call alone, without savepoints.
//!
//! Only the transaction differs from a call alone: rules, clock samples and
//! errors are the same code ([`crate::session::Session`]). Explicit edits own
//! their transaction and never join a group. A PostgreSQL store has no
//! store-wide writer lock to amortize and keeps one transaction per call:
//! the authority opens it without a combiner.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::session::{refusal, Session};
use crate::store::Backend;
#[cfg(target_os = "linux")]
use crate::sys::futex::{self, Scope};
use crate::sys::scoped::{self, Lent};
use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Most operations one group carries.
pub(crate) const MAX_MEMBERS: usize = 64;
/// A group stops taking members once this much work has run in it...
pub(crate) const MAX_WORK: Duration = Duration::from_millis(4);
/// ...and at least this many members (when queued) have run.
pub(crate) const MIN_MEMBERS: usize = 8;
/// How many times a group runs its members again after pre-commit refusals.
pub(crate) const MAX_ROUNDS: usize = 4;

/// How long a leader waits, before taking its turn at the writer lock, for
/// callers of the previous group to queue again (see [`Combiner::gather`]).
pub(crate) const GATHER: Duration = Duration::from_micros(100);

type Outcome = Result<Box<dyn Any + Send>>;
type Work = Lent<Session, Outcome>;

/// Where one caller waits (asleep on its combiner's [`Bell`]): for its
/// outcome, or to be told to lead.
#[derive(Default)]
struct Slot {
    out: Mutex<Option<Outcome>>,
    /// `out` is set.
    ready: AtomicBool,
    /// The previous leader handed the lead to this caller.
    lead: AtomicBool,
}

impl Slot {
    /// Settle this caller; it wakes at the leader's next [`Bell::ring`].
    fn settle(&self, out: Outcome) {
        *self.out.lock().unwrap_or_else(|p| p.into_inner()) = Some(out);
        self.ready.store(true, Ordering::SeqCst);
    }

    /// Hand this caller the lead; it wakes at the leader's next [`Bell::ring`].
    fn hand_lead(&self) {
        self.lead.store(true, Ordering::SeqCst);
    }

    /// Whether this caller has its outcome or the lead.
    fn called(&self) -> bool {
        self.ready.load(Ordering::SeqCst) || self.lead.load(Ordering::SeqCst)
    }
}

/// What every waiting caller of one combiner sleeps on. A leader rings it
/// once when it has settled its whole group (and when it hands the lead
/// on): one system call wakes every caller that group concerns, which then
/// come back on every processor at once, where waking them one by one
/// would pace their return by the leader's wake-up calls. A caller woken
/// for another group's settling finds its slot unchanged and sleeps again.
#[derive(Default)]
struct Bell {
    /// Moves on every ring.
    word: AtomicU32,
    /// Callers asleep (or about to sleep) on `word`: a ring with none makes
    /// no system call.
    #[cfg(target_os = "linux")]
    sleepers: AtomicU32,
    #[cfg(not(target_os = "linux"))]
    sleep: (Mutex<()>, Condvar),
}

impl Bell {
    fn seen(&self) -> u32 {
        self.word.load(Ordering::SeqCst)
    }

    fn ring(&self) {
        self.word.fetch_add(1, Ordering::SeqCst);
        #[cfg(target_os = "linux")]
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex::wake_all(&self.word, Scope::Private);
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _held = self.sleep.0.lock().unwrap_or_else(|p| p.into_inner());
            self.sleep.1.notify_all();
        }
    }

    /// Sleep until the bell moves past `seen`, unless `settled` holds once
    /// this caller counts as asleep (a ring after that wakes it; one before
    /// it set what `settled` reads, or moved the word). May return early:
    /// the caller checks its slot again.
    fn wait(&self, seen: u32, settled: impl Fn() -> bool) {
        #[cfg(target_os = "linux")]
        {
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            if !settled() && self.seen() == seen {
                futex::wait(&self.word, seen, None, Scope::Private);
            }
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
        #[cfg(not(target_os = "linux"))]
        {
            let held = self.sleep.0.lock().unwrap_or_else(|p| p.into_inner());
            if !settled() && self.seen() == seen {
                drop(self.sleep.1.wait(held).unwrap_or_else(|p| p.into_inner()));
            }
        }
    }
}

struct Job {
    slot: Arc<Slot>,
    queued: Instant,
    work: Work,
}

impl Job {
    /// Run the member's operation; its caller is waiting in
    /// [`Combiner::run`] for as long as its job is queued or taken.
    fn run(&self, s: &mut Session) -> Outcome {
        self.work
            .call(s)
            .unwrap_or_else(|| Err(Error::Internal("a group member's caller has left".into())))
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// A thread is leading a group.
    leader: bool,
    /// Members of the last group (the leader's estimate of how many
    /// callers are cycling through the combiner).
    last_size: usize,
    /// The leader waits in [`Combiner::gather`] until this many are queued.
    want: usize,
    /// Groups formed so far, and the operations they took.
    formed: (u64, u64),
}

/// The group-commit queue of one SQLite store handle.
#[derive(Default)]
pub(crate) struct Combiner {
    state: Mutex<State>,
    /// Rung for a gathering leader when its queue is full enough.
    gathered: Condvar,
    /// Whether a leader gathers (see [`Combiner::gather`]).
    gathers: bool,
    /// Where waiting callers sleep.
    bell: Bell,
}

/// How one group ended: outcomes to publish, jobs to queue again.
struct Settled {
    /// The outcome of a group of one (kept out of `outcomes`: no
    /// allocation for a caller alone).
    one: Option<(Arc<Slot>, Outcome)>,
    outcomes: Vec<(Arc<Slot>, Outcome)>,
    again: Vec<Job>,
}

impl Settled {
    /// Outcomes of a group that is not a caller alone.
    fn of(outcomes: Vec<(Arc<Slot>, Outcome)>, again: Vec<Job>) -> Settled {
        Settled {
            one: None,
            outcomes,
            again,
        }
    }
}

/// The callers a group took, settled with an error should it panic.
#[derive(Default)]
struct Taken {
    one: Option<Arc<Slot>>,
    many: Vec<Arc<Slot>>,
}

impl Combiner {
    /// A combiner whose leaders gather the callers of their previous group
    /// when `synced` (each commit is followed by an fsync the group shares).
    pub(crate) fn new(synced: bool) -> Combiner {
        Combiner {
            gathers: synced,
            ..Combiner::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Operations queued and not yet taken into a group.
    pub(crate) fn queued(&self) -> usize {
        self.lock().queue.len()
    }

    /// Groups formed so far (a call alone is a group of one), and the
    /// operations they took (an operation a group left for the next one is
    /// taken again).
    pub(crate) fn formed(&self) -> (u64, u64) {
        self.lock().formed
    }

    /// Run `f` as a member of a group; returns once the COMMIT carrying it
    /// returned (or with the error that refused it).
    pub(crate) fn run<T: Send + 'static>(
        &self,
        backend: &Arc<dyn Backend>,
        clock: &Arc<dyn Clock>,
        mut f: impl FnMut(&mut Session) -> Result<T> + Send,
    ) -> Result<T> {
        let work: Box<dyn FnMut(&mut Session) -> Outcome + Send + '_> =
            Box::new(move |s| f(s).map(|v| Box::new(v) as Box<dyn Any + Send>));
        // The closure may borrow from this caller's frame: it is lent for as
        // long as this caller waits for its outcome. Every path that settles
        // a slot drops the job first (the job is either in the queue or
        // owned by the one leader, which settles it, or after a panic has
        // dropped it, before settling the slot); a job run after its loan
        // ended would find nothing to call ([`Job::run`]).
        scoped::lend(work, |work| self.queue_and_wait::<T>(backend, clock, work))
    }

    /// Queue `work` and wait for its outcome, leading groups when told to.
    fn queue_and_wait<T: Send + 'static>(
        &self,
        backend: &Arc<dyn Backend>,
        clock: &Arc<dyn Clock>,
        work: Work,
    ) -> Result<T> {
        let slot = Arc::new(Slot::default());
        let mut st = self.lock();
        st.queue.push_back(Job {
            slot: slot.clone(),
            queued: Instant::now(),
            work,
        });
        let mut lead = !st.leader;
        if lead {
            st.leader = true;
        } else if st.want > 0 && st.queue.len() >= st.want {
            self.gathered.notify_one();
        }
        drop(st);
        loop {
            if lead {
                self.lead(backend, clock);
            }
            loop {
                let seen = self.bell.seen();
                if slot.ready.load(Ordering::SeqCst) {
                    let out = slot
                        .out
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .take()
                        .expect("a ready slot has its outcome");
                    return out.and_then(|b| {
                        b.downcast::<T>().map(|v| *v).map_err(|_| {
                            Error::Internal("a group member's result changed type".into())
                        })
                    });
                }
                if slot.lead.swap(false, Ordering::SeqCst) {
                    lead = true;
                    break;
                }
                self.bell.wait(seen, || slot.called());
            }
        }
    }

    /// Lead one group. The lead passes on as soon as the group has taken
    /// its members ([`hand_on`]): the next leader gathers and queues for the
    /// writer lock while this group runs and commits, so the handoff costs
    /// no wake-up after the COMMIT. Whoever is first in the queue then
    /// leads (woken by a ring), or the next caller to queue if nobody is.
    fn lead(&self, backend: &Arc<dyn Backend>, clock: &Arc<dyn Clock>) {
        self.gather();
        let began = Instant::now();
        let taken = Mutex::new(Taken::default());
        let handed = std::cell::Cell::new(false);
        let r = catch_unwind(AssertUnwindSafe(|| {
            self.group(backend, clock, began, &taken, &handed)
        }));
        let mut st = self.lock();
        let (one, outcomes) = match r {
            Ok(settled) => {
                for job in settled.again.into_iter().rev() {
                    st.queue.push_front(job);
                }
                (settled.one, settled.outcomes)
            }
            Err(_) => {
                // The jobs were dropped while unwinding.
                let e = Error::Internal("a panic inside a commit group".into());
                let t = std::mem::take(&mut *taken.lock().unwrap_or_else(|p| p.into_inner()));
                let all = t.one.into_iter().chain(t.many);
                (None, all.map(|s| (s, Err(e.clone()))).collect())
            }
        };
        // Still the leader (the group ended before taking members), or
        // nobody leads while jobs went back to the queue: pass the lead on.
        let next = if !handed.get() || !st.leader {
            hand_on(&mut st)
        } else {
            None
        };
        drop(st);
        if let Some(next) = next {
            next.hand_lead();
        }
        for (slot, out) in one.into_iter().chain(outcomes) {
            slot.settle(out);
        }
        self.bell.ring();
    }

    /// Before its turn at the writer lock, a leader whose previous group
    /// carried more members than are queued now waits up to [`GATHER`] for
    /// them to queue again: their callers are on their way back (their
    /// outcomes were just published), and one group carrying all of them
    /// costs one lock handoff and one fsync instead of two. A group of one
    /// (a single thread) never waits, and neither does a leader whose
    /// commits are not synced (`synchronous = NORMAL`): a commit without an
    /// fsync is shorter than the wait for a caller to wake up and queue, so
    /// the leader takes whoever is queued when its turn at the writer lock
    /// comes (two threads that gathered there would commit about half as
    /// much as one thread alone).
    fn gather(&self) {
        let mut st = self.lock();
        let Some(want) = self.gathering(&st) else {
            return;
        };
        st.want = want;
        let until = Instant::now() + GATHER;
        while st.queue.len() < want {
            let now = Instant::now();
            if now >= until {
                break;
            }
            st = self
                .gathered
                .wait_timeout(st, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        st.want = 0;
    }

    /// How many queued callers a leader waits for before its turn at the
    /// writer lock ([`Combiner::gather`]), if it waits at all.
    fn gathering(&self, st: &State) -> Option<usize> {
        let want = st.last_size.min(MAX_MEMBERS);
        (self.gathers && want > 1 && st.queue.len() < want).then_some(want)
    }

    /// Take the writer lock, then the queued jobs, and settle one group.
    fn group(
        &self,
        backend: &Arc<dyn Backend>,
        clock: &Arc<dyn Clock>,
        began: Instant,
        taken: &Mutex<Taken>,
        handed: &std::cell::Cell<bool>,
    ) -> Settled {
        let session = match Session::begin(backend, clock) {
            Ok(s) => s,
            Err(e) => {
                // Whoever queued before this wait began has waited a whole
                // busy timeout too: they get the error; later callers stay
                // queued for the next leader.
                let mut st = self.lock();
                let (late, early): (VecDeque<Job>, VecDeque<Job>) = std::mem::take(&mut st.queue)
                    .into_iter()
                    .partition(|j| j.queued > began);
                st.queue = late;
                drop(st);
                let slots: Vec<Arc<Slot>> = early.iter().map(|j| j.slot.clone()).collect();
                drop(early);
                return Settled::of(
                    slots.into_iter().map(|s| (s, Err(e.clone()))).collect(),
                    Vec::new(),
                );
            }
        };
        // A caller alone is taken without a list (no allocation).
        let (alone, batch, next) = {
            let mut st = self.lock();
            let n = st.queue.len().min(MAX_MEMBERS);
            let mut t = taken.lock().unwrap_or_else(|p| p.into_inner());
            let (alone, batch) = if n == 1 {
                let job = st.queue.pop_front().expect("one job");
                t.one = Some(job.slot.clone());
                (Some(job), Vec::new())
            } else {
                let batch: Vec<Job> = st.queue.drain(..n).collect();
                t.many = batch.iter().map(|j| j.slot.clone()).collect();
                (None, batch)
            };
            drop(t);
            st.formed.0 += 1;
            st.formed.1 += n as u64;
            st.last_size = n;
            handed.set(true);
            (alone, batch, hand_on(&mut st))
        };
        if let Some(next) = next {
            next.hand_lead();
            self.bell.ring();
        }
        if let Some(job) = alone {
            let out = session.single(|s| job.run(s));
            let slot = job.slot.clone();
            drop(job);
            return Settled {
                one: Some((slot, out)),
                outcomes: Vec::new(),
                again: Vec::new(),
            };
        }
        run_members(session, batch)
    }
}

/// Pass the lead on: to the first queued caller (returned, to be woken
/// once the state lock is released), or to nobody if none is queued (the
/// next caller to queue leads).
fn hand_on(st: &mut State) -> Option<Arc<Slot>> {
    let next = st.queue.front().map(|j| j.slot.clone());
    st.leader = next.is_some();
    next
}

/// Run a group of two or more members in one transaction (see the module
/// documentation for the steps).
fn run_members(mut session: Session, mut batch: Vec<Job>) -> Settled {
    let mut outcomes: Vec<(Arc<Slot>, Outcome)> = Vec::with_capacity(batch.len());
    let mut again = Vec::new();
    let all_fail = |batch: Vec<Job>, outcomes: &mut Vec<(Arc<Slot>, Outcome)>, e: &Error| {
        let slots: Vec<Arc<Slot>> = batch.iter().map(|j| j.slot.clone()).collect();
        drop(batch);
        outcomes.extend(slots.into_iter().map(|s| (s, Err(e.clone()))));
    };
    if let Err(e) = session.open_group() {
        session.abort();
        all_fail(batch, &mut outcomes, &e);
        return Settled::of(outcomes, again);
    }
    let start = Instant::now();
    for round in 0..MAX_ROUNDS {
        let mut results = Vec::with_capacity(batch.len());
        for job in batch.iter_mut() {
            if round == 0 && results.len() >= MIN_MEMBERS && start.elapsed() >= MAX_WORK {
                break;
            }
            results.push(session.member(|s| job.run(s)));
            if session.poisoned().is_some() {
                break;
            }
        }
        if round == 0 {
            again = batch.split_off(results.len());
        }
        if let Some(e) = session.poisoned() {
            // The transaction is unusable: nothing of the group commits.
            session.abort();
            all_fail(batch, &mut outcomes, &e);
            return Settled::of(outcomes, again);
        }
        let pre = match session.precommit_sample() {
            Ok(p) => p,
            Err(e) => {
                session.abort();
                all_fail(batch, &mut outcomes, &e);
                return Settled::of(outcomes, again);
            }
        };
        let refused: Vec<Option<Error>> = results
            .iter()
            .map(|(_, fp)| pre.and_then(|p| refusal(fp, p)))
            .collect();
        if refused.iter().all(Option::is_none) {
            let slots: Vec<Arc<Slot>> = batch.iter().map(|j| j.slot.clone()).collect();
            drop(batch);
            match session.commit_group(pre) {
                Ok(()) => {
                    for (slot, (r, _)) in slots.into_iter().zip(results) {
                        outcomes.push((slot, r));
                    }
                }
                Err(e) => {
                    for (slot, (r, _)) in slots.into_iter().zip(results) {
                        outcomes.push((slot, r.and(Err(e.clone()))));
                    }
                }
            }
            return Settled::of(outcomes, again);
        }
        // Some members fail the pre-commit check: they are refused, the
        // others run again (the time observed so far stays raised).
        if let Some(p) = pre {
            session.observed(p);
        }
        let mut kept = Vec::with_capacity(batch.len());
        for (job, why) in batch.into_iter().zip(refused) {
            match why {
                Some(e) => {
                    let slot = job.slot.clone();
                    drop(job);
                    outcomes.push((slot, Err(e)));
                }
                None => kept.push(job),
            }
        }
        batch = kept;
        if batch.is_empty() || round + 1 == MAX_ROUNDS {
            break;
        }
        if let Err(e) = session.restart() {
            session.abort();
            all_fail(batch, &mut outcomes, &e);
            return Settled::of(outcomes, again);
        }
    }
    // Rounds used up (or nobody left): roll back, persist the observed time;
    // whoever is left waits for the next group.
    session.abort();
    batch.extend(again);
    Settled::of(outcomes, batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_gathers_only_when_its_group_shares_an_fsync() {
        let after = |last_size: usize, queued: usize| State {
            last_size,
            queue: (0..queued)
                .map(|_| Job {
                    slot: Arc::new(Slot::default()),
                    queued: Instant::now(),
                    work: Lent::owned(|_| Ok(Box::new(()) as Box<dyn Any + Send>)),
                })
                .collect(),
            ..State::default()
        };
        let synced = Combiner::new(true);
        assert_eq!(synced.gathering(&after(8, 1)), Some(8));
        assert_eq!(synced.gathering(&after(100, 0)), Some(MAX_MEMBERS));
        // Everyone is back, or the last group was one caller alone.
        assert_eq!(synced.gathering(&after(8, 8)), None);
        assert_eq!(synced.gathering(&after(1, 0)), None);
        // Commits without an fsync: take whoever is queued.
        let unsynced = Combiner::new(false);
        assert_eq!(unsynced.gathering(&after(8, 1)), None);
        assert_eq!(unsynced.gathering(&after(100, 0)), None);
    }
}
