//! The PostgreSQL backend (cargo feature `postgres`, on by default): the same
//! authority for workers on many machines that share one server.
//!
//! An address starting with `postgres://` or `postgresql://` opens this
//! backend (see [`crate::Authority::open`]); the rules in [`crate::rules`] are
//! the same code as on SQLite, only the primitive reads and writes differ.
//!
//! # Files
//!
//! - this file: opening ([`PgBackend::open`]), the [`Backend`] impl, the
//!   error mapping and the advisory-lock keys;
//! - [`schema`]: the current layout, the one source of the DDL, and the
//!   guarded creation; [`migrate`]: the steps that bring an older store
//!   forward;
//! - [`pool`]: connections and the bookkeeping transactions a commit leaves
//!   due; [`sql`]: the statement text, apart from the Rust that binds and
//!   decodes it;
//! - [`txn`]: [`txn::PgTxn`], its machinery in `txn/mod.rs` and the reads
//!   and writes by area (`claim`, `jobs`, `events`, `productions`,
//!   `records`, `retention`; `rows` decodes);
//! - [`listen`] (the work doorbell), [`literal`], [`retry`], [`tls`],
//!   [`url`].
//!
//! # Schema
//!
//! Every table lives in the schema `tenure` of the database named by the
//! URL (the layout: [`schema::SCHEMA`]). `tenure.meta` holds the row
//! `('schema_version', n)`, the PostgreSQL counterpart of SQLite's
//! `PRAGMA user_version`. Opening reads that row first, without writing
//! anything: a newer version is refused with [`Error::SchemaTooNew`]
//! untouched. A missing schema is created at the current layout, and an
//! older store (schema 2 or later) is migrated forward by the steps of
//! [`migrate`], in one transaction under a transaction-level advisory lock,
//! so concurrent first opens from many hosts do it exactly once. A `tenure`
//! schema with tables but without the version row is refused as "not a
//! tenure store". Identifiers are stored `COLLATE "C"` so that listings
//! page in byte order, exactly like SQLite.
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
//! - `lock_timeout` and `statement_timeout` are set once per pooled
//!   connection from the busy timeout (lock: the busy timeout, at least 1 ms;
//!   statement: the busy timeout plus 30 s; a read transaction takes the
//!   server's default `lock_timeout` for itself). SQLSTATE 55P03 (lock not available), 57014 (query
//!   cancelled), 40P01 (deadlock) and 40001 (serialization failure) map to
//!   [`Error::Busy`], and so does 53300 (too many connections) once a new
//!   connection was refused for the whole busy timeout; every other
//!   failure, including a lost connection (and 57P01, 57P02, 57P03, class
//!   08), is [`Error::Store`]. Which of these an idempotent call retries:
//!   [`retry`].
//!
//! Reads run `REPEATABLE READ READ ONLY`: one consistent snapshot.
//!
//! # Round trips
//!
//! A transition or claim-next that succeeds takes two requests (see
//! docs/postgres.md, "Round trips"): `BEGIN` with its settings and one
//! statement that locks, samples the clock after the locks, and reads the
//! mark and what the rules decide on
//! ([`Txn::lock_jobs_sampled`], [`Txn::claim_start`]: calls of statements
//! prepared once per connection, their rows decoded from text), a write
//! transaction's `BEGIN` waiting for its first request
//! ([`PgTxn::begin`]); and the deferred writes ([`PgTxn::defer`]: calls of
//! statements prepared once per connection, with [`literal`] arguments)
//! with the pre-commit check and `COMMIT`. A submission's insert
//! ([`Txn::insert_new_jobs_into`]) is a statement of its own, after the
//! `BEGIN`'s request. Any other statement sends the deferred writes first,
//! so a transaction always reads its own writes.
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
//! it guards (by the pre-commit check's statement, or in the `COMMIT`'s
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
//!   transaction's own registration is ignored. A statistics read needs the
//!   horizon of its own snapshot ([`Txn::flow_horizon`]): its first request
//!   reads (1) and (2) in a `READ COMMITTED` transaction of its own and
//!   commits it before the read transaction's `BEGIN` and first statement
//!   (no extra round trip; [`Backend::begin_read_at_horizon`]).
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

