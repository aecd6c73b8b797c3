//! The batched calls (`claim_next_many`, `complete_many`, `release_many`,
//! `fail_many`, `renew_many`) on both backends: every lease of a batch is
//! checked as the single operation checks it, refused leases change nothing,
//! a job twice in one batch is refused the second time, edits are all or
//! nothing, and concurrent batch claims never hand one job out twice.
mod common;
use common::*;
use std::collections::HashMap;
use tenure::*;

fn code<T: std::fmt::Debug>(r: &Result<T>) -> ErrorCode {
    r.as_ref().expect_err("expected an error").code()
}

fn events(a: &Authority) -> Vec<Event> {
    a.events(0, MAX_PAGE).unwrap()
}

#[test]
fn claim_next_many_takes_up_to_n_in_queue_order() {
    let env = Env::with_jobs(5, 3);
    let a = &env.auth;
    for bad in [0, validate::MAX_BATCH + 1] {
        assert_eq!(
            code(&a.claim_next_many("p", "w", secs(10), bad)),
            ErrorCode::InvalidArgument
        );
    }
    assert_eq!(
        code(&a.claim_next_many("nope", "w", secs(10), 2)),
        ErrorCode::NotFound
    );
    let first = a.claim_next_many("p", "w", secs(10), 3).unwrap();
    let jobs: Vec<&str> = first.iter().map(|l| l.job()).collect();
    assert_eq!(jobs, ["j0", "j1", "j2"]);
    let mut ids: Vec<Uuid> = first.iter().map(|l| l.claim_id()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3, "each claim has its own claim ID");
    assert!(first.iter().all(|l| l.attempt() == 1));
    assert!(first.iter().all(|l| l.status() == LeaseStatus::Active));
    // Each lease carries its own secret: a token of one is useless for another.
    let t0 = first[0].export_token().unwrap();
    assert_eq!(a.import_lease(t0.expose()).unwrap().job(), "j0");
    let rest = a.claim_next_many("p", "w", secs(10), 10).unwrap();
    assert_eq!(rest.len(), 2, "fewer than n when fewer are claimable");
    assert!(a
        .claim_next_many("p", "w", secs(10), 10)
        .unwrap()
        .is_empty());
    let claimed = events(a)
        .iter()
        .filter(|e| e.kind == EventKind::Claimed)
        .count();
    assert_eq!(claimed, 5);
    assert!(a.check().unwrap().ok());
}

#[test]
fn claim_next_many_reclaims_expired_and_exhausts_used_up() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("once", b"x".to_vec()).max_attempts(1))
        .unwrap();
    a.submit("p", &JobSpec::new("twice", b"y".to_vec()).max_attempts(2))
        .unwrap();
    let l = a.claim_next_many("p", "w", secs(1), 2).unwrap();
    assert_eq!(l.len(), 2);
    env.clock.advance(2_000_000);
    let again = a.claim_next_many("p", "w2", secs(10), 5).unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].job(), again[0].attempt()), ("twice", 2));
    assert_eq!(a.job("p", "once").unwrap().state, JobState::Failed);
    assert!(events(a).iter().any(|e| e.kind == EventKind::Exhausted));
    assert!(a.check().unwrap().ok());
}

