//! Queue statistics (docs/design.md, "Statistics"): after random operation
//! sequences (claims, renewals, releases, failures with and without retry
//! delays, completions, cancels, expiries, clock jumps forwards and back),
//! `Authority::stats` must equal what a full scan of the same store gives:
//! every job's view, every event of the log joined with what the test saw
//! of each claim, and the claim gates the test set (pauses, concurrency and
//! rate limits).
mod common;
use common::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;
use tenure::*;

const JOBS: usize = 8;
const TTLS: [i64; 3] = [1_000_000, 4_000_000, 9_000_000];
const DELAYS: [i64; 3] = [0, 3_000_000, 12_000_000];
const HORIZON: Duration = Duration::from_secs(5);
const WINDOW: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
enum Op {
    Submit {
        job: usize,
        delay: usize,
        max: u32,
        prod: bool,
    },
    Claim {
        job: usize,
        ttl: usize,
    },
    ClaimNext {
        ttl: usize,
    },
    Renew {
        lease: usize,
        ttl: usize,
    },
    Release {
        lease: usize,
    },
    Fail {
        lease: usize,
        permanent: bool,
        delay: Option<usize>,
    },
    Complete {
        lease: usize,
    },
    Cancel {
        job: usize,
    },
    Advance {
        us: i64,
    },
    /// The clock jumps back by this much (guarded operations are refused
    /// until it catches up; reads classify at the high-water mark).
    JumpBack {
        us: i64,
    },
    /// Production `p`'s gates: pause, resume, set or clear a concurrency
    /// limit, set or clear a rate limit.
    Steer {
        what: u8,
        n: u32,
    },
    /// Retention prunes the events older than `secs` (inside the window:
    /// the handle's earlier reads counted some of them).
    PruneEvents {
        secs: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..JOBS, 0..DELAYS.len(), 1u32..4, any::<bool>())
            .prop_map(|(job, delay, max, prod)| Op::Submit { job, delay, max, prod }),
        2 => (0..JOBS, 0..TTLS.len()).prop_map(|(job, ttl)| Op::Claim { job, ttl }),
        3 => (0..TTLS.len()).prop_map(|ttl| Op::ClaimNext { ttl }),
        1 => (0..8usize, 0..TTLS.len()).prop_map(|(lease, ttl)| Op::Renew { lease, ttl }),
        1 => (0..8usize).prop_map(|lease| Op::Release { lease }),
        2 => (0..8usize, any::<bool>(), proptest::option::of(0..DELAYS.len()))
            .prop_map(|(lease, permanent, delay)| Op::Fail { lease, permanent, delay }),
        2 => (0..8usize).prop_map(|lease| Op::Complete { lease }),
        1 => (0..JOBS).prop_map(|job| Op::Cancel { job }),
        3 => (1i64..6_000_000).prop_map(|us| Op::Advance { us }),
        1 => (1i64..3_000_000).prop_map(|us| Op::JumpBack { us }),
        1 => (0u8..6, 1u32..4).prop_map(|(what, n)| Op::Steer { what, n }),
        1 => (1u64..25).prop_map(|secs| Op::PruneEvents { secs }),
    ]
}

/// What the test saw of one claim: when its job became due (from the
/// job's view just before the claim) and the claim's time.
struct Seen {
    since_us: i64,
}

struct Run {
    env: Env,
    leases: Vec<Lease>,
    seen: HashMap<Uuid, Seen>,
    /// The gates of production `p` as the test set them.
    gates: Gates,
    /// Events were pruned: the log no longer holds what a full scan
    /// needs (claims' times, leases' expiries).
    pruned: bool,
}

/// The moment the job of view `v`, read just before a claim that took it,
/// became due. A job seen live was taken only once its lease lapsed
/// between the read and the claim, so it waited from its expiry, as a job
/// seen expired did.
fn due_moment(v: &JobView) -> i64 {
    match v.state {
        JobState::Expired | JobState::Claimed => v.expires_us.unwrap(),
        _ => v.due_us.unwrap_or(v.updated_us),
    }
}

