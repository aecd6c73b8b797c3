//! The storage interface: primitive reads and writes, no rules.
//!
//! Every rule of docs/design.md lives in [`crate::rules`] and talks to storage only
//! through [`Backend`] and [`Txn`]. A backend provides transactions: a write
//! transaction holds the store's writer lock from `begin_write` until
//! `commit`/`rollback`; a read transaction sees one consistent snapshot.
//! SQLite ([`sqlite`]) and, with the `postgres` feature, PostgreSQL
//! ([`postgres`]) implement the same two traits.

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod sqlite;

use crate::error::Result;
use crate::model::{Event, EventKind, JobState, PublishedFact};
use crate::ttl::{Backoff, Delay};
use uuid::Uuid;

/// The events the flow of the statistics reads (see [`Txn::flow_events`]),
/// as an SQL condition on an event row: claims, closes (complete, fail,
/// release), exhaustions, and any event recording a lapsed lease
/// (`lapsed_us`). Every other event adds nothing to the flow
/// ([`crate::figures::tally`]); `events_by_time` holds only these.
macro_rules! flow_events {
    () => {
        "(kind = 'claimed' OR kind = 'completed' OR kind = 'failed' OR kind = 'released' \
         OR kind = 'exhausted' OR lapsed_us IS NOT NULL)"
    };
}
pub(crate) use flow_events;

/// Schema version this library writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: u32 = 15;

/// A job's stored state (`expired` is never stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stored {
    Requested,
    Claimed,
    Completed,
    Failed,
    Cancelled,
}

impl Stored {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Stored::Requested => "requested",
            Stored::Claimed => "claimed",
            Stored::Completed => "completed",
            Stored::Failed => "failed",
            Stored::Cancelled => "cancelled",
        }
    }
    /// Requested or claimed: the job has not ended.
    pub(crate) fn is_open(self) -> bool {
        matches!(self, Stored::Requested | Stored::Claimed)
    }
    pub(crate) fn parse(s: &str) -> Option<Stored> {
        Some(match s {
            "requested" => Stored::Requested,
            "claimed" => Stored::Claimed,
            "completed" => Stored::Completed,
            "failed" => Stored::Failed,
            "cancelled" => Stored::Cancelled,
            _ => return None,
        })
    }
    pub(crate) fn as_job_state(self) -> JobState {
        match self {
            Stored::Requested => JobState::Requested,
            Stored::Claimed => JobState::Claimed,
            Stored::Completed => JobState::Completed,
            Stored::Failed => JobState::Failed,
            Stored::Cancelled => JobState::Cancelled,
        }
    }
}

/// A job row without its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobRow {
    pub seq: i64,
    pub production: String,
    pub job: String,
    pub payload_digest: Vec<u8>,
    pub payload_len: u64,
    pub priority: i32,
    pub max_attempts: u32,
    pub state: Stored,
    pub attempts: u32,
    /// The latest claim; kept after the lease ends so that a late use of it
    /// can be told "closed" rather than "stale".
    pub claim_id: Option<Uuid>,
    pub secret_digest: Option<Vec<u8>>,
    pub holder: Option<String>,
    pub claimed_us: Option<i64>,
    pub expires_us: Option<i64>,
    pub created_us: i64,
    pub updated_us: i64,
    pub last_error: Option<String>,
    /// A requested job's not-before time (see [`crate::JobView::due_us`]).
    pub due_us: Option<i64>,
    /// Whether the row is kept out of claim-next's scan (schema 3): set by
    /// the rules when they write a requested row whose `due_us` is later
    /// than their clock sample; cleared by [`Txn::unpark_due`] once the
    /// clock reaches `due_us`, or by the next write of the row. Not
    /// observable: views and rules compare `due_us` with the clock.
    pub parked: bool,
    pub max_hold_us: Option<i64>,
    pub backoff: Option<Backoff>,
    /// A completed job whose provenance facts are not stored as fact rows
    /// but read from this row (schema 7, see [`Txn::derives_provenance`]):
    /// the position among the job's facts where the provenance
    /// ([`crate::model::provenance`]) stands, i.e. how many caller facts
    /// precede it. `None`: the facts are all stored rows (or there are none).
    pub provenance_at: Option<u32>,
}

/// A completed job's provenance kept in its row (`jobs.provenance_at`,
/// [`Txn::derives_provenance`]), as a backend reads it back.
pub(crate) struct DerivedProvenance {
    pub job: String,
    /// Its position among the job's facts (`provenance_at`).
    pub at: u32,
    pub claim_id: Option<Uuid>,
    pub holder: Option<String>,
    pub attempts: u32,
    pub completed_us: i64,
}

