//! Schema migration, newer-store refusal, foreign and corrupt files.
mod common;
use common::*;
use std::path::Path;
use tenure::*;

fn sha(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut v = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut v)
        .unwrap();
    v
}

fn load_fixture(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(include_str!("fixtures/v1_pre_lease.sql"))
        .unwrap();
}

#[test]
fn pre_lease_layout_migrates_with_claims_expired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    load_fixture(&path);
    let clock = ManualClock::new(T0);
    let a = Authority::open(&path, &Options::new().clock(clock.clone())).unwrap();
    assert_eq!(a.migrated_from(), 1);
    let st = |j: &str| a.job("legacy", j).unwrap().state;
    assert_eq!(st("waiting"), JobState::Requested);
    assert_eq!(
        st("running"),
        JobState::Expired,
        "an existing claim expires during migration"
    );
    assert_eq!(
        st("last-try"),
        JobState::Failed,
        "expired with attempts exhausted"
    );
    assert_eq!(st("done"), JobState::Completed);
    assert_eq!(st("gave-up"), JobState::Failed);
    assert_eq!(st("stopped"), JobState::Cancelled);
    assert_eq!(a.payload("legacy", "waiting").unwrap(), b"payload");
    let v = a.job("legacy", "running").unwrap();
    assert_eq!(v.attempts, 1);
    assert_eq!(v.expires_us, Some(T0));
    // The migrated claim is reclaimable; claim-next takes the higher priority first.
    let l = a.claim_next("legacy", "w", secs(10)).unwrap();
    assert_eq!(l.job(), "waiting");
    let l2 = a.claim_next("legacy", "w", secs(10)).unwrap();
    assert_eq!((l2.job(), l2.attempt()), ("running", 2));
    assert_eq!(a.clock().unwrap().mark_us, T0);
    let report = a.check().unwrap();
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    // Reopening does not migrate again.
    drop(a);
    let a = Authority::open(&path, &Options::new().clock(clock)).unwrap();
    assert_eq!(a.migrated_from(), SCHEMA_VERSION);
}

#[test]
fn new_store_reports_version_zero() {
    let env = Env::new();
    assert_eq!(env.auth.migrated_from(), 0);
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

#[test]
fn newer_store_is_refused_untouched() {
    if skip_on_postgres(
        "a SQLite file header; tests/pg_backend.rs checks a newer PostgreSQL schema",
    ) {
        return;
    }
    let env = Env::with_jobs(1, 3);
    let path = env.path();
    drop(env.auth);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
            .unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    }
    let before = sha(&path);
    let e = Authority::open(&path, &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::SchemaTooNew);
    assert!(
        e.to_string().contains(&format!("{}", SCHEMA_VERSION + 1)),
        "{e}"
    );
    assert_eq!(sha(&path), before, "the store file changed");
}

/// Schema 9 changed only PostgreSQL's layout: a SQLite store at 8 records
/// the current version, keeps its mark (a clock below it is still refused)
/// and every row.
#[test]
fn a_schema_8_store_records_the_current_version_and_keeps_its_mark() {
    if skip_on_postgres("a SQLite file header; tests/pg_backend.rs migrates PostgreSQL from 8") {
        return;
    }
    let env = Env::with_jobs(2, 3);
    env.clock.advance(60_000_000);
    let l = env.auth.claim("p", "j0", "w", secs(60)).unwrap();
    let mark = env.auth.clock().unwrap().mark_us;
    let path = env.path();
    drop(l);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA user_version = 8").unwrap();
    }
    env.clock.set(mark - 1);
    let a = env.reopen();
    assert_eq!(a.migrated_from(), 8);
    assert_eq!(a.clock().unwrap().mark_us, mark);
    assert_eq!(
        code_of(a.claim("p", "j1", "w", secs(1))),
        ErrorCode::ClockRollback
    );
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Claimed);
    assert!(a.check().unwrap().ok());
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

