//! Scheduling (not-before delays), retry delays and back-off, and the hard
//! per-claim ownership limit (docs/design.md, "Scheduling and hold limits").
//! Runs on SQLite and, with `TENURE_TEST_BACKEND=postgres`, on PostgreSQL;
//! the clock-jump tests run real processes under libfaketime.
mod common;
use common::*;
use tenure::*;

const S: i64 = 1_000_000;

fn delay(us: i64) -> Delay {
    Delay::from_micros(us).unwrap()
}

fn backoff(base: i64, cap: i64) -> Backoff {
    Backoff::exponential(delay(base), delay(cap)).unwrap()
}

fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.unwrap_err().code()
}

#[test]
fn delay_bounds_and_text() {
    assert_eq!(delay(0), Delay::ZERO);
    assert_eq!(
        Delay::from_micros(Delay::MAX_MICROS).unwrap().as_micros(),
        366 * 86_400 * S
    );
    for bad in [-1, i64::MIN, Delay::MAX_MICROS + 1] {
        assert_eq!(
            code(Delay::from_micros(bad)),
            ErrorCode::InvalidDuration,
            "{bad}"
        );
    }
    assert_eq!("0s".parse::<Delay>().unwrap(), Delay::ZERO);
    assert_eq!(
        "8784h".parse::<Delay>().unwrap().as_micros(),
        Delay::MAX_MICROS
    );
    assert_eq!("90s".parse::<Delay>().unwrap().to_string(), "1m30s");
    let e = "8784h1us".parse::<Delay>().unwrap_err();
    assert!(e.to_string().contains("366 days"), "{e}");
    assert_eq!(code("1500ns".parse::<Delay>()), ErrorCode::InvalidDuration);
    assert_eq!(code("1.5s".parse::<Delay>()), ErrorCode::InvalidDuration);
    assert_eq!(
        code(Delay::try_from(std::time::Duration::from_nanos(1500))),
        ErrorCode::InvalidDuration
    );
    assert_eq!(
        Delay::try_from(std::time::Duration::from_secs(3)).unwrap(),
        delay(3 * S)
    );
    // Ttl keeps its own bound and refuses zero.
    assert_eq!(code("0s".parse::<Ttl>()), ErrorCode::InvalidDuration);
    assert_eq!(code("25h".parse::<Ttl>()), ErrorCode::InvalidDuration);
    // Back-off: positive base, cap not below it; steps double up to the cap.
    assert_eq!(
        code(Backoff::exponential(Delay::ZERO, delay(S))),
        ErrorCode::InvalidDuration
    );
    assert_eq!(
        code(Backoff::exponential(delay(2 * S), delay(S))),
        ErrorCode::InvalidDuration
    );
    let b = backoff(S, 5 * S);
    let steps: Vec<i64> = (1..=5).map(|n| b.delay_for(n).as_micros()).collect();
    assert_eq!(steps, [S, 2 * S, 4 * S, 5 * S, 5 * S]);
    assert_eq!(b.delay_for(1000).as_micros(), 5 * S);
}

