//! `cargo xtask bench [--smoke]`: run the benchmark workloads of
//! `crates/tenure-bench`, take medians, compute ratios against baselines
//! measured in the same run, and write `bench/results/<stamp>.{md,json}`
//! (plus `latest.md`). Figures are never asserted; `--smoke` runs tiny sizes
//! so `cargo xtask test` proves the harness works.

use crate::util::{apt_install, cargo, output, parse_json, root, run, step, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

struct Cfg {
    smoke: bool,
    runs: usize,
    cycles: usize,
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

fn bench_bin() -> Result<PathBuf> {
    run(cargo().args(["build", "--locked", "--release", "-p", "tenure-bench"]))?;
    Ok(crate::capi::target_dir()?.join("release/tenure-bench"))
}

/// A number field of the JSON object a workload prints (NaN when absent).
fn num(json: &Value, field: &str) -> f64 {
    json[field].as_f64().unwrap_or(f64::NAN)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

/// Run a workload program and parse the JSON object it prints.
fn workload(cmd: &mut Command) -> Result<Value> {
    let what = crate::util::show(cmd);
    parse_json(&output(cmd)?, &what)
}

struct Row {
    name: String,
    value: String,
    ratio: Option<(String, f64)>,
    target: Option<(String, bool)>,
}

pub fn bench(smoke: bool) -> Result {
    let cfg = Cfg {
        smoke,
        runs: if smoke { 1 } else { 5 },
        cycles: if smoke { 30 } else { 400 },
    };
    step(&format!(
        "benchmarks ({})",
        if smoke { "smoke" } else { "full" }
    ));
    let bin = bench_bin()?;
    let mut rows: Vec<Row> = Vec::new();
    let mut raw: Vec<Value> = Vec::new();
    let cycles = cfg.cycles.to_string();

    // 1-2: floor vs lifecycle in every language, interleaved so all see the
    // same noise.
    let progs = programs(cfg.smoke)?;
    let mut rust = std::collections::HashMap::new();
    for sync in ["full", "normal"] {
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
        let m = |lang: &str| median(v.get(lang).cloned().unwrap_or_default());
        let (f, l) = (m("floor"), m("rust"));
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
            ratio: Some(("floor".into(), l / f)),
            target: Some(("≥ 0.85 × floor".into(), l / f >= 0.85)),
        });
        for (lang, name, want) in [
            ("c", "C ABI (C program)", 0.95),
            ("cpp", "C++", 0.95),
            ("python", "Python", 0.80),
        ] {
            if v.contains_key(lang) {
                let x = m(lang);
                let target = (lang != "python" || sync == "full")
                    .then(|| (format!("≥ {want:.2} × Rust"), x / l >= want));
                rows.push(Row {
                    name: format!("tenure lifecycle, {name} ({up})"),
                    value: format!("{x:.0} cycles/s"),
                    ratio: Some(("Rust".into(), x / l)),
                    target,
                });
            }
        }
    }

    // 6: peers, each doing its closest equivalent of claim + complete.
    if let (Some(py), false) = (&progs.python, cfg.smoke) {
        let backlog = "10000";
        let mut v: std::collections::HashMap<&str, Vec<f64>> = Default::default();
        for _ in 0..3 {
            for w in ["tenure-cycle", "litequeue", "persist-queue", "localqueue"] {
                let out = workload(
                    Command::new(py)
                        .arg(root().join("bench/python_bench.py"))
                        .args([w, "--cycles", backlog]),
                )?;
                v.entry(w).or_default().push(num(&out, "cycles_per_s"));
                raw.push(out);
            }
        }
        let t = median(v["tenure-cycle"].clone());
        rows.push(Row {
            name: "Python: tenure claim_next + complete, 10k backlog (FULL)".into(),
            value: format!("{t:.0} cycles/s"),
            ratio: None,
            target: None,
        });
        for (w, want, how) in [
            ("litequeue", 3.0, "pop + done, synchronous=FULL"),
            (
                "persist-queue",
                3.0,
                "SQLiteAckQueue get + ack, synchronous=FULL",
            ),
            ("localqueue", 1.5, "SimpleQueue get + ack, DURABLE"),
        ] {
            let x = median(v[w].clone());
            rows.push(Row {
                name: format!("peer {w} ({how}), 10k backlog"),
                value: format!("{x:.0} cycles/s"),
                ratio: Some((w.into(), t / x)),
                target: Some((format!("tenure ≥ {want} × {w}"), t / x >= want)),
            });
        }
    }

    // 3: claim-next scaling.
    let sizes: &[usize] = if cfg.smoke {
        &[100, 1_000]
    } else {
        &[1_000, 100_000, 1_000_000]
    };
    let mut base = None;
    for &n in sizes {
        let mut v = Vec::new();
        for _ in 0..if n >= 100_000 { 1 } else { cfg.runs } {
            let j = workload(Command::new(&bin).args([
                "claim-next",
                "--queued",
                &n.to_string(),
                "--cycles",
                &cycles,
            ]))?;
            v.push(num(&j, "cycles_per_s"));
            raw.push(j);
        }
        let r = median(v);
        let b = *base.get_or_insert(r);
        let ratio = r / b;
        rows.push(Row {
            name: format!("claim-next + complete, {n} queued behind {n} completed (NORMAL)"),
            value: format!("{r:.0} cycles/s"),
            ratio: Some((format!("{} queued", sizes[0]), ratio)),
            target: (n != sizes[0])
                .then_some(("within ±20 %".into(), (0.8..=1.2).contains(&ratio))),
        });
    }

    // 4: contention.
    let procs: &[usize] = if cfg.smoke { &[1, 2] } else { &[1, 2, 4, 8] };
    let millis = if cfg.smoke { "400" } else { "3000" };
    let mut one = None;
    for &p in procs {
        let j = workload(Command::new(&bin).args([
            "contend",
            "--procs",
            &p.to_string(),
            "--millis",
            millis,
            "--sync",
            "full",
        ]))?;
        let rate = num(&j, "cycles_per_s");
        let b = *one.get_or_insert(rate);
        let (min, max) = (num(&j, "min"), num(&j, "max"));
        let spread = if min > 0.0 { max / min } else { f64::INFINITY };
        let p99 = num(&j, "wait_p99_us");
        let missed = num(&j, "renewals_missed");
        let met = p == 1 || (rate / b >= 0.9 && spread <= 2.0 && p99 <= 25_000.0 && missed == 0.0);
        rows.push(Row {
            name: format!(
                "{p} contending processes (FULL): per-proc min/max {min:.0}/{max:.0}, lock wait p50/p99/max {:.1}/{:.1}/{:.1} ms, renewals missed {missed:.0} of {:.0}",
                num(&j, "wait_p50_us") / 1000.0,
                p99 / 1000.0,
                num(&j, "wait_max_us") / 1000.0,
                num(&j, "renewals") + missed,
            ),
            value: format!("{rate:.0} cycles/s"),
            ratio: Some(("1 process".into(), rate / b)),
            target: (p > 1).then_some((
                "≥ 0.90 × 1 process, max/min ≤ 2, p99 wait ≤ 25 ms, 0 renewals missed".into(),
                met,
            )),
        });
        raw.push(j);
    }

    // 5: batched claims.
    let mut b1 = None;
    for size in [1usize, 10, 100] {
        let jobs = if cfg.smoke { 200 } else { 2_000 }.max(size * 4);
        let mut v = Vec::new();
        for _ in 0..cfg.runs {
            let j = workload(Command::new(&bin).args([
                "batch",
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
            name: format!("batched claims, {size} per edit (FULL)"),
            value: format!("{r:.0} jobs/s"),
            ratio: Some(("batch 1".into(), r / b)),
            target: (size == 100).then_some(("≥ 10 × batch 1".into(), r / b >= 10.0)),
        });
    }

    // Report.
    let mut md = String::new();
    let _ = writeln!(md, "| row | value | ratio | target |\n|---|---:|---:|---|");
    for r in &rows {
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
    let dir = root().join("bench/results");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let kind = if cfg.smoke { "smoke" } else { "full" };
    let json = format!(
        "{}\n",
        serde_json::json!({"kind": kind, "unix_time": stamp, "workloads": raw})
    );
    std::fs::write(dir.join(format!("{stamp}-{kind}.json")), json).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(format!("{stamp}-{kind}.md")), &md).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(format!("latest-{kind}.md")), &md).map_err(|e| e.to_string())?;
    println!("\n{md}");
    println!("report: bench/results/{stamp}-{kind}.{{md,json}}");
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
}
