//! Production rows, under the production's advisory locks.

use super::rows::*;
use super::PgTxn;
use crate::error::{Error, Result};
use crate::store::postgres::sql::*;
use crate::store::postgres::{key, literal, CLASS_PROD, CLASS_PROD_CREATE};
use crate::store::{backoff_cols, rate_from_cols, GateRow, ProductionRow};
use crate::ttl::Backoff;

impl PgTxn {
    fn production_select(&mut self, name: &str) -> Result<Option<ProductionRow>> {
        let rows = self.query(PRODUCTION, &[&name])?;
        rows.first().map(production_row).transpose()
    }
}

pub(super) fn production(tx: &mut PgTxn, name: &str) -> Result<Option<ProductionRow>> {
    if !tx.write {
        return tx.production_select(name);
    }
    // Shared: submissions and claims on one production run in parallel;
    // cancelling it takes the same key exclusively.
    tx.advisory(CLASS_PROD, key(&[name]), true)?;
    if let Some(p) = tx.production_select(name)? {
        return Ok(Some(p));
    }
    // Not there: serialize creators of this name, then look again.
    tx.advisory(CLASS_PROD_CREATE, key(&[name]), false)?;
    tx.production_select(name)
}

pub(super) fn production_exists(tx: &mut PgTxn, name: &str) -> Result<bool> {
    let k = key(&[name]);
    if !tx.write
        || tx
            .held
            .iter()
            .any(|&(c, key, _, _)| c == CLASS_PROD && key == k)
    {
        return Ok(tx.production_select(name)?.is_some());
    }
    // The shared lock and the lookup in one statement (`OFFSET 0` keeps
    // the lock's subquery, and with it the call, in the plan).
    let rows = tx.query(LOCK_PRODUCTION_EXISTS, &[&CLASS_PROD, &k, &name])?;
    tx.held.push((CLASS_PROD, k, true, tx.savepoints));
    Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
}

pub(super) fn insert_production(tx: &mut PgTxn, row: &ProductionRow) -> Result<()> {
    let (base, cap) = backoff_cols(row.backoff);
    tx.execute(
        INSERT_PRODUCTION,
        &[&row.name, &row.created_us, &row.cancelled_us, &base, &cap],
    )?;
    Ok(())
}

pub(super) fn set_production_backoff(
    tx: &mut PgTxn,
    name: &str,
    backoff: Option<Backoff>,
) -> Result<()> {
    let (base, cap) = backoff_cols(backoff);
    tx.execute(SET_PRODUCTION_BACKOFF, &[&name, &base, &cap])?;
    Ok(())
}

pub(super) fn set_production_cancelled(tx: &mut PgTxn, name: &str, at_us: i64) -> Result<()> {
    // Normally already held since the scan: no submission is in flight.
    tx.advisory(CLASS_PROD, key(&[name]), false)?;
    let live = tx.query(COUNT_LIVE_JOBS, &[&name])?;
    let n: i64 = live.first().map(|r| r.get(0)).unwrap_or(0);
    if n != 0 {
        return Err(Error::Busy(format!(
            "{n} jobs were submitted to production {name:?} while it was being cancelled; \
             nothing was cancelled, retry"
        )));
    }
    tx.execute(SET_PRODUCTION_CANCELLED, &[&name, &at_us])?;
    Ok(())
}

pub(super) fn productions(tx: &mut PgTxn) -> Result<Vec<ProductionRow>> {
    let rows = tx.query(PRODUCTIONS, &[])?;
    rows.iter().map(production_row).collect()
}

/// A gate row from `gate_cols!` at columns `at..at + 6`.
pub(super) fn gate_row<R: Cols + ?Sized>(r: &R, at: usize) -> Result<GateRow> {
    Ok(GateRow {
        paused_us: r.opt_i64(at)?,
        concurrency: r
            .opt_i64(at + 1)?
            .map(u32::try_from)
            .transpose()
            .map_err(|_| Error::Store("corrupt concurrency limit".into()))?,
        rate: rate_from_cols(r.opt_i64(at + 2)?, r.opt_i64(at + 3)?, r.opt_i64(at + 4)?)?,
        rate_tat_us: r.i64(at + 5)?,
    })
}

