//! Group commit (docs/design.md, "Group commit"): concurrent one-step calls
//! of one SQLite store handle share one transaction; every member keeps its
//! own checks, clock samples and outcome; a member refused at pre-commit
//! leaves no trace while the others commit; nobody is acknowledged before
//! the COMMIT carrying its operation.
mod common;
use common::*;
use std::time::Duration;
use tenure::*;

fn code<T>(r: &Result<T>) -> Option<ErrorCode> {
    r.as_ref().err().map(|e| e.code())
}

fn grouping(why: &str) -> bool {
    if skip_on_postgres(why) {
        return false;
    }
    if !group_commit() {
        eprintln!("skipped with TENURE_TEST_GROUP_COMMIT=0: {why}");
        return false;
    }
    true
}

#[test]
fn threads_doing_lifecycles_share_one_store() {
    lifecycles_in_threads(8, 25);
}

/// More callers than one group carries (64): while a group runs, the next
/// one's callers queue and sleep on the same bell, and every settling
/// wakes them too; each must go on sleeping until its own call is settled.
/// (On PostgreSQL, which has no groups, 80 threads would only open 80
/// connections.)
#[test]
fn more_threads_than_a_group_carries_each_get_their_own_outcome() {
    if on_postgres() {
        return;
    }
    lifecycles_in_threads(80, 4);
}

fn lifecycles_in_threads(threads: usize, per_thread: usize) {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    let specs: Vec<JobSpec> = (0..threads * per_thread)
        .map(|i| JobSpec::new(format!("j{i}"), vec![i as u8]))
        .collect();
    env.auth.submit_many("p", &specs).unwrap();
    let formed = env.auth.commit_groups();
    let done: Vec<Vec<String>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let a = env.auth.clone();
                sc.spawn(move || {
                    let mut mine = Vec::new();
                    for _ in 0..per_thread {
                        let l = a.claim_next("p", &format!("w{t}"), secs(30)).unwrap();
                        l.renew(secs(60)).unwrap();
                        assert_eq!(l.expires_us(), T0 + 60_000_000);
                        l.complete(&[Fact::new("by", format!("w{t}"))]).unwrap();
                        assert_eq!(l.status(), LeaseStatus::Closed);
                        // A second use of the same lease is refused locally.
                        assert_eq!(code(&l.renew(secs(90))), Some(ErrorCode::LeaseClosed));
                        mine.push(l.job().to_owned());
                    }
                    mine
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (groups, calls) = env.auth.commit_groups();
    if group_commit() && !on_postgres() {
        // Every claim, renewal and completion went through a group (the
        // local refusal did not); groups carried one or more each. A group
        // runs at least 8 of its members; past 8 it may leave the rest to
        // the next group once its work took 4 ms, and they are taken again.
        let ops = (threads * per_thread * 3) as u64;
        if threads <= 8 {
            assert_eq!(calls - formed.1, ops);
        } else {
            assert!(calls - formed.1 >= ops, "{} < {ops}", calls - formed.1);
        }
        assert!((1..=calls - formed.1).contains(&(groups - formed.0)));
    } else {
        assert_eq!((groups, calls), (0, 0));
    }
    let mut all: Vec<String> = done.into_iter().flatten().collect();
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        threads * per_thread,
        "every job claimed exactly once"
    );
    let jobs = env
        .auth
        .jobs(
            "p",
            &ListQuery {
                limit: 1000,
                ..ListQuery::default()
            },
        )
        .unwrap();
    assert!(jobs
        .iter()
        .all(|j| j.state == JobState::Completed && j.attempts == 1));
    // production + submissions + claimed/renewed/completed per job.
    let events = env.auth.events(0, 10_000).unwrap();
    assert_eq!(events.len(), 1 + threads * per_thread * 4);
    assert_eq!(
        code(&env.auth.claim_next("p", "w", secs(1))),
        Some(ErrorCode::NoJobAvailable)
    );
    let report = env.auth.check().unwrap();
    assert!(report.ok(), "{:?}", report.violations);
}

#[test]
fn a_stale_member_is_refused_and_the_others_commit() {
    if !grouping("forms a commit group") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let a = env.auth.clone();
    let old = a.claim("p", "j0", "w-old", secs(1)).unwrap();
    env.clock.advance(2_000_000);
    let new = a.claim("p", "j0", "w-new", secs(30)).unwrap();
    let before = a.events(0, 1000).unwrap().len();
    let formed = a.commit_groups();
    let (a1, a2, a3) = (a.clone(), a.clone(), a.clone());
    let (old_r, new_r) = (&old, &new);
    let out: Vec<Result<String>> = in_one_group(
        &env,
        &a,
        vec![
            Box::new(move || old_r.complete(&[]).map(|()| "stale completed".into())),
            Box::new(move || a1.claim("p", "j1", "w1", secs(30)).map(|l| l.job().into())),
            Box::new(move || new_r.complete(&[]).map(|()| "completed".into())),
            Box::new(move || {
                a2.submit("p", &JobSpec::new("j9", b"x".to_vec()))
                    .map(|s| format!("{s:?}"))
            }),
            Box::new(move || a3.claim("p", "j1", "w2", secs(30)).map(|l| l.job().into())),
        ],
    );
    assert_eq!(code(&out[0]), Some(ErrorCode::StaleLease));
    assert_eq!(out[1].as_deref().unwrap(), "j1");
    assert_eq!(out[2].as_deref().unwrap(), "completed");
    assert_eq!(out[3].as_deref().unwrap(), "Created");
    // Serial order: the claim before it in the group holds j1.
    assert_eq!(code(&out[4]), Some(ErrorCode::NotClaimable));
    // One group took all five calls.
    assert_eq!(a.commit_groups(), (formed.0 + 1, formed.1 + 5));
    assert_eq!(
        old.status(),
        LeaseStatus::Active,
        "a refused member settles nothing"
    );
    assert_eq!(new.status(), LeaseStatus::Closed);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Completed);
    assert_eq!(a.job("p", "j1").unwrap().holder.as_deref(), Some("w1"));
    assert_eq!(a.job("p", "j9").unwrap().state, JobState::Requested);
    // claimed + completed + submitted: the refused members left no event.
    assert_eq!(a.events(0, 1000).unwrap().len(), before + 3);
    assert!(a.check().unwrap().ok());
}

