//! Model-based property test: random operation sequences run against the real
//! store (with an injected clock) and against a small in-memory reference
//! model of docs/design.md's rules. Every outcome and the final states must agree.
//! Prune steps (docs/design.md, "Retention") are interleaved with everything
//! else: they may only ever remove terminal jobs, a removed job's ID answers
//! a resubmission through its tombstone until the tombstone expires, and no
//! operation on a live job ever sees a difference.
//! Jobs may carry a not-before delay, a hold limit and a back-off; failures
//! may name a retry delay (docs/design.md, "Scheduling and hold limits").
//! Coordinators requeue failed and cancelled jobs and leases store progress
//! checkpoints (docs/design.md, "Requeue", "Progress checkpoints").
//!
//! A schedule (every 2 s, catch-up bound 2) in a production of its own is
//! stepped among the other operations: each step enqueues exactly the
//! slots the model says, under the same clock moves (docs/design.md,
//! "Schedules").
//!
//! Claims come one at a time, in batches (gated like single claims) and
//! across two productions, `p` and `q`, rotating per handle (docs/design.md,
//! "Claim gates", "Claims across productions"); `requeue_all` requeues the
//! failed and cancelled jobs of `p` in job-ID order, in bounded batches.
//! Only `p` has gates; `q` holds four jobs submitted at the start.
//!
//! At the end the statistics' counts (docs/design.md, "Statistics") agree
//! with the model's states.
mod common;
use common::*;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use tenure::*;

const JOB_NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
/// The jobs of the second production, `q`, submitted at the start.
const Q_JOBS: [&str; 4] = ["q0", "q1", "q2", "q3"];
/// The list of a claim across productions.
const ACROSS: [&str; 2] = ["p", "q"];
const TTLS: [i64; 3] = [1_000_000, 5_000_000, 10_000_000];
/// Retention ages (whole seconds) a prune step draws from.
const AGES: [u64; 3] = [1, 4, 9];
/// Not-before and retry delays (µs).
const DELAYS: [i64; 3] = [0, 3_000_000, 8_000_000];
/// The hold limit of jobs submitted with one (µs).
const HOLD: i64 = 6_000_000;
/// The schedule's interval (µs) and catch-up bound.
const SLOT: i64 = 2_000_000;
const CATCH_UP: usize = 2;
/// The back-off of jobs submitted with one: 1 s doubling up to 4 s.
const BACKOFF: (i64, i64) = (1_000_000, 4_000_000);

fn backoff_step(attempt: u32) -> i64 {
    (BACKOFF.0 << (attempt - 1).min(20)).min(BACKOFF.1)
}

#[derive(Debug, Clone)]
enum Op {
    Submit {
        job: usize,
        variant: u8,
        max: u32,
        prio: i32,
        /// Index into `DELAYS`: not part of the job's content.
        delay: usize,
        hold: bool,
        backoff: bool,
    },
    Claim {
        job: usize,
        ttl: usize,
    },
    ClaimNext {
        ttl: usize,
    },
    /// `claim_next_many` of up to `n` jobs of `p`.
    ClaimNextMany {
        ttl: usize,
        n: usize,
    },
    /// A claim across `ACROSS`: `claim_next_across` (`n` None) or
    /// `claim_next_many_across` of up to `n` jobs.
    ClaimAcross {
        ttl: usize,
        n: Option<usize>,
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
        /// A retryable failure naming a delay (index into `DELAYS`).
        retry: Option<usize>,
    },
    Complete {
        lease: usize,
    },
    Cancel {
        job: usize,
    },
    /// Requeue with `extra` attempts (`None`: a fresh budget), due after
    /// `DELAYS[delay]`.
    Requeue {
        job: usize,
        extra: Option<u32>,
        delay: usize,
    },
    /// `requeue_all` of up to `limit` of `p`'s failed or cancelled jobs.
    RequeueAll {
        extra: Option<u32>,
        delay: usize,
        limit: usize,
    },
    /// A progress checkpoint (the lease's index as its bytes), with a
    /// renewal to `TTLS[ttl]` if `renew`.
    Checkpoint {
        lease: usize,
        renew: Option<usize>,
    },
    Import {
        lease: usize,
    },
    Forward {
        us: i64,
    },
    Backward {
        us: i64,
    },
    Reopen,
    RunSchedules,
    Prune {
        jobs: usize,
        tombstones: usize,
        events: usize,
    },
    Pause,
    Resume,
    /// Set (1 or 2) or clear (0) the concurrency limit.
    Limit {
        k: u32,
    },
    /// Set (an index into `RATES`) or clear the rate limit.
    Rate {
        r: Option<usize>,
    },
}

/// Rate limits: (claims, interval µs, burst).
const RATES: [(u32, i64, u32); 2] = [(2, 1_000_000, 1), (5, 2_000_000, 2)];

/// The production's gates as the model keeps them.
#[derive(Debug, Clone, Default)]
struct MGates {
    paused: bool,
    limit: Option<u32>,
    rate: Option<usize>,
    tat: i64,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..5usize, 0..2u8, 1..4u32, 0..3i32, 0..3usize, any::<bool>(), any::<bool>()).prop_map(
            |(job, variant, max, prio, delay, hold, backoff)| Op::Submit { job, variant, max, prio, delay, hold, backoff }),
        3 => (0..5usize, 0..3usize).prop_map(|(job, ttl)| Op::Claim { job, ttl }),
        4 => (0..3usize).prop_map(|ttl| Op::ClaimNext { ttl }),
        2 => (0..3usize, 1..4usize).prop_map(|(ttl, n)| Op::ClaimNextMany { ttl, n }),
        2 => (0..3usize, proptest::option::of(1..4usize)).prop_map(|(ttl, n)| Op::ClaimAcross { ttl, n }),
        3 => (0..8usize, 0..3usize).prop_map(|(lease, ttl)| Op::Renew { lease, ttl }),
        1 => (0..8usize).prop_map(|lease| Op::Release { lease }),
        2 => (0..8usize, any::<bool>(), proptest::option::of(0..3usize))
            .prop_map(|(lease, permanent, retry)| Op::Fail { lease, permanent, retry }),
        3 => (0..8usize).prop_map(|lease| Op::Complete { lease }),
        1 => (0..5usize).prop_map(|job| Op::Cancel { job }),
        2 => (0..5usize, proptest::option::of(1..4u32), 0..3usize)
            .prop_map(|(job, extra, delay)| Op::Requeue { job, extra, delay }),
        2 => (proptest::option::of(1..4u32), 0..3usize, 1..3usize)
            .prop_map(|(extra, delay, limit)| Op::RequeueAll { extra, delay, limit }),
        2 => (0..8usize, proptest::option::of(0..3usize))
            .prop_map(|(lease, renew)| Op::Checkpoint { lease, renew }),
        1 => (0..8usize).prop_map(|lease| Op::Import { lease }),
        3 => (0..12_000_000i64).prop_map(|us| Op::Forward { us }),
        1 => (0..8_000_000i64).prop_map(|us| Op::Backward { us }),
        1 => Just(Op::Reopen),
        1 => Just(Op::RunSchedules),
        2 => (0..3usize, 0..3usize, 0..3usize).prop_map(|(jobs, tombstones, events)| Op::Prune { jobs, tombstones, events }),
        1 => Just(Op::Pause),
        1 => Just(Op::Resume),
        1 => (0..3u32).prop_map(|k| Op::Limit { k }),
        1 => proptest::option::of(0..2usize).prop_map(|r| Op::Rate { r }),
    ]
}

