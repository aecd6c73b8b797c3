//! Idempotent calls on both backends (docs/design.md, "Idempotent calls"):
//! claims under a request ID replay the same lease while it is current and
//! get its own error after; transitions retried after they committed (an
//! imported copy of the lease stands for the caller that never heard the
//! answer) are answered with what was recorded, and a replay with other
//! facts, another secret or other arguments is a conflict that changes
//! nothing.
mod common;
use common::*;
use tenure::*;

fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

fn count_events(a: &Authority) -> usize {
    a.events(0, MAX_PAGE).unwrap().len()
}

/// A second handle on the same lease whose local state never heard of the
/// first handle's calls: what a caller retrying after a lost answer holds.
fn lost_answer_copy(a: &Authority, l: &Lease) -> Lease {
    a.import_lease(l.export_token().unwrap().expose()).unwrap()
}

fn fact(k: &str, v: &str) -> Fact {
    Fact::new(k, v)
}

#[test]
fn a_claim_retried_under_its_request_id_returns_the_same_lease_and_changes_nothing() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    let req = ClaimRequest::new("req-1").unwrap();
    let first = a.claim_idempotent("p", "j1", "w", secs(10), &req).unwrap();
    assert!(!first.replayed);
    let (view, events) = (a.job("p", "j1").unwrap(), count_events(a));
    env.clock.advance(1_000);
    let again = a.claim_idempotent("p", "j1", "w", secs(10), &req).unwrap();
    assert!(again.replayed);
    assert_eq!(again.value.claim_id(), first.value.claim_id());
    assert_eq!(again.value.attempt(), 1);
    assert_eq!(again.value.expires_us(), first.value.expires_us());
    assert_eq!(a.job("p", "j1").unwrap(), view, "no attempt consumed");
    assert_eq!(count_events(a), events);
    // The replayed lease is the lease: it completes the job.
    again.value.complete(&[]).unwrap();
    assert_eq!(code(first.value.release()), ErrorCode::LeaseClosed);

    let next = ClaimRequest::new("req-2").unwrap();
    let n1 = a.claim_next_idempotent("p", "w", secs(10), &next).unwrap();
    assert_eq!((n1.value.job(), n1.replayed), ("j0", false));
    let events = count_events(a);
    let n2 = a.claim_next_idempotent("p", "w", secs(10), &next).unwrap();
    assert!(n2.replayed);
    assert_eq!(
        n2.value.job(),
        "j0",
        "claim-next replays its job, not the next one"
    );
    assert_eq!(n2.value.claim_id(), n1.value.claim_id());
    assert_eq!(count_events(a), events);
    assert_eq!(a.job("p", "j2").unwrap().attempts, 0);
}

#[test]
fn a_request_id_with_another_secret_or_other_arguments_is_a_conflict_and_changes_nothing() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let req = ClaimRequest::new("req").unwrap();
    let l = a
        .claim_idempotent("p", "j0", "w", secs(10), &req)
        .unwrap()
        .value;
    let (view, events) = (a.job("p", "j0").unwrap(), count_events(a));
    let other_secret = ClaimRequest::new("req").unwrap();
    assert_eq!(
        code(a.claim_idempotent("p", "j0", "w", secs(10), &other_secret)),
        ErrorCode::Conflict
    );
    for r in [
        a.claim_idempotent("p", "j1", "w", secs(10), &req),
        a.claim_idempotent("p", "j0", "w2", secs(10), &req),
        a.claim_idempotent("p", "j0", "w", secs(11), &req),
        a.claim_next_idempotent("p", "w", secs(10), &req),
    ] {
        assert_eq!(code(r), ErrorCode::Conflict);
    }
    assert_eq!(a.job("p", "j0").unwrap(), view);
    assert_eq!(a.job("p", "j1").unwrap().attempts, 0);
    assert_eq!(count_events(a), events);
    // The same ID in another production is another request.
    a.create_production("q").unwrap();
    a.submit("q", &JobSpec::new("j0", b"x".to_vec())).unwrap();
    assert!(
        !a.claim_idempotent("q", "j0", "w", secs(10), &req)
            .unwrap()
            .replayed
    );
    l.release().unwrap();
}

