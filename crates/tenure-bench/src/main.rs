//! Benchmark workloads. Each subcommand prints one JSON object on stdout;
//! `cargo xtask bench` runs them several times, takes medians and writes the
//! report. Nothing here asserts a timing.
//!
//! ```text
//! tenure-bench floor      --sync full|normal --cycles N [--jobs J]
//! tenure-bench lifecycle  --sync full|normal --cycles N [--jobs J]
//! tenure-bench claim-next --queued N --cycles N [--rounds R --scheduled-pct P --base-queued B]
//! tenure-bench batch      --size B --jobs N --sync full|normal
//! tenure-bench threads    --threads W --millis MS --sync full|normal [--jobs J] [--group-commit on|off]
//! tenure-bench contend    --procs P --threads T --millis MS --sync full|normal [--jobs J]
//! tenure-bench wake       --samples N [--url postgres://...]
//! tenure-bench idle       --waiters W --millis MS [--url postgres://...]
//! tenure-bench keeper     --leases N --millis MS
//! tenure-bench stats      --jobs N --samples S [--url postgres://...]
//! tenure-bench stats-poll --threads W --millis MS --rounds R [--url postgres://...]
//! tenure-bench gates-cost --cycles N --rounds R [--gates limit|rate|both --limit K --sync full|normal --url postgres://...]
//! tenure-bench rate-limit --rate R --secs S --threads W [--burst B --url postgres://...]
//! tenure-bench soak       --jobs N --window W --retention-secs R --sync full|normal
//!                         [--rate J --max-backlog B --tick-ms T]
//! ```
//!
//! `--url` runs a workload on a PostgreSQL database instead of a fresh
//! SQLite file.
//!
//! `--jobs` is the backlog seeded before the measured part: for `floor` and
//! `lifecycle` at least `--cycles` (equal backlogs let two runs of different
//! lengths be subtracted, as the callgrind rows do), for the timed workloads
//! enough for the run by default.

mod pace;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tenure::{Age, Authority, Delay, ErrorCode, JobSpec, Options, Retention, Synchronous, Ttl};

type Args = HashMap<String, String>;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first().cloned() else {
        eprintln!(
            "usage: tenure-bench <floor|lifecycle|claim-next|batch|threads|contend|wake|idle|keeper|schedules|schedules-idle> [--key value ...]"
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
        "batch-many" => batch_many(&args),
        "threads" => threads(&args),
        "contend" => contend(&args),
        "contend-worker" => contend_worker(&args),
        "wake" => wake(&args),
        "wake-waiter" => wake_waiter(&args),
        "idle" => idle(&args),
        "idle-waiters" => idle_waiters(&args),
        "keeper" => keeper(&args),
        "schedules" => schedules(&args),
        "schedules-idle" => schedules_idle(&args),
        "soak" => soak(&args),
        "stats" => stats_read(&args),
        "stats-poll" => stats_poll(&args),
        "gates-cost" => gates_cost(&args),
        "rate-limit" => rate_limit(&args),
        other => {
            eprintln!("unknown workload {other}");
            std::process::exit(2);
        }
    };
    println!("{json}");
}

