//! Connections: the pool of idle connections with their prepared
//! statements, and the bookkeeping transactions a commit leaves due (the
//! claim floor, the mark log's pruning).

use super::sql::{PRUNE_MARK_LOG, RAISE_CLAIM_FLOOR};
use super::{key, map_err, tls, CLASS_PROD};
use crate::error::Result;
use postgres::types::ToSql;
use postgres::{Client, Row, Statement};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(super) const MAX_IDLE: usize = 16;
/// The longest pause between two connection attempts refused for want of
/// a free connection slot (see [`Pool::connect`]).
pub(super) const NO_SLOT_PAUSE_MAX: Duration = Duration::from_millis(100);

/// Marks appended between two prunings of the mark log (per pool, see
/// [`Pool::prune_mark_log`]).
pub(super) const MARK_PRUNE_EVERY: u64 = 1024;
/// Every this many prunings of a pool is a full sweep of the mark log.
pub(super) const MARK_SWEEP_EVERY: u64 = 64;
/// Claim-next scans between two raises of a production's claim floor
/// (per pool, see [`Pool::raise_claim_floor`]).
pub(super) const FLOOR_EVERY: u64 = 256;
/// How long a floor raise waits for the production's lock (ms) before it
/// gives up until its next turn.
pub(super) const FLOOR_LOCK_MS: u32 = 50;

pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) stmts: HashMap<&'static str, Statement>,
    /// Statements prepared with SQL `PREPARE` (see `PgTxn::defer`).
    pub(super) prepared: std::collections::HashSet<&'static str>,
}

impl Conn {
    pub(super) fn stmt(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        crate::stats::round_trip();
        let s = self.client.prepare(sql).map_err(map_err)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }
    pub(super) fn query(
        &mut self,
        sql: &'static str,
        p: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>> {
        let st = self.stmt(sql)?;
        crate::stats::round_trip();
        self.client.query(&st, p).map_err(map_err)
    }
    pub(super) fn execute(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let st = self.stmt(sql)?;
        crate::stats::round_trip();
        self.client.execute(&st, p).map_err(map_err)
    }
}

pub(super) struct Pool {
    pub(super) config: postgres::Config,
    /// TLS mode and verification from the URL's `sslmode` / `sslrootcert` (see [`tls`]).
    pub(super) tls: tls::Tls,
    pub(super) busy: Duration,
    pub(super) server_clock: bool,
    pub(super) idle: Mutex<Vec<Conn>>,
    /// Claim-next scans begun through this pool (the claim floor's cadence).
    pub(super) claim_scans: AtomicU64,
    /// Marks this pool appended to the mark log (the log's pruning cadence).
    pub(super) marks_written: AtomicU64,
    /// The mark log's rows below this value were deleted by this pool's
    /// last pruning (0: none yet); see [`Pool::prune_mark_log`].
    pub(super) marks_pruned_below: AtomicI64,
    /// Productions whose last claim-next through this pool found no gate
    /// row (see [`Pool::seems_ungated`]).
    ungated: Mutex<HashSet<String>>,
}

/// The most productions [`Pool::seems_ungated`] remembers; past it the
/// set starts empty again.
const UNGATED_HINTS: usize = 4096;

impl Pool {
    /// A pool of no connections yet, connecting with `config` and `tls`.
    pub(super) fn new(
        config: postgres::Config,
        tls: tls::Tls,
        busy: Duration,
        server_clock: bool,
    ) -> Pool {
        Pool {
            config,
            tls,
            busy,
            server_clock,
            idle: Mutex::new(Vec::new()),
            claim_scans: AtomicU64::new(0),
            marks_written: AtomicU64::new(0),
            marks_pruned_below: AtomicI64::new(0),
            ungated: Mutex::new(HashSet::new()),
        }
    }

    /// Whether the last claim-next of `production` through this pool found
    /// it without a gate row: a hint only (another process may set a gate
    /// at any time), which lets a claim-next leave out the read of the
    /// gate's leases, read again when the locked read finds a gate row
    /// after all (see `claim::claim_start`).
    pub(super) fn seems_ungated(&self, production: &str) -> bool {
        self.ungated
            .lock()
            .map(|s| s.contains(production))
            .unwrap_or(false)
    }

    /// What a claim-next's locked read found of `production`'s gate row.
    pub(super) fn found_gated(&self, production: &str, gated: bool) {
        let Ok(mut s) = self.ungated.lock() else {
            return;
        };
        if gated {
            s.remove(production);
        } else if !s.contains(production) {
            if s.len() >= UNGATED_HINTS {
                s.clear();
            }
            s.insert(production.to_owned());
        }
    }

    /// A new connection, with the pool's session settings (`lock_timeout`
    /// and `statement_timeout` from [`Pool::timeouts`],
    /// `standard_conforming_strings = on`, `jit = off`). A server out of connection slots (`53300`) is
    /// asked again, 5 ms, 10 ms, ... (at most [`NO_SLOT_PAUSE_MAX`]) apart,
    /// until the busy timeout has passed; then the refusal is
    /// [`crate::Error::Busy`].
    pub(super) fn connect(&self) -> Result<Conn> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(5);
        let client = loop {
            crate::stats::round_trip();
            match tls::connect(&self.config, &self.tls) {
                Err(crate::Error::Busy(_)) if start.elapsed() < self.busy => {
                    // The last pause ends at the timeout: one more ask then.
                    std::thread::sleep(pause.min(self.busy.saturating_sub(start.elapsed())));
                    pause = (pause * 2).min(NO_SLOT_PAUSE_MAX);
                }
                r => break r?,
            }
        };
        // The settings every transaction of the pool runs with, once per
        // connection (a read transaction puts `lock_timeout` back to the
        // server's default for itself, see `PgBackend::begin_read`); the
        // text rows of simple-query reads give bytes in hex (see
        // `rows::Cols`). No JIT: every statement here reads or writes a
        // few rows through an index, and a generic plan is priced for a
        // tenth of its `LIMIT`'s table, which would compile the plan at
        // each call (30–50 ms against a 0.3 ms claim on a production of
        // 550 000 jobs).
        let (lock, stmt) = self.timeouts();
        crate::stats::round_trip();
        let mut client = client;
        client
            .batch_execute(&format!(
                "SET lock_timeout = {lock}; SET statement_timeout = {stmt}; \
                 SET standard_conforming_strings = on; SET bytea_output = hex; SET jit = off"
            ))
            .map_err(map_err)?;
        Ok(Conn {
            client,
            stmts: HashMap::new(),
            prepared: std::collections::HashSet::new(),
        })
    }

    pub(super) fn take(&self) -> Result<Conn> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match idle {
                Some(c) if c.client.is_closed() => continue,
                Some(c) => return Ok(c),
                None => return self.connect(),
            }
        }
    }

    pub(super) fn give_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    pub(super) fn timeouts(&self) -> (u128, u128) {
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
    pub(super) fn raise_claim_floor(&self, production: &str) {
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
    pub(super) fn prune_mark_log(&self) {
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
    pub(super) fn short_transaction<T>(
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
