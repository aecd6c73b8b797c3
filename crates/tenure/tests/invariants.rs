//! One or more tests per invariant and rule of docs/design.md. Each would fail if
//! the rule it names were broken.
mod common;
use common::*;
use tenure::*;

fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

fn event_count(a: &Authority) -> usize {
    a.events(0, MAX_PAGE).unwrap().len()
}

// ---- Invariant 1: at most one unexpired lease per job ----

#[test]
fn inv1_second_claim_of_live_job_is_refused() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l1 = a.claim("p", "j0", "w1", secs(10)).unwrap();
    assert_eq!(
        code(a.claim("p", "j0", "w2", secs(10))),
        ErrorCode::NotClaimable
    );
    assert_eq!(
        code(a.claim_next("p", "w2", secs(10))),
        ErrorCode::NoJobAvailable
    );
    // One microsecond before expiry it is still held.
    env.clock.set(l1.expires_us() - 1);
    assert_eq!(
        code(a.claim("p", "j0", "w2", secs(10))),
        ErrorCode::NotClaimable
    );
    // At expiry it is claimable again and the old lease is fenced.
    env.clock.set(l1.expires_us());
    let l2 = a.claim("p", "j0", "w2", secs(10)).unwrap();
    assert_ne!(l1.claim_id(), l2.claim_id());
    assert_eq!(l2.attempt(), 2);
    assert_eq!(code(l1.complete(&[])), ErrorCode::StaleLease);
    assert_eq!(code(l1.renew(secs(100))), ErrorCode::StaleLease);
    assert_eq!(code(l1.release()), ErrorCode::StaleLease);
    l2.complete(&[]).unwrap();
    assert!(a.check().unwrap().ok());
}

#[test]
fn inv1_claim_next_skips_live_and_takes_expired() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let l0 = a.claim_next("p", "w", secs(5)).unwrap();
    let l1 = a.claim_next("p", "w", secs(50)).unwrap();
    assert_eq!((l0.job(), l1.job()), ("j0", "j1"));
    assert_eq!(
        code(a.claim_next("p", "w", secs(5))),
        ErrorCode::NoJobAvailable
    );
    env.clock.advance(5_000_000);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Expired);
    let again = a.claim_next("p", "w2", secs(5)).unwrap();
    assert_eq!(again.job(), "j0");
    assert!(a
        .events(0, 0)
        .unwrap()
        .iter()
        .any(|e| e.detail.contains("reclaimed after claim")));
}

// ---- Invariant 2: every claimant transition is checked; failures change nothing ----

fn snapshot(a: &Authority) -> (JobView, usize, Vec<PublishedFact>) {
    (
        a.job("p", "j0").unwrap(),
        event_count(a),
        a.facts("p", "j0").unwrap(),
    )
}

#[test]
fn inv2_expired_lease_gets_expired_and_changes_nothing() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    env.clock.advance(10_000_000);
    let before = snapshot(a);
    assert_eq!(code(l.renew(secs(10))), ErrorCode::LeaseExpired);
    assert_eq!(code(l.release()), ErrorCode::LeaseExpired);
    assert_eq!(code(l.fail("x", false)), ErrorCode::LeaseExpired);
    assert_eq!(
        code(l.complete(&[Fact::new("k", "v")])),
        ErrorCode::LeaseExpired
    );
    assert_eq!(snapshot(a), before);
    // Local status is unchanged by failures.
    assert_eq!(l.status(), LeaseStatus::Active);
}

#[test]
fn inv2_cancelled_job_gets_cancelled() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(a.cancel("p", "j0").unwrap(), CancelOutcome::Cancelled);
    let before = snapshot(a);
    assert_eq!(code(l.complete(&[])), ErrorCode::Cancelled);
    assert_eq!(code(l.renew(secs(20))), ErrorCode::Cancelled);
    assert_eq!(snapshot(a), before);
    assert_eq!(
        a.cancel("p", "j0").unwrap(),
        CancelOutcome::AlreadyCancelled
    );
}

#[test]
fn inv2_closed_lease_via_another_copy() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    let copy = a.import_lease(l.export_token().unwrap().expose()).unwrap();
    copy.release().unwrap();
    // The original does not know locally; the store says closed.
    assert_eq!(l.status(), LeaseStatus::Active);
    assert_eq!(code(l.complete(&[])), ErrorCode::LeaseClosed);
    assert_eq!(code(copy.complete(&[])), ErrorCode::LeaseClosed);
}

