//! Enumerations, the size-versioned input structs with their `_init()`
//! functions, and their conversion to the core's types.

use std::ffi::{c_char, CStr};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tenure::{
    CancelOutcome, Fact, JobSpec, JobState, LeaseStatus, ListQuery, Options, Submitted, Synchronous,
};

use crate::boundary::{boxed, invalid, opt_str_arg, read_sized, str_arg, Arg, Handle, R};
use crate::status::tenure_status;

// ---------------------------------------------------------------------------
// Enumerations
// ---------------------------------------------------------------------------

/// A C enumeration with its conversions: `From` the core's enumeration
/// `$core` (each variant marked `<= CoreVariant`; an unmarked variant, like
/// `TENURE_JOB_ANY`, has no core counterpart), back with `to_core()`
/// (`None` for an unmarked variant), and from a number with `from_u32()`.
macro_rules! c_enum {
    (@core $core:ident) => { None };
    (@core $core:ident $from:ident) => { Some($core::$from) };
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $core:ident {
            $( $(#[$doc:meta])* $variant:ident = $n:literal $(<= $from:ident)?, )*
        }
    ) => {
        $(#[$meta])*
        #[repr(u32)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $( $(#[$doc])* $variant = $n, )*
        }

        impl From<$core> for $name {
            fn from(v: $core) -> $name {
                match v {
                    $($( $core::$from => $name::$variant, )?)*
                }
            }
        }

        #[allow(dead_code)] // not every enumeration is read from C
        impl $name {
            /// The value with number `n`, if there is one.
            pub(crate) fn from_u32(n: u32) -> Option<$name> {
                [$($name::$variant),*].into_iter().find(|v| *v as u32 == n)
            }

            /// The core's value (`None` for a value only C has).
            pub(crate) fn to_core(self) -> Option<$core> {
                match self {
                    $( $name::$variant => c_enum!(@core $core $($from)?), )*
                }
            }
        }
    };
}

c_enum! {
    /// A job's observed state. `TENURE_JOB_ANY` (0) is only meaningful as a
    /// listing filter.
    pub enum tenure_job_state: JobState {
        /// No filter (listing queries only).
        TENURE_JOB_ANY = 0,
        /// Waiting to be claimed.
        TENURE_JOB_REQUESTED = 1 <= Requested,
        /// Held by an unexpired lease.
        TENURE_JOB_CLAIMED = 2 <= Claimed,
        /// Claimed, but the lease expired; claimable again.
        TENURE_JOB_EXPIRED = 3 <= Expired,
        /// Completed; facts published.
        TENURE_JOB_COMPLETED = 4 <= Completed,
        /// Failed permanently or out of attempts.
        TENURE_JOB_FAILED = 5 <= Failed,
        /// Cancelled by a coordinator.
        TENURE_JOB_CANCELLED = 6 <= Cancelled,
    }
}

/// The names of the job state numbers, `TENURE_JOB_ANY` first.
const JOB_STATE_NAMES: [&CStr; 7] = [
    c"any",
    c"requested",
    c"claimed",
    c"expired",
    c"completed",
    c"failed",
    c"cancelled",
];

export! {
    /// A static name for a job state number (`"requested"`, ..., `"any"` for 0,
    /// `"unknown"` otherwise).
    fn tenure_job_state_name(state: u32) -> *const c_char = value Some(
        JOB_STATE_NAMES.get(state as usize).copied().unwrap_or(c"unknown").as_ptr(),
    );
}

c_enum! {
    /// Local status of a lease handle.
    pub enum tenure_lease_status: LeaseStatus {
        /// Minted in an edit that has not committed.
        TENURE_LEASE_STATUS_PENDING = 1 <= Pending,
        /// Committed; usable until it expires or is ended.
        TENURE_LEASE_STATUS_ACTIVE = 2 <= Active,
        /// Ended by a successful release/fail/complete, or its edit failed.
        TENURE_LEASE_STATUS_CLOSED = 3 <= Closed,
    }
}

c_enum! {
    /// Outcome of an idempotent submission.
    pub enum tenure_submitted: Submitted {
        /// The job was new.
        TENURE_SUBMITTED_CREATED = 1 <= Created,
        /// The same job with the same content existed; nothing changed.
        TENURE_SUBMITTED_EXISTING = 2 <= Existing,
    }
}

c_enum! {
    /// Outcome of a job cancel.
    pub enum tenure_cancelled: CancelOutcome {
        /// The job moved to cancelled now.
        TENURE_CANCELLED_NOW = 1 <= Cancelled,
        /// It already was cancelled; nothing changed.
        TENURE_CANCELLED_ALREADY = 2 <= AlreadyCancelled,
    }
}

c_enum! {
    /// SQLite `synchronous` setting of `tenure_open_options`.
    pub enum tenure_synchronous: Synchronous {
        /// `synchronous=FULL` (the default).
        TENURE_SYNCHRONOUS_FULL = 0 <= Full,
        /// `synchronous=NORMAL`.
        TENURE_SYNCHRONOUS_NORMAL = 1 <= Normal,
    }
}

// ---------------------------------------------------------------------------
// Input structs (defined at the crate root: see `c_structs.rs`)
// ---------------------------------------------------------------------------

pub use crate::{tenure_fact, tenure_job_spec, tenure_list_query, tenure_open_options};

export! {
    /// Fill `*options` with the defaults and the current `struct_size`.
    fn tenure_open_options_init() -> options: *mut tenure_open_options = tenure_open_options {
        struct_size: std::mem::size_of::<tenure_open_options>(),
        synchronous: tenure_synchronous::TENURE_SYNCHRONOUS_FULL as u32,
        busy_timeout_us: 5_000_000,
    };

    /// Fill `*spec` with the defaults (job NULL, empty payload, priority 0,
    /// max_attempts 3) and the current `struct_size`.
    fn tenure_job_spec_init() -> spec: *mut tenure_job_spec = tenure_job_spec {
        struct_size: std::mem::size_of::<tenure_job_spec>(),
        job: std::ptr::null(),
        payload: std::ptr::null(),
        payload_len: 0,
        priority: 0,
        max_attempts: tenure::DEFAULT_MAX_ATTEMPTS,
    };

    /// Fill `*query` with the defaults (any state, from the start, page 100)
    /// and the current `struct_size`.
    fn tenure_list_query_init() -> query: *mut tenure_list_query = tenure_list_query {
        struct_size: std::mem::size_of::<tenure_list_query>(),
        state: tenure_job_state::TENURE_JOB_ANY as u32,
        after: std::ptr::null(),
        limit: 0,
    };
}

// ---------------------------------------------------------------------------
// The options handle (ABI 1.1)
// ---------------------------------------------------------------------------

/// Store options as a handle (ABI 1.1), for the options
/// `tenure_open_options` has no field for: made by `tenure_options_new()`
/// from a `tenure_open_options` (or the defaults), changed by the
/// `tenure_options_set_*()` functions, passed to
/// `tenure_authority_open_with()` (any number of times) and freed with
/// `tenure_options_free()`. Later options are new setters, so nothing about
/// the handle changes for old callers. Thread-safe (internally locked).
pub struct tenure_options {
    inner: Mutex<Options>,
}

impl Handle for tenure_options {}

impl tenure_options {
    fn lock(&self) -> MutexGuard<'_, Options> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The options as they stand.
    pub(crate) fn get(&self) -> Options {
        self.lock().clone()
    }

    pub(crate) fn set(&self, f: impl FnOnce(Options) -> Options) -> R {
        let mut o = self.lock();
        *o = f(o.clone());
        Ok(())
    }
}

export! {
    /// Make an options handle (ABI 1.1) holding the settings of `*base`
    /// (validated as `tenure_authority_open()` does), or the defaults when
    /// `base` is NULL; group commit starts on. `*out_options` receives a
    /// handle to free with `tenure_options_free()`.
    fn tenure_options_new(base: *const tenure_open_options)
        -> out_options: *mut *mut tenure_options =
        boxed(tenure_options { inner: Mutex::new(base) });

    /// Group commit (ABI 1.1; on by default): with it on, one-step calls
    /// that threads make at the same time through one authority handle of a
    /// SQLite store share one write transaction and one commit, each with
    /// its own checks and outcome, and each returns only after that commit;
    /// off, every call is its own transaction. Explicit edits and
    /// PostgreSQL stores are never grouped (docs/design.md, "Group commit").
    fn tenure_options_set_group_commit(options: *mut tenure_options, on: bool) =
        options.set(|o| o.group_commit(on));

    /// Free an options handle (NULL is a no-op). Authorities opened with it are
    /// not affected.
    fn tenure_options_free(options: *mut tenure_options) = free;
}

// ---------------------------------------------------------------------------
// Conversion to the core's types
// ---------------------------------------------------------------------------

impl Arg<'_> for *const tenure_job_spec {
    type Out = JobSpec;
    unsafe fn read(self, _: &'static str) -> R<JobSpec> {
        job_spec(self)
    }
}

