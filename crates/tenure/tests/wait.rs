//! Waiting for work (`Authority::claim_next_wait`): wakes on commits of
//! other threads and processes, on lease expiry, on cancellation, and ends
//! at its timeout; libfaketime runs the clock-jump cases in real processes.
mod common;
use common::{ms, read_until, secs, RealEnv};
use std::io::BufReader;
use std::time::{Duration, Instant};
use tenure::*;

const LONG: Duration = Duration::from_secs(30);

/// Run `f` on another thread after `delay`.
fn later(delay: Duration, f: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        f()
    })
}

#[test]
fn a_waiter_wakes_when_another_thread_submits() {
    let env = RealEnv::new();
    let other = env.reopen();
    let t0 = Instant::now();
    let h = later(ms(200), move || {
        other
            .submit("p", &JobSpec::new("j", b"x".to_vec()))
            .unwrap();
    });
    let l = env
        .auth
        .claim_next_wait("p", "w", secs(60), LONG, None)
        .unwrap();
    h.join().unwrap();
    assert_eq!(l.job(), "j");
    assert!(t0.elapsed() >= ms(200));
    // Woken by the commit, not by the end of the wait.
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Claimed);
}

#[test]
fn a_waiter_wakes_when_a_lease_is_released_or_failed_for_retry() {
    let env = RealEnv::new();
    env.auth
        .submit("p", &JobSpec::new("j", vec![]).max_attempts(10))
        .unwrap();
    for how in ["release", "fail"] {
        let held = env.auth.claim_next("p", "holder", secs(600)).unwrap();
        let t0 = Instant::now();
        let h = later(ms(200), move || match how {
            "release" => {
                held.release().unwrap();
            }
            _ => {
                held.fail("try again", false).unwrap();
            }
        });
        let l = env
            .auth
            .claim_next_wait("p", "waiter", secs(600), LONG, None)
            .unwrap();
        h.join().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10), "{how}");
        assert_eq!(l.holder(), "waiter");
        l.release().unwrap();
    }
}

#[test]
fn a_permanent_failure_or_a_cancel_does_not_end_a_wait() {
    let env = RealEnv::new();
    env.submit("a");
    env.submit("b");
    let a = env.auth.claim("p", "a", "holder", secs(600)).unwrap();
    let b = env.auth.claim("p", "b", "holder", secs(600)).unwrap();
    let other = env.reopen();
    let h = later(ms(100), move || {
        a.fail("broken", true).unwrap();
        other.cancel("p", "b").unwrap();
        drop(b);
    });
    let err = env
        .auth
        .claim_next_wait("p", "waiter", secs(60), ms(1500), None)
        .unwrap_err();
    h.join().unwrap();
    assert_eq!(err.code(), ErrorCode::NoJobAvailable);
}

#[test]
fn a_waiter_wakes_when_a_held_lease_expires() {
    let env = RealEnv::new();
    env.submit("j");
    let first = env
        .auth
        .claim_next("p", "holder", Ttl::from_micros(800_000).unwrap())
        .unwrap();
    let t0 = Instant::now();
    let l = env
        .auth
        .claim_next_wait("p", "waiter", secs(60), LONG, None)
        .unwrap();
    let waited = t0.elapsed();
    assert_eq!(l.job(), "j");
    assert_eq!(l.attempt(), 2);
    assert!(l.claim_id() != first.claim_id());
    // Not before the expiry; well before the timeout (the timed wake).
    assert!(waited >= ms(700), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert_eq!(
        first.renew(secs(1)).unwrap_err().code(),
        ErrorCode::StaleLease
    );
}

#[test]
fn a_waiter_wakes_when_a_parked_job_becomes_due() {
    let env = RealEnv::new();
    env.auth
        .submit(
            "p",
            &JobSpec::new("later", vec![]).not_before(Delay::from_micros(800_000).unwrap()),
        )
        .unwrap();
    let due = env.auth.job("p", "later").unwrap().due_us.unwrap();
    assert_eq!(env.auth.next_due_us("p").unwrap(), Some(due));
    let t0 = Instant::now();
    let l = env
        .auth
        .claim_next_wait("p", "waiter", secs(60), LONG, None)
        .unwrap();
    let waited = t0.elapsed();
    assert_eq!(l.job(), "later");
    // Not before the due time on the authority's clock (the claim's time is
    // its expiry less the TTL); well before the timeout (the timed wake).
    let claimed_us = l.expires_us() - 60_000_000;
    assert!(claimed_us >= due, "claimed at {claimed_us}, due at {due}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert_eq!(env.auth.next_due_us("p").unwrap(), Some(l.expires_us()));
}

#[test]
fn a_wait_ends_at_its_timeout_with_no_job_available() {
    let env = RealEnv::new();
    let events = env.event_count();
    let t0 = Instant::now();
    let err = env
        .auth
        .claim_next_wait("p", "w", secs(60), ms(300), None)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoJobAvailable);
    assert!(t0.elapsed() >= ms(300));
    assert!(!err.to_string().contains("cancelled"));
    // Zero makes exactly one attempt.
    let err = env
        .auth
        .claim_next_wait("p", "w", secs(60), Duration::ZERO, None)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoJobAvailable);
    assert_eq!(env.event_count(), events);
}