#[test]
fn inv2_secret_is_checked_not_just_claim_id() {
    // Two authorities on the same store: a lease is checked against the store,
    // and a forged token with the right IDs but a wrong secret is stale.
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    let tok = l.export_token().unwrap();
    let text = tok.expose();
    let (head, body) = text.split_at(text.len() - 4);
    let flipped = format!("{head}{}", if body == "AAAA" { "BBBB" } else { "AAAA" });
    assert_eq!(code(a.import_lease(&flipped)), ErrorCode::StaleLease);
    // A second handle on the same file sees the same lease.
    let b = env.reopen();
    let lb = b.import_lease(text).unwrap();
    assert_eq!(lb.claim_id(), l.claim_id());
    lb.complete(&[]).unwrap();
    assert_eq!(code(l.complete(&[])), ErrorCode::LeaseClosed);
}

#[test]
fn inv2_stale_messages_say_whether_the_claim_or_the_secret_differs() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let old = a.claim("p", "j0", "w1", secs(10)).unwrap();
    let old_token = old.export_token().unwrap();
    env.clock.set(old.expires_us());
    let new = a.claim("p", "j0", "w2", secs(10)).unwrap();
    let new_claim = new.claim_id().to_string();

    // A lease knows its claim ID: it is told another claim replaced it.
    let e = old.renew(secs(10)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StaleLease);
    let m = e.to_string();
    assert!(m.contains("no longer held by this lease"), "{m}");
    assert!(m.contains(&new_claim), "{m}");

    // A token carries only the secret: production and job are right, the
    // secret is not the current claim's.
    let stale = old_token.expose();
    let (head, body) = stale.split_at(stale.len() - 4);
    let forged = format!("{head}{}", if body == "AAAA" { "BBBB" } else { "AAAA" });
    for text in [stale, forged.as_str()] {
        let e = a.import_lease(text).unwrap_err();
        assert_eq!(e.code(), ErrorCode::StaleLease);
        let m = e.to_string();
        assert!(
            m.contains("the token's secret does not match the current claim of job p/j0"),
            "{m}"
        );
        assert!(m.contains(&new_claim), "{m}");
        assert!(!m.contains("no longer held"), "{m}");
        assert!(!m.contains(text.split_once('.').unwrap().1), "{m}");
    }
    new.complete(&[]).unwrap();
}

#[test]
fn inv2_lease_of_other_production_or_job_is_not_found() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    assert_eq!(
        code(a.claim("p", "nope", "w", secs(1))),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(a.claim("nope", "j0", "w", secs(1))),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(a.claim_next("nope", "w", secs(1))),
        ErrorCode::NotFound
    );
}

// ---- Invariant 3: pending leases, local status, drop never writes ----

#[test]
fn inv3_pending_until_commit_and_closed_on_abort() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let mut e = a.edit().unwrap();
    let l = e.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(l.status(), LeaseStatus::Pending);
    assert_eq!(code(l.renew(secs(20))), ErrorCode::LeasePending);
    assert_eq!(code(l.export_token()), ErrorCode::LeasePending);
    e.abort();
    assert_eq!(l.status(), LeaseStatus::Closed);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Requested);
    assert_eq!(a.job("p", "j0").unwrap().attempts, 0);

    let mut e = a.edit().unwrap();
    let l = e.claim("p", "j0", "w", secs(10)).unwrap();
    drop(e); // dropped without commit aborts
    assert_eq!(l.status(), LeaseStatus::Closed);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Requested);

    let mut e = a.edit().unwrap();
    let l = e.claim("p", "j0", "w", secs(10)).unwrap();
    e.commit().unwrap();
    assert_eq!(l.status(), LeaseStatus::Active);
    l.renew(secs(20)).unwrap();
}

#[test]
fn inv3_failed_commit_closes_pending_and_keeps_existing() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let existing = a.claim("p", "j1", "w", secs(100)).unwrap();
    let mut e = a.edit().unwrap();
    let pending = e.claim("p", "j0", "w", secs(10)).unwrap();
    e.renew(&existing, secs(200)).unwrap();
    // The pre-commit sample lands past the new claim's expiry: commit fails.
    env.clock.script(&[T0 + 10_000_000]);
    assert_eq!(code(e.commit()), ErrorCode::LeaseExpired);
    assert_eq!(pending.status(), LeaseStatus::Closed);
    assert_eq!(existing.status(), LeaseStatus::Active);
    assert_eq!(
        existing.expires_us(),
        T0 + 100_000_000,
        "renewal did not apply"
    );
    assert_eq!(a.job("p", "j1").unwrap().expires_us, Some(T0 + 100_000_000));
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Requested);
    // The existing lease still works: the next use asks the store.
    existing.renew(secs(150)).unwrap();
}

