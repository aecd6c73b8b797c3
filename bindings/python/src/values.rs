//! Read-only value classes: observations that carry attribution and expiry,
//! never a secret. Times are integers of microseconds since the Unix epoch
//! (`*_us`), exactly as the core reports them, each with an aware UTC
//! `datetime` beside it (`*_at`, see [`crate::convert::utc`]).

use crate::convert::{delay_repr, delay_timedelta, opt_delay_timedelta, opt_utc, utc, utc_repr};
use crate::errors::to_py;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tenure::Delay;

/// Quote text the way Python's `repr` does for plain strings.
pub fn q(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn opt_q(s: &Option<String>) -> String {
    s.as_deref().map(q).unwrap_or_else(|| "None".into())
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|v| v.to_string())
        .unwrap_or_else(|| "None".into())
}

/// A published fact: a caller key/value or a provenance record (keys under
/// ``tenure.``), read back per job or per production.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct PublishedFact {
    /// Production ID.
    #[pyo3(get)]
    pub production: String,
    /// Job ID.
    #[pyo3(get)]
    pub job: String,
    /// Fact key.
    #[pyo3(get)]
    pub key: String,
    /// Fact value.
    #[pyo3(get)]
    pub value: String,
}

#[pymethods]
impl PublishedFact {
    fn __repr__(&self) -> String {
        format!(
            "PublishedFact(production={}, job={}, key={}, value={})",
            q(&self.production),
            q(&self.job),
            q(&self.key),
            q(&self.value)
        )
    }
}

impl From<tenure::PublishedFact> for PublishedFact {
    fn from(f: tenure::PublishedFact) -> PublishedFact {
        PublishedFact {
            production: f.production,
            job: f.job,
            key: f.key,
            value: f.value,
        }
    }
}

/// A read-only observation of one job: state, attempts, attribution of the
/// latest claim (holder, claim ID) and its expiry. Never a secret.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct JobView {
    /// Production ID.
    #[pyo3(get)]
    pub production: String,
    /// Job ID.
    #[pyo3(get)]
    pub job: String,
    /// Observed state: requested, claimed, expired, completed, failed or cancelled.
    #[pyo3(get)]
    pub state: &'static str,
    /// Claims made so far.
    #[pyo3(get)]
    pub attempts: u32,
    /// Claims allowed.
    #[pyo3(get)]
    pub max_attempts: u32,
    /// Priority (higher is claimed first).
    #[pyo3(get)]
    pub priority: i32,
    /// Holder of the latest claim, if any.
    #[pyo3(get)]
    pub holder: Option<String>,
    /// Claim ID (UUID text) of the latest claim, if any.
    #[pyo3(get)]
    pub claim_id: Option<String>,
    /// Expiry of the latest claim (µs since the epoch), if any.
    #[pyo3(get)]
    pub expires_us: Option<i64>,
    /// Submission time (µs since the epoch).
    #[pyo3(get)]
    pub created_us: i64,
    /// Time of the latest change (µs since the epoch).
    #[pyo3(get)]
    pub updated_us: i64,
    /// Payload size in bytes.
    #[pyo3(get)]
    pub payload_len: u64,
    /// The reason given by the latest failure, if any.
    #[pyo3(get)]
    pub last_error: Option<String>,
    /// A requested job's not-before time (µs since the epoch): not claimable
    /// while the authority's clock reads earlier. None once claimed, or when
    /// it was due at once.
    #[pyo3(get)]
    pub due_us: Option<i64>,
    max_hold_us: Option<i64>,
    backoff: Option<tenure::Backoff>,
    progress: Option<Vec<u8>>,
}

