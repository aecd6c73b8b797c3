//! Schedules (ABI 1.2; docs/schedules.md, docs/design.md "Schedules"): the
//! definition handle `tenure_schedule_def`, create, update, pause, resume,
//! delete and list, the scheduler step and the scheduler loop.
//!
//! Conversions only: the cadence, the bounds and every rule are the core's.
//! A handle with setters, as `tenure_job_options`: later options are new
//! setters, and "absent" is a setter not called.

use std::ffi::{c_char, c_void, CString};
use std::sync::{Mutex, MutexGuard};

use tenure::{Backoff, Cadence, Overlap, ScheduleSpec, ScheduleView};

use crate::authority::tenure_authority;
use crate::boundary::{boxed, cstring, invalid, write_time, Arg, Handle, R};
use crate::schedule::delay;
use crate::status::tenure_status;
use crate::wait::tenure_wait_cancel;

/// A schedule's definition (ABI 1.2): a name and a cadence, made by
/// `tenure_schedule_def_new_every()`, `tenure_schedule_def_new_cron()` or
/// `tenure_schedule_def_new_cron_in()`,
/// with the default job options (empty payload, priority 0, 3 attempts),
/// catch-up bound 1 and overlap "enqueue" until a setter changes them;
/// passed to `tenure_authority_create_schedule()` or
/// `tenure_authority_update_schedule()`, freed with
/// `tenure_schedule_def_free()`. Thread-safe (internally locked).
pub struct tenure_schedule_def {
    inner: Mutex<ScheduleSpec>,
}

impl tenure_schedule_def {
    fn lock(&self) -> MutexGuard<'_, ScheduleSpec> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, f: impl FnOnce(&mut ScheduleSpec)) -> R {
        f(&mut self.lock());
        Ok(())
    }
}

impl Handle for tenure_schedule_def {}

fn def(name: &str, cadence: Cadence) -> *mut tenure_schedule_def {
    boxed(tenure_schedule_def {
        inner: Mutex::new(ScheduleSpec::new(name, cadence, Vec::new())),
    })
}

