//! The steps that bring a store of an older schema to the current layout
//! ([`super::schema::CURRENT`]). A new store is created from that layout
//! directly; these steps only ever run on a store written by an older
//! version, each once, in the transaction that read the version.
//!
//! | from | step |
//! | --- | --- |
//! | 1 | pre-lease layout rewritten into the current one, its claims expired ([`migrate_1_to_2`]) |
//! | 2 | tombstones, history horizon, pruning indexes |
//! | 3 | not-before times, parking, hold limits, back-off |
//! | 4 | `jobs` rebuilt: no constant list of three or more values in its CHECK or indexes |
//! | 5 | `claim_requests` (request IDs) |
//! | 6 | `jobs.provenance_at` |
//! | 7 | `events.mark_us` |
//! | 8, 9 | `jobs.ended_us`, `jobs_ended`; `jobs_by_state` and `events_by_production` dropped |
//! | 10 | statistics: `job_counts`, `jobs_waiting`, `jobs_claimed`, `events_by_time`, `events.since_us`, `events.lapsed_us` ([`add_stats_figures`]); claim gates: `production_gates` ([`add_production_gates`]); `jobs.progress` (progress checkpoints, [`add_job_progress`]); `schedules` (recurring jobs) |
//! | 11 | `schedules.tz` ([`add_schedule_tz`]) |
//! | 12 | statistics: `job_counts` of every job and the terminal states, written by the transactions (no triggers); `events_by_time` of the flow's events only ([`add_stats_figures`]) |
//! | 13, 14 | nothing: schemas 14 and 15 changed only PostgreSQL's layout |

use super::backend::{header, Opened};
use super::rows::{append_event, insert_job};
use super::schema::{
    claim_requests_table, create_current, jobs_table, schedules_table, stats_figures,
    tombstones_table, APPLICATION_ID,
};
use crate::error::{Error, Result};
use crate::model::EventKind;
use crate::store::{JobRow, NewEvent, Stored, SCHEMA_VERSION};
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Schema 3 (retention): tombstones of pruned jobs, the history horizon,
/// and the indexes pruning reads by. Additive only. The tombstones table is
/// created in its current definition ([`tombstones_table`]): the columns
/// schema 4 adds to it are there already, and that step leaves them.
const MIGRATE_2_TO_3: &str = concat!(
    "CREATE TABLE IF NOT EXISTS tombstones ",
    tombstones_table!(),
    ";
CREATE INDEX IF NOT EXISTS tombstones_by_age ON tombstones (pruned_us);
CREATE INDEX IF NOT EXISTS jobs_terminal ON jobs (updated_us)
    WHERE state IN ('completed', 'failed', 'cancelled');
CREATE INDEX IF NOT EXISTS nonces_by_job ON nonces (production, job);
INSERT OR IGNORE INTO meta (key, value) VALUES ('history_horizon', 0);"
);

/// Schema 4 (scheduling and hold limits). Jobs get a not-before time
/// (`due_us`), a `parked` flag that keeps requested jobs not yet due out of
/// claim-next's index (`jobs_ready` replaces `jobs_live`; `jobs_parked`
/// finds the ones whose time has come), a hard per-claim hold limit and a
/// back-off policy; productions get a default back-off; tombstones keep the
/// hold limit and back-off a pruned job was submitted with. Additive:
/// existing rows read as "due at once, no limit, no back-off". Run once,
/// inside the migration transaction that checked the version; a
/// `tombstones` table that has the columns already is left as it is.
fn migrate_3_to_4(conn: &Connection) -> Result<()> {
    conn.execute_batch(MIGRATE_3_TO_4)?;
    for column in ["max_hold_us", "backoff_base_us", "backoff_cap_us"] {
        add_column_once(conn, "tombstones", column, "INTEGER")?;
    }
    Ok(())
}

