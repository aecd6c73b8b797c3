//! The PostgreSQL store address: a libpq-style `postgres://` URL.
//!
//! [`split_url`] takes out the TLS parameters (`sslmode`, `sslrootcert`; their
//! meaning is in [`super::tls`]) and leaves the rest for `postgres::Config`;
//! [`redact`] masks every password for `Debug` and error messages. No error
//! raised here contains the password: parameter errors name only the
//! parameter and its (non-secret) value.

use crate::error::{Error, Result};
use std::path::PathBuf;

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Plain TCP only.
    Disable,
    /// Plain first; TLS if the server rejects the plain connection.
    Allow,
    /// TLS if the server offers it; plain otherwise.
    Prefer,
    /// TLS, whatever the certificate (chain checked if a root file is given).
    Require,
    /// TLS with a certificate chain to a trusted root; any host name.
    VerifyCa,
    /// TLS with a chain to a trusted root, valid for the host name.
    VerifyFull,
}

impl Mode {
    fn parse(v: &str) -> Option<Mode> {
        Some(match v {
            "disable" => Mode::Disable,
            "allow" => Mode::Allow,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            _ => return None,
        })
    }

    /// The URL spelling.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Allow => "allow",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }
}

/// Where trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Roots {
    /// `sslrootcert=PATH`: a PEM file.
    File(PathBuf),
    /// `sslrootcert=system`, or a verify mode without `sslrootcert`.
    System,
}

/// The TLS parameters of a URL, after defaults and consistency checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Params {
    /// The effective mode.
    pub(crate) mode: Mode,
    /// Roots to verify the chain against; `None`: the certificate is not checked.
    pub(crate) roots: Option<Roots>,
    /// Whether the host name is checked too (`verify-full`).
    pub(crate) check_name: bool,
}

/// Percent-decode a URL component (as rust-postgres does).
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Split a `postgres://` URL into the URL for `postgres::Config` (without the
/// TLS parameters handled here) and the effective TLS parameters.
///
/// The query string starts at the first `?` after the credentials (the part
/// before the first `@`), exactly where rust-postgres looks for it. Errors
/// never contain anything but parameter names and `sslmode` /
/// `sslrootcert` values, so never the password.
pub(crate) fn split_url(url: &str) -> Result<(String, Params)> {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    let after_creds = url[after_scheme..]
        .find('@')
        .map(|i| after_scheme + i + 1)
        .unwrap_or(after_scheme);
    let (head, query) = match url[after_creds..].find('?') {
        Some(i) => (&url[..after_creds + i], Some(&url[after_creds + i + 1..])),
        None => (url, None),
    };
    let mut mode = None;
    let mut rootcert: Option<String> = None;
    let mut kept: Vec<&str> = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            // Not ours: rust-postgres reports it (naming no value).
            kept.push(pair);
            continue;
        };
        let key =
            decode(k).ok_or_else(|| bad("a URL parameter name is not valid percent-encoding"))?;
        match key.as_str() {
            "sslmode" => {
                if mode.is_some() {
                    return Err(bad("sslmode is given more than once"));
                }
                let v = decode(v).ok_or_else(|| bad("sslmode is not valid percent-encoding"))?;
                mode = Some(Mode::parse(&v).ok_or_else(|| {
                    bad(format!(
                        "sslmode={} is not one of disable, allow, prefer, require, verify-ca, \
                         verify-full",
                        printable(&v)
                    ))
                })?);
            }
            "sslrootcert" => {
                if rootcert.is_some() {
                    return Err(bad("sslrootcert is given more than once"));
                }
                let v =
                    decode(v).ok_or_else(|| bad("sslrootcert is not valid percent-encoding"))?;
                if v.is_empty() {
                    return Err(bad("sslrootcert is empty (a PEM file path or `system`)"));
                }
                rootcert = Some(v);
            }
            "sslnegotiation" => kept.push(pair),
            k if k.starts_with("ssl") => {
                return Err(bad(format!(
                    "the URL parameter {} is not supported (tenure supports sslmode, \
                     sslrootcert and sslnegotiation; no client certificates or CRLs)",
                    printable(k)
                )))
            }
            _ => kept.push(pair),
        }
    }
    let roots_given = match rootcert.as_deref() {
        None => None,
        Some("system") => Some(Roots::System),
        Some(p) => Some(Roots::File(PathBuf::from(p))),
    };
    let mode = mode.unwrap_or(if roots_given.is_some() {
        Mode::VerifyFull
    } else {
        Mode::Prefer
    });
    if roots_given == Some(Roots::System) && mode != Mode::VerifyFull {
        return Err(bad(format!(
            "sslrootcert=system needs sslmode=verify-full (it was {})",
            mode.name()
        )));
    }
    let roots = match mode {
        Mode::Disable => None,
        Mode::VerifyCa | Mode::VerifyFull => Some(roots_given.unwrap_or(Roots::System)),
        Mode::Allow | Mode::Prefer | Mode::Require => roots_given,
    };
    let rest = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    Ok((
        rest,
        Params {
            mode,
            roots,
            check_name: mode == Mode::VerifyFull,
        },
    ))
}