/// An operation a commit group can carry (a one-step call).
fn group_op() -> impl Strategy<Value = Op> {
    op().prop_filter("a one-step call", |o| {
        !matches!(
            o,
            Op::Import { .. }
                | Op::ClaimNextMany { .. }
                | Op::ClaimAcross { .. }
                | Op::RequeueAll { .. }
                | Op::Forward { .. }
                | Op::Backward { .. }
                | Op::Reopen
                | Op::RunSchedules
                | Op::Prune { .. }
        )
    })
}

#[derive(Debug, Clone)]
enum Step {
    /// One operation alone (a call, a clock move, an import).
    One(Op),
    /// Calls made at once by as many threads, carried by one commit group
    /// whose pre-commit sample reads `jump` µs after the calls' samples
    /// (negative: the clock moved back before the commit).
    Group { ops: Vec<Op>, jump: i64 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        // Not reopening: a lease keeps the handle that minted it, and a
        // group belongs to one handle.
        3 => op().prop_filter("same handle", |o| !matches!(o, Op::Reopen)).prop_map(Step::One),
        2 => (
            proptest::collection::vec(group_op(), 2..6),
            prop_oneof![2 => Just(0i64), 1 => -3_000_000..0i64, 2 => 1..12_000_000i64],
        )
            .prop_map(|(ops, jump)| Step::Group { ops, jump }),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum S {
    Requested,
    Claimed,
    Completed,
    Failed,
    Cancelled,
}

#[derive(Debug, Clone)]
struct MJob {
    /// Its production: `p`, or `q` for the jobs of `Q_JOBS`.
    prod: &'static str,
    seq: usize,
    variant: u8,
    max: u32,
    prio: i32,
    state: S,
    attempts: u32,
    claim: Option<usize>,
    expires: i64,
    exhausted: bool,
    hold: bool,
    backoff: bool,
    /// Not claimable before this (a requested job only).
    due: Option<i64>,
    claimed_at: i64,
    /// The latest progress checkpoint.
    progress: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
struct MLease {
    job: String,
    claim: usize,
    closed: bool,
    expires: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    Ok(String),
    Err(ErrorCode),
}

struct Model {
    now: i64,
    mark: i64,
    jobs: BTreeMap<String, MJob>,
    /// Pruned jobs: (variant, max, prio, hold, backoff, pruned at).
    tombstones: BTreeMap<String, (u8, u32, i32, bool, bool, i64)>,
    leases: Vec<MLease>,
    claims: usize,
    seq: usize,
    /// While a commit group runs: the leases that existed when its calls
    /// were made and whether each was closed locally then (a call checks
    /// its lease's local status before it queues).
    frozen: Option<Vec<bool>>,
    gates: MGates,
    /// The schedule's slot record: every slot at or before it is settled.
    settled: i64,
    /// Where the handle's next claim across `ACROSS` starts.
    rotation: usize,
}

/// The production of a job the model names.
fn prod_of(name: &str) -> &'static str {
    if name.starts_with('q') {
        "q"
    } else {
        "p"
    }
}

/// What the pre-commit check of one group member needs (see
/// `Model::group`): the running mark after it and its deadline.
struct Fp {
    mark: i64,
    deadline: Option<i64>,
}

impl Model {
    fn not_due(j: &MJob, t: i64) -> bool {
        j.state == S::Requested && j.due.is_some_and(|d| t < d)
    }

    fn classify(&self, j: &MJob, t: i64) -> JobState {
        match j.state {
            S::Claimed if t < j.expires => JobState::Claimed,
            S::Claimed if j.attempts < j.max => JobState::Expired,
            S::Claimed => JobState::Failed,
            S::Requested => JobState::Requested,
            S::Completed => JobState::Completed,
            S::Failed => JobState::Failed,
            S::Cancelled => JobState::Cancelled,
        }
    }

    /// The claim gates at `now`: paused, over the rate, at the limit.
    fn gate(&self, now: i64) -> Result<(), ErrorCode> {
        let g = &self.gates;
        if g.paused {
            return Err(ErrorCode::ProductionPaused);
        }
        if let Some(r) = g.rate {
            let (n, iv, b) = RATES[r];
            let t = iv / i64::from(n);
            if t * i64::from(b) - (g.tat.max(now) - now) < t {
                return Err(ErrorCode::RateLimited);
            }
        }
        if let Some(k) = g.limit {
            if self.live_in_p(now) >= k as usize {
                return Err(ErrorCode::ConcurrencyLimit);
            }
        }
        Ok(())
    }

    /// The live leases of `p` (the gated production) at `now`.
    fn live_in_p(&self, now: i64) -> usize {
        self.jobs
            .values()
            .filter(|j| j.prod == "p" && j.state == S::Claimed && j.expires > now)
            .count()
    }

    /// How many of `want` claims of `prod` the gates admit at `now`: the
    /// rate's room and the concurrency limit's, none while paused (only `p`
    /// has gates).
    fn admitted(&self, prod: &str, now: i64, want: usize) -> usize {
        let g = &self.gates;
        if prod != "p" {
            return want;
        }
        if g.paused {
            return 0;
        }
        let mut n = want;
        if let Some(r) = g.rate {
            let (c, iv, b) = RATES[r];
            let t = iv / i64::from(c);
            let room = t * i64::from(b) - (g.tat.max(now) - now);
            n = n.min((room.max(0) / t) as usize);
        }
        if let Some(k) = g.limit {
            n = n.min((k as usize).saturating_sub(self.live_in_p(now)));
        }
        n
    }

    /// The claim-next rule on `prod` at `now` for up to `want` claims: as
    /// many as the gates admit, in queue order (priority, then submission),
    /// recording as failed the expired claims without attempts met on the
    /// way (none when the gates admit nothing). The claims' descriptions.
    fn scan(&mut self, prod: &str, now: i64, want: usize, ttl: usize) -> Vec<String> {
        let want = self.admitted(prod, now, want);
        if want == 0 {
            return Vec::new();
        }
        let mut live: Vec<(i32, usize, String)> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.prod == prod && matches!(j.state, S::Requested | S::Claimed))
            .map(|(n, j)| (-j.prio, j.seq, n.clone()))
            .collect();
        live.sort();
        let mut out = Vec::new();
        for (_, _, name) in live {
            let j = &self.jobs[&name];
            if Model::not_due(j, now) {
                continue;
            }
            match self.classify(j, now) {
                JobState::Claimed => continue,
                JobState::Requested | JobState::Expired if j.attempts < j.max => {
                    if prod == "p" {
                        self.charge(now);
                    }
                    match self.mint(&name, TTLS[ttl], now) {
                        Out::Ok(s) => out.push(s),
                        Out::Err(c) => unreachable!("mint: {c:?}"),
                    }
                    if out.len() == want {
                        break;
                    }
                }
                _ => {
                    let j = self.jobs.get_mut(&name).unwrap();
                    j.state = S::Failed;
                    j.exhausted = true;
                }
            }
        }
        out
    }

    /// Requeue job `name` (failed or cancelled) at `t`.
    fn requeue_job(&mut self, name: &str, extra: Option<u32>, delay: usize, t: i64) {
        let j = self.jobs.get_mut(name).unwrap();
        let left = extra.map_or(j.max, |n| n.min(j.max));
        j.attempts = j.max - left;
        j.state = S::Requested;
        j.claim = None;
        j.expires = 0;
        j.exhausted = false;
        j.due = (DELAYS[delay] > 0).then(|| t + DELAYS[delay]);
    }

    /// One claim made at `now` under the rate limit.
    fn charge(&mut self, now: i64) {
        if let Some(r) = self.gates.rate {
            let (n, iv, _) = RATES[r];
            self.gates.tat = self.gates.tat.max(now) + iv / i64::from(n);
        }
    }

    fn guarded(&mut self) -> Result<i64, ErrorCode> {
        if self.now < self.mark {
            return Err(ErrorCode::ClockRollback);
        }
        self.mark = self.now;
        Ok(self.now)
    }

    fn mint(&mut self, name: &str, ttl: i64, now: i64) -> Out {
        self.claims += 1;
        let claim = self.claims;
        let j = self.jobs.get_mut(name).unwrap();
        j.state = S::Claimed;
        j.attempts += 1;
        j.claim = Some(claim);
        j.expires = if j.hold {
            now + ttl.min(HOLD)
        } else {
            now + ttl
        };
        j.exhausted = false;
        j.due = None;
        j.claimed_at = now;
        let expires = j.expires;
        self.leases.push(MLease {
            job: name.to_owned(),
            claim,
            closed: false,
            expires,
        });
        Out::Ok(format!("claimed {name} attempt {}", j.attempts))
    }

    /// The store's check of a lease (claim `None` = token import).
    fn current(&self, l: &MLease, t: i64) -> Result<(), ErrorCode> {
        let Some(j) = self.jobs.get(&l.job) else {
            return Err(ErrorCode::NotFound);
        };
        if j.claim != Some(l.claim) {
            return Err(ErrorCode::StaleLease);
        }
        match j.state {
            S::Cancelled => Err(ErrorCode::Cancelled),
            S::Completed | S::Requested => Err(ErrorCode::LeaseClosed),
            S::Failed if j.exhausted => Err(ErrorCode::LeaseExpired),
            S::Failed => Err(ErrorCode::LeaseClosed),
            S::Claimed if t >= j.expires => Err(ErrorCode::LeaseExpired),
            S::Claimed => Ok(()),
        }
    }

    fn lease_op(
        &mut self,
        idx: usize,
        f: impl FnOnce(&mut Model, i64, usize) -> Result<String, ErrorCode>,
    ) -> Out {
        let Some(l) = self.leases.get(idx).cloned() else {
            return Out::Ok("no lease".into());
        };
        let closed = match &self.frozen {
            None => l.closed,
            Some(f) if idx >= f.len() => return Out::Ok("no lease".into()),
            Some(f) => f[idx],
        };
        if closed {
            return Out::Err(ErrorCode::LeaseClosed);
        }
        let r = self.guarded().and_then(|now| {
            self.current(&l, now)?;
            f(self, now, idx)
        });
        match r {
            Ok(s) => Out::Ok(s),
            Err(c) => Out::Err(c),
        }
    }

    /// Whether `op` queues for a group: it is not refused locally first
    /// (a lease that does not exist or is closed when the call is made).
    fn queues(&self, op: &Op) -> bool {
        match *op {
            Op::Renew { lease, .. }
            | Op::Release { lease }
            | Op::Fail { lease, .. }
            | Op::Complete { lease }
            | Op::Checkpoint { lease, .. } => self.leases.get(lease).is_some_and(|l| !l.closed),
            _ => true,
        }
    }

    /// One member of a group: its outcome and, if it is a guarded
    /// operation that succeeded, what its pre-commit check needs.
    fn member(&mut self, op: &Op) -> (Out, Option<Fp>) {
        let lease_expiry = |m: &Model, idx: usize| {
            m.leases
                .get(idx)
                .map(|l| m.jobs.get(&l.job).map_or(0, |j| j.expires))
        };
        let before = match *op {
            Op::Renew { lease, .. }
            | Op::Release { lease }
            | Op::Fail { lease, .. }
            | Op::Complete { lease }
            | Op::Checkpoint { lease, .. } => lease_expiry(self, lease),
            _ => None,
        };
        let out = self.apply(op);
        let fp = match (op, &out) {
            // The new lease's expiry (capped by a hold limit).
            (Op::Claim { .. } | Op::ClaimNext { .. }, Out::Ok(_)) => Some(Fp {
                mark: self.mark,
                deadline: self.leases.last().map(|l| l.expires),
            }),
            // Claim-next that found nothing succeeded as a step (its
            // `exhausted` records commit) and is checked at pre-commit.
            (Op::ClaimNext { .. }, Out::Err(ErrorCode::NoJobAvailable)) => Some(Fp {
                mark: self.mark,
                deadline: None,
            }),
            (
                Op::Renew { .. }
                | Op::Release { .. }
                | Op::Fail { .. }
                | Op::Complete { .. }
                | Op::Checkpoint { .. },
                Out::Ok(s),
            ) if s != "no lease" => Some(Fp {
                mark: self.mark,
                deadline: before,
            }),
            _ => None,
        };
        (out, fp)
    }

    /// A commit group of `ops` made at `t` whose pre-commit sample reads
    /// `t + jump` (later reads stay there): the calls refused locally, then
    /// the members in order, each as alone; one pre-commit sample checks
    /// every guarded member (running mark, deadline); refused members fail
    /// and the others run again from the time observed so far. Returns the
    /// outcomes and whether the first round took a pre-commit sample.
    fn group(&mut self, ops: &[Op], t: i64, jump: i64) -> (Vec<Out>, bool) {
        let mut outs: Vec<Option<Out>> = vec![None; ops.len()];
        let mut members = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            if self.queues(op) {
                members.push(i);
            } else {
                outs[i] = Some(self.apply(op));
            }
        }
        self.frozen = Some(self.leases.iter().map(|l| l.closed).collect());
        let snapshot = (
            self.jobs.clone(),
            self.leases.clone(),
            self.claims,
            self.seq,
            self.gates.clone(),
        );
        let mut read = t;
        let mut first_pre = false;
        for round in 0.. {
            (self.jobs, self.leases, self.claims, self.seq, self.gates) = snapshot.clone();
            let mut results = Vec::new();
            for &i in &members {
                self.now = read;
                results.push(self.member(&ops[i]));
            }
            if results.iter().all(|(_, fp)| fp.is_none()) {
                for (&i, (o, _)) in members.iter().zip(results) {
                    outs[i] = Some(o);
                }
                break;
            }
            let pre = if round == 0 { t + jump } else { read };
            first_pre |= round == 0;
            read = t + jump;
            self.now = read;
            let refused: Vec<Option<ErrorCode>> = results
                .iter()
                .map(|(_, fp)| match fp {
                    Some(f) if pre < f.mark => Some(ErrorCode::ClockRollback),
                    Some(Fp {
                        deadline: Some(d), ..
                    }) if pre >= *d => Some(ErrorCode::LeaseExpired),
                    _ => None,
                })
                .collect();
            self.mark = self.mark.max(pre);
            if refused.iter().all(Option::is_none) {
                for (&i, (o, _)) in members.iter().zip(results) {
                    outs[i] = Some(o);
                }
                break;
            }
            let mut kept = Vec::new();
            for (&i, why) in members.iter().zip(refused) {
                match why {
                    Some(c) => outs[i] = Some(Out::Err(c)),
                    None => kept.push(i),
                }
            }
            members = kept;
            if members.is_empty() {
                (self.jobs, self.leases, self.claims, self.seq, self.gates) = snapshot.clone();
                break;
            }
        }
        self.frozen = None;
        (outs.into_iter().map(Option::unwrap).collect(), first_pre)
    }