/// Merge stored facts (`(ord, fact)`, ordered by job, then ord) with the
/// provenance of jobs that keep it in their row (ordered by job): each
/// job's provenance goes before its stored fact of ord `at` (after all of
/// them if none is), which is where a store of fact rows keeps it.
pub(crate) fn with_provenance(
    production: &str,
    stored: Vec<(i64, PublishedFact)>,
    derived: Vec<DerivedProvenance>,
) -> Vec<PublishedFact> {
    let mut out = Vec::with_capacity(stored.len() + crate::model::PROVENANCE_FACTS * derived.len());
    let mut derived = derived.into_iter().peekable();
    let put = |out: &mut Vec<PublishedFact>, d: DerivedProvenance| {
        let facts =
            crate::model::provenance(d.claim_id, d.holder.as_deref(), d.attempts, d.completed_us);
        out.extend(facts.into_iter().map(|(key, value)| PublishedFact {
            production: production.to_owned(),
            job: d.job.clone(),
            key: key.to_owned(),
            value,
        }));
    };
    for (ord, f) in stored {
        while let Some(d) =
            derived.next_if(|d| d.job < f.job || (d.job == f.job && i64::from(d.at) <= ord))
        {
            put(&mut out, d);
        }
        out.push(f);
    }
    for d in derived {
        put(&mut out, d);
    }
    out
}

/// How many provenance facts the rows keep in themselves (see
/// [`Txn::derives_provenance`]): what deleting them deletes beside their
/// stored fact rows.
pub(crate) fn provenance_facts_in(rows: &[JobRow]) -> u64 {
    let kept = rows.iter().filter(|r| r.provenance_at.is_some()).count();
    (kept * crate::model::PROVENANCE_FACTS) as u64
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProductionRow {
    pub name: String,
    pub created_us: i64,
    pub cancelled_us: Option<i64>,
    pub backoff: Option<Backoff>,
}

/// A production's claim gates (table `production_gates`, one row per
/// production that ever had one set; no row: no gate): see
/// [`crate::gates`]. `rate_tat_us` is the rate limit's state, the
/// theoretical arrival time of the generic cell rate algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct GateRow {
    pub paused_us: Option<i64>,
    pub concurrency: Option<u32>,
    /// `(claims, interval_us, burst)`.
    pub rate: Option<(u32, i64, u32)>,
    pub rate_tat_us: i64,
}

impl GateRow {
    /// Whether any gate is set (a claim must consult it).
    pub(crate) fn any(&self) -> bool {
        self.paused_us.is_some() || self.concurrency.is_some() || self.rate.is_some()
    }
}

/// Decode stored rate columns; anything but three values or three NULLs
/// is a corrupt row.
pub(crate) fn rate_from_cols(
    n: Option<i64>,
    interval: Option<i64>,
    burst: Option<i64>,
) -> Result<Option<(u32, i64, u32)>> {
    let bad = || crate::error::Error::Store("corrupt rate-limit columns".into());
    match (n, interval, burst) {
        (None, None, None) => Ok(None),
        (Some(n), Some(i), Some(b)) => Ok(Some((
            u32::try_from(n).map_err(|_| bad())?,
            i,
            u32::try_from(b).map_err(|_| bad())?,
        ))),
        _ => Err(bad()),
    }
}

/// A back-off as stored: `(base_us, cap_us)` columns, both NULL for none.
pub(crate) fn backoff_cols(b: Option<Backoff>) -> (Option<i64>, Option<i64>) {
    match b {
        Some(b) => (Some(b.base().as_micros()), Some(b.cap().as_micros())),
        None => (None, None),
    }
}

/// Decode stored back-off columns; anything but a valid pair or two NULLs
/// is a corrupt row.
pub(crate) fn backoff_from_cols(base: Option<i64>, cap: Option<i64>) -> Result<Option<Backoff>> {
    match (base, cap) {
        (None, None) => Ok(None),
        (Some(b), Some(c)) => Delay::from_micros(b)
            .and_then(|b| Delay::from_micros(c).and_then(|c| Backoff::exponential(b, c)))
            .map(Some)
            .map_err(|e| crate::error::Error::Store(format!("corrupt back-off columns: {e}"))),
        _ => Err(crate::error::Error::Store(
            "corrupt back-off columns: one of base and cap is NULL".into(),
        )),
    }
}

/// What is kept of a pruned terminal job: enough to answer a late
/// resubmission of its ID as before (`existing` or `conflict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tombstone {
    pub production: String,
    pub job: String,
    pub payload_digest: Vec<u8>,
    pub priority: i32,
    pub max_attempts: u32,
    pub max_hold_us: Option<i64>,
    pub backoff: Option<Backoff>,
    pub state: Stored,
    pub pruned_us: i64,
}

/// A schedule (see [`crate::schedule`]): its definition and its slot
/// record (`settled_us`, `last_slot_us`), which live as long as the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScheduleRow {
    pub production: String,
    pub name: String,
    /// `every <seconds>` or `cron <expression>`.
    pub cadence: String,
    pub payload: Vec<u8>,
    pub priority: i32,
    pub max_attempts: u32,
    pub max_hold_us: Option<i64>,
    pub backoff: Option<Backoff>,
    pub catch_up: u32,
    /// `enqueue` or `skip`.
    pub overlap: String,
    pub paused: bool,
    /// Every slot at or before this time was settled.
    pub settled_us: i64,
    /// The newest slot enqueued.
    pub last_slot_us: Option<i64>,
    pub created_us: i64,
    pub updated_us: i64,
    /// The IANA time zone of a cron cadence (schema 12); `None` is UTC.
    pub tz: Option<String>,
}

