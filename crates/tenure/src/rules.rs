//! Every rule of the lease authority, written once against the storage traits.
//!
//! Each function here runs inside a [`Session`] operation (one savepoint of a
//! write transaction holding the writer lock) or a read snapshot. The public
//! API, the C ABI, C++, Python and the CLI all reach the store through these
//! functions only.

use crate::error::{Error, Result};
use crate::model::provenance;
use crate::model::{
    CancelOutcome, EventKind, Execution, Fact, JobSpec, JobState, JobView, Submitted,
};
use crate::request::{Applied, ClaimRequest};
use crate::retention::{DeletedCounts, PruneReport, Retention, DELETE_STEP_JOBS};
use crate::secret::Secret;
use crate::session::{Guarded, Session};
use crate::store::{
    JobRow, LiveScan, LockedFor, NewEvent, ProductionRow, RequestRow, Stored, Tombstone, Txn,
};
use crate::ttl::{Backoff, Delay, Ttl};
use crate::validate;
use sha2::{Digest, Sha256};
use uuid::Uuid;

mod across;
mod progress;
mod requeue;
pub(crate) use across::claim_next_across;
pub(crate) use progress::checkpoint_applied;
pub(crate) use requeue::{requeue, requeue_all};

/// `last_error` of a job whose expired claim had no attempts left.
pub(crate) const EXHAUSTED: &str = "lease expired with no attempts left";
const RELEASED_LAST: &str = "released after its last attempt";
const FAILED_LAST: &str = "failed on its last attempt";

/// A lease as minted or imported: everything a [`crate::Lease`] needs.
pub(crate) struct Minted {
    pub production: String,
    pub job: String,
    pub claim_id: Uuid,
    pub attempt: u32,
    pub holder: String,
    pub expires_us: i64,
    pub secret: Secret,
}

/// What a claimant transition needs to identify its lease.
pub(crate) struct LeaseKey<'a> {
    pub production: &'a str,
    pub job: &'a str,
    /// `None` when importing a token (the token carries no claim ID).
    pub claim_id: Option<Uuid>,
    pub secret: &'a Secret,
}

/// Observed state of a row at `now` (`now` is already `max(clock, mark)`).
pub(crate) fn classify(row: &JobRow, now: i64) -> JobState {
    match row.state {
        Stored::Claimed => {
            let expires = row.expires_us.unwrap_or(i64::MIN);
            if now < expires {
                JobState::Claimed
            } else if row.attempts < row.max_attempts {
                JobState::Expired
            } else {
                JobState::Failed
            }
        }
        s => s.as_job_state(),
    }
}

pub(crate) fn view(row: &JobRow, now: i64) -> JobView {
    JobView {
        production: row.production.clone(),
        job: row.job.clone(),
        state: classify(row, now),
        attempts: row.attempts,
        max_attempts: row.max_attempts,
        priority: row.priority,
        holder: row.holder.clone(),
        claim_id: row.claim_id,
        expires_us: row.expires_us,
        created_us: row.created_us,
        updated_us: row.updated_us,
        payload_len: row.payload_len,
        last_error: row.last_error.clone(),
        due_us: row.due_us,
        max_hold_us: row.max_hold_us,
        backoff: row.backoff,
        progress: None,
    }
}

/// `now + delay` for a requested row: sets its not-before time and parks it
/// out of claim-next's scan when that is later than `now`.
fn schedule(row: &mut JobRow, now: i64, delay: Delay) {
    if delay.as_micros() == 0 {
        row.due_us = None;
        row.parked = false;
    } else {
        // At most 366 days after a clock reading: no overflow in practice;
        // saturate rather than wrap if a clock reads near the end of time.
        row.due_us = Some(now.saturating_add(delay.as_micros()));
        row.parked = true;
    }
}

/// Whether a requested row is not yet due at `now`.
fn not_due(row: &JobRow, now: i64) -> Option<i64> {
    row.due_us
        .filter(|&d| row.state == Stored::Requested && now < d)
}

fn name(row: &JobRow) -> String {
    format!("{}/{}", row.production, row.job)
}

/// What a deadline on `row` guards (see [`Guarded`]).
fn guarded(row: &JobRow, lead: &'static str, tail: &'static str) -> Guarded {
    Guarded {
        lead,
        production: row.production.clone(),
        job: row.job.clone(),
        tail,
    }
}

fn event<'a>(row: &'a JobRow, kind: EventKind, at_us: i64, detail: &'a str) -> NewEvent<'a> {
    let live = row.state == Stored::Claimed;
    // A close is timed from the claim of the lease it closes.
    let since_us = match kind {
        EventKind::Completed | EventKind::Failed | EventKind::Released => row.claimed_us,
        _ => None,
    };
    NewEvent {
        at_us,
        production: &row.production,
        job: Some(&row.job),
        kind,
        state: Some(row.state),
        claim_id: row.claim_id,
        holder: row.holder.as_deref(),
        attempt: row.claim_id.map(|_| row.attempts),
        expires_us: if live { row.expires_us } else { None },
        detail,
        since_us,
        lapsed_us: None,
    }
}

/// When a claimable row became claimable, which a claim's queue wait is
/// measured from: an expired lease's expiry, else the due time of a
/// requested job (its not-before time, or when it last became requested).
pub(crate) fn due_moment(row: &JobRow) -> i64 {
    match row.state {
        Stored::Claimed => row.expires_us.unwrap_or(row.updated_us),
        _ => row.due_us.unwrap_or(row.updated_us),
    }
}

fn production_row(s: &mut Session, production: &str) -> Result<ProductionRow> {
    s.txn
        .production(production)?
        .ok_or_else(|| Error::NotFound(format!("production {production:?}")))
}

fn job_row(txn: &mut dyn Txn, production: &str, job: &str) -> Result<JobRow> {
    txn.job(production, job)?
        .ok_or_else(|| Error::NotFound(format!("job {production}/{job}")))
}

/// Create a production; `false` if it already existed (idempotent).
pub(crate) fn create_production(s: &mut Session, production: &str) -> Result<bool> {
    validate::id("production", production)?;
    let now = s.observe_now();
    if s.txn.production(production)?.is_some() {
        return Ok(false);
    }
    s.txn.insert_production(&ProductionRow {
        name: production.to_owned(),
        created_us: now,
        cancelled_us: None,
        backoff: None,
    })?;
    s.production_event(production, EventKind::ProductionCreated, now, "")?;
    Ok(true)
}

/// Validate a submission.
pub(crate) fn valid_submission(production: &str, spec: &JobSpec) -> Result<()> {
    validate::id("production", production)?;
    validate::id("job", &spec.job)?;
    validate::payload(&spec.payload)?;
    validate::max_attempts(spec.max_attempts)?;
    if spec.max_hold.is_some_and(|h| h.as_micros() == 0) {
        return Err(Error::InvalidDuration(format!(
            "job {production}/{}: a hold limit must be positive",
            spec.job
        )));
    }
    Ok(())
}

/// What an existing ID was submitted with: its job row, or the tombstone a
/// pruned terminal job left (docs/design.md, "Retention"), which answers
/// resubmissions exactly as the row did. The not-before delay is not part
/// of it: a resubmission later is the same job.
struct Known<'a> {
    payload_digest: &'a [u8],
    priority: i32,
    max_attempts: u32,
    max_hold_us: Option<i64>,
    backoff: Option<Backoff>,
}

impl<'a> From<&'a JobRow> for Known<'a> {
    fn from(r: &'a JobRow) -> Known<'a> {
        Known {
            payload_digest: &r.payload_digest,
            priority: r.priority,
            max_attempts: r.max_attempts,
            max_hold_us: r.max_hold_us,
            backoff: r.backoff,
        }
    }
}

impl<'a> From<&'a crate::store::Tombstone> for Known<'a> {
    fn from(t: &'a crate::store::Tombstone) -> Known<'a> {
        Known {
            payload_digest: &t.payload_digest,
            priority: t.priority,
            max_attempts: t.max_attempts,
            max_hold_us: t.max_hold_us,
            backoff: t.backoff,
        }
    }
}

/// A submission whose ID exists (as a job or a tombstone): same content is
/// `Existing`, different content is a conflict.
fn resubmitted(
    existing: Known<'_>,
    production: &str,
    spec: &JobSpec,
    digest: &[u8],
) -> Result<Submitted> {
    let mut diff = Vec::new();
    if existing.payload_digest != digest {
        diff.push("payload");
    }
    if existing.priority != spec.priority {
        diff.push("priority");
    }
    if existing.max_attempts != spec.max_attempts {
        diff.push("max_attempts");
    }
    if existing.max_hold_us != spec.max_hold.map(Delay::as_micros) {
        diff.push("max_hold");
    }
    if existing.backoff != spec.backoff {
        diff.push("backoff");
    }
    if diff.is_empty() {
        Ok(Submitted::Existing)
    } else {
        Err(Error::Conflict(format!(
            "job {production}/{} already exists with a different {}",
            spec.job,
            diff.join(", ")
        )))
    }
}

