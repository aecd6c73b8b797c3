//! Retention: pruning events and terminal jobs by age on the authority's
//! clock, tombstones for late resubmissions, the pruned-history answer for
//! tailers, deleting and exporting a finished production, the check of a
//! pruned store, and the schema migration from a v2 store.

mod common;

use common::{secs, Env, T0};
use tenure::{
    Age, Authority, Error, ErrorCode, EventKind, ExportRecord, JobSpec, JobState, Options,
    Retention, Submitted, PRUNE_STEP_ROWS, SCHEMA_VERSION,
};

const MIN: i64 = 60_000_000;

fn age(s: u64) -> Option<Age> {
    Some(Age::from_secs(s).unwrap())
}

fn policy(events: u64, jobs: u64, tombstones: u64) -> Retention {
    Retention {
        event_age: age(events),
        terminal_job_age: age(jobs),
        tombstone_age: age(tombstones),
    }
}

/// Prune until nothing more is due.
fn prune_all(a: &Authority, p: &Retention) -> tenure::PruneReport {
    let mut total = tenure::PruneReport::default();
    loop {
        let r = a.prune(p).unwrap();
        total.jobs += r.jobs;
        total.events += r.events;
        total.tombstones += r.tombstones;
        total.horizon = r.horizon;
        if !r.more {
            return total;
        }
    }
}

fn spec(job: &str, payload: &str) -> JobSpec {
    JobSpec::new(job, payload.as_bytes().to_vec())
}

/// `n` jobs of production `p`, each claimed and completed.
fn complete_n(env: &Env, p: &str, n: usize) {
    env.auth.create_production(p).unwrap();
    for i in 0..n {
        env.auth
            .submit(p, &spec(&format!("done{i}"), &format!("payload {i}")))
            .unwrap();
        let l = env.auth.claim_next(p, "w", secs(30)).unwrap();
        l.complete(&[tenure::Fact::new("k", "v")]).unwrap();
    }
}

#[test]
fn pruning_removes_old_terminal_jobs_and_events_but_never_live_jobs() {
    let env = Env::new();
    complete_n(&env, "p", 3);
    env.auth.submit("p", &spec("waiting", "w")).unwrap();
    env.auth.submit("p", &spec("held", "h")).unwrap();
    let lease = env.auth.claim("p", "held", "w", secs(3600)).unwrap();
    // Nothing is old yet.
    let r = prune_all(&env.auth, &policy(60, 60, 3600));
    assert_eq!((r.jobs, r.events, r.horizon), (0, 0, 0));
    env.clock.advance(2 * MIN);
    // A renewal keeps the lease live; it is the newest event.
    lease.renew(secs(3600)).unwrap();
    let r = prune_all(&env.auth, &policy(60, 60, 3600));
    assert_eq!(r.jobs, 3, "the three completed jobs");
    assert!(r.events > 0);
    assert!(r.horizon > 0);
    // Terminal jobs are gone with their facts; live ones untouched.
    for i in 0..3 {
        let e = env.auth.job("p", &format!("done{i}")).unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotFound);
        assert!(env.auth.facts("p", &format!("done{i}")).unwrap().is_empty());
    }
    assert_eq!(
        env.auth.job("p", "waiting").unwrap().state,
        JobState::Requested
    );
    assert_eq!(env.auth.job("p", "held").unwrap().state, JobState::Claimed);
    // The live lease still works through every transition.
    env.clock.advance(1_000_000);
    lease.renew(secs(3600)).unwrap();
    lease.complete(&[]).unwrap();
    let next = env.auth.claim_next("p", "w", secs(30)).unwrap();
    assert_eq!(next.job(), "waiting");
    // Only the events after the horizon are left.
    let left = env.auth.events(r.horizon, 0).unwrap();
    assert!(left.iter().all(|e| e.seq > r.horizon));
    assert!(left.iter().any(|e| e.kind == EventKind::Renewed));
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn a_tailer_behind_the_horizon_is_told_history_is_gone() {
    let env = Env::new();
    complete_n(&env, "p", 2);
    let first = env.auth.events(0, 0).unwrap();
    let mid = first[2].seq;
    env.clock.advance(2 * MIN);
    env.auth.submit("p", &spec("later", "x")).unwrap();
    let r = prune_all(&env.auth, &policy(60, 3600, 3600));
    assert!(r.horizon >= mid, "the old events are pruned");
    for after in [0, mid, r.horizon - 1] {
        match env.auth.events(after, 0).unwrap_err() {
            Error::HistoryPruned { after: a, horizon } => {
                assert_eq!((a, horizon), (after, r.horizon));
            }
            e => panic!("expected history_pruned, got {e:?}"),
        }
        let e = env.auth.production_events("p", after, 0).unwrap_err();
        assert_eq!(e.code(), ErrorCode::HistoryPruned);
    }
    assert_eq!(env.auth.history_horizon().unwrap(), r.horizon);
    // From the horizon on, nothing is skipped: the later submission is there.
    let rest = env.auth.events(r.horizon, 0).unwrap();
    assert_eq!(rest.first().map(|e| e.seq), Some(r.horizon + 1));
    assert!(rest.iter().any(|e| e.job.as_deref() == Some("later")));
}

