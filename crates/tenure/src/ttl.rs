//! Lease durations: the only place in tenure that validates one.
//!
//! A TTL is a positive whole number of microseconds, at most 24 hours. Nothing
//! is ever rounded: a value with a sub-microsecond remainder is rejected.
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
        if d.subsec_nanos() % 1_000 != 0 {
            return Err(Error::InvalidDuration(format!(
                "{d:?} is not a whole number of microseconds (no rounding is done)"
            )));
        }
        let us = d.as_micros();
        if us > Self::MAX_MICROS as u128 {
            return Err(Error::InvalidDuration(format!(
                "a lease duration must be at most 24 h, got {d:?}"
            )));
        }
        Ttl::from_micros(us as i64)
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
        let mut rest = self.0;
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
        const MAX_NANOS: i128 = Ttl::MAX_MICROS as i128 * 1_000;
        let too_long =
            || Error::InvalidDuration(format!("{text:?}: a lease duration must be at most 24 h"));
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
            // At most 24 h of nanoseconds has 14 digits; more cannot be valid.
            if digits.len() > 15 {
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
            if total > MAX_NANOS {
                return Err(too_long());
            }
        }
        if total % 1_000 != 0 {
            return Err(Error::InvalidDuration(format!(
                "{text:?}: {total} nanoseconds is not a whole number of microseconds; \
                 durations are whole microseconds (no rounding is done)"
            )));
        }
        Ttl::from_micros((total / 1_000) as i64)
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
