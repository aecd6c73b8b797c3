//! The store's layout and its creation: a missing schema is created, an
//! older one migrated forward (see [`super::migrate`]), in one transaction
//! under a transaction-level advisory lock.

use super::migrate::*;
use super::pool::Pool;
use super::{map_err, SCHEMA_LOCK};
use crate::error::{Error, Result};
use crate::store::SCHEMA_VERSION;
use postgres::Client;

const SCHEMA_V2: &str = r#"
CREATE SCHEMA IF NOT EXISTS tenure;
CREATE TABLE tenure.meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value BIGINT NOT NULL
);
CREATE TABLE tenure.marks (
    stripe INT PRIMARY KEY,
    value  BIGINT NOT NULL
);
INSERT INTO tenure.marks (stripe, value) SELECT s, 0 FROM generate_series(0, 15) s;
CREATE TABLE tenure.productions (
    name         TEXT COLLATE "C" PRIMARY KEY,
    created_us   BIGINT NOT NULL,
    cancelled_us BIGINT
);
CREATE TABLE tenure.jobs (
    seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    production     TEXT COLLATE "C" NOT NULL,
    job            TEXT COLLATE "C" NOT NULL,
    payload_digest BYTEA NOT NULL,
    payload_len    BIGINT NOT NULL,
    priority       INT NOT NULL,
    max_attempts   BIGINT NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    state          TEXT NOT NULL
                   CHECK (state IN ('requested', 'claimed', 'completed', 'failed', 'cancelled')),
    attempts       BIGINT NOT NULL CHECK (attempts >= 0),
    claim_id       TEXT,
    secret_digest  BYTEA CHECK (secret_digest IS NULL OR length(secret_digest) = 32),
    holder         TEXT,
    claimed_us     BIGINT,
    expires_us     BIGINT,
    created_us     BIGINT NOT NULL,
    updated_us     BIGINT NOT NULL,
    last_error     TEXT,
    payload        BYTEA NOT NULL,
    UNIQUE (production, job)
);
CREATE INDEX jobs_live ON tenure.jobs (production, priority DESC, seq)
    WHERE state IN ('requested', 'claimed');
CREATE INDEX jobs_by_state ON tenure.jobs (production, state, job);
CREATE TABLE tenure.events (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_us      BIGINT NOT NULL,
    production TEXT COLLATE "C" NOT NULL,
    job        TEXT COLLATE "C",
    kind       TEXT NOT NULL,
    state      TEXT,
    claim_id   TEXT,
    holder     TEXT,
    attempt    BIGINT,
    expires_us BIGINT,
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_by_production ON tenure.events (production, seq);
CREATE TABLE tenure.facts (
    production TEXT COLLATE "C" NOT NULL,
    job        TEXT COLLATE "C" NOT NULL,
    ord        BIGINT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (production, job, ord)
);
CREATE TABLE tenure.nonces (
    nonce      TEXT PRIMARY KEY,
    production TEXT NOT NULL,
    job        TEXT NOT NULL,
    claim_id   TEXT NOT NULL,
    used_us    BIGINT NOT NULL
);
"#;

/// The stored schema version, or `None` if there is no tenure schema.
pub(super) fn stored_version(c: &mut Client) -> Result<Option<u32>> {
    let exists: bool = c
        // pg_tables, not to_regclass: the catalog cache is not refreshed by
        // waiting on an advisory lock, a plain catalog query is.
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables
                            WHERE schemaname = 'tenure' AND tablename = 'meta')",
            &[],
        )
        .map_err(map_err)?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = c
        .query_opt(
            "SELECT value FROM tenure.meta WHERE key = 'schema_version'",
            &[],
        )
        .map_err(map_err)?;
    match row {
        None => Err(Error::Store(
            "not a tenure store: schema tenure has a meta table without schema_version".into(),
        )),
        Some(r) => {
            let v: i64 = r.get(0);
            u32::try_from(v)
                .map(Some)
                .map_err(|_| Error::Store(format!("invalid schema version {v}")))
        }
    }
}

pub(super) fn create(c: &mut Client, pool: &Pool) -> Result<u32> {
    let (lock, stmt) = pool.timeouts();
    c.batch_execute(&format!(
        "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = {lock}; \
         SET LOCAL statement_timeout = {stmt}"
    ))
    .map_err(map_err)?;
    let r = (|| {
        c.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(map_err)?;
        match stored_version(c)? {
            Some(v) if v > SCHEMA_VERSION => Err(Error::SchemaTooNew {
                found: v,
                supported: SCHEMA_VERSION,
            }),
            Some(v) if v == SCHEMA_VERSION => Ok(v),
            // Schema 10 changed only SQLite's layout: from 9 there is
            // nothing to do here but record it.
            Some(v @ (2..=9)) => {
                if v == 2 {
                    c.batch_execute(MIGRATE_2_TO_3).map_err(map_err)?;
                }
                if v <= 3 {
                    c.batch_execute(MIGRATE_3_TO_4).map_err(map_err)?;
                }
                if v <= 4 {
                    c.batch_execute(MIGRATE_4_TO_5).map_err(map_err)?;
                }
                if v <= 5 {
                    c.batch_execute(MIGRATE_5_TO_6).map_err(map_err)?;
                }
                // Schema 7 on PostgreSQL: payloads apart from the job rows
                // (SQLite's schema 7 derives provenance facts instead).
                if v <= 6 {
                    c.batch_execute(MIGRATE_6_TO_7).map_err(map_err)?;
                }
                if v <= 7 {
                    c.batch_execute(MIGRATE_7_TO_8).map_err(map_err)?;
                }
                if v <= 8 {
                    c.batch_execute(MIGRATE_8_TO_9).map_err(map_err)?;
                }
                c.execute(
                    "UPDATE tenure.meta SET value = $1 WHERE key = 'schema_version'",
                    &[&i64::from(SCHEMA_VERSION)],
                )
                .map_err(map_err)?;
                Ok(v)
            }
            Some(v) => Err(Error::Store(format!(
                "PostgreSQL store has schema version {v}, which never existed on PostgreSQL"
            ))),
            None => {
                let tables: i64 = c
                    .query_one(
                        "SELECT count(*) FROM pg_tables WHERE schemaname = 'tenure'",
                        &[],
                    )
                    .map_err(map_err)?
                    .get(0);
                if tables != 0 {
                    return Err(Error::Store(
                        "not a tenure store: schema tenure already has tables but no tenure \
                         schema version"
                            .into(),
                    ));
                }
                c.batch_execute(SCHEMA_V2).map_err(map_err)?;
                c.batch_execute(MIGRATE_2_TO_3).map_err(map_err)?;
                c.batch_execute(MIGRATE_3_TO_4).map_err(map_err)?;
                c.batch_execute(MIGRATE_4_TO_5).map_err(map_err)?;
                c.batch_execute(MIGRATE_5_TO_6).map_err(map_err)?;
                c.batch_execute(MIGRATE_6_TO_7).map_err(map_err)?;
                c.batch_execute(MIGRATE_7_TO_8).map_err(map_err)?;
                c.batch_execute(MIGRATE_8_TO_9).map_err(map_err)?;
                c.execute(
                    "INSERT INTO tenure.meta (key, value) VALUES ('schema_version', $1)",
                    &[&i64::from(SCHEMA_VERSION)],
                )
                .map_err(map_err)?;
                Ok(0)
            }
        }
    })();
    match r {
        Ok(v) => {
            c.batch_execute("COMMIT").map_err(map_err)?;
            Ok(v)
        }
        Err(e) => {
            let _ = c.batch_execute("ROLLBACK");
            Err(e)
        }
    }
}