/// The row of a new submission.
fn new_job(production: &str, spec: &JobSpec, digest: Vec<u8>, now: i64) -> JobRow {
    let mut row = JobRow {
        seq: 0,
        production: production.to_owned(),
        job: spec.job.clone(),
        payload_digest: digest,
        payload_len: spec.payload.len() as u64,
        priority: spec.priority,
        max_attempts: spec.max_attempts,
        state: Stored::Requested,
        attempts: 0,
        claim_id: None,
        secret_digest: None,
        holder: None,
        claimed_us: None,
        expires_us: None,
        created_us: now,
        updated_us: now,
        last_error: None,
        due_us: None,
        parked: false,
        max_hold_us: spec.max_hold.map(Delay::as_micros),
        backoff: spec.backoff,
        provenance_at: None,
    };
    schedule(&mut row, now, spec.not_before.unwrap_or_default());
    row
}

/// The event detail of a new submission: when it is due, if later.
fn submitted_detail(row: &JobRow, spec: &JobSpec) -> String {
    row.due_us
        .map(|d| {
            format!(
                "due at {d} µs (after {})",
                spec.not_before.unwrap_or_default()
            )
        })
        .unwrap_or_default()
}

fn cancelled_production(production: &str) -> Error {
    Error::Cancelled(format!(
        "production {production:?} was cancelled; it takes no new jobs"
    ))
}

/// Submit a job: same ID and content is `Existing`; different content is a
/// conflict. The batch of one ([`submit_many`]), which decides it by the
/// same rules in fewer steps.
pub(crate) fn submit(s: &mut Session, production: &str, spec: &JobSpec) -> Result<Submitted> {
    submit_many(s, production, std::slice::from_ref(spec))?
        .pop()
        .ok_or_else(|| Error::Internal("a submission got no outcome".into()))
}

/// [`submit`] one job step by step (to a cancelled production, where only
/// a resubmission can succeed).
fn submit_one(s: &mut Session, production: &str, spec: &JobSpec) -> Result<Submitted> {
    valid_submission(production, spec)?;
    let now = s.observe_now();
    let prod = production_row(s, production)?;
    let digest = Sha256::digest(&spec.payload).to_vec();
    if let Some(existing) = s.txn.job(production, &spec.job)? {
        return resubmitted((&existing).into(), production, spec, &digest);
    }
    if let Some(stone) = s.txn.tombstone(production, &spec.job)? {
        return resubmitted((&stone).into(), production, spec, &digest);
    }
    if prod.cancelled_us.is_some() {
        return Err(cancelled_production(production));
    }
    let mut row = new_job(production, spec, digest, now);
    row.seq = s.txn.insert_job(&row, &spec.payload)?;
    let detail = submitted_detail(&row, spec);
    s.txn
        .append_event(&event(&row, EventKind::Submitted, now, &detail))?;
    if !row.parked {
        s.work_ready(production);
    }
    Ok(Submitted::Created)
}

/// Submit many jobs, all or nothing: the first refused submission is the
/// error. Each job gets [`submit`]'s outcome, decided by the same rules
/// ([`resubmitted`]); a job ID repeated in the batch is compared with its
/// first occurrence. The new rows are inserted unless their ID exists
/// ([`Txn::insert_new_jobs`], one set-based statement on PostgreSQL), the
/// IDs that existed are read back to tell `Existing` from a conflict, and
/// the events are written together.
pub(crate) fn submit_many(
    s: &mut Session,
    production: &str,
    specs: &[JobSpec],
) -> Result<Vec<Submitted>> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    for spec in specs {
        valid_submission(production, spec)?;
    }
    let now = s.observe_now();
    let digests: Vec<Vec<u8>> = specs
        .iter()
        .map(|spec| Sha256::digest(&spec.payload).to_vec())
        .collect();
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out: Vec<Option<Submitted>> = vec![None; specs.len()];
    let mut repeats = Vec::new();
    let mut fresh = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        match first.get(spec.job.as_str()) {
            Some(&j) => {
                let earlier = new_job(production, &specs[j], digests[j].clone(), now);
                repeats.push((
                    i,
                    resubmitted((&earlier).into(), production, spec, &digests[i]),
                ));
            }
            None => {
                first.insert(&spec.job, i);
                fresh.push(i);
            }
        }
    }
    let mut rows: Vec<JobRow> = fresh
        .iter()
        .map(|&i| new_job(production, &specs[i], digests[i].clone(), now))
        .collect();
    let payloads: Vec<&[u8]> = fresh.iter().map(|&i| &specs[i].payload[..]).collect();
    // The production is looked up (and locked) with the insert, which runs
    // only if the production takes new jobs.
    let (prod, seqs) = s.txn.insert_new_jobs_into(production, &rows, &payloads)?;
    let prod = prod.ok_or_else(|| Error::NotFound(format!("production {production:?}")))?;
    let seqs = match seqs {
        Some(seqs) if prod.cancelled_us.is_none() => seqs,
        _ => {
            // Only resubmissions can succeed: the single rule decides each.
            return specs
                .iter()
                .map(|spec| submit_one(s, production, spec))
                .collect();
        }
    };
    for (i, verdict) in repeats {
        out[i] = Some(verdict?);
    }
    let existed: Vec<usize> = (0..fresh.len()).filter(|&k| seqs[k].is_none()).collect();
    if !existed.is_empty() {
        let keys: Vec<(&str, &str)> = existed
            .iter()
            .map(|&k| (production, specs[fresh[k]].job.as_str()))
            .collect();
        let found = s.txn.jobs_for_update(&keys)?;
        for (&k, row) in existed.iter().zip(found) {
            let i = fresh[k];
            // Not inserted and no row: a tombstone holds the ID.
            let verdict = match row {
                Some(row) => resubmitted((&row).into(), production, &specs[i], &digests[i]),
                None => match s.txn.tombstone(production, &specs[i].job)? {
                    Some(t) => resubmitted((&t).into(), production, &specs[i], &digests[i]),
                    None => Err(Error::Internal(format!(
                        "job {production}/{} vanished",
                        specs[i].job
                    ))),
                },
            };
            out[i] = Some(verdict?);
        }
    }
    let mut created = Vec::with_capacity(rows.len());
    for (k, row) in rows.iter_mut().enumerate() {
        if let Some(seq) = seqs[k] {
            row.seq = seq;
            out[fresh[k]] = Some(Submitted::Created);
            created.push(k);
        }
    }
    let details: Vec<String> = created
        .iter()
        .map(|&k| submitted_detail(&rows[k], &specs[fresh[k]]))
        .collect();
    let events: Vec<NewEvent<'_>> = created
        .iter()
        .zip(&details)
        .map(|(&k, d)| event(&rows[k], EventKind::Submitted, now, d))
        .collect();
    if !events.is_empty() {
        s.txn.write_batch(&[], &[], &[], &events)?;
        if created.iter().any(|&k| !rows[k].parked) {
            s.work_ready(production);
        }
    }
    out.into_iter()
        .map(|o| o.ok_or_else(|| Error::Internal("a submission got no outcome".into())))
        .collect()
}

/// One job transition the rules decided: the row to write, its event and
/// the deadline its commit must precede. Single operations write one with
/// [`write`]; batched ones write many set-based with [`write_many`].
pub(crate) struct Change {
    row: JobRow,
    kind: EventKind,
    detail: String,
    /// Facts to publish with it (a completion's caller facts and provenance).
    facts: Vec<(String, String)>,
    /// Only the expiry moved (a renewal): no indexed column changes.
    expiry_only: bool,
    deadline: Option<(i64, Guarded)>,
    /// The event's [`NewEvent::since_us`] where the row does not give it
    /// (a claim: when its job became due).
    since_us: Option<i64>,
    /// The event's [`NewEvent::lapsed_us`] (a reclaim, an exhaustion).
    lapsed_us: Option<i64>,
}

impl Change {
    fn new(row: JobRow, kind: EventKind, detail: String) -> Change {
        Change {
            row,
            kind,
            detail,
            facts: Vec::new(),
            expiry_only: false,
            deadline: None,
            since_us: None,
            lapsed_us: None,
        }
    }
}

/// Write one decided transition: the row, its facts, its event (as a
/// batch of one, so a backend that saves round trips on batches saves them
/// here too).
fn write(s: &mut Session, c: Change) -> Result<()> {
    write_many(s, &mut [c])
}

/// A transition that leaves a job `requested` (a release, a retryable
/// failure) may have made work claimable: flag the production so that the
/// commit rings the doorbell for waiters.
fn ring_if_claimable(s: &mut Session, c: &Change) {
    // A job parked until a later due time is not claimable now: the
    // waiter's timed wake covers it ([`next_claimable_us`]).
    if c.row.state == Stored::Requested && !c.row.parked && !c.expiry_only {
        s.work_ready(&c.row.production);
    }
}

/// Write many decided transitions of distinct jobs at once: the rows, the
/// facts and the events, each set-based where the backend can.
fn write_many(s: &mut Session, cs: &mut [Change]) -> Result<()> {
    if cs.is_empty() {
        return Ok(());
    }
    for c in cs.iter_mut() {
        if let Some((at, what)) = c.deadline.take() {
            s.deadline(at, what);
        }
        ring_if_claimable(s, c);
    }
    let cs = &*cs;
    let (renewed, moved): (Vec<&Change>, Vec<&Change>) = cs.iter().partition(|c| c.expiry_only);
    let rows: Vec<&JobRow> = moved.iter().map(|c| &c.row).collect();
    let expiries: Vec<&JobRow> = renewed.iter().map(|c| &c.row).collect();
    let facts: Vec<crate::store::JobFacts<'_>> = cs
        .iter()
        .filter(|c| !c.facts.is_empty())
        .map(|c| crate::store::JobFacts {
            production: &c.row.production,
            job: &c.row.job,
            facts: c
                .facts
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        })
        .collect();
    let events: Vec<NewEvent<'_>> = cs
        .iter()
        .map(|c| {
            let mut e = event(&c.row, c.kind, c.row.updated_us, &c.detail);
            e.since_us = c.since_us.or(e.since_us);
            e.lapsed_us = c.lapsed_us;
            e
        })
        .collect();
    s.txn.write_batch(&rows, &expiries, &facts, &events)
}

