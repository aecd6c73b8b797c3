//! `cargo xtask torture [--quick]`: the reliability campaigns of `torture/`
//! (crash, clock, storm, fuzz) and the PostgreSQL server campaign, each
//! printing what it tried and found and failing on any violation. `cargo
//! xtask test` runs the quick form.

use crate::util::{apt_install, cargo, root, run, step, Result};
use std::path::PathBuf;
use std::process::Command;

struct Plan {
    crash_iterations: u32,
    storm_procs: u32,
    storm_millis: u32,
    storm_jobs: u32,
    fuzz_cases: u32,
}

/// Storm workers from the other surfaces: the C worker (built against the
/// freshly linked libtenure) and, when the wheel is installed in `.venv`, the
/// Python worker. Each is a command line run with TENURE_DB /
/// TENURE_PRODUCTION / TENURE_MILLIS / TENURE_SECRETS_FILE in its
/// environment, printing `STORM <completed> <rejected>`.
fn extra_storm_workers(work: &std::path::Path) -> Result<Vec<String>> {
    let mut v = Vec::new();
    let lib = crate::capi::build_lib()?;
    let exe = work.join("storm_worker_c");
    crate::capi::cc_client(
        &root().join("torture/workers/storm_worker.c"),
        &root().join("include"),
        &lib.dir,
        &exe,
        &[],
    )?;
    v.push(exe.display().to_string());
    let py = root().join(".venv/bin/python");
    let has_wheel = Command::new(&py)
        .args(["-c", "import tenure"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if has_wheel {
        v.push(format!(
            "{} {}",
            py.display(),
            root().join("torture/workers/storm_worker.py").display()
        ));
    } else {
        println!("(no tenure wheel in .venv: the storm runs without Python workers)");
    }
    Ok(v)
}

pub fn torture(quick: bool) -> Result {
    let plan = if quick {
        Plan {
            crash_iterations: 50,
            storm_procs: 24,
            storm_millis: 3_000,
            storm_jobs: 1_500,
            fuzz_cases: 3_000,
        }
    } else {
        Plan {
            crash_iterations: 1_000,
            storm_procs: 100,
            storm_millis: 20_000,
            storm_jobs: 20_000,
            fuzz_cases: 200_000,
        }
    };
    step(&format!(
        "torture ({})",
        if quick { "quick" } else { "full" }
    ));
    apt_install(&["faketime"])?;
    let target = crate::capi::target_dir()?;
    let torture_target = target.join("torture");
    // The campaign code's own tests (e.g. the secret scanner finds what it
    // looks for), then the campaign binary; both with torture/Cargo.lock as
    // committed.
    for verb in ["test", "build"] {
        run(cargo()
            .args([
                verb,
                "--locked",
                "--release",
                "--manifest-path",
                "torture/Cargo.toml",
            ])
            .env("CARGO_TARGET_DIR", &torture_target))?;
    }
    run(cargo().args(["build", "--locked", "-p", "tenure-cli"]))?;
    let cli = target.join("debug/tenure");
    let bin = torture_target.join("release/tenure-torture");
    let work = tempdir()?;
    let campaign = |name: &str, args: &[String]| -> Result {
        step(&format!("campaign: {name}"));
        run(Command::new(&bin).arg(name).args(args))
    };
    let s = |x: &dyn std::fmt::Display| x.to_string();
    campaign(
        "crash",
        &[
            "--iterations".into(),
            s(&plan.crash_iterations),
            "--dir".into(),
            work.join("crash").display().to_string(),
            "--cli".into(),
            cli.display().to_string(),
        ],
    )?;
    // The same with retention on: automatic and explicit prune steps run
    // among the transitions and get killed too.
    campaign(
        "crash",
        &[
            "--iterations".into(),
            s(&plan.crash_iterations.div_ceil(2)),
            "--dir".into(),
            work.join("crash-prune").display().to_string(),
            "--cli".into(),
            cli.display().to_string(),
            "--prune".into(),
            "1".into(),
        ],
    )?;
    campaign(
        "clock",
        &[
            "--dir".into(),
            work.join("clock").display().to_string(),
            "--cli".into(),
            cli.display().to_string(),
        ],
    )?;
    let mut storm = vec![
        "--procs".into(),
        s(&plan.storm_procs),
        "--millis".into(),
        s(&plan.storm_millis),
        "--jobs".into(),
        s(&plan.storm_jobs),
        "--dir".into(),
        work.join("storm").display().to_string(),
    ];
    for w in extra_storm_workers(&work)? {
        storm.push("--worker-cmd".into());
        storm.push(w);
    }
    campaign("storm", &storm)?;
    // Schedules: 16 scheduler processes on one SQLite store, a schedule
    // every second, 5 minutes (20 s quick): one job per slot, from the log.
    step("campaign: schedulers");
    run(cargo()
        .args([
            "test",
            "--locked",
            "-p",
            "tenure",
            "--test",
            "recurring",
            "sixteen_schedulers_enqueue_every_slot_exactly_once",
        ])
        .env("TENURE_SCHEDULERS_SECS", if quick { "20" } else { "300" }))?;
    campaign("fuzz", &["--cases".into(), s(&plan.fuzz_cases)])?;
    capi_fuzz(if quick { 20_000 } else { 1_000_000 })?;
    // Worker processes at a concurrency limit of three (16 on SQLite): the
    // event log never shows four live leases. `cargo test` runs 5 s of it;
    // the full campaign runs 60 s.
    if !quick {
        step("campaign: concurrency limit (60 s)");
        run(cargo()
            .args([
                "test",
                "--locked",
                "-p",
                "tenure",
                "--test",
                "gates",
                "processes_at_a_concurrency_limit_of_three_never_hold_four_leases",
            ])
            .env("TENURE_GATES_SOAK_SECS", "60"))?;
    }
    let _ = std::fs::remove_dir_all(&work);
    if quick {
        postgres(true)?;
    } else {
        postgres_storms()?;
        postgres(false)?;
    }
    println!("\ntorture: all campaigns passed");
    Ok(())
}

/// The process campaigns of schedules and claim gates on PostgreSQL, on a
/// throwaway server: 16 scheduler processes for 5 minutes (one job per
/// slot, from the log) and 32 worker processes at a concurrency limit of
/// three for 60 s (never four live leases).
fn postgres_storms() -> Result {
    let server = crate::pg::start()?;
    for (name, test, filter, env) in [
        (
            "campaign: schedulers on PostgreSQL (5 minutes)",
            "recurring",
            "sixteen_schedulers_enqueue_every_slot_exactly_once",
            ("TENURE_SCHEDULERS_SECS", "300"),
        ),
        (
            "campaign: concurrency limit on PostgreSQL (60 s)",
            "gates",
            "processes_at_a_concurrency_limit_of_three_never_hold_four_leases",
            ("TENURE_GATES_SOAK_SECS", "60"),
        ),
    ] {
        step(name);
        run(cargo()
            .args(["test", "--locked", "-p", "tenure", "--test", test, filter])
            .env("TENURE_TEST_BACKEND", "postgres")
            .env("TENURE_TEST_PG_URL", &server.url)
            .env(env.0, env.1))?;
    }
    Ok(())
}

/// The worker programs of the PostgreSQL server campaign, as the
/// environment `postgres_campaign` reads: `tenure` (`tenure work`), the C++
/// worker `torture/workers/pg_campaign_worker.cpp` linked against the
/// freshly built libtenure, and `.venv`'s Python with the wheel just built
/// and installed (it runs `torture/workers/pg_campaign_worker.py`).
fn campaign_workers() -> Result<Vec<(&'static str, PathBuf)>> {
    run(cargo().args(["build", "--locked", "-p", "tenure-cli"]))?;
    let target = crate::capi::target_dir()?;
    let cli = target.join("debug/tenure");
    apt_install(&["g++"])?;
    let lib = crate::capi::build_lib()?;
    let dir = target.join("campaign");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cpp = dir.join("pg_campaign_worker");
    step("C++ worker of the PostgreSQL campaign");
    crate::cpp::build_program(
        &lib,
        &root().join("torture/workers/pg_campaign_worker.cpp"),
        &cpp,
    )?;
    let (py, _) = crate::python::install_wheel(false)?;
    Ok(vec![
        ("TENURE_CAMPAIGN_CLI", cli),
        ("TENURE_CAMPAIGN_CPP_WORKER", cpp),
        ("TENURE_CAMPAIGN_PYTHON", py),
    ])
}

/// The PostgreSQL server campaign (`postgres_campaign` in
/// `crates/tenure/tests/pg_outage.rs`, on a durable server of its own):
/// workers of every kind (Rust, C++, Python threaded and asyncio, `tenure
/// work`) drain a stream of jobs through a pinned xmin for 60 s,
/// `pg_terminate_backend` of every tenure connection every 200 ms for 60 s,
/// other clients holding every connection slot for 30 s, `pg_ctl restart -m
/// fast` and `-m immediate`, and 20 `kill -9` of the postmaster at random
/// points (the quick form, in `cargo xtask test`: 5 s cells, 3 kills).
/// Prints the report (per cell, per worker kind, totals) as markdown and
/// writes it to `target/torture-postgres.md`; fails when an acknowledged
/// transition or a job was lost, a job completed twice or ran again after
/// a finished run, a worker exited, or a kind did not run.
pub fn postgres(quick: bool) -> Result {
    let workers = campaign_workers()?;
    step(&format!(
        "campaign: PostgreSQL server ({})",
        if quick { "quick" } else { "full" }
    ));
    let (pin, storm, exhaust, kills) = if quick {
        ("5", "5", "5", "3")
    } else {
        ("60", "60", "30", "20")
    };
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--locked",
        "-p",
        "tenure",
        "--test",
        "pg_outage",
        "--",
        "--ignored",
        "--exact",
        "postgres_campaign",
        "--nocapture",
    ])
    .env("TENURE_TEST_BACKEND", "postgres")
    .env(
        "TENURE_TEST_PG_URL",
        "unused: the campaign starts its own server",
    )
    .env("TENURE_CAMPAIGN_PIN_S", pin)
    .env("TENURE_CAMPAIGN_STORM_S", storm)
    .env("TENURE_CAMPAIGN_EXHAUST_S", exhaust)
    .env("TENURE_CAMPAIGN_KILLS", kills)
    .envs(workers.iter().map(|(k, v)| (k, v)));
    // The campaign's notes go to stderr as they come; its report lines are
    // on stdout, tabled even when it failed.
    eprintln!("$ {}", crate::util::show(&cmd));
    let res = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the campaign: {e}"))?;
    let out = String::from_utf8_lossy(&res.stdout);
    let md = campaign_table(&out);
    if let Ok(md) = &md {
        print!("{md}");
        let path = crate::capi::target_dir()?.join("torture-postgres.md");
        std::fs::write(&path, md).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("(written to {})", path.display());
    }
    if !res.status.success() {
        print!("{out}");
        return Err(format!("the PostgreSQL campaign failed ({})", res.status));
    }
    md.map(|_| ())
}

