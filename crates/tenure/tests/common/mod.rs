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

/// Run the ignored test `child` of this test binary under `faketime -f
/// <offset>` (libfaketime) with `envs`, `stdin` on its standard input; its
/// standard output (the harness's lines and the child's, possibly on one
/// line). Fails the calling test if the child fails.
pub fn under_faketime(offset: &str, child: &str, envs: &[(&str, &str)], stdin: &str) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().unwrap();
    let mut proc = Command::new("faketime")
        .args(["-f", offset])
        .arg(&exe)
        .args([
            "--exact",
            child,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("faketime (Debian package faketime) must be installed: cargo xtask test does it");
    proc.stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = proc.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{child} under faketime {offset} failed: {text}"
    );
    text
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
