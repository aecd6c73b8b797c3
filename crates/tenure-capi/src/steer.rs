//! Requeue, progress checkpoints and claims across productions (ABI 1.2;
//! docs/design.md, "Requeue", "Progress checkpoints", "Claims across
//! productions"). Conversions only: every rule is the core's.

use std::ffi::c_char;

use crate::authority::tenure_authority;
use crate::batch::out_array;
use crate::boundary::{invalid, out_arg, str_arg, ttl, Arg, R};
use crate::lease::tenure_lease;
use crate::schedule::delay;
use crate::status::tenure_status;
use crate::wait::{micros, tenure_wait_cancel};

/// A requeue's attempts as C passes them: -1 is a fresh budget (the job's
/// `max_attempts`); any other value is the core's to check (1 ..= 1000).
fn extra(n: i64) -> R<Option<u32>> {
    match n {
        -1 => Ok(None),
        n => match u32::try_from(n) {
            Ok(v) => {
                tenure::validate::extra_attempts(v)?;
                Ok(Some(v))
            }
            Err(_) => Err(invalid(format!(
                "`extra_attempts` is {n}: -1 (a fresh budget) or 1 ..= 1000"
            ))),
        },
    }
}

/// The caller's progress bytes: `len` bytes at `p` (NULL only when `len`
/// is 0), refused beyond the core's bound before any slice is formed.
unsafe fn progress<'a>(p: *const u8, len: usize) -> R<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(invalid("`progress` is NULL but `len` is not 0"));
    }
    if len > tenure::validate::MAX_PROGRESS {
        return Err(invalid(format!(
            "a progress checkpoint is at most {} bytes, not {len}",
            tenure::validate::MAX_PROGRESS
        )));
    }
    Ok(std::slice::from_raw_parts(p, len))
}

/// The caller's list of `n` production IDs (UTF-8), 1 ..= 64 of them.
unsafe fn productions<'a>(p: *const *const c_char, n: usize) -> R<Vec<&'a str>> {
    if n == 0 || n > tenure::validate::MAX_PRODUCTIONS {
        return Err(invalid(format!(
            "a claim across productions takes 1 to {} productions, not {n}",
            tenure::validate::MAX_PRODUCTIONS
        )));
    }
    if p.is_null() {
        return Err(invalid("`productions` must not be NULL"));
    }
    std::slice::from_raw_parts(p, n)
        .iter()
        .enumerate()
        .map(|(i, s)| str_arg(*s, &format!("productions[{i}]")))
        .collect()
}

