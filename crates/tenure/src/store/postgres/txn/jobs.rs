//! Job rows: lookups, single and batched inserts, updates, the deferred
//! batch of a group of transitions, listings.

use super::rows::*;
use super::{PgTxn, Prepared};
use crate::error::{Error, Result};
use crate::store::postgres::sql::*;
use crate::store::postgres::{key, literal, CLASS_JOB, CLASS_PROD};
use crate::store::{backoff_cols, Inserted, JobFacts, JobRow, NewEvent, Stored};
use std::collections::HashMap;
use uuid::Uuid;

impl PgTxn {
    fn job_select(&mut self, production: &str, job: &str) -> Result<Option<JobRow>> {
        let rows = if self.write {
            self.query(JOB_FOR_UPDATE, &[&production, &job])?
        } else {
            self.query(JOB, &[&production, &job])?
        };
        rows.first().map(job_row).transpose()
    }
}

pub(super) fn job(tx: &mut PgTxn, production: &str, job: &str) -> Result<Option<JobRow>> {
    if let Some(r) = tx.job_select(production, job)? {
        return Ok(Some(r));
    }
    if !tx.write {
        return Ok(None);
    }
    // Not there: serialize writers of this (production, job), look again.
    tx.advisory(CLASS_JOB, key(&[production, job]), false)?;
    tx.job_select(production, job)
}

pub(super) fn payload(tx: &mut PgTxn, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
    let rows = tx.query(PAYLOAD, &[&production, &job])?;
    Ok(rows.first().map(|r| r.get(0)))
}

pub(super) fn progress(tx: &mut PgTxn, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
    let rows = tx.query(PROGRESS, &[&production, &job])?;
    Ok(rows.first().and_then(|r| r.get(0)))
}

pub(super) fn set_progress(tx: &mut PgTxn, production: &str, job: &str, v: &[u8]) -> Result<()> {
    match tx.execute(SET_PROGRESS, &[&production, &job, &v])? {
        1 => Ok(()),
        n => Err(Error::Internal(format!(
            "a progress write to job {production}/{job} touched {n} rows"
        ))),
    }
}

pub(super) fn insert_job(tx: &mut PgTxn, row: &JobRow, payload: &[u8]) -> Result<i64> {
    let len = i64::try_from(row.payload_len).unwrap_or(i64::MAX);
    let max = i64::from(row.max_attempts);
    let attempts = i64::from(row.attempts);
    let claim = row.claim_id.map(|u| u.to_string());
    let (base, cap) = backoff_cols(row.backoff);
    let rows = tx.query(
        INSERT_JOB,
        &[
            &row.production,
            &row.job,
            &row.payload_digest,
            &len,
            &row.priority,
            &max,
            &row.state.as_str(),
            &attempts,
            &claim,
            &row.secret_digest,
            &row.holder,
            &row.claimed_us,
            &row.expires_us,
            &row.created_us,
            &row.updated_us,
            &row.last_error,
            &payload,
            &row.due_us,
            &row.parked,
            &row.max_hold_us,
            &base,
            &cap,
        ],
    )?;
    rows.first()
        .map(|r| r.get(0))
        .ok_or_else(|| Error::Internal("INSERT ... RETURNING gave no row".into()))
}

/// `Ok` if a write of `row` (`what`) touched exactly one row (`n`).
fn touched_one(n: u64, what: &str, row: &JobRow) -> Result<()> {
    if n == 1 {
        return Ok(());
    }
    Err(Error::Internal(format!(
        "{what} of job {}/{} touched {n} rows",
        row.production, row.job
    )))
}

pub(super) fn update_job(tx: &mut PgTxn, row: &JobRow) -> Result<()> {
    let attempts = i64::from(row.attempts);
    let claim = row.claim_id.map(|u| u.to_string());
    let n = tx.execute(
        UPDATE_JOB,
        &[
            &row.seq,
            &row.state.as_str(),
            &attempts,
            &claim,
            &row.secret_digest,
            &row.holder,
            &row.claimed_us,
            &row.expires_us,
            &row.updated_us,
            &row.last_error,
            &row.due_us,
            &row.parked,
            &row.provenance_at.map(i64::from),
        ],
    )?;
    touched_one(n, "update", row)
}