export! {
    /// A definition whose slots are the multiples of `interval_us` since the
    /// Unix epoch (ABI 1.2): whole seconds, 1 s ..= 366 days, else
    /// `TENURE_INVALID_DURATION`. The name is checked when the definition is
    /// used. `*out_def` receives a handle to free with `tenure_schedule_def_free()`.
    fn tenure_schedule_def_new_every(name: *const c_char, interval_us: i64)
        -> out_def: *mut *mut tenure_schedule_def =
        def(name, Cadence::every(delay(interval_us)?)?);

    /// A definition whose slots are the matches of a five-field cron
    /// expression in UTC (ABI 1.2); a malformed one is `TENURE_INVALID_ARGUMENT`.
    fn tenure_schedule_def_new_cron(name: *const c_char, expression: *const c_char)
        -> out_def: *mut *mut tenure_schedule_def =
        def(name, Cadence::cron(expression)?);

    /// A definition whose slots are the matches of a five-field cron
    /// expression read in the named IANA time zone `tz` (`Europe/Paris`,
    /// case-sensitive; ABI 1.2). A malformed expression or an unknown zone
    /// is `TENURE_INVALID_ARGUMENT`. Slots stay instants (slot job IDs in
    /// UTC); a local time skipped by a daylight-saving gap has its slot at
    /// the gap's end, a repeated one a single slot at its first occurrence
    /// (docs/schedules.md).
    fn tenure_schedule_def_new_cron_in(
        name: *const c_char,
        expression: *const c_char,
        tz: *const c_char,
    ) -> out_def: *mut *mut tenure_schedule_def =
        def(name, Cadence::cron_in(expression, tz)?);

    /// Every slot job's payload (ABI 1.2; copied; NULL only with
    /// `payload_len` 0, at most 1 MiB).
    fn tenure_schedule_def_set_payload(
        def: *mut tenure_schedule_def,
        payload: *const u8,
        payload_len: usize,
    ) = {
        let bytes = if payload_len == 0 {
            Vec::new()
        } else if payload.is_null() {
            return Err(invalid("`payload` is NULL but `payload_len` is not 0"));
        } else if payload_len > tenure::validate::MAX_PAYLOAD_LEN {
            return Err(invalid(format!(
                "payload is {payload_len} bytes, at most {} allowed",
                tenure::validate::MAX_PAYLOAD_LEN
            )));
        } else {
            // SAFETY: the caller passes `payload_len` readable bytes.
            unsafe { std::slice::from_raw_parts(payload, payload_len) }.to_vec()
        };
        def.set(|s| s.payload = bytes)
    };

    /// Every slot job's priority and attempts (ABI 1.2; the attempts are
    /// checked, 1 ..= 1000, when the definition is used).
    fn tenure_schedule_def_set_job(def: *mut tenure_schedule_def, priority: i64, max_attempts: u32) = {
        let p = i32::try_from(priority)
            .map_err(|_| invalid(format!("priority {priority} is not a 32-bit integer")))?;
        def.set(|s| {
            s.priority = p;
            s.max_attempts = max_attempts;
        })
    };

    /// Every slot job's hold limit (ABI 1.2; as `tenure_job_options_set_max_hold()`).
    fn tenure_schedule_def_set_max_hold(def: *mut tenure_schedule_def, limit_us: i64) = {
        let d = delay(limit_us)?;
        def.set(|s| s.max_hold = Some(d))
    };

    /// Every slot job's retry back-off (ABI 1.2; as `tenure_job_options_set_backoff()`).
    fn tenure_schedule_def_set_backoff(def: *mut tenure_schedule_def, base_us: i64, cap_us: i64) = {
        let b = Backoff::exponential(delay(base_us)?, delay(cap_us)?)?;
        def.set(|s| s.backoff = Some(b))
    };

    /// The catch-up bound (ABI 1.2; 1 ..= 1000, checked when the definition
    /// is used) and the overlap policy: `skip_overlap` true skips a slot while
    /// the previous slot's job is requested or claimed.
    fn tenure_schedule_def_set_catch_up(def: *mut tenure_schedule_def, catch_up: u32, skip_overlap: bool) =
        def.set(|s| {
            s.catch_up = catch_up;
            s.overlap = if skip_overlap { Overlap::Skip } else { Overlap::Enqueue };
        });

    /// Free a definition (NULL is a no-op).
    fn tenure_schedule_def_free(def: *mut tenure_schedule_def) = free;

    /// Create a schedule in a production (ABI 1.2): `*out_created` true if
    /// created, false if the same definition exists (another one is
    /// `TENURE_CONFLICT`); a malformed definition is
    /// `TENURE_INVALID_ARGUMENT` or `TENURE_INVALID_DURATION`, changing nothing.
    fn tenure_authority_create_schedule(
        authority: *const tenure_authority,
        production: *const c_char,
        def: *const tenure_schedule_def,
    ) -> out_created: *mut bool =
        authority.inner.create_schedule(production, &def.lock())?;

    /// Replace a schedule's definition (ABI 1.2; `TENURE_NOT_FOUND` if there
    /// is none); its slot record and pause state stay.
    fn tenure_authority_update_schedule(
        authority: *const tenure_authority,
        production: *const c_char,
        def: *const tenure_schedule_def,
    ) = authority.inner.update_schedule(production, &def.lock());

    /// Pause (`paused` true) or resume a schedule (ABI 1.2): `*out_changed`
    /// false if it already was so. A resumed schedule's next slot is the
    /// first after now.
    fn tenure_authority_pause_schedule(
        authority: *const tenure_authority,
        production: *const c_char,
        name: *const c_char,
        paused: bool,
    ) -> out_changed: *mut bool = if paused {
        authority.inner.pause_schedule(production, name)?
    } else {
        authority.inner.resume_schedule(production, name)?
    };

    /// Delete a schedule and its slot record (ABI 1.2): `*out_deleted` false
    /// if there was none. Its jobs stay.
    fn tenure_authority_delete_schedule(
        authority: *const tenure_authority,
        production: *const c_char,
        name: *const c_char,
    ) -> out_deleted: *mut bool = authority.inner.delete_schedule(production, name)?;

    /// One scheduler step (ABI 1.2): enqueue every due slot of every active
    /// schedule. `*out_enqueued` receives how many slot jobs it created,
    /// `*out_dropped` how many slots it dropped, `*out_next_slot_us` the
    /// earliest next slot (µs), or `INT64_MIN` when no schedule is active.
    fn tenure_authority_run_schedules(authority: *const tenure_authority)
        -> (out_enqueued: *mut usize, out_dropped: *mut u64, out_next_slot_us: *mut i64) = {
        let t = authority.inner.run_schedules()?;
        (t.enqueued.len(), t.dropped, t.next_slot_us.unwrap_or(i64::MIN))
    };

    /// The scheduler loop (ABI 1.2): run the scheduler step
    /// (`tenure_authority_run_schedules()`) at each due slot, sleeping
    /// without using CPU in between (a commit that adds, changes or resumes
    /// a schedule wakes it), until `cancel` (required) is cancelled or
    /// `tenure_authority_cancel_waits()` is called; then it returns
    /// `TENURE_OK`. After each step that enqueued or dropped slots,
    /// `on_step` (optional, NULL for none) is called on the calling thread
    /// with `ctx`, the number of slot jobs it enqueued and the number of
    /// slots it dropped. A `TENURE_BUSY` step is retried; any other error of
    /// a step ends the loop with that status (call it again to go on). The
    /// authority and `cancel` must stay valid until the call returns.
    fn tenure_authority_run_schedules_until(
        authority: *const tenure_authority,
        cancel: *const tenure_wait_cancel,
        on_step: tenure_schedule_step,
        ctx: *mut c_void,
    ) -> tenure_status {
        // SAFETY: each handle is checked (NULL) before it is read, as the
        // other exports read theirs; `on_step` and `ctx` are the caller's.
        let authority = unsafe { Arg::read(authority, "authority") }?;
        let cancel = unsafe { Arg::read(cancel, "cancel") }?;
        authority.inner.run_schedules_until(&cancel.inner, |t| {
            if let Some(f) = on_step {
                // SAFETY: the caller's callback, called as documented.
                unsafe { f(ctx, t.enqueued.len(), t.dropped) };
            }
        })
    }
}

