#![allow(dead_code)]
//! Shared test helpers.

use std::sync::atomic::{AtomicU64, Ordering};
use tenure::{Authority, ManualClock, Options, Ttl};

pub const T0: i64 = 1_800_000_000_000_000; // 2027-01-15, µs

#[allow(clippy::new_without_default)]
pub struct Env {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub auth: Authority,
    /// With `TENURE_TEST_BACKEND=postgres`: this Env's fresh database URL.
    /// Declared last: dropped after `auth`, it drops the database.
    pub pg: Option<pg::Db>,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(T0);
        let pg = pg::fresh_database();
        let auth = match &pg {
            Some(db) => Authority::open(db.url.as_str(), &options().clock(clock.clone())).unwrap(),
            None => open(&dir, &clock),
        };
        Env {
            dir,
            clock,
            auth,
            pg,
        }
    }
    pub fn reopen(&self) -> Authority {
        match &self.pg {
            Some(db) => {
                Authority::open(db.url.as_str(), &options().clock(self.clock.clone())).unwrap()
            }
            None => open(&self.dir, &self.clock),
        }
    }
    /// A second handle on the same store and clock that gives up waiting
    /// for a lock after `busy` (to observe `busy` instead of waiting).
    pub fn reopen_with_busy_timeout(&self, busy: std::time::Duration) -> Authority {
        Authority::open(
            self.path(),
            &options().clock(self.clock.clone()).busy_timeout(busy),
        )
        .unwrap()
    }
    /// The store's address: the SQLite file, or the PostgreSQL URL.
    pub fn path(&self) -> std::path::PathBuf {
        match &self.pg {
            Some(db) => std::path::PathBuf::from(&db.url),
            None => self.dir.path().join("store.db"),
        }
    }
    /// A production `p` with jobs `j0..jn`.
    pub fn with_jobs(n: usize, max_attempts: u32) -> Env {
        let env = Env::new();
        env.auth.create_production("p").unwrap();
        for i in 0..n {
            env.auth
                .submit(
                    "p",
                    &tenure::JobSpec::new(format!("j{i}"), format!("payload {i}").into_bytes())
                        .max_attempts(max_attempts),
                )
                .unwrap();
        }
        env
    }
}

/// A store on the real (system or server) clock, for tests whose timing
/// is real: waits, keepers, workers, other processes.
pub struct RealEnv {
    pub dir: tempfile::TempDir,
    pub auth: Authority,
    /// Declared last: dropped after `auth`.
    pub pg: Option<pg::Db>,
}

impl RealEnv {
    /// A fresh store with production `p`.
    pub fn new() -> RealEnv {
        let dir = tempfile::tempdir().unwrap();
        let pg = pg::fresh_database();
        let path = match &pg {
            Some(db) => std::path::PathBuf::from(&db.url),
            None => dir.path().join("store.db"),
        };
        let auth = Authority::open(&path, &options()).unwrap();
        auth.create_production("p").unwrap();
        RealEnv { dir, auth, pg }
    }
    pub fn path(&self) -> std::path::PathBuf {
        match &self.pg {
            Some(db) => std::path::PathBuf::from(&db.url),
            None => self.dir.path().join("store.db"),
        }
    }
    /// Another handle on the same store (as another process would have).
    pub fn reopen(&self) -> Authority {
        Authority::open(self.path(), &options()).unwrap()
    }
    pub fn submit(&self, job: &str) {
        self.auth
            .submit("p", &tenure::JobSpec::new(job, job.as_bytes().to_vec()))
            .unwrap();
    }
    /// How many events the store holds.
    pub fn event_count(&self) -> usize {
        let mut n = 0;
        let mut after = 0;
        loop {
            let page = self.auth.events(after, 1000).unwrap();
            if page.is_empty() {
                return n;
            }
            n += page.len();
            after = page.last().unwrap().seq;
        }
    }
}

/// This test binary again, running only the ignored test `entry` (a child
/// process entry point), stdout piped, stderr inherited.
pub fn child(entry: &str) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        entry,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::inherit());
    c
}

/// The same under libfaketime at `offset` (`-2h`): the wall clock jumps,
/// the monotonic clock (timeouts, periods) stays real.
pub fn child_under_faketime(entry: &str, offset: &str) -> std::process::Command {
    let mut c = std::process::Command::new("faketime");
    c.args(["-f", offset])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            entry,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    c
}

