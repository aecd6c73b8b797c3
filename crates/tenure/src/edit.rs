//! Explicit edits: several transitions in one write transaction.

use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::lease::transitions::{self, Outcomes};
use crate::lease::{lock, Lease, Settle, Shared};
use crate::model::{Execution, Fact, JobState, LeaseStatus};
use crate::rules::{self, LeaseKey};
use crate::session::Session;
use crate::ttl::{Delay, Ttl};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_EDIT: AtomicU64 = AtomicU64::new(1);

/// What the edit does to its leases' local state when it commits.
enum Effect {
    /// A lease claimed in this edit becomes active.
    Activate(Shared),
    /// A transition of an existing lease settles.
    Settle(Shared, Settle),
}

/// One write transaction holding the store's writer lock until it commits
/// or aborts. Keep edits short.
///
/// Leases claimed in an edit are [`LeaseStatus::Pending`] until
/// [`Edit::commit`] succeeds; they can be used inside the same edit (claim
/// and complete atomically). If an operation fails, its own writes are
/// rolled back and the edit stays usable. If the commit fails (clock
/// rollback, a deadline passed, I/O), nothing is written, pending leases
/// close and existing leases keep their local status. Dropping an edit
/// without committing aborts it.
///
/// An edit is `Send` but not shared: use it from one thread at a time.
pub struct Edit {
    inner: Arc<Inner>,
    session: Option<Session>,
    id: u64,
    effects: Vec<Effect>,
}

impl Edit {
    pub(crate) fn begin(inner: Arc<Inner>) -> Result<Edit> {
        let mut session = inner.session()?;
        // What the edit reads reaches its caller before it ends.
        session.settle_snapshot()?;
        Ok(Edit {
            inner,
            session: Some(session),
            id: NEXT_EDIT.fetch_add(1, Ordering::Relaxed),
            effects: Vec::new(),
        })
    }

