//! The layout of a store: its file header and its tables. [`CURRENT`] is
//! the one text of the current layout; a new store is created from it, and
//! [`super::migrate`] brings an older store to the same layout.

use crate::error::Result;
use rusqlite::Connection;

/// `PRAGMA application_id` of a tenure store: ASCII "TENU".
pub const APPLICATION_ID: i32 = 0x5445_4E55;

/// The page size of a new store, in bytes. A transition rewrites whole
/// pages: each page it changes is one WAL frame (header and page written,
/// checksummed, later copied into the database file), and the rows a
/// transition changes (a job row, an event, an index entry) are small, so
/// half the default 4 KiB halves the bytes each frame moves. A payload
/// longer than about 1.9 KiB continues on overflow pages. Existing stores
/// keep the page size they were created with.
pub(super) const PAGE_SIZE: u32 = 2048;

/// What follows `CREATE TABLE jobs` in [`CURRENT`]: the column definitions
/// and constraints, in parentheses. The rebuild of `jobs` in
/// [`super::migrate`] copies an older table into a table of this definition.
macro_rules! jobs_table {
    () => {
        "(
    seq             INTEGER PRIMARY KEY,
    production      TEXT NOT NULL,
    job             TEXT NOT NULL,
    payload_digest  BLOB NOT NULL,
    payload_len     INTEGER NOT NULL,
    priority        INTEGER NOT NULL,
    max_attempts    INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    state           TEXT NOT NULL
                    CHECK (state = 'requested' OR state = 'claimed' OR state = 'completed'
                           OR state = 'failed' OR state = 'cancelled'),
    attempts        INTEGER NOT NULL CHECK (attempts >= 0),
    claim_id        TEXT,
    secret_digest   BLOB CHECK (secret_digest IS NULL OR length(secret_digest) = 32),
    holder          TEXT,
    claimed_us      INTEGER,
    expires_us      INTEGER,
    created_us      INTEGER NOT NULL,
    updated_us      INTEGER NOT NULL,
    last_error      TEXT,
    payload         BLOB NOT NULL,
    due_us          INTEGER,
    parked          INTEGER NOT NULL DEFAULT 0 CHECK (parked IN (0, 1)),
    max_hold_us     INTEGER CHECK (max_hold_us IS NULL OR max_hold_us > 0),
    backoff_base_us INTEGER,
    backoff_cap_us  INTEGER,
    provenance_at   INTEGER,
    ended_us        INTEGER,
    progress        BLOB CHECK (progress IS NULL OR length(progress) <= 4096),
    UNIQUE (production, job)
)"
    };
}

/// What follows `CREATE TABLE claim_requests` in [`CURRENT`], which the step
/// that adds the table in [`super::migrate`] creates.
macro_rules! claim_requests_table {
    () => {
        "(
    production    TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    job           TEXT NOT NULL,
    claim_id      TEXT NOT NULL,
    secret_digest BLOB NOT NULL CHECK (length(secret_digest) = 32),
    args_digest   BLOB NOT NULL,
    created_us    INTEGER NOT NULL,
    PRIMARY KEY (production, request_id)
) WITHOUT ROWID"
    };
}

