//! A production's claim gates: pause, concurrency limit, rate limit.
//!
//! One rule, checked inside every claim's transaction after its clock
//! sample (docs/design.md, "Claim gates"): a claim of a production whose
//! gate row says paused makes nothing; with a concurrency limit `K`, at most
//! `K` leases of the production are live (stored `claimed`, expiry after
//! the claim's clock sample) once the claim commits; with a rate limit of
//! `N` claims per interval and burst `B`, the claims follow the generic cell
//! rate algorithm with emission interval `T = interval / N`: claim `i` at
//! `now` is allowed iff `max(tat, now) + i·T − now ≤ B·T`, and `tat`
//! (stored with the gates) moves by `T` per claim made. The clock is the
//! authority's `max(clock, high-water mark)`, so a backward clock jump
//! never releases a claim. A production without a gate row pays one
//! primary-key lookup (PostgreSQL: a column of claim-next's first
//! statement) and nothing else.

use crate::error::{Error, Result};
use crate::model::EventKind;
use crate::session::Session;
use crate::store::{GateRow, Txn};
use crate::validate;
use std::time::Duration;

/// The largest concurrency limit, rate count or burst accepted.
pub const MAX_GATE: u32 = 1_000_000;
/// The longest rate-limit interval accepted (one day).
pub const MAX_RATE_INTERVAL: Duration = Duration::from_secs(86_400);
/// How often a waiter at a production's concurrency limit looks again
/// (a lease that closes rings no doorbell; one that expires is the timed
/// wake itself).
pub(crate) const LIMIT_POLL_US: i64 = 50_000;

/// A rate limit: at most `claims` claims per `interval`, at most `burst`
/// of them at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Claims per interval (1 ..= [`MAX_GATE`]).
    pub claims: u32,
    /// The interval (1 µs ..= [`MAX_RATE_INTERVAL`], whole microseconds,
    /// at least one µs per claim).
    pub interval: Duration,
    /// How many claims may be made at once after an idle spell
    /// (1 ..= [`MAX_GATE`]).
    pub burst: u32,
}

/// A production's gates as set (see [`crate::Authority::production_gates`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gates {
    /// When the production was paused, if it is.
    pub paused_us: Option<i64>,
    /// The concurrency limit, if set.
    pub concurrency: Option<u32>,
    /// The rate limit, if set.
    pub rate: Option<RateLimit>,
}

impl Gates {
    pub(crate) fn from_row(g: &GateRow) -> Gates {
        Gates {
            paused_us: g.paused_us,
            concurrency: g.concurrency,
            rate: g.rate.map(|(claims, us, burst)| RateLimit {
                claims,
                interval: Duration::from_micros(u64::try_from(us).unwrap_or(0)),
                burst,
            }),
        }
    }
}

fn valid_count(what: &str, n: u32) -> Result<()> {
    if n == 0 || n > MAX_GATE {
        return Err(Error::invalid(format!(
            "{what} must be 1..={MAX_GATE}, got {n}"
        )));
    }
    Ok(())
}

/// Validate a rate limit; its interval in µs.
fn valid_rate(r: &RateLimit) -> Result<i64> {
    valid_count("a rate limit's claims", r.claims)?;
    valid_count("a rate limit's burst", r.burst)?;
    if r.interval > MAX_RATE_INTERVAL || r.interval.subsec_nanos() % 1000 != 0 {
        return Err(Error::InvalidDuration(format!(
            "a rate limit's interval must be whole microseconds up to {MAX_RATE_INTERVAL:?}, got {:?}",
            r.interval
        )));
    }
    let us = i64::try_from(r.interval.as_micros()).unwrap_or(i64::MAX);
    if us < i64::from(r.claims) {
        return Err(Error::InvalidDuration(format!(
            "a rate limit's interval ({:?}) must allow at least 1 µs per claim ({} claims)",
            r.interval, r.claims
        )));
    }
    Ok(us)
}

/// The emission interval `T` of a rate (µs per claim).
fn emission(rate: (u32, i64, u32)) -> i64 {
    (rate.1 / i64::from(rate.0)).max(1)
}

/// Why a gate lets no claim through now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shut {
    Paused,
    Full { live: u64, limit: u32 },
    Rate { next_us: i64 },
}