pub(super) fn update_expiry(tx: &mut PgTxn, row: &JobRow) -> Result<()> {
    let n = tx.execute(UPDATE_EXPIRY, &[&row.seq, &row.expires_us, &row.updated_us])?;
    touched_one(n, "renewal", row)
}

pub(super) fn jobs_for_update(
    tx: &mut PgTxn,
    keys: &[(&str, &str)],
) -> Result<Vec<Option<JobRow>>> {
    let prods: Vec<&str> = keys.iter().map(|k| k.0).collect();
    let names: Vec<&str> = keys.iter().map(|k| k.1).collect();
    // One statement (write transactions only, like every batched
    // call); rows locked in seq order, so two batches that share jobs
    // wait for each other instead of deadlocking.
    let rows = tx.query(JOBS_FOR_UPDATE, &[&prods, &names])?;
    let mut found: HashMap<(String, String), JobRow> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let row = job_row(r)?;
        found.insert((row.production.clone(), row.job.clone()), row);
    }
    Ok(keys
        .iter()
        .map(|(p, j)| found.remove(&((*p).to_owned(), (*j).to_owned())))
        .collect())
}

/// The most job locks a submission takes (see [`insert_new_jobs_into`]).
pub(in crate::store::postgres) const SUBMIT_JOB_LOCKS: usize = 32;

pub(super) fn insert_new_jobs_into(
    tx: &mut PgTxn,
    production: &str,
    rows: &[JobRow],
    payloads: &[&[u8]],
) -> Result<Inserted> {
    let pk = key(&[production]);
    let prods: Vec<&str> = rows.iter().map(|r| r.production.as_str()).collect();
    let job: Vec<&str> = rows.iter().map(|r| r.job.as_str()).collect();
    let digest: Vec<&[u8]> = rows.iter().map(|r| &r.payload_digest[..]).collect();
    let len: Vec<i64> = rows
        .iter()
        .map(|r| i64::try_from(r.payload_len).unwrap_or(i64::MAX))
        .collect();
    let prio: Vec<i32> = rows.iter().map(|r| r.priority).collect();
    let max: Vec<i64> = rows.iter().map(|r| i64::from(r.max_attempts)).collect();
    let state: Vec<&str> = rows.iter().map(|r| r.state.as_str()).collect();
    let created: Vec<i64> = rows.iter().map(|r| r.created_us).collect();
    let updated: Vec<i64> = rows.iter().map(|r| r.updated_us).collect();
    let due: Vec<Option<i64>> = rows.iter().map(|r| r.due_us).collect();
    let parked: Vec<bool> = rows.iter().map(|r| r.parked).collect();
    let hold: Vec<Option<i64>> = rows.iter().map(|r| r.max_hold_us).collect();
    let (base, cap): (Vec<Option<i64>>, Vec<Option<i64>>) =
        rows.iter().map(|r| backoff_cols(r.backoff)).unzip();
    // The job locks (the keys `Txn::job` takes before it looks again for
    // a row it did not find), in key order: two submissions that share
    // IDs then wait for each other instead of deadlocking on each other's
    // rows. A larger submission takes none, so that its locks never
    // crowd the server's lock table (each holds a slot until the commit;
    // the table has `max_locks_per_transaction` × `max_connections`):
    // its `ON CONFLICT` alone makes a concurrent submission of one of its
    // IDs wait for this transaction and then leave the row alone.
    let mut keys: Vec<i32> = rows.iter().map(|r| key(&[&r.production, &r.job])).collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.len() > SUBMIT_JOB_LOCKS {
        keys.clear();
    }
    // One statement: the production's shared lock (as `production`),
    // then its row `FOR SHARE` (the latest committed version, so a
    // cancel that held the lock is seen); only if it takes new jobs,
    // the job locks, if any (the aggregate consumes the CTE before any
    // row is inserted), then the new IDs in order; an ID that exists (or
    // that a concurrent transaction inserts first: the insert waits for
    // it) is left alone and read back by the rules.
    let out = tx.query(
        INSERT_NEW_JOBS_INTO,
        &[
            &prods,
            &job,
            &digest,
            &len,
            &prio,
            &max,
            &state,
            &created,
            &updated,
            &payloads,
            &CLASS_JOB,
            &keys,
            &due,
            &parked,
            &hold,
            &base,
            &cap,
            &CLASS_PROD,
            &pk,
            &production,
        ],
    )?;
    tx.held.push((CLASS_PROD, pk, true, tx.savepoints));
    let first = out
        .first()
        .ok_or_else(|| Error::Internal("the submission statement gave no row".into()))?;
    let found = match first.get::<_, Option<String>>(0) {
        Some(_) => Some(production_row(first)?),
        None => None,
    };
    if !first.get::<_, bool>(5) {
        return Ok((found, None));
    }
    let mut seqs: HashMap<String, i64> = out
        .iter()
        .filter_map(|r| Some((r.get::<_, Option<String>>(6)?, r.get::<_, Option<i64>>(7)?)))
        .collect();
    if !seqs.is_empty() {
        // A prune of one of these IDs that committed after the insert's
        // snapshot was not seen by its tombstone probe, and its deleted
        // row no longer conflicts: checked again at the commit, in a later
        // snapshot (see `SUBMIT_GUARD`).
        let guard = tx.generic_call(
            SUBMIT_GUARD_NAME,
            SUBMIT_GUARD_TYPES,
            SUBMIT_GUARD,
            &[
                literal::array(seqs.values().map(|&s| literal::int(s)), "bigint"),
                literal::text(production),
            ],
        )?;
        tx.defer_check(guard);
    }
    Ok((
        found,
        Some(rows.iter().map(|r| seqs.remove(&r.job)).collect()),
    ))
}