/// Told after each scheduler step of `tenure_authority_run_schedules_until()`
/// that enqueued or dropped slots (ABI 1.2): `ctx` is the caller's pointer,
/// `enqueued` the slot jobs the step created, `dropped` the slots it
/// dropped. Called on the looping thread; it must not unwind (no C++
/// exception, no `longjmp`) through the library.
pub type tenure_schedule_step =
    Option<unsafe extern "C" fn(ctx: *mut c_void, enqueued: usize, dropped: u64)>;

export! {
    /// The schedules of `production` (every production's with NULL) (ABI
    /// 1.2); free the list with `tenure_schedule_list_free()`.
    fn tenure_authority_schedules(
        authority: *const tenure_authority,
        production: *const c_char,
        out_list: *mut *mut tenure_schedule_list,
    ) -> tenure_status {
        // SAFETY: each pointer is checked (NULL, UTF-8) before it is read,
        // as the other exports read theirs.
        let authority = unsafe { Arg::read(authority, "authority") }?;
        let production = unsafe { crate::boundary::opt_str_arg(production, "production") }?;
        let out = crate::boundary::out_arg(out_list, "out_list")?;
        let list = boxed(tenure_schedule_list::new(&authority.inner.schedules(production)?));
        // SAFETY: `out` was checked non-NULL.
        unsafe { out.write(list) };
        Ok(())
    }
}

