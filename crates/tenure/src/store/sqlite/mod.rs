//! The SQLite backend: one file, WAL, every write `BEGIN IMMEDIATE`.
//!
//! Connections are pooled per [`crate::Authority`]; each transaction owns one
//! connection until it ends, so threads sharing an authority wait on SQLite's
//! writer lock independently. Statements are prepared once per connection:
//! those of every write transaction in slots of their own ([`conn`]), the
//! others through `prepare_cached`. Local filesystems only: SQLite's locking
//! is not safe on network filesystems.

mod checkpoint;
mod conn;
mod durability;
#[cfg(test)]
mod pause;
#[cfg(test)]
pub(crate) use crate::sys::powerloss;
use crate::sys::wal_writes;
#[cfg(target_os = "linux")]
mod writer_queue;

use conn::{Conn, Hot};

use super::{
    backoff_cols, backoff_from_cols, Backend, JobRow, LiveScan, NewEvent, ProductionRow,
    RequestRow, Stored, Tombstone, Txn, SCHEMA_VERSION,
};
use crate::error::{bounded, Error, Result};
use crate::model::{Event, EventKind, PublishedFact};
use crate::ttl::Backoff;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// `PRAGMA application_id` of a tenure store: ASCII "TENU".
pub const APPLICATION_ID: i32 = 0x5445_4E55;

/// SQLite `synchronous` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// fsync the WAL at every commit (the default): nothing committed is lost on power failure.
    /// With the store's queue file the fsync runs after the writer lock is
    /// released and before the call returns (see `docs/design.md`, "Durable
    /// after the lock").
    #[default]
    Full,
    /// fsync at checkpoints only: a power failure may lose the latest commits
    /// (never corrupts). Faster.
    Normal,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

struct Pool {
    /// Declared first: dropped (its thread stopped) before the connections.
    checkpointer: checkpoint::Checkpointer,
    path: PathBuf,
    sync: Synchronous,
    busy: Duration,
    idle: Mutex<Vec<Conn>>,
    /// Syncs the WAL when commits are made durable after the writer lock.
    syncer: durability::Syncer,
    #[cfg(target_os = "linux")]
    writer_queue: Option<Arc<writer_queue::WriterQueue>>,
}

const MAX_IDLE: usize = 16;

/// Open one connection to the store file, through the VFS that writes each
/// WAL frame in one call ([`wal_writes`]). SQLite's message for a file it
/// cannot open names the path: a long path is shown bounded.
fn open_connection(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    #[cfg(test)]
    let vfs = if powerloss::covers(path) {
        wal_writes::model_vfs_name()
    } else {
        wal_writes::vfs_name()
    };
    #[cfg(not(test))]
    let vfs = wal_writes::vfs_name();
    Connection::open_with_flags_and_vfs(path, flags, vfs)
        .map_err(|e| Error::from(e).bounding(&path.to_string_lossy()))
}

/// The store path for a message (bounded, see [`crate::error::bounded`]).
fn shown(path: &Path) -> String {
    bounded(&path.display().to_string())
}

impl Pool {
    /// The writer queue whose commit counters make the WAL durable after
    /// the writer lock is released (see [`durability`]): at
    /// `synchronous = FULL` with a queue file; `None` otherwise.
    fn deferred(&self) -> Option<&Arc<writer_queue::WriterQueue>> {
        #[cfg(target_os = "linux")]
        if self.sync == Synchronous::Full {
            return self.writer_queue.as_ref().filter(|q| q.defers());
        }
        None
    }

    /// Whether a COMMIT syncs the WAL while holding the writer lock
    /// (`FULL` without [`Pool::deferred`]): only then is the next writer's
    /// wait long enough to overlap with a wake-up.
    fn syncs_in_commit(&self) -> bool {
        self.sync == Synchronous::Full && self.deferred().is_none()
    }

    /// The `synchronous` setting connections run with: `NORMAL` when
    /// commits are made durable after the lock is released.
    fn pragma_sync(&self) -> Synchronous {
        if self.deferred().is_some() {
            Synchronous::Normal
        } else {
            self.sync
        }
    }

    fn connect(&self) -> Result<Conn> {
        let conn = open_connection(&self.path)?;
        configure(&conn, self.pragma_sync(), self.busy)?;
        Ok(Conn::new(conn, &self.checkpointer))
    }

    /// [`durability::settle`] through this pool's syncer: its connection
    /// reads once on opening, which opens the WAL it syncs.
    fn settle(&self, queue: &writer_queue::WriterQueue, seen: u64) -> Result<()> {
        durability::settle(
            queue,
            &self.syncer,
            || {
                let conn = open_connection(&self.path)?;
                conn.busy_timeout(self.busy)?;
                conn.query_row("SELECT count(*) FROM meta", [], |_| Ok(()))?;
                Ok(conn)
            },
            seen,
        )
    }

    fn take(&self) -> Result<Conn> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(c) => Ok(c),
            None => self.connect(),
        }
    }

    fn give_back(&self, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}

fn configure(conn: &Connection, sync: Synchronous, busy: Duration) -> Result<()> {
    conn.busy_timeout(busy)?;
    conn.set_prepared_statement_cache_capacity(64);
    // Temporary files in memory: a commit group's savepoints keep the
    // original of every page its members change (a sub-journal), which
    // SQLite otherwise spills to a new temporary file past 64 KiB, i.e. in
    // most groups of several members.
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {}; PRAGMA foreign_keys = OFF; PRAGMA trusted_schema = OFF;
         PRAGMA temp_store = MEMORY;",
        sync.pragma()
    ))?;
    Ok(())
}

/// The SQLite store behind an authority.
pub(crate) struct SqliteBackend {
    pool: Arc<Pool>,
    /// The bounded-polling doorbell when there is no queue file.
    poll_bell: std::sync::OnceLock<Arc<crate::doorbell::PollBell>>,
}

/// What opening did to the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opened {
    pub from_version: u32,
    pub to_version: u32,
}

impl SqliteBackend {
    /// Open or create the store at `path`, refusing a newer or foreign file
    /// before changing anything, then migrating forward in one transaction.
    pub(crate) fn open(
        path: &Path,
        sync: Synchronous,
        busy: Duration,
        now_us: &dyn Fn() -> i64,
    ) -> Result<(SqliteBackend, Opened)> {
        let mut pool = Pool {
            checkpointer: checkpoint::Checkpointer::new(path.to_path_buf(), sync, busy),
            path: path.to_path_buf(),
            sync,
            busy,
            idle: Mutex::new(Vec::new()),
            syncer: durability::Syncer::default(),
            #[cfg(target_os = "linux")]
            writer_queue: None,
        };
        let conn = open_connection(path)?;
        conn.busy_timeout(busy)?;
        // Inspect before touching: these reads do not modify the file.
        let (version, app_id) = header(&conn)?;
        if version > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if app_id != 0 && app_id != APPLICATION_ID {
            return Err(Error::Store(format!(
                "not a tenure store: {} has application_id {app_id:#x}",
                shown(path)
            )));
        }
        if app_id == 0 && version != 0 {
            return Err(Error::Store(format!(
                "not a tenure store: {} has user_version {version} but no tenure application_id",
                shown(path)
            )));
        }
        if version == 0 && app_id == 0 {
            // A new store gives freed pages back in small steps
            // (`reclaim_space`) and has pages of [`PAGE_SIZE`] bytes: both
            // must precede its first table and the switch to WAL. On a file
            // that already has tables (refused below as foreign) the
            // pragmas change nothing.
            conn.execute_batch(&format!(
                "PRAGMA page_size = {PAGE_SIZE}; PRAGMA auto_vacuum = INCREMENTAL;"
            ))?;
        }
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Store(format!(
                "could not switch {} to WAL (journal_mode is {mode})",
                shown(path)
            )));
        }
        configure(&conn, sync, busy)?;
        let opened = migrate(&conn, now_us)?;
        #[cfg(target_os = "linux")]
        {
            pool.writer_queue = writer_queue::WriterQueue::open(path).map(Arc::new);
        }
        if pool.pragma_sync() != sync {
            conn.execute_batch(&format!(
                "PRAGMA synchronous = {};",
                pool.pragma_sync().pragma()
            ))?;
        }
        let pool = Arc::new(pool);
        pool.give_back(Conn::new(conn, &pool.checkpointer));
        Ok((
            SqliteBackend {
                pool,
                poll_bell: std::sync::OnceLock::new(),
            },
            opened,
        ))
    }
}

fn header(conn: &Connection) -> Result<(u32, i32)> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version = u32::try_from(version)
        .map_err(|_| Error::Store(format!("invalid schema version {version}")))?;
    Ok((version, app_id))
}

const SCHEMA_V2: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('high_water_us', 0);
CREATE TABLE productions (
    name         TEXT PRIMARY KEY,
    created_us   INTEGER NOT NULL,
    cancelled_us INTEGER
) WITHOUT ROWID;
CREATE TABLE jobs (
    seq            INTEGER PRIMARY KEY,
    production     TEXT NOT NULL,
    job            TEXT NOT NULL,
    payload_digest BLOB NOT NULL,
    payload_len    INTEGER NOT NULL,
    priority       INTEGER NOT NULL,
    max_attempts   INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    state          TEXT NOT NULL
                   CHECK (state IN ('requested', 'claimed', 'completed', 'failed', 'cancelled')),
    attempts       INTEGER NOT NULL CHECK (attempts >= 0),
    claim_id       TEXT,
    secret_digest  BLOB CHECK (secret_digest IS NULL OR length(secret_digest) = 32),
    holder         TEXT,
    claimed_us     INTEGER,
    expires_us     INTEGER,
    created_us     INTEGER NOT NULL,
    updated_us     INTEGER NOT NULL,
    last_error     TEXT,
    payload        BLOB NOT NULL,
    UNIQUE (production, job)
);
CREATE INDEX jobs_live ON jobs (production, priority DESC, seq)
    WHERE state IN ('requested', 'claimed');