#[test]
fn inv3_dropping_a_lease_never_writes() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    let before = snapshot(a);
    drop(l);
    assert_eq!(snapshot(a), before);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Claimed);
}

#[test]
fn inv3_successful_end_closes_locally() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(l.release().unwrap(), JobState::Requested);
    assert_eq!(l.status(), LeaseStatus::Closed);
    assert_eq!(code(l.release()), ErrorCode::LeaseClosed);
    let l = a.claim("p", "j1", "w", secs(10)).unwrap();
    assert_eq!(l.fail("boom", false).unwrap(), JobState::Requested);
    assert_eq!(l.status(), LeaseStatus::Closed);
    let l = a.claim("p", "j2", "w", secs(10)).unwrap();
    l.complete(&[]).unwrap();
    assert_eq!(l.status(), LeaseStatus::Closed);
    assert_eq!(code(l.export_token()), ErrorCode::LeaseClosed);
}

// ---- Invariant 5: completion and facts together or not at all ----

#[test]
fn inv5_facts_only_with_completion() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    // Invalid facts: nothing published, job still claimed.
    let bad = [Fact::new("ok", "1"), Fact::new("tenure.claim_id", "forged")];
    assert_eq!(code(l.complete(&bad)), ErrorCode::InvalidArgument);
    assert!(a.facts("p", "j0").unwrap().is_empty());
    // Completion in an edit that aborts: nothing.
    let mut e = a.edit().unwrap();
    e.complete(&l, &[Fact::new("k", "v")]).unwrap();
    e.abort();
    assert!(a.facts("p", "j0").unwrap().is_empty());
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Claimed);
    assert_eq!(l.status(), LeaseStatus::Active);
    // Completion whose commit misses the deadline: nothing.
    let mut e = a.edit().unwrap();
    e.complete(&l, &[Fact::new("k", "v")]).unwrap();
    env.clock.script(&[T0 + 10_000_000]);
    assert_eq!(code(e.commit()), ErrorCode::LeaseExpired);
    assert!(a.facts("p", "j0").unwrap().is_empty());
    assert_eq!(l.status(), LeaseStatus::Active);
}

#[test]
fn inv5_claim_and_complete_atomically_in_one_edit() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let mut e = a.edit().unwrap();
    let l = e.claim_next("p", "w", secs(10)).unwrap();
    e.complete(&l, &[Fact::new("result", "42")]).unwrap();
    // Nothing visible to another handle before commit.
    let other = env.reopen();
    assert_eq!(other.job("p", "j0").unwrap().state, JobState::Requested);
    e.commit().unwrap();
    assert_eq!(l.status(), LeaseStatus::Closed);
    let facts = a.facts("p", "j0").unwrap();
    let keys: Vec<_> = facts.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "result",
            "tenure.claim_id",
            "tenure.holder",
            "tenure.attempt",
            "tenure.completed_us"
        ]
    );
    assert_eq!(a.production_facts("p").unwrap(), facts);
    assert!(a.check().unwrap().ok());
}

// ---- Invariant 11: an execution nonce is accepted once ----

#[test]
fn inv11_a_second_completion_naming_an_execution_nonce_is_a_conflict() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let exec = |output: &str| Execution {
        nonce: NONCE,
        output_path: output.into(),
        output_sha256: "ab".repeat(32),
        output_size: 1,
        exit_status: 0,
    };
    const NONCE: Uuid = Uuid::from_u128(0x1111_2222_3333_4444_5555_6666_7777_8888);
    let first = a.claim("p", "j0", "w1", secs(10)).unwrap();
    first.complete_execution(&exec("/out/j0"), &[]).unwrap();
    let second = a.claim("p", "j1", "w2", secs(10)).unwrap();
    let events = event_count(a);
    assert_eq!(
        code(second.complete_execution(&exec("/out/j1"), &[Fact::new("k", "v")])),
        ErrorCode::Conflict
    );
    // The refusal changed nothing: j1 is still held by its lease, with no
    // facts and no new event, and the lease can still complete without it.
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Claimed);
    assert!(a.facts("p", "j1").unwrap().is_empty());
    assert_eq!(event_count(a), events);
    second.complete(&[]).unwrap();
    assert_eq!(a.job("p", "j1").unwrap().state, JobState::Completed);
}

