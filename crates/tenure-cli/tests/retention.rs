//! `tenure prune`, `tenure production export|delete`, `tenure events` behind
//! the history horizon and `tenure check` on a pruned store, as processes.

mod common;

use common::{code, Store, USAGE};
use serde_json::Value;
use tenure::ErrorCode;

fn complete(s: &Store, job: &str) {
    let tok = s.claim(job, "5m");
    s.ok(&[
        "complete",
        "--token-file",
        tok.to_str().unwrap(),
        "--fact",
        "k=v",
    ]);
}

#[test]
fn export_then_delete_a_finished_production() {
    let s = Store::with_jobs(&["a", "b", "open"]);
    complete(&s, "a");
    s.ok(&["job", "cancel", "-p", "p", "b"]);
    let tok = s.claim("open", "5m");
    // A live job: delete is refused and nothing changes.
    let before = s.ok(&["--json", "events"]);
    s.run(&["production", "delete", "p"])
        .fails(code(ErrorCode::ProductionLive));
    assert_eq!(s.ok(&["--json", "events"]), before);

    // Export: JSON lines, production first, payloads in base64, no secret.
    let out = s.path("p.jsonl");
    let v = s.json(&["production", "export", "p", "--out", out.to_str().unwrap()]);
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v["records"].as_u64().unwrap() as usize, lines.len());
    assert_eq!(lines[0]["record"], "production");
    let jobs: Vec<&Value> = lines.iter().filter(|l| l["record"] == "job").collect();
    assert_eq!(jobs.len(), 3);
    assert_eq!(jobs[0]["job"], "a");
    assert_eq!(jobs[0]["payload_base64"], "cGF5bG9hZCBvZiBh"); // "payload of a"
    assert!(lines
        .iter()
        .any(|l| l["record"] == "fact" && l["key"] == "k"));
    assert!(lines.iter().any(|l| l["record"] == "event"));
    let token = std::fs::read_to_string(&tok).unwrap();
    let secret = token.trim().rsplit('.').next().unwrap();
    assert!(!text.contains(secret));
    // The file is never overwritten.
    s.run(&["production", "export", "p", "--out", out.to_str().unwrap()])
        .fails(1);
    // To stdout as well.
    let stdout = s.ok(&["production", "export", "p"]);
    assert_eq!(stdout, text);

    s.ok(&["job", "cancel", "-p", "p", "open"]);
    let d = s.json(&["production", "delete", "p"]);
    assert_eq!(d["jobs"], 3);
    assert_eq!(d["facts"], 5);
    assert_eq!(
        s.json(&["production", "list"])["productions"],
        serde_json::json!([])
    );
    s.run(&["production", "delete", "p"])
        .fails(code(ErrorCode::NotFound));
}

#[test]
fn prune_ages_tailers_and_check() {
    let s = Store::with_jobs(&["a", "b"]);
    complete(&s, "a");
    s.run(&["prune"]).fails(USAGE);
    s.run(&["prune", "--events", "1.5s"]).fails(USAGE);
    // Nothing is a second old yet.
    let r = s.json(&["prune", "--events", "1s", "--jobs", "1s"]);
    assert_eq!(
        (r["jobs"].as_u64(), r["history_horizon"].as_u64()),
        (Some(0), Some(0))
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    s.run_in(&["job", "submit", "-p", "p", "c"], b"c").ok();
    let r = s.json(&["prune", "--events", "1s", "--jobs", "1s"]);
    assert_eq!(r["jobs"], 1);
    let horizon = r["history_horizon"].as_u64().unwrap();
    assert!(horizon > 0);
    // A tailer behind the horizon is told; from it, the rest follows.
    s.run(&["events"]).fails(code(ErrorCode::HistoryPruned));
    let after = horizon.to_string();
    let rest = s.ok(&["events", "--after", &after]);
    assert!(rest.contains("p/c"), "{rest}");
    // The tombstone answers a late duplicate as before.
    let v: Value = serde_json::from_str(
        s.run_in(
            &["--json", "job", "submit", "-p", "p", "a"],
            b"payload of a",
        )
        .ok()
        .trim(),
    )
    .unwrap();
    assert_eq!(v["result"], "existing", "{v}");
    // Check says where it started.
    let c = s.json(&["check"]);
    assert_eq!(c["ok"], true);
    assert_eq!(c["history_horizon"].as_u64(), Some(horizon));
    assert!(s
        .ok(&["check"])
        .contains(&format!("events after {horizon}")));
}
