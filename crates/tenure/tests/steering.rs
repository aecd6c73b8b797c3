//! Requeue, progress checkpoints and claims across productions
//! (docs/design.md, "Requeue", "Progress checkpoints", "Claims across
//! productions").

mod common;
use common::*;
use tenure::*;

fn kinds(a: &Authority, job: &str) -> Vec<EventKind> {
    a.events(0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.job.as_deref() == Some(job))
        .map(|e| e.kind)
        .collect()
}

#[test]
fn requeue_of_a_failed_job_gives_a_fresh_budget_and_a_new_claim() {
    let env = Env::with_jobs(1, 2);
    let a = &env.auth;
    let old = a.claim("p", "j0", "w1", secs(10)).unwrap();
    let token = old.export_token().unwrap();
    assert_eq!(old.fail("broken input", true).unwrap(), JobState::Failed);
    let before = kinds(a, "j0");
    a.requeue("p", "j0", None, Delay::ZERO).unwrap();
    let v = a.job("p", "j0").unwrap();
    assert_eq!(v.state, JobState::Requested);
    assert_eq!((v.attempts, v.max_attempts), (0, 2));
    assert_eq!(v.claim_id, None);
    assert_eq!(v.last_error.as_deref(), Some("broken input"));
    // The earlier attempt's events stay; one more records the requeue.
    let after = kinds(a, "j0");
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(after[before.len()..], [EventKind::Requeued]);
    let new = a.claim_next("p", "w2", secs(10)).unwrap();
    assert_ne!(new.claim_id(), old.claim_id());
    assert_eq!(new.attempt(), 1);
    // The old lease's token stays stale.
    assert_eq!(
        a.import_lease(token.expose()).unwrap_err().code(),
        ErrorCode::StaleLease
    );
    new.complete(&[Fact::new("out", "ok")]).unwrap();
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Completed);
    assert!(a.check().unwrap().ok(), "{:?}", a.check().unwrap());
}

#[test]
fn requeue_of_an_expired_last_attempt_makes_its_lease_stale() {
    let env = Env::with_jobs(1, 1);
    let a = &env.auth;
    let old = a.claim_next("p", "w1", secs(10)).unwrap();
    env.clock.advance(11_000_000);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Failed);
    a.requeue("p", "j0", Some(1), Delay::ZERO).unwrap();
    assert_eq!(
        old.renew(secs(5)).unwrap_err().code(),
        ErrorCode::StaleLease
    );
    assert_eq!(
        old.checkpoint(b"x").unwrap_err().code(),
        ErrorCode::StaleLease
    );
    let new = a.claim_next("p", "w2", secs(10)).unwrap();
    assert_eq!(new.attempt(), 1);
    assert_eq!(old.complete(&[]).unwrap_err().code(), ErrorCode::StaleLease);
    new.complete(&[]).unwrap();
    assert!(a.check().unwrap().ok(), "{:?}", a.check().unwrap());
}

#[test]
fn requeue_with_extra_attempts_and_a_delay() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    a.claim_next("p", "w", secs(10))
        .unwrap()
        .fail("boom", true)
        .unwrap();
    a.requeue("p", "j0", Some(1), Delay::from_micros(5_000_000).unwrap())
        .unwrap();
    let v = a.job("p", "j0").unwrap();
    assert_eq!((v.attempts, v.max_attempts), (2, 3));
    assert_eq!(v.due_us, Some(T0 + 5_000_000));
    assert_eq!(
        a.claim_next("p", "w", secs(10)).unwrap_err().code(),
        ErrorCode::NoJobAvailable
    );
    env.clock.advance(5_000_000);
    let l = a.claim_next("p", "w", secs(10)).unwrap();
    assert_eq!(l.attempt(), 3);
    // One attempt was given: a retryable failure now ends the job.
    assert_eq!(l.fail("again", false).unwrap(), JobState::Failed);
    // More than max_attempts extra gives max_attempts.
    a.requeue("p", "j0", Some(1000), Delay::ZERO).unwrap();
    assert_eq!(a.job("p", "j0").unwrap().attempts, 0);
}