const MIGRATE_3_TO_4: &str = "
ALTER TABLE jobs ADD COLUMN due_us INTEGER;
ALTER TABLE jobs ADD COLUMN parked INTEGER NOT NULL DEFAULT 0 CHECK (parked IN (0, 1));
ALTER TABLE jobs ADD COLUMN max_hold_us INTEGER CHECK (max_hold_us IS NULL OR max_hold_us > 0);
ALTER TABLE jobs ADD COLUMN backoff_base_us INTEGER;
ALTER TABLE jobs ADD COLUMN backoff_cap_us INTEGER;
ALTER TABLE productions ADD COLUMN backoff_base_us INTEGER;
ALTER TABLE productions ADD COLUMN backoff_cap_us INTEGER;
DROP INDEX IF EXISTS jobs_live;
CREATE INDEX jobs_ready ON jobs (production, priority DESC, seq)
    WHERE state IN ('requested', 'claimed') AND parked = 0;
CREATE INDEX jobs_parked ON jobs (production, due_us) WHERE parked = 1;
";

/// Schema 5 (cheaper job writes): the same `jobs` table, rebuilt so that
/// no write of a job row evaluates a constant list of more than two values.
/// SQLite codes `x IN (a, b, c, ...)` (three or more constants) by building
/// a temporary B-tree of the list on every execution of the statement:
/// the `state` CHECK (five values) and the partial index `jobs_terminal`
/// (three values, evaluated for the old and the new row of an `UPDATE`)
/// cost three of them per state change and two per renewal. The CHECK
/// becomes plain comparisons and `jobs_terminal` keeps the rows whose state
/// is neither `requested` nor `claimed` (the same rows, given the CHECK).
/// SQLite cannot alter a CHECK, so the table is copied (every column and
/// `seq` as they are) into a new table of the current definition of `jobs`
/// ([`jobs_table`]) that replaces it, and its indexes are created again. The
/// columns later steps add to `jobs` are then there already, NULL, and
/// those steps leave them as they are. Run once, inside the migration
/// transaction that checked the version.
const MIGRATE_4_TO_5: &str = concat!(
    "CREATE TABLE jobs_v5 ",
    jobs_table!(),
    ";
INSERT INTO jobs_v5 (seq, production, job, payload_digest, payload_len, priority, max_attempts,
    state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us, created_us,
    updated_us, last_error, payload, due_us, parked, max_hold_us, backoff_base_us, backoff_cap_us)
SELECT seq, production, job, payload_digest, payload_len, priority, max_attempts,
    state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us, created_us,
    updated_us, last_error, payload, due_us, parked, max_hold_us, backoff_base_us, backoff_cap_us
FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_v5 RENAME TO jobs;
CREATE INDEX jobs_by_state ON jobs (production, state, job);
CREATE INDEX jobs_terminal ON jobs (updated_us) WHERE state NOT IN ('requested', 'claimed');
CREATE INDEX jobs_ready ON jobs (production, priority DESC, seq)
    WHERE state IN ('requested', 'claimed') AND parked = 0;
CREATE INDEX jobs_parked ON jobs (production, due_us) WHERE parked = 1;
"
);

/// Schema 6 (request IDs): the claims made under a caller's request ID,
/// one row per request, removed with their job. Additive only.
const MIGRATE_5_TO_6: &str = concat!(
    "CREATE TABLE IF NOT EXISTS claim_requests ",
    claim_requests_table!(),
    ";
CREATE INDEX IF NOT EXISTS claim_requests_by_job ON claim_requests (production, job);"
);

/// Schema 7 (provenance in the job row): a completion's four `tenure.*`
/// provenance facts restate the completed row (claim ID, holder, attempts,
/// `updated_us`) and are kept in no fact row; the column `provenance_at`
/// of a completed job says where among its facts they stand and
/// [`crate::store::Txn::facts`] gives them back there. Additive: existing
/// rows (NULL) keep their stored provenance facts. Run inside the migration
/// transaction that checked the version; a `jobs` table that has the
/// column already is left as it is.
fn migrate_6_to_7(conn: &Connection) -> Result<()> {
    add_column_once(conn, "jobs", "provenance_at", "INTEGER")
}

/// `ALTER TABLE table ADD COLUMN column decl`, unless the table has the
/// column already.
fn add_column_once(conn: &Connection, table: &str, column: &str, decl: &str) -> Result<()> {
    let has: i64 = conn.query_row(
        "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |r| r.get(0),
    )?;
    if has == 0 {
        conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl};"))?;
    }
    Ok(())
}

