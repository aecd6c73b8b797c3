//! `tenure exec` (the reference executor) and `tenure demo`, end to end.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use tenure::ErrorCode;

fn exec_args<'a>(out: &'a str, extra: &[&'a str], command: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["--json", "exec", "-p", "p", "--out-dir", out];
    a.extend_from_slice(extra);
    a.push("--");
    a.extend_from_slice(command);
    a
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

#[test]
fn exec_runs_the_command_and_publishes_its_output() {
    let s = Store::with_jobs(&["j"]);
    let out = s.path("out");
    let script = r#"
        cat                       # the payload
        echo
        echo "job=$TENURE_JOB prod=$TENURE_PRODUCTION attempt=$TENURE_ATTEMPT"
        echo "claim=$TENURE_CLAIM_ID nonce=$TENURE_NONCE output=$TENURE_OUTPUT"
        printf 'SELF-ARGV:'; tr '\0' ' ' < /proc/self/cmdline; echo
        printf 'SELF-ENV:'; tr '\0' ' ' < /proc/self/environ; echo
        printf 'EXECUTOR-ARGV:'; tr '\0' ' ' < /proc/$PPID/cmdline; echo
        printf 'EXECUTOR-ENV:'; tr '\0' ' ' < /proc/$PPID/environ; echo
    "#;
    let r = s.run(&exec_args(
        out.to_str().unwrap(),
        &["--job", "j", "--holder", "exec-test", "--ttl", "30s"],
        &["sh", "-c", script],
    ));
    let stdout = r.stdout();
    assert_eq!(r.code(), 0, "{stdout}{}", r.stderr());
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["outcome"], "completed");
    assert_eq!(v["exit_status"], 0);
    let nonce = v["nonce"].as_str().unwrap();
    let path = v["output"].as_str().unwrap();
    assert!(path.ends_with(&format!("j.{nonce}.out")), "{path}");
    assert_eq!(files_in(&out), [format!("j.{nonce}.out")]);
    let body = std::fs::read(path).unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(text.starts_with("payload of j\n"), "{text}");
    assert!(text.contains("job=j prod=p attempt=1"), "{text}");
    let claim = v["claim_id"].as_str().unwrap();
    assert!(
        text.contains(&format!("claim={claim} nonce={nonce}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("output={}/j.{nonce}.tmp", out.display())),
        "{text}"
    );
    // No token or secret reaches the command or the executor's own argv/env.
    assert!(text.contains("EXECUTOR-ARGV:"), "{text}");
    assert!(!text.contains(tenure::TOKEN_PREFIX), "{text}");
    assert!(!text.to_lowercase().contains("secret"), "{text}");
    assert!(!text.contains("TENURE_TOKEN"), "{text}");
    // Provenance facts match the file.
    let f = s.facts("j");
    assert_eq!(f["tenure.exec.output"], path);
    assert_eq!(f["tenure.exec.sha256"], sha256_hex(&body));
    assert_eq!(f["tenure.exec.size"], body.len().to_string());
    assert_eq!(f["tenure.exec.nonce"], nonce);
    assert_eq!(f["tenure.exec.exit_status"], "0");
    assert_eq!(f["tenure.claim_id"], claim);
    assert_eq!(f["tenure.holder"], "exec-test");
    assert_eq!(s.job("j")["state"], "completed");
    // Human output, and nothing left to claim.
    let r = s.run(&["exec", "-p", "p", "--", "true"]);
    r.fails(code(ErrorCode::NoJobAvailable));
    s.ok(&["check"]);
}

#[test]
fn failing_commands_fail_the_lease() {
    let s = Store::with_jobs(&["crash", "perm", "code3"]);
    let out = s.path("out");
    let o = out.to_str().unwrap();
    // A command killed by a signal: retryable, files removed.
    let r = s.run(&exec_args(
        o,
        &["--job", "crash"],
        &["sh", "-c", "echo partial; kill -9 $$"],
    ));
    assert_eq!(r.code(), COMMAND_FAILED, "{}", r.stderr());
    let v = r.json();
    assert_eq!(v["outcome"], "failed");
    assert_eq!(v["signal"], 9);
    assert_eq!(v["permanent"], false);
    assert_eq!(v["state"], "requested");
    let j = s.job("crash");
    assert_eq!(j["state"], "requested");
    assert_eq!(j["attempts"], 1);
    assert!(j["last_error"].as_str().unwrap().contains("signal 9"));
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
    // Retryable exit code.
    let r = s.run(&exec_args(o, &["--job", "code3"], &["sh", "-c", "exit 3"]));
    assert_eq!(r.code(), COMMAND_FAILED);
    assert_eq!(r.json()["exit_status"], 3);
    assert_eq!(s.job("code3")["state"], "requested");
    // Exit 100: permanent.
    let r = s.run(&exec_args(o, &["--job", "perm"], &["sh", "-c", "exit 100"]));
    assert_eq!(r.code(), COMMAND_FAILED);
    let v = r.json();
    assert_eq!(v["permanent"], true);
    assert_eq!(v["state"], "failed");
    assert_eq!(s.job("perm")["state"], "failed");
    // The crashed job is retried and completes.
    let r = s.run(&exec_args(o, &["--job", "crash"], &["cat"]));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(r.json()["attempt"], 2);
    assert_eq!(files_in(&out).len(), 1);
    // A command that cannot start: the lease is failed (retryable), exit 1.
    let r = s.run(&exec_args(
        o,
        &["--job", "code3"],
        &["/nonexistent/program"],
    ));
    assert_eq!(r.code(), 1, "{}", r.stderr());
    let j = s.job("code3");
    assert_eq!(j["state"], "requested");
    assert_eq!(j["attempts"], 2);
    assert_eq!(files_in(&out).len(), 1);
    // Usage: --loop with --job, and no command.
    s.run(&["exec", "-p", "p", "--loop", "--job", "x", "--", "true"])
        .fails(USAGE);
    s.run(&["exec", "-p", "p"]).fails(USAGE);
    s.run(&["exec", "-p", "p", "--ttl", "1.5s", "--", "true"])
        .fails(code(ErrorCode::InvalidDuration));
    s.ok(&["check"]);
}

#[test]
fn exec_loop_drains_the_production() {
    let names: Vec<String> = (0..5).map(|i| format!("job{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let s = Store::with_jobs(&refs);
    let out = s.path("out");
    let r = s.run(&exec_args(
        out.to_str().unwrap(),
        &["--loop", "--ttl", "10s"],
        &["sh", "-c", "tr a-z A-Z"],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let lines: Vec<Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert!(lines.iter().all(|l| l["outcome"] == "completed"));
    for n in &names {
        assert_eq!(s.job(n)["state"], "completed");
        let f = s.facts(n);
        let body = std::fs::read(&f["tenure.exec.output"]).unwrap();
        assert_eq!(body, format!("PAYLOAD OF {}", n.to_uppercase()).as_bytes());
    }
    assert_eq!(files_in(&out).len(), 5);
}

#[test]
fn exec_parallel_runs_commands_at_once_and_drains() {
    let names: Vec<String> = (0..4).map(|i| format!("job{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let s = Store::with_jobs(&refs);
    let out = s.path("out");
    let started = s.path("started");
    std::fs::create_dir(&started).unwrap();
    // The first two commands only finish once two have started: run one at
    // a time, the first would time out (exit 1) and fail its job.
    let script = format!(
        "touch {d}/$TENURE_JOB; i=0; \
         while [ \"$(ls {d} | wc -l)\" -lt 2 ]; do i=$((i+1)); [ $i -gt 2000 ] && exit 1; sleep 0.01; done; \
         tr a-z A-Z",
        d = started.display()
    );
    let r = s.run(&exec_args(
        out.to_str().unwrap(),
        &["--parallel", "2", "--ttl", "10s"],
        &["sh", "-c", &script],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let lines: Vec<Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines.iter().all(|l| l["outcome"] == "completed"),
        "{lines:?}"
    );
    for n in &names {
        assert_eq!(s.job(n)["state"], "completed");
    }
    assert_eq!(files_in(&out).len(), 4);
    // --parallel claims the next jobs: not with --job; widths 1-1000
    for extra in [
        &["--parallel", "2", "--job", "job0"][..],
        &["--parallel", "0"],
    ] {
        let r = s.run(&exec_args(out.to_str().unwrap(), extra, &["true"]));
        assert_ne!(r.code(), 0);
    }
}

/// Start `tenure exec` on job `j` whose command signals readiness through
/// marker files in `marks`, then waits for `marks/go`.
fn start_waiting_executor(s: &Store, out: &Path, marks: &Path, ttl: &str) -> Child {
    let script = r#"
        echo "output of A"
        echo $$ > "$MARKS/pid"
        touch "$MARKS/started"
        while [ ! -e "$MARKS/go" ]; do sleep 0.02; done
        echo "more output of A"
    "#;
    s.cmd(&exec_args(
        out.to_str().unwrap(),
        &["--job", "j", "--holder", "A", "--ttl", ttl],
        &["sh", "-c", script],
    ))
    .env("MARKS", marks)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

fn finish(child: Child) -> Out {
    Out(child.wait_with_output().unwrap())
}

/// Executor A is paused (SIGSTOP) past its expiry; executor B reclaims and
/// completes the job; A's command then finishes and A is resumed: its
/// completion is rejected as stale and only A's files are removed.
#[test]
fn stale_executor_completion_is_rejected_and_cleans_only_its_files() {
    let s = Store::with_jobs(&["j"]);
    let out = s.path("out");
    let marks = s.path("marks");
    std::fs::create_dir(&marks).unwrap();
    let a = start_waiting_executor(&s, &out, &marks, "2s");
    wait_for("A's command to start", || marks.join("started").exists());
    let a_tmp = files_in(&out);
    assert_eq!(a_tmp.len(), 1);
    assert!(a_tmp[0].ends_with(".tmp"), "{a_tmp:?}");
    stop_outside_write(&s.db, a.id());
    wait_for("A's lease to expire", || s.job("j")["state"] == "expired");

    let r = s.run(&exec_args(
        out.to_str().unwrap(),
        &["--job", "j", "--holder", "B", "--ttl", "30s"],
        &["sh", "-c", "echo output of B"],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let b = r.json();
    assert_eq!(b["attempt"], 2);
    let b_out = b["output"].as_str().unwrap().to_owned();

    // Let A's command finish while A is still stopped, then resume A.
    std::fs::write(marks.join("go"), b"").unwrap();
    let pid: u32 = read_pid(&marks.join("pid"));
    wait_for("A's command to exit", || proc_state(pid) == Some('Z'));
    signal(a.id(), libc::SIGCONT);
    let r = finish(a);
    assert_eq!(r.code(), code(ErrorCode::StaleLease), "{}", r.stderr());
    let v = r.json();
    assert_eq!(v["outcome"], "rejected");
    assert_eq!(v["error"]["code"], "stale_lease");
    assert_eq!(v["exit_status"], 0);
    let a_nonce = v["nonce"].as_str().unwrap();
    assert_ne!(a_nonce, b["nonce"].as_str().unwrap());

    // Only B's file remains, untouched; A wrote a different file.
    let left = files_in(&out);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(!left[0].contains(a_nonce));
    assert_eq!(std::fs::read_to_string(&b_out).unwrap(), "output of B\n");
    let f = s.facts("j");
    assert_eq!(f["tenure.exec.output"], b_out);
    assert_eq!(f["tenure.holder"], "B");
    assert_eq!(s.job("j")["state"], "completed");
    s.ok(&["check"]);
}

/// The heartbeat keeps a lease alive past its TTL while the command runs,
/// and when the lease is lost (A stopped past expiry, job reclaimed) the
/// heartbeat kills A's command and A removes only its own files.
#[test]
fn heartbeat_renews_and_kills_the_command_when_the_lease_is_lost() {
    let s = Store::with_jobs(&["j", "long"]);
    let out = s.path("out");
    // Renewal: a 3 s TTL, a command running well past it.
    let r = s.run(&exec_args(
        out.to_str().unwrap(),
        &["--job", "long", "--ttl", "3s"],
        &["sh", "-c", "sleep 5; echo done"],
    ));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let evs = s.ok(&["--json", "events", "-p", "p"]);
    assert!(
        evs.lines()
            .filter(|l| l.contains("\"renewed\"") && l.contains("\"long\""))
            .count()
            >= 2,
        "{evs}"
    );

    let marks = s.path("marks");
    std::fs::create_dir(&marks).unwrap();
    let a = start_waiting_executor(&s, &out, &marks, "2s");
    wait_for("A's command to start", || marks.join("started").exists());
    let pid: u32 = read_pid(&marks.join("pid"));
    stop_outside_write(&s.db, a.id());
    wait_for("A's lease to expire", || s.job("j")["state"] == "expired");
    let b = s.run(&exec_args(
        out.to_str().unwrap(),
        &["--job", "j", "--holder", "B"],
        &["sh", "-c", "echo B"],
    ));
    assert_eq!(b.code(), 0, "{}", b.stderr());
    signal(a.id(), libc::SIGCONT);
    // A's command never gets `go`: only the heartbeat can end it.
    let r = finish(a);
    assert_eq!(r.code(), code(ErrorCode::StaleLease), "{}", r.stderr());
    let v = r.json();
    assert_eq!(v["outcome"], "lease_lost");
    assert_eq!(v["error"]["code"], "stale_lease");
    assert!(
        proc_state(pid).is_none(),
        "A's command was killed and reaped"
    );
    let a_nonce = v["nonce"].as_str().unwrap();
    let left = files_in(&out);
    assert_eq!(left.len(), 2, "{left:?}"); // "long" and B's output
    assert!(left
        .iter()
        .all(|f| !f.contains(a_nonce) && f.ends_with(".out")));
    assert_eq!(s.facts("j")["tenure.holder"], "B");
    s.ok(&["check"]);
}

/// A coordinator cancel while the command runs: the completion is refused
/// as cancelled (or the heartbeat notices first) and the files are removed.
#[test]
fn cancelled_job_output_is_discarded() {
    let s = Store::with_jobs(&["j"]);
    let out = s.path("out");
    let marks = s.path("marks");
    std::fs::create_dir(&marks).unwrap();
    let a = start_waiting_executor(&s, &out, &marks, "30s");
    wait_for("A's command to start", || marks.join("started").exists());
    s.ok(&["job", "cancel", "-p", "p", "j"]);
    std::fs::write(marks.join("go"), b"").unwrap();
    let r = finish(a);
    assert_eq!(r.code(), code(ErrorCode::Cancelled), "{}", r.stderr());
    let v = r.json();
    assert_eq!(v["error"]["code"], "cancelled");
    assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
    assert_eq!(s.job("j")["state"], "cancelled");
    s.ok(&["check"]);
}

/// The demo report's heartbeat schedule: slot jobs enqueued, slots dropped.
fn heartbeat(report: &serde_json::Value) -> (u64, u64) {
    let n = |k: &str| {
        report[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {report}"))
    };
    (n("schedule_enqueued"), n("schedule_dropped"))
}

#[test]
fn demo_runs_small_and_passes_its_checks() {
    let s = Store::new();
    let demo = |args: &[&str], db: bool| {
        let mut c = std::process::Command::new(BIN);
        c.env_remove("TENURE_DB")
            .env("TMPDIR", s.dir.path())
            .args(["--json", "demo", "--ttl", "1s"])
            .args(args);
        if db {
            c.arg("--db").arg(&s.db);
        }
        run_cmd(c, b"")
    };
    let r = demo(&["--jobs", "8", "--workers", "3"], false);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let v = r.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["violations"], 0, "{v}");
    assert_eq!(v["check"]["ok"], true);
    assert_eq!(v["check"]["violations"].as_array().unwrap().len(), 0);
    let done = v["completed"].as_u64().unwrap()
        + v["failed"].as_u64().unwrap()
        + v["cancelled"].as_u64().unwrap();
    assert_eq!(done, 8, "{v}");
    assert!(v["completed"].as_u64().unwrap() >= 1, "{v}");
    for k in [
        "reclaimed_after_expiry",
        "stale_completions_rejected",
        "throughput_per_s",
        "retried_after_failure",
        "unregistered_files",
        "released_at_stop",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
    // Every worker left stopped cleanly on the final SIGTERM (the killed
    // one may not have been replaced when the last job finished).
    assert!(v["workers_stopped"].as_u64().unwrap() >= 2, "{v}");
    // The heartbeat schedule (every second, catch-up bound 3), stepped once
    // at the end: the newest slots of the run up to the bound, the older
    // ones dropped; together every slot since it was created, which was
    // before the run began.
    let (enqueued, dropped) = heartbeat(&v);
    assert!((1..=3).contains(&enqueued), "{v}");
    assert!(dropped == 0 || enqueued == 3, "{v}");
    let elapsed = v["elapsed_s"].as_f64().unwrap();
    assert!((enqueued + dropped) as f64 >= elapsed.floor(), "{v}");
    // Without --db (and --keep) its temporary directory is removed.
    assert_eq!(files_in(s.dir.path()), Vec::<String>::new());

    // With --db the store stays and passes `check` afterwards; it holds
    // the heartbeat's slot jobs, as many as the demo reported.
    let r = demo(&["--jobs", "3", "--workers", "2"], true);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let v = r.json();
    assert_eq!(v["ok"], true);
    assert_eq!(s.json(&["check"])["ok"], true);
    let ticks = format!("{}-ticks", v["production"].as_str().unwrap());
    let list = s.json(&["schedule", "list", "-p", &ticks]);
    assert_eq!(list["schedules"][0]["name"], "heartbeat", "{list}");
    let jobs = s.json(&["jobs", "-p", &ticks]);
    let jobs = jobs["jobs"].as_array().unwrap();
    let (enqueued, dropped) = heartbeat(&v);
    assert_eq!(jobs.len() as u64, enqueued, "{jobs:?}");
    for j in jobs {
        let id = j["job"].as_str().unwrap();
        assert!(id.starts_with("heartbeat@") && id.ends_with('Z'), "{id}");
        assert_eq!(j["state"], "requested");
    }
    let events = s.ok(&["--json", "events", "-p", &ticks]);
    assert_eq!(
        events.matches("\"kind\":\"slots_dropped\"").count(),
        usize::from(dropped > 0),
        "{events}"
    );
    demo(&["--jobs", "0"], false).fails(USAGE);
}

#[test]
fn demo_says_where_to_watch_its_dashboard() {
    let s = Store::new();
    let mut c = std::process::Command::new(BIN);
    c.env_remove("TENURE_DB")
        .env("TMPDIR", s.dir.path())
        .args(["demo", "--ttl", "1s", "--jobs", "3", "--workers", "2"])
        .arg("--db")
        .arg(&s.db);
    let r = run_cmd(c, b"");
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let hint = format!(
        "watch it live: tenure serve --db {} (then open http://127.0.0.1:8425/)",
        s.db.display()
    );
    assert!(r.stderr().lines().any(|l| l == hint), "{}", r.stderr());
}

/// `GET path` on `addr`: the status and the body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut t = std::net::TcpStream::connect(addr).unwrap();
    t.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        t,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = t.read_to_string(&mut out);
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_owned())
}

#[test]
fn demo_serve_answers_while_the_demo_runs() {
    use std::io::BufRead;
    let s = Store::new();
    let mut child = std::process::Command::new(BIN)
        .env_remove("TENURE_DB")
        .env("TMPDIR", s.dir.path())
        .args([
            "--json",
            "demo",
            "--ttl",
            "1s",
            "--jobs",
            "12",
            "--workers",
            "2",
        ])
        .args(["--serve", "127.0.0.1:0", "--db"])
        .arg(&s.db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The served dashboard names its address on the demo's standard error;
    // the rest of it is drained so the demo never blocks on it.
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    let drain = std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("dashboard at http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap_or("").to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the demo's dashboard names its address");
    let (st, page) = http_get(&addr, "/");
    assert_eq!(st, 200);
    assert!(page.contains("<script src=\"/app.js\""), "{page}");
    let (st, stats) = http_get(&addr, "/api/stats");
    assert_eq!(st, 200, "{stats}");
    let stats: Value = serde_json::from_str(&stats).unwrap();
    let names: Vec<&str> = stats["productions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("demo-")), "{names:?}");
    let out = child.wait_with_output().unwrap();
    drain.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    // The dashboard stops with the demo.
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "still serving"
    );
}