/// A stream through one store with automatic retention (events, terminal
/// jobs and tombstones all kept `R` s), each job claimed (claim-next) and
/// completed by one worker thread.
///
/// Arrivals: with `--rate` (jobs/s) a submitter thread submits at that
/// fixed rate, a chunk every `--tick-ms` (default 20), with at most
/// `--max-backlog` jobs (default 10 000) submitted and not yet completed:
/// when the worker falls behind, the backlog grows up to that bound and
/// the arrivals beyond it are held back (not made up later: the schedule
/// slips by them; counted per window). Without `--rate` the stream is
/// unpaced: the worker submits 1 000 jobs whenever it has drained the last.
///
/// Per window of `W` completed jobs: the arrival rate, the completion
/// throughput, the backlog at its end, the arrivals held back, the store
/// file's size, its pages by table and index (`dbstat`), the rows the
/// retention window holds, the mean and the slowest cycle (claim-next +
/// complete; the automatic prune steps ride on these calls) and the
/// 1-minute load average. In a paced stream that keeps up the throughput
/// is the rate; the mean cycle is what shows a store getting slower.
fn soak(a: &Args) -> String {
    let jobs: usize = arg(a, "jobs", 1_000_000);
    let window: usize = arg(a, "window", 100_000).clamp(1, jobs.max(1));
    let keep = Age::from_secs(arg(a, "retention-secs", 60)).unwrap();
    let rate: f64 = arg(a, "rate", 0.0_f64).max(0.0);
    let max_backlog: u64 = arg(a, "max-backlog", 10_000_u64).max(1);
    let tick = Duration::from_millis(arg(a, "tick-ms", 20_u64).max(1));
    let (s, pragma) = sync(a);
    let dir = tempdir();
    let path = dir.join("soak.db");
    let policy = Retention {
        event_age: Some(keep),
        terminal_job_age: Some(keep),
        tombstone_age: Some(keep),
    };
    let auth = Authority::open(&path, &Options::new().synchronous(s).retention(policy)).unwrap();
    auth.create_production("soak").unwrap();
    let size = |suffix: &str| {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    };
    // The file's pages and how many of them are free (a reader beside the
    // writer: WAL), and the rows the retention window holds (the file's
    // size follows them: what `R` s of the stream left).
    let pages = || -> [i64; 5] {
        let c = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let q = |sql: &str| c.query_row(sql, [], |r| r.get(0)).unwrap();
        [
            q("PRAGMA page_count"),
            q("PRAGMA freelist_count"),
            q("SELECT count(*) FROM jobs"),
            q("SELECT count(*) FROM tombstones"),
            q("SELECT count(*) FROM events"),
        ]
    };
    // Where the pages are: every table and index with its pages (dbstat),
    // largest first.
    let space = || -> String {
        let c = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut st = c
            .prepare(
                "SELECT name, count(*) AS n FROM dbstat GROUP BY name HAVING n > 1
                 ORDER BY n DESC, name",
            )
            .unwrap();
        let rows: Vec<String> = st
            .query_map([], |r| {
                Ok(format!(
                    r#""{}":{}"#,
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?
                ))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        rows.join(",")
    };
    let stream = pace::Stream::start(jobs as u64, rate, max_backlog, tick, {
        let auth = auth.clone();
        move |from, n| submit_soak(&auth, from, n)
    });
    let mut windows = Vec::new();
    // Every write transaction's wait for the writer lock (the worker's and
    // the arrivals'), so a window's slowest cycle can be set beside it.
    tenure::stats::enable(true);
    let (mut start, mut slowest, mut busy) = (Instant::now(), Duration::ZERO, Duration::ZERO);
    let (mut sent_before, mut held_before) = (0, 0);
    let mut i = 0;
    while i < jobs {
        if !stream.ready(i as u64) {
            continue;
        }
        let t = Instant::now();
        let l = auth
            .claim_next("soak", "soak-worker", ttl(30_000_000))
            .unwrap();
        l.complete(&[]).unwrap();
        let cycle = t.elapsed();
        (slowest, busy) = (slowest.max(cycle), busy + cycle);
        i += 1;
        stream.done(i as u64);
        if i % window == 0 || i == jobs {
            let secs = start.elapsed().as_secs_f64();
            let n = (i - windows.len() * window).min(window) as f64;
            let (sent, held_now) = stream.sent_and_held();
            let [pages, free, kept_jobs, kept_stones, kept_events] = pages();
            let lock_wait = tenure::stats::take_lock_waits_us()
                .into_iter()
                .max()
                .unwrap_or(0);
            let line = format!(
                r#"{{"jobs_done":{i},"secs":{secs:.1},"arrivals_per_s":{:.2},"jobs_per_s":{:.2},"backlog":{},"held_back":{},"file_bytes":{},"wal_bytes":{},"pages":{pages},"free_pages":{free},"jobs_kept":{kept_jobs},"tombstones_kept":{kept_stones},"events_kept":{kept_events},"pages_by_name":{{{}}},"mean_cycle_ms":{:.3},"slowest_cycle_ms":{:.3},"longest_lock_wait_ms":{:.3},"load1":{}}}"#,
                (sent - sent_before) as f64 / secs,
                n / secs,
                sent - i as u64,
                held_now - held_before,
                size(""),
                size("-wal"),
                space(),
                busy.as_secs_f64() * 1e3 / n,
                slowest.as_secs_f64() * 1e3,
                f64::from(lock_wait) / 1e3,
                load1()
            );
            eprintln!("soak window {line}");
            windows.push(line);
            (sent_before, held_before) = (sent, held_now);
            (start, slowest, busy) = (Instant::now(), Duration::ZERO, Duration::ZERO);
        }
    }
    stream.finish();
    let horizon = auth.history_horizon().unwrap();
    let check = auth.check().unwrap();
    drop(auth);
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"soak","sync":"{pragma}","jobs":{jobs},"window":{window},"retention_s":{},"rate":{rate},"max_backlog":{max_backlog},"history_horizon":{horizon},"check_ok":{},"windows":[{}]}}"#,
        keep.as_secs(),
        check.ok(),
        windows.join(",")
    )
}

/// Submit the soak's jobs `from..from + n` in one transaction.
fn submit_soak(auth: &Authority, from: u64, n: u64) {
    let specs: Vec<JobSpec> = (from..from + n)
        .map(|j| JobSpec::new(format!("s{j:09}"), vec![0u8; 64]))
        .collect();
    auth.submit_many("soak", &specs).unwrap();
}