#[test]
fn requeue_refusals_change_nothing() {
    let env = Env::with_jobs(5, 3);
    let a = &env.auth;
    let held = a.claim("p", "j1", "w", secs(10)).unwrap();
    a.claim("p", "j2", "w", secs(1)).unwrap();
    a.claim("p", "j3", "w", secs(10))
        .unwrap()
        .complete(&[])
        .unwrap();
    a.cancel("p", "j4").unwrap();
    env.clock.advance(2_000_000);
    let events = a.events(0, 10_000).unwrap().len();
    let z = Delay::ZERO;
    let code = |r: Result<()>| r.unwrap_err().code();
    assert_eq!(code(a.requeue("p", "j0", None, z)), ErrorCode::JobLive);
    assert_eq!(code(a.requeue("p", "j1", None, z)), ErrorCode::JobLive);
    assert_eq!(code(a.requeue("p", "j2", None, z)), ErrorCode::JobLive);
    assert_eq!(code(a.requeue("p", "j3", None, z)), ErrorCode::JobTerminal);
    assert_eq!(code(a.requeue("p", "nope", None, z)), ErrorCode::NotFound);
    assert_eq!(code(a.requeue("nope", "j0", None, z)), ErrorCode::NotFound);
    assert_eq!(
        code(a.requeue("p", "j4", Some(0), z)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.requeue("p", "j4", Some(1001), z)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.requeue("p", "", None, z)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        a.requeue_all("p", None, z, 0).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        a.requeue_all("p", None, z, 1001).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(a.events(0, 10_000).unwrap().len(), events);
    assert_eq!(a.job("p", "j1").unwrap().claim_id, Some(held.claim_id()));
    // A cancelled job of a cancelled production stays cancelled.
    a.cancel_production("p").unwrap();
    assert_eq!(code(a.requeue("p", "j4", None, z)), ErrorCode::Cancelled);
    assert_eq!(
        a.requeue_all("p", None, z, 10).unwrap_err().code(),
        ErrorCode::Cancelled
    );
}

#[test]
fn requeue_all_works_in_bounded_batches() {
    let env = Env::with_jobs(8, 1);
    let a = &env.auth;
    for _ in 0..5 {
        a.claim_next("p", "w", secs(10))
            .unwrap()
            .fail("x", false)
            .unwrap();
    }
    a.cancel("p", "j5").unwrap();
    // j6 expires on its only attempt; j7 stays waiting.
    a.claim("p", "j6", "w", secs(1)).unwrap();
    env.clock.advance(2_000_000);
    let z = Delay::ZERO;
    assert_eq!(a.requeue_all("p", None, z, 3).unwrap(), (3, true));
    assert_eq!(a.requeue_all("p", None, z, 3).unwrap(), (3, true));
    assert_eq!(a.requeue_all("p", None, z, 3).unwrap(), (1, false));
    assert_eq!(a.requeue_all("p", None, z, 3).unwrap(), (0, false));
    let jobs = a.jobs("p", &ListQuery::default()).unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Requested));
    assert_eq!(a.claim_next_many("p", "w", secs(10), 100).unwrap().len(), 8);
    assert!(a.check().unwrap().ok(), "{:?}", a.check().unwrap());
}

