//! A pooled connection that holds the statements of every write
//! transaction prepared, found by their index.
//!
//! `prepare_cached` finds a statement by its SQL text: it hashes the text
//! twice (taking it out of the cache and putting it back), compares it and
//! copies it into a new key on every use, about 1.2 k instructions per
//! statement and 40 k per lifecycle (claim-next, renew, complete). The
//! statements listed in [`Hot`] run in (almost) every write transaction;
//! each connection prepares them on first use and keeps them in a slot of
//! its own. Every other statement still goes through `prepare_cached`.

use super::checkpoint;
pub(super) use crate::sys::sqlite::sync_wal;
use crate::sys::sqlite::{data_version, Prepared};
use rusqlite::{Connection, Statement};
use std::cell::{Cell, RefCell};

/// The statements a connection keeps prepared (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hot {
    BeginImmediate,
    BeginDeferred,
    Commit,
    Rollback,
    Savepoint,
    RollbackTo,
    Release,
    HighWater,
    SetHighWater,
    SetEventMark,
    Job,
    JobBySeq,
    UpdateJob,
    UpdateOpenJob,
    UpdateExpiry,
    AppendEvent,
    LiveJobs,
    AddCount,
    ParkedProbe,
}

/// How many [`Hot`] statements there are (`ParkedProbe` is the last).
const HOT: usize = Hot::ParkedProbe as usize + 1;

impl Hot {
    fn sql(self) -> &'static str {
        match self {
            Hot::BeginImmediate => "BEGIN IMMEDIATE",
            Hot::BeginDeferred => "BEGIN DEFERRED",
            Hot::Commit => "COMMIT",
            Hot::Rollback => "ROLLBACK",
            Hot::Savepoint => "SAVEPOINT op",
            Hot::RollbackTo => "ROLLBACK TO op",
            Hot::Release => "RELEASE op",
            Hot::HighWater => super::HIGH_WATER_SQL,
            Hot::SetHighWater => super::SET_HIGH_WATER_SQL,
            Hot::SetEventMark => super::SET_EVENT_MARK_SQL,
            Hot::Job => super::JOB_SQL,
            Hot::JobBySeq => super::JOB_BY_SEQ_SQL,
            Hot::UpdateJob => super::UPDATE_JOB_SQL,
            Hot::UpdateOpenJob => super::UPDATE_OPEN_JOB_SQL,
            Hot::UpdateExpiry => super::UPDATE_EXPIRY_SQL,
            Hot::AppendEvent => super::APPEND_EVENT_SQL,
            Hot::LiveJobs => super::LIVE_JOBS_SQL,
            Hot::AddCount => super::ADD_COUNT_SQL,
            Hot::ParkedProbe => super::PARKED_PROBE_SQL,
        }
    }
}

/// How many job rows a connection remembers (see [`Conn::seq_hint`]).
const RECENT: usize = 8;

/// A job row a connection wrote: production, job ID, sequence number.
type Remembered = (Box<str>, Box<str>, i64);

/// One connection of the pool and its [`Hot`] statements.
pub(super) struct Conn {
    /// The connection, its [`Hot`] statements (slot `h as usize`) and its
    /// WAL hook.
    prepared: Prepared<HOT>,
    /// The stored high-water mark this connection's last commit left, and
    /// the file's data version right after that commit (see
    /// [`Conn::known_mark`]).
    mark: Cell<Option<(u32, i64)>>,
    /// The rows this connection wrote last, by production and job ID: a
    /// hint for reading them again (see [`Conn::seq_hint`]).
    recent: RefCell<[Option<Remembered>; RECENT]>,
    /// The slot [`Conn::remember_seq`] fills next.
    next: Cell<usize>,
}

impl Conn {
    /// A pooled connection whose commits hand their checkpoints to
    /// `checkpointer` (see [`checkpoint`]).
    pub(super) fn new(conn: Connection, checkpointer: &checkpoint::Checkpointer) -> Conn {
        Conn {
            prepared: Prepared::new(conn, checkpointer.hook()),
            mark: Cell::new(None),
            recent: Default::default(),
            next: Cell::new(0),
        }
    }