/// The 1-minute load average (`/proc/loadavg`; `null` where there is none).
fn load1() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .filter(|v| v.parse::<f64>().is_ok())
        .unwrap_or_else(|| "null".into())
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
/// completed ones (NORMAL, so the query cost is not hidden behind fsync),
/// against the same on a baseline store of `--base-queued` jobs (default
/// 1 000, none scheduled) in the same process. `--scheduled-pct P` makes
/// P % of the requested jobs due only a day later and puts them ahead of
/// the others (priority 1, spread through the submission order):
/// claim-next must pass over them to find due work.
///
/// The two stores take turns for `--rounds` rounds (the first of each
/// round alternating), `--cycles` timed cycles each, after as many untimed
/// ones to warm each store's connections and caches; after each turn the
/// store gets as many due jobs as the turn took, so its queue stays
/// between `queued` less the cycles and `queued`. The ratio is the median
/// of each round's ratio: a machine that slows down between rounds moves
/// both sides alike.
fn claim_next_scale(a: &Args) -> String {
    let queued: usize = arg(a, "queued", 1000).max(1);
    let base_queued: usize = arg(a, "base-queued", 1000).max(1);
    let scheduled_pct: usize = arg(a, "scheduled-pct", 0).min(99);
    let rounds: usize = arg(a, "rounds", 20).max(1);
    let mut store = QueueStore::new(queued, scheduled_pct);
    let mut base = QueueStore::new(base_queued, 0);
    let cycles: usize = arg(a, "cycles", 500).min(store.due).min(base.due).max(1);
    for s in [&mut store, &mut base] {
        s.turn(cycles);
    }
    let (mut rates, mut base_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (r, b) = if round % 2 == 0 {
            let b = base.turn(cycles);
            (store.turn(cycles), b)
        } else {
            let r = store.turn(cycles);
            (r, base.turn(cycles))
        };
        rates.push(r);
        base_rates.push(b);
        ratios.push(r / b);
    }
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        r#"{{"workload":"claim-next","queued":{queued},"scheduled_pct":{scheduled_pct},"base_queued":{base_queued},"cycles":{cycles},"rounds":{rounds},"cycles_per_s":{:.2},"base_cycles_per_s":{:.2},"ratio":{:.4},"rates":[{}],"base_rates":[{}]}}"#,
        median_f64(&rates),
        median_f64(&base_rates),
        median_f64(&ratios),
        list(&rates),
        list(&base_rates),
    )
}

/// A store of `queued` requested jobs behind as many completed ones, for
/// [`claim_next_scale`]; removed when dropped.
struct QueueStore {
    dir: PathBuf,
    auth: Authority,
    /// Requested jobs claim-next can take now.
    due: usize,
    /// The number the next submitted job's ID carries.
    next: usize,
}

impl QueueStore {
    fn new(queued: usize, scheduled_pct: usize) -> QueueStore {
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
        let mut i = 0;
        while i < queued {
            let k = (queued - i).min(10_000);
            let specs: Vec<JobSpec> = (i..i + k)
                .map(|j| {
                    let spec = JobSpec::new(format!("todo-{j:08}"), b"p".to_vec());
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
        let due = (0..queued).filter(|j| j % 100 >= scheduled_pct).count();
        QueueStore {
            dir,
            auth,
            due,
            next: queued,
        }
    }

    /// `cycles` claim-next + complete (timed; cycles/s), then as many due
    /// jobs submitted (untimed) to put the queue back.
    fn turn(&mut self, cycles: usize) -> f64 {
        let start = Instant::now();
        for _ in 0..cycles {
            let l = self
                .auth
                .claim_next("bench", "bench-worker", ttl(30_000_000))
                .unwrap();
            l.complete(&[]).unwrap();
        }
        let rate = cycles as f64 / start.elapsed().as_secs_f64();
        let specs: Vec<JobSpec> = (self.next..self.next + cycles)
            .map(|j| JobSpec::new(format!("todo-{j:08}"), b"p".to_vec()))
            .collect();
        self.auth.submit_many("bench", &specs).unwrap();
        self.next += cycles;
        rate
    }
}

impl Drop for QueueStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `size` claims and completions per edit; reports jobs per second.
fn batch(a: &Args) -> String {
    drain_in_batches(a, "batch", |auth, k| {
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
    })
}

/// `size` claims in one `claim_next_many` call, then their completions in
/// one `complete_many` call (each call one transaction); reports jobs per
/// second.
fn batch_many(a: &Args) -> String {
    drain_in_batches(a, "batch-many", |auth, k| {
        let leases = auth
            .claim_next_many("bench", "w", ttl(30_000_000), k)
            .unwrap();
        assert_eq!(leases.len(), k);
        let items: Vec<(&tenure::Lease, &[tenure::Fact])> =
            leases.iter().map(|l| (l, &[][..])).collect();
        for r in auth.complete_many(&items).unwrap() {
            r.unwrap();
        }
    })
}

/// Seed `--jobs` jobs, then drain them `--size` at a time with `step`
/// (claim and complete `k` jobs); reports jobs per second as `name`.
fn drain_in_batches(a: &Args, name: &str, step: impl Fn(&Authority, usize)) -> String {
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
        step(&auth, k);
        done += k;
    }
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"{name}","size":{size},"sync":"{pragma}","jobs":{jobs},"seconds":{secs:.6},"jobs_per_s":{:.2}}}"#,
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
    let grouped = match a.get("group-commit").map(String::as_str) {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => panic!("--group-commit on|off, not {other}"),
    };
    let dir = tempdir();
    let options = Options::new().synchronous(s).group_commit(grouped);
    let auth = Authority::open(dir.join("t.db"), &options).unwrap();
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
    let (groups0, members0) = auth.commit_groups();
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
    let (groups1, members1) = auth.commit_groups();
    // Calls per write transaction: how many shared each commit.
    let per_group = (members1 - members0) as f64 / (groups1 - groups0).max(1) as f64;
    let total: u64 = counts.iter().sum();
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"threads","threads":{n},"sync":"{pragma}","millis":{millis},"cycles":{total},"seconds":{secs:.6},"cycles_per_s":{:.2},"calls_per_commit":{per_group:.2},"per_thread":{counts:?},"min":{},"max":{},"drained":{drained}}}"#,
        total as f64 / secs,
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    )
}

