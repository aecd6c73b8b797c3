//! Waiting for work and keeping a lease alive (ABI 1.1): the cancel handle
//! `tenure_wait_cancel`, `tenure_authority_claim_next_wait()`,
//! `tenure_authority_cancel_waits()`, and the keeper handle
//! `tenure_keeper` made by `tenure_lease_keep_alive()`.
//!
//! Every rule (the wait, its wake-ups, the keeper's renewals and when it
//! stops) is the core's (`tenure::Authority::claim_next_wait`,
//! `tenure::Lease::keep_alive`); this module converts types only. A worker
//! loop in C is composed of these pieces (wait, keep alive, run, settle with
//! the `tenure_lease_*` operations); the C++ projection's `tenure::Worker`
//! is exactly that composition.

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tenure::{Error, Keeper, KeeperStatus, WaitCancel};

use crate::authority::tenure_authority;
use crate::boundary::{boxed, buf_arg, copy_out, out_arg, Arg, Handle, R};
use crate::lease::tenure_lease;
use crate::status::tenure_status;

/// A non-negative count of microseconds as a `Duration`; the core checks
/// the upper bound and whether zero is allowed.
pub(crate) fn micros(what: &str, us: i64) -> R<Duration> {
    u64::try_from(us)
        .map(Duration::from_micros)
        .map_err(|_| Error::InvalidDuration(format!("{what} must not be negative, got {us} µs")))
}

// ---------------------------------------------------------------------------
// Cancelling waits
// ---------------------------------------------------------------------------

/// A cancel handle for `tenure_authority_claim_next_wait()` (ABI 1.1).
/// Thread-safe: one thread may cancel while others wait with it. Cancelling
/// ends every wait given this handle, now or later, at once; cancellation
/// is final. `tenure_wait_cancel_cancel()` takes a lock and wakes threads:
/// it is NOT async-signal-safe. From a signal handler, write to a pipe and
/// cancel from a thread that reads it.
pub struct tenure_wait_cancel {
    pub(crate) inner: WaitCancel,
}

impl Handle for tenure_wait_cancel {}

export! {
    /// Make a cancel handle that is not cancelled (ABI 1.1). `*out_cancel`
    /// receives a handle to free with `tenure_wait_cancel_free()`.
    fn tenure_wait_cancel_new() -> out_cancel: *mut *mut tenure_wait_cancel =
        boxed(tenure_wait_cancel { inner: WaitCancel::new() });

    /// Cancel (ABI 1.1): every wait using this handle, now or later, ends at
    /// once with `TENURE_NO_JOB_AVAILABLE` (its message says it was
    /// cancelled). Safe from any thread; not async-signal-safe. Idempotent.
    fn tenure_wait_cancel_cancel(cancel: *const tenure_wait_cancel) = {
        cancel.inner.cancel();
        Ok(())
    };

    /// Whether `tenure_wait_cancel_cancel()` was called on this handle (ABI
    /// 1.1; false for NULL). Tells a cancelled wait from a timed-out one.
    fn tenure_wait_cancel_is_cancelled(cancel: *const tenure_wait_cancel) -> bool =
        value Some(cancel.inner.is_cancelled());

    /// Free a cancel handle (ABI 1.1; NULL is a no-op). No wait may still be
    /// using it.
    fn tenure_wait_cancel_free(cancel: *mut tenure_wait_cancel) = free;

    /// Claim the next claimable job of `production` as
    /// `tenure_authority_claim_next()` does, waiting up to `timeout_us` (0 ..=
    /// 86 400 000 000; 0 makes one attempt) for one to become claimable (ABI
    /// 1.1). The calling thread sleeps without using CPU until a commit of any
    /// thread or process may have made a job claimable (a submission, a
    /// release, a retryable failure), a lease of the production expires, the
    /// timeout passes, or the wait is cancelled by `cancel` (optional, NULL for
    /// none) or `tenure_authority_cancel_waits()`. Timeout and cancellation
    /// return `TENURE_NO_JOB_AVAILABLE` (`tenure_wait_cancel_is_cancelled()`
    /// tells them apart); any other error of an attempt ends the wait with that
    /// status. `*out_lease` receives an active lease to free with
    /// `tenure_lease_free()`. The authority and `cancel` must stay valid until
    /// the call returns.
    fn tenure_authority_claim_next_wait(
        authority: *const tenure_authority,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
        timeout_us: i64,
        cancel: *const tenure_wait_cancel,
        out_lease: *mut *mut tenure_lease,
    ) -> tenure_status {
        let a = Arg::read(authority, "authority")?;
        let production = Arg::read(production, "production")?;
        let holder = Arg::read(holder, "holder")?;
        let out = out_arg(out_lease, "out_lease")?;
        let ttl = crate::boundary::ttl(ttl_us)?;
        let timeout = micros("a wait timeout", timeout_us)?;
        // Optional: NULL waits without a cancel handle.
        let cancel = cancel.as_ref().map(|c| &c.inner);
        let lease = a
            .inner
            .claim_next_wait(production, holder, ttl, timeout, cancel)?;
        out.write(tenure_lease::boxed(lease));
        Ok(())
    }

    /// Cancel every `tenure_authority_claim_next_wait()` in progress on this
    /// authority handle (ABI 1.1); waits that start later are not affected.
    /// Safe from any thread; not async-signal-safe.
    fn tenure_authority_cancel_waits(authority: *const tenure_authority) = {
        authority.inner.cancel_waits();
        Ok(())
    };
}

