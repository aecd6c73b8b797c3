//! `tenure stats`: the core's statistics as text and JSON, one production
//! or all, `--watch`; the same figures as a full listing of the store; no
//! payload or token in any output; bad input is a typed error.

mod common;

use common::*;
use tenure::ErrorCode;

#[test]
fn stats_match_the_listing_and_carry_no_secret() {
    let s = Store::with_jobs(&["a", "b", "c", "d"]);
    s.ok(&["production", "create", "q"]);
    let tok = s.claim("a", "60s");
    s.ok(&["complete", "--token-file", tok.to_str().unwrap()]);
    let held = s.claim("b", "60s");
    s.ok(&["job", "cancel", "-p", "p", "c"]);
    let v = s.json(&["stats", "-p", "p", "--horizon", "90s", "--window", "10m"]);
    let ps = v["productions"].as_array().unwrap();
    assert_eq!(ps.len(), 1);
    let p = &ps[0];
    assert_eq!(p["name"], "p");
    let jobs = &p["jobs"];
    let listed = |state: &str| {
        s.json(&["jobs", "-p", "p", "--state", state])["jobs"]
            .as_array()
            .unwrap()
            .len() as u64
    };
    assert_eq!(jobs["waiting_due"], listed("requested"));
    assert_eq!(jobs["claimed_live"], listed("claimed"));
    assert_eq!(jobs["completed"], listed("completed"));
    assert_eq!(jobs["cancelled"], listed("cancelled"));
    assert_eq!(jobs["claimed_live"], 1);
    assert_eq!(p["expiring_within"], 1);
    assert_eq!(p["max_live_attempts"], 1);
    assert_eq!(p["flow"]["claims"], 2);
    assert_eq!(p["flow"]["completions"], 1);
    assert_eq!(p["flow"]["run"]["count"], 1);
    assert_eq!(p["flow"]["window_us"], 600_000_000u64);
    let all = s.json(&["stats"]);
    assert_eq!(all["productions"].as_array().unwrap().len(), 2);
    let text = s.ok(&["stats"]);
    assert!(text.contains("waiting   due 1 later 0"), "{text}");
    // No gate set: the gates line and fields say so.
    assert!(
        text.contains("  gates     paused no, concurrency limit none, rate limit none\n"),
        "{text}"
    );
    assert_eq!(
        p["gates"],
        serde_json::json!({"paused_us": null, "concurrency": null, "rate": null})
    );
    let token = std::fs::read_to_string(&held).unwrap();
    for out in [text, all.to_string()] {
        assert!(!out.contains("payload of"), "{out}");
        assert!(!out.contains(token.trim()), "{out}");
    }
}

#[test]
fn stats_watch_prints_again() {
    let s = Store::with_jobs(&["a"]);
    let out = s.ok(&[
        "--json",
        "stats",
        "--watch",
        "--interval",
        "10ms",
        "--count",
        "3",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["productions"][0]["jobs"]["waiting_due"], 1);
    }
}

#[test]
fn stats_bad_input_is_a_typed_error() {
    let s = Store::with_jobs(&["a"]);
    assert_eq!(
        s.run(&["stats", "-p", "nope"]).code(),
        code(ErrorCode::NotFound)
    );
    assert_eq!(
        s.run(&["stats", "--window", "40d"]).code(),
        code(ErrorCode::InvalidDuration)
    );
    assert_eq!(
        s.run(&["stats", "--horizon", "soon"]).code(),
        code(ErrorCode::InvalidDuration)
    );
}
