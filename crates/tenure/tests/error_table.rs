//! The error table is written once, in the core (`ErrorCode::ALL`, numbers
//! and names); every other surface must agree with it. This test reads the
//! projections' source files and fails when one of them drifts: a code
//! added to the core without its C status, its C++ exception class and its
//! Python exception class (stub and exports) fails here.
//!
//! - C header `include/tenure.h`: `TENURE_<NAME> = <number>` for every code.
//! - C++ `cpp/include/tenure/tenure.hpp`: one
//!   `TENURE_HPP_ERROR_CLASS(<Class>, TENURE_<NAME>)` per code and one
//!   `case TENURE_<NAME>: throw <Class>(message);` in `throw_status`, and no
//!   other.
//! - Python: `bindings/python/src/errors.rs` makes the classes from
//!   `ErrorCode::ALL` with the naming rule below and documents every code;
//!   `python/tenure/_native.pyi` declares exactly those `TenureError`
//!   subclasses and lists them in `__all__`; `python/tenure/__init__.py`
//!   imports and exports each.
//!
//! The class naming rule, in one place ([`class_name`]): CamelCase of the
//! code's snake_case name; Python adds `Error` to `store` and `internal`
//! (`StoreError`, `InternalError`), which would read as nouns otherwise.

use std::collections::BTreeSet;
use std::path::PathBuf;
use tenure::ErrorCode;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Surface {
    Cpp,
    Python,
}

fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// The exception class of `code` on `surface`.
fn class_name(code: ErrorCode, surface: Surface) -> String {
    let camel = camel(code.name());
    match (surface, code) {
        (Surface::Python, ErrorCode::Store | ErrorCode::Internal) => format!("{camel}Error"),
        _ => camel,
    }
}

/// The C status constant of `code` (`TENURE_STALE_LEASE`).
fn status_constant(code: ErrorCode) -> String {
    format!("TENURE_{}", code.name().to_ascii_uppercase())
}

