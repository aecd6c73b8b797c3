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
//!
//! [`js_peers`] puts tenure beside graphile-worker (the target) and pg-boss
//! (context), Node job queues on PostgreSQL: `npm ci` of `bench/js-peers`
//! (its committed `package-lock.json` pins both and everything they pull
//! in; `node_modules` is git-ignored), then `bench/pg_peer.py js-peers`
//! runs the drains, the bulk enqueue and the wake latency round by round,
//! the systems alternating, and [`js_table`] turns its rows into the
//! report's table with the targets.

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

/// The folder of the Node peers (`package.json`, `package-lock.json`,
/// `peers.mjs`).
fn js_dir() -> std::path::PathBuf {
    root().join("bench/js-peers")
}

/// `npm ci` of the Node peers from the committed lock file (once per xtask
/// run); it writes only the git-ignored `node_modules`.
fn npm_ci() -> Result {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    step("PostgreSQL peers: npm ci graphile-worker and pg-boss (bench/js-peers/package-lock.json)");
    run(Command::new("npm")
        .arg("ci")
        .arg("--prefix")
        .arg(js_dir())
        .args(["--no-audit", "--no-fund", "--loglevel=error"]))?;
    DONE.get_or_init(|| ());
    Ok(())
}

/// The sizes of the Node peers' rows: backlog per drain, bulk enqueue
/// size, wake-ups measured, rounds.
fn js_sizes(smoke: bool) -> [&'static str; 4] {
    if smoke {
        ["200", "2000", "20", "1"]
    } else {
        ["5000", "20000", "200", "3"]
    }
}

/// tenure beside graphile-worker and pg-boss on `server` (`bench/pg_peer.py
/// js-peers`, sizes of [`js_sizes`]): the table of [`js_table`] appended to
/// `md`, every `BENCH` line to `json`.
pub fn js_peers(
    server: &crate::pg::Server,
    smoke: bool,
    md: &mut String,
    json: &mut Vec<Value>,
) -> Result {
    npm_ci()?;
    let [jobs, enqueue, wake, rounds] = js_sizes(smoke);
    let dir = js_dir();
    let pg_bin = crate::pg::find_bin("pgbench")
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .ok_or("pgbench not found (the floor rows run it)")?;
    let rows = peer_rows(
        "PostgreSQL peers: tenure vs graphile-worker and pg-boss, alternating rounds",
        &[
            "js-peers",
            "--url",
            &server.url,
            "--node-dir",
            &dir.to_string_lossy(),
            "--pg-bin",
            &pg_bin.to_string_lossy(),
            "--jobs",
            jobs,
            "--enqueue-jobs",
            enqueue,
            "--wake-samples",
            wake,
            "--rounds",
            rounds,
        ],
    )?;
    let summaries = js_summaries(&rows);
    md.push_str(&js_table(&summaries)?);
    let floors = floor_summaries(&rows);
    md.push_str(&floor_table(&floors)?);
    json.extend(rows);
    json.extend(summaries);
    json.extend(floors);
    Ok(())
}

/// The systems of the Node peers' rows, tenure first.
const JS_SYSTEMS: &[&str] = &["tenure", "graphile", "pgboss"];