/// Schema 8 (the mark on the newest event): every write transaction that
/// appends events leaves the high-water mark on its last one
/// (`events.mark_us`), a page its commit writes anyway, instead of
/// rewriting the `meta` row's page; the stored mark is the larger of the
/// `meta` row and the newest event's `mark_us`
/// ([`super::sql::HIGH_WATER_SQL`]). The newest event is never removed
/// (pruning and production deletion keep it). Additive: existing events
/// (NULL) leave the mark to `meta`. Run inside the migration transaction
/// that checked the version; an `events` table that has the column already
/// is left as it is.
fn migrate_7_to_8(conn: &Connection) -> Result<()> {
    add_column_once(conn, "events", "mark_us", "INTEGER")
}

/// Schema 10 (transitions that rewrite no index they need not): a job's
/// end time (`jobs.ended_us`, set with a terminal state, NULL while the job
/// is requested or claimed) takes `state` out of the predicate of
/// claim-next's index, so a claim, a renewal or a release that leaves the
/// job unparked writes its row and no index entry; `jobs_by_state` (whose
/// key every state change moved) gives way to `jobs_ended`, the terminal
/// jobs by state and ID, which only the ending transition writes;
/// `events_by_production` is dropped (a production's events are read along
/// the log). Existing terminal rows get their last transition's time as
/// their end. Run inside the migration transaction that checked the
/// version; on a layout that has the column already it only rebuilds the
/// indexes.
fn migrate_9_to_10(conn: &Connection) -> Result<()> {
    add_column_once(conn, "jobs", "ended_us", "INTEGER")?;
    conn.execute_batch(MIGRATE_9_TO_10)?;
    Ok(())
}

const MIGRATE_9_TO_10: &str = "
UPDATE jobs SET ended_us = updated_us
    WHERE ended_us IS NULL AND state <> 'requested' AND state <> 'claimed';
UPDATE jobs SET ended_us = NULL
    WHERE ended_us IS NOT NULL AND (state = 'requested' OR state = 'claimed');
DROP INDEX IF EXISTS jobs_by_state;
DROP INDEX IF EXISTS events_by_production;
DROP INDEX IF EXISTS jobs_ready;
CREATE INDEX jobs_ready ON jobs (production, priority DESC, seq)
    WHERE ended_us IS NULL AND parked = 0;
CREATE INDEX IF NOT EXISTS jobs_ended ON jobs (production, state, job)
    WHERE ended_us IS NOT NULL;
";

/// The statistics step: the event columns the flow measures from
/// (`since_us`, `lapsed_us`; NULL on older events, which the flow then
/// counts but does not time), the kept job counts (filled from the rows as
/// they are, [`FILL_JOB_COUNTS`]), and the indexes the statistics read
/// ([`stats_figures`]). A schema 11 or 12 store has them in an earlier
/// form: its count triggers are dropped and `events_by_time`, which held
/// every event, is made again. Run inside the migration transaction that
/// checked the version; idempotent (the counts are filled afresh).
fn add_stats_figures(conn: &Connection) -> Result<()> {
    add_column_once(conn, "events", "since_us", "INTEGER")?;
    add_column_once(conn, "events", "lapsed_us", "INTEGER")?;
    conn.execute_batch(concat!(
        "DROP TRIGGER IF EXISTS job_counts_insert;
         DROP TRIGGER IF EXISTS job_counts_delete;
         DROP TRIGGER IF EXISTS job_counts_update;
         DROP INDEX IF EXISTS events_by_time;",
        stats_figures!(),
    ))?;
    conn.execute_batch(FILL_JOB_COUNTS)?;
    Ok(())
}

/// `job_counts` filled from the job rows (see [`stats_figures`]).
const FILL_JOB_COUNTS: &str = "
DELETE FROM job_counts;
INSERT INTO job_counts (production, state, n)
    SELECT production, 'all', count(*) FROM jobs GROUP BY production;
INSERT INTO job_counts (production, state, n)
    SELECT production, state, count(*) FROM jobs
    WHERE state <> 'requested' AND state <> 'claimed' GROUP BY production, state;
";

