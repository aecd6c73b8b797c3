//! Schedule rows (see [`crate::store::ScheduleRow`]): a write transaction
//! locks the rows it reads (`FOR UPDATE`, in (production, name) order).

use super::rows::{bad, u32_col};
use super::PgTxn;
use crate::error::Result;
use crate::store::{backoff_cols, backoff_from_cols, ScheduleRow};
use postgres::Row;

macro_rules! schedule_cols {
    () => {
        "production, name, cadence, payload, priority, max_attempts, max_hold_us, \
         backoff_base_us, backoff_cap_us, catch_up, overlap, paused, settled_us, last_slot_us, \
         created_us, updated_us, tz"
    };
}

const SCHEDULE: &str = concat!(
    "SELECT ",
    schedule_cols!(),
    " FROM tenure.schedules WHERE production = $1 AND name = $2"
);
const SCHEDULE_FOR_UPDATE: &str = concat!(
    "SELECT ",
    schedule_cols!(),
    " FROM tenure.schedules WHERE production = $1 AND name = $2 FOR UPDATE"
);
const SCHEDULES: &str = concat!(
    "SELECT ",
    schedule_cols!(),
    " FROM tenure.schedules WHERE $1::text IS NULL OR production = $1 ORDER BY production, name"
);
const SCHEDULES_FOR_UPDATE: &str = concat!(
    "SELECT ",
    schedule_cols!(),
    " FROM tenure.schedules WHERE $1::text IS NULL OR production = $1 \
     ORDER BY production, name FOR UPDATE"
);
const PUT_SCHEDULE: &str = concat!(
    "INSERT INTO tenure.schedules (",
    schedule_cols!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) \
     ON CONFLICT (production, name) DO UPDATE SET cadence = excluded.cadence, \
     payload = excluded.payload, priority = excluded.priority, \
     max_attempts = excluded.max_attempts, max_hold_us = excluded.max_hold_us, \
     backoff_base_us = excluded.backoff_base_us, backoff_cap_us = excluded.backoff_cap_us, \
     catch_up = excluded.catch_up, overlap = excluded.overlap, paused = excluded.paused, \
     settled_us = excluded.settled_us, last_slot_us = excluded.last_slot_us, \
     created_us = excluded.created_us, updated_us = excluded.updated_us, tz = excluded.tz"
);
const DELETE_SCHEDULE: &str = "DELETE FROM tenure.schedules WHERE production = $1 AND name = $2";

fn row(r: &Row) -> Result<ScheduleRow> {
    Ok(ScheduleRow {
        production: r.get(0),
        name: r.get(1),
        cadence: r.get(2),
        payload: r.get(3),
        priority: r.get(4),
        max_attempts: u32_col(r, 5)?,
        max_hold_us: r.get(6),
        backoff: backoff_from_cols(r.get(7), r.get(8))?,
        catch_up: u32_col(r, 9)?,
        overlap: r.get(10),
        paused: r.get(11),
        settled_us: r.get(12),
        last_slot_us: r.get(13),
        created_us: r.get(14),
        updated_us: r.get(15),
        tz: r.get(16),
    })
}

pub(super) fn schedule(
    tx: &mut PgTxn,
    production: &str,
    name: &str,
) -> Result<Option<ScheduleRow>> {
    let sql = if tx.write {
        SCHEDULE_FOR_UPDATE
    } else {
        SCHEDULE
    };
    tx.query(sql, &[&production, &name])?
        .first()
        .map(row)
        .transpose()
}

pub(super) fn schedules(
    tx: &mut PgTxn,
    production: Option<&str>,
    lock: bool,
) -> Result<Vec<ScheduleRow>> {
    let sql = if lock && tx.write {
        SCHEDULES_FOR_UPDATE
    } else {
        SCHEDULES
    };
    tx.query(sql, &[&production])?.iter().map(row).collect()
}

pub(super) fn put_schedule(tx: &mut PgTxn, s: &ScheduleRow) -> Result<()> {
    let (base, cap) = backoff_cols(s.backoff);
    let max_attempts = i64::from(s.max_attempts);
    let catch_up = i64::from(s.catch_up);
    let n = tx.execute(
        PUT_SCHEDULE,
        &[
            &s.production,
            &s.name,
            &s.cadence,
            &s.payload,
            &s.priority,
            &max_attempts,
            &s.max_hold_us,
            &base,
            &cap,
            &catch_up,
            &s.overlap,
            &s.paused,
            &s.settled_us,
            &s.last_slot_us,
            &s.created_us,
            &s.updated_us,
            &s.tz,
        ],
    )?;
    if n != 1 {
        return Err(bad(format!(
            "writing schedule {}/{} touched {n} rows",
            s.production, s.name
        )));
    }
    Ok(())
}

pub(super) fn delete_schedule(tx: &mut PgTxn, production: &str, name: &str) -> Result<bool> {
    Ok(tx.execute(DELETE_SCHEDULE, &[&production, &name])? > 0)
}
