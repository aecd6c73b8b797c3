//! Automatic retry of idempotent calls when a store server asks to try
//! again (docs/design.md, "Idempotent calls"), and the back-off of the
//! loops that wait for work while the server is away ([`Outage`]).
//!
//! A call whose connection broke may or may not have committed: the client
//! cannot tell. Only calls whose retry answers with what the first attempt
//! recorded are retried here: renew, release, fail, complete (single and
//! batched), and claims under a [`crate::ClaimRequest`]. Each retry runs on
//! a fresh pooled connection with replay on, so the caller sees exactly one
//! outcome, the one that committed. Claims without a request ID, claim-next
//! without one, edits and coordinator calls are never retried. A SQLite
//! store never reports a lost connection or a server's "try again":
//! nothing is retried there.
//!
//! How long: a lease transition is retried until the lease's expiry has
//! passed (by the authority's clock, at least [`MIN_RETRY_TIME`]): after
//! it the transition can only be refused, unless an earlier attempt
//! committed, which the server answers once it is back. Claims under a
//! request ID are retried for [`MAX_RETRY_TIME`]. The pauses between
//! attempts grow 5 ms, 10 ms, 20 ms, ... up to [`MAX_PAUSE`], each drawn
//! uniformly from its upper half (jitter), so clients cut off together do
//! not come back together.

use crate::error::{Error, ErrorCode, Result};
use crate::store::{CONNECTION_LOST, TRY_AGAIN_BUSY};
use std::time::{Duration, Instant};

/// No retry of a claim under a request ID starts after this long since
/// the call began.
pub(crate) const MAX_RETRY_TIME: Duration = Duration::from_secs(30);
/// A lease transition is retried for at least this long, whatever the
/// lease's remaining time.
pub(crate) const MIN_RETRY_TIME: Duration = Duration::from_secs(1);
/// The longest pause between two attempts of one call.
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Whether `e` is a failure after which an idempotent call is retried: a
/// lost connection, a server's transient refusal (a lock timeout, a
/// serialization failure, a deadlock, no free connection slot), or a
/// request-ID claim that lost a race to the claim the retry will answer
/// with.
pub(crate) fn retryable(e: &Error) -> bool {
    match e {
        Error::Store(m) => m.starts_with(CONNECTION_LOST),
        Error::Busy(m) => {
            m.starts_with(TRY_AGAIN_BUSY) || m.starts_with(crate::rules::REQUEST_RACE)
        }
        _ => false,
    }
}

/// Whether `e` says the store server is away (a lost or refused
/// connection, no free connection slot): what a waiting loop backs off
/// from ([`Outage`]).
pub(crate) fn server_away(e: &Error) -> bool {
    match e {
        Error::Store(m) => m.starts_with(CONNECTION_LOST),
        Error::Busy(m) => m.starts_with(TRY_AGAIN_BUSY),
        _ => false,
    }
}

/// The pause before retry number `attempt` (0-based): `base * 2^attempt`,
/// at most `cap`, drawn uniformly from its upper half.
pub(crate) fn jittered(base: Duration, cap: Duration, attempt: u32) -> Duration {
    let full = base.saturating_mul(1u32 << attempt.min(16)).min(cap);
    let half = full / 2;
    let mut b = [0u8; 8];
    let r = match getrandom::getrandom(&mut b) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => u64::from(Instant::now().elapsed().subsec_nanos()),
    };
    let span = (full - half).as_nanos().max(1) as u64;
    half + Duration::from_nanos(r % span)
}

/// Run `call(retry)` (`retry` false on the first attempt), again while it
/// fails with a [`retryable`] error, for at most [`MAX_RETRY_TIME`].
pub(crate) fn idempotent<T>(call: impl FnMut(bool) -> Result<T>) -> Result<T> {
    idempotent_for(|| MAX_RETRY_TIME, call)
}

