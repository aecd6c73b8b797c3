//! `tenure schedule ...` as processes: create, list, pause, resume,
//! update, delete, one step and the loop, bad definitions as exit codes
//! (docs/cli.md, "Schedules").

mod common;

use common::{code, Store, USAGE};
use tenure::ErrorCode;

#[test]
fn schedules_are_created_listed_stepped_and_deleted() {
    let s = Store::with_jobs(&[]);
    let v = s.json(&[
        "schedule",
        "create",
        "-p",
        "p",
        "tick",
        "--every",
        "1s",
        "--payload",
        "hi",
    ]);
    assert_eq!(v["created"], true);
    let v = s.json(&[
        "schedule",
        "create",
        "-p",
        "p",
        "tick",
        "--every",
        "1s",
        "--payload",
        "hi",
    ]);
    assert_eq!(v["created"], false);
    s.run(&["schedule", "create", "-p", "p", "tick", "--every", "2s"])
        .fails(code(ErrorCode::Conflict));
    let v = s.json(&["schedule", "list"]);
    let list = v["schedules"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["name"], "tick");
    assert_eq!(list[0]["cadence"], "every 1s");
    assert_eq!(list[0]["payload_len"], 2);
    // Steps until a slot is due: one job, named by its slot.
    let mut job = None;
    for _ in 0..30 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let v = s.json(&["schedule", "run", "--once"]);
        if let Some(e) = v["enqueued"].as_array().unwrap().first() {
            job = Some(e["job"].as_str().unwrap().to_owned());
            break;
        }
    }
    let job = job.expect("a slot was enqueued");
    assert!(job.starts_with("tick@") && job.ends_with('Z'), "{job}");
    assert_eq!(s.job(&job)["state"], "requested");
    s.json(&["schedule", "pause", "-p", "p", "tick"]);
    assert_eq!(
        s.json(&["schedule", "list", "-p", "p"])["schedules"][0]["paused"],
        true
    );
    s.json(&["schedule", "resume", "-p", "p", "tick"]);
    s.json(&[
        "schedule",
        "update",
        "-p",
        "p",
        "tick",
        "--cron",
        "0 2 * * *",
    ]);
    assert_eq!(
        s.json(&["schedule", "list"])["schedules"][0]["cadence"],
        "cron 0 2 * * *"
    );
    assert!(s.json(&["schedule", "list"])["schedules"][0]["tz"].is_null());
    s.json(&[
        "schedule",
        "update",
        "-p",
        "p",
        "tick",
        "--cron",
        "0 2 * * *",
        "--tz",
        "Europe/Paris",
    ]);
    let v = s.json(&["schedule", "list"]);
    assert_eq!(v["schedules"][0]["cadence"], "cron 0 2 * * * Europe/Paris");
    assert_eq!(v["schedules"][0]["tz"], "Europe/Paris");
    let text = s.ok(&["schedule", "list"]);
    assert!(text.contains("cron 0 2 * * * Europe/Paris"), "{text}");
    s.run(&[
        "schedule",
        "update",
        "-p",
        "p",
        "tick",
        "--cron",
        "0 2 * * *",
        "--tz",
        "Mars/Olympus",
    ])
    .fails(code(ErrorCode::InvalidArgument));
    assert_eq!(
        s.json(&["schedule", "list"])["schedules"][0]["tz"],
        "Europe/Paris"
    );
    assert_eq!(
        s.json(&["schedule", "delete", "-p", "p", "tick"])["deleted"],
        true
    );
    assert_eq!(
        s.json(&["schedule", "delete", "-p", "p", "tick"])["deleted"],
        false
    );
}

