//! `tenure_outage` (ABI 1.2): the core's rule for a loop that waits for
//! work while the store server is away (`tenure::Outage`), for loops
//! composed over the C calls (the C++ `tenure::Worker`).
//!
//! Conversions only: which failures count as the server being away, the
//! back-off and the limit are the core's `tenure::Outage`.

use std::ffi::{c_char, CStr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tenure::{ErrorCode, Outage, OutageStep};

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

/// One outage tracker (`tenure_outage_new()`): thread-safe, one lock, so
/// that the slots of one worker share it and an outage counts once however
/// many of them notice it.
pub struct tenure_outage {
    o: Mutex<Outage>,
}

impl Handle for tenure_outage {}

impl tenure_outage {
    fn lock(&self) -> std::sync::MutexGuard<'_, Outage> {
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

export! {
    /// A new outage tracker (ABI 1.2): stop once the store server has been
    /// away `limit_us` (0 ..= 24 h, else `TENURE_INVALID_DURATION`;
    /// `INT64_MIN`: never). Free with `tenure_outage_free()`.
    fn tenure_outage_new(limit_us: i64) -> out_outage: *mut *mut tenure_outage =
        boxed(tenure_outage { o: Mutex::new(Outage::new(limit(limit_us)?)) });

    /// Free an outage tracker (NULL is a no-op).
    fn tenure_outage_free(outage: *mut tenure_outage) = free;

    /// A wait failed with `status` (ABI 1.2): how to go on. `message` is
    /// the failure's message; NULL reads this thread's last-error message
    /// (call this right after the failed call, on its thread). A lost or
    /// refused connection or a server's "try again" (`TENURE_STORE`,
    /// `TENURE_BUSY` with the core's message) is the server being away:
    /// pauses of 50 ms doubling to 2 s, each drawn from its upper half,
    /// `TENURE_OUTAGE_BEGAN` for the failure that began the outage, and
    /// `TENURE_OUTAGE_STOP` with `*out_delay_us` the time away once that
    /// passed the limit. Any other failure is `TENURE_OUTAGE_RETRY` after
    /// 1 s. `status` 0 or a number the library does not name is
    /// `TENURE_INVALID_ARGUMENT`. Thread-safe: the failures of every thread
    /// sharing the tracker are one outage, and each advances its back-off.
    fn tenure_outage_failed(
        outage: *mut tenure_outage,
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
        let (d, s) = match o.failed(&e) {
            OutageStep::Pause { pause, first } => (
                micros(pause),
                if first {
                    tenure_outage_step::TENURE_OUTAGE_BEGAN
                } else {
                    tenure_outage_step::TENURE_OUTAGE_RETRY
                },
            ),
            OutageStep::GiveUp => (
                micros(o.since().map_or(Duration::ZERO, |t| t.elapsed())),
                tenure_outage_step::TENURE_OUTAGE_STOP,
            ),
        };
        delay.write(d);
        step.write(s);
        Ok(())
    }

    /// A wait succeeded or found no job (ABI 1.2): the server is back.
    /// `*out_outage_us` is how long the outage that this ends lasted, -1
    /// if none was on. Thread-safe.
    fn tenure_outage_succeeded(outage: *mut tenure_outage) -> out_outage_us: *mut i64 = {
        let mut o = outage.lock();
        let since: Option<Instant> = o.since();
        o.ok();
        since.map_or(-1, |t| micros(t.elapsed()))
    };
}
