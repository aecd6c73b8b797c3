//! The C, C++ and Python life-cycle test suites, pointed at the throwaway
//! PostgreSQL server of `cargo xtask test` / `cargo xtask pg`: the same
//! life-cycle suites as on SQLite.
//!
//! Each suite's harness makes its own fresh stores; this step only tells it
//! where the server is, with the variables the Rust suite reads plus what the
//! harnesses need to create databases without libpq:
//!
//! - `TENURE_TEST_BACKEND=postgres`, `TENURE_TEST_PG_URL=<maintenance URL>`;
//! - `TENURE_TEST_CREATEDB=<path of createdb>` and `PGHOST`, `PGPORT`,
//!   `PGUSER` (so `createdb NAME` reaches the server); `TENURE_TEST_PSQL`
//!   (`psql`, for the Python test that raises a server store's schema
//!   version).
//!
//! A harness's fresh store is then the URL of a new empty database
//! (`tests/c/harness.h` `store_addr`, `cpp/tests/support.hpp` `fresh_db`,
//! `tests/python/conftest.py` `fresh_store`). Checks that only make sense for
//! a SQLite file (a foreign file, a raised `user_version`, a client-side clock
//! rollback under libfaketime, the store-wide writer lock) print
//! "skipped on PostgreSQL: <why>" (C, C++) or are pytest skips with the
//! reason; this step counts and reports them.
//!
//! What runs (the suites left out exercise SQLite files, libfaketime on the
//! local clock, C++ durations, packaging or typing, and stay SQLite-only:
//! `test_clock.c`, `test_census.c`, `test_durations.cpp`,
//! `test_census.cpp`, `test_census.py`, `test_packaging.py`,
//! `test_typing.py`):
//! - C: the files of `C_SUITES` below (ASan/UBSan, as on SQLite);
//! - C++: the sources of `CPP_SOURCES`, C++20, ASan/UBSan;
//! - Python: the files of `PY_SUITES`,
//!   against the wheel installed into `.venv` (built and installed here, so
//!   `cargo xtask pg` works from a fresh clone too);
//! - then `bench/harness-adapter/test_adapter.py`: the adapter for the
//!   independent benchmark's runner, driven through that runner's contract
//!   on a new database of the same server.

use crate::pg::Server;
use crate::util::{apt_install, root, show, step, Result};
use std::process::Command;
use std::time::Instant;

/// The C suites run on PostgreSQL (`tests/c/test_<name>.c`).
const C_SUITES: &[&str] = &[
    "lifecycle",
    "bad_input",
    "threads",
    "token_handoff",
    "wait",
    "batch",
    "schedule",
    "retention",
    "idempotent",
    "stats",
    "steering",
    "recurring",
];
/// The C++ sources of the PostgreSQL doctest program (`cpp/tests/`),
/// `test_main.cpp` first (the summary names the others).
const CPP_SOURCES: &[&str] = &[
    "test_main.cpp",
    "test_tenure.cpp",
    "test_wait.cpp",
    "test_batch.cpp",
    "test_schedule.cpp",
    "test_retention.cpp",
    "test_idempotent.cpp",
    "test_stats.cpp",
    "test_steering.cpp",
    "test_recurring.cpp",
];
/// The Python suites run on PostgreSQL (`tests/python/`).
const PY_SUITES: &[&str] = &[
    "test_lifecycle.py",
    "test_stats.py",
    "test_errors.py",
    "test_processes.py",
    "test_threads.py",
    "test_cross_language.py",
    "test_durations.py",
    "test_datetimes.py",
    "test_aio.py",
    "test_aio_processes.py",
    "test_wait.py",
    "test_keeper.py",
    "test_worker.py",
    "test_retention.py",
    "test_batch.py",
    "test_schedule.py",
    "test_idempotent.py",
    "test_schedules.py",
    "test_outage.py",
    "test_steering.py",
];

/// The adapter for the independent benchmark's runner, driven through its
/// contract (`bench/harness-adapter/main.py`).
const ADAPTER_TEST: &str = "bench/harness-adapter/test_adapter.py";