CREATE INDEX jobs_by_state ON jobs (production, state, job);
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
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_by_production ON events (production, seq);
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
";

/// Schema 3 (retention): tombstones of pruned jobs, the history horizon,
/// and the indexes pruning reads by. Additive only.
const MIGRATE_2_TO_3: &str = "
CREATE TABLE IF NOT EXISTS tombstones (
    production     TEXT NOT NULL,
    job            TEXT NOT NULL,
    payload_digest BLOB NOT NULL,
    priority       INTEGER NOT NULL,
    max_attempts   INTEGER NOT NULL,
    state          TEXT NOT NULL,
    pruned_us      INTEGER NOT NULL,
    PRIMARY KEY (production, job)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tombstones_by_age ON tombstones (pruned_us);
CREATE INDEX IF NOT EXISTS jobs_terminal ON jobs (updated_us)
    WHERE state IN ('completed', 'failed', 'cancelled');
CREATE INDEX IF NOT EXISTS nonces_by_job ON nonces (production, job);
INSERT OR IGNORE INTO meta (key, value) VALUES ('history_horizon', 0);
";

/// Schema 4 (scheduling and hold limits). Jobs get a not-before time
/// (`due_us`), a `parked` flag that keeps requested jobs not yet due out of
/// claim-next's index (`jobs_ready` replaces `jobs_live`; `jobs_parked`
/// finds the ones whose time has come), a hard per-claim hold limit and a
/// back-off policy; productions get a default back-off; tombstones keep the
/// hold limit and back-off a pruned job was submitted with. Additive:
/// existing rows read as "due at once, no limit, no back-off". Run once,
/// inside the migration transaction that checked the version.
const MIGRATE_3_TO_4: &str = "
ALTER TABLE jobs ADD COLUMN due_us INTEGER;
ALTER TABLE jobs ADD COLUMN parked INTEGER NOT NULL DEFAULT 0 CHECK (parked IN (0, 1));
ALTER TABLE jobs ADD COLUMN max_hold_us INTEGER CHECK (max_hold_us IS NULL OR max_hold_us > 0);
ALTER TABLE jobs ADD COLUMN backoff_base_us INTEGER;
ALTER TABLE jobs ADD COLUMN backoff_cap_us INTEGER;
ALTER TABLE productions ADD COLUMN backoff_base_us INTEGER;
ALTER TABLE productions ADD COLUMN backoff_cap_us INTEGER;
ALTER TABLE tombstones ADD COLUMN max_hold_us INTEGER;
ALTER TABLE tombstones ADD COLUMN backoff_base_us INTEGER;
ALTER TABLE tombstones ADD COLUMN backoff_cap_us INTEGER;
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
/// `seq` as they are) into a new table that replaces it, and its indexes are
/// created again. Run once, inside the migration transaction that checked
/// the version.
const MIGRATE_4_TO_5: &str = "
CREATE TABLE jobs_v5 (
    seq            INTEGER PRIMARY KEY,
    production     TEXT NOT NULL,
    job            TEXT NOT NULL,
    payload_digest BLOB NOT NULL,
    payload_len    INTEGER NOT NULL,
    priority       INTEGER NOT NULL,
    max_attempts   INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    state          TEXT NOT NULL
                   CHECK (state = 'requested' OR state = 'claimed' OR state = 'completed'
                          OR state = 'failed' OR state = 'cancelled'),
    attempts       INTEGER NOT NULL CHECK (attempts >= 0),
    claim_id       TEXT,
    secret_digest  BLOB CHECK (secret_digest IS NULL OR length(secret_digest) = 32),
    holder         TEXT,
    claimed_us     INTEGER,
    expires_us     INTEGER,
    created_us     INTEGER NOT NULL,
    updated_us     INTEGER NOT NULL,
    last_error     TEXT,
    payload        BLOB NOT NULL,
    due_us         INTEGER,
    parked         INTEGER NOT NULL DEFAULT 0 CHECK (parked IN (0, 1)),
    max_hold_us    INTEGER CHECK (max_hold_us IS NULL OR max_hold_us > 0),
    backoff_base_us INTEGER,
    backoff_cap_us INTEGER,
    UNIQUE (production, job)
);
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
";

/// Schema 6 (request IDs): the claims made under a caller's request ID,
/// one row per request, removed with their job. Additive only.
const MIGRATE_5_TO_6: &str = "
CREATE TABLE IF NOT EXISTS claim_requests (
    production    TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    job           TEXT NOT NULL,
    claim_id      TEXT NOT NULL,
    secret_digest BLOB NOT NULL CHECK (length(secret_digest) = 32),
    args_digest   BLOB NOT NULL,
    created_us    INTEGER NOT NULL,
    PRIMARY KEY (production, request_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claim_requests_by_job ON claim_requests (production, job);
";

/// Schema 7 (provenance in the job row): a completion's four `tenure.*`
/// provenance facts restate the completed row (claim ID, holder, attempts,
/// `updated_us`), so they are no longer written as fact rows; the column
/// `provenance_at` of a completed job says where among its facts they stand
/// and [`Txn::facts`] gives them back there. Additive: existing rows (NULL)
/// keep their stored provenance facts. Run inside the migration transaction
/// that checked the version; a `jobs` table that has the column already is
/// left as it is.
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
/// `meta` row and the newest event's `mark_us` ([`HIGH_WATER_SQL`]). The
/// newest event is never removed (pruning and production deletion keep
/// it). Additive: existing events (NULL) leave the mark to `meta`. Run
/// inside the migration transaction that checked the version; an `events`
/// table that has the column already is left as it is.
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

/// The page size of a new store, in bytes. A transition rewrites whole
/// pages: each page it changes is one WAL frame (header and page written,
/// checksummed, later copied into the database file), and the rows a
/// transition changes (a job row, an event, an index entry) are small, so
/// half the default 4 KiB halves the bytes each frame moves. A payload
/// longer than about 1.9 KiB continues on overflow pages. Existing stores
/// keep the page size they were created with.
pub(crate) const PAGE_SIZE: u32 = 2048;

/// How many free pages one reclaim step gives back at most.
const RECLAIM_PAGES: i64 = 512;

/// Free pages a reclaim step leaves in the file: a quarter of its pages
/// (at least [`RECLAIM_PAGES`]). Under a steady stream the pages pruning
/// frees are reused by the next writes; giving each back at once would move
/// the file's newest (hottest) pages into the holes and grow the file again
/// right after, every step. Only a surplus beyond this slack (after a
/// burst of pruning or a deleted production) is given back.
fn reclaim_slack(pages: i64) -> i64 {
    (pages / 4).max(RECLAIM_PAGES)
}

/// The current table layout: schema 2 plus every later migration in order.
fn create_current(conn: &Connection) -> Result<()> {
    conn.execute_batch(SCHEMA_V2)?;
    conn.execute_batch(MIGRATE_2_TO_3)?;
    conn.execute_batch(MIGRATE_3_TO_4)?;
    conn.execute_batch(MIGRATE_4_TO_5)?;
    conn.execute_batch(MIGRATE_5_TO_6)?;
    migrate_6_to_7(conn)?;
    migrate_7_to_8(conn)?;
    migrate_9_to_10(conn)
}

/// Run forward-only migrations in one `BEGIN IMMEDIATE` transaction.
fn migrate(conn: &Connection, now_us: &dyn Fn() -> i64) -> Result<Opened> {
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
            2..=9 => {
                if from == 2 {
                    conn.execute_batch(MIGRATE_2_TO_3)?;
                }
                if from <= 3 {
                    conn.execute_batch(MIGRATE_3_TO_4)?;
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
                migrate_9_to_10(conn)?;
            }
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
                detail: if claimed {
                    "pre-lease claim expired by the schema migration"
                } else {
                    "migrated from the pre-lease schema"
                },
            },
        )?;
    }
    conn.execute_batch("DROP TABLE jobs_v1; DROP TABLE productions_v1;")?;
    conn.execute(
        "UPDATE meta SET value = max(value, ?1) WHERE key = 'high_water_us'",
        [now],
    )?;
    let _ = expired;
    Ok(())
}

impl Backend for SqliteBackend {
    fn begin_write(&self) -> Result<Box<dyn Txn>> {
        let start = std::time::Instant::now();
        let deadline = start + self.pool.busy;
        #[cfg(target_os = "linux")]
        let turn = match &self.pool.writer_queue {
            Some(q) => Some(q.acquire(deadline, self.pool.syncs_in_commit())?),
            None => None,
        };
        let mut t = SqliteTxn::begin(&self.pool, Hot::BeginImmediate, deadline)?;
        #[cfg(target_os = "linux")]
        {
            t.turn = turn;
        }
        crate::stats::record_lock_wait(start.elapsed());
        Ok(t)
    }
    fn begin_read(&self) -> Result<Box<dyn Txn>> {
        let deadline = std::time::Instant::now() + self.pool.busy;
        Ok(SqliteTxn::begin(&self.pool, Hot::BeginDeferred, deadline)?)
    }
    fn doorbell(&self) -> Result<Arc<dyn crate::doorbell::Doorbell>> {
        #[cfg(target_os = "linux")]
        if let Some(q) = &self.pool.writer_queue {
            return Ok(q.clone());
        }
        Ok(self
            .poll_bell
            .get_or_init(|| Arc::new(crate::doorbell::PollBell::new()))
            .clone())
    }

    /// Switch the file to incremental auto-vacuum (a store created before
    /// schema 3 has none) with the one full `VACUUM` that takes, at its turn
    /// at the writer queue; a store already incremental is only vacuumed.
    fn compact(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + self.pool.busy;
        #[cfg(target_os = "linux")]
        let _turn = match &self.pool.writer_queue {
            Some(q) => Some(q.acquire(deadline, self.pool.syncs_in_commit())?),
            None => None,
        };
        let pooled = self.pool.take()?;
        let conn = pooled.get();
        conn.busy_timeout(deadline.saturating_duration_since(std::time::Instant::now()))?;
        let mut r = conn
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            .map_err(Error::from);
        if r.is_ok() && self.pool.deferred().is_some() {
            // The connection runs at `NORMAL`: sync what VACUUM wrote
            // before returning (it changes no content, so nothing read
            // since depends on it).
            r = conn::sync_wal(conn).map_err(Error::Store);
        }
        conn.busy_timeout(self.pool.busy)?;
        self.pool.give_back(pooled);
        r
    }
}

struct SqliteTxn {
    conn: Option<Conn>,
    pool: Arc<Pool>,
    open: bool,
    savepoints: u32,
    /// Ring the work doorbell once the COMMIT returned.
    ring: bool,
    /// The mark this transaction read ([`Txn::high_water`]): every event
    /// it appends carries it, so that the newest event never holds less
    /// than the stored mark, whether or not the commit raises it.
    read_mark: Option<i64>,
    /// The sequence of the event this transaction inserted last.
    last_event: Option<i64>,
    /// The event appended last is bound to the [`Hot::AppendEvent`]
    /// statement but not inserted yet: the transaction's next statement
    /// that reads or removes events, opens or ends a savepoint, appends
    /// another event or commits inserts it first ([`SqliteTxn::flush_event`]);
    /// the commit inserts it carrying the mark it writes, which then needs
    /// no `UPDATE` of its own.
    event_bound: bool,
    /// A write transaction (`BEGIN IMMEDIATE`): the mark may be known
    /// without reading it ([`Conn::known_mark`]).
    write: bool,
    /// The stored mark this transaction's commit leaves, when it is known
    /// ([`Txn::commit_with_mark`]); the connection remembers it.
    mark_after: Option<i64>,
    /// This writer's place in the [`writer_queue`], held until the transaction ends.
    #[cfg(target_os = "linux")]
    turn: Option<writer_queue::WriterTurn>,
}

impl SqliteTxn {
    fn begin(pool: &Arc<Pool>, begin: Hot, deadline: std::time::Instant) -> Result<Box<SqliteTxn>> {
        let conn = pool.take()?;
        // Whatever the queue took of the busy timeout is not available again.
        conn.get()
            .busy_timeout(deadline.saturating_duration_since(std::time::Instant::now()))?;
        match exec(&conn, begin) {
            Ok(()) => Ok(Box::new(SqliteTxn {
                conn: Some(conn),
                pool: pool.clone(),
                open: true,
                savepoints: 0,
                ring: false,
                read_mark: None,
                last_event: None,
                event_bound: false,
                write: begin == Hot::BeginImmediate,
                mark_after: None,
                #[cfg(target_os = "linux")]
                turn: None,
            })),
            Err(e) => {
                // A failed BEGIN leaves no transaction; the connection is reusable.
                pool.give_back(conn);
                Err(e.into())
            }
        }
    }

    fn c(&self) -> &Connection {
        self.h().get()
    }

    /// The pooled connection, for its [`Hot`] statements.
    fn h(&self) -> &Conn {
        self.conn.as_ref().expect("connection present while open")
    }

    /// Insert the event [`Txn::append_event`] left bound, if any, carrying
    /// `mark`.
    fn flush_event(&mut self, mark: Option<i64>) -> Result<()> {
        if !self.event_bound {
            return Ok(());
        }
        self.event_bound = false;
        self.h().with(Hot::AppendEvent, |st| {
            st.raw_bind_parameter(11, mark)?;
            st.raw_execute().map(|_| ())
        })?;
        self.last_event = Some(self.c().last_insert_rowid());
        Ok(())
    }

    fn finish(&mut self, end: Hot) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        // Ending without a commit: the bound event is never inserted.
        self.event_bound = false;
        let deferred = self.pool.deferred().cloned();
        // What a write transaction may have seen, for `durability::settle`:
        // its own commit's number, or (ending under the writer lock without
        // one) every commit so far. A read settles what it saw before it
        // ends ([`Txn::settle_snapshot`]).
        let mut seen = None;
        if let Some(q) = deferred.as_ref().filter(|_| self.write) {
            seen = Some(if end == Hot::Commit {
                q.commit_begins()
            } else {
                q.begun()
            });
        }
        #[cfg(target_os = "linux")]
        if let Some(turn) = self.turn.as_ref().filter(|_| self.pool.syncs_in_commit()) {
            turn.ending();
        }
        let r = if end == Hot::Commit {
            wal_writes::committing(|| exec(self.h(), end))
        } else {
            exec(self.h(), end)
        };
        if let (Some(q), Some(n), Hot::Commit) = (&deferred, seen, end) {
            q.commit_written(n);
        }
        #[cfg(target_os = "linux")]
        let turn = self.turn.take();
        self.open = false;
        let r: Result<()> = match r {
            Ok(()) => {
                if let Some(c) = self.conn.take() {
                    if end == Hot::Commit {
                        c.remember_mark(self.mark_after);
                    }
                    self.pool.give_back(c);
                }
                Ok(())
            }
            Err(e) => {
                if let Some(c) = &self.conn {
                    c.remember_mark(None);
                }
                // A failed COMMIT may leave the transaction open: roll back so
                // the connection can be reused, then report the failure.
                if let Some(c) = self.conn.take() {
                    if c.get().is_autocommit() || exec(&c, Hot::Rollback).is_ok() {
                        self.pool.give_back(c);
                    }
                }
                Err(e.into())
            }
        };
        // The connection is back in the pool before the next writer's turn
        // begins: a writer of this process takes it with its page cache
        // warm (it wrote last, so SQLite keeps its pages).
        #[cfg(target_os = "linux")]
        drop(turn);
        r?;
        #[cfg(test)]
        durability::tests::before_settle(&self.pool.path);
        if let (Some(q), Some(seen)) = (&deferred, seen) {
            self.pool.settle(q, seen)?;
        }
        Ok(())
    }
}

