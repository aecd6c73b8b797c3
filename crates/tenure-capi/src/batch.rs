//! Batched calls (ABI 1.1): claim-next of many jobs and the lease
//! transitions of many leases in one operation, on an authority (one
//! transaction; one outcome per lease) or inside an edit (all or nothing).
//!
//! Every rule is the core's (`Authority::*_many`, `Edit::*_many`); this
//! module reads the C arrays, converts the items and writes the outcomes.
//! The caller's arrays are read and written only during the call and must
//! not be changed by another thread meanwhile; the handles in them keep
//! their own thread safety (`tenure_lease` is thread-safe).

use std::ffi::c_char;

use tenure::{Applied, Fact, JobState, Lease, Ttl};

use crate::authority::tenure_authority;
use crate::boundary::{out_arg, str_arg, ttl, R};
use crate::edit::tenure_edit;
use crate::lease::tenure_lease;
use crate::options::{convert_facts, tenure_fact, tenure_job_state};
use crate::status::tenure_status;

/// The most items a batched call takes (ABI 1.2 names it; every batch
/// holds 1 ..= this many, else `TENURE_INVALID_ARGUMENT`). A caller may
/// size an out array of a claim batch by the smaller of its `n` and this:
/// a larger `n` is refused before any array is touched.
pub const TENURE_MAX_BATCH: usize = 1000;
// The header's number is the core's rule.
const _: () = assert!(TENURE_MAX_BATCH == tenure::validate::MAX_BATCH);

writer! {
    /// A handle that runs the batched operations.
    trait BatchWriter {
        fn claim_next_many(production: &str, holder: &str, ttl: Ttl, n: usize) -> Vec<Lease>;
        fn renew_many(leases: &[&Lease], ttl: Ttl) -> Vec<R<()>>;
        fn release_many(leases: &[&Lease]) -> Vec<R<JobState>>;
        fn fail_many(items: &[(&Lease, &str, bool)]) -> Vec<R<JobState>>;
        fn complete_many(items: &[(&Lease, &[Fact])]) -> Vec<R<()>>;
    }
}

/// A C array of `n` items (`n` checked by the core's batch rule first, so
/// that a wrong `n` is reported as the batch size and no array of an
/// absurd length is formed). NULL is refused.
unsafe fn array<'a, T>(p: *const T, n: usize, name: &str) -> R<&'a [T]> {
    tenure::validate::batch(n)?;
    if p.is_null() {
        return Err(crate::boundary::invalid(format!(
            "`{name}` must not be NULL"
        )));
    }
    Ok(std::slice::from_raw_parts(p, n))
}

/// A writable C array of `n` items, or `None` for an optional NULL one.
pub(crate) unsafe fn out_array<'a, T>(
    p: *mut T,
    n: usize,
    name: &str,
    optional: bool,
) -> R<Option<&'a mut [T]>> {
    if p.is_null() {
        if optional {
            return Ok(None);
        }
        return Err(crate::boundary::invalid(format!(
            "`{name}` must not be NULL"
        )));
    }
    Ok(Some(std::slice::from_raw_parts_mut(p, n)))
}

/// The required per-lease status array of a transition batch.
unsafe fn statuses_out<'a>(p: *mut tenure_status, n: usize) -> R<&'a mut [tenure_status]> {
    Ok(out_array(p, n, "out_statuses", false)?.unwrap_or_default())
}

/// The leases of a batch: every handle pointer must be non-NULL.
unsafe fn leases<'a>(p: *const *const tenure_lease, n: usize) -> R<Vec<&'a Lease>> {
    array(p, n, "leases")?
        .iter()
        .enumerate()
        .map(|(i, l)| match l.as_ref() {
            Some(l) => Ok(&l.lease),
            None => Err(crate::boundary::invalid(format!(
                "`leases[{i}]` must not be NULL"
            ))),
        })
        .collect()
}

/// The status of one outcome (`TENURE_OK` or the item's error).
pub(crate) fn status<T>(r: &R<T>) -> tenure_status {
    match r {
        Ok(_) => tenure_status::TENURE_OK,
        Err(e) => tenure_status::from_code(e.code()),
    }
}

/// Writes one status per outcome, and (if asked for) `value` of each
/// accepted item to `values` (`none` for a refused one: the job's new state,
/// `TENURE_JOB_ANY`; an expiry, 0; a replayed flag, false).
fn write_outcomes<T: Copy, S: Copy>(
    done: &[R<T>],
    statuses: &mut [tenure_status],
    values: Option<&mut [S]>,
    none: S,
    value: impl Fn(T) -> S,
) -> R {
    if done.len() != statuses.len() {
        return Err(tenure::Error::Internal("a batch lost outcomes".into()));
    }
    for (s, r) in statuses.iter_mut().zip(done) {
        *s = status(r);
    }
    write_values(done, values, none, value);
    Ok(())
}