export! {
    /// Put a failed or cancelled job back to waiting (ABI 1.2), due
    /// `delay_us` (0 ..= 366 days) after the requeue, with `extra_attempts`
    /// attempts (1 ..= 1000, at most the job's `max_attempts`; -1: a fresh
    /// budget of `max_attempts`). Its events and progress checkpoint stay;
    /// a lease of an earlier claim is stale. `TENURE_JOB_LIVE` for a job
    /// that is waiting, claimed or expired with attempts left,
    /// `TENURE_JOB_TERMINAL` for a completed one, `TENURE_CANCELLED` in a
    /// cancelled production; nothing changes then.
    fn tenure_authority_requeue(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
        extra_attempts: i64,
        delay_us: i64,
    ) = authority
        .inner
        .requeue(production, job, extra(extra_attempts)?, delay(delay_us)?);

    /// `tenure_authority_requeue()` of up to `limit` (1 ..= 1000) of the
    /// production's failed or cancelled jobs, by job ID (ABI 1.2):
    /// `*out_requeued` receives how many were requeued, `*out_more` whether
    /// more remain (call again).
    fn tenure_authority_requeue_all(
        authority: *const tenure_authority,
        production: *const c_char,
        extra_attempts: i64,
        delay_us: i64,
        limit: usize,
    ) -> (out_requeued: *mut u64, out_more: *mut bool) = authority.inner.requeue_all(
        production,
        extra(extra_attempts)?,
        delay(delay_us)?,
        limit,
    )?;

    /// Store `len` bytes at `progress` (at most 4096; `progress` may be NULL
    /// when `len` is 0) as the job's progress checkpoint (ABI 1.2), which
    /// the job view shows and the job's next attempt reads. Only the current
    /// lease may: a stale, expired or closed lease is refused as for any
    /// transition (`TENURE_STALE_LEASE`, `TENURE_LEASE_EXPIRED`,
    /// `TENURE_LEASE_CLOSED`) and nothing is written.
    fn tenure_lease_checkpoint(lease: *const tenure_lease, progress: *const u8, len: usize) =
        lease.lease.checkpoint(self::progress(progress, len)?);

    /// `tenure_lease_renew()` and `tenure_lease_checkpoint()` in one
    /// transition (ABI 1.2): both or neither.
    fn tenure_lease_renew_checkpoint(
        lease: *const tenure_lease,
        ttl_us: i64,
        progress: *const u8,
        len: usize,
    ) = lease
        .lease
        .renew_checkpoint(ttl(ttl_us)?, self::progress(progress, len)?);

    /// Claim the next claimable job across `n_productions` distinct
    /// productions (1 ..= 64; ABI 1.2), rotating: this authority handle asks
    /// them in list order starting after the production that served its
    /// previous claim across the same list. `TENURE_NO_JOB_AVAILABLE` when
    /// none has one. `*out_lease` receives an active lease to free with
    /// `tenure_lease_free()`.
    fn tenure_authority_claim_next_across(
        authority: *const tenure_authority,
        productions: *const *const c_char,
        n_productions: usize,
        holder: *const c_char,
        ttl_us: i64,
    ) -> out_lease: *mut *mut tenure_lease = tenure_lease::boxed(
        authority.inner.claim_next_across(
            &self::productions(productions, n_productions)?,
            holder,
            ttl(ttl_us)?,
        )?,
    );

    /// Claim up to `n` (1 ..= 1000) jobs across `n_productions` distinct
    /// productions (1 ..= 64) in one transaction (ABI 1.2), shared out in
    /// rounds from this authority handle's rotation over the same list
    /// (see `tenure_authority_claim_next_across()`). `out_leases` is the
    /// caller's array of `n` slots: on success the first `*out_count`
    /// receive active leases (each freed with `tenure_lease_free()`), the
    /// rest are untouched. Fewer jobs claimable than `n` gives fewer leases;
    /// none at all is `TENURE_OK` with `*out_count` 0 (not
    /// `TENURE_NO_JOB_AVAILABLE`), as `tenure_authority_claim_next_many()`.
    fn tenure_authority_claim_next_many_across(
        authority: *const tenure_authority,
        productions: *const *const c_char,
        n_productions: usize,
        holder: *const c_char,
        ttl_us: i64,
        n: usize,
        out_leases: *mut *mut tenure_lease,
        out_count: *mut usize,
    ) -> tenure_status {
        let a = Arg::read(authority, "authority")?;
        let list = self::productions(productions, n_productions)?;
        let holder = Arg::read(holder, "holder")?;
        let ttl = ttl(ttl_us)?;
        tenure::validate::batch(n)?;
        let out_leases = out_array(out_leases, n, "out_leases", false)?.unwrap_or_default();
        let out_count = out_arg(out_count, "out_count")?;
        let got = a.inner.claim_next_many_across(&list, holder, ttl, n)?;
        let count = got.len();
        for (slot, l) in out_leases.iter_mut().zip(got) {
            *slot = tenure_lease::boxed(l);
        }
        out_count.write(count);
        Ok(())
    }

    /// `tenure_authority_claim_next_wait()` across productions (ABI 1.2):
    /// each attempt is a `tenure_authority_claim_next_across()`; the wait
    /// wakes on a commit that may have made work claimable in any of them.
    fn tenure_authority_claim_next_wait_across(
        authority: *const tenure_authority,
        productions: *const *const c_char,
        n_productions: usize,
        holder: *const c_char,
        ttl_us: i64,
        timeout_us: i64,
        cancel: *const tenure_wait_cancel,
        out_lease: *mut *mut tenure_lease,
    ) -> tenure_status {
        let a = Arg::read(authority, "authority")?;
        let list = self::productions(productions, n_productions)?;
        let holder = Arg::read(holder, "holder")?;
        let out = out_arg(out_lease, "out_lease")?;
        let ttl = ttl(ttl_us)?;
        let timeout = micros("a wait timeout", timeout_us)?;
        // Optional: NULL waits without a cancel handle.
        let cancel = cancel.as_ref().map(|c| &c.inner);
        let lease = a
            .inner
            .claim_next_wait_across(&list, holder, ttl, timeout, cancel)?;
        out.write(tenure_lease::boxed(lease));
        Ok(())
    }
}
