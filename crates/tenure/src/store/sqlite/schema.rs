//! The layout of a store: its file header and its tables.

use super::migrate::{
    migrate_6_to_7, migrate_7_to_8, migrate_9_to_10, MIGRATE_2_TO_3, MIGRATE_3_TO_4,
    MIGRATE_4_TO_5, MIGRATE_5_TO_6,
};
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

pub(super) const SCHEMA_V2: &str = "
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

/// The current table layout: schema 2 plus every later migration in order.
pub(super) fn create_current(conn: &Connection) -> Result<()> {
    conn.execute_batch(SCHEMA_V2)?;
    conn.execute_batch(MIGRATE_2_TO_3)?;
    conn.execute_batch(MIGRATE_3_TO_4)?;
    conn.execute_batch(MIGRATE_4_TO_5)?;
    conn.execute_batch(MIGRATE_5_TO_6)?;
    migrate_6_to_7(conn)?;
    migrate_7_to_8(conn)?;
    migrate_9_to_10(conn)
}