#[pymethods]
impl JobView {
    /// The latest progress checkpoint a lease of the job wrote (``bytes``),
    /// kept across attempts; ``None`` without one, and in listings.
    #[getter]
    fn progress<'py>(&self, py: Python<'py>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        self.progress
            .as_deref()
            .map(|b| pyo3::types::PyBytes::new(py, b))
    }
    /// ``due_us`` as an aware UTC ``datetime`` (None when due at once).
    #[getter]
    fn due_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_utc(py, self.due_us)
    }
    /// The hard per-claim ownership limit (a ``datetime.timedelta``), if any.
    #[getter]
    fn max_hold<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let limit = self.max_hold_us.map(Delay::from_micros).transpose();
        opt_delay_timedelta(py, limit.map_err(to_py)?)
    }
    /// The job's own retry back-off (a ``tenure.Backoff``), if any.
    #[getter]
    fn backoff(&self) -> Option<Backoff> {
        self.backoff.map(|inner| Backoff { inner })
    }
    /// ``expires_us`` as an aware UTC ``datetime`` (None without a claim).
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_utc(py, self.expires_us)
    }
    /// ``created_us`` as an aware UTC ``datetime``.
    #[getter]
    fn created_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc(py, self.created_us)
    }
    /// ``updated_us`` as an aware UTC ``datetime``.
    #[getter]
    fn updated_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc(py, self.updated_us)
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "JobView(production={}, job={}, state={}, attempts={}, max_attempts={}, \
             holder={}, claim_id={}, expires_us={}, expires_at={}, due_us={}, due_at={})",
            q(&self.production),
            q(&self.job),
            q(self.state),
            self.attempts,
            self.max_attempts,
            opt_q(&self.holder),
            opt_q(&self.claim_id),
            opt(&self.expires_us),
            utc_repr(py, self.expires_us),
            opt(&self.due_us),
            utc_repr(py, self.due_us)
        )
    }
}

impl From<tenure::JobView> for JobView {
    fn from(v: tenure::JobView) -> JobView {
        JobView {
            production: v.production,
            job: v.job,
            state: v.state.as_str(),
            attempts: v.attempts,
            max_attempts: v.max_attempts,
            priority: v.priority,
            holder: v.holder,
            claim_id: v.claim_id.map(|u| u.to_string()),
            expires_us: v.expires_us,
            created_us: v.created_us,
            updated_us: v.updated_us,
            payload_len: v.payload_len,
            last_error: v.last_error,
            due_us: v.due_us,
            max_hold_us: v.max_hold_us,
            backoff: v.backoff,
            progress: v.progress,
        }
    }
}

/// One entry of the transition log (page with ``after=event.seq``). Carries
/// attribution, never a secret.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct Event {
    /// Strictly increasing sequence number.
    #[pyo3(get)]
    pub seq: u64,
    /// When it happened (µs since the epoch, the authority's clock).
    #[pyo3(get)]
    pub at_us: i64,
    /// Production ID.
    #[pyo3(get)]
    pub production: String,
    /// Job ID (None for production events).
    #[pyo3(get)]
    pub job: Option<String>,
    /// What happened: production_created, production_cancelled, submitted,
    /// claimed, renewed, released, failed, completed, cancelled, exhausted, migrated.
    #[pyo3(get)]
    pub kind: &'static str,
    /// The job's stored state after the transition (None for production events).
    #[pyo3(get)]
    pub state: Option<&'static str>,
    /// The claim involved (UUID text), if any.
    #[pyo3(get)]
    pub claim_id: Option<String>,
    /// The holder involved, if any.
    #[pyo3(get)]
    pub holder: Option<String>,
    /// The attempt number involved, if any.
    #[pyo3(get)]
    pub attempt: Option<u32>,
    /// The lease expiry after the transition, if a lease is live.
    #[pyo3(get)]
    pub expires_us: Option<i64>,
    /// Short human detail (failure reason, cancel note).
    #[pyo3(get)]
    pub detail: String,
}

#[pymethods]
impl Event {
    /// ``at_us`` as an aware UTC ``datetime``.
    #[getter]
    fn at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc(py, self.at_us)
    }
    /// ``expires_us`` as an aware UTC ``datetime`` (None without a live lease).
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_utc(py, self.expires_us)
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Event(seq={}, at={}, kind={}, production={}, job={}, holder={}, claim_id={}, \
             attempt={}, expires_us={})",
            self.seq,
            utc_repr(py, Some(self.at_us)),
            q(self.kind),
            q(&self.production),
            opt_q(&self.job),
            opt_q(&self.holder),
            opt_q(&self.claim_id),
            opt(&self.attempt),
            opt(&self.expires_us)
        )
    }
}

