//! Retention: how long history is kept, and what pruning and deleting a
//! production report (docs/design.md, "Retention").
//!
//! The rules that prune and delete are in [`crate::rules`]; this module holds
//! their public value types and bounds.

use crate::error::{Error, Result};
use crate::model::{Event, JobView, ProductionView, PublishedFact};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Rows of each kind (terminal jobs, tombstones, events) one prune step
/// removes at most, so that a step is a short transaction.
pub const PRUNE_STEP_ROWS: usize = 256;

/// An automatic prune step runs after every this many committed one-step
/// calls of a handle whose options carry a [`Retention`] policy.
pub const AUTO_PRUNE_EVERY: u64 = 64;

/// While the last automatic step hit its bound ([`PruneReport::more`]: a
/// backlog, e.g. what a faster minute left behind), the next one runs after
/// this many committed calls instead of [`AUTO_PRUNE_EVERY`].
pub const AUTO_PRUNE_CATCH_UP_EVERY: u64 = 8;

/// Jobs one step of [`crate::Authority::delete_production`] removes.
pub const DELETE_STEP_JOBS: usize = 1_000;

/// An age on the authority's clock for retention: whole seconds,
/// 1 s ..= 3650 days.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Age {
    secs: u64,
}

impl Age {
    /// The longest age: 3650 days.
    pub const MAX_SECS: u64 = 3650 * 86_400;

    /// An age of `secs` seconds (1 ..= [`Age::MAX_SECS`], else
    /// [`Error::InvalidDuration`]).
    pub fn from_secs(secs: u64) -> Result<Age> {
        if secs == 0 || secs > Age::MAX_SECS {
            return Err(Error::InvalidDuration(format!(
                "a retention age must be 1 s ..= 3650 days, not {secs} s"
            )));
        }
        Ok(Age { secs })
    }

    /// Whole seconds.
    pub fn as_secs(self) -> u64 {
        self.secs
    }

    /// Microseconds.
    pub fn as_micros(self) -> i64 {
        // At most 3650 days: far inside i64.
        self.secs as i64 * 1_000_000
    }
}

impl TryFrom<Duration> for Age {
    type Error = Error;

    /// A whole number of seconds in 1 s ..= 3650 days; a sub-second
    /// remainder is refused, not rounded.
    fn try_from(d: Duration) -> Result<Age> {
        if d.subsec_nanos() != 0 {
            return Err(Error::InvalidDuration(format!(
                "a retention age must be whole seconds, not {d:?}"
            )));
        }
        Age::from_secs(d.as_secs())
    }
}

impl fmt::Debug for Age {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Age {
    /// The CLI form: `7d`, `1h30m`, `90s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.secs;
        for (unit, n) in UNITS {
            if rest >= n {
                write!(f, "{}{unit}", rest / n)?;
                rest %= n;
            }
        }
        Ok(())
    }
}

const UNITS: [(&str, u64); 4] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)];

impl FromStr for Age {
    type Err = Error;

    /// Parse `<digits><unit>` groups, units `d`, `h`, `m`, `s` in that
    /// order, each at most once: `60s`, `30d`, `1d12h`.
    fn from_str(text: &str) -> Result<Age> {
        let bad = |why: &str| {
            Error::InvalidDuration(format!(
                "{:?}: {why} (forms: 60s, 15m, 12h, 30d, 1d12h)",
                crate::error::bounded(text)
            ))
        };
        if text.is_empty() {
            return Err(bad("empty age"));
        }
        let mut total: u64 = 0;
        let mut next_unit = 0;
        let mut rest = text;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || digits > 12 {
                return Err(bad("expected a number of at most 12 digits"));
            }
            let n: u64 = rest[..digits].parse().map_err(|_| bad("bad number"))?;
            rest = &rest[digits..];
            let unit = rest.chars().next().ok_or_else(|| bad("missing unit"))?;
            let at = UNITS[next_unit..]
                .iter()
                .position(|(u, _)| u.starts_with(unit))
                .ok_or_else(|| bad("unknown or repeated unit"))?;
            next_unit += at + 1;
            total = n
                .checked_mul(UNITS[next_unit - 1].1)
                .and_then(|v| v.checked_add(total))
                .ok_or_else(|| bad("too long"))?;
            rest = &rest[unit.len_utf8()..];
        }
        Age::from_secs(total)
    }
}

