//! Reliability campaigns for tenure, driven by `cargo xtask torture [--quick]`.
//!
//! Every campaign prints what it tried and what it found, and exits non-zero
//! on any violation. Workers are real OS processes (this binary re-executed
//! with a `*-worker` subcommand); the store is a real SQLite file. The Rust
//! workers run several threads on one authority handle (`--threads`, 4 by
//! default) with group commit on, so their calls share commit groups: a
//! kill lands between and inside groups.
//!
//! ```text
//! tenure-torture crash --iterations N --dir DIR [--cli PATH] [--threads T] [--prune 1]
//! tenure-torture storm --procs P --millis MS --dir DIR [--threads T] [--worker-cmd 'CMD ...']...
//! tenure-torture clock --dir DIR [--faketime PATH]
//! tenure-torture fuzz --cases N
//! ```

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tenure::{
    Age, Authority, ErrorCode, EventKind, Fact, JobSpec, JobState, ListQuery, Options, Retention,
    Ttl, MAX_PAGE,
};

mod fuzz;
mod secrets;

type Args = HashMap<String, Vec<String>>;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first().cloned() else {
        eprintln!("usage: tenure-torture <crash|storm|clock|fuzz> [--key value ...]");
        std::process::exit(2);
    };
    let mut args = Args::new();
    let mut i = 1;
    while i < argv.len() {
        let k = argv[i].trim_start_matches("--").to_owned();
        let v = argv.get(i + 1).cloned().unwrap_or_default();
        args.entry(k).or_default().push(v);
        i += 2;
    }
    let result = match cmd.as_str() {
        "crash" => crash(&args),
        "crash-worker" => crash_worker(&args),
        "storm" => storm(&args),
        "storm-worker" => storm_worker(&args),
        "clock" => clock(&args),
        "clock-op" => clock_op(&args),
        "fuzz" => fuzz::run(arg(&args, "cases", 2000)),
        other => Err(format!("unknown campaign {other}")),
    };
    if let Err(e) = result {
        eprintln!("VIOLATION: {e}");
        std::process::exit(1);
    }
}

fn arg<T: std::str::FromStr>(a: &Args, k: &str, default: T) -> T {
    a.get(k)
        .and_then(|v| v.last())
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn path_arg(a: &Args, k: &str) -> Result<PathBuf, String> {
    a.get(k)
        .and_then(|v| v.last())
        .map(PathBuf::from)
        .ok_or_else(|| format!("--{k} is required"))
}

/// xorshift64*: deterministic, dependency-free randomness for campaigns.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn ttl_ms(ms: u64) -> Ttl {
    Ttl::from_micros(ms as i64 * 1000).expect("campaign TTLs are valid")
}

fn open(db: &Path) -> Result<Authority, String> {
    open_with(db, None)
}

/// The crash campaign's retention policy with `--prune 1`: terminal jobs
/// go after 1 s, their tombstones after 2 s, events after 3 s (longer than
/// one iteration, so an iteration's acknowledged events are still there
/// when it is verified; older iterations' are pruned under it).
fn crash_retention() -> Retention {
    let s = |n| Some(Age::from_secs(n).expect("campaign ages are valid"));
    Retention {
        event_age: s(3),
        terminal_job_age: s(1),
        tombstone_age: s(2),
    }
}

fn open_with(db: &Path, retention: Option<Retention>) -> Result<Authority, String> {
    let mut o = Options::new()
        .busy_timeout(Duration::from_secs(30))
        .group_commit(true);
    if let Some(r) = retention {
        o = o.retention(r);
    }
    Authority::open(db, &o)
        .map_err(|e| format!("store {} does not open cleanly: {e}", db.display()))
}

fn kill(child: &mut Child) {
    // SIGKILL: no destructor, no flush, no unwinding.
    let _ = child.kill();
    let _ = child.wait();
}

fn check_store(a: &Authority, what: &str) -> Result<u64, String> {
    let r = a
        .check()
        .map_err(|e| format!("{what}: check failed to run: {e}"))?;
    if !r.ok() {
        return Err(format!("{what}: check found {:?}", r.violations));
    }
    Ok(r.events)
}

