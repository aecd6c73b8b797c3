//! PostgreSQL-only checks (run with `TENURE_TEST_BACKEND=postgres` and
//! `TENURE_TEST_PG_URL`, as `cargo xtask test` does; skipped otherwise):
//! schema versioning, row-level Busy, SKIP LOCKED, concurrency without a
//! store-wide lock, the server clock, and workers with skewed clocks
//! (libfaketime) that can neither extend nor revive a lease.
mod common;
use common::*;
use std::io::Read;
use std::time::Duration;
use tenure::*;

fn skip() -> bool {
    if !on_postgres() {
        eprintln!("skipped: set TENURE_TEST_BACKEND=postgres and TENURE_TEST_PG_URL");
        return true;
    }
    false
}

fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.unwrap_err().code()
}

fn server_now_us(url: &str) -> i64 {
    pg::client(url)
        .query_one(
            "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
            &[],
        )
        .unwrap()
        .get(0)
}

fn dump(url: &str) -> Vec<String> {
    let mut c = pg::client(url);
    let mut out = Vec::new();
    for t in [
        "meta",
        "mark_log",
        "productions",
        "jobs",
        "events",
        "facts",
        "nonces",
    ] {
        for r in c
            .query(&format!("SELECT x::text FROM tenure.{t} x ORDER BY 1"), &[])
            .unwrap()
        {
            out.push(format!("{t}: {}", r.get::<_, String>(0)));
        }
    }
    out
}

#[test]
fn newer_schema_is_refused_untouched_and_current_needs_no_migration() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let url = env.pg.as_ref().unwrap().url.clone();
    assert_eq!(env.reopen().migrated_from(), Authority::schema_version());
    pg::client(&url)
        .execute(
            "UPDATE tenure.meta SET value = 99 WHERE key = 'schema_version'",
            &[],
        )
        .unwrap();
    let before = dump(&url);
    let e = Authority::open(url.as_str(), &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::SchemaTooNew, "{e}");
    assert_eq!(dump(&url), before);
}

/// Schema 5 rebuilt SQLite's `jobs` table only, schema 6 adds a table and
/// schema 7 finds the payloads already apart:
/// a PostgreSQL store recorded at 4 records the current version and keeps
/// every row as it was.
#[test]
fn a_store_recorded_at_schema_4_migrates_keeping_every_row() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let url = env.pg.as_ref().unwrap().url.clone();
    pg::client(&url)
        .execute(
            "UPDATE tenure.meta SET value = 4 WHERE key = 'schema_version'",
            &[],
        )
        .unwrap();
    let rows = || -> Vec<String> {
        let all = dump(&url);
        assert!(all.iter().any(|r| r.contains("schema_version")));
        all.into_iter()
            .filter(|r| !r.contains("schema_version"))
            .collect()
    };
    let before = rows();
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 4);
    assert_eq!(Authority::schema_version(), SCHEMA_VERSION);
    assert_eq!(rows(), before);
    assert!(a.check().unwrap().ok());
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

/// Schema 15 keeps a completion's provenance in the job row: a store at
/// 14, whose completed job keeps it as four fact rows, migrates with those
/// rows untouched and publishes the same facts; a completion after the
/// migration writes no fact row and publishes its provenance from the row,
/// and deleting the production counts both provenances among the deleted
/// facts.
#[test]
fn a_schema_14_store_keeps_its_provenance_rows_and_new_completions_keep_it_in_the_row() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let url = env.pg.as_ref().unwrap().url.clone();
    let a = &env.auth;
    a.claim("p", "j0", "w", secs(60))
        .unwrap()
        .complete(&[Fact::new("mine", "1")])
        .unwrap();
    let published = a.facts("p", "j0").unwrap();
    assert_eq!(published.len(), 5, "{published:?}");
    let mut c = pg::client(&url);
    let fact_rows = |c: &mut postgres::Client| -> i64 {
        c.query_one("SELECT count(*) FROM tenure.facts", &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(fact_rows(&mut c), 1);
    // The layout of schema 14: the provenance as fact rows, no column.
    c.batch_execute(
        "INSERT INTO tenure.facts (production, job, ord, key, value)
             SELECT 'p', 'j0', o, k, v FROM tenure.jobs j,
                 LATERAL (VALUES (1, 'tenure.claim_id', j.claim_id),
                                 (2, 'tenure.holder', j.holder),
                                 (3, 'tenure.attempt', j.attempts::text),
                                 (4, 'tenure.completed_us', j.updated_us::text)) AS f(o, k, v)
             WHERE j.production = 'p' AND j.job = 'j0';
         ALTER TABLE tenure.jobs DROP COLUMN provenance_at;
         UPDATE tenure.meta SET value = 14 WHERE key = 'schema_version';",
    )
    .unwrap();
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 14);
    assert_eq!(a.facts("p", "j0").unwrap(), published);
    assert_eq!(fact_rows(&mut c), 5);
    a.claim("p", "j1", "w", secs(60))
        .unwrap()
        .complete(&[])
        .unwrap();
    assert_eq!(fact_rows(&mut c), 5);
    let at: Option<i64> = c
        .query_one(
            "SELECT provenance_at FROM tenure.jobs WHERE job = 'j1'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(at, Some(0));
    let keys = |j: &str| -> Vec<String> {
        a.facts("p", j)
            .unwrap()
            .into_iter()
            .map(|f| f.key)
            .collect()
    };
    assert_eq!(
        keys("j1"),
        [
            "tenure.claim_id",
            "tenure.holder",
            "tenure.attempt",
            "tenure.completed_us"
        ]
    );
    assert_eq!(a.production_facts("p").unwrap().len(), 9);
    assert!(a.check().unwrap().ok());
    // A position that is no `u32` is a corrupt row, refused as one.
    let corrupt = |c: &mut postgres::Client, v: i64| {
        c.execute(
            "UPDATE tenure.jobs SET provenance_at = $1 WHERE job = 'j1'",
            &[&v],
        )
        .unwrap();
    };
    corrupt(&mut c, -1);
    let e = a.facts("p", "j1").unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store, "{e}");
    assert!(e.to_string().contains("provenance_at -1"), "{e}");
    corrupt(&mut c, 0);
    // `check` reads stored provenance rows: without its claim ID, j0's
    // completion is reported.
    c.execute(
        "DELETE FROM tenure.facts WHERE job = 'j0' AND key = 'tenure.claim_id'",
        &[],
    )
    .unwrap();
    let violations = a.check().unwrap().violations;
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].contains("p/j0: completed without provenance"));
    let deleted = a.delete_production("p").unwrap();
    assert_eq!((deleted.jobs, deleted.facts), (2, 8));
    assert_eq!(fact_rows(&mut c), 0);
}

#[test]
fn new_database_is_created_once_by_concurrent_openers() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let url = db.url.clone();
            std::thread::spawn(move || {
                Authority::open(url.as_str(), &Options::new())
                    .unwrap()
                    .migrated_from()
            })
        })
        .collect();
    let froms: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(froms.iter().filter(|&&f| f == 0).count(), 1, "{froms:?}");
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    assert!(a.check().unwrap().ok());
}

#[test]
fn foreign_schema_and_unreachable_server_are_store_errors() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    pg::client(&db.url)
        .batch_execute("CREATE SCHEMA tenure; CREATE TABLE tenure.other (x int)")
        .unwrap();
    assert_eq!(
        code(Authority::open(db.url.as_str(), &Options::new())),
        ErrorCode::Store
    );
    let gone = pg::with_database("postgres://nobody:hunter2@127.0.0.1:1/x", "x");
    let e = Authority::open(
        gone.as_str(),
        &Options::new().busy_timeout(Duration::from_secs(1)),
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store);
    assert!(!format!("{e} {e:?}").contains("hunter2"));
}

