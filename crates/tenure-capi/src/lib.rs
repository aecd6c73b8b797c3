//! `libtenure`: the C ABI of the tenure job lease authority.
//!
//! This crate only converts types and maps errors; every rule lives in the
//! core crate `tenure`. The header `include/tenure.h` is generated from this
//! file by a pinned cbindgen (`cargo xtask abi-check` fails if it drifts).
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
//!   `int64_t ..._us` and are validated by the core (`TENURE_INVALID_DURATION`
//!   for `<= 0` or more than 24 h).
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
//! `tenure_*_init()` function. A later minor version may append fields; the
//! library reads only the fields covered by `struct_size` and, if the caller
//! passes a larger struct than it knows, requires the unknown tail to be all
//! zero bytes (fields are designed so that zero means "the old behaviour"),
//! otherwise `TENURE_INVALID_ARGUMENT`. Results are opaque handles read
//! through accessor functions, so new fields are new accessors.
//!
//! # Thread safety
//!
//! - `tenure_authority`: fully thread-safe; share one between threads.
//! - `tenure_lease`: thread-safe; several threads may use one (e.g. a
//!   heartbeat renewing while a worker completes); the store serializes them.
//! - `tenure_edit`: may be used from any thread, one call at a time; calls
//!   from several threads are serialized by an internal mutex.
//! - List/view handles are immutable snapshots: thread-safe to read.
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

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tenure::{
    Authority, Cancelled, Edit, Error, ErrorCode, Event, Fact, JobSpec, JobState, JobView, Lease,
    LeaseStatus, ListQuery, Options, ProductionView, PublishedFact, Submitted, Synchronous, Ttl,
};

// ---------------------------------------------------------------------------
// Versions
// ---------------------------------------------------------------------------

/// Major version of the C ABI (bumped on any incompatible change; it is the
/// shared library's soname number, `libtenure.so.1`).
pub const TENURE_ABI_MAJOR: u32 = 1;
/// Minor version of the C ABI (bumped when symbols or fields are added).
pub const TENURE_ABI_MINOR: u32 = 0;
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

/// The ABI version of the loaded library: `(major << 16) | minor`. A program
/// built against header major M works with a library whose major is M and
/// whose minor is at least the header's minor.
#[no_mangle]
pub extern "C" fn tenure_abi_version() -> u32 {
    TENURE_ABI_VERSION
}

/// The package version of the loaded library, e.g. `"0.1.0"` (static string).
#[no_mangle]
pub extern "C" fn tenure_version() -> *const c_char {
    VERSION_CSTR.as_ptr()
}

// ---------------------------------------------------------------------------
// Status codes and the last error
// ---------------------------------------------------------------------------

/// Result of every fallible call. `TENURE_OK` is 0; every other number is
/// the core's stable error code. Numbers are never reused; later versions
/// may append codes this header does not name: treat any non-zero value as
/// a failure.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_status {
    /// Success.
    TENURE_OK = 0,
    /// A malformed ID, holder, payload, reason, fact, pointer, size or number.
    TENURE_INVALID_ARGUMENT = 1,
    /// A lease duration `<= 0` or more than 24 h.
    TENURE_INVALID_DURATION = 2,
    /// The production or job does not exist.
    TENURE_NOT_FOUND = 3,
    /// The same ID already exists with different content.
    TENURE_CONFLICT = 4,
    /// The job exists but cannot be claimed now.
    TENURE_NOT_CLAIMABLE = 5,
    /// `claim_next` found nothing claimable.
    TENURE_NO_JOB_AVAILABLE = 6,
    /// The lease is no longer the job's current claim.
    TENURE_STALE_LEASE = 7,
    /// The lease is current but its expiry has passed.
    TENURE_LEASE_EXPIRED = 8,
    /// The lease was already ended, or its edit failed.
    TENURE_LEASE_CLOSED = 9,
    /// The lease belongs to an edit that has not committed yet.
    TENURE_LEASE_PENDING = 10,
    /// A renewal would not move the expiry later.
    TENURE_NOT_EXTENDED = 11,
    /// The job or production was cancelled.
    TENURE_CANCELLED = 12,
    /// The job is already completed or failed.
    TENURE_JOB_TERMINAL = 13,
    /// The clock reads earlier than the store's durable high-water mark.
    TENURE_CLOCK_ROLLBACK = 14,
    /// The token text is not a well-formed tenure lease token.
    TENURE_TOKEN_MALFORMED = 15,
    /// The token is longer than 2048 bytes.
    TENURE_TOKEN_TOO_LARGE = 16,
    /// The token names a format version this library does not read.
    TENURE_TOKEN_UNSUPPORTED_VERSION = 17,
    /// The writer lock could not be taken within the busy timeout.
    TENURE_BUSY = 18,
    /// The store was written by a newer tenure; it was not touched.
    TENURE_SCHEMA_TOO_NEW = 19,
    /// The store failed (I/O, corrupt or foreign file, read-only, full disk).
    TENURE_STORE = 20,
    /// A bug in the library, or a caught panic.
    TENURE_INTERNAL = 21,
}

impl tenure_status {
    /// Every non-OK status, in numeric order (mirrors `ErrorCode::ALL`).
    const ERRORS: [tenure_status; 21] = [
        tenure_status::TENURE_INVALID_ARGUMENT,
        tenure_status::TENURE_INVALID_DURATION,
        tenure_status::TENURE_NOT_FOUND,
        tenure_status::TENURE_CONFLICT,
        tenure_status::TENURE_NOT_CLAIMABLE,
        tenure_status::TENURE_NO_JOB_AVAILABLE,
        tenure_status::TENURE_STALE_LEASE,
        tenure_status::TENURE_LEASE_EXPIRED,
        tenure_status::TENURE_LEASE_CLOSED,
        tenure_status::TENURE_LEASE_PENDING,
        tenure_status::TENURE_NOT_EXTENDED,
        tenure_status::TENURE_CANCELLED,
        tenure_status::TENURE_JOB_TERMINAL,
        tenure_status::TENURE_CLOCK_ROLLBACK,
        tenure_status::TENURE_TOKEN_MALFORMED,
        tenure_status::TENURE_TOKEN_TOO_LARGE,
        tenure_status::TENURE_TOKEN_UNSUPPORTED_VERSION,
        tenure_status::TENURE_BUSY,
        tenure_status::TENURE_SCHEMA_TOO_NEW,
        tenure_status::TENURE_STORE,
        tenure_status::TENURE_INTERNAL,
    ];

    fn from_code(c: ErrorCode) -> tenure_status {
        // Same numbers by construction (checked by a unit test). A code the
        // status enum does not name yet cannot be represented: that would be
        // a bug of this crate, reported as internal.
        tenure_status::ERRORS
            .iter()
            .copied()
            .find(|s| *s as u32 == c.as_u32())
            .unwrap_or(tenure_status::TENURE_INTERNAL)
    }
}

