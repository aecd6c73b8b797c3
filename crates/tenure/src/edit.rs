//! Explicit edits: several transitions in one write transaction.

use crate::authority::Inner;
use crate::error::{Error, Result};
use crate::lease::{lock, Lease, Shared};
use crate::model::{Cancelled, Execution, Fact, JobSpec, JobState, LeaseStatus, Submitted};
use crate::rules;
use crate::session::Session;
use crate::ttl::Ttl;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_EDIT: AtomicU64 = AtomicU64::new(1);

enum Effect {
    Activate(Shared),
    Expiry(Shared, i64),
    Close(Shared),
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
        let session = inner.session()?;
        Ok(Edit {
            inner,
            session: Some(session),
            id: NEXT_EDIT.fetch_add(1, Ordering::Relaxed),
            effects: Vec::new(),
        })
    }

    fn run<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
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

    /// Create a production (idempotent; `false` if it existed).
    pub fn create_production(&mut self, production: &str) -> Result<bool> {
        self.run(|s| rules::create_production(s, production))
    }

    /// Submit a job (see [`crate::Authority::submit`]).
    pub fn submit(&mut self, production: &str, spec: &JobSpec) -> Result<Submitted> {
        self.run(|s| rules::submit(s, production, spec))
    }

    /// Cancel a job (see [`crate::Authority::cancel`]).
    pub fn cancel(&mut self, production: &str, job: &str) -> Result<Cancelled> {
        self.run(|s| rules::cancel(s, production, job))
    }

    /// Cancel every non-terminal job of a production.
    pub fn cancel_production(&mut self, production: &str) -> Result<u64> {
        self.run(|s| rules::cancel_production(s, production))
    }

    fn pending(&mut self, m: rules::Minted) -> Lease {
        let lease = Lease::new(self.inner.clone(), m, LeaseStatus::Pending, self.id);
        self.effects.push(Effect::Activate(lease.local.clone()));
        lease
    }

    /// Claim a named job; the lease is pending until commit.
    pub fn claim(&mut self, production: &str, job: &str, holder: &str, ttl: Ttl) -> Result<Lease> {
        let m = self.run(|s| rules::claim(s, production, job, holder, ttl))?;
        Ok(self.pending(m))
    }

    /// Claim the next claimable job; the lease is pending until commit.
    pub fn claim_next(&mut self, production: &str, holder: &str, ttl: Ttl) -> Result<Lease> {
        match self.run(|s| rules::claim_next(s, production, holder, ttl))? {
            Some(m) => Ok(self.pending(m)),
            None => Err(Error::NoJobAvailable(format!(
                "nothing claimable in production {production:?}"
            ))),
        }
    }

    /// Renew a lease; its local expiry moves when the edit commits.
    pub fn renew(&mut self, lease: &Lease, ttl: Ttl) -> Result<()> {
        self.own(lease)?;
        let new = self.run(|s| rules::renew(s, &lease.key(), ttl))?;
        self.effects.push(Effect::Expiry(lease.local.clone(), new));
        Ok(())
    }

    /// Release a lease; it closes when the edit commits.
    pub fn release(&mut self, lease: &Lease) -> Result<JobState> {
        self.own(lease)?;
        let st = self.run(|s| rules::release(s, &lease.key()))?;
        self.effects.push(Effect::Close(lease.local.clone()));
        Ok(st)
    }

    /// Fail a lease; it closes when the edit commits.
    pub fn fail(&mut self, lease: &Lease, reason: &str, permanent: bool) -> Result<JobState> {
        self.own(lease)?;
        let st = self.run(|s| rules::fail(s, &lease.key(), reason, permanent))?;
        self.effects.push(Effect::Close(lease.local.clone()));
        Ok(st)
    }

    /// Complete with facts; it closes when the edit commits.
    pub fn complete(&mut self, lease: &Lease, facts: &[Fact]) -> Result<()> {
        self.own(lease)?;
        self.run(|s| rules::complete(s, &lease.key(), facts, None))?;
        self.effects.push(Effect::Close(lease.local.clone()));
        Ok(())
    }

    /// Complete as the reference executor (see [`Lease::complete_execution`]).
    pub fn complete_execution(
        &mut self,
        lease: &Lease,
        exec: &Execution,
        facts: &[Fact],
    ) -> Result<()> {
        self.own(lease)?;
        self.run(|s| rules::complete(s, &lease.key(), facts, Some(exec)))?;
        self.effects.push(Effect::Close(lease.local.clone()));
        Ok(())
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
                        Effect::Expiry(l, t) => lock(&l).expires_us = t,
                        Effect::Close(l) => lock(&l).status = LeaseStatus::Closed,
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