/// The step that adds the claim gates (`production_gates`, see
/// [`crate::gates`]): additive; a store that has the table keeps it.
fn add_production_gates(conn: &Connection) -> Result<()> {
    conn.execute_batch(concat!(
        "CREATE TABLE IF NOT EXISTS production_gates ",
        super::schema::production_gates_table!(),
        ";"
    ))?;
    Ok(())
}

/// The progress checkpoint a job's current lease writes (`jobs.progress`,
/// at most [`crate::validate::MAX_PROGRESS`] bytes). Additive: existing
/// jobs have none (NULL). Run inside the migration transaction that
/// checked the version; a `jobs` table that has the column already (a
/// rebuild copied it into [`jobs_table`]'s definition) is left as it is.
fn add_job_progress(conn: &Connection) -> Result<()> {
    add_column_once(
        conn,
        "jobs",
        "progress",
        "BLOB CHECK (progress IS NULL OR length(progress) <= 4096)",
    )
}

/// The schedules table (recurring jobs and their slot records). Additive
/// only; a store that has the table already is left as it is.
const ADD_SCHEDULES: &str = concat!(
    "CREATE TABLE IF NOT EXISTS schedules ",
    schedules_table!(),
    ";"
);

/// Schema 12: a cron cadence's IANA time zone (`schedules.tz`). Additive:
/// existing schedules have none (NULL, UTC). A `schedules` table made by
/// [`ADD_SCHEDULES`] in the same migration has the column already.
fn add_schedule_tz(conn: &Connection) -> Result<()> {
    add_column_once(conn, "schedules", "tz", "TEXT")
}

