//! The probe coverage rule: every function exported by `libtenure` (each
//! name in a version node of `crates/tenure-capi/tenure.map`) is exercised
//! by the bad-input suite (`tests/c/test_bad_input.c`) and by the C-ABI fuzz
//! driver (`torture/fuzz/capi_driver.c`). "Exercised" means the name occurs
//! in the file's code (comments and string literals removed) as an
//! identifier: a call, or a function passed to a macro that calls it. A
//! name built by token pasting does not count, so the suites spell every
//! name out. `cargo xtask test` checks this before it runs the C suites,
//! and the xtask unit test `every_export_is_probed` checks the files as
//! committed, so a new export cannot ship unprobed.

use crate::util::{root, Result};
use std::collections::BTreeSet;
use std::fs;

/// The files that must exercise every export.
pub const PROBE_SUITES: &[&str] = &["tests/c/test_bad_input.c", "torture/fuzz/capi_driver.c"];

/// The exported names of a linker version script: each `tenure_*;` line of
/// a node's `global:` list, in file order.
pub fn exported_names(map: &str) -> Vec<String> {
    strip_c(map)
        .lines()
        .filter_map(|l| l.trim().strip_suffix(';'))
        .filter(|n| n.starts_with("tenure_") && is_ident(n))
        .map(str::to_owned)
        .collect()
}

/// The `tenure_*` identifiers in C source, comments and literals removed.
pub fn identifiers(source: &str) -> BTreeSet<String> {
    let code = strip_c(source);
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &code[start..i];
            if word.starts_with("tenure_") {
                out.insert(word.to_owned());
            }
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The exports of `map` that `source` does not exercise.
pub fn unprobed(map: &str, source: &str) -> Vec<String> {
    let used = identifiers(source);
    exported_names(map)
        .into_iter()
        .filter(|n| !used.contains(n))
        .collect()
}

/// Fail when an export is missing from a probe suite (naming each).
pub fn check() -> Result {
    let map_path = root().join("crates/tenure-capi/tenure.map");
    let map = fs::read_to_string(&map_path).map_err(|e| format!("{}: {e}", map_path.display()))?;
    let exports = exported_names(&map).len();
    if exports == 0 {
        return Err(format!("{}: no exported names found", map_path.display()));
    }
    let mut problems = Vec::new();
    for suite in PROBE_SUITES {
        let path = root().join(suite);
        let src = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let missing = unprobed(&map, &src);
        if !missing.is_empty() {
            problems.push(format!(
                "{suite} does not exercise {} of the {exports} exports in tenure.map: {}",
                missing.len(),
                missing.join(", ")
            ));
        }
    }
    if problems.is_empty() {
        println!(
            "probe coverage: all {exports} exports of tenure.map exercised by {}",
            PROBE_SUITES.join(" and ")
        );
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// C (and version script) text with comments, string and character
/// literals replaced by spaces (newlines kept).
fn strip_c(src: &str) -> String {
    #[derive(PartialEq)]
    enum S {
        Code,
        Block,
        Line,
        Str(u8),
    }
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut s = S::Code;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match s {
            S::Code => {
                if c == b'/' && next == Some(b'*') {
                    s = S::Block;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    continue;
                }
                if c == b'/' && next == Some(b'/') {
                    s = S::Line;
                    i += 2;
                    continue;
                }
                if c == b'"' || c == b'\'' {
                    s = S::Str(c);
                }
                out.push(if matches!(s, S::Str(_)) { b' ' } else { c });
            }
            S::Block => {
                if c == b'*' && next == Some(b'/') {
                    s = S::Code;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    continue;
                }
                out.push(if c == b'\n' { b'\n' } else { b' ' });
            }
            S::Line => {
                if c == b'\n' {
                    s = S::Code;
                    out.push(b'\n');
                }
            }
            S::Str(q) => {
                if c == b'\\' {
                    out.extend_from_slice(b"  ");
                    i += 2;
                    continue;
                }
                if c == q {
                    s = S::Code;
                }
                out.push(if c == b'\n' { b'\n' } else { b' ' });
            }
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "/* tenure_in_comment; */\nTENURE_1.0 {\n  global:\n    tenure_a;\n    tenure_b;\n  local:\n    *;\n};\nTENURE_1.1 {\n  global:\n    tenure_c;\n} TENURE_1.0;\n";

    #[test]
    fn exported_names_reads_every_node_and_skips_comments() {
        assert_eq!(exported_names(MAP), ["tenure_a", "tenure_b", "tenure_c"]);
    }

    #[test]
    fn comments_strings_and_pasted_names_do_not_count() {
        let src = "/* tenure_a( */ // tenure_b(\nconst char *s = \"tenure_c(\";\n#define M(P) P##_c()\nM(tenure);\n";
        assert_eq!(unprobed(MAP, src), ["tenure_a", "tenure_b", "tenure_c"]);
        let src = "tenure_a(x); CALL(tenure_b, 1);\nchar q = '\"'; tenure_c ();";
        assert!(unprobed(MAP, src).is_empty());
        // a longer name does not stand for a shorter one
        assert_eq!(
            unprobed(MAP, "tenure_ab(); tenure_b(); tenure_c();"),
            ["tenure_a"]
        );
    }

    #[test]
    fn every_export_is_probed() {
        check().unwrap();
    }
}
