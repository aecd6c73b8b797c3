//! The authority's private clock.
//!
//! Production code always uses [`SystemClock`]: the system wall clock in whole
//! microseconds since the Unix epoch. No public API accepts a caller-selected
//! time. With the Rust-only `test-clock` feature, tests may inject a
//! `ManualClock`; the C ABI, the wheel and the CLI never enable it.
//!
//! This is a conservative local-clock policy, not a trusted-time guarantee:
//! the store's durable high-water mark stops a clock that moved backwards from
//! reviving or extending anything, and a clock that jumps forward expires
//! leases at once. It cannot detect a clock that is simply wrong.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of time in whole microseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    /// The current time in µs since the Unix epoch.
    fn now_us(&self) -> i64;
}

/// The system wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
            // A clock before 1970 reads as 0: below any mark, so guarded
            // operations are refused rather than trusted.
            Err(_) => 0,
        }
    }
}

#[cfg(feature = "test-clock")]
pub use manual::ManualClock;

#[cfg(feature = "test-clock")]
mod manual {
    use super::Clock;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    /// A test clock (feature `test-clock`): set, advance, or script the next samples.
    #[derive(Clone, Debug)]
    pub struct ManualClock(Arc<Mutex<State>>);

    #[derive(Debug)]
    struct State {
        now: i64,
        script: VecDeque<i64>,
        samples: u64,
    }

    impl ManualClock {
        /// A clock reading `now_us`.
        pub fn new(now_us: i64) -> ManualClock {
            ManualClock(Arc::new(Mutex::new(State {
                now: now_us,
                script: VecDeque::new(),
                samples: 0,
            })))
        }
        /// Set the reading (forwards or backwards).
        pub fn set(&self, now_us: i64) {
            self.0.lock().unwrap().now = now_us;
        }
        /// Move the reading by `delta_us` (may be negative).
        pub fn advance(&self, delta_us: i64) {
            self.0.lock().unwrap().now += delta_us;
        }
        /// The current reading, without counting a sample.
        pub fn get(&self) -> i64 {
            self.0.lock().unwrap().now
        }
        /// The next samples return these values in order (each also becomes
        /// the reading); afterwards the clock holds the last one.
        pub fn script(&self, values: &[i64]) {
            self.0.lock().unwrap().script.extend(values.iter().copied());
        }
        /// How many samples the authority has taken.
        pub fn samples(&self) -> u64 {
            self.0.lock().unwrap().samples
        }
    }

    impl Clock for ManualClock {
        fn now_us(&self) -> i64 {
            let mut s = self.0.lock().unwrap();
            s.samples += 1;
            if let Some(v) = s.script.pop_front() {
                s.now = v;
            }
            s.now
        }
    }
}
