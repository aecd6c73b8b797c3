//! One write transaction plus its clock bookkeeping.
//!
//! A session takes the writer lock when it begins. Every guarded transition
//! samples the private clock (the store's clock when the backend has one,
//! see [`Txn::server_now_us`]; otherwise the authority's clock) after that
//! (and is refused if the sample is below the high-water mark); commit
//! samples once more and checks every deadline the transitions registered
//! (a claim's new expiry, a renewal's previous expiry, the expiry of a lease
//! being released, failed or completed).
//!
//! Each operation runs inside a savepoint: if it fails, its writes are rolled
//! back but the session stays usable, and the time it sampled is kept so that
//! the raised high-water mark is still committed — by the session's commit,
//! or, if the session fails or is aborted, by a separate small transaction.
//!
//! A session also carries a commit group ([`crate::group`]): several
//! one-step calls, each a member in its own savepoint, all inside one outer
//! group savepoint, checked against one pre-commit sample
//! ([`Session::member`], [`Session::precommit_sample`], [`refusal`],
//! [`Session::restart`], [`Session::commit_group`]).

use crate::clock::Clock;
use crate::error::{Error, ErrorCode, Result};
use crate::store::{Backend, Txn};
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct Deadline {
    pub at_us: i64,
    pub what: Guarded,
}

/// What a deadline guards, put into words only when a commit is refused
/// for it: `"{lead} {production}/{job}{tail}"`, e.g. "the lease on p/j
/// being renewed".
#[derive(Clone)]
pub(crate) struct Guarded {
    pub lead: &'static str,
    pub production: String,
    pub job: String,
    pub tail: &'static str,
}

impl std::fmt::Display for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}/{}{}",
            self.lead, self.production, self.job, self.tail
        )
    }
}

/// What the pre-commit check of one group member needs to know.
pub(crate) struct Footprint {
    /// The member sampled the clock for a guarded transition and succeeded:
    /// the group's pre-commit sample is checked against it.
    pub guarded: bool,
    /// The running mark after the member: a pre-commit sample below it
    /// refuses the member with `clock_rollback`.
    pub mark: i64,
    /// The member's earliest deadline: a pre-commit sample at or after it
    /// refuses the member with `lease_expired`.
    pub deadline: Option<Deadline>,
}

/// The pre-commit verdict on one member of a group, with the same error a
/// one-operation commit gives (see [`Session::commit`]).
pub(crate) fn refusal(fp: &Footprint, pre: i64) -> Option<Error> {
    if !fp.guarded {
        return None;
    }
    if pre < fp.mark {
        return Some(Error::ClockRollback {
            now_us: pre,
            mark_us: fp.mark,
        });
    }
    match &fp.deadline {
        Some(d) if pre >= d.at_us => Some(expired(d, pre)),
        _ => None,
    }
}

fn expired(d: &Deadline, pre: i64) -> Error {
    Error::LeaseExpired(format!(
        "{} expires at {} µs, before the commit at {pre} µs",
        d.what, d.at_us
    ))
}

pub(crate) struct Session {
    pub(crate) txn: Box<dyn Txn>,
    backend: Arc<dyn Backend>,
    clock: Arc<dyn Clock>,
    /// The durable mark, read from the transaction when first needed
    /// ([`Session::stored_mark`]): a store that begins its transaction
    /// with its first locked read answers it from that read's request.
    stored_mark: Option<i64>,
    /// Running maximum of the stored mark (once read) and every accepted
    /// sample.
    mark: i64,
    /// Highest time observed by operations that failed (persisted even on abort).
    failed_mark: i64,
    /// A guarded operation succeeded: commit must re-sample and check deadlines.
    guarded: bool,
    deadlines: Vec<Deadline>,
    /// Productions where a committed step may have made work claimable:
    /// the commit rings their doorbell ([`Txn::notify_work`]).
    work: Vec<String>,
    poisoned: Option<Error>,
    finished: bool,
}

impl Session {
    /// Append an event of the production itself (no job): created,
    /// cancelled, paused, limited, slots dropped.
    pub(crate) fn production_event(
        &mut self,
        production: &str,
        kind: crate::model::EventKind,
        now: i64,
        detail: &str,
    ) -> Result<()> {
        self.txn.append_event(&crate::store::NewEvent {
            at_us: now,
            production,
            job: None,
            kind,
            state: None,
            claim_id: None,
            holder: None,
            attempt: None,
            expires_us: None,
            detail,
            since_us: None,
            lapsed_us: None,
        })
    }

