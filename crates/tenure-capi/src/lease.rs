//! `tenure_lease`: an owning lease, its accessors and the operations it runs
//! in a transaction of its own.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use tenure::Lease;

use crate::boundary::{boxed, buf_arg, copy_out, cstring, out_arg, ttl, Arg, Handle};
use crate::options::{convert_facts, tenure_fact, tenure_job_state, tenure_lease_status};
use crate::status::tenure_status;
use crate::writer::{Alone, LeaseWriter};

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

export! {
    /// Free a lease handle (NULL is a no-op). Never writes, renews or releases.
    fn tenure_lease_free(lease: *mut tenure_lease) = free;
    /// The lease's production ID (borrowed; NULL if `lease` is NULL).
    fn tenure_lease_production(lease: *const tenure_lease) -> *const c_char =
        value Some(c_text(&lease.production, || cstring(lease.lease.production())));
    /// The lease's job ID (borrowed; NULL if `lease` is NULL).
    fn tenure_lease_job(lease: *const tenure_lease) -> *const c_char =
        value Some(c_text(&lease.job, || cstring(lease.lease.job())));
    /// The holder given at claim time (borrowed; NULL if `lease` is NULL).
    fn tenure_lease_holder(lease: *const tenure_lease) -> *const c_char =
        value Some(c_text(&lease.holder, || cstring(lease.lease.holder())));
    /// The claim ID (the public fencing token) as 36 characters of lower-case
    /// hyphenated UUID text (borrowed; NULL if `lease` is NULL).
    fn tenure_lease_claim_id(lease: *const tenure_lease) -> *const c_char =
        value Some(c_text(&lease.claim_id, || {
            cstring(&lease.lease.claim_id().hyphenated().to_string())
        }));
    /// Which attempt this claim is (1-based; 0 if `lease` is NULL).
    fn tenure_lease_attempt(lease: *const tenure_lease) -> u32 = value Some(lease.lease.attempt());
    /// Expiry as last confirmed by the store, µs since the Unix epoch (0 if
    /// `lease` is NULL).
    fn tenure_lease_expires_us(lease: *const tenure_lease) -> i64 =
        value Some(lease.lease.expires_us());
    /// The local status, a `tenure_lease_status` value (0 if `lease` is NULL).
    fn tenure_lease_status_get(lease: *const tenure_lease) -> u32 =
        value Some(tenure_lease_status::from(lease.lease.status()) as u32);
}

export! {
    /// Extend the lease to now + `ttl_us`. The new expiry must be later than the
    /// current one (`TENURE_NOT_EXTENDED`) and the renewal must commit before
    /// the current expiry (`TENURE_LEASE_EXPIRED`).
    fn tenure_lease_renew(lease: *const tenure_lease, ttl_us: i64) =
        LeaseWriter::renew(&Alone, &lease.lease, ttl(ttl_us)?);

    /// Give the job back unfinished; closes the lease. `*out_state` receives the
    /// job's new state (`tenure_job_state`).
    fn tenure_lease_release(lease: *const tenure_lease) -> out_state: *mut tenure_job_state =
        tenure_job_state::from(LeaseWriter::release(&Alone, &lease.lease)?);

    /// Report failure with a UTF-8 `reason` (at most 1024 bytes): requested again
    /// if `permanent` is false and attempts remain, else failed. Closes the
    /// lease; `*out_state` receives the job's new state.
    fn tenure_lease_fail(lease: *const tenure_lease, reason: *const c_char, permanent: bool)
        -> out_state: *mut tenure_job_state =
        tenure_job_state::from(LeaseWriter::fail(&Alone, &lease.lease, reason, permanent)?);

    /// Complete the job, publishing `n_facts` caller facts (`facts` may be NULL
    /// when `n_facts` is 0; at most 64) and provenance in the same transaction.
    /// Closes the lease.
    fn tenure_lease_complete(
        lease: *const tenure_lease,
        facts: *const tenure_fact,
        n_facts: usize,
    ) = LeaseWriter::complete(&Alone, &lease.lease, &convert_facts(facts, n_facts)?);

    /// Export the lease credential as NUL-terminated token text into `buf`
    /// (`cap` bytes; `buf` may be NULL when `cap` is 0). `*out_size` receives the
    /// size needed including the NUL (at most 2049). If `cap` is smaller,
    /// nothing is written to `buf` and `TENURE_INVALID_ARGUMENT` is returned with
    /// `*out_size` set. Only an active lease can be exported. The token is a
    /// password: keep it out of logs and command lines, and wipe the buffer
    /// when done.
    fn tenure_lease_export_token(
        lease: *const tenure_lease,
        buf: *mut c_char,
        cap: usize,
        out_size: *mut usize,
    ) -> tenure_status {
        let l = Arg::read(lease, "lease")?;
        buf_arg(buf, cap)?;
        let out = out_arg(out_size, "out_size")?;
        let t = l.lease.export_token()?;
        copy_out(t.expose().as_bytes(), true, buf as *mut u8, cap, out, "token")
    }
}