fn run_cli_check(cli: Option<&PathBuf>, db: &Path) -> Result<(), String> {
    let Some(cli) = cli else { return Ok(()) };
    let out = Command::new(cli)
        .args(["check", "--db"])
        .arg(db)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cli.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`tenure check` failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn seed_jobs(a: &Authority, production: &str, from: usize, n: usize) -> Result<(), String> {
    let specs: Vec<JobSpec> = (from..from + n)
        .map(|i| {
            JobSpec::new(format!("job-{i:06}"), format!("payload {i}").into_bytes())
                .max_attempts(1000)
        })
        .collect();
    a.submit_many(production, &specs)
        .map(|_| ())
        .map_err(|e| format!("seeding: {e}"))
}

// ---------------------------------------------------------------- crash ----

/// Kill workers with SIGKILL at random points, or let the fault hook abort
/// them between statements of a transition; after each death the store must
/// open cleanly, pass the checker, and contain every acknowledged transition.
fn crash(a: &Args) -> Result<(), String> {
    let iterations: u64 = arg(a, "iterations", 50);
    let dir = path_arg(a, "dir")?;
    let cli = a.get("cli").and_then(|v| v.last()).map(PathBuf::from);
    let threads: u64 = arg(a, "threads", 4);
    let prune: u64 = arg(a, "prune", 0);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut rng = Rng::new(arg(a, "seed", 0x7e11_u64));
    let (mut killed, mut aborted, mut acked, mut checked_events) = (0u64, 0u64, 0usize, 0u64);
    let mut db = PathBuf::new();
    let mut seeded = 0;
    let secrets_file = dir.join("crash-secrets.txt");
    for it in 0..iterations {
        if it % 100 == 0 {
            db = dir.join(format!("crash-{it}.db"));
            let s = open(&db)?;
            s.create_production("crash").map_err(|e| e.to_string())?;
            seed_jobs(&s, "crash", 0, 200)?;
            seeded = 200;
        }
        let auth = open(&db)?;
        let open_jobs = auth
            .jobs(
                "crash",
                &ListQuery {
                    state: Some(JobState::Requested),
                    after: None,
                    limit: 100,
                },
            )
            .map_err(|e| e.to_string())?
            .len();
        if open_jobs < 50 {
            seed_jobs(&auth, "crash", seeded, 100)?;
            seeded += 100;
        }
        let before_seq = last_seq_of(&auth)?;
        let log = dir.join(format!("crash-{it}.log"));
        let mut cmd = Command::new(&exe);
        cmd.args(["crash-worker", "--db"])
            .arg(&db)
            .arg("--log")
            .arg(&log)
            .arg("--secrets")
            .arg(&secrets_file)
            .args(["--seed", &rng.next().to_string()])
            .args(["--threads", &threads.to_string()])
            .args(["--prune", &prune.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let abort_mode = rng.below(3) == 0;
        if abort_mode {
            cmd.env("TENURE_FAULT_ABORT_AFTER", (1 + rng.below(60)).to_string());
        }
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        if abort_mode {
            // The hook aborts it mid-transition; bound the wait anyway.
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                    aborted += 1;
                    break;
                }
                if Instant::now() > deadline {
                    kill(&mut child);
                    killed += 1;
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        } else {
            std::thread::sleep(Duration::from_micros(1_000 + rng.below(60_000)));
            kill(&mut child);
            killed += 1;
        }
        drop(auth);
        // After the death: opens cleanly, checker passes, nothing acknowledged is lost.
        let auth = open(&db)?;
        checked_events = check_store(&auth, &format!("iteration {it}"))?;
        run_cli_check(cli.as_ref(), &db)?;
        let mut seen: HashSet<(String, String, String)> = HashSet::new();
        let mut after = before_seq;
        loop {
            let page = auth.events(after, MAX_PAGE).map_err(|e| e.to_string())?;
            if page.is_empty() {
                break;
            }
            after = page.last().map(|e| e.seq).unwrap_or(after);
            for e in page {
                seen.insert((
                    e.kind.as_str().to_owned(),
                    e.job.unwrap_or_default(),
                    e.claim_id.map(|c| c.to_string()).unwrap_or_default(),
                ));
            }
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        for line in text.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            let ["ACK", kind, job, claim] = parts.as_slice() else {
                continue;
            };
            acked += 1;
            if !seen.contains(&(kind.to_string(), job.to_string(), claim.to_string())) {
                return Err(format!(
                    "iteration {it}: acknowledged {kind} of {job} by claim {claim} is not in the store"
                ));
            }
        }
        let _ = std::fs::remove_file(&log);
        if prune != 0 {
            // Let history age past the policy across iterations.
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let found = secrets::scan_store_and_text(&dir, &secrets_file, &[])?;
    let pruning = if prune != 0 {
        let r = crash_retention();
        let horizon = open(&db)?.history_horizon().map_err(|e| e.to_string())?;
        if horizon == 0 && iterations >= 25 {
            return Err("crash --prune: nothing was ever pruned".into());
        }
        format!(
            ", pruning on (automatic and explicit steps; terminal jobs {:?}, tombstones {:?}, events {:?}; history horizon of the last store {horizon})",
            r.terminal_job_age, r.tombstone_age, r.event_age
        )
    } else {
        String::new()
    };
    println!(
        "crash: {iterations} iterations of a worker with {threads} threads, group commit on{pruning} ({killed} SIGKILLed at random points, {aborted} aborted between statements by the fault hook); \
         {acked} acknowledged transitions all found; store opened cleanly and `check` passed after every death ({checked_events} events in the last store); \
         secrets scanned: {found}"
    );
    Ok(())
}

fn last_seq_of(a: &Authority) -> Result<u64, String> {
    let mut after = a.history_horizon().map_err(|e| e.to_string())?;
    loop {
        let page = a.events(after, MAX_PAGE).map_err(|e| e.to_string())?;
        match page.last() {
            Some(e) => after = e.seq,
            None => return Ok(after),
        }
    }
}

fn ack(log: &mut std::fs::File, kind: EventKind, job: &str, claim: tenure::Uuid) {
    // One write per line to an O_APPEND file: in the page cache once write()
    // returns, so a SIGKILL right after cannot lose it.
    let _ = log.write_all(format!("ACK {} {job} {claim}\n", kind.as_str()).as_bytes());
}

fn crash_worker(a: &Args) -> Result<(), String> {
    let db = path_arg(a, "db")?;
    let log = path_arg(a, "log")?;
    let secrets = path_arg(a, "secrets")?;
    let seed: u64 = arg(a, "seed", 1);
    let threads: u64 = arg(a, "threads", 4);
    let prune = (arg(a, "prune", 0u64) != 0).then(crash_retention);
    let auth = open_with(&db, prune)?;
    // Every thread loops until the process is killed or aborted; their
    // one-step calls share commit groups.
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads.max(1))
            .map(|t| {
                let (auth, log, secrets) = (&auth, &log, &secrets);
                sc.spawn(move || {
                    crash_thread(auth, log, secrets, seed.wrapping_add(t * 7919), prune)
                })
            })
            .collect();
        for h in hs {
            match h.join() {
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err("a crash worker thread panicked".into()),
                Ok(Ok(())) => {}
            }
        }
        Ok(())
    })
}

/// One thread of a crash worker: random transitions, each acknowledged in
/// the log only after the call returned (its commit is durable).
fn crash_thread(
    auth: &Authority,
    log: &Path,
    secrets: &Path,
    seed: u64,
    prune: Option<Retention>,
) -> Result<(), String> {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| e.to_string())?;
    let mut secrets = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(secrets)
        .map_err(|e| e.to_string())?;
    let mut rng = Rng::new(seed);
    let holder = format!("crash-worker-{}", std::process::id());
    loop {
        let ttl = ttl_ms(100 + rng.below(2_000));
        match rng.below(10) {
            0..=6 => {
                let lease = match auth.claim_next("crash", &holder, ttl) {
                    Ok(l) => l,
                    Err(_) => continue,
                };
                if let Ok(t) = lease.export_token() {
                    let _ = secrets.write_all(format!("{}\n", t.expose()).as_bytes());
                }
                ack(&mut log, EventKind::Claimed, lease.job(), lease.claim_id());
                if rng.below(2) == 0 && lease.renew(ttl_ms(3_000)).is_ok() {
                    ack(&mut log, EventKind::Renewed, lease.job(), lease.claim_id());
                }
                std::thread::sleep(Duration::from_micros(rng.below(3_000)));
                let (kind, r) = match rng.below(6) {
                    0 => (EventKind::Released, lease.release().map(|_| ())),
                    1 => (
                        EventKind::Failed,
                        lease.fail("crash campaign", false).map(|_| ()),
                    ),
                    2 => continue, // abandon: expiry recovers it
                    _ => (
                        EventKind::Completed,
                        lease.complete(&[Fact::new("worker", holder.clone())]),
                    ),
                };
                if r.is_ok() {
                    ack(&mut log, kind, lease.job(), lease.claim_id());
                }
            }
            7 | 8 => {
                // Claim and complete atomically in one edit.
                let Ok(mut e) = auth.edit() else { continue };
                let Ok(lease) = e.claim_next("crash", &holder, ttl) else {
                    continue;
                };
                if e.complete(&lease, &[]).is_err() {
                    continue;
                }
                if e.commit().is_ok() {
                    ack(&mut log, EventKind::Claimed, lease.job(), lease.claim_id());
                    ack(
                        &mut log,
                        EventKind::Completed,
                        lease.job(),
                        lease.claim_id(),
                    );
                }
            }
            _ if prune.is_some() && rng.below(2) == 0 => {
                // An explicit prune step among the transitions (automatic
                // ones also run inside this handle's write traffic).
                if let Some(p) = &prune {
                    let _ = auth.prune(p);
                }
            }
            _ => {
                let j = format!("extra-{}-{}", std::process::id(), rng.below(1_000_000));
                if auth
                    .submit("crash", &JobSpec::new(j.clone(), vec![1, 2, 3]))
                    .is_ok()
                {
                    let _ = log.write_all(format!("SUBMITTED {j}\n").as_bytes());
                }
            }
        }
    }
}

// ---------------------------------------------------------------- storm ----

/// Many processes claiming, renewing and completing with short TTLs for a
/// fixed time, while a coordinator cancels jobs; then a drain. Every job must
/// end completed exactly once, or failed/cancelled, with no two live leases
/// ever overlapping.
fn storm(a: &Args) -> Result<(), String> {
    let procs: usize = arg(a, "procs", 20);
    let threads: usize = arg(a, "threads", 4);
    let millis: u64 = arg(a, "millis", 3_000);
    let jobs: usize = arg(a, "jobs", 2_000);
    let dir = path_arg(a, "dir")?;
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let db = dir.join("storm.db");
    let _ = std::fs::remove_file(&db);
    let auth = open(&db)?;
    auth.create_production("storm").map_err(|e| e.to_string())?;
    seed_jobs(&auth, "storm", 0, jobs)?;
    let extra: Vec<String> = a.get("worker-cmd").cloned().unwrap_or_default();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let secrets_file = dir.join("storm-secrets.txt");
    let _ = std::fs::remove_file(&secrets_file);
    let mut children = Vec::new();
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for i in 0..procs {
        // Round-robin over the Rust worker and any extra worker commands
        // (C, Python): each gets TENURE_DB, TENURE_PRODUCTION, TENURE_MILLIS.
        let slot = i % (1 + extra.len());
        let mut cmd = if slot == 0 {
            let mut c = Command::new(&exe);
            c.args(["storm-worker", "--db"])
                .arg(&db)
                .args(["--millis", &millis.to_string(), "--seed", &i.to_string()])
                .args(["--threads", &threads.to_string()])
                .arg("--secrets")
                .arg(&secrets_file);
            *kinds.entry("rust".into()).or_default() += 1;
            c
        } else {
            let words: Vec<&str> = extra[slot - 1].split_whitespace().collect();
            let mut c = Command::new(words[0]);
            c.args(&words[1..]);
            *kinds
                .entry(words[0].rsplit('/').next().unwrap_or(words[0]).to_owned())
                .or_default() += 1;
            c
        };
        cmd.env("TENURE_DB", &db)
            .env("TENURE_PRODUCTION", "storm")
            .env("TENURE_MILLIS", millis.to_string())
            .env("TENURE_SECRETS_FILE", &secrets_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        children.push(cmd.spawn().map_err(|e| format!("spawn worker: {e}"))?);
    }
    // Coordinator: cancel a few jobs while the storm runs; sample argv of
    // every child for the secret scan.
    let mut cmdlines = Vec::new();
    let mut cancelled = 0;
    let end = Instant::now() + Duration::from_millis(millis);
    let mut rng = Rng::new(99);
    while Instant::now() < end {
        let j = format!("job-{:06}", rng.below(jobs as u64));
        if let Ok(tenure::CancelOutcome::Cancelled) = auth.cancel("storm", &j) {
            cancelled += 1;
        }
        for c in &children {
            if let Ok(b) = std::fs::read(format!("/proc/{}/cmdline", c.id())) {
                cmdlines.push(String::from_utf8_lossy(&b).replace('\0', " "));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut outputs = String::new();
    let mut stale_rejected = 0u64;
    let mut completions = 0u64;
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        outputs.push_str(&text);
        outputs.push_str(&String::from_utf8_lossy(&out.stderr));
        if !out.status.success() {
            return Err(format!(
                "storm worker {i} failed: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for line in text.lines() {
            if let Some(r) = line.strip_prefix("STORM ") {
                let mut it = r.split_whitespace().map(|x| x.parse::<u64>().unwrap_or(0));
                completions += it.next().unwrap_or(0);
                stale_rejected += it.next().unwrap_or(0);
            }
        }
    }
    // Drain what is left, then every job must be terminal.
    let mut drained = 0;
    loop {
        match auth.claim_next("storm", "drainer", ttl_ms(60_000)) {
            Ok(l) => {
                l.complete(&[]).map_err(|e| format!("drain: {e}"))?;
                drained += 1;
            }
            Err(e) if e.code() == ErrorCode::NoJobAvailable => break,
            Err(e) => return Err(format!("drain: {e}")),
        }
    }
    let mut states: HashMap<JobState, usize> = HashMap::new();
    let mut after = None;
    loop {
        let page = auth
            .jobs(
                "storm",
                &ListQuery {
                    state: None,
                    after: after.clone(),
                    limit: MAX_PAGE,
                },
            )
            .map_err(|e| e.to_string())?;
        if page.is_empty() {
            break;
        }
        after = page.last().map(|v| v.job.clone());
        for v in page {
            *states.entry(v.state).or_default() += 1;
        }
    }
    for (st, n) in &states {
        if !st.is_terminal() && *n > 0 {
            // Only leases still live (held past the storm by nobody) could remain;
            // the drainer claims expired ones, so a live one means a bug.
            return Err(format!("{n} jobs left {st} after the drain"));
        }
    }
    let events = check_store(&auth, "storm")?;
    let mut completed_events: HashMap<String, u32> = HashMap::new();
    let mut after = 0;
    loop {
        let page = auth.events(after, MAX_PAGE).map_err(|e| e.to_string())?;
        if page.is_empty() {
            break;
        }
        after = page.last().map(|e| e.seq).unwrap_or(after);
        for e in page.into_iter().filter(|e| e.kind == EventKind::Completed) {
            *completed_events
                .entry(e.job.unwrap_or_default())
                .or_default() += 1;
        }
    }
    if let Some((j, n)) = completed_events.iter().find(|(_, n)| **n > 1) {
        return Err(format!("job {j} completed {n} times"));
    }
    let total_completed = states.get(&JobState::Completed).copied().unwrap_or(0);
    if total_completed != completed_events.len() {
        return Err("completed rows and completion events disagree".into());
    }
    let found = secrets::scan_store_and_text(&dir, &secrets_file, &[outputs, cmdlines.join("\n")])?;
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort();
    println!(
        "storm: {procs} processes {kinds:?} (Rust workers: {threads} threads each, group commit on) for {millis} ms on {jobs} jobs: {completions} completions by workers + {drained} by the drain, \
         {stale_rejected} stale/expired transitions rejected, {cancelled} cancelled by the coordinator; final states {states:?}; \
         no job completed twice, no overlapping leases in {events} events; secrets scanned: {found}"
    );
    Ok(())
}

fn storm_worker(a: &Args) -> Result<(), String> {
    let db = path_arg(a, "db")?;
    let millis: u64 = arg(a, "millis", 3_000);
    let seed: u64 = arg(a, "seed", 1) + 1000;
    let threads: u64 = arg(a, "threads", 4);
    let secrets = path_arg(a, "secrets")?;
    let auth = open(&db)?;
    let end = Instant::now() + Duration::from_millis(millis);
    // The threads share the handle, so their claims, renewals and
    // completions share commit groups.
    let results: Vec<Result<(u64, u64), String>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads.max(1))
            .map(|t| {
                let (auth, secrets) = (&auth, &secrets);
                sc.spawn(move || storm_thread(auth, secrets, seed.wrapping_add(t * 104_729), end))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a storm worker thread panicked".into()))
            })
            .collect()
    });
    let (mut done, mut rejected) = (0u64, 0u64);
    for r in results {
        let (d, x) = r?;
        done += d;
        rejected += x;
    }
    println!("STORM {done} {rejected}");
    Ok(())
}

fn storm_thread(
    auth: &Authority,
    secrets: &Path,
    seed: u64,
    end: Instant,
) -> Result<(u64, u64), String> {
    let mut rng = Rng::new(seed);
    let mut secrets = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(secrets)
        .map_err(|e| e.to_string())?;
    let holder = format!("storm-rust-{}", std::process::id());
    let (mut done, mut rejected) = (0u64, 0u64);
    while Instant::now() < end {
        let lease = match auth.claim_next("storm", &holder, ttl_ms(200 + rng.below(600))) {
            Ok(l) => l,
            Err(e) if matches!(e.code(), ErrorCode::NoJobAvailable | ErrorCode::Busy) => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(e) => return Err(format!("claim_next: {e}")),
        };
        if let Ok(t) = lease.export_token() {
            let _ = secrets.write_all(format!("{}\n", t.expose()).as_bytes());
        }
        // Sometimes work too long: the lease expires and the late
        // transitions must be rejected.
        let work = if rng.below(20) == 0 {
            900
        } else {
            rng.below(20)
        };
        std::thread::sleep(Duration::from_millis(work));
        let r = lease
            .renew(ttl_ms(1_000))
            .and_then(|_| lease.complete(&[Fact::new("by", holder.clone())]));
        match r {
            Ok(()) => done += 1,
            Err(e)
                if matches!(
                    e.code(),
                    ErrorCode::StaleLease
                        | ErrorCode::LeaseExpired
                        | ErrorCode::Cancelled
                        | ErrorCode::Busy
                ) =>
            {
                rejected += 1
            }
            Err(e) => return Err(format!("complete: {e}")),
        }
    }
    Ok((done, rejected))
}

// ---------------------------------------------------------------- clock ----

/// One guarded operation in a fresh process, for the clock campaign (run
/// under libfaketime). Prints `OK` or the error code name.
fn clock_op(a: &Args) -> Result<(), String> {
    let db = path_arg(a, "db")?;
    let op: String = arg(a, "op", String::new());
    let job: String = arg(a, "job", "j1".to_owned());
    let token_file = a.get("token").and_then(|v| v.last()).map(PathBuf::from);
    let ttl = ttl_ms(arg(a, "ttl-ms", 600_000));
    let auth = match Authority::open(&db, &Options::new()) {
        Ok(a) => a,
        Err(e) => {
            println!("{}", e.code().name());
            return Ok(());
        }
    };
    let lease = || -> tenure::Result<tenure::Lease> {
        let t = std::fs::read_to_string(token_file.as_ref().expect("--token")).unwrap_or_default();
        auth.import_lease(&t)
    };
    let r: tenure::Result<String> = match op.as_str() {
        "claim" => auth.claim("c", &job, "clock", ttl).map(|l| {
            if let Some(f) = &token_file {
                std::fs::write(f, l.export_token().unwrap().expose()).unwrap();
            }
            "OK".into()
        }),
        "claim-next" => auth
            .claim_next("c", "clock", ttl)
            .map(|l| format!("OK {}", l.job())),
        "renew" => lease().and_then(|l| l.renew(ttl)).map(|_| "OK".into()),
        "complete" => lease().and_then(|l| l.complete(&[])).map(|_| "OK".into()),
        "release" => lease().and_then(|l| l.release()).map(|_| "OK".into()),
        "state" => auth.job("c", &job).map(|v| v.state.as_str().to_owned()),
        "blocked" => auth.clock().map(|c| c.blocked.to_string()),
        other => return Err(format!("unknown op {other}")),
    };
    match r {
        Ok(s) => println!("{s}"),
        Err(e) => println!("{}", e.code().name()),
    }
    Ok(())
}

/// Backward and forward jumps with libfaketime on real processes, and a
/// renewal stalled between its two clock samples.
fn clock(a: &Args) -> Result<(), String> {
    let dir = path_arg(a, "dir")?;
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let faketime: String = arg(a, "faketime", "faketime".to_owned());
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut tried = 0;
    let run = |offset: Option<&str>,
               env: &[(&str, &str)],
               db: &Path,
               op: &str,
               extra: &[&str]|
     -> Result<String, String> {
        let mut cmd = match offset {
            Some(off) => {
                let mut c = Command::new(&faketime);
                c.args(["-f", off]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.args(["clock-op", "--db"])
            .arg(db)
            .args(["--op", op])
            .args(extra);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().map_err(|e| format!("run {op}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{op} process failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let expect = |got: String, want: &str, what: &str| -> Result<(), String> {
        if got.starts_with(want) {
            Ok(())
        } else {
            Err(format!("{what}: expected {want}, got {got}"))
        }
    };
    let fresh = |name: &str| -> Result<PathBuf, String> {
        let db = dir.join(name);
        let _ = std::fs::remove_file(&db);
        let a = open(&db)?;
        a.create_production("c").map_err(|e| e.to_string())?;
        for j in ["j1", "j2", "j3"] {
            a.submit("c", &JobSpec::new(j, vec![]))
                .map_err(|e| e.to_string())?;
        }
        Ok(db)
    };

    // Backward: a process whose clock is an hour behind the mark is refused
    // for every guarded operation, also after reopening in another process.
    let db = fresh("clock-back.db")?;
    let tok = dir.join("clock-back.token");
    let tok_s = tok.to_string_lossy().into_owned();
    expect(
        run(None, &[], &db, "claim", &["--job", "j1", "--token", &tok_s])?,
        "OK",
        "real-time claim",
    )?;
    for op in ["claim", "claim-next"] {
        expect(
            run(Some("-1h"), &[], &db, op, &["--job", "j2"])?,
            "clock_rollback",
            &format!("{op} 1 h behind"),
        )?;
        tried += 1;
    }
    for op in ["renew", "complete", "release"] {
        expect(
            run(Some("-1h"), &[], &db, op, &["--token", &tok_s])?,
            "clock_rollback",
            &format!("{op} 1 h behind"),
        )?;
        tried += 1;
    }
    expect(
        run(Some("-1h"), &[], &db, "blocked", &[])?,
        "true",
        "clock status 1 h behind",
    )?;
    // Real time still works, and the lease is intact.
    expect(
        run(None, &[], &db, "renew", &["--token", &tok_s])?,
        "OK",
        "real-time renew after the rejected ones",
    )?;
    // Until real time passes the mark: 3 s behind, retried until it works.
    let start = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let got = run(Some("-3s"), &[], &db, "renew", &["--token", &tok_s])?;
        if got == "OK" {
            break;
        }
        expect(got, "clock_rollback", "renew 3 s behind")?;
        if start.elapsed() > Duration::from_secs(20) {
            return Err("a clock 3 s behind never caught up".into());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    if start.elapsed() < Duration::from_secs(2) {
        return Err(format!(
            "a clock 3 s behind was accepted after only {:?}",
            start.elapsed()
        ));
    }
    tried += attempts;

    // Forward: an hour ahead, the 10-minute lease is expired at once and the
    // job is claimable; the mark moves forward with it.
    let db = fresh("clock-fwd.db")?;
    let tok = dir.join("clock-fwd.token");
    let tok_s = tok.to_string_lossy().into_owned();
    expect(
        run(None, &[], &db, "claim", &["--job", "j1", "--token", &tok_s])?,
        "OK",
        "real-time claim",
    )?;
    expect(
        run(Some("+1h"), &[], &db, "state", &["--job", "j1"])?,
        "expired",
        "state 1 h ahead",
    )?;
    expect(
        run(Some("+1h"), &[], &db, "claim", &["--job", "j1"])?,
        "OK",
        "claim 1 h ahead",
    )?;
    // Back at real time the old holder is fenced (its job was reclaimed), and
    // every guarded operation waits for real time to reach the new mark.
    expect(
        run(None, &[], &db, "complete", &["--token", &tok_s])?,
        "stale_lease",
        "old holder after a forward jump",
    )?;
    expect(
        run(None, &[], &db, "claim", &["--job", "j2"])?,
        "clock_rollback",
        "real-time claim after a forward jump",
    )?;
    tried += 5;

    // A renewal sampled before expiry but committing after it is rejected.
    let db = fresh("clock-stall.db")?;
    let tok = dir.join("clock-stall.token");
    let tok_s = tok.to_string_lossy().into_owned();
    expect(
        run(
            None,
            &[],
            &db,
            "claim",
            &["--job", "j1", "--token", &tok_s, "--ttl-ms", "1000"],
        )?,
        "OK",
        "claim 1 s",
    )?;
    expect(
        run(
            None,
            &[("TENURE_FAULT_STALL_PRECOMMIT_MS", "1500")],
            &db,
            "renew",
            &["--token", &tok_s, "--ttl-ms", "60000"],
        )?,
        "lease_expired",
        "renewal stalled past its expiry",
    )?;
    expect(
        run(None, &[], &db, "state", &["--job", "j1"])?,
        "expired",
        "state after the stalled renewal",
    )?;
    tried += 2;

    // The CLI, as a shell worker would run it: refused an hour behind.
    let mut cli_runs = 0;
    if let Some(cli) = a.get("cli").and_then(|v| v.last()) {
        let db = fresh("clock-cli.db")?;
        let tok = dir.join("clock-cli.token");
        let _ = std::fs::remove_file(&tok);
        let cli_run = |offset: Option<&str>, args: &[&str]| -> Result<i32, String> {
            let mut cmd = match offset {
                Some(off) => {
                    let mut c = Command::new(&faketime);
                    c.args(["-f", off]).arg(cli);
                    c
                }
                None => Command::new(cli),
            };
            let out = cmd
                .args(args)
                .arg("--db")
                .arg(&db)
                .output()
                .map_err(|e| format!("run {cli}: {e}"))?;
            Ok(out.status.code().unwrap_or(-1))
        };
        let tok_s = tok.to_string_lossy().into_owned();
        let rollback_exit = 10 + ErrorCode::ClockRollback as i32;
        let checks: [(Option<&str>, Vec<&str>, i32, &str); 4] = [
            (
                None,
                vec![
                    "claim",
                    "-p",
                    "c",
                    "--job",
                    "j1",
                    "--holder",
                    "cli",
                    "--ttl",
                    "10m",
                    "--token-out",
                    &tok_s,
                ],
                0,
                "real-time CLI claim",
            ),
            (
                Some("-1h"),
                vec!["renew", "--token-file", &tok_s, "--ttl", "20m"],
                rollback_exit,
                "CLI renew 1 h behind",
            ),
            (
                Some("-1h"),
                vec![
                    "claim",
                    "-p",
                    "c",
                    "--job",
                    "j2",
                    "--holder",
                    "cli",
                    "--ttl",
                    "10m",
                    "--token-out",
                    "/dev/null/x",
                ],
                5,
                "CLI claim 1 h behind cannot even reserve a bad token file",
            ),
            (
                None,
                vec!["renew", "--token-file", &tok_s, "--ttl", "20m"],
                0,
                "real-time CLI renew",
            ),
        ];
        for (off, args, want, what) in checks {
            let got = cli_run(off, &args)?;
            if got != want {
                return Err(format!("{what}: exit {got}, expected {want}"));
            }
            cli_runs += 1;
        }
        let tok2 = dir.join("clock-cli2.token");
        let _ = std::fs::remove_file(&tok2);
        let tok2_s = tok2.to_string_lossy().into_owned();
        let got = cli_run(
            Some("-1h"),
            &[
                "claim",
                "-p",
                "c",
                "--job",
                "j2",
                "--holder",
                "cli",
                "--ttl",
                "10m",
                "--token-out",
                &tok2_s,
            ],
        )?;
        if got != rollback_exit {
            return Err(format!(
                "CLI claim 1 h behind: exit {got}, expected {rollback_exit}"
            ));
        }
        if tok2.exists() {
            return Err("a refused CLI claim left its token file behind".into());
        }
        cli_runs += 1;
    }

    println!(
        "clock: {cli_runs} CLI runs and {tried} guarded operations under libfaketime (1 h and 3 s behind, 1 h ahead) and one stalled renewal: \
         rollback refused everywhere until real time passed the mark ({attempts} tries), forward jump expired the lease at once, \
         stalled renewal rejected"
    );
    Ok(())
}