    pub(crate) fn begin(backend: &Arc<dyn Backend>, clock: &Arc<dyn Clock>) -> Result<Session> {
        let txn = backend.begin_write()?;
        Ok(Session {
            txn,
            backend: backend.clone(),
            clock: clock.clone(),
            stored_mark: None,
            mark: i64::MIN,
            failed_mark: i64::MIN,
            guarded: false,
            deadlines: Vec::new(),
            work: Vec::new(),
            poisoned: None,
            finished: false,
        })
    }

    /// Sample the clock for a guarded transition: refused below the mark.
    pub(crate) fn guarded_sample(&mut self) -> Result<i64> {
        let now = match self.txn.server_now_us()? {
            Some(t) => t,
            None => self.clock.now_us(),
        };
        self.accept(now)?;
        Ok(now)
    }

    /// A guarded transition's first step, in which the store samples the
    /// clock after taking its row locks (see [`Txn::lock_jobs_sampled`]):
    /// `read` gets the transaction and the authority's clock sample when
    /// the store has no clock of its own, and returns the sample it used,
    /// which is then checked against the mark exactly as
    /// [`Session::guarded_sample`] checks its sample.
    pub(crate) fn sampled<T>(
        &mut self,
        read: impl FnOnce(&mut dyn Txn, Option<i64>) -> Result<T>,
        now_of: impl Fn(&T) -> i64,
    ) -> Result<T> {
        let local = (!self.txn.has_server_clock()).then(|| self.clock.now_us());
        let v = read(self.txn.as_mut(), local)?;
        self.accept(now_of(&v))?;
        Ok(v)
    }

    /// The durable mark, read once; the running marks are raised to it.
    fn stored_mark(&mut self) -> Result<i64> {
        if let Some(m) = self.stored_mark {
            return Ok(m);
        }
        let m = self.txn.high_water()?;
        self.stored_mark = Some(m);
        self.mark = self.mark.max(m);
        self.failed_mark = self.failed_mark.max(m);
        Ok(m)
    }

    fn accept(&mut self, now: i64) -> Result<()> {
        self.stored_mark()?;
        if now < self.mark {
            return Err(Error::ClockRollback {
                now_us: now,
                mark_us: self.mark,
            });
        }
        self.mark = now;
        self.guarded = true;
        Ok(())
    }

    /// Time for an unguarded write (submit, cancel): `max(now, mark)`.
    /// A server clock or a mark that cannot be read leaves the session
    /// poisoned (its commit fails) and reads as the mark known so far.
    pub(crate) fn observe_now(&mut self) -> i64 {
        let now = match self.txn.observed_now_us() {
            Ok(Some(t)) => Ok(t),
            Ok(None) => Ok(self.clock.now_us()),
            Err(e) => Err(e),
        };
        match now.and_then(|now| self.stored_mark().map(|_| now)) {
            Ok(now) => self.mark = self.mark.max(now),
            Err(e) => {
                self.poisoned.get_or_insert(e);
            }
        }
        self.mark
    }

    /// Register a time the commit must precede.
    pub(crate) fn deadline(&mut self, at_us: i64, what: Guarded) {
        self.deadlines.push(Deadline { at_us, what });
    }

    /// A rule's flag: this step may make a job of `production` claimable
    /// (a submission, a release, a retryable failure). If the step and the
    /// transaction commit, the commit rings the store's doorbell; never
    /// before (see [`crate::doorbell`]).
    pub(crate) fn work_ready(&mut self, production: &str) {
        if !self.work.iter().any(|p| p == production) {
            self.work.push(production.to_owned());
        }
    }

