//! Recurring jobs: schedules, the scheduler step, its slot record and its
//! clock (docs/schedules.md). Runs on SQLite and, with
//! `TENURE_TEST_BACKEND=postgres`, on PostgreSQL.
mod common;
use common::*;
use proptest::prelude::*;
use tenure::*;

const S: i64 = 1_000_000;

fn every(secs: i64) -> Cadence {
    Cadence::every(Delay::from_micros(secs * S).unwrap()).unwrap()
}

fn jobs_of(a: &Authority, p: &str) -> Vec<String> {
    let mut v: Vec<String> = a
        .jobs(
            p,
            &ListQuery {
                limit: 10_000,
                ..ListQuery::default()
            },
        )
        .unwrap()
        .into_iter()
        .map(|j| j.job)
        .collect();
    v.sort();
    v
}

fn env_with(spec: &ScheduleSpec) -> Env {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    assert!(env.auth.create_schedule("p", spec).unwrap());
    env
}

#[test]
fn schedule_bad_input_is_refused_and_changes_nothing() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    let code = |r: Result<Cadence>| r.unwrap_err().code();
    assert_eq!(code(Cadence::cron("*/5 * * *")), ErrorCode::InvalidArgument);
    assert_eq!(
        code(Cadence::cron("0 */5 * * * *")),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(Cadence::cron("61 * * * *")),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(Cadence::cron("every day")), ErrorCode::InvalidArgument);
    let e = Cadence::cron("* * * * * *").unwrap_err();
    assert!(e.to_string().contains("five are expected"), "{e}");
    for bad in [0, 1_500_000, 500_000] {
        let d = Delay::from_micros(bad).unwrap();
        assert_eq!(code(Cadence::every(d)), ErrorCode::InvalidDuration, "{bad}");
    }
    let longest = Delay::from_micros(MAX_INTERVAL_SECS * S).unwrap();
    assert_eq!(
        Cadence::every(longest).unwrap(),
        Cadence::Every(MAX_INTERVAL_SECS)
    );
    let e = Cadence::every(Delay::from_micros(S / 2).unwrap()).unwrap_err();
    assert!(e.to_string().contains("whole number of seconds"), "{e}");
    let ok = ScheduleSpec::new("s", every(60), b"x".to_vec());
    for (spec, want) in [
        (ok.clone().catch_up(0), ErrorCode::InvalidArgument),
        (
            ok.clone().catch_up(MAX_CATCH_UP + 1),
            ErrorCode::InvalidArgument,
        ),
        (ok.clone().max_attempts(0), ErrorCode::InvalidArgument),
        (ok.clone().max_hold(Delay::ZERO), ErrorCode::InvalidDuration),
        (
            ScheduleSpec::new("x".repeat(MAX_SCHEDULE_NAME + 1), every(60), vec![]),
            ErrorCode::InvalidArgument,
        ),
        (
            ScheduleSpec::new("bad name", every(60), vec![]),
            ErrorCode::InvalidArgument,
        ),
        (
            ScheduleSpec::new("s", Cadence::Every(0), vec![]),
            ErrorCode::InvalidDuration,
        ),
        (
            ScheduleSpec::new("s", Cadence::Every(MAX_INTERVAL_SECS + 1), vec![]),
            ErrorCode::InvalidDuration,
        ),
        (
            ScheduleSpec::new("s", Cadence::Every(i64::MAX), vec![]),
            ErrorCode::InvalidDuration,
        ),
        (
            ScheduleSpec::new("s", Cadence::Cron("nope".into()), vec![]),
            ErrorCode::InvalidArgument,
        ),
    ] {
        assert_eq!(
            env.auth.create_schedule("p", &spec).unwrap_err().code(),
            want,
            "{spec:?}"
        );
    }
    assert_eq!(
        env.auth.create_schedule("missing", &ok).unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        env.auth.update_schedule("p", &ok).unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        env.auth.pause_schedule("p", "s").unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert!(env.auth.schedules(None).unwrap().is_empty());
    // Same definition again: idempotent; another one: conflict.
    assert!(env.auth.create_schedule("p", &ok).unwrap());
    assert!(!env.auth.create_schedule("p", &ok).unwrap());
    assert_eq!(
        env.auth
            .create_schedule("p", &ok.clone().priority(3))
            .unwrap_err()
            .code(),
        ErrorCode::Conflict
    );
}

#[test]
fn each_slot_is_enqueued_once_by_any_number_of_schedulers() {
    let env = env_with(&ScheduleSpec::new("tick", every(10), b"go".to_vec()).priority(2));
    let other = env.reopen();
    let t = env.auth.run_schedules().unwrap();
    assert!(t.enqueued.is_empty());
    assert_eq!(t.next_slot_us, Some(T0 + 10 * S));
    env.clock.advance(10 * S);
    let t = env.auth.run_schedules().unwrap();
    let id = slot_job("tick", T0 + 10 * S);
    assert_eq!(id, "tick@2027-01-15T08:00:10Z");
    assert_eq!(t.enqueued, vec![("p".to_string(), id.clone())]);
    assert_eq!(t.next_slot_us, Some(T0 + 20 * S));
    assert!(other.run_schedules().unwrap().enqueued.is_empty());
    assert!(env.auth.run_schedules().unwrap().enqueued.is_empty());
    let j = env.auth.job("p", &id).unwrap();
    assert_eq!(j.priority, 2);
    assert_eq!(env.auth.payload("p", &id).unwrap(), b"go");
    let v = &env.auth.schedules(Some("p")).unwrap()[0];
    assert_eq!(v.last_slot_us, Some(T0 + 10 * S));
    assert_eq!(v.next_slot_us, Some(T0 + 20 * S));
    // Many threads at once on two handles: still one job per slot.
    env.clock.advance(10 * S);
    std::thread::scope(|sc| {
        for i in 0..8 {
            let a = if i % 2 == 0 { &env.auth } else { &other };
            sc.spawn(move || a.run_schedules().unwrap());
        }
    });
    assert_eq!(
        jobs_of(&env.auth, "p"),
        vec![id, slot_job("tick", T0 + 20 * S)]
    );
}

