//! Bad input census, CLI: the bad input classes that `cli.rs` does not
//! already pin down, each with its documented exit status (`src/exit.rs`:
//! 2 usage, 10 + N for tenure error number N). The "Bad-input census" of
//! docs/reliability.md names every test.
//!
//! The read-only store and the full disk use a private mount namespace
//! (`unshare -m` as root, else `unshare -Urm`): a read-only bind of the
//! store's directory (file modes do not stop root), and a 1 MiB tmpfs.

mod common;

use common::*;
use std::os::unix::ffi::OsStrExt;
use tenure::ErrorCode;

#[test]
fn census_invalid_utf8_arguments_are_refused() {
    let s = Store::with_jobs(&["j"]);
    let bad = std::ffi::OsStr::from_bytes(b"p\xc3\x28x");
    for args in [
        vec!["production".into(), "create".into(), bad.to_owned()],
        vec![
            "job".into(),
            "show".into(),
            "-p".into(),
            bad.to_owned(),
            "j".into(),
        ],
    ] {
        let mut c = s.cmd(&[]);
        c.args(&args);
        // clap refuses non-UTF-8 text arguments before anything runs.
        let err = run_cmd(c, b"").fails(USAGE);
        assert!(err.contains("invalid UTF-8"), "{args:?}: {err}");
    }
    // A store *path* is an OS path (bytes on Unix), not text: a non-UTF-8
    // path is accepted and used as given.
    let mut c = std::process::Command::new(BIN);
    let mut p = s.dir.path().as_os_str().as_bytes().to_vec();
    p.extend_from_slice(b"/\xff\xfe.db");
    c.env_remove("TENURE_DB")
        .arg("--db")
        .arg(std::ffi::OsStr::from_bytes(&p))
        .arg("init");
    let out = run_cmd(c, b"");
    assert_eq!(out.code(), 0, "{}", out.stderr());
    assert!(std::path::Path::new(std::ffi::OsStr::from_bytes(&p)).exists());
}

#[test]
fn census_empty_and_oversize_ids_are_invalid_argument() {
    let s = Store::with_jobs(&["j"]);
    let long = "x".repeat(129);
    let long_holder = "h".repeat(257);
    let tok = s.path("never.token");
    for args in [
        vec!["production", "create", ""],
        vec!["production", "create", long.as_str()],
        vec!["job", "submit", "-p", "p", ""],
        vec!["job", "submit", "-p", "p", long.as_str()],
        vec!["job", "show", "-p", "p", ""],
    ] {
        s.run(&args).fails(code(ErrorCode::InvalidArgument));
    }
    for holder in ["", long_holder.as_str()] {
        s.try_claim(&["--job", "j", "--holder", holder, "--ttl", "5m"], &tok)
            .fails(code(ErrorCode::InvalidArgument));
        assert!(!tok.exists(), "{holder:?}");
        s.run(&["work", "-p", "p", "--holder", holder, "--", "true"])
            .fails(code(ErrorCode::InvalidArgument));
    }
    // `work` refuses a malformed production before waiting on it.
    for prod in ["", long.as_str()] {
        s.run(&["work", "-p", prod, "--", "true"])
            .fails(code(ErrorCode::InvalidArgument));
    }
    // An oversize payload (1 MiB + 1 from stdin).
    s.run_in(
        &["job", "submit", "-p", "p", "big"],
        &vec![b'x'; (1 << 20) + 1],
    )
    .fails(code(ErrorCode::InvalidArgument));
    assert_eq!(s.job("j")["state"], "requested");
    s.run(&["job", "show", "-p", "p", "big"])
        .fails(code(ErrorCode::NotFound));
}

