//! Durable commits without holding the writer lock through the fsync.
//!
//! At `synchronous = FULL` SQLite syncs the WAL inside `COMMIT`, while the
//! writer lock is held: every other writer of every process waits for the
//! disk. With a writer queue file (see [`super::writer_queue`]) tenure
//! instead runs its connections at `NORMAL` (the WAL is written, not
//! synced, at `COMMIT`) and syncs the WAL itself after the writer lock is
//! released, before anything is returned to the caller: the next writer's
//! transaction runs while this one's fsync is in flight.
//!
//! Why this loses nothing a caller was told:
//!
//! - a commit's caller returns only after an fsync of the WAL that began
//!   after its frames were written (the commit counters below); a failed
//!   fsync is the caller's error;
//! - a transaction that ended without committing (a read, a refused
//!   operation) may have seen commits not yet durable; it returns only
//!   after an fsync that began after every commit it may have seen was
//!   written: an answer is never derived from a commit a power failure can
//!   still take back;
//! - the WAL is a log: recovery keeps a prefix of its commits (checksums
//!   chain every frame to the one before), so a commit that read another
//!   commit's rows can only survive together with it; a checkpoint syncs
//!   the WAL before it copies a page into the database file, at `NORMAL`
//!   as at `FULL`, and SQLite syncs a restarted WAL's header.
//!
//! The counters live in the queue file, shared by every process of the
//! store: `begun` (a commit numbers itself under the writer lock before its
//! `COMMIT`), `written` (its `COMMIT` returned) and `durable` (an fsync
//! that began after that commit was written returned). An fsync is skipped
//! when `durable` already covers what the transaction may have seen, so a
//! writer whose successor's fsync covered it pays none.

use super::conn::sync_wal;
use super::writer_queue::WriterQueue;
use crate::error::{Error, Result};
use rusqlite::Connection;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A process's means of syncing a store's WAL: a connection of its own,
/// outside the pool (so the connection a transaction used goes back to the
/// pool, its page cache warm, before the fsync), opened at first use. Its
/// lock also makes one thread's fsync cover the threads that wait for it.
#[derive(Default)]
pub(super) struct Syncer(Mutex<Option<Connection>>);

/// How long a caller waits for one process's fsync before it syncs alone
/// (that process may have died during it).
const STALE: Duration = Duration::from_millis(100);
/// How long one wait for an fsync in flight lasts before looking again.
const RECHECK: Duration = Duration::from_millis(2);

