//! Argument conversions: durations, integers, store paths, facts, job
//! states, the GIL-free call wrapper and the fork guard. No rule lives here:
//! the core validates.

use crate::errors::to_py;
use crate::values::PublishedFact;
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Duration;
use tenure::{Age, Delay, Error, JobState, Ttl};

static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static FSENCODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// An aware UTC `datetime.datetime` for microseconds since the Unix epoch:
/// `datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=us)`,
/// integer arithmetic only, so the value is exact (no float rounding).
/// `datetime` covers the years 1 ..= 9999: a time outside that range
/// (never a reading of a real clock) raises `OverflowError`; the `*_us`
/// integer beside it always holds the exact value.
pub fn utc(py: Python<'_>, us: i64) -> PyResult<Bound<'_, PyAny>> {
    let epoch = EPOCH.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        let dt = py.import("datetime")?;
        let utc = dt.getattr("timezone")?.getattr("utc")?;
        let kw = PyDict::new(py);
        kw.set_item("tzinfo", utc)?;
        Ok(dt
            .getattr("datetime")?
            .call((1970, 1, 1), Some(&kw))?
            .unbind())
    })?;
    let td = TIMEDELTA.import(py, "datetime", "timedelta")?;
    let kw = PyDict::new(py);
    kw.set_item("microseconds", us)?;
    let delta = td.call((), Some(&kw))?;
    epoch.bind(py).add(delta)
}

