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
//! `postgres_campaign` (ignored; `cargo xtask torture --postgres`) is the
//! long form: workers of every kind, the Rust one here and processes of the
//! others, drain a stream of jobs on a durable server through every cell.
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
    let (r, c, l, b) = (runs.clone(), completed.clone(), lost.clone(), began.clone());
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

/// Where the campaign's worker processes come from: the environment
/// `cargo xtask torture --postgres` sets. A kind whose variable is unset is
/// skipped with a note; a variable naming a missing file fails the campaign.
fn campaign_tool(var: &str) -> Option<PathBuf> {
    let v = std::env::var_os(var)?;
    let p = PathBuf::from(v);
    assert!(p.is_file(), "{var}={} is not a file", p.display());
    Some(p)
}

/// One kind of worker of the campaign, recording what it ran in `record`
/// (see `torture/workers/pg_campaign_worker.py`): `R <job> <claim> <µs>`
/// when a handler run begins, `E <job> <claim> <µs>` when it returns,
/// `C <job> <claim>` for a completion the worker was told landed, `O ...`
/// for any other report, `N <completed>` (the asyncio worker's count) and a
/// last `S <completed> <failed> <released> <lost> <outages>` line.
struct Kind {
    name: &'static str,
    holder: String,
    record: PathBuf,
    /// `tenure work`'s stdout: its reports, one JSON object a line.
    reports: Option<PathBuf>,
    /// The process; `None` for the in-process Rust worker.
    child: Option<std::process::Child>,
}

/// A file read as it grows, a whole line at a time.
struct Tail {
    path: PathBuf,
    offset: u64,
    rest: Vec<u8>,
}

impl Tail {
    fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            rest: Vec::new(),
        }
    }

    fn lines(&mut self) -> Vec<String> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let _ = f.seek(SeekFrom::Start(self.offset));
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        self.offset += buf.len() as u64;
        self.rest.extend_from_slice(&buf);
        let mut out = Vec::new();
        while let Some(i) = self.rest.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.rest.drain(..=i).collect();
            out.push(String::from_utf8_lossy(&line[..i]).into_owned());
        }
        out
    }
}

/// The value of `"key":"..."` in a JSON line (tenure's report lines carry
/// no escaped quotes in these fields).
fn json_str<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":\"");
    let at = line.find(&pat)? + pat.len();
    line[at..].split('"').next()
}

/// Completions acknowledged to `kind` so far, as its files show them (the
/// watcher's count; the asyncio worker's latest `N` line).
struct Acks {
    tail: Tail,
    cli: bool,
    latest: bool,
    n: u64,
}

impl Acks {
    fn poll(&mut self) -> u64 {
        for l in self.tail.lines() {
            if self.cli {
                if json_str(&l, "outcome") == Some("completed") {
                    self.n += 1;
                }
            } else if self.latest {
                if let Some(v) = l.strip_prefix("N ") {
                    self.n = v.trim().parse().unwrap_or(self.n);
                }
            } else if l.starts_with("C ") {
                self.n += 1;
            }
        }
        self.n
    }
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// The in-process Rust worker of the campaign: 4 slots, keepers, writing
/// its record as the processes do.
fn rust_worker(url: &str, holder: &str, record: &std::path::Path, ttl: Ttl) -> Worker {
    use std::io::Write;
    let a = Authority::open(url, &Options::new().busy_timeout(ms(2000))).unwrap();
    let f = Arc::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(record)
            .unwrap(),
    );
    let line = move |f: &std::fs::File, s: String| {
        (&*f).write_all(format!("{s}\n").as_bytes()).unwrap();
    };
    let (fh, fr) = (f.clone(), f);
    let cfg = WorkerConfig::new("p", holder, ttl)
        .slots(4)
        .wait_timeout(ms(500));
    Worker::start(
        &a,
        cfg,
        move |ctx| {
            let id = format!("{} {}", ctx.job(), ctx.lease().claim_id());
            line(&fh, format!("R {id} {}", now_us()));
            std::thread::sleep(ms(20));
            line(&fh, format!("E {id} {}", now_us()));
            Outcome::Complete(vec![])
        },
        move |rep| {
            let id = format!("{} {}", rep.job, rep.claim_id);
            match rep.result {
                JobResult::Completed => line(&fr, format!("C {id}")),
                other => line(&fr, format!("O {id} {other:?}")),
            }
        },
    )
    .unwrap()
}