#[test]
fn a_member_expiring_before_the_precommit_sample_is_refused_and_the_others_commit() {
    if !grouping("forms a commit group") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let a = env.auth.clone();
    let short = a.claim("p", "j0", "w-short", secs(5)).unwrap();
    let long = a.claim("p", "j2", "w-long", secs(60)).unwrap();
    let before = a.events(0, 1000).unwrap().len();
    // Three member samples at T0, then the pre-commit sample at T0 + 5 s:
    // exactly the short lease's expiry. The re-run reads T0 + 5 s.
    let pre = T0 + 5_000_000;
    env.clock.script(&[T0, T0, T0, pre]);
    let a1 = a.clone();
    let (short_r, long_r) = (&short, &long);
    let out: Vec<Result<String>> = in_one_group(
        &env,
        &a,
        vec![
            Box::new(move || {
                a1.claim("p", "j1", "w1", secs(10))
                    .map(|l| l.expires_us().to_string())
            }),
            Box::new(move || short_r.renew(secs(30)).map(|()| "renewed".into())),
            Box::new(move || long_r.complete(&[]).map(|()| "completed".into())),
        ],
    );
    // The claim ran again after the refusal, at the time observed so far.
    assert_eq!(out[0].as_deref().unwrap(), (pre + 10_000_000).to_string());
    let e = out[1].as_ref().unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseExpired);
    assert!(e.to_string().contains("before the commit"), "{e}");
    assert_eq!(out[2].as_deref().unwrap(), "completed");
    assert_eq!(
        short.expires_us(),
        T0 + 5_000_000,
        "refused renewal settles nothing"
    );
    assert_eq!(short.status(), LeaseStatus::Active);
    assert_eq!(long.status(), LeaseStatus::Closed);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Expired);
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Claimed);
    assert_eq!(a.job("p", "j2").unwrap().state, JobState::Completed);
    assert_eq!(a.events(0, 1000).unwrap().len(), before + 2);
    assert_eq!(a.clock().unwrap().mark_us, pre);
    assert!(a.check().unwrap().ok());
}