#[test]
fn the_password_never_appears_in_path_or_debug() {
    if skip() {
        return;
    }
    let env = Env::new();
    // The test server trusts local connections: any password is accepted.
    let url = env
        .pg
        .as_ref()
        .unwrap()
        .url
        .replacen("://", "://postgres:pw-s3cret@", 1);
    let url = if url.matches('@').count() > 1 {
        // The maintenance URL already had a user: put the password after it.
        let base = &env.pg.as_ref().unwrap().url;
        let (scheme, rest) = base.split_once("://").unwrap();
        let (user, host) = rest.split_once('@').unwrap();
        let user = user.split(':').next().unwrap();
        format!("{scheme}://{user}:pw-s3cret@{host}")
    } else {
        url
    };
    let a = Authority::open(url.as_str(), &Options::new()).unwrap();
    let shown = format!("{a:?} {}", a.path().display());
    assert!(!shown.contains("pw-s3cret"), "{shown}");
    assert!(shown.contains("***"), "{shown}");
}

#[test]
fn a_held_row_gives_busy_but_other_jobs_proceed() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let mut e = env.auth.edit().unwrap();
    let held = e.claim("p", "j0", "w0", secs(60)).unwrap(); // row j0 locked
    let other = env.reopen_with_busy_timeout(Duration::from_millis(50));
    assert_eq!(
        code(other.claim("p", "j0", "w1", secs(10))),
        ErrorCode::Busy
    );
    assert_eq!(code(other.cancel("p", "j0")), ErrorCode::Busy);
    // No store-wide lock: other jobs and submissions go ahead, and
    // claim-next skips the locked row instead of waiting for it.
    let next = other.claim_next("p", "w1", secs(10)).unwrap();
    assert_eq!(next.job(), "j1");
    other.submit("p", &JobSpec::new("j2", vec![])).unwrap();
    next.complete(&[]).unwrap();
    assert_eq!(other.job("p", "j0").unwrap().state, JobState::Requested);
    e.commit().unwrap();
    drop(held);
    assert_eq!(other.job("p", "j0").unwrap().state, JobState::Claimed);
    assert!(other.check().unwrap().ok());
}

#[test]
fn concurrent_creators_and_submitters_agree() {
    if skip() {
        return;
    }
    let env = Env::new();
    let results: Vec<(bool, Submitted)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let a = env.reopen();
                s.spawn(move || {
                    let created = a.create_production("p").unwrap();
                    let sub = a.submit("p", &JobSpec::new("same", b"x".to_vec())).unwrap();
                    (created, sub)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results.iter().filter(|r| r.0).count(), 1);
    assert_eq!(
        results.iter().filter(|r| r.1 == Submitted::Created).count(),
        1
    );
    assert_eq!(env.auth.events(0, 100).unwrap().len(), 2);
}

/// A submission of 1 000 jobs takes a bounded number of advisory locks
/// (each holds a slot of the server's shared lock table until the commit),
/// and still waits for a concurrent submission of one of its IDs, then
/// answers `Existing` for it: seen while it waits on an open edit that
/// submitted that ID.
#[test]
fn a_large_submission_takes_few_locks_and_waits_for_a_shared_id() {
    if skip() {
        return;
    }
    let env = Env::new();
    let url = env.pg.as_ref().unwrap().url.clone();
    env.auth.create_production("p").unwrap();
    let spec = |i: usize| JobSpec::new(format!("j{i:04}"), format!("{i}").into_bytes());
    let mut edit = env.auth.edit().unwrap();
    assert_eq!(edit.submit("p", &spec(500)).unwrap(), Submitted::Created);
    let specs: Vec<JobSpec> = (0..1000).map(spec).collect();
    let mut watch = pg::client(&url);
    let out = std::thread::scope(|s| {
        let a = env.reopen();
        let h = s.spawn(move || a.submit_many("p", &specs).unwrap());
        // The submission waits on the edit's row j0500, its locks taken.
        let held = loop {
            let r = watch
                .query_one(
                    "WITH w AS (SELECT l.pid FROM pg_catalog.pg_locks l
                                JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
                                WHERE a.datname = current_database() AND NOT l.granted
                                LIMIT 1)
                     SELECT (SELECT count(*) FROM pg_catalog.pg_locks l, w
                             WHERE l.pid = w.pid AND l.locktype = 'advisory' AND l.granted),
                            EXISTS (SELECT 1 FROM w)",
                    &[],
                )
                .unwrap();
            if r.get::<_, bool>(1) {
                break r.get::<_, i64>(0);
            }
            assert!(!h.is_finished(), "the submission did not wait for the edit");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(
            held <= 4,
            "{held} advisory locks held by a 1 000-job submission"
        );
        edit.commit().unwrap();
        h.join().unwrap()
    });
    assert_eq!(out.len(), 1000);
    for (i, o) in out.iter().enumerate() {
        let want = if i == 500 {
            Submitted::Existing
        } else {
            Submitted::Created
        };
        assert_eq!(*o, want, "j{i:04}");
    }
    assert!(env.auth.check().unwrap().ok());
}

/// Submissions of the same 100 IDs, as batches (past the size that takes
/// job locks) and one by one, all at once: every call succeeds and each
/// ID is created once, with one submission event.
#[test]
fn concurrent_batches_and_singles_of_the_same_ids_create_each_once() {
    if skip() {
        return;
    }
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    let specs: Vec<JobSpec> = (0..100)
        .map(|i| JobSpec::new(format!("j{i:03}"), b"x".to_vec()))
        .collect();
    let outcomes: Vec<Submitted> = std::thread::scope(|s| {
        let mut hs = Vec::new();
        for t in 0..6 {
            let (a, specs) = (env.reopen(), &specs);
            hs.push(s.spawn(move || {
                if t % 2 == 0 {
                    a.submit_many("p", specs).unwrap()
                } else {
                    specs.iter().map(|j| a.submit("p", j).unwrap()).collect()
                }
            }));
        }
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(outcomes.len(), 600);
    let created = outcomes
        .iter()
        .filter(|o| **o == Submitted::Created)
        .count();
    assert_eq!(created, 100);
    let submitted = env
        .auth
        .events(0, 1000)
        .unwrap()
        .iter()
        .filter(|e| e.kind == EventKind::Submitted)
        .count();
    assert_eq!(submitted, 100);
    assert!(env.auth.check().unwrap().ok());
}

/// A resubmission of a completed job racing the prune of that job: the
/// prune deletes the row and writes the tombstone as retention does, and
/// commits while the submission waits on the row it deletes. The
/// submission is refused as `busy` (its insert's snapshot missed the
/// tombstone), nothing is created beside the tombstone, and the retry
/// answers `Existing` from the tombstone.
#[test]
fn a_resubmission_racing_the_prune_of_its_job_never_recreates_it() {
    if skip() {
        return;
    }
    let env = Env::new();
    let url = env.pg.as_ref().unwrap().url.clone();
    let a = &env.auth;
    a.create_production("p").unwrap();
    let spec = JobSpec::new("done", b"once".to_vec());
    a.submit("p", &spec).unwrap();
    a.claim("p", "done", "w", secs(30))
        .unwrap()
        .complete(&[])
        .unwrap();
    let mut prune = pg::client(&url);
    let mut tx = prune.transaction().unwrap();
    tx.batch_execute(
        "INSERT INTO tenure.tombstones (production, job, payload_digest, priority,
             max_attempts, state, pruned_us, max_hold_us, backoff_base_us, backoff_cap_us)
         SELECT production, job, payload_digest, priority, max_attempts, state,
                updated_us, max_hold_us, backoff_base_us, backoff_cap_us
         FROM tenure.jobs WHERE production = 'p' AND job = 'done';
         DELETE FROM tenure.payloads WHERE production = 'p' AND job = 'done';
         DELETE FROM tenure.jobs WHERE production = 'p' AND job = 'done'",
    )
    .unwrap();
    let mut watch = pg::client(&url);
    let raced = std::thread::scope(|s| {
        let other = env.reopen();
        let h = s.spawn(move || other.submit("p", &JobSpec::new("done", b"once".to_vec())));
        // The submission waits for the prune's transaction.
        while !watch
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l
                     JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
                     WHERE a.datname = current_database() AND NOT l.granted)",
                &[],
            )
            .unwrap()
            .get::<_, bool>(0)
        {
            assert!(
                !h.is_finished(),
                "the submission did not wait for the prune"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        tx.commit().unwrap();
        h.join().unwrap()
    });
    assert_eq!(raced.unwrap_err().code(), ErrorCode::Busy);
    let err = a.job("p", "done").unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    assert_eq!(a.submit("p", &spec).unwrap(), Submitted::Existing);
    assert_eq!(code(a.job("p", "done")), ErrorCode::NotFound);
    assert!(a.check().unwrap().ok());
}

#[test]
fn cancel_production_racing_workers_leaves_nothing_live() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(60, 5);
    std::thread::scope(|s| {
        for w in 0..4 {
            let a = env.reopen();
            s.spawn(move || loop {
                match a.claim_next("p", &format!("w{w}"), secs(60)) {
                    Ok(l) => {
                        let _ = l.complete(&[]);
                    }
                    Err(e) if e.code() == ErrorCode::Busy => {}
                    Err(_) => break,
                }
                let _ = a.submit("p", &JobSpec::new(unique("late"), vec![]));
            });
        }
        let a = env.reopen();
        loop {
            match a.cancel_production("p") {
                Ok(_) => break,
                Err(e) => assert_eq!(e.code(), ErrorCode::Busy, "{e}"),
            }
        }
    });
    let a = &env.auth;
    for st in [JobState::Requested, JobState::Claimed, JobState::Expired] {
        let q = ListQuery {
            state: Some(st),
            ..ListQuery::default()
        };
        assert!(a.jobs("p", &q).unwrap().is_empty(), "{st} jobs remain");
    }
    assert!(a.check().unwrap().ok());
}

#[test]
fn the_server_clock_is_the_authority_clock() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("j", vec![])).unwrap();
    let before = server_now_us(&db.url);
    let l = a.claim("p", "j", "w", secs(30)).unwrap();
    let after = server_now_us(&db.url);
    assert!(l.expires_us() >= before + 30_000_000 && l.expires_us() <= after + 30_000_000);
    let st = a.clock().unwrap();
    assert!(st.mark_us >= l.expires_us() - 30_000_000 && !st.blocked);
    // The mark lives in an insert-only log; readers see its maximum.
    let max: i64 = pg::client(&db.url)
        .query_one("SELECT max(value) FROM tenure.mark_log", &[])
        .unwrap()
        .get(0);
    assert_eq!(max, a.clock().unwrap().mark_us);
}

