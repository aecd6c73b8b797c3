//! Few writes per commit: a SQLite VFS over another that writes WAL
//! frames together.
//!
//! SQLite writes a WAL frame with two system calls: its 24-byte header,
//! then the page, at the next offset; a commit of ten pages is twenty
//! writes. Every connection of a store opens through this VFS; it leaves
//! the database and shared-memory files to the VFS below and wraps only
//! the WAL file:
//!
//! - a 24-byte write at the offset where this file object's last write
//!   ended (a frame header appended to the log) is held back, and written
//!   with the write that follows it at the next offset (its page) in one
//!   `pwritev` on a descriptor of this VFS's own for the same file (a
//!   second descriptor of one file shares its pages: what it writes is
//!   what SQLite's reads, syncs and checkpoints see);
//! - while this thread runs a `COMMIT` inside [`committing`], a frame that
//!   does not end the transaction (its header's commit size is 0) is held
//!   too, header copied and page as SQLite's own buffer, and the commit
//!   frame writes every frame held before it in one `pwritev` (or a few,
//!   at most [`MAX_HELD`] frames a call);
//! - anything else first writes what is held: a write elsewhere, a read, a
//!   sync, a truncation, the file's size, a file control, a lock call,
//!   closing the file. A header rewritten in place (SQLite correcting
//!   checksums after a transaction rewrote one of its frames) is not at the
//!   end and goes to the file at once.
//!
//! SQLite writes a frame's page right after its header, and a commit's
//! frames one after another in one loop that changes no page (`walFrames`
//! in `wal.c`), so a header waits for no more than the call that follows
//! it, a page buffer held during a `COMMIT` is unchanged until the commit
//! frame writes it, and the file receives the same bytes at the same
//! offsets as without this VFS; a commit's frames are in the file before
//! SQLite publishes the commit in the WAL index. Outside a `COMMIT` pages
//! are never held: a page SQLite spills to the WAL while a transaction
//! runs may change again before the commit. A failed `pwritev` is the
//! error of the write that started it, as a failed write of the same bytes
//! would be without this VFS; where the second descriptor cannot be opened
//! (or off Linux), the header and page are written separately, as SQLite
//! would.
//!
//! # Safety
//!
//! Every `unsafe fn` here is a VFS or file method (or a helper of one) that
//! only SQLite calls, as its VFS interface promises: `vfs` is this VFS as
//! [`register`] made it (its `pAppData` the VFS below), `name` a
//! NUL-terminated path or null, `file` a zeroed object of this VFS's
//! `szOsFile` bytes that [`x_open`] set up (a [`WalFile`] followed by the
//! file object of the VFS below) and that is used by one thread at a time,
//! and every buffer is valid for the length given, for the call. The
//! `// SAFETY:` line of each says what else it relies on.

use rusqlite::ffi;
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// The name of the VFS over the default one.
pub(crate) const NAME: &CStr = c"tenure";
/// The same over the power-failure model of the tests.
#[cfg(test)]
pub(crate) const MODEL_NAME: &CStr = c"tenure-over-powerloss";

/// Size of a WAL frame header, and of the WAL file header before frame 1.
const FRAME_HEADER: usize = 24;
const WAL_HEADER: i64 = 32;

/// The most frames held before they are written (two buffers each, within
/// Linux's 1 024 buffers a `pwritev`).
const MAX_HELD: usize = 256;

thread_local! {
    /// Whether this thread runs a `COMMIT` inside [`committing`].
    static COMMITTING: Cell<bool> = const { Cell::new(false) };
    /// The WAL file state holding frames of that `COMMIT`, if any.
    static HOLDING: Cell<*mut State> = const { Cell::new(std::ptr::null_mut()) };
}

