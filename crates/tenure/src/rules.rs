//! Every rule of the lease authority, written once against the storage traits.
//!
//! Each function here runs inside a [`Session`] operation (one savepoint of a
//! write transaction holding the writer lock) or a read snapshot. The public
//! API, the C ABI, C++, Python and the CLI all reach the store through these
//! functions only.

use crate::error::{Error, Result};
use crate::model::{Cancelled, EventKind, Execution, Fact, JobSpec, JobState, JobView, Submitted};
use crate::secret::Secret;
use crate::session::Session;
use crate::store::{JobRow, LiveScan, NewEvent, ProductionRow, Stored, Txn};
use crate::ttl::{Backoff, Delay, Ttl};
use crate::validate;
use sha2::{Digest, Sha256};
use uuid::Uuid;

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

/// The earliest time at which something may change for claim-next in a
/// production without anyone writing: the earliest not-before time of a
/// requested job still waiting for it, or the earliest expiry of a claimed
/// job, whichever comes first (`None` if there is neither). For callers
/// that wait for claimable work; a time already past means "now".
pub(crate) fn next_due_us(txn: &mut dyn Txn, production: &str) -> Result<Option<i64>> {
    validate::id("production", production)?;
    let (due, expiry) = txn.next_times(production)?;
    Ok(match (due, expiry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

fn name(row: &JobRow) -> String {
    format!("{}/{}", row.production, row.job)
}

fn event<'a>(row: &'a JobRow, kind: EventKind, at_us: i64, detail: &'a str) -> NewEvent<'a> {
    let live = row.state == Stored::Claimed;
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
    s.txn.append_event(&NewEvent {
        at_us: now,
        production,
        job: None,
        kind: EventKind::ProductionCreated,
        state: None,
        claim_id: None,
        holder: None,
        attempt: None,
        expires_us: None,
        detail: "",
    })?;
    Ok(true)
}

/// Submit a job: same ID and content is `Existing`; different content is a conflict.
pub(crate) fn submit(s: &mut Session, production: &str, spec: &JobSpec) -> Result<Submitted> {
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
    let now = s.observe_now();
    let prod = production_row(s, production)?;
    let digest = Sha256::digest(&spec.payload).to_vec();
    if let Some(existing) = s.txn.job(production, &spec.job)? {
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
        return if diff.is_empty() {
            Ok(Submitted::Existing)
        } else {
            Err(Error::Conflict(format!(
                "job {production}/{} already exists with a different {}",
                spec.job,
                diff.join(", ")
            )))
        };
    }
    if prod.cancelled_us.is_some() {
        return Err(Error::Cancelled(format!(
            "production {production:?} was cancelled; it takes no new jobs"
        )));
    }
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
    };
    schedule(&mut row, now, spec.not_before.unwrap_or_default());
    row.seq = s.txn.insert_job(&row, &spec.payload)?;
    let detail = row
        .due_us
        .map(|d| {
            format!(
                "due at {d} µs (after {})",
                spec.not_before.unwrap_or_default()
            )
        })
        .unwrap_or_default();
    s.txn
        .append_event(&event(&row, EventKind::Submitted, now, &detail))?;
    Ok(Submitted::Created)
}

/// Record an expired claim with no attempts left (or a requested job with
/// none) as failed.
fn exhaust(s: &mut Session, mut row: JobRow, now: i64) -> Result<()> {
    row.state = Stored::Failed;
    row.updated_us = now;
    row.last_error = Some(EXHAUSTED.to_owned());
    s.txn.update_job(&row)?;
    s.txn
        .append_event(&event(&row, EventKind::Exhausted, now, EXHAUSTED))?;
    Ok(())
}

fn mint(s: &mut Session, mut row: JobRow, holder: &str, ttl: Ttl, now: i64) -> Result<Minted> {
    let previous = (classify(&row, now) == JobState::Expired)
        .then_some(row.claim_id)
        .flatten();
    let secret = Secret::generate()?;
    let claim_id = Uuid::new_v4();
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
    s.txn.update_job(&row)?;
    let mut detail = previous
        .map(|p| format!("reclaimed after claim {p} expired"))
        .unwrap_or_default();
    if let Some(l) = limit {
        if !detail.is_empty() {
            detail.push_str("; ");
        }
        detail.push_str(&format!("hold limit at {l} µs"));
    }
    s.txn
        .append_event(&event(&row, EventKind::Claimed, now, &detail))?;
    s.deadline(expires, format!("the new claim on {}", name(&row)));
    Ok(Minted {
        production: row.production,
        job: row.job,
        claim_id,
        attempt: row.attempts,
        holder: holder.to_owned(),
        expires_us: expires,
        secret,
    })
}

/// Claim a named job.
pub(crate) fn claim(
    s: &mut Session,
    production: &str,
    job: &str,
    holder: &str,
    ttl: Ttl,
) -> Result<Minted> {
    validate::id("production", production)?;
    validate::id("job", job)?;
    validate::holder(holder)?;
    let now = s.guarded_sample()?;
    let row = job_row(s.txn.as_mut(), production, job)?;
    if let Some(due) = not_due(&row, now) {
        return Err(Error::NotClaimable(format!(
            "job {} is not due until {due} µs (now {now} µs)",
            name(&row)
        )));
    }
    match classify(&row, now) {
        JobState::Requested | JobState::Expired if row.attempts < row.max_attempts => {
            mint(s, row, holder, ttl, now)
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
    validate::id("production", production)?;
    validate::holder(holder)?;
    let now = s.guarded_sample()?;
    // Where reading the production also orders this claim against a
    // concurrent cancel of it, the lookup comes before the scan; otherwise it
    // only proves the production exists, which a job the scan finds proves
    // too (productions are never deleted and every job belongs to one).
    let looked_up = s.txn.production_lookup_locks();
    if looked_up {
        production_row(s, production)?;
    }
    // Jobs whose not-before time has come join the scan; the others stay
    // out of it, so the scan never walks past jobs that are not due.
    s.txn.unpark_due(production, now, LiveScan::Claim { now })?;
    let mut cursor = None;
    // The head of the queue is almost always claimable (the scan already
    // leaves out leases still held): read one row first, then larger pages
    // past the rows the rule passes over.
    let mut page = 1;
    loop {
        let rows = s
            .txn
            .live_jobs(production, cursor, page, LiveScan::Claim { now })?;
        if rows.is_empty() {
            if cursor.is_none() && !looked_up {
                production_row(s, production)?;
            }
            return Ok(None);
        }
        page = 64;
        for row in rows {
            cursor = Some((row.priority, row.seq));
            if not_due(&row, now).is_some() {
                continue;
            }
            match classify(&row, now) {
                JobState::Claimed => continue,
                JobState::Requested | JobState::Expired if row.attempts < row.max_attempts => {
                    return mint(s, row, holder, ttl, now).map(Some);
                }
                _ => exhaust(s, row, now)?,
            }
        }
    }
}

/// The authoritative check of a claimant's lease (invariant 2): production,
/// job, current claim ID, secret digest (constant time), state and expiry.
pub(crate) fn current(txn: &mut dyn Txn, key: &LeaseKey<'_>, now: i64) -> Result<JobRow> {
    let row = job_row(txn, key.production, key.job)?;
    let n = name(&row);
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
                Ok(row)
            }
        }
    }
}

/// Renew: the new expiry is `min(sample + TTL, claim time + max hold)`; it
/// must be later than the current one (`not_extended` when sample + TTL is
/// not, `hold_limit` when only the hold limit stops it), and the commit must
/// land before the current one.
pub(crate) fn renew(s: &mut Session, key: &LeaseKey<'_>, ttl: Ttl) -> Result<i64> {
    let now = s.guarded_sample()?;
    let mut row = current(s.txn.as_mut(), key, now)?;
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
    let capped = new < wanted;
    s.deadline(old, format!("the lease on {} being renewed", name(&row)));
    row.expires_us = Some(new);
    row.updated_us = now;
    s.txn.update_expiry(&row)?;
    let detail = if capped {
        format!("capped by the hold limit at {new} µs")
    } else {
        String::new()
    };
    s.txn
        .append_event(&event(&row, EventKind::Renewed, now, &detail))?;
    Ok(new)
}

/// Release: back to requested (failed if that was the last attempt).
pub(crate) fn release(s: &mut Session, key: &LeaseKey<'_>) -> Result<JobState> {
    let now = s.guarded_sample()?;
    let mut row = current(s.txn.as_mut(), key, now)?;
    s.deadline(
        row.expires_us.unwrap_or(i64::MIN),
        format!("the lease on {} being released", name(&row)),
    );
    if row.attempts < row.max_attempts {
        row.state = Stored::Requested;
    } else {
        row.state = Stored::Failed;
        row.last_error = Some(RELEASED_LAST.to_owned());
    }
    row.updated_us = now;
    s.txn.update_job(&row)?;
    let detail = row
        .last_error
        .clone()
        .filter(|_| row.state == Stored::Failed);
    s.txn.append_event(&event(
        &row,
        EventKind::Released,
        now,
        detail.as_deref().unwrap_or(""),
    ))?;
    Ok(row.state.as_job_state())
}

/// Fail: back to requested if retryable and attempts remain, else failed.
/// A job back to requested is due after `retry_after` if the caller names
/// one, else after its own back-off step, else after its production's, else
/// at once.
pub(crate) fn fail(
    s: &mut Session,
    key: &LeaseKey<'_>,
    reason: &str,
    permanent: bool,
    retry_after: Option<Delay>,
) -> Result<JobState> {
    validate::reason(reason)?;
    let now = s.guarded_sample()?;
    let mut row = current(s.txn.as_mut(), key, now)?;
    s.deadline(
        row.expires_us.unwrap_or(i64::MIN),
        format!("the lease on {} being failed", name(&row)),
    );
    row.state = if permanent || row.attempts >= row.max_attempts {
        Stored::Failed
    } else {
        Stored::Requested
    };
    row.updated_us = now;
    if row.state == Stored::Requested {
        let delay = match retry_after.or_else(|| row.backoff.map(|b| b.delay_for(row.attempts))) {
            Some(d) => d,
            None => production_row(s, &row.production)?
                .backoff
                .map_or(Delay::ZERO, |b: Backoff| b.delay_for(row.attempts)),
        };
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
    s.txn.update_job(&row)?;
    let detail = format!(
        "{}{}{}",
        if permanent { "permanent: " } else { "" },
        row.last_error.as_deref().unwrap_or(""),
        row.due_us
            .map(|d| format!(" (retry due at {d} µs)"))
            .unwrap_or_default()
    );
    s.txn
        .append_event(&event(&row, EventKind::Failed, now, &detail))?;
    Ok(row.state.as_job_state())
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

/// Complete and publish facts plus provenance in the same transaction.
pub(crate) fn complete(
    s: &mut Session,
    key: &LeaseKey<'_>,
    facts: &[Fact],
    exec: Option<&Execution>,
) -> Result<()> {
    let pairs: Vec<(&str, &str)> = facts
        .iter()
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .collect();
    validate::facts(&pairs)?;
    if let Some(e) = exec {
        validate_execution(e)?;
    }
    let now = s.guarded_sample()?;
    let mut row = current(s.txn.as_mut(), key, now)?;
    s.deadline(
        row.expires_us.unwrap_or(i64::MIN),
        format!("the lease on {} being completed", name(&row)),
    );
    let claim_id = row.claim_id.unwrap_or_default();
    if let Some(e) = exec {
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
    row.state = Stored::Completed;
    row.updated_us = now;
    s.txn.update_job(&row)?;
    let claim_s = claim_id.to_string();
    let attempt_s = row.attempts.to_string();
    let now_s = now.to_string();
    let mut all = pairs;
    all.push(("tenure.claim_id", &claim_s));
    all.push(("tenure.holder", row.holder.as_deref().unwrap_or("")));
    all.push(("tenure.attempt", &attempt_s));
    all.push(("tenure.completed_us", &now_s));
    let (nonce_s, size_s, exit_s);
    if let Some(e) = exec {
        nonce_s = e.nonce.to_string();
        size_s = e.output_size.to_string();
        exit_s = e.exit_status.to_string();
        all.push(("tenure.exec.nonce", &nonce_s));
        all.push(("tenure.exec.output", &e.output_path));
        all.push(("tenure.exec.sha256", &e.output_sha256));
        all.push(("tenure.exec.size", &size_s));
        all.push(("tenure.exec.exit_status", &exit_s));
    }
    s.txn.insert_facts(&row.production, &row.job, &all)?;
    s.txn
        .append_event(&event(&row, EventKind::Completed, now, ""))?;
    Ok(())
}

/// Coordinator cancel of one job. Cancelling a cancelled job is a no-op;
/// a completed or failed one is [`Error::JobTerminal`].
pub(crate) fn cancel(s: &mut Session, production: &str, job: &str) -> Result<Cancelled> {
    validate::id("production", production)?;
    validate::id("job", job)?;
    let now = s.observe_now();
    let row = job_row(s.txn.as_mut(), production, job)?;
    cancel_row(s, row, now, "cancelled by the coordinator")
}

fn cancel_row(s: &mut Session, mut row: JobRow, now: i64, why: &str) -> Result<Cancelled> {
    match classify(&row, now) {
        JobState::Cancelled => Ok(Cancelled::AlreadyCancelled),
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
            row.state = Stored::Cancelled;
            row.updated_us = now;
            row.due_us = None;
            row.parked = false;
            s.txn.update_job(&row)?;
            s.txn
                .append_event(&event(&row, EventKind::Cancelled, now, &detail))?;
            Ok(Cancelled::Cancelled)
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
                exhaust(s, row, now)?;
            } else if cancel_row(s, row, now, "production cancelled by the coordinator")?
                == Cancelled::Cancelled
            {
                n += 1;
            }
        }
    }
    s.txn.set_production_cancelled(production, now)?;
    let detail = format!("{n} jobs cancelled");
    s.txn.append_event(&NewEvent {
        at_us: now,
        production,
        job: None,
        kind: EventKind::ProductionCancelled,
        state: None,
        claim_id: None,
        holder: None,
        attempt: None,
        expires_us: None,
        detail: &detail,
    })?;
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
