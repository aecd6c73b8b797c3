//! Keep-alive: [`Keeper::start`] (and [`Lease::keep_alive`], defined here)
//! renews one lease on its own thread until stopped or until the lease ends.
//! This module uses [`Lease`]; the lease module knows nothing of keepers.
//!
//! - Every renewal is an ordinary [`crate::Lease::renew`] (so it rides in a
//!   commit group with the process's other calls); the keeper adds no rule.
//! - [`Keeper::stop`] (and dropping the keeper) stops it and joins its
//!   thread: once it returned, the keeper makes no more renewals. It never
//!   releases the lease: dropping never writes anything but the renewals
//!   already made.
//! - A refused renewal (`stale_lease`, `lease_expired`, `cancelled`,
//!   `clock_rollback`, `not_extended`, `lease_closed` by someone else, ...)
//!   stops the keeper; [`Keeper::status`] and [`Keeper::error`] report it
//!   with its own error. `busy` and `store` (a store server that is away)
//!   are transient: the keeper tries again soon, backing off, for as long
//!   as the lease lasts (a lease that expires meanwhile is then refused as
//!   `lease_expired` once the server answers). Each attempt is idempotent
//!   (a renewal whose answer was lost is answered from what it recorded).
//! - A lease that its owner closed (released, failed, completed) stops the
//!   keeper quietly ([`KeeperStatus::LeaseClosed`]).

use crate::error::{Error, ErrorCode, Result};
use crate::lease::Lease;
use crate::model::LeaseStatus;
use crate::ttl::{self, Ttl};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How soon a keeper tries again after a transient failure (`busy`, `store`):
/// 100 ms, doubling with each failure in a row up to [`MAX_AGAIN`] (and never
/// more than the keep-alive period), jittered (`crate::retry::jittered`).
const AGAIN: Duration = Duration::from_millis(100);
/// The longest pause between two renewal attempts after transient failures.
const MAX_AGAIN: Duration = Duration::from_secs(1);

/// What a [`Keeper`] is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeeperStatus {
    /// Renewing every period.
    Running,
    /// Stopped by [`Keeper::stop`] or by dropping it.
    Stopped,
    /// The lease was closed by its owner (released, failed or completed).
    LeaseClosed,
    /// A renewal was refused with this error ([`Keeper::error`] has it all).
    Refused(ErrorCode),
}

struct State {
    stop: bool,
    status: KeeperStatus,
    error: Option<Error>,
    renewals: u64,
}

struct Shared {
    state: Mutex<State>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Renews one lease every period on its own thread (see [`Keeper::start`]
/// and [`Lease::keep_alive`]). Dropping it stops it; it never releases
/// the lease.
pub struct Keeper {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Lease {
    /// Keep this lease alive: a [`Keeper`] renews it for `ttl` every
    /// `every` (shorter than `ttl`) on its own thread, until stopped,
    /// dropped, refused, or the lease closes (see [`Keeper`]). The
    /// keeper shares this lease's local state: renewals show in
    /// [`Lease::expires_us`]. It never releases the lease. The same as
    /// [`Keeper::start`].
    pub fn keep_alive(&self, ttl: Ttl, every: Duration) -> Result<Keeper> {
        Keeper::start(self, ttl, every)
    }
}

/// See [`Keeper::start`].
fn start(lease: Lease, ttl: Ttl, every: Duration) -> Result<Keeper> {
    let every = ttl::bounded("a keep-alive period", every, false)?;
    if every >= ttl.as_duration() {
        return Err(Error::InvalidDuration(format!(
            "a keep-alive period ({every:?}) must be shorter than the TTL ({ttl:?})"
        )));
    }
    lease.usable_in(0)?;
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            stop: false,
            status: KeeperStatus::Running,
            error: None,
            renewals: 0,
        }),
        cv: Condvar::new(),
    });
    let s = shared.clone();
    let thread = std::thread::Builder::new()
        .name("tenure-keeper".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run(&s, &lease, ttl, every)
            }));
            if r.is_err() {
                let mut st = s.lock();
                let e = Error::Internal("a panic in the keeper thread".into());
                st.status = KeeperStatus::Refused(e.code());
                st.error = Some(e);
            }
        })
        .map_err(|e| Error::Internal(format!("cannot start a keeper thread: {e}")))?;
    Ok(Keeper {
        shared,
        thread: Some(thread),
    })
}

fn run(shared: &Shared, lease: &Lease, ttl: Ttl, every: Duration) {
    let mut next = Instant::now() + every;
    let mut failures = 0u32;
    loop {
        let st = shared.lock();
        let left = next.saturating_duration_since(Instant::now());
        let (st, _) = shared
            .cv
            .wait_timeout_while(st, left, |st| !st.stop)
            .unwrap_or_else(|p| p.into_inner());
        if st.stop {
            return;
        }
        drop(st);
        if lease.status() == LeaseStatus::Closed {
            shared.lock().status = KeeperStatus::LeaseClosed;
            return;
        }
        let r = lease.renew_attempt(ttl);
        let mut st = shared.lock();
        match r {
            Ok(()) => {
                st.renewals += 1;
                failures = 0;
                next = Instant::now() + every;
            }
            Err(Error::Busy(_) | Error::Store(_)) => {
                next =
                    Instant::now() + crate::retry::jittered(AGAIN, MAX_AGAIN, failures).min(every);
                failures = failures.saturating_add(1);
            }
            Err(_) if lease.status() == LeaseStatus::Closed => {
                st.status = KeeperStatus::LeaseClosed;
                return;
            }
            Err(e) => {
                st.status = KeeperStatus::Refused(e.code());
                st.error = Some(e);
                return;
            }
        }
    }
}

impl Keeper {
    /// Start renewing `lease` for `ttl` every `every` (shorter than `ttl`)
    /// on a thread of its own, until stopped, dropped, refused, or the lease
    /// closes. The keeper holds a second handle on the lease sharing its
    /// local state: renewals show in [`Lease::expires_us`]. It never
    /// releases the lease. Refused with [`Error::InvalidDuration`] for a
    /// period out of range or not shorter than `ttl`, with
    /// [`Error::LeasePending`] or [`Error::LeaseClosed`] for a lease that is
    /// not active.
    pub fn start(lease: &Lease, ttl: Ttl, every: Duration) -> Result<Keeper> {
        start(lease.twin(), ttl, every)
    }

    /// Stop renewing and join the keeper's thread. After it returns no
    /// renewal happens (one already under way when it is called finishes
    /// first). Never releases the lease. Idempotent.
    pub fn stop(&mut self) {
        {
            let mut st = self.shared.lock();
            st.stop = true;
            if st.status == KeeperStatus::Running {
                st.status = KeeperStatus::Stopped;
            }
        }
        self.shared.cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Running, stopped, the lease closed, or the refusal that stopped it.
    pub fn status(&self) -> KeeperStatus {
        self.shared.lock().status
    }

    /// The refused renewal's error, if a refusal stopped the keeper.
    pub fn error(&self) -> Option<Error> {
        self.shared.lock().error.clone()
    }

    /// How many renewals this keeper has made.
    pub fn renewals(&self) -> u64 {
        self.shared.lock().renewals
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop();
    }
}

impl fmt::Debug for Keeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("Keeper")
            .field("status", &st.status)
            .field("renewals", &st.renewals)
            .finish()
    }
}