/// A static, stable snake_case name for a status number (`"stale_lease"`,
/// `"ok"` for 0, `"unknown"` for a number this library does not know).
#[no_mangle]
pub extern "C" fn tenure_status_name(status: u32) -> *const c_char {
    const NAMES: [&CStr; 22] = [
        c"ok",
        c"invalid_argument",
        c"invalid_duration",
        c"not_found",
        c"conflict",
        c"not_claimable",
        c"no_job_available",
        c"stale_lease",
        c"lease_expired",
        c"lease_closed",
        c"lease_pending",
        c"not_extended",
        c"cancelled",
        c"job_terminal",
        c"clock_rollback",
        c"token_malformed",
        c"token_too_large",
        c"token_unsupported_version",
        c"busy",
        c"schema_too_new",
        c"store",
        c"internal",
    ];
    NAMES
        .get(status as usize)
        .copied()
        .unwrap_or(c"unknown")
        .as_ptr()
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(msg: String) {
    LAST_ERROR.with(|l| *l.borrow_mut() = msg);
}

/// Copy the message of the last failed call on this thread into `buf` as a
/// NUL-terminated string (`""` if the last status-returning call on this
/// thread succeeded or none was made). Every status-returning function
/// except this one replaces the message; this one never changes it.
///
/// `*out_size` receives the buffer size needed, including the NUL. If `cap`
/// is smaller than that, nothing is copied and `TENURE_INVALID_ARGUMENT` is
/// returned with `*out_size` set (`buf` may be NULL when `cap` is 0, to ask
/// for the size). Messages never contain secrets or tokens.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_message(
    buf: *mut c_char,
    cap: usize,
    out_size: *mut usize,
) -> tenure_status {
    let r = catch_unwind(AssertUnwindSafe(|| {
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
    }));
    r.unwrap_or(tenure_status::TENURE_INTERNAL)
}

// ---------------------------------------------------------------------------
// The boundary
// ---------------------------------------------------------------------------

type R<T = ()> = Result<T, Error>;

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// The one boundary around every status-returning export: runs `f`, catches
/// any panic (-> `TENURE_INTERNAL`), maps the core error to its status and
/// records the thread's last-error message (cleared on success).
fn boundary(f: impl FnOnce() -> R) -> tenure_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_last_error(String::new());
            tenure_status::TENURE_OK
        }
        Ok(Err(e)) => {
            let st = tenure_status::from_code(e.code());
            set_last_error(e.to_string());
            st
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(format!("internal error: a panic was caught: {what}"));
            tenure_status::TENURE_INTERNAL
        }
    }
}

/// The boundary for accessors that return a plain value: a panic yields
/// `default`. The last-error message is not touched.
fn value<T>(default: T, f: impl FnOnce() -> Option<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Some(v)) => v,
        _ => default,
    }
}

/// A required (non-NULL) handle or struct argument.
macro_rules! arg_ref {
    ($p:expr) => {
        match unsafe { $p.as_ref() } {
            Some(r) => r,
            None => return Err(invalid(concat!("`", stringify!($p), "` must not be NULL"))),
        }
    };
}

/// A required (non-NULL) out-parameter; gives the raw pointer back.
macro_rules! arg_out {
    ($p:expr) => {{
        if $p.is_null() {
            return Err(invalid(concat!("`", stringify!($p), "` must not be NULL")));
        }
        $p
    }};
}

/// A required NUL-terminated UTF-8 string argument.
macro_rules! arg_str {
    ($p:expr) => {
        unsafe { str_arg($p, stringify!($p))? }
    };
}

unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> R<&'a str> {
    if p.is_null() {
        return Err(invalid(format!("`{name}` must not be NULL")));
    }
    CStr::from_ptr(p)
        .to_str()
        .map_err(|_| invalid(format!("`{name}` is not valid UTF-8")))
}

unsafe fn opt_str_arg<'a>(p: *const c_char, name: &str) -> R<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        str_arg(p, name).map(Some)
    }
}

/// Largest `struct_size` accepted (a sanity bound against garbage).
const MAX_STRUCT_SIZE: usize = 4096;

/// Read a size-versioned input struct whose first field is `size_t struct_size`.
unsafe fn read_sized<T: Copy>(p: *const T, name: &str) -> R<T> {
    if p.is_null() {
        return Err(invalid(format!("`{name}` must not be NULL")));
    }
    let size = std::ptr::read_unaligned(p as *const usize);
    let known = std::mem::size_of::<T>();
    if size < known || size > MAX_STRUCT_SIZE {
        return Err(invalid(format!(
            "`{name}->struct_size` is {size}; this library reads {known} bytes \
             (initialise the struct with its tenure_*_init function)"
        )));
    }
    let bytes = std::slice::from_raw_parts(p as *const u8, size);
    if bytes[known..].iter().any(|b| *b != 0) {
        return Err(invalid(format!(
            "`{name}` sets fields this library (ABI {TENURE_ABI_MAJOR}.{TENURE_ABI_MINOR}) does not know"
        )));
    }
    Ok(std::ptr::read(p))
}

fn ttl(us: i64) -> R<Ttl> {
    Ttl::from_micros(us)
}

/// Text from the core as a C string (core text never contains NUL; should
/// one appear it is replaced rather than truncating the string).
fn cstring(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|_| {
        CString::new(s.replace('\0', "\u{FFFD}")).expect("NUL bytes were replaced")
    })
}

fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
}

fn boxed<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

unsafe fn free_box<T>(p: *mut T) {
    if !p.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(p))));
    }
}

/// Copy `bytes` (plus a NUL if `nul`) into a caller buffer, reporting the
/// required size; too small -> invalid argument, buffer untouched.
unsafe fn copy_out(
    bytes: &[u8],
    nul: bool,
    buf: *mut u8,
    cap: usize,
    out_size: *mut usize,
    what: &str,
) -> R {
    let need = bytes.len() + usize::from(nul);
    if cap < need {
        *out_size = need;
        return Err(invalid(format!(
            "the buffer for the {what} holds {cap} bytes, {need} are needed \
             (the required size was written to the size out-parameter)"
        )));
    }
    std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len());
    if nul {
        *buf.add(bytes.len()) = 0;
    }
    *out_size = need;
    Ok(())
}

// ---------------------------------------------------------------------------
// Enumerations
// ---------------------------------------------------------------------------

/// A job's observed state. `TENURE_JOB_ANY` (0) is only meaningful as a
/// listing filter.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_job_state {
    /// No filter (listing queries only).
    TENURE_JOB_ANY = 0,
    /// Waiting to be claimed.
    TENURE_JOB_REQUESTED = 1,
    /// Held by an unexpired lease.
    TENURE_JOB_CLAIMED = 2,
    /// Claimed, but the lease expired; claimable again.
    TENURE_JOB_EXPIRED = 3,
    /// Completed; facts published.
    TENURE_JOB_COMPLETED = 4,
    /// Failed permanently or out of attempts.
    TENURE_JOB_FAILED = 5,
    /// Cancelled by a coordinator.
    TENURE_JOB_CANCELLED = 6,
}

fn job_state(s: JobState) -> tenure_job_state {
    match s {
        JobState::Requested => tenure_job_state::TENURE_JOB_REQUESTED,
        JobState::Claimed => tenure_job_state::TENURE_JOB_CLAIMED,
        JobState::Expired => tenure_job_state::TENURE_JOB_EXPIRED,
        JobState::Completed => tenure_job_state::TENURE_JOB_COMPLETED,
        JobState::Failed => tenure_job_state::TENURE_JOB_FAILED,
        JobState::Cancelled => tenure_job_state::TENURE_JOB_CANCELLED,
    }
}

fn job_state_from(n: u32) -> R<Option<JobState>> {
    Ok(match n {
        0 => None,
        n => Some(
            JobState::ALL
                .into_iter()
                .find(|s| job_state(*s) as u32 == n)
                .ok_or_else(|| invalid(format!("unknown job state number {n}")))?,
        ),
    })
}

