//! Keep-alive (`Lease::keep_alive`): renews on its own thread until
//! stopped, never after `stop` returned, never releases, and reports the
//! refusal that stopped it with its own error.
mod common;
use common::{ms, secs, Env, RealEnv};
use std::time::{Duration, Instant};
use tenure::*;

fn renewed_events(env: &RealEnv) -> usize {
    env.auth
        .events(0, 10_000)
        .unwrap()
        .iter()
        .filter(|e| e.kind == EventKind::Renewed)
        .count()
}

/// Wait until `f` holds (at most 10 s).
fn until(mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "condition never held"
        );
        std::thread::sleep(ms(10));
    }
}

#[test]
fn a_keeper_keeps_a_short_lease_alive_past_many_ttls() {
    let env = RealEnv::new();
    env.submit("j");
    let ttl = Ttl::from_micros(300_000).unwrap();
    let l = env.auth.claim_next("p", "w", ttl).unwrap();
    let first = l.expires_us();
    let k = l.keep_alive(ttl, ms(100)).unwrap();
    std::thread::sleep(ms(1500));
    assert_eq!(k.status(), KeeperStatus::Running);
    assert!(k.renewals() >= 5, "{k:?}");
    assert!(l.expires_us() > first + 1_000_000);
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Claimed);
    // The owner's transitions still work while it runs; it then stops quietly.
    l.complete(&[]).unwrap();
    until(|| k.status() == KeeperStatus::LeaseClosed);
    assert!(k.error().is_none());
}

#[test]
fn after_stop_returns_no_renewal_happens_and_nothing_is_released() {
    let env = RealEnv::new();
    env.submit("j");
    let ttl = Ttl::from_micros(400_000).unwrap();
    let l = env.auth.claim_next("p", "w", ttl).unwrap();
    let mut k = l.keep_alive(ttl, ms(50)).unwrap();
    until(|| k.renewals() >= 2);
    k.stop();
    assert_eq!(k.status(), KeeperStatus::Stopped);
    let n = renewed_events(&env);
    let exp = l.expires_us();
    std::thread::sleep(ms(600));
    assert_eq!(renewed_events(&env), n);
    assert_eq!(l.expires_us(), exp);
    // The lease simply expired: stop never released it.
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Expired);
    assert!(!env
        .auth
        .events(0, 10_000)
        .unwrap()
        .iter()
        .any(|e| e.kind == EventKind::Released));
    k.stop(); // idempotent
}

#[test]
fn dropping_a_keeper_stops_it_and_never_releases() {
    let env = RealEnv::new();
    env.submit("j");
    let ttl = secs(60);
    let l = env.auth.claim_next("p", "w", ttl).unwrap();
    let k = l.keep_alive(ttl, ms(20)).unwrap();
    until(|| k.renewals() >= 1);
    drop(k);
    let n = renewed_events(&env);
    std::thread::sleep(ms(200));
    assert_eq!(renewed_events(&env), n);
    let v = env.auth.job("p", "j").unwrap();
    assert_eq!(v.state, JobState::Claimed);
    assert_eq!(v.claim_id, Some(l.claim_id()));
    // Dropping the lease too writes nothing.
    drop(l);
    assert_eq!(renewed_events(&env), n);
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Claimed);
}

/// A keeper on the manual clock: each renewal is checked at the clock's
/// current reading.
fn keep(env: &Env, every: Duration) -> (Lease, Keeper) {
    let l = env.auth.claim("p", "j0", "w", secs(10)).unwrap();
    let k = l.keep_alive(secs(10), every).unwrap();
    (l, k)
}

fn stopped_with(k: &Keeper, code: ErrorCode) {
    until(|| k.status() != KeeperStatus::Running);
    assert_eq!(k.status(), KeeperStatus::Refused(code));
    assert_eq!(k.error().unwrap().code(), code);
}

#[test]
fn a_keeper_reports_a_renewal_that_would_not_extend() {
    // The manual clock stands still: the same TTL gives the same expiry.
    let env = Env::with_jobs(1, 3);
    let (_l, k) = keep(&env, ms(20));
    stopped_with(&k, ErrorCode::NotExtended);
}

#[test]
fn a_keeper_reports_an_expired_lease() {
    let env = Env::with_jobs(1, 3);
    env.clock.advance(0);
    let l = env.auth.claim("p", "j0", "w", secs(10)).unwrap();
    env.clock.advance(11_000_000);
    let k = l.keep_alive(secs(10), ms(20)).unwrap();
    stopped_with(&k, ErrorCode::LeaseExpired);
    // It tried once and stopped: no more attempts.
    let samples = env.clock.samples();
    std::thread::sleep(ms(100));
    assert_eq!(env.clock.samples(), samples);
}

#[test]
fn a_keeper_reports_a_stale_lease() {
    let env = Env::with_jobs(1, 3);
    let l = env.auth.claim("p", "j0", "w", secs(10)).unwrap();
    env.clock.advance(11_000_000);
    let _other = env.auth.claim("p", "j0", "thief", secs(10)).unwrap();
    let k = l.keep_alive(secs(10), ms(20)).unwrap();
    stopped_with(&k, ErrorCode::StaleLease);
}

