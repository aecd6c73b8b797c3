//! Automatic retry of idempotent calls when the connection to a store
//! server breaks (docs/design.md, "Idempotent calls").
//!
//! A call whose connection broke may or may not have committed: the client
//! cannot tell. Only calls whose retry answers with what the first attempt
//! recorded are retried here: renew, release, fail, complete (single and
//! batched), and claims under a [`crate::ClaimRequest`]. Each retry runs on
//! a fresh pooled connection with replay on, so the caller sees exactly one
//! outcome, the one that committed. Claims without a request ID, claim-next
//! without one, edits and coordinator calls are never retried. A SQLite
//! store never reports a lost connection: nothing is retried there.

use crate::error::{Error, Result};
use crate::store::CONNECTION_LOST;
use std::time::{Duration, Instant};

/// At most this many attempts per call.
pub(crate) const MAX_ATTEMPTS: u32 = 8;
/// No retry starts after this long since the call began.
pub(crate) const MAX_RETRY_TIME: Duration = Duration::from_secs(30);

/// Whether `e` is a failure after which an idempotent call is retried: a
/// lost connection, or a request-ID claim that lost a race to the claim
/// the retry will answer with.
pub(crate) fn retryable(e: &Error) -> bool {
    match e {
        Error::Store(m) => m.starts_with(CONNECTION_LOST),
        Error::Busy(m) => m.starts_with(crate::rules::REQUEST_RACE),
        _ => false,
    }
}

/// Run `call(retry)` (`retry` false on the first attempt), again while it
/// fails with a [`retryable`] error, within [`MAX_ATTEMPTS`] and
/// [`MAX_RETRY_TIME`], pausing 5 ms, 10 ms, ... (at most 500 ms) between.
pub(crate) fn idempotent<T>(mut call: impl FnMut(bool) -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let mut attempt = 0u32;
    loop {
        match call(attempt > 0) {
            Err(e)
                if retryable(&e)
                    && attempt + 1 < MAX_ATTEMPTS
                    && start.elapsed() < MAX_RETRY_TIME =>
            {
                let pause =
                    Duration::from_millis(5u64 << attempt.min(6)).min(Duration::from_millis(500));
                std::thread::sleep(pause);
                attempt += 1;
            }
            r => return r,
        }
    }
}