/// The median of `v` (the mean of the middle two for an even count); `None`
/// when empty.
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// `x` rounded to `places` decimals.
fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// The summary of `pg_peer.py js-peers`'s `js-peer` run rows, one
/// `js-peer-summary` object per (kind, workers) of [`JS_ROWS`] that ran:
/// each system's median figure (`<system>_jobs_per_s`, or for `wake`
/// `<system>_p50_ms` and `<system>_p95_ms`), its version, and per peer the
/// median of the per-round ratios tenure / peer of that figure
/// (`ratio_<peer>`, with `ratio_<peer>_min` and `_max`); a round missing
/// either system gives no ratio.
pub(crate) fn js_summaries(rows: &[Value]) -> Vec<Value> {
    let tenure_version = rows
        .iter()
        .find(|r| r["workload"] == "js-peer-versions")
        .map(|r| r["tenure"].clone())
        .unwrap_or(Value::Null);
    let mut out = Vec::new();
    for (kind, workers, _) in JS_ROWS {
        let runs = runs_of(rows, kind, *workers);
        let Some(first) = runs.first() else {
            continue;
        };
        let metric = if *kind == "wake" {
            "p50_ms"
        } else {
            "jobs_per_s"
        };
        let places = if *kind == "wake" { 3 } else { 1 };
        let rounds = rounds_of(&runs);
        let figure = |system: &str, round: u64| figure_of(&runs, system, round, metric);
        let mut s = serde_json::json!({
            "workload": "js-peer-summary",
            "kind": kind,
            "workers": workers,
            "jobs": first["jobs"],
            "rounds": rounds.len(),
            "metric": metric,
            "tenure_version": tenure_version,
        });
        for system in JS_SYSTEMS {
            let mine: Vec<&&Value> = runs.iter().filter(|r| r["system"] == *system).collect();
            let Some(m) = median(mine.iter().filter_map(|r| r[metric].as_f64()).collect()) else {
                continue;
            };
            s[format!("{system}_{metric}")] = round(m, places).into();
            put_server_cpu(&mut s, system, &mine);
            if *kind == "wake" {
                if let Some(p95) =
                    median(mine.iter().filter_map(|r| r["p95_ms"].as_f64()).collect())
                {
                    s[format!("{system}_p95_ms")] = round(p95, 3).into();
                }
            }
            if let Some(v) = mine.iter().find_map(|r| r.get("version")) {
                s[format!("{system}_version")] = v.clone();
            }
        }
        for peer in &JS_SYSTEMS[1..] {
            put_ratio(&mut s, &format!("ratio_{peer}"), &rounds, |r| {
                Some((figure("tenure", r)?, figure(peer, r)?))
            });
        }
        out.push(s);
    }
    out
}

/// Sets `<system>_server_us` of `s` to the median over `runs` of the
/// server's CPU a job (`server_us_per_job`: every server process's CPU
/// time over the timed window, by `pg_peer.py` or `peers.mjs`, divided by
/// the jobs), if any run measured it.
fn put_server_cpu(s: &mut Value, system: &str, runs: &[&&Value]) {
    let cpu = runs.iter().filter_map(|r| r["server_us_per_job"].as_f64());
    if let Some(m) = median(cpu.collect()) {
        s[format!("{system}_server_us")] = round(m, 1).into();
    }
}

/// The servers' CPU a job of `systems` in summary `s`, as a table cell
/// (`a / b / … µs`, `—` for one not measured), or `—` when none was.
fn server_cpu_cell(s: &Value, systems: &[&str]) -> String {
    let cells: Vec<Option<f64>> = systems
        .iter()
        .map(|system| s[format!("{system}_server_us")].as_f64())
        .collect();
    if cells.iter().all(Option::is_none) {
        return "—".to_owned();
    }
    let cells: Vec<String> = cells
        .into_iter()
        .map(|c| c.map_or_else(|| "—".to_owned(), |x| format!("{x:.0}")))
        .collect();
    format!("{} µs", cells.join(" / "))
}

/// The `js-peer` run rows of workload `kind` with `workers` workers.
fn runs_of<'a>(rows: &'a [Value], kind: &str, workers: u64) -> Vec<&'a Value> {
    rows.iter()
        .filter(|r| r["workload"] == "js-peer" && r["kind"] == kind && r["workers"] == workers)
        .collect()
}

/// The distinct rounds of `runs`, in order.
fn rounds_of(runs: &[&Value]) -> Vec<u64> {
    let mut rounds: Vec<u64> = runs.iter().filter_map(|r| r["round"].as_u64()).collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds
}

