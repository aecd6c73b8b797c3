//! Claim-next's reads: the locked read with its clock sample, the claim
//! scan's first pages, the live-job pages of a scan, un-parking due jobs.

use super::productions::gate_row;
use super::rows::*;
use super::{ClaimGate, PgTxn, Prepared};
use crate::error::{Error, Result};
use crate::store::postgres::pool::FLOOR_EVERY;
use crate::store::postgres::sql::*;
use crate::store::postgres::{key, literal, CLASS_PROD};
use crate::store::{backoff_from_cols, ClaimStart, JobRow, LiveScan, Locked, LockedFor};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// The locked reads, each prepared once per connection (see
/// [`PgTxn::request`]).
pub(in crate::store::postgres) const LOCK_JOB: Prepared =
    ("tenure_lock_job", "text, text, bigint", LOCK_JOB_SAMPLED);
const LOCK_JOBS: Prepared = (
    "tenure_lock_jobs",
    "text[], text[], bigint",
    LOCK_JOBS_SAMPLED,
);
/// [`LOCK_JOB`] of a transition that reads none of the productions' columns.
pub(in crate::store::postgres) const LOCK_JOB_BARE_STMT: Prepared =
    ("tenure_lock_job_bare", "text, text, bigint", LOCK_JOB_BARE);
const LOCK_JOBS_BARE_STMT: Prepared = (
    "tenure_lock_jobs_bare",
    "text[], text[], bigint",
    LOCK_JOBS_BARE,
);
pub(in crate::store::postgres) const CLAIM_FIRST: Prepared = (
    "tenure_claim_start",
    "int, int, text, bigint, bigint",
    CLAIM_START,
);
const GATE_LEASES: Prepared = ("tenure_claim_gate_leases", "text", CLAIM_GATE_LEASES);

pub(super) fn lock_jobs_sampled(
    tx: &mut PgTxn,
    keys: &[(&str, &str)],
    local_now: Option<i64>,
    what: LockedFor,
) -> Result<Locked> {
    let local = literal::opt_int(local_now.filter(|_| !tx.pool.server_clock));
    // One statement: lock the rows (in seq order, as `jobs_for_update`),
    // then sample the clock in a CTE that consumes every locked row
    // first, so the sample is taken after any wait for a lock; the stored
    // mark and, for a failure or a claim, the rows' productions' default
    // back-off and gate rows come with them (a renewal, release,
    // completion or progress write reads none of the productions'
    // columns: `LOCK_JOB_BARE`). A call of a prepared statement in a
    // simple-query request, so the transaction's `BEGIN` and deferred
    // writes ride in the same request, under a generic plan
    // (`PgTxn::generic_reads`).
    let bare = what == LockedFor::Transition;
    let (stmt, params) = match keys {
        [(p, j)] => (
            if bare { LOCK_JOB_BARE_STMT } else { LOCK_JOB },
            [literal::text(p), literal::text(j), local],
        ),
        _ => (
            if bare { LOCK_JOBS_BARE_STMT } else { LOCK_JOBS },
            [
                literal::array(keys.iter().map(|k| literal::text(k.0)), "text"),
                literal::array(keys.iter().map(|k| literal::text(k.1)), "text"),
                local,
            ],
        ),
    };
    let call = literal::execute(stmt.0, &params)?;
    let rows = tx
        .generic_reads(&[stmt], &[&call])?
        .pop()
        .unwrap_or_default();
    let now = rows
        .first()
        .ok_or_else(|| Error::Internal("the locked read gave no row".into()))?
        .i64(JOB_COLS)?;
    if let Some(first) = rows.first() {
        tx.mark_from_read(first, JOB_COLS + 4)?;
    }
    let mut found: HashMap<(String, String), JobRow> = HashMap::with_capacity(rows.len());
    let mut backoffs = HashMap::new();
    tx.ungated.clear();
    // A named claim reads its gates itself (`gates`): nothing a claim-next
    // of this transaction read stands for them.
    tx.claim_gate = None;
    for r in &rows {
        if r.opt_i64(0)?.is_none() {
            continue;
        }
        let row = job_row(r)?;
        if !bare {
            if !r.boolean(JOB_COLS + 3)? && !tx.ungated.contains(&row.production) {
                tx.ungated.push(row.production.clone());
            }
            let b = backoff_from_cols(r.opt_i64(JOB_COLS + 1)?, r.opt_i64(JOB_COLS + 2)?)?;
            backoffs.insert(row.production.clone(), b);
        }
        found.insert((row.production.clone(), row.job.clone()), row);
    }
    let rows = keys
        .iter()
        .map(|(p, j)| found.remove(&((*p).to_owned(), (*j).to_owned())))
        .collect();
    Ok(Locked {
        now,
        rows,
        backoffs,
    })
}