/// What follows `CREATE TABLE tombstones` in [`CURRENT`], which the step
/// that adds the table in [`super::migrate`] creates.
macro_rules! tombstones_table {
    () => {
        "(
    production      TEXT NOT NULL,
    job             TEXT NOT NULL,
    payload_digest  BLOB NOT NULL,
    priority        INTEGER NOT NULL,
    max_attempts    INTEGER NOT NULL,
    state           TEXT NOT NULL,
    pruned_us       INTEGER NOT NULL,
    max_hold_us     INTEGER,
    backoff_base_us INTEGER,
    backoff_cap_us  INTEGER,
    PRIMARY KEY (production, job)
) WITHOUT ROWID"
    };
}
/// The table and indexes the statistics read
/// ([`crate::store::Txn::state_counts`] and its neighbours), in [`CURRENT`]
/// and added by the step in [`super::migrate`] that adds them:
///
/// - `job_counts`: per production, its number of jobs (`state = 'all'`)
///   and its number in each terminal state (`completed`, `failed`,
///   `cancelled`). The transaction that inserts, deletes or ends a job, or
///   takes one out of a terminal state, adds its changes at its commit
///   (one row written per production and count it changed, none when they
///   cancel out; see `SqliteTxn::count`); a claim, a renewal or a release
///   writes none. The claimed jobs are counted from `jobs_claimed` and the
///   requested ones are the rest.
/// - `jobs_waiting`: requested jobs by due moment (`due_us`, or
///   `updated_us`, when the job last became requested); `jobs_claimed`:
///   the claimed jobs by ID (the split of claimed jobs, and a listing of
///   claimed, expired or failed jobs, walk only them); `events_by_time`:
///   by production and time, the events the flow reads
///   ([`crate::store::flow_events`]): a renewal, a submission or any other
///   event enters no index.
macro_rules! stats_figures {
    () => {
        concat!(
            "
CREATE TABLE IF NOT EXISTS job_counts (
    production TEXT NOT NULL,
    state      TEXT NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (production, state)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (production, coalesce(due_us, updated_us))
    WHERE state = 'requested';
CREATE INDEX IF NOT EXISTS jobs_claimed ON jobs (production, job) WHERE state = 'claimed';
CREATE INDEX IF NOT EXISTS events_by_time ON events (production, at_us) WHERE ",
            $crate::store::flow_events!(),
            ";
"
        )
    };
}
/// What follows `CREATE TABLE production_gates` in [`CURRENT`], which the
/// step that adds the table in [`super::migrate`] creates.
macro_rules! production_gates_table {
    () => {
        "(
    name             TEXT PRIMARY KEY,
    paused_us        INTEGER,
    concurrency      INTEGER CHECK (concurrency IS NULL OR concurrency > 0),
    rate_claims      INTEGER CHECK (rate_claims IS NULL OR rate_claims > 0),
    rate_interval_us INTEGER CHECK (rate_interval_us IS NULL OR rate_interval_us > 0),
    rate_burst       INTEGER CHECK (rate_burst IS NULL OR rate_burst > 0),
    rate_tat_us      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID"
    };
}
/// What follows `CREATE TABLE schedules` in [`CURRENT`], which the step
/// that adds the table in [`super::migrate`] creates.
macro_rules! schedules_table {
    () => {
        "(
    production      TEXT NOT NULL,
    name            TEXT NOT NULL,
    cadence         TEXT NOT NULL,
    payload         BLOB NOT NULL,
    priority        INTEGER NOT NULL,
    max_attempts    INTEGER NOT NULL,
    max_hold_us     INTEGER,
    backoff_base_us INTEGER,
    backoff_cap_us  INTEGER,
    catch_up        INTEGER NOT NULL,
    overlap         TEXT NOT NULL,
    paused          INTEGER NOT NULL CHECK (paused IN (0, 1)),
    settled_us      INTEGER NOT NULL,
    last_slot_us    INTEGER,
    created_us      INTEGER NOT NULL,
    updated_us      INTEGER NOT NULL,
    tz              TEXT,
    PRIMARY KEY (production, name)
) WITHOUT ROWID"
    };
}
pub(super) use {
    claim_requests_table, jobs_table, production_gates_table, schedules_table, stats_figures,
    tombstones_table,
};

