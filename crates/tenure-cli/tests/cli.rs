//! End-to-end tests of the `tenure` commands: happy paths and error exits.

mod common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use tenure::ErrorCode;

#[test]
fn init_migrate_and_store_errors() {
    let s = Store::new();
    let v = s.json(&["init"]);
    assert_eq!(v["created"], true);
    assert_eq!(v["schema_version"], tenure::SCHEMA_VERSION);
    let v = s.json(&["init"]);
    assert_eq!(v["created"], false);
    let v = s.json(&["migrate"]);
    assert_eq!(v["from"], tenure::SCHEMA_VERSION);
    assert_eq!(v["to"], tenure::SCHEMA_VERSION);
    assert_eq!(v["migrated"], false);
    assert!(s.ok(&["migrate"]).contains("already current"));

    // No store given at all: usage error.
    let out = run_cmd(
        {
            let mut c = std::process::Command::new(BIN);
            c.env_remove("TENURE_DB").arg("jobs").args(["-p", "p"]);
            c
        },
        b"",
    );
    assert!(out.fails(USAGE).contains("--db"));
    // --db overrides the environment.
    let other = s.path("other.db");
    s.ok(&["--db", other.to_str().unwrap(), "init"]);
    assert!(other.exists());

    // migrate on a missing file does not create one.
    let missing = s.path("missing.db");
    s.run(&["--db", missing.to_str().unwrap(), "migrate"])
        .fails(code(ErrorCode::NotFound));
    assert!(!missing.exists());

    // A store written by a newer schema is refused, untouched.
    let newer = s.path("newer.db");
    s.ok(&["--db", newer.to_str().unwrap(), "init"]);
    let mut bytes = std::fs::read(&newer).unwrap();
    bytes[60..64].copy_from_slice(&(tenure::SCHEMA_VERSION + 7).to_be_bytes());
    std::fs::write(&newer, &bytes).unwrap();
    let err = s
        .run(&["--db", newer.to_str().unwrap(), "migrate"])
        .fails(code(ErrorCode::SchemaTooNew));
    assert!(err.contains("schema_too_new"), "{err}");
    assert_eq!(std::fs::read(&newer).unwrap(), bytes);

    // A foreign file is a store error.
    let foreign = s.path("foreign.db");
    std::fs::write(&foreign, vec![b'x'; 8192]).unwrap();
    s.run(&["--db", foreign.to_str().unwrap(), "init"])
        .fails(code(ErrorCode::Store));
}

#[test]
fn migrate_shows_from_and_to_versions() {
    let s = Store::new();
    {
        let c = rusqlite::Connection::open(&s.db).unwrap();
        c.execute_batch(include_str!("../../tenure/tests/fixtures/v1_pre_lease.sql"))
            .unwrap();
    }
    let v = s.json(&["migrate"]);
    assert_eq!(v["from"], 1);
    assert_eq!(v["to"], tenure::SCHEMA_VERSION);
    assert_eq!(v["migrated"], true);
    assert!(s.ok(&["migrate"]).contains("already current"));
    assert_eq!(s.json(&["check"])["ok"], true);
    let v = s.json(&["jobs", "-p", "legacy"]);
    assert!(!v["jobs"].as_array().unwrap().is_empty());
}