#[test]
fn the_newest_event_is_never_pruned_so_sequence_numbers_never_go_back() {
    let env = Env::new();
    complete_n(&env, "p", 1);
    let last = env.auth.events(0, 0).unwrap().last().unwrap().seq;
    env.clock.advance(10 * MIN);
    let r = prune_all(&env.auth, &policy(60, 3600, 3600));
    assert_eq!(r.horizon, last - 1);
    env.auth.submit("p", &spec("next", "n")).unwrap();
    let evs = env.auth.events(r.horizon, 0).unwrap();
    let seqs: Vec<u64> = evs.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![last, last + 1]);
}

#[test]
fn a_late_resubmission_answers_through_the_tombstone_until_it_expires() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    env.auth
        .submit("p", &spec("a", "payload").priority(3).max_attempts(2))
        .unwrap();
    env.auth.cancel("p", "a").unwrap();
    env.clock.advance(2 * MIN);
    let p = policy(3600, 60, 600);
    assert_eq!(prune_all(&env.auth, &p).jobs, 1);
    assert_eq!(
        env.auth.job("p", "a").unwrap_err().code(),
        ErrorCode::NotFound
    );
    // Same content: existing, as before pruning; nothing is recreated.
    assert_eq!(
        env.auth
            .submit("p", &spec("a", "payload").priority(3).max_attempts(2))
            .unwrap(),
        Submitted::Existing
    );
    assert_eq!(
        env.auth.job("p", "a").unwrap_err().code(),
        ErrorCode::NotFound
    );
    // Different content: conflict, naming what differs.
    for (s, what) in [
        (spec("a", "other").priority(3).max_attempts(2), "payload"),
        (spec("a", "payload").priority(4).max_attempts(2), "priority"),
        (spec("a", "payload").priority(3), "max_attempts"),
    ] {
        match env.auth.submit("p", &s).unwrap_err() {
            Error::Conflict(m) => assert!(m.contains(what), "{m}"),
            e => panic!("{e:?}"),
        }
    }
    // After the tombstone horizon the ID is new again.
    env.clock.advance(11 * MIN);
    assert_eq!(prune_all(&env.auth, &p).tombstones, 1);
    assert_eq!(
        env.auth.submit("p", &spec("a", "other")).unwrap(),
        Submitted::Created
    );
    assert_eq!(env.auth.job("p", "a").unwrap().state, JobState::Requested);
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn a_bulk_submission_answers_through_tombstones_like_a_single_one() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    env.auth
        .submit_many("p", &[spec("a", "one"), spec("b", "two")])
        .unwrap();
    env.auth.cancel("p", "a").unwrap();
    env.auth.cancel("p", "b").unwrap();
    env.clock.advance(2 * MIN);
    let p = policy(3600, 60, 600);
    assert_eq!(prune_all(&env.auth, &p).jobs, 2);
    // Same content through a tombstone: existing, nothing recreated; a new
    // ID beside it is created.
    assert_eq!(
        env.auth
            .submit_many("p", &[spec("a", "one"), spec("c", "three")])
            .unwrap(),
        vec![Submitted::Existing, Submitted::Created]
    );
    assert_eq!(
        env.auth.job("p", "a").unwrap_err().code(),
        ErrorCode::NotFound
    );
    // Different content under a tombstoned ID: the whole batch is refused.
    match env
        .auth
        .submit_many("p", &[spec("d", "four"), spec("b", "changed")])
        .unwrap_err()
    {
        Error::Conflict(m) => assert!(m.contains("payload"), "{m}"),
        e => panic!("{e:?}"),
    }
    assert_eq!(
        env.auth.job("p", "d").unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn pruning_is_bounded_per_step_and_resumes() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    let n = PRUNE_STEP_ROWS + 10;
    let specs: Vec<JobSpec> = (0..n).map(|i| spec(&format!("j{i}"), "x")).collect();
    env.auth.submit_many("p", &specs).unwrap();
    env.auth.cancel_production("p").unwrap();
    env.clock.advance(2 * MIN);
    let p = policy(60, 60, 3600);
    let r = env.auth.prune(&p).unwrap();
    assert_eq!(r.jobs, PRUNE_STEP_ROWS as u64);
    assert_eq!(r.events, PRUNE_STEP_ROWS as u64);
    assert!(r.more);
    let rest = prune_all(&env.auth, &p);
    assert_eq!(rest.jobs, 10);
    assert!(env.auth.jobs("p", &Default::default()).unwrap().is_empty());
}