#[test]
fn bad_request_ids_are_invalid_arguments() {
    for bad in ["", " x", "a/b", "über", &"x".repeat(129)] {
        assert_eq!(
            code(ClaimRequest::new(bad)),
            ErrorCode::InvalidArgument,
            "{bad:?}"
        );
    }
    let ok = ClaimRequest::new("worker-7@host:3.r+1").unwrap();
    assert_eq!(ok.request_id(), "worker-7@host:3.r+1");
    let dbg = format!("{ok:?}");
    assert!(
        dbg.contains("worker-7@host:3.r+1") && !dbg.contains("secret:"),
        "{dbg}"
    );
}

#[test]
fn a_claim_retried_after_its_claim_ended_gets_that_claims_error() {
    let env = Env::with_jobs(4, 3);
    let a = &env.auth;
    let mk = |id: &str, job: &str| {
        let r = ClaimRequest::new(id).unwrap();
        let l = a
            .claim_idempotent("p", job, "w", secs(10), &r)
            .unwrap()
            .value;
        (r, l)
    };
    let (r0, l0) = mk("r0", "j0");
    l0.complete(&[]).unwrap();
    assert_eq!(
        code(a.claim_idempotent("p", "j0", "w", secs(10), &r0)),
        ErrorCode::LeaseClosed
    );
    let (r1, l1) = mk("r1", "j1");
    l1.release().unwrap();
    let taken = a.claim("p", "j1", "other", secs(10)).unwrap();
    assert_eq!(
        code(a.claim_idempotent("p", "j1", "w", secs(10), &r1)),
        ErrorCode::StaleLease
    );
    assert_eq!(a.job("p", "j1").unwrap().claim_id, Some(taken.claim_id()));
    let (r2, _l2) = mk("r2", "j2");
    a.cancel("p", "j2").unwrap();
    assert_eq!(
        code(a.claim_idempotent("p", "j2", "w", secs(10), &r2)),
        ErrorCode::Cancelled
    );
    let (r3, _l3) = mk("r3", "j3");
    env.clock.advance(11_000_000);
    let events = count_events(a);
    assert_eq!(
        code(a.claim_idempotent("p", "j3", "w", secs(10), &r3)),
        ErrorCode::LeaseExpired
    );
    assert_eq!(a.job("p", "j3").unwrap().attempts, 1, "no attempt consumed");
    assert_eq!(count_events(a), events);
}

#[test]
fn transitions_retried_after_they_committed_are_replays_with_the_recorded_outcome() {
    let env = Env::with_jobs(4, 5);
    let a = &env.auth;
    // Release.
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    let retry = lost_answer_copy(a, &l);
    assert_eq!(l.release().unwrap(), JobState::Requested);
    let events = count_events(a);
    let r = retry.release_idempotent().unwrap();
    assert_eq!((r.value, r.replayed), (JobState::Requested, true));
    assert_eq!(retry.status(), LeaseStatus::Closed);
    assert_eq!(count_events(a), events);
    // The plain call keeps its error.
    let again = lost_answer_copy(a, &a.claim("p", "j0", "w", secs(10)).unwrap());
    again.release().unwrap();
    assert_eq!(
        code(lost_answer_copy_of_closed(a, "j0")),
        ErrorCode::StaleLease
    );

    // Fail: same reason and permanence is a replay; another is a conflict.
    let l = a.claim("p", "j1", "w", secs(10)).unwrap();
    let (retry, other) = (lost_answer_copy(a, &l), lost_answer_copy(a, &l));
    assert_eq!(l.fail("disk full", false).unwrap(), JobState::Requested);
    let (view, events) = (a.job("p", "j1").unwrap(), count_events(a));
    assert_eq!(
        code(other.fail_idempotent("disk full", true)),
        ErrorCode::Conflict
    );
    assert_eq!(
        code(other.fail_idempotent("other", false)),
        ErrorCode::Conflict
    );
    assert_eq!(code(other.release_idempotent()), ErrorCode::LeaseClosed);
    let r = retry.fail_idempotent("disk full", false).unwrap();
    assert_eq!((r.value, r.replayed), (JobState::Requested, true));
    assert_eq!(a.job("p", "j1").unwrap(), view);
    assert_eq!(count_events(a), events);

    // Complete: same facts is a replay; other facts a conflict.
    let l = a.claim("p", "j2", "w", secs(10)).unwrap();
    let (retry, other) = (lost_answer_copy(a, &l), lost_answer_copy(a, &l));
    let facts = [fact("out", "s3://x"), fact("rows", "7")];
    l.complete(&facts).unwrap();
    let (published, events) = (a.facts("p", "j2").unwrap(), count_events(a));
    assert_eq!(
        code(other.complete_idempotent(&[fact("out", "s3://y"), fact("rows", "7")])),
        ErrorCode::Conflict
    );
    assert_eq!(
        code(other.complete_idempotent(&facts[..1])),
        ErrorCode::Conflict
    );
    assert_eq!(code(other.complete(&facts)), ErrorCode::LeaseClosed);
    let reordered = [fact("rows", "7"), fact("out", "s3://x")];
    let r = retry.complete_idempotent(&reordered).unwrap();
    assert!(r.replayed);
    assert_eq!(a.facts("p", "j2").unwrap(), published, "applied once");
    assert_eq!(count_events(a), events);

    // A lease that is not the job's claim any more stays stale.
    let l = a.claim("p", "j3", "w", secs(10)).unwrap();
    let retry = lost_answer_copy(a, &l);
    l.release().unwrap();
    let _next = a.claim("p", "j3", "w2", secs(10)).unwrap();
    assert_eq!(code(retry.release_idempotent()), ErrorCode::StaleLease);
}