    fn apply(&mut self, op: &Op) -> Out {
        match *op {
            Op::RunSchedules => {
                // An unguarded write's time; the newest slots up to the
                // catch-up bound, the rest dropped.
                self.mark = self.mark.max(self.now);
                let t = self.mark;
                let due: Vec<i64> = ((self.settled / SLOT + 1)..=(t / SLOT))
                    .map(|k| k * SLOT)
                    .collect();
                let keep = due.len().saturating_sub(CATCH_UP);
                self.settled = self.settled.max(t);
                let jobs: Vec<String> = due[keep..].iter().map(|&s| slot_job("tick", s)).collect();
                Out::Ok(format!("{jobs:?} dropped {keep}"))
            }
            Op::Submit {
                job,
                variant,
                max,
                prio,
                delay,
                hold,
                backoff,
            } => {
                self.mark = self.mark.max(self.now);
                let t = self.mark;
                let name = JOB_NAMES[job];
                let existing = self
                    .jobs
                    .get(name)
                    .map(|j| (j.variant, j.max, j.prio, j.hold, j.backoff))
                    .or_else(|| self.tombstones.get(name).map(|t| (t.0, t.1, t.2, t.3, t.4)));
                match existing {
                    Some(e) if e == (variant, max, prio, hold, backoff) => {
                        Out::Ok("existing".into())
                    }
                    Some(_) => Out::Err(ErrorCode::Conflict),
                    None => {
                        self.seq += 1;
                        self.jobs.insert(
                            name.to_owned(),
                            MJob {
                                prod: "p",
                                seq: self.seq,
                                variant,
                                max,
                                prio,
                                state: S::Requested,
                                attempts: 0,
                                claim: None,
                                expires: 0,
                                exhausted: false,
                                hold,
                                backoff,
                                due: (DELAYS[delay] > 0).then(|| t + DELAYS[delay]),
                                claimed_at: 0,
                                progress: None,
                            },
                        );
                        Out::Ok("created".into())
                    }
                }
            }
            Op::Claim { job, ttl } => {
                let now = match self.guarded() {
                    Ok(n) => n,
                    Err(c) => return Out::Err(c),
                };
                let name = JOB_NAMES[job];
                let Some(j) = self.jobs.get(name) else {
                    return Out::Err(ErrorCode::NotFound);
                };
                if Model::not_due(j, now) {
                    return Out::Err(ErrorCode::NotClaimable);
                }
                match self.classify(j, now) {
                    JobState::Requested | JobState::Expired if j.attempts < j.max => {
                        if let Err(c) = self.gate(now) {
                            return Out::Err(c);
                        }
                        self.charge(now);
                        self.mint(name, TTLS[ttl], now)
                    }
                    JobState::Cancelled => Out::Err(ErrorCode::Cancelled),
                    _ => Out::Err(ErrorCode::NotClaimable),
                }
            }
            Op::ClaimNext { ttl } => {
                let now = match self.guarded() {
                    Ok(n) => n,
                    Err(c) => return Out::Err(c),
                };
                match self.scan("p", now, 1, ttl).pop() {
                    Some(s) => Out::Ok(s),
                    None => Out::Err(ErrorCode::NoJobAvailable),
                }
            }
            Op::ClaimNextMany { ttl, n } => {
                let now = match self.guarded() {
                    Ok(n) => n,
                    Err(c) => return Out::Err(c),
                };
                Out::Ok(format!("{:?}", self.scan("p", now, n, ttl)))
            }
            Op::ClaimAcross { ttl, n } => {
                let now = match self.guarded() {
                    Ok(n) => n,
                    Err(c) => return Out::Err(c),
                };
                // Rounds from the rotation's start: each production still
                // in the round asked for its share of the claims still
                // wanted; one that gives fewer drops out.
                let want = n.unwrap_or(1);
                let k = ACROSS.len();
                let start = self.rotation % k;
                let mut round: Vec<usize> = (0..k).map(|i| (start + i) % k).collect();
                let mut out: Vec<String> = Vec::new();
                let mut next = start;
                while out.len() < want && !round.is_empty() {
                    let share = (want - out.len()).div_ceil(round.len());
                    let mut kept = Vec::new();
                    for &i in &round {
                        let w = share.min(want - out.len());
                        if w == 0 {
                            break;
                        }
                        let got = self.scan(ACROSS[i], now, w, ttl);
                        if !got.is_empty() {
                            next = (i + 1) % k;
                        }
                        if got.len() == w {
                            kept.push(i);
                        }
                        out.extend(got);
                    }
                    round = kept;
                }
                self.rotation = next;
                match n {
                    Some(_) => Out::Ok(format!("{out:?}")),
                    None => match out.pop() {
                        Some(s) => Out::Ok(s),
                        None => Out::Err(ErrorCode::NoJobAvailable),
                    },
                }
            }
            Op::Renew { lease, ttl } => self.lease_op(lease, |m, now, idx| {
                m.renewed(idx, now, ttl)?;
                Ok("renewed".into())
            }),
            Op::Checkpoint { lease, renew } => self.lease_op(lease, |m, now, idx| {
                if let Some(ttl) = renew {
                    m.renewed(idx, now, ttl)?;
                }
                let name = m.leases[idx].job.clone();
                m.jobs.get_mut(&name).unwrap().progress = Some(idx.to_string().into_bytes());
                Ok("checkpointed".into())
            }),
            Op::Requeue { job, extra, delay } => {
                self.mark = self.mark.max(self.now);
                let t = self.mark;
                let name = JOB_NAMES[job];
                let Some(j) = self.jobs.get(name) else {
                    return Out::Err(ErrorCode::NotFound);
                };
                match self.classify(j, t) {
                    JobState::Failed | JobState::Cancelled => {
                        self.requeue_job(name, extra, delay, t);
                        Out::Ok("requeued".into())
                    }
                    JobState::Completed => Out::Err(ErrorCode::JobTerminal),
                    _ => Out::Err(ErrorCode::JobLive),
                }
            }
            Op::RequeueAll {
                extra,
                delay,
                limit,
            } => {
                self.mark = self.mark.max(self.now);
                let t = self.mark;
                // In job-ID order (the map's order).
                let eligible: Vec<String> = self
                    .jobs
                    .iter()
                    .filter(|(_, j)| {
                        j.prod == "p"
                            && matches!(self.classify(j, t), JobState::Failed | JobState::Cancelled)
                    })
                    .map(|(n, _)| n.clone())
                    .collect();
                let done = eligible.len().min(limit);
                for name in &eligible[..done] {
                    self.requeue_job(name, extra, delay, t);
                }
                Out::Ok(format!("requeued {done}, more {}", eligible.len() > limit))
            }
            Op::Release { lease } => self.lease_op(lease, |m, _, idx| {
                let name = m.leases[idx].job.clone();
                let j = m.jobs.get_mut(&name).unwrap();
                j.state = if j.attempts < j.max {
                    S::Requested
                } else {
                    S::Failed
                };
                m.leases[idx].closed = true;
                Ok(format!("released {:?}", j.state))
            }),
            Op::Fail {
                lease,
                permanent,
                retry,
            } => self.lease_op(lease, |m, now, idx| {
                let name = m.leases[idx].job.clone();
                let j = m.jobs.get_mut(&name).unwrap();
                j.state = if permanent || j.attempts >= j.max {
                    S::Failed
                } else {
                    S::Requested
                };
                if j.state == S::Requested {
                    let delay = match retry.filter(|_| !permanent) {
                        Some(r) => DELAYS[r],
                        None if j.backoff => backoff_step(j.attempts),
                        None => 0,
                    };
                    j.due = (delay > 0).then_some(now + delay);
                }
                m.leases[idx].closed = true;
                Ok(format!("failed {:?}", j.state))
            }),
            Op::Complete { lease } => self.lease_op(lease, |m, _, idx| {
                let name = m.leases[idx].job.clone();
                m.jobs.get_mut(&name).unwrap().state = S::Completed;
                m.leases[idx].closed = true;
                Ok("completed".into())
            }),
            Op::Cancel { job } => {
                self.mark = self.mark.max(self.now);
                let t = self.mark;
                let name = JOB_NAMES[job];
                let Some(j) = self.jobs.get(name) else {
                    return Out::Err(ErrorCode::NotFound);
                };
                match self.classify(j, t) {
                    JobState::Cancelled => Out::Ok("already".into()),
                    JobState::Completed | JobState::Failed => Out::Err(ErrorCode::JobTerminal),
                    _ => {
                        let j = self.jobs.get_mut(name).unwrap();
                        j.state = S::Cancelled;
                        j.due = None;
                        Out::Ok("cancelled".into())
                    }
                }
            }
            Op::Import { lease } => {
                let Some(l) = self.leases.get(lease).cloned() else {
                    return Out::Ok("no lease".into());
                };
                if l.closed {
                    return Out::Err(ErrorCode::LeaseClosed);
                }
                let t = self.now.max(self.mark);
                match self.current(&l, t) {
                    Ok(()) => {
                        let expires = self.jobs[&l.job].expires;
                        self.leases.push(MLease { expires, ..l });
                        Out::Ok("imported".into())
                    }
                    Err(c) => Out::Err(c),
                }
            }
            Op::Forward { us } => {
                self.now += us;
                Out::Ok(String::new())
            }
            Op::Backward { us } => {
                self.now -= us;
                Out::Ok(String::new())
            }
            Op::Reopen => {
                // A new handle: its rotation starts afresh.
                self.rotation = 0;
                Out::Ok(String::new())
            }
            Op::Prune { .. } => unreachable!("prune steps are checked in `run`"),
            Op::Pause | Op::Resume => {
                self.mark = self.mark.max(self.now);
                let pause = matches!(op, Op::Pause);
                let changed = self.gates.paused != pause;
                self.gates.paused = pause;
                Out::Ok(format!("{changed}"))
            }
            Op::Limit { k } => {
                self.mark = self.mark.max(self.now);
                self.gates.limit = (k > 0).then_some(k);
                Out::Ok("limited".into())
            }
            Op::Rate { r } => {
                self.mark = self.mark.max(self.now);
                if self.gates.rate != r {
                    self.gates.rate = r;
                    self.gates.tat = 0;
                }
                Out::Ok("limited".into())
            }
        }
    }

