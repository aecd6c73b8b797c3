//! A fair, bounded queue in front of SQLite's writer lock (Linux).
//!
//! SQLite's busy handler polls with sleeps growing to 100 ms, so under
//! contention one process can take almost every turn while the others wait
//! seconds — long enough for a short lease to expire while its holder is
//! trying to renew it. tenure therefore serves writers in ticket order before
//! they issue `BEGIN IMMEDIATE`:
//!
//! - a sidecar file `<store>-tenure-queue` is mapped shared; its first word is
//!   the next ticket, its second the ticket last served (a hint), followed by
//!   64 doorbells (futex words): ticket `t`
//!   rings doorbell `t mod 64` when it finishes, which only its successor
//!   watches, so a release wakes one waiter instead of the whole herd;
//! - a writer locks byte `t` of the file with an open-file-description lock
//!   (`F_OFD_SETLK`), then takes ticket `t` if it is still the next one
//!   (compare-and-swap; else it lets the byte go and tries the next), and
//!   waits until byte `t - 1` is free, i.e. until its predecessor
//!   finished, gave up or died (the kernel drops a dead process's locks, so
//!   a crash never wedges the queue). A taken ticket's byte is thus always
//!   locked: had the writer taken the ticket first, its successor could find
//!   the byte free in between and go ahead of it into SQLite's lock, whose
//!   busy handler then puts one of them to sleep for 1, 2, 5, 10 … ms;
//! - a writer whose busy timeout passes before it has a ticket (another
//!   writer stopped between locking the next ticket's byte and taking the
//!   ticket) takes none; one whose busy timeout passes while it waits
//!   gives up its place: it unlocks its byte and rings its doorbell. Its
//!   successor, finding the byte free while that ticket's end is not
//!   recorded, looks further back and waits for the nearest ticket still
//!   in line, however far back (past a run of writers that gave up it
//!   halves the range with one range test a step), so a writer that
//!   gives up never lets the one behind it past the one ahead of it into
//!   SQLite's lock; bytes are tested without being taken (`F_OFD_GETLK`),
//!   so writers testing the same bytes never see each other's test;
//! - a writer whose COMMIT syncs the WAL (`synchronous = FULL` when the
//!   commit is not made durable after the lock, see [`super::durability`])
//!   rings its doorbell once more when its COMMIT begins: its successor,
//!   woken then, spins (yielding the processor between checks) for up to
//!   500 µs while the commit runs, so the wake-up overlaps the commit's
//!   fsync and the handoff rarely pays a wake-up. A COMMIT without an fsync
//!   is shorter than a wake-up: nobody spins for it (a spinning successor
//!   only takes the processor from the writers it waits for);
//! - on finishing, it unlocks its byte, records that its ticket is done
//!   (the third word: the highest finished ticket + 1) and rings its
//!   doorbell, waking its successor at once. Waiters otherwise sleep; they
//!   re-check every 20 ms only to notice a predecessor that died without
//!   ringing (polling faster costs more than it saves once a hundred
//!   writers wait);
//! - the uncontended path costs no lock test and no wake-up: a writer whose
//!   predecessor's ticket is recorded done takes its turn without testing
//!   the predecessor's byte, and a ring skips the futex wake while no later
//!   ticket was taken (nobody can be asleep on that doorbell; a successor
//!   that takes its ticket after the check sees the rung doorbell and the
//!   unlocked byte). A process that dies records nothing, so its successor
//!   falls back to the lock test.
//!
//! The same mapping carries the store's **work doorbell**
//! ([`crate::doorbell`]): the 32-bit word at byte [`WORK_BELL_OFFSET`]
//! (after the 64 writer doorbells). Every commit that can make a job
//! claimable adds one to it after the COMMIT returned and wakes every futex
//! waiter on it; waiting claimants of every process sleep on it.
//!
//! The same mapping carries the commit counters of [`super::durability`]
//! (commits begun, written and known durable), valid for the boot whose ID
//! it records.
//!
//! Layout of the 4 KiB mapping: bytes 0–7 next ticket, 8–15 ticket being
//! served, 16–23 tickets done (the highest finished ticket + 1), 24–31
//! commits begun, 32–39 commits written, 40–47 commits durable, 48–63 the
//! boot ID of the counters, 64–319 the 64 writer doorbells, 320–323 the
//! work doorbell, 324–327 the sync doorbell, 328–335 the commits an fsync
//! in flight covers (0: none), 336–339 the threads waiting for that fsync
//! to end, the rest zero. Bytes from 4096 on are the
//! writers' lock bytes (never written, only locked); byte 4095's lock
//! serializes the counters' boot check.
//!
//! The queue orders writers; it is not what makes them exclusive — SQLite's
//! lock still does that, so a race in the queue can only cost fairness, never
//! correctness (the counters are updated only by the holder of SQLite's
//! writer lock, or raised to what an fsync covered). The caller's busy
//! timeout bounds the whole wait: queue plus SQLite lock. Other platforms, or a store whose directory does not allow
//! the sidecar file, fall back to SQLite's own busy handling.

