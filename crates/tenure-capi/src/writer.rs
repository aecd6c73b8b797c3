//! The write operations `tenure_authority_*` and `tenure_edit_*` share,
//! defined once.
//!
//! [`Writer`] runs them on either handle: an authority runs each call as an
//! edit of its own, an explicit edit runs it inside the open transaction.
//! Each export (in `authority.rs` and `edit.rs`, where they stand in the
//! header) is one call of it.
//!
//! Likewise [`LeaseWriter`] for the operations that end or renew a lease,
//! shared by `tenure_lease_*` (the lease's own transaction, [`Alone`]) and
//! `tenure_edit_*` (inside the open edit).

use tenure::{CancelOutcome, Delay, Fact, JobSpec, JobState, Lease, Submitted, Ttl};

use crate::boundary::R;

/// A trait and its two implementations, from one list of operations (also
/// used by `batch.rs` for the batched calls).
macro_rules! writer {
    ($(#[$doc:meta])* trait $tr:ident { $( fn $op:ident($($arg:ident: $t:ty),*) -> $ret:ty; )* }) => {
        $(#[$doc])*
        pub(crate) trait $tr {
            $( fn $op(&self, $($arg: $t),*) -> R<$ret>; )*
        }

        impl $tr for $crate::authority::tenure_authority {
            $( fn $op(&self, $($arg: $t),*) -> R<$ret> {
                self.inner.$op($($arg),*)
            } )*
        }

        impl $tr for $crate::edit::tenure_edit {
            $( fn $op(&self, $($arg: $t),*) -> R<$ret> {
                self.with(|e| e.$op($($arg),*))
            } )*
        }
    };
}

writer! {
    /// A handle that runs the shared write operations.
    trait Writer {
    fn create_production(production: &str) -> bool;
    fn cancel_production(production: &str) -> u64;
    fn submit(production: &str, spec: &JobSpec) -> Submitted;
    fn cancel(production: &str, job: &str) -> CancelOutcome;
    fn claim(production: &str, job: &str, holder: &str, ttl: Ttl) -> Lease;
    fn claim_next(production: &str, holder: &str, ttl: Ttl) -> Lease;
    }
}

/// The lease operations' trait and its two implementations, from one list.
macro_rules! lease_writer {
    ($( fn $op:ident($($arg:ident: $t:ty),*) -> $ret:ty; )*) => {
        /// Where a lease operation runs.
        pub(crate) trait LeaseWriter {
            $( fn $op(&self, lease: &Lease, $($arg: $t),*) -> R<$ret>; )*
        }

        /// The lease's own transaction (one per call).
        pub(crate) struct Alone;

        impl LeaseWriter for Alone {
            $( fn $op(&self, lease: &Lease, $($arg: $t),*) -> R<$ret> {
                lease.$op($($arg),*)
            } )*
        }

        impl LeaseWriter for $crate::edit::tenure_edit {
            $( fn $op(&self, lease: &Lease, $($arg: $t),*) -> R<$ret> {
                self.with(|e| e.$op(lease, $($arg),*))
            } )*
        }
    };
}

lease_writer! {
    fn renew(ttl: Ttl) -> ();
    fn release() -> JobState;
    fn fail(reason: &str, permanent: bool) -> JobState;
    fn fail_retry_after(reason: &str, delay: Delay) -> JobState;
    fn complete(facts: &[Fact]) -> ();
}