/// A claim made under a caller's request ID (schema 5): what a retry of the
/// same request is compared with and which claim it answers with
/// ([`crate::rules::claim_idempotent`]). Kept as long as its job row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestRow {
    pub production: String,
    pub request_id: String,
    pub job: String,
    pub claim_id: Uuid,
    /// The digest of the client-generated secret the claim was made with.
    pub secret_digest: Vec<u8>,
    /// SHA-256 of the request's arguments (kind, named job, holder, TTL).
    pub args_digest: Vec<u8>,
    pub created_us: i64,
}

/// The message prefix of [`crate::Error::Store`] when the connection to a
/// store server broke (sent, reset, or refused while connecting): the one
/// failure after which an idempotent call is retried automatically
/// ([`crate::retry`]).
pub(crate) const CONNECTION_LOST: &str = "lost the connection to the store server";

/// The message prefix of [`crate::Error::Busy`] when a store server refused
/// a transaction for a reason that passes (a lock timeout, a serialization
/// failure, a deadlock, no free connection slot): nothing changed, and an
/// idempotent call is retried automatically ([`crate::retry`]).
pub(crate) const TRY_AGAIN_BUSY: &str = "the store server asked to try again";

/// What [`Txn::waiting_figures`] read of a production's requested jobs,
/// each job's due moment being `due_us`, or `updated_us` (when it last
/// became requested) where it has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WaitingFigures {
    /// Requested jobs whose due moment is after `now`.
    pub later: u64,
    /// The earliest due moment at or before `now`.
    pub oldest_due_us: Option<i64>,
    /// The earliest due moment after `now`.
    pub next_due_us: Option<i64>,
}

/// What [`Txn::claimed_figures`] read of a production's claimed jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClaimedFigures {
    /// Leases expiring after `now`.
    pub live: u64,
    /// Leases expired at `now` with attempts left.
    pub expired: u64,
    /// Leases expired at `now` with no attempts left.
    pub exhausted: u64,
    /// Live leases expiring at or before the horizon.
    pub expiring: u64,
    /// The largest attempt count of a live lease (0: none).
    pub max_live_attempts: u32,
    /// Expired leases whose expiry is at or after the window's start.
    pub lapsed_in_window: u64,
}

/// Which events [`Txn::flow_events`] reads: the production's events the
/// flow reads ([`flow_events`]) with `from <= at_us <= to`, newest first,
/// at most `limit`; all those of the window (an index on `(production,
/// at_us)`), or, with `after`, only those with `seq >= after`, read along
/// the production's log from there (what committed since an earlier read).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlowRange<'a> {
    pub production: &'a str,
    pub after: Option<i64>,
    pub from: i64,
    pub to: i64,
    pub limit: usize,
}

/// An event as the flow reads it ([`Txn::flow_events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowEvent {
    /// The event's sequence number.
    pub seq: i64,
    pub at_us: i64,
    pub kind: EventKind,
    pub state: Option<Stored>,
    /// See [`NewEvent::since_us`].
    pub since_us: Option<i64>,
    /// See [`NewEvent::lapsed_us`].
    pub lapsed_us: Option<i64>,
}

/// An event before the store assigns its sequence number.
#[derive(Debug, Clone)]
pub(crate) struct NewEvent<'a> {
    pub at_us: i64,
    pub production: &'a str,
    pub job: Option<&'a str>,
    pub kind: EventKind,
    pub state: Option<Stored>,
    pub claim_id: Option<Uuid>,
    pub holder: Option<&'a str>,
    pub attempt: Option<u32>,
    pub expires_us: Option<i64>,
    pub detail: &'a str,
    /// What the flow statistics measure from (never shown in [`Event`]): a
    /// claim's, the time its job became due; a close's (complete, fail,
    /// release), the claim time of the lease it closes.
    pub since_us: Option<i64>,
    /// The expiry of a lease that lapsed, on the event that took it over
    /// (a reclaim) or recorded it as exhausted.
    pub lapsed_us: Option<i64>,
}

/// One job's facts for [`Txn::insert_facts_many`].
#[derive(Debug, Clone)]
pub(crate) struct JobFacts<'a> {
    pub production: &'a str,
    pub job: &'a str,
    pub facts: Vec<(&'a str, &'a str)>,
}

/// Why live jobs are scanned: a backend without a store-wide writer lock
/// (PostgreSQL) may skip rows other transactions hold when claiming, but must
/// see every row when a coordinator acts on all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LiveScan {
    /// `claim_next`: any claimable row will do; rows locked elsewhere may be
    /// skipped, and so may rows stored `claimed` whose lease expires after
    /// `now` (µs): the rule classifies those as held and passes over them
    /// ([`crate::rules::classify`]), so the backend leaves them out of the
    /// page instead of decoding them (and, on PostgreSQL, instead of locking
    /// them). The rule still classifies every row it gets: leaving such a
    /// row in is never wrong, leaving any other row out would be.
    Claim { now: i64 },
    /// `cancel_production`: every live row, waiting for locked ones.
    All,
}

/// What [`Txn::insert_new_jobs_into`] found and did: the production's row
/// and, if the jobs were inserted, each one's sequence (`None`: the ID was
/// taken).
pub(crate) type Inserted = (Option<ProductionRow>, Option<Vec<Option<i64>>>);

