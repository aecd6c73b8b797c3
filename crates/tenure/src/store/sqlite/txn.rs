//! A transaction on one pooled connection.

use super::backend::header;
use super::conn::{Conn, Hot};
#[cfg(test)]
use super::durability;
use super::pool::Pool;
use super::rows::*;
use super::sql::*;
use super::sql::{event_cols, job_cols};
use super::wal_writes;
#[cfg(target_os = "linux")]
use super::writer_queue;
use crate::error::{Error, Result};
use crate::model::{Event, PublishedFact};
use crate::store::{
    backoff_cols, backoff_from_cols, JobRow, LiveScan, NewEvent, ProductionRow, RequestRow, Stored,
    Tombstone, Txn,
};
use crate::ttl::Backoff;
use rusqlite::{params, Connection, OptionalExtension, Row};
use std::sync::Arc;
use uuid::Uuid;

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
    /// This writer's place in the [`writer_queue`], held until the transaction ends.
    #[cfg(target_os = "linux")]
    pub(super) turn: Option<writer_queue::WriterTurn>,
}

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

/// Run a transaction-control statement (several run per transition).
pub(super) fn exec(conn: &Conn, h: Hot) -> rusqlite::Result<()> {
    conn.with(h, |st| st.execute([]).map(|_| ()))
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