// ---- Clock ----

#[test]
fn clock_renewal_must_extend() {
    let env = Env::with_jobs(1, 3);
    let l = env.auth.claim("p", "j0", "w", secs(100)).unwrap();
    env.clock.advance(1_000_000);
    // now + 10 s < current expiry: not extended, nothing changes.
    assert_eq!(code(l.renew(secs(10))), ErrorCode::NotExtended);
    // Exactly equal is not later either.
    assert_eq!(code(l.renew(secs(99))), ErrorCode::NotExtended);
    assert_eq!(l.expires_us(), T0 + 100_000_000);
    l.renew(Ttl::from_micros(99_000_001).unwrap()).unwrap();
    assert_eq!(l.expires_us(), T0 + 100_000_001);
}

#[test]
fn clock_renewal_sampled_before_expiry_but_committing_after_is_rejected() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    let exp = l.expires_us();
    // Transition sample 1 µs before expiry, pre-commit sample at expiry.
    env.clock.script(&[exp - 1, exp]);
    assert_eq!(code(l.renew(secs(60))), ErrorCode::LeaseExpired);
    assert_eq!(a.job("p", "j0").unwrap().expires_us, Some(exp));
    assert_eq!(l.expires_us(), exp);
    // The same for complete and release.
    for end in ["complete", "release"] {
        let env = Env::with_jobs(1, 3);
        let l = env.auth.claim("p", "j0", "w", secs(10)).unwrap();
        let exp = l.expires_us();
        env.clock.script(&[exp - 1, exp]);
        let r = if end == "complete" {
            l.complete(&[Fact::new("k", "v")])
        } else {
            l.release().map(|_| ())
        };
        assert_eq!(code(r), ErrorCode::LeaseExpired, "{end}");
        assert!(env.auth.facts("p", "j0").unwrap().is_empty());
        assert_eq!(env.auth.job("p", "j0").unwrap().state, JobState::Expired);
        assert_eq!(l.status(), LeaseStatus::Active);
    }
}

#[test]
fn clock_claim_whose_commit_reaches_its_expiry_fails() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    env.clock.script(&[T0, T0 + 1]);
    assert_eq!(
        code(a.claim("p", "j0", "w", Ttl::from_micros(1).unwrap())),
        ErrorCode::LeaseExpired
    );
    let v = a.job("p", "j0").unwrap();
    assert_eq!((v.state, v.attempts), (JobState::Requested, 0));
}

#[test]
fn clock_rollback_blocks_guarded_ops_until_time_catches_up_and_survives_reopen() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(100)).unwrap();
    env.clock.set(T0 + 10_000_000);
    l.renew(secs(100)).unwrap(); // mark is now T0 + 10 s
    env.clock.set(T0 + 5_000_000);
    assert!(a.clock().unwrap().blocked);
    for r in [
        code(a.claim("p", "j1", "w", secs(1))),
        code(a.claim_next("p", "w", secs(1))),
        code(l.renew(secs(200))),
        code(l.release()),
        code(l.fail("x", false)),
        code(l.complete(&[])),
    ] {
        assert_eq!(r, ErrorCode::ClockRollback);
    }
    // Survives reopen by another handle.
    let b = env.reopen();
    assert_eq!(
        code(b.claim("p", "j1", "w", secs(1))),
        ErrorCode::ClockRollback
    );
    let st = b.clock().unwrap();
    assert_eq!(
        (st.now_us, st.mark_us, st.blocked),
        (T0 + 5_000_000, T0 + 10_000_000, true)
    );
    // Coordinator operations are not guarded.
    b.submit("p", &JobSpec::new("j9", vec![])).unwrap();
    // Once real time passes the mark, everything works again.
    env.clock.set(T0 + 10_000_000);
    l.renew(secs(200)).unwrap();
    b.claim("p", "j1", "w", secs(1)).unwrap();
}

