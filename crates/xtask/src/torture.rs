//! `cargo xtask torture [--quick]`: the reliability campaigns of `torture/`
//! (crash, clock, storm, fuzz), each printing what it tried and found and
//! failing on any violation. `cargo xtask test` runs the quick form.

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
    let _ = std::fs::remove_dir_all(&work);
    println!("\ntorture: all campaigns passed");
    Ok(())
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