/// An expired claim with no attempts left (or a requested job with none),
/// recorded as failed.
fn exhausted(mut row: JobRow, now: i64) -> Change {
    let lapsed = (row.state == Stored::Claimed).then(|| due_moment(&row));
    row.state = Stored::Failed;
    row.updated_us = now;
    row.last_error = Some(EXHAUSTED.to_owned());
    let mut c = Change::new(row, EventKind::Exhausted, EXHAUSTED.to_owned());
    c.lapsed_us = lapsed;
    c
}

/// A new claim of a claimable row.
/// `given`: the secret a [`ClaimRequest`] generated in the client (else a
/// fresh one).
fn minted(
    mut row: JobRow,
    holder: &str,
    ttl: Ttl,
    now: i64,
    given: Option<&Secret>,
) -> Result<(Change, Minted)> {
    let expired = classify(&row, now) == JobState::Expired;
    let previous = expired.then_some(row.claim_id).flatten();
    let became_due = due_moment(&row).min(now);
    let lapsed = expired.then(|| due_moment(&row));
    let (secret, claim_id) = match given {
        Some(g) => (g.clone(), Uuid::new_v4()),
        None => Secret::generate_with_id()?,
    };
    let wanted = now
        .checked_add(ttl.as_micros())
        .ok_or_else(|| Error::InvalidDuration("expiry overflows the clock".into()))?;
    // A hold limit caps the first expiry too: at most `now + max_hold`.
    let limit = row.max_hold_us.map(|h| now.saturating_add(h));
    let expires = limit.map_or(wanted, |l| wanted.min(l));
    row.state = Stored::Claimed;
    row.due_us = None;
    row.parked = false;
    row.attempts += 1;
    row.claim_id = Some(claim_id);
    row.secret_digest = Some(secret.digest().to_vec());
    row.holder = Some(holder.to_owned());
    row.claimed_us = Some(now);
    row.expires_us = Some(expires);
    row.updated_us = now;
    let mut detail = previous
        .map(|p| format!("reclaimed after claim {p} expired"))
        .unwrap_or_default();
    if let Some(l) = limit {
        if !detail.is_empty() {
            detail.push_str("; ");
        }
        detail.push_str(&format!("hold limit at {l} µs"));
    }
    let m = Minted {
        production: row.production.clone(),
        job: row.job.clone(),
        claim_id,
        attempt: row.attempts,
        holder: holder.to_owned(),
        expires_us: expires,
        secret,
    };
    let what = guarded(&row, "the new claim on", "");
    let mut c = Change::new(row, EventKind::Claimed, detail);
    c.deadline = Some((expires, what));
    c.since_us = Some(became_due);
    c.lapsed_us = lapsed;
    Ok((c, m))
}

fn mint(
    s: &mut Session,
    row: JobRow,
    holder: &str,
    ttl: Ttl,
    now: i64,
    asked: Option<Asked<'_>>,
) -> Result<Minted> {
    let (c, m) = minted(row, holder, ttl, now, asked.map(|a| a.secret(0)).as_ref())?;
    if let Some(a) = asked {
        record_request(s, a, std::slice::from_ref(&m), now)?;
    }
    write(s, c)?;
    Ok(m)
}

/// Claim a named job.
pub(crate) fn claim(
    s: &mut Session,
    production: &str,
    job: &str,
    holder: &str,
    ttl: Ttl,
) -> Result<Minted> {
    claim_minting(s, production, job, holder, ttl, None)
}

/// Claims made under a [`ClaimRequest`], with the digest of the call's
/// arguments ([`request_args`]), recorded ([`record_request`]) before
/// their writes. A single claim (`claim_idempotent`, `claim_next_idempotent`) carries
/// the request's secret and is recorded under its ID; member `i` of a batch
/// (`claim_next_many_idempotent`) carries [`Secret::derive`]`(i)` and is recorded
/// under [`Asked::member_id`]`(i)`: the request ID for member 0, and
/// `"{id}/{i:04}"` after it (a `/` never occurs in a caller's ID).
#[derive(Clone, Copy)]
struct Asked<'a> {
    req: &'a ClaimRequest,
    args: &'a [u8],
    batch: bool,
}

impl Asked<'_> {
    /// The secret of claim `i` under the request.
    fn secret(&self, i: usize) -> Secret {
        if self.batch {
            self.req.secret.derive(i)
        } else {
            self.req.secret.clone()
        }
    }

    /// The ID claim `i` under the request is recorded under.
    fn member_id(&self, i: usize) -> String {
        match i {
            0 => self.req.request_id().to_owned(),
            _ => format!("{}/{i:04}", self.req.request_id()),
        }
    }
}

/// [`claim`], under the request `asked` or none (a fresh secret).
fn claim_minting(
    s: &mut Session,
    production: &str,
    job: &str,
    holder: &str,
    ttl: Ttl,
    asked: Option<Asked<'_>>,
) -> Result<Minted> {
    validate::id("production", production)?;
    validate::id("job", job)?;
    validate::holder(holder)?;
    let (now, row) = locked(s, production, job, LockedFor::Claim)?;
    claim_locked(s, production, job, (now, row), holder, ttl, asked)
}

/// The claim rule on the job's row `row`, locked (and the clock sampled
/// after the lock) by [`locked`] at `now`.
fn claim_locked(
    s: &mut Session,
    production: &str,
    job: &str,
    (now, row): (i64, Option<JobRow>),
    holder: &str,
    ttl: Ttl,
    asked: Option<Asked<'_>>,
) -> Result<Minted> {
    let row = row.ok_or_else(|| Error::NotFound(format!("job {production}/{job}")))?;
    if let Some(due) = not_due(&row, now) {
        return Err(Error::NotClaimable(format!(
            "job {} is not due until {due} µs (now {now} µs)",
            name(&row)
        )));
    }
    match classify(&row, now) {
        JobState::Requested | JobState::Expired if row.attempts < row.max_attempts => {
            let gate = crate::gates::for_claim(s.txn.as_mut(), production, None)?;
            let mut now = now;
            if let Some(g) = &gate {
                let (at, admitted) = crate::gates::admit(s, production, g, now, 1)?;
                now = at;
                if let Err(shut) = admitted {
                    return Err(crate::gates::refused(production, job, shut, now));
                }
                crate::gates::charge(s.txn.as_mut(), production, g, now, 1)?;
            }
            mint(s, row, holder, ttl, now, asked)
        }
        JobState::Requested | JobState::Expired => Err(Error::NotClaimable(format!(
            "job {} has used all {} attempts",
            name(&row),
            row.max_attempts
        ))),
        JobState::Claimed => Err(Error::NotClaimable(format!(
            "job {} is held by claim {} ({}) until {} µs",
            name(&row),
            row.claim_id.map(|c| c.to_string()).unwrap_or_default(),
            row.holder.as_deref().unwrap_or(""),
            row.expires_us.unwrap_or_default()
        ))),
        JobState::Cancelled => Err(Error::Cancelled(format!(
            "job {} was cancelled",
            name(&row)
        ))),
        st => Err(Error::NotClaimable(format!("job {} is {st}", name(&row)))),
    }
}

/// Claim the next claimable job: highest priority, then oldest. Expired
/// claims with no attempts left met on the way are recorded as failed.
/// `Ok(None)` when nothing is claimable (the housekeeping still commits).
pub(crate) fn claim_next(
    s: &mut Session,
    production: &str,
    holder: &str,
    ttl: Ttl,
) -> Result<Option<Minted>> {
    // The head of the queue is almost always claimable (the scan already
    // leaves out leases still held): read one row first.
    Ok(claim_next_scan(s, production, holder, ttl, 1, None)?.pop())
}

/// Claim up to `n` (1 ..= [`validate::MAX_BATCH`]) claimable jobs in queue
/// order, each with its own claim ID, secret and attempt, written together;
/// fewer (possibly none) when fewer are claimable. Expired claims with no
/// attempts left met on the way are recorded as failed.
pub(crate) fn claim_next_many(
    s: &mut Session,
    production: &str,
    holder: &str,
    ttl: Ttl,
    n: usize,
) -> Result<Vec<Minted>> {
    validate::batch(n)?;
    claim_next_scan(s, production, holder, ttl, n, None)
}