#[test]
fn productions_and_jobs() {
    let s = Store::new();
    let v = s.json(&["production", "create", "p"]);
    assert_eq!(v["created"], true);
    assert!(s
        .ok(&["production", "create", "p"])
        .contains("already exists"));
    s.ok(&["production", "create", "q"]);
    let v = s.json(&["production", "list"]);
    let names: Vec<&str> = v["productions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p", "q"]);
    assert!(v["productions"][0]["cancelled_us"].is_null());
    s.run(&["production", "create", "bad/name"])
        .fails(code(ErrorCode::InvalidArgument));

    // Payload from a file, from stdin, priority and attempts.
    let pf = s.path("payload.bin");
    std::fs::write(&pf, b"\x00binary\xff").unwrap();
    let v = s.json(&[
        "job",
        "submit",
        "-p",
        "p",
        "a",
        "--payload-file",
        pf.to_str().unwrap(),
        "--max-attempts",
        "5",
        "--priority",
        "-3",
    ]);
    assert_eq!(v["result"], "created");
    s.run_in(&["job", "submit", "-p", "p", "b"], b"from stdin")
        .ok();
    // Same content again is idempotent; different content conflicts.
    let again = s.run_in(&["--json", "job", "submit", "-p", "p", "b"], b"from stdin");
    assert_eq!(again.json()["result"], "existing");
    s.run_in(&["job", "submit", "-p", "p", "b"], b"other")
        .fails(code(ErrorCode::Conflict));
    s.run_in(&["job", "submit", "-p", "nope", "c"], b"")
        .fails(code(ErrorCode::NotFound));
    s.run(&["job", "submit", "-p", "p", "c", "--max-attempts", "0"])
        .fails(code(ErrorCode::InvalidArgument));
    s.run(&["job", "submit", "-p", "p"]).fails(USAGE);
    s.run(&[
        "job",
        "submit",
        "-p",
        "p",
        "c",
        "--payload-file",
        "/nonexistent/x",
    ])
    .fails(1);

    let v = s.job("a");
    for k in [
        "production",
        "job",
        "state",
        "attempts",
        "max_attempts",
        "priority",
        "holder",
        "claim_id",
        "expires_us",
        "created_us",
        "updated_us",
        "payload_len",
        "last_error",
    ] {
        assert!(v.get(k).is_some(), "field {k} in {v}");
    }
    assert_eq!(v["state"], "requested");
    assert_eq!(v["max_attempts"], 5);
    assert_eq!(v["priority"], -3);
    assert_eq!(v["payload_len"], 8);
    let raw = s.run(&["job", "show", "-p", "p", "a", "--payload"]);
    assert_eq!(raw.0.stdout, b"\x00binary\xff");
    assert!(s.ok(&["job", "show", "-p", "p", "b"]).contains("requested"));
    s.run(&["job", "show", "-p", "p", "zz"])
        .fails(code(ErrorCode::NotFound));

    // Many in one edit; a bad line submits nothing.
    let jl = s.path("jobs.jsonl");
    std::fs::write(
        &jl,
        "{\"job\":\"m1\",\"payload\":\"x\"}\n\n{\"job\":\"m2\",\"priority\":9,\"max_attempts\":1}\n",
    )
    .unwrap();
    let v = s.json(&["job", "submit", "-p", "p", "--jsonl", jl.to_str().unwrap()]);
    assert_eq!(v["submitted"].as_array().unwrap().len(), 2);
    assert_eq!(v["submitted"][1]["result"], "created");
    let bad = s.path("bad.jsonl");
    std::fs::write(&bad, "{\"job\":\"m3\"}\n{\"job\":\"m4\",\"color\":1}\n").unwrap();
    s.run(&["job", "submit", "-p", "p", "--jsonl", bad.to_str().unwrap()])
        .fails(code(ErrorCode::InvalidArgument));
    std::fs::write(
        &bad,
        "{\"job\":\"m3\"}\n{\"job\":\"a\",\"payload\":\"other\"}\n",
    )
    .unwrap();
    s.run(&["job", "submit", "-p", "p", "--jsonl", bad.to_str().unwrap()])
        .fails(code(ErrorCode::Conflict));
    s.run(&["job", "show", "-p", "p", "m3"])
        .fails(code(ErrorCode::NotFound));

    // Listing, filtering, paging.
    let v = s.json(&["jobs", "-p", "p"]);
    let ids: Vec<&str> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "m1", "m2"]);
    assert!(v["next_after"].is_null());
    let v = s.json(&["jobs", "-p", "p", "--limit", "3"]);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 3);
    assert_eq!(v["next_after"], "m1");
    let v = s.json(&["jobs", "-p", "p", "--limit", "3", "--after", "m1"]);
    assert_eq!(v["jobs"][0]["job"], "m2");
    assert!(v["next_after"].is_null());
    let table = s.ok(&["jobs", "-p", "p", "--limit", "3"]);
    assert!(table.starts_with("JOB"), "{table}");
    assert!(table.contains("--after m1"), "{table}");
    s.run(&["jobs", "-p", "p", "--state", "bogus"])
        .fails(code(ErrorCode::InvalidArgument));
    s.run(&["jobs", "-p", "nope"])
        .fails(code(ErrorCode::NotFound));

    // Cancel one job, then a production.
    let v = s.json(&["job", "cancel", "-p", "p", "m1"]);
    assert_eq!(v["result"], "cancelled");
    let v = s.json(&["job", "cancel", "-p", "p", "m1"]);
    assert_eq!(v["result"], "already_cancelled");
    let v = s.json(&["jobs", "-p", "p", "--state", "cancelled"]);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
    let v = s.json(&["production", "cancel", "p"]);
    assert_eq!(v["cancelled_jobs"], 3);
    s.run_in(&["job", "submit", "-p", "p", "late"], b"")
        .fails(code(ErrorCode::Cancelled));
    let v = s.json(&["production", "list"]);
    assert!(v["productions"][0]["cancelled_us"].is_i64());
}

