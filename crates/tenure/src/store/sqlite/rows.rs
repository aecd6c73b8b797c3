//! Rows decoded from and written into the store's tables.

use super::sql::APPEND_EVENT_SQL;
use crate::error::{Error, Result};
use crate::model::{Event, EventKind};
use crate::store::{backoff_cols, backoff_from_cols, JobRow, NewEvent, ProductionRow, Stored};
use rusqlite::{params, Connection, Row};
use uuid::Uuid;

/// An update of one job must touch exactly its row.
pub(super) fn one_row(n: usize, row: &JobRow) -> Result<()> {
    if n == 1 {
        Ok(())
    } else {
        Err(Error::Internal(format!(
            "a write to job {}/{} touched {n} rows",
            row.production, row.job
        )))
    }
}

pub(super) fn uuid_col(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<Uuid>> {
    // Read in place: no copy of the text.
    match r.get_ref(i)?.as_str_or_null()? {
        None => Ok(None),
        Some(s) => Uuid::parse_str(s).map(Some).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
        }),
    }
}

pub(super) fn bad_col(i: usize, what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, what.into())
}

pub(super) fn job_row(r: &Row<'_>) -> rusqlite::Result<JobRow> {
    let state = r.get_ref(7)?.as_str()?;
    let state =
        Stored::parse(state).ok_or_else(|| bad_col(7, format!("unknown state {state:?}")))?;
    Ok(JobRow {
        seq: r.get(0)?,
        production: r.get(1)?,
        job: r.get(2)?,
        payload_digest: r.get(3)?,
        payload_len: r.get(4)?,
        priority: r.get(5)?,
        max_attempts: r.get(6)?,
        state,
        attempts: r.get(8)?,
        claim_id: uuid_col(r, 9)?,
        secret_digest: r.get(10)?,
        holder: r.get(11)?,
        claimed_us: r.get(12)?,
        expires_us: r.get(13)?,
        created_us: r.get(14)?,
        updated_us: r.get(15)?,
        last_error: r.get(16)?,
        due_us: r.get(17)?,
        parked: r.get(18)?,
        max_hold_us: r.get(19)?,
        backoff: backoff_from_cols(r.get(20)?, r.get(21)?)
            .map_err(|e| bad_col(20, e.to_string()))?,
        provenance_at: r.get(22)?,
    })
}

pub(super) fn production_row(r: &Row<'_>) -> rusqlite::Result<ProductionRow> {
    Ok(ProductionRow {
        name: r.get(0)?,
        created_us: r.get(1)?,
        cancelled_us: r.get(2)?,
        backoff: backoff_from_cols(r.get(3)?, r.get(4)?).map_err(|e| bad_col(3, e.to_string()))?,
    })
}

pub(super) fn event_row(r: &Row<'_>) -> rusqlite::Result<Event> {
    let kind: String = r.get(4)?;
    let state: Option<String> = r.get(5)?;
    let state = match state {
        None => None,
        Some(s) => Some(
            Stored::parse(&s)
                .ok_or_else(|| bad_col(5, format!("unknown state {s:?}")))?
                .as_job_state(),
        ),
    };
    Ok(Event {
        seq: r.get(0)?,
        at_us: r.get(1)?,
        production: r.get(2)?,
        job: r.get(3)?,
        kind: EventKind::parse(&kind)
            .ok_or_else(|| bad_col(4, format!("unknown event kind {kind:?}")))?,
        state,
        claim_id: uuid_col(r, 6)?,
        holder: r.get(7)?,
        attempt: r.get(8)?,
        expires_us: r.get(9)?,
        detail: r.get(10)?,
    })
}

pub(super) fn insert_job(conn: &Connection, row: &JobRow, payload: &[u8]) -> Result<i64> {
    let mut st = conn.prepare_cached(
        "INSERT INTO jobs (production, job, payload_digest, payload_len, priority, max_attempts,
             state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us,
             created_us, updated_us, last_error, payload, due_us, parked, max_hold_us,
             backoff_base_us, backoff_cap_us, ended_us)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19, ?20, ?21, ?22, ?23)",
    )?;
    let (base, cap) = backoff_cols(row.backoff);
    st.execute(params![
        row.production,
        row.job,
        row.payload_digest,
        row.payload_len,
        row.priority,
        row.max_attempts,
        row.state.as_str(),
        row.attempts,
        row.claim_id.map(|u| u.to_string()),
        row.secret_digest,
        row.holder,
        row.claimed_us,
        row.expires_us,
        row.created_us,
        row.updated_us,
        row.last_error,
        payload,
        row.due_us,
        row.parked,
        row.max_hold_us,
        base,
        cap,
        ended_us(row),
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A row's `ended_us` column: its last transition's time once
/// its state is terminal, else NULL.
pub(super) fn ended_us(row: &JobRow) -> Option<i64> {
    (!row.state.is_open()).then_some(row.updated_us)
}

pub(super) fn append_event(conn: &Connection, ev: &NewEvent<'_>) -> Result<u64> {
    let mut st = conn.prepare_cached(APPEND_EVENT_SQL)?;
    insert_event(&mut st, ev, None)?;
    Ok(conn.last_insert_rowid() as u64)
}

/// A UUID as its hyphenated lower-case text (how the store keeps claim
/// IDs), written into `buf` instead of a new string.
pub(super) fn uuid_text<'b>(u: &Uuid, buf: &'b mut [u8; uuid::fmt::Hyphenated::LENGTH]) -> &'b str {
    u.hyphenated().encode_lower(buf)
}

/// Bind `ev` to [`APPEND_EVENT_SQL`], all but the mark (`?11`).
pub(super) fn bind_event(
    st: &mut rusqlite::Statement<'_>,
    ev: &NewEvent<'_>,
) -> rusqlite::Result<()> {
    let mut claim = [0; uuid::fmt::Hyphenated::LENGTH];
    st.raw_bind_parameter(1, ev.at_us)?;
    st.raw_bind_parameter(2, ev.production)?;
    st.raw_bind_parameter(3, ev.job)?;
    st.raw_bind_parameter(4, ev.kind.as_str())?;
    st.raw_bind_parameter(5, ev.state.map(|s| s.as_str()))?;
    st.raw_bind_parameter(6, ev.claim_id.map(|u| uuid_text(&u, &mut claim)))?;
    st.raw_bind_parameter(7, ev.holder)?;
    st.raw_bind_parameter(8, ev.attempt)?;
    st.raw_bind_parameter(9, ev.expires_us)?;
    st.raw_bind_parameter(10, ev.detail)?;
    st.raw_bind_parameter(12, ev.since_us)?;
    st.raw_bind_parameter(13, ev.lapsed_us)
}

/// Bind and run [`APPEND_EVENT_SQL`], the event carrying `mark` (see
/// [`super::txn::SqliteTxn::read_mark`]).
pub(super) fn insert_event(
    st: &mut rusqlite::Statement<'_>,
    ev: &NewEvent<'_>,
    mark: Option<i64>,
) -> rusqlite::Result<()> {
    bind_event(st, ev)?;
    st.raw_bind_parameter(11, mark)?;
    st.raw_execute().map(|_| ())
}

pub(super) fn collect<T>(
    rows: rusqlite::MappedRows<'_, impl FnMut(&Row<'_>) -> rusqlite::Result<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for r in rows {
        out.push(r?);
    }
    Ok(out)
}