#[test]
fn a_delayed_job_is_not_claimable_until_due() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    a.submit(
        "p",
        &JobSpec::new("later", b"x".to_vec()).not_before(delay(10 * S)),
    )
    .unwrap();
    let v = a.job("p", "later").unwrap();
    assert_eq!(
        (v.state, v.due_us),
        (JobState::Requested, Some(T0 + 10 * S))
    );
    let e = a.claim("p", "later", "w", secs(30)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotClaimable);
    assert!(
        e.to_string()
            .contains(&format!("not due until {}", T0 + 10 * S)),
        "{e}"
    );
    assert_eq!(
        code(a.claim_next("p", "w", secs(30))),
        ErrorCode::NoJobAvailable
    );
    assert_eq!(a.next_due_us("p").unwrap(), Some(T0 + 10 * S));
    // One microsecond early is still early; at the due time it is claimable.
    env.clock.set(T0 + 10 * S - 1);
    assert_eq!(
        code(a.claim_next("p", "w", secs(30))),
        ErrorCode::NoJobAvailable
    );
    assert_eq!(
        code(a.claim("p", "later", "w", secs(30))),
        ErrorCode::NotClaimable
    );
    env.clock.set(T0 + 10 * S);
    let l = a.claim_next("p", "w", secs(30)).unwrap();
    assert_eq!(l.job(), "later");
    let v = a.job("p", "later").unwrap();
    assert_eq!((v.state, v.due_us), (JobState::Claimed, None));
    assert_eq!(
        a.next_due_us("p").unwrap(),
        Some(T0 + 40 * S),
        "the claim's expiry"
    );
    // The submission event records the due time.
    let ev = a.production_events("p", 0, 0).unwrap();
    let sub = ev.iter().find(|e| e.kind == EventKind::Submitted).unwrap();
    assert!(
        sub.detail.contains(&format!("due at {}", T0 + 10 * S)),
        "{sub:?}"
    );
    assert!(a.check().unwrap().ok());

    // A zero delay is "now"; a named claim of a due job works too.
    a.submit("p", &JobSpec::new("now", vec![]).not_before(Delay::ZERO))
        .unwrap();
    assert_eq!(a.job("p", "now").unwrap().due_us, None);
    a.submit("p", &JobSpec::new("soon", vec![]).not_before(delay(S)))
        .unwrap();
    env.clock.advance(S);
    a.claim("p", "soon", "w", secs(30)).unwrap();
}

#[test]
fn claim_next_skips_jobs_not_yet_due_and_keeps_priority_order() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    // Many high-priority jobs in the future ahead of one due job.
    for i in 0..300 {
        a.submit(
            "p",
            &JobSpec::new(format!("future{i:03}"), vec![])
                .priority(10)
                .not_before(delay((100 + i) * S)),
        )
        .unwrap();
    }
    a.submit("p", &JobSpec::new("low-now", vec![])).unwrap();
    a.submit(
        "p",
        &JobSpec::new("mid-soon", vec![])
            .priority(5)
            .not_before(delay(50 * S)),
    )
    .unwrap();
    assert_eq!(a.claim_next("p", "w", secs(600)).unwrap().job(), "low-now");
    assert_eq!(
        code(a.claim_next("p", "w", secs(600))),
        ErrorCode::NoJobAvailable
    );
    assert_eq!(a.next_due_us("p").unwrap(), Some(T0 + 50 * S));
    env.clock.advance(101 * S);
    // future000 (due at 100 s) and future001 (101 s) are due, and mid-soon:
    // the higher priority first, then the older submission.
    let got: Vec<String> = (0..3)
        .map(|_| a.claim_next("p", "w", secs(600)).unwrap().job().to_owned())
        .collect();
    assert_eq!(got, ["future000", "future001", "mid-soon"]);
    assert_eq!(
        code(a.claim_next("p", "w", secs(600))),
        ErrorCode::NoJobAvailable
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn resubmission_ignores_the_delay_but_not_hold_limit_or_backoff() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    let spec = JobSpec::new("j", b"x".to_vec())
        .not_before(delay(10 * S))
        .max_hold(delay(60 * S))
        .backoff(backoff(S, 8 * S));
    assert_eq!(a.submit("p", &spec).unwrap(), Submitted::Created);
    env.clock.advance(S);
    // Another delay: the same job; its due time does not move.
    let again = spec.clone().not_before(delay(99 * S));
    assert_eq!(a.submit("p", &again).unwrap(), Submitted::Existing);
    let mut no_delay = spec.clone();
    no_delay.not_before = None;
    assert_eq!(a.submit("p", &no_delay).unwrap(), Submitted::Existing);
    assert_eq!(a.job("p", "j").unwrap().due_us, Some(T0 + 10 * S));
    let e = a
        .submit("p", &spec.clone().max_hold(delay(61 * S)))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Conflict);
    assert!(e.to_string().contains("max_hold"), "{e}");
    let e = a
        .submit("p", &spec.clone().backoff(backoff(2 * S, 8 * S)))
        .unwrap_err();
    assert!(e.to_string().contains("backoff"), "{e}");
    let v = a.job("p", "j").unwrap();
    assert_eq!(v.max_hold_us, Some(60 * S));
    assert_eq!(v.backoff, Some(backoff(S, 8 * S)));
    // A zero hold limit is refused and changes nothing.
    let before = a.events(0, 0).unwrap().len();
    let e = a
        .submit("p", &JobSpec::new("z", vec![]).max_hold(Delay::ZERO))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidDuration);
    assert_eq!(code(a.job("p", "z")), ErrorCode::NotFound);
    assert_eq!(a.events(0, 0).unwrap().len(), before);
}