/// How long a lease transition is retried: until the lease expires
/// (`expires_us`, against `now_us` of the authority's clock), at least
/// [`MIN_RETRY_TIME`].
pub(crate) fn lease_budget(expires_us: i64, now_us: i64) -> Duration {
    let left = u64::try_from(expires_us.saturating_sub(now_us)).unwrap_or(0);
    Duration::from_micros(left).max(MIN_RETRY_TIME)
}

/// [`idempotent`] for at most `budget()`: no retry starts after it. The
/// budget is asked for once, at the first retryable failure, so a call
/// that succeeds at once reads nothing for it (no clock sample).
pub(crate) fn idempotent_for<T>(
    budget: impl FnOnce() -> Duration,
    mut call: impl FnMut(bool) -> Result<T>,
) -> Result<T> {
    let start = Instant::now();
    let mut attempt = 0u32;
    let mut budget = Some(budget);
    let mut limit = Duration::ZERO;
    loop {
        match call(attempt > 0) {
            Err(e) if retryable(&e) => {
                if let Some(b) = budget.take() {
                    limit = b();
                }
                let pause = jittered(Duration::from_millis(5), MAX_PAUSE, attempt);
                if start.elapsed() + pause >= limit {
                    return Err(e);
                }
                crate::stats::note_retry();
                std::thread::sleep(pause);
                attempt += 1;
            }
            r => return r,
        }
    }
}

/// How a loop that waits for work rides out a store server that is away
/// (see docs/design.md, "Workers and a server that goes away"): after each
/// failed wait it pauses 50 ms, 100 ms, ... up to [`Outage::MAX_PAUSE`]
/// (jittered as [`jittered`]), counts the outage once, and, with a bound
/// set, gives up once the server has been away that long. Any other
/// failure pauses [`Outage::OTHER_PAUSE`]. A successful wait ends the
/// outage.
#[derive(Debug)]
pub struct Outage {
    bound: Option<Duration>,
    since: Option<Instant>,
    failures: u32,
}

/// What an [`Outage`] tells its loop after a failed wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutageStep {
    /// Pause this long, then wait again; `first` when this failure began
    /// an outage (report it once).
    Pause {
        /// How long to pause.
        pause: Duration,
        /// This failure began an outage.
        first: bool,
    },
    /// The server has been away longer than the bound: stop.
    GiveUp,
}

impl Outage {
    /// The longest pause after a failed wait while the server is away.
    pub const MAX_PAUSE: Duration = Duration::from_secs(2);
    /// The pause after a failed wait for any other reason (a missing
    /// production, a clock rollback, ...).
    pub const OTHER_PAUSE: Duration = Duration::from_secs(1);

    /// An outage tracker; `bound`: stop after the server has been away
    /// this long (`None`: never).
    pub fn new(bound: Option<Duration>) -> Outage {
        Outage {
            bound,
            since: None,
            failures: 0,
        }
    }

    /// Whether `e` says the store server is away (a lost or refused
    /// connection, a transient refusal such as no free connection slot):
    /// what [`Outage::failed`] backs off from.
    pub fn is_server_away(e: &Error) -> bool {
        server_away(e)
    }

    /// The error a failure reported elsewhere as its `code` and its
    /// message (the error's display text, as the C ABI's last-error
    /// message carries it), as far as [`Outage::failed`] reads it: the
    /// same classification ([`Outage::is_server_away`]) for a loop
    /// composed over the C calls.
    pub fn reported(code: ErrorCode, message: &str) -> Error {
        let detail = |shown: Error| {
            let prefix = shown.to_string();
            message.strip_prefix(&prefix).unwrap_or(message).to_owned()
        };
        match code {
            ErrorCode::Store => Error::Store(detail(Error::Store(String::new()))),
            ErrorCode::Busy => Error::Busy(detail(Error::Busy(String::new()))),
            _ => Error::Internal(message.to_owned()),
        }
    }

    /// A wait succeeded (or found no job): the server is back.
    pub fn ok(&mut self) -> bool {
        let was = self.since.is_some();
        self.since = None;
        self.failures = 0;
        was
    }

