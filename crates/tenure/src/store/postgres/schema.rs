//! The store's layout and its creation: a missing schema is created, an
//! older one migrated forward (see [`super::migrate`]), in one transaction
//! under a transaction-level advisory lock.

use super::migrate;
use super::pool::Pool;
use super::sql::SCHEMA_VERSION_ROW;
use super::{map_err, SCHEMA_LOCK};
use crate::error::{Error, Result};
use crate::store::SCHEMA_VERSION;
use postgres::Client;

/// The columns and key of `tenure.schedules`, after `CREATE TABLE [IF NOT
/// EXISTS] tenure.schedules`: in [`SCHEMA`], and in the step of
/// [`super::migrate`] that adds the table.
macro_rules! schedules_table {
    () => {
        r#" (
    production      TEXT COLLATE "C" NOT NULL,
    name            TEXT COLLATE "C" NOT NULL,
    cadence         TEXT NOT NULL,
    payload         BYTEA NOT NULL,
    priority        INT NOT NULL,
    max_attempts    BIGINT NOT NULL,
    max_hold_us     BIGINT,
    backoff_base_us BIGINT,
    backoff_cap_us  BIGINT,
    catch_up        BIGINT NOT NULL,
    overlap         TEXT NOT NULL,
    paused          BOOLEAN NOT NULL,
    settled_us      BIGINT NOT NULL,
    last_slot_us    BIGINT,
    created_us      BIGINT NOT NULL,
    updated_us      BIGINT NOT NULL,
    tz              TEXT,
    PRIMARY KEY (production, name)
)"#
    };
}
pub(super) use schedules_table;
/// What follows `CREATE TABLE ... tenure.production_gates` in [`SCHEMA`],
/// which the step that adds the table in [`super::migrate`] creates.
macro_rules! production_gates_table {
    () => {
        r#"tenure.production_gates (
    name             TEXT COLLATE "C" PRIMARY KEY,
    paused_us        BIGINT,
    concurrency      BIGINT CHECK (concurrency IS NULL OR concurrency > 0),
    rate_claims      BIGINT CHECK (rate_claims IS NULL OR rate_claims > 0),
    rate_interval_us BIGINT CHECK (rate_interval_us IS NULL OR rate_interval_us > 0),
    rate_burst       BIGINT CHECK (rate_burst IS NULL OR rate_burst > 0),
    rate_tat_us      BIGINT NOT NULL DEFAULT 0
)"#
    };
}
pub(super) use production_gates_table;