#[test]
fn clock_mark_still_committed_when_operation_fails_after_sampling() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(100)).unwrap();
    env.clock.set(T0 + 50_000_000);
    // Fails after sampling (not extended): its writes roll back, the mark stays.
    assert_eq!(code(l.renew(secs(1))), ErrorCode::NotExtended);
    assert_eq!(a.clock().unwrap().mark_us, T0 + 50_000_000);
    // Same for a commit-time failure in an explicit edit.
    let mut e = a.edit().unwrap();
    e.renew(&l, secs(100)).unwrap();
    env.clock.script(&[T0 + 100_000_000 + 7]);
    assert_eq!(code(e.commit()), ErrorCode::LeaseExpired);
    let b = env.reopen();
    assert_eq!(b.clock().unwrap().mark_us, T0 + 100_000_007);
    // And for an operation failing inside an edit that is then aborted.
    env.clock.set(T0 + 200_000_000);
    let mut e = a.edit().unwrap();
    assert_eq!(code(e.renew(&l, secs(1))), ErrorCode::LeaseExpired);
    e.abort();
    assert_eq!(a.clock().unwrap().mark_us, T0 + 200_000_000);
}

#[test]
fn clock_observation_never_revives_an_expired_lease() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    env.clock.set(T0 + 20_000_000);
    a.create_production("q").unwrap(); // records the later time as the mark
    env.clock.set(T0 + 1_000_000); // back before the expiry
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Expired);
    let listed = a
        .jobs(
            "p",
            &ListQuery {
                state: Some(JobState::Expired),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(listed.len(), 1);
    // Import classifies against the mark too.
    assert_eq!(
        code(a.import_lease(l.export_token().unwrap().expose())),
        ErrorCode::LeaseExpired
    );
}

#[test]
fn clock_forward_jump_expires_at_once() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(3600)).unwrap();
    env.clock.advance(3_600_000_000);
    assert_eq!(code(l.renew(secs(10))), ErrorCode::LeaseExpired);
    a.claim_next("p", "w2", secs(10)).unwrap();
}

// ---- Attempts, failure, release ----

#[test]
fn attempts_are_consumed_by_every_claim_and_not_refunded() {
    let env = Env::with_jobs(1, 2);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(l.release().unwrap(), JobState::Requested);
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(l.attempt(), 2);
    // Last attempt released: failed.
    assert_eq!(l.release().unwrap(), JobState::Failed);
    assert_eq!(
        code(a.claim("p", "j0", "w", secs(10))),
        ErrorCode::NotClaimable
    );
    assert_eq!(code(a.cancel("p", "j0")), ErrorCode::JobTerminal);
}

#[test]
fn fail_retryable_then_permanent() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(l.fail("flaky", false).unwrap(), JobState::Requested);
    assert_eq!(
        a.job("p", "j0").unwrap().last_error.as_deref(),
        Some("flaky")
    );
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(l.fail("broken input", true).unwrap(), JobState::Failed);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Failed);
    let l = a.claim("p", "j1", "w", secs(10)).unwrap();
    assert_eq!(
        code(l.fail(&"r".repeat(1025), false)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(l.status(), LeaseStatus::Active);
}

#[test]
fn expired_claim_without_attempts_becomes_failed_when_a_claim_observes_it() {
    let env = Env::with_jobs(2, 1);
    let a = &env.auth;
    a.claim("p", "j0", "w", secs(10)).unwrap();
    env.clock.advance(10_000_000);
    // Observed as failed already...
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Failed);
    // ...and recorded as failed by the claim that meets it.
    let l = a.claim_next("p", "w", secs(10)).unwrap();
    assert_eq!(l.job(), "j1");
    let evs = a.production_events("p", 0, 0).unwrap();
    assert!(evs
        .iter()
        .any(|e| e.kind == EventKind::Exhausted && e.job.as_deref() == Some("j0")));
    assert!(a.check().unwrap().ok(), "{:?}", a.check().unwrap());
}

// ---- Coordinator ----