#[test]
fn pruning_is_refused_while_the_clock_is_below_the_mark() {
    let env = Env::new();
    complete_n(&env, "p", 1);
    env.clock.advance(5 * MIN);
    env.auth.submit("p", &spec("x", "x")).unwrap();
    env.auth.claim("p", "x", "w", secs(10)).unwrap();
    env.clock.set(T0);
    let e = env.auth.prune(&policy(60, 60, 60)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ClockRollback);
    assert!(env.auth.job("p", "done0").is_ok(), "nothing pruned");
    assert_eq!(env.auth.history_horizon().unwrap(), 0);
}

/// A second handle on `env`'s store, on its clock, applying `p` by itself.
fn auto_handle(env: &Env, p: Retention) -> Authority {
    Authority::open(
        env.path(),
        &common::options().clock(env.clock.clone()).retention(p),
    )
    .unwrap()
}

#[test]
fn automatic_retention_prunes_inside_write_traffic() {
    let env = Env::new();
    let auto = auto_handle(&env, policy(60, 60, 3600));
    complete_n(&env, "p", 5);
    env.clock.advance(2 * MIN);
    auto.create_production("q").unwrap();
    for i in 0..tenure::AUTO_PRUNE_EVERY {
        auto.submit("q", &spec(&format!("n{i}"), "x")).unwrap();
    }
    for i in 0..5 {
        assert_eq!(
            auto.job("p", &format!("done{i}")).unwrap_err().code(),
            ErrorCode::NotFound
        );
    }
    assert!(auto.history_horizon().unwrap() > 0);
    // The default options prune nothing.
    let off = Options::new();
    assert!(format!("{off:?}").contains("retention: None"));
}

#[test]
fn automatic_retention_catches_up_sooner_after_a_step_that_hit_its_bound() {
    let env = Env::new();
    let auto = auto_handle(&env, policy(60, 3600, 3600));
    // 601 old events: more than two steps of 256.
    complete_n(&env, "p", 200);
    assert_eq!(PRUNE_STEP_ROWS, 256);
    env.clock.advance(2 * MIN);
    auto.create_production("q").unwrap();
    let mut writes = 1;
    let mut submit = |n: u64| {
        for _ in 0..n {
            auto.submit("q", &spec(&format!("n{writes}"), "x")).unwrap();
            writes += 1;
        }
    };
    submit(tenure::AUTO_PRUNE_EVERY - 1);
    assert_eq!(auto.history_horizon().unwrap(), 256, "one step at 64 calls");
    // The step hit its bound: the next two come after 8 calls each.
    submit(tenure::AUTO_PRUNE_CATCH_UP_EVERY);
    assert_eq!(auto.history_horizon().unwrap(), 512);
    submit(tenure::AUTO_PRUNE_CATCH_UP_EVERY);
    assert_eq!(auto.history_horizon().unwrap(), 601, "all old events gone");
    // Caught up: back to the regular cadence.
    let before = auto.history_horizon().unwrap();
    env.clock.advance(2 * MIN);
    submit(tenure::AUTO_PRUNE_CATCH_UP_EVERY);
    assert_eq!(auto.history_horizon().unwrap(), before);
}