/// The gate row; in a write transaction under the production's shared
/// lock (taken with the read where not yet held) and `FOR UPDATE`, so the
/// claims of a gated production run one at a time.
pub(super) fn gates(tx: &mut PgTxn, name: &str) -> Result<Option<GateRow>> {
    if !tx.write {
        let rows = tx.query(GATES, &[&name])?;
        return rows.first().map(|r| gate_row(r, 0)).transpose();
    }
    if tx.ungated.iter().any(|p| p == name) {
        return Ok(None);
    }
    if let Some(g) = tx.claim_gate.as_ref().filter(|g| g.production == name) {
        // Read, and locked, by the claim's first statement.
        return Ok(g.row);
    }
    let k = key(&[name]);
    if tx
        .held
        .iter()
        .any(|&(c, key, _, _)| c == CLASS_PROD && key == k)
    {
        let rows = tx.query(GATES_FOR_UPDATE, &[&name])?;
        return rows.first().map(|r| gate_row(r, 0)).transpose();
    }
    let rows = tx.query(LOCK_GATES_FOR_UPDATE, &[&CLASS_PROD, &k, &name])?;
    tx.held.push((CLASS_PROD, k, true, tx.savepoints));
    rows.first()
        .filter(|r| r.get::<_, Option<i64>>(5).is_some())
        .map(|r| gate_row(r, 0))
        .transpose()
}

/// Write the gate row, deferred as a transition's writes are (see
/// [`PgTxn::defer`]): a rate-limited claim charges its rate in no request
/// of its own.
pub(super) fn set_gates(tx: &mut PgTxn, name: &str, g: &GateRow) -> Result<()> {
    use literal::{int, opt_int, text};
    tx.ungated.retain(|p| p != name);
    tx.claim_gate = None;
    let rate = g.rate;
    tx.defer(
        "tenure_set_gates",
        "text, bigint, bigint, bigint, bigint, bigint, bigint",
        SET_GATES,
        &[
            text(name),
            opt_int(g.paused_us),
            opt_int(g.concurrency.map(i64::from)),
            opt_int(rate.map(|r| i64::from(r.0))),
            opt_int(rate.map(|r| r.1)),
            opt_int(rate.map(|r| i64::from(r.2))),
            int(g.rate_tat_us),
        ],
    )
}

/// A claim of `name` decided that no gate applies: a read whose snapshot
/// began before the production's shared lock was granted may have missed
/// a gate committed meanwhile (a coordinator holds the lock exclusively
/// while it sets one, [`hold_production`]; a named claim's locked read
/// takes no production lock at all). So a later request, at the latest
/// the `COMMIT`'s, takes the shared lock (where not yet held) and then
/// runs the guard [`GATE_GUARD`], a later
/// statement and so a later snapshot: a gate committed before the lock was
/// granted fails the transaction, and any later one waits for it to end.
/// Costs no round trip of its own. Once per production and transaction.
pub(super) fn claim_without_gates(tx: &mut PgTxn, name: &str) -> Result<()> {
    if tx.gate_guards.iter().any(|(p, _)| p == name) {
        return Ok(());
    }
    let k = key(&[name]);
    if !tx
        .held
        .iter()
        .any(|&(c, key, _, _)| c == CLASS_PROD && key == k)
    {
        // Numbers only: nothing to quote. Taken just before the guard
        // (not recorded as held: no read in between relies on it).
        tx.guards.push_str(&format!(
            "SELECT pg_catalog.pg_advisory_xact_lock_shared({CLASS_PROD}, {k}); "
        ));
    }
    let guard = tx.generic_call(
        GATE_GUARD_NAME,
        GATE_GUARD_TYPES,
        GATE_GUARD,
        &[literal::text(name)],
    )?;
    tx.defer_check(guard);
    tx.gate_guards.push((name.to_owned(), tx.savepoints));
    Ok(())
}

/// Hold the production exclusively: every claim (and submission) of it in
/// flight has committed or rolled back.
pub(super) fn hold_production(tx: &mut PgTxn, name: &str) -> Result<()> {
    tx.advisory(CLASS_PROD, key(&[name]), false)
}

pub(super) fn live_expiries(tx: &mut PgTxn, name: &str, after: i64) -> Result<Vec<i64>> {
    let rows = tx.query(LIVE_EXPIRIES, &[&name, &after])?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// [`crate::store::Txn::live_expiries_sampled`] on the server's clock: one
/// statement.
pub(super) fn live_expiries_sampled(
    tx: &mut PgTxn,
    name: &str,
    after: i64,
    leases: bool,
) -> Result<(i64, Vec<i64>)> {
    let rows = tx.query(LIVE_EXPIRIES_SAMPLED, &[&name, &after, &leases])?;
    let r = rows
        .first()
        .ok_or_else(|| Error::Internal("the sampled lease read gave no row".into()))?;
    Ok((r.get(0), r.get(1)))
}
