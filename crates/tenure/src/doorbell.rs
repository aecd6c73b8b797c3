//! Doorbells: how a waiting claimant ([`crate::Authority::claim_next_wait`])
//! sleeps until work may have become claimable, without polling.
//!
//! A doorbell is a counter plus a way to sleep until it changes. Every
//! commit that can make a job claimable (a submission, a release, a
//! retryable failure) rings its store's doorbell after the COMMIT returned
//! (SQLite) or with the COMMIT (PostgreSQL `NOTIFY`, delivered only on
//! commit); a waiter reads the counter, tries to claim, and sleeps until the
//! counter moves, its timed wake (the earliest lease expiry), its timeout or
//! its cancellation. Waking a doorbell ([`Doorbell::wake`]) moves the
//! counter too, so a wake-up between a waiter's cancellation check and its
//! sleep is never lost.
//!
//! - SQLite on Linux: a futex word in the store's `<store>-tenure-queue`
//!   mapping (see `store/sqlite/writer_queue.rs`), shared by every process
//!   that has the store open.
//! - PostgreSQL: a per-authority listener thread on its own connection
//!   (`LISTEN tenure_work`), which moves an in-process counter.
//! - Otherwise ([`PollBell`]): the counter moves every [`POLL`], so waiters
//!   re-check at that bounded rate.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often a store without a cross-process doorbell is re-checked.
pub(crate) const POLL: Duration = Duration::from_millis(50);

pub(crate) trait Doorbell: Send + Sync {
    /// The counter: it changes whenever work may have become claimable or
    /// the bell was woken.
    fn generation(&self) -> u64;
    /// Sleep until the counter differs from `seen` or `until` passes. May
    /// return early (the caller re-checks).
    fn sleep(&self, seen: u64, until: Instant);
    /// Move the counter and wake every sleeper (cancellation).
    fn wake(&self);
}

/// An in-process counter with a condition variable: the PostgreSQL
/// listener's bell, and (with [`PollBell`]) the fallback.
#[derive(Default)]
pub(crate) struct LocalBell {
    count: Mutex<u64>,
    cv: Condvar,
}

impl LocalBell {
    fn lock(&self) -> std::sync::MutexGuard<'_, u64> {
        self.count.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Doorbell for LocalBell {
    fn generation(&self) -> u64 {
        *self.lock()
    }
    fn sleep(&self, seen: u64, until: Instant) {
        let g = self.lock();
        let left = until.saturating_duration_since(Instant::now());
        let _ = self.cv.wait_timeout_while(g, left, |n| *n == seen);
    }
    fn wake(&self) {
        *self.lock() += 1;
        self.cv.notify_all();
    }
}

/// The fallback when a store has no cross-process doorbell (the queue file
/// could not be created, or not Linux): its counter also moves every
/// [`POLL`], so a waiter re-tries at that bounded rate.
pub(crate) struct PollBell {
    local: LocalBell,
    start: Instant,
}

impl PollBell {
    pub(crate) fn new() -> PollBell {
        PollBell {
            local: LocalBell::default(),
            start: Instant::now(),
        }
    }
    fn ticks(&self) -> u64 {
        (self.start.elapsed().as_micros() / POLL.as_micros()) as u64
    }
}

impl Doorbell for PollBell {
    fn generation(&self) -> u64 {
        // Wakes in the high bits, ticks in the low ones: both move it.
        (self.local.generation() << 40).wrapping_add(self.ticks())
    }
    fn sleep(&self, seen: u64, until: Instant) {
        let tick = self.start + Duration::from_micros((self.ticks() + 1) * POLL.as_micros() as u64);
        let wakes = self.local.generation();
        if self.generation() != seen {
            return;
        }
        self.local.sleep(wakes, until.min(tick));
    }
    fn wake(&self) {
        self.local.wake();
    }
}