/// A retention policy: how old (on the authority's clock) history may get
/// before pruning removes it. `None` keeps that kind forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retention {
    /// Events older than this are pruned, oldest first, as a prefix of the
    /// log (the history horizon moves up).
    pub event_age: Option<Age>,
    /// Jobs in a stored terminal state (completed, failed, cancelled) whose
    /// last transition is older than this are pruned with their facts; a
    /// tombstone keeps their ID and content digest.
    pub terminal_job_age: Option<Age>,
    /// Tombstones older than this are pruned; the job ID is then new again.
    /// `None`: tombstones are kept forever.
    pub tombstone_age: Option<Age>,
}

impl Retention {
    /// The documented policy for stores that want one: events and terminal
    /// jobs 30 days, tombstones 365 days. Never applied unless asked for.
    pub fn recommended() -> Retention {
        let days = |d: u64| Age { secs: d * 86_400 };
        Retention {
            event_age: Some(days(30)),
            terminal_job_age: Some(days(30)),
            tombstone_age: Some(days(365)),
        }
    }

    /// True when the policy prunes nothing.
    pub fn is_off(&self) -> bool {
        self.event_age.is_none() && self.terminal_job_age.is_none() && self.tombstone_age.is_none()
    }
}

/// What one prune step removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PruneReport {
    /// Terminal jobs removed (each leaves a tombstone).
    pub jobs: u64,
    /// Tombstones removed.
    pub tombstones: u64,
    /// Events removed.
    pub events: u64,
    /// The history horizon after the step: every event with a sequence
    /// number up to it is gone (0: none ever pruned).
    pub horizon: u64,
    /// True when a kind hit the per-step bound: call again for more.
    pub more: bool,
}

/// What [`crate::Authority::delete_production`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeletedCounts {
    /// Jobs removed.
    pub jobs: u64,
    /// Facts removed.
    pub facts: u64,
    /// Events removed.
    pub events: u64,
    /// Tombstones removed.
    pub tombstones: u64,
}

/// One record of [`crate::Authority::export_production`], in this order:
/// the production, its jobs by ID (each with its payload), its facts by job,
/// its events by sequence number. No secret or secret digest is exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportRecord {
    /// The production.
    Production(ProductionView),
    /// A job and its payload.
    Job {
        /// The job as a listing shows it.
        view: JobView,
        /// Its payload.
        payload: Vec<u8>,
    },
    /// A published fact.
    Fact(PublishedFact),
    /// An event of the production.
    Event(Event),
}

impl ExportRecord {
    /// The record as one line of JSON (no newline), the form `tenure
    /// production export` writes and the C, C++ and Python exports hand out:
    /// an object whose `record` field names the kind (`production`, `job`,
    /// `fact`, `event`) beside the fields of that view; times are µs since
    /// the Unix epoch (`_us`), absent values `null`, a job's payload is
    /// `payload_base64` (standard, padded). A job carries its scheduling:
    /// `due_us` (while requested and not yet due), `max_hold_us` and
    /// `backoff`; a production its `backoff`; a back-off is
    /// `{"base_us":N,"cap_us":N}` or `null`. Keys are in byte order. No
    /// secret or secret digest appears.
    pub fn to_json_line(&self) -> String {
        use json::Value as V;
        fn opt_str(s: &Option<String>) -> V<'_> {
            s.as_deref().map_or(V::Null, V::Str)
        }
        let opt_int = |n: Option<i64>| n.map_or(V::Null, V::Int);
        let claim = |c: &Option<uuid::Uuid>| c.map_or(V::Null, |c| V::Text(c.to_string()));
        let backoff = |b: Option<crate::Backoff>| {
            b.map_or(V::Null, |b| {
                V::Object(vec![
                    ("base_us", V::Int(b.base().as_micros())),
                    ("cap_us", V::Int(b.cap().as_micros())),
                ])
            })
        };
        let fields: Vec<(&str, V<'_>)> = match self {
            ExportRecord::Production(p) => vec![
                ("record", V::Str("production")),
                ("name", V::Str(&p.name)),
                ("created_us", V::Int(p.created_us)),
                ("cancelled_us", opt_int(p.cancelled_us)),
                ("backoff", backoff(p.backoff)),
            ],
            ExportRecord::Job { view: v, payload } => {
                use base64::Engine;
                vec![
                    ("record", V::Str("job")),
                    ("production", V::Str(&v.production)),
                    ("job", V::Str(&v.job)),
                    ("state", V::Str(v.state.as_str())),
                    ("attempts", V::Int(v.attempts.into())),
                    ("max_attempts", V::Int(v.max_attempts.into())),
                    ("priority", V::Int(v.priority.into())),
                    ("holder", opt_str(&v.holder)),
                    ("claim_id", claim(&v.claim_id)),
                    ("expires_us", opt_int(v.expires_us)),
                    ("created_us", V::Int(v.created_us)),
                    ("updated_us", V::Int(v.updated_us)),
                    ("payload_len", V::UInt(v.payload_len)),
                    ("last_error", opt_str(&v.last_error)),
                    ("due_us", opt_int(v.due_us)),
                    ("max_hold_us", opt_int(v.max_hold_us)),
                    ("backoff", backoff(v.backoff)),
                    (
                        "payload_base64",
                        V::Text(base64::engine::general_purpose::STANDARD.encode(payload)),
                    ),
                ]
            }
            ExportRecord::Fact(f) => vec![
                ("record", V::Str("fact")),
                ("production", V::Str(&f.production)),
                ("job", V::Str(&f.job)),
                ("key", V::Str(&f.key)),
                ("value", V::Str(&f.value)),
            ],
            ExportRecord::Event(e) => vec![
                ("record", V::Str("event")),
                ("seq", V::UInt(e.seq)),
                ("at_us", V::Int(e.at_us)),
                ("production", V::Str(&e.production)),
                ("job", opt_str(&e.job)),
                ("kind", V::Str(e.kind.as_str())),
                ("state", e.state.map_or(V::Null, |s| V::Str(s.as_str()))),
                ("claim_id", claim(&e.claim_id)),
                ("holder", opt_str(&e.holder)),
                ("attempt", e.attempt.map_or(V::Null, |a| V::Int(a.into()))),
                ("expires_us", opt_int(e.expires_us)),
                ("detail", V::Str(&e.detail)),
            ],
        };
        json::object(fields)
    }
}

