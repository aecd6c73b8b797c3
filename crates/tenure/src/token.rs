//! Lease tokens: a bounded, versioned text form of (production, job, secret).
//!
//! Format v1: `tenure-lease-v1.` followed by unpadded base64url of
//! `[len(production)] production [len(job)] job secret(32 bytes)`, lengths as
//! one byte. The whole text is at most [`MAX_TOKEN_LEN`] bytes; trailing ASCII
//! whitespace (a newline from a file) is ignored. A token is a credential:
//! [`Token`] zeroizes its text on drop and redacts it from `Debug`.

use crate::error::{Error, Result};
use crate::secret::{Secret, SECRET_LEN};
use crate::validate;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use std::fmt;
use zeroize::Zeroizing;

/// The longest token text accepted, in bytes.
pub const MAX_TOKEN_LEN: usize = 2048;
/// Every token starts with this, followed by the version number and a dot.
pub const TOKEN_PREFIX: &str = "tenure-lease-v";
const VERSION: u32 = 1;

/// An exported lease credential. Treat it like a password.
#[derive(Clone)]
pub struct Token(Zeroizing<String>);

impl Token {
    /// The token text: the only way to read the credential.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

pub(crate) struct Decoded {
    pub production: String,
    pub job: String,
    pub secret: Secret,
}

pub(crate) fn encode(production: &str, job: &str, secret: &Secret) -> Token {
    let mut raw = Zeroizing::new(Vec::with_capacity(
        2 + production.len() + job.len() + SECRET_LEN,
    ));
    raw.push(production.len() as u8);
    raw.extend_from_slice(production.as_bytes());
    raw.push(job.len() as u8);
    raw.extend_from_slice(job.as_bytes());
    raw.extend_from_slice(secret.bytes());
    let mut text = Zeroizing::new(format!("{TOKEN_PREFIX}{VERSION}."));
    URL_SAFE_NO_PAD.encode_string(raw.as_slice(), &mut text);
    Token(text)
}

pub(crate) fn decode(text: &str) -> Result<Decoded> {
    if text.len() > MAX_TOKEN_LEN {
        return Err(Error::TokenTooLarge {
            len: text.len(),
            max: MAX_TOKEN_LEN,
        });
    }
    let text = text.trim_end_matches([' ', '\t', '\r', '\n']);
    let rest = text
        .strip_prefix(TOKEN_PREFIX)
        .ok_or_else(|| Error::TokenMalformed(format!("does not start with {TOKEN_PREFIX:?}")))?;
    let dot = rest
        .find('.')
        .ok_or_else(|| Error::TokenMalformed("no '.' after the version".into()))?;
    let version = &rest[..dot];
    if version.is_empty() || version.len() > 9 || !version.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::TokenMalformed("the version is not a number".into()));
    }
    let version: u32 = version
        .parse()
        .map_err(|_| Error::TokenMalformed("the version is not a number".into()))?;
    if version != VERSION {
        return Err(Error::TokenUnsupportedVersion(format!(
            "token version {version}; this library reads version {VERSION}"
        )));
    }
    let raw = Zeroizing::new(
        URL_SAFE_NO_PAD
            .decode(&rest[dot + 1..])
            .map_err(|_| Error::TokenMalformed("the body is not unpadded base64url".into()))?,
    );
    let mut cur = &raw[..];
    let production = take_id(&mut cur, "production")?;
    let job = take_id(&mut cur, "job")?;
    if cur.len() != SECRET_LEN {
        return Err(Error::TokenMalformed(format!(
            "the secret is {} bytes, expected {SECRET_LEN}",
            cur.len()
        )));
    }
    let secret = Secret::from_bytes(cur).ok_or_else(|| Error::Internal("secret length".into()))?;
    Ok(Decoded {
        production,
        job,
        secret,
    })
}

fn take_id(cur: &mut &[u8], what: &str) -> Result<String> {
    let (&len, rest) = cur
        .split_first()
        .ok_or_else(|| Error::TokenMalformed(format!("truncated before the {what}")))?;
    let len = len as usize;
    if rest.len() < len {
        return Err(Error::TokenMalformed(format!(
            "truncated inside the {what}"
        )));
    }
    let s = std::str::from_utf8(&rest[..len])
        .map_err(|_| Error::TokenMalformed(format!("the {what} is not UTF-8")))?;
    validate::id(what, s).map_err(|e| Error::TokenMalformed(e.to_string()))?;
    *cur = &rest[len..];
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn round_trip_and_bounds() {
        let s = Secret::generate().unwrap();
        let t = encode("prod-1", "job-9", &s);
        assert!(t.expose().starts_with("tenure-lease-v1."));
        assert!(t.expose().len() <= MAX_TOKEN_LEN);
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        let d = decode(t.expose()).unwrap();
        assert_eq!((d.production.as_str(), d.job.as_str()), ("prod-1", "job-9"));
        assert_eq!(d.secret.bytes(), s.bytes());
        let with_newline = format!("{}\n", t.expose());
        assert!(decode(&with_newline).is_ok());
        // Longest IDs still fit well inside the bound.
        let long = "x".repeat(128);
        assert!(encode(&long, &long, &s).expose().len() < MAX_TOKEN_LEN);
    }

    #[test]
    fn distinct_errors() {
        let s = Secret::generate().unwrap();
        let good = encode("p", "j", &s).expose().to_owned();
        let code = |t: &str| decode(t).err().map(|e| e.code());
        assert_eq!(
            code(&"a".repeat(MAX_TOKEN_LEN + 1)),
            Some(ErrorCode::TokenTooLarge)
        );
        assert_eq!(code("hello"), Some(ErrorCode::TokenMalformed));
        assert_eq!(code(""), Some(ErrorCode::TokenMalformed));
        assert_eq!(
            code("tenure-lease-v2.AAAA"),
            Some(ErrorCode::TokenUnsupportedVersion)
        );
        assert_eq!(
            code("tenure-lease-v99999999.AAAA"),
            Some(ErrorCode::TokenUnsupportedVersion)
        );
        assert_eq!(
            code("tenure-lease-vx.AAAA"),
            Some(ErrorCode::TokenMalformed)
        );
        assert_eq!(code("tenure-lease-v1"), Some(ErrorCode::TokenMalformed));
        assert_eq!(code("tenure-lease-v1.!!!"), Some(ErrorCode::TokenMalformed));
        // Truncated: every proper prefix of the body fails, never panics.
        for cut in 16..good.len() {
            assert!(decode(&good[..cut]).is_err(), "prefix {cut}");
        }
        // Trailing bytes after the secret.
        let mut raw = URL_SAFE_NO_PAD
            .decode(&good["tenure-lease-v1.".len()..])
            .unwrap();
        raw.push(0);
        let long = format!("tenure-lease-v1.{}", URL_SAFE_NO_PAD.encode(&raw));
        assert_eq!(code(&long), Some(ErrorCode::TokenMalformed));
        // An invalid job ID inside.
        let mut raw = vec![1, b'p', 2, b'/', b'x'];
        raw.extend_from_slice(&[0; 32]);
        let bad = format!("tenure-lease-v1.{}", URL_SAFE_NO_PAD.encode(&raw));
        assert_eq!(code(&bad), Some(ErrorCode::TokenMalformed));
    }
}