/// Run `commit`, which executes one `COMMIT` statement and nothing else, with
/// the frames of that commit written together (see the module docs).
///
/// Pages are held only until the commit frame, inside SQLite's loop that
/// writes them; should a `COMMIT` end without writing its commit frame,
/// whatever it left held is dropped here, never written: once the
/// transaction ends, another writer may put its frames at those offsets.
pub(crate) fn committing<R>(commit: impl FnOnce() -> R) -> R {
    struct End;
    impl Drop for End {
        fn drop(&mut self) {
            COMMITTING.set(false);
            let st = HOLDING.replace(std::ptr::null_mut());
            if !st.is_null() {
                // SAFETY: a file clears `HOLDING` when it writes what it
                // holds and when it closes, so `st` is a live file's state.
                let st = unsafe { &mut *st };
                st.end = st.held_at;
                st.held.clear();
                st.at = -1;
            }
        }
    }
    COMMITTING.set(true);
    let _end = End;
    commit()
}

/// The VFS name connections open with: this VFS over the default one.
pub(crate) fn vfs_name() -> &'static str {
    register(&DEFAULT, NAME, None);
    NAME.to_str().expect("ASCII")
}

/// The VFS name of connections to a store under the power-failure model.
#[cfg(test)]
pub(crate) fn model_vfs_name() -> &'static str {
    register(&OVER_MODEL, MODEL_NAME, Some(super::powerloss::NAME));
    MODEL_NAME.to_str().expect("ASCII")
}

static DEFAULT: OnceLock<()> = OnceLock::new();
#[cfg(test)]
static OVER_MODEL: OnceLock<()> = OnceLock::new();

/// Register `name` over the VFS `below` (the default when `None`).
fn register(cell: &OnceLock<()>, name: &'static CStr, below: Option<&CStr>) {
    cell.get_or_init(|| {
        // SAFETY: the VFS below outlives the process (SQLite's default, or
        // one leaked at registration); the new VFS copies it, replacing
        // its name, file size and the calls that name the VFS, and is
        // leaked.
        unsafe {
            let real = ffi::sqlite3_vfs_find(below.map_or(std::ptr::null(), |n| n.as_ptr()));
            assert!(!real.is_null(), "the VFS below is registered");
            let mut vfs: ffi::sqlite3_vfs = std::ptr::read(real);
            vfs.szOsFile = std::mem::size_of::<WalFile>() as c_int + (*real).szOsFile;
            vfs.zName = name.as_ptr();
            vfs.pNext = std::ptr::null_mut();
            vfs.pAppData = real as *mut c_void;
            vfs.xOpen = Some(x_open);
            vfs.xDelete = Some(x_delete);
            vfs.xAccess = Some(x_access);
            vfs.xFullPathname = Some(x_full_pathname);
            let vfs = Box::into_raw(Box::new(vfs));
            assert_eq!(ffi::sqlite3_vfs_register(vfs, 0), ffi::SQLITE_OK);
        }
    });
}

/// A WAL file: SQLite's file object, then the one of the VFS below (in the
/// same allocation, after this struct).
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    state: *mut State,
}

/// A frame held during a `COMMIT`: its header, and SQLite's buffer of its
/// page.
struct Held {
    header: [u8; FRAME_HEADER],
    page: *const u8,
    len: usize,
}

/// What a WAL file holds back, and its own descriptor.
struct State {
    /// The frames held back (only during a `COMMIT`), from offset
    /// `held_at`, one after another.
    held: Vec<Held>,
    held_at: i64,
    /// The buffers of the last write (kept for their allocation).
    iov: Vec<Buf>,
    /// The frame header held back, and its offset (-1: none); after the
    /// held frames, if any.
    header: [u8; FRAME_HEADER],
    at: i64,
    /// Where this file object's last write ended: a header written here is
    /// appended to the log.
    end: i64,
    /// The descriptor `pwritev` writes through: -1 not opened yet, -2 it
    /// cannot be opened (headers are then never held).
    fd: c_int,
    name: CString,
}

