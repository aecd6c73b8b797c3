//! The peer row of `cargo xtask bench --backend postgres`: tenure's Python
//! binding against procrastinate (a PostgreSQL job queue for Python), the
//! same workload on the same throwaway server, each run in a fresh database
//! of its own. `bench/pg_peer.py` holds the workload and documents exactly
//! what each side does per job; this module prepares its Python, runs it and
//! appends its rows to the PostgreSQL report: the drain one job at a time
//! and with tenure's batched calls (`claim_next_many` + `complete_many`, 16
//! a call), and the bulk submission (`submit_many` vs `batch_defer_async`,
//! [`enqueue`]: alternating pairs, the median of the per-pair ratios).
//!
//! Python: `<root>/.venv` (created as `cargo xtask python` does), with a
//! release build of the tenure wheel and the pinned peer packages installed
//! into it. `cargo xtask python` reinstalls its own (debug) wheel there
//! with `--force-reinstall`, so sharing the venv changes nothing for it.
//!
//! The peer is procrastinate, a Python job queue that keeps its jobs in
//! PostgreSQL; it runs as it is on PostgreSQL 15.

use crate::util::{output, parse_json, root, run, step, Result};
use serde_json::Value;
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

/// `.venv` with the release tenure wheel and the peer (prepared once per
/// xtask run); returns its python.
fn python() -> Result<std::path::PathBuf> {
    static PY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    if let Some(py) = PY.get() {
        return Ok(py.clone());
    }
    let (py, _) = crate::python::install_wheel(true)?;
    step("PostgreSQL peer: pip install procrastinate into .venv");
    run(Command::new(&py)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(PEER))?;
    Ok(PY.get_or_init(|| py).clone())
}

/// Run `bench/pg_peer.py` with `args` (after the step line `what`); returns
/// its `BENCH` rows.
fn peer_rows(what: &str, args: &[&str]) -> Result<Vec<Value>> {
    let py = python()?;
    step(what);
    let out = output(
        Command::new(&py)
            .arg(root().join("bench/pg_peer.py"))
            .args(args),
    )?;
    out.lines()
        .filter_map(|l| l.strip_prefix("BENCH "))
        .map(|l| parse_json(l, "bench/pg_peer.py BENCH line"))
        .collect()
}