use crate::error::{Error, Result};
use crate::sys::futex::{self, Scope};
use crate::sys::map::SharedMap;
use crate::sys::ofd;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MAP_LEN: usize = 4096;
const BYTES_BASE: i64 = MAP_LEN as i64;
const BYTES_SPAN: u64 = 1 << 40;
const RECHECK: Duration = Duration::from_millis(20);
const BELLS: u64 = 64;
/// How long the next writer in line spins before sleeping: about one
/// commit's fsync on a fast disk (a slower commit ends with a wake-up).
const SPIN: Duration = Duration::from_micros(500);
const BELLS_OFFSET: usize = 64;
/// Commit counters (see [`WriterQueue::commit_begins`]).
const BEGUN: usize = 24;
const WRITTEN: usize = 32;
const DURABLE: usize = 40;
/// The boot the commit counters belong to (two words: the kernel's boot ID).
const BOOT: usize = 48;
/// The byte whose lock serializes checking (and resetting) the counters.
const BOOT_LOCK: i64 = BYTES_BASE - 1;
/// Where the work doorbell lives: right after the writer doorbells.
pub(crate) const WORK_BELL_OFFSET: usize = BELLS_OFFSET + 4 * BELLS as usize;
/// A futex word rung when an fsync of the WAL ends (see [`WriterQueue::lead_sync`]).
const SYNC_BELL: usize = WORK_BELL_OFFSET + 4;
/// The `written` count an fsync of the WAL in flight covers (0: none).
const SYNC_OWNER: usize = SYNC_BELL + 4;
/// How many threads (of every process) wait on the sync doorbell: the end
/// of an fsync makes the wake-up system call only when some do.
const SYNC_WAITERS: usize = SYNC_OWNER + 8;

/// The mapped queue of one store.
pub(crate) struct WriterQueue {
    path: PathBuf,
    _file: File,
    map: SharedMap,
    /// The commit counters belong to this boot (see [`WriterQueue::defers`]).
    counters: bool,
    /// Descriptors of the queue file that hold no lock, for the next
    /// turns: each turn needs its own open file description (the locks
    /// belong to it), and reusing one saves an `open` and a `close` per
    /// write transaction.
    spare: Mutex<Vec<File>>,
}

/// Most spare descriptors a queue keeps.
const MAX_SPARE: usize = 16;

/// A writer's place at the head of the queue; dropping it lets the next one in.
pub(crate) struct WriterTurn {
    queue: Arc<WriterQueue>,
    ticket: u64,
    /// Present until the turn is dropped (then it goes back to `spare`).
    file: Option<File>,
    /// The turn was served (not given up): its end is recorded as done.
    served: bool,
}

fn byte(t: u64) -> i64 {
    BYTES_BASE + (t % BYTES_SPAN) as i64
}

/// Whether another open file description holds a lock on any of the
/// `len` bytes from `offset` (tested without taking them, so two writers
/// testing the same bytes never see each other's test). A test that fails
/// counts as held: the writer waits, bounded by its busy timeout.
fn ofd_held(file: &File, offset: i64, len: i64) -> bool {
    ofd::lock(file, ofd::Cmd::Get, libc::F_WRLCK, offset, len)
        .is_none_or(|fl| fl.l_type != libc::F_UNLCK as libc::c_short)
}

/// Whether another open file description holds the byte of a ticket in
/// `from..to` (one range test, two where the bytes wrap around).
fn held_between(file: &File, from: u64, to: u64) -> bool {
    let mut a = from;
    while a < to {
        let wrap = (a / BYTES_SPAN)
            .saturating_add(1)
            .saturating_mul(BYTES_SPAN);
        let end = to.min(wrap);
        if ofd_held(file, byte(a), (end - a) as i64) {
            return true;
        }
        a = end;
    }
    false
}

