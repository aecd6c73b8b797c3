//! A production's claim gates (ABI 1.2; docs/design.md, "Claim gates"):
//! pause and resume, the concurrency limit and the rate limit, on an
//! authority or inside an edit.
//!
//! Conversions only: every rule (ranges, what a gate refuses) is the
//! core's `tenure::gates`.

use std::ffi::c_char;
use std::time::Duration;

use tenure::RateLimit;

use crate::authority::tenure_authority;
use crate::boundary::R;
use crate::edit::tenure_edit;
use crate::status::tenure_status;

writer! {
    /// A handle that changes a production's gates.
    trait GateWriter {
    fn pause_production(production: &str) -> bool;
    fn resume_production(production: &str) -> bool;
    fn set_concurrency_limit(production: &str, limit: Option<u32>) -> ();
    fn set_rate_limit(production: &str, limit: Option<RateLimit>) -> ();
    }
}

/// A rate limit from its C arguments; a negative interval is
/// `TENURE_INVALID_DURATION` (the core checks the rest).
fn rate(claims: u32, interval_us: i64, burst: u32) -> R<RateLimit> {
    let us = u64::try_from(interval_us).map_err(|_| {
        tenure::Error::InvalidDuration(format!(
            "a rate limit's interval must not be negative, got {interval_us} µs"
        ))
    })?;
    Ok(RateLimit {
        claims,
        interval: Duration::from_micros(us),
        burst,
    })
}

export! {
    /// Pause a production (ABI 1.2): until it is resumed no claim of it
    /// succeeds (claim-next finds nothing, a named claim is
    /// `TENURE_PRODUCTION_PAUSED`); submissions and held leases keep
    /// working. `*out_changed` is false if it was already paused.
    /// `TENURE_NOT_FOUND` for an unknown production.
    fn tenure_authority_pause_production(
        authority: *const tenure_authority,
        production: *const c_char,
    ) -> out_changed: *mut bool = GateWriter::pause_production(authority, production)?;

    /// Resume a paused production (ABI 1.2); its waiters wake.
    /// `*out_changed` is false if it was not paused.
    fn tenure_authority_resume_production(
        authority: *const tenure_authority,
        production: *const c_char,
    ) -> out_changed: *mut bool = GateWriter::resume_production(authority, production)?;

    /// Set a production's concurrency limit (ABI 1.2): at most `limit`
    /// (1 ..= 1 000 000, else `TENURE_INVALID_ARGUMENT`) of its leases live
    /// at once; a named claim beyond it is `TENURE_CONCURRENCY_LIMIT`.
    /// Lowering it revokes no lease.
    fn tenure_authority_set_concurrency_limit(
        authority: *const tenure_authority,
        production: *const c_char,
        limit: u32,
    ) = GateWriter::set_concurrency_limit(authority, production, Some(limit));

    /// Clear a production's concurrency limit (ABI 1.2).
    fn tenure_authority_clear_concurrency_limit(
        authority: *const tenure_authority,
        production: *const c_char,
    ) = GateWriter::set_concurrency_limit(authority, production, None);

    /// Set a production's rate limit (ABI 1.2): at most `claims` claims per
    /// `interval_us`, at most `burst` at once (`claims`, `burst` 1 ..=
    /// 1 000 000, else `TENURE_INVALID_ARGUMENT`; `interval_us` at most 24 h
    /// and at least 1 µs per claim, else `TENURE_INVALID_DURATION`). A
    /// named claim beyond it is `TENURE_RATE_LIMITED`.
    fn tenure_authority_set_rate_limit(
        authority: *const tenure_authority,
        production: *const c_char,
        claims: u32,
        interval_us: i64,
        burst: u32,
    ) = GateWriter::set_rate_limit(authority, production, Some(rate(claims, interval_us, burst)?));

    /// Clear a production's rate limit (ABI 1.2).
    fn tenure_authority_clear_rate_limit(
        authority: *const tenure_authority,
        production: *const c_char,
    ) = GateWriter::set_rate_limit(authority, production, None);
}

export! {
    /// Pause a production inside the edit (ABI 1.2; see
    /// `tenure_authority_pause_production()`).
    fn tenure_edit_pause_production(edit: *const tenure_edit, production: *const c_char)
        -> out_changed: *mut bool = GateWriter::pause_production(edit, production)?;

    /// Resume a production inside the edit (ABI 1.2; see
    /// `tenure_authority_resume_production()`).
    fn tenure_edit_resume_production(edit: *const tenure_edit, production: *const c_char)
        -> out_changed: *mut bool = GateWriter::resume_production(edit, production)?;

    /// Set a concurrency limit inside the edit (ABI 1.2; see
    /// `tenure_authority_set_concurrency_limit()`).
    fn tenure_edit_set_concurrency_limit(
        edit: *const tenure_edit,
        production: *const c_char,
        limit: u32,
    ) = GateWriter::set_concurrency_limit(edit, production, Some(limit));

    /// Clear a concurrency limit inside the edit (ABI 1.2).
    fn tenure_edit_clear_concurrency_limit(edit: *const tenure_edit, production: *const c_char) =
        GateWriter::set_concurrency_limit(edit, production, None);

    /// Set a rate limit inside the edit (ABI 1.2; see
    /// `tenure_authority_set_rate_limit()`).
    fn tenure_edit_set_rate_limit(
        edit: *const tenure_edit,
        production: *const c_char,
        claims: u32,
        interval_us: i64,
        burst: u32,
    ) = GateWriter::set_rate_limit(edit, production, Some(rate(claims, interval_us, burst)?));

    /// Clear a rate limit inside the edit (ABI 1.2).
    fn tenure_edit_clear_rate_limit(edit: *const tenure_edit, production: *const c_char) =
        GateWriter::set_rate_limit(edit, production, None);
}