    /// One rule step inside this edit, in its own savepoint.
    fn step<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        match self.session.as_mut() {
            Some(s) => s.op(f),
            None => Err(Error::invalid("the edit has already finished")),
        }
    }

    fn own(&self, lease: &Lease) -> Result<()> {
        if !Arc::ptr_eq(&self.inner, &lease.inner) {
            return Err(Error::invalid(
                "the lease belongs to another authority handle",
            ));
        }
        lease.usable_in(self.id)
    }

    /// A claim made in an edit is pending until the edit commits.
    /// An edit is one transaction: nothing in it is retried.
    fn step_idempotent<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        self.step(f)
    }

    fn mint(&mut self, m: rules::Minted) -> Lease {
        let lease = Lease::new(self.inner.clone(), m, LeaseStatus::Pending, self.id);
        self.effects.push(Effect::Activate(lease.local.clone()));
        lease
    }

    /// A batched transition of many leases inside this edit: all or
    /// nothing. A lease this edit cannot use, or any lease the rules
    /// refuse, fails the whole step (its savepoint rolls back, the edit
    /// stays usable) with that lease's error; otherwise every lease settles
    /// when the edit commits.
    fn lease_batch<T>(
        &mut self,
        leases: &[&Lease],
        f: impl FnOnce(&mut Session, &[LeaseKey<'_>], &[usize], bool) -> Outcomes<T>,
    ) -> Result<Vec<Result<T>>> {
        crate::validate::batch(leases.len())?;
        for l in leases {
            self.own(l)?;
        }
        let keys: Vec<LeaseKey<'_>> = leases.iter().map(|l| l.key()).collect();
        let idx: Vec<usize> = (0..leases.len()).collect();
        let done = self.step(|s| {
            f(s, &keys, &idx, false)?
                .into_iter()
                .collect::<Result<Vec<_>>>()
        })?;
        let mut out = Vec::with_capacity(done.len());
        for (l, (v, settle)) in leases.iter().zip(done) {
            self.effects.push(Effect::Settle(l.local.clone(), settle));
            out.push(Ok(v));
        }
        Ok(out)
    }

    crate::ops::shared_operations!(mut);

    /// Run one transition of `lease` inside this edit; its local state
    /// settles when the edit commits.
    fn transition<T>(
        &mut self,
        lease: &Lease,
        f: impl FnOnce(&mut Session, &LeaseKey<'_>) -> Result<(T, Settle)>,
    ) -> Result<T> {
        self.own(lease)?;
        let key = lease.key();
        let (out, settle) = self.step(|s| f(s, &key))?;
        self.effects
            .push(Effect::Settle(lease.local.clone(), settle));
        Ok(out)
    }

    /// Renew a lease (see [`Lease::renew`]); its local expiry moves when the
    /// edit commits.
    pub fn renew(&mut self, lease: &Lease, ttl: Ttl) -> Result<()> {
        self.transition(lease, |s, k| transitions::renew(s, k, ttl))
    }

    /// Release a lease (see [`Lease::release`]); it closes when the edit commits.
    pub fn release(&mut self, lease: &Lease) -> Result<JobState> {
        self.transition(lease, transitions::release)
    }

    /// Fail a lease (see [`Lease::fail`]); it closes when the edit commits.
    pub fn fail(&mut self, lease: &Lease, reason: &str, permanent: bool) -> Result<JobState> {
        self.transition(lease, |s, k| {
            transitions::fail(s, k, reason, permanent, None)
        })
    }

    /// Fail a lease retryably with a retry delay (see
    /// [`Lease::fail_retry_after`]); it closes when the edit commits.
    pub fn fail_retry_after(
        &mut self,
        lease: &Lease,
        reason: &str,
        delay: Delay,
    ) -> Result<JobState> {
        self.transition(lease, |s, k| {
            transitions::fail(s, k, reason, false, Some(delay))
        })
    }

    /// Complete with facts (see [`Lease::complete`]); it closes when the
    /// edit commits.
    pub fn complete(&mut self, lease: &Lease, facts: &[Fact]) -> Result<()> {
        self.transition(lease, |s, k| transitions::complete(s, k, facts, None))
    }

    /// Complete as the reference executor (see [`Lease::complete_execution`]);
    /// it closes when the edit commits.
    pub fn complete_execution(
        &mut self,
        lease: &Lease,
        exec: &Execution,
        facts: &[Fact],
    ) -> Result<()> {
        self.transition(lease, |s, k| transitions::complete(s, k, facts, Some(exec)))
    }

    /// Commit: pre-commit clock sample and deadline checks, then COMMIT.
    /// On success pending leases become active and the others take their
    /// new expiry or close; on failure pending leases close.
    pub fn commit(mut self) -> Result<()> {
        let session = self
            .session
            .take()
            .ok_or_else(|| Error::invalid("the edit has already finished"))?;
        let effects = std::mem::take(&mut self.effects);
        match session.commit() {
            Ok(()) => {
                for e in effects {
                    match e {
                        Effect::Activate(l) => {
                            let mut l = lock(&l);
                            l.status = LeaseStatus::Active;
                            l.edit = 0;
                        }
                        Effect::Settle(l, settle) => settle.apply(&l),
                    }
                }
                Ok(())
            }
            Err(e) => {
                close_pending(effects);
                Err(e)
            }
        }
    }

    /// Roll everything back; pending leases close.
    pub fn abort(mut self) {
        self.abort_in_place();
    }

    fn abort_in_place(&mut self) {
        if let Some(s) = self.session.take() {
            s.abort();
        }
        close_pending(std::mem::take(&mut self.effects));
    }
}

fn close_pending(effects: Vec<Effect>) {
    for e in effects {
        if let Effect::Activate(l) = e {
            lock(&l).status = LeaseStatus::Closed;
        }
    }
}

impl Drop for Edit {
    fn drop(&mut self) {
        self.abort_in_place();
    }
}

impl fmt::Debug for Edit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Edit")
            .field("id", &self.id)
            .field("open", &self.session.is_some())
            .finish()
    }
}