/// The claim-next rule for `n` claims (see [`claim_next`]); `asked`: the
/// request the claims are made under, if any.
fn claim_next_scan(
    s: &mut Session,
    production: &str,
    holder: &str,
    ttl: Ttl,
    n: usize,
    asked: Option<Asked<'_>>,
) -> Result<Vec<Minted>> {
    validate::id("production", production)?;
    validate::holder(holder)?;
    let missing = || Error::NotFound(format!("production {production:?}"));
    // One step: where reading the production also orders this claim against
    // a concurrent cancel of it, the lookup (and its lock) comes first, then
    // the clock sample; otherwise the lookup only proves the production
    // exists, which a job the scan finds proves too (productions are never
    // deleted and every job belongs to one). Jobs whose not-before time has
    // come join the scan; the others stay out of it, so the scan never
    // walks past jobs that are not due.
    let start = s.sampled(
        |txn, local| txn.claim_start(production, n, local),
        |st| st.now,
    )?;
    let now = start.now;
    if start.exists == Some(false) {
        return Err(missing());
    }
    // The claim gates (one rule, [`crate::gates`]): how many of the `n`
    // claims may be made at `now`.
    let gate = crate::gates::for_claim(s.txn.as_mut(), production, start.gated)?;
    // The gates decide at a later sample ([`crate::gates::admit`]): a row
    // claimable at the first sample still is.
    let (now, n) = match &gate {
        None => (now, n),
        Some(g) => match crate::gates::admit(s, production, g, now, n)? {
            (at, Ok(k)) => (at, k),
            (_, Err(_)) => return Ok(Vec::new()),
        },
    };
    let mut first = Some(start.rows);
    let mut cursor = None;
    let mut page = n;
    let mut out = Vec::new();
    let mut changes = Vec::new();
    'scan: loop {
        let rows = match first.take() {
            Some(rows) => rows,
            None => s
                .txn
                .live_jobs(production, cursor, page, LiveScan::Claim { now })?,
        };
        if rows.is_empty() {
            if cursor.is_none() && start.exists.is_none() && !s.txn.production_exists(production)? {
                return Err(missing());
            }
            break;
        }
        // Larger pages past the rows the rule passes over.
        page = (n - out.len()).max(64);
        for row in rows {
            cursor = Some((row.priority, row.seq));
            if not_due(&row, now).is_some() {
                continue;
            }
            match classify(&row, now) {
                JobState::Claimed => continue,
                JobState::Requested | JobState::Expired if row.attempts < row.max_attempts => {
                    let given = asked.map(|a| a.secret(out.len()));
                    let (c, m) = minted(row, holder, ttl, now, given.as_ref())?;
                    changes.push(c);
                    out.push(m);
                    if out.len() == n {
                        break 'scan;
                    }
                }
                _ => changes.push(exhausted(row, now)),
            }
        }
    }
    if let Some(a) = asked.filter(|_| !out.is_empty()) {
        record_request(s, a, &out, now)?;
    }
    if let Some(g) = &gate {
        crate::gates::charge(s.txn.as_mut(), production, g, now, out.len())?;
    }
    write_many(s, &mut changes)?;
    Ok(out)
}

/// When work not claimable now may become claimable without any commit:
/// the earliest not-before time of a requested job parked until then, or
/// the earliest expiry of a lease stored `claimed` in the production (an
/// expired lease with attempts left is claimable; one without is recorded
/// failed by the claim that meets it), whichever comes first. A waiting
/// claimant ([`crate::Authority::claim_next_wait`]) wakes then; a time
/// already past means now. `None`: only a commit can make work claimable.
///
/// Under the production's claim gates ([`crate::gates::wake_us`]) at `now`:
/// paused, `None`; over the rate, when the next claim is allowed (also the
/// time already past when the rate last began to allow one: the attempt
/// may have been refused just before it); at the concurrency
/// limit, the earliest expiry of a live lease.
///
/// `seen`: a clock reading taken before the caller's latest attempt began.
/// A time at or before it was already there for that attempt, which found
/// nothing; it counts as `now + LOOK_AGAIN_US` ([`LOOK_AGAIN_US`]), so a
/// waiter looks again later instead of at once (and a time the attempt
/// could not have seen still wakes it at once).
pub(crate) fn next_claimable_us(
    txn: &mut dyn Txn,
    production: &str,
    now: i64,
    seen: Option<i64>,
) -> Result<Option<i64>> {
    let fresh = |at: i64| match seen {
        Some(s) if at <= s => now.saturating_add(LOOK_AGAIN_US),
        _ => at,
    };
    let due = txn.earliest_due(production)?.map(fresh);
    let expiry = txn.earliest_expiry(production)?.map(fresh);
    let base = match (due, expiry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    crate::gates::wake_us(txn, production, now, base, &fresh)
}

/// How long after `now` a waiter looks again at a time its latest attempt
/// already saw ([`next_claimable_us`]): the wait's slice.
pub(crate) const LOOK_AGAIN_US: i64 = crate::wait::SLICE.as_micros() as i64;

/// The authoritative check of a claimant's lease (invariant 2): production,
/// job, current claim ID, secret digest (constant time), state and expiry.
pub(crate) fn current(txn: &mut dyn Txn, key: &LeaseKey<'_>, now: i64) -> Result<JobRow> {
    let row = txn.job(key.production, key.job)?;
    checked(row, key, now)
}

/// [`current`] on a row already read (and, in a write transaction, locked):
/// the one place a lease is checked, for single and batched transitions.
fn checked(row: Option<JobRow>, key: &LeaseKey<'_>, now: i64) -> Result<JobRow> {
    let row = row.ok_or_else(|| Error::NotFound(format!("job {}/{}", key.production, key.job)))?;
    check(&row, key, now)?;
    Ok(row)
}

/// [`checked`] on a row that exists.
fn check(row: &JobRow, key: &LeaseKey<'_>, now: i64) -> Result<()> {
    let n = name(row);
    // A lease knows its claim ID; a token carries only the secret.
    let (holder, whose) = match key.claim_id {
        Some(_) => ("this lease", "the lease's"),
        None => ("the token", "the token's"),
    };
    let claim_matches = match key.claim_id {
        Some(c) => row.claim_id == Some(c),
        None => row.claim_id.is_some(),
    };
    if !claim_matches {
        return Err(Error::StaleLease(format!(
            "job {n} is no longer held by {holder}{}",
            row.claim_id
                .map(|c| format!(" (its current claim is {c})"))
                .unwrap_or_default()
        )));
    }
    if !key.secret.matches(row.secret_digest.as_deref()) {
        return Err(Error::StaleLease(format!(
            "{whose} secret does not match the current claim of job {n}{}",
            row.claim_id
                .map(|c| format!(" (claim {c})"))
                .unwrap_or_default()
        )));
    }
    match row.state {
        Stored::Cancelled => Err(Error::Cancelled(format!("job {n} was cancelled"))),
        Stored::Completed => Err(Error::LeaseClosed(format!(
            "the lease on {n} already completed the job"
        ))),
        Stored::Requested => Err(Error::LeaseClosed(format!("the lease on {n} was released"))),
        Stored::Failed if row.last_error.as_deref() == Some(EXHAUSTED) => Err(Error::LeaseExpired(
            format!("the lease on {n} expired with no attempts left"),
        )),
        Stored::Failed => Err(Error::LeaseClosed(format!(
            "the lease on {n} already failed the job"
        ))),
        Stored::Claimed => {
            let expires = row.expires_us.unwrap_or(i64::MIN);
            if now >= expires {
                Err(Error::LeaseExpired(format!(
                    "the lease on {n} expired at {expires} µs (now {now} µs)"
                )))
            } else {
                Ok(())
            }
        }
    }
}

/// A single transition's first step: lock the job, then sample the clock
/// ([`Txn::lock_jobs_sampled`]), the sample checked against the mark.
fn locked(
    s: &mut Session,
    production: &str,
    job: &str,
    what: LockedFor,
) -> Result<(i64, Option<JobRow>)> {
    let l = locked_many(s, &[(production, job)], what)?;
    Ok((l.now, l.rows.into_iter().next().flatten()))
}

/// [`locked`] for many distinct jobs.
fn locked_many(
    s: &mut Session,
    keys: &[(&str, &str)],
    what: LockedFor,
) -> Result<crate::store::Locked> {
    let l = s.sampled(
        |txn, local| txn.lock_jobs_sampled(keys, local, what),
        |l| l.now,
    )?;
    if l.rows.len() != keys.len() {
        return Err(Error::Internal("a batched read lost rows".into()));
    }
    Ok(l)
}

/// The default back-off of a production, for [`failed`]: from what the
/// locked read brought, else read now.
fn production_backoff(
    s: &mut Session,
    read: &mut std::collections::HashMap<String, Option<Backoff>>,
    production: &str,
) -> Result<Option<Backoff>> {
    if let Some(b) = read.get(production) {
        return Ok(*b);
    }
    let b = s.txn.production(production)?.and_then(|p| p.backoff);
    read.insert(production.to_owned(), b);
    Ok(b)
}

/// One claimant transition: lock, sample, check the lease, decide, write;
/// with `replay`, a refusal is answered with `replay`'s recorded outcome
/// when the lease itself already made this transition (see
/// [`replayed_or`]: only a refusal reads more).
fn transition_or_replay<T>(
    s: &mut Session,
    key: &LeaseKey<'_>,
    decide: impl FnOnce(JobRow, i64) -> Result<(Change, T)>,
    replay: Option<impl FnOnce(&mut dyn Txn, &JobRow, i64) -> Result<Option<T>>>,
) -> Result<Applied<T>> {
    let (now, row) = locked(s, key.production, key.job, LockedFor::Transition)?;
    let kept = replay.as_ref().and(row.clone());
    match checked(row, key, now).and_then(|row| decide(row, now)) {
        Ok((c, out)) => {
            write(s, c)?;
            Ok(Applied::fresh(out))
        }
        Err(e) => replayed_or(s.txn.as_mut(), e, key, kept.as_ref(), now, replay),
    }
}

/// Many claimant transitions in one operation: `valid(i)` checks item `i`'s
/// own arguments; then one clock sample, one locked read of every job, and
/// each lease checked by [`checked`] and decided by `decide` exactly as
/// alone (`decide` gets the row's production's default back-off when
/// `backoffs` asks for it, else `None`); the accepted transitions are
/// written together. The outcome is one
/// result per item: a refused item (invalid, a second item on the same job,
/// or a lease the rules refuse) writes nothing. The outer error means the
/// whole operation failed (clock rollback, store, busy).
///
/// With `replay`, each refused item is answered with `replay(i, ..)`'s
/// recorded outcome when its lease already made the transition (see
/// [`replayed_or`]).
pub(crate) fn transition_many_applied<T>(
    s: &mut Session,
    keys: &[LeaseKey<'_>],
    backoffs: bool,
    mut valid: impl FnMut(usize) -> Result<()>,
    mut decide: impl FnMut(usize, JobRow, i64, Option<Backoff>) -> Result<(Change, T)>,
    mut replay: Option<impl FnMut(usize, &mut dyn Txn, &JobRow, i64) -> Result<Option<T>>>,
) -> Result<Vec<Result<Applied<T>>>> {
    validate::batch(keys.len())?;
    let mut out: Vec<Option<Result<Applied<T>>>> = keys.iter().map(|_| None).collect();
    let mut seen = std::collections::HashSet::new();
    let mut todo = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if let Err(e) = valid(i) {
            out[i] = Some(Err(e));
        } else if !seen.insert((k.production, k.job)) {
            out[i] = Some(Err(Error::invalid(format!(
                "job {}/{} appears more than once in this batch; only its first lease was used",
                k.production, k.job
            ))));
        } else {
            todo.push(i);
        }
    }
    if !todo.is_empty() {
        let lookup: Vec<(&str, &str)> = todo
            .iter()
            .map(|&i| (keys[i].production, keys[i].job))
            .collect();
        let crate::store::Locked {
            now,
            rows,
            backoffs: mut read,
        } = locked_many(
            s,
            &lookup,
            match backoffs {
                true => LockedFor::Failure,
                false => LockedFor::Transition,
            },
        )?;
        let mut changes = Vec::with_capacity(todo.len());
        for (&i, row) in todo.iter().zip(rows) {
            let kept = replay.as_ref().and(row.clone());
            let decided = checked(row, &keys[i], now).and_then(|row| {
                let b = match backoffs {
                    true => production_backoff(s, &mut read, &row.production)?,
                    false => None,
                };
                decide(i, row, now, b)
            });
            match decided {
                Ok((c, v)) => {
                    changes.push(c);
                    out[i] = Some(Ok(Applied::fresh(v)));
                }
                Err(e) => {
                    let r = replay
                        .as_mut()
                        .map(|f| |t: &mut dyn Txn, r: &JobRow, n| f(i, t, r, n));
                    out[i] = Some(replayed_or(
                        s.txn.as_mut(),
                        e,
                        &keys[i],
                        kept.as_ref(),
                        now,
                        r,
                    ));
                }
            }
        }
        write_many(s, &mut changes)?;
    }
    Ok(out
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(Error::Internal("a batch item got no outcome".into()))))
        .collect())
}