/// Take (`F_WRLCK`) or release (`F_UNLCK`) byte `offset` without waiting.
fn ofd_lock(file: &File, kind: libc::c_int, offset: i64) -> bool {
    ofd::lock(file, ofd::Cmd::Set, kind, offset, 1).is_some()
}

impl WriterQueue {
    /// Map the sidecar queue file of `store`; `None` if it cannot be used.
    pub(crate) fn open(store: &Path) -> Option<WriterQueue> {
        let mut name = store.as_os_str().to_owned();
        name.push("-tenure-queue");
        let path = PathBuf::from(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .ok()?;
        if file.metadata().ok()?.len() < MAP_LEN as u64 {
            file.set_len(MAP_LEN as u64).ok()?;
        }
        let map = SharedMap::new(&file, MAP_LEN)?;
        let mut queue = WriterQueue {
            path,
            _file: file,
            map,
            counters: false,
            spare: Mutex::new(Vec::new()),
        };
        queue.counters = queue.claim_counters();
        Some(queue)
    }

    /// Whether commits may be made durable after the writer lock is
    /// released (see [`super::durability`]): the commit counters are known
    /// to be this boot's.
    pub(crate) fn defers(&self) -> bool {
        self.counters
    }

    /// Make the commit counters this boot's: the mapping survives a crash of
    /// the machine only as whatever the disk last got of it, which can claim
    /// commits durable that a power failure took back; the first process to
    /// open the store after a boot zeroes them. `false` (no deferred
    /// durability) when the boot cannot be told.
    fn claim_counters(&self) -> bool {
        let Some(boot) = boot_id() else { return false };
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&self.path) else {
            return false;
        };
        // A blocking lock of one byte, held only for the check below.
        let locked = ofd::lock(&file, ofd::Cmd::SetWait, libc::F_WRLCK, BOOT_LOCK, 1).is_some();
        if !locked {
            return false;
        }
        let (hi, lo) = ((boot >> 64) as u64, boot as u64);
        if self.word(BOOT).load(Ordering::Acquire) != hi
            || self.word(BOOT + 8).load(Ordering::Acquire) != lo
        {
            for w in [BEGUN, WRITTEN, DURABLE, SYNC_OWNER] {
                self.word(w).store(0, Ordering::Release);
            }
            self.sync_waiters().store(0, Ordering::Release);
            self.word(BOOT).store(hi, Ordering::Release);
            self.word(BOOT + 8).store(lo, Ordering::Release);
        }
        drop(file); // closing the description releases its lock
        true
    }

    fn next_ticket(&self) -> &AtomicU64 {
        self.map.u64_at(0)
    }

    /// The ticket that last got its turn (a hint for spinning, not a lock).
    fn serving(&self) -> &AtomicU64 {
        self.map.u64_at(8)
    }