/// The `metric` of `system`'s run of `round` among `runs`.
fn figure_of(runs: &[&Value], system: &str, round: u64, metric: &str) -> Option<f64> {
    runs.iter()
        .find(|r| r["system"] == system && r["round"] == round)
        .and_then(|r| r[metric].as_f64())
}

/// Sets `key` of `s` to the median over `rounds` of the ratio `a / b` of
/// each round's pair `pair(round)` (a round missing either figure, or with
/// `b` 0, gives none), and `<key>_min` and `<key>_max` to their spread;
/// nothing when no round gives a ratio.
fn put_ratio(s: &mut Value, key: &str, rounds: &[u64], pair: impl Fn(u64) -> Option<(f64, f64)>) {
    let ratios: Vec<f64> = rounds
        .iter()
        .filter_map(|&r| pair(r).filter(|&(_, b)| b > 0.0).map(|(a, b)| a / b))
        .collect();
    let (lo, hi) = ratios
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    if let Some(m) = median(ratios) {
        s[key] = round(m, 3).into();
        s[format!("{key}_min")] = round(lo, 3).into();
        s[format!("{key}_max")] = round(hi, 3).into();
    }
}

/// The floor rows' systems (`bench/pg_peer.py`): tenure's per-job record
/// and graphile-worker's own statements, run by pgbench.
const FLOOR_SYSTEMS: &[&str] = &["sql-tenure", "sql-graphile"];

/// The summary of the floor rows among `pg_peer.py js-peers`'s run rows,
/// one `js-floor-summary` object per drain worker count that ran: each
/// system's median rate (`<system>_jobs_per_s`, the two floor systems and
/// tenure and graphile-worker of the same rounds) and, as medians of the
/// per-round ratios with their spread, `ratio_record` (tenure's record /
/// graphile-worker's statements), `ratio_tenure_record` (tenure through
/// its Python binding / its record) and `ratio_graphile_sql`
/// (graphile-worker through Node / its statements).
pub(crate) fn floor_summaries(rows: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for workers in [1u64, 4] {
        let runs = runs_of(rows, "drain", workers);
        if !runs.iter().any(|r| r["system"] == FLOOR_SYSTEMS[0]) {
            continue;
        }
        let rounds = rounds_of(&runs);
        let figure = |system: &str, round: u64| figure_of(&runs, system, round, "jobs_per_s");
        let mut s = serde_json::json!({
            "workload": "js-floor-summary",
            "kind": "drain",
            "workers": workers,
            "jobs": runs[0]["jobs"],
            "rounds": rounds.len(),
        });
        for system in FLOOR_SYSTEMS.iter().chain(&JS_SYSTEMS[..2]) {
            let mine: Vec<&&Value> = runs.iter().filter(|r| r["system"] == *system).collect();
            if let Some(m) = median(
                mine.iter()
                    .filter_map(|r| r["jobs_per_s"].as_f64())
                    .collect(),
            ) {
                s[format!("{system}_jobs_per_s")] = round(m, 1).into();
            }
            put_server_cpu(&mut s, system, &mine);
        }
        for (key, a, b) in [
            ("ratio_record", "sql-tenure", "sql-graphile"),
            ("ratio_tenure_record", "tenure", "sql-tenure"),
            ("ratio_graphile_sql", "graphile", "sql-graphile"),
        ] {
            put_ratio(&mut s, key, &rounds, |r| {
                Some((figure(a, r)?, figure(b, r)?))
            });
        }
        out.push(s);
    }
    out
}