/// One schedule of a [`tenure_schedule_list`].
struct CSchedule {
    production: CString,
    name: CString,
    cadence: CString,
    tz: Option<CString>,
    paused: bool,
    catch_up: u32,
    last_slot_us: Option<i64>,
    next_slot_us: Option<i64>,
}

impl CSchedule {
    fn new(v: &ScheduleView) -> CSchedule {
        CSchedule {
            production: cstring(&v.production),
            name: cstring(&v.spec.name),
            cadence: cstring(&v.spec.cadence.to_string()),
            tz: v.spec.cadence.tz().map(cstring),
            paused: v.paused,
            catch_up: v.spec.catch_up,
            last_slot_us: v.last_slot_us,
            next_slot_us: v.next_slot_us,
        }
    }
}

list_handle! {
    /// A snapshot of schedules (ABI 1.2), by production and name.
    pub struct tenure_schedule_list(Vec<CSchedule>) from ScheduleView;
}

impl Handle for tenure_schedule_list {}

export! {
    /// Free a schedule list (NULL is a no-op).
    fn tenure_schedule_list_free(list: *mut tenure_schedule_list) = free;
    /// Number of schedules.
    fn tenure_schedule_list_len(list: *const tenure_schedule_list) -> usize =
        value Some(list.items.len());
    /// Production of schedule `index` (borrowed), or NULL if out of range.
    fn tenure_schedule_list_production(list: *const tenure_schedule_list, index: usize)
        -> *const c_char = value list.items.get(index).map(|s| s.production.as_ptr());
    /// Name of schedule `index` (borrowed), or NULL if out of range.
    fn tenure_schedule_list_name(list: *const tenure_schedule_list, index: usize)
        -> *const c_char = value list.items.get(index).map(|s| s.name.as_ptr());
    /// Cadence of schedule `index` (`every 30s`, `cron 0 2 * * *`,
    /// `cron 0 2 * * * Europe/Paris`; borrowed),
    /// or NULL if out of range.
    fn tenure_schedule_list_cadence(list: *const tenure_schedule_list, index: usize)
        -> *const c_char = value list.items.get(index).map(|s| s.cadence.as_ptr());
    /// Named time zone of schedule `index`'s cron cadence (`Europe/Paris`;
    /// borrowed; ABI 1.2), or NULL for a UTC cron cadence, an interval, or
    /// an index out of range.
    fn tenure_schedule_list_tz(list: *const tenure_schedule_list, index: usize)
        -> *const c_char =
        value list.items.get(index).and_then(|s| s.tz.as_ref()).map(|t| t.as_ptr());
    /// Whether schedule `index` is paused (false if out of range).
    fn tenure_schedule_list_paused(list: *const tenure_schedule_list, index: usize) -> bool =
        value list.items.get(index).map(|s| s.paused);
    /// Catch-up bound of schedule `index` (0 if out of range).
    fn tenure_schedule_list_catch_up(list: *const tenure_schedule_list, index: usize) -> u32 =
        value list.items.get(index).map(|s| s.catch_up);
    /// The newest slot schedule `index` enqueued: true and `*out_us` written
    /// if there is one, false otherwise.
    fn tenure_schedule_list_last_slot_us(
        list: *const tenure_schedule_list,
        index: usize,
        out_us: *mut i64,
    ) -> bool = value write_time(out_us, list.items.get(index).and_then(|s| s.last_slot_us));
    /// The next slot of schedule `index`: true and `*out_us` written if it
    /// has one (it is active), false otherwise.
    fn tenure_schedule_list_next_slot_us(
        list: *const tenure_schedule_list,
        index: usize,
        out_us: *mut i64,
    ) -> bool = value write_time(out_us, list.items.get(index).and_then(|s| s.next_slot_us));
}