impl Arg<'_> for *const tenure_list_query {
    type Out = ListQuery;
    unsafe fn read(self, _: &'static str) -> R<ListQuery> {
        list_query(self)
    }
}

/// Open options: NULL is the defaults.
impl Arg<'_> for *const tenure_open_options {
    type Out = Options;
    unsafe fn read(self, _: &'static str) -> R<Options> {
        open_options(self)
    }
}

/// Facts are read with their count, by [`convert_facts`].
impl Arg<'_> for *const tenure_fact {
    type Out = Self;
    unsafe fn read(self, _: &'static str) -> R<Self> {
        Ok(self)
    }
}

/// Store options from a `tenure_open_options` (NULL: the defaults).
pub(crate) unsafe fn open_options(options: *const tenure_open_options) -> R<Options> {
    let opts = Options::new();
    if options.is_null() {
        return Ok(opts);
    }
    let o = read_sized(options, "options")?;
    let sync = tenure_synchronous::from_u32(o.synchronous)
        .and_then(tenure_synchronous::to_core)
        .ok_or_else(|| invalid(format!("unknown synchronous value {}", o.synchronous)))?;
    if o.busy_timeout_us < 0 {
        return Err(invalid("`busy_timeout_us` must not be negative"));
    }
    Ok(opts
        .synchronous(sync)
        .busy_timeout(Duration::from_micros(o.busy_timeout_us as u64)))
}

