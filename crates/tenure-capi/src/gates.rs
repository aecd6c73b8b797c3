//! A production's claim gates (ABI 1.2; docs/design.md, "Claim gates"):
//! pause and resume, the concurrency limit and the rate limit, on an
//! authority or inside an edit, and `tenure_gates`, the gates as set, read
//! through accessors.
//!
//! Conversions only: every rule (ranges, what a gate refuses) is the
//! core's `tenure::gates`.

use std::ffi::c_char;
use std::time::Duration;

use tenure::{Gates, RateLimit};

use crate::authority::tenure_authority;
use crate::boundary::{boxed, write_time, Handle, R};
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

/// A production's claim gates as set, read in one snapshot
/// (`tenure_authority_production_gates`). Immutable; thread-safe to read.
pub struct tenure_gates {
    g: Gates,
}

impl Handle for tenure_gates {}

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

export! {
    /// A production's claim gates as set (ABI 1.2): whether it is paused,
    /// its concurrency limit and its rate limit. `TENURE_NOT_FOUND` for an
    /// unknown production. `*out_gates` receives a snapshot to free with
    /// `tenure_gates_free()`.
    fn tenure_authority_production_gates(
        authority: *const tenure_authority,
        production: *const c_char,
    ) -> out_gates: *mut *mut tenure_gates = boxed(tenure_gates {
        g: authority.inner.production_gates(production)?,
    });

    /// Free a gates snapshot (NULL is a no-op).
    fn tenure_gates_free(gates: *mut tenure_gates) = free;
    /// Whether the production is paused (false for a NULL handle).
    fn tenure_gates_paused(gates: *const tenure_gates) -> bool =
        value Some(gates.g.paused_us.is_some());
    /// When the production was paused (µs since the epoch): returns true
    /// and writes `*out_us` if it is paused, false (nothing written) if it
    /// is not, or for a NULL pointer.
    fn tenure_gates_paused_us(gates: *const tenure_gates, out_us: *mut i64) -> bool =
        value write_time(out_us, gates.g.paused_us);
    /// The concurrency limit: returns true and writes `*out_limit` if one
    /// is set, false (nothing written) if none is, or for a NULL pointer.
    fn tenure_gates_concurrency_limit(gates: *const tenure_gates, out_limit: *mut u32) -> bool =
        value write_concurrency(&gates.g, out_limit);
    /// The rate limit: returns true and writes `*out_claims` claims per
    /// `*out_interval_us` µs with burst `*out_burst` if one is set, false
    /// (nothing written) if none is, or if any pointer is NULL.
    fn tenure_gates_rate_limit(
        gates: *const tenure_gates,
        out_claims: *mut u32,
        out_interval_us: *mut i64,
        out_burst: *mut u32,
    ) -> bool = value write_rate(&gates.g, out_claims, out_interval_us, out_burst);
}

/// `*out_limit` = the concurrency limit of `g`: `Some(true)` if one is set
/// and the pointer is not NULL, `None` (nothing written) otherwise.
///
/// # Safety
/// `out_limit` is NULL or valid for a write.
pub(crate) unsafe fn write_concurrency(g: &Gates, out_limit: *mut u32) -> Option<bool> {
    let k = g.concurrency?;
    if out_limit.is_null() {
        return None;
    }
    out_limit.write(k);
    Some(true)
}

/// The rate limit of `g` into the three pointers: `Some(true)` if one is
/// set and no pointer is NULL, `None` (nothing written) otherwise.
///
/// # Safety
/// Each pointer is NULL or valid for a write.
pub(crate) unsafe fn write_rate(
    g: &Gates,
    out_claims: *mut u32,
    out_interval_us: *mut i64,
    out_burst: *mut u32,
) -> Option<bool> {
    let r = g.rate?;
    if out_claims.is_null() || out_interval_us.is_null() || out_burst.is_null() {
        return None;
    }
    out_claims.write(r.claims);
    out_interval_us.write(i64::try_from(r.interval.as_micros()).unwrap_or(i64::MAX));
    out_burst.write(r.burst);
    Some(true)
}
