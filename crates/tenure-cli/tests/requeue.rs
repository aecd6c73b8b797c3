//! `tenure job requeue`, the progress checkpoint in `job show`, and
//! `tenure work` across several productions.

mod common;

use common::*;
use tenure::ErrorCode;

fn fail_permanently(s: &Store, job: &str) {
    let tok = s.claim(job, "5m");
    s.ok(&[
        "fail",
        "--token-file",
        tok.to_str().unwrap(),
        "--permanent",
        "--reason",
        "bad input",
    ]);
}

#[test]
fn requeue_one_job_or_all_in_batches() {
    let s = Store::with_jobs(&["a", "b", "c", "d", "live"]);
    for j in ["a", "b", "c"] {
        fail_permanently(&s, j);
    }
    s.ok(&["job", "cancel", "-p", "p", "d"]);
    let v = s.json(&[
        "job",
        "requeue",
        "-p",
        "p",
        "a",
        "--extra-attempts",
        "1",
        "--delay",
        "10m",
    ]);
    assert_eq!(v["result"], "requeued");
    let j = s.job("a");
    assert_eq!(j["state"], "requested");
    assert_eq!(
        (j["attempts"].as_u64(), j["max_attempts"].as_u64()),
        (Some(2), Some(3))
    );
    assert!(j["due_us"].is_i64(), "{j}");
    assert!(j["progress_hex"].is_null());
    let v = s.json(&["job", "requeue", "-p", "p", "--all", "--limit", "2"]);
    assert_eq!(
        (v["requeued"].as_u64(), v["more"].as_bool()),
        (Some(2), Some(true))
    );
    let text = s.ok(&["job", "requeue", "-p", "p", "--all", "--limit", "2"]);
    assert_eq!(text.trim(), "requeued 1 jobs of p");
    assert_eq!(s.job("d")["state"], "requested");
    // Refusals: a live job, bad input, unknown names; nothing changes.
    s.run(&["job", "requeue", "-p", "p", "live"])
        .fails(code(ErrorCode::JobLive));
    s.run(&["job", "requeue", "-p", "p", "b", "--extra-attempts", "0"])
        .fails(code(ErrorCode::InvalidArgument));
    s.run(&["job", "requeue", "-p", "p", "--all", "--limit", "0"])
        .fails(code(ErrorCode::InvalidArgument));
    s.run(&["job", "requeue", "-p", "p", "nope"])
        .fails(code(ErrorCode::NotFound));
    s.run(&["job", "requeue", "-p", "nope", "a"])
        .fails(code(ErrorCode::NotFound));
    s.run(&["job", "requeue", "-p", "p"]).fails(USAGE);
    s.run(&["job", "requeue", "-p", "p", "a", "--all"])
        .fails(USAGE);
    s.run(&["job", "requeue", "-p", "p", "a", "--limit", "3"])
        .fails(USAGE);
    let text = s.ok(&["job", "show", "-p", "p", "a"]);
    assert!(text.contains("progress   -"), "{text}");
    s.ok(&["check"]);
}

#[test]
fn work_claims_across_productions() {
    let s = Store::new();
    for (p, n) in [("big", 6), ("small", 2)] {
        s.ok(&["production", "create", p]);
        for i in 0..n {
            s.run_in(&["job", "submit", "-p", p, &format!("{p}{i}")], b"")
                .ok();
        }
    }
    let out = s.path("out");
    let r = s.run(&[
        "--json",
        "work",
        "-p",
        "big",
        "-p",
        "small",
        "--out-dir",
        out.to_str().unwrap(),
        "--max-jobs",
        "4",
        "--",
        "true",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let served: Vec<String> = r
        .stdout()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["production"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(served, ["big", "small", "big", "small"], "{}", r.stdout());
    s.run(&["work", "-p", "big,big", "--", "true"])
        .fails(code(ErrorCode::InvalidArgument));
    s.run(&["work", "-p", "big,nope", "--", "true"])
        .fails(code(ErrorCode::NotFound));
}
