//! Published facts, claim-request records and nonces.

use super::rows::*;
use super::PgTxn;
use crate::error::Result;
use crate::model::*;
use crate::store::postgres::sql::*;
use crate::store::{with_provenance, DerivedProvenance, RequestRow};
use uuid::Uuid;

pub(super) fn insert_facts(
    tx: &mut PgTxn,
    production: &str,
    job: &str,
    facts: &[(&str, &str)],
) -> Result<()> {
    for (i, (k, v)) in facts.iter().enumerate() {
        let ord = i as i64;
        tx.execute(INSERT_FACT, &[&production, &job, &ord, k, v])?;
    }
    Ok(())
}

pub(super) fn facts(
    tx: &mut PgTxn,
    production: &str,
    job: Option<&str>,
) -> Result<Vec<PublishedFact>> {
    let (stored, derived) = match job {
        Some(j) => (
            tx.query(JOB_FACTS, &[&production, &j])?,
            tx.query(JOB_PROVENANCE, &[&production, &j])?,
        ),
        None => (
            tx.query(PRODUCTION_FACTS, &[&production])?,
            tx.query(PRODUCTION_PROVENANCE, &[&production])?,
        ),
    };
    let stored = stored
        .iter()
        .map(|r| {
            (
                r.get::<_, i64>(4),
                PublishedFact {
                    production: r.get(0),
                    job: r.get(1),
                    key: r.get(2),
                    value: r.get(3),
                },
            )
        })
        .collect();
    let derived = derived
        .iter()
        .map(|r| {
            Ok(DerivedProvenance {
                job: r.get(0),
                at: provenance_col(r, 1)?
                    .ok_or_else(|| bad("provenance_at NULL where it is set".into()))?,
                claim_id: uuid_col(r, 2)?,
                holder: r.get(3),
                attempts: u32_col(r, 4)?,
                completed_us: r.get(5),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(with_provenance(production, stored, derived))
}

pub(super) fn claim_requests(
    tx: &mut PgTxn,
    production: &str,
    request_ids: &[String],
) -> Result<Vec<RequestRow>> {
    let rows = tx.query(CLAIM_REQUESTS, &[&production, &request_ids])?;
    rows.iter()
        .map(|r| {
            Ok(RequestRow {
                production: r.get(0),
                request_id: r.get(1),
                job: r.get(2),
                claim_id: uuid_col(r, 3)?
                    .ok_or_else(|| bad("request without a claim ID".into()))?,
                secret_digest: r.get(4),
                args_digest: r.get(5),
                created_us: r.get(6),
            })
        })
        .collect()
}

pub(super) fn insert_claim_requests(tx: &mut PgTxn, rows: &[RequestRow]) -> Result<bool> {
    let Some(first) = rows.first() else {
        return Ok(true);
    };
    let ids: Vec<&str> = rows.iter().map(|r| r.request_id.as_str()).collect();
    let jobs: Vec<&str> = rows.iter().map(|r| r.job.as_str()).collect();
    let claims: Vec<String> = rows.iter().map(|r| r.claim_id.to_string()).collect();
    let secrets: Vec<&[u8]> = rows.iter().map(|r| r.secret_digest.as_slice()).collect();
    let args: Vec<&[u8]> = rows.iter().map(|r| r.args_digest.as_slice()).collect();
    let times: Vec<i64> = rows.iter().map(|r| r.created_us).collect();
    let n = tx.execute(
        INSERT_CLAIM_REQUESTS,
        &[
            &first.production,
            &ids,
            &jobs,
            &claims,
            &secrets,
            &args,
            &times,
        ],
    )?;
    Ok(n == rows.len() as u64)
}

pub(super) fn insert_nonce(
    tx: &mut PgTxn,
    nonce: &Uuid,
    production: &str,
    job: &str,
    claim_id: &Uuid,
    at_us: i64,
) -> Result<bool> {
    let n = tx.execute(
        INSERT_NONCE,
        &[
            &nonce.to_string(),
            &production,
            &job,
            &claim_id.to_string(),
            &at_us,
        ],
    )?;
    Ok(n == 1)
}