/// The markdown report of the campaign's `CELL` and `TOTALS` lines.
fn campaign_table(out: &str) -> Result<String> {
    let mut md = String::from(
        "| cell | seconds | throughput before (jobs/s) | during / before | recovery to 0.9x (s) | jobs run again | workers exited |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut totals = None;
    for line in out.lines() {
        if let Some(j) = line.strip_prefix("CELL ") {
            let v = crate::util::parse_json(j, "campaign CELL line")?;
            md.push_str(&format!(
                "| {} | {} | {:.0} | {:.2} | {} | {} | {} |\n",
                v["cell"].as_str().unwrap_or("?"),
                v["seconds"],
                v["before_per_s"].as_f64().unwrap_or(f64::NAN),
                v["during_ratio"].as_f64().unwrap_or(f64::NAN),
                if v["recovery_s"].is_null() {
                    "not within 30 s".to_owned()
                } else {
                    v["recovery_s"].to_string()
                },
                v["run_again"],
                v["exited"]
            ));
        } else if let Some(j) = line.strip_prefix("TOTALS ") {
            totals = Some(crate::util::parse_json(j, "campaign TOTALS line")?);
        }
    }
    let t = totals.ok_or("the campaign printed no TOTALS line")?;
    md.push_str(
        "\n| worker | handler runs | completions acknowledged | completed in the store | other reports | outages ridden out | exited |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut kinds = 0;
    for line in out.lines() {
        if let Some(j) = line.strip_prefix("KIND ") {
            let v = crate::util::parse_json(j, "campaign KIND line")?;
            kinds += 1;
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                v["kind"].as_str().unwrap_or("?"),
                v["runs"],
                v["completed"],
                v["completed_in_store"],
                v["other_reports"],
                v["outages"],
                v["exited"]
            ));
        }
    }
    if kinds != 5 {
        return Err(format!(
            "the campaign ran {kinds} worker kinds, not 5 (Rust, Python threads, Python asyncio, C++, tenure work)"
        ));
    }
    md.push_str("\n| over the whole campaign | count |\n|---|---:|\n");
    for (k, label) in [
        ("enqueued", "jobs enqueued"),
        ("completed", "jobs completed"),
        ("acknowledged_lost", "acknowledged transitions lost"),
        ("double_completions", "double completions"),
        (
            "run_again",
            "jobs run again after a run that finished (60 s leases)",
        ),
        ("run_twice", "jobs run more than once"),
        (
            "jobs_lost",
            "jobs lost (enqueued - completed - failed - cancelled)",
        ),
        ("worker_exited", "worker processes exited"),
        ("outages", "outages the workers rode out (all kinds)"),
        ("other_reports", "reports other than completed"),
    ] {
        md.push_str(&format!("| {label} | {} |\n", t[k]));
    }
    Ok(md)
}

