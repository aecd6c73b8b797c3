//! Idempotent calls (ABI 1.1): claims under a request ID
//! (`tenure_claim_request`) and lease transitions that say whether they
//! were replays (docs/design.md, "Idempotent calls"). Each converts types
//! and maps errors; the rules are the core's.
//!
//! Every idempotent call of the ABI ends in `_idempotent`; the claims under
//! a request were released in 1.1 as `*_claim_with`, `*_claim_next_with`
//! and `*_claim_next_many_with`, names kept for 1.1 clients, and ABI 1.2
//! adds their `_idempotent` names as aliases of the same functions.

use std::ffi::c_char;

use tenure::{Applied, ClaimRequest, JobState, Lease, Ttl};

use crate::authority::tenure_authority;
use crate::batch::{out_array, status};
use crate::boundary::{boxed, out_arg, ttl, Arg, Handle, R};
use crate::edit::tenure_edit;
use crate::lease::tenure_lease;
use crate::options::{tenure_fact, tenure_job_state};
use crate::status::tenure_status;

/// A claim's request ID with the secret the claim will carry, generated in
/// this process when the handle is made (ABI 1.1). Pass the same handle to
/// retry a claim whose answer was lost. Thread-safe; the secret never
/// leaves it.
pub struct tenure_claim_request {
    inner: ClaimRequest,
}

impl Handle for tenure_claim_request {}

export! {
    /// Make a claim request (ABI 1.1): `request_id` is an ID like a job ID
    /// (`TENURE_INVALID_ARGUMENT` otherwise); a fresh secret is generated.
    /// `*out_request` receives a handle to free with
    /// `tenure_claim_request_free()`.
    fn tenure_claim_request_new(request_id: *const c_char)
        -> out_request: *mut *mut tenure_claim_request =
        boxed(tenure_claim_request { inner: ClaimRequest::new(request_id)? });

    /// Free a claim request (NULL is a no-op; ABI 1.1).
    fn tenure_claim_request_free(request: *mut tenure_claim_request) = free;
}

writer! {
    /// A handle that claims under request IDs.
    trait RequestWriter {
        fn claim_idempotent(
            production: &str, job: &str, holder: &str, ttl: Ttl, request: &ClaimRequest
        ) -> Applied<Lease>;
        fn claim_next_idempotent(
            production: &str, holder: &str, ttl: Ttl, request: &ClaimRequest
        ) -> Applied<Lease>;
        fn claim_next_many_idempotent(
            production: &str, holder: &str, ttl: Ttl, n: usize, request: &ClaimRequest
        ) -> Applied<Vec<R<Lease>>>;
    }
}

/// A claim under a request as the out-parameters of its export: the lease
/// and whether it was a replay.
fn claimed(got: Applied<Lease>) -> (*mut tenure_lease, bool) {
    (tenure_lease::boxed(got.value), got.replayed)
}

/// The one body of `claim_next_many_idempotent` on either handle (after the
/// export read the handle).
#[allow(clippy::too_many_arguments)] // the C parameters, in order
unsafe fn claim_next_many_idempotent(
    h: &impl RequestWriter,
    production: *const c_char,
    holder: *const c_char,
    ttl_us: i64,
    n: usize,
    request: *const tenure_claim_request,
    out_leases: *mut *mut tenure_lease,
    out_statuses: *mut tenure_status,
    out_count: *mut usize,
    out_replayed: *mut bool,
) -> R {
    let production = Arg::read(production, "production")?;
    let holder = Arg::read(holder, "holder")?;
    tenure::validate::batch(n)?;
    let r = Arg::read(request, "request")?;
    let leases = out_array(out_leases, n, "out_leases", false)?.unwrap_or_default();
    let statuses = out_array(out_statuses, n, "out_statuses", false)?.unwrap_or_default();
    let out_count = out_arg(out_count, "out_count")?;
    let out_replayed = out_arg(out_replayed, "out_replayed")?;
    let got = h.claim_next_many_idempotent(production, holder, ttl(ttl_us)?, n, &r.inner)?;
    let count = got.value.len();
    for ((slot, st), l) in leases.iter_mut().zip(statuses.iter_mut()).zip(got.value) {
        *st = status(&l);
        *slot = l.map_or(std::ptr::null_mut(), tenure_lease::boxed);
    }
    out_count.write(count);
    out_replayed.write(got.replayed);
    Ok(())
}

