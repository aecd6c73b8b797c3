//! Durations: the only place in tenure that validates one.
//!
//! A TTL is a positive whole number of microseconds, at most 24 hours; a
//! [`Delay`] is a whole number of microseconds from 0 to 366 days; a
//! [`Backoff`] is a pair of delays. Nothing is ever rounded: a value with a
//! sub-microsecond remainder is rejected.
//! Every projection (C `int64_t ttl_us`, C++ `std::chrono`, Python
//! `timedelta`, CLI text) converts exactly and then calls [`Ttl::from_micros`].

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A validated lease duration: 1 µs ..= 24 h, whole microseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ttl(i64);

impl Ttl {
    /// The longest accepted TTL: 24 hours in microseconds.
    pub const MAX_MICROS: i64 = 86_400_000_000;
    /// The longest TTL.
    pub const MAX: Ttl = Ttl(Self::MAX_MICROS);

    /// Validate a count of microseconds: rejects `<= 0` and `> 24 h`.
    pub fn from_micros(us: i64) -> Result<Ttl> {
        if us <= 0 {
            return Err(Error::InvalidDuration(format!(
                "a lease duration must be positive, got {us} µs"
            )));
        }
        if us > Self::MAX_MICROS {
            return Err(Error::InvalidDuration(format!(
                "a lease duration must be at most 24 h ({} µs), got {us} µs",
                Self::MAX_MICROS
            )));
        }
        Ok(Ttl(us))
    }

    /// The duration in microseconds (1 ..= 86 400 000 000).
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// The duration as a [`Duration`].
    pub fn as_duration(self) -> Duration {
        Duration::from_micros(self.0 as u64)
    }
}

/// Validate a wait or period: whole microseconds, at most 24 h; zero only
/// where `zero_ok` (a wait timeout of zero makes one attempt).
pub(crate) fn bounded(what: &str, d: Duration, zero_ok: bool) -> Result<Duration> {
    if d.subsec_nanos() % 1_000 != 0 {
        return Err(Error::InvalidDuration(format!(
            "{what} {d:?} is not a whole number of microseconds (no rounding is done)"
        )));
    }
    if d > Ttl::MAX.as_duration() {
        return Err(Error::InvalidDuration(format!(
            "{what} must be at most 24 h, got {d:?}"
        )));
    }
    if d.is_zero() && !zero_ok {
        return Err(Error::InvalidDuration(format!("{what} must be positive")));
    }
    Ok(d)
}

impl TryFrom<Duration> for Ttl {
    type Error = Error;

    /// Exact conversion: a sub-microsecond remainder is rejected, never rounded.
    fn try_from(d: Duration) -> Result<Ttl> {
        Ttl::from_micros(duration_micros(
            d,
            Self::MAX_MICROS,
            "a lease duration",
            "24 h",
        )?)
    }
}

impl fmt::Debug for Ttl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ttl({self})")
    }
}

impl fmt::Display for Ttl {
    /// Shortest exact text in the CLI syntax, e.g. `5m`, `1500us`, `2h30m`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_micros(f, self.0)
    }
}

impl FromStr for Ttl {
    type Err = Error;

    /// Parse the CLI syntax: one or more `<digits><unit>` groups, units `h`,
    /// `m`, `s`, `ms`, `us` (or `µs`) and `ns`, each unit at most once, e.g.
    /// `30s`, `250ms`, `2h30m`, `2000ns`. The total must be a whole number of
    /// microseconds (`2000ns` is 2 µs; `1500ns` is refused, never rounded).
    /// Fractions, signs, spaces, unknown, missing or repeated units, zero and
    /// values over 24 h are rejected with a message naming the broken rule.
    fn from_str(text: &str) -> Result<Ttl> {
        Ttl::from_micros(parse_micros(
            text,
            Ttl::MAX_MICROS,
            "a lease duration",
            "24 h",
        )?)
    }
}