/// Start the worker processes of every kind whose program is supplied.
fn spawn_kinds(dir: &std::path::Path, url: &str, ttl_s: u64) -> Vec<Kind> {
    use std::process::Stdio;
    let mut kinds = Vec::new();
    let mut spawn = |name: &'static str, mut cmd: Command, cli: bool| {
        let record = dir.join(format!("{name}.record"));
        let out = dir.join(format!("{name}.out"));
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(dir.join(format!("{name}.err"))).unwrap());
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {name} worker: {e}"));
        kinds.push(Kind {
            name,
            holder: name.to_owned(),
            record,
            reports: cli.then_some(out),
            child: Some(child),
        });
    };
    match campaign_tool("TENURE_CAMPAIGN_PYTHON") {
        Some(py) => {
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../torture/workers/pg_campaign_worker.py");
            for (name, mode) in [("python-threads", "thread"), ("python-asyncio", "aio")] {
                let mut c = Command::new(&py);
                c.arg(&script)
                    .args([mode, url, "p", name])
                    .arg(dir.join(format!("{name}.record")));
                spawn(name, c, false);
            }
        }
        None => eprintln!(
            "note: TENURE_CAMPAIGN_PYTHON unset: no Python workers (cargo xtask torture --postgres supplies them)"
        ),
    }
    match campaign_tool("TENURE_CAMPAIGN_CPP_WORKER") {
        Some(exe) => {
            let mut c = Command::new(exe);
            c.args([url, "p", "cpp"]).arg(dir.join("cpp.record"));
            spawn("cpp", c, false);
        }
        None => eprintln!(
            "note: TENURE_CAMPAIGN_CPP_WORKER unset: no C++ worker (cargo xtask torture --postgres supplies it)"
        ),
    }
    match campaign_tool("TENURE_CAMPAIGN_CLI") {
        Some(exe) => {
            let out_dir = dir.join("cli-out");
            std::fs::create_dir_all(&out_dir).unwrap();
            let mut c = Command::new(exe);
            c.env("TENURE_DB", url)
                .env("CAMPAIGN_RECORD", dir.join("cli.record"))
                .args(["--json", "work", "-p", "p", "--holder", "cli", "--slots", "4"])
                .args(["--ttl", &format!("{ttl_s}s"), "--wait-timeout", "500ms"])
                .args(["--grace", "10s", "--out-dir"])
                .arg(&out_dir)
                .args([
                    "--",
                    "bash",
                    "-c",
                    "echo \"R $TENURE_JOB $TENURE_CLAIM_ID ${EPOCHREALTIME/./}\" >> \"$CAMPAIGN_RECORD\"; \
                     sleep 0.02; \
                     echo \"E $TENURE_JOB $TENURE_CLAIM_ID ${EPOCHREALTIME/./}\" >> \"$CAMPAIGN_RECORD\"",
                ]);
            spawn("cli", c, true);
        }
        None => eprintln!(
            "note: TENURE_CAMPAIGN_CLI unset: no `tenure work` worker (cargo xtask torture --postgres supplies it)"
        ),
    }
    kinds
}

/// One cell of the campaign, as measured.
struct Cell {
    name: String,
    /// Completions a second, all kinds, in the 3 s before the cell.
    before: f64,
    /// The same during the cell.
    during: f64,
    /// From the server accepting connections to 0.9x `before`.
    recovery: Option<f64>,
    secs: f64,
    /// The cell's span in wall-clock µs, its quiet lead-in to the end of
    /// its recovery (the records' clock).
    from_us: i64,
    to_us: i64,
    /// Worker processes that exited by the cell's end.
    exited: usize,
}

/// What one kind's files say it did.
#[derive(Default)]
struct Record {
    /// Handler runs: (job, claim) -> (began, returned) in µs.
    runs: HashMap<(String, String), (i64, Option<i64>)>,
    /// Completions acknowledged to the worker, (job, claim).
    completed: Vec<(String, String)>,
    /// Any other report.
    others: Vec<String>,
    /// The asyncio worker's completion count (it reports counts only).
    count: Option<u64>,
    /// The last `S` line's outages.
    outages: Option<u64>,
}