/// The middle value (the mean of the two middle ones for an even count).
fn median_f64(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
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

/// The store of a waiting workload: `--url` (PostgreSQL, a fresh production
/// name) or a new SQLite file, removed again on drop.
struct Store {
    db: PathBuf,
    production: String,
    dir: Option<PathBuf>,
    backend: &'static str,
}

impl Store {
    fn new(a: &Args) -> Store {
        let s = match a.get("url") {
            Some(u) => Store {
                db: PathBuf::from(u),
                production: format!("b{:x}", rand_u64()),
                dir: None,
                backend: "postgres",
            },
            None => {
                let dir = tempdir();
                Store {
                    db: dir.join("t.db"),
                    production: "bench".to_owned(),
                    dir: Some(dir),
                    backend: "sqlite",
                }
            }
        };
        let auth = Authority::open(&s.db, &Options::new()).unwrap();
        auth.create_production(&s.production).unwrap();
        s
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Fill `production` with `n` jobs in mixed states, a queue with history:
/// of every 100, 60 completed, 5 failed, 2 cancelled, 30 requested and
/// due, 3 requested a day ahead; besides, at most 1 000 claimed with a live
/// lease and 100 with a lease that has expired (the leases of a fleet of
/// workers, not a share of the production).
fn mixed_states(auth: &Authority, production: &str, n: usize) {
    let mut i = 0;
    while i < n {
        let k = (n - i).min(10_000);
        let specs: Vec<JobSpec> = (i..i + k)
            .map(|j| {
                let s = JobSpec::new(format!("m{j:08}"), b"payload".to_vec()).max_attempts(3);
                if j % 100 >= 97 {
                    s.not_before(Delay::from_micros(86_400_000_000).unwrap())
                } else {
                    s
                }
            })
            .collect();
        auth.submit_many(production, &specs).unwrap();
        i += k;
    }
    let take = |count: usize, ttl_us: i64| -> Vec<tenure::Lease> {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let m = (count - out.len()).min(1000);
            let got = auth
                .claim_next_many(production, "bench", ttl(ttl_us), m)
                .unwrap();
            if got.is_empty() {
                break;
            }
            out.extend(got);
        }
        out
    };
    let day = 86_400_000_000;
    for c in take(n / 100 * 60, day).chunks(1000) {
        let items: Vec<(&tenure::Lease, &[tenure::Fact])> =
            c.iter().map(|l| (l, &[][..])).collect();
        auth.complete_many(&items).unwrap();
    }
    for c in take(n / 100 * 5, day).chunks(1000) {
        let items: Vec<(&tenure::Lease, &str, bool)> =
            c.iter().map(|l| (l, "bench", true)).collect();
        auth.fail_many(&items).unwrap();
    }
    for l in &take(n / 100 * 2, day) {
        auth.cancel(production, l.job()).unwrap();
    }
    let _live = take((n / 100).min(1000), day);
    let _lapsing = take((n / 1000).min(100), 300_000);
    std::thread::sleep(Duration::from_millis(400));
}

/// `stats` of one production holding `--jobs` jobs in mixed states
/// ([`mixed_states`]), `--samples` times, beside the baseline of the same
/// run: a clock reading (a read transaction that reads one row).
fn stats_read(a: &Args) -> String {
    let n: usize = arg(a, "jobs", 100_000);
    let samples: usize = arg(a, "samples", 50).max(1);
    let store = Store::new(a);
    let auth =
        Authority::open(&store.db, &Options::new().synchronous(Synchronous::Normal)).unwrap();
    let fill = Instant::now();
    mixed_states(&auth, &store.production, n);
    let fill_s = fill.elapsed().as_secs_f64();
    let q = tenure::StatsQuery {
        production: Some(store.production.clone()),
        ..tenure::StatsQuery::default()
    };
    let first = auth.stats(&q).unwrap();
    let total = first.productions[0].total();
    // The same figures with an empty window: what the flow costs apart.
    let q0 = tenure::StatsQuery {
        window: Duration::ZERO,
        ..q.clone()
    };
    let (mut st, mut base, mut bare) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        let t = Instant::now();
        auth.stats(&q).unwrap();
        st.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        auth.stats(&q0).unwrap();
        bare.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        auth.clock().unwrap();
        base.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let p50 = median_f64(&st);
    let b50 = median_f64(&base);
    st.sort_by(f64::total_cmp);
    let p95 = st[(st.len() * 95).div_ceil(100).max(1) - 1];
    format!(
        r#"{{"workload":"stats","backend":"{}","jobs":{n},"counted":{total},"samples":{samples},"fill_s":{fill_s:.2},"p50_ms":{p50:.3},"p95_ms":{p95:.3},"no_flow_p50_ms":{:.3},"truncated":{},"clock_p50_ms":{b50:.3},"ratio":{:.2}}}"#,
        store.backend,
        median_f64(&bare),
        first.productions[0].flow.truncated,
        p50 / b50.max(1e-9),
    )
}

/// `--threads` workers doing lifecycles for `--millis`, with and without a
/// poller calling `stats` every 100 ms, the two taking turns `--rounds`
/// times on one store, in the order without, with, with, without, … so
/// that a store slowing as it fills weighs on both alike: each round's
/// ratio (with / without), the median of them, and the poll's median
/// duration.
fn stats_poll(a: &Args) -> String {
    let n: usize = arg(a, "threads", 4).max(1);
    let millis: u64 = arg(a, "millis", 1000);
    let rounds: usize = arg(a, "rounds", 3).max(1);
    let store = Store::new(a);
    let auth =
        Authority::open(&store.db, &Options::new().synchronous(Synchronous::Normal)).unwrap();
    let production = store.production.clone();
    let backlog = 20_000 * (millis as usize / 1000 + 1) * rounds * 2;
    let mut i = 0;
    while i < backlog {
        let k = (backlog - i).min(10_000);
        let specs: Vec<JobSpec> = (i..i + k)
            .map(|j| JobSpec::new(format!("j{j:09}"), b"payload".to_vec()))
            .collect();
        auth.submit_many(&production, &specs).unwrap();
        i += k;
    }
    let phase = |poll: bool| -> (f64, Vec<f64>) {
        let stop = Arc::new(AtomicBool::new(false));
        let poller = poll.then(|| {
            let (auth, stop) = (auth.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut took = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    auth.stats(&tenure::StatsQuery::default()).unwrap();
                    took.push(t.elapsed().as_secs_f64() * 1e3);
                    std::thread::sleep(Duration::from_millis(100));
                }
                took
            })
        });
        let deadline = Instant::now() + Duration::from_millis(millis);
        let start = Instant::now();
        let workers: Vec<_> = (0..n)
            .map(|_| {
                let (auth, p) = (auth.clone(), production.clone());
                std::thread::spawn(move || {
                    let mut c = 0u64;
                    while Instant::now() < deadline {
                        match auth.claim_next(&p, "worker", ttl(30_000_000)) {
                            Ok(l) => {
                                if l.renew(ttl(60_000_000))
                                    .and_then(|_| l.complete(&[]))
                                    .is_ok()
                                {
                                    c += 1;
                                }
                            }
                            Err(e) if e.code() == ErrorCode::Busy => {}
                            Err(e) => panic!("claim_next: {e}"),
                        }
                    }
                    c
                })
            })
            .collect();
        let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        let secs = start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        let took = poller.map(|p| p.join().unwrap()).unwrap_or_default();
        (total as f64 / secs, took)
    };
    let (mut without, mut with, mut ratios, mut took) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let ((b, _), (w, t)) = if r % 2 == 0 {
            let b = phase(false);
            (b, phase(true))
        } else {
            let w = phase(true);
            (phase(false), w)
        };
        took.extend(t);
        without.push(b);
        with.push(w);
        ratios.push(w / b.max(1e-9));
    }
    format!(
        r#"{{"workload":"stats-poll","backend":"{}","threads":{n},"millis":{millis},"rounds":{rounds},"polls":{},"poll_p50_ms":{:.2},"without_cycles_per_s":{:.1},"with_cycles_per_s":{:.1},"ratio":{:.3}}}"#,
        store.backend,
        took.len(),
        median_f64(&took),
        median_f64(&without),
        median_f64(&with),
        median_f64(&ratios),
    )
}