/// A field of a `BENCH {json}` row as report text: a string as it is, any
/// other value as JSON.
fn field(row: &Value, key: &str) -> String {
    match &row[key] {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Run `bench/pg_peer.py` on `server` (smoke: 200 jobs, one run; full: 5000
/// jobs, median of three runs; W = 1 and 4 worker processes) and append a
/// markdown table to `md` and every `BENCH` line to `json`.
pub fn bench(
    server: &crate::pg::Server,
    smoke: bool,
    md: &mut String,
    json: &mut Vec<Value>,
) -> Result {
    let jobs = if smoke { "200" } else { "5000" };
    let runs = if smoke { "1" } else { "3" };
    let rows = peer_rows(
        "PostgreSQL peer: tenure (Python) vs procrastinate, drain N jobs with W processes",
        &[
            "bench",
            "--url",
            &server.url,
            "--jobs",
            jobs,
            "--workers",
            "1,4",
            "--runs",
            runs,
        ],
    )?;
    let Some(first) = rows.iter().find(|r| r["workload"] == "pg-peer-summary") else {
        return Err("no peer summary rows in the output".into());
    };
    let summaries: Vec<&Value> = rows
        .iter()
        .filter(|r| r["workload"] == "pg-peer-summary")
        .collect();
    md.push_str(&format!(
        "\n| Peer row: {} no-op jobs enqueued, then drained by W Python processes (median of {} \
         runs, fresh database each) | tenure {} | procrastinate {} | tenure / procrastinate |\n\
         |---|---:|---:|---:|\n",
        field(first, "jobs"),
        field(first, "runs"),
        field(first, "tenure_version"),
        field(first, "procrastinate_version"),
    ));
    for s in &summaries {
        md.push_str(&format!(
            "| drain, W = {}, one job at a time | {} jobs/s | {} jobs/s | {} |\n",
            field(s, "workers"),
            field(s, "tenure_jobs_per_s"),
            field(s, "procrastinate_jobs_per_s"),
            field(s, "ratio"),
        ));
        md.push_str(&format!(
            "| drain, W = {}, tenure batched ({} a call; {}x tenure one at a time) | {} jobs/s | \
             {} jobs/s | {} |\n",
            field(s, "workers"),
            field(s, "batch"),
            field(s, "batch_vs_single"),
            field(s, "tenure_batch_jobs_per_s"),
            field(s, "procrastinate_jobs_per_s"),
            field(s, "batch_ratio"),
        ));
    }
    md.push_str(
        "\nPer job: tenure `claim_next` (lease, 60 s TTL) + `complete()` with no facts; \
         batched: `claim_next_many(..., 16)` + `complete_many` of those leases; \
         procrastinate worker (`concurrency=1`, `wait=False`, `listen_notify=False`) \
         `procrastinate_fetch_job` + no-op async task + `procrastinate_finish_job` (row kept). \
         Details: `bench/pg_peer.py`.\n",
    );
    json.extend(rows);
    Ok(())
}

/// The bulk submission on `server`: `bench/pg_peer.py enqueue` (smoke: 2000
/// jobs, 3 pairs; full: 20 000 jobs, 7 pairs; chunks of 1000, the two
/// systems' chunks in turn), one table
/// row per pair and the summary (the median of the per-pair ratios and
/// their spread) appended to `md`, every `BENCH` line to `json`.
pub fn enqueue(
    server: &crate::pg::Server,
    smoke: bool,
    md: &mut String,
    json: &mut Vec<Value>,
) -> Result {
    let (jobs, pairs) = if smoke { ("2000", "3") } else { ("20000", "7") };
    let rows = peer_rows(
        "PostgreSQL peer: bulk submission, tenure submit_many vs procrastinate batch_defer, in pairs",
        &["enqueue", "--url", &server.url, "--jobs", jobs, "--pairs", pairs],
    )?;
    md.push_str(&enqueue_table(&rows)?);
    json.extend(rows);
    Ok(())
}

/// The bulk-submission table of `pg_peer.py enqueue`'s rows.
fn enqueue_table(rows: &[Value]) -> Result<String> {
    let Some(summary) = rows.iter().find(|r| r["workload"] == "pg-enqueue-summary") else {
        return Err("no pg-enqueue-summary row in the output".into());
    };
    let mut md = format!(
        "\n| Bulk submission: {} jobs in chunks of {} per system and pair, the two systems' \
         chunks in turn, a fresh database each | tenure {} `submit_many` | procrastinate {} \
         `batch_defer_async` | tenure / procrastinate |\n|---|---:|---:|---:|\n",
        field(summary, "jobs"),
        field(summary, "chunk"),
        field(summary, "tenure_version"),
        field(summary, "procrastinate_version"),
    );
    for r in rows.iter().filter(|r| r["workload"] == "pg-enqueue") {
        md.push_str(&format!(
            "| pair {} | {} jobs/s | {} jobs/s | {} |\n",
            field(r, "pair"),
            field(r, "tenure_jobs_per_s"),
            field(r, "procrastinate_jobs_per_s"),
            field(r, "ratio"),
        ));
    }
    md.push_str(&format!(
        "| median of {} pairs (ratio: median of the per-pair ratios, spread {} – {}) | {} jobs/s \
         | {} jobs/s | **{}** |\n",
        field(summary, "pairs"),
        field(summary, "ratio_min"),
        field(summary, "ratio_max"),
        field(summary, "tenure_jobs_per_s"),
        field(summary, "procrastinate_jobs_per_s"),
        field(summary, "ratio"),
    ));
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_shows_strings_bare_and_other_values_as_json() {
        let row = parse_json(
            r#"{"workload":"pg-peer-summary","workers":4,"ratio":1.25,"tenure_version":"0.1.0"}"#,
            "row",
        )
        .unwrap();
        assert_eq!(field(&row, "workload"), "pg-peer-summary");
        assert_eq!(field(&row, "workers"), "4");
        assert_eq!(field(&row, "ratio"), "1.25");
        assert_eq!(field(&row, "tenure_version"), "0.1.0");
        assert_eq!(field(&row, "absent"), "null");
    }

    #[test]
    fn the_enqueue_table_shows_every_pair_and_the_median_ratio_with_its_spread() {
        let j = |s: &str| parse_json(s, "row").unwrap();
        let rows = [
            j(
                r#"{"workload":"pg-enqueue","pair":0,"tenure_jobs_per_s":200.0,"procrastinate_jobs_per_s":100.0,"ratio":2.0}"#,
            ),
            j(
                r#"{"workload":"pg-enqueue","pair":1,"tenure_jobs_per_s":90.0,"procrastinate_jobs_per_s":100.0,"ratio":0.9}"#,
            ),
            j(
                r#"{"workload":"pg-enqueue-summary","jobs":2000,"chunk":1000,"pairs":2,"ratio":1.45,"ratio_min":0.9,"ratio_max":2.0,"tenure_jobs_per_s":145.0,"procrastinate_jobs_per_s":100.0,"tenure_version":"0.1.0","procrastinate_version":"3.10.0"}"#,
            ),
        ];
        let md = enqueue_table(&rows).unwrap();
        assert!(
            md.contains("| pair 0 | 200.0 jobs/s | 100.0 jobs/s | 2.0 |"),
            "{md}"
        );
        assert!(md.contains("| pair 1 | 90.0 jobs/s"), "{md}");
        assert!(
            md.contains("median of 2 pairs (ratio: median of the per-pair ratios, spread 0.9 – 2.0) | 145.0 jobs/s | 100.0 jobs/s | **1.45** |"),
            "{md}"
        );
        assert!(enqueue_table(&rows[..2]).is_err());
    }
}