/// Renewal: the new expiry (sample + TTL) must be later than the current
/// one, and the commit must land before the current one.
pub(crate) fn renewed(mut row: JobRow, now: i64, ttl: Ttl) -> Result<(Change, i64)> {
    let old = row.expires_us.unwrap_or(i64::MIN);
    let wanted = now
        .checked_add(ttl.as_micros())
        .ok_or_else(|| Error::InvalidDuration("expiry overflows the clock".into()))?;
    if wanted <= old {
        return Err(Error::NotExtended(format!(
            "renewing {} by {ttl} gives {wanted} µs, not later than the current expiry {old} µs",
            name(&row)
        )));
    }
    let limit = row
        .max_hold_us
        .map(|h| row.claimed_us.unwrap_or(now).saturating_add(h));
    let new = limit.map_or(wanted, |l| wanted.min(l));
    if new <= old {
        return Err(Error::HoldLimit(format!(
            "the lease on {} cannot be renewed past its hold limit at {} µs (claimed at {} µs, \
             max hold {} µs); it expires at {old} µs",
            name(&row),
            limit.unwrap_or_default(),
            row.claimed_us.unwrap_or_default(),
            row.max_hold_us.unwrap_or_default()
        )));
    }
    let detail = if new < wanted {
        format!("capped by the hold limit at {new} µs")
    } else {
        String::new()
    };
    let what = guarded(&row, "the lease on", " being renewed");
    row.expires_us = Some(new);
    row.updated_us = now;
    let mut c = Change::new(row, EventKind::Renewed, detail);
    c.expiry_only = true;
    c.deadline = Some((old, what));
    Ok((c, new))
}

/// Renew one lease (see [`renewed`]); with `replay`, a renewal this lease already made to the
/// expiry this one asks for is answered as a replay ([`renewal_replay`]).
pub(crate) fn renew_applied(
    s: &mut Session,
    key: &LeaseKey<'_>,
    ttl: Ttl,
    replay: bool,
) -> Result<Applied<i64>> {
    let r = replay.then_some(|t: &mut dyn Txn, row: &JobRow, now| renewal_replay(t, row, now, ttl));
    transition_or_replay(s, key, |row, now| renewed(row, now, ttl), r)
}

/// The deadline of a lease that ends (release, fail, complete): its expiry.
fn ending(row: &JobRow, tail: &'static str) -> Option<(i64, Guarded)> {
    Some((
        row.expires_us.unwrap_or(i64::MIN),
        guarded(row, "the lease on", tail),
    ))
}

/// Release: back to requested (failed if that was the last attempt).
pub(crate) fn released(mut row: JobRow, now: i64) -> Result<(Change, JobState)> {
    let deadline = ending(&row, " being released");
    if row.attempts < row.max_attempts {
        row.state = Stored::Requested;
    } else {
        row.state = Stored::Failed;
        row.last_error = Some(RELEASED_LAST.to_owned());
    }
    row.updated_us = now;
    let detail = row
        .last_error
        .clone()
        .filter(|_| row.state == Stored::Failed)
        .unwrap_or_default();
    let state = row.state.as_job_state();
    let mut c = Change::new(row, EventKind::Released, detail);
    c.deadline = deadline;
    Ok((c, state))
}

/// Release one lease (see [`released`]); with `replay`, a release this lease already made is
/// answered as a replay ([`release_replay`]).
pub(crate) fn release_applied(
    s: &mut Session,
    key: &LeaseKey<'_>,
    replay: bool,
) -> Result<Applied<JobState>> {
    let r = replay.then_some(|t: &mut dyn Txn, row: &JobRow, _| release_replay(t, row));
    transition_or_replay(s, key, released, r)
}

/// Fail: back to requested if retryable and attempts remain, else failed.
/// A job back to requested is due after `retry_after` if the caller names
/// one, else after its own back-off step, else after `production_backoff`'s
/// (its production's default, read by the caller), else at once.
/// `reason` was checked with [`validate::reason`].
pub(crate) fn failed(
    mut row: JobRow,
    now: i64,
    reason: &str,
    permanent: bool,
    retry_after: Option<Delay>,
    production_backoff: Option<Backoff>,
) -> Result<(Change, JobState)> {
    let deadline = ending(&row, " being failed");
    row.state = if permanent || row.attempts >= row.max_attempts {
        Stored::Failed
    } else {
        Stored::Requested
    };
    row.updated_us = now;
    if row.state == Stored::Requested {
        let delay = retry_after
            .or_else(|| row.backoff.map(|b| b.delay_for(row.attempts)))
            .or_else(|| production_backoff.map(|b| b.delay_for(row.attempts)))
            .unwrap_or(Delay::ZERO);
        schedule(&mut row, now, delay);
    }
    row.last_error = Some(if reason.is_empty() {
        if row.state == Stored::Failed && !permanent {
            FAILED_LAST.to_owned()
        } else {
            "failed".to_owned()
        }
    } else {
        reason.to_owned()
    });
    let detail = format!(
        "{}{}{}",
        if permanent { "permanent: " } else { "" },
        row.last_error.as_deref().unwrap_or(""),
        row.due_us
            .map(|d| format!(" (retry due at {d} µs)"))
            .unwrap_or_default()
    );
    let state = row.state.as_job_state();
    let mut c = Change::new(row, EventKind::Failed, detail);
    c.deadline = deadline;
    Ok((c, state))
}

/// Fail one lease (see [`failed`]), naming a retry delay or not; with
/// `replay`, a failure this lease already recorded with the
/// same reason, permanence and retry delay is answered as a replay
/// ([`failure_replay`]).
pub(crate) fn fail_applied(
    s: &mut Session,
    key: &LeaseKey<'_>,
    reason: &str,
    permanent: bool,
    retry_after: Option<Delay>,
    replay: bool,
) -> Result<Applied<JobState>> {
    validate::reason(reason)?;
    let l = locked_many(s, &[(key.production, key.job)], LockedFor::Failure)?;
    let (now, mut read) = (l.now, l.backoffs);
    let r = replay.then_some(|t: &mut dyn Txn, row: &JobRow, _| {
        failure_replay(t, row, reason, permanent, retry_after)
    });
    let row = match checked_or_replayed(s, key, now, l.rows.into_iter().next().flatten(), r)? {
        Ok(row) => row,
        Err(replayed) => return Ok(replayed),
    };
    // The production's back-off is needed only when nothing closer decides.
    let fallback = if retry_after.is_none() && row.backoff.is_none() {
        production_backoff(s, &mut read, &row.production)?
    } else {
        None
    };
    let (c, state) = failed(row, now, reason, permanent, retry_after, fallback)?;
    write(s, c)?;
    Ok(Applied::fresh(state))
}