/// `value` of each accepted item to `values` if given, `none` for a
/// refused one.
fn write_values<T: Copy, S: Copy>(
    done: &[R<T>],
    values: Option<&mut [S]>,
    none: S,
    value: impl Fn(T) -> S,
) {
    for (s, r) in values.unwrap_or_default().iter_mut().zip(done) {
        *s = r.as_ref().map_or(none, |v| value(*v));
    }
}

/// The items of a `fail_many`: lease `i` with `reasons[i]` (UTF-8) and
/// `permanent[i]`.
unsafe fn fail_items<'a>(
    leases: *const *const tenure_lease,
    reasons: *const *const c_char,
    permanent: *const bool,
    n: usize,
) -> R<Vec<(&'a Lease, &'a str, bool)>> {
    let leases = self::leases(leases, n)?;
    let reasons = array(reasons, n, "reasons")?
        .iter()
        .enumerate()
        .map(|(i, r)| str_arg(*r, &format!("reasons[{i}]")))
        .collect::<R<Vec<&str>>>()?;
    let permanent = array(permanent, n, "permanent")?;
    Ok(leases
        .into_iter()
        .zip(reasons)
        .zip(permanent)
        .map(|((l, r), p)| (l, r, *p))
        .collect())
}

/// The job state of an accepted transition (`TENURE_JOB_ANY` for one that
/// leaves none to report).
const NO_STATE: tenure_job_state = tenure_job_state::TENURE_JOB_ANY;

// The caller's arrays and out-pointers of a batch are read by the body of
// its export, in the order each call checks them.
plain_args!(
    *const *const tenure_lease,
    *mut *mut tenure_lease,
    *const *const c_char,
    *const *const tenure_fact,
    *const bool,
    *const usize,
    *mut bool,
    *mut tenure_status,
    *mut tenure_job_state
);

/// The one body of `claim_next_many` on either handle.
unsafe fn claim_next_many(
    h: &impl BatchWriter,
    production: &str,
    holder: &str,
    ttl_us: i64,
    n: usize,
    out_leases: *mut *mut tenure_lease,
    out_count: *mut usize,
) -> R {
    tenure::validate::batch(n)?;
    let out_leases = out_array(out_leases, n, "out_leases", false)?.unwrap_or_default();
    let out_count = out_arg(out_count, "out_count")?;
    let got = h.claim_next_many(production, holder, ttl(ttl_us)?, n)?;
    let count = got.len();
    for (slot, l) in out_leases.iter_mut().zip(got) {
        *slot = tenure_lease::boxed(l);
    }
    out_count.write(count);
    Ok(())
}

/// The one body of `renew_many` on either handle.
unsafe fn renew_many(
    h: &impl BatchWriter,
    leases: *const *const tenure_lease,
    n: usize,
    ttl_us: i64,
    out_statuses: *mut tenure_status,
) -> R {
    let leases = self::leases(leases, n)?;
    let out = statuses_out(out_statuses, n)?;
    let done = h.renew_many(&leases, ttl(ttl_us)?)?;
    write_outcomes(&done, out, None, NO_STATE, |()| NO_STATE)
}

/// The one body of `release_many` on either handle.
unsafe fn release_many(
    h: &impl BatchWriter,
    leases: *const *const tenure_lease,
    n: usize,
    out_statuses: *mut tenure_status,
    out_states: *mut tenure_job_state,
) -> R {
    let leases = self::leases(leases, n)?;
    let out = statuses_out(out_statuses, n)?;
    let states = out_array(out_states, n, "out_states", true)?;
    let done = h.release_many(&leases)?;
    write_outcomes(&done, out, states, NO_STATE, tenure_job_state::from)
}

/// The one body of `fail_many` on either handle.
#[allow(clippy::too_many_arguments)] // the C parameters, in order
unsafe fn fail_many(
    h: &impl BatchWriter,
    leases: *const *const tenure_lease,
    reasons: *const *const c_char,
    permanent: *const bool,
    n: usize,
    out_statuses: *mut tenure_status,
    out_states: *mut tenure_job_state,
) -> R {
    let items = fail_items(leases, reasons, permanent, n)?;
    let out = statuses_out(out_statuses, n)?;
    let states = out_array(out_states, n, "out_states", true)?;
    let done = h.fail_many(&items)?;
    write_outcomes(&done, out, states, NO_STATE, tenure_job_state::from)
}