    /// The connection, for statements that are not [`Hot`].
    pub(super) fn get(&self) -> &Connection {
        self.prepared.get()
    }

    /// SQLite's data version of the main database file as seen from the
    /// transaction this connection has open (see [`data_version`]).
    fn data_version(&self) -> Option<u32> {
        data_version(self.prepared.get())
    }

    /// The stored high-water mark without reading it: the mark this
    /// connection's last commit left, if nothing has been committed to the
    /// file since (the data version is the one that commit left). Only
    /// meaningful inside a write transaction, whose `BEGIN IMMEDIATE` has
    /// brought the data version up to date.
    pub(super) fn known_mark(&self) -> Option<i64> {
        let (v, m) = self.mark.get()?;
        (self.data_version()? == v).then_some(m)
    }

    /// Remember the stored mark a commit just left (`None`: not known,
    /// forget it).
    pub(super) fn remember_mark(&self, mark: Option<i64>) {
        self.mark
            .set(mark.and_then(|m| Some((self.data_version()?, m))));
    }

    /// The sequence number (rowid) of the job row this connection wrote
    /// last under `production`/`job`, if it is among the last [`RECENT`]
    /// it wrote. Only a hint: the row may have been removed since, and
    /// another row may have its number; a lookup by it must also match the
    /// IDs (as [`Hot::JobBySeq`] does).
    pub(super) fn seq_hint(&self, production: &str, job: &str) -> Option<i64> {
        self.recent
            .borrow()
            .iter()
            .flatten()
            .find_map(|(p, j, seq)| (&**j == job && &**p == production).then_some(*seq))
    }

    /// Remember that the job row `production`/`job` has sequence `seq`.
    pub(super) fn remember_seq(&self, production: &str, job: &str, seq: i64) {
        let mut recent = self.recent.borrow_mut();
        if let Some(slot) = recent
            .iter_mut()
            .flatten()
            .find(|(p, j, _)| &**j == job && &**p == production)
        {
            slot.2 = seq;
            return;
        }
        let i = self.next.get();
        recent[i] = Some((production.into(), job.into(), seq));
        self.next.set((i + 1) % RECENT);
    }

    /// Run `f` with the prepared statement `h` (prepared on first use).
    /// `f` gets the statement for a lifetime it cannot name, so nothing it
    /// returns can keep the statement or anything borrowed from it. A
    /// statement already in use further up the stack (never the case
    /// today) is prepared again through the connection's cache instead.
    pub(super) fn with<R>(
        &self,
        h: Hot,
        f: impl for<'s> FnOnce(&mut Statement<'s>) -> rusqlite::Result<R>,
    ) -> rusqlite::Result<R> {
        self.prepared.with(h as usize, h.sql(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hot_statement_prepares_and_keeps_its_slot() {
        let dir = tempfile::tempdir().unwrap();
        let (b, _) = super::super::SqliteBackend::open(
            &dir.path().join("t.db"),
            super::super::Synchronous::Normal,
            std::time::Duration::from_secs(5),
            &|| 0,
        )
        .unwrap();
        let c = b.pool.take().unwrap();
        for h in [
            Hot::HighWater,
            Hot::SetHighWater,
            Hot::SetEventMark,
            Hot::Job,
            Hot::JobBySeq,
            Hot::UpdateJob,
            Hot::UpdateOpenJob,
            Hot::UpdateExpiry,
            Hot::AppendEvent,
            Hot::LiveJobs,
            Hot::AddCount,
            Hot::ParkedProbe,
        ] {
            let n = c.with(h, |st| Ok(st.parameter_count())).unwrap();
            assert!(c.prepared.is_prepared(h as usize), "{h:?} kept");
            // The same statement again, and while it is in use.
            let again = c.with(h, |_| c.with(h, |st| Ok(st.parameter_count())));
            assert_eq!(again.unwrap(), n);
        }
    }
}