/// The duration text syntax shared by [`Ttl`] and [`Delay`]: the total in
/// whole microseconds, at most `max_us` (`what` and `max_text` name the
/// bound in messages). Zero parses; the caller's type decides whether it is
/// accepted.
fn parse_micros(text: &str, max_us: i64, what: &str, max_text: &str) -> Result<i64> {
    const MAX_TEXT: usize = 64;
    if text.is_empty() {
        return Err(Error::InvalidDuration("empty duration".into()));
    }
    if text.len() > MAX_TEXT {
        return Err(Error::InvalidDuration(format!(
            "duration text longer than {MAX_TEXT} bytes"
        )));
    }
    // (unit, nanoseconds); `us` and `µs` are one unit.
    const UNITS: [(&str, i128); 6] = [
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    let max_nanos: i128 = max_us as i128 * 1_000;
    let too_long =
        || Error::InvalidDuration(format!("{text:?}: {what} must be at most {max_text}"));
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut total: i128 = 0;
    let mut seen = [false; UNITS.len()];
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return Err(Error::InvalidDuration(format!(
                "{text:?}: expected digits at byte {start} (forms: 30s, 5m, 1500us, 250ms, 1h, 2h30m)"
            )));
        }
        if i < bytes.len() && (bytes[i] == b'.' || bytes[i] == b',') {
            return Err(Error::InvalidDuration(format!(
                "{text:?}: fractions are not accepted; use a smaller unit (e.g. 1500ms for 1.5s)"
            )));
        }
        let digits = &text[start..i];
        // Any valid total (at most 10^20 ns) has at most 20 digits; more
        // cannot be valid (and would overflow the sum).
        if digits.len() > 20 {
            return Err(too_long());
        }
        let n: i128 = digits
            .parse()
            .map_err(|_| Error::InvalidDuration(format!("{text:?}: bad number {digits:?}")))?;
        let unit_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_digit() {
            i += 1;
        }
        let unit = match &text[unit_start..i] {
            "µs" => "us",
            other => other,
        };
        let Some(k) = UNITS.iter().position(|(name, _)| *name == unit) else {
            return Err(Error::InvalidDuration(if unit.is_empty() {
                format!("{text:?}: missing unit after {digits} (use h, m, s, ms, us or ns)")
            } else {
                format!("{text:?}: unknown unit {unit:?} (use h, m, s, ms, us or ns)")
            }));
        };
        if std::mem::replace(&mut seen[k], true) {
            return Err(Error::InvalidDuration(format!(
                "{text:?}: the unit {unit} is given more than once (write each unit once, \
                 e.g. 2h30m)"
            )));
        }
        total += n * UNITS[k].1;
        if total > max_nanos {
            return Err(too_long());
        }
    }
    if total % 1_000 != 0 {
        return Err(Error::InvalidDuration(format!(
            "{text:?}: {total} nanoseconds is not a whole number of microseconds; \
             durations are whole microseconds (no rounding is done)"
        )));
    }
    Ok((total / 1_000) as i64)
}

/// Write `us` (≥ 0) in the CLI syntax, shortest exact form (`0s` for zero).
fn write_micros(f: &mut fmt::Formatter<'_>, us: i64) -> fmt::Result {
    if us == 0 {
        return f.write_str("0s");
    }
    let mut rest = us;
    let units: [(i64, &str); 5] = [
        (3_600_000_000, "h"),
        (60_000_000, "m"),
        (1_000_000, "s"),
        (1_000, "ms"),
        (1, "us"),
    ];
    for (size, name) in units {
        if rest >= size {
            write!(f, "{}{name}", rest / size)?;
            rest %= size;
        }
    }
    Ok(())
}

