//! Queue statistics: per production, jobs by observed state, the waiting
//! and lease figures, and the flow over a recent window, all read in one
//! snapshot (docs/design.md, "Statistics").
//!
//! Counts by stored state come from figures the store keeps as jobs change
//! state (`job_counts`, written in the transaction of each change; SQLite
//! keeps the number of jobs and of each terminal state, and counts the
//! claimed jobs along their index); the split of requested jobs into due
//! and not yet due, and of claimed jobs into live and expired, from index
//! range reads of the smaller sets; the flow from the window's events it
//! counts (`flow_events!`, an index on `(production, at_us)`), at most
//! [`FLOW_EVENT_CAP`] of them, or, on a handle that read the production
//! before, from what that read found plus the events committed since
//! ([`FlowSeen`]); the claim gates from the production's gate
//! row (one primary-key read). Nothing here reads every job row.

use crate::error::{Error, Result};
use crate::gates::Gates;
use crate::model::EventKind;
use crate::store::{ClaimedFigures, FlowEvent, FlowRange, Stored, Txn, WaitingFigures};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The most events of one production the flow reads per call (the newest
/// of the window; [`Flow::truncated`] says when the window held more).
pub const FLOW_EVENT_CAP: usize = 10_000;

/// The most productions whose flow events a handle keeps ([`FlowSeen`]);
/// a read of one more drops them all (they are read again, whole). Each
/// keeps at most `FLOW_EVENT_CAP + 1` events of 56 bytes: about 9 MB at
/// most.
const FLOW_SEEN_PRODUCTIONS: usize = 16;
/// A read fetches only the events committed since the handle's last read
/// of the production when at most this many sequence numbers (of every
/// production) were handed out since; past it, reading the window costs
/// less.
const FLOW_SEEN_GAP: i64 = 4 * FLOW_EVENT_CAP as i64;

/// The flow events a handle's statistics reads found, per production, so
/// that its next read of the production fetches only the events that
/// committed since (docs/design.md, "Statistics"). What it answers is what
/// a read of the whole window in the same snapshot would answer.
#[derive(Default)]
pub(crate) struct FlowSeen {
    productions: Mutex<HashMap<String, Seen>>,
}

/// One production's events as a statistics read found them.
struct Seen {
    /// That read's event horizon ([`Txn::flow_horizon`]): it found every
    /// event below it that will ever commit.
    below: i64,
    /// That read's window start.
    from: i64,
    /// The events it counted with `seq < below`, newest first.
    events: Vec<FlowEvent>,
}

impl FlowSeen {
    fn take(&self, production: &str) -> Option<Seen> {
        self.lock().remove(production)
    }

    fn keep(&self, production: &str, seen: Seen) {
        let mut all = self.lock();
        if all.len() >= FLOW_SEEN_PRODUCTIONS && !all.contains_key(production) {
            all.clear();
        }
        all.insert(production.to_owned(), seen);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Seen>> {
        self.productions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The default horizon of [`ProductionStats::expiring_within`]: 30 s.
pub const DEFAULT_STATS_HORIZON: Duration = Duration::from_secs(30);
/// The default flow window: 60 s.
pub const DEFAULT_STATS_WINDOW: Duration = Duration::from_secs(60);
/// The longest horizon or window a query may ask for: 30 days.
pub const MAX_STATS_SPAN: Duration = Duration::from_secs(30 * 24 * 3600);

/// What [`crate::Authority::stats`] reports on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsQuery {
    /// Only this production (`None`: every production, by name).
    pub production: Option<String>,
    /// Live leases expiring within this long of the clock reading are
    /// counted in [`ProductionStats::expiring_within`].
    pub horizon: Duration,
    /// The flow is over the events of this long before the clock reading.
    pub window: Duration,
}

impl Default for StatsQuery {
    fn default() -> StatsQuery {
        StatsQuery {
            production: None,
            horizon: DEFAULT_STATS_HORIZON,
            window: DEFAULT_STATS_WINDOW,
        }
    }
}

/// Queue statistics of a store, read in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// The clock reading the figures are classified against
    /// (`max(clock, high-water mark)`, µs since the epoch).
    pub now_us: i64,
    /// The durable high-water mark (µs since the epoch).
    pub high_water_us: i64,
    /// The horizon asked for.
    pub horizon: Duration,
    /// The window asked for.
    pub window: Duration,
    /// One entry per production, by name.
    pub productions: Vec<ProductionStats>,
}

/// One production's statistics. Exact counts by observed state: their sum
/// is the production's number of jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductionStats {
    /// Production ID.
    pub name: String,
    /// Whether the production is cancelled.
    pub cancelled: bool,
    /// Requested jobs whose due time has come.
    pub waiting_due: u64,
    /// Requested jobs not yet due.
    pub waiting_later: u64,
    /// Claimed jobs whose lease is live.
    pub claimed_live: u64,
    /// Claimed jobs whose lease expired, with attempts left, not yet
    /// reclaimed (observed state `expired`).
    pub claimed_expired: u64,
    /// Completed jobs.
    pub completed: u64,
    /// Failed jobs (an expired claim with no attempts left included:
    /// observed state `failed`).
    pub failed: u64,
    /// Cancelled jobs.
    pub cancelled_jobs: u64,
    /// How long the oldest due waiting job has been due, on the
    /// authority's clock.
    pub oldest_due_age: Option<Duration>,
    /// The earliest due time of a waiting job not yet due (µs since the
    /// epoch).
    pub next_due_us: Option<i64>,
    /// Live leases expiring within the horizon.
    pub expiring_within: u64,
    /// The attempt count of the most-retried job with a live lease (0:
    /// no live lease).
    pub max_live_attempts: u32,
    /// The production's claim gates (paused since when, concurrency limit,
    /// rate limit), read from its gate row in the same snapshot.
    pub gates: Gates,
    /// The flow over the window.
    pub flow: Flow,
}

impl ProductionStats {
    /// Every job of the production.
    pub fn total(&self) -> u64 {
        self.waiting_due
            + self.waiting_later
            + self.claimed_live
            + self.claimed_expired
            + self.completed
            + self.failed
            + self.cancelled_jobs
    }
}

/// Flow over the window: counts of what the log records in it, and
/// durations as exact percentiles over the window's events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flow {
    /// The window (as asked).
    pub window: Duration,
    /// Claims (a lease minted).
    pub claims: u64,
    /// Completions.
    pub completions: u64,
    /// Failures that left the job requested for another attempt.
    pub retryable_failures: u64,
    /// Failures that ended the job (reported with no attempts left, or an
    /// expired claim recorded as failed).
    pub permanent_failures: u64,
    /// Leases whose expiry fell in the window: taken over by a reclaim,
    /// recorded as exhausted, or still claimed and expired.
    pub expiries: u64,
    /// Queue wait: from the time a job became due to its claim.
    pub wait: Percentiles,
    /// Run time: from a claim to its close (complete, fail, release).
    pub run: Percentiles,
    /// The window held more than [`FLOW_EVENT_CAP`] events of the
    /// production: the figures are over the newest of them.
    pub truncated: bool,
    /// The span the figures cover: the window, or, when [`Flow::truncated`],
    /// from the oldest event read to the clock reading.
    pub covered: Duration,
}

