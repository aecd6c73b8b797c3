//! The event log: appending (with the writer's registration) and listing
//! below the commit-order horizon (see the backend's module docs).

use super::rows::*;
use super::PgTxn;
use crate::error::{Error, Result};
use crate::model::*;
use crate::store::postgres::map_err;
use crate::store::postgres::sql::*;
use crate::store::NewEvent;
use postgres::types::ToSql;
use uuid::Uuid;

/// The event horizon M from (1), the sequence's next value, and (2), the
/// smallest registered lower bound still held (`None`: no writer in
/// flight): the smaller.
pub(super) fn horizon(next: i64, registered: Option<i64>) -> i64 {
    registered.map_or(next, |r| r.min(next))
}

impl PgTxn {
    /// The event horizon M: every event with a sequence number below M that
    /// will ever commit has committed, and is visible to the next statement
    /// of this transaction. (1) the sequence's next value, then (2) the
    /// smallest registered lower bound still held, both before that
    /// statement's snapshot (see the backend's module docs).
    fn event_horizon(&mut self) -> Result<i64> {
        let (next, registered) = if self.write {
            // READ COMMITTED: each statement takes a fresh snapshot, so the
            // listing that follows is later than (1) and (2).
            let next = self.query(EVENT_HORIZON_NEXT, &[])?;
            let reg = self.query(EVENT_HORIZON_REGISTERED, &[])?;
            (
                next.first().map(|r| r.get::<_, i64>(0)),
                reg.first().and_then(|r| r.get::<_, Option<i64>>(0)),
            )
        } else {
            // REPEATABLE READ took its snapshot at this transaction's first
            // statement, possibly before (1). A listing needs no snapshot
            // shared with earlier reads: end the transaction, read (1) and
            // (2) outside it (one round trip, in this order), and begin the
            // read transaction again (as `begin_read` does); its snapshot
            // comes at the listing, after (2).
            let sql = format!("ROLLBACK; {EVENT_HORIZON_NEXT}; {EVENT_HORIZON_REGISTERED}");
            crate::stats::round_trip();
            let r = self.c().client.simple_query(&sql).map_err(map_err);
            // (A read transaction takes no advisory locks; none survive.)
            self.held.clear();
            let msgs = self.track(r)?;
            let mut vals = msgs.iter().filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::parse::<i64>)),
                _ => None,
            });
            let next = vals.next().flatten().transpose();
            let reg = vals.next().flatten().transpose();
            self.batch(BEGIN_READ)?;
            match (next, reg) {
                (Ok(n), Ok(r)) => (n, r),
                _ => return Err(Error::Internal("unreadable event horizon".into())),
            }
        };
        let next =
            next.ok_or_else(|| Error::Internal("the event horizon query gave no row".into()))?;
        Ok(horizon(next, registered))
    }

    /// Events with `after < seq < below` in the current snapshot.
    fn events_below(
        &mut self,
        production: Option<&str>,
        after: u64,
        limit: usize,
        below: i64,
    ) -> Result<Vec<Event>> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if below <= after.saturating_add(1) {
            return Ok(Vec::new());
        }
        let rows = match production {
            None => self.query(EVENTS_BELOW, &[&after, &below, &limit])?,
            Some(p) => self.query(PRODUCTION_EVENTS_BELOW, &[&p, &after, &below, &limit])?,
        };
        rows.iter().map(event_row).collect()
    }
}

pub(super) fn append_event(tx: &mut PgTxn, ev: &NewEvent<'_>) -> Result<()> {
    let claim = ev.claim_id.map(|u| u.to_string());
    let attempt = ev.attempt.map(i64::from);
    let state = ev.state.map(|s| s.as_str());
    let kind = ev.kind.as_str();
    let p: [&(dyn ToSql + Sync); 12] = [
        &ev.at_us,
        &ev.production,
        &ev.job,
        &kind,
        &state,
        &claim,
        &ev.holder,
        &attempt,
        &ev.expires_us,
        &ev.detail,
        &ev.since_us,
        &ev.lapsed_us,
    ];
    let rows = if tx.event_reg.is_some() {
        tx.query(APPEND_EVENT, &p)?
    } else {
        // The transaction's first event: register the lower bound of
        // its sequence numbers, then allocate, in this one statement.
        // The materialized CTE runs (and takes the lock) when the
        // insert fetches its one row, before the row's identity value
        // is drawn in the projection (see the backend's module docs).
        let rows = tx.query(
            APPEND_FIRST_EVENT,
            &[
                p[0],
                p[1],
                p[2],
                p[3],
                p[4],
                p[5],
                p[6],
                p[7],
                p[8],
                p[9],
                p[10],
                p[11],
                &EVENT_REG,
                &EVENT_REG_LIMIT,
            ],
        )?;
        if rows.is_empty() {
            return Err(Error::Store(format!(
                "the event sequence has reached {EVENT_REG_LIMIT}, the most this backend \
                 can order for tailers"
            )));
        }
        tx.event_reg = Some(tx.savepoints);
        rows
    };
    if rows.is_empty() {
        return Err(Error::Internal("INSERT ... RETURNING gave no row".into()));
    }
    Ok(())
}

pub(super) fn events(
    tx: &mut PgTxn,
    production: Option<&str>,
    after: u64,
    limit: usize,
) -> Result<Vec<Event>> {
    // Only sequence numbers below the horizon: every smaller one that
    // will ever commit is visible to this statement (the backend's module docs).
    let below = tx.event_horizon()?;
    tx.events_below(production, after, limit, below)
}

pub(super) fn snapshot_events(tx: &mut PgTxn, after: u64, limit: usize) -> Result<Vec<Event>> {
    // The checker: this snapshot's events, no horizon, no restart.
    tx.events_below(None, after, limit, i64::MAX)
}

pub(super) fn history_horizon(tx: &mut PgTxn) -> Result<u64> {
    let rows = tx.query(HISTORY_HORIZON, &[])?;
    Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0)).max(0) as u64)
}

/// Only below the commit-order horizon (the backend's module docs): a pruned prefix
/// never has an event with a smaller sequence number commit after it.
pub(super) fn oldest_events(tx: &mut PgTxn, limit: usize) -> Result<Vec<(u64, i64)>> {
    let below = tx.event_horizon()?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx.query(OLDEST_EVENTS, &[&below, &limit])?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, i64>(1)))
        .collect())
}

pub(super) fn prune_events_through(tx: &mut PgTxn, through: u64) -> Result<u64> {
    let through = i64::try_from(through).unwrap_or(i64::MAX);
    let n = tx.execute(PRUNE_EVENTS_THROUGH, &[&through])?;
    tx.execute(RAISE_HISTORY_HORIZON, &[&through])?;
    Ok(n)
}

pub(super) fn last_claim_event(
    tx: &mut PgTxn,
    production: &str,
    job: &str,
    claim_id: &Uuid,
) -> Result<Option<Event>> {
    let rows = tx.query(
        LAST_CLAIM_EVENT,
        &[&production, &job, &claim_id.to_string()],
    )?;
    rows.first().map(event_row).transpose()
}