impl From<tenure::Event> for Event {
    fn from(e: tenure::Event) -> Event {
        Event {
            seq: e.seq,
            at_us: e.at_us,
            production: e.production,
            job: e.job,
            kind: e.kind.as_str(),
            state: e.state.map(|s| s.as_str()),
            claim_id: e.claim_id.map(|u| u.to_string()),
            holder: e.holder,
            attempt: e.attempt,
            expires_us: e.expires_us,
            detail: e.detail,
        }
    }
}

/// A production: name, creation time and, if cancelled, when.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct ProductionView {
    /// Production ID.
    #[pyo3(get)]
    pub name: String,
    /// Creation time (µs since the epoch).
    #[pyo3(get)]
    pub created_us: i64,
    /// When it was cancelled (µs since the epoch), if it was.
    #[pyo3(get)]
    pub cancelled_us: Option<i64>,
    backoff: Option<tenure::Backoff>,
}

#[pymethods]
impl ProductionView {
    /// ``created_us`` as an aware UTC ``datetime``.
    #[getter]
    fn created_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc(py, self.created_us)
    }
    /// ``cancelled_us`` as an aware UTC ``datetime`` (None if not cancelled).
    #[getter]
    fn cancelled_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_utc(py, self.cancelled_us)
    }
    /// The production's default retry back-off (a ``tenure.Backoff``), if set.
    #[getter]
    fn backoff(&self) -> Option<Backoff> {
        self.backoff.map(|inner| Backoff { inner })
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ProductionView(name={}, created_us={}, created_at={}, cancelled_us={}, cancelled_at={}, \
             backoff={})",
            q(&self.name),
            self.created_us,
            utc_repr(py, Some(self.created_us)),
            opt(&self.cancelled_us),
            utc_repr(py, self.cancelled_us),
            Backoff::opt_repr(py, self.backoff)
        )
    }
}

impl From<tenure::ProductionView> for ProductionView {
    fn from(p: tenure::ProductionView) -> ProductionView {
        ProductionView {
            name: p.name,
            created_us: p.created_us,
            cancelled_us: p.cancelled_us,
            backoff: p.backoff,
        }
    }
}

/// A production's claim gates as set (``Authority.production_gates``):
/// whether it is paused (since when), its concurrency limit and its rate
/// limit (``rate_claims`` claims per ``rate_interval``, at most
/// ``rate_burst`` at once), each None when not set.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq, Clone)]
pub struct Gates {
    /// When the production was paused (µs since the epoch), if it is.
    #[pyo3(get)]
    pub paused_us: Option<i64>,
    /// The concurrency limit, if set.
    #[pyo3(get)]
    pub concurrency_limit: Option<u32>,
    /// The rate limit's claims per interval, if a rate limit is set.
    #[pyo3(get)]
    pub rate_claims: Option<u32>,
    /// The rate limit's interval (µs), if set.
    #[pyo3(get)]
    pub rate_interval_us: Option<u64>,
    /// The rate limit's burst, if set.
    #[pyo3(get)]
    pub rate_burst: Option<u32>,
}

#[pymethods]
impl Gates {
    /// Whether the production is paused.
    #[getter]
    fn paused(&self) -> bool {
        self.paused_us.is_some()
    }
    /// ``paused_us`` as an aware UTC ``datetime`` (None if not paused).
    #[getter]
    fn paused_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_utc(py, self.paused_us)
    }
    /// ``rate_interval_us`` as a ``datetime.timedelta`` (None if no rate limit).
    #[getter]
    fn rate_interval<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.rate_interval_us
            .map(|us| crate::convert::timedelta(py, std::time::Duration::from_micros(us)))
            .transpose()
    }
    pub(crate) fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Gates(paused_us={}, paused_at={}, concurrency_limit={}, rate_claims={}, \
             rate_interval_us={}, rate_burst={})",
            opt(&self.paused_us),
            utc_repr(py, self.paused_us),
            opt(&self.concurrency_limit),
            opt(&self.rate_claims),
            opt(&self.rate_interval_us),
            opt(&self.rate_burst)
        )
    }
}

