mod common;
use common::*;
use tenure::*;

#[test]
fn full_lifecycle() {
    let env = Env::with_jobs(2, 3);
    let a = &env.auth;
    let l = a.claim_next("p", "w1", secs(10)).unwrap();
    assert_eq!(l.job(), "j0");
    assert_eq!(l.attempt(), 1);
    assert_eq!(l.status(), LeaseStatus::Active);
    assert_eq!(l.expires_us(), T0 + 10_000_000);
    let v = a.job("p", "j0").unwrap();
    assert_eq!(v.state, JobState::Claimed);
    assert_eq!(v.claim_id, Some(l.claim_id()));
    assert_eq!(v.holder.as_deref(), Some("w1"));
    env.clock.advance(5_000_000);
    l.renew(secs(10)).unwrap();
    assert_eq!(l.expires_us(), T0 + 15_000_000);
    l.complete(&[Fact::new("out", "x")]).unwrap();
    assert_eq!(l.status(), LeaseStatus::Closed);
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Completed);
    let facts = a.facts("p", "j0").unwrap();
    assert_eq!(facts[0].key, "out");
    assert!(facts
        .iter()
        .any(|f| f.key == "tenure.claim_id" && f.value == l.claim_id().to_string()));
    assert_eq!(l.renew(secs(1)).unwrap_err().code(), ErrorCode::LeaseClosed);
    assert!(a.check().unwrap().ok(), "{:?}", a.check().unwrap());
}