#[test]
fn a_wait_timeout_is_validated() {
    let env = RealEnv::new();
    env.submit("j");
    for bad in [Duration::from_secs(86_401), Duration::from_nanos(1_500)] {
        let err = env
            .auth
            .claim_next_wait("p", "w", secs(60), bad, None)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidDuration, "{bad:?}");
    }
    for (p, h) in [("bad id!", "w"), ("p", "")] {
        let err = env
            .auth
            .claim_next_wait(p, h, secs(60), ms(10), None)
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
    }
    let err = env
        .auth
        .claim_next_wait("missing", "w", secs(60), LONG, None)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    // Nothing was claimed by the refused calls.
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Requested);
}

#[test]
fn a_cancel_handle_ends_a_wait_at_once_and_changes_nothing() {
    let env = RealEnv::new();
    let events = env.event_count();
    let cancel = WaitCancel::new();
    let c2 = cancel.clone();
    let t0 = Instant::now();
    let h = later(ms(200), move || c2.cancel());
    let err = env
        .auth
        .claim_next_wait("p", "w", secs(60), LONG, Some(&cancel))
        .unwrap_err();
    h.join().unwrap();
    assert_eq!(err.code(), ErrorCode::NoJobAvailable);
    assert!(err.to_string().contains("cancelled"), "{err}");
    assert!(cancel.is_cancelled());
    assert!(t0.elapsed() < Duration::from_secs(10));
    // A cancelled handle ends later waits at once, even with work there.
    env.submit("j");
    let err = env
        .auth
        .claim_next_wait("p", "w", secs(60), LONG, Some(&cancel))
        .unwrap_err();
    assert!(err.to_string().contains("cancelled"));
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Requested);
    assert_eq!(env.event_count(), events + 1);
}

#[test]
fn cancel_waits_ends_every_wait_on_the_authority_and_its_clones() {
    let env = RealEnv::new();
    let clone = env.auth.clone();
    let waiters: Vec<_> = (0..3)
        .map(|i| {
            let a = clone.clone();
            std::thread::spawn(move || {
                a.claim_next_wait("p", &format!("w{i}"), secs(60), LONG, None)
                    .unwrap_err()
            })
        })
        .collect();
    std::thread::sleep(ms(300));
    let t0 = Instant::now();
    env.auth.cancel_waits();
    for w in waiters {
        let e = w.join().unwrap();
        assert!(e.to_string().contains("cancelled"), "{e}");
    }
    assert!(t0.elapsed() < Duration::from_secs(10));
    // Later waits are not affected.
    env.submit("j");
    let l = env
        .auth
        .claim_next_wait("p", "w", secs(60), LONG, None)
        .unwrap();
    assert_eq!(l.job(), "j");
}

