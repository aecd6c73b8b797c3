//! `libtenure`: the C ABI of the tenure job lease authority.
//!
//! This crate only converts types and maps errors; every rule lives in the
//! core crate `tenure`. The header `include/tenure.h` is generated from this
//! crate's sources, macros expanded, by a pinned cbindgen (`cargo xtask
//! abi-check` fails if it drifts). The header lists the exports in the order
//! of the modules below, so the order of the `mod` lines is part of the
//! header.
//!
//! - `boundary`: the one panic/error boundary, the argument readers and
//!   `export!`, the one macro every export is written with;
//! - `status`, `messages`: `tenure_status`, the per-thread last-error
//!   message and their exports;
//! - `options`: enumerations, the size-versioned input structs and their
//!   conversion to core types;
//! - `writer`: the operations `tenure_authority_*` and `tenure_edit_*`
//!   share, and those `tenure_lease_*` and `tenure_edit_*` share, each
//!   defined once;
//! - `authority`, `lease`, `edit`: the handles and their operations;
//! - `batch`: the batched calls of `tenure_authority_*` and `tenure_edit_*`
//!   (claim-next of many jobs, transitions of many leases), ABI 1.1;
//! - `view`, `list`: immutable snapshots read through accessors;
//! - `wait`: waiting for work (`tenure_wait_cancel`,
//!   `tenure_authority_claim_next_wait`) and keep-alive (`tenure_keeper`),
//!   ABI 1.1;
//! - `retention`: the retention option, prune, delete and export of a
//!   production, the history horizon and vacuum (ABI 1.1);
//! - `schedule`: job options (`tenure_job_options`: not-before delay, hold
//!   limit, back-off) and submission with them, a production's back-off,
//!   and a retryable failure with a retry delay (ABI 1.1);
//! - `request`: idempotent calls, claims under a request ID
//!   (`tenure_claim_request`) and lease transitions that report replays
//!   (ABI 1.1); every idempotent call ends in `_idempotent`, the claims
//!   under that name from ABI 1.2 (their 1.1 names `*_with` stay);
//! - `stats`: queue statistics (`tenure_authority_stats`, `tenure_stats`,
//!   `tenure_production_stats`), ABI 1.2.
//!
//! # Conventions (they hold for every export)
//!
//! - Every fallible function returns `tenure_status` (`TENURE_OK` = 0, the
//!   other numbers are the core's stable `ErrorCode` numbers). Future
//!   library versions may return numbers this header does not name; treat
//!   unknown numbers as failures and use `tenure_status_name()` /
//!   `tenure_last_error_message()`.
//! - No panic crosses the boundary: a caught panic returns `TENURE_INTERNAL`.
//! - NULL for a pointer argument that is not documented as optional, text
//!   that is not UTF-8, and struct sizes this library cannot read return
//!   `TENURE_INVALID_ARGUMENT` and change nothing. Durations are
//!   `int64_t ..._us` and are validated by the core (`TENURE_INVALID_DURATION`):
//!   a TTL is 1 µs ..= 24 h, a delay (not-before, retry delay, hold limit,
//!   back-off step; ABI 1.1) 0 ..= 366 days.
//! - Out-parameters come last and are written only on success. The one
//!   exception is the `out_size`/`out_len` parameter of the caller-buffer
//!   functions (token export, payload, last error message): when the buffer
//!   is too small they return `TENURE_INVALID_ARGUMENT` and report the
//!   required size through it, leaving the buffer untouched.
//! - Every `tenure_*_free` accepts NULL. A handle must be freed exactly once
//!   and not used afterwards. Freeing a lease never writes, renews or
//!   releases anything.
//! - Strings returned as `const char *` by accessors are borrowed from the
//!   handle they were read from and stay valid until that handle is freed
//!   (static strings, e.g. from `tenure_status_name()`, forever).
//! - Accessors of list and view handles return plain values; given NULL or
//!   an out-of-range index they return NULL / 0 / false.
//!
//! # Extensibility
//!
//! Input structs (`tenure_open_options`, `tenure_job_spec`,
//! `tenure_list_query`) begin with `size_t struct_size`, filled in by their
//! `tenure_*_init()` function. Their layout is fixed for the whole major: a
//! client built against an older header passes its own `struct_size` and
//! calls an `_init()` that must not write past it, so a struct of a released
//! minor never grows. If the caller passes a larger struct than the library
//! knows, the unknown tail must be all zero bytes, otherwise
//! `TENURE_INVALID_ARGUMENT`. What a struct has no field for is added as a
//! function: store options as setters of the `tenure_options` handle (ABI
//! 1.1, `tenure_authority_open_with()`), the rest as new functions. Results
//! are opaque handles read through accessor functions, so new fields are
//! new accessors; the exceptions are the plain result records of counts
//! (`tenure_prune_report`, `tenure_deleted_counts`, ABI 1.1), whose layout
//! is fixed for the major (a later result is a new function).
//!
//! # Thread safety
//!
//! - `tenure_authority`: fully thread-safe; share one between threads.
//! - `tenure_lease`: thread-safe; several threads may use one (e.g. a
//!   heartbeat renewing while a worker completes); the store serializes them.
//! - `tenure_edit`: may be used from any thread, one call at a time; calls
//!   from several threads are serialized by an internal mutex.
//! - Batched calls (`*_many`) read the caller's arrays and write its
//!   out-arrays only during the call; another thread must not change them
//!   meanwhile (the handles in them may be shared as usual).
//! - List/view handles are immutable snapshots: thread-safe to read.
//! - `tenure_wait_cancel` (ABI 1.1): thread-safe; one thread cancels while
//!   others wait with it. Cancelling is not async-signal-safe.
//! - `tenure_keeper` (ABI 1.1): thread-safe (internally locked); it owns
//!   what it needs, so the lease and authority handles may be freed first.
//! - `tenure_job_options` (ABI 1.1): thread-safe (internally locked); read
//!   only during a submission, so it may be freed or changed afterwards.
//! - The last-error message is per thread.
//!
//! # Errors and secrets
//!
//! `tenure_last_error_message()` returns the message of the last failed call
//! on the calling thread. Messages come from the core and name productions,
//! jobs, holders and claim IDs, never a secret or a token.
//!
//! # Safety
//!
//! Every pointer passed in must be NULL or valid for the documented access
//! (handles from this library, NUL-terminated strings, arrays of the given
//! length, writable out-parameters), and must not be freed concurrently with
//! a call that uses it.

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // the crate-level "Safety" section covers every export