fn views(a: &Authority, production: &str) -> Vec<JobView> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = a
            .jobs(
                production,
                &ListQuery {
                    state: None,
                    after: after.clone(),
                    limit: 1000,
                },
            )
            .unwrap();
        let done = page.len() < 1000;
        after = page.last().map(|v| v.job.clone());
        out.extend(page);
        if done {
            return out;
        }
    }
}

fn all_events(a: &Authority) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    loop {
        // Pruned events are gone: the log starts after the horizon.
        let after = match out.last() {
            Some(e) => e.seq,
            None => a.history_horizon().unwrap(),
        };
        let page = a.events(after, MAX_PAGE).unwrap();
        if page.is_empty() {
            return out;
        }
        out.extend(page);
    }
}

impl Run {
    fn new() -> Run {
        let env = Env::new();
        env.auth.create_production("p").unwrap();
        env.auth.create_production("q").unwrap();
        Run {
            env,
            leases: Vec::new(),
            seen: HashMap::new(),
            gates: Gates::default(),
            pruned: false,
        }
    }

    fn lease(&self, i: usize) -> Option<&Lease> {
        if self.leases.is_empty() {
            None
        } else {
            self.leases.get(i % self.leases.len())
        }
    }

    fn note_claim(&mut self, before: &[JobView], l: Lease) {
        let v = before
            .iter()
            .find(|v| v.job == l.job())
            .expect("claimed job was listed");
        self.seen.insert(
            l.claim_id(),
            Seen {
                since_us: due_moment(v),
            },
        );
        self.leases.push(l);
    }

