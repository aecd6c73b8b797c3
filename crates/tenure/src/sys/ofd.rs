//! Open-file-description byte locks (`F_OFD_SETLK`, `F_OFD_SETLKW`,
//! `F_OFD_GETLK`): they belong to one open file description, so two
//! descriptors of one process exclude each other, and closing the
//! description releases them.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Which lock call.
#[derive(Clone, Copy)]
pub(crate) enum Cmd {
    /// Take or release without waiting (`F_OFD_SETLK`).
    Set,
    /// Take, waiting while another description holds a conflicting lock
    /// (`F_OFD_SETLKW`).
    SetWait,
    /// Test (`F_OFD_GETLK`): what would conflict with the lock asked for.
    Get,
}

/// A lock record as the kernel left it.
pub(crate) type Record = libc::flock;

/// One lock call of `kind` (`F_WRLCK`, `F_RDLCK`, `F_UNLCK`) over `len`
/// bytes from `start` (`len` 0: to the end of the file and beyond) on
/// `file`'s description; the record as the kernel left it, or `None` if
/// the call failed.
pub(crate) fn lock(
    file: &File,
    cmd: Cmd,
    kind: libc::c_int,
    start: i64,
    len: i64,
) -> Option<Record> {
    let cmd = match cmd {
        Cmd::Set => libc::F_OFD_SETLK,
        Cmd::SetWait => libc::F_OFD_SETLKW,
        Cmd::Get => libc::F_OFD_GETLK,
    };
    // SAFETY: a zeroed flock is valid (l_pid 0, as the OFD commands
    // require); fcntl with one of the three OFD lock commands reads and
    // writes only it, and takes, releases or tests a lock of our own open
    // descriptor.
    unsafe {
        let mut fl: libc::flock = std::mem::zeroed();
        fl.l_type = kind as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = start;
        fl.l_len = len;
        (libc::fcntl(file.as_raw_fd(), cmd, &mut fl) == 0).then_some(fl)
    }
}
