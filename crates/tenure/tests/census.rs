//! Bad input census, Rust API: one test per bad input class that the other
//! core suites do not already pin down (the "Bad input census" of docs/reliability.md
//! names every test). Every assertion is on the stable `ErrorCode`, and
//! every failed call must leave the store unchanged (the event log does not
//! grow).
//!
//! The read-only store is tested for real even as root (file modes do not
//! stop root): a child copy of this test binary runs in a private mount
//! namespace (`unshare -m`, or `unshare -Urm` when not root) where the
//! store's directory is bind-mounted read-only.

use std::path::{Path, PathBuf};
use std::time::Duration;
use tenure::{Authority, ErrorCode, Fact, JobSpec, Options, Ttl};

fn store() -> (tempfile::TempDir, PathBuf, Authority) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("census.db");
    let a = Authority::open(&path, &Options::new()).unwrap();
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("j", b"x".to_vec())).unwrap();
    (dir, path, a)
}

fn code<T>(r: tenure::Result<T>) -> ErrorCode {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.code(),
    }
}

fn events(a: &Authority) -> usize {
    a.events(0, 100_000).unwrap().len()
}

fn ttl() -> Ttl {
    Ttl::from_micros(60_000_000).unwrap()
}

#[test]
fn census_empty_strings_are_invalid_argument() {
    let (_d, _p, a) = store();
    let before = events(&a);
    assert_eq!(code(a.create_production("")), ErrorCode::InvalidArgument);
    assert_eq!(
        code(a.submit("p", &JobSpec::new("", Vec::new()))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.claim("p", "", "w", ttl())),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.claim("p", "j", "", ttl())),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.claim_next("", "w", ttl())),
        ErrorCode::InvalidArgument
    );
    let l = a.claim("p", "j", "w", ttl()).unwrap();
    let before_ops = events(&a);
    assert_eq!(
        code(l.complete(&[Fact::new("", "v")])),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(a.import_lease("")), ErrorCode::TokenMalformed);
    assert_eq!(events(&a), before_ops);
    assert_eq!(before_ops, before + 1, "only the claim was recorded");
    assert_eq!(
        code(Authority::open("", &Options::new())),
        ErrorCode::InvalidArgument
    );
    // An empty failure reason is valid (the reason is optional detail).
    l.fail("", false).unwrap();
}

#[test]
fn census_oversize_strings_are_invalid_argument() {
    let (_d, _p, a) = store();
    let id = "x".repeat(tenure::validate::MAX_ID_LEN + 1);
    let holder = "h".repeat(tenure::validate::MAX_HOLDER_LEN + 1);
    assert_eq!(code(a.create_production(&id)), ErrorCode::InvalidArgument);
    assert_eq!(
        code(a.submit("p", &JobSpec::new(id.clone(), Vec::new()))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.submit(
            "p",
            &JobSpec::new("big", vec![0u8; tenure::validate::MAX_PAYLOAD_LEN + 1])
        )),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.claim("p", &id, "w", ttl())),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.claim("p", "j", &holder, ttl())),
        ErrorCode::InvalidArgument
    );
    let l = a.claim("p", "j", "w", ttl()).unwrap();
    let before = events(&a);
    let reason = "r".repeat(tenure::validate::MAX_REASON_LEN + 1);
    assert_eq!(code(l.fail(&reason, false)), ErrorCode::InvalidArgument);
    let value = "v".repeat(tenure::validate::MAX_FACT_VALUE_LEN + 1);
    assert_eq!(
        code(l.complete(&[Fact::new("k", value)])),
        ErrorCode::InvalidArgument
    );
    let many: Vec<Fact> = (0..=tenure::validate::MAX_FACTS)
        .map(|i| Fact::new(format!("k{i}"), "v"))
        .collect();
    assert_eq!(code(l.complete(&many)), ErrorCode::InvalidArgument);
    assert_eq!(events(&a), before);
    // the lease is still usable: nothing above touched it
    l.complete(&[]).unwrap();
}

#[test]
fn census_durations_out_of_range_are_invalid_duration() {
    for us in [0, -1, i64::MIN, Ttl::MAX_MICROS + 1, i64::MAX] {
        assert_eq!(
            code(Ttl::from_micros(us)),
            ErrorCode::InvalidDuration,
            "{us}"
        );
    }
    assert!(Ttl::from_micros(Ttl::MAX_MICROS).is_ok());
    assert!(Ttl::from_micros(1).is_ok());
    for d in [
        Duration::ZERO,
        Duration::from_micros(Ttl::MAX_MICROS as u64 + 1),
        Duration::MAX,
    ] {
        assert_eq!(code(Ttl::try_from(d)), ErrorCode::InvalidDuration, "{d:?}");
    }
    for s in [
        "0s",
        "-5s",
        "25h",
        "86400001ms",
        "99999999999999999999h",
        "",
        "abc",
    ] {
        let r = s.parse::<Ttl>();
        assert!(r.is_err(), "{s:?} parsed");
        assert_eq!(code(r), ErrorCode::InvalidDuration, "{s:?}");
    }
}

