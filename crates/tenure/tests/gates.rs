//! A production's claim gates (pause, concurrency limit, rate limit) on
//! the test backend: the rule, its errors, its events, its waits, the
//! checker's invariant and real processes at a concurrency limit.
mod common;
use common::{ms, secs, Env, RealEnv};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tenure::*;

fn kinds(a: &Authority) -> Vec<EventKind> {
    a.events(0, 10_000)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.unwrap_err().code()
}

#[test]
fn a_paused_production_takes_jobs_keeps_leases_and_claims_nothing_until_resumed() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    let held = a.claim("p", "j0", "w", secs(60)).unwrap();
    assert!(a.pause_production("p").unwrap());
    assert!(!a.pause_production("p").unwrap());
    assert!(a.production_gates("p").unwrap().paused_us.is_some());
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    assert!(a.claim_next_many("p", "w", secs(60), 5).unwrap().is_empty());
    assert_eq!(
        code(a.claim("p", "j1", "w", secs(60))),
        ErrorCode::ProductionPaused
    );
    // Submissions are accepted; the held lease keeps working.
    a.submit("p", &JobSpec::new("late", vec![])).unwrap();
    env.clock.advance(1_000_000);
    held.renew(secs(120)).unwrap();
    held.complete(&[]).unwrap();
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    assert!(a.resume_production("p").unwrap());
    assert!(!a.resume_production("p").unwrap());
    assert_eq!(a.production_gates("p").unwrap(), Gates::default());
    assert_eq!(
        a.claim_next_many("p", "w", secs(60), 5).unwrap().len(),
        3,
        "j1, j2 and late"
    );
    let k = kinds(a);
    assert!(k.contains(&EventKind::ProductionPaused));
    assert!(k.contains(&EventKind::ProductionResumed));
    assert!(a.check().unwrap().violations.is_empty());
}

#[test]
fn a_concurrency_limit_caps_live_leases_and_frees_a_slot_on_close_or_expiry() {
    let env = Env::with_jobs(8, 3);
    let a = &env.auth;
    a.set_concurrency_limit("p", Some(2)).unwrap();
    assert_eq!(a.production_gates("p").unwrap().concurrency, Some(2));
    let first = a.claim_next_many("p", "w", secs(10), 5).unwrap();
    assert_eq!(first.len(), 2);
    assert!(a.claim_next("p", "w", secs(10)).is_err());
    assert_eq!(
        code(a.claim("p", "j5", "w", secs(10))),
        ErrorCode::ConcurrencyLimit
    );
    // A close frees a slot.
    first[0].complete(&[]).unwrap();
    let third = a.claim_next("p", "w", secs(30)).unwrap();
    assert!(a.claim_next("p", "w", secs(10)).is_err());
    // An expiry frees one too (on the authority's clock).
    env.clock.advance(10_000_000);
    let fourth = a.claim_next("p", "w", secs(30)).unwrap();
    assert!(a.claim_next("p", "w", secs(30)).is_err());
    // Lowering revokes nothing: both leases keep working; no claim until
    // fewer than the new limit are live.
    a.set_concurrency_limit("p", Some(1)).unwrap();
    third.renew(secs(40)).unwrap();
    assert!(a.claim_next("p", "w", secs(30)).is_err());
    third.complete(&[]).unwrap();
    assert!(a.claim_next("p", "w", secs(30)).is_err());
    fourth.release().unwrap();
    let fifth = a.claim_next("p", "w", secs(30)).unwrap();
    assert!(a.claim_next("p", "w", secs(30)).is_err());
    // Raising it takes effect at once; clearing it lifts it.
    a.set_concurrency_limit("p", Some(3)).unwrap();
    assert_eq!(a.claim_next_many("p", "w", secs(30), 5).unwrap().len(), 2);
    a.set_concurrency_limit("p", None).unwrap();
    assert!(a.claim_next("p", "w", secs(30)).is_ok());
    fifth.complete(&[]).unwrap();
    assert!(a.check().unwrap().violations.is_empty());
}