#[test]
fn many_waiters_each_get_one_job_exactly_once() {
    let env = RealEnv::new();
    let n = 6;
    let waiters: Vec<_> = (0..n)
        .map(|i| {
            let a = if i % 2 == 0 {
                env.auth.clone()
            } else {
                env.reopen()
            };
            std::thread::spawn(move || {
                a.claim_next_wait("p", &format!("w{i}"), secs(60), LONG, None)
                    .unwrap()
                    .job()
                    .to_owned()
            })
        })
        .collect();
    std::thread::sleep(ms(200));
    for i in 0..n {
        env.submit(&format!("j{i}"));
    }
    let mut got: Vec<String> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
    got.sort();
    let want: Vec<String> = (0..n).map(|i| format!("j{i}")).collect();
    assert_eq!(got, want);
    assert!(env.auth.check().unwrap().ok());
}

// ---- other processes ----

fn child(mode: &str, db: &std::path::Path) -> std::process::Command {
    let mut c = common::child("wait_child");
    c.env("TENURE_WAIT_MODE", mode).env("TENURE_WAIT_DB", db);
    c
}

#[test]
fn a_waiter_in_another_process_wakes_on_a_submit() {
    let env = RealEnv::new();
    let mut c = child("wait", &env.path()).spawn().unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    read_until(&mut out, "WAITING");
    std::thread::sleep(ms(200));
    let t0 = Instant::now();
    env.submit("j");
    let line = read_until(&mut out, "CLAIMED");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(line, "CLAIMED j");
    assert!(c.wait().unwrap().success());
    assert_eq!(
        env.auth.job("p", "j").unwrap().holder.as_deref(),
        Some("child")
    );
}

#[test]
fn a_waiter_killed_while_waiting_changes_nothing() {
    let env = RealEnv::new();
    let events = env.event_count();
    let mut c = child("wait", &env.path()).spawn().unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    read_until(&mut out, "WAITING");
    std::thread::sleep(ms(300));
    c.kill().unwrap();
    c.wait().unwrap();
    assert_eq!(env.event_count(), events);
    // The store and its doorbell still work for everyone else.
    env.submit("j");
    let l = env
        .auth
        .claim_next_wait("p", "w", secs(60), LONG, None)
        .unwrap();
    assert_eq!(l.job(), "j");
    assert!(env.auth.check().unwrap().ok());
}

/// Child entry point of the cross-process tests.
#[test]
#[ignore = "child-process entry point of the cross-process wait tests"]
fn wait_child() {
    let db = std::env::var("TENURE_WAIT_DB").expect("run by a parent test");
    let mode = std::env::var("TENURE_WAIT_MODE").unwrap();
    let a = Authority::open(&db, &Options::new()).unwrap();
    match mode.as_str() {
        "wait" => {
            println!("WAITING");
            let l = a
                .claim_next_wait("p", "child", secs(60), LONG, None)
                .unwrap();
            println!("CLAIMED {}", l.job());
        }
        // Under libfaketime: one wait, its outcome printed.
        "skewed" => match a.claim_next_wait("p", "skewed", secs(60), ms(2000), None) {
            Ok(l) => println!("CLAIMED {} attempt {}", l.job(), l.attempt()),
            Err(e) => println!("REFUSED {}", e.code().name()),
        },
        // Its clock jumps while it waits (see the parent test).
        "jump" => {
            println!("WAITING");
            let l = a
                .claim_next_wait("p", "jumper", secs(60), LONG, None)
                .unwrap();
            println!("CLAIMED {} attempt {}", l.job(), l.attempt());
        }
        other => panic!("unknown mode {other}"),
    }
}

fn faketime(offset: &str, db: &std::path::Path) -> String {
    let mut c = common::child_under_faketime("wait_child", offset);
    c.env("TENURE_WAIT_MODE", "skewed")
        .env("TENURE_WAIT_DB", db);
    common::run_child(c, "")
}

