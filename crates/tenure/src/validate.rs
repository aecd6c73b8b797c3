//! Input bounds shared by every surface: IDs, holders, payloads, reasons, facts.
//!
//! IDs (productions, jobs, fact keys) are 1–128 bytes, start with an ASCII
//! letter or digit and continue with ASCII letters, digits or `._:@+-`. The
//! restriction keeps IDs safe as file-name components (the executor names
//! output files after the job) and unambiguous in logs and tables.

use crate::error::{Error, Result};

/// Longest production, job or fact-key ID in bytes.
pub const MAX_ID_LEN: usize = 128;
/// Longest holder text in bytes.
pub const MAX_HOLDER_LEN: usize = 256;
/// Largest job payload in bytes (1 MiB).
pub const MAX_PAYLOAD_LEN: usize = 1 << 20;
/// Longest failure reason in bytes.
pub const MAX_REASON_LEN: usize = 1024;
/// Most caller facts on one completion.
pub const MAX_FACTS: usize = 64;
/// Longest fact value in bytes.
pub const MAX_FACT_VALUE_LEN: usize = 4096;
/// Largest `max_attempts`.
pub const MAX_ATTEMPTS_LIMIT: u32 = 1000;
/// Most leases or claims one batched call takes (`claim_next_many`,
/// `complete_many`, `release_many`, `fail_many`, `renew_many`).
pub const MAX_BATCH: usize = 1000;
/// Largest progress checkpoint in bytes (4 KiB).
pub const MAX_PROGRESS: usize = 4096;
/// Most productions one claim across productions takes.
pub const MAX_PRODUCTIONS: usize = 64;
/// Fact keys with this prefix are written by the authority only (provenance).
pub const RESERVED_FACT_PREFIX: &str = "tenure.";

/// Check the size of a batched call: 1 ..= [`MAX_BATCH`] items.
pub fn batch(n: usize) -> Result<()> {
    if n == 0 || n > MAX_BATCH {
        return Err(Error::invalid(format!(
            "a batch takes 1 to {MAX_BATCH} items, not {n}"
        )));
    }
    Ok(())
}

/// Check a progress checkpoint: at most [`MAX_PROGRESS`] bytes (empty is
/// a checkpoint too: "nothing done yet").
pub fn progress(p: &[u8]) -> Result<()> {
    if p.len() > MAX_PROGRESS {
        return Err(Error::invalid(format!(
            "a progress checkpoint is at most {MAX_PROGRESS} bytes, not {}",
            p.len()
        )));
    }
    Ok(())
}

/// Check a requeue's extra attempts: 1 ..= [`MAX_ATTEMPTS_LIMIT`] (a job
/// gets at most its own `max_attempts` of them).
pub fn extra_attempts(n: u32) -> Result<()> {
    if n == 0 || n > MAX_ATTEMPTS_LIMIT {
        return Err(Error::invalid(format!(
            "a requeue gives 1 to {MAX_ATTEMPTS_LIMIT} extra attempts, not {n}"
        )));
    }
    Ok(())
}

/// Check the list of a claim across productions: 1 ..= [`MAX_PRODUCTIONS`]
/// valid, distinct IDs.
pub fn production_list(ps: &[&str]) -> Result<()> {
    if ps.is_empty() || ps.len() > MAX_PRODUCTIONS {
        return Err(Error::invalid(format!(
            "a claim across productions takes 1 to {MAX_PRODUCTIONS} productions, not {}",
            ps.len()
        )));
    }
    for (i, p) in ps.iter().enumerate() {
        id("production", p)?;
        if ps[..i].contains(p) {
            return Err(Error::invalid(format!(
                "production {p:?} appears more than once in the list"
            )));
        }
    }
    Ok(())
}