/// How many of `want` claims the gates `g` (just read, and locked, by
/// [`for_claim`]) admit, and the clock sample they were decided at: `Ok(n)`
/// with `1 <= n <= want`, or why none. `now` is the claim's first sample.
/// The live leases are read first and the clock sampled after that read
/// returned, so a lease whose close committed before the read closed
/// before the sample too (on PostgreSQL a close does not queue for the
/// gate's lock); claims of a gated production queue for that lock, so the
/// sample is also later than the wait. Where the gate needs no lock of its
/// own (SQLite: the store-wide writer lock was held before the first
/// sample), the first sample is that sample.
pub(crate) fn admit(
    s: &mut Session,
    production: &str,
    g: &GateRow,
    now: i64,
    want: usize,
) -> Result<(i64, std::result::Result<usize, Shut>)> {
    if g.paused_us.is_some() {
        return Ok((now, Err(Shut::Paused)));
    }
    let leases = g.concurrency.is_some();
    let (now, expiries) = if s.txn.gate_waits() {
        let (at, expiries) = s.sampled(
            |txn, local| txn.live_expiries_sampled(production, now, leases, local),
            |v| v.0,
        )?;
        (at.max(now), expiries)
    } else if leases {
        (now, s.txn.live_expiries(production, now)?)
    } else {
        (now, Vec::new())
    };
    Ok((now, admitted(g, now, want, &expiries)))
}

/// [`admit`]'s decision at `now`, given the expiries of the leases stored
/// `claimed` (any that are past `now` are not live).
fn admitted(
    g: &GateRow,
    now: i64,
    want: usize,
    expiries: &[i64],
) -> std::result::Result<usize, Shut> {
    let mut n = want;
    if let Some(k) = rate_room(g, now) {
        if k == 0 {
            return Err(Shut::Rate {
                next_us: next_rate_us(g, now).unwrap_or(now),
            });
        }
        n = n.min(k);
    }
    if let Some(limit) = g.concurrency {
        let live = expiries.iter().filter(|&&e| e > now).count() as u64;
        let room = u64::from(limit).saturating_sub(live);
        if room == 0 {
            return Err(Shut::Full { live, limit });
        }
        n = n.min(usize::try_from(room).unwrap_or(usize::MAX));
    }
    Ok(n)
}

/// How many claims the rate limit admits at `now` (`None`: no rate limit):
/// claims `i = 1..=k` with `max(tat, now) + i·T − now <= B·T`.
fn rate_room(g: &GateRow, now: i64) -> Option<usize> {
    let rate = g.rate?;
    let t = emission(rate);
    let start = g.rate_tat_us.max(now);
    let room = t.saturating_mul(i64::from(rate.2)) - (start - now);
    Some(usize::try_from(room.max(0) / t).unwrap_or(usize::MAX))
}

/// The earliest time after `now` the rate limit admits a claim (`None`:
/// it admits one at `now`, or there is no rate limit).
fn next_rate_us(g: &GateRow, now: i64) -> Option<i64> {
    let rate = g.rate?;
    let t = emission(rate);
    // Allowed at x iff max(tat, x) + T − x <= B·T, i.e. x >= tat − (B−1)·T.
    let at = g
        .rate_tat_us
        .saturating_sub(t.saturating_mul(i64::from(rate.2) - 1));
    (at > now).then_some(at)
}

/// Record `made` claims at `now` in the rate limit's state.
pub(crate) fn charge(
    txn: &mut dyn Txn,
    production: &str,
    g: &GateRow,
    now: i64,
    made: usize,
) -> Result<()> {
    let Some(rate) = g.rate.filter(|_| made > 0) else {
        return Ok(());
    };
    let t = emission(rate);
    let mut row = *g;
    row.rate_tat_us = g
        .rate_tat_us
        .max(now)
        .saturating_add(t.saturating_mul(i64::try_from(made).unwrap_or(i64::MAX)));
    txn.set_gates(production, &row)
}

/// The error a claim of a named job gets from a shut gate.
pub(crate) fn refused(production: &str, job: &str, shut: Shut, now: i64) -> Error {
    match shut {
        Shut::Paused => Error::ProductionPaused(format!(
            "production {production:?} is paused; job {production}/{job} cannot be claimed until it is resumed"
        )),
        Shut::Full { live, limit } => Error::ConcurrencyLimit(format!(
            "production {production:?} has {live} live leases, its concurrency limit is {limit}; job {production}/{job} was not claimed"
        )),
        Shut::Rate { next_us } => Error::RateLimited(format!(
            "production {production:?} is over its rate limit; the next claim is allowed at {next_us} µs (now {now} µs); job {production}/{job} was not claimed"
        )),
    }
}

/// The gate row a claim of `production` must obey, if any (`known`: what
/// the claim's first statement already said about its existence).
pub(crate) fn for_claim(
    txn: &mut dyn Txn,
    production: &str,
    known: Option<bool>,
) -> Result<Option<GateRow>> {
    let gate = if known == Some(false) {
        None
    } else {
        txn.gates(production)?.filter(GateRow::any)
    };
    if gate.is_none() {
        txn.claim_without_gates(production)?;
    }
    Ok(gate)
}