#[test]
fn bad_schedule_definitions_exit_with_their_codes_and_change_nothing() {
    let s = Store::with_jobs(&[]);
    let bad = |args: &[&str], want: i32| {
        let mut a = vec!["schedule", "create", "-p", "p", "s"];
        a.extend_from_slice(args);
        s.run(&a).fails(want);
    };
    bad(&["--cron", "61 * * * *"], code(ErrorCode::InvalidArgument));
    bad(&["--cron", "* * * * * *"], code(ErrorCode::InvalidArgument));
    bad(&["--every", "0s"], code(ErrorCode::InvalidDuration));
    bad(&["--every", "1500ms"], code(ErrorCode::InvalidDuration));
    bad(&["--every", "9000h"], code(ErrorCode::InvalidDuration));
    bad(
        &["--every", "1s", "--catch-up", "0"],
        code(ErrorCode::InvalidArgument),
    );
    bad(
        &["--every", "1s", "--catch-up", "1001"],
        code(ErrorCode::InvalidArgument),
    );
    bad(
        &["--every", "1s", "--overlap", "maybe"],
        code(ErrorCode::InvalidArgument),
    );
    bad(&[], USAGE);
    bad(&["--every", "1s", "--cron", "* * * * *"], USAGE);
    bad(
        &["--cron", "0 2 * * *", "--tz", "Europe/Nowhere"],
        code(ErrorCode::InvalidArgument),
    );
    bad(
        &["--cron", "0 2 * * *", "--tz", "europe/paris"],
        code(ErrorCode::InvalidArgument),
    );
    bad(&["--every", "1s", "--tz", "Europe/Paris"], USAGE);
    s.run(&["schedule", "pause", "-p", "p", "s"])
        .fails(code(ErrorCode::NotFound));
    assert!(s.json(&["schedule", "list"])["schedules"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn the_loop_runs_until_sigterm() {
    let s = Store::with_jobs(&[]);
    s.json(&["schedule", "create", "-p", "p", "sec", "--every", "1s"]);
    let child = s
        .cmd(&["--json", "schedule", "run"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    // SAFETY: signalling a child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty(), "{text}");
    let jobs: Vec<&str> = lines
        .iter()
        .flat_map(|l| l["enqueued"].as_array().unwrap())
        .map(|e| e["job"].as_str().unwrap())
        .collect();
    let mut unique = jobs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), jobs.len());
}

#[test]
fn work_with_schedules_enqueues_the_slots_and_runs_them() {
    let s = Store::with_jobs(&[]);
    s.json(&[
        "schedule",
        "create",
        "-p",
        "p",
        "sec",
        "--every",
        "1s",
        "--payload",
        "tick",
    ]);
    let out = s.path("out");
    // No job exists when it starts: the three it runs are slot jobs its
    // own scheduler loop enqueues, one a second.
    let w = s
        .cmd(&common::work_args(
            &out,
            &["--schedules", "--ttl", "30s", "--max-jobs", "3"],
            &["cat"],
        ))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let id = w.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let t = std::time::Instant::now();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if t.elapsed() > std::time::Duration::from_secs(60) {
                    // SAFETY: signalling a child this test started.
                    unsafe { libc::kill(id as i32, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
    };
    let r = common::Out(w.wait_with_output().unwrap());
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    watchdog.join().unwrap();
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let reports: Vec<serde_json::Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 3, "{}", r.stdout());
    let mut ran = Vec::new();
    for v in &reports {
        assert_eq!(v["outcome"], "completed", "{v}");
        let job = v["job"].as_str().unwrap().to_owned();
        assert!(job.starts_with("sec@") && job.ends_with('Z'), "{job}");
        assert_eq!(s.job(&job)["state"], "completed");
        let body = std::fs::read(&s.facts(&job)["tenure.exec.output"]).unwrap();
        assert_eq!(body, b"tick");
        ran.push(job);
    }
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), 3);
    // Every job of the production is a slot job its loop enqueued once.
    let events = s.ok(&["--json", "events", "-p", "p"]);
    let submitted: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == "submitted")
        .collect();
    assert!(submitted.len() >= 3, "{events}");
    let mut ids: Vec<&str> = submitted
        .iter()
        .map(|e| e["job"].as_str().unwrap())
        .collect();
    assert!(ids.iter().all(|j| j.starts_with("sec@")), "{ids:?}");
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a slot enqueued twice");
    s.ok(&["check"]);
}