/// Exact conversion of a [`Duration`] to whole microseconds, at most `max_us`.
fn duration_micros(d: Duration, max_us: i64, what: &str, max_text: &str) -> Result<i64> {
    if d.subsec_nanos() % 1_000 != 0 {
        return Err(Error::InvalidDuration(format!(
            "{d:?} is not a whole number of microseconds (no rounding is done)"
        )));
    }
    let us = d.as_micros();
    if us > max_us as u128 {
        return Err(Error::InvalidDuration(format!(
            "{what} must be at most {max_text}, got {d:?}"
        )));
    }
    Ok(us as i64)
}

/// A validated delay: 0 ..= 366 days, whole microseconds. Zero means "now".
///
/// A job's not-before time ([`crate::JobSpec::not_before`]), a retry delay
/// ([`crate::Lease::fail_retry_after`]), a back-off step ([`Backoff`]) and a
/// hard per-claim hold limit ([`crate::JobSpec::max_hold`], which must be
/// positive) are delays. Same text syntax and exactness rules as [`Ttl`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Delay(i64);

impl Delay {
    /// The longest accepted delay: 366 days in microseconds.
    pub const MAX_MICROS: i64 = 366 * 86_400_000_000;
    /// No delay ("now").
    pub const ZERO: Delay = Delay(0);

    /// Validate a count of microseconds: rejects `< 0` and `> 366 days`.
    pub fn from_micros(us: i64) -> Result<Delay> {
        if us < 0 {
            return Err(Error::InvalidDuration(format!(
                "a delay must not be negative, got {us} µs"
            )));
        }
        if us > Self::MAX_MICROS {
            return Err(Error::InvalidDuration(format!(
                "a delay must be at most 366 days ({} µs), got {us} µs",
                Self::MAX_MICROS
            )));
        }
        Ok(Delay(us))
    }

    /// The delay in microseconds (0 ..= 31 622 400 000 000).
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// The delay as a [`Duration`].
    pub fn as_duration(self) -> Duration {
        Duration::from_micros(self.0 as u64)
    }
}

impl TryFrom<Duration> for Delay {
    type Error = Error;

    /// Exact conversion: a sub-microsecond remainder is rejected, never rounded.
    fn try_from(d: Duration) -> Result<Delay> {
        Delay::from_micros(duration_micros(d, Self::MAX_MICROS, "a delay", "366 days")?)
    }
}

impl From<Ttl> for Delay {
    fn from(t: Ttl) -> Delay {
        Delay(t.as_micros())
    }
}

impl fmt::Debug for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Delay({self})")
    }
}

impl fmt::Display for Delay {
    /// Shortest exact text in the CLI syntax (`0s`, `90s` is `1m30s`, `48h`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_micros(f, self.0)
    }
}

impl FromStr for Delay {
    type Err = Error;

    /// The [`Ttl`] syntax; zero (`0s`) is accepted, the bound is 366 days
    /// (`8784h`).
    fn from_str(text: &str) -> Result<Delay> {
        Delay::from_micros(parse_micros(
            text,
            Delay::MAX_MICROS,
            "a delay",
            "366 days",
        )?)
    }
}

/// A retry back-off policy: exponential from `base`, capped at `cap`.
///
/// The delay before the job is due again after the retryable failure of
/// attempt `n` (1-based) is `min(cap, base × 2^(n-1))`. It is bounded by the
/// attempt budget: a failure of the last attempt leaves the job `failed`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Backoff {
    base: Delay,
    cap: Delay,
}

impl Backoff {
    /// Exponential back-off: `base` must be positive and `cap ≥ base`
    /// ([`Error::InvalidDuration`] otherwise).
    pub fn exponential(base: Delay, cap: Delay) -> Result<Backoff> {
        if base.as_micros() == 0 {
            return Err(Error::InvalidDuration(
                "a back-off base must be positive".into(),
            ));
        }
        if cap < base {
            return Err(Error::InvalidDuration(format!(
                "a back-off cap ({cap}) must not be below its base ({base})"
            )));
        }
        Ok(Backoff { base, cap })
    }

    /// The first step.
    pub fn base(self) -> Delay {
        self.base
    }