pub(crate) fn bad(msg: impl std::fmt::Display) -> Error {
    Error::invalid(format!("invalid PostgreSQL address: {msg}"))
}

/// A user-supplied value, shortened and without control characters.
pub(crate) fn printable(v: &str) -> String {
    let s: String = v.chars().take(64).filter(|c| !c.is_control()).collect();
    format!("{s:?}")
}

/// The URL with every password masked as `***`, for `Debug` and messages.
///
/// Mirrors how rust-postgres reads a URL: the credentials are everything
/// between `://` and the first `@` (the password after the first `:` in
/// them, even if it holds a raw `/` or `?`), and a `password=` query
/// parameter is a password too.
pub(crate) fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let start = scheme_end + 3;
    let rest = &url[start..];
    let (mut out, tail) = match rest.find('@') {
        Some(at) => {
            let masked = match rest[..at].split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => rest[..at].to_owned(),
            };
            (format!("{}{masked}@", &url[..start]), &rest[at + 1..])
        }
        None => (url[..start].to_owned(), rest),
    };
    match tail.find('?') {
        Some(q) => {
            out.push_str(&tail[..=q]);
            let params: Vec<String> = tail[q + 1..]
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if decode(k).as_deref() == Some("password") => {
                        format!("{k}=***")
                    }
                    _ => p.to_owned(),
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(tail),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, Params) {
        split_url(url).unwrap()
    }

    fn err(url: &str) -> String {
        match split_url(url) {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("expected InvalidArgument for {url}, got {other:?}"),
        }
    }

    #[test]
    fn default_is_prefer_without_verification() {
        let (rest, p) = split("postgres://u:pw@h:5432/db");
        assert_eq!(rest, "postgres://u:pw@h:5432/db");
        assert_eq!(
            p,
            Params {
                mode: Mode::Prefer,
                roots: None,
                check_name: false
            }
        );
    }

    #[test]
    fn every_mode_parses_and_is_stripped() {
        for (v, mode) in [
            ("disable", Mode::Disable),
            ("allow", Mode::Allow),
            ("prefer", Mode::Prefer),
            ("require", Mode::Require),
            ("verify-ca", Mode::VerifyCa),
            ("verify-full", Mode::VerifyFull),
        ] {
            let (rest, p) = split(&format!(
                "postgres://u@h/db?application_name=x&sslmode={v}&connect_timeout=3"
            ));
            assert_eq!(
                rest,
                "postgres://u@h/db?application_name=x&connect_timeout=3"
            );
            assert_eq!(p.mode, mode);
            assert_eq!(p.check_name, mode == Mode::VerifyFull);
            let verifying = matches!(mode, Mode::VerifyCa | Mode::VerifyFull);
            assert_eq!(p.roots, verifying.then_some(Roots::System), "{v}");
        }
    }

    #[test]
    fn root_file_implies_verify_full_and_makes_weak_modes_check_the_chain() {
        let (rest, p) = split("postgresql://h/db?sslrootcert=%2Fetc%2Fca%20x.pem");
        assert_eq!(rest, "postgresql://h/db");
        assert_eq!(p.mode, Mode::VerifyFull);
        assert!(p.check_name);
        assert_eq!(p.roots, Some(Roots::File("/etc/ca x.pem".into())));

        let (_, p) = split("postgres://h/db?sslmode=require&sslrootcert=/ca.pem");
        assert_eq!(p.mode, Mode::Require);
        assert_eq!(p.roots, Some(Roots::File("/ca.pem".into())));
        assert!(!p.check_name);

        let (_, p) = split("postgres://h/db?sslmode=verify-ca&sslrootcert=/ca.pem");
        assert_eq!(p.roots, Some(Roots::File("/ca.pem".into())));
        assert!(!p.check_name);

        let (_, p) = split("postgres://h/db?sslmode=disable&sslrootcert=/ca.pem");
        assert_eq!(p.roots, None);
    }

    #[test]
    fn system_roots_need_verify_full() {
        let (_, p) = split("postgres://h/db?sslrootcert=system");
        assert_eq!(p.mode, Mode::VerifyFull);
        assert_eq!(p.roots, Some(Roots::System));
        for weak in ["disable", "allow", "prefer", "require", "verify-ca"] {
            let m = err(&format!(
                "postgres://h/db?sslmode={weak}&sslrootcert=system"
            ));
            assert!(
                m.contains("sslrootcert=system needs sslmode=verify-full"),
                "{m}"
            );
        }
    }

    #[test]
    fn bad_values_are_invalid_arguments_that_never_echo_the_password() {
        let cases = [
            (
                "postgres://u:Sup3rSecret@h/db?sslmode=verify",
                "sslmode=\"verify\"",
            ),
            (
                "postgres://u:Sup3rSecret@h/db?sslmode=REQUIRE",
                "sslmode=\"REQUIRE\"",
            ),
            ("postgres://u:Sup3rSecret@h/db?sslmode=", "sslmode=\"\""),
            (
                "postgres://u:Sup3rSecret@h/db?sslmode=require&sslmode=disable",
                "more than once",
            ),
            (
                "postgres://u:Sup3rSecret@h/db?sslrootcert=",
                "sslrootcert is empty",
            ),
            ("postgres://u:Sup3rSecret@h/db?sslcert=/c.pem", "sslcert"),
            (
                "postgres://u:Sup3rSecret@h/db?sslkey=/k.pem",
                "not supported",
            ),
            (
                "postgres://u:Sup3rSecret@h/db?sslmode=%zz",
                "percent-encoding",
            ),
            (
                "postgres://u:Sup3rSecret@h/db?password=Sup3rSecret&sslmode=nope",
                "\"nope\"",
            ),
        ];
        for (url, want) in cases {
            let m = err(url);
            assert!(m.contains(want), "{url}: {m}");
            assert!(!m.contains("Sup3rSecret"), "{url}: {m}");
        }
    }

    #[test]
    fn query_starts_after_the_credentials() {
        // rust-postgres takes everything before the first '@' as credentials,
        // so a raw '?' in a password is not the start of the query.
        let (rest, p) = split("postgres://u:p?ss/w@h/db?sslmode=require");
        assert_eq!(rest, "postgres://u:p?ss/w@h/db");
        assert_eq!(p.mode, Mode::Require);
        let (rest, p) = split("postgres://u:p?sslmode=disable@h/db");
        assert_eq!(rest, "postgres://u:p?sslmode=disable@h/db");
        assert_eq!(p.mode, Mode::Prefer);
    }

    #[test]
    fn other_parameters_pass_through_untouched() {
        let (rest, _) = split(
            "postgres://h1:5432,h2:5433/db?sslnegotiation=direct&sslmode=verify-full&\
             channel_binding=require&target_session_attrs=read-write",
        );
        assert_eq!(
            rest,
            "postgres://h1:5432,h2:5433/db?sslnegotiation=direct&channel_binding=require&\
             target_session_attrs=read-write"
        );
        // Percent-encoded parameter names are recognised, as rust-postgres does.
        let (rest, p) = split("postgres://h/db?ssl%6dode=disable");
        assert_eq!(rest, "postgres://h/db");
        assert_eq!(p.mode, Mode::Disable);
    }

    #[test]
    fn redact_hides_every_password() {
        for (url, want) in [
            (
                "postgres://u:secret@h:5432/db?x=1",
                "postgres://u:***@h:5432/db?x=1",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgresql://h/db", "postgresql://h/db"),
            ("postgres://u:se/cr?et@h/db", "postgres://u:***@h/db"),
            (
                "postgres://u@h/db?sslmode=verify-full&password=secret&x=y",
                "postgres://u@h/db?sslmode=verify-full&password=***&x=y",
            ),
            (
                "postgres://u:secret@h/db?pass%77ord=secret",
                "postgres://u:***@h/db?pass%77ord=***",
            ),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact(url), want, "{url}");
        }
    }
}
