//! `tenure_stats`: queue statistics (`tenure_authority_stats`), an
//! immutable snapshot read through accessors (ABI 1.2), the production's
//! claim gates included. No payload, secret or token is in it.

use std::ffi::{c_char, CString};

use tenure::{Percentiles, ProductionStats, Stats, StatsQuery};

use crate::authority::tenure_authority;
use crate::boundary::{boxed, cstring, opt_str_arg, out_arg, write_time, Arg, Handle};
use crate::gates::{write_concurrency, write_rate};
use crate::status::tenure_status;

/// `tenure_production_stats_count()`: requested jobs whose due time has come.
pub const TENURE_STATS_WAITING_DUE: u32 = 1;
/// Requested jobs not yet due.
pub const TENURE_STATS_WAITING_LATER: u32 = 2;
/// Claimed jobs whose lease is live.
pub const TENURE_STATS_CLAIMED_LIVE: u32 = 3;
/// Claimed jobs whose lease expired with attempts left, not yet reclaimed.
pub const TENURE_STATS_CLAIMED_EXPIRED: u32 = 4;
/// Completed jobs.
pub const TENURE_STATS_COMPLETED: u32 = 5;
/// Failed jobs (observed state failed).
pub const TENURE_STATS_FAILED: u32 = 6;
/// Cancelled jobs.
pub const TENURE_STATS_CANCELLED: u32 = 7;
/// Live leases expiring within the horizon.
pub const TENURE_STATS_EXPIRING_WITHIN: u32 = 8;
/// Flow over the window: claims.
pub const TENURE_STATS_CLAIMS: u32 = 9;
/// Flow: completions.
pub const TENURE_STATS_COMPLETIONS: u32 = 10;
/// Flow: failures that left the job requested.
pub const TENURE_STATS_RETRYABLE_FAILURES: u32 = 11;
/// Flow: failures that ended the job.
pub const TENURE_STATS_PERMANENT_FAILURES: u32 = 12;
/// Flow: leases whose expiry fell in the window.
pub const TENURE_STATS_EXPIRIES: u32 = 13;
/// Flow: how many queue waits the wait percentiles are over.
pub const TENURE_STATS_WAIT_COUNT: u32 = 14;
/// Flow: how many run times the run percentiles are over.
pub const TENURE_STATS_RUN_COUNT: u32 = 15;

/// `tenure_production_stats_time_us()`: how long the oldest due waiting
/// job has been due (µs).
pub const TENURE_STATS_OLDEST_DUE_AGE: u32 = 1;
/// The earliest due time of a waiting job not yet due (µs since the epoch).
pub const TENURE_STATS_NEXT_DUE: u32 = 2;
/// Queue wait, median (µs).
pub const TENURE_STATS_WAIT_P50: u32 = 3;
/// Queue wait, 95th percentile (µs).
pub const TENURE_STATS_WAIT_P95: u32 = 4;
/// Queue wait, 99th percentile (µs).
pub const TENURE_STATS_WAIT_P99: u32 = 5;
/// Run time, median (µs).
pub const TENURE_STATS_RUN_P50: u32 = 6;
/// Run time, 95th percentile (µs).
pub const TENURE_STATS_RUN_P95: u32 = 7;
/// Run time, 99th percentile (µs).
pub const TENURE_STATS_RUN_P99: u32 = 8;

/// One production's statistics (borrowed from its `tenure_stats`).
pub struct tenure_production_stats {
    name: CString,
    p: ProductionStats,
}

impl Handle for tenure_production_stats {}

/// Queue statistics read in one snapshot. Immutable; thread-safe to read.
pub struct tenure_stats {
    now_us: i64,
    high_water_us: i64,
    productions: Vec<tenure_production_stats>,
}

impl Handle for tenure_stats {}

impl tenure_stats {
    fn new(s: Stats) -> tenure_stats {
        tenure_stats {
            now_us: s.now_us,
            high_water_us: s.high_water_us,
            productions: s
                .productions
                .into_iter()
                .map(|p| tenure_production_stats {
                    name: cstring(&p.name),
                    p,
                })
                .collect(),
        }
    }
}

