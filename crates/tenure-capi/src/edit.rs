//! `tenure_edit`: one explicit write transaction and the operations run in it.

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};

use tenure::Edit;

use crate::authority::tenure_authority;
use crate::boundary::{boundary, boxed, free_box, invalid, Handle, R};
use crate::lease::tenure_lease;
use crate::options::{
    tenure_cancelled, tenure_fact, tenure_job_spec, tenure_job_state, tenure_submitted,
};
use crate::status::tenure_status;

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
    boundary(|| arg_ref!(edit).take()?.commit())
}

/// Roll everything back; pending leases close. The edit is finished.
#[no_mangle]
pub unsafe extern "C" fn tenure_edit_abort(edit: *const tenure_edit) -> tenure_status {
    boundary(|| {
        arg_ref!(edit).take()?.abort();
        Ok(())
    })
}

shared_writes! {
    edit: tenure_edit;
    /// Create a production inside the edit (see `tenure_authority_create_production()`).
    create_production: tenure_edit_create_production;
    /// Cancel a production inside the edit (see `tenure_authority_cancel_production()`).
    cancel_production: tenure_edit_cancel_production;
    /// Submit a job inside the edit (see `tenure_authority_submit()`).
    submit: tenure_edit_submit;
    /// Cancel a job inside the edit (see `tenure_authority_cancel()`).
    cancel: tenure_edit_cancel;
    /// Claim a named job inside the edit; the lease is pending until commit
    /// (usable inside this edit, e.g. to complete atomically).
    claim: tenure_edit_claim;
    /// Claim the next claimable job inside the edit; the lease is pending.
    claim_next: tenure_edit_claim_next;
}

lease_writes! {
    edit: tenure_edit,
    /// Renew a lease inside the edit; its expiry moves when the edit commits.
    renew: tenure_edit_renew;
    /// Release a lease inside the edit; it closes when the edit commits.
    release: tenure_edit_release;
    /// Fail a lease inside the edit; it closes when the edit commits.
    fail: tenure_edit_fail;
    /// Complete a lease with facts inside the edit; it closes when the edit
    /// commits and the facts become visible with the commit.
    complete: tenure_edit_complete;
}