    /// A wait failed with `e`: how to go on.
    pub fn failed(&mut self, e: &Error) -> OutageStep {
        if !server_away(e) {
            return OutageStep::Pause {
                pause: Self::OTHER_PAUSE,
                first: false,
            };
        }
        let first = self.since.is_none();
        let since = *self.since.get_or_insert_with(Instant::now);
        if self.bound.is_some_and(|b| since.elapsed() >= b) {
            return OutageStep::GiveUp;
        }
        let pause = jittered(Duration::from_millis(50), Self::MAX_PAUSE, self.failures);
        self.failures = self.failures.saturating_add(1);
        OutageStep::Pause { pause, first }
    }

    /// Since when the server has been away, if it is.
    pub fn since(&self) -> Option<Instant> {
        self.since
    }
}

/// The outage of a worker's slots together, each slot with its own
/// [`Outage`], as the Rust worker counts it (`crate::worker`): an outage
/// begins when the first slot finds the server away and counts once however
/// many slots notice it; it ends when the last slot that saw it is answered
/// again; a slot away past the bound gives up, reported once. What the C
/// ABI's `tenure_outage` exports for loops composed over the C calls.
#[derive(Debug)]
pub struct SlotsOutage {
    slots: Vec<Outage>,
    away: usize,
    away_since: Option<Instant>,
    outages: u64,
    gave_up: bool,
}

/// What a [`SlotsOutage`] tells one slot after a failed wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotsStep {
    /// Pause this long, then wait again; `began` when this failure began
    /// the worker's outage (report it).
    Pause {
        /// How long to pause.
        pause: Duration,
        /// This failure began the worker's outage.
        began: bool,
    },
    /// The server has been away longer than the bound: stop the worker.
    /// `first` for the first slot told so (report it); `away`: since the
    /// worker's outage began.
    GiveUp {
        /// How long the server has been away.
        away: Duration,
        /// The first slot told to give up.
        first: bool,
    },
}

impl SlotsOutage {
    /// `slots` slots (at least one), each stopping after the server has
    /// been away `bound` (`None`: never).
    pub fn new(bound: Option<Duration>, slots: usize) -> SlotsOutage {
        SlotsOutage {
            slots: (0..slots.max(1)).map(|_| Outage::new(bound)).collect(),
            away: 0,
            away_since: None,
            outages: 0,
            gave_up: false,
        }
    }

    /// How many slots this counts for.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Slot `slot`'s wait failed with `e`: how it goes on (`None` for a
    /// slot out of range).
    pub fn failed(&mut self, slot: usize, e: &Error) -> Option<SlotsStep> {
        let o = self.slots.get_mut(slot)?;
        let was_away = o.since().is_some();
        let step = o.failed(e);
        let now_away = o.since();
        if !was_away && now_away.is_some() {
            self.away += 1;
        }
        Some(match step {
            OutageStep::GiveUp => {
                let first = !self.gave_up;
                self.gave_up = true;
                let since = self.away_since.or(now_away).unwrap_or_else(Instant::now);
                SlotsStep::GiveUp {
                    away: since.elapsed(),
                    first,
                }
            }
            OutageStep::Pause { pause, .. } => {
                let began = self.away_since.is_none() && now_away.is_some();
                if began {
                    self.away_since = now_away;
                    self.outages += 1;
                }
                SlotsStep::Pause { pause, began }
            }
        })
    }

    /// Slot `slot`'s wait succeeded (or found no job): its outage, if any,
    /// is over; the worker's ends with the last slot that saw it, and this
    /// is how long it lasted.
    pub fn ok(&mut self, slot: usize) -> Option<Duration> {
        let o = self.slots.get_mut(slot)?;
        if !o.ok() {
            return None;
        }
        self.away = self.away.saturating_sub(1);
        if self.away == 0 {
            self.away_since.take().map(|t| t.elapsed())
        } else {
            None
        }
    }

    /// How many outages began.
    pub fn outages(&self) -> u64 {
        self.outages
    }