/// Return once every commit up to `seen` is durable: at once when the
/// counters say so, else after an fsync of the WAL. One fsync runs at a
/// time, in the whole store: a caller that finds one in flight waits for
/// it and looks again (it may have covered this caller's commits, or the
/// next one, led by one of its waiters, covers all of theirs), so commits
/// that pile up behind one fsync share the next.
pub(super) fn settle(
    queue: &WriterQueue,
    syncer: &Syncer,
    open: impl FnOnce() -> Result<Connection>,
    seen: u64,
) -> Result<()> {
    if queue.durable() >= seen {
        return Ok(());
    }
    let mut conn = syncer.0.lock().unwrap_or_else(|p| p.into_inner());
    let began = Instant::now();
    let mut open = Some(open);
    loop {
        if queue.durable() >= seen {
            return Ok(());
        }
        let led = queue.lead_sync();
        let alone = led.is_none() && began.elapsed() >= STALE;
        if led.is_none() && !alone {
            queue.wait_sync(RECHECK);
            continue;
        }
        if conn.is_none() {
            let opened = (open.take().expect("opened once"))();
            match opened {
                Ok(c) => *conn = Some(c),
                Err(e) => {
                    if led.is_some() {
                        queue.end_sync(None);
                    }
                    return Err(e);
                }
            }
        }
        // Read before the fsync begins: every commit it counts is written.
        let written = led.unwrap_or_else(|| queue.written());
        let synced = sync_wal(conn.as_ref().expect("opened above"));
        if led.is_some() {
            queue.end_sync(synced.is_ok().then_some(written));
        } else if synced.is_ok() {
            queue.made_durable(written);
        }
        if alone {
            queue.drop_stale_sync(queue.wait_sync(Duration::ZERO));
        }
        synced.map_err(|e| {
            Error::Store(format!(
                "the transaction ended, but the store's log could not be made durable: {e}; \
                 whether its commit survives a power failure is unknown"
            ))
        })?;
        // This fsync began after every commit this caller may have seen was
        // written (whatever the counters say of commits begun since).
        return Ok(());
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::store::sqlite::pause::PausePoint;
    use crate::store::sqlite::powerloss;
    use crate::{Authority, Edit, JobSpec, JobState, Options, Synchronous, Ttl};
    use std::path::{Path, PathBuf};

    /// The store whose next ending transaction stops right before it is
    /// made durable: it says so, then waits to be let go.
    static PAUSE: PausePoint<PathBuf> = PausePoint::new();

    /// Called by every transaction of a test build as it ends, after its
    /// COMMIT or ROLLBACK and before [`super::settle`].
    pub(crate) fn before_settle(path: &Path) {
        PAUSE.reach(|armed| armed == path);
    }

    fn open(path: &Path) -> Authority {
        Authority::open(path, &Options::new().synchronous(Synchronous::Full)).unwrap()
    }

    fn ttl() -> Ttl {
        Ttl::from_micros(60_000_000).unwrap()
    }

    /// The state of `job` in the store a power failure now would leave.
    fn after_power_failure(path: &Path, name: &str, job: &str) -> JobState {
        let dest = path.with_file_name(name);
        powerloss::cut_into(path, &dest);
        open(&dest).job("p", job).unwrap().state
    }

    /// A store with jobs `j` and `k`, closed (so durable), under the model.
    fn modelled_store(dir: &Path) -> PathBuf {
        let path = dir.join("t.db");
        let a = open(&path);
        a.create_production("p").unwrap();
        for j in ["j", "k", "l"] {
            a.submit("p", &JobSpec::new(j, b"x".to_vec())).unwrap();
        }
        drop(a);
        powerloss::model(&path);
        path
    }

    #[test]
    fn answers_never_rest_on_a_commit_a_power_failure_can_take_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = modelled_store(dir.path());
        let a = open(&path);
        let b = open(&path);
        std::thread::scope(|s| {
            // A's claim of `job` has committed and released the writer lock,
            // and is not durable yet: a power failure takes it back. What B
            // does while it is paused returns only once that claim is
            // durable.
            let mut cut = 0;
            let mut while_paused = |job: &'static str, observe: &dyn Fn() -> Option<Edit>| {
                let (reached, go) = PAUSE.arm(path.clone());
                let claim = s.spawn(|| a.claim("p", job, "a", ttl()));
                reached.recv().unwrap();
                cut += 2;
                let before = format!("cut{}.db", cut - 1);
                assert_eq!(
                    after_power_failure(&path, &before, job),
                    JobState::Requested
                );
                // An edit B keeps open stays open through the cut.
                let open_edit = observe();
                let after = format!("cut{cut}.db");
                assert_eq!(after_power_failure(&path, &after, job), JobState::Claimed);
                drop(open_edit);
                go.send(()).unwrap();
                claim.join().unwrap().unwrap();
            };
            // B reads it claimed.
            while_paused("j", &|| {
                assert_eq!(b.job("p", "j").unwrap().state, JobState::Claimed);
                None
            });
            // B's claim, refused because A's claim is committed.
            while_paused("k", &|| {
                assert!(b.claim("p", "k", "b", ttl()).is_err());
                None
            });
            // An edit hands out what it reads before it ends: it begins
            // only once what it can see is durable.
            while_paused("l", &|| {
                let mut edit = b.edit().unwrap();
                assert!(edit.claim("p", "l", "b", ttl()).is_err());
                Some(edit)
            });
        });
    }

    /// The queue file's header words as `(offset, value)`, for this boot.
    fn queue_file_of_this_boot(path: &Path, words: &[(usize, u64)]) -> PathBuf {
        let mut queue = path.as_os_str().to_owned();
        queue.push("-tenure-queue");
        let boot = crate::store::sqlite::writer_queue::boot_id().unwrap();
        let mut header = vec![0u8; 4096];
        let mut put = |w: usize, v: u64| header[w..w + 8].copy_from_slice(&v.to_ne_bytes());
        put(48, (boot >> 64) as u64);
        put(56, boot as u64);
        for &(w, v) in words {
            put(w, v);
        }
        std::fs::write(&queue, &header).unwrap();
        PathBuf::from(queue)
    }

    #[test]
    fn an_fsync_owner_that_died_holds_nobody_back_for_long() {
        let dir = tempfile::tempdir().unwrap();
        let path = modelled_store(dir.path());
        // A process claimed the fsync (byte 328) and died.
        let queue = queue_file_of_this_boot(&path, &[(328, 7)]);
        let a = open(&path);
        let began = std::time::Instant::now();
        a.claim("p", "j", "a", ttl()).unwrap();
        assert!(
            began.elapsed() >= super::STALE,
            "it waited for the owner first"
        );
        assert_eq!(after_power_failure(&path, "cut.db", "j"), JobState::Claimed);
        let header = std::fs::read(&queue).unwrap();
        assert_eq!(header[328..336], [0u8; 8], "the dead owner was forgotten");
        a.claim("p", "k", "a", ttl()).unwrap();
        assert_eq!(
            after_power_failure(&path, "cut2.db", "k"),
            JobState::Claimed
        );
    }

    #[test]
    fn an_acknowledged_commit_is_durable_and_counters_of_another_boot_are_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = modelled_store(dir.path());
        // A queue file as a power failure may leave it: counters claiming
        // every commit durable, written under another boot.
        let mut queue = path.as_os_str().to_owned();
        queue.push("-tenure-queue");
        let mut header = vec![0u8; 4096];
        for w in [24, 32, 40] {
            header[w..w + 8].copy_from_slice(&(1u64 << 60).to_ne_bytes());
        }
        header[48..64].copy_from_slice(&[7u8; 16]);
        std::fs::write(&queue, &header).unwrap();

        let a = open(&path);
        a.claim("p", "j", "a", ttl()).unwrap();
        assert_eq!(after_power_failure(&path, "cut.db", "j"), JobState::Claimed);
        let header = std::fs::read(&queue).unwrap();
        let word = |w: usize| u64::from_ne_bytes(header[w..w + 8].try_into().unwrap());
        assert!(word(24) < 1 << 60, "the counters were reset for this boot");
        assert_eq!(word(40), word(24), "every commit so far is durable");
    }
}