export! {
    /// Claim job `job` of `production` as `tenure_authority_claim()` does,
    /// under `request` (ABI 1.1). A retry with the same request handle
    /// answers with the same lease while that claim is current
    /// (`*out_replayed` true, nothing changes), else with that claim's own
    /// status (`TENURE_STALE_LEASE`, `TENURE_LEASE_EXPIRED`,
    /// `TENURE_LEASE_CLOSED`, `TENURE_CANCELLED`); the same request ID with
    /// another secret or other arguments is `TENURE_CONFLICT`. Retried
    /// automatically when the connection to a PostgreSQL server breaks.
    /// `*out_lease` receives an active lease to free with
    /// `tenure_lease_free()`.
    /// ABI 1.2 also names it `tenure_authority_claim_idempotent()`.
    fn tenure_authority_claim_with(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
    ) -> (out_lease: *mut *mut tenure_lease, out_replayed: *mut bool) = claimed(
        authority.claim_idempotent(production, job, holder, ttl(ttl_us)?, &request.inner)?,
    );

    /// Claim the next claimable job as `tenure_authority_claim_next()` does,
    /// under `request` (ABI 1.1; replays as `tenure_authority_claim_with()`).
    /// ABI 1.2 also names it `tenure_authority_claim_next_idempotent()`.
    fn tenure_authority_claim_next_with(
        authority: *const tenure_authority,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
    ) -> (out_lease: *mut *mut tenure_lease, out_replayed: *mut bool) = claimed(
        authority.claim_next_idempotent(production, holder, ttl(ttl_us)?, &request.inner)?,
    );

    /// Claim up to `n` (1 ..= 1000) jobs as
    /// `tenure_authority_claim_next_many()` does, under `request` (ABI 1.1):
    /// lease `i` carries a secret derived from the request's, so a retry
    /// with the same request handle answers with the same claims
    /// (`*out_replayed` true, nothing changes). `out_leases` and
    /// `out_statuses` are the caller's arrays of `n` slots: on `TENURE_OK`
    /// each slot below `*out_count` holds either `TENURE_OK` and a lease
    /// (free it with `tenure_lease_free()`) or, in a replay, that claim's own
    /// status (`TENURE_STALE_LEASE`, `TENURE_LEASE_EXPIRED`,
    /// `TENURE_LEASE_CLOSED`, `TENURE_CANCELLED`, `TENURE_NOT_FOUND` for a
    /// job deleted since) and NULL; slots from `*out_count` on are untouched.
    /// A fresh call's slots are all `TENURE_OK`; none claimable is
    /// `TENURE_OK` with `*out_count` 0 and leaves the request ID unused. The
    /// same request ID with another secret, other arguments (holder, TTL,
    /// `n`) or used by `tenure_authority_claim_with()` /
    /// `tenure_authority_claim_next_with()` is `TENURE_CONFLICT`. Retried
    /// automatically when the connection to a PostgreSQL server breaks.
    /// ABI 1.2 also names it `tenure_authority_claim_next_many_idempotent()`.
    fn tenure_authority_claim_next_many_with(
        authority: *const tenure_authority,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        n: usize,
        request: *const tenure_claim_request,
        out_leases: *mut *mut tenure_lease,
        out_statuses: *mut tenure_status,
        out_count: *mut usize,
        out_replayed: *mut bool,
    ) -> tenure_status {
        claim_next_many_idempotent(
            Arg::read(authority, "authority")?,
            production,
            holder,
            ttl_us,
            n,
            request,
            out_leases,
            out_statuses,
            out_count,
            out_replayed,
        )
    }

    /// `tenure_authority_claim_with()` under the name every idempotent call of the
    /// ABI ends in (ABI 1.2): the same function, same arguments, statuses
    /// and replays; a request used by one name is replayed by the other.
    fn tenure_authority_claim_idempotent(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
        out_lease: *mut *mut tenure_lease,
        out_replayed: *mut bool,
    ) -> tenure_status = alias tenure_authority_claim_with;

    /// `tenure_authority_claim_next_with()` under the name every idempotent call
    /// of the ABI ends in (ABI 1.2; see `tenure_authority_claim_idempotent()`).
    fn tenure_authority_claim_next_idempotent(
        authority: *const tenure_authority,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
        out_lease: *mut *mut tenure_lease,
        out_replayed: *mut bool,
    ) -> tenure_status = alias tenure_authority_claim_next_with;

    /// `tenure_authority_claim_next_many_with()` under the name every idempotent
    /// call of the ABI ends in (ABI 1.2; see
    /// `tenure_authority_claim_idempotent()`).
    fn tenure_authority_claim_next_many_idempotent(
        authority: *const tenure_authority,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        n: usize,
        request: *const tenure_claim_request,
        out_leases: *mut *mut tenure_lease,
        out_statuses: *mut tenure_status,
        out_count: *mut usize,
        out_replayed: *mut bool,
    ) -> tenure_status = alias tenure_authority_claim_next_many_with;
}

