//! Idempotent calls (ABI 1.1): claims under a request ID
//! (`tenure_claim_request`) and lease transitions that say whether they
//! were replays (docs/design.md, "Idempotent calls"). Each converts types
//! and maps errors; the rules are the core's.

use std::ffi::c_char;

use tenure::{Applied, ClaimRequest, JobState, Lease, Ttl};

use crate::authority::tenure_authority;
use crate::batch::{out_array, status};
use crate::boundary::{boundary, boxed, free_box, ttl, Arg, Handle, R};
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
}

/// Free a claim request (NULL is a no-op; ABI 1.1).
#[no_mangle]
pub unsafe extern "C" fn tenure_claim_request_free(request: *mut tenure_claim_request) {
    free_box(request)
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

/// The one body of a single claim under a request (`claim_idempotent`,
/// `claim_next_idempotent`, on an authority or inside an edit), after the export
/// read its handle and strings: reads the request and the out-parameters,
/// runs `claim` with the TTL and the request, writes the lease and the
/// replayed flag.
unsafe fn claim_one(
    ttl_us: i64,
    request: *const tenure_claim_request,
    out_lease: *mut *mut tenure_lease,
    out_replayed: *mut bool,
    claim: impl FnOnce(Ttl, &ClaimRequest) -> R<Applied<Lease>>,
) -> R {
    let r = Arg::read(request, "request")?;
    let (out_lease, out_replayed) = (arg_out!(out_lease), arg_out!(out_replayed));
    let got = claim(ttl(ttl_us)?, &r.inner)?;
    out_replayed.write(got.replayed);
    out_lease.write(tenure_lease::boxed(got.value));
    Ok(())
}

/// The exports of the claims under a request for the handle type `$ty`
/// (parameter `$h`), in header order, each with its own documentation.
macro_rules! request_claims {
    (
        $h:ident: $ty:ident;
        $(#[$with_doc:meta])* claim_idempotent: $with:ident;
        $(#[$next_doc:meta])* claim_next_idempotent: $next:ident;
        $(#[$many_doc:meta])* claim_next_many_idempotent: $many:ident;
    ) => {
        $(#[$with_doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $with(
            $h: *const $ty,
            production: *const c_char,
            job: *const c_char,
            holder: *const c_char,
            ttl_us: i64,
            request: *const tenure_claim_request,
            out_lease: *mut *mut tenure_lease,
            out_replayed: *mut bool,
        ) -> tenure_status {
            boundary(|| {
                let $h = Arg::read($h, stringify!($h))?;
                let (production, job) = (arg_str!(production), arg_str!(job));
                let holder = arg_str!(holder);
                claim_one(ttl_us, request, out_lease, out_replayed, |ttl, r| {
                    RequestWriter::claim_idempotent($h, production, job, holder, ttl, r)
                })
            })
        }

        $(#[$next_doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $next(
            $h: *const $ty,
            production: *const c_char,
            holder: *const c_char,
            ttl_us: i64,
            request: *const tenure_claim_request,
            out_lease: *mut *mut tenure_lease,
            out_replayed: *mut bool,
        ) -> tenure_status {
            boundary(|| {
                let $h = Arg::read($h, stringify!($h))?;
                let (production, holder) = (arg_str!(production), arg_str!(holder));
                claim_one(ttl_us, request, out_lease, out_replayed, |ttl, r| {
                    RequestWriter::claim_next_idempotent($h, production, holder, ttl, r)
                })
            })
        }

        $(#[$many_doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $many(
            $h: *const $ty,
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
            boundary(|| {
                let $h = Arg::read($h, stringify!($h))?;
                let (production, holder) = (arg_str!(production), arg_str!(holder));
                tenure::validate::batch(n)?;
                let r = Arg::read(request, "request")?;
                let leases = out_array(out_leases, n, "out_leases", false)?.unwrap_or_default();
                let statuses =
                    out_array(out_statuses, n, "out_statuses", false)?.unwrap_or_default();
                let (out_count, out_replayed) = (arg_out!(out_count), arg_out!(out_replayed));
                let got =
                    RequestWriter::claim_next_many_idempotent($h, production, holder, ttl(ttl_us)?, n, &r.inner)?;
                let count = got.value.len();
                for ((slot, st), l) in leases.iter_mut().zip(statuses.iter_mut()).zip(got.value) {
                    *st = status(&l);
                    *slot = l.map_or(std::ptr::null_mut(), tenure_lease::boxed);
                }
                out_count.write(count);
                out_replayed.write(got.replayed);
                Ok(())
            })
        }
    };
}

request_claims! {
    authority: tenure_authority;
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
    claim_idempotent: tenure_authority_claim_with;
    /// Claim the next claimable job as `tenure_authority_claim_next()` does,
    /// under `request` (ABI 1.1; replays as `tenure_authority_claim_with()`).
    claim_next_idempotent: tenure_authority_claim_next_with;
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
    claim_next_many_idempotent: tenure_authority_claim_next_many_with;
}

request_claims! {
    edit: tenure_edit;
    /// Claim a job under `request` inside the edit (ABI 1.1; see
    /// `tenure_authority_claim_with()`): the lease is pending until the edit
    /// commits.
    claim_idempotent: tenure_edit_claim_with;
    /// Claim the next job under `request` inside the edit (ABI 1.1; see
    /// `tenure_authority_claim_next_with()`): the lease is pending until the
    /// edit commits.
    claim_next_idempotent: tenure_edit_claim_next_with;
    /// Claim up to `n` jobs under `request` inside the edit (ABI 1.1; see
    /// `tenure_authority_claim_next_many_with()`): the leases are pending
    /// until the edit commits.
    claim_next_many_idempotent: tenure_edit_claim_next_many_with;
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

/// Fail with a retry delay as `tenure_lease_fail_retry_after()` does, as an
/// idempotent call (ABI 1.1): a failure this lease already recorded with
/// the same reason and retry delay is a replay; another reason, a
/// permanent failure or another delay is `TENURE_CONFLICT`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_fail_retry_after_idempotent(
    lease: *const tenure_lease,
    reason: *const c_char,
    delay_us: i64,
    out_state: *mut tenure_job_state,
    out_replayed: *mut bool,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let reason = arg_str!(reason);
        let (out_s, out_r) = (arg_out!(out_state), arg_out!(out_replayed));
        let delay = crate::schedule::delay(delay_us)?;
        state_out(
            l.lease.fail_retry_after_idempotent(reason, delay)?,
            out_s,
            out_r,
        )
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