fn validate_execution(e: &Execution) -> Result<()> {
    if e.output_path.is_empty() || e.output_path.len() > 4096 || e.output_path.contains('\0') {
        return Err(Error::invalid(
            "execution output path must be 1-4096 bytes without NUL",
        ));
    }
    if e.output_sha256.len() != 64
        || !e
            .output_sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(Error::invalid(
            "execution output SHA-256 must be 64 lower-case hex digits",
        ));
    }
    Ok(())
}

/// Check a completion's caller facts (and execution record).
pub(crate) fn valid_completion(facts: &[Fact], exec: Option<&Execution>) -> Result<()> {
    let pairs: Vec<(&str, &str)> = facts
        .iter()
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .collect();
    validate::facts(&pairs)?;
    if let Some(e) = exec {
        validate_execution(e)?;
    }
    Ok(())
}

/// Complete: the caller's facts (checked by [`valid_completion`]), then
/// provenance, then the execution's facts, published with the completion.
/// With `derive` ([`Txn::derives_provenance`]) the provenance is left to
/// the row (`provenance_at`) instead of being written as facts.
pub(crate) fn completed(
    mut row: JobRow,
    now: i64,
    facts: &[Fact],
    exec: Option<&Execution>,
    derive: bool,
) -> Result<(Change, ())> {
    let deadline = ending(&row, " being completed");
    row.state = Stored::Completed;
    row.updated_us = now;
    let mut all: Vec<(String, String)> = facts
        .iter()
        .map(|f| (f.key.clone(), f.value.clone()))
        .collect();
    let p = |k: &str, v: String| (k.to_owned(), v);
    if derive {
        let at = u32::try_from(all.len())
            .map_err(|_| Error::Internal("too many facts for one completion".into()))?;
        row.provenance_at = Some(at);
    } else {
        let given = provenance(row.claim_id, row.holder.as_deref(), row.attempts, now);
        all.extend(given.into_iter().map(|(k, v)| p(k, v)));
    }
    if let Some(e) = exec {
        all.push(p("tenure.exec.nonce", e.nonce.to_string()));
        all.push(p("tenure.exec.output", e.output_path.clone()));
        all.push(p("tenure.exec.sha256", e.output_sha256.clone()));
        all.push(p("tenure.exec.size", e.output_size.to_string()));
        all.push(p("tenure.exec.exit_status", e.exit_status.to_string()));
    }
    let mut c = Change::new(row, EventKind::Completed, String::new());
    c.facts = all;
    c.deadline = deadline;
    Ok((c, ()))
}

/// Complete one lease and publish facts plus provenance in the same
/// transaction; an execution's nonce is accepted once. With `replay`, a
/// completion this lease already made with
/// the same facts is answered as a replay ([`completion_replay`]).
pub(crate) fn complete_applied(
    s: &mut Session,
    key: &LeaseKey<'_>,
    facts: &[Fact],
    exec: Option<&Execution>,
    replay: bool,
) -> Result<Applied<()>> {
    valid_completion(facts, exec)?;
    let (now, row) = locked(s, key.production, key.job, LockedFor::Transition)?;
    let r =
        replay.then_some(|t: &mut dyn Txn, row: &JobRow, _| completion_replay(t, row, facts, exec));
    let row = match checked_or_replayed(s, key, now, row, r)? {
        Ok(row) => row,
        Err(replayed) => return Ok(replayed),
    };
    if let Some(e) = exec {
        let claim_id = row.claim_id.unwrap_or_default();
        if !s
            .txn
            .insert_nonce(&e.nonce, &row.production, &row.job, &claim_id, now)?
        {
            return Err(Error::Conflict(format!(
                "execution nonce {} was already used",
                e.nonce
            )));
        }
    }
    let derive = s.txn.derives_provenance();
    let (c, ()) = completed(row, now, facts, exec, derive)?;
    write(s, c)?;
    Ok(Applied::fresh(()))
}

/// Coordinator cancel of one job. Cancelling a cancelled job is a no-op;
/// a completed or failed one is [`Error::JobTerminal`].
pub(crate) fn cancel(s: &mut Session, production: &str, job: &str) -> Result<CancelOutcome> {
    validate::id("production", production)?;
    validate::id("job", job)?;
    let now = s.observe_now();
    let row = job_row(s.txn.as_mut(), production, job)?;
    cancel_row(s, row, now, "cancelled by the coordinator")
}

fn cancel_row(s: &mut Session, mut row: JobRow, now: i64, why: &str) -> Result<CancelOutcome> {
    match classify(&row, now) {
        JobState::Cancelled => Ok(CancelOutcome::AlreadyCancelled),
        st @ (JobState::Completed | JobState::Failed) => Err(Error::JobTerminal(format!(
            "job {} is already {st}",
            name(&row)
        ))),
        st => {
            let detail = if st == JobState::Claimed {
                format!(
                    "{why}; lease {} is dead",
                    row.claim_id.map(|c| c.to_string()).unwrap_or_default()
                )
            } else {
                why.to_owned()
            };
            let lapsed = (st == JobState::Expired).then(|| due_moment(&row));
            row.state = Stored::Cancelled;
            row.updated_us = now;
            row.due_us = None;
            row.parked = false;
            s.txn.update_job(&row)?;
            let mut ev = event(&row, EventKind::Cancelled, now, &detail);
            ev.lapsed_us = lapsed;
            s.txn.append_event(&ev)?;
            Ok(CancelOutcome::Cancelled)
        }
    }
}

/// Cancel every non-terminal job of a production and refuse new submissions.
/// Returns how many jobs were cancelled now.
pub(crate) fn cancel_production(s: &mut Session, production: &str) -> Result<u64> {
    validate::id("production", production)?;
    let now = s.observe_now();
    production_row(s, production)?;
    // Every job must be seen, due or not: bring the parked ones into the scan.
    s.txn.unpark_due(production, i64::MAX, LiveScan::All)?;
    let mut n = 0;
    let mut cursor = None;
    loop {
        let rows = s.txn.live_jobs(production, cursor, 256, LiveScan::All)?;
        if rows.is_empty() {
            break;
        }
        for row in rows {
            cursor = Some((row.priority, row.seq));
            if classify(&row, now) == JobState::Failed {
                write(s, exhausted(row, now))?;
            } else if cancel_row(s, row, now, "production cancelled by the coordinator")?
                == CancelOutcome::Cancelled
            {
                n += 1;
            }
        }
    }
    s.txn.set_production_cancelled(production, now)?;
    let detail = format!("{n} jobs cancelled");
    s.production_event(production, EventKind::ProductionCancelled, now, &detail)?;
    Ok(n)
}

/// Set (or, with `None`, clear) a production's default retry back-off.
pub(crate) fn set_production_backoff(
    s: &mut Session,
    production: &str,
    backoff: Option<Backoff>,
) -> Result<()> {
    validate::id("production", production)?;
    s.observe_now();
    production_row(s, production)?;
    s.txn.set_production_backoff(production, backoff)
}

/// Validate a decoded token against authoritative state (read snapshot).
pub(crate) fn import(txn: &mut dyn Txn, now: i64, text: &str) -> Result<Minted> {
    let d = crate::token::decode(text)?;
    let row = current(
        txn,
        &LeaseKey {
            production: &d.production,
            job: &d.job,
            claim_id: None,
            secret: &d.secret,
        },
        now,
    )?;
    Ok(Minted {
        production: d.production,
        job: d.job,
        claim_id: row
            .claim_id
            .ok_or_else(|| Error::Internal("current claim without an ID".into()))?,
        attempt: row.attempts,
        holder: row.holder.unwrap_or_default(),
        expires_us: row.expires_us.unwrap_or_default(),
        secret: d.secret,
    })
}

/// Map an observed-state filter to the stored states that can produce it.
pub(crate) fn stored_for(state: JobState) -> &'static [Stored] {
    match state {
        JobState::Requested => &[Stored::Requested],
        JobState::Claimed | JobState::Expired => &[Stored::Claimed],
        JobState::Completed => &[Stored::Completed],
        JobState::Failed => &[Stored::Failed, Stored::Claimed],
        JobState::Cancelled => &[Stored::Cancelled],
    }
}

/// The answer to a reader that asks for events after `after` when the
/// history up to `horizon` was pruned (invariant 17).
pub(crate) fn history_available(after: u64, horizon: u64) -> Result<()> {
    if after < horizon {
        Err(Error::HistoryPruned { after, horizon })
    } else {
        Ok(())
    }
}

