//! The reads of the statistics (see [`crate::figures`]) and the fold of
//! the kept job counts.

use super::super::pool::Pool;
use super::PgTxn;
use crate::error::{Error, Result};
use crate::model::EventKind;
use crate::store::{ClaimedFigures, FlowEvent, FlowRange, Stored, WaitingFigures};

/// Advisory-lock key (bigint space) of the counts' fold: one at a time.
const FOLD_LOCK: i64 = 0x7465_6e75_7265_0002;

/// Moves the committed delta rows of every production into the counts,
/// unless another fold holds the lock (then that fold does it); returns
/// how many rows it moved. The rows are found production by production
/// through `job_count_deltas_by_production` (a deleted production's rows
/// stay until its name is created again; its counts and deltas sum to
/// nothing).
const FOLD_COUNTS: &str = "WITH lk AS MATERIALIZED (SELECT pg_try_advisory_xact_lock($1) AS got),
     d AS (DELETE FROM tenure.job_count_deltas
           WHERE (SELECT got FROM lk)
             AND production = ANY (ARRAY(SELECT name FROM tenure.productions))
           RETURNING production, state, delta),
     f AS (INSERT INTO tenure.job_counts (production, state, n)
           SELECT production, state, sum(delta) FROM d GROUP BY production, state
           ORDER BY production, state
           ON CONFLICT (production, state) DO UPDATE SET n = tenure.job_counts.n + EXCLUDED.n)
     SELECT count(*) FROM d";

/// After a fold that moved at least this many delta rows, the table is
/// vacuumed ([`after_fold`]). Those rows accumulated while nobody folded:
/// until vacuum, their dead entries stay in the index, each costing the
/// next scan a visit of its row, and the planner statistics from then rate
/// a scan of the whole table cheaper than the index.
const FOLD_VACUUM_ROWS: i64 = 10_000;

const STATE_COUNTS: &str = "SELECT state, sum(n)::bigint FROM (
         SELECT state, n FROM tenure.job_counts WHERE production = $1
         UNION ALL
         SELECT state, delta FROM tenure.job_count_deltas WHERE production = $1) c
     GROUP BY state";

/// The requested jobs not yet due, read from `jobs_waiting` alone (an
/// index-only scan: a heap page is read only if it changed since the
/// table's last vacuum). A job without a due time waits from its
/// `updated_us`, never later than the reading (the mark it is read
/// against covers every committed write), so `waiting_since_us` later
/// than the reading is `due_us` later than it.
const WAITING_LATER: &str = "SELECT count(*), min(waiting_since_us) FROM tenure.jobs
     WHERE production = $1 AND waiting_since_us IS NOT NULL AND waiting_since_us > $2";

const WAITING_OLDEST: &str = "SELECT waiting_since_us FROM tenure.jobs
     WHERE production = $1 AND waiting_since_us IS NOT NULL
       AND (due_us IS NULL OR due_us <= $2)
     ORDER BY waiting_since_us LIMIT 1";

const CLAIMED_FIGURES: &str = "SELECT
         count(*) FILTER (WHERE e > $2),
         count(*) FILTER (WHERE e <= $2 AND attempts < max_attempts),
         count(*) FILTER (WHERE e <= $2 AND attempts >= max_attempts),
         count(*) FILTER (WHERE e > $2 AND e <= $3),
         coalesce(max(attempts) FILTER (WHERE e > $2), 0),
         count(*) FILTER (WHERE e <= $2 AND e >= $4)
     FROM (SELECT coalesce(expires_us, -9223372036854775808) AS e, attempts, max_attempts
           FROM tenure.jobs WHERE production = $1 AND state = 'claimed') c";

const FLOW_EVENTS: &str = concat!(
    "SELECT seq, at_us, kind, state, since_us, lapsed_us FROM tenure.events
     WHERE production = $1 AND at_us >= $2 AND at_us <= $3 AND ",
    crate::store::flow_events!(),
    " ORDER BY at_us DESC LIMIT $4"
);

/// [`FLOW_EVENTS`] of the events with `seq >= $5`, read along the
/// production's log (`events_by_production` from `$5` on), never along the
/// window's index.
const FLOW_EVENTS_AFTER: &str = concat!(
    "WITH e AS MATERIALIZED (
         SELECT seq, at_us, kind, state, since_us, lapsed_us FROM tenure.events
         WHERE production = $1 AND seq >= $5)
     SELECT seq, at_us, kind, state, since_us, lapsed_us FROM e
     WHERE at_us >= $2 AND at_us <= $3 AND ",
    crate::store::flow_events!(),
    " ORDER BY at_us DESC LIMIT $4"
);

const EVENT_STORED: &str = "SELECT EXISTS (SELECT 1 FROM tenure.events WHERE seq = $1)";

