//! The C status enum is the core's error table: `tenure_status` (compiled
//! here from `src/status.rs`, which depends on nothing else in the crate)
//! and the `enum tenure_status` of `include/tenure.h` name exactly
//! `TENURE_OK = 0` and, for every `tenure::ErrorCode`, `TENURE_<NAME>` with
//! the core's number. A code added to the core without its C status fails
//! here.

#[allow(dead_code, non_camel_case_types)]
#[path = "../src/status.rs"]
mod status;

use std::collections::BTreeMap;

use status::{status_name, tenure_status};
use tenure::ErrorCode;

/// `TENURE_OK = 0` and `TENURE_<NAME> = <number>` for every core error code.
fn expected() -> BTreeMap<String, u32> {
    let mut want = BTreeMap::from([("TENURE_OK".to_string(), 0)]);
    for c in ErrorCode::ALL {
        let name = format!("TENURE_{}", c.name().to_ascii_uppercase());
        assert!(
            want.insert(name.clone(), c.as_u32()).is_none(),
            "{name} twice"
        );
    }
    want
}

/// The enumerators of `enum tenure_status { ... }` in the header text.
fn header_statuses(header: &str) -> BTreeMap<String, u32> {
    let start = header
        .find("enum tenure_status\n")
        .expect("the header declares enum tenure_status");
    let body = &header[start..];
    let open = body.find('{').expect("enum body") + 1;
    let close = body.find("};").expect("end of the enum body");
    let mut got = BTreeMap::new();
    for line in body[open..close].lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("/*") || line.starts_with('*') {
            continue;
        }
        let (name, number) = line
            .trim_end_matches(',')
            .split_once(" = ")
            .unwrap_or_else(|| panic!("unexpected line in enum tenure_status: {line:?}"));
        let number = number
            .parse()
            .unwrap_or_else(|_| panic!("{name}: not a number: {number:?}"));
        assert!(
            got.insert(name.to_string(), number).is_none(),
            "{name} twice"
        );
    }
    got
}

#[test]
fn the_rust_status_enum_is_the_core_error_table() {
    let got: BTreeMap<String, u32> = tenure_status::ALL
        .iter()
        .map(|(s, name, _)| (name.to_string(), *s as u32))
        .collect();
    assert_eq!(got.len(), tenure_status::ALL.len(), "a status name twice");
    assert_eq!(got, expected());
    for (s, _, snake) in tenure_status::ALL {
        let core = ErrorCode::ALL.into_iter().find(|c| c.as_u32() == *s as u32);
        let want = core.map_or("ok", |c| c.name());
        assert_eq!(snake.to_str().unwrap(), want, "{s:?}");
    }
}

#[test]
fn the_header_declares_exactly_the_core_error_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/tenure.h");
    let header = std::fs::read_to_string(path).expect("include/tenure.h");
    assert_eq!(header_statuses(&header), expected());
}

#[test]
fn the_header_parser_sees_a_missing_or_extra_status() {
    let header = "enum tenure_status\n#if x\n  : uint32_t\n#endif\n{\n  /**\n   * Success.\n   */\n  TENURE_OK = 0,\n  TENURE_BUSY = 18,\n};\n";
    let got = header_statuses(header);
    assert_eq!(
        got,
        BTreeMap::from([("TENURE_OK".into(), 0), ("TENURE_BUSY".into(), 18)])
    );
    assert_ne!(got, expected());
}

#[test]
fn core_errors_map_to_their_status_and_name() {
    for c in ErrorCode::ALL {
        assert_eq!(tenure_status::from_code(c) as u32, c.as_u32(), "{c:?}");
    }
    let name = |n| status_name(n).to_str().unwrap();
    for c in ErrorCode::ALL {
        assert_eq!(name(c.as_u32()), c.name());
    }
    assert_eq!(name(0), "ok");
    let past = ErrorCode::ALL.iter().map(|c| c.as_u32()).max().unwrap_or(0) + 1;
    assert_eq!(name(past), "unknown");
    assert_eq!(name(u32::MAX), "unknown");
}
