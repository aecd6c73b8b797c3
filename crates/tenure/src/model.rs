//! Public value types: job specs, states, observations, events, facts.
//!
//! None of these carry a secret; their `Debug` forms show attribution
//! (holder, claim ID) and expiry only.

use crate::error::{Error, Result};
use crate::ttl::{Backoff, Delay};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

/// The default `max_attempts` of a submitted job.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// A job's observed state.
///
/// `Expired` is derived, never stored: the row is still `claimed` but its
/// expiry has passed (classified against `max(now, high-water mark)`) and
/// attempts remain. An expired claim with no attempts left is observed as
/// `Failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    /// Waiting to be claimed.
    Requested,
    /// Held by an unexpired lease.
    Claimed,
    /// Claimed, but the lease expired; claimable again.
    Expired,
    /// Completed; facts published.
    Completed,
    /// Failed permanently or out of attempts.
    Failed,
    /// Cancelled by a coordinator.
    Cancelled,
}

impl JobState {
    /// Every state.
    pub const ALL: [JobState; 6] = [
        JobState::Requested,
        JobState::Claimed,
        JobState::Expired,
        JobState::Completed,
        JobState::Failed,
        JobState::Cancelled,
    ];

    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Requested => "requested",
            JobState::Claimed => "claimed",
            JobState::Expired => "expired",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Completed, failed and cancelled are terminal.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Cancelled
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = Error;
    fn from_str(s: &str) -> Result<JobState> {
        JobState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown job state {s:?} (requested, claimed, expired, completed, failed, cancelled)"
                ))
            })
    }
}

/// What a coordinator submits.
#[derive(Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// The job ID, unique within its production.
    pub job: String,
    /// Opaque payload, at most 1 MiB.
    pub payload: Vec<u8>,
    /// Higher runs first; ties go to the oldest submission.
    pub priority: i32,
    /// Claims allowed in total, 1..=1000 (default 3). Release does not refund one.
    pub max_attempts: u32,
    /// Not claimable until this long after the submission is recorded (by
    /// the authority's clock). Not part of the job's content: resubmitting
    /// the same job with another delay is still
    /// [`Submitted::Existing`] and changes nothing.
    pub not_before: Option<Delay>,
    /// Hard ownership limit per claim: no renewal extends a lease past its
    /// claim time plus this (must be positive). Part of the job's content.
    pub max_hold: Option<Delay>,
    /// Retry back-off after a retryable failure that names no delay;
    /// overrides the production's. Part of the job's content.
    pub backoff: Option<Backoff>,
}

impl JobSpec {
    /// A job with priority 0 and the default attempts.
    pub fn new(job: impl Into<String>, payload: impl Into<Vec<u8>>) -> JobSpec {
        JobSpec {
            job: job.into(),
            payload: payload.into(),
            priority: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            not_before: None,
            max_hold: None,
            backoff: None,
        }
    }
    /// Set the priority.
    pub fn priority(mut self, p: i32) -> JobSpec {
        self.priority = p;
        self
    }
    /// Set `max_attempts`.
    pub fn max_attempts(mut self, n: u32) -> JobSpec {
        self.max_attempts = n;
        self
    }
    /// Not claimable before `delay` has passed after submission (zero: at once).
    pub fn not_before(mut self, delay: Delay) -> JobSpec {
        self.not_before = Some(delay);
        self
    }
    /// Hard per-claim ownership limit (see [`JobSpec::max_hold`](field@JobSpec::max_hold)).
    pub fn max_hold(mut self, limit: Delay) -> JobSpec {
        self.max_hold = Some(limit);
        self
    }
    /// Retry back-off of this job (overrides the production's).
    pub fn backoff(mut self, policy: Backoff) -> JobSpec {
        self.backoff = Some(policy);
        self
    }
}

impl fmt::Debug for JobSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobSpec")
            .field("job", &self.job)
            .field("payload_len", &self.payload.len())
            .field("priority", &self.priority)
            .field("max_attempts", &self.max_attempts)
            .field("not_before", &self.not_before)
            .field("max_hold", &self.max_hold)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// Outcome of an idempotent submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// The job was new.
    Created,
    /// The same job with the same content already existed; nothing changed.
    Existing,
}

/// Outcome of a cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job moved to `cancelled` now.
    Cancelled,
    /// It already was cancelled; nothing changed.
    AlreadyCancelled,
}

