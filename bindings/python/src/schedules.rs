//! Schedules for Python: a definition from keyword arguments, a schedule
//! or a step as a `dict` (the core holds every rule).

use crate::convert;
use crate::errors::to_py;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tenure::{Cadence, Delay, Error, Overlap, ScheduleSpec, ScheduleView, Ticked};

/// The definition `create_schedule`/`update_schedule` were given: exactly
/// one of `every` (a `datetime.timedelta`) and `cron` (a five-field
/// expression, read in UTC or in the IANA time zone `tz`).
#[allow(clippy::too_many_arguments)]
pub fn spec(
    name: &str,
    every: Option<&Bound<'_, PyAny>>,
    cron: Option<&str>,
    tz: Option<&str>,
    payload: &[u8],
    priority: i32,
    max_attempts: u32,
    max_hold: Option<Delay>,
    backoff: Option<tenure::Backoff>,
    catch_up: u32,
    overlap: &str,
) -> PyResult<ScheduleSpec> {
    let cadence = match (every, cron, tz) {
        (Some(_), None, Some(_)) => Err(Error::InvalidArgument(
            "tz= goes with cron=, not with every=".into(),
        )),
        (Some(d), None, None) => Cadence::every(convert::delay(d, "every")?),
        (None, Some(c), None) => Cadence::cron(c),
        (None, Some(c), Some(z)) => Cadence::cron_in(c, z),
        _ => Err(Error::InvalidArgument(
            "a schedule takes exactly one of every= and cron=".into(),
        )),
    }
    .map_err(to_py)?;
    let mut s = ScheduleSpec::new(name, cadence, payload.to_vec())
        .priority(priority)
        .max_attempts(max_attempts)
        .catch_up(catch_up)
        .overlap(Overlap::parse(overlap).map_err(to_py)?);
    s.max_hold = max_hold;
    s.backoff = backoff;
    Ok(s)
}

/// A schedule as a `dict` (times as aware UTC `datetime`s).
pub fn view<'py>(py: Python<'py>, v: &ScheduleView) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("production", &v.production)?;
    d.set_item("name", &v.spec.name)?;
    d.set_item("cadence", v.spec.cadence.to_string())?;
    d.set_item("tz", v.spec.cadence.tz())?;
    d.set_item("payload", pyo3::types::PyBytes::new(py, &v.spec.payload))?;
    d.set_item("priority", v.spec.priority)?;
    d.set_item("max_attempts", v.spec.max_attempts)?;
    d.set_item(
        "max_hold",
        convert::opt_delay_timedelta(py, v.spec.max_hold)?,
    )?;
    d.set_item("catch_up", v.spec.catch_up)?;
    d.set_item("overlap", v.spec.overlap.as_str())?;
    d.set_item("paused", v.paused)?;
    d.set_item("settled_at", convert::utc(py, v.settled_us)?)?;
    d.set_item("last_slot", convert::opt_utc(py, v.last_slot_us)?)?;
    d.set_item("next_slot", convert::opt_utc(py, v.next_slot_us)?)?;
    d.set_item("created_at", convert::utc(py, v.created_us)?)?;
    d.set_item("updated_at", convert::utc(py, v.updated_us)?)?;
    Ok(d)
}

/// A step as a `dict`: `enqueued` (a list of `(production, job)`),
/// `dropped`, `now` and `next_slot`.
pub fn step<'py>(py: Python<'py>, t: &Ticked) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("enqueued", t.enqueued.clone())?;
    d.set_item("dropped", t.dropped)?;
    d.set_item("now", convert::utc(py, t.now_us)?)?;
    d.set_item("next_slot", convert::opt_utc(py, t.next_slot_us)?)?;
    Ok(d)
}
