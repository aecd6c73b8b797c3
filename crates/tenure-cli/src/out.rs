//! Output: results that render themselves as text or JSON, the stable JSON
//! objects of the core's views, and plain-text tables.
//!
//! JSON field names are part of the CLI's interface (documented in
//! docs/cli.md): times are integers in µs since the Unix epoch with a `_us`
//! suffix, absent values are `null`, states and kinds are the core's
//! lower-case names. No object ever carries a secret or token.

use crate::fail::{local, R};
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::{
    Backoff, CheckReport, ClockReading, Delay, Event, JobView, Percentiles, ProductionView,
    PublishedFact, Stats,
};

/// A command's result: human text by default, one JSON object with `--json`.
pub trait Render {
    /// The human text, every line ended by a newline.
    fn text(&self, o: &mut dyn Write) -> io::Result<()>;
    /// The JSON object (printed on one line).
    fn json(&self) -> Value;
}

/// Write `r` as text, or as one line of JSON.
pub fn write(json: bool, r: &dyn Render, o: &mut dyn Write) -> io::Result<()> {
    if json {
        writeln!(o, "{}", r.json())
    } else {
        r.text(o)
    }
}

/// Write `r` to stdout and flush; a failure to write is a local failure.
pub fn print(json: bool, r: &dyn Render) -> R<()> {
    let mut o = io::stdout().lock();
    write(json, r, &mut o)
        .and_then(|_| o.flush())
        .map_err(local("writing the output"))
}

/// A job observation.
pub fn job(v: &JobView) -> Value {
    json!({
        "production": v.production,
        "job": v.job,
        "state": v.state.as_str(),
        "attempts": v.attempts,
        "max_attempts": v.max_attempts,
        "priority": v.priority,
        "holder": v.holder,
        "claim_id": v.claim_id.map(|c| c.to_string()),
        "expires_us": v.expires_us,
        "created_us": v.created_us,
        "updated_us": v.updated_us,
        "payload_len": v.payload_len,
        "last_error": v.last_error,
        "due_us": v.due_us,
        "max_hold_us": v.max_hold_us,
        "backoff": backoff(v.backoff),
    })
}

/// Bytes as lower-case hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A progress checkpoint as text: its size and bytes in hex; `-` when absent.
pub fn progress_text(p: Option<&[u8]>) -> String {
    p.map_or_else(|| "-".into(), |b| format!("{} bytes {}", b.len(), hex(b)))
}

/// A back-off policy: `{"base_us": N, "cap_us": N}`, or `null`.
pub fn backoff(b: Option<Backoff>) -> Value {
    b.map_or(
        Value::Null,
        |b| json!({"base_us": b.base().as_micros(), "cap_us": b.cap().as_micros()}),
    )
}

/// A back-off policy as text, in the `--backoff BASE,CAP` syntax; `-` when absent.
pub fn backoff_text(b: Option<Backoff>) -> String {
    b.map_or_else(|| "-".into(), |b| format!("{},{}", b.base(), b.cap()))
}

/// A duration of µs as text (`90s` is `1m30s`); `-` when absent.
pub fn opt_delay(us: Option<i64>) -> String {
    us.and_then(|us| Delay::from_micros(us).ok())
        .map_or_else(|| "-".into(), |d| d.to_string())
}

/// A production's gates as text: `paused since T, concurrency limit K,
/// rate limit N/Iµs burst B` (`no`, `none` where not set).
pub fn gates_text(g: &tenure::Gates) -> String {
    format!(
        "paused {}, concurrency limit {}, rate limit {}",
        g.paused_us
            .map(|t| format!("since {}", time(t)))
            .unwrap_or_else(|| "no".into()),
        g.concurrency
            .map(|k| k.to_string())
            .unwrap_or_else(|| "none".into()),
        g.rate
            .map(|r| format!(
                "{}/{}µs burst {}",
                r.claims,
                r.interval.as_micros(),
                r.burst
            ))
            .unwrap_or_else(|| "none".into()),
    )
}

/// A production's gates as JSON.
pub fn gates(g: &tenure::Gates) -> Value {
    json!({
        "paused_us": g.paused_us,
        "concurrency": g.concurrency,
        "rate": g.rate.map(|r| json!({
            "claims": r.claims,
            "interval_us": r.interval.as_micros() as u64,
            "burst": r.burst,
        })),
    })
}