#[test]
fn retry_delay_named_overrides_job_backoff_which_overrides_the_production() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    a.set_production_backoff("p", Some(backoff(100 * S, 1000 * S)))
        .unwrap();
    assert_eq!(
        a.productions().unwrap()[0].backoff,
        Some(backoff(100 * S, 1000 * S))
    );
    a.submit(
        "p",
        &JobSpec::new("own", vec![])
            .max_attempts(5)
            .backoff(backoff(S, 3 * S)),
    )
    .unwrap();
    a.submit("p", &JobSpec::new("inherits", vec![]).max_attempts(5))
        .unwrap();
    let due = |j: &str| a.job("p", j).unwrap().due_us;

    // The job's own back-off: 1 s, 2 s, 3 s (capped).
    for (n, step) in [(1, S), (2, 2 * S), (3, 3 * S)] {
        let now = env.clock.get();
        let l = a.claim("p", "own", "w", secs(30)).unwrap();
        assert_eq!(l.attempt(), n);
        assert_eq!(l.fail("boom", false).unwrap(), JobState::Requested);
        assert_eq!(due("own"), Some(now + step), "attempt {n}");
        assert_eq!(
            code(a.claim("p", "own", "w", secs(30))),
            ErrorCode::NotClaimable
        );
        env.clock.set(now + step);
    }
    // A named delay overrides it; zero means at once.
    let now = env.clock.get();
    let l = a.claim("p", "own", "w", secs(30)).unwrap();
    l.fail_retry_after("later", delay(7 * S)).unwrap();
    assert_eq!(due("own"), Some(now + 7 * S));
    let ev = a.production_events("p", 0, 0).unwrap();
    let last = ev.last().unwrap();
    assert_eq!(last.kind, EventKind::Failed);
    assert!(
        last.detail
            .contains(&format!("retry due at {}", now + 7 * S)),
        "{last:?}"
    );
    env.clock.advance(7 * S);
    let l = a.claim("p", "own", "w", secs(30)).unwrap();
    assert_eq!(l.attempt(), 5);
    // The last attempt: failed, whatever the delay.
    assert_eq!(l.fail_retry_after("x", delay(S)).unwrap(), JobState::Failed);
    assert_eq!(due("own"), None);

    // The production's back-off for a job without its own.
    let now = env.clock.get();
    a.claim("p", "inherits", "w", secs(30))
        .unwrap()
        .fail("", false)
        .unwrap();
    assert_eq!(due("inherits"), Some(now + 100 * S));
    env.clock.advance(100 * S);
    let l = a.claim_next("p", "w", secs(30)).unwrap();
    assert_eq!(l.job(), "inherits");
    l.fail_retry_after("", Delay::ZERO).unwrap();
    assert_eq!(
        due("inherits"),
        None,
        "a named zero delay beats every back-off"
    );
    // Cleared: due at once again; release never delays; a permanent failure neither.
    a.set_production_backoff("p", None).unwrap();
    assert_eq!(a.productions().unwrap()[0].backoff, None);
    let l = a.claim_next("p", "w", secs(30)).unwrap();
    l.fail("", false).unwrap();
    assert_eq!(due("inherits"), None);
    a.claim_next("p", "w", secs(30)).unwrap().release().unwrap();
    assert_eq!(due("inherits"), None);
    assert_eq!(
        code(a.set_production_backoff("nope", None)),
        ErrorCode::NotFound
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn the_hold_limit_caps_claims_and_renewals() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("j", vec![]).max_hold(delay(100 * S)))
        .unwrap();
    a.submit("p", &JobSpec::new("short", vec![]).max_hold(delay(5 * S)))
        .unwrap();
    let l = a.claim("p", "j", "w", secs(60)).unwrap();
    assert_eq!(l.expires_us(), T0 + 60 * S);
    env.clock.advance(30 * S);
    // Wanted T0 + 120 s, capped at the limit T0 + 100 s.
    l.renew(secs(90)).unwrap();
    assert_eq!(l.expires_us(), T0 + 100 * S);
    let last = a.production_events("p", 0, 0).unwrap().pop().unwrap();
    assert_eq!(last.kind, EventKind::Renewed);
    assert!(last.detail.contains("hold limit"), "{last:?}");
    env.clock.advance(10 * S);
    // At the limit: hold_limit, and nothing changes.
    let before = a.events(0, 0).unwrap().len();
    let e = l.renew(secs(90)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::HoldLimit);
    assert!(e.to_string().contains(&format!("{}", T0 + 100 * S)), "{e}");
    assert_eq!(l.expires_us(), T0 + 100 * S);
    assert_eq!(a.events(0, 0).unwrap().len(), before);
    // A renewal that would not move the expiry later anyway is not_extended.
    assert_eq!(code(l.renew(secs(1))), ErrorCode::NotExtended);
    // The lease then expires like any other.
    env.clock.set(T0 + 100 * S);
    assert_eq!(code(l.complete(&[])), ErrorCode::LeaseExpired);
    assert_eq!(a.job("p", "j").unwrap().state, JobState::Expired);
    // A new claim gets a new limit from its own claim time.
    let l2 = a.claim("p", "j", "w2", secs(60)).unwrap();
    assert_eq!(l2.expires_us(), T0 + 160 * S);
    // The claim itself is capped.
    let s = a.claim("p", "short", "w", secs(60)).unwrap();
    assert_eq!(s.expires_us(), T0 + 105 * S);
    assert_eq!(code(s.renew(secs(60))), ErrorCode::HoldLimit);
    let claimed = a
        .production_events("p", 0, 0)
        .unwrap()
        .into_iter()
        .rfind(|e| e.kind == EventKind::Claimed)
        .unwrap();
    assert!(
        claimed
            .detail
            .contains(&format!("hold limit at {}", T0 + 105 * S)),
        "{claimed:?}"
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn edits_fail_with_a_retry_delay_and_set_the_production_backoff() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let mut e = a.edit().unwrap();
    e.set_production_backoff("p", Some(backoff(4 * S, 4 * S)))
        .unwrap();
    let l = e.claim("p", "j0", "w", secs(30)).unwrap();
    e.fail_retry_after(&l, "edit", delay(9 * S)).unwrap();
    let l1 = e.claim("p", "j1", "w", secs(30)).unwrap();
    e.fail(&l1, "edit", false).unwrap();
    e.commit().unwrap();
    assert_eq!(a.job("p", "j0").unwrap().due_us, Some(T0 + 9 * S));
    assert_eq!(a.job("p", "j1").unwrap().due_us, Some(T0 + 4 * S));
    // An aborted edit changes nothing.
    let mut e = a.edit().unwrap();
    e.set_production_backoff("p", None).unwrap();
    e.abort();
    assert!(a.productions().unwrap()[0].backoff.is_some());
}