/// A listing query from a `tenure_list_query` (NULL: all states, first page).
unsafe fn list_query(query: *const tenure_list_query) -> R<ListQuery> {
    let mut q = ListQuery::default();
    if !query.is_null() {
        let c = read_sized(query, "query")?;
        q.state = tenure_job_state::from_u32(c.state)
            .ok_or_else(|| invalid(format!("unknown job state number {}", c.state)))?
            .to_core();
        q.after = opt_str_arg(c.after, "query->after")?.map(str::to_owned);
        q.limit = c.limit;
    }
    Ok(q)
}

unsafe fn job_spec(spec: *const tenure_job_spec) -> R<JobSpec> {
    let s = read_sized(spec, "spec")?;
    let job = str_arg(s.job, "spec->job")?;
    let payload = if s.payload_len == 0 {
        Vec::new()
    } else if s.payload.is_null() {
        return Err(invalid(
            "`spec->payload` is NULL but `payload_len` is not 0",
        ));
    } else if s.payload_len > tenure::validate::MAX_PAYLOAD_LEN {
        // Memory-safety guard before the bytes are copied (a garbage length
        // must not become a slice); the bound itself is the core's constant.
        return Err(invalid(format!(
            "payload is {} bytes, at most {} allowed",
            s.payload_len,
            tenure::validate::MAX_PAYLOAD_LEN
        )));
    } else {
        std::slice::from_raw_parts(s.payload, s.payload_len).to_vec()
    };
    Ok(JobSpec::new(job, payload)
        .priority(s.priority)
        .max_attempts(s.max_attempts))
}

pub(crate) unsafe fn convert_facts(facts: *const tenure_fact, n: usize) -> R<Vec<Fact>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if facts.is_null() {
        return Err(invalid("`facts` is NULL but `n_facts` is not 0"));
    }
    if n > tenure::validate::MAX_FACTS {
        return Err(invalid(format!(
            "{n} facts given, at most {} allowed",
            tenure::validate::MAX_FACTS
        )));
    }
    std::slice::from_raw_parts(facts, n)
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let k = str_arg(f.key, &format!("facts[{i}].key"))?;
            let v = str_arg(f.value, &format!("facts[{i}].value"))?;
            Ok(Fact::new(k, v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure::ErrorCode;

    #[test]
    fn sized_structs_reject_short_sizes_and_unknown_tails() {
        #[repr(C)]
        struct Bigger {
            q: tenure_list_query,
            extra: u64,
        }
        let mut q = std::mem::MaybeUninit::<tenure_list_query>::uninit();
        assert_eq!(
            unsafe { tenure_list_query_init(q.as_mut_ptr()) },
            tenure_status::TENURE_OK
        );
        let q = unsafe { q.assume_init() };
        assert!(unsafe { read_sized(&q, "q") }.is_ok());
        let mut short = q;
        short.struct_size = 8;
        assert!(unsafe { read_sized(&short, "q") }.is_err());
        let mut big = Bigger { q, extra: 0 };
        big.q.struct_size = std::mem::size_of::<Bigger>();
        let p = &big as *const Bigger as *const tenure_list_query;
        assert!(unsafe { read_sized(p, "q") }.is_ok());
        big.extra = 1;
        let p = &big as *const Bigger as *const tenure_list_query;
        let e = unsafe { read_sized(p, "q") }.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
    }
}