pub(super) fn write_batch(
    tx: &mut PgTxn,
    rows: &[&JobRow],
    expiries: &[&JobRow],
    facts: &[JobFacts<'_>],
    events: &[NewEvent<'_>],
) -> Result<()> {
    use literal::{array, boolean, int, opt_bytea, opt_int, opt_text, text, Lit};
    let uuid = |u: Option<Uuid>| opt_text(u.map(|u| u.to_string()).as_deref());
    let n_facts: usize = facts.iter().map(|f| f.facts.len()).sum();
    // A single transition (one event, at most one row in every other part)
    // takes the statement of scalar parameters ([`WRITE_ONES`]).
    let one = events.len() == 1 && rows.len() <= 1 && expiries.len() <= 1 && n_facts <= 1;
    let pack = |items: &mut dyn Iterator<Item = Lit>, ty: &str| {
        if one {
            items.next().unwrap_or(Lit::Null)
        } else {
            array(items, ty)
        }
    };
    let col = |f: &dyn Fn(&JobRow) -> Lit, ty: &str| pack(&mut rows.iter().map(|r| f(r)), ty);
    let exp_col =
        |f: &dyn Fn(&JobRow) -> Lit, ty: &str| pack(&mut expiries.iter().map(|r| f(r)), ty);
    let fact_col = |f: &dyn Fn(&JobFacts<'_>, usize, &str, &str) -> Lit, ty: &str| {
        pack(
            &mut facts.iter().flat_map(|jf| {
                jf.facts
                    .iter()
                    .enumerate()
                    .map(move |(i, (k, v))| f(jf, i, k, v))
            }),
            ty,
        )
    };
    let ev_col = |f: &dyn Fn(&NewEvent<'_>) -> Lit, ty: &str| pack(&mut events.iter().map(f), ty);
    let expected = [rows.len(), expiries.len(), n_facts, events.len()].map(|n| int(n as i64));
    let params = [
        // Full row updates.
        col(&|r| int(r.seq), "bigint"),
        col(&|r| text(r.state.as_str()), "text"),
        col(&|r| int(i64::from(r.attempts)), "bigint"),
        col(&|r| uuid(r.claim_id), "text"),
        col(&|r| opt_bytea(r.secret_digest.as_deref()), "bytea"),
        col(&|r| opt_text(r.holder.as_deref()), "text"),
        col(&|r| opt_int(r.claimed_us), "bigint"),
        col(&|r| opt_int(r.expires_us), "bigint"),
        col(&|r| int(r.updated_us), "bigint"),
        col(&|r| opt_text(r.last_error.as_deref()), "text"),
        // Expiry-only updates (renewals).
        exp_col(&|r| int(r.seq), "bigint"),
        exp_col(&|r| opt_int(r.expires_us), "bigint"),
        exp_col(&|r| int(r.updated_us), "bigint"),
        // Facts.
        fact_col(&|jf, _, _, _| text(jf.production), "text"),
        fact_col(&|jf, _, _, _| text(jf.job), "text"),
        fact_col(&|_, i, _, _| int(i as i64), "bigint"),
        fact_col(&|_, _, k, _| text(k), "text"),
        fact_col(&|_, _, _, v| text(v), "text"),
        // Events.
        ev_col(&|e| int(e.at_us), "bigint"),
        ev_col(&|e| text(e.production), "text"),
        ev_col(&|e| opt_text(e.job), "text"),
        ev_col(&|e| text(e.kind.as_str()), "text"),
        ev_col(&|e| opt_text(e.state.map(|s| s.as_str())), "text"),
        ev_col(&|e| uuid(e.claim_id), "text"),
        ev_col(&|e| opt_text(e.holder), "text"),
        ev_col(&|e| opt_int(e.attempt.map(i64::from)), "bigint"),
        ev_col(&|e| opt_int(e.expires_us), "bigint"),
        ev_col(&|e| text(e.detail), "text"),
        int(EVENT_REG),
        int(EVENT_REG_LIMIT),
        col(&|r| opt_int(r.due_us), "bigint"),
        col(&|r| boolean(r.parked), "bool"),
        array(expected, "bigint"),
        ev_col(&|e| opt_int(e.since_us), "bigint"),
        ev_col(&|e| opt_int(e.lapsed_us), "bigint"),
        col(&|r| opt_int(r.provenance_at.map(i64::from)), "bigint"),
    ];
    // One statement, sent with the transaction's next request (at the
    // latest its COMMIT). Its data-modifying parts touch disjoint rows
    // (the jobs are distinct, and locked by this transaction). The
    // events register the transaction's lower bound first, as the
    // single insert does (a transaction that already holds one takes a
    // harmless higher one); the sort consumes the whole join, so the
    // lock is taken before any identity value is drawn (see the module
    // docs). If any part touched other than the expected number of
    // rows (an event sequence at its limit writes no event), the final
    // cast fails the statement, and with it the transaction. A part with
    // no rows is left out of the statement.
    let shape = usize::from(!rows.is_empty())
        | usize::from(!expiries.is_empty()) << 1
        | usize::from(n_facts > 0) << 2;
    let ones = (WRITE_ONES[shape], WRITE_ONE_TYPES);
    let batches = (WRITE_BATCHES[shape], WRITE_BATCH_TYPES);
    let ((name, body), types) = if one { ones } else { batches };
    // Both forms of the shape are prepared at the connection's first call
    // of either, so a batch's size never changes its round trips.
    let stmt = |((name, body), types): ((&'static str, &'static str), &'static str)| -> Prepared {
        (name, types, body)
    };
    tx.prepare_together(&[stmt(ones), stmt(batches)])?;
    tx.defer(name, types, body, &params)?;
    if !events.is_empty() && tx.event_reg.is_none() {
        tx.event_reg = Some(tx.savepoints);
    }
    Ok(())
}

pub(super) fn jobs_page(
    tx: &mut PgTxn,
    production: &str,
    states: Option<&[Stored]>,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<JobRow>> {
    let after = after.unwrap_or("");
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    match states {
        None => {
            let rows = tx.query(JOBS_PAGE, &[&production, &after, &limit])?;
            jobs(rows)
        }
        Some(states) => {
            let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
            let rows = tx.query(JOBS_PAGE_IN_STATES, &[&production, &names, &after, &limit])?;
            jobs(rows)
        }
    }
}

pub(super) fn all_jobs_page(tx: &mut PgTxn, after_seq: i64, limit: usize) -> Result<Vec<JobRow>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.query(ALL_JOBS_PAGE, &[&after_seq, &limit])?;
    jobs(rows)
}

pub(super) fn earliest_due(tx: &mut PgTxn, production: &str) -> Result<Option<i64>> {
    let rows = tx.query(EARLIEST_DUE, &[&production])?;
    Ok(rows.first().and_then(|r| r.get(0)))
}

pub(super) fn earliest_expiry(tx: &mut PgTxn, production: &str) -> Result<Option<i64>> {
    let rows = tx.query(EARLIEST_EXPIRY, &[&production])?;
    Ok(rows.first().and_then(|r| r.get::<_, Option<i64>>(0)))
}