// ---------------------------------------------------------------------------
// Keep-alive
// ---------------------------------------------------------------------------

/// What a keeper is doing (`tenure_keeper_status()`, ABI 1.1).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_keeper_state {
    /// Renewing every period.
    TENURE_KEEPER_RUNNING = 1,
    /// Stopped by `tenure_keeper_stop()` (or freed).
    TENURE_KEEPER_STOPPED = 2,
    /// The lease was closed by its owner (released, failed or completed).
    TENURE_KEEPER_LEASE_CLOSED = 3,
    /// A renewal was refused; the status says why.
    TENURE_KEEPER_REFUSED = 4,
}

/// A keeper (ABI 1.1): a thread of the library renewing one lease through
/// the ordinary renewal every period, made by `tenure_lease_keep_alive()`.
/// It stops at `tenure_keeper_stop()`, at the first refused renewal, or when
/// the lease is closed by its owner; it never releases the lease. It holds
/// its own reference to the lease and the store, so the `tenure_lease` and
/// `tenure_authority` handles it came from may be freed before it (the
/// store stays open until the keeper is freed). Thread-safe.
pub struct tenure_keeper {
    inner: Mutex<Keeper>,
}

impl Handle for tenure_keeper {}

impl tenure_keeper {
    fn lock(&self) -> MutexGuard<'_, Keeper> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

export! {
    /// Keep `lease` alive (ABI 1.1): renew it for `ttl_us` every `every_us`
    /// (positive, shorter than `ttl_us`, else `TENURE_INVALID_DURATION`) on a
    /// thread of its own, until stopped or refused. Renewals show in
    /// `tenure_lease_expires_us()` of this handle. Only an active lease can
    /// be kept alive. `*out_keeper` receives a handle to free with
    /// `tenure_keeper_free()`.
    fn tenure_lease_keep_alive(lease: *const tenure_lease, ttl_us: i64, every_us: i64)
        -> out_keeper: *mut *mut tenure_keeper = boxed(tenure_keeper {
            inner: Mutex::new(lease.lease.keep_alive(
                crate::boundary::ttl(ttl_us)?,
                micros("a keep-alive period", every_us)?,
            )?),
        });

    /// Stop the keeper and wait for its thread (ABI 1.1): after it returns no
    /// renewal happens (one under way finishes first). Never releases the
    /// lease. Idempotent.
    fn tenure_keeper_stop(keeper: *const tenure_keeper) = {
        keeper.lock().stop();
        Ok(())
    };

    /// The keeper's state (ABI 1.1): `*out_state` a `tenure_keeper_state`,
    /// `*out_error_status` the refused renewal's status when the state is
    /// `TENURE_KEEPER_REFUSED` (`TENURE_STALE_LEASE`, `TENURE_LEASE_EXPIRED`,
    /// `TENURE_CANCELLED`, `TENURE_CLOCK_ROLLBACK`, ...), else `TENURE_OK`.
    /// `tenure_keeper_error_message()` gives the refusal's message.
    fn tenure_keeper_status(keeper: *const tenure_keeper)
        -> (out_state: *mut tenure_keeper_state, out_error_status: *mut tenure_status) =
        keeper_state(keeper.lock().status());

    /// How many renewals the keeper has made (ABI 1.1; 0 for NULL).
    fn tenure_keeper_renewals(keeper: *const tenure_keeper) -> u64 =
        value Some(keeper.lock().renewals());

    /// Copy the message of the renewal refusal that stopped the keeper into
    /// `buf` (ABI 1.1; `cap` bytes, NUL-terminated; `buf` may be NULL when `cap`
    /// is 0); `""` when no refusal stopped it. `*out_size` receives the size
    /// needed including the NUL; if `cap` is smaller, nothing is copied and
    /// `TENURE_INVALID_ARGUMENT` is returned with `*out_size` set.
    fn tenure_keeper_error_message(
        keeper: *const tenure_keeper,
        buf: *mut c_char,
        cap: usize,
        out_size: *mut usize,
    ) -> tenure_status {
        let k = Arg::read(keeper, "keeper")?;
        buf_arg(buf, cap)?;
        let out = out_arg(out_size, "out_size")?;
        let msg = k.lock().error().map(|e| e.to_string()).unwrap_or_default();
        copy_out(msg.as_bytes(), true, buf as *mut u8, cap, out, "message")
    }

    /// Stop the keeper as `tenure_keeper_stop()` does and free it (ABI 1.1;
    /// NULL is a no-op). Never releases the lease.
    fn tenure_keeper_free(keeper: *mut tenure_keeper) = free;
}

/// A keeper's status as the C state and the refused renewal's status.
fn keeper_state(status: KeeperStatus) -> (tenure_keeper_state, tenure_status) {
    use tenure_keeper_state::*;
    let ok = tenure_status::TENURE_OK;
    match status {
        KeeperStatus::Running => (TENURE_KEEPER_RUNNING, ok),
        KeeperStatus::Stopped => (TENURE_KEEPER_STOPPED, ok),
        KeeperStatus::LeaseClosed => (TENURE_KEEPER_LEASE_CLOSED, ok),
        KeeperStatus::Refused(code) => (TENURE_KEEPER_REFUSED, tenure_status::from_code(code)),
    }
}

// ---------------------------------------------------------------------------
// Worker loops composed of these pieces
// ---------------------------------------------------------------------------

export! {
    /// Check a worker loop's configuration as the Rust worker checks it before
    /// it starts (ABI 1.1): `production` and `holder` valid, `slots` 1 ..=
    /// 1024, `ttl_us` a TTL, `renew_every_us` positive and shorter than
    /// `ttl_us`, `wait_timeout_us` positive and at most 24 h, `grace_us` 0 ..=
    /// 24 h; else `TENURE_INVALID_ARGUMENT` or `TENURE_INVALID_DURATION` naming
    /// the value. For loops built from `tenure_authority_claim_next_wait()` and
    /// `tenure_lease_keep_alive()` (the C++ `tenure::Worker` calls it before it
    /// starts a thread), so they refuse what the Rust loop refuses. Touches no
    /// store. Thread-safe.
    fn tenure_worker_config_check(
        production: *const c_char,
        holder: *const c_char,
        slots: usize,
        ttl_us: i64,
        renew_every_us: i64,
        wait_timeout_us: i64,
        grace_us: i64,
    ) = tenure::worker::WorkerConfig::new(production, holder, crate::boundary::ttl(ttl_us)?)
        .slots(slots)
        .renew_every(micros("a keep-alive period", renew_every_us)?)
        .wait_timeout(micros("a wait timeout", wait_timeout_us)?)
        .grace(micros("a grace period", grace_us)?)
        .check();
}