/// A static name for a job state number (`"requested"`, ..., `"any"` for 0,
/// `"unknown"` otherwise).
#[no_mangle]
pub extern "C" fn tenure_job_state_name(state: u32) -> *const c_char {
    const NAMES: [&CStr; 7] = [
        c"any",
        c"requested",
        c"claimed",
        c"expired",
        c"completed",
        c"failed",
        c"cancelled",
    ];
    NAMES
        .get(state as usize)
        .copied()
        .unwrap_or(c"unknown")
        .as_ptr()
}

/// Local status of a lease handle.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_lease_status {
    /// Minted in an edit that has not committed.
    TENURE_LEASE_STATUS_PENDING = 1,
    /// Committed; usable until it expires or is ended.
    TENURE_LEASE_STATUS_ACTIVE = 2,
    /// Ended by a successful release/fail/complete, or its edit failed.
    TENURE_LEASE_STATUS_CLOSED = 3,
}

/// Outcome of an idempotent submission.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_submitted {
    /// The job was new.
    TENURE_SUBMITTED_CREATED = 1,
    /// The same job with the same content existed; nothing changed.
    TENURE_SUBMITTED_EXISTING = 2,
}

fn submitted(s: Submitted) -> tenure_submitted {
    match s {
        Submitted::Created => tenure_submitted::TENURE_SUBMITTED_CREATED,
        Submitted::Existing => tenure_submitted::TENURE_SUBMITTED_EXISTING,
    }
}

/// Outcome of a job cancel.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_cancelled {
    /// The job moved to cancelled now.
    TENURE_CANCELLED_NOW = 1,
    /// It already was cancelled; nothing changed.
    TENURE_CANCELLED_ALREADY = 2,
}

fn cancelled(c: Cancelled) -> tenure_cancelled {
    match c {
        Cancelled::Cancelled => tenure_cancelled::TENURE_CANCELLED_NOW,
        Cancelled::AlreadyCancelled => tenure_cancelled::TENURE_CANCELLED_ALREADY,
    }
}

/// SQLite `synchronous` setting of `tenure_open_options`.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_synchronous {
    /// `synchronous=FULL` (the default).
    TENURE_SYNCHRONOUS_FULL = 0,
    /// `synchronous=NORMAL`.
    TENURE_SYNCHRONOUS_NORMAL = 1,
}

// ---------------------------------------------------------------------------
// Input structs
// ---------------------------------------------------------------------------

/// How to open a store. Initialise with `tenure_open_options_init()`, then
/// change fields. Size-versioned: see the header's extensibility notes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_open_options {
    /// `sizeof(tenure_open_options)` as compiled by the caller.
    pub struct_size: usize,
    /// A `tenure_synchronous` value (default `TENURE_SYNCHRONOUS_FULL`).
    pub synchronous: u32,
    /// How long a write waits for the writer lock before `TENURE_BUSY`, in
    /// µs: 0 ..= 3 600 000 000 (default 5 000 000).
    pub busy_timeout_us: i64,
}

/// One job to submit. Initialise with `tenure_job_spec_init()` (priority 0,
/// max_attempts 3, empty payload), then set `job` (and the rest).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_job_spec {
    /// `sizeof(tenure_job_spec)` as compiled by the caller.
    pub struct_size: usize,
    /// Job ID (1-128 bytes of `[A-Za-z0-9][A-Za-z0-9._:@+-]*`).
    pub job: *const c_char,
    /// Opaque payload bytes (may be NULL when `payload_len` is 0), at most 1 MiB.
    pub payload: *const u8,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Higher runs first; ties go to the oldest submission.
    pub priority: i32,
    /// Claims allowed in total, 1 ..= 1000.
    pub max_attempts: u32,
}

/// Paging and filtering for `tenure_authority_jobs()`. Initialise with
/// `tenure_list_query_init()` (any state, from the start, default page).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_list_query {
    /// `sizeof(tenure_list_query)` as compiled by the caller.
    pub struct_size: usize,
    /// A `tenure_job_state` to filter on, or `TENURE_JOB_ANY` (0).
    pub state: u32,
    /// Only jobs whose ID sorts after this one (the last ID of the previous
    /// page), or NULL to start at the beginning.
    pub after: *const c_char,
    /// Page size: 0 means 100; larger than 10 000 is capped at 10 000.
    pub limit: usize,
}

/// One caller fact to publish at completion (both strings required, UTF-8).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_fact {
    /// Key: an ID outside the reserved `tenure.` namespace.
    pub key: *const c_char,
    /// Value: text up to 4096 bytes.
    pub value: *const c_char,
}

/// Fill `*options` with the defaults and the current `struct_size`.
#[no_mangle]
pub unsafe extern "C" fn tenure_open_options_init(
    options: *mut tenure_open_options,
) -> tenure_status {
    boundary(|| {
        let options = arg_out!(options);
        options.write(tenure_open_options {
            struct_size: std::mem::size_of::<tenure_open_options>(),
            synchronous: tenure_synchronous::TENURE_SYNCHRONOUS_FULL as u32,
            busy_timeout_us: 5_000_000,
        });
        Ok(())
    })
}

/// Fill `*spec` with the defaults (job NULL, empty payload, priority 0,
/// max_attempts 3) and the current `struct_size`.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_spec_init(spec: *mut tenure_job_spec) -> tenure_status {
    boundary(|| {
        let spec = arg_out!(spec);
        spec.write(tenure_job_spec {
            struct_size: std::mem::size_of::<tenure_job_spec>(),
            job: std::ptr::null(),
            payload: std::ptr::null(),
            payload_len: 0,
            priority: 0,
            max_attempts: tenure::DEFAULT_MAX_ATTEMPTS,
        });
        Ok(())
    })
}

/// Fill `*query` with the defaults (any state, from the start, page 100)
/// and the current `struct_size`.
#[no_mangle]
pub unsafe extern "C" fn tenure_list_query_init(query: *mut tenure_list_query) -> tenure_status {
    boundary(|| {
        let query = arg_out!(query);
        query.write(tenure_list_query {
            struct_size: std::mem::size_of::<tenure_list_query>(),
            state: tenure_job_state::TENURE_JOB_ANY as u32,
            after: std::ptr::null(),
            limit: 0,
        });
        Ok(())
    })
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

unsafe fn convert_facts(facts: *const tenure_fact, n: usize) -> R<Vec<Fact>> {
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

// ---------------------------------------------------------------------------
// Authority
// ---------------------------------------------------------------------------

/// An open store. Thread-safe: share one handle between threads.
pub struct tenure_authority {
    inner: Authority,
}

/// Open or create the store at `path` (UTF-8). `options` may be NULL for the
/// defaults. On success `*out` receives a handle to free with
/// `tenure_authority_free()`. A store newer than this library is refused
/// untouched (`TENURE_SCHEMA_TOO_NEW`); a foreign or corrupt file is
/// `TENURE_STORE`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_open(
    path: *const c_char,
    options: *const tenure_open_options,
    out: *mut *mut tenure_authority,
) -> tenure_status {
    boundary(|| {
        let path = arg_str!(path);
        let out = arg_out!(out);
        let mut opts = Options::new();
        if !options.is_null() {
            let o = read_sized(options, "options")?;
            let sync = match o.synchronous {
                0 => Synchronous::Full,
                1 => Synchronous::Normal,
                n => return Err(invalid(format!("unknown synchronous value {n}"))),
            };
            if o.busy_timeout_us < 0 {
                return Err(invalid("`busy_timeout_us` must not be negative"));
            }
            opts = opts
                .synchronous(sync)
                .busy_timeout(Duration::from_micros(o.busy_timeout_us as u64));
        }
        let auth = Authority::open(path, &opts)?;
        out.write(boxed(tenure_authority { inner: auth }));
        Ok(())
    })
}

/// Close a handle (NULL is a no-op). Leases and edits made from it stay
/// valid and must be freed separately.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_free(authority: *mut tenure_authority) {
    free_box(authority)
}

