//! The reads of the statistics: kept job counts, the waiting and lease
//! figures, the window's events (see [`crate::figures`]).

use crate::error::{Error, Result};
use crate::model::EventKind;
use crate::store::flow_events;
use crate::store::{ClaimedFigures, FlowEvent, FlowRange, Stored, WaitingFigures};
use rusqlite::{params, Connection};

/// The kept counts (every job and each terminal state, see
/// [`crate::store::sqlite::schema::stats_figures`]), the claimed jobs
/// counted along `jobs_claimed`, and the requested ones as the rest.
pub(super) fn state_counts(c: &Connection, production: &str) -> Result<Vec<(Stored, u64)>> {
    let corrupt = |what: &str| Error::Store(format!("corrupt job count: {what}"));
    let mut st = c.prepare_cached("SELECT state, n FROM job_counts WHERE production = ?1")?;
    let rows = st.query_map([production], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    let mut all = 0u64;
    let mut out = Vec::new();
    for r in rows {
        let (s, n) = r?;
        let n = u64::try_from(n).map_err(|_| corrupt("negative"))?;
        if s == "all" {
            all = n;
            continue;
        }
        match Stored::parse(&s) {
            Some(s) if !s.is_open() => out.push((s, n)),
            _ => return Err(corrupt(&format!("unknown count {s:?}"))),
        }
    }
    let claimed: i64 = c
        .prepare_cached(
            "SELECT count(*) FROM jobs INDEXED BY jobs_claimed
             WHERE production = ?1 AND state = 'claimed'",
        )?
        .query_row([production], |r| r.get(0))?;
    let claimed = claimed as u64;
    let ended: u64 = out.iter().map(|(_, n)| n).sum();
    let requested = all
        .checked_sub(ended + claimed)
        .ok_or_else(|| corrupt("fewer jobs than claimed and ended ones"))?;
    out.push((Stored::Requested, requested));
    out.push((Stored::Claimed, claimed));
    Ok(out)
}

pub(super) fn waiting_figures(
    c: &Connection,
    production: &str,
    now: i64,
) -> Result<WaitingFigures> {
    let mut later = c.prepare_cached(
        "SELECT count(*), min(coalesce(due_us, updated_us)) FROM jobs INDEXED BY jobs_waiting
         WHERE production = ?1 AND state = 'requested' AND coalesce(due_us, updated_us) > ?2",
    )?;
    let (n, next): (i64, Option<i64>) =
        later.query_row(params![production, now], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let mut oldest = c.prepare_cached(
        "SELECT coalesce(due_us, updated_us) FROM jobs INDEXED BY jobs_waiting
         WHERE production = ?1 AND state = 'requested' AND coalesce(due_us, updated_us) <= ?2
         ORDER BY coalesce(due_us, updated_us) LIMIT 1",
    )?;
    let mut q = oldest.query(params![production, now])?;
    let oldest_due_us = match q.next()? {
        Some(r) => Some(r.get(0)?),
        None => None,
    };
    Ok(WaitingFigures {
        later: n as u64,
        oldest_due_us,
        next_due_us: next,
    })
}

pub(super) fn claimed_figures(
    c: &Connection,
    production: &str,
    now: i64,
    horizon: i64,
    window_from: i64,
) -> Result<ClaimedFigures> {
    let mut st = c.prepare_cached(
        "SELECT
            coalesce(sum(e > ?2), 0),
            coalesce(sum(e <= ?2 AND attempts < max_attempts), 0),
            coalesce(sum(e <= ?2 AND attempts >= max_attempts), 0),
            coalesce(sum(e > ?2 AND e <= ?3), 0),
            coalesce(max(CASE WHEN e > ?2 THEN attempts END), 0),
            coalesce(sum(e <= ?2 AND e >= ?4), 0)
         FROM (SELECT coalesce(expires_us, -9223372036854775808) AS e, attempts, max_attempts
               FROM jobs INDEXED BY jobs_claimed
               WHERE production = ?1 AND state = 'claimed')",
    )?;
    Ok(
        st.query_row(params![production, now, horizon, window_from], |r| {
            Ok(ClaimedFigures {
                live: r.get::<_, i64>(0)? as u64,
                expired: r.get::<_, i64>(1)? as u64,
                exhausted: r.get::<_, i64>(2)? as u64,
                expiring: r.get::<_, i64>(3)? as u64,
                max_live_attempts: r.get::<_, i64>(4)? as u32,
                lapsed_in_window: r.get::<_, i64>(5)? as u64,
            })
        })?,
    )
}

/// Along the window (`events_by_time`), or from `after` on along the log
/// (`NOT INDEXED`: the rowid range, never the window's index).
pub(super) fn flow_events(c: &Connection, r: &FlowRange<'_>) -> Result<Vec<FlowEvent>> {
    let limit = r.limit as i64;
    let mut st;
    let rows = match r.after {
        None => {
            st = c.prepare_cached(concat!(
                "SELECT seq, at_us, kind, state, since_us, lapsed_us FROM events
                     INDEXED BY events_by_time
                 WHERE production = ?1 AND at_us >= ?2 AND at_us <= ?3 AND ",
                flow_events!(),
                " ORDER BY at_us DESC LIMIT ?4"
            ))?;
            st.query(params![r.production, r.from, r.to, limit])?
        }
        Some(after) => {
            st = c.prepare_cached(concat!(
                "SELECT seq, at_us, kind, state, since_us, lapsed_us FROM events NOT INDEXED
                 WHERE seq >= ?5 AND production = ?1 AND at_us >= ?2 AND at_us <= ?3 AND ",
                flow_events!(),
                " ORDER BY at_us DESC LIMIT ?4"
            ))?;
            st.query(params![r.production, r.from, r.to, limit, after])?
        }
    };
    flow_rows(rows)
}

fn flow_rows(mut q: rusqlite::Rows<'_>) -> Result<Vec<FlowEvent>> {
    let mut out = Vec::new();
    while let Some(r) = q.next()? {
        let kind: String = r.get(2)?;
        let state: Option<String> = r.get(3)?;
        out.push(FlowEvent {
            seq: r.get(0)?,
            at_us: r.get(1)?,
            kind: EventKind::parse(&kind)
                .ok_or_else(|| Error::Store(format!("corrupt event: unknown kind {kind:?}")))?,
            state: state.as_deref().and_then(Stored::parse),
            since_us: r.get(4)?,
            lapsed_us: r.get(5)?,
        });
    }
    Ok(out)
}

/// One more than the largest event sequence number in the snapshot: the
/// one writer commits events in sequence order, so every event below it
/// that ever commits is visible.
pub(super) fn flow_horizon(c: &Connection) -> Result<i64> {
    Ok(
        c.prepare_cached("SELECT coalesce(max(seq), 0) + 1 FROM events")?
            .query_row([], |r| r.get(0))?,
    )
}

pub(super) fn event_stored(c: &Connection, seq: i64) -> Result<bool> {
    Ok(
        c.prepare_cached("SELECT EXISTS (SELECT 1 FROM events WHERE seq = ?1)")?
            .query_row([seq], |r| r.get(0))?,
    )
}
