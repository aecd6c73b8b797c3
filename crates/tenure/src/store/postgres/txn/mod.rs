//! A transaction on one pooled connection: [`PgTxn`], the [`Txn`] of this
//! backend. This file holds the transaction's own machinery (begin, the
//! deferred writes, advisory locks, savepoints, commit); the reads and
//! writes of each area of the store are in the files named in the trait
//! impl below.

pub(super) mod claim;
mod events;
mod figures;
mod jobs;
mod productions;
mod records;
mod retention;
mod rows;
mod schedules;

use super::pool::{Conn, Pool, MARK_PRUNE_EVERY};
use super::sql::*;
use super::{listen, literal, map_err};
use crate::error::{Error, Result};
use crate::model::{Event, PublishedFact};
use crate::store::{
    ClaimStart, ClaimedFigures, FlowEvent, FlowRange, GateRow, Inserted, JobFacts, JobRow,
    LiveScan, Locked, LockedFor, NewEvent, ProductionRow, RequestRow, ScheduleRow, Stored,
    Tombstone, Txn, WaitingFigures,
};
use crate::ttl::Backoff;
use postgres::types::ToSql;
use postgres::{Row, SimpleQueryMessage, SimpleQueryRow};
use rows::{u32_col, Cols};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use uuid::Uuid;

pub(super) use figures::{after_fold, fold_counts};

