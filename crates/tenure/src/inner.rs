//! The shared inner state of an authority: its store backend, its private
//! clock and how it was opened. [`crate::Authority`], [`crate::Edit`] and
//! [`crate::Lease`] each hold an `Arc` of it; this module imports none of them.

use crate::clock::Clock;
use crate::error::Result;
use crate::group::Combiner;
use crate::model::ClockReading;
use crate::retention::{
    PruneReport, Retention, AUTO_PRUNE_CATCH_UP_EVERY, AUTO_PRUNE_EVERY, PRUNE_STEP_ROWS,
};
use crate::session::Session;
use crate::store::{Backend, Txn};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Committed one-step calls of a handle between two folds of the kept job
/// counts ([`Inner::after_write`]).
pub(crate) const FOLD_EVERY: u64 = 4096;

/// The least time between two folds a handle's statistics reads ask for
/// ([`Inner::fold_for_read`]).
pub(crate) const READ_FOLD_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

pub(crate) struct Inner {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The store's path, or a server URL without its password.
    pub(crate) path: PathBuf,
    pub(crate) migrated_from: u32,
    /// The group-commit queue of a SQLite store with grouping on; `None`
    /// runs every convenience call as its own transaction (grouping off,
    /// and always on PostgreSQL).
    pub(crate) group: Option<Combiner>,
    /// The cancel handle every wait on this authority also watches
    /// ([`crate::Authority::cancel_waits`] replaces it with a fresh one).
    pub(crate) waits: std::sync::Mutex<crate::wait::WaitCancel>,
    /// Where this handle's next claim across each list of productions
    /// starts ([`crate::rules::claim_next_across`]).
    pub(crate) rotations: std::sync::Mutex<std::collections::HashMap<Vec<String>, usize>>,
    /// The retention policy this handle applies in small steps inside its
    /// write traffic (`Options::retention`); `None`: only explicit prunes.
    pub(crate) retention: Option<Retention>,
    /// Committed one-step calls, for the automatic prune and fold cadences.
    pub(crate) writes: AtomicU64,
    /// The last automatic prune step hit its bound: catch up sooner.
    pub(crate) prune_behind: std::sync::atomic::AtomicBool,
    /// When this handle last folded the kept job counts.
    pub(crate) last_fold: std::sync::Mutex<Option<std::time::Instant>>,
    /// What this handle's statistics reads found of the flow's events.
    pub(crate) flow_seen: crate::figures::FlowSeen,
}

