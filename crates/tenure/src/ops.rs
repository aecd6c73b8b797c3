//! The coordinator and claim operations that [`crate::Authority`] and
//! [`crate::Edit`] both offer, written once.
//!
//! [`shared_operations!`] expands inside each type's `impl` block. The type
//! supplies two private methods with its own receiver:
//!
//! - `step(f)`: run one rule step (`Authority`: a one-step edit;
//!   `Edit`: a savepoint inside the open edit);
//! - `mint(m)`: turn a minted claim into a [`crate::Lease`] (`Authority`:
//!   active; `Edit`: pending until the edit commits);
//! - `lease_batch(leases, f)`: run one batched transition of many leases
//!   (`Authority`: one step, one outcome per lease, each lease settling once
//!   the commit returned; `Edit`: all or nothing inside the edit).
//!
//! The macro's argument is the receiver's mutability: nothing for `&self`,
//! `mut` for `&mut self`.

use crate::error::{Error, Result};
use crate::rules::Minted;

/// `claim_next` found no claimable job: [`Error::NoJobAvailable`].
pub(crate) fn claimed_next(m: Option<Minted>, production: &str) -> Result<Minted> {
    m.ok_or_else(|| {
        Error::NoJobAvailable(format!("nothing claimable in production {production:?}"))
    })
}