/// The little JSON writer [`ExportRecord::to_json_line`] needs: objects of
/// strings, integers, nulls and objects.
mod json {
    use std::fmt::Write;

    pub(super) enum Value<'a> {
        Null,
        Int(i64),
        UInt(u64),
        Str(&'a str),
        Text(String),
        Object(Vec<(&'a str, Value<'a>)>),
    }

    /// `{"key":value,...}` with the keys in byte order, compact.
    pub(super) fn object(fields: Vec<(&str, Value<'_>)>) -> String {
        let mut out = String::new();
        write_object(&mut out, fields);
        out
    }

    fn write_object(out: &mut String, mut fields: Vec<(&str, Value<'_>)>) {
        fields.sort_by(|a, b| a.0.cmp(b.0));
        out.push('{');
        for (i, (k, v)) in fields.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            string(out, k);
            out.push(':');
            match v {
                Value::Null => out.push_str("null"),
                Value::Int(n) => write!(out, "{n}").expect("writing to a String"),
                Value::UInt(n) => write!(out, "{n}").expect("writing to a String"),
                Value::Str(s) => string(out, s),
                Value::Text(s) => string(out, &s),
                Value::Object(o) => write_object(out, o),
            }
        }
        out.push('}');
    }

    /// A JSON string: `"` and `\\` escaped, control characters as `\n`,
    /// `\t`, ... or `\u00xx`, everything else as it is.
    fn string(out: &mut String, s: &str) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => {
                    write!(out, "\\u{:04x}", c as u32).expect("writing to a String")
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_and_print() {
        for (text, secs) in [
            ("59s", 59),
            ("15m", 900),
            ("1d12h", 129_600),
            ("30d", 2_592_000),
        ] {
            let a: Age = text.parse().unwrap();
            assert_eq!(a.as_secs(), secs);
            assert_eq!(a.to_string(), text);
        }
        assert_eq!("1h1s".parse::<Age>().unwrap().as_secs(), 3601);
        assert_eq!("60s".parse::<Age>().unwrap().to_string(), "1m");
        for bad in [
            "", "0s", "1s1h", "1x", "1.5h", "-1s", "3651d", "1", "s", "1h1h",
        ] {
            assert_eq!(
                bad.parse::<Age>().unwrap_err().code(),
                crate::ErrorCode::InvalidDuration,
                "{bad}"
            );
        }
        assert!(Age::try_from(Duration::from_millis(1500)).is_err());
        assert_eq!(
            Age::try_from(Duration::from_secs(5)).unwrap().as_micros(),
            5_000_000
        );
    }
}
