//! Scheduling from the shell: `job submit --delay/--max-hold/--backoff`
//! (also as `--jsonl` fields), `fail --retry-after`, `production backoff`,
//! listings and exports that show due time, hold limit and back-off, the
//! exit statuses of bad input (12) and of a renewal the hold limit stops
//! (32), and `work` applying the back-off to failing commands. Real
//! processes on real store files.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use tenure::ErrorCode;

const HOUR: i64 = 3_600_000_000;

/// Every event of production `p`, oldest first.
fn events(s: &Store) -> Vec<Value> {
    s.ok(&["--json", "events", "-p", "p"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The last event of `kind` for `job`.
fn last_event(s: &Store, job: &str, kind: &str) -> Value {
    events(s)
        .into_iter()
        .rev()
        .find(|e| e["job"] == job && e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event for {job}"))
}

fn at_us(e: &Value) -> i64 {
    e["at_us"].as_i64().unwrap()
}

fn submit(s: &Store, job: &str, extra: &[&str]) -> Out {
    let mut a = vec!["job", "submit", "-p", "p", job];
    a.extend_from_slice(extra);
    s.run_in(&a, b"x")
}

fn fail(s: &Store, tok: &Path, extra: &[&str]) -> Out {
    let mut a = vec![
        "fail",
        "--token-file",
        tok.to_str().unwrap(),
        "--reason",
        "r",
    ];
    a.extend_from_slice(extra);
    s.run(&a)
}

/// Everything a refused command must leave unchanged: the jobs, the
/// productions and the event log.
fn snapshot(s: &Store) -> (Value, Value, usize) {
    (
        s.json(&["jobs", "-p", "p"]),
        s.json(&["production", "list"]),
        events(s).len(),
    )
}

#[test]
fn a_delayed_job_is_due_after_its_delay_and_listings_show_it() {
    let s = Store::with_jobs(&[]);
    submit(&s, "later", &["--delay", "1h"]).ok();
    let j = s.job("later");
    let submitted = at_us(&last_event(&s, "later", "submitted"));
    assert_eq!(j["due_us"], submitted + HOUR, "{j}");
    assert_eq!(j["max_hold_us"], Value::Null);
    assert_eq!(j["backoff"], Value::Null);
    // Not claimable before it is due: by name (exit 15), nor next (exit 16).
    let tok = s.path("later.tok");
    s.try_claim(&["--job", "later", "--holder", "w", "--ttl", "30s"], &tok)
        .fails(code(ErrorCode::NotClaimable));
    s.try_claim(&["--holder", "w", "--ttl", "30s"], &tok)
        .fails(code(ErrorCode::NoJobAvailable));
    assert!(!tok.exists());
    // Text views show the due time.
    let due = j["due_us"].as_i64().unwrap();
    let shown = s.ok(&["job", "show", "-p", "p", "later"]);
    assert!(
        shown.contains(&format!("due        {}", iso(due))),
        "{shown}"
    );
    let listed = s.ok(&["jobs", "-p", "p"]);
    assert!(listed.lines().next().unwrap().contains("DUE"), "{listed}");
    assert!(listed.contains(&iso(due)), "{listed}");
    assert_eq!(s.json(&["jobs", "-p", "p"])["jobs"][0]["due_us"], due);

    // --delay 0s is allowed: due at once.
    submit(&s, "now", &["--delay", "0s"]).ok();
    assert_eq!(s.job("now")["due_us"], Value::Null);
    s.claim("now", "30s");
    // The longest delay is accepted.
    submit(&s, "far", &["--delay", "8784h"]).ok();
    let far = s.job("far");
    assert_eq!(
        far["due_us"].as_i64().unwrap() - at_us(&last_event(&s, "far", "submitted")),
        8784 * HOUR
    );

    // A short delay passes: the job becomes claimable by the store's clock.
    submit(&s, "soon", &["--delay", "300ms"]).ok();
    s.try_claim(&["--job", "soon", "--holder", "w", "--ttl", "30s"], &tok)
        .fails(code(ErrorCode::NotClaimable));
    std::thread::sleep(Duration::from_millis(350));
    s.claim("soon", "30s");
    assert_eq!(s.job("soon")["state"], "claimed");
    assert_eq!(s.job("soon")["due_us"], Value::Null);
}

/// µs since the epoch as the CLI's text shows it (UTC, milliseconds),
/// computed independently with date(1).
fn iso(us: i64) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{}", us.div_euclid(1_000_000))])
        .arg("+%Y-%m-%dT%H:%M:%S")
        .output()
        .unwrap();
    let secs = String::from_utf8(out.stdout).unwrap();
    format!("{}.{:03}Z", secs.trim(), us.rem_euclid(1_000_000) / 1_000)
}

#[test]
fn the_hold_limit_caps_claims_and_renewals_and_a_renewal_it_stops_exits_32() {
    let s = Store::with_jobs(&[]);
    submit(&s, "held", &["--max-hold", "10m"]).ok();
    assert_eq!(s.job("held")["max_hold_us"], 600_000_000);
    assert!(s
        .ok(&["job", "show", "-p", "p", "held"])
        .contains("max_hold   10m"));
    let tok = s.claim("held", "1m");
    let claimed = at_us(&last_event(&s, "held", "claimed"));
    assert_eq!(s.job("held")["expires_us"], claimed + 60_000_000);
    // A renewal the limit only shortens succeeds with the capped expiry.
    let renewed = s.json(&[
        "renew",
        "--token-file",
        tok.to_str().unwrap(),
        "--ttl",
        "1h",
    ]);
    assert_eq!(renewed["expires_us"], claimed + 600_000_000);
    assert_eq!(s.job("held")["expires_us"], claimed + 600_000_000);
    let detail = last_event(&s, "held", "renewed")["detail"].to_string();
    assert!(detail.contains("capped by the hold limit"), "{detail}");
    // One that the limit holds at the current expiry is hold_limit (exit
    // 32) and changes nothing.
    let before = snapshot(&s);
    let err = s.renew(&tok, "1h").fails(code(ErrorCode::HoldLimit));
    assert!(err.contains("hold_limit"), "{err}");
    assert_eq!(snapshot(&s), before);
    // The exit-code table names it.
    let table = s.json(&["exit-codes"]);
    assert!(table["exit_codes"].as_array().unwrap().contains(
        &json!({"exit": 32, "name": "hold_limit", "meaning": "tenure error 22 (hold_limit)"})
    ));
    // The first claim is capped too.
    submit(&s, "short", &["--max-hold", "2s"]).ok();
    let tok = s.claim("short", "1h");
    let claimed = at_us(&last_event(&s, "short", "claimed"));
    assert_eq!(s.job("short")["expires_us"], claimed + 2_000_000);
    s.renew(&tok, "1h").fails(code(ErrorCode::HoldLimit));
}

#[test]
fn fail_retry_after_makes_the_job_due_after_that_delay() {
    let s = Store::with_jobs(&[]);
    // A job back-off the worker's delay overrides.
    submit(&s, "a", &["--backoff", "1h,2h"]).ok();
    let tok = s.claim("a", "30s");
    let out = fail(&s, &tok, &["--retry-after", "90s"]).ok();
    assert!(out.contains("job is requested"), "{out}");
    let failed = at_us(&last_event(&s, "a", "failed"));
    assert_eq!(s.job("a")["due_us"], failed + 90_000_000);
    let tok = s.path("a.tok");
    s.try_claim(&["--job", "a", "--holder", "w", "--ttl", "30s"], &tok)
        .fails(code(ErrorCode::NotClaimable));

    // 0s: due at once, whatever back-off applies.
    submit(&s, "b", &["--backoff", "1h,2h"]).ok();
    let tok = s.claim("b", "30s");
    fail(&s, &tok, &["--retry-after", "0s"]).ok();
    assert_eq!(s.job("b")["due_us"], Value::Null);
    s.claim("b", "30s");

    // Bad input: exit 12 (or 2 with --permanent), nothing changes, the lease
    // stays usable.
    submit(&s, "c", &[]).ok();
    let tok = s.claim("c", "30s");
    let before = snapshot(&s);
    for bad in ["-1s", "8785h", "1.5s", "1500ns", "5", "soon", ""] {
        fail(&s, &tok, &["--retry-after", bad]).fails(code(ErrorCode::InvalidDuration));
        assert_eq!(snapshot(&s), before, "{bad}");
    }
    fail(&s, &tok, &["--retry-after", "1s", "--permanent"]).fails(USAGE);
    assert_eq!(snapshot(&s), before);
    assert_eq!(s.job("c")["state"], "claimed");
    // Without --retry-after and without back-off: due at once.
    fail(&s, &tok, &[]).ok();
    assert_eq!(s.job("c")["due_us"], Value::Null);
    assert_eq!(s.job("c")["state"], "requested");
}

#[test]
fn job_and_production_back_off_delay_retries() {
    let s = Store::with_jobs(&[]);
    let set = s.json(&["production", "backoff", "p", "1h,4h"]);
    assert_eq!(
        set,
        json!({"production": "p", "backoff": {"base_us": HOUR, "cap_us": 4 * HOUR}})
    );
    let listed = s.json(&["production", "list"]);
    assert_eq!(
        listed["productions"][0]["backoff"],
        json!({"base_us": HOUR, "cap_us": 4 * HOUR})
    );
    assert!(s.ok(&["production", "list"]).contains("1h,4h"));

    // A job without its own back-off takes the production's ...
    submit(&s, "plain", &["--max-attempts", "5"]).ok();
    let tok = s.claim("plain", "30s");
    fail(&s, &tok, &[]).ok();
    let failed = at_us(&last_event(&s, "plain", "failed"));
    assert_eq!(s.job("plain")["due_us"], failed + HOUR);
    // ... a job's own overrides it.
    submit(&s, "own", &["--backoff", "10m,20m"]).ok();
    let j = s.job("own");
    assert_eq!(
        j["backoff"],
        json!({"base_us": 600_000_000i64, "cap_us": 1_200_000_000i64})
    );
    assert!(s
        .ok(&["job", "show", "-p", "p", "own"])
        .contains("backoff    10m,20m"));
    let tok = s.claim("own", "30s");
    fail(&s, &tok, &[]).ok();
    let failed = at_us(&last_event(&s, "own", "failed"));
    assert_eq!(s.job("own")["due_us"], failed + 600_000_000);
    // A permanent failure never delays.
    submit(&s, "perm", &[]).ok();
    let tok = s.claim("perm", "30s");
    fail(&s, &tok, &["--permanent"]).ok();
    assert_eq!(s.job("perm")["state"], "failed");
    assert_eq!(s.job("perm")["due_us"], Value::Null);

    // --clear removes the production's policy: failures are due at once.
    let cleared = s.json(&["production", "backoff", "p", "--clear"]);
    assert_eq!(cleared, json!({"production": "p", "backoff": null}));
    assert_eq!(
        s.json(&["production", "list"])["productions"][0]["backoff"],
        Value::Null
    );
    submit(&s, "after", &[]).ok();
    let tok = s.claim("after", "30s");
    fail(&s, &tok, &[]).ok();
    assert_eq!(s.job("after")["due_us"], Value::Null);

    // Bad policies: exit 12, the policy unchanged; usage errors exit 2.
    s.ok(&["production", "backoff", "p", "1s,1m"]);
    let before = snapshot(&s);
    for bad in [
        "5s,1s", "5s", "0s,1s", ",1s", "1s,", "-1s,1m", "1s,8785h", "1s,1m,2m",
    ] {
        s.run(&["production", "backoff", "p", bad])
            .fails(code(ErrorCode::InvalidDuration));
        assert_eq!(snapshot(&s), before, "{bad}");
    }
    s.run(&["production", "backoff", "p"]).fails(USAGE);
    s.run(&["production", "backoff", "p", "1s,1m", "--clear"])
        .fails(USAGE);
    s.run(&["production", "backoff", "nope", "1s,1m"])
        .fails(code(ErrorCode::NotFound));
    assert_eq!(snapshot(&s), before);
}

#[test]
fn bad_schedule_flags_on_submit_exit_12_and_change_nothing() {
    let s = Store::with_jobs(&["existing"]);
    let before = snapshot(&s);
    let cases: &[(&str, &str)] = &[
        ("--delay", "-1s"),
        ("--delay", "8785h"),
        ("--delay", "1.5s"),
        ("--delay", "1500ns"),
        ("--delay", "10"),
        ("--delay", "1d"),
        ("--delay", ""),
        ("--max-hold", "0s"),
        ("--max-hold", "-5m"),
        ("--max-hold", "8785h"),
        ("--backoff", "5s,1s"),
        ("--backoff", "5s"),
        ("--backoff", ",5s"),
        ("--backoff", "5s,"),
        ("--backoff", "0s,1s"),
        ("--backoff", "1s,2s,3s"),
        ("--backoff", "1s;2s"),
    ];
    for (flag, value) in cases {
        let err = submit(&s, "new", &[flag, value]).fails(code(ErrorCode::InvalidDuration));
        assert!(err.contains("[invalid_duration]"), "{flag} {value}: {err}");
        assert_eq!(snapshot(&s), before, "{flag} {value}");
    }
    // A job's hold limit and back-off are its content: another value is a
    // conflict (exit 14); the delay is not (existing, due time unchanged).
    submit(
        &s,
        "x",
        &["--max-hold", "1m", "--backoff", "1s,1m", "--delay", "1h"],
    )
    .ok();
    let due = s.job("x")["due_us"].clone();
    let again = submit(&s, "x", &["--max-hold", "1m", "--backoff", "1s,1m"]).ok();
    assert!(again.starts_with("existing"), "{again}");
    assert_eq!(s.job("x")["due_us"], due);
    submit(&s, "x", &["--max-hold", "2m", "--backoff", "1s,1m"]).fails(code(ErrorCode::Conflict));
    submit(&s, "x", &["--max-hold", "1m", "--backoff", "1s,2m"]).fails(code(ErrorCode::Conflict));
}

#[test]
fn jsonl_lines_carry_delay_hold_and_back_off_with_flags_as_defaults() {
    let s = Store::with_jobs(&[]);
    let file = s.path("jobs.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"job\":\"a\"}\n",
            "{\"job\":\"b\",\"delay\":\"2h\",\"max_hold\":\"5m\",\"backoff\":\"2s,4s\"}\n",
            "{\"job\":\"c\",\"delay\":\"0s\"}\n",
        ),
    )
    .unwrap();
    let f = file.to_str().unwrap();
    s.ok(&[
        "job",
        "submit",
        "-p",
        "p",
        "--jsonl",
        f,
        "--delay",
        "1h",
        "--max-hold",
        "1m",
        "--backoff",
        "1s,1m",
    ]);
    let submitted = at_us(&last_event(&s, "a", "submitted"));
    let a = s.job("a");
    assert_eq!(a["due_us"], submitted + HOUR);
    assert_eq!(a["max_hold_us"], 60_000_000);
    assert_eq!(
        a["backoff"],
        json!({"base_us": 1_000_000, "cap_us": 60_000_000})
    );
    let b = s.job("b");
    assert_eq!(b["due_us"], submitted + 2 * HOUR);
    assert_eq!(b["max_hold_us"], 300_000_000);
    assert_eq!(
        b["backoff"],
        json!({"base_us": 2_000_000, "cap_us": 4_000_000})
    );
    let c = s.job("c");
    assert_eq!(c["due_us"], Value::Null);
    assert_eq!(c["max_hold_us"], 60_000_000);

    // One bad line refuses the whole batch: a bad duration exits 12 and
    // names the line (a zero hold limit, refused by the core, names the
    // job), a field of the wrong type 11.
    let before = snapshot(&s);
    let (dur, arg) = (ErrorCode::InvalidDuration, ErrorCode::InvalidArgument);
    for (line, exit, names) in [
        (r#"{"job":"d","delay":"-1s"}"#, dur, "jobs.jsonl:2:"),
        (r#"{"job":"d","max_hold":"0s"}"#, dur, "job p/d"),
        (r#"{"job":"d","backoff":"4s,2s"}"#, dur, "jobs.jsonl:2:"),
        (r#"{"job":"d","backoff":"4s"}"#, dur, "jobs.jsonl:2:"),
        (r#"{"job":"d","delay":60}"#, arg, "jobs.jsonl:2:"),
        (r#"{"job":"d","backoff":[1,2]}"#, arg, "jobs.jsonl:2:"),
        (r#"{"job":"d","retry":"1s"}"#, arg, "jobs.jsonl:2:"),
    ] {
        std::fs::write(&file, format!("{{\"job\":\"ok\"}}\n{line}\n")).unwrap();
        let err = s
            .run(&["job", "submit", "-p", "p", "--jsonl", f])
            .fails(code(exit));
        assert!(err.contains(names), "{line}: {err}");
        assert_eq!(snapshot(&s), before, "{line}");
    }
}

#[test]
fn exports_carry_due_time_hold_limit_and_back_off() {
    let s = Store::with_jobs(&[]);
    s.ok(&["production", "backoff", "p", "250ms,10s"]);
    submit(
        &s,
        "a",
        &["--delay", "1h", "--max-hold", "2m", "--backoff", "1s,5m"],
    )
    .ok();
    submit(&s, "b", &[]).ok();
    let lines: Vec<Value> = s
        .ok(&["production", "export", "p"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["record"], "production");
    assert_eq!(
        lines[0]["backoff"],
        json!({"base_us": 250_000, "cap_us": 10_000_000})
    );
    let a = &lines[1];
    assert_eq!(a["job"], "a");
    assert_eq!(a["due_us"], s.job("a")["due_us"]);
    assert!(a["due_us"].is_i64());
    assert_eq!(a["max_hold_us"], 120_000_000);
    assert_eq!(
        a["backoff"],
        json!({"base_us": 1_000_000, "cap_us": 300_000_000})
    );
    let b = &lines[2];
    assert_eq!(b["job"], "b");
    for k in ["due_us", "max_hold_us", "backoff"] {
        assert!(b.get(k).is_some_and(Value::is_null), "{k}: {b}");
    }
    // A job record is the job's `--json` view plus `record` and its payload.
    let mut view = s.job("a");
    // `job show` adds the progress checkpoint, which exports leave out.
    view.as_object_mut().unwrap().remove("progress_hex");
    view["record"] = json!("job");
    view["payload_base64"] = json!("eA=="); // "x"
    assert_eq!(a, &view);
}

#[test]
fn exec_and_work_apply_the_back_off_to_a_failing_command() {
    let s = Store::with_jobs(&[]);
    s.ok(&["production", "backoff", "p", "1h,1h"]);
    submit(&s, "flaky", &["--max-attempts", "3"]).ok();
    let out = s.path("out");
    let r = s.run(&work_args(
        &out,
        &["--max-jobs", "1"],
        &["sh", "-c", "exit 3"],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let report: Value = serde_json::from_str(r.stdout().trim()).unwrap();
    assert_eq!(report["outcome"], "failed");
    assert_eq!(report["permanent"], false);
    let j = s.job("flaky");
    assert_eq!(j["state"], "requested");
    assert_eq!(j["attempts"], 1);
    let failed = last_event(&s, "flaky", "failed");
    assert_eq!(j["due_us"], at_us(&failed) + HOUR, "{failed}");
    // Not claimable until then: a second worker finds nothing and stops idle.
    let r = s.run(&work_args(&out, &["--until-idle", "200ms"], &["true"]));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(r.stdout(), "");
    assert_eq!(s.job("flaky")["attempts"], 1);

    // `exec` the same way (its command failed: exit 6); exit 100 is
    // permanent and never delayed.
    let exec = |job: &str, command: &str| {
        let out = out.to_str().unwrap();
        let a = [
            "exec",
            "-p",
            "p",
            "--job",
            job,
            "--out-dir",
            out,
            "--",
            "sh",
            "-c",
            command,
        ];
        s.run(&a)
    };
    submit(&s, "once", &[]).ok();
    exec("once", "exit 3").fails(COMMAND_FAILED);
    let failed = last_event(&s, "once", "failed");
    assert_eq!(s.job("once")["due_us"], at_us(&failed) + HOUR);
    submit(&s, "perm", &[]).ok();
    exec("perm", "exit 100").fails(COMMAND_FAILED);
    assert_eq!(s.job("perm")["state"], "failed");
    assert_eq!(s.job("perm")["due_us"], Value::Null);
}
