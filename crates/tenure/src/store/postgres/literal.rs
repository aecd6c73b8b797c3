//! SQL literals for the writes a transaction sends with its COMMIT.
//!
//! The synchronous client cannot pipeline a parameterized statement with
//! the simple-query request that carries the pre-commit check and `COMMIT`,
//! so a transaction's set-based writes are rendered as text and sent in
//! that one request (see `PgTxn::defer`). Every value goes through the
//! functions here: strings are single-quoted with quotes doubled, which is
//! the whole escaping PostgreSQL needs with `standard_conforming_strings =
//! on` (each write transaction sets it in its `BEGIN`); bytes become hex
//! `bytea` literals; numbers are printed. A statement is rendered by
//! [`render`], which substitutes `$n` in a static statement text in one
//! pass, so a value's text is never scanned again. A NUL byte, which no
//! PostgreSQL text can hold, is refused.

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

/// `sql` with each `$n` replaced by `params[n - 1]`, in one pass.
pub(super) fn render(sql: &str, params: &[Lit]) -> Result<String> {
    let mut out =
        String::with_capacity(sql.len() + params.iter().map(|p| p.0.len()).sum::<usize>());
    let mut rest = sql;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let digits = rest[i + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let n: usize = rest[i + 1..i + 1 + digits]
            .parse()
            .map_err(|_| Error::Internal("a deferred statement has a bare '$'".into()))?;
        let p = params
            .get(n.wrapping_sub(1))
            .ok_or_else(|| Error::Internal(format!("a deferred statement has no ${n}")))?;
        out.push_str(&p.0);
        rest = &rest[i + 1 + digits..];
    }
    out.push_str(rest);
    if out.contains('\0') {
        return Err(Error::invalid("a value contains a NUL byte"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_render_once_and_quote_safely() {
        let sql = render(
            "SELECT $1, $2, $10, $3",
            &[
                text("it's $1"),
                opt_int(None),
                bytea(&[0, 255]),
                int(4),
                int(5),
                int(6),
                int(7),
                int(8),
                int(9),
                array([text("a"), opt_text(None)], "text"),
            ],
        )
        .unwrap();
        assert_eq!(
            sql,
            "SELECT 'it''s $1', NULL, ARRAY['a',NULL]::text[], '\\x00ff'::bytea"
        );
        assert!(render("SELECT $1", &[text("a\0b")]).is_err());
        assert!(render("SELECT $2", &[text("a")]).is_err());
    }
}