pub(super) fn claim_start(
    tx: &mut PgTxn,
    production: &str,
    limit: usize,
    local_now: Option<i64>,
) -> Result<ClaimStart> {
    let k = key(&[production]);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let local = local_now.filter(|_| !tx.pool.server_clock);
    // One statement: the production's shared lock (as
    // `production_exists`), then, in the same row, its existence and
    // the clock sample (after the lock); then the first page of the
    // ready jobs (`jobs_ready`, leases still held left out: see
    // `LiveScan::Claim`) and the first page of the parked jobs whose
    // due time has come (`jobs_parked`), each `FOR UPDATE SKIP LOCKED`,
    // merged in queue order; and whether the production has due parked
    // jobs (to un-park them with the writes). The ready page starts at
    // the production's claim floor (no live job has a smaller `seq`,
    // see `Pool::raise_claim_floor`): a bound the index checks on
    // its own entries, so the entries of jobs that ended below it cost
    // no heap visit even while an open snapshot keeps their versions.
    // The statement also locks the production's gate row, if it has one
    // (after the production's lock, before the clock sample), and the
    // next statement of the same request reads what the gates decide on
    // (`CLAIM_GATE_LEASES`, in a later snapshot: it sees what the gate
    // row's previous holder committed), so a gated claim-next needs no
    // request of its own for its gates. Calls of prepared statements in
    // a simple-query request, as `lock_jobs_sampled`.
    let call = literal::execute(
        CLAIM_FIRST.0,
        &[
            literal::int(i64::from(CLASS_PROD)),
            literal::int(i64::from(k)),
            literal::text(production),
            literal::int(limit),
            literal::opt_int(local),
        ],
    )?;
    // A production this pool last found without a gate row is claimed
    // without the leases' read: if the locked read finds a gate row after
    // all, the gate decision reads them in a request of its own (still
    // after the gate row's lock).
    let hinted = tx.pool.seems_ungated(production);
    let mut groups = if hinted {
        tx.generic_reads(&[CLAIM_FIRST], &[&call])?
    } else {
        let leases = literal::execute(GATE_LEASES.0, &[literal::text(production)])?;
        tx.generic_reads(&[CLAIM_FIRST, GATE_LEASES], &[&call, &leases])?
    };
    let sampled = if hinted { None } else { groups.pop() };
    let Some(rows) = groups.pop() else {
        return Err(Error::Internal("the claim scan gave no answer".into()));
    };
    tx.held.push((CLASS_PROD, k, true, tx.savepoints));
    if tx.pool.claim_scans.fetch_add(1, Ordering::Relaxed) % FLOOR_EVERY == FLOOR_EVERY - 1 {
        tx.floor_due = Some(production.to_owned());
    }
    let first = rows
        .first()
        .ok_or_else(|| Error::Internal("the claim scan gave no row".into()))?;
    let exists = first.boolean(JOB_COLS + 1)?;
    let now = first.i64(JOB_COLS + 2)?;
    let due_parked = first.boolean(JOB_COLS + 3)?;
    let gated = first.boolean(JOB_COLS + 4)?;
    let row = if gated {
        Some(gate_row(first, JOB_COLS + 5)?)
    } else {
        None
    };
    tx.mark_from_read(first, JOB_COLS + 11)?;
    tx.pool.found_gated(production, gated);
    let leases = match sampled {
        Some(s) => {
            let s = s
                .first()
                .ok_or_else(|| Error::Internal("the gate leases' read gave no row".into()))?;
            Some((s.i64(0)?, i64_array(s, 1)?))
        }
        None => None,
    };
    tx.claim_gate = Some(ClaimGate {
        production: production.to_owned(),
        row,
        leases,
    });
    let mut out = Vec::with_capacity(rows.len());
    let mut full = [0usize; 2];
    for r in &rows {
        let Some(src) = r.opt_i32(JOB_COLS)? else {
            continue;
        };
        let mut row = job_row(r)?;
        // Due: un-parked by the statement below (the rule would see the
        // same row after `unpark_due`).
        row.parked = false;
        full[usize::from(src == 2)] += 1;
        out.push((src, row));
    }
    // Queue order holds only up to the last row of a page that was
    // full (a row of the other page after it may be preceded by rows
    // of the full one that were not read): the rows after it are left
    // to the rule's next page, which sees them un-parked (they stay
    // locked until this transaction ends).
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut seen = [0usize; 2];
    let mut keep = Vec::with_capacity(out.len());
    for (src, row) in out {
        let i = usize::from(src == 2);
        seen[i] += 1;
        keep.push(row);
        if full[i] >= limit && seen[i] == full[i] {
            // The last row of a full page: nothing after it is known
            // to be in queue order.
            break;
        }
    }
    let out = keep;
    if due_parked {
        // The due jobs of this production join the ready scan: sent
        // with the next request (as `unpark_due` with `LiveScan::Claim`).
        tx.defer(
            "tenure_unpark_due",
            "text, bigint",
            UNPARK_DUE_SKIP_LOCKED,
            &[literal::text(production), literal::int(now)],
        )?;
    }
    Ok(ClaimStart {
        now,
        exists: Some(exists),
        rows: out,
        gated: Some(gated),
    })
}

