//! The Python exception hierarchy, generated from [`tenure::ErrorCode::ALL`].
//!
//! `tenure.TenureError` (an `Exception`) is the base; every error code gets
//! one subclass whose name is the CamelCase form of [`ErrorCode::name`]
//! (`stale_lease` -> `StaleLease`), except `store` -> `StoreError` and
//! `internal` -> `InternalError`, which would read as nouns otherwise. Each
//! class carries `code` (the stable number the C ABI returns as its status)
//! and `code_name` (the snake_case name) as class attributes.
//!
//! Extra standard bases, so generic Python handlers work too:
//! - `InvalidArgument`, `InvalidDuration`, `TokenMalformed`, `TokenTooLarge`,
//!   `TokenUnsupportedVersion` also subclass `ValueError` (the value passed
//!   was wrong);
//! - `Busy` also subclasses `TimeoutError` (the writer lock was not free
//!   within the busy timeout).
//!
//! `HistoryPruned` also carries `horizon` (every event up to this sequence
//! number was pruned: resume after it) and `after` (the position asked
//! for) on each instance; the class attributes are 0.
//!
//! Nothing here is listed by hand: a code appended to the core gets its
//! class automatically (and `stubtest` then fails until the `.pyi` names it).

use pyo3::exceptions::{PyException, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use tenure::{Error, ErrorCode};

/// The module every public name reports as its home (`tenure.StaleLease`).
pub const MODULE: &str = "tenure";

struct Classes {
    base: Py<PyType>,
    /// Indexed like `ErrorCode::ALL`.
    by_code: Vec<(ErrorCode, Py<PyType>)>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// The Python class name of a code.
pub fn class_name(code: ErrorCode) -> String {
    let camel: String = code
        .name()
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect();
    match code {
        ErrorCode::Store | ErrorCode::Internal => format!("{camel}Error"),
        _ => camel,
    }
}

fn extra_bases(py: Python<'_>, code: ErrorCode) -> Vec<Bound<'_, PyType>> {
    match code {
        ErrorCode::InvalidArgument
        | ErrorCode::InvalidDuration
        | ErrorCode::TokenMalformed
        | ErrorCode::TokenTooLarge
        | ErrorCode::TokenUnsupportedVersion => vec![py.get_type::<PyValueError>()],
        ErrorCode::Busy => vec![py.get_type::<PyTimeoutError>()],
        _ => Vec::new(),
    }
}

/// Integer attributes an error carries beside its message (each instance
/// gets its value in [`to_py`]; the class holds 0).
fn extra_attributes(code: ErrorCode) -> &'static [&'static str] {
    match code {
        ErrorCode::HistoryPruned => &["horizon", "after"],
        _ => &[],
    }
}

fn doc(code: ErrorCode) -> String {
    let what = match code {
        ErrorCode::InvalidArgument => "A malformed ID, holder, payload, reason, fact or number.",
        ErrorCode::InvalidDuration => {
            "A duration outside its range (a lease 1 microsecond ..= 24 hours, a delay \
             0 ..= 366 days) or an invalid back-off."
        }
        ErrorCode::NotFound => "The production or job does not exist.",
        ErrorCode::Conflict => "The same ID already exists with different content.",
        ErrorCode::NotClaimable => {
            "The job exists but cannot be claimed now (not yet due, held, exhausted, terminal)."
        }
        ErrorCode::NoJobAvailable => "claim_next found nothing claimable in the production.",
        ErrorCode::StaleLease => "The lease is no longer the job's current claim.",
        ErrorCode::LeaseExpired => "The lease is still the current claim but has expired.",
        ErrorCode::LeaseClosed => {
            "The lease was already released, failed or completed, or its edit failed."
        }
        ErrorCode::LeasePending => "The lease belongs to an edit that has not committed yet.",
        ErrorCode::NotExtended => "A renewal would not move the expiry later.",
        ErrorCode::Cancelled => "The job or production was cancelled by a coordinator.",
        ErrorCode::JobTerminal => "The job is already completed or failed.",
        ErrorCode::ClockRollback => {
            "The clock reads earlier than the store's durable high-water mark."
        }
        ErrorCode::TokenMalformed => "The token text is not a well-formed lease token.",
        ErrorCode::TokenTooLarge => "The token text is longer than the accepted bound.",
        ErrorCode::TokenUnsupportedVersion => "The token names an unknown format version.",
        ErrorCode::Busy => "The writer lock was not free within the busy timeout.",
        ErrorCode::SchemaTooNew => "The store was written by a newer tenure; it was not touched.",
        ErrorCode::Store => "The store failed: I/O error, corrupt or foreign file, read-only.",
        ErrorCode::Internal => {
            "A bug in tenure (an internal invariant broke or a panic was caught)."
        }
        ErrorCode::HoldLimit => {
            "A renewal would extend a lease past its claim's hard ownership limit."
        }
        ErrorCode::HistoryPruned => {
            "A reader asked for events before the pruned horizon; they are gone."
        }
        ErrorCode::ProductionLive => "Deleting a production that still has a live job.",
        ErrorCode::ProductionPaused => "A claim of a named job in a paused production.",
        ErrorCode::ConcurrencyLimit => {
            "A claim of a named job beyond its production's concurrency limit."
        }
        ErrorCode::RateLimited => "A claim of a named job beyond its production's rate limit.",
        ErrorCode::JobLive => "Requeueing a job that is not failed or cancelled.",
        _ => "An error of the tenure core.",
    };
    format!(
        "{what}\n\nError code {} (``{}``), the same number the C ABI returns.",
        code.as_u32(),
        code.name()
    )
}

fn make_class<'py>(
    py: Python<'py>,
    name: &str,
    bases: Vec<Bound<'py, PyType>>,
    doc: &str,
    code: Option<ErrorCode>,
) -> PyResult<Py<PyType>> {
    let dict = PyDict::new(py);
    dict.set_item("__module__", MODULE)?;
    dict.set_item("__doc__", doc)?;
    if let Some(code) = code {
        dict.set_item("code", code.as_u32())?;
        dict.set_item("code_name", code.name())?;
        for attr in extra_attributes(code) {
            dict.set_item(*attr, 0u64)?;
        }
    }
    let bases = PyTuple::new(py, bases)?;
    let cls = py.get_type::<PyType>().call1((name, bases, dict))?;
    Ok(cls.cast_into::<PyType>()?.unbind())
}

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let base = make_class(
            py,
            "TenureError",
            vec![py.get_type::<PyException>()],
            "Base class of every tenure error.\n\n\
             ``code`` is the stable error number (the C ABI's status), ``code_name`` \
             its snake_case name; ``str(e)`` is the message, which never contains a secret.",
            None,
        )?;
        // The base carries the attributes too (0 is "success" in the C ABI and
        // never raised), so `TenureError.code` is always defined.
        base.bind(py).setattr("code", 0u32)?;
        base.bind(py).setattr("code_name", "")?;
        let mut by_code = Vec::with_capacity(ErrorCode::ALL.len());
        for code in ErrorCode::ALL {
            let mut bases = vec![base.bind(py).clone()];
            bases.extend(extra_bases(py, code));
            let cls = make_class(py, &class_name(code), bases, &doc(code), Some(code))?;
            by_code.push((code, cls));
        }
        Ok(Classes { base, by_code })
    })
}

