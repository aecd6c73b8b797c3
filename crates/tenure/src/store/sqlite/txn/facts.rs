//! Published facts, and the provenance a completed job keeps in its row.

use crate::error::Result;
use crate::model::PublishedFact;
use crate::store::sqlite::rows::{collect, uuid_col};
use crate::store::sqlite::sql::{insert_facts_sql, FACTS_PER_INSERT};
use rusqlite::{Connection, Row};
use uuid::Uuid;

/// A completed job's provenance kept in its row (`jobs.provenance_at`).
struct Derived {
    job: String,
    /// Its position among the job's facts (`provenance_at`).
    at: u32,
    claim_id: Option<Uuid>,
    holder: Option<String>,
    attempts: u32,
    completed_us: i64,
}

/// Merge stored facts (`(ord, fact)`, ordered by job, then ord) with the
/// provenance of jobs that keep it in their row (ordered by job): each
/// job's provenance goes before its stored fact of ord `at` (after all of
/// them if none is), which is where a store of fact rows keeps it.
fn with_provenance(
    production: &str,
    stored: Vec<(i64, PublishedFact)>,
    derived: Vec<Derived>,
) -> Vec<PublishedFact> {
    let mut out = Vec::with_capacity(stored.len() + crate::model::PROVENANCE_FACTS * derived.len());
    let mut derived = derived.into_iter().peekable();
    let put = |out: &mut Vec<PublishedFact>, d: Derived| {
        let facts =
            crate::model::provenance(d.claim_id, d.holder.as_deref(), d.attempts, d.completed_us);
        out.extend(facts.into_iter().map(|(key, value)| PublishedFact {
            production: production.to_owned(),
            job: d.job.clone(),
            key: key.to_owned(),
            value,
        }));
    };
    for (ord, f) in stored {
        while let Some(d) =
            derived.next_if(|d| d.job < f.job || (d.job == f.job && i64::from(d.at) <= ord))
        {
            put(&mut out, d);
        }
        out.push(f);
    }
    for d in derived {
        put(&mut out, d);
    }
    out
}

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
        Ok(Derived {
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