/// A fresh claim's copy of job `job`, released through another copy.
fn lost_answer_copy_of_closed(a: &Authority, job: &str) -> Result<JobState> {
    let l = a.claim("p", job, "w", secs(10)).unwrap();
    let copy = lost_answer_copy(a, &l);
    l.release().unwrap();
    let _other = a.claim("p", job, "w3", secs(10)).unwrap();
    copy.release_idempotent().map(|a| a.value)
}

#[test]
fn a_renewal_retried_after_it_committed_returns_the_expiry_it_set() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    let limit = Delay::from_micros(15_000_000).unwrap();
    a.submit("p", &JobSpec::new("j", b"x".to_vec()).max_hold(limit))
        .unwrap();
    let l = a.claim("p", "j", "w", secs(10)).unwrap();
    let retry = lost_answer_copy(a, &l);
    env.clock.advance(1_000_000);
    // Capped by the hold limit: a retry asks for the same capped expiry.
    l.renew(secs(20)).unwrap();
    let capped = l.expires_us();
    assert_eq!(capped, T0 + 15_000_000);
    let events = count_events(a);
    env.clock.advance(1_000);
    assert_eq!(code(retry.renew(secs(20))), ErrorCode::HoldLimit);
    let r = retry.renew_idempotent(secs(20)).unwrap();
    assert_eq!((r.value, r.replayed), (capped, true));
    assert_eq!(retry.expires_us(), capped);
    assert_eq!(count_events(a), events);
    // A shorter renewal is not the one that set the expiry: refused.
    assert_eq!(
        code(retry.renew_idempotent(secs(1))),
        ErrorCode::NotExtended
    );

    // Without a limit, a retry in the same microsecond replays; later, it
    // simply renews again.
    a.submit("p", &JobSpec::new("k", b"x".to_vec())).unwrap();
    let l = a.claim("p", "k", "w", secs(10)).unwrap();
    let retry = lost_answer_copy(a, &l);
    env.clock.advance(1_000);
    l.renew(secs(10)).unwrap();
    let set = l.expires_us();
    let r = retry.renew_idempotent(secs(10)).unwrap();
    assert_eq!((r.value, r.replayed), (set, true));
    env.clock.advance(1_000);
    let r = retry.renew_idempotent(secs(10)).unwrap();
    assert_eq!((r.value, r.replayed), (set + 1_000, false));
}