#[test]
fn lease_commands_through_token_files() {
    let s = Store::with_jobs(&["j1", "j2", "j3"]);
    // Without --token-out nothing is claimed.
    s.run(&["claim", "-p", "p", "--holder", "h", "--ttl", "5m"])
        .fails(USAGE);
    assert_eq!(s.job("j1")["state"], "requested");
    // Bad durations are refused with the core's reason, before anything.
    for (ttl, why) in [
        ("1.5s", "fractions"),
        ("0s", "positive"),
        ("25h", "24 h"),
        ("10d", "unknown unit"),
    ] {
        let tok = s.path("never.token");
        let err = s
            .try_claim(&["--holder", "h", "--ttl", ttl], &tok)
            .fails(code(ErrorCode::InvalidDuration));
        assert!(err.contains(why), "{ttl}: {err}");
        assert!(!tok.exists());
    }

    // claim next (j1), 0600 token file, receipt without the token.
    let tok = s.path("j1.token");
    let out = s.try_claim(&["--json", "--holder", "worker 1", "--ttl", "5m"], &tok);
    let receipt = out.json();
    assert_eq!(receipt["job"], "j1");
    assert_eq!(receipt["holder"], "worker 1");
    assert_eq!(receipt["attempt"], 1);
    assert_eq!(receipt["token_written"], true);
    assert_eq!(mode(&tok), 0o600);
    let token = std::fs::read_to_string(&tok).unwrap();
    assert!(token.starts_with(tenure::TOKEN_PREFIX));
    assert!(!out.stdout().contains(token.trim()));
    let v = s.job("j1");
    assert_eq!(v["state"], "claimed");
    assert_eq!(v["claim_id"], receipt["claim_id"]);
    let before = v["expires_us"].as_i64().unwrap();

    // renew from a file and from stdin.
    let v = s.json(&[
        "renew",
        "--token-file",
        tok.to_str().unwrap(),
        "--ttl",
        "10m",
    ]);
    assert!(v["expires_us"].as_i64().unwrap() > before);
    let r = s.run_in(
        &["renew", "--token-file", "-", "--ttl", "20m"],
        token.as_bytes(),
    );
    r.ok();
    // Not extending is refused.
    s.renew(&tok, "1s").fails(code(ErrorCode::NotExtended));
    s.renew(&tok, "1.5s")
        .fails(code(ErrorCode::InvalidDuration));

    // release: job requested again, token now dead.
    let v = s.json(&["release", "--token-file", tok.to_str().unwrap()]);
    assert_eq!(v["state"], "requested");
    let err = s
        .run(&["release", "--token-file", tok.to_str().unwrap()])
        .fails(code(ErrorCode::LeaseClosed));
    assert!(!err.contains(token.trim()));

    // fail (retryable, then permanent), complete with facts.
    let t2 = s.claim("j2", "5m");
    let v = s.json(&[
        "fail",
        "--token-file",
        t2.to_str().unwrap(),
        "--reason",
        "disk on fire",
    ]);
    assert_eq!(v["state"], "requested");
    assert_eq!(s.job("j2")["last_error"], "disk on fire");
    let t2 = s.claim("j2", "5m");
    let v = s.json(&[
        "fail",
        "--token-file",
        t2.to_str().unwrap(),
        "--permanent",
        "--reason",
        "bad input",
    ]);
    assert_eq!(v["state"], "failed");
    s.try_claim(
        &["--job", "j2", "--holder", "h", "--ttl", "5m"],
        &s.path("j2-again.token"),
    )
    .fails(code(ErrorCode::NotClaimable));
    assert!(
        !s.path("j2-again.token").exists(),
        "failed claim removes its file"
    );

    let t3 = s.claim("j3", "5m");
    s.run(&[
        "complete",
        "--token-file",
        t3.to_str().unwrap(),
        "--fact",
        "novalue",
    ])
    .fails(USAGE);
    s.run(&[
        "complete",
        "--token-file",
        t3.to_str().unwrap(),
        "--fact",
        "tenure.x=1",
    ])
    .fails(code(ErrorCode::InvalidArgument));
    let v = s.json(&[
        "complete",
        "--token-file",
        t3.to_str().unwrap(),
        "--fact",
        "artifact=out.tar",
        "--fact",
        "lines=a=b",
    ]);
    assert_eq!(v["state"], "completed");
    s.run(&["complete", "--token-file", t3.to_str().unwrap()])
        .fails(code(ErrorCode::LeaseClosed));
    let facts = s.facts("j3");
    assert_eq!(facts["artifact"], "out.tar");
    assert_eq!(facts["lines"], "a=b");
    assert!(facts.contains_key("tenure.claim_id"));
    assert!(s.ok(&["facts", "-p", "p"]).contains("artifact"));

    // Bad token files: distinct errors.
    let bad = s.path("bad.token");
    std::fs::write(&bad, "hello").unwrap();
    s.run(&["release", "--token-file", bad.to_str().unwrap()])
        .fails(code(ErrorCode::TokenMalformed));
    std::fs::write(&bad, "tenure-lease-v9.AAAA").unwrap();
    s.run(&["release", "--token-file", bad.to_str().unwrap()])
        .fails(code(ErrorCode::TokenUnsupportedVersion));
    std::fs::write(&bad, "x".repeat(5000)).unwrap();
    s.run(&["release", "--token-file", bad.to_str().unwrap()])
        .fails(code(ErrorCode::TokenTooLarge));
    std::fs::write(&bad, b"\xff\xfe").unwrap();
    s.run(&["release", "--token-file", bad.to_str().unwrap()])
        .fails(code(ErrorCode::TokenMalformed));
    s.run(&["release", "--token-file", s.path("nope").to_str().unwrap()])
        .fails(1);
    // There is no option that takes a token value.
    s.run(&["release", "--token", token.trim()]).fails(USAGE);
    s.run(&["release", token.trim()]).fails(USAGE);
}