/// The C-ABI fuzz driver (`torture/fuzz/capi_driver.c`): `iterations`
/// generated calls against the freshly linked libtenure, built with
/// ASan/UBSan and run with LeakSanitizer on, bounded to 10 minutes. It fails
/// on any crash, sanitizer report, leak, unknown status or out-parameter
/// written on failure; its last line must be `N passed, 0 failed`.
fn capi_fuzz(iterations: u32) -> Result {
    step(&format!("campaign: capi-fuzz ({iterations} iterations)"));
    crate::probes::check()?;
    let lib = crate::capi::build_lib()?;
    let work = std::env::temp_dir().join(format!("tenure-capi-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let exe = work.join("capi_driver");
    crate::capi::cc_client(
        &root().join("torture/fuzz/capi_driver.c"),
        &root().join("include"),
        &lib.dir,
        &exe,
        &[],
    )?;
    let out = Command::new(&exe)
        .arg(&work)
        .arg(iterations.to_string())
        .arg("600")
        .env(
            "ASAN_OPTIONS",
            "detect_leaks=1:abort_on_error=0:halt_on_error=1",
        )
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&work);
    let last = stdout.lines().last().unwrap_or("");
    if !out.status.success() || !last.ends_with(" passed, 0 failed") {
        return Err(format!("capi-fuzz failed ({})", out.status));
    }
    Ok(())
}

fn tempdir() -> Result<PathBuf> {
    let d = std::env::temp_dir().join(format!("tenure-torture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
    Ok(d)
}