export! {
    /// Claim a job under `request` inside the edit (ABI 1.1; see
    /// `tenure_authority_claim_with()`): the lease is pending until the edit
    /// commits.
    /// ABI 1.2 also names it `tenure_edit_claim_idempotent()`.
    fn tenure_edit_claim_with(
        edit: *const tenure_edit,
        production: *const c_char,
        job: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
    ) -> (out_lease: *mut *mut tenure_lease, out_replayed: *mut bool) = claimed(
        edit.claim_idempotent(production, job, holder, ttl(ttl_us)?, &request.inner)?,
    );

    /// Claim the next job under `request` inside the edit (ABI 1.1; see
    /// `tenure_authority_claim_next_with()`): the lease is pending until the
    /// edit commits.
    /// ABI 1.2 also names it `tenure_edit_claim_next_idempotent()`.
    fn tenure_edit_claim_next_with(
        edit: *const tenure_edit,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
    ) -> (out_lease: *mut *mut tenure_lease, out_replayed: *mut bool) = claimed(
        edit.claim_next_idempotent(production, holder, ttl(ttl_us)?, &request.inner)?,
    );

    /// Claim up to `n` jobs under `request` inside the edit (ABI 1.1; see
    /// `tenure_authority_claim_next_many_with()`): the leases are pending
    /// until the edit commits.
    /// ABI 1.2 also names it `tenure_edit_claim_next_many_idempotent()`.
    fn tenure_edit_claim_next_many_with(
        edit: *const tenure_edit,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        n: usize,
        request: *const tenure_claim_request,
        out_leases: *mut *mut tenure_lease,
        out_statuses: *mut tenure_status,
        out_count: *mut usize,
        out_replayed: *mut bool,
    ) -> tenure_status {
        claim_next_many_idempotent(
            Arg::read(edit, "edit")?,
            production,
            holder,
            ttl_us,
            n,
            request,
            out_leases,
            out_statuses,
            out_count,
            out_replayed,
        )
    }

    /// `tenure_edit_claim_with()` under the name every idempotent call of the
    /// ABI ends in (ABI 1.2): the same function, same arguments, statuses
    /// and replays; a request used by one name is replayed by the other.
    fn tenure_edit_claim_idempotent(
        edit: *const tenure_edit,
        production: *const c_char,
        job: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
        out_lease: *mut *mut tenure_lease,
        out_replayed: *mut bool,
    ) -> tenure_status = alias tenure_edit_claim_with;

    /// `tenure_edit_claim_next_with()` under the name every idempotent call
    /// of the ABI ends in (ABI 1.2; see `tenure_edit_claim_idempotent()`).
    fn tenure_edit_claim_next_idempotent(
        edit: *const tenure_edit,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        request: *const tenure_claim_request,
        out_lease: *mut *mut tenure_lease,
        out_replayed: *mut bool,
    ) -> tenure_status = alias tenure_edit_claim_next_with;

    /// `tenure_edit_claim_next_many_with()` under the name every idempotent
    /// call of the ABI ends in (ABI 1.2; see
    /// `tenure_edit_claim_idempotent()`).
    fn tenure_edit_claim_next_many_idempotent(
        edit: *const tenure_edit,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        n: usize,
        request: *const tenure_claim_request,
        out_leases: *mut *mut tenure_lease,
        out_statuses: *mut tenure_status,
        out_count: *mut usize,
        out_replayed: *mut bool,
    ) -> tenure_status = alias tenure_edit_claim_next_many_with;
}