impl Flow {
    /// Events per second over the span covered ([`Flow::covered`]).
    pub fn per_second(&self, n: u64) -> f64 {
        let s = self.covered.as_secs_f64();
        if s > 0.0 {
            n as f64 / s
        } else {
            0.0
        }
    }
}

/// Exact nearest-rank percentiles of a set of durations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// How many durations (0: the percentiles are `None`).
    pub count: u64,
    /// Median.
    pub p50: Option<Duration>,
    /// 95th percentile.
    pub p95: Option<Duration>,
    /// 99th percentile.
    pub p99: Option<Duration>,
}

impl Percentiles {
    /// Nearest-rank percentiles of `us` (µs; negative values count as 0).
    pub fn of(mut us: Vec<i64>) -> Percentiles {
        us.sort_unstable();
        let rank = |p: u64| -> Option<Duration> {
            let n = us.len() as u64;
            if n == 0 {
                return None;
            }
            // Nearest rank: the smallest value with at least p% at or below it.
            let k = (p * n).div_ceil(100).max(1);
            Some(Duration::from_micros(us[(k - 1) as usize].max(0) as u64))
        };
        Percentiles {
            count: us.len() as u64,
            p50: rank(50),
            p95: rank(95),
            p99: rank(99),
        }
    }
}

fn span_us(what: &str, d: Duration) -> Result<i64> {
    if d > MAX_STATS_SPAN {
        return Err(Error::InvalidDuration(format!(
            "stats {what} {d:?} is longer than {MAX_STATS_SPAN:?}"
        )));
    }
    Ok(d.as_micros() as i64)
}