/// One bounded prune step on the authority's clock (a guarded sample:
/// refused on clock rollback). Removes at most `limit` rows of each kind:
/// stored-terminal jobs last changed before `now - terminal_job_age` (each
/// leaves a tombstone; live jobs are never touched), tombstones older than
/// `tombstone_age`, and the oldest events before `now - event_age` as a
/// prefix of the log, never the newest event (sequence numbers never go
/// back). Then gives free space beyond the store's slack back in a small
/// step.
pub(crate) fn prune(s: &mut Session, policy: &Retention, limit: usize) -> Result<PruneReport> {
    let now = s.guarded_sample()?;
    let limit = limit.max(1);
    let mut report = PruneReport::default();
    if let Some(age) = policy.terminal_job_age {
        let rows = s
            .txn
            .terminal_jobs_before(now.saturating_sub(age.as_micros()), limit)?;
        report.more |= rows.len() == limit;
        let stones: Vec<Tombstone> = rows
            .iter()
            .map(|r| Tombstone {
                production: r.production.clone(),
                job: r.job.clone(),
                payload_digest: r.payload_digest.clone(),
                priority: r.priority,
                max_attempts: r.max_attempts,
                max_hold_us: r.max_hold_us,
                backoff: r.backoff,
                state: r.state,
                pruned_us: now,
            })
            .collect();
        s.txn.insert_tombstones(&stones)?;
        s.txn.delete_jobs(&rows)?;
        report.jobs = rows.len() as u64;
    }
    if let Some(age) = policy.tombstone_age {
        report.tombstones = s
            .txn
            .prune_tombstones(now.saturating_sub(age.as_micros()), limit)?;
        report.more |= report.tombstones == limit as u64;
    }
    if let Some(age) = policy.event_age {
        let cutoff = now.saturating_sub(age.as_micros());
        // One more than the bound: the last row read is kept whatever its
        // age when it may be the newest event.
        let oldest = s.txn.oldest_events(limit + 1)?;
        let keep_last = oldest.len() <= limit;
        let candidates = &oldest[..oldest.len().min(limit)];
        let prunable = candidates.iter().take_while(|(_, at)| *at < cutoff).count();
        let prunable = if keep_last && prunable == oldest.len() {
            prunable.saturating_sub(1)
        } else {
            prunable
        };
        if let Some(&(through, _)) = candidates[..prunable].last() {
            report.events = s.txn.prune_events_through(through)?;
        }
        report.more |= prunable == limit;
    }
    // Every step, not only one that removed rows: after a burst the file
    // shrinks a bounded piece per step until only the slack is left.
    s.txn.reclaim_space()?;
    report.horizon = s.txn.history_horizon()?;
    Ok(report)
}

/// One step of deleting a finished production (a coordinator write, not
/// guarded). Refused with `production_live`, changing nothing, while any of
/// its jobs is observed non-terminal. The first step marks the production
/// cancelled (no new jobs); each step removes at most
/// [`DELETE_STEP_JOBS`] jobs with their facts, events and tombstones, and
/// the last removes the production. Returns what it removed and whether
/// the production is gone.
pub(crate) fn delete_production_step(
    s: &mut Session,
    production: &str,
) -> Result<(DeletedCounts, bool)> {
    validate::id("production", production)?;
    let now = s.observe_now();
    let prod = production_row(s, production)?;
    // Every live job must be seen, due or not: bring the parked ones into
    // the scan (not observable; undone if the step is refused).
    s.txn.unpark_due(production, i64::MAX, LiveScan::All)?;
    let mut cursor = None;
    loop {
        let rows = s.txn.live_jobs(production, cursor, 256, LiveScan::All)?;
        if rows.is_empty() {
            break;
        }
        for row in &rows {
            cursor = Some((row.priority, row.seq));
            let st = classify(row, now);
            if !matches!(
                st,
                JobState::Completed | JobState::Failed | JobState::Cancelled
            ) {
                return Err(Error::ProductionLive(format!(
                    "production {production:?} still has job {} {st}; cancel it or let it finish",
                    row.job
                )));
            }
        }
    }
    if prod.cancelled_us.is_none() {
        s.txn.set_production_cancelled(production, now)?;
    }
    let mut counts = DeletedCounts::default();
    let rows = s.txn.jobs_page(production, None, None, DELETE_STEP_JOBS)?;
    counts.facts = s.txn.delete_jobs(&rows)?;
    counts.jobs = rows.len() as u64;
    counts.events = s
        .txn
        .delete_production_events(production, DELETE_STEP_JOBS * 4)?;
    let done = rows.len() < DELETE_STEP_JOBS && counts.events < (DELETE_STEP_JOBS * 4) as u64;
    if done {
        counts.tombstones = s.txn.delete_production_tombstones(production)?;
        s.txn.delete_production(production)?;
    }
    s.txn.reclaim_space()?;
    Ok((counts, done))
}

// ---------------------------------------------------------------------------
// Idempotent calls (docs/design.md, "Idempotent calls"): claims under a
// request ID, and transitions answered with what their lease recorded.

/// The message prefix of the `busy` refusal of a claim whose request ID a
/// concurrent claim took first: retrying the same request answers with
/// that claim ([`crate::retry`] retries it automatically).
pub(crate) const REQUEST_RACE: &str = "another claim under the same request ID";

/// The digest of a claim's arguments, compared with a retry's: the kind
/// of call, its target (the named job; the batch size of a claim-next-many),
/// the holder and the TTL.
fn request_args(kind: &str, target: &str, holder: &str, ttl: Ttl) -> Vec<u8> {
    let mut h = Sha256::new();
    for part in [kind, target, holder, &ttl.as_micros().to_string()] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().to_vec()
}

/// Claims under `asked` already made, up to `n` of them: `Ok(None)` if the
/// request ID is new; `conflict` if it was used with other arguments or
/// another secret; else one slot per claim made, in order: the claim while
/// it is current (nothing changes), or its own refusal ([`checked`]:
/// `stale_lease`, `lease_expired`, `lease_closed`, `cancelled`; `not_found`
/// for a member whose job was deleted since), checked at `now(s)`, which is
/// asked for only when the request ID was used.
fn claim_replay(
    s: &mut Session,
    production: &str,
    asked: Asked<'_>,
    n: usize,
    now: impl FnOnce(&mut Session) -> Result<i64>,
) -> Result<Option<Vec<Result<Minted>>>> {
    let ids: Vec<String> = (0..n).map(|i| asked.member_id(i)).collect();
    let rows = s.txn.claim_requests(production, &ids)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let id = asked.req.request_id();
    let mut found: Vec<Option<RequestRow>> = ids.iter().map(|_| None).collect();
    for r in rows {
        let Some(i) = ids.iter().position(|m| *m == r.request_id) else {
            continue;
        };
        if r.args_digest != asked.args {
            return Err(Error::Conflict(format!(
                "request ID {id:?} of production {production:?} was used for a claim with other \
                 arguments"
            )));
        }
        if !asked.secret(i).matches(Some(&r.secret_digest)) {
            return Err(Error::Conflict(format!(
                "request ID {id:?} of production {production:?} was used with another secret"
            )));
        }
        found[i] = Some(r);
    }
    let now = now(s)?;
    let made = found
        .iter()
        .rposition(Option::is_some)
        .map_or(0, |last| last + 1);
    let mut out = Vec::with_capacity(made);
    for (i, r) in found.into_iter().take(made).enumerate() {
        let Some(r) = r else {
            out.push(Err(Error::NotFound(format!(
                "the job claimed under request ID {id:?} (member {i}) of production \
                 {production:?} was deleted"
            ))));
            continue;
        };
        let secret = asked.secret(i);
        let key = LeaseKey {
            production,
            job: &r.job,
            claim_id: Some(r.claim_id),
            secret: &secret,
        };
        out.push(current(s.txn.as_mut(), &key, now).map(|row| Minted {
            production: r.production,
            job: r.job,
            claim_id: r.claim_id,
            attempt: row.attempts,
            holder: row.holder.unwrap_or_default(),
            expires_us: row.expires_us.unwrap_or_default(),
            secret,
        }));
    }
    Ok(Some(out))
}

/// [`claim_replay`] of a single claim: its lease, or its refusal as the
/// call's error.
fn claim_replay_one(
    s: &mut Session,
    production: &str,
    asked: Asked<'_>,
    now: impl FnOnce(&mut Session) -> Result<i64>,
) -> Result<Option<Minted>> {
    match claim_replay(s, production, asked, 1, now)? {
        Some(v) => v.into_iter().next().transpose(),
        None => Ok(None),
    }
}

/// Record the claims `ms` made under `asked` (claim `i` under
/// [`Asked::member_id`]`(i)`); a concurrent claim that took the request ID
/// first makes this one `busy` (rolled back: the retry answers with that
/// claim).
fn record_request(s: &mut Session, asked: Asked<'_>, ms: &[Minted], now: i64) -> Result<()> {
    let rows: Vec<RequestRow> = ms
        .iter()
        .enumerate()
        .map(|(i, m)| RequestRow {
            production: m.production.clone(),
            request_id: asked.member_id(i),
            job: m.job.clone(),
            claim_id: m.claim_id,
            secret_digest: m.secret.digest().to_vec(),
            args_digest: asked.args.to_vec(),
            created_us: now,
        })
        .collect();
    if s.txn.insert_claim_requests(&rows)? {
        Ok(())
    } else {
        Err(Error::Busy(format!(
            "{REQUEST_RACE} {:?} committed first; retry to get its lease",
            asked.req.request_id()
        )))
    }
}

/// Claim a named job under a request ID (see [`ClaimRequest`]).
pub(crate) fn claim_idempotent(
    s: &mut Session,
    production: &str,
    job: &str,
    holder: &str,
    ttl: Ttl,
    req: &ClaimRequest,
) -> Result<Applied<Minted>> {
    validate::id("production", production)?;
    validate::id("job", job)?;
    validate::holder(holder)?;
    validate::id("request ID", req.request_id())?;
    // The job's lock first: a claim under this request that is still
    // committing elsewhere (its answer lost) has then committed, and its
    // record is visible to the lookup.
    let (now, row) = locked(s, production, job, LockedFor::Claim)?;
    let args = request_args("claim", job, holder, ttl);
    let asked = Asked {
        req,
        args: &args,
        batch: false,
    };
    if let Some(m) = claim_replay_one(s, production, asked, |_| Ok(now))? {
        return Ok(Applied::replay(m));
    }
    let m = claim_locked(s, production, job, (now, row), holder, ttl, Some(asked))?;
    Ok(Applied::fresh(m))
}