impl From<tenure::Gates> for Gates {
    fn from(g: tenure::Gates) -> Gates {
        Gates {
            paused_us: g.paused_us,
            concurrency_limit: g.concurrency,
            rate_claims: g.rate.map(|r| r.claims),
            rate_interval_us: g
                .rate
                .map(|r| u64::try_from(r.interval.as_micros()).unwrap_or(u64::MAX)),
            rate_burst: g.rate.map(|r| r.burst),
        }
    }
}

/// The authority's clock: reading, durable high-water mark, and whether
/// guarded operations are refused (the clock reads below the mark).
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct ClockReading {
    /// The clock's reading (µs since the epoch).
    #[pyo3(get)]
    pub now_us: i64,
    /// The durable high-water mark (µs since the epoch).
    #[pyo3(get)]
    pub mark_us: i64,
    /// True while the clock reads below the mark.
    #[pyo3(get)]
    pub blocked: bool,
}

#[pymethods]
impl ClockReading {
    /// ``now_us`` as an aware UTC ``datetime``.
    #[getter]
    fn now_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc(py, self.now_us)
    }
    /// ``mark_us`` as an aware UTC ``datetime``.
    #[getter]
    fn mark_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc(py, self.mark_us)
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ClockReading(now_us={}, now_at={}, mark_us={}, mark_at={}, blocked={})",
            self.now_us,
            utc_repr(py, Some(self.now_us)),
            self.mark_us,
            utc_repr(py, Some(self.mark_us)),
            if self.blocked { "True" } else { "False" }
        )
    }
}

/// Result of the offline invariant check (`Authority.check()`).
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct CheckReport {
    /// Schema version of the store.
    #[pyo3(get)]
    pub schema_version: u32,
    /// Jobs examined.
    #[pyo3(get)]
    pub jobs: u64,
    /// Events replayed.
    #[pyo3(get)]
    pub events: u64,
    /// Every violation found; empty means the store is consistent.
    #[pyo3(get)]
    pub violations: Vec<String>,
    /// The history horizon the log was replayed from: every event up to
    /// this sequence number was pruned (0: none).
    #[pyo3(get)]
    pub history_horizon: u64,
}

#[pymethods]
impl CheckReport {
    /// True when no violation was found.
    #[getter]
    fn ok(&self) -> bool {
        self.violations.is_empty()
    }
    fn __repr__(&self) -> String {
        format!(
            "CheckReport(schema_version={}, jobs={}, events={}, history_horizon={}, violations={})",
            self.schema_version,
            self.jobs,
            self.events,
            self.history_horizon,
            self.violations.len()
        )
    }
}

/// What a coordinator submits with ``submit_many``: job ID, payload bytes,
/// priority (higher first), max_attempts (1..=1000, default 3) and the
/// schedule: ``not_before`` (due that long after the submission is
/// recorded), ``max_hold`` (hard per-claim ownership limit) and ``backoff``
/// (a ``tenure.Backoff``), each ``None`` unless given. The core checks every
/// value when the job is submitted.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct JobSpec {
    inner: tenure::JobSpec,
}

/// A core job spec from the submission arguments every Python form takes
/// (``submit`` and ``JobSpec``).
pub fn job_spec(
    job: &str,
    payload: &[u8],
    priority: i32,
    max_attempts: u32,
    not_before: Option<Delay>,
    max_hold: Option<Delay>,
    backoff: Option<tenure::Backoff>,
) -> tenure::JobSpec {
    let mut spec = tenure::JobSpec::new(job, payload.to_vec())
        .priority(priority)
        .max_attempts(max_attempts);
    spec.not_before = not_before;
    spec.max_hold = max_hold;
    spec.backoff = backoff;
    spec
}

