//! The Rust worker loop (`tenure::worker`): slots, outcomes, reports,
//! graceful stop, release at the end of the grace period, and real worker
//! processes killed with SIGKILL or stopped with SIGTERM.
mod common;
use common::{ms, read_until, secs, RealEnv};
use std::io::BufReader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tenure::worker::{JobResult, Outcome, Report, Worker, WorkerConfig};
use tenure::*;

fn config(slots: usize) -> WorkerConfig {
    WorkerConfig::new("p", "worker-1", Ttl::from_micros(2_000_000).unwrap())
        .slots(slots)
        .wait_timeout(Duration::from_secs(5))
        .grace(Duration::from_secs(5))
}

/// A channel whose sender handlers (`Fn + Sync`) can share.
fn channel<T>() -> (Mutex<mpsc::Sender<T>>, mpsc::Receiver<T>) {
    let (tx, rx) = mpsc::channel();
    (Mutex::new(tx), rx)
}

/// Collect reports until `n` arrived (at most 20 s).
fn collect(rx: &mpsc::Receiver<Report>, n: usize) -> Vec<Report> {
    (0..n)
        .map(|_| rx.recv_timeout(Duration::from_secs(20)).expect("a report"))
        .collect()
}

#[test]
fn slots_run_every_job_once_and_report_each() {
    let env = RealEnv::new();
    let n = 24;
    for i in 0..n {
        env.submit(&format!("j{i:02}"));
    }
    let (tx, rx) = channel();
    let w = Worker::start(
        &env.auth,
        config(4),
        |ctx| {
            assert_eq!(ctx.payload(), ctx.job().as_bytes());
            std::thread::sleep(ms(5));
            Outcome::Complete(vec![Fact::new("len", ctx.payload().len().to_string())])
        },
        move |r| tx.lock().unwrap().send(r).unwrap(),
    )
    .unwrap();
    let reports = collect(&rx, n);
    w.stop();
    let mut jobs: Vec<String> = reports.iter().map(|r| r.job.clone()).collect();
    jobs.sort();
    jobs.dedup();
    assert_eq!(jobs.len(), n);
    for r in &reports {
        assert!(matches!(r.result, JobResult::Completed), "{r:?}");
        assert_eq!(
            env.auth.job("p", &r.job).unwrap().state,
            JobState::Completed
        );
        let facts = env.auth.facts("p", &r.job).unwrap();
        assert!(facts.iter().any(|f| f.key == "len" && f.value == "3"));
    }
    assert!(rx.try_recv().is_err());
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn retry_fail_and_panic_outcomes_are_settled_and_reported() {
    let env = RealEnv::new();
    for j in ["flaky", "broken", "panics"] {
        env.auth
            .submit("p", &JobSpec::new(j, vec![]).max_attempts(2))
            .unwrap();
    }
    let (tx, rx) = channel();
    let w = Worker::start(
        &env.auth,
        config(2),
        |ctx| match (ctx.job(), ctx.attempt()) {
            ("flaky", 1) => Outcome::Retry {
                reason: "try again".into(),
                delay: None,
            },
            ("flaky", _) => Outcome::Complete(vec![]),
            ("broken", _) => Outcome::Fail("cannot".into()),
            _ => panic!("handler bug"),
        },
        move |r| tx.lock().unwrap().send(r).unwrap(),
    )
    .unwrap();
    // flaky: retry, complete; broken: fail; panics: twice (retry, then out of attempts).
    // Each slot reports after its own commit: a retried job's next attempt,
    // on the other slot, may be reported first.
    let mut reports = collect(&rx, 5);
    reports.sort_by_key(|r| r.attempt);
    w.stop();
    let of = |job: &str| -> Vec<String> {
        reports
            .iter()
            .filter(|r| r.job == job)
            .map(|r| format!("{}:{:?}", r.attempt, r.result))
            .collect()
    };
    assert_eq!(of("flaky"), ["1:Failed(Requested)", "2:Completed"]);
    assert_eq!(of("broken"), ["1:Failed(Failed)"]);
    assert_eq!(of("panics"), ["1:Failed(Requested)", "2:Failed(Failed)"]);
    let v = env.auth.job("p", "panics").unwrap();
    assert_eq!(v.last_error.as_deref(), Some("the handler panicked"));
    assert_eq!(env.auth.job("p", "broken").unwrap().state, JobState::Failed);
}

#[test]
fn a_retry_with_a_delay_makes_the_job_due_after_it_and_a_bad_delay_is_reported() {
    let env = RealEnv::new();
    for j in ["later", "bad"] {
        env.auth
            .submit("p", &JobSpec::new(j, vec![]).max_attempts(2))
            .unwrap();
    }
    let (tx, rx) = channel();
    let w = Worker::start(
        &env.auth,
        config(2),
        |ctx| Outcome::Retry {
            reason: "not yet".into(),
            // A whole hour, or a delay no Delay can hold (sub-µs).
            delay: Some(if ctx.job() == "later" {
                Duration::from_secs(3600)
            } else {
                Duration::from_nanos(1500)
            }),
        },
        move |r| tx.lock().unwrap().send(r).unwrap(),
    )
    .unwrap();
    let reports = collect(&rx, 2);
    w.stop();
    let of = |job: &str| reports.iter().find(|r| r.job == job).unwrap();
    assert!(
        matches!(of("later").result, JobResult::Failed(JobState::Requested)),
        "{:?}",
        of("later")
    );
    let v = env.auth.job("p", "later").unwrap();
    let clock = env.auth.clock().unwrap().now_us;
    let due = v.due_us.expect("a due time");
    assert!(
        due > clock + 3_500_000_000 && due <= clock + 3_600_000_000,
        "{v:?}"
    );
    assert_eq!(v.last_error.as_deref(), Some("not yet"));
    // The invalid delay is the worker's reported error; the job is not failed.
    match &of("bad").result {
        JobResult::Lost(e) => assert_eq!(e.code(), ErrorCode::InvalidDuration),
        r => panic!("{r:?}"),
    }
    assert_eq!(env.auth.job("p", "bad").unwrap().due_us, None);
}

#[test]
fn a_stop_lets_running_handlers_finish_within_the_grace_period() {
    let env = RealEnv::new();
    env.submit("j");
    let (tx, rx) = channel();
    let (started_tx, started) = channel();
    let w = Worker::start(
        &env.auth,
        config(2),
        move |ctx| {
            started_tx.lock().unwrap().send(()).unwrap();
            while !ctx.stopping() {
                std::thread::sleep(ms(5));
            }
            std::thread::sleep(ms(100));
            Outcome::Complete(vec![])
        },
        move |r| tx.lock().unwrap().send(r).unwrap(),
    )
    .unwrap();
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    let t0 = Instant::now();
    w.stop();
    assert!(t0.elapsed() < Duration::from_secs(5));
    let r = collect(&rx, 1).pop().unwrap();
    assert!(matches!(r.result, JobResult::Completed), "{r:?}");
    // No new job is taken after the stop.
    env.submit("late");
    std::thread::sleep(ms(200));
    assert_eq!(
        env.auth.job("p", "late").unwrap().state,
        JobState::Requested
    );
}

#[test]
fn at_the_end_of_the_grace_period_held_leases_are_released() {
    let env = RealEnv::new();
    env.submit("j");
    let (tx, rx) = channel();
    let release = Arc::new(AtomicBool::new(false));
    let r2 = release.clone();
    let (started_tx, started) = channel();
    let w = Worker::start(
        &env.auth,
        config(1).grace(ms(300)),
        move |_| {
            started_tx.lock().unwrap().send(()).unwrap();
            // Ignores the stop.
            while !r2.load(Ordering::SeqCst) {
                std::thread::sleep(ms(5));
            }
            Outcome::Complete(vec![])
        },
        move |r| tx.lock().unwrap().send(r).unwrap(),
    )
    .unwrap();
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    let t0 = Instant::now();
    w.stop();
    let took = t0.elapsed();
    assert!(took >= ms(300) && took < Duration::from_secs(5), "{took:?}");
    let r = collect(&rx, 1).pop().unwrap();
    assert!(
        matches!(r.result, JobResult::Released(JobState::Requested)),
        "{r:?}"
    );
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Requested);
    // The late handler's outcome is not applied and not reported again.
    release.store(true, Ordering::SeqCst);
    std::thread::sleep(ms(200));
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Requested);
    assert!(rx.try_recv().is_err());
}

