//! The SQLite store behind an authority: opening it, and the transactions
//! and doorbell it hands out.

use super::conn::{self, Conn, Hot};
use super::migrate::migrate;
use super::pool::{configure, open_connection, shown, Pool};
use super::schema::{APPLICATION_ID, PAGE_SIZE};
use super::txn::SqliteTxn;
#[cfg(target_os = "linux")]
use super::writer_queue;
use super::{checkpoint, durability};
use crate::error::{Error, Result};
use crate::store::{Backend, Txn, SCHEMA_VERSION};
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// SQLite `synchronous` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// fsync the WAL at every commit (the default): nothing committed is lost on power failure.
    /// With the store's queue file the fsync runs after the writer lock is
    /// released and before the call returns (see `docs/design.md`, "Durable
    /// after the lock").
    #[default]
    Full,
    /// fsync at checkpoints only: a power failure may lose the latest commits
    /// (never corrupts). Faster.
    Normal,
}

impl Synchronous {
    pub(super) fn pragma(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// The SQLite store behind an authority.
pub(crate) struct SqliteBackend {
    pub(super) pool: Arc<Pool>,
    /// The bounded-polling doorbell when there is no queue file.
    pub(super) poll_bell: std::sync::OnceLock<Arc<crate::doorbell::PollBell>>,
}

/// What opening did to the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opened {
    pub from_version: u32,
    pub to_version: u32,
}

impl SqliteBackend {
    /// Open or create the store at `path`, refusing a newer or foreign file
    /// before changing anything, then migrating forward in one transaction.
    pub(crate) fn open(
        path: &Path,
        sync: Synchronous,
        busy: Duration,
        now_us: &dyn Fn() -> i64,
    ) -> Result<(SqliteBackend, Opened)> {
        let mut pool = Pool {
            checkpointer: checkpoint::Checkpointer::new(path.to_path_buf(), sync, busy),
            path: path.to_path_buf(),
            sync,
            busy,
            idle: Mutex::new(Vec::new()),
            syncer: durability::Syncer::default(),
            #[cfg(target_os = "linux")]
            writer_queue: None,
        };
        let conn = open_connection(path)?;
        conn.busy_timeout(busy)?;
        // Inspect before touching: these reads do not modify the file.
        let (version, app_id) = header(&conn)?;
        if version > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if app_id != 0 && app_id != APPLICATION_ID {
            return Err(Error::Store(format!(
                "not a tenure store: {} has application_id {app_id:#x}",
                shown(path)
            )));
        }
        if app_id == 0 && version != 0 {
            return Err(Error::Store(format!(
                "not a tenure store: {} has user_version {version} but no tenure application_id",
                shown(path)
            )));
        }
        if version == 0 && app_id == 0 {
            // A new store gives freed pages back in small steps
            // (`reclaim_space`) and has pages of [`PAGE_SIZE`] bytes: both
            // must precede its first table and the switch to WAL. On a file
            // that already has tables (refused below as foreign) the
            // pragmas change nothing.
            conn.execute_batch(&format!(
                "PRAGMA page_size = {PAGE_SIZE}; PRAGMA auto_vacuum = INCREMENTAL;"
            ))?;
        }
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Store(format!(
                "could not switch {} to WAL (journal_mode is {mode})",
                shown(path)
            )));
        }
        configure(&conn, sync, busy)?;
        let opened = migrate(&conn, now_us)?;
        #[cfg(target_os = "linux")]
        {
            pool.writer_queue = writer_queue::WriterQueue::open(path).map(Arc::new);
        }
        if pool.pragma_sync() != sync {
            conn.execute_batch(&format!(
                "PRAGMA synchronous = {};",
                pool.pragma_sync().pragma()
            ))?;
        }
        let pool = Arc::new(pool);
        pool.give_back(Conn::new(conn, &pool.checkpointer));
        Ok((
            SqliteBackend {
                pool,
                poll_bell: std::sync::OnceLock::new(),
            },
            opened,
        ))
    }
}

pub(super) fn header(conn: &Connection) -> Result<(u32, i32)> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version = u32::try_from(version)
        .map_err(|_| Error::Store(format!("invalid schema version {version}")))?;
    Ok((version, app_id))
}

impl Backend for SqliteBackend {
    fn begin_write(&self) -> Result<Box<dyn Txn>> {
        let start = std::time::Instant::now();
        let deadline = start + self.pool.busy;
        #[cfg(target_os = "linux")]
        let turn = match &self.pool.writer_queue {
            Some(q) => Some(q.acquire(deadline, self.pool.syncs_in_commit())?),
            None => None,
        };
        let mut t = SqliteTxn::begin(&self.pool, Hot::BeginImmediate, deadline)?;
        #[cfg(target_os = "linux")]
        {
            t.turn = turn;
        }
        crate::stats::record_lock_wait(start.elapsed());
        Ok(t)
    }
    fn begin_read(&self) -> Result<Box<dyn Txn>> {
        let deadline = std::time::Instant::now() + self.pool.busy;
        Ok(SqliteTxn::begin(&self.pool, Hot::BeginDeferred, deadline)?)
    }
    fn doorbell(&self) -> Result<Arc<dyn crate::doorbell::Doorbell>> {
        #[cfg(target_os = "linux")]
        if let Some(q) = &self.pool.writer_queue {
            return Ok(q.clone());
        }
        Ok(self
            .poll_bell
            .get_or_init(|| Arc::new(crate::doorbell::PollBell::new()))
            .clone())
    }

    /// Switch the file to incremental auto-vacuum (a store created before
    /// schema 3 has none) with the one full `VACUUM` that takes, at its turn
    /// at the writer queue; a store already incremental is only vacuumed.
    fn compact(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + self.pool.busy;
        #[cfg(target_os = "linux")]
        let _turn = match &self.pool.writer_queue {
            Some(q) => Some(q.acquire(deadline, self.pool.syncs_in_commit())?),
            None => None,
        };
        let pooled = self.pool.take()?;
        let conn = pooled.get();
        conn.busy_timeout(deadline.saturating_duration_since(std::time::Instant::now()))?;
        let mut r = conn
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            .map_err(Error::from);
        if r.is_ok() && self.pool.deferred().is_some() {
            // The connection runs at `NORMAL`: sync what VACUUM wrote
            // before returning (it changes no content, so nothing read
            // since depends on it).
            r = conn::sync_wal(conn).map_err(Error::Store);
        }
        conn.busy_timeout(self.pool.busy)?;
        self.pool.give_back(pooled);
        r
    }
}