/// Check a production, job or fact-key ID (`what` names it in the message).
pub fn id(what: &str, s: &str) -> Result<()> {
    if s.is_empty() {
        return Err(Error::invalid(format!("{what} must not be empty")));
    }
    if s.len() > MAX_ID_LEN {
        return Err(Error::invalid(format!(
            "{what} is {} bytes, at most {MAX_ID_LEN} allowed",
            s.len()
        )));
    }
    let b = s.as_bytes();
    if !b[0].is_ascii_alphanumeric() {
        return Err(Error::invalid(format!(
            "{what} {s:?} must start with an ASCII letter or digit"
        )));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._:@+-".contains(*c)))
    {
        return Err(Error::invalid(format!(
            "{what} {s:?} contains {c:?}; allowed: ASCII letters, digits and ._:@+-"
        )));
    }
    Ok(())
}

/// Check a holder: 1–256 bytes of text without control characters.
pub fn holder(s: &str) -> Result<()> {
    if s.is_empty() {
        return Err(Error::invalid("holder must not be empty"));
    }
    if s.len() > MAX_HOLDER_LEN {
        return Err(Error::invalid(format!(
            "holder is {} bytes, at most {MAX_HOLDER_LEN} allowed",
            s.len()
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(Error::invalid("holder must not contain control characters"));
    }
    Ok(())
}

/// Check a payload size.
pub fn payload(p: &[u8]) -> Result<()> {
    if p.len() > MAX_PAYLOAD_LEN {
        return Err(Error::invalid(format!(
            "payload is {} bytes, at most {MAX_PAYLOAD_LEN} allowed",
            p.len()
        )));
    }
    Ok(())
}

/// Check `max_attempts` (1..=1000).
pub fn max_attempts(n: u32) -> Result<()> {
    if n == 0 || n > MAX_ATTEMPTS_LIMIT {
        return Err(Error::invalid(format!(
            "max_attempts must be 1..={MAX_ATTEMPTS_LIMIT}, got {n}"
        )));
    }
    Ok(())
}

/// Check a failure reason: at most 1024 bytes, no NUL.
pub fn reason(s: &str) -> Result<()> {
    if s.len() > MAX_REASON_LEN {
        return Err(Error::invalid(format!(
            "reason is {} bytes, at most {MAX_REASON_LEN} allowed",
            s.len()
        )));
    }
    if s.contains('\0') {
        return Err(Error::invalid("reason must not contain NUL"));
    }
    Ok(())
}

/// Check caller facts: at most 64, keys are IDs outside the reserved
/// `tenure.` namespace and unique, values at most 4096 bytes without NUL.
pub fn facts<K: AsRef<str>, V: AsRef<str>>(facts: &[(K, V)]) -> Result<()> {
    if facts.len() > MAX_FACTS {
        return Err(Error::invalid(format!(
            "{} facts given, at most {MAX_FACTS} allowed",
            facts.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for (k, v) in facts {
        let (k, v) = (k.as_ref(), v.as_ref());
        id("fact key", k)?;
        if k.to_ascii_lowercase().starts_with(RESERVED_FACT_PREFIX) {
            return Err(Error::invalid(format!(
                "fact key {k:?} is in the reserved {RESERVED_FACT_PREFIX:?} namespace"
            )));
        }
        if !seen.insert(k) {
            return Err(Error::invalid(format!("fact key {k:?} given twice")));
        }
        if v.len() > MAX_FACT_VALUE_LEN {
            return Err(Error::invalid(format!(
                "fact {k:?} value is {} bytes, at most {MAX_FACT_VALUE_LEN} allowed",
                v.len()
            )));
        }
        if v.contains('\0') {
            return Err(Error::invalid(format!("fact {k:?} value contains NUL")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for ok in [
            "a",
            "nightly-2026-11-29",
            "job.7",
            "w@h:1+x_y",
            &"x".repeat(128),
        ] {
            id("job", ok).unwrap();
        }
        for bad in [
            "",
            ".hidden",
            "-x",
            "a/b",
            "a b",
            "é",
            "a\0",
            &"x".repeat(129),
            "..",
        ] {
            assert!(id("job", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn holders_reasons_payloads() {
        holder("worker-7@host-3 (pid 12)").unwrap();
        assert!(holder("").is_err());
        assert!(holder("a\nb").is_err());
        assert!(holder(&"h".repeat(257)).is_err());
        reason("").unwrap();
        assert!(reason(&"r".repeat(1025)).is_err());
        assert!(reason("a\0").is_err());
        payload(&vec![0; MAX_PAYLOAD_LEN]).unwrap();
        assert!(payload(&vec![0; MAX_PAYLOAD_LEN + 1]).is_err());
        assert!(max_attempts(0).is_err());
        assert!(max_attempts(1001).is_err());
        max_attempts(1000).unwrap();
    }

    #[test]
    fn fact_rules() {
        facts(&[("a", "1"), ("b", "")]).unwrap();
        assert!(facts(&[("a", "1"), ("a", "2")]).is_err());
        assert!(facts(&[("tenure.claim_id", "x")]).is_err());
        assert!(facts(&[("TENURE.x", "x")]).is_err());
        assert!(facts(&[("k", "v\0")]).is_err());
        assert!(facts(&[("k", "v".repeat(4097))]).is_err());
        let many: Vec<(String, String)> =
            (0..65).map(|i| (format!("k{i}"), String::new())).collect();
        assert!(facts(&many).is_err());
    }
}