/// Create a production. `*out_created` is true if it was new, false if it
/// already existed.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_create_production(
    authority: *const tenure_authority,
    production: *const c_char,
    out_created: *mut bool,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let out = arg_out!(out_created);
        let created = a.inner.create_production(p)?;
        out.write(created);
        Ok(())
    })
}

/// Cancel every non-terminal job of a production and refuse new
/// submissions; `*out_cancelled` receives how many jobs were cancelled.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_cancel_production(
    authority: *const tenure_authority,
    production: *const c_char,
    out_cancelled: *mut u64,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let out = arg_out!(out_cancelled);
        let n = a.inner.cancel_production(p)?;
        out.write(n);
        Ok(())
    })
}

/// Submit one job. `*out_submitted` is a `tenure_submitted` value. The same
/// ID with the same content is `TENURE_SUBMITTED_EXISTING`; different
/// content is `TENURE_CONFLICT`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_submit(
    authority: *const tenure_authority,
    production: *const c_char,
    spec: *const tenure_job_spec,
    out_submitted: *mut tenure_submitted,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let spec = job_spec(spec)?;
        let out = arg_out!(out_submitted);
        let s = a.inner.submit(p, &spec)?;
        out.write(submitted(s));
        Ok(())
    })
}

/// Coordinator cancel of one job; `*out_cancelled` is a `tenure_cancelled`
/// value. A completed or failed job is `TENURE_JOB_TERMINAL`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_cancel(
    authority: *const tenure_authority,
    production: *const c_char,
    job: *const c_char,
    out_cancelled: *mut tenure_cancelled,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let j = arg_str!(job);
        let out = arg_out!(out_cancelled);
        let c = a.inner.cancel(p, j)?;
        out.write(cancelled(c));
        Ok(())
    })
}

/// Claim a named job for `ttl_us` microseconds (1 ..= 86 400 000 000).
/// `*out_lease` receives an active lease to free with `tenure_lease_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_claim(
    authority: *const tenure_authority,
    production: *const c_char,
    job: *const c_char,
    holder: *const c_char,
    ttl_us: i64,
    out_lease: *mut *mut tenure_lease,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let j = arg_str!(job);
        let h = arg_str!(holder);
        let out = arg_out!(out_lease);
        let t = ttl(ttl_us)?;
        let l = a.inner.claim(p, j, h, t)?;
        out.write(boxed(tenure_lease::new(l)));
        Ok(())
    })
}

/// Claim the next claimable job of a production (highest priority, then
/// oldest). `TENURE_NO_JOB_AVAILABLE` when there is none.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_claim_next(
    authority: *const tenure_authority,
    production: *const c_char,
    holder: *const c_char,
    ttl_us: i64,
    out_lease: *mut *mut tenure_lease,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let h = arg_str!(holder);
        let out = arg_out!(out_lease);
        let t = ttl(ttl_us)?;
        let l = a.inner.claim_next(p, h, t)?;
        out.write(boxed(tenure_lease::new(l)));
        Ok(())
    })
}

/// Turn a token from `tenure_lease_export_token()` (a NUL-terminated string,
/// trailing whitespace ignored) back into an active lease, after checking
/// it against the store's current claim, state and expiry. Text that is not
/// UTF-8 is `TENURE_INVALID_ARGUMENT`; otherwise the statuses are distinct:
/// `TENURE_TOKEN_MALFORMED`, `TENURE_TOKEN_TOO_LARGE` (over 2048 bytes),
/// `TENURE_TOKEN_UNSUPPORTED_VERSION`, `TENURE_STALE_LEASE`,
/// `TENURE_LEASE_EXPIRED`, `TENURE_LEASE_CLOSED`, `TENURE_CANCELLED`, ...
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_import_lease(
    authority: *const tenure_authority,
    token: *const c_char,
    out_lease: *mut *mut tenure_lease,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        if token.is_null() {
            return Err(invalid("`token` must not be NULL"));
        }
        // Text that is not UTF-8 is an invalid argument like any C string;
        // every token rule (size bound included) is the core's.
        let text = CStr::from_ptr(token)
            .to_str()
            .map_err(|_| invalid("`token` is not valid UTF-8"))?;
        let out = arg_out!(out_lease);
        let l = a.inner.import_lease(text)?;
        out.write(boxed(tenure_lease::new(l)));
        Ok(())
    })
}

/// Observe one job; `*out_view` receives a snapshot to free with
/// `tenure_job_view_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_job(
    authority: *const tenure_authority,
    production: *const c_char,
    job: *const c_char,
    out_view: *mut *mut tenure_job_view,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let j = arg_str!(job);
        let out = arg_out!(out_view);
        let v = a.inner.job(p, j)?;
        out.write(boxed(tenure_job_view::new(&v)));
        Ok(())
    })
}

/// Copy a job's payload into `buf` (`cap` bytes; `buf` may be NULL when
/// `cap` is 0). `*out_len` receives the payload length; if `cap` is smaller,
/// nothing is copied and `TENURE_INVALID_ARGUMENT` is returned with
/// `*out_len` set to the required size.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_payload(
    authority: *const tenure_authority,
    production: *const c_char,
    job: *const c_char,
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let j = arg_str!(job);
        if buf.is_null() && cap != 0 {
            return Err(invalid("`buf` must not be NULL when `cap` is not 0"));
        }
        let out = arg_out!(out_len);
        let payload = a.inner.payload(p, j)?;
        copy_out(&payload, false, buf, cap, out, "payload")
    })
}

/// List a production's jobs in job-ID order, a page at a time. `query` may
/// be NULL (all states, first page of 100). For the next page, pass the
/// last job ID of this page as `query->after`. `*out_list` receives a
/// snapshot to free with `tenure_job_list_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_jobs(
    authority: *const tenure_authority,
    production: *const c_char,
    query: *const tenure_list_query,
    out_list: *mut *mut tenure_job_list,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let mut q = ListQuery::default();
        if !query.is_null() {
            let c = read_sized(query, "query")?;
            q.state = job_state_from(c.state)?;
            q.after = opt_str_arg(c.after, "query->after")?.map(str::to_owned);
            q.limit = c.limit;
        }
        let out = arg_out!(out_list);
        let jobs = a.inner.jobs(p, &q)?;
        out.write(boxed(tenure_job_list {
            items: jobs.iter().map(tenure_job_view::new).collect(),
        }));
        Ok(())
    })
}

/// All productions, by name; free the list with `tenure_production_list_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_productions(
    authority: *const tenure_authority,
    out_list: *mut *mut tenure_production_list,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let out = arg_out!(out_list);
        let ps = a.inner.productions()?;
        out.write(boxed(tenure_production_list::new(&ps)));
        Ok(())
    })
}

