//! Opt-in measurement of writer-lock waits, for the benchmark harness.
//!
//! Disabled by default (one relaxed atomic load per write transaction).
//! When enabled, each write transaction records how long taking the writer
//! lock took, in microseconds, in a process-wide buffer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

static ENABLED: AtomicBool = AtomicBool::new(false);
static WAITS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Start (or stop) recording writer-lock waits in this process.
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Take the recorded waits (µs), leaving the buffer empty.
pub fn take_lock_waits_us() -> Vec<u32> {
    std::mem::take(&mut *WAITS.lock().unwrap_or_else(|p| p.into_inner()))
}

pub(crate) fn record_lock_wait(d: Duration) {
    if ENABLED.load(Ordering::Relaxed) {
        let us = u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
        WAITS.lock().unwrap_or_else(|p| p.into_inner()).push(us);
    }
}

thread_local! {
    static ROUND_TRIPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// PostgreSQL round trips (a request and its answer: a statement, a
/// prepare, a `BEGIN`/`COMMIT`, a connect) this thread has made so far.
/// Each call runs on its caller's thread, so the difference around a call
/// is that call's round trips (tests and the benchmark report them).
pub fn pg_round_trips() -> u64 {
    ROUND_TRIPS.with(|c| c.get())
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn round_trip() {
    ROUND_TRIPS.with(|c| c.set(c.get() + 1));
}

static RETRIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Automatic retries of idempotent calls this process has made after a
/// store server asked to try again (a lost connection, a lock timeout, no
/// free connection slot; see docs/design.md, "Idempotent calls").
pub fn store_retries() -> u64 {
    RETRIES.load(Ordering::Relaxed)
}

pub(crate) fn note_retry() {
    RETRIES.fetch_add(1, Ordering::Relaxed);
}
