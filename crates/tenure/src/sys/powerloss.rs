//! A model of power failure for tests: a SQLite VFS over the default one
//! that keeps, for every file of a modelled store, the image its last
//! `fsync` made durable.
//!
//! An fsync makes durable everything written to the file so far, by any
//! connection (the kernel's rule for one inode); writes not yet synced are
//! what a power failure takes. [`cut_into`] copies a store as a power
//! failure right now would leave it: each file as of its last sync, no
//! shared-memory index (SQLite rebuilds it from the WAL), no queue file
//! (the machine rebooted).
//!
//! # Safety
//!
//! Every `unsafe fn` here is a VFS or file method (or a helper of one) that
//! only SQLite calls, as its VFS interface promises: `name` is a
//! NUL-terminated path or null, `file` a zeroed object of this VFS's
//! `szOsFile` bytes (a [`ModelFile`]) that `x_open` set up and that is used
//! by one thread at a time, and every buffer is valid for the length given,
//! for the call. The `// SAFETY:` line of each says what else it relies on.

use rusqlite::ffi;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The VFS name connections to a modelled store open with.
pub(crate) const NAME: &CStr = c"tenure-powerloss";

/// Database paths under the model.
static MODELLED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Whether connections to `path` open through the model.
pub(crate) fn covers(path: &Path) -> bool {
    MODELLED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|p| p == path)
}

/// Put the store at `path` under the model. Its files as they are now
/// count as durable (call it on a closed store); connections opened from
/// now on go through the model.
pub(crate) fn model(path: &Path) {
    register();
    for f in files(path) {
        if f.exists() {
            snapshot(&f);
        }
    }
    MODELLED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(path.to_path_buf());
}

/// Copy the store at `path` to `dest` as a power failure now would leave
/// it: the database and WAL files as their last sync left them.
pub(crate) fn cut_into(path: &Path, dest: &Path) {
    for (from, to) in files(path).into_iter().zip(files(dest)) {
        let image = durable_image(&from);
        if image.exists() {
            std::fs::copy(&image, &to).unwrap();
        }
    }
}

fn files(db: &Path) -> [PathBuf; 2] {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    [db.to_path_buf(), PathBuf::from(wal)]
}

fn durable_image(file: &Path) -> PathBuf {
    let mut p = file.as_os_str().to_owned();
    p.push(".durable");
    PathBuf::from(p)
}

/// Record the file's current contents as its durable image.
fn snapshot(file: &Path) {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let image = durable_image(file);
    let mut tmp = image.clone().into_os_string();
    tmp.push(".tmp");
    if std::fs::copy(file, &tmp).is_ok() {
        let _ = std::fs::rename(&tmp, &image);
    }
}

/// The model's file: SQLite's file object first, then the default VFS's.
#[repr(C)]
struct ModelFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// The path of a database or WAL file under the model (else null).
    path: *mut PathBuf,
}

struct Registered(*mut ffi::sqlite3_vfs);
// SAFETY: the VFS is leaked and never changed after registration.
unsafe impl Send for Registered {}
// SAFETY: as for `Send`: nothing writes through the pointer.
unsafe impl Sync for Registered {}

static VFS: OnceLock<Registered> = OnceLock::new();

fn real_vfs() -> *mut ffi::sqlite3_vfs {
    // SAFETY: the model's pAppData is the default VFS it wraps.
    unsafe { (*VFS.get().expect("registered").0).pAppData as *mut ffi::sqlite3_vfs }
}

