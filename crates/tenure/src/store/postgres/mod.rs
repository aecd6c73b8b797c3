//! The PostgreSQL backend (cargo feature `postgres`, on by default): the same
//! authority for workers on many machines that share one server.
//!
//! An address starting with `postgres://` or `postgresql://` opens this
//! backend (see [`crate::Authority::open`]); the rules in [`crate::rules`] are
//! the same code as on SQLite, only the primitive reads and writes differ.
//!
//! # Schema
//!
//! Every table lives in the schema `tenure` of the database named by the
//! URL. `tenure.meta` holds the row `('schema_version', 3)`, the PostgreSQL
//! counterpart of SQLite's `PRAGMA user_version`. Opening reads that row
//! first, without writing anything: a newer version is refused with
//! [`Error::SchemaTooNew`] untouched. A missing schema is created in one
//! transaction under a transaction-level advisory lock, so concurrent first
//! opens from many hosts create it exactly once. A `tenure` schema with
//! tables but without the version row is refused as "not a tenure store".
//! PostgreSQL stores start at schema version 2 (version 1, the pre-lease
//! layout, only ever existed on SQLite); a new one is created at 2 and
//! migrated forward in the same guarded transaction, and an older store
//! migrates forward in that transaction too: to 3 (retention: tombstones,
//! the history horizon, pruning's indexes) and to 4 (scheduling and hold
//! limits, see `MIGRATE_3_TO_4`) and to 5 (a hot queue: fillfactor, no
//! index on what a renewal changes, see `MIGRATE_4_TO_5`; on SQLite schema 5
//! rebuilt the `jobs` table instead, see the SQLite backend) and to 6
//! (request IDs, see `MIGRATE_5_TO_6`) and to 7 (payloads apart from the
//! job rows, see `MIGRATE_6_TO_7`) and to 8 (the claim floor, see
//! `MIGRATE_7_TO_8` and [`Pool::raise_claim_floor`]).
//! Identifiers are stored `COLLATE "C"` so that listings page in byte order,
//! exactly like SQLite.
//!
//! # Transactions and locking
//!
//! Writes run `BEGIN ISOLATION LEVEL READ COMMITTED` with row locks instead
//! of SQLite's single writer lock:
//!
//! - a job read by a write transaction is locked `FOR UPDATE`, so two
//!   transitions of the same job serialize and the second one sees the first
//!   one's committed row; a job that does not exist yet is guarded by a
//!   transaction-level advisory lock on its (production, job) key, so two
//!   concurrent submissions of the same new ID resolve to `Created` and
//!   `Existing` (or `Conflict`), as on SQLite;
//! - claim-next reads the live jobs `FOR UPDATE SKIP LOCKED`, ordered by
//!   priority DESC, seq: concurrent claimants never wait for each other. A
//!   job whose row another transaction holds at that instant (being claimed,
//!   renewed, cancelled, or re-submitted) is passed over, so claim-next may
//!   answer "no job available" while such a transition is in flight. The
//!   server filters out leases still held (claimed, expiring after the
//!   transaction's clock sample), so claim-next never locks a held lease's
//!   row and a renewal never waits for it; the candidate rows it does read
//!   (requested jobs and expired leases, at most a page) stay locked until
//!   it commits;
//! - every write transaction that reads a production takes a *shared*
//!   advisory lock on it; cancelling a production takes it exclusively before
//!   its scan of the live jobs, which waits for in-flight submissions and
//!   claim-nexts on that production and holds new ones back until the cancel
//!   commits (they then see it cancelled). The scan of a coordinator
//!   operation uses a blocking `FOR UPDATE` (never `SKIP LOCKED`): it must see
//!   every job. Which scan is which is the rules' [`LiveScan`] argument
//!   (claim-next scans to claim, cancel-production scans all). As a
//!   safety net, marking the production cancelled re-checks that no live job
//!   is left and answers [`Error::Busy`] (nothing changed) if one is. Two
//!   concurrent cancels of one production may deadlock on the lock upgrade;
//!   PostgreSQL aborts one of them, which is [`Error::Busy`];
//! - `lock_timeout` and `statement_timeout` are set per transaction from the
//!   busy timeout (lock: the busy timeout, at least 1 ms; statement: the busy
//!   timeout plus 30 s). SQLSTATE 55P03 (lock not available), 57014 (query
//!   cancelled), 40P01 (deadlock) and 40001 (serialization failure) map to
//!   [`Error::Busy`]; every other failure, including a lost connection, is
//!   [`Error::Store`].
//!
//! Reads run `REPEATABLE READ READ ONLY`: one consistent snapshot.
//!
//! # Round trips
//!
//! A write transaction that succeeds takes at most three requests (see
//! docs/postgres.md, "Round trips"): `BEGIN` with its settings, the mark
//! and (on the server's clock) a clock sample for unguarded writes; one
//! statement that locks, samples the clock after the locks and reads
//! ([`Txn::lock_jobs_sampled`], [`Txn::claim_start`],
//! [`Txn::insert_new_jobs_into`]); and the deferred writes
//! ([`PgTxn::defer`]: calls of statements prepared once per connection,
//! with [`literal`] arguments) with the pre-commit check and `COMMIT`. Any
//! other statement sends the deferred writes first, so a transaction always
//! reads its own writes.
//!
//! # The clock
//!
//! The authority's private clock on this backend is the **server's**
//! `clock_timestamp()` in whole µs, sampled inside the transaction at each
//! transition, before commit, and for observations (through
//! [`Txn::server_now_us`]). A worker host's clock is never consulted, so a
//! skewed worker can neither extend nor revive a lease. (With the Rust-only
//! `test-clock` feature an injected clock overrides the server clock so tests
//! are deterministic.)
//!
//! # The high-water mark: an insert-only log
//!
//! On SQLite the mark is one row, written by the (serialized) writer. Here it
//! is `tenure.mark_log`, one `value` column with a btree index on it: every
//! transaction that raises the mark appends its value (`INSERT`, never an
//! `UPDATE`), so concurrent writers never touch the same row, and the mark
//! is the largest value, read from the right end of the index
//! ([`HIGH_WATER`]: `ORDER BY value DESC LIMIT 1`). A snapshot held open by
//! another connection (a pinned xmin) keeps every deleted row version, but
//! the newest entries are live and come first in that walk, so the read
//! touches the same few buffers with or without a pin; an updated row, by
//! contrast, leaves a chain of versions that every read and update walks.
//! Old rows are deleted every [`MARK_PRUNE_EVERY`] marks of a pool (see
//! [`Pool::prune_mark_log`]), never the largest. Why the invariants still
//! hold: the mark is the maximum over committed rows, and a row goes only
//! below a larger committed one, so the mark never decreases (rollback
//! rejection: every sample is compared with that maximum, exactly like the
//! single row); a raise commits in the same transaction as the transition
//! it guards (inside the pre-commit check's block, or in the `COMMIT`'s
//! request), or, if the transition fails, in its own small transaction (the
//! session's rule), so it survives restarts like any committed row; and a
//! transaction that did not see a concurrent raise is no different from a
//! SQLite writer that ran just before it: the raise it missed was sampled
//! earlier than its own samples (both come from the one server clock), so
//! it cannot hide a rollback.
//!
//! # Event sequence visibility: tailing is commit-ordered
//!
//! Event sequence numbers come from an identity column: unique, increasing
//! in allocation order, allocated *before* commit by concurrent writers.
//! Rolled back transitions leave gaps. Without care a reader could see seq
//! N+1 committed while N, allocated earlier by a transaction still in
//! flight, is not yet visible, and a tailer that moved its cursor to N+1
//! would never see N. This backend gives the SQLite guarantee instead:
//! **`events(after)` and `production_events(after)` never return an event
//! with seq S while an event with a smaller seq can still commit**, so a
//! tailer that pages by the last seq it received skips nothing.
//!
//! - *Writers register before they allocate.* In the statement that inserts
//!   a transaction's first event, before the row's identity value is drawn
//!   (a `MATERIALIZED` CTE that the insert reads its one row from; the
//!   identity default is evaluated in the projection above that scan), the
//!   transaction reads the sequence's next value N (one more than
//!   `pg_sequence_last_value`, read under the sequence's buffer lock, outside
//!   any snapshot) and takes the *shared* transaction-level advisory lock
//!   `EVENT_REG | N`. That lock is a registration visible at once to every
//!   session in `pg_locks`: "my event seqs are >= N". Shared locks never
//!   conflict, so writers never wait for each other; no extra round trip
//!   (later events of the same transaction use the plain insert).
//!   PostgreSQL releases it only after the commit is visible to new
//!   snapshots (or at rollback; rolling back to a savepoint taken before it
//!   releases it too, and the transaction's next event registers again).
//! - *Readers stop below the horizon.* A listing first reads (1) the
//!   sequence's next value V, then (2) the smallest registered N still held
//!   in this database (`pg_locks`, advisory, `objsubid = 1`, `classid` in
//!   the reserved range), then takes its snapshot and returns only events
//!   with `after < seq < M`, M = min(V, smallest N). Why nothing is skipped:
//!   an event with seq s < M <= V was allocated before (1), so its
//!   transaction registered (with some N <= s) before (1); had it still held
//!   the registration at (2), M would be <= N <= s; so it had finished
//!   before (2), and a snapshot taken later sees it if it committed. This
//!   relies on the identity sequence handing out values in real-time order
//!   across sessions, which holds because it has `CACHE 1` (the default
//!   for identity columns; checked by `tests/pg_events.rs`).
//! - *Ordering (1), (2), snapshot.* A read transaction (`REPEATABLE READ`)
//!   has already taken its snapshot at its first statement, so a listing
//!   ends it, reads (1) and (2) in one round trip outside any transaction,
//!   and begins the read transaction again; the listing's statement takes
//!   the new snapshot. Cost: two extra round trips per listing (the
//!   horizon, the new `BEGIN`), plus the `pg_locks` read (which briefly
//!   takes the lock manager's partition locks; fine at tailing rates, not
//!   meant for thousands of polls a second). Writers pay no extra round
//!   trip. In a write transaction (`READ COMMITTED`, a snapshot per
//!   statement) (1) and (2) are two statements before the listing, and the
//!   transaction's own registration is ignored.
//! - *Consequences.* A transaction that has written an event and stays open
//!   (an [`crate::Edit`] that submitted something) holds tailers back at
//!   its first seq until it commits or aborts, exactly as an open edit holds
//!   the writer lock on SQLite; keep edits short. An empty page means
//!   "nothing listable yet", never "the log ends here"; `limit` is honoured
//!   as before (a page may be shorter than `limit` while a writer is in
//!   flight). The key space: `EVENT_REG = 0x5445 << 48`, N < 2^48 (a
//!   transition refuses to allocate beyond, with [`Error::Store`]); the
//!   bigint key shows in `pg_locks` as `classid` 0x5445_0000..=0x5445_ffff
//!   with `objsubid = 1`, disjoint from the (int4, int4) job and production
//!   locks (their classids fall in that range, but they show `objsubid =
//!   2`) and from the schema lock. A reader must be connected to the
//!   primary (a standby's `pg_locks` does not show the primary's locks);
//!   tenure always is, it writes.

mod listen;
mod literal;
mod retry;
mod tls;
mod url;

pub(crate) use url::redact;

use super::{
    backoff_cols, backoff_from_cols, Backend, ClaimStart, Inserted, JobFacts, JobRow, LiveScan,
    Locked, NewEvent, ProductionRow, RequestRow, Stored, Tombstone, Txn, SCHEMA_VERSION,
};
use crate::error::{bounded, Error, Result};
use crate::model::{Event, EventKind, PublishedFact};
use crate::ttl::Backoff;
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, Row, Statement};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

macro_rules! job_cols {
    () => {
        "seq, production, job, payload_digest, payload_len, priority, max_attempts, \
         state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us, created_us, \
         updated_us, last_error, due_us, parked, max_hold_us, backoff_base_us, backoff_cap_us"
    };
}
/// How many columns `job_cols!` lists.
const JOB_COLS: usize = 22;
/// The server's clock in whole µs.
macro_rules! server_sample {
    () => {
        "floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
    };
}