/// The environment that points the harnesses at `server`.
fn suite_env(server: &Server) -> Result<Vec<(String, String)>> {
    let createdb = crate::pg::find_bin("createdb").ok_or("createdb not found")?;
    let psql = crate::pg::find_bin("psql").ok_or("psql not found")?;
    let rest = server
        .url
        .split_once("://")
        .map(|x| x.1)
        .ok_or("bad server URL")?;
    let (user, rest) = rest.split_once('@').ok_or("bad server URL")?;
    let (host_port, _) = rest.split_once('/').ok_or("bad server URL")?;
    let (host, port) = host_port.rsplit_once(':').ok_or("bad server URL")?;
    Ok([
        ("TENURE_TEST_BACKEND", "postgres"),
        ("TENURE_TEST_PG_URL", server.url.as_str()),
        ("TENURE_TEST_CREATEDB", &createdb.to_string_lossy()),
        ("TENURE_TEST_PSQL", &psql.to_string_lossy()),
        ("PGHOST", host),
        ("PGPORT", port),
        ("PGUSER", user),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect())
}

fn skips(out: &str) -> usize {
    out.lines()
        .filter(|l| l.starts_with("skipped on PostgreSQL:"))
        .count()
}

/// Run a test program, echo its output, require success; returns stdout.
fn run_captured(cmd: &mut Command, what: &str) -> Result<String> {
    eprintln!("$ {}", show(cmd));
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{what} failed ({})", out.status))
    }
}

/// `cargo xtask pg-suites`: only this step, on its own throwaway server (the
/// full PostgreSQL part is `cargo xtask pg`).
pub fn standalone() -> Result {
    let server = crate::pg::start()?;
    run(&server)
}

/// The C, C++ and Python life-cycle suites against `server`; prints what ran,
/// what was skipped and how long it took.
pub fn run(server: &Server) -> Result {
    let started = Instant::now();
    let env = suite_env(server)?;
    let mut summary = Vec::new();

    step("PostgreSQL: the C life-cycle suites against the server");
    let lib = crate::capi::build_lib()?;
    let outs = crate::capi::run_c_suites(&lib, "ctest-pg", C_SUITES, &env)?;
    for (suite, out) in C_SUITES.iter().zip(&outs) {
        let last = out.lines().last().unwrap_or("");
        summary.push(format!(
            "C test_{suite}.c: {last}, {} check group(s) skipped",
            skips(out)
        ));
    }

    step(&format!(
        "PostgreSQL: the C++ suite ({}) against the server",
        CPP_SOURCES[1..].join(", ")
    ));
    apt_install(&["g++", "doctest-dev"])?;
    let work = crate::capi::target_dir()?.join("cpp-pg-suite");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let bin = work.join("suite-pg");
    crate::cpp::build_suite(&lib, "-std=c++20", CPP_SOURCES, &bin)?;
    let out = run_captured(
        Command::new(&bin)
            .env("TENURE_TEST_DIR", &work)
            .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
            .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
            .envs(env.iter().map(|(k, v)| (k, v))),
        "C++ suite on PostgreSQL",
    )?;
    let cases = out
        .lines()
        .find(|l| l.starts_with("[doctest] test cases:"))
        .unwrap_or("")
        .trim_start_matches("[doctest] ");
    summary.push(format!(
        "C++ {}: {cases}; {} subcase(s) skipped",
        CPP_SOURCES[1..].join(", "),
        skips(&out)
    ));

    step("PostgreSQL: the Python suites against the server");
    let (py, wheel) = crate::python::install_wheel(false)?;
    let out = run_captured(
        Command::new(&py)
            .current_dir(root())
            .env("TENURE_WHEEL", &wheel)
            .env("TENURE_CAPI_LIB", lib.dir.join("libtenure.a"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(["-m", "pytest", "-p", "no:cacheprovider", "-rs"])
            .args(PY_SUITES.iter().map(|s| format!("tests/python/{s}"))),
        "pytest on PostgreSQL",
    )?;
    let last = out.lines().rfind(|l| l.contains(" passed")).unwrap_or("");
    summary.push(format!(
        "Python {}: {}",
        PY_SUITES.join(", "),
        last.trim_matches(|c| c == '=' || c == ' ')
    ));

    step("PostgreSQL: the benchmark-harness adapter through its contract (bench/harness-adapter)");
    let out = run_captured(
        Command::new(&py)
            .current_dir(root())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(["-m", "pytest", "-p", "no:cacheprovider", "-rs"])
            .arg(ADAPTER_TEST),
        "the harness adapter's test on PostgreSQL",
    )?;
    let last = out.lines().rfind(|l| l.contains(" passed")).unwrap_or("");
    summary.push(format!(
        "{ADAPTER_TEST}: {}",
        last.trim_matches(|c| c == '=' || c == ' ')
    ));

    println!("\nC / C++ / Python suites on PostgreSQL:");
    for line in &summary {
        println!("  {line}");
    }
    println!("  (took {:.0} s)", started.elapsed().as_secs_f64());
    Ok(())
}
