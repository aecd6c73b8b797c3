//! Productions and jobs: their rows, claim-next's scan, parking and listings.

use crate::error::{Error, Result};
use crate::store::sqlite::conn::{Conn, Hot};
use crate::store::sqlite::rows::{collect, ended_us, job_row, one_row, production_row, uuid_text};
use crate::store::sqlite::sql::{job_cols, UPDATE_ENDED_JOB_SQL};
use crate::store::{
    backoff_cols, rate_from_cols, GateRow, JobRow, LiveScan, ProductionRow, Stored,
};
use crate::ttl::Backoff;
use rusqlite::{params, Connection, OptionalExtension};

pub(super) fn production(c: &Connection, name: &str) -> Result<Option<ProductionRow>> {
    let mut st = c.prepare_cached(
        "SELECT name, created_us, cancelled_us, backoff_base_us, backoff_cap_us
         FROM productions WHERE name = ?1",
    )?;
    Ok(st.query_row([name], production_row).optional()?)
}

pub(super) fn insert_production(c: &Connection, row: &ProductionRow) -> Result<()> {
    let mut st = c.prepare_cached(
        "INSERT INTO productions (name, created_us, cancelled_us, backoff_base_us,
             backoff_cap_us) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let (base, cap) = backoff_cols(row.backoff);
    st.execute(params![
        row.name,
        row.created_us,
        row.cancelled_us,
        base,
        cap
    ])?;
    Ok(())
}

pub(super) fn set_production_backoff(
    c: &Connection,
    name: &str,
    backoff: Option<Backoff>,
) -> Result<()> {
    let mut st = c.prepare_cached(
        "UPDATE productions SET backoff_base_us = ?2, backoff_cap_us = ?3 WHERE name = ?1",
    )?;
    let (base, cap) = backoff_cols(backoff);
    st.execute(params![name, base, cap])?;
    Ok(())
}

pub(super) fn set_production_cancelled(c: &Connection, name: &str, at_us: i64) -> Result<()> {
    let mut st = c.prepare_cached(
        "UPDATE productions SET cancelled_us = ?2 WHERE name = ?1 AND cancelled_us IS NULL",
    )?;
    st.execute(params![name, at_us])?;
    Ok(())
}