/// Facts published by one job's completion, provenance (`tenure.*` keys)
/// included; free with `tenure_fact_list_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_facts(
    authority: *const tenure_authority,
    production: *const c_char,
    job: *const c_char,
    out_list: *mut *mut tenure_fact_list,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let j = arg_str!(job);
        let out = arg_out!(out_list);
        let f = a.inner.facts(p, j)?;
        out.write(boxed(tenure_fact_list::new(&f)));
        Ok(())
    })
}

/// Every fact of a production, by job; free with `tenure_fact_list_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_production_facts(
    authority: *const tenure_authority,
    production: *const c_char,
    out_list: *mut *mut tenure_fact_list,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let out = arg_out!(out_list);
        let f = a.inner.production_facts(p)?;
        out.write(boxed(tenure_fact_list::new(&f)));
        Ok(())
    })
}

/// Events with a sequence number greater than `after`, oldest first, at most
/// `limit` (0 = 100, capped at 10 000). Page by passing the last sequence
/// number seen. Free with `tenure_event_list_free()`.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_events(
    authority: *const tenure_authority,
    after: u64,
    limit: usize,
    out_list: *mut *mut tenure_event_list,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let out = arg_out!(out_list);
        let e = a.inner.events(after, limit)?;
        out.write(boxed(tenure_event_list::new(&e)));
        Ok(())
    })
}

/// Events of one production (see `tenure_authority_events()`).
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_production_events(
    authority: *const tenure_authority,
    production: *const c_char,
    after: u64,
    limit: usize,
    out_list: *mut *mut tenure_event_list,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let p = arg_str!(production);
        let out = arg_out!(out_list);
        let e = a.inner.production_events(p, after, limit)?;
        out.write(boxed(tenure_event_list::new(&e)));
        Ok(())
    })
}

/// The authority's clock reading, its durable high-water mark (both µs since
/// the Unix epoch) and whether guarded operations are currently refused
/// because the clock reads below the mark.
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_clock(
    authority: *const tenure_authority,
    out_now_us: *mut i64,
    out_mark_us: *mut i64,
    out_blocked: *mut bool,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let now = arg_out!(out_now_us);
        let mark = arg_out!(out_mark_us);
        let blocked = arg_out!(out_blocked);
        let c = a.inner.clock()?;
        now.write(c.now_us);
        mark.write(c.mark_us);
        blocked.write(c.blocked);
        Ok(())
    })
}

/// Run the offline invariant checker; `*out_violations` receives the number
/// of violations found (0 means consistent; the texts are available from the
/// CLI's `check`).
#[no_mangle]
pub unsafe extern "C" fn tenure_authority_check(
    authority: *const tenure_authority,
    out_violations: *mut u64,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let out = arg_out!(out_violations);
        let r = a.inner.check()?;
        out.write(r.violations.len() as u64);
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Leases
// ---------------------------------------------------------------------------

/// An owning lease on one job. Thread-safe. It holds a private secret that
/// only `tenure_lease_export_token()` reveals. Freeing it never writes.
pub struct tenure_lease {
    lease: Lease,
    production: CString,
    job: CString,
    holder: CString,
    claim_id: CString,
}

impl tenure_lease {
    fn new(lease: Lease) -> tenure_lease {
        tenure_lease {
            production: cstring(lease.production()),
            job: cstring(lease.job()),
            holder: cstring(lease.holder()),
            claim_id: cstring(&lease.claim_id().hyphenated().to_string()),
            lease,
        }
    }
}

/// Free a lease handle (NULL is a no-op). Never writes, renews or releases.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_free(lease: *mut tenure_lease) {
    free_box(lease)
}

/// The lease's production ID (borrowed; NULL if `lease` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_production(lease: *const tenure_lease) -> *const c_char {
    value(std::ptr::null(), || {
        lease.as_ref().map(|l| l.production.as_ptr())
    })
}

/// The lease's job ID (borrowed; NULL if `lease` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_job(lease: *const tenure_lease) -> *const c_char {
    value(std::ptr::null(), || lease.as_ref().map(|l| l.job.as_ptr()))
}

/// The holder given at claim time (borrowed; NULL if `lease` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_holder(lease: *const tenure_lease) -> *const c_char {
    value(std::ptr::null(), || {
        lease.as_ref().map(|l| l.holder.as_ptr())
    })
}

/// The claim ID (the public fencing token) as 36 characters of lower-case
/// hyphenated UUID text (borrowed; NULL if `lease` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_claim_id(lease: *const tenure_lease) -> *const c_char {
    value(std::ptr::null(), || {
        lease.as_ref().map(|l| l.claim_id.as_ptr())
    })
}

/// Which attempt this claim is (1-based; 0 if `lease` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_attempt(lease: *const tenure_lease) -> u32 {
    value(0, || lease.as_ref().map(|l| l.lease.attempt()))
}

/// Expiry as last confirmed by the store, µs since the Unix epoch (0 if
/// `lease` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_expires_us(lease: *const tenure_lease) -> i64 {
    value(0, || lease.as_ref().map(|l| l.lease.expires_us()))
}

/// The local status, a `tenure_lease_status` value (0 if `lease` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_status_get(lease: *const tenure_lease) -> u32 {
    value(0, || {
        lease.as_ref().map(|l| match l.lease.status() {
            LeaseStatus::Pending => tenure_lease_status::TENURE_LEASE_STATUS_PENDING as u32,
            LeaseStatus::Active => tenure_lease_status::TENURE_LEASE_STATUS_ACTIVE as u32,
            LeaseStatus::Closed => tenure_lease_status::TENURE_LEASE_STATUS_CLOSED as u32,
        })
    })
}

/// Extend the lease to now + `ttl_us`. The new expiry must be later than the
/// current one (`TENURE_NOT_EXTENDED`) and the renewal must commit before
/// the current expiry (`TENURE_LEASE_EXPIRED`).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_renew(
    lease: *const tenure_lease,
    ttl_us: i64,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let t = ttl(ttl_us)?;
        l.lease.renew(t)
    })
}

/// Give the job back unfinished; closes the lease. `*out_state` receives the
/// job's new state (`tenure_job_state`).
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_release(
    lease: *const tenure_lease,
    out_state: *mut tenure_job_state,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let out = arg_out!(out_state);
        let st = l.lease.release()?;
        out.write(job_state(st));
        Ok(())
    })
}

/// Report failure with a UTF-8 `reason` (at most 1024 bytes): requested again
/// if `permanent` is false and attempts remain, else failed. Closes the
/// lease; `*out_state` receives the job's new state.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_fail(
    lease: *const tenure_lease,
    reason: *const c_char,
    permanent: bool,
    out_state: *mut tenure_job_state,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let r = arg_str!(reason);
        let out = arg_out!(out_state);
        let st = l.lease.fail(r, permanent)?;
        out.write(job_state(st));
        Ok(())
    })
}

/// Complete the job, publishing `n_facts` caller facts (`facts` may be NULL
/// when `n_facts` is 0; at most 64) and provenance in the same transaction.
/// Closes the lease.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_complete(
    lease: *const tenure_lease,
    facts: *const tenure_fact,
    n_facts: usize,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        let f = convert_facts(facts, n_facts)?;
        l.lease.complete(&f)
    })
}

