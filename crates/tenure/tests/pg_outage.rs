//! Workers that outlive the PostgreSQL server (docs/design.md, "Workers and
//! a server that goes away"): each test starts a throwaway server of its
//! own, runs a [`worker::Worker`] draining jobs through it, and takes the
//! server away under it: `pg_ctl restart -m immediate` and `-m fast`,
//! `kill -9` of the postmaster and a start, `pg_terminate_backend` of
//! tenure's connections every 200 ms, and other clients holding every
//! connection slot. The worker must keep running and every job must run
//! exactly once and complete (outages are shorter than the lease). The
//! waiter test cuts the LISTEN connection and checks that a job submitted
//! while it was gone is found at once.
//!
//! Runs only with `TENURE_TEST_BACKEND=postgres` (`cargo xtask pg-suites`;
//! `initdb` and `pg_ctl` on the PATH or under /usr/lib/postgresql).
mod common;
use common::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tenure::worker::{JobResult, OutageEvent, Outcome, Worker, WorkerConfig};
use tenure::*;

fn bin(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    for d in path.split(':') {
        let p = PathBuf::from(d).join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin").join(name))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}

/// A server of this test's own, stopped (immediately) when dropped.
struct Server {
    dir: PathBuf,
    port: u16,
    opts: String,
    root: bool,
}

impl Server {
    fn cmd(&self, tool: &str) -> Command {
        let exe = bin(tool).expect("PostgreSQL binaries");
        let mut c = if self.root {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        c.current_dir(&self.dir);
        c
    }

    /// initdb and start, `extra` added to the server's options.
    fn start(tag: &str, extra: &str) -> Option<Server> {
        if !pg::enabled() || bin("pg_ctl").is_none() {
            return None;
        }
        let root = unsafe_is_root();
        let dir = std::env::temp_dir().join(format!("tenure-outage-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if root {
            assert!(Command::new("chown")
                .arg("nobody")
                .arg(&dir)
                .status()
                .unwrap()
                .success());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Commits wait for their WAL write (synchronous_commit on), so a
        // crash of the server's processes loses no acknowledged commit; the
        // operating system's cache survives it, so fsync may be off.
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off \
             -c synchronous_commit=on -c full_page_writes=off {extra}",
            dir.display()
        );
        let s = Server {
            dir,
            port,
            opts,
            root,
        };
        let ok = s
            .cmd("initdb")
            .arg("-D")
            .arg(s.dir.join("data"))
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "initdb");
        s.pg_ctl(&["start"]);
        Some(s)
    }

    fn pg_ctl(&self, args: &[&str]) {
        let ok = self
            .cmd("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-o", &self.opts, "-w", "-t", "60"])
            .args(args)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        if !ok {
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            panic!("pg_ctl {args:?} failed:\n{log}");
        }
    }

    fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// `kill -9` of the postmaster (its backends die with it once they
    /// notice), then a start.
    fn kill9_and_start(&self) {
        let pid = std::fs::read_to_string(self.dir.join("data/postmaster.pid")).unwrap();
        let pid: i32 = pid.lines().next().unwrap().trim().parse().unwrap();
        assert!(Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success());
        // The orphaned backends hold the shared memory until they exit.
        let t = Instant::now();
        loop {
            let alive = Command::new("pgrep")
                .args(["-f", &format!("-p {}", self.port)])
                .output()
                .map(|o| !o.stdout.is_empty())
                .unwrap_or(false);
            if !alive || t.elapsed() > Duration::from_secs(10) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(self.dir.join("data/postmaster.pid"));
        let _ = std::fs::remove_file(self.dir.join(format!(".s.PGSQL.{}.lock", self.port)));
        self.pg_ctl(&["start"]);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self
            .cmd("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unsafe_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Every run of a job, by job ID.
type Runs = Arc<Mutex<HashMap<String, u32>>>;

struct Drain {
    worker: Worker,
    runs: Runs,
    completed: Arc<AtomicU64>,
    /// Completed reports by job.
    completions: Runs,
    lost: Arc<Mutex<Vec<String>>>,
    began: Arc<AtomicU64>,
}

/// A worker of `slots` slots on `url`, jobs of 20 ms, leases of `ttl`.
fn drain(url: &str, slots: usize, ttl: Ttl) -> Drain {
    let a = Authority::open(url, &Options::new().busy_timeout(ms(2000))).unwrap();
    let runs: Runs = Arc::default();
    let completed = Arc::new(AtomicU64::new(0));
    let lost: Arc<Mutex<Vec<String>>> = Arc::default();
    let began = Arc::new(AtomicU64::new(0));
    let completions: Runs = Arc::default();
    let (r, c, l, b) = (runs.clone(), completed.clone(), lost.clone(), began.clone());
    let cj = completions.clone();
    let cfg = WorkerConfig::new("p", "w", ttl)
        .slots(slots)
        .wait_timeout(ms(500))
        .on_outage(move |e| {
            if matches!(e, OutageEvent::Began(_)) {
                b.fetch_add(1, Ordering::SeqCst);
            }
        });
    let worker = Worker::start(
        &a,
        cfg,
        move |ctx| {
            *r.lock().unwrap().entry(ctx.job().to_owned()).or_default() += 1;
            std::thread::sleep(ms(20));
            Outcome::Complete(vec![])
        },
        move |rep| match rep.result {
            JobResult::Completed => {
                *cj.lock().unwrap().entry(rep.job.clone()).or_default() += 1;
                c.fetch_add(1, Ordering::SeqCst);
            }
            other => l.lock().unwrap().push(format!("{}: {other:?}", rep.job)),
        },
    )
    .unwrap();
    Drain {
        worker,
        runs,
        completed,
        completions,
        lost,
        began,
    }
}

fn submit(url: &str, from: usize, n: usize) {
    let a = Authority::open(url, &Options::new()).unwrap();
    let _ = a.create_production("p");
    for i in from..from + n {
        a.submit("p", &JobSpec::new(format!("j{i:05}"), b"x".to_vec()))
            .unwrap();
    }
}

/// Waits until `n` jobs completed (at most `limit`), then checks that
/// every job ran exactly once, completed, with one attempt.
fn settle(url: &str, d: Drain, n: usize, limit: Duration) -> u64 {
    let t = Instant::now();
    while (d.completed.load(Ordering::SeqCst) as usize) < n && t.elapsed() < limit {
        std::thread::sleep(ms(50));
    }
    let outages = d.worker.outages();
    assert!(!d.worker.gave_up());
    d.worker.stop();
    let lost = d.lost.lock().unwrap().clone();
    assert!(
        lost.is_empty(),
        "jobs reported other than completed: {lost:?}"
    );
    assert_eq!(d.completed.load(Ordering::SeqCst) as usize, n, "completed");
    let runs = d.runs.lock().unwrap();
    let twice: Vec<_> = runs.iter().filter(|(_, &c)| c != 1).collect();
    assert!(twice.is_empty(), "jobs run more than once: {twice:?}");
    assert_eq!(runs.len(), n);
    let a = Authority::open(url, &Options::new()).unwrap();
    let jobs = all_jobs(&a);
    for j in &jobs {
        assert_eq!(j.state, JobState::Completed, "{}", j.job);
    }
    assert_eq!(jobs.len(), n);
    assert!(a.check().unwrap().ok());
    outages
}

/// Every job of production `p`, a page at a time.
fn all_jobs(a: &Authority) -> Vec<JobView> {
    let mut all: Vec<JobView> = Vec::new();
    loop {
        let q = ListQuery {
            after: all.last().map(|j| j.job.clone()),
            limit: MAX_PAGE,
            ..ListQuery::default()
        };
        let page = a.jobs("p", &q).unwrap();
        if page.is_empty() {
            return all;
        }
        all.extend(page);
    }
}

#[test]
fn a_worker_outlives_restarts_and_a_killed_postmaster() {
    let Some(s) = Server::start("restart", "") else {
        eprintln!("skipped: needs PostgreSQL (cargo xtask pg-suites)");
        return;
    };
    let url = s.url();
    submit(&url, 0, 600);
    let d = drain(&url, 4, secs(10));
    for step in 0..3 {
        std::thread::sleep(ms(400));
        let t = Instant::now();
        match step {
            0 => s.pg_ctl(&["-m", "immediate", "restart"]),
            1 => s.pg_ctl(&["-m", "fast", "restart"]),
            _ => s.kill9_and_start(),
        }
        eprintln!("step {step}: the server was away {:?}", t.elapsed());
        assert!(
            t.elapsed() < Duration::from_secs(8),
            "outage shorter than the lease"
        );
    }
    // Drained, every slot waiting: away long enough for their waits to
    // fail, then more work.
    let t = Instant::now();
    while d.completed.load(Ordering::SeqCst) < 600 && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(ms(50));
    }
    s.pg_ctl(&["-m", "immediate", "stop"]);
    std::thread::sleep(ms(1500));
    s.pg_ctl(&["start"]);
    submit(&url, 600, 100);
    let began = d.began.clone();
    let outages = settle(&url, d, 700, Duration::from_secs(60));
    assert!(outages >= 1, "the worker saw the server go away");
    assert_eq!(
        began.load(Ordering::SeqCst),
        outages,
        "each outage reported once"
    );
}

#[test]
fn a_worker_outlives_a_storm_of_terminated_backends() {
    let Some(s) = Server::start("storm", "") else {
        eprintln!("skipped: needs PostgreSQL (cargo xtask pg-suites)");
        return;
    };
    let url = s.url();
    submit(&url, 0, 400);
    let d = drain(&url, 4, secs(10));
    let stop = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicU64::new(0));
    let storm = {
        let (stop, killed, url) = (stop.clone(), killed.clone(), url.clone());
        std::thread::spawn(move || {
            let mut c =
                postgres::Client::connect(&url.replace("?sslmode=disable", ""), postgres::NoTls)
                    .unwrap();
            c.batch_execute("SET application_name = 'storm'").unwrap();
            while !stop.load(Ordering::SeqCst) {
                let n: i64 = c
                    .query_one(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                         WHERE application_name = 'tenure' AND pid <> pg_backend_pid()",
                        &[],
                    )
                    .unwrap()
                    .get(0);
                killed.fetch_add(n as u64, Ordering::SeqCst);
                std::thread::sleep(ms(200));
            }
        })
    };
    std::thread::sleep(Duration::from_secs(4));
    stop.store(true, Ordering::SeqCst);
    storm.join().unwrap();
    eprintln!("{} backends terminated", killed.load(Ordering::SeqCst));
    assert!(killed.load(Ordering::SeqCst) > 0);
    settle(&url, d, 400, Duration::from_secs(60));
}

#[test]
fn a_worker_rides_out_an_exhausted_connection_pool() {
    let Some(s) = Server::start(
        "exhaust",
        "-c max_connections=12 -c superuser_reserved_connections=0",
    ) else {
        eprintln!("skipped: needs PostgreSQL (cargo xtask pg-suites)");
        return;
    };
    let url = s.url();
    submit(&url, 0, 200);
    let d = drain(&url, 2, secs(10));
    std::thread::sleep(ms(300));
    // Another client takes every slot there is.
    let mut hogs = Vec::new();
    while let Ok(c) =
        postgres::Client::connect(&url.replace("?sslmode=disable", ""), postgres::NoTls)
    {
        hogs.push(c);
        if hogs.len() > 20 {
            break;
        }
    }
    assert!(!hogs.is_empty());
    // A call that needs a new connection answers busy within its timeout.
    let t = Instant::now();
    let fresh = Authority::open(url.as_str(), &Options::new().busy_timeout(ms(300)));
    match fresh {
        Err(Error::Busy(m)) => assert!(m.contains("53300"), "{m}"),
        other => panic!("expected busy, got {:?}", other.map(|_| ())),
    }
    assert!(
        t.elapsed() >= ms(250) && t.elapsed() < Duration::from_secs(5),
        "asked again within its busy timeout: {:?}",
        t.elapsed()
    );
    std::thread::sleep(Duration::from_secs(2));
    drop(hogs);
    settle(&url, d, 200, Duration::from_secs(60));
}

#[test]
fn a_waiter_rescans_after_its_listener_was_cut() {
    let Some(s) = Server::start("listen", "") else {
        eprintln!("skipped: needs PostgreSQL (cargo xtask pg-suites)");
        return;
    };
    let url = s.url();
    submit(&url, 0, 0);
    let a = Authority::open(url.as_str(), &Options::new()).unwrap();
    // The first wait starts the listener.
    assert!(matches!(
        a.claim_next_wait("p", "w", secs(30), ms(50), None),
        Err(Error::NoJobAvailable(_))
    ));
    let mut c =
        postgres::Client::connect(&url.replace("?sslmode=disable", ""), postgres::NoTls).unwrap();
    c.batch_execute("SET application_name = 'cutter'").unwrap();
    let waiter = {
        let a = a.clone();
        std::thread::spawn(move || {
            let t = Instant::now();
            let l = a.claim_next_wait("p", "w", secs(30), Duration::from_secs(30), None);
            (l.map(|l| l.job().to_owned()), t.elapsed())
        })
    };
    std::thread::sleep(ms(200));
    // Cut every tenure connection (the listener's among them), and submit
    // while the listener is gone: its NOTIFY reaches nobody.
    c.batch_execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'tenure'",
    )
    .unwrap();
    submit(&url, 0, 1);
    let (job, waited) = waiter.join().unwrap();
    assert_eq!(job.unwrap(), "j00000");
    assert!(
        waited < Duration::from_secs(5),
        "found after the reconnect's rescan, not the wait's end: {waited:?}"
    );
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

/// One number from the environment, or `default`.
fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Completions per second over `[from, to)`, from their instants.
fn rate(done: &[Instant], from: Instant, to: Instant) -> f64 {
    let n = done.iter().filter(|&&t| t >= from && t < to).count();
    let secs = to.saturating_duration_since(from).as_secs_f64();
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// The campaign of `cargo xtask torture --postgres`: a durable server of its
/// own, a producer submitting a steady stream of jobs (each submission
/// retried under its job ID until it lands) and a Rust worker of 4 slots
/// draining it with keepers, while the server is taken away cell by cell:
/// a pinned xmin (`TENURE_CAMPAIGN_PIN_S`, 60), `pg_terminate_backend` of
/// every tenure connection every 200 ms (`TENURE_CAMPAIGN_STORM_S`, 60),
/// other clients holding every connection slot (`TENURE_CAMPAIGN_EXHAUST_S`,
/// 30), `pg_ctl restart -m fast` and `-m immediate`, and `kill -9` of the
/// postmaster at random points, then a start (`TENURE_CAMPAIGN_KILLS`, 20).
/// Prints one `CELL {json}` line per cell: acknowledged transitions lost,
/// double completions, jobs run again, jobs lost, worker exited, recovery
/// time to 0.9x the throughput before, and the throughput during the cell
/// relative to before.
#[test]
#[ignore = "the campaign: cargo xtask torture --postgres"]
fn postgres_campaign() {
    let Some(mut s) = Server::start(
        "campaign",
        "-c max_connections=40 -c superuser_reserved_connections=0",
    ) else {
        eprintln!("skipped: needs PostgreSQL (cargo xtask torture --postgres)");
        return;
    };
    // Durable: every commit waits for its WAL flush.
    s.pg_ctl(&["-m", "fast", "stop"]);
    s.opts = s
        .opts
        .replace("fsync=off", "fsync=on")
        .replace("full_page_writes=off", "full_page_writes=on");
    s.pg_ctl(&["start"]);
    let url = s.url();
    submit(&url, 0, 0);
    let ttl = secs(30);
    let d = drain(&url, 4, ttl);
    let done: Arc<Mutex<Vec<Instant>>> = Arc::default();
    // The instants of the completions (sampled every 20 ms).
    let (done2, completed) = (done.clone(), d.completed.clone());
    let watcher_stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = watcher_stop.clone();
        std::thread::spawn(move || {
            let mut last = 0;
            while !stop.load(Ordering::SeqCst) {
                let now = completed.load(Ordering::SeqCst);
                let t = Instant::now();
                let mut v = done2.lock().unwrap();
                for _ in last..now {
                    v.push(t);
                }
                last = now;
                drop(v);
                std::thread::sleep(ms(20));
            }
        })
    };
    // The producer: 150 jobs a second, each retried until it lands.
    let produced = Arc::new(AtomicU64::new(0));
    let prod_stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (produced, stop, url) = (produced.clone(), prod_stop.clone(), url.clone());
        std::thread::spawn(move || {
            let a = Authority::open(url.as_str(), &Options::new().busy_timeout(ms(2000))).unwrap();
            let start = Instant::now();
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let due = start + Duration::from_micros(i * 1_000_000 / 150);
                if let Some(w) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(w);
                }
                let spec = JobSpec::new(format!("c{i:07}"), b"x".to_vec());
                while a.submit("p", &spec).is_err() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(ms(50));
                }
                i += 1;
                produced.store(i, Ordering::SeqCst);
            }
        })
    };
    let admin = url.replace("?sslmode=disable", "");
    let mut cells = Vec::new();
    let mut cell = |name: &str, act: &mut dyn FnMut()| {
        std::thread::sleep(Duration::from_secs(4));
        let before = {
            let v = done.lock().unwrap();
            rate(&v, Instant::now() - Duration::from_secs(3), Instant::now())
        };
        let t0 = Instant::now();
        act();
        let t1 = Instant::now(); // the server accepts connections again
                                 // Recovery: the end of the first 1 s window after t1 at >= 0.9x.
        let mut recovery = None;
        while t1.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(ms(250));
            let v = done.lock().unwrap();
            let now = Instant::now();
            if now - t1 >= Duration::from_secs(1)
                && rate(&v, now - Duration::from_secs(1), now) >= 0.9 * before
            {
                recovery = Some((now - t1).as_secs_f64());
                break;
            }
        }
        let during = {
            let v = done.lock().unwrap();
            rate(&v, t0, t1.max(t0 + ms(1)))
        };
        eprintln!("cell {name}: before {before:.0}/s, during {during:.0}/s, recovery {recovery:?}");
        cells.push((
            name.to_owned(),
            before,
            during,
            recovery,
            (t1 - t0).as_secs_f64(),
        ));
    };
    let pin_s = env_u64("TENURE_CAMPAIGN_PIN_S", 60);
    cell("pinned xmin", &mut || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM tenure.jobs")
            .unwrap();
        std::thread::sleep(Duration::from_secs(pin_s));
        c.batch_execute("COMMIT").unwrap();
    });
    let storm_s = env_u64("TENURE_CAMPAIGN_STORM_S", 60);
    cell("pg_terminate_backend every 200 ms", &mut || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        c.batch_execute("SET application_name = 'storm'").unwrap();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(storm_s) {
            let _ = c.batch_execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE application_name = 'tenure' AND pid <> pg_backend_pid()",
            );
            std::thread::sleep(ms(200));
        }
    });
    let exhaust_s = env_u64("TENURE_CAMPAIGN_EXHAUST_S", 30);
    cell("connection slots exhausted", &mut || {
        let mut hogs = Vec::new();
        let t = Instant::now();
        // Take every slot, and every one that frees up, for the duration.
        while t.elapsed() < Duration::from_secs(exhaust_s) {
            match postgres::Client::connect(&admin, postgres::NoTls) {
                Ok(c) => hogs.push(c),
                Err(_) => std::thread::sleep(ms(20)),
            }
        }
        drop(hogs);
    });
    cell("pg_ctl restart -m fast", &mut || {
        s.pg_ctl(&["-m", "fast", "restart"])
    });
    cell("pg_ctl restart -m immediate", &mut || {
        s.pg_ctl(&["-m", "immediate", "restart"])
    });
    let kills = env_u64("TENURE_CAMPAIGN_KILLS", 20);
    cell(&format!("{kills} kill -9 of the postmaster"), &mut || {
        for k in 0..kills {
            // A random point: 0.2 .. 1.5 s after the last start.
            let wait = 200 + (rand_u64() % 1300);
            std::thread::sleep(ms(wait));
            s.kill9_and_start();
            eprintln!("kill {k} after {wait} ms");
        }
    });
    prod_stop.store(true, Ordering::SeqCst);
    producer.join().unwrap();
    let n = produced.load(Ordering::SeqCst) as usize;
    let t = Instant::now();
    while (d.completed.load(Ordering::SeqCst) as usize) < n
        && t.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(ms(100));
    }
    watcher_stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    let exited = d.worker.gave_up() as u32;
    let outages = d.worker.outages();
    d.worker.stop();
    let runs = d.runs.lock().unwrap().clone();
    let run_again = runs.values().filter(|&&c| c > 1).count();
    let a = Authority::open(url.as_str(), &Options::new()).unwrap();
    let (mut completed_n, mut ended, mut total) = (0usize, 0usize, 0usize);
    for j in all_jobs(&a) {
        total += 1;
        match j.state {
            JobState::Completed => completed_n += 1,
            JobState::Failed | JobState::Cancelled => ended += 1,
            _ => {}
        }
    }
    let reported = d.completed.load(Ordering::SeqCst) as usize;
    let lost_acks = reported.saturating_sub(completed_n);
    let double = d
        .completions
        .lock()
        .unwrap()
        .values()
        .filter(|&&c| c > 1)
        .count();
    let jobs_lost = total.saturating_sub(completed_n + ended);
    let other = d.lost.lock().unwrap().len();
    for (name, before, during, recovery, secs) in &cells {
        println!(
            "CELL {{\"cell\":{name:?},\"seconds\":{secs:.1},\"before_per_s\":{before:.1},\
             \"during_ratio\":{:.2},\"recovery_s\":{}}}",
            if *before > 0.0 { during / before } else { 0.0 },
            recovery.map_or("null".to_owned(), |r| format!("{r:.1}"))
        );
    }
    println!(
        "TOTALS {{\"enqueued\":{n},\"stored\":{total},\"completed\":{completed_n},\
         \"acknowledged_lost\":{lost_acks},\"double_completions\":{double},\
         \"run_again\":{run_again},\"jobs_lost\":{jobs_lost},\"worker_exited\":{exited},\
         \"outages\":{outages},\"other_reports\":{other}}}"
    );
    assert!(a.check().unwrap().ok());
    assert_eq!((lost_acks, jobs_lost, exited), (0, 0, 0));
}