/// The one body of `complete_many` on either handle.
unsafe fn complete_many(
    h: &impl BatchWriter,
    leases: *const *const tenure_lease,
    facts: *const *const tenure_fact,
    n_facts: *const usize,
    n: usize,
    out_statuses: *mut tenure_status,
) -> R {
    let leases = self::leases(leases, n)?;
    let facts = batch_facts(facts, n_facts, n)?;
    let out = statuses_out(out_statuses, n)?;
    let done = h.complete_many(&complete_items(&leases, &facts))?;
    write_outcomes(&done, out, None, NO_STATE, |()| NO_STATE)
}

/// The facts of each lease of a `complete_many`: `facts` and `n_facts`
/// both NULL means no facts for any lease; otherwise both are arrays of
/// `n`, and `facts[i]` may be NULL when `n_facts[i]` is 0.
unsafe fn batch_facts(
    facts: *const *const tenure_fact,
    n_facts: *const usize,
    n: usize,
) -> R<Vec<Vec<Fact>>> {
    tenure::validate::batch(n)?;
    if facts.is_null() && n_facts.is_null() {
        return Ok(vec![Vec::new(); n]);
    }
    let facts = array(facts, n, "facts")?;
    let counts = array(n_facts, n, "n_facts")?;
    facts
        .iter()
        .zip(counts)
        .enumerate()
        .map(|(i, (f, c))| {
            convert_facts(*f, *c).map_err(|e| crate::boundary::invalid(format!("lease {i}: {e}")))
        })
        .collect()
}

/// The items of a `complete_many`: lease `i` with `facts[i]`.
fn complete_items<'a>(
    leases: &[&'a Lease],
    facts: &'a [Vec<Fact>],
) -> Vec<(&'a Lease, &'a [Fact])> {
    leases
        .iter()
        .zip(facts)
        .map(|(l, f)| (*l, f.as_slice()))
        .collect()
}

export! {
    /// Claim up to `n` (1 ..= 1000) jobs of a production in one transaction,
    /// in claim-next order, each with its own claim ID, secret and attempt
    /// (ABI 1.1). `out_leases` is the caller's array of `n` slots: on success
    /// the first `*out_count` receive active leases (each freed with
    /// `tenure_lease_free()`), the rest are untouched. Fewer jobs claimable
    /// than `n` gives fewer leases; none at all is `TENURE_OK` with
    /// `*out_count` 0 (not `TENURE_NO_JOB_AVAILABLE`).
    fn tenure_authority_claim_next_many(
        authority: *const tenure_authority,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        n: usize,
        out_leases: *mut *mut tenure_lease,
        out_count: *mut usize,
    ) = claim_next_many(authority, production, holder, ttl_us, n, out_leases, out_count);

    /// Renew `n` (1 ..= 1000) leases of this authority handle to now +
    /// `ttl_us` in one transaction (ABI 1.1). On `TENURE_OK` the call ran and
    /// `out_statuses` (the caller's array of `n`) holds each lease's outcome
    /// in order: `TENURE_OK` or the status the single call would return
    /// (`TENURE_STALE_LEASE`, `TENURE_LEASE_EXPIRED`, ...); a refused lease
    /// changed nothing. Any other return means the whole call failed and
    /// nothing changed (bad arguments, `TENURE_BUSY`, `TENURE_STORE`, ...).
    /// A lease of another authority handle, a closed lease and a second item
    /// on a job already in the batch are refused per lease. A NULL lease
    /// pointer is `TENURE_INVALID_ARGUMENT` for the whole call.
    fn tenure_authority_renew_many(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        n: usize,
        ttl_us: i64,
        out_statuses: *mut tenure_status,
    ) = renew_many(authority, leases, n, ttl_us, out_statuses);

    /// Release `n` (1 ..= 1000) leases in one transaction (ABI 1.1); outcomes
    /// as `tenure_authority_renew_many()`. `out_states` may be NULL; if
    /// given, an array of `n` receiving each released job's new state
    /// (`TENURE_JOB_ANY` for a refused lease).
    fn tenure_authority_release_many(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        n: usize,
        out_statuses: *mut tenure_status,
        out_states: *mut tenure_job_state,
    ) = release_many(authority, leases, n, out_statuses, out_states);

    /// Fail `n` (1 ..= 1000) leases in one transaction, lease `i` with UTF-8
    /// `reasons[i]` (at most 1024 bytes; a NULL or non-UTF-8 reason fails the
    /// whole call, an over-long one only its lease) and `permanent[i]` (ABI
    /// 1.1); outcomes and `out_states` as `tenure_authority_release_many()`.
    fn tenure_authority_fail_many(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        reasons: *const *const c_char,
        permanent: *const bool,
        n: usize,
        out_statuses: *mut tenure_status,
        out_states: *mut tenure_job_state,
    ) = fail_many(authority, leases, reasons, permanent, n, out_statuses, out_states);

    /// Complete `n` (1 ..= 1000) leases in one transaction, lease `i`
    /// publishing `n_facts[i]` facts from `facts[i]` (which may be NULL when
    /// `n_facts[i]` is 0; `facts` and `n_facts` may both be NULL for no facts
    /// at all) with its provenance (ABI 1.1). The accepted completions commit
    /// together; outcomes as `tenure_authority_renew_many()`. A fact with a
    /// NULL or non-UTF-8 key or value fails the whole call; a fact the rules
    /// refuse (reserved key, too long) refuses only its lease.
    fn tenure_authority_complete_many(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        facts: *const *const tenure_fact,
        n_facts: *const usize,
        n: usize,
        out_statuses: *mut tenure_status,
    ) = complete_many(authority, leases, facts, n_facts, n, out_statuses);
}