#[pymethods]
impl JobSpec {
    #[new]
    #[pyo3(signature = (job, payload = b"".as_slice(), *, priority = 0, max_attempts = tenure::DEFAULT_MAX_ATTEMPTS, not_before = None, max_hold = None, backoff = None))]
    fn new(
        job: &str,
        payload: &[u8],
        #[pyo3(from_py_with = crate::convert::priority)] priority: i32,
        #[pyo3(from_py_with = crate::convert::max_attempts)] max_attempts: u32,
        #[pyo3(from_py_with = crate::convert::not_before)] not_before: Option<Delay>,
        #[pyo3(from_py_with = crate::convert::max_hold)] max_hold: Option<Delay>,
        #[pyo3(from_py_with = crate::convert::backoff)] backoff: Option<tenure::Backoff>,
    ) -> JobSpec {
        JobSpec {
            inner: job_spec(
                job,
                payload,
                priority,
                max_attempts,
                not_before,
                max_hold,
                backoff,
            ),
        }
    }
    /// Job ID.
    #[getter]
    fn job(&self) -> &str {
        &self.inner.job
    }
    /// Payload (at most 1 MiB).
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.payload)
    }
    /// Priority.
    #[getter]
    fn priority(&self) -> i32 {
        self.inner.priority
    }
    /// Claims allowed in total.
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.inner.max_attempts
    }
    /// Not claimable until this long after the submission (a
    /// ``datetime.timedelta``), or None.
    #[getter]
    fn not_before<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_delay_timedelta(py, self.inner.not_before)
    }
    /// The hard per-claim ownership limit (a ``datetime.timedelta``), or None.
    #[getter]
    fn max_hold<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        opt_delay_timedelta(py, self.inner.max_hold)
    }
    /// The job's retry back-off, or None.
    #[getter]
    fn backoff(&self) -> Option<Backoff> {
        self.inner.backoff.map(|inner| Backoff { inner })
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let d = |d: Option<Delay>| delay_repr(py, d);
        format!(
            "JobSpec(job={}, payload_len={}, priority={}, max_attempts={}, not_before={}, \
             max_hold={}, backoff={})",
            q(&self.inner.job),
            self.inner.payload.len(),
            self.inner.priority,
            self.inner.max_attempts,
            d(self.inner.not_before),
            d(self.inner.max_hold),
            Backoff::opt_repr(py, self.inner.backoff)
        )
    }
}

impl JobSpec {
    pub fn to_core(&self) -> tenure::JobSpec {
        self.inner.clone()
    }
}

/// A retry back-off policy: after the retryable failure of attempt ``n``
/// that names no delay, the job is due again after
/// ``min(cap, base * 2 ** (n - 1))``. ``base`` and ``cap`` are
/// ``datetime.timedelta`` delays (whole microseconds, up to 366 days);
/// ``base`` must be positive and ``cap`` at least ``base``, else
/// ``InvalidDuration``. Immutable, comparable and hashable.
#[pyclass(frozen, eq, hash, module = "tenure")]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct Backoff {
    pub inner: tenure::Backoff,
}

impl Backoff {
    /// The `repr()` of an optional back-off (`Backoff(...)` or `None`).
    fn opt_repr(py: Python<'_>, b: Option<tenure::Backoff>) -> String {
        b.map(|inner| Backoff { inner }.__repr__(py))
            .unwrap_or_else(|| "None".into())
    }
}

#[pymethods]
impl Backoff {
    #[new]
    fn new(base: &Bound<'_, PyAny>, cap: &Bound<'_, PyAny>) -> PyResult<Backoff> {
        let base = crate::convert::delay(base, "base")?;
        let cap = crate::convert::delay(cap, "cap")?;
        tenure::Backoff::exponential(base, cap)
            .map(|inner| Backoff { inner })
            .map_err(to_py)
    }
    /// The first step (a ``datetime.timedelta``).
    #[getter]
    fn base<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        delay_timedelta(py, self.inner.base())
    }
    /// The largest step (a ``datetime.timedelta``).
    #[getter]
    fn cap<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        delay_timedelta(py, self.inner.cap())
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Backoff(base={}, cap={})",
            delay_repr(py, Some(self.inner.base())),
            delay_repr(py, Some(self.inner.cap()))
        )
    }
}

/// A retention policy: how old, on the authority's clock, history may get
/// before pruning removes it. Each age is a ``datetime.timedelta`` of whole
/// seconds, 1 s ..= 3650 days (else ``InvalidDuration``), or ``None`` to
/// keep that kind forever. ``event_age``: events, oldest first;
/// ``terminal_job_age``: completed, failed and cancelled jobs with their
/// facts (a tombstone keeps their ID and content digest);
/// ``tombstone_age``: tombstones (the ID is then new again).
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct Retention {
    pub inner: tenure::Retention,
}