    /// A renewal of lease `idx` to `now + TTLS[ttl]` (capped by a hold limit).
    fn renewed(&mut self, idx: usize, now: i64, ttl: usize) -> Result<(), ErrorCode> {
        let name = self.leases[idx].job.clone();
        let new = now + TTLS[ttl];
        let j = self.jobs.get_mut(&name).unwrap();
        if new <= j.expires {
            return Err(ErrorCode::NotExtended);
        }
        let new = if j.hold {
            new.min(j.claimed_at + HOLD)
        } else {
            new
        };
        if new <= j.expires {
            return Err(ErrorCode::HoldLimit);
        }
        j.expires = new;
        self.leases[idx].expires = new;
        Ok(())
    }

    /// A prune step that removed `gone` (what the store shows): only jobs
    /// stored terminal may go, each leaves a tombstone, and tombstones older
    /// than the step's tombstone age go.
    fn prune(
        &mut self,
        gone: &[String],
        tombstone_age: u64,
    ) -> std::result::Result<Out, TestCaseError> {
        let now = match self.guarded() {
            Ok(n) => n,
            Err(c) => return Ok(Out::Err(c)),
        };
        for name in gone {
            let j = self.jobs.remove(name).unwrap();
            prop_assert!(
                matches!(j.state, S::Completed | S::Failed | S::Cancelled),
                "prune removed job {} in state {:?}",
                name,
                j.state
            );
            self.tombstones.insert(
                name.clone(),
                (j.variant, j.max, j.prio, j.hold, j.backoff, now),
            );
        }
        let cutoff = now - tombstone_age as i64 * 1_000_000;
        self.tombstones.retain(|_, t| t.5 >= cutoff);
        Ok(Out::Ok("pruned".into()))
    }
}