const MAX_IDLE: usize = 16;
/// Advisory-lock key (bigint space) guarding schema creation.
const SCHEMA_LOCK: i64 = 0x7465_6e75_7265_0001;
/// Advisory-lock classes (int4, int4 space).
const CLASS_JOB: i32 = 0x5445_4e01;
const CLASS_PROD: i32 = 0x5445_4e02;
const CLASS_PROD_CREATE: i32 = 0x5445_4e03;
/// Advisory-lock key space (bigint keys, so `objsubid = 1` in `pg_locks`)
/// of event registrations: a writing transaction holds `EVENT_REG | n`
/// shared, `n` (< [`EVENT_REG_LIMIT`]) a lower bound of its event sequence
/// numbers. In `pg_locks` these are the rows with `classid` between
/// `0x5445_0000` and `0x5445_ffff` (the SQL below spells them in decimal),
/// `n` being `(classid & 0xffff) << 32 | objid`. See the module docs.
const EVENT_REG: i64 = 0x5445 << 48;
const EVENT_REG_LIMIT: i64 = 1 << 48;

/// The next value of the events' identity sequence (0 before the first
/// allocation, a conservative bound), read outside any snapshot.
macro_rules! event_seq_next {
    () => {
        "coalesce(pg_catalog.pg_sequence_last_value(
             pg_catalog.pg_get_serial_sequence('tenure.events', 'seq')::regclass) + 1, 0)"
    };
}
/// `WITH reg AS MATERIALIZED (...)`: a writer's event registration (the
/// shared lock `EVENT_REG | n`, `n` the sequence's next value, if below the
/// limit), parameters `$key` (`EVENT_REG`) and `$limit` (`EVENT_REG_LIMIT`).
/// An insert that reads its rows from `reg` takes the lock before drawing
/// any identity value (see the module docs).
macro_rules! event_registration {
    ($key:literal, $limit:literal) => {
        concat!(
            "WITH reg AS MATERIALIZED (
                 SELECT pg_catalog.pg_advisory_xact_lock_shared(",
            $key,
            "::bigint | s.n)
                 FROM (SELECT ",
            event_seq_next!(),
            " AS n OFFSET 0) s
                 WHERE s.n < ",
            $limit,
            "::bigint)"
        )
    };
}
/// Step (1) of a reader's horizon: the events sequence's next value.
const EVENT_HORIZON_NEXT: &str = concat!("SELECT ", event_seq_next!());
/// Step (2): the smallest lower bound registered by an event writer of this
/// database that is still in flight (other than this session), or NULL.
const EVENT_HORIZON_REGISTERED: &str =
    "SELECT min(((l.classid::bigint & 65535) << 32) | l.objid::bigint)
     FROM pg_catalog.pg_locks l
     WHERE l.locktype = 'advisory' AND l.objsubid = 1
       AND l.classid::bigint BETWEEN 1413808128 AND 1413873663
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                         WHERE d.datname = current_database())
       AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()";

/// SQLSTATE of a pre-commit check that refused (see `commit_checked`).
const PRECOMMIT_REFUSED: &str = "TN001";

/// The durable high-water mark: the largest value in the mark log, read
/// from the right end of its index (see the module docs).
const HIGH_WATER: &str =
    "SELECT coalesce((SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1), 0)";
/// Appends a commit's mark (`$1`) to the mark log.
const RAISE_MARK: &str = "INSERT INTO tenure.mark_log (value) VALUES ($1)";

fn map_err(e: postgres::Error) -> Error {
    if let Some(code) = e.code() {
        if *code == SqlState::LOCK_NOT_AVAILABLE
            || *code == SqlState::QUERY_CANCELED
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::T_R_SERIALIZATION_FAILURE
        {
            return Error::Busy(format!(
                "the server could not take a lock in time ({})",
                code.code()
            ));
        }
    }
    if let Some(db) = e.as_db_error() {
        return Error::Store(format!(
            "PostgreSQL error {}: {}",
            db.code().code(),
            db.message()
        ));
    }
    if retry::is_lost(&e) {
        return retry::lost(format_args!("PostgreSQL: {e}"));
    }
    Error::Store(format!("PostgreSQL: {e}"))
}

/// An advisory-lock key for one name in one class.
fn key(parts: &[&str]) -> i32 {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    i32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

struct Conn {
    client: Client,
    stmts: HashMap<&'static str, Statement>,
    /// Statements prepared with SQL `PREPARE` (see `PgTxn::defer`).
    prepared: std::collections::HashSet<&'static str>,
}

impl Conn {
    fn stmt(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        crate::stats::round_trip();
        let s = self.client.prepare(sql).map_err(map_err)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }
    fn query(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let st = self.stmt(sql)?;
        crate::stats::round_trip();
        self.client.query(&st, p).map_err(map_err)
    }
    fn execute(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let st = self.stmt(sql)?;
        crate::stats::round_trip();
        self.client.execute(&st, p).map_err(map_err)
    }
}

struct Pool {
    config: postgres::Config,
    /// TLS mode and verification from the URL's `sslmode` / `sslrootcert` (see [`tls`]).
    tls: tls::Tls,
    busy: Duration,
    server_clock: bool,
    idle: Mutex<Vec<Conn>>,
    /// Claim-next scans begun through this pool (the claim floor's cadence).
    claim_scans: AtomicU64,
    /// Marks this pool appended to the mark log (the log's pruning cadence).
    marks_written: AtomicU64,
    /// The mark log's rows below this value were deleted by this pool's
    /// last pruning (0: none yet); see [`Pool::prune_mark_log`].
    marks_pruned_below: AtomicI64,
}

impl Pool {
    fn connect(&self) -> Result<Conn> {
        crate::stats::round_trip();
        let client = tls::connect(&self.config, &self.tls)?;
        Ok(Conn {
            client,
            stmts: HashMap::new(),
            prepared: std::collections::HashSet::new(),
        })
    }

    fn take(&self) -> Result<Conn> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match idle {
                Some(c) if c.client.is_closed() => continue,
                Some(c) => return Ok(c),
                None => return self.connect(),
            }
        }
    }

    fn give_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    fn timeouts(&self) -> (u128, u128) {
        let lock = self.busy.as_millis().max(1);
        (lock, lock + 30_000)
    }

    /// Raises `production`'s claim floor to the smallest `seq` of its live
    /// jobs (requested or claimed, parked or not), or, with none, past every
    /// job there is; in a short transaction of its own, after a claim-next
    /// committed (every [`FLOOR_EVERY`]th of this pool). It holds the
    /// production's advisory lock exclusively first (as a cancel does): no
    /// submission to it is then in flight, so its next statement's snapshot
    /// sees every job of the production that can ever become claimable
    /// with a `seq` below the new floor, and a job submitted later gets a
    /// larger `seq`. A job that ended stays ended, and released, failed,
    /// expired and un-parked jobs were live all along, so the floor stays
    /// at or below every job claim-next may take. The transaction waits at
    /// most [`FLOOR_LOCK_MS`] for the lock; any failure leaves the floor
    /// where it was (it is a bound, never a rule: claim-next's answer is
    /// the same with any floor that holds).
    fn raise_claim_floor(&self, production: &str) {
        let lock = format!(
            "SELECT pg_catalog.pg_advisory_xact_lock({CLASS_PROD}, {})",
            key(&[production])
        );
        self.short_transaction(&lock, |conn| {
            conn.execute(RAISE_CLAIM_FLOOR, &[&production])
        });
    }

    /// Deletes the mark log's rows below its largest value, in a short
    /// transaction of its own after a commit that appended a mark (every
    /// [`MARK_PRUNE_EVERY`]th of this pool). The largest value stays, so the
    /// mark never decreases: a row is deleted only below a committed row the
    /// same statement sees and keeps (two prunings deleting at once each keep
    /// their own maximum, and the larger of those is kept by both). The
    /// range starts at this pool's previous bound, so under a pinned
    /// snapshot (which keeps every deleted entry in the index) the walk
    /// covers only the entries appended since; every
    /// [`MARK_SWEEP_EVERY`]th pruning, and a pool's first, starts at 0 to
    /// take the rows a slower transaction appended below an earlier bound.
    /// Waits at most [`FLOOR_LOCK_MS`] for a row another pruning holds; any
    /// failure leaves the log as it was until the next turn.
    fn prune_mark_log(&self) {
        let turn = self.marks_written.load(Ordering::Relaxed) / MARK_PRUNE_EVERY;
        let lower = if turn % MARK_SWEEP_EVERY <= 1 {
            0
        } else {
            self.marks_pruned_below.load(Ordering::Relaxed)
        };
        let top = self.short_transaction("", |conn| {
            let rows = conn.query(PRUNE_MARK_LOG, &[&lower])?;
            Ok(rows.first().map(|r| r.get::<_, i64>(0)))
        });
        if let Some(Some(top)) = top {
            self.marks_pruned_below.fetch_max(top, Ordering::Relaxed);
        }
    }

    /// Runs `work` in a short `READ COMMITTED` transaction of its own, after
    /// `head` (SQL sent with `BEGIN`, may be empty), waiting at most
    /// [`FLOOR_LOCK_MS`] for any lock: the bookkeeping a commit leaves due
    /// (the claim floor, the mark log's pruning), which no caller waits
    /// for. `None` if anything failed (then nothing was changed).
    fn short_transaction<T>(
        &self,
        head: &str,
        work: impl FnOnce(&mut Conn) -> Result<T>,
    ) -> Option<T> {
        let mut conn = self.take().ok()?;
        let (_, stmt) = self.timeouts();
        let begin = format!(
            "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = {FLOOR_LOCK_MS}; \
             SET LOCAL statement_timeout = {stmt}; {head}"
        );
        crate::stats::round_trip();
        let done = conn
            .client
            .batch_execute(&begin)
            .map_err(map_err)
            .and_then(|()| {
                let out = work(&mut conn)?;
                crate::stats::round_trip();
                conn.client.batch_execute("COMMIT").map_err(map_err)?;
                Ok(out)
            });
        if done.is_err() && conn.client.batch_execute("ROLLBACK").is_err() {
            return None;
        }
        self.give_back(conn);
        done.ok()
    }
}

/// Marks appended between two prunings of the mark log (per pool, see
/// [`Pool::prune_mark_log`]).
const MARK_PRUNE_EVERY: u64 = 1024;
/// Every this many prunings of a pool is a full sweep of the mark log.
const MARK_SWEEP_EVERY: u64 = 64;
/// One pruning of the mark log (see [`Pool::prune_mark_log`]): the rows in
/// `[$1, max)` go, `max` (the log's largest value) is returned.
const PRUNE_MARK_LOG: &str = "WITH top AS MATERIALIZED (
         SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1),
     gone AS (DELETE FROM tenure.mark_log l USING top
              WHERE l.value >= $1 AND l.value < top.value)
     SELECT value FROM top";

/// Claim-next scans between two raises of a production's claim floor
/// (per pool, see [`Pool::raise_claim_floor`]).
const FLOOR_EVERY: u64 = 256;
/// How long a floor raise waits for the production's lock (ms) before it
/// gives up until its next turn.
const FLOOR_LOCK_MS: u32 = 50;

/// The new claim floor of production `$1` (see [`Pool::raise_claim_floor`]):
/// the first live job at or above the old floor of each priority present
/// (a loose index scan over `jobs_ready`), and the smallest parked live
/// job, whichever is smaller; with no live job, one past the largest `seq`
/// there is. Only ever raised.
const RAISE_CLAIM_FLOOR: &str = "
    WITH RECURSIVE f AS MATERIALIZED (
         SELECT claim_floor AS lo FROM tenure.productions WHERE name = $1),
     r(priority, seq) AS (
         (SELECT priority, seq FROM tenure.jobs
          WHERE production = $1 AND state IN ('requested', 'claimed') AND NOT parked
            AND seq >= (SELECT lo FROM f)
          ORDER BY priority DESC, seq LIMIT 1)
         UNION ALL
         SELECT n.priority, n.seq FROM r CROSS JOIN LATERAL (
             SELECT priority, seq FROM tenure.jobs
             WHERE production = $1 AND state IN ('requested', 'claimed') AND NOT parked
               AND seq >= (SELECT lo FROM f) AND priority < r.priority
             ORDER BY priority DESC, seq LIMIT 1) n),
     v AS (
         SELECT coalesce(least(
             (SELECT min(seq) FROM r),
             (SELECT min(seq) FROM tenure.jobs WHERE production = $1 AND parked
                 AND (state IN ('requested', 'claimed')) IS TRUE)),
             (SELECT max(seq) + 1 FROM tenure.jobs)) AS seq)
    UPDATE tenure.productions p SET claim_floor = v.seq FROM v
    WHERE p.name = $1 AND v.seq > p.claim_floor";