#[test]
fn idempotent_claims_respect_the_concurrency_limit() {
    let env = Env::with_jobs(6, 3);
    let a = &env.auth;
    a.set_concurrency_limit("p", Some(2)).unwrap();
    let r = ClaimRequest::new("req-1").unwrap();
    let got = a
        .claim_next_many_idempotent("p", "w", secs(10), 4, &r)
        .unwrap();
    assert_eq!(got.value.len(), 2);
    let r2 = ClaimRequest::new("req-2").unwrap();
    assert!(a.claim_next_idempotent("p", "w", secs(10), &r2).is_err());
}

#[test]
fn a_rate_limit_admits_its_burst_then_one_claim_per_interval_and_a_backward_clock_releases_none() {
    let env = Env::with_jobs(20, 3);
    let a = &env.auth;
    // 10 per second, burst 2: one claim per 100 ms.
    let rate = RateLimit {
        claims: 10,
        interval: Duration::from_secs(1),
        burst: 2,
    };
    a.set_rate_limit("p", Some(rate)).unwrap();
    assert_eq!(a.production_gates("p").unwrap().rate, Some(rate));
    assert_eq!(a.claim_next_many("p", "w", secs(60), 5).unwrap().len(), 2);
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    assert_eq!(
        code(a.claim("p", "j10", "w", secs(60))),
        ErrorCode::RateLimited
    );
    env.clock.advance(99_999);
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    env.clock.advance(1);
    assert!(a.claim_next("p", "w", secs(60)).is_ok());
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    // The clock jumps back 10 s: the authority's clock stays at its
    // high-water mark, so nothing more is allowed.
    env.clock.advance(-10_000_000);
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    env.clock.advance(10_000_000 + 100_000);
    assert!(a.claim_next("p", "w", secs(60)).is_ok());
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    // After an idle spell, at most the burst.
    env.clock.advance(60_000_000);
    assert_eq!(a.claim_next_many("p", "w", secs(60), 10).unwrap().len(), 2);
    a.set_rate_limit("p", None).unwrap();
    assert_eq!(a.claim_next_many("p", "w", secs(60), 3).unwrap().len(), 3);
    assert!(kinds(a).contains(&EventKind::ProductionLimited));
}

#[test]
fn bad_gate_input_is_refused_and_changes_nothing() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    for k in [0, MAX_GATE + 1, u32::MAX] {
        assert_eq!(
            code(a.set_concurrency_limit("p", Some(k))),
            ErrorCode::InvalidArgument
        );
    }
    let ok = RateLimit {
        claims: 5,
        interval: Duration::from_secs(1),
        burst: 5,
    };
    for (bad, want) in [
        (RateLimit { claims: 0, ..ok }, ErrorCode::InvalidArgument),
        (RateLimit { burst: 0, ..ok }, ErrorCode::InvalidArgument),
        (
            RateLimit {
                claims: MAX_GATE + 1,
                ..ok
            },
            ErrorCode::InvalidArgument,
        ),
        (
            RateLimit {
                interval: MAX_RATE_INTERVAL + Duration::from_micros(1),
                ..ok
            },
            ErrorCode::InvalidDuration,
        ),
        (
            RateLimit {
                interval: Duration::ZERO,
                ..ok
            },
            ErrorCode::InvalidDuration,
        ),
    ] {
        assert_eq!(code(a.set_rate_limit("p", Some(bad))), want, "{bad:?}");
    }
    assert_eq!(code(a.pause_production("nope")), ErrorCode::NotFound);
    assert_eq!(code(a.resume_production("nope")), ErrorCode::NotFound);
    assert_eq!(
        code(a.set_concurrency_limit("nope", Some(1))),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(a.set_rate_limit("nope", Some(ok))),
        ErrorCode::NotFound
    );
    assert_eq!(code(a.production_gates("nope")), ErrorCode::NotFound);
    assert_eq!(
        code(a.pause_production("bad id!")),
        ErrorCode::InvalidArgument
    );
    assert_eq!(a.production_gates("p").unwrap(), Gates::default());
    assert!(!kinds(a).contains(&EventKind::ProductionLimited));
}