#[test]
fn checkpoint_is_kept_for_the_next_attempt_and_refused_to_other_leases() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let first = a.claim_next("p", "w1", secs(10)).unwrap();
    assert_eq!(first.progress().unwrap(), None);
    first.checkpoint(b"offset=10").unwrap();
    assert_eq!(
        a.job("p", "j0").unwrap().progress.as_deref(),
        Some(&b"offset=10"[..])
    );
    env.clock.advance(1_000_000);
    first.renew_checkpoint(secs(10), b"offset=20").unwrap();
    assert_eq!(first.expires_us(), T0 + 11_000_000);
    // Bad input changes nothing.
    let big = vec![7u8; validate::MAX_PROGRESS + 1];
    assert_eq!(
        first.checkpoint(&big).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    first.checkpoint(&big[..validate::MAX_PROGRESS]).unwrap();
    first.checkpoint(b"offset=20").unwrap();
    // Expired: refused like every transition, the checkpoint stays.
    env.clock.advance(20_000_000);
    assert_eq!(
        first.checkpoint(b"offset=99").unwrap_err().code(),
        ErrorCode::LeaseExpired
    );
    assert_eq!(
        first
            .renew_checkpoint(secs(10), b"offset=99")
            .unwrap_err()
            .code(),
        ErrorCode::LeaseExpired
    );
    // The next attempt reads the last checkpoint.
    let second = a.claim_next("p", "w2", secs(10)).unwrap();
    assert_eq!(
        second.progress().unwrap().as_deref(),
        Some(&b"offset=20"[..])
    );
    assert_eq!(
        first.checkpoint(b"offset=99").unwrap_err().code(),
        ErrorCode::StaleLease
    );
    second.checkpoint(b"").unwrap();
    second.release().unwrap();
    assert_eq!(
        second.checkpoint(b"offset=99").unwrap_err().code(),
        ErrorCode::LeaseClosed
    );
    assert_eq!(
        a.job("p", "j0").unwrap().progress.as_deref(),
        Some(&b""[..])
    );
    let ks = kinds(a, "j0");
    assert_eq!(
        ks.iter().filter(|k| **k == EventKind::Checkpointed).count(),
        4
    );
    // Never in a listing or the event log.
    assert!(a.jobs("p", &ListQuery::default()).unwrap()[0]
        .progress
        .is_none());
    assert!(a
        .events(0, 1000)
        .unwrap()
        .iter()
        .all(|e| !e.detail.contains("offset")));
    assert!(a.check().unwrap().ok(), "{:?}", a.check().unwrap());
}

fn productions(a: &Authority, sizes: &[(&str, usize)]) {
    for (p, n) in sizes {
        a.create_production(p).unwrap();
        let specs: Vec<JobSpec> = (0..*n)
            .map(|i| JobSpec::new(format!("{p}-{i}"), b"x".to_vec()))
            .collect();
        for chunk in specs.chunks(1000) {
            a.submit_many(p, chunk).unwrap();
        }
    }
}