/// The tables and indexes of a store at [`crate::store::SCHEMA_VERSION`].
///
/// - `meta`: the high-water mark (`high_water_us`, see also `events.mark_us`)
///   and the history horizon (`history_horizon`, the last pruned event).
/// - `jobs`: one row per job. `state` is checked by plain comparisons and
///   `jobs_terminal` keeps the rows that are neither requested nor claimed:
///   SQLite evaluates `x IN (a, b, c, ...)` (three or more constants) by
///   building a temporary B-tree on every execution of a statement that
///   writes the row. `due_us` is a job's not-before time and `parked`
///   keeps requested jobs not yet due out of claim-next's index
///   (`jobs_ready`; `jobs_parked` finds those whose time has come).
///   `ended_us` is set with a terminal state (NULL while the job is
///   requested or claimed): claim-next's index and `jobs_ended` (the
///   terminal jobs by state and ID) key on it instead of on `state`, so a
///   claim, a renewal or a release that leaves the job unparked writes no
///   index entry. `provenance_at` says where among a completed job's facts
///   its four `tenure.*` provenance facts stand (they restate the row and
///   are not stored as fact rows); NULL on rows whose provenance is stored
///   as facts. `progress` is the job's progress checkpoint (at most
///   [`crate::validate::MAX_PROGRESS`] bytes), written by its current lease.
/// - `events`: the log. The transaction that appends events leaves the
///   high-water mark on its last one (`mark_us`); the stored mark is the
///   larger of `meta`'s and the newest event's ([`super::sql::HIGH_WATER_SQL`]).
/// - `facts`, `nonces`, `claim_requests` (claims made under a request ID),
///   `tombstones` (jobs pruned, with what they were submitted with),
///   `schedules` (recurring jobs with their slot record).
/// - `production_gates`: a production's pause, concurrency limit, rate
///   limit and the rate limit's state (see [`crate::gates`]); a production
///   that never had one set has no row.
pub(super) const CURRENT: &str = concat!(
    "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('high_water_us', 0), ('history_horizon', 0);
CREATE TABLE productions (
    name            TEXT PRIMARY KEY,
    created_us      INTEGER NOT NULL,
    cancelled_us    INTEGER,
    backoff_base_us INTEGER,
    backoff_cap_us  INTEGER
) WITHOUT ROWID;
CREATE TABLE jobs ",
    jobs_table!(),
    ";
CREATE INDEX jobs_ready ON jobs (production, priority DESC, seq)
    WHERE ended_us IS NULL AND parked = 0;
CREATE INDEX jobs_parked ON jobs (production, due_us) WHERE parked = 1;
CREATE INDEX jobs_ended ON jobs (production, state, job) WHERE ended_us IS NOT NULL;
CREATE INDEX jobs_terminal ON jobs (updated_us) WHERE state NOT IN ('requested', 'claimed');
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    at_us      INTEGER NOT NULL,
    production TEXT NOT NULL,
    job        TEXT,
    kind       TEXT NOT NULL,
    state      TEXT,
    claim_id   TEXT,
    holder     TEXT,
    attempt    INTEGER,
    expires_us INTEGER,
    detail     TEXT NOT NULL DEFAULT '',
    mark_us    INTEGER,
    since_us   INTEGER,
    lapsed_us  INTEGER
);
CREATE TABLE facts (
    production TEXT NOT NULL,
    job        TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (production, job, ord)
) WITHOUT ROWID;
CREATE TABLE nonces (
    nonce      TEXT PRIMARY KEY,
    production TEXT NOT NULL,
    job        TEXT NOT NULL,
    claim_id   TEXT NOT NULL,
    used_us    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX nonces_by_job ON nonces (production, job);
CREATE TABLE claim_requests ",
    claim_requests_table!(),
    ";
CREATE INDEX claim_requests_by_job ON claim_requests (production, job);
CREATE TABLE tombstones ",
    tombstones_table!(),
    ";
CREATE INDEX tombstones_by_age ON tombstones (pruned_us);
CREATE TABLE production_gates ",
    production_gates_table!(),
    ";
CREATE TABLE schedules ",
    schedules_table!(),
    ";
",
    stats_figures!()
);

/// Create the current layout in an empty database, inside the caller's
/// transaction.
pub(super) fn create_current(conn: &Connection) -> Result<()> {
    conn.execute_batch(CURRENT)?;
    Ok(())
}
