//! The migration steps that bring an older PostgreSQL store forward to the
//! layout of [`super::schema::SCHEMA`], one constant per schema version,
//! run in order by [`forward`] inside the guarded transaction that read the
//! version. A new store never runs them: it is created at the current
//! layout.
//!
//! PostgreSQL stores start at schema version 2 (version 1, the pre-lease
//! layout, only ever existed on SQLite). Schema 10 changed only SQLite's
//! layout: the step from 9 to 10 only records the version. Schema 13
//! changed only this layout: the index of the count deltas
//! ([`super::schema::count_deltas_index`], idempotent); so did schema 14:
//! `events_by_time` of the flow's events only
//! ([`super::schema::events_by_time_index`]; a store that comes from
//! before schema 11 gets it from this step, not from the statistics'
//! step). Schema 15 adds `jobs.provenance_at`
//! ([`super::schema::job_provenance_column`]), the column SQLite has had
//! since schema 7: a completion's provenance is kept in the job row.

use super::map_err;
use crate::error::Result;
use postgres::Client;

/// The oldest schema version a PostgreSQL store can have.
pub(super) const OLDEST: u32 = 2;

/// The steps, oldest first: `(v, sql)` brings a store at schema `v - 1` to
/// schema `v`.
const STEPS: &[(u32, &str)] = &[
    (3, MIGRATE_2_TO_3),
    (4, MIGRATE_3_TO_4),
    (5, MIGRATE_4_TO_5),
    (6, MIGRATE_5_TO_6),
    (7, MIGRATE_6_TO_7),
    (8, MIGRATE_7_TO_8),
    (9, MIGRATE_8_TO_9),
    // Schema 11's steps add job columns in the order the current layout
    // has them: `progress` (in the table's definition) before the
    // statistics' generated column.
    (11, ADD_JOB_PROGRESS),
    (11, ADD_STATS_FIGURES),
    (11, ADD_PRODUCTION_GATES),
    (11, ADD_SCHEDULES),
    (12, ADD_SCHEDULE_TZ),
    (13, super::schema::count_deltas_index!()),
    (14, super::schema::events_by_time_index!()),
    (15, super::schema::job_provenance_column!()),
];

/// Runs every step after schema `from` ([`OLDEST`] or later), inside the
/// caller's transaction; the caller records the new version.
pub(super) fn forward(c: &mut Client, from: u32) -> Result<()> {
    for &(to, sql) in STEPS {
        if to > from {
            c.batch_execute(sql).map_err(map_err)?;
        }
    }
    Ok(())
}

/// Progress checkpoints (see the SQLite backend's `add_job_progress`, the
/// same change): the job's checkpoint written by its current lease, at
/// most [`crate::validate::MAX_PROGRESS`] bytes. Additive (existing jobs
/// have none), idempotent.
const ADD_JOB_PROGRESS: &str = r#"
ALTER TABLE tenure.jobs ADD COLUMN IF NOT EXISTS progress BYTEA
    CHECK (progress IS NULL OR length(progress) <= 4096);
"#;

/// The schedules table (recurring jobs and their slot records), its
/// definition shared with [`super::schema::SCHEMA`]. Additive only,
/// idempotent.
const ADD_SCHEDULES: &str = concat!(
    "CREATE TABLE IF NOT EXISTS tenure.schedules",
    super::schema::schedules_table!(),
    ";"
);

/// Schema 12: a cron cadence's IANA time zone (see the SQLite backend's
/// `add_schedule_tz`). Additive (existing schedules have none, UTC),
/// idempotent.
const ADD_SCHEDULE_TZ: &str = r#"
ALTER TABLE tenure.schedules ADD COLUMN IF NOT EXISTS tz TEXT;
"#;

/// Schema 3 (retention): tombstones of pruned jobs, the history horizon,
/// the indexes pruning reads by, and autovacuum settings for the tables
/// pruning deletes from (vacuumed after 2 % of their rows died rather than
/// 20 %, without cost delay, so their size stays near their live rows).
/// Additive only, idempotent.
const MIGRATE_2_TO_3: &str = r#"
CREATE TABLE IF NOT EXISTS tenure.tombstones (
    production     TEXT COLLATE "C" NOT NULL,
    job            TEXT COLLATE "C" NOT NULL,
    payload_digest BYTEA NOT NULL,
    priority       INT NOT NULL,
    max_attempts   BIGINT NOT NULL,
    state          TEXT NOT NULL,
    pruned_us      BIGINT NOT NULL,
    PRIMARY KEY (production, job)
);
CREATE INDEX IF NOT EXISTS tombstones_by_age ON tenure.tombstones (pruned_us);
CREATE INDEX IF NOT EXISTS jobs_terminal ON tenure.jobs (updated_us)
    WHERE state IN ('completed', 'failed', 'cancelled');