#[test]
fn a_lost_lease_is_reported_and_the_handler_can_see_it() {
    let env = RealEnv::new();
    env.submit("j");
    let other = env.reopen();
    let (tx, rx) = channel();
    let w = Worker::start(
        &env.auth,
        config(1).renew_every(ms(50)),
        move |ctx| {
            other.cancel("p", "j").unwrap();
            let t0 = Instant::now();
            while ctx.lease_lost().is_none() {
                assert!(t0.elapsed() < Duration::from_secs(10));
                std::thread::sleep(ms(5));
            }
            assert_eq!(ctx.lease_lost().unwrap().code(), ErrorCode::Cancelled);
            Outcome::Complete(vec![])
        },
        move |r| tx.lock().unwrap().send(r).unwrap(),
    )
    .unwrap();
    let r = collect(&rx, 1).pop().unwrap();
    w.stop();
    match r.result {
        JobResult::Lost(e) => assert_eq!(e.code(), ErrorCode::Cancelled),
        other => panic!("{other:?}"),
    }
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Cancelled);
}

#[test]
fn a_worker_config_is_validated() {
    let env = RealEnv::new();
    let bad = [
        config(0),
        config(worker::MAX_SLOTS + 1),
        config(1).renew_every(Duration::from_secs(2)),
        config(1).wait_timeout(Duration::ZERO),
        WorkerConfig::new("bad id!", "w", secs(10)),
        WorkerConfig::new("p", "", secs(10)),
    ];
    for c in bad {
        assert!(Worker::start(&env.auth, c, |_| Outcome::Complete(vec![]), |_| {}).is_err());
    }
}

