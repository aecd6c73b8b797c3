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
//! 1. begins the write transaction (its turn at the fair writer queue, then
//!    `BEGIN IMMEDIATE`), while more operations queue up behind it;
//! 2. takes up to [`MAX_MEMBERS`] queued operations in arrival order, and
//!    stops taking more once [`MAX_WORK`] of work has run (after at least
//!    [`MIN_MEMBERS`]), so one process's
//!    turn stays short and the writer lock stays fair between processes;
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
//!    its caller returns. Nothing is acknowledged before that COMMIT
//!    returned, and a failed COMMIT is every successful member's error.
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
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
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

type Outcome = Result<Box<dyn Any + Send>>;
type Work = Box<dyn FnMut(&mut Session) -> Outcome + Send + 'static>;

struct Job {
    id: u64,
    queued: Instant,
    work: Work,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// A thread is leading a group.
    leader: bool,
    /// Ids the leader took from the queue and has not settled yet.
    taken: Vec<u64>,
    /// Settled outcomes, until their callers collect them.
    done: HashMap<u64, Outcome>,
    next_id: u64,
}

/// The group-commit queue of one SQLite store handle.
#[derive(Default)]
pub(crate) struct Combiner {
    state: Mutex<State>,
    wake: Condvar,
}

/// How one group ended: outcomes to publish, jobs to queue again.
struct Settled {
    outcomes: Vec<(u64, Outcome)>,
    again: Vec<Job>,
}

impl Combiner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Operations queued and not yet taken into a group.
    pub(crate) fn queued(&self) -> usize {
        self.lock().queue.len()
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
        // SAFETY: only the lifetime is erased (same fat-pointer layout). The
        // closure may borrow from this caller's frame; this function returns
        // only after its outcome is in `done`, and every path that publishes
        // an outcome drops the job (and its closure) first: the job is
        // either in the queue or owned by the one leader, which settles it
        // (or, after a panic, has dropped it during unwinding) before
        // publishing. The leader never panics out of `lead`.
        let work: Work = unsafe {
            std::mem::transmute::<Box<dyn FnMut(&mut Session) -> Outcome + Send + '_>, Work>(work)
        };
        let mut st = self.lock();
        let id = st.next_id;
        st.next_id += 1;
        st.queue.push_back(Job {
            id,
            queued: Instant::now(),
            work,
        });
        loop {
            if let Some(out) = st.done.remove(&id) {
                drop(st);
                return out.and_then(|b| {
                    b.downcast::<T>()
                        .map(|v| *v)
                        .map_err(|_| Error::Internal("a group member's result changed type".into()))
                });
            }
            if !st.leader {
                st.leader = true;
                drop(st);
                self.lead(backend, clock, id);
                st = self.lock();
                continue;
            }
            st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Lead groups until the one carrying `own` has settled, then hand the
    /// lead to a waiting caller.
    fn lead(&self, backend: &Arc<dyn Backend>, clock: &Arc<dyn Clock>, own: u64) {
        loop {
            let began = Instant::now();
            let r = catch_unwind(AssertUnwindSafe(|| self.group(backend, clock, began)));
            let mut st = self.lock();
            match r {
                Ok(settled) => {
                    for job in settled.again.into_iter().rev() {
                        st.queue.push_front(job);
                    }
                    for (id, out) in settled.outcomes {
                        st.done.insert(id, out);
                    }
                }
                Err(_) => {
                    // The jobs were dropped while unwinding.
                    let e = Error::Internal("a panic inside a commit group".into());
                    for id in std::mem::take(&mut st.taken) {
                        st.done.insert(id, Err(e.clone()));
                    }
                }
            }
            st.taken.clear();
            let finished = st.done.contains_key(&own);
            if finished {
                st.leader = false;
            }
            drop(st);
            self.wake.notify_all();
            if finished {
                return;
            }
        }
    }

    /// Take the writer lock, then the queued jobs, and settle one group.
    fn group(&self, backend: &Arc<dyn Backend>, clock: &Arc<dyn Clock>, began: Instant) -> Settled {
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
                let ids: Vec<u64> = early.iter().map(|j| j.id).collect();
                drop(early);
                return Settled {
                    outcomes: ids.into_iter().map(|id| (id, Err(e.clone()))).collect(),
                    again: Vec::new(),
                };
            }
        };
        let mut batch: Vec<Job> = {
            let mut st = self.lock();
            let n = st.queue.len().min(MAX_MEMBERS);
            let batch: Vec<Job> = st.queue.drain(..n).collect();
            st.taken = batch.iter().map(|j| j.id).collect();
            batch
        };
        if batch.len() == 1 {
            let mut job = batch.pop().expect("one job");
            let out = session.single(|s| (job.work)(s));
            let id = job.id;
            drop(job);
            return Settled {
                outcomes: vec![(id, out)],
                again: Vec::new(),
            };
        }
        run_members(session, batch)
    }
}

/// Run a group of two or more members in one transaction (see the module
/// documentation for the steps).
fn run_members(mut session: Session, mut batch: Vec<Job>) -> Settled {
    let mut outcomes: Vec<(u64, Outcome)> = Vec::with_capacity(batch.len());
    let mut again = Vec::new();
    let all_fail = |batch: Vec<Job>, outcomes: &mut Vec<(u64, Outcome)>, e: &Error| {
        let ids: Vec<u64> = batch.iter().map(|j| j.id).collect();
        drop(batch);
        outcomes.extend(ids.into_iter().map(|id| (id, Err(e.clone()))));
    };
    if let Err(e) = session.open_group() {
        session.abort();
        all_fail(batch, &mut outcomes, &e);
        return Settled { outcomes, again };
    }
    let start = Instant::now();
    for round in 0..MAX_ROUNDS {
        let mut results = Vec::with_capacity(batch.len());
        for job in batch.iter_mut() {
            if round == 0 && results.len() >= MIN_MEMBERS && start.elapsed() >= MAX_WORK {
                break;
            }
            results.push(session.member(|s| (job.work)(s)));
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
            return Settled { outcomes, again };
        }
        let pre = match session.precommit_sample() {
            Ok(p) => p,
            Err(e) => {
                session.abort();
                all_fail(batch, &mut outcomes, &e);
                return Settled { outcomes, again };
            }
        };
        let refused: Vec<Option<Error>> = results
            .iter()
            .map(|(_, fp)| pre.and_then(|p| refusal(fp, p)))
            .collect();
        if refused.iter().all(Option::is_none) {
            let ids: Vec<u64> = batch.iter().map(|j| j.id).collect();
            drop(batch);
            match session.commit_group(pre) {
                Ok(()) => {
                    for (id, (r, _)) in ids.into_iter().zip(results) {
                        outcomes.push((id, r));
                    }
                }
                Err(e) => {
                    for (id, (r, _)) in ids.into_iter().zip(results) {
                        outcomes.push((id, r.and(Err(e.clone()))));
                    }
                }
            }
            return Settled { outcomes, again };
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
                    let id = job.id;
                    drop(job);
                    outcomes.push((id, Err(e)));
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
            return Settled { outcomes, again };
        }
    }
    // Rounds used up (or nobody left): roll back, persist the observed time;
    // whoever is left waits for the next group.
    session.abort();
    batch.extend(again);
    Settled {
        outcomes,
        again: batch,
    }
}
