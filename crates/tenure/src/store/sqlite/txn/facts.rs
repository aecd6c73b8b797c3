//! Published facts, and the provenance a completed job keeps in its row.

use crate::error::Result;
use crate::model::PublishedFact;
use crate::store::sqlite::rows::{collect, uuid_col};
use crate::store::sqlite::sql::{insert_facts_sql, FACTS_PER_INSERT};
use crate::store::{with_provenance, DerivedProvenance};
use rusqlite::{Connection, Row};

pub(super) fn insert_facts(
    c: &Connection,
    production: &str,
    job: &str,
    facts: &[(&str, &str)],
) -> Result<()> {
    for (n, chunk) in facts.chunks(FACTS_PER_INSERT).enumerate() {
        let mut st = c.prepare_cached(insert_facts_sql(chunk.len()))?;
        st.raw_bind_parameter(1, production)?;
        st.raw_bind_parameter(2, job)?;
        for (i, (k, v)) in chunk.iter().enumerate() {
            let at = 3 + 3 * i;
            st.raw_bind_parameter(at, (n * FACTS_PER_INSERT + i) as i64)?;
            st.raw_bind_parameter(at + 1, k)?;
            st.raw_bind_parameter(at + 2, v)?;
        }
        st.raw_execute()?;
    }
    Ok(())
}

pub(super) fn facts(
    c: &Connection,
    production: &str,
    job: Option<&str>,
) -> Result<Vec<PublishedFact>> {
    let fact = |r: &Row<'_>| {
        Ok((
            r.get::<_, i64>(4)?,
            PublishedFact {
                production: r.get(0)?,
                job: r.get(1)?,
                key: r.get(2)?,
                value: r.get(3)?,
            },
        ))
    };
    let derived = |r: &Row<'_>| {
        Ok(DerivedProvenance {
            job: r.get(0)?,
            at: r.get(1)?,
            claim_id: uuid_col(r, 2)?,
            holder: r.get(3)?,
            attempts: r.get(4)?,
            completed_us: r.get(5)?,
        })
    };
    let (stored, derived) = match job {
        Some(j) => {
            let mut st = c.prepare_cached(
                "SELECT production, job, key, value, ord FROM facts
                 WHERE production = ?1 AND job = ?2 ORDER BY ord",
            )?;
            let stored = collect(st.query_map([production, j], fact)?)?;
            let mut st = c.prepare_cached(
                "SELECT job, provenance_at, claim_id, holder, attempts, updated_us FROM jobs
                 WHERE production = ?1 AND job = ?2 AND provenance_at IS NOT NULL",
            )?;
            let derived = collect(st.query_map([production, j], derived)?)?;
            (stored, derived)
        }
        None => {
            let mut st = c.prepare_cached(
                "SELECT production, job, key, value, ord FROM facts
                 WHERE production = ?1 ORDER BY job, ord",
            )?;
            let stored = collect(st.query_map([production], fact)?)?;
            let mut st = c.prepare_cached(
                "SELECT job, provenance_at, claim_id, holder, attempts, updated_us FROM jobs
                 WHERE production = ?1 AND provenance_at IS NOT NULL ORDER BY job",
            )?;
            let derived = collect(st.query_map([production], derived)?)?;
            (stored, derived)
        }
    };
    Ok(with_provenance(production, stored, derived))
}
