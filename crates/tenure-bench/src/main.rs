//! Benchmark workloads. Each subcommand prints one JSON object on stdout;
//! `cargo xtask bench` runs them several times, takes medians and writes the
//! report. Nothing here asserts a timing.
//!
//! ```text
//! tenure-bench floor      --sync full|normal --cycles N [--jobs J]
//! tenure-bench lifecycle  --sync full|normal --cycles N [--jobs J]
//! tenure-bench claim-next --queued N --cycles N
//! tenure-bench batch      --size B --jobs N --sync full|normal
//! tenure-bench threads    --threads W --millis MS --sync full|normal [--jobs J]
//! tenure-bench contend    --procs P --threads T --millis MS --sync full|normal [--jobs J]
//! ```
//!
//! `--jobs` is the backlog seeded before the measured part: for `floor` and
//! `lifecycle` at least `--cycles` (equal backlogs let two runs of different
//! lengths be subtracted, as the callgrind rows do), for the timed workloads
//! enough for the run by default.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tenure::{Authority, Delay, ErrorCode, JobSpec, Options, Synchronous, Ttl};

type Args = HashMap<String, String>;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first().cloned() else {
        eprintln!(
            "usage: tenure-bench <floor|lifecycle|claim-next|batch|threads|contend> [--key value ...]"
        );
        std::process::exit(2);
    };
    let mut args = Args::new();
    for pair in argv[1..].chunks(2) {
        if let [k, v] = pair {
            args.insert(k.trim_start_matches("--").to_owned(), v.clone());
        }
    }
    let json = match cmd.as_str() {
        "floor" => floor(&args),
        "lifecycle" => lifecycle(&args),
        "claim-next" => claim_next_scale(&args),
        "batch" => batch(&args),
        "threads" => threads(&args),
        "contend" => contend(&args),
        "contend-worker" => contend_worker(&args),
        other => {
            eprintln!("unknown workload {other}");
            std::process::exit(2);
        }
    };
    println!("{json}");
}

fn arg<T: std::str::FromStr>(a: &Args, k: &str, default: T) -> T {
    a.get(k).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn sync(a: &Args) -> (Synchronous, &'static str) {
    match a.get("sync").map(String::as_str) {
        Some("normal") => (Synchronous::Normal, "NORMAL"),
        _ => (Synchronous::Full, "FULL"),
    }
}

fn tempdir() -> PathBuf {
    let base = std::env::var_os("TENURE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let d = base.join(format!(
        "tenure-bench-{}-{}",
        std::process::id(),
        rand_u64()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rand_u64() -> u64 {
    let u = tenure::Uuid::new_v4();
    u.as_u64_pair().0
}

fn ttl(us: i64) -> Ttl {
    Ttl::from_micros(us).unwrap()
}

fn seed(auth: &Authority, production: &str, n: usize, prefix: &str) {
    auth.create_production(production).unwrap();
    let mut i = 0;
    while i < n {
        let k = (n - i).min(10_000);
        let specs: Vec<JobSpec> = (i..i + k)
            .map(|j| {
                JobSpec::new(format!("{prefix}{j:08}"), b"payload".to_vec()).max_attempts(1000)
            })
            .collect();
        auth.submit_many(production, &specs).unwrap();
        i += k;
    }
}

/// Raw rusqlite: the same number of single-row write transactions as a
/// lifecycle (claim, renew, complete), same pragmas.
fn floor(a: &Args) -> String {
    let cycles: usize = arg(a, "cycles", 300);
    let rows: usize = arg(a, "jobs", cycles).max(cycles);
    let (_, pragma) = sync(a);
    let dir = tempdir();
    let conn = rusqlite::Connection::open(dir.join("floor.db")).unwrap();
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {pragma};
         CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, expires INTEGER);"
    ))
    .unwrap();
    {
        let mut ins = conn
            .prepare("INSERT INTO jobs (id, state) VALUES (?1, 'requested')")
            .unwrap();
        conn.execute_batch("BEGIN").unwrap();
        for i in 0..rows {
            ins.execute([i as i64]).unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
    }
    let start = Instant::now();
    for i in 0..cycles as i64 {
        for (state, exp) in [("claimed", 1), ("claimed", 2), ("completed", 3)] {
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            conn.prepare_cached("UPDATE jobs SET state = ?2, expires = ?3 WHERE id = ?1")
                .unwrap()
                .execute(rusqlite::params![i, state, exp])
                .unwrap();
            conn.execute_batch("COMMIT").unwrap();
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"floor","sync":"{pragma}","cycles":{cycles},"seconds":{secs:.6},"cycles_per_s":{:.2}}}"#,
        cycles as f64 / secs
    )
}