#[test]
fn an_edit_that_pauses_and_is_dropped_leaves_the_production_open() {
    let env = Env::with_jobs(1, 3);
    let mut e = env.auth.edit().unwrap();
    assert!(e.pause_production("p").unwrap());
    drop(e);
    assert_eq!(env.auth.production_gates("p").unwrap(), Gates::default());
    assert!(env.auth.claim_next("p", "w", secs(5)).is_ok());
}

#[test]
fn gate_calls_in_an_edit_that_commits_are_in_force_after_it() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    a.create_production("q").unwrap();
    a.submit("q", &JobSpec::new("q1", vec![])).unwrap();
    let rate = RateLimit {
        claims: 5,
        interval: Duration::from_secs(3600),
        burst: 5,
    };
    let mut e = a.edit().unwrap();
    assert!(e.pause_production("q").unwrap());
    e.set_concurrency_limit("p", Some(1)).unwrap();
    e.set_rate_limit("p", Some(rate)).unwrap();
    e.commit().unwrap();
    let g = a.production_gates("p").unwrap();
    assert_eq!((g.concurrency, g.rate), (Some(1), Some(rate)));
    assert!(a.production_gates("q").unwrap().paused_us.is_some());
    assert_eq!(
        code(a.claim("q", "q1", "w", secs(60))),
        ErrorCode::ProductionPaused
    );
    let _held = a.claim("p", "j0", "w", secs(60)).unwrap();
    assert_eq!(
        code(a.claim("p", "j1", "w", secs(60))),
        ErrorCode::ConcurrencyLimit
    );

    let mut e = a.edit().unwrap();
    assert!(e.resume_production("q").unwrap());
    e.set_concurrency_limit("p", None).unwrap();
    e.set_rate_limit("p", None).unwrap();
    e.commit().unwrap();
    assert_eq!(a.production_gates("p").unwrap(), Gates::default());
    assert_eq!(a.production_gates("q").unwrap(), Gates::default());
    assert!(a.claim("q", "q1", "w", secs(60)).is_ok());
    assert!(a.claim("p", "j1", "w", secs(60)).is_ok());
}

#[test]
fn a_waiter_on_a_paused_production_sleeps_and_wakes_on_resume() {
    let env = RealEnv::new();
    env.submit("j");
    env.auth.pause_production("p").unwrap();
    let other = env.reopen();
    let resumed = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let r2 = resumed.clone();
    let h = std::thread::spawn(move || {
        std::thread::sleep(ms(700));
        other.resume_production("p").unwrap();
        *r2.lock().unwrap() = Some(Instant::now());
    });
    let t0 = Instant::now();
    let l = env
        .auth
        .claim_next_wait("p", "w", secs(60), Duration::from_secs(30), None)
        .unwrap();
    let woke = Instant::now();
    h.join().unwrap();
    assert_eq!(l.job(), "j");
    assert!(t0.elapsed() >= ms(700));
    let at = resumed.lock().unwrap().unwrap();
    assert!(
        woke.saturating_duration_since(at) < Duration::from_secs(1),
        "woke {:?} after the resume",
        woke.saturating_duration_since(at)
    );
}

#[test]
fn a_waiter_at_the_concurrency_limit_wakes_when_a_lease_closes() {
    let env = RealEnv::new();
    env.submit("a");
    env.submit("b");
    env.auth.set_concurrency_limit("p", Some(1)).unwrap();
    let held = env.auth.claim_next("p", "w", secs(600)).unwrap();
    let h = std::thread::spawn(move || {
        std::thread::sleep(ms(300));
        held.complete(&[]).unwrap();
        Instant::now()
    });
    let l = env
        .auth
        .claim_next_wait("p", "w", secs(60), Duration::from_secs(30), None)
        .unwrap();
    let woke = Instant::now();
    let closed = h.join().unwrap();
    assert_eq!(l.job(), "b");
    assert!(woke.saturating_duration_since(closed) < Duration::from_secs(1));
}

