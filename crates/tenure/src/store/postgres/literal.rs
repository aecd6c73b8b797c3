//! SQL literals for the writes a transaction sends with its COMMIT.
//!
//! The synchronous client cannot pipeline a parameterized statement with
//! the simple-query request that carries the pre-commit check and `COMMIT`,
//! so a transaction's set-based writes are sent in that one request as
//! calls of prepared statements with literal arguments (see
//! `PgTxn::defer`). Every value goes through the
//! functions here: strings are single-quoted with quotes doubled, which is
//! the whole escaping PostgreSQL needs with `standard_conforming_strings =
//! on` (each pooled connection sets it once, see `Pool::connect`); bytes become hex
//! `bytea` literals; numbers are printed. An array (a column of a set-based
//! write) is one string constant in the array's text form, each element
//! double-quoted with `"` and `\` escaped (`NULL` bare), so the server
//! parses one value instead of an expression of one constant per element.
//! The statements themselves are
//! prepared once per connection (`PREPARE`, typed parameters) and called
//! with [`execute`]; a NUL byte, which no PostgreSQL text can hold, is
//! refused.

use crate::error::{Error, Result};

/// One SQL value, rendered by [`Lit::sql`] on its own and by
/// [`Lit::element`] inside an [`array`].
pub(super) enum Lit {
    Null,
    Text(String),
    Int(i64),
    Bool(bool),
    Bytea(Vec<u8>),
    /// An array, already rendered.
    Array(String),
}

pub(super) fn text(s: &str) -> Lit {
    Lit::Text(s.to_owned())
}

pub(super) fn opt_text(s: Option<&str>) -> Lit {
    s.map_or(Lit::Null, text)
}

pub(super) fn int(v: i64) -> Lit {
    Lit::Int(v)
}

pub(super) fn opt_int(v: Option<i64>) -> Lit {
    v.map_or(Lit::Null, int)
}

pub(super) fn boolean(v: bool) -> Lit {
    Lit::Bool(v)
}

pub(super) fn opt_bytea(b: Option<&[u8]>) -> Lit {
    b.map_or(Lit::Null, |b| Lit::Bytea(b.to_vec()))
}

/// `'...'` with every quote doubled (`standard_conforming_strings = on`).
fn quoted(out: &mut String, s: &str) {
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
}

fn hex(out: &mut String, b: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\x");
    for x in b {
        out.push(DIGITS[usize::from(x >> 4)] as char);
        out.push(DIGITS[usize::from(x & 15)] as char);
    }
}

impl Lit {
    /// The value as a SQL literal.
    fn sql(&self, out: &mut String) {
        match self {
            Lit::Null => out.push_str("NULL"),
            Lit::Text(s) => quoted(out, s),
            Lit::Int(v) => out.push_str(&v.to_string()),
            Lit::Bool(v) => out.push_str(if *v { "true" } else { "false" }),
            Lit::Bytea(b) => {
                let mut h = String::with_capacity(2 + 2 * b.len());
                hex(&mut h, b);
                quoted(out, &h);
                out.push_str("::bytea");
            }
            Lit::Array(a) => out.push_str(a),
        }
    }

    /// The value as an element of an array's text form (the input of
    /// `array_in`): `NULL` bare, numbers and booleans as printed, every
    /// other value double-quoted with `\` and `"` escaped by a backslash.
    fn element(&self, out: &mut String) {
        let escaped = |out: &mut String, s: &str| {
            out.push('"');
            for c in s.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        };
        match self {
            Lit::Text(s) => escaped(out, s),
            Lit::Bytea(b) => {
                let mut h = String::with_capacity(2 + 2 * b.len());
                hex(&mut h, b);
                escaped(out, &h);
            }
            Lit::Array(_) => unreachable!("arrays of arrays are never rendered"),
            Lit::Null | Lit::Int(_) | Lit::Bool(_) => self.sql(out),
        }
    }
}

/// `'{...}'::ty[]`: the items in one array constant (its text form, parsed
/// by the server's `array_in` as one value, which costs far less than an
/// `ARRAY[...]` expression of as many constants).
pub(super) fn array(items: impl IntoIterator<Item = Lit>, ty: &str) -> Lit {
    let mut inner = String::from("{");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            inner.push(',');
        }
        item.element(&mut inner);
    }
    inner.push('}');
    let mut out = String::with_capacity(inner.len() + ty.len() + 8);
    quoted(&mut out, &inner);
    out.push_str("::");
    out.push_str(ty);
    out.push_str("[]");
    Lit::Array(out)
}

/// `EXECUTE name(params...)`: a call of the prepared statement `name`.
pub(super) fn execute(name: &str, params: &[Lit]) -> Result<String> {
    let mut out = format!("EXECUTE {name}(");
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        p.sql(&mut out);
    }
    out.push(')');
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
                opt_bytea(Some(&[0, 255])),
                boolean(true),
            ],
        )
        .unwrap();
        assert_eq!(
            sql,
            "EXECUTE w('it''s $1 \\', NULL, '{\"a\",NULL}'::text[], '\\x00ff'::bytea, true)"
        );
        assert!(execute("w", &[text("a\0b")]).is_err());
        assert!(execute("w", &[array([text("a\0b")], "text")]).is_err());
    }

    #[test]
    fn array_elements_are_quoted_and_escaped() {
        let sql = execute(
            "w",
            &[
                array(
                    [
                        text("it's \"q\" \\ {a,b} NULL"),
                        text("NULL"),
                        text(""),
                        opt_text(None),
                    ],
                    "text",
                ),
                array([int(-1), opt_int(None), int(7)], "bigint"),
                array([boolean(false), boolean(true)], "bool"),
                array([opt_bytea(Some(&[0xab, 1])), opt_bytea(None)], "bytea"),
                array([], "text"),
            ],
        )
        .unwrap();
        assert_eq!(
            sql,
            "EXECUTE w('{\"it''s \\\"q\\\" \\\\ {a,b} NULL\",\"NULL\",\"\",NULL}'::text[], \
             '{-1,NULL,7}'::bigint[], '{false,true}'::bool[], \
             '{\"\\\\xab01\",NULL}'::bytea[], '{}'::text[])"
        );
    }
}