/// Local status of a lease handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseStatus {
    /// Minted in an edit that has not committed.
    Pending,
    /// Committed; usable until it expires or is ended.
    Active,
    /// Ended by a successful release/fail/complete, or its edit failed.
    Closed,
}

impl LeaseStatus {
    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseStatus::Pending => "pending",
            LeaseStatus::Active => "active",
            LeaseStatus::Closed => "closed",
        }
    }
}

/// A read-only observation of a job. Carries attribution, never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobView {
    /// Production ID.
    pub production: String,
    /// Job ID.
    pub job: String,
    /// Observed state (expiry classified against `max(now, mark)`).
    pub state: JobState,
    /// Claims made so far.
    pub attempts: u32,
    /// Claims allowed.
    pub max_attempts: u32,
    /// Priority.
    pub priority: i32,
    /// Holder of the latest claim, if any.
    pub holder: Option<String>,
    /// Claim ID of the latest claim, if any.
    pub claim_id: Option<Uuid>,
    /// Expiry of the latest claim (µs since the epoch), if any.
    pub expires_us: Option<i64>,
    /// Submission time (µs since the epoch).
    pub created_us: i64,
    /// Time of the latest change (µs since the epoch).
    pub updated_us: i64,
    /// Payload size in bytes.
    pub payload_len: u64,
    /// The reason given by the latest failure, if any.
    pub last_error: Option<String>,
    /// A requested job's not-before time (µs since the epoch): it is not
    /// claimable while the authority's clock reads earlier. `None` once
    /// claimed, or when it was due at once.
    pub due_us: Option<i64>,
    /// The hard per-claim ownership limit in µs, if the job has one.
    pub max_hold_us: Option<i64>,
    /// The job's own retry back-off, if it has one.
    pub backoff: Option<Backoff>,
    /// The latest progress checkpoint a lease of the job wrote (at most
    /// [`MAX_PROGRESS`](crate::validate::MAX_PROGRESS) bytes), kept across
    /// attempts and requeues. Given by the job view
    /// ([`Authority::job`](crate::Authority::job)); listings leave it
    /// `None`.
    pub progress: Option<Vec<u8>>,
}

/// A production and its job counts by observed state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductionView {
    /// Production ID.
    pub name: String,
    /// Creation time (µs since the epoch).
    pub created_us: i64,
    /// When it was cancelled, if it was.
    pub cancelled_us: Option<i64>,
    /// The production's default retry back-off, if set.
    pub backoff: Option<Backoff>,
}

/// Paging and filtering for job listings (keyset paging by job ID).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only jobs in this observed state.
    pub state: Option<JobState>,
    /// Only jobs whose ID sorts after this one (the last ID of the previous page).
    pub after: Option<String>,
    /// Page size; 0 means the default of 100. At most 10 000.
    pub limit: usize,
}

/// Kinds of events in the transition log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A production was created.
    ProductionCreated,
    /// A production was cancelled.
    ProductionCancelled,
    /// A job was submitted.
    Submitted,
    /// A job was claimed (a lease was minted).
    Claimed,
    /// A lease was renewed.
    Renewed,
    /// A lease was released.
    Released,
    /// A lease holder reported failure.
    Failed,
    /// A lease holder completed the job.
    Completed,
    /// A coordinator cancelled the job.
    Cancelled,
    /// An expired claim with no attempts left was recorded as failed.
    Exhausted,
    /// The schema migration rewrote the job (its old claim expired).
    Migrated,
    /// A production was paused: no claim of it succeeds until it is resumed.
    ProductionPaused,
    /// A paused production was resumed.
    ProductionResumed,
    /// A production's concurrency or rate limit was set or cleared (the
    /// detail says which and to what).
    ProductionLimited,
    /// A coordinator put a failed or cancelled job back to waiting.
    Requeued,
    /// A lease stored a progress checkpoint (its bytes are not in the event).
    Checkpointed,
    /// A scheduler step did not enqueue some of a schedule's slots (beyond
    /// its catch-up bound, or skipped while the previous slot's job was
    /// live); the detail names the schedule, how many and from when.
    SlotsDropped,
}