#[test]
fn census_durations_negative_zero_huge_are_invalid_duration() {
    let s = Store::with_jobs(&["j"]);
    let tok = s.path("never.token");
    for ttl in [
        "0s",
        "0ms",
        "-5s",
        "-1s",
        "-1",
        "25h",
        "86400001ms",
        "99999999999999999999h",
        "",
        "soon",
        "1500ns",
        "1h1h",
        "1s2s",
    ] {
        // A negative value is a duration to refuse, not an unknown flag.
        let with_eq = format!("--ttl={ttl}");
        for ttl_args in [&["--ttl", ttl][..], &[with_eq.as_str()][..]] {
            let mut args = vec!["--job", "j", "--holder", "h"];
            args.extend_from_slice(ttl_args);
            let out = s.try_claim(&args, &tok);
            let err = out.fails(code(ErrorCode::InvalidDuration));
            assert!(err.contains("invalid duration"), "{ttl:?}: {err}");
            assert!(err.contains("[invalid_duration]"), "{ttl:?}: {err}");
            assert!(!tok.exists());
        }
    }
    let good = s.claim("j", "5m");
    for ttl in ["0s", "-1s", "25h", "99999999999999999999h", "1m1m"] {
        s.renew(&good, ttl).fails(code(ErrorCode::InvalidDuration));
    }
    // Nanoseconds are fine when they make whole microseconds (as in C++).
    s.renew(&good, "600000000000ns").ok();
    assert_eq!(s.job("j")["state"], "claimed");
    // The executor's and the demo's --ttl follow the same rule, before anything runs.
    let out_dir = s.path("out");
    let err = s
        .run(&[
            "exec",
            "-p",
            "p",
            "--ttl",
            "-1s",
            "--out-dir",
            out_dir.to_str().unwrap(),
            "--",
            "true",
        ])
        .fails(code(ErrorCode::InvalidDuration));
    assert!(err.contains("invalid duration"), "{err}");
    // `work`: every duration option, before anything runs.
    for opt in [
        "--ttl",
        "--renew-every",
        "--wait-timeout",
        "--grace",
        "--until-idle",
    ] {
        for bad in ["0s", "-1s", "25h", "1500ns", "1h1h", "soon"] {
            let err = s
                .run(&["work", "-p", "p", opt, bad, "--", "true"])
                .fails(code(ErrorCode::InvalidDuration));
            assert!(err.contains("[invalid_duration]"), "{opt} {bad}: {err}");
        }
    }
    let err = s
        .run(&["--json", "demo", "--ttl", "-1s"])
        .fails(code(ErrorCode::InvalidDuration));
    let v: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(v["error"]["code"], "invalid_duration", "{err}");
    assert_eq!(s.job("j")["state"], "claimed");
}

#[test]
fn census_bad_tokens_exit_with_the_token_errors() {
    let s = Store::with_jobs(&["j"]);
    let good = s.claim("j", "5m");
    let text = std::fs::read_to_string(&good).unwrap();
    let text = text.trim();
    let body = text.split_once('.').unwrap().1;
    let cases: Vec<(String, &[ErrorCode])> = vec![
        ("garbage".into(), &[ErrorCode::TokenMalformed]),
        (
            text[..text.len() / 2].into(),
            &[
                ErrorCode::TokenMalformed,
                ErrorCode::TokenUnsupportedVersion,
            ],
        ),
        (text[..text.len() - 1].into(), &[ErrorCode::TokenMalformed]),
        (format!("{text}AAAA"), &[ErrorCode::TokenMalformed]),
        (
            "A".repeat(tenure::MAX_TOKEN_LEN + 1),
            &[ErrorCode::TokenTooLarge],
        ),
        (
            format!("{}42.{body}", tenure::TOKEN_PREFIX),
            &[ErrorCode::TokenUnsupportedVersion],
        ),
    ];
    for (i, (tok, want)) in cases.iter().enumerate() {
        let f = s.path(&format!("bad{i}.token"));
        std::fs::write(&f, tok).unwrap();
        for cmd in [
            &["renew", "--ttl", "5m"][..],
            &["complete"][..],
            &["release"][..],
        ] {
            let mut args: Vec<&str> = cmd.to_vec();
            args.extend(["--token-file", f.to_str().unwrap()]);
            let out = s.run(&args);
            assert!(
                want.iter().any(|c| code(*c) == out.code()),
                "case {i} {cmd:?}: exit {}: {}",
                out.code(),
                out.stderr()
            );
            assert!(!out.stderr().contains(body), "token text in stderr");
        }
    }
    // A token file that is not UTF-8 text is malformed, never a crash.
    let f = s.path("bin.token");
    std::fs::write(&f, b"tenure-lease-v1.\xff\xfe\xfd").unwrap();
    s.run(&["renew", "--ttl", "5m", "--token-file", f.to_str().unwrap()])
        .fails(code(ErrorCode::TokenMalformed));
    // Nothing above changed the lease.
    assert_eq!(s.job("j")["state"], "claimed");
    s.ok(&["complete", "--token-file", good.to_str().unwrap()]);
}

#[test]
fn census_corrupt_store_is_a_store_error() {
    let s = Store::with_jobs(&["j"]);
    s.ok(&["check"]);
    let mut bytes = std::fs::read(&s.db).unwrap();
    let n = bytes.len();
    for b in &mut bytes[100..n] {
        *b ^= 0x5A;
    }
    // drop the WAL so only the damaged file remains
    let _ = std::fs::remove_file(s.db.with_extension("db-wal"));
    let _ = std::fs::remove_file(s.db.with_extension("db-shm"));
    std::fs::write(&s.db, &bytes).unwrap();
    for args in [
        &["jobs", "-p", "p"][..],
        &["check"][..],
        &["production", "create", "q"][..],
    ] {
        s.run(args).fails(code(ErrorCode::Store));
    }
}