/// Clock rule on the server's clock: a stored mark ahead of the server's
/// clock refuses every call whose locked read begins its transaction (the
/// read brings the mark), and the refusals change nothing.
#[test]
fn a_mark_ahead_of_the_server_clock_refuses_every_locked_call() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    for j in ["a", "b", "c", "d"] {
        a.submit("p", &JobSpec::new(j, vec![])).unwrap();
    }
    let la = a.claim("p", "a", "w", secs(600)).unwrap();
    let lb = a.claim("p", "b", "w", secs(600)).unwrap();
    let ahead = server_now_us(&db.url) + 3_600_000_000;
    pg::client(&db.url)
        .execute("INSERT INTO tenure.mark_log (value) VALUES ($1)", &[&ahead])
        .unwrap();
    let events = a.events(0, 1000).unwrap().len();
    let refused = [
        ("claim-next", code(a.claim_next("p", "w", secs(1)))),
        ("named claim", code(a.claim("p", "c", "w", secs(1)))),
        ("renewal", code(la.renew(secs(60)))),
        ("completion", code(lb.complete(&[]))),
        ("batched renewal", code(a.renew_many(&[&la, &lb], secs(60)))),
    ];
    for (call, c) in refused {
        assert_eq!(c, ErrorCode::ClockRollback, "{call}");
    }
    assert_eq!(
        a.events(0, 1000).unwrap().len(),
        events,
        "nothing was written"
    );
    // As stored (a view at the held clock shows the leases expired).
    let rows: Vec<(String, String, Option<i64>)> = pg::client(&db.url)
        .query(
            "SELECT job, state, expires_us FROM tenure.jobs ORDER BY job",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let stored = |j: &str, st: &str, e: Option<i64>| (j.to_owned(), st.to_owned(), e);
    assert_eq!(
        rows,
        [
            stored("a", "claimed", Some(la.expires_us())),
            stored("b", "claimed", Some(lb.expires_us())),
            stored("c", "requested", None),
            stored("d", "requested", None),
        ]
    );
    let st = a.clock().unwrap();
    assert_eq!(st.mark_us, ahead);
    assert!(st.blocked);
}

/// A claim-next of a production its pool last found ungated leaves out
/// the read of the gate's leases; a gate another pool set since is still
/// decided on the live leases (read in a request of its own), and so is a
/// pause set after the limit was cleared.
#[test]
fn a_gate_set_by_another_pool_binds_a_pool_that_last_found_none() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    let b = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    for i in 0..4 {
        a.submit("p", &JobSpec::new(format!("j{i}"), vec![]))
            .unwrap();
    }
    let first = a.claim_next("p", "w", secs(600)).unwrap();
    b.set_concurrency_limit("p", Some(1)).unwrap();
    assert_eq!(
        code(a.claim_next("p", "w", secs(600))),
        ErrorCode::NoJobAvailable
    );
    first.complete(&[]).unwrap();
    let second = a.claim_next("p", "w", secs(600)).unwrap();
    assert_eq!(
        code(a.claim_next("p", "w", secs(600))),
        ErrorCode::NoJobAvailable
    );
    second.complete(&[]).unwrap();
    b.set_concurrency_limit("p", None).unwrap();
    a.claim_next("p", "w", secs(600))
        .unwrap()
        .release()
        .unwrap();
    b.pause_production("p").unwrap();
    assert_eq!(
        code(a.claim_next("p", "w", secs(600))),
        ErrorCode::NoJobAvailable
    );
}

/// Clock rule: a transition samples the server's clock after it holds the
/// rows it locks, in the same statement. While another connection holds a
/// job's row, a renewal, a completion, a named claim and a batched renewal
/// of it wait; each one's sample (read back from the new expiry or the
/// event) is not before the moment the other connection released the row.
#[test]
fn the_clock_is_sampled_after_the_row_lock_is_held() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    for j in ["r", "c", "n", "b"] {
        a.submit("p", &JobSpec::new(j, vec![])).unwrap();
    }
    // Hold job `job`'s row on another connection for a while, run `f`
    // meanwhile, and return the server time just before that row was
    // released (sampled in the COMMIT's request) with `f`'s answer.
    let held = |job: &str, f: &(dyn Fn() -> i64 + Sync)| -> (i64, i64) {
        let mut c = pg::client(&db.url);
        c.batch_execute("BEGIN").unwrap();
        c.execute(
            "SELECT 1 FROM tenure.jobs WHERE job = $1 FOR UPDATE",
            &[&job],
        )
        .unwrap();
        std::thread::scope(|sc| {
            let h = sc.spawn(f);
            std::thread::sleep(Duration::from_millis(400));
            assert!(!h.is_finished(), "the call waited for the row lock");
            let msgs = c
                .simple_query(
                    "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint; \
                     COMMIT",
                )
                .unwrap();
            let released = msgs
                .iter()
                .find_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => r.get(0)?.parse::<i64>().ok(),
                    _ => None,
                })
                .unwrap();
            (released, h.join().unwrap())
        })
    };
    let ttl = secs(60);
    let leases: Vec<Lease> = ["r", "c", "b"]
        .iter()
        .map(|j| a.claim("p", j, "w", ttl).unwrap())
        .collect();
    let (released, expiry) = held("r", &|| {
        leases[0].renew(secs(120)).unwrap();
        leases[0].expires_us()
    });
    assert!(
        expiry - 120_000_000 >= released,
        "renewal sampled before the lock"
    );
    let (released, at) = held("c", &|| {
        leases[1].complete(&[]).unwrap();
        a.job("p", "c").unwrap().updated_us
    });
    assert!(at >= released, "completion sampled before the lock");
    let (released, expiry) = held("n", &|| a.claim("p", "n", "w", ttl).unwrap().expires_us());
    assert!(
        expiry - 60_000_000 >= released,
        "claim sampled before the lock"
    );
    let (released, expiry) = held("b", &|| {
        let r = a.renew_many(&[&leases[2]], secs(120)).unwrap();
        r.into_iter().for_each(|x| x.unwrap());
        leases[2].expires_us()
    });
    assert!(
        expiry - 120_000_000 >= released,
        "batched renewal sampled before the lock"
    );
    assert!(a.check().unwrap().ok());
}