/// Export the lease credential as NUL-terminated token text into `buf`
/// (`cap` bytes; `buf` may be NULL when `cap` is 0). `*out_size` receives the
/// size needed including the NUL (at most 2049). If `cap` is smaller,
/// nothing is written to `buf` and `TENURE_INVALID_ARGUMENT` is returned with
/// `*out_size` set. Only an active lease can be exported. The token is a
/// password: keep it out of logs and command lines, and wipe the buffer
/// when done.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_export_token(
    lease: *const tenure_lease,
    buf: *mut c_char,
    cap: usize,
    out_size: *mut usize,
) -> tenure_status {
    boundary(|| {
        let l = arg_ref!(lease);
        if buf.is_null() && cap != 0 {
            return Err(invalid("`buf` must not be NULL when `cap` is not 0"));
        }
        let out = arg_out!(out_size);
        let t = l.lease.export_token()?;
        copy_out(
            t.expose().as_bytes(),
            true,
            buf as *mut u8,
            cap,
            out,
            "token",
        )
    })
}

// ---------------------------------------------------------------------------
// Edits
// ---------------------------------------------------------------------------

/// One write transaction holding the writer lock until commit or abort.
/// Use from one thread at a time (calls are serialized by a mutex).
/// `tenure_edit_commit()` and `tenure_edit_abort()` finish the transaction;
/// the handle must still be freed with `tenure_edit_free()`, which aborts an
/// edit that is still open. Operations on a finished edit return
/// `TENURE_INVALID_ARGUMENT`.
pub struct tenure_edit {
    edit: Mutex<Option<Edit>>,
}

impl tenure_edit {
    fn lock(&self) -> MutexGuard<'_, Option<Edit>> {
        self.edit.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn with<T>(&self, f: impl FnOnce(&mut Edit) -> R<T>) -> R<T> {
        match self.lock().as_mut() {
            Some(e) => f(e),
            None => Err(invalid("the edit has already been committed or aborted")),
        }
    }
}

/// Begin an explicit edit (takes the writer lock; keep edits short).
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_begin(
    authority: *const tenure_authority,
    out_edit: *mut *mut tenure_edit,
) -> tenure_status {
    boundary(|| {
        let a = arg_ref!(authority);
        let out = arg_out!(out_edit);
        let e = a.inner.edit()?;
        out.write(boxed(tenure_edit {
            edit: Mutex::new(Some(e)),
        }));
        Ok(())
    })
}

/// Free an edit handle (NULL is a no-op), aborting it if still open.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_free(edit: *mut tenure_edit) {
    free_box(edit)
}

/// Commit. On success pending leases become active; on failure nothing is
/// written and pending leases close. Either way the edit is finished.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_commit(edit: *const tenure_edit) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let taken = e.lock().take();
        match taken {
            Some(ed) => ed.commit(),
            None => Err(invalid("the edit has already been committed or aborted")),
        }
    })
}

/// Roll everything back; pending leases close. The edit is finished.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_abort(edit: *const tenure_edit) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let taken = e.lock().take();
        match taken {
            Some(ed) => {
                ed.abort();
                Ok(())
            }
            None => Err(invalid("the edit has already been committed or aborted")),
        }
    })
}

/// Create a production inside the edit (see `tenure_authority_create_production()`).
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_create_production(
    edit: *const tenure_edit,
    production: *const c_char,
    out_created: *mut bool,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let p = arg_str!(production);
        let out = arg_out!(out_created);
        let c = e.with(|ed| ed.create_production(p))?;
        out.write(c);
        Ok(())
    })
}

/// Cancel a production inside the edit (see `tenure_authority_cancel_production()`).
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_cancel_production(
    edit: *const tenure_edit,
    production: *const c_char,
    out_cancelled: *mut u64,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let p = arg_str!(production);
        let out = arg_out!(out_cancelled);
        let n = e.with(|ed| ed.cancel_production(p))?;
        out.write(n);
        Ok(())
    })
}

/// Submit a job inside the edit (see `tenure_authority_submit()`).
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_submit(
    edit: *const tenure_edit,
    production: *const c_char,
    spec: *const tenure_job_spec,
    out_submitted: *mut tenure_submitted,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let p = arg_str!(production);
        let spec = job_spec(spec)?;
        let out = arg_out!(out_submitted);
        let s = e.with(|ed| ed.submit(p, &spec))?;
        out.write(submitted(s));
        Ok(())
    })
}

/// Cancel a job inside the edit (see `tenure_authority_cancel()`).
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_cancel(
    edit: *const tenure_edit,
    production: *const c_char,
    job: *const c_char,
    out_cancelled: *mut tenure_cancelled,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let p = arg_str!(production);
        let j = arg_str!(job);
        let out = arg_out!(out_cancelled);
        let c = e.with(|ed| ed.cancel(p, j))?;
        out.write(cancelled(c));
        Ok(())
    })
}

/// Claim a named job inside the edit; the lease is pending until commit
/// (usable inside this edit, e.g. to complete atomically).
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_claim(
    edit: *const tenure_edit,
    production: *const c_char,
    job: *const c_char,
    holder: *const c_char,
    ttl_us: i64,
    out_lease: *mut *mut tenure_lease,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let p = arg_str!(production);
        let j = arg_str!(job);
        let h = arg_str!(holder);
        let out = arg_out!(out_lease);
        let t = ttl(ttl_us)?;
        let l = e.with(|ed| ed.claim(p, j, h, t))?;
        out.write(boxed(tenure_lease::new(l)));
        Ok(())
    })
}

/// Claim the next claimable job inside the edit; the lease is pending.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_claim_next(
    edit: *const tenure_edit,
    production: *const c_char,
    holder: *const c_char,
    ttl_us: i64,
    out_lease: *mut *mut tenure_lease,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let p = arg_str!(production);
        let h = arg_str!(holder);
        let out = arg_out!(out_lease);
        let t = ttl(ttl_us)?;
        let l = e.with(|ed| ed.claim_next(p, h, t))?;
        out.write(boxed(tenure_lease::new(l)));
        Ok(())
    })
}

/// Renew a lease inside the edit; its expiry moves when the edit commits.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_renew(
    edit: *const tenure_edit,
    lease: *const tenure_lease,
    ttl_us: i64,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let l = arg_ref!(lease);
        let t = ttl(ttl_us)?;
        e.with(|ed| ed.renew(&l.lease, t))
    })
}

/// Release a lease inside the edit; it closes when the edit commits.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_release(
    edit: *const tenure_edit,
    lease: *const tenure_lease,
    out_state: *mut tenure_job_state,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let l = arg_ref!(lease);
        let out = arg_out!(out_state);
        let st = e.with(|ed| ed.release(&l.lease))?;
        out.write(job_state(st));
        Ok(())
    })
}

/// Fail a lease inside the edit; it closes when the edit commits.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_fail(
    edit: *const tenure_edit,
    lease: *const tenure_lease,
    reason: *const c_char,
    permanent: bool,
    out_state: *mut tenure_job_state,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let l = arg_ref!(lease);
        let r = arg_str!(reason);
        let out = arg_out!(out_state);
        let st = e.with(|ed| ed.fail(&l.lease, r, permanent))?;
        out.write(job_state(st));
        Ok(())
    })
}

/// Complete a lease with facts inside the edit; it closes when the edit
/// commits and the facts become visible with the commit.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_complete(
    edit: *const tenure_edit,
    lease: *const tenure_lease,
    facts: *const tenure_fact,
    n_facts: usize,
) -> tenure_status {
    boundary(|| {
        let e = arg_ref!(edit);
        let l = arg_ref!(lease);
        let f = convert_facts(facts, n_facts)?;
        e.with(|ed| ed.complete(&l.lease, &f))
    })
}