CREATE INDEX IF NOT EXISTS nonces_by_job ON tenure.nonces (production, job);
INSERT INTO tenure.meta (key, value) VALUES ('history_horizon', 0) ON CONFLICT DO NOTHING;
ALTER TABLE tenure.jobs SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE tenure.events SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE tenure.facts SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE tenure.tombstones SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE tenure.nonces SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
"#;

/// Schema 4: scheduling and hold limits (see the SQLite backend's
/// `MIGRATE_3_TO_4`, the same change): not-before time, the `parked` flag
/// with `jobs_ready` replacing `jobs_live` and `jobs_parked`, hold limit,
/// back-off columns on jobs, productions and tombstones. Additive; run
/// once, inside the guarded transaction that checked the version.
const MIGRATE_3_TO_4: &str = r#"
ALTER TABLE tenure.jobs ADD COLUMN due_us BIGINT;
ALTER TABLE tenure.jobs ADD COLUMN parked BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE tenure.jobs ADD COLUMN max_hold_us BIGINT CHECK (max_hold_us IS NULL OR max_hold_us > 0);
ALTER TABLE tenure.jobs ADD COLUMN backoff_base_us BIGINT;
ALTER TABLE tenure.jobs ADD COLUMN backoff_cap_us BIGINT;
ALTER TABLE tenure.productions ADD COLUMN backoff_base_us BIGINT;
ALTER TABLE tenure.productions ADD COLUMN backoff_cap_us BIGINT;
ALTER TABLE tenure.tombstones ADD COLUMN max_hold_us BIGINT;
ALTER TABLE tenure.tombstones ADD COLUMN backoff_base_us BIGINT;
ALTER TABLE tenure.tombstones ADD COLUMN backoff_cap_us BIGINT;
DROP INDEX IF EXISTS tenure.jobs_live;
CREATE INDEX jobs_ready ON tenure.jobs (production, priority DESC, seq)
    WHERE state IN ('requested', 'claimed') AND NOT parked;
CREATE INDEX jobs_parked ON tenure.jobs (production, due_us) WHERE parked;
"#;

/// Schema 5 (a hot queue): every transition rewrites its job's row, so
/// the table keeps 30 % of each page free (`fillfactor = 70`) for the new
/// row versions, and no index covers a column a renewal changes (the
/// expiry and `updated_us`), so a renewal is a HOT update (no index
/// entries, no index bloat). Pruning's index, which was on `updated_us`,
/// is on `ended_us` instead: a generated column, `updated_us` of a job in
/// a terminal state and NULL for a live one, so it stays NULL (unchanged)
/// through every transition of a live job. The claim scan's index
/// (`jobs_ready`) and the parked jobs' (`jobs_parked`) stay partial on the
/// live states. Adding the stored column rewrites the table once (under
/// the migration's lock), applying the fillfactor to every page.
/// Idempotent.
const MIGRATE_4_TO_5: &str = r#"
ALTER TABLE tenure.jobs SET (fillfactor = 70);
ALTER TABLE tenure.jobs ADD COLUMN IF NOT EXISTS ended_us BIGINT GENERATED ALWAYS AS (
    CASE WHEN state IN ('completed', 'failed', 'cancelled') THEN updated_us END) STORED;
DROP INDEX IF EXISTS tenure.jobs_terminal;
CREATE INDEX jobs_terminal ON tenure.jobs (ended_us) WHERE ended_us IS NOT NULL;
"#;