#[test]
fn expired_lease_is_refused() {
    let s = Store::with_jobs(&["j"]);
    let tok = s.claim("j", "200ms");
    wait_for("expiry", || s.job("j")["state"] == "expired");
    s.run(&["complete", "--token-file", tok.to_str().unwrap()])
        .fails(code(ErrorCode::LeaseExpired));
    s.renew(&tok, "5m").fails(code(ErrorCode::LeaseExpired));
    // Reclaimed: the old token is now stale.
    let _t2 = s.claim("j", "5m");
    s.run(&["complete", "--token-file", tok.to_str().unwrap()])
        .fails(code(ErrorCode::StaleLease));
    assert_eq!(s.job("j")["attempts"], 2);
}

#[test]
fn existing_token_file_is_never_overwritten_and_nothing_is_claimed() {
    let s = Store::with_jobs(&["j"]);
    let tok = s.path("taken.token");
    std::fs::write(&tok, "precious").unwrap();
    let err = s
        .try_claim(&["--holder", "h", "--ttl", "5m"], &tok)
        .fails(TOKEN_FILE_NOT_RESERVED);
    assert!(err.contains("nothing was claimed"), "{err}");
    assert_eq!(std::fs::read_to_string(&tok).unwrap(), "precious");
    // A dangling symlink is not followed either.
    let link = s.path("link.token");
    std::os::unix::fs::symlink(s.path("target.token"), &link).unwrap();
    s.try_claim(&["--holder", "h", "--ttl", "5m"], &link)
        .fails(TOKEN_FILE_NOT_RESERVED);
    assert!(!s.path("target.token").exists());
    let v = s.job("j");
    assert_eq!(v["state"], "requested");
    assert_eq!(v["attempts"], 0);
    let out = s.ok(&["--json", "events"]);
    assert!(!out.contains("\"claimed\""), "{out}");
}