#[pymethods]
impl Retention {
    #[new]
    #[pyo3(signature = (event_age = None, terminal_job_age = None, tombstone_age = None))]
    fn new(
        event_age: Option<&Bound<'_, PyAny>>,
        terminal_job_age: Option<&Bound<'_, PyAny>>,
        tombstone_age: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Retention> {
        Ok(Retention {
            inner: tenure::Retention {
                event_age: crate::convert::age(event_age, "event_age")?,
                terminal_job_age: crate::convert::age(terminal_job_age, "terminal_job_age")?,
                tombstone_age: crate::convert::age(tombstone_age, "tombstone_age")?,
            },
        })
    }

    /// The documented policy for stores that want one: events and terminal
    /// jobs 30 days, tombstones 365 days (never applied unless asked for).
    #[staticmethod]
    fn recommended() -> Retention {
        Retention {
            inner: tenure::Retention::recommended(),
        }
    }

    /// Events older than this are pruned (``None``: kept forever).
    #[getter]
    fn event_age<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        crate::convert::age_timedelta(py, self.inner.event_age)
    }

    /// Terminal jobs older than this are pruned (``None``: kept forever).
    #[getter]
    fn terminal_job_age<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        crate::convert::age_timedelta(py, self.inner.terminal_job_age)
    }

    /// Tombstones older than this are pruned (``None``: kept forever).
    #[getter]
    fn tombstone_age<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        crate::convert::age_timedelta(py, self.inner.tombstone_age)
    }

    fn __repr__(&self) -> String {
        let a = |a: Option<tenure::Age>| a.map_or("None".into(), |a| q(&a.to_string()));
        format!(
            "Retention(event_age={}, terminal_job_age={}, tombstone_age={})",
            a(self.inner.event_age),
            a(self.inner.terminal_job_age),
            a(self.inner.tombstone_age)
        )
    }
}

/// What one prune step removed (``Authority.prune``).
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct PruneReport {
    /// Terminal jobs removed (each leaves a tombstone).
    #[pyo3(get)]
    pub jobs: u64,
    /// Tombstones removed.
    #[pyo3(get)]
    pub tombstones: u64,
    /// Events removed.
    #[pyo3(get)]
    pub events: u64,
    /// The history horizon after the step (0: nothing ever pruned).
    #[pyo3(get)]
    pub horizon: u64,
    /// True when a kind hit the per-step bound: call again for more.
    #[pyo3(get)]
    pub more: bool,
}

impl From<tenure::PruneReport> for PruneReport {
    fn from(r: tenure::PruneReport) -> PruneReport {
        PruneReport {
            jobs: r.jobs,
            tombstones: r.tombstones,
            events: r.events,
            horizon: r.horizon,
            more: r.more,
        }
    }
}

#[pymethods]
impl PruneReport {
    fn __repr__(&self) -> String {
        format!(
            "PruneReport(jobs={}, tombstones={}, events={}, horizon={}, more={})",
            self.jobs,
            self.tombstones,
            self.events,
            self.horizon,
            if self.more { "True" } else { "False" }
        )
    }
}

/// What ``Authority.delete_production`` removed.
#[pyclass(frozen, eq, module = "tenure")]
#[derive(PartialEq, Eq)]
pub struct DeletedCounts {
    /// Jobs removed.
    #[pyo3(get)]
    pub jobs: u64,
    /// Facts removed.
    #[pyo3(get)]
    pub facts: u64,
    /// Events removed.
    #[pyo3(get)]
    pub events: u64,
    /// Tombstones removed.
    #[pyo3(get)]
    pub tombstones: u64,
}

impl From<tenure::DeletedCounts> for DeletedCounts {
    fn from(c: tenure::DeletedCounts) -> DeletedCounts {
        DeletedCounts {
            jobs: c.jobs,
            facts: c.facts,
            events: c.events,
            tombstones: c.tombstones,
        }
    }
}

#[pymethods]
impl DeletedCounts {
    fn __repr__(&self) -> String {
        format!(
            "DeletedCounts(jobs={}, facts={}, events={}, tombstones={})",
            self.jobs, self.facts, self.events, self.tombstones
        )
    }
}