/// A `datetime.timedelta` of `d` (whole microseconds).
pub fn timedelta(py: Python<'_>, d: Duration) -> PyResult<Bound<'_, PyAny>> {
    let td = TIMEDELTA.import(py, "datetime", "timedelta")?;
    let kw = PyDict::new(py);
    kw.set_item("microseconds", d.as_micros())?;
    td.call((), Some(&kw))
}

/// `utc(us)` for an optional time (`None` stays `None`).
pub fn opt_utc(py: Python<'_>, us: Option<i64>) -> PyResult<Option<Bound<'_, PyAny>>> {
    us.map(|us| utc(py, us)).transpose()
}

/// The ISO 8601 text of `utc(us)` for `repr()` (quoted like a Python
/// string), or `None` / `'out of range'`.
pub fn utc_repr(py: Python<'_>, us: Option<i64>) -> String {
    let Some(us) = us else {
        return "None".into();
    };
    utc(py, us)
        .and_then(|d| d.call_method0("isoformat"))
        .and_then(|s| s.extract::<String>())
        .map(|s| format!("'{s}'"))
        .unwrap_or_else(|_| "'out of range'".into())
}

/// Exact microseconds of a `datetime.timedelta` (or subclass).
///
/// Anything that is not a `timedelta` (int, float, None, str, ...) is a
/// `TypeError` naming the parameter. The arithmetic is integer and checked:
/// `days * 86_400_000_000 + seconds * 1_000_000 + microseconds`; an i64
/// overflow is `InvalidDuration`. A subclass that carries sub-microsecond
/// precision in a non-zero `nanoseconds` attribute (pandas' `Timedelta`
/// does) is `InvalidDuration` as well: durations are never rounded.
pub fn timedelta_micros(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<i64> {
    let py = obj.py();
    let td = TIMEDELTA.import(py, "datetime", "timedelta")?;
    if !obj.is_instance(td)? {
        let tname = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(PyTypeError::new_err(format!(
            "{param} must be a datetime.timedelta, not {tname}"
        )));
    }
    let days: i64 = obj.getattr("days")?.extract()?;
    let seconds: i64 = obj.getattr("seconds")?.extract()?;
    let micros: i64 = obj.getattr("microseconds")?.extract()?;
    if let Ok(ns) = obj.getattr("nanoseconds") {
        if ns.extract::<i64>().map(|n| n != 0).unwrap_or(true) {
            return Err(to_py(Error::InvalidDuration(format!(
                "{param} is not a whole number of microseconds (no rounding is done)"
            ))));
        }
    }
    days.checked_mul(86_400_000_000)
        .and_then(|d| {
            seconds
                .checked_mul(1_000_000)
                .and_then(|s| d.checked_add(s))
        })
        .and_then(|t| t.checked_add(micros))
        .ok_or_else(|| {
            to_py(Error::InvalidDuration(format!(
                "{param} does not fit in 64-bit microseconds"
            )))
        })
}

/// A lease duration: exact conversion, then the core's range check
/// ([`Ttl::from_micros`]: `<= 0` or `> 24 h` is `InvalidDuration`).
pub fn ttl(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<Ttl> {
    Ttl::from_micros(timedelta_micros(obj, param)?).map_err(to_py)
}

/// A delay (not-before, retry delay, back-off step, hold limit): exact
/// conversion, then the core's range check ([`Delay::from_micros`]:
/// negative or `> 366 days` is `InvalidDuration`).
pub fn delay(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<Delay> {
    Delay::from_micros(timedelta_micros(obj, param)?).map_err(to_py)
}

/// A `datetime.timedelta` of a delay (whole microseconds).
pub fn delay_timedelta(py: Python<'_>, d: Delay) -> PyResult<Bound<'_, PyAny>> {
    timedelta(py, d.as_duration())
}

/// `delay_timedelta` of an optional delay (`None` stays `None`).
pub fn opt_delay_timedelta(py: Python<'_>, d: Option<Delay>) -> PyResult<Option<Bound<'_, PyAny>>> {
    d.map(|d| delay_timedelta(py, d)).transpose()
}

/// The `repr()` of `opt_delay_timedelta` (`datetime.timedelta(...)` or
/// `None`), for the value classes' own `repr()`.
pub fn delay_repr(py: Python<'_>, d: Option<Delay>) -> String {
    opt_delay_timedelta(py, d)
        .ok()
        .flatten()
        .and_then(|t| t.repr().ok().map(|r| r.to_string()))
        .unwrap_or_else(|| "None".into())
}

/// An optional delay keyword (`from_py_with`): `None` is absent.
fn opt_delay(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<Option<Delay>> {
    if obj.is_none() {
        return Ok(None);
    }
    delay(obj, param).map(Some)
}

/// `not_before=` of a submission (`from_py_with`; see [`opt_delay`]).
pub fn not_before(obj: &Bound<'_, PyAny>) -> PyResult<Option<Delay>> {
    opt_delay(obj, "not_before")
}

/// `max_hold=` of a submission (`from_py_with`; see [`opt_delay`]; the core
/// refuses zero).
pub fn max_hold(obj: &Bound<'_, PyAny>) -> PyResult<Option<Delay>> {
    opt_delay(obj, "max_hold")
}

/// `retry_after=` of a failure (`from_py_with`; see [`opt_delay`]).
pub fn retry_after(obj: &Bound<'_, PyAny>) -> PyResult<Option<Delay>> {
    opt_delay(obj, "retry_after")
}

/// `backoff=`: `None`, or a `tenure.Backoff` (anything else is `TypeError`).
pub fn backoff(obj: &Bound<'_, PyAny>) -> PyResult<Option<tenure::Backoff>> {
    if obj.is_none() {
        return Ok(None);
    }
    let b = obj.cast::<crate::values::Backoff>().map_err(|_| {
        let tname = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!(
            "backoff must be a tenure.Backoff or None, not {tname}"
        ))
    })?;
    Ok(Some(b.get().inner))
}

/// A non-negative busy timeout (an option, as in the C ABI: a negative
/// one is `InvalidArgument`); the core bounds it.
pub fn busy_timeout(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<Duration> {
    let us = timedelta_micros(obj, param)?;
    u64::try_from(us).map(Duration::from_micros).map_err(|_| {
        to_py(Error::InvalidArgument(format!(
            "{param} must not be negative"
        )))
    })
}

/// A non-negative wait timeout (as in the C ABI: a negative one is
/// `InvalidDuration`); the core bounds it.
pub fn wait(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<Duration> {
    let us = timedelta_micros(obj, param)?;
    u64::try_from(us).map(Duration::from_micros).map_err(|_| {
        to_py(Error::InvalidDuration(format!(
            "{param} must not be negative, got {us} µs"
        )))
    })
}

/// A retention age: `None` keeps that kind forever; a `timedelta` is
/// converted exactly, and the core's [`Age`] refuses what is not a whole
/// number of seconds in 1 s ..= 3650 days (`InvalidDuration`).
pub fn age(obj: Option<&Bound<'_, PyAny>>, param: &str) -> PyResult<Option<Age>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let us = timedelta_micros(obj, param)?;
    let us = u64::try_from(us).map_err(|_| {
        to_py(Error::InvalidDuration(format!(
            "{param} must be a positive retention age"
        )))
    })?;
    Age::try_from(Duration::from_micros(us))
        .map(Some)
        .map_err(to_py)
}

/// A retention age as a `datetime.timedelta` (`None` stays `None`).
pub fn age_timedelta(py: Python<'_>, age: Option<Age>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let Some(age) = age else {
        return Ok(None);
    };
    let td = TIMEDELTA.import(py, "datetime", "timedelta")?;
    let kw = PyDict::new(py);
    kw.set_item("seconds", age.as_secs())?;
    td.call((), Some(&kw)).map(Some)
}

/// Caller facts: `None`, a mapping `{key: value}`, or an iterable of
/// `(key, value)` pairs or `tenure.PublishedFact` objects. Keys and values must be
/// `str`; the core checks the bounds.
pub fn facts(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<tenure::Fact>> {
    let Some(obj) = obj else {
        return Ok(Vec::new());
    };
    if obj.is_none() {
        return Ok(Vec::new());
    }
    let bad = || {
        PyTypeError::new_err(
            "facts must be a mapping of str to str or an iterable of (key, value) pairs",
        )
    };
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(bad());
    }
    let items = if let Ok(d) = obj.cast::<PyDict>() {
        d.items().into_any()
    } else if obj.hasattr("items")? {
        obj.call_method0("items")?
    } else {
        obj.clone()
    };
    let mut out = Vec::new();
    for item in items.try_iter().map_err(|_| bad())? {
        let item = item?;
        if let Ok(f) = item.cast::<PublishedFact>() {
            let f = f.get();
            out.push(tenure::Fact::new(f.key.clone(), f.value.clone()));
            continue;
        }
        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| bad())?;
        // A non-str key or value is the facts TypeError; a str that is not
        // valid Unicode (a lone surrogate) raises UnicodeEncodeError, as
        // every other string argument does.
        let text = |o: &Bound<'_, PyAny>| -> PyResult<String> {
            if !o.is_instance_of::<PyString>() {
                return Err(bad());
            }
            o.extract::<String>()
        };
        out.push(tenure::Fact::new(text(&k)?, text(&v)?));
    }
    Ok(out)
}

/// A Python `int` for an integer parameter whose core type is `T`
/// (`i32`, `u32`): a value outside `T`'s range cannot be converted and is
/// `InvalidArgument` naming the parameter (not a bare `OverflowError`); a
/// non-integer stays the `TypeError` of the extraction. Which values the
/// core accepts within that range is the core's rule.
fn int<T>(obj: &Bound<'_, PyAny>, param: &str) -> PyResult<T>
where
    T: for<'a, 'py> FromPyObject<'a, 'py, Error = PyErr> + Bounded,
{
    obj.extract::<T>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(obj.py()) {
            to_py(Error::InvalidArgument(format!(
                "{param} is out of range: it must be an integer from {} to {}",
                T::MIN,
                T::MAX
            )))
        } else {
            e
        }
    })
}

/// The range of an integer parameter's core type, for the message.
trait Bounded {
    const MIN: i64;
    const MAX: i64;
}

impl Bounded for i32 {
    const MIN: i64 = i32::MIN as i64;
    const MAX: i64 = i32::MAX as i64;
}

impl Bounded for u32 {
    const MIN: i64 = 0;
    const MAX: i64 = u32::MAX as i64;
}

/// `priority=` of a submission (`from_py_with`; see [`int`]).
pub fn priority(obj: &Bound<'_, PyAny>) -> PyResult<i32> {
    int(obj, "priority")
}

/// `slots=` of a worker (`from_py_with`; see [`int`]).
pub fn slots(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    int(obj, "slots")
}

/// `max_attempts=` of a submission (`from_py_with`; see [`int`]).
pub fn max_attempts(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    int(obj, "max_attempts")
}

/// `limit=` of a concurrency limit (`from_py_with`; see [`int`]).
pub fn gate_limit(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    int(obj, "limit")
}

/// `claims=` of a rate limit (`from_py_with`; see [`int`]).
pub fn rate_claims(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    int(obj, "claims")
}

/// `burst=` of a rate limit (`from_py_with`; see [`int`]).
pub fn rate_burst(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    int(obj, "burst")
}

/// `interval=` of a rate limit (`from_py_with`): exact conversion; a
/// negative one is `InvalidDuration` (the core checks the range).
pub fn rate_interval(obj: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let us = timedelta_micros(obj, "interval")?;
    u64::try_from(us).map(Duration::from_micros).map_err(|_| {
        to_py(Error::InvalidDuration(format!(
            "interval must not be negative, got {us} µs"
        )))
    })
}

/// A store path: `str`, `bytes` or an `os.PathLike` of either, converted
/// with `os.fsencode` to the raw OS path bytes (the file system encoding
/// with `surrogateescape`, as every Python file API does). A path that is
/// not valid UTF-8 (bytes from `os.fsencode` of a surrogate-escaped name) is
/// therefore opened as those exact bytes, and `Authority.path` gives it
/// back decoded the same way (`os.fsencode(auth.path)` is the bytes
/// opened). A NUL byte cannot be part of an OS path: `InvalidArgument`, as
/// in the C and C++ projections. The message never echoes the path.
pub fn store_path(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let fsencode = FSENCODE.import(obj.py(), "os", "fsencode")?;
    let raw = fsencode.call1((obj,))?;
    let bytes = raw.cast::<PyBytes>()?.as_bytes();
    if bytes.contains(&0) {
        return Err(to_py(Error::InvalidArgument(
            "the store path contains a NUL byte".into(),
        )));
    }
    os_path(bytes)
}

#[cfg(unix)]
fn os_path(bytes: &[u8]) -> PyResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
fn os_path(bytes: &[u8]) -> PyResult<PathBuf> {
    std::str::from_utf8(bytes).map(PathBuf::from).map_err(|_| {
        to_py(Error::InvalidArgument(
            "the store path is not valid UTF-8".into(),
        ))
    })
}

/// A job state name (`"requested"`, ...), parsed by the core.
pub fn job_state(name: &str) -> PyResult<JobState> {
    name.parse::<JobState>().map_err(to_py)
}

/// Run a store call with the GIL released (other Python threads run while
/// it waits for the writer lock or the disk). A Rust panic becomes
/// `tenure.InternalError` instead of crossing into Python.
pub fn unlocked<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> tenure::Result<T> + Send,
) -> PyResult<T> {
    py.detach(|| guarded(f)).map_err(to_py)
}

/// Run a core call, turning a Rust panic into [`Error::Internal`].
pub fn guarded<T>(f: impl FnOnce() -> tenure::Result<T>) -> tenure::Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(Error::Internal(format!("panic caught: {what}")))
    })
}

/// A handle bound to the process that created it. SQLite connections must
/// not cross `fork()`: in any other process `get` refuses with a clear
/// `InvalidArgument` and dropping leaks the value instead of closing the
/// parent's connections. Plain reads of in-memory fields go through `Deref`.
pub struct ProcessBound<T> {
    inner: std::mem::ManuallyDrop<T>,
    pid: u32,
}

impl<T> ProcessBound<T> {
    pub fn new(value: T) -> ProcessBound<T> {
        ProcessBound {
            inner: std::mem::ManuallyDrop::new(value),
            pid: std::process::id(),
        }
    }
    pub fn is_here(&self) -> bool {
        self.pid == std::process::id()
    }
    /// The value, if this is the process that created it (`what` names it).
    pub fn get(&self, what: &str) -> PyResult<&T> {
        if self.is_here() {
            return Ok(&self.inner);
        }
        Err(to_py(Error::InvalidArgument(format!(
            "this {what} was created in process {} and cannot be used in process {} \
             (after fork()): SQLite connections must not cross fork(); open a new \
             tenure.Authority in this process (hand a lease over with \
             export_token() / import_lease())",
            self.pid,
            std::process::id()
        ))))
    }
}

impl<T> std::ops::Deref for ProcessBound<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> Drop for ProcessBound<T> {
    fn drop(&mut self) {
        if self.is_here() {
            // SAFETY: dropped exactly once, here.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.inner) }
        }
    }
}