/// A token that cannot be written (the file system is full): no file is
/// left, the claim stays committed, the receipt is on stderr, exit 4.
#[test]
fn token_write_failure_leaves_no_file_and_a_committed_claim() {
    let s = Store::with_jobs(&["j"]);
    let mnt = s.path("full");
    std::fs::create_dir(&mnt).unwrap();
    // A private mount namespace with a one-page tmpfs, filled up.
    let script = r#"
        mount -t tmpfs -o size=4k tenure-full "$MNT" || exit 97
        cat /dev/zero > "$MNT/filler" 2>/dev/null
        "$TENURE" claim -p p --job j --holder full-disk --ttl 5m --token-out "$MNT/tok"
        rc=$?
        if [ -e "$MNT/tok" ]; then echo "TOKEN FILE LEFT" >&2; exit 98; fi
        exit $rc
    "#;
    let out = in_namespace(script, &[("MNT", &mnt), ("TENURE_DB", &s.db)]);
    let err = out.stderr();
    assert_ne!(out.code(), 98, "{err}");
    assert_eq!(out.code(), TOKEN_NOT_DELIVERED, "{err}");
    let v = s.job("j");
    assert_eq!(v["state"], "claimed");
    assert_eq!(v["holder"], "full-disk");
    let claim_id = v["claim_id"].as_str().unwrap();
    assert!(err.contains("COMMITTED"), "{err}");
    assert!(err.contains(claim_id), "{err}");
    assert!(err.contains("full-disk"), "{err}");
    assert!(err.contains("production p"), "{err}");
    assert!(err.contains("job        j"), "{err}");
    assert!(err.contains("removed"), "{err}");
    assert!(!err.contains(tenure::TOKEN_PREFIX), "{err}");
    assert!(files_in(&mnt).is_empty());
    // Recovery is the coordinator's cancel (or expiry).
    s.ok(&["job", "cancel", "-p", "p", "j"]);
}