unsafe fn below(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: `vfs` is this VFS (see the module docs).
    (*vfs).pAppData as *mut ffi::sqlite3_vfs
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: the module contract; `file` has room for a `WalFile` and, after
    // it, the object of the VFS below (`szOsFile` is their sum), which is
    // opened in place; the state is boxed here and freed by `wal_close`.
    let real_vfs = below(vfs);
    if name.is_null() || flags & ffi::SQLITE_OPEN_WAL == 0 {
        // Any other file is the VFS below's own object, at the same place.
        return ((*real_vfs).xOpen.expect("xOpen"))(real_vfs, name, file, flags, out_flags);
    }
    (*file).pMethods = std::ptr::null();
    let real = (file as *mut u8).add(std::mem::size_of::<WalFile>()) as *mut ffi::sqlite3_file;
    let rc = ((*real_vfs).xOpen.expect("xOpen"))(real_vfs, name, real, flags, out_flags);
    if rc != ffi::SQLITE_OK {
        // SQLite closes a file whose open failed only if its methods are
        // set: close the one below here.
        if !(*real).pMethods.is_null() {
            ((*(*real).pMethods).xClose.expect("xClose"))(real);
        }
        return rc;
    }
    let writable = flags & ffi::SQLITE_OPEN_READWRITE != 0;
    let f = file as *mut WalFile;
    (*f).real = real;
    (*f).state = Box::into_raw(Box::new(State {
        held: Vec::new(),
        held_at: -1,
        iov: Vec::new(),
        header: [0; FRAME_HEADER],
        at: -1,
        end: 0,
        fd: if writable && cfg!(target_os = "linux") {
            -1
        } else {
            -2
        },
        name: CStr::from_ptr(name).to_owned(),
    }));
    (*file).pMethods = &METHODS;
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_delete(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync: c_int,
) -> c_int {
    // SAFETY: the module contract; the call goes to the VFS below as is.
    let r = below(vfs);
    ((*r).xDelete.expect("xDelete"))(r, name, sync)
}

unsafe extern "C" fn x_access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    // SAFETY: the module contract; the call goes to the VFS below as is.
    let r = below(vfs);
    ((*r).xAccess.expect("xAccess"))(r, name, flags, out)
}

unsafe extern "C" fn x_full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: the module contract; the call goes to the VFS below as is.
    let r = below(vfs);
    ((*r).xFullPathname.expect("xFullPathname"))(r, name, n, out)
}

/// The file object below, its methods, and this file's state.
unsafe fn parts<'a>(
    f: *mut ffi::sqlite3_file,
) -> (
    *mut ffi::sqlite3_file,
    &'a ffi::sqlite3_io_methods,
    &'a mut State,
) {
    // SAFETY: `f` is a WAL file `x_open` set up and `wal_close` has not
    // closed: its object below is open (methods set) and its state is live;
    // one thread uses it at a time, so the state is borrowed once.
    let w = f as *mut WalFile;
    let r = (*w).real;
    (r, &*(*r).pMethods, &mut *(*w).state)
}

/// Write what is held (frames, then a header); the writes' result.
unsafe fn flush(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: `f` is an open WAL file (see `parts`).
    let (r, m, st) = parts(f);
    if !st.held.is_empty() {
        return write_held(st, None);
    }
    if st.at < 0 {
        return ffi::SQLITE_OK;
    }
    let at = std::mem::replace(&mut st.at, -1);
    let rc = (m.xWrite.expect("xWrite"))(
        r,
        st.header.as_ptr() as *const c_void,
        FRAME_HEADER as c_int,
        at,
    );
    #[cfg(test)]
    tests::count_write();
    rc
}

