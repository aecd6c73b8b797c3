//! The event log and its history horizon.

use crate::error::Result;
use crate::model::Event;
use crate::store::sqlite::rows::{collect, event_row};
use crate::store::sqlite::sql::event_cols;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

pub(super) fn events(
    c: &Connection,
    production: Option<&str>,
    after: u64,
    limit: usize,
) -> Result<Vec<Event>> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    match production {
        None => {
            let mut st = c.prepare_cached(concat!(
                "SELECT ",
                event_cols!(),
                " FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))?;
            let rows = st.query_map(params![after, limit as i64], event_row)?;
            collect(rows)
        }
        Some(p) => {
            let mut st = c.prepare_cached(concat!(
                "SELECT ",
                event_cols!(),
                " FROM events WHERE production = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3"
            ))?;
            let rows = st.query_map(params![p, after, limit as i64], event_row)?;
            collect(rows)
        }
    }
}

pub(super) fn history_horizon(c: &Connection) -> Result<u64> {
    let mut st = c.prepare_cached("SELECT value FROM meta WHERE key = 'history_horizon'")?;
    let h: Option<i64> = st.query_row([], |r| r.get(0)).optional()?;
    Ok(h.unwrap_or(0).max(0) as u64)
}

/// One writer at a time: every stored event has committed.
pub(super) fn oldest_events(c: &Connection, limit: usize) -> Result<Vec<(u64, i64)>> {
    let mut st = c.prepare_cached("SELECT seq, at_us FROM events ORDER BY seq LIMIT ?1")?;
    let rows = st.query_map([limit as i64], |r| {
        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)?))
    })?;
    collect(rows)
}

pub(super) fn prune_events_through(c: &Connection, through: u64) -> Result<u64> {
    let through = i64::try_from(through).unwrap_or(i64::MAX);
    let n = c
        .prepare_cached("DELETE FROM events WHERE seq <= ?1")?
        .execute([through])?;
    c.prepare_cached("UPDATE meta SET value = max(value, ?1) WHERE key = 'history_horizon'")?
        .execute([through])?;
    Ok(n as u64)
}

pub(super) fn last_claim_event(
    c: &Connection,
    production: &str,
    job: &str,
    claim_id: &Uuid,
) -> Result<Option<Event>> {
    // Newest first along the log: the event sought is the job's last
    // one, so the walk stops at it.
    let mut st = c.prepare_cached(concat!(
        "SELECT ",
        event_cols!(),
        " FROM events
         WHERE production = ?1 AND job = ?2 AND claim_id = ?3
         ORDER BY seq DESC LIMIT 1"
    ))?;
    Ok(st
        .query_row(params![production, job, claim_id.to_string()], event_row)
        .optional()?)
}