impl Drop for SqliteTxn {
    fn drop(&mut self) {
        if self.open {
            let _ = self.finish(Hot::Rollback);
        }
    }
}

/// An update of one job must touch exactly its row.
fn one_row(n: usize, row: &JobRow) -> Result<()> {
    if n == 1 {
        Ok(())
    } else {
        Err(Error::Internal(format!(
            "a write to job {}/{} touched {n} rows",
            row.production, row.job
        )))
    }
}

/// Run a transaction-control statement (several run per transition).
fn exec(conn: &Conn, h: Hot) -> rusqlite::Result<()> {
    conn.with(h, |st| st.execute([]).map(|_| ()))
}

/// The columns [`job_row`] decodes, in its order, as a literal so that the
/// statements using it are `&'static str` (a cached statement is found by
/// its text: no formatting per call).
macro_rules! job_cols {
    () => {
        "seq, production, job, payload_digest, payload_len, priority, max_attempts, \
         state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us, created_us, \
         updated_us, last_error, due_us, parked, max_hold_us, backoff_base_us, backoff_cap_us, \
         provenance_at"
    };
}

/// The columns [`event_row`] decodes, in its order.
macro_rules! event_cols {
    () => {
        "seq, at_us, production, job, kind, state, claim_id, holder, attempt, expires_us, detail"
    };
}

// The statements every write transaction runs, kept prepared per
// connection ([`Hot`]).
/// The stored mark: the `meta` row or the newest event's, whichever is
/// larger (schema 8, see [`migrate_7_to_8`]).
const HIGH_WATER_SQL: &str = "SELECT max(value, coalesce((SELECT mark_us FROM events \
     ORDER BY seq DESC LIMIT 1), value)) FROM meta WHERE key = 'high_water_us'";
/// The mark on an event this transaction appended.
const SET_EVENT_MARK_SQL: &str = "UPDATE events SET mark_us = ?2 WHERE seq = ?1";
const SET_HIGH_WATER_SQL: &str =
    "UPDATE meta SET value = max(value, ?1) WHERE key = 'high_water_us'";