#[test]
fn a_clock_rollback_at_precommit_refuses_the_guarded_members_above_it() {
    if !grouping("forms a commit group") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let a = env.auth.clone();
    let l0 = a.claim("p", "j0", "w0", secs(60)).unwrap();
    let before = a.events(0, 1000).unwrap().len();
    // Samples: submit T0, claim j1 T0 + 10, complete T0 + 20; pre-commit
    // T0 + 5 is below the claim's and the completion's marks; the submit is
    // not guarded. The re-run reads T0 + 5 (below the mark T0 + 20).
    env.clock.script(&[T0, T0 + 10, T0 + 20, T0 + 5]);
    let (a1, a2) = (a.clone(), a.clone());
    let l0r = &l0;
    let out: Vec<Result<String>> = in_one_group(
        &env,
        &a,
        vec![
            Box::new(move || {
                a1.submit("p", &JobSpec::new("j9", b"x".to_vec()))
                    .map(|s| format!("{s:?}"))
            }),
            Box::new(move || a2.claim("p", "j1", "w1", secs(10)).map(|l| l.job().into())),
            Box::new(move || l0r.complete(&[]).map(|()| "completed".into())),
        ],
    );
    assert_eq!(out[0].as_deref().unwrap(), "Created");
    assert_eq!(code(&out[1]), Some(ErrorCode::ClockRollback));
    assert_eq!(code(&out[2]), Some(ErrorCode::ClockRollback));
    assert_eq!(l0.status(), LeaseStatus::Active);
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Requested);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Claimed);
    assert_eq!(a.job("p", "j9").unwrap().state, JobState::Requested);
    assert_eq!(a.events(0, 1000).unwrap().len(), before + 1);
    // The refused members' observations are durable: the mark is T0 + 20.
    assert_eq!(a.clock().unwrap().mark_us, T0 + 20);

    // A guarded member below the pre-commit sample commits while the one
    // above it is refused: claim j1 at T0 + 30, complete at T0 + 50, the
    // pre-commit sample T0 + 40; the claim runs again at T0 + 60.
    env.clock.script(&[T0 + 30, T0 + 50, T0 + 40, T0 + 60]);
    let a3 = a.clone();
    let out: Vec<Result<String>> = in_one_group(
        &env,
        &a,
        vec![
            Box::new(move || {
                a3.claim("p", "j1", "w1", secs(10))
                    .map(|l| l.expires_us().to_string())
            }),
            Box::new(move || l0r.complete(&[]).map(|()| "completed".into())),
        ],
    );
    assert_eq!(
        out[0].as_deref().unwrap(),
        (T0 + 60 + 10_000_000).to_string()
    );
    assert_eq!(code(&out[1]), Some(ErrorCode::ClockRollback));
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Claimed);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Claimed);
    assert_eq!(a.clock().unwrap().mark_us, T0 + 60);
    assert!(a.check().unwrap().ok());
}

#[test]
fn a_failed_group_commit_is_every_members_error_and_nothing_is_acknowledged() {
    if !grouping("forms a commit group") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let a = env.auth.clone();
    let l0 = a.claim("p", "j0", "w0", secs(60)).unwrap();
    let before = a.events(0, 1000).unwrap().len();
    // Writing the raised high-water mark, the last write before COMMIT,
    // fails for this group (on the newest event, or in `meta` when the
    // group appended none).
    let conn = rusqlite::Connection::open(env.path()).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER no_mark BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'no mark'); END;
         CREATE TRIGGER no_event_mark BEFORE UPDATE OF mark_us ON events
             BEGIN SELECT RAISE(ABORT, 'no mark'); END;",
    )
    .unwrap();
    env.clock.advance(1_000);
    let (a1, a2) = (a.clone(), a.clone());
    let l0r = &l0;
    let out: Vec<Result<String>> = in_one_group(
        &env,
        &a,
        vec![
            Box::new(move || a1.claim("p", "j1", "w1", secs(10)).map(|l| l.job().into())),
            Box::new(move || l0r.renew(secs(120)).map(|()| "renewed".into())),
            Box::new(move || a2.claim("p", "j0", "w2", secs(10)).map(|l| l.job().into())),
        ],
    );
    assert_eq!(code(&out[0]), Some(ErrorCode::Store));
    assert_eq!(code(&out[1]), Some(ErrorCode::Store));
    // A member refused on its own keeps its own error.
    assert_eq!(code(&out[2]), Some(ErrorCode::NotClaimable));
    assert_eq!(
        l0.expires_us(),
        T0 + 60_000_000,
        "nothing settles before commit"
    );
    conn.execute_batch("DROP TRIGGER no_mark; DROP TRIGGER no_event_mark")
        .unwrap();
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Requested);
    assert_eq!(a.job("p", "j0").unwrap().expires_us, Some(T0 + 60_000_000));
    assert_eq!(a.events(0, 1000).unwrap().len(), before);
    // The store works again afterwards.
    l0.renew(secs(120)).unwrap();
    assert!(a.check().unwrap().ok());
}