#[test]
fn slot_jobs_carry_the_schedules_job_options() {
    let backoff = Backoff::exponential(
        Delay::from_micros(2 * S).unwrap(),
        Delay::from_micros(60 * S).unwrap(),
    )
    .unwrap();
    let hold = Delay::from_micros(300 * S).unwrap();
    let spec = ScheduleSpec::new("opts", every(10), b"work".to_vec())
        .priority(-7)
        .max_attempts(9)
        .max_hold(hold)
        .backoff(backoff);
    let env = env_with(&spec);
    assert_eq!(env.auth.schedules(Some("p")).unwrap()[0].spec, spec);
    env.clock.advance(10 * S);
    let t = env.auth.run_schedules().unwrap();
    let id = slot_job("opts", T0 + 10 * S);
    assert_eq!(t.enqueued, vec![("p".to_string(), id.clone())]);
    let j = env.auth.job("p", &id).unwrap();
    assert_eq!(j.state, JobState::Requested);
    assert_eq!(j.priority, -7);
    assert_eq!(j.max_attempts, 9);
    assert_eq!(j.max_hold_us, Some(300 * S));
    assert_eq!(j.backoff, Some(backoff));
    assert_eq!(j.attempts, 0);
    assert_eq!(env.auth.payload("p", &id).unwrap(), b"work");
    // The options are the job's own: a failed attempt waits out the
    // schedule's back-off (its base, 2 s) before the slot job is claimable.
    let lease = env.auth.claim_next("p", "w", secs(60)).unwrap();
    assert_eq!(lease.job(), id);
    lease.fail("try again", false).unwrap();
    let j = env.auth.job("p", &id).unwrap();
    assert_eq!(j.state, JobState::Requested);
    assert_eq!(j.due_us, Some(T0 + 12 * S));
    // An update changes the options of the slots enqueued after it.
    env.auth
        .update_schedule("p", &spec.clone().priority(4).max_attempts(2))
        .unwrap();
    env.clock.advance(10 * S);
    env.auth.run_schedules().unwrap();
    let j = env.auth.job("p", &slot_job("opts", T0 + 20 * S)).unwrap();
    assert_eq!((j.priority, j.max_attempts), (4, 2));
    assert_eq!(j.max_hold_us, Some(300 * S));
    assert_eq!(j.backoff, Some(backoff));
}

#[test]
fn missed_slots_beyond_the_catch_up_bound_are_dropped_with_an_event() {
    let env = env_with(&ScheduleSpec::new("s", every(10), vec![]).catch_up(3));
    env.clock.advance(100 * S + 5 * S);
    let t = env.auth.run_schedules().unwrap();
    assert_eq!(t.dropped, 7);
    let want: Vec<String> = (8..=10).map(|k| slot_job("s", T0 + k * 10 * S)).collect();
    assert_eq!(jobs_of(&env.auth, "p"), want);
    let evs = env.auth.events(0, 1000).unwrap();
    let dropped: Vec<_> = evs
        .iter()
        .filter(|e| e.kind == EventKind::SlotsDropped)
        .collect();
    assert_eq!(dropped.len(), 1);
    assert!(
        dropped[0]
            .detail
            .contains("schedule s: 7 slots from 2027-01-15T08:00:10Z"),
        "{}",
        dropped[0].detail
    );
    assert_eq!(EventKind::SlotsDropped.as_str(), "slots_dropped");
}

#[test]
fn a_backward_clock_never_enqueues_a_slot_twice_or_early() {
    let env = env_with(&ScheduleSpec::new("s", every(10), vec![]));
    env.clock.advance(25 * S);
    assert_eq!(env.auth.run_schedules().unwrap().enqueued.len(), 1);
    env.clock.set(T0 + 5 * S);
    for _ in 0..3 {
        let t = env.auth.run_schedules().unwrap();
        assert!(t.enqueued.is_empty());
        assert!(t.now_us >= T0 + 25 * S, "the step's time holds at the mark");
    }
    env.clock.set(T0 + 29 * S);
    assert!(env.auth.run_schedules().unwrap().enqueued.is_empty());
    env.clock.set(T0 + 30 * S);
    assert_eq!(
        env.auth.run_schedules().unwrap().enqueued,
        vec![("p".into(), slot_job("s", T0 + 30 * S))]
    );
}

#[test]
fn paused_slots_are_never_enqueued_and_resume_starts_after_now() {
    let env = env_with(&ScheduleSpec::new("s", every(10), vec![]).catch_up(100));
    assert!(env.auth.pause_schedule("p", "s").unwrap());
    assert!(!env.auth.pause_schedule("p", "s").unwrap());
    env.clock.advance(55 * S);
    assert!(env.auth.run_schedules().unwrap().enqueued.is_empty());
    assert_eq!(env.auth.schedules(None).unwrap()[0].next_slot_us, None);
    assert!(env.auth.resume_schedule("p", "s").unwrap());
    assert!(env.auth.run_schedules().unwrap().enqueued.is_empty());
    env.clock.advance(5 * S);
    assert_eq!(
        jobs_of(&env.auth, "p"),
        Vec::<String>::new(),
        "nothing before the step"
    );
    env.auth.run_schedules().unwrap();
    assert_eq!(jobs_of(&env.auth, "p"), vec![slot_job("s", T0 + 60 * S)]);
}

