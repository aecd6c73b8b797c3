//! A job stream at a fixed arrival rate with a bounded backlog: the
//! retention soaks' submitter, shared by `tenure-bench soak` and the
//! PostgreSQL soak (`crates/tenure/tests/pg_bench.rs` includes this file).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Jobs submitted, jobs completed (the worker stores it), and arrivals held
/// back by the bound.
#[derive(Clone, Default)]
struct Counts {
    submitted: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
    held: Arc<AtomicU64>,
}

/// Starts the submitter of `total` jobs arriving at `rate` jobs/s: every
/// `tick` it submits (`submit(first, n)`) the jobs the rate has made due
/// since its last chunk, while at most `max_backlog` jobs are submitted and
/// not yet done; arrivals beyond that bound are dropped from the schedule
/// (not made up later) and counted in `held`. After each chunk it stores
/// `submitted` and unparks the calling thread (the worker).
fn spawn(
    total: u64,
    rate: f64,
    max_backlog: u64,
    tick: Duration,
    counts: Counts,
    mut submit: impl FnMut(u64, u64) + Send + 'static,
) -> JoinHandle<()> {
    let worker = std::thread::current();
    std::thread::spawn(move || {
        let start = Instant::now();
        let (mut credit, mut last, mut next) = (0.0_f64, start, start);
        let mut sent = 0;
        while sent < total {
            next += tick;
            let now = Instant::now();
            match next.checked_duration_since(now) {
                Some(d) => std::thread::sleep(d),
                None => next = now,
            }
            let now = Instant::now();
            credit += rate * (now - last).as_secs_f64();
            last = now;
            let due = (credit as u64).min(total - sent);
            let room = max_backlog.saturating_sub(sent - counts.done.load(Ordering::Acquire));
            let n = due.min(room);
            counts.held.fetch_add(due - n, Ordering::Relaxed);
            credit -= due as f64;
            if n > 0 {
                submit(sent, n);
                sent += n;
                counts.submitted.store(sent, Ordering::Release);
                worker.unpark();
            }
        }
    })
}

/// The job stream a soak's worker drains: with `rate > 0`, paced by a
/// submitter thread ([`spawn`]); with rate 0, submitted by the worker itself
/// in chunks of 1 000 as it runs out.
pub struct Stream<F> {
    counts: Counts,
    submitter: Option<JoinHandle<()>>,
    submit: F,
    total: u64,
}

impl<F: Fn(u64, u64) + Clone + Send + 'static> Stream<F> {
    /// Start the stream of `total` jobs (see [`spawn`] for the others).
    pub fn start(total: u64, rate: f64, max_backlog: u64, tick: Duration, submit: F) -> Self {
        let counts = Counts::default();
        let submitter = (rate > 0.0).then(|| {
            spawn(
                total,
                rate,
                max_backlog,
                tick,
                counts.clone(),
                submit.clone(),
            )
        });
        Stream {
            counts,
            submitter,
            submit,
            total,
        }
    }

    /// Whether the job after the `done` completed ones has been submitted.
    /// If not, waits (up to 10 ms) for the submitter or submits the next
    /// chunk itself, and returns `false`: ask again.
    pub fn ready(&self, done: u64) -> bool {
        let queued = self.counts.submitted.load(Ordering::Acquire);
        if queued > done {
            return true;
        }
        if self.submitter.is_some() {
            std::thread::park_timeout(Duration::from_millis(10));
        } else {
            let k = (self.total - done).min(1_000);
            (self.submit)(queued, k);
            self.counts.submitted.store(queued + k, Ordering::Release);
        }
        false
    }

    /// The worker has completed `done` jobs (the bound on the backlog).
    pub fn done(&self, done: u64) {
        self.counts.done.store(done, Ordering::Release);
    }

    /// Jobs submitted and arrivals held back so far.
    pub fn sent_and_held(&self) -> (u64, u64) {
        (
            self.counts.submitted.load(Ordering::Acquire),
            self.counts.held.load(Ordering::Relaxed),
        )
    }

    /// Wait for the submitter to end; the arrivals held back in all.
    pub fn finish(self) -> u64 {
        if let Some(t) = self.submitter {
            t.join().unwrap();
        }
        self.counts.held.load(Ordering::Relaxed)
    }
}