fn span(us: i64, name: &str) -> crate::boundary::R<std::time::Duration> {
    u64::try_from(us)
        .map(std::time::Duration::from_micros)
        .map_err(|_| tenure::Error::InvalidDuration(format!("`{name}` must not be negative")))
}

fn count(p: &ProductionStats, which: u32) -> Option<u64> {
    let f = &p.flow;
    Some(match which {
        TENURE_STATS_WAITING_DUE => p.waiting_due,
        TENURE_STATS_WAITING_LATER => p.waiting_later,
        TENURE_STATS_CLAIMED_LIVE => p.claimed_live,
        TENURE_STATS_CLAIMED_EXPIRED => p.claimed_expired,
        TENURE_STATS_COMPLETED => p.completed,
        TENURE_STATS_FAILED => p.failed,
        TENURE_STATS_CANCELLED => p.cancelled_jobs,
        TENURE_STATS_EXPIRING_WITHIN => p.expiring_within,
        TENURE_STATS_CLAIMS => f.claims,
        TENURE_STATS_COMPLETIONS => f.completions,
        TENURE_STATS_RETRYABLE_FAILURES => f.retryable_failures,
        TENURE_STATS_PERMANENT_FAILURES => f.permanent_failures,
        TENURE_STATS_EXPIRIES => f.expiries,
        TENURE_STATS_WAIT_COUNT => f.wait.count,
        TENURE_STATS_RUN_COUNT => f.run.count,
        _ => return None,
    })
}

fn time_us(p: &ProductionStats, which: u32) -> Option<Option<i64>> {
    let us = |d: Option<std::time::Duration>| d.map(|d| d.as_micros() as i64);
    let (w, r): (&Percentiles, &Percentiles) = (&p.flow.wait, &p.flow.run);
    Some(match which {
        TENURE_STATS_OLDEST_DUE_AGE => us(p.oldest_due_age),
        TENURE_STATS_NEXT_DUE => p.next_due_us,
        TENURE_STATS_WAIT_P50 => us(w.p50),
        TENURE_STATS_WAIT_P95 => us(w.p95),
        TENURE_STATS_WAIT_P99 => us(w.p99),
        TENURE_STATS_RUN_P50 => us(r.p50),
        TENURE_STATS_RUN_P95 => us(r.p95),
        TENURE_STATS_RUN_P99 => us(r.p99),
        _ => return None,
    })
}