#[test]
fn cancelling_a_production_cancels_jobs_not_yet_due() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    for i in 0..5 {
        a.submit(
            "p",
            &JobSpec::new(format!("d{i}"), vec![]).not_before(delay(S * (i + 1))),
        )
        .unwrap();
    }
    a.submit("p", &JobSpec::new("now", vec![])).unwrap();
    env.clock.advance(2 * S);
    assert_eq!(a.cancel_production("p").unwrap(), 6);
    for i in 0..5 {
        let v = a.job("p", &format!("d{i}")).unwrap();
        assert_eq!((v.state, v.due_us), (JobState::Cancelled, None));
    }
    assert_eq!(a.next_due_us("p").unwrap(), None);
    env.clock.advance(10 * S);
    assert_eq!(
        code(a.claim_next("p", "w", secs(1))),
        ErrorCode::NoJobAvailable
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn due_times_survive_reopening() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    env.auth
        .submit("p", &JobSpec::new("j", vec![]).not_before(delay(5 * S)))
        .unwrap();
    let a = env.reopen();
    assert_eq!(a.job("p", "j").unwrap().due_us, Some(T0 + 5 * S));
    assert_eq!(
        code(a.claim_next("p", "w", secs(1))),
        ErrorCode::NoJobAvailable
    );
    env.clock.advance(5 * S);
    assert_eq!(a.claim_next("p", "w", secs(1)).unwrap().job(), "j");
}