/// The table of the summaries of [`floor_summaries`]: per drain worker
/// count, the two floor rates, tenure's record / graphile-worker's
/// statements, and how much of each floor the system reaches through its
/// client.
pub(crate) fn floor_table(rows: &[Value]) -> Result<String> {
    let first = rows
        .iter()
        .find(|r| r["workload"] == "js-floor-summary")
        .ok_or("no js-floor-summary rows in the output")?;
    let mut md = format!(
        "\n| the floor: the same drain as statements run by pgbench ({} jobs, median of {} \
         rounds) | graphile-worker's statements | tenure's record, one call per transition | \
         tenure's record / graphile-worker's statements (spread) | tenure (Python) / its \
         record | graphile-worker (Node) / its statements | server CPU a job: \
         graphile-worker's statements / tenure's record / graphile-worker / tenure \
         |\n|---|---:|---:|---:|---:|---:|---:|\n",
        field(first, "jobs"),
        field(first, "rounds"),
    );
    for workers in [1u64, 4] {
        let Some(s) = rows
            .iter()
            .find(|r| r["workload"] == "js-floor-summary" && r["workers"] == workers)
        else {
            return Err(format!("no js-floor-summary row for {workers} clients"));
        };
        let rate = |system: &str| match s[format!("{system}_jobs_per_s")].as_f64() {
            Some(x) => format!("{x:.0} jobs/s"),
            None => "—".to_owned(),
        };
        let ratio = |key: &str| match s[key].as_f64() {
            Some(r) => format!(
                "{r:.2} ({} – {})",
                field(s, &format!("{key}_min")),
                field(s, &format!("{key}_max"))
            ),
            None => "—".to_owned(),
        };
        md.push_str(&format!(
            "| drain one job at a time, {workers} client{} | {} | {} | **{}** | {} | {} | {} |\n",
            if workers == 1 { "" } else { "s" },
            rate("sql-graphile"),
            rate("sql-tenure"),
            ratio("ratio_record"),
            ratio("ratio_tenure_record"),
            ratio("ratio_graphile_sql"),
            server_cpu_cell(s, &["sql-graphile", "sql-tenure", "graphile", "tenure"]),
        ));
    }
    md.push_str(
        "\nThe floor: `bench/pg_floor/tenure.sql` writes for each job exactly the rows tenure \
         writes (job row with its provenance, events, mark log, count deltas) after the same \
         locks, clock samples and lease checks, one function call per transition; \
         `bench/pg_floor/graphile.pgbench` is graphile-worker's own claim and completion. \
         pgbench runs both (C clients, prepared statements), with no client library. Server \
         CPU a job: the CPU time of every server process (connections and background \
         processes, from /proc) over the timed window, divided by the jobs (median of the \
         rounds).\n",
    );
    Ok(md)
}

/// The summary rows of `pg_peer.py js-peers`, in its order: (kind, workers).
const JS_ROWS: &[(&str, u64, &str)] = &[
    ("drain", 1, "drain one job at a time, 1 worker"),
    ("drain", 4, "drain one job at a time, 4 workers"),
    (
        "batch",
        4,
        "drain batched, 4 workers (tenure `claim_next_many(16)` + `complete_many`; \
         graphile-worker `localQueue` 64 + `completeJobBatchDelay` 0; pg-boss `fetch` 16 + \
         `complete` of the 16)",
    ),
    (
        "enqueue",
        1,
        "bulk enqueue, chunks of 1,000 (tenure `submit_many`; graphile-worker `addJobs`; \
         pg-boss `insert`)",
    ),
    (
        "wake",
        1,
        "wake latency, submit to start, idle worker (tenure `claim_next_wait`; \
         graphile-worker LISTEN/NOTIFY), p50 (p95)",
    ),
];

/// The summary row of `kind` with `workers` among `rows`.
fn js_summary<'a>(rows: &'a [Value], kind: &str, workers: u64) -> Option<&'a Value> {
    rows.iter().find(|r| {
        r["workload"] == "js-peer-summary" && r["kind"] == kind && r["workers"] == workers
    })
}

/// Whether a median ratio tenure / graphile-worker meets its target: a rate
/// at least 1.0 × the peer's, a latency (`wake`) at most the peer's.
fn js_met(kind: &str, ratio: f64) -> bool {
    if kind == "wake" {
        ratio <= 1.0
    } else {
        ratio >= 1.0
    }
}