fn wall_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// Wake latency: a waiter in another process sleeps in `claim_next_wait`;
/// this process submits one job at a time; the latency is from the moment
/// the submit returned (its commit is durable) to the moment the waiter's
/// claim returned (wall clock of one machine, µs).
fn wake(a: &Args) -> String {
    use std::io::BufRead;
    let samples: usize = arg(a, "samples", 200);
    let st = Store::new(a);
    let (db, production) = (&st.db, &st.production);
    let auth = Authority::open(db, &Options::new()).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["wake-waiter", "--db"])
        .arg(db)
        .args([
            "--production",
            production,
            "--samples",
            &samples.to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut next_line = |line: &mut String| {
        line.clear();
        assert!(out.read_line(line).unwrap() > 0, "the waiter ended early");
    };
    next_line(&mut line);
    assert_eq!(line.trim(), "READY");
    let mut lat: Vec<u32> = Vec::with_capacity(samples);
    for i in 0..samples {
        // Let the waiter go back to sleep in its wait.
        std::thread::sleep(Duration::from_millis(20));
        auth.submit(production, &JobSpec::new(format!("w{i:06}"), vec![]))
            .unwrap();
        let submitted = wall_us();
        next_line(&mut line);
        let claimed: i64 = line
            .trim()
            .strip_prefix("CLAIMED ")
            .unwrap()
            .parse()
            .unwrap();
        lat.push((claimed - submitted).max(0) as u32);
    }
    assert!(child.wait().unwrap().success());
    lat.sort_unstable();
    format!(
        r#"{{"workload":"wake","backend":"{}","samples":{samples},"p50_us":{},"p99_us":{},"max_us":{}}}"#,
        st.backend,
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(0),
    )
}

fn wake_waiter(a: &Args) -> String {
    let db: PathBuf = a.get("db").map(PathBuf::from).expect("--db");
    let production = a.get("production").cloned().expect("--production");
    let samples: usize = arg(a, "samples", 200);
    let auth = Authority::open(&db, &Options::new()).unwrap();
    println!("READY");
    for _ in 0..samples {
        let l = auth
            .claim_next_wait(
                &production,
                "waiter",
                ttl(60_000_000),
                Duration::from_secs(60),
                None,
            )
            .unwrap();
        println!("CLAIMED {}", wall_us());
        l.complete(&[]).unwrap();
    }
    String::new()
}

/// CPU time of this process so far (user + system), µs.
fn cpu_us() -> i64 {
    // SAFETY: getrusage fills the zeroed struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// Idle waiters: a child process whose `--waiters` threads wait on an empty
/// production; its CPU time (getrusage) over `--millis` once they sleep.
fn idle(a: &Args) -> String {
    let waiters: usize = arg(a, "waiters", 16);
    let millis: u64 = arg(a, "millis", 10_000);
    let st = Store::new(a);
    let (db, production) = (&st.db, &st.production);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["idle-waiters", "--db"])
        .arg(db)
        .args([
            "--production",
            production,
            "--waiters",
            &waiters.to_string(),
            "--millis",
            &millis.to_string(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let cpu: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix("CPU "))
        .and_then(|v| v.trim().parse().ok())
        .expect("a CPU line");
    format!(
        r#"{{"workload":"idle","backend":"{}","waiters":{waiters},"millis":{millis},"cpu_us":{cpu},"core_fraction":{:.6}}}"#,
        st.backend,
        cpu as f64 / (millis as f64 * 1000.0),
    )
}

fn idle_waiters(a: &Args) -> String {
    let db: PathBuf = a.get("db").map(PathBuf::from).expect("--db");
    let production = a.get("production").cloned().expect("--production");
    let waiters: usize = arg(a, "waiters", 16);
    let millis: u64 = arg(a, "millis", 10_000);
    let auth = Authority::open(&db, &Options::new()).unwrap();
    let threads: Vec<_> = (0..waiters)
        .map(|i| {
            let (auth, p) = (auth.clone(), production.clone());
            std::thread::spawn(move || {
                let r = auth.claim_next_wait(
                    &p,
                    &format!("idle-{i}"),
                    ttl(60_000_000),
                    Duration::from_secs(3600),
                    None,
                );
                assert_eq!(r.unwrap_err().code(), ErrorCode::NoJobAvailable);
            })
        })
        .collect();
    // Let every waiter make its first attempt and go to sleep.
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_us();
    std::thread::sleep(Duration::from_millis(millis));
    let cpu = cpu_us() - before;
    auth.cancel_waits();
    for t in threads {
        t.join().unwrap();
    }
    println!("CPU {cpu}");
    String::new()
}

/// `--schedules` schedules (every second) due in the same second, all
/// enqueued by one scheduler step, timed; the baseline, measured in the
/// same run on the same store, is one `submit_many` of as many jobs.
/// Reports the median of `--rounds` of each.
fn schedules(a: &Args) -> String {
    let n: usize = arg(a, "schedules", 1000);
    let rounds: usize = arg(a, "rounds", 3);
    let st = Store::new(a);
    let auth = Authority::open(&st.db, &Options::new()).unwrap();
    let every = tenure::Cadence::every(tenure::Delay::from_micros(1_000_000).unwrap()).unwrap();
    for i in 0..n {
        let spec = tenure::ScheduleSpec::new(format!("s{i:05}"), every.clone(), b"x".to_vec());
        assert!(auth.create_schedule(&st.production, &spec).unwrap());
    }
    let (mut steps, mut bases) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let specs: Vec<JobSpec> = (0..n)
            .map(|i| JobSpec::new(format!("base-{round}-{i:05}"), b"x".to_vec()))
            .collect();
        let t = Instant::now();
        auth.submit_many(&st.production, &specs).unwrap();
        bases.push(t.elapsed().as_secs_f64());
        // Into the next second: every schedule has exactly one slot due.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        std::thread::sleep(Duration::from_micros(
            1_000_000 - u64::from(now.subsec_micros()) + 20_000,
        ));
        let t = Instant::now();
        let step = auth.run_schedules().unwrap();
        steps.push(t.elapsed().as_secs_f64());
        assert!(
            step.enqueued.len() >= n,
            "{} of {n} enqueued",
            step.enqueued.len()
        );
    }
    let (step, base) = (median_f64(&steps), median_f64(&bases));
    format!(
        r#"{{"workload":"schedules","backend":"{}","schedules":{n},"rounds":{rounds},"step_s":{step:.6},"submit_many_s":{base:.6},"ratio":{:.4}}}"#,
        st.backend,
        step / base
    )
}