/// A statement a request prepares on its connection first if it is not
/// yet: `(name, parameter types, body)` (see [`PgTxn::request`]).
pub(super) type Prepared = (&'static str, &'static str, &'static str);

/// The `PREPARE` of `stmt`, a statement of a simple-query request (a
/// parameterless one without the parenthesised list, which the server
/// would refuse empty).
fn prepare_text((name, types, body): Prepared) -> String {
    match types {
        "" => format!("PREPARE {name} AS {body}; "),
        _ => format!("PREPARE {name} ({types}) AS {body}; "),
    }
}

/// The pre-commit check, prepared by the request that begins a write
/// transaction on the server's clock (`PREPARE` is no part of the
/// transaction).
const PRECOMMIT_STMT: Prepared = (PRECOMMIT_NAME, PRECOMMIT_TYPES, PRECOMMIT);

/// The mark's read and the clock sample of the request that begins a
/// transaction, prepared once per connection like the pre-commit check:
/// an `EXECUTE` of a statement planned once, not text parsed and planned
/// at every transaction.
const MARK_STMT: Prepared = (MARK_NAME, "", HIGH_WATER);
const NOW_STMT: Prepared = (NOW_NAME, "", SERVER_NOW);

pub(super) struct PgTxn {
    conn: Option<Conn>,
    pool: Arc<Pool>,
    /// The `BEGIN ...` of a transaction not yet begun on the server: it
    /// heads the transaction's first request (see [`PgTxn::request`]).
    unbegun: Option<String>,
    /// A request that prepared statements failed: whether each `PREPARE`
    /// ran is not known, so the connection is closed, not pooled, when
    /// the transaction ends.
    discard: bool,
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
    /// The request being sent is a locked read that samples the clock
    /// and reads the stored mark itself ([`PgTxn::generic_reads`]): a
    /// write transaction it begins reads neither at its `BEGIN` (an
    /// unguarded write later in the transaction asks the server for a
    /// sample).
    sampling_read: bool,
    /// The request that began this transaction left its mark to the
    /// locked read's rows, which hand it over ([`PgTxn::mark_from_read`]).
    mark_in_read: bool,
    /// Deferred writes (see [`PgTxn::defer`]): SQL sent at the head of the
    /// transaction's next request.
    pending: String,
    /// Deferred checks (see [`productions::claim_without_gates`]): SQL
    /// sent after [`PgTxn::pending`] in the transaction's next simple-query
    /// request, at the latest with `COMMIT`. Unlike a deferred write, a
    /// check never makes a read flush: it reads nothing the transaction
    /// wrote, so it only has to run before the commit.
    guards: String,
    /// The production whose claim floor this transaction raises after it
    /// commits (every [`super::pool::FLOOR_EVERY`]th claim-next of the pool, see
    /// [`Pool::raise_claim_floor`]).
    floor_due: Option<String>,
    /// Productions the last locked read found without a gate row (read in
    /// the same statement as the rows, so a named claim of an ungated
    /// production makes no request for its gates).
    ungated: Vec<String>,
    /// What the last claim-next's first request read of its production's
    /// gates (see [`claim::claim_start`]), for the claim's gate decision.
    claim_gate: Option<ClaimGate>,
    /// Productions whose claims decided that no gate applies, each with
    /// the savepoint depth its guard was deferred at (see
    /// [`productions::claim_without_gates`]).
    gate_guards: Vec<(String, u32)>,
    /// The mark log's pruning is due after this transaction commits.
    mark_prune_due: bool,
    /// The request that begins this read transaction reads the event
    /// horizon first, in a transaction of its own (see
    /// [`PgTxn::begin_read_at_horizon`]).
    reads_horizon: bool,
    /// The event horizon read before this transaction's snapshot.
    flow_horizon: Option<i64>,
}

/// A claim-next's gates as its first request read them: the gate row,
/// locked (`None`: the production has none), and, read by a later
/// statement of that request (a later snapshot, taken once the row lock
/// was granted), the expiries of the production's leases stored claimed
/// that end after the mark (none without a concurrency limit) with the
/// server's clock sampled after that read (`None`: not read, the pool
/// having last found the production without a gate row, see
/// [`Pool::seems_ungated`]). The row answers
/// [`Txn::gates`] until a savepoint rollback, a gate write or a locked
/// read of named jobs; the leases answer the first
/// [`Txn::live_expiries_sampled`] only, the claim-next's own, before it
/// writes anything.
pub(super) struct ClaimGate {
    pub(super) production: String,
    pub(super) row: Option<crate::store::GateRow>,
    pub(super) leases: Option<(i64, Vec<i64>)>,
}

/// What every statement of a write transaction runs under, set at its
/// `BEGIN` (`SET LOCAL`: until its end): one generic plan per connection
/// for each prepared statement (planned at its first call, kept until the
/// server invalidates it), and no sequential scan where an index serves.
/// A plan is made once for every later call, so it must not depend on the
/// table's size when it was made: planned while `tenure.jobs` was nearly
/// empty (a connection's first submission), a row update by `seq` would
/// otherwise scan the whole table at every call until the next `ANALYZE`
/// of it. A write transaction's statements each read or write the rows
/// an index finds; set once for the transaction, the settings cost two
/// statements a transaction, where setting and resetting them around each
/// request's calls cost eight a transition. The connection runs with JIT
/// off, or such a plan could be compiled at every call (see
/// `Pool::connect`). Read transactions keep the connection's settings.
pub(super) const GENERIC_ON: &str =
    "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off; ";

impl PgTxn {
    /// A transaction begun with `sql` (`BEGIN ...`; a write transaction's
    /// followed by [`GENERIC_ON`]), followed in the same request by the
    /// read of the high-water mark, which the session asks for before it
    /// checks a clock sample ([`Txn::high_water`] answers it once from
    /// here), and, for a write transaction on the server's clock, a clock
    /// sample for the first unguarded write ([`Txn::observed_now_us`]);
    /// a write transaction whose first request is a locked read reads
    /// neither there (the locked read reads the mark and samples the clock
    /// itself). A read transaction sends it at once; a
    /// write transaction keeps it for the head of its first request (see
    /// [`PgTxn::request`]), so its first locked read
    /// ([`Txn::lock_jobs_sampled`], [`Txn::claim_start`]) begins it too.
    pub(super) fn begin(pool: &Arc<Pool>, sql: &str, write: bool) -> Result<Box<PgTxn>> {
        PgTxn::begin_with(pool, sql, write, false)
    }

    /// A read transaction ([`BEGIN_READ`]) whose first request reads the
    /// event horizon (as [`PgTxn::event_horizon`] does: the sequence's next
    /// value, then the registered lower bounds) in a `READ COMMITTED`
    /// transaction of its own, committed before the `BEGIN` of this one:
    /// its snapshot, taken at the mark's read after them, sees every event
    /// below that horizon that will ever commit ([`Txn::flow_horizon`]).
    pub(super) fn begin_read_at_horizon(pool: &Arc<Pool>) -> Result<Box<PgTxn>> {
        let sql = format!(
            "BEGIN ISOLATION LEVEL READ COMMITTED; {EVENT_HORIZON_NEXT}; \
             {EVENT_HORIZON_REGISTERED}; COMMIT; {BEGIN_READ}"
        );
        PgTxn::begin_with(pool, &sql, false, true)
    }

    fn begin_with(
        pool: &Arc<Pool>,
        sql: &str,
        write: bool,
        reads_horizon: bool,
    ) -> Result<Box<PgTxn>> {
        let conn = pool.take()?;
        let mut tx = Box::new(PgTxn {
            begin_mark: None,
            begin_now: None,
            sampling_read: false,
            mark_in_read: false,
            conn: Some(conn),
            pool: pool.clone(),
            unbegun: Some(sql.to_owned()),
            discard: false,
            open: true,
            write,
            failed: false,
            savepoints: 0,
            event_reg: None,
            held: Vec::new(),
            notify: Vec::new(),
            pending: String::new(),
            guards: String::new(),
            floor_due: None,
            ungated: Vec::new(),
            claim_gate: None,
            gate_guards: Vec::new(),
            mark_prune_due: false,
            reads_horizon,
            flow_horizon: None,
        });
        if !write {
            tx.open()?;
        }
        Ok(tx)
    }

    /// Send the `BEGIN` if it is not yet sent (with the deferred writes,
    /// in one request).
    fn open(&mut self) -> Result<()> {
        if self.unbegun.is_some() {
            self.request(&[], "")?;
        }
        Ok(())
    }

    /// Send one simple-query request and return the rows of its last
    /// statement: the `PREPARE` of each of `prepare` (and, in the request
    /// that begins a write transaction on the server's clock, of the
    /// pre-commit check) the connection lacks; then the `BEGIN` with its
    /// reads if the transaction has not begun (see [`PgTxn::begin`]); the
    /// deferred writes and checks; and `sql`. A request that begins the
    /// transaction on a connection that died while idle (server restart,
    /// failover) is sent once more on a fresh one, unless deferred calls
    /// need the statements the old one prepared.
    fn request(&mut self, prepare: &[Prepared], sql: &str) -> Result<Vec<SimpleQueryRow>> {
        Ok(self.request_all(prepare, sql)?.pop().unwrap_or_default())
    }

    /// The rows of each of `calls` (`EXECUTE`s of the statements of
    /// `prepare`), sent in one request ([`PgTxn::request_all`]) of a write
    /// transaction, so under one generic plan each ([`GENERIC_ON`]): a
    /// custom plan would be planned anew on every call, which costs several
    /// times what running these reads does.
    fn generic_reads(
        &mut self,
        prepare: &[Prepared],
        calls: &[&str],
    ) -> Result<Vec<Vec<SimpleQueryRow>>> {
        self.generic()?;
        self.sampling_read = true;
        let groups = self.request_all(prepare, &calls.join("; "));
        self.sampling_read = false;
        let mut groups = groups?;
        let first = groups.len().checked_sub(calls.len()).ok_or_else(|| {
            Error::Internal("a read request gave fewer answers than it has statements".into())
        })?;
        Ok(groups.split_off(first))
    }

    /// [`PgTxn::request`], with the rows of each statement of the request
    /// in order (a statement that returns none, the `BEGIN` reads included,
    /// an empty list): the last `n` are those of `sql`'s last `n`.
    fn request_all(&mut self, prepare: &[Prepared], sql: &str) -> Result<Vec<Vec<SimpleQueryRow>>> {
        let deferred = self.take_deferred();
        let mut again = self.unbegun.is_some() && deferred.is_empty();
        loop {
            let (text, prepared) = self.request_text(prepare, &deferred, sql);
            crate::stats::round_trip();
            let conn = self.c();
            match conn.client.simple_query(&text) {
                Ok(msgs) => {
                    conn.prepared.extend(prepared);
                    let sampled = self.samples_at_begin();
                    return Ok(self.answers(msgs, sampled));
                }
                Err(e) => {
                    let lost = conn.client.is_closed() || super::retry::is_lost(&e);
                    if again && lost {
                        again = false;
                        match self.pool.connect() {
                            Ok(fresh) => {
                                self.conn = Some(fresh);
                                continue;
                            }
                            Err(e) => {
                                self.unbegun = None;
                                self.failed = true;
                                return Err(e);
                            }
                        }
                    }
                    if !prepared.is_empty() {
                        // Each `PREPARE` before the failing statement ran
                        // (a `PREPARE` outlives the rollback): counted as
                        // prepared for the rest of this transaction, and
                        // the connection goes with it.
                        self.c().prepared.extend(prepared);
                        self.discard = true;
                    }
                    self.unbegun = None;
                    self.failed = true;
                    return Err(map_err(e));
                }
            }
        }
    }

    /// The text of [`PgTxn::request`] for the current connection, and the
    /// names it prepares.
    fn request_text(
        &self,
        prepare: &[Prepared],
        deferred: &str,
        sql: &str,
    ) -> (String, Vec<&'static str>) {
        let conn = self.conn.as_ref().expect("connection present while open");
        let begins = self.unbegun.is_some();
        let checked = begins && self.write && self.pool.server_clock;
        let sampled = begins && self.samples_at_begin();
        let marked = begins && !self.sampling_read;
        let heads = [
            (checked, PRECOMMIT_STMT),
            (marked, MARK_STMT),
            (sampled, NOW_STMT),
        ];
        let heads = heads.iter().filter(|h| h.0).map(|h| &h.1);
        let mut text = String::new();
        let mut names: Vec<&'static str> = Vec::new();
        // A request that begins the transaction prepares inside it: a
        // `PREPARE` before a `BEGIN` of the same request runs in the block
        // the `BEGIN` takes over, which then can no longer set its
        // isolation level.
        if let Some(begin) = &self.unbegun {
            text.push_str(&format!("{begin}; "));
            if self.write {
                text.push_str(GENERIC_ON);
            }
        }
        for &stmt in heads.chain(prepare) {
            let name = stmt.0;
            if !conn.prepared.contains(name) && !names.contains(&name) {
                text.push_str(&prepare_text(stmt));
                names.push(name);
            }
        }
        if marked {
            text.push_str(&format!("EXECUTE {MARK_NAME}; "));
        }
        if sampled {
            text.push_str(&format!("EXECUTE {NOW_NAME}; "));
        }
        text.push_str(deferred);
        text.push_str(sql);
        (text, names)
    }

    /// The rows of each statement of a request, in order (see
    /// [`PgTxn::request_all`], which keeps the last ones); the request that began the transaction
    /// also keeps its mark and, if `sampled`, its clock sample (the first
    /// rows of the request: no statement before them returns one).
    fn answers(
        &mut self,
        msgs: Vec<SimpleQueryMessage>,
        sampled: bool,
    ) -> Vec<Vec<SimpleQueryRow>> {
        let began = self.unbegun.take().is_some();
        // A locked read that begins the transaction brings the mark in
        // its own rows.
        self.mark_in_read = began && self.sampling_read;
        let marked = usize::from(!self.mark_in_read);
        // The horizon's two rows, if read, come before the mark's.
        let horizon_rows = if began && self.reads_horizon { 2 } else { 0 };
        let heads = if began {
            horizon_rows + marked + usize::from(sampled)
        } else {
            0
        };
        let mut firsts = 0;
        let mut horizon = [None, None];
        let mut groups = Vec::new();
        let mut rows = Vec::new();
        for m in msgs {
            match m {
                SimpleQueryMessage::Row(r) if firsts < heads => {
                    let v = r.get(0).and_then(|v| v.parse::<i64>().ok());
                    match firsts.checked_sub(horizon_rows) {
                        None => horizon[firsts] = v,
                        Some(0) if marked == 1 => self.begin_mark = v,
                        Some(_) => self.begin_now = v,
                    }
                    firsts += 1;
                }
                SimpleQueryMessage::Row(r) => rows.push(r),
                SimpleQueryMessage::CommandComplete(_) => groups.push(std::mem::take(&mut rows)),
                _ => {}
            }
        }
        if horizon_rows > 0 {
            // (2) is NULL when no writer is registered.
            let [next, registered] = horizon;
            self.flow_horizon = next.map(|n| events::horizon(n, registered));
        }
        groups
    }

    /// The stored mark a locked read's row `r` carries in column `col`,
    /// kept as the mark read with `BEGIN` when that read began the
    /// transaction (see [`PgTxn::sampling_read`]).
    fn mark_from_read(&mut self, r: &SimpleQueryRow, col: usize) -> Result<()> {
        if std::mem::take(&mut self.mark_in_read) {
            self.begin_mark = Some(r.i64(col)?);
        }
        Ok(())
    }

    /// Whether the request that begins this transaction reads a clock
    /// sample after the mark: a write transaction on the server's clock
    /// whose first request is not a locked read sampling the clock itself.
    fn samples_at_begin(&self) -> bool {
        self.write && self.pool.server_clock && !self.sampling_read
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
        self.open()?;
        self.flush()?;
        let r = self.c().query(sql, p);
        self.track(r)
    }

    fn execute(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        self.open()?;
        self.flush()?;
        let r = self.c().execute(sql, p);
        self.track(r)
    }

    /// Send `sql` (simple query) after the deferred writes, in one
    /// request ([`PgTxn::request`]).
    fn batch(&mut self, sql: &str) -> Result<()> {
        self.request(&[], sql).map(drop)
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
        let call = self.generic_call(name, types, body, params)?;
        self.pending.push_str(&call);
        Ok(())
    }

    /// Defer a check: as [`PgTxn::defer`], but into [`PgTxn::guards`], so
    /// no read sends it early (a statement that fails refuses the
    /// transaction; nothing it checks is written by the transaction).
    /// `call` is [`PgTxn::generic_call`]'s.
    fn defer_check(&mut self, call: String) {
        self.guards.push_str(&call);
    }

    /// Prepares on this connection, in one request, those of `stmts`
    /// (`(name, types, body)`) it lacks: statements whose first calls
    /// should together cost one round trip, not one each.
    fn prepare_together(&mut self, stmts: &[Prepared]) -> Result<()> {
        let mut sql = String::new();
        for &stmt in stmts {
            if !self.c().prepared.contains(stmt.0) {
                sql.push_str(&prepare_text(stmt));
            }
        }
        if sql.is_empty() {
            return Ok(());
        }
        self.batch(&sql)?;
        for &(name, _, _) in stmts {
            self.c().prepared.insert(name);
        }
        Ok(())
    }

    /// [`PgTxn::prepared_call`] of a write transaction, so under one
    /// generic plan ([`GENERIC_ON`]): the arguments' sizes vary from call to
    /// call, so no custom plan per call.
    fn generic_call(
        &mut self,
        name: &'static str,
        types: &'static str,
        body: &'static str,
        params: &[literal::Lit],
    ) -> Result<String> {
        self.generic()?;
        let call = self.prepared_call(name, types, body, params)?;
        Ok(format!("{call}; "))
    }

    /// Refuses a call meant to run under [`GENERIC_ON`] in a read
    /// transaction, which keeps the connection's settings.
    fn generic(&self) -> Result<()> {
        if self.write {
            Ok(())
        } else {
            Err(Error::Internal(
                "a generic-plan call in a read transaction".into(),
            ))
        }
    }

    /// `EXECUTE name(params)`, the statement `body` (parameters of `types`)
    /// prepared on this connection first if it is not yet (in a request of
    /// its own, which also carries the deferred writes).
    fn prepared_call(
        &mut self,
        name: &'static str,
        types: &'static str,
        body: &'static str,
        params: &[literal::Lit],
    ) -> Result<String> {
        let call = literal::execute(name, params)?;
        self.prepare_together(&[(name, types, body)])?;
        Ok(call)
    }

    /// The deferred writes, then the deferred checks, emptied.
    fn take_deferred(&mut self) -> String {
        let mut sql = std::mem::take(&mut self.pending);
        sql.push_str(&std::mem::take(&mut self.guards));
        sql
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
            self.execute(ADVISORY_LOCK_SHARED, &[&class, &k])?;
        } else {
            self.execute(ADVISORY_LOCK, &[&class, &k])?;
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

    /// The connection back to the pool, unless a failed request left its
    /// prepared statements unknown.
    fn give_back(&self, conn: Conn) {
        if !self.discard {
            self.pool.give_back(conn);
        }
    }

    fn finish(&mut self, sql: &str) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        if self.unbegun.is_some() {
            if sql == "ROLLBACK" {
                // Nothing was sent: nothing to roll back.
                self.open = false;
                self.pending.clear();
                self.guards.clear();
                if let Some(conn) = self.conn.take() {
                    self.give_back(conn);
                }
                return Ok(());
            }
            // A request whose answer may be a commit is never sent twice:
            // the `BEGIN` goes first.
            self.open()?;
        }
        self.open = false;
        let Some(mut conn) = self.conn.take() else {
            return Ok(());
        };
        let sql = if sql == "ROLLBACK" {
            self.pending.clear();
            self.guards.clear();
            sql.to_owned()
        } else {
            format!("{}{sql}", self.take_deferred())
        };
        let committing = sql.ends_with("COMMIT");
        crate::stats::round_trip();
        match conn.client.batch_execute(&sql) {
            Ok(()) => {
                self.give_back(conn);
                if committing {
                    self.after_commit();
                }
                Ok(())
            }
            Err(e) => {
                if conn.client.batch_execute("ROLLBACK").is_ok() {
                    self.give_back(conn);
                }
                Err(map_err(e))
            }
        }
    }
}

/// The clock sample a refusing pre-commit check quotes in its error
/// message (`... "TN001 <sample>"`, see `PRECOMMIT`), if it is one.
fn precommit_refused(message: &str) -> Option<i64> {
    let marker = format!("\"{PRECOMMIT_REFUSED} ");
    let rest = &message[message.find(&marker)? + marker.len()..];
    rest[..rest.find('"')?].parse().ok()
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        if self.open {
            let _ = self.finish("ROLLBACK");
        }
    }
}