#[test]
fn events_clock_check_and_exit_codes() {
    let s = Store::with_jobs(&["j"]);
    let tok = s.claim("j", "5m");
    let token = std::fs::read_to_string(&tok).unwrap();
    s.ok(&["complete", "--token-file", tok.to_str().unwrap()]);
    let out = s.ok(&["--json", "events"]);
    let evs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = evs.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["production_created", "submitted", "claimed", "completed"]
    );
    for k in [
        "seq",
        "at_us",
        "production",
        "job",
        "kind",
        "state",
        "claim_id",
        "holder",
        "attempt",
        "expires_us",
        "detail",
    ] {
        assert!(evs[2].get(k).is_some(), "{k}");
    }
    let after = evs[1]["seq"].as_u64().unwrap().to_string();
    let out = s.ok(&["--json", "events", "--after", &after, "-p", "p"]);
    assert_eq!(out.lines().count(), 2);
    assert!(s.ok(&["events"]).contains("claimed"));
    assert!(!out.contains(token.trim()));

    let c = s.json(&["clock"]);
    assert_eq!(c["blocked"], false);
    assert!(c["now_us"].as_i64().unwrap() >= c["mark_us"].as_i64().unwrap());
    assert!(s.ok(&["clock"]).contains("high-water"));

    let r = s.json(&["check"]);
    assert_eq!(r["ok"], true);
    assert_eq!(r["violations"].as_array().unwrap().len(), 0);
    assert_eq!(r["jobs"], 1);
    assert!(s.ok(&["check"]).contains("no violations"));

    let v = s.json(&["exit-codes"]);
    let rows = v["exit_codes"].as_array().unwrap();
    for c in tenure::ErrorCode::ALL {
        assert!(
            rows.iter()
                .any(|r| r["name"] == c.name() && r["exit"] == code(c)),
            "{c:?}"
        );
    }
    let mut exits: Vec<i64> = rows.iter().map(|r| r["exit"].as_i64().unwrap()).collect();
    exits.sort();
    exits.dedup();
    assert_eq!(exits.len(), rows.len(), "exit codes are distinct");
    s.run(&["no-such-command"]).fails(USAGE);
}

