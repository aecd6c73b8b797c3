//! The write operations `tenure_authority_*` and `tenure_edit_*` share,
//! defined once.
//!
//! [`Writer`] runs them on either handle: an authority runs each call as an
//! edit of its own, an explicit edit runs it inside the open transaction.
//! `shared_writes!` generates the six exports of one handle (invoked once in
//! `authority.rs` and once in `edit.rs`, where they stand in the header).
//!
//! Likewise [`LeaseWriter`] and `lease_writes!` for the operations that end
//! or renew a lease, shared by `tenure_lease_*` (the lease's own
//! transaction) and `tenure_edit_*` (inside the open edit).

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

/// The exports of the shared write operations for the handle type `$ty`
/// (parameter `$h`), in header order, each with its own documentation.
macro_rules! shared_writes {
    (
        $h:ident: $ty:ident;
        $(#[$create_production_doc:meta])* create_production: $create_production:ident;
        $(#[$cancel_production_doc:meta])* cancel_production: $cancel_production:ident;
        $(#[$submit_doc:meta])* submit: $submit:ident;
        $(#[$cancel_doc:meta])* cancel: $cancel:ident;
        $(#[$claim_doc:meta])* claim: $claim:ident;
        $(#[$claim_next_doc:meta])* claim_next: $claim_next:ident;
    ) => {
        export! {
            $(#[$create_production_doc])*
            fn $create_production($h: *const $ty, production: *const c_char)
                -> out_created: *mut bool = $crate::writer::Writer::create_production($h, production)?;

            $(#[$cancel_production_doc])*
            fn $cancel_production($h: *const $ty, production: *const c_char)
                -> out_cancelled: *mut u64 = $crate::writer::Writer::cancel_production($h, production)?;

            $(#[$submit_doc])*
            fn $submit($h: *const $ty, production: *const c_char, spec: *const tenure_job_spec)
                -> out_submitted: *mut tenure_submitted =
                tenure_submitted::from($crate::writer::Writer::submit($h, production, &spec)?);

            $(#[$cancel_doc])*
            fn $cancel($h: *const $ty, production: *const c_char, job: *const c_char)
                -> out_cancelled: *mut tenure_cancelled =
                tenure_cancelled::from($crate::writer::Writer::cancel($h, production, job)?);

            $(#[$claim_doc])*
            fn $claim(
                $h: *const $ty,
                production: *const c_char,
                job: *const c_char,
                holder: *const c_char,
                ttl_us: i64,
            ) -> out_lease: *mut *mut tenure_lease = tenure_lease::boxed(
                $crate::writer::Writer::claim($h, production, job, holder, $crate::boundary::ttl(ttl_us)?)?,
            );

            $(#[$claim_next_doc])*
            fn $claim_next($h: *const $ty, production: *const c_char, holder: *const c_char, ttl_us: i64)
                -> out_lease: *mut *mut tenure_lease = tenure_lease::boxed(
                $crate::writer::Writer::claim_next($h, production, holder, $crate::boundary::ttl(ttl_us)?)?,
            );
        }
    };
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

/// The exports of the lease operations, in header order, each with its own
/// documentation: `tenure_lease_*` when invoked without a leading handle
/// parameter (`Alone`), `tenure_edit_*` with `edit: tenure_edit,` in front.
macro_rules! lease_writes {
    (@writer) => { &$crate::writer::Alone };
    (@writer $e:ident) => { $e };
    (
        $($e:ident: $ety:ident,)?
        $(#[$renew_doc:meta])* renew: $renew:ident;
        $(#[$release_doc:meta])* release: $release:ident;
        $(#[$fail_doc:meta])* fail: $fail:ident;
        $(#[$complete_doc:meta])* complete: $complete:ident;
    ) => {
        export! {
            $(#[$renew_doc])*
            fn $renew($($e: *const $ety,)? lease: *const tenure_lease, ttl_us: i64) =
                $crate::writer::LeaseWriter::renew(
                    lease_writes!(@writer $($e)?), &lease.lease, $crate::boundary::ttl(ttl_us)?,
                );

            $(#[$release_doc])*
            fn $release($($e: *const $ety,)? lease: *const tenure_lease)
                -> out_state: *mut tenure_job_state = tenure_job_state::from(
                $crate::writer::LeaseWriter::release(lease_writes!(@writer $($e)?), &lease.lease)?,
            );

            $(#[$fail_doc])*
            fn $fail($($e: *const $ety,)? lease: *const tenure_lease, reason: *const c_char, permanent: bool)
                -> out_state: *mut tenure_job_state = tenure_job_state::from(
                $crate::writer::LeaseWriter::fail(
                    lease_writes!(@writer $($e)?), &lease.lease, reason, permanent,
                )?,
            );

            $(#[$complete_doc])*
            fn $complete(
                $($e: *const $ety,)?
                lease: *const tenure_lease,
                facts: *const tenure_fact,
                n_facts: usize,
            ) = $crate::writer::LeaseWriter::complete(
                lease_writes!(@writer $($e)?),
                &lease.lease,
                &$crate::options::convert_facts(facts, n_facts)?,
            );
        }
    };
}