/// The same with libfaketime preloaded directly, reading the offset from
/// `file` at every clock reading (`FAKETIME_NO_CACHE`): writing `+2h` into
/// it makes the child's wall clock jump while it runs.
pub fn child_with_clock_file(entry: &str, file: &std::path::Path) -> std::process::Command {
    const LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
    assert!(
        std::path::Path::new(LIB).exists(),
        "libfaketime (Debian package libfaketime) must be installed: cargo xtask test does it"
    );
    let mut c = child(entry);
    c.env("LD_PRELOAD", LIB)
        .env("FAKETIME_TIMESTAMP_FILE", file)
        .env("FAKETIME_NO_CACHE", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    c
}

/// Run a child made by [`child_under_faketime`] with `stdin`; its stdout.
pub fn run_child(mut c: std::process::Command, stdin: &str) -> String {
    use std::io::Write;
    let mut p = c
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("faketime (Debian package faketime) must be installed: cargo xtask test does it");
    p.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "child failed: {text}");
    text
}

/// Read a child's stdout up to a line containing `marker`; returns that
/// line from the marker on (libtest may print its own prefix before it).
pub fn read_until(out: &mut impl std::io::BufRead, marker: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "child ended before {marker}"
        );
        if let Some(i) = line.find(marker) {
            return line[i..].trim().to_owned();
        }
    }
}

/// Run the ignored test `child` of this test binary under `faketime -f
/// <offset>` (libfaketime) with `envs`, `stdin` on its standard input; its
/// standard output (the harness's lines and the child's, possibly on one
/// line). Fails the calling test if the child fails.
pub fn under_faketime(offset: &str, child: &str, envs: &[(&str, &str)], stdin: &str) -> String {
    let mut c = child_under_faketime(child, offset);
    c.envs(envs.iter().copied());
    run_child(c, stdin)
}

pub fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}

/// Turn `env`'s store (closed by its caller's reopen) back into its
/// schema 3 layout: undo the 3 → 4 additions (scheduling and hold limits).
/// Turn a PostgreSQL store back into its schema 4 layout (schema 5
/// changed only PostgreSQL's).
pub fn pg_downgrade_to_schema_4(url: &str) {
    pg::client(url)
        .batch_execute(
            "ALTER TABLE tenure.jobs DROP COLUMN ended_us;
             ALTER TABLE tenure.jobs RESET (fillfactor);
             CREATE INDEX jobs_terminal ON tenure.jobs (updated_us)
                 WHERE state IN ('completed', 'failed', 'cancelled');
             UPDATE tenure.meta SET value = 4 WHERE key = 'schema_version';",
        )
        .unwrap();
}

/// What schema 12 has of schema 13's statistics in another form: the job
/// counts of every stored state kept by triggers, `events_by_time` over
/// every event.
pub const SQLITE_UNDO_13: &str = "
    CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_counts (production, state, n) VALUES (NEW.production, NEW.state, 1)
            ON CONFLICT (production, state) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
        UPDATE job_counts SET n = n - 1 WHERE production = OLD.production AND state = OLD.state;
    END;
    CREATE TRIGGER job_counts_update AFTER UPDATE OF state ON jobs
        WHEN OLD.state <> NEW.state BEGIN
        UPDATE job_counts SET n = n - 1 WHERE production = OLD.production AND state = OLD.state;
        INSERT INTO job_counts (production, state, n) VALUES (NEW.production, NEW.state, 1)
            ON CONFLICT (production, state) DO UPDATE SET n = n + 1;
    END;
    DELETE FROM job_counts;
    INSERT INTO job_counts (production, state, n)
        SELECT production, state, count(*) FROM jobs GROUP BY production, state;
    DROP INDEX events_by_time;
    CREATE INDEX events_by_time ON events (production, at_us);
    PRAGMA user_version = 12;";

/// What schema 11 lacks of schema 12: a cron cadence's time zone.
pub const SQLITE_UNDO_12: &str = "ALTER TABLE schedules DROP COLUMN tz; PRAGMA user_version = 11;";

/// What schema 10 lacks of schema 11: the kept job counts and their
/// triggers, the indexes and the event columns the statistics read, the
/// claim gates, the progress checkpoints and the schedules.
pub const SQLITE_UNDO_11: &str = "
    DROP TABLE production_gates; ALTER TABLE jobs DROP COLUMN progress; DROP TABLE schedules;
    DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_delete;
    DROP TRIGGER job_counts_update; DROP TABLE job_counts;
    DROP INDEX jobs_waiting; DROP INDEX jobs_claimed; DROP INDEX events_by_time;
    ALTER TABLE events DROP COLUMN since_us; ALTER TABLE events DROP COLUMN lapsed_us;
    PRAGMA user_version = 10;";

/// Turn a schema 10 SQLite store back into its schema 9 layout: no end
/// times, `jobs_by_state` and `events_by_production` indexes, claim-next's
/// index keyed on the state.
pub const SQLITE_UNDO_10: &str = "
    DROP INDEX jobs_ended; DROP INDEX jobs_ready;
    ALTER TABLE jobs DROP COLUMN ended_us;
    CREATE INDEX jobs_by_state ON jobs (production, state, job);
    CREATE INDEX jobs_ready ON jobs (production, priority DESC, seq)
        WHERE state IN ('requested', 'claimed') AND parked = 0;
    CREATE INDEX events_by_production ON events (production, seq);
    PRAGMA user_version = 9;";