/// Write the held frames, the held header and `page` after it (if given),
/// through this VFS's descriptor; nothing is held afterwards.
unsafe fn write_held(st: &mut State, page: Option<&[u8]>) -> c_int {
    // SAFETY: the held pages are SQLite's buffers of the `COMMIT` under way,
    // unchanged and live until its commit frame (see the module docs); `st`
    // holds frames only once its descriptor is open.
    // Anything is held only once the descriptor is open.
    debug_assert!(st.fd >= 0);
    let at = if st.held.is_empty() {
        st.at
    } else {
        st.held_at
    };
    let mut iov = std::mem::take(&mut st.iov);
    iov.clear();
    for h in &st.held {
        iov.push(buf(h.header.as_ptr(), FRAME_HEADER));
        iov.push(buf(h.page, h.len));
    }
    if st.at >= 0 {
        iov.push(buf(st.header.as_ptr(), FRAME_HEADER));
        if let Some(p) = page {
            iov.push(buf(p.as_ptr(), p.len()));
        }
    }
    let rc = write_all(st.fd, &mut iov, at);
    #[cfg(test)]
    tests::count_write();
    st.iov = iov;
    st.held.clear();
    st.at = -1;
    let me: *mut State = st;
    if HOLDING.get() == me {
        HOLDING.set(std::ptr::null_mut());
    }
    rc
}

/// The descriptor of this VFS's own for the file, opened at first use.
#[cfg(not(target_os = "linux"))]
fn descriptor(_: &mut State) -> Option<c_int> {
    None
}