const JOB_SQL: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE production = ?1 AND job = ?2"
);
/// [`JOB_SQL`] by a remembered sequence number (one B-tree search instead
/// of two): the row must still carry the IDs.
const JOB_BY_SEQ_SQL: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE seq = ?3 AND production = ?1 AND job = ?2"
);
const UPDATE_JOB_SQL: &str = "UPDATE jobs SET state = ?2, attempts = ?3, claim_id = ?4, \
     secret_digest = ?5, holder = ?6, claimed_us = ?7, expires_us = ?8, updated_us = ?9, \
     last_error = ?10, due_us = ?11, provenance_at = ?12, parked = ?13, ended_us = ?14 \
     WHERE seq = ?1";
/// [`UPDATE_JOB_SQL`] for a row that was and stays open and unparked (a
/// claim, a release or retry with no delay): it sets neither column of
/// `jobs_ready`'s predicate, so SQLite leaves that index alone. A row that
/// was parked or ended is not matched (0 rows) and takes the full
/// statement.
const UPDATE_OPEN_JOB_SQL: &str = "UPDATE jobs SET state = ?2, attempts = ?3, claim_id = ?4, \
     secret_digest = ?5, holder = ?6, claimed_us = ?7, expires_us = ?8, updated_us = ?9, \
     last_error = ?10, due_us = ?11, provenance_at = ?12 \
     WHERE seq = ?1 AND parked = 0 AND ended_us IS NULL";
const UPDATE_EXPIRY_SQL: &str = "UPDATE jobs SET expires_us = ?2, updated_us = ?3 WHERE seq = ?1";
const APPEND_EVENT_SQL: &str = "INSERT INTO events (at_us, production, job, kind, state, \
     claim_id, holder, attempt, expires_us, detail, mark_us) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
/// Claim-next's first page: see [`Txn::live_jobs`].
const LIVE_JOBS_SQL: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs INDEXED BY jobs_ready \
     WHERE production = ?1 AND ended_us IS NULL AND parked = 0 \
       AND state IN ('requested', 'claimed') \
       AND (state = 'requested' OR expires_us IS NULL OR expires_us <= ?3) \
     ORDER BY priority DESC, seq LIMIT ?2"
);
/// Whether a parked job of the production is due: see [`Txn::unpark_due`].
const PARKED_PROBE_SQL: &str = "SELECT 1 FROM jobs INDEXED BY jobs_parked \
     WHERE production = ?1 AND parked = 1 AND due_us <= ?2 LIMIT 1";

fn uuid_col(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<Uuid>> {
    // Read in place: no copy of the text.
    match r.get_ref(i)?.as_str_or_null()? {
        None => Ok(None),
        Some(s) => Uuid::parse_str(s).map(Some).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
        }),
    }
}

fn bad_col(i: usize, what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, what.into())
}

fn job_row(r: &Row<'_>) -> rusqlite::Result<JobRow> {
    let state = r.get_ref(7)?.as_str()?;
    let state =
        Stored::parse(state).ok_or_else(|| bad_col(7, format!("unknown state {state:?}")))?;
    Ok(JobRow {
        seq: r.get(0)?,
        production: r.get(1)?,
        job: r.get(2)?,
        payload_digest: r.get(3)?,
        payload_len: r.get(4)?,
        priority: r.get(5)?,
        max_attempts: r.get(6)?,
        state,
        attempts: r.get(8)?,
        claim_id: uuid_col(r, 9)?,
        secret_digest: r.get(10)?,
        holder: r.get(11)?,
        claimed_us: r.get(12)?,
        expires_us: r.get(13)?,
        created_us: r.get(14)?,
        updated_us: r.get(15)?,
        last_error: r.get(16)?,
        due_us: r.get(17)?,
        parked: r.get(18)?,
        max_hold_us: r.get(19)?,
        backoff: backoff_from_cols(r.get(20)?, r.get(21)?)
            .map_err(|e| bad_col(20, e.to_string()))?,
        provenance_at: r.get(22)?,
    })
}

fn production_row(r: &Row<'_>) -> rusqlite::Result<ProductionRow> {
    Ok(ProductionRow {
        name: r.get(0)?,
        created_us: r.get(1)?,
        cancelled_us: r.get(2)?,
        backoff: backoff_from_cols(r.get(3)?, r.get(4)?).map_err(|e| bad_col(3, e.to_string()))?,
    })
}

fn event_row(r: &Row<'_>) -> rusqlite::Result<Event> {
    let kind: String = r.get(4)?;
    let state: Option<String> = r.get(5)?;
    let state = match state {
        None => None,
        Some(s) => Some(
            Stored::parse(&s)
                .ok_or_else(|| bad_col(5, format!("unknown state {s:?}")))?
                .as_job_state(),
        ),
    };
    Ok(Event {
        seq: r.get(0)?,
        at_us: r.get(1)?,
        production: r.get(2)?,
        job: r.get(3)?,
        kind: EventKind::parse(&kind)
            .ok_or_else(|| bad_col(4, format!("unknown event kind {kind:?}")))?,
        state,
        claim_id: uuid_col(r, 6)?,
        holder: r.get(7)?,
        attempt: r.get(8)?,
        expires_us: r.get(9)?,
        detail: r.get(10)?,
    })
}

fn insert_job(conn: &Connection, row: &JobRow, payload: &[u8]) -> Result<i64> {
    let mut st = conn.prepare_cached(
        "INSERT INTO jobs (production, job, payload_digest, payload_len, priority, max_attempts,
             state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us,
             created_us, updated_us, last_error, payload, due_us, parked, max_hold_us,
             backoff_base_us, backoff_cap_us, ended_us)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19, ?20, ?21, ?22, ?23)",
    )?;
    let (base, cap) = backoff_cols(row.backoff);
    st.execute(params![
        row.production,
        row.job,
        row.payload_digest,
        row.payload_len,
        row.priority,
        row.max_attempts,
        row.state.as_str(),
        row.attempts,
        row.claim_id.map(|u| u.to_string()),
        row.secret_digest,
        row.holder,
        row.claimed_us,
        row.expires_us,
        row.created_us,
        row.updated_us,
        row.last_error,
        payload,
        row.due_us,
        row.parked,
        row.max_hold_us,
        base,
        cap,
        ended_us(row),
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A row's `ended_us` column (schema 10): its last transition's time once
/// its state is terminal, else NULL.
fn ended_us(row: &JobRow) -> Option<i64> {
    (!row.state.is_open()).then_some(row.updated_us)
}

fn append_event(conn: &Connection, ev: &NewEvent<'_>) -> Result<u64> {
    let mut st = conn.prepare_cached(APPEND_EVENT_SQL)?;
    insert_event(&mut st, ev, None)?;
    Ok(conn.last_insert_rowid() as u64)
}

/// A UUID as its hyphenated lower-case text (how the store keeps claim
/// IDs), written into `buf` instead of a new string.
fn uuid_text<'b>(u: &Uuid, buf: &'b mut [u8; uuid::fmt::Hyphenated::LENGTH]) -> &'b str {
    u.hyphenated().encode_lower(buf)
}

/// Bind `ev` to [`APPEND_EVENT_SQL`], all but the mark (`?11`).
fn bind_event(st: &mut rusqlite::Statement<'_>, ev: &NewEvent<'_>) -> rusqlite::Result<()> {
    let mut claim = [0; uuid::fmt::Hyphenated::LENGTH];
    st.raw_bind_parameter(1, ev.at_us)?;
    st.raw_bind_parameter(2, ev.production)?;
    st.raw_bind_parameter(3, ev.job)?;
    st.raw_bind_parameter(4, ev.kind.as_str())?;
    st.raw_bind_parameter(5, ev.state.map(|s| s.as_str()))?;
    st.raw_bind_parameter(6, ev.claim_id.map(|u| uuid_text(&u, &mut claim)))?;
    st.raw_bind_parameter(7, ev.holder)?;
    st.raw_bind_parameter(8, ev.attempt)?;
    st.raw_bind_parameter(9, ev.expires_us)?;
    st.raw_bind_parameter(10, ev.detail)
}

/// Bind and run [`APPEND_EVENT_SQL`], the event carrying `mark` (see
/// [`SqliteTxn::read_mark`]).
fn insert_event(
    st: &mut rusqlite::Statement<'_>,
    ev: &NewEvent<'_>,
    mark: Option<i64>,
) -> rusqlite::Result<()> {
    bind_event(st, ev)?;
    st.raw_bind_parameter(11, mark)?;
    st.raw_execute().map(|_| ())
}

/// Facts written by one `INSERT` (a completion writes four `tenure.*` facts
/// plus the caller's, so one statement usually carries all of them).
const FACTS_PER_INSERT: usize = 16;

/// `INSERT INTO facts` of `n` rows (1 ≤ n ≤ [`FACTS_PER_INSERT`]): `?1` is
/// the production, `?2` the job, then (ord, key, value) per row.
fn insert_facts_sql(n: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let all = SQL.get_or_init(|| {
        (1..=FACTS_PER_INSERT)
            .map(|n| {
                let rows: Vec<String> = (0..n)
                    .map(|i| format!("(?1, ?2, ?{}, ?{}, ?{})", 3 + 3 * i, 4 + 3 * i, 5 + 3 * i))
                    .collect();
                format!(
                    "INSERT INTO facts (production, job, ord, key, value) VALUES {}",
                    rows.join(", ")
                )
            })
            .collect()
    });
    &all[n - 1]
}