pub fn downgrade_to_schema_3(env: &Env) {
    match &env.pg {
        Some(db) => pg::client(&db.url)
            .batch_execute(
                "ALTER TABLE tenure.jobs DROP COLUMN IF EXISTS progress;
                 ALTER TABLE tenure.jobs DROP COLUMN IF EXISTS waiting_since_us;
                 ALTER TABLE tenure.jobs DROP COLUMN IF EXISTS ended_us;
                 ALTER TABLE tenure.jobs RESET (fillfactor);
                 CREATE INDEX IF NOT EXISTS jobs_terminal ON tenure.jobs (updated_us)
                     WHERE state IN ('completed', 'failed', 'cancelled');
                 ALTER TABLE tenure.jobs DROP COLUMN due_us, DROP COLUMN parked,
                     DROP COLUMN max_hold_us, DROP COLUMN backoff_base_us,
                     DROP COLUMN backoff_cap_us;
                 ALTER TABLE tenure.productions DROP COLUMN backoff_base_us,
                     DROP COLUMN backoff_cap_us;
                 ALTER TABLE tenure.tombstones DROP COLUMN max_hold_us,
                     DROP COLUMN backoff_base_us, DROP COLUMN backoff_cap_us;
                 DROP INDEX IF EXISTS tenure.jobs_ready;
                 DROP INDEX IF EXISTS tenure.jobs_parked;
                 CREATE INDEX jobs_live ON tenure.jobs (production, priority DESC, seq)
                     WHERE state IN ('requested', 'claimed');
                 UPDATE tenure.meta SET value = 3 WHERE key = 'schema_version';",
            )
            .unwrap(),
        None => rusqlite::Connection::open(env.path())
            .unwrap()
            .execute_batch(
                &(SQLITE_UNDO_13.to_owned() + SQLITE_UNDO_12 + SQLITE_UNDO_11 + SQLITE_UNDO_10 +
                // Schema 8 keeps the mark on the newest event, schema 7 a
                // completion's provenance in the job row;
                // the stores before it hold it as fact rows, placed after
                // the caller's facts.
                "UPDATE meta SET value = max(value, coalesce((SELECT mark_us FROM events
                     ORDER BY seq DESC LIMIT 1), value)) WHERE key = 'high_water_us';
                 ALTER TABLE events DROP COLUMN mark_us;
                 UPDATE facts SET ord = -(ord + 5) WHERE ord >= (SELECT provenance_at FROM jobs j
                     WHERE j.production = facts.production AND j.job = facts.job);
                 UPDATE facts SET ord = -ord - 1 WHERE ord < 0;
                 INSERT INTO facts (production, job, ord, key, value)
                     SELECT production, job, provenance_at + k.i, k.key,
                         CASE k.i WHEN 0 THEN claim_id WHEN 1 THEN ifnull(holder, '')
                             WHEN 2 THEN CAST(attempts AS TEXT) ELSE CAST(updated_us AS TEXT) END
                     FROM jobs, (SELECT 0 AS i, 'tenure.claim_id' AS key
                         UNION ALL SELECT 1, 'tenure.holder' UNION ALL SELECT 2, 'tenure.attempt'
                         UNION ALL SELECT 3, 'tenure.completed_us') AS k
                     WHERE provenance_at IS NOT NULL;
                 ALTER TABLE jobs DROP COLUMN provenance_at;
                 DROP INDEX jobs_ready; DROP INDEX jobs_parked;
                 ALTER TABLE jobs DROP COLUMN due_us; ALTER TABLE jobs DROP COLUMN parked;
                 ALTER TABLE jobs DROP COLUMN max_hold_us;
                 ALTER TABLE jobs DROP COLUMN backoff_base_us;
                 ALTER TABLE jobs DROP COLUMN backoff_cap_us;
                 ALTER TABLE productions DROP COLUMN backoff_base_us;
                 ALTER TABLE productions DROP COLUMN backoff_cap_us;
                 ALTER TABLE tombstones DROP COLUMN max_hold_us;
                 ALTER TABLE tombstones DROP COLUMN backoff_base_us;
                 ALTER TABLE tombstones DROP COLUMN backoff_cap_us;
                 CREATE INDEX jobs_live ON jobs (production, priority DESC, seq)
                     WHERE state IN ('requested', 'claimed');
                 PRAGMA user_version = 3;"),
            )
            .unwrap(),
    }
}

/// Write `fixtures/v2_store.sql` (a SQLite store at schema 2) to `path`.
pub fn v2_store(path: &std::path::Path) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(include_str!("../fixtures/v2_store.sql"))
        .unwrap();
}

