//! Idempotent calls (ABI 1.1): claims under a request ID
//! (`tenure_claim_request`) and lease transitions that say whether they
//! were replays (docs/design.md, "Idempotent calls"). Each converts types
//! and maps errors; the rules are the core's.

use std::ffi::c_char;

use tenure::{Applied, ClaimRequest, JobState};

use crate::authority::tenure_authority;
use crate::boundary::{boundary, boxed, free_box, Handle, R};
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
}

/// Free a claim request (NULL is a no-op; ABI 1.1).
#[no_mangle]
pub unsafe extern "C" fn tenure_claim_request_free(request: *mut tenure_claim_request) {
    free_box(request)
}

/// Write an applied lease to the out-parameters (both checked non-NULL).
unsafe fn lease_out(
    a: Applied<tenure::Lease>,
    out_lease: *mut *mut tenure_lease,
    out_replayed: *mut bool,
) -> R<()> {
    out_replayed.write(a.replayed);
    out_lease.write(tenure_lease::boxed(a.value));
    Ok(())
}

/// Claim job `job` of `production` as `tenure_authority_claim()` does,
/// under `request` (ABI 1.1). A retry with the same request handle answers
/// with the same lease while that claim is current (`*out_replayed` true,
/// nothing changes), else with that claim's own status
/// (`TENURE_STALE_LEASE`, `TENURE_LEASE_EXPIRED`, `TENURE_LEASE_CLOSED`,
/// `TENURE_CANCELLED`); the same request ID with another secret or other
/// arguments is `TENURE_CONFLICT`. Retried automatically when the
/// connection to a PostgreSQL server breaks. `*out_lease` receives an
/// active lease to free with `tenure_lease_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_claim_with(
    authority: *const tenure_authority,
    production: *const c_char,
    job: *const c_char,
    holder: *const c_char,
    ttl_us: i64,
    request: *const tenure_claim_request,
    out_lease: *mut *mut tenure_lease,
    out_replayed: *mut bool,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let (production, job, holder) = (arg_str!(production), arg_str!(job), arg_str!(holder));
        let r = arg_ref!(request);
        let (out_lease, out_replayed) = (arg_out!(out_lease), arg_out!(out_replayed));
        let ttl = crate::boundary::ttl(ttl_us)?;
        let got = a.inner.claim_with(production, job, holder, ttl, &r.inner)?;
        lease_out(got, out_lease, out_replayed)
    })
}

/// Claim the next claimable job as `tenure_authority_claim_next()` does,
/// under `request` (ABI 1.1; replays as `tenure_authority_claim_with()`).
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_claim_next_with(
    authority: *const tenure_authority,
    production: *const c_char,
    holder: *const c_char,
    ttl_us: i64,
    request: *const tenure_claim_request,
    out_lease: *mut *mut tenure_lease,
    out_replayed: *mut bool,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let (production, holder) = (arg_str!(production), arg_str!(holder));
        let r = arg_ref!(request);
        let (out_lease, out_replayed) = (arg_out!(out_lease), arg_out!(out_replayed));
        let ttl = crate::boundary::ttl(ttl_us)?;
        let got = a.inner.claim_next_with(production, holder, ttl, &r.inner)?;
        lease_out(got, out_lease, out_replayed)
    })
}

/// Renew as `tenure_lease_renew()` does, as an idempotent call (ABI 1.1):
/// a renewal this lease already made to the expiry this one asks for is a
/// replay. `*out_expires_us` receives the lease's expiry, `*out_replayed`
/// whether it was a replay.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_renew_idempotent(
    lease: *const tenure_lease,
    ttl_us: i64,
    out_expires_us: *mut i64,
    out_replayed: *mut bool,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let (out_e, out_r) = (arg_out!(out_expires_us), arg_out!(out_replayed));
        let a = l.lease.renew_idempotent(crate::boundary::ttl(ttl_us)?)?;
        out_e.write(a.value);
        out_r.write(a.replayed);
        Ok(())
    })
}

unsafe fn state_out(
    a: Applied<JobState>,
    out_state: *mut tenure_job_state,
    out_replayed: *mut bool,
) -> R<()> {
    out_state.write(tenure_job_state::from(a.value));
    out_replayed.write(a.replayed);
    Ok(())
}

/// Release as `tenure_lease_release()` does, as an idempotent call (ABI
/// 1.1): if this lease already released the job, `*out_state` receives the
/// state it left and `*out_replayed` is true.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_release_idempotent(
    lease: *const tenure_lease,
    out_state: *mut tenure_job_state,
    out_replayed: *mut bool,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let (out_s, out_r) = (arg_out!(out_state), arg_out!(out_replayed));
        state_out(l.lease.release_idempotent()?, out_s, out_r)
    })
}

/// Fail as `tenure_lease_fail()` does, as an idempotent call (ABI 1.1): a
/// failure this lease already recorded with the same reason and permanence
/// is a replay; another reason or permanence is `TENURE_CONFLICT`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_fail_idempotent(
    lease: *const tenure_lease,
    reason: *const c_char,
    permanent: bool,
    out_state: *mut tenure_job_state,
    out_replayed: *mut bool,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let reason = arg_str!(reason);
        let (out_s, out_r) = (arg_out!(out_state), arg_out!(out_replayed));
        state_out(l.lease.fail_idempotent(reason, permanent)?, out_s, out_r)
    })
}

/// Complete as `tenure_lease_complete()` does, as an idempotent call (ABI
/// 1.1): a completion this lease already made with the same facts (in any
/// order) is a replay; other facts are `TENURE_CONFLICT`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_complete_idempotent(
    lease: *const tenure_lease,
    facts: *const tenure_fact,
    n_facts: usize,
    out_replayed: *mut bool,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let out_r = arg_out!(out_replayed);
        let facts = crate::options::convert_facts(facts, n_facts)?;
        out_r.write(l.lease.complete_idempotent(&facts)?.replayed);
        Ok(())
    })
}