/// The PostgreSQL store behind an authority.
pub(crate) struct PgBackend {
    pool: Arc<Pool>,
    /// The work doorbell's listener, started by the first wait.
    bell: Mutex<Option<Arc<crate::doorbell::LocalBell>>>,
}

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

/// Schema 9: the high-water mark as an insert-only log (see the module
/// docs): `tenure.mark_log`, seeded with the largest of the old striped
/// rows, which are dropped (a process of an older library still running
/// beside the migrated store then fails its writes instead of keeping a
/// mark nobody reads). Additive apart from that drop; idempotent (a store
/// without `tenure.marks` keeps its log as it is).
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

/// The stored schema version, or `None` if there is no tenure schema.
fn stored_version(c: &mut Client) -> Result<Option<u32>> {
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

impl PgBackend {
    /// Connect, refuse a newer schema untouched, create a missing one.
    /// Returns the backend and the schema version found (0 if created).
    pub(crate) fn open(url: &str, busy: Duration, server_clock: bool) -> Result<(PgBackend, u32)> {
        // The TLS parameters rust-postgres does not know are taken out first.
        let (rest, tls) = url::split_url(url)?;
        let mut config = postgres::Config::from_str(&rest).map_err(|e| {
            Error::invalid(format!(
                "invalid PostgreSQL address {}: {}",
                bounded(&redact(url)),
                bounded(&e.to_string())
            ))
        })?;
        let tls = tls::Tls::new(tls)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(busy.max(Duration::from_secs(1)));
        }
        if config.get_application_name().is_none() {
            config.application_name("tenure");
        }
        let pool = Pool {
            config,
            tls,
            busy,
            server_clock,
            idle: Mutex::new(Vec::new()),
            claim_scans: AtomicU64::new(0),
            marks_written: AtomicU64::new(0),
            marks_pruned_below: AtomicI64::new(0),
        };
        let mut conn = pool.connect()?;
        let found = match stored_version(&mut conn.client)? {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(Error::SchemaTooNew {
                    found: v,
                    supported: SCHEMA_VERSION,
                })
            }
            Some(v) if v == SCHEMA_VERSION => v,
            _ => create(&mut conn.client, &pool)?,
        };
        let pool = Arc::new(pool);
        pool.give_back(conn);
        Ok((
            PgBackend {
                pool,
                bell: Mutex::new(None),
            },
            found,
        ))
    }
}

fn create(c: &mut Client, pool: &Pool) -> Result<u32> {
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

impl Backend for PgBackend {
    fn begin_write(&self) -> Result<Box<dyn Txn>> {
        let start = std::time::Instant::now();
        let (lock, stmt) = self.pool.timeouts();
        let t = PgTxn::begin(
            &self.pool,
            &format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = {lock}; \
                 SET LOCAL statement_timeout = {stmt}; \
                 SET LOCAL standard_conforming_strings = on"
            ),
            true,
        )?;
        crate::stats::record_lock_wait(start.elapsed());
        Ok(t)
    }
    fn begin_read(&self) -> Result<Box<dyn Txn>> {
        let (_, stmt) = self.pool.timeouts();
        PgTxn::begin(
            &self.pool,
            &format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
                 SET LOCAL statement_timeout = {stmt}"
            ),
            false,
        )
        .map(|t| t as Box<dyn Txn>)
    }
    fn doorbell(&self) -> Result<Arc<dyn crate::doorbell::Doorbell>> {
        let mut b = self.bell.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bell) = b.as_ref() {
            return Ok(bell.clone());
        }
        let bell = listen::start(self.pool.clone())?;
        *b = Some(bell.clone());
        Ok(bell)
    }
}

struct PgTxn {
    conn: Option<Conn>,
    pool: Arc<Pool>,
    open: bool,
    write: bool,
    /// A statement failed and no savepoint rollback has happened since: the
    /// server transaction is aborted and must not be "committed".
    failed: bool,
    savepoints: u32,
    /// The savepoint depth at which this transaction registered its event
    /// sequence lower bound (the shared advisory lock `EVENT_REG | n`), if
    /// it holds one: rolling back to a savepoint at or below that depth
    /// releases the lock, releasing the savepoint hands it to the parent.
    event_reg: Option<u32>,
    /// Advisory locks this transaction holds: `(class, key, shared, depth)`,
    /// `depth` the savepoint depth that took it. A lock already held (an
    /// exclusive one also covers a shared request) is not asked for again:
    /// an edit's many submissions to one production take its shared lock
    /// once. Same savepoint rules as `event_reg`.
    held: Vec<(i32, i32, bool, u32)>,
    /// Productions to `NOTIFY` about with the COMMIT (see [`Txn::notify_work`]).
    notify: Vec<String>,
    /// The high-water mark read with `BEGIN`, until asked for.
    begin_mark: Option<i64>,
    /// The server clock read with a write transaction's `BEGIN`, until an
    /// unguarded write asks for it ([`Txn::observed_now_us`]).
    begin_now: Option<i64>,
    /// Deferred writes (see [`PgTxn::defer`]): SQL sent at the head of the
    /// transaction's next request.
    pending: String,
    /// The production whose claim floor this transaction raises after it
    /// commits (every [`FLOOR_EVERY`]th claim-next of the pool, see
    /// [`Pool::raise_claim_floor`]).
    floor_due: Option<String>,
    /// The mark log's pruning is due after this transaction commits.
    mark_prune_due: bool,
}

impl PgTxn {
    /// Begin with `sql` (`BEGIN ...; SET LOCAL ...`) followed, in the same
    /// round trip, by the read of the high-water mark, which the session
    /// asks for first ([`Txn::high_water`] answers it once from here), and,
    /// for a write transaction on the server's clock, a clock sample for
    /// the first unguarded write ([`Txn::observed_now_us`]).
    fn begin(pool: &Arc<Pool>, sql: &str, write: bool) -> Result<Box<PgTxn>> {
        let sample = if write && pool.server_clock {
            concat!("; SELECT ", server_sample!())
        } else {
            ""
        };
        let sql = format!("{sql}; {HIGH_WATER}{sample}");
        let mut conn = pool.take()?;
        crate::stats::round_trip();
        let mut r = conn.client.simple_query(&sql);
        if let Err(e) = r {
            // A connection that died while idle (server restart, failover):
            // try once more on a fresh one.
            if !conn.client.is_closed() {
                let _ = conn.client.batch_execute("ROLLBACK");
                pool.give_back(conn);
                return Err(map_err(e));
            }
            conn = pool.connect()?;
            crate::stats::round_trip();
            r = conn.client.simple_query(&sql);
        }
        let msgs = r.map_err(map_err)?;
        let mut vals = msgs.iter().filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse::<i64>().ok()),
            _ => None,
        });
        let mark = vals.next();
        let begin_now = vals.next();
        Ok(Box::new(PgTxn {
            begin_mark: mark,
            begin_now,
            conn: Some(conn),
            pool: pool.clone(),
            open: true,
            write,
            failed: false,
            savepoints: 0,
            event_reg: None,
            held: Vec::new(),
            notify: Vec::new(),
            pending: String::new(),
            floor_due: None,
            mark_prune_due: false,
        }))
    }

    fn c(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("connection present while open")
    }

    fn track<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn query(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        self.flush()?;
        let r = self.c().query(sql, p);
        self.track(r)
    }

    fn execute(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        self.flush()?;
        let r = self.c().execute(sql, p);
        self.track(r)
    }

    /// Send `sql` (simple query) after the deferred writes, in one request.
    fn batch(&mut self, sql: &str) -> Result<()> {
        let sql = format!("{}{sql}", std::mem::take(&mut self.pending));
        crate::stats::round_trip();
        let r = self.c().client.batch_execute(&sql).map_err(map_err);
        self.track(r)
    }

    /// Defer a write whose answer nobody waits for: a call of the
    /// statement `body` (parameters `$n` of `types`), prepared once per
    /// connection as `name` (`PREPARE`, which outlives a rollback; the
    /// connection's first call prepares it in a request of its own), is
    /// sent at the head of the transaction's next request, at the latest
    /// with the pre-commit check and `COMMIT` (one request for both), so a
    /// transition's writes cost no round trip of their own. The arguments
    /// are [`literal`]s, as the simple-query protocol that carries `COMMIT`
    /// takes no parameters. A rollback to the savepoint they follow drops
    /// them unsent.
    fn defer(
        &mut self,
        name: &'static str,
        types: &'static str,
        body: &'static str,
        params: &[literal::Lit],
    ) -> Result<()> {
        let call = literal::execute(name, params)?;
        if !self.c().prepared.contains(name) {
            self.batch(&format!("PREPARE {name} ({types}) AS {body}"))?;
            self.c().prepared.insert(name);
        }
        // The arguments' sizes vary from call to call: one generic plan,
        // not a custom plan per call.
        self.pending
            .push_str("SET LOCAL plan_cache_mode = force_generic_plan; ");
        self.pending.push_str(&call);
        self.pending.push_str("; RESET plan_cache_mode; ");
        Ok(())
    }

    /// Send the deferred writes now (before a statement that may read them).
    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.batch("")
    }

    fn advisory(&mut self, class: i32, k: i32, shared: bool) -> Result<()> {
        if self
            .held
            .iter()
            .any(|&(c, key, s, _)| c == class && key == k && (shared || !s))
        {
            return Ok(());
        }
        if shared {
            self.execute("SELECT pg_advisory_xact_lock_shared($1, $2)", &[&class, &k])?;
        } else {
            self.execute("SELECT pg_advisory_xact_lock($1, $2)", &[&class, &k])?;
        }
        self.held.push((class, k, shared, self.savepoints));
        Ok(())
    }

    /// The `NOTIFY`s to send in the COMMIT's request (so they are
    /// delivered only if it commits), emptied. Production IDs are validated
    /// (`[A-Za-z0-9._:@+-]`), so they are safe inside a literal;
    /// `notify_work` sent anything else at once.
    fn take_notifies(&mut self) -> String {
        let mut sql = String::new();
        for p in std::mem::take(&mut self.notify) {
            sql.push_str(&format!("NOTIFY {}, '{p}'; ", listen::CHANNEL));
        }
        sql
    }

    /// Counts a mark appended to the mark log; every
    /// [`MARK_PRUNE_EVERY`]th of the pool makes the log's pruning due after
    /// this transaction commits (see [`Pool::prune_mark_log`]).
    fn mark_written(&mut self) {
        if self.pool.marks_written.fetch_add(1, Ordering::Relaxed) % MARK_PRUNE_EVERY
            == MARK_PRUNE_EVERY - 1
        {
            self.mark_prune_due = true;
        }
    }

    /// After a commit: the claim floor's and the mark log's turns, if they
    /// came (see [`Pool::raise_claim_floor`], [`Pool::prune_mark_log`]).
    fn after_commit(&mut self) {
        if let Some(production) = self.floor_due.take() {
            self.pool.raise_claim_floor(&production);
        }
        if std::mem::take(&mut self.mark_prune_due) {
            self.pool.prune_mark_log();
        }
    }

    fn finish(&mut self, sql: &str) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        self.open = false;
        let Some(mut conn) = self.conn.take() else {
            return Ok(());
        };
        let sql = if sql == "ROLLBACK" {
            self.pending.clear();
            sql.to_owned()
        } else {
            format!("{}{sql}", std::mem::take(&mut self.pending))
        };
        let committing = sql.ends_with("COMMIT");
        crate::stats::round_trip();
        match conn.client.batch_execute(&sql) {
            Ok(()) => {
                self.pool.give_back(conn);
                if committing {
                    self.after_commit();
                }
                Ok(())
            }
            Err(e) => {
                if conn.client.batch_execute("ROLLBACK").is_ok() {
                    self.pool.give_back(conn);
                }
                Err(map_err(e))
            }
        }
    }

    fn job_select(&mut self, production: &str, job: &str) -> Result<Option<JobRow>> {
        let rows = if self.write {
            self.query(
                concat!(
                    "SELECT ",
                    job_cols!(),
                    " FROM tenure.jobs WHERE production = $1 AND job = $2 FOR UPDATE"
                ),
                &[&production, &job],
            )?
        } else {
            self.query(
                concat!(
                    "SELECT ",
                    job_cols!(),
                    " FROM tenure.jobs WHERE production = $1 AND job = $2"
                ),
                &[&production, &job],
            )?
        };
        rows.first().map(job_row).transpose()
    }

    fn production_select(&mut self, name: &str) -> Result<Option<ProductionRow>> {
        let rows = self.query(
            "SELECT name, created_us, cancelled_us, backoff_base_us, backoff_cap_us
             FROM tenure.productions WHERE name = $1",
            &[&name],
        )?;
        rows.first().map(production_row).transpose()
    }

    /// The event horizon M: every event with a sequence number below M that
    /// will ever commit has committed, and is visible to the next statement
    /// of this transaction. (1) the sequence's next value, then (2) the
    /// smallest registered lower bound still held, both before that
    /// statement's snapshot (see the module docs).
    fn event_horizon(&mut self) -> Result<i64> {
        let (next, registered) = if self.write {
            // READ COMMITTED: each statement takes a fresh snapshot, so the
            // listing that follows is later than (1) and (2).
            let next = self.query(EVENT_HORIZON_NEXT, &[])?;
            let reg = self.query(EVENT_HORIZON_REGISTERED, &[])?;
            (
                next.first().map(|r| r.get::<_, i64>(0)),
                reg.first().and_then(|r| r.get::<_, Option<i64>>(0)),
            )
        } else {
            // REPEATABLE READ took its snapshot at this transaction's first
            // statement, possibly before (1). A listing needs no snapshot
            // shared with earlier reads: end the transaction, read (1) and
            // (2) outside it (one round trip, in this order), and begin the
            // read transaction again (as `begin_read` does); its snapshot
            // comes at the listing, after (2).
            let sql = format!("ROLLBACK; {EVENT_HORIZON_NEXT}; {EVENT_HORIZON_REGISTERED}");
            crate::stats::round_trip();
            let r = self.c().client.simple_query(&sql).map_err(map_err);
            // (A read transaction takes no advisory locks; none survive.)
            self.held.clear();
            let msgs = self.track(r)?;
            let mut vals = msgs.iter().filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::parse::<i64>)),
                _ => None,
            });
            let next = vals.next().flatten().transpose();
            let reg = vals.next().flatten().transpose();
            let (_, stmt) = self.pool.timeouts();
            self.batch(&format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
                 SET LOCAL statement_timeout = {stmt}"
            ))?;
            match (next, reg) {
                (Ok(n), Ok(r)) => (n, r),
                _ => return Err(Error::Internal("unreadable event horizon".into())),
            }
        };
        let next =
            next.ok_or_else(|| Error::Internal("the event horizon query gave no row".into()))?;
        Ok(registered.map_or(next, |r| r.min(next)))
    }
}