pub fn open(dir: &tempfile::TempDir, clock: &ManualClock) -> Authority {
    Authority::open(dir.path().join("store.db"), &options().clock(clock.clone())).unwrap()
}

/// True unless `TENURE_TEST_GROUP_COMMIT=0` runs the suites with group
/// commit off (every convenience call its own transaction).
pub fn group_commit() -> bool {
    std::env::var("TENURE_TEST_GROUP_COMMIT").map_or(true, |v| v != "0")
}

/// The suites' options: the defaults, with group commit as
/// [`group_commit`] says.
pub fn options() -> Options {
    Options::new().group_commit(group_commit())
}

pub fn secs(n: i64) -> Ttl {
    Ttl::from_micros(n * 1_000_000).unwrap()
}

static N: AtomicU64 = AtomicU64::new(0);
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Run `calls` as one commit group of `auth`: a second handle holds the
/// writer lock while the calls queue (in order: each starts once the one
/// before it is queued), then lets the group's leader in.
pub fn in_one_group<'a, R: Send + 'a>(
    env: &Env,
    auth: &Authority,
    calls: Vec<Box<dyn FnOnce() -> R + Send + 'a>>,
) -> Vec<R> {
    let other = env.reopen();
    let edit = other.edit().unwrap();
    let n = calls.len();
    let out = std::thread::scope(|sc| {
        let mut handles = Vec::new();
        for (i, call) in calls.into_iter().enumerate() {
            handles.push(sc.spawn(call));
            let t = std::time::Instant::now();
            while auth.queued_group_ops() < i + 1 {
                assert!(
                    t.elapsed() < std::time::Duration::from_secs(5),
                    "call {i} never queued"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert_eq!(auth.queued_group_ops(), n);
        edit.abort();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<R>>()
    });
    assert_eq!(auth.queued_group_ops(), 0);
    out
}

/// True when the suites run against PostgreSQL (`TENURE_TEST_BACKEND=postgres`).
pub fn on_postgres() -> bool {
    pg::enabled()
}

/// Skip a SQLite-specific test on PostgreSQL, saying why. Use as
/// `if skip_on_postgres("reason") { return; }`.
pub fn skip_on_postgres(why: &str) -> bool {
    if on_postgres() {
        eprintln!("skipped on PostgreSQL: {why}");
        return true;
    }
    false
}

pub mod pg {
    //! The PostgreSQL side of the conformance suite: each `Env` gets a fresh
    //! database on the server named by `TENURE_TEST_PG_URL` (a maintenance
    //! URL), dropped again when the `Env` is dropped.

    use std::sync::atomic::{AtomicU64, Ordering};

    pub fn enabled() -> bool {
        std::env::var("TENURE_TEST_BACKEND").is_ok_and(|b| b == "postgres")
    }

    fn admin_url() -> String {
        std::env::var("TENURE_TEST_PG_URL")
            .expect("TENURE_TEST_BACKEND=postgres needs TENURE_TEST_PG_URL")
    }

    /// `base` with its database name replaced by `db`.
    pub fn with_database(base: &str, db: &str) -> String {
        let (head, query) = match base.find('?') {
            Some(i) => (&base[..i], &base[i..]),
            None => (base, ""),
        };
        let scheme_end = head.find("://").map(|i| i + 3).unwrap_or(0);
        let host_end = head[scheme_end..]
            .find('/')
            .map(|i| i + scheme_end)
            .unwrap_or(head.len());
        format!("{}/{db}{query}", &head[..host_end])
    }

    static N: AtomicU64 = AtomicU64::new(0);

    /// A database that is dropped with this value.
    pub struct Db {
        pub url: String,
    }

    impl Drop for Db {
        fn drop(&mut self) {
            drop_database(&self.url);
        }
    }

    /// A new empty database (None when not on PostgreSQL).
    pub fn fresh_database() -> Option<Db> {
        if !enabled() {
            return None;
        }
        let name = format!(
            "t_{}_{}_{:08x}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            rand_u32()
        );
        let mut c = postgres::Client::connect(&admin_url(), postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        Some(Db {
            url: with_database(&admin_url(), &name),
        })
    }

    /// Run SQL on a test database directly (for PostgreSQL-specific checks).
    pub fn client(url: &str) -> postgres::Client {
        postgres::Client::connect(url, postgres::NoTls).unwrap()
    }

    pub fn drop_database(url: &str) {
        let name = url
            .rsplit('/')
            .next()
            .unwrap_or("")
            .split('?')
            .next()
            .unwrap_or("");
        if let Ok(mut c) = postgres::Client::connect(&admin_url(), postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }

    fn rand_u32() -> u32 {
        let mut b = [0u8; 4];
        getrandom::getrandom(&mut b).unwrap();
        u32::from_le_bytes(b)
    }
}