/// The tenure lifecycle in Rust: claim_next, renew, complete.
fn lifecycle(a: &Args) -> String {
    let cycles: usize = arg(a, "cycles", 300);
    let (s, pragma) = sync(a);
    let dir = tempdir();
    let auth = Authority::open(dir.join("t.db"), &Options::new().synchronous(s)).unwrap();
    seed(&auth, "bench", arg(a, "jobs", cycles).max(cycles), "j");
    let start = Instant::now();
    for _ in 0..cycles {
        let l = auth
            .claim_next("bench", "bench-worker", ttl(30_000_000))
            .unwrap();
        l.renew(ttl(60_000_000)).unwrap();
        l.complete(&[]).unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"lifecycle","sync":"{pragma}","cycles":{cycles},"seconds":{secs:.6},"cycles_per_s":{:.2}}}"#,
        cycles as f64 / secs
    )
}

/// claim_next + complete with `queued` requested jobs behind `queued`
/// completed ones (NORMAL, so the query cost is not hidden behind fsync).
/// `--scheduled-pct P` makes P % of the requested jobs due only a day later
/// and puts them ahead of the others (priority 1, spread through the
/// submission order): claim-next must pass over them to find due work.
fn claim_next_scale(a: &Args) -> String {
    let queued: usize = arg(a, "queued", 1000);
    let scheduled_pct: usize = arg(a, "scheduled-pct", 0).min(99);
    let cycles: usize = arg(a, "cycles", 500).min(queued * (100 - scheduled_pct) / 100);
    let dir = tempdir();
    let auth = Authority::open(
        dir.join("t.db"),
        &Options::new().synchronous(Synchronous::Normal),
    )
    .unwrap();
    seed(&auth, "bench", queued, "done-");
    // Complete the first `queued` jobs so they sit in front of the queue.
    let mut left = queued;
    while left > 0 {
        let k = left.min(2_000);
        let mut e = auth.edit().unwrap();
        for _ in 0..k {
            let l = e.claim_next("bench", "seeder", ttl(60_000_000)).unwrap();
            e.complete(&l, &[]).unwrap();
        }
        e.commit().unwrap();
        left -= k;
    }
    let specs_prefix = "todo-";
    let mut i = 0;
    while i < queued {
        let k = (queued - i).min(10_000);
        let specs: Vec<JobSpec> = (i..i + k)
            .map(|j| {
                let spec = JobSpec::new(format!("{specs_prefix}{j:08}"), b"p".to_vec());
                if j % 100 < scheduled_pct {
                    spec.priority(1)
                        .not_before(Delay::from_micros(86_400_000_000).unwrap())
                } else {
                    spec
                }
            })
            .collect();
        auth.submit_many("bench", &specs).unwrap();
        i += k;
    }
    let start = Instant::now();
    for _ in 0..cycles {
        let l = auth
            .claim_next("bench", "bench-worker", ttl(30_000_000))
            .unwrap();
        l.complete(&[]).unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"claim-next","queued":{queued},"scheduled_pct":{scheduled_pct},"cycles":{cycles},"seconds":{secs:.6},"cycles_per_s":{:.2}}}"#,
        cycles as f64 / secs
    )
}

/// `size` claims and completions per edit; reports jobs per second.
fn batch(a: &Args) -> String {
    let size: usize = arg(a, "size", 1);
    let jobs: usize = arg(a, "jobs", 300);
    let (s, pragma) = sync(a);
    let dir = tempdir();
    let auth = Authority::open(dir.join("t.db"), &Options::new().synchronous(s)).unwrap();
    seed(&auth, "bench", jobs, "j");
    let start = Instant::now();
    let mut done = 0;
    while done < jobs {
        let k = size.min(jobs - done);
        let mut e = auth.edit().unwrap();
        let leases: Vec<_> = (0..k)
            .map(|_| e.claim_next("bench", "w", ttl(30_000_000)).unwrap())
            .collect();
        e.commit().unwrap();
        let mut e = auth.edit().unwrap();
        for l in &leases {
            e.complete(l, &[]).unwrap();
        }
        e.commit().unwrap();
        done += k;
    }
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"batch","size":{size},"sync":"{pragma}","jobs":{jobs},"seconds":{secs:.6},"jobs_per_s":{:.2}}}"#,
        jobs as f64 / secs
    )
}