/// Check a query before anything is read.
pub(crate) fn validate(q: &StatsQuery) -> Result<()> {
    if let Some(p) = &q.production {
        crate::validate::id("production", p)?;
    }
    span_us("horizon", q.horizon)?;
    span_us("window", q.window)?;
    Ok(())
}

/// The statistics of `q` in the transaction's snapshot, classified at
/// `now` (`max(clock, mark)`).
/// `seen`: what this handle's earlier reads found of each production's
/// flow, brought up to date here.
pub(crate) fn read(t: &mut dyn Txn, now: i64, q: &StatsQuery, seen: &FlowSeen) -> Result<Stats> {
    validate(q)?;
    let horizon = span_us("horizon", q.horizon)?;
    let window = span_us("window", q.window)?;
    let high_water_us = t.high_water()?;
    let log = Log {
        seen,
        horizon: t.flow_horizon()?,
        window: q.window,
    };
    let prods = t.productions()?;
    let prods: Vec<_> = match &q.production {
        Some(p) => {
            let one: Vec<_> = prods.into_iter().filter(|r| &r.name == p).collect();
            if one.is_empty() {
                return Err(Error::NotFound(format!("production {p:?}")));
            }
            one
        }
        None => prods,
    };
    let mut out = Vec::with_capacity(prods.len());
    for p in prods {
        out.push(production(
            t,
            &p.name,
            p.cancelled_us.is_some(),
            now,
            horizon,
            window,
            &log,
        )?);
    }
    Ok(Stats {
        now_us: now,
        high_water_us,
        horizon: q.horizon,
        window: q.window,
        productions: out,
    })
}

fn production(
    t: &mut dyn Txn,
    name: &str,
    cancelled: bool,
    now: i64,
    horizon: i64,
    window: i64,
    log: &Log<'_>,
) -> Result<ProductionStats> {
    let counts = t.state_counts(name)?;
    let of = |s: Stored| counts.iter().find(|(k, _)| *k == s).map_or(0, |(_, n)| *n);
    let WaitingFigures {
        later,
        oldest_due_us,
        next_due_us,
    } = t.waiting_figures(name, now)?;
    let from = now.saturating_sub(window);
    let ClaimedFigures {
        live,
        expired,
        exhausted,
        expiring,
        max_live_attempts,
        lapsed_in_window,
    } = t.claimed_figures(name, now, now.saturating_add(horizon), from)?;
    let requested = of(Stored::Requested);
    let gates = t
        .gates(name)?
        .map(|g| Gates::from_row(&g))
        .unwrap_or_default();
    let flow = flow(t, name, from, now, lapsed_in_window, log)?;
    Ok(ProductionStats {
        name: name.to_owned(),
        cancelled,
        waiting_due: requested.saturating_sub(later),
        waiting_later: later,
        claimed_live: live,
        claimed_expired: expired,
        completed: of(Stored::Completed),
        failed: of(Stored::Failed) + exhausted,
        cancelled_jobs: of(Stored::Cancelled),
        oldest_due_age: oldest_due_us
            .map(|d| Duration::from_micros(now.saturating_sub(d).max(0) as u64)),
        next_due_us,
        expiring_within: expiring,
        max_live_attempts,
        gates,
        flow,
    })
}

