//! Waiting for work: [`crate::Authority::claim_next_wait`] and its cancel
//! handle [`WaitCancel`].
//!
//! A wait is a sequence of ordinary claim-next attempts (the rule stays in
//! [`crate::rules::claim_next`]); the loop ([`until_claimed`]) is given the
//! attempt and the store's next expiry as functions, so it knows nothing of
//! the authority that calls it. Between two attempts the waiter sleeps on
//! its store's doorbell ([`crate::doorbell`]) until one of:
//!
//! - the doorbell rings: a commit (of any process) that may have made a job
//!   of some production claimable (a submission, a release, a retryable
//!   failure);
//! - the timed wake: the earliest expiry of a lease in the production
//!   ([`crate::rules::next_claimable_us`]), mapped from the authority's
//!   clock to a local deadline; re-read at least every [`SLICE`] so that a
//!   clock that jumps forward expires leases for the waiter too;
//! - the timeout: the wait ends with [`Error::NoJobAvailable`];
//! - cancellation ([`WaitCancel::cancel`], [`crate::Authority::cancel_waits`]):
//!   the wait ends with [`Error::NoJobAvailable`] whose message says it was
//!   cancelled ([`WaitCancel::is_cancelled`] tells the two apart).
//!
//! Any other error of an attempt (a missing production, `clock_rollback`,
//! `busy`, ...) ends the wait with that error at once.

use crate::doorbell::Doorbell;
use crate::error::{Error, Result};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The longest sleep between two looks at the store's lease expiries.
pub(crate) const SLICE: Duration = Duration::from_secs(1);
/// How soon to try again when a lease is already past its expiry but the
/// attempt found nothing (PostgreSQL: its row was locked at that instant).
const RETRY: Duration = Duration::from_millis(10);

#[derive(Default)]
struct CancelState {
    cancelled: AtomicBool,
    bells: Mutex<Vec<Weak<dyn Doorbell>>>,
}

/// A cancel handle for waits ([`crate::Authority::claim_next_wait`]) and worker
/// loops. Clones share one state: cancelling any clone wakes every wait that
/// was given one of them, on any thread, at once. Cancellation is final.
#[derive(Clone, Default)]
pub struct WaitCancel {
    state: Arc<CancelState>,
}

impl WaitCancel {
    /// A handle that is not cancelled.
    pub fn new() -> WaitCancel {
        WaitCancel::default()
    }

    /// Cancel: every wait using this handle (now or later) ends with
    /// [`Error::NoJobAvailable`] saying it was cancelled.
    pub fn cancel(&self) {
        self.state.cancelled.store(true, Ordering::SeqCst);
        let bells: Vec<_> = lock(&self.state.bells).clone();
        for b in bells.iter().filter_map(Weak::upgrade) {
            b.wake();
        }
    }

    /// Whether [`WaitCancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::SeqCst)
    }

    /// Wake `bell`'s sleepers when cancelled.
    pub(crate) fn register(&self, bell: &Arc<dyn Doorbell>) {
        let mut bells = lock(&self.state.bells);
        bells.retain(|w| w.strong_count() > 0);
        let w = Arc::downgrade(bell);
        if !bells.iter().any(|b| b.ptr_eq(&w)) {
            bells.push(w);
        }
    }
}

impl fmt::Debug for WaitCancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitCancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn cancelled(production: &str) -> Error {
    Error::NoJobAvailable(format!(
        "the wait for work in production {production:?} was cancelled"
    ))
}

/// The wait loop behind [`crate::Authority::claim_next_wait`]: `attempt`
/// until it gives something other than [`Error::NoJobAvailable`], sleeping on
/// `bell` between two attempts until it rings, until the timed wake that
/// `next` reports, or until `deadline`. `next(seen)` gives the store's
/// clock reading and the time work may become claimable without a commit
/// ([`crate::rules::next_claimable_us`]), both in microseconds; `seen` is a
/// clock reading `next` gave before the latest attempt began (none before
/// the first attempt's first look), so a time that attempt already saw
/// makes the waiter look again a slice later, not at once. Each of
/// `cancels` is registered with `bell`; cancelling any of them ends the wait.
/// `production` and `timeout` only name the wait in its errors.
pub(crate) fn until_claimed<T>(
    production: &str,
    timeout: Duration,
    bell: &Arc<dyn Doorbell>,
    cancels: &[&WaitCancel],
    mut attempt: impl FnMut() -> Result<T>,
    mut next: impl FnMut(Option<i64>) -> Result<(i64, Option<i64>)>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    for c in cancels {
        c.register(bell);
    }
    let stopped = || cancels.iter().any(|c| c.is_cancelled());
    // A clock reading taken before the latest attempt began.
    let mut seen_us: Option<i64> = None;
    loop {
        // Read the bell before the attempt: a ring after this point is seen.
        let seen = bell.generation();
        if stopped() {
            return Err(cancelled(production));
        }
        match attempt() {
            Err(Error::NoJobAvailable(_)) => {}
            r => return r,
        }
        // The first look after the attempt knows only the reading before
        // it; later looks, their own first reading after it.
        let mut after: Option<i64> = None;
        loop {
            if stopped() {
                return Err(cancelled(production));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::NoJobAvailable(format!(
                    "nothing became claimable in production {production:?} within {timeout:?}"
                )));
            }
            let (now_us, next) = next(after.or(seen_us))?;
            if after.is_none() {
                after = Some(now_us);
            }
            let mut until = deadline.min(now + SLICE);
            let mut timed = false;
            if let Some(at_us) = next {
                let wake = if at_us <= now_us {
                    now + RETRY
                } else {
                    now + Duration::from_micros(at_us.abs_diff(now_us))
                };
                if wake <= until {
                    until = wake;
                    timed = true;
                }
            }
            bell.sleep(seen, until);
            if bell.generation() != seen || (timed && Instant::now() >= until) {
                break;
            }
        }
        seen_us = after;
    }
}
