//! A transaction on one pooled connection: its begin and end, savepoints
//! and the high-water mark here, the statements of each kind of row in a
//! module of its own.

mod events;
mod facts;
mod figures;
mod jobs;
mod requests;
mod retention;
mod schedules;

use crate::error::{Error, Result};
use crate::model::{Event, PublishedFact};
use crate::store::sqlite::backend::header;
use crate::store::sqlite::conn::{Conn, Hot};
#[cfg(test)]
use crate::store::sqlite::durability;
use crate::store::sqlite::pool::Pool;
use crate::store::sqlite::rows::{bind_event, insert_job};
use crate::store::sqlite::wal_writes;
#[cfg(target_os = "linux")]
use crate::store::sqlite::writer_queue;
use crate::store::{
    ClaimedFigures, FlowEvent, FlowRange, GateRow, JobRow, LiveScan, NewEvent, ProductionRow,
    RequestRow, ScheduleRow, Stored, Tombstone, Txn, WaitingFigures,
};
use crate::ttl::Backoff;
use rusqlite::{params, Connection};
use std::sync::Arc;
use uuid::Uuid;

pub(super) struct SqliteTxn {
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
    /// What this transaction changed of the kept job counts, written by
    /// its commit ([`SqliteTxn::count`]).
    counts: Vec<CountChange>,
    /// Where in `counts` each open savepoint began.
    count_marks: Vec<usize>,
    /// This writer's place in the [`writer_queue`], held until the transaction ends.
    #[cfg(target_os = "linux")]
    pub(super) turn: Option<writer_queue::WriterTurn>,
}

/// A change of one of a production's kept job counts (`job_counts`, see
/// [`crate::store::sqlite::schema::stats_figures`]).
struct CountChange {
    production: Box<str>,
    /// `all`, or a terminal state.
    count: &'static str,
    by: i64,
}

/// The count `job_counts` keeps of every job of a production.
const ALL_JOBS: &str = "all";