export! {
    /// Claim up to `n` jobs inside the edit (see
    /// `tenure_authority_claim_next_many()`); the leases are pending until
    /// the edit commits (ABI 1.1).
    fn tenure_edit_claim_next_many(
        edit: *const tenure_edit,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        n: usize,
        out_leases: *mut *mut tenure_lease,
        out_count: *mut usize,
    ) = claim_next_many(edit, production, holder, ttl_us, n, out_leases, out_count);

    /// Renew `n` leases inside the edit, all or nothing (ABI 1.1): if any
    /// lease is refused, the whole batch is undone (the edit stays usable)
    /// and the call returns that lease's status (the first in batch order);
    /// on `TENURE_OK` every `out_statuses[i]` is `TENURE_OK` and the expiries
    /// move when the edit commits.
    fn tenure_edit_renew_many(
        edit: *const tenure_edit,
        leases: *const *const tenure_lease,
        n: usize,
        ttl_us: i64,
        out_statuses: *mut tenure_status,
    ) = renew_many(edit, leases, n, ttl_us, out_statuses);

    /// Release `n` leases inside the edit, all or nothing as
    /// `tenure_edit_renew_many()` (ABI 1.1); they close when the edit commits.
    fn tenure_edit_release_many(
        edit: *const tenure_edit,
        leases: *const *const tenure_lease,
        n: usize,
        out_statuses: *mut tenure_status,
        out_states: *mut tenure_job_state,
    ) = release_many(edit, leases, n, out_statuses, out_states);

    /// Fail `n` leases inside the edit, all or nothing as
    /// `tenure_edit_renew_many()` (ABI 1.1); arguments as
    /// `tenure_authority_fail_many()`.
    fn tenure_edit_fail_many(
        edit: *const tenure_edit,
        leases: *const *const tenure_lease,
        reasons: *const *const c_char,
        permanent: *const bool,
        n: usize,
        out_statuses: *mut tenure_status,
        out_states: *mut tenure_job_state,
    ) = fail_many(edit, leases, reasons, permanent, n, out_statuses, out_states);

    /// Complete `n` leases inside the edit, all or nothing as
    /// `tenure_edit_renew_many()` (ABI 1.1); arguments as
    /// `tenure_authority_complete_many()`. The facts become visible with the
    /// commit.
    fn tenure_edit_complete_many(
        edit: *const tenure_edit,
        leases: *const *const tenure_lease,
        facts: *const *const tenure_fact,
        n_facts: *const usize,
        n: usize,
        out_statuses: *mut tenure_status,
    ) = complete_many(edit, leases, facts, n_facts, n, out_statuses);
}

// The batched transitions as idempotent calls (authority only: inside an
// edit nothing is acknowledged before the edit's own commit).

