//! Queue statistics (`Authority.stats()`): read-only value classes
//! converted from the core's `tenure::Stats`. Durations are integers of
//! microseconds (`*_us`); no payload, secret or token.

use crate::convert::{opt_utc, utc};
use crate::values::{q, Gates};
use pyo3::prelude::*;
use std::time::Duration;

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

fn opt_us(d: Option<Duration>) -> Option<u64> {
    d.map(us)
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "None".into(), |v| v.to_string())
}

/// Exact nearest-rank percentiles of a set of durations (µs).
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq, Clone)]
pub struct Percentiles {
    /// How many durations (0: the percentiles are None).
    #[pyo3(get)]
    pub count: u64,
    /// Median (µs).
    #[pyo3(get)]
    pub p50_us: Option<u64>,
    /// 95th percentile (µs).
    #[pyo3(get)]
    pub p95_us: Option<u64>,
    /// 99th percentile (µs).
    #[pyo3(get)]
    pub p99_us: Option<u64>,
}

impl From<&tenure::Percentiles> for Percentiles {
    fn from(p: &tenure::Percentiles) -> Percentiles {
        Percentiles {
            count: p.count,
            p50_us: opt_us(p.p50),
            p95_us: opt_us(p.p95),
            p99_us: opt_us(p.p99),
        }
    }
}

#[pymethods]
impl Percentiles {
    fn __repr__(&self) -> String {
        format!(
            "Percentiles(count={}, p50_us={}, p95_us={}, p99_us={})",
            self.count,
            opt(self.p50_us),
            opt(self.p95_us),
            opt(self.p99_us)
        )
    }
}

/// The flow of a production over the window: counts of what the log
/// records in it, and wait and run times.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq, Clone)]
pub struct Flow {
    /// The window (µs).
    #[pyo3(get)]
    pub window_us: u64,
    /// Claims.
    #[pyo3(get)]
    pub claims: u64,
    /// Completions.
    #[pyo3(get)]
    pub completions: u64,
    /// Failures that left the job requested for another attempt.
    #[pyo3(get)]
    pub retryable_failures: u64,
    /// Failures that ended the job.
    #[pyo3(get)]
    pub permanent_failures: u64,
    /// Leases whose expiry fell in the window.
    #[pyo3(get)]
    pub expiries: u64,
    /// Queue wait, from due to claim.
    #[pyo3(get)]
    pub wait: Percentiles,
    /// Run time, from claim to close.
    #[pyo3(get)]
    pub run: Percentiles,
    /// The window held more events than the flow reads (the newest count).
    #[pyo3(get)]
    pub truncated: bool,
    /// The span the figures cover (µs): the window, or from the oldest
    /// event read when truncated.
    #[pyo3(get)]
    pub covered_us: u64,
}

#[pymethods]
impl Flow {
    /// Events per second over the span covered (``covered_us``).
    fn per_second(&self, n: u64) -> f64 {
        if self.covered_us == 0 {
            0.0
        } else {
            n as f64 / (self.covered_us as f64 / 1e6)
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "Flow(window_us={}, claims={}, completions={}, retryable_failures={}, \
             permanent_failures={}, expiries={}, wait={}, run={}, truncated={})",
            self.window_us,
            self.claims,
            self.completions,
            self.retryable_failures,
            self.permanent_failures,
            self.expiries,
            self.wait.__repr__(),
            self.run.__repr__(),
            if self.truncated { "True" } else { "False" }
        )
    }
}

/// One production's statistics: exact counts by observed state.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq, Clone)]
pub struct ProductionStats {
    /// Production ID.
    #[pyo3(get)]
    pub name: String,
    /// Whether the production is cancelled.
    #[pyo3(get)]
    pub cancelled: bool,
    /// Requested jobs whose due time has come.
    #[pyo3(get)]
    pub waiting_due: u64,
    /// Requested jobs not yet due.
    #[pyo3(get)]
    pub waiting_later: u64,
    /// Claimed jobs whose lease is live.
    #[pyo3(get)]
    pub claimed_live: u64,
    /// Claimed jobs whose lease expired, attempts left, not yet reclaimed.
    #[pyo3(get)]
    pub claimed_expired: u64,
    /// Completed jobs.
    #[pyo3(get)]
    pub completed: u64,
    /// Failed jobs (observed state ``failed``).
    #[pyo3(get)]
    pub failed: u64,
    /// Cancelled jobs.
    #[pyo3(get)]
    pub cancelled_jobs: u64,
    /// How long the oldest due waiting job has been due (µs), or None.
    #[pyo3(get)]
    pub oldest_due_age_us: Option<u64>,
    /// The earliest due time of a waiting job not yet due (µs since the
    /// epoch), or None.
    #[pyo3(get)]
    pub next_due_us: Option<i64>,
    /// Live leases expiring within the horizon.
    #[pyo3(get)]
    pub expiring_within: u64,
    /// The attempt count of the most-retried job with a live lease (0: none).
    #[pyo3(get)]
    pub max_live_attempts: u32,
    /// The production's claim gates, read in the same snapshot.
    #[pyo3(get)]
    pub gates: Gates,
    /// The flow over the window.
    #[pyo3(get)]
    pub flow: Flow,
    /// Every job of the production.
    #[pyo3(get)]
    pub total: u64,
}