/// The descriptor of this VFS's own for the file, opened at first use.
#[cfg(target_os = "linux")]
fn descriptor(st: &mut State) -> Option<c_int> {
    if st.fd == -1 {
        // SAFETY: a NUL-terminated path; the descriptor is closed with the
        // file object.
        let fd = unsafe { libc::open(st.name.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        st.fd = if fd >= 0 { fd } else { -2 };
    }
    (st.fd >= 0).then_some(st.fd)
}

/// A buffer to write: `libc::iovec` where there is one.
#[cfg(target_os = "linux")]
type Buf = libc::iovec;
#[cfg(not(target_os = "linux"))]
type Buf = (*const u8, usize);

/// The buffer of `n` bytes at `p`.
#[cfg(target_os = "linux")]
fn buf(p: *const u8, n: usize) -> Buf {
    libc::iovec {
        iov_base: p as *mut c_void,
        iov_len: n,
    }
}

/// The buffer of `n` bytes at `p`.
#[cfg(not(target_os = "linux"))]
fn buf(p: *const u8, n: usize) -> Buf {
    (p, n)
}

/// Write the buffers `iov` one after another from `at`, in as few calls as
/// the kernel takes them; SQLite's code for a failed write.
#[cfg(not(target_os = "linux"))]
fn write_all(_: c_int, _: &mut [Buf], _: i64) -> c_int {
    ffi::SQLITE_IOERR_WRITE
}

/// Write the buffers `iov` one after another from `at`, in as few calls as
/// the kernel takes them (at most [`MAX_HELD`] frames a call); SQLite's
/// code for a failed write. Every buffer holds at least one byte; a
/// partial write moves the start of the first buffer not fully written.
#[cfg(target_os = "linux")]
fn write_all(fd: c_int, iov: &mut [Buf], mut at: i64) -> c_int {
    let mut i = 0usize;
    loop {
        if i == iov.len() {
            return ffi::SQLITE_OK;
        }
        let count = (iov.len() - i).min(2 * MAX_HELD + 2);
        // SAFETY: every buffer is live for the call (the caller's contract);
        // the descriptor is ours.
        let n = unsafe { libc::pwritev(fd, iov[i..].as_ptr(), count as c_int, at) };
        if n > 0 {
            at += n as i64;
            let mut n = n as usize;
            while n > 0 {
                let b = &mut iov[i];
                if n >= b.iov_len {
                    n -= b.iov_len;
                    i += 1;
                } else {
                    // SAFETY: within the same buffer.
                    b.iov_base = unsafe { (b.iov_base as *mut u8).add(n) } as *mut c_void;
                    b.iov_len -= n;
                    n = 0;
                }
            }
            continue;
        }
        let err = std::io::Error::last_os_error().raw_os_error();
        if n < 0 && err == Some(libc::EINTR) {
            continue;
        }
        return if n == 0 || err == Some(libc::ENOSPC) {
            ffi::SQLITE_FULL
        } else {
            ffi::SQLITE_IOERR_WRITE
        };
    }
}

unsafe extern "C" fn wal_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    n: c_int,
    off: i64,
) -> c_int {
    // SAFETY: the module contract; `buf` holds `n` bytes for the call.
    let (r, m, st) = parts(f);
    let data = std::slice::from_raw_parts(buf as *const u8, n.max(0) as usize);
    if st.at >= 0 && off == st.at + FRAME_HEADER as i64 && !data.is_empty() && st.fd >= 0 {
        // The page of the held header. Bytes 4..8 of a frame header: the
        // database size after a commit, 0 in a frame that ends none.
        let ends_commit = st.header[4..8] != [0; 4];
        if COMMITTING.get() && !ends_commit && st.held.len() < MAX_HELD {
            if st.held.is_empty() {
                st.held_at = st.at;
                HOLDING.set(st);
            }
            st.held.push(Held {
                header: st.header,
                page: data.as_ptr(),
                len: data.len(),
            });
            st.at = -1;
            st.end = off + i64::from(n);
            return ffi::SQLITE_OK;
        }
        let rc = write_held(st, Some(data));
        if rc == ffi::SQLITE_OK {
            st.end = off + i64::from(n);
        }
        return rc;
    }
    // A frame header appended to the log: its page comes next. (After held
    // frames, it is the next frame of the same commit.)
    let appended = data.len() == FRAME_HEADER && off >= WAL_HEADER && off == st.end;
    if appended && st.at < 0 && descriptor(st).is_some() {
        st.header.copy_from_slice(data);
        st.at = off;
        return ffi::SQLITE_OK;
    }
    let rc = flush(f);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    if appended && descriptor(st).is_some() {
        // A frame header appended to the log: its page comes next.
        st.header.copy_from_slice(data);
        st.at = off;
        return ffi::SQLITE_OK;
    }
    let rc = (m.xWrite.expect("xWrite"))(r, buf, n, off);
    #[cfg(test)]
    tests::count_write();
    if rc == ffi::SQLITE_OK {
        st.end = off + i64::from(n);
    }
    rc
}

unsafe extern "C" fn wal_close(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: the module contract; SQLite closes a file once, so its state
    // (boxed by `x_open`) is freed once, and its descriptor closed once.
    let flushed = flush(f);
    let (r, m, _) = parts(f);
    let rc = (m.xClose.expect("xClose"))(r);
    let w = f as *mut WalFile;
    let st = Box::from_raw((*w).state);
    (*w).state = std::ptr::null_mut();
    if HOLDING.get() == (&*st as *const State).cast_mut() {
        HOLDING.set(std::ptr::null_mut());
    }
    if st.fd >= 0 {
        libc::close(st.fd);
    }
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        rc
    }
}

/// A call that uses what was written: a held header is written first.
macro_rules! after_flush {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: the module contract; the arguments go to the file
            // below as SQLite gave them.
            let rc = flush(f);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            let (r, m, _) = parts(f);
            (m.$field.expect(stringify!($field)))(r, $($arg),*)
        }
    };
}

/// A call about the file, not its contents.
macro_rules! forward {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: the module contract; the arguments go to the file
            // below as SQLite gave them.
            let (r, m, _) = parts(f);
            (m.$field.expect(stringify!($field)))(r, $($arg),*)
        }
    };
}

