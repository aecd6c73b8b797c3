//! Leases: the owning handle a claim returns.

use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::model::{Execution, Fact, JobState, LeaseStatus};
use crate::request::Applied;
use crate::rules::{LeaseKey, Minted};
use crate::secret::Secret;
use crate::session::Session;
use crate::token::{self, Token};
use crate::ttl::{Delay, Ttl};
use std::fmt;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

#[derive(Debug)]
pub(crate) struct Local {
    pub status: LeaseStatus,
    pub expires_us: i64,
    /// The edit that minted a pending lease (0 once active or if imported).
    pub edit: u64,
}

pub(crate) type Shared = Arc<Mutex<Local>>;

/// What a lease transition does to the lease's local state once it is
/// durable: a [`Lease`] settles at once, an [`crate::Edit`] when it commits.
pub(crate) enum Settle {
    /// A renewal: the new expiry.
    Expiry(i64),
    /// Release, fail or complete: the lease is closed.
    Close,
}

impl Settle {
    /// Apply to the lease's local state. A lease's committed renewals only
    /// ever move its expiry later, so the local expiry is the latest of
    /// those settled, whatever order their callers settle in (two renewals
    /// of one lease carried by one commit group wake together, and a
    /// replayed renewal answers with an expiry it recorded earlier).
    pub(crate) fn apply(self, local: &Shared) {
        let mut l = lock(local);
        match self {
            Settle::Expiry(t) => l.expires_us = l.expires_us.max(t),
            Settle::Close => l.status = LeaseStatus::Closed,
        }
    }
}

/// The lease transitions shared by [`Lease`] (one step each) and
/// [`crate::Edit`] (a step inside the edit): each is its rule call paired
/// with how it settles the lease's local state.
pub(crate) mod transitions {
    use super::Settle;
    use crate::error::Result;
    use crate::model::{Execution, Fact, JobState};
    use crate::request::Applied;
    use crate::rules::{self, LeaseKey};
    use crate::session::Session;
    use crate::ttl::{Delay, Ttl};

    /// One transition's outcome and how it settles the lease.
    pub(crate) type Settled<T> = Result<(Applied<T>, Settle)>;

    /// `replay`: answer a refusal with what this lease already recorded
    /// (docs/design.md, "Idempotent calls").
    pub(crate) fn renew_applied(
        s: &mut Session,
        k: &LeaseKey<'_>,
        ttl: Ttl,
        replay: bool,
    ) -> Settled<i64> {
        let a = rules::renew_applied(s, k, ttl, replay)?;
        Ok((a, Settle::Expiry(a.value)))
    }

    pub(crate) fn release_applied(
        s: &mut Session,
        k: &LeaseKey<'_>,
        replay: bool,
    ) -> Settled<JobState> {
        Ok((rules::release_applied(s, k, replay)?, Settle::Close))
    }

    pub(crate) fn fail_applied(
        s: &mut Session,
        k: &LeaseKey<'_>,
        reason: &str,
        permanent: bool,
        retry_after: Option<Delay>,
        replay: bool,
    ) -> Settled<JobState> {
        let a = rules::fail_applied(s, k, reason, permanent, retry_after, replay)?;
        Ok((a, Settle::Close))
    }

    pub(crate) fn complete_applied(
        s: &mut Session,
        k: &LeaseKey<'_>,
        facts: &[Fact],
        exec: Option<&Execution>,
        replay: bool,
    ) -> Settled<()> {
        Ok((
            rules::complete_applied(s, k, facts, exec, replay)?,
            Settle::Close,
        ))
    }

    fn plain<T>(r: Settled<T>) -> Result<(T, Settle)> {
        r.map(|(a, settle)| (a.value, settle))
    }

    pub(crate) fn renew(s: &mut Session, k: &LeaseKey<'_>, ttl: Ttl) -> Result<((), Settle)> {
        plain(renew_applied(s, k, ttl, false)).map(|(_, settle)| ((), settle))
    }

    pub(crate) fn release(s: &mut Session, k: &LeaseKey<'_>) -> Result<(JobState, Settle)> {
        plain(release_applied(s, k, false))
    }

    pub(crate) fn fail(
        s: &mut Session,
        k: &LeaseKey<'_>,
        reason: &str,
        permanent: bool,
        retry_after: Option<Delay>,
    ) -> Result<(JobState, Settle)> {
        plain(fail_applied(s, k, reason, permanent, retry_after, false))
    }