fn out<T>(r: Result<T>, ok: impl FnOnce(T) -> String) -> Out {
    match r {
        Ok(v) => Out::Ok(ok(v)),
        Err(e) => Out::Err(e.code()),
    }
}

fn ttl(i: usize) -> Ttl {
    Ttl::from_micros(TTLS[i]).unwrap()
}

/// A claim's description, as the model gives it.
fn claimed(l: &Lease) -> String {
    format!("claimed {} attempt {}", l.job(), l.attempt())
}

/// A call made by a thread of a commit group: its outcome and minted lease.
type Call<'a> = Box<dyn FnOnce() -> (Out, Option<Lease>) + Send + 'a>;

/// One call of the API for a group-able operation (not import, not a clock
/// move, not a reopen): its outcome and the lease it minted.
fn call(a: &Authority, leases: &[Lease], op: &Op) -> (Out, Option<Lease>) {
    let o = match *op {
        Op::Submit {
            job,
            variant,
            max,
            prio,
            delay,
            hold,
            backoff,
        } => out(
            a.submit("p", &{
                let mut spec = JobSpec::new(JOB_NAMES[job], vec![variant])
                    .max_attempts(max)
                    .priority(prio)
                    .not_before(Delay::from_micros(DELAYS[delay]).unwrap());
                if hold {
                    spec = spec.max_hold(Delay::from_micros(HOLD).unwrap());
                }
                if backoff {
                    spec = spec.backoff(
                        Backoff::exponential(
                            Delay::from_micros(BACKOFF.0).unwrap(),
                            Delay::from_micros(BACKOFF.1).unwrap(),
                        )
                        .unwrap(),
                    );
                }
                spec
            }),
            |s| {
                if s == Submitted::Created {
                    "created".into()
                } else {
                    "existing".into()
                }
            },
        ),
        Op::Claim { job, ttl: t } => match a.claim("p", JOB_NAMES[job], "w", ttl(t)) {
            Ok(l) => return (Out::Ok(claimed(&l)), Some(l)),
            Err(e) => Out::Err(e.code()),
        },
        Op::ClaimNext { ttl: t } => match a.claim_next("p", "w", ttl(t)) {
            Ok(l) => return (Out::Ok(claimed(&l)), Some(l)),
            Err(e) => Out::Err(e.code()),
        },
        Op::Renew { lease, ttl: t } => match leases.get(lease) {
            None => Out::Ok("no lease".into()),
            Some(l) => out(l.renew(ttl(t)), |_| "renewed".into()),
        },
        Op::Release { lease } => match leases.get(lease) {
            None => Out::Ok("no lease".into()),
            Some(l) => out(l.release(), |s| {
                format!(
                    "released {:?}",
                    if s == JobState::Failed {
                        S::Failed
                    } else {
                        S::Requested
                    }
                )
            }),
        },
        Op::Fail {
            lease,
            permanent,
            retry,
        } => match leases.get(lease) {
            None => Out::Ok("no lease".into()),
            Some(l) => out(
                match retry.filter(|_| !permanent) {
                    Some(r) => l.fail_retry_after("boom", Delay::from_micros(DELAYS[r]).unwrap()),
                    None => l.fail("boom", permanent),
                },
                |s| {
                    format!(
                        "failed {:?}",
                        if s == JobState::Failed {
                            S::Failed
                        } else {
                            S::Requested
                        }
                    )
                },
            ),
        },
        Op::Complete { lease } => match leases.get(lease) {
            None => Out::Ok("no lease".into()),
            Some(l) => out(l.complete(&[Fact::new("k", "v")]), |_| "completed".into()),
        },
        Op::Requeue { job, extra, delay } => out(
            a.requeue(
                "p",
                JOB_NAMES[job],
                extra,
                Delay::from_micros(DELAYS[delay]).unwrap(),
            ),
            |_| "requeued".into(),
        ),
        Op::RequeueAll {
            extra,
            delay,
            limit,
        } => out(
            a.requeue_all(
                "p",
                extra,
                Delay::from_micros(DELAYS[delay]).unwrap(),
                limit,
            ),
            |(done, more)| format!("requeued {done}, more {more}"),
        ),
        Op::Checkpoint { lease, renew } => match leases.get(lease) {
            None => Out::Ok("no lease".into()),
            Some(l) => {
                let value = lease.to_string().into_bytes();
                let r = match renew {
                    Some(t) => l.renew_checkpoint(ttl(t), &value),
                    None => l.checkpoint(&value),
                };
                out(r, |_| "checkpointed".into())
            }
        },
        Op::Cancel { job } => out(a.cancel("p", JOB_NAMES[job]), |c| {
            if c == CancelOutcome::Cancelled {
                "cancelled".into()
            } else {
                "already".into()
            }
        }),
        Op::Pause => out(a.pause_production("p"), |c| format!("{c}")),
        Op::Resume => out(a.resume_production("p"), |c| format!("{c}")),
        Op::Limit { k } => out(a.set_concurrency_limit("p", (k > 0).then_some(k)), |_| {
            "limited".into()
        }),
        Op::Rate { r } => out(
            a.set_rate_limit(
                "p",
                r.map(|r| RateLimit {
                    claims: RATES[r].0,
                    interval: std::time::Duration::from_micros(RATES[r].1 as u64),
                    burst: RATES[r].2,
                }),
            ),
            |_| "limited".into(),
        ),
        Op::Import { .. }
        | Op::ClaimNextMany { .. }
        | Op::ClaimAcross { .. }
        | Op::Forward { .. }
        | Op::Backward { .. }
        | Op::Reopen
        | Op::RunSchedules
        | Op::Prune { .. } => {
            unreachable!("not a call that can join a group: {op:?}")
        }
    };
    (o, None)
}

