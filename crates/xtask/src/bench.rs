//! `cargo xtask bench [--smoke]`: run the benchmark workloads of
//! `crates/tenure-bench`, take medians, compute ratios against baselines
//! measured in the same run, and write the report of the run's kind over
//! the last one, `bench/results/latest-<kind>.{md,json}`, each headed by
//! when the run took place, the tree and the machine. Figures are never
//! asserted; `--smoke` runs tiny sizes so `cargo xtask test` proves the
//! harness works (its `*-smoke` reports are ignored by git).

use crate::util::{apt_install, cargo, output, parse_json, root, run, step, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct Cfg {
    pub(crate) smoke: bool,
    pub(crate) runs: usize,
    pub(crate) cycles: usize,
}

/// Lifecycle programs of the other surfaces.
struct Programs {
    c: PathBuf,
    cpp: PathBuf,
    /// A Python with `tenure` (and, in a full run, the peers) installed.
    python: Option<PathBuf>,
}

/// Peers of the Python row, pinned.
const PEERS: &[&str] = &[
    "litequeue==0.9",
    "persist-queue==1.1.0",
    "localqueue==1.4.1",
];

fn scratch() -> Result<PathBuf> {
    let d = std::env::temp_dir().join(format!(
        "tenure-bench-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
    Ok(d)
}

/// Build the C and C++ lifecycle programs against libtenure and find a
/// Python for the Python rows: a full run builds a release wheel into a
/// bench venv with the peers; a smoke run reuses `.venv` if it has tenure.
fn programs(smoke: bool) -> Result<Programs> {
    apt_install(&["gcc", "g++", "libc6-dev"])?;
    let lib = crate::capi::build_lib_profile(!smoke)?;
    let work = crate::capi::target_dir()?.join("bench-programs");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let link = |cmd: &mut Command| {
        cmd.arg("-I")
            .arg(root().join("include"))
            .arg("-I")
            .arg(root().join("cpp/include"))
            .arg("-L")
            .arg(&lib.dir)
            .arg(format!("-Wl,-rpath,{}", lib.dir.display()))
            .arg("-ltenure");
    };
    let c = work.join("c_bench");
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-O2", "-o"])
        .arg(&c)
        .arg(root().join("bench/c_bench.c"));
    link(&mut cc);
    run(&mut cc)?;
    let cpp = work.join("cpp_bench");
    let mut cxx = Command::new("g++");
    cxx.args(["-std=c++17", "-O2", "-o"])
        .arg(&cpp)
        .arg(root().join("bench/cpp_bench.cpp"));
    link(&mut cxx);
    run(&mut cxx)?;
    let dev = root().join(".venv");
    let python = if smoke {
        let py = crate::python::venv_python(&dev);
        let ok = Command::new(&py)
            .args(["-c", "import tenure"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then_some(py)
    } else {
        crate::python::ensure_venv(&dev)?;
        let wheel = crate::python::build_wheel(&dev, true)?;
        let venv = crate::capi::target_dir()?.join("bench-venv");
        if !crate::python::venv_python(&venv).exists() {
            run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        }
        let py = crate::python::venv_python(&venv);
        run(Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--force-reinstall",
            ])
            .arg(&wheel)
            .args(PEERS))?;
        Some(py)
    };
    Ok(Programs { c, cpp, python })
}

pub(crate) fn bench_bin() -> Result<PathBuf> {
    run(cargo().args(["build", "--locked", "--release", "-p", "tenure-bench"]))?;
    Ok(crate::capi::target_dir()?.join("release/tenure-bench"))
}

/// A number field of the JSON object a workload prints (NaN when absent).
fn num(json: &Value, field: &str) -> f64 {
    json[field].as_f64().unwrap_or(f64::NAN)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

/// The median of each round's ratio `x[i] / base[i]`, over the rounds in
/// which both ran (a run that did not is NaN). The runs of one round follow
/// one another, so a machine that speeds up or slows down between rounds
/// moves both sides of a round's ratio alike; a ratio of medians would
/// carry that drift.
fn paired_ratio(x: &[f64], base: &[f64]) -> f64 {
    median(x.iter().zip(base).map(|(x, b)| x / b).collect())
}

/// Where one commit group's time goes at FULL, from the rates of one round
/// (cycles or jobs a second, `calls` calls each) of one thread and of the
/// widest shape, at FULL and at NORMAL, microseconds:
///
/// - `fsync`: a call of one thread at FULL less one at NORMAL (the fsync
///   and the wait for it; everything else a lone call does is the same);
/// - `work`: `per_group` calls at the widest shape's NORMAL rate (there the
///   threads run at about one thread's rate and a commit carries about
///   one call: the calls' work when nothing overlaps, each with its own
///   `BEGIN` and `COMMIT`, more than inside one group, which shares them);
/// - `rest`: the group's time at FULL less both (the callers coming back,
///   the lock's handoff, net of whatever overlaps);
/// - `need`: the group's time that `target` × one thread asks for;
/// - `best`: the ratio to one thread were `rest` zero.
#[derive(Debug, Clone, Copy, PartialEq)]
struct GroupBudget {
    group: f64,
    fsync: f64,
    work: f64,
    rest: f64,
    need: f64,
    best: f64,
}

/// Rates of one round: one thread and the widest shape, FULL and NORMAL.
#[derive(Debug, Clone, Copy)]
struct RoundRates {
    one_full: f64,
    one_normal: f64,
    wide_full: f64,
    wide_normal: f64,
}

impl GroupBudget {
    fn of(calls: f64, per_group: f64, r: RoundRates, target: f64) -> GroupBudget {
        let call = |rate: f64| 1e6 / (calls * rate);
        let group = per_group * call(r.wide_full);
        let fsync = call(r.one_full) - call(r.one_normal);
        let work = per_group * call(r.wide_normal);
        GroupBudget {
            group,
            fsync,
            work,
            rest: group - fsync - work,
            need: per_group * call(r.one_full) / target,
            best: per_group * call(r.one_full) / (fsync + work),
        }
    }

    /// The budget of each round that has all its rates (one entry a round
    /// in each slice; `per_group[i]`: the calls a group of round `i`
    /// carried), then the median of each part.
    fn over_rounds(
        calls: f64,
        per_group: &[f64],
        one_full: &[f64],
        one_normal: &[f64],
        wide_full: &[f64],
        wide_normal: &[f64],
        target: f64,
    ) -> GroupBudget {
        let n = [per_group, one_full, one_normal, wide_full, wide_normal]
            .iter()
            .map(|v| v.len())
            .min()
            .unwrap_or(0);
        let rounds: Vec<GroupBudget> = (0..n)
            .map(|i| {
                let r = RoundRates {
                    one_full: one_full[i],
                    one_normal: one_normal[i],
                    wide_full: wide_full[i],
                    wide_normal: wide_normal[i],
                };
                GroupBudget::of(calls, per_group[i], r, target)
            })
            .collect();
        GroupBudget::median_of(&rounds)
    }

    /// The median of each part over the rounds (each round's budget first,
    /// so a machine that changes speed between rounds moves all its parts).
    fn median_of(rounds: &[GroupBudget]) -> GroupBudget {
        let m = |f: fn(&GroupBudget) -> f64| median(rounds.iter().map(f).collect());
        GroupBudget {
            group: m(|b| b.group),
            fsync: m(|b| b.fsync),
            work: m(|b| b.work),
            rest: m(|b| b.rest),
            need: m(|b| b.need),
            best: m(|b| b.best),
        }
    }
}

/// Run a workload program and parse the JSON object it prints.
fn workload(cmd: &mut Command) -> Result<Value> {
    let what = crate::util::show(cmd);
    parse_json(&output(cmd)?, &what)
}

pub(crate) struct Row {
    name: String,
    value: String,
    ratio: Option<(String, f64)>,
    target: Option<(String, bool)>,
}

impl Row {
    /// One line of a markdown table: row, value, target.
    pub(crate) fn markdown_cells(&self) -> String {
        let target = self
            .target
            .as_ref()
            .map(|(t, met)| format!("{t} — {}", if *met { "met" } else { "NOT met" }))
            .unwrap_or_default();
        format!("| {} | {} | {} |", self.name, self.value, target)
    }
}

pub fn bench(smoke: bool) -> Result {
    let started = RunStart::now();
    let cfg = Cfg {
        smoke,
        runs: if smoke { 1 } else { 5 },
        cycles: if smoke { 30 } else { 2000 },
    };
    step(&format!(
        "benchmarks ({})",
        if smoke { "smoke" } else { "full" }
    ));
    let bin = bench_bin()?;
    let mut rows: Vec<Row> = Vec::new();
    let mut raw: Vec<Value> = Vec::new();
    if ops_only() {
        step("benchmarks: only the operations rows (TENURE_BENCH_OPS_ONLY)");
        ops_rows(&bin, &cfg, &mut rows, &mut raw)?;
        return report(&rows, raw, ops_report_kind(cfg.smoke), &started);
    }
    let cycles = cfg.cycles.to_string();

    // 1-2: floor vs lifecycle in every language, interleaved so all see the
    // same noise.
    let progs = programs(cfg.smoke)?;
    let mut rust = std::collections::HashMap::new();
    for sync in ["full", "normal"] {
        // A NORMAL cycle is ten times shorter: ten times as many keep a
        // run long against the noise of starting a process.
        let cycles = if sync == "normal" && !cfg.smoke {
            (cfg.cycles * 10).to_string()
        } else {
            cycles.clone()
        };
        let mut v: std::collections::HashMap<&str, Vec<f64>> = Default::default();
        for _ in 0..cfg.runs {
            let mut one = |lang: &'static str, json: Value| {
                v.entry(lang).or_default().push(num(&json, "cycles_per_s"));
                raw.push(json);
            };
            one(
                "floor",
                workload(Command::new(&bin).args(["floor", "--sync", sync, "--cycles", &cycles]))?,
            );
            one(
                "rust",
                workload(Command::new(&bin).args([
                    "lifecycle",
                    "--sync",
                    sync,
                    "--cycles",
                    &cycles,
                ]))?,
            );
            for (lang, exe) in [("c", &progs.c), ("cpp", &progs.cpp)] {
                let dir = scratch()?;
                let out = workload(Command::new(exe).arg(&dir).arg(sync).arg(&cycles));
                let _ = std::fs::remove_dir_all(&dir);
                one(lang, out?);
            }
            if let Some(py) = &progs.python {
                let out = workload(
                    Command::new(py)
                        .arg(root().join("bench/python_bench.py"))
                        .args(["tenure-lifecycle", "--sync", sync, "--cycles", &cycles]),
                )?;
                one("python", out);
            }
        }
        let runs = |lang: &str| v.get(lang).cloned().unwrap_or_default();
        let m = |lang: &str| median(runs(lang));
        let (f, l) = (m("floor"), m("rust"));
        let vs_floor = paired_ratio(&runs("rust"), &runs("floor"));
        rust.insert(sync, l);
        let up = sync.to_uppercase();
        rows.push(Row {
            name: format!("floor: raw rusqlite, 3 write txns per cycle ({up})"),
            value: format!("{f:.0} cycles/s"),
            ratio: None,
            target: None,
        });
        rows.push(Row {
            name: format!("tenure lifecycle (claim, renew, complete), Rust ({up})"),
            value: format!("{l:.0} cycles/s"),
            ratio: Some(("floor".into(), vs_floor)),
            target: Some({
                let want = if sync == "full" { 0.85 } else { 0.40 };
                (format!("≥ {want:.2} × floor"), vs_floor >= want)
            }),
        });
        for (lang, name, want) in [
            ("c", "C ABI (C program)", 0.95),
            ("cpp", "C++", 0.95),
            ("python", "Python", 0.80),
        ] {
            if v.contains_key(lang) {
                let x = m(lang);
                let r = paired_ratio(&runs(lang), &runs("rust"));
                let target = (lang != "python" || sync == "full")
                    .then(|| (format!("≥ {want:.2} × Rust"), r >= want));
                rows.push(Row {
                    name: format!("tenure lifecycle, {name} ({up})"),
                    value: format!("{x:.0} cycles/s"),
                    ratio: Some(("Rust".into(), r)),
                    target,
                });
            }
        }
    }

    // Instructions per lifecycle at NORMAL (callgrind), against the floor.
    instructions(&bin, &cfg, &mut rows, &mut raw)?;

    // W threads of one process, each doing lifecycles (FULL). The widths
    // take turns, run after run, so that a machine slowing down or speeding
    // up during the rows moves every width alike; a ratio is the median of
    // each round's ratio.
    // The same work at NORMAL from 1 and 8 threads takes its turns too, for
    // context: what the threads do when no call waits for an fsync.
    let widths: &[usize] = if cfg.smoke { &[1, 2] } else { &[1, 2, 4, 8] };
    let shapes: Vec<(usize, &str)> = widths
        .iter()
        .map(|&w| (w, "full"))
        .chain([(1, "normal"), (*widths.last().unwrap_or(&1), "normal")])
        .collect();
    let millis = if cfg.smoke { "300" } else { "2000" };
    // A smoke run seeds a small backlog (the default fits the full run).
    let jobs: &[&str] = if cfg.smoke { &["--jobs", "2000"] } else { &[] };
    let mut by_shape: Vec<(Vec<f64>, Vec<f64>, Value)> =
        vec![(Vec::new(), Vec::new(), Value::Null); shapes.len()];
    for _ in 0..cfg.runs {
        for (&(w, sync), (v, per, last)) in shapes.iter().zip(by_shape.iter_mut()) {
            let j = workload(
                Command::new(&bin)
                    .args([
                        "threads",
                        "--threads",
                        &w.to_string(),
                        "--millis",
                        millis,
                        "--sync",
                        sync,
                    ])
                    .args(jobs),
            )?;
            v.push(num(&j, "cycles_per_s"));
            per.push(num(&j, "calls_per_commit"));
            *last = j.clone();
            raw.push(j);
        }
    }
    let mut one_thread: std::collections::HashMap<&str, Vec<f64>> = Default::default();
    let mut widest: std::collections::HashMap<&str, Vec<f64>> = Default::default();
    // Calls per commit of the widest FULL shape, round by round.
    let mut widest_per = Vec::new();
    for (&(w, sync), (v, per, last)) in shapes.iter().zip(by_shape) {
        let r = median(v.clone());
        let ratio = paired_ratio(&v, one_thread.entry(sync).or_insert_with(|| v.clone()));
        widest.insert(sync, v);
        if sync == "full" {
            widest_per = per.clone();
        }
        let up = sync.to_uppercase();
        let context = if sync == "full" {
            String::new()
        } else {
            ", context: the same work when no call waits for an fsync".to_string()
        };
        rows.push(Row {
            name: format!(
                "{} of one process, lifecycles ({up}{context}): per-thread min/max {:.0}/{:.0}, calls per commit {:.1} (median of runs){}",
                count(w, "thread"),
                num(&last, "min"),
                num(&last, "max"),
                median(per),
                drained_note(&last),
            ),
            value: format!("{r:.0} cycles/s"),
            ratio: Some((format!("1 thread ({up})"), ratio)),
            target: (w == 8 && sync == "full")
                .then_some(("≥ 4 × 1 thread".into(), ratio >= 4.0)),
        });
    }
    if let (Some(f), Some(n)) = (widest.get("full"), widest.get("normal")) {
        let w = widths.last().copied().unwrap_or(1);
        rows.push(Row {
            name: format!(
                "{} of one process: FULL against NORMAL (context: how much of the fsync's cost the commit groups hide)",
                count(w, "thread"),
            ),
            value: format!("{:.0} cycles/s", median(f.clone())),
            ratio: Some((format!("{} (NORMAL)", count(w, "thread")), paired_ratio(f, n))),
            target: None,
        });
        if let (Some(f1), Some(n1)) = (one_thread.get("full"), one_thread.get("normal")) {
            // The target of 8 threads is 4 × one.
            let want = (w as f64 / 2.0).max(1.0);
            rows.push(budget_row(
                &format!("{} of one process", count(w, "thread")),
                &format!("{:.1} calls", median(widest_per.clone())),
                &format!("{} at NORMAL", count(w, "thread")),
                &format!("{want} × 1 thread"),
                GroupBudget::over_rounds(3.0, &widest_per, f1, n1, f, n, want),
            ));
        }
    }

    // 6: Python: one process draining a backlog with claim_next + complete
    // (FULL) from 1 and 4 threads, and each peer doing its closest
    // equivalent from 4 threads; every delivery is recorded by job ID.
    if let Some(py) = &progs.python {
        python_drain(py, &cfg, &mut rows, &mut raw)?;
        python_asyncio(py, &cfg, &mut rows, &mut raw)?;
    }

    // 3: claim-next scaling. Each size, without and then with half of the
    // queued jobs scheduled a day ahead at a higher priority than the due
    // ones, runs in one process beside a baseline store of the smallest
    // size, none scheduled: the two take turns, and the ratio is the median
    // of each round's (see `tenure-bench claim-next`). The baseline row is
    // the median of every run's baseline rate.
    let sizes: &[usize] = if cfg.smoke {
        &[100, 1_000]
    } else {
        &[1_000, 100_000, 1_000_000]
    };
    let (turn, rounds) = if cfg.smoke {
        ("20", "2")
    } else {
        ("500", "20")
    };
    let mut scaled = Vec::new();
    for scheduled in [0, 50] {
        for &n in sizes {
            if scheduled == 0 && n == sizes[0] {
                continue;
            }
            let j = workload(Command::new(&bin).args([
                "claim-next",
                "--queued",
                &n.to_string(),
                "--scheduled-pct",
                &scheduled.to_string(),
                "--base-queued",
                &sizes[0].to_string(),
                "--cycles",
                turn,
                "--rounds",
                rounds,
            ]))?;
            scaled.push((scheduled, n, j));
        }
    }
    let base_rate = median(
        scaled
            .iter()
            .map(|(_, _, j)| num(j, "base_cycles_per_s"))
            .collect(),
    );
    let base_name = format!("{} queued, none scheduled", sizes[0]);
    rows.push(Row {
        name: format!(
            "claim-next + complete, {n} queued behind {n} completed (NORMAL, the baseline: \
             median of the {runs} runs beside the rows below, {rounds} rounds of {turn} \
             cycles each)",
            n = sizes[0],
            runs = scaled.len(),
        ),
        value: format!("{base_rate:.0} cycles/s"),
        ratio: Some((base_name.clone(), 1.0)),
        target: None,
    });
    for (scheduled, n, j) in scaled {
        let ratio = num(&j, "ratio");
        let name = if scheduled == 0 {
            format!("claim-next + complete, {n} queued behind {n} completed (NORMAL)")
        } else {
            format!(
                "claim-next + complete, {n} queued behind {n} completed, {scheduled} % of \
                 them scheduled a day ahead at a higher priority (NORMAL)"
            )
        };
        rows.push(Row {
            name,
            value: format!("{:.0} cycles/s", num(&j, "cycles_per_s")),
            ratio: Some((base_name.clone(), ratio)),
            target: Some(("within ±20 %".into(), (0.8..=1.2).contains(&ratio))),
        });
        raw.push(j);
    }

    // 4: contention: P processes × T threads. The shapes take turns, run
    // after run (as the thread widths above); the rate is the median, the
    // ratio the median of each round's ratio, the spread, lock wait and
    // missed renewals the worst of the runs.
    let shapes: &[(usize, usize)] = if cfg.smoke {
        &[(1, 1), (2, 1), (2, 2)]
    } else {
        &[(1, 1), (2, 1), (4, 1), (8, 1), (4, 4)]
    };
    let millis = if cfg.smoke { "400" } else { "3000" };
    let mut by_shape: Vec<Vec<Value>> = vec![Vec::new(); shapes.len()];
    for _ in 0..cfg.runs.min(3) {
        for (&(p, t), runs) in shapes.iter().zip(by_shape.iter_mut()) {
            runs.push(workload(
                Command::new(&bin)
                    .args([
                        "contend",
                        "--procs",
                        &p.to_string(),
                        "--threads",
                        &t.to_string(),
                        "--millis",
                        millis,
                        "--sync",
                        "full",
                    ])
                    .args(jobs),
            )?);
        }
    }
    let mut one = None;
    for (&(p, t), runs) in shapes.iter().zip(by_shape) {
        let rates: Vec<f64> = runs.iter().map(|j| num(j, "cycles_per_s")).collect();
        let rate = median(rates.clone());
        let ratio = paired_ratio(&rates, one.get_or_insert(rates.clone()));
        let worst = |f: &dyn Fn(&Value) -> f64| runs.iter().map(f).fold(f64::NAN, f64::max);
        let spread = worst(&|j| {
            let (min, max) = (num(j, "min"), num(j, "max"));
            if min > 0.0 {
                max / min
            } else {
                f64::INFINITY
            }
        });
        let p99 = worst(&|j| num(j, "wait_p99_us"));
        let missed: f64 = runs.iter().map(|j| num(j, "renewals_missed")).sum();
        let renewals: f64 = runs.iter().map(|j| num(j, "renewals")).sum();
        let drained = runs.iter().find(|j| j["drained"].as_bool() == Some(true));
        // 4 × 4 must scale; one thread per process must at least not lose.
        let want = match (p, t) {
            (4, 4) => Some(3.0),
            (p, 1) if p > 1 => Some(0.9),
            _ => None,
        };
        rows.push(Row {
            name: format!(
                "{} × {} (FULL), median of {} runs: per-proc max/min {spread:.2}, lock wait p50/p99/max {:.1}/{:.1}/{:.1} ms, renewals missed {missed:.0} of {:.0}{} (spread, waits: worst run)",
                count(p, "process"),
                count(t, "thread"),
                runs.len(),
                worst(&|j| num(j, "wait_p50_us")) / 1000.0,
                p99 / 1000.0,
                worst(&|j| num(j, "wait_max_us")) / 1000.0,
                renewals + missed,
                drained.map_or("", drained_note),
            ),
            value: format!("{rate:.0} cycles/s"),
            ratio: Some(("1 × 1".into(), ratio)),
            target: want.map(|want| {
                (
                    format!(
                        "≥ {want:.2} × 1 × 1, max/min ≤ 2, p99 wait ≤ 25 ms, 0 renewals missed"
                    ),
                    ratio >= want && spread <= 2.0 && p99 <= 25_000.0 && missed == 0.0,
                )
            }),
        });
        raw.extend(runs);
    }

    // 5: batched claims: claims and completions by name in one edit each;
    // 6: claim_next_many + complete_many, one call each per batch.
    for (workload, what) in [
        ("batch", "batched claims, {size} per edit (FULL)"),
        (
            "batch-many",
            "claim_next_many + complete_many, {size} per call (FULL)",
        ),
    ] {
        batch_rows(&bin, &cfg, workload, what, &mut rows, &mut raw)?;
    }

    // 7: waiting for work and keeping leases alive.
    waiting(&bin, &cfg, None, &mut rows, &mut raw)?;
    keepers(&bin, &cfg, &mut rows, &mut raw)?;

    // 8: retention soak (a steady stream with automatic pruning).
    soak_rows(&bin, cfg.smoke, &mut rows, &mut raw)?;

    // 9: statistics, claim gates, schedules and `tenure serve`.
    ops_rows(&bin, &cfg, &mut rows, &mut raw)?;

    report(&rows, raw, report_kind(cfg.smoke, false), &started)
}

/// The rows of what operators use: statistics, claim gates, schedules and
/// `tenure serve` (the dashboard's first render, /metrics, idle CPU).
fn ops_rows(bin: &std::path::Path, cfg: &Cfg, rows: &mut Vec<Row>, raw: &mut Vec<Value>) -> Result {
    stats_rows(bin, cfg, None, rows, raw)?;
    gates_rows(bin, cfg, None, rows, raw)?;
    schedule_rows(bin, cfg, rows, raw)?;
    serve_rows(cfg.smoke, rows, raw)
}

/// Whether `TENURE_BENCH_OPS_ONLY` (set and not `0` or empty) asks
/// `cargo xtask bench` (either backend) for the operations rows alone
/// (statistics, claim gates, schedules, `tenure serve`), full size unless
/// `--smoke`; the report is `latest-ops-…` (`latest-postgres-ops-…`).
pub(crate) fn ops_only() -> bool {
    std::env::var("TENURE_BENCH_OPS_ONLY").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The kind of the report of the operations rows run alone.
pub(crate) fn ops_report_kind(smoke: bool) -> &'static str {
    if smoke {
        "ops-smoke"
    } else {
        "ops-full"
    }
}

/// The `tenure serve` rows (`tests/serve/bench.py`, headless Chromium): on
/// a store of 1 000 000 jobs (smoke: 2 000), the page's first complete
/// render (ratio: the same page on an empty store, same run), `/metrics`
/// p50 (ratio: `/api/clock`, a read of no job row) and the server's CPU
/// over 30 s (smoke: 3 s) idle with the page open.
fn serve_rows(smoke: bool, rows: &mut Vec<Row>, raw: &mut Vec<Value>) -> Result {
    let (jobs, idle) = if smoke { (2_000, 3) } else { (1_000_000, 30) };
    let py = crate::serve::prepare()?;
    let mut build = cargo();
    build.args(["build", "--locked", "-q", "-p", "tenure-cli"]);
    if !smoke {
        build.arg("--release");
    }
    crate::util::run(&mut build)?;
    let bin = crate::capi::target_dir()?
        .join(if smoke { "debug" } else { "release" })
        .join("tenure");
    let j = workload(
        Command::new(py)
            .arg(crate::util::root().join("tests/serve/bench.py"))
            .arg(&bin)
            .arg(jobs.to_string())
            .arg(idle.to_string()),
    )?;
    let (render, empty) = (num(&j, "render_s"), num(&j, "render_empty_s"));
    let (metrics, clock) = (num(&j, "metrics_p50_ms"), num(&j, "clock_p50_ms"));
    let cpu = num(&j, "idle_cpu_pct");
    let full = !smoke;
    rows.push(Row {
        name: format!("tenure serve at {jobs} jobs: the page's first complete render (headless Chromium, median of 3)"),
        value: format!("{render:.3} s"),
        ratio: Some(("empty store".into(), render / empty.max(1e-9))),
        target: full.then(|| ("≤ 1 s".into(), render <= 1.0)),
    });
    rows.push(Row {
        name: format!("tenure serve at {jobs} jobs: /metrics p50 of 30"),
        value: format!("{metrics:.1} ms"),
        ratio: Some(("/api/clock".into(), metrics / clock.max(1e-9))),
        target: full.then(|| ("≤ 50 ms".into(), metrics <= 50.0)),
    });
    rows.push(Row {
        name: format!("tenure serve at {jobs} jobs: CPU idle with the page open ({idle} s)"),
        value: format!("{cpu:.2} % of one core"),
        ratio: None,
        target: full.then(|| ("≤ 1 %".into(), cpu <= 1.0)),
    });
    raw.push(serde_json::json!({ "workload": "serve", "result": j }));
    Ok(())
}

/// The SQLite soak's arrival rate (jobs/s): one the reference VM's worker
/// sustains at FULL while other builds and benchmarks load it
/// (docs/performance.md, "Retention soak").
pub(crate) const SOAK_RATE: u32 = 300;

/// `cargo xtask bench --soak [--smoke]`: only the retention soak rows.
pub fn soak_only(smoke: bool) -> Result {
    let started = RunStart::now();
    step(&format!(
        "retention soak ({})",
        if smoke { "smoke" } else { "full" }
    ));
    let bin = bench_bin()?;
    let (mut rows, mut raw) = (Vec::new(), Vec::new());
    soak_rows(&bin, smoke, &mut rows, &mut raw)?;
    report(&rows, raw, report_kind(smoke, true), &started)
}

/// The SQLite soak: a steady stream of 1 M jobs arriving at
/// [`SOAK_RATE`] jobs/s (claim-next + complete, one worker) through one
/// store at FULL with retention of events, terminal jobs and tombstones at
/// 60 s, in windows of 100 000 (smoke: 6 000 jobs at 1 000 jobs/s, 1 s).
/// Targets: the store file's size after the run ≤ 2 × after the first
/// window; throughput of the last window ≥ 0.9 × the first.
fn soak_rows(
    bin: &std::path::Path,
    smoke: bool,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let (jobs, window, keep, rate) = if smoke {
        (6_000, 1_000, 1, 1_000)
    } else {
        (1_000_000, 100_000, 60, SOAK_RATE)
    };
    let j = workload(Command::new(bin).args([
        "soak",
        "--jobs",
        &jobs.to_string(),
        "--window",
        &window.to_string(),
        "--retention-secs",
        &keep.to_string(),
        "--rate",
        &rate.to_string(),
        "--sync",
        "full",
    ]))?;
    let w = j["windows"].as_array().cloned().unwrap_or_default();
    let (Some(first), Some(last)) = (w.first(), w.last()) else {
        return Err(format!("soak: no windows in {j}"));
    };
    let size = |v: &Value| num(v, "file_bytes");
    let max_size = w.iter().map(size).fold(0.0, f64::max);
    let cycle = |v: &Value| num(v, "mean_cycle_ms");
    let slowest = w
        .iter()
        .map(|v| num(v, "slowest_cycle_ms"))
        .fold(0.0, f64::max);
    let lock_wait = w
        .iter()
        .map(|v| num(v, "longest_lock_wait_ms"))
        .fold(0.0, f64::max);
    let growth = size(last) / size(first);
    let pace = num(last, "jobs_per_s") / num(first, "jobs_per_s");
    let (first_job, first_stone) = kept_row_bytes(first);
    let (last_job, last_stone) = kept_row_bytes(last);
    let backlog = w.iter().map(|v| num(v, "backlog")).fold(0.0, f64::max);
    let held: f64 = w.iter().map(|v| num(v, "held_back")).sum();
    let what = format!(
        "soak: {} arriving at {rate} jobs/s (claim-next + complete, FULL), retention {keep} s, check ok {}",
        count(jobs, "job"),
        j["check_ok"]
    );
    rows.push(Row {
        name: format!(
            "{what}: store file size after the run (max during it {:.1} MiB; WAL {:.1} MiB, {:.0} of {:.0} pages free; jobs kept {} after the first window, {} at the end, tombstones {} and {}; bytes per kept job with its events {first_job:.0} and {last_job:.0}, per tombstone {first_stone:.0} and {last_stone:.0})",
            max_size / 1048576.0,
            num(last, "wal_bytes") / 1048576.0,
            num(last, "free_pages"),
            num(last, "pages"),
            num(first, "jobs_kept"),
            num(last, "jobs_kept"),
            num(first, "tombstones_kept"),
            num(last, "tombstones_kept"),
        ),
        value: format!("{:.1} MiB", size(last) / 1048576.0),
        ratio: Some((format!("after the first {}", count(window, "job")), growth)),
        target: Some(("≤ 2 ×".into(), growth <= 2.0)),
    });
    rows.push(Row {
        name: format!(
            "{what}: throughput of the last {} (arrivals {:.0} and {:.0} jobs/s in the first and last window; largest backlog at a window end {backlog:.0}, arrivals held back by the backlog bound {held:.0}; mean cycle {:.2} and {:.2} ms in the first and last window, slowest {slowest:.1} ms, longest writer-lock wait {lock_wait:.1} ms)",
            count(window, "job"),
            num(first, "arrivals_per_s"),
            num(last, "arrivals_per_s"),
            cycle(first),
            cycle(last),
        ),
        value: format!("{:.0} jobs/s", num(last, "jobs_per_s")),
        ratio: Some((format!("the first {}", count(window, "job")), pace)),
        target: Some(("≥ 0.9 ×".into(), pace >= 0.9)),
    });
    raw.push(j);
    Ok(())
}

/// The store's footprint per row the retention window holds, from one soak
/// window's pages by table and index (free pages left out):
/// bytes per kept job (the jobs table, its indexes, events and their index) and
/// bytes per tombstone (the tombstones table and its index).
fn kept_row_bytes(window: &Value) -> (f64, f64) {
    let Some(by_name) = window["pages_by_name"].as_object() else {
        return (f64::NAN, f64::NAN);
    };
    let page = num(window, "file_bytes") / num(window, "pages");
    let (mut stones, mut rest) = (0.0, 0.0);
    for (name, pages) in by_name {
        let bytes = pages.as_f64().unwrap_or(0.0) * page;
        if name.starts_with("tombstones") {
            stones += bytes;
        } else {
            rest += bytes;
        }
    }
    (
        rest / num(window, "jobs_kept"),
        stones / num(window, "tombstones_kept"),
    )
}

/// Write the report of `rows` as `bench/results/latest-<kind>.{md,json}`.
fn report(rows: &[Row], raw: Vec<Value>, kind: &str, started: &RunStart) -> Result {
    let mut md = String::new();
    let _ = writeln!(md, "| row | value | ratio | target |\n|---|---:|---:|---|");
    for r in rows {
        let ratio = r
            .ratio
            .as_ref()
            .map(|(base, x)| format!("{x:.2} × {base}"))
            .unwrap_or_default();
        let target = r
            .target
            .as_ref()
            .map(|(t, met)| format!("{t} — {}", if *met { "met" } else { "NOT met" }))
            .unwrap_or_default();
        let _ = writeln!(md, "| {} | {} | {} | {} |", r.name, r.value, ratio, target);
    }
    write_report(kind, &md, raw, started)
}

/// When a run began, and the load the machine carried then: the start of
/// every report's head.
pub(crate) struct RunStart {
    unix_time: u64,
    load: Option<String>,
    tree: Option<String>,
}

impl RunStart {
    pub(crate) fn now() -> RunStart {
        RunStart {
            unix_time: unix_now(),
            load: load_average(),
            tree: tree(),
        }
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The 1-minute load average, as `/proc/loadavg` prints it.
fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next().map(str::to_owned)
}

/// The commit the run measured, `-dirty` when a tracked file outside
/// `bench/results` differs from it (the reports a run writes are not the
/// tree it measures).
fn tree() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(root())
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    let changed = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        ":!bench/results",
    ])?;
    Some(if changed.is_empty() {
        head
    } else {
        format!("{head}-dirty")
    })
}

/// The kind of a SQLite report, which names its files: `full` or `smoke`,
/// after `soak-` when only the soak ran (`--soak`).
fn report_kind(smoke: bool, soak_only: bool) -> &'static str {
    match (soak_only, smoke) {
        (false, false) => "full",
        (false, true) => "smoke",
        (true, false) => "soak-full",
        (true, true) => "soak-smoke",
    }
}

