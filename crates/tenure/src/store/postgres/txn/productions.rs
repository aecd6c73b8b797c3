//! Production rows, under the production's advisory locks.

use super::rows::*;
use super::PgTxn;
use crate::error::{Error, Result};
use crate::store::postgres::sql::*;
use crate::store::postgres::{key, CLASS_PROD, CLASS_PROD_CREATE};
use crate::store::{backoff_cols, ProductionRow};
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
