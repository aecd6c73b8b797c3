//! Scheduling, back-off and hold limits (ABI 1.1; docs/design.md,
//! "Scheduling and hold limits"): the job options handle
//! `tenure_job_options` and submission with it, a production's back-off,
//! and a retryable failure that names its retry delay.
//!
//! Conversions only: a delay is the core's `Delay` (0 ..= 366 days), a
//! back-off the core's `Backoff::exponential`, and every rule about them
//! (a zero hold limit, due times, precedence of delays) is the core's.
//!
//! Why a handle and not a struct: a 1.1 struct of schedule fields would be
//! frozen for the whole major, and each field would need a sentinel for
//! "absent" next to the legitimate zero delay. A handle with setters says
//! "absent" by not calling the setter, refuses a bad value at the setter
//! that names it, and takes later job options as new setters without
//! touching `tenure_job_spec` (whose 1.0 layout never changes).

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};

use tenure::{Backoff, Delay, JobSpec};

use crate::authority::tenure_authority;
use crate::boundary::{boxed, invalid, Arg, R};
use crate::edit::tenure_edit;
use crate::lease::tenure_lease;
use crate::options::{tenure_job_spec, tenure_job_state, tenure_submitted};
use crate::status::tenure_status;
use crate::writer::{Alone, LeaseWriter, Writer};

/// A count of microseconds as the core's delay (`TENURE_INVALID_DURATION`
/// when negative or over 366 days).
pub(crate) fn delay(us: i64) -> R<Delay> {
    Delay::from_micros(us)
}

/// The core's exponential back-off from two counts of microseconds.
fn backoff(base_us: i64, cap_us: i64) -> R<Backoff> {
    Backoff::exponential(delay(base_us)?, delay(cap_us)?)
}

/// What a job is submitted with beyond its `tenure_job_spec`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Schedule {
    not_before: Option<Delay>,
    max_hold: Option<Delay>,
    backoff: Option<Backoff>,
}

impl Schedule {
    fn apply(self, mut spec: JobSpec) -> JobSpec {
        spec.not_before = self.not_before;
        spec.max_hold = self.max_hold;
        spec.backoff = self.backoff;
        spec
    }
}

/// Job options beyond `tenure_job_spec` (ABI 1.1): a not-before delay, a
/// hold limit and a retry back-off, each absent until its setter is called.
/// Made by `tenure_job_options_new()`, passed to `tenure_authority_submit_with()`
/// or `tenure_edit_submit_with()` (any number of times), freed with
/// `tenure_job_options_free()`. Later job options are new setters.
/// Thread-safe (internally locked).
pub struct tenure_job_options {
    inner: Mutex<Schedule>,
}

impl tenure_job_options {
    fn lock(&self) -> MutexGuard<'_, Schedule> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, f: impl FnOnce(&mut Schedule)) -> R {
        f(&mut self.lock());
        Ok(())
    }
}

export! {
    /// Make a job options handle with no option set (ABI 1.1): a job
    /// submitted with it is due at once, has no hold limit and no back-off
    /// of its own. `*out_options` receives a handle to free with
    /// `tenure_job_options_free()`.
    fn tenure_job_options_new() -> out_options: *mut *mut tenure_job_options =
        boxed(tenure_job_options { inner: Mutex::new(Schedule::default()) });

    /// Not claimable until `delay_us` after the submission is recorded (ABI
    /// 1.1): 0 ..= 31 622 400 000 000 (366 days; 0 means at once), else
    /// `TENURE_INVALID_DURATION` and the handle is unchanged. Not part of
    /// the job's content: resubmitting an existing job with another delay is
    /// `TENURE_SUBMITTED_EXISTING` and leaves its due time as it was.
    fn tenure_job_options_set_not_before(options: *mut tenure_job_options, delay_us: i64) = {
        let d = delay(delay_us)?;
        options.set(|s| s.not_before = Some(d))
    };

    /// Hard ownership limit per claim (ABI 1.1): no lease on the job lives
    /// past its claim time + `limit_us`; a renewal the limit stops is
    /// `TENURE_HOLD_LIMIT`. 0 ..= 366 days here (else
    /// `TENURE_INVALID_DURATION`, handle unchanged); a submission with 0 is
    /// refused by the core (`TENURE_INVALID_DURATION`: the limit must be
    /// positive). Part of the job's content.
    fn tenure_job_options_set_max_hold(options: *mut tenure_job_options, limit_us: i64) = {
        let d = delay(limit_us)?;
        options.set(|s| s.max_hold = Some(d))
    };

    /// The job's own retry back-off (ABI 1.1): after a retryable failure of
    /// attempt n that names no delay, the job is due after min(cap, base ×
    /// 2^(n-1)). `base_us` positive, `cap_us` ≥ `base_us`, both at most 366
    /// days, else `TENURE_INVALID_DURATION` and the handle is unchanged.
    /// Overrides the production's back-off. Part of the job's content.
    fn tenure_job_options_set_backoff(
        options: *mut tenure_job_options,
        base_us: i64,
        cap_us: i64,
    ) = {
        let b = backoff(base_us, cap_us)?;
        options.set(|s| s.backoff = Some(b))
    };

    /// Free a job options handle (NULL is a no-op). Jobs submitted with it keep
    /// their options.
    fn tenure_job_options_free(options: *mut tenure_job_options) = free;
}