impl EventKind {
    /// Every kind.
    pub const ALL: [EventKind; 17] = [
        EventKind::ProductionCreated,
        EventKind::ProductionCancelled,
        EventKind::Submitted,
        EventKind::Claimed,
        EventKind::Renewed,
        EventKind::Released,
        EventKind::Failed,
        EventKind::Completed,
        EventKind::Cancelled,
        EventKind::Exhausted,
        EventKind::Migrated,
        EventKind::ProductionPaused,
        EventKind::ProductionResumed,
        EventKind::ProductionLimited,
        EventKind::Requeued,
        EventKind::Checkpointed,
        EventKind::SlotsDropped,
    ];
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ProductionCreated => "production_created",
            EventKind::ProductionCancelled => "production_cancelled",
            EventKind::Submitted => "submitted",
            EventKind::Claimed => "claimed",
            EventKind::Renewed => "renewed",
            EventKind::Released => "released",
            EventKind::Failed => "failed",
            EventKind::Completed => "completed",
            EventKind::Cancelled => "cancelled",
            EventKind::Exhausted => "exhausted",
            EventKind::Migrated => "migrated",
            EventKind::ProductionPaused => "production_paused",
            EventKind::ProductionResumed => "production_resumed",
            EventKind::ProductionLimited => "production_limited",
            EventKind::Requeued => "requeued",
            EventKind::Checkpointed => "checkpointed",
            EventKind::SlotsDropped => "slots_dropped",
        }
    }
    pub(crate) fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the transition log. Never carries a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Strictly increasing sequence number (page with `after`).
    pub seq: u64,
    /// When it happened (µs since the epoch, the authority's clock).
    pub at_us: i64,
    /// Production ID.
    pub production: String,
    /// Job ID (none for production events).
    pub job: Option<String>,
    /// What happened.
    pub kind: EventKind,
    /// The job's stored state after the transition (none for production events).
    pub state: Option<JobState>,
    /// The claim involved, if any.
    pub claim_id: Option<Uuid>,
    /// The holder involved, if any.
    pub holder: Option<String>,
    /// The attempt number involved, if any.
    pub attempt: Option<u32>,
    /// The lease expiry after the transition, if a lease is live.
    pub expires_us: Option<i64>,
    /// Short human detail (failure reason, cancel note).
    pub detail: String,
}

/// A caller fact to publish at completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// Key: an ID outside the reserved `tenure.` namespace.
    pub key: String,
    /// Value: text up to 4096 bytes.
    pub value: String,
}

impl Fact {
    /// A fact.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Fact {
        Fact {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// A published fact, read back. Provenance facts have keys starting with
/// `tenure.` (`tenure.claim_id`, `tenure.holder`, `tenure.attempt`,
/// `tenure.completed_us`, and for the executor `tenure.exec.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedFact {
    /// Production ID.
    pub production: String,
    /// Job ID.
    pub job: String,
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
}

/// The clock as the authority sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockReading {
    /// The clock's reading now (µs since the epoch).
    pub now_us: i64,
    /// The durable high-water mark (µs since the epoch).
    pub mark_us: i64,
    /// True while the clock reads below the mark: guarded operations are refused.
    pub blocked: bool,
}

/// What the reference executor records at completion (provenance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// The execution nonce (not a credential); the store accepts it once.
    pub nonce: Uuid,
    /// The final output file.
    pub output_path: String,
    /// Lower-case hex SHA-256 of the output file.
    pub output_sha256: String,
    /// Output size in bytes.
    pub output_size: u64,
    /// The command's exit status.
    pub exit_status: i32,
}

/// Result of the offline invariant check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Schema version of the store.
    pub schema_version: u32,
    /// Jobs examined.
    pub jobs: u64,
    /// Events replayed.
    pub events: u64,
    /// The history horizon the check started from: events up to this
    /// sequence number were pruned (0: the whole history was checked).
    pub history_horizon: u64,
    /// Every violation found; empty means the store is consistent.
    pub violations: Vec<String>,
}

impl CheckReport {
    /// True when no violation was found.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

/// How many provenance facts a completion publishes ([`provenance`]).
pub(crate) const PROVENANCE_FACTS: usize = 4;

/// The provenance facts the authority publishes with a completion: the
/// claim that completed the job, its holder, attempt and the completion's
/// time. A store that keeps them in the job row
/// (`Txn::derives_provenance` of the store) gives them back from it with this function.
pub(crate) fn provenance(
    claim_id: Option<Uuid>,
    holder: Option<&str>,
    attempt: u32,
    completed_us: i64,
) -> [(&'static str, String); PROVENANCE_FACTS] {
    [
        ("tenure.claim_id", claim_id.unwrap_or_default().to_string()),
        ("tenure.holder", holder.unwrap_or_default().to_owned()),
        ("tenure.attempt", attempt.to_string()),
        ("tenure.completed_us", completed_us.to_string()),
    ]
}
