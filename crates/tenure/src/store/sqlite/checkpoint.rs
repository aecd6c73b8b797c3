//! Checkpoints on a thread of the store's own.
//!
//! A checkpoint copies committed pages from the WAL into the database
//! file: it syncs the WAL, writes each page the WAL holds and syncs the
//! file. SQLite runs one on the committing thread, after the commit that
//! took the WAL past 1 000 frames, so that caller waits for two syncs and
//! every page copied. tenure's connections hand that work to one thread per
//! open store (per process) instead: their WAL hook asks it for a checkpoint
//! once the WAL holds [`START`] frames (once until the WAL starts over),
//! and returns at once. The thread runs a `PASSIVE` checkpoint on a
//! connection of its own: it never waits for a writer or a reader, and no
//! writer or reader waits for it.
//!
//! While writers keep committing, the WAL is never entirely copied when
//! the next writer begins, so SQLite cannot start it over from its first
//! frame (a writer restarts the WAL only when every frame was copied). A
//! commit that finds [`INLINE`] frames or more therefore checkpoints itself,
//! as SQLite would (after the thread's checkpoint, if one is running): the
//! thread has copied the frames up to its last request, so that checkpoint
//! copies only the later ones, and the next writer starts the WAL over. A
//! request the thread takes up only after such a commit checkpointed
//! itself is dropped: it would find nothing to copy, and its locks on the
//! WAL's read marks (or the schema read that opens its connection) could
//! keep that next writer from starting the WAL over. So the WAL of one
//! process's writers stays below [`INLINE`] frames plus what one commit
//! adds, whatever the thread manages; as with SQLite's own checkpoints, a
//! reader still using old frames, or another process's checkpoint running,
//! lets it grow until a later commit's checkpoint completes. If the thread
//! cannot start, commits checkpoint from [`INLINE`] frames on. A longer WAL
//! would leave more to the thread but costs every commit more: SQLite's
//! index of the WAL finds a page's newest frame by probing past its older
//! ones.
//!
//! Checkpoints move committed pages and change no content: what a commit
//! acknowledges, and when it is durable (at its commit with `FULL`; with
//! `NORMAL`, once a checkpoint has synced the WAL), are as before.

use super::{configure, open_connection, Synchronous};
use crate::sys::sqlite;
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// WAL frames from which a commit asks the thread for a checkpoint
/// (SQLite's own threshold).
pub(super) const START: i32 = 1_000;
/// WAL frames from which a commit checkpoints itself.
pub(super) const INLINE: i32 = 2_000;

/// The part the WAL hook of every connection of the store points at.
pub(super) struct Shared {
    /// Itself, for the thread it starts.
    me: Weak<Shared>,
    path: PathBuf,
    sync: Synchronous,
    busy: Duration,
    state: Mutex<State>,
    wake: Condvar,
    /// Held by whoever of this process runs a checkpoint: a commit's own
    /// waits for the thread's to end (SQLite would refuse it as busy).
    pass: Mutex<()>,
    /// The thread was asked since the WAL last started over.
    asked: AtomicBool,
    /// Checkpoints the thread ran.
    passes: AtomicU64,
    /// Checkpoints commits ran themselves (counted under `pass`).
    inline: AtomicU64,
    /// Requests the thread dropped because a commit had checkpointed
    /// itself since.
    dropped: AtomicU64,
}

#[derive(Default)]
struct State {
    /// A checkpoint is asked for: the count of `inline` when it was.
    wanted: Option<u64>,
    stop: bool,
    /// The process that started the thread (a forked child has none).
    started_by: Option<u32>,
    thread: Option<JoinHandle<()>>,
}

/// The checkpoint thread of one open store; dropping it stops the thread
/// and waits for it.
pub(super) struct Checkpointer {
    shared: Arc<Shared>,
}

impl Checkpointer {
    pub(super) fn new(path: PathBuf, sync: Synchronous, busy: Duration) -> Checkpointer {
        Checkpointer {
            shared: Arc::new_cyclic(|me| Shared {
                me: me.clone(),
                path,
                sync,
                busy,
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
                pass: Mutex::new(()),
                asked: AtomicBool::new(false),
                passes: AtomicU64::new(0),
                inline: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
            }),
        }
    }

