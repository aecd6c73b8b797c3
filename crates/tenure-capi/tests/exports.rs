//! Every function `include/tenure.h` declares is defined in
//! `crates/tenure-capi/src` through `export!`, as an item `fn tenure_name(`
//! of an `export! { ... }` invocation, exactly once; nothing outside the
//! definition of the macro is `#[no_mangle]` or `#[export_name]`, and no
//! other `fn tenure_*` exists. So `grep -rn "fn tenure_name("
//! crates/tenure-capi/src` finds each symbol's one definition.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
const HEADER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/tenure.h");

/// `text` with comments removed and the contents of string and character
/// literals blanked (so braces and names in them count for nothing), in
/// the syntax of Rust (`rust`) or C. Lengths and newlines are kept.
fn code_only(text: &str, rust: bool) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && next == Some(b'*') {
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                out.push(blank(b[i]));
                i += 1;
            }
            out.extend_from_slice(b"  ");
            i += 2;
        } else if c == b'"' {
            out.push(b'"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                for k in 0..n {
                    if let Some(&x) = b.get(i + k) {
                        out.push(blank(x));
                    }
                }
                i += n;
            }
            out.push(b'"');
            i += 1;
        } else if c == b'\'' && (!rust || is_char_literal(&b[i..])) {
            out.push(b'\'');
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                out.extend(std::iter::repeat_n(b' ', n));
                i += n;
            }
            out.push(b'\'');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).expect("ASCII replacements keep UTF-8")
}

/// Whether a `'` at the start of `b` opens a Rust character literal (and
/// not a lifetime such as `'a` or `'_`).
fn is_char_literal(b: &[u8]) -> bool {
    match b.get(1) {
        Some(b'\\') => true,
        Some(_) => {
            // One character (possibly multi-byte UTF-8), then the closing quote.
            let rest = &b[1..];
            let len = std::str::from_utf8(&rest[..rest.len().min(4)])
                .ok()
                .or_else(|| std::str::from_utf8(&rest[..1]).ok())
                .and_then(|s| s.chars().next())
                .map_or(1, char::len_utf8);
            rest.get(len) == Some(&b'\'')
        }
        None => false,
    }
}

/// The `tenure_*` identifiers directly followed by `(` in `code`.
fn called_names(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("tenure_") {
        let before = rest[..i].chars().next_back();
        let tail = &rest[i..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let word_start = before.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        if word_start && tail[len..].starts_with('(') {
            out.push(tail[..len].to_string());
        }
        rest = &tail[len..];
    }
    out
}

/// The functions a C header declares.
fn header_functions(header: &str) -> BTreeSet<String> {
    let code = code_only(header, false);
    let decls: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    called_names(&decls).into_iter().collect()
}

/// The byte range of the `{ ... }` group that opens at `open` in `code`.
fn group(code: &str, open: usize) -> std::ops::Range<usize> {
    let mut depth = 0usize;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open..open + i + 1;
                }
            }
            _ => {}
        }
    }
    panic!("an unclosed brace at byte {open}");
}

/// What one source file defines: the names of the `fn tenure_*(` items of
/// its `export!` invocations, and each `fn tenure_*`, `#[no_mangle]` or
/// `#[export_name` outside them and outside the macro's definition.
fn scan(code: &str) -> (Vec<String>, Vec<String>) {
    let mut inside = Vec::new();
    let mut spans = Vec::new();
    for (start, marker) in code
        .match_indices("export! {")
        .chain(code.match_indices("macro_rules! export {"))
    {
        let span = group(code, start + marker.len() - 1);
        if marker == "export! {" {
            inside.extend(
                called_names(&code[span.clone()])
                    .into_iter()
                    .filter(|n| code[span.clone()].contains(&format!("fn {n}("))),
            );
        }
        spans.push(start..span.end);
    }
    let mut outside = String::with_capacity(code.len());
    let mut at = 0;
    spans.sort_by_key(|r| r.start);
    for s in &spans {
        if s.start >= at {
            outside.push_str(&code[at..s.start]);
            at = s.end;
        }
    }
    outside.push_str(&code[at..]);
    let mut stray = Vec::new();
    for bad in ["#[no_mangle]", "#[export_name", "fn tenure_"] {
        for (i, _) in outside.match_indices(bad) {
            let line = &outside[i..];
            stray.push(line[..line.find('\n').unwrap_or(line.len())].to_string());
        }
    }
    (inside, stray)
}

#[test]
fn every_header_function_is_defined_through_export() {
    let header = fs::read_to_string(HEADER).expect("include/tenure.h");
    let declared = header_functions(&header);
    assert!(
        declared.len() > 100,
        "only {} functions found in the header",
        declared.len()
    );
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stray = Vec::new();
    let mut files: Vec<_> = fs::read_dir(SRC)
        .expect("src")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let code = code_only(&fs::read_to_string(path).expect("source"), true);
        let (inside, outside) = scan(&code);
        for name in inside {
            defined.entry(name).or_default().push(file.clone());
        }
        stray.extend(outside.into_iter().map(|l| format!("{file}: {l}")));
    }
    assert!(
        stray.is_empty(),
        "defined outside export!: {stray:#?} (write each export as an item of `export! {{ ... }}`)"
    );
    let twice: Vec<_> = defined.iter().filter(|(_, f)| f.len() > 1).collect();
    assert!(twice.is_empty(), "defined more than once: {twice:?}");
    let names: BTreeSet<String> = defined.into_keys().collect();
    let missing: Vec<_> = declared.difference(&names).collect();
    assert!(
        missing.is_empty(),
        "declared in include/tenure.h but not defined through export!: {missing:?}"
    );
    let undeclared: Vec<_> = names.difference(&declared).collect();
    assert!(
        undeclared.is_empty(),
        "defined through export! but not in include/tenure.h (regenerate it with \
         `cargo xtask abi-check --bless`): {undeclared:?}"
    );
}

#[test]
fn the_scanner_sees_exports_and_strays() {
    let src = r#"
macro_rules! export { () => { #[no_mangle] pub unsafe extern "C" fn $name() {} }; }
export! {
    /// Doc naming tenure_in_doc() and a brace {.
    fn tenure_a(p: *const c_char) -> out: *mut u64 = call(p, "}")?;
    fn tenure_b(x: u32) -> tenure_status {
        let c = '{';
        tenure_helper(x)
    }
}
// fn tenure_in_comment() {}
#[no_mangle]
pub extern "C" fn tenure_c() {}
fn tenure_d<'a>(s: &'a str) {}
"#;
    let (inside, stray) = scan(&code_only(src, true));
    assert_eq!(inside, ["tenure_a", "tenure_b"]);
    assert_eq!(
        stray,
        [
            "#[no_mangle]",
            "fn tenure_c() {}",
            "fn tenure_d<'a>(s: &'a str) {}"
        ]
    );
    let header = "/* tenure_x(void); */\n#define TENURE_ABI_MINOR 2\n\
                  typedef int32_t (*tenure_export_sink)(const char *line);\n\
                  tenure_status tenure_y(const struct tenure_z *z,\n    size_t n);\n";
    assert_eq!(
        header_functions(header),
        BTreeSet::from(["tenure_y".to_string()])
    );
    assert!(Path::new(HEADER).exists());
}