/// A scheduler loop with nothing due (one schedule, yearly) for
/// `--millis`: its CPU time (getrusage, this process).
fn schedules_idle(a: &Args) -> String {
    let millis: u64 = arg(a, "millis", 10_000);
    let st = Store::new(a);
    let auth = Authority::open(&st.db, &Options::new()).unwrap();
    let yearly = tenure::Cadence::cron("0 0 1 1 *").unwrap();
    auth.create_schedule(
        &st.production,
        &tenure::ScheduleSpec::new("yearly", yearly, vec![]),
    )
    .unwrap();
    let cancel = tenure::WaitCancel::new();
    let loop_thread = {
        let (auth, cancel) = (auth.clone(), cancel.clone());
        std::thread::spawn(move || auth.run_schedules_until(&cancel, |_| {}).unwrap())
    };
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_us();
    std::thread::sleep(Duration::from_millis(millis));
    let cpu = cpu_us() - before;
    cancel.cancel();
    loop_thread.join().unwrap();
    format!(
        r#"{{"workload":"schedules-idle","backend":"{}","millis":{millis},"cpu_us":{cpu},"core_fraction":{:.6}}}"#,
        st.backend,
        cpu as f64 / (millis as f64 * 1000.0),
    )
}

/// Keepers: `--leases` leases with TTL 1 s, each kept alive by its own
/// keeper (every 1/3 s) in this process for `--millis`; an expiration is a
/// keeper stopped by a refusal or a lease not held at the end.
fn keeper(a: &Args) -> String {
    let leases: usize = arg(a, "leases", 1000);
    let millis: u64 = arg(a, "millis", 30_000);
    let dir = tempdir();
    let auth = Authority::open(dir.join("t.db"), &Options::new()).unwrap();
    seed(&auth, "keep", leases, "k");
    let t = ttl(1_000_000);
    let every = Duration::from_micros(333_333);
    let mut held = Vec::with_capacity(leases);
    for _ in 0..leases {
        let l = auth.claim_next("keep", "keeper", t).unwrap();
        let k = l.keep_alive(t, every).unwrap();
        held.push((l, k));
    }
    std::thread::sleep(Duration::from_millis(millis));
    let refused = held
        .iter()
        .filter(|(_, k)| k.status() != tenure::KeeperStatus::Running)
        .count();
    let renewals: u64 = held.iter().map(|(_, k)| k.renewals()).sum();
    let not_held = held
        .iter()
        .filter(|(l, _)| auth.job("keep", l.job()).unwrap().state != tenure::JobState::Claimed)
        .count();
    for (_, k) in held.iter_mut() {
        k.stop();
    }
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        r#"{{"workload":"keeper","leases":{leases},"millis":{millis},"renewals":{renewals},"refused":{refused},"not_held":{not_held},"expirations":{}}}"#,
        refused.max(not_held)
    )
}