after_flush!(wal_read, xRead, (buf: *mut c_void, n: c_int, off: i64));
after_flush!(wal_truncate, xTruncate, (size: i64));
after_flush!(wal_sync, xSync, (flags: c_int));
after_flush!(wal_file_size, xFileSize, (size: *mut i64));
after_flush!(wal_file_control, xFileControl, (op: c_int, arg: *mut c_void));
after_flush!(wal_lock, xLock, (level: c_int));
after_flush!(wal_unlock, xUnlock, (level: c_int));
forward!(wal_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));
forward!(wal_sector_size, xSectorSize, ());
forward!(wal_device_characteristics, xDeviceCharacteristics, ());

/// Methods of a WAL file (version 1: a WAL file is neither mapped nor
/// shared memory).
static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(wal_close),
    xRead: Some(wal_read),
    xWrite: Some(wal_write),
    xTruncate: Some(wal_truncate),
    xSync: Some(wal_sync),
    xFileSize: Some(wal_file_size),
    xLock: Some(wal_lock),
    xUnlock: Some(wal_unlock),
    xCheckReservedLock: Some(wal_check_reserved_lock),
    xFileControl: Some(wal_file_control),
    xSectorSize: Some(wal_sector_size),
    xDeviceCharacteristics: Some(wal_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};
    use std::cell::Cell;
    use std::path::Path;

    thread_local! {
        static WRITES: Cell<u64> = const { Cell::new(0) };
    }

    /// One write reached a WAL file, through the VFS below or this VFS's
    /// own descriptor (on this thread).
    pub(crate) fn count_write() {
        WRITES.with(|w| w.set(w.get() + 1));
    }

    /// Writes to WAL files on this thread so far.
    fn writes() -> u64 {
        WRITES.with(|w| w.get())
    }

    fn ours(path: &Path) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let c = Connection::open_with_flags_and_vfs(path, flags, vfs_name()).unwrap();
        c.pragma_update(None, "page_size", 2048).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.pragma_update(None, "synchronous", "NORMAL").unwrap();
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        c
    }

    fn wal_len(path: &Path) -> u64 {
        let mut p = path.as_os_str().to_owned();
        p.push("-wal");
        std::fs::metadata(p).map_or(0, |m| m.len())
    }

    /// The rows as the plain unix VFS of another connection reads them.
    fn seen(path: &Path) -> (i64, i64) {
        let c = Connection::open(path).unwrap();
        let n = c
            .query_row(
                "SELECT count(*), coalesce(sum(length(v)), 0) FROM t",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        n
    }

    /// The rows of a copy of the database and WAL files (no WAL index): what
    /// SQLite recovers from the frames on disk, checksums and all.
    fn recovered(path: &Path) -> (i64, i64) {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("copy.db");
        std::fs::copy(path, &copy).unwrap();
        let (mut from, mut to) = (path.as_os_str().to_owned(), copy.as_os_str().to_owned());
        from.push("-wal");
        to.push("-wal");
        std::fs::copy(from, to).unwrap();
        seen(&copy)
    }

    /// A connection of ours to a new store with tables `t` and `u`.
    fn two_tables(path: &Path) -> Connection {
        let c = ours(path);
        c.execute_batch(
            "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB);
             CREATE TABLE u (k INTEGER PRIMARY KEY, v BLOB);",
        )
        .unwrap();
        c
    }

    #[test]
    fn each_frame_reaches_the_wal_in_one_write_that_other_connections_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let c = two_tables(&path);
        for round in 0..20i64 {
            let (before, len) = (writes(), wal_len(&path));
            let tx = c.unchecked_transaction().unwrap();
            // Three pages at least: two rows of 1.5 KiB in `t`, one in `u`.
            for k in 0..2 {
                tx.execute("INSERT INTO t VALUES (?1, zeroblob(1500))", [round * 2 + k])
                    .unwrap();
            }
            tx.execute("INSERT INTO u VALUES (?1, zeroblob(1500))", [round])
                .unwrap();
            tx.commit().unwrap();
            let frames = (wal_len(&path) - len) / (24 + 2048);
            assert!(frames >= 3, "round {round}: {frames} frames");
            assert_eq!(
                writes() - before,
                frames,
                "round {round}: one write a frame"
            );
            assert_eq!(seen(&path), ((round + 1) * 2, (round + 1) * 2 * 1500));
        }
        assert_eq!(recovered(&path), (40, 40 * 1500));
    }

    #[test]
    fn a_commit_reaches_the_wal_in_one_write_that_other_connections_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let c = two_tables(&path);
        let mut rows = 0i64;
        for round in 0..12i64 {
            // Rows of 1.5 KiB, one a page: 3 frames at least, and in one
            // round more frames than are held before a write.
            let n = if round == 7 { 600 } else { 2 + round % 3 };
            let (before, len) = (writes(), wal_len(&path));
            let tx = c.unchecked_transaction().unwrap();
            for k in 0..n {
                tx.execute("INSERT INTO t VALUES (?1, zeroblob(1500))", [rows + k])
                    .unwrap();
            }
            tx.execute("INSERT INTO u VALUES (?1, zeroblob(1500))", [round])
                .unwrap();
            committing(|| tx.commit()).unwrap();
            rows += n;
            let frames = (wal_len(&path) - len) / (24 + 2048);
            assert!(frames > n as u64, "round {round}: {frames} frames");
            assert_eq!(
                writes() - before,
                frames.div_ceil(MAX_HELD as u64 + 1),
                "round {round}: {frames} frames"
            );
            assert_eq!(seen(&path), (rows, rows * 1500));
            // The next commit outside `committing` writes frame by frame.
            let before = writes();
            c.execute("INSERT INTO u VALUES (?1, zeroblob(1500))", [100 + round])
                .unwrap();
            assert!(writes() - before >= 2, "round {round}");
        }
        assert_eq!(recovered(&path), (rows, rows * 1500));
    }

    /// The WAL file object of `c` (SQLite's own pointer to it).
    fn wal_file(c: &Connection) -> *mut ffi::sqlite3_file {
        let mut f: *mut ffi::sqlite3_file = std::ptr::null_mut();
        // SAFETY: a live connection; the file control writes one pointer.
        let rc = unsafe {
            ffi::sqlite3_file_control(
                c.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_JOURNAL_POINTER,
                (&mut f as *mut *mut ffi::sqlite3_file).cast(),
            )
        };
        assert_eq!(rc, ffi::SQLITE_OK);
        assert!(!f.is_null());
        f
    }

    #[test]
    fn frames_held_by_a_commit_that_never_wrote_its_commit_frame_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let a = ours(&path);
        a.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
            .unwrap();
        a.execute("INSERT INTO t VALUES (1, zeroblob(1000))", [])
            .unwrap();
        let b = ours(&path);
        let len = wal_len(&path) as i64;
        let f = wal_file(&a);
        // Two frames that end no commit (a commit size of 0), as SQLite
        // writes them: header, then page, at the end of the log.
        let page = vec![0xa5u8; 2048];
        let mut header = [0u8; FRAME_HEADER];
        header[3] = 2;
        let before = writes();
        committing(|| {
            for i in 0..2i64 {
                let at = len + i * (24 + 2048);
                // SAFETY: the live WAL file of `a`, buffers live for the calls.
                unsafe {
                    let m = &*(*f).pMethods;
                    let w = m.xWrite.unwrap();
                    assert_eq!(w(f, header.as_ptr().cast(), 24, at), ffi::SQLITE_OK);
                    assert_eq!(w(f, page.as_ptr().cast(), 2048, at + 24), ffi::SQLITE_OK);
                }
            }
        });
        assert_eq!(writes(), before, "the frames are held");
        // B commits where they were to go, and A's next use of its WAL file
        // writes nothing of them.
        b.execute("INSERT INTO t VALUES (2, zeroblob(1000))", [])
            .unwrap();
        let before = writes();
        let n: i64 = a
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
        a.execute("INSERT INTO t VALUES (3, zeroblob(1000))", [])
            .unwrap();
        assert!(writes() - before >= 2);
        assert_eq!(recovered(&path), (3, 3000));
        drop((a, b));
        assert_eq!(seen(&path), (3, 3000));
    }

    #[test]
    fn frames_of_a_transaction_that_committed_nothing_never_overwrite_another_writers_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let a = ours(&path);
        a.pragma_update(None, "cache_size", 8).unwrap();
        a.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB, u INTEGER UNIQUE)")
            .unwrap();
        let b = ours(&path);
        for round in 0..6i64 {
            // An empty WAL: undoing the frames below reads nothing from it.
            a.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap();
            assert_eq!(wal_len(&path), 0);
            // A spills frames of a transaction it rolls back, or of a
            // statement that fails on its last row and commits nothing ...
            let spill =
                "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20)
                 INSERT INTO t (v, u) SELECT randomblob(1500), CASE i WHEN 20 THEN ?1 END FROM c";
            if round % 2 == 0 {
                let tx = a.unchecked_transaction().unwrap();
                tx.execute(spill, [None::<i64>]).unwrap();
                tx.rollback().unwrap();
            } else {
                let e = a.execute(spill, [Some(-1i64)]).unwrap_err();
                assert!(e.to_string().contains("UNIQUE"), "{e}");
            }
            // ... B commits its own where they were to go ...
            let u = if round == 0 { -1 } else { round };
            b.execute("INSERT INTO t (v, u) VALUES (zeroblob(1000), ?1)", [u])
                .unwrap();
            // ... and A's next use of its WAL file writes nothing of them.
            let n: i64 = a
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, round + 1);
            assert_eq!(recovered(&path), (round + 1, (round + 1) * 1000));
            assert_eq!(seen(&path), (round + 1, (round + 1) * 1000));
        }
        drop(a);
        assert_eq!(seen(&path), (6, 6000));
    }

    #[test]
    fn spills_rollbacks_restarts_and_rewrites_keep_the_file_as_sqlite_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let c = ours(&path);
        // A small page cache: large transactions spill frames to the WAL
        // before their commit, and read them back.
        c.pragma_update(None, "cache_size", 8).unwrap();
        c.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
            .unwrap();
        let (mut rows, mut bytes) = (0i64, 0i64);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for round in 0..60 {
            let n = 1 + next(if round % 7 == 0 { 400 } else { 12 }) as i64;
            let size = 10 + next(1800) as i64;
            let tx = c.unchecked_transaction().unwrap();
            for _ in 0..n {
                tx.execute("INSERT INTO t (v) VALUES (zeroblob(?1))", [size])
                    .unwrap();
            }
            // Reads inside the transaction find what it spilled.
            let inside: i64 = tx
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(inside, rows + n);
            if next(5) == 0 {
                tx.rollback().unwrap();
            } else {
                if next(3) == 0 {
                    tx.execute("UPDATE t SET v = zeroblob(?1) WHERE k % 5 = 0", [size])
                        .unwrap();
                    bytes = tx
                        .query_row("SELECT sum(length(v)) FROM t", [], |r| r.get(0))
                        .unwrap();
                } else {
                    bytes += n * size;
                }
                if next(2) == 0 {
                    committing(|| tx.commit()).unwrap();
                } else {
                    tx.commit().unwrap();
                }
                rows += n;
            }
            // Nothing of the commit waits in memory: the files on disk
            // recover to it before this connection does anything else.
            assert_eq!(recovered(&path), (rows, bytes), "round {round}");
            assert_eq!(seen(&path), (rows, bytes), "round {round}");
            if next(6) == 0 {
                // Copy everything back and start the WAL over from its
                // first frame.
                c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
                    .unwrap();
            }
        }
        assert_eq!(recovered(&path), (rows, bytes));
        drop(c);
        assert_eq!(seen(&path), (rows, bytes));
    }
}