fn read(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn expected(surface: Surface) -> BTreeSet<String> {
    ErrorCode::ALL
        .iter()
        .map(|c| class_name(*c, surface))
        .collect()
}

#[test]
fn the_table_is_well_formed() {
    let numbers: Vec<u32> = ErrorCode::ALL.iter().map(|c| c.as_u32()).collect();
    let want: Vec<u32> = (1..=28).collect();
    assert_eq!(
        numbers, want,
        "codes are the assigned numbers in table order"
    );
    for surface in [Surface::Cpp, Surface::Python] {
        assert_eq!(
            expected(surface).len(),
            ErrorCode::ALL.len(),
            "class names are unique"
        );
    }
    assert_eq!(
        class_name(ErrorCode::StaleLease, Surface::Cpp),
        "StaleLease"
    );
    assert_eq!(class_name(ErrorCode::Store, Surface::Python), "StoreError");
    assert_eq!(class_name(ErrorCode::Store, Surface::Cpp), "Store");
}

#[test]
fn c_header_has_every_status_with_its_number() {
    let header = read("include/tenure.h");
    for code in ErrorCode::ALL {
        let line = format!("{} = {},", status_constant(code), code.as_u32());
        assert!(
            header.lines().any(|l| l.trim() == line),
            "include/tenure.h lacks `{line}` ({})",
            code.name()
        );
    }
}

/// `(Class, CONSTANT)` of every `TENURE_HPP_ERROR_CLASS(...)` use.
fn cpp_classes(hpp: &str) -> BTreeSet<(String, String)> {
    hpp.lines()
        .filter_map(|l| l.trim().strip_prefix("TENURE_HPP_ERROR_CLASS("))
        .filter_map(|rest| rest.strip_suffix(')'))
        .filter_map(|args| {
            let (class, constant) = args.split_once(',')?;
            Some((class.trim().to_string(), constant.trim().to_string()))
        })
        .collect()
}

/// `(CONSTANT, Class)` of every `case ...: throw ...(message);` of
/// `throw_status`.
fn cpp_switch(hpp: &str) -> BTreeSet<(String, String)> {
    let start = hpp
        .find("void throw_status(")
        .expect("tenure.hpp has no throw_status");
    let body = &hpp[start..];
    let end = body
        .find("default:")
        .expect("throw_status has no default case");
    body[..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("case "))
        .map(|rest| {
            let (constant, action) = rest
                .split_once(':')
                .unwrap_or_else(|| panic!("unexpected case line `{rest}`"));
            let class = action
                .trim()
                .strip_prefix("throw ")
                .and_then(|t| t.strip_suffix("(message);"))
                .unwrap_or_else(|| panic!("case {constant} does not throw a class: `{action}`"));
            (constant.trim().to_string(), class.trim().to_string())
        })
        .collect()
}

#[test]
fn cpp_header_throws_one_class_per_code() {
    let hpp = read("cpp/include/tenure/tenure.hpp");
    let want: BTreeSet<(String, String)> = ErrorCode::ALL
        .iter()
        .map(|c| (class_name(*c, Surface::Cpp), status_constant(*c)))
        .collect();
    assert_eq!(
        cpp_classes(&hpp),
        want,
        "tenure.hpp: the TENURE_HPP_ERROR_CLASS list differs from ErrorCode::ALL"
    );
    let want_cases: BTreeSet<(String, String)> = want.into_iter().map(|(k, c)| (c, k)).collect();
    assert_eq!(
        cpp_switch(&hpp),
        want_cases,
        "tenure.hpp: the throw_status switch differs from ErrorCode::ALL"
    );
}

#[test]
fn python_binding_makes_and_documents_every_class() {
    let errors = read("bindings/python/src/errors.rs");
    assert!(
        errors.contains("for code in ErrorCode::ALL"),
        "errors.rs must make one class per ErrorCode::ALL entry"
    );
    assert!(
        errors.contains("ErrorCode::Store | ErrorCode::Internal => format!(\"{camel}Error\")"),
        "errors.rs must name classes by the rule of this test (store/internal get `Error`)"
    );
    let start = errors
        .find("fn doc(code: ErrorCode)")
        .expect("errors.rs has no fn doc(code: ErrorCode)");
    let doc = &errors[start..];
    let doc = &doc[..doc.find("\n}\n").expect("fn doc is not closed")];
    for code in ErrorCode::ALL {
        let arm = format!("ErrorCode::{code:?} =>");
        assert!(
            doc.contains(&arm),
            "errors.rs: fn doc has no `{arm}` arm ({})",
            code.name()
        );
    }
}

/// Names of the classes the stub declares as `TenureError` subclasses.
fn stub_error_classes(pyi: &str) -> BTreeSet<String> {
    pyi.lines()
        .filter_map(|l| l.strip_prefix("class "))
        .filter_map(|rest| {
            let (name, bases) = rest.split_once('(')?;
            let bases = bases.split_once(')')?.0;
            bases
                .split(',')
                .any(|b| b.trim() == "TenureError")
                .then(|| name.trim().to_string())
        })
        .collect()
}

/// The strings of a `__all__ = [...]` list.
fn all_list(text: &str) -> BTreeSet<String> {
    let start = text.find("__all__ = [").expect("no __all__");
    let body = &text[start + "__all__ = [".len()..];
    let body = &body[..body.find(']').expect("__all__ is not closed")];
    body.split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The names of `from tenure._native import (...)`.
fn imports(init: &str) -> BTreeSet<String> {
    let start = init
        .find("from tenure._native import (")
        .expect("__init__.py does not import from tenure._native");
    let body = &init[start + "from tenure._native import (".len()..];
    let body = &body[..body.find(')').expect("import list is not closed")];
    body.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn python_stub_declares_and_package_exports_every_class() {
    let want = expected(Surface::Python);
    let pyi = read("python/tenure/_native.pyi");
    assert_eq!(
        stub_error_classes(&pyi),
        want,
        "_native.pyi: the TenureError subclasses differ from ErrorCode::ALL"
    );
    let stub_all = all_list(&pyi);
    let init = read("python/tenure/__init__.py");
    let imported = imports(&init);
    let exported = all_list(&init);
    for name in want
        .iter()
        .chain(std::iter::once(&"TenureError".to_string()))
    {
        assert!(stub_all.contains(name), "_native.pyi __all__ lacks {name}");
        assert!(
            imported.contains(name),
            "__init__.py does not import {name}"
        );
        assert!(exported.contains(name), "__init__.py __all__ lacks {name}");
    }
}