/// What a caller of [`Txn::lock_jobs_sampled`] goes on to decide, so what
/// a backend may read with the rows to spare it a request later (a backend
/// may read more or less: the rules read what is missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockedFor {
    /// A transition that needs neither the productions' back-off nor their
    /// gates (renewal, release, completion, progress).
    Transition,
    /// A failure: the rows' productions' default back-off.
    Failure,
    /// A claim of named jobs: the rows' productions' gates.
    Claim,
}

/// What [`Txn::lock_jobs_sampled`] read.
pub(crate) struct Locked {
    /// The clock sample, taken after the row locks were held.
    pub now: i64,
    pub rows: Vec<Option<JobRow>>,
    /// Default back-off of productions read with the rows.
    pub backoffs: std::collections::HashMap<String, Option<Backoff>>,
}

/// What [`Txn::claim_start`] read.
pub(crate) struct ClaimStart {
    /// The clock sample, taken after the production's lock.
    pub now: i64,
    /// Whether the production exists (`None`: not looked up, see
    /// [`Txn::production_lookup_locks`]).
    pub exists: Option<bool>,
    /// The scan's first page.
    pub rows: Vec<JobRow>,
    /// Whether the production has a gate row (`None`: not looked up; the
    /// rules read [`Txn::gates`]).
    pub gated: Option<bool>,
}

/// The clock for a step: the authority's (`local_now`) or the store's.
fn sample<T: Txn + ?Sized>(txn: &mut T, local_now: Option<i64>) -> Result<i64> {
    match local_now {
        Some(t) => Ok(t),
        None => txn.server_now_us()?.ok_or_else(|| {
            crate::error::Error::Internal("no clock sample: the store has no clock".into())
        }),
    }
}

/// Opens transactions on one store.
pub(crate) trait Backend: Send + Sync {
    /// Begin a write transaction: takes the writer lock (SQLite `BEGIN IMMEDIATE`).
    fn begin_write(&self) -> Result<Box<dyn Txn>>;
    /// Begin a read-only snapshot.
    fn begin_read(&self) -> Result<Box<dyn Txn>>;
    /// Begin a read-only snapshot whose [`Txn::flow_horizon`] is known
    /// (PostgreSQL reads the event horizon before the snapshot is taken,
    /// in the same request). Default: [`Backend::begin_read`].
    fn begin_read_at_horizon(&self) -> Result<Box<dyn Txn>> {
        self.begin_read()
    }
    /// The store's work doorbell (see [`crate::doorbell`]), which every
    /// commit that called [`Txn::notify_work`] rings.
    fn doorbell(&self) -> Result<std::sync::Arc<dyn crate::doorbell::Doorbell>>;
    /// Rewrite the store so that freed space can be given back in small
    /// steps from then on (SQLite: `auto_vacuum = INCREMENTAL` and a full
    /// `VACUUM`, which holds the writer lock while it runs). Default:
    /// nothing to do (PostgreSQL: autovacuum).
    fn compact(&self) -> Result<()> {
        Ok(())
    }
    /// Bring the kept job counts ([`Txn::state_counts`]) up to date before
    /// a read of them, in a short transaction of its own where the backend
    /// keeps changes apart from the counts (PostgreSQL folds the per-change
    /// delta rows into the counts). Default: nothing to do (SQLite writes
    /// the counts themselves with each change).
    fn fold_counts(&self) -> Result<()> {
        Ok(())
    }
}

/// One open transaction. Dropping it without `commit` rolls it back.
pub(crate) trait Txn: Send {
    /// Return once every commit this transaction can see is durable: for a
    /// read before it hands out what it read, for an explicit edit (which
    /// hands out what it reads before it ends) as it begins. Default:
    /// nothing to wait for (a store whose commits are durable before they
    /// are visible).
    fn settle_snapshot(&mut self) -> Result<()> {
        Ok(())
    }