/// Bring the store to the current schema in one `BEGIN IMMEDIATE`
/// transaction: an empty file gets the current layout, an older store
/// runs every step from its version on.
pub(super) fn migrate(conn: &Connection, now_us: &dyn Fn() -> i64) -> Result<Opened> {
    // A current store needs no writer lock to open.
    if header(conn)?.0 == SCHEMA_VERSION {
        return Ok(Opened {
            from_version: SCHEMA_VERSION,
            to_version: SCHEMA_VERSION,
        });
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        let (from, _) = header(conn)?;
        match from {
            0 => {
                let tables: i64 = conn.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
                    [],
                    |r| r.get(0),
                )?;
                if tables != 0 {
                    return Err(Error::Store(
                        "not a tenure store: the database already has tables but no tenure schema"
                            .into(),
                    ));
                }
                create_current(conn)?;
            }
            // Schema 1 is rewritten straight into the current layout.
            1 => migrate_1_to_2(conn, now_us)?,
            // Schema 9 changed only PostgreSQL's layout (its mark log).
            2..=12 => {
                if from == 2 {
                    conn.execute_batch(MIGRATE_2_TO_3)?;
                }
                if from <= 3 {
                    migrate_3_to_4(conn)?;
                }
                if from <= 4 {
                    conn.execute_batch(MIGRATE_4_TO_5)?;
                }
                if from <= 5 {
                    conn.execute_batch(MIGRATE_5_TO_6)?;
                }
                if from <= 6 {
                    migrate_6_to_7(conn)?;
                }
                if from <= 7 {
                    migrate_7_to_8(conn)?;
                }
                if from <= 9 {
                    migrate_9_to_10(conn)?;
                }
                add_stats_figures(conn)?;
                add_production_gates(conn)?;
                add_job_progress(conn)?;
                conn.execute_batch(ADD_SCHEDULES)?;
                add_schedule_tz(conn)?;
            }
            // Schemas 14 and 15 changed only PostgreSQL's layout (its index
            // of the flow's events, the provenance column SQLite has had
            // since schema 7).
            13 | 14 => {}
            // Another process migrated first.
            v if v == SCHEMA_VERSION => {}
            v => {
                return Err(Error::SchemaTooNew {
                    found: v,
                    supported: SCHEMA_VERSION,
                })
            }
        }
        if from != SCHEMA_VERSION {
            conn.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
            ))?;
        }
        Ok(Opened {
            from_version: from,
            to_version: SCHEMA_VERSION,
        })
    })();
    match result {
        Ok(o) => {
            conn.execute_batch("COMMIT")?;
            Ok(o)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Schema 1 is the pre-lease layout: jobs carried a bare `(claim_id,
/// claimed_at)` pair and no secret. Every claim that existed is expired by
/// the migration (its expiry is set to the migration time and it has no
/// secret digest, so nothing can use it); requested and terminal jobs keep
/// their state. Old events are kept in `legacy_events`; each job gets one
/// `migrated` event recording its state after the migration.
fn migrate_1_to_2(conn: &Connection, now_us: &dyn Fn() -> i64) -> Result<()> {
    let mark_before: i64 = 0;
    let now = now_us().max(mark_before);
    conn.execute_batch(
        "ALTER TABLE jobs RENAME TO jobs_v1;
         ALTER TABLE events RENAME TO legacy_events;
         ALTER TABLE productions RENAME TO productions_v1;",
    )?;
    create_current(conn)?;
    conn.execute(
        "INSERT INTO productions (name, created_us, cancelled_us)
         SELECT name, created_at, NULL FROM productions_v1",
        [],
    )?;
    let mut rows = Vec::new();
    {
        let mut st = conn.prepare(
            "SELECT production, job, payload, priority, max_attempts, state, attempts,
                    claim_id, claimed_at, created_at, updated_at
             FROM jobs_v1 ORDER BY rowid",
        )?;
        let mut q = st.query([])?;
        while let Some(r) = q.next()? {
            let payload: Vec<u8> = r.get(2)?;
            let state: String = r.get(5)?;
            let claim: Option<String> = r.get(7)?;
            rows.push((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                payload,
                r.get::<_, i32>(3)?,
                r.get::<_, u32>(4)?,
                state,
                r.get::<_, u32>(6)?,
                claim.and_then(|c| Uuid::parse_str(&c).ok()),
                r.get::<_, Option<i64>>(8)?,
                r.get::<_, i64>(9)?,
                r.get::<_, i64>(10)?,
            ));
        }
    }
    let mut expired = 0u64;
    for (
        production,
        job,
        payload,
        priority,
        max_attempts,
        state,
        attempts,
        claim_id,
        claimed_at,
        created,
        updated,
    ) in rows
    {
        let stored = Stored::parse(&state).ok_or_else(|| {
            Error::Store(format!(
                "migration: job {production}/{job} has unknown state {state:?}"
            ))
        })?;
        let claimed = stored == Stored::Claimed;
        if claimed {
            expired += 1;
        }
        let row = JobRow {
            seq: 0,
            production: production.clone(),
            job: job.clone(),
            payload_digest: Sha256::digest(&payload).to_vec(),
            payload_len: payload.len() as u64,
            priority,
            max_attempts: max_attempts.clamp(1, 1000),
            state: stored,
            attempts,
            claim_id: if claimed { claim_id } else { None },
            secret_digest: None,
            holder: claimed.then(|| "unknown (pre-lease store)".to_owned()),
            claimed_us: if claimed { claimed_at } else { None },
            expires_us: claimed.then_some(now),
            created_us: created,
            updated_us: if claimed { now } else { updated },
            last_error: None,
            due_us: None,
            parked: false,
            max_hold_us: None,
            backoff: None,
            provenance_at: None,
        };
        insert_job(conn, &row, &payload)?;
        append_event(
            conn,
            &NewEvent {
                at_us: now,
                production: &production,
                job: Some(&job),
                kind: EventKind::Migrated,
                state: Some(stored),
                claim_id: row.claim_id,
                holder: row.holder.as_deref(),
                attempt: claimed.then_some(attempts),
                expires_us: row.expires_us,
                since_us: None,
                lapsed_us: None,
                detail: if claimed {
                    "pre-lease claim expired by the schema migration"
                } else {
                    "migrated from the pre-lease schema"
                },
            },
        )?;
    }
    conn.execute_batch("DROP TABLE jobs_v1; DROP TABLE productions_v1;")?;
    conn.execute_batch(FILL_JOB_COUNTS)?;
    conn.execute(
        "UPDATE meta SET value = max(value, ?1) WHERE key = 'high_water_us'",
        [now],
    )?;
    let _ = expired;
    Ok(())
}
