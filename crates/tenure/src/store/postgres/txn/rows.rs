//! Decoding the rows the statements return.

use crate::error::{Error, Result};
use crate::model::{Event, EventKind};
use crate::store::{backoff_from_cols, JobRow, ProductionRow, Stored};
use postgres::Row;
use uuid::Uuid;

pub(super) fn bad(what: String) -> Error {
    Error::Store(format!("corrupt row: {what}"))
}

pub(super) fn uuid_col(r: &Row, i: usize) -> Result<Option<Uuid>> {
    let s: Option<String> = r.get(i);
    match s {
        None => Ok(None),
        Some(s) => Uuid::parse_str(&s)
            .map(Some)
            .map_err(|e| bad(format!("claim ID {s:?}: {e}"))),
    }
}

pub(super) fn u32_col(r: &Row, i: usize) -> Result<u32> {
    let v: i64 = r.get(i);
    u32::try_from(v).map_err(|_| bad(format!("column {i} out of range: {v}")))
}

pub(super) fn job_row(r: &Row) -> Result<JobRow> {
    let state: String = r.get(7);
    let len: i64 = r.get(4);
    Ok(JobRow {
        seq: r.get(0),
        production: r.get(1),
        job: r.get(2),
        payload_digest: r.get(3),
        payload_len: u64::try_from(len).map_err(|_| bad(format!("payload length {len}")))?,
        priority: r.get(5),
        max_attempts: u32_col(r, 6)?,
        state: Stored::parse(&state).ok_or_else(|| bad(format!("unknown state {state:?}")))?,
        attempts: u32_col(r, 8)?,
        claim_id: uuid_col(r, 9)?,
        secret_digest: r.get(10),
        holder: r.get(11),
        claimed_us: r.get(12),
        expires_us: r.get(13),
        created_us: r.get(14),
        updated_us: r.get(15),
        last_error: r.get(16),
        due_us: r.get(17),
        parked: r.get(18),
        max_hold_us: r.get(19),
        backoff: backoff_from_cols(r.get(20), r.get(21))?,
        provenance_at: None,
    })
}

pub(super) fn production_row(r: &Row) -> Result<ProductionRow> {
    Ok(ProductionRow {
        name: r.get(0),
        created_us: r.get(1),
        cancelled_us: r.get(2),
        backoff: backoff_from_cols(r.get(3), r.get(4))?,
    })
}

pub(super) fn event_row(r: &Row) -> Result<Event> {
    let kind: String = r.get(4);
    let state: Option<String> = r.get(5);
    let state = match state {
        None => None,
        Some(s) => Some(
            Stored::parse(&s)
                .ok_or_else(|| bad(format!("unknown state {s:?}")))?
                .as_job_state(),
        ),
    };
    let seq: i64 = r.get(0);
    let attempt: Option<i64> = r.get(8);
    Ok(Event {
        seq: u64::try_from(seq).map_err(|_| bad(format!("event seq {seq}")))?,
        at_us: r.get(1),
        production: r.get(2),
        job: r.get(3),
        kind: EventKind::parse(&kind).ok_or_else(|| bad(format!("unknown event kind {kind:?}")))?,
        state,
        claim_id: uuid_col(r, 6)?,
        holder: r.get(7),
        attempt: attempt
            .map(|a| u32::try_from(a).map_err(|_| bad(format!("attempt {a}"))))
            .transpose()?,
        expires_us: r.get(9),
        detail: r.get(10),
    })
}

pub(super) fn jobs(rows: Vec<Row>) -> Result<Vec<JobRow>> {
    rows.iter().map(job_row).collect()
}