#[test]
fn claims_across_productions_rotate() {
    let env = Env::new();
    let a = &env.auth;
    productions(a, &[("a", 3), ("b", 1), ("c", 3)]);
    let list = ["a", "b", "c"];
    let served: Vec<String> = (0..7)
        .map(|_| {
            a.claim_next_across(&list, "w", secs(10))
                .unwrap()
                .production()
                .to_owned()
        })
        .collect();
    assert_eq!(served, ["a", "b", "c", "a", "c", "a", "c"]);
    assert_eq!(
        a.claim_next_across(&list, "w", secs(10))
            .unwrap_err()
            .code(),
        ErrorCode::NoJobAvailable
    );
    // A batch: each production asked for its share, in rounds.
    productions(a, &[("x", 10), ("y", 1), ("z", 10)]);
    let got: Vec<String> = a
        .claim_next_many_across(&["x", "y", "z"], "w", secs(10), 5)
        .unwrap()
        .iter()
        .map(|l| l.production().to_owned())
        .collect();
    assert_eq!(got, ["x", "x", "y", "z", "z"]);
    // Bad input.
    let code = |l: &[&str]| a.claim_next_across(l, "w", secs(10)).unwrap_err().code();
    assert_eq!(code(&[]), ErrorCode::InvalidArgument);
    assert_eq!(code(&["a", "a"]), ErrorCode::InvalidArgument);
    assert_eq!(code(&["a", "missing"]), ErrorCode::NotFound);
    let many: Vec<String> = (0..65).map(|i| format!("p{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(code(&many), ErrorCode::InvalidArgument);
    assert_eq!(
        a.claim_next_many_across(&["x"], "w", secs(10), 0)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn fair_claims_serve_a_small_production_among_busy_ones() {
    let env = Env::new();
    productions(&env.auth, &[("big", 10_000), ("mid", 100), ("small", 10)]);
    let list = ["big", "mid", "small"];
    std::thread::scope(|s| {
        for w in 0..4 {
            let auth = env.reopen();
            s.spawn(move || {
                let holder = format!("w{w}");
                loop {
                    match auth.claim_next_many_across(&list, &holder, secs(600), 1) {
                        Ok(ls) if ls.is_empty() => break,
                        Ok(ls) => {
                            let refs: Vec<(&Lease, &[Fact])> =
                                ls.iter().map(|l| (l, &[][..])).collect();
                            for r in auth.complete_many(&refs).unwrap() {
                                r.unwrap();
                            }
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    let mut claims: Vec<String> = Vec::new();
    let mut after = 0;
    loop {
        let evs = env.auth.events(after, 5_000).unwrap();
        let Some(last) = evs.last() else { break };
        after = last.seq;
        claims.extend(
            evs.into_iter()
                .filter(|e| e.kind == EventKind::Claimed)
                .map(|e| e.production),
        );
    }
    assert_eq!(claims.len(), 10_110);
    let small_at: Vec<usize> = claims
        .iter()
        .enumerate()
        .filter(|(_, p)| *p == "small")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(small_at.len(), 10);
    assert!(small_at[9] < 40, "small served at {small_at:?}");
}

#[test]
fn wait_across_productions_wakes_on_any_of_them() {
    let env = RealEnv::new();
    let a = &env.auth;
    a.create_production("x").unwrap();
    a.create_production("y").unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            a.claim_next_wait_across(
                &["x", "y"],
                "w",
                secs(10),
                std::time::Duration::from_secs(20),
                None,
            )
        });
        std::thread::sleep(ms(200));
        a.submit("y", &JobSpec::new("late", b"1".to_vec())).unwrap();
        let l = waiter.join().unwrap().unwrap();
        assert_eq!((l.production(), l.job()), ("y", "late"));
    });
    assert_eq!(
        a.claim_next_wait_across(&["x", "y"], "w", secs(10), ms(50), None)
            .unwrap_err()
            .code(),
        ErrorCode::NoJobAvailable
    );
}

#[test]
fn an_oversized_checkpoint_with_a_renewal_changes_neither() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim_next("p", "w", secs(10)).unwrap();
    l.checkpoint(b"offset=1").unwrap();
    env.clock.advance(1_000_000);
    let events = a.events(0, 10_000).unwrap().len();
    let big = vec![7u8; validate::MAX_PROGRESS + 1];
    assert_eq!(
        l.renew_checkpoint(secs(60), &big).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(l.expires_us(), T0 + 10_000_000);
    let v = a.job("p", "j0").unwrap();
    assert_eq!(v.expires_us, Some(T0 + 10_000_000));
    assert_eq!(v.progress.as_deref(), Some(&b"offset=1"[..]));
    assert_eq!(a.events(0, 10_000).unwrap().len(), events);
    l.renew_checkpoint(secs(60), &big[..validate::MAX_PROGRESS])
        .unwrap();
    assert_eq!(l.expires_us(), T0 + 61_000_000);
}

#[test]
fn bad_arguments_to_a_wait_across_productions_are_refused_at_once() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    a.create_production("x").unwrap();
    let long = std::time::Duration::from_secs(60);
    let code = |list: &[&str], holder: &str, ttl: Ttl| {
        let t = std::time::Instant::now();
        let e = a
            .claim_next_wait_across(list, holder, ttl, long, None)
            .unwrap_err()
            .code();
        // A refusal, not a wait that timed out.
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        e
    };
    let many: Vec<String> = (0..65).map(|i| format!("p{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(code(&[], "w", secs(10)), ErrorCode::InvalidArgument);
    assert_eq!(code(&["p", "p"], "w", secs(10)), ErrorCode::InvalidArgument);
    assert_eq!(code(&many, "w", secs(10)), ErrorCode::InvalidArgument);
    assert_eq!(
        code(&["p", "bad id"], "w", secs(10)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(&["x", "missing"], "w", secs(10)), ErrorCode::NotFound);
    assert_eq!(code(&["p", "x"], "", secs(10)), ErrorCode::InvalidArgument);
    assert_eq!(
        a.claim_next_wait_across(
            &["x"],
            "w",
            secs(10),
            std::time::Duration::from_secs(400 * 86_400),
            None
        )
        .unwrap_err()
        .code(),
        ErrorCode::InvalidDuration
    );
    // Nothing was claimed.
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Requested);
}