#[test]
fn events_follow_prints_new_events() {
    let s = Store::with_jobs(&[]);
    let mut child = s
        .cmd(&["--json", "events", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["kind"], "production_created");
    s.run_in(&["job", "submit", "-p", "p", "late"], b"x").ok();
    let next: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(next["kind"], "submitted");
    assert_eq!(next["job"], "late");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn check_reports_violations_with_exit_3() {
    let s = Store::with_jobs(&["j", "k"]);
    let r = s.run(&["--json", "check"]);
    assert_eq!(r.code(), 0);
    assert_eq!(r.json()["ok"], true);
    // Damage the store behind tenure's back: drop one job's event history.
    {
        let c = rusqlite::Connection::open(&s.db).unwrap();
        let n = c.execute("DELETE FROM events WHERE job = 'k'", []).unwrap();
        assert!(n > 0);
    }
    let r = s.run(&["--json", "check"]);
    assert_eq!(r.code(), VIOLATIONS, "{}", r.stderr());
    let v = r.json();
    assert_eq!(v["ok"], false);
    let violations = v["violations"].as_array().unwrap();
    assert!(
        violations
            .iter()
            .any(|x| x.as_str().unwrap().contains("p/k")),
        "{v}"
    );
    let text = s.run(&["check"]);
    assert_eq!(text.code(), VIOLATIONS);
    assert!(
        text.stdout().contains("violation: job p/k"),
        "{}",
        text.stdout()
    );
}

#[test]
fn claim_count_claims_a_batch_with_one_token_file_each() {
    let s = Store::with_jobs(&["j1", "j2"]);
    let tok = s.path("batch.token");
    let file = |i: usize| s.path(&format!("batch.token.{i}"));
    // One reserved name is taken: nothing is claimed, no file is left.
    std::fs::write(file(2), "precious").unwrap();
    s.try_claim(&["--holder", "h", "--ttl", "5m", "--count", "3"], &tok)
        .fails(TOKEN_FILE_NOT_RESERVED);
    assert!(!file(1).exists() && !file(3).exists());
    assert_eq!(std::fs::read_to_string(file(2)).unwrap(), "precious");
    assert_eq!(s.job("j1")["state"], "requested");
    std::fs::remove_file(file(2)).unwrap();
    // --count with --job, or outside 1-1000, is refused before anything.
    s.try_claim(
        &[
            "--holder", "h", "--ttl", "5m", "--count", "2", "--job", "j1",
        ],
        &tok,
    )
    .fails(USAGE);
    s.try_claim(&["--holder", "h", "--ttl", "5m", "--count", "0"], &tok)
        .fails(code(ErrorCode::InvalidArgument));
    assert!(!file(1).exists());

    // Three asked, two claimable: two 0600 token files, the third removed.
    let out = s.try_claim(
        &["--json", "--holder", "h", "--ttl", "5m", "--count", "3"],
        &tok,
    );
    let v = out.json();
    let leases = v["leases"].as_array().unwrap();
    assert_eq!(leases.len(), 2);
    assert_eq!(leases[0]["job"], "j1");
    assert_eq!(leases[1]["job"], "j2");
    assert_ne!(leases[0]["claim_id"], leases[1]["claim_id"]);
    for (i, l) in leases.iter().enumerate() {
        assert_eq!(l["token_file"], file(i + 1).display().to_string());
        assert_eq!(l["token_written"], true);
        assert_eq!(mode(&file(i + 1)), 0o600);
        let token = std::fs::read_to_string(file(i + 1)).unwrap();
        assert!(!out.stdout().contains(token.trim()));
    }
    assert!(!file(3).exists());
    // Each token is its own job's lease.
    s.ok(&["complete", "--token-file", file(2).to_str().unwrap()]);
    assert_eq!(s.job("j2")["state"], "completed");
    assert_eq!(s.job("j1")["state"], "claimed");
    // Nothing claimable: no_job_available, no file left.
    let again = s.path("again.token");
    s.try_claim(&["--holder", "h", "--ttl", "5m", "--count", "2"], &again)
        .fails(code(ErrorCode::NoJobAvailable));
    assert!(!s.path("again.token.1").exists() && !s.path("again.token.2").exists());
}

#[test]
fn production_pause_resume_and_limits() {
    let s = Store::with_jobs(&["j1", "j2", "j3"]);
    let v = s.json(&["production", "pause", "p"]);
    assert_eq!(v["changed"], true);
    assert!(s
        .ok(&["production", "pause", "p"])
        .contains("already paused"));
    assert!(!s.json(&["production", "gates", "p"])["gates"]["paused_us"].is_null());
    s.try_claim(
        &["--job", "j1", "--holder", "h", "--ttl", "5m"],
        &s.path("never.token"),
    )
    .fails(code(ErrorCode::ProductionPaused));
    assert_eq!(s.json(&["production", "resume", "p"])["changed"], true);
    let v = s.json(&["production", "limit", "p", "--concurrency", "1"]);
    assert_eq!(v["gates"]["concurrency"], 1);
    s.claim("j1", "5m");
    s.try_claim(
        &["--job", "j2", "--holder", "h", "--ttl", "5m"],
        &s.path("never2.token"),
    )
    .fails(code(ErrorCode::ConcurrencyLimit));
    let v = s.json(&[
        "production",
        "limit",
        "p",
        "--no-concurrency",
        "--rate",
        "1/1h",
        "--burst",
        "1",
    ]);
    assert!(v["gates"]["concurrency"].is_null());
    assert_eq!(v["gates"]["rate"]["claims"], 1);
    s.claim("j2", "5m");
    s.try_claim(
        &["--job", "j3", "--holder", "h", "--ttl", "5m"],
        &s.path("never3.token"),
    )
    .fails(code(ErrorCode::RateLimited));
    // Bad input changes nothing.
    s.run(&["production", "limit", "p", "--concurrency", "0"])
        .fails(code(ErrorCode::InvalidArgument));
    s.run(&["production", "limit", "p", "--rate", "5"])
        .fails(code(ErrorCode::InvalidArgument));
    s.run(&["production", "limit", "p", "--rate", "5/48h"])
        .fails(code(ErrorCode::InvalidDuration));
    s.run(&["production", "limit", "p"]).fails(USAGE);
    s.run(&["production", "pause", "nope"])
        .fails(code(ErrorCode::NotFound));
    let v = s.json(&["production", "limit", "p", "--no-rate"]);
    assert!(v["gates"]["rate"].is_null());
    assert!(v["gates"]["concurrency"].is_null());
}
