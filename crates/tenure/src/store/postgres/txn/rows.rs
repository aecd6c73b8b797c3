//! Decoding the rows the statements return: a prepared statement's rows
//! in binary form ([`Row`]), a simple-query request's in text form
//! ([`SimpleQueryRow`]), each column list through one decoder over
//! [`Cols`].

use crate::error::{Error, Result};
use crate::model::{Event, EventKind};
use crate::store::{backoff_from_cols, JobRow, ProductionRow, Stored};
use postgres::{Row, SimpleQueryRow};
use uuid::Uuid;

pub(super) fn bad(what: String) -> Error {
    Error::Store(format!("corrupt row: {what}"))
}

/// A row's columns by index, in either form; `NULL` is `None`, a missing
/// `NULL` or a value of another type is a corrupt row.
pub(super) trait Cols {
    fn opt_i64(&self, i: usize) -> Result<Option<i64>>;
    fn opt_i32(&self, i: usize) -> Result<Option<i32>>;
    fn opt_text(&self, i: usize) -> Result<Option<String>>;
    fn opt_bool(&self, i: usize) -> Result<Option<bool>>;
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>>;

    fn i64(&self, i: usize) -> Result<i64> {
        self.opt_i64(i)?.ok_or_else(|| null(i))
    }
    fn i32(&self, i: usize) -> Result<i32> {
        self.opt_i32(i)?.ok_or_else(|| null(i))
    }
    fn text(&self, i: usize) -> Result<String> {
        self.opt_text(i)?.ok_or_else(|| null(i))
    }
    fn boolean(&self, i: usize) -> Result<bool> {
        self.opt_bool(i)?.ok_or_else(|| null(i))
    }
    fn bytes(&self, i: usize) -> Result<Vec<u8>> {
        self.opt_bytes(i)?.ok_or_else(|| null(i))
    }
}

fn null(i: usize) -> Error {
    bad(format!("column {i} is NULL"))
}

impl Cols for Row {
    fn opt_i64(&self, i: usize) -> Result<Option<i64>> {
        binary(self, i)
    }
    fn opt_i32(&self, i: usize) -> Result<Option<i32>> {
        binary(self, i)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>> {
        binary(self, i)
    }
    fn opt_bool(&self, i: usize) -> Result<Option<bool>> {
        binary(self, i)
    }
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>> {
        binary(self, i)
    }
}

fn binary<'a, T: postgres::types::FromSql<'a>>(r: &'a Row, i: usize) -> Result<Option<T>> {
    r.try_get(i).map_err(|e| bad(format!("column {i}: {e}")))
}

/// The text form of the column types the statements return (bytes in
/// `bytea_output = hex`, set on every pooled connection).
impl Cols for SimpleQueryRow {
    fn opt_i64(&self, i: usize) -> Result<Option<i64>> {
        parsed(self, i)
    }
    fn opt_i32(&self, i: usize) -> Result<Option<i32>> {
        parsed(self, i)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>> {
        Ok(text_of(self, i)?.map(str::to_owned))
    }
    fn opt_bool(&self, i: usize) -> Result<Option<bool>> {
        match text_of(self, i)? {
            None => Ok(None),
            Some("t") => Ok(Some(true)),
            Some("f") => Ok(Some(false)),
            Some(v) => Err(bad(format!("column {i}: not a boolean: {v:?}"))),
        }
    }
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>> {
        let Some(v) = text_of(self, i)? else {
            return Ok(None);
        };
        let digits = v
            .strip_prefix("\\x")
            .filter(|d| d.len() % 2 == 0)
            .ok_or_else(|| bad(format!("column {i}: not hex bytes")))?;
        (0..digits.len())
            .step_by(2)
            .map(|k| {
                u8::from_str_radix(&digits[k..k + 2], 16)
                    .map_err(|_| bad(format!("column {i}: not hex bytes")))
            })
            .collect::<Result<Vec<u8>>>()
            .map(Some)
    }
}

/// A `bigint[]` column in its text form (`{1,2,3}`; its elements are
/// never NULL here).
pub(super) fn i64_array(r: &SimpleQueryRow, i: usize) -> Result<Vec<i64>> {
    let v = text_of(r, i)?.ok_or_else(|| null(i))?;
    let inner = v
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .ok_or_else(|| bad(format!("column {i}: not an array: {v:?}")))?;
    if inner.is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|e| {
            e.parse()
                .map_err(|_| bad(format!("column {i}: not a number: {e:?}")))
        })
        .collect()
}

fn text_of(r: &SimpleQueryRow, i: usize) -> Result<Option<&str>> {
    r.try_get(i).map_err(|e| bad(format!("column {i}: {e}")))
}

fn parsed<T: std::str::FromStr>(r: &SimpleQueryRow, i: usize) -> Result<Option<T>> {
    text_of(r, i)?
        .map(|v| {
            v.parse()
                .map_err(|_| bad(format!("column {i}: not a number: {v:?}")))
        })
        .transpose()
}

pub(super) fn uuid_col<R: Cols + ?Sized>(r: &R, i: usize) -> Result<Option<Uuid>> {
    match r.opt_text(i)? {
        None => Ok(None),
        Some(s) => Uuid::parse_str(&s)
            .map(Some)
            .map_err(|e| bad(format!("claim ID {s:?}: {e}"))),
    }
}

pub(super) fn u32_col<R: Cols + ?Sized>(r: &R, i: usize) -> Result<u32> {
    let v = r.i64(i)?;
    u32::try_from(v).map_err(|_| bad(format!("column {i} out of range: {v}")))
}

/// A job's `provenance_at` (column `i`): a position among its facts, so a
/// `u32`; any other value is a corrupt row.
pub(super) fn provenance_col<R: Cols + ?Sized>(r: &R, i: usize) -> Result<Option<u32>> {
    r.opt_i64(i)?
        .map(|v| u32::try_from(v).map_err(|_| bad(format!("provenance_at {v}"))))
        .transpose()
}

/// A job row (`job_cols!`, columns 0 to `JOB_COLS - 1`).
pub(super) fn job_row<R: Cols + ?Sized>(r: &R) -> Result<JobRow> {
    let state = r.text(7)?;
    let len = r.i64(4)?;
    Ok(JobRow {
        seq: r.i64(0)?,
        production: r.text(1)?,
        job: r.text(2)?,
        payload_digest: r.bytes(3)?,
        payload_len: u64::try_from(len).map_err(|_| bad(format!("payload length {len}")))?,
        priority: r.i32(5)?,
        max_attempts: u32_col(r, 6)?,
        state: Stored::parse(&state).ok_or_else(|| bad(format!("unknown state {state:?}")))?,
        attempts: u32_col(r, 8)?,
        claim_id: uuid_col(r, 9)?,
        secret_digest: r.opt_bytes(10)?,
        holder: r.opt_text(11)?,
        claimed_us: r.opt_i64(12)?,
        expires_us: r.opt_i64(13)?,
        created_us: r.i64(14)?,
        updated_us: r.i64(15)?,
        last_error: r.opt_text(16)?,
        due_us: r.opt_i64(17)?,
        parked: r.boolean(18)?,
        max_hold_us: r.opt_i64(19)?,
        backoff: backoff_from_cols(r.opt_i64(20)?, r.opt_i64(21)?)?,
        provenance_at: provenance_col(r, 22)?,
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