#[test]
fn clock_jumps_under_libfaketime_a_waiter_behind_is_refused_one_ahead_claims_the_expired() {
    // PostgreSQL's clock is the server's: a skewed worker host changes
    // nothing there (tests/pg_backend.rs covers that).
    if common::skip_on_postgres("the clock is the server's") {
        return;
    }
    let env = RealEnv::new();
    env.submit("j");
    let held = env.auth.claim_next("p", "holder", secs(3600)).unwrap();
    let events = env.event_count();
    // Behind the high-water mark: refused at once, nothing changes.
    let out = faketime("-2h", &env.path());
    assert!(out.contains("REFUSED clock_rollback"), "{out}");
    assert_eq!(env.event_count(), events);
    // Ahead by two hours: the one-hour lease has expired for this waiter,
    // which claims it at once (attempt 2). The mark is now two hours ahead:
    // this process's guarded calls are refused until real time gets there.
    let out = faketime("+2h", &env.path());
    assert!(out.contains("CLAIMED j attempt 2"), "{out}");
    let v = env.auth.job("p", "j").unwrap();
    assert_eq!((v.holder.as_deref(), v.attempts), (Some("skewed"), 2));
    assert_eq!(
        held.renew(secs(60)).unwrap_err().code(),
        ErrorCode::ClockRollback
    );
}

#[test]
fn without_the_queue_file_waiters_fall_back_to_bounded_polling() {
    if common::skip_on_postgres("the queue file is SQLite's") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    // A directory where the queue file would be: it cannot be created.
    std::fs::create_dir(dir.path().join("store.db-tenure-queue")).unwrap();
    let a = Authority::open(&db, &common::options()).unwrap();
    a.create_production("p").unwrap();
    let other = Authority::open(&db, &common::options()).unwrap();
    let t0 = Instant::now();
    let h = later(ms(200), move || {
        other.submit("p", &JobSpec::new("j", vec![])).unwrap();
    });
    let l = a.claim_next_wait("p", "w", secs(60), LONG, None).unwrap();
    h.join().unwrap();
    assert_eq!(l.job(), "j");
    assert!(t0.elapsed() < Duration::from_secs(10));
    // Cancellation still ends a polling wait at once.
    let cancel = WaitCancel::new();
    let c2 = cancel.clone();
    let h = later(ms(100), move || c2.cancel());
    let err = a
        .claim_next_wait("p", "w", secs(60), LONG, Some(&cancel))
        .unwrap_err();
    h.join().unwrap();
    assert!(err.to_string().contains("cancelled"));
}

#[test]
fn a_waiter_survives_a_lost_listen_connection() {
    let Some(db) = common::pg::fresh_database() else {
        eprintln!("skipped: PostgreSQL only");
        return;
    };
    let a = Authority::open(db.url.as_str(), &common::options()).unwrap();
    a.create_production("p").unwrap();
    // The first wait opens the listening connection.
    a.claim_next_wait("p", "w", secs(60), ms(10), None)
        .unwrap_err();
    let killed: i64 = common::pg::client(&db.url)
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND query LIKE 'LISTEN tenure_work%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(killed, 1);
    let other = Authority::open(db.url.as_str(), &common::options()).unwrap();
    let h = later(ms(2500), move || {
        other.submit("p", &JobSpec::new("j", vec![])).unwrap();
    });
    let t0 = Instant::now();
    let l = a.claim_next_wait("p", "w", secs(60), LONG, None).unwrap();
    h.join().unwrap();
    assert_eq!(l.job(), "j");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_clock_that_jumps_forward_during_a_wait_expires_the_lease_for_the_waiter() {
    if common::skip_on_postgres("the clock is the server's") {
        return;
    }
    let env = RealEnv::new();
    env.submit("j");
    let _held = env.auth.claim_next("p", "holder", secs(3600)).unwrap();
    let clock = env.dir.path().join("clock");
    std::fs::write(&clock, "+0\n").unwrap();
    let mut c = common::child_with_clock_file("wait_child", &clock)
        .env("TENURE_WAIT_MODE", "jump")
        .env("TENURE_WAIT_DB", env.path())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    read_until(&mut out, "WAITING");
    std::thread::sleep(ms(500));
    assert_eq!(
        env.auth.job("p", "j").unwrap().holder.as_deref(),
        Some("holder")
    );
    // Two hours later by the waiter's clock the one-hour lease has expired:
    // it notices within its next look at the expiries, without a commit.
    let t0 = Instant::now();
    std::fs::write(&clock, "+2h\n").unwrap();
    let line = read_until(&mut out, "CLAIMED");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(line, "CLAIMED j attempt 2");
    assert!(c.wait().unwrap().success());
}