/// The fold; returns how many delta rows it moved.
pub(in crate::store::postgres) fn fold_counts(tx: &mut PgTxn) -> Result<i64> {
    Ok(tx
        .query(FOLD_COUNTS, &[&FOLD_LOCK])?
        .first()
        .map_or(0, |r| r.get(0)))
}

/// After a committed fold of `moved` rows: `VACUUM (SKIP_LOCKED,
/// ANALYZE)` of the deltas when there were [`FOLD_VACUUM_ROWS`] or more,
/// outside any transaction. It skips the table while autovacuum holds it;
/// a failure (or a role that does not own the table) leaves it to
/// autovacuum and changes no figure.
pub(in crate::store::postgres) fn after_fold(pool: &Pool, moved: i64) {
    if moved < FOLD_VACUUM_ROWS {
        return;
    }
    let Ok(mut conn) = pool.take() else {
        return;
    };
    crate::stats::round_trip();
    let _ = conn
        .client
        .batch_execute("VACUUM (SKIP_LOCKED, ANALYZE) tenure.job_count_deltas");
    if !conn.client.is_closed() {
        pool.give_back(conn);
    }
}

pub(super) fn state_counts(tx: &mut PgTxn, production: &str) -> Result<Vec<(Stored, u64)>> {
    let rows = tx.query(STATE_COUNTS, &[&production])?;
    rows.iter()
        .map(|r| {
            let s: String = r.get(0);
            let n: i64 = r.get(1);
            let s = Stored::parse(&s)
                .ok_or_else(|| Error::Store(format!("corrupt job count: unknown state {s:?}")))?;
            let n = u64::try_from(n)
                .map_err(|_| Error::Store(format!("corrupt job count: {n} {} jobs", s.as_str())))?;
            Ok((s, n))
        })
        .collect()
}

pub(super) fn waiting_figures(
    tx: &mut PgTxn,
    production: &str,
    now: i64,
) -> Result<WaitingFigures> {
    let later = tx.query(WAITING_LATER, &[&production, &now])?;
    let (n, next): (i64, Option<i64>) = later
        .first()
        .map(|r| (r.get(0), r.get(1)))
        .unwrap_or((0, None));
    let oldest = tx.query(WAITING_OLDEST, &[&production, &now])?;
    Ok(WaitingFigures {
        later: n as u64,
        oldest_due_us: oldest.first().map(|r| r.get(0)),
        next_due_us: next,
    })
}

pub(super) fn claimed_figures(
    tx: &mut PgTxn,
    production: &str,
    now: i64,
    horizon: i64,
    window_from: i64,
) -> Result<ClaimedFigures> {
    let rows = tx.query(
        CLAIMED_FIGURES,
        &[&production, &now, &horizon, &window_from],
    )?;
    let r = rows
        .first()
        .ok_or_else(|| Error::Internal("the lease figures query gave no row".into()))?;
    Ok(ClaimedFigures {
        live: r.get::<_, i64>(0) as u64,
        expired: r.get::<_, i64>(1) as u64,
        exhausted: r.get::<_, i64>(2) as u64,
        expiring: r.get::<_, i64>(3) as u64,
        max_live_attempts: r.get::<_, i64>(4) as u32,
        lapsed_in_window: r.get::<_, i64>(5) as u64,
    })
}

pub(super) fn flow_events(tx: &mut PgTxn, r: &FlowRange<'_>) -> Result<Vec<FlowEvent>> {
    let limit = i64::try_from(r.limit).unwrap_or(i64::MAX);
    let rows = match r.after {
        None => tx.query(FLOW_EVENTS, &[&r.production, &r.from, &r.to, &limit])?,
        Some(after) => tx.query(
            FLOW_EVENTS_AFTER,
            &[&r.production, &r.from, &r.to, &limit, &after],
        )?,
    };
    flow_rows(&rows)
}

pub(super) fn event_stored(tx: &mut PgTxn, seq: i64) -> Result<bool> {
    Ok(tx
        .query(EVENT_STORED, &[&seq])?
        .first()
        .is_some_and(|r| r.get(0)))
}

fn flow_rows(rows: &[postgres::Row]) -> Result<Vec<FlowEvent>> {
    rows.iter()
        .map(|r| {
            let kind: String = r.get(2);
            let state: Option<String> = r.get(3);
            Ok(FlowEvent {
                seq: r.get(0),
                at_us: r.get(1),
                kind: EventKind::parse(&kind)
                    .ok_or_else(|| Error::Store(format!("corrupt event: unknown kind {kind:?}")))?,
                state: state.as_deref().and_then(Stored::parse),
                since_us: r.get(4),
                lapsed_us: r.get(5),
            })
        })
        .collect()
}
