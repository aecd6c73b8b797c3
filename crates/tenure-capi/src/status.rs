//! `tenure_status`, the names of its values and the per-thread last-error
//! message (exported by `messages.rs`).
//!
//! The status enum is the core's error table (`tenure::ErrorCode`) with
//! `TENURE_OK` in front; `tests/status_table.rs` checks the two tables and
//! the header's enum against each other. This file depends on nothing else
//! in the crate (the test compiles it on its own).

use std::cell::RefCell;
use std::ffi::{c_char, CStr};

use tenure::ErrorCode;

/// Defines the status enum and [`tenure_status::ALL`], its variants in
/// order with their C names and snake_case names, from one list.
macro_rules! statuses {
    (
        $(#[$meta:meta])*
        pub enum $ty:ident {
            $( $(#[$doc:meta])* $variant:ident = $n:literal => $name:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[repr(u32)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $ty {
            $( $(#[$doc])* $variant = $n, )*
        }

        impl $ty {
            /// Every status in numeric order: the value, its C name and its
            /// snake_case name.
            pub(crate) const ALL: &'static [($ty, &'static str, &'static CStr)] =
                &[$(($ty::$variant, stringify!($variant), $name)),*];
        }
    };
}

statuses! {
    /// Result of every fallible call. `TENURE_OK` is 0; every other number is
    /// the core's stable error code. Numbers are never reused; later versions
    /// may append codes this header does not name: treat any non-zero value as
    /// a failure.
    pub enum tenure_status {
        /// Success.
        TENURE_OK = 0 => c"ok",
        /// A malformed ID, holder, payload, reason, fact, pointer, size or number.
        TENURE_INVALID_ARGUMENT = 1 => c"invalid_argument",
        /// A lease duration `<= 0` or more than 24 h.
        TENURE_INVALID_DURATION = 2 => c"invalid_duration",
        /// The production or job does not exist.
        TENURE_NOT_FOUND = 3 => c"not_found",
        /// The same ID already exists with different content.
        TENURE_CONFLICT = 4 => c"conflict",
        /// The job exists but cannot be claimed now.
        TENURE_NOT_CLAIMABLE = 5 => c"not_claimable",
        /// `claim_next` found nothing claimable.
        TENURE_NO_JOB_AVAILABLE = 6 => c"no_job_available",
        /// The lease is no longer the job's current claim.
        TENURE_STALE_LEASE = 7 => c"stale_lease",
        /// The lease is current but its expiry has passed.
        TENURE_LEASE_EXPIRED = 8 => c"lease_expired",
        /// The lease was already ended, or its edit failed.
        TENURE_LEASE_CLOSED = 9 => c"lease_closed",
        /// The lease belongs to an edit that has not committed yet.
        TENURE_LEASE_PENDING = 10 => c"lease_pending",
        /// A renewal would not move the expiry later.
        TENURE_NOT_EXTENDED = 11 => c"not_extended",
        /// The job or production was cancelled.
        TENURE_CANCELLED = 12 => c"cancelled",
        /// The job is already completed or failed.
        TENURE_JOB_TERMINAL = 13 => c"job_terminal",
        /// The clock reads earlier than the store's durable high-water mark.
        TENURE_CLOCK_ROLLBACK = 14 => c"clock_rollback",
        /// The token text is not a well-formed tenure lease token.
        TENURE_TOKEN_MALFORMED = 15 => c"token_malformed",
        /// The token is longer than 2048 bytes.
        TENURE_TOKEN_TOO_LARGE = 16 => c"token_too_large",
        /// The token names a format version this library does not read.
        TENURE_TOKEN_UNSUPPORTED_VERSION = 17 => c"token_unsupported_version",
        /// The writer lock could not be taken within the busy timeout.
        TENURE_BUSY = 18 => c"busy",
        /// The store was written by a newer tenure; it was not touched.
        TENURE_SCHEMA_TOO_NEW = 19 => c"schema_too_new",
        /// The store failed (I/O, corrupt or foreign file, read-only, full disk).
        TENURE_STORE = 20 => c"store",
        /// A bug in the library, or a caught panic.
        TENURE_INTERNAL = 21 => c"internal",
        /// A renewal would extend a lease past its claim's hard ownership limit.
        TENURE_HOLD_LIMIT = 22 => c"hold_limit",
        /// A reader asked for events before the pruned horizon.
        TENURE_HISTORY_PRUNED = 23 => c"history_pruned",
        /// Deleting a production that still has a live job.
        TENURE_PRODUCTION_LIVE = 24 => c"production_live",
        /// A claim of a named job in a paused production.
        TENURE_PRODUCTION_PAUSED = 25 => c"production_paused",
        /// A claim of a named job beyond its production's concurrency limit.
        TENURE_CONCURRENCY_LIMIT = 26 => c"concurrency_limit",
        /// A claim of a named job beyond its production's rate limit.
        TENURE_RATE_LIMITED = 27 => c"rate_limited",
        /// Requeueing a job that is not failed or cancelled (ABI 1.2).
        TENURE_JOB_LIVE = 28 => c"job_live",
    }
}

impl tenure_status {
    /// The status with number `n`, if this library names it.
    pub(crate) fn from_u32(n: u32) -> Option<tenure_status> {
        tenure_status::ALL
            .iter()
            .map(|(s, _, _)| *s)
            .find(|s| *s as u32 == n)
    }

    /// The status of a core error code: the same number. A code the status
    /// enum does not name cannot be represented: that would be a bug of this
    /// crate (`tests/status_table.rs` fails), reported as internal.
    pub(crate) fn from_code(c: ErrorCode) -> tenure_status {
        tenure_status::from_u32(c.as_u32()).unwrap_or(tenure_status::TENURE_INTERNAL)
    }
}

/// The static, stable snake_case name of a status number (`"stale_lease"`,
/// `"ok"` for 0, `"unknown"` for a number this library does not know), as
/// `tenure_status_name()` returns it.
pub(crate) fn status_name(status: u32) -> &'static CStr {
    tenure_status::ALL
        .iter()
        .find(|(s, _, _)| *s as u32 == status)
        .map_or(c"unknown", |(_, _, name)| *name)
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// This thread's last-error message.
pub(crate) fn last_error() -> String {
    LAST_ERROR.with(|l| l.borrow().clone())
}

pub(crate) fn set_last_error(msg: String) {
    LAST_ERROR.with(|l| *l.borrow_mut() = msg);
}

/// Copy this thread's last-error message into `buf` (`cap` bytes) as
/// `tenure_last_error_message()` documents it, never changing it.
pub(crate) unsafe fn copy_last_error(
    buf: *mut c_char,
    cap: usize,
    out_size: *mut usize,
) -> tenure_status {
    if out_size.is_null() || (buf.is_null() && cap != 0) {
        return tenure_status::TENURE_INVALID_ARGUMENT;
    }
    LAST_ERROR.with(|l| {
        let msg = l.borrow();
        let bytes = msg.as_bytes();
        let need = bytes.len() + 1;
        *out_size = need;
        if cap < need {
            return tenure_status::TENURE_INVALID_ARGUMENT;
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, bytes.len());
        *buf.add(bytes.len()) = 0;
        tenure_status::TENURE_OK
    })
}