#[test]
fn a_member_that_breaks_the_transaction_fails_the_members_that_ran_with_it() {
    if !grouping("forms a commit group") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let a = env.auth.clone();
    let before = a.events(0, 1000).unwrap().len();
    let conn = rusqlite::Connection::open(env.path()).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER no_j2 BEFORE INSERT ON events WHEN NEW.job = 'j2'
         BEGIN SELECT RAISE(ABORT, 'no j2'); END;",
    )
    .unwrap();
    let (a1, a2, a3) = (a.clone(), a.clone(), a.clone());
    let out: Vec<Result<String>> = in_one_group(
        &env,
        &a,
        vec![
            Box::new(move || a1.claim("p", "j0", "w", secs(10)).map(|l| l.job().into())),
            Box::new(move || a2.claim("p", "j2", "w", secs(10)).map(|l| l.job().into())),
            Box::new(move || a3.claim("p", "j1", "w", secs(10)).map(|l| l.job().into())),
        ],
    );
    // The members that ran in the broken transaction get its error; the
    // one after them runs in the next group.
    assert_eq!(code(&out[0]), Some(ErrorCode::Store), "{out:?}");
    assert_eq!(code(&out[1]), Some(ErrorCode::Store), "{out:?}");
    assert_eq!(out[2].as_deref().unwrap(), "j1");
    conn.execute_batch("DROP TRIGGER no_j2").unwrap();
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Requested);
    assert_eq!(a.job("p", "j2").unwrap().state, JobState::Requested);
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Claimed);
    assert_eq!(a.events(0, 1000).unwrap().len(), before + 1);
    assert!(a.check().unwrap().ok());
}

#[test]
fn grouping_off_runs_each_call_as_its_own_transaction() {
    if skip_on_postgres("SQLite writer lock") {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let opts = Options::new()
        .clock(env.clock.clone())
        .group_commit(false)
        .busy_timeout(Duration::from_millis(300));
    assert!(format!("{opts:?}").contains("group_commit: false"));
    let off = Authority::open(env.path(), &opts).unwrap();
    let holder = env.reopen();
    let edit = holder.edit().unwrap();
    let r = std::thread::scope(|sc| {
        let h = sc.spawn(|| off.claim("p", "j0", "w", secs(10)));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(off.queued_group_ops(), 0);
        h.join().unwrap()
    });
    assert_eq!(code(&r), Some(ErrorCode::Busy));
    edit.abort();
    let l = off.claim("p", "j0", "w", secs(10)).unwrap();
    l.complete(&[]).unwrap();
    assert_eq!(off.commit_groups(), (0, 0), "no group ever formed");
    assert!(off.check().unwrap().ok());
}

#[test]
fn a_busy_leader_fails_only_the_calls_that_waited_as_long() {
    if !grouping("forms a commit group") {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let opts = options()
        .clock(env.clock.clone())
        .busy_timeout(Duration::from_millis(300));
    let a = Authority::open(env.path(), &opts).unwrap();
    let holder = env.reopen();
    let edit = holder.edit().unwrap();
    let out = std::thread::scope(|sc| {
        let first = sc.spawn(|| a.claim("p", "j0", "w", secs(10)));
        while a.queued_group_ops() < 1 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(200));
        // Queued 200 ms after the leader began waiting: it is not failed
        // with the leader's busy error but runs in the next group.
        let second = sc.spawn(|| a.claim("p", "j1", "w", secs(10)));
        let r1 = first.join().unwrap();
        edit.abort();
        (r1, second.join().unwrap())
    });
    assert_eq!(code(&out.0), Some(ErrorCode::Busy));
    assert_eq!(out.1.unwrap().job(), "j1");
}

#[test]
fn a_refused_submit_many_leaves_no_trace_in_its_group() {
    if !grouping("forms a commit group") {
        return;
    }
    let env = Env::with_jobs(1, 3);
    let a = env.auth.clone();
    let before = a.events(0, 1000).unwrap().len();
    let (a1, a2, a3) = (a.clone(), a.clone(), a.clone());
    let out: Vec<Result<String>> = in_one_group(
        &env,
        &a,
        vec![
            Box::new(move || {
                a1.submit("p", &JobSpec::new("n1", b"1".to_vec()))
                    .map(|s| format!("{s:?}"))
            }),
            // All or nothing: `j0` exists with another payload.
            Box::new(move || {
                a2.submit_many(
                    "p",
                    &[
                        JobSpec::new("m1", b"1".to_vec()),
                        JobSpec::new("j0", b"other".to_vec()),
                    ],
                )
                .map(|v| format!("{v:?}"))
            }),
            Box::new(move || {
                a3.submit_many("p", &[JobSpec::new("m2", b"2".to_vec())])
                    .map(|v| format!("{v:?}"))
            }),
        ],
    );
    assert_eq!(out[0].as_deref().unwrap(), "Created");
    assert_eq!(code(&out[1]), Some(ErrorCode::Conflict));
    assert_eq!(out[2].as_deref().unwrap(), "[Created]");
    assert_eq!(code(&a.job("p", "m1")), Some(ErrorCode::NotFound));
    assert_eq!(a.job("p", "m2").unwrap().state, JobState::Requested);
    assert_eq!(a.events(0, 1000).unwrap().len(), before + 2);
    assert!(a.check().unwrap().ok());
}