/// One job in each state a batch must refuse, plus good leases.
#[test]
fn mixed_complete_many_gives_per_lease_errors_and_changes_only_the_accepted() {
    let env = Env::with_jobs(7, 3);
    let a = &env.auth;
    let other = Env::with_jobs(1, 3);
    let foreign = other.auth.claim("p", "j0", "w", secs(100)).unwrap();

    let good = a.claim("p", "j0", "w", secs(100)).unwrap();
    let expiring = a.claim("p", "j1", "w", secs(1)).unwrap();
    let stale = a.claim("p", "j2", "w", secs(1)).unwrap();
    let cancelled = a.claim("p", "j3", "w", secs(100)).unwrap();
    let released = a.claim("p", "j4", "w", secs(100)).unwrap();
    let good2 = a.claim("p", "j5", "w", secs(100)).unwrap();
    // A second handle on j4's lease, released through the first: the store
    // says closed while this copy still thinks it is active.
    let copy = a
        .import_lease(released.export_token().unwrap().expose())
        .unwrap();
    released.release().unwrap();
    a.cancel("p", "j3").unwrap();
    env.clock.advance(2_000_000);
    let replacement = a.claim("p", "j2", "w2", secs(100)).unwrap();

    let before: Vec<JobView> = (1..5)
        .map(|i| a.job("p", &format!("j{i}")).unwrap())
        .collect();
    let n_events = events(a).len();
    let facts = [Fact::new("k", "v")];
    let r = a
        .complete_many(&[
            (&good, &facts[..]),
            (&expiring, &[]),
            (&stale, &[]),
            (&cancelled, &[]),
            (&copy, &[]),
            (&released, &[]),
            (&foreign, &[]),
            (&good, &[]),
            (&good2, &[Fact::new("tenure.x", "reserved")]),
        ])
        .unwrap();
    let codes: Vec<Option<ErrorCode>> = r
        .iter()
        .map(|x| x.as_ref().err().map(|e| e.code()))
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some(ErrorCode::LeaseExpired),
            Some(ErrorCode::StaleLease),
            Some(ErrorCode::Cancelled),
            Some(ErrorCode::LeaseClosed),
            Some(ErrorCode::LeaseClosed),
            Some(ErrorCode::InvalidArgument),
            Some(ErrorCode::InvalidArgument),
            Some(ErrorCode::InvalidArgument),
        ]
    );
    // Only the accepted lease changed anything: one event, its facts.
    assert_eq!(events(a).len(), n_events + 1);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Completed);
    let keys: Vec<String> = a
        .facts("p", "j0")
        .unwrap()
        .into_iter()
        .map(|f| f.key)
        .collect();
    assert_eq!(keys[0], "k");
    assert!(keys.contains(&"tenure.claim_id".to_string()));
    let after: Vec<JobView> = (1..5)
        .map(|i| a.job("p", &format!("j{i}")).unwrap())
        .collect();
    assert_eq!(before, after, "refused leases left their jobs untouched");
    assert!(a.facts("p", "j5").unwrap().is_empty());
    assert_eq!(good.status(), LeaseStatus::Closed);
    assert_eq!(good2.status(), LeaseStatus::Active);
    assert_eq!(copy.status(), LeaseStatus::Active);
    assert_eq!(replacement.status(), LeaseStatus::Active);
    // The duplicate was not applied twice: one completion event for j0.
    let done = events(a)
        .iter()
        .filter(|e| e.kind == EventKind::Completed && e.job.as_deref() == Some("j0"))
        .count();
    assert_eq!(done, 1);
    assert!(a.check().unwrap().ok());
}

#[test]
fn release_fail_and_renew_many_follow_the_single_rules() {
    let env = Env::with_jobs(4, 1);
    let a = &env.auth;
    let ls = a.claim_next_many("p", "w", secs(10), 4).unwrap();
    // Renewal: a TTL that would not move the expiry is not_extended for
    // that lease only.
    env.clock.advance(1_000_000);
    let before = ls[1].expires_us();
    let r = a.renew_many(&[&ls[0], &ls[1]], secs(20)).unwrap();
    assert!(r.iter().all(|x| x.is_ok()));
    assert_eq!(ls[1].expires_us(), before + 11_000_000);
    let r = a
        .renew_many(&[&ls[0], &ls[2]], Ttl::from_micros(1).unwrap())
        .unwrap();
    assert_eq!(code(&r[0]), ErrorCode::NotExtended);
    assert_eq!(code(&r[1]), ErrorCode::NotExtended);
    // Release on the last attempt fails the job; fail reasons are recorded.
    let r = a.release_many(&[&ls[0]]).unwrap();
    assert_eq!(r[0].as_ref().unwrap(), &JobState::Failed);
    let long = "x".repeat(validate::MAX_REASON_LEN + 1);
    let r = a
        .fail_many(&[
            (&ls[1], "boom", true),
            (&ls[2], &long, false),
            (&ls[0], "", false),
        ])
        .unwrap();
    assert_eq!(r[0].as_ref().unwrap(), &JobState::Failed);
    assert_eq!(code(&r[1]), ErrorCode::InvalidArgument);
    assert_eq!(code(&r[2]), ErrorCode::LeaseClosed, "closed locally");
    assert_eq!(
        a.job("p", "j1").unwrap().last_error.as_deref(),
        Some("boom")
    );
    assert_eq!(a.job("p", "j2").unwrap().state, JobState::Claimed);
    assert_eq!(ls[2].status(), LeaseStatus::Active);
    assert_eq!(
        code(&a.release_many(&[])),
        ErrorCode::InvalidArgument,
        "an empty batch is refused"
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn in_an_edit_a_batch_is_all_or_nothing() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    let ls = a.claim_next_many("p", "w", secs(10), 3).unwrap();
    a.cancel("p", "j2").unwrap();
    let n_events = events(a).len();
    let mut e = a.edit().unwrap();
    let r = e.complete_many(&[(&ls[0], &[]), (&ls[1], &[]), (&ls[2], &[])]);
    assert_eq!(code(&r), ErrorCode::Cancelled);
    // The edit stays usable and nothing of the refused batch is in it.
    let r = e.complete_many(&[(&ls[0], &[]), (&ls[0], &[])]);
    assert_eq!(code(&r), ErrorCode::InvalidArgument);
    let ok = e.complete_many(&[(&ls[0], &[]), (&ls[1], &[])]).unwrap();
    assert_eq!(ok.len(), 2);
    assert_eq!(ls[0].status(), LeaseStatus::Active, "settles at commit");
    e.commit().unwrap();
    assert_eq!(ls[0].status(), LeaseStatus::Closed);
    assert_eq!(events(a).len(), n_events + 2);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Completed);
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Completed);

    // Claim and complete many atomically; an abort leaves nothing.
    a.submit("p", &JobSpec::new("k0", b"".to_vec())).unwrap();
    a.submit("p", &JobSpec::new("k1", b"".to_vec())).unwrap();
    let mut e = a.edit().unwrap();
    let ls = e.claim_next_many("p", "w", secs(10), 5).unwrap();
    assert_eq!(ls.len(), 2);
    assert!(ls.iter().all(|l| l.status() == LeaseStatus::Pending));
    assert_eq!(
        code(&a.complete_many(&[(&ls[0], &[])]).unwrap()[0]),
        ErrorCode::LeasePending
    );
    let items: Vec<(&Lease, &[Fact])> = ls.iter().map(|l| (l, &[][..])).collect();
    e.complete_many(&items).unwrap();
    e.abort();
    assert!(ls.iter().all(|l| l.status() == LeaseStatus::Closed));
    assert_eq!(a.job("p", "k0").unwrap().state, JobState::Requested);
    let mut e = a.edit().unwrap();
    let ls = e.claim_next_many("p", "w", secs(10), 5).unwrap();
    let items: Vec<(&Lease, &[Fact])> = ls.iter().map(|l| (l, &[][..])).collect();
    e.complete_many(&items).unwrap();
    e.commit().unwrap();
    assert_eq!(a.job("p", "k1").unwrap().state, JobState::Completed);
    assert!(a.check().unwrap().ok());
}