/// The handle a setter changes (required).
impl<'a> Arg<'a> for *mut tenure_job_options {
    type Out = &'a tenure_job_options;
    unsafe fn read(self, name: &'static str) -> R<&'a tenure_job_options> {
        self.as_ref()
            .ok_or_else(|| invalid(format!("`{name}` must not be NULL")))
    }
}

/// The job options of a submission (optional: NULL is none).
impl Arg<'_> for *const tenure_job_options {
    type Out = Schedule;
    unsafe fn read(self, _: &'static str) -> R<Schedule> {
        Ok(self.as_ref().map(|o| *o.lock()).unwrap_or_default())
    }
}

writer! {
    /// A handle that sets a production's back-off.
    trait BackoffWriter {
        fn set_production_backoff(production: &str, backoff: Option<Backoff>) -> ();
    }
}

export! {
    /// Submit one job as `tenure_authority_submit()` does, with the options
    /// of `options` (ABI 1.1; NULL: none, exactly `tenure_authority_submit()`).
    /// The handle stays the caller's to free and is read only during the call.
    fn tenure_authority_submit_with(
        authority: *const tenure_authority,
        production: *const c_char,
        spec: *const tenure_job_spec,
        options: *const tenure_job_options,
    ) -> out_submitted: *mut tenure_submitted =
        tenure_submitted::from(Writer::submit(authority, production, &options.apply(spec))?);

    /// Set a production's default retry back-off (ABI 1.1): a retryable
    /// failure that names no delay, of a job without a back-off of its own,
    /// makes the job due again after min(`cap_us`, `base_us` × 2^(n-1)) for
    /// the failure of attempt n. `base_us` positive, `cap_us` ≥ `base_us`,
    /// both at most 366 days, else `TENURE_INVALID_DURATION`;
    /// `TENURE_NOT_FOUND` for an unknown production. Not an event; jobs
    /// already waiting keep their due time.
    fn tenure_authority_set_production_backoff(
        authority: *const tenure_authority,
        production: *const c_char,
        base_us: i64,
        cap_us: i64,
    ) = BackoffWriter::set_production_backoff(
        authority,
        production,
        Some(backoff(base_us, cap_us)?),
    );

    /// Remove a production's default retry back-off (ABI 1.1; no-op if it
    /// has none): its jobs without their own back-off are due at once after
    /// a retryable failure that names no delay.
    fn tenure_authority_clear_production_backoff(
        authority: *const tenure_authority,
        production: *const c_char,
    ) = BackoffWriter::set_production_backoff(authority, production, None);
}

export! {
    /// Submit one job with job options inside the edit (ABI 1.1; see
    /// `tenure_authority_submit_with()`).
    fn tenure_edit_submit_with(
        edit: *const tenure_edit,
        production: *const c_char,
        spec: *const tenure_job_spec,
        options: *const tenure_job_options,
    ) -> out_submitted: *mut tenure_submitted =
        tenure_submitted::from(Writer::submit(edit, production, &options.apply(spec))?);

    /// Set a production's back-off inside the edit (ABI 1.1; see
    /// `tenure_authority_set_production_backoff()`).
    fn tenure_edit_set_production_backoff(
        edit: *const tenure_edit,
        production: *const c_char,
        base_us: i64,
        cap_us: i64,
    ) = BackoffWriter::set_production_backoff(edit, production, Some(backoff(base_us, cap_us)?));

    /// Remove a production's back-off inside the edit (ABI 1.1; see
    /// `tenure_authority_clear_production_backoff()`).
    fn tenure_edit_clear_production_backoff(edit: *const tenure_edit, production: *const c_char) =
        BackoffWriter::set_production_backoff(edit, production, None);
}

export! {
    /// Report a retryable failure with a UTF-8 `reason` (at most 1024 bytes)
    /// and name when to retry (ABI 1.1): requested again, due `delay_us`
    /// after the failure is recorded (0 ..= 366 days; 0 means at once,
    /// whatever back-off the job or production has), if attempts remain;
    /// else failed. A delay out of range is `TENURE_INVALID_DURATION` and
    /// changes nothing. Closes the lease; `*out_state` receives the job's
    /// new state.
    fn tenure_lease_fail_retry_after(
        lease: *const tenure_lease,
        reason: *const c_char,
        delay_us: i64,
    ) -> out_state: *mut tenure_job_state = tenure_job_state::from(
        LeaseWriter::fail_retry_after(&Alone, &lease.lease, reason, delay(delay_us)?)?,
    );
}

export! {
    /// Fail a lease retryably with a retry delay inside the edit (ABI 1.1;
    /// see `tenure_lease_fail_retry_after()`); it closes when the edit
    /// commits.
    fn tenure_edit_fail_retry_after(
        edit: *const tenure_edit,
        lease: *const tenure_lease,
        reason: *const c_char,
        delay_us: i64,
    ) -> out_state: *mut tenure_job_state = tenure_job_state::from(
        LeaseWriter::fail_retry_after(edit, &lease.lease, reason, delay(delay_us)?)?,
    );
}