impl SqliteTxn {
    pub(super) fn begin(
        pool: &Arc<Pool>,
        begin: Hot,
        deadline: std::time::Instant,
    ) -> Result<Box<SqliteTxn>> {
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
                counts: Vec::new(),
                count_marks: Vec::new(),
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

    /// Add `by` to the production's `count` at the commit. Changes since
    /// the innermost open savepoint are summed as they come (a savepoint
    /// rolled back drops its own).
    fn count(&mut self, production: &str, count: &'static str, by: i64) {
        let from = self.count_marks.last().copied().unwrap_or(0);
        match self.counts[from..]
            .iter_mut()
            .find(|c| c.count == count && &*c.production == production)
        {
            Some(c) => c.by += by,
            None => self.counts.push(CountChange {
                production: production.into(),
                count,
                by,
            }),
        }
    }

    /// A job of the production entering (`by` 1) or leaving (-1) `state`:
    /// only a terminal state has a kept count.
    fn count_state(&mut self, production: &str, state: Stored, by: i64) {
        if !state.is_open() {
            self.count(production, state.as_str(), by);
        }
    }

    /// Write the transaction's count changes: one row per production and
    /// count, none for a change that summed to nothing.
    fn write_counts(&mut self) -> Result<()> {
        let mut counts = std::mem::take(&mut self.counts);
        self.count_marks.clear();
        while let Some(c) = counts.pop() {
            let mut by = c.by;
            counts.retain(|o| {
                let same = o.count == c.count && o.production == c.production;
                if same {
                    by += o.by;
                }
                !same
            });
            if by != 0 {
                crate::fault::point();
                self.h().with(Hot::AddCount, |st| {
                    st.execute(params![&*c.production, c.count, by])
                })?;
            }
        }
        Ok(())
    }

    fn finish(&mut self, end: Hot) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        // Ending without a commit: the count changes are never written.
        self.counts.clear();
        self.count_marks.clear();
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

/// Run a transaction-control statement (several run per transition).
pub(super) fn exec(conn: &Conn, h: Hot) -> rusqlite::Result<()> {
    conn.with(h, |st| st.execute([]).map(|_| ()))
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
        jobs::production(self.c(), name)
    }

    fn insert_production(&mut self, row: &ProductionRow) -> Result<()> {
        crate::fault::point();
        jobs::insert_production(self.c(), row)
    }

    fn set_production_backoff(&mut self, name: &str, backoff: Option<Backoff>) -> Result<()> {
        crate::fault::point();
        jobs::set_production_backoff(self.c(), name, backoff)
    }

    fn set_production_cancelled(&mut self, name: &str, at_us: i64) -> Result<()> {
        jobs::set_production_cancelled(self.c(), name, at_us)
    }

    fn productions(&mut self) -> Result<Vec<ProductionRow>> {
        jobs::productions(self.c())
    }

    fn gates(&mut self, production: &str) -> Result<Option<GateRow>> {
        jobs::gates(self.c(), production)
    }

    fn set_gates(&mut self, production: &str, gates: &GateRow) -> Result<()> {
        crate::fault::point();
        jobs::set_gates(self.c(), production, gates)
    }

    fn live_expiries(&mut self, production: &str, after: i64) -> Result<Vec<i64>> {
        jobs::live_expiries(self.c(), production, after)
    }

    fn job(&mut self, production: &str, job: &str) -> Result<Option<JobRow>> {
        jobs::job(self.h(), production, job)
    }

    fn payload(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
        jobs::payload(self.c(), production, job)
    }

    fn progress(&mut self, production: &str, job: &str) -> Result<Option<Vec<u8>>> {
        jobs::progress(self.c(), production, job)
    }

    fn set_progress(&mut self, production: &str, job: &str, progress: &[u8]) -> Result<()> {
        crate::fault::point();
        jobs::set_progress(self.c(), production, job, progress)
    }

    fn insert_job(&mut self, row: &JobRow, payload: &[u8]) -> Result<i64> {
        crate::fault::point();
        let seq = insert_job(self.c(), row, payload)?;
        self.count(&row.production, ALL_JOBS, 1);
        self.count_state(&row.production, row.state, 1);
        Ok(seq)
    }

    fn update_job(&mut self, row: &JobRow) -> Result<()> {
        crate::fault::point();
        let was = jobs::update_job(self.h(), row)?;
        if was != Some(row.state) {
            if let Some(was) = was {
                self.count_state(&row.production, was, -1);
            }
            self.count_state(&row.production, row.state, 1);
        }
        Ok(())
    }

    fn update_expiry(&mut self, row: &JobRow) -> Result<()> {
        crate::fault::point();
        jobs::update_expiry(self.h(), row)
    }

    fn live_jobs(
        &mut self,
        production: &str,
        after: Option<(i32, i64)>,
        limit: usize,
        scan: LiveScan,
    ) -> Result<Vec<JobRow>> {
        jobs::live_jobs(self.h(), production, after, limit, scan)
    }

    fn unpark_due(&mut self, production: &str, up_to_us: i64, _scan: LiveScan) -> Result<u64> {
        jobs::unpark_due(self.h(), production, up_to_us)
    }

    fn earliest_due(&mut self, production: &str) -> Result<Option<i64>> {
        jobs::earliest_due(self.c(), production)
    }

    fn jobs_page(
        &mut self,
        production: &str,
        states: Option<&[Stored]>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JobRow>> {
        jobs::jobs_page(self.c(), production, states, after, limit)
    }

    fn all_jobs_page(&mut self, after_seq: i64, limit: usize) -> Result<Vec<JobRow>> {
        jobs::all_jobs_page(self.c(), after_seq, limit)
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
        events::events(self.c(), production, after, limit)
    }

    fn history_horizon(&mut self) -> Result<u64> {
        events::history_horizon(self.c())
    }

    fn oldest_events(&mut self, limit: usize) -> Result<Vec<(u64, i64)>> {
        self.flush_event(self.read_mark)?;
        events::oldest_events(self.c(), limit)
    }

    fn prune_events_through(&mut self, through: u64) -> Result<u64> {
        crate::fault::point();
        self.flush_event(self.read_mark)?;
        events::prune_events_through(self.c(), through)
    }

    fn terminal_jobs_before(&mut self, before_us: i64, limit: usize) -> Result<Vec<JobRow>> {
        retention::terminal_jobs_before(self.c(), before_us, limit)
    }

    fn delete_jobs(&mut self, rows: &[JobRow]) -> Result<u64> {
        crate::fault::point();
        let (facts, states) = retention::delete_jobs(self.c(), rows)?;
        for (row, state) in rows.iter().zip(states) {
            self.count(&row.production, ALL_JOBS, -1);
            self.count_state(&row.production, state, -1);
        }
        Ok(facts)
    }

    fn insert_tombstones(&mut self, stones: &[Tombstone]) -> Result<()> {
        retention::insert_tombstones(self.c(), stones)
    }

    fn tombstone(&mut self, production: &str, job: &str) -> Result<Option<Tombstone>> {
        retention::tombstone(self.c(), production, job)
    }

    fn jobs_with_tombstones(&mut self, limit: usize) -> Result<Vec<(String, String)>> {
        retention::jobs_with_tombstones(self.c(), limit)
    }

    fn prune_tombstones(&mut self, before_us: i64, limit: usize) -> Result<u64> {
        retention::prune_tombstones(self.c(), before_us, limit)
    }

    fn delete_production_events(&mut self, production: &str, limit: usize) -> Result<u64> {
        self.flush_event(self.read_mark)?;
        retention::delete_production_events(self.c(), production, limit)
    }

    fn delete_production_tombstones(&mut self, production: &str) -> Result<u64> {
        retention::delete_production_tombstones(self.c(), production)
    }

    fn delete_production(&mut self, production: &str) -> Result<()> {
        retention::delete_production(self.c(), production)
    }

    fn reclaim_space(&mut self) -> Result<()> {
        retention::reclaim_space(self.c())
    }

    fn insert_facts(&mut self, production: &str, job: &str, facts: &[(&str, &str)]) -> Result<()> {
        crate::fault::point();
        facts::insert_facts(self.c(), production, job, facts)
    }

    fn facts(&mut self, production: &str, job: Option<&str>) -> Result<Vec<PublishedFact>> {
        facts::facts(self.c(), production, job)
    }

    fn claim_requests(
        &mut self,
        production: &str,
        request_ids: &[String],
    ) -> Result<Vec<RequestRow>> {
        requests::claim_requests(self.c(), production, request_ids)
    }

    fn insert_claim_requests(&mut self, rows: &[RequestRow]) -> Result<bool> {
        requests::insert_claim_requests(self.c(), rows)
    }

    fn last_claim_event(
        &mut self,
        production: &str,
        job: &str,
        claim_id: &Uuid,
    ) -> Result<Option<Event>> {
        self.flush_event(self.read_mark)?;
        events::last_claim_event(self.c(), production, job, claim_id)
    }

    fn schedule(&mut self, production: &str, name: &str) -> Result<Option<ScheduleRow>> {
        schedules::schedule(self.c(), production, name)
    }

    fn schedules(&mut self, production: Option<&str>, _lock: bool) -> Result<Vec<ScheduleRow>> {
        schedules::schedules(self.c(), production)
    }

    fn put_schedule(&mut self, row: &ScheduleRow) -> Result<()> {
        schedules::put_schedule(self.c(), row)
    }

    fn delete_schedule(&mut self, production: &str, name: &str) -> Result<bool> {
        schedules::delete_schedule(self.c(), production, name)
    }

    fn insert_nonce(
        &mut self,
        nonce: &Uuid,
        production: &str,
        job: &str,
        claim_id: &Uuid,
        at_us: i64,
    ) -> Result<bool> {
        requests::insert_nonce(self.c(), nonce, production, job, claim_id, at_us)
    }

    fn earliest_expiry(&mut self, production: &str) -> Result<Option<i64>> {
        jobs::earliest_expiry(self.c(), production)
    }

    fn state_counts(&mut self, production: &str) -> Result<Vec<(Stored, u64)>> {
        self.flush_event(self.read_mark)?;
        figures::state_counts(self.c(), production)
    }

    fn waiting_figures(&mut self, production: &str, now: i64) -> Result<WaitingFigures> {
        figures::waiting_figures(self.c(), production, now)
    }

    fn claimed_figures(
        &mut self,
        production: &str,
        now: i64,
        horizon: i64,
        window_from: i64,
    ) -> Result<ClaimedFigures> {
        figures::claimed_figures(self.c(), production, now, horizon, window_from)
    }

    fn flow_events(&mut self, r: &FlowRange<'_>) -> Result<Vec<FlowEvent>> {
        self.flush_event(self.read_mark)?;
        figures::flow_events(self.c(), r)
    }

    fn flow_horizon(&mut self) -> Result<Option<i64>> {
        self.flush_event(self.read_mark)?;
        figures::flow_horizon(self.c()).map(Some)
    }

    fn event_stored(&mut self, seq: i64) -> Result<bool> {
        self.flush_event(self.read_mark)?;
        figures::event_stored(self.c(), seq)
    }

    fn notify_work(&mut self, _production: &str) -> Result<()> {
        self.ring = true;
        Ok(())
    }

    fn savepoint(&mut self) -> Result<()> {
        self.flush_event(self.read_mark)?;
        exec(self.h(), Hot::Savepoint)?;
        self.savepoints += 1;
        self.count_marks.push(self.counts.len());
        Ok(())
    }

    fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.flush_event(self.read_mark)?;
        exec(self.h(), Hot::RollbackTo)?;
        exec(self.h(), Hot::Release)?;
        self.savepoints -= 1;
        if let Some(from) = self.count_marks.pop() {
            self.counts.truncate(from);
        }
        Ok(())
    }

    fn release_savepoint(&mut self) -> Result<()> {
        self.flush_event(self.read_mark)?;
        exec(self.h(), Hot::Release)?;
        self.savepoints -= 1;
        self.count_marks.pop();
        Ok(())
    }

    /// The mark goes on the newest event when this transaction appended
    /// it (`events.mark_us`, see [`crate::store::sqlite::schema::CURRENT`]):
    /// its page is written anyway. An event still bound is inserted
    /// carrying it; one already inserted gets it by an `UPDATE`. An event a
    /// savepoint rolled back since leaves the mark to `meta`.
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
        self.write_counts()?;
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