    /// The store's own clock, if it has one (PostgreSQL: the server's
    /// `clock_timestamp()` in µs); `None` means "use the authority's clock".
    /// Default: no server clock.
    fn server_now_us(&mut self) -> Result<Option<i64>> {
        Ok(None)
    }
    /// Whether [`Txn::server_now_us`] answers with a store clock (without
    /// asking the store). Default: false.
    fn has_server_clock(&self) -> bool {
        false
    }
    /// Whether a completion's provenance facts ([`crate::model::provenance`])
    /// are kept in the job row instead of as fact rows: the rules then hand
    /// [`Txn::insert_facts`] only the caller's and the execution's facts and
    /// set [`JobRow::provenance_at`], and [`Txn::facts`] gives the provenance
    /// back in its place (derived from the row's claim ID, holder, attempts
    /// and `updated_us`, which a completed job never changes), so every
    /// reader sees the same facts either way. Default: false (stored rows).
    fn derives_provenance(&self) -> bool {
        false
    }
    /// The first step of a lease transition: lock these distinct jobs
    /// (as [`Txn::jobs_for_update`]) and sample the clock *after* the locks
    /// are held. `local_now` is the authority's clock, given when the store
    /// has none ([`Txn::has_server_clock`]). The answer: the sample, the
    /// rows in the order asked, and the default back-off of the rows'
    /// productions where the backend read it with them (a production
    /// missing from the map was not read: the rules read it if they need
    /// it). `what` says what the caller decides next ([`LockedFor`]).
    /// Default: sample, then [`Txn::jobs_for_update`], no back-offs.
    fn lock_jobs_sampled(
        &mut self,
        keys: &[(&str, &str)],
        local_now: Option<i64>,
        _what: LockedFor,
    ) -> Result<Locked> {
        let now = sample(self, local_now)?;
        Ok(Locked {
            now,
            rows: self.jobs_for_update(keys)?,
            backoffs: std::collections::HashMap::new(),
        })
    }
    /// Claim-next's first step: the production's lookup (with the lock
    /// [`Txn::production_exists`] takes) where [`Txn::production_lookup_locks`],
    /// a clock sample taken after that lock (`local_now` as in
    /// [`Txn::lock_jobs_sampled`]), the jobs whose due time has come made
    /// visible to the scan ([`Txn::unpark_due`]), and the scan's first page
    /// ([`Txn::live_jobs`] with [`LiveScan::Claim`] and no cursor). Default:
    /// those primitives in that order (the sample first).
    fn claim_start(
        &mut self,
        production: &str,
        limit: usize,
        local_now: Option<i64>,
    ) -> Result<ClaimStart> {
        let now = sample(self, local_now)?;
        let exists = if self.production_lookup_locks() {
            Some(self.production_exists(production)?)
        } else {
            None
        };
        if exists == Some(false) {
            return Ok(ClaimStart {
                now,
                exists,
                rows: Vec::new(),
                gated: None,
            });
        }
        self.unpark_due(production, now, LiveScan::Claim { now })?;
        let rows = self.live_jobs(production, None, limit, LiveScan::Claim { now })?;
        Ok(ClaimStart {
            now,
            exists,
            rows,
            gated: None,
        })
    }
    /// A clock sample for an unguarded write (a submission, a cancel):
    /// may be one the store took earlier in this transaction and has not
    /// handed out yet (PostgreSQL: read with `BEGIN`). Default:
    /// [`Txn::server_now_us`].
    fn observed_now_us(&mut self) -> Result<Option<i64>> {
        self.server_now_us()
    }
    fn high_water(&mut self) -> Result<i64>;
    fn set_high_water(&mut self, us: i64) -> Result<()>;
    fn schema_version(&mut self) -> Result<u32>;

    /// Whether [`Txn::production`] in a write transaction also locks the
    /// production against a concurrent cancel of it (PostgreSQL's shared
    /// advisory lock), so that a claim must look it up before scanning its
    /// jobs. A backend whose writer lock is store-wide (SQLite) answers
    /// false: there the lookup only proves the production exists.
    /// Default: true.
    fn production_lookup_locks(&self) -> bool {
        true
    }
    fn production(&mut self, name: &str) -> Result<Option<ProductionRow>>;
    /// Whether the production exists, with the same lock
    /// [`Txn::production`] takes in a write transaction, for a caller that
    /// needs nothing else of the row (claim-next). Productions are never
    /// deleted, so a backend may answer from a snapshot taken before the
    /// lock was granted (PostgreSQL: lock and read in one statement).
    fn production_exists(&mut self, name: &str) -> Result<bool> {
        Ok(self.production(name)?.is_some())
    }
    fn insert_production(&mut self, row: &ProductionRow) -> Result<()>;
    fn set_production_cancelled(&mut self, name: &str, at_us: i64) -> Result<()>;
    /// Write a production's default retry back-off.
    fn set_production_backoff(&mut self, name: &str, backoff: Option<Backoff>) -> Result<()>;
    fn productions(&mut self) -> Result<Vec<ProductionRow>>;
    /// The production's gate row, if it has one; in a write transaction
    /// locked until the transaction ends against every other claim of the
    /// production that reads it (PostgreSQL: `FOR UPDATE`; SQLite: the
    /// store-wide writer lock).
    fn gates(&mut self, production: &str) -> Result<Option<GateRow>>;
    /// Write the production's gate row (insert or replace).
    fn set_gates(&mut self, production: &str, gates: &GateRow) -> Result<()>;
    /// Whether a claim may wait for [`Txn::gates`]'s lock after its first
    /// clock sample, and commits of other transactions become visible to
    /// it meanwhile (PostgreSQL): the gates then decide at a sample taken
    /// after reading the live leases. Default: false (SQLite's writer lock
    /// is held before the first sample).
    fn gate_waits(&self) -> bool {
        false
    }
    /// Hold the production exclusively until the transaction ends, before
    /// a coordinator changes its gates: no claim of it that read the gates
    /// earlier is still in flight. Default: nothing (a store-wide writer
    /// lock, SQLite).
    fn hold_production(&mut self, _production: &str) -> Result<()> {
        Ok(())
    }
    /// A claim of the production decided that no gate applies: the
    /// transaction must not commit if a gate committed since the read
    /// that said so (a coordinator's change that [`Txn::hold_production`]
    /// had to wait for no longer). Refused with [`Error::Busy`] at the
    /// commit at the latest; nothing then changes. Default: nothing (the
    /// store-wide writer lock is held since the read, SQLite).
    fn claim_without_gates(&mut self, _production: &str) -> Result<()> {
        Ok(())
    }
    /// The expiries of the production's leases stored `claimed` with an
    /// expiry after `after`, as committed when the read began.
    fn live_expiries(&mut self, production: &str, after: i64) -> Result<Vec<i64>>;
    /// A clock sample taken after a read began (the store's clock, or
    /// `local` where it has none) and, with `leases`, that read's
    /// [`Txn::live_expiries`]: what the gates decide a claim on where they
    /// wait for their lock ([`Txn::gate_waits`]). PostgreSQL sends both in
    /// one statement.
    fn live_expiries_sampled(
        &mut self,
        production: &str,
        after: i64,
        leases: bool,
        local: Option<i64>,
    ) -> Result<(i64, Vec<i64>)> {
        let expiries = if leases {
            self.live_expiries(production, after)?
        } else {
            Vec::new()
        };
        Ok((sample(self, local)?, expiries))
    }