/// Claim cost with and without claim gates: two productions of one store,
/// `plain` (no gate) and `gated` (`--gates limit`, the default: a
/// concurrency limit of `--limit`, default 1 000; `rate`: a rate limit of
/// 10⁶ claims/s; `both`; never reached), take
/// turns for `--rounds` rounds of `--cycles` lifecycles (claim-next, renew,
/// complete; the first of each round alternating). Reports the mean
/// claim-next time of each and the median of the rounds' ratios
/// (gated / plain). `--sync` as for `lifecycle` (SQLite); `--url` for
/// PostgreSQL.
fn gates_cost(a: &Args) -> String {
    let cycles: usize = arg(a, "cycles", 500);
    let rounds: usize = arg(a, "rounds", 5).max(1);
    let limit: u32 = arg(a, "limit", 1000);
    let (s, pragma) = sync(a);
    let store = Store::new(a);
    let auth = Authority::open(&store.db, &Options::new().synchronous(s)).unwrap();
    let plain = format!("{}-plain", store.production);
    let gated = format!("{}-gated", store.production);
    for p in [&plain, &gated] {
        seed(&auth, p, cycles * (rounds + 1), "j");
    }
    let gates = a.get("gates").map_or("limit", String::as_str);
    if gates != "rate" {
        auth.set_concurrency_limit(&gated, Some(limit)).unwrap();
    }
    if gates != "limit" {
        auth.set_rate_limit(
            &gated,
            Some(tenure::RateLimit {
                claims: 1_000_000,
                interval: Duration::from_secs(1),
                burst: 1_000_000,
            }),
        )
        .unwrap();
    }
    // Mean claim-next time (µs) of `n` lifecycles of `p`.
    let turn = |p: &str, n: usize| -> f64 {
        let mut claim = Duration::ZERO;
        for _ in 0..n {
            let t = Instant::now();
            let l = auth.claim_next(p, "bench-worker", ttl(30_000_000)).unwrap();
            claim += t.elapsed();
            l.renew(ttl(60_000_000)).unwrap();
            l.complete(&[]).unwrap();
        }
        claim.as_secs_f64() * 1e6 / n as f64
    };
    // Warm both productions' statements and caches.
    turn(&plain, cycles / 5 + 1);
    turn(&gated, cycles / 5 + 1);
    let (mut p_us, mut g_us, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let (p, g) = if r % 2 == 0 {
            let p = turn(&plain, cycles);
            (p, turn(&gated, cycles))
        } else {
            let g = turn(&gated, cycles);
            (turn(&plain, cycles), g)
        };
        p_us.push(p);
        g_us.push(g);
        ratios.push(g / p.max(1e-9));
    }
    format!(
        r#"{{"workload":"gates-cost","backend":"{}","sync":"{pragma}","gates":"{gates}","limit":{limit},"cycles":{cycles},"rounds":{rounds},"plain_claim_us":{:.1},"gated_claim_us":{:.1},"ratio":{:.3}}}"#,
        store.backend,
        median_f64(&p_us),
        median_f64(&g_us),
        median_f64(&ratios),
    )
}

