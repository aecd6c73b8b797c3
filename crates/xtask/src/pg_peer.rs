//! The peer row of `cargo xtask bench --backend postgres`: tenure's Python
//! binding against procrastinate (a PostgreSQL job queue for Python), the
//! same workload on the same throwaway server, each run in a fresh database
//! of its own. `bench/pg_peer.py` holds the workload and documents exactly
//! what each side does per job; this module prepares its Python, runs it and
//! appends its rows to the PostgreSQL report.
//!
//! Python: `<root>/.venv` (created as `cargo xtask python` does), with a
//! release build of the tenure wheel and the pinned peer packages installed
//! into it. `cargo xtask python` reinstalls its own (debug) wheel there
//! with `--force-reinstall`, so sharing the venv changes nothing for it.
//!
//! Decision (the issue names pgqueuer or procrastinate): procrastinate, the
//! one the brief prefers; it works as it is on PostgreSQL 15.

use crate::util::{output, root, run, step, Result};
use std::process::Command;

/// The peer and everything it pulls in, pinned.
const PEER: &[&str] = &[
    "procrastinate==3.10.0",
    "psycopg==3.3.9",
    "psycopg-binary==3.3.9",
    "psycopg-pool==3.3.3",
    "asgiref==3.13.0",
    "attrs==26.1.0",
    "croniter==7.0.0",
    "python-dateutil==4.0.0",
    "tzdata==2026.6",
];

/// `.venv` with the release tenure wheel and the peer; returns its python.
fn python() -> Result<std::path::PathBuf> {
    let (py, _) = crate::python::install_wheel(true)?;
    step("PostgreSQL peer: pip install procrastinate into .venv");
    run(Command::new(&py)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(PEER))?;
    Ok(py)
}

/// A field of a flat `BENCH {json}` line, as its raw text (strings keep quotes).
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let key = format!("\"{key}\":");
    line.find(&key)
        .map(|i| line[i + key.len()..].split([',', '}']).next().unwrap_or(""))
        .unwrap_or("")
}

/// Run `bench/pg_peer.py` on `server` (smoke: 200 jobs, one run; full: 5000
/// jobs, median of three runs; W = 1 and 4 worker processes) and append a
/// markdown table to `md` and every `BENCH` line to `json`.
pub fn bench(
    server: &crate::pg::Server,
    smoke: bool,
    md: &mut String,
    json: &mut Vec<String>,
) -> Result {
    let py = python()?;
    step("PostgreSQL peer: tenure (Python) vs procrastinate, drain N jobs with W processes");
    let jobs = if smoke { "200" } else { "5000" };
    let out = output(
        Command::new(&py)
            .arg(root().join("bench/pg_peer.py"))
            .args(["bench", "--url", &server.url, "--jobs", jobs])
            .args(["--workers", "1,4", "--runs", if smoke { "1" } else { "3" }]),
    )?;
    let lines: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("BENCH "))
        .collect();
    let summaries: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| field(l, "workload") == "\"pg-peer-summary\"")
        .collect();
    let Some(first) = summaries.first() else {
        return Err(format!("no peer summary rows in the output:\n{out}"));
    };
    md.push_str(&format!(
        "\n| Peer row: {} no-op jobs enqueued, then drained by W Python processes, one job at a \
         time (median of {} runs, fresh database each) | tenure {} | procrastinate {} | \
         tenure / procrastinate |\n|---|---:|---:|---:|\n",
        field(first, "jobs"),
        field(first, "runs"),
        field(first, "tenure_version").trim_matches('"'),
        field(first, "procrastinate_version").trim_matches('"'),
    ));
    for s in &summaries {
        md.push_str(&format!(
            "| drain, W = {} | {} jobs/s | {} jobs/s | {} |\n",
            field(s, "workers"),
            field(s, "tenure_jobs_per_s"),
            field(s, "procrastinate_jobs_per_s"),
            field(s, "ratio"),
        ));
    }
    md.push_str(&format!(
        "| enqueue (`submit_many` / `batch_defer_async`, chunks of 1000; not part of the drain) | {} \
         jobs/s | {} jobs/s | {} |\n",
        field(first, "tenure_enqueue_per_s"),
        field(first, "procrastinate_enqueue_per_s"),
        field(first, "enqueue_ratio"),
    ));
    md.push_str(
        "\nPer job: tenure `claim_next` (lease, 60 s TTL) + `complete()` with no facts; \
         procrastinate worker (`concurrency=1`, `wait=False`, `listen_notify=False`) \
         `procrastinate_fetch_job` + no-op async task + `procrastinate_finish_job` (row kept). \
         Details: `bench/pg_peer.py`.\n",
    );
    json.extend(lines.into_iter().map(str::to_owned));
    Ok(())
}