/// Lifecycles (claim_next, renew, complete) on `auth` until `deadline` or
/// until the backlog is empty. Returns the completed count and whether the
/// backlog ran out (the rate then understates the throughput).
fn lifecycles_until(auth: &Authority, deadline: Instant) -> (u64, bool) {
    let mut count = 0u64;
    while Instant::now() < deadline {
        match auth.claim_next("bench", "worker", ttl(30_000_000)) {
            Ok(l) => {
                if l.renew(ttl(60_000_000))
                    .and_then(|_| l.complete(&[]))
                    .is_ok()
                {
                    count += 1;
                }
            }
            Err(e) if e.code() == ErrorCode::Busy => {}
            Err(e) if e.code() == ErrorCode::NoJobAvailable => return (count, true),
            Err(e) => panic!("claim_next: {e}"),
        }
    }
    (count, false)
}

/// Enough jobs for `millis` of lifecycles by any number of workers: the
/// store's own rate bounds the total, far below 10 000 lifecycles/s here.
fn backlog_for(millis: u64) -> usize {
    200_000.min(10_000 * (millis as usize / 1000 + 1))
}

/// `threads` threads of one process, each doing lifecycles on one shared
/// authority for `millis`; reports the total rate and per-thread counts.
fn threads(a: &Args) -> String {
    let n: usize = arg(a, "threads", 1).max(1);
    let millis: u64 = arg(a, "millis", 2000);
    let (s, pragma) = sync(a);
    let dir = tempdir();
    let auth = Authority::open(dir.join("t.db"), &Options::new().synchronous(s)).unwrap();
    seed(&auth, "bench", arg(a, "jobs", backlog_for(millis)), "j");
    let go = Arc::new(std::sync::Barrier::new(n + 1));
    let workers: Vec<_> = (0..n)
        .map(|_| {
            let (auth, go) = (auth.clone(), go.clone());
            std::thread::spawn(move || {
                go.wait();
                lifecycles_until(&auth, Instant::now() + Duration::from_millis(millis))
            })
        })
        .collect();
    go.wait();
    let start = Instant::now();
    let mut counts = Vec::new();
    let mut drained = false;
    for w in workers {
        let (c, d) = w.join().unwrap();
        counts.push(c);
        drained |= d;
    }
    let secs = start.elapsed().as_secs_f64();
    let total: u64 = counts.iter().sum();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"threads","threads":{n},"sync":"{pragma}","millis":{millis},"cycles":{total},"seconds":{secs:.6},"cycles_per_s":{:.2},"per_thread":{counts:?},"min":{},"max":{},"drained":{drained}}}"#,
        total as f64 / secs,
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    )
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// `procs` processes of `threads` worker threads each doing lifecycles on
/// one store for `millis`, each process also holding a 1 s lease renewed at
/// TTL/3 by a heartbeat thread.
fn contend(a: &Args) -> String {
    let procs: usize = arg(a, "procs", 2);
    let threads: usize = arg(a, "threads", 1).max(1);
    let millis: u64 = arg(a, "millis", 3000);
    let (_, pragma) = sync(a);
    let dir = tempdir();
    let db = dir.join("t.db");
    {
        let auth = Authority::open(&db, &Options::new()).unwrap();
        seed(&auth, "bench", arg(a, "jobs", backlog_for(millis)), "j");
        auth.create_production("hb").unwrap();
        let specs: Vec<_> = (0..procs)
            .map(|i| JobSpec::new(format!("hb{i}"), vec![]))
            .collect();
        auth.submit_many("hb", &specs).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let start_at = Instant::now() + Duration::from_millis(500);
    let children: Vec<_> = (0..procs)
        .map(|i| {
            Command::new(&exe)
                .args(["contend-worker", "--db"])
                .arg(&db)
                .args([
                    "--id",
                    &i.to_string(),
                    "--millis",
                    &millis.to_string(),
                    "--threads",
                    &threads.to_string(),
                    "--sync",
                    &pragma.to_lowercase(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let _ = start_at;
    let mut counts = Vec::new();
    let mut waits: Vec<u32> = Vec::new();
    let mut missed = 0u64;
    let mut renewals = 0u64;
    let mut drained = false;
    for c in children {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("COUNT ") {
                counts.push(rest.trim().parse::<u64>().unwrap());
            } else if let Some(rest) = line.strip_prefix("WAITS ") {
                waits.extend(rest.split(',').filter_map(|w| w.parse::<u32>().ok()));
            } else if let Some(rest) = line.strip_prefix("RENEW ") {
                let mut it = rest.split_whitespace().map(|x| x.parse::<u64>().unwrap());
                renewals += it.next().unwrap();
                missed += it.next().unwrap();
            } else if line.trim() == "DRAINED" {
                drained = true;
            }
        }
    }
    waits.sort_unstable();
    let total: u64 = counts.iter().sum();
    let min = counts.iter().copied().min().unwrap_or(0);
    let max = counts.iter().copied().max().unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"contend","procs":{procs},"threads":{threads},"drained":{drained},"sync":"{pragma}","millis":{millis},"cycles":{total},"cycles_per_s":{:.2},"per_proc":{counts:?},"min":{min},"max":{max},"wait_p50_us":{},"wait_p99_us":{},"wait_max_us":{},"renewals":{renewals},"renewals_missed":{missed}}}"#,
        total as f64 / (millis as f64 / 1000.0),
        percentile(&waits, 0.50),
        percentile(&waits, 0.99),
        waits.last().copied().unwrap_or(0),
    )
}

fn contend_worker(a: &Args) -> String {
    let db: PathBuf = a.get("db").map(PathBuf::from).expect("--db");
    let id: usize = arg(a, "id", 0);
    let millis: u64 = arg(a, "millis", 3000);
    let threads: usize = arg(a, "threads", 1).max(1);
    let (s, _) = sync(a);
    let auth = Authority::open(
        &db,
        &Options::new()
            .synchronous(s)
            .busy_timeout(Duration::from_secs(30)),
    )
    .unwrap();
    tenure::stats::enable(true);
    let stop = Arc::new(AtomicBool::new(false));
    let renewals = Arc::new(AtomicU64::new(0));
    let missed = Arc::new(AtomicU64::new(0));
    // Heartbeat: a 1 s lease renewed every TTL/3; a renewal that fails with
    // LeaseExpired is a lease lost to lock unfairness.
    let hb = {
        let auth = auth.clone();
        let (stop, renewals, missed) = (stop.clone(), renewals.clone(), missed.clone());
        std::thread::spawn(move || {
            let ttl = ttl(1_000_000);
            let mut lease = loop {
                match auth.claim("hb", &format!("hb{id}"), "heartbeat", ttl) {
                    Ok(l) => break l,
                    Err(e) if e.code() == ErrorCode::Busy => continue,
                    Err(e) => panic!("heartbeat claim: {e}"),
                }
            };
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(333_333));
                match lease.renew(ttl) {
                    Ok(()) => {
                        renewals.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e)
                        if matches!(
                            e.code(),
                            ErrorCode::LeaseExpired | ErrorCode::Busy | ErrorCode::StaleLease
                        ) =>
                    {
                        missed.fetch_add(1, Ordering::Relaxed);
                        // Re-take the heartbeat job once it can be claimed again.
                        loop {
                            match auth.claim("hb", &format!("hb{id}"), "heartbeat", ttl) {
                                Ok(l) => {
                                    lease = l;
                                    break;
                                }
                                Err(_) if !stop.load(Ordering::Relaxed) => {
                                    std::thread::sleep(Duration::from_millis(5))
                                }
                                Err(_) => break,
                            }
                        }
                    }
                    Err(e) => panic!("heartbeat renew: {e}"),
                }
            }
        })
    };
    let deadline = Instant::now() + Duration::from_millis(millis);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let auth = auth.clone();
            std::thread::spawn(move || lifecycles_until(&auth, deadline))
        })
        .collect();
    let mut count = 0u64;
    let mut drained = false;
    for w in workers {
        let (c, d) = w.join().unwrap();
        count += c;
        drained |= d;
    }
    stop.store(true, Ordering::Relaxed);
    hb.join().unwrap();
    let waits = tenure::stats::take_lock_waits_us();
    let w: Vec<String> = waits.iter().map(|w| w.to_string()).collect();
    println!("COUNT {count}");
    if drained {
        println!("DRAINED");
    }
    println!("WAITS {}", w.join(","));
    println!(
        "RENEW {} {}",
        renewals.load(Ordering::Relaxed),
        missed.load(Ordering::Relaxed)
    );
    String::new()
}
