//! `tenure_edit`: one explicit write transaction and the operations run in it.

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};

use tenure::Edit;

use crate::authority::tenure_authority;
use crate::boundary::{boxed, invalid, ttl, Handle, R};
use crate::lease::tenure_lease;
use crate::options::{
    convert_facts, tenure_cancelled, tenure_fact, tenure_job_spec, tenure_job_state,
    tenure_submitted,
};
use crate::status::tenure_status;
use crate::writer::{LeaseWriter, Writer};

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

    /// Runs `f` on the open edit.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Edit) -> R<T>) -> R<T> {
        match self.lock().as_mut() {
            Some(e) => f(e),
            None => Err(finished()),
        }
    }

    /// Takes the edit out to finish it (commit or abort).
    fn take(&self) -> R<Edit> {
        self.lock().take().ok_or_else(finished)
    }
}

fn finished() -> tenure::Error {
    invalid("the edit has already been committed or aborted")
}

impl Handle for tenure_edit {}

export! {
    /// Begin an explicit edit (takes the writer lock; keep edits short).
    fn tenure_edit_begin(authority: *const tenure_authority) -> out_edit: *mut *mut tenure_edit =
        boxed(tenure_edit {
            edit: Mutex::new(Some(authority.inner.edit()?)),
        });

    /// Free an edit handle (NULL is a no-op), aborting it if still open.
    fn tenure_edit_free(edit: *mut tenure_edit) = free;

    /// Commit. On success pending leases become active; on failure nothing is
    /// written and pending leases close. Either way the edit is finished.
    fn tenure_edit_commit(edit: *const tenure_edit) = edit.take()?.commit();

    /// Roll everything back; pending leases close. The edit is finished.
    fn tenure_edit_abort(edit: *const tenure_edit) = {
        edit.take()?.abort();
        Ok(())
    };

    /// Create a production inside the edit (see `tenure_authority_create_production()`).
    fn tenure_edit_create_production(edit: *const tenure_edit, production: *const c_char)
        -> out_created: *mut bool = Writer::create_production(edit, production)?;

    /// Cancel a production inside the edit (see `tenure_authority_cancel_production()`).
    fn tenure_edit_cancel_production(edit: *const tenure_edit, production: *const c_char)
        -> out_cancelled: *mut u64 = Writer::cancel_production(edit, production)?;

    /// Submit a job inside the edit (see `tenure_authority_submit()`).
    fn tenure_edit_submit(
        edit: *const tenure_edit,
        production: *const c_char,
        spec: *const tenure_job_spec,
    ) -> out_submitted: *mut tenure_submitted =
        tenure_submitted::from(Writer::submit(edit, production, &spec)?);

    /// Cancel a job inside the edit (see `tenure_authority_cancel()`).
    fn tenure_edit_cancel(edit: *const tenure_edit, production: *const c_char, job: *const c_char)
        -> out_cancelled: *mut tenure_cancelled =
        tenure_cancelled::from(Writer::cancel(edit, production, job)?);

    /// Claim a named job inside the edit; the lease is pending until commit
    /// (usable inside this edit, e.g. to complete atomically).
    fn tenure_edit_claim(
        edit: *const tenure_edit,
        production: *const c_char,
        job: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
    ) -> out_lease: *mut *mut tenure_lease =
        tenure_lease::boxed(Writer::claim(edit, production, job, holder, ttl(ttl_us)?)?);

    /// Claim the next claimable job inside the edit; the lease is pending.
    fn tenure_edit_claim_next(
        edit: *const tenure_edit,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
    ) -> out_lease: *mut *mut tenure_lease =
        tenure_lease::boxed(Writer::claim_next(edit, production, holder, ttl(ttl_us)?)?);

    /// Renew a lease inside the edit; its expiry moves when the edit commits.
    fn tenure_edit_renew(edit: *const tenure_edit, lease: *const tenure_lease, ttl_us: i64) =
        LeaseWriter::renew(edit, &lease.lease, ttl(ttl_us)?);

    /// Release a lease inside the edit; it closes when the edit commits.
    fn tenure_edit_release(edit: *const tenure_edit, lease: *const tenure_lease)
        -> out_state: *mut tenure_job_state =
        tenure_job_state::from(LeaseWriter::release(edit, &lease.lease)?);

    /// Fail a lease inside the edit; it closes when the edit commits.
    fn tenure_edit_fail(
        edit: *const tenure_edit,
        lease: *const tenure_lease,
        reason: *const c_char,
        permanent: bool,
    ) -> out_state: *mut tenure_job_state =
        tenure_job_state::from(LeaseWriter::fail(edit, &lease.lease, reason, permanent)?);

    /// Complete a lease with facts inside the edit; it closes when the edit
    /// commits and the facts become visible with the commit.
    fn tenure_edit_complete(
        edit: *const tenure_edit,
        lease: *const tenure_lease,
        facts: *const tenure_fact,
        n_facts: usize,
    ) = LeaseWriter::complete(edit, &lease.lease, &convert_facts(facts, n_facts)?);
}
