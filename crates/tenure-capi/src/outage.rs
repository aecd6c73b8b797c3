//! `tenure_outage` (ABI 1.2): the core's rule for a loop that waits for
//! work while the store server is away (`tenure::Outage`), for loops
//! composed over the C calls (the C++ `tenure::Worker`).
//!
//! Conversions only: which failures count as the server being away, the
//! back-off and the limit are the core's `tenure::Outage`.

use std::ffi::{c_char, CStr};
use std::sync::Mutex;
use std::time::Duration;

use tenure::{ErrorCode, Outage, SlotsOutage, SlotsStep};

use crate::boundary::{boxed, invalid, out_arg, Arg, Handle, R};
use crate::status::{last_error, tenure_status};

/// What `tenure_outage_failed()` tells its loop to do (ABI 1.2).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tenure_outage_step {
    /// Pause `*out_delay_us`, then wait again.
    TENURE_OUTAGE_RETRY = 0,
    /// This failure began an outage (report it once), then pause
    /// `*out_delay_us` and wait again.
    TENURE_OUTAGE_BEGAN = 1,
    /// The server has been away longer than the limit (`*out_delay_us`
    /// says how long): stop.
    TENURE_OUTAGE_STOP = 2,
}

/// The outage tracker of one worker's slots (`tenure_outage_new()`):
/// thread-safe (one lock), shared by the slots, so that an outage counts
/// once however many of them notice it.
pub struct tenure_outage {
    o: Mutex<SlotsOutage>,
}

impl Handle for tenure_outage {}

impl tenure_outage {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotsOutage> {
        self.o.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// The limit of `tenure_outage_new()`: `i64::MIN` is none.
fn limit(us: i64) -> R<Option<Duration>> {
    if us == i64::MIN {
        return Ok(None);
    }
    if !(0..=tenure::Ttl::MAX_MICROS).contains(&us) {
        return Err(tenure::Error::InvalidDuration(format!(
            "an outage limit is 0 ..= 24 h (INT64_MIN: none), got {us} µs"
        )));
    }
    Ok(Some(Duration::from_micros(us as u64)))
}

/// The failure `status` with its message (`message`, else this thread's
/// last-error message), classified as the core classifies it.
unsafe fn failure(status: u32, message: *const c_char) -> R<tenure::Error> {
    let code = ErrorCode::from_u32(status)
        .ok_or_else(|| invalid(format!("`status` {status} is not a failure's status")))?;
    let text = if message.is_null() {
        last_error()
    } else {
        CStr::from_ptr(message)
            .to_str()
            .map_err(|_| invalid("`message` is not valid UTF-8"))?
            .to_owned()
    };
    Ok(Outage::reported(code, &text))
}

/// The slot count of `tenure_outage_new()`: 1 ..= 1024.
fn slot_count(n: usize) -> R<usize> {
    if n == 0 || n > tenure::worker::MAX_SLOTS {
        return Err(invalid(format!(
            "an outage tracker counts 1 ..= {} slots, got {n}",
            tenure::worker::MAX_SLOTS
        )));
    }
    Ok(n)
}

/// Slot `slot` of `o`, checked.
fn slot_of(o: &SlotsOutage, slot: usize) -> R<usize> {
    if slot >= o.slots() {
        return Err(invalid(format!(
            "`slot` {slot} is not below the tracker's {} slots",
            o.slots()
        )));
    }
    Ok(slot)
}

export! {
    /// A new outage tracker for a loop of `slots` threads (ABI 1.2; 1 ..=
    /// 1024, else `TENURE_INVALID_ARGUMENT`), numbered 0 .. `slots` - 1:
    /// stop once the store server has been away `limit_us` (0 ..= 24 h,
    /// else `TENURE_INVALID_DURATION`; `INT64_MIN`: never). Free with
    /// `tenure_outage_free()`.
    fn tenure_outage_new(limit_us: i64, slots: usize) -> out_outage: *mut *mut tenure_outage = {
        let bound = limit(limit_us)?;
        boxed(tenure_outage { o: Mutex::new(SlotsOutage::new(bound, slot_count(slots)?)) })
    };

    /// Free an outage tracker (NULL is a no-op).
    fn tenure_outage_free(outage: *mut tenure_outage) = free;

    /// Slot `slot`'s wait failed with `status` (ABI 1.2): how it goes on.
    /// `message` is the failure's message; NULL reads this thread's
    /// last-error message (call this right after the failed call, on its
    /// thread). A lost or refused connection or a server's "try again"
    /// (`TENURE_STORE`, `TENURE_BUSY` with the core's message) is the
    /// server being away: the slot's pauses grow from 50 ms, doubling to
    /// 2 s, each drawn from the upper half of its step;
    /// `TENURE_OUTAGE_BEGAN` for the failure that began the outage of the
    /// tracker's slots (once however many slots notice it);
    /// `TENURE_OUTAGE_STOP`, with `*out_delay_us` how long the server has
    /// been away, once a slot has seen it away past the limit (stop every
    /// slot). Any other failure is `TENURE_OUTAGE_RETRY` after 1 s. `status`
    /// 0 or a number the library does not name, or `slot` out of range, is
    /// `TENURE_INVALID_ARGUMENT`. Thread-safe.
    fn tenure_outage_failed(
        outage: *mut tenure_outage,
        slot: usize,
        status: u32,
        message: *const c_char,
        out_delay_us: *mut i64,
        out_step: *mut tenure_outage_step,
    ) -> tenure_status {
        let outage = Arg::read(outage, "outage")?;
        let e = failure(status, message)?;
        let delay = out_arg(out_delay_us, "out_delay_us")?;
        let step = out_arg(out_step, "out_step")?;
        let mut o = outage.lock();
        let slot = slot_of(&o, slot)?;
        let (d, s) = match o.failed(slot, &e) {
            Some(SlotsStep::Pause { pause, began }) => (
                micros(pause),
                if began {
                    tenure_outage_step::TENURE_OUTAGE_BEGAN
                } else {
                    tenure_outage_step::TENURE_OUTAGE_RETRY
                },
            ),
            Some(SlotsStep::GiveUp { away, .. }) => {
                (micros(away), tenure_outage_step::TENURE_OUTAGE_STOP)
            }
            None => return Err(invalid("`slot` is out of range")),
        };
        delay.write(d);
        step.write(s);
        Ok(())
    }

    /// Slot `slot`'s wait succeeded or found no job (ABI 1.2): the server
    /// answers that slot again. `*out_outage_us` is how long the outage
    /// lasted when this ends it (the last slot that saw it is answered),
    /// else -1. `slot` out of range is `TENURE_INVALID_ARGUMENT`.
    /// Thread-safe.
    fn tenure_outage_succeeded(outage: *mut tenure_outage, slot: usize)
        -> out_outage_us: *mut i64 = {
        let mut o = outage.lock();
        let slot = slot_of(&o, slot)?;
        o.ok(slot).map_or(-1, micros)
    };
}