export! {
    /// Renew `n` leases as `tenure_authority_renew_many()` does, as an
    /// idempotent call (ABI 1.1): each lease is decided as
    /// `tenure_lease_renew_idempotent()` decides it. `out_expires_us` and
    /// `out_replayed` may be NULL; if given, arrays of `n` receiving each
    /// renewed lease's expiry and whether it was a replay (0 and false for a
    /// refused lease).
    fn tenure_authority_renew_many_idempotent(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        n: usize,
        ttl_us: i64,
        out_statuses: *mut tenure_status,
        out_expires_us: *mut i64,
        out_replayed: *mut bool,
    ) = {
        let leases = self::leases(leases, n)?;
        let out = statuses_out(out_statuses, n)?;
        let expires = out_array(out_expires_us, n, "out_expires_us", true)?;
        let replayed = out_array(out_replayed, n, "out_replayed", true)?;
        let done = authority
            .inner
            .renew_many_idempotent(&leases, ttl(ttl_us)?)?;
        write_applied(&done, out, replayed, expires, 0, |v| v)
    };

    /// Release `n` leases as `tenure_authority_release_many()` does, as an
    /// idempotent call (ABI 1.1): each lease is decided as
    /// `tenure_lease_release_idempotent()` decides it. `out_states` and
    /// `out_replayed` may be NULL; if given, arrays of `n` (`TENURE_JOB_ANY`
    /// and false for a refused lease).
    fn tenure_authority_release_many_idempotent(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        n: usize,
        out_statuses: *mut tenure_status,
        out_states: *mut tenure_job_state,
        out_replayed: *mut bool,
    ) = {
        let leases = self::leases(leases, n)?;
        states_applied(n, out_statuses, out_states, out_replayed, || {
            authority.inner.release_many_idempotent(&leases)
        })
    };

    /// Fail `n` leases as `tenure_authority_fail_many()` does, as an idempotent
    /// call (ABI 1.1): each lease is decided as `tenure_lease_fail_idempotent()`
    /// decides it. `out_states` and `out_replayed` may be NULL; if given,
    /// arrays of `n` (`TENURE_JOB_ANY` and false for a refused lease).
    fn tenure_authority_fail_many_idempotent(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        reasons: *const *const c_char,
        permanent: *const bool,
        n: usize,
        out_statuses: *mut tenure_status,
        out_states: *mut tenure_job_state,
        out_replayed: *mut bool,
    ) = {
        let items = fail_items(leases, reasons, permanent, n)?;
        states_applied(n, out_statuses, out_states, out_replayed, || {
            authority.inner.fail_many_idempotent(&items)
        })
    };

    /// Complete `n` leases as `tenure_authority_complete_many()` does, as an
    /// idempotent call (ABI 1.1): each lease is decided as
    /// `tenure_lease_complete_idempotent()` decides it (other facts than its
    /// lease recorded: `TENURE_CONFLICT` in its slot). `out_replayed` may be
    /// NULL; if given, an array of `n` (false for a refused lease).
    fn tenure_authority_complete_many_idempotent(
        authority: *const tenure_authority,
        leases: *const *const tenure_lease,
        facts: *const *const tenure_fact,
        n_facts: *const usize,
        n: usize,
        out_statuses: *mut tenure_status,
        out_replayed: *mut bool,
    ) = {
        let leases = self::leases(leases, n)?;
        let facts = batch_facts(facts, n_facts, n)?;
        let out = statuses_out(out_statuses, n)?;
        let replayed = out_array(out_replayed, n, "out_replayed", true)?;
        let done = authority
            .inner
            .complete_many_idempotent(&complete_items(&leases, &facts))?;
        write_applied(&done, out, replayed, None, NO_STATE, |()| NO_STATE)
    };
}

/// The out-arrays of an idempotent batch whose accepted items leave a job
/// state (release, fail), checked after the inputs and written from the
/// outcomes of `run`.
unsafe fn states_applied(
    n: usize,
    out_statuses: *mut tenure_status,
    out_states: *mut tenure_job_state,
    out_replayed: *mut bool,
    run: impl FnOnce() -> R<Vec<R<Applied<JobState>>>>,
) -> R {
    let out = statuses_out(out_statuses, n)?;
    let states = out_array(out_states, n, "out_states", true)?;
    let replayed = out_array(out_replayed, n, "out_replayed", true)?;
    let done = run()?;
    write_applied(
        &done,
        out,
        replayed,
        states,
        NO_STATE,
        tenure_job_state::from,
    )
}

/// [`write_outcomes`] of idempotent outcomes, plus each accepted item's
/// replayed flag to `replayed` if given (false for a refused one).
fn write_applied<T: Copy, S: Copy>(
    done: &[R<Applied<T>>],
    statuses: &mut [tenure_status],
    replayed: Option<&mut [bool]>,
    values: Option<&mut [S]>,
    none: S,
    value: impl Fn(T) -> S,
) -> R {
    write_outcomes(done, statuses, values, none, |a| value(a.value))?;
    write_values(done, replayed, false, |a| a.replayed);
    Ok(())
}
