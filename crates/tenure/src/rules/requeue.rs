//! Requeue (docs/design.md, "Requeue"): a coordinator puts a failed or
//! cancelled job back to waiting with attempts to spend.

use super::{classify, event, name, production_row, schedule};
use crate::error::{Error, Result};
use crate::model::{EventKind, JobState};
use crate::session::Session;
use crate::store::{JobRow, ProductionRow, Stored};
use crate::ttl::Delay;
use crate::validate;

/// What a requeue gives the job: `None` a fresh budget (its
/// `max_attempts`), `Some(n)` `n` attempts (1 ..= 1000, at most its
/// `max_attempts`).
pub(crate) type Extra = Option<u32>;

fn valid(production: &str, extra: Extra) -> Result<()> {
    validate::id("production", production)?;
    if let Some(n) = extra {
        validate::extra_attempts(n)?;
    }
    Ok(())
}

/// The production of a requeue: it must exist and not be cancelled.
fn open_production(s: &mut Session, production: &str) -> Result<ProductionRow> {
    let prod = production_row(s, production)?;
    if prod.cancelled_us.is_some() {
        return Err(Error::Cancelled(format!(
            "production {production:?} was cancelled; its jobs cannot be requeued"
        )));
    }
    Ok(prod)
}

/// Whether `row` may be requeued at `now`: failed (permanently, on its last
/// attempt, or a lease that expired with none left) or cancelled.
fn refusal(row: &JobRow, now: i64) -> Option<Error> {
    match classify(row, now) {
        JobState::Failed | JobState::Cancelled => None,
        JobState::Completed => Some(Error::JobTerminal(format!(
            "job {} is completed; only a failed or cancelled job can be requeued",
            name(row)
        ))),
        st => Some(Error::JobLive(format!(
            "job {} is {st}; only a failed or cancelled job can be requeued",
            name(row)
        ))),
    }
}

/// Write the requeue of a row [`refusal`] accepted: requested, `attempts`
/// set so that `extra` claims remain, the last claim forgotten (a lease of
/// it is stale from now on), due after `delay`. Its events, facts, last
/// error and progress checkpoint stay.
fn requeued(s: &mut Session, mut row: JobRow, now: i64, extra: Extra, delay: Delay) -> Result<()> {
    let left = extra.map_or(row.max_attempts, |n| n.min(row.max_attempts));
    let was = classify(&row, now);
    row.attempts = row.max_attempts - left;
    row.state = Stored::Requested;
    row.claim_id = None;
    row.secret_digest = None;
    row.holder = None;
    row.claimed_us = None;
    row.expires_us = None;
    row.updated_us = now;
    schedule(&mut row, now, delay);
    let detail = format!(
        "{was} job back to waiting with {left} attempts{}",
        row.due_us
            .map(|d| format!(" (due at {d} µs)"))
            .unwrap_or_default()
    );
    s.txn.update_job(&row)?;
    s.txn
        .append_event(&event(&row, EventKind::Requeued, now, &detail))?;
    if !row.parked {
        s.work_ready(&row.production);
    }
    Ok(())
}

/// Requeue one failed or cancelled job: `job_live` for a job that is
/// waiting, claimed or expired with attempts left; `job_terminal` for a
/// completed one; `cancelled` in a cancelled production; `not_found` for
/// an unknown production or job.
pub(crate) fn requeue(
    s: &mut Session,
    production: &str,
    job: &str,
    extra: Extra,
    delay: Delay,
) -> Result<()> {
    valid(production, extra)?;
    validate::id("job", job)?;
    let now = s.observe_now();
    open_production(s, production)?;
    let row = s
        .txn
        .job(production, job)?
        .ok_or_else(|| Error::NotFound(format!("job {production}/{job}")))?;
    if let Some(e) = refusal(&row, now) {
        return Err(e);
    }
    requeued(s, row, now, extra, delay)
}

/// Requeue up to `limit` (1 ..= [`validate::MAX_BATCH`]) of the
/// production's failed or cancelled jobs, by job ID, each as [`requeue`]
/// does. Returns how many were requeued and whether more remain.
pub(crate) fn requeue_all(
    s: &mut Session,
    production: &str,
    extra: Extra,
    delay: Delay,
    limit: usize,
) -> Result<(u64, bool)> {
    valid(production, extra)?;
    validate::batch(limit)?;
    let now = s.observe_now();
    open_production(s, production)?;
    // A lease that expired on its last attempt is stored claimed.
    let states = [Stored::Failed, Stored::Cancelled, Stored::Claimed];
    let mut after: Option<String> = None;
    let mut done = 0u64;
    loop {
        let rows = s
            .txn
            .jobs_page(production, Some(&states), after.as_deref(), 256)?;
        let Some(last) = rows.last() else {
            return Ok((done, false));
        };
        after = Some(last.job.clone());
        for row in rows {
            if refusal(&row, now).is_some() {
                continue;
            }
            if done == limit as u64 {
                return Ok((done, true));
            }
            // Read again with its lock: a concurrent writer may have moved it.
            let Some(row) = s.txn.job(production, &row.job)? else {
                continue;
            };
            if refusal(&row, now).is_none() {
                requeued(s, row, now, extra, delay)?;
                done += 1;
            }
        }
    }
}