use std::ffi::{c_char, CStr};

// The header lists the exports in the order of these modules: one module a
// group, so that rustfmt keeps the order.
#[macro_use]
mod boundary;

mod messages;
mod status;

mod options;
include!("c_structs.rs");

#[macro_use]
mod writer;

mod authority;

mod lease;

mod edit;

mod batch;

mod view;

mod list;

mod retention;
mod wait;

mod schedule;

mod recurring;

mod request;
mod stats;

mod gates;

mod steer;

mod outage;

// ---------------------------------------------------------------------------
// Versions
// ---------------------------------------------------------------------------

/// Major version of the C ABI (bumped on any incompatible change; it is the
/// shared library's soname number, `libtenure.so.1`).
pub const TENURE_ABI_MAJOR: u32 = 1;
/// Minor version of the C ABI (bumped when symbols or fields are added).
pub const TENURE_ABI_MINOR: u32 = 2;
/// The ABI version as one number: `(major << 16) | minor`, as returned by
/// `tenure_abi_version()`.
pub const TENURE_ABI_VERSION: u32 = (TENURE_ABI_MAJOR << 16) | TENURE_ABI_MINOR;
/// Library (package) version, major part.
pub const TENURE_VERSION_MAJOR: u32 = 0;
/// Library (package) version, minor part.
pub const TENURE_VERSION_MINOR: u32 = 1;
/// Library (package) version, patch part.
pub const TENURE_VERSION_PATCH: u32 = 0;

static VERSION_CSTR: &CStr = {
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(s) => s,
        Err(_) => panic!("version contains NUL"),
    }
};

export! {
    /// The ABI version of the loaded library: `(major << 16) | minor`. A program
    /// built against header major M works with a library whose major is M and
    /// whose minor is at least the header's minor.
    fn tenure_abi_version() -> u32 = value Some(TENURE_ABI_VERSION);

    /// The package version of the loaded library, e.g. `"0.1.0"` (static string).
    fn tenure_version() -> *const c_char = value Some(VERSION_CSTR.as_ptr());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_agree_with_cargo() {
        assert_eq!(
            TENURE_VERSION_MAJOR.to_string(),
            env!("CARGO_PKG_VERSION_MAJOR")
        );
        assert_eq!(
            TENURE_VERSION_MINOR.to_string(),
            env!("CARGO_PKG_VERSION_MINOR")
        );
        assert_eq!(
            TENURE_VERSION_PATCH.to_string(),
            env!("CARGO_PKG_VERSION_PATCH")
        );
        let v = unsafe { CStr::from_ptr(tenure_version()) };
        assert_eq!(v.to_str().unwrap(), tenure::VERSION);
        assert_eq!(unsafe { tenure_abi_version() }, 1 << 16 | 2);
    }

    #[test]
    fn documented_thread_safety_holds() {
        fn shared<T: Send + Sync>() {}
        shared::<authority::tenure_authority>();
        shared::<lease::tenure_lease>();
        shared::<edit::tenure_edit>(); // via its internal mutex
        shared::<options::tenure_options>(); // via its internal mutex
        shared::<view::tenure_job_view>();
        shared::<view::tenure_job_list>();
        shared::<list::tenure_production_list>();
        shared::<list::tenure_fact_list>();
        shared::<list::tenure_event_list>();
        shared::<wait::tenure_wait_cancel>();
        shared::<wait::tenure_keeper>(); // via its internal mutex
        shared::<schedule::tenure_job_options>(); // via its internal mutex
    }
}
