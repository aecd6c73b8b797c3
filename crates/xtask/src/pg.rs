//! The PostgreSQL backend's part of `cargo xtask test`: start a throwaway
//! PostgreSQL server (initdb into a temp folder, 127.0.0.1 on a free port,
//! `fsync=off`), run the core conformance suites of `crates/tenure` against
//! it (`TENURE_TEST_BACKEND=postgres`, `TENURE_TEST_PG_URL`), and stop it at
//! the end, also on failure (a guard runs `pg_ctl stop -m immediate`).
//!
//! PostgreSQL refuses to run as root: as root, the data folder belongs to
//! `nobody` and `initdb` / `pg_ctl` run through `runuser -u nobody --`.

use crate::util::{apt_install, cargo, output, parse_json, run, step, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running throwaway server; dropping it stops the server and removes its folder.
pub struct Server {
    dir: PathBuf,
    pg_ctl: PathBuf,
    as_root: bool,
    /// Maintenance URL (database `postgres`, user `postgres`, trust auth).
    pub url: String,
    /// The TLS certificates when started with [`start_with_tls`].
    pub tls: Option<crate::pg_tls::Files>,
}

pub(crate) fn find_bin(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = vec![PathBuf::from("/usr/local/bin")];
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("bin")).collect();
        versions.sort();
        versions.reverse();
        dirs.extend(versions);
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn bins() -> Result<(PathBuf, PathBuf)> {
    if let (Some(i), Some(c)) = (find_bin("initdb"), find_bin("pg_ctl")) {
        return Ok((i, c));
    }
    apt_install(&["postgresql"])?;
    match (find_bin("initdb"), find_bin("pg_ctl")) {
        (Some(i), Some(c)) => Ok((i, c)),
        _ => Err("PostgreSQL binaries (initdb, pg_ctl) not found after installing".into()),
    }
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u"))
        .map(|s| s.trim() == "0")
        .unwrap_or(false)
}

fn as_server_user(as_root: bool, bin: &Path, dir: &Path) -> Command {
    let mut c = if as_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    // The server user may not be able to enter the caller's directory.
    c.current_dir(dir);
    c
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// initdb + start (plain TCP only); the returned guard stops the server.
/// Tuned for tests: `fsync`, `full_page_writes` and `synchronous_commit`
/// off (a commit is acknowledged before it is on disk).
pub fn start() -> Result<Server> {
    start_server(false, false)
}

/// Like [`start`], but durable: `fsync`, `full_page_writes` and
/// `synchronous_commit` on (PostgreSQL's defaults), so every commit waits
/// for its WAL flush. The benchmark runs its rows on both, and the retention
/// soak on this one.
pub fn start_durable() -> Result<Server> {
    start_server(false, true)
}

/// Like [`start`], with TLS on as well (see [`crate::pg_tls`]); plain
/// connections keep working.
pub fn start_with_tls() -> Result<Server> {
    start_server(true, false)
}

fn start_server(tls: bool, durable: bool) -> Result<Server> {
    let (initdb, pg_ctl) = bins()?;
    let as_root = is_root();
    let dir = std::env::temp_dir().join(format!("tenure-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if as_root {
        run(Command::new("chown").arg("nobody").arg(&dir))?;
    }
    let mut server = Server {
        dir: dir.clone(),
        pg_ctl: pg_ctl.clone(),
        as_root,
        url: String::new(),
        tls: None,
    };
    let data = dir.join("data");
    run(as_server_user(as_root, &initdb, &dir)
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "-E", "UTF8"])
        .args((!durable).then_some("--no-sync"))
        .stdout(std::process::Stdio::null()))?;
    let port = free_port()?;
    let onoff = if durable { "on" } else { "off" };
    let mut opts = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync={onoff} \
         -c full_page_writes={onoff} -c synchronous_commit={onoff} -c max_connections=400",
        dir.display()
    );
    if tls {
        let files = crate::pg_tls::prepare(&dir, &data, as_root)?;
        opts.push_str(&files.server_opts());
        server.tls = Some(files);
    }
    let started = run(as_server_user(as_root, &pg_ctl, &dir)
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(dir.join("server.log"))
        .args(["-o", &opts, "-w", "-t", "60", "start"]));
    if let Err(e) = started {
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        return Err(format!("{e}\n{log}"));
    }
    server.url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    Ok(server)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = as_server_user(self.as_root, &self.pg_ctl, &self.dir)
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The core suites again, on PostgreSQL (plus the PostgreSQL-only tests).
pub fn test() -> Result {
    step("PostgreSQL: throwaway server + the core conformance suites on it");
    apt_install(&["faketime"])?;
    // TLS on: the suites connect with the default sslmode (prefer), so they
    // run encrypted, and tests/pg_tls.rs checks every sslmode.
    let server = start_with_tls()?;
    let tls_env = server.tls.as_ref().map(|f| f.test_env(&server.url));
    run(cargo()
        .args(["test", "--locked", "-p", "tenure"])
        .env("TENURE_TEST_BACKEND", "postgres")
        .env("TENURE_TEST_PG_URL", &server.url)
        .envs(tls_env.unwrap_or_default()))?;
    step("PostgreSQL: CLI life cycle against the server (`--db postgres://...`)");
    cli_lifecycle(&server)?;
    step("PostgreSQL: C ABI life cycle, two processes sharing only the URL");
    c_lifecycle(&server)?;
    step("PostgreSQL: C++ example workers draining a store a C program filled, over the URL");
    apt_install(&["g++", "pkg-config"])?;
    let work = crate::capi::target_dir()?.join("cpp-pg");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    crate::cpp::example(&work, &server.database("cpp_example")?)?;
    // The C, C++ and Python life-cycle suites (also installs the wheel into .venv).
    crate::pg_suites::run(&server)?;
    let py = crate::util::root().join(".venv/bin/python");
    if py.is_file() {
        step("PostgreSQL: Python wheel, three processes sharing only the URL");
        python_lifecycle(&server, &py)?;
    } else {
        println!("(no .venv: the Python step runs after `cargo xtask python`)");
    }
    drop(server);
    Ok(())
}

impl Server {
    /// A new empty database on this server; returns its URL.
    pub fn database(&self, name: &str) -> Result<String> {
        let createdb = find_bin("createdb").ok_or("createdb not found")?;
        let (host_port, _) = self
            .url
            .trim_start_matches("postgres://postgres@")
            .split_once('/')
            .ok_or("bad server URL")?;
        let (host, port) = host_port.split_once(':').ok_or("bad server URL")?;
        run(Command::new(createdb).args(["-h", host, "-p", port, "-U", "postgres", name]))?;
        let base = self.url.strip_suffix("/postgres").ok_or("bad server URL")?;
        Ok(format!("{base}/{name}"))
    }
}

fn cli_lifecycle(server: &Server) -> Result {
    let url = server.database("xtask_cli")?;
    let tmp = std::env::temp_dir().join(format!("tenure-pg-cli-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let tok = tmp.join("lease.tok");
    let _ = std::fs::remove_file(&tok);
    let tenure = |args: &[&str]| -> Result<String> {
        output(
            cargo()
                .args(["run", "--locked", "-q", "-p", "tenure-cli", "--"])
                .arg("--db")
                .arg(&url)
                .args(args),
        )
    };
    let r = (|| {
        tenure(&["init"])?;
        tenure(&["production", "create", "nightly"])?;
        tenure(&[
            "job",
            "submit",
            "-p",
            "nightly",
            "render-1",
            "--payload-file",
            "/dev/null",
        ])?;
        let tok_s = tok.to_string_lossy().into_owned();
        tenure(&[
            "claim",
            "-p",
            "nightly",
            "--holder",
            "xtask",
            "--ttl",
            "5m",
            "--token-out",
            &tok_s,
        ])?;
        tenure(&["renew", "--token-file", &tok_s, "--ttl", "10m"])?;
        tenure(&["complete", "--token-file", &tok_s, "--fact", "artifact=x"])?;
        let job = tenure(&["--json", "job", "show", "-p", "nightly", "render-1"])?;
        if parse_json(&job, "tenure --json job show")?["state"] != "completed" {
            return Err(format!("CLI on PostgreSQL: job not completed: {job}"));
        }
        tenure(&["check"])?;
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    r
}

const PY_WORKER: &str = r#"
import sys
from datetime import timedelta
import tenure

url, role = sys.argv[1], sys.argv[2]
auth = tenure.Authority(url)
if role == "seed":
    auth.create_production("py")
    for i in range(60):
        auth.submit("py", f"job-{i:03}", b"x")
elif role == "work":
    done = 0
    while True:
        try:
            lease = auth.claim_next("py", f"py-{role}", timedelta(seconds=30))
        except tenure.NoJobAvailable:
            break
        except tenure.Busy:
            continue
        lease.renew(timedelta(minutes=1))
        lease.complete({"by": "python"})
        done += 1
    print("DONE", done)
else:
    jobs = auth.jobs("py", state="completed", limit=1000)
    assert len(jobs) == 60, len(jobs)
    assert auth.check().ok
    print("CHECKED")
"#;

fn python_lifecycle(server: &Server, py: &Path) -> Result {
    let url = server.database("xtask_py")?;
    let script = std::env::temp_dir().join(format!("tenure-pg-{}.py", std::process::id()));
    std::fs::write(&script, PY_WORKER).map_err(|e| e.to_string())?;
    let r = (|| {
        output(Command::new(py).arg(&script).args([url.as_str(), "seed"]))?;
        let kids: Vec<_> = (0..3)
            .map(|_| {
                Command::new(py)
                    .arg(&script)
                    .args([url.as_str(), "work"])
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_>>()?;
        let mut total = 0;
        for k in kids {
            let out = k.wait_with_output().map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err("a Python worker failed".into());
            }
            let text = String::from_utf8_lossy(&out.stdout);
            total += text
                .lines()
                .find_map(|l| l.strip_prefix("DONE "))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .ok_or("Python worker printed no result")?;
        }
        if total != 60 {
            return Err(format!("Python workers completed {total} of 60 jobs"));
        }
        output(Command::new(py).arg(&script).args([url.as_str(), "check"]))?;
        Ok(())
    })();
    let _ = std::fs::remove_file(&script);
    r
}

/// Which rows `cargo xtask bench --backend postgres` runs: those flagged,
/// or, with neither flag, every row on both servers and then the soak.
#[derive(Clone, Copy)]
pub struct Rows {
    /// The retention soak (`--soak`).
    pub soak: bool,
    /// The bulk-submission row, on both servers (`--bulk-submit`).
    pub bulk: bool,
}

/// `cargo xtask bench --backend postgres [--smoke]`: lifecycle rate
/// (claim-next + complete) with 1, 4, 16 and 64 concurrent connections from
/// several processes on a throwaway server; writes the report over the last
/// one of its kind, `bench/results/latest-<kind>.{md,json}` ([`report_kind`]).
pub fn bench(smoke: bool, rows: Rows) -> Result {
    let started = crate::bench::RunStart::now();
    step(&format!(
        "PostgreSQL benchmark ({}{})",
        if smoke { "smoke" } else { "full" },
        match (rows.soak, rows.bulk) {
            (false, false) => "",
            (true, false) => ", retention soak only",
            (false, true) => ", bulk submission only",
            (true, true) => ", bulk submission and retention soak only",
        }
    ));
    let mut md = String::new();
    let mut json = Vec::new();
    if peers_only() {
        // Only tenure beside graphile-worker and pg-boss, on both servers.
        step("PostgreSQL benchmark: only the Node peers' rows (TENURE_BENCH_PEERS_ONLY)");
        for durable in [false, true] {
            let (server, label) = server_for(durable)?;
            step(&format!("PostgreSQL peers on the {label}"));
            md.push_str(&format!("\n**{label}**\n"));
            crate::pg_peer::js_peers(&server, smoke, &mut md, &mut json)?;
        }
        return crate::bench::write_report(&peers_report_kind(smoke), &md, json, &started);
    }
    if before_gates_only() {
        // Only the lifecycles against the tree before the claim gates, on
        // both servers.
        step("PostgreSQL benchmark: only the lifecycles against the tree before the claim gates (TENURE_BENCH_BEFORE_GATES_ONLY)");
        for durable in [false, true] {
            let (server, label) = server_for(durable)?;
            step(&format!(
                "PostgreSQL lifecycles against the tree before the claim gates on the {label}"
            ));
            let mut rows = Vec::new();
            before_gates_rows(&server, label, smoke, &mut rows, &mut json)?;
            table(
                &mut md,
                &format!("lifecycles, no gate set ({label})"),
                &rows,
            );
        }
        return crate::bench::write_report(&before_gates_report_kind(smoke), &md, json, &started);
    }
    if crate::bench::ops_only() {
        // Only the statistics and claim gates rows, on both servers.
        step("PostgreSQL benchmark: only the operations rows (TENURE_BENCH_OPS_ONLY)");
        for durable in [false, true] {
            let (server, label) = server_for(durable)?;
            step(&format!("PostgreSQL operations rows on the {label}"));
            ops_rows(&server, label, smoke, &mut md, &mut json)?;
        }
        return crate::bench::write_report(&ops_report_kind(smoke), &md, json, &started);
    }
    let all = !rows.soak && !rows.bulk;
    if all || rows.bulk {
        // Every row twice: on the tests' server (no fsync) and on a durable one.
        for durable in [false, true] {
            let (server, label) = server_for(durable)?;
            step(&format!("PostgreSQL benchmark on the {label}"));
            if rows.bulk {
                md.push_str(&format!("\n**{label}**\n"));
                let from = json.len();
                crate::pg_peer::enqueue(&server, smoke, &mut md, &mut json)?;
                md.push_str(&format!(
                    "\n| target | ratio | met |\n|---|---:|---|\n{}",
                    target_row(BULK_TARGET, enqueue_ratio(&json[from..]), Some(1.0), 1.0)
                ));
            } else {
                throughput(&server, durable, label, smoke, &mut md, &mut json)?;
            }
        }
    }
    if all || rows.soak {
        // The soak runs on a durable server (fsync on), one at a time.
        let server = start_durable()?;
        soak(&server, smoke, &mut md, &mut json)?;
    }
    crate::bench::write_report(&report_kind(smoke, &rows), &md, json, &started)
}

/// A throwaway server, durable or with the tests' no-fsync setting, and
/// its label in the report.
fn server_for(durable: bool) -> Result<(Server, &'static str)> {
    Ok(if durable {
        (
            start_durable()?,
            "durable server: fsync, full_page_writes, synchronous_commit on",
        )
    } else {
        (
            start()?,
            "no-fsync server: fsync, full_page_writes, synchronous_commit off",
        )
    })
}

/// Whether `TENURE_BENCH_BEFORE_GATES_ONLY` (set and not `0` or empty)
/// asks `cargo xtask bench --backend postgres` for the rows of
/// [`crate::bench::pg_before_gates_rows`] alone, on both servers (the
/// other flags then change nothing but `--smoke`, which shortens them).
fn before_gates_only() -> bool {
    std::env::var("TENURE_BENCH_BEFORE_GATES_ONLY").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The kind of the report of the rows against the tree before the claim
/// gates run alone (`TENURE_BENCH_BEFORE_GATES_ONLY`):
/// `postgres-before-gates-smoke` or `postgres-before-gates-full`.
pub(crate) fn before_gates_report_kind(smoke: bool) -> String {
    format!(
        "postgres-before-gates-{}",
        if smoke { "smoke" } else { "full" }
    )
}

/// Whether `TENURE_BENCH_PEERS_ONLY` (set and not `0` or empty) asks
/// `cargo xtask bench --backend postgres` for the Node peers' rows alone
/// (tenure beside graphile-worker and pg-boss, on both servers; the other
/// flags then change nothing but `--smoke`).
fn peers_only() -> bool {
    std::env::var("TENURE_BENCH_PEERS_ONLY").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The kind of the report of the operations rows run alone
/// (`TENURE_BENCH_OPS_ONLY`): `postgres-ops-smoke` or `postgres-ops-full`.
pub(crate) fn ops_report_kind(smoke: bool) -> String {
    format!("postgres-ops-{}", if smoke { "smoke" } else { "full" })
}

/// The kind of the report of the Node peers' rows run alone
/// (`TENURE_BENCH_PEERS_ONLY`): `postgres-peers-smoke` or
/// `postgres-peers-full`.
pub(crate) fn peers_report_kind(smoke: bool) -> String {
    format!("postgres-peers-{}", if smoke { "smoke" } else { "full" })
}

/// The kind of a PostgreSQL report, which names its files
/// (`bench/results/latest-<kind>.{md,json}`): `postgres-`, then
/// `bulk-submit-` and `soak-` for the rows run alone, then `smoke` or
/// `full`.
pub(crate) fn report_kind(smoke: bool, rows: &Rows) -> String {
    format!(
        "postgres-{}{}{}",
        if rows.bulk { "bulk-submit-" } else { "" },
        if rows.soak { "soak-" } else { "" },
        if smoke { "smoke" } else { "full" }
    )
}

/// The retention soak on the server (`tests/pg_bench.rs`, `pg_soak`): 1 M
/// jobs arriving at [`crate::bench::SOAK_RATE`] jobs/s, the SQLite soak's
/// stream (smoke: 10 000 at 1 000 jobs/s; `TENURE_SOAK_JOBS` overrides the
/// count) in tenths, retention
/// 60 s (smoke: 2 s), a transaction pinning xmin for 60 s (smoke: 3 s) from
/// the middle. Rows: hot-table sizes at the end against after the first
/// tenth (≤ 2 ×), the last tenth's throughput against the first (≥ 0.9 ×),
/// the lowest throughput while pinned against the pin-length before it
/// (≥ 0.5 ×), and how long after the release throughput is back to ≥ 0.9 ×
/// that baseline (≤ 60 s); see [`PinFigures`].
fn soak(
    server: &Server,
    smoke: bool,
    md: &mut String,
    json: &mut Vec<serde_json::Value>,
) -> Result {
    let (jobs, keep, pin, rate) = if smoke {
        (10_000, "2", "3", 1_000)
    } else {
        (1_000_000, "60", "60", crate::bench::SOAK_RATE)
    };
    let jobs: u64 = match std::env::var("TENURE_SOAK_JOBS") {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("TENURE_SOAK_JOBS={v:?}: not a number"))?,
        Err(_) => jobs,
    };
    let window = (jobs / 10).max(1);
    let out = output(
        pg_bench_test(server, "pg_soak")
            .env("TENURE_SOAK_JOBS", jobs.to_string())
            .env("TENURE_SOAK_WINDOW", window.to_string())
            .env("TENURE_SOAK_RETENTION_S", keep)
            .env("TENURE_SOAK_PIN_S", pin)
            .env("TENURE_SOAK_RATE", rate.to_string()),
    )?;
    let line = out
        .lines()
        .find_map(|l| l.split_once("BENCH ").map(|x| x.1))
        .ok_or_else(|| format!("no soak row in the output:\n{out}"))?;
    let row = parse_json(line, "pg_soak BENCH line")?;
    md.push_str(&soak_rows(&row)?);
    md.push_str(&soak_plans(&out));
    json.push(row);
    Ok(())
}

/// The rows of one `pg_soak` result (see [`soak`]).
fn soak_rows(row: &serde_json::Value) -> Result<String> {
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let windows = row["windows"].as_array().cloned().unwrap_or_default();
    let (Some(first), Some(last)) = (windows.first(), windows.last()) else {
        return Err(format!("pg soak: no windows in {row}"));
    };
    let sum = |w: &serde_json::Value, field: &str| -> f64 {
        w["tables"]
            .as_object()
            .map(|t| t.values().map(|v| f(&v[field])).sum())
            .unwrap_or(f64::NAN)
    };
    let bytes = |w: &serde_json::Value| sum(w, "bytes");
    let max_bytes = windows.iter().map(bytes).fold(0.0, f64::max);
    let max_dead = windows.iter().map(|w| sum(w, "dead")).fold(0.0, f64::max);
    let secs: Vec<f64> = row["per_second"]
        .as_array()
        .map(|a| a.iter().map(f).collect())
        .unwrap_or_default();
    let pin = f(&row["pin_s"]);
    let p = PinFigures::of(&secs, f(&row["pin_start_s"]), f(&row["pin_end_s"]), pin);
    let growth = bytes(last) / bytes(first);
    let pace = f(&last["jobs_per_s"]) / f(&first["jobs_per_s"]);
    let (jobs, window, keep) = (&row["jobs"], &row["window"], &row["retention_s"]);
    let what = format!(
        "soak: {jobs} jobs {} (claim-next + complete, durable server), retention {keep} s, \
         {} arrivals held back, check ok {}",
        match f(&row["rate"]) {
            r if r > 0.0 => format!("arriving at {r:.0} jobs/s"),
            _ => "unpaced".to_owned(),
        },
        row["held_back"],
        row["check_ok"]
    );
    let yes = |b: bool| if b { "met" } else { "NOT met" };
    let recovery = match p.recovery_s {
        Some(r) => format!("{r:.0} s"),
        None => "not within the run".into(),
    };
    Ok(format!(
        "\n| PostgreSQL retention soak | value | ratio | target |\n|---|---:|---:|---|\n\
         | {what}: jobs + events + facts + tombstones size at the end (max {:.1} MiB; dead tuples at the end {:.0}, max {max_dead:.0}) | {:.1} MiB | {growth:.2} × after the first {window} | ≤ 2 × — {} |\n\
         | {what}: throughput of the last {window} | {:.0} jobs/s | {pace:.2} × the first {window} | ≥ 0.9 × — {} |\n\
         | xmin pinned {pin} s from the middle: lowest {} s throughput while pinned (mean {:.0} jobs/s) | {:.0} jobs/s | {:.2} × the {pin} s before ({:.0} jobs/s) | ≥ 0.5 × — {} |\n\
         | xmin released: time until a {} s span is back at ≥ 0.9 × the {pin} s before the pin | {recovery} | | ≤ {pin} s — {} |\n",
        max_bytes / 1048576.0,
        sum(last, "dead"),
        bytes(last) / 1048576.0,
        yes(growth <= 2.0),
        f(&last["jobs_per_s"]),
        yes(pace >= 0.9),
        p.span,
        p.during_mean,
        p.during_low,
        p.during_low / p.baseline,
        p.baseline,
        yes(p.during_low / p.baseline >= 0.5),
        p.span,
        yes(p.recovery_s.is_some_and(|r| r <= pin)),
    ))
}

/// What the soak's `EXPLAIN (ANALYZE, BUFFERS)` of each hot scan read, just
/// before the pin and 5 s before its release: one line per scan with the
/// buffers and the execution time of both (the plans themselves are in
/// the test's output, lines `EXPLAIN <when> <scan>: ...`).
fn soak_plans(out: &str) -> String {
    let figures = |when: &str, scan: &str| -> String {
        let prefix = format!("EXPLAIN {when} {scan}: ");
        let lines: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .collect();
        let pick = |key: &str| {
            lines
                .iter()
                .find_map(|l| l.trim().strip_prefix(key))
                .unwrap_or("?")
                .trim()
                .to_string()
        };
        format!(
            "{} buffers, {}",
            pick("Buffers: shared hit="),
            pick("Execution Time:")
        )
    };
    let mut md = String::from(
        "
Plans of the hot scans (`EXPLAIN (ANALYZE, BUFFERS)`):

",
    );
    for scan in [
        "claim-next",
        "terminal-jobs",
        "tombstones",
        "events",
        "marks",
    ] {
        md.push_str(&format!(
            "- {scan}: before the pin {}; pinned (5 s before the release) {}\n",
            figures("before the pin", scan),
            figures("pinned", scan)
        ));
    }
    md
}

/// Seconds over which the pin rows measure a throughput: long enough that
/// one of the VM's fsync stalls is not a throughput, short enough to show a
/// drop (a shorter pin, as in the smoke run: the pin's length).
const PIN_SPAN: usize = 10;

/// The pinned-xmin figures from the jobs completed in every second: the
/// baseline is the mean over the `pin` seconds before the snapshot was
/// taken (`p0`); while pinned (`p0 ..= p1`) the mean and the lowest mean of
/// any `span`-second span inside it ([`PIN_SPAN`], at most the pin's
/// length); after the release, the seconds from `p1` to the end of the
/// first span whose mean is ≥ 0.9 × the baseline (`None`: not within the
/// run).
#[derive(Debug, PartialEq)]
struct PinFigures {
    span: usize,
    baseline: f64,
    during_mean: f64,
    during_low: f64,
    recovery_s: Option<f64>,
}

impl PinFigures {
    fn of(per_second: &[f64], p0: f64, p1: f64, pin: f64) -> PinFigures {
        let n = per_second.len();
        let span = PIN_SPAN.min(pin as usize).max(1);
        let mean = |a: usize, b: usize| -> f64 {
            let b = b.min(n);
            if b <= a {
                return f64::NAN;
            }
            per_second[a..b].iter().sum::<f64>() / (b - a) as f64
        };
        // Whole seconds strictly inside each interval.
        let (s0, s1) = (p0.max(0.0).ceil() as usize, p1.max(0.0).floor() as usize);
        let baseline = mean(
            s0.saturating_sub(pin as usize),
            p0.max(0.0).floor() as usize,
        );
        let during_low = (s0..=s1.saturating_sub(span).max(s0))
            .map(|a| mean(a, a + span))
            .fold(f64::NAN, f64::min);
        let recovery_s = (s1 + 1..n.saturating_sub(span - 1))
            .find(|&a| mean(a, a + span) >= 0.9 * baseline)
            .map(|a| (a + span) as f64 - p1);
        PinFigures {
            span,
            baseline,
            during_mean: mean(s0, s1),
            during_low,
            recovery_s,
        }
    }
}

/// The ignored benchmark test `name` of `crates/tenure/tests/pg_bench.rs`
/// (release build) against `server`.
fn pg_bench_test(server: &Server, name: &str) -> Command {
    let mut c = cargo();
    c.args([
        "test",
        "--locked",
        "--release",
        "-p",
        "tenure",
        "--test",
        "pg_bench",
        "--",
    ])
    .args(["--ignored", "--exact", name, "--nocapture"])
    .env("TENURE_TEST_BACKEND", "postgres")
    .env("TENURE_TEST_PG_URL", &server.url);
    c
}

/// Throughput by connection count and batch size, the peer rows (drain and
/// bulk submission), the batched targets and the waiting rows on one
/// server.
fn throughput(
    server: &Server,
    durable: bool,
    label: &str,
    smoke: bool,
    md: &mut String,
    json: &mut Vec<serde_json::Value>,
) -> Result {
    let out = output(
        pg_bench_test(server, "pg_bench")
            .env("TENURE_BENCH_MILLIS", if smoke { "300" } else { "5000" })
            .env("TENURE_BENCH_JOBS", if smoke { "2000" } else { "60000" })
            .env("TENURE_BENCH_BATCHES", "1,16")
            .env(
                "TENURE_BENCH_CONNS",
                if smoke { "1,4" } else { "1,4,16,64" },
            ),
    )?;
    md.push_str(&format!(
        "\n**{label}**\n\n| PostgreSQL workload (server on this machine) | value | \
         round trips per claim + completion (claim, completion) | HOT share of job updates |\n\
         |---|---:|---:|---:|\n",
    ));
    let mut rows = Vec::new();
    for line in out
        .lines()
        .filter_map(|l| l.split_once("BENCH ").map(|x| x.1))
    {
        let mut row = parse_json(line, "pg_bench BENCH line")?;
        row["server"] = serde_json::Value::from(if durable { "durable" } else { "no-fsync" });
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(format!("no benchmark rows in the output:\n{out}"));
    }
    let rate = |c: &serde_json::Value, b: u64| {
        rows.iter()
            .find(|r| r["connections"] == *c && r["batch"] == b)
            .and_then(|r| r["cycles_per_s"].as_f64())
    };
    for row in &rows {
        let how = if row["batch"] == 1 {
            "claim_next + complete".to_string()
        } else {
            format!("claim_next_many + complete_many, batch {}", row["batch"])
        };
        let ratio = match (rate(&row["connections"], 1), row["cycles_per_s"].as_f64()) {
            (Some(b1), Some(x)) if row["batch"] != 1 => format!(" ({:.2} × batch 1)", x / b1),
            _ => String::new(),
        };
        md.push_str(&format!(
            "| {how}, {} connections in {} processes ({} busy retries) | {} jobs/s{ratio} | {} ({}, {}) | {} |\n",
            row["connections"],
            row["processes"],
            row["busy"],
            row["cycles_per_s"],
            row["round_trips"],
            row["round_trips_claim"],
            row["round_trips_complete"],
            row["hot_update_share"],
        ));
    }
    let from = json.len();
    crate::pg_peer::bench(server, smoke, md, json)?;
    crate::pg_peer::enqueue(server, smoke, md, json)?;
    md.push_str(&batched_targets(&rows, &json[from..]));
    json.extend(rows);
    // tenure beside graphile-worker and pg-boss on this server.
    crate::pg_peer::js_peers(server, smoke, md, json)?;
    // Waiting for work on PostgreSQL (LISTEN/NOTIFY): the rows of
    // `bench::waiting` on a database of this server.
    let bin = crate::bench::bench_bin()?;
    let cfg = crate::bench::Cfg {
        smoke,
        runs: 1,
        cycles: 0,
    };
    let mut waits = Vec::new();
    crate::bench::waiting(
        &bin,
        &cfg,
        Some(&server.database("bench_wait")?),
        &mut waits,
        json,
    )?;
    md.push_str(&format!(
        "\n| waiting ({label}) | value | target |\n|---|---:|---|\n"
    ));
    for r in &waits {
        md.push_str(&r.markdown_cells());
        md.push('\n');
    }
    ops_rows(server, label, smoke, md, json)
}

/// The statistics and claim gates rows of `bench::stats_rows` and
/// `bench::gates_rows` on databases of `server`, and in a full run the
/// lifecycles against the tree before the claim gates
/// ([`before_gates_rows`]).
fn ops_rows(
    server: &Server,
    label: &str,
    smoke: bool,
    md: &mut String,
    json: &mut Vec<serde_json::Value>,
) -> Result {
    let bin = crate::bench::bench_bin()?;
    let cfg = crate::bench::Cfg {
        smoke,
        runs: 1,
        cycles: 0,
    };
    let mut rows = Vec::new();
    crate::bench::stats_rows(
        &bin,
        &cfg,
        Some((
            &server.database("bench_stats")?,
            &server.database("bench_stats_poll")?,
        )),
        &mut rows,
        json,
    )?;
    crate::bench::gates_rows(
        &bin,
        &cfg,
        Some(&server.database("bench_gates")?),
        &mut rows,
        json,
    )?;
    if !smoke {
        before_gates_rows(server, label, smoke, &mut rows, json)?;
    }
    table(md, &format!("statistics and claim gates ({label})"), &rows);
    Ok(())
}

/// `bench::pg_before_gates_rows` on two new databases of `server`, one
/// for each tree.
fn before_gates_rows(
    server: &Server,
    label: &str,
    smoke: bool,
    rows: &mut Vec<crate::bench::Row>,
    json: &mut Vec<serde_json::Value>,
) -> Result {
    crate::bench::pg_before_gates_rows(
        smoke,
        &server.database("bench_lifecycle")?,
        &server.database("bench_lifecycle_base")?,
        label,
        rows,
        json,
    )
}

/// A table of `rows` headed `title` after `md`.
fn table(md: &mut String, title: &str, rows: &[crate::bench::Row]) {
    md.push_str(&format!("\n| {title} | value | target |\n|---|---:|---|\n"));
    for r in rows {
        md.push_str(&r.markdown_cells());
        md.push('\n');
    }
}

/// The batched calls' targets on one server: batch 16 at 4 connections
/// against batch 1 at 4 connections and against procrastinate's drain with
/// 4 worker processes (tenure's rows from the Rust harness, the peer's from
/// `bench/pg_peer.py`, on the same server in the same run), and bulk submit
/// against procrastinate's `batch_defer`: the median of the per-pair ratios
/// of `pg_peer.py enqueue` (Python on both sides, alternating pairs).
fn batched_targets(rows: &[serde_json::Value], peer: &[serde_json::Value]) -> String {
    let rate = |b: u64| {
        rows.iter()
            .find(|r| r["connections"] == 4 && r["batch"] == b)
            .and_then(|r| r["cycles_per_s"].as_f64())
    };
    let summary = peer
        .iter()
        .find(|r| r["workload"] == "pg-peer-summary" && r["workers"] == 4);
    let q_drain = summary.and_then(|s| s["procrastinate_jobs_per_s"].as_f64());
    let mut md = String::from("\n| batched calls: target | ratio | met |\n|---|---:|---|\n");
    for (what, x, base, want) in [
        (
            "claim_next_many + complete_many, batch 16, 4 connections ≥ 5 × batch 1 at 4 connections",
            rate(16),
            rate(1),
            5.0,
        ),
        (
            "the same ≥ 5 × procrastinate's drain with 4 worker processes (Rust harness vs Python peer)",
            rate(16),
            q_drain,
            5.0,
        ),
        (BULK_TARGET, enqueue_ratio(peer), Some(1.0), 1.0),
    ] {
        md.push_str(&target_row(what, x, base, want));
    }
    md
}

const BULK_TARGET: &str = "bulk submit (submit_many, chunks of 1000) ≥ 1.0 × procrastinate \
     batch_defer (chunks of 1000; median of the pairs' ratios)";

/// The bulk submission's figure: the median of the per-pair ratios of
/// `pg_peer.py enqueue`.
fn enqueue_ratio(peer: &[serde_json::Value]) -> Option<f64> {
    peer.iter()
        .find(|r| r["workload"] == "pg-enqueue-summary")
        .and_then(|s| s["ratio"].as_f64())
}

/// One row of a target table: `x / base` against `want`.
fn target_row(what: &str, x: Option<f64>, base: Option<f64>, want: f64) -> String {
    match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => format!(
            "| {what} | {:.2} | {} |\n",
            x / b,
            if x / b >= want { "yes" } else { "no" }
        ),
        _ => format!("| {what} | n/a | not measured |\n"),
    }
}

const C_WORKER: &str = r#"
#include <stdio.h>
#include <string.h>
#include <tenure.h>
#define CHECK(x) do { tenure_status s_ = (x); if (s_ != TENURE_OK) { \
    fprintf(stderr, "%s failed: %d\n", #x, (int)s_); return 1; } } while (0)
int main(int argc, char **argv) {
    struct tenure_authority *a = NULL;
    if (argc != 3) return 2;
    CHECK(tenure_authority_open(argv[1], NULL, &a));
    if (strcmp(argv[2], "seed") == 0) {
        bool created = false;
        CHECK(tenure_authority_create_production(a, "c", &created));
        for (int i = 0; i < 40; i++) {
            char id[32];
            snprintf(id, sizeof id, "job-%03d", i);
            struct tenure_job_spec spec;
            CHECK(tenure_job_spec_init(&spec));
            spec.job = id;
            tenure_submitted sub;
            CHECK(tenure_authority_submit(a, "c", &spec, &sub));
        }
    } else {
        int done = 0;
        for (;;) {
            struct tenure_lease *l = NULL;
            tenure_status s = tenure_authority_claim_next(a, "c", "c-worker", 30000000, &l);
            if (s == TENURE_NO_JOB_AVAILABLE) break;
            if (s == TENURE_BUSY) continue;
            CHECK(s);
            CHECK(tenure_lease_renew(l, 60000000));
            CHECK(tenure_lease_complete(l, NULL, 0));
            tenure_lease_free(l);
            done++;
        }
        printf("DONE %d\n", done);
    }
    tenure_authority_free(a);
    return 0;
}
"#;

fn c_lifecycle(server: &Server) -> Result {
    let url = server.database("xtask_c")?;
    let lib = crate::capi::build_lib()?;
    let tmp = std::env::temp_dir().join(format!("tenure-pg-c-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let src = tmp.join("pg_worker.c");
    let exe = tmp.join("pg_worker");
    std::fs::write(&src, C_WORKER).map_err(|e| e.to_string())?;
    let r = (|| {
        run(Command::new("cc")
            .args(["-std=c11", "-Wall", "-Werror", "-I"])
            .arg(crate::util::root().join("include"))
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .arg("-L")
            .arg(&lib.dir)
            .arg("-ltenure"))?;
        let c_run = |role: &str| {
            let mut c = Command::new(&exe);
            c.args([url.as_str(), role])
                .env("LD_LIBRARY_PATH", &lib.dir)
                .stdout(std::process::Stdio::piped());
            c
        };
        output(&mut c_run("seed"))?;
        let kids: Vec<_> = (0..2)
            .map(|_| c_run("work").spawn().map_err(|e| e.to_string()))
            .collect::<Result<_>>()?;
        let mut total = 0;
        for k in kids {
            let out = k.wait_with_output().map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err("a C worker failed".into());
            }
            total += String::from_utf8_lossy(&out.stdout)
                .lines()
                .find_map(|l| l.strip_prefix("DONE "))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .ok_or("C worker printed no result")?;
        }
        if total != 40 {
            return Err(format!("C workers completed {total} of 40 jobs"));
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_targets_are_ratios_of_the_same_run() {
        let j = |s: &str| parse_json(s, "row").unwrap();
        let rows = [
            j(r#"{"connections":4,"batch":1,"cycles_per_s":100.0}"#),
            j(r#"{"connections":4,"batch":16,"cycles_per_s":600.0}"#),
        ];
        let peer = [
            j(r#"{"workload":"pg-peer-summary","workers":4,"procrastinate_jobs_per_s":200.0}"#),
            j(r#"{"workload":"pg-enqueue","pair":0,"ratio":3.0}"#),
            j(r#"{"workload":"pg-enqueue-summary","ratio":1.1,"ratio_min":0.8,"ratio_max":3.0}"#),
        ];
        let md = batched_targets(&rows, &peer);
        assert!(
            md.contains("≥ 5 × batch 1 at 4 connections | 6.00 | yes |"),
            "{md}"
        );
        assert!(
            md.contains("(Rust harness vs Python peer) | 3.00 | no |"),
            "{md}"
        );
        assert!(
            md.contains("median of the pairs' ratios) | 1.10 | yes |"),
            "{md}"
        );
        assert!(batched_targets(&rows, &[]).contains("not measured"));
    }

    #[test]
    fn soak_plans_report_buffers_and_time_before_and_during_the_pin() {
        let out = "\
EXPLAIN before the pin claim-next: Limit  (cost=0.27..6.22 rows=1 width=12)
EXPLAIN before the pin claim-next:   Buffers: shared hit=21
EXPLAIN before the pin claim-next:   ->  Index Scan using jobs_ready on jobs
EXPLAIN before the pin claim-next:         Buffers: shared hit=21
EXPLAIN before the pin claim-next: Planning:
EXPLAIN before the pin claim-next:   Buffers: shared hit=238
EXPLAIN before the pin claim-next: Execution Time: 0.118 ms
EXPLAIN pinned claim-next:   Buffers: shared hit=12344
EXPLAIN pinned claim-next: Execution Time: 12.290 ms
";
        let md = soak_plans(out);
        assert!(
            md.contains(
                "- claim-next: before the pin 21 buffers, 0.118 ms; \
                 pinned (5 s before the release) 12344 buffers, 12.290 ms\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("- events: before the pin ? buffers, ?; "),
            "{md}"
        );
    }

    #[test]
    fn soak_rows_say_the_arrival_rate_and_the_arrivals_held_back() {
        let row = |rate: &str| {
            parse_json(
                &format!(
                r#"{{"jobs":20,"window":10,"rate":{rate},"held_back":7,"retention_s":60,
                   "pin_s":1,"pin_start_s":1.0,"pin_end_s":2.0,"check_ok":true,
                   "windows":[{{"jobs_per_s":10.0,"tables":{{"jobs":{{"bytes":1048576,"dead":0}}}}}},
                              {{"jobs_per_s":9.0,"tables":{{"jobs":{{"bytes":2097152,"dead":5}}}}}}],
                   "per_second":[10,10,10,10,10]}}"#
                ),
                "row",
            )
            .unwrap()
        };
        let md = soak_rows(&row("300")).unwrap();
        assert!(
            md.contains("soak: 20 jobs arriving at 300 jobs/s (claim-next + complete"),
            "{md}"
        );
        assert!(md.contains("7 arrivals held back"), "{md}");
        assert!(
            md.contains("| 2.00 × after the first 10 | ≤ 2 × — met |"),
            "{md}"
        );
        assert!(
            md.contains("| 0.90 × the first 10 | ≥ 0.9 × — met |"),
            "{md}"
        );
        let md = soak_rows(&row("0")).unwrap();
        assert!(md.contains("soak: 20 jobs unpaced (claim-next"), "{md}");
    }

    #[test]
    fn pin_figures_compare_spans_with_the_minute_before() {
        // 100 jobs/s for 60 s, a pin from 60.5 s to 120.5 s during which
        // seconds 80..90 run at 40, then 70 for 20 s and 95 after.
        let mut secs = vec![100.0; 60];
        secs.extend(std::iter::repeat_n(100.0, 20));
        secs.extend(std::iter::repeat_n(40.0, 10));
        secs.extend(std::iter::repeat_n(100.0, 31));
        secs.extend(std::iter::repeat_n(70.0, 20));
        secs.extend(std::iter::repeat_n(95.0, 40));
        let p = PinFigures::of(&secs, 60.5, 120.5, 60.0);
        assert_eq!(p.baseline, 100.0);
        assert_eq!(p.during_low, 40.0);
        // The first span at ≥ 90 after 120.5 is 139..149 (2 × 70 + 8 × 95).
        assert_eq!(p.recovery_s, Some(28.5));
        // A run that ends before recovering says so.
        let p = PinFigures::of(&secs[..145], 60.5, 120.5, 60.0);
        assert_eq!(p.recovery_s, None);
        // A pin shorter than a span (the smoke run's 3 s) is one span.
        let p = PinFigures::of(&secs, 79.5, 82.5, 3.0);
        assert_eq!((p.span, p.baseline, p.during_low), (3, 100.0, 40.0));
    }
}