/// A waiter's timed wake under the gates, given the wake without them
/// (`base`, see [`crate::rules::next_claimable_us`]): paused, only a commit
/// (the resume) wakes it; over the rate, when the next claim is allowed;
/// at the concurrency limit, the earliest expiry of a live lease, looked
/// at again every [`LIMIT_POLL_US`]. With the gates open, `base`, or
/// sooner the time the rate last began to allow a claim, however long ago
/// (an attempt just before that time was refused, and no commit tells the
/// waiter that time has passed). `fresh` maps a time the
/// waiter's latest attempt already saw to a later look.
pub(crate) fn wake_us(
    txn: &mut dyn Txn,
    production: &str,
    now: i64,
    base: Option<i64>,
    fresh: &dyn Fn(i64) -> i64,
) -> Result<Option<i64>> {
    let Some(g) = txn.gates(production)?.filter(GateRow::any) else {
        return Ok(base);
    };
    if g.paused_us.is_some() {
        return Ok(None);
    }
    if let Some(at) = next_rate_us(&g, now) {
        return Ok(Some(at));
    }
    if let Some(limit) = g.concurrency {
        let expiries = txn.live_expiries(production, now)?;
        let live = expiries.len() as u64;
        let earliest = expiries.iter().copied().min();
        if live >= u64::from(limit) {
            let poll = now.saturating_add(LIMIT_POLL_US);
            return Ok(Some(earliest.map_or(poll, |e| e.min(poll))));
        }
    }
    // While the burst refills, a time the attempt saw is looked at again
    // later; once it is whole, only a time the attempt could not have seen
    // wakes the waiter (an attempt that saw the rate open was refused for
    // want of a job, which a commit announces).
    let opened = rate_opened_us(&g, now).and_then(|at| {
        let look = fresh(at);
        (g.rate_tat_us > now || look == at).then_some(look)
    });
    Ok(match (base, opened) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// The time a rate limit that allows a claim at `now` began to allow one
/// again (at or before `now`, however long ago: an attempt refused before
/// it, whose waiter looks only now, may have seen the burst empty and the
/// rate since refilled it whole); `None` with no rate limit or while the
/// rate allows none.
fn rate_opened_us(g: &GateRow, now: i64) -> Option<i64> {
    let rate = g.rate?;
    let t = emission(rate);
    let at = g
        .rate_tat_us
        .saturating_sub(t.saturating_mul(i64::from(rate.2) - 1));
    (at <= now).then_some(at)
}

/// Read a production's gates for a change (`NotFound` if it does not exist).
fn locked_gates(s: &mut Session, production: &str) -> Result<(i64, GateRow)> {
    validate::id("production", production)?;
    s.txn.hold_production(production)?;
    let now = s.observe_now();
    if s.txn.production(production)?.is_none() {
        return Err(Error::NotFound(format!("production {production:?}")));
    }
    Ok((now, s.txn.gates(production)?.unwrap_or_default()))
}

/// Pause a production; `false` if it was already paused (nothing written).
pub(crate) fn pause(s: &mut Session, production: &str) -> Result<bool> {
    let (now, mut g) = locked_gates(s, production)?;
    if g.paused_us.is_some() {
        return Ok(false);
    }
    g.paused_us = Some(now);
    s.txn.set_gates(production, &g)?;
    s.production_event(production, EventKind::ProductionPaused, now, "")?;
    Ok(true)
}

/// Resume a paused production; `false` if it was not paused. Waiters wake.
pub(crate) fn resume(s: &mut Session, production: &str) -> Result<bool> {
    let (now, mut g) = locked_gates(s, production)?;
    let Some(since) = g.paused_us else {
        return Ok(false);
    };
    g.paused_us = None;
    s.txn.set_gates(production, &g)?;
    let detail = format!("paused since {since} µs");
    s.production_event(production, EventKind::ProductionResumed, now, &detail)?;
    s.work_ready(production);
    Ok(true)
}

/// Set or clear a production's concurrency limit; takes effect for every
/// claim that commits after it; lowering it revokes no lease.
pub(crate) fn set_concurrency(s: &mut Session, production: &str, k: Option<u32>) -> Result<()> {
    if let Some(k) = k {
        valid_count("a concurrency limit", k)?;
    }
    let (now, mut g) = locked_gates(s, production)?;
    g.concurrency = k;
    s.txn.set_gates(production, &g)?;
    let detail = match k {
        Some(k) => format!("concurrency limit {k}"),
        None => CONCURRENCY_CLEARED.to_owned(),
    };
    s.production_event(production, EventKind::ProductionLimited, now, &detail)?;
    s.work_ready(production);
    Ok(())
}

const CONCURRENCY_CLEARED: &str = "concurrency limit cleared";

/// The concurrency limit a `production_limited` event's detail sets
/// (`Some(None)`: cleared; `None`: the event is about the rate limit).
pub(crate) fn concurrency_in_detail(detail: &str) -> Option<Option<u32>> {
    if detail == CONCURRENCY_CLEARED {
        return Some(None);
    }
    detail
        .strip_prefix("concurrency limit ")
        .and_then(|k| k.parse().ok())
        .map(Some)
}

/// Set or clear a production's rate limit. Setting one starts with a full
/// burst.
pub(crate) fn set_rate(s: &mut Session, production: &str, r: Option<RateLimit>) -> Result<()> {
    let cols = r
        .as_ref()
        .map(|r| valid_rate(r).map(|us| (r.claims, us, r.burst)))
        .transpose()?;
    let (now, mut g) = locked_gates(s, production)?;
    if g.rate != cols {
        g.rate = cols;
        g.rate_tat_us = 0;
    }
    s.txn.set_gates(production, &g)?;
    let detail = match cols {
        Some((n, us, b)) => format!("rate limit {n} claims per {us} µs, burst {b}"),
        None => "rate limit cleared".to_owned(),
    };
    s.production_event(production, EventKind::ProductionLimited, now, &detail)?;
    s.work_ready(production);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rated(n: u32, us: i64, b: u32, tat: i64) -> GateRow {
        GateRow {
            rate: Some((n, us, b)),
            rate_tat_us: tat,
            ..GateRow::default()
        }
    }

    #[test]
    fn rate_admits_the_burst_then_one_per_emission_interval() {
        // 10 per second, burst 3: T = 100 ms.
        let (start, t) = (5_000_000, 100_000);
        let g = rated(10, 1_000_000, 3, 0);
        assert_eq!(next_rate_us(&g, start), None);
        assert_eq!(rate_room(&g, start), Some(3));
        // Three made at `start`: none until one T has passed, then one.
        let g = rated(10, 1_000_000, 3, start + 3 * t);
        assert_eq!(rate_room(&g, start), Some(0));
        assert_eq!(next_rate_us(&g, start), Some(start + t));
        assert_eq!(rate_room(&g, start + t - 1), Some(0));
        assert_eq!(rate_room(&g, start + t), Some(1));
        assert_eq!(next_rate_us(&g, start + t), None);
        // An earlier clock (never seen: the authority's clock is monotonic)
        // would admit nothing more either.
        assert_eq!(rate_room(&g, start - 10 * t), Some(0));
    }

    #[test]
    fn a_rate_that_reopened_before_the_look_still_wakes_a_refused_waiter() {
        // 10 per second, burst 2: T = 100 ms; two claims made at `start`
        // shut the rate until `start + T`.
        let (start, t) = (5_000_000, 100_000);
        let g = rated(10, 1_000_000, 2, start + 2 * t);
        assert_eq!(next_rate_us(&g, start), Some(start + t));
        assert_eq!(rate_opened_us(&g, start), None);
        // Looked at while the burst refills, and after it refilled whole:
        // the rate opened at `start + T` either way, later than an attempt
        // refused at `start` saw.
        for now in [start + t + 1, start + 2 * t, start + 10 * t] {
            assert_eq!(next_rate_us(&g, now), None);
            assert_eq!(rate_opened_us(&g, now), Some(start + t));
        }
        assert_eq!(rate_opened_us(&GateRow::default(), start), None);
    }

    #[test]
    fn rate_validation_refuses_zero_and_absurd() {
        let ok = RateLimit {
            claims: 5,
            interval: Duration::from_secs(1),
            burst: 1,
        };
        assert_eq!(valid_rate(&ok).unwrap(), 1_000_000);
        for bad in [
            RateLimit { claims: 0, ..ok },
            RateLimit { burst: 0, ..ok },
            RateLimit {
                claims: MAX_GATE + 1,
                ..ok
            },
            RateLimit {
                interval: Duration::from_secs(86_401),
                ..ok
            },
            RateLimit {
                interval: Duration::from_micros(4),
                ..ok
            },
            RateLimit {
                interval: Duration::from_nanos(1_500),
                ..ok
            },
        ] {
            assert!(valid_rate(&bad).is_err(), "{bad:?}");
        }
    }
}