/// Claim-next under a request ID (see [`ClaimRequest`]); `Ok(None)` inside
/// when nothing is claimable (the request ID stays unused).
pub(crate) fn claim_next_idempotent(
    s: &mut Session,
    production: &str,
    holder: &str,
    ttl: Ttl,
    req: &ClaimRequest,
) -> Result<Applied<Option<Minted>>> {
    validate::id("production", production)?;
    validate::holder(holder)?;
    validate::id("request ID", req.request_id())?;
    let args = request_args("claim-next", "", holder, ttl);
    let asked = Asked {
        req,
        args: &args,
        batch: false,
    };
    // A new request ID (the usual case) needs no clock sample of its own:
    // the scan takes one.
    let sampled = |s: &mut Session| s.guarded_sample();
    if let Some(m) = claim_replay_one(s, production, asked, sampled)? {
        return Ok(Applied::replay(Some(m)));
    }
    let m = claim_next_scan(s, production, holder, ttl, 1, Some(asked))?.pop();
    Ok(Applied::fresh(m))
}

/// Claim-next-many under a request ID (see [`ClaimRequest`]): claim `i`
/// carries the secret derived from the request's for `i`, and is recorded
/// under its own member ID ([`Asked`]). A fresh call's claims are all `Ok`
/// (none claimable: empty, the request ID stays unused); a replay answers
/// each claim made as [`claim_replay`] does: current, or its own refusal.
pub(crate) fn claim_next_many_idempotent(
    s: &mut Session,
    production: &str,
    holder: &str,
    ttl: Ttl,
    n: usize,
    req: &ClaimRequest,
) -> Result<Applied<Vec<Result<Minted>>>> {
    validate::batch(n)?;
    validate::id("production", production)?;
    validate::holder(holder)?;
    validate::id("request ID", req.request_id())?;
    let args = request_args("claim-next-many", &n.to_string(), holder, ttl);
    let asked = Asked {
        req,
        args: &args,
        batch: true,
    };
    let sampled = |s: &mut Session| s.guarded_sample();
    if let Some(v) = claim_replay(s, production, asked, n, sampled)? {
        return Ok(Applied::replay(v));
    }
    let ms = claim_next_scan(s, production, holder, ttl, n, Some(asked))?;
    Ok(Applied::fresh(ms.into_iter().map(Ok).collect()))
}

/// Whether the refusal `e` of a claimant transition may be a replay: the
/// lease has ended (`lease_closed`) or a renewal moved nothing
/// (`not_extended`, `hold_limit`) while the lease is still the job's
/// claim with the same secret digest. Then `replay` compares what the
/// lease recorded with what this call asks: `Some` is the recorded outcome
/// (a replay, nothing changes), `None` keeps the refusal, an error (a
/// `conflict`: the same lease recorded other facts) replaces it. Every
/// other refusal stands.
fn replayed_or<T>(
    txn: &mut dyn Txn,
    e: Error,
    key: &LeaseKey<'_>,
    row: Option<&JobRow>,
    now: i64,
    replay: Option<impl FnOnce(&mut dyn Txn, &JobRow, i64) -> Result<Option<T>>>,
) -> Result<Applied<T>> {
    let eligible = matches!(
        e,
        Error::LeaseClosed(_) | Error::NotExtended(_) | Error::HoldLimit(_)
    );
    match (replay, row) {
        (Some(f), Some(row))
            if eligible
                && key.claim_id.is_some()
                && row.claim_id == key.claim_id
                && key.secret.matches(row.secret_digest.as_deref()) =>
        {
            match f(txn, row, now)? {
                Some(v) => Ok(Applied::replay(v)),
                None => Err(e),
            }
        }
        _ => Err(e),
    }
}

/// Check the lease's row `row` (read and locked by [`locked`]) as
/// [`checked`] does: `Ok(Ok(row))` to transition, `Ok(Err(replay))` when
/// `replay` answered a refusal as [`replayed_or`] says, `Err` the refusal.
fn checked_or_replayed<T>(
    s: &mut Session,
    key: &LeaseKey<'_>,
    now: i64,
    row: Option<JobRow>,
    replay: Option<impl FnOnce(&mut dyn Txn, &JobRow, i64) -> Result<Option<T>>>,
) -> Result<std::result::Result<JobRow, Applied<T>>> {
    let Some(row) = row else {
        return checked(None, key, now).map(Ok);
    };
    match check(&row, key, now) {
        Ok(()) => Ok(Ok(row)),
        Err(e) => replayed_or(s.txn.as_mut(), e, key, Some(&row), now, replay).map(Err),
    }
}

/// The event with which this row's claim last changed it, if it is the
/// job's latest change (an event pruned since answers nothing).
fn ending_event(txn: &mut dyn Txn, row: &JobRow) -> Result<Option<crate::model::Event>> {
    let Some(claim) = row.claim_id else {
        return Ok(None);
    };
    Ok(txn
        .last_claim_event(&row.production, &row.job, &claim)?
        .filter(|ev| ev.at_us == row.updated_us))
}

/// A renewal refused because the lease already has the expiry this one
/// asks for (`min(now + ttl, hold limit)`), set by its own latest renewal:
/// that expiry.
pub(crate) fn renewal_replay(
    txn: &mut dyn Txn,
    row: &JobRow,
    now: i64,
    ttl: Ttl,
) -> Result<Option<i64>> {
    let current = row.expires_us.unwrap_or(i64::MIN);
    let wanted = now.saturating_add(ttl.as_micros());
    let limit = row
        .max_hold_us
        .map(|h| row.claimed_us.unwrap_or(now).saturating_add(h));
    let target = limit.map_or(wanted, |l| wanted.min(l));
    if target != current {
        return Ok(None);
    }
    Ok(ending_event(txn, row)?
        .filter(|ev| ev.kind == EventKind::Renewed && ev.expires_us == Some(current))
        .map(|_| current))
}

/// A release this lease already made: the state it left.
pub(crate) fn release_replay(txn: &mut dyn Txn, row: &JobRow) -> Result<Option<JobState>> {
    Ok(ending_event(txn, row)?
        .filter(|ev| ev.kind == EventKind::Released)
        .map(|_| row.state.as_job_state()))
}

/// A failure this lease already recorded: the state it left if the reason,
/// permanence and retry delay are the same, `conflict` if they differ.
pub(crate) fn failure_replay(
    txn: &mut dyn Txn,
    row: &JobRow,
    reason: &str,
    permanent: bool,
    retry_after: Option<Delay>,
) -> Result<Option<JobState>> {
    let Some(ev) = ending_event(txn, row)?.filter(|ev| ev.kind == EventKind::Failed) else {
        return Ok(None);
    };
    let was_permanent = ev.detail.starts_with("permanent: ");
    let recorded = row.last_error.as_deref().unwrap_or("");
    let same_reason = if reason.is_empty() {
        recorded == "failed" || recorded == FAILED_LAST
    } else {
        recorded == reason
    };
    let same_delay = match retry_after {
        None => true,
        Some(d) if row.state == Stored::Requested => {
            row.due_us.unwrap_or(row.updated_us) == row.updated_us.saturating_add(d.as_micros())
        }
        Some(_) => true,
    };
    if was_permanent == permanent && same_reason && same_delay {
        Ok(Some(row.state.as_job_state()))
    } else {
        Err(Error::Conflict(format!(
            "the lease on {} already failed the job with another reason, permanence or retry delay",
            name(row)
        )))
    }
}

/// A completion this lease already made: `Some(())` if its caller facts
/// (and execution record) are the ones given, `conflict` if they differ.
pub(crate) fn completion_replay(
    txn: &mut dyn Txn,
    row: &JobRow,
    facts: &[Fact],
    exec: Option<&Execution>,
) -> Result<Option<()>> {
    if row.state != Stored::Completed {
        return Ok(None);
    }
    let stored = txn.facts(&row.production, Some(&row.job))?;
    let mut had: Vec<(&str, &str)> = stored
        .iter()
        .filter(|f| !f.key.starts_with("tenure.") || f.key.starts_with("tenure.exec."))
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .collect();
    let exec_facts: Vec<(String, String)> = exec
        .map(|e| {
            vec![
                ("tenure.exec.nonce".to_owned(), e.nonce.to_string()),
                ("tenure.exec.output".to_owned(), e.output_path.clone()),
                ("tenure.exec.sha256".to_owned(), e.output_sha256.clone()),
                ("tenure.exec.size".to_owned(), e.output_size.to_string()),
                (
                    "tenure.exec.exit_status".to_owned(),
                    e.exit_status.to_string(),
                ),
            ]
        })
        .unwrap_or_default();
    let mut asked: Vec<(&str, &str)> = facts
        .iter()
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .chain(exec_facts.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .collect();
    had.sort_unstable();
    asked.sort_unstable();
    if had == asked {
        Ok(Some(()))
    } else {
        Err(Error::Conflict(format!(
            "the lease on {} already completed the job with other facts",
            name(row)
        )))
    }
}