impl PgTxn {
    /// Events with `after < seq < below` in the current snapshot.
    fn events_below(
        &mut self,
        production: Option<&str>,
        after: u64,
        limit: usize,
        below: i64,
    ) -> Result<Vec<Event>> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        if below <= after.saturating_add(1) {
            return Ok(Vec::new());
        }
        let rows = match production {
            None => self.query(
                "SELECT seq, at_us, production, job, kind, state, claim_id, holder, attempt,
                        expires_us, detail
                 FROM tenure.events WHERE seq > $1 AND seq < $2 ORDER BY seq LIMIT $3",
                &[&after, &below, &limit],
            )?,
            Some(p) => self.query(
                "SELECT seq, at_us, production, job, kind, state, claim_id, holder, attempt,
                        expires_us, detail
                 FROM tenure.events WHERE production = $1 AND seq > $2 AND seq < $3
                 ORDER BY seq LIMIT $4",
                &[&p, &after, &below, &limit],
            )?,
        };
        rows.iter().map(event_row).collect()
    }
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        if self.open {
            let _ = self.finish("ROLLBACK");
        }
    }
}

fn bad(what: String) -> Error {
    Error::Store(format!("corrupt row: {what}"))
}

fn uuid_col(r: &Row, i: usize) -> Result<Option<Uuid>> {
    let s: Option<String> = r.get(i);
    match s {
        None => Ok(None),
        Some(s) => Uuid::parse_str(&s)
            .map(Some)
            .map_err(|e| bad(format!("claim ID {s:?}: {e}"))),
    }
}

fn u32_col(r: &Row, i: usize) -> Result<u32> {
    let v: i64 = r.get(i);
    u32::try_from(v).map_err(|_| bad(format!("column {i} out of range: {v}")))
}

fn job_row(r: &Row) -> Result<JobRow> {
    let state: String = r.get(7);
    let len: i64 = r.get(4);
    Ok(JobRow {
        seq: r.get(0),
        production: r.get(1),
        job: r.get(2),
        payload_digest: r.get(3),
        payload_len: u64::try_from(len).map_err(|_| bad(format!("payload length {len}")))?,
        priority: r.get(5),
        max_attempts: u32_col(r, 6)?,
        state: Stored::parse(&state).ok_or_else(|| bad(format!("unknown state {state:?}")))?,
        attempts: u32_col(r, 8)?,
        claim_id: uuid_col(r, 9)?,
        secret_digest: r.get(10),
        holder: r.get(11),
        claimed_us: r.get(12),
        expires_us: r.get(13),
        created_us: r.get(14),
        updated_us: r.get(15),
        last_error: r.get(16),
        due_us: r.get(17),
        parked: r.get(18),
        max_hold_us: r.get(19),
        backoff: backoff_from_cols(r.get(20), r.get(21))?,
        provenance_at: None,
    })
}

fn production_row(r: &Row) -> Result<ProductionRow> {
    Ok(ProductionRow {
        name: r.get(0),
        created_us: r.get(1),
        cancelled_us: r.get(2),
        backoff: backoff_from_cols(r.get(3), r.get(4))?,
    })
}

fn event_row(r: &Row) -> Result<Event> {
    let kind: String = r.get(4);
    let state: Option<String> = r.get(5);
    let state = match state {
        None => None,
        Some(s) => Some(
            Stored::parse(&s)
                .ok_or_else(|| bad(format!("unknown state {s:?}")))?
                .as_job_state(),
        ),
    };
    let seq: i64 = r.get(0);
    let attempt: Option<i64> = r.get(8);
    Ok(Event {
        seq: u64::try_from(seq).map_err(|_| bad(format!("event seq {seq}")))?,
        at_us: r.get(1),
        production: r.get(2),
        job: r.get(3),
        kind: EventKind::parse(&kind).ok_or_else(|| bad(format!("unknown event kind {kind:?}")))?,
        state,
        claim_id: uuid_col(r, 6)?,
        holder: r.get(7),
        attempt: attempt
            .map(|a| u32::try_from(a).map_err(|_| bad(format!("attempt {a}"))))
            .transpose()?,
        expires_us: r.get(9),
        detail: r.get(10),
    })
}

fn jobs(rows: Vec<Row>) -> Result<Vec<JobRow>> {
    rows.iter().map(job_row).collect()
}

impl Txn for PgTxn {
    fn has_server_clock(&self) -> bool {
        self.pool.server_clock
    }

    fn lock_jobs_sampled(
        &mut self,
        keys: &[(&str, &str)],
        local_now: Option<i64>,
    ) -> Result<Locked> {
        let prods: Vec<&str> = keys.iter().map(|k| k.0).collect();
        let names: Vec<&str> = keys.iter().map(|k| k.1).collect();
        let local = local_now.filter(|_| !self.pool.server_clock);
        // One statement: lock the rows (in seq order, as `jobs_for_update`),
        // then sample the clock in a CTE that consumes every locked row
        // first, so the sample is taken after any wait for a lock; the
        // rows' productions' default back-off comes with them.
        let rows = self.query(
            concat!(
                "WITH l AS MATERIALIZED (
                     SELECT ",
                job_cols!(),
                " FROM tenure.jobs WHERE (production, job) IN
                         (SELECT u.p, u.j FROM unnest($1::text[], $2::text[]) AS u(p, j))
                     ORDER BY seq FOR UPDATE),
                 t AS MATERIALIZED (
                     SELECT coalesce($3::bigint, ",
                server_sample!(),
                ") AS now FROM (SELECT count(*) AS n FROM l) c)
                 SELECT l.*, t.now, p.backoff_base_us, p.backoff_cap_us
                 FROM t LEFT JOIN l ON true LEFT JOIN tenure.productions p ON p.name = l.production"
            ),
            &[&prods, &names, &local],
        )?;
        let now: i64 = rows
            .first()
            .map(|r| r.get(JOB_COLS))
            .ok_or_else(|| Error::Internal("the locked read gave no row".into()))?;
        let mut found: HashMap<(String, String), JobRow> = HashMap::with_capacity(rows.len());
        let mut backoffs = HashMap::new();
        for r in &rows {
            if r.get::<_, Option<i64>>(0).is_none() {
                continue;
            }
            let row = job_row(r)?;
            let b = backoff_from_cols(r.get(JOB_COLS + 1), r.get(JOB_COLS + 2))?;
            backoffs.insert(row.production.clone(), b);
            found.insert((row.production.clone(), row.job.clone()), row);
        }
        let rows = keys
            .iter()
            .map(|(p, j)| found.remove(&((*p).to_owned(), (*j).to_owned())))
            .collect();
        Ok(Locked {
            now,
            rows,
            backoffs,
        })
    }

    fn claim_start(
        &mut self,
        production: &str,
        limit: usize,
        local_now: Option<i64>,
    ) -> Result<ClaimStart> {
        let k = key(&[production]);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let local = local_now.filter(|_| !self.pool.server_clock);
        // One statement: the production's shared lock (as
        // `production_exists`), then, in the same row, its existence and
        // the clock sample (after the lock); then the first page of the
        // ready jobs (`jobs_ready`, leases still held left out: see
        // `LiveScan::Claim`) and the first page of the parked jobs whose
        // due time has come (`jobs_parked`), each `FOR UPDATE SKIP LOCKED`,
        // merged in queue order; and whether the production has due parked
        // jobs (to un-park them with the writes). The ready page starts at
        // the production's claim floor (no live job has a smaller `seq`,
        // see `Pool::raise_claim_floor`): a bound the index checks on
        // its own entries, so the entries of jobs that ended below it cost
        // no heap visit even while an open snapshot keeps their versions.
        macro_rules! page {
            ($cond:literal) => {
                concat!(
                    "SELECT ",
                    job_cols!(),
                    " FROM tenure.jobs
                     WHERE production = $3 AND ",
                    $cond,
                    " AND (SELECT found FROM lk)
                     ORDER BY priority DESC, seq LIMIT $4
                     FOR UPDATE SKIP LOCKED"
                )
            };
        }
        let rows = self.query(
            concat!(
                "WITH lk AS MATERIALIZED (
                     SELECT EXISTS (SELECT 1 FROM tenure.productions WHERE name = $3) AS found,
                            coalesce((SELECT claim_floor FROM tenure.productions
                                      WHERE name = $3), 0) AS floor,
                            coalesce($5::bigint, ",
                server_sample!(),
                ") AS now, l.locked::text AS locked
                     FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared($1, $2) AS locked
                           OFFSET 0) l),
                 ready AS MATERIALIZED (",
                page!(
                    "state IN ('requested', 'claimed') AND NOT parked
                     AND seq >= (SELECT floor FROM lk)
                     AND (state = 'requested' OR expires_us IS NULL
                          OR expires_us <= (SELECT now FROM lk))"
                ),
                "),
                 due AS MATERIALIZED (",
                // Read through `jobs_parked`: the state test is kept out of
                // the index conditions (`IS TRUE`), or the planner may walk
                // every requested job by `jobs_by_state` instead.
                page!(
                    "parked AND due_us <= (SELECT now FROM lk)
                     AND (state IN ('requested', 'claimed')) IS TRUE"
                ),
                ")
                 SELECT r.*, lk.found, lk.now,
                        EXISTS (SELECT 1 FROM tenure.jobs WHERE production = $3 AND parked
                                AND due_us <= lk.now)
                 FROM lk LEFT JOIN (SELECT *, 1 AS src FROM ready
                                    UNION ALL SELECT *, 2 AS src FROM due) r ON true
                 ORDER BY r.priority DESC, r.seq"
            ),
            &[&CLASS_PROD, &k, &production, &limit, &local],
        )?;
        self.held.push((CLASS_PROD, k, true, self.savepoints));
        if self.pool.claim_scans.fetch_add(1, Ordering::Relaxed) % FLOOR_EVERY == FLOOR_EVERY - 1 {
            self.floor_due = Some(production.to_owned());
        }
        let first = rows
            .first()
            .ok_or_else(|| Error::Internal("the claim scan gave no row".into()))?;
        let exists: bool = first.get(JOB_COLS + 1);
        let now: i64 = first.get(JOB_COLS + 2);
        let due_parked: bool = first.get(JOB_COLS + 3);
        let mut out = Vec::with_capacity(rows.len());
        let mut full = [0usize; 2];
        for r in &rows {
            let Some(src) = r.get::<_, Option<i32>>(JOB_COLS) else {
                continue;
            };
            let mut row = job_row(r)?;
            // Due: un-parked by the statement below (the rule would see the
            // same row after `unpark_due`).
            row.parked = false;
            full[usize::from(src == 2)] += 1;
            out.push((src, row));
        }
        // Queue order holds only up to the last row of a page that was
        // full (a row of the other page after it may be preceded by rows
        // of the full one that were not read): the rows after it are left
        // to the rule's next page, which sees them un-parked (they stay
        // locked until this transaction ends).
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut seen = [0usize; 2];
        let mut keep = Vec::with_capacity(out.len());
        for (src, row) in out {
            let i = usize::from(src == 2);
            seen[i] += 1;
            keep.push(row);
            if full[i] >= limit && seen[i] == full[i] {
                // The last row of a full page: nothing after it is known
                // to be in queue order.
                break;
            }
        }
        let out = keep;
        if due_parked {
            // The due jobs of this production join the ready scan: sent
            // with the next request (as `unpark_due` with `LiveScan::Claim`).
            self.defer(
                "tenure_unpark_due",
                "text, bigint",
                "UPDATE tenure.jobs SET parked = false WHERE seq IN (
                     SELECT seq FROM tenure.jobs
                     WHERE production = $1 AND parked AND due_us <= $2
                     FOR UPDATE SKIP LOCKED)",
                &[literal::text(production), literal::int(now)],
            )?;
        }
        Ok(ClaimStart {
            now,
            exists: Some(exists),
            rows: out,
        })
    }

    fn server_now_us(&mut self) -> Result<Option<i64>> {
        if !self.pool.server_clock {
            return Ok(None);
        }
        let rows = self.query(concat!("SELECT ", server_sample!()), &[])?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    fn observed_now_us(&mut self) -> Result<Option<i64>> {
        match self.begin_now.take() {
            Some(t) => Ok(Some(t)),
            None => self.server_now_us(),
        }
    }

    fn high_water(&mut self) -> Result<i64> {
        if let Some(m) = self.begin_mark.take() {
            return Ok(m);
        }
        let rows = self.query(HIGH_WATER, &[])?;
        Ok(rows.first().map(|r| r.get(0)).unwrap_or(0))
    }

    fn set_high_water(&mut self, us: i64) -> Result<()> {
        self.execute(RAISE_MARK, &[&us])?;
        self.mark_written();
        Ok(())
    }

    fn schema_version(&mut self) -> Result<u32> {
        let rows = self.query(
            "SELECT value FROM tenure.meta WHERE key = 'schema_version'",
            &[],
        )?;
        match rows.first() {
            Some(r) => u32_col(r, 0),
            None => Err(Error::Store("the schema_version row is missing".into())),
        }
    }

    fn production(&mut self, name: &str) -> Result<Option<ProductionRow>> {
        if !self.write {
            return self.production_select(name);
        }
        // Shared: submissions and claims on one production run in parallel;
        // cancelling it takes the same key exclusively.
        self.advisory(CLASS_PROD, key(&[name]), true)?;
        if let Some(p) = self.production_select(name)? {
            return Ok(Some(p));
        }
        // Not there: serialize creators of this name, then look again.
        self.advisory(CLASS_PROD_CREATE, key(&[name]), false)?;
        self.production_select(name)
    }

    fn production_exists(&mut self, name: &str) -> Result<bool> {
        let k = key(&[name]);
        if !self.write
            || self
                .held
                .iter()
                .any(|&(c, key, _, _)| c == CLASS_PROD && key == k)
        {
            return Ok(self.production_select(name)?.is_some());
        }
        // The shared lock and the lookup in one statement (`OFFSET 0` keeps
        // the lock's subquery, and with it the call, in the plan).
        let rows = self.query(
            "SELECT EXISTS (SELECT 1 FROM tenure.productions WHERE name = $3), l.locked::text
             FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared($1, $2) AS locked OFFSET 0) l",
            &[&CLASS_PROD, &k, &name],
        )?;
        self.held.push((CLASS_PROD, k, true, self.savepoints));
        Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
    }

    fn insert_production(&mut self, row: &ProductionRow) -> Result<()> {
        let (base, cap) = backoff_cols(row.backoff);
        self.execute(
            "INSERT INTO tenure.productions (name, created_us, cancelled_us, backoff_base_us,
                 backoff_cap_us) VALUES ($1, $2, $3, $4, $5)",
            &[&row.name, &row.created_us, &row.cancelled_us, &base, &cap],
        )?;
        Ok(())
    }