    /// Hand the doorbell flags to the transaction; every commit path runs
    /// this first, and the transaction rings (or notifies) only when its
    /// COMMIT succeeds.
    fn hand_over_work(&mut self) -> Result<()> {
        for p in std::mem::take(&mut self.work) {
            if let Err(e) = self.txn.notify_work(&p) {
                let _ = self.txn.rollback();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Run one operation inside a savepoint.
    pub(crate) fn op<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        if let Some(e) = &self.poisoned {
            return Err(e.clone());
        }
        if self.finished {
            return Err(Error::Internal("operation on a finished edit".into()));
        }
        if let Err(e) = self.txn.savepoint() {
            self.poisoned = Some(e.clone());
            return Err(e);
        }
        let guarded = self.guarded;
        let n_deadlines = self.deadlines.len();
        let n_work = self.work.len();
        match f(self) {
            Ok(v) => {
                if let Err(e) = self.txn.release_savepoint() {
                    self.poisoned = Some(e.clone());
                    return Err(e);
                }
                Ok(v)
            }
            Err(e) => {
                self.guarded = guarded;
                self.deadlines.truncate(n_deadlines);
                self.work.truncate(n_work);
                self.failed_mark = self.failed_mark.max(self.mark);
                if let Err(e2) = self.txn.rollback_to_savepoint() {
                    self.poisoned = Some(e2);
                } else if matches!(
                    e.code(),
                    ErrorCode::Busy | ErrorCode::Store | ErrorCode::Internal
                ) {
                    self.poisoned = Some(e.clone());
                }
                Err(e)
            }
        }
    }

    /// See [`Txn::settle_snapshot`].
    pub(crate) fn settle_snapshot(&mut self) -> Result<()> {
        self.txn.settle_snapshot()
    }

    /// Pre-commit sample, deadline checks, mark update, COMMIT. On any
    /// failure everything is rolled back and the observed mark is persisted.
    pub(crate) fn commit(mut self) -> Result<()> {
        self.finished = true;
        if let Some(e) = self.poisoned.take() {
            let _ = self.txn.rollback();
            self.persist_mark(self.failed_mark);
            return Err(e);
        }
        if let Err(e) = self.hand_over_work() {
            self.persist_mark(self.failed_mark.max(self.mark));
            return Err(e);
        }
        if self.guarded {
            crate::fault::stall_precommit();
            let first = self.deadlines.iter().map(|d| d.at_us).min();
            // A store with its own clock checks and commits in one request.
            match self.txn.commit_checked(self.mark, first) {
                Ok(None) => {}
                Ok(Some(Ok(()))) => return Ok(()),
                Ok(Some(Err(pre))) => {
                    let _ = self.txn.rollback();
                    let d = self.deadlines.iter().min_by_key(|d| d.at_us);
                    let e = match d {
                        Some(d) if pre >= self.mark => {
                            self.mark = pre;
                            expired(d, pre)
                        }
                        _ => Error::ClockRollback {
                            now_us: pre,
                            mark_us: self.mark,
                        },
                    };
                    self.persist_mark(self.mark);
                    return Err(e);
                }
                Err(e) => {
                    let _ = self.txn.rollback();
                    self.persist_mark(self.mark);
                    return Err(e);
                }
            }
            let pre = match self.txn.server_now_us() {
                Ok(Some(t)) => t,
                Ok(None) => self.clock.now_us(),
                Err(e) => {
                    let _ = self.txn.rollback();
                    self.persist_mark(self.mark);
                    return Err(e);
                }
            };
            if pre < self.mark {
                let e = Error::ClockRollback {
                    now_us: pre,
                    mark_us: self.mark,
                };
                let _ = self.txn.rollback();
                self.persist_mark(self.mark);
                return Err(e);
            }
            self.mark = pre;
            if let Some(d) = self.deadlines.iter().min_by_key(|d| d.at_us) {
                if pre >= d.at_us {
                    let e = expired(d, pre);
                    let _ = self.txn.rollback();
                    self.persist_mark(self.mark);
                    return Err(e);
                }
            }
        }
        let r = self.txn.commit_with_mark(self.raised_mark());
        if r.is_err() {
            let _ = self.txn.rollback();
        }
        r
    }

    /// The mark to write with the commit: the running mark, if it is above
    /// the durable one (never, if the session read no mark: it then
    /// accepted no sample).
    fn raised_mark(&self) -> Option<i64> {
        self.stored_mark
            .filter(|&m| self.mark > m)
            .map(|_| self.mark)
    }

    /// A convenience call: one edit of exactly one operation, without a
    /// savepoint. If the operation fails, the whole transaction rolls back
    /// and the time it observed is persisted by a separate small transaction.
    pub(crate) fn single<T>(mut self, f: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        match f(&mut self) {
            Ok(v) => {
                self.commit()?;
                Ok(v)
            }
            Err(e) => {
                self.failed_mark = self.failed_mark.max(self.mark);
                self.abort_in_place();
                Err(e)
            }
        }
    }

    /// Open the group savepoint that [`Session::restart`] rolls back to.
    pub(crate) fn open_group(&mut self) -> Result<()> {
        self.txn.savepoint()
    }

    /// Run one member of a group inside its own savepoint (see
    /// [`Session::op`]) and report what its pre-commit check needs.
    pub(crate) fn member<T>(
        &mut self,
        f: impl FnOnce(&mut Session) -> Result<T>,
    ) -> (Result<T>, Footprint) {
        let before = self.guarded;
        let n_deadlines = self.deadlines.len();
        self.guarded = false;
        let r = self.op(f);
        let guarded = r.is_ok() && self.guarded;
        self.guarded |= before;
        let deadline = self.deadlines[n_deadlines.min(self.deadlines.len())..]
            .iter()
            .min_by_key(|d| d.at_us)
            .cloned();
        let fp = Footprint {
            guarded,
            mark: self.mark,
            deadline,
        };
        (r, fp)
    }

    /// The error that left this session unusable, if any (`busy`, `store`,
    /// `internal`, or a failed savepoint statement).
    pub(crate) fn poisoned(&self) -> Option<Error> {
        self.poisoned.clone()
    }

    /// The group's one pre-commit sample, taken only if a guarded member
    /// succeeded (`None` otherwise, as a one-operation commit takes none).
    pub(crate) fn precommit_sample(&mut self) -> Result<Option<i64>> {
        if !self.guarded {
            return Ok(None);
        }
        crate::fault::stall_precommit();
        Ok(Some(match self.txn.server_now_us()? {
            Some(t) => t,
            None => self.clock.now_us(),
        }))
    }

    /// Record a time the group observed (its pre-commit sample): it is
    /// persisted whatever happens to the group.
    pub(crate) fn observed(&mut self, at_us: i64) {
        self.mark = self.mark.max(at_us);
        self.failed_mark = self.failed_mark.max(self.mark);
    }

    /// Undo every member of the group, keeping the transaction (and the
    /// writer lock): the remaining members run again from the time the
    /// group has observed so far, which the commit or an abort persists.
    pub(crate) fn restart(&mut self) -> Result<()> {
        self.failed_mark = self.failed_mark.max(self.mark);
        self.guarded = false;
        self.deadlines.clear();
        self.work.clear();
        let r = self
            .txn
            .rollback_to_savepoint()
            .and_then(|()| self.txn.savepoint());
        if let Err(e) = &r {
            self.poisoned = Some(e.clone());
        }
        r
    }

    /// Commit a group whose pre-commit checks passed: the mark (raised to
    /// the pre-commit sample) is written, then COMMIT.
    pub(crate) fn commit_group(mut self, pre: Option<i64>) -> Result<()> {
        self.finished = true;
        if let Some(e) = self.poisoned.take() {
            let _ = self.txn.rollback();
            self.persist_mark(self.failed_mark);
            return Err(e);
        }
        if let Err(e) = self.hand_over_work() {
            self.persist_mark(self.failed_mark);
            return Err(e);
        }
        if let Some(p) = pre {
            self.mark = self.mark.max(p);
        }
        let r = self.txn.commit_with_mark(self.raised_mark());
        if r.is_err() {
            let _ = self.txn.rollback();
        }
        r
    }

    /// Roll everything back; persist the time failed operations observed.
    pub(crate) fn abort(mut self) {
        self.abort_in_place();
    }

    fn abort_in_place(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let _ = self.txn.rollback();
        self.persist_mark(self.failed_mark);
    }

    fn persist_mark(&self, mark: i64) {
        // Every raise of the running marks reads the stored mark first.
        if self.stored_mark.is_none_or(|m| mark <= m) {
            return;
        }
        if let Ok(mut t) = self.backend.begin_write() {
            if t.set_high_water(mark).is_ok() {
                let _ = t.commit();
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.abort_in_place();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_deadline_names_what_it_guarded() {
        let what = Guarded {
            lead: "the lease on",
            production: "p".into(),
            job: "j".into(),
            tail: " being renewed",
        };
        let d = Deadline { at_us: 10, what };
        assert_eq!(
            expired(&d, 12).to_string(),
            Error::LeaseExpired(
                "the lease on p/j being renewed expires at 10 µs, before the commit at 12 µs"
                    .into()
            )
            .to_string()
        );
    }
}
