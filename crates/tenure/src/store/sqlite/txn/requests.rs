//! What is used once: claims made under a request ID, and nonces.

use crate::error::Result;
use crate::store::sqlite::rows::{bad_col, uuid_col};
use crate::store::RequestRow;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

pub(super) fn claim_requests(
    c: &Connection,
    production: &str,
    request_ids: &[String],
) -> Result<Vec<RequestRow>> {
    let mut st = c.prepare_cached(
        "SELECT production, request_id, job, claim_id, secret_digest, args_digest, created_us
         FROM claim_requests WHERE production = ?1 AND request_id = ?2",
    )?;
    let mut out = Vec::new();
    for id in request_ids {
        let row = st
            .query_row([production, id.as_str()], |r| {
                Ok(RequestRow {
                    production: r.get(0)?,
                    request_id: r.get(1)?,
                    job: r.get(2)?,
                    claim_id: uuid_col(r, 3)?
                        .ok_or_else(|| bad_col(3, "request without a claim ID".into()))?,
                    secret_digest: r.get(4)?,
                    args_digest: r.get(5)?,
                    created_us: r.get(6)?,
                })
            })
            .optional()?;
        out.extend(row);
    }
    Ok(out)
}

pub(super) fn insert_claim_requests(c: &Connection, rows: &[RequestRow]) -> Result<bool> {
    let mut st = c.prepare_cached(
        "INSERT INTO claim_requests (production, request_id, job, claim_id,
             secret_digest, args_digest, created_us)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (production, request_id) DO NOTHING",
    )?;
    let mut all = true;
    for row in rows {
        all &= st.execute(params![
            row.production,
            row.request_id,
            row.job,
            row.claim_id.to_string(),
            row.secret_digest,
            row.args_digest,
            row.created_us
        ])? == 1;
    }
    Ok(all)
}

pub(super) fn insert_nonce(
    c: &Connection,
    nonce: &Uuid,
    production: &str,
    job: &str,
    claim_id: &Uuid,
    at_us: i64,
) -> Result<bool> {
    let mut st = c.prepare_cached(
        "INSERT INTO nonces (nonce, production, job, claim_id, used_us)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (nonce) DO NOTHING",
    )?;
    let n = st.execute(params![
        nonce.to_string(),
        production,
        job,
        claim_id.to_string(),
        at_us
    ])?;
    Ok(n == 1)
}