#[test]
fn deleting_a_production_with_a_live_job_is_refused_and_changes_nothing() {
    let env = Env::new();
    complete_n(&env, "p", 2);
    env.auth.submit("p", &spec("open", "o")).unwrap();
    let before = env.auth.events(0, 0).unwrap();
    let e = env.auth.delete_production("p").unwrap_err();
    assert_eq!(e.code(), ErrorCode::ProductionLive);
    assert!(e.to_string().contains("open"), "{e}");
    assert_eq!(env.auth.events(0, 0).unwrap(), before);
    assert_eq!(env.auth.productions().unwrap()[0].cancelled_us, None);
    // An expired lease with attempts left is live too.
    env.auth.claim("p", "open", "w", secs(1)).unwrap();
    env.clock.advance(2_000_000);
    let e = env.auth.delete_production("p").unwrap_err();
    assert_eq!(e.code(), ErrorCode::ProductionLive);
    assert_eq!(
        env.auth.delete_production("nope").unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        env.auth.delete_production("bad id").unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn deleting_a_finished_production_removes_everything_of_it_only() {
    let env = Env::new();
    complete_n(&env, "p", 3);
    env.auth.submit("p", &spec("c", "c")).unwrap();
    env.auth.cancel("p", "c").unwrap();
    complete_n(&env, "keep", 1);
    let counts = env.auth.delete_production("p").unwrap();
    assert_eq!(counts.jobs, 4);
    assert_eq!(
        counts.facts,
        3 * 5,
        "one caller fact and four provenance facts each"
    );
    assert!(counts.events >= 10);
    let names: Vec<String> = env
        .auth
        .productions()
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, vec!["keep"]);
    assert_eq!(
        env.auth.jobs("p", &Default::default()).unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert!(env.auth.production_facts("p").unwrap().is_empty());
    assert!(env.auth.production_events("p", 0, 0).unwrap().is_empty());
    assert_eq!(env.auth.production_events("keep", 0, 0).unwrap().len(), 4);
    assert_eq!(env.auth.production_facts("keep").unwrap().len(), 5);
    // The name can be used again.
    assert!(env.auth.create_production("p").unwrap());
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn export_writes_the_production_jobs_facts_and_events_without_secrets() {
    let env = Env::new();
    complete_n(&env, "p", 2);
    env.auth.submit("p", &spec("open", "payload-open")).unwrap();
    let lease = env.auth.claim("p", "open", "w", secs(30)).unwrap();
    let token = lease.export_token().unwrap();
    let mut records = Vec::new();
    let n = env
        .auth
        .export_production("p", &mut |r| {
            records.push(r);
            Ok(())
        })
        .unwrap();
    assert_eq!(n as usize, records.len());
    assert!(matches!(&records[0], ExportRecord::Production(p) if p.name == "p"));
    let jobs: Vec<(&str, &[u8])> = records
        .iter()
        .filter_map(|r| match r {
            ExportRecord::Job { view, payload } => Some((view.job.as_str(), payload.as_slice())),
            _ => None,
        })
        .collect();
    assert_eq!(
        jobs,
        vec![
            ("done0", b"payload 0".as_slice()),
            ("done1", b"payload 1".as_slice()),
            ("open", b"payload-open".as_slice())
        ]
    );
    let facts = records
        .iter()
        .filter(|r| matches!(r, ExportRecord::Fact(_)))
        .count();
    assert_eq!(facts, 10);
    let events: Vec<u64> = records
        .iter()
        .filter_map(|r| match r {
            ExportRecord::Event(e) => Some(e.seq),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), 1 + 2 * 3 + 2);
    assert!(events.windows(2).all(|w| w[0] < w[1]));
    // No secret anywhere in what is exported (the token carries it).
    let text = format!("{records:?}");
    let secret_part = token.expose().rsplit('.').next().unwrap();
    assert!(!text.contains(secret_part));
    // A sink error stops the export with that error.
    let e = env
        .auth
        .export_production("p", &mut |_| Err(Error::Store("disk full".into())))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store);
    assert_eq!(
        env.auth
            .export_production("none", &mut |_| Ok(()))
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
}

#[test]
fn check_works_on_a_pruned_store_and_names_its_horizon() {
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    env.auth.submit("p", &spec("long", "l")).unwrap();
    let lease = env.auth.claim("p", "long", "w", secs(3600)).unwrap();
    complete_n(&env, "q", 3);
    env.clock.advance(2 * MIN);
    // The long job's submit and claim events get pruned; its renewal stays.
    lease.renew(secs(3600)).unwrap();
    let r = prune_all(&env.auth, &policy(60, 60, 3600));
    assert!(r.horizon > 0);
    lease.complete(&[]).unwrap();
    let report = env.auth.check().unwrap();
    assert_eq!(report.history_horizon, r.horizon);
    assert!(report.ok(), "{:?}", report.violations);
    assert_eq!(env.auth.check().unwrap().history_horizon, r.horizon);
    // A fresh store checks from 0.
    assert_eq!(Env::new().auth.check().unwrap().history_horizon, 0);
}

/// `tenure check` names a job stored beside a tombstone of its own ID (a
/// pruned ID created anew while its tombstone stands), written here behind
/// the library's back.
#[test]
fn check_names_a_job_stored_beside_its_tombstone() {
    let env = Env::new();
    let a = &env.auth;
    complete_n(&env, "p", 2);
    env.clock.advance(2 * MIN);
    prune_all(a, &policy(3600, 60, 3600));
    a.submit("p", &spec("live", "x")).unwrap();
    assert!(a.check().unwrap().ok());
    let copy = "INSERT INTO tombstones (production, job, payload_digest, priority,
                    max_attempts, state, pruned_us, max_hold_us, backoff_base_us, backoff_cap_us)
                SELECT production, 'live', payload_digest, priority, max_attempts, state,
                       pruned_us, max_hold_us, backoff_base_us, backoff_cap_us
                FROM tombstones LIMIT 1";
    match &env.pg {
        Some(db) => {
            let sql = copy.replace("tombstones", "tenure.tombstones");
            assert_eq!(common::pg::client(&db.url).execute(&sql, &[]).unwrap(), 1);
        }
        None => {
            let c = rusqlite::Connection::open(env.path()).unwrap();
            assert_eq!(c.execute(copy, []).unwrap(), 1);
        }
    }
    let said = a.check().unwrap().violations.join("\n");
    assert!(
        said.contains("job p/live: stored beside a tombstone of its ID"),
        "{said}"
    );
}

#[test]
fn a_schema_2_store_migrates_to_the_retention_schema() {
    let env = Env::new();
    complete_n(&env, "p", 1);
    let path = env.path();
    // Turn the store back into its schema 2 layout.
    common::downgrade_to_schema_3(&env);
    match &env.pg {
        Some(db) => {
            let mut c = common::pg::client(&db.url);
            c.batch_execute(
                "DROP TABLE tenure.tombstones; DROP INDEX tenure.jobs_terminal;
                 DROP INDEX tenure.nonces_by_job;
                 DELETE FROM tenure.meta WHERE key = 'history_horizon';
                 UPDATE tenure.meta SET value = 2 WHERE key = 'schema_version';",
            )
            .unwrap();
        }
        None => {
            let c = rusqlite::Connection::open(&path).unwrap();
            c.execute_batch(
                "DROP TABLE tombstones; DROP INDEX jobs_terminal; DROP INDEX nonces_by_job;
                 DELETE FROM meta WHERE key = 'history_horizon'; PRAGMA user_version = 2;",
            )
            .unwrap();
        }
    }
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 2);
    let report = a.check().unwrap();
    assert!(report.ok(), "{:?}", report.violations);
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    assert_eq!(a.history_horizon().unwrap(), 0);
    env.clock.advance(2 * MIN);
    a.submit("p", &spec("new", "n")).unwrap();
    let r = prune_all(&a, &policy(60, 60, 3600));
    assert_eq!(r.jobs, 1);
    assert_eq!(
        a.submit("p", &spec("done0", "payload 0")).unwrap(),
        Submitted::Existing
    );
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

#[test]
fn new_sqlite_stores_give_space_back_beyond_a_slack_in_small_steps() {
    if common::skip_on_postgres("SQLite file size") {
        return;
    }
    let env = Env::new();
    let c = rusqlite::Connection::open(env.path()).unwrap();
    let pragma = |name: &str| -> i64 {
        c.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(pragma("auto_vacuum"), 2, "incremental");
    env.auth.create_production("p").unwrap();
    // 160 payloads of 64 KiB: ~2 600 pages, then pruned at once.
    let big = vec![7u8; 64 * 1024];
    for chunk in 0..4 {
        let specs: Vec<JobSpec> = (0..40)
            .map(|i| JobSpec::new(format!("c{chunk}j{i}"), big.clone()))
            .collect();
        env.auth.submit_many("p", &specs).unwrap();
    }
    for chunk in 0..4 {
        for i in 0..40 {
            env.auth.cancel("p", &format!("c{chunk}j{i}")).unwrap();
        }
    }
    let full = pragma("page_count");
    assert!(full > 2_400, "{full} pages");
    env.clock.advance(2 * MIN);
    let keep = policy(60, 60, 3600);
    // One step removes the jobs and gives back at most 512 free pages (and
    // the pointer-map pages that covered them: 1 per ~800 pages).
    let step = 512 + 4;
    let r = env.auth.prune(&keep).unwrap();
    assert_eq!(r.jobs, 160);
    let after_one = pragma("page_count");
    assert!(
        (full - step..full).contains(&after_one),
        "{full} -> {after_one} pages"
    );
    assert!(pragma("freelist_count") > after_one / 4);
    // Later steps, even ones that remove nothing, go on in bounded pieces
    // until the free pages are at most a quarter of the file (or 512).
    let mut pages = after_one;
    for _ in 0..10 {
        env.auth.prune(&keep).unwrap();
        let now = pragma("page_count");
        assert!(now >= pages - step && now <= pages, "{pages} -> {now}");
        pages = now;
    }
    let free = pragma("freelist_count");
    assert!(pages < full / 3, "{full} -> {pages} pages, {free} free");
    assert!(free <= (pages / 4).max(512), "{pages} pages, {free} free");
    // A slack is kept: those pages are reused, not given back.
    let specs: Vec<JobSpec> = (0..4)
        .map(|i| JobSpec::new(format!("again{i}"), big.clone()))
        .collect();
    env.auth.submit_many("p", &specs).unwrap();
    env.auth.prune(&keep).unwrap();
    assert!(pragma("page_count") <= pages + 8, "reused the free pages");
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn vacuum_switches_an_older_file_to_incremental_space_reclaim() {
    if common::skip_on_postgres("SQLite auto_vacuum") {
        return;
    }
    let env = Env::new();
    complete_n(&env, "p", 3);
    {
        // A file as stores before schema 3 were created: no auto-vacuum.
        let c = rusqlite::Connection::open(env.path()).unwrap();
        c.execute_batch("PRAGMA auto_vacuum = NONE; VACUUM;")
            .unwrap();
        let mode: i64 = c.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, 0);
    }
    env.auth.vacuum().unwrap();
    let c = rusqlite::Connection::open(env.path()).unwrap();
    let mode: i64 = c.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, 2, "incremental");
    assert!(env.auth.check().unwrap().ok());
    assert_eq!(env.auth.jobs("p", &Default::default()).unwrap().len(), 3);
}
