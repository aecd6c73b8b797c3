//! `tenure demo`: a production run by several waiting worker processes,
//! with one worker killed (SIGKILL) mid-lease, one paused (SIGSTOP) until its
//! job was reclaimed and completed by another (its late completion is
//! rejected), a few jobs cancelled by the coordinator, and a graceful stop of
//! every worker (SIGTERM) at the end; then a summary and `check`.
//!
//! Workers are `tenure work --json` processes (this same binary via
//! `std::env::current_exe()`): the worker loop, whose slots wait for jobs,
//! keep each lease alive and run the hidden `__demo-task` command on it:
//! it sleeps briefly, then prints the SHA-256 of its payload. Payloads
//! starting with `flaky` fail (exit 1, retryable) on their first attempt;
//! payloads starting with `broken` exit 100 (permanent failure).
//!
//! The demo only checks what must hold whatever the timing: every job ends
//! terminal, the counts add up, every completed job's registered output file
//! exists with the registered SHA-256, every worker stops cleanly on SIGTERM,
//! and `check` finds no violation. The reclaim/stale counts are reported,
//! not asserted (they depend on timing).

use super::{Ctx, Done};
use crate::exit;
use crate::fail::{local, usage, R};
use crate::out::{self, Render};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tenure::{
    Authority, Backoff, CheckReport, Delay, EventKind, JobSpec, JobState, ListQuery, Options, Ttl,
};

/// Options of `tenure demo`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// How many jobs to submit (1..=5000).
    #[arg(long, default_value_t = 40)]
    jobs: usize,
    /// How many worker processes to run (1..=32).
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Slots (jobs at a time) of each worker process (1..=8).
    #[arg(long, default_value_t = 2)]
    slots: usize,
    /// Lease TTL of the workers (a killed worker's job is reclaimable after it).
    #[arg(long, default_value = "2s", allow_hyphen_values = true)]
    ttl: String,
    /// Keep the temporary directory (store and outputs) and print its path
    /// (always kept with --db: the store's facts name the output files).
    #[arg(long)]
    keep: bool,
    /// Serve the dashboard (`tenure serve`) on this loopback address while
    /// the demo runs.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8425")]
    serve: Option<String>,
}

/// A `tenure serve` child process, stopped when dropped.
struct Dashboard(std::process::Child);

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How long the built-in task works on one job.
const TASK_TIME: Duration = Duration::from_millis(250);
/// A safety net: the demo gives up (and says so) after this long.
const DEADLINE: Duration = Duration::from_secs(180);