/// A completed job's provenance kept in its row (schema 7).
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
    let mut out = Vec::with_capacity(stored.len() + crate::rules::PROVENANCE_FACTS * derived.len());
    let mut derived = derived.into_iter().peekable();
    let put = |out: &mut Vec<PublishedFact>, d: Derived| {
        let facts =
            crate::rules::provenance(d.claim_id, d.holder.as_deref(), d.attempts, d.completed_us);
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

fn collect<T>(
    rows: rusqlite::MappedRows<'_, impl FnMut(&Row<'_>) -> rusqlite::Result<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for r in rows {
        out.push(r?);
    }
    Ok(out)
}

impl Txn for SqliteTxn {
    /// In a write transaction, the mark this connection's last commit left
    /// when nothing was committed to the file since; otherwise read.
    fn high_water(&mut self) -> Result<i64> {
        self.flush_event(self.read_mark)?;
        let known = if self.write {
            self.h().known_mark()
        } else {
            None
        };
        let mark = match known {
            Some(m) => m,
            None => self
                .h()
                .with(Hot::HighWater, |st| st.query_row([], |r| r.get(0)))?,
        };
        self.read_mark = Some(mark);
        Ok(mark)
    }

    fn set_high_water(&mut self, us: i64) -> Result<()> {
        crate::fault::point();
        self.h().with(Hot::SetHighWater, |st| st.execute([us]))?;
        Ok(())
    }

    fn schema_version(&mut self) -> Result<u32> {
        Ok(header(self.c())?.0)
    }

    /// The writer lock is store-wide: nothing to order against.
    fn production_lookup_locks(&self) -> bool {
        false
    }

    fn derives_provenance(&self) -> bool {
        true
    }

    fn production(&mut self, name: &str) -> Result<Option<ProductionRow>> {
        let mut st = self.c().prepare_cached(
            "SELECT name, created_us, cancelled_us, backoff_base_us, backoff_cap_us
             FROM productions WHERE name = ?1",
        )?;
        Ok(st.query_row([name], production_row).optional()?)
    }

    fn insert_production(&mut self, row: &ProductionRow) -> Result<()> {
        crate::fault::point();
        let mut st = self.c().prepare_cached(
            "INSERT INTO productions (name, created_us, cancelled_us, backoff_base_us,
                 backoff_cap_us) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let (base, cap) = backoff_cols(row.backoff);
        st.execute(params![
            row.name,
            row.created_us,
            row.cancelled_us,
            base,
            cap
        ])?;
        Ok(())
    }

    fn set_production_backoff(&mut self, name: &str, backoff: Option<Backoff>) -> Result<()> {
        crate::fault::point();
        let mut st = self.c().prepare_cached(
            "UPDATE productions SET backoff_base_us = ?2, backoff_cap_us = ?3 WHERE name = ?1",
        )?;
        let (base, cap) = backoff_cols(backoff);
        st.execute(params![name, base, cap])?;
        Ok(())
    }

    fn set_production_cancelled(&mut self, name: &str, at_us: i64) -> Result<()> {
        let mut st = self.c().prepare_cached(
            "UPDATE productions SET cancelled_us = ?2 WHERE name = ?1 AND cancelled_us IS NULL",
        )?;
        st.execute(params![name, at_us])?;
        Ok(())
    }

    fn productions(&mut self) -> Result<Vec<ProductionRow>> {
        let mut st = self.c().prepare_cached(
            "SELECT name, created_us, cancelled_us, backoff_base_us, backoff_cap_us
             FROM productions ORDER BY name",
        )?;
        let rows = st.query_map([], production_row)?;
        collect(rows)
    }

    /// By the sequence number this connection last wrote the job under,
    /// if it remembers one and the row there still carries the IDs; else
    /// by the IDs.
    fn job(&mut self, production: &str, job: &str) -> Result<Option<JobRow>> {
        let h = self.h();
        if let Some(seq) = h.seq_hint(production, job) {
            let row = h.with(Hot::JobBySeq, |st| {
                st.query_row(params![production, job, seq], job_row)
                    .optional()
            })?;
            if row.is_some() {
                return Ok(row);
            }
        }
        Ok(h.with(Hot::Job, |st| {
            st.query_row([production, job], job_row).optional()
        })?)
    }

    fn payload(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
        let mut st = self
            .c()
            .prepare_cached("SELECT payload FROM jobs WHERE production = ?1 AND job = ?2")?;
        Ok(st.query_row([production, job], |r| r.get(0)).optional()?)
    }

    fn insert_job(&mut self, row: &JobRow, payload: &[u8]) -> Result<i64> {
        crate::fault::point();
        insert_job(self.c(), row, payload)
    }

    fn update_job(&mut self, row: &JobRow) -> Result<()> {
        crate::fault::point();
        self.h().remember_seq(&row.production, &row.job, row.seq);
        let mut claim = [0; uuid::fmt::Hyphenated::LENGTH];
        let claim = row.claim_id.map(|u| uuid_text(&u, &mut claim));
        let state = row.state.as_str();
        // ?1 to ?12 of both statements; the full one adds `parked` and
        // `ended_us`.
        let common: [&dyn rusqlite::ToSql; 12] = [
            &row.seq,
            &state,
            &row.attempts,
            &claim,
            &row.secret_digest,
            &row.holder,
            &row.claimed_us,
            &row.expires_us,
            &row.updated_us,
            &row.last_error,
            &row.due_us,
            &row.provenance_at,
        ];
        if row.state.is_open() && !row.parked {
            let n = self
                .h()
                .with(Hot::UpdateOpenJob, |st| st.execute(&common[..]))?;
            if n == 1 {
                return Ok(());
            }
        }
        let ended = ended_us(row);
        let rest: [&dyn rusqlite::ToSql; 2] = [&row.parked, &ended];
        let n = self.h().with(Hot::UpdateJob, |st| {
            st.execute(rusqlite::params_from_iter(common.iter().chain(&rest)))
        })?;
        one_row(n, row)
    }

    fn update_expiry(&mut self, row: &JobRow) -> Result<()> {
        crate::fault::point();
        let n = self.h().with(Hot::UpdateExpiry, |st| {
            st.execute(params![row.seq, row.expires_us, row.updated_us])
        })?;
        one_row(n, row)
    }

    /// The writer lock is store-wide here: both scans see every row.
    fn live_jobs(
        &mut self,
        production: &str,
        after: Option<(i32, i64)>,
        limit: usize,
        scan: LiveScan,
    ) -> Result<Vec<JobRow>> {
        // Held leases (see `LiveScan::Claim`) are filtered here, inside
        // SQLite, instead of being decoded: a claim-next behind many live
        // leases (a batch in one edit, many workers) reads only candidates.
        let held_after = match scan {
            LiveScan::Claim { now } => now,
            LiveScan::All => i64::MAX,
        };
        let c = self.c();
        match after {
            None => Ok(self.h().with(Hot::LiveJobs, |st| {
                st.query_map(params![production, limit as i64, held_after], job_row)?
                    .collect()
            })?),
            Some((prio, seq)) => {
                let mut st = c.prepare_cached(concat!(
                    "SELECT ",
                    job_cols!(),
                    " FROM jobs INDEXED BY jobs_ready
                     WHERE production = ?1 AND ended_us IS NULL AND parked = 0
                       AND state IN ('requested', 'claimed')
                       AND (priority < ?2 OR (priority = ?2 AND seq > ?3))
                       AND (state = 'requested' OR expires_us IS NULL OR expires_us <= ?5)
                     ORDER BY priority DESC, seq LIMIT ?4"
                ))?;
                let rows = st.query_map(
                    params![production, prio, seq, limit as i64, held_after],
                    job_row,
                )?;
                collect(rows)
            }
        }
    }

    fn unpark_due(&mut self, production: &str, up_to_us: i64, _scan: LiveScan) -> Result<u64> {
        // Usually nothing is due: a read of one index entry answers that
        // for a fraction of what an UPDATE costs (it opens every index of
        // `jobs` for writing even when it changes no row).
        let due = self.h().with(Hot::ParkedProbe, |st| {
            st.exists(params![production, up_to_us])
        })?;
        if !due {
            return Ok(0);
        }
        let mut st = self.c().prepare_cached(
            "UPDATE jobs INDEXED BY jobs_parked SET parked = 0
             WHERE production = ?1 AND parked = 1 AND due_us <= ?2",
        )?;
        Ok(st.execute(params![production, up_to_us])? as u64)
    }

    fn earliest_due(&mut self, production: &str) -> Result<Option<i64>> {
        let mut st = self.c().prepare_cached(
            "SELECT min(due_us) FROM jobs INDEXED BY jobs_parked
             WHERE production = ?1 AND parked = 1",
        )?;
        Ok(st.query_row([production], |r| r.get(0))?)
    }