export! {
    /// Queue statistics (ABI 1.2): per production (or only `production`;
    /// NULL: every production, by name), jobs by observed state, the
    /// waiting and lease figures, and the flow over the `window_us` before
    /// the clock reading, all read in one snapshot; live leases expiring
    /// within `horizon_us` are counted. Both are 0 ..= 30 days
    /// (`TENURE_INVALID_DURATION`). A production that does not exist is
    /// `TENURE_NOT_FOUND`. `*out_stats` receives a snapshot to free with
    /// `tenure_stats_free()`.
    fn tenure_authority_stats(
        authority: *const tenure_authority,
        production: *const c_char,
        horizon_us: i64,
        window_us: i64,
        out_stats: *mut *mut tenure_stats,
    ) -> tenure_status {
        let a = Arg::read(authority, "authority")?;
        let production = opt_str_arg(production, "production")?;
        let out = out_arg(out_stats, "out_stats")?;
        let q = StatsQuery {
            production: production.map(str::to_owned),
            horizon: span(horizon_us, "horizon_us")?,
            window: span(window_us, "window_us")?,
        };
        let s = a.inner.stats(&q)?;
        out.write(boxed(tenure_stats::new(s)));
        Ok(())
    }

    /// Free a statistics snapshot (NULL is a no-op); the production
    /// statistics obtained from it die with it.
    fn tenure_stats_free(stats: *mut tenure_stats) = free;
    /// The clock reading the figures are classified against (µs since the
    /// epoch; the larger of the clock and the high-water mark).
    fn tenure_stats_now_us(stats: *const tenure_stats) -> i64 = value Some(stats.now_us);
    /// The durable high-water mark (µs since the epoch).
    fn tenure_stats_high_water_us(stats: *const tenure_stats) -> i64 =
        value Some(stats.high_water_us);
    /// Number of productions.
    fn tenure_stats_len(stats: *const tenure_stats) -> usize = value Some(stats.productions.len());
    /// The production statistics at `index` (borrowed from `stats`: do not
    /// free them), or NULL if out of range.
    fn tenure_stats_get(stats: *const tenure_stats, index: usize) -> *const tenure_production_stats =
        value stats.productions.get(index).map(|p| p as *const tenure_production_stats);
    /// Production ID (borrowed).
    fn tenure_production_stats_name(p: *const tenure_production_stats) -> *const c_char =
        value Some(p.name.as_ptr());
    /// Whether the production is cancelled.
    fn tenure_production_stats_cancelled(p: *const tenure_production_stats) -> bool =
        value Some(p.p.cancelled);
    /// The attempt count of the most-retried job with a live lease (0: none).
    fn tenure_production_stats_max_live_attempts(p: *const tenure_production_stats) -> u32 =
        value Some(p.p.max_live_attempts);
    /// Whether the window held more events than the flow reads (its
    /// figures are then over the newest of them).
    fn tenure_production_stats_flow_truncated(p: *const tenure_production_stats) -> bool =
        value Some(p.p.flow.truncated);
    /// A count, `which` one of `TENURE_STATS_WAITING_DUE` ..
    /// `TENURE_STATS_RUN_COUNT`: returns true and writes `*out_n`, false
    /// (nothing written) for another `which` or a NULL pointer.
    fn tenure_production_stats_count(
        p: *const tenure_production_stats,
        which: u32,
        out_n: *mut u64,
    ) -> bool = value {
        let n = count(&p.p, which)?;
        if out_n.is_null() {
            return None;
        }
        out_n.write(n);
        Some(true)
    };
    /// A time or duration in µs, `which` one of
    /// `TENURE_STATS_OLDEST_DUE_AGE` .. `TENURE_STATS_RUN_P99`: returns true
    /// and writes `*out_us` if there is one, false (nothing written) if
    /// there is none (no due waiting job, no durations in the window), for
    /// another `which`, or a NULL pointer.
    fn tenure_production_stats_time_us(
        p: *const tenure_production_stats,
        which: u32,
        out_us: *mut i64,
    ) -> bool = value write_time(out_us, time_us(&p.p, which)?);
    /// Whether the production is paused (its gate row, read in the
    /// statistics' snapshot).
    fn tenure_production_stats_paused(p: *const tenure_production_stats) -> bool =
        value Some(p.p.gates.paused_us.is_some());
    /// When the production was paused (µs since the epoch): returns true
    /// and writes `*out_us` if it is paused, false (nothing written) if it
    /// is not, or for a NULL pointer.
    fn tenure_production_stats_paused_us(p: *const tenure_production_stats, out_us: *mut i64) -> bool =
        value write_time(out_us, p.p.gates.paused_us);
    /// The concurrency limit: returns true and writes `*out_limit` if one
    /// is set, false (nothing written) if none is, or for a NULL pointer.
    fn tenure_production_stats_concurrency_limit(
        p: *const tenure_production_stats,
        out_limit: *mut u32,
    ) -> bool = value write_concurrency(&p.p.gates, out_limit);
    /// The rate limit: returns true and writes `*out_claims` claims per
    /// `*out_interval_us` µs with burst `*out_burst` if one is set, false
    /// (nothing written) if none is, or if any pointer is NULL.
    fn tenure_production_stats_rate_limit(
        p: *const tenure_production_stats,
        out_claims: *mut u32,
        out_interval_us: *mut i64,
        out_burst: *mut u32,
    ) -> bool = value write_rate(&p.p.gates, out_claims, out_interval_us, out_burst);
}