/// 16 handles (16 connections on PostgreSQL) claim in batches at once:
/// no job is ever owned twice, and the event log agrees.
#[test]
fn concurrent_batch_claims_never_double_own() {
    let env = Env::with_jobs(0, 3);
    let specs: Vec<JobSpec> = (0..400)
        .map(|i| JobSpec::new(format!("c{i}"), b"p".to_vec()))
        .collect();
    env.auth.submit_many("p", &specs).unwrap();
    let handles: Vec<Authority> = (0..16).map(|_| env.reopen()).collect();
    let done: Vec<Vec<String>> = std::thread::scope(|sc| {
        let ts: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(w, a)| {
                sc.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let ls = match a.claim_next_many("p", &format!("w{w}"), secs(600), 8) {
                            Ok(ls) => ls,
                            Err(e) if e.code() == ErrorCode::Busy => continue,
                            Err(e) => panic!("{e}"),
                        };
                        if ls.is_empty() {
                            break;
                        }
                        let items: Vec<(&Lease, &[Fact])> =
                            ls.iter().map(|l| (l, &[][..])).collect();
                        for (l, r) in ls.iter().zip(a.complete_many(&items).unwrap()) {
                            r.unwrap();
                            mine.push(l.job().to_string());
                        }
                    }
                    mine
                })
            })
            .collect();
        ts.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut seen: HashMap<String, usize> = HashMap::new();
    for j in done.into_iter().flatten() {
        *seen.entry(j).or_default() += 1;
    }
    assert_eq!(seen.len(), 400);
    assert!(seen.values().all(|&n| n == 1), "a job completed twice");
    let mut per_job: HashMap<String, (usize, usize)> = HashMap::new();
    let mut after = 0;
    loop {
        let page = env.auth.events(after, MAX_PAGE).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        for e in &page {
            let c = per_job
                .entry(e.job.clone().unwrap_or_default())
                .or_default();
            match e.kind {
                EventKind::Claimed => c.0 += 1,
                EventKind::Completed => c.1 += 1,
                _ => {}
            }
        }
    }
    for i in 0..400 {
        assert_eq!(per_job[&format!("c{i}")], (1, 1), "job c{i}");
    }
    let report = env.auth.check().unwrap();
    assert!(report.ok(), "{:?}", report.violations);
}