pub(super) fn live_jobs(
    tx: &mut PgTxn,
    production: &str,
    after: Option<(i32, i64)>,
    limit: usize,
    scan: LiveScan,
) -> Result<Vec<JobRow>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let (prio, seq) = after.unwrap_or((i32::MAX, i64::MIN));
    // Held leases (see `LiveScan::Claim`) are filtered by the server, so
    // claim-next neither decodes nor locks them: a renewal never waits
    // for a claim-next that merely looked at its row.
    let (skip_locked, held_after) = match scan {
        LiveScan::Claim { now } => (true, now),
        LiveScan::All => (false, i64::MAX),
    };
    if tx.write && !skip_locked && after.is_none() {
        // A coordinator scan (cancelling a production): hold the
        // production exclusively first, so no submission or claim-next
        // on it is in flight while the scan runs.
        tx.advisory(CLASS_PROD, key(&[production]), false)?;
    }
    let sql = match (tx.write, skip_locked) {
        (false, _) => LIVE_JOBS,
        (true, true) => LIVE_JOBS_SKIP_LOCKED,
        (true, false) => LIVE_JOBS_FOR_UPDATE,
    };
    // Without a cursor every priority qualifies: (MAX, MIN) admits
    // priority < MAX and priority = MAX with any seq.
    let rows = tx.query(sql, &[&production, &prio, &seq, &limit, &held_after])?;
    jobs(rows)
}

pub(super) fn unpark_due(
    tx: &mut PgTxn,
    production: &str,
    up_to_us: i64,
    scan: LiveScan,
) -> Result<u64> {
    match scan {
        // Rows another claim-next is unparking (or a coordinator holds)
        // are skipped, as claim-next's own scan skips them.
        LiveScan::Claim { .. } => tx.execute(UNPARK_DUE_SKIP_LOCKED, &[&production, &up_to_us]),
        LiveScan::All => {
            if tx.write {
                // As the coordinator scan of `live_jobs`: hold the
                // production exclusively first.
                tx.advisory(CLASS_PROD, key(&[production]), false)?;
            }
            tx.execute(UNPARK_DUE_ALL, &[&production, &up_to_us])
        }
    }
}