impl Txn for PgTxn {
    fn has_server_clock(&self) -> bool {
        self.pool.server_clock
    }

    fn derives_provenance(&self) -> bool {
        true
    }

    fn lock_jobs_sampled(
        &mut self,
        keys: &[(&str, &str)],
        local_now: Option<i64>,
        what: LockedFor,
    ) -> Result<Locked> {
        claim::lock_jobs_sampled(self, keys, local_now, what)
    }

    fn claim_start(
        &mut self,
        production: &str,
        limit: usize,
        local_now: Option<i64>,
    ) -> Result<ClaimStart> {
        claim::claim_start(self, production, limit, local_now)
    }

    fn server_now_us(&mut self) -> Result<Option<i64>> {
        if !self.pool.server_clock {
            return Ok(None);
        }
        let rows = self.query(SERVER_NOW, &[])?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    fn observed_now_us(&mut self) -> Result<Option<i64>> {
        self.open()?;
        match self.begin_now.take() {
            Some(t) => Ok(Some(t)),
            None => self.server_now_us(),
        }
    }

    fn high_water(&mut self) -> Result<i64> {
        self.open()?;
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
        let rows = self.query(SCHEMA_VERSION_ROW, &[])?;
        match rows.first() {
            Some(r) => u32_col(r, 0),
            None => Err(Error::Store("the schema_version row is missing".into())),
        }
    }

    fn production(&mut self, name: &str) -> Result<Option<ProductionRow>> {
        productions::production(self, name)
    }

    fn production_exists(&mut self, name: &str) -> Result<bool> {
        productions::production_exists(self, name)
    }

    fn insert_production(&mut self, row: &ProductionRow) -> Result<()> {
        productions::insert_production(self, row)
    }

    fn set_production_backoff(&mut self, name: &str, backoff: Option<Backoff>) -> Result<()> {
        productions::set_production_backoff(self, name, backoff)
    }

    fn set_production_cancelled(&mut self, name: &str, at_us: i64) -> Result<()> {
        productions::set_production_cancelled(self, name, at_us)
    }

    fn productions(&mut self) -> Result<Vec<ProductionRow>> {
        productions::productions(self)
    }

    fn gates(&mut self, production: &str) -> Result<Option<GateRow>> {
        productions::gates(self, production)
    }

    fn set_gates(&mut self, production: &str, gates: &GateRow) -> Result<()> {
        productions::set_gates(self, production, gates)
    }

    fn gate_waits(&self) -> bool {
        true
    }

    fn hold_production(&mut self, production: &str) -> Result<()> {
        productions::hold_production(self, production)
    }

    fn claim_without_gates(&mut self, production: &str) -> Result<()> {
        productions::claim_without_gates(self, production)
    }

    fn live_expiries(&mut self, production: &str, after: i64) -> Result<Vec<i64>> {
        productions::live_expiries(self, production, after)
    }

    fn live_expiries_sampled(
        &mut self,
        production: &str,
        after: i64,
        leases: bool,
        local: Option<i64>,
    ) -> Result<(i64, Vec<i64>)> {
        // The server's sample is read either way (one statement); a local
        // clock's reading, where the authority keeps its own, stands for it.
        let cached = self
            .claim_gate
            .as_mut()
            .filter(|g| g.production == production)
            .and_then(|g| g.leases.take());
        let (now, expiries) = match cached {
            Some((now, all)) => (
                now,
                // `leases` is the same row's concurrency limit, so the
                // statement read the expiries exactly when it is set.
                all.into_iter().filter(|&e| leases && e > after).collect(),
            ),
            None => productions::live_expiries_sampled(self, production, after, leases)?,
        };
        Ok((local.unwrap_or(now), expiries))
    }

    fn job(&mut self, production: &str, job: &str) -> Result<Option<JobRow>> {
        jobs::job(self, production, job)
    }

    fn payload(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
        jobs::payload(self, production, job)
    }

    fn progress(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
        jobs::progress(self, production, job)
    }

    fn set_progress(&mut self, production: &str, job: &str, progress: &[u8]) -> Result<()> {
        jobs::set_progress(self, production, job, progress)
    }

    fn insert_job(&mut self, row: &JobRow, payload: &[u8]) -> Result<i64> {
        jobs::insert_job(self, row, payload)
    }

    fn update_job(&mut self, row: &JobRow) -> Result<()> {
        jobs::update_job(self, row)
    }

    fn update_expiry(&mut self, row: &JobRow) -> Result<()> {
        jobs::update_expiry(self, row)
    }

    fn jobs_for_update(&mut self, keys: &[(&str, &str)]) -> Result<Vec<Option<JobRow>>> {
        jobs::jobs_for_update(self, keys)
    }

    fn insert_new_jobs_into(
        &mut self,
        production: &str,
        rows: &[JobRow],
        payloads: &[&[u8]],
    ) -> Result<Inserted> {
        jobs::insert_new_jobs_into(self, production, rows, payloads)
    }

    fn write_batch(
        &mut self,
        rows: &[&JobRow],
        expiries: &[&JobRow],
        facts: &[JobFacts<'_>],
        events: &[NewEvent<'_>],
    ) -> Result<()> {
        jobs::write_batch(self, rows, expiries, facts, events)
    }

    fn live_jobs(
        &mut self,
        production: &str,
        after: Option<(i32, i64)>,
        limit: usize,
        scan: LiveScan,
    ) -> Result<Vec<JobRow>> {
        claim::live_jobs(self, production, after, limit, scan)
    }

    fn unpark_due(&mut self, production: &str, up_to_us: i64, scan: LiveScan) -> Result<u64> {
        claim::unpark_due(self, production, up_to_us, scan)
    }

    fn earliest_due(&mut self, production: &str) -> Result<Option<i64>> {
        jobs::earliest_due(self, production)
    }

    fn jobs_page(
        &mut self,
        production: &str,
        states: Option<&[Stored]>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JobRow>> {
        jobs::jobs_page(self, production, states, after, limit)
    }

    fn all_jobs_page(&mut self, after_seq: i64, limit: usize) -> Result<Vec<JobRow>> {
        jobs::all_jobs_page(self, after_seq, limit)
    }

    fn append_event(&mut self, ev: &NewEvent<'_>) -> Result<()> {
        events::append_event(self, ev)
    }

    fn events(&mut self, production: Option<&str>, after: u64, limit: usize) -> Result<Vec<Event>> {
        events::events(self, production, after, limit)
    }

    fn snapshot_events(&mut self, after: u64, limit: usize) -> Result<Vec<Event>> {
        events::snapshot_events(self, after, limit)
    }

    fn history_horizon(&mut self) -> Result<u64> {
        events::history_horizon(self)
    }

    fn oldest_events(&mut self, limit: usize) -> Result<Vec<(u64, i64)>> {
        events::oldest_events(self, limit)
    }

    fn prune_events_through(&mut self, through: u64) -> Result<u64> {
        events::prune_events_through(self, through)
    }

    fn terminal_jobs_before(&mut self, before_us: i64, limit: usize) -> Result<Vec<JobRow>> {
        retention::terminal_jobs_before(self, before_us, limit)
    }

    fn delete_jobs(&mut self, rows: &[JobRow]) -> Result<u64> {
        retention::delete_jobs(self, rows)
    }

    fn insert_tombstones(&mut self, stones: &[Tombstone]) -> Result<()> {
        retention::insert_tombstones(self, stones)
    }

    fn tombstone(&mut self, production: &str, job: &str) -> Result<Option<Tombstone>> {
        retention::tombstone(self, production, job)
    }

    fn jobs_with_tombstones(&mut self, limit: usize) -> Result<Vec<(String, String)>> {
        retention::jobs_with_tombstones(self, limit)
    }

    fn prune_tombstones(&mut self, before_us: i64, limit: usize) -> Result<u64> {
        retention::prune_tombstones(self, before_us, limit)
    }

    fn delete_production_events(&mut self, production: &str, limit: usize) -> Result<u64> {
        retention::delete_production_events(self, production, limit)
    }

    fn delete_production_tombstones(&mut self, production: &str) -> Result<u64> {
        retention::delete_production_tombstones(self, production)
    }

    fn delete_production(&mut self, production: &str) -> Result<()> {
        retention::delete_production(self, production)
    }

    fn insert_facts(&mut self, production: &str, job: &str, facts: &[(&str, &str)]) -> Result<()> {
        records::insert_facts(self, production, job, facts)
    }

    fn facts(&mut self, production: &str, job: Option<&str>) -> Result<Vec<PublishedFact>> {
        records::facts(self, production, job)
    }

    fn claim_requests(
        &mut self,
        production: &str,
        request_ids: &[String],
    ) -> Result<Vec<RequestRow>> {
        records::claim_requests(self, production, request_ids)
    }

    fn insert_claim_requests(&mut self, rows: &[RequestRow]) -> Result<bool> {
        records::insert_claim_requests(self, rows)
    }

    fn last_claim_event(
        &mut self,
        production: &str,
        job: &str,
        claim_id: &Uuid,
    ) -> Result<Option<Event>> {
        events::last_claim_event(self, production, job, claim_id)
    }

    fn schedule(&mut self, production: &str, name: &str) -> Result<Option<ScheduleRow>> {
        schedules::schedule(self, production, name)
    }

    fn schedules(&mut self, production: Option<&str>, lock: bool) -> Result<Vec<ScheduleRow>> {
        schedules::schedules(self, production, lock)
    }

    fn put_schedule(&mut self, row: &ScheduleRow) -> Result<()> {
        schedules::put_schedule(self, row)
    }

    fn delete_schedule(&mut self, production: &str, name: &str) -> Result<bool> {
        schedules::delete_schedule(self, production, name)
    }

    fn insert_nonce(
        &mut self,
        nonce: &Uuid,
        production: &str,
        job: &str,
        claim_id: &Uuid,
        at_us: i64,
    ) -> Result<bool> {
        records::insert_nonce(self, nonce, production, job, claim_id, at_us)
    }

    fn earliest_expiry(&mut self, production: &str) -> Result<Option<i64>> {
        jobs::earliest_expiry(self, production)
    }

    fn state_counts(&mut self, production: &str) -> Result<Vec<(Stored, u64)>> {
        figures::state_counts(self, production)
    }

    fn waiting_figures(&mut self, production: &str, now: i64) -> Result<WaitingFigures> {
        figures::waiting_figures(self, production, now)
    }

    fn claimed_figures(
        &mut self,
        production: &str,
        now: i64,
        horizon: i64,
        window_from: i64,
    ) -> Result<ClaimedFigures> {
        figures::claimed_figures(self, production, now, horizon, window_from)
    }

    fn flow_events(&mut self, r: &FlowRange<'_>) -> Result<Vec<FlowEvent>> {
        figures::flow_events(self, r)
    }

    fn flow_horizon(&mut self) -> Result<Option<i64>> {
        Ok(self.flow_horizon)
    }

    fn event_stored(&mut self, seq: i64) -> Result<bool> {
        figures::event_stored(self, seq)
    }

    fn notify_work(&mut self, production: &str) -> Result<()> {
        let plain = production
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:@+-".contains(&b));
        if !plain {
            self.execute(NOTIFY_WORK, &[&production])?;
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
        // Writes and checks deferred since the savepoint are dropped with
        // it (the savepoint's request sent every earlier one).
        self.pending.clear();
        self.guards.clear();
        // A gate row locked after the savepoint is unlocked with it.
        self.claim_gate = None;
        self.batch("ROLLBACK TO SAVEPOINT op; RELEASE SAVEPOINT op")?;
        self.failed = false;
        // A lock taken after the savepoint was released with it (and the
        // events it covered are gone): the next event registers again.
        if self.event_reg.is_some_and(|d| d >= self.savepoints) {
            self.event_reg = None;
        }
        let depth = self.savepoints;
        self.held.retain(|&(_, _, _, d)| d < depth);
        self.gate_guards.retain(|(_, d)| *d < depth);
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
        for g in self.gate_guards.iter_mut().filter(|g| g.1 >= depth) {
            g.1 = depth - 1;
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
        self.open()?;
        // The check fails the statement when the rule refuses (see
        // `PRECOMMIT`); COMMIT then never runs.
        let call = self.prepared_call(
            PRECOMMIT_NAME,
            PRECOMMIT_TYPES,
            PRECOMMIT,
            &[literal::int(mark), literal::opt_int(deadline)],
        )?;
        let sql = format!("{call}; {}COMMIT", self.take_notifies());
        let sql = format!("{}{sql}", self.take_deferred());
        self.open = false;
        let Some(mut conn) = self.conn.take() else {
            return Ok(None);
        };
        self.mark_written();
        crate::stats::round_trip();
        match conn.client.batch_execute(&sql) {
            Ok(()) => {
                self.give_back(conn);
                self.after_commit();
                Ok(Some(Ok(())))
            }
            Err(e) => {
                let refused = e.as_db_error().and_then(|d| precommit_refused(d.message()));
                if conn.client.batch_execute("ROLLBACK").is_ok() {
                    self.give_back(conn);
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
    use super::{precommit_refused, PgTxn, BEGIN_READ};
    use crate::error::Error;
    use crate::store::postgres::tests::with_database;
    use crate::store::postgres::PgBackend;
    use crate::store::Txn;
    use std::time::Duration;

    /// `plan_cache_mode` and `enable_seqscan` as `tx`'s next request sees
    /// them.
    fn settings(tx: &mut PgTxn) -> (String, String) {
        let mut groups = tx
            .request_all(&[], "SHOW plan_cache_mode; SHOW enable_seqscan")
            .unwrap();
        let mut last = || {
            let rows = groups.pop().unwrap();
            rows[0].get(0).unwrap().to_owned()
        };
        let seqscan = last();
        (last(), seqscan)
    }

    /// Against a live server (see `with_database`): every statement of a
    /// write transaction, its first request's and its later ones', runs
    /// on generic plans without sequential scans; a read transaction on the
    /// same connection afterwards runs under the connection's settings, and
    /// refuses a call meant for generic plans.
    #[test]
    fn a_write_transaction_runs_on_generic_plans_and_a_read_keeps_the_connections_settings() {
        with_database("u_generic", |url| {
            let (b, _) = PgBackend::open(url, Duration::from_secs(5), true).unwrap();
            let generic = ("force_generic_plan".to_owned(), "off".to_owned());
            // The server's own settings, as a plain session has them.
            let mut plain = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let mut show = |name: &str| -> String {
                plain
                    .query_one(&format!("SHOW {name}"), &[])
                    .unwrap()
                    .get(0)
            };
            let connection = (show("plan_cache_mode"), show("enable_seqscan"));
            assert_ne!(connection.0, generic.0, "the server's default plan mode");
            for end in ["commit", "rollback"] {
                let mut w =
                    PgTxn::begin(&b.pool, "BEGIN ISOLATION LEVEL READ COMMITTED", true).unwrap();
                assert_eq!(settings(&mut w), generic, "the first request");
                assert_eq!(settings(&mut w), generic, "a later request");
                match end {
                    "commit" => w.commit().unwrap(),
                    _ => w.rollback().unwrap(),
                }
                let mut r = PgTxn::begin(&b.pool, BEGIN_READ, false).unwrap();
                assert_eq!(settings(&mut r), connection, "a read after a {end}");
                let refused = r.generic_reads(&[], &["SELECT 1"]);
                assert!(
                    matches!(refused, Err(Error::Internal(_))),
                    "{:?}",
                    refused.map(|g| g.len())
                );
                r.rollback().unwrap();
            }
        });
    }

    #[test]
    fn a_refused_precommit_check_names_its_sample() {
        let m = r#"invalid input syntax for type bigint: "TN001 1796352452712345""#;
        assert_eq!(precommit_refused(m), Some(1_796_352_452_712_345));
        assert_eq!(
            precommit_refused(r#"invalid input syntax for type bigint: "TN001 -5""#),
            Some(-5)
        );
        assert_eq!(
            precommit_refused(r#"invalid input syntax for type integer: "tenure: x""#),
            None
        );
        assert_eq!(precommit_refused("TN001 12"), None);
    }
}