/// PostgreSQL: a batched call's round trips do not grow with its size
/// (the count is deterministic: one thread, pooled connection, statements
/// already prepared by a warm-up call). The numbers are printed for the
/// report; `MAX_ROUND_TRIPS` pins them.
#[test]
fn pg_batched_calls_take_the_same_round_trips_whatever_their_size() {
    if !on_postgres() {
        eprintln!("skipped: PostgreSQL only (round trips)");
        return;
    }
    // With the test clock, as with the server's (see
    // `pg_every_transition_takes_two_round_trips`): `BEGIN` with the mark
    // read and one statement that locks and reads (claim-next: the
    // production's lock and existence and the SKIP LOCKED scan;
    // transitions: the locked read), in one request; the writes with the
    // mark and COMMIT. submit_many begins on its own request, then the
    // production's lock and row and the insert, then the writes.
    const MAX_ROUND_TRIPS: u64 = 2;
    const MAX_SUBMIT_ROUND_TRIPS: u64 = 3;
    let env = Env::with_jobs(0, 3);
    let a = &env.auth;
    let specs: Vec<JobSpec> = (0..300)
        .map(|i| JobSpec::new(format!("r{i}"), b"p".to_vec()))
        .collect();
    a.submit_many("p", &specs).unwrap();
    let rt = |f: &mut dyn FnMut()| {
        let before = stats::pg_round_trips();
        f();
        stats::pg_round_trips() - before
    };
    let mut counts = Vec::new();
    for n in [1usize, 1, 10, 100] {
        let mut ls = Vec::new();
        let claim = rt(&mut || ls = a.claim_next_many("p", "w", secs(60), n).unwrap());
        assert_eq!(ls.len(), n);
        let renew = rt(&mut || {
            let refs: Vec<&Lease> = ls.iter().collect();
            assert!(a
                .renew_many(&refs, secs(120))
                .unwrap()
                .iter()
                .all(|r| r.is_ok()));
        });
        let facts = [Fact::new("k", "v")];
        let complete = rt(&mut || {
            let items: Vec<(&Lease, &[Fact])> = ls.iter().map(|l| (l, &facts[..])).collect();
            assert!(a.complete_many(&items).unwrap().iter().all(|r| r.is_ok()));
        });
        counts.push((n, claim, renew, complete));
    }
    eprintln!("round trips (n, claim_next_many, renew_many, complete_many): {counts:?}");
    // submit_many: one set-based insert and one events insert per call.
    let mut submits = Vec::new();
    for (k, n) in [10usize, 10, 500].into_iter().enumerate() {
        let specs: Vec<JobSpec> = (0..n)
            .map(|i| JobSpec::new(format!("s{k}-{i}"), b"p".to_vec()))
            .collect();
        submits.push(rt(&mut || {
            a.submit_many("p", &specs).unwrap();
        }));
    }
    eprintln!("round trips of submit_many (10, 10, 500): {submits:?}");
    assert_eq!(submits[1], submits[2]);
    assert!(submits[2] <= MAX_SUBMIT_ROUND_TRIPS);
    // The first call prepared its statements; after it, sizes 1..100 agree.
    let warm = &counts[1..];
    assert!(warm
        .iter()
        .all(|c| (c.1, c.2, c.3) == (warm[0].1, warm[0].2, warm[0].3)));
    assert!(warm
        .iter()
        .all(|c| c.1 <= MAX_ROUND_TRIPS && c.2 <= MAX_ROUND_TRIPS && c.3 <= MAX_ROUND_TRIPS));
    assert!(a.check().unwrap().ok());
}

/// `submit_many` decides every job by the single submission's rules: new
/// IDs are created with an event each, identical resubmissions are
/// `Existing` (also a repeat inside the batch), a different payload under
/// an existing ID fails the whole batch and leaves nothing behind.
#[test]
fn submit_many_follows_the_single_submission_rules() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let n_events = events(a).len();
    let r = a
        .submit_many(
            "p",
            &[
                JobSpec::new("j0", b"payload 0".to_vec()).max_attempts(3),
                JobSpec::new("n0", b"a".to_vec()),
                JobSpec::new("n1", b"b".to_vec()).priority(5),
                JobSpec::new("n0", b"a".to_vec()),
            ],
        )
        .unwrap();
    assert_eq!(
        r,
        [
            Submitted::Existing,
            Submitted::Created,
            Submitted::Created,
            Submitted::Existing
        ]
    );
    let evs = events(a);
    assert_eq!(evs.len(), n_events + 2);
    assert!(evs[n_events..]
        .iter()
        .all(|e| e.kind == EventKind::Submitted));
    assert_eq!(a.payload("p", "n1").unwrap(), b"b");
    assert_eq!(a.job("p", "n1").unwrap().priority, 5);
    // Claim order follows priority, then submission order.
    assert_eq!(a.claim_next("p", "w", secs(10)).unwrap().job(), "n1");
    for bad in [
        vec![
            JobSpec::new("x0", b"x".to_vec()),
            JobSpec::new("j1", b"other".to_vec()),
        ],
        vec![
            JobSpec::new("x0", b"x".to_vec()),
            JobSpec::new("x0", b"y".to_vec()),
        ],
    ] {
        assert_eq!(code(&a.submit_many("p", &bad)), ErrorCode::Conflict);
        assert_eq!(code(&a.job("p", "x0")), ErrorCode::NotFound);
    }
    assert_eq!(events(a).len(), n_events + 3);
    a.cancel_production("p").unwrap();
    assert_eq!(
        code(&a.submit_many("p", &[JobSpec::new("late", b"".to_vec())])),
        ErrorCode::Cancelled
    );
    assert!(a.check().unwrap().ok());
}

