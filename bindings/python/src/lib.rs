//! `tenure._native`: the Python projection of the tenure job lease authority.
//!
//! Built by maturin into an abi3 wheel (CPython >= 3.9); the pure-Python
//! package `tenure` (in `python/tenure`) re-exports everything here. This
//! layer converts types and maps errors only: every rule (ID bounds, TTL
//! range, lease checks, clock policy) is the core's (`crates/tenure`).
//!
//! Decisions where the design is silent (documented for Python users in the
//! package docstrings as well):
//! - Durations are `datetime.timedelta` only; anything else is `TypeError`
//!   naming the parameter. The conversion is exact integer arithmetic; the
//!   range check is `tenure::Ttl::from_micros` for lease durations and
//!   `tenure::Delay::from_micros` for delays (not-before, hold limit, retry
//!   delay, back-off steps; `None` where a keyword means "absent"). `busy_timeout` is a
//!   timedelta too (omitted or `None` means the core default, 5 s).
//! - Errors: `tenure.TenureError` plus one subclass per `tenure::ErrorCode`,
//!   generated from `ErrorCode::ALL` (see [`errors`]). A Rust panic is caught
//!   and raised as `tenure.InternalError`.
//! - Every store call releases the GIL.
//! - `fork()`: handles owning SQLite connections refuse use from another
//!   process with `InvalidArgument`, and never close the parent's
//!   connections when collected there (see [`convert::ProcessBound`]).
//! - Enumerations (job states, lease status, event kinds, submit/cancel
//!   outcomes) are their stable lower-case core names as `str`; times are
//!   integer microseconds since the Unix epoch (`*_us`), each with an aware
//!   UTC `datetime` beside it (`*_at`, exact: see [`convert::utc`]).

use pyo3::prelude::*;

mod aio_work;
mod convert;
mod errors;
mod handles;
mod schedules;
mod stats;
mod values;
mod work;

/// The C ABI version (`TENURE_ABI_MAJOR`, `TENURE_ABI_MINOR` in
/// `include/tenure.h`) this projection corresponds to.
///
/// Deliberately not taken from a dependency on `tenure-capi`: linking that
/// crate would make this extension module export the whole C ABI (every
/// `#[no_mangle]` `tenure_*` symbol). Instead the unit test below and the
/// Python suite compare it with the checked-in, generated header, so a C ABI
/// bump without a matching projection change fails CI.
pub const ABI_VERSION: (u32, u32) = (1, 2);

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ABI_VERSION", ABI_VERSION)?;
    m.add("SCHEMA_VERSION", tenure::SCHEMA_VERSION)?;
    m.add("MAX_TTL_US", tenure::Ttl::MAX_MICROS)?;
    m.add("MAX_TOKEN_LEN", tenure::MAX_TOKEN_LEN)?;
    m.add("DEFAULT_MAX_ATTEMPTS", tenure::DEFAULT_MAX_ATTEMPTS)?;
    m.add_class::<handles::Authority>()?;
    m.add_class::<handles::Lease>()?;
    m.add_class::<handles::ClaimRequest>()?;
    m.add_class::<handles::Edit>()?;
    m.add_class::<values::JobView>()?;
    m.add_class::<values::Event>()?;
    m.add_class::<values::PublishedFact>()?;
    m.add_class::<values::ProductionView>()?;
    m.add_class::<values::Gates>()?;
    m.add_class::<values::ClockReading>()?;
    m.add_class::<values::CheckReport>()?;
    m.add_class::<stats::Stats>()?;
    m.add_class::<stats::ProductionStats>()?;
    m.add_class::<stats::Flow>()?;
    m.add_class::<stats::Percentiles>()?;
    m.add_class::<values::JobSpec>()?;
    m.add_class::<values::Backoff>()?;
    m.add_class::<work::WaitCancel>()?;
    m.add_class::<work::Keeper>()?;
    m.add_class::<work::Worker>()?;
    m.add_class::<work::Job>()?;
    m.add_class::<work::Complete>()?;
    m.add_class::<work::Retry>()?;
    m.add_class::<work::Fail>()?;
    m.add_class::<work::Report>()?;
    // Private to `tenure.aio`: attributes, not in `__all__`.
    m.setattr("_AioWorker", m.py().get_type::<aio_work::AioWorker>())?;
    m.setattr("_AioTicket", m.py().get_type::<aio_work::AioTicket>())?;
    m.add_class::<values::Retention>()?;
    m.add_class::<values::PruneReport>()?;
    m.add_class::<values::DeletedCounts>()?;
    m.add_function(wrap_pyfunction!(errors::error_class, m)?)?;
    errors::register(m)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::errors::class_name;
    use tenure::ErrorCode;

    fn header_define(header: &str, name: &str) -> u32 {
        header
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some("#define") && w.next() == Some(name))
                    .then(|| w.next().and_then(|v| v.parse().ok()))
                    .flatten()
            })
            .unwrap_or_else(|| panic!("{name} not defined in include/tenure.h"))
    }

    #[test]
    fn abi_version_matches_the_c_header() {
        let header = include_str!("../../../include/tenure.h");
        assert_eq!(
            super::ABI_VERSION,
            (
                header_define(header, "TENURE_ABI_MAJOR"),
                header_define(header, "TENURE_ABI_MINOR")
            )
        );
    }

    #[test]
    fn class_names_are_camel_case_and_unique() {
        let names: Vec<String> = ErrorCode::ALL.iter().map(|c| class_name(*c)).collect();
        assert_eq!(names[0], "InvalidArgument");
        assert!(names.contains(&"TokenUnsupportedVersion".to_string()));
        assert!(names.contains(&"StoreError".to_string()));
        assert!(names.contains(&"InternalError".to_string()));
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert!(names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_alphanumeric())));
    }
}