/// Schema 6: request IDs (see the SQLite backend's `MIGRATE_5_TO_6`, the
/// same change): one row per claim made under a caller's request ID,
/// removed with its job. Additive; run once, inside the guarded
/// transaction that checked the version.
const MIGRATE_5_TO_6: &str = r#"
CREATE TABLE IF NOT EXISTS tenure.claim_requests (
    production    TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    job           TEXT NOT NULL,
    claim_id      TEXT NOT NULL,
    secret_digest BYTEA NOT NULL CHECK (length(secret_digest) = 32),
    args_digest   BYTEA NOT NULL,
    created_us    BIGINT NOT NULL,
    PRIMARY KEY (production, request_id)
);
CREATE INDEX IF NOT EXISTS claim_requests_by_job ON tenure.claim_requests (production, job);
"#;

/// Schema 7 (narrow hot rows): payloads live in `tenure.payloads`, apart
/// from the `jobs` row that every transition rewrites, so a claim, renewal
/// or completion copies only the job's state, never its payload, and more
/// row versions fit a page. Submissions write both rows in one statement;
/// pruning and production deletion remove both. The migration moves every
/// payload and drops the column (PostgreSQL does not rewrite the table for
/// that: the old row versions keep their bytes until a transition, pruning
/// or a `VACUUM FULL` rewrites them). Idempotent: a store whose `jobs` has
/// no payload column is left as it is.
const MIGRATE_6_TO_7: &str = r#"
CREATE TABLE IF NOT EXISTS tenure.payloads (
    production TEXT COLLATE "C" NOT NULL,
    job        TEXT COLLATE "C" NOT NULL,
    payload    BYTEA NOT NULL,
    PRIMARY KEY (production, job)
);
ALTER TABLE tenure.payloads SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
               WHERE attrelid = 'tenure.jobs'::regclass AND attname = 'payload'
                 AND NOT attisdropped) THEN
        INSERT INTO tenure.payloads (production, job, payload)
            SELECT production, job, payload FROM tenure.jobs
            ON CONFLICT (production, job) DO NOTHING;
        ALTER TABLE tenure.jobs DROP COLUMN payload;
    END IF;
END
$$;
"#;

/// Schema 8: the claim floor (see `Pool::raise_claim_floor`), a
/// lower bound on the `seq` of every live job of a production (requested or
/// claimed, parked or not), which claim-next's ready page starts from so
/// that it skips, inside the index, the entries of jobs that ended before
/// the bound. 0 (no bound) until the first raise. Additive, idempotent.
const MIGRATE_7_TO_8: &str = r#"
ALTER TABLE tenure.productions ADD COLUMN IF NOT EXISTS claim_floor BIGINT NOT NULL DEFAULT 0;
"#;

/// The statistics' figures ([`super::schema::stats_figures`]): event
/// columns, the requested jobs' due moment (a stored generated column:
/// adding it rewrites `jobs` once, under the migration's lock), the
/// indexes, the kept job counts and their triggers, the counts filled from
/// the rows as they are. Idempotent.
const ADD_STATS_FIGURES: &str = concat!(
    super::schema::stats_figures!(),
    "
DELETE FROM tenure.job_count_deltas;
DELETE FROM tenure.job_counts;
INSERT INTO tenure.job_counts (production, state, n)
    SELECT production, state, count(*) FROM tenure.jobs GROUP BY production, state;
"
);

/// Schema 9: the high-water mark as an insert-only log (see the module
/// docs): `tenure.mark_log`, seeded with the largest of the old striped
/// rows, which are dropped (a process of an older library still running
/// beside the migrated store then fails its writes instead of keeping a
/// mark nobody reads). Additive apart from that drop; idempotent (a store
/// without `tenure.marks` keeps its log as it is).
/// The claim gates (see `crate::gates`): a production's pause, limits and
/// rate-limit state. Additive only, idempotent.
const ADD_PRODUCTION_GATES: &str = concat!(
    "CREATE TABLE IF NOT EXISTS ",
    super::schema::production_gates_table!(),
    ";"
);

const MIGRATE_8_TO_9: &str = r#"
CREATE TABLE IF NOT EXISTS tenure.mark_log (value BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS mark_log_by_value ON tenure.mark_log (value);
ALTER TABLE tenure.mark_log SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_tables
               WHERE schemaname = 'tenure' AND tablename = 'marks') THEN
        INSERT INTO tenure.mark_log (value) SELECT coalesce(max(value), 0) FROM tenure.marks;
        DROP TABLE tenure.marks;
    END IF;
END
$$;
"#;