const STORM_JOBS: usize = 480;

/// The storm: real worker processes (32 on PostgreSQL, 8 on a SQLite file)
/// drain one production with batched calls only, under short leases that
/// some workers abandon (as if crashed) for others to reclaim. Every job
/// completes exactly once, by the claim the store recorded; `check()` finds
/// no overlapping leases.
#[test]
fn storm_of_batch_workers_completes_every_job_once() {
    let dir = tempfile::tempdir().unwrap();
    let pg_db = pg::fresh_database();
    let db = match &pg_db {
        Some(d) => std::path::PathBuf::from(&d.url),
        None => dir.path().join("store.db"),
    };
    let workers = if pg_db.is_some() { 32 } else { 8 };
    let a = Authority::open(&db, &Options::new()).unwrap();
    a.create_production("st").unwrap();
    let specs: Vec<JobSpec> = (0..STORM_JOBS)
        .map(|i| JobSpec::new(format!("s{i:04}"), vec![1]).max_attempts(1000))
        .collect();
    a.submit_many("st", &specs).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..workers)
        .map(|w| {
            std::process::Command::new(&exe)
                .args(["--exact", "storm_child", "--ignored", "--nocapture"])
                .env("TENURE_STORM_DB", &db)
                .env("TENURE_STORM_WORKER", w.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut completed: HashMap<String, Vec<String>> = HashMap::new();
    for (w, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "worker {w} failed");
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            if let Some(i) = line.find("COMPLETED ") {
                let parts: Vec<&str> = line[i..].split_whitespace().collect();
                completed
                    .entry(parts[1].to_string())
                    .or_default()
                    .push(parts[2].to_string());
            }
        }
    }
    assert_eq!(completed.len(), STORM_JOBS);
    for (job, claims) in &completed {
        assert_eq!(claims.len(), 1, "{job} completed {} times", claims.len());
        let facts = a.facts("st", job).unwrap();
        let by = facts.iter().find(|f| f.key == "tenure.claim_id").unwrap();
        assert_eq!(by.value, claims[0]);
    }
    let report = a.check().unwrap();
    assert!(report.ok(), "{:?}", report.violations);
}