#[test]
fn a_backward_clock_never_makes_a_job_due_early() {
    // The injected clock: once the store has seen T0 + 20 s, reading T0 + 5 s
    // again refuses claims (clock_rollback) instead of comparing the due
    // time with the earlier reading, and views compare with the mark.
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    env.clock.set(T0 + 20 * S);
    a.submit("p", &JobSpec::new("j", vec![]).not_before(delay(10 * S)))
        .unwrap();
    env.clock.set(T0 + 5 * S);
    assert_eq!(
        code(a.claim_next("p", "w", secs(1))),
        ErrorCode::ClockRollback
    );
    assert_eq!(
        code(a.claim("p", "j", "w", secs(1))),
        ErrorCode::ClockRollback
    );
    env.clock.set(T0 + 29 * S);
    assert_eq!(
        code(a.claim_next("p", "w", secs(1))),
        ErrorCode::NoJobAvailable
    );
    env.clock.set(T0 + 30 * S);
    assert_eq!(a.claim_next("p", "w", secs(1)).unwrap().job(), "j");
}

#[test]
fn a_v2_store_migrates_to_schedules() {
    if skip_on_postgres("SQLite fixture") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    v2_store(&path);
    let clock = ManualClock::new(T0);
    let a = Authority::open(&path, &Options::new().clock(clock.clone())).unwrap();
    migrated_v2_store_works(&a, &clock);
    drop(a);
    let a = Authority::open(&path, &Options::new().clock(clock)).unwrap();
    assert_eq!(a.migrated_from(), SCHEMA_VERSION);
    let c = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, i64::from(SCHEMA_VERSION));
    let idx: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'jobs_%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        idx,
        [
            "jobs_claimed",
            "jobs_ended",
            "jobs_parked",
            "jobs_ready",
            "jobs_terminal",
            "jobs_waiting"
        ]
    );
}