#[test]
fn corrupt_and_foreign_files_are_store_errors() {
    if skip_on_postgres(
        "corrupt and foreign SQLite files; tests/pg_backend.rs checks a foreign PostgreSQL schema",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![0x5a; 8192]).unwrap();
    let e = Authority::open(&junk, &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store, "{e}");
    assert_eq!(sha(&junk), vec![0x5a; 8192]);

    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    let e = Authority::open(&foreign, &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store);
    assert!(e.to_string().contains("not a tenure store"), "{e}");

    let other_app = dir.path().join("other.db");
    rusqlite::Connection::open(&other_app)
        .unwrap()
        .execute_batch("PRAGMA application_id = 42; CREATE TABLE t(x);")
        .unwrap();
    assert_eq!(
        Authority::open(&other_app, &Options::new())
            .unwrap_err()
            .code(),
        ErrorCode::Store
    );

    // A store whose pages were damaged after creation: errors, never panics.
    let env = Env::with_jobs(50, 3);
    let path = env.path();
    drop(env.auth);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    let len = bytes.len();
    for b in &mut bytes[4096..len] {
        *b ^= 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    match Authority::open(&path, &Options::new()) {
        Err(e) => assert_eq!(e.code(), ErrorCode::Store, "{e}"),
        Ok(a) => {
            let r = a
                .claim_next("p", "w", secs(1))
                .map(|_| ())
                .and_then(|_| a.check().map(|_| ()));
            assert_eq!(r.unwrap_err().code(), ErrorCode::Store);
        }
    }
    // A missing directory.
    let e = Authority::open(dir.path().join("no/such/dir/x.db"), &Options::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Store);
    assert_eq!(
        Authority::open("", &Options::new()).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
}

// The read-only store case is tested for real (as root too, through a
// read-only bind mount) in tests/census.rs.

/// What `EXPLAIN QUERY PLAN` says of `sql`, one line per step.
fn query_plan(c: &rusqlite::Connection, sql: &str) -> String {
    c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .map(|r| r.unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn claim_next_uses_the_ready_index() {
    if skip_on_postgres("SQLite EXPLAIN QUERY PLAN") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let c = rusqlite::Connection::open(env.path()).unwrap();
    let plan = query_plan(
        &c,
        "SELECT seq FROM jobs INDEXED BY jobs_ready
         WHERE production = 'p' AND ended_us IS NULL AND parked = 0
           AND state IN ('requested', 'claimed')
         ORDER BY priority DESC, seq LIMIT 32",
    );
    assert!(plan.contains("jobs_ready"), "{plan}");
    assert!(
        !plan.contains("TEMP B-TREE"),
        "claim-next must not sort: {plan}"
    );
    let plan = query_plan(
        &c,
        "SELECT seq FROM jobs WHERE production = 'p' AND job = 'j1'",
    );
    assert!(
        plan.contains("USING INDEX") || plan.contains("USING COVERING INDEX"),
        "{plan}"
    );
}

/// Listing a production's jobs in one state never sorts: a terminal state
/// is a range of `jobs_ended`, a claimed one (claimed, expired, failed on
/// its last lease) a range of `jobs_claimed`, so neither reads the
/// production's requested jobs, and the requested state a walk of the
/// production's jobs by ID (the store's statements, as `EXPLAIN QUERY
/// PLAN` sees them).
#[test]
fn listings_by_state_walk_an_index_in_job_order() {
    if skip_on_postgres("SQLite EXPLAIN QUERY PLAN") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let c = rusqlite::Connection::open(env.path()).unwrap();
    let claimed = query_plan(
        &c,
        "SELECT seq FROM jobs INDEXED BY jobs_claimed
         WHERE production = 'p' AND state = 'claimed' AND job > ''
         ORDER BY job LIMIT 100",
    );
    assert!(claimed.contains("jobs_claimed"), "{claimed}");
    assert!(claimed.contains("job>?"), "a range of the index: {claimed}");
    assert!(!claimed.contains("TEMP B-TREE"), "{claimed}");
    let open = query_plan(
        &c,
        "SELECT seq FROM jobs WHERE production = 'p' AND job > '' AND state = 'requested'
         ORDER BY job LIMIT 100",
    );
    assert!(
        open.contains("USING INDEX sqlite_autoindex_jobs_1"),
        "{open}"
    );
    assert!(!open.contains("TEMP B-TREE"), "{open}");
    let ended = query_plan(
        &c,
        "SELECT seq FROM jobs INDEXED BY jobs_ended
         WHERE production = 'p' AND state = 'failed' AND ended_us IS NOT NULL AND job > ''
         ORDER BY job LIMIT 100",
    );
    assert!(ended.contains("jobs_ended"), "{ended}");
    assert!(!ended.contains("TEMP B-TREE"), "{ended}");
}

/// A full disk (here: a file-size limit, so SQLite's write fails with
/// SQLITE_FULL) gives a Store error and loses nothing committed.
#[test]
fn full_disk_is_a_store_error_and_keeps_committed_work() {
    if skip_on_postgres("a full disk under a SQLite file (RLIMIT_FSIZE)") {
        return;
    }
    let env = Env::with_jobs(3, 3);
    let l = env.auth.claim("p", "j0", "w", secs(600)).unwrap();
    l.complete(&[Fact::new("k", "v")]).unwrap();
    let path = env.path();
    drop(env.auth);
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "full_disk_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TENURE_FULL_DISK_DB", &path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("FULL-DISK store"), "{text}");
    let a = Authority::open(&path, &Options::new()).unwrap();
    assert_eq!(a.job("p", "j0").unwrap().state, JobState::Completed);
    assert_eq!(a.facts("p", "j0").unwrap()[0].value, "v");
    assert_eq!(code_of(a.job("p", "big")), ErrorCode::NotFound);
    assert!(a.check().unwrap().ok());
}

fn code_of<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.unwrap_err().code()
}

#[test]
#[ignore = "child-process entry point of full_disk_is_a_store_error_and_keeps_committed_work"]
fn full_disk_child() {
    let path = std::env::var("TENURE_FULL_DISK_DB").expect("run by the parent test");
    let a = Authority::open(&path, &Options::new()).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    // SAFETY: plain libc calls on this process: ignore SIGXFSZ so the write
    // fails with EFBIG instead of killing us, then cap file sizes.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: size + 8192,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    let r = a.submit_many(
        "p",
        &(0..8)
            .map(|i| {
                JobSpec::new(
                    if i == 0 {
                        "big".to_string()
                    } else {
                        format!("big{i}")
                    },
                    vec![7u8; 1 << 20],
                )
            })
            .collect::<Vec<_>>(),
    );
    let e = r.unwrap_err();
    println!("\nFULL-DISK store {e}");
    assert_eq!(e.code(), ErrorCode::Store, "{e}");
    assert!(
        e.to_string().contains("full") || e.to_string().contains("I/O"),
        "{e}"
    );
}

/// The lease token of job `held` in `fixtures/v4_store.sql` (a test store's).
const V4_HELD_TOKEN: &str = "tenure-lease-v1.AXAEaGVsZCi3kn_bnCh6Vy-UH6N-0tHaECTvIjFOGA49OztuPf3g";

/// `(seq, job, state)` of every job row, in `seq` order.
fn job_rows(c: &rusqlite::Connection) -> Vec<(i64, String, String)> {
    c.prepare("SELECT seq, job, state FROM jobs ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// How many temporary B-trees (`OpenEphemeral`) one execution of `sql` builds.
fn ephemeral_tables(c: &rusqlite::Connection, sql: &str) -> usize {
    let mut st = c.prepare(&format!("EXPLAIN {sql}")).unwrap();
    // EXPLAIN runs nothing: its parameters may stay unbound.
    let mut rows = st.raw_query();
    let mut n = 0;
    while let Some(r) = rows.next().unwrap() {
        n += usize::from(r.get::<_, String>(1).unwrap() == "OpenEphemeral");
    }
    n
}

/// Write `fixtures/v4_store.sql` to `path`: the open file and its
/// high-water mark.
fn v4_store(path: &Path) -> (rusqlite::Connection, i64) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(include_str!("fixtures/v4_store.sql"))
        .unwrap();
    let mark = c
        .query_row(
            "SELECT value FROM meta WHERE key = 'high_water_us'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (c, mark)
}

/// The writes of a state change and of a renewal (the backend's statements).
const JOB_UPDATE: &str = "UPDATE jobs SET state = ?2, attempts = ?3, claim_id = ?4,
    secret_digest = ?5, holder = ?6, claimed_us = ?7, expires_us = ?8, updated_us = ?9,
    last_error = ?10, due_us = ?11, parked = ?12 WHERE seq = ?1";
const EXPIRY_UPDATE: &str = "UPDATE jobs SET expires_us = ?2, updated_us = ?3 WHERE seq = ?1";

#[test]
fn a_v4_store_is_rebuilt_with_job_writes_that_build_no_temporary_tables() {
    if skip_on_postgres("a SQLite file of schema 4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (before, mark) = {
        let (c, mark) = v4_store(&path);
        // Schema 4 builds temporary tables for the CHECK and `jobs_terminal`.
        assert!(ephemeral_tables(&c, JOB_UPDATE) > 0);
        assert!(ephemeral_tables(&c, EXPIRY_UPDATE) > 0);
        (job_rows(&c), mark)
    };
    let clock = ManualClock::new(mark + 1_000_000);
    let a = Authority::open(&path, &Options::new().clock(clock.clone())).unwrap();
    assert_eq!(a.migrated_from(), 4);
    let report = a.check().unwrap();
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    let c = rusqlite::Connection::open(&path).unwrap();
    // An existing store keeps its page size (a new one has 2 KiB pages).
    let page: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    assert_eq!(page, 4096);
    // Every row kept its sequence number, state and columns.
    assert_eq!(job_rows(&c), before);
    assert_eq!(before.len(), 4);
    assert_eq!(ephemeral_tables(&c, JOB_UPDATE), 0);
    assert_eq!(ephemeral_tables(&c, EXPIRY_UPDATE), 0);
    // The rebuilt CHECK still refuses a state that does not exist.
    let bad = c.execute("UPDATE jobs SET state = 'expired' WHERE job = 'queued'", []);
    assert!(bad.unwrap_err().to_string().contains("CHECK"));
    let st = |j: &str| a.job("p", j).unwrap().state;
    assert_eq!(st("held"), JobState::Claimed);
    assert_eq!(st("done"), JobState::Completed);
    assert_eq!(st("retry"), JobState::Requested);
    assert_eq!(a.payload("p", "queued").unwrap(), b"payload queued\n");
    assert_eq!(a.facts("p", "done").unwrap()[0].value, "42");
    // The lease taken before the migration still works, then is closed.
    let held = a.import_lease(V4_HELD_TOKEN).unwrap();
    held.renew(secs(86_400)).unwrap();
    held.complete(&[Fact::new("k", "v")]).unwrap();
    // New rows continue the sequence; claim-next finds the requested jobs
    // oldest first (the ready index was rebuilt).
    a.submit("p", &JobSpec::new("new", "n")).unwrap();
    let seq: i64 = c
        .query_row("SELECT seq FROM jobs WHERE job = 'new'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(seq, before.iter().map(|r| r.0).max().unwrap() + 1);
    let next = a.claim_next("p", "w", secs(60)).unwrap();
    assert_eq!(next.job(), "retry");
    next.complete(&[]).unwrap();
    // Pruning finds terminal jobs through the rebuilt `jobs_terminal`.
    clock.advance(3_600_000_000);
    let keep = Some(Age::from_secs(60).unwrap());
    let r = a
        .prune(&Retention {
            event_age: None,
            terminal_job_age: keep,
            tombstone_age: None,
        })
        .unwrap();
    assert_eq!(r.jobs, 3, "done, held and retry are terminal: {r:?}");
    assert!(a.check().unwrap().ok());
    drop(a);
    let a = Authority::open(&path, &Options::new().clock(clock)).unwrap();
    assert_eq!(a.migrated_from(), SCHEMA_VERSION);
}

/// `(key, value)` of every fact of one job, in order.
fn kv(facts: &[PublishedFact]) -> Vec<(String, String)> {
    facts
        .iter()
        .map(|f| (f.key.clone(), f.value.clone()))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The fact rows the file itself holds for one job: `(ord, key)`.
fn stored_facts(c: &rusqlite::Connection, job: &str) -> Vec<(i64, String)> {
    c.prepare("SELECT ord, key FROM facts WHERE production = 'p' AND job = ?1 ORDER BY ord")
        .unwrap()
        .query_map([job], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn provenance_kept_in_the_job_row_reads_exactly_as_stored_provenance_did() {
    if skip_on_postgres("a SQLite file of schema 4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mark = v4_store(&path).1;
    let clock = ManualClock::new(mark + 1_000_000);
    let a = Authority::open(&path, &Options::new().clock(clock.clone())).unwrap();
    assert_eq!(a.migrated_from(), 4);
    let c = rusqlite::Connection::open(&path).unwrap();
    // A completion made before the migration keeps its stored provenance rows.
    let done = pairs(&[
        ("out", "42"),
        ("tenure.claim_id", "8fbc7289-e893-436d-9698-19ee3350148e"),
        ("tenure.holder", "w2"),
        ("tenure.attempt", "1"),
        ("tenure.completed_us", "1796078259396593"),
    ]);
    assert_eq!(kv(&a.facts("p", "done").unwrap()), done);
    assert_eq!(stored_facts(&c, "done").len(), 5);

    // New completions: with caller facts, with an execution record, batched,
    // and without facts.
    let held = a.import_lease(V4_HELD_TOKEN).unwrap();
    clock.advance(1_000);
    held.complete(&[Fact::new("k", "v")]).unwrap();
    let held_at = clock.get();
    for j in ["x", "y", "z"] {
        a.submit("p", &JobSpec::new(j, j)).unwrap();
    }
    let x = a.claim("p", "x", "worker-x", secs(60)).unwrap();
    let copy = |l: &Lease| a.import_lease(l.export_token().unwrap().expose()).unwrap();
    let x_retry = copy(&x);
    let exec = Execution {
        nonce: uuid::Uuid::new_v4(),
        output_path: "/out/x.out".into(),
        output_sha256: "ab".repeat(32),
        output_size: 7,
        exit_status: 0,
    };
    clock.advance(1_000);
    x.complete_execution(&exec, &[Fact::new("a", "1"), Fact::new("b", "2")])
        .unwrap();
    let x_at = clock.get();
    let y = a.claim("p", "y", "worker-y", secs(60)).unwrap();
    let z = a.claim("p", "z", "worker-z", secs(60)).unwrap();
    let z_retry = copy(&z);
    clock.advance(1_000);
    let yz_at = clock.get();
    let empty: &[Fact] = &[];
    let out = a
        .complete_many(&[(&y, &[Fact::new("r", "y")][..]), (&z, empty)])
        .unwrap();
    assert!(out.iter().all(|r| r.is_ok()), "{out:?}");

    let prov = |l: &Lease, at: i64| {
        vec![
            ("tenure.claim_id".to_string(), l.claim_id().to_string()),
            ("tenure.holder".to_string(), l.holder().to_string()),
            ("tenure.attempt".to_string(), l.attempt().to_string()),
            ("tenure.completed_us".to_string(), at.to_string()),
        ]
    };
    let mut want_held = pairs(&[("k", "v")]);
    want_held.extend(prov(&held, held_at));
    let mut want_x = pairs(&[("a", "1"), ("b", "2")]);
    want_x.extend(prov(&x, x_at));
    want_x.extend(pairs(&[
        ("tenure.exec.nonce", &exec.nonce.to_string()),
        ("tenure.exec.output", "/out/x.out"),
        ("tenure.exec.sha256", &"ab".repeat(32)),
        ("tenure.exec.size", "7"),
        ("tenure.exec.exit_status", "0"),
    ]));
    let mut want_y = pairs(&[("r", "y")]);
    want_y.extend(prov(&y, yz_at));
    let want_z = prov(&z, yz_at);
    let want = [
        ("done", &done),
        ("held", &want_held),
        ("x", &want_x),
        ("y", &want_y),
        ("z", &want_z),
    ];
    for (job, facts) in want {
        assert_eq!(&kv(&a.facts("p", job).unwrap()), facts, "{job}");
    }
    // The new completions store no provenance rows: the execution's facts
    // keep the positions after the provenance.
    assert_eq!(
        stored_facts(&c, "x"),
        [
            (0, "a".to_string()),
            (1, "b".to_string()),
            (2, "tenure.exec.nonce".to_string()),
            (3, "tenure.exec.output".to_string()),
            (4, "tenure.exec.sha256".to_string()),
            (5, "tenure.exec.size".to_string()),
            (6, "tenure.exec.exit_status".to_string()),
        ]
    );
    assert_eq!(stored_facts(&c, "z"), []);
    assert_eq!(stored_facts(&c, "held").len(), 1);

    // The production's listing and its export: every job's facts in job
    // order, the same records.
    let listed = a.production_facts("p").unwrap();
    let by_job: Vec<(String, String, String)> = listed
        .iter()
        .map(|f| (f.job.clone(), f.key.clone(), f.value.clone()))
        .collect();
    let expected: Vec<(String, String, String)> = want
        .iter()
        .flat_map(|(j, fs)| {
            fs.iter()
                .map(move |(k, v)| (j.to_string(), k.clone(), v.clone()))
        })
        .collect();
    assert_eq!(by_job, expected);
    assert!(listed.iter().all(|f| f.production == "p"));
    let mut exported = Vec::new();
    a.export_production("p", &mut |r| {
        if let ExportRecord::Fact(f) = r {
            exported.push(f);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(exported, listed);
    let report = a.check().unwrap();
    assert!(report.ok(), "{report:?}");

    // A retried completion compares the caller's facts as before.
    assert!(
        x_retry
            .complete_execution_idempotent(&exec, &[Fact::new("b", "2"), Fact::new("a", "1")])
            .unwrap()
            .replayed
    );
    assert_eq!(
        code_of(z_retry.complete_idempotent(&[Fact::new("other", "1")])),
        ErrorCode::Conflict
    );

    // Deleting the production counts every fact it had, derived ones too.
    a.cancel_production("p").unwrap();
    let counts = a.delete_production("p").unwrap();
    let total: usize = want.iter().map(|(_, fs)| fs.len()).sum();
    assert_eq!(counts.facts, total as u64);
    assert!(a.production_facts("p").is_err() || a.production_facts("p").unwrap().is_empty());
}

/// (the `meta` row's mark, the newest event's `mark_us`).
fn stored_marks(path: &Path) -> (i64, Option<i64>) {
    let c = rusqlite::Connection::open(path).unwrap();
    let meta = c
        .query_row(
            "SELECT value FROM meta WHERE key = 'high_water_us'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let newest = c
        .query_row(
            "SELECT mark_us FROM events ORDER BY seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (meta, newest)
}

/// Schema 8 leaves the high-water mark on the newest event (a page every
/// guarded commit writes anyway): a v2 store migrates keeping its mark,
/// guarded commits leave `meta` as it was, and the mark on the event is
/// what refuses a clock that went back, also after reopening.
#[test]
fn the_mark_on_the_newest_event_refuses_a_clock_that_went_back() {
    if skip_on_postgres("a SQLite file of schema 2") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    v2_store(&path);
    let v2_mark = T0 - 5_000_000;
    // Behind the v2 store's mark: refused before and after migrating.
    let clock = ManualClock::new(v2_mark - 1);
    let a = Authority::open(&path, &Options::new().clock(clock.clone())).unwrap();
    assert_eq!(a.migrated_from(), 2);
    assert_eq!(
        a.claim_next("old", "w", secs(10)).unwrap_err().code(),
        ErrorCode::ClockRollback
    );
    assert_eq!(stored_marks(&path), (v2_mark, None));
    clock.set(T0);
    let l = a.claim_next("old", "w", secs(10)).unwrap();
    clock.set(T0 + 1_000);
    l.renew(secs(20)).unwrap();
    // The renewal's commit raised the mark on its event; `meta` kept the
    // v2 mark.
    assert_eq!(stored_marks(&path), (v2_mark, Some(T0 + 1_000)));
    assert_eq!(a.clock().unwrap().mark_us, T0 + 1_000);
    drop(l);
    drop(a);
    // Reopened with a clock between the two marks: only the event's mark
    // refuses it.
    clock.set(T0);
    let a = Authority::open(&path, &Options::new().clock(clock.clone())).unwrap();
    assert_eq!(a.migrated_from(), SCHEMA_VERSION);
    assert_eq!(
        a.claim_next("old", "w", secs(10)).unwrap_err().code(),
        ErrorCode::ClockRollback
    );
    clock.set(T0 + 2_000);
    a.submit("old", &JobSpec::new("fresh", "payload")).unwrap();
    assert_eq!(a.claim_next("old", "w", secs(10)).unwrap().job(), "fresh");
    assert_eq!(a.clock().unwrap().mark_us, T0 + 2_000);
    let report = a.check().unwrap();
    assert!(report.ok(), "{report:?}");
}

/// Schema 10 changed only SQLite's layout: a store at 9 gets end times on
/// its terminal jobs (and none on its open ones), `jobs_ended` instead of
/// `jobs_by_state`, no `events_by_production`, claim-next's index keyed on
/// the end time; every job keeps its state, lists under it and is claimable
/// exactly as before.
#[test]
fn a_schema_9_store_gets_end_times_and_its_indexes_rebuilt() {
    if skip_on_postgres("a SQLite file of schema 9") {
        return;
    }
    let env = Env::with_jobs(6, 2);
    let a = &env.auth;
    a.claim("p", "j1", "w", secs(60)).unwrap();
    a.claim("p", "j2", "w", secs(60))
        .unwrap()
        .complete(&[])
        .unwrap();
    env.clock.advance(1_000);
    a.claim("p", "j3", "w", secs(60))
        .unwrap()
        .fail("no", true)
        .unwrap();
    a.claim("p", "j4", "w", secs(60))
        .unwrap()
        .fail_retry_after("later", Delay::from_micros(3_600_000_000).unwrap())
        .unwrap();
    a.submit(
        "p",
        &JobSpec::new("j6", b"x".to_vec()).not_before(Delay::from_micros(60_000_000).unwrap()),
    )
    .unwrap();
    let listed = |a: &Authority, s: JobState| -> Vec<String> {
        let q = ListQuery {
            state: Some(s),
            ..ListQuery::default()
        };
        a.jobs("p", &q)
            .unwrap()
            .into_iter()
            .map(|v| v.job)
            .collect()
    };
    let states = [
        JobState::Requested,
        JobState::Claimed,
        JobState::Completed,
        JobState::Failed,
    ];
    let before: Vec<_> = states.iter().map(|&s| listed(a, s)).collect();
    assert_eq!(before[2], ["j2"]);
    assert_eq!(before[3], ["j3"]);
    let path = env.path();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            &(SQLITE_UNDO_13.to_owned() + SQLITE_UNDO_12 + SQLITE_UNDO_11 + SQLITE_UNDO_10),
        )
        .unwrap();

    let a = env.reopen();
    assert_eq!(a.migrated_from(), 9);
    let after: Vec<_> = states.iter().map(|&s| listed(&a, s)).collect();
    assert_eq!(after, before);
    let c = rusqlite::Connection::open(&path).unwrap();
    let ended: Vec<(String, String, Option<i64>, i64)> = c
        .prepare("SELECT job, state, ended_us, updated_us FROM jobs ORDER BY job")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    for (job, state, ended_us, updated_us) in &ended {
        let open = state == "requested" || state == "claimed";
        assert_eq!(*ended_us, (!open).then_some(*updated_us), "{job} {state}");
    }
    let indexes: Vec<(String, String)> = c
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let sql = |name: &str| {
        indexes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    };
    assert_eq!(sql("jobs_by_state"), None);
    assert_eq!(sql("events_by_production"), None);
    assert!(sql("jobs_ready")
        .unwrap()
        .contains("ended_us IS NULL AND parked = 0"));
    assert!(sql("jobs_ended").unwrap().contains("ended_us IS NOT NULL"));
    // Claim-next finds the requested jobs that are due, never an ended one.
    for job in ["j0", "j5"] {
        let l = a.claim_next("p", "w", secs(60)).unwrap();
        assert_eq!(l.job(), job);
        l.complete(&[]).unwrap();
    }
    assert_eq!(listed(&a, JobState::Completed), ["j0", "j2", "j5"]);
    assert_eq!(
        code_of(a.claim_next("p", "w", secs(60))),
        ErrorCode::NoJobAvailable
    );
    assert!(a.check().unwrap().ok());
    assert_eq!(env.reopen().migrated_from(), SCHEMA_VERSION);
}

/// The pages each frame of the WAL file holds, in order (frame header:
/// page number, big-endian, first).
fn wal_pages(path: &Path) -> Vec<u32> {
    let wal = std::fs::read(path.with_extension("db-wal")).unwrap_or_default();
    let mut pages = Vec::new();
    if wal.len() < 32 {
        return pages;
    }
    // The WAL header: magic, format, page size (big-endian), ...
    let page = u32::from_be_bytes(wal[8..12].try_into().unwrap()) as usize;
    let mut at = 32;
    while at + 24 + page <= wal.len() {
        pages.push(u32::from_be_bytes(wal[at..at + 4].try_into().unwrap()));
        at += 24 + page;
    }
    pages
}

/// The pages a store write wrote: the WAL is emptied before it (a
/// checkpoint that truncates it) and read after.
fn pages_written(path: &Path, write: impl FnOnce()) -> Vec<u32> {
    let c = rusqlite::Connection::open(path).unwrap();
    let (busy, _, _): (i64, i64, i64) = c
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(busy, 0, "the WAL was emptied");
    assert!(wal_pages(path).is_empty());
    write();
    let mut pages = wal_pages(path);
    pages.sort_unstable();
    pages.dedup();
    pages
}

/// A renewal writes the job's row and the log, no index entry of `jobs`;
/// a claim and a release that leaves the job due write the row, the log,
/// the kept job counts and the two statistics' indexes (the requested jobs
/// by due moment, the claimed jobs), and claim-next's index not at all; the
/// ending transition takes the job out of claim-next's index and the
/// claimed jobs and into the two indexes of ended jobs; a release with a
/// delay moves it from claim-next's index to the parked one. (A small
/// store: every index is its root page.)
#[test]
fn open_transitions_write_no_index_of_jobs() {
    if skip_on_postgres("SQLite's WAL frames") {
        return;
    }
    let env = Env::with_jobs(4, 3);
    let path = env.path();
    let page: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!(page, 2048, "a new store's pages");
    let roots: std::collections::HashMap<String, u32> = {
        let c = rusqlite::Connection::open(&path).unwrap();
        let r = c
            .prepare("SELECT name, rootpage FROM sqlite_master WHERE tbl_name = 'jobs' AND type = 'index'")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        r
    };
    let index = |name: &str| roots[name];
    let indexes: Vec<u32> = roots.values().copied().collect();
    let touched = |pages: &[u32]| -> Vec<u32> {
        let mut t: Vec<u32> = pages
            .iter()
            .copied()
            .filter(|p| indexes.contains(p))
            .collect();
        t.sort_unstable();
        t
    };
    let sorted = |mut v: Vec<u32>| {
        v.sort_unstable();
        v
    };
    let a = &env.auth;
    let mut lease = None;
    let claim = pages_written(&path, || {
        lease = Some(a.claim_next("p", "w", secs(60)).unwrap())
    });
    let lease = lease.unwrap();
    let stats = sorted(vec![index("jobs_waiting"), index("jobs_claimed")]);
    assert_eq!(
        touched(&claim),
        stats,
        "a claim: {claim:?} against {roots:?}"
    );
    assert!(
        claim.len() <= 7,
        "the row, the log (its root, its time index), the counts, the two statistics' indexes: {claim:?}"
    );
    env.clock.advance(1_000);
    let renew = pages_written(&path, || lease.renew(secs(60)).unwrap());
    assert_eq!(touched(&renew), [], "a renewal: {renew:?}");
    let release = pages_written(&path, || {
        lease.release().unwrap();
    });
    assert_eq!(touched(&release), stats, "a release: {release:?}");
    let lease = a.claim_next("p", "w", secs(60)).unwrap();
    let complete = pages_written(&path, || lease.complete(&[]).unwrap());
    assert_eq!(
        touched(&complete),
        sorted(vec![
            index("jobs_ready"),
            index("jobs_ended"),
            index("jobs_terminal"),
            index("jobs_claimed")
        ]),
        "a completion: {complete:?} against {roots:?}"
    );
    let lease = a.claim_next("p", "w", secs(60)).unwrap();
    let parked = pages_written(&path, || {
        lease
            .fail_retry_after("later", Delay::from_micros(60_000_000).unwrap())
            .unwrap();
    });
    assert_eq!(
        touched(&parked),
        sorted(vec![
            index("jobs_ready"),
            index("jobs_parked"),
            index("jobs_waiting"),
            index("jobs_claimed")
        ]),
        "a retry after a delay: {parked:?} against {roots:?}"
    );
    // Every row's end time agrees with its state.
    let disagree: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM jobs
             WHERE (ended_us IS NULL) <> (state = 'requested' OR state = 'claimed')
                OR (ended_us IS NOT NULL AND ended_us <> updated_us)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(disagree, 0);
}