#[test]
fn cron_slots_update_keeps_the_slot_record_and_delete_removes_it() {
    let spec = ScheduleSpec::new("c", Cadence::cron("*/5 * * * *").unwrap(), b"a".to_vec());
    let env = env_with(&spec);
    // T0 is 08:00:00 UTC: the next slot is 08:05.
    assert_eq!(
        env.auth.schedules(None).unwrap()[0].next_slot_us,
        Some(T0 + 300 * S)
    );
    env.clock.advance(300 * S);
    env.auth.run_schedules().unwrap();
    assert_eq!(
        jobs_of(&env.auth, "p"),
        vec!["c@2027-01-15T08:05:00Z".to_string()]
    );
    // An update with another payload does not enqueue the settled slot again.
    env.auth
        .update_schedule("p", &ScheduleSpec::new("c", every(60), b"b".to_vec()))
        .unwrap();
    assert!(env.auth.run_schedules().unwrap().enqueued.is_empty());
    env.clock.advance(60 * S);
    env.auth.run_schedules().unwrap();
    assert_eq!(
        env.auth.payload("p", "c@2027-01-15T08:06:00Z").unwrap(),
        b"b"
    );
    let v = &env.auth.schedules(Some("p")).unwrap()[0];
    assert_eq!(v.spec.cadence, every(60));
    assert_eq!(v.created_us, T0);
    assert!(env.auth.delete_schedule("p", "c").unwrap());
    assert!(!env.auth.delete_schedule("p", "c").unwrap());
    env.clock.advance(600 * S);
    assert_eq!(env.auth.run_schedules().unwrap().next_slot_us, None);
    assert_eq!(jobs_of(&env.auth, "p").len(), 2, "its jobs stay");
}

#[test]
fn overlap_skip_leaves_out_slots_while_the_previous_job_is_live() {
    let env = env_with(&ScheduleSpec::new("s", every(10), vec![]).overlap(Overlap::Skip));
    env.clock.advance(10 * S);
    env.auth.run_schedules().unwrap();
    env.clock.advance(10 * S);
    let t = env.auth.run_schedules().unwrap();
    assert!(t.enqueued.is_empty());
    assert_eq!(t.dropped, 1);
    let lease = env.auth.claim_next("p", "w", secs(60)).unwrap();
    lease.complete(&[]).unwrap();
    env.clock.advance(10 * S);
    assert_eq!(env.auth.run_schedules().unwrap().enqueued.len(), 1);
}

#[test]
fn a_pruned_slot_job_is_not_enqueued_again() {
    let env = env_with(&ScheduleSpec::new("s", every(10), vec![]).catch_up(10));
    env.clock.advance(10 * S);
    env.auth.run_schedules().unwrap();
    env.auth
        .claim_next("p", "w", secs(60))
        .unwrap()
        .complete(&[])
        .unwrap();
    let policy = Retention {
        event_age: None,
        terminal_job_age: Some(Age::from_secs(1).unwrap()),
        tombstone_age: Some(Age::from_secs(1).unwrap()),
    };
    env.clock.advance(2 * S);
    env.auth.prune(&policy).unwrap();
    env.clock.advance(2 * S);
    env.auth.prune(&policy).unwrap();
    assert!(jobs_of(&env.auth, "p").is_empty());
    // No job and no tombstone holds the ID any more: only the slot record
    // keeps the step from enqueueing the slot once more.
    env.clock.advance(S);
    assert!(env.auth.run_schedules().unwrap().enqueued.is_empty());
}

#[test]
fn deleting_a_production_deletes_its_schedules() {
    let env = env_with(&ScheduleSpec::new("s", every(10), vec![]));
    env.auth.delete_production("p").unwrap();
    assert!(env.auth.schedules(None).unwrap().is_empty());
}