/// The migrated store's checks, shared by both backends.
fn migrated_v2_store_works(a: &Authority, clock: &ManualClock) {
    assert_eq!(a.migrated_from(), 2);
    let report = a.check().unwrap();
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    // Rows keep their state; new columns read as "due at once, no limit".
    let v = a.job("old", "running").unwrap();
    assert_eq!(
        (v.state, v.due_us, v.max_hold_us),
        (JobState::Claimed, None, None)
    );
    assert_eq!(v.expires_us, Some(T0 + 3600 * S));
    assert_eq!(a.job("old", "done").unwrap().state, JobState::Completed);
    assert_eq!(a.productions().unwrap()[0].backoff, None);
    assert_eq!(a.claim_next("old", "w", secs(10)).unwrap().job(), "waiting");
    // New features work on the migrated store.
    a.submit(
        "old",
        &JobSpec::new("new", vec![])
            .not_before(delay(S))
            .max_hold(delay(S)),
    )
    .unwrap();
    assert_eq!(
        code(a.claim_next("old", "w", secs(10))),
        ErrorCode::NoJobAvailable
    );
    clock.advance(S);
    assert_eq!(
        a.claim_next("old", "w", secs(10)).unwrap().expires_us(),
        T0 + 2 * S
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn a_v2_postgres_store_migrates_to_schedules() {
    if !on_postgres() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    pg::client(&db.url)
        .batch_execute(include_str!("fixtures/v2_store_pg.sql"))
        .unwrap();
    let clock = ManualClock::new(T0);
    let a = Authority::open(db.url.as_str(), &options().clock(clock.clone())).unwrap();
    migrated_v2_store_works(&a, &clock);
    drop(a);
    let a = Authority::open(db.url.as_str(), &options().clock(clock)).unwrap();
    assert_eq!(a.migrated_from(), SCHEMA_VERSION);
    let v: i64 = pg::client(&db.url)
        .query_one(
            "SELECT value FROM tenure.meta WHERE key = 'schema_version'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(v, i64::from(SCHEMA_VERSION));
}

#[test]
fn claim_next_reads_only_due_parked_rows() {
    if skip_on_postgres("SQLite EXPLAIN QUERY PLAN") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let c = rusqlite::Connection::open(env.path()).unwrap();
    let plan: String = c
        .prepare(
            "EXPLAIN QUERY PLAN UPDATE jobs INDEXED BY jobs_parked SET parked = 0
             WHERE production = 'p' AND parked = 1 AND due_us <= 5",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .map(|r| r.unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        plan.contains("jobs_parked") && plan.contains("due_us<?"),
        "{plan}"
    );
}

#[test]
fn check_reports_a_lease_past_its_hold_limit_and_a_misparked_job() {
    if skip_on_postgres("tampering with a SQLite file") {
        return;
    }
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("h", vec![]).max_hold(delay(10 * S)))
        .unwrap();
    a.submit("p", &JobSpec::new("d", vec![]).not_before(delay(10 * S)))
        .unwrap();
    a.claim("p", "h", "w", secs(5)).unwrap();
    assert!(a.check().unwrap().ok());
    let c = rusqlite::Connection::open(env.path()).unwrap();
    c.execute_batch(&format!(
        "UPDATE jobs SET expires_us = {} WHERE job = 'h';
         UPDATE jobs SET due_us = NULL WHERE job = 'd';",
        T0 + 11 * S
    ))
    .unwrap();
    let v = a.check().unwrap().violations;
    assert!(v.iter().any(|m| m.contains("past its hold limit")), "{v:?}");
    assert!(v.iter().any(|m| m.contains("job p/d: parked")), "{v:?}");
}

/// A fourth claim forged into the log of a production whose concurrency
/// limit is three, while three leases are live, is the gate violation.
#[test]
fn check_reports_a_claim_beyond_the_concurrency_limit() {
    if skip_on_postgres("tampering with a SQLite file") {
        return;
    }
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    for j in ["j1", "j2", "j3", "j4"] {
        a.submit("p", &JobSpec::new(j, vec![])).unwrap();
    }
    a.set_concurrency_limit("p", Some(3)).unwrap();
    for j in ["j1", "j2", "j3"] {
        a.claim("p", j, "w", secs(60)).unwrap();
    }
    assert_eq!(
        code(a.claim("p", "j4", "w", secs(60))),
        ErrorCode::ConcurrencyLimit
    );
    let r = a.check().unwrap();
    assert!(r.ok(), "{:?}", r.violations);
    let c = rusqlite::Connection::open(env.path()).unwrap();
    c.execute_batch(
        "INSERT INTO events (at_us, production, job, kind, state, claim_id, holder, attempt, \
                             expires_us, detail) \
         SELECT at_us + 1, production, 'j4', kind, state, claim_id, holder, attempt, \
                expires_us, detail \
         FROM events WHERE job = 'j3' AND kind = 'claimed';",
    )
    .unwrap();
    let v = a.check().unwrap().violations;
    assert!(
        v.iter().any(|m| m.starts_with("job p/j4: claim ")
            && m.contains("made 4 live leases in production \"p\", whose concurrency limit is 3")),
        "{v:?}"
    );
}

// ---- clock jumps: real processes under libfaketime (SQLite file) ----

/// `jump_child` in `mode` on the store at `path`, under `faketime -f <offset>`.
fn under_faketime_at(offset: &str, mode: &str, path: &std::path::Path) -> String {
    under_faketime(
        offset,
        "jump_child",
        &[
            ("TENURE_JUMP_MODE", mode),
            ("TENURE_JUMP_STORE", path.to_str().unwrap()),
        ],
        "",
    )
}

#[test]
fn clock_jumps_never_make_a_delayed_job_due_early_or_a_deadline_later() {
    if skip_on_postgres("libfaketime on a SQLite file (PostgreSQL uses the server clock)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let a = Authority::open(&path, &Options::new()).unwrap();
    a.create_production("p").unwrap();
    // Due in an hour by the real clock; held at most 90 minutes.
    a.submit(
        "p",
        &JobSpec::new("delayed", vec![]).not_before(delay(3600 * S)),
    )
    .unwrap();
    a.submit("p", &JobSpec::new("held", vec![]).max_hold(delay(5400 * S)))
        .unwrap();
    assert!(a.job("p", "delayed").unwrap().due_us.is_some());
    drop(a);

    // Backward: a process whose clock reads two hours earlier can neither
    // claim the delayed job (clock_rollback: the store has seen later) nor
    // see it due.
    let out = under_faketime_at("-2h", "claim-delayed", &path);
    assert!(out.contains("REFUSED clock_rollback"), "{out}");
    // Forward by 30 minutes: still not due.
    let out = under_faketime_at("+1800", "claim-delayed", &path);
    assert!(out.contains("REFUSED not_claimable"), "{out}");
    // Forward by 2 h: due now (by that clock); the process claims it.
    let out = under_faketime_at("+2h", "claim-delayed", &path);
    assert!(out.contains("CLAIMED delayed"), "{out}");
    let a = Authority::open(&path, &Options::new()).unwrap();
    let v = a.job("p", "delayed").unwrap();
    assert!(v.attempts == 1 && v.due_us.is_none(), "{v:?}");

    // The hold limit is claim time + max hold, fixed: a process that claims
    // (at +2h30m by its clock), then one whose clock went back (+2h) cannot
    // renew at all, one an hour later (+3h) is held at the limit, and one
    // that jumped forward past the limit (+5h) finds the lease expired.
    let out = under_faketime_at("+9000", "claim-held", &path);
    let token = out
        .lines()
        .find_map(|l| l.split_once("TOKEN ").map(|(_, t)| t))
        .expect("a token")
        .to_owned();
    let limit: i64 = out
        .lines()
        .find_map(|l| l.split_once("EXPIRES ").map(|(_, t)| t))
        .unwrap()
        .parse()
        .unwrap();
    std::fs::write(dir.path().join("token"), &token).unwrap();
    let out = under_faketime_at("+2h", "renew-held", &path);
    assert!(out.contains("REFUSED clock_rollback"), "{out}");
    let out = under_faketime_at("+10800", "renew-held", &path);
    assert!(out.contains("REFUSED hold_limit"), "{out}");
    let out = under_faketime_at("+5h", "renew-held", &path);
    assert!(out.contains("REFUSED lease_expired"), "{out}");
    // Nothing ever extended the lease past claim time + 90 minutes.
    let v = a.job("p", "held").unwrap();
    let claimed = a
        .production_events("p", 0, 0)
        .unwrap()
        .into_iter()
        .rfind(|e| e.kind == EventKind::Claimed && e.job.as_deref() == Some("held"))
        .unwrap();
    assert_eq!(v.expires_us, Some(limit));
    assert_eq!(limit, claimed.at_us + 5400 * S, "{v:?}");
    assert!(a.check().unwrap().ok());
}

/// Child entry point of the clock-jump test (run under libfaketime).
#[test]
#[ignore = "child-process entry point of clock_jumps_never_make_a_delayed_job_due_early_or_a_deadline_later"]
fn jump_child() {
    let path = std::env::var("TENURE_JUMP_STORE").expect("run by the parent test");
    let mode = std::env::var("TENURE_JUMP_MODE").unwrap();
    let a = Authority::open(&path, &Options::new()).unwrap();
    let token_file = std::path::Path::new(&path).with_file_name("token");
    let report = |e: Error| println!("REFUSED {}", e.code().name());
    match mode.as_str() {
        "claim-delayed" => match a.claim("p", "delayed", "jumper", secs(60)) {
            Ok(l) => println!("CLAIMED {}", l.job()),
            Err(e) => report(e),
        },
        "claim-held" => {
            let l = a
                .claim("p", "held", "jumper", Ttl::from_micros(3600 * S).unwrap())
                .unwrap();
            // Renew to the limit: capped at claim time + 90 minutes.
            l.renew(Ttl::from_micros(86_400 * S).unwrap()).unwrap();
            println!("TOKEN {}", l.export_token().unwrap().expose());
            println!("EXPIRES {}", l.expires_us());
        }
        "renew-held" => {
            let token = std::fs::read_to_string(&token_file).unwrap();
            match a
                .import_lease(token.trim())
                .and_then(|l| l.renew(secs(3600)).map(|()| l.expires_us()))
            {
                Ok(t) => println!("RENEWED {t}"),
                Err(e) => report(e),
            }
        }
        m => panic!("unknown mode {m}"),
    }
}

/// Prune every terminal job of `env`'s store older than a minute.
fn prune_terminal(env: &Env) {
    let policy = Retention {
        event_age: None,
        terminal_job_age: Some(Age::from_secs(60).unwrap()),
        tombstone_age: Some(Age::from_secs(86_400).unwrap()),
    };
    env.clock.advance(120 * S);
    while env.auth.prune(&policy).unwrap().more {}
}

#[test]
fn a_pruned_job_answers_resubmissions_with_its_hold_limit_and_back_off() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    let full = JobSpec::new("j", b"x".to_vec())
        .max_hold(delay(5 * S))
        .backoff(backoff(S, 4 * S));
    env.auth.submit("p", &full).unwrap();
    env.auth
        .claim_next("p", "w", secs(1))
        .unwrap()
        .complete(&[])
        .unwrap();
    prune_terminal(&env);
    assert_eq!(code(env.auth.job("p", "j")), ErrorCode::NotFound);
    // Through the tombstone exactly as through the row: the delay is not
    // content, the hold limit and the back-off are.
    let later = full.clone().not_before(delay(S));
    assert_eq!(env.auth.submit("p", &later).unwrap(), Submitted::Existing);
    let e = env
        .auth
        .submit(
            "p",
            &JobSpec::new("j", b"x".to_vec()).backoff(backoff(S, 4 * S)),
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Conflict);
    assert!(e.to_string().contains("max_hold"), "{e}");
    let e = env
        .auth
        .submit_many(
            "p",
            &[JobSpec::new("j", b"x".to_vec()).max_hold(delay(5 * S))],
        )
        .unwrap_err();
    assert!(e.to_string().contains("backoff"), "{e}");
}

#[test]
fn a_schema_3_store_with_tombstones_migrates_to_schedules() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    env.auth
        .submit("p", &JobSpec::new("old", b"x".to_vec()))
        .unwrap();
    env.auth
        .claim_next("p", "w", secs(1))
        .unwrap()
        .complete(&[])
        .unwrap();
    prune_terminal(&env);
    env.auth
        .submit("p", &JobSpec::new("live", b"y".to_vec()))
        .unwrap();
    downgrade_to_schema_3(&env);
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 3);
    assert!(a.check().unwrap().ok());
    // The old tombstone answers as a job submitted without limit or back-off.
    let old = JobSpec::new("old", b"x".to_vec());
    assert_eq!(a.submit("p", &old).unwrap(), Submitted::Existing);
    assert_eq!(
        code(a.submit("p", &old.clone().max_hold(delay(S)))),
        ErrorCode::Conflict
    );
    let v = a.job("p", "live").unwrap();
    assert_eq!((v.due_us, v.max_hold_us, v.backoff), (None, None, None));
    assert_eq!(a.claim_next("p", "w", secs(1)).unwrap().job(), "live");
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}
