//! `tenure_lease`: an owning lease, its accessors and the operations it runs
//! in a transaction of its own.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use tenure::Lease;

use crate::boundary::{boundary, boxed, buf_arg, copy_out, cstring, Handle};
use crate::options::{tenure_fact, tenure_job_state, tenure_lease_status};
use crate::status::tenure_status;

/// An owning lease on one job. Thread-safe. It holds a private secret that
/// only `tenure_lease_export_token()` reveals. Freeing it never writes.
pub struct tenure_lease {
    pub(crate) lease: Lease,
    /// The C text of the lease's identity, each made when an accessor
    /// first asks for it (a claim whose caller never reads them makes
    /// none) and kept, so a borrowed pointer lives as long as the handle.
    production: OnceLock<CString>,
    job: OnceLock<CString>,
    holder: OnceLock<CString>,
    claim_id: OnceLock<CString>,
}

impl tenure_lease {
    /// A new handle for `lease`, to be freed with `tenure_lease_free()`.
    pub(crate) fn boxed(lease: Lease) -> *mut tenure_lease {
        boxed(tenure_lease {
            lease,
            production: OnceLock::new(),
            job: OnceLock::new(),
            holder: OnceLock::new(),
            claim_id: OnceLock::new(),
        })
    }
}

/// The C string kept in `slot`, made by `make` on first use.
fn c_text(slot: &OnceLock<CString>, make: impl FnOnce() -> CString) -> *const c_char {
    slot.get_or_init(make).as_ptr()
}

impl Handle for tenure_lease {}

accessors! {
    tenure_lease {
        /// Free a lease handle (NULL is a no-op). Never writes, renews or releases.
        free tenure_lease_free(lease);
        /// The lease's production ID (borrowed; NULL if `lease` is NULL).
        fn tenure_lease_production(lease) -> *const c_char = |l| c_text(&l.production, || cstring(l.lease.production()));
        /// The lease's job ID (borrowed; NULL if `lease` is NULL).
        fn tenure_lease_job(lease) -> *const c_char = |l| c_text(&l.job, || cstring(l.lease.job()));
        /// The holder given at claim time (borrowed; NULL if `lease` is NULL).
        fn tenure_lease_holder(lease) -> *const c_char = |l| c_text(&l.holder, || cstring(l.lease.holder()));
        /// The claim ID (the public fencing token) as 36 characters of lower-case
        /// hyphenated UUID text (borrowed; NULL if `lease` is NULL).
        fn tenure_lease_claim_id(lease) -> *const c_char = |l| c_text(&l.claim_id, || cstring(&l.lease.claim_id().hyphenated().to_string()));
        /// Which attempt this claim is (1-based; 0 if `lease` is NULL).
        fn tenure_lease_attempt(lease) -> u32 = |l| l.lease.attempt();
        /// Expiry as last confirmed by the store, µs since the Unix epoch (0 if
        /// `lease` is NULL).
        fn tenure_lease_expires_us(lease) -> i64 = |l| l.lease.expires_us();
        /// The local status, a `tenure_lease_status` value (0 if `lease` is NULL).
        fn tenure_lease_status_get(lease) -> u32 = |l| tenure_lease_status::from(l.lease.status()) as u32;
    }
}

lease_writes! {
    /// Extend the lease to now + `ttl_us`. The new expiry must be later than the
    /// current one (`TENURE_NOT_EXTENDED`) and the renewal must commit before
    /// the current expiry (`TENURE_LEASE_EXPIRED`).
    renew: tenure_lease_renew;
    /// Give the job back unfinished; closes the lease. `*out_state` receives the
    /// job's new state (`tenure_job_state`).
    release: tenure_lease_release;
    /// Report failure with a UTF-8 `reason` (at most 1024 bytes): requested again
    /// if `permanent` is false and attempts remain, else failed. Closes the
    /// lease; `*out_state` receives the job's new state.
    fail: tenure_lease_fail;
    /// Complete the job, publishing `n_facts` caller facts (`facts` may be NULL
    /// when `n_facts` is 0; at most 64) and provenance in the same transaction.
    /// Closes the lease.
    complete: tenure_lease_complete;
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
        buf_arg(buf, cap)?;
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
