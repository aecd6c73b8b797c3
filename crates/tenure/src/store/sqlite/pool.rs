//! The connections of one store: how each is opened and configured, and
//! the pool transactions take them from.

use super::conn::Conn;
#[cfg(test)]
use super::powerloss;
#[cfg(target_os = "linux")]
use super::writer_queue;
use super::{checkpoint, durability, wal_writes, Synchronous};
use crate::error::{bounded, Error, Result};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(super) struct Pool {
    /// Declared first: dropped (its thread stopped) before the connections.
    pub(super) checkpointer: checkpoint::Checkpointer,
    pub(super) path: PathBuf,
    pub(super) sync: Synchronous,
    pub(super) busy: Duration,
    pub(super) idle: Mutex<Vec<Conn>>,
    /// Syncs the WAL when commits are made durable after the writer lock.
    pub(super) syncer: durability::Syncer,
    #[cfg(target_os = "linux")]
    pub(super) writer_queue: Option<Arc<writer_queue::WriterQueue>>,
}

pub(super) const MAX_IDLE: usize = 16;

/// Open one connection to the store file, through the VFS that writes each
/// WAL frame in one call ([`wal_writes`]). SQLite's message for a file it
/// cannot open names the path: a long path is shown bounded.
pub(super) fn open_connection(path: &Path) -> Result<Connection> {
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
pub(super) fn shown(path: &Path) -> String {
    bounded(&path.display().to_string())
}

impl Pool {
    /// The writer queue whose commit counters make the WAL durable after
    /// the writer lock is released (see [`durability`]): at
    /// `synchronous = FULL` with a queue file; `None` otherwise.
    pub(super) fn deferred(&self) -> Option<&Arc<writer_queue::WriterQueue>> {
        #[cfg(target_os = "linux")]
        if self.sync == Synchronous::Full {
            return self.writer_queue.as_ref().filter(|q| q.defers());
        }
        None
    }

    /// Whether a COMMIT syncs the WAL while holding the writer lock
    /// (`FULL` without [`Pool::deferred`]): only then is the next writer's
    /// wait long enough to overlap with a wake-up.
    pub(super) fn syncs_in_commit(&self) -> bool {
        self.sync == Synchronous::Full && self.deferred().is_none()
    }

    /// The `synchronous` setting connections run with: `NORMAL` when
    /// commits are made durable after the lock is released.
    pub(super) fn pragma_sync(&self) -> Synchronous {
        if self.deferred().is_some() {
            Synchronous::Normal
        } else {
            self.sync
        }
    }

    pub(super) fn connect(&self) -> Result<Conn> {
        let conn = open_connection(&self.path)?;
        configure(&conn, self.pragma_sync(), self.busy)?;
        Ok(Conn::new(conn, &self.checkpointer))
    }

    /// [`durability::settle`] through this pool's syncer: its connection
    /// reads once on opening, which opens the WAL it syncs.
    pub(super) fn settle(&self, queue: &writer_queue::WriterQueue, seen: u64) -> Result<()> {
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

    pub(super) fn take(&self) -> Result<Conn> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(c) => Ok(c),
            None => self.connect(),
        }
    }

    pub(super) fn give_back(&self, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}

pub(super) fn configure(conn: &Connection, sync: Synchronous, busy: Duration) -> Result<()> {
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