    fn set_production_backoff(&mut self, name: &str, backoff: Option<Backoff>) -> Result<()> {
        let (base, cap) = backoff_cols(backoff);
        self.execute(
            "UPDATE tenure.productions SET backoff_base_us = $2, backoff_cap_us = $3
             WHERE name = $1",
            &[&name, &base, &cap],
        )?;
        Ok(())
    }

    fn set_production_cancelled(&mut self, name: &str, at_us: i64) -> Result<()> {
        // Normally already held since the scan: no submission is in flight.
        self.advisory(CLASS_PROD, key(&[name]), false)?;
        let live = self.query(
            "SELECT count(*) FROM tenure.jobs
             WHERE production = $1 AND state IN ('requested', 'claimed')",
            &[&name],
        )?;
        let n: i64 = live.first().map(|r| r.get(0)).unwrap_or(0);
        if n != 0 {
            return Err(Error::Busy(format!(
                "{n} jobs were submitted to production {name:?} while it was being cancelled; \
                 nothing was cancelled, retry"
            )));
        }
        self.execute(
            "UPDATE tenure.productions SET cancelled_us = $2
             WHERE name = $1 AND cancelled_us IS NULL",
            &[&name, &at_us],
        )?;
        Ok(())
    }

    fn productions(&mut self) -> Result<Vec<ProductionRow>> {
        let rows = self.query(
            "SELECT name, created_us, cancelled_us, backoff_base_us, backoff_cap_us
             FROM tenure.productions ORDER BY name",
            &[],
        )?;
        rows.iter().map(production_row).collect()
    }

    fn job(&mut self, production: &str, job: &str) -> Result<Option<JobRow>> {
        if let Some(r) = self.job_select(production, job)? {
            return Ok(Some(r));
        }
        if !self.write {
            return Ok(None);
        }
        // Not there: serialize writers of this (production, job), look again.
        self.advisory(CLASS_JOB, key(&[production, job]), false)?;
        self.job_select(production, job)
    }