// ---------------------------------------------------------------------------
// Views and lists (immutable snapshots read through accessors)
// ---------------------------------------------------------------------------

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
}

impl tenure_job_view {
    fn new(v: &JobView) -> tenure_job_view {
        tenure_job_view {
            production: cstring(&v.production),
            job: cstring(&v.job),
            state: job_state(v.state),
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
        }
    }
}

/// Free a job view (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_free(view: *mut tenure_job_view) {
    free_box(view)
}

/// Production ID (borrowed).
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_production(v: *const tenure_job_view) -> *const c_char {
    value(std::ptr::null(), || {
        v.as_ref().map(|v| v.production.as_ptr())
    })
}

/// Job ID (borrowed).
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_job(v: *const tenure_job_view) -> *const c_char {
    value(std::ptr::null(), || v.as_ref().map(|v| v.job.as_ptr()))
}

/// Observed state, a `tenure_job_state` value (0 if `v` is NULL).
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_state(v: *const tenure_job_view) -> u32 {
    value(0, || v.as_ref().map(|v| v.state as u32))
}

/// Claims made so far.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_attempts(v: *const tenure_job_view) -> u32 {
    value(0, || v.as_ref().map(|v| v.attempts))
}

/// Claims allowed.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_max_attempts(v: *const tenure_job_view) -> u32 {
    value(0, || v.as_ref().map(|v| v.max_attempts))
}

/// Priority.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_priority(v: *const tenure_job_view) -> i32 {
    value(0, || v.as_ref().map(|v| v.priority))
}

/// Holder of the latest claim (borrowed), or NULL if never claimed.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_holder(v: *const tenure_job_view) -> *const c_char {
    value(std::ptr::null(), || v.as_ref().map(|v| opt_ptr(&v.holder)))
}

/// Claim ID of the latest claim as 36-character UUID text (borrowed), or NULL.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_claim_id(v: *const tenure_job_view) -> *const c_char {
    value(std::ptr::null(), || {
        v.as_ref().map(|v| opt_ptr(&v.claim_id))
    })
}

/// Expiry of the latest claim (µs since the epoch): returns true and writes
/// `*out_us` if there is one, false (nothing written) otherwise.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_expires_us(
    v: *const tenure_job_view,
    out_us: *mut i64,
) -> bool {
    value(false, || {
        let v = v.as_ref()?;
        let e = v.expires_us?;
        if out_us.is_null() {
            return None;
        }
        out_us.write(e);
        Some(true)
    })
}

/// Submission time (µs since the epoch).
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_created_us(v: *const tenure_job_view) -> i64 {
    value(0, || v.as_ref().map(|v| v.created_us))
}

/// Time of the latest change (µs since the epoch).
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_updated_us(v: *const tenure_job_view) -> i64 {
    value(0, || v.as_ref().map(|v| v.updated_us))
}

/// Payload size in bytes.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_payload_len(v: *const tenure_job_view) -> u64 {
    value(0, || v.as_ref().map(|v| v.payload_len))
}

/// The reason given by the latest failure (borrowed), or NULL.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_view_last_error(v: *const tenure_job_view) -> *const c_char {
    value(std::ptr::null(), || {
        v.as_ref().map(|v| opt_ptr(&v.last_error))
    })
}

/// One page of job views.
pub struct tenure_job_list {
    items: Vec<tenure_job_view>,
}

/// Free a job list (NULL is a no-op); views obtained from it die with it.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_list_free(list: *mut tenure_job_list) {
    free_box(list)
}

/// Number of jobs in the page.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_list_len(list: *const tenure_job_list) -> usize {
    value(0, || list.as_ref().map(|l| l.items.len()))
}

/// The job view at `index` (borrowed from the list: do not free it), or
/// NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_job_list_get(
    list: *const tenure_job_list,
    index: usize,
) -> *const tenure_job_view {
    value(std::ptr::null(), || {
        list.as_ref()?
            .items
            .get(index)
            .map(|v| v as *const tenure_job_view)
    })
}

/// A snapshot of the productions.
pub struct tenure_production_list {
    items: Vec<(CString, i64, Option<i64>)>,
}

impl tenure_production_list {
    fn new(ps: &[ProductionView]) -> tenure_production_list {
        tenure_production_list {
            items: ps
                .iter()
                .map(|p| (cstring(&p.name), p.created_us, p.cancelled_us))
                .collect(),
        }
    }
}

/// Free a production list (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn tenure_production_list_free(list: *mut tenure_production_list) {
    free_box(list)
}

/// Number of productions.
#[no_mangle]
pub unsafe extern "C" fn tenure_production_list_len(list: *const tenure_production_list) -> usize {
    value(0, || list.as_ref().map(|l| l.items.len()))
}

/// Name of production `index` (borrowed), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_production_list_name(
    list: *const tenure_production_list,
    index: usize,
) -> *const c_char {
    value(std::ptr::null(), || {
        list.as_ref()?.items.get(index).map(|p| p.0.as_ptr())
    })
}

/// Creation time of production `index` (µs since the epoch), 0 if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_production_list_created_us(
    list: *const tenure_production_list,
    index: usize,
) -> i64 {
    value(0, || list.as_ref()?.items.get(index).map(|p| p.1))
}

/// Cancellation time of production `index`: true and `*out_us` written if it
/// was cancelled, false otherwise.
#[no_mangle]
pub unsafe extern "C" fn tenure_production_list_cancelled_us(
    list: *const tenure_production_list,
    index: usize,
    out_us: *mut i64,
) -> bool {
    value(false, || {
        let c = list.as_ref()?.items.get(index)?.2?;
        if out_us.is_null() {
            return None;
        }
        out_us.write(c);
        Some(true)
    })
}

/// A snapshot of published facts.
pub struct tenure_fact_list {
    items: Vec<[CString; 3]>,
}

impl tenure_fact_list {
    fn new(fs: &[PublishedFact]) -> tenure_fact_list {
        tenure_fact_list {
            items: fs
                .iter()
                .map(|f| [cstring(&f.job), cstring(&f.key), cstring(&f.value)])
                .collect(),
        }
    }
    unsafe fn field(list: *const tenure_fact_list, index: usize, k: usize) -> *const c_char {
        value(std::ptr::null(), || {
            list.as_ref()?.items.get(index).map(|f| f[k].as_ptr())
        })
    }
}

/// Free a fact list (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn tenure_fact_list_free(list: *mut tenure_fact_list) {
    free_box(list)
}

/// Number of facts.
#[no_mangle]
pub unsafe extern "C" fn tenure_fact_list_len(list: *const tenure_fact_list) -> usize {
    value(0, || list.as_ref().map(|l| l.items.len()))
}

/// Job ID of fact `index` (borrowed), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_fact_list_job(
    list: *const tenure_fact_list,
    index: usize,
) -> *const c_char {
    tenure_fact_list::field(list, index, 0)
}

/// Key of fact `index` (borrowed), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_fact_list_key(
    list: *const tenure_fact_list,
    index: usize,
) -> *const c_char {
    tenure_fact_list::field(list, index, 1)
}

/// Value of fact `index` (borrowed), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_fact_list_value(
    list: *const tenure_fact_list,
    index: usize,
) -> *const c_char {
    tenure_fact_list::field(list, index, 2)
}