    /// The highest ticket whose served turn ended, + 1 (0: none recorded).
    fn done(&self) -> &AtomicU64 {
        self.map.u64_at(16)
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset % 8 == 0 && (offset + 8 <= BELLS_OFFSET || offset == SYNC_OWNER));
        self.map.u64_at(offset)
    }

    /// A commit begins (called by the holder of the writer turn, before
    /// its COMMIT): its number, which readers see as possibly visible.
    pub(crate) fn commit_begins(&self) -> u64 {
        self.word(BEGUN)
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1)
    }

    /// Commit `n` returned: its frames are in the WAL file.
    pub(crate) fn commit_written(&self, n: u64) {
        self.word(WRITTEN).fetch_max(n, Ordering::AcqRel);
    }

    /// The newest commit that may be visible to a snapshot taken now.
    pub(crate) fn begun(&self) -> u64 {
        self.word(BEGUN).load(Ordering::Acquire)
    }

    /// The newest commit whose frames are written.
    pub(crate) fn written(&self) -> u64 {
        self.word(WRITTEN).load(Ordering::Acquire)
    }

    /// The newest commit known durable.
    pub(crate) fn durable(&self) -> u64 {
        self.word(DURABLE).load(Ordering::Acquire)
    }

    /// An fsync of the WAL that began after commit `n` was written returned.
    pub(crate) fn made_durable(&self, n: u64) {
        self.word(DURABLE).fetch_max(n, Ordering::AcqRel);
    }

    fn sync_bell(&self) -> &AtomicU32 {
        self.map.u32_at(SYNC_BELL)
    }

    /// Become the one process syncing the WAL, if none is: `Some(written)`,
    /// the count of commits written before the fsync this caller now runs
    /// (it ends with [`WriterQueue::end_sync`]).
    pub(crate) fn lead_sync(&self) -> Option<u64> {
        let written = self.written();
        self.word(SYNC_OWNER)
            .compare_exchange(0, written.max(1), Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| written)
    }

    /// Threads waiting in [`WriterQueue::wait_sync`] (a count that a
    /// process dying while it waits leaves too high: that only costs
    /// wake-ups nobody needed).
    fn sync_waiters(&self) -> &AtomicU32 {
        self.map.u32_at(SYNC_WAITERS)
    }

    /// The fsync led by [`WriterQueue::lead_sync`] ended; `durable`: the
    /// count it covers, if it succeeded. Wakes whoever waits for it.
    pub(crate) fn end_sync(&self, durable: Option<u64>) {
        if let Some(n) = durable {
            self.made_durable(n);
        }
        // Dekker with `wait_sync`: the owner cleared and the bell moved
        // before the waiters are counted, while a waiter counts itself
        // before it reads the bell and the owner. Either this sees the
        // waiter, or the waiter sees no owner (or the moved bell) and does
        // not sleep.
        self.word(SYNC_OWNER).store(0, Ordering::SeqCst);
        self.sync_bell().fetch_add(1, Ordering::SeqCst);
        if self.sync_waiters().load(Ordering::SeqCst) != 0 {
            wake(self.sync_bell());
        }
    }

    /// Wait, at most `timeout`, for the fsync in flight (if any) to end;
    /// the owner's value as seen (0: none was).
    pub(crate) fn wait_sync(&self, timeout: Duration) -> u64 {
        let waiters = self.sync_waiters();
        waiters.fetch_add(1, Ordering::SeqCst);
        let bell = self.sync_bell().load(Ordering::SeqCst);
        let owner = self.word(SYNC_OWNER).load(Ordering::SeqCst);
        if owner != 0 && !timeout.is_zero() {
            wait(self.sync_bell(), bell, timeout);
        }
        waiters.fetch_sub(1, Ordering::SeqCst);
        owner
    }

    /// Forget an owner that has held the fsync for too long (a process that
    /// died during it): the next caller leads.
    pub(crate) fn drop_stale_sync(&self, owner: u64) {
        let _ =
            self.word(SYNC_OWNER)
                .compare_exchange(owner, 0, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Ring ticket `t`'s doorbell, waking its successor if one can be
    /// waiting: only a writer that took a later ticket waits on it.
    fn ring_turn(&self, t: u64) {
        let bell = self.doorbell(t);
        bell.fetch_add(1, Ordering::SeqCst);
        if self.next_ticket().load(Ordering::SeqCst) > t.wrapping_add(1) {
            wake(bell);
        }
    }

    fn doorbell(&self, t: u64) -> &AtomicU32 {
        let i = (t % BELLS) as usize;
        self.map.u32_at(BELLS_OFFSET + 4 * i)
    }

    fn work_bell(&self) -> &AtomicU32 {
        self.map.u32_at(WORK_BELL_OFFSET)
    }

    /// Ring the work doorbell: a commit may have made a job claimable.
    pub(crate) fn ring_work(&self) {
        ring(self.work_bell());
    }

    /// Keep a descriptor that holds no lock for a later turn.
    fn keep_spare(&self, file: File) {
        let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        if spare.len() < MAX_SPARE {
            spare.push(file);
        }
    }

    /// Wait for this writer's turn, at most until `deadline`; `spin`: the
    /// turn before this one ends with an fsync (see [`WriterTurn::ending`]),
    /// spin for the handoff once it rang.
    pub(crate) fn acquire(self: &Arc<Self>, deadline: Instant, spin: bool) -> Result<WriterTurn> {
        let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let file = match spare {
            Some(f) => f,
            None => OpenOptions::new()
                .read(true)
                .write(true)
                .open(&self.path)
                .map_err(|e| Error::Store(format!("cannot open the writer queue: {e}")))?,
        };
        let Some(t) = take_ticket(self.next_ticket(), &file, deadline) else {
            self.keep_spare(file);
            return Err(Error::Busy(
                "waited past the busy timeout for a place in the writer queue".into(),
            ));
        };
        let mut turn = WriterTurn {
            queue: self.clone(),
            ticket: t,
            file: Some(file),
            served: false,
        };
        if t == 0 || self.done().load(Ordering::Acquire) >= t {
            // The predecessor's turn ended (recorded by it): no lock test.
            self.serving().store(t, Ordering::Release);
            turn.served = true;
            return Ok(turn);
        }
        loop {
            let file = turn
                .file
                .as_ref()
                .expect("a turn holds its file until dropped");
            let Some((ahead, bell)) = self.ahead_of(file, t) else {
                self.serving().store(t, Ordering::Release);
                turn.served = true;
                return Ok(turn);
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Busy(
                    "waited past the busy timeout for the writer lock (queued behind other writers)"
                        .into(),
                ));
            }
            let doorbell = self.doorbell(ahead);
            if spin && self.serving().load(Ordering::Acquire) == ahead {
                // Next in line: the holder is about to finish (it rang when
                // its COMMIT began, see `WriterTurn::ending`). Spin, giving
                // the processor away between checks, instead of paying a
                // sleep/wake-up on the handoff.
                let until = now + SPIN.min(deadline - now);
                while doorbell.load(Ordering::Acquire) == bell && Instant::now() < until {
                    std::thread::yield_now();
                }
                if doorbell.load(Ordering::Acquire) != bell {
                    continue;
                }
            }
            wait(doorbell, bell, (deadline - now).min(RECHECK));
        }
    }

    /// The nearest ticket before `t` still in line (its byte locked and its
    /// end not recorded), with its doorbell as read before its byte was
    /// tested alone; `None` when every ticket before `t` has ended. A
    /// ticket whose byte is free finished, gave up or died, and stays
    /// ended: one that gave up leaves its place to the ticket before it, so
    /// the look goes on there, back to the last recorded end however far
    /// that is. The nearest ticket is tested alone first (usually the
    /// predecessor, still in line: one test); past it the range down to the
    /// last recorded end is halved with one range test a step, so a run of
    /// thousands of writers that gave up while one holder was descheduled
    /// costs a few dozen tests, not one a ticket.
    fn ahead_of(&self, file: &File, t: u64) -> Option<(u64, u32)> {
        // Every ticket in `hi..t` has ended: its byte was found free.
        let mut hi = t;
        loop {
            let done = self.done().load(Ordering::Acquire);
            if done >= hi {
                return None; // and every ticket before `hi` ended too
            }
            let k = hi - 1;
            let bell = self.doorbell(k).load(Ordering::SeqCst);
            if self.done().load(Ordering::Acquire) > k {
                return None; // k's turn, and every one before it, ended
            }
            if ofd_held(file, byte(k), 1) {
                return Some((k, bell));
            }
            hi = k;
            // The highest held byte of `done..hi`, if any, is in `lo..hi`:
            // halve until one ticket is left, which the next round tests
            // alone (a lock found here and released since only sends the
            // search below it).
            let mut lo = done;
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if held_between(file, mid, hi) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
    }
}

impl crate::doorbell::Doorbell for WriterQueue {
    fn generation(&self) -> u64 {
        u64::from(self.work_bell().load(Ordering::Acquire))
    }
    fn sleep(&self, seen: u64, until: Instant) {
        let now = Instant::now();
        if now < until {
            wait(self.work_bell(), seen as u32, until - now);
        }
    }
    fn wake(&self) {
        self.ring_work();
    }
}

/// The kernel's ID of this boot, as a number.
pub(super) fn boot_id() -> Option<u128> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let hex: String = text.trim().chars().filter(|c| *c != '-').collect();
    (hex.len() == 32).then(|| u128::from_str_radix(&hex, 16).ok())?
}