    pub(crate) fn complete(
        s: &mut Session,
        k: &LeaseKey<'_>,
        facts: &[Fact],
        exec: Option<&Execution>,
    ) -> Result<((), Settle)> {
        plain(complete_applied(s, k, facts, exec, false))
    }

    /// One outcome per lease of a batched transition.
    pub(crate) type Outcomes<T> = Result<Vec<Result<(T, Settle)>>>;

    fn settled<T, U>(
        r: Result<Vec<Result<Applied<T>>>>,
        settle: impl Fn(&T) -> Settle,
        value: impl Fn(Applied<T>) -> U,
    ) -> Outcomes<U> {
        Ok(r?
            .into_iter()
            .map(|x| x.map(|a| (settle(&a.value), value(a))).map(|(s, v)| (v, s)))
            .collect())
    }

    /// `replay`: each refused lease is answered with what it already
    /// recorded, as alone. `value` picks what a caller gets (the plain
    /// value, or the [`Applied`] outcome).
    pub(crate) fn renew_many<U>(
        s: &mut Session,
        keys: &[LeaseKey<'_>],
        ttl: Ttl,
        replay: bool,
        value: impl Fn(Applied<i64>) -> U,
    ) -> Outcomes<U> {
        let r = rules::transition_many_applied(
            s,
            keys,
            false,
            |_| Ok(()),
            |_, row, now, _| rules::renewed(row, now, ttl),
            replay.then_some(|_, t: &mut dyn crate::store::Txn, row: &_, now| {
                rules::renewal_replay(t, row, now, ttl)
            }),
        );
        settled(r, |e| Settle::Expiry(*e), value)
    }

    pub(crate) fn release_many<U>(
        s: &mut Session,
        keys: &[LeaseKey<'_>],
        replay: bool,
        value: impl Fn(Applied<JobState>) -> U,
    ) -> Outcomes<U> {
        let r = rules::transition_many_applied(
            s,
            keys,
            false,
            |_| Ok(()),
            |_, row, now, _| rules::released(row, now),
            replay.then_some(|_, t: &mut dyn crate::store::Txn, row: &_, _| {
                rules::release_replay(t, row)
            }),
        );
        settled(r, |_| Settle::Close, value)
    }

    /// `args[i]`: the reason and permanence for `keys[i]`. A batched
    /// failure names no retry delay: a retryable one is due after the
    /// job's or its production's back-off, like [`crate::Lease::fail`].
    pub(crate) fn fail_many<U>(
        s: &mut Session,
        keys: &[LeaseKey<'_>],
        args: &[(&str, bool)],
        replay: bool,
        value: impl Fn(Applied<JobState>) -> U,
    ) -> Outcomes<U> {
        let r = rules::transition_many_applied(
            s,
            keys,
            true,
            |i| crate::validate::reason(args[i].0),
            |i, row, now, p| rules::failed(row, now, args[i].0, args[i].1, None, p),
            replay.then_some(|i: usize, t: &mut dyn crate::store::Txn, row: &_, _| {
                rules::failure_replay(t, row, args[i].0, args[i].1, None)
            }),
        );
        settled(r, |_| Settle::Close, value)
    }

    /// `facts[i]`: the facts `keys[i]` publishes.
    pub(crate) fn complete_many<U>(
        s: &mut Session,
        keys: &[LeaseKey<'_>],
        facts: &[&[Fact]],
        replay: bool,
        value: impl Fn(Applied<()>) -> U,
    ) -> Outcomes<U> {
        let derive = s.txn.derives_provenance();
        let r = rules::transition_many_applied(
            s,
            keys,
            false,
            |i| rules::valid_completion(facts[i], None),
            |i, row, now, _| rules::completed(row, now, facts[i], None, derive),
            replay.then_some(|i: usize, t: &mut dyn crate::store::Txn, row: &_, _| {
                rules::completion_replay(t, row, facts[i], None)
            }),
        );
        settled(r, |_| Settle::Close, value)
    }
}

pub(crate) fn lock(l: &Shared) -> std::sync::MutexGuard<'_, Local> {
    l.lock().unwrap_or_else(|p| p.into_inner())
}

/// An owning, production-bound lease on one job.
///
/// It carries attribution (holder, claim ID, attempt), the expiry, a local
/// status, and the private secret, which never leaves it except through
/// [`Lease::export_token`]. `Debug` shows everything but the secret.
///
/// Every transition (renew, release, fail, complete) is checked by the store
/// under the writer lock; the local status only short-circuits uses of a
/// lease already known to be closed or still pending. A failed transition
/// leaves the local status unchanged: the next use asks the store again.
/// Dropping a lease frees memory only: it never writes, renews or releases.
///
/// `Lease` is `Send + Sync`: threads may share one (e.g. a heartbeat thread
/// renewing while the worker runs); the store serializes their transitions.
pub struct Lease {
    pub(crate) inner: Arc<Inner>,
    production: String,
    job: String,
    claim_id: Uuid,
    attempt: u32,
    holder: String,
    secret: Secret,
    pub(crate) local: Shared,
}

impl Lease {
    pub(crate) fn new(inner: Arc<Inner>, m: Minted, status: LeaseStatus, edit: u64) -> Lease {
        Lease {
            inner,
            production: m.production,
            job: m.job,
            claim_id: m.claim_id,
            attempt: m.attempt,
            holder: m.holder,
            secret: m.secret,
            local: Arc::new(Mutex::new(Local {
                status,
                expires_us: m.expires_us,
                edit,
            })),
        }
    }

    /// Production ID.
    pub fn production(&self) -> &str {
        &self.production
    }
    /// Job ID.
    pub fn job(&self) -> &str {
        &self.job
    }
    /// The public fencing token of this claim (a random UUIDv4).
    pub fn claim_id(&self) -> Uuid {
        self.claim_id
    }
    /// Which attempt this claim is (1-based).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
    /// The holder given at claim time.
    pub fn holder(&self) -> &str {
        &self.holder
    }
    /// Expiry as last confirmed by the store (µs since the epoch).
    pub fn expires_us(&self) -> i64 {
        lock(&self.local).expires_us
    }
    /// Local status: pending until its edit commits, closed after a
    /// successful release/fail/complete or a failed edit.
    pub fn status(&self) -> LeaseStatus {
        lock(&self.local).status
    }

    pub(crate) fn key(&self) -> LeaseKey<'_> {
        LeaseKey {
            production: &self.production,
            job: &self.job,
            claim_id: Some(self.claim_id),
            secret: &self.secret,
        }
    }

    /// Refuse a lease whose local status rules out a use outside edit `edit`
    /// (0 = a one-step call).
    pub(crate) fn usable_in(&self, edit: u64) -> Result<()> {
        let l = lock(&self.local);
        match l.status {
            LeaseStatus::Active => Ok(()),
            LeaseStatus::Pending if edit != 0 && l.edit == edit => Ok(()),
            LeaseStatus::Pending => Err(Error::LeasePending(format!(
                "the lease on {}/{} is pending until its edit commits",
                self.production, self.job
            ))),
            LeaseStatus::Closed => Err(Error::LeaseClosed(format!(
                "the lease on {}/{} is closed",
                self.production, self.job
            ))),
        }
    }

    /// How long a transition of this lease is retried while the store
    /// server is away: until the lease's expiry by the authority's clock
    /// ([`crate::retry::lease_budget`]).
    pub(crate) fn retry_budget(&self) -> std::time::Duration {
        let expires = lock(&self.local).expires_us;
        crate::retry::lease_budget(expires, self.inner.clock.now_us())
    }

    /// Run one transition as its own edit (or commit-group member) and
    /// settle the local state once the commit carrying it returned. When
    /// the connection to a store server breaks (or the server asks to try
    /// again), the call is retried until the lease expires
    /// ([`crate::retry`]), answering from what the lease recorded: with
    /// `replay`, also the first attempt does.
    fn transition<T: Send + Copy + 'static>(
        &self,
        replay: bool,
        f: impl Fn(&mut Session, &LeaseKey<'_>, bool) -> transitions::Settled<T> + Send + Sync,
    ) -> Result<Applied<T>> {
        self.transition_for(replay, || self.retry_budget(), f)
    }

    /// [`Lease::transition`], retried for at most `budget`.
    fn transition_for<T: Send + Copy + 'static>(
        &self,
        replay: bool,
        budget: impl FnOnce() -> std::time::Duration,
        f: impl Fn(&mut Session, &LeaseKey<'_>, bool) -> transitions::Settled<T> + Send + Sync,
    ) -> Result<Applied<T>> {
        self.usable_in(0)?;
        let key = self.key();
        let (out, settle) = crate::retry::idempotent_for(budget, |retry| {
            self.inner.one_step(|s| f(s, &key, replay || retry))
        })?;
        settle.apply(&self.local);
        Ok(out)
    }

    /// Extend the lease to `now + ttl`, capped at the claim time plus the
    /// job's hold limit if it has one ([`Lease::expires_us`] then tells the
    /// capped expiry). The new expiry must be later than the current one
    /// ([`Error::NotExtended`]; [`Error::HoldLimit`] when only the hold limit
    /// stops it) and the renewal must commit before the current expiry
    /// ([`Error::LeaseExpired`]).
    pub fn renew(&self, ttl: Ttl) -> Result<()> {
        self.transition(false, |s, k, r| transitions::renew_applied(s, k, ttl, r))
            .map(|_| ())
    }

    /// Give the job back unfinished: requested again (the attempt is not
    /// refunded; failed if it was the last). Closes the lease. Returns the
    /// job's new state.
    pub fn release(&self) -> Result<JobState> {
        self.release_applied(false).map(|a| a.value)
    }

    /// Report failure: requested again if `permanent` is false and attempts
    /// remain (due after the job's back-off step, else the production's,
    /// else at once), else failed. `reason` (≤ 1024 bytes) is recorded. Closes the lease.
    pub fn fail(&self, reason: &str, permanent: bool) -> Result<JobState> {
        self.fail_applied(reason, permanent, None, false)
            .map(|a| a.value)
    }

    /// Report a retryable failure and name when to retry: requested again,
    /// due `delay` after this failure is recorded (zero: at once, whatever
    /// back-off the job or production has), if attempts remain; else failed.
    /// Closes the lease.
    pub fn fail_retry_after(&self, reason: &str, delay: Delay) -> Result<JobState> {
        self.fail_applied(reason, false, Some(delay), false)
            .map(|a| a.value)
    }

    /// Complete the job, publishing `facts` and provenance in the same
    /// transaction. Closes the lease.
    pub fn complete(&self, facts: &[Fact]) -> Result<()> {
        self.complete_applied(facts, None, false).map(|a| a.value)
    }

    /// Complete as the reference executor: also consumes the execution nonce
    /// (reuse is a [`Error::Conflict`]) and records the output's path, digest,
    /// size and exit status as provenance.
    pub fn complete_execution(&self, exec: &Execution, facts: &[Fact]) -> Result<()> {
        self.complete_applied(facts, Some(exec), false)
            .map(|a| a.value)
    }

    /// Store `progress` (at most
    /// [`MAX_PROGRESS`](crate::validate::MAX_PROGRESS) bytes) as the job's
    /// progress checkpoint, which [`crate::JobView::progress`] shows and
    /// the job's next attempt reads ([`Lease::progress`]). Only the current
    /// lease may: a stale, expired or closed lease is refused as for any
    /// transition, and the checkpoint must commit before the lease expires.
    pub fn checkpoint(&self, progress: &[u8]) -> Result<()> {
        self.transition(false, |s, k, r| {
            let a = crate::rules::checkpoint_applied(s, k, progress, None, r)?;
            Ok((a, Settle::Expiry(i64::MIN)))
        })
        .map(|_| ())
    }

    /// [`Lease::renew`] and [`Lease::checkpoint`] in one transition: both
    /// or neither.
    pub fn renew_checkpoint(&self, ttl: Ttl, progress: &[u8]) -> Result<()> {
        self.transition(false, |s, k, r| {
            let a = crate::rules::checkpoint_applied(s, k, progress, Some(ttl), r)?;
            let exp = a.value.unwrap_or(i64::MIN);
            Ok((a, Settle::Expiry(exp)))
        })
        .map(|_| ())
    }

    /// The job's progress checkpoint as stored now: the latest one any of
    /// its leases wrote (an earlier attempt's, for a lease that has written
    /// none yet), `None` if none did.
    pub fn progress(&self) -> Result<Option<Vec<u8>>> {
        let (p, j) = (self.production.clone(), self.job.clone());
        self.inner.read(move |t, _| t.progress(&p, &j))
    }

    fn release_applied(&self, replay: bool) -> Result<Applied<JobState>> {
        self.transition(replay, transitions::release_applied)
    }

    fn fail_applied(
        &self,
        reason: &str,
        permanent: bool,
        retry_after: Option<Delay>,
        replay: bool,
    ) -> Result<Applied<JobState>> {
        self.transition(replay, |s, k, r| {
            transitions::fail_applied(s, k, reason, permanent, retry_after, r)
        })
    }

    fn complete_applied(
        &self,
        facts: &[Fact],
        exec: Option<&Execution>,
        replay: bool,
    ) -> Result<Applied<()>> {
        self.transition(replay, |s, k, r| {
            transitions::complete_applied(s, k, facts, exec, r)
        })
    }

    /// One idempotent renewal attempt, never retried here: the keeper's,
    /// which retries on its own schedule and must stay stoppable.
    pub(crate) fn renew_attempt(&self, ttl: Ttl) -> Result<()> {
        self.transition_for(
            true,
            || std::time::Duration::ZERO,
            |s, k, r| transitions::renew_applied(s, k, ttl, r),
        )
        .map(|_| ())
    }

    /// [`Lease::renew`] as an idempotent call: a renewal this lease already
    /// made to the expiry this one asks for (its answer was lost) is
    /// answered with that expiry and `replayed`, changing nothing. Returns
    /// the lease's expiry.
    pub fn renew_idempotent(&self, ttl: Ttl) -> Result<Applied<i64>> {
        self.transition(true, |s, k, r| transitions::renew_applied(s, k, ttl, r))
    }

    /// [`Lease::release`] as an idempotent call: if this lease already
    /// released the job, the state it left and `replayed`; nothing changes.
    pub fn release_idempotent(&self) -> Result<Applied<JobState>> {
        self.release_applied(true)
    }

    /// [`Lease::fail`] as an idempotent call: if this lease already failed
    /// the job with the same reason and permanence, the state it left and
    /// `replayed`; another reason or permanence is [`Error::Conflict`].
    pub fn fail_idempotent(&self, reason: &str, permanent: bool) -> Result<Applied<JobState>> {
        self.fail_applied(reason, permanent, None, true)
    }

    /// [`Lease::fail_retry_after`] as an idempotent call (see
    /// [`Lease::fail_idempotent`]; the retry delay must match too).
    pub fn fail_retry_after_idempotent(
        &self,
        reason: &str,
        delay: Delay,
    ) -> Result<Applied<JobState>> {
        self.fail_applied(reason, false, Some(delay), true)
    }

    /// [`Lease::complete`] as an idempotent call: if this lease already
    /// completed the job with the same facts, `replayed`; other facts are
    /// [`Error::Conflict`]. Nothing changes either way.
    pub fn complete_idempotent(&self, facts: &[Fact]) -> Result<Applied<()>> {
        self.complete_applied(facts, None, true)
    }

    /// [`Lease::complete_execution`] as an idempotent call (see
    /// [`Lease::complete_idempotent`]; the execution record must match too).
    pub fn complete_execution_idempotent(
        &self,
        exec: &Execution,
        facts: &[Fact],
    ) -> Result<Applied<()>> {
        self.complete_applied(facts, Some(exec), true)
    }

    /// A second handle on the same lease sharing its local state.
    pub(crate) fn twin(&self) -> Lease {
        Lease {
            inner: self.inner.clone(),
            production: self.production.clone(),
            job: self.job.clone(),
            claim_id: self.claim_id,
            attempt: self.attempt,
            holder: self.holder.clone(),
            secret: self.secret.clone(),
            local: self.local.clone(),
        }
    }

    /// Export the credential as a token for another process. Only an active
    /// lease can be exported; treat the token like a password.
    pub fn export_token(&self) -> Result<Token> {
        self.usable_in(0)?;
        Ok(token::encode(&self.production, &self.job, &self.secret))
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = lock(&self.local);
        f.debug_struct("Lease")
            .field("production", &self.production)
            .field("job", &self.job)
            .field("claim_id", &self.claim_id)
            .field("attempt", &self.attempt)
            .field("holder", &self.holder)
            .field("expires_us", &l.expires_us)
            .field("status", &l.status)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewals_settled_out_of_order_leave_the_latest_expiry() {
        let local: Shared = Arc::new(Mutex::new(Local {
            status: LeaseStatus::Active,
            expires_us: 100,
            edit: 0,
        }));
        Settle::Expiry(300).apply(&local);
        Settle::Expiry(200).apply(&local);
        assert_eq!(lock(&local).expires_us, 300);
    }
}