/// The folder of the reports.
pub(crate) fn results_dir() -> PathBuf {
    root().join("bench/results")
}

/// The two files of the report of `kind` in `dir`, Markdown and JSON: a run
/// overwrites the last report of its kind.
pub(crate) fn report_files(dir: &Path, kind: &str) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("latest-{kind}.md")),
        dir.join(format!("latest-{kind}.json")),
    )
}

/// Write `md` and the raw workload objects as the report of `kind`, each
/// with the run's head: when it ran, which tree, which machine, and the
/// load average at its start and end. Each file goes through a `.tmp`
/// beside it, so a run stopped while writing leaves the last report whole.
pub(crate) fn write_report(
    kind: &str,
    md: &str,
    workloads: Vec<Value>,
    started: &RunStart,
) -> Result {
    let (md_path, json_path) = write_report_in(&results_dir(), kind, md, workloads, started)?;
    let shown = |p: &Path| p.strip_prefix(root()).unwrap_or(p).display().to_string();
    println!("report: {} and {}", shown(&md_path), shown(&json_path));
    Ok(())
}

/// [`write_report`] into `dir`; prints the report and returns its two files.
fn write_report_in(
    dir: &Path,
    kind: &str,
    md: &str,
    workloads: Vec<Value>,
    started: &RunStart,
) -> Result<(PathBuf, PathBuf)> {
    let ended = unix_now();
    let load_end = load_average();
    let command = std::iter::once("cargo xtask".to_owned())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let machine = machine();
    let head = report_head(&command, started, ended, load_end.as_deref(), &machine);
    let json = serde_json::json!({
        "kind": kind,
        "command": command,
        "started_unix_time": started.unix_time,
        "unix_time": ended,
        "tree": started.tree,
        "machine": machine,
        "load_average_1min": {"start": started.load, "end": load_end},
        "workloads": workloads,
    });
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (md_path, json_path) = report_files(dir, kind);
    let body = format!("{head}\n{}", md.trim_start_matches('\n'));
    for (path, text) in [(&md_path, body.clone()), (&json_path, format!("{json}\n"))] {
        let tmp = path.with_extension(format!(
            "{}.tmp",
            path.extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default()
        ));
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    println!("\n{body}");
    Ok((md_path, json_path))
}

/// The Markdown head of a report: one line each for the run, the tree and
/// the machine.
fn report_head(
    command: &str,
    started: &RunStart,
    ended: u64,
    load_end: Option<&str>,
    machine: &Value,
) -> String {
    let unknown = |v: &Value| match v {
        Value::Null => "?".to_owned(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let memory = machine["memory_kib"]
        .as_f64()
        .map(|kib| format!("{:.1} GiB", kib / (1024.0 * 1024.0)))
        .unwrap_or_else(|| "?".into());
    format!(
        "Run: `{command}`, {} to {} (unix {} to {ended}); tree `{}`.\n\n\
         Machine: {} CPUs ({}), {memory} memory, {} {} {}; scratch files in {} on {} ({}); \
         load average (1 min) {} at the start, {} at the end.\n",
        utc(started.unix_time),
        utc(ended),
        started.unix_time,
        started.tree.as_deref().unwrap_or("?"),
        unknown(&machine["cpus"]),
        unknown(&machine["cpu_model"]),
        unknown(&machine["os"]),
        unknown(&machine["kernel"]),
        unknown(&machine["arch"]),
        unknown(&machine["scratch_dir"]),
        unknown(&machine["scratch_fs"]),
        unknown(&machine["scratch_device"]),
        started.load.as_deref().unwrap_or("?"),
        load_end.unwrap_or("?"),
    )
}

/// The facts of this machine that bound the figures: processors, memory,
/// kernel, and the file system the workloads' stores live on (their
/// fsyncs); a fact that cannot be read is null.
fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let scratch = std::env::temp_dir();
    let mount = mount_of(&scratch, &read("/proc/mounts"));
    serde_json::json!({
        "cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "cpu_model": cpu_model(&read("/proc/cpuinfo")),
        "memory_kib": mem_total_kib(&read("/proc/meminfo")),
        "os": std::env::consts::OS,
        "kernel": Some(read("/proc/sys/kernel/osrelease").trim().to_owned()).filter(|k| !k.is_empty()),
        "arch": std::env::consts::ARCH,
        "scratch_dir": scratch.display().to_string(),
        "scratch_fs": mount.as_ref().map(|m| m.1.clone()),
        "scratch_device": mount.map(|m| m.0),
    })
}

/// The first `model name` of `/proc/cpuinfo`.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

/// `MemTotal` of `/proc/meminfo`, in KiB.
fn mem_total_kib(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        line.strip_prefix("MemTotal:")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

/// The device and file system type of the mount of `/proc/mounts` that
/// holds `path`: the longest mount point that is `path` or one of its
/// ancestors (the last one listed when several are mounted on one point).
fn mount_of(path: &Path, mounts: &str) -> Option<(String, String)> {
    mounts
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (device, point, fs) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(point)
                .then(|| (point.len(), device.to_owned(), fs.to_owned()))
        })
        .max_by_key(|(len, ..)| *len)
        .map(|(_, device, fs)| (device, fs))
}

/// `unix` seconds as a UTC date and time, `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar),
    // counting years from March so the leap day ends a year.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

/// `bin ARGS`, with `--url` when `url` names a PostgreSQL database.
fn on_store(bin: &std::path::Path, url: Option<&str>, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(args);
    if let Some(u) = url {
        cmd.args(["--url", u]);
    }
    cmd
}

/// The statistics rows: `stats` of one production holding 1 M jobs in
/// mixed states (a smoke run: 20 000) against a clock reading of the same
/// run, and 4 workers' lifecycles with a poller calling `stats` every
/// 100 ms against the same workers without it, taking turns; on
/// PostgreSQL when `urls` names two databases, the first for the 1 M jobs,
/// the second for the poll (on SQLite each workload makes a store of its
/// own, so on both the poll's store holds only the workers' production).
pub(crate) fn stats_rows(
    bin: &std::path::Path,
    cfg: &Cfg,
    urls: Option<(&str, &str)>,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let (url, poll_url) = (urls.map(|u| u.0), urls.map(|u| u.1));
    let (backend, want_ms) = if url.is_some() {
        ("PostgreSQL", 50.0)
    } else {
        ("SQLite", 20.0)
    };
    let jobs = if cfg.smoke { "20000" } else { "1000000" };
    let samples = if cfg.smoke { "10" } else { "50" };
    let args = ["stats", "--jobs", jobs, "--samples", samples];
    let j = workload(&mut on_store(bin, url, &args))?;
    let p50 = num(&j, "p50_ms");
    rows.push(Row {
        name: format!(
            "stats of one production, {jobs} jobs in mixed states ({backend}; the flow over the window's newest 10 000 events{}; with an empty window {:.2} ms)",
            if j["truncated"].as_bool() == Some(true) { ", truncated" } else { "" },
            num(&j, "no_flow_p50_ms"),
        ),
        value: format!("{p50:.2} ms p50"),
        ratio: Some(("a clock reading".into(), num(&j, "ratio"))),
        target: Some((format!("p50 ≤ {want_ms:.0} ms"), p50 <= want_ms)),
    });
    raw.push(j);
    let (millis, rounds) = if cfg.smoke {
        ("300", "2")
    } else {
        ("2000", "5")
    };
    let args = [
        "stats-poll",
        "--threads",
        "4",
        "--millis",
        millis,
        "--rounds",
        rounds,
    ];
    let j = workload(&mut on_store(bin, poll_url, &args))?;
    let ratio = num(&j, "ratio");
    rows.push(Row {
        name: format!(
            "4 threads' lifecycles while a poller calls stats every 100 ms ({backend}, NORMAL, {} polls, {:.1} ms each p50)",
            num(&j, "polls"),
            num(&j, "poll_p50_ms"),
        ),
        value: format!("{:.0} cycles/s", num(&j, "with_cycles_per_s")),
        ratio: Some(("the same workers without the poller".into(), ratio)),
        target: Some(("≥ 0.95 ×".into(), ratio >= 0.95)),
    });
    raw.push(j);
    Ok(())
}

/// The waiting rows: wake latency from a submit in one process to the claim
/// of a waiter in another, and the CPU time of 16 idle waiters; on
/// PostgreSQL when `url` names a database (`cargo xtask bench --backend
/// postgres`).
pub(crate) fn waiting(
    bin: &std::path::Path,
    cfg: &Cfg,
    url: Option<&str>,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let with_url = |cmd: &mut Command| {
        if let Some(u) = url {
            cmd.args(["--url", u]);
        }
    };
    let (backend, want_ms) = match url {
        Some(_) => ("PostgreSQL", 20.0),
        None => ("SQLite", 5.0),
    };
    let samples = if cfg.smoke { "20" } else { "300" };
    let mut cmd = Command::new(bin);
    cmd.args(["wake", "--samples", samples]);
    with_url(&mut cmd);
    let j = workload(&mut cmd)?;
    let (p50, p99) = (num(&j, "p50_us") / 1000.0, num(&j, "p99_us") / 1000.0);
    rows.push(Row {
        name: format!(
            "wake latency, submit returned → claim_next_wait returned in another process ({backend}, {samples} samples): p50 / p99 {p50:.2} / {p99:.2} ms"
        ),
        value: format!("{p50:.2} ms p50"),
        ratio: None,
        target: Some((format!("p50 ≤ {want_ms:.0} ms"), p50 <= want_ms)),
    });
    raw.push(j);
    let millis = if cfg.smoke { "1000" } else { "10000" };
    let mut cmd = Command::new(bin);
    cmd.args(["idle", "--waiters", "16", "--millis", millis]);
    with_url(&mut cmd);
    let j = workload(&mut cmd)?;
    let frac = num(&j, "core_fraction");
    rows.push(Row {
        name: format!(
            "16 idle waiters in one process for {} s ({backend}): CPU time (getrusage) {:.1} ms",
            millis.parse::<f64>().unwrap_or(0.0) / 1000.0,
            num(&j, "cpu_us") / 1000.0
        ),
        value: format!("{:.3} % of one core", frac * 100.0),
        ratio: None,
        target: Some(("≤ 1 % of one core".into(), frac <= 0.01)),
    });
    raw.push(j);
    Ok(())
}

/// The schedule rows: 1 000 schedules due in the same second enqueued by
/// one scheduler step (against a `submit_many` of 1 000 jobs in the same
/// run), and an idle scheduler loop's CPU time.
fn schedule_rows(
    bin: &std::path::Path,
    cfg: &Cfg,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let (n, millis) = if cfg.smoke {
        ("100", "1000")
    } else {
        ("1000", "10000")
    };
    let j = workload(Command::new(bin).args(["schedules", "--schedules", n]))?;
    let step = num(&j, "step_s");
    rows.push(Row {
        name: format!(
            "schedules: {n} due in the same second, enqueued by one scheduler step (FULL)"
        ),
        value: format!("{:.0} ms", step * 1000.0),
        ratio: Some(("submit_many".into(), num(&j, "ratio"))),
        target: Some(("≤ 1 s".into(), step <= 1.0)),
    });
    raw.push(j);
    let j = workload(Command::new(bin).args(["schedules-idle", "--millis", millis]))?;
    let frac = num(&j, "core_fraction");
    rows.push(Row {
        name: format!(
            "an idle scheduler loop for {} s: CPU time (getrusage) {:.1} ms",
            millis.parse::<f64>().unwrap_or(0.0) / 1000.0,
            num(&j, "cpu_us") / 1000.0
        ),
        value: format!("{:.3} % of one core", frac * 100.0),
        ratio: None,
        target: Some(("≤ 0.1 % of one core".into(), frac <= 0.001)),
    });
    raw.push(j);
    Ok(())
}

/// The keeper row: leases with TTL 1 s kept alive by keepers (one thread
/// each, renewing every 1/3 s) in one process; no lease may expire.
fn keepers(bin: &std::path::Path, cfg: &Cfg, rows: &mut Vec<Row>, raw: &mut Vec<Value>) -> Result {
    let (leases, millis) = if cfg.smoke {
        ("100", "3000")
    } else {
        ("1000", "30000")
    };
    let j = workload(Command::new(bin).args(["keeper", "--leases", leases, "--millis", millis]))?;
    let exp = num(&j, "expirations");
    rows.push(Row {
        name: format!(
            "keepers: {leases} leases, TTL 1 s, renewed every 1/3 s for {} s in one process (FULL), {:.0} renewals",
            millis.parse::<f64>().unwrap_or(0.0) / 1000.0,
            num(&j, "renewals")
        ),
        value: format!("{exp:.0} expirations"),
        ratio: None,
        target: Some(("0 expirations".into(), exp == 0.0)),
    });
    raw.push(j);
    Ok(())
}

/// The rows of one batched SQLite workload at batch sizes 1, 10 and 100
/// (FULL), each as a ratio to batch 1; the target: 100 ≥ 10 × batch 1.
/// `what` names the row, `{size}` standing for the batch size.
fn batch_rows(
    bin: &std::path::Path,
    cfg: &Cfg,
    workload_name: &str,
    what: &str,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let mut b1 = None;
    for size in [1usize, 10, 100] {
        let jobs = if cfg.smoke { 200 } else { 2_000 }.max(size * 4);
        let mut v = Vec::new();
        for _ in 0..cfg.runs {
            let j = workload(Command::new(bin).args([
                workload_name,
                "--size",
                &size.to_string(),
                "--jobs",
                &jobs.to_string(),
                "--sync",
                "full",
            ]))?;
            v.push(num(&j, "jobs_per_s"));
            raw.push(j);
        }
        let r = median(v);
        let b = *b1.get_or_insert(r);
        rows.push(Row {
            name: what.replace("{size}", &size.to_string()),
            value: format!("{r:.0} jobs/s"),
            ratio: Some(("batch 1".into(), r / b)),
            target: (size == 100).then_some(("≥ 10 × batch 1".into(), r / b >= 10.0)),
        });
    }
    Ok(())
}

/// "1 thread", "4 threads", "1 process", "8 processes".
fn count(n: usize, what: &str) -> String {
    match (n, what.ends_with('s')) {
        (1, _) => format!("1 {what}"),
        (_, true) => format!("{n} {what}es"),
        _ => format!("{n} {what}s"),
    }
}

/// " (backlog drained)" when a timed workload ran out of jobs: its rate then
/// understates what the store could do.
fn drained_note(j: &Value) -> &'static str {
    if j["drained"].as_bool() == Some(true) {
        " (backlog drained)"
    } else {
        ""
    }
}