/// A rate limit of `--rate` claims per second (burst `--burst`, default
/// rate / 10) with `--threads` saturated workers (claim-next-wait,
/// complete) for `--secs` seconds, then the claims read back from the
/// event log: the most in any 1 s window (sliding, on the authority's
/// clock) and the total against rate × seconds. NORMAL on SQLite;
/// `--url` for PostgreSQL.
fn rate_limit(a: &Args) -> String {
    let rate: u32 = arg(a, "rate", 200).max(1);
    let burst: u32 = arg(a, "burst", (rate / 10).max(1));
    let secs: u64 = arg(a, "secs", 60).max(1);
    let n: usize = arg(a, "threads", 4).max(1);
    let store = Store::new(a);
    let auth =
        Authority::open(&store.db, &Options::new().synchronous(Synchronous::Normal)).unwrap();
    let p = store.production.clone();
    let backlog = (rate as usize) * (secs as usize) + burst as usize + 1000;
    let mut i = 0;
    while i < backlog {
        let k = (backlog - i).min(10_000);
        let specs: Vec<JobSpec> = (i..i + k)
            .map(|j| JobSpec::new(format!("j{j:09}"), vec![]))
            .collect();
        auth.submit_many(&p, &specs).unwrap();
        i += k;
    }
    let start_seq = last_seq(&auth);
    auth.set_rate_limit(
        &p,
        Some(tenure::RateLimit {
            claims: rate,
            interval: Duration::from_secs(1),
            burst,
        }),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let workers: Vec<_> = (0..n)
        .map(|_| {
            let (auth, p) = (auth.clone(), p.clone());
            std::thread::spawn(move || {
                let mut done = 0u64;
                loop {
                    // Whole milliseconds: a wait is whole microseconds.
                    let left = Duration::from_millis(
                        deadline
                            .saturating_duration_since(Instant::now())
                            .as_millis() as u64,
                    );
                    if left.is_zero() {
                        break;
                    }
                    match auth.claim_next_wait(&p, "worker", ttl(30_000_000), left, None) {
                        Ok(l) => {
                            l.complete(&[]).unwrap();
                            done += 1;
                        }
                        Err(e)
                            if matches!(e.code(), ErrorCode::NoJobAvailable | ErrorCode::Busy) => {}
                        Err(e) => panic!("claim_next_wait: {e}"),
                    }
                }
                done
            })
        })
        .collect();
    let completed: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    // The claims of the run, from the log.
    let mut at = Vec::new();
    let mut after = start_seq;
    loop {
        let page = auth.production_events(&p, after, 10_000).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        at.extend(
            page.iter()
                .filter(|e| e.kind == tenure::EventKind::Claimed)
                .map(|e| e.at_us),
        );
    }
    at.sort_unstable();
    let (mut most, mut lo) = (0usize, 0usize);
    for hi in 0..at.len() {
        while at[hi] - at[lo] >= 1_000_000 {
            lo += 1;
        }
        most = most.max(hi - lo + 1);
    }
    let want = rate as f64 * secs as f64;
    format!(
        r#"{{"workload":"rate-limit","backend":"{}","rate":{rate},"burst":{burst},"secs":{secs},"threads":{n},"claims":{},"completed":{completed},"max_in_1s":{most},"total_ratio":{:.4}}}"#,
        store.backend,
        at.len(),
        at.len() as f64 / want,
    )
}

/// The newest event's sequence number (0 for an empty log).
fn last_seq(auth: &Authority) -> u64 {
    let mut after = 0;
    loop {
        let page = auth.events(after, 10_000).unwrap();
        match page.last() {
            Some(e) => after = e.seq,
            None => return after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soak_with(pairs: &[(&str, &str)]) -> String {
        let a: Args = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        soak(&a)
    }

    /// Every number a key has in a soak's JSON, in order.
    fn values(json: &str, key: &str) -> Vec<f64> {
        json.split(&format!(r#""{key}":"#))
            .skip(1)
            .map(|rest| {
                let end = rest.find([',', '}']).unwrap();
                rest[..end].parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn a_paced_soak_never_queues_more_than_its_bound() {
        let j = soak_with(&[
            ("jobs", "600"),
            ("window", "200"),
            ("retention-secs", "1"),
            ("rate", "1000000"),
            ("max-backlog", "20"),
            ("tick-ms", "1"),
            ("sync", "normal"),
        ]);
        assert!(j.contains(r#""check_ok":true"#), "{j}");
        assert_eq!(values(&j, "jobs_done"), [200.0, 400.0, 600.0], "{j}");
        let backlog = values(&j, "backlog");
        assert!(backlog.iter().all(|&b| b <= 20.0), "{j}");
        // The rate asks for far more than the bound lets in.
        assert!(values(&j, "held_back").iter().sum::<f64>() > 0.0, "{j}");
        assert_eq!(backlog.last(), Some(&0.0), "{j}");
    }

    #[test]
    fn a_paced_soak_submits_no_faster_than_its_rate() {
        let t = Instant::now();
        let j = soak_with(&[
            ("jobs", "100"),
            ("window", "50"),
            ("retention-secs", "1"),
            ("rate", "100"),
            ("sync", "normal"),
        ]);
        // 100 arrivals at 100 jobs/s cannot all be in before 1 s.
        assert!(t.elapsed() >= Duration::from_millis(950), "{j}");
        assert!(j.contains(r#""check_ok":true"#), "{j}");
        assert_eq!(values(&j, "held_back"), [0.0, 0.0], "{j}");
    }

    #[test]
    fn an_unpaced_soak_drains_every_job() {
        let j = soak_with(&[
            ("jobs", "2500"),
            ("window", "1000"),
            ("retention-secs", "1"),
            ("sync", "normal"),
        ]);
        assert!(j.contains(r#""check_ok":true"#), "{j}");
        assert_eq!(values(&j, "jobs_done"), [1000.0, 2000.0, 2500.0], "{j}");
        assert_eq!(values(&j, "backlog"), [0.0, 0.0, 0.0], "{j}");
    }
}