// ---- worker processes ----

/// A worker process on `db` whose two slots are running `j0` and `j1`.
fn worker_holding_two(
    db: &std::path::Path,
) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let (c, mut out) = worker_process(db);
    read_until(&mut out, "RUNNING");
    read_until(&mut out, "RUNNING");
    (c, out)
}

fn worker_process(
    db: &std::path::Path,
) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut c = common::child("worker_child")
        .env("TENURE_WORKER_DB", db)
        .spawn()
        .unwrap();
    let out = BufReader::new(c.stdout.take().unwrap());
    (c, out)
}

#[test]
fn a_worker_killed_while_holding_leases_loses_nothing() {
    let env = RealEnv::new();
    for i in 0..2 {
        env.submit(&format!("j{i}"));
    }
    let (mut c, _out) = worker_holding_two(&env.path());
    unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
    c.wait().unwrap();
    // Both jobs come back after their leases expire (TTL 1 s).
    let mut got = Vec::new();
    for _ in 0..2 {
        let l = env
            .auth
            .claim_next_wait("p", "rescuer", secs(60), Duration::from_secs(20), None)
            .unwrap();
        assert_eq!(l.attempt(), 2);
        got.push(l.job().to_owned());
        l.complete(&[]).unwrap();
    }
    got.sort();
    assert_eq!(got, ["j0", "j1"]);
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn a_worker_killed_while_waiting_loses_nothing() {
    let env = RealEnv::new();
    let events = env.event_count();
    let (mut c, mut out) = worker_process(&env.path());
    read_until(&mut out, "STARTED");
    std::thread::sleep(ms(300));
    unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
    c.wait().unwrap();
    assert_eq!(env.event_count(), events);
    env.submit("j");
    assert_eq!(
        env.auth
            .claim_next_wait("p", "w", secs(60), Duration::from_secs(10), None)
            .unwrap()
            .attempt(),
        1
    );
}

#[test]
fn a_sigtermed_worker_releases_what_it_holds_within_the_grace_period() {
    let env = RealEnv::new();
    for i in 0..2 {
        env.submit(&format!("j{i}"));
    }
    let (mut c, mut out) = worker_holding_two(&env.path());
    let t0 = Instant::now();
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = c.wait().unwrap();
    let took = t0.elapsed();
    assert!(status.success(), "{rest}");
    // Grace 500 ms; the leases (TTL 1 s, kept alive) were released, not left to expire.
    assert!(
        took >= ms(500) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(rest.matches("REPORT").count(), 2, "{rest}");
    assert_eq!(rest.matches("Released(Requested)").count(), 2, "{rest}");
    for j in ["j0", "j1"] {
        assert_eq!(env.auth.job("p", j).unwrap().state, JobState::Requested);
    }
    let released = env
        .auth
        .events(0, 1000)
        .unwrap()
        .iter()
        .filter(|e| e.kind == EventKind::Released)
        .count();
    assert_eq!(released, 2);
}

/// Child entry point: a worker process (2 slots, TTL 1 s, grace 500 ms)
/// whose handler never finishes on its own; SIGTERM stops it.
#[test]
#[ignore = "child-process entry point of the worker process tests"]
fn worker_child() {
    let db = std::env::var("TENURE_WORKER_DB").expect("run by a parent test");
    let a = Authority::open(&db, &Options::new()).unwrap();
    let cfg = WorkerConfig::new("p", "child", Ttl::from_micros(1_000_000).unwrap())
        .slots(2)
        .renew_every(ms(200))
        .grace(ms(500));
    let w = Worker::start(
        &a,
        cfg,
        |ctx| {
            println!("RUNNING {}", ctx.job());
            std::thread::sleep(Duration::from_secs(60));
            Outcome::Complete(vec![])
        },
        |r| println!("REPORT {} {:?}", r.job, r.result),
    )
    .unwrap();
    worker::stop_on_signals(w.stop_handle()).unwrap();
    println!("STARTED");
    w.join();
    println!("DONE");
}

#[test]
fn dropping_a_worker_stops_it() {
    let env = RealEnv::new();
    let w = Worker::start(&env.auth, config(3), |_| Outcome::Complete(vec![]), |_| {}).unwrap();
    std::thread::sleep(ms(200));
    let t0 = Instant::now();
    drop(w);
    assert!(t0.elapsed() < Duration::from_secs(5));
    env.submit("j");
    std::thread::sleep(ms(300));
    assert_eq!(env.auth.job("p", "j").unwrap().state, JobState::Requested);
}