/// A cadence the property test draws: an interval, or a cron expression
/// (every `k` minutes, or hourly at minute `m`) in UTC or in a zone with a
/// fixed offset that is not a whole hour (no daylight-saving time).
#[derive(Debug, Clone)]
enum Draw {
    Every(i64),
    EveryMinutes(u32, Option<&'static str>),
    Hourly(u32, Option<&'static str>),
}

/// The zones drawn and their offsets from UTC in minutes.
const ZONES: [(&str, i64); 2] = [("Asia/Kolkata", 330), ("Asia/Kathmandu", 345)];

impl Draw {
    fn cadence(&self) -> Cadence {
        let cron = |expr: String, tz: &Option<&str>| match tz {
            None => Cadence::cron(&expr).unwrap(),
            Some(z) => Cadence::cron_in(&expr, z).unwrap(),
        };
        match self {
            Draw::Every(secs) => every(*secs),
            Draw::EveryMinutes(k, tz) => cron(format!("*/{k} * * * *"), tz),
            Draw::Hourly(m, tz) => cron(format!("{m} * * * *"), tz),
        }
    }

    /// The model's slots in `(after, up_to]`, found by walking the seconds
    /// or the minutes (never through the implementation's arithmetic).
    fn slots(&self, after: i64, up_to: i64) -> Vec<i64> {
        let offset =
            |tz: &Option<&str>| tz.map_or(0, |z| ZONES.iter().find(|(n, _)| *n == z).unwrap().1);
        let minutes = |matches: &dyn Fn(i64) -> bool| -> Vec<i64> {
            ((after.div_euclid(60 * S) + 1)..=up_to.div_euclid(60 * S))
                .filter(|&m| matches(m))
                .map(|m| m * 60 * S)
                .collect()
        };
        match self {
            Draw::Every(secs) => ((after.div_euclid(S) + 1)..=up_to.div_euclid(S))
                .filter(|k| k % secs == 0)
                .map(|k| k * S)
                .collect(),
            Draw::EveryMinutes(k, tz) => {
                let off = offset(tz);
                minutes(&|m| (m + off).rem_euclid(60) % *k as i64 == 0)
            }
            Draw::Hourly(at, tz) => {
                let off = offset(tz);
                minutes(&|m| (m + off).rem_euclid(60) == *at as i64)
            }
        }
    }
}

fn draw() -> impl Strategy<Value = Draw> {
    let tz = prop_oneof![Just(None), Just(Some(ZONES[0].0)), Just(Some(ZONES[1].0))];
    prop_oneof![
        3 => (1i64..20).prop_map(Draw::Every),
        1 => (prop_oneof![Just(1u32), Just(2), Just(5), Just(15)], tz.clone())
            .prop_map(|(k, tz)| Draw::EveryMinutes(k, tz)),
        1 => (prop_oneof![Just(0u32), Just(7), Just(30), Just(45)], tz)
            .prop_map(|(m, tz)| Draw::Hourly(m, tz)),
    ]
}

/// One schedule's definition as the property test draws it.
#[derive(Debug, Clone)]
struct Def {
    draw: Draw,
    catch_up: u32,
    skip: bool,
}

impl Def {
    fn spec(&self, name: &str) -> ScheduleSpec {
        let overlap = if self.skip {
            Overlap::Skip
        } else {
            Overlap::Enqueue
        };
        ScheduleSpec::new(name, self.draw.cadence(), vec![])
            .catch_up(self.catch_up)
            .overlap(overlap)
    }
}

fn def() -> impl Strategy<Value = Def> {
    (draw(), 1u32..5, proptest::bool::weighted(0.3)).prop_map(|(draw, catch_up, skip)| Def {
        draw,
        catch_up,
        skip,
    })
}

/// What the property test does, in order, on the schedules `s0`, `s1`, ...
#[derive(Debug, Clone)]
enum Op {
    /// Move the clock by this many seconds (back when negative), then step.
    Step(i64),
    Pause(usize),
    Resume(usize),
    Update(usize, Def),
    /// Claim the oldest claimable job and complete it.
    Work,
}

fn op(schedules: usize) -> impl Strategy<Value = Op> {
    let i = 0..schedules;
    prop_oneof![
        6 => (-20i64..30).prop_map(Op::Step),
        1 => (-3600i64..7200).prop_map(Op::Step),
        1 => i.clone().prop_map(Op::Pause),
        1 => i.clone().prop_map(Op::Resume),
        1 => (i, def()).prop_map(|(i, d)| Op::Update(i, d)),
        2 => Just(Op::Work),
    ]
}

/// The model of one schedule: its definition and slot record.
struct Sched {
    def: Def,
    paused: bool,
    settled: i64,
    last_slot: Option<i64>,
}

/// The model: the store's time (the highest clock reading, which a step
/// never goes below), the schedules and the jobs they enqueued (open or
/// not). Every write takes the time `max(clock, mark)`.
struct Model {
    mark: i64,
    scheds: Vec<Sched>,
    open: std::collections::BTreeMap<String, bool>,
}

impl Model {
    fn now(&mut self, clock: i64) -> i64 {
        self.mark = self.mark.max(clock);
        self.mark
    }

    /// A step: every slot of an active schedule after its settled time up
    /// to now, the newest `catch_up` of them enqueued and the rest dropped;
    /// with overlap `skip`, none while the job of the schedule's newest
    /// slot is open. A schedule with slots due is settled up to now (one
    /// without keeps its settled time, so an update's new cadence counts
    /// from it). Returns the jobs enqueued (sorted) and the dropped count.
    fn step(&mut self, clock: i64) -> (Vec<String>, u64) {
        let now = self.now(clock);
        let mut enqueued = Vec::new();
        let mut dropped = 0;
        for (i, s) in self.scheds.iter_mut().enumerate() {
            if s.paused {
                continue;
            }
            let name = format!("s{i}");
            let due = s.def.draw.slots(s.settled, now);
            if due.is_empty() {
                continue;
            }
            s.settled = now;
            let keep = due.len().saturating_sub(s.def.catch_up as usize);
            dropped += keep as u64;
            let mut kept = due[keep..].to_vec();
            let live = s
                .last_slot
                .is_some_and(|l| self.open.get(&slot_job(&name, l)) == Some(&true));
            if s.def.skip && live {
                dropped += kept.len() as u64;
                kept.clear();
            }
            for &slot in &kept {
                enqueued.push(slot_job(&name, slot));
                self.open.insert(slot_job(&name, slot), true);
            }
            s.last_slot = kept.last().copied().or(s.last_slot);
        }
        enqueued.sort();
        (enqueued, dropped)
    }

    /// Pause or resume: `false` if it already was; a resumed schedule is
    /// settled up to now.
    fn set_paused(&mut self, i: usize, paused: bool, clock: i64) -> bool {
        let now = self.now(clock);
        let s = &mut self.scheds[i];
        if s.paused == paused {
            return false;
        }
        s.paused = paused;
        if !paused {
            s.settled = s.settled.max(now);
        }
        true
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn steps_match_the_model_under_any_clock(
        defs in proptest::collection::vec(def(), 1..4),
        ops in proptest::collection::vec(op(3), 1..16),
    ) {
        let env = Env::new();
        env.auth.create_production("p").unwrap();
        let mut m = Model { mark: T0, scheds: Vec::new(), open: Default::default() };
        for (i, d) in defs.iter().enumerate() {
            env.auth.create_schedule("p", &d.spec(&format!("s{i}"))).unwrap();
            m.scheds.push(Sched { def: d.clone(), paused: false, settled: T0, last_slot: None });
        }
        let n = defs.len();
        let mut t = T0;
        for op in ops {
            match op {
                Op::Step(d) => {
                    t += d * S;
                    env.clock.set(t);
                    let got = env.auth.run_schedules().unwrap();
                    let mut jobs: Vec<String> = got.enqueued.into_iter().map(|(_, j)| j).collect();
                    jobs.sort();
                    let (want, dropped) = m.step(t);
                    prop_assert_eq!(jobs, want, "step to {}", t);
                    prop_assert_eq!(got.dropped, dropped, "step to {}", t);
                    prop_assert_eq!(got.now_us, m.mark);
                }
                Op::Pause(i) | Op::Resume(i) if i >= n => {}
                Op::Pause(i) => {
                    let got = env.auth.pause_schedule("p", &format!("s{i}")).unwrap();
                    prop_assert_eq!(got, m.set_paused(i, true, t));
                }
                Op::Resume(i) => {
                    let got = env.auth.resume_schedule("p", &format!("s{i}")).unwrap();
                    prop_assert_eq!(got, m.set_paused(i, false, t));
                }
                Op::Update(i, _) if i >= n => {}
                Op::Update(i, d) => {
                    env.auth.update_schedule("p", &d.spec(&format!("s{i}"))).unwrap();
                    m.now(t);
                    m.scheds[i].def = d;
                }
                // A claim needs the clock at or past the store's time.
                Op::Work if t < m.mark => {}
                Op::Work => match env.auth.claim_next("p", "w", secs(60)) {
                    Ok(lease) => {
                        let job = lease.job().to_string();
                        prop_assert_eq!(m.open.get(&job), Some(&true), "{}", job);
                        lease.complete(&[]).unwrap();
                        m.open.insert(job, false);
                    }
                    Err(e) => {
                        prop_assert_eq!(e.code(), ErrorCode::NoJobAvailable);
                        prop_assert!(!m.open.values().any(|&o| o), "an open job was not claimed");
                    }
                },
            }
        }
        let all: Vec<String> = m.open.keys().cloned().collect();
        prop_assert_eq!(jobs_of(&env.auth, "p"), all);
        let views = env.auth.schedules(Some("p")).unwrap();
        prop_assert_eq!(views.len(), n);
        for (v, s) in views.iter().zip(&m.scheds) {
            prop_assert_eq!(v.paused, s.paused, "{}", v.spec.name);
            prop_assert_eq!(v.last_slot_us, s.last_slot, "{}", v.spec.name);
            prop_assert_eq!(&v.spec.cadence, &s.def.draw.cadence());
        }
    }
}

// ---- real processes: many schedulers, kill -9, libfaketime ----

/// How long the many-schedulers run lasts: 10 s, or `TENURE_SCHEDULERS_SECS`
/// (`cargo xtask torture` runs it for 5 minutes).
fn run_secs() -> u64 {
    std::env::var("TENURE_SCHEDULERS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// `n` scheduler processes (`scheduler_child`) on the store at `path`.
fn schedulers(n: usize, path: &std::path::Path) -> Vec<std::process::Child> {
    (0..n)
        .map(|_| {
            let mut c = child("scheduler_child");
            c.env("TENURE_SCHED_STORE", path)
                .stdin(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect()
}

/// Stop schedulers gracefully (closing their stdin ends their loop).
fn stop(children: Vec<std::process::Child>) {
    for mut c in children {
        drop(c.stdin.take());
        assert!(c.wait().unwrap().success());
    }
}

/// The slot jobs the log recorded as submitted for schedule `name`, in
/// log order, and the catch-up drops it recorded (their counts).
fn from_log(a: &Authority, name: &str) -> (Vec<String>, Vec<u64>) {
    let mut jobs = Vec::new();
    let mut drops = Vec::new();
    let mut after = 0;
    loop {
        let page = a.production_events("p", after, 1000).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        for e in page {
            match e.kind {
                EventKind::Submitted => jobs.extend(e.job.filter(|j| j.starts_with(name))),
                EventKind::SlotsDropped => drops.push(
                    e.detail
                        .split_whitespace()
                        .nth(2)
                        .and_then(|n| n.parse().ok())
                        .unwrap(),
                ),
                _ => {}
            }
        }
    }
    (jobs, drops)
}

/// Every slot of a 1 s schedule from its first after `from_us` to its last
/// before `to_us`.
fn every_second(name: &str, from_us: i64, to_us: i64) -> Vec<String> {
    ((from_us / S + 1)..=(to_us / S))
        .map(|k| slot_job(name, k * S))
        .collect()
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

#[test]
fn sixteen_schedulers_enqueue_every_slot_exactly_once() {
    let env = RealEnv::new();
    env.auth
        .create_schedule("p", &ScheduleSpec::new("sec", every(1), vec![]))
        .unwrap();
    let created = env.auth.schedules(None).unwrap()[0].created_us;
    let children = schedulers(16, &env.path());
    std::thread::sleep(std::time::Duration::from_secs(run_secs()));
    let end = now_us();
    stop(children);
    let (jobs, drops) = from_log(&env.auth, "sec@");
    let mut unique = jobs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), jobs.len(), "duplicates in the log");
    assert!(drops.is_empty(), "{drops:?}");
    let want = every_second("sec", created, end);
    // Every slot up to the end was enqueued (the last one may have come
    // after the end was read): none missing, none extra.
    assert!(
        jobs.len() >= want.len() - 1,
        "{} of {}",
        jobs.len(),
        want.len()
    );
    assert_eq!(jobs[..want.len() - 1], want[..want.len() - 1]);
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn killed_schedulers_catch_up_to_the_bound_and_record_the_rest_as_dropped() {
    let env = RealEnv::new();
    env.auth
        .create_schedule("p", &ScheduleSpec::new("k", every(1), vec![]).catch_up(3))
        .unwrap();
    let created = env.auth.schedules(None).unwrap()[0].created_us;
    let children = schedulers(16, &env.path());
    std::thread::sleep(std::time::Duration::from_secs(3));
    for mut c in children {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    std::thread::sleep(std::time::Duration::from_secs(10));
    let children = schedulers(16, &env.path());
    std::thread::sleep(std::time::Duration::from_secs(3));
    let end = now_us();
    stop(children);
    let (jobs, drops) = from_log(&env.auth, "k@");
    let mut unique = jobs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), jobs.len(), "duplicates in the log");
    assert_eq!(drops.len(), 1, "one catch-up after the restart: {drops:?}");
    assert!((6..=10).contains(&drops[0]), "{drops:?}");
    // Enqueued and dropped slots together are every slot, each once.
    let want = every_second("k", created, end);
    let accounted = jobs.len() as u64 + drops[0];
    assert!(
        accounted + 1 >= want.len() as u64 && accounted <= want.len() as u64 + 1,
        "{accounted} of {}",
        want.len()
    );
}

/// Child entry point: a scheduler loop on `TENURE_SCHED_STORE` until its
/// stdin closes (or it is killed); with `TENURE_SCHED_ONCE`, one step,
/// printing `ENQUEUED <n> DROPPED <n>`.
#[test]
#[ignore = "child-process entry point of the scheduler process tests"]
fn scheduler_child() {
    let path = std::env::var("TENURE_SCHED_STORE").expect("run by the parent test");
    let a = Authority::open(&path, &Options::new()).unwrap();
    if std::env::var("TENURE_SCHED_ONCE").is_ok() {
        let t = a.run_schedules().unwrap();
        println!("ENQUEUED {} DROPPED {}", t.enqueued.len(), t.dropped);
        return;
    }
    let cancel = WaitCancel::new();
    let c = cancel.clone();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        c.cancel();
    });
    a.run_schedules_until(&cancel, |_| {}).unwrap();
}

#[test]
fn clock_jumps_of_an_hour_enqueue_nothing_twice_or_early() {
    if skip_on_postgres("libfaketime on a SQLite file (PostgreSQL uses the server clock)") {
        return;
    }
    let env = RealEnv::new();
    env.auth
        .create_schedule("p", &ScheduleSpec::new("j", every(1), vec![]).catch_up(5))
        .unwrap();
    let path = env.path();
    let path = path.to_str().unwrap();
    let once = |offset: &str| {
        under_faketime(
            offset,
            "scheduler_child",
            &[("TENURE_SCHED_STORE", path), ("TENURE_SCHED_ONCE", "1")],
            "",
        )
    };
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // Back an hour: nothing is due by that clock, nothing is enqueued.
    let out = once("-1h");
    assert!(out.contains("ENQUEUED 0 DROPPED 0"), "{out}");
    // Forward an hour: the newest 5 of the hour's slots, the rest dropped.
    let out = once("+1h");
    let jumped = std::time::Instant::now();
    let (n, dropped) = step_counts(&out);
    assert_eq!(n, 5, "{out}");
    assert!((3590..=3610).contains(&dropped), "{out}");
    // Back at real time, and an hour back: the store's mark is an hour
    // ahead, so no slot is due again, and none is enqueued twice.
    for offset in ["+0", "-1h"] {
        let out = once(offset);
        assert!(out.contains("ENQUEUED 0 DROPPED 0"), "{offset}: {out}");
    }
    // An hour ahead again: only the slots of the seconds that passed since
    // the jump are due (each once), none of the hour's again.
    let out = once("+1h");
    let (later, dropped) = step_counts(&out);
    let passed = jumped.elapsed().as_secs() + 1;
    assert!(later <= passed.min(5) && dropped <= passed, "{out}");
    let (jobs, drops) = from_log(&env.auth, "j@");
    assert_eq!(jobs.len() as u64, 5 + later);
    let distinct: std::collections::HashSet<_> = jobs.iter().collect();
    assert_eq!(
        distinct.len(),
        jobs.len(),
        "a slot enqueued twice: {jobs:?}"
    );
    assert_eq!(drops.len(), 1 + usize::from(dropped > 0));
}

/// The counts a scheduler child printed: `ENQUEUED n DROPPED d`.
fn step_counts(out: &str) -> (u64, u64) {
    out.split_once("ENQUEUED ")
        .and_then(|(_, r)| r.split_once(" DROPPED "))
        .map(|(n, d)| {
            (
                n.parse::<u64>().unwrap(),
                d.split_whitespace().next().unwrap().parse::<u64>().unwrap(),
            )
        })
        .unwrap_or_else(|| panic!("no step counts in {out:?}"))
}

/// An Env whose clock (and so the store's first high-water mark) starts at
/// `start_us`.
fn env_at(start_us: i64) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_us);
    let pg = pg::fresh_database();
    let auth = match &pg {
        Some(db) => Authority::open(db.url.as_str(), &options().clock(clock.clone())).unwrap(),
        None => open(&dir, &clock),
    };
    auth.create_production("p").unwrap();
    Env {
        dir,
        clock,
        auth,
        pg,
    }
}

const H: i64 = 3600 * S;

#[test]
fn an_unknown_time_zone_is_refused_and_changes_nothing() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    for bad in ["Europe/Nowhere", "europe/paris", "", "UTC+2", "Paris"] {
        let e = Cadence::cron_in("0 2 * * *", bad).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
        assert!(e.to_string().contains("unknown time zone"), "{e}");
    }
    // A malformed expression is refused before the zone is looked at.
    assert_eq!(
        Cadence::cron_in("0 2 * *", "Europe/Paris")
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
    // A cadence built field by field is checked again.
    let spec = ScheduleSpec::new(
        "s",
        Cadence::CronIn("0 2 * * *".into(), "Mars/Olympus".into()),
        vec![],
    );
    let e = env.auth.create_schedule("p", &spec).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(env.auth.schedules(None).unwrap().is_empty());
    let ok = ScheduleSpec::new("s", Cadence::cron("0 2 * * *").unwrap(), vec![]);
    env.auth.create_schedule("p", &ok).unwrap();
    assert_eq!(
        env.auth.update_schedule("p", &spec).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(env.auth.schedules(None).unwrap()[0].spec, ok);
}

#[test]
fn a_zoned_cron_cadence_is_stored_listed_and_read_in_its_zone() {
    let c = Cadence::cron_in(" 0  2 * * * ", "Europe/Paris").unwrap();
    assert_eq!(c.to_string(), "cron 0 2 * * * Europe/Paris");
    assert_eq!(c.tz(), Some("Europe/Paris"));
    assert_eq!(c.cron_expr(), Some("0 2 * * *"));
    assert_eq!(Cadence::cron("0 2 * * *").unwrap().tz(), None);
    let spec = ScheduleSpec::new("n", c.clone(), b"x".to_vec());
    let env = env_with(&spec);
    // T0 is 2027-01-15T08:00:00Z; 02:00 in Paris in winter (UTC+1) is 01:00Z.
    let v = &env.auth.schedules(Some("p")).unwrap()[0];
    assert_eq!(v.spec.cadence, c);
    assert_eq!(v.next_slot_us, Some(T0 + 17 * H));
    // Idempotent with the same zone; another zone is another definition.
    assert!(!env.auth.create_schedule("p", &spec).unwrap());
    let utc = ScheduleSpec::new("n", Cadence::cron("0 2 * * *").unwrap(), b"x".to_vec());
    assert_eq!(
        env.auth.create_schedule("p", &utc).unwrap_err().code(),
        ErrorCode::Conflict
    );
    // Read back through a new handle: the zone was stored.
    let again = env.reopen();
    assert_eq!(again.schedules(None).unwrap()[0].spec.cadence, c);
    env.clock.advance(17 * H);
    env.auth.run_schedules().unwrap();
    assert_eq!(jobs_of(&env.auth, "p"), vec!["n@2027-01-16T01:00:00Z"]);
    // An update to UTC keeps the slot record.
    env.auth.update_schedule("p", &utc).unwrap();
    let v = &env.auth.schedules(Some("p")).unwrap()[0];
    assert_eq!(v.spec.cadence.to_string(), "cron 0 2 * * *");
    assert_eq!(v.next_slot_us, Some(T0 + 18 * H));
}

/// 2026-03-08 in America/New_York: 02:00 EST jumps to 03:00 EDT, so 02:30
/// does not happen; its slot is the first instant after the gap.
#[test]
fn a_local_time_skipped_by_spring_forward_has_its_slot_after_the_gap() {
    let start = 1_772_884_800 * S; // 2026-03-07T12:00:00Z
    let spec = ScheduleSpec::new(
        "ny",
        Cadence::cron_in("30 2 * * *", "America/New_York").unwrap(),
        vec![],
    )
    .catch_up(10);
    let env = env_at(start);
    env.auth.create_schedule("p", &spec).unwrap();
    assert_eq!(
        env.auth.schedules(None).unwrap()[0].next_slot_us,
        Some(start + 19 * H), // 2026-03-08T07:00:00Z, 03:00 EDT
    );
    env.clock.advance(72 * H);
    env.auth.run_schedules().unwrap();
    assert_eq!(
        jobs_of(&env.auth, "p"),
        vec![
            "ny@2026-03-08T07:00:00Z", // 03:00 EDT: the gap's end
            "ny@2026-03-09T06:30:00Z", // 02:30 EDT
            "ny@2026-03-10T06:30:00Z",
        ]
    );
}

/// 2026-11-01 in America/New_York: 02:00 EDT falls back to 01:00 EST, so
/// 01:30 happens twice; it has one slot, at its first (EDT) occurrence.
/// 02:30 happens once (EST).
#[test]
fn a_local_time_repeated_by_fall_back_has_one_slot_at_its_first_occurrence() {
    let start = 1_793_448_000 * S; // 2026-10-31T12:00:00Z
    let env = env_at(start);
    for (name, expr) in [("a", "30 1 * * *"), ("b", "30 2 * * *")] {
        let c = Cadence::cron_in(expr, "America/New_York").unwrap();
        env.auth
            .create_schedule("p", &ScheduleSpec::new(name, c, vec![]).catch_up(10))
            .unwrap();
    }
    // 2026-11-01T06:00:00Z is 01:00 EST, inside the repeated hour's second
    // pass: the 01:30 slot (05:30Z) was settled and is not due again.
    env.clock.set(start + 18 * H);
    env.auth.run_schedules().unwrap();
    assert_eq!(jobs_of(&env.auth, "p"), vec!["a@2026-11-01T05:30:00Z"]);
    let next: Vec<_> = env
        .auth
        .schedules(None)
        .unwrap()
        .iter()
        .map(|v| v.next_slot_us)
        .collect();
    assert_eq!(
        next,
        vec![
            Some(start + 42 * H + 30 * 60 * S), // 2026-11-02T06:30:00Z, 01:30 EST
            Some(start + 19 * H + 30 * 60 * S), // 2026-11-01T07:30:00Z, 02:30 EST
        ]
    );
    env.clock.set(start + 18 * H + 45 * 60 * S); // 06:45Z, 01:45 EST
    assert!(env.auth.run_schedules().unwrap().enqueued.is_empty());
    env.clock.set(start + 72 * H);
    env.auth.run_schedules().unwrap();
    assert_eq!(
        jobs_of(&env.auth, "p"),
        vec![
            "a@2026-11-01T05:30:00Z", // 01:30 EDT
            "a@2026-11-02T06:30:00Z", // 01:30 EST
            "a@2026-11-03T06:30:00Z",
            "b@2026-11-01T07:30:00Z", // 02:30 EST
            "b@2026-11-02T07:30:00Z",
            "b@2026-11-03T07:30:00Z",
        ]
    );
}

/// A scheduler loop sleeping toward a slot that is far away is woken by a
/// schedule change committed through another handle (the store's
/// doorbell), not by its once-a-second look at the clock: each round
/// starts right after a step of the loop, so the look is about a second
/// away, and the change is seen well before it. The clock is manual and
/// stands still while the loop sleeps, so only the change makes a slot due.
#[test]
fn a_sleeping_scheduler_loop_wakes_when_a_schedule_changes() {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let env = env_with(&ScheduleSpec::new("a", every(10), vec![]));
    // `b` starts with slots a year apart: none due during the test.
    let far = ScheduleSpec::new("b", every(MAX_INTERVAL_SECS), vec![]);
    let soon = ScheduleSpec::new("b", every(1), vec![]);
    env.auth.create_schedule("p", &far).unwrap();
    let other = env.reopen();
    let cancel = WaitCancel::new();
    let (tx, rx) = mpsc::channel::<Vec<String>>();
    let wait = |what: &str| {
        rx.recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("the loop did not enqueue {what}"))
    };
    /// Ends the loop however the test ends (the scope waits for it).
    struct CancelOnDrop(WaitCancel);
    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            self.0.cancel();
        }
    }
    let mut latencies = Vec::new();
    std::thread::scope(|sc| {
        let c = cancel.clone();
        let auth = &env.auth;
        let looping = sc.spawn(move || {
            auth.run_schedules_until(&c, |t| {
                let jobs = t.enqueued.iter().map(|(_, j)| j.clone()).collect();
                let _ = tx.send(jobs);
            })
        });
        let _stop = CancelOnDrop(cancel.clone());
        for round in 1..=3i64 {
            // `a` falls due by the clock alone: the loop sees it at its
            // next look and steps; it then sleeps toward `a`'s next slot,
            // ten seconds away by a clock that stands still.
            env.clock.advance(10 * S);
            let now = T0 + round * 10 * S;
            assert_eq!(wait("a's slot"), vec![slot_job("a", now)]);
            std::thread::sleep(Duration::from_millis(100));
            // An update keeps `b`'s settled time: its 1 s slots since then
            // are due at once (the newest enqueued, the others dropped).
            let t0 = Instant::now();
            other.update_schedule("p", &soon).unwrap();
            assert_eq!(wait("b's slot"), vec![slot_job("b", now)]);
            latencies.push(t0.elapsed());
            other.update_schedule("p", &far).unwrap();
        }
        cancel.cancel();
        looping.join().unwrap().unwrap();
    });
    // Without the doorbell every round would take about a second (the
    // loop's next look); with it, a change is seen at once. The fastest
    // round is checked, so one slow round on a loaded machine does not
    // decide.
    let fastest = latencies.iter().min().unwrap();
    assert!(
        *fastest < Duration::from_millis(500),
        "the loop was not woken by the changes: {latencies:?}"
    );
    assert_eq!(
        jobs_of(&env.auth, "p"),
        vec![
            slot_job("a", T0 + 10 * S),
            slot_job("a", T0 + 20 * S),
            slot_job("a", T0 + 30 * S),
            slot_job("b", T0 + 10 * S),
            slot_job("b", T0 + 20 * S),
            slot_job("b", T0 + 30 * S),
        ]
    );
}

/// One scheduler loop process whose wall clock jumps while it runs
/// (libfaketime reading its offset from a file at every clock reading):
/// back an hour, back to real time, then forward an hour. Checked from the
/// event log: each slot enqueued once, in order, never before its time;
/// nothing while the clock is behind; the forward jump enqueues the newest
/// slots up to the catch-up bound and records the rest as dropped.
#[test]
fn clock_jumps_of_an_hour_during_a_scheduler_loop_run_behave_as_stated() {
    use std::time::{Duration, Instant};
    if skip_on_postgres("libfaketime on a SQLite file (PostgreSQL uses the server clock)") {
        return;
    }
    let env = RealEnv::new();
    env.auth
        .create_schedule("p", &ScheduleSpec::new("j", every(1), vec![]).catch_up(5))
        .unwrap();
    let created = env.auth.schedules(None).unwrap()[0].created_us;
    let clock = env.dir.path().join("clock");
    std::fs::write(&clock, "+0\n").unwrap();
    let mut c = child_with_clock_file("scheduler_child", &clock)
        .env("TENURE_SCHED_STORE", env.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let t = Instant::now();
        while !done() {
            assert!(t.elapsed() < Duration::from_secs(30), "never: {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    until("two slots at real time", &|| {
        jobs_of(&env.auth, "p").len() >= 2
    });
    // Back an hour: every slot by that clock is settled; nothing is due.
    std::fs::write(&clock, "-1h\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let behind = jobs_of(&env.auth, "p");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(jobs_of(&env.auth, "p"), behind, "enqueued while behind");
    // Real time again: the seconds that passed meanwhile are due (fewer
    // than the catch-up bound), then one slot a second.
    std::fs::write(&clock, "+0\n").unwrap();
    let n = behind.len();
    until("slots after the return", &|| {
        jobs_of(&env.auth, "p").len() >= n + 3
    });
    // Forward an hour.
    let at_jump = jobs_of(&env.auth, "p");
    let before_jump = now_us();
    std::fs::write(&clock, "+1h\n").unwrap();
    let jumped = now_us();
    let dropped = || from_log(&env.auth, "j@").1;
    until("the forward jump's drop", &|| !dropped().is_empty());
    std::thread::sleep(Duration::from_secs(2));
    let end = now_us() + 3600 * S;
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());

    // Up to the jump, nothing was enqueued before its time by the real clock.
    let real = every_second("j", created, before_jump);
    for j in &at_jump {
        assert!(
            real.contains(j),
            "{j} enqueued early (before {before_jump})"
        );
    }
    // The log: (slot, the step's time) of every slot job, in log order.
    let slot_of: std::collections::HashMap<String, i64> = ((created / S + 1)..=(end / S))
        .map(|k| (slot_job("j", k * S), k * S))
        .collect();
    let mut submitted = Vec::new();
    let mut drops = Vec::new();
    let mut after = 0;
    loop {
        let page = env.auth.production_events("p", after, 1000).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        for e in page {
            match e.kind {
                EventKind::Submitted => {
                    let job = e.job.unwrap();
                    let slot = *slot_of.get(&job).unwrap_or_else(|| panic!("{job}"));
                    submitted.push((slot, e.at_us));
                }
                EventKind::SlotsDropped => drops.push(e.detail),
                _ => {}
            }
        }
    }
    for &(slot, at) in &submitted {
        assert!(slot <= at, "slot {slot} enqueued early, at {at}");
    }
    // Each slot once, oldest first, with one gap: the forward jump's.
    let slots: Vec<i64> = submitted.iter().map(|&(s, _)| s).collect();
    assert!(slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
    let gaps: Vec<usize> = (1..slots.len())
        .filter(|&i| slots[i] - slots[i - 1] > S)
        .collect();
    assert_eq!(gaps.len(), 1, "{slots:?}");
    let g = gaps[0];
    assert!(slots[g - 1] <= jumped);
    assert!(slots[g] >= before_jump + 3590 * S, "{slots:?}");
    // Past the gap, the newest five (the catch-up bound) of the hour's
    // slots, consecutive; the slots in the gap, recorded as dropped.
    assert!(slots.len() >= g + 5, "{slots:?}");
    assert!(slots[g..g + 5].windows(2).all(|w| w[1] - w[0] == S));
    assert_eq!(drops.len(), 1, "{drops:?}");
    let in_gap = (slots[g] - slots[g - 1]) / S - 1;
    assert!(
        drops[0].contains(&format!("schedule j: {in_gap} slots from ")),
        "{in_gap}: {drops:?}"
    );
    assert!((3590..=3610).contains(&in_gap), "{in_gap}");
}
