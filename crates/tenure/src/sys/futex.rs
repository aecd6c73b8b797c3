//! The two futex calls tenure makes (Linux): sleep while a 32-bit word
//! holds a value, and wake every sleeper on a word.
//!
//! A word in memory shared between processes (the writer queue's mapping)
//! needs [`Scope::Shared`]; a word only this process's threads use (a
//! commit group's bell) takes the cheaper [`Scope::Private`].

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Who can sleep on a word.
#[derive(Clone, Copy)]
pub(crate) enum Scope {
    /// Threads of any process mapping the word's page.
    Shared,
    /// Threads of this process only.
    Private,
}

impl Scope {
    fn op(self, op: libc::c_int) -> libc::c_int {
        match self {
            Scope::Shared => op,
            Scope::Private => op | libc::FUTEX_PRIVATE_FLAG,
        }
    }
}

/// Sleep while `word` holds `expected`, at most `timeout` (`None`: until
/// woken). Returns at once if the word holds another value; may also
/// return early for no reason: callers check their condition again.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>, scope: Scope) {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a futex wait on a live 32-bit word with an optional timeout
    // that outlives the call; it writes nothing.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            scope.op(libc::FUTEX_WAIT),
            expected,
            ts_ptr,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

/// Wake every thread sleeping on `word`.
pub(crate) fn wake_all(word: &AtomicU32, scope: Scope) {
    // SAFETY: a futex wake on a live 32-bit word; it reads nothing else.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            scope.op(libc::FUTEX_WAKE),
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0,
        );
    }
}