/// The table of the summaries of [`js_summaries`]: one line per workload with
/// each system's median figure, the median per-round ratios tenure /
/// graphile-worker (with their spread, and the target) and tenure / pg-boss.
pub(crate) fn js_table(rows: &[Value]) -> Result<String> {
    let first = rows
        .iter()
        .find(|r| r["workload"] == "js-peer-summary")
        .ok_or("no js-peer-summary rows in the output")?;
    let version = |system: &str| {
        rows.iter()
            .find_map(|r| r.get(format!("{system}_version")).and_then(Value::as_str))
            .unwrap_or("?")
            .to_owned()
    };
    let mut md = format!(
        "\n| tenure beside the Node peers: {} jobs per drain, median of {} alternating rounds \
         (fresh database per run) | tenure {} | graphile-worker {} | pg-boss {} | \
         tenure / graphile-worker (median of the rounds' ratios, spread) | target | met? | \
         tenure / pg-boss | server CPU a job: tenure / graphile-worker / pg-boss \
         |\n|---|---:|---:|---:|---:|---|---|---:|---:|\n",
        field(first, "jobs"),
        field(first, "rounds"),
        version("tenure"),
        version("graphile"),
        version("pgboss"),
    );
    for (kind, workers, what) in JS_ROWS {
        let Some(s) = js_summary(rows, kind, *workers) else {
            return Err(format!(
                "no js-peer-summary row for {kind} with {workers} workers"
            ));
        };
        let figure = |system: &str| {
            if *kind == "wake" {
                match (
                    s[format!("{system}_p50_ms")].as_f64(),
                    s[format!("{system}_p95_ms")].as_f64(),
                ) {
                    (Some(p50), Some(p95)) => format!("{p50:.2} ms ({p95:.2} ms)"),
                    _ => "—".to_owned(),
                }
            } else {
                match s[format!("{system}_jobs_per_s")].as_f64() {
                    Some(x) => format!("{x:.0} jobs/s"),
                    None => "—".to_owned(),
                }
            }
        };
        let ratio = s["ratio_graphile"].as_f64();
        let (ratio_cell, met) = match ratio {
            Some(r) => (
                format!(
                    "**{r:.2}** ({} – {})",
                    field(s, "ratio_graphile_min"),
                    field(s, "ratio_graphile_max")
                ),
                if js_met(kind, r) { "yes" } else { "no" },
            ),
            None => ("n/a".to_owned(), "not measured"),
        };
        let target = if *kind == "wake" {
            "≤ 1.0"
        } else {
            "≥ 1.0"
        };
        let boss = s["ratio_pgboss"]
            .as_f64()
            .map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "—".to_owned());
        md.push_str(&format!(
            "| {what} | {} | {} | {} | {ratio_cell} | {target} | {met} | {boss} | {} |\n",
            figure("tenure"),
            figure("graphile"),
            figure("pgboss"),
            server_cpu_cell(s, JS_SYSTEMS),
        ));
    }
    md.push_str(
        "\ntenure: the release Python wheel, C threads of one process sharing one `Authority`; \
         graphile-worker: one Node process, `concurrency` C, a no-op task; pg-boss: one Node \
         process, C async `fetch` + `complete` loops (it polls: no wake row); server CPU a \
         job: as below the floor table. Details: `bench/pg_peer.py` and \
         `bench/js-peers/peers.mjs`.\n",
    );
    Ok(md)
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

    /// A `js-peer` run row as `pg_peer.py js-peers` prints it.
    fn run_row(system: &str, kind: &str, workers: u64, round: u64, figure: f64) -> Value {
        let mut r = serde_json::json!({
            "workload": "js-peer", "system": system, "kind": kind,
            "workers": workers, "round": round, "jobs": 5000,
        });
        if kind == "wake" {
            r["p50_ms"] = figure.into();
            r["p95_ms"] = (2.0 * figure).into();
        } else {
            r["jobs_per_s"] = figure.into();
        }
        if system != "tenure" {
            r["version"] = if system == "graphile" {
                "0.17.3"
            } else {
                "10.4.2"
            }
            .into();
        }
        r
    }

    #[test]
    fn the_median_takes_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(round(1.23456, 3), 1.235);
    }

    #[test]
    fn summaries_give_median_figures_and_the_median_of_the_per_round_ratios() {
        let mut rows = vec![
            // Round 0: tenure 100 vs graphile 200 (0.5); round 1: 300 vs 100 (3.0);
            // round 2: 90 vs 100 (0.9). Median ratio 0.9, not 150 / 100.
            run_row("tenure", "drain", 1, 0, 100.0),
            run_row("graphile", "drain", 1, 0, 200.0),
            run_row("pgboss", "drain", 1, 0, 50.0),
            run_row("pgboss", "drain", 1, 1, 100.0),
            run_row("graphile", "drain", 1, 1, 100.0),
            run_row("tenure", "drain", 1, 1, 300.0),
            run_row("tenure", "drain", 1, 2, 90.0),
            run_row("graphile", "drain", 1, 2, 100.0),
            run_row("pgboss", "drain", 1, 2, 45.0),
            // Another worker count: not mixed into W = 1.
            run_row("tenure", "drain", 4, 0, 1.0),
            run_row("graphile", "drain", 4, 0, 1000.0),
            // Wake: latencies, no pg-boss row.
            run_row("tenure", "wake", 1, 0, 2.0),
            run_row("graphile", "wake", 1, 0, 8.0),
        ];
        rows.push(serde_json::json!({"workload": "js-peer-versions", "tenure": "0.1.0"}));
        let s = js_summaries(&rows);
        assert_eq!(s.len(), 3, "{s:?}");
        let d1 = &s[0];
        assert_eq!(
            (d1["kind"].as_str(), d1["workers"].as_u64()),
            (Some("drain"), Some(1))
        );
        assert_eq!(d1["rounds"], 3);
        assert_eq!(d1["tenure_jobs_per_s"], 100.0);
        assert_eq!(d1["graphile_jobs_per_s"], 100.0);
        assert_eq!(d1["pgboss_jobs_per_s"], 50.0);
        assert_eq!(d1["ratio_graphile"], 0.9);
        assert_eq!(d1["ratio_graphile_min"], 0.5);
        assert_eq!(d1["ratio_graphile_max"], 3.0);
        // tenure / pg-boss per round: 2.0, 3.0, 2.0.
        assert_eq!(d1["ratio_pgboss"], 2.0);
        assert_eq!(d1["graphile_version"], "0.17.3");
        assert_eq!(d1["tenure_version"], "0.1.0");
        let d4 = &s[1];
        assert_eq!(d4["workers"], 4);
        assert_eq!(d4["ratio_graphile"], 0.001);
        assert!(d4.get("ratio_pgboss").is_none(), "{d4}");
        let wake = &s[2];
        assert_eq!(wake["metric"], "p50_ms");
        assert_eq!(wake["tenure_p50_ms"], 2.0);
        assert_eq!(wake["graphile_p95_ms"], 16.0);
        assert_eq!(wake["ratio_graphile"], 0.25);
        assert!(wake.get("pgboss_p50_ms").is_none(), "{wake}");
    }

    #[test]
    fn the_table_marks_each_target_met_or_not_with_latency_lower_is_better() {
        let mut rows = Vec::new();
        for (kind, w, t, g) in [
            ("drain", 1, 100.0, 200.0),
            ("drain", 4, 300.0, 200.0),
            ("batch", 4, 200.0, 200.0),
            ("enqueue", 1, 10.0, 20.0),
            ("wake", 1, 3.0, 6.0),
        ] {
            let (mut mine, mut peer) = (
                run_row("tenure", kind, w, 0, t),
                run_row("graphile", kind, w, 0, g),
            );
            if (kind, w) == ("drain", 1) {
                mine["server_us_per_job"] = 1100.0.into();
                peer["server_us_per_job"] = 400.0.into();
            }
            rows.push(mine);
            rows.push(peer);
            if kind != "wake" {
                rows.push(run_row("pgboss", kind, w, 0, g / 2.0));
            }
        }
        let md = js_table(&js_summaries(&rows)).unwrap();
        let line = |what: &str| {
            md.lines()
                .find(|l| l.starts_with(&format!("| {what}")))
                .unwrap_or_else(|| panic!("no {what} line in {md}"))
                .to_owned()
        };
        let d1 = line("drain one job at a time, 1 worker");
        assert!(d1.contains("| 100 jobs/s | 200 jobs/s | 100 jobs/s | **0.50** (0.5 – 0.5) | ≥ 1.0 | no | 1.00 | 1100 / 400 / — µs |"), "{d1}");
        assert!(line("drain one job at a time, 4 workers").ends_with("| — |"));
        assert!(line("drain one job at a time, 4 workers")
            .contains("**1.50** (1.5 – 1.5) | ≥ 1.0 | yes |"));
        assert!(line("drain batched").contains("**1.00** (1.0 – 1.0) | ≥ 1.0 | yes |"));
        assert!(line("bulk enqueue").contains("| ≥ 1.0 | no |"));
        let wake = line("wake latency");
        assert!(wake.contains("| 3.00 ms (6.00 ms) | 6.00 ms (12.00 ms) | — | **0.50** (0.5 – 0.5) | ≤ 1.0 | yes | — | — |"), "{wake}");
        assert!(
            md.contains("graphile-worker 0.17.3 | pg-boss 10.4.2"),
            "{md}"
        );
        // A missing workload is an error, not a silent gap.
        let partial: Vec<Value> = rows.into_iter().filter(|r| r["kind"] != "wake").collect();
        assert!(js_table(&js_summaries(&partial)).is_err());
        assert!(js_table(&[]).is_err());
        assert!(!js_met("wake", 1.01) && js_met("wake", 1.0) && js_met("drain", 1.0));
    }

    #[test]
    fn floor_summaries_pair_each_round_and_the_table_shows_both_worker_counts() {
        let mut rows = Vec::new();
        // Round 0: record 100 vs graphile-worker's statements 400 (0.25), tenure 50
        // (0.5 of its record), graphile-worker 200 (0.5 of its statements);
        // round 1: 300 vs 300 (1.0), tenure 30 (0.1), graphile-worker 600 (2.0);
        // round 2 lacks graphile-worker's statements: no ratio from it.
        // The server's CPU a job: the record 700, 600, 640 µs (median 640),
        // graphile-worker's statements 400 and 380 (390), tenure 1 200 in one
        // round, graphile-worker through Node never measured.
        for (round, record, sql, tenure, node, cpu) in [
            (0, 100.0, Some(400.0), 50.0, 200.0, (700.0, 400.0)),
            (1, 300.0, Some(300.0), 30.0, 600.0, (600.0, 380.0)),
            (2, 200.0, None, 20.0, 100.0, (640.0, 0.0)),
        ] {
            let mut r = run_row("sql-tenure", "drain", 1, round, record);
            r["server_us_per_job"] = cpu.0.into();
            rows.push(r);
            if let Some(x) = sql {
                let mut r = run_row("sql-graphile", "drain", 1, round, x);
                r["server_us_per_job"] = cpu.1.into();
                rows.push(r);
            }
            let mut r = run_row("tenure", "drain", 1, round, tenure);
            if round == 1 {
                r["server_us_per_job"] = 1200.0.into();
            }
            rows.push(r);
            rows.push(run_row("graphile", "drain", 1, round, node));
        }
        // A worker count with no floor run gives no summary.
        rows.push(run_row("tenure", "drain", 4, 0, 250.0));
        rows.push(run_row("graphile", "batch", 4, 0, 1.0));
        let s = floor_summaries(&rows);
        assert_eq!(s.len(), 1, "{s:?}");
        let d = &s[0];
        assert_eq!(
            (d["workers"].as_u64(), d["rounds"].as_u64()),
            (Some(1), Some(3))
        );
        assert_eq!(d["sql-tenure_jobs_per_s"], 200.0);
        assert_eq!(d["sql-graphile_jobs_per_s"], 350.0);
        assert_eq!(d["tenure_jobs_per_s"], 30.0);
        assert_eq!(d["ratio_record"], 0.625);
        assert_eq!(d["ratio_record_min"], 0.25);
        assert_eq!(d["ratio_record_max"], 1.0);
        // tenure / its record per round: 0.5, 0.1, 0.1.
        assert_eq!(d["ratio_tenure_record"], 0.1);
        assert_eq!(d["ratio_graphile_sql"], 1.25);
        assert_eq!(d["sql-tenure_server_us"], 640.0);
        assert_eq!(d["sql-graphile_server_us"], 390.0);
        assert_eq!(d["tenure_server_us"], 1200.0);
        assert!(d.get("graphile_server_us").is_none(), "{d}");
        // The table needs both worker counts.
        assert!(floor_table(&s).is_err());
        for round in 0..2 {
            rows.push(run_row("sql-tenure", "drain", 4, round, 500.0));
            rows.push(run_row("sql-graphile", "drain", 4, round, 1000.0));
        }
        let md = floor_table(&floor_summaries(&rows)).unwrap();
        let line = |what: &str| {
            md.lines()
                .find(|l| l.starts_with(&format!("| {what} |")))
                .unwrap_or_else(|| panic!("no {what} line in {md}"))
                .to_owned()
        };
        assert_eq!(
            line("drain one job at a time, 1 client"),
            "| drain one job at a time, 1 client | 350 jobs/s | 200 jobs/s | \
             **0.62 (0.25 – 1.0)** | 0.10 (0.1 – 0.5) | 1.25 (0.5 – 2.0) | \
             390 / 640 / — / 1200 µs |"
        );
        assert_eq!(
            line("drain one job at a time, 4 clients"),
            "| drain one job at a time, 4 clients | 1000 jobs/s | 500 jobs/s | \
             **0.50 (0.5 – 0.5)** | 0.50 (0.5 – 0.5) | — | — |"
        );
        assert!(floor_table(&[]).is_err());
    }

    #[test]
    fn the_lock_file_pins_the_peers_package_json_names() {
        let dir = js_dir();
        let read = |name: &str| {
            let p = dir.join(name);
            parse_json(&std::fs::read_to_string(&p).unwrap(), name).unwrap()
        };
        let package = read("package.json");
        let lock = read("package-lock.json");
        let want = [("graphile-worker", "0.17.3"), ("pg-boss", "10.4.2")];
        for (name, version) in want {
            assert_eq!(
                package["dependencies"][name], version,
                "package.json pins {name}"
            );
            assert_eq!(
                lock["packages"][format!("node_modules/{name}")]["version"],
                version,
                "package-lock.json holds {name} {version}"
            );
            assert_eq!(lock["packages"][""]["dependencies"][name], version);
        }
        // Every package of the lock is pinned by its integrity hash.
        let packages = lock["packages"].as_object().unwrap();
        assert!(packages.len() > 2);
        for (path, p) in packages.iter().filter(|(k, _)| !k.is_empty()) {
            assert!(
                p["integrity"]
                    .as_str()
                    .is_some_and(|i| i.starts_with("sha512-")),
                "{path}"
            );
        }
        let ignore = std::fs::read_to_string(dir.join(".gitignore")).unwrap();
        assert!(ignore.lines().any(|l| l == "node_modules/"));
        assert_eq!(js_sizes(false), ["5000", "20000", "200", "3"]);
    }
}