    /// What the WAL hook of each of the store's connections calls
    /// ([`sqlite::Prepared::new`] installs it).
    pub(super) fn hook(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// How many checkpoints the thread ran, how many commits ran
    /// themselves and how many requests the thread dropped.
    #[cfg(test)]
    pub(super) fn counts(&self) -> (u64, u64, u64) {
        (
            self.shared.passes.load(Ordering::Relaxed),
            self.shared.inline.load(Ordering::Relaxed),
            self.shared.dropped.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let (thread, here) = {
            let mut st = self.shared.lock();
            st.stop = true;
            (st.thread.take(), st.started_by == Some(std::process::id()))
        };
        self.shared.wake.notify_all();
        match thread {
            Some(t) if here => {
                let _ = t.join();
            }
            // A parent's thread (after fork()) is not in this process:
            // nothing to join or detach.
            Some(t) => std::mem::forget(t),
            None => {}
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ask the thread for a checkpoint, starting it if this process has
    /// none. Returns false if it could not be started.
    fn request(&self) -> bool {
        let me = std::process::id();
        let mut st = self.lock();
        if st.stop {
            return false;
        }
        if st.started_by != Some(me) {
            // A thread a parent process started is not in this one:
            // nothing to join or detach.
            if let Some(t) = st.thread.take() {
                std::mem::forget(t);
            }
            let Some(shared) = self.me.upgrade() else {
                return false;
            };
            match std::thread::Builder::new()
                .name("tenure-checkpoint".into())
                .spawn(move || shared.run())
            {
                Ok(t) => {
                    st.thread = Some(t);
                    st.started_by = Some(me);
                }
                Err(_) => return false,
            }
        }
        st.wanted = Some(self.inline.load(Ordering::Relaxed));
        drop(st);
        self.wake.notify_one();
        true
    }

    fn run(&self) {
        // Opened at the first request that stands: opening reads the
        // schema, which must not overlap a writer starting the WAL over.
        let mut conn: Option<Connection> = None;
        loop {
            let asked_at = {
                let mut st = self.lock();
                while st.wanted.is_none() && !st.stop {
                    st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                if st.stop {
                    return;
                }
                st.wanted.take()
            };
            let _pass = self.pass.lock().unwrap_or_else(|p| p.into_inner());
            if asked_at != Some(self.inline.load(Ordering::Relaxed)) {
                // A commit checkpointed itself since the request.
                self.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if conn.is_none() {
                conn = open_connection(&self.path)
                    .ok()
                    .filter(|c| configure(c, self.sync, self.busy).is_ok());
            }
            let Some(conn) = &conn else {
                // Commits checkpoint themselves from `INLINE` frames on.
                return;
            };
            // A busy checkpoint (another process's running) is simply asked
            // for again by a later commit.
            sqlite::checkpoint_passive(conn);
            self.passes.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The WAL hook of every connection of the store: SQLite calls it after
/// every commit with the number of frames in the WAL.
impl sqlite::WalHook for Shared {
    fn committed(&self, frames: i32, checkpoint: &mut dyn FnMut()) {
        let inline = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if frames < START {
                self.asked.store(false, Ordering::Relaxed);
                return false;
            }
            if frames >= INLINE {
                return true;
            }
            if self.asked.swap(true, Ordering::Relaxed) {
                return false;
            }
            !self.request()
        }))
        .unwrap_or(true);
        if inline {
            let _pass = self.pass.lock().unwrap_or_else(|p| p.into_inner());
            checkpoint();
            self.inline.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The thread drops a request that a commit's own checkpoint overtook
    /// (it would copy nothing and only hold read-mark locks while the next
    /// writer starts the WAL over), and runs one that none overtook.
    #[test]
    fn a_request_a_commit_overtook_is_dropped_and_one_it_did_not_is_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        open_connection(&path)
            .unwrap()
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t(x);")
            .unwrap();
        let cp = Checkpointer::new(path, Synchronous::Full, Duration::from_secs(1));
        let shared = &cp.shared;
        {
            // The thread is asked while a commit checkpoints itself.
            let _commit = shared.pass.lock().unwrap();
            assert!(shared.request());
            shared.inline.fetch_add(1, Ordering::Relaxed);
        }
        wait_for("the overtaken request was not dropped", || {
            cp.counts().2 == 1
        });
        assert_eq!(cp.counts().0, 0, "a checkpoint ran after the commit's own");
        assert!(shared.request());
        wait_for("the thread never checkpointed", || cp.counts().0 == 1);
        assert_eq!(cp.counts(), (1, 1, 1));
    }
}