#[test]
fn census_tokens_malformed_truncated_oversize_foreign() {
    let (_d, _p, a) = store();
    let l = a.claim("p", "j", "w", ttl()).unwrap();
    let text = l.export_token().unwrap().expose().to_string();
    let before = events(&a);
    for cut in [
        0,
        1,
        tenure::TOKEN_PREFIX.len(),
        text.len() / 2,
        text.len() - 1,
    ] {
        let c = code(a.import_lease(&text[..cut]));
        assert!(
            c == ErrorCode::TokenMalformed || c == ErrorCode::TokenUnsupportedVersion,
            "cut at {cut}: {c:?}"
        );
    }
    assert_eq!(code(a.import_lease("garbage")), ErrorCode::TokenMalformed);
    assert_eq!(
        code(a.import_lease(&format!("{text}AAAA"))),
        ErrorCode::TokenMalformed
    );
    let big = "A".repeat(tenure::MAX_TOKEN_LEN + 1);
    assert_eq!(code(a.import_lease(&big)), ErrorCode::TokenTooLarge);
    let long_valid = format!("{text}{}", "A".repeat(tenure::MAX_TOKEN_LEN));
    assert_eq!(code(a.import_lease(&long_valid)), ErrorCode::TokenTooLarge);
    let body = text.split_once('.').unwrap().1;
    let foreign = format!("{}99.{body}", tenure::TOKEN_PREFIX);
    assert_eq!(
        code(a.import_lease(&foreign)),
        ErrorCode::TokenUnsupportedVersion
    );
    assert_eq!(events(&a), before);
    // the original still works
    a.import_lease(&text).unwrap().renew(ttl()).unwrap();
}

/// A message shows a huge store path or address as a bounded prefix and
/// its length, never whole.
fn assert_bounded(message: &str, input: &str) {
    assert!(message.len() < 1024, "{} bytes", message.len());
    assert!(
        message.contains(&format!("… ({} bytes)", input.len())),
        "{message}"
    );
    assert!(message.contains(&input[..150]), "{message}");
}

#[test]
fn census_overlong_store_path_is_a_short_store_error() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("a".repeat(1 << 20));
    let e = Authority::open(&long, &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store);
    assert_bounded(&e.to_string(), long.to_str().unwrap());
    let deep = dir.path().join("d/".repeat(1 << 19));
    let e = Authority::open(&deep, &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store);
    assert_bounded(&e.to_string(), deep.to_str().unwrap());
}

#[test]
fn census_overlong_server_address_is_a_short_invalid_argument() {
    // Refused while parsing, before any connection is attempted.
    let url = format!("postgres://u:pw@h/db?x={}", "y".repeat(1 << 20));
    let e = Authority::open(url.as_str(), &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    let m = e.to_string();
    assert!(m.len() < 1024, "{} bytes", m.len());
    assert!(m.contains("postgres://u:***@h/db?x=yyy"), "{m}");
    assert!(!m.contains("pw"), "{m}");
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn sha_like(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// A store on a read-only mount: opening works or fails with `Store`, and
/// every write is `Store`; the file is unchanged afterwards.
#[test]
fn census_read_only_store_is_a_store_error() {
    let (dir, path, a) = store();
    drop(a);
    {
        // fold the WAL into the main file so the bytes compare cleanly
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    }
    let before = sha_like(&path);
    let exe = std::env::current_exe().unwrap();
    let script = r#"mount --bind "$DIR" "$DIR" && mount -o remount,bind,ro "$DIR" "$DIR" || exit 97
exec "$EXE" --exact census_read_only_child --ignored --nocapture --test-threads=1"#;
    let flags: &[&str] = if is_root() {
        &["-m", "-Urm"]
    } else {
        &["-Urm"]
    };
    let mut attempts = Vec::new();
    let mut done = None;
    for f in flags {
        let out = std::process::Command::new("unshare")
            .args([f, "sh", "-c", script])
            .env("DIR", dir.path())
            .env("EXE", &exe)
            .env("TENURE_CENSUS_RO_DB", &path)
            .output()
            .expect("run unshare");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        if out.status.code() == Some(97) || err.starts_with("unshare:") {
            attempts.push(format!("unshare {f}: {err}"));
            continue;
        }
        done = Some(out);
        break;
    }
    let out = done.unwrap_or_else(|| {
        panic!("this test needs a private read-only bind mount (`unshare -m` as root or `unshare -Urm`): {attempts:?}")
    });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("READ-ONLY checked"), "{text}");
    assert_eq!(sha_like(&path), before, "the read-only store changed");
    // and it is still a good store
    let a = Authority::open(&path, &Options::new()).unwrap();
    assert!(a.check().unwrap().ok());
}

#[test]
#[ignore = "child-process entry point of census_read_only_store_is_a_store_error"]
fn census_read_only_child() {
    let path = std::env::var("TENURE_CENSUS_RO_DB").expect("run by the parent test");
    // the mount really is read-only, even for root
    let probe = Path::new(&path).with_file_name("probe");
    assert!(std::fs::write(&probe, b"x").is_err(), "mount is writable");
    match Authority::open(&path, &Options::new()) {
        Err(e) => assert_eq!(e.code(), ErrorCode::Store, "{e}"),
        Ok(a) => {
            assert_eq!(code(a.create_production("x")), ErrorCode::Store);
            assert_eq!(
                code(a.submit("p", &JobSpec::new("k", Vec::new()))),
                ErrorCode::Store
            );
            assert_eq!(code(a.claim_next("p", "w2", ttl())), ErrorCode::Store);
        }
    }
    println!("READ-ONLY checked");
}