#[test]
fn submit_is_idempotent_and_conflicts_on_different_content() {
    let env = Env::new();
    let a = &env.auth;
    assert!(a.create_production("p").unwrap());
    assert!(!a.create_production("p").unwrap());
    let spec = JobSpec::new("j", b"x".to_vec()).priority(3).max_attempts(5);
    assert_eq!(a.submit("p", &spec).unwrap(), Submitted::Created);
    assert_eq!(a.submit("p", &spec).unwrap(), Submitted::Existing);
    assert_eq!(
        code(a.submit(
            "p",
            &JobSpec::new("j", b"y".to_vec()).priority(3).max_attempts(5)
        )),
        ErrorCode::Conflict
    );
    assert_eq!(
        code(a.submit("p", &spec.clone().priority(4))),
        ErrorCode::Conflict
    );
    assert_eq!(
        code(a.submit("p", &spec.clone().max_attempts(4))),
        ErrorCode::Conflict
    );
    assert_eq!(code(a.submit("nope", &spec)), ErrorCode::NotFound);
    assert_eq!(
        code(a.submit("p", &JobSpec::new("k", vec![]).max_attempts(0))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.submit("p", &JobSpec::new("k", vec![]).max_attempts(1001))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(a.submit("p", &JobSpec::new("k", vec![0; (1 << 20) + 1]))),
        ErrorCode::InvalidArgument
    );
    a.submit("p", &JobSpec::new("big", vec![7; 1 << 20]))
        .unwrap();
    assert_eq!(a.payload("p", "big").unwrap().len(), 1 << 20);
    assert_eq!(a.payload("p", "j").unwrap(), b"x");
    assert_eq!(a.job("p", "j").unwrap().max_attempts, 5);
    assert_eq!(JobSpec::new("d", vec![]).max_attempts, 3);
}

#[test]
fn submit_many_is_all_or_nothing() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("x", b"1".to_vec())).unwrap();
    let batch = vec![JobSpec::new("a", vec![]), JobSpec::new("x", b"2".to_vec())];
    assert_eq!(code(a.submit_many("p", &batch)), ErrorCode::Conflict);
    assert_eq!(code(a.job("p", "a")), ErrorCode::NotFound);
    let batch = vec![JobSpec::new("a", vec![]), JobSpec::new("x", b"1".to_vec())];
    assert_eq!(
        a.submit_many("p", &batch).unwrap(),
        vec![Submitted::Created, Submitted::Existing]
    );
    // The same ID twice in one batch: the second sees the first.
    let batch = vec![JobSpec::new("b", vec![]), JobSpec::new("b", vec![])];
    assert_eq!(
        a.submit_many("p", &batch).unwrap(),
        vec![Submitted::Created, Submitted::Existing]
    );
    // A failure after several successes leaves none of them, and the store
    // stays usable.
    let batch = vec![
        JobSpec::new("c1", vec![]),
        JobSpec::new("c2", vec![]),
        JobSpec::new("not a valid id", vec![]),
    ];
    assert_eq!(code(a.submit_many("p", &batch)), ErrorCode::InvalidArgument);
    assert_eq!(code(a.job("p", "c1")), ErrorCode::NotFound);
    a.submit("p", &JobSpec::new("c1", vec![])).unwrap();
    assert!(a.check().unwrap().ok());
}

#[test]
fn claim_next_orders_by_priority_then_age() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    for (j, p) in [("low", 0), ("high1", 5), ("mid", 2), ("high2", 5)] {
        a.submit("p", &JobSpec::new(j, vec![]).priority(p)).unwrap();
    }
    let order: Vec<String> = (0..4)
        .map(|_| a.claim_next("p", "w", secs(10)).unwrap().job().to_owned())
        .collect();
    assert_eq!(order, ["high1", "high2", "mid", "low"]);
}

#[test]
fn cancel_rules() {
    let env = Env::with_jobs(4, 3);
    let a = &env.auth;
    let done = a.claim("p", "j0", "w", secs(10)).unwrap();
    done.complete(&[]).unwrap();
    assert_eq!(code(a.cancel("p", "j0")), ErrorCode::JobTerminal);
    let held = a.claim("p", "j1", "w", secs(10)).unwrap();
    assert_eq!(a.cancel_production("p").unwrap(), 3);
    assert_eq!(code(held.renew(secs(20))), ErrorCode::Cancelled);
    assert_eq!(code(a.claim("p", "j2", "w", secs(1))), ErrorCode::Cancelled);
    assert_eq!(
        code(a.submit("p", &JobSpec::new("new", vec![]))),
        ErrorCode::Cancelled
    );
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Completed);
    assert_eq!(a.cancel_production("p").unwrap(), 0);
    assert!(a.productions().unwrap()[0].cancelled_us.is_some());
    assert_eq!(code(a.cancel("p", "zz")), ErrorCode::NotFound);
    assert!(a.check().unwrap().ok());
}

// ---- Edits ----

#[test]
fn failed_operation_inside_an_edit_leaves_the_edit_usable() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let mut e = a.edit().unwrap();
    let l = e.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(
        code(e.claim("p", "j0", "w", secs(10))),
        ErrorCode::NotClaimable
    );
    assert_eq!(
        code(e.submit("p", &JobSpec::new("bad/id", vec![]))),
        ErrorCode::InvalidArgument
    );
    e.submit("p", &JobSpec::new("new", vec![])).unwrap();
    let l2 = e.claim_next("p", "w", secs(10)).unwrap();
    assert_eq!(l2.job(), "j1");
    e.commit().unwrap();
    assert_eq!(l.status(), LeaseStatus::Active);
    assert_eq!(a.job("p", "new").unwrap().state, JobState::Requested);
}