/// An idempotent transition that leaves a job state as the out-parameters
/// of its export: the state and whether it was a replay.
fn state_replayed(a: Applied<JobState>) -> (tenure_job_state, bool) {
    (tenure_job_state::from(a.value), a.replayed)
}

export! {
    /// Renew as `tenure_lease_renew()` does, as an idempotent call (ABI 1.1):
    /// a renewal this lease already made to the expiry this one asks for is a
    /// replay. `*out_expires_us` receives the lease's expiry, `*out_replayed`
    /// whether it was a replay.
    fn tenure_lease_renew_idempotent(lease: *const tenure_lease, ttl_us: i64)
        -> (out_expires_us: *mut i64, out_replayed: *mut bool) = {
        let a = lease.lease.renew_idempotent(ttl(ttl_us)?)?;
        (a.value, a.replayed)
    };

    /// Release as `tenure_lease_release()` does, as an idempotent call (ABI
    /// 1.1): if this lease already released the job, `*out_state` receives the
    /// state it left and `*out_replayed` is true.
    fn tenure_lease_release_idempotent(lease: *const tenure_lease)
        -> (out_state: *mut tenure_job_state, out_replayed: *mut bool) =
        state_replayed(lease.lease.release_idempotent()?);

    /// Fail as `tenure_lease_fail()` does, as an idempotent call (ABI 1.1): a
    /// failure this lease already recorded with the same reason and permanence
    /// is a replay; another reason or permanence is `TENURE_CONFLICT`.
    fn tenure_lease_fail_idempotent(
        lease: *const tenure_lease,
        reason: *const c_char,
        permanent: bool,
    ) -> (out_state: *mut tenure_job_state, out_replayed: *mut bool) =
        state_replayed(lease.lease.fail_idempotent(reason, permanent)?);

    /// Fail with a retry delay as `tenure_lease_fail_retry_after()` does, as an
    /// idempotent call (ABI 1.1): a failure this lease already recorded with
    /// the same reason and retry delay is a replay; another reason, a
    /// permanent failure or another delay is `TENURE_CONFLICT`.
    fn tenure_lease_fail_retry_after_idempotent(
        lease: *const tenure_lease,
        reason: *const c_char,
        delay_us: i64,
    ) -> (out_state: *mut tenure_job_state, out_replayed: *mut bool) = state_replayed(
        lease
            .lease
            .fail_retry_after_idempotent(reason, crate::schedule::delay(delay_us)?)?,
    );

    /// Complete as `tenure_lease_complete()` does, as an idempotent call (ABI
    /// 1.1): a completion this lease already made with the same facts (in any
    /// order) is a replay; other facts are `TENURE_CONFLICT`.
    fn tenure_lease_complete_idempotent(
        lease: *const tenure_lease,
        facts: *const tenure_fact,
        n_facts: usize,
    ) -> out_replayed: *mut bool = lease
        .lease
        .complete_idempotent(&crate::options::convert_facts(facts, n_facts)?)?
        .replayed;
}
