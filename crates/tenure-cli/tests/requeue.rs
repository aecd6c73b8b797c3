//! `tenure job requeue`, the progress checkpoint a renewal stores
//! (`renew --progress-file`) in `job show`, and `tenure work` across
//! several productions.

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
fn a_renewal_stores_a_progress_checkpoint_that_job_show_gives() {
    let s = Store::with_jobs(&["j"]);
    let tok = s.claim("j", "5m");
    let tok = tok.to_str().unwrap();
    let progress = s.path("progress");
    std::fs::write(&progress, b"offset=7").unwrap();
    let progress = progress.to_str().unwrap();
    let text = s.ok(&[
        "renew",
        "--token-file",
        tok,
        "--ttl",
        "10m",
        "--progress-file",
        progress,
    ]);
    assert!(
        text.contains("until")
            && text
                .trim_end()
                .ends_with("with a 8-byte progress checkpoint"),
        "{text}"
    );
    let j = s.job("j");
    assert_eq!(j["progress_hex"], "6f66667365743d37");
    let shown = s.ok(&["job", "show", "-p", "p", "j"]);
    assert!(
        shown.contains("progress   8 bytes 6f66667365743d37"),
        "{shown}"
    );
    let expires = j["expires_us"].as_i64().unwrap();

    // From stdin, in JSON.
    let v = s
        .run_in(
            &[
                "--json",
                "renew",
                "--token-file",
                tok,
                "--ttl",
                "20m",
                "--progress-file",
                "-",
            ],
            b"offset=9",
        )
        .json();
    assert_eq!(v["progress_bytes"], 8);
    assert_eq!(s.job("j")["progress_hex"], "6f66667365743d39");
    let renewed = s.job("j")["expires_us"].as_i64().unwrap();
    assert!(renewed > expires);

    // Refusals change nothing: an oversized value, a missing file, token
    // and checkpoint both from stdin.
    let big = s.path("big");
    std::fs::write(&big, vec![b'x'; 4097]).unwrap();
    s.run(&[
        "renew",
        "--token-file",
        tok,
        "--ttl",
        "30m",
        "--progress-file",
        big.to_str().unwrap(),
    ])
    .fails(code(ErrorCode::InvalidArgument));
    s.run(&[
        "renew",
        "--token-file",
        tok,
        "--ttl",
        "30m",
        "--progress-file",
        s.path("missing").to_str().unwrap(),
    ])
    .fails(1);
    let token = std::fs::read(tok).unwrap();
    s.run_in(
        &[
            "renew",
            "--token-file",
            "-",
            "--ttl",
            "30m",
            "--progress-file",
            "-",
        ],
        &token,
    )
    .fails(USAGE);
    let j = s.job("j");
    assert_eq!(j["progress_hex"], "6f66667365743d39");
    assert_eq!(j["expires_us"].as_i64().unwrap(), renewed);
    // A checkpoint survives the lease: the next attempt's view still has it.
    s.ok(&["release", "--token-file", tok]);
    let shown = s.ok(&["job", "show", "-p", "p", "j"]);
    assert!(
        shown.contains("progress   8 bytes 6f66667365743d39"),
        "{shown}"
    );
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
