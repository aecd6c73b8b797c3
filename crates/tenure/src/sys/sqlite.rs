//! What tenure needs of a SQLite connection beyond `rusqlite`'s safe API:
//! statements kept prepared for the connection's life ([`Prepared`]), a
//! WAL hook ([`WalHook`]), two file controls ([`data_version`],
//! [`sync_wal`]) and a passive checkpoint ([`checkpoint_passive`]).

use rusqlite::{ffi, Connection, PrepFlags, Statement};
use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// What a connection's WAL hook calls after every commit.
pub(crate) trait WalHook: Send + Sync + 'static {
    /// A commit of the connection left `frames` frames in the WAL; calling
    /// `checkpoint` runs a `PASSIVE` checkpoint on that connection at once.
    fn committed(&self, frames: i32, checkpoint: &mut dyn FnMut());
}

/// A connection, the statements it keeps prepared in `N` numbered slots,
/// and its WAL hook.
pub(crate) struct Prepared<const N: usize> {
    // Declared before `conn`: fields drop in order, so every statement is
    // finalized before the connection it was prepared on closes. Boxed
    // too, so that moving a `Prepared` copies a pointer.
    stmts: Box<[RefCell<Option<Statement<'static>>>; N]>,
    // Boxed: the statements point at it, so it must not move when a
    // `Prepared` does.
    conn: Box<Connection>,
    /// What the connection's WAL hook points at; dropped after it.
    _hook: Arc<dyn Any + Send + Sync>,
}

// SAFETY: a `Prepared` owns its connection and every statement prepared on
// it, and they only move together; `Connection` is `Send` (SQLite runs in
// multi-thread mode: one connection, with its statements, is used by one
// thread at a time), and `Prepared` is not `Sync` (its slots are
// `RefCell`s), so no two threads use it at once.
unsafe impl<const N: usize> Send for Prepared<N> {}

impl<const N: usize> Prepared<N> {
    /// `conn` with no statement prepared yet, whose commits call `hook`.
    pub(crate) fn new<H: WalHook>(conn: Connection, hook: Arc<H>) -> Prepared<N> {
        let conn = Box::new(conn);
        // SAFETY: the handle is this open connection's; the context pointer
        // is the hook's `Arc`, which this `Prepared` keeps until after the
        // connection is closed (field order), so it is valid whenever
        // SQLite calls the hook.
        unsafe {
            ffi::sqlite3_wal_hook(
                conn.handle(),
                Some(on_commit::<H>),
                Arc::as_ptr(&hook) as *mut c_void,
            );
        }
        Prepared {
            stmts: Box::new(std::array::from_fn(|_| RefCell::new(None))),
            conn,
            _hook: hook,
        }
    }

    /// The connection.
    pub(crate) fn get(&self) -> &Connection {
        &self.conn
    }

    /// Whether slot `slot` holds a prepared statement.
    #[cfg(test)]
    pub(crate) fn is_prepared(&self, slot: usize) -> bool {
        self.stmts[slot].borrow().is_some()
    }

    /// Run `f` with the statement of slot `slot`, prepared from `sql` on
    /// first use (a slot keeps the statement it was first given). `f` gets
    /// the statement for a lifetime it cannot name, so nothing it returns
    /// can keep the statement or anything borrowed from it. A slot already
    /// in use further up the stack lends a statement from the connection's
    /// cache instead.
    pub(crate) fn with<R>(
        &self,
        slot: usize,
        sql: &str,
        f: impl for<'s> FnOnce(&mut Statement<'s>) -> rusqlite::Result<R>,
    ) -> rusqlite::Result<R> {
        let Ok(mut st) = self.stmts[slot].try_borrow_mut() else {
            let mut st = self.conn.prepare_cached(sql)?;
            return f(&mut st);
        };
        if st.is_none() {
            // SAFETY: the connection is boxed and owned by `self`, which
            // drops every statement before it (field order) and never moves
            // it out; the reference never leaves `self` except as the
            // statement's borrow, which `f` only gets for a lifetime it
            // cannot keep.
            let conn: &'static Connection = unsafe { &*(&*self.conn as *const Connection) };
            *st = Some(conn.prepare_with_flags(sql, PrepFlags::SQLITE_PREPARE_PERSISTENT)?);
        }
        match st.as_mut() {
            Some(st) => f(st),
            None => unreachable!("a statement slot filled just above"),
        }
    }
}

/// The WAL hook's entry from SQLite: `ctx` is the `H` of [`Prepared::new`].
unsafe extern "C" fn on_commit<H: WalHook>(
    ctx: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    frames: c_int,
) -> c_int {
    // SAFETY: `ctx` is the `H` that an `Arc` held beside the connection
    // keeps alive (see `Prepared::new`).
    let hook = unsafe { &*(ctx as *const H) };
    let mut checkpoint = || {
        // SAFETY: the connection and schema name SQLite handed the hook,
        // valid for the length of the hook's call; null out parameters are
        // allowed.
        unsafe {
            ffi::sqlite3_wal_checkpoint_v2(
                db,
                name,
                ffi::SQLITE_CHECKPOINT_PASSIVE,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
        }
    };
    // A panic must not unwind into SQLite.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        hook.committed(frames, &mut checkpoint)
    }));
    ffi::SQLITE_OK
}

/// Run a `PASSIVE` checkpoint of `conn`'s main database: it never waits for
/// a writer or a reader. A busy checkpoint (another process's running) is
/// not an error: the next one copies what this one left.
pub(crate) fn checkpoint_passive(conn: &Connection) {
    // SAFETY: the handle is this open connection's; the schema name is a C
    // string literal; null out parameters are allowed.
    unsafe {
        ffi::sqlite3_wal_checkpoint_v2(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_CHECKPOINT_PASSIVE,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
    }
}

/// SQLite's data version of `conn`'s main database file: it changes with
/// every commit to the file, by this connection or any other (of this
/// process or another), as seen from the transaction `conn` has open
/// (`SQLITE_FCNTL_DATA_VERSION`).
pub(crate) fn data_version(conn: &Connection) -> Option<u32> {
    let mut v: std::ffi::c_uint = 0;
    // SAFETY: the handle is this open connection's; the file control
    // writes one unsigned int through the pointer, which outlives the call.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_DATA_VERSION,
            (&mut v as *mut std::ffi::c_uint).cast(),
        )
    };
    (rc == ffi::SQLITE_OK).then_some(v)
}

/// fsync `conn`'s WAL file (SQLite's own `xSync` of it).
pub(crate) fn sync_wal(conn: &Connection) -> std::result::Result<(), String> {
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
