//! `tenure work`: the worker loop running a command per job, end to end
//! with real processes (slots, retries, SIGTERM with a grace period,
//! SIGKILL, bad arguments, secrets).

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use tenure::ErrorCode;

fn lines(out: &Out) -> Vec<Value> {
    out.stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn spawn(s: &Store, args: &[&str], marks: &Path) -> Child {
    s.cmd(args)
        .env("MARKS", marks)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn events(s: &Store) -> String {
    s.ok(&["--json", "events", "-p", "p"])
}

#[test]
fn two_slots_run_every_job_once_and_report_each() {
    let names: Vec<String> = (0..6).map(|i| format!("job{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let s = Store::with_jobs(&refs);
    let out = s.path("out");
    let marks = s.path("marks");
    std::fs::create_dir(&marks).unwrap();
    // Each command waits (at most 20 s) until two commands have started: with
    // one slot the first job would fail, so every completion proves two ran
    // at once.
    let script = r#"
        touch "$MARKS/$TENURE_JOB"
        i=0
        while [ "$(ls "$MARKS" | wc -l)" -lt 2 ]; do
            i=$((i+1)); [ $i -gt 1000 ] && exit 7; sleep 0.02
        done
        tr a-z A-Z
    "#;
    let script = format!("MARKS='{}'\n{script}", marks.display());
    let r = s.run(&work_args(
        &out,
        &["--slots", "2", "--ttl", "10s", "--max-jobs", "6"],
        &["sh", "-c", &script],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let reports = lines(&r);
    assert_eq!(reports.len(), 6, "{}", r.stdout());
    let mut jobs: Vec<&str> = reports.iter().map(|v| v["job"].as_str().unwrap()).collect();
    jobs.sort();
    assert_eq!(jobs, refs);
    for v in &reports {
        assert_eq!(v["outcome"], "completed", "{v}");
        assert_eq!(v["attempt"], 1);
        let job = v["job"].as_str().unwrap();
        assert_eq!(s.job(job)["state"], "completed");
        let f = s.facts(job);
        assert_eq!(f["tenure.exec.output"], v["output"].as_str().unwrap());
        assert_eq!(f["tenure.exec.nonce"], v["nonce"].as_str().unwrap());
        let body = std::fs::read(&f["tenure.exec.output"]).unwrap();
        assert_eq!(
            body,
            format!("PAYLOAD OF {}", job.to_uppercase()).as_bytes()
        );
    }
    assert_eq!(files_in(&out).len(), 6);
    // One claim per job.
    assert_eq!(events(&s).matches("\"kind\":\"claimed\"").count(), 6);
    s.ok(&["check"]);

    // --max-jobs stops after that many settled jobs; the text report.
    s.run_in(&["job", "submit", "-p", "p", "more1"], b"x").ok();
    s.run_in(&["job", "submit", "-p", "p", "more2"], b"y").ok();
    let r = s.run(&[
        "work",
        "-p",
        "p",
        "--max-jobs",
        "1",
        "--out-dir",
        out.to_str().unwrap(),
        "--",
        "cat",
    ]);
    let text = r.ok();
    assert!(text.starts_with("completed p/more1 (attempt 1)"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert_eq!(s.job("more2")["state"], "requested");
}

#[test]
fn a_failing_command_is_retried_then_fails_at_the_attempt_budget() {
    let s = Store::new();
    s.ok(&["production", "create", "p"]);
    s.run_in(
        &["job", "submit", "-p", "p", "flaky", "--max-attempts", "3"],
        b"",
    )
    .ok();
    s.run_in(&["job", "submit", "-p", "p", "broken"], b"").ok();
    let out = s.path("out");
    let script = r#"
        echo "partial output"
        [ "$TENURE_JOB" = broken ] && exit 100
        exit 3
    "#;
    let r = s.run(&work_args(
        &out,
        &["--max-jobs", "4", "--ttl", "10s"],
        &["sh", "-c", script],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let reports = lines(&r);
    let flaky: Vec<&Value> = reports.iter().filter(|v| v["job"] == "flaky").collect();
    assert_eq!(flaky.len(), 3, "{}", r.stdout());
    for (i, v) in flaky.iter().enumerate() {
        assert_eq!(v["outcome"], "failed");
        assert_eq!(v["attempt"], i + 1);
        assert_eq!(v["exit_status"], 3);
        assert_eq!(v["permanent"], false);
        assert_eq!(v["state"], if i < 2 { "requested" } else { "failed" });
    }
    let broken: Vec<&Value> = reports.iter().filter(|v| v["job"] == "broken").collect();
    assert_eq!(broken.len(), 1, "{}", r.stdout());
    assert_eq!(broken[0]["permanent"], true);
    assert_eq!(broken[0]["exit_status"], 100);
    assert_eq!(broken[0]["state"], "failed");
    let j = s.job("flaky");
    assert_eq!(j["state"], "failed");
    assert_eq!(j["attempts"], 3);
    assert!(
        j["last_error"].as_str().unwrap().contains("status 3"),
        "{j}"
    );
    assert_eq!(s.job("broken")["attempts"], 1);
    // Every failed attempt removed its own files.
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
    s.ok(&["check"]);
}

#[test]
fn sigterm_takes_no_new_job_lets_commands_finish_in_grace_then_releases() {
    let s = Store::with_jobs(&["long", "short"]);
    let out = s.path("out");
    let marks = s.path("marks");
    std::fs::create_dir(&marks).unwrap();
    let script = r#"
        echo $$ > "$MARKS/$TENURE_JOB.pid"
        echo "output of $TENURE_JOB"
        while [ ! -e "$MARKS/sigtermed" ]; do sleep 0.02; done
        [ "$TENURE_JOB" = short ] && exit 0
        exec sleep 60
    "#;
    let args = work_args(
        &out,
        &["--slots", "2", "--ttl", "30s", "--grace", "2s"],
        &["sh", "-c", script],
    );
    let w = spawn(&s, &args, &marks);
    wait_for("both commands to start", || {
        ["long", "short"]
            .iter()
            .all(|j| marks.join(format!("{j}.pid")).exists())
    });
    let long_pid: u32 = read_pid(&marks.join("long.pid"));
    signal(w.id(), libc::SIGTERM);
    // Give the worker time to see the stop before anything can be claimed.
    std::thread::sleep(std::time::Duration::from_secs(1));
    s.run_in(&["job", "submit", "-p", "p", "late"], b"").ok();
    std::fs::write(marks.join("sigtermed"), b"").unwrap();
    let r = Out(w.wait_with_output().unwrap());
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let reports = lines(&r);
    assert_eq!(reports.len(), 2, "{}", r.stdout());
    let of = |j: &str| reports.iter().find(|v| v["job"] == j).unwrap();
    assert_eq!(of("short")["outcome"], "completed");
    assert_eq!(of("long")["outcome"], "released");
    assert_eq!(of("long")["state"], "requested");
    // The released job is claimable again; its command was killed and its
    // files removed; the job submitted after the stop was not taken.
    let j = s.job("long");
    assert_eq!(j["state"], "requested");
    assert_eq!(j["attempts"], 1);
    assert_eq!(s.job("short")["state"], "completed");
    assert_eq!(s.job("late")["state"], "requested");
    assert_eq!(s.job("late")["attempts"], 0);
    wait_for(
        "the long command to be gone",
        || !matches!(proc_state(long_pid), Some(c) if c != 'Z'),
    );
    let left = files_in(&out);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with("short.") && left[0].ends_with(".out"));
    assert!(events(&s).contains("\"kind\":\"released\""));
    s.ok(&["check"]);
}

#[test]
fn a_sigkilled_worker_loses_nothing_its_jobs_come_back_after_expiry() {
    let s = Store::with_jobs(&["j"]);
    let out = s.path("out");
    let marks = s.path("marks");
    std::fs::create_dir(&marks).unwrap();
    let script = r#"echo $$ > "$MARKS/pid"; exec sleep 60"#;
    let mut w = spawn(
        &s,
        &work_args(&out, &["--ttl", "2s"], &["sh", "-c", script]),
        &marks,
    );
    wait_for("the command to start", || marks.join("pid").exists());
    let orphan: u32 = read_pid(&marks.join("pid"));
    w.kill().unwrap(); // SIGKILL
    w.wait().unwrap();
    assert_eq!(s.job("j")["state"], "claimed");
    wait_for("the lease to expire", || s.job("j")["state"] == "expired");
    // SAFETY: kill(2) on the orphaned command this test's worker started.
    unsafe {
        libc::kill(orphan as libc::pid_t, libc::SIGKILL);
    }
    // --until-idle: stops once no command ran for that long.
    let r = s.run(&work_args(&out, &["--until-idle", "2s"], &["cat"]));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let v = &lines(&r)[0];
    assert_eq!(v["outcome"], "completed");
    assert_eq!(v["attempt"], 2);
    assert_eq!(s.job("j")["state"], "completed");
    s.ok(&["check"]);
}

#[test]
fn bad_arguments_are_refused_and_change_nothing() {
    let s = Store::with_jobs(&["j"]);
    let out = s.path("out");
    let before = events(&s);
    let run = |extra: &[&str], command: &[&str]| s.run(&work_args(&out, extra, command));
    for (opt, bad) in [
        ("--ttl", "0s"),
        ("--ttl", "1.5s"),
        ("--grace", "-1s"),
        ("--wait-timeout", "soon"),
        ("--renew-every", "25h"),
        ("--until-idle", "1500ns"),
        ("--outage-limit", "0s"),
        ("--outage-limit", "forever"),
    ] {
        run(&[opt, bad], &["true"]).fails(code(ErrorCode::InvalidDuration));
    }
    // A keep-alive period not shorter than the TTL.
    run(&["--ttl", "1s", "--renew-every", "1s"], &["true"]).fails(code(ErrorCode::InvalidDuration));
    for slots in ["0", "1025"] {
        run(&["--slots", slots], &["true"]).fails(code(ErrorCode::InvalidArgument));
    }
    run(&["--slots", "-1"], &["true"]).fails(USAGE);
    run(&["--max-jobs", "0"], &["true"]).fails(USAGE);
    run(&["--max-jobs", "1", "--until-idle", "1s"], &["true"]).fails(USAGE);
    run(&["--holder", ""], &["true"]).fails(code(ErrorCode::InvalidArgument));
    s.run(&["work", "-p", "p"]).fails(USAGE); // no command
    s.run(&["work", "-p", "p", "--"]).fails(USAGE);
    s.run(&["work", "--", "true"]).fails(USAGE); // no production
    s.run(&["work", "-p", "nope", "--", "true"])
        .fails(code(ErrorCode::NotFound));
    assert_eq!(events(&s), before);
    assert_eq!(s.job("j")["state"], "requested");
    assert_eq!(s.job("j")["attempts"], 0);
    // A command that cannot start: the lease is failed (retryable), the
    // worker stops and exits 1. The other slot may claim the job again
    // between that failure and the stop (and fail or release it in turn).
    let err = run(&["--slots", "2"], &["/nonexistent/program"]).fails(1);
    assert!(err.contains("/nonexistent/program"), "{err}");
    let j = s.job("j");
    assert_eq!(j["state"], "requested");
    let attempts = j["attempts"].as_u64().unwrap();
    assert!((1..=2).contains(&attempts), "{j}");
    s.ok(&["check"]);
}

#[test]
fn no_secret_reaches_the_command_the_worker_argv_env_or_output() {
    let s = Store::with_jobs(&["j"]);
    let out = s.path("out");
    let script = r#"
        printf 'SELF-ARGV:'; tr '\0' ' ' < /proc/self/cmdline; echo
        printf 'SELF-ENV:'; tr '\0' ' ' < /proc/self/environ; echo
        printf 'WORKER-ARGV:'; tr '\0' ' ' < /proc/$PPID/cmdline; echo
        printf 'WORKER-ENV:'; tr '\0' ' ' < /proc/$PPID/environ; echo
        echo "claim=$TENURE_CLAIM_ID nonce=$TENURE_NONCE attempt=$TENURE_ATTEMPT"
    "#;
    let r = s.run(&work_args(
        &out,
        &["--max-jobs", "1"],
        &["sh", "-c", script],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let v = &lines(&r)[0];
    let body = std::fs::read_to_string(v["output"].as_str().unwrap()).unwrap();
    assert!(
        body.contains("WORKER-ARGV:") && body.contains("work"),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "claim={} nonce={} attempt=1",
            v["claim_id"].as_str().unwrap(),
            v["nonce"].as_str().unwrap()
        )),
        "{body}"
    );
    let text = format!("{body}{}{}", r.stdout(), r.stderr());
    assert!(!text.contains(tenure::TOKEN_PREFIX), "{text}");
    assert!(!text.to_lowercase().contains("secret"), "{text}");
    assert!(!text.contains("TENURE_TOKEN"), "{text}");
    let events = events(&s);
    assert!(!events.contains(tenure::TOKEN_PREFIX), "{events}");
}

/// The most leases of production `p` live at once, from its event log: a
/// lease counts from its claim until it closes or expires.
fn max_live(s: &Store) -> usize {
    let mut edges: Vec<(i64, i32)> = Vec::new();
    let mut open: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    for l in events(s).lines() {
        let e: Value = serde_json::from_str(l).unwrap();
        let job = e["job"].as_str().unwrap_or("").to_owned();
        let at = e["at_us"].as_i64().unwrap();
        match e["kind"].as_str().unwrap() {
            "claimed" => {
                edges.push((at, 1));
                open.insert(job, e["expires_us"].as_i64().unwrap());
            }
            "renewed" | "checkpointed" => {
                if let Some(exp) = open.get_mut(&job) {
                    *exp = e["expires_us"].as_i64().unwrap();
                }
            }
            "completed" | "failed" | "released" => {
                if let Some(exp) = open.remove(&job) {
                    edges.push((at.min(exp), -1));
                }
            }
            _ => {}
        }
    }
    edges.extend(open.values().map(|&exp| (exp, -1)));
    edges.sort();
    let (mut live, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        live += d;
        most = most.max(live);
    }
    most as usize
}

/// Four worker processes of two slots each at a concurrency limit of three:
/// never four leases live at once, and `tenure check` verifies it; a fourth
/// claim forged into the log is reported as the violation (exit 3).
#[test]
fn worker_processes_at_a_concurrency_limit_of_three_pass_check() {
    let names: Vec<String> = (0..40).map(|i| format!("job{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let s = Store::with_jobs(&refs);
    s.ok(&["production", "limit", "p", "--concurrency", "3"]);
    let out = s.path("out");
    let marks = s.path("marks");
    std::fs::create_dir(&marks).unwrap();
    let args = work_args(
        &out,
        &["--slots", "2", "--ttl", "30s", "--until-idle", "5s"],
        &["sh", "-c", "sleep 0.2; cat"],
    );
    let workers: Vec<Child> = (0..4).map(|_| spawn(&s, &args, &marks)).collect();
    let mut completed = 0;
    for w in workers {
        let r = Out(w.wait_with_output().unwrap());
        assert_eq!(r.code(), 0, "{}", r.stderr());
        completed += lines(&r)
            .iter()
            .filter(|v| v["outcome"] == "completed")
            .count();
    }
    assert_eq!(completed, 40);
    assert_eq!(max_live(&s), 3);
    s.ok(&["check"]);

    // Forge four claims, a second apart from the log's end, each live for a
    // minute: the fourth makes four live leases.
    let c = rusqlite::Connection::open(&s.db).unwrap();
    let t0: i64 = c
        .query_row("SELECT MAX(at_us) FROM events", [], |r| r.get(0))
        .unwrap();
    for (i, job) in ["job00", "job01", "job02", "job03"].iter().enumerate() {
        let at = t0 + 1_000_000 + i as i64;
        c.execute(
            "INSERT INTO events (at_us, production, job, kind, state, claim_id, holder, \
                                 attempt, expires_us, detail) \
             SELECT ?1, production, job, kind, state, claim_id, holder, attempt, ?2, detail \
             FROM events WHERE job = ?3 AND kind = 'claimed' LIMIT 1",
            rusqlite::params![at, at + 60_000_000, job],
        )
        .unwrap();
    }
    drop(c);
    let r = s.run(&["--json", "check"]);
    assert_eq!(r.code(), VIOLATIONS, "{}", r.stdout());
    let v = r.json();
    assert_eq!(v["ok"], false);
    let violations: Vec<&str> = v["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        violations
            .iter()
            .any(|m| m.starts_with("job p/job03: claim ")
                && m.contains(
                    "made 4 live leases in production \"p\", whose concurrency limit is 3"
                )),
        "{violations:?}"
    );
}