/// Where a statistics read finds the flow's events: the handle's
/// [`FlowSeen`] and the snapshot's event horizon.
struct Log<'a> {
    seen: &'a FlowSeen,
    horizon: Option<i64>,
    /// The window asked for.
    window: Duration,
}

/// The flow over `[from, now]` from the window's events.
fn flow(
    t: &mut dyn Txn,
    name: &str,
    from: i64,
    now: i64,
    lapsed_claimed: u64,
    log: &Log<'_>,
) -> Result<Flow> {
    let window = log.window;
    let evs = window_events(t, name, from, now, log)?;
    let truncated = evs.len() > FLOW_EVENT_CAP;
    // Newest first: the last one read is the oldest the figures cover.
    let covered = match evs.get(FLOW_EVENT_CAP.saturating_sub(1)) {
        Some(oldest) if truncated => {
            Duration::from_micros(now.saturating_sub(oldest.at_us).max(0) as u64)
        }
        _ => window,
    };
    let mut f = Flow {
        window,
        truncated,
        covered,
        expiries: lapsed_claimed,
        ..Flow::default()
    };
    let (mut wait, mut run) = (Vec::new(), Vec::new());
    for e in evs.iter().take(FLOW_EVENT_CAP) {
        tally(&mut f, &mut wait, &mut run, e, from);
    }
    f.wait = Percentiles::of(wait);
    f.run = Percentiles::of(run);
    Ok(f)
}

/// The newest `FLOW_EVENT_CAP + 1` flow events of `[from, now]`, newest
/// first: what the handle found before plus what committed since, when
/// that is the same set, else read along the window (and kept for the next
/// read when the snapshot's horizon is known).
///
/// Why the two agree. The earlier read found every event below its horizon
/// `below` that will ever commit, and kept those it counted; an event
/// leaves the log only as a prefix of its production's log by `seq`
/// (retention, a production's deletion), so when the oldest kept event is
/// still stored, every kept one is. The events of this snapshot from
/// `below` on are read along the log. An event of the earlier window that
/// was not kept was older than the `FLOW_EVENT_CAP + 1` kept or re-read
/// ones, which are all in this window whenever it is. Ties in `at_us` at
/// the edge of a truncated window may count other events of that
/// microsecond, as any read of a truncated window may.
fn window_events(
    t: &mut dyn Txn,
    name: &str,
    from: i64,
    now: i64,
    log: &Log<'_>,
) -> Result<Vec<FlowEvent>> {
    let whole = FlowRange {
        production: name,
        after: None,
        from,
        to: now,
        limit: FLOW_EVENT_CAP + 1,
    };
    let Some(h) = log.horizon else {
        return t.flow_events(&whole);
    };
    let kept = log
        .seen
        .take(name)
        .filter(|k| k.from <= from && k.below <= h && h.saturating_sub(k.below) <= FLOW_SEEN_GAP);
    let kept = match kept {
        Some(k) => match k.events.iter().map(|e| e.seq).min() {
            Some(oldest) if !t.event_stored(oldest)? => None,
            _ => Some(k),
        },
        None => None,
    };
    let evs = match kept {
        Some(k) => {
            let mut evs = t.flow_events(&FlowRange {
                after: Some(k.below),
                ..whole
            })?;
            evs.extend(
                k.events
                    .into_iter()
                    .filter(|e| e.at_us >= from && e.at_us <= now),
            );
            evs.sort_by_key(|e| std::cmp::Reverse(e.at_us));
            evs.truncate(whole.limit);
            evs
        }
        None => t.flow_events(&whole)?,
    };
    let events = evs.iter().filter(|e| e.seq < h).cloned().collect();
    log.seen.keep(
        name,
        Seen {
            below: h,
            from,
            events,
        },
    );
    Ok(evs)
}