/// The current layout, the one source of it: a new store is created from
/// this, and an older store brought to it by the steps of
/// [`super::migrate`] (`tests/pg_schema.rs` checks that both end equal).
///
/// - `meta`: `schema_version` (written by [`create_or_migrate`]) and
///   `history_horizon`, the largest event `seq` pruned.
/// - `mark_log`: the high-water mark, an insert-only log (see the
///   backend's module docs); the mark is its largest value, 0 when empty.
/// - `productions`, with their default back-off and the claim floor (see
///   [`super::pool::Pool::raise_claim_floor`]).
/// - `production_gates`: a production's pause, concurrency and rate limit
///   and the rate limit's state (see `crate::gates`); no row: no gate.
/// - `jobs`: one row per job, rewritten by every transition, so its pages
///   keep 30 % free (`fillfactor = 70`) and no index covers a column a
///   renewal changes (a renewal is a HOT update). `ended_us` is
///   `updated_us` of a job in a terminal state (NULL while it is live), for
///   pruning's index. `jobs_ready` is claim-next's scan, `jobs_parked` the
///   jobs waiting for their due time.
/// - `payloads`: apart from `jobs`, so a transition never copies one.
/// - `events` (the identity `seq` is the tailers' order), `facts`,
///   `tombstones` (what pruning leaves of a job), `nonces`,
///   `claim_requests` (one row per claim made under a request ID),
///   `schedules` (recurring jobs with their slot record).
///
/// The tables pruning deletes from are vacuumed after 2 % of their rows
/// died rather than 20 %, without cost delay, so their size stays near
/// their live rows. Identifiers are `COLLATE "C"`, so listings page in byte
/// order as on SQLite.
/// The statistics' figures, in [`SCHEMA`] and added by the step in
/// [`super::migrate`] that adds them (the same text, so both layouts end
/// equal):
///
/// - `events.since_us`, `events.lapsed_us`: what the flow measures from.
/// - `jobs.waiting_since_us`: a requested job's due moment (`due_us`, or
///   `updated_us`, when it last became requested), NULL otherwise, so it
///   stays NULL through every transition of a claimed job (a renewal stays
///   a HOT update); `jobs_waiting` orders requested jobs by it.
/// - `jobs_claimed`: the claimed jobs.
/// - `job_counts`: each production's jobs by stored state as of the last
///   fold; `job_count_deltas`: the changes since, one row per state a
///   statement enters (+n) or leaves (-n), inserted by triggers on `jobs`
///   (statement-level with transition tables for inserts and deletes,
///   per row for a change of state), never updated, so no two writers
///   wait on each other for them. A fold ([`super::txn::fold_counts`])
///   moves the deltas into the counts in one short transaction.
macro_rules! stats_figures {
    () => {
        r#"
ALTER TABLE tenure.events ADD COLUMN IF NOT EXISTS since_us BIGINT;
ALTER TABLE tenure.events ADD COLUMN IF NOT EXISTS lapsed_us BIGINT;
ALTER TABLE tenure.jobs ADD COLUMN IF NOT EXISTS waiting_since_us BIGINT GENERATED ALWAYS AS (
    CASE WHEN state = 'requested' THEN coalesce(due_us, updated_us) END) STORED;
CREATE INDEX IF NOT EXISTS jobs_waiting ON tenure.jobs (production, waiting_since_us)
    WHERE waiting_since_us IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_claimed ON tenure.jobs (production) WHERE state = 'claimed';
CREATE TABLE IF NOT EXISTS tenure.job_counts (
    production TEXT COLLATE "C" NOT NULL,
    state      TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (production, state)
);
CREATE TABLE IF NOT EXISTS tenure.job_count_deltas (
    production TEXT COLLATE "C" NOT NULL,
    state      TEXT NOT NULL,
    delta      BIGINT NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);
CREATE OR REPLACE FUNCTION tenure.job_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    INSERT INTO tenure.job_count_deltas (production, state, delta)
        SELECT production, state, count(*) FROM tenure_new GROUP BY production, state;
    RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION tenure.job_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    INSERT INTO tenure.job_count_deltas (production, state, delta)
        SELECT production, state, -count(*) FROM tenure_old GROUP BY production, state;
    RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION tenure.job_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    INSERT INTO tenure.job_count_deltas (production, state, delta)
        VALUES (OLD.production, OLD.state, -1), (NEW.production, NEW.state, 1);
    RETURN NULL;
END $f$;
DROP TRIGGER IF EXISTS job_counts_insert ON tenure.jobs;
CREATE TRIGGER job_counts_insert AFTER INSERT ON tenure.jobs
    REFERENCING NEW TABLE AS tenure_new
    FOR EACH STATEMENT EXECUTE FUNCTION tenure.job_counts_inserted();
DROP TRIGGER IF EXISTS job_counts_delete ON tenure.jobs;
CREATE TRIGGER job_counts_delete AFTER DELETE ON tenure.jobs
    REFERENCING OLD TABLE AS tenure_old
    FOR EACH STATEMENT EXECUTE FUNCTION tenure.job_counts_deleted();
DROP TRIGGER IF EXISTS job_counts_update ON tenure.jobs;
CREATE TRIGGER job_counts_update AFTER UPDATE OF state ON tenure.jobs
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION tenure.job_counts_moved();
"#
    };
}
pub(super) use stats_figures;
/// The index of the count deltas by production, in [`SCHEMA`] and in the
/// step of [`super::migrate`] that adds it: the fold and the read find a
/// production's deltas through it, so they cost the deltas written since
/// the last fold, never the table's size (which a long run without a fold
/// leaves large, and which vacuum gives back only from its end).
macro_rules! count_deltas_index {
    () => {
        "CREATE INDEX IF NOT EXISTS job_count_deltas_by_production
    ON tenure.job_count_deltas (production);
"
    };
}
pub(super) use count_deltas_index;
/// The index the flow of the statistics reads, in [`SCHEMA`] and in the
/// step of [`super::migrate`] that makes it (dropping the index of every
/// event an older layout had): by production and time, the events the
/// flow reads ([`crate::store::flow_events`]) only, so a submission, a
/// renewal or any other event enters no index of time and a window full
/// of submissions costs the flow's read nothing.
macro_rules! events_by_time_index {
    () => {
        concat!(
            "DROP INDEX IF EXISTS tenure.events_by_time;
CREATE INDEX events_by_time ON tenure.events (production, at_us) WHERE ",
            $crate::store::flow_events!(),
            ";
"
        )
    };
}
pub(super) use events_by_time_index;

/// The job column that keeps a completion's provenance in the row instead
/// of as four fact rows ([`crate::store::Txn::derives_provenance`]), in
/// [`SCHEMA`] and in the step of [`super::migrate`] that adds it: the
/// position among the job's facts where the provenance stands; NULL for a
/// job that is not completed or whose provenance is stored as fact rows
/// (every job a store completed before schema 15). No CHECK: the server
/// would read its expression at every statement that writes a job, and a
/// value that is not a `u32` is refused when a row is read. Additive,
/// idempotent.
macro_rules! job_provenance_column {
    () => {
        "ALTER TABLE tenure.jobs ADD COLUMN IF NOT EXISTS provenance_at BIGINT;
"
    };
}
pub(super) use job_provenance_column;