#[test]
fn a_waiter_at_the_concurrency_limit_wakes_when_a_lease_expires() {
    let env = RealEnv::new();
    env.submit("a");
    env.submit("b");
    env.auth.set_concurrency_limit("p", Some(1)).unwrap();
    let held = env
        .auth
        .claim_next("p", "w", Ttl::from_micros(800_000).unwrap())
        .unwrap();
    let claimed = Instant::now();
    // No commit wakes this wait: only the lease's expiry frees the slot.
    let l = env
        .auth
        .claim_next_wait("p", "w2", secs(60), Duration::from_secs(30), None)
        .unwrap();
    let woke = claimed.elapsed();
    assert_ne!(l.claim_id(), held.claim_id());
    assert!(
        woke >= ms(700),
        "woke {woke:?} after the claim, before the expiry"
    );
    assert!(
        woke < ms(800) + Duration::from_secs(1),
        "woke {woke:?} after the claim"
    );
    assert!(matches!(
        code(held.renew(secs(60))),
        ErrorCode::LeaseExpired | ErrorCode::StaleLease
    ));
}

#[test]
fn the_checker_accepts_a_limit_lowered_below_the_live_leases() {
    // Lowering the limit below the live leases revokes nothing and is no
    // violation: only a claim that makes more live leases than the limit is.
    let env = Env::with_jobs(4, 3);
    let a = &env.auth;
    let _l1 = a.claim_next("p", "w", secs(60)).unwrap();
    let _l2 = a.claim_next("p", "w", secs(60)).unwrap();
    a.set_concurrency_limit("p", Some(1)).unwrap();
    assert!(a.claim_next("p", "w", secs(60)).is_err());
    let r = a.check().unwrap();
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

/// The most leases of `production` live at once, replayed from the event
/// log: a lease is live from its claim until it closes or its (latest)
/// expiry, whichever is first.
fn max_live(a: &Authority, production: &str) -> usize {
    let mut evs = Vec::new();
    let mut after = 0;
    loop {
        let page = a.events(after, 10_000).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        evs.extend(page.into_iter().filter(|e| e.production == production));
    }
    // (job) -> (start, end) of the current lease; closed intervals listed.
    let mut open: HashMap<String, (i64, i64)> = HashMap::new();
    let mut spans = Vec::new();
    for e in evs {
        let Some(job) = e.job.clone() else { continue };
        match e.kind {
            EventKind::Claimed => {
                if let Some(s) = open.remove(&job) {
                    spans.push(s);
                }
                open.insert(job, (e.at_us, e.expires_us.unwrap()));
            }
            EventKind::Renewed => {
                if let Some(s) = open.get_mut(&job) {
                    s.1 = e.expires_us.unwrap();
                }
            }
            EventKind::Completed
            | EventKind::Released
            | EventKind::Failed
            | EventKind::Cancelled
            | EventKind::Exhausted => {
                if let Some((start, end)) = open.remove(&job) {
                    spans.push((start, end.min(e.at_us)));
                }
            }
            _ => {}
        }
    }
    spans.extend(open.into_values());
    // Ends before starts at the same instant: a lease is live on [start, end).
    let mut edges: Vec<(i64, i32)> = spans.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
    edges.sort();
    let (mut live, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        live += d;
        most = most.max(live);
    }
    most as usize
}

/// `workers` processes of [`limited_worker_child`] on `env`'s store for
/// `run`, each wait lasting at most `wait`.
fn spawn_workers(env: &RealEnv, workers: usize, run: Duration, wait: Duration) -> Vec<Child> {
    spawn_claimers(env, workers, run, wait, false)
}

/// As [`spawn_workers`]; `named`: each worker claims jobs by name (at
/// random among `job-00000` to `job-19999`) instead of waiting for the next.
fn spawn_claimers(
    env: &RealEnv,
    workers: usize,
    run: Duration,
    wait: Duration,
    named: bool,
) -> Vec<Child> {
    let exe = std::env::current_exe().unwrap();
    (0..workers)
        .map(|w| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "limited_worker_child",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TENURE_GATES_DB", env.path())
                .env("TENURE_GATES_WORKER", w.to_string())
                .env("TENURE_GATES_RUN_MS", run.as_millis().to_string())
                .env("TENURE_GATES_WAIT_MS", wait.as_millis().to_string())
                .env("TENURE_GATES_NAMED", if named { "1" } else { "0" })
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect()
}

fn wait_all(children: Vec<Child>) {
    for (w, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "worker {w} failed");
    }
}

fn processes_at_a_limit(workers: usize, run: Duration) {
    let env = RealEnv::new();
    let specs: Vec<JobSpec> = (0..2000)
        .map(|i| JobSpec::new(format!("job-{i:05}"), vec![]).max_attempts(1000))
        .collect();
    env.auth.submit_many("p", &specs).unwrap();
    env.auth.set_concurrency_limit("p", Some(3)).unwrap();
    wait_all(spawn_workers(&env, workers, run, ms(200)));
    assert_eq!(max_live(&env.auth, "p"), 3);
    let r = env.auth.check().unwrap();
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn processes_at_a_concurrency_limit_of_three_never_hold_four_leases() {
    let workers = if common::on_postgres() { 32 } else { 16 };
    let secs: u64 = std::env::var("TENURE_GATES_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    processes_at_a_limit(workers, Duration::from_secs(secs));
}

/// Pause during a storm: 16 worker processes claim and complete while the
/// production is paused for 1.5 s, then resumed. From the log: no claim commits between the pause and the
/// resume, and every worker's first claim after the resume is within 1 s
/// of it (their waits last 30 s, so the resume's wake is what ends them).
#[test]
fn a_pause_during_a_storm_stops_every_claim_and_the_resume_wakes_every_waiter() {
    let env = storm_queue();
    let workers = 16;
    let children = spawn_workers(
        &env,
        workers,
        Duration::from_secs(6),
        Duration::from_secs(30),
    );
    std::thread::sleep(Duration::from_millis(2000));
    assert!(env.auth.pause_production("p").unwrap());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(env.auth.resume_production("p").unwrap());
    wait_all(children);
    let evs = all_events(&env.auth);
    let (claims, resumed) = claims_around_the_pause(&evs);
    let mut first_after: HashMap<String, i64> = HashMap::new();
    for e in claims.iter().filter(|e| e.seq > resumed.seq) {
        first_after
            .entry(e.holder.clone().unwrap())
            .or_insert(e.at_us);
    }
    assert_eq!(
        first_after.len(),
        workers,
        "every worker claimed after the resume"
    );
    for (holder, t) in &first_after {
        assert!(
            t - resumed.at_us < 1_000_000,
            "{holder} claimed {} µs after the resume",
            t - resumed.at_us
        );
    }
    assert!(env.auth.check().unwrap().violations.is_empty());
}

/// A store whose production `p` holds 20 000 jobs, `job-00000` to
/// `job-19999`, each allowed 1 000 attempts.
fn storm_queue() -> RealEnv {
    let env = RealEnv::new();
    let specs: Vec<JobSpec> = (0..20_000)
        .map(|i| JobSpec::new(format!("job-{i:05}"), vec![]).max_attempts(1000))
        .collect();
    env.auth.submit_many("p", &specs).unwrap();
    env
}

/// Complete `lease`; a lease lost meanwhile (expired, reclaimed, or a busy
/// store) is let go.
fn complete_or_let_go(lease: &Lease) {
    match lease.complete(&[]) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.code(),
                ErrorCode::LeaseExpired | ErrorCode::StaleLease | ErrorCode::Busy
            ) => {}
        Err(e) => panic!("complete: {e}"),
    }
}

/// Production `p`'s whole event log.
fn all_events(a: &Authority) -> Vec<Event> {
    let mut evs = Vec::new();
    let mut after = 0;
    loop {
        let page = a.production_events("p", after, 10_000).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        evs.extend(page);
    }
    evs
}

/// The claims of the log, and its resume, once asserted that some claims
/// came before its pause and none between the pause and the resume.
fn claims_around_the_pause(evs: &[Event]) -> (Vec<&Event>, Event) {
    let at = |k: EventKind| evs.iter().find(|e| e.kind == k).unwrap().clone();
    let (paused, resumed) = (
        at(EventKind::ProductionPaused),
        at(EventKind::ProductionResumed),
    );
    let claims: Vec<&Event> = evs
        .iter()
        .filter(|e| e.kind == EventKind::Claimed)
        .collect();
    assert!(
        claims.iter().any(|e| e.seq < paused.seq),
        "the storm claimed before the pause"
    );
    let during: Vec<_> = claims
        .iter()
        .filter(|e| e.seq > paused.seq && e.seq < resumed.seq)
        .map(|e| (e.seq, e.job.clone()))
        .collect();
    assert!(during.is_empty(), "claims while paused: {during:?}");
    (claims, resumed)
}

/// Named claims (of jobs picked at random) by 8 processes while the
/// production is paused for 1 s: from the log, no claim commits between
/// the pause and the resume, and claims go on after the resume.
#[test]
fn a_pause_stops_named_claims_in_flight() {
    let env = storm_queue();
    let children = spawn_claimers(&env, 8, Duration::from_secs(4), ms(200), true);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(env.auth.pause_production("p").unwrap());
    std::thread::sleep(Duration::from_millis(1000));
    assert!(env.auth.resume_production("p").unwrap());
    wait_all(children);
    let evs = all_events(&env.auth);
    let (claims, resumed) = claims_around_the_pause(&evs);
    assert!(
        claims.iter().any(|e| e.seq > resumed.seq),
        "claims went on after the resume"
    );
    assert!(env.auth.check().unwrap().violations.is_empty());
}

/// A worker of [`processes_at_a_limit`]: waits for work, holds each lease
/// a random time, completes most, lets some expire.
#[test]
#[ignore]
fn limited_worker_child() {
    let Ok(db) = std::env::var("TENURE_GATES_DB") else {
        return;
    };
    let w: u64 = std::env::var("TENURE_GATES_WORKER")
        .unwrap()
        .parse()
        .unwrap();
    let run = Duration::from_millis(
        std::env::var("TENURE_GATES_RUN_MS")
            .unwrap()
            .parse()
            .unwrap(),
    );
    let a = Authority::open(&db, &Options::new().busy_timeout(Duration::from_secs(30))).unwrap();
    let mut rng = (w + 1).wrapping_mul(6364136223846793005);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // How long one wait lasts (`TENURE_GATES_WAIT_MS`, default 200 ms): a
    // long one leaves waking to the doorbell.
    let wait = ms(std::env::var("TENURE_GATES_WAIT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200));
    let named = std::env::var("TENURE_GATES_NAMED").is_ok_and(|v| v == "1");
    let end = Instant::now() + run;
    let holder = format!("w{w}");
    while Instant::now() < end {
        let ttl = Ttl::from_micros(300_000 + (next() % 300_000) as i64).unwrap();
        // Whole milliseconds: a wait is whole microseconds.
        let left = ms(end.saturating_duration_since(Instant::now()).as_millis() as u64);
        if left.is_zero() {
            break;
        }
        let wait = wait.min(left);
        if named {
            let job = format!("job-{:05}", next() % 20_000);
            match a.claim("p", &job, &holder, ttl) {
                Ok(lease) => complete_or_let_go(&lease),
                Err(e) if e.code() == ErrorCode::ProductionPaused => std::thread::sleep(ms(5)),
                // Held by another worker, already done, or raced.
                Err(_) => {}
            }
            continue;
        }
        let lease = match a.claim_next_wait("p", &holder, ttl, wait, None) {
            Ok(l) => l,
            // On a loaded machine a short lease can expire before its
            // claim commits: the claim is refused and changes nothing.
            Err(e)
                if matches!(
                    e.code(),
                    ErrorCode::NoJobAvailable | ErrorCode::Busy | ErrorCode::LeaseExpired
                ) =>
            {
                continue
            }
            Err(e) => panic!("claim: {e}"),
        };
        let hold = ms(next() % 60);
        std::thread::sleep(hold);
        if next() % 8 == 0 {
            // Let it expire.
            continue;
        }
        complete_or_let_go(&lease);
    }
}

/// What a claim-next and a named claim of `j4` get, as `OUT a b`.
fn claims_outcome(a: &Authority) -> String {
    let name = |r: Result<Lease>| match r {
        Ok(_) => "claimed".to_owned(),
        Err(e) => e.code().name().to_owned(),
    };
    format!(
        "OUT {} {}",
        name(a.claim_next("p", "ft", secs(60))),
        name(a.claim("p", "j4", "ft", secs(60)))
    )
}

/// The child of the clock-jump tests: both claims under a faked clock.
#[test]
#[ignore]
fn gates_clock_child() {
    let Ok(db) = std::env::var("TENURE_GATES_FT_DB") else {
        return;
    };
    let a = Authority::open(&db, &Options::new()).unwrap();
    println!("{}", claims_outcome(&a));
}

fn jumped(offset: &str, db: &std::path::Path) -> String {
    let out = common::under_faketime(
        offset,
        "gates_clock_child",
        &[("TENURE_GATES_FT_DB", db.to_str().unwrap())],
        "",
    );
    common::read_until(&mut out.as_bytes(), "OUT")
}

#[test]
fn clock_jumps_release_no_claim_of_a_rate_limited_or_paused_production() {
    if common::skip_on_postgres("the faked clock is the process's own") {
        return;
    }
    let env = RealEnv::new();
    for i in 0..5 {
        env.submit(&format!("j{i}"));
    }
    let db = env.path();
    // One claim per hour: the one of the burst is used now.
    env.auth
        .set_rate_limit(
            "p",
            Some(RateLimit {
                claims: 1,
                interval: Duration::from_secs(3600),
                burst: 1,
            }),
        )
        .unwrap();
    env.auth.claim("p", "j0", "w", secs(60)).unwrap();
    // Back two hours: the clock is refused below the mark; half an hour on:
    // still within the hour. Neither claims.
    assert_eq!(jumped("-2h", &db), "OUT clock_rollback clock_rollback");
    assert_eq!(jumped("+30m", &db), "OUT no_job_available rate_limited");
    // Two hours on: one claim (the burst), not two.
    assert_eq!(jumped("+2h", &db), "OUT claimed rate_limited");

    // Paused: no clock claims anything.
    let env = RealEnv::new();
    for i in 0..5 {
        env.submit(&format!("j{i}"));
    }
    env.auth.pause_production("p").unwrap();
    let db = env.path();
    assert_eq!(jumped("-30d", &db), "OUT clock_rollback clock_rollback");
    assert_eq!(jumped("+2h", &db), "OUT no_job_available production_paused");
    assert_eq!(
        jumped("+30d", &db),
        "OUT no_job_available production_paused"
    );
}

/// Waiters on a rate-limited production with work due are woken as the
/// rate allows each claim, with no commit to ring them: four threads whose
/// waits last 30 s make about the rate's claims in 3 s (a waiter that
/// slept past the moment the rate opened would hold its claim until the
/// wait's timeout).
#[test]
fn waiters_under_a_rate_limit_are_woken_as_each_claim_is_allowed() {
    let env = RealEnv::new();
    let specs: Vec<JobSpec> = (0..1000)
        .map(|i| JobSpec::new(format!("j{i:04}"), vec![]))
        .collect();
    env.auth.submit_many("p", &specs).unwrap();
    env.auth
        .set_rate_limit(
            "p",
            Some(RateLimit {
                claims: 20,
                interval: Duration::from_secs(1),
                burst: 2,
            }),
        )
        .unwrap();
    let end = Instant::now() + Duration::from_secs(3);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let a = env.reopen();
            std::thread::spawn(move || {
                let mut n = 0;
                while Instant::now() < end {
                    match a.claim_next_wait("p", "w", secs(60), Duration::from_secs(30), None) {
                        Ok(l) => {
                            l.complete(&[]).unwrap();
                            n += 1;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                n
            })
        })
        .collect();
    let claims: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    // 2 at once, then 20 a second: about 62 by the end (the last waits
    // end with one more claim each).
    assert!((45..=70).contains(&claims), "{claims} claims");
}
