//! SQL literals for the writes a transaction sends with its COMMIT.
//!
//! The synchronous client cannot pipeline a parameterized statement with
//! the simple-query request that carries the pre-commit check and `COMMIT`,
//! so a transaction's set-based writes are sent in that one request as
//! calls of prepared statements with literal arguments (see
//! `PgTxn::defer`). Every value goes through the
//! functions here: strings are single-quoted with quotes doubled, which is
//! the whole escaping PostgreSQL needs with `standard_conforming_strings =
//! on` (each write transaction sets it in its `BEGIN`); bytes become hex
//! `bytea` literals; numbers are printed. The statements themselves are
//! prepared once per connection (`PREPARE`, typed parameters) and called
//! with [`execute`]; a NUL byte, which no PostgreSQL text can hold, is
//! refused.

use crate::error::{Error, Result};

/// One rendered SQL value.
pub(super) struct Lit(String);

pub(super) fn text(s: &str) -> Lit {
    Lit(format!("'{}'", s.replace('\'', "''")))
}

pub(super) fn opt_text(s: Option<&str>) -> Lit {
    s.map_or_else(null, text)
}

pub(super) fn int(v: i64) -> Lit {
    Lit(v.to_string())
}

pub(super) fn opt_int(v: Option<i64>) -> Lit {
    v.map_or_else(null, int)
}

pub(super) fn boolean(v: bool) -> Lit {
    Lit(if v { "true" } else { "false" }.to_owned())
}

pub(super) fn bytea(b: &[u8]) -> Lit {
    let mut s = String::with_capacity(b.len() * 2 + 12);
    s.push_str("'\\x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s.push_str("'::bytea");
    Lit(s)
}

pub(super) fn opt_bytea(b: Option<&[u8]>) -> Lit {
    b.map_or_else(null, bytea)
}

fn null() -> Lit {
    Lit("NULL".to_owned())
}

/// `ARRAY[...]::ty[]` of the items.
pub(super) fn array(items: impl IntoIterator<Item = Lit>, ty: &str) -> Lit {
    let inner: Vec<String> = items.into_iter().map(|l| l.0).collect();
    Lit(format!("ARRAY[{}]::{ty}[]", inner.join(",")))
}

/// `EXECUTE name(params...)`: a call of the prepared statement `name`.
pub(super) fn execute(name: &str, params: &[Lit]) -> Result<String> {
    let args: Vec<&str> = params.iter().map(|p| p.0.as_str()).collect();
    let out = format!("EXECUTE {name}({})", args.join(", "));
    if out.contains('\0') {
        return Err(Error::invalid("a value contains a NUL byte"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_quote_safely() {
        let sql = execute(
            "w",
            &[
                text("it's $1 \\"),
                opt_int(None),
                array([text("a"), opt_text(None)], "text"),
                bytea(&[0, 255]),
                boolean(true),
            ],
        )
        .unwrap();
        assert_eq!(
            sql,
            "EXECUTE w('it''s $1 \\', NULL, ARRAY['a',NULL]::text[], '\\x00ff'::bytea, true)"
        );
        assert!(execute("w", &[text("a\0b")]).is_err());
    }
}