fn read_record(k: &Kind) -> Record {
    let mut r = Record::default();
    let text = std::fs::read_to_string(&k.record).unwrap_or_default();
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        match f.as_slice() {
            ["R", job, claim, t] => {
                r.runs.insert(
                    (job.to_string(), claim.to_string()),
                    (t.parse().unwrap(), None),
                );
            }
            ["E", job, claim, t] => {
                r.runs
                    .get_mut(&(job.to_string(), claim.to_string()))
                    .unwrap_or_else(|| panic!("{}: an end without a start: {l}", k.name))
                    .1 = Some(t.parse().unwrap());
            }
            ["C", job, claim] => r.completed.push((job.to_string(), claim.to_string())),
            ["O", ..] => r.others.push(l.to_owned()),
            ["N", n] => r.count = n.parse().ok(),
            ["S", _, _, _, _, o] => r.outages = o.parse().ok(),
            _ => panic!("{}: a record line not understood: {l}", k.name),
        }
    }
    if let Some(out) = &k.reports {
        for l in std::fs::read_to_string(out).unwrap_or_default().lines() {
            let (Some(job), Some(claim)) = (json_str(l, "job"), json_str(l, "claim_id")) else {
                continue;
            };
            if json_str(l, "outcome") == Some("completed") {
                r.completed.push((job.to_owned(), claim.to_owned()));
            } else {
                r.others.push(l.to_owned());
            }
        }
    }
    r
}