    fn jobs_page(
        &mut self,
        production: &str,
        states: Option<&[Stored]>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JobRow>> {
        let c = self.c();
        let after = after.unwrap_or("");
        match states {
            None => {
                let mut st = c.prepare_cached(concat!(
                    "SELECT ",
                    job_cols!(),
                    " FROM jobs WHERE production = ?1 AND job > ?2
                     ORDER BY job LIMIT ?3"
                ))?;
                let rows = st.query_map(params![production, after, limit as i64], job_row)?;
                collect(rows)
            }
            Some(states) => {
                // At most five states, one scan each, merged by job ID. A
                // terminal state is a range of `jobs_ended`; an open one is
                // found along the production's jobs by ID (no index keys
                // jobs by an open state: a claim would rewrite it).
                let mut out = Vec::new();
                for s in states {
                    let mut st = if s.is_open() {
                        c.prepare_cached(concat!(
                            "SELECT ",
                            job_cols!(),
                            " FROM jobs WHERE production = ?1 AND job > ?3 AND state = ?2
                             ORDER BY job LIMIT ?4"
                        ))?
                    } else {
                        c.prepare_cached(concat!(
                            "SELECT ",
                            job_cols!(),
                            " FROM jobs INDEXED BY jobs_ended
                             WHERE production = ?1 AND state = ?2 AND ended_us IS NOT NULL
                               AND job > ?3
                             ORDER BY job LIMIT ?4"
                        ))?
                    };
                    let rows = st.query_map(
                        params![production, s.as_str(), after, limit as i64],
                        job_row,
                    )?;
                    out.extend(collect(rows)?);
                }
                out.sort_by(|a, b| a.job.cmp(&b.job));
                out.truncate(limit);
                Ok(out)
            }
        }
    }

    fn all_jobs_page(&mut self, after_seq: i64, limit: usize) -> Result<Vec<JobRow>> {
        let mut st = self.c().prepare_cached(concat!(
            "SELECT ",
            job_cols!(),
            " FROM jobs WHERE seq > ?1 ORDER BY seq LIMIT ?2"
        ))?;
        let rows = st.query_map(params![after_seq, limit as i64], job_row)?;
        collect(rows)
    }

    /// Binds the event; the transaction's next statement that could see it
    /// inserts it (see [`SqliteTxn::event_bound`]).
    fn append_event(&mut self, ev: &NewEvent<'_>) -> Result<()> {
        crate::fault::point();
        self.flush_event(self.read_mark)?;
        self.h().with(Hot::AppendEvent, |st| bind_event(st, ev))?;
        self.event_bound = true;
        Ok(())
    }

    fn events(&mut self, production: Option<&str>, after: u64, limit: usize) -> Result<Vec<Event>> {
        self.flush_event(self.read_mark)?;
        let c = self.c();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        match production {
            None => {
                let mut st = c.prepare_cached(concat!(
                    "SELECT ",
                    event_cols!(),
                    " FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
                ))?;
                let rows = st.query_map(params![after, limit as i64], event_row)?;
                collect(rows)
            }
            Some(p) => {
                let mut st = c.prepare_cached(concat!(
                    "SELECT ",
                    event_cols!(),
                    " FROM events WHERE production = ?1 AND seq > ?2
                     ORDER BY seq LIMIT ?3"
                ))?;
                let rows = st.query_map(params![p, after, limit as i64], event_row)?;
                collect(rows)
            }
        }
    }

    fn history_horizon(&mut self) -> Result<u64> {
        let mut st = self
            .c()
            .prepare_cached("SELECT value FROM meta WHERE key = 'history_horizon'")?;
        let h: Option<i64> = st.query_row([], |r| r.get(0)).optional()?;
        Ok(h.unwrap_or(0).max(0) as u64)
    }

    /// One writer at a time: every stored event has committed.
    fn oldest_events(&mut self, limit: usize) -> Result<Vec<(u64, i64)>> {
        self.flush_event(self.read_mark)?;
        let mut st = self
            .c()
            .prepare_cached("SELECT seq, at_us FROM events ORDER BY seq LIMIT ?1")?;
        let rows = st.query_map([limit as i64], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)?))
        })?;
        collect(rows)
    }

    fn prune_events_through(&mut self, through: u64) -> Result<u64> {
        crate::fault::point();
        self.flush_event(self.read_mark)?;
        let through = i64::try_from(through).unwrap_or(i64::MAX);
        let c = self.c();
        let n = c
            .prepare_cached("DELETE FROM events WHERE seq <= ?1")?
            .execute([through])?;
        c.prepare_cached("UPDATE meta SET value = max(value, ?1) WHERE key = 'history_horizon'")?
            .execute([through])?;
        Ok(n as u64)
    }

    fn terminal_jobs_before(&mut self, before_us: i64, limit: usize) -> Result<Vec<JobRow>> {
        let mut st = self.c().prepare_cached(concat!(
            "SELECT ",
            job_cols!(),
            " FROM jobs INDEXED BY jobs_terminal
             WHERE state NOT IN ('requested', 'claimed') AND updated_us < ?1
             ORDER BY updated_us LIMIT ?2"
        ))?;
        let rows = st.query_map(params![before_us, limit as i64], job_row)?;
        collect(rows)
    }

    fn delete_jobs(&mut self, rows: &[JobRow]) -> Result<u64> {
        crate::fault::point();
        let c = self.c();
        let mut facts = 0;
        for row in rows {
            let n = c
                .prepare_cached("DELETE FROM jobs WHERE seq = ?1")?
                .execute([row.seq])?;
            one_row(n, row)?;
            facts += c
                .prepare_cached("DELETE FROM facts WHERE production = ?1 AND job = ?2")?
                .execute([&row.production, &row.job])? as u64;
            if row.provenance_at.is_some() {
                facts += crate::rules::PROVENANCE_FACTS as u64;
            }
            c.prepare_cached("DELETE FROM nonces WHERE production = ?1 AND job = ?2")?
                .execute([&row.production, &row.job])?;
            c.prepare_cached("DELETE FROM claim_requests WHERE production = ?1 AND job = ?2")?
                .execute([&row.production, &row.job])?;
        }
        Ok(facts)
    }

    fn insert_tombstones(&mut self, stones: &[Tombstone]) -> Result<()> {
        let c = self.c();
        let mut st = c.prepare_cached(
            "INSERT INTO tombstones (production, job, payload_digest, priority, max_attempts,
                 state, pruned_us, max_hold_us, backoff_base_us, backoff_cap_us)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (production, job) DO UPDATE SET
                 payload_digest = excluded.payload_digest, priority = excluded.priority,
                 max_attempts = excluded.max_attempts, state = excluded.state,
                 pruned_us = excluded.pruned_us, max_hold_us = excluded.max_hold_us,
                 backoff_base_us = excluded.backoff_base_us,
                 backoff_cap_us = excluded.backoff_cap_us",
        )?;
        for t in stones {
            let (base, cap) = backoff_cols(t.backoff);
            st.execute(params![
                t.production,
                t.job,
                t.payload_digest,
                t.priority,
                t.max_attempts,
                t.state.as_str(),
                t.pruned_us,
                t.max_hold_us,
                base,
                cap
            ])?;
        }
        Ok(())
    }

    fn tombstone(&mut self, production: &str, job: &str) -> Result<Option<Tombstone>> {
        let mut st = self.c().prepare_cached(
            "SELECT production, job, payload_digest, priority, max_attempts, state, pruned_us,
                 max_hold_us, backoff_base_us, backoff_cap_us
             FROM tombstones WHERE production = ?1 AND job = ?2",
        )?;
        let row = st
            .query_row([production, job], |r| {
                let state: String = r.get(5)?;
                Ok(Tombstone {
                    state: Stored::parse(&state)
                        .ok_or_else(|| bad_col(5, format!("tombstone with state {state:?}")))?,
                    production: r.get(0)?,
                    job: r.get(1)?,
                    payload_digest: r.get(2)?,
                    priority: r.get(3)?,
                    max_attempts: r.get(4)?,
                    pruned_us: r.get(6)?,
                    max_hold_us: r.get(7)?,
                    backoff: backoff_from_cols(r.get(8)?, r.get(9)?)
                        .map_err(|e| bad_col(8, e.to_string()))?,
                })
            })
            .optional()?;
        Ok(row)
    }

    fn prune_tombstones(&mut self, before_us: i64, limit: usize) -> Result<u64> {
        let n = self
            .c()
            .prepare_cached(
                "DELETE FROM tombstones WHERE (production, job) IN (
                     SELECT production, job FROM tombstones INDEXED BY tombstones_by_age
                     WHERE pruned_us < ?1 ORDER BY pruned_us LIMIT ?2)",
            )?
            .execute(params![before_us, limit as i64])?;
        Ok(n as u64)
    }

    fn delete_production_events(&mut self, production: &str, limit: usize) -> Result<u64> {
        self.flush_event(self.read_mark)?;
        let n = self
            .c()
            .prepare_cached(
                "DELETE FROM events WHERE seq IN (
                     SELECT seq FROM events WHERE production = ?1
                       AND seq < (SELECT max(seq) FROM events)
                     ORDER BY seq LIMIT ?2)",
            )?
            .execute(params![production, limit as i64])?;
        Ok(n as u64)
    }

    fn delete_production_tombstones(&mut self, production: &str) -> Result<u64> {
        let n = self
            .c()
            .prepare_cached("DELETE FROM tombstones WHERE production = ?1")?
            .execute([production])?;
        Ok(n as u64)
    }

    fn delete_production(&mut self, production: &str) -> Result<()> {
        self.c()
            .prepare_cached("DELETE FROM productions WHERE name = ?1")?
            .execute([production])?;
        Ok(())
    }

    /// Gives back the free pages beyond [`reclaim_slack`], at most
    /// [`RECLAIM_PAGES`] per step; nothing on a store created before
    /// schema 3 (`auto_vacuum` off: `Authority::vacuum`).
    fn reclaim_space(&mut self) -> Result<()> {
        let c = self.c();
        let free: i64 = c
            .prepare_cached("PRAGMA freelist_count")?
            .query_row([], |r| r.get(0))?;
        // The slack is never below `RECLAIM_PAGES`: a freelist that short
        // (a steady stream's) is kept without reading the file's size.
        if free <= RECLAIM_PAGES {
            return Ok(());
        }
        let pages: i64 = c
            .prepare_cached("PRAGMA page_count")?
            .query_row([], |r| r.get(0))?;
        let surplus = (free - reclaim_slack(pages)).min(RECLAIM_PAGES);
        if surplus > 0 {
            let mut st = c.prepare(&format!("PRAGMA incremental_vacuum({surplus})"))?;
            let mut rows = st.query([])?;
            while rows.next()?.is_some() {}
        }
        Ok(())
    }

    fn insert_facts(&mut self, production: &str, job: &str, facts: &[(&str, &str)]) -> Result<()> {
        crate::fault::point();
        let c = self.c();
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

    fn facts(&mut self, production: &str, job: Option<&str>) -> Result<Vec<PublishedFact>> {
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
        let c = self.c();
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

    fn claim_requests(
        &mut self,
        production: &str,
        request_ids: &[String],
    ) -> Result<Vec<RequestRow>> {
        let mut st = self.c().prepare_cached(
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

    fn insert_claim_requests(&mut self, rows: &[RequestRow]) -> Result<bool> {
        let mut st = self.c().prepare_cached(
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

    fn last_claim_event(
        &mut self,
        production: &str,
        job: &str,
        claim_id: &Uuid,
    ) -> Result<Option<Event>> {
        self.flush_event(self.read_mark)?;
        // Newest first along the log: the event sought is the job's last
        // one, so the walk stops at it.
        let mut st = self.c().prepare_cached(concat!(
            "SELECT ",
            event_cols!(),
            " FROM events
             WHERE production = ?1 AND job = ?2 AND claim_id = ?3
             ORDER BY seq DESC LIMIT 1"
        ))?;
        Ok(st
            .query_row(params![production, job, claim_id.to_string()], event_row)
            .optional()?)
    }

    fn insert_nonce(
        &mut self,
        nonce: &Uuid,
        production: &str,
        job: &str,
        claim_id: &Uuid,
        at_us: i64,
    ) -> Result<bool> {
        let mut st = self.c().prepare_cached(
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

    fn earliest_expiry(&mut self, production: &str) -> Result<Option<i64>> {
        Ok(self.c().query_row(
            // Every claimed job is open and unparked: in `jobs_ready`.
            "SELECT MIN(expires_us) FROM jobs INDEXED BY jobs_ready
             WHERE production = ?1 AND ended_us IS NULL AND parked = 0 AND state = 'claimed'",
            [production],
            |r| r.get(0),
        )?)
    }

    fn notify_work(&mut self, _production: &str) -> Result<()> {
        self.ring = true;
        Ok(())
    }

    fn savepoint(&mut self) -> Result<()> {
        self.flush_event(self.read_mark)?;
        exec(self.h(), Hot::Savepoint)?;
        self.savepoints += 1;
        Ok(())
    }

    fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.flush_event(self.read_mark)?;
        exec(self.h(), Hot::RollbackTo)?;
        exec(self.h(), Hot::Release)?;
        self.savepoints -= 1;
        Ok(())
    }

    fn release_savepoint(&mut self) -> Result<()> {
        self.flush_event(self.read_mark)?;
        exec(self.h(), Hot::Release)?;
        self.savepoints -= 1;
        Ok(())
    }

    /// The mark goes on the newest event when this transaction appended
    /// it (schema 8, see [`migrate_7_to_8`]): its page is written anyway.
    /// An event still bound is inserted carrying it; one already inserted
    /// gets it by an `UPDATE`. An event a savepoint rolled back since
    /// leaves the mark to `meta`.
    ///
    /// The stored mark after the commit is then known: `mark`, or (none)
    /// the mark read at begin, which every appended event carries. Both
    /// places the mark lives hold no more than that (the `meta` row and the
    /// newest event before this transaction held at most the mark read;
    /// `mark` is above it).
    fn commit_with_mark(&mut self, mark: Option<i64>) -> Result<()> {
        self.mark_after = self
            .read_mark
            .filter(|_| self.write)
            .map(|read| mark.map_or(read, |m| m.max(read)));
        if let Some(m) = mark {
            let on_event = match self.last_event {
                _ if self.event_bound => {
                    crate::fault::point();
                    self.flush_event(Some(m))?;
                    true
                }
                Some(seq) => {
                    crate::fault::point();
                    self.h()
                        .with(Hot::SetEventMark, |st| st.execute(params![seq, m]))?
                        == 1
                }
                None => false,
            };
            if !on_event {
                self.set_high_water(m)?;
            }
        }
        self.commit()
    }

    fn settle_snapshot(&mut self) -> Result<()> {
        match self.pool.deferred() {
            // Every commit this transaction has seen began before now (a
            // write transaction holds the writer lock: none begins until it
            // ends).
            Some(q) if self.open => self.pool.settle(q, q.begun()),
            _ => Ok(()),
        }
    }

    fn commit(&mut self) -> Result<()> {
        if !self.open {
            return Err(Error::Internal("commit of a finished transaction".into()));
        }
        self.flush_event(self.read_mark)?;
        crate::fault::point();
        self.finish(Hot::Commit)?;
        #[cfg(target_os = "linux")]
        if self.ring {
            if let Some(q) = &self.pool.writer_queue {
                q.ring_work();
            }
        }
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        self.finish(Hot::Rollback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(dir: &Path) -> SqliteBackend {
        let (b, _) = SqliteBackend::open(
            &dir.join("t.db"),
            Synchronous::Normal,
            Duration::from_secs(5),
            &|| 0,
        )
        .unwrap();
        b
    }

    #[test]
    fn insert_facts_sql_numbers_each_row_after_production_and_job() {
        assert_eq!(
            insert_facts_sql(1),
            "INSERT INTO facts (production, job, ord, key, value) VALUES (?1, ?2, ?3, ?4, ?5)"
        );
        assert_eq!(
            insert_facts_sql(2),
            "INSERT INTO facts (production, job, ord, key, value) \
             VALUES (?1, ?2, ?3, ?4, ?5), (?1, ?2, ?6, ?7, ?8)"
        );
        assert!(insert_facts_sql(FACTS_PER_INSERT).ends_with(&format!(
            "(?1, ?2, ?{}, ?{}, ?{})",
            3 * FACTS_PER_INSERT,
            3 * FACTS_PER_INSERT + 1,
            3 * FACTS_PER_INSERT + 2
        )));
    }

    fn event(at_us: i64) -> NewEvent<'static> {
        NewEvent {
            at_us,
            production: "p",
            job: None,
            kind: EventKind::ProductionCreated,
            state: None,
            claim_id: None,
            holder: None,
            attempt: None,
            expires_us: None,
            detail: "",
        }
    }

    /// (the `meta` row, the newest event's `mark_us`, the mark as read).
    fn marks(b: &SqliteBackend) -> (i64, Option<i64>, i64) {
        let mut t = b.begin_read().unwrap();
        let read = t.high_water().unwrap();
        let conn = b.pool.take().unwrap();
        let c = conn.get();
        let meta = c
            .query_row(
                "SELECT value FROM meta WHERE key = 'high_water_us'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let newest = c
            .query_row(
                "SELECT mark_us FROM events ORDER BY seq DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .unwrap()
            .flatten();
        t.commit().unwrap();
        (meta, newest, read)
    }

    /// Commits past SQLite's checkpoint threshold hand the checkpoint to
    /// the store's thread; from `checkpoint::INLINE` frames a commit
    /// checkpoints itself and the WAL starts over, so its file never grows
    /// past that (plus one commit); closing the store stops the thread and
    /// closes every connection (the last one removes the WAL); nothing
    /// committed is lost.
    #[test]
    fn checkpoints_run_on_the_store_thread_and_the_wal_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("t.db-wal");
        let b = backend(dir.path());
        let frame = u64::from(PAGE_SIZE) + 24;
        let frames = || std::fs::metadata(&wal).map_or(0, |m| m.len().saturating_sub(32) / frame);
        let detail = "x".repeat(1_500);
        let (mut n, mut most) = (0i64, 0);
        // Two commits that checkpointed themselves, and a checkpoint of the
        // thread's (it drops a request that a commit's overtook).
        while b.pool.checkpointer.counts().1 < 2 || b.pool.checkpointer.counts().0 == 0 {
            let mut t = b.begin_write().unwrap();
            for _ in 0..4 {
                t.append_event(&NewEvent {
                    detail: &detail,
                    ..event(n)
                })
                .unwrap();
            }
            t.commit_with_mark(None).unwrap();
            n += 1;
            most = most.max(frames());
            assert!(n < 20_000, "{:?}", b.pool.checkpointer.counts());
        }
        assert!(
            most > checkpoint::START as u64,
            "SQLite's own checkpoint at 1 000 frames is off"
        );
        assert!(most <= checkpoint::INLINE as u64 + 8, "{most} frames");
        drop(b);
        assert!(!wal.exists(), "a connection is still open");
        let b = backend(dir.path());
        let conn = b.pool.take().unwrap();
        let stored: i64 = conn
            .get()
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 4 * n);
    }

    fn requested(job: &str) -> JobRow {
        JobRow {
            seq: 0,
            production: "p".into(),
            job: job.into(),
            payload_digest: vec![0; 32],
            payload_len: 0,
            priority: 0,
            max_attempts: 3,
            state: Stored::Requested,
            attempts: 0,
            claim_id: None,
            secret_digest: None,
            holder: None,
            claimed_us: None,
            expires_us: None,
            created_us: 1,
            updated_us: 1,
            last_error: None,
            due_us: None,
            parked: false,
            max_hold_us: None,
            backoff: None,
            provenance_at: None,
        }
    }

    /// A job is read again by the sequence number its connection wrote it
    /// under, but only while the row there still carries its IDs: a row
    /// removed, and its number taken by another job (SQLite reuses the
    /// largest), or the job submitted again under a new number, are found
    /// by their IDs.
    #[test]
    fn a_remembered_sequence_number_is_only_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend(dir.path());
        let mut t = b.begin_write().unwrap();
        let mut a = requested("a");
        a.seq = t.insert_job(&a, b"").unwrap();
        a.attempts = 1;
        t.update_job(&a).unwrap();
        assert_eq!(t.job("p", "a").unwrap(), Some(a.clone()));
        t.delete_jobs(std::slice::from_ref(&a)).unwrap();
        let mut other = requested("b");
        other.seq = t.insert_job(&other, b"").unwrap();
        assert_eq!(other.seq, a.seq, "the number was taken again");
        assert_eq!(t.job("p", "a").unwrap(), None);
        assert_eq!(t.job("p", "b").unwrap(), Some(other.clone()));
        let mut again = requested("a");
        again.seq = t.insert_job(&again, b"").unwrap();
        assert_ne!(again.seq, a.seq);
        assert_eq!(t.job("p", "a").unwrap(), Some(again));
        t.commit().unwrap();
    }

    #[test]
    fn the_mark_goes_on_the_newest_event_else_in_meta() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend(dir.path());
        // No event in the transaction: the mark goes to `meta`.
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 0);
        t.commit_with_mark(Some(10)).unwrap();
        assert_eq!(marks(&b), (10, None, 10));
        // An event appended: it carries the mark read, then the one committed.
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 10);
        t.append_event(&event(20)).unwrap();
        t.commit_with_mark(Some(25)).unwrap();
        assert_eq!(marks(&b), (10, Some(25), 25));
        // A commit that does not raise the mark leaves the newest event
        // holding the mark read.
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 25);
        t.append_event(&event(25)).unwrap();
        t.commit_with_mark(None).unwrap();
        assert_eq!(marks(&b), (10, Some(25), 25));
        // The event appended last was rolled back by its savepoint: the
        // mark goes to `meta`, the event before it keeps the mark read.
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 25);
        t.append_event(&event(30)).unwrap();
        t.savepoint().unwrap();
        t.append_event(&event(31)).unwrap();
        t.rollback_to_savepoint().unwrap();
        t.commit_with_mark(Some(40)).unwrap();
        assert_eq!(marks(&b), (40, Some(25), 40));
        // A rolled-back transaction changes neither.
        let mut t = b.begin_write().unwrap();
        t.high_water().unwrap();
        t.append_event(&event(50)).unwrap();
        t.set_high_water(50).unwrap();
        t.rollback().unwrap();
        assert_eq!(marks(&b), (40, Some(25), 40));
    }

    /// The times of the events `t` lists, in order.
    fn times(t: &mut Box<dyn Txn>) -> Vec<i64> {
        t.events(None, 0, 100)
            .unwrap()
            .iter()
            .map(|e| e.at_us)
            .collect()
    }

    #[test]
    fn an_appended_event_is_inserted_before_anything_that_could_see_it() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend(dir.path());
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 0);
        t.append_event(&event(1)).unwrap();
        t.append_event(&event(2)).unwrap();
        assert_eq!(
            times(&mut t),
            [1, 2],
            "read in the same transaction, in order"
        );
        t.append_event(&event(3)).unwrap();
        t.savepoint().unwrap();
        t.append_event(&event(4)).unwrap();
        t.rollback_to_savepoint().unwrap();
        t.savepoint().unwrap();
        t.append_event(&event(5)).unwrap();
        t.release_savepoint().unwrap();
        t.append_event(&event(6)).unwrap();
        t.commit_with_mark(Some(60)).unwrap();
        // The event appended before the savepoint stays, the one inside
        // the rolled-back savepoint goes, and the last carries the mark.
        assert_eq!(times(&mut b.begin_read().unwrap()), [1, 2, 3, 5, 6]);
        assert_eq!(marks(&b), (0, Some(60), 60));
        // Transactions that end without a commit insert none of theirs,
        // and the next commit inserts only its own.
        let mut t = b.begin_write().unwrap();
        t.high_water().unwrap();
        t.append_event(&event(7)).unwrap();
        t.rollback().unwrap();
        let mut t = b.begin_write().unwrap();
        t.high_water().unwrap();
        t.append_event(&event(8)).unwrap();
        drop(t);
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 60);
        t.commit_with_mark(Some(70)).unwrap();
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 70);
        t.append_event(&event(9)).unwrap();
        t.commit().unwrap();
        assert_eq!(times(&mut b.begin_read().unwrap()), [1, 2, 3, 5, 6, 9]);
        assert_eq!(
            marks(&b),
            (70, Some(70), 70),
            "the event carries the mark read"
        );
    }

    /// What the connection `b` hands out next knows of the mark inside a
    /// write transaction, without reading it.
    fn known(b: &SqliteBackend) -> Option<i64> {
        let c = b.pool.take().unwrap();
        exec(&c, Hot::BeginImmediate).unwrap();
        let known = c.known_mark();
        exec(&c, Hot::Rollback).unwrap();
        b.pool.give_back(c);
        known
    }

    #[test]
    fn a_connection_knows_the_mark_it_committed_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend(dir.path());
        // Another pool on the same file: another process's connection.
        let other = backend(dir.path());
        assert_eq!(known(&b), None, "nothing committed yet");
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 0);
        t.append_event(&event(20)).unwrap();
        t.commit_with_mark(Some(25)).unwrap();
        assert_eq!(known(&b), Some(25));
        assert_eq!(marks(&b), (0, Some(25), 25));
        // A commit that does not raise the mark leaves the mark read.
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 25);
        t.append_event(&event(25)).unwrap();
        t.commit_with_mark(None).unwrap();
        assert_eq!(known(&b), Some(25));
        // Another connection raises the mark: the first one reads it again.
        let mut t = other.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 25);
        t.commit_with_mark(Some(90)).unwrap();
        assert_eq!(known(&b), None, "another connection committed since");
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 90);
        t.commit_with_mark(Some(95)).unwrap();
        assert_eq!(known(&b), Some(95));
        // Any other commit of another connection (the mark untouched) also
        // makes it read again.
        let mut t = other.begin_write().unwrap();
        t.append_event(&event(96)).unwrap();
        t.commit().unwrap();
        assert_eq!(known(&b), None);
        assert_eq!(b.begin_write().unwrap().high_water().unwrap(), 95);
        // A commit of its own that does not say the mark it leaves (an
        // observed time persisted alone) forgets it.
        let mut t = b.begin_write().unwrap();
        t.set_high_water(120).unwrap();
        t.commit().unwrap();
        assert_eq!(known(&b), None);
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 120);
        t.commit_with_mark(Some(130)).unwrap();
        assert_eq!(known(&b), Some(130));
        // A rolled-back transaction changes nothing: the mark stays known.
        let mut t = b.begin_write().unwrap();
        assert_eq!(t.high_water().unwrap(), 130);
        t.append_event(&event(140)).unwrap();
        t.set_high_water(140).unwrap();
        t.rollback().unwrap();
        assert_eq!(known(&b), Some(130));
        assert_eq!(marks(&b).2, 130);
    }

    #[test]
    fn facts_keep_their_order_across_insert_statements() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend(dir.path());
        let owned: Vec<(String, String)> = (0..2 * FACTS_PER_INSERT + 3)
            .map(|i| (format!("k{i}"), format!("v{i}")))
            .collect();
        let pairs: Vec<(&str, &str)> = owned
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut t = b.begin_write().unwrap();
        t.insert_facts("p", "j", &pairs).unwrap();
        t.insert_facts("p", "one", &pairs[..1]).unwrap();
        t.insert_facts("p", "none", &[]).unwrap();
        t.commit().unwrap();
        let mut r = b.begin_read().unwrap();
        let got = r.facts("p", Some("j")).unwrap();
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|f| (f.key.as_str(), f.value.as_str()))
            .collect();
        assert_eq!(got, pairs);
        assert_eq!(r.facts("p", Some("one")).unwrap().len(), 1);
        assert!(r.facts("p", Some("none")).unwrap().is_empty());
        let ords: Vec<i64> = {
            let c = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
            let mut st = c
                .prepare("SELECT ord FROM facts WHERE job = 'j' ORDER BY ord")
                .unwrap();
            let rows = st.query_map([], |r| r.get(0)).unwrap();
            rows.map(|r| r.unwrap()).collect()
        };
        assert_eq!(ords, (0..pairs.len() as i64).collect::<Vec<_>>());
    }
}