/// Local lease views agree with the model's.
fn check_leases(
    model: &Model,
    leases: &[Lease],
    i: usize,
) -> std::result::Result<(), TestCaseError> {
    prop_assert_eq!(leases.len(), model.leases.len(), "leases after step {}", i);
    for (k, ml) in model.leases.iter().enumerate() {
        let l = &leases[k];
        prop_assert_eq!(
            l.status() == LeaseStatus::Closed,
            ml.closed,
            "lease {} status after step {}",
            k,
            i
        );
        prop_assert_eq!(
            l.expires_us(),
            ml.expires,
            "lease {} expiry after step {}",
            k,
            i
        );
    }
    Ok(())
}

fn run(steps: &[Step]) -> std::result::Result<(), TestCaseError> {
    let mut env = Env::new();
    env.auth.create_production("p").unwrap();
    env.auth.create_production("sched").unwrap();
    let every = Cadence::every(Delay::from_micros(SLOT).unwrap()).unwrap();
    env.auth
        .create_schedule(
            "sched",
            &ScheduleSpec::new("tick", every, vec![]).catch_up(CATCH_UP as u32),
        )
        .unwrap();
    let settled = env.auth.schedules(None).unwrap()[0].settled_us;
    let mut model = Model {
        now: T0,
        mark: T0,
        jobs: BTreeMap::new(),
        tombstones: BTreeMap::new(),
        leases: Vec::new(),
        claims: 0,
        seq: 0,
        frozen: None,
        gates: MGates::default(),
        settled,
        rotation: 0,
    };
    env.auth.create_production("q").unwrap();
    for name in Q_JOBS {
        env.auth
            .submit("q", &JobSpec::new(name, vec![]).max_attempts(2))
            .unwrap();
        model.seq += 1;
        model.jobs.insert(
            name.to_owned(),
            MJob {
                prod: "q",
                seq: model.seq,
                variant: 0,
                max: 2,
                prio: 0,
                state: S::Requested,
                attempts: 0,
                claim: None,
                expires: 0,
                exhausted: false,
                hold: false,
                backoff: false,
                due: None,
                claimed_at: 0,
                progress: None,
            },
        );
    }
    model.mark = env.auth.clock().unwrap().mark_us;
    let mut leases: Vec<Lease> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let a = env.auth.clone();
        let op = match step {
            Step::One(op) => op,
            Step::Group { ops, jump } => {
                let t = model.now;
                let queues: Vec<bool> = ops.iter().map(|o| model.queues(o)).collect();
                let n = queues.iter().filter(|q| **q).count();
                // The model first: it says whether the group's first round
                // takes a pre-commit sample (after the members' n samples).
                let (expected, pre) = model.group(ops, t, *jump);
                if pre {
                    let mut script = vec![t; n];
                    script.push(t + jump);
                    env.clock.script(&script);
                }
                let mut real: Vec<Option<Out>> = vec![None; ops.len()];
                let mut minted: Vec<Option<Lease>> = Vec::new();
                minted.resize_with(ops.len(), || None);
                let mut calls: Vec<Call<'_>> = Vec::new();
                let mut queued = Vec::new();
                for (k, op) in ops.iter().enumerate() {
                    if queues[k] {
                        let (a, leases) = (a.clone(), &leases);
                        calls.push(Box::new(move || call(&a, leases, op)));
                        queued.push(k);
                    } else {
                        real[k] = Some(call(&a, &leases, op).0);
                    }
                }
                for (k, (o, l)) in queued.into_iter().zip(in_one_group(&env, &a, calls)) {
                    real[k] = Some(o);
                    minted[k] = l;
                }
                let real: Vec<Out> = real.into_iter().map(Option::unwrap).collect();
                prop_assert_eq!(&real, &expected, "step {} {:?}", i, step);
                leases.extend(minted.into_iter().flatten());
                prop_assert_eq!(env.clock.get(), model.now, "clock after step {}", i);
                check_leases(&model, &leases, i)?;
                continue;
            }
        };
        if let Op::Prune {
            jobs,
            tombstones,
            events,
        } = *op
        {
            let age = |i: usize| Some(Age::from_secs(AGES[i]).unwrap());
            let policy = Retention {
                event_age: age(events),
                terminal_job_age: age(jobs),
                tombstone_age: age(tombstones),
            };
            let real = out(a.prune(&policy), |_| "pruned".into());
            let present: BTreeSet<String> = ACROSS
                .iter()
                .flat_map(|p| a.jobs(p, &ListQuery::default()).unwrap())
                .map(|v| v.job)
                .collect();
            let gone: Vec<String> = model
                .jobs
                .keys()
                .filter(|n| !present.contains(*n))
                .cloned()
                .collect();
            if real != Out::Ok("pruned".into()) {
                prop_assert!(gone.is_empty(), "a refused prune removed {:?}", gone);
            }
            let expected = model.prune(&gone, AGES[tombstones])?;
            prop_assert_eq!(&real, &expected, "step {} {:?}", i, op);
            continue;
        }
        let real = match *op {
            Op::Import { lease } => match leases.get(lease) {
                None => Out::Ok("no lease".into()),
                Some(l) => match l.export_token().and_then(|t| a.import_lease(t.expose())) {
                    Ok(n) => {
                        prop_assert_eq!(n.claim_id(), l.claim_id());
                        leases.push(n);
                        Out::Ok("imported".into())
                    }
                    Err(e) => Out::Err(e.code()),
                },
            },
            Op::Forward { us } => {
                env.clock.advance(us);
                Out::Ok(String::new())
            }
            Op::Backward { us } => {
                env.clock.advance(-us);
                Out::Ok(String::new())
            }
            Op::Reopen => {
                env.auth = env.reopen();
                Out::Ok(String::new())
            }
            Op::ClaimNextMany { ttl: t, n } => match a.claim_next_many("p", "w", ttl(t), n) {
                Ok(got) => {
                    let s: Vec<String> = got.iter().map(claimed).collect();
                    leases.extend(got);
                    Out::Ok(format!("{s:?}"))
                }
                Err(e) => Out::Err(e.code()),
            },
            Op::ClaimAcross { ttl: t, n: None } => {
                match a.claim_next_across(&ACROSS, "w", ttl(t)) {
                    Ok(l) => {
                        let s = claimed(&l);
                        leases.push(l);
                        Out::Ok(s)
                    }
                    Err(e) => Out::Err(e.code()),
                }
            }
            Op::ClaimAcross { ttl: t, n: Some(n) } => {
                match a.claim_next_many_across(&ACROSS, "w", ttl(t), n) {
                    Ok(got) => {
                        let s: Vec<String> = got.iter().map(claimed).collect();
                        leases.extend(got);
                        Out::Ok(format!("{s:?}"))
                    }
                    Err(e) => Out::Err(e.code()),
                }
            }
            Op::RunSchedules => out(a.run_schedules(), |t| {
                let jobs: Vec<String> = t.enqueued.into_iter().map(|(_, j)| j).collect();
                format!("{jobs:?} dropped {}", t.dropped)
            }),
            _ => {
                let (o, minted) = call(&a, &leases, op);
                leases.extend(minted);
                o
            }
        };
        let expected = model.apply(op);
        prop_assert_eq!(&real, &expected, "step {} {:?}", i, op);
        check_leases(&model, &leases, i)?;
        if matches!(op, Op::Submit { .. } | Op::Fail { .. }) {
            // Not-before times as recorded (submission delay, retry delay, back-off).
            for (name, j) in &model.jobs {
                let v = env.auth.job(j.prod, name).unwrap();
                prop_assert_eq!(v.due_us, j.due, "job {} due after step {}", name, i);
            }
        }
    }
    // Final observed states agree.
    let t = model.now.max(model.mark);
    for (name, j) in &model.jobs {
        let v = env.auth.job(j.prod, name).unwrap();
        prop_assert_eq!(v.state, model.classify(j, t), "job {}", name);
        prop_assert_eq!(v.attempts, j.attempts, "job {} attempts", name);
        prop_assert_eq!(v.due_us, j.due, "job {} due", name);
        prop_assert_eq!(v.expires_us.unwrap_or(0), j.expires, "job {} expiry", name);
        prop_assert_eq!(&v.progress, &j.progress, "job {} progress", name);
    }
    // The statistics' counts (kept as jobs change state, pruning
    // included) agree with the model's states.
    let st = env.auth.stats(&StatsQuery::default()).unwrap();
    let p = st.productions.iter().find(|p| p.name == "p").unwrap();
    let in_p = || model.jobs.values().filter(|j| j.prod == "p");
    let of = |s: JobState| in_p().filter(|j| model.classify(j, t) == s).count() as u64;
    let later = in_p()
        .filter(|j| model.classify(j, t) == JobState::Requested && j.due.is_some_and(|d| d > t))
        .count() as u64;
    prop_assert_eq!(
        (
            p.waiting_due,
            p.waiting_later,
            p.claimed_live,
            p.claimed_expired
        ),
        (
            of(JobState::Requested) - later,
            later,
            of(JobState::Claimed),
            of(JobState::Expired)
        )
    );
    prop_assert_eq!(
        (p.completed, p.failed, p.cancelled_jobs),
        (
            of(JobState::Completed),
            of(JobState::Failed),
            of(JobState::Cancelled)
        )
    );
    for name in model.tombstones.keys() {
        let e = env.auth.job(prod_of(name), name).unwrap_err();
        prop_assert_eq!(e.code(), ErrorCode::NotFound, "pruned job {}", name);
    }
    prop_assert_eq!(env.auth.clock().unwrap().mark_us, model.mark);
    let report = env.auth.check().unwrap();
    prop_assert!(report.ok(), "{:?}", report.violations);
    Ok(())
}

proptest! {
    // Each PostgreSQL case creates and drops a database: fewer cases there.
    #![proptest_config(ProptestConfig { cases: if on_postgres() { 96 } else { 256 }, max_shrink_iters: 2000, ..ProptestConfig::default() })]
    #[test]
    fn store_agrees_with_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(&ops.into_iter().map(Step::One).collect::<Vec<_>>())?;
    }
}

proptest! {
    // Concurrent calls carried by commit groups (docs/design.md, "Group
    // commit"): every outcome equals the model's serial execution of the
    // group in queue order, with refused members (stale, expired, clock
    // rollback at the pre-commit sample) failing first and the others
    // committing. Forming a group takes a few ms: fewer cases.
    #![proptest_config(ProptestConfig { cases: 96, max_shrink_iters: 1000, ..ProptestConfig::default() })]
    #[test]
    fn store_agrees_with_model_in_commit_groups(steps in proptest::collection::vec(step(), 1..40)) {
        if on_postgres() || !group_commit() {
            // PostgreSQL and grouping off never form a group.
            return Ok(());
        }
        run(&steps)?;
    }
}