struct CEvent {
    seq: u64,
    at_us: i64,
    production: CString,
    job: Option<CString>,
    kind: &'static CStr,
    state: Option<tenure_job_state>,
    claim_id: Option<CString>,
    holder: Option<CString>,
    attempt: u32,
    expires_us: Option<i64>,
    detail: CString,
}

/// A snapshot of events (never carries a secret).
pub struct tenure_event_list {
    items: Vec<CEvent>,
}

impl tenure_event_list {
    fn new(es: &[Event]) -> tenure_event_list {
        tenure_event_list {
            items: es
                .iter()
                .map(|e| CEvent {
                    seq: e.seq,
                    at_us: e.at_us,
                    production: cstring(&e.production),
                    job: e.job.as_deref().map(cstring),
                    kind: kind_name(e.kind.as_str()),
                    state: e.state.map(job_state),
                    claim_id: e.claim_id.map(|c| cstring(&c.hyphenated().to_string())),
                    holder: e.holder.as_deref().map(cstring),
                    attempt: e.attempt.unwrap_or(0),
                    expires_us: e.expires_us,
                    detail: cstring(&e.detail),
                })
                .collect(),
        }
    }
    unsafe fn get<'a>(list: *const tenure_event_list, index: usize) -> Option<&'a CEvent> {
        list.as_ref()?.items.get(index)
    }
}

/// Static C names of event kinds (leaked once per distinct kind name).
fn kind_name(s: &'static str) -> &'static CStr {
    static NAMES: Mutex<Vec<&'static CStr>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = names.iter().find(|c| c.to_bytes() == s.as_bytes()) {
        return c;
    }
    let c: &'static CStr = Box::leak(cstring(s).into_boxed_c_str());
    names.push(c);
    c
}

/// Free an event list (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_free(list: *mut tenure_event_list) {
    free_box(list)
}

/// Number of events.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_len(list: *const tenure_event_list) -> usize {
    value(0, || list.as_ref().map(|l| l.items.len()))
}

/// Sequence number of event `index` (0 if out of range).
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_seq(
    list: *const tenure_event_list,
    index: usize,
) -> u64 {
    value(0, || tenure_event_list::get(list, index).map(|e| e.seq))
}

/// Time of event `index` (µs since the epoch; 0 if out of range).
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_at_us(
    list: *const tenure_event_list,
    index: usize,
) -> i64 {
    value(0, || tenure_event_list::get(list, index).map(|e| e.at_us))
}

/// Production of event `index` (borrowed), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_production(
    list: *const tenure_event_list,
    index: usize,
) -> *const c_char {
    value(std::ptr::null(), || {
        tenure_event_list::get(list, index).map(|e| e.production.as_ptr())
    })
}

/// Job of event `index` (borrowed), or NULL (production events, out of range).
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_job(
    list: *const tenure_event_list,
    index: usize,
) -> *const c_char {
    value(std::ptr::null(), || {
        tenure_event_list::get(list, index).map(|e| opt_ptr(&e.job))
    })
}

/// Kind of event `index` as a static snake_case name (`"claimed"`,
/// `"completed"`, ...; later versions may add kinds), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_kind(
    list: *const tenure_event_list,
    index: usize,
) -> *const c_char {
    value(std::ptr::null(), || {
        tenure_event_list::get(list, index).map(|e| e.kind.as_ptr())
    })
}

/// The job's stored state after event `index` (`tenure_job_state`), or 0
/// for production events / out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_state(
    list: *const tenure_event_list,
    index: usize,
) -> u32 {
    value(0, || {
        tenure_event_list::get(list, index).map(|e| e.state.map_or(0, |s| s as u32))
    })
}

/// Claim ID involved in event `index` (36-character text, borrowed), or NULL.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_claim_id(
    list: *const tenure_event_list,
    index: usize,
) -> *const c_char {
    value(std::ptr::null(), || {
        tenure_event_list::get(list, index).map(|e| opt_ptr(&e.claim_id))
    })
}

/// Holder involved in event `index` (borrowed), or NULL.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_holder(
    list: *const tenure_event_list,
    index: usize,
) -> *const c_char {
    value(std::ptr::null(), || {
        tenure_event_list::get(list, index).map(|e| opt_ptr(&e.holder))
    })
}

/// Attempt number involved in event `index` (1-based), or 0 if none.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_attempt(
    list: *const tenure_event_list,
    index: usize,
) -> u32 {
    value(0, || tenure_event_list::get(list, index).map(|e| e.attempt))
}

/// Lease expiry after event `index`: true and `*out_us` written if a lease
/// is live, false otherwise.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_expires_us(
    list: *const tenure_event_list,
    index: usize,
    out_us: *mut i64,
) -> bool {
    value(false, || {
        let e = tenure_event_list::get(list, index)?.expires_us?;
        if out_us.is_null() {
            return None;
        }
        out_us.write(e);
        Some(true)
    })
}

/// Short human detail of event `index` (failure reason, cancel note;
/// borrowed, possibly empty), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn tenure_event_list_detail(
    list: *const tenure_event_list,
    index: usize,
) -> *const c_char {
    value(std::ptr::null(), || {
        tenure_event_list::get(list, index).map(|e| e.detail.as_ptr())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_code_has_the_same_number() {
        assert_eq!(tenure_status::ERRORS.len(), ErrorCode::ALL.len());
        for (s, c) in tenure_status::ERRORS.iter().zip(ErrorCode::ALL) {
            assert_eq!(*s as u32, c.as_u32(), "{c:?}");
            assert_eq!(tenure_status::from_code(c), *s);
            let name = unsafe { CStr::from_ptr(tenure_status_name(c.as_u32())) };
            assert_eq!(name.to_str().unwrap(), c.name());
        }
        let name = |n| {
            unsafe { CStr::from_ptr(tenure_status_name(n)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(name(0), "ok");
        assert_eq!(name(ErrorCode::ALL.len() as u32 + 1), "unknown");
        assert_eq!(name(u32::MAX), "unknown");
    }

    #[test]
    fn documented_thread_safety_holds() {
        fn shared<T: Send + Sync>() {}
        shared::<tenure_authority>();
        shared::<tenure_lease>();
        shared::<tenure_edit>(); // via its internal mutex
        shared::<tenure_job_view>();
        shared::<tenure_job_list>();
        shared::<tenure_production_list>();
        shared::<tenure_fact_list>();
        shared::<tenure_event_list>();
    }

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
        assert_eq!(tenure_abi_version(), 1 << 16);
    }

    fn last_error() -> String {
        let mut size = 0usize;
        let mut buf = vec![0 as c_char; 4096];
        let st = unsafe { tenure_last_error_message(buf.as_mut_ptr(), buf.len(), &mut size) };
        assert_eq!(st, tenure_status::TENURE_OK);
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn a_panic_becomes_internal_and_is_reported() {
        let st = boundary(|| panic!("boom in the core"));
        assert_eq!(st, tenure_status::TENURE_INTERNAL);
        let msg = last_error();
        assert!(msg.contains("panic") && msg.contains("boom"), "{msg}");
        // A following success clears the message.
        assert_eq!(boundary(|| Ok(())), tenure_status::TENURE_OK);
        assert_eq!(last_error(), "");
        // Accessors fall back to their default on a panic.
        assert_eq!(value(7u32, || panic!("accessor")), 7);
    }

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
