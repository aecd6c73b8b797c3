//! Pruning: terminal jobs and their tombstones, old events, deleted
//! productions, and the free pages they leave.

use crate::error::Result;
use crate::store::sqlite::rows::{bad_col, collect, job_row, one_row};
use crate::store::sqlite::sql::job_cols;
use crate::store::{backoff_cols, backoff_from_cols, JobRow, Stored, Tombstone};
use rusqlite::{params, Connection, OptionalExtension};

/// How many free pages one reclaim step gives back at most.
const RECLAIM_PAGES: i64 = 512;

/// Free pages a reclaim step leaves in the file: a quarter of its pages
/// (at least [`RECLAIM_PAGES`]). Under a steady stream the pages pruning
/// frees are reused by the next writes; giving each back at once would move
/// the file's newest (hottest) pages into the holes and grow the file again
/// right after, every step. Only a surplus beyond this slack (after a
/// burst of pruning or a deleted production) is given back.
fn reclaim_slack(pages: i64) -> i64 {
    (pages / 4).max(RECLAIM_PAGES)
}

pub(super) fn terminal_jobs_before(
    c: &Connection,
    before_us: i64,
    limit: usize,
) -> Result<Vec<JobRow>> {
    let mut st = c.prepare_cached(concat!(
        "SELECT ",
        job_cols!(),
        " FROM jobs INDEXED BY jobs_terminal
         WHERE state NOT IN ('requested', 'claimed') AND updated_us < ?1
         ORDER BY updated_us LIMIT ?2"
    ))?;
    let rows = st.query_map(params![before_us, limit as i64], job_row)?;
    collect(rows)
}

/// Delete the rows and what belongs to their jobs; returns how many facts
/// went with them and each row's stored state as it was deleted.
pub(super) fn delete_jobs(c: &Connection, rows: &[JobRow]) -> Result<(u64, Vec<Stored>)> {
    let mut facts = 0;
    let mut states = Vec::with_capacity(rows.len());
    for row in rows {
        let gone: Vec<String> = c
            .prepare_cached("DELETE FROM jobs WHERE seq = ?1 RETURNING state")?
            .query_map([row.seq], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        one_row(gone.len(), row)?;
        states.push(
            Stored::parse(&gone[0])
                .ok_or_else(|| bad_col(0, format!("unknown state {:?}", gone[0])))?,
        );
        facts += c
            .prepare_cached("DELETE FROM facts WHERE production = ?1 AND job = ?2")?
            .execute([&row.production, &row.job])? as u64;
        c.prepare_cached("DELETE FROM nonces WHERE production = ?1 AND job = ?2")?
            .execute([&row.production, &row.job])?;
        c.prepare_cached("DELETE FROM claim_requests WHERE production = ?1 AND job = ?2")?
            .execute([&row.production, &row.job])?;
    }
    Ok((facts + crate::store::provenance_facts_in(rows), states))
}

pub(super) fn insert_tombstones(c: &Connection, stones: &[Tombstone]) -> Result<()> {
    let mut st = c.prepare_cached(
        "INSERT INTO tombstones (production, job, payload_digest, priority, max_attempts,
             state, pruned_us, max_hold_us, backoff_base_us, backoff_cap_us)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (production, job) DO UPDATE SET
             payload_digest = excluded.payload_digest, priority = excluded.priority,
             max_attempts = excluded.max_attempts, state = excluded.state,
             pruned_us = excluded.pruned_us, max_hold_us = excluded.max_hold_us,
             backoff_base_us = excluded.backoff_base_us,
             backoff_cap_us = excluded.backoff_cap_us",
    )?;
    for t in stones {
        let (base, cap) = backoff_cols(t.backoff);
        st.execute(params![
            t.production,
            t.job,
            t.payload_digest,
            t.priority,
            t.max_attempts,
            t.state.as_str(),
            t.pruned_us,
            t.max_hold_us,
            base,
            cap
        ])?;
    }
    Ok(())
}