#[macro_use]
mod sql;
mod listen;
mod literal;
mod migrate;
mod pool;
mod retry;
mod schema;
mod tls;
mod txn;
mod url;

pub(crate) use url::redact;

use super::{Backend, Txn, SCHEMA_VERSION};
use crate::error::{bounded, Error, Result};
use pool::Pool;
use postgres::error::SqlState;
use sha2::{Digest, Sha256};
use sql::BEGIN_READ;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use txn::PgTxn;

/// Advisory-lock key (bigint space) guarding schema creation.
const SCHEMA_LOCK: i64 = 0x7465_6e75_7265_0001;
/// Advisory-lock classes (int4, int4 space).
const CLASS_JOB: i32 = 0x5445_4e01;
const CLASS_PROD: i32 = 0x5445_4e02;
const CLASS_PROD_CREATE: i32 = 0x5445_4e03;

fn map_err(e: postgres::Error) -> Error {
    if let Some(code) = e.code() {
        if retry::lock_refused(code) {
            return retry::busy(format_args!(
                "the server could not take a lock in time ({})",
                code.code()
            ));
        }
        if *code == SqlState::QUERY_CANCELED {
            return Error::Busy(format!(
                "the server cancelled the statement at its timeout ({})",
                code.code()
            ));
        }
    }
    if retry::is_lost(&e) {
        return retry::lost(format_args!("PostgreSQL: {e}"));
    }
    if let Some(db) = e.as_db_error() {
        if let Some(production) = guard_refusal(db.message(), sql::GATE_GUARD_REFUSED) {
            return Error::Busy(format!(
                "a gate of production {production:?} was set while this claim ran; \
                 nothing was claimed, retry"
            ));
        }
        if let Some(job) = guard_refusal(db.message(), sql::SUBMIT_GUARD_REFUSED) {
            return Error::Busy(format!(
                "job {job} was pruned while this submission ran; nothing was submitted, retry"
            ));
        }
        return Error::Store(format!(
            "PostgreSQL error {}: {}",
            db.code().code(),
            db.message()
        ));
    }
    Error::Store(format!("PostgreSQL: {e}"))
}

/// What a guard that refused by the failing cast of `'<marker> <what>'`
/// names (`what`), if `message` is that cast's error.
fn guard_refusal<'m>(message: &'m str, marker: &str) -> Option<&'m str> {
    let quoted = format!("\"{marker} ");
    let at = message.find(&quoted)?;
    Some(message[at + quoted.len()..].trim_end_matches('"'))
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