#[test]
fn batched_calls_give_each_lease_its_replay_outcome() {
    let env = Env::with_jobs(4, 3);
    let a = &env.auth;
    let ls = a.claim_next_many("p", "w", secs(10), 4).unwrap();
    let copies: Vec<Lease> = ls.iter().map(|l| lost_answer_copy(a, l)).collect();
    let facts = [fact("k", "v")];
    ls[0].complete(&facts).unwrap();
    ls[1].release().unwrap();
    let events = count_events(a);
    let out = a
        .complete_many_idempotent(&[
            (&copies[0], &facts[..]),
            (&copies[1], &facts[..]),
            (&copies[2], &facts[..]),
        ])
        .unwrap();
    assert!(out[0].as_ref().unwrap().replayed);
    assert_eq!(out[1].as_ref().unwrap_err().code(), ErrorCode::LeaseClosed);
    assert!(!out[2].as_ref().unwrap().replayed);
    assert_eq!(
        count_events(a),
        events + 1,
        "only the fresh completion wrote"
    );
    let out = a
        .release_many_idempotent(&[&copies[1], &copies[3]])
        .unwrap();
    let out: Vec<(JobState, bool)> = out
        .into_iter()
        .map(|r| r.map(|x| (x.value, x.replayed)).unwrap())
        .collect();
    assert_eq!(
        out,
        [(JobState::Requested, true), (JobState::Requested, false)]
    );
    // The plain batched call keeps the lease_closed answer (ls[2] never
    // heard of the completion its copy made).
    assert_eq!(
        a.complete_many(&[(&ls[2], &facts[..])]).unwrap()[0]
            .as_ref()
            .unwrap_err()
            .code(),
        ErrorCode::LeaseClosed
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn request_records_go_with_their_job() {
    if skip_on_postgres("reads the SQLite file") {
        return;
    }
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let req = ClaimRequest::new("r").unwrap();
    a.claim_idempotent("p", "j0", "w", secs(10), &req)
        .unwrap()
        .value
        .complete(&[])
        .unwrap();
    let rows = || -> i64 {
        rusqlite::Connection::open(env.path())
            .unwrap()
            .query_row("SELECT count(*) FROM claim_requests", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(rows(), 1);
    a.delete_production("p").unwrap();
    assert_eq!(rows(), 0);
}

#[test]
fn a_v2_store_migrates_to_request_ids() {
    if skip_on_postgres("SQLite fixture") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    v2_store(&path);
    let clock = ManualClock::new(T0);
    let a = Authority::open(&path, &Options::new().clock(clock)).unwrap();
    assert_eq!(a.migrated_from(), 2);
    let req = ClaimRequest::new("after-migration").unwrap();
    let l = a.claim_next_idempotent("old", "w", secs(10), &req).unwrap();
    assert_eq!((l.value.job(), l.replayed), ("waiting", false));
    let again = a.claim_next_idempotent("old", "w", secs(10), &req).unwrap();
    assert!(again.replayed);
    assert_eq!(again.value.claim_id(), l.value.claim_id());
    assert!(a.check().unwrap().ok());
}

/// Stores recorded at schema 4 (before the SQLite rebuild and the hot
/// queue) and at 5 (before request IDs) migrate to request IDs.
#[test]
fn schema_4_and_5_stores_migrate_to_request_ids() {
    for from in [4, 5] {
        let env = Env::with_jobs(1, 3);
        let l = env.auth.claim("p", "j0", "w", secs(10)).unwrap();
        match &env.pg {
            Some(db) => pg::client(&db.url)
                .batch_execute(&format!(
                    "DROP TABLE tenure.claim_requests;
                     UPDATE tenure.meta SET value = {from} WHERE key = 'schema_version';"
                ))
                .unwrap(),
            None => rusqlite::Connection::open(env.path())
                .unwrap()
                .execute_batch(&format!(
                    "DROP TABLE claim_requests; PRAGMA user_version = {from};"
                ))
                .unwrap(),
        }
        let a = env.reopen();
        assert_eq!(a.migrated_from(), from);
        l.release().unwrap();
        let req = ClaimRequest::new("r").unwrap();
        let first = a.claim_idempotent("p", "j0", "w", secs(10), &req).unwrap();
        assert!(
            a.claim_idempotent("p", "j0", "w", secs(10), &req)
                .unwrap()
                .replayed
        );
        assert_eq!(first.value.attempt(), 2);
        assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
        assert!(a.check().unwrap().ok());
    }
}

#[test]
fn a_batch_claim_retried_under_its_request_id_returns_the_same_leases() {
    let env = Env::with_jobs(5, 3);
    let a = &env.auth;
    let req = ClaimRequest::new("batch").unwrap();
    let first = a
        .claim_next_many_idempotent("p", "w", secs(10), 3, &req)
        .unwrap();
    assert!(!first.replayed);
    let ls: Vec<Lease> = first.value.into_iter().map(|r| r.unwrap()).collect();
    let jobs: Vec<&str> = ls.iter().map(|l| l.job()).collect();
    assert_eq!(jobs, ["j0", "j1", "j2"]);
    let (views, events): (Vec<JobView>, usize) = (
        (0..5)
            .map(|i| a.job("p", &format!("j{i}")).unwrap())
            .collect(),
        count_events(a),
    );
    env.clock.advance(1_000);
    let again = a
        .claim_next_many_idempotent("p", "w", secs(10), 3, &req)
        .unwrap();
    assert!(again.replayed);
    let rs: Vec<Lease> = again.value.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(rs.len(), 3);
    for (l, r) in ls.iter().zip(&rs) {
        assert_eq!(
            (r.job(), r.claim_id(), r.attempt(), r.expires_us()),
            (l.job(), l.claim_id(), l.attempt(), l.expires_us())
        );
    }
    let now: Vec<JobView> = (0..5)
        .map(|i| a.job("p", &format!("j{i}")).unwrap())
        .collect();
    assert_eq!(now, views, "no attempt consumed, nothing claimed");
    assert_eq!(count_events(a), events);
    // The replayed leases carry the claims' secrets: they act as the lease.
    rs[1].complete(&[]).unwrap();
    assert_eq!(code(ls[1].release()), ErrorCode::LeaseClosed);
    // A retry after one member completed: that slot is its own error, the
    // others replay.
    let third = a
        .claim_next_many_idempotent("p", "w", secs(10), 3, &req)
        .unwrap();
    assert!(third.replayed);
    let codes: Vec<Option<ErrorCode>> = third
        .value
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.code()))
        .collect();
    assert_eq!(codes, [None, Some(ErrorCode::LeaseClosed), None]);
    assert_eq!(
        third.value[2].as_ref().unwrap().claim_id(),
        ls[2].claim_id()
    );
    // Members that ended otherwise: released and reclaimed (stale),
    // cancelled, expired.
    rs[0].release().unwrap();
    let taken = a.claim("p", "j0", "other", secs(30)).unwrap();
    a.cancel("p", "j2").unwrap();
    let codes = |r: Applied<Vec<Result<Lease>>>| -> Vec<Option<ErrorCode>> {
        r.value
            .iter()
            .map(|r| r.as_ref().err().map(|e| e.code()))
            .collect()
    };
    assert_eq!(
        codes(
            a.claim_next_many_idempotent("p", "w", secs(10), 3, &req)
                .unwrap()
        ),
        [
            Some(ErrorCode::StaleLease),
            Some(ErrorCode::LeaseClosed),
            Some(ErrorCode::Cancelled)
        ]
    );
    taken.release().unwrap();
    let req2 = ClaimRequest::new("batch-2").unwrap();
    let two = a
        .claim_next_many_idempotent("p", "w", secs(10), 2, &req2)
        .unwrap();
    assert_eq!(two.value.len(), 2);
    env.clock.advance(11_000_000);
    assert_eq!(
        codes(
            a.claim_next_many_idempotent("p", "w", secs(10), 2, &req2)
                .unwrap()
        ),
        [Some(ErrorCode::LeaseExpired), Some(ErrorCode::LeaseExpired)]
    );
    assert!(a.check().unwrap().ok());
}

#[test]
fn a_batch_request_id_with_another_secret_or_other_arguments_is_a_conflict() {
    let env = Env::with_jobs(4, 3);
    let a = &env.auth;
    let req = ClaimRequest::new("req").unwrap();
    let got = a
        .claim_next_many_idempotent("p", "w", secs(10), 2, &req)
        .unwrap();
    assert_eq!(got.value.len(), 2);
    let views: Vec<JobView> = (0..4)
        .map(|i| a.job("p", &format!("j{i}")).unwrap())
        .collect();
    let events = count_events(a);
    let other_secret = ClaimRequest::new("req").unwrap();
    for r in [
        a.claim_next_many_idempotent("p", "w", secs(10), 2, &other_secret),
        a.claim_next_many_idempotent("p", "w", secs(10), 3, &req),
        a.claim_next_many_idempotent("p", "w2", secs(10), 2, &req),
        a.claim_next_many_idempotent("p", "w", secs(11), 2, &req),
    ] {
        assert_eq!(code(r), ErrorCode::Conflict);
    }
    // The batch's ID used by a single claim, and a single claim's ID used
    // by a batch, are conflicts too.
    assert_eq!(
        code(a.claim_next_idempotent("p", "w", secs(10), &req)),
        ErrorCode::Conflict
    );
    assert_eq!(
        code(a.claim_idempotent("p", "j3", "w", secs(10), &req)),
        ErrorCode::Conflict
    );
    let single = ClaimRequest::new("single").unwrap();
    a.claim_next_idempotent("p", "w", secs(10), &single)
        .unwrap();
    let views_after: Vec<JobView> = (0..4)
        .map(|i| a.job("p", &format!("j{i}")).unwrap())
        .collect();
    let events_after = count_events(a);
    assert_eq!(
        code(a.claim_next_many_idempotent("p", "w", secs(10), 1, &single)),
        ErrorCode::Conflict
    );
    assert_eq!(views[..2], views_after[..2], "the batch's claims stand");
    assert_eq!(
        (0..4)
            .map(|i| a.job("p", &format!("j{i}")).unwrap())
            .collect::<Vec<_>>(),
        views_after,
        "a conflict changes nothing"
    );
    assert_eq!(count_events(a), events_after);
    assert_eq!(events_after, events + 1);
}

#[test]
fn a_batch_claim_that_finds_nothing_leaves_its_request_id_unused() {
    let env = Env::with_jobs(0, 3);
    let a = &env.auth;
    let req = ClaimRequest::new("later").unwrap();
    let none = a
        .claim_next_many_idempotent("p", "w", secs(10), 4, &req)
        .unwrap();
    assert!(none.value.is_empty() && !none.replayed);
    // Unused: the same request is fresh once work arrives, and fewer
    // claimable than asked is fewer claims.
    a.submit("p", &JobSpec::new("j0", b"x".to_vec())).unwrap();
    let one = a
        .claim_next_many_idempotent("p", "w", secs(10), 4, &req)
        .unwrap();
    assert!(!one.replayed);
    assert_eq!(one.value.len(), 1);
    let again = a
        .claim_next_many_idempotent("p", "w", secs(10), 4, &req)
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.value.len(), 1);
    assert_eq!(
        code(a.claim_next_many_idempotent("p", "w", secs(10), 0, &req)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.claim_next_many_idempotent("p", "w", secs(10), validate::MAX_BATCH + 1, &req)),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn a_batch_claim_in_an_edit_is_pending_until_commit_and_replays_after() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    let req = ClaimRequest::new("in-edit").unwrap();
    let mut e = a.edit().unwrap();
    let got = e
        .claim_next_many_idempotent("p", "w", secs(10), 2, &req)
        .unwrap();
    assert!(!got.replayed);
    let ls: Vec<Lease> = got.value.into_iter().map(|r| r.unwrap()).collect();
    assert!(ls.iter().all(|l| l.status() == LeaseStatus::Pending));
    e.commit().unwrap();
    assert!(ls.iter().all(|l| l.status() == LeaseStatus::Active));
    let again = a
        .claim_next_many_idempotent("p", "w", secs(10), 2, &req)
        .unwrap();
    assert!(again.replayed);
    assert_eq!(
        again.value[1].as_ref().unwrap().claim_id(),
        ls[1].claim_id()
    );
}

#[test]
fn two_batch_claims_racing_under_one_request_answer_with_the_same_claims() {
    // Enough jobs that the later claim's scan finds some past the ones the
    // earlier claim holds (design.md: a later claim-next that finds
    // nothing claimable answers none).
    let env = Env::with_jobs(12, 3);
    let b = env.reopen();
    let req = ClaimRequest::new("race").unwrap();
    for round in 0..3 {
        let req = if round == 0 {
            req.clone()
        } else {
            ClaimRequest::new(&format!("race-{round}")).unwrap()
        };
        let barrier = std::sync::Barrier::new(2);
        let run = |a: &Authority| {
            barrier.wait();
            let got = a
                .claim_next_many_idempotent("p", "w", secs(10), 2, &req)
                .unwrap();
            let ids: Vec<String> = got
                .value
                .iter()
                .map(|l| l.as_ref().unwrap().claim_id().to_string())
                .collect();
            (ids, got.replayed)
        };
        let (x, y) = std::thread::scope(|s| {
            let x = s.spawn(|| run(&env.auth));
            let y = s.spawn(|| run(&b));
            (x.join().unwrap(), y.join().unwrap())
        });
        assert_eq!(x.0, y.0, "round {round}: both answer with the same claims");
        assert_eq!(x.0.len(), 2);
        assert!(x.1 != y.1, "round {round}: exactly one is the fresh claim");
    }
    let attempts: u32 = (0..12)
        .map(|i| env.auth.job("p", &format!("j{i}")).unwrap().attempts)
        .sum();
    assert_eq!(attempts, 6, "three batches of two, no claim made twice");
    assert!(env.auth.check().unwrap().ok());
}