#[test]
#[ignore = "child-process entry point of storm_of_batch_workers_completes_every_job_once"]
fn storm_child() {
    let db = std::env::var("TENURE_STORM_DB").expect("run by the storm test");
    let w: u64 = std::env::var("TENURE_STORM_WORKER")
        .unwrap()
        .parse()
        .unwrap();
    let a = Authority::open(
        &db,
        &Options::new().busy_timeout(std::time::Duration::from_secs(30)),
    )
    .unwrap();
    let ttl = Ttl::from_micros(1_000_000).unwrap();
    let holder = format!("storm-{w}");
    let mut round = w;
    loop {
        round += 1;
        let ls = match a.claim_next_many("st", &holder, ttl, 1 + (round as usize % 16)) {
            Ok(ls) => ls,
            // Busy, or a machine so loaded that the commit came after the
            // new leases' expiry (nothing was claimed): try again.
            Err(e) if e.code() == ErrorCode::Busy || e.code() == ErrorCode::LeaseExpired => {
                continue
            }
            Err(e) => panic!("{e}"),
        };
        if ls.is_empty() {
            // Leases abandoned by others may still expire: look again
            // until nothing is live.
            let unfinished = [JobState::Claimed, JobState::Requested, JobState::Expired]
                .into_iter()
                .any(|state| {
                    let q = ListQuery {
                        state: Some(state),
                        limit: 1,
                        ..Default::default()
                    };
                    !a.jobs("st", &q).unwrap().is_empty()
                });
            if !unfinished {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        if round % 7 == 0 {
            // Abandon the whole batch, as a crashed worker would.
            continue;
        }
        let refs: Vec<&Lease> = ls.iter().collect();
        let renewed = match a.renew_many(&refs, ttl) {
            Ok(r) => r,
            Err(e) if e.code() == ErrorCode::Busy || e.code() == ErrorCode::LeaseExpired => {
                continue
            }
            Err(e) => panic!("{e}"),
        };
        let items: Vec<(&Lease, &[Fact])> = ls
            .iter()
            .zip(&renewed)
            .filter(|(_, r)| r.is_ok())
            .map(|(l, _)| (l, &[][..]))
            .collect();
        if items.is_empty() {
            continue;
        }
        let done = match a.complete_many(&items) {
            Ok(d) => d,
            Err(e) if e.code() == ErrorCode::Busy || e.code() == ErrorCode::LeaseExpired => {
                continue
            }
            Err(e) => panic!("{e}"),
        };
        for ((l, _), r) in items.iter().zip(done) {
            match r {
                Ok(()) => println!("COMPLETED {} {}", l.job(), l.claim_id()),
                Err(e) => assert!(
                    matches!(e.code(), ErrorCode::LeaseExpired | ErrorCode::StaleLease),
                    "{e}"
                ),
            }
        }
    }
}

/// PostgreSQL with the server's clock: the pre-commit check runs on the
/// server together with COMMIT. A claim whose new expiry the pre-commit
/// sample has reached is refused (`lease_expired`), leaves nothing behind,
/// and its observed time still raises the mark; a claim that passes commits.
#[test]
fn pg_server_clock_precommit_refusal_changes_nothing() {
    let Some(db) = pg::fresh_database() else {
        eprintln!("skipped: PostgreSQL only (server clock)");
        return;
    };
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("j", b"".to_vec())).unwrap();
    let n_events = events(&a).len();
    let mark = a.clock().unwrap().mark_us;
    let one = Ttl::from_micros(1).unwrap();
    assert_eq!(code(&a.claim("p", "j", "w", one)), ErrorCode::LeaseExpired);
    assert_eq!(
        code(&a.claim_next_many("p", "w", one, 4)),
        ErrorCode::LeaseExpired
    );
    assert_eq!(a.job("p", "j").unwrap().state, JobState::Requested);
    assert_eq!(a.job("p", "j").unwrap().attempts, 0);
    assert_eq!(events(&a).len(), n_events);
    assert!(
        a.clock().unwrap().mark_us > mark,
        "the refused sample raised the mark"
    );
    let specs: Vec<JobSpec> = (0..20)
        .map(|i| JobSpec::new(format!("k{i}"), b"".to_vec()))
        .collect();
    a.submit_many("p", &specs).unwrap();
    // Round trips with the server's clock (its samples included), after a
    // warm-up call has prepared the statements.
    let mut trips = Vec::new();
    for n in [1usize, 1, 10] {
        let t0 = stats::pg_round_trips();
        let ls = a.claim_next_many("p", "w", secs(60), n).unwrap();
        let t1 = stats::pg_round_trips();
        let items: Vec<(&Lease, &[Fact])> = ls.iter().map(|l| (l, &[][..])).collect();
        assert!(a.complete_many(&items).unwrap().iter().all(|r| r.is_ok()));
        trips.push((n, t1 - t0, stats::pg_round_trips() - t1));
    }
    eprintln!("server clock round trips (n, claim_next_many, complete_many): {trips:?}");
    assert_eq!((trips[1].1, trips[1].2), (trips[2].1, trips[2].2));
    assert!(trips[2].1 <= 2 && trips[2].2 <= 2);
    assert!(a.check().unwrap().ok());
    drop(a);
}

/// PostgreSQL with the server's clock: every single transition and
/// claim-next, plain or idempotent, and every batched one at sizes 1 to
/// 200, succeeds in 2 round trips (`BEGIN` with the mark and one statement
/// that locks, samples the clock after the locks and reads, in one
/// request; the writes with the pre-commit check, the mark and `COMMIT`),
/// a submission in at most 3, after a warm-up call prepared the
/// statements. Also with jobs parked until a due time that has come.
#[test]
fn pg_every_transition_takes_two_round_trips() {
    let Some(db) = pg::fresh_database() else {
        eprintln!("skipped: PostgreSQL only (round trips)");
        return;
    };
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    let rt = |f: &mut dyn FnMut()| {
        let before = stats::pg_round_trips();
        f();
        stats::pg_round_trips() - before
    };
    let mut all = Vec::new();
    for round in 0..3 {
        let n = [1usize, 1, 200][round];
        let mut t: Vec<(&str, u64)> = Vec::new();
        let specs: Vec<JobSpec> = (0..8 * n + 10)
            .map(|i| JobSpec::new(format!("j{round}-{i}"), b"p".to_vec()))
            .collect();
        t.push((
            "submit_many",
            rt(&mut || {
                a.submit_many("p", &specs).unwrap();
            }),
        ));
        t.push((
            "submit",
            rt(&mut || {
                a.submit("p", &JobSpec::new(format!("one{round}"), vec![]))
                    .unwrap();
            }),
        ));
        let mut one = None;
        t.push((
            "claim",
            rt(&mut || one = Some(a.claim("p", &format!("one{round}"), "w", secs(60)).unwrap())),
        ));
        let one = one.unwrap();
        let mut single = Vec::new();
        t.push((
            "claim_next",
            rt(&mut || {
                for _ in 0..8 {
                    single.push(a.claim_next("p", "w", secs(60)).unwrap());
                }
            }) / 8,
        ));
        t.push(("renew", rt(&mut || one.renew(secs(120)).unwrap())));
        t.push((
            "release",
            rt(&mut || {
                single[0].release().unwrap();
            }),
        ));
        t.push((
            "fail",
            rt(&mut || {
                single[1].fail("x", false).unwrap();
            }),
        ));
        t.push((
            "complete",
            rt(&mut || single[2].complete(&[Fact::new("k", "v")]).unwrap()),
        ));
        t.push(("complete (one)", rt(&mut || one.complete(&[]).unwrap())));
        // The idempotent forms read what a lease recorded only when the
        // rules refuse: a call that succeeds costs what the plain one does.
        t.push((
            "renew_idempotent",
            rt(&mut || assert!(!single[3].renew_idempotent(secs(120)).unwrap().replayed)),
        ));
        t.push((
            "release_idempotent",
            rt(&mut || assert!(!single[4].release_idempotent().unwrap().replayed)),
        ));
        t.push((
            "fail_idempotent",
            rt(&mut || assert!(!single[5].fail_idempotent("x", false).unwrap().replayed)),
        ));
        t.push((
            "complete_idempotent",
            rt(&mut || {
                let facts = [Fact::new("k", "v")];
                assert!(!single[6].complete_idempotent(&facts).unwrap().replayed)
            }),
        ));
        let mut ls = Vec::new();
        t.push((
            "claim_next_many",
            rt(&mut || ls = a.claim_next_many("p", "w", secs(60), 4 * n).unwrap()),
        ));
        assert_eq!(ls.len(), 4 * n);
        let idem = a.claim_next_many("p", "w", secs(60), 4 * n).unwrap();
        assert_eq!(idem.len(), 4 * n);
        let (a1, rest) = ls.split_at(n);
        let (a2, rest) = rest.split_at(n);
        let (a3, a4) = rest.split_at(n);
        fn ok<T>(r: Vec<Result<T>>) {
            assert!(r.into_iter().all(|x| x.is_ok()));
        }
        fn fresh<T>(r: Vec<Result<Applied<T>>>) {
            assert!(r.into_iter().all(|x| !x.unwrap().replayed));
        }
        let (i1, rest) = idem.split_at(n);
        let (i2, rest) = rest.split_at(n);
        let (i3, i4) = rest.split_at(n);
        let facts = [Fact::new("k", "v")];
        t.push((
            "renew_many_idempotent",
            rt(&mut || {
                fresh(
                    a.renew_many_idempotent(&i1.iter().collect::<Vec<_>>(), secs(120))
                        .unwrap(),
                )
            }),
        ));
        t.push((
            "release_many_idempotent",
            rt(&mut || {
                fresh(
                    a.release_many_idempotent(&i2.iter().collect::<Vec<_>>())
                        .unwrap(),
                )
            }),
        ));
        t.push((
            "fail_many_idempotent",
            rt(&mut || {
                let items: Vec<(&Lease, &str, bool)> = i3.iter().map(|l| (l, "x", false)).collect();
                fresh(a.fail_many_idempotent(&items).unwrap())
            }),
        ));
        t.push((
            "complete_many_idempotent",
            rt(&mut || {
                let items: Vec<(&Lease, &[Fact])> = i4.iter().map(|l| (l, &facts[..])).collect();
                fresh(a.complete_many_idempotent(&items).unwrap())
            }),
        ));
        t.push((
            "renew_many",
            rt(&mut || {
                ok(a.renew_many(&a1.iter().collect::<Vec<_>>(), secs(120))
                    .unwrap())
            }),
        ));
        t.push((
            "release_many",
            rt(&mut || ok(a.release_many(&a2.iter().collect::<Vec<_>>()).unwrap())),
        ));
        t.push((
            "fail_many",
            rt(&mut || {
                let items: Vec<(&Lease, &str, bool)> = a3.iter().map(|l| (l, "x", false)).collect();
                ok(a.fail_many(&items).unwrap())
            }),
        ));
        t.push((
            "complete_many",
            rt(&mut || {
                let items: Vec<(&Lease, &[Fact])> = a4.iter().map(|l| (l, &facts[..])).collect();
                ok(a.complete_many(&items).unwrap())
            }),
        ));
        all.push((n, t));
    }
    eprintln!("round trips with the server clock: {all:?}");
    for (_, t) in &all[1..] {
        for (call, n) in t {
            let most = if call.starts_with("submit") { 3 } else { 2 };
            assert!(*n <= most, "{call}: {n} round trips");
        }
    }
    // A claim under a request ID looks the request up after the job's lock
    // and records it: two statements more than a plain claim (design.md,
    // "Idempotent calls").
    let rq: Vec<JobSpec> = (0..2)
        .map(|i| JobSpec::new(format!("rq{i}"), vec![]))
        .chain((0..20).map(|i| JobSpec::new(format!("rm{i}"), vec![])))
        .collect();
    a.submit_many("p", &rq).unwrap();
    for round in 0..2 {
        let req = ClaimRequest::new(&format!("rq-{round}")).unwrap();
        let n = rt(&mut || {
            let got = a.claim_idempotent("p", &format!("rq{round}"), "w", secs(60), &req);
            assert!(!got.unwrap().replayed);
        });
        let next = ClaimRequest::new(&format!("rn-{round}")).unwrap();
        let m = rt(&mut || {
            let got = a.claim_next_idempotent("p", "w", secs(60), &next).unwrap();
            assert!(!got.replayed);
        });
        // A batch under one request ID records all its members in one
        // statement: as many round trips as one claim-next under a request.
        let many = ClaimRequest::new(&format!("rb-{round}")).unwrap();
        let b = rt(&mut || {
            let got = a
                .claim_next_many_idempotent("p", "w", secs(60), 10, &many)
                .unwrap();
            assert!(!got.replayed && got.value.len() == 10);
        });
        eprintln!("claim_idempotent: {n} round trips, claim_next_idempotent: {m}, claim_next_many_idempotent: {b}");
        if round == 1 {
            assert!(
                n <= 5 && m <= 5 && b <= 5,
                "claim_idempotent {n}, claim_next_idempotent {m}, claim_next_many_idempotent {b}"
            );
        }
    }
    // Jobs whose due time has come are claimed in the same 2 (the first
    // claim prepares the statement that un-parks them).
    a.create_production("d").unwrap();
    for j in ["due1", "due2"] {
        let spec = JobSpec::new(j, vec![]).not_before(Delay::from_micros(1000).unwrap());
        a.submit("d", &spec).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut n = 0;
    for j in ["due1", "due2"] {
        let mut got = None;
        n = rt(&mut || got = Some(a.claim_next("d", "w", secs(60)).unwrap()));
        assert_eq!(got.unwrap().job(), j);
    }
    assert!(n <= 2, "claim_next of a due job: {n} round trips");
    // A production with a concurrency limit and a rate limit: the claim's
    // first request also locks the gate row and reads the live leases, and
    // the rate's state is written with the commit, so the same 2 (the
    // first such claim prepares the gate write).
    a.create_production("g").unwrap();
    a.set_concurrency_limit("g", Some(3)).unwrap();
    let rate = RateLimit {
        claims: 1000,
        interval: std::time::Duration::from_secs(1),
        burst: 1000,
    };
    a.set_rate_limit("g", Some(rate)).unwrap();
    let gs: Vec<JobSpec> = (0..5)
        .map(|i| JobSpec::new(format!("g{i}"), vec![]))
        .collect();
    a.submit_many("g", &gs).unwrap();
    let mut held = Vec::new();
    for i in 0..3 {
        let n = rt(&mut || held.push(a.claim_next("g", "w", secs(60)).unwrap()));
        assert!(i == 0 || n <= 2, "claim_next under gates: {n} round trips");
    }
    let n = rt(&mut || {
        let e = a.claim_next("g", "w", secs(60)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::NoJobAvailable, "{e}");
    });
    assert!(
        n <= 2,
        "claim_next at the concurrency limit: {n} round trips"
    );
    assert!(a.check().unwrap().ok());
}