/// The campaign of `cargo xtask torture --postgres`: a durable server of its
/// own, a producer submitting a steady stream of jobs (each submission
/// retried under its job ID until it lands) and workers of every kind
/// draining it with keepers, each of 4 slots and 60 s leases: the Rust
/// worker in this process, and processes of a Python `tenure.Worker`
/// (threads), a Python `tenure.aio.Worker`, a C++ `tenure::Worker` and
/// `tenure work` (`TENURE_CAMPAIGN_PYTHON`, `TENURE_CAMPAIGN_CPP_WORKER`,
/// `TENURE_CAMPAIGN_CLI`; a kind not supplied is skipped with a note). The
/// server is taken away cell by cell: a pinned xmin
/// (`TENURE_CAMPAIGN_PIN_S`, 60), `pg_terminate_backend` of every tenure
/// connection every 200 ms (`TENURE_CAMPAIGN_STORM_S`, 60), other clients
/// holding every connection slot (`TENURE_CAMPAIGN_EXHAUST_S`, 30),
/// `pg_ctl restart -m fast` and `-m immediate`, and `kill -9` of the
/// postmaster at random points, then a start (`TENURE_CAMPAIGN_KILLS`, 20).
/// Prints one `CELL {json}` line per cell (throughput during the cell and
/// recovery time to 0.9x the throughput before, all kinds together), one
/// `KIND {json}` line per kind and a `TOTALS {json}` line: acknowledged
/// transitions lost, double completions, jobs run again after a run that
/// finished, jobs lost, worker processes exited.
#[test]
#[ignore = "the campaign: cargo xtask torture --postgres"]
fn postgres_campaign() {
    let Some(mut s) = Server::start(
        "campaign",
        "-c max_connections=120 -c superuser_reserved_connections=0",
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
    // Leases longer than any cell's outage.
    let ttl_s = 60;
    let dir = std::env::temp_dir().join(format!("tenure-campaign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut kinds = vec![Kind {
        name: "rust",
        holder: "rust".into(),
        record: dir.join("rust.record"),
        reports: None,
        child: None,
    }];
    let rust = rust_worker(&url, "rust", &kinds[0].record, secs(ttl_s as i64));
    kinds.extend(spawn_kinds(&dir, &url, ttl_s));
    let done: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let acked = Arc::new(AtomicU64::new(0));
    // The instants of the completions of every kind (sampled every 20 ms).
    let mut acks: Vec<Acks> = kinds
        .iter()
        .map(|k| Acks {
            tail: Tail::new(k.reports.clone().unwrap_or_else(|| k.record.clone())),
            cli: k.reports.is_some(),
            latest: k.name == "python-asyncio",
            n: 0,
        })
        .collect();
    let (done2, acked2) = (done.clone(), acked.clone());
    let watcher_stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = watcher_stop.clone();
        std::thread::spawn(move || {
            let mut last = 0;
            while !stop.load(Ordering::SeqCst) {
                let now: u64 = acks.iter_mut().map(Acks::poll).sum();
                let t = Instant::now();
                let mut v = done2.lock().unwrap();
                for _ in last..now {
                    v.push(t);
                }
                last = now;
                acked2.store(now, Ordering::SeqCst);
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
    let mut cells: Vec<Cell> = Vec::new();
    let mut cell = |name: &str, act: &mut dyn FnMut()| {
        let from_us = now_us();
        std::thread::sleep(Duration::from_secs(4));
        let before = {
            let v = done.lock().unwrap();
            rate(&v, Instant::now() - Duration::from_secs(3), Instant::now())
        };
        let t0 = Instant::now();
        act();
        // The server accepts connections again.
        let t1 = Instant::now();
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
        // Worker processes that exited by the end of this cell.
        let exited: Vec<&'static str> = kinds
            .iter_mut()
            .filter_map(|k| {
                let c = k.child.as_mut()?;
                c.try_wait().unwrap().map(|_| k.name)
            })
            .collect();
        eprintln!(
            "cell {name}: before {before:.0}/s, during {during:.0}/s, recovery {recovery:?}, \
             exited {exited:?}"
        );
        cells.push(Cell {
            name: name.to_owned(),
            before,
            during,
            recovery,
            secs: (t1 - t0).as_secs_f64(),
            from_us,
            to_us: now_us(),
            exited: exited.len(),
        });
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
    let n = produced.load(Ordering::SeqCst);
    let t = Instant::now();
    while acked.load(Ordering::SeqCst) < n && t.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(ms(100));
    }
    // Every process still running (else it exited), then stopped by SIGTERM.
    let mut exited = HashMap::new();
    exited.insert("rust", rust.gave_up() as u32);
    let rust_outages = rust.outages();
    rust.stop();
    let mut stop_status = Vec::new();
    for k in kinds.iter_mut() {
        let Some(child) = k.child.as_mut() else {
            continue;
        };
        let early = child.try_wait().unwrap();
        exited.insert(k.name, early.is_some() as u32);
        if let Some(st) = early {
            let err = std::fs::read_to_string(dir.join(format!("{}.err", k.name)));
            eprintln!(
                "the {} worker exited during the campaign ({st}):\n{err:?}",
                k.name
            );
            continue;
        }
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    for k in kinds.iter_mut() {
        let Some(child) = k.child.as_mut() else {
            continue;
        };
        let t = Instant::now();
        let st = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if t.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(ms(50));
        };
        if exited[k.name] == 0 && st.is_none_or(|s| !s.success()) {
            let err = std::fs::read_to_string(dir.join(format!("{}.err", k.name)));
            stop_status.push(format!("{}: {st:?}: {err:?}", k.name));
        }
    }
    watcher_stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap();

    // The store's word on every job.
    let a = Authority::open(url.as_str(), &Options::new()).unwrap();
    let jobs = all_jobs(&a);
    let store: HashMap<String, &JobView> = jobs.iter().map(|j| (j.job.clone(), j)).collect();
    let (mut completed_n, mut ended) = (0usize, 0usize);
    let mut by_holder: HashMap<String, u64> = HashMap::new();
    for j in &jobs {
        match j.state {
            JobState::Completed => {
                completed_n += 1;
                *by_holder
                    .entry(j.holder.clone().unwrap_or_default())
                    .or_default() += 1;
            }
            JobState::Failed | JobState::Cancelled => ended += 1,
            _ => {}
        }
    }
    let total = jobs.len();
    let mut lost_acks = 0u64;
    let mut completions: HashMap<String, u32> = HashMap::new();
    let mut runs: HashMap<String, Vec<(i64, Option<i64>)>> = HashMap::new();
    let (mut other, mut outages) = (0usize, rust_outages);
    let mut kind_lines = Vec::new();
    for k in &kinds {
        let r = read_record(k);
        for ((job, _), t) in &r.runs {
            runs.entry(job.clone()).or_default().push(*t);
        }
        for (job, claim) in &r.completed {
            *completions.entry(job.clone()).or_default() += 1;
            let landed = store.get(job).is_some_and(|j| {
                j.state == JobState::Completed
                    && j.claim_id.map(|c| c.to_string()).as_deref() == Some(claim.as_str())
            });
            if !landed {
                eprintln!(
                    "{}: acknowledged completion of {job} ({claim}) not in the store",
                    k.name
                );
                lost_acks += 1;
            }
        }
        let in_store = by_holder.get(&k.holder).copied().unwrap_or(0);
        // The asyncio worker reports counts: its acknowledged completions
        // must all be in the store under its holder.
        let acked_n = match r.count {
            Some(c) => {
                lost_acks += c.saturating_sub(in_store);
                c
            }
            None => r.completed.len() as u64,
        };
        other += r.others.len();
        for o in r.others.iter().take(5) {
            eprintln!("{}: report other than completed: {o}", k.name);
        }
        // `tenure work` logs each outage's beginning on stderr.
        let kind_outages = match (k.child.is_none(), k.reports.is_some()) {
            (true, _) => rust_outages,
            (false, true) => std::fs::read_to_string(dir.join(format!("{}.err", k.name)))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("the store server is away"))
                .count() as u64,
            (false, false) => r.outages.unwrap_or(0),
        };
        if k.child.is_some() {
            outages += kind_outages;
        }
        kind_lines.push(format!(
            "KIND {{\"kind\":{:?},\"runs\":{},\"completed\":{acked_n},\"completed_in_store\":{in_store},\
             \"other_reports\":{},\"exited\":{},\"outages\":{}}}",
            k.name,
            r.runs.len(),
            r.others.len(),
            exited[k.name],
            kind_outages,
        ));
    }
    let double = completions.values().filter(|&&c| c > 1).count();
    // Run again although a run of it had finished (its lease, 60 s, outlives
    // every outage here): a run that began after another one returned, by
    // the cell it began in.
    let again: Vec<i64> = runs
        .values()
        .filter_map(|v| {
            v.iter()
                .filter_map(|&(_, end)| end)
                .flat_map(|e| v.iter().map(|&(b, _)| b).filter(move |&b| b > e))
                .min()
        })
        .collect();
    let run_again = again.len();
    let run_twice = runs.values().filter(|v| v.len() > 1).count();
    let jobs_lost = total.saturating_sub(completed_n + ended);
    let exited_n: u32 = exited.values().sum();
    let mut exited_before = 0;
    for c in &cells {
        let again_here = again
            .iter()
            .filter(|&&t| t >= c.from_us && t < c.to_us)
            .count();
        println!(
            "CELL {{\"cell\":{:?},\"seconds\":{:.1},\"before_per_s\":{:.1},\
             \"during_ratio\":{:.2},\"recovery_s\":{},\"run_again\":{again_here},\
             \"exited\":{}}}",
            c.name,
            c.secs,
            c.before,
            if c.before > 0.0 {
                c.during / c.before
            } else {
                0.0
            },
            c.recovery.map_or("null".to_owned(), |r| format!("{r:.1}")),
            c.exited - exited_before,
        );
        exited_before = c.exited;
    }
    for l in &kind_lines {
        println!("{l}");
    }
    println!(
        "TOTALS {{\"enqueued\":{n},\"stored\":{total},\"completed\":{completed_n},\
         \"acknowledged_lost\":{lost_acks},\"double_completions\":{double},\
         \"run_again\":{run_again},\"run_twice\":{run_twice},\"jobs_lost\":{jobs_lost},\
         \"worker_exited\":{exited_n},\"kinds\":{},\"outages\":{outages},\"other_reports\":{other}}}",
        kinds.len()
    );
    assert!(a.check().unwrap().ok());
    assert!(
        stop_status.is_empty(),
        "workers not stopped cleanly: {stop_status:?}"
    );
    assert_eq!(
        (lost_acks, double, run_again, jobs_lost, exited_n),
        (0, 0, 0, 0, 0),
        "acknowledged lost, double completions, run again, jobs lost, exited"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