/// A production.
pub fn production(p: &ProductionView) -> Value {
    json!({
        "name": p.name,
        "created_us": p.created_us,
        "cancelled_us": p.cancelled_us,
        "backoff": backoff(p.backoff),
    })
}

/// An event.
pub fn event(e: &Event) -> Value {
    json!({
        "seq": e.seq,
        "at_us": e.at_us,
        "production": e.production,
        "job": e.job,
        "kind": e.kind.as_str(),
        "state": e.state.map(|s| s.as_str()),
        "claim_id": e.claim_id.map(|c| c.to_string()),
        "holder": e.holder,
        "attempt": e.attempt,
        "expires_us": e.expires_us,
        "detail": e.detail,
    })
}

/// A published fact.
pub fn fact(f: &PublishedFact) -> Value {
    json!({
        "production": f.production,
        "job": f.job,
        "key": f.key,
        "value": f.value,
    })
}

/// Percentiles in µs (`null` when there were none).
pub fn percentiles(p: &Percentiles) -> Value {
    let us = |d: Option<std::time::Duration>| d.map(|d| d.as_micros() as u64);
    json!({ "count": p.count, "p50_us": us(p.p50), "p95_us": us(p.p95), "p99_us": us(p.p99) })
}

/// Queue statistics (`tenure stats --json`).
pub fn stats(s: &Stats) -> Value {
    let productions: Vec<Value> = s
        .productions
        .iter()
        .map(|p| {
            let f = &p.flow;
            json!({
                "name": p.name,
                "cancelled": p.cancelled,
                "jobs": {
                    "waiting_due": p.waiting_due,
                    "waiting_later": p.waiting_later,
                    "claimed_live": p.claimed_live,
                    "claimed_expired": p.claimed_expired,
                    "completed": p.completed,
                    "failed": p.failed,
                    "cancelled": p.cancelled_jobs,
                },
                "oldest_due_age_us": p.oldest_due_age.map(|d| d.as_micros() as u64),
                "next_due_us": p.next_due_us,
                "expiring_within": p.expiring_within,
                "max_live_attempts": p.max_live_attempts,
                "gates": gates(&p.gates),
                "flow": {
                    "window_us": f.window.as_micros() as u64,
                    "claims": f.claims,
                    "completions": f.completions,
                    "retryable_failures": f.retryable_failures,
                    "permanent_failures": f.permanent_failures,
                    "expiries": f.expiries,
                    "truncated": f.truncated,
                    "covered_us": f.covered.as_micros() as u64,
                    "wait": percentiles(&f.wait),
                    "run": percentiles(&f.run),
                },
            })
        })
        .collect();
    json!({
        "now_us": s.now_us,
        "high_water_us": s.high_water_us,
        "horizon_us": s.horizon.as_micros() as u64,
        "window_us": s.window.as_micros() as u64,
        "productions": productions,
    })
}

/// A clock reading.
pub fn clock(c: &ClockReading) -> Value {
    json!({ "now_us": c.now_us, "mark_us": c.mark_us, "blocked": c.blocked })
}

/// Standard base64 with padding: the independent reference the export
/// test checks the core's `payload_base64` against.
#[cfg(test)]
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// A check report.
pub fn check(r: &CheckReport) -> Value {
    json!({
        "ok": r.ok(),
        "schema_version": r.schema_version,
        "jobs": r.jobs,
        "events": r.events,
        "history_horizon": r.history_horizon,
        "violations": r.violations,
    })
}

/// µs since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
pub fn time(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let ms = us.rem_euclid(1_000_000) / 1_000;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (H. Hinnant), proleptic Gregorian.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// An optional time, `-` when absent.
pub fn opt_time(us: Option<i64>) -> String {
    us.map(time).unwrap_or_else(|| "-".into())
}

/// Write rows under headers, columns padded to their widest cell.
pub fn table(o: &mut dyn Write, headers: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let mut w: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < w.len() {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let mut line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
            }
        }
        writeln!(o, "{}", s.trim_end())
    };
    line(headers.to_vec())?;
    for r in rows {
        line(r.iter().map(String::as_str).collect())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn times() {
        assert_eq!(super::time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::time(1_800_000_000_123_456),
            "2027-01-15T08:00:00.123Z"
        );
        assert_eq!(super::time(951_782_400_000_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn base64_pads_like_rfc_4648() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(raw.as_bytes()), enc);
        }
    }
}
