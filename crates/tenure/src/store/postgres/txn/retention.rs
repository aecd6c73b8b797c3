//! Retention: pruning ended jobs into tombstones, pruning tombstones and
//! events, deleting a production.

use super::rows::*;
use super::PgTxn;
use crate::error::{Error, Result};
use crate::store::postgres::sql::*;
use crate::store::{backoff_cols, backoff_from_cols, JobRow, Stored, Tombstone};

/// Rows another transaction holds are skipped: the next step takes them.
pub(super) fn terminal_jobs_before(
    tx: &mut PgTxn,
    before_us: i64,
    limit: usize,
) -> Result<Vec<JobRow>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.query(TERMINAL_JOBS_BEFORE, &[&before_us, &limit])?;
    jobs(rows)
}

pub(super) fn delete_jobs(tx: &mut PgTxn, rows: &[JobRow]) -> Result<u64> {
    if rows.is_empty() {
        return Ok(0);
    }
    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    let prods: Vec<&str> = rows.iter().map(|r| r.production.as_str()).collect();
    let names: Vec<&str> = rows.iter().map(|r| r.job.as_str()).collect();
    let n = tx.execute(DELETE_JOBS, &[&seqs])?;
    if n != rows.len() as u64 {
        return Err(Error::Internal(format!(
            "deleting {} jobs touched {n} rows",
            rows.len()
        )));
    }
    let facts = tx.execute(DELETE_PAYLOADS_AND_FACTS, &[&prods, &names])?
        + crate::store::provenance_facts_in(rows);
    tx.execute(DELETE_NONCES, &[&prods, &names])?;
    tx.execute(DELETE_CLAIM_REQUESTS, &[&prods, &names])?;
    Ok(facts)
}

pub(super) fn insert_tombstones(tx: &mut PgTxn, stones: &[Tombstone]) -> Result<()> {
    if stones.is_empty() {
        return Ok(());
    }
    let prods: Vec<&str> = stones.iter().map(|t| t.production.as_str()).collect();
    let names: Vec<&str> = stones.iter().map(|t| t.job.as_str()).collect();
    let digests: Vec<&[u8]> = stones.iter().map(|t| t.payload_digest.as_slice()).collect();
    let prios: Vec<i32> = stones.iter().map(|t| t.priority).collect();
    let maxes: Vec<i64> = stones.iter().map(|t| i64::from(t.max_attempts)).collect();
    let states: Vec<&str> = stones.iter().map(|t| t.state.as_str()).collect();
    let at: Vec<i64> = stones.iter().map(|t| t.pruned_us).collect();
    let holds: Vec<Option<i64>> = stones.iter().map(|t| t.max_hold_us).collect();
    let (bases, caps): (Vec<Option<i64>>, Vec<Option<i64>>) =
        stones.iter().map(|t| backoff_cols(t.backoff)).unzip();
    tx.execute(
        INSERT_TOMBSTONES,
        &[
            &prods, &names, &digests, &prios, &maxes, &states, &at, &holds, &bases, &caps,
        ],
    )?;
    Ok(())
}

pub(super) fn tombstone(tx: &mut PgTxn, production: &str, job: &str) -> Result<Option<Tombstone>> {
    let rows = tx.query(TOMBSTONE, &[&production, &job])?;
    rows.first()
        .map(|r| {
            let state: String = r.get(5);
            Ok(Tombstone {
                production: r.get(0),
                job: r.get(1),
                payload_digest: r.get(2),
                priority: r.get(3),
                max_attempts: u32_col(r, 4)?,
                state: Stored::parse(&state)
                    .ok_or_else(|| bad(format!("tombstone state {state:?}")))?,
                pruned_us: r.get(6),
                max_hold_us: r.get(7),
                backoff: backoff_from_cols(r.get(8), r.get(9))?,
            })
        })
        .transpose()
}

pub(super) fn jobs_with_tombstones(tx: &mut PgTxn, limit: usize) -> Result<Vec<(String, String)>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.query(JOBS_WITH_TOMBSTONES, &[&limit])?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

pub(super) fn prune_tombstones(tx: &mut PgTxn, before_us: i64, limit: usize) -> Result<u64> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    tx.execute(PRUNE_TOMBSTONES, &[&before_us, &limit])
}

pub(super) fn delete_production_events(
    tx: &mut PgTxn,
    production: &str,
    limit: usize,
) -> Result<u64> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    tx.execute(DELETE_PRODUCTION_EVENTS, &[&production, &limit])
}

pub(super) fn delete_production_tombstones(tx: &mut PgTxn, production: &str) -> Result<u64> {
    tx.execute(DELETE_PRODUCTION_TOMBSTONES, &[&production])
}

pub(super) fn delete_production(tx: &mut PgTxn, production: &str) -> Result<()> {
    tx.execute(DELETE_PRODUCTION_SCHEDULES, &[&production])?;
    tx.execute(DELETE_PRODUCTION, &[&production])?;
    tx.execute(DELETE_GATES, &[&production])?;
    Ok(())
}