/// Add `TenureError` and every subclass to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let c = classes(py)?;
    m.add("TenureError", c.base.bind(py))?;
    for (code, cls) in &c.by_code {
        m.add(class_name(*code).as_str(), cls.bind(py))?;
    }
    Ok(())
}

/// The Python class for a code (the base class for a code this module does
/// not know, which cannot happen while the table is generated from `ALL`).
pub fn class_for(py: Python<'_>, code: ErrorCode) -> PyResult<Bound<'_, PyType>> {
    let c = classes(py)?;
    Ok(c.by_code
        .iter()
        .find(|(k, _)| *k == code)
        .map(|(_, cls)| cls.bind(py).clone())
        .unwrap_or_else(|| c.base.bind(py).clone()))
}

/// Convert a core error into the matching Python exception. The message is
/// the core's `Display`, which never carries a secret.
pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let cls = match class_for(py, e.code()) {
            Ok(cls) => cls,
            Err(err) => return err,
        };
        let Error::HistoryPruned { after, horizon } = e else {
            return PyErr::from_type(cls, e.to_string());
        };
        let made = cls.call1((e.to_string(),)).and_then(|inst| {
            inst.setattr("horizon", horizon)?;
            inst.setattr("after", after)?;
            Ok(inst)
        });
        match made {
            Ok(inst) => PyErr::from_value(inst),
            Err(err) => err,
        }
    })
}

/// `tenure.error_class(code)`: the exception class for a stable error number.
#[pyfunction]
pub fn error_class(py: Python<'_>, code: u32) -> PyResult<Bound<'_, PyType>> {
    match ErrorCode::from_u32(code) {
        Some(c) => class_for(py, c),
        None => Err(PyValueError::new_err(format!(
            "unknown tenure error code {code}"
        ))),
    }
}