pub(super) const SCHEMA: &str = concat!(
    r#"
CREATE SCHEMA IF NOT EXISTS tenure;
CREATE TABLE tenure.meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO tenure.meta (key, value) VALUES ('history_horizon', 0);
CREATE TABLE tenure.mark_log (
    value BIGINT NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX mark_log_by_value ON tenure.mark_log (value);
CREATE TABLE tenure.productions (
    name            TEXT COLLATE "C" PRIMARY KEY,
    created_us      BIGINT NOT NULL,
    cancelled_us    BIGINT,
    backoff_base_us BIGINT,
    backoff_cap_us  BIGINT,
    claim_floor     BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE "#,
    production_gates_table!(),
    r#";
CREATE TABLE tenure.jobs (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    production      TEXT COLLATE "C" NOT NULL,
    job             TEXT COLLATE "C" NOT NULL,
    payload_digest  BYTEA NOT NULL,
    payload_len     BIGINT NOT NULL,
    priority        INT NOT NULL,
    max_attempts    BIGINT NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    state           TEXT NOT NULL
                    CHECK (state IN ('requested', 'claimed', 'completed', 'failed', 'cancelled')),
    attempts        BIGINT NOT NULL CHECK (attempts >= 0),
    claim_id        TEXT,
    secret_digest   BYTEA CHECK (secret_digest IS NULL OR length(secret_digest) = 32),
    holder          TEXT,
    claimed_us      BIGINT,
    expires_us      BIGINT,
    created_us      BIGINT NOT NULL,
    updated_us      BIGINT NOT NULL,
    last_error      TEXT,
    due_us          BIGINT,
    parked          BOOLEAN NOT NULL DEFAULT false,
    max_hold_us     BIGINT CHECK (max_hold_us IS NULL OR max_hold_us > 0),
    backoff_base_us BIGINT,
    backoff_cap_us  BIGINT,
    ended_us        BIGINT GENERATED ALWAYS AS (
        CASE WHEN state IN ('completed', 'failed', 'cancelled') THEN updated_us END) STORED,
    progress        BYTEA CHECK (progress IS NULL OR length(progress) <= 4096),
    UNIQUE (production, job)
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0, fillfactor = 70);
CREATE INDEX jobs_by_state ON tenure.jobs (production, state, job);
CREATE INDEX jobs_ready ON tenure.jobs (production, priority DESC, seq)
    WHERE state IN ('requested', 'claimed') AND NOT parked;
CREATE INDEX jobs_parked ON tenure.jobs (production, due_us) WHERE parked;
CREATE INDEX jobs_terminal ON tenure.jobs (ended_us) WHERE ended_us IS NOT NULL;
CREATE TABLE tenure.payloads (
    production TEXT COLLATE "C" NOT NULL,
    job        TEXT COLLATE "C" NOT NULL,
    payload    BYTEA NOT NULL,
    PRIMARY KEY (production, job)
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);
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
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX events_by_production ON tenure.events (production, seq);
CREATE TABLE tenure.facts (
    production TEXT COLLATE "C" NOT NULL,
    job        TEXT COLLATE "C" NOT NULL,
    ord        BIGINT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (production, job, ord)
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);
CREATE TABLE tenure.tombstones (
    production      TEXT COLLATE "C" NOT NULL,
    job             TEXT COLLATE "C" NOT NULL,
    payload_digest  BYTEA NOT NULL,
    priority        INT NOT NULL,
    max_attempts    BIGINT NOT NULL,
    state           TEXT NOT NULL,
    pruned_us       BIGINT NOT NULL,
    max_hold_us     BIGINT,
    backoff_base_us BIGINT,
    backoff_cap_us  BIGINT,
    PRIMARY KEY (production, job)
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX tombstones_by_age ON tenure.tombstones (pruned_us);
CREATE TABLE tenure.nonces (
    nonce      TEXT PRIMARY KEY,
    production TEXT NOT NULL,
    job        TEXT NOT NULL,
    claim_id   TEXT NOT NULL,
    used_us    BIGINT NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX nonces_by_job ON tenure.nonces (production, job);
CREATE TABLE tenure.claim_requests (
    production    TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    job           TEXT NOT NULL,
    claim_id      TEXT NOT NULL,
    secret_digest BYTEA NOT NULL CHECK (length(secret_digest) = 32),
    args_digest   BYTEA NOT NULL,
    created_us    BIGINT NOT NULL,
    PRIMARY KEY (production, request_id)
);
CREATE INDEX claim_requests_by_job ON tenure.claim_requests (production, job);
CREATE TABLE tenure.schedules"#,
    schedules_table!(),
    ";\n",
    stats_figures!(),
    count_deltas_index!(),
    events_by_time_index!(),
    job_provenance_column!()
);

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
    let row = c.query_opt(SCHEMA_VERSION_ROW, &[]).map_err(map_err)?;
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

/// Brings the store to the current layout in one transaction under the
/// schema lock, so concurrent first opens from many hosts create or
/// migrate it exactly once: a missing schema is created from [`SCHEMA`], an
/// older one migrated forward ([`super::migrate::forward`]); a newer one is
/// refused untouched. Returns the version found (0 if created).
pub(super) fn create_or_migrate(c: &mut Client, pool: &Pool) -> Result<u32> {
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
            Some(v) if v >= migrate::OLDEST => {
                migrate::forward(c, v)?;
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
                c.batch_execute(SCHEMA).map_err(map_err)?;
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