pub(super) fn gates(c: &Connection, name: &str) -> Result<Option<GateRow>> {
    let mut st = c.prepare_cached(
        "SELECT paused_us, concurrency, rate_claims, rate_interval_us, rate_burst, rate_tat_us
         FROM production_gates WHERE name = ?1",
    )?;
    let row = st
        .query_row([name], |r| {
            Ok((
                r.get::<_, Option<i64>>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, Option<i64>>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })
        .optional()?;
    row.map(|(paused_us, k, n, i, b, tat)| {
        Ok(GateRow {
            paused_us,
            concurrency: k
                .map(u32::try_from)
                .transpose()
                .map_err(|_| crate::error::Error::Store("corrupt concurrency limit".into()))?,
            rate: rate_from_cols(n, i, b)?,
            rate_tat_us: tat,
        })
    })
    .transpose()
}

pub(super) fn set_gates(c: &Connection, name: &str, g: &GateRow) -> Result<()> {
    let mut st = c.prepare_cached(
        "INSERT OR REPLACE INTO production_gates (name, paused_us, concurrency, rate_claims,
             rate_interval_us, rate_burst, rate_tat_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    st.execute(params![
        name,
        g.paused_us,
        g.concurrency,
        g.rate.map(|r| r.0),
        g.rate.map(|r| r.1),
        g.rate.map(|r| r.2),
        g.rate_tat_us
    ])?;
    Ok(())
}

pub(super) fn live_expiries(c: &Connection, production: &str, after: i64) -> Result<Vec<i64>> {
    let mut st = c.prepare_cached(
        // `jobs_claimed` holds the claimed jobs alone: the read walks the
        // production's claimed rows, never its queue.
        "SELECT expires_us FROM jobs INDEXED BY jobs_claimed
         WHERE production = ?1 AND state = 'claimed' AND expires_us > ?2",
    )?;
    let rows = st.query_map(params![production, after], |r| r.get(0))?;
    collect(rows)
}

pub(super) fn productions(c: &Connection) -> Result<Vec<ProductionRow>> {
    let mut st = c.prepare_cached(
        "SELECT name, created_us, cancelled_us, backoff_base_us, backoff_cap_us
         FROM productions ORDER BY name",
    )?;
    let rows = st.query_map([], production_row)?;
    collect(rows)
}

/// By the sequence number this connection last wrote the job under,
/// if it remembers one and the row there still carries the IDs; else
/// by the IDs.
pub(super) fn job(h: &Conn, production: &str, job: &str) -> Result<Option<JobRow>> {
    if let Some(seq) = h.seq_hint(production, job) {
        let row = h.with(Hot::JobBySeq, |st| {
            st.query_row(params![production, job, seq], job_row)
                .optional()
        })?;
        if row.is_some() {
            return Ok(row);
        }
    }
    Ok(h.with(Hot::Job, |st| {
        st.query_row([production, job], job_row).optional()
    })?)
}

pub(super) fn payload(c: &Connection, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
    let mut st = c.prepare_cached("SELECT payload FROM jobs WHERE production = ?1 AND job = ?2")?;
    Ok(st.query_row([production, job], |r| r.get(0)).optional()?)
}

pub(super) fn progress(c: &Connection, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
    let mut st =
        c.prepare_cached("SELECT progress FROM jobs WHERE production = ?1 AND job = ?2")?;
    Ok(st
        .query_row([production, job], |r| r.get::<_, Option<Vec<u8>>>(0))
        .optional()?
        .flatten())
}

pub(super) fn set_progress(c: &Connection, production: &str, job: &str, v: &[u8]) -> Result<()> {
    let mut st =
        c.prepare_cached("UPDATE jobs SET progress = ?3 WHERE production = ?1 AND job = ?2")?;
    match st.execute(params![production, job, v])? {
        1 => Ok(()),
        n => Err(Error::Internal(format!(
            "a progress write to job {production}/{job} touched {n} rows"
        ))),
    }
}

/// Write every column a transition sets; returns the stored state the row
/// had when that was a terminal one (what the write takes out of the kept
/// counts), `None` when the row was open.
pub(super) fn update_job(h: &Conn, row: &JobRow) -> Result<Option<Stored>> {
    h.remember_seq(&row.production, &row.job, row.seq);
    let mut claim = [0; uuid::fmt::Hyphenated::LENGTH];
    let claim = row.claim_id.map(|u| uuid_text(&u, &mut claim));
    let state = row.state.as_str();
    // ?1 to ?12 of both statements; the full one adds `parked` and
    // `ended_us`.
    let common: [&dyn rusqlite::ToSql; 12] = [
        &row.seq,
        &state,
        &row.attempts,
        &claim,
        &row.secret_digest,
        &row.holder,
        &row.claimed_us,
        &row.expires_us,
        &row.updated_us,
        &row.last_error,
        &row.due_us,
        &row.provenance_at,
    ];
    if row.state.is_open() && !row.parked {
        let n = h.with(Hot::UpdateOpenJob, |st| st.execute(&common[..]))?;
        if n == 1 {
            return Ok(None);
        }
    }
    let ended = ended_us(row);
    let rest: [&dyn rusqlite::ToSql; 2] = [&row.parked, &ended];
    let all = || rusqlite::params_from_iter(common.iter().chain(&rest));
    if h.with(Hot::UpdateJob, |st| st.execute(all()))? == 1 {
        return Ok(None);
    }
    // Not matched: the row had ended (or is not there).
    let c = h.get();
    let was: Option<String> = c
        .prepare_cached("SELECT state FROM jobs WHERE seq = ?1")?
        .query_row([row.seq], |r| r.get(0))
        .optional()?;
    let n = c.prepare_cached(UPDATE_ENDED_JOB_SQL)?.execute(all())?;
    one_row(n, row)?;
    let was = was.unwrap_or_default();
    Ok(Some(Stored::parse(&was).ok_or_else(|| {
        Error::Store(format!("corrupt job row: unknown state {was:?}"))
    })?))
}

pub(super) fn update_expiry(h: &Conn, row: &JobRow) -> Result<()> {
    let n = h.with(Hot::UpdateExpiry, |st| {
        st.execute(params![row.seq, row.expires_us, row.updated_us])
    })?;
    one_row(n, row)
}

/// The writer lock is store-wide here: both scans see every row.
pub(super) fn live_jobs(
    h: &Conn,
    production: &str,
    after: Option<(i32, i64)>,
    limit: usize,
    scan: LiveScan,
) -> Result<Vec<JobRow>> {
    // Held leases (see `LiveScan::Claim`) are filtered here, inside
    // SQLite, instead of being decoded: a claim-next behind many live
    // leases (a batch in one edit, many workers) reads only candidates.
    let held_after = match scan {
        LiveScan::Claim { now } => now,
        LiveScan::All => i64::MAX,
    };
    let c = h.get();
    match after {
        None => Ok(h.with(Hot::LiveJobs, |st| {
            st.query_map(params![production, limit as i64, held_after], job_row)?
                .collect()
        })?),
        Some((prio, seq)) => {
            let mut st = c.prepare_cached(concat!(
                "SELECT ",
                job_cols!(),
                " FROM jobs INDEXED BY jobs_ready
                 WHERE production = ?1 AND ended_us IS NULL AND parked = 0
                   AND state IN ('requested', 'claimed')
                   AND (priority < ?2 OR (priority = ?2 AND seq > ?3))
                   AND (state = 'requested' OR expires_us IS NULL OR expires_us <= ?5)
                 ORDER BY priority DESC, seq LIMIT ?4"
            ))?;
            let rows = st.query_map(
                params![production, prio, seq, limit as i64, held_after],
                job_row,
            )?;
            collect(rows)
        }
    }
}

pub(super) fn unpark_due(h: &Conn, production: &str, up_to_us: i64) -> Result<u64> {
    // Usually nothing is due: a read of one index entry answers that
    // for a fraction of what an UPDATE costs (it opens every index of
    // `jobs` for writing even when it changes no row).
    let due = h.with(Hot::ParkedProbe, |st| {
        st.exists(params![production, up_to_us])
    })?;
    if !due {
        return Ok(0);
    }
    let mut st = h.get().prepare_cached(
        "UPDATE jobs INDEXED BY jobs_parked SET parked = 0
         WHERE production = ?1 AND parked = 1 AND due_us <= ?2",
    )?;
    Ok(st.execute(params![production, up_to_us])? as u64)
}

pub(super) fn earliest_due(c: &Connection, production: &str) -> Result<Option<i64>> {
    let mut st = c.prepare_cached(
        "SELECT min(due_us) FROM jobs INDEXED BY jobs_parked
         WHERE production = ?1 AND parked = 1",
    )?;
    Ok(st.query_row([production], |r| r.get(0))?)
}

pub(super) fn jobs_page(
    c: &Connection,
    production: &str,
    states: Option<&[Stored]>,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<JobRow>> {
    let after = after.unwrap_or("");
    match states {
        None => {
            let mut st = c.prepare_cached(concat!(
                "SELECT ",
                job_cols!(),
                " FROM jobs WHERE production = ?1 AND job > ?2
                 ORDER BY job LIMIT ?3"
            ))?;
            let rows = st.query_map(params![production, after, limit as i64], job_row)?;
            collect(rows)
        }
        Some(states) => {
            // At most five states, one scan each, merged by job ID. A
            // terminal state is a range of `jobs_ended`, the claimed jobs
            // are `jobs_claimed` (its statement leaves the state, ?2, out:
            // the partial index's condition is the literal); the requested
            // jobs are found along the production's jobs by ID (no index
            // keys them by ID: every submission and claim would write one
            // more entry).
            let mut out = Vec::new();
            for s in states {
                let mut st = if *s == Stored::Claimed {
                    c.prepare_cached(concat!(
                        "SELECT ",
                        job_cols!(),
                        " FROM jobs INDEXED BY jobs_claimed
                         WHERE production = ?1 AND state = 'claimed'
                           AND job > ?3
                         ORDER BY job LIMIT ?4"
                    ))?
                } else if s.is_open() {
                    c.prepare_cached(concat!(
                        "SELECT ",
                        job_cols!(),
                        " FROM jobs WHERE production = ?1 AND job > ?3 AND state = ?2
                         ORDER BY job LIMIT ?4"
                    ))?
                } else {
                    c.prepare_cached(concat!(
                        "SELECT ",
                        job_cols!(),
                        " FROM jobs INDEXED BY jobs_ended
                         WHERE production = ?1 AND state = ?2 AND ended_us IS NOT NULL
                           AND job > ?3
                         ORDER BY job LIMIT ?4"
                    ))?
                };
                let rows = st.query_map(
                    params![production, s.as_str(), after, limit as i64],
                    job_row,
                )?;
                out.extend(collect(rows)?);
            }
            out.sort_by(|a, b| a.job.cmp(&b.job));
            out.truncate(limit);
            Ok(out)
        }
    }
}

pub(super) fn all_jobs_page(c: &Connection, after_seq: i64, limit: usize) -> Result<Vec<JobRow>> {
    let mut st = c.prepare_cached(concat!(
        "SELECT ",
        job_cols!(),
        " FROM jobs WHERE seq > ?1 ORDER BY seq LIMIT ?2"
    ))?;
    let rows = st.query_map(params![after_seq, limit as i64], job_row)?;
    collect(rows)
}

pub(super) fn earliest_expiry(c: &Connection, production: &str) -> Result<Option<i64>> {
    Ok(c.query_row(
        // The production's claimed rows alone (`jobs_claimed`).
        "SELECT MIN(expires_us) FROM jobs INDEXED BY jobs_claimed
         WHERE production = ?1 AND state = 'claimed'",
        [production],
        |r| r.get(0),
    )?)
}
