//! Published facts, claim-request records and nonces.

use super::rows::*;
use super::PgTxn;
use crate::error::Result;
use crate::model::*;
use crate::store::RequestRow;
use uuid::Uuid;

pub(super) fn insert_facts(
    tx: &mut PgTxn,
    production: &str,
    job: &str,
    facts: &[(&str, &str)],
) -> Result<()> {
    for (i, (k, v)) in facts.iter().enumerate() {
        let ord = i as i64;
        tx.execute(
            "INSERT INTO tenure.facts (production, job, ord, key, value)
             VALUES ($1, $2, $3, $4, $5)",
            &[&production, &job, &ord, k, v],
        )?;
    }
    Ok(())
}

pub(super) fn facts(
    tx: &mut PgTxn,
    production: &str,
    job: Option<&str>,
) -> Result<Vec<PublishedFact>> {
    let rows = match job {
        Some(j) => tx.query(
            "SELECT production, job, key, value FROM tenure.facts
             WHERE production = $1 AND job = $2 ORDER BY ord",
            &[&production, &j],
        )?,
        None => tx.query(
            "SELECT production, job, key, value FROM tenure.facts
             WHERE production = $1 ORDER BY job, ord",
            &[&production],
        )?,
    };
    Ok(rows
        .iter()
        .map(|r| PublishedFact {
            production: r.get(0),
            job: r.get(1),
            key: r.get(2),
            value: r.get(3),
        })
        .collect())
}

pub(super) fn claim_requests(
    tx: &mut PgTxn,
    production: &str,
    request_ids: &[String],
) -> Result<Vec<RequestRow>> {
    let rows = tx.query(
        "SELECT production, request_id, job, claim_id, secret_digest, args_digest, created_us
         FROM tenure.claim_requests WHERE production = $1 AND request_id = ANY($2::text[])",
        &[&production, &request_ids],
    )?;
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
        "INSERT INTO tenure.claim_requests (production, request_id, job, claim_id,
             secret_digest, args_digest, created_us)
         SELECT $1, u.r, u.j, u.c, u.s, u.a, u.t
         FROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[],
                     $7::bigint[]) AS u(r, j, c, s, a, t)
         ON CONFLICT (production, request_id) DO NOTHING",
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
        "INSERT INTO tenure.nonces (nonce, production, job, claim_id, used_us)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (nonce) DO NOTHING",
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