/// The PostgreSQL store behind an authority.
pub(crate) struct PgBackend {
    pool: Arc<Pool>,
    /// The work doorbell's listener, started by the first wait.
    bell: Mutex<Option<Arc<crate::doorbell::LocalBell>>>,
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
        let pool = Pool::new(config, tls, busy, server_clock);
        let mut conn = pool.connect()?;
        let found = match schema::stored_version(&mut conn.client)? {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(Error::SchemaTooNew {
                    found: v,
                    supported: SCHEMA_VERSION,
                })
            }
            Some(v) if v == SCHEMA_VERSION => v,
            _ => schema::create_or_migrate(&mut conn.client, &pool)?,
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

impl Backend for PgBackend {
    fn begin_write(&self) -> Result<Box<dyn Txn>> {
        let start = std::time::Instant::now();
        // The timeouts and `standard_conforming_strings` are the
        // connection's own (see `Pool::connect`).
        let t = PgTxn::begin(&self.pool, "BEGIN ISOLATION LEVEL READ COMMITTED", true)?;
        crate::stats::record_lock_wait(start.elapsed());
        Ok(t)
    }
    fn begin_read(&self) -> Result<Box<dyn Txn>> {
        // A read waits for a table lock as long as its statement may run
        // (the server's `lock_timeout`, not the pool's).
        PgTxn::begin(&self.pool, BEGIN_READ, false).map(|t| t as Box<dyn Txn>)
    }
    fn begin_read_at_horizon(&self) -> Result<Box<dyn Txn>> {
        PgTxn::begin_read_at_horizon(&self.pool).map(|t| t as Box<dyn Txn>)
    }
    fn fold_counts(&self) -> Result<()> {
        // Without JIT, as every pooled connection (see `Pool::connect`): a
        // fold of many rows would otherwise be compiled, which takes longer
        // than the fold.
        let mut t = PgTxn::begin(&self.pool, "BEGIN ISOLATION LEVEL READ COMMITTED", false)?;
        let moved = txn::fold_counts(&mut t)?;
        t.commit()?;
        txn::after_fold(&self.pool, moved);
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::sql::{EVENT_HORIZON_REGISTERED, EVENT_REG, EVENT_REG_LIMIT};
    use super::*;
    use crate::model::EventKind;
    use crate::store::{NewEvent, Stored};

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

    /// Runs `test` with the URL of a database of its own on a live server
    /// (`TENURE_TEST_BACKEND=postgres`, `TENURE_TEST_PG_URL` a maintenance
    /// URL; skipped otherwise), named `prefix` and this process's ID,
    /// created empty and dropped afterwards, whatever the test did.
    pub(super) fn with_database(prefix: &str, test: impl FnOnce(&str) + std::panic::UnwindSafe) {
        if std::env::var("TENURE_TEST_BACKEND").map_or(true, |b| b != "postgres") {
            eprintln!("skipped: set TENURE_TEST_BACKEND=postgres and TENURE_TEST_PG_URL");
            return;
        }
        let admin = std::env::var("TENURE_TEST_PG_URL").expect("TENURE_TEST_PG_URL");
        let name = format!("{prefix}_{}", std::process::id());
        let (head, query) = admin.split_at(admin.find('?').unwrap_or(admin.len()));
        let url = format!("{}/{name}{query}", &head[..head.rfind('/').unwrap()]);
        let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let r = std::panic::catch_unwind(|| test(&url));
        let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    }

    /// The savepoint bookkeeping of the event registration against a live
    /// server (see [`with_database`]): rolling back to a savepoint
    /// taken before the registration releases the lock and the next event
    /// registers again; releasing the savepoint keeps it; the horizon seen
    /// by another session stops at the registered bound.
    #[test]
    fn event_registration_follows_savepoints() {
        with_database("u_evreg", |url| {
            let (b, _) = PgBackend::open(url, Duration::from_secs(5), true).unwrap();
            let mut other = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let mut held = || -> i64 {
                other
                    .query_one(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
                         AND objsubid = 1 AND classid::bigint BETWEEN 1413808128 AND 1413873663
                         AND database = (SELECT oid FROM pg_database
                                         WHERE datname = current_database())",
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
                since_us: None,
                lapsed_us: None,
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
    }

    /// The plans of the locked reads and of the write statement's shapes,
    /// against a live server (see [`with_database`]):
    /// a pooled connection runs without JIT, so their generic plans (see
    /// `txn::GENERIC_ON`) are never compiled at a call, even priced above
    /// the server's JIT threshold (a generic plan with a `LIMIT` parameter
    /// is priced for a tenth of the production's queue: a 550 000-job
    /// backlog passes the default threshold); and each reads by index,
    /// planned on an empty jobs table as on one of 5 000 jobs (the claim
    /// through `jobs_ready` and `jobs_parked`). A plain session of the
    /// same server, on the same plan, would compile it (when the server
    /// has JIT at all).
    #[test]
    fn locked_reads_and_writes_plan_once_on_indexes_and_never_compile() {
        use super::sql::{
            SUBMIT_GUARD, SUBMIT_GUARD_NAME, SUBMIT_GUARD_TYPES, WRITE_BATCHES, WRITE_BATCH_TYPES,
            WRITE_ONES, WRITE_ONE_TYPES,
        };
        use super::txn::claim::{CLAIM_FIRST, LOCK_JOB, LOCK_JOB_BARE_STMT};
        use super::txn::GENERIC_ON;
        with_database("u_plans", |url| {
            let auth = crate::Authority::open(url, &crate::Options::new()).unwrap();
            auth.create_production("p").unwrap();
            let (b, _) = PgBackend::open(url, Duration::from_secs(5), true).unwrap();
            let mut conn = b.pool.take().unwrap();
            let shown: String = conn.client.query_one("SHOW jit", &[]).unwrap().get(0);
            assert_eq!(shown, "off", "a pooled connection runs without JIT");
            let mut plain = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let jit_here = plain
                .query_one("SELECT pg_catalog.pg_jit_available()", &[])
                .unwrap()
                .get::<_, bool>(0);
            let mut calls = vec![
                (CLAIM_FIRST, "1, 2, 'p', 1, NULL".to_owned()),
                (LOCK_JOB, "'p', 'j0-0', NULL".to_owned()),
                (LOCK_JOB_BARE_STMT, "'p', 'j0-0', NULL".to_owned()),
            ];
            // Each shape of the write statement, in both forms, with no
            // rows: an empty array for each array parameter, 0 for each
            // number, NULL for any other scalar.
            let empty = |types: &str| -> String {
                let args: Vec<String> = types
                    .split(',')
                    .map(|t| match t.trim() {
                        "bigint" => "0".to_owned(),
                        array if array.ends_with("[]") => format!("'{{}}'::{array}"),
                        _ => "NULL".to_owned(),
                    })
                    .collect();
                args.join(", ")
            };
            for (shapes, types) in [
                (WRITE_BATCHES, WRITE_BATCH_TYPES),
                (WRITE_ONES, WRITE_ONE_TYPES),
            ] {
                for (name, body) in shapes {
                    calls.push(((name, types, body), empty(types)));
                }
            }
            calls.push((
                (SUBMIT_GUARD_NAME, SUBMIT_GUARD_TYPES, SUBMIT_GUARD),
                "'{1, 2, 3}', 'p'".to_owned(),
            ));
            // Planned on an empty jobs table (where a scan of the table
            // is the cheaper plan for the server), then on 5 000 jobs.
            for seeded in [false, true] {
                if seeded {
                    for k in 0..5 {
                        let specs: Vec<crate::JobSpec> = (0..1000)
                            .map(|j| crate::JobSpec::new(format!("j{k}-{j}"), b"x".to_vec()))
                            .collect();
                        auth.submit_many("p", &specs).unwrap();
                    }
                }
                plain.batch_execute("ANALYZE tenure.jobs").unwrap();
                for ((stmt, types, body), args) in &calls {
                    let explain = |client: &mut postgres::Client| -> String {
                        client
                            .batch_execute(&format!("PREPARE {stmt} ({types}) AS {body}"))
                            .unwrap();
                        let sql = format!(
                            "BEGIN; {GENERIC_ON} SET LOCAL jit_above_cost = 0; \
                             EXPLAIN (FORMAT JSON) EXECUTE {stmt}({args})"
                        );
                        let msgs = client.simple_query(&sql).unwrap();
                        client
                            .batch_execute(&format!("ROLLBACK; DEALLOCATE {stmt}"))
                            .unwrap();
                        msgs.iter()
                            .filter_map(|m| match m {
                                postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                                _ => None,
                            })
                            .collect()
                    };
                    let pooled = explain(&mut conn.client);
                    assert!(!pooled.contains("\"JIT\""), "{stmt} compiled: {pooled}");
                    assert!(
                        !pooled.contains("Seq Scan"),
                        "{stmt} scans a table ({seeded}): {pooled}"
                    );
                    if seeded && *stmt == CLAIM_FIRST.0 {
                        for index in ["jobs_ready", "jobs_parked"] {
                            assert!(pooled.contains(index), "{stmt} without {index}: {pooled}");
                        }
                    }
                    if jit_here {
                        let compiled = explain(&mut plain);
                        assert!(compiled.contains("\"JIT\""), "the control: {compiled}");
                    }
                }
            }
            b.pool.give_back(conn);
        });
    }
}
