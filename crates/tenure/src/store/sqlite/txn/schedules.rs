//! Schedule rows (see [`crate::store::ScheduleRow`]). The store-wide writer
//! lock is every row's lock.

use crate::error::Result;
use crate::store::sqlite::rows::bad_col;
use crate::store::{backoff_cols, backoff_from_cols, ScheduleRow};
use rusqlite::{params, Connection, OptionalExtension, Row};

const COLS: &str = "production, name, cadence, payload, priority, max_attempts, max_hold_us,
    backoff_base_us, backoff_cap_us, catch_up, overlap, paused, settled_us, last_slot_us,
    created_us, updated_us, tz";

fn row(r: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    Ok(ScheduleRow {
        production: r.get(0)?,
        name: r.get(1)?,
        cadence: r.get(2)?,
        payload: r.get(3)?,
        priority: r.get(4)?,
        max_attempts: r.get(5)?,
        max_hold_us: r.get(6)?,
        backoff: backoff_from_cols(r.get(7)?, r.get(8)?).map_err(|e| bad_col(7, e.to_string()))?,
        catch_up: r.get(9)?,
        overlap: r.get(10)?,
        paused: r.get(11)?,
        settled_us: r.get(12)?,
        last_slot_us: r.get(13)?,
        created_us: r.get(14)?,
        updated_us: r.get(15)?,
        tz: r.get(16)?,
    })
}

pub(super) fn schedule(
    c: &Connection,
    production: &str,
    name: &str,
) -> Result<Option<ScheduleRow>> {
    let sql = format!("SELECT {COLS} FROM schedules WHERE production = ?1 AND name = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row([production, name], row)
        .optional()?)
}

pub(super) fn schedules(c: &Connection, production: Option<&str>) -> Result<Vec<ScheduleRow>> {
    let sql = format!(
        "SELECT {COLS} FROM schedules WHERE ?1 IS NULL OR production = ?1 ORDER BY production, name"
    );
    let mut st = c.prepare_cached(&sql)?;
    let rows = st.query_map([production], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn put_schedule(c: &Connection, s: &ScheduleRow) -> Result<()> {
    let sql = format!(
        "INSERT OR REPLACE INTO schedules ({COLS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
    );
    let (base, cap) = backoff_cols(s.backoff);
    c.prepare_cached(&sql)?.execute(params![
        s.production,
        s.name,
        s.cadence,
        s.payload,
        s.priority,
        s.max_attempts,
        s.max_hold_us,
        base,
        cap,
        s.catch_up,
        s.overlap,
        s.paused,
        s.settled_us,
        s.last_slot_us,
        s.created_us,
        s.updated_us,
        s.tz
    ])?;
    Ok(())
}

pub(super) fn delete_schedule(c: &Connection, production: &str, name: &str) -> Result<bool> {
    let n = c
        .prepare_cached("DELETE FROM schedules WHERE production = ?1 AND name = ?2")?
        .execute([production, name])?;
    Ok(n > 0)
}