#[test]
fn pending_lease_of_another_edit_is_refused() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let mut e1 = a.edit().unwrap();
    let l = e1.claim("p", "j0", "w", secs(10)).unwrap();
    e1.commit().unwrap();
    let other = env.reopen();
    let mut e2 = other.edit().unwrap();
    // A lease of another authority handle cannot be used in this edit.
    assert_eq!(code(e2.renew(&l, secs(20))), ErrorCode::InvalidArgument);
    e2.abort();
}

#[test]
fn several_claims_share_one_edit() {
    let env = Env::with_jobs(5, 3);
    let a = &env.auth;
    let mut e = a.edit().unwrap();
    let leases: Vec<Lease> = (0..5)
        .map(|_| e.claim_next("p", "w", secs(10)).unwrap())
        .collect();
    assert_eq!(
        code(e.claim_next("p", "w", secs(10))),
        ErrorCode::NoJobAvailable
    );
    e.commit().unwrap();
    assert!(leases.iter().all(|l| l.status() == LeaseStatus::Active));
}

// ---- Tokens ----

#[test]
fn token_import_distinct_errors() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    assert_eq!(code(a.import_lease("garbage")), ErrorCode::TokenMalformed);
    assert_eq!(
        code(a.import_lease(&"x".repeat(MAX_TOKEN_LEN + 1))),
        ErrorCode::TokenTooLarge
    );
    assert_eq!(
        code(a.import_lease("tenure-lease-v7.AAAA")),
        ErrorCode::TokenUnsupportedVersion
    );
    // Stale: replaced by a later claim.
    let l = a.claim("p", "j0", "w", secs(10)).unwrap();
    let t = l.export_token().unwrap();
    let imported = a.import_lease(t.expose()).unwrap();
    assert_eq!(
        (imported.claim_id(), imported.attempt(), imported.holder()),
        (l.claim_id(), 1, "w")
    );
    assert_eq!(imported.expires_us(), l.expires_us());
    assert_eq!(format!("{imported:?}"), format!("{l:?}"));
    env.clock.advance(10_000_000);
    assert_eq!(code(a.import_lease(t.expose())), ErrorCode::LeaseExpired);
    a.claim("p", "j0", "w2", secs(10)).unwrap();
    assert_eq!(code(a.import_lease(t.expose())), ErrorCode::StaleLease);
    // Cancelled.
    let l = a.claim("p", "j1", "w", secs(10)).unwrap();
    a.cancel("p", "j1").unwrap();
    assert_eq!(
        code(a.import_lease(l.export_token().unwrap().expose())),
        ErrorCode::Cancelled
    );
    // Closed.
    let l = a.claim("p", "j2", "w", secs(10)).unwrap();
    let t = l.export_token().unwrap();
    l.complete(&[]).unwrap();
    assert_eq!(code(a.import_lease(t.expose())), ErrorCode::LeaseClosed);
}

// ---- Observations ----

#[test]
fn listing_filters_and_pages() {
    let env = Env::with_jobs(25, 3);
    let a = &env.auth;
    for _ in 0..5 {
        a.claim_next("p", "w", secs(10))
            .unwrap()
            .complete(&[])
            .unwrap();
    }
    let _held = a.claim_next("p", "w", secs(10)).unwrap();
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = a
            .jobs(
                "p",
                &ListQuery {
                    state: None,
                    after: after.clone(),
                    limit: 7,
                },
            )
            .unwrap();
        if page.is_empty() {
            break;
        }
        after = Some(page.last().unwrap().job.clone());
        all.extend(page);
    }
    assert_eq!(all.len(), 25);
    let mut ids: Vec<_> = all.iter().map(|v| v.job.clone()).collect();
    let sorted = {
        let mut s = ids.clone();
        s.sort();
        s
    };
    assert_eq!(ids, sorted);
    ids.dedup();
    assert_eq!(ids.len(), 25);
    let count = |s| {
        a.jobs(
            "p",
            &ListQuery {
                state: Some(s),
                after: None,
                limit: 1000,
            },
        )
        .unwrap()
        .len()
    };
    assert_eq!(count(JobState::Completed), 5);
    assert_eq!(count(JobState::Claimed), 1);
    assert_eq!(count(JobState::Requested), 19);
    env.clock.advance(10_000_000);
    assert_eq!(count(JobState::Claimed), 0);
    assert_eq!(count(JobState::Expired), 1);
    assert_eq!(
        code(a.jobs("nope", &ListQuery::default())),
        ErrorCode::NotFound
    );
}