pub(super) fn tombstone(c: &Connection, production: &str, job: &str) -> Result<Option<Tombstone>> {
    let mut st = c.prepare_cached(
        "SELECT production, job, payload_digest, priority, max_attempts, state, pruned_us,
             max_hold_us, backoff_base_us, backoff_cap_us
         FROM tombstones WHERE production = ?1 AND job = ?2",
    )?;
    let row = st
        .query_row([production, job], |r| {
            let state: String = r.get(5)?;
            Ok(Tombstone {
                state: Stored::parse(&state)
                    .ok_or_else(|| bad_col(5, format!("tombstone with state {state:?}")))?,
                production: r.get(0)?,
                job: r.get(1)?,
                payload_digest: r.get(2)?,
                priority: r.get(3)?,
                max_attempts: r.get(4)?,
                pruned_us: r.get(6)?,
                max_hold_us: r.get(7)?,
                backoff: backoff_from_cols(r.get(8)?, r.get(9)?)
                    .map_err(|e| bad_col(8, e.to_string()))?,
            })
        })
        .optional()?;
    Ok(row)
}

pub(super) fn jobs_with_tombstones(c: &Connection, limit: usize) -> Result<Vec<(String, String)>> {
    let mut st = c.prepare_cached(
        "SELECT t.production, t.job FROM tombstones t
         JOIN jobs j ON j.production = t.production AND j.job = t.job
         ORDER BY t.production, t.job LIMIT ?1",
    )?;
    let rows = st.query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    collect(rows)
}

pub(super) fn prune_tombstones(c: &Connection, before_us: i64, limit: usize) -> Result<u64> {
    let n = c
        .prepare_cached(
            "DELETE FROM tombstones WHERE (production, job) IN (
                 SELECT production, job FROM tombstones INDEXED BY tombstones_by_age
                 WHERE pruned_us < ?1 ORDER BY pruned_us LIMIT ?2)",
        )?
        .execute(params![before_us, limit as i64])?;
    Ok(n as u64)
}

pub(super) fn delete_production_events(
    c: &Connection,
    production: &str,
    limit: usize,
) -> Result<u64> {
    let n = c
        .prepare_cached(
            "DELETE FROM events WHERE seq IN (
                 SELECT seq FROM events WHERE production = ?1
                   AND seq < (SELECT max(seq) FROM events)
                 ORDER BY seq LIMIT ?2)",
        )?
        .execute(params![production, limit as i64])?;
    Ok(n as u64)
}

pub(super) fn delete_production_tombstones(c: &Connection, production: &str) -> Result<u64> {
    let n = c
        .prepare_cached("DELETE FROM tombstones WHERE production = ?1")?
        .execute([production])?;
    Ok(n as u64)
}

pub(super) fn delete_production(c: &Connection, production: &str) -> Result<()> {
    c.prepare_cached("DELETE FROM schedules WHERE production = ?1")?
        .execute([production])?;
    c.prepare_cached("DELETE FROM productions WHERE name = ?1")?
        .execute([production])?;
    c.prepare_cached("DELETE FROM production_gates WHERE name = ?1")?
        .execute([production])?;
    Ok(())
}

/// Gives back the free pages beyond [`reclaim_slack`], at most
/// [`RECLAIM_PAGES`] per step; nothing on a store created before
/// schema 3 (`auto_vacuum` off: `Authority::vacuum`).
pub(super) fn reclaim_space(c: &Connection) -> Result<()> {
    let free: i64 = c
        .prepare_cached("PRAGMA freelist_count")?
        .query_row([], |r| r.get(0))?;
    // The slack is never below `RECLAIM_PAGES`: a freelist that short
    // (a steady stream's) is kept without reading the file's size.
    if free <= RECLAIM_PAGES {
        return Ok(());
    }
    let pages: i64 = c
        .prepare_cached("PRAGMA page_count")?
        .query_row([], |r| r.get(0))?;
    let surplus = (free - reclaim_slack(pages)).min(RECLAIM_PAGES);
    if surplus > 0 {
        let mut st = c.prepare(&format!("PRAGMA incremental_vacuum({surplus})"))?;
        let mut rows = st.query([])?;
        while rows.next()?.is_some() {}
    }
    Ok(())
}
