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
use rusqlite::{ffi, Connection, PrepFlags, Statement};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

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
    // Declared before `conn`: fields drop in order, so every statement is
    // finalized before the connection it was prepared on closes. Boxed
    // too, so that moving a `Conn` in and out of the pool copies two
    // pointers.
    stmts: Box<[RefCell<Option<Statement<'static>>>; HOT]>,
    /// The stored high-water mark this connection's last commit left, and
    /// the file's data version right after that commit (see
    /// [`Conn::known_mark`]).
    mark: Cell<Option<(u32, i64)>>,
    /// The rows this connection wrote last, by production and job ID: a
    /// hint for reading them again (see [`Conn::seq_hint`]).
    recent: RefCell<[Option<Remembered>; RECENT]>,
    /// The slot [`Conn::remember_seq`] fills next.
    next: Cell<usize>,
    // Boxed: the statements point at it, so it must not move when a
    // `Conn` does.
    conn: Box<Connection>,
    /// What the connection's WAL hook points at; dropped after it.
    _hook: Arc<checkpoint::Shared>,
}

// SAFETY: a `Conn` owns its connection and every statement prepared on it,
// and they only move together; `Connection` is `Send` (SQLite runs in
// multi-thread mode: one connection, with its statements, is used by one
// thread at a time), and `Conn` is not `Sync`, so no two threads use it at
// once.
unsafe impl Send for Conn {}

impl Conn {
    /// A pooled connection whose commits hand their checkpoints to
    /// `checkpointer` (see [`checkpoint`]).
    pub(super) fn new(conn: Connection, checkpointer: &checkpoint::Checkpointer) -> Conn {
        let hook = checkpointer.attach(&conn);
        Conn {
            stmts: Default::default(),
            mark: Cell::new(None),
            recent: Default::default(),
            next: Cell::new(0),
            conn: Box::new(conn),
            _hook: hook,
        }
    }

    /// The connection, for statements that are not [`Hot`].
    pub(super) fn get(&self) -> &Connection {
        &self.conn
    }

    /// SQLite's data version of the main database file: it changes with
    /// every commit to the file, by this connection or any other (of this
    /// process or another), as seen from the transaction this connection
    /// has open (`SQLITE_FCNTL_DATA_VERSION`).
    fn data_version(&self) -> Option<u32> {
        let mut v: std::ffi::c_uint = 0;
        // SAFETY: the handle is this open connection's; the file control
        // writes one unsigned int through the pointer, which outlives the call.
        let rc = unsafe {
            ffi::sqlite3_file_control(
                self.conn.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_DATA_VERSION,
                (&mut v as *mut std::ffi::c_uint).cast(),
            )
        };
        (rc == ffi::SQLITE_OK).then_some(v)
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
        let Ok(mut slot) = self.stmts[h as usize].try_borrow_mut() else {
            let mut st = self.conn.prepare_cached(h.sql())?;
            return f(&mut st);
        };
        if slot.is_none() {
            // SAFETY: the connection is boxed and owned by `self`, which
            // drops every statement before it (field order); the reference
            // never leaves `self` except as the statement's borrow, which
            // `f` only gets for a lifetime it cannot keep.
            let conn: &'static Connection = unsafe { &*(&*self.conn as *const Connection) };
            *slot = Some(conn.prepare_with_flags(h.sql(), PrepFlags::SQLITE_PREPARE_PERSISTENT)?);
        }
        match slot.as_mut() {
            Some(st) => f(st),
            None => unreachable!("a statement slot filled just above"),
        }
    }
}

/// fsync this connection's WAL file (SQLite's own `xSync` of it).
pub(super) fn sync_wal(conn: &Connection) -> std::result::Result<(), String> {
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: the handle is this open connection's; the file control
    // writes one pointer to the journal (WAL) file object, which stays
    // open with the connection; its xSync is SQLite's own.
    unsafe {
        let rc = ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_JOURNAL_POINTER,
            &mut file as *mut *mut ffi::sqlite3_file as *mut std::ffi::c_void,
        );
        if rc != ffi::SQLITE_OK || file.is_null() || (*file).pMethods.is_null() {
            return Err(format!("no WAL file to sync (code {rc})"));
        }
        let Some(sync) = (*(*file).pMethods).xSync else {
            return Err("the WAL file cannot be synced".into());
        };
        match sync(file, ffi::SQLITE_SYNC_NORMAL) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(format!("fsync of the WAL failed (code {rc})")),
        }
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
            Hot::ParkedProbe,
        ] {
            let n = c.with(h, |st| Ok(st.parameter_count())).unwrap();
            assert!(c.stmts[h as usize].borrow().is_some(), "{h:?} kept");
            // The same statement again, and while it is in use.
            let again = c.with(h, |_| c.with(h, |st| Ok(st.parameter_count())));
            assert_eq!(again.unwrap(), n);
        }
    }
}