/// What one event of the window adds to the flow.
pub(crate) fn tally(
    f: &mut Flow,
    wait: &mut Vec<i64>,
    run: &mut Vec<i64>,
    e: &FlowEvent,
    from: i64,
) {
    if e.lapsed_us.is_some_and(|l| l >= from) {
        f.expiries += 1;
    }
    match e.kind {
        EventKind::Claimed => {
            f.claims += 1;
            if let Some(s) = e.since_us {
                wait.push(e.at_us - s);
            }
        }
        EventKind::Completed => {
            f.completions += 1;
            run.extend(e.since_us.map(|s| e.at_us - s));
        }
        EventKind::Failed => {
            if e.state == Some(Stored::Requested) {
                f.retryable_failures += 1;
            } else {
                f.permanent_failures += 1;
            }
            run.extend(e.since_us.map(|s| e.at_us - s));
        }
        EventKind::Released => run.extend(e.since_us.map(|s| e.at_us - s)),
        EventKind::Exhausted => f.permanent_failures += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`FLOW_SEEN_PRODUCTIONS`] states of a handle's memory.
    #[test]
    fn a_kept_flow_event_takes_56_bytes_at_most() {
        assert!(std::mem::size_of::<FlowEvent>() <= 56);
    }

    #[test]
    fn percentiles_nearest_rank() {
        let p = Percentiles::of((1..=100).rev().collect());
        assert_eq!(p.count, 100);
        assert_eq!(p.p50, Some(Duration::from_micros(50)));
        assert_eq!(p.p95, Some(Duration::from_micros(95)));
        assert_eq!(p.p99, Some(Duration::from_micros(99)));
        let one = Percentiles::of(vec![7]);
        assert_eq!(one.p50, Some(Duration::from_micros(7)));
        assert_eq!(one.p99, Some(Duration::from_micros(7)));
        assert_eq!(Percentiles::of(Vec::new()), Percentiles::default());
    }

    /// The events `flow_events!` leaves out of the flow's read (and of
    /// SQLite's `events_by_time`) are those that add nothing to the flow:
    /// every kind, with and without a lapsed lease, in every state, with a
    /// start time, evaluated by SQLite against the condition's text.
    #[test]
    fn the_flow_reads_every_event_that_adds_to_it() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE events (kind TEXT NOT NULL, lapsed_us INTEGER)")
            .unwrap();
        let mut read = c
            .prepare(concat!(
                "SELECT ",
                crate::store::flow_events!(),
                " FROM events WHERE kind = ?1 AND lapsed_us IS ?2"
            ))
            .unwrap();
        for kind in EventKind::ALL {
            for lapsed in [None, Some(5)] {
                c.execute(
                    "INSERT INTO events (kind, lapsed_us) VALUES (?1, ?2)",
                    rusqlite::params![kind.as_str(), lapsed],
                )
                .unwrap();
                let read_by_flow: bool = read
                    .query_row(rusqlite::params![kind.as_str(), lapsed], |r| r.get(0))
                    .unwrap();
                for state in [None, Some(Stored::Requested), Some(Stored::Failed)] {
                    let e = FlowEvent {
                        seq: 1,
                        at_us: 10,
                        kind,
                        state,
                        since_us: Some(1),
                        lapsed_us: lapsed,
                    };
                    let mut f = Flow::default();
                    let (mut wait, mut run) = (Vec::new(), Vec::new());
                    tally(&mut f, &mut wait, &mut run, &e, 0);
                    let adds = f != Flow::default() || !wait.is_empty() || !run.is_empty();
                    assert!(read_by_flow || !adds, "{kind:?} lapsed {lapsed:?}");
                }
            }
        }
    }
}