#[test]
fn census_read_only_store_is_a_store_error() {
    let s = Store::with_jobs(&["j"]);
    // Fold the WAL into the file, so a read-only open sees everything.
    rusqlite::Connection::open(&s.db)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let before = std::fs::read(&s.db).unwrap();
    let script = r#"mount --bind "$DIR" "$DIR" && mount -o remount,bind,ro "$DIR" "$DIR" || exit 97
touch "$DIR/probe" 2>/dev/null && exit 96
"$TENURE" --db "$DB" production create q; echo "create=$?"
"$TENURE" --db "$DB" job submit -p p k </dev/null; echo "submit=$?"
exit 0"#;
    let out = in_namespace(script, &[("DIR", s.dir.path()), ("DB", &s.db)]);
    assert_eq!(out.code(), 0, "{}", out.stderr());
    let text = out.stdout();
    let store = code(ErrorCode::Store);
    assert!(
        text.contains(&format!("create={store}")),
        "{text}\n{}",
        out.stderr()
    );
    assert!(
        text.contains(&format!("submit={store}")),
        "{text}\n{}",
        out.stderr()
    );
    assert_eq!(
        std::fs::read(&s.db).unwrap(),
        before,
        "read-only store changed"
    );
    s.ok(&["check"]);
    s.run(&["job", "show", "-p", "p", "k"])
        .fails(code(ErrorCode::NotFound));
}

#[test]
fn census_full_disk_is_a_store_error() {
    let s = Store::new();
    let mnt = s.path("mnt");
    std::fs::create_dir(&mnt).unwrap();
    // A 1 MiB tmpfs: the store fits, a 900 KiB payload does not (with the WAL).
    let script = r#"mount -t tmpfs -o size=1m tmpfs "$MNT" || exit 97
DB="$MNT/s.db"
"$TENURE" --db "$DB" production create p || exit 95
head -c 300000 /dev/zero | "$TENURE" --db "$DB" job submit -p p small || exit 94
i=0; rc=0
while [ $i -lt 8 ]; do
  head -c 900000 /dev/zero | "$TENURE" --db "$DB" job submit -p p "big$i"; rc=$?
  [ $rc -ne 0 ] && break
  i=$((i+1))
done
echo "submit=$rc"
"$TENURE" --db "$DB" check; echo "check=$?"
"$TENURE" --db "$DB" --json job show -p p small; echo "show=$?"
exit 0"#;
    let out = in_namespace(script, &[("MNT", &mnt)]);
    assert_eq!(out.code(), 0, "{}", out.stderr());
    let text = out.stdout();
    assert!(
        text.contains(&format!("submit={}", code(ErrorCode::Store))),
        "{text}\n{}",
        out.stderr()
    );
    assert!(text.contains("check=0"), "{text}\n{}", out.stderr());
    assert!(text.contains("show=0"), "{text}\n{}", out.stderr());
    assert!(text.contains("\"requested\""), "{text}");
}

#[test]
fn census_bad_request_ids_are_invalid_argument_and_claim_nothing() {
    let s = Store::with_jobs(&["j"]);
    let long = "r".repeat(129);
    let tok = s.path("never.token");
    for id in ["", " r", "a/b", long.as_str()] {
        s.try_claim(
            &[
                "--job",
                "j",
                "--holder",
                "w",
                "--ttl",
                "5m",
                "--request-id",
                id,
            ],
            &tok,
        )
        .fails(code(ErrorCode::InvalidArgument));
        assert!(!tok.exists(), "{id:?}");
    }
    s.try_claim(
        &[
            "--holder",
            "w",
            "--ttl",
            "5m",
            "--count",
            "2",
            "--request-id",
            "r",
        ],
        &tok,
    )
    .fails(2);
    assert_eq!(s.job("j")["attempts"], 0);
    // A claim under a request ID; another process reusing the ID has
    // another secret: conflict, nothing claimed, no token left.
    let first = s.path("first.token");
    s.try_claim(
        &[
            "--job",
            "j",
            "--holder",
            "w",
            "--ttl",
            "5m",
            "--request-id",
            "r-1",
        ],
        &first,
    )
    .ok();
    assert!(first.exists());
    let second = s.path("second.token");
    s.try_claim(
        &[
            "--job",
            "j",
            "--holder",
            "w",
            "--ttl",
            "5m",
            "--request-id",
            "r-1",
        ],
        &second,
    )
    .fails(code(ErrorCode::Conflict));
    assert!(!second.exists());
    assert_eq!(s.job("j")["attempts"], 1);
}