impl Inner {
    /// The authority-wide cancel handle of the waits starting now.
    pub(crate) fn waits(&self) -> crate::wait::WaitCancel {
        self.waits.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// End every wait in progress on this authority (later waits are not
    /// affected).
    pub(crate) fn cancel_waits(&self) {
        let old = std::mem::take(&mut *self.waits.lock().unwrap_or_else(|p| p.into_inner()));
        old.cancel();
    }

    /// The start of this handle's next claim across `list`.
    pub(crate) fn rotation(&self, list: &[String]) -> usize {
        let r = self.rotations.lock().unwrap_or_else(|p| p.into_inner());
        r.get(list).copied().unwrap_or(0)
    }

    /// Record where the next claim across `list` starts.
    pub(crate) fn set_rotation(&self, list: Vec<String>, next: usize) {
        let mut r = self.rotations.lock().unwrap_or_else(|p| p.into_inner());
        // A handle serves few lists; a caller that makes up new ones
        // without end does not grow this without bound.
        if r.len() >= 256 && !r.contains_key(&list) {
            r.clear();
        }
        r.insert(list, next);
    }

    pub(crate) fn session(&self) -> Result<Session> {
        Session::begin(&self.backend, &self.clock)
    }

    /// A convenience call: one edit of one step, or one member of a commit
    /// group ([`crate::group`]). If the step fails, its writes roll back and
    /// the raised high-water mark still commits. `f` may run more than once
    /// (a group whose pre-commit check refused another member runs the rest
    /// again) but only its last run can commit.
    pub(crate) fn one_step<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Session) -> Result<T> + Send,
    ) -> Result<T> {
        let r = match &self.group {
            Some(g) => g.run(&self.backend, &self.clock, f),
            None => self.session()?.single(f),
        };
        if r.is_ok() {
            self.after_write();
        }
        r
    }

    /// The fold a statistics read asks for before it reads: only when
    /// this handle has not folded for [`READ_FOLD_EVERY`]. A read adds the
    /// deltas not yet folded, so it is exact either way; a poller writes
    /// one short transaction (and its WAL flush) a second, not one a poll,
    /// and a read sums the deltas of about a second at most.
    pub(crate) fn fold_for_read(&self) -> Result<()> {
        self.fold(true)
    }

    /// A fold of the kept job counts
    /// ([`crate::store::Backend::fold_counts`]), skipped when `for_read`
    /// and this handle folded less than [`READ_FOLD_EVERY`] ago.
    fn fold(&self, for_read: bool) -> Result<()> {
        {
            let mut last = self.last_fold.lock().unwrap_or_else(|p| p.into_inner());
            if for_read && last.is_some_and(|t| t.elapsed() < READ_FOLD_EVERY) {
                return Ok(());
            }
            *last = Some(std::time::Instant::now());
        }
        self.backend.fold_counts()
    }

    /// One prune step in its own short transaction (never inside a commit
    /// group, so no worker's commit carries it).
    pub(crate) fn prune_step(&self, policy: &Retention, limit: usize) -> Result<PruneReport> {
        self.session()?
            .single(|s| crate::rules::prune(s, policy, limit))
    }

    /// The cadences of committed one-step calls: a fold of the kept job
    /// counts ([`crate::store::Backend::fold_counts`]) after every
    /// [`FOLD_EVERY`], so the changes a store keeps apart from its counts
    /// stay bounded with no statistics reader; and, with a retention
    /// policy, one bounded prune step after every [`AUTO_PRUNE_EVERY`], or
    /// every [`AUTO_PRUNE_CATCH_UP_EVERY`] while the last step hit its
    /// bound. Their failure (busy, a clock rollback, a server away) is not
    /// the caller's: the next turn tries again.
    fn after_write(&self) {
        let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        if n % FOLD_EVERY == 0 {
            let _ = self.fold(false);
        }
        let Some(policy) = &self.retention else {
            return;
        };
        let every = if self.prune_behind.load(Ordering::Relaxed) {
            AUTO_PRUNE_CATCH_UP_EVERY
        } else {
            AUTO_PRUNE_EVERY
        };
        if n % every == 0 {
            if let Ok(r) = self.prune_step(policy, PRUNE_STEP_ROWS) {
                self.prune_behind.store(r.more, Ordering::Relaxed);
            }
        }
    }

    /// A read-only snapshot; `now` is `max(clock, mark)` so an expired lease
    /// never looks alive again.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut dyn Txn, i64) -> Result<T>) -> Result<T> {
        self.read_from(self.backend.begin_read()?, f)
    }

    /// [`Inner::read`] in a snapshot that knows its event horizon
    /// ([`crate::store::Backend::begin_read_at_horizon`]).
    pub(crate) fn read_at_horizon<T>(
        &self,
        f: impl FnOnce(&mut dyn Txn, i64) -> Result<T>,
    ) -> Result<T> {
        self.read_from(self.backend.begin_read_at_horizon()?, f)
    }

    fn read_from<T>(
        &self,
        mut t: Box<dyn Txn>,
        f: impl FnOnce(&mut dyn Txn, i64) -> Result<T>,
    ) -> Result<T> {
        let mark = t.high_water()?;
        let now = self.now_in(t.as_mut())?.max(mark);
        let r = f(t.as_mut(), now);
        // Nothing read reaches the caller before it is durable.
        let settled = t.settle_snapshot();
        let _ = t.rollback();
        settled?;
        r
    }

    /// The clock reading and the durable high-water mark, unclamped.
    pub(crate) fn clock_reading(&self) -> Result<ClockReading> {
        let mut t = self.backend.begin_read()?;
        let mark = t.high_water()?;
        let now = self.now_in(t.as_mut())?;
        t.settle_snapshot()?;
        let _ = t.rollback();
        Ok(ClockReading {
            now_us: now,
            mark_us: mark,
            blocked: now < mark,
        })
    }

    /// The authority's clock: the server's when the backend has one, else
    /// the private clock.
    fn now_in(&self, t: &mut dyn Txn) -> Result<i64> {
        Ok(match t.server_now_us()? {
            Some(server) => server,
            None => self.clock.now_us(),
        })
    }
}