    /// Whether a slot was told to give up.
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_to_their_cap_with_jitter() {
        for attempt in 0..20 {
            let full = Duration::from_millis(5)
                .saturating_mul(1 << attempt.min(16))
                .min(MAX_PAUSE);
            let p = jittered(Duration::from_millis(5), MAX_PAUSE, attempt);
            assert!(p >= full / 2 && p <= full, "{attempt}: {p:?}");
        }
    }

    #[test]
    fn which_errors_are_retried() {
        let lost = Error::Store(format!("{CONNECTION_LOST}: x"));
        let again = Error::Busy(format!("{TRY_AGAIN_BUSY}: x"));
        assert!(retryable(&lost) && retryable(&again));
        assert!(server_away(&lost) && server_away(&again));
        assert!(!retryable(&Error::Store("disk full".into())));
        assert!(!retryable(&Error::Busy("the writer lock is held".into())));
        assert!(!server_away(&Error::Busy("the writer lock is held".into())));
        for e in [&lost, &again] {
            let back = Outage::reported(e.code(), &e.to_string());
            assert!(server_away(&back), "{back}");
        }
        let full = Error::Store("disk full".into());
        assert!(!server_away(&Outage::reported(
            full.code(),
            &full.to_string()
        )));
        let other = Error::invalid(CONNECTION_LOST);
        assert!(!server_away(&Outage::reported(
            other.code(),
            &other.to_string()
        )));
    }

    #[test]
    fn a_lease_transition_is_retried_until_its_lease_expires() {
        assert_eq!(lease_budget(10_000_000, 1_000_000), Duration::from_secs(9));
        assert_eq!(lease_budget(1_000_000, 10_000_000), MIN_RETRY_TIME);
        let start = Instant::now();
        let mut calls = 0;
        let r: Result<()> = idempotent_for(
            || Duration::from_millis(300),
            |_| {
                calls += 1;
                Err(Error::Store(format!("{CONNECTION_LOST}: down")))
            },
        );
        assert!(r.is_err());
        assert!(calls > 3, "{calls}");
        assert!(start.elapsed() < Duration::from_millis(300));
    }

    #[test]
    fn an_outage_backs_off_reports_once_and_honours_its_bound() {
        let lost = Error::Store(format!("{CONNECTION_LOST}: down"));
        let mut o = Outage::new(None);
        assert!(matches!(
            o.failed(&lost),
            OutageStep::Pause { first: true, .. }
        ));
        for _ in 0..10 {
            match o.failed(&lost) {
                OutageStep::Pause { pause, first } => {
                    assert!(!first);
                    assert!(pause <= Outage::MAX_PAUSE);
                }
                OutageStep::GiveUp => panic!("no bound"),
            }
        }
        assert!(o.ok());
        assert!(!o.ok());
        let mut o = Outage::new(Some(Duration::ZERO));
        assert_eq!(o.failed(&lost), OutageStep::GiveUp);
        let mut o = Outage::new(Some(Duration::ZERO));
        assert!(matches!(
            o.failed(&Error::NotFound("p".into())),
            OutageStep::Pause { first: false, .. }
        ));
    }

    #[test]
    fn slots_share_one_outage() {
        let lost = Error::Store(format!("{CONNECTION_LOST}: down"));
        let mut w = SlotsOutage::new(None, 3);
        assert!(matches!(
            w.failed(0, &lost),
            Some(SlotsStep::Pause { began: true, .. })
        ));
        assert!(matches!(
            w.failed(1, &lost),
            Some(SlotsStep::Pause { began: false, .. })
        ));
        assert_eq!(w.ok(2), None); // never saw it
        assert_eq!(w.ok(0), None); // slot 1 still does
        assert!(w.ok(1).is_some());
        assert_eq!(w.outages(), 1);
        assert!(w.failed(3, &lost).is_none());
        let mut w = SlotsOutage::new(Some(Duration::ZERO), 2);
        assert!(matches!(
            w.failed(0, &lost),
            Some(SlotsStep::GiveUp { first: true, .. })
        ));
        assert!(matches!(
            w.failed(1, &lost),
            Some(SlotsStep::GiveUp { first: false, .. })
        ));
    }
}