#[test]
fn a_keeper_reports_a_cancelled_job() {
    let env = Env::with_jobs(1, 3);
    let (_l, k) = keep(&env, ms(100));
    env.auth.cancel("p", "j0").unwrap();
    stopped_with(&k, ErrorCode::Cancelled);
}

#[test]
fn a_keeper_reports_a_clock_rollback() {
    let env = Env::with_jobs(1, 3);
    let (_l, k) = keep(&env, ms(100));
    env.clock.advance(-5_000_000);
    stopped_with(&k, ErrorCode::ClockRollback);
}

#[test]
fn a_keeper_period_is_validated() {
    let env = Env::with_jobs(1, 3);
    let l = env.auth.claim("p", "j0", "w", secs(10)).unwrap();
    for bad in [
        Duration::ZERO,
        Duration::from_secs(10),
        Duration::from_secs(11),
        Duration::from_nanos(1_500),
    ] {
        assert_eq!(
            l.keep_alive(secs(10), bad).unwrap_err().code(),
            ErrorCode::InvalidDuration,
            "{bad:?}"
        );
    }
    l.release().unwrap();
    assert_eq!(
        l.keep_alive(secs(10), Duration::from_secs(1))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseClosed
    );
}

// ---- clock jumps: keepers in processes under libfaketime ----

fn faketime_keeper(offset: &str, db: &std::path::Path, token: &str) -> String {
    let mut c = common::child_under_faketime("keeper_child", offset);
    c.env("TENURE_KEEPER_DB", db);
    common::run_child(c, token)
}

#[test]
fn a_keeper_whose_clock_jumps_is_refused_with_the_jumps_own_error() {
    if common::skip_on_postgres("the clock is the server's") {
        return;
    }
    let env = RealEnv::new();
    env.submit("j");
    let l = env.auth.claim_next("p", "w", secs(3600)).unwrap();
    let token = l.export_token().unwrap();
    let exp = l.expires_us();
    // Two hours behind the mark: every renewal is a rollback; the keeper
    // stops at the first and nothing changes.
    let out = faketime_keeper("-2h", &env.path(), token.expose());
    assert!(out.contains("STOPPED clock_rollback renewals 0"), "{out}");
    assert_eq!(env.auth.job("p", "j").unwrap().expires_us, Some(exp));
    // Two hours ahead: the one-hour lease has expired for that keeper.
    let out = faketime_keeper("+2h", &env.path(), token.expose());
    assert!(out.contains("REFUSED lease_expired"), "{out}");
    assert_eq!(env.auth.job("p", "j").unwrap().expires_us, Some(exp));
}

/// Child entry point of the clock-jump test (run under libfaketime): keep
/// the lease whose token is on stdin alive and print why the keeper stopped.
#[test]
#[ignore = "child-process entry point of a_keeper_whose_clock_jumps_is_refused_with_the_jumps_own_error"]
fn keeper_child() {
    use std::io::Read;
    let db = std::env::var("TENURE_KEEPER_DB").expect("run by the parent test");
    let mut token = String::new();
    std::io::stdin().read_to_string(&mut token).unwrap();
    let a = Authority::open(&db, &Options::new()).unwrap();
    let l = match a.import_lease(&token) {
        Ok(l) => l,
        Err(e) => {
            println!("REFUSED {}", e.code().name());
            return;
        }
    };
    let k = l.keep_alive(secs(3600), ms(20)).unwrap();
    if std::env::var("TENURE_KEEPER_REPORT").is_ok() {
        until(|| k.renewals() > 0 || k.status() != KeeperStatus::Running);
        println!("KEEPING");
    }
    let t0 = Instant::now();
    while k.status() == KeeperStatus::Running {
        assert!(t0.elapsed() < Duration::from_secs(20), "never stopped");
        std::thread::sleep(ms(10));
    }
    println!(
        "STOPPED {} renewals {}",
        k.error().unwrap().code().name(),
        k.renewals()
    );
}

#[test]
fn a_keeper_whose_clock_jumps_back_while_it_runs_stops_with_clock_rollback() {
    if common::skip_on_postgres("the clock is the server's") {
        return;
    }
    use std::io::{BufReader, Write};
    let env = RealEnv::new();
    env.submit("j");
    let l = env.auth.claim_next("p", "w", secs(3600)).unwrap();
    let clock = env.dir.path().join("clock");
    std::fs::write(&clock, "+0\n").unwrap();
    let mut c = common::child_with_clock_file("keeper_child", &clock)
        .env("TENURE_KEEPER_DB", env.path())
        .env("TENURE_KEEPER_REPORT", "1")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    stdin
        .write_all(l.export_token().unwrap().expose().as_bytes())
        .unwrap();
    drop(stdin);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    common::read_until(&mut out, "KEEPING");
    // Renewed by the child: later than the parent's own expiry.
    let renewed = env.auth.job("p", "j").unwrap().expires_us.unwrap();
    assert!(renewed > l.expires_us());
    std::fs::write(&clock, "-2h\n").unwrap();
    let line = common::read_until(&mut out, "STOPPED");
    assert!(line.starts_with("STOPPED clock_rollback"), "{line}");
    assert!(c.wait().unwrap().success());
    // The refused renewal changed nothing: the lease is still the child's
    // last renewal, still held.
    let v = env.auth.job("p", "j").unwrap();
    assert_eq!(v.state, JobState::Claimed);
    assert!(v.expires_us.unwrap() >= renewed);
}