    fn payload(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
        let rows = self.query(
            "SELECT payload FROM tenure.payloads WHERE production = $1 AND job = $2",
            &[&production, &job],
        )?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    fn insert_job(&mut self, row: &JobRow, payload: &[u8]) -> Result<i64> {
        let len = i64::try_from(row.payload_len).unwrap_or(i64::MAX);
        let max = i64::from(row.max_attempts);
        let attempts = i64::from(row.attempts);
        let claim = row.claim_id.map(|u| u.to_string());
        let (base, cap) = backoff_cols(row.backoff);
        let rows = self.query(
            "WITH j AS (
                 INSERT INTO tenure.jobs (production, job, payload_digest, payload_len,
                     priority, max_attempts, state, attempts, claim_id, secret_digest, holder,
                     claimed_us, expires_us, created_us, updated_us, last_error, due_us,
                     parked, max_hold_us, backoff_base_us, backoff_cap_us)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                     $16, $18, $19, $20, $21, $22)
                 RETURNING seq),
             p AS (
                 INSERT INTO tenure.payloads (production, job, payload) VALUES ($1, $2, $17))
             SELECT seq FROM j",
            &[
                &row.production,
                &row.job,
                &row.payload_digest,
                &len,
                &row.priority,
                &max,
                &row.state.as_str(),
                &attempts,
                &claim,
                &row.secret_digest,
                &row.holder,
                &row.claimed_us,
                &row.expires_us,
                &row.created_us,
                &row.updated_us,
                &row.last_error,
                &payload,
                &row.due_us,
                &row.parked,
                &row.max_hold_us,
                &base,
                &cap,
            ],
        )?;
        rows.first()
            .map(|r| r.get(0))
            .ok_or_else(|| Error::Internal("INSERT ... RETURNING gave no row".into()))
    }

    fn update_job(&mut self, row: &JobRow) -> Result<()> {
        let attempts = i64::from(row.attempts);
        let claim = row.claim_id.map(|u| u.to_string());
        let n = self.execute(
            "UPDATE tenure.jobs SET state = $2, attempts = $3, claim_id = $4, secret_digest = $5,
                 holder = $6, claimed_us = $7, expires_us = $8, updated_us = $9, last_error = $10,
                 due_us = $11, parked = $12
             WHERE seq = $1",
            &[
                &row.seq,
                &row.state.as_str(),
                &attempts,
                &claim,
                &row.secret_digest,
                &row.holder,
                &row.claimed_us,
                &row.expires_us,
                &row.updated_us,
                &row.last_error,
                &row.due_us,
                &row.parked,
            ],
        )?;
        if n != 1 {
            return Err(Error::Internal(format!(
                "update of job {}/{} touched {n} rows",
                row.production, row.job
            )));
        }
        Ok(())
    }

    fn update_expiry(&mut self, row: &JobRow) -> Result<()> {
        let n = self.execute(
            "UPDATE tenure.jobs SET expires_us = $2, updated_us = $3 WHERE seq = $1",
            &[&row.seq, &row.expires_us, &row.updated_us],
        )?;
        if n != 1 {
            return Err(Error::Internal(format!(
                "renewal of job {}/{} touched {n} rows",
                row.production, row.job
            )));
        }
        Ok(())
    }

    fn jobs_for_update(&mut self, keys: &[(&str, &str)]) -> Result<Vec<Option<JobRow>>> {
        let prods: Vec<&str> = keys.iter().map(|k| k.0).collect();
        let names: Vec<&str> = keys.iter().map(|k| k.1).collect();
        // One statement (write transactions only, like every batched
        // call); rows locked in seq order, so two batches that share jobs
        // wait for each other instead of deadlocking.
        let rows = self.query(
            concat!(
                "SELECT ",
                job_cols!(),
                " FROM tenure.jobs WHERE (production, job) IN
                     (SELECT u.p, u.j FROM unnest($1::text[], $2::text[]) AS u(p, j))
                 ORDER BY seq FOR UPDATE"
            ),
            &[&prods, &names],
        )?;
        let mut found: HashMap<(String, String), JobRow> = HashMap::with_capacity(rows.len());
        for r in &rows {
            let row = job_row(r)?;
            found.insert((row.production.clone(), row.job.clone()), row);
        }
        Ok(keys
            .iter()
            .map(|(p, j)| found.remove(&((*p).to_owned(), (*j).to_owned())))
            .collect())
    }

    fn insert_new_jobs_into(
        &mut self,
        production: &str,
        rows: &[JobRow],
        payloads: &[&[u8]],
    ) -> Result<Inserted> {
        let pk = key(&[production]);
        let prods: Vec<&str> = rows.iter().map(|r| r.production.as_str()).collect();
        let job: Vec<&str> = rows.iter().map(|r| r.job.as_str()).collect();
        let digest: Vec<&[u8]> = rows.iter().map(|r| &r.payload_digest[..]).collect();
        let len: Vec<i64> = rows
            .iter()
            .map(|r| i64::try_from(r.payload_len).unwrap_or(i64::MAX))
            .collect();
        let prio: Vec<i32> = rows.iter().map(|r| r.priority).collect();
        let max: Vec<i64> = rows.iter().map(|r| i64::from(r.max_attempts)).collect();
        let state: Vec<&str> = rows.iter().map(|r| r.state.as_str()).collect();
        let created: Vec<i64> = rows.iter().map(|r| r.created_us).collect();
        let updated: Vec<i64> = rows.iter().map(|r| r.updated_us).collect();
        let due: Vec<Option<i64>> = rows.iter().map(|r| r.due_us).collect();
        let parked: Vec<bool> = rows.iter().map(|r| r.parked).collect();
        let hold: Vec<Option<i64>> = rows.iter().map(|r| r.max_hold_us).collect();
        let (base, cap): (Vec<Option<i64>>, Vec<Option<i64>>) =
            rows.iter().map(|r| backoff_cols(r.backoff)).unzip();
        // The advisory keys a single submission of each ID takes before it
        // looks for the row (see `Txn::job`), in key order so that batches
        // never deadlock on each other: a single submission of one of these
        // IDs waits for this transaction and then finds the row.
        let mut keys: Vec<i32> = rows.iter().map(|r| key(&[&r.production, &r.job])).collect();
        keys.sort_unstable();
        keys.dedup();
        // One statement: the production's shared lock (as `production`),
        // then its row `FOR SHARE` (the latest committed version, so a
        // cancel that held the lock is seen); only if it takes new jobs,
        // the job locks (the aggregate consumes the CTE before any row is
        // inserted), then the new IDs in order; an ID that exists (or that
        // a concurrent transaction inserts first: the insert waits for it)
        // is left alone and read back by the rules.
        let out = self.query(
            "WITH pl AS MATERIALIZED (
                 SELECT l.locked::text AS locked
                 FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared($18, $19) AS locked
                       OFFSET 0) l),
             prod AS MATERIALIZED (
                 SELECT p.name, p.created_us, p.cancelled_us, p.backoff_base_us,
                        p.backoff_cap_us
                 FROM tenure.productions p, pl WHERE p.name = $20 FOR SHARE OF p),
             open AS MATERIALIZED (
                 SELECT count(*) AS n FROM prod WHERE cancelled_us IS NULL),
             locks AS MATERIALIZED (
                 SELECT pg_catalog.pg_advisory_xact_lock($11::int, k)
                 FROM unnest($12::int[]) AS k, open WHERE open.n > 0 ORDER BY k),
             u AS (
                 SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[],
                         $5::int[], $6::bigint[], $7::text[], $8::bigint[], $9::bigint[],
                         $10::bytea[], $13::bigint[], $14::bool[], $15::bigint[],
                         $16::bigint[], $17::bigint[])
                  WITH ORDINALITY
                  AS u(production, job, digest, len, prio, max, state, created, updated,
                       payload, due, parked, hold, base, cap, ord)),
             ins AS (
             INSERT INTO tenure.jobs (production, job, payload_digest, payload_len, priority,
                 max_attempts, state, attempts, created_us, updated_us, due_us,
                 parked, max_hold_us, backoff_base_us, backoff_cap_us)
             SELECT u.production, u.job, u.digest, u.len, u.prio, u.max, u.state, 0,
                    u.created, u.updated, u.due, u.parked, u.hold, u.base, u.cap
             FROM (SELECT count(*) AS n FROM locks) l, open, u
             WHERE l.n >= 0 AND open.n > 0
               AND NOT EXISTS (SELECT 1 FROM tenure.tombstones t
                               WHERE t.production = u.production AND t.job = u.job)
             ORDER BY u.ord
             ON CONFLICT (production, job) DO NOTHING
             RETURNING production, job, seq),
             pay AS (
             INSERT INTO tenure.payloads (production, job, payload)
             SELECT u.production, u.job, u.payload
             FROM ins JOIN u ON u.production = ins.production AND u.job = ins.job)
             SELECT p.name, p.created_us, p.cancelled_us, p.backoff_base_us, p.backoff_cap_us,
                    open.n > 0, i.job, i.seq
             FROM open LEFT JOIN prod p ON true LEFT JOIN ins i ON true",
            &[
                &prods,
                &job,
                &digest,
                &len,
                &prio,
                &max,
                &state,
                &created,
                &updated,
                &payloads,
                &CLASS_JOB,
                &keys,
                &due,
                &parked,
                &hold,
                &base,
                &cap,
                &CLASS_PROD,
                &pk,
                &production,
            ],
        )?;
        self.held.push((CLASS_PROD, pk, true, self.savepoints));
        let first = out
            .first()
            .ok_or_else(|| Error::Internal("the submission statement gave no row".into()))?;
        let found = match first.get::<_, Option<String>>(0) {
            Some(_) => Some(production_row(first)?),
            None => None,
        };
        if !first.get::<_, bool>(5) {
            return Ok((found, None));
        }
        let mut seqs: HashMap<String, i64> = out
            .iter()
            .filter_map(|r| Some((r.get::<_, Option<String>>(6)?, r.get::<_, Option<i64>>(7)?)))
            .collect();
        Ok((
            found,
            Some(rows.iter().map(|r| seqs.remove(&r.job)).collect()),
        ))
    }

    fn write_batch(
        &mut self,
        rows: &[&JobRow],
        expiries: &[&JobRow],
        facts: &[JobFacts<'_>],
        events: &[NewEvent<'_>],
    ) -> Result<()> {
        use literal::{array, boolean, int, opt_bytea, opt_int, opt_text, text};
        let uuid = |u: Option<Uuid>| opt_text(u.map(|u| u.to_string()).as_deref());
        let col =
            |f: &dyn Fn(&JobRow) -> literal::Lit, ty: &str| array(rows.iter().map(|r| f(r)), ty);
        let n_facts: usize = facts.iter().map(|f| f.facts.len()).sum();
        let fact_col = |f: &dyn Fn(&JobFacts<'_>, usize, &str, &str) -> literal::Lit, ty: &str| {
            array(
                facts.iter().flat_map(|jf| {
                    jf.facts
                        .iter()
                        .enumerate()
                        .map(move |(i, (k, v))| f(jf, i, k, v))
                }),
                ty,
            )
        };
        let ev_col =
            |f: &dyn Fn(&NewEvent<'_>) -> literal::Lit, ty: &str| array(events.iter().map(f), ty);
        let expected = [rows.len(), expiries.len(), n_facts, events.len()].map(|n| int(n as i64));
        let params = [
            // Full row updates.
            col(&|r| int(r.seq), "bigint"),
            col(&|r| text(r.state.as_str()), "text"),
            col(&|r| int(i64::from(r.attempts)), "bigint"),
            col(&|r| uuid(r.claim_id), "text"),
            col(&|r| opt_bytea(r.secret_digest.as_deref()), "bytea"),
            col(&|r| opt_text(r.holder.as_deref()), "text"),
            col(&|r| opt_int(r.claimed_us), "bigint"),
            col(&|r| opt_int(r.expires_us), "bigint"),
            col(&|r| int(r.updated_us), "bigint"),
            col(&|r| opt_text(r.last_error.as_deref()), "text"),
            // Expiry-only updates (renewals).
            array(expiries.iter().map(|r| int(r.seq)), "bigint"),
            array(expiries.iter().map(|r| opt_int(r.expires_us)), "bigint"),
            array(expiries.iter().map(|r| int(r.updated_us)), "bigint"),
            // Facts.
            fact_col(&|jf, _, _, _| text(jf.production), "text"),
            fact_col(&|jf, _, _, _| text(jf.job), "text"),
            fact_col(&|_, i, _, _| int(i as i64), "bigint"),
            fact_col(&|_, _, k, _| text(k), "text"),
            fact_col(&|_, _, _, v| text(v), "text"),
            // Events.
            ev_col(&|e| int(e.at_us), "bigint"),
            ev_col(&|e| text(e.production), "text"),
            ev_col(&|e| opt_text(e.job), "text"),
            ev_col(&|e| text(e.kind.as_str()), "text"),
            ev_col(&|e| opt_text(e.state.map(|s| s.as_str())), "text"),
            ev_col(&|e| uuid(e.claim_id), "text"),
            ev_col(&|e| opt_text(e.holder), "text"),
            ev_col(&|e| opt_int(e.attempt.map(i64::from)), "bigint"),
            ev_col(&|e| opt_int(e.expires_us), "bigint"),
            ev_col(&|e| text(e.detail), "text"),
            int(EVENT_REG),
            int(EVENT_REG_LIMIT),
            col(&|r| opt_int(r.due_us), "bigint"),
            col(&|r| boolean(r.parked), "bool"),
            array(expected, "bigint"),
        ];
        // One statement, sent with the transaction's next request (at the
        // latest its COMMIT). Its data-modifying parts touch disjoint rows
        // (the jobs are distinct, and locked by this transaction). The
        // events register the transaction's lower bound first, as the
        // single insert does (a transaction that already holds one takes a
        // harmless higher one); the sort consumes the whole join, so the
        // lock is taken before any identity value is drawn (see the module
        // docs). If any part touched other than the expected number of
        // rows (an event sequence at its limit writes no event), the final
        // cast fails the statement, and with it the transaction.
        self.defer(
            "tenure_write_batch",
            "bigint[], text[], bigint[], text[], bytea[], text[], bigint[], bigint[], \
             bigint[], text[], bigint[], bigint[], bigint[], text[], text[], bigint[], text[], \
             text[], bigint[], text[], text[], text[], text[], text[], text[], bigint[], \
             bigint[], text[], bigint, bigint, bigint[], bool[], bigint[]",
            concat!(
                event_registration!("$29", "$30"),
                ",
                 upd AS (
                     UPDATE tenure.jobs j SET state = u.state, attempts = u.attempts,
                         claim_id = u.claim_id, secret_digest = u.secret_digest,
                         holder = u.holder, claimed_us = u.claimed_us,
                         expires_us = u.expires_us, updated_us = u.updated_us,
                         last_error = u.last_error, due_us = u.due_us, parked = u.parked
                     FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $31, $32)
                          AS u(seq, state, attempts, claim_id, secret_digest, holder,
                               claimed_us, expires_us, updated_us, last_error, due_us,
                               parked)
                     WHERE j.seq = u.seq
                     RETURNING 1),
                 exp AS (
                     UPDATE tenure.jobs j SET expires_us = u.expires_us,
                         updated_us = u.updated_us
                     FROM unnest($11, $12, $13) AS u(seq, expires_us, updated_us)
                     WHERE j.seq = u.seq
                     RETURNING 1),
                 fct AS (
                     INSERT INTO tenure.facts (production, job, ord, key, value)
                     SELECT * FROM unnest($14, $15, $16, $17, $18)
                     RETURNING 1),
                 ev AS (
                     INSERT INTO tenure.events (at_us, production, job, kind, state,
                         claim_id, holder, attempt, expires_us, detail)
                     SELECT e.at_us, e.production, e.job, e.kind, e.state, e.claim_id,
                            e.holder, e.attempt, e.expires_us, e.detail
                     FROM reg, unnest($19, $20, $21, $22, $23, $24, $25, $26, $27, $28)
                          WITH ORDINALITY AS e(at_us, production, job, kind, state,
                                               claim_id, holder, attempt, expires_us,
                                               detail, ord)
                     ORDER BY e.ord
                     RETURNING 1)
                 SELECT CASE WHEN c.n = $33 THEN 0 ELSE
                     ('tenure: a batched write touched (updates, renewals, facts, events) '
                      || c.n::text || ', not ' || $33::text
                      || '; an event sequence past 2^48 writes no event')::int END
                 FROM (SELECT ARRAY[(SELECT count(*) FROM upd), (SELECT count(*) FROM exp),
                                    (SELECT count(*) FROM fct), (SELECT count(*) FROM ev)]
                              AS n) c"
            ),
            &params,
        )?;
        if !events.is_empty() && self.event_reg.is_none() {
            self.event_reg = Some(self.savepoints);
        }
        Ok(())
    }
    fn live_jobs(
        &mut self,
        production: &str,
        after: Option<(i32, i64)>,
        limit: usize,
        scan: LiveScan,
    ) -> Result<Vec<JobRow>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (prio, seq) = after.unwrap_or((i32::MAX, i64::MIN));
        macro_rules! live {
            ($lock:literal) => {
                concat!(
                    "SELECT ",
                    job_cols!(),
                    " FROM tenure.jobs
                     WHERE production = $1 AND state IN ('requested', 'claimed') AND NOT parked
                       AND (priority < $2 OR (priority = $2 AND seq > $3))
                       AND (state = 'requested' OR expires_us IS NULL OR expires_us <= $5)
                     ORDER BY priority DESC, seq LIMIT $4 ",
                    $lock
                )
            };
        }
        // Held leases (see `LiveScan::Claim`) are filtered by the server, so
        // claim-next neither decodes nor locks them: a renewal never waits
        // for a claim-next that merely looked at its row.
        let (skip_locked, held_after) = match scan {
            LiveScan::Claim { now } => (true, now),
            LiveScan::All => (false, i64::MAX),
        };
        if self.write && !skip_locked && after.is_none() {
            // A coordinator scan (cancelling a production): hold the
            // production exclusively first, so no submission or claim-next
            // on it is in flight while the scan runs.
            self.advisory(CLASS_PROD, key(&[production]), false)?;
        }
        let sql = match (self.write, skip_locked, after.is_some()) {
            (false, _, _) => live!(""),
            (true, true, _) => live!("FOR UPDATE SKIP LOCKED"),
            (true, false, _) => live!("FOR UPDATE"),
        };
        // Without a cursor every priority qualifies: (MAX, MIN) admits
        // priority < MAX and priority = MAX with any seq.
        let rows = self.query(sql, &[&production, &prio, &seq, &limit, &held_after])?;
        jobs(rows)
    }

    fn unpark_due(&mut self, production: &str, up_to_us: i64, scan: LiveScan) -> Result<u64> {
        match scan {
            // Rows another claim-next is unparking (or a coordinator holds)
            // are skipped, as claim-next's own scan skips them.
            LiveScan::Claim { .. } => self.execute(
                "UPDATE tenure.jobs SET parked = false WHERE seq IN (
                     SELECT seq FROM tenure.jobs
                     WHERE production = $1 AND parked AND due_us <= $2
                     FOR UPDATE SKIP LOCKED)",
                &[&production, &up_to_us],
            ),
            LiveScan::All => {
                if self.write {
                    // As the coordinator scan of `live_jobs`: hold the
                    // production exclusively first.
                    self.advisory(CLASS_PROD, key(&[production]), false)?;
                }
                self.execute(
                    "UPDATE tenure.jobs SET parked = false
                     WHERE production = $1 AND parked AND due_us <= $2",
                    &[&production, &up_to_us],
                )
            }
        }
    }

    fn earliest_due(&mut self, production: &str) -> Result<Option<i64>> {
        let rows = self.query(
            "SELECT min(due_us) FROM tenure.jobs WHERE production = $1 AND parked",
            &[&production],
        )?;
        Ok(rows.first().and_then(|r| r.get(0)))
    }

    fn jobs_page(
        &mut self,
        production: &str,
        states: Option<&[Stored]>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JobRow>> {
        let after = after.unwrap_or("");
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        match states {
            None => {
                let rows = self.query(
                    concat!(
                        "SELECT ",
                        job_cols!(),
                        " FROM tenure.jobs WHERE production = $1 AND job > $2
                         ORDER BY job LIMIT $3"
                    ),
                    &[&production, &after, &limit],
                )?;
                jobs(rows)
            }
            Some(states) => {
                let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
                let rows = self.query(
                    concat!(
                        "SELECT ",
                        job_cols!(),
                        " FROM tenure.jobs WHERE production = $1 AND state = ANY($2)
                           AND job > $3 ORDER BY job LIMIT $4"
                    ),
                    &[&production, &names, &after, &limit],
                )?;
                jobs(rows)
            }
        }
    }

    fn all_jobs_page(&mut self, after_seq: i64, limit: usize) -> Result<Vec<JobRow>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.query(
            concat!(
                "SELECT ",
                job_cols!(),
                " FROM tenure.jobs WHERE seq > $1 ORDER BY seq LIMIT $2"
            ),
            &[&after_seq, &limit],
        )?;
        jobs(rows)
    }

    fn append_event(&mut self, ev: &NewEvent<'_>) -> Result<()> {
        let claim = ev.claim_id.map(|u| u.to_string());
        let attempt = ev.attempt.map(i64::from);
        let state = ev.state.map(|s| s.as_str());
        let kind = ev.kind.as_str();
        let p: [&(dyn ToSql + Sync); 10] = [
            &ev.at_us,
            &ev.production,
            &ev.job,
            &kind,
            &state,
            &claim,
            &ev.holder,
            &attempt,
            &ev.expires_us,
            &ev.detail,
        ];
        let rows = if self.event_reg.is_some() {
            self.query(
                "INSERT INTO tenure.events (at_us, production, job, kind, state, claim_id, holder,
                     attempt, expires_us, detail)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING seq",
                &p,
            )?
        } else {
            // The transaction's first event: register the lower bound of
            // its sequence numbers, then allocate, in this one statement.
            // The materialized CTE runs (and takes the lock) when the
            // insert fetches its one row, before the row's identity value
            // is drawn in the projection (see the module docs).
            let rows = self.query(
                concat!(
                    event_registration!("$11", "$12"),
                    "
                     INSERT INTO tenure.events (at_us, production, job, kind, state, claim_id,
                         holder, attempt, expires_us, detail)
                     SELECT $1::bigint, $2::text, $3::text, $4::text, $5::text, $6::text,
                            $7::text, $8::bigint, $9::bigint, $10::text
                     FROM reg RETURNING seq"
                ),
                &[
                    p[0],
                    p[1],
                    p[2],
                    p[3],
                    p[4],
                    p[5],
                    p[6],
                    p[7],
                    p[8],
                    p[9],
                    &EVENT_REG,
                    &EVENT_REG_LIMIT,
                ],
            )?;
            if rows.is_empty() {
                return Err(Error::Store(format!(
                    "the event sequence has reached {EVENT_REG_LIMIT}, the most this backend \
                     can order for tailers"
                )));
            }
            self.event_reg = Some(self.savepoints);
            rows
        };
        if rows.is_empty() {
            return Err(Error::Internal("INSERT ... RETURNING gave no row".into()));
        }
        Ok(())
    }

    fn events(&mut self, production: Option<&str>, after: u64, limit: usize) -> Result<Vec<Event>> {
        // Only sequence numbers below the horizon: every smaller one that
        // will ever commit is visible to this statement (module docs).
        let below = self.event_horizon()?;
        self.events_below(production, after, limit, below)
    }

    fn snapshot_events(&mut self, after: u64, limit: usize) -> Result<Vec<Event>> {
        // The checker: this snapshot's events, no horizon, no restart.
        self.events_below(None, after, limit, i64::MAX)
    }

    fn history_horizon(&mut self) -> Result<u64> {
        let rows = self.query(
            "SELECT value FROM tenure.meta WHERE key = 'history_horizon'",
            &[],
        )?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0)).max(0) as u64)
    }

    /// Only below the commit-order horizon (module docs): a pruned prefix
    /// never has an event with a smaller sequence number commit after it.
    fn oldest_events(&mut self, limit: usize) -> Result<Vec<(u64, i64)>> {
        let below = self.event_horizon()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.query(
            "SELECT seq, at_us FROM tenure.events WHERE seq < $1 ORDER BY seq LIMIT $2",
            &[&below, &limit],
        )?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, i64>(1)))
            .collect())
    }

    fn prune_events_through(&mut self, through: u64) -> Result<u64> {
        let through = i64::try_from(through).unwrap_or(i64::MAX);
        let n = self.execute("DELETE FROM tenure.events WHERE seq <= $1", &[&through])?;
        self.execute(
            "UPDATE tenure.meta SET value = greatest(value, $1) WHERE key = 'history_horizon'",
            &[&through],
        )?;
        Ok(n)
    }

    /// Rows another transaction holds are skipped: the next step takes them.
    fn terminal_jobs_before(&mut self, before_us: i64, limit: usize) -> Result<Vec<JobRow>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.query(
            concat!(
                "SELECT ",
                job_cols!(),
                " FROM tenure.jobs
                 WHERE ended_us < $1
                 ORDER BY ended_us LIMIT $2 FOR UPDATE SKIP LOCKED"
            ),
            &[&before_us, &limit],
        )?;
        jobs(rows)
    }

    fn delete_jobs(&mut self, rows: &[JobRow]) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
        let prods: Vec<&str> = rows.iter().map(|r| r.production.as_str()).collect();
        let names: Vec<&str> = rows.iter().map(|r| r.job.as_str()).collect();
        let n = self.execute("DELETE FROM tenure.jobs WHERE seq = ANY($1)", &[&seqs])?;
        if n != rows.len() as u64 {
            return Err(Error::Internal(format!(
                "deleting {} jobs touched {n} rows",
                rows.len()
            )));
        }
        let facts = self.execute(
            "WITH d AS (SELECT * FROM unnest($1::text[], $2::text[]) AS d(p, j)),
             pay AS (DELETE FROM tenure.payloads x USING d
                     WHERE x.production = d.p AND x.job = d.j)
             DELETE FROM tenure.facts f USING d WHERE f.production = d.p AND f.job = d.j",
            &[&prods, &names],
        )?;
        self.execute(
            "DELETE FROM tenure.nonces n USING unnest($1::text[], $2::text[]) AS d(p, j)
             WHERE n.production = d.p AND n.job = d.j",
            &[&prods, &names],
        )?;
        self.execute(
            "DELETE FROM tenure.claim_requests q USING unnest($1::text[], $2::text[]) AS d(p, j)
             WHERE q.production = d.p AND q.job = d.j",
            &[&prods, &names],
        )?;
        Ok(facts)
    }

    fn insert_tombstones(&mut self, stones: &[Tombstone]) -> Result<()> {
        if stones.is_empty() {
            return Ok(());
        }
        let prods: Vec<&str> = stones.iter().map(|t| t.production.as_str()).collect();
        let names: Vec<&str> = stones.iter().map(|t| t.job.as_str()).collect();
        let digests: Vec<&[u8]> = stones.iter().map(|t| t.payload_digest.as_slice()).collect();
        let prios: Vec<i32> = stones.iter().map(|t| t.priority).collect();
        let maxes: Vec<i64> = stones.iter().map(|t| i64::from(t.max_attempts)).collect();
        let states: Vec<&str> = stones.iter().map(|t| t.state.as_str()).collect();
        let at: Vec<i64> = stones.iter().map(|t| t.pruned_us).collect();
        let holds: Vec<Option<i64>> = stones.iter().map(|t| t.max_hold_us).collect();
        let (bases, caps): (Vec<Option<i64>>, Vec<Option<i64>>) =
            stones.iter().map(|t| backoff_cols(t.backoff)).unzip();
        self.execute(
            "INSERT INTO tenure.tombstones (production, job, payload_digest, priority,
                 max_attempts, state, pruned_us, max_hold_us, backoff_base_us, backoff_cap_us)
             SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::int[], $5::bigint[],
                                  $6::text[], $7::bigint[], $8::bigint[], $9::bigint[],
                                  $10::bigint[])
             ON CONFLICT (production, job) DO UPDATE SET
                 payload_digest = excluded.payload_digest, priority = excluded.priority,
                 max_attempts = excluded.max_attempts, state = excluded.state,
                 pruned_us = excluded.pruned_us, max_hold_us = excluded.max_hold_us,
                 backoff_base_us = excluded.backoff_base_us,
                 backoff_cap_us = excluded.backoff_cap_us",
            &[
                &prods, &names, &digests, &prios, &maxes, &states, &at, &holds, &bases, &caps,
            ],
        )?;
        Ok(())
    }

    fn tombstone(&mut self, production: &str, job: &str) -> Result<Option<Tombstone>> {
        let rows = self.query(
            "SELECT production, job, payload_digest, priority, max_attempts, state, pruned_us,
                 max_hold_us, backoff_base_us, backoff_cap_us
             FROM tenure.tombstones WHERE production = $1 AND job = $2",
            &[&production, &job],
        )?;
        rows.first()
            .map(|r| {
                let state: String = r.get(5);
                Ok(Tombstone {
                    production: r.get(0),
                    job: r.get(1),
                    payload_digest: r.get(2),
                    priority: r.get(3),
                    max_attempts: u32_col(r, 4)?,
                    state: Stored::parse(&state)
                        .ok_or_else(|| bad(format!("tombstone state {state:?}")))?,
                    pruned_us: r.get(6),
                    max_hold_us: r.get(7),
                    backoff: backoff_from_cols(r.get(8), r.get(9))?,
                })
            })
            .transpose()
    }

    fn prune_tombstones(&mut self, before_us: i64, limit: usize) -> Result<u64> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.execute(
            "DELETE FROM tenure.tombstones WHERE (production, job) IN (
                 SELECT production, job FROM tenure.tombstones WHERE pruned_us < $1
                 ORDER BY pruned_us LIMIT $2 FOR UPDATE SKIP LOCKED)",
            &[&before_us, &limit],
        )
    }

    fn delete_production_events(&mut self, production: &str, limit: usize) -> Result<u64> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.execute(
            "DELETE FROM tenure.events WHERE seq IN (
                 SELECT seq FROM tenure.events WHERE production = $1
                   AND seq < (SELECT max(seq) FROM tenure.events)
                 ORDER BY seq LIMIT $2)",
            &[&production, &limit],
        )
    }

    fn delete_production_tombstones(&mut self, production: &str) -> Result<u64> {
        self.execute(
            "DELETE FROM tenure.tombstones WHERE production = $1",
            &[&production],
        )
    }

    fn delete_production(&mut self, production: &str) -> Result<()> {
        self.execute(
            "DELETE FROM tenure.productions WHERE name = $1",
            &[&production],
        )?;
        Ok(())
    }

    fn insert_facts(&mut self, production: &str, job: &str, facts: &[(&str, &str)]) -> Result<()> {
        for (i, (k, v)) in facts.iter().enumerate() {
            let ord = i as i64;
            self.execute(
                "INSERT INTO tenure.facts (production, job, ord, key, value)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&production, &job, &ord, k, v],
            )?;
        }
        Ok(())
    }

    fn facts(&mut self, production: &str, job: Option<&str>) -> Result<Vec<PublishedFact>> {
        let rows = match job {
            Some(j) => self.query(
                "SELECT production, job, key, value FROM tenure.facts
                 WHERE production = $1 AND job = $2 ORDER BY ord",
                &[&production, &j],
            )?,
            None => self.query(
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

    fn claim_requests(
        &mut self,
        production: &str,
        request_ids: &[String],
    ) -> Result<Vec<RequestRow>> {
        let rows = self.query(
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

    fn insert_claim_requests(&mut self, rows: &[RequestRow]) -> Result<bool> {
        let Some(first) = rows.first() else {
            return Ok(true);
        };
        let ids: Vec<&str> = rows.iter().map(|r| r.request_id.as_str()).collect();
        let jobs: Vec<&str> = rows.iter().map(|r| r.job.as_str()).collect();
        let claims: Vec<String> = rows.iter().map(|r| r.claim_id.to_string()).collect();
        let secrets: Vec<&[u8]> = rows.iter().map(|r| r.secret_digest.as_slice()).collect();
        let args: Vec<&[u8]> = rows.iter().map(|r| r.args_digest.as_slice()).collect();
        let times: Vec<i64> = rows.iter().map(|r| r.created_us).collect();
        let n = self.execute(
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

    fn last_claim_event(
        &mut self,
        production: &str,
        job: &str,
        claim_id: &Uuid,
    ) -> Result<Option<Event>> {
        let rows = self.query(
            "SELECT seq, at_us, production, job, kind, state, claim_id, holder, attempt,
                    expires_us, detail
             FROM tenure.events WHERE production = $1 AND job = $2 AND claim_id = $3
             ORDER BY seq DESC LIMIT 1",
            &[&production, &job, &claim_id.to_string()],
        )?;
        rows.first().map(event_row).transpose()
    }

    fn insert_nonce(
        &mut self,
        nonce: &Uuid,
        production: &str,
        job: &str,
        claim_id: &Uuid,
        at_us: i64,
    ) -> Result<bool> {
        let n = self.execute(
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

    fn earliest_expiry(&mut self, production: &str) -> Result<Option<i64>> {
        let rows = self.query(
            "SELECT min(expires_us) FROM tenure.jobs WHERE production = $1 AND state = 'claimed'",
            &[&production],
        )?;
        Ok(rows.first().and_then(|r| r.get::<_, Option<i64>>(0)))
    }

    fn notify_work(&mut self, production: &str) -> Result<()> {
        let plain = production
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:@+-".contains(&b));
        if !plain {
            self.execute(
                "SELECT pg_catalog.pg_notify('tenure_work', $1)",
                &[&production],
            )?;
        } else if !self.notify.iter().any(|p| p == production) {
            self.notify.push(production.to_owned());
        }
        Ok(())
    }

    fn savepoint(&mut self) -> Result<()> {
        self.batch("SAVEPOINT op")?;
        self.savepoints += 1;
        Ok(())
    }

    fn rollback_to_savepoint(&mut self) -> Result<()> {
        // Writes deferred since the savepoint are dropped with it.
        self.pending.clear();
        self.batch("ROLLBACK TO SAVEPOINT op; RELEASE SAVEPOINT op")?;
        self.failed = false;
        // A lock taken after the savepoint was released with it (and the
        // events it covered are gone): the next event registers again.
        if self.event_reg.is_some_and(|d| d >= self.savepoints) {
            self.event_reg = None;
        }
        let depth = self.savepoints;
        self.held.retain(|&(_, _, _, d)| d < depth);
        self.savepoints -= 1;
        Ok(())
    }

    fn release_savepoint(&mut self) -> Result<()> {
        self.batch("RELEASE SAVEPOINT op")?;
        // The parent (sub)transaction now holds the registration.
        if self.event_reg.is_some_and(|d| d >= self.savepoints) {
            self.event_reg = Some(self.savepoints - 1);
        }
        let depth = self.savepoints;
        for h in self.held.iter_mut().filter(|h| h.3 >= depth) {
            h.3 = depth - 1;
        }
        self.savepoints -= 1;
        Ok(())
    }

    fn commit_checked(
        &mut self,
        mark: i64,
        deadline: Option<i64>,
    ) -> Result<Option<std::result::Result<(), i64>>> {
        if !self.pool.server_clock || !self.open || self.failed || self.conn.is_none() {
            return Ok(None);
        }
        // Numbers only: nothing to quote. The block raises PRECOMMIT_REFUSED
        // with the sample when the rule refuses; COMMIT then never runs.
        let deadline = deadline.map_or_else(|| "NULL".to_owned(), |d| d.to_string());
        let sql = format!(
            "DO $tenure$ DECLARE s bigint :=
                 floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
             BEGIN
                 IF s < {mark} OR s >= coalesce({deadline}::bigint, s + 1) THEN
                     RAISE EXCEPTION USING ERRCODE = '{PRECOMMIT_REFUSED}', MESSAGE = s::text;
                 END IF;
                 INSERT INTO tenure.mark_log (value) VALUES (s);
             END $tenure$; {notify}COMMIT",
            notify = self.take_notifies()
        );
        let sql = format!("{}{sql}", std::mem::take(&mut self.pending));
        self.open = false;
        let Some(mut conn) = self.conn.take() else {
            return Ok(None);
        };
        self.mark_written();
        crate::stats::round_trip();
        match conn.client.batch_execute(&sql) {
            Ok(()) => {
                self.pool.give_back(conn);
                self.after_commit();
                Ok(Some(Ok(())))
            }
            Err(e) => {
                let refused = e
                    .as_db_error()
                    .filter(|d| d.code().code() == PRECOMMIT_REFUSED)
                    .and_then(|d| d.message().parse::<i64>().ok());
                if conn.client.batch_execute("ROLLBACK").is_ok() {
                    self.pool.give_back(conn);
                }
                match refused {
                    Some(pre) => Ok(Some(Err(pre))),
                    None => Err(map_err(e)),
                }
            }
        }
    }

    fn commit_with_mark(&mut self, mark: Option<i64>) -> Result<()> {
        let Some(m) = mark else {
            return self.commit();
        };
        if !self.open || self.failed {
            return self.commit();
        }
        // Numbers only: nothing to quote. One round trip for both.
        let notify = self.take_notifies();
        self.mark_written();
        self.finish(&format!(
            "INSERT INTO tenure.mark_log (value) VALUES ({m}); {notify}COMMIT"
        ))
    }

    fn commit(&mut self) -> Result<()> {
        if !self.open {
            return Err(Error::Internal("commit of a finished transaction".into()));
        }
        if self.failed {
            let _ = self.finish("ROLLBACK");
            return Err(Error::Internal(
                "commit of a transaction whose statement failed; rolled back".into(),
            ));
        }
        let sql = format!("{}COMMIT", self.take_notifies());
        self.finish(&sql)
    }

    fn rollback(&mut self) -> Result<()> {
        self.finish("ROLLBACK")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db?x=1"),
            "postgres://u:***@h:5432/db?x=1"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("postgresql://h/db"), "postgresql://h/db");
    }

    #[test]
    fn event_registration_keys_match_the_pg_locks_filter() {
        // pg_locks shows a bigint key as classid = high 32 bits, objid = low.
        let lo = (EVENT_REG >> 32) as u32;
        let hi = ((EVENT_REG | (EVENT_REG_LIMIT - 1)) >> 32) as u32;
        assert_eq!((lo, hi), (0x5445_0000, 0x5445_ffff));
        assert!(EVENT_HORIZON_REGISTERED.contains(&format!("BETWEEN {lo} AND {hi}")));
        // n is recovered as (classid & 0xffff) << 32 | objid.
        let n: i64 = 0x1234_5678_9abc;
        let key = EVENT_REG | n;
        let (classid, objid) = ((key >> 32) as u32, key as u32);
        assert_eq!((i64::from(classid) & 0xffff) << 32 | i64::from(objid), n);
        // Disjoint from the other advisory keys: the (int4, int4) job and
        // production locks share the classid range but have objsubid 2;
        // the schema lock is a bigint key outside the range.
        assert!(EVENT_HORIZON_REGISTERED.contains("l.objsubid = 1"));
        assert!(!(lo..=hi).contains(&((SCHEMA_LOCK >> 32) as u32)));
    }

    /// The savepoint bookkeeping of the event registration against a live
    /// server (`TENURE_TEST_BACKEND=postgres`, `TENURE_TEST_PG_URL` a
    /// maintenance URL; skipped otherwise): rolling back to a savepoint
    /// taken before the registration releases the lock and the next event
    /// registers again; releasing the savepoint keeps it; the horizon seen
    /// by another session stops at the registered bound.
    #[test]
    fn event_registration_follows_savepoints() {
        if std::env::var("TENURE_TEST_BACKEND").map_or(true, |b| b != "postgres") {
            eprintln!("skipped: set TENURE_TEST_BACKEND=postgres and TENURE_TEST_PG_URL");
            return;
        }
        let admin = std::env::var("TENURE_TEST_PG_URL").expect("TENURE_TEST_PG_URL");
        let name = format!("u_evreg_{}", std::process::id());
        let (head, query) = admin.split_at(admin.find('?').unwrap_or(admin.len()));
        let url = format!("{}/{name}{query}", &head[..head.rfind('/').unwrap()]);
        let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let r = std::panic::catch_unwind(|| {
            let (b, _) = PgBackend::open(&url, Duration::from_secs(5), true).unwrap();
            let mut other = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let mut held = || -> i64 {
                other
                    .query_one(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
                         AND objsubid = 1 AND classid::bigint BETWEEN 1413808128 AND 1413873663",
                        &[],
                    )
                    .unwrap()
                    .get(0)
            };
            let ev = NewEvent {
                at_us: 1,
                production: "p",
                job: Some("j"),
                kind: EventKind::Submitted,
                state: Some(Stored::Requested),
                claim_id: None,
                holder: None,
                attempt: None,
                expires_us: None,
                detail: "",
            };
            let mut t = b.begin_write().unwrap();
            t.savepoint().unwrap();
            t.append_event(&ev).unwrap();
            assert_eq!(held(), 1);
            t.rollback_to_savepoint().unwrap();
            assert_eq!(held(), 0, "the savepoint's rollback released the lock");
            t.savepoint().unwrap();
            t.append_event(&NewEvent { at_us: 2, ..ev }).unwrap();
            assert_eq!(held(), 1, "the next event registered again");
            t.release_savepoint().unwrap();
            t.savepoint().unwrap();
            t.append_event(&ev).unwrap();
            t.rollback_to_savepoint().unwrap();
            assert_eq!(held(), 1, "registered outside this savepoint: still held");
            // Another session's listing stops below the registered bound
            // (nothing is listable), and sees the events once committed.
            let mut r = b.begin_read().unwrap();
            assert!(r.events(None, 0, 100).unwrap().is_empty());
            r.rollback().unwrap();
            t.commit().unwrap();
            assert_eq!(held(), 0);
            let mut r = b.begin_read().unwrap();
            let kept: Vec<i64> = r
                .events(None, 0, 100)
                .unwrap()
                .iter()
                .map(|e| e.at_us)
                .collect();
            assert_eq!(kept, vec![2], "only the released savepoint's event");
            r.rollback().unwrap();
        });
        let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    }
}