/// The hidden `__demo-task` command run by the demo's workers.
pub fn task() -> R<Done> {
    let mut payload = Vec::new();
    std::io::stdin()
        .read_to_end(&mut payload)
        .map_err(local("reading the payload"))?;
    let attempt: u32 = std::env::var("TENURE_ATTEMPT")
        .ok()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let job = std::env::var("TENURE_JOB").unwrap_or_default();
    std::thread::sleep(TASK_TIME);
    if payload.starts_with(b"broken") {
        eprintln!("demo task {job}: broken input, giving up for good");
        return Done::exit(tenure::executor::PERMANENT_EXIT_CODE);
    }
    if payload.starts_with(b"flaky") && attempt == 1 {
        eprintln!("demo task {job}: flaky failure on attempt 1");
        return Done::exit(1); // retryable
    }
    println!("{}  {job}", hex(&Sha256::digest(&payload)));
    Done::exit(exit::OK)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

struct Worker {
    child: Child,
    spawned: Instant,
    generation: u32,
}

struct Demo {
    exe: PathBuf,
    db: PathBuf,
    out_dir: PathBuf,
    log_dir: PathBuf,
    production: String,
    ttl: String,
    slots: usize,
    tx: mpsc::Sender<Value>,
}

impl Demo {
    fn spawn(&self, slot: usize, generation: u32) -> R<Worker> {
        let holder = format!("worker-{}.{generation}", slot + 1);
        let log = std::fs::File::create(self.log_dir.join(format!("{holder}.log")))
            .map_err(local("creating a worker log"))?;
        let mut child = Command::new(&self.exe)
            .arg("--db")
            .arg(&self.db)
            .args(["--json", "work", "-p", &self.production])
            .args(["--holder", &holder, "--ttl", &self.ttl])
            .args([
                "--slots",
                &self.slots.to_string(),
                "--grace",
                "5s",
                "--out-dir",
            ])
            .arg(&self.out_dir)
            .arg("--")
            .arg(&self.exe)
            .arg("__demo-task")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(local("starting a worker"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        Ok(Worker {
            child,
            spawned: Instant::now(),
            generation,
        })
    }
}

fn all_jobs(auth: &Authority, production: &str) -> R<Vec<tenure::JobView>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = auth.jobs(
            production,
            &ListQuery {
                state: None,
                after: after.clone(),
                limit: tenure::MAX_PAGE,
            },
        )?;
        let done = page.len() < tenure::MAX_PAGE;
        after = page.last().map(|j| j.job.clone());
        out.extend(page);
        if done {
            return Ok(out);
        }
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: plain kill(2) on our own, not yet reaped child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

/// SIGSTOP a worker unless it turns out to hold the store's writer lock
/// (stopping it there would stall every other worker until it resumed): in
/// that case resume it and return false.
fn stop_outside_write(probe: &Authority, child: &Child) -> bool {
    signal(child, libc::SIGSTOP);
    let stat = format!("/proc/{}/stat", child.id());
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let state = std::fs::read_to_string(&stat).unwrap_or_default();
        if state
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('T'))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    match probe.edit() {
        Ok(edit) => {
            edit.abort();
            true
        }
        Err(_) => {
            signal(child, libc::SIGCONT);
            false
        }
    }
}

#[derive(Default)]
struct Counts {
    completed: u64,
    retried: u64,
    permanent: u64,
    rejected: u64,
    rejected_by: HashMap<String, u64>,
    lost: u64,
    released: u64,
}

impl Counts {
    fn add(&mut self, v: &Value) {
        match v["outcome"].as_str() {
            Some("completed") => self.completed += 1,
            Some("failed") if v["state"] == "failed" => self.permanent += 1,
            Some("failed") => self.retried += 1,
            Some("rejected") => {
                self.rejected += 1;
                let code = v["error"]["code"].as_str().unwrap_or("?").to_owned();
                *self.rejected_by.entry(code).or_default() += 1;
            }
            Some("lease_lost") => self.lost += 1,
            Some("released") => self.released += 1,
            _ => {}
        }
    }
}

/// Run the demo.
pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    if !(1..=5000).contains(&a.jobs)
        || !(1..=32).contains(&a.workers)
        || !(1..=8).contains(&a.slots)
    {
        return Err(usage(
            "demo: --jobs must be 1..=5000, --workers 1..=32 and --slots 1..=8",
        ));
    }
    let ttl = super::ttl(&a.ttl)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let tmp = std::env::temp_dir().join(format!("tenure-demo-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(local("creating the demo directory"))?;
    // With --db the store's facts name files in the temporary directory: keep it.
    let keep = a.keep || ctx.db.is_some();
    let passed = run_in(ctx, &a, ttl, &tmp, stamp).and_then(|r| {
        out::print(ctx.json, &r)?;
        Ok(r.ok())
    });
    if keep || !matches!(passed, Ok(true)) {
        eprintln!("demo files kept in {}", tmp.display());
    } else {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Done::exit(if passed? { exit::OK } else { exit::VIOLATIONS })
}

fn run_in(ctx: &Ctx, a: &Args, ttl: Ttl, tmp: &Path, stamp: u128) -> R<Report> {
    let json = ctx.json;
    let db = ctx.db.clone().unwrap_or_else(|| tmp.join("store.db"));
    let out_dir = tmp.join("out");
    let log_dir = tmp.join("logs");
    for d in [&out_dir, &log_dir] {
        std::fs::create_dir_all(d).map_err(local("creating the demo directory"))?;
    }
    let production = format!("demo-{stamp}");
    let auth = Authority::open(&db, &Options::new())?;
    auth.create_production(&production)?;
    // Flaky jobs back off before their retry: 250 ms, then doubling up to 2 s.
    let backoff =
        Backoff::exponential(Delay::from_micros(250_000)?, Delay::from_micros(2_000_000)?)?;
    auth.set_production_backoff(&production, Some(backoff))?;
    let n = a.jobs;
    let specs: Vec<JobSpec> = (1..=n)
        .map(|i| {
            let kind = match i % 10 {
                4 if n >= 5 => "flaky",
                8 if n >= 5 => "broken",
                _ => "ok",
            };
            JobSpec::new(
                format!("job-{i:04}"),
                format!("{kind} item {i}").into_bytes(),
            )
        })
        .collect();
    auth.submit_many(&production, &specs)?;
    // A schedule beside the run, in a production of its own: a heartbeat
    // every second, at most 3 missed slots enqueued by one step.
    let ticks = format!("{production}-ticks");
    auth.create_production(&ticks)?;
    auth.create_schedule(
        &ticks,
        &tenure::ScheduleSpec::new(
            "heartbeat",
            tenure::Cadence::every(Delay::from_micros(1_000_000)?)?,
            b"tick".to_vec(),
        )
        .catch_up(3),
    )?;
    let to_cancel: Vec<String> = {
        let k = if n >= 6 { 2 } else { usize::from(n >= 3) };
        specs[n - k..].iter().map(|s| s.job.clone()).collect()
    };
    let (tx, rx) = mpsc::channel();
    let demo = Demo {
        exe: std::env::current_exe().map_err(local("locating the tenure binary"))?,
        db: db.clone(),
        out_dir: out_dir.clone(),
        log_dir,
        production: production.clone(),
        ttl: a.ttl.clone(),
        slots: a.slots,
        tx,
    };
    let _dashboard = match &a.serve {
        Some(addr) => Some(Dashboard(
            std::process::Command::new(&demo.exe)
                .args(["serve", "--listen", addr])
                .env("TENURE_DB", &db)
                .stdin(std::process::Stdio::null())
                .spawn()
                .map_err(local("starting tenure serve"))?,
        )),
        None => {
            if !json {
                eprintln!(
                    "watch it live: tenure serve --db {} (then open http://127.0.0.1:8425/)",
                    db.display()
                );
            }
            None
        }
    };
    if !json {
        eprintln!(
            "tenure demo: {n} jobs, {} worker process(es) of {} slot(s), lease TTL {ttl}, store {}",
            a.workers,
            a.slots,
            db.display()
        );
    }
    let bar = if json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(n as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:40}] {pos}/{len} jobs finished  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(100));

    // A second handle with a short busy timeout, to see whether a stopped
    // worker holds the writer lock.
    let probe = Authority::open(
        &db,
        &Options::new().busy_timeout(Duration::from_millis(250)),
    )?;
    let started = Instant::now();
    let mut workers = Vec::new();
    for slot in 0..a.workers {
        workers.push(Some(demo.spawn(slot, 1)?));
    }
    let mut counts = Counts::default();
    let mut cancelled_now = 0u64;
    let mut cancel_done = false;
    let mut killed: Option<String> = None;
    let mut kill_done = false;
    let mut paused: Option<(usize, String, Instant)> = None;
    let mut pause_done = a.workers < 2;
    let mut paused_job: Option<String> = None;
    let mut timed_out = false;
    let pause_limit = ttl.as_duration() + Duration::from_secs(20);
    loop {
        while let Ok(v) = rx.try_recv() {
            counts.add(&v);
        }
        let jobs = all_jobs(&auth, &production)?;
        let finished = jobs.iter().filter(|j| j.state.is_terminal()).count();
        bar.set_position(finished as u64);
        bar.set_message(format!(
            "completed {} · retried {} · rejected {}",
            counts.completed, counts.retried, counts.rejected
        ));
        if !cancel_done {
            cancel_done = true;
            for j in &to_cancel {
                if let Ok(tenure::CancelOutcome::Cancelled) = auth.cancel(&production, j) {
                    cancelled_now += 1;
                    bar.println(format!("coordinator cancelled {j}"));
                }
            }
        }
        let held_by = |prefix: &str| {
            jobs.iter()
                .find(|j| {
                    j.state == JobState::Claimed
                        && j.holder.as_deref().is_some_and(|h| h.starts_with(prefix))
                })
                .map(|j| j.job.clone())
        };
        if !kill_done {
            if let (Some(job), Some(w)) = (held_by("worker-1."), workers[0].as_mut()) {
                let _ = w.child.kill(); // SIGKILL
                let _ = w.child.wait();
                workers[0] = None;
                bar.println(format!(
                    "SIGKILLed worker-1 while it held {job}; the lease expires in {ttl}"
                ));
                killed = Some(job);
                kill_done = true;
            } else if finished == n {
                kill_done = true;
            }
        } else if !pause_done {
            if let (Some(job), Some(w)) = (held_by("worker-2."), workers[1].as_ref()) {
                if !stop_outside_write(&probe, &w.child) {
                    // It held the writer lock: let it go on, try again later.
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                bar.println(format!(
                    "SIGSTOPped worker-2 while it held {job}; it resumes after the job is reclaimed"
                ));
                paused = Some((1, job.clone(), Instant::now()));
                paused_job = Some(job);
                pause_done = true;
            } else if finished == n {
                pause_done = true;
            }
        }
        if let Some((slot, job, at)) = &paused {
            let done = jobs.iter().any(|j| &j.job == job && j.state.is_terminal());
            if done || at.elapsed() > pause_limit {
                if let Some(w) = workers[*slot].as_ref() {
                    signal(&w.child, libc::SIGCONT);
                }
                bar.println(format!(
                    "resumed worker-2 ({job} {})",
                    if done {
                        "was finished by another worker"
                    } else {
                        "was not reclaimed in time"
                    }
                ));
                paused = None;
            }
        }
        // Replace a worker that exited (the killed one) while work remains.
        for (slot, w) in workers.iter_mut().enumerate() {
            let exited = match w {
                Some(wk) => matches!(wk.child.try_wait(), Ok(Some(_))),
                None => true,
            };
            let recent = w
                .as_ref()
                .is_some_and(|wk| wk.spawned.elapsed() < Duration::from_millis(300));
            if exited && finished < n && !recent {
                let generation = w.as_ref().map_or(2, |wk| wk.generation + 1);
                *w = Some(demo.spawn(slot, generation)?);
            }
        }
        if finished == n && paused.is_none() {
            break;
        }
        if started.elapsed() > DEADLINE {
            timed_out = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The graceful stop: SIGTERM every worker (nothing is left to run, so
    // each releases nothing and exits 0 once its slots ended their waits).
    let mut stopped = 0u64;
    let mut unclean = Vec::new();
    for (slot, w) in workers.iter_mut().enumerate() {
        let Some(w) = w else { continue };
        signal(&w.child, libc::SIGCONT);
        signal(
            &w.child,
            if timed_out {
                libc::SIGKILL
            } else {
                libc::SIGTERM
            },
        );
        match w.child.wait() {
            Ok(st) if st.success() => stopped += 1,
            // Still starting up (no handlers yet): ended by the signal itself.
            Ok(st) if st.code().is_none() && w.spawned.elapsed() < Duration::from_secs(1) => {
                stopped += 1
            }
            Ok(st) => unclean.push(format!(
                "worker-{}.{} did not stop cleanly on SIGTERM ({st})",
                slot + 1,
                w.generation
            )),
            Err(e) => unclean.push(format!("worker-{}: {e}", slot + 1)),
        }
    }
    // Let the reader threads drain the last lines.
    let drain_until = Instant::now() + Duration::from_secs(2);
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(v) => counts.add(&v),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if Instant::now() > drain_until {
                    break;
                }
            }
        }
    }
    drop(demo);
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    summarize(
        &auth,
        &production,
        &out_dir,
        a,
        Run {
            counts,
            cancelled_now,
            killed,
            paused_job,
            elapsed,
            timed_out,
            stopped,
            unclean,
            db,
        },
    )
}

/// What the run itself observed.
struct Run {
    counts: Counts,
    cancelled_now: u64,
    killed: Option<String>,
    paused_job: Option<String>,
    elapsed: Duration,
    timed_out: bool,
    /// Workers that stopped cleanly on the final SIGTERM.
    stopped: u64,
    /// Workers that did not.
    unclean: Vec<String>,
    db: PathBuf,
}

/// The demo's result: what happened to the jobs and what was verified.
struct Report {
    store: String,
    production: String,
    jobs: u64,
    workers: usize,
    completed: u64,
    failed: u64,
    cancelled: u64,
    reclaimed: u64,
    unregistered: u64,
    run: Run,
    check: CheckReport,
    /// The heartbeat schedule's one step at the end: slot jobs enqueued,
    /// slots dropped beyond its catch-up bound.
    schedule: (usize, u64),
    /// What the demo itself found wrong (besides `check`'s violations).
    problems: Vec<String>,
}

impl Report {
    fn ok(&self) -> bool {
        self.check.ok() && self.problems.is_empty()
    }

    fn seconds(&self) -> f64 {
        self.run.elapsed.as_secs_f64()
    }

    fn throughput(&self) -> f64 {
        let secs = self.seconds();
        if secs > 0.0 {
            self.completed as f64 / secs
        } else {
            0.0
        }
    }
}

impl Render for Report {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let c = &self.run.counts;
        let report = &self.check;
        let rejected_detail = if c.rejected_by.is_empty() {
            String::new()
        } else {
            let mut v: Vec<_> = c
                .rejected_by
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            v.sort();
            format!("({})", v.join(", "))
        };
        let row = |a: &str, b: String, c: String| vec![a.to_owned(), b, c];
        let rows = vec![
            row("completed", self.completed.to_string(), String::new()),
            row(
                "failed",
                self.failed.to_string(),
                "(exit 100: permanent)".into(),
            ),
            row(
                "cancelled",
                self.cancelled.to_string(),
                "(by the coordinator while running)".into(),
            ),
            row(
                "retried after failure",
                c.retried.to_string(),
                "(flaky jobs, exit 1 on attempt 1: retryable)".into(),
            ),
            row(
                "reclaimed after expiry",
                self.reclaimed.to_string(),
                match &self.run.killed {
                    Some(j) => format!("(worker-1 SIGKILLed holding {j})"),
                    None => String::new(),
                },
            ),
            row(
                "stale completions rejected",
                c.rejected.to_string(),
                rejected_detail,
            ),
            row(
                "leases lost while running",
                c.lost.to_string(),
                "(renewal refused; command killed)".into(),
            ),
            row(
                "graceful stop",
                format!("{} worker(s)", self.run.stopped),
                format!(
                    "(SIGTERM: no new jobs, grace, {} lease(s) released)",
                    c.released
                ),
            ),
            row(
                "schedule heartbeat",
                format!("{} slot job(s)", self.schedule.0),
                format!(
                    "(every 1s, one step at the end: catch-up bound 3, {} slot(s) dropped)",
                    self.schedule.1
                ),
            ),
            row(
                "unregistered output files",
                self.unregistered.to_string(),
                "(left by crashed workers; never in facts)".into(),
            ),
            row(
                "throughput",
                format!("{:.1} jobs/s", self.throughput()),
                format!("({:.1} s)", self.seconds()),
            ),
            row(
                "tenure check",
                if report.ok() { "passed" } else { "FAILED" }.into(),
                format!(
                    "({} violation(s), {} jobs, {} events, schema {})",
                    report.violations.len(),
                    report.jobs,
                    report.events,
                    report.schema_version
                ),
            ),
        ];
        out::table(o, &["RESULT", "COUNT", ""], &rows)?;
        for v in report.violations.iter().chain(&self.problems) {
            writeln!(o, "  violation: {v}")?;
        }
        writeln!(
            o,
            "{}",
            if self.ok() {
                "demo passed: every job finished exactly once, 0 invariant violations"
            } else {
                "demo FAILED"
            }
        )
    }

    fn json(&self) -> Value {
        let c = &self.run.counts;
        json!({
            "ok": self.ok(),
            "store": self.store,
            "production": self.production,
            "jobs": self.jobs,
            "workers": self.workers,
            "completed": self.completed,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "cancelled_by_coordinator": self.run.cancelled_now,
            "retried_after_failure": c.retried,
            "reclaimed_after_expiry": self.reclaimed,
            "stale_completions_rejected": c.rejected,
            "rejected_by_code": c.rejected_by,
            "leases_lost": c.lost,
            "released_at_stop": c.released,
            "workers_stopped": self.run.stopped,
            "unregistered_files": self.unregistered,
            "killed_job": self.run.killed,
            "schedule_enqueued": self.schedule.0,
            "schedule_dropped": self.schedule.1,
            "paused_job": self.run.paused_job,
            "elapsed_s": self.seconds(),
            "throughput_per_s": self.throughput(),
            "check": out::check(&self.check),
            "violations": self.check.violations.len() + self.problems.len(),
            "problems": self.problems,
        })
    }
}

/// Count what happened from the store, verify the outputs, run `check`.
fn summarize(auth: &Authority, production: &str, out_dir: &Path, a: &Args, run: Run) -> R<Report> {
    let jobs = all_jobs(auth, production)?;
    let by = |st: JobState| jobs.iter().filter(|j| j.state == st).count() as u64;
    let (completed, failed, cancelled) = (
        by(JobState::Completed),
        by(JobState::Failed),
        by(JobState::Cancelled),
    );
    let reclaimed = reclaims(auth, production)?;
    // Every registered output exists with its registered digest.
    let facts = auth.production_facts(production)?;
    let mut problems = Vec::new();
    let mut registered = HashSet::new();
    let mut per_job: HashMap<&str, HashMap<&str, &str>> = HashMap::new();
    for f in &facts {
        per_job
            .entry(f.job.as_str())
            .or_default()
            .insert(f.key.as_str(), f.value.as_str());
    }
    for j in jobs.iter().filter(|j| j.state == JobState::Completed) {
        let f = per_job.get(j.job.as_str());
        let (Some(path), Some(sha)) = (
            f.and_then(|f| f.get("tenure.exec.output")),
            f.and_then(|f| f.get("tenure.exec.sha256")),
        ) else {
            problems.push(format!("{}: completed without executor provenance", j.job));
            continue;
        };
        registered.insert(PathBuf::from(path));
        match std::fs::read(path) {
            Ok(bytes) if hex(&Sha256::digest(&bytes)) == *sha => {}
            Ok(_) => problems.push(format!("{}: {path} does not match its SHA-256", j.job)),
            Err(e) => problems.push(format!("{}: {path}: {e}", j.job)),
        }
    }
    let unregistered = std::fs::read_dir(out_dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| !registered.contains(&e.path()))
                .count() as u64
        })
        .unwrap_or(0);
    let n = a.jobs as u64;
    if completed + failed + cancelled != n {
        problems.push(format!(
            "{} of {n} jobs did not finish",
            n - completed - failed - cancelled
        ));
    }
    if run.timed_out {
        problems.push(format!("gave up after {DEADLINE:?}"));
    }
    problems.extend(run.unclean.iter().cloned());
    Ok(Report {
        store: run.db.display().to_string(),
        production: production.to_owned(),
        jobs: n,
        workers: a.workers,
        completed,
        failed,
        cancelled,
        reclaimed,
        unregistered,
        schedule: {
            let step = auth.run_schedules()?;
            (step.enqueued.len(), step.dropped)
        },
        check: auth.check()?,
        run,
        problems,
    })
}

/// Reclaims: claims made while the job's previous claim had not ended.
fn reclaims(auth: &Authority, production: &str) -> R<u64> {
    let mut live: HashMap<String, bool> = HashMap::new();
    let mut reclaimed = 0u64;
    let mut after = 0;
    loop {
        let evs = auth.production_events(production, after, tenure::MAX_PAGE)?;
        for e in &evs {
            after = e.seq;
            let Some(job) = &e.job else { continue };
            let l = live.entry(job.clone()).or_default();
            match e.kind {
                EventKind::Claimed => {
                    if *l {
                        reclaimed += 1;
                    }
                    *l = true;
                }
                EventKind::Renewed => {}
                _ => *l = false,
            }
        }
        if evs.len() < tenure::MAX_PAGE {
            return Ok(reclaimed);
        }
    }
}