/// `n_tup_upd` and `n_tup_hot_upd` of `tenure.jobs`, once the server has
/// the statistics of every session that ended (retried briefly: sessions
/// report them as they exit).
fn jobs_updates(url: &str, at_least: i64) -> (i64, i64) {
    let mut last = (0, 0);
    for _ in 0..50 {
        let mut c = pg::client(url);
        let r = c
            .query_one(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
                 WHERE schemaname = 'tenure' AND relname = 'jobs'",
                &[],
            )
            .unwrap();
        last = (r.get(0), r.get(1));
        if last.0 >= at_least {
            return last;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    last
}

/// Wait past a second, then prune the terminal jobs older than one second
/// (nothing else).
fn prune_jobs_ended_a_second_ago(a: &Authority) -> PruneReport {
    std::thread::sleep(Duration::from_millis(1100));
    a.prune(&Retention {
        event_age: None,
        terminal_job_age: Some(Age::from_secs(1).unwrap()),
        tombstone_age: None,
    })
    .unwrap()
}

/// Schema 5 (a hot queue): a store at schema 4 migrates on open, its lease
/// stays valid through the migration, the jobs table keeps free space in
/// its pages (`fillfactor = 70`), and renewals, which change only columns
/// no index covers, are HOT updates (`pg_stat_user_tables.n_tup_hot_upd`);
/// pruning still finds terminal jobs by their end time.
#[test]
fn renewals_are_hot_updates_and_a_schema_4_store_migrates() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    a.submit("p", &JobSpec::new("held", vec![])).unwrap();
    a.submit("p", &JobSpec::new("done", vec![])).unwrap();
    let lease = a.claim("p", "held", "w", secs(600)).unwrap();
    let token = lease.export_token().unwrap();
    a.claim("p", "done", "w", secs(60))
        .unwrap()
        .complete(&[])
        .unwrap();
    drop(lease);
    drop(a);
    pg_downgrade_to_schema_4(&db.url);
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    assert_eq!(a.migrated_from(), 4);
    let mut c = pg::client(&db.url);
    let opts: Vec<String> = c
        .query_one(
            "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'tenure.jobs'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(opts.contains(&"fillfactor=70".to_string()), "{opts:?}");
    let lease = a.import_lease(token.expose()).unwrap();
    let (upd0, hot0) = jobs_updates(&db.url, 0);
    const N: i64 = 50;
    for i in 0..N {
        lease.renew(secs(700 + i)).unwrap();
    }
    // Close the pool's connections: their sessions report their statistics.
    drop(lease);
    drop(a);
    let (upd, hot) = jobs_updates(&db.url, upd0 + N);
    eprintln!("jobs updates: {} ({} HOT)", upd - upd0, hot - hot0);
    assert!(upd - upd0 >= N);
    // Nearly all (a page may run out of room once).
    assert!(
        hot - hot0 >= N - 2,
        "{} of {N} renewals were HOT",
        hot - hot0
    );
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    assert_eq!(a.migrated_from(), SCHEMA_VERSION);
    let lease = a.import_lease(token.expose()).unwrap();
    lease.complete(&[]).unwrap();
    // Pruning finds both terminal jobs by the end time the migration derived.
    let r = prune_jobs_ended_a_second_ago(&a);
    assert_eq!(r.jobs, 2, "{r:?}");
    assert!(a.check().unwrap().ok());
}

/// Schema 7 (narrow hot rows): payloads live apart from the job rows. A
/// store at schema 6, whose `jobs` rows still carry their payloads,
/// migrates on open: every payload moves (byte for byte) into
/// `tenure.payloads`, the column is gone, a lease taken before the
/// migration stays valid, a new submission and a bulk submission write
/// their payloads apart, and pruning and production deletion remove them
/// with their jobs.
#[test]
fn a_schema_6_store_moves_payloads_out_of_the_job_rows() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    let big: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    a.submit("p", &JobSpec::new("held", b"held payload".to_vec()))
        .unwrap();
    a.submit("p", &JobSpec::new("big", big.clone())).unwrap();
    a.submit("p", &JobSpec::new("empty", vec![])).unwrap();
    let lease = a.claim("p", "held", "w", secs(600)).unwrap();
    let token = lease.export_token().unwrap();
    drop(lease);
    drop(a);
    // Back to schema 6's layout: the payloads inside the job rows.
    pg::client(&db.url)
        .batch_execute(
            "ALTER TABLE tenure.jobs ADD COLUMN payload BYTEA;
             UPDATE tenure.jobs j SET payload = x.payload FROM tenure.payloads x
                 WHERE x.production = j.production AND x.job = j.job;
             ALTER TABLE tenure.jobs ALTER COLUMN payload SET NOT NULL;
             DROP TABLE tenure.payloads;
             UPDATE tenure.meta SET value = 6 WHERE key = 'schema_version';",
        )
        .unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    assert_eq!(a.migrated_from(), 6);
    assert_eq!(a.check().unwrap().schema_version, SCHEMA_VERSION);
    let mut c = pg::client(&db.url);
    let column: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'tenure.jobs'::regclass
             AND attname = 'payload' AND NOT attisdropped",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(column, 0, "the payload column is dropped from tenure.jobs");
    assert_eq!(a.payload("p", "held").unwrap(), b"held payload");
    assert_eq!(a.payload("p", "big").unwrap(), big);
    assert_eq!(a.payload("p", "empty").unwrap(), Vec::<u8>::new());
    let lease = a.import_lease(token.expose()).unwrap();
    lease.renew(secs(900)).unwrap();
    lease.complete(&[]).unwrap();
    a.submit("p", &JobSpec::new("new", b"n".to_vec())).unwrap();
    a.submit_many(
        "p",
        &[
            JobSpec::new("bulk1", b"b1".to_vec()),
            JobSpec::new("bulk2", b"b2".to_vec()),
        ],
    )
    .unwrap();
    assert_eq!(a.payload("p", "new").unwrap(), b"n");
    assert_eq!(a.payload("p", "bulk2").unwrap(), b"b2");
    let rows = |c: &mut postgres::Client| -> i64 {
        c.query_one("SELECT count(*) FROM tenure.payloads", &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(rows(&mut c), 6);
    // Pruning removes a terminal job's payload with the job.
    let r = prune_jobs_ended_a_second_ago(&a);
    assert_eq!(r.jobs, 1, "{r:?}");
    assert_eq!(rows(&mut c), 5);
    let left: i64 = c
        .query_one(
            "SELECT count(*) FROM tenure.payloads WHERE job = 'held'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
    // Deleting the production removes the rest.
    a.cancel_production("p").unwrap();
    a.delete_production("p").unwrap();
    assert_eq!(rows(&mut c), 0);
    assert!(a.check().unwrap().ok());
    let again = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    assert_eq!(again.migrated_from(), SCHEMA_VERSION);
}

// ---- skew: workers under libfaketime ----

fn faketime(offset: &str, mode: &str, url: &str, stdin: &str) -> String {
    under_faketime(
        offset,
        "skew_child",
        &[("TENURE_SKEW_MODE", mode), ("TENURE_SKEW_URL", url)],
        stdin,
    )
}

#[test]
fn workers_with_skewed_clocks_follow_the_server_clock() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    for i in 0..4 {
        a.submit("p", &JobSpec::new(format!("j{i}"), vec![]))
            .unwrap();
    }
    for offset in ["+2h", "-2h"] {
        let out = faketime(offset, "work", &db.url, "");
        assert!(out.contains("WORKED"), "{out}");
    }
    assert_eq!(
        a.jobs(
            "p",
            &ListQuery {
                state: Some(JobState::Completed),
                ..ListQuery::default()
            }
        )
        .unwrap()
        .len(),
        2
    );

    // An expired lease: a worker whose clock is two hours behind the server
    // (so by its own clock the lease is alive) can neither import, renew
    // nor complete it, and a worker ahead cannot either.
    let l = a
        .claim("p", "j3", "w", Ttl::from_micros(1_000_000).unwrap())
        .unwrap();
    let token = l.export_token().unwrap();
    while server_now_us(&db.url) <= l.expires_us() {
        std::thread::sleep(Duration::from_millis(100));
    }
    for offset in ["-2h", "+2h"] {
        let out = faketime(offset, "revive", &db.url, token.expose());
        assert!(out.contains("REFUSED lease_expired"), "{out}");
    }
    assert_eq!(a.job("p", "j3").unwrap().state, JobState::Expired);
    assert!(a.check().unwrap().ok());
}

/// Child entry point of the skew test (run under libfaketime).
#[test]
#[ignore = "child-process entry point of workers_with_skewed_clocks_follow_the_server_clock"]
fn skew_child() {
    let url = std::env::var("TENURE_SKEW_URL").expect("run by the parent test");
    let mode = std::env::var("TENURE_SKEW_MODE").unwrap();
    let a = Authority::open(url.as_str(), &Options::new()).unwrap();
    let server = server_now_us(&url);
    let local = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    // libfaketime is really in effect: at least an hour apart.
    assert!((local - server).abs() > 3_600_000_000, "clock not skewed");
    match mode.as_str() {
        "work" => {
            let ttl = secs(60);
            let l = a.claim_next("p", "skewed", ttl).unwrap();
            let after = server_now_us(&url);
            // Expiry = server sample + TTL, not the skewed local clock.
            assert!(l.expires_us() >= server + 60_000_000);
            assert!(l.expires_us() <= after + 60_000_000);
            let old = l.expires_us();
            l.renew(secs(120)).unwrap();
            assert!(l.expires_us() > old && l.expires_us() <= server_now_us(&url) + 120_000_000);
            l.complete(&[Fact::new("by", "skewed")]).unwrap();
            println!("WORKED {}", l.job());
        }
        "revive" => {
            let mut token = String::new();
            std::io::stdin().read_to_string(&mut token).unwrap();
            let e = a.import_lease(token.trim()).unwrap_err();
            assert_eq!(e.code(), ErrorCode::LeaseExpired, "{e}");
            println!("REFUSED {}", e.code().name());
        }
        m => panic!("unknown mode {m}"),
    }
}

#[test]
fn connections_killed_by_the_server_are_replaced_without_failing_calls() {
    // A server restart or failover closes every pooled connection while it
    // sits idle. The next calls must reconnect, not fail once per dead
    // connection; a lease claimed before stays valid (it is a row).
    if skip() {
        return;
    }
    let env = Env::with_jobs(8, 3);
    let url = env.pg.as_ref().unwrap().url.clone();
    // Fill the pool with several idle connections: concurrent readers.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
    let readers: Vec<_> = (0..6)
        .map(|_| {
            let a = env.auth.clone();
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                for _ in 0..20 {
                    a.jobs("p", &ListQuery::default()).unwrap();
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    let lease = env.auth.claim("p", "j0", "w", secs(600)).unwrap();
    let mut admin = pg::client(&url);
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .len();
    assert!(killed >= 1, "the pool held no connection to kill");
    // Wait until the server has really closed them.
    for _ in 0..200 {
        let left: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        if left == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for i in 0..(killed + 3) {
        env.auth
            .jobs("p", &ListQuery::default())
            .unwrap_or_else(|e| panic!("read {i} after the kill: {e}"));
    }
    lease.renew(secs(900)).unwrap();
    lease.complete(&[]).unwrap();
    let next = env.auth.claim_next("p", "w2", secs(60)).unwrap();
    next.complete(&[]).unwrap();
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn claim_next_never_locks_a_held_lease() {
    // The server filters leases still held out of claim-next's scan, so an
    // open claim-next (here inside an edit) does not hold their rows and
    // their holders renew without waiting.
    if skip() {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let other = env.reopen_with_busy_timeout(Duration::from_millis(50));
    let held = other.claim("p", "j0", "w0", secs(60)).unwrap();
    let mut e = env.auth.edit().unwrap();
    let next = e.claim_next("p", "w1", secs(60)).unwrap();
    assert_eq!(next.job(), "j1");
    // j0 sits in front of j1 in the queue: it was looked at, not locked.
    held.renew(secs(120)).unwrap();
    // j1 is being claimed by the open edit: its row is locked.
    assert_eq!(
        code(other.claim("p", "j1", "w2", secs(10))),
        ErrorCode::Busy
    );
    e.commit().unwrap();
    held.complete(&[]).unwrap();
    next.complete(&[]).unwrap();
    assert!(env.auth.check().unwrap().ok());
}

#[test]
fn a_rolled_back_operation_gives_up_its_locks_and_the_next_one_takes_them_again() {
    // An edit's operations share the production's shared lock (taken once
    // per transaction), but an operation that failed and was rolled back to
    // its savepoint released the locks it took: the next operation must
    // take them again, or a concurrent cancel of the production would not
    // wait for the edit's submission.
    if skip() {
        return;
    }
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    env.auth
        .submit("p", &JobSpec::new("x", b"1".to_vec()))
        .unwrap();
    let other = env.reopen_with_busy_timeout(Duration::from_millis(100));
    let mut e = env.auth.edit().unwrap();
    // Takes p's shared lock, then fails (conflict): rolled back with it.
    assert_eq!(
        code(e.submit("p", &JobSpec::new("x", b"2".to_vec()))),
        ErrorCode::Conflict
    );
    e.submit("p", &JobSpec::new("y", vec![])).unwrap();
    e.submit("p", &JobSpec::new("z", vec![])).unwrap();
    // The edit holds p shared: cancelling p must wait, here past its timeout.
    assert_eq!(code(other.cancel_production("p")), ErrorCode::Busy);
    e.commit().unwrap();
    other.cancel_production("p").unwrap();
    for j in ["x", "y", "z"] {
        assert_eq!(other.job("p", j).unwrap().state, JobState::Cancelled);
    }
    assert!(other.check().unwrap().ok());
}

/// The deferred writes carry every column as one array constant in its
/// text form (`store/postgres/literal.rs`): values that array syntax or SQL
/// quoting treats specially come back exactly as they were given, through
/// batched and single calls alike.
#[test]
fn deferred_writes_keep_values_that_array_syntax_treats_specially() {
    if skip() {
        return;
    }
    let Some(db) = pg::fresh_database() else {
        return;
    };
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    let odd = [
        "it's \"quoted\" \\ back\\slash {a,b} (x)",
        "NULL",
        "null",
        " padded ",
        "{}",
        "\\x00ff",
        "'",
        "\"",
        "Grüße, 日本 ✓",
    ];
    let specs: Vec<JobSpec> = (0..odd.len())
        .map(|i| JobSpec::new(format!("j{i}"), vec![]))
        .collect();
    a.submit_many("p", &specs).unwrap();
    for (i, text) in odd.iter().enumerate() {
        let holder = format!("w {text}");
        let lease = a.claim_next("p", &holder, secs(60)).unwrap();
        assert_eq!(lease.job(), format!("j{i}"));
        if i % 2 == 0 {
            lease
                .complete(&[Fact::new("k", *text), Fact::new("empty", "")])
                .unwrap();
            let facts = a.facts("p", &format!("j{i}")).unwrap();
            let value = |k: &str| facts.iter().find(|f| f.key == k).map(|f| f.value.clone());
            assert_eq!(value("k").as_deref(), Some(*text));
            assert_eq!(value("empty").as_deref(), Some(""));
            assert_eq!(value("tenure.holder"), Some(holder.clone()));
        } else {
            lease.fail(text, true).unwrap();
            let job = a.job("p", &format!("j{i}")).unwrap();
            assert_eq!(job.last_error.as_deref(), Some(*text));
        }
    }
    let events = a.events(0, 1000).unwrap();
    for (i, text) in odd.iter().enumerate() {
        let job = format!("j{i}");
        let claimed = events
            .iter()
            .find(|e| e.job.as_deref() == Some(&job) && e.kind == EventKind::Claimed)
            .unwrap();
        assert_eq!(claimed.holder, Some(format!("w {text}")));
        if i % 2 == 1 {
            let failed = events
                .iter()
                .find(|e| e.job.as_deref() == Some(&job) && e.kind == EventKind::Failed)
                .unwrap();
            assert!(failed.detail.contains(text), "{:?}", failed.detail);
        }
    }
    assert!(a.check().unwrap().ok());
}

fn claim_floor(url: &str, production: &str) -> i64 {
    pg::client(url)
        .query_one(
            "SELECT claim_floor FROM tenure.productions WHERE name = $1",
            &[&production],
        )
        .unwrap()
        .get(0)
}

fn seq_of(url: &str, job: &str) -> i64 {
    pg::client(url)
        .query_one("SELECT seq FROM tenure.jobs WHERE job = $1", &[&job])
        .unwrap()
        .get(0)
}

/// The claim floor (schema 8): every 256th claim-next of a handle raises
/// its production's floor to the oldest live job, and claim-next's ready
/// page starts there. It never passes a job claim-next may take later: a
/// job parked until its due time, a held lease that expires, a released
/// job, a job of a lower priority (each the oldest live job of its own
/// production when the floor is raised); on an empty queue it moves past
/// every job and a later submission is found.
#[test]
fn the_claim_floor_never_passes_a_job_claim_next_may_take() {
    if skip() {
        return;
    }
    let env = Env::new();
    let url = env.pg.as_ref().unwrap().url.clone();
    for kind in ["parked", "held", "released", "low"] {
        // A fresh handle: its 256th claim-next raises the floor.
        let a = env.reopen();
        a.create_production(kind).unwrap();
        let mut spec = JobSpec::new(kind, b"x".to_vec());
        if kind == "low" {
            spec = spec.priority(-1);
        }
        a.submit(kind, &spec).unwrap();
        let first = (kind != "low").then(|| a.claim(kind, kind, "w", secs(30)).unwrap());
        match (kind, &first) {
            ("parked", Some(l)) => {
                l.fail_retry_after("later", Delay::from_micros(600_000_000).unwrap())
                    .unwrap();
            }
            ("released", Some(l)) => {
                l.release().unwrap();
                // Claimable again: claimed by the first claim-next below;
                // held again while the floor is raised.
            }
            _ => {}
        }
        // 256 claim-nexts, the released job's among them.
        let n = if kind == "released" { 255 } else { 256 };
        let fillers: Vec<JobSpec> = (0..n)
            .map(|i| JobSpec::new(format!("{kind}{i:03}"), b"f".to_vec()))
            .collect();
        a.submit_many(kind, &fillers).unwrap();
        let mut taken = Vec::new();
        for _ in 0..256 {
            let l = a.claim_next(kind, "w", secs(3600)).unwrap();
            if l.job() == kind {
                taken.push(l);
            } else {
                l.complete(&[]).unwrap();
            }
        }
        // The one raise: up to this production's oldest live job, no further.
        assert_eq!(claim_floor(&url, kind), seq_of(&url, kind), "{kind}");
        match kind {
            "parked" => env.clock.advance(600_000_000),
            "held" => env.clock.advance(31_000_000),
            "released" => {
                let l = taken.pop().unwrap();
                l.release().unwrap();
            }
            _ => {}
        }
        assert_eq!(a.claim_next(kind, "w", secs(3600)).unwrap().job(), kind);
    }
    // Nothing live: the floor moves past every job.
    let a = env.reopen();
    a.create_production("e").unwrap();
    a.submit("e", &JobSpec::new("e0", b"x".to_vec())).unwrap();
    a.claim_next("e", "w", secs(60))
        .unwrap()
        .complete(&[])
        .unwrap();
    for _ in 1..256 {
        assert_eq!(
            code(a.claim_next("e", "w", secs(60))),
            ErrorCode::NoJobAvailable
        );
    }
    let floor = claim_floor(&url, "e");
    assert!(floor > seq_of(&url, "low255"), "{floor}");
    a.submit("e", &JobSpec::new("late", b"x".to_vec())).unwrap();
    assert_eq!(a.claim_next("e", "w", secs(60)).unwrap().job(), "late");
    assert!(a.check().unwrap().ok());
}

/// Submissions, claims and floor raises racing on one production: every
/// job submitted is claimed and completed exactly once (a raise holds the
/// production exclusively, so no submission is in flight while it reads
/// the oldest live job).
#[test]
fn claim_floor_raises_racing_submissions_lose_no_job() {
    if skip() {
        return;
    }
    let env = Env::new();
    env.auth.create_production("p").unwrap();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let submitted = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        // Four submitters whose commits interleave (a batch of three
        // draws its seqs before it commits), 300 jobs each.
        let subs: Vec<_> = (0..4)
            .map(|t| {
                let a = env.reopen();
                s.spawn(move || {
                    for i in 0..100 {
                        let batch: Vec<JobSpec> = (0..3)
                            .map(|k| JobSpec::new(format!("t{t}-{i}-{k}"), b"x".to_vec()))
                            .collect();
                        a.submit_many("p", &batch).unwrap();
                    }
                })
            })
            .collect();
        for _ in 0..2 {
            let a = &env.auth;
            let (done, submitted) = (&done, &submitted);
            s.spawn(move || loop {
                match a.claim_next("p", "w", secs(600)) {
                    Ok(l) => {
                        l.complete(&[]).unwrap();
                        done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    Err(e)
                        if e.code() == ErrorCode::NoJobAvailable || e.code() == ErrorCode::Busy =>
                    {
                        if submitted.load(std::sync::atomic::Ordering::SeqCst)
                            && e.code() == ErrorCode::NoJobAvailable
                        {
                            return;
                        }
                    }
                    Err(e) => panic!("{e}"),
                }
            });
        }
        for h in subs {
            h.join().unwrap();
        }
        submitted.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 1200);
    assert!(env.auth.check().unwrap().ok());
}

/// A schema 7 store gets the claim floor column (0: no bound) and claims
/// as before.
#[test]
fn a_schema_7_store_gets_the_claim_floor() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let url = env.pg.as_ref().unwrap().url.clone();
    let held = env.auth.claim("p", "j0", "w", secs(60)).unwrap();
    pg::client(&url)
        .batch_execute(
            "ALTER TABLE tenure.productions DROP COLUMN claim_floor;
             UPDATE tenure.meta SET value = 7 WHERE key = 'schema_version';",
        )
        .unwrap();
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 7);
    assert_eq!(claim_floor(&url, "p"), 0);
    held.complete(&[]).unwrap();
    assert_eq!(a.claim_next("p", "w", secs(60)).unwrap().job(), "j1");
    assert!(a.check().unwrap().ok());
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

/// A submission in flight (an open edit that drew its job's `seq`) when
/// the floor's turn comes: the raise waits for the production's lock (and
/// for its row, which the submission holds `FOR SHARE`: either guard alone
/// fails this test only when both are gone), gives up, and leaves the floor
/// below that job, which is claimable once the edit commits, although a
/// later job committed first and is live.
#[test]
fn a_claim_floor_raise_never_passes_a_submission_in_flight() {
    if skip() {
        return;
    }
    let env = Env::new();
    let url = env.pg.as_ref().unwrap().url.clone();
    let a = env.reopen();
    a.create_production("p").unwrap();
    let mut e = env.auth.edit().unwrap();
    e.submit("p", &JobSpec::new("early", b"x".to_vec()))
        .unwrap();
    a.submit("p", &JobSpec::new("later", b"x".to_vec()))
        .unwrap();
    assert!(seq_of(&url, "later") > 0);
    // The 256th claim-next of `a` raises the floor while the edit is open.
    let later = a.claim_next("p", "w", secs(600)).unwrap();
    assert_eq!(later.job(), "later");
    for _ in 1..256 {
        assert_eq!(
            code(a.claim_next("p", "w", secs(600))),
            ErrorCode::NoJobAvailable
        );
    }
    e.commit().unwrap();
    let (floor, early) = (claim_floor(&url, "p"), seq_of(&url, "early"));
    assert!(
        floor <= early,
        "floor {floor}, early {early}, later {}",
        seq_of(&url, "later")
    );
    assert_eq!(a.claim_next("p", "w", secs(600)).unwrap().job(), "early");
}

/// A schema 8 store (the mark in 16 striped rows) migrates to the mark log
/// keeping its mark: the log starts at the largest stripe, the stripes are
/// dropped, and a clock below the old mark is refused after the migration.
#[test]
fn a_schema_8_store_keeps_its_mark_in_the_mark_log() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let url = env.pg.as_ref().unwrap().url.clone();
    let held = env.auth.claim("p", "j0", "w", secs(600)).unwrap();
    let old_mark = T0 + 3_600_000_000;
    // Back to schema 8's layout, the largest stripe an hour past the clock.
    pg::client(&url)
        .batch_execute(&format!(
            "DROP TABLE tenure.mark_log;
             CREATE TABLE tenure.marks (stripe INT PRIMARY KEY, value BIGINT NOT NULL);
             INSERT INTO tenure.marks (stripe, value)
                 SELECT s, {T0} + s FROM generate_series(0, 15) s;
             UPDATE tenure.marks SET value = {old_mark} WHERE stripe = 7;
             UPDATE tenure.meta SET value = 8 WHERE key = 'schema_version';"
        ))
        .unwrap();
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 8);
    let mut c = pg::client(&url);
    let stripes: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'tenure' AND tablename = 'marks'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(stripes, 0, "the striped rows are dropped");
    let log: i64 = c
        .query_one("SELECT max(value) FROM tenure.mark_log", &[])
        .unwrap()
        .get(0);
    assert_eq!(log, old_mark);
    let st = a.clock().unwrap();
    assert_eq!(st.mark_us, old_mark);
    assert!(st.blocked);
    assert_eq!(
        code(a.claim("p", "j1", "w", secs(1))),
        ErrorCode::ClockRollback
    );
    assert_eq!(code(held.renew(secs(60))), ErrorCode::ClockRollback);
    // Past the old mark the clock is accepted again and raises the mark.
    env.clock.set(old_mark + 1_000_000);
    let l = a.claim("p", "j1", "w", secs(60)).unwrap();
    assert_eq!(l.expires_us(), old_mark + 61_000_000);
    assert_eq!(a.clock().unwrap().mark_us, old_mark + 1_000_000);
    assert!(a.check().unwrap().ok());
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

/// Schema 10 changed only SQLite's layout: a PostgreSQL store at 9 only
/// records 10, and its leases, rows and mark stay as they were.
#[test]
fn a_schema_9_store_records_10_and_keeps_its_leases() {
    if skip() {
        return;
    }
    let env = Env::with_jobs(2, 3);
    let url = env.pg.as_ref().unwrap().url.clone();
    let held = env.auth.claim("p", "j0", "w", secs(600)).unwrap();
    let mark = env.auth.clock().unwrap().mark_us;
    pg::client(&url)
        .batch_execute("UPDATE tenure.meta SET value = 9 WHERE key = 'schema_version';")
        .unwrap();
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 9);
    assert_eq!(a.clock().unwrap().mark_us, mark);
    let held = a
        .import_lease(held.export_token().unwrap().expose())
        .unwrap();
    env.clock.advance(1_000_000);
    held.complete(&[]).unwrap();
    assert_eq!(a.claim_next("p", "w", secs(60)).unwrap().job(), "j1");
    assert!(a.check().unwrap().ok());
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

/// The top-level buffer count of `EXPLAIN (ANALYZE, BUFFERS)` of `sql`.
fn buffers(c: &mut postgres::Client, sql: &str) -> (u64, Vec<String>) {
    let plan: Vec<String> = c
        .query(&format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect();
    let line = plan
        .iter()
        .find(|l| l.trim_start().starts_with("Buffers:"))
        .cloned()
        .unwrap_or_default();
    let n = line
        .split([' ', ','])
        .filter_map(|w| w.split_once('=').and_then(|(_, v)| v.parse::<u64>().ok()))
        .sum();
    (n, plan)
}

/// The mark's read (as the session sends it with `BEGIN`) touches a few
/// buffers however many marks were written while another connection's
/// open transaction pins the xmin (so no row version of the mark log can
/// be vacuumed): the newest marks are live and first in the index.
#[test]
fn a_pinned_snapshot_does_not_make_the_mark_read_walk_more() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    let read =
        "SELECT coalesce((SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1), 0)";
    let mut c = pg::client(&db.url);
    let (before, _) = buffers(&mut c, read);
    let mut pin = pg::client(&db.url);
    pin.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM tenure.jobs")
        .unwrap();
    for i in 0..2500 {
        a.submit("p", &JobSpec::new(format!("j{i}"), vec![]))
            .unwrap();
    }
    // The log is pruned as it goes (a pinned snapshot keeps the deleted
    // versions, not the rows).
    let live: i64 = c
        .query_one("SELECT count(*) FROM tenure.mark_log", &[])
        .unwrap()
        .get(0);
    assert!((1..1200).contains(&live), "{live} rows in the mark log");
    let (after, plan) = buffers(&mut c, read);
    pin.batch_execute("COMMIT").unwrap();
    assert!(
        after <= before.max(4) + 2,
        "the mark read walked {after} buffers (before the pin: {before}): {plan:#?}"
    );
    // Pruning kept the largest mark: none below the newest event's time.
    let newest: i64 = c
        .query_one("SELECT max(at_us) FROM tenure.events", &[])
        .unwrap()
        .get(0);
    assert!(a.clock().unwrap().mark_us >= newest);
}

/// The mark log's pruning never lowers the mark: four handles (four pools,
/// each pruning every 1024 marks it writes) commit side by side while a
/// reader sees the mark only rise, and at the end it is not below the
/// newest event's time.
#[test]
fn pruning_the_mark_log_never_lowers_the_mark() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    // One handle alone first, past its first pruning: after every commit
    // the stored mark is at least the newest event's time.
    let mut c = pg::client(&db.url);
    for i in 0..1100 {
        a.submit("p", &JobSpec::new(format!("a{i}"), vec![]))
            .unwrap();
        let (mark, newest): (i64, i64) = {
            let r = c
                .query_one(
                    "SELECT (SELECT coalesce(max(value), 0) FROM tenure.mark_log),
                            (SELECT max(at_us) FROM tenure.events)",
                    &[],
                )
                .unwrap();
            (r.get(0), r.get(1))
        };
        assert!(mark >= newest, "after {i}: mark {mark} below {newest}");
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let url = db.url.clone();
                s.spawn(move || {
                    let h = Authority::open(url.as_str(), &Options::new()).unwrap();
                    for i in 0..1100 {
                        h.submit("p", &JobSpec::new(format!("w{w}-{i}"), vec![]))
                            .unwrap();
                    }
                })
            })
            .collect();
        let reader = s.spawn(|| {
            let mut last = 0;
            let mut reads = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let m = a.clock().unwrap().mark_us;
                assert!(m >= last, "the mark went from {last} to {m}");
                last = m;
                reads += 1;
            }
            reads
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    });
    let newest: i64 = c
        .query_one("SELECT max(at_us) FROM tenure.events", &[])
        .unwrap()
        .get(0);
    let live: i64 = c
        .query_one("SELECT count(*) FROM tenure.mark_log", &[])
        .unwrap()
        .get(0);
    assert!(a.clock().unwrap().mark_us >= newest);
    assert!(live < 5 * 1100, "{live} rows: the log was pruned");
}

/// Deltas written while nobody folded (here 30 000 rows that sum to
/// nothing, beside the real ones, with the table's statistics taken while
/// they were there and autovacuum off) are moved by the next `stats`, which
/// vacuums and analyzes the table after: its pages given back, the
/// planner's row count current, the counts exact.
#[test]
fn a_fold_of_many_deltas_vacuums_the_deltas() {
    if skip() {
        return;
    }
    let env = Env::new();
    let a = &env.auth;
    let url = env.pg.as_ref().unwrap().url.clone();
    a.create_production("p").unwrap();
    for j in ["j1", "j2", "j3"] {
        a.submit("p", &JobSpec::new(j, b"x".to_vec())).unwrap();
    }
    let _lease = a.claim_next("p", "w", secs(60)).unwrap();
    let mut c = pg::client(&url);
    c.batch_execute(
        "ALTER TABLE tenure.job_count_deltas SET (autovacuum_enabled = false);
         INSERT INTO tenure.job_count_deltas (production, state, delta)
             SELECT 'p', 'completed', CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END
             FROM generate_series(1, 30000) i;
         ANALYZE tenure.job_count_deltas;",
    )
    .unwrap();
    // The table's size, and the number of rows the planner reckons with.
    let seen = |c: &mut postgres::Client| -> (i64, f32) {
        let r = c
            .query_one(
                "SELECT pg_relation_size(oid), reltuples FROM pg_class
                 WHERE oid = 'tenure.job_count_deltas'::regclass",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    let (full, rows) = seen(&mut c);
    assert!(rows >= 30_000.0, "{rows}");

    let s = a.stats(&StatsQuery::default()).unwrap();
    let p = &s.productions[0];
    assert_eq!((p.waiting_due, p.claimed_live, p.completed), (2, 1, 0));
    let left: i64 = c
        .query_one("SELECT count(*) FROM tenure.job_count_deltas", &[])
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
    let (size, rows) = seen(&mut c);
    assert!(size < full / 10, "{size} of {full} bytes");
    assert!(rows < 100.0, "{rows}");
    let again = a.stats(&StatsQuery::default()).unwrap();
    assert_eq!(again.productions[0].total(), 3);
}

/// With nobody reading statistics, a handle's own writes fold the count
/// deltas every 4 096 committed calls: the delta table stays bounded. A
/// statistics read folds only when its handle has not folded for a
/// second, and is exact either way.
#[test]
fn writes_alone_keep_the_count_deltas_bounded() {
    if skip() {
        return;
    }
    let env = Env::new();
    let a = &env.auth;
    let url = env.pg.as_ref().unwrap().url.clone();
    a.create_production("p").unwrap();
    let mut c = pg::client(&url);
    let deltas = |c: &mut postgres::Client| -> i64 {
        c.query_one("SELECT count(*) FROM tenure.job_count_deltas", &[])
            .unwrap()
            .get(0)
    };
    // Each submission inserts one delta row; 4 096 of them in a row pass
    // exactly one multiple of the cadence, whose fold moves every committed
    // row, so fewer remain than were written.
    for i in 0..4096 {
        a.submit("p", &JobSpec::new(format!("j{i}"), vec![]))
            .unwrap();
    }
    let left = deltas(&mut c);
    assert!(
        left < 4096,
        "{left} delta rows left after 4 096 submissions"
    );
    // A read within a second of the handle's last fold adds the deltas
    // rather than folding them; a read a second later folds them.
    let s = a.stats(&StatsQuery::default()).unwrap();
    assert_eq!(s.productions[0].waiting_due, 4096);
    assert_eq!(deltas(&mut c), left);
    std::thread::sleep(Duration::from_millis(1100));
    let s = a.stats(&StatsQuery::default()).unwrap();
    assert_eq!(s.productions[0].waiting_due, 4096);
    assert_eq!(deltas(&mut c), 0);
}

/// The floor row of `cargo xtask bench --backend postgres` drains jobs with
/// `bench/pg_floor/tenure.sql` instead of tenure: it must write the rows
/// tenure writes for a job (job row with its provenance, events, mark
/// log, counts), or the floor measures something else. One job by each:
/// the same row, events and facts up to the claim's own values, and
/// `check` passes on the store the floor left.
#[test]
fn the_floor_benchmark_writes_the_rows_tenure_writes() {
    if skip() {
        return;
    }
    let db = pg::fresh_database().unwrap();
    let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
    a.create_production("p").unwrap();
    for j in ["by-tenure", "by-floor"] {
        a.submit("p", &JobSpec::new(j, vec![])).unwrap();
    }
    let lease = a.claim_next("p", "h", secs(60)).unwrap();
    assert_eq!(lease.job(), "by-tenure");
    lease.complete(&[]).unwrap();
    let mut c = pg::client(&db.url);
    let sql = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/pg_floor/tenure.sql"),
    )
    .unwrap();
    c.batch_execute(&sql).unwrap();
    let digest = vec![7u8; 32];
    let row = c
        .query_one(
            "SELECT o_job, o_claim_id FROM bench_floor.claim_next('p', 'h', 60000000, $1)",
            &[&digest],
        )
        .unwrap();
    let (job, claim): (String, String) = (row.get(0), row.get(1));
    assert_eq!(job, "by-floor");
    c.query_one(
        "SELECT bench_floor.complete('p', $1, $2, $3)",
        &[&job, &claim, &digest],
    )
    .unwrap();
    // A lease that is not current is refused and changes nothing.
    assert!(c
        .query_one(
            "SELECT bench_floor.complete('p', $1, $2, $3)",
            &[&job, &claim, &digest],
        )
        .is_err());
    let shape = |c: &mut postgres::Client, q: &str, j: &str| -> Vec<String> {
        c.query(q, &[&j])
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect()
    };
    for (what, q) in [
        (
            "job row",
            "SELECT row(state, attempts, claim_id IS NOT NULL, secret_digest IS NOT NULL, holder,
                        claimed_us IS NOT NULL, expires_us > claimed_us, updated_us >= claimed_us,
                        last_error, due_us, parked, ended_us = updated_us,
                        waiting_since_us)::text
             FROM tenure.jobs WHERE production = 'p' AND job = $1",
        ),
        (
            "events",
            "SELECT row(e.kind, e.state, e.claim_id = j.claim_id, e.holder, e.attempt,
                        e.expires_us = j.expires_us, e.detail, e.lapsed_us,
                        CASE e.kind WHEN 'claimed' THEN (e.at_us = j.claimed_us,
                                                         e.since_us = j.created_us)::text
                                    WHEN 'completed' THEN (e.at_us = j.updated_us,
                                                           e.since_us = j.claimed_us)::text
                        END)::text
             FROM tenure.events e JOIN tenure.jobs j USING (production, job)
             WHERE e.production = 'p' AND e.job = $1 ORDER BY e.seq",
        ),
        (
            "fact rows",
            "SELECT row(ord, key, value)::text
             FROM tenure.facts WHERE production = 'p' AND job = $1 ORDER BY ord",
        ),
    ] {
        let mine = shape(&mut c, q, "by-tenure");
        assert_eq!(shape(&mut c, q, "by-floor"), mine, "{what}");
    }
    // Both keep the completion's provenance in the job row, and publish
    // the same facts from it.
    for j in ["by-tenure", "by-floor"] {
        let at: Option<i64> = c
            .query_one(
                "SELECT provenance_at FROM tenure.jobs WHERE production = 'p' AND job = $1",
                &[&j],
            )
            .unwrap()
            .get(0);
        assert_eq!(at, Some(0), "{j}");
    }
    let published = |j: &str| -> Vec<(String, Option<String>)> {
        a.facts("p", j)
            .unwrap()
            .into_iter()
            .map(|f| {
                let same = ["tenure.holder", "tenure.attempt"].contains(&f.key.as_str());
                (f.key, same.then_some(f.value))
            })
            .collect()
    };
    assert_eq!(published("by-tenure").len(), 4);
    assert_eq!(published("by-floor"), published("by-tenure"));
    // Each of the floor's transitions appended its sample to the mark log,
    // as each of tenure's commits does.
    let marks: i64 = c
        .query_one(
            "SELECT count(*) FROM tenure.mark_log
             WHERE value >= (SELECT min(at_us) FROM tenure.events
                             WHERE job = 'by-floor' AND kind = 'claimed')",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(marks >= 2, "{marks}");
    let s = a.stats(&StatsQuery::default()).unwrap();
    assert_eq!(s.productions[0].completed, 2);
    assert_eq!(s.productions[0].flow.completions, 2);
    assert!(a.check().unwrap().violations.is_empty());
}