macro_rules! shared_operations {
    ($($mut:tt)?) => {
        /// Create a production; `Ok(false)` if it already existed.
        pub fn create_production(&$($mut)? self, production: &str) -> $crate::Result<bool> {
            self.step(|s| $crate::rules::create_production(s, production))
        }

        /// Cancel every non-terminal job of a production and refuse new
        /// submissions to it. Returns how many jobs were cancelled.
        pub fn cancel_production(&$($mut)? self, production: &str) -> $crate::Result<u64> {
            self.step(|s| $crate::rules::cancel_production(s, production))
        }

        /// Set (`Some`) or clear (`None`) a production's default retry
        /// back-off: a retryable failure that names no delay, of a job
        /// without its own back-off, makes the job due again after the
        /// policy's step for the failed attempt. Not an event; jobs already
        /// waiting keep their due time.
        pub fn set_production_backoff(
            &$($mut)? self,
            production: &str,
            backoff: Option<$crate::Backoff>,
        ) -> $crate::Result<()> {
            self.step(|s| $crate::rules::set_production_backoff(s, production, backoff))
        }

        /// Pause a production: until it is resumed no claim of it
        /// succeeds (claim-next finds nothing, a named claim is
        /// [`Error::ProductionPaused`](crate::Error::ProductionPaused));
        /// submissions are accepted and leases already held keep working.
        /// `Ok(false)` if it was already paused.
        pub fn pause_production(&$($mut)? self, production: &str) -> $crate::Result<bool> {
            self.step(|s| $crate::gates::pause(s, production))
        }

        /// Resume a paused production; its waiters wake. `Ok(false)` if it
        /// was not paused.
        pub fn resume_production(&$($mut)? self, production: &str) -> $crate::Result<bool> {
            self.step(|s| $crate::gates::resume(s, production))
        }

        /// Set (`Some(k)`, 1 ..= [`MAX_GATE`](crate::MAX_GATE)) or clear
        /// (`None`) a production's concurrency limit: at most `k` of its
        /// leases live at once (a claim beyond it: claim-next finds
        /// nothing, a named claim is
        /// [`Error::ConcurrencyLimit`](crate::Error::ConcurrencyLimit)).
        /// Takes effect for every claim that commits after it; lowering it
        /// revokes no lease.
        pub fn set_concurrency_limit(
            &$($mut)? self,
            production: &str,
            limit: Option<u32>,
        ) -> $crate::Result<()> {
            self.step(|s| $crate::gates::set_concurrency(s, production, limit))
        }

        /// Set (`Some`) or clear (`None`) a production's rate limit (a
        /// claim beyond it: claim-next finds nothing, a named claim is
        /// [`Error::RateLimited`](crate::Error::RateLimited)). Setting a
        /// different limit starts it with a full burst.
        pub fn set_rate_limit(
            &$($mut)? self,
            production: &str,
            limit: Option<$crate::RateLimit>,
        ) -> $crate::Result<()> {
            self.step(|s| $crate::gates::set_rate(s, production, limit))
        }

        /// Submit a job. Same ID and same content (payload, priority,
        /// max_attempts, max_hold, backoff; not the not-before delay) is [`Submitted::Existing`](crate::Submitted::Existing);
        /// different content is [`Error::Conflict`](crate::Error::Conflict).
        /// The production must exist.
        pub fn submit(
            &$($mut)? self,
            production: &str,
            spec: &$crate::JobSpec,
        ) -> $crate::Result<$crate::Submitted> {
            self.step(|s| $crate::rules::submit(s, production, spec))
        }

        /// Coordinator cancel: any non-terminal job becomes `cancelled` and its
        /// lease, if any, is dead. Cancelling a cancelled job is a no-op; a
        /// completed or failed one is
        /// [`Error::JobTerminal`](crate::Error::JobTerminal).
        pub fn cancel(
            &$($mut)? self,
            production: &str,
            job: &str,
        ) -> $crate::Result<$crate::CancelOutcome> {
            self.step(|s| $crate::rules::cancel(s, production, job))
        }

        /// Put a failed (permanently, on its last attempt, or a lease that
        /// expired with none left) or cancelled job back to waiting, due
        /// after `delay` (zero: at once), with `extra` attempts (`None`: a
        /// fresh budget of its `max_attempts`; `Some(n)`: `n`, 1 ..= 1000,
        /// at most its `max_attempts`). Its events, facts and progress
        /// checkpoint stay; a lease of an earlier claim is stale.
        /// [`Error::JobLive`](crate::Error::JobLive) for a job that is
        /// waiting, claimed or expired with attempts left,
        /// [`Error::JobTerminal`](crate::Error::JobTerminal) for a completed
        /// one, [`Error::Cancelled`](crate::Error::Cancelled) in a cancelled
        /// production.
        pub fn requeue(
            &$($mut)? self,
            production: &str,
            job: &str,
            extra: Option<u32>,
            delay: $crate::Delay,
        ) -> $crate::Result<()> {
            self.step(|s| $crate::rules::requeue(s, production, job, extra, delay))
        }

        /// [`requeue`](Self::requeue) up to `limit` (1 ..=
        /// [`MAX_BATCH`](crate::validate::MAX_BATCH)) of the production's
        /// failed or cancelled jobs, by job ID. Answers how many were
        /// requeued and whether more remain.
        pub fn requeue_all(
            &$($mut)? self,
            production: &str,
            extra: Option<u32>,
            delay: $crate::Delay,
            limit: usize,
        ) -> $crate::Result<(u64, bool)> {
            self.step(|s| $crate::rules::requeue_all(s, production, extra, delay, limit))
        }

        /// Claim a named job for `ttl`. A lease claimed in an
        /// [`Edit`](crate::Edit) is
        /// [`LeaseStatus::Pending`](crate::LeaseStatus::Pending) until the
        /// edit commits.
        pub fn claim(
            &$($mut)? self,
            production: &str,
            job: &str,
            holder: &str,
            ttl: $crate::Ttl,
        ) -> $crate::Result<$crate::Lease> {
            let m = self.step(|s| $crate::rules::claim(s, production, job, holder, ttl))?;
            Ok(self.mint(m))
        }

        /// Claim the next claimable job of a production (highest priority,
        /// then oldest submission);
        /// [`Error::NoJobAvailable`](crate::Error::NoJobAvailable) when there
        /// is none. A lease claimed in an [`Edit`](crate::Edit) is
        /// [`LeaseStatus::Pending`](crate::LeaseStatus::Pending) until the
        /// edit commits.
        pub fn claim_next(
            &$($mut)? self,
            production: &str,
            holder: &str,
            ttl: $crate::Ttl,
        ) -> $crate::Result<$crate::Lease> {
            let m = self.step(|s| $crate::rules::claim_next(s, production, holder, ttl))?;
            let m = $crate::ops::claimed_next(m, production)?;
            Ok(self.mint(m))
        }

        /// [`claim`](Self::claim) under a request ID (see
        /// [`ClaimRequest`](crate::ClaimRequest)): a retry of the same
        /// request answers with the lease it made while that claim is
        /// current (`replayed`, nothing changes), else with that claim's
        /// own error; the same ID with another secret or other arguments is
        /// [`Error::Conflict`](crate::Error::Conflict). Retried
        /// automatically when the connection to a store server breaks.
        pub fn claim_idempotent(
            &$($mut)? self,
            production: &str,
            job: &str,
            holder: &str,
            ttl: $crate::Ttl,
            request: &$crate::ClaimRequest,
        ) -> $crate::Result<$crate::Applied<$crate::Lease>> {
            let a = self.step_idempotent(|s| {
                $crate::rules::claim_idempotent(s, production, job, holder, ttl, request)
            })?;
            Ok($crate::Applied { replayed: a.replayed, value: self.mint(a.value) })
        }

        /// [`claim_next`](Self::claim_next) under a request ID (see
        /// [`claim_idempotent`](Self::claim_idempotent)).
        pub fn claim_next_idempotent(
            &$($mut)? self,
            production: &str,
            holder: &str,
            ttl: $crate::Ttl,
            request: &$crate::ClaimRequest,
        ) -> $crate::Result<$crate::Applied<$crate::Lease>> {
            let a = self.step_idempotent(|s| {
                $crate::rules::claim_next_idempotent(s, production, holder, ttl, request)
            })?;
            let m = $crate::ops::claimed_next(a.value, production)?;
            Ok($crate::Applied { replayed: a.replayed, value: self.mint(m) })
        }

        /// Claim up to `n` (1 ..= [`MAX_BATCH`](crate::validate::MAX_BATCH))
        /// jobs of a production in one operation, in claim-next order, each
        /// with its own claim ID, secret and attempt. Fewer (possibly none:
        /// an empty list, not an error) when fewer are claimable.
        pub fn claim_next_many(
            &$($mut)? self,
            production: &str,
            holder: &str,
            ttl: $crate::Ttl,
            n: usize,
        ) -> $crate::Result<Vec<$crate::Lease>> {
            let ms =
                self.step(|s| $crate::rules::claim_next_many(s, production, holder, ttl, n))?;
            let mut out = Vec::with_capacity(ms.len());
            for m in ms {
                out.push(self.mint(m));
            }
            Ok(out)
        }

        /// [`claim_next_many`](Self::claim_next_many) under a request ID
        /// (see [`claim_idempotent`](Self::claim_idempotent)): claim `i` carries a
        /// secret derived in the client from the request's, so a retry with
        /// the same request answers with the same claims (`replayed`,
        /// nothing changes), each slot the claim while it is current, else
        /// that claim's own error. A fresh call's slots are all `Ok`; none
        /// claimable is an empty list and leaves the request ID unused. The
        /// same ID with another secret, other arguments (holder, TTL, `n`)
        /// or used by another kind of claim is
        /// [`Error::Conflict`](crate::Error::Conflict). Retried
        /// automatically when the connection to a store server breaks.
        pub fn claim_next_many_idempotent(
            &$($mut)? self,
            production: &str,
            holder: &str,
            ttl: $crate::Ttl,
            n: usize,
            request: &$crate::ClaimRequest,
        ) -> $crate::Result<$crate::Applied<Vec<$crate::Result<$crate::Lease>>>> {
            let a = self.step_idempotent(|s| {
                $crate::rules::claim_next_many_idempotent(s, production, holder, ttl, n, request)
            })?;
            let mut out = Vec::with_capacity(a.value.len());
            for m in a.value {
                out.push(match m {
                    Ok(m) => Ok(self.mint(m)),
                    Err(e) => Err(e),
                });
            }
            Ok($crate::Applied { replayed: a.replayed, value: out })
        }

        /// Renew many leases to `now + ttl` in one operation (each as
        /// [`Lease::renew`](crate::Lease::renew)). The outer error means
        /// nothing was done; otherwise one outcome per lease, in order.
        /// In an [`Edit`](crate::Edit): all or nothing, the first refusal
        /// is the error.
        pub fn renew_many(
            &$($mut)? self,
            leases: &[&$crate::Lease],
            ttl: $crate::Ttl,
        ) -> $crate::Result<Vec<$crate::Result<()>>> {
            self.lease_batch(leases, |s, keys, _, replay| {
                $crate::lease::transitions::renew_many(s, keys, ttl, replay, |_| ())
            })
        }

        /// Release many leases in one operation (each as
        /// [`Lease::release`](crate::Lease::release)); outcomes as
        /// [`renew_many`](Self::renew_many).
        pub fn release_many(
            &$($mut)? self,
            leases: &[&$crate::Lease],
        ) -> $crate::Result<Vec<$crate::Result<$crate::JobState>>> {
            self.lease_batch(leases, |s, keys, _, replay| {
                $crate::lease::transitions::release_many(s, keys, replay, |a| a.value)
            })
        }

        /// Fail many leases in one operation, each with its reason and
        /// permanence (as [`Lease::fail`](crate::Lease::fail)); outcomes as
        /// [`renew_many`](Self::renew_many).
        pub fn fail_many(
            &$($mut)? self,
            items: &[(&$crate::Lease, &str, bool)],
        ) -> $crate::Result<Vec<$crate::Result<$crate::JobState>>> {
            let leases: Vec<&$crate::Lease> = items.iter().map(|x| x.0).collect();
            self.lease_batch(&leases, |s, keys, idx, replay| {
                let args: Vec<(&str, bool)> = idx.iter().map(|&i| (items[i].1, items[i].2)).collect();
                $crate::lease::transitions::fail_many(s, keys, &args, replay, |a| a.value)
            })
        }

        /// Complete many leases in one operation, each publishing its facts
        /// and provenance (as [`Lease::complete`](crate::Lease::complete));
        /// the accepted completions commit together. Outcomes as
        /// [`renew_many`](Self::renew_many).
        pub fn complete_many(
            &$($mut)? self,
            items: &[(&$crate::Lease, &[$crate::Fact])],
        ) -> $crate::Result<Vec<$crate::Result<()>>> {
            let leases: Vec<&$crate::Lease> = items.iter().map(|x| x.0).collect();
            self.lease_batch(&leases, |s, keys, idx, replay| {
                let facts: Vec<&[$crate::Fact]> = idx.iter().map(|&i| items[i].1).collect();
                $crate::lease::transitions::complete_many(s, keys, &facts, replay, |_| ())
            })
        }
    };
}

pub(crate) use shared_operations;