    fn apply(&mut self, op: &Op) {
        let a = &self.env.auth;
        match *op {
            Op::Submit {
                job,
                delay,
                max,
                prod,
            } => {
                let mut spec =
                    JobSpec::new(format!("j{job}"), b"secret payload".to_vec()).max_attempts(max);
                if DELAYS[delay] > 0 {
                    spec = spec.not_before(Delay::from_micros(DELAYS[delay]).unwrap());
                }
                let _ = a.submit(if prod { "p" } else { "q" }, &spec);
            }
            Op::Claim { job, ttl } => {
                let before = views(a, "p");
                let ttl = Ttl::from_micros(TTLS[ttl]).unwrap();
                if let Ok(l) = a.claim("p", &format!("j{job}"), "w", ttl) {
                    self.note_claim(&before, l);
                }
            }
            Op::ClaimNext { ttl } => {
                let before = views(a, "p");
                let ttl = Ttl::from_micros(TTLS[ttl]).unwrap();
                if let Ok(l) = a.claim_next("p", "w", ttl) {
                    self.note_claim(&before, l);
                }
            }
            Op::Renew { lease, ttl } => {
                if let Some(l) = self.lease(lease) {
                    let _ = l.renew(Ttl::from_micros(TTLS[ttl]).unwrap());
                }
            }
            Op::Release { lease } => {
                if let Some(l) = self.lease(lease) {
                    let _ = l.release();
                }
            }
            Op::Fail {
                lease,
                permanent,
                delay,
            } => {
                if let Some(l) = self.lease(lease) {
                    let _ = match delay {
                        Some(d) if !permanent => {
                            l.fail_retry_after("boom", Delay::from_micros(DELAYS[d]).unwrap())
                        }
                        _ => l.fail("boom", permanent),
                    };
                }
            }
            Op::Complete { lease } => {
                if let Some(l) = self.lease(lease) {
                    let _ = l.complete(&[]);
                }
            }
            Op::Cancel { job } => {
                let _ = a.cancel("p", &format!("j{job}"));
            }
            Op::Advance { us } => self.env.clock.advance(us),
            Op::JumpBack { us } => self.env.clock.advance(-us),
            Op::PruneEvents { secs } => {
                let policy = Retention {
                    event_age: Some(Age::from_secs(secs).unwrap()),
                    ..Retention::default()
                };
                loop {
                    match a.prune(&policy) {
                        Ok(r) => {
                            self.pruned |= r.events > 0;
                            if !r.more {
                                break;
                            }
                        }
                        // A guarded write: refused while the clock is
                        // behind the mark.
                        Err(Error::ClockRollback { .. }) => break,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            Op::Steer { what, n } => {
                let c = a.clock().unwrap();
                let g = &mut self.gates;
                match what {
                    0 => {
                        if a.pause_production("p").unwrap() {
                            g.paused_us = Some(c.now_us.max(c.mark_us));
                        }
                    }
                    1 => {
                        a.resume_production("p").unwrap();
                        g.paused_us = None;
                    }
                    2 | 3 => {
                        let k = (what == 2).then_some(n);
                        a.set_concurrency_limit("p", k).unwrap();
                        g.concurrency = k;
                    }
                    _ => {
                        let r = (what == 4).then_some(RateLimit {
                            claims: n,
                            interval: Duration::from_secs(u64::from(n)),
                            burst: n,
                        });
                        a.set_rate_limit("p", r).unwrap();
                        g.rate = r;
                    }
                }
            }
        }
    }

    /// The statistics of production `name` from a full scan.
    fn scanned(&self, name: &str, now: i64, events: &[Event]) -> ProductionStats {
        let vs = views(&self.env.auth, name);
        let count = |s: JobState| vs.iter().filter(|v| v.state == s).count() as u64;
        let waiting: Vec<&JobView> = vs
            .iter()
            .filter(|v| v.state == JobState::Requested)
            .collect();
        let later: Vec<i64> = waiting
            .iter()
            .filter_map(|v| v.due_us.filter(|&d| d > now))
            .collect();
        let live: Vec<&JobView> = vs.iter().filter(|v| v.state == JobState::Claimed).collect();
        let horizon = now + HORIZON.as_micros() as i64;
        let from = now - WINDOW.as_micros() as i64;
        let mut flow = Flow {
            window: WINDOW,
            covered: WINDOW,
            ..Flow::default()
        };
        let (mut wait, mut run) = (Vec::new(), Vec::new());
        let claim_at: HashMap<Uuid, i64> = events
            .iter()
            .filter(|e| e.kind == EventKind::Claimed)
            .map(|e| (e.claim_id.unwrap(), e.at_us))
            .collect();
        for e in events
            .iter()
            .filter(|e| e.production == name && e.at_us >= from && e.at_us <= now)
        {
            match e.kind {
                EventKind::Claimed => {
                    flow.claims += 1;
                    wait.push(e.at_us - self.seen[&e.claim_id.unwrap()].since_us.min(e.at_us));
                }
                EventKind::Completed => flow.completions += 1,
                EventKind::Failed if e.state == Some(JobState::Requested) => {
                    flow.retryable_failures += 1
                }
                EventKind::Failed | EventKind::Exhausted => flow.permanent_failures += 1,
                _ => {}
            }
            if matches!(
                e.kind,
                EventKind::Completed | EventKind::Failed | EventKind::Released
            ) {
                run.push(e.at_us - claim_at[&e.claim_id.unwrap()]);
            }
        }
        // A lease lapsed if nothing closed it before its last expiry.
        let mut expiry: HashMap<Uuid, i64> = HashMap::new();
        let mut closed: HashMap<Uuid, bool> = HashMap::new();
        for e in events.iter().filter(|e| e.production == name) {
            let Some(c) = e.claim_id else { continue };
            match e.kind {
                EventKind::Claimed | EventKind::Renewed => {
                    expiry.insert(c, e.expires_us.unwrap());
                }
                EventKind::Completed | EventKind::Failed | EventKind::Released => {
                    closed.insert(c, true);
                }
                EventKind::Cancelled if e.at_us < expiry[&c] => {
                    closed.insert(c, true);
                }
                _ => {}
            }
        }
        flow.expiries = expiry
            .iter()
            .filter(|(c, &x)| !closed.contains_key(c) && x >= from && x <= now)
            .count() as u64;
        flow.wait = Percentiles::of(wait);
        flow.run = Percentiles::of(run);
        ProductionStats {
            name: name.to_owned(),
            cancelled: false,
            waiting_due: waiting.len() as u64 - later.len() as u64,
            waiting_later: later.len() as u64,
            claimed_live: live.len() as u64,
            claimed_expired: count(JobState::Expired),
            completed: count(JobState::Completed),
            failed: count(JobState::Failed),
            cancelled_jobs: count(JobState::Cancelled),
            oldest_due_age: waiting
                .iter()
                .filter(|v| v.due_us.is_none_or(|d| d <= now))
                .map(|v| v.due_us.unwrap_or(v.updated_us))
                .min()
                .map(|d| Duration::from_micros((now - d).max(0) as u64)),
            next_due_us: later.iter().copied().min(),
            expiring_within: live
                .iter()
                .filter(|v| v.expires_us.unwrap() <= horizon)
                .count() as u64,
            max_live_attempts: live.iter().map(|v| v.attempts).max().unwrap_or(0),
            gates: if name == "p" {
                self.gates
            } else {
                Gates::default()
            },
            flow,
        }
    }

    fn check(&self) {
        let a = &self.env.auth;
        let q = StatsQuery {
            production: None,
            horizon: HORIZON,
            window: WINDOW,
        };
        let st = a.stats(&q).unwrap();
        // The checker recounts every job row and finds the kept counts
        // equal to them.
        let report = a.check().unwrap();
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        let clock = a.clock().unwrap();
        assert_eq!(st.now_us, clock.now_us.max(clock.mark_us));
        assert_eq!(st.high_water_us, clock.mark_us);
        // This handle's reads keep the flow's events between checks; one
        // that never read any reads the window whole.
        assert_eq!(st, self.env.reopen().stats(&q).unwrap());
        let events = all_events(a);
        assert_eq!(st.productions.len(), 2);
        for p in &st.productions {
            if !self.pruned {
                let want = self.scanned(&p.name, st.now_us, &events);
                assert_eq!(p, &want, "production {}", p.name);
            }
            assert_eq!(p.total() as usize, views(a, &p.name).len());
        }
        let one = a
            .stats(&StatsQuery {
                production: Some("p".into()),
                ..q.clone()
            })
            .unwrap();
        assert_eq!(one.productions, st.productions[..1]);
    }
}

fn cases() -> u32 {
    if on_postgres() {
        6
    } else {
        40
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn stats_equal_a_full_scan(ops in proptest::collection::vec(op(), 1..60)) {
        let mut run = Run::new();
        for (i, op) in ops.iter().enumerate() {
            run.apply(op);
            if i % 10 == 9 {
                run.check();
            }
        }
        run.check();
    }
}

#[test]
fn stats_carry_no_secret_or_payload() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("j", b"payload-bytes-xyz".to_vec()))
        .unwrap();
    let l = a.claim_next("p", "w", secs(30)).unwrap();
    let token = l.export_token().unwrap();
    let st = a.stats(&StatsQuery::default()).unwrap();
    let dump = format!("{st:?}");
    assert!(!dump.contains("payload-bytes-xyz"));
    assert!(!dump.contains(token.expose()));
    assert_eq!(st.productions[0].claimed_live, 1);
    assert_eq!(st.productions[0].flow.claims, 1);
}

#[test]
fn stats_bad_queries_are_typed_errors() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    let missing = StatsQuery {
        production: Some("nope".into()),
        ..StatsQuery::default()
    };
    assert_eq!(a.stats(&missing).unwrap_err().code(), ErrorCode::NotFound);
    let bad = StatsQuery {
        production: Some("bad id!".into()),
        ..StatsQuery::default()
    };
    assert_eq!(
        a.stats(&bad).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    let long = StatsQuery {
        window: MAX_STATS_SPAN + Duration::from_secs(1),
        ..StatsQuery::default()
    };
    assert_eq!(
        a.stats(&long).unwrap_err().code(),
        ErrorCode::InvalidDuration
    );
}

/// Change the kept count of `state` in production `p` by `by`, behind the
/// library's back (as a damaged or hand-edited store would).
fn tamper_count(env: &Env, state: &str, by: i64) {
    match &env.pg {
        Some(db) => {
            let mut c = pg::client(&db.url);
            c.execute(
                "INSERT INTO tenure.job_count_deltas (production, state, delta) VALUES ('p', $1, $2)",
                &[&state, &by],
            )
            .unwrap();
        }
        None => {
            let c = rusqlite::Connection::open(env.path()).unwrap();
            let n = c
                .execute(
                    "UPDATE job_counts SET n = n + ?2 WHERE production = 'p' AND state = ?1",
                    rusqlite::params![state, by],
                )
                .unwrap();
            assert_eq!(n, 1, "no kept count of {state} to change");
        }
    }
}

/// `tenure check` recounts the job rows of every production and reports a
/// kept count that differs from them (the figures `stats` reads), naming
/// the production and state; a count that cannot be read at all is a
/// violation too, not a failed check.
#[test]
fn check_reports_kept_counts_that_differ_from_the_job_rows() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    for j in ["a", "b", "c"] {
        a.submit("p", &JobSpec::new(j, vec![])).unwrap();
    }
    a.claim_next("p", "w", secs(30))
        .unwrap()
        .complete(&[])
        .unwrap();
    a.claim_next("p", "w", secs(30)).unwrap();
    assert!(a.check().unwrap().violations.is_empty());
    tamper_count(&env, "completed", 1);
    let r = a.check().unwrap();
    let said = r.violations.join("\n");
    assert!(
        said.contains("production \"p\": 2 completed jobs kept in its counts, 1 in its job rows"),
        "{said}"
    );
    if env.pg.is_none() {
        // SQLite keeps the total: the requested jobs, the rest of it, are
        // now short by one.
        assert!(
            said.contains(
                "production \"p\": 0 requested jobs kept in its counts, 1 in its job rows"
            ),
            "{said}"
        );
    }
    tamper_count(&env, "completed", -1);
    assert!(a.check().unwrap().violations.is_empty());
    tamper_count(&env, "completed", -5);
    let r = a.check().unwrap();
    assert!(
        r.violations
            .iter()
            .any(|v| v.starts_with("production \"p\": its kept job counts cannot be read")),
        "{:?}",
        r.violations
    );
}

/// A handle that polls statistics while other threads claim and complete
/// keeps what its reads found of the flow and fetches only what committed
/// since; once the writers stop, its statistics equal those of a handle
/// that never read any (its flow read whole from the window). On
/// PostgreSQL the writers commit out of sequence order, which the kept
/// events must not miss.
#[test]
fn a_polling_handle_reads_the_flow_a_fresh_handle_reads() {
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    let specs: Vec<JobSpec> = (0..400)
        .map(|i| JobSpec::new(format!("j{i}"), b"x".to_vec()).max_attempts(2))
        .collect();
    a.submit_many("p", &specs).unwrap();
    let q = StatsQuery {
        production: Some("p".into()),
        horizon: HORIZON,
        window: Duration::from_secs(3600),
    };
    std::thread::scope(|s| {
        for w in 0..4 {
            let auth = env.reopen();
            s.spawn(move || {
                // Until the production has nothing left to claim.
                while let Ok(l) = auth.claim_next("p", &format!("w{w}"), secs(30)) {
                    if w % 2 == 0 {
                        l.complete(&[]).unwrap();
                    } else {
                        l.fail("again", false).unwrap();
                    }
                }
            });
        }
        for _ in 0..2_000 {
            let st = a.stats(&q).unwrap();
            let p = &st.productions[0];
            if p.waiting_due == 0 && p.claimed_live == 0 {
                break;
            }
        }
    });
    let polled = a.stats(&q).unwrap();
    let fresh = env.reopen().stats(&q).unwrap();
    assert_eq!(polled, fresh);
    let f = &polled.productions[0].flow;
    assert!(f.claims >= 400 && f.completions > 100, "{f:?}");
}