/// Instructions a callgrind run of `args` executed in total (its `totals:`
/// or `summary:` line).
fn callgrind_total(bin: &std::path::Path, args: &[&str]) -> Result<f64> {
    let dir = scratch()?;
    let out = dir.join("callgrind.out");
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(bin)
        .args(args)
        .env("TENURE_BENCH_DIR", &dir);
    let r = output(&mut cmd).and_then(|_| {
        let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
        text.lines()
            .find_map(|l| {
                l.strip_prefix("totals:")
                    .or_else(|| l.strip_prefix("summary:"))
            })
            .and_then(|n| n.split_whitespace().next()?.parse::<f64>().ok())
            .ok_or_else(|| format!("no totals line in {}", out.display()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// Instructions per cycle of a workload: the difference between a run of
/// `small` and one of `large` cycles over the same seeded store, divided by
/// the difference in cycles, so opening and seeding cancel out.
fn instructions_per_cycle(
    bin: &std::path::Path,
    workload: &str,
    small: usize,
    large: usize,
) -> Result<f64> {
    let jobs = large.to_string();
    let run = |n: usize| {
        let n = n.to_string();
        callgrind_total(
            bin,
            &[
                workload, "--sync", "normal", "--cycles", &n, "--jobs", &jobs,
            ],
        )
    };
    Ok((run(large)? - run(small)?) / (large - small) as f64)
}

/// The callgrind rows: instructions per lifecycle and per floor cycle at
/// NORMAL, when valgrind is there (a full run installs it).
fn instructions(
    bin: &std::path::Path,
    cfg: &Cfg,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    if !cfg.smoke {
        if let Err(e) = apt_install(&["valgrind"]) {
            eprintln!("no valgrind ({e}): instruction counts skipped");
        }
    }
    let present = Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !present {
        eprintln!("valgrind not found: instruction counts skipped");
        return Ok(());
    }
    // A smoke run proves the lifecycle count only (each callgrind run costs
    // seconds of start-up).
    let (small, large) = if cfg.smoke { (5, 15) } else { (100, 300) };
    let floor = if cfg.smoke {
        f64::NAN
    } else {
        instructions_per_cycle(bin, "floor", small, large)?
    };
    let life = instructions_per_cycle(bin, "lifecycle", small, large)?;
    raw.push(serde_json::json!({
        "workload": "instructions", "sync": "NORMAL", "cycles": [small, large],
        "floor_instructions_per_cycle": floor,
        "lifecycle_instructions_per_cycle": life,
    }));
    if !floor.is_nan() {
        rows.push(Row {
            name: "floor: raw rusqlite, 3 write txns per cycle (NORMAL), callgrind".into(),
            value: format!("{:.0} k instructions/cycle", floor / 1000.0),
            ratio: None,
            target: None,
        });
    }
    rows.push(Row {
        name: "tenure lifecycle (claim, renew, complete), Rust (NORMAL), callgrind".into(),
        value: format!("{:.0} k instructions/cycle", life / 1000.0),
        ratio: (!floor.is_nan()).then(|| ("floor".into(), life / floor)),
        target: Some(("≤ 200 k instructions".into(), life <= 200_000.0)),
    });
    Ok(())
}

/// The asyncio rows (`bench/python_aio_bench.py`): `tenure.aio.Worker` with
/// 16 tasks against the threaded worker class (`tenure.Worker`, 16 slots,
/// keepers included: the target) and against 16 bare threads calling
/// claim_next / payload / complete (context), each draining its own backlog
/// at FULL with the same handler work; and the event loop's longest stall
/// seen by a 1 ms ticker during the asyncio run (and its 99th percentile),
/// beside the same ticker's figures on an idle loop in another process over
/// the same window, and on an idle loop afterwards for as long (the
/// machine's floor).
fn python_asyncio(
    py: &std::path::Path,
    cfg: &Cfg,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let jobs = if cfg.smoke { "200" } else { "10000" };
    let runs = if cfg.smoke { 1 } else { 3 };
    let (mut worker, mut threads, mut asyncio) = (Vec::new(), Vec::new(), Vec::new());
    let (mut stall, mut idle) = (Vec::new(), Vec::new());
    let (mut stall_p99, mut idle_p99) = (Vec::new(), Vec::new());
    let (mut worker_cpu, mut asyncio_cpu) = (Vec::new(), Vec::new());
    let (mut peer, mut peer_p99) = (Vec::new(), Vec::new());
    // (longest stall, its run-queue wait) of each run, this loop's and the peer's.
    let (mut stall_runq, mut peer_runq) = (Vec::new(), Vec::new());
    let mut preempted = Vec::new();
    for _ in 0..runs {
        let out = workload(
            Command::new(py)
                .arg(root().join("bench/python_aio_bench.py"))
                .args(["--jobs", jobs, "--concurrency", "16"]),
        )?;
        worker.push(num(&out, "worker_per_s"));
        threads.push(num(&out, "threads_per_s"));
        asyncio.push(num(&out, "asyncio_per_s"));
        stall.push(num(&out, "max_stall_ms"));
        idle.push(num(&out, "idle_stall_ms"));
        stall_p99.push(num(&out, "stall_p99_ms"));
        idle_p99.push(num(&out, "idle_p99_ms"));
        worker_cpu.push(num(&out, "worker_cpu_us"));
        asyncio_cpu.push(num(&out, "asyncio_cpu_us"));
        peer.push(num(&out, "peer_stall_ms"));
        peer_p99.push(num(&out, "peer_p99_ms"));
        stall_runq.push((num(&out, "max_stall_ms"), num(&out, "max_stall_runq_ms")));
        peer_runq.push((num(&out, "peer_stall_ms"), num(&out, "peer_stall_runq_ms")));
        preempted.push(num(&out, "loop_preempted"));
        raw.push(out);
    }
    let (w, t, a) = (median(worker), median(threads), median(asyncio));
    let worst = stall.iter().copied().fold(0.0, f64::max);
    let worst_idle = idle.iter().copied().fold(0.0, f64::max);
    let worst_p99 = stall_p99.iter().copied().fold(0.0, f64::max);
    let worst_idle_p99 = idle_p99.iter().copied().fold(0.0, f64::max);
    let worst_peer = peer.iter().copied().fold(0.0, f64::max);
    let worst_peer_p99 = peer_p99.iter().copied().fold(0.0, f64::max);
    // The run-queue wait inside the worst run's longest stall.
    let runq_of = |v: &[(f64, f64)]| {
        v.iter()
            .copied()
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
            .1
    };
    let (worst_runq, worst_peer_runq) = (runq_of(&stall_runq), runq_of(&peer_runq));
    rows.push(Row {
        name: format!("Python: threaded worker (tenure.Worker), 16 slots, {jobs} jobs (FULL)"),
        value: format!("{w:.0} jobs/s"),
        ratio: None,
        target: None,
    });
    rows.push(Row {
        name: format!(
            "Python: 16 bare threads (claim_next, payload, complete), {jobs} jobs (FULL)"
        ),
        value: format!("{t:.0} jobs/s"),
        ratio: None,
        target: None,
    });
    rows.push(Row {
        name: format!("Python: asyncio worker (tenure.aio.Worker), 16 tasks, {jobs} jobs (FULL)"),
        value: format!("{a:.0} jobs/s"),
        ratio: Some(("threaded worker, 16 slots".into(), a / w)),
        target: Some(("≥ 0.90 × threaded worker".into(), a / w >= 0.9)),
    });
    rows.push(Row {
        name: "Python: asyncio worker vs 16 bare threads (context: no keeper, no wait)".into(),
        value: format!("{a:.0} jobs/s"),
        ratio: Some(("16 bare threads".into(), a / t)),
        target: None,
    });
    let (wc, ac) = (median(worker_cpu), median(asyncio_cpu));
    rows.push(Row {
        name: "Python: process CPU time per job, asyncio worker (context: the work each side \
               does, whatever the machine's load)"
            .into(),
        value: format!("{ac:.0} µs/job"),
        ratio: Some((format!("threaded worker, {wc:.0} µs/job"), ac / wc)),
        target: None,
    });
    rows.push(Row {
        name: "Python: event loop's longest stall during the asyncio run (worst of runs)".into(),
        value: format!(
            "{worst:.1} ms (p99 {worst_p99:.1} ms; {worst_runq:.1} ms of it waiting for a CPU)"
        ),
        ratio: None,
        target: Some(("≤ 5 ms".into(), worst <= 5.0)),
    });
    rows.push(Row {
        name: "Python: times the event loop's thread was preempted during the asyncio run \
               (context, median of runs)"
            .into(),
        value: format!("{:.0}", median(preempted)),
        ratio: None,
        target: None,
    });
    rows.push(Row {
        name: "Python: the same ticker on an idle loop in another process during the \
               asyncio run, longest stall (worst of runs)"
            .into(),
        value: format!(
            "{worst_peer:.1} ms (p99 {worst_peer_p99:.1} ms; {worst_peer_runq:.1} ms of it \
             waiting for a CPU)"
        ),
        ratio: None,
        target: None,
    });
    rows.push(Row {
        name: "Python: the same ticker's longest stall on an idle loop (worst of runs)".into(),
        value: format!("{worst_idle:.1} ms (p99 {worst_idle_p99:.1} ms)"),
        ratio: None,
        target: None,
    });
    Ok(())
}

/// The Python drain rows: tenure from one and four threads, each peer from
/// four, over one backlog; duplicates are deliveries of a job ID already
/// delivered.
fn python_drain(
    py: &std::path::Path,
    cfg: &Cfg,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let backlog = if cfg.smoke { "200" } else { "10000" };
    let runs = if cfg.smoke { 1 } else { 3 };
    let mut rate: std::collections::HashMap<String, Vec<f64>> = Default::default();
    let mut dups: std::collections::HashMap<String, f64> = Default::default();
    let mut skipped = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut busy: std::collections::HashMap<String, f64> = Default::default();
    // The NORMAL drains are context: what the threads do when no call
    // waits for an fsync.
    let cases: [(&str, &str, &str); 7] = [
        ("tenure-drain", "1", "full"),
        ("tenure-drain", "4", "full"),
        ("litequeue", "4", "full"),
        ("persist-queue", "4", "full"),
        ("localqueue", "4", "full"),
        ("tenure-drain", "1", "normal"),
        ("tenure-drain", "4", "normal"),
    ];
    for _ in 0..runs {
        for (w, t, sync) in cases {
            let key = match sync {
                "full" => format!("{w}/{t}"),
                _ => format!("{w}/{t}/{sync}"),
            };
            let out = match workload(
                Command::new(py)
                    .arg(root().join("bench/python_bench.py"))
                    .args([w, "--cycles", backlog, "--threads", t, "--sync", sync]),
            ) {
                Ok(out) => out,
                // A peer that breaks under threads is a finding, not a
                // harness failure: its row says so.
                Err(e) if w != "tenure-drain" => {
                    eprintln!("python drain {key} failed: {e}");
                    rate.entry(key.clone()).or_default().push(f64::NAN);
                    failed.push(key);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if out["skipped"].as_bool() == Some(true) {
                if !skipped.contains(&key) {
                    skipped.push(key);
                }
                continue;
            }
            rate.entry(key.clone())
                .or_default()
                .push(num(&out, "cycles_per_s"));
            if let Some(b) = out["busy_errors"].as_f64() {
                *busy.entry(key.clone()).or_default() += b;
            }
            let d = dups.entry(key).or_default();
            *d = d.max(num(&out, "duplicates"));
            raw.push(out);
        }
    }
    for k in &skipped {
        eprintln!("python drain {k}: not installed, skipped");
    }
    // Every key has one rate a round (NaN for a failed run), so rounds pair.
    let rates = |k: &str| rate.get(k).cloned().unwrap_or_default();
    let m = |k: &str| median(rates(k));
    let (t1, t4) = (m("tenure-drain/1"), m("tenure-drain/4"));
    let vs = |k: &str, base: &str| paired_ratio(&rates(k), &rates(base));
    let t4_t1 = vs("tenure-drain/4", "tenure-drain/1");
    let d = |k: &str| dups.get(k).copied().unwrap_or(f64::NAN);
    let retried = |k: &str| match busy.get(k) {
        Some(b) if *b > 0.0 => format!(", {b:.0} steps retried after a busy answer"),
        _ => String::new(),
    };
    rows.push(Row {
        name: format!(
            "Python: tenure claim_next + complete, 1 thread, {backlog} backlog (FULL), duplicates {:.0}{}",
            d("tenure-drain/1"),
            retried("tenure-drain/1"),
        ),
        value: format!("{t1:.0} jobs/s"),
        ratio: None,
        target: None,
    });
    rows.push(Row {
        name: format!(
            "Python: tenure claim_next + complete, 4 threads, {backlog} backlog (FULL), duplicates {:.0}{}",
            d("tenure-drain/4"),
            retried("tenure-drain/4"),
        ),
        value: format!("{t4:.0} jobs/s"),
        ratio: Some(("1 thread".into(), t4_t1)),
        target: Some((
            "≥ 3 × 1 thread, 0 duplicates".into(),
            t4_t1 >= 3.0 && d("tenure-drain/4") == 0.0 && d("tenure-drain/1") == 0.0,
        )),
    });
    for (w, how) in [
        ("litequeue", "pop + done, synchronous=FULL"),
        (
            "persist-queue",
            "SQLiteAckQueue get + ack, synchronous=FULL",
        ),
        ("localqueue", "SimpleQueue get + ack, DURABLE"),
    ] {
        let key = format!("{w}/4");
        let failures = failed.iter().filter(|k| **k == key).count();
        let failures = if failures > 0 {
            format!(", failed in {failures} of {runs} runs (see the log)")
        } else {
            String::new()
        };
        let retried = retried(&key);
        if m(&key).is_nan() {
            if !failures.is_empty() {
                rows.push(Row {
                    name: format!("peer {w} ({how}), 4 threads, {backlog} backlog{failures}"),
                    value: "failed".into(),
                    ratio: None,
                    target: None,
                });
            }
            continue;
        }
        let x = m(&key);
        let r = vs("tenure-drain/4", &key);
        rows.push(Row {
            name: format!(
                "peer {w} ({how}), 4 threads, {backlog} backlog, duplicates {:.0}{retried}{failures}",
                d(&key)
            ),
            value: format!("{x:.0} jobs/s"),
            ratio: Some((w.into(), r)),
            target: Some((format!("tenure ≥ 3 × {w}"), r >= 3.0)),
        });
    }
    let (n1, n4) = (m("tenure-drain/1/normal"), m("tenure-drain/4/normal"));
    for (t, n, x, base) in [
        ("1 thread", 1, n1, None),
        ("4 threads", 4, n4, Some("tenure-drain/1/normal")),
    ] {
        rows.push(Row {
            name: format!(
                "Python: tenure claim_next + complete, {t}, {backlog} backlog (NORMAL, context: the same drain when no call waits for an fsync), duplicates {:.0}",
                d(&format!("tenure-drain/{n}/normal")),
            ),
            value: format!("{x:.0} jobs/s"),
            ratio: base.map(|b| ("1 thread (NORMAL)".into(), vs("tenure-drain/4/normal", b))),
            target: None,
        });
    }
    rows.push(Row {
        name: "Python: tenure claim_next + complete, 4 threads: FULL against NORMAL (context: how much of the fsync's cost the commit groups hide)".into(),
        value: format!("{t4:.0} jobs/s"),
        ratio: Some((
            "4 threads (NORMAL)".into(),
            vs("tenure-drain/4", "tenure-drain/4/normal"),
        )),
        target: None,
    });
    // A job is two calls; a group carries at most the 4 callers.
    let f1 = rates("tenure-drain/1");
    let budget = GroupBudget::over_rounds(
        2.0,
        &vec![4.0; f1.len()],
        &f1,
        &rates("tenure-drain/1/normal"),
        &rates("tenure-drain/4"),
        &rates("tenure-drain/4/normal"),
        3.0,
    );
    rows.push(budget_row(
        "Python: 4 threads draining",
        "4 calls (the most it can carry)",
        "4 threads at NORMAL",
        "3 × 1 thread",
        budget,
    ));
    Ok(())
}

/// The context row of [`GroupBudget`]: a group's time and its parts, what
/// the target asks of it, and the ratio to one thread with the rest at 0.
fn budget_row(who: &str, per_group: &str, work_from: &str, target: &str, b: GroupBudget) -> Row {
    Row {
        name: format!(
            "{who} (FULL), one commit group of {per_group} (context, medians of rounds): the fsync and its wait {:.0} µs (a call of 1 thread at FULL less one at NORMAL), the members' work {:.0} µs ({work_from}), the rest {:.0} µs (callers coming back, the lock's handoff); {target} asks for a group of {:.0} µs at most",
            b.fsync, b.work, b.rest, b.need
        ),
        value: format!("{:.0} µs a group", b.group),
        ratio: Some(("1 thread, with the rest at 0".into(), b.best)),
        target: None,
    }
}

/// The tree the claim gates were added to: the "no gate set costs
/// nothing" rows run its `tenure-bench lifecycle` beside this tree's.
const BEFORE_GATES: &str = "5bc9cc0";

/// The tree at `commit`, `git archive`d into `target/bench-base/<commit>`
/// (once), and the target directory its builds share.
fn base_tree(commit: &str) -> Result<(PathBuf, PathBuf)> {
    let base = crate::capi::target_dir()?.join("bench-base");
    let tree = base.join(commit);
    if !tree.join("Cargo.toml").exists() {
        std::fs::create_dir_all(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
        let archive = output(Command::new("sh").arg("-c").arg(format!(
            "git -C '{}' archive --format=tar {commit} | tar -x -C '{}' && echo ok",
            crate::util::root().display(),
            tree.display()
        )))?;
        if archive.trim() != "ok" {
            return Err(format!("git archive of {commit} failed"));
        }
    }
    Ok((tree, base.join("target")))
}

/// `tenure-bench` of the tree at `commit` (built in its [`base_tree`] with
/// its own lock file): the baseline of rows that compare this tree with an
/// earlier one in the same run.
fn base_bench_bin(commit: &str) -> Result<PathBuf> {
    let (tree, target) = base_tree(commit)?;
    run(cargo()
        .current_dir(&tree)
        .args(["build", "--locked", "--release", "-p", "tenure-bench"])
        .arg("--target-dir")
        .arg(&target))?;
    Ok(target.join("release/tenure-bench"))
}

/// The example `name` of this tree's `crates/tenure-bench/examples`, built
/// against this tree's `tenure` and, copied into the [`base_tree`] of
/// `commit`, against that tree's: the same source on both sides of a row
/// that compares the two trees. Returns (this tree's, `commit`'s).
fn bench_example_bins(name: &str, commit: &str) -> Result<(PathBuf, PathBuf)> {
    let file = format!("crates/tenure-bench/examples/{name}.rs");
    let build = [
        "build",
        "--locked",
        "--release",
        "-p",
        "tenure-bench",
        "--example",
        name,
    ];
    run(cargo().args(build))?;
    let now = crate::capi::target_dir()?.join(format!("release/examples/{name}"));
    let (tree, target) = base_tree(commit)?;
    let copy = tree.join(&file);
    std::fs::create_dir_all(copy.parent().expect("a folder"))
        .map_err(|e| format!("{}: {e}", copy.display()))?;
    let text = std::fs::read(root().join(&file)).map_err(|e| format!("{file}: {e}"))?;
    // Written only when it differs, so cargo does not rebuild it.
    if std::fs::read(&copy).ok().as_ref() != Some(&text) {
        std::fs::write(&copy, &text).map_err(|e| format!("{}: {e}", copy.display()))?;
    }
    run(cargo()
        .current_dir(&tree)
        .args(build)
        .arg("--target-dir")
        .arg(&target))?;
    Ok((now, target.join(format!("release/examples/{name}"))))
}

/// The claim gates' rows, on SQLite or (with `url`) PostgreSQL:
///
/// - claim-next with a concurrency limit set (never reached) against a
///   production of the same store with none (`gates-cost`), target ≤ 1.2 ×,
///   and the same with a rate limit (its state is written at each claim;
///   reported);
/// - a rate limit of 200 claims/s (burst 20) with 4 saturated workers for
///   60 s (smoke: 3 s): the most claims in any 1 s window ≤ rate + burst,
///   the total within 5 % of rate × seconds;
/// - on SQLite in a full run, lifecycles of a production with no gate
///   against the same of the tree before the gates ([`BEFORE_GATES`]),
///   alternating, target ≥ 0.97 × (FULL and NORMAL); PostgreSQL's are
///   [`pg_before_gates_rows`].
pub(crate) fn gates_rows(
    bin: &std::path::Path,
    cfg: &Cfg,
    url: Option<&str>,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let backend = if url.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let (cycles, rounds) = if cfg.smoke {
        ("50", "2")
    } else {
        ("1000", "7")
    };
    for (gates, what, want) in [
        ("limit", "a concurrency limit of 1 000", Some(1.2)),
        ("rate", "a rate limit of 10⁶ claims/s", None),
    ] {
        let args = [
            "gates-cost",
            "--gates",
            gates,
            "--cycles",
            cycles,
            "--rounds",
            rounds,
            "--sync",
            "normal",
        ];
        let j = workload(&mut on_store(bin, url, &args))?;
        let ratio = num(&j, "ratio");
        rows.push(Row {
            name: format!(
                "claim-next with {what} set, never reached ({backend}, NORMAL; mean claim {:.1} µs against {:.1} µs with no gate, median of {rounds} alternating rounds)",
                num(&j, "gated_claim_us"),
                num(&j, "plain_claim_us"),
            ),
            value: format!("{:.1} µs a claim", num(&j, "gated_claim_us")),
            ratio: Some(("the same claim with no gate set".into(), ratio)),
            target: want.map(|w| (format!("≤ {w} ×"), ratio <= w)),
        });
        raw.push(j);
    }

    let secs = if cfg.smoke { "3" } else { "60" };
    let (rate, burst) = (200.0, 20.0);
    let j = workload(&mut on_store(
        bin,
        url,
        &[
            "rate-limit",
            "--rate",
            "200",
            "--burst",
            "20",
            "--secs",
            secs,
            "--threads",
            "4",
        ],
    ))?;
    let (most, total) = (num(&j, "max_in_1s"), num(&j, "total_ratio"));
    rows.push(Row {
        name: format!(
            "a rate limit of {rate:.0} claims/s, burst {burst:.0}, 4 saturated workers for {secs} s ({backend}): {} claims, the most in any 1 s window {most:.0}",
            num(&j, "claims"),
        ),
        value: format!("{total:.3} × rate × {secs} s"),
        ratio: None,
        target: Some((
            format!("every 1 s window ≤ {:.0}, total within 5 %", rate + burst),
            most <= rate + burst && (total - 1.0).abs() <= 0.05,
        )),
    });
    raw.push(j);

    if url.is_some() || cfg.smoke {
        return Ok(());
    }
    let base = base_bench_bin(BEFORE_GATES)?;
    for (sync, n) in [("full", cfg.cycles), ("normal", cfg.cycles * 10)] {
        let n = n.to_string();
        let args = ["lifecycle", "--sync", sync, "--cycles", &n];
        let (mut now, mut before) = (Vec::new(), Vec::new());
        for r in 0..cfg.runs.max(5) {
            let mut pair = |b: &std::path::Path| -> Result<f64> {
                let j = workload(Command::new(b).args(args))?;
                let x = num(&j, "cycles_per_s");
                raw.push(j);
                Ok(x)
            };
            if r % 2 == 0 {
                now.push(pair(bin)?);
                before.push(pair(&base)?);
            } else {
                before.push(pair(&base)?);
                now.push(pair(bin)?);
            }
        }
        let ratio = paired_ratio(&now, &before);
        rows.push(Row {
            name: format!(
                "tenure lifecycle, a production with no gate set ({}), against the tree before the claim gates ({BEFORE_GATES}) built in the same run, {} alternating runs",
                sync.to_uppercase(),
                now.len(),
            ),
            value: format!("{:.0} cycles/s", median(now.clone())),
            ratio: Some((format!("{BEFORE_GATES}'s lifecycle"), ratio)),
            target: Some(("≥ 0.97 ×".into(), ratio >= 0.97)),
        });
    }
    Ok(())
}

/// On PostgreSQL, lifecycles (claim-next, renew, complete) of a production
/// with no gate set, by this tree's `tenure` on the database `now_url`
/// against the tree before the claim gates ([`BEFORE_GATES`]) on
/// `base_url` (another database of the same server: each tree keeps its
/// own schema), both running `examples/pg_lifecycle.rs` (see
/// [`bench_example_bins`]); 1 thread and 4 threads, 1 000 timed cycles a
/// run, 7 alternating rounds (smoke: 100 cycles, 2 rounds), the median of
/// the per-round ratios, target ≥ 0.97 ×. `server` names the server in the
/// raw objects.
pub(crate) fn pg_before_gates_rows(
    smoke: bool,
    now_url: &str,
    base_url: &str,
    server: &str,
    rows: &mut Vec<Row>,
    raw: &mut Vec<Value>,
) -> Result {
    let (now_bin, base_bin) = bench_example_bins("pg_lifecycle", BEFORE_GATES)?;
    let (cycles, rounds) = if smoke { ("100", 2) } else { ("1000", 7) };
    for threads in ["1", "4"] {
        let (mut now, mut before) = (Vec::new(), Vec::new());
        for r in 0..rounds {
            let mut pair = |b: &Path, url: &str, tree: &str| -> Result<f64> {
                let mut j = workload(Command::new(b).args([
                    "--url",
                    url,
                    "--cycles",
                    cycles,
                    "--threads",
                    threads,
                ]))?;
                j["tree"] = Value::from(tree);
                j["server"] = Value::from(server);
                let x = num(&j, "cycles_per_s");
                raw.push(j);
                Ok(x)
            };
            if r % 2 == 0 {
                now.push(pair(&now_bin, now_url, "this")?);
                before.push(pair(&base_bin, base_url, BEFORE_GATES)?);
            } else {
                before.push(pair(&base_bin, base_url, BEFORE_GATES)?);
                now.push(pair(&now_bin, now_url, "this")?);
            }
        }
        let ratio = paired_ratio(&now, &before);
        // Round trips of a claim, renewal and completion, this tree's and
        // the base's, from each tree's newest round on this server.
        let trips = |tree: &str| {
            raw.iter()
                .rev()
                .find(|j| j["tree"] == tree && j["server"] == server)
                .map(|j| {
                    format!(
                        "{} + {} + {}",
                        num(j, "round_trips_claim"),
                        num(j, "round_trips_renew"),
                        num(j, "round_trips_complete"),
                    )
                })
                .unwrap_or_default()
        };
        rows.push(Row {
            name: format!(
                "tenure lifecycle, a production with no gate set (PostgreSQL, {threads} thread{}, {cycles} cycles a run; {BEFORE_GATES}'s median {:.0} cycles/s; round trips of a claim + renewal + completion {} against {}), against the tree before the claim gates ({BEFORE_GATES}) built in the same run, the same driver (examples/pg_lifecycle.rs) on another database of the server, {rounds} alternating rounds",
                if threads == "1" { "" } else { "s" },
                median(before.clone()),
                trips("this"),
                trips(BEFORE_GATES),
            ),
            value: format!(
                "{:.0} cycles/s, {ratio:.2} × {BEFORE_GATES}'s",
                median(now.clone())
            ),
            ratio: Some((format!("{BEFORE_GATES}'s lifecycle"), ratio)),
            target: Some(("≥ 0.97 ×".into(), ratio >= 0.97)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_reads_numbers_of_the_workload_json() {
        let j = parse_json(
            r#"{"workload":"lifecycle","cycles_per_s":1.5e3,"renewals_missed":0,"inner":{"y":9}}"#,
            "workload",
        )
        .unwrap();
        assert_eq!(num(&j, "cycles_per_s"), 1500.0);
        assert_eq!(num(&j, "renewals_missed"), 0.0);
        assert!(num(&j, "y").is_nan());
        assert!(num(&j, "workload").is_nan());
    }

    #[test]
    fn kept_row_bytes_split_tombstone_pages_from_the_rest() {
        let w: Value = serde_json::from_str(
            r#"{"file_bytes":40960,"pages":10,"jobs_kept":4,"tombstones_kept":2,
                "pages_by_name":{"jobs":3,"events":2,"facts":1,"tombstones":1,"tombstones_by_age":1}}"#,
        )
        .unwrap();
        // 6 pages of 4 KiB for 4 jobs, 2 for 2 tombstones.
        assert_eq!(kept_row_bytes(&w), (6144.0, 4096.0));
        assert!(kept_row_bytes(&serde_json::json!({})).0.is_nan());
    }

    #[test]
    fn ratios_pair_the_runs_of_a_round() {
        // The machine doubles its speed after the first round: each round's
        // ratio is 2, the ratio of the medians is not.
        let base = [100.0, 200.0, 200.0];
        let x = [200.0, 400.0, 400.0];
        assert_eq!(paired_ratio(&x, &base), 2.0);
        let base = [100.0, 100.0, 200.0];
        let x = [200.0, 400.0, 400.0];
        assert_eq!(median(x.to_vec()) / median(base.to_vec()), 4.0);
        assert_eq!(paired_ratio(&x, &base), 2.0);
        // A round in which either side failed (NaN) is left out.
        assert_eq!(
            paired_ratio(&[f64::NAN, 30.0, 50.0], &[1.0, 10.0, 10.0]),
            5.0
        );
        assert_eq!(paired_ratio(&[3.0, 30.0], &[1.0, f64::NAN]), 3.0);
        assert!(paired_ratio(&[f64::NAN], &[1.0]).is_nan());
        assert!(paired_ratio(&[], &[]).is_nan());
        assert_eq!(median(vec![f64::NAN, 1.0, 3.0, 2.0]), 2.0);
    }

    #[test]
    fn a_group_budget_splits_a_group_into_fsync_work_and_the_rest() {
        // One thread: 100 cycles/s at FULL, 1 000 at NORMAL, 3 calls each:
        // a call is 3 333 µs at FULL and 333 µs at NORMAL, so the fsync and
        // its wait are 3 000 µs. 8 threads at NORMAL: 900 cycles/s, a call
        // 370 µs. 8 threads at FULL, 8 calls a group: 400 cycles/s, a group
        // 6 667 µs.
        let r = RoundRates {
            one_full: 100.0,
            one_normal: 1000.0,
            wide_full: 400.0,
            wide_normal: 900.0,
        };
        let b = GroupBudget::of(3.0, 8.0, r, 4.0);
        let near = |x: f64, want: f64| (x - want).abs() < 1e-6 * want.abs().max(1.0);
        assert!(near(b.group, 8e6 / 1200.0), "{b:?}");
        assert!(near(b.fsync, 1e6 / 300.0 - 1e6 / 3000.0), "{b:?}");
        assert!(near(b.work, 8e6 / 2700.0), "{b:?}");
        assert!(near(b.rest, b.group - b.fsync - b.work), "{b:?}");
        // 4 × one thread: a group of 8 calls in 2 one-thread calls' time.
        assert!(near(b.need, 2.0 * 1e6 / 300.0), "{b:?}");
        assert!(
            near(b.best, 8.0 * (1e6 / 300.0) / (b.fsync + b.work)),
            "{b:?}"
        );
        // The group at FULL here is exactly 4 × one thread when the rest
        // is what the target leaves.
        let at_target = RoundRates {
            wide_full: 400.0 * b.group / b.need,
            ..r
        };
        let t = GroupBudget::of(3.0, 8.0, at_target, 4.0);
        assert!(near(t.group, t.need), "{t:?}");
        // Medians are taken part by part.
        let m = GroupBudget::median_of(&[
            b,
            GroupBudget { rest: -1.0, ..b },
            GroupBudget { fsync: 1.0, ..b },
        ]);
        assert_eq!(m, b);
        // Over rounds: each round's own budget, then the medians; a round
        // missing a rate is left out.
        let over = GroupBudget::over_rounds(
            3.0,
            &[8.0, 8.0],
            &[100.0, 100.0],
            &[1000.0, 1000.0],
            &[400.0, 400.0],
            &[900.0],
            4.0,
        );
        assert_eq!(over, b);
    }

    /// Every kind of report a run can write: SQLite's and PostgreSQL's, full
    /// and smoke.
    fn every_kind() -> Vec<String> {
        let mut kinds = Vec::new();
        for smoke in [false, true] {
            for soak in [false, true] {
                kinds.push(report_kind(smoke, soak).to_owned());
                for bulk in [false, true] {
                    kinds.push(crate::pg::report_kind(
                        smoke,
                        &crate::pg::Rows { soak, bulk },
                    ));
                }
            }
            kinds.push(crate::pg::peers_report_kind(smoke));
            kinds.push(ops_report_kind(smoke).to_owned());
            kinds.push(crate::pg::ops_report_kind(smoke));
            kinds.push(crate::pg::before_gates_report_kind(smoke));
        }
        kinds
    }

    #[test]
    fn a_report_overwrites_the_last_of_its_kind() {
        let dir = Path::new("/r");
        assert_eq!(
            report_files(dir, "full"),
            (dir.join("latest-full.md"), dir.join("latest-full.json"))
        );
        let mut kinds = every_kind();
        assert_eq!(
            kinds,
            [
                "full",
                "postgres-full",
                "postgres-bulk-submit-full",
                "soak-full",
                "postgres-soak-full",
                "postgres-bulk-submit-soak-full",
                "postgres-peers-full",
                "ops-full",
                "postgres-ops-full",
                "postgres-before-gates-full",
                "smoke",
                "postgres-smoke",
                "postgres-bulk-submit-smoke",
                "soak-smoke",
                "postgres-soak-smoke",
                "postgres-bulk-submit-soak-smoke",
                "postgres-peers-smoke",
                "ops-smoke",
                "postgres-ops-smoke",
                "postgres-before-gates-smoke",
            ]
        );
        // One pair of files per kind, no two kinds sharing one.
        let mut names: Vec<_> = kinds
            .iter()
            .flat_map(|k| {
                let (md, json) = report_files(dir, k);
                [md, json]
            })
            .collect();
        names.sort();
        names.dedup();
        kinds.dedup();
        assert_eq!(names.len(), 2 * kinds.len());
    }

    /// Whether a pattern of `.gitignore` with `*` wildcards only matches
    /// `name` whole.
    fn glob(pattern: &str, name: &str) -> bool {
        let parts: Vec<&str> = pattern.split('*').collect();
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        if parts.len() == 1 {
            return pattern == name;
        }
        if !name.starts_with(first) || name.len() < first.len() + last.len() {
            return false;
        }
        let mut rest = &name[first.len()..name.len() - last.len()];
        if !name.ends_with(last) {
            return false;
        }
        for part in &parts[1..parts.len() - 1] {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        true
    }

    #[test]
    fn smoke_reports_are_ignored_by_git_and_full_ones_are_not() {
        // `cargo xtask test` runs the smoke bench: it must leave the tracked
        // files as they were.
        let ignore = std::fs::read_to_string(root().join(".gitignore")).unwrap();
        let patterns: Vec<&str> = ignore
            .lines()
            .filter_map(|l| l.trim().strip_prefix("/bench/results/"))
            .collect();
        let ignored = |p: &Path| {
            let name = p.file_name().unwrap().to_str().unwrap();
            patterns.iter().any(|pat| glob(pat, name))
        };
        assert!(glob("*-smoke.*", "latest-smoke.json"));
        assert!(!glob("*-smoke.*", "latest-full.json"));
        assert!(glob("a*b*c", "aXbYc") && !glob("a*b*c", "aXcYb"));
        for kind in every_kind() {
            let (md, json) = report_files(&results_dir(), &kind);
            let smoke = kind.ends_with("smoke");
            assert_eq!(ignored(&md), smoke, "{kind}");
            assert_eq!(ignored(&json), smoke, "{kind}");
            // The files a report is written through first.
            assert!(ignored(&md.with_extension("md.tmp")), "{kind}");
            assert!(ignored(&json.with_extension("json.tmp")), "{kind}");
        }
    }

    #[test]
    fn a_run_writes_its_report_over_the_last_of_its_kind() {
        let dir = scratch().unwrap();
        let started = RunStart::now();
        let write = |md: &str, n: u64| {
            write_report_in(
                &dir,
                "full",
                md,
                vec![serde_json::json!({ "workload": "floor", "n": n })],
                &started,
            )
            .unwrap()
        };
        write("| row |\n|---|\n| first |\n", 1);
        let (md, json) = write("\n| row |\n|---|\n| second |\n", 2);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["latest-full.json", "latest-full.md"]);
        let text = std::fs::read_to_string(&md).unwrap();
        assert!(text.starts_with("Run: `cargo xtask"), "{text}");
        assert!(text.contains("\nMachine: "), "{text}");
        assert!(text.ends_with("\n\n| row |\n|---|\n| second |\n"), "{text}");
        assert!(!text.contains("first"), "{text}");
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(j["kind"], "full");
        assert_eq!(
            j["workloads"],
            serde_json::json!([{ "workload": "floor", "n": 2 }])
        );
        assert_eq!(j["started_unix_time"], started.unix_time);
        assert!(j["unix_time"].as_u64().unwrap() >= started.unix_time);
        assert_eq!(j["machine"]["os"], std::env::consts::OS);
        assert!(j["machine"]["cpus"].as_u64().unwrap() >= 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dates_read_in_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(951_868_799), "2000-02-29 23:59:59 UTC");
        assert_eq!(utc(1_709_251_199), "2024-02-29 23:59:59 UTC");
        assert_eq!(utc(1_709_251_200), "2024-03-01 00:00:00 UTC");
        assert_eq!(utc(1_796_254_614), "2026-12-02 23:36:54 UTC");
        assert_eq!(utc(4_107_542_400), "2100-03-01 00:00:00 UTC");
    }

    #[test]
    fn machine_facts_read_from_proc() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\n\nprocessor\t: 1\nmodel name\t: Some CPU @ 2.0GHz\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("Some CPU @ 2.0GHz"));
        assert_eq!(cpu_model("processor : 0\n"), None);
        let meminfo = "MemTotal:        8131404 kB\nMemFree:  1 kB\n";
        assert_eq!(mem_total_kib(meminfo), Some(8_131_404));
        assert_eq!(mem_total_kib(""), None);
        let mounts = "/dev/vda1 / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n/dev/vdb /tmpdata xfs rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n";
        let of = |p: &str| mount_of(Path::new(p), mounts);
        assert_eq!(of("/tmp/x"), Some(("tmpfs".into(), "tmpfs".into())));
        assert_eq!(of("/tmpdata/x"), Some(("/dev/vdb".into(), "xfs".into())));
        assert_eq!(of("/home"), Some(("/dev/vda1".into(), "ext4".into())));
        assert_eq!(mount_of(Path::new("/x"), ""), None);
    }

    #[test]
    fn a_report_head_names_the_run_the_tree_and_the_machine() {
        let started = RunStart {
            unix_time: 1_796_254_614,
            load: Some("0.52".into()),
            tree: Some("0123456789ab".into()),
        };
        let machine = serde_json::json!({
            "cpus": 2, "cpu_model": "Some CPU", "memory_kib": 8_388_608,
            "os": "linux", "kernel": "6.1.0", "arch": "x86_64",
            "scratch_dir": "/tmp", "scratch_fs": "ext4", "scratch_device": "/dev/vda1",
        });
        let head = report_head(
            "cargo xtask bench",
            &started,
            1_796_254_674,
            Some("3.10"),
            &machine,
        );
        assert_eq!(
            head,
            "Run: `cargo xtask bench`, 2026-12-02 23:36:54 UTC to 2026-12-02 23:37:54 UTC \
             (unix 1796254614 to 1796254674); tree `0123456789ab`.\n\n\
             Machine: 2 CPUs (Some CPU), 8.0 GiB memory, linux 6.1.0 x86_64; scratch files \
             in /tmp on ext4 (/dev/vda1); load average (1 min) 0.52 at the start, 3.10 at the end.\n"
        );
        let bare = RunStart {
            unix_time: 0,
            load: None,
            tree: None,
        };
        let head = report_head("x", &bare, 0, None, &serde_json::json!({}));
        assert!(head.contains("tree `?`"), "{head}");
        assert!(head.contains("? CPUs (?), ? memory"), "{head}");
    }

    #[test]
    fn counts_read_as_english() {
        assert_eq!(count(1, "thread"), "1 thread");
        assert_eq!(count(4, "thread"), "4 threads");
        assert_eq!(count(1, "process"), "1 process");
        assert_eq!(count(8, "process"), "8 processes");
    }
}