/// Take the next ticket with its byte already locked: the byte is locked
/// first and the ticket taken only if it is still the next one, so a
/// successor never finds the byte of a taken ticket unlocked while that
/// ticket's writer is yet to lock it (it would take its turn as if that
/// writer had finished). Another writer locking the same byte for the same
/// ticket holds it only until its compare-and-swap; this one then sees the
/// next ticket; should that writer stop in between past `deadline`, this
/// one takes no ticket (`None`: it gave up before getting in line).
/// Should the kernel refuse the lock, the ticket is taken without it:
/// fairness then degrades, never correctness (SQLite's lock still
/// excludes).
fn take_ticket(next: &AtomicU64, file: &File, deadline: Instant) -> Option<u64> {
    loop {
        let t = next.load(Ordering::SeqCst);
        if !ofd_lock(file, libc::F_WRLCK, byte(t)) {
            let busy = matches!(
                std::io::Error::last_os_error().raw_os_error(),
                Some(libc::EAGAIN | libc::EACCES)
            );
            if !busy {
                return Some(next.fetch_add(1, Ordering::SeqCst));
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::yield_now();
            continue;
        }
        if next
            .compare_exchange(t, t.wrapping_add(1), Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            #[cfg(test)]
            tests::TICKET_TAKEN.reach(|armed| *armed == std::thread::current().id());
            return Some(t);
        }
        ofd_lock(file, libc::F_UNLCK, byte(t));
    }
}

fn wait(doorbell: &AtomicU32, bell: u32, timeout: Duration) {
    futex::wait(doorbell, bell, Some(timeout), Scope::Shared);
}

fn ring(doorbell: &AtomicU32) {
    doorbell.fetch_add(1, Ordering::AcqRel);
    wake(doorbell);
}

fn wake(doorbell: &AtomicU32) {
    futex::wake_all(doorbell, Scope::Shared);
}

impl WriterTurn {
    /// The turn's last step (the COMMIT) begins: ring the doorbell once
    /// already, so that a successor asleep on it wakes while the commit
    /// runs (its fsync, at `synchronous = FULL`) and then spins for the
    /// handoff, instead of waking only after it. The successor still waits
    /// for this turn's lock byte.
    pub(crate) fn ending(&self) {
        self.queue.ring_turn(self.ticket);
    }
}

impl Drop for WriterTurn {
    fn drop(&mut self) {
        // Unlock before ringing (the order "unlock, then ring" holds); the
        // descriptor, holding no lock now, is kept for a later turn.
        let Some(file) = self.file.take() else { return };
        let unlocked = unlock_all(&file);
        if self.served {
            self.queue
                .done()
                .fetch_max(self.ticket.wrapping_add(1), Ordering::AcqRel);
        }
        self.queue.ring_turn(self.ticket);
        if unlocked {
            self.queue.keep_spare(file);
        } // else closing it drops whatever it still holds
    }
}

/// Whether the descriptor now holds no lock.
fn unlock_all(file: &File) -> bool {
    ofd::lock(file, ofd::Cmd::Set, libc::F_UNLCK, 0, 0).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::pause::PausePoint;
    use std::sync::mpsc::channel;
    use std::thread::ThreadId;

    /// The thread whose writer stops right after it took its ticket.
    pub(super) static TICKET_TAKEN: PausePoint<ThreadId> = PausePoint::new();

    /// A writer on its own thread that sends the moment it got its turn
    /// (waiting at most a minute for it), then ends the turn.
    fn writer_telling_its_turn(
        q: &Arc<WriterQueue>,
    ) -> (
        std::thread::JoinHandle<()>,
        std::sync::mpsc::Receiver<Instant>,
    ) {
        let (got_tx, got_rx) = channel();
        let q = q.clone();
        let writer = std::thread::spawn(move || {
            let turn = q
                .acquire(Instant::now() + Duration::from_secs(60), false)
                .expect("a turn within a minute");
            got_tx.send(Instant::now()).unwrap();
            drop(turn);
        });
        (writer, got_rx)
    }

    /// A writer that comes after those that gave up behind `holder`
    /// (`behind` names them) gets no turn while `holder` holds its own,
    /// and gets it once `holder`'s ends.
    fn the_next_writer_waits_for(q: &Arc<WriterQueue>, holder: WriterTurn, behind: &str) {
        let (last, got_rx) = writer_telling_its_turn(q);
        assert!(
            got_rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the writer behind {behind} took its turn while the first held it"
        );
        let released = Instant::now();
        drop(holder);
        let got = got_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the last writer's turn once the holder's ended");
        assert!(got >= released);
        last.join().unwrap();
    }

    /// A writer that has just taken its ticket (paused right after taking
    /// it) is already in line: the writer behind it waits for its turn to
    /// end, instead of finding its lock byte free and going ahead.
    #[test]
    fn a_writer_paused_right_after_taking_its_ticket_keeps_the_next_one_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let q = Arc::new(WriterQueue::open(&dir.path().join("s.db")).expect("queue file"));
        let far = || Instant::now() + Duration::from_secs(60);
        let (start_tx, start_rx) = channel::<()>();
        let (release_tx, release_rx) = channel::<()>();
        let first = {
            let q = q.clone();
            std::thread::spawn(move || {
                start_rx.recv().unwrap();
                let turn = q.acquire(far(), false).expect("first turn");
                release_rx.recv().unwrap();
                drop(turn);
            })
        };
        let (reached_rx, go_tx) = TICKET_TAKEN.arm(first.thread().id());
        start_tx.send(()).unwrap();
        reached_rx
            .recv()
            .expect("the first writer paused after taking its ticket");
        let (second, got_rx) = writer_telling_its_turn(&q);
        assert!(
            got_rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the second writer took its turn while the first was in line before it"
        );
        go_tx.send(()).unwrap();
        assert!(
            got_rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the second writer took its turn while the first held it"
        );
        let released = Instant::now();
        release_tx.send(()).unwrap();
        let got = got_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the second writer's turn after the first ended");
        assert!(got >= released);
        first.join().unwrap();
        second.join().unwrap();
    }

    /// Writers that give up their place (their busy timeout passed while
    /// they waited) let nobody past the writer ahead of them: the writer
    /// behind them waits for that one's turn to end, woken when it does.
    #[test]
    fn a_writer_that_gives_up_lets_nobody_past_the_writer_ahead_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let q = Arc::new(WriterQueue::open(&dir.path().join("s.db")).expect("queue file"));
        let far = || Instant::now() + Duration::from_secs(60);
        let holder = q.acquire(far(), false).expect("first turn");
        for _ in 0..2 {
            let soon = Instant::now() + Duration::from_millis(50);
            assert!(
                matches!(q.acquire(soon, false), Err(Error::Busy(_))),
                "a writer behind the holder gives up when its timeout passes"
            );
        }
        the_next_writer_waits_for(&q, holder, "two that gave up");
        // Every turn ended: the next writer takes its turn at once.
        drop(q.acquire(far(), false).expect("a turn after all of them"));
    }

    /// A range test sees a held byte on either side of the point where
    /// the tickets' bytes wrap around, and nothing outside the range.
    #[test]
    fn a_range_test_across_the_bytes_wrap_sees_the_held_byte() {
        let dir = tempfile::tempdir().unwrap();
        let q = WriterQueue::open(&dir.path().join("s.db")).expect("queue file");
        let open = || {
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(&q.path)
                .unwrap()
        };
        let (holder, tester) = (open(), open());
        for held in [BYTES_SPAN - 2, BYTES_SPAN + 1] {
            assert!(ofd_lock(&holder, libc::F_WRLCK, byte(held)));
            assert!(held_between(&tester, BYTES_SPAN - 3, BYTES_SPAN + 3));
            assert!(held_between(&tester, held, held + 1));
            assert!(!held_between(&tester, held + 1, BYTES_SPAN + 5));
            assert!(!held_between(&tester, BYTES_SPAN - 6, held));
            assert!(ofd_lock(&holder, libc::F_UNLCK, byte(held)));
            assert!(!held_between(&tester, BYTES_SPAN - 3, BYTES_SPAN + 3));
        }
    }

    /// However many writers give up while one holds its turn (here more
    /// than four thousand in a row, as writers with short busy timeouts
    /// coming back again and again while the holder is descheduled), the
    /// next patient writer still waits for the holder: it finds the nearest
    /// ticket still in line however far back it is.
    #[test]
    fn thousands_of_writers_giving_up_in_a_row_let_nobody_past_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let q = Arc::new(WriterQueue::open(&dir.path().join("s.db")).expect("queue file"));
        let holder = q
            .acquire(Instant::now() + Duration::from_secs(60), false)
            .expect("first turn");
        for _ in 0..5000 {
            // A deadline already past: the writer takes a ticket, finds the
            // holder ahead of it and gives up at once.
            assert!(matches!(
                q.acquire(Instant::now(), false),
                Err(Error::Busy(_))
            ));
        }
        the_next_writer_waits_for(&q, holder, "5000 that gave up");
    }

    /// Eight writers, each with a mapping of its own as a process has, six
    /// of them giving up after 0.2 to 3.2 ms: no two turns ever overlap
    /// (nothing here lets the queue degrade: no writer dies, the kernel
    /// grants every lock; the holder may be descheduled for a while while
    /// the others come back again and again), the two patient writers get
    /// every turn they ask for, and the queue never wedges.
    #[test]
    fn writers_giving_up_at_random_never_share_a_turn_or_wedge_the_queue() {
        use std::sync::atomic::{AtomicBool, AtomicUsize};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let inside = Arc::new(AtomicBool::new(false));
        let overlaps = Arc::new(AtomicUsize::new(0));
        let gave_up = Arc::new(AtomicUsize::new(0));
        let end = Instant::now() + Duration::from_secs(2);
        let writers: Vec<_> = (0..8u64)
            .map(|i| {
                let q = Arc::new(WriterQueue::open(&path).expect("queue file"));
                let (inside, overlaps, gave_up) =
                    (inside.clone(), overlaps.clone(), gave_up.clone());
                std::thread::spawn(move || {
                    let patient = i < 2;
                    let mut served = 0u64;
                    let mut n = i;
                    while Instant::now() < end {
                        n += 1;
                        let wait = if patient {
                            Duration::from_secs(60)
                        } else {
                            Duration::from_micros(200 + n * 7919 % 3000)
                        };
                        match q.acquire(Instant::now() + wait, n % 2 == 0) {
                            Ok(turn) => {
                                if inside.swap(true, Ordering::SeqCst) {
                                    overlaps.fetch_add(1, Ordering::SeqCst);
                                }
                                let until = Instant::now() + Duration::from_micros(n % 400);
                                while Instant::now() < until {
                                    std::hint::spin_loop();
                                }
                                inside.store(false, Ordering::SeqCst);
                                drop(turn);
                                served += 1;
                            }
                            Err(Error::Busy(_)) if !patient => {
                                gave_up.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(e) => panic!("writer {i}: {e}"),
                        }
                    }
                    served
                })
            })
            .collect();
        let served: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(
            overlaps.load(Ordering::SeqCst),
            0,
            "two writers held a turn at once"
        );
        assert!(served[..2].iter().all(|&n| n > 0), "{served:?}");
        assert!(
            gave_up.load(Ordering::SeqCst) > 0,
            "no writer gave up: the test tested nothing"
        );
    }

    /// A waiter for an fsync in flight is counted while it waits and woken
    /// when the fsync ends (its timeout is far longer than the test).
    #[test]
    fn the_end_of_an_fsync_wakes_whoever_counted_itself_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let q = Arc::new(WriterQueue::open(&dir.path().join("s.db")).expect("queue file"));
        assert_eq!(q.sync_waiters().load(Ordering::SeqCst), 0);
        q.commit_written(q.commit_begins());
        let covers = q.lead_sync().expect("nobody syncs yet");
        assert!(q.lead_sync().is_none(), "one fsync at a time");
        let waiter = {
            let q = q.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                let owner = q.wait_sync(Duration::from_secs(60));
                (owner, t.elapsed())
            })
        };
        let until = Instant::now() + Duration::from_secs(30);
        while q.sync_waiters().load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < until, "the waiter never counted itself");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Let it reach its futex wait (a wake-up before it only means it
        // sees the moved bell and returns at once: the same outcome).
        std::thread::sleep(Duration::from_millis(20));
        q.end_sync(Some(covers));
        let (owner, waited) = waiter.join().unwrap();
        assert_eq!(owner, covers.max(1), "it saw the fsync in flight");
        assert!(
            waited < Duration::from_secs(30),
            "woken, not timed out: {waited:?}"
        );
        assert_eq!(q.sync_waiters().load(Ordering::SeqCst), 0);
        assert!(q.durable() >= covers);
        // With no fsync in flight nobody sleeps, and the count stays level.
        assert_eq!(q.wait_sync(Duration::from_secs(60)), 0);
        assert_eq!(q.sync_waiters().load(Ordering::SeqCst), 0);
    }
}