    /// The largest step.
    pub fn cap(self) -> Delay {
        self.cap
    }

    /// The delay after the retryable failure of attempt `attempt` (1-based):
    /// `min(cap, base × 2^(attempt-1))`.
    pub fn delay_for(self, attempt: u32) -> Delay {
        let shift = attempt.saturating_sub(1).min(62);
        let grown = (self.base.0 as i128) << shift;
        Delay(grown.min(self.cap.0 as i128) as i64)
    }
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Backoff(exponential {} .. {})", self.base, self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn micros_bounds() {
        assert_eq!(Ttl::from_micros(1).unwrap().as_micros(), 1);
        assert_eq!(
            Ttl::from_micros(Ttl::MAX_MICROS).unwrap().as_micros(),
            86_400_000_000
        );
        for bad in [0, -1, i64::MIN, Ttl::MAX_MICROS + 1, i64::MAX] {
            let e = Ttl::from_micros(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidDuration, "{bad}");
        }
    }

    #[test]
    fn duration_is_exact() {
        assert_eq!(
            Ttl::try_from(Duration::from_nanos(1_000))
                .unwrap()
                .as_micros(),
            1
        );
        assert!(Ttl::try_from(Duration::from_nanos(1_500)).is_err());
        assert!(Ttl::try_from(Duration::from_nanos(999)).is_err());
        assert!(Ttl::try_from(Duration::ZERO).is_err());
        assert!(Ttl::try_from(Duration::from_secs(86_400)).is_ok());
        assert!(Ttl::try_from(Duration::from_secs(86_400) + Duration::from_micros(1)).is_err());
        assert!(Ttl::try_from(Duration::MAX).is_err());
    }

    #[test]
    fn parse_accepts_cli_forms() {
        let cases = [
            ("30s", 30_000_000),
            ("5m", 300_000_000),
            ("1500us", 1_500),
            ("1500µs", 1_500),
            ("250ms", 250_000),
            ("1h", 3_600_000_000),
            ("2h30m", 9_000_000_000),
            ("1h0m1us", 3_600_000_001),
            ("24h", 86_400_000_000),
            ("1us", 1),
            ("2000ns", 2),
            ("1000ns", 1),
            ("1s500000ns", 1_000_500),
            ("86400000000000ns", 86_400_000_000),
            ("1h2m3s4ms5us", 3_723_004_005),
        ];
        for (text, us) in cases {
            let t: Ttl = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(t.as_micros(), us, "{text}");
            // Display round-trips.
            assert_eq!(t.to_string().parse::<Ttl>().unwrap(), t);
        }
    }

    #[test]
    fn parse_rejects_with_reason() {
        let cases = [
            ("", "empty"),
            ("1.5s", "fractions"),
            ("0s", "positive"),
            ("24h1us", "24 h"),
            ("25h", "24 h"),
            ("10", "missing unit"),
            ("10d", "unknown unit"),
            (
                "1500ns",
                "nanoseconds is not a whole number of microseconds",
            ),
            ("999ns", "not a whole number of microseconds"),
            ("1s1ns", "not a whole number of microseconds"),
            ("0ns", "positive"),
            ("86400000001000ns", "24 h"),
            ("1h1h", "the unit h is given more than once"),
            ("1s2s", "the unit s is given more than once"),
            ("1m30s1m", "the unit m is given more than once"),
            ("1us1µs", "the unit us is given more than once"),
            ("5ms5ms", "the unit ms is given more than once"),
            ("2000ns2000ns", "the unit ns is given more than once"),
            ("-5s", "expected digits"),
            (" 5s", "expected digits"),
            ("s", "expected digits"),
            ("99999999999999999999h", "24 h"),
        ];
        for (text, why) in cases {
            let e = text.parse::<Ttl>().unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidDuration, "{text}");
            assert!(e.to_string().contains(why), "{text}: {e}");
        }
    }
}
