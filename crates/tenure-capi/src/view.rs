//! `tenure_job_view` and `tenure_job_list`: immutable snapshots of jobs,
//! read through accessors.

use std::ffi::{c_char, CString};

use tenure::{Backoff, JobView};

use crate::boundary::{cstring, opt_ptr, write_time, Handle};
use crate::options::tenure_job_state;

/// A snapshot of one job. Immutable; thread-safe to read.
pub struct tenure_job_view {
    production: CString,
    job: CString,
    state: tenure_job_state,
    attempts: u32,
    max_attempts: u32,
    priority: i32,
    holder: Option<CString>,
    claim_id: Option<CString>,
    expires_us: Option<i64>,
    created_us: i64,
    updated_us: i64,
    payload_len: u64,
    last_error: Option<CString>,
    due_us: Option<i64>,
    max_hold_us: Option<i64>,
    backoff: Option<Backoff>,
    progress: Option<Vec<u8>>,
}

impl tenure_job_view {
    pub(crate) fn new(v: &JobView) -> tenure_job_view {
        tenure_job_view {
            production: cstring(&v.production),
            job: cstring(&v.job),
            state: v.state.into(),
            attempts: v.attempts,
            max_attempts: v.max_attempts,
            priority: v.priority,
            holder: v.holder.as_deref().map(cstring),
            claim_id: v.claim_id.map(|c| cstring(&c.hyphenated().to_string())),
            expires_us: v.expires_us,
            created_us: v.created_us,
            updated_us: v.updated_us,
            payload_len: v.payload_len,
            last_error: v.last_error.as_deref().map(cstring),
            due_us: v.due_us,
            max_hold_us: v.max_hold_us,
            backoff: v.backoff,
            progress: v.progress.clone(),
        }
    }
}

impl Handle for tenure_job_view {}

export! {
    /// Free a job view (NULL is a no-op).
    fn tenure_job_view_free(view: *mut tenure_job_view) = free;
    /// Production ID (borrowed).
    fn tenure_job_view_production(v: *const tenure_job_view) -> *const c_char =
        value Some(v.production.as_ptr());
    /// Job ID (borrowed).
    fn tenure_job_view_job(v: *const tenure_job_view) -> *const c_char = value Some(v.job.as_ptr());
    /// Observed state, a `tenure_job_state` value (0 if `v` is NULL).
    fn tenure_job_view_state(v: *const tenure_job_view) -> u32 = value Some(v.state as u32);
    /// Claims made so far.
    fn tenure_job_view_attempts(v: *const tenure_job_view) -> u32 = value Some(v.attempts);
    /// Claims allowed.
    fn tenure_job_view_max_attempts(v: *const tenure_job_view) -> u32 = value Some(v.max_attempts);
    /// Priority.
    fn tenure_job_view_priority(v: *const tenure_job_view) -> i32 = value Some(v.priority);
    /// Holder of the latest claim (borrowed), or NULL if never claimed.
    fn tenure_job_view_holder(v: *const tenure_job_view) -> *const c_char =
        value Some(opt_ptr(&v.holder));
    /// Claim ID of the latest claim as 36-character UUID text (borrowed), or NULL.
    fn tenure_job_view_claim_id(v: *const tenure_job_view) -> *const c_char =
        value Some(opt_ptr(&v.claim_id));
    /// Expiry of the latest claim (µs since the epoch): returns true and writes
    /// `*out_us` if there is one, false (nothing written) otherwise.
    fn tenure_job_view_expires_us(v: *const tenure_job_view, out_us: *mut i64) -> bool =
        value write_time(out_us, v.expires_us);
    /// Submission time (µs since the epoch).
    fn tenure_job_view_created_us(v: *const tenure_job_view) -> i64 = value Some(v.created_us);
    /// Time of the latest change (µs since the epoch).
    fn tenure_job_view_updated_us(v: *const tenure_job_view) -> i64 = value Some(v.updated_us);
    /// Payload size in bytes.
    fn tenure_job_view_payload_len(v: *const tenure_job_view) -> u64 = value Some(v.payload_len);
    /// The reason given by the latest failure (borrowed), or NULL.
    fn tenure_job_view_last_error(v: *const tenure_job_view) -> *const c_char =
        value Some(opt_ptr(&v.last_error));
    /// Whether the view carries a progress checkpoint (ABI 1.2; only a
    /// single job's view does, listings never).
    fn tenure_job_view_has_progress(v: *const tenure_job_view) -> bool =
        value Some(v.progress.is_some());
    /// The progress checkpoint's bytes (ABI 1.2; borrowed, valid while the
    /// view lives; NULL without one).
    fn tenure_job_view_progress(v: *const tenure_job_view) -> *const u8 =
        value v.progress.as_ref().map(|p| p.as_ptr());
    /// The progress checkpoint's length in bytes (ABI 1.2; 0 without one).
    fn tenure_job_view_progress_len(v: *const tenure_job_view) -> usize =
        value Some(v.progress.as_ref().map_or(0, Vec::len));
    /// A requested job's not-before time (µs since the epoch; ABI 1.1): it
    /// is not claimable while the authority's clock reads earlier. Returns
    /// true and writes `*out_us` if the job has one, false (nothing
    /// written) once it is claimed, cancelled or was due at once.
    fn tenure_job_view_due_us(v: *const tenure_job_view, out_us: *mut i64) -> bool =
        value write_time(out_us, v.due_us);
    /// The job's hard per-claim ownership limit in µs (ABI 1.1): true and
    /// `*out_us` written if it has one, false otherwise.
    fn tenure_job_view_max_hold_us(v: *const tenure_job_view, out_us: *mut i64) -> bool =
        value write_time(out_us, v.max_hold_us);
    /// The first step (base) of the job's own retry back-off in µs (ABI
    /// 1.1): true and `*out_us` written if it has one, false otherwise.
    fn tenure_job_view_backoff_base_us(v: *const tenure_job_view, out_us: *mut i64) -> bool =
        value write_time(out_us, v.backoff.map(|b| b.base().as_micros()));
    /// The largest step (cap) of the job's own retry back-off in µs (ABI
    /// 1.1): true and `*out_us` written if it has one, false otherwise.
    fn tenure_job_view_backoff_cap_us(v: *const tenure_job_view, out_us: *mut i64) -> bool =
        value write_time(out_us, v.backoff.map(|b| b.cap().as_micros()));
}

list_handle! {
    /// One page of job views.
    pub struct tenure_job_list(Vec<tenure_job_view>) from JobView;
}

impl Handle for tenure_job_list {}

export! {
    /// Free a job list (NULL is a no-op); views obtained from it die with it.
    fn tenure_job_list_free(list: *mut tenure_job_list) = free;
    /// Number of jobs in the page.
    fn tenure_job_list_len(list: *const tenure_job_list) -> usize = value Some(list.items.len());
    /// The job view at `index` (borrowed from the list: do not free it), or
    /// NULL if out of range.
    fn tenure_job_list_get(list: *const tenure_job_list, index: usize) -> *const tenure_job_view =
        value list.items.get(index).map(|v| v as *const tenure_job_view);
}