    fn job(&mut self, production: &str, job: &str) -> Result<Option<JobRow>>;
    fn payload(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>>;
    /// A job's progress checkpoint (`jobs.progress`), `None` if it has none
    /// or the job does not exist. Kept out of [`JobRow`]: no claim or
    /// transition reads it.
    fn progress(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>>;
    /// Write a job's progress checkpoint (the rules checked the lease and
    /// the bound first); the job exists and is locked.
    fn set_progress(&mut self, production: &str, job: &str, progress: &[u8]) -> Result<()>;
    /// Insert a new job; returns its submission sequence.
    fn insert_job(&mut self, row: &JobRow, payload: &[u8]) -> Result<i64>;
    /// Write the mutable columns of an existing job (state, attempts, claim, times, error).
    fn update_job(&mut self, row: &JobRow) -> Result<()>;
    /// Write only a live claim's expiry (a renewal: no indexed column changes).
    fn update_expiry(&mut self, row: &JobRow) -> Result<()>;

    // Batched primitives (the batched claimant calls): each is the single
    // primitive applied to many distinct jobs. The defaults loop; a backend
    // with round trips to save (PostgreSQL) does each in one statement.

    /// [`Txn::job`] of many distinct jobs, in the order asked, each locked
    /// against concurrent writers in a write transaction. A missing job is
    /// `None` (and, unlike [`Txn::job`], need not be guarded against a
    /// concurrent insert: no batched call creates jobs).
    fn jobs_for_update(&mut self, keys: &[(&str, &str)]) -> Result<Vec<Option<JobRow>>> {
        keys.iter().map(|(p, j)| self.job(p, j)).collect()
    }
    /// Insert many new jobs of distinct IDs, each unless its ID exists as a
    /// job or a tombstone: the new row's sequence, or `None` where the ID
    /// was already taken (left as it is). Rows are inserted in order.
    fn insert_new_jobs(&mut self, rows: &[JobRow], payloads: &[&[u8]]) -> Result<Vec<Option<i64>>> {
        rows.iter()
            .zip(payloads)
            .map(|(r, p)| {
                if self.job(&r.production, &r.job)?.is_some()
                    || self.tombstone(&r.production, &r.job)?.is_some()
                {
                    return Ok(None);
                }
                self.insert_job(r, p).map(Some)
            })
            .collect()
    }
    /// [`Txn::production`] (with its lock), then, only if it exists and is
    /// not cancelled, [`Txn::insert_new_jobs`] (`None` if not inserted).
    /// PostgreSQL does both in one statement.
    fn insert_new_jobs_into(
        &mut self,
        production: &str,
        rows: &[JobRow],
        payloads: &[&[u8]],
    ) -> Result<Inserted> {
        let prod = self.production(production)?;
        let open = prod.as_ref().is_some_and(|p| p.cancelled_us.is_none());
        let seqs = if open {
            Some(self.insert_new_jobs(rows, payloads)?)
        } else {
            None
        };
        Ok((prod, seqs))
    }
    /// The writes of many transitions of distinct jobs, together: full row
    /// updates ([`Txn::update_job`]), expiry-only updates
    /// ([`Txn::update_expiry`]), facts ([`Txn::insert_facts`]) and events
    /// ([`Txn::append_event`], in order). The default makes each write
    /// alone; PostgreSQL makes them all in one statement.
    fn write_batch(
        &mut self,
        rows: &[&JobRow],
        expiries: &[&JobRow],
        facts: &[JobFacts<'_>],
        events: &[NewEvent<'_>],
    ) -> Result<()> {
        rows.iter().try_for_each(|r| self.update_job(r))?;
        expiries.iter().try_for_each(|r| self.update_expiry(r))?;
        facts
            .iter()
            .try_for_each(|f| self.insert_facts(f.production, f.job, &f.facts))?;
        events.iter().try_for_each(|e| self.append_event(e))
    }
    /// Jobs stored as requested or claimed, highest priority first, then
    /// oldest, strictly after the `(priority, seq)` cursor.
    fn live_jobs(
        &mut self,
        production: &str,
        after: Option<(i32, i64)>,
        limit: usize,
        scan: LiveScan,
    ) -> Result<Vec<JobRow>>;
    /// Clear the parked flag of the production's requested jobs whose
    /// `due_us <= up_to_us` (all of them with `i64::MAX`), so claim-next's
    /// scan sees them; returns how many. Reads only parked rows (an index on
    /// `(production, due_us)` of parked rows): nothing when none is due. A
    /// backend without a store-wide writer lock may skip rows other
    /// transactions hold when `scan` is [`LiveScan::Claim`].
    fn unpark_due(&mut self, production: &str, up_to_us: i64, scan: LiveScan) -> Result<u64>;
    /// The earliest `due_us` of a parked requested job of the production
    /// (`None` if there is none).
    fn earliest_due(&mut self, production: &str) -> Result<Option<i64>>;
    /// Jobs ordered by job ID after `after`, optionally only these stored states.
    fn jobs_page(
        &mut self,
        production: &str,
        states: Option<&[Stored]>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JobRow>>;
    /// Every job of every production ordered by `seq`, after `after_seq` (for the checker).
    fn all_jobs_page(&mut self, after_seq: i64, limit: usize) -> Result<Vec<JobRow>>;

    /// Append an event to the transaction; it commits with it. A backend
    /// may insert it later in the same transaction, before any statement
    /// that reads or removes events, and in order with the others.
    fn append_event(&mut self, ev: &NewEvent<'_>) -> Result<()>;
    /// Events after `after` for a tailer (`Authority::events`,
    /// `production_events`), in sequence order, never returning a sequence
    /// number while a smaller one can still commit (a PostgreSQL read
    /// transaction restarts its snapshot for that: see `store/postgres/mod.rs`).
    fn events(&mut self, production: Option<&str>, after: u64, limit: usize) -> Result<Vec<Event>>;
    /// Every event after `after` visible in this transaction's snapshot, in
    /// sequence order, without the tailers' commit-order horizon and without
    /// ever changing the snapshot: for the checker, which compares the
    /// events with job rows read in the same snapshot. On a store with one
    /// writer at a time (SQLite) the two listings are the same.
    fn snapshot_events(&mut self, after: u64, limit: usize) -> Result<Vec<Event>> {
        self.events(None, after, limit)
    }

    /// The history horizon: every event with a sequence number up to it was
    /// pruned (0: none). Read in the same snapshot as a listing before it.
    fn history_horizon(&mut self) -> Result<u64>;
    /// The oldest events still stored (after the horizon), as `(seq, at_us)`
    /// in sequence order, at most `limit`; never one while an event with a
    /// smaller sequence number can still commit.
    fn oldest_events(&mut self, limit: usize) -> Result<Vec<(u64, i64)>>;
    /// Delete every event with a sequence number up to `through` and raise
    /// the history horizon to it. Returns how many were deleted.
    fn prune_events_through(&mut self, through: u64) -> Result<u64>;
    /// Jobs in a stored terminal state whose `updated_us` is before
    /// `before_us`, oldest first, at most `limit`.
    fn terminal_jobs_before(&mut self, before_us: i64, limit: usize) -> Result<Vec<JobRow>>;
    /// Delete these jobs with their facts and execution nonces. Returns the
    /// number of facts deleted.
    fn delete_jobs(&mut self, rows: &[JobRow]) -> Result<u64>;
    fn insert_tombstones(&mut self, stones: &[Tombstone]) -> Result<()>;
    fn tombstone(&mut self, production: &str, job: &str) -> Result<Option<Tombstone>>;
    /// Jobs stored beside a tombstone of their own ID (`(production,
    /// job)`, at most `limit`): none in a sound store, where a pruned ID
    /// is new again only once its tombstone is gone.
    fn jobs_with_tombstones(&mut self, limit: usize) -> Result<Vec<(String, String)>>;
    /// Delete at most `limit` tombstones pruned before `before_us`.
    fn prune_tombstones(&mut self, before_us: i64, limit: usize) -> Result<u64>;
    /// Delete at most `limit` events of one production, never the store's
    /// newest event (so that sequence numbers never go back); returns how
    /// many.
    fn delete_production_events(&mut self, production: &str, limit: usize) -> Result<u64>;
    /// Delete every tombstone of one production; returns how many.
    fn delete_production_tombstones(&mut self, production: &str) -> Result<u64>;
    /// Delete the production row itself.
    fn delete_production(&mut self, production: &str) -> Result<()>;
    /// Give free space beyond a slack the next writes reuse back to the
    /// file system in a small step (SQLite: `PRAGMA incremental_vacuum` of
    /// the free pages beyond a quarter of the file). Default: nothing to do.
    fn reclaim_space(&mut self) -> Result<()> {
        Ok(())
    }

    fn insert_facts(&mut self, production: &str, job: &str, facts: &[(&str, &str)]) -> Result<()>;
    /// A job's (or every job's of the production, by job ID) published
    /// facts in their order, provenance included (also where it is derived,
    /// [`Txn::derives_provenance`]).
    fn facts(&mut self, production: &str, job: Option<&str>) -> Result<Vec<PublishedFact>>;
    /// The claims recorded under any of `request_ids` in `production`
    /// (schema 6), in no particular order; the IDs absent are left out.
    fn claim_requests(
        &mut self,
        production: &str,
        request_ids: &[String],
    ) -> Result<Vec<RequestRow>>;
    /// Record claims made under request IDs unless an ID is taken; false
    /// if one is (a concurrent claim with the same ID committed first; on
    /// PostgreSQL the insert waits for it). All rows are of one production;
    /// the caller rolls back on false.
    fn insert_claim_requests(&mut self, rows: &[RequestRow]) -> Result<bool>;
    /// The newest event of one job naming `claim_id` (`None` if there is
    /// none, or it was pruned): how a refused claimant transition tells
    /// whether its own lease already made it.
    fn last_claim_event(
        &mut self,
        production: &str,
        job: &str,
        claim_id: &Uuid,
    ) -> Result<Option<Event>>;

    /// One schedule, locked against concurrent writers in a write
    /// transaction (`None`: there is none).
    fn schedule(&mut self, production: &str, name: &str) -> Result<Option<ScheduleRow>>;
    /// The schedules of one production (every production's with `None`),
    /// by production and name; with `lock`, each row is locked against
    /// concurrent writers (in that order) in a write transaction.
    fn schedules(&mut self, production: Option<&str>, lock: bool) -> Result<Vec<ScheduleRow>>;
    /// Insert a schedule or replace the one of its name.
    fn put_schedule(&mut self, row: &ScheduleRow) -> Result<()>;
    /// Delete a schedule; false if there was none.
    fn delete_schedule(&mut self, production: &str, name: &str) -> Result<bool>;

    /// Record an execution nonce; false if it was already used.
    fn insert_nonce(
        &mut self,
        nonce: &Uuid,
        production: &str,
        job: &str,
        claim_id: &Uuid,
        at_us: i64,
    ) -> Result<bool>;

    /// The production's job counts by stored state, kept as jobs change
    /// state (never a scan of its job rows); states with none may be left
    /// out.
    fn state_counts(&mut self, production: &str) -> Result<Vec<(Stored, u64)>>;
    /// The due figures of the production's requested jobs at `now` (an
    /// index on their due moment: reads the jobs not yet due).
    fn waiting_figures(&mut self, production: &str, now: i64) -> Result<WaitingFigures>;
    /// The lease figures of the production's claimed jobs at `now`
    /// (`horizon`: the end of the expiring-within range; `window_from`:
    /// the window's start), reading only claimed rows.
    fn claimed_figures(
        &mut self,
        production: &str,
        now: i64,
        horizon: i64,
        window_from: i64,
    ) -> Result<ClaimedFigures>;
    /// The events of [`FlowRange`], newest first.
    fn flow_events(&mut self, r: &FlowRange<'_>) -> Result<Vec<FlowEvent>>;
    /// A sequence number H such that every event below H that will ever
    /// commit is visible in this transaction's snapshot; `None` when the
    /// transaction cannot tell without a new snapshot (a PostgreSQL read
    /// not begun by [`Backend::begin_read_at_horizon`]).
    fn flow_horizon(&mut self) -> Result<Option<i64>> {
        Ok(None)
    }
    /// Whether the event `seq` is stored (in this snapshot).
    fn event_stored(&mut self, seq: i64) -> Result<bool>;

    /// The earliest expiry of a lease stored `claimed` in the production
    /// (held or already expired), if any.
    fn earliest_expiry(&mut self, production: &str) -> Result<Option<i64>>;
    /// Make the next successful [`Txn::commit`] ring the store's doorbell
    /// for `production` (work may have become claimable there): SQLite rings
    /// after the COMMIT returned, PostgreSQL sends `NOTIFY` with the COMMIT.
    /// A rollback rings nothing.
    fn notify_work(&mut self, production: &str) -> Result<()>;

    fn savepoint(&mut self) -> Result<()>;
    fn rollback_to_savepoint(&mut self) -> Result<()>;
    fn release_savepoint(&mut self) -> Result<()>;
    fn commit(&mut self) -> Result<()>;
    /// On a store with its own clock ([`Txn::server_now_us`]): the
    /// pre-commit step in one request. Sample that clock once more; if the
    /// sample is at or above `mark` and before `deadline` (if any), raise
    /// the mark to it and commit; otherwise roll back. `Ok(None)`: this
    /// store cannot (no server clock, or nothing to commit): the session
    /// samples and commits itself. `Ok(Some(Ok(())))`: committed.
    /// `Ok(Some(Err(pre)))`: refused at sample `pre`, rolled back.
    /// Default: `Ok(None)`.
    fn commit_checked(
        &mut self,
        _mark: i64,
        _deadline: Option<i64>,
    ) -> Result<Option<std::result::Result<(), i64>>> {
        Ok(None)
    }
    /// Raise the high-water mark to `mark` (if given) and commit, as one
    /// step where the backend can (PostgreSQL: one round trip).
    fn commit_with_mark(&mut self, mark: Option<i64>) -> Result<()> {
        if let Some(m) = mark {
            self.set_high_water(m)?;
        }
        self.commit()
    }
    fn rollback(&mut self) -> Result<()>;
}