fn register() {
    VFS.get_or_init(|| {
        // SAFETY: the default VFS outlives the process; the new VFS copies it
        // and replaces only its size, name and xOpen, then is leaked.
        unsafe {
            let real = ffi::sqlite3_vfs_find(std::ptr::null());
            assert!(!real.is_null());
            let mut vfs: ffi::sqlite3_vfs = std::ptr::read(real);
            vfs.szOsFile = std::mem::size_of::<ModelFile>() as c_int;
            vfs.zName = NAME.as_ptr();
            vfs.pNext = std::ptr::null_mut();
            vfs.pAppData = real as *mut c_void;
            vfs.xOpen = Some(x_open);
            vfs.xFullPathname = Some(x_full_pathname);
            let vfs = Box::into_raw(Box::new(vfs));
            assert_eq!(ffi::sqlite3_vfs_register(vfs, 0), ffi::SQLITE_OK);
            Registered(vfs)
        }
    });
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: the module contract; the call goes to the default VFS as is.
    let real = real_vfs();
    ((*real).xFullPathname.unwrap())(real, name, n, out)
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: the module contract; the default VFS's object is allocated
    // here with SQLite's allocator, zeroed, opened, and freed by `x_close`;
    // the path is boxed here and freed by `x_close`.
    let real_vfs = real_vfs();
    let f = file as *mut ModelFile;
    (*f).base.pMethods = std::ptr::null();
    let size = (*real_vfs).szOsFile as usize;
    let real = ffi::sqlite3_malloc(size as c_int) as *mut ffi::sqlite3_file;
    if real.is_null() {
        return ffi::SQLITE_NOMEM;
    }
    std::ptr::write_bytes(real as *mut u8, 0, size);
    let rc = ((*real_vfs).xOpen.unwrap())(real_vfs, name, real, flags, out_flags);
    if rc != ffi::SQLITE_OK {
        ffi::sqlite3_free(real as *mut c_void);
        return rc;
    }
    let kept = flags & (ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_WAL) != 0;
    (*f).real = real;
    (*f).path = if kept && !name.is_null() {
        let p = PathBuf::from(CStr::from_ptr(name).to_string_lossy().into_owned());
        Box::into_raw(Box::new(p))
    } else {
        std::ptr::null_mut()
    };
    (*f).base.pMethods = &METHODS;
    ffi::SQLITE_OK
}

unsafe fn real(
    f: *mut ffi::sqlite3_file,
) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    // SAFETY: `f` is a file `x_open` set up and `x_close` has not closed: its
    // object below is open (methods set); its methods are static.
    let r = (*(f as *mut ModelFile)).real;
    (r, &*(*r).pMethods)
}

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: the module contract; SQLite closes a file once, so its object
    // below and its path are freed once.
    let (r, m) = real(f);
    let rc = (m.xClose.unwrap())(r);
    ffi::sqlite3_free(r as *mut c_void);
    let mf = f as *mut ModelFile;
    if !(*mf).path.is_null() {
        drop(Box::from_raw((*mf).path));
        (*mf).path = std::ptr::null_mut();
    }
    rc
}

unsafe extern "C" fn x_sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: the module contract; `path` is null or the file's boxed path.
    let (r, m) = real(f);
    let rc = (m.xSync.unwrap())(r, flags);
    let path = (*(f as *mut ModelFile)).path;
    if rc == ffi::SQLITE_OK && !path.is_null() {
        snapshot(&*path);
    }
    rc
}

macro_rules! forward {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: the module contract; the arguments go to the file
            // below as SQLite gave them.
            let (r, m) = real(f);
            (m.$field.unwrap())(r, $($arg),*)
        }
    };
}

forward!(x_read, xRead, (buf: *mut c_void, n: c_int, off: i64));
forward!(x_write, xWrite, (buf: *const c_void, n: c_int, off: i64));
forward!(x_truncate, xTruncate, (size: i64));
forward!(x_file_size, xFileSize, (size: *mut i64));
forward!(x_lock, xLock, (level: c_int));
forward!(x_unlock, xUnlock, (level: c_int));
forward!(x_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));
forward!(x_file_control, xFileControl, (op: c_int, arg: *mut c_void));
forward!(x_sector_size, xSectorSize, ());
forward!(x_device_characteristics, xDeviceCharacteristics, ());
forward!(x_shm_map, xShmMap, (region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
forward!(x_shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int));
forward!(x_shm_unmap, xShmUnmap, (delete: c_int));

unsafe extern "C" fn x_shm_barrier(f: *mut ffi::sqlite3_file) {
    // SAFETY: the module contract; the call goes to the file below as is.
    let (r, m) = real(f);
    (m.xShmBarrier.unwrap())(r)
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};