#[pymethods]
impl ProductionStats {
    /// ``next_due_us`` as an aware UTC ``datetime`` (or None).
    #[getter]
    fn next_due_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_utc(py, self.next_due_us)
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ProductionStats(name={}, cancelled={}, waiting_due={}, waiting_later={}, \
             claimed_live={}, claimed_expired={}, completed={}, failed={}, cancelled_jobs={}, \
             oldest_due_age_us={}, next_due_us={}, expiring_within={}, max_live_attempts={}, \
             gates={}, flow={})",
            q(&self.name),
            if self.cancelled { "True" } else { "False" },
            self.waiting_due,
            self.waiting_later,
            self.claimed_live,
            self.claimed_expired,
            self.completed,
            self.failed,
            self.cancelled_jobs,
            opt(self.oldest_due_age_us),
            self.next_due_us
                .map_or_else(|| "None".into(), |v| v.to_string()),
            self.expiring_within,
            self.max_live_attempts,
            self.gates.__repr__(py),
            self.flow.__repr__()
        )
    }
}

/// Queue statistics of a store, read in one snapshot (``Authority.stats()``).
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct Stats {
    /// The clock reading the figures are classified against (µs since the
    /// epoch): the larger of the clock and the high-water mark.
    #[pyo3(get)]
    pub now_us: i64,
    /// The durable high-water mark (µs since the epoch).
    #[pyo3(get)]
    pub high_water_us: i64,
    /// The horizon asked for (µs).
    #[pyo3(get)]
    pub horizon_us: u64,
    /// The window asked for (µs).
    #[pyo3(get)]
    pub window_us: u64,
    /// One entry per production, by name.
    #[pyo3(get)]
    pub productions: Vec<ProductionStats>,
}

impl From<tenure::Stats> for Stats {
    fn from(s: tenure::Stats) -> Stats {
        Stats {
            now_us: s.now_us,
            high_water_us: s.high_water_us,
            horizon_us: us(s.horizon),
            window_us: us(s.window),
            productions: s
                .productions
                .iter()
                .map(|p| ProductionStats {
                    name: p.name.clone(),
                    cancelled: p.cancelled,
                    waiting_due: p.waiting_due,
                    waiting_later: p.waiting_later,
                    claimed_live: p.claimed_live,
                    claimed_expired: p.claimed_expired,
                    completed: p.completed,
                    failed: p.failed,
                    cancelled_jobs: p.cancelled_jobs,
                    oldest_due_age_us: opt_us(p.oldest_due_age),
                    next_due_us: p.next_due_us,
                    expiring_within: p.expiring_within,
                    max_live_attempts: p.max_live_attempts,
                    gates: p.gates.into(),
                    total: p.total(),
                    flow: Flow {
                        window_us: us(p.flow.window),
                        claims: p.flow.claims,
                        completions: p.flow.completions,
                        retryable_failures: p.flow.retryable_failures,
                        permanent_failures: p.flow.permanent_failures,
                        expiries: p.flow.expiries,
                        wait: (&p.flow.wait).into(),
                        run: (&p.flow.run).into(),
                        truncated: p.flow.truncated,
                        covered_us: us(p.flow.covered),
                    },
                })
                .collect(),
        }
    }
}

#[pymethods]
impl Stats {
    /// ``now_us`` as an aware UTC ``datetime``.
    #[getter]
    fn now_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc(py, self.now_us)
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Stats(now_us={}, high_water_us={}, horizon_us={}, window_us={}, productions=[{}])",
            self.now_us,
            self.high_water_us,
            self.horizon_us,
            self.window_us,
            self.productions
                .iter()
                .map(|p| p.__repr__(py))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