#[test]
fn events_page_by_sequence_and_carry_attribution() {
    let env = Env::with_jobs(3, 3);
    let a = &env.auth;
    let l = a.claim("p", "j0", "worker-7@host-3", secs(10)).unwrap();
    l.complete(&[]).unwrap();
    let all = a.events(0, 0).unwrap();
    let mut seqs = Vec::new();
    let mut after = 0;
    loop {
        let page = a.events(after, 2).unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().unwrap().seq;
        seqs.extend(page.iter().map(|e| e.seq));
    }
    assert_eq!(seqs, all.iter().map(|e| e.seq).collect::<Vec<_>>());
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    let claimed = all.iter().find(|e| e.kind == EventKind::Claimed).unwrap();
    assert_eq!(claimed.holder.as_deref(), Some("worker-7@host-3"));
    assert_eq!(claimed.claim_id, Some(l.claim_id()));
    assert_eq!(claimed.attempt, Some(1));
    assert_eq!(claimed.expires_us, Some(T0 + 10_000_000));
    assert_eq!(claimed.state, Some(JobState::Claimed));
    let kinds: Vec<_> = all.iter().map(|e| e.kind).collect();
    assert_eq!(kinds[0], EventKind::ProductionCreated);
    assert_eq!(*kinds.last().unwrap(), EventKind::Completed);
}

#[test]
fn bad_arguments_change_nothing() {
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let before = snapshot(a);
    let mark = a.clock().unwrap().mark_us;
    for r in [
        a.claim("p", "", "w", secs(1)).map(|_| ()),
        a.claim("p", "j0", "", secs(1)).map(|_| ()),
        a.claim("p", "j0", "bad\nholder", secs(1)).map(|_| ()),
        a.claim(&"p".repeat(129), "j0", "w", secs(1)).map(|_| ()),
        a.claim_next("p/x", "w", secs(1)).map(|_| ()),
        a.cancel("p", "../etc").map(|_| ()),
        a.create_production("").map(|_| ()),
    ] {
        assert_eq!(r.unwrap_err().code(), ErrorCode::InvalidArgument);
    }
    assert_eq!(snapshot(a), before);
    assert_eq!(a.clock().unwrap().mark_us, mark);
}

#[test]
fn authority_and_lease_are_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    assert_send_sync::<Authority>();
    assert_send_sync::<Lease>();
    assert_send::<Edit>();
}

#[test]
fn threads_share_one_authority() {
    let env = Env::with_jobs(40, 3);
    let a = env.auth.clone();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let a = a.clone();
            std::thread::spawn(move || {
                let mut done = 0;
                loop {
                    match a.claim_next("p", &format!("t{t}"), secs(60)) {
                        Ok(l) => {
                            l.complete(&[]).unwrap();
                            done += 1;
                        }
                        Err(e) if e.code() == ErrorCode::NoJobAvailable => return done,
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    let total: i32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, 40);
    assert!(a.check().unwrap().ok());
}

#[test]
fn busy_when_the_writer_lock_is_held_and_nothing_changes() {
    if skip_on_postgres(
        "PostgreSQL has no store-wide writer lock; tests/pg_backend.rs checks Busy on a held row",
    ) {
        return;
    }
    let env = Env::with_jobs(1, 3);
    let a = &env.auth;
    let holder = a.edit().unwrap(); // holds the writer lock
    let other = Authority::open(
        env.path(),
        &Options::new()
            .clock(env.clock.clone())
            .busy_timeout(std::time::Duration::from_millis(50)),
    )
    .unwrap();
    assert_eq!(code(other.claim("p", "j0", "w", secs(10))), ErrorCode::Busy);
    assert_eq!(
        code(other.submit("p", &JobSpec::new("x", vec![]))),
        ErrorCode::Busy
    );
    // Reads are not blocked by the writer.
    assert_eq!(other.job("p", "j0").unwrap().state, JobState::Requested);
    drop(holder);
    other.claim("p", "j0", "w", secs(10)).unwrap();
    assert_eq!(
        Authority::open(
            env.path(),
            &Options::new().busy_timeout(std::time::Duration::from_secs(3601))
        )
        .unwrap_err()
        .code(),
        ErrorCode::InvalidArgument
    );
}
